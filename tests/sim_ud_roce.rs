//! UD over RoCE end to end on the model: the GID table, the IPv6 / IPv4 headers in the GRH
//! area, the UDP source port from the flow label, VLANs, and the address handles the kernel
//! refuses.

mod common;

use common::ud::*;
use common::{assert_empty, poll_n, side, side_on, Rig, Side};
use mlx5_direct::backend::sim::hw::{GidAddr, GidEntry, GidType, LinkLayer, RoceGid};
use mlx5_direct::backend::sim::{Fabric, NicConfig, Sim};
use mlx5_direct::{
    AddressHandle, AhAttr, Completion, Context, Data, Error, GlobalRoute, SendOp, Status,
};

/// The UDP source port in a RoCE AV's `rlid` is rdma-core's own
/// `ibv_flow_label_to_udp_sport` of the flow label, over the label's whole range (a label
/// of 0 is left out: `mlx5_create_ah` picks a random port for it).
#[test]
#[cfg_attr(
    not(rdma_headers),
    ignore = "install libibverbs-dev to compare with rdma-core"
)]
fn roce_udp_source_port_is_ibv_flow_label_to_udp_sport() {
    let roce = NicConfig {
        link_layer: LinkLayer::Ethernet,
        ..NicConfig::default()
    };
    let rig = (Fabric::new(), roce);
    let (a, b) = (rig.side(&ud_config()), rig.side(&ud_config()));
    let dgid = b.ctx.port(1).unwrap().gid;
    for flow_label in [1, 0x3fff, 0x4000, 0x12345, 0x7c01f, 0xfc000, 0xfffff] {
        let ah =
            a.pd.create_ah(&AhAttr {
                port: 1,
                grh: Some(GlobalRoute {
                    dgid,
                    flow_label,
                    sgid_index: 0,
                    hop_limit: 64,
                    traffic_class: 0,
                }),
                ..AhAttr::default()
            })
            .unwrap();
        let av = ah.av().to_bytes();
        assert_eq!(
            u16::from_be_bytes([av[14], av[15]]),
            mlx5_golden::flow_label_to_udp_sport(flow_label),
            "flow label {flow_label:#x}"
        );
    }
}

