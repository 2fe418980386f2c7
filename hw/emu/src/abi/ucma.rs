//! `<rdma/rdma_user_cm.h>`: the `rdma_ucm` `write()` ABI (version 4) of
//! `/dev/infiniband/rdma_cm`, the socket addresses its commands carry, and the path records
//! of `<rdma/ib_user_sa.h>`; with the few values of librdmacm's `<rdma/rdma_cma.h>`,
//! `<infiniband/ib.h>`, `<infiniband/sa.h>` and `<infiniband/verbs.h>` that the answers
//! use (event numbers, `AF_IB` and `struct sockaddr_ib`, the packed path record librdmacm
//! reads, the async event numbers of `rdma_notify`).
//!
//! **Transport.** A command is one `write()` of [`rdma_ucm_cmd_hdr`] and the command's
//! struct; `in` counts the bytes after the header, `out` the bytes of the response the
//! struct's `response` address has room for (the kernel's `ucma_write`). librdmacm writes
//! whole structs (`CMA_INIT_CMD` in librdmacm/cma.c).
//!
//! Struct and field names are the headers'; `hw/emu/tests/abi_layout.rs` compares every
//! struct, field and constant here with them (`tests/golden-shim/c/ucma.c` and
//! `rdmacm.c`). The IB CM's reject reasons and private data sizes are in no installed
//! header (the kernel's `include/rdma/ib_cm.h`, IBTA vol. 1 ch. 12): they are listed in
//! [`not_in_headers`] and pinned by this module's tests.
#![allow(
    non_camel_case_types,
    reason = "the C struct names, so the layout test and readers match them to the header"
)]
#![allow(
    missing_docs,
    reason = "fields carry the header's names and meaning; each struct's doc names its C \
              counterpart"
)]

use super::uverbs::ib_uverbs_ah_attr;
use zerocopy::{FromBytes, Immutable, IntoBytes};

/// `RDMA_USER_CM_ABI_VERSION`: what `/sys/class/misc/rdma_cm/abi_version` reads
/// (librdmacm accepts 3..=4).
pub const RDMA_USER_CM_ABI_VERSION: u32 = 4;
/// `RDMA_MAX_PRIVATE_DATA`: the private data room of a command or event.
pub const RDMA_MAX_PRIVATE_DATA: u32 = 256;

