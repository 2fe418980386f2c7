//! UC end to end on the model: the WQE bytes (RC's), the completions of SEND, SEND_IMM,
//! WRITE and WRITE_IMM, the requester that completes on transmit and never learns of a loss,
//! a packet lost in the middle of a multi-packet message (the rest of that message dropped,
//! the next one delivered), silent responder drops, the typed refusals, and the PCIe rows
//! (the same as RC's: acknowledgements never cross PCIe).

mod common;

use common::bodies::expect_sqe_after_a_bad_key;
use common::{assert_empty, connect, connect_with, poll_n, side, Side};
use mlx5_direct::backend::sim::{hw, Fabric, Fault, PcieCounters};
use mlx5_direct::{
    ConnectOptions, Data, PostError, QpConfig, QpState, SendFlags, SendOp, SendWr, Status,
    Transport, WcOpcode,
};

fn uc_config() -> QpConfig {
    QpConfig {
        transport: Transport::Uc,
        ..QpConfig::default()
    }
}

/// Two connected UC sides on one fabric, with path MTU `mtu`.
fn uc_pair(fabric: &std::sync::Arc<Fabric>, mtu: u32) -> (Side, Side) {
    let (mut a, mut b) = (side(fabric, &uc_config()), side(fabric, &uc_config()));
    let options = ConnectOptions {
        path_mtu: mtu,
        ..ConnectOptions::default()
    };
    connect_with(&mut a, &mut b, &options);
    (a, b)
}

fn stats(s: &Side) -> hw::Stats {
    s.ctx.backend().nic().stats()
}

fn post(s: &mut Side, wr_id: u64, op: SendOp, data: Data<'_>) {
    s.qp.sq()
        .post(wr_id, op, data, SendFlags::SIGNALED)
        .unwrap();
}

#[test]
fn the_four_operations_complete_on_both_sides_with_rcs_wqe_bytes() {
    let fabric = Fabric::new();
    let (mut a, mut b) = uc_pair(&fabric, 4096);
    assert_eq!(a.qp.transport(), Transport::Uc);
    assert_eq!((a.qp.state(), b.qp.state()), (QpState::Rts, QpState::Rts));

    // WRITE: ctrl + raddr + inline, exactly as on RC (prm-facts-next §2: no transport
    // segment).
    let pi = a.qp.sq().producer_count();
    post(
        &mut a,
        1,
        SendOp::Write(b.mr.remote(256)),
        Data::Inline(b"unreliable"),
    );
    let wqe = a.qp.sq().wqe_bytes(pi, 64);
    assert_eq!(wqe[3], 0x08, "RDMA_WRITE");
    assert_eq!(
        &wqe[4..8],
        &(a.qp.qpn() << 8 | 3).to_be_bytes(),
        "QPN, 3 DS"
    );
    assert_eq!(&wqe[16..24], &b.mr.remote(256).addr.to_be_bytes());
    assert_eq!(&wqe[24..28], &b.mr.remote(256).rkey.to_be_bytes());
    assert_eq!(&wqe[32..36], &(0x8000_0000u32 | 10).to_be_bytes());
    assert_eq!(&wqe[36..46], b"unreliable");
    let c = poll_n(&mut a, 1)[0];
    assert_eq!(
        (c.wr_id, c.status, c.opcode),
        (1, Status::Success, WcOpcode::RdmaWrite)
    );
    let mut got = [0u8; 10];
    b.mr.read(256, &mut got);
    assert_eq!(&got, b"unreliable");
    assert_empty(&mut b);

    // The same work request on an RC queue writes the same bytes but for the QPN.
    let mut rc = side(&fabric, &QpConfig::default());
    let mut rc_peer = side(&fabric, &QpConfig::default());
    connect(&mut rc, &mut rc_peer);
    let rc_pi = rc.qp.sq().producer_count();
    post(
        &mut rc,
        1,
        SendOp::Write(b.mr.remote(256)),
        Data::Inline(b"unreliable"),
    );
    let mut rc_wqe = rc.qp.sq().wqe_bytes(rc_pi, 64);
    rc_wqe[4..8].copy_from_slice(&(a.qp.qpn() << 8 | 3).to_be_bytes());
    rc_wqe[1..3].copy_from_slice(&wqe[1..3]);
    assert_eq!(rc_wqe, wqe);

    // WRITE_IMM consumes a receive; SEND and SEND_IMM land in one.
    for (i, off) in [(10u64, 0usize), (11, 1024), (12, 2048)] {
        b.qp.rq().unwrap().post(i, &[b.mr.sge(off, 1024)]).unwrap();
    }
    post(
        &mut a,
        2,
        SendOp::WriteImm(b.mr.remote(512), 0xfeed),
        Data::Inline(b"imm"),
    );
    post(&mut a, 3, SendOp::Send, Data::Inline(b"send"));
    let sge = a.mr.sge(0, 600);
    a.mr.write(0, &[0x77; 600]);
    post(&mut a, 4, SendOp::SendImm(0xbeef), Data::Sges(&[sge]));
    let cs = poll_n(&mut a, 3);
    assert!(cs.iter().all(|c| c.status == Status::Success));
    assert_eq!(cs_wrs::<3>(&cs), [2, 3, 4]);
    let rs = poll_n(&mut b, 3);
    assert_eq!(
        rs.iter()
            .map(|r| (r.wr_id, r.opcode, r.byte_len, r.imm()))
            .collect::<Vec<_>>(),
        vec![
            (10, WcOpcode::RecvRdmaWithImm, 3, Some(0xfeed)),
            (11, WcOpcode::Recv, 4, None),
            (12, WcOpcode::Recv, 600, Some(0xbeef)),
        ]
    );
    let mut got = [0u8; 4];
    b.mr.read(1024, &mut got);
    assert_eq!(&got, b"send");
    let mut got = [0u8; 600];
    b.mr.read(2048, &mut got);
    assert_eq!(got, [0x77; 600]);
}

