//! Packet sequence numbers: what the QP context reports, how loss, RNR and retransmission
//! move them, and the responder's window (IB spec 9.7.5.1, rxe `check_psn`): a request
//! behind the expected PSN is a duplicate, acknowledged and not executed; one ahead is a
//! sequence error, NAKed once and dropped.

mod common;
use common::*;
use mlx5_hw::{Fault, NicConfig, QpPsn, QpState, QpTransition};

const TRANSPORT_RETRY_EXC_ERR: u8 = 0x15;

fn psn(s: &Side) -> QpPsn {
    s.nic.qp_psn(s.qp.qpn).unwrap()
}

/// Sides connected with `a` sending from `a_sq_psn` while `b` expects 0x100.
fn pair_sending_from(a_sq_psn: u32) -> (std::sync::Arc<mlx5_hw::Fabric>, Side, Side) {
    let f = mlx5_hw::Fabric::new();
    let (na, nb) = (
        mlx5_hw::Nic::new(&f, NicConfig::default()),
        mlx5_hw::Nic::new(&f, NicConfig::default()),
    );
    let (a, b) = (
        Side::new(&na, Cfg::default()),
        Side::new(&nb, Cfg::default()),
    );
    let conn = Conn::default();
    connect_one(
        &a,
        &b,
        Conn {
            sq_psn: a_sq_psn,
            ..conn
        },
    );
    connect_one(&b, &a, conn);
    (f, a, b)
}

#[test]
fn the_context_reports_the_next_send_and_expected_receive_psn() {
    let conn = Conn {
        mtu: 256,
        ..Conn::default()
    };
    let (_f, mut a, b) = pair_with(Cfg::default(), conn, NicConfig::default());
    let fresh = QpPsn {
        sq_psn: 0x100,
        rq_psn: 0x100,
    };
    assert_eq!((psn(&a), psn(&b)), (fresh, fresh));
    a.write_inline(b.data(0), b.key, &[1; 300], SIGNALED);
    a.ring();
    // 300 bytes at MTU 256: two packets.
    assert_eq!((psn(&a).sq_psn, psn(&b).rq_psn), (0x102, 0x102));
    assert_eq!((psn(&a).rq_psn, psn(&b).sq_psn), (0x100, 0x100));
    for s in [&a, &b] {
        s.nic.modify_qp(s.qp.qpn, &QpTransition::Err).unwrap();
    }
    assert_eq!(psn(&a).sq_psn, 0x102, "ERR keeps the context");
    a.nic.modify_qp(a.qp.qpn, &QpTransition::Reset).unwrap();
    assert_eq!(
        psn(&a),
        QpPsn {
            sq_psn: 0,
            rq_psn: 0
        },
        "RESET clears it"
    );
}

#[test]
fn a_lost_request_keeps_its_psn_for_the_retransmission() {
    let (_f, mut a, b) = pair();
    a.nic.inject(Fault::LosePackets {
        qpn: None,
        count: 1,
    });
    a.write_inline(b.data(0), b.key, b"late", SIGNALED);
    a.ring();
    assert_eq!((psn(&a).sq_psn, psn(&b).rq_psn), (0x101, 0x100));
    assert_eq!(a.nic.progress(), 1);
    assert_eq!(a.poll_send().unwrap().opcode, REQ);
    assert_eq!((psn(&a).sq_psn, psn(&b).rq_psn), (0x101, 0x101));
    assert_eq!(b.read_data(0, 4), b"late");
}

#[test]
fn an_rnr_nak_moves_the_send_psn_back_to_the_one_the_responder_expects() {
    let (_f, mut a, mut b) = pair();
    a.post_op(SEND, 0, SIGNALED, 0, &[inline_seg(b"hello")]);
    a.ring();
    assert_eq!(b.nic.stats().rnr_naks, 1);
    assert_eq!((psn(&a).sq_psn, psn(&b).rq_psn), (0x100, 0x100));
    b.recv_at(0, 64);
    assert_eq!(a.nic.progress(), 1);
    assert_eq!(a.poll_send().unwrap().opcode, REQ);
    assert_eq!((psn(&a).sq_psn, psn(&b).rq_psn), (0x101, 0x101));
}

#[test]
fn a_request_ahead_of_the_expected_psn_is_nakked_once_and_fails_after_the_retries() {
    // Ahead by the largest distance that is still ahead: half the space minus one.
    let (_f, mut a, b) = pair_sending_from(0x100 + 0x7f_ffff);
    a.write_inline(b.data(0), b.key, b"ahead", SIGNALED);
    a.ring();
    assert!(a.poll_send().is_none());
    for _ in 0..Conn::default().retry_cnt {
        assert_eq!(a.nic.progress(), 1);
    }
    assert!(a.poll_send().is_none());
    assert_eq!(a.nic.progress(), 1);
    let c = a.poll_send().unwrap();
    assert_eq!((c.opcode, c.syndrome), (REQ_ERR, TRANSPORT_RETRY_EXC_ERR));
    assert_eq!(b.read_data(0, 5), vec![0; 5], "never executed");
    let (sa, sb) = (a.nic.stats(), b.nic.stats());
    assert_eq!(
        (sb.seq_naks, sa.retransmits, sa.packets_lost),
        (1, 3, 4),
        "one NAK per sequence error, each request lost"
    );
    assert_eq!((a.state(), b.state()), (QpState::Err, QpState::Rts));
    assert_eq!(psn(&b).rq_psn, 0x100);
}

