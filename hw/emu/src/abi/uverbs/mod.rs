//! `<rdma/ib_user_verbs.h>`: the uverbs `write()` ABI (version 6), and the enums of
//! `<rdma/ib_user_ioctl_verbs.h>` its structs carry.
//!
//! **Transport.** A legacy command is one `write()` of [`ib_uverbs_cmd_hdr`], the core
//! request, then the driver request (`in_words` counts 4-byte words of all three). The core
//! request of a command that answers starts with `response`, the user address the kernel
//! writes the core response and then the driver response to (`out_words` 4-byte words in
//! all). An extended command (`command` has [`IB_USER_VERBS_CMD_FLAG_EXTENDED`]) puts
//! [`ib_uverbs_ex_cmd_hdr`] after the first header; it carries `response`, and sizes count
//! 8-byte words: `in_words`/`out_words` of the core request/response,
//! `provider_in_words`/`provider_out_words` of the driver's (kernel `ib_uverbs_write`,
//! `verify_hdr`; libibverbs `cmd_fallback.c` `_execute_cmd_write(_ex)`).
//!
//! Struct and field names are the header's; `hw/emu/tests/abi_layout.rs` compares every
//! struct, field and constant here with it.
#![allow(
    non_camel_case_types,
    reason = "the C struct names, so the layout test and readers match them to the header"
)]
#![allow(
    missing_docs,
    reason = "fields carry the header's names and meaning; each struct's doc names its C \
              counterpart, and fields are documented where the header's name is not enough"
)]

mod device;
mod flow;
mod qp;
mod wq;

pub use device::*;
pub use flow::*;
pub use qp::*;
pub use wq::*;

/// `IB_USER_VERBS_ABI_VERSION`: what `/sys/class/infiniband_verbs/abi_version` reads
/// (libibverbs `check_abi_version` accepts 3..=6).
pub const IB_USER_VERBS_ABI_VERSION: u32 = 6;
/// `IB_USER_VERBS_CMD_THRESHOLD`: the first extended-only command number.
pub const IB_USER_VERBS_CMD_THRESHOLD: u32 = 50;
/// `IB_USER_VERBS_CMD_COMMAND_MASK`: the command number's bits of `ib_uverbs_cmd_hdr.command`.
pub const IB_USER_VERBS_CMD_COMMAND_MASK: u32 = 0xff;
/// `IB_USER_VERBS_CMD_FLAG_EXTENDED`: the command is extended ([`ib_uverbs_ex_cmd_hdr`]
/// follows the header).
pub const IB_USER_VERBS_CMD_FLAG_EXTENDED: u32 = 0x8000_0000;