// The commands (the header's anonymous enum).
/// `RDMA_USER_CM_CMD_CREATE_ID`.
pub const RDMA_USER_CM_CMD_CREATE_ID: u32 = 0;
/// `RDMA_USER_CM_CMD_DESTROY_ID`.
pub const RDMA_USER_CM_CMD_DESTROY_ID: u32 = 1;
/// `RDMA_USER_CM_CMD_BIND_IP`.
pub const RDMA_USER_CM_CMD_BIND_IP: u32 = 2;
/// `RDMA_USER_CM_CMD_RESOLVE_IP`.
pub const RDMA_USER_CM_CMD_RESOLVE_IP: u32 = 3;
/// `RDMA_USER_CM_CMD_RESOLVE_ROUTE`.
pub const RDMA_USER_CM_CMD_RESOLVE_ROUTE: u32 = 4;
/// `RDMA_USER_CM_CMD_QUERY_ROUTE`.
pub const RDMA_USER_CM_CMD_QUERY_ROUTE: u32 = 5;
/// `RDMA_USER_CM_CMD_CONNECT`.
pub const RDMA_USER_CM_CMD_CONNECT: u32 = 6;
/// `RDMA_USER_CM_CMD_LISTEN`.
pub const RDMA_USER_CM_CMD_LISTEN: u32 = 7;
/// `RDMA_USER_CM_CMD_ACCEPT`.
pub const RDMA_USER_CM_CMD_ACCEPT: u32 = 8;
/// `RDMA_USER_CM_CMD_REJECT`.
pub const RDMA_USER_CM_CMD_REJECT: u32 = 9;
/// `RDMA_USER_CM_CMD_DISCONNECT`.
pub const RDMA_USER_CM_CMD_DISCONNECT: u32 = 10;
/// `RDMA_USER_CM_CMD_INIT_QP_ATTR`.
pub const RDMA_USER_CM_CMD_INIT_QP_ATTR: u32 = 11;
/// `RDMA_USER_CM_CMD_GET_EVENT`.
pub const RDMA_USER_CM_CMD_GET_EVENT: u32 = 12;
/// `RDMA_USER_CM_CMD_GET_OPTION` (no kernel handler: `ENOSYS`).
pub const RDMA_USER_CM_CMD_GET_OPTION: u32 = 13;
/// `RDMA_USER_CM_CMD_SET_OPTION`.
pub const RDMA_USER_CM_CMD_SET_OPTION: u32 = 14;
/// `RDMA_USER_CM_CMD_NOTIFY`.
pub const RDMA_USER_CM_CMD_NOTIFY: u32 = 15;
/// `RDMA_USER_CM_CMD_JOIN_IP_MCAST`.
pub const RDMA_USER_CM_CMD_JOIN_IP_MCAST: u32 = 16;
/// `RDMA_USER_CM_CMD_LEAVE_MCAST`.
pub const RDMA_USER_CM_CMD_LEAVE_MCAST: u32 = 17;
/// `RDMA_USER_CM_CMD_MIGRATE_ID`.
pub const RDMA_USER_CM_CMD_MIGRATE_ID: u32 = 18;
/// `RDMA_USER_CM_CMD_QUERY`.
pub const RDMA_USER_CM_CMD_QUERY: u32 = 19;
/// `RDMA_USER_CM_CMD_BIND`.
pub const RDMA_USER_CM_CMD_BIND: u32 = 20;
/// `RDMA_USER_CM_CMD_RESOLVE_ADDR`.
pub const RDMA_USER_CM_CMD_RESOLVE_ADDR: u32 = 21;
/// `RDMA_USER_CM_CMD_JOIN_MCAST`.
pub const RDMA_USER_CM_CMD_JOIN_MCAST: u32 = 22;

// `enum rdma_ucm_port_space`.
/// `RDMA_PS_IPOIB`.
pub const RDMA_PS_IPOIB: u32 = 0x0002;
/// `RDMA_PS_IB`.
pub const RDMA_PS_IB: u32 = 0x013F;
/// `RDMA_PS_TCP`.
pub const RDMA_PS_TCP: u32 = 0x0106;
/// `RDMA_PS_UDP`.
pub const RDMA_PS_UDP: u32 = 0x0111;

// `rdma_ucm_query.option`.
/// `RDMA_USER_CM_QUERY_ADDR`.
pub const RDMA_USER_CM_QUERY_ADDR: u32 = 0;
/// `RDMA_USER_CM_QUERY_PATH`.
pub const RDMA_USER_CM_QUERY_PATH: u32 = 1;
/// `RDMA_USER_CM_QUERY_GID`.
pub const RDMA_USER_CM_QUERY_GID: u32 = 2;

// Multicast join flags.
/// `RDMA_MC_JOIN_FLAG_FULLMEMBER`.
pub const RDMA_MC_JOIN_FLAG_FULLMEMBER: u32 = 0;
/// `RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER`.
pub const RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER: u32 = 1;
/// `RDMA_MC_JOIN_FLAG_RESERVED`.
pub const RDMA_MC_JOIN_FLAG_RESERVED: u32 = 2;

// Option levels and names.
/// `RDMA_OPTION_ID`.
pub const RDMA_OPTION_ID: u32 = 0;
/// `RDMA_OPTION_IB`.
pub const RDMA_OPTION_IB: u32 = 1;
/// `RDMA_OPTION_ID_TOS`.
pub const RDMA_OPTION_ID_TOS: u32 = 0;
/// `RDMA_OPTION_ID_REUSEADDR`.
pub const RDMA_OPTION_ID_REUSEADDR: u32 = 1;
/// `RDMA_OPTION_ID_AFONLY`.
pub const RDMA_OPTION_ID_AFONLY: u32 = 2;
/// `RDMA_OPTION_ID_ACK_TIMEOUT`.
pub const RDMA_OPTION_ID_ACK_TIMEOUT: u32 = 3;
/// `RDMA_OPTION_IB_PATH`.
pub const RDMA_OPTION_IB_PATH: u32 = 1;

