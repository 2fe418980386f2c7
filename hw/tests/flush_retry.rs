//! Flushes after ERR, RNR NAKs and transport retries: the retries that succeed, and the
//! exhaustion syndromes of those that do not.

mod common;
use common::syndromes::*;
use common::*;
use mlx5_hw::{AsyncEvent, Fault, NicConfig, QpState, TlpKind};

#[test]
fn wqes_posted_after_err_are_flushed_on_doorbell_and_receives_on_progress() {
    let (_f, mut a, _b) = pair();
    a.nic
        .modify_qp(a.qp.qpn, &mlx5_hw::QpTransition::Err)
        .unwrap();
    assert!(a.drain_send().is_empty());
    a.post_op(NOP, 0, 0, 0, &[]);
    a.ring();
    assert_eq!(summary(&a.drain_send()), vec![(REQ_ERR, WR_FLUSH_ERR, 0)]);
    a.recv_at(0, 8);
    assert!(a.drain_recv().is_empty());
    assert_eq!(a.nic.progress(), 1);
    assert_eq!(summary(&a.drain_recv()), vec![(RESP_ERR, WR_FLUSH_ERR, 0)]);
    assert_eq!(a.nic.progress(), 0);
}

#[test]
fn rnr_then_success_after_receive_is_posted() {
    let (_f, mut a, mut b) = pair();
    a.post_op(SEND, 0, SIGNALED, 0, &[inline_seg(b"late")]);
    // A second WQE queues behind the RNR'd one (RC order).
    a.write_inline(b.data(0x100), b.key, b"after", SIGNALED);
    a.ring();
    assert!(a.poll_send().is_none());
    assert_eq!(
        b.read_data(0x100, 5),
        vec![0; 5],
        "the WRITE waits behind the SEND"
    );
    assert_eq!(a.nic.progress(), 1);
    assert!(a.poll_send().is_none());
    b.recv_at(0, 16);
    assert_eq!(a.nic.progress(), 1);
    assert_eq!(b.read_data(0, 4), b"late");
    assert_eq!(b.read_data(0x100, 5), b"after");
    assert_eq!(summary(&a.drain_send()), vec![(REQ, 0, 0), (REQ, 0, 1)]);
    assert_eq!(b.nic.stats().rnr_naks, 2);
    assert_eq!(a.nic.stats().retransmits, 2);
}

/// A doorbell while the head WQE waits out an RNR NAK does not send it again before its
/// timer (one `progress()` step): the new WQE queues behind it.
#[test]
fn a_doorbell_during_an_rnr_wait_sends_nothing_early() {
    let (_f, mut a, mut b) = pair();
    a.post_op(SEND, 0, SIGNALED, 0, &[inline_seg(b"late")]);
    a.ring();
    assert_eq!(b.nic.stats().rnr_naks, 1);
    a.write_inline(b.data(0x100), b.key, b"after", SIGNALED);
    a.ring();
    assert_eq!(
        b.nic.stats().rnr_naks,
        1,
        "the stalled SEND is not sent again"
    );
    assert_eq!(
        b.read_data(0x100, 5),
        vec![0; 5],
        "the WRITE waits behind it"
    );
    b.recv_at(0, 16);
    assert_eq!(a.nic.progress(), 1);
    assert_eq!(summary(&a.drain_send()), vec![(REQ, 0, 0), (REQ, 0, 1)]);
    assert_eq!(b.read_data(0x100, 5), b"after");
}

#[test]
fn rnr_retry_exhaustion() {
    let conn = Conn {
        rnr_retry: 2,
        ..Conn::default()
    };
    let (_f, mut a, b) = pair_with(Cfg::default(), conn, NicConfig::default());
    a.post_op(SEND, 0, 0, 0, &[inline_seg(b"x")]);
    a.ring();
    a.nic.progress();
    a.nic.progress();
    assert!(a.poll_send().is_none());
    a.nic.progress();
    assert_eq!(
        summary(&a.drain_send()),
        vec![(REQ_ERR, RNR_RETRY_EXC_ERR, 0)]
    );
    assert_eq!(a.state(), QpState::Err);
    assert_eq!(b.state(), QpState::Rts);
}

#[test]
fn injected_rnr_on_a_posted_receive() {
    let (_f, mut a, mut b) = pair();
    b.recv_at(0, 16);
    b.nic.inject(Fault::Rnr {
        qpn: Some(b.qp.qpn),
        count: 1,
    });
    a.post_op(SEND, 0, SIGNALED, 0, &[inline_seg(b"x")]);
    a.ring();
    assert!(a.poll_send().is_none());
    a.nic.progress();
    assert_eq!(a.poll_send().unwrap().opcode, REQ);
    assert_eq!(b.poll_recv().unwrap().wqe_counter, 0);
}

