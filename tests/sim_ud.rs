//! UD end to end on the model: address handles, the datagram WQE bytes, the GRH area and
//! the receive completion, silent drops (Q_Key, unknown QPN, no receive), the typed
//! refusals, and an RPC with 64 requests outstanding.

mod common;

use common::bodies::expect_sqe_after_a_bad_key;
use common::{assert_empty, poll_n, side, side_on, Rig, Side};
use mlx5_direct::backend::sim::hw::{CqePkey, GidAddr, GidEntry, GidType, LinkLayer, RoceGid};
use mlx5_direct::backend::sim::{Fabric, NicConfig, Sim};
use mlx5_direct::prm::{CompactAv, Syndrome};
use mlx5_direct::{
    AddressHandle, AhAttr, Completion, Context, Data, Error, GlobalRoute, PostError, QpConfig,
    QpState, SendFlags, SendOp, SendWr, Status, Transport, UdDest, WcOpcode, UD_GRH_BYTES,
};

const QKEY: u32 = 0x1100_2233;

fn ud_config() -> QpConfig {
    QpConfig {
        transport: Transport::Ud,
        max_inline: 188,
        ..QpConfig::default()
    }
}

/// Two UD sides on one fabric, in RTS with Q_Key [`QKEY`].
fn ud_pair(fabric: &std::sync::Arc<Fabric>) -> (Side, Side) {
    let (mut a, mut b) = (side(fabric, &ud_config()), side(fabric, &ud_config()));
    a.qp.activate_ud(1, QKEY).unwrap();
    b.qp.activate_ud(1, QKEY).unwrap();
    (a, b)
}

/// An address handle from `from` to `to`'s port, by LID.
fn ah_to(from: &Side, to: &Side) -> AddressHandle<Sim> {
    let remote = to.qp.endpoint().unwrap();
    from.pd.create_ah(&AhAttr::to_lid(1, &remote)).unwrap()
}

