//! MMIO decoding: BlueFlame (match, mismatch, drop, malformed), bad doorbells, ring wrap,
//! CQ arming and events, CQ overrun, delayed CQEs.

mod common;
use common::*;
use mlx5_hw::{
    AsyncEvent, BugClass, CqParams, Event, Fabric, Fault, HwError, Nic, NicConfig, Purpose,
    QpState, QpTransition,
};
use std::time::Duration;

#[test]
fn blueflame_bytes_differing_from_the_ring_are_counted() {
    let (_f, mut a, b) = pair();
    a.write_inline(b.data(0), b.key, b"ring-data", SIGNALED);
    a.mem.put_be32(DBREC + 4, a.sq_pi as u32);
    // A buggy BlueFlame copy: one payload byte differs from the ring.
    let mut chunk = a.mem.read(SQ, 64);
    chunk[36] ^= 0xff;
    a.nic.mmio_write(a.qp.uar, a.qp.bf_offset, &chunk);
    let s = a.nic.stats();
    assert_eq!((s.bf_used, s.bf_mismatch), (1, 1));
    assert_eq!(a.poll_send().unwrap().opcode, REQ);
}

#[test]
fn dropped_blueflame_falls_back_to_the_ring() {
    let (_f, mut a, b) = pair();
    a.nic.inject(Fault::DropBlueFlame(true));
    a.write_inline(b.data(0), b.key, b"fallback", SIGNALED);
    let before = a.nic.pcie();
    a.ring_bf();
    let d = a.nic.pcie() - before;
    assert_eq!((d.mmio_writes, d.dma_reads, d.completions), (1, 1, 1));
    assert_eq!(b.read_data(0, 8), b"fallback");
    let s = a.nic.stats();
    assert_eq!((s.bf_dropped, s.bf_used), (1, 0));
}

#[test]
fn malformed_mmio_is_ignored_and_counted() {
    let (_f, mut a, b) = pair();
    a.write_inline(b.data(0), b.key, b"x", SIGNALED);
    a.mem.put_be32(DBREC + 4, a.sq_pi as u32);
    let db = a.mem.read(SQ, 8);
    let uar = a.qp.uar;
    a.nic.mmio_write(uar, 0x804, &db); // not a register start
    a.nic.mmio_write(uar, 0x800, &db[..4]); // wrong size
    a.nic.mmio_write(999, 0x800, &db); // no such UAR
    a.nic.mmio_write(uar, 0x100, &db); // nothing there
    a.nic.mmio_write(uar, 0x840, &[0; 64]); // BlueFlame chunk 1 without chunk 0
    let mut wrong_qp = db.clone();
    wrong_qp[6] ^= 1;
    a.nic.mmio_write(uar, 0x800, &wrong_qp);
    let s = a.nic.stats();
    assert_eq!(
        (s.bad_mmio, s.bf_incomplete, s.bad_doorbells, s.doorbells),
        (4, 1, 1, 0)
    );
    assert!(a.poll_send().is_none());
    assert_eq!(a.state(), QpState::Rts);
    // A correct doorbell still works.
    a.nic.mmio_write(uar, 0x800, &db);
    assert_eq!(a.poll_send().unwrap().opcode, REQ);
}

#[test]
fn doorbell_without_record_update_is_stale() {
    let (_f, mut a, b) = pair();
    a.write_inline(b.data(0), b.key, b"x", SIGNALED);
    let db = a.mem.read(SQ, 8);
    a.nic.mmio_write(a.qp.uar, 0x800, &db);
    assert_eq!(doorbell_counts(&a), [0, 1, 0, 1, 0]);
    assert!(a.poll_send().is_none());
    a.ring();
    assert_eq!(a.poll_send().unwrap().opcode, REQ);
}

#[test]
fn no_blueflame_nic_takes_only_8_byte_doorbells() {
    let cfg = NicConfig {
        bf_size: 0,
        ..NicConfig::default()
    };
    let (_f, mut a, b) = pair_with(Cfg::default(), Conn::default(), cfg);
    assert_eq!((a.qp.bf_size, a.nic.caps().bf_size), (0, 0));
    a.write_inline(b.data(0), b.key, b"x", SIGNALED);
    a.mem.put_be32(DBREC + 4, a.sq_pi as u32);
    let chunk = a.mem.read(SQ, 64);
    a.nic.mmio_write(a.qp.uar, 0x800, &chunk);
    assert_eq!(a.nic.stats().bad_mmio, 1);
    a.ring();
    a.ring();
    assert_eq!(
        doorbell_counts(&a),
        [2, 0, 0, 1, 0],
        "a repeated doorbell names the same producer: nothing new, no bug (the 64-byte write \
         counted in bad_mmio)"
    );
    assert_eq!(a.drain_send().len(), 1);
}

