//! Flow steering (`ibv_create_flow`, `ibv_destroy_flow`): the extended commands
//! `IB_USER_VERBS_EX_CMD_CREATE_FLOW` / `DESTROY_FLOW`, the rule's attribute and the specs
//! that follow it (each a header, then a filter's value and mask of equal size; filters in
//! network byte order), and the spec and rule types, which the uapi header leaves to the
//! kernel's `enum ib_flow_spec_type` / `ib_flow_attr_type`: named here as libibverbs'
//! `<infiniband/verbs.h>` names them, with the same values.

use zerocopy::{FromBytes, Immutable, IntoBytes};

/// `IBV_FLOW_SPEC_ETH` (`IB_FLOW_SPEC_ETH`).
pub const IBV_FLOW_SPEC_ETH: u32 = 0x20;
/// `IBV_FLOW_SPEC_IPV4` (`IB_FLOW_SPEC_IPV4`; libibverbs sends its `_EXT` form as this type
/// with the longer filter).
pub const IBV_FLOW_SPEC_IPV4: u32 = 0x30;
/// `IBV_FLOW_SPEC_IPV6`.
pub const IBV_FLOW_SPEC_IPV6: u32 = 0x31;
/// `IBV_FLOW_SPEC_TCP`.
pub const IBV_FLOW_SPEC_TCP: u32 = 0x40;
/// `IBV_FLOW_SPEC_UDP`.
pub const IBV_FLOW_SPEC_UDP: u32 = 0x41;
/// `IBV_FLOW_SPEC_INNER`: the spec matches the inner headers of a tunnel.
pub const IBV_FLOW_SPEC_INNER: u32 = 0x100;
/// `IBV_FLOW_SPEC_ACTION_TAG`.
pub const IBV_FLOW_SPEC_ACTION_TAG: u32 = 0x1000;
/// `IBV_FLOW_SPEC_ACTION_DROP`.
pub const IBV_FLOW_SPEC_ACTION_DROP: u32 = 0x1001;
/// `IBV_FLOW_ATTR_NORMAL`.
pub const IBV_FLOW_ATTR_NORMAL: u32 = 0;
/// `IBV_FLOW_ATTR_ALL_DEFAULT`.
pub const IBV_FLOW_ATTR_ALL_DEFAULT: u32 = 1;
/// `IBV_FLOW_ATTR_MC_DEFAULT`.
pub const IBV_FLOW_ATTR_MC_DEFAULT: u32 = 2;
/// `IBV_FLOW_ATTR_SNIFFER`.
pub const IBV_FLOW_ATTR_SNIFFER: u32 = 3;
/// `IBV_FLOW_ATTR_FLAGS_DONT_TRAP`.
pub const IBV_FLOW_ATTR_FLAGS_DONT_TRAP: u32 = 1 << 1;
/// `IBV_FLOW_ATTR_FLAGS_EGRESS`.
pub const IBV_FLOW_ATTR_FLAGS_EGRESS: u32 = 1 << 2;

/// `struct ib_uverbs_flow_spec_hdr`: every spec's first 8 bytes.
#[repr(C, align(8))]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable)]
pub struct ib_uverbs_flow_spec_hdr {
    /// `IBV_FLOW_SPEC_*`.
    pub r#type: u32,
    /// The spec's bytes, this header included.
    pub size: u16,
    pub reserved: u16,
}

/// `struct ib_uverbs_flow_eth_filter` (`ether_type` and `vlan_tag` big-endian).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable)]
pub struct ib_uverbs_flow_eth_filter {
    pub dst_mac: [u8; 6],
    pub src_mac: [u8; 6],
    pub ether_type: u16,
    pub vlan_tag: u16,
}

/// `struct ib_uverbs_flow_spec_eth`.
#[repr(C, align(8))]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable)]
pub struct ib_uverbs_flow_spec_eth {
    pub hdr: ib_uverbs_flow_spec_hdr,
    pub val: ib_uverbs_flow_eth_filter,
    pub mask: ib_uverbs_flow_eth_filter,
}