fn send(data: Data<'_>, op: SendOp) -> SendWr<'_> {
    SendWr {
        wr_id: 7,
        op,
        data,
        flags: SendFlags::SIGNALED,
    }
}

/// A receive of 40 + 256 bytes at `off` of b's region.
fn post_recv(b: &mut Side, wr_id: u64, off: usize) {
    let sge = b.mr.sge(off, UD_GRH_BYTES + 256);
    b.qp.rq().unwrap().post(wr_id, &[sge]).unwrap();
}

#[test]
fn address_handle_holds_the_av_mlx5_create_ah_builds() {
    let fabric = Fabric::new();
    let (a, b) = ud_pair(&fabric);
    let lid_b = b.ctx.port(1).unwrap().lid;
    let ah =
        a.pd.create_ah(&AhAttr {
            port: 1,
            dlid: lid_b,
            sl: 5,
            src_path_bits: 3,
            grh: None,
        })
        .unwrap();
    // IB without GRH: SL in the low nibble, path bits, DLID; key, dqp_dct and the GRH
    // words 0 (mlx5_create_ah).
    let mut want = [0u8; 48];
    want[12] = 5;
    want[13] = 3;
    want[14..16].copy_from_slice(&lid_b.to_be_bytes());
    assert_eq!(ah.av().to_bytes(), want);

    let dgid = b.ctx.port(1).unwrap().gid;
    let grh = GlobalRoute {
        dgid,
        flow_label: 0x12345,
        sgid_index: 0,
        hop_limit: 64,
        traffic_class: 0xa0,
    };
    let ah =
        a.pd.create_ah(&AhAttr {
            port: 1,
            dlid: lid_b,
            sl: 0,
            src_path_bits: 0,
            grh: Some(grh),
        })
        .unwrap();
    let mut want = [0u8; 48];
    want[14..16].copy_from_slice(&lid_b.to_be_bytes());
    want[26] = 0xa0;
    want[27] = 64;
    // Bit 30: GRH; SGID index 0 in 27..20; flow label in 19..0.
    want[28..32].copy_from_slice(&(0x4000_0000u32 | 0x12345).to_be_bytes());
    want[32..48].copy_from_slice(&dgid);
    assert_eq!(ah.av().to_bytes(), want);

    // Out of range: refused by the device.
    let bad = AhAttr {
        port: 1,
        sl: 16,
        ..AhAttr::default()
    };
    assert!(a.pd.create_ah(&bad).is_err());
}

#[test]
fn inline_send_lands_after_the_grh_area_with_the_source_in_the_cqe() {
    let fabric = Fabric::new();
    let (mut a, mut b) = ud_pair(&fabric);
    let ah = ah_to(&a, &b);
    // Mark the GRH area: without a GRH on the wire it is left alone.
    b.mr.write(0, &[0xee; 40]);
    post_recv(&mut b, 900, 0);
    let payload: Vec<u8> = (0..60u8).collect();
    let pi = a.qp.sq().producer_count();
    a.qp.sq()
        .post_ud(
            send(Data::Inline(&payload), SendOp::SendImm(0xdead_beef)),
            &ah.dest(b.qp.qpn(), QKEY),
        )
        .unwrap();

    // The WQE: ctrl, the AV (3 DS) with the Q_Key and dqp_dct = QPN | 1 << 31, then 60
    // inline bytes after their 4-byte header (4 DS): 8 DS, 2 WQEBBs.
    let wqe = a.qp.sq().wqe_bytes(pi, 128);
    assert_eq!(wqe[3], 0x0b, "SEND_IMM");
    assert_eq!(wqe[7] & 0x3f, 8, "DS");
    assert_eq!(&wqe[12..16], &0xdead_beefu32.to_be_bytes());
    let mut av = *ah.av();
    av.set_ud(b.qp.qpn(), QKEY, true);
    assert_eq!(&wqe[16..64], &av.to_bytes());
    assert_eq!(&wqe[16..20], &QKEY.to_be_bytes());
    assert_eq!(&wqe[24..28], &(b.qp.qpn() | 1 << 31).to_be_bytes());
    assert_eq!(&wqe[64..68], &(0x8000_0000u32 | 60).to_be_bytes());
    assert_eq!(&wqe[68..128], &payload[..]);
    assert_eq!(a.qp.sq().producer_count() - pi, 2);

    let c = poll_n(&mut a, 1)[0];
    assert_eq!(
        (c.wr_id, c.opcode, c.status),
        (7, WcOpcode::Send, Status::Success)
    );
    let r = poll_n(&mut b, 1)[0];
    let lid_a = a.ctx.port(1).unwrap().lid;
    assert_eq!(
        r,
        // Not solicited, no GRH, no scatter to CQE, no user index: the default's.
        Completion::default()
            .with_wr_id(900)
            .with_qpn(b.qp.qpn())
            .with_opcode(WcOpcode::Recv)
            .with_status(Status::Success)
            .with_byte_len(40 + 60)
            .with_imm(Some(0xdead_beef))
            .with_src_qp(a.qp.qpn())
            .with_slid(lid_a)
            .with_timestamp(r.timestamp())
    );
    assert!(!r.grh_present());
    assert_eq!(r.ud_payload(), 40..100);
    let mut got = vec![0u8; 100];
    b.mr.read(0, &mut got);
    assert_eq!(&got[..40], &[0xee; 40]);
    assert_eq!(&got[40..], &payload[..]);
    assert_empty(&mut a);
    assert_empty(&mut b);
}

#[test]
fn a_receive_without_immediate_reports_the_pkey_field_as_the_nic_writes_it() {
    // rdma-core's wc.pkey_index is imm_inval_pkey & 0xffff; the model writes the index
    // (0: one-entry table) or, as the kernel reads the field, the P_Key value.
    for (how, want) in [(CqePkey::Index, 0u16), (CqePkey::Value, 0xffff)] {
        let rig = (
            Fabric::new(),
            NicConfig {
                cqe_pkey: how,
                ..NicConfig::default()
            },
        );
        let (mut a, mut b) = (rig.side(&ud_config()), rig.side(&ud_config()));
        a.qp.activate_ud(1, QKEY).unwrap();
        b.qp.activate_ud(1, QKEY).unwrap();
        let ah = ah_to(&a, &b);
        post_recv(&mut b, 1, 0);
        post_recv(&mut b, 2, 512);
        let dest = ah.dest(b.qp.qpn(), QKEY);
        for op in [SendOp::Send, SendOp::SendImm(0x0102_0304)] {
            a.qp.sq()
                .post_ud(send(Data::Inline(b"pkey"), op), &dest)
                .unwrap();
        }
        let r = poll_n(&mut b, 2);
        assert_eq!(
            (r[0].wr_id, r[0].pkey_index(), r[0].imm()),
            (1, want, None),
            "{how:?}"
        );
        assert_eq!(&b.cq.cqe_bytes(0)[36..40], &u32::from(want).to_be_bytes());
        // With an immediate the field is the immediate: no P_Key.
        assert_eq!(
            (r[1].wr_id, r[1].pkey_index(), r[1].imm()),
            (2, 0, Some(0x0102_0304))
        );
        // CQE version 0: srqn_uidx of a receive on the QP's own RQ is 0.
        assert_eq!((r[0].user_index(), r[1].user_index()), (0, 0));
        poll_n(&mut a, 2);
    }
}

#[test]
fn a_controlled_qkey_in_the_wr_sends_the_qps_own() {
    let fabric = Fabric::new();
    let (mut a, mut b) = ud_pair(&fabric);
    let ah = ah_to(&a, &b);
    post_recv(&mut b, 1, 0);
    let pi = a.qp.sq().producer_count();
    let own = ah.dest(b.qp.qpn(), UdDest::OWN_QKEY);
    a.qp.sq()
        .post_ud(send(Data::Inline(b"own"), SendOp::Send), &own)
        .unwrap();
    // Written as given: the device substitutes a's Q_Key (QKEY, which b expects).
    assert_eq!(&a.qp.sq().wqe_bytes(pi, 64)[16..20], &[0x80, 0, 0, 0]);
    poll_n(&mut a, 1);
    let r = poll_n(&mut b, 1)[0];
    assert_eq!((r.wr_id, r.status, r.byte_len), (1, Status::Success, 43));
    // A sender whose own Q_Key differs: b drops the datagram (a Q_Key violation).
    let mut c = side(&fabric, &ud_config());
    c.qp.activate_ud(1, QKEY ^ 1).unwrap();
    let ah = ah_to(&c, &b);
    post_recv(&mut b, 2, 512);
    c.qp.sq()
        .post_ud(
            send(Data::Inline(b"own"), SendOp::Send),
            &ah.dest(b.qp.qpn(), UdDest::OWN_QKEY),
        )
        .unwrap();
    poll_n(&mut c, 1);
    assert_empty(&mut b);
    let stats = b.ctx.backend().nic().stats();
    assert_eq!(stats.qkey_violations, 1);
}

#[test]
fn a_global_route_writes_the_grh_and_reports_it() {
    let fabric = Fabric::new();
    let (mut a, mut b) = ud_pair(&fabric);
    let (pa, pb) = (a.ctx.port(1).unwrap(), b.ctx.port(1).unwrap());
    let ah =
        a.pd.create_ah(&AhAttr {
            port: 1,
            dlid: pb.lid,
            sl: 3,
            src_path_bits: 0,
            grh: Some(GlobalRoute {
                dgid: pb.gid,
                flow_label: 0xabcde,
                sgid_index: 0,
                hop_limit: 9,
                traffic_class: 0x12,
            }),
        })
        .unwrap();
    post_recv(&mut b, 1, 64);
    a.mr.write(0, &[0x5a; 100]);
    let sge = a.mr.sge(0, 100);
    a.qp.sq()
        .post_ud(
            send(Data::Sges(&[sge]), SendOp::Send),
            &ah.dest(b.qp.qpn(), QKEY),
        )
        .unwrap();
    poll_n(&mut a, 1);
    let r = poll_n(&mut b, 1)[0];
    assert_eq!(r.byte_len, 140);
    assert!(r.grh_present());
    assert_eq!(r.sl(), 3);
    assert_eq!((r.src_qp(), r.slid(), r.imm()), (a.qp.qpn(), pa.lid, None));
    let mut got = [0u8; 140];
    b.mr.read(64, &mut got);
    // IBA 8.3.1: IPVer 6, TClass 0x12, FlowLabel 0xabcde; PayLen = BTH 12 + DETH 8 +
    // 100 + ICRC 4; NxtHdr 0x1b; HopLmt 9; SGID; DGID.
    assert_eq!(
        got[..40],
        ipv6_header(0x12, 0xabcde, 124, 0x1b, 9, &pa.gid, &pb.gid)
    );
    assert_eq!(&got[40..], &[0x5a; 100]);
}

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

/// A UD side in RTS on a NIC of its own with (`compact_av`) or without the compact AV cap.
fn ud_side_on(fabric: &std::sync::Arc<Fabric>, compact_av: bool) -> Side {
    let config = NicConfig {
        compact_av,
        ..NicConfig::default()
    };
    let ctx = Context::new(Sim::on_fabric(fabric, config));
    let mut s = side_on(ctx, &ud_config(), 256, 64);
    s.qp.activate_ud(1, QKEY).unwrap();
    s
}

#[test]
fn a_compact_av_is_two_ds_shorter_and_saves_a_blueflame_chunk() {
    let fabric = Fabric::new();
    let (mut a, mut b) = (ud_side_on(&fabric, true), ud_side_on(&fabric, true));
    assert!(a.ctx.caps().compact_av);
    let (lid_a, lid_b) = (a.ctx.port(1).unwrap().lid, b.ctx.port(1).unwrap().lid);
    let attr = AhAttr {
        port: 1,
        dlid: lid_b,
        sl: 5,
        src_path_bits: 3,
        grh: None,
    };
    let (full, compact) = (
        a.pd.create_ah(&attr).unwrap(),
        a.pd.create_compact_ah(&attr).unwrap(),
    );
    assert!(compact.is_compact() && !full.is_compact());
    assert_eq!(compact.av(), full.av());
    let payload: Vec<u8> = (100..129u8).collect();
    for (i, (ah, len, wqebbs, chunks)) in [
        // prm-facts-next §1.2: with the compact AV up to 28 inline bytes fit one WQEBB
        // (ctrl 1 + AV 1 + inline 2 DS), 29 need two; with the full AV 28 bytes take two.
        (&compact, 28, 1, 1),
        (&compact, 29, 2, 2),
        (&full, 28, 2, 2),
    ]
    .into_iter()
    .enumerate()
    {
        post_recv(&mut b, i as u64, 512 * i);
        let pi = a.qp.sq().producer_count();
        let before = a.ctx.backend().nic().pcie();
        a.qp.sq()
            .post_ud(
                send(Data::Inline(&payload[..len]), SendOp::Send),
                &ah.dest(b.qp.qpn(), QKEY),
            )
            .unwrap();
        let down = a.ctx.backend().nic().pcie() - before;
        assert_eq!(a.qp.sq().producer_count() - pi, wqebbs);
        // One 88-byte write-combined BlueFlame chunk per WQEBB, nothing read back.
        assert_eq!((down.mmio_writes, down.bytes_down), (chunks, 88 * chunks));
        let wqe = a.qp.sq().wqe_bytes(pi, 64 * wqebbs as usize);
        let av_ds = if ah.is_compact() { 1 } else { 3 };
        let ds = 1 + av_ds + (4 + len).div_ceil(16);
        assert_eq!(usize::from(wqe[7] & 0x3f), ds, "DS");
        let at = 16 + 16 * av_ds;
        if ah.is_compact() {
            // Q_Key in bytes 0..4, 4..8 zero, dqp_dct = QPN with bit 31 clear, then the
            // AH's SL, path bits and DLID (mlx5dv_set_dgram_seg with ext 0).
            let mut want = [0u8; 16];
            want[0..4].copy_from_slice(&QKEY.to_be_bytes());
            want[8..12].copy_from_slice(&b.qp.qpn().to_be_bytes());
            want[12] = 5;
            want[13] = 3;
            want[14..16].copy_from_slice(&lid_b.to_be_bytes());
            assert_eq!(&wqe[16..32], &want);
            let ours = CompactAv::ud(ah.av(), b.qp.qpn(), QKEY);
            assert_eq!(ours.to_bytes(), want);
        } else {
            assert_eq!(&wqe[24..28], &(b.qp.qpn() | 1 << 31).to_be_bytes());
        }
        assert_eq!(
            &wqe[at..at + 4],
            &(0x8000_0000u32 | len as u32).to_be_bytes()
        );
        assert_eq!(&wqe[at + 4..at + 4 + len], &payload[..len]);
        poll_n(&mut a, 1);
        let r = poll_n(&mut b, 1)[0];
        assert_eq!(
            (r.wr_id, r.status, r.byte_len, r.src_qp(), r.slid(), r.sl()),
            (
                i as u64,
                Status::Success,
                40 + len as u32,
                a.qp.qpn(),
                lid_a,
                5
            )
        );
        assert!(!r.grh_present());
        let mut got = vec![0u8; len];
        b.mr.read(512 * i + 40, &mut got);
        assert_eq!(got, &payload[..len]);
    }
    assert_empty(&mut a);
    assert_empty(&mut b);
}

#[test]
fn a_compact_av_is_refused_without_the_cap_or_with_a_grh() {
    let fabric = Fabric::new();
    let (mut a, mut b) = (ud_side_on(&fabric, false), ud_side_on(&fabric, true));
    let lid_b = b.ctx.port(1).unwrap().lid;
    let attr = AhAttr {
        port: 1,
        dlid: lid_b,
        ..AhAttr::default()
    };
    assert!(!a.ctx.caps().compact_av);
    assert!(matches!(
        a.pd.create_compact_ah(&attr),
        Err(Error::Unsupported(_))
    ));
    let global = AhAttr {
        grh: Some(GlobalRoute {
            dgid: b.ctx.port(1).unwrap().gid,
            hop_limit: 64,
            ..GlobalRoute::default()
        }),
        ..attr
    };
    assert!(matches!(
        b.pd.create_compact_ah(&global),
        Err(Error::InvalidArgument(_))
    ));
    // A compact AV forced onto a NIC without the cap: a malformed WQE to the model
    // (LOCAL_QP_OP_ERR), the QP in SQE, nothing delivered.
    let ah = a.pd.create_ah(&attr).unwrap();
    let dest = mlx5_direct::UdDest {
        compact: true,
        ..ah.dest(b.qp.qpn(), QKEY)
    };
    expect_local_qp_op_err(&mut a, &mut b, &dest);
}

#[test]
fn datagrams_nobody_takes_are_dropped_silently_and_counted() {
    let fabric = Fabric::new();
    let (mut a, mut b) = ud_pair(&fabric);
    let ah = ah_to(&a, &b);
    let qpn = b.qp.qpn();
    let payload = [1u8; 8];
    let wr = send(Data::Inline(&payload), SendOp::Send);
    // No receive posted: dropped (UD has no RNR).
    a.qp.sq().post_ud(wr, &ah.dest(qpn, QKEY)).unwrap();
    post_recv(&mut b, 1, 0);
    // A wrong Q_Key, then an unknown QPN.
    a.qp.sq().post_ud(wr, &ah.dest(qpn, QKEY ^ 1)).unwrap();
    a.qp.sq().post_ud(wr, &ah.dest(qpn + 77, QKEY)).unwrap();
    // Every send completes at the requester: it never learns.
    let cs = poll_n(&mut a, 3);
    assert!(cs.iter().all(|c| c.status == Status::Success));
    assert_empty(&mut b);
    let stats = b.ctx.backend().nic().stats();
    assert_eq!(
        (
            stats.ud_no_receive,
            stats.qkey_violations,
            stats.ud_unroutable
        ),
        (1, 1, 1)
    );
    // The receive is still there for the next good datagram.
    a.qp.sq().post_ud(wr, &ah.dest(qpn, QKEY)).unwrap();
    poll_n(&mut a, 1);
    assert_eq!(poll_n(&mut b, 1)[0].byte_len, 48);
}

#[test]
fn hostile_posts_are_refused_before_anything_is_written() {
    let fabric = Fabric::new();
    let (mut a, mut b) = ud_pair(&fabric);
    let ah = ah_to(&a, &b);
    let dest = ah.dest(b.qp.qpn(), QKEY);
    let pi = a.qp.sq().producer_count();
    let remote = b.mr.remote(0);
    let ud = Transport::Ud;
    // The wrong operation for UD, through the UD entry.
    for op in [SendOp::Write(remote), SendOp::Read(remote), SendOp::Nop] {
        assert_eq!(
            a.qp.sq().post_ud(send(Data::NONE, op), &dest),
            Err(PostError::WrongTransport { transport: ud })
        );
    }
    // The RC entries on a UD queue, whatever the operation.
    assert_eq!(
        a.qp.sq()
            .post(7, SendOp::Send, Data::Inline(&[]), SendFlags::SIGNALED),
        Err(PostError::WrongTransport { transport: ud })
    );
    // More than the port's MTU (4096 on the model).
    let big = a.mr.sge(0, 4097);
    assert_eq!(
        a.qp.sq()
            .post_ud(send(Data::Sges(&[big]), SendOp::Send), &dest),
        Err(PostError::OverMtu {
            len: 4097,
            mtu: 4096
        })
    );
    assert_eq!(a.qp.sq().producer_count(), pi);
    // A receive whose first entry cannot hold the GRH area.
    let short = b.mr.sge(0, 39);
    assert_eq!(
        b.qp.rq().unwrap().post(1, &[short, b.mr.sge(64, 64)]),
        Err(PostError::GrhAreaTooSmall { len: 39 })
    );
    // And the UD entry on an RC queue.
    let mut rc = side(&fabric, &QpConfig::default());
    assert_eq!(
        rc.qp.sq().post_ud(send(Data::NONE, SendOp::Send), &dest),
        Err(PostError::WrongTransport {
            transport: Transport::Rc
        })
    );
    // Exactly one MTU is a datagram.
    let full = a.mr.sge(0, 4096);
    let sge = b.mr.sge(0, UD_GRH_BYTES + 4096);
    b.qp.rq().unwrap().post(2, &[sge]).unwrap();
    a.qp.sq()
        .post_ud(send(Data::Sges(&[full]), SendOp::Send), &dest)
        .unwrap();
    poll_n(&mut a, 1);
    assert_eq!(poll_n(&mut b, 1)[0].byte_len, 40 + 4096);
}

/// The GRH area on an SRQ: a UD QP takes only an SRQ made for UD, and that SRQ refuses a
/// receive whose first scatter entry (the first that reaches the ring: zero-length entries
/// never do) cannot hold the 40 bytes, as the QP's own receive queue does, with nothing
/// written. Datagrams then consume its WQEs in order, each after its GRH area.
#[test]
fn an_srq_serving_ud_refuses_a_receive_without_room_for_the_grh_area() {
    let fabric = Fabric::new();
    let (mut a, mut b) = ud_pair(&fabric);
    let plain = b.pd.create_srq(4, 2).unwrap();
    assert!(!plain.holds_grh_area());
    assert!(matches!(
        b.pd.create_qp_with_srq(&b.cq, &b.cq, &plain, &ud_config()),
        Err(Error::InvalidArgument(_))
    ));
    let mut srq = b.pd.create_ud_srq(4, 2).unwrap();
    assert!(srq.holds_grh_area());
    let mut qp =
        b.pd.create_qp_with_srq(&b.cq, &b.cq, &srq, &ud_config())
            .unwrap();
    qp.activate_ud(1, QKEY).unwrap();
    let empty = b.mr.sge(0, 0);
    for (sges, len) in [
        (vec![b.mr.sge(0, 39), b.mr.sge(64, 256)], 39),
        (vec![], 0),
        (vec![empty, b.mr.sge(0, 39)], 39),
        (vec![empty, empty], 0),
    ] {
        assert_eq!(srq.post(1, &sges), Err(PostError::GrhAreaTooSmall { len }));
    }
    // Nothing was written: every slot is still free, and the ring holds exactly that many.
    let n = srq.capacity();
    assert_eq!(n, 4);
    for i in 0..n {
        let off = i as usize * 512;
        srq.post(
            10 + u64::from(i),
            &[empty, b.mr.sge(off, UD_GRH_BYTES + 256)],
        )
        .unwrap();
    }
    assert_eq!(
        srq.post(99, &[b.mr.sge(0, UD_GRH_BYTES)]),
        Err(PostError::QueueFull { needed: 1, free: 0 })
    );
    let ah = ah_to(&a, &b);
    for i in 0..n {
        let payload = vec![i as u8 + 1; 16 * (i as usize + 1)];
        a.qp.sq()
            .post_ud(
                send(Data::Inline(&payload), SendOp::Send),
                &ah.dest(qp.qpn(), QKEY),
            )
            .unwrap();
    }
    assert!(poll_n(&mut a, n as usize)
        .iter()
        .all(|c| c.status == Status::Success));
    let rs = poll_n(&mut b, n as usize);
    for (i, r) in rs.iter().enumerate() {
        let len = 16 * (i + 1);
        assert_eq!(
            (r.wr_id, r.qpn, r.status, r.byte_len, r.src_qp()),
            (
                10 + i as u64,
                qp.qpn(),
                Status::Success,
                40 + len as u32,
                a.qp.qpn()
            )
        );
        let mut got = vec![0u8; len];
        b.mr.read(i * 512 + 40, &mut got);
        assert_eq!(got, vec![i as u8 + 1; len]);
    }
    assert_empty(&mut b);
}

#[test]
fn a_failed_send_leaves_the_qp_in_sqe_receiving_until_recovered() {
    let fabric = Fabric::new();
    let (mut a, mut b) = ud_pair(&fabric);
    let (ah_ab, ah_ba) = (ah_to(&a, &b), ah_to(&b, &a));
    let (to_b, to_a) = (ah_ab.dest(b.qp.qpn(), QKEY), ah_ba.dest(a.qp.qpn(), QKEY));
    let mut bad = a.mr.sge(0, 8);
    bad.lkey ^= 0x100;
    // A send whose key the device does not know, then one posted before its error is seen.
    a.qp.sq()
        .post_ud(send(Data::Sges(&[bad]), SendOp::Send), &to_b)
        .unwrap();
    a.qp.sq()
        .post_ud(send(Data::Inline(b"behind"), SendOp::Send), &to_b)
        .unwrap();
    // SQE, not ERR: the send queue refuses posts, receives go on.
    expect_sqe_after_a_bad_key(&mut a);
    assert_eq!(
        a.qp.sq()
            .post_ud(send(Data::Inline(b"no"), SendOp::Send), &to_b),
        Err(PostError::NotReadyToSend)
    );
    post_recv(&mut a, 5, 0);
    b.qp.sq()
        .post_ud(send(Data::Inline(b"still here"), SendOp::Send), &to_a)
        .unwrap();
    poll_n(&mut b, 1);
    let r = poll_n(&mut a, 1)[0];
    assert_eq!(
        (r.wr_id, r.status, r.byte_len),
        (5, Status::Success, 40 + 10)
    );
    assert_empty(&mut b);
    // SQE -> RTS, and the queue sends again.
    a.qp.recover_sq().unwrap();
    assert_eq!(a.qp.state(), QpState::Rts);
    post_recv(&mut b, 6, 0);
    a.qp.sq()
        .post_ud(send(Data::Inline(b"back"), SendOp::Send), &to_b)
        .unwrap();
    assert_eq!(poll_n(&mut a, 1)[0].status, Status::Success);
    assert_eq!(poll_n(&mut b, 1)[0].byte_len, 44);
    // Only from SQE.
    assert!(matches!(
        a.qp.recover_sq(),
        Err(mlx5_direct::Error::WrongState { .. })
    ));
}

/// Requests and responses over UD SEND, 64 outstanding: each request names its slot in the
/// first byte; the server answers to the source QPN and LID its CQE reports.
#[test]
fn rpc_with_64_requests_outstanding() {
    const DEPTH: usize = 64;
    const ROUNDS: usize = 4;
    let fabric = Fabric::new();
    let config = QpConfig {
        sq_wqebbs: 256,
        rq_wqes: 128,
        ..ud_config()
    };
    let (mut client, mut server) = (side(&fabric, &config), side(&fabric, &config));
    client.qp.activate_ud(1, QKEY).unwrap();
    server.qp.activate_ud(1, QKEY).unwrap();
    let to_server = ah_to(&client, &server);
    for i in 0..DEPTH {
        post_recv(&mut server, i as u64, i * 512);
        post_recv(&mut client, i as u64, i * 512);
    }
    let server_qpn = server.qp.qpn();
    let mut answered = 0;
    let mut reply_ah = None;
    for round in 0..ROUNDS {
        for i in 0..DEPTH {
            let req = [i as u8, round as u8, 0xa5, 0x5a];
            client
                .qp
                .sq()
                .post_ud(
                    send(Data::Inline(&req), SendOp::Send),
                    &to_server.dest(server_qpn, QKEY),
                )
                .unwrap();
        }
        // The server: one response per request, to the source in its CQE.
        for c in poll_n(&mut server, DEPTH) {
            assert_eq!(c.status, Status::Success);
            assert_eq!(c.byte_len, 44);
            let slot = c.wr_id as usize;
            let mut req = [0u8; 4];
            server.mr.read(slot * 512 + c.ud_payload().start, &mut req);
            let ah = reply_ah.get_or_insert_with(|| {
                let dlid = c.slid();
                server
                    .pd
                    .create_ah(&AhAttr {
                        port: 1,
                        dlid,
                        ..AhAttr::default()
                    })
                    .unwrap()
            });
            let resp = [req[0], req[1], !req[2], !req[3]];
            server
                .qp
                .sq()
                .post_ud(
                    SendWr {
                        wr_id: 0,
                        op: SendOp::SendImm(u32::from(req[0])),
                        data: Data::Inline(&resp),
                        flags: SendFlags::SIGNALED,
                    },
                    &ah.dest(c.src_qp(), QKEY),
                )
                .unwrap();
            post_recv(&mut server, c.wr_id, slot * 512);
        }
        let mut seen = [false; DEPTH];
        for c in poll_n(&mut client, 2 * DEPTH).into_iter() {
            if c.opcode == WcOpcode::Send {
                continue;
            }
            let slot = c.wr_id as usize;
            let mut resp = [0u8; 4];
            client.mr.read(slot * 512 + c.ud_payload().start, &mut resp);
            let i = c.imm().unwrap() as usize;
            assert_eq!(resp, [i as u8, round as u8, !0xa5, !0x5a]);
            assert!(!seen[i]);
            seen[i] = true;
            answered += 1;
            post_recv(&mut client, c.wr_id, slot * 512);
        }
        assert!(seen.iter().all(|&s| s));
        let sent = poll_n(&mut server, DEPTH);
        assert!(sent
            .iter()
            .all(|c| c.opcode == WcOpcode::Send && c.status == Status::Success));
    }
    assert_eq!(answered, DEPTH * ROUNDS);
    let stats = server.ctx.backend().nic().stats();
    assert_eq!((stats.ud_no_receive, stats.qkey_violations), (0, 0));
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

/// The 40-byte IPv6 header (RFC 8200; IBA 8.3.1's GRH has the same layout), built here
/// apart from the model: version 6, traffic class, flow label, payload length, next
/// header, hop limit, source and destination address.
fn ipv6_header(
    tclass: u8,
    flow: u32,
    paylen: u16,
    next: u8,
    hop: u8,
    src: &[u8; 16],
    dst: &[u8; 16],
) -> [u8; 40] {
    let mut h = [0u8; 40];
    h[0..4].copy_from_slice(&(6u32 << 28 | u32::from(tclass) << 20 | flow).to_be_bytes());
    h[4..6].copy_from_slice(&paylen.to_be_bytes());
    (h[6], h[7]) = (next, hop);
    h[8..24].copy_from_slice(src);
    h[24..40].copy_from_slice(dst);
    h
}

/// RFC 1071 checksum of an IPv4 header, computed here apart from the model: the
/// complement of the ones' complement sum of its 16-bit words, the checksum field 0.
fn rfc1071(header: &[u8; 20]) -> u16 {
    let mut h = *header;
    h[10] = 0;
    h[11] = 0;
    let mut sum: u64 = 0;
    for i in (0..20).step_by(2) {
        sum += u64::from(h[i]) << 8 | u64::from(h[i + 1]);
    }
    while sum > 0xffff {
        sum = (sum >> 16) + (sum & 0xffff);
    }
    !(sum as u16)
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
    // RFC 791: version 4, IHL 5, TOS = traffic class 0xb8, total length = IPv4 20 + UDP 8
    // + BTH 12 + DETH 8 + 20 + ICRC 4 = 72, identification 0, DF, TTL = hop limit 9,
    // protocol 17, the checksum, 10.0.0.1 -> 192.168.7.20.
    let mut want = [0u8; 20];
    want[..10].copy_from_slice(&[0x45, 0xb8, 0, 72, 0, 0, 0x40, 0, 9, 17]);
    want[12..16].copy_from_slice(&[10, 0, 0, 1]);
    want[16..20].copy_from_slice(&[192, 168, 7, 20]);
    let sum = rfc1071(&want);
    want[10..12].copy_from_slice(&sum.to_be_bytes());
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

/// A send from `a` to `b` through `dest` fails with LOCAL_QP_OP_ERR: `a`'s QP goes to SQE
/// and `b`, with a receive posted, gets nothing.
fn expect_local_qp_op_err(a: &mut Side, b: &mut Side, dest: &mlx5_direct::UdDest<'_>) {
    post_recv(b, 1, 0);
    a.qp.sq()
        .post_ud(send(Data::Inline(&[1; 8]), SendOp::Send), dest)
        .unwrap();
    let c = poll_n(a, 1)[0];
    let Status::Error(e) = c.status else {
        panic!("{c:?}")
    };
    assert_eq!(e.syndrome(), Some(Syndrome::LocalQpOpErr));
    assert_eq!(a.qp.state(), QpState::Sqe);
    assert_empty(b);
}