/// Accepted, ignored and ambiguous doorbells, then the driver bugs of each class.
fn doorbell_counts(s: &Side) -> [u64; 5] {
    let s = s.nic.stats();
    [
        s.doorbells,
        s.bad_doorbells,
        s.ambiguous_doorbells,
        s.bugs(BugClass::Rejected),
        s.bugs(BugClass::Unknown),
    ]
}

/// Update the SQ doorbell record to the producer, then write `db` to register offset `off`.
fn ring_with(a: &mut Side, off: u32, db: &[u8]) {
    a.mem.put_be32(DBREC + 4, a.sq_pi as u32);
    a.nic.mmio_write(a.qp.uar, off, db);
}

/// (opcode, wqe_counter) of each CQE.
fn completed(c: &[Cqe]) -> Vec<(u8, u16)> {
    c.iter().map(|c| (c.opcode, c.wqe_counter)).collect()
}

/// The doorbell NVSHMEM IBGDA (`ibgda_ring_db`) and UCX GDAKI (`uct_rc_mlx5_gda_ring_db`)
/// ring after writing the record: `opmod_idx_opcode = producer << 8`, `qpn_ds = qpn << 8`.
fn producer_doorbell(s: &Side, opmod: u8) -> [u8; 8] {
    let c = ctrl(0, opmod, s.sq_pi, s.qp.qpn, 0, 0, 0);
    c[..8].try_into().unwrap()
}

#[test]
fn doorbell_naming_the_producer_with_ds_0_runs_the_batch() {
    let (_f, mut a, b) = pair();
    a.write_inline(b.data(0), b.key, b"first", SIGNALED);
    a.write_inline(b.data(8), b.key, b"second", SIGNALED);
    let db = producer_doorbell(&a, 0);
    ring_with(&mut a, 0x800, &db);
    assert_eq!(completed(&a.drain_send()), vec![(REQ, 0), (REQ, 1)]);
    assert_eq!(
        (b.read_data(0, 5), b.read_data(8, 6)),
        (b"first".to_vec(), b"second".to_vec())
    );
    // GDAKI shifts a 64-bit producer, so past 65535 BBs its high bits land in opmod: ignored.
    a.write_inline(b.data(16), b.key, b"third", SIGNALED);
    let db = producer_doorbell(&a, 1);
    ring_with(&mut a, 0x900, &db);
    assert_eq!(completed(&a.drain_send()), vec![(REQ, 2)]);
    assert_eq!(b.read_data(16, 5), b"third");
    assert_eq!(doorbell_counts(&a), [2, 0, 0, 0, 0]);
}

#[test]
fn doorbell_with_the_last_wqe_of_a_batch_runs_the_batch() {
    let (_f, mut a, b) = pair();
    a.write_inline(b.data(0), b.key, b"one", SIGNALED);
    a.post_op(
        WRITE,
        0,
        SIGNALED,
        0,
        &[raddr_seg(b.data(8), b.key), inline_seg(&[7; 100])],
    );
    a.ring();
    assert_eq!(completed(&a.drain_send()), vec![(REQ, 0), (REQ, 1)]);
    assert_eq!(b.read_data(8, 100), vec![7; 100]);
    assert_eq!(doorbell_counts(&a), [1, 0, 0, 0, 0]);
}

#[test]
fn doorbell_naming_the_first_wqe_of_a_batch_runs_to_the_record_and_is_counted() {
    let (_f, mut a, b) = pair();
    let first = a.write_inline(b.data(0), b.key, b"one", SIGNALED);
    a.write_inline(b.data(8), b.key, b"two", SIGNALED);
    let db = a.mem.read(SQ + first as usize * 64, 8);
    ring_with(&mut a, 0x800, &db);
    assert_eq!(completed(&a.drain_send()), vec![(REQ, 0), (REQ, 1)]);
    assert_eq!(b.read_data(8, 3), b"two");
    assert_eq!(doorbell_counts(&a), [1, 0, 1, 0, 1]);
}