/// `struct ib_uverbs_flow_ipv4_filter` (addresses big-endian).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable)]
pub struct ib_uverbs_flow_ipv4_filter {
    pub src_ip: u32,
    pub dst_ip: u32,
    pub proto: u8,
    pub tos: u8,
    pub ttl: u8,
    pub flags: u8,
}

/// `struct ib_uverbs_flow_spec_ipv4`.
#[repr(C, align(8))]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable)]
pub struct ib_uverbs_flow_spec_ipv4 {
    pub hdr: ib_uverbs_flow_spec_hdr,
    pub val: ib_uverbs_flow_ipv4_filter,
    pub mask: ib_uverbs_flow_ipv4_filter,
}

/// `struct ib_uverbs_flow_tcp_udp_filter` (ports big-endian).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable)]
pub struct ib_uverbs_flow_tcp_udp_filter {
    pub dst_port: u16,
    pub src_port: u16,
}

/// `struct ib_uverbs_flow_spec_tcp_udp`.
#[repr(C, align(8))]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable)]
pub struct ib_uverbs_flow_spec_tcp_udp {
    pub hdr: ib_uverbs_flow_spec_hdr,
    pub val: ib_uverbs_flow_tcp_udp_filter,
    pub mask: ib_uverbs_flow_tcp_udp_filter,
}

/// `struct ib_uverbs_flow_ipv6_filter` (`flow_label` big-endian).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable)]
pub struct ib_uverbs_flow_ipv6_filter {
    pub src_ip: [u8; 16],
    pub dst_ip: [u8; 16],
    pub flow_label: u32,
    pub next_hdr: u8,
    pub traffic_class: u8,
    pub hop_limit: u8,
    pub reserved: u8,
}

/// `struct ib_uverbs_flow_spec_ipv6`: the largest member of the header's
/// `struct ib_uverbs_flow_spec` union.
#[repr(C, align(8))]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable)]
pub struct ib_uverbs_flow_spec_ipv6 {
    pub hdr: ib_uverbs_flow_spec_hdr,
    pub val: ib_uverbs_flow_ipv6_filter,
    pub mask: ib_uverbs_flow_ipv6_filter,
}

/// `struct ib_uverbs_flow_spec_action_tag`.
#[repr(C, align(8))]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable)]
pub struct ib_uverbs_flow_spec_action_tag {
    pub hdr: ib_uverbs_flow_spec_hdr,
    pub tag_id: u32,
    pub reserved1: u32,
}

/// `struct ib_uverbs_flow_spec_action_drop`: the header alone.
#[repr(C, align(8))]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable)]
pub struct ib_uverbs_flow_spec_action_drop {
    pub hdr: ib_uverbs_flow_spec_hdr,
}

/// `struct ib_uverbs_flow_attr`; its specs follow it (`flow_specs`).
#[repr(C, align(8))]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable)]
pub struct ib_uverbs_flow_attr {
    /// `IBV_FLOW_ATTR_*`.
    pub r#type: u32,
    /// The specs' bytes (not this struct's).
    pub size: u16,
    pub priority: u16,
    pub num_of_specs: u8,
    pub reserved: [u8; 2],
    pub port: u8,
    /// `IBV_FLOW_ATTR_FLAGS_*`.
    pub flags: u32,
}

/// `struct ib_uverbs_create_flow` (extended; the specs follow, no driver data from
/// libibverbs).
#[repr(C, align(8))]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable)]
pub struct ib_uverbs_create_flow {
    pub comp_mask: u32,
    pub qp_handle: u32,
    pub flow_attr: ib_uverbs_flow_attr,
}

/// `struct ib_uverbs_create_flow_resp`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable)]
pub struct ib_uverbs_create_flow_resp {
    pub comp_mask: u32,
    pub flow_handle: u32,
}

/// `struct ib_uverbs_destroy_flow` (extended, no response).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable)]
pub struct ib_uverbs_destroy_flow {
    pub comp_mask: u32,
    pub flow_handle: u32,
}