// `<rdma/ib_user_sa.h>`: the flags of a path record.
/// `IB_PATH_GMP`.
pub const IB_PATH_GMP: u32 = 1;
/// `IB_PATH_PRIMARY`.
pub const IB_PATH_PRIMARY: u32 = 1 << 1;
/// `IB_PATH_ALTERNATE`.
pub const IB_PATH_ALTERNATE: u32 = 1 << 2;
/// `IB_PATH_OUTBOUND`.
pub const IB_PATH_OUTBOUND: u32 = 1 << 3;
/// `IB_PATH_INBOUND`.
pub const IB_PATH_INBOUND: u32 = 1 << 4;
/// `IB_PATH_INBOUND_REVERSE`.
pub const IB_PATH_INBOUND_REVERSE: u32 = 1 << 5;
/// `IB_PATH_BIDIRECTIONAL`.
pub const IB_PATH_BIDIRECTIONAL: u32 = IB_PATH_OUTBOUND | IB_PATH_INBOUND_REVERSE;

// librdmacm's `<rdma/rdma_cma.h>`: `enum rdma_cm_event_type` (the kernel's
// `include/rdma/rdma_cm.h` has the same numbers).
/// `RDMA_CM_EVENT_ADDR_RESOLVED`.
pub const RDMA_CM_EVENT_ADDR_RESOLVED: u32 = 0;
/// `RDMA_CM_EVENT_ADDR_ERROR`.
pub const RDMA_CM_EVENT_ADDR_ERROR: u32 = 1;
/// `RDMA_CM_EVENT_ROUTE_RESOLVED`.
pub const RDMA_CM_EVENT_ROUTE_RESOLVED: u32 = 2;
/// `RDMA_CM_EVENT_ROUTE_ERROR`.
pub const RDMA_CM_EVENT_ROUTE_ERROR: u32 = 3;
/// `RDMA_CM_EVENT_CONNECT_REQUEST`.
pub const RDMA_CM_EVENT_CONNECT_REQUEST: u32 = 4;
/// `RDMA_CM_EVENT_CONNECT_RESPONSE`.
pub const RDMA_CM_EVENT_CONNECT_RESPONSE: u32 = 5;
/// `RDMA_CM_EVENT_CONNECT_ERROR`.
pub const RDMA_CM_EVENT_CONNECT_ERROR: u32 = 6;
/// `RDMA_CM_EVENT_UNREACHABLE`.
pub const RDMA_CM_EVENT_UNREACHABLE: u32 = 7;
/// `RDMA_CM_EVENT_REJECTED`.
pub const RDMA_CM_EVENT_REJECTED: u32 = 8;
/// `RDMA_CM_EVENT_ESTABLISHED`.
pub const RDMA_CM_EVENT_ESTABLISHED: u32 = 9;
/// `RDMA_CM_EVENT_DISCONNECTED`.
pub const RDMA_CM_EVENT_DISCONNECTED: u32 = 10;
/// `RDMA_CM_EVENT_DEVICE_REMOVAL`.
pub const RDMA_CM_EVENT_DEVICE_REMOVAL: u32 = 11;
/// `RDMA_CM_EVENT_MULTICAST_JOIN`.
pub const RDMA_CM_EVENT_MULTICAST_JOIN: u32 = 12;
/// `RDMA_CM_EVENT_MULTICAST_ERROR`.
pub const RDMA_CM_EVENT_MULTICAST_ERROR: u32 = 13;
/// `RDMA_CM_EVENT_ADDR_CHANGE`.
pub const RDMA_CM_EVENT_ADDR_CHANGE: u32 = 14;
/// `RDMA_CM_EVENT_TIMEWAIT_EXIT`.
pub const RDMA_CM_EVENT_TIMEWAIT_EXIT: u32 = 15;