#[test]
fn doorbell_ahead_of_the_record_runs_only_what_the_record_names() {
    let (_f, mut a, b) = pair();
    a.write_inline(b.data(0), b.key, b"one", SIGNALED);
    let covered = a.sq_pi;
    a.write_inline(b.data(8), b.key, b"two", SIGNALED);
    a.mem.put_be32(DBREC + 4, covered as u32);
    let db = a.mem.read(SQ + a.last_wqe as usize * 64, 8);
    a.nic.mmio_write(a.qp.uar, 0x800, &db);
    assert_eq!(completed(&a.drain_send()), vec![(REQ, 0)]);
    assert_eq!(b.read_data(8, 3), vec![0; 3]);
    assert_eq!(a.nic.stats().ambiguous_doorbells, 1);
    a.ring();
    assert_eq!(completed(&a.drain_send()), vec![(REQ, 1)]);
    assert_eq!(b.read_data(8, 3), b"two");
    assert_eq!(a.nic.stats().ambiguous_doorbells, 1);
}

#[test]
fn blueflame_copy_larger_than_the_half_is_dropped() {
    let cfg = NicConfig {
        bf_size: 64,
        ..NicConfig::default()
    };
    let (_f, mut a, b) = pair_with(Cfg::default(), Conn::default(), cfg);
    // 96 bytes: chunk 0 announces more than the 64-byte half; chunk 1 lands at the start of
    // the other half, where its bytes (inline payload, ds 0) are no WQE either.
    a.write_inline(b.data(0), b.key, &[0; 60], SIGNALED);
    a.ring_bf();
    let s = a.nic.stats();
    assert_eq!((s.bf_writes, s.bf_incomplete, s.doorbells), (2, 2, 0));
    assert!(a.poll_send().is_none());
    // The 8-byte doorbell on the next half executes it from the ring.
    a.ring();
    assert_eq!(a.poll_send().unwrap().opcode, REQ);
    assert_eq!(a.nic.stats().bf_used, 0);
}

#[test]
fn send_queue_wraps_with_multi_bb_wqes() {
    let cfg = Cfg {
        log_sq: 2,
        ..Cfg::default()
    };
    let (_f, mut a, b) = pair_with(cfg, Conn::default(), NicConfig::default());
    let mut want = Vec::new();
    for i in 0..40u8 {
        // Alternate 1-BB and 2-BB WQEs so that 2-BB WQEs straddle the ring end.
        let len = if i % 2 == 0 { 8 } else { 60 };
        let payload = vec![i; len];
        let idx = a.write_inline(b.data(i as usize * 64), b.key, &payload, SIGNALED);
        want.push(idx);
        if i % 3 == 0 {
            a.ring_bf();
        } else {
            a.ring();
        }
        let c = a.poll_send().unwrap();
        assert_eq!((c.opcode, c.wqe_counter), (REQ, idx));
        assert_eq!(b.read_data(i as usize * 64, len), payload);
    }
    assert_eq!(a.nic.stats().bf_mismatch, 0);
}

#[test]
fn sixteen_bit_counters_wrap() {
    let (_f, mut a, _b) = pair();
    // 1100 batches of 64 one-BB WQEs: the BB counter passes 65535.
    for batch in 0..1100u32 {
        for i in 0..64 {
            let flags = if i == 63 { SIGNALED } else { 0 };
            a.post_op(NOP, 0, flags, 0, &[]);
        }
        a.ring();
        let c = a.poll_send().unwrap();
        assert_eq!(c.wqe_counter, ((batch * 64 + 63) & 0xffff) as u16);
    }
}

#[test]
fn receive_queue_and_cq_wrap() {
    let cfg = Cfg {
        log_rq: 1,
        log_cq: 1,
        ..Cfg::default()
    };
    let (_f, mut a, mut b) = pair_with(cfg, Conn::default(), NicConfig::default());
    for i in 0..9u16 {
        b.recv_at(0x100 * i as usize, 64);
        a.post_op(SEND, 0, SIGNALED, 0, &[inline_seg(&[i as u8; 3])]);
        a.ring();
        let r = b.poll_recv().unwrap();
        assert_eq!((r.opcode, r.wqe_counter), (RESP_SEND, i));
        assert_eq!(b.read_data(0x100 * i as usize, 3), vec![i as u8; 3]);
        assert_eq!(a.poll_send().unwrap().opcode, REQ);
    }
}