// `enum ib_uverbs_write_cmds`.
/// `IB_USER_VERBS_CMD_GET_CONTEXT`.
pub const IB_USER_VERBS_CMD_GET_CONTEXT: u32 = 0;
/// `IB_USER_VERBS_CMD_QUERY_DEVICE`.
pub const IB_USER_VERBS_CMD_QUERY_DEVICE: u32 = 1;
/// `IB_USER_VERBS_CMD_QUERY_PORT`.
pub const IB_USER_VERBS_CMD_QUERY_PORT: u32 = 2;
/// `IB_USER_VERBS_CMD_ALLOC_PD`.
pub const IB_USER_VERBS_CMD_ALLOC_PD: u32 = 3;
/// `IB_USER_VERBS_CMD_DEALLOC_PD`.
pub const IB_USER_VERBS_CMD_DEALLOC_PD: u32 = 4;
/// `IB_USER_VERBS_CMD_CREATE_AH`.
pub const IB_USER_VERBS_CMD_CREATE_AH: u32 = 5;
/// `IB_USER_VERBS_CMD_MODIFY_AH` (no kernel handler).
pub const IB_USER_VERBS_CMD_MODIFY_AH: u32 = 6;
/// `IB_USER_VERBS_CMD_QUERY_AH` (no kernel handler).
pub const IB_USER_VERBS_CMD_QUERY_AH: u32 = 7;
/// `IB_USER_VERBS_CMD_DESTROY_AH`.
pub const IB_USER_VERBS_CMD_DESTROY_AH: u32 = 8;
/// `IB_USER_VERBS_CMD_REG_MR`.
pub const IB_USER_VERBS_CMD_REG_MR: u32 = 9;
/// `IB_USER_VERBS_CMD_REG_SMR` (no kernel handler).
pub const IB_USER_VERBS_CMD_REG_SMR: u32 = 10;
/// `IB_USER_VERBS_CMD_REREG_MR`.
pub const IB_USER_VERBS_CMD_REREG_MR: u32 = 11;
/// `IB_USER_VERBS_CMD_QUERY_MR` (no kernel handler).
pub const IB_USER_VERBS_CMD_QUERY_MR: u32 = 12;
/// `IB_USER_VERBS_CMD_DEREG_MR`.
pub const IB_USER_VERBS_CMD_DEREG_MR: u32 = 13;
/// `IB_USER_VERBS_CMD_ALLOC_MW`.
pub const IB_USER_VERBS_CMD_ALLOC_MW: u32 = 14;
/// `IB_USER_VERBS_CMD_BIND_MW` (no kernel handler).
pub const IB_USER_VERBS_CMD_BIND_MW: u32 = 15;
/// `IB_USER_VERBS_CMD_DEALLOC_MW`.
pub const IB_USER_VERBS_CMD_DEALLOC_MW: u32 = 16;
/// `IB_USER_VERBS_CMD_CREATE_COMP_CHANNEL`.
pub const IB_USER_VERBS_CMD_CREATE_COMP_CHANNEL: u32 = 17;
/// `IB_USER_VERBS_CMD_CREATE_CQ`.
pub const IB_USER_VERBS_CMD_CREATE_CQ: u32 = 18;
/// `IB_USER_VERBS_CMD_RESIZE_CQ`.
pub const IB_USER_VERBS_CMD_RESIZE_CQ: u32 = 19;
/// `IB_USER_VERBS_CMD_DESTROY_CQ`.
pub const IB_USER_VERBS_CMD_DESTROY_CQ: u32 = 20;
/// `IB_USER_VERBS_CMD_POLL_CQ`.
pub const IB_USER_VERBS_CMD_POLL_CQ: u32 = 21;
/// `IB_USER_VERBS_CMD_PEEK_CQ` (no kernel handler).
pub const IB_USER_VERBS_CMD_PEEK_CQ: u32 = 22;
/// `IB_USER_VERBS_CMD_REQ_NOTIFY_CQ`.
pub const IB_USER_VERBS_CMD_REQ_NOTIFY_CQ: u32 = 23;
/// `IB_USER_VERBS_CMD_CREATE_QP`.
pub const IB_USER_VERBS_CMD_CREATE_QP: u32 = 24;
/// `IB_USER_VERBS_CMD_QUERY_QP`.
pub const IB_USER_VERBS_CMD_QUERY_QP: u32 = 25;
/// `IB_USER_VERBS_CMD_MODIFY_QP`.
pub const IB_USER_VERBS_CMD_MODIFY_QP: u32 = 26;
/// `IB_USER_VERBS_CMD_DESTROY_QP`.
pub const IB_USER_VERBS_CMD_DESTROY_QP: u32 = 27;
/// `IB_USER_VERBS_CMD_POST_SEND`.
pub const IB_USER_VERBS_CMD_POST_SEND: u32 = 28;
/// `IB_USER_VERBS_CMD_POST_RECV`.
pub const IB_USER_VERBS_CMD_POST_RECV: u32 = 29;
/// `IB_USER_VERBS_CMD_ATTACH_MCAST`.
pub const IB_USER_VERBS_CMD_ATTACH_MCAST: u32 = 30;
/// `IB_USER_VERBS_CMD_DETACH_MCAST`.
pub const IB_USER_VERBS_CMD_DETACH_MCAST: u32 = 31;
/// `IB_USER_VERBS_CMD_CREATE_SRQ`.
pub const IB_USER_VERBS_CMD_CREATE_SRQ: u32 = 32;
/// `IB_USER_VERBS_CMD_MODIFY_SRQ`.
pub const IB_USER_VERBS_CMD_MODIFY_SRQ: u32 = 33;
/// `IB_USER_VERBS_CMD_QUERY_SRQ`.
pub const IB_USER_VERBS_CMD_QUERY_SRQ: u32 = 34;
/// `IB_USER_VERBS_CMD_DESTROY_SRQ`.
pub const IB_USER_VERBS_CMD_DESTROY_SRQ: u32 = 35;
/// `IB_USER_VERBS_CMD_POST_SRQ_RECV`.
pub const IB_USER_VERBS_CMD_POST_SRQ_RECV: u32 = 36;
/// `IB_USER_VERBS_CMD_OPEN_XRCD`.
pub const IB_USER_VERBS_CMD_OPEN_XRCD: u32 = 37;
/// `IB_USER_VERBS_CMD_CLOSE_XRCD`.
pub const IB_USER_VERBS_CMD_CLOSE_XRCD: u32 = 38;
/// `IB_USER_VERBS_CMD_CREATE_XSRQ`.
pub const IB_USER_VERBS_CMD_CREATE_XSRQ: u32 = 39;
/// `IB_USER_VERBS_CMD_OPEN_QP`.
pub const IB_USER_VERBS_CMD_OPEN_QP: u32 = 40;

