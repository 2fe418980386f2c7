//! The command headers, the events read from the async and completion-channel fds, and the
//! commands on the context, device, port, PD, MR, completion channel and CQ.

use zerocopy::byteorder::big_endian::U64 as Be64;
use zerocopy::{FromBytes, Immutable, IntoBytes};

/// `struct ib_uverbs_cmd_hdr`: the first 8 bytes of every command `write()`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable)]
pub struct ib_uverbs_cmd_hdr {
    /// `IB_USER_VERBS_CMD_*`, with `IB_USER_VERBS_CMD_FLAG_EXTENDED` for an extended command.
    pub command: u32,
    /// Legacy: the whole `write()` in 4-byte words, this header included. Extended: the core
    /// request in 8-byte words, without either header.
    pub in_words: u16,
    /// Legacy: the whole response (core then driver) in 4-byte words. Extended: the core
    /// response in 8-byte words.
    pub out_words: u16,
}

/// `struct ib_uverbs_ex_cmd_hdr`: follows [`ib_uverbs_cmd_hdr`] in an extended command.
#[repr(C, align(8))]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable)]
pub struct ib_uverbs_ex_cmd_hdr {
    /// The user address of the response buffer (core, then driver response).
    pub response: u64,
    /// The driver request, in 8-byte words.
    pub provider_in_words: u16,
    /// The driver response, in 8-byte words.
    pub provider_out_words: u16,
    /// Must be zero (`verify_hdr`: `EINVAL`).
    pub cmd_hdr_reserved: u32,
}

/// `struct ib_uverbs_async_event_desc`: one event read from the async event fd.
#[repr(C, align(8))]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable)]
pub struct ib_uverbs_async_event_desc {
    /// The object's `user_handle` (CQ, QP, SRQ, WQ), or the port number.
    pub element: u64,
    /// `enum ib_event_type`.
    pub event_type: u32,
    pub reserved: u32,
}

/// `struct ib_uverbs_comp_event_desc`: one event read from a completion channel fd.
#[repr(C, align(8))]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable)]
pub struct ib_uverbs_comp_event_desc {
    /// The CQ's `user_handle`.
    pub cq_handle: u64,
}

/// `struct ib_uverbs_get_context`: GET_CONTEXT's request; the driver request follows
/// (`mlx5_ib_alloc_ucontext_req_v2`).
#[repr(C, align(8))]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable)]
pub struct ib_uverbs_get_context {
    pub response: u64,
}

/// `struct ib_uverbs_get_context_resp`; the driver response follows
/// (`mlx5_ib_alloc_ucontext_resp`).
#[repr(C, align(8))]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable)]
pub struct ib_uverbs_get_context_resp {
    /// The async event fd, installed in the caller.
    pub async_fd: u32,
    pub num_comp_vectors: u32,
}

/// `struct ib_uverbs_query_device`: the legacy QUERY_DEVICE request.
#[repr(C, align(8))]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable)]
pub struct ib_uverbs_query_device {
    pub response: u64,
}

/// `struct ib_uverbs_query_device_resp`: the legacy QUERY_DEVICE response, and the start of
/// QUERY_DEVICE_EX's.
#[repr(C, align(8))]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable)]
pub struct ib_uverbs_query_device_resp {
    pub fw_ver: u64,
    /// `__be64`.
    pub node_guid: Be64,
    /// `__be64`.
    pub sys_image_guid: Be64,
    pub max_mr_size: u64,
    pub page_size_cap: u64,
    pub vendor_id: u32,
    pub vendor_part_id: u32,
    pub hw_ver: u32,
    pub max_qp: u32,
    pub max_qp_wr: u32,
    /// The low 32 bits of the `IB_UVERBS_DEVICE_*` flags.
    pub device_cap_flags: u32,
    pub max_sge: u32,
    pub max_sge_rd: u32,
    pub max_cq: u32,
    pub max_cqe: u32,
    pub max_mr: u32,
    pub max_pd: u32,
    pub max_qp_rd_atom: u32,
    pub max_ee_rd_atom: u32,
    pub max_res_rd_atom: u32,
    pub max_qp_init_rd_atom: u32,
    pub max_ee_init_rd_atom: u32,
    /// `enum ib_atomic_cap`.
    pub atomic_cap: u32,
    pub max_ee: u32,
    pub max_rdd: u32,
    pub max_mw: u32,
    pub max_raw_ipv6_qp: u32,
    pub max_raw_ethy_qp: u32,
    pub max_mcast_grp: u32,
    pub max_mcast_qp_attach: u32,
    pub max_total_mcast_qp_attach: u32,
    pub max_ah: u32,
    pub max_fmr: u32,
    pub max_map_per_fmr: u32,
    pub max_srq: u32,
    pub max_srq_wr: u32,
    pub max_srq_sge: u32,
    pub max_pkeys: u16,
    pub local_ca_ack_delay: u8,
    pub phys_port_cnt: u8,
    pub reserved: [u8; 4],
}