fn cs_wrs<const N: usize>(cs: &[mlx5_direct::Completion]) -> [u64; N] {
    core::array::from_fn(|i| cs[i].wr_id)
}

#[test]
fn uc_operations_complete_and_read_is_refused() {
    common::bodies::uc_operations_complete_and_read_is_refused(&Fabric::new());
}

#[test]
fn a_packet_lost_mid_message_drops_the_rest_of_it_and_the_requester_never_learns() {
    let fabric = Fabric::new();
    // A 1024-byte path MTU: 3000 bytes are three packets.
    let (mut a, mut b) = uc_pair(&fabric, 1024);
    let nic_a = a.ctx.backend().nic().clone();
    a.mr.write(0, &[0xab; 3000]);
    let sge = a.mr.sge(0, 3000);
    // Lose the second packet of the next message.
    nic_a.inject(Fault::LosePacketsAfter {
        qpn: Some(a.qp.qpn()),
        skip: 1,
        count: 1,
    });
    post(
        &mut a,
        1,
        SendOp::Write(b.mr.remote(8192)),
        Data::Sges(&[sge]),
    );
    // The requester completes with success: the packets have left.
    let c = poll_n(&mut a, 1)[0];
    assert_eq!((c.wr_id, c.status), (1, Status::Success));
    // The first packet landed; the second was lost and the third discarded.
    let mut got = vec![0u8; 3000];
    b.mr.read(8192, &mut got);
    assert!(got[..1024].iter().all(|&x| x == 0xab));
    assert!(got[1024..].iter().all(|&x| x == 0));
    let (sa, sb) = (stats(&a), stats(&b));
    assert_eq!((sa.packets, sa.packets_lost, sa.retransmits), (3, 1, 0));
    assert_eq!(sb.uc_incomplete, 1);
    assert_eq!(a.ctx.backend().nic().progress(), 0, "nothing to retry");

    // The next message starts with a first packet: delivered whole.
    post(
        &mut a,
        2,
        SendOp::Write(b.mr.remote(8192)),
        Data::Sges(&[sge]),
    );
    poll_n(&mut a, 1);
    b.mr.read(8192, &mut got);
    assert!(got.iter().all(|&x| x == 0xab));

    // A SEND that loses its last packet: its receive is reused by the next SEND, and the
    // responder's CQ hears only of that one.
    b.qp.rq().unwrap().post(50, &[b.mr.sge(0, 4096)]).unwrap();
    nic_a.inject(Fault::LosePacketsAfter {
        qpn: Some(a.qp.qpn()),
        skip: 2,
        count: 1,
    });
    post(&mut a, 3, SendOp::Send, Data::Sges(&[sge]));
    poll_n(&mut a, 1);
    assert_empty(&mut b);
    let small = a.mr.sge(0, 100);
    post(&mut a, 4, SendOp::SendImm(9), Data::Sges(&[small]));
    poll_n(&mut a, 1);
    let r = poll_n(&mut b, 1)[0];
    assert_eq!((r.wr_id, r.byte_len, r.imm()), (50, 100, Some(9)));
    assert_eq!(stats(&b).uc_incomplete, 2);

    // A WRITE_IMM whose first packet is lost: nothing lands, no receive is consumed.
    b.qp.rq().unwrap().post(51, &[b.mr.sge(0, 64)]).unwrap();
    b.mr.write(16384, &[0; 3000]);
    nic_a.inject(Fault::LosePackets {
        qpn: Some(a.qp.qpn()),
        count: 1,
    });
    post(
        &mut a,
        5,
        SendOp::WriteImm(b.mr.remote(16384), 1),
        Data::Sges(&[sge]),
    );
    poll_n(&mut a, 1);
    assert_empty(&mut b);
    b.mr.read(16384, &mut got);
    assert!(got.iter().all(|&x| x == 0));
    // The last two packets reached the responder and were discarded.
    assert_eq!(stats(&b).uc_incomplete, 3);
    assert_eq!(stats(&a).packets_lost, 3);
    post(
        &mut a,
        6,
        SendOp::WriteImm(b.mr.remote(16384), 2),
        Data::Sges(&[sge]),
    );
    assert_eq!(cs_wrs::<1>(&poll_n(&mut a, 1)), [6]);
    let r = poll_n(&mut b, 1)[0];
    assert_eq!((r.wr_id, r.imm(), r.byte_len), (51, Some(2), 3000));
}