/// `RDMA_IB_IP_PS_MASK` (`<rdma/rdma_cma.h>`): the port space bits of an AF_IB service id.
pub const RDMA_IB_IP_PS_MASK: u64 = 0xFFFF_FFFF_FFFF_0000;
/// `RDMA_IB_IP_PS_TCP`.
pub const RDMA_IB_IP_PS_TCP: u64 = 0x0000_0000_0106_0000;
/// `RDMA_IB_IP_PS_UDP`.
pub const RDMA_IB_IP_PS_UDP: u64 = 0x0000_0000_0111_0000;
/// `RDMA_IB_PS_IB`.
pub const RDMA_IB_PS_IB: u64 = 0x0000_0000_013F_0000;
/// `RDMA_IB_IP_PORT_MASK`: the port bits of an AF_IB service id.
pub const RDMA_IB_IP_PORT_MASK: u64 = 0xFFFF;
/// `RDMA_UDP_QKEY`: the Q_Key of UD ids (`<rdma/rdma_cma.h>`; the kernel's
/// `cma_set_default_qkey`).
pub const RDMA_UDP_QKEY: u32 = 0x0123_4567;
/// `AF_IB` (`<infiniband/ib.h>`).
pub const AF_IB: u32 = 27;

// `enum ibv_event_type` (`<infiniband/verbs.h>`; the kernel's `enum ib_event_type`): the
// two events `rdma_notify` passes on.
/// `IBV_EVENT_COMM_EST`.
pub const IBV_EVENT_COMM_EST: u32 = 4;
/// `IBV_EVENT_PATH_MIG`.
pub const IBV_EVENT_PATH_MIG: u32 = 6;

/// Values the kernel's IB CM uses that no installed header has (the kernel's
/// `include/rdma/ib_cm.h`, from IBTA vol. 1 ch. 12): reject reasons, and the private data
/// room of each CM message.
pub mod not_in_headers {
    /// `IB_CM_REJ_TIMEOUT`: the requester's id went away while its REQ was out.
    pub const IB_CM_REJ_TIMEOUT: u32 = 1;
    /// `IB_CM_REJ_INVALID_SERVICE_ID`: no one listens on the REQ's service id.
    pub const IB_CM_REJ_INVALID_SERVICE_ID: u32 = 8;
    /// `IB_CM_REJ_STALE_CONN`.
    pub const IB_CM_REJ_STALE_CONN: u32 = 10;
    /// `IB_CM_REJ_CONSUMER_DEFINED`: `rdma_reject`'s reason.
    pub const IB_CM_REJ_CONSUMER_DEFINED: u32 = 28;
    /// `IB_CM_REJ_VENDOR_OPTION_NOT_SUPPORTED`: `rdma_reject_ece`'s reason.
    pub const IB_CM_REJ_VENDOR_OPTION_NOT_SUPPORTED: u32 = 35;
    /// `IB_CM_REQ_PRIVATE_DATA_SIZE`.
    pub const IB_CM_REQ_PRIVATE_DATA_SIZE: usize = 92;
    /// `IB_CM_REP_PRIVATE_DATA_SIZE`.
    pub const IB_CM_REP_PRIVATE_DATA_SIZE: usize = 196;
    /// `IB_CM_REJ_PRIVATE_DATA_SIZE`.
    pub const IB_CM_REJ_PRIVATE_DATA_SIZE: usize = 148;
    /// `IB_CM_DREQ_PRIVATE_DATA_SIZE`.
    pub const IB_CM_DREQ_PRIVATE_DATA_SIZE: usize = 220;
    /// `IB_CM_DREP_PRIVATE_DATA_SIZE`.
    pub const IB_CM_DREP_PRIVATE_DATA_SIZE: usize = 224;
    /// `IB_CM_RTU_PRIVATE_DATA_SIZE`.
    pub const IB_CM_RTU_PRIVATE_DATA_SIZE: usize = 224;
    /// `sizeof(struct cma_hdr)` (drivers/infiniband/core/cma.c): what the CM puts before
    /// the user's private data of an IP-addressed REQ (`cma_user_data_offset`).
    pub const CMA_HDR_SIZE: usize = 36;
    /// `IB_CM_SIDR_REQ_PRIVATE_DATA_SIZE`.
    pub const IB_CM_SIDR_REQ_PRIVATE_DATA_SIZE: usize = 216;
    /// `IB_CM_SIDR_REP_PRIVATE_DATA_SIZE`.
    pub const IB_CM_SIDR_REP_PRIVATE_DATA_SIZE: usize = 136;
    /// `IB_SIDR_SUCCESS` (`enum ib_cm_sidr_status`): the SIDR REP names the QP.
    pub const IB_SIDR_SUCCESS: u32 = 0;
    /// `IB_SIDR_UNSUPPORTED`: no one listens on the SIDR REQ's service id.
    pub const IB_SIDR_UNSUPPORTED: u32 = 1;
    /// `IB_SIDR_REJECT`: the listener refused (`rdma_reject`, or the CM could not hand it
    /// the request).
    pub const IB_SIDR_REJECT: u32 = 2;
}