/// `struct ib_uverbs_ex_query_device`: QUERY_DEVICE_EX's core request (no `response`: it is
/// in the extended header).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable)]
pub struct ib_uverbs_ex_query_device {
    /// Must be zero.
    pub comp_mask: u32,
    /// Must be zero.
    pub reserved: u32,
}

/// The anonymous `per_transport_caps` struct of `struct ib_uverbs_odp_caps` (the header does
/// not name it).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable)]
pub struct ib_uverbs_odp_caps_per_transport_caps {
    pub rc_odp_caps: u32,
    pub uc_odp_caps: u32,
    pub ud_odp_caps: u32,
}

/// `struct ib_uverbs_odp_caps`: on-demand paging.
#[repr(C, align(8))]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable)]
pub struct ib_uverbs_odp_caps {
    pub general_caps: u64,
    pub per_transport_caps: ib_uverbs_odp_caps_per_transport_caps,
    pub reserved: u32,
}

/// `struct ib_uverbs_rss_caps`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable)]
pub struct ib_uverbs_rss_caps {
    /// Bit `1 << qp_type` per QP type that supports RSS.
    pub supported_qpts: u32,
    pub max_rwq_indirection_tables: u32,
    pub max_rwq_indirection_table_size: u32,
    pub reserved: u32,
}

/// `struct ib_uverbs_tm_caps`: tag matching.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable)]
pub struct ib_uverbs_tm_caps {
    pub max_rndv_hdr_size: u32,
    pub max_num_tags: u32,
    pub flags: u32,
    pub max_ops: u32,
    pub max_sge: u32,
    pub reserved: u32,
}

/// `struct ib_uverbs_cq_moderation_caps`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable)]
pub struct ib_uverbs_cq_moderation_caps {
    pub max_cq_moderation_count: u16,
    pub max_cq_moderation_period: u16,
    pub reserved: u32,
}

/// `struct ib_uverbs_ex_query_device_resp`: QUERY_DEVICE_EX's core response; the driver
/// response (`mlx5_ib_query_device_resp`) follows at `out_words * 8`.
#[repr(C, align(8))]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable)]
pub struct ib_uverbs_ex_query_device_resp {
    pub base: ib_uverbs_query_device_resp,
    pub comp_mask: u32,
    /// How many bytes of this struct the kernel filled (its fields grew over releases).
    pub response_length: u32,
    pub odp_caps: ib_uverbs_odp_caps,
    pub timestamp_mask: u64,
    /// In kHz.
    pub hca_core_clock: u64,
    /// `IB_UVERBS_DEVICE_*`.
    pub device_cap_flags_ex: u64,
    pub rss_caps: ib_uverbs_rss_caps,
    pub max_wq_type_rq: u32,
    /// `IB_UVERBS_RAW_PACKET_CAP_*`.
    pub raw_packet_caps: u32,
    pub tm_caps: ib_uverbs_tm_caps,
    pub cq_moderation_caps: ib_uverbs_cq_moderation_caps,
    pub max_dm_size: u64,
    pub xrc_odp_caps: u32,
    pub reserved: u32,
}

/// `struct ib_uverbs_query_port`.
#[repr(C, align(8))]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable)]
pub struct ib_uverbs_query_port {
    pub response: u64,
    pub port_num: u8,
    pub reserved: [u8; 7],
}

/// `struct ib_uverbs_query_port_resp`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable)]
pub struct ib_uverbs_query_port_resp {
    /// `IB_UVERBS_PCF_*`.
    pub port_cap_flags: u32,
    pub max_msg_sz: u32,
    pub bad_pkey_cntr: u32,
    pub qkey_viol_cntr: u32,
    pub gid_tbl_len: u32,
    pub pkey_tbl_len: u16,
    pub lid: u16,
    pub sm_lid: u16,
    /// `enum ib_port_state`.
    pub state: u8,
    /// `enum ib_mtu`.
    pub max_mtu: u8,
    /// `enum ib_mtu`.
    pub active_mtu: u8,
    pub lmc: u8,
    pub max_vl_num: u8,
    pub sm_sl: u8,
    pub subnet_timeout: u8,
    pub init_type_reply: u8,
    pub active_width: u8,
    pub active_speed: u8,
    pub phys_state: u8,
    /// `IB_LINK_LAYER_*` (verbs.h's `IBV_LINK_LAYER_*`).
    pub link_layer: u8,
    /// `IB_UVERBS_QPF_*`.
    pub flags: u8,
    pub reserved: u8,
}

/// `struct ib_uverbs_alloc_pd`.
#[repr(C, align(8))]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable)]
pub struct ib_uverbs_alloc_pd {
    pub response: u64,
}

/// `struct ib_uverbs_alloc_pd_resp`; the driver response (`mlx5_ib_alloc_pd_resp`) follows.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable)]
pub struct ib_uverbs_alloc_pd_resp {
    pub pd_handle: u32,
}