// The extended commands (the header's anonymous enum after `ib_uverbs_write_cmds`).
/// `IB_USER_VERBS_EX_CMD_QUERY_DEVICE`.
pub const IB_USER_VERBS_EX_CMD_QUERY_DEVICE: u32 = IB_USER_VERBS_CMD_QUERY_DEVICE;
/// `IB_USER_VERBS_EX_CMD_CREATE_CQ`.
pub const IB_USER_VERBS_EX_CMD_CREATE_CQ: u32 = IB_USER_VERBS_CMD_CREATE_CQ;
/// `IB_USER_VERBS_EX_CMD_CREATE_QP`.
pub const IB_USER_VERBS_EX_CMD_CREATE_QP: u32 = IB_USER_VERBS_CMD_CREATE_QP;
/// `IB_USER_VERBS_EX_CMD_MODIFY_QP`.
pub const IB_USER_VERBS_EX_CMD_MODIFY_QP: u32 = IB_USER_VERBS_CMD_MODIFY_QP;
/// `IB_USER_VERBS_EX_CMD_CREATE_FLOW`.
pub const IB_USER_VERBS_EX_CMD_CREATE_FLOW: u32 = IB_USER_VERBS_CMD_THRESHOLD;
/// `IB_USER_VERBS_EX_CMD_DESTROY_FLOW`.
pub const IB_USER_VERBS_EX_CMD_DESTROY_FLOW: u32 = 51;
/// `IB_USER_VERBS_EX_CMD_CREATE_WQ`.
pub const IB_USER_VERBS_EX_CMD_CREATE_WQ: u32 = 52;
/// `IB_USER_VERBS_EX_CMD_MODIFY_WQ`.
pub const IB_USER_VERBS_EX_CMD_MODIFY_WQ: u32 = 53;
/// `IB_USER_VERBS_EX_CMD_DESTROY_WQ`.
pub const IB_USER_VERBS_EX_CMD_DESTROY_WQ: u32 = 54;
/// `IB_USER_VERBS_EX_CMD_CREATE_RWQ_IND_TBL`.
pub const IB_USER_VERBS_EX_CMD_CREATE_RWQ_IND_TBL: u32 = 55;
/// `IB_USER_VERBS_EX_CMD_DESTROY_RWQ_IND_TBL`.
pub const IB_USER_VERBS_EX_CMD_DESTROY_RWQ_IND_TBL: u32 = 56;
/// `IB_USER_VERBS_EX_CMD_MODIFY_CQ`.
pub const IB_USER_VERBS_EX_CMD_MODIFY_CQ: u32 = 57;

// `enum ib_uverbs_ex_create_cq_flags` (`ib_uverbs_ex_create_cq.flags`).
/// `IB_UVERBS_CQ_FLAGS_TIMESTAMP_COMPLETION`.
pub const IB_UVERBS_CQ_FLAGS_TIMESTAMP_COMPLETION: u32 = 1 << 0;
/// `IB_UVERBS_CQ_FLAGS_IGNORE_OVERRUN`.
pub const IB_UVERBS_CQ_FLAGS_IGNORE_OVERRUN: u32 = 1 << 1;

// `enum ib_uverbs_create_qp_mask` (`ib_uverbs_ex_create_qp.comp_mask`).
/// `IB_UVERBS_CREATE_QP_MASK_IND_TABLE`: `rwq_ind_tbl_handle` is valid (an RSS QP).
pub const IB_UVERBS_CREATE_QP_MASK_IND_TABLE: u32 = 1 << 0;
/// `IB_UVERBS_CREATE_QP_SUP_COMP_MASK`: every `comp_mask` bit the kernel accepts.
pub const IB_UVERBS_CREATE_QP_SUP_COMP_MASK: u32 = IB_UVERBS_CREATE_QP_MASK_IND_TABLE;