/// `struct rdma_ucm_cmd_hdr`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable)]
pub struct rdma_ucm_cmd_hdr {
    pub cmd: u32,
    /// The header's `in`.
    pub in_: u16,
    pub out: u16,
}

/// `struct sockaddr_in` of `<linux/in.h>` (the kernel's names).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable)]
pub struct sockaddr_in {
    pub sin_family: u16,
    /// Big-endian.
    pub sin_port: u16,
    /// `struct in_addr`: the address in network order (its bytes, `to_ne_bytes`, are the
    /// dotted quad).
    pub sin_addr: u32,
    pub __pad: [u8; 8],
}

/// `struct sockaddr_in6` of `<linux/in6.h>`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable)]
pub struct sockaddr_in6 {
    pub sin6_family: u16,
    /// Big-endian.
    pub sin6_port: u16,
    /// Big-endian.
    pub sin6_flowinfo: u32,
    pub sin6_addr: [u8; 16],
    pub sin6_scope_id: u32,
}

/// `struct sockaddr_ib` of rdma-core's `<infiniband/ib.h>` (the kernel's
/// `include/rdma/ib.h`).
#[repr(C, align(8))]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable)]
pub struct sockaddr_ib {
    pub sib_family: u16,
    /// Big-endian.
    pub sib_pkey: u16,
    /// Big-endian.
    pub sib_flowinfo: u32,
    /// `struct ib_addr`: the GID.
    pub sib_addr: [u8; 16],
    /// Big-endian.
    pub sib_sid: u64,
    /// Big-endian.
    pub sib_sid_mask: u64,
    pub sib_scope_id: u64,
}

/// `struct __kernel_sockaddr_storage` of `<linux/socket.h>`.
#[repr(C, align(8))]
#[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, Immutable)]
pub struct __kernel_sockaddr_storage {
    pub ss_family: u16,
    pub __data: [u8; 126],
}

/// `struct rdma_ucm_create_id`.
#[repr(C, align(8))]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable)]
pub struct rdma_ucm_create_id {
    pub uid: u64,
    pub response: u64,
    pub ps: u16,
    pub qp_type: u8,
    pub reserved: [u8; 5],
}

/// `struct rdma_ucm_create_id_resp`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable)]
pub struct rdma_ucm_create_id_resp {
    pub id: u32,
}

/// `struct rdma_ucm_destroy_id` (also LEAVE_MCAST's request).
#[repr(C, align(8))]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable)]
pub struct rdma_ucm_destroy_id {
    pub response: u64,
    pub id: u32,
    pub reserved: u32,
}

/// `struct rdma_ucm_destroy_id_resp`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable)]
pub struct rdma_ucm_destroy_id_resp {
    pub events_reported: u32,
}

/// `struct rdma_ucm_bind_ip`.
#[repr(C, align(8))]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable)]
pub struct rdma_ucm_bind_ip {
    pub response: u64,
    pub addr: sockaddr_in6,
    pub id: u32,
}

/// `struct rdma_ucm_bind`.
#[repr(C, align(8))]
#[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, Immutable)]
pub struct rdma_ucm_bind {
    pub id: u32,
    pub addr_size: u16,
    pub reserved: u16,
    pub addr: __kernel_sockaddr_storage,
}

/// `struct rdma_ucm_resolve_ip`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable)]
pub struct rdma_ucm_resolve_ip {
    pub src_addr: sockaddr_in6,
    pub dst_addr: sockaddr_in6,
    pub id: u32,
    pub timeout_ms: u32,
}

