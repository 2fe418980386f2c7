//! The device as the driver sees it: access rights, slow-path errors, capabilities, ports,
//! GID tables and link layers.

use std::fmt;
use std::ops::BitOr;

/// Memory and QP access rights (same values as `ibv_access_flags`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Access(pub u32);

impl Access {
    /// No rights beyond local read.
    pub const NONE: Access = Access(0);
    /// The NIC may write local memory (receive scatter, READ and atomic results).
    pub const LOCAL_WRITE: Access = Access(1);
    /// Remote peers may RDMA WRITE.
    pub const REMOTE_WRITE: Access = Access(2);
    /// Remote peers may RDMA READ.
    pub const REMOTE_READ: Access = Access(4);
    /// Remote peers may run atomics.
    pub const REMOTE_ATOMIC: Access = Access(8);
    /// A memory key registered on demand (`IBV_ACCESS_ON_DEMAND`, bit 6): nothing is
    /// present at registration; the NIC faults pages in on first touch. Memory keys only.
    pub const ON_DEMAND: Access = Access(1 << 6);

    /// True if every right in `other` is also in `self`.
    pub fn contains(self, other: Access) -> bool {
        self.0 & other.0 == other.0
    }
}

impl BitOr for Access {
    type Output = Access;
    fn bitor(self, rhs: Access) -> Access {
        Access(self.0 | rhs.0)
    }
}

/// Errors of the slow-path (object) interface.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HwError {
    /// The named object does not exist on this NIC.
    NoSuchObject,
    /// The object is still referenced by another object.
    Busy,
    /// The QP state transition is not allowed from the current state.
    InvalidTransition,
    /// A parameter is out of range; the text names it.
    InvalidParam(&'static str),
    /// A table or ring limit was reached.
    OutOfResources,
    /// An address is null, misaligned or wraps the address space.
    BadAddress,
    /// The device does not have this capability (`NicConfig` turned it off).
    NotSupported(&'static str),
}

impl fmt::Display for HwError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HwError::NoSuchObject => f.write_str("no such object"),
            HwError::Busy => f.write_str("object in use"),
            HwError::InvalidTransition => f.write_str("invalid QP state transition"),
            HwError::InvalidParam(what) => write!(f, "invalid parameter: {what}"),
            HwError::OutOfResources => f.write_str("out of resources"),
            HwError::BadAddress => f.write_str("bad address"),
            HwError::NotSupported(what) => write!(f, "not supported by the device: {what}"),
        }
    }
}

impl std::error::Error for HwError {}

/// Device capabilities (the subset of `ibv_device_attr` / HCA caps the driver needs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Caps {
    /// Maximum send queue size in WQEBBs.
    pub max_qp_wr: u32,
    /// Maximum size of one send WQE in bytes (63 DS).
    pub max_sq_desc_sz: u32,
    /// Maximum gather entries in a send WQE.
    pub max_send_sge: u32,
    /// Maximum scatter entries in a receive WQE.
    pub max_recv_sge: u32,
    /// Maximum CQ entries.
    pub max_cqe: u32,
    /// Maximum inline payload in one WQE.
    pub max_inline: u32,
    /// BlueFlame half size in bytes (0 = none).
    pub bf_size: u32,
    /// Maximum outstanding RDMA READ/atomic per QP.
    pub max_rd_atomic: u8,
    /// Maximum message size.
    pub max_msg_sz: u32,
    /// 8-byte atomic results in host byte order (`NicConfig::atomic_8b_host_order`).
    pub atomic_8b_host_order: bool,
    /// The compact (16-byte) address vector is accepted (`NicConfig::compact_av`).
    pub compact_av: bool,
    /// Device memory in bytes (`max_dm_size` of `ibv_query_device_ex`; 0: none), whole
    /// 4 KiB pages of [`NicConfig::dm_size`](crate::NicConfig::dm_size).
    pub max_dm_size: u64,
    /// `max_mcast_grp` ([`McastConfig::max_groups`](crate::McastConfig::max_groups)).
    pub max_mcast_grp: u32,
    /// `max_mcast_qp_attach` ([`McastConfig::max_qps_per_group`](crate::McastConfig::max_qps_per_group)).
    pub max_mcast_qp_attach: u32,
    /// `max_total_mcast_qp_attach`: the two above multiplied, as the kernel's
    /// `mlx5_ib_query_device` reports it (saturating).
    pub max_total_mcast_qp_attach: u32,
    /// XRC is supported (`IBV_DEVICE_XRC`, [`XrcConfig::supported`](crate::XrcConfig::supported)).
    pub xrc: bool,
    /// Packet pacing caps ([`NicConfig::packet_pacing`](crate::NicConfig::packet_pacing)).
    pub packet_pacing: crate::types::pacing::PacketPacing,
}