#[test]
fn armed_cq_raises_one_event() {
    let (_f, mut a, b) = pair();
    a.arm(false, 0, false);
    assert_eq!(a.nic.poll_event(), None);
    a.write_inline(b.data(0), b.key, b"x", SIGNALED);
    a.ring();
    assert_eq!(
        a.nic.poll_event(),
        Some(Event::Completion { cqn: a.scq.cqn })
    );
    a.write_inline(b.data(0), b.key, b"x", SIGNALED);
    a.ring();
    assert_eq!(a.nic.poll_event(), None, "one event per arm");
    // The event was consumed: sn 1. CQEs already past the armed consumer index: fires at once.
    a.arm(false, 1, false);
    assert_eq!(
        a.nic.wait_event(Duration::ZERO),
        Some(Event::Completion { cqn: a.scq.cqn })
    );
    let s = a.nic.stats();
    assert_eq!(
        (s.events, s.arms, s.stale_arms, s.arm_dbrec_mismatch),
        (2, 2, 0, 0)
    );
}

#[test]
fn arm_with_the_sn_of_an_answered_arm_is_stale() {
    let (_f, mut a, b) = pair();
    a.arm(false, 2, false);
    a.write_inline(b.data(0), b.key, b"x", SIGNALED);
    a.ring();
    assert_eq!(
        a.nic.poll_event(),
        Some(Event::Completion { cqn: a.scq.cqn })
    );
    // The driver re-arms without having consumed the event (sn not advanced): ignored,
    // even though an unpolled CQE would otherwise fire it at once.
    a.arm(false, 2, false);
    a.write_inline(b.data(8), b.key, b"y", SIGNALED);
    a.ring();
    assert_eq!(a.nic.poll_event(), None);
    assert_eq!((a.nic.stats().stale_arms, a.nic.stats().arms), (1, 1));
    // With the next sn (2-bit, wrapping) arms are accepted again.
    for (i, sn) in [3, 0].into_iter().enumerate() {
        a.drain_send();
        a.arm(false, sn, false);
        a.write_inline(b.data(16 + 8 * i), b.key, b"z", SIGNALED);
        a.ring();
        assert_eq!(
            a.nic.poll_event(),
            Some(Event::Completion { cqn: a.scq.cqn })
        );
    }
}

#[test]
fn arm_word_differing_from_the_record_is_counted() {
    let (_f, mut a, _b) = pair();
    a.arm(false, 0, false);
    // An arm MMIO without the record update (the record still holds the previous word).
    let mut b = (1u32 << 28).to_be_bytes().to_vec();
    b.extend_from_slice(&a.scq.cqn.to_be_bytes());
    a.nic.mmio_write(a.scq.uar, 0x20, &b);
    let s = a.nic.stats();
    assert_eq!((s.arms, s.arm_dbrec_mismatch), (2, 1));
}

#[test]
fn solicited_arm_ignores_unsolicited_receives() {
    let (_f, mut a, mut b) = pair();
    b.recv_at(0, 16);
    b.recv_at(16, 16);
    b.arm(true, 0, true);
    for flags in [0, SOLICITED] {
        a.post_op(SEND, 0, flags, 0, &[inline_seg(b"s")]);
        a.ring();
        if flags == 0 {
            assert_eq!(b.nic.poll_event(), None);
        }
    }
    assert_eq!(
        b.nic.poll_event(),
        Some(Event::Completion { cqn: b.rcq.cqn })
    );
    assert!(b.drain_recv()[1].se);
}

#[test]
fn solicited_arm_fires_on_an_error_cqe() {
    let (_f, mut a, _b) = pair();
    a.recv_at(0, 16);
    a.arm(true, 0, true);
    a.nic.modify_qp(a.qp.qpn, &QpTransition::Err).unwrap();
    assert_eq!(
        a.nic.poll_event(),
        Some(Event::Completion { cqn: a.rcq.cqn })
    );
    assert_eq!(a.poll_recv().unwrap().opcode, RESP_ERR);
}