/// `struct rdma_ucm_resolve_addr`.
#[repr(C, align(8))]
#[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, Immutable)]
pub struct rdma_ucm_resolve_addr {
    pub id: u32,
    pub timeout_ms: u32,
    pub src_size: u16,
    pub dst_size: u16,
    pub reserved: u32,
    pub src_addr: __kernel_sockaddr_storage,
    pub dst_addr: __kernel_sockaddr_storage,
}

/// `struct rdma_ucm_resolve_route`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable)]
pub struct rdma_ucm_resolve_route {
    pub id: u32,
    pub timeout_ms: u32,
}

/// `struct rdma_ucm_query` (QUERY and QUERY_ROUTE).
#[repr(C, align(8))]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable)]
pub struct rdma_ucm_query {
    pub response: u64,
    pub id: u32,
    pub option: u32,
}

/// `struct ib_user_path_rec` of `<rdma/ib_user_sa.h>`: a path record unpacked
/// (`ib_copy_path_rec_to_user`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable)]
pub struct ib_user_path_rec {
    pub dgid: [u8; 16],
    pub sgid: [u8; 16],
    /// Big-endian.
    pub dlid: u16,
    /// Big-endian.
    pub slid: u16,
    pub raw_traffic: u32,
    /// Big-endian.
    pub flow_label: u32,
    pub reversible: u32,
    pub mtu: u32,
    /// Big-endian.
    pub pkey: u16,
    pub hop_limit: u8,
    pub traffic_class: u8,
    pub numb_path: u8,
    pub sl: u8,
    pub mtu_selector: u8,
    pub rate_selector: u8,
    pub rate: u8,
    pub packet_life_time_selector: u8,
    pub packet_life_time: u8,
    pub preference: u8,
}

/// `struct rdma_ucm_query_route_resp`.
#[repr(C, align(8))]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable)]
pub struct rdma_ucm_query_route_resp {
    /// Big-endian (the device's `node_guid` as the kernel keeps it).
    pub node_guid: u64,
    pub ib_route: [ib_user_path_rec; 2],
    pub src_addr: sockaddr_in6,
    pub dst_addr: sockaddr_in6,
    pub num_paths: u32,
    pub port_num: u8,
    pub reserved: [u8; 3],
    pub ibdev_index: u32,
    pub reserved1: u32,
}

/// `struct rdma_ucm_query_addr_resp` (QUERY's ADDR and GID answers).
#[repr(C, align(8))]
#[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, Immutable)]
pub struct rdma_ucm_query_addr_resp {
    /// Big-endian.
    pub node_guid: u64,
    pub port_num: u8,
    pub reserved: u8,
    /// Big-endian.
    pub pkey: u16,
    pub src_size: u16,
    pub dst_size: u16,
    pub src_addr: __kernel_sockaddr_storage,
    pub dst_addr: __kernel_sockaddr_storage,
    pub ibdev_index: u32,
    pub reserved1: u32,
}

/// `struct rdma_ucm_query_path_resp`; `path_data[]` ([`ib_path_rec_data`]) follows.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable)]
pub struct rdma_ucm_query_path_resp {
    pub num_paths: u32,
    pub reserved: u32,
}

/// `struct ib_path_rec_data` of `<rdma/ib_user_sa.h>`: a packed path record
/// ([`ibv_path_record`]) and its `IB_PATH_*` flags.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable)]
pub struct ib_path_rec_data {
    pub flags: u32,
    pub reserved: u32,
    pub path_rec: [u32; 16],
}

/// `struct ibv_path_record` of `<infiniband/sa.h>`: the IBA PathRecord as the kernel's
/// `ib_sa_pack_path` packs it into [`ib_path_rec_data::path_rec`] and librdmacm's
/// `ucma_convert_path` reads it. Multi-byte fields are big-endian.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable)]
pub struct ibv_path_record {
    pub service_id: u64,
    pub dgid: [u8; 16],
    pub sgid: [u8; 16],
    pub dlid: u16,
    pub slid: u16,
    /// Reserved 31:28, flow label 27:8, hop limit 7:0.
    pub flowlabel_hoplimit: u32,
    pub tclass: u8,
    /// Reversible 7, number of paths 6:0.
    pub reversible_numpath: u8,
    pub pkey: u16,
    /// QoS class 15:4, SL 3:0.
    pub qosclass_sl: u16,
    /// Selector 7:6, MTU 5:0.
    pub mtu: u8,
    /// Selector 7:6, rate 5:0.
    pub rate: u8,
    /// Selector 7:6, packet lifetime 5:0.
    pub packetlifetime: u8,
    pub preference: u8,
    pub reserved: [u8; 6],
}