// `enum ib_uverbs_device_cap_flags` (`device_cap_flags_ex`; its low 32 bits are the legacy
// `device_cap_flags`).
/// `IB_UVERBS_DEVICE_RESIZE_MAX_WR`.
pub const IB_UVERBS_DEVICE_RESIZE_MAX_WR: u64 = 1 << 0;
/// `IB_UVERBS_DEVICE_BAD_PKEY_CNTR`.
pub const IB_UVERBS_DEVICE_BAD_PKEY_CNTR: u64 = 1 << 1;
/// `IB_UVERBS_DEVICE_BAD_QKEY_CNTR`.
pub const IB_UVERBS_DEVICE_BAD_QKEY_CNTR: u64 = 1 << 2;
/// `IB_UVERBS_DEVICE_RAW_MULTI`.
pub const IB_UVERBS_DEVICE_RAW_MULTI: u64 = 1 << 3;
/// `IB_UVERBS_DEVICE_AUTO_PATH_MIG`.
pub const IB_UVERBS_DEVICE_AUTO_PATH_MIG: u64 = 1 << 4;
/// `IB_UVERBS_DEVICE_CHANGE_PHY_PORT`.
pub const IB_UVERBS_DEVICE_CHANGE_PHY_PORT: u64 = 1 << 5;
/// `IB_UVERBS_DEVICE_UD_AV_PORT_ENFORCE`.
pub const IB_UVERBS_DEVICE_UD_AV_PORT_ENFORCE: u64 = 1 << 6;
/// `IB_UVERBS_DEVICE_CURR_QP_STATE_MOD`.
pub const IB_UVERBS_DEVICE_CURR_QP_STATE_MOD: u64 = 1 << 7;
/// `IB_UVERBS_DEVICE_SHUTDOWN_PORT`.
pub const IB_UVERBS_DEVICE_SHUTDOWN_PORT: u64 = 1 << 8;
/// `IB_UVERBS_DEVICE_PORT_ACTIVE_EVENT`.
pub const IB_UVERBS_DEVICE_PORT_ACTIVE_EVENT: u64 = 1 << 10;
/// `IB_UVERBS_DEVICE_SYS_IMAGE_GUID`.
pub const IB_UVERBS_DEVICE_SYS_IMAGE_GUID: u64 = 1 << 11;
/// `IB_UVERBS_DEVICE_RC_RNR_NAK_GEN`.
pub const IB_UVERBS_DEVICE_RC_RNR_NAK_GEN: u64 = 1 << 12;
/// `IB_UVERBS_DEVICE_SRQ_RESIZE`.
pub const IB_UVERBS_DEVICE_SRQ_RESIZE: u64 = 1 << 13;
/// `IB_UVERBS_DEVICE_N_NOTIFY_CQ`.
pub const IB_UVERBS_DEVICE_N_NOTIFY_CQ: u64 = 1 << 14;
/// `IB_UVERBS_DEVICE_MEM_WINDOW`.
pub const IB_UVERBS_DEVICE_MEM_WINDOW: u64 = 1 << 17;
/// `IB_UVERBS_DEVICE_UD_IP_CSUM`.
pub const IB_UVERBS_DEVICE_UD_IP_CSUM: u64 = 1 << 18;
/// `IB_UVERBS_DEVICE_XRC`.
pub const IB_UVERBS_DEVICE_XRC: u64 = 1 << 20;
/// `IB_UVERBS_DEVICE_MEM_MGT_EXTENSIONS`.
pub const IB_UVERBS_DEVICE_MEM_MGT_EXTENSIONS: u64 = 1 << 21;
/// `IB_UVERBS_DEVICE_MEM_WINDOW_TYPE_2A`.
pub const IB_UVERBS_DEVICE_MEM_WINDOW_TYPE_2A: u64 = 1 << 23;
/// `IB_UVERBS_DEVICE_MEM_WINDOW_TYPE_2B`.
pub const IB_UVERBS_DEVICE_MEM_WINDOW_TYPE_2B: u64 = 1 << 24;
/// `IB_UVERBS_DEVICE_RC_IP_CSUM`.
pub const IB_UVERBS_DEVICE_RC_IP_CSUM: u64 = 1 << 25;
/// `IB_UVERBS_DEVICE_RAW_IP_CSUM` (deprecated for `IB_UVERBS_RAW_PACKET_CAP_IP_CSUM`).
pub const IB_UVERBS_DEVICE_RAW_IP_CSUM: u64 = 1 << 26;
/// `IB_UVERBS_DEVICE_MANAGED_FLOW_STEERING`.
pub const IB_UVERBS_DEVICE_MANAGED_FLOW_STEERING: u64 = 1 << 29;
/// `IB_UVERBS_DEVICE_RAW_SCATTER_FCS` (deprecated for `IB_UVERBS_RAW_PACKET_CAP_SCATTER_FCS`).
pub const IB_UVERBS_DEVICE_RAW_SCATTER_FCS: u64 = 1 << 34;
/// `IB_UVERBS_DEVICE_PCI_WRITE_END_PADDING`.
pub const IB_UVERBS_DEVICE_PCI_WRITE_END_PADDING: u64 = 1 << 36;