/// UC on an SRQ: SEND, SEND_IMM and WRITE_IMM each consume one SRQ WQE, in order, with
/// the data where it belongs; a plain WRITE consumes none. A message that loses a packet
/// consumes none either: lost after its first packet, the WQE its first packet took is
/// given back (IB class D1, as for an RQ: the model's choice for an SRQ, see docs/model.md
/// "UC (unreliable connection)"); lost at its first packet, none was taken. The next
/// messages take those WQEs.
#[test]
fn uc_receives_come_from_an_srq_and_a_lost_message_consumes_none() {
    let fabric = Fabric::new();
    let (mut a, mut b) = (side(&fabric, &uc_config()), side(&fabric, &uc_config()));
    let mut srq = b.pd.create_srq(4, 1).unwrap();
    let mut qp =
        b.pd.create_qp_with_srq(&b.cq, &b.cq, &srq, &uc_config())
            .unwrap();
    // A 1024-byte path MTU: 3000 bytes are three packets.
    let options = ConnectOptions {
        path_mtu: 1024,
        ..ConnectOptions::default()
    };
    a.qp.connect(&qp.endpoint().unwrap(), &options).unwrap();
    qp.connect(&a.qp.endpoint().unwrap(), &options).unwrap();
    let slot = |i: u64| i as usize * 4096;
    for i in 0..4 {
        srq.post(10 + i, &[b.mr.sge(slot(i), 4096)]).unwrap();
    }
    let big: Vec<u8> = (0..3000u32).map(|i| (i % 251) as u8).collect();
    a.mr.write(0, &big);
    let three = a.mr.sge(0, 3000);
    let small = a.mr.sge(0, 100);
    post(&mut a, 1, SendOp::Send, Data::Inline(b"send"));
    post(&mut a, 2, SendOp::SendImm(0x51), Data::Sges(&[three]));
    post(
        &mut a,
        3,
        SendOp::WriteImm(b.mr.remote(32768), 0x52),
        Data::Sges(&[small]),
    );
    post(
        &mut a,
        4,
        SendOp::Write(b.mr.remote(40000)),
        Data::Sges(&[three]),
    );
    assert_eq!(cs_wrs::<4>(&poll_n(&mut a, 4)), [1, 2, 3, 4]);
    let rs = poll_n(&mut b, 3);
    assert_eq!(
        rs.iter()
            .map(|r| (r.wr_id, r.qpn, r.status, r.opcode, r.byte_len, r.imm()))
            .collect::<Vec<_>>(),
        vec![
            (10, qp.qpn(), Status::Success, WcOpcode::Recv, 4, None),
            (
                11,
                qp.qpn(),
                Status::Success,
                WcOpcode::Recv,
                3000,
                Some(0x51)
            ),
            (
                12,
                qp.qpn(),
                Status::Success,
                WcOpcode::RecvRdmaWithImm,
                100,
                Some(0x52)
            ),
        ]
    );
    assert_empty(&mut b);
    let read = |b: &Side, off: usize, len: usize| {
        let mut got = vec![0u8; len];
        b.mr.read(off, &mut got);
        got
    };
    assert_eq!(read(&b, slot(0), 4), b"send");
    assert_eq!(read(&b, slot(1), 3000), big);
    assert_eq!(read(&b, 32768, 100), big[..100]);
    assert_eq!(read(&b, 40000, 3000), big);

    // Loss: a SEND that loses its second packet, then one that loses its first, then a
    // WRITE_IMM that loses its last. The requester completes all three.
    let nic_a = a.ctx.backend().nic().clone();
    let qpn_a = a.qp.qpn();
    let lose = |skip, count| Fault::LosePacketsAfter {
        qpn: Some(qpn_a),
        skip,
        count,
    };
    let lost_before = stats(&b).uc_incomplete;
    nic_a.inject(lose(1, 1));
    post(&mut a, 5, SendOp::Send, Data::Sges(&[three]));
    assert_eq!(poll_n(&mut a, 1)[0].status, Status::Success);
    nic_a.inject(lose(0, 1));
    post(&mut a, 6, SendOp::SendImm(0x60), Data::Sges(&[three]));
    assert_eq!(poll_n(&mut a, 1)[0].status, Status::Success);
    nic_a.inject(lose(2, 1));
    post(
        &mut a,
        7,
        SendOp::WriteImm(b.mr.remote(32768), 0x70),
        Data::Sges(&[three]),
    );
    assert_eq!(poll_n(&mut a, 1)[0].status, Status::Success);
    assert_empty(&mut b);
    let (sa, sb) = (stats(&a), stats(&b));
    // 3 packets each for messages 1..7 but the 1-packet SEND and WRITE_IMM: 3 lost.
    assert_eq!((sa.packets, sa.packets_lost, sa.retransmits), (17, 3, 0));
    // The first loss left its later packet discarded, the second its two, the third none
    // beyond itself: three incomplete messages, no receive consumed, no error.
    assert_eq!(sb.uc_incomplete - lost_before, 3);
    assert_eq!((sb.uc_no_receive, sb.uc_errors), (0, 0));
    // SRQ WQE 13 (wr_id 13) is still the next: the next message takes it, and the slots of
    // 10..12 take new receives.
    post(&mut a, 8, SendOp::SendImm(0x80), Data::Sges(&[small]));
    poll_n(&mut a, 1);
    let r = poll_n(&mut b, 1)[0];
    assert_eq!(
        (r.wr_id, r.status, r.byte_len, r.imm()),
        (13, Status::Success, 100, Some(0x80))
    );
    assert_eq!(read(&b, slot(3), 100), big[..100]);
    for i in 0..4 {
        srq.post(20 + i, &[b.mr.sge(slot(i), 4096)]).unwrap();
    }
    post(&mut a, 9, SendOp::Send, Data::Inline(b"last"));
    poll_n(&mut a, 1);
    assert_eq!(poll_n(&mut b, 1)[0].wr_id, 20);
    assert_eq!(qp.state(), QpState::Rts);
}