/// `struct ib_uverbs_dealloc_pd` (no response).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable)]
pub struct ib_uverbs_dealloc_pd {
    pub pd_handle: u32,
}

/// `struct ib_uverbs_open_xrcd`: OPEN_XRCD's request (`fd` -1 for a domain of the context
/// alone; `oflags` as `open(2)`'s, `O_CREAT` / `O_EXCL`).
#[repr(C, align(8))]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable)]
pub struct ib_uverbs_open_xrcd {
    pub response: u64,
    pub fd: u32,
    pub oflags: u32,
}

/// `struct ib_uverbs_open_xrcd_resp`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable)]
pub struct ib_uverbs_open_xrcd_resp {
    pub xrcd_handle: u32,
}

/// `struct ib_uverbs_close_xrcd` (no response).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable)]
pub struct ib_uverbs_close_xrcd {
    pub xrcd_handle: u32,
}

/// `struct ib_uverbs_reg_mr`.
#[repr(C, align(8))]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable)]
pub struct ib_uverbs_reg_mr {
    pub response: u64,
    /// The user address of the memory.
    pub start: u64,
    pub length: u64,
    /// The address the NIC uses for `start` (the IOVA).
    pub hca_va: u64,
    pub pd_handle: u32,
    /// `IB_UVERBS_ACCESS_*`.
    pub access_flags: u32,
}

/// `struct ib_uverbs_reg_mr_resp`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable)]
pub struct ib_uverbs_reg_mr_resp {
    pub mr_handle: u32,
    pub lkey: u32,
    pub rkey: u32,
}

/// `struct ib_uverbs_dereg_mr` (no response).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable)]
pub struct ib_uverbs_dereg_mr {
    pub mr_handle: u32,
}

/// `struct ib_uverbs_create_comp_channel`.
#[repr(C, align(8))]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable)]
pub struct ib_uverbs_create_comp_channel {
    pub response: u64,
}

/// `struct ib_uverbs_create_comp_channel_resp`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable)]
pub struct ib_uverbs_create_comp_channel_resp {
    /// The channel's fd, installed in the caller.
    pub fd: u32,
}

/// `struct ib_uverbs_create_cq`: the legacy CREATE_CQ request; the driver request
/// (`mlx5_ib_create_cq`) follows.
#[repr(C, align(8))]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable)]
pub struct ib_uverbs_create_cq {
    pub response: u64,
    /// Returned in completion events (`ib_uverbs_comp_event_desc.cq_handle`).
    pub user_handle: u64,
    /// The number of CQEs asked for.
    pub cqe: u32,
    pub comp_vector: u32,
    /// The completion channel's fd, or -1.
    pub comp_channel: i32,
    pub reserved: u32,
}

/// `struct ib_uverbs_ex_create_cq`: CREATE_CQ_EX's core request.
#[repr(C, align(8))]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable)]
pub struct ib_uverbs_ex_create_cq {
    pub user_handle: u64,
    pub cqe: u32,
    pub comp_vector: u32,
    pub comp_channel: i32,
    pub comp_mask: u32,
    /// `IB_UVERBS_CQ_FLAGS_*`.
    pub flags: u32,
    pub reserved: u32,
}

/// `struct ib_uverbs_create_cq_resp`; the driver response (`mlx5_ib_create_cq_resp`)
/// follows.
#[repr(C, align(8))]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable)]
pub struct ib_uverbs_create_cq_resp {
    pub cq_handle: u32,
    /// The number of CQEs the CQ has (at least the number asked for).
    pub cqe: u32,
}

/// `struct ib_uverbs_ex_create_cq_resp`: CREATE_CQ_EX's core response.
#[repr(C, align(8))]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable)]
pub struct ib_uverbs_ex_create_cq_resp {
    pub base: ib_uverbs_create_cq_resp,
    pub comp_mask: u32,
    pub response_length: u32,
}

/// `struct ib_uverbs_resize_cq`; the driver request (`mlx5_ib_resize_cq`) follows.
#[repr(C, align(8))]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable)]
pub struct ib_uverbs_resize_cq {
    pub response: u64,
    pub cq_handle: u32,
    pub cqe: u32,
}

/// `struct ib_uverbs_resize_cq_resp`.
#[repr(C, align(8))]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable)]
pub struct ib_uverbs_resize_cq_resp {
    pub cqe: u32,
    pub reserved: u32,
}

/// `struct ib_uverbs_destroy_cq`.
#[repr(C, align(8))]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable)]
pub struct ib_uverbs_destroy_cq {
    pub response: u64,
    pub cq_handle: u32,
    pub reserved: u32,
}

/// `struct ib_uverbs_destroy_cq_resp`: how many events the CQ delivered, which
/// `ibv_destroy_cq` waits to see acknowledged.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable)]
pub struct ib_uverbs_destroy_cq_resp {
    pub comp_events_reported: u32,
    pub async_events_reported: u32,
}