/// UD over RoCE v2 (`NicConfig::link_layer = Ethernet`): the port has no LID and a
/// link-local GID, an address handle needs a global route, its AV carries the RoCE fields
/// (`mlx5_create_ah`: SL in bits 3..1, the UDP source port from the flow label in `rlid`,
/// the destination MAC, the GRH fields without bit 30), and a datagram lands after the
/// IPv6 header, which the CQE flags as GRH-in-buffer of L3 type IPv6.
#[test]
fn ud_over_roce_writes_the_ipv6_header_and_takes_the_udp_port_from_the_flow_label() {
    let fabric = Fabric::new();
    let roce = NicConfig {
        link_layer: LinkLayer::Ethernet,
        ..NicConfig::default()
    };
    let rig = (fabric.clone(), roce);
    let (mut a, mut b) = (rig.side(&ud_config()), rig.side(&ud_config()));
    a.qp.activate_ud(1, QKEY).unwrap();
    b.qp.activate_ud(1, QKEY).unwrap();
    let (pa, pb) = (a.ctx.port(1).unwrap(), b.ctx.port(1).unwrap());
    assert!(pa.roce && pb.roce);
    assert_eq!((pa.lid, pb.lid), (0, 0));
    // fe80:: + the modified EUI-64 of the model's MAC 02:00:00:00:LID (RFC 4291 app. A).
    assert_eq!(&pb.gid[..8], &[0xfe, 0x80, 0, 0, 0, 0, 0, 0]);
    assert_eq!(&pb.gid[8..13], &[0, 0, 0, 0xff, 0xfe]);
    let mac_b = [0x02, 0, 0, 0, pb.gid[14], pb.gid[15]];

    // No global route: refused before the device is asked, as mlx5_create_ah's EINVAL.
    assert!(matches!(
        a.pd.create_ah(&AhAttr {
            port: 1,
            ..AhAttr::default()
        }),
        Err(Error::InvalidArgument(_))
    ));
    let ah =
        a.pd.create_ah(&AhAttr {
            port: 1,
            dlid: 0,
            sl: 5,
            src_path_bits: 0,
            grh: Some(GlobalRoute {
                dgid: pb.gid,
                flow_label: 0x12345,
                sgid_index: 0,
                hop_limit: 64,
                traffic_class: 0x20,
            }),
        })
        .unwrap();
    let mut want = [0u8; 48];
    // stat_rate_sl: rate 0, (SL & 7) << 1.
    want[12] = 5 << 1;
    // rlid: ibv_flow_label_to_udp_sport(0x12345) = (0x2345 ^ (0x12345 >> 14 = 4)) | 0xc000.
    want[14..16].copy_from_slice(&0xe341u16.to_be_bytes());
    want[20..26].copy_from_slice(&mac_b);
    want[26] = 0x20;
    want[27] = 64;
    // grh_gid_fl: SGID index 0, the flow label; bit 30 is reserved on RoCE.
    want[28..32].copy_from_slice(&0x12345u32.to_be_bytes());
    want[32..48].copy_from_slice(&pb.gid);
    assert_eq!(ah.av().to_bytes(), want);
    // The compact AV has no GRH fields: never on RoCE.
    assert!(a.pd.create_compact_ah(&AhAttr::default()).is_err());

    post_recv(&mut b, 3, 0);
    a.mr.write(0, &[0x6b; 100]);
    let sge = a.mr.sge(0, 100);
    a.qp.sq()
        .post_ud(
            send(Data::Sges(&[sge]), SendOp::SendImm(0x1234)),
            &ah.dest(b.qp.qpn(), QKEY),
        )
        .unwrap();
    assert_eq!(poll_n(&mut a, 1)[0].status, Status::Success);
    let r = poll_n(&mut b, 1)[0];
    assert_eq!(
        (r.wr_id, r.status, r.byte_len, r.imm(), r.src_qp(), r.slid()),
        (3, Status::Success, 140, Some(0x1234), a.qp.qpn(), 0)
    );
    // flags_rqpn bits 28 (GRH in the buffer), 27 (a UDP header: RoCE v2) and 25..24 = 1
    // (L3 header IPv6, the kernel's MLX5_CQE_ROCE_L3_HEADER_TYPE_IPV6): the RoCE packet
    // type where InfiniBand has the SL (UCX ib_mlx5.inl quoting the PRM).
    assert!(r.grh_present());
    assert_eq!(r.ud_flags(), 0x19);
    let mut got = [0u8; 140];
    b.mr.read(0, &mut got);
    // RFC 8200: version 6, traffic class 0x20, flow label 0x12345; payload length = UDP 8
    // + BTH 12 + DETH 8 + immediate 4 + 100 + ICRC 4 = 136; next header 17 (UDP); hop
    // limit 64; source and destination GIDs.
    assert_eq!(
        got[..40],
        ipv6_header(0x20, 0x12345, 136, 17, 64, &pa.gid, &pb.gid)
    );
    assert_eq!(&got[40..], &[0x6b; 100]);
}

/// A UD side in RTS on a RoCE NIC of its own with GID table `gids`
/// (`NicConfig::roce_gids`) and UDP source port seed `seed`.
fn roce_side(fabric: &std::sync::Arc<Fabric>, gids: &[RoceGid], seed: Option<u64>) -> Side {
    let config = NicConfig {
        link_layer: LinkLayer::Ethernet,
        roce_gids: gids.to_vec(),
        udp_sport_seed: seed,
        ..NicConfig::default()
    };
    let ctx = Context::new(Sim::on_fabric(fabric, config));
    let mut s = side_on(ctx, &ud_config(), 256, 64);
    s.qp.activate_ud(1, QKEY).unwrap();
    s
}