#[test]
fn responder_trouble_is_a_silent_drop_and_the_qp_lives_on() {
    let fabric = Fabric::new();
    let (mut a, mut b) = uc_pair(&fabric, 4096);
    // No receive posted: dropped, no RNR NAK, no retry (rxe: class D).
    post(&mut a, 1, SendOp::Send, Data::Inline(b"lost"));
    assert_eq!(poll_n(&mut a, 1)[0].status, Status::Success);
    assert_empty(&mut b);
    // A bad rkey: dropped, nothing written.
    let mut bad = b.mr.remote(0);
    bad.rkey ^= 0x100;
    post(&mut a, 2, SendOp::Write(bad), Data::Inline(b"x"));
    assert_eq!(poll_n(&mut a, 1)[0].status, Status::Success);
    // A receive too short for the message: dropped, the receive stays.
    b.qp.rq().unwrap().post(7, &[b.mr.sge(0, 4)]).unwrap();
    post(&mut a, 3, SendOp::Send, Data::Inline(b"too long"));
    assert_eq!(poll_n(&mut a, 1)[0].status, Status::Success);
    assert_empty(&mut b);
    let s = stats(&b);
    assert_eq!((s.uc_no_receive, s.uc_errors, s.rnr_naks), (1, 2, 0));
    assert_eq!(stats(&a).retransmits, 0);
    // Both QPs are still in RTS, and the receive takes the next message that fits.
    post(&mut a, 4, SendOp::Send, Data::Inline(b"ok"));
    poll_n(&mut a, 1);
    let r = poll_n(&mut b, 1)[0];
    assert_eq!((r.wr_id, r.status, r.byte_len), (7, Status::Success, 2));
    assert_eq!((a.qp.state(), b.qp.state()), (QpState::Rts, QpState::Rts));
}

