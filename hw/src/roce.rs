//! RoCE (`NicConfig::link_layer = Ethernet`): the model's MAC and GID table of a port, the
//! UDP source port rdma-core derives from the flow label, the IPv4 header of RoCE v2 over
//! IPv4, the L3 header types a UD receive CQE reports, and a multicast group's MAC. The
//! destination MAC an address handle resolves from a GID is `ud::dmac` (it searches the
//! fabric).

use crate::types::{GidAddr, GidEntry, GidType, RoceGid};

/// The model's MAC of the port of LID `lid`: locally administered, `02:00:00:00:LID`.
pub(crate) fn mac(lid: u16) -> [u8; 6] {
    let [hi, lo] = lid.to_be_bytes();
    [0x02, 0, 0, 0, hi, lo]
}

/// The link-local IPv6 GID of the port of LID `lid` (`fe80::` + the modified EUI-64 of its
/// MAC, RFC 4291 appendix A: `ff:fe` in the middle, the universal/local bit inverted), as
/// the kernel's default RoCE GID of a netdev with no other address.
pub(crate) fn link_local_gid(lid: u16) -> [u8; 16] {
    let m = mac(lid);
    let mut gid = [0u8; 16];
    gid[0] = 0xfe;
    gid[1] = 0x80;
    gid[8..16].copy_from_slice(&[m[0] ^ 0x02, m[1], m[2], 0xff, 0xfe, m[3], m[4], m[5]]);
    gid
}

/// The IPv4-mapped GID of an IPv4 address, `::ffff:a.b.c.d` (the kernel's `rdma_ip2gid`,
/// `include/rdma/ib_addr.h`, via `ipv6_addr_set_v4mapped`).
pub(crate) fn ipv4_mapped(a: [u8; 4]) -> [u8; 16] {
    let mut gid = [0u8; 16];
    gid[10] = 0xff;
    gid[11] = 0xff;
    gid[12..].copy_from_slice(&a);
    gid
}

/// Whether `gid` is IPv4-mapped (`ipv6_addr_v4mapped`): a RoCE v2 GID of that form makes
/// the packets IPv4 (the kernel's `rdma_gid_attr_network_type`).
pub(crate) fn is_ipv4_mapped(gid: &[u8; 16]) -> bool {
    gid[..10] == [0; 10] && gid[10..12] == [0xff, 0xff]
}

/// The Ethernet MAC of multicast group `gid`, as the kernel's `ib_resolve_eth_dmac` maps
/// it for an address handle: an IPv4-mapped group by `ip_eth_mc_map` (01:00:5e and the low
/// 23 bits of the IPv4 address, RFC 1112), any other by `ipv6_eth_mc_map` (33:33 and the
/// low 32 bits, RFC 2464).
pub(crate) fn mcast_mac(gid: &[u8; 16]) -> [u8; 6] {
    if is_ipv4_mapped(gid) {
        [0x01, 0x00, 0x5e, gid[13] & 0x7f, gid[14], gid[15]]
    } else {
        [0x33, 0x33, gid[12], gid[13], gid[14], gid[15]]
    }
}

/// The GID table of an Ethernet port of LID `lid` configured with `entries`
/// (`NicConfig::roce_gids`; empty: the link-local address as RoCE v2).
///
/// # Panics
/// On an entry of type [`GidType::Ib`] or with a VLAN above 4094: a configuration error.
pub(crate) fn gid_table(lid: u16, entries: &[RoceGid]) -> Vec<GidEntry> {
    let default = [RoceGid {
        gid_type: GidType::RoceV2,
        addr: GidAddr::LinkLocal,
        vlan: None,
    }];
    let entries = if entries.is_empty() {
        &default
    } else {
        entries
    };
    entries
        .iter()
        .map(|e| {
            assert!(e.gid_type != GidType::Ib, "an IB GID on a RoCE port");
            assert!(e.vlan.is_none_or(|v| v <= 4094), "VLAN ids are 0..=4094");
            let gid = match e.addr {
                GidAddr::LinkLocal => link_local_gid(lid),
                GidAddr::Ipv4(a) => ipv4_mapped(a),
                GidAddr::Ipv6(g) => g,
            };
            GidEntry {
                gid,
                gid_type: e.gid_type,
                vlan: e.vlan,
            }
        })
        .collect()
}

/// The UDP source port of a RoCE v2 address handle with flow label `fl`, as rdma-core's
/// `ibv_flow_label_to_udp_sport` (`libibverbs/verbs.h`) computes it for `mlx5_create_ah`:
/// the 20 bits folded to 14, in the range 0xC000..=0xFFFF. For flow label 0 rdma-core
/// picks a random port in that range (`mlx5_ah_set_udp_sport`); the model takes 0xC000,
/// or with a seed (`NicConfig::udp_sport_seed`, state `rng`) the next pseudo-random one.
pub(crate) fn udp_sport(fl: u32, rng: &mut Option<u64>) -> u16 {
    let low = match (fl, rng) {
        (0, None) => 0,
        (0, Some(x)) => {
            // xorshift64* (Vigna 2016).
            *x ^= *x >> 12;
            *x ^= *x << 25;
            *x ^= *x >> 27;
            (x.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 50) as u32
        }
        _ => (fl & 0x3fff) ^ ((fl & 0xf_c000) >> 14),
    };
    (low | 0xc000) as u16
}