/// A netdev's table as the kernel fills it: the link-local address and `v4`, each as RoCE
/// v1 (even index) and v2 (odd index), all on `vlan`.
fn netdev_gids(v4: [u8; 4], vlan: Option<u16>) -> Vec<RoceGid> {
    let mut t = RoceGid::both_types(GidAddr::LinkLocal, vlan).to_vec();
    t.extend(RoceGid::both_types(GidAddr::Ipv4(v4), vlan));
    t
}

/// Entry `index` of `s`'s port 1 GID table.
fn gid_at(s: &Side, index: u32) -> [u8; 16] {
    s.ctx.backend().nic().query_gid(1, index).unwrap().gid
}

/// `::ffff:a.b.c.d`, written out.
fn v4_gid(a: [u8; 4]) -> [u8; 16] {
    let mut g = [0u8; 16];
    g[10] = 0xff;
    g[11] = 0xff;
    g[12..].copy_from_slice(&a);
    g
}

/// An address handle from `from` through SGID `sgid_index` to `dgid`.
fn roce_ah(
    from: &Side,
    sgid_index: u8,
    dgid: [u8; 16],
    flow_label: u32,
) -> Result<AddressHandle<Sim>, Error> {
    from.pd.create_ah(&AhAttr {
        port: 1,
        sl: 3,
        grh: Some(GlobalRoute {
            dgid,
            flow_label,
            sgid_index,
            hop_limit: 9,
            traffic_class: 0xb8,
        }),
        ..AhAttr::default()
    })
}

/// Sends 20 bytes of 0x3c from `a` to `b` through `ah` and returns b's completion (or
/// None if nothing arrived) with the 60 bytes its receive got (b's region at 0, first
/// marked 0xee).
fn roce_exchange(
    a: &mut Side,
    b: &mut Side,
    ah: &AddressHandle<Sim>,
) -> Option<(Completion, [u8; 60])> {
    b.mr.write(0, &[0xee; 60]);
    post_recv(b, 5, 0);
    let wr = send(Data::Inline(&[0x3c; 20]), SendOp::Send);
    a.qp.sq().post_ud(wr, &ah.dest(b.qp.qpn(), QKEY)).unwrap();
    assert_eq!(poll_n(a, 1)[0].status, Status::Success);
    let mut polled = [Completion::default(); 2];
    if b.cq.poll(&mut polled) == 0 {
        return None;
    }
    let c = polled[0];
    let mut got = [0u8; 60];
    b.mr.read(0, &mut got);
    Some((c, got))
}

/// The GID table of a RoCE port: the kernel's layout (each address once as RoCE v1 and
/// once as v2, an IPv4 address as `::ffff:a.b.c.d`, the netdev's VLAN on every entry),
/// the default of one link-local RoCE v2 GID, and an InfiniBand port's single GID.
#[test]
fn roce_gid_table_lists_each_address_as_v1_and_v2() {
    let fabric = Fabric::new();
    let a = roce_side(&fabric, &netdev_gids([10, 0, 0, 1], Some(7)), None);
    let port = a.ctx.backend().nic().port(1).unwrap();
    assert_eq!(port.gid_table_len, 4);
    let nic = a.ctx.backend().nic();
    let got: Vec<_> = (0..4).map(|i| nic.query_gid(1, i).unwrap()).collect();
    let ll = got[0].gid;
    assert_eq!(&ll[..8], &[0xfe, 0x80, 0, 0, 0, 0, 0, 0]);
    assert_eq!(a.ctx.port(1).unwrap().gid, ll);
    let want = [
        (ll, GidType::RoceV1),
        (ll, GidType::RoceV2),
        (v4_gid([10, 0, 0, 1]), GidType::RoceV1),
        (v4_gid([10, 0, 0, 1]), GidType::RoceV2),
    ];
    for (e, (gid, gid_type)) in got.iter().zip(want) {
        assert_eq!(
            *e,
            GidEntry {
                gid,
                gid_type,
                vlan: Some(7)
            }
        );
    }
    assert!(matches!(
        nic.query_gid(1, 4),
        Err(mlx5_direct::backend::sim::hw::HwError::InvalidParam(_))
    ));
    // The driver's view (`ibv_query_gid_ex`): the same GIDs and types, the table's length.
    assert_eq!(a.ctx.port(1).unwrap().gid_table_len, 4);
    for (i, e) in got.iter().enumerate() {
        let d = a.ctx.query_gid(1, i as u32).unwrap();
        let t = match e.gid_type {
            GidType::RoceV1 => mlx5_direct::GidType::RoceV1,
            _ => mlx5_direct::GidType::RoceV2,
        };
        assert_eq!((d.gid, d.gid_type), (e.gid, t));
    }
    assert!(matches!(a.ctx.query_gid(1, 4), Err(Error::Device { .. })));
    // The default: today's single link-local RoCE v2 GID at index 0.
    let d = roce_side(&fabric, &[], None);
    let e = d.ctx.backend().nic().query_gid(1, 0).unwrap();
    assert_eq!((e.gid_type, e.vlan), (GidType::RoceV2, None));
    assert_eq!(e.gid, d.ctx.port(1).unwrap().gid);
    assert_eq!(d.ctx.backend().nic().port(1).unwrap().gid_table_len, 1);
    // InfiniBand: one GID of type IB.
    let ib = side(&fabric, &ud_config());
    let e = ib.ctx.backend().nic().query_gid(1, 0).unwrap();
    assert_eq!((e.gid_type, e.vlan), (GidType::Ib, None));
    let d = ib.ctx.query_gid(1, 0).unwrap();
    assert_eq!((d.gid, d.gid_type), (e.gid, mlx5_direct::GidType::Ib));
    assert!(ib.ctx.backend().nic().query_gid(1, 1).is_err());
}