#[test]
fn cq_overrun_is_reported_and_stops_the_cq() {
    let (_f, mut a, b) = pair();
    a.nic.shrink_cq(a.scq.cqn, 1).unwrap();
    a.nic.set_tlp_trace(true);
    for i in 0..3 {
        a.write_inline(b.data(i * 8), b.key, b"x", SIGNALED);
        a.ring();
    }
    // Each asynchronous event is an EQE and an MSI-X write on the link, of no QP.
    let events: Vec<_> = a
        .nic
        .take_tlps()
        .iter()
        .filter(|t| matches!(t.purpose, Purpose::Eqe | Purpose::Msix))
        .map(|t| (t.purpose, t.payload, t.qpn))
        .collect();
    assert_eq!(
        events,
        [
            (Purpose::Eqe, 64, None),
            (Purpose::Msix, 4, None),
            (Purpose::Eqe, 64, None),
            (Purpose::Msix, 4, None)
        ]
    );
    // Asynchronous events, on their own queue: no completion event.
    assert_eq!(
        a.nic.poll_async_event(),
        Some(AsyncEvent::CqError { cqn: a.scq.cqn })
    );
    assert_eq!(
        a.nic.poll_async_event(),
        Some(AsyncEvent::QpFatal { qpn: a.qp.qpn })
    );
    assert_eq!(a.nic.poll_async_event(), None);
    assert_eq!(a.nic.poll_event(), None);
    assert_eq!(a.state(), QpState::Err);
    let s = a.nic.stats();
    assert_eq!((s.cqes, s.cqes_dropped), (2, 1));
}

#[test]
fn a_waiter_on_another_thread_wakes_for_the_cq_error() {
    let (_f, mut a, b) = pair();
    a.nic.shrink_cq(a.scq.cqn, 1).unwrap();
    let nic = a.nic.clone();
    let waiter = std::thread::spawn(move || nic.wait_async_event(Duration::from_secs(10)));
    for i in 0..3 {
        a.write_inline(b.data(i * 8), b.key, b"x", SIGNALED);
        a.ring();
    }
    let cqn = a.scq.cqn;
    assert_eq!(waiter.join().unwrap(), Some(AsyncEvent::CqError { cqn }));
    assert_eq!(
        a.nic.wait_async_event(Duration::ZERO),
        Some(AsyncEvent::QpFatal { qpn: a.qp.qpn })
    );
    assert_eq!(a.nic.wait_async_event(Duration::from_millis(1)), None);
}

#[test]
fn overrun_ignore_overwrites_silently() {
    let cfg = Cfg {
        log_cq: 1,
        overrun_ignore: true,
        ..Cfg::default()
    };
    let (_f, mut a, b) = pair_with(cfg, Conn::default(), NicConfig::default());
    for i in 0..3 {
        a.write_inline(b.data(i * 8), b.key, b"x", SIGNALED);
        a.ring();
    }
    assert_eq!(a.nic.poll_event(), None);
    assert_eq!(a.nic.poll_async_event(), None);
    assert_eq!(a.nic.stats().cqes, 3);
}

#[test]
fn delayed_cqes_appear_on_progress() {
    let (_f, mut a, b) = pair();
    a.nic.inject(Fault::DelayCqes(true));
    a.write_inline(b.data(0), b.key, b"x", SIGNALED);
    a.ring();
    assert_eq!(b.read_data(0, 1), b"x", "payload is not delayed");
    assert!(a.poll_send().is_none());
    assert_eq!(a.nic.progress(), 1);
    assert_eq!(a.poll_send().unwrap().opcode, REQ);
}

#[test]
fn reset_clears_queue_counters() {
    let (_f, mut a, mut b) = pair();
    a.write_inline(b.data(0), b.key, b"x", SIGNALED);
    a.ring();
    a.poll_send().unwrap();
    for s in [&mut a, &mut b] {
        for t in [QpTransition::Err, QpTransition::Reset] {
            s.nic.modify_qp(s.qp.qpn, &t).unwrap();
        }
        s.mem.put_be32(DBREC, 0);
        s.mem.put_be32(DBREC + 4, 0);
        s.sq_pi = 0;
    }
    // PSNs restart from the connection parameters on both sides.
    connect_one(&a, &b, Conn::default());
    connect_one(&b, &a, Conn::default());
    let idx = a.write_inline(b.data(8), b.key, b"y", SIGNALED);
    a.ring();
    let c = a.poll_send().unwrap();
    assert_eq!((c.opcode, c.wqe_counter, idx), (REQ, 0, 0));
    assert_eq!(b.read_data(8, 1), b"y");
}