/// Reset `a` (its ring too) and connect it to `b` again, sending from `sq_psn`.
fn reconnect_sending_from(a: &mut Side, b: &Side, sq_psn: u32) {
    for t in [QpTransition::Err, QpTransition::Reset] {
        a.nic.modify_qp(a.qp.qpn, &t).unwrap();
    }
    a.drain_send();
    a.mem.put_be32(DBREC + 4, 0);
    a.sq_pi = 0;
    let conn = Conn {
        sq_psn,
        rq_psn: psn(b).sq_psn,
        ..Conn::default()
    };
    connect_one(a, b, conn);
}

#[test]
fn a_sequence_error_ends_with_a_request_in_sequence() {
    let (_f, mut a, b) = pair_sending_from(0x101);
    a.write_inline(b.data(0), b.key, b"x", SIGNALED);
    a.ring();
    a.nic.progress();
    assert_eq!(b.nic.stats().seq_naks, 1);
    reconnect_sending_from(&mut a, &b, 0x100);
    a.write_inline(b.data(0), b.key, b"y", SIGNALED);
    a.ring();
    assert_eq!(b.read_data(0, 1), b"y");
    reconnect_sending_from(&mut a, &b, 0x105);
    a.write_inline(b.data(0), b.key, b"z", SIGNALED);
    a.ring();
    assert_eq!(b.read_data(0, 1), b"y");
    assert_eq!(b.nic.stats().seq_naks, 2, "a new sequence error, a new NAK");
}

#[test]
fn a_request_behind_the_expected_psn_is_acknowledged_and_not_executed() {
    // Behind by exactly half the space: still a duplicate.
    let (_f, mut a, b) = pair_sending_from((0x100 + 0x100_0000 - 0x80_0000) & 0xff_ffff);
    a.write_inline(b.data(0), b.key, b"lost", SIGNALED);
    a.ring();
    assert_eq!(
        a.poll_send().unwrap().opcode,
        REQ,
        "a success at the requester"
    );
    assert_eq!(b.read_data(0, 4), vec![0; 4], "and nothing landed");
    assert_eq!(psn(&b).rq_psn, 0x100);
    assert_eq!(b.nic.stats().seq_naks, 0);
}

#[test]
fn a_duplicate_atomic_gets_its_saved_result_and_one_without_is_dropped() {
    let (_f, mut a, mut b) = pair_sending_from(0x100);
    b.mem.put_u64(DATA + 0x80, 10);
    let (target, key, result) = (b.data(0x80), b.key, a.data(0x10));
    let post = |a: &mut Side| {
        let segs = [
            raddr_seg(target, key),
            atomic_seg(5, 0),
            data_seg(8, a.key, result),
        ];
        a.post_op(FA, 0, SIGNALED, 0, &segs);
        a.ring();
    };
    post(&mut a);
    assert_eq!(a.poll_send().unwrap().opcode, REQ);
    assert_eq!((a.mem.u64(DATA + 0x10), b.mem.u64(DATA + 0x80)), (10, 15));
    // PSN 0x100 again: the duplicate of the atomic just executed, answered with its saved
    // original value, not executed twice.
    a.mem.put_u64(DATA + 0x10, 0);
    reconnect_sending_from(&mut a, &b, 0x100);
    post(&mut a);
    assert_eq!(a.poll_send().unwrap().opcode, REQ);
    assert_eq!((a.mem.u64(DATA + 0x10), b.mem.u64(DATA + 0x80)), (10, 15));
    // PSN 0xf0: a duplicate of an atomic whose result the responder no longer holds. It
    // is dropped; the requester retries until it gives up, and nothing executes.
    a.mem.put_u64(DATA + 0x10, 0);
    reconnect_sending_from(&mut a, &b, 0xf0);
    post(&mut a);
    for _ in 0..=Conn::default().retry_cnt {
        a.nic.progress();
    }
    let c = a.drain_send();
    assert_eq!(
        c.iter()
            .map(|c| (c.opcode, c.syndrome, c.wqe_counter))
            .collect::<Vec<_>>(),
        [(REQ_ERR, TRANSPORT_RETRY_EXC_ERR, 0)]
    );
    assert_eq!((a.mem.u64(DATA + 0x10), b.mem.u64(DATA + 0x80)), (0, 15));
    // Each of the four requests of that atomic (the first and three retries) lost.
    assert_eq!(a.nic.stats().packets_lost, 4);
}