/// UD over RoCE v1 (a v1 source GID): the AV has no UDP source port (`mlx5_create_ah`
/// sets `rlid` only for a RoCE v2 GID), and the receive gets an IBA GRH (next header 0x1B,
/// PayLen without UDP), which the CQE reports as L3 header type GRH (0).
#[test]
fn ud_over_roce_v1_carries_an_iba_grh_and_no_udp_port() {
    let fabric = Fabric::new();
    let mut a = roce_side(&fabric, &netdev_gids([10, 0, 0, 1], None), None);
    let mut b = roce_side(&fabric, &netdev_gids([10, 0, 0, 2], None), None);
    let (sgid, dgid) = (gid_at(&a, 0), gid_at(&b, 0));
    let ah = roce_ah(&a, 0, dgid, 0x12345).unwrap();
    let mut want = [0u8; 48];
    want[12] = 3 << 1;
    want[20..26].copy_from_slice(&[0x02, 0, 0, 0, dgid[14], dgid[15]]);
    want[26] = 0xb8;
    want[27] = 9;
    want[28..32].copy_from_slice(&0x12345u32.to_be_bytes());
    want[32..48].copy_from_slice(&dgid);
    assert_eq!(ah.av().to_bytes(), want);

    let (c, got) = roce_exchange(&mut a, &mut b, &ah).unwrap();
    assert_eq!(
        (c.status, c.byte_len, c.src_qp(), c.slid()),
        (Status::Success, 60, a.qp.qpn(), 0)
    );
    // GRH in the buffer (bit 28), L3 header type 0 (MLX5_CQE_ROCE_L3_HEADER_TYPE_GRH); no
    // VLAN.
    assert_eq!(c.ud_flags(), 0x10);
    assert_eq!(c.cvlan(), None);
    // PayLen: BTH 12 + DETH 8 + 20 + ICRC 4 = 44; next header 0x1B; hop limit 9.
    assert_eq!(
        got[..40],
        ipv6_header(0xb8, 0x12345, 44, 0x1b, 9, &sgid, &dgid)
    );
    assert_eq!(&got[40..], &[0x3c; 20]);
}