#[test]
fn object_lifetimes_and_transitions() {
    let f = Fabric::new();
    let nic = Nic::new(&f, NicConfig::default());
    let s = Side::new(&nic, Cfg::default());
    assert_eq!(nic.dealloc_pd(s.pd), Err(mlx5_hw::HwError::Busy));
    assert_eq!(nic.destroy_cq(s.scq.cqn), Err(mlx5_hw::HwError::Busy));
    assert_eq!(
        nic.modify_qp(
            s.qp.qpn,
            &QpTransition::Rts {
                sq_psn: 0,
                timeout: 0,
                retry_cnt: 0,
                rnr_retry: 0,
                max_rd_atomic: 0
            }
        ),
        Err(mlx5_hw::HwError::InvalidTransition)
    );
    nic.destroy_qp(s.qp.qpn).unwrap();
    assert_eq!(nic.qp_state(s.qp.qpn), Err(mlx5_hw::HwError::NoSuchObject));
    nic.destroy_cq(s.scq.cqn).unwrap();
    nic.destroy_cq(s.rcq.cqn).unwrap();
    nic.dereg_mr(s.key).unwrap();
    assert_eq!(nic.dereg_mr(s.key), Err(mlx5_hw::HwError::NoSuchObject));
    nic.dealloc_pd(s.pd).unwrap();
    // Keys are not reused at once and never 0x100.
    let pd = nic.alloc_pd();
    let addr = s.mem.addr(DATA);
    // SAFETY: `s.mem` is alive until the end of the test; the key is deregistered first.
    let k2 = unsafe { nic.reg_mr(pd, addr, 64, all_access()) }.unwrap();
    assert_ne!(k2, s.key);
    assert_ne!(k2, 0x100);
    nic.dereg_mr(k2).unwrap();
}

#[test]
fn a_deferred_doorbell_runs_on_progress_and_gathers_then() {
    let (_f, mut a, b) = pair();
    a.nic.inject(Fault::DeferExecution(true));
    a.write_data(0, b"old!");
    let gather = data_seg(4, a.key, a.data(0));
    a.post_op(
        WRITE,
        0,
        SIGNALED,
        0,
        &[raddr_seg(b.data(0), b.key), gather],
    );
    a.ring();
    assert_eq!(a.nic.stats().doorbells, 1);
    assert!(a.poll_send().is_none());
    assert_eq!(b.read_data(0, 4), vec![0; 4], "nothing ran yet");
    // Reused before its completion: the NIC gathers what is there when it runs.
    a.write_data(0, b"new!");
    assert_eq!(a.nic.progress(), 1);
    assert_eq!(completed(&a.drain_send()), vec![(REQ, 0)]);
    assert_eq!(b.read_data(0, 4), b"new!");
    assert_eq!(a.nic.progress(), 0);
    assert_eq!(doorbell_counts(&a), [1, 0, 0, 0, 0]);
}

/// Deferred doorbells keep their snapshot per ring slot across wraps of the 64-block ring.
#[test]
fn deferred_doorbells_wrap_the_ring() {
    let (_f, mut a, b) = pair();
    a.nic.inject(Fault::DeferExecution(true));
    for i in 0..70u16 {
        a.write_inline(b.data(0), b.key, &i.to_be_bytes(), SIGNALED);
        a.ring();
        assert_eq!(a.nic.progress(), 1);
        assert_eq!(completed(&a.drain_send()), [(REQ, i)]);
        assert_eq!(b.read_data(0, 2), i.to_be_bytes());
    }
    assert_eq!(a.nic.stats().ring_overwritten, 0);
}

/// Work deferred on a QP that leaves RTS before it runs is flushed with the QP, and no
/// later `progress()` runs it.
#[test]
fn deferred_work_of_a_qp_moved_to_err_is_flushed_not_run() {
    let (_f, mut a, b) = pair();
    a.nic.inject(Fault::DeferExecution(true));
    a.write_inline(b.data(0), b.key, b"never", SIGNALED);
    a.ring();
    a.nic.modify_qp(a.qp.qpn, &QpTransition::Err).unwrap();
    assert_eq!(completed(&a.drain_send()), [(REQ_ERR, 0)]);
    assert_eq!(a.nic.progress(), 0, "nothing left to run");
    assert_eq!(b.read_data(0, 5), [0; 5]);
}