// `enum ib_uverbs_raw_packet_caps` (`ib_uverbs_ex_query_device_resp.raw_packet_caps`).
/// `IB_UVERBS_RAW_PACKET_CAP_CVLAN_STRIPPING`.
pub const IB_UVERBS_RAW_PACKET_CAP_CVLAN_STRIPPING: u32 = 1 << 0;
/// `IB_UVERBS_RAW_PACKET_CAP_SCATTER_FCS`.
pub const IB_UVERBS_RAW_PACKET_CAP_SCATTER_FCS: u32 = 1 << 1;
/// `IB_UVERBS_RAW_PACKET_CAP_IP_CSUM`.
pub const IB_UVERBS_RAW_PACKET_CAP_IP_CSUM: u32 = 1 << 2;
/// `IB_UVERBS_RAW_PACKET_CAP_DELAY_DROP`.
pub const IB_UVERBS_RAW_PACKET_CAP_DELAY_DROP: u32 = 1 << 3;

// `<rdma/ib_user_ioctl_verbs.h>`: `enum ib_uverbs_access_flags` (`ib_uverbs_reg_mr.access_flags`,
// `qp_access_flags`).
/// `IB_UVERBS_ACCESS_OPTIONAL_FIRST`: the first optional access bit (the kernel ignores the
/// optional bits it does not know).
pub const IB_UVERBS_ACCESS_OPTIONAL_FIRST: u32 = 1 << 20;
/// `IB_UVERBS_ACCESS_OPTIONAL_LAST`: the last optional access bit.
pub const IB_UVERBS_ACCESS_OPTIONAL_LAST: u32 = 1 << 29;
/// `IB_UVERBS_ACCESS_LOCAL_WRITE`.
pub const IB_UVERBS_ACCESS_LOCAL_WRITE: u32 = 1 << 0;
/// `IB_UVERBS_ACCESS_REMOTE_WRITE`.
pub const IB_UVERBS_ACCESS_REMOTE_WRITE: u32 = 1 << 1;
/// `IB_UVERBS_ACCESS_REMOTE_READ`.
pub const IB_UVERBS_ACCESS_REMOTE_READ: u32 = 1 << 2;
/// `IB_UVERBS_ACCESS_REMOTE_ATOMIC`.
pub const IB_UVERBS_ACCESS_REMOTE_ATOMIC: u32 = 1 << 3;
/// `IB_UVERBS_ACCESS_MW_BIND`.
pub const IB_UVERBS_ACCESS_MW_BIND: u32 = 1 << 4;
/// `IB_UVERBS_ACCESS_ZERO_BASED`.
pub const IB_UVERBS_ACCESS_ZERO_BASED: u32 = 1 << 5;
/// `IB_UVERBS_ACCESS_ON_DEMAND`.
pub const IB_UVERBS_ACCESS_ON_DEMAND: u32 = 1 << 6;
/// `IB_UVERBS_ACCESS_HUGETLB`.
pub const IB_UVERBS_ACCESS_HUGETLB: u32 = 1 << 7;
/// `IB_UVERBS_ACCESS_RELAXED_ORDERING` (optional).
pub const IB_UVERBS_ACCESS_RELAXED_ORDERING: u32 = IB_UVERBS_ACCESS_OPTIONAL_FIRST;
/// `IB_UVERBS_ACCESS_OPTIONAL_RANGE`: the optional bits, 20..=29.
pub const IB_UVERBS_ACCESS_OPTIONAL_RANGE: u32 =
    ((IB_UVERBS_ACCESS_OPTIONAL_LAST << 1) - 1) & !(IB_UVERBS_ACCESS_OPTIONAL_FIRST - 1);