/// UD over RoCE v2 with IPv4-mapped GIDs: the AV as `mlx5_create_ah` builds it (the UDP
/// source port, the MAC of the NIC that has the IPv4 address), and the receive's 40-byte
/// area holds the 20-byte IPv4 header in its last 20 bytes (the kernel's
/// `union rdma_network_hdr`: `roce4grh` after 20 reserved bytes, read by
/// `ib_get_rdma_header_version`), the first 20 untouched; the CQE says L3 type IPv4 (2).
#[test]
fn ud_over_roce_v2_ipv4_puts_the_ipv4_header_in_the_last_20_bytes() {
    let fabric = Fabric::new();
    let mut a = roce_side(&fabric, &netdev_gids([10, 0, 0, 1], None), None);
    let mut b = roce_side(&fabric, &netdev_gids([192, 168, 7, 20], None), None);
    let dgid = gid_at(&b, 3);
    assert_eq!(dgid, v4_gid([192, 168, 7, 20]));
    let ah = roce_ah(&a, 3, dgid, 0x12345).unwrap();
    let av = ah.av().to_bytes();
    // rlid: ibv_flow_label_to_udp_sport(0x12345) = 0xe341; rmac: b's MAC, 02:00:00:00:LID.
    assert_eq!(&av[12..16], &[3 << 1, 0, 0xe3, 0x41]);
    let ll_b = gid_at(&b, 0);
    assert_eq!(&av[20..26], &[0x02, 0, 0, 0, ll_b[14], ll_b[15]]);
    assert_eq!(&av[28..32], &(3u32 << 20 | 0x12345).to_be_bytes());
    assert_eq!(&av[32..48], &dgid);

    let (c, got) = roce_exchange(&mut a, &mut b, &ah).unwrap();
    assert_eq!(
        (c.status, c.byte_len, c.src_qp(), c.slid()),
        (Status::Success, 60, a.qp.qpn(), 0)
    );
    assert!(c.grh_present());
    // GRH in the buffer, a UDP header, L3 header type 2 (MLX5_CQE_ROCE_L3_HEADER_TYPE_IPV4).
    assert_eq!(c.ud_flags(), 0x1a);
    assert_eq!(&got[..20], &[0xee; 20]);
    // RFC 791: TOS = traffic class 0xb8, total length = IPv4 20 + UDP 8 + BTH 12 + DETH 8
    // + 20 + ICRC 4 = 72, TTL = hop limit 9, 10.0.0.1 -> 192.168.7.20.
    let want = ipv4_header(0xb8, 72, 9, [10, 0, 0, 1], [192, 168, 7, 20]);
    assert_eq!(&got[20..40], &want);
    assert_eq!(&got[40..], &[0x3c; 20]);
}

/// What an address handle over RoCE refuses: an SGID index beyond the table, a v2 source
/// and destination of different IP versions (the kernel finds no route), a destination
/// GID no NIC has (nobody answers the neighbour lookup).
#[test]
fn roce_address_handles_refuse_what_the_kernel_cannot_resolve() {
    let fabric = Fabric::new();
    let a = roce_side(&fabric, &netdev_gids([10, 0, 0, 1], None), None);
    let b = roce_side(&fabric, &netdev_gids([10, 0, 0, 2], None), None);
    let (ll_b, v4_b) = (gid_at(&b, 1), gid_at(&b, 3));
    assert!(roce_ah(&a, 4, ll_b, 1).is_err());
    assert!(roce_ah(&a, 3, ll_b, 1).is_err());
    assert!(roce_ah(&a, 1, v4_b, 1).is_err());
    assert!(roce_ah(&a, 3, v4_gid([10, 0, 0, 99]), 1).is_err());
    // RoCE v1 has no IP routing: a v1 GID with an IPv4 address is a GID like another (the
    // kernel's rdma_gid_attr_network_type: RoCE v1 whatever the address).
    assert!(roce_ah(&a, 2, v4_b, 1).is_ok());
    assert!(roce_ah(&a, 3, v4_b, 1).is_ok());
}