#[test]
fn lost_packets_are_retransmitted() {
    let (_f, mut a, b) = pair();
    a.nic.inject(Fault::LosePackets {
        qpn: None,
        count: 2,
    });
    a.write_inline(b.data(0), b.key, b"retry", SIGNALED);
    a.ring();
    a.nic.progress();
    assert!(a.poll_send().is_none());
    a.nic.progress();
    assert_eq!(b.read_data(0, 5), b"retry");
    assert_eq!(a.poll_send().unwrap().opcode, REQ);
    let s = a.nic.stats();
    assert_eq!((s.packets, s.packets_lost, s.retransmits), (3, 2, 2));
}

#[test]
fn chosen_packets_are_lost() {
    let conn = Conn {
        mtu: 256,
        ..Conn::default()
    };
    let (_f, mut a, b) = pair_with(Cfg::default(), conn, NicConfig::default());
    // Let two packets through, lose the third: the second packet of the 1000-byte WRITE.
    a.nic.inject(Fault::LosePacketsAfter {
        qpn: Some(a.qp.qpn),
        skip: 2,
        count: 1,
    });
    a.write_inline(b.data(0), b.key, b"first", SIGNALED);
    a.write_data(0, &[7; 1000]);
    let src = a.data(0);
    a.post_op(
        WRITE,
        0,
        SIGNALED,
        0,
        &[raddr_seg(b.data(0x100), b.key), data_seg(1000, a.key, src)],
    );
    a.ring();
    assert_eq!(summary(&a.drain_send()), vec![(REQ, 0, 0)]);
    assert_eq!(b.read_data(0x100, 4), vec![0; 4], "not delivered");
    assert_eq!(a.nic.progress(), 1);
    assert_eq!(summary(&a.drain_send()), vec![(REQ, 0, 1)]);
    assert_eq!(b.read_data(0x100, 1000), vec![7; 1000]);
    let s = a.nic.stats();
    // 1 + 4 packets, then the 4-packet message again; a message is retransmitted whole.
    assert_eq!((s.packets, s.packets_lost, s.retransmits), (9, 4, 1));
}

#[test]
fn lost_responses_are_answered_without_executing_twice() {
    let (_f, mut a, mut b) = pair();
    b.recv_at(0x100, 16);
    b.mem.put_u64(DATA + 0x80, 10);
    let (r, k) = (b.data(0x80), b.key);
    let (l1, l2) = (a.data(0x10), a.data(0x20));
    let fa = [raddr_seg(r, k), atomic_seg(5, 0), data_seg(8, a.key, l1)];
    let read = [raddr_seg(r, k), data_seg(8, a.key, l2)];
    let send = [inline_seg(b"once")];
    let write = [raddr_seg(b.data(0x200), k), inline_seg(b"w")];
    // Each WQE executes once at the responder and its response is lost; the retransmission
    // on progress() is a duplicate, answered without executing again.
    for (i, (op, segs)) in [
        (SEND, &send[..]),
        (WRITE, &write[..]),
        (FA, &fa[..]),
        (READ, &read[..]),
    ]
    .into_iter()
    .enumerate()
    {
        a.nic.inject(Fault::LoseResponses {
            qpn: Some(a.qp.qpn),
            count: 1,
        });
        a.post_op(op, 0, SIGNALED, 0, segs);
        a.ring();
        assert!(a.poll_send().is_none(), "WQE {i} waits for its response");
        assert_eq!(a.nic.progress(), 1);
        let c = a.poll_send().unwrap();
        assert_eq!(
            (c.opcode, c.send_opcode(), c.wqe_counter),
            (REQ, op, i as u16)
        );
    }
    assert_eq!(summary(&b.drain_recv()), vec![(RESP_SEND, 0, 0)]);
    assert_eq!(b.read_data(0x100, 4), b"once");
    assert_eq!(b.read_data(0x200, 1), b"w");
    assert_eq!(b.mem.u64(DATA + 0x80), 15, "added once");
    assert_eq!(a.mem.u64(DATA + 0x10), 10, "the saved original value");
    assert_eq!(a.mem.u64(DATA + 0x20), 15);
    let s = a.nic.stats();
    assert_eq!((s.responses_lost, s.retransmits, s.packets_lost), (4, 4, 0));
    // Responses lost for good: the retry count runs out, the WRITE still landed once.
    a.nic.inject(Fault::LoseResponses {
        qpn: None,
        count: 10,
    });
    a.write_inline(b.data(0x300), b.key, b"x", 0);
    a.ring();
    for _ in 0..=Conn::default().retry_cnt {
        a.nic.progress();
    }
    assert_eq!(
        summary(&a.drain_send()),
        vec![(REQ_ERR, TRANSPORT_RETRY_EXC_ERR, 4)]
    );
    assert_eq!(b.read_data(0x300, 1), b"x");
    assert_eq!(b.state(), QpState::Rts);
}