// `enum ib_uverbs_srq_type` (`ib_uverbs_create_xsrq.srq_type`).
/// `IB_UVERBS_SRQT_BASIC`.
pub const IB_UVERBS_SRQT_BASIC: u32 = 0;
/// `IB_UVERBS_SRQT_XRC`.
pub const IB_UVERBS_SRQT_XRC: u32 = 1;
/// `IB_UVERBS_SRQT_TM`: tag matching.
pub const IB_UVERBS_SRQT_TM: u32 = 2;

// `enum ib_uverbs_qp_type` (`qp_type`).
/// `IB_UVERBS_QPT_RC`.
pub const IB_UVERBS_QPT_RC: u8 = 2;
/// `IB_UVERBS_QPT_UC`.
pub const IB_UVERBS_QPT_UC: u8 = 3;
/// `IB_UVERBS_QPT_UD`.
pub const IB_UVERBS_QPT_UD: u8 = 4;
/// `IB_UVERBS_QPT_RAW_PACKET`.
pub const IB_UVERBS_QPT_RAW_PACKET: u8 = 8;
/// `IB_UVERBS_QPT_XRC_INI`.
pub const IB_UVERBS_QPT_XRC_INI: u8 = 9;
/// `IB_UVERBS_QPT_XRC_TGT`.
pub const IB_UVERBS_QPT_XRC_TGT: u8 = 10;
/// `IB_UVERBS_QPT_DRIVER`: a driver-defined type (mlx5: DCI / DCT, from the driver data).
pub const IB_UVERBS_QPT_DRIVER: u8 = 0xff;

// `enum ib_uverbs_qp_create_flags` (`ib_uverbs_ex_create_qp.create_flags`).
/// `IB_UVERBS_QP_CREATE_BLOCK_MULTICAST_LOOPBACK`.
pub const IB_UVERBS_QP_CREATE_BLOCK_MULTICAST_LOOPBACK: u32 = 1 << 1;
/// `IB_UVERBS_QP_CREATE_SCATTER_FCS`.
pub const IB_UVERBS_QP_CREATE_SCATTER_FCS: u32 = 1 << 8;
/// `IB_UVERBS_QP_CREATE_CVLAN_STRIPPING`.
pub const IB_UVERBS_QP_CREATE_CVLAN_STRIPPING: u32 = 1 << 9;
/// `IB_UVERBS_QP_CREATE_PCI_WRITE_END_PADDING`.
pub const IB_UVERBS_QP_CREATE_PCI_WRITE_END_PADDING: u32 = 1 << 11;
/// `IB_UVERBS_QP_CREATE_SQ_SIG_ALL`.
pub const IB_UVERBS_QP_CREATE_SQ_SIG_ALL: u32 = 1 << 12;