#[test]
fn a_failed_write_leaves_the_qp_in_sqe_receiving_until_recovered() {
    let fabric = Fabric::new();
    let (mut a, mut b) = uc_pair(&fabric, 4096);
    let mut bad = a.mr.sge(0, 8);
    bad.lkey ^= 0x100;
    post(&mut a, 1, SendOp::Write(b.mr.remote(0)), Data::Sges(&[bad]));
    post(
        &mut a,
        2,
        SendOp::Write(b.mr.remote(0)),
        Data::Inline(b"flushed"),
    );
    // SQE, not ERR: the send queue refuses posts, receives go on.
    expect_sqe_after_a_bad_key(&mut a);
    assert_eq!(
        a.qp.sq()
            .post(3, SendOp::Send, Data::NONE, SendFlags::SIGNALED),
        Err(PostError::NotReadyToSend)
    );
    // Receives go on in SQE.
    a.qp.rq().unwrap().post(9, &[a.mr.sge(0, 64)]).unwrap();
    post(&mut b, 1, SendOp::Send, Data::Inline(b"hello"));
    poll_n(&mut b, 1);
    assert_eq!(poll_n(&mut a, 1)[0].byte_len, 5);
    a.qp.recover_sq().unwrap();
    post(
        &mut a,
        4,
        SendOp::Write(b.mr.remote(0)),
        Data::Inline(b"again"),
    );
    assert_eq!(poll_n(&mut a, 1)[0].status, Status::Success);
    let mut got = [0u8; 5];
    b.mr.read(0, &mut got);
    assert_eq!(&got, b"again");
    assert_eq!(b.qp.state(), QpState::Rts);
}

#[test]
fn read_and_atomics_are_refused_before_anything_is_written() {
    let fabric = Fabric::new();
    let (mut a, b) = uc_pair(&fabric, 4096);
    let pi = a.qp.sq().producer_count();
    let remote = b.mr.remote(0);
    let refusal = PostError::WrongTransport {
        transport: Transport::Uc,
    };
    let uc = Err(refusal);
    let sge = a.mr.sge(0, 8);
    let ops = [
        SendOp::Read(remote),
        SendOp::FetchAdd { remote, add: 1 },
        SendOp::CompareSwap {
            remote,
            compare: 0,
            swap: 1,
        },
    ];
    for op in ops {
        for data in [Data::Sges(&[sge]), Data::Inline(b"12345678")] {
            assert_eq!(a.qp.sq().post(1, op, data, SendFlags::SIGNALED), uc);
            assert_eq!(
                a.qp.sq().post_many([SendWr {
                    wr_id: 1,
                    op,
                    data,
                    flags: SendFlags::SIGNALED,
                }]),
                Err((0, refusal))
            );
        }
    }
    // Prepared work requests: the same refusal; a WRITE prepares and posts.
    let read = SendWr {
        wr_id: 1,
        op: SendOp::Read(remote),
        data: Data::Sges(&[sge]),
        flags: SendFlags::SIGNALED,
    };
    assert_eq!(a.qp.sq().prepare(&read).err(), Some(refusal));
    let write = SendWr {
        op: SendOp::Write(remote),
        data: Data::Inline(b"prepared"),
        ..read
    };
    let prepared = a.qp.sq().prepare(&write).unwrap();
    assert_eq!(a.qp.sq().producer_count(), pi);
    // The UD entry on a UC queue.
    let ah =
        a.pd.create_ah(&mlx5_direct::AhAttr::to_lid(1, &b.qp.endpoint().unwrap()));
    let ah = ah.unwrap();
    let wr = SendWr {
        wr_id: 1,
        op: SendOp::Send,
        data: Data::NONE,
        flags: SendFlags::SIGNALED,
    };
    assert_eq!(a.qp.sq().post_ud(wr, &ah.dest(b.qp.qpn(), 1)), uc);
    assert_eq!(a.qp.sq().producer_count(), pi);
    assert_eq!(stats(&a).wqes, 0);
    a.qp.sq().post_prepared(&prepared).unwrap();
    assert_eq!(poll_n(&mut a, 1)[0].status, Status::Success);
    let mut got = [0u8; 8];
    b.mr.read(0, &mut got);
    assert_eq!(&got, b"prepared");
}