/// UDP header bytes of a RoCE v2 packet, which the IPv6 PayLen counts.
pub(crate) const UDP_HEADER: usize = 8;
/// IPv6 `Next Header` of a RoCE v2 packet: UDP.
pub(crate) const NEXT_HDR_UDP: u8 = 17;

/// The L3 header of a RoCE packet, by the source GID's entry. As a number: the L3 header
/// type a receive CQE reports in `flags_rqpn` bits 25..24 (the kernel's
/// `drivers/infiniband/hw/mlx5/cq.c` `handle_responder` reads `(flags_rqpn >> 24) & 0x3`
/// as `MLX5_CQE_ROCE_L3_HEADER_TYPE_GRH` 0, `_IPV6` 1, `_IPV4` 2,
/// `include/linux/mlx5/device.h`), as bits of the flags byte.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum L3 {
    /// RoCE v1: an IBA GRH.
    Grh = 0,
    /// RoCE v2 over IPv6.
    Ipv6 = 1,
    /// RoCE v2 over IPv4.
    Ipv4 = 2,
}

impl L3 {
    /// The header packets from GID table entry `e` carry (the kernel's
    /// `rdma_gid_attr_network_type`: RoCE v1 whatever the address, v2 IPv4 for an
    /// IPv4-mapped GID, else IPv6).
    pub(crate) fn of(e: &GidEntry) -> L3 {
        match e.gid_type {
            GidType::RoceV2 if is_ipv4_mapped(&e.gid) => L3::Ipv4,
            GidType::RoceV2 => L3::Ipv6,
            GidType::RoceV1 | GidType::Ib => L3::Grh,
        }
    }

    /// The RoCE packet type a UD or DC receive CQE carries where InfiniBand has the SL
    /// (`flags_rqpn` bits 27..24): bit 3 set when the frame had a UDP header (RoCE v2),
    /// bits 2..0 the L3 header type. UCX quotes the PRM there (ib_mlx5.inl
    /// `uct_ib_mlx5_cqe_roce_gid_len`: "for responder UD/DC over RoCE sl represents RoCE
    /// packet type"); the kernel reads only bits 25..24.
    pub(crate) fn packet_type(self) -> u8 {
        match self {
            L3::Grh => 0,
            L3::Ipv6 | L3::Ipv4 => UDP_PRESENT | self as u8,
        }
    }
}

/// Bit 3 of the RoCE packet type: the frame carried a UDP header.
const UDP_PRESENT: u8 = 1 << 3;

/// Bytes of an IPv4 header without options (RoCE v2 allows none: the kernel's
/// `ib_get_rdma_header_version` takes only IHL 5).
pub(crate) const IPV4_HEADER: usize = 20;
/// IPv4 flags and fragment offset of a RoCE v2 packet: Don't Fragment (RoCE packets are
/// never fragmented). What mlx5 writes in the flags and the identification is not public;
/// the kernel's `ib_get_rdma_header_version` checks only the version, the IHL and the
/// checksum (docs/model.md, "RoCE").
const IPV4_DF: u16 = 0x4000;

/// The IPv4 header (RFC 791) of a RoCE v2 packet from `src` to `dst` (IPv4-mapped GIDs)
/// with `len` bytes after it: version 4, IHL 5, TOS = the traffic class, total length,
/// identification 0, DF, TTL = the hop limit, protocol 17 (UDP), the header checksum.
pub(crate) fn ipv4_header(
    tos: u8,
    ttl: u8,
    len: usize,
    src: &[u8; 16],
    dst: &[u8; 16],
) -> [u8; IPV4_HEADER] {
    let mut h = [0u8; IPV4_HEADER];
    h[0] = 0x45;
    h[1] = tos;
    h[2..4].copy_from_slice(&((IPV4_HEADER + len) as u16).to_be_bytes());
    h[6..8].copy_from_slice(&IPV4_DF.to_be_bytes());
    h[8] = ttl;
    h[9] = NEXT_HDR_UDP;
    h[12..16].copy_from_slice(&src[12..]);
    h[16..20].copy_from_slice(&dst[12..]);
    let sum = h
        .chunks_exact(2)
        .map(|w| u32::from(u16::from_be_bytes([w[0], w[1]])))
        .sum::<u32>();
    let folded = (sum & 0xffff) + (sum >> 16);
    let folded = (folded & 0xffff) + (folded >> 16);
    h[10..12].copy_from_slice(&(!(folded as u16)).to_be_bytes());
    h
}