/// `struct rdma_ucm_conn_param`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, Immutable)]
pub struct rdma_ucm_conn_param {
    pub qp_num: u32,
    pub qkey: u32,
    pub private_data: [u8; 256],
    pub private_data_len: u8,
    pub srq: u8,
    pub responder_resources: u8,
    pub initiator_depth: u8,
    pub flow_control: u8,
    pub retry_count: u8,
    pub rnr_retry_count: u8,
    pub valid: u8,
}

/// `struct rdma_ucm_ud_param`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, Immutable)]
pub struct rdma_ucm_ud_param {
    pub qp_num: u32,
    pub qkey: u32,
    pub ah_attr: ib_uverbs_ah_attr,
    pub private_data: [u8; 256],
    pub private_data_len: u8,
    pub reserved: [u8; 7],
}

/// `struct rdma_ucm_ece`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable)]
pub struct rdma_ucm_ece {
    pub vendor_id: u32,
    pub attr_mod: u32,
}

/// `struct rdma_ucm_connect`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, Immutable)]
pub struct rdma_ucm_connect {
    pub conn_param: rdma_ucm_conn_param,
    pub id: u32,
    pub reserved: u32,
    pub ece: rdma_ucm_ece,
}

/// `struct rdma_ucm_listen`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable)]
pub struct rdma_ucm_listen {
    pub id: u32,
    pub backlog: u32,
}

/// `struct rdma_ucm_accept`.
#[repr(C, align(8))]
#[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, Immutable)]
pub struct rdma_ucm_accept {
    pub uid: u64,
    pub conn_param: rdma_ucm_conn_param,
    pub id: u32,
    pub reserved: u32,
    pub ece: rdma_ucm_ece,
}

/// `struct rdma_ucm_reject`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, Immutable)]
pub struct rdma_ucm_reject {
    pub id: u32,
    pub private_data_len: u8,
    pub reason: u8,
    pub reserved: [u8; 2],
    pub private_data: [u8; 256],
}

/// `struct rdma_ucm_disconnect`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable)]
pub struct rdma_ucm_disconnect {
    pub id: u32,
}

/// `struct rdma_ucm_init_qp_attr`; the answer is an `ib_uverbs_qp_attr`.
#[repr(C, align(8))]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable)]
pub struct rdma_ucm_init_qp_attr {
    pub response: u64,
    pub id: u32,
    pub qp_state: u32,
}

/// `struct rdma_ucm_notify`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable)]
pub struct rdma_ucm_notify {
    pub id: u32,
    pub event: u32,
}

/// `struct rdma_ucm_join_ip_mcast`.
#[repr(C, align(8))]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable)]
pub struct rdma_ucm_join_ip_mcast {
    pub response: u64,
    pub uid: u64,
    pub addr: sockaddr_in6,
    pub id: u32,
}

/// `struct rdma_ucm_join_mcast`.
#[repr(C, align(8))]
#[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, Immutable)]
pub struct rdma_ucm_join_mcast {
    pub response: u64,
    pub uid: u64,
    pub id: u32,
    pub addr_size: u16,
    pub join_flags: u16,
    pub addr: __kernel_sockaddr_storage,
}

/// `struct rdma_ucm_get_event`.
#[repr(C, align(8))]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable)]
pub struct rdma_ucm_get_event {
    pub response: u64,
}