// `enum ib_uverbs_query_port_cap_flags` (`ib_uverbs_query_port_resp.port_cap_flags`).
/// `IB_UVERBS_PCF_SM`.
pub const IB_UVERBS_PCF_SM: u32 = 1 << 1;
/// `IB_UVERBS_PCF_NOTICE_SUP`.
pub const IB_UVERBS_PCF_NOTICE_SUP: u32 = 1 << 2;
/// `IB_UVERBS_PCF_TRAP_SUP`.
pub const IB_UVERBS_PCF_TRAP_SUP: u32 = 1 << 3;
/// `IB_UVERBS_PCF_OPT_IPD_SUP`.
pub const IB_UVERBS_PCF_OPT_IPD_SUP: u32 = 1 << 4;
/// `IB_UVERBS_PCF_AUTO_MIGR_SUP`.
pub const IB_UVERBS_PCF_AUTO_MIGR_SUP: u32 = 1 << 5;
/// `IB_UVERBS_PCF_SL_MAP_SUP`.
pub const IB_UVERBS_PCF_SL_MAP_SUP: u32 = 1 << 6;
/// `IB_UVERBS_PCF_MKEY_NVRAM`.
pub const IB_UVERBS_PCF_MKEY_NVRAM: u32 = 1 << 7;
/// `IB_UVERBS_PCF_PKEY_NVRAM`.
pub const IB_UVERBS_PCF_PKEY_NVRAM: u32 = 1 << 8;
/// `IB_UVERBS_PCF_LED_INFO_SUP`.
pub const IB_UVERBS_PCF_LED_INFO_SUP: u32 = 1 << 9;
/// `IB_UVERBS_PCF_SM_DISABLED`.
pub const IB_UVERBS_PCF_SM_DISABLED: u32 = 1 << 10;
/// `IB_UVERBS_PCF_SYS_IMAGE_GUID_SUP`.
pub const IB_UVERBS_PCF_SYS_IMAGE_GUID_SUP: u32 = 1 << 11;
/// `IB_UVERBS_PCF_PKEY_SW_EXT_PORT_TRAP_SUP`.
pub const IB_UVERBS_PCF_PKEY_SW_EXT_PORT_TRAP_SUP: u32 = 1 << 12;
/// `IB_UVERBS_PCF_EXTENDED_SPEEDS_SUP`.
pub const IB_UVERBS_PCF_EXTENDED_SPEEDS_SUP: u32 = 1 << 14;
/// `IB_UVERBS_PCF_CM_SUP`.
pub const IB_UVERBS_PCF_CM_SUP: u32 = 1 << 16;
/// `IB_UVERBS_PCF_SNMP_TUNNEL_SUP`.
pub const IB_UVERBS_PCF_SNMP_TUNNEL_SUP: u32 = 1 << 17;
/// `IB_UVERBS_PCF_REINIT_SUP`.
pub const IB_UVERBS_PCF_REINIT_SUP: u32 = 1 << 18;
/// `IB_UVERBS_PCF_DEVICE_MGMT_SUP`.
pub const IB_UVERBS_PCF_DEVICE_MGMT_SUP: u32 = 1 << 19;
/// `IB_UVERBS_PCF_VENDOR_CLASS_SUP`.
pub const IB_UVERBS_PCF_VENDOR_CLASS_SUP: u32 = 1 << 20;
/// `IB_UVERBS_PCF_DR_NOTICE_SUP`.
pub const IB_UVERBS_PCF_DR_NOTICE_SUP: u32 = 1 << 21;
/// `IB_UVERBS_PCF_CAP_MASK_NOTICE_SUP`.
pub const IB_UVERBS_PCF_CAP_MASK_NOTICE_SUP: u32 = 1 << 22;
/// `IB_UVERBS_PCF_BOOT_MGMT_SUP`.
pub const IB_UVERBS_PCF_BOOT_MGMT_SUP: u32 = 1 << 23;
/// `IB_UVERBS_PCF_LINK_LATENCY_SUP`.
pub const IB_UVERBS_PCF_LINK_LATENCY_SUP: u32 = 1 << 24;
/// `IB_UVERBS_PCF_CLIENT_REG_SUP`.
pub const IB_UVERBS_PCF_CLIENT_REG_SUP: u32 = 1 << 25;
/// `IB_UVERBS_PCF_IP_BASED_GIDS`: the kernel's own flag (not IBA's) for a RoCE port.
pub const IB_UVERBS_PCF_IP_BASED_GIDS: u32 = 1 << 26;
/// `IB_UVERBS_PCF_LINK_SPEED_WIDTH_TABLE_SUP`.
pub const IB_UVERBS_PCF_LINK_SPEED_WIDTH_TABLE_SUP: u32 = 1 << 27;
/// `IB_UVERBS_PCF_VENDOR_SPECIFIC_MADS_TABLE_SUP`.
pub const IB_UVERBS_PCF_VENDOR_SPECIFIC_MADS_TABLE_SUP: u32 = 1 << 28;
/// `IB_UVERBS_PCF_MCAST_PKEY_TRAP_SUPPRESSION_SUP`.
pub const IB_UVERBS_PCF_MCAST_PKEY_TRAP_SUPPRESSION_SUP: u32 = 1 << 29;
/// `IB_UVERBS_PCF_MCAST_FDB_TOP_SUP`.
pub const IB_UVERBS_PCF_MCAST_FDB_TOP_SUP: u32 = 1 << 30;
/// `IB_UVERBS_PCF_HIERARCHY_INFO_SUP`.
pub const IB_UVERBS_PCF_HIERARCHY_INFO_SUP: u32 = 1 << 31;

// `enum ib_uverbs_query_port_flags` (`ib_uverbs_query_port_resp.flags`).
/// `IB_UVERBS_QPF_GRH_REQUIRED`: every AH on the port needs a GRH (RoCE).
pub const IB_UVERBS_QPF_GRH_REQUIRED: u8 = 1 << 0;