/// Port attributes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PortAttr {
    /// Local identifier of the port (0 on Ethernet).
    pub lid: u16,
    /// The link layer ([`NicConfig::link_layer`](crate::NicConfig::link_layer)).
    pub link_layer: LinkLayer,
    /// GID 0 of the port.
    pub gid: [u8; 16],
    /// Active MTU in bytes.
    pub active_mtu: u32,
    /// Entries in the port's GID table (`ibv_port_attr.gid_tbl_len`): 1 on InfiniBand, the
    /// length of [`NicConfig::roce_gids`](crate::NicConfig::roce_gids) (1 when it is empty)
    /// on Ethernet.
    pub gid_table_len: u32,
}

/// The type of a GID table entry (`enum ibv_gid_type` of `ibv_query_gid_ex`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GidType {
    /// An InfiniBand port's GID.
    Ib,
    /// RoCE v1: the packets carry an IBA GRH (next header 0x1B) straight over Ethernet
    /// (ethertype 0x8915); not routable.
    RoceV1,
    /// RoCE v2: the packets carry IPv6 (or IPv4 for an IPv4-mapped GID) and UDP (port
    /// 4791).
    RoceV2,
}

/// The address of a RoCE GID table entry ([`RoceGid`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GidAddr {
    /// The port's link-local IPv6 address: `fe80::` + the modified EUI-64 of the model's
    /// MAC `02:00:00:00:LID` (the kernel's default GID of a netdev).
    LinkLocal,
    /// An IPv4 address: the IPv4-mapped GID `::ffff:a.b.c.d` (the kernel's
    /// `rdma_ip2gid`).
    Ipv4([u8; 4]),
    /// Any other IPv6 address, as given.
    Ipv6([u8; 16]),
}

/// One entry of a RoCE port's GID table ([`NicConfig::roce_gids`](crate::NicConfig::roce_gids)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RoceGid {
    /// RoCE v1 or v2 ([`GidType::Ib`] is not a RoCE type: `Nic::new` panics on it).
    pub gid_type: GidType,
    /// The address.
    pub addr: GidAddr,
    /// The VLAN of the netdev holding the address (12 bits, 0..=4094; `Nic::new` panics
    /// on a larger value): packets from this GID carry the tag, and packets to it are
    /// received only with it.
    pub vlan: Option<u16>,
}

impl RoceGid {
    /// The two entries the kernel adds for one address of a netdev (`roce_gid_mgmt.c`
    /// `update_gid` adds one per GID type the port supports: RoCE v1, then v2).
    pub fn both_types(addr: GidAddr, vlan: Option<u16>) -> [RoceGid; 2] {
        [GidType::RoceV1, GidType::RoceV2].map(|gid_type| RoceGid {
            gid_type,
            addr,
            vlan,
        })
    }
}

/// A GID table entry as [`Nic::query_gid`](crate::Nic::query_gid) reads it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GidEntry {
    /// The GID.
    pub gid: [u8; 16],
    /// Its type.
    pub gid_type: GidType,
    /// Its VLAN (RoCE).
    pub vlan: Option<u16>,
}

/// A port's link layer (`ibv_port_attr.link_layer`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LinkLayer {
    /// InfiniBand: LIDs; a GRH only where an address has a global route.
    #[default]
    InfiniBand,
    /// Ethernet, RoCE: no LIDs (the port reports LID 0), every address is global, the
    /// source GID's entry in [`NicConfig::roce_gids`](crate::NicConfig::roce_gids) says
    /// what the packets carry (RoCE v1: an IBA GRH; v2: IPv6, or IPv4 for an IPv4-mapped
    /// GID, and UDP; a VLAN tag), and UD receives always get that header in their GRH area
    /// (docs/model.md, "RoCE").
    Ethernet,
}