/// VLANs: a datagram carries its source GID's VLAN and is received only by a GID on the
/// same VLAN; elsewhere it is dropped and counted at the destination NIC, like a Q_Key
/// violation, and the requester never learns.
#[test]
fn roce_datagrams_cross_only_within_a_vlan() {
    let fabric = Fabric::new();
    let mut gids_a = netdev_gids([10, 0, 0, 1], Some(100));
    gids_a.extend(RoceGid::both_types(GidAddr::Ipv4([10, 9, 0, 1]), None));
    let mut gids_b = netdev_gids([10, 0, 0, 2], Some(100));
    gids_b.extend(RoceGid::both_types(GidAddr::Ipv4([10, 0, 1, 2]), Some(200)));
    let mut a = roce_side(&fabric, &gids_a, None);
    let mut b = roce_side(&fabric, &gids_b, None);
    let vlans = |s: &Side| -> Vec<Option<u16>> {
        (0..6)
            .map(|i| s.ctx.backend().nic().query_gid(1, i).unwrap().vlan)
            .collect()
    };
    assert_eq!(
        vlans(&b),
        [
            Some(100),
            Some(100),
            Some(100),
            Some(100),
            Some(200),
            Some(200)
        ]
    );
    // VLAN 100 to VLAN 100: delivered, the CQE reporting the tag as the kernel reads it
    // (vlan_info: PCP = the AV's SL 3 in bits 15..13, VLAN id 100 in 11..0).
    let same = roce_ah(&a, 3, gid_at(&b, 3), 1).unwrap();
    let (c, _) = roce_exchange(&mut a, &mut b, &same).unwrap();
    assert_eq!((c.status, c.byte_len), (Status::Success, 60));
    assert_eq!(c.cvlan(), Some(3 << 13 | 100));
    assert_eq!((c.ud_flags(), c.slid()), (0x1a, 0));
    // VLAN 100 to b's address on VLAN 200, and untagged to VLAN 100: dropped at b.
    let other = roce_ah(&a, 3, gid_at(&b, 5), 1).unwrap();
    assert!(roce_exchange(&mut a, &mut b, &other).is_none());
    let untagged = roce_ah(&a, 5, gid_at(&b, 3), 1).unwrap();
    let wr = send(Data::Inline(&[0x3c; 20]), SendOp::Send);
    a.qp.sq()
        .post_ud(wr, &untagged.dest(b.qp.qpn(), QKEY))
        .unwrap();
    assert_eq!(poll_n(&mut a, 1)[0].status, Status::Success);
    assert_empty(&mut b);
    let stats = b.ctx.backend().nic().stats();
    assert_eq!(
        (
            stats.vlan_mismatches,
            stats.qkey_violations,
            stats.ud_unroutable,
            stats.ud_no_receive
        ),
        (2, 0, 0, 0)
    );
    // The receive posted for the first dropped datagram is still there for the next one
    // on VLAN 100.
    a.qp.sq().post_ud(wr, &same.dest(b.qp.qpn(), QKEY)).unwrap();
    poll_n(&mut a, 1);
    let got = poll_n(&mut b, 1)[0];
    assert_eq!((got.wr_id, got.status), (5, Status::Success));
    assert_empty(&mut b);
}

/// Flow label 0: rdma-core picks a random UDP source port in 0xC000..=0xFFFF
/// (`mlx5_ah_set_udp_sport`); the model takes 0xC000 by default, or with
/// `NicConfig::udp_sport_seed` a pseudo-random port in that range per address handle,
/// the same sequence for the same seed. A non-zero label keeps its fold; RoCE v1 has none.
#[test]
fn flow_label_zero_takes_0xc000_or_a_seeded_port_in_range() {
    let fabric = Fabric::new();
    let b = roce_side(&fabric, &netdev_gids([10, 0, 0, 2], None), None);
    let dgid = gid_at(&b, 1);
    let ports = |seed: Option<u64>| -> Vec<u16> {
        let a = roce_side(&fabric, &netdev_gids([10, 0, 0, 1], None), seed);
        (0..16)
            .map(|_| {
                let av = roce_ah(&a, 1, dgid, 0).unwrap().av().to_bytes();
                u16::from_be_bytes([av[14], av[15]])
            })
            .collect()
    };
    assert_eq!(ports(None), [0xc000; 16]);
    let seeded = ports(Some(42));
    assert!(seeded.iter().all(|&p| p >= 0xc000), "{seeded:x?}");
    assert_eq!(seeded, ports(Some(42)));
    assert_ne!(seeded, ports(Some(43)));
    let distinct: std::collections::BTreeSet<_> = seeded.iter().collect();
    assert!(distinct.len() > 8, "{seeded:x?}");
    let a = roce_side(&fabric, &netdev_gids([10, 0, 0, 1], None), Some(42));
    let av = roce_ah(&a, 1, dgid, 0x12345).unwrap().av().to_bytes();
    assert_eq!(&av[14..16], &[0xe3, 0x41]);
    let av = roce_ah(&a, 0, gid_at(&b, 0), 0).unwrap().av().to_bytes();
    assert_eq!(&av[14..16], &[0, 0]);
}