#[test]
fn a_ring_slot_overwritten_before_a_deferred_run_is_counted() {
    let (_f, mut a, b) = pair();
    a.nic.inject(Fault::DeferExecution(true));
    a.write_inline(b.data(0), b.key, b"one", SIGNALED);
    a.ring();
    a.write_inline(b.data(8), b.key, b"two", SIGNALED);
    a.ring();
    // The first WQE's inline payload changes in the ring after its doorbell.
    a.mem.write(SQ + 36, b"ONE");
    assert_eq!(a.nic.progress(), 1);
    assert_eq!(completed(&a.drain_send()), vec![(REQ, 0), (REQ, 1)]);
    assert_eq!(
        (b.read_data(0, 3), b.read_data(8, 3)),
        (b"ONE".to_vec(), b"two".to_vec())
    );
    assert_eq!(a.nic.stats().ring_overwritten, 1);
    assert_eq!(doorbell_counts(&a)[4], 1, "an Unknown-class driver bug");
}

/// A deferred run that stalls (RNR) leaves its copies for the run that takes the work up
/// again: a WQE overwritten during the wait is counted when the retry reads it.
#[test]
fn a_ring_slot_overwritten_during_a_deferred_runs_rnr_wait_is_counted() {
    let (_f, mut a, mut b) = pair();
    a.nic.inject(Fault::DeferExecution(true));
    a.post_op(SEND, 0, SIGNALED, 0, &[inline_seg(b"late")]);
    a.ring();
    a.write_inline(b.data(0x100), b.key, b"after", SIGNALED);
    a.ring();
    assert_eq!(a.nic.progress(), 2, "the deferred run and one retry step");
    assert_eq!(
        b.nic.stats().rnr_naks,
        2,
        "the SEND found no receive, twice"
    );
    // The WRITE's inline payload changes in the ring while the SEND waits.
    a.mem.write(SQ + 64 + 36, b"AFTER");
    b.recv_at(0, 16);
    assert_eq!(a.nic.progress(), 1, "the retry");
    assert_eq!(completed(&a.drain_send()), vec![(REQ, 0), (REQ, 1)]);
    assert_eq!(b.read_data(0x100, 5), b"AFTER");
    assert_eq!(a.nic.stats().ring_overwritten, 1);
    // The copies are used up: the same slots posted again later are not compared.
    a.nic.inject(Fault::DeferExecution(false));
    a.write_inline(b.data(0x200), b.key, b"fresh", SIGNALED);
    a.ring();
    assert_eq!(completed(&a.drain_send()), vec![(REQ, 2)]);
    assert_eq!(a.nic.stats().ring_overwritten, 1);
}

#[test]
fn a_deferred_blueflame_doorbell_executes_the_copy_it_carried() {
    let (_f, mut a, b) = pair();
    a.nic.inject(Fault::DeferExecution(true));
    a.write_inline(b.data(0), b.key, b"bf", SIGNALED);
    a.ring_bf();
    a.write_inline(b.data(8), b.key, b"db", SIGNALED);
    a.ring();
    assert_eq!(a.nic.progress(), 1);
    assert_eq!(completed(&a.drain_send()), vec![(REQ, 0), (REQ, 1)]);
    assert_eq!(
        (b.read_data(0, 2), b.read_data(8, 2)),
        (b"bf".to_vec(), b"db".to_vec())
    );
    let s = a.nic.stats();
    assert_eq!((s.bf_used, s.bf_mismatch, s.ring_overwritten), (1, 0, 0));
    a.nic.inject(Fault::DeferExecution(false));
    a.write_inline(b.data(16), b.key, b"now", SIGNALED);
    a.ring();
    assert_eq!(
        completed(&a.drain_send()),
        vec![(REQ, 2)],
        "synchronous again"
    );
}

