//! RoCE v2 (`NicConfig::link_layer = Ethernet`): the model's MAC and link-local GID of a
//! port, the destination MAC an address handle resolves from a GID, the UDP source port
//! rdma-core derives from the flow label, and the IPv6 header a UD receive gets in its GRH
//! area.

/// The model's MAC of the port of LID `lid`: locally administered, `02:00:00:00:LID`.
fn mac(lid: u16) -> [u8; 6] {
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

/// The MAC behind a link-local GID: its EUI-64 read back (the kernel's
/// `rdma_get_ll_mac`, `include/rdma/ib_addr.h`). rdma-core gets the destination MAC from
/// the kernel (`mlx5_create_ah`); on the model's fabric every GID is link-local.
pub(crate) fn mac_of_gid(gid: &[u8; 16]) -> [u8; 6] {
    [gid[8] ^ 0x02, gid[9], gid[10], gid[13], gid[14], gid[15]]
}

/// The UDP source port of a RoCE v2 packet with flow label `fl`, as rdma-core's
/// `ibv_flow_label_to_udp_sport` (`libibverbs/verbs.h`) computes it for `mlx5_create_ah`:
/// the 20 bits folded to 14, in the range 0xC000..=0xFFFF. rdma-core picks a random port
/// in that range for flow label 0; the model takes 0xC000 there.
pub(crate) fn udp_sport(fl: u32) -> u16 {
    let fold = (fl & 0x3fff) ^ ((fl & 0xf_c000) >> 14);
    (fold | 0xc000) as u16
}

/// UDP header bytes of a RoCE v2 packet, which the IPv6 PayLen counts.
pub(crate) const UDP_HEADER: usize = 8;
/// IPv6 `Next Header` of a RoCE v2 packet: UDP.
pub(crate) const NEXT_HDR_UDP: u8 = 17;
/// `flags_rqpn` bits 25..24 of a RoCE receive (the L3 header type the kernel's
/// `handle_responder` reads as `MLX5_CQE_ROCE_L3_HEADER_TYPE_IPV6`), as bits of the flags
/// byte.
pub(crate) const CQE_L3_IPV6: u8 = 1;