/// The model's RoCE receive CQEs read through rdma-core's own `struct mlx5_cqe64` (golden
/// shim): `flags_rqpn` bits 25..24 as the kernel's `roce_packet_type` (0 for RoCE v1, 2 for
/// v2 over IPv4), `l4_hdr_type_etc` bit 0 (VLAN present) and `vlan_info` (PCP 3, VLAN 42),
/// `slid` 0.
#[test]
#[cfg_attr(
    not(rdma_headers),
    ignore = "install libibverbs-dev to compare with rdma-core"
)]
fn roce_vlan_cqes_read_through_the_header_as_the_kernel_reads_them() {
    let fabric = Fabric::new();
    let mut a = roce_side(&fabric, &netdev_gids([10, 4, 0, 1], Some(42)), None);
    let mut b = roce_side(&fabric, &netdev_gids([10, 4, 0, 2], Some(42)), None);
    for (sgid_index, packet_type) in [(2u8, 0i64), (3, 2)] {
        let ah = roce_ah(&a, sgid_index, gid_at(&b, 3), 7).unwrap();
        let (c, _) = roce_exchange(&mut a, &mut b, &ah).unwrap();
        assert_eq!(c.cvlan(), Some(3 << 13 | 42));
        let at = b.cq.consumer_index() - 1;
        let cqe: [u8; 64] = b.cq.cqe_bytes(at)[..64].try_into().unwrap();
        let field = |name: &str| {
            mlx5_golden::read_cqe64(&cqe)
                .into_iter()
                .find(|v| v.name == name)
                .unwrap_or_else(|| panic!("no {name}"))
                .value
        };
        assert_eq!((field("flags_rqpn") >> 24) & 3, packet_type);
        assert_eq!((field("flags_rqpn") >> 28) & 3, 1, "GRH in the buffer");
        assert_eq!(field("l4_hdr_type_etc") & 1, 1);
        assert_eq!(field("vlan_info") & 0xfff, 42);
        assert_eq!(field("vlan_info") >> 13, 3);
        assert_eq!(field("slid"), 0);
    }
}

/// An AV whose SGID index is beyond the port's GID table (only a hand-built AV can carry
/// one: `create_ah` refuses it): the model fails the send with LOCAL_QP_OP_ERR, as any AV
/// it cannot use (what mlx5 does is not public), the QP goes to SQE and nothing arrives.
#[test]
fn a_roce_av_naming_no_source_gid_fails_the_send() {
    let fabric = Fabric::new();
    let mut a = roce_side(&fabric, &netdev_gids([10, 5, 0, 1], None), None);
    let mut b = roce_side(&fabric, &netdev_gids([10, 5, 0, 2], None), None);
    let ah = roce_ah(&a, 3, gid_at(&b, 3), 7).unwrap();
    let mut bytes = ah.av().to_bytes();
    bytes[28..32].copy_from_slice(&(4u32 << 20 | 7).to_be_bytes());
    let av = mlx5_direct::prm::Av::from_bytes(&bytes);
    let dest = mlx5_direct::UdDest {
        av: &av,
        ..ah.dest(b.qp.qpn(), QKEY)
    };
    expect_local_qp_op_err(&mut a, &mut b, &dest);
}