#[test]
fn retry_exhaustion_is_transport_retry_exc() {
    let conn = Conn {
        retry_cnt: 1,
        ..Conn::default()
    };
    let (_f, mut a, b) = pair_with(Cfg::default(), conn, NicConfig::default());
    a.nic.inject(Fault::LosePackets {
        qpn: Some(a.qp.qpn),
        count: 10,
    });
    a.write_inline(b.data(0), b.key, b"x", 0);
    a.ring();
    a.nic.progress();
    a.nic.progress();
    assert_eq!(
        summary(&a.drain_send()),
        vec![(REQ_ERR, TRANSPORT_RETRY_EXC_ERR, 0)]
    );
}

#[test]
fn dead_peer_is_transport_retry_exc() {
    let conn = Conn {
        retry_cnt: 0,
        ..Conn::default()
    };
    let (_f, mut a, b) = pair_with(Cfg::default(), conn, NicConfig::default());
    b.nic
        .modify_qp(b.qp.qpn, &mlx5_hw::QpTransition::Reset)
        .unwrap();
    a.post_op(SEND, 0, SIGNALED, 0, &[inline_seg(b"x")]);
    a.ring();
    a.nic.progress();
    assert_eq!(
        summary(&a.drain_send()),
        vec![(REQ_ERR, TRANSPORT_RETRY_EXC_ERR, 0)]
    );
}

#[test]
fn srq_wqes_are_not_flushed() {
    let cfg = Cfg {
        srq: true,
        ..Cfg::default()
    };
    let (_f, _a, mut b) = pair_with(cfg, Conn::default(), NicConfig::default());
    b.recv_at(0, 16);
    b.nic
        .modify_qp(b.qp.qpn, &mlx5_hw::QpTransition::Err)
        .unwrap();
    b.nic.progress();
    assert!(b.drain_recv().is_empty());
    let qpn = b.qp.qpn;
    assert_eq!(
        b.nic.poll_async_event(),
        Some(AsyncEvent::LastWqeReached { qpn }),
        "a QP on an SRQ that enters ERR takes no more of its WQEs"
    );
    // Once per entry to ERR.
    b.nic
        .modify_qp(b.qp.qpn, &mlx5_hw::QpTransition::Err)
        .unwrap();
    assert_eq!(b.nic.poll_async_event(), None);
}

#[test]
fn a_request_to_a_responder_in_err_is_dropped_until_the_retries_run_out() {
    // The responder is connected back to the requester, with the same transport: only its
    // state keeps the request from landing (`req::connected`).
    let (_f, mut a, b) = pair();
    b.nic
        .modify_qp(b.qp.qpn, &mlx5_hw::QpTransition::Err)
        .unwrap();
    a.write_inline(b.data(0), b.key, b"lost", SIGNALED);
    a.ring();
    for _ in 0..Conn::default().retry_cnt {
        assert_eq!(a.nic.progress(), 1);
        assert!(a.poll_send().is_none());
    }
    a.nic.progress();
    assert_eq!(
        summary(&a.drain_send()),
        vec![(REQ_ERR, TRANSPORT_RETRY_EXC_ERR, 0)]
    );
    assert_eq!(b.read_data(0, 4), vec![0; 4], "nothing landed");
    assert_eq!((a.state(), b.state()), (QpState::Err, QpState::Err));
}

#[test]
fn a_duplicate_read_reads_the_memory_again() {
    let (_f, mut a, b) = pair();
    b.nic.set_tlp_trace(true);
    a.nic.inject(Fault::LoseResponses {
        qpn: Some(a.qp.qpn),
        count: 1,
    });
    let segs = [
        raddr_seg(b.data(0x80), b.key),
        data_seg(8, a.key, a.data(0x20)),
    ];
    a.post_op(READ, 0, SIGNALED, 0, &segs);
    a.ring();
    assert!(a.poll_send().is_none(), "the response was lost");
    assert_eq!(a.nic.progress(), 1);
    assert_eq!(a.poll_send().unwrap().opcode, REQ);
    // The responder's DMA read requests for the source: the request's, then the
    // duplicate's (a READ has no saved result: it is executed again).
    let reads = b
        .nic
        .take_tlps()
        .iter()
        .filter(|t| t.purpose == mlx5_hw::Purpose::ReadResponse && t.kind == TlpKind::MRd)
        .count();
    assert_eq!(reads, 2);
}