#[test]
fn the_model_takes_only_uc_transitions_on_a_uc_qp() {
    let fabric = Fabric::new();
    let a = side(&fabric, &uc_config());
    let nic = a.ctx.backend().nic();
    let qpn = a.qp.qpn();
    let init = hw::QpTransition::Init {
        port: 1,
        pkey_index: 0,
        access: hw::Access::REMOTE_WRITE,
    };
    nic.modify_qp(qpn, &init).unwrap();
    // RC's RTR (READ depth, RNR timer) is not UC's attribute set.
    let rc_rtr = hw::QpTransition::Rtr {
        dest_lid: 1,
        dest_gid: [0; 16],
        dest_qpn: qpn,
        rq_psn: 0,
        path_mtu: 1024,
        max_dest_rd_atomic: 1,
        min_rnr_timer: 12,
        sl: 0,
        global: false,
    };
    assert!(matches!(
        nic.modify_qp(qpn, &rc_rtr),
        Err(hw::HwError::InvalidParam(_))
    ));
    let rtr = hw::QpTransition::RtrUc {
        dest_lid: 1,
        dest_gid: [0; 16],
        dest_qpn: qpn,
        rq_psn: 5,
        path_mtu: 1024,
        sl: 0,
        global: false,
    };
    nic.modify_qp(qpn, &rtr).unwrap();
    let rc_rts = hw::QpTransition::Rts {
        sq_psn: 9,
        timeout: 14,
        retry_cnt: 7,
        rnr_retry: 7,
        max_rd_atomic: 1,
    };
    assert!(nic.modify_qp(qpn, &rc_rts).is_err());
    nic.modify_qp(qpn, &hw::QpTransition::RtsUc { sq_psn: 9 })
        .unwrap();
    assert_eq!(nic.qp_state(qpn).unwrap(), hw::QpState::Rts);
    let psn = nic.qp_psn(qpn).unwrap();
    assert_eq!((psn.sq_psn, psn.rq_psn), (9, 5));
}

/// The PCIe traffic of one signaled 8-byte inline WRITE and one SEND into a posted receive,
/// at each end, on a pair of `transport`.
fn one_write_and_send(transport: Transport) -> [PcieCounters; 2] {
    let fabric = Fabric::new();
    let config = QpConfig {
        transport,
        ..QpConfig::default()
    };
    let (mut a, mut b) = (side(&fabric, &config), side(&fabric, &config));
    connect(&mut a, &mut b);
    b.qp.rq().unwrap().post(1, &[b.mr.sge(0, 64)]).unwrap();
    let pcie = |s: &Side| s.ctx.backend().nic().pcie();
    let (a0, b0) = (pcie(&a), pcie(&b));
    post(
        &mut a,
        1,
        SendOp::Write(b.mr.remote(128)),
        Data::Inline(&[1; 8]),
    );
    post(&mut a, 2, SendOp::Send, Data::Inline(&[2; 8]));
    poll_n(&mut a, 2);
    poll_n(&mut b, 1);
    [pcie(&a) - a0, pcie(&b) - b0]
}

#[test]
fn uc_costs_what_rc_costs_on_pcie() {
    // ACKs are link traffic between the NICs, never PCIe: per message UC moves the same
    // TLPs as RC at both ends (prm-facts-next §8, "UC anything = RC").
    let [uc_a, uc_b] = one_write_and_send(Transport::Uc);
    let [rc_a, rc_b] = one_write_and_send(Transport::Rc);
    assert_eq!(uc_a, rc_a);
    assert_eq!(uc_b, rc_b);
    // Requester: two BlueFlame writes down, two CQEs up.
    assert_eq!(
        (uc_a.mmio_writes, uc_a.dma_reads, uc_a.dma_writes),
        (2, 0, 2)
    );
    assert_eq!((uc_a.bytes_down, uc_a.bytes_up), (176, 176));
    // Responder: the WRITE's 8 bytes; the SEND's doorbell record and receive WQE reads,
    // 8 bytes and a CQE.
    assert_eq!(
        (uc_b.mmio_writes, uc_b.dma_reads, uc_b.dma_writes),
        (0, 2, 3)
    );
}