/// A completion channel lives while a CQ uses it (`ibv_create_comp_channel(3)`: destroying
/// it fails while CQs are associated with it); a CQ cannot name a channel that does not
/// exist; a destroyed channel is gone.
#[test]
fn a_channel_outlives_its_cqs_and_only_live_channels_are_named() {
    let nic = Nic::new(&Fabric::new(), NicConfig::default());
    let mem = Mem::new(8192);
    let ch = nic.create_channel().unwrap();
    let params = |channel| CqParams {
        buf: mem.addr(0),
        log_cqe_cnt: 4,
        cqe_size: 64,
        dbrec: mem.addr(4096),
        overrun_ignore: false,
        channel: Some(channel),
        compression: None,
    };
    // SAFETY: the buffer and record live in `mem`, which outlives the CQ.
    assert_eq!(
        unsafe { nic.create_cq(&params(ch + 1)) },
        Err(HwError::NoSuchObject)
    );
    // SAFETY: as above.
    let cq = unsafe { nic.create_cq(&params(ch)) }.unwrap();
    assert!(nic.channel_fd(ch).is_ok());
    assert_eq!(nic.poll_channel(ch), Ok(None));
    assert_eq!(nic.destroy_channel(ch), Err(HwError::Busy));
    nic.destroy_cq(cq.cqn).unwrap();
    assert_eq!(nic.destroy_channel(ch), Ok(()));
    assert_eq!(nic.poll_channel(ch), Err(HwError::NoSuchObject));
}

/// A doorbell on a QP in RESET is not taken (counted bad, nothing fetched); on a QP in ERR
/// it is taken (counted) and flushes what the record announces.
#[test]
fn doorbells_on_a_reset_and_an_errored_qp() {
    let (_f, mut a, b) = pair();
    a.nic.modify_qp(a.qp.qpn, &QpTransition::Err).unwrap();
    a.write_inline(b.data(0), b.key, b"x", SIGNALED);
    a.ring();
    assert_eq!(doorbell_counts(&a)[..2], [1, 0]);
    let c = a.poll_send().unwrap();
    // IBV_WC_WR_FLUSH_ERR (0x05).
    assert_eq!((c.opcode, c.syndrome), (REQ_ERR, 0x05));
    a.nic.modify_qp(a.qp.qpn, &QpTransition::Reset).unwrap();
    a.write_inline(b.data(0), b.key, b"y", SIGNALED);
    a.ring();
    assert_eq!(doorbell_counts(&a)[..2], [1, 1]);
    assert!(a.poll_send().is_none());
}

/// A BlueFlame copy is used only when the WQE it carries lies in what the doorbell record
/// announces beyond what was fetched: a copy of a WQE already executed, or of one the
/// record announces only in part, is counted incomplete and the ring is read instead.
#[test]
fn a_blueflame_copy_outside_the_announced_wqes_is_not_used() {
    let (_f, mut a, b) = pair();
    // A copy of WQE 0 (already executed) rung for WQE 1.
    a.write_inline(b.data(0), b.key, b"first", SIGNALED);
    a.ring();
    assert_eq!(a.poll_send().unwrap().wqe_counter, 0);
    let old = a.mem.read(SQ, 64);
    a.write_inline(b.data(8), b.key, b"second", SIGNALED);
    let half = a.qp.bf_offset + a.bf_half;
    ring_with(&mut a, half, &old);
    let s = a.nic.stats();
    assert_eq!((s.bf_used, s.bf_incomplete), (0, 1));
    assert_eq!(completed(&a.drain_send()), [(REQ, 1)]);
    assert_eq!(b.read_data(8, 6), b"second");

    // A two-WQEBB WQE whose first block alone the record announces: its copy is not used.
    let idx = a.write_inline(b.data(16), b.key, &[7; 40], SIGNALED);
    let copy = a.mem.read(SQ + usize::from(idx) * 64, 128);
    a.mem.put_be32(DBREC + 4, u32::from(idx) + 1);
    let half = a.qp.bf_offset + a.bf_half;
    a.nic.mmio_write(a.qp.uar, half, &copy[..64]);
    a.nic.mmio_write(a.qp.uar, half + 64, &copy[64..]);
    let s = a.nic.stats();
    assert_eq!((s.bf_used, s.bf_incomplete), (0, 2));
    // The ring's first block names two: the WQE runs past what the record announces.
    let c = a.poll_send().unwrap();
    assert_eq!((c.opcode, c.wqe_counter, c.syndrome), (REQ_ERR, idx, 0x02));
}
