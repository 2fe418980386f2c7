//! UD end to end on the model: address handles, the datagram WQE bytes, the GRH area and
//! the receive completion, silent drops (Q_Key, unknown QPN, no receive), the typed
//! refusals, and an RPC with 64 requests outstanding. UD over RoCE: `tests/sim_ud_roce.rs`.

mod common;

use common::bodies::expect_sqe_after_a_bad_key;
use common::ud::*;
use common::{assert_empty, poll_n, side, side_on, Rig, Side};
use mlx5_direct::backend::sim::hw::CqePkey;
use mlx5_direct::backend::sim::{Fabric, NicConfig, Sim};
use mlx5_direct::prm::CompactAv;
use mlx5_direct::{
    AhAttr, Completion, Context, Data, Error, GlobalRoute, PostError, QpConfig, QpState, SendFlags,
    SendOp, SendWr, Status, Transport, UdDest, WcOpcode, UD_GRH_BYTES,
};

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
    let sge = b.mr.sge(0, UD_GRH_BYTES as u32 + 4096);
    b.qp.rq().unwrap().post(2, &[sge]).unwrap();
    a.qp.sq()
        .post_ud(send(Data::Sges(&[full]), SendOp::Send), &dest)
        .unwrap();
    poll_n(&mut a, 1);
    assert_eq!(poll_n(&mut b, 1)[0].byte_len, 40 + 4096);
    // A first entry of exactly the GRH area: the payload goes to the second.
    let (grh, rest) = (b.mr.sge(0, UD_GRH_BYTES as u32), b.mr.sge(1024, 64));
    b.qp.rq().unwrap().post(3, &[grh, rest]).unwrap();
    a.mr.write(0, b"payload!");
    a.qp.sq()
        .post_ud(send(Data::Sges(&[a.mr.sge(0, 8)]), SendOp::Send), &dest)
        .unwrap();
    poll_n(&mut a, 1);
    assert_eq!(poll_n(&mut b, 1)[0].byte_len, 40 + 8);
    let mut got = [0u8; 9];
    b.mr.read(1024, &mut got);
    assert_eq!(&got, b"payload!\0");
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
            &[empty, b.mr.sge(off, UD_GRH_BYTES as u32 + 256)],
        )
        .unwrap();
    }
    assert_eq!(
        srq.post(99, &[b.mr.sge(0, UD_GRH_BYTES as u32)]),
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

/// A receive too small for the datagram (the GRH area and 8 bytes, for 16): the receive
/// completes with LOCAL_LENGTH_ERR and the QP is in error, both queues of it: the poller
/// marks the send queue's own flag (UD's SQE state) and the QP's.
#[test]
fn a_receive_error_puts_both_queues_of_a_ud_qp_in_error() {
    let fabric = Fabric::new();
    let (mut a, mut b) = ud_pair(&fabric);
    let (ah_ab, ah_ba) = (ah_to(&a, &b), ah_to(&b, &a));
    let to_b = ah_ab.dest(b.qp.qpn(), QKEY);
    let short = b.mr.sge(0, UD_GRH_BYTES as u32 + 8);
    b.qp.rq().unwrap().post(7, &[short]).unwrap();
    a.qp.sq()
        .post_ud(send(Data::Inline(&[1; 16]), SendOp::Send), &to_b)
        .unwrap();
    poll_n(&mut a, 1);
    let r = poll_n(&mut b, 1)[0];
    let Status::Error(e) = r.status else {
        panic!("expected LOCAL_LENGTH_ERR, got {r:?}");
    };
    assert_eq!(
        (r.wr_id, r.qpn, r.opcode, e.syndrome),
        (7, b.qp.qpn(), WcOpcode::Recv, 0x01)
    );
    let to_a = ah_ba.dest(a.qp.qpn(), QKEY);
    assert_eq!(
        b.qp.sq()
            .post_ud(send(Data::Inline(b"no"), SendOp::Send), &to_a),
        Err(PostError::NotReadyToSend)
    );
    assert_eq!(
        b.qp.rq().unwrap().post(8, &[b.mr.sge(0, 256)]),
        Err(PostError::NotReadyToReceive)
    );
}