/// `struct rdma_ucm_event_resp`. `param` is the header's union of
/// [`rdma_ucm_conn_param`] (`param.conn`) and [`rdma_ucm_ud_param`] (`param.ud`), the
/// larger: its bytes, read and written through [`rdma_ucm_event_resp::conn`] and
/// [`rdma_ucm_event_resp::set_conn`].
#[repr(C, align(8))]
#[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, Immutable)]
pub struct rdma_ucm_event_resp {
    pub uid: u64,
    pub id: u32,
    pub event: u32,
    /// A negative errno or a reject reason, as the kernel's `int status`.
    pub status: u32,
    pub param: [u8; 304],
    pub reserved: u32,
    pub ece: rdma_ucm_ece,
}

impl rdma_ucm_event_resp {
    /// `param.conn`.
    pub fn conn(&self) -> rdma_ucm_conn_param {
        self.param_as()
    }

    /// Sets `param.conn` (the union's other bytes stay as they are).
    pub fn set_conn(&mut self, conn: &rdma_ucm_conn_param) {
        self.set_param(conn);
    }

    /// `param.ud` (the events of a UD id).
    pub fn ud(&self) -> rdma_ucm_ud_param {
        self.param_as()
    }

    /// Sets `param.ud`.
    pub fn set_ud(&mut self, ud: &rdma_ucm_ud_param) {
        self.set_param(ud);
    }

    fn param_as<T: FromBytes>(&self) -> T {
        T::read_from_prefix(&self.param)
            .expect("the union holds each of its members")
            .0
    }

    fn set_param<T: IntoBytes + Immutable>(&mut self, p: &T) {
        let bytes = p.as_bytes();
        self.param[..bytes.len()].copy_from_slice(bytes);
    }
}

/// `struct rdma_ucm_set_option`.
#[repr(C, align(8))]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable)]
pub struct rdma_ucm_set_option {
    pub optval: u64,
    pub id: u32,
    pub level: u32,
    pub optname: u32,
    pub optlen: u32,
}

/// `struct rdma_ucm_migrate_id`.
#[repr(C, align(8))]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable)]
pub struct rdma_ucm_migrate_id {
    pub response: u64,
    pub id: u32,
    pub fd: u32,
}

/// `struct rdma_ucm_migrate_resp`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable)]
pub struct rdma_ucm_migrate_resp {
    pub events_reported: u32,
}

#[cfg(test)]
mod tests {
    use super::not_in_headers::*;
    use super::*;
    use zerocopy::FromZeros;

    #[test]
    fn the_cm_values_no_header_has_are_the_kernels() {
        // include/rdma/ib_cm.h: enum ib_cm_rej_reason and the IB_CM_*_PRIVATE_DATA_SIZE.
        assert_eq!(
            (
                IB_CM_REJ_TIMEOUT,
                IB_CM_REJ_INVALID_SERVICE_ID,
                IB_CM_REJ_STALE_CONN,
                IB_CM_REJ_CONSUMER_DEFINED,
                IB_CM_REJ_VENDOR_OPTION_NOT_SUPPORTED
            ),
            (1, 8, 10, 28, 35)
        );
        assert_eq!(
            (
                IB_CM_REQ_PRIVATE_DATA_SIZE,
                IB_CM_REP_PRIVATE_DATA_SIZE,
                IB_CM_REJ_PRIVATE_DATA_SIZE,
                IB_CM_DREQ_PRIVATE_DATA_SIZE,
                IB_CM_DREP_PRIVATE_DATA_SIZE,
                IB_CM_RTU_PRIVATE_DATA_SIZE
            ),
            (92, 196, 148, 220, 224, 224)
        );
        // cma.c struct cma_hdr: version, IP version, port, two 16-byte addresses.
        assert_eq!(CMA_HDR_SIZE, 1 + 1 + 2 + 16 + 16);
    }

    #[test]
    fn the_event_union_holds_a_conn_param_at_its_start() {
        let mut ev = rdma_ucm_event_resp::new_zeroed();
        let mut conn = rdma_ucm_conn_param::new_zeroed();
        conn.qp_num = 0x12_3456;
        conn.private_data[0] = 0xab;
        conn.private_data_len = 56;
        ev.set_conn(&conn);
        assert_eq!(ev.conn(), conn);
        assert_eq!(&ev.param[..4], &0x12_3456u32.to_ne_bytes());
        assert_eq!(ev.param[8], 0xab);
    }
}
