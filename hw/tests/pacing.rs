//! Per-QP rate limits (docs/model.md, "Rate limits"): the token bucket's schedule on a
//! manual clock (exact counts at exact times, the burst, a late `progress` catching up,
//! an idle QP not saving credit), the limit honoured on the host's clock (bounded by the
//! clock read around each `progress`, not by wall-clock assertions), and what the stack
//! refuses.

mod common;
use common::eth;
use common::ud::{self, QKEY};
use common::*;
use mlx5_hw::{
    Fabric, HwError, Nic, NicConfig, PacingClock, PacketPacing, QpState, QpTransition, RateLimit,
};
use std::sync::Arc;

/// 8 000 kbps: one byte a microsecond.
const BYTE_PER_US: u32 = 8_000;
const US: u64 = 1_000;

/// NICs pacing UD, UC and (a what-if) RC QPs, on `clock`.
fn pacing(clock: PacingClock) -> NicConfig {
    NicConfig {
        packet_pacing: PacketPacing {
            ud: true,
            uc: true,
            rc: true,
            ..PacketPacing::default()
        },
        pacing_clock: clock,
        ..NicConfig::default()
    }
}

/// A UD sender and receiver on two NICs of `cfg`, and the sender's AV to the receiver.
fn ud_pair(cfg: NicConfig) -> (Arc<Fabric>, Side, Side, Vec<u8>) {
    let f = Fabric::new();
    let (na, nb) = (Nic::new(&f, cfg.clone()), Nic::new(&f, cfg));
    let a = ud::side(&na);
    let b = ud::side(&nb);
    let av = ud::av(&a, nb.lid(), None, b.qp.qpn, QKEY);
    (f, a, b, av)
}

/// Post `n` signaled datagrams of `len` bytes (one pointer segment each) and ring once.
fn post(a: &mut Side, av: &[u8], n: usize, len: u32) {
    let src = a.data(0);
    for _ in 0..n {
        a.post_op(
            SEND,
            0,
            SIGNALED,
            0,
            &[av.to_vec(), data_seg(len, a.key, src)],
        );
    }
    a.ring();
}

fn limit(kbps: u32, burst: u32) -> RateLimit {
    RateLimit {
        kbps,
        max_burst_sz: burst,
        typical_pkt_sz: 0,
    }
}

#[test]
fn datagrams_leave_at_the_limit_and_a_late_progress_catches_up() {
    let (_f, mut a, _b, av) = ud_pair(pacing(PacingClock::Manual));
    let nic = a.nic.clone();
    nic.modify_qp_rate_limit(a.qp.qpn, &limit(BYTE_PER_US, 0))
        .unwrap();
    assert_eq!(nic.qp_rate_limit(a.qp.qpn).unwrap(), limit(BYTE_PER_US, 0));
    // Ten 1000-byte datagrams: one every millisecond, the first at once.
    post(&mut a, &av, 10, 1000);
    let mut done = a.drain_send().len();
    assert_eq!(done, 1);
    assert_eq!(nic.stats().paced_waits, 1);
    // (time advanced by, datagrams completed by then)
    for (step, total) in [
        (999 * US, 1),
        (US, 2),
        // Late by 2.5 ms: the three whose time has come leave, the schedule kept.
        (3_500 * US, 5),
        (499 * US, 5),
        (501 * US, 6),
        (10_000 * US, 10),
    ] {
        nic.advance_pacing_clock(step).unwrap();
        nic.progress();
        done += a.drain_send().len();
        assert_eq!(done, total, "at {} us", nic.pacing_clock() / US);
    }
    assert_eq!(nic.stats().packets, 10);
    assert_eq!(nic.progress(), 0, "nothing left to pace");
}

#[test]
fn a_burst_leaves_at_once_and_an_idle_qp_saves_no_more() {
    let (_f, mut a, _b, av) = ud_pair(pacing(PacingClock::Manual));
    let nic = a.nic.clone();
    // 3000 bytes of burst: the bucket's three datagrams and the one that empties it leave
    // at once, then one a millisecond.
    nic.modify_qp_rate_limit(a.qp.qpn, &limit(BYTE_PER_US, 3000))
        .unwrap();
    post(&mut a, &av, 6, 1000);
    assert_eq!(a.drain_send().len(), 4);
    nic.advance_pacing_clock(1_000 * US).unwrap();
    nic.progress();
    assert_eq!(a.drain_send().len(), 1);
    nic.advance_pacing_clock(1_000 * US).unwrap();
    nic.progress();
    assert_eq!(a.drain_send().len(), 1);
    // A second idle: the bucket is full again, no fuller.
    nic.advance_pacing_clock(1_000_000 * US).unwrap();
    post(&mut a, &av, 6, 1000);
    assert_eq!(a.drain_send().len(), 4);
}

#[test]
fn uc_messages_are_charged_every_packet() {
    let cfg = pacing(PacingClock::Manual);
    let f = Fabric::new();
    let (na, nb) = (Nic::new(&f, cfg.clone()), Nic::new(&f, cfg));
    let uc = Cfg {
        transport: mlx5_hw::Transport::Uc,
        ..Cfg::default()
    };
    let (mut a, b) = (Side::new(&na, uc), Side::new(&nb, uc));
    connect_uc(&a, &b);
    na.modify_qp_rate_limit(a.qp.qpn, &limit(BYTE_PER_US, 0))
        .unwrap();
    // WRITEs of 3000 bytes (three packets of 1024, 1024, 952): one each 3 ms.
    let (src, dst) = (a.data(0), b.data(0));
    for _ in 0..3 {
        a.post_op(
            WRITE,
            0,
            SIGNALED,
            0,
            &[raddr_seg(dst, b.key), data_seg(3000, a.key, src)],
        );
    }
    a.ring();
    assert_eq!(a.drain_send().len(), 1);
    na.advance_pacing_clock(2_999 * US).unwrap();
    na.progress();
    assert_eq!(a.drain_send().len(), 0);
    na.advance_pacing_clock(US).unwrap();
    na.progress();
    assert_eq!(a.drain_send().len(), 1);
    assert_eq!(na.stats().packets, 6);
}

#[test]
fn on_the_hosts_clock_every_progress_finds_the_schedule_and_never_more() {
    let (_f, mut a, _b, av) = ud_pair(pacing(PacingClock::Host));
    let nic = a.nic.clone();
    // 80 000 kbps, 1000-byte datagrams: one every 100 us.
    let period = 100 * US;
    nic.modify_qp_rate_limit(a.qp.qpn, &limit(80_000, 0))
        .unwrap();
    let n = 20;
    let before = nic.pacing_clock();
    post(&mut a, &av, n, 1000);
    let after = nic.pacing_clock();
    // Datagrams due by pacing-clock time `t` for a doorbell at `db`: the first at once.
    let due = |t: u64, db: u64| (t.saturating_sub(db) / period + 1).min(n as u64);
    let mut done = a.drain_send().len() as u64;
    let mut end = after;
    while done < n as u64 {
        let t0 = nic.pacing_clock();
        nic.progress();
        let t1 = nic.pacing_clock();
        done += a.drain_send().len() as u64;
        // Everything due when `progress` began has left, nothing not due when it ended.
        assert!(
            due(t0, after) <= done && done <= due(t1, before),
            "{done} at {t0}..{t1} ns"
        );
        end = t1;
    }
    // The last left no earlier than its slot: the limit held over real time.
    assert!(end - before >= (n as u64 - 1) * period);
}

#[test]
fn a_paced_rc_qp_keeps_off_the_fast_path() {
    let (_f, mut a, b) = pair_with(Cfg::default(), Conn::default(), pacing(PacingClock::Manual));
    let dst = b.data(0);
    a.write_inline(dst, b.key, b"fast", SIGNALED);
    a.ring();
    assert_eq!(a.nic.fast_path_wqes(), 1);
    a.nic
        .modify_qp_rate_limit(a.qp.qpn, &limit(BYTE_PER_US, 0))
        .unwrap();
    for _ in 0..2 {
        a.write_inline(dst, b.key, b"paced", SIGNALED);
    }
    a.ring();
    assert_eq!(
        a.drain_send().len(),
        2,
        "the earlier WQE and the first paced one"
    );
    assert_eq!(a.nic.fast_path_wqes(), 1);
    // 5 bytes at a byte a microsecond.
    a.nic.advance_pacing_clock(5 * US).unwrap();
    a.nic.progress();
    assert_eq!(a.drain_send().len(), 1);
    a.nic.modify_qp_rate_limit(a.qp.qpn, &limit(0, 0)).unwrap();
    a.write_inline(dst, b.key, b"fast", SIGNALED);
    a.ring();
    assert_eq!(a.nic.fast_path_wqes(), 2, "unpaced: the fast path again");
}

#[test]
fn a_new_limit_applies_at_once_to_a_waiting_qp() {
    let (_f, mut a, _b, av) = ud_pair(pacing(PacingClock::Manual));
    let nic = a.nic.clone();
    nic.modify_qp_rate_limit(a.qp.qpn, &limit(1, 0)).unwrap();
    post(&mut a, &av, 3, 1000);
    assert_eq!(a.drain_send().len(), 1, "the rest waits 8 s each");
    nic.modify_qp_rate_limit(a.qp.qpn, &limit(0, 0)).unwrap();
    assert_eq!(a.drain_send().len(), 2);
    assert_eq!(nic.qp_rate_limit(a.qp.qpn).unwrap(), limit(0, 0));
}

#[test]
fn rate_limits_are_refused_outside_the_caps() {
    let cfg = NicConfig {
        packet_pacing: PacketPacing {
            min_kbps: 1_000,
            max_kbps: 1_000_000,
            rates: 2,
            ud: true,
            ..PacketPacing::default()
        },
        ..NicConfig::default()
    };
    let f = Fabric::new();
    let nic = Nic::new(&f, cfg);
    let [u1, u2, u3] = [(); 3].map(|_| ud::side(&nic));
    let set = |s: &Side, l: RateLimit| nic.modify_qp_rate_limit(s.qp.qpn, &l);
    let invalid = |r: Result<(), HwError>| matches!(r, Err(HwError::InvalidParam(_)));
    assert!(invalid(set(&u1, limit(999, 0))), "below qp_rate_limit_min");
    assert!(
        invalid(set(&u1, limit(1_000_001, 0))),
        "above qp_rate_limit_max"
    );
    assert!(invalid(set(&u1, limit(0, 4096))), "a burst without a rate");
    assert!(invalid(set(
        &u1,
        RateLimit {
            kbps: 0,
            max_burst_sz: 0,
            typical_pkt_sz: 1024
        }
    )));
    set(&u1, limit(1_000, 0)).unwrap();
    set(&u2, limit(2_000, 0)).unwrap();
    assert_eq!(
        set(&u3, limit(3_000, 0)),
        Err(HwError::OutOfResources),
        "a third distinct rate"
    );
    set(&u3, limit(2_000, 0)).unwrap();
    // The new limit is added before the old is released (mlx5_rl_add_rate then remove).
    assert_eq!(set(&u1, limit(3_000, 0)), Err(HwError::OutOfResources));
    set(&u1, limit(0, 0)).unwrap();
    set(&u1, limit(3_000, 0)).unwrap();
    // ERR and RESET release a QP's limit.
    nic.modify_qp(u1.qp.qpn, &QpTransition::Err).unwrap();
    assert_eq!(nic.qp_rate_limit(u1.qp.qpn).unwrap(), limit(0, 0));
    assert_eq!(set(&u1, limit(1_000, 0)), Err(HwError::InvalidTransition));
    assert_eq!(u1.state(), QpState::Err);

    // Not in RTS; not a pacing transport; no pacing; no burst caps; the host clock.
    let fresh = Side::new(
        &nic,
        Cfg {
            transport: mlx5_hw::Transport::Ud,
            ..Cfg::default()
        },
    );
    assert_eq!(
        set(&fresh, limit(1_000, 0)),
        Err(HwError::InvalidTransition)
    );
    let (_g, rc, _) = pair();
    let unsupported = |r: Result<(), HwError>| matches!(r, Err(HwError::NotSupported(_)));
    assert!(unsupported(
        rc.nic.modify_qp_rate_limit(rc.qp.qpn, &limit(1_000, 0))
    ));
    let (_h, ud_default, _, _) = ud_pair(NicConfig::default());
    assert!(unsupported(
        ud_default
            .nic
            .modify_qp_rate_limit(ud_default.qp.qpn, &limit(1_000, 0))
    ));
    let no_burst = NicConfig {
        packet_pacing: PacketPacing {
            burst: false,
            ud: true,
            ..PacketPacing::default()
        },
        ..NicConfig::default()
    };
    let (_i, nb, _, _) = ud_pair(no_burst);
    assert!(invalid(
        nb.nic.modify_qp_rate_limit(nb.qp.qpn, &limit(1_000, 64))
    ));
    assert!(invalid(nic.advance_pacing_clock(1)));
    assert_eq!(nic.caps().packet_pacing.rates, 2);
}

#[test]
fn under_deferred_execution_the_schedule_starts_at_the_progress_that_runs_it() {
    let (_f, mut a, _b, av) = ud_pair(pacing(PacingClock::Manual));
    let nic = a.nic.clone();
    nic.modify_qp_rate_limit(a.qp.qpn, &limit(BYTE_PER_US, 0))
        .unwrap();
    nic.inject(mlx5_hw::Fault::DeferExecution(true));
    post(&mut a, &av, 3, 1000);
    nic.advance_pacing_clock(5_000 * US).unwrap();
    assert_eq!(a.drain_send().len(), 0, "queued by the doorbell");
    // The NIC takes the work up at this progress: the first leaves now, not 5 ms ago.
    nic.progress();
    assert_eq!(a.drain_send().len(), 1);
    nic.advance_pacing_clock(999 * US).unwrap();
    nic.progress();
    assert_eq!(a.drain_send().len(), 0);
    nic.advance_pacing_clock(US).unwrap();
    nic.progress();
    assert_eq!(a.drain_send().len(), 1);
}

/// Raw packet QPs are the one type every mlx5 kernel with pacing names in
/// `supported_qpts` (`mlx5_ib_query_device`): paced with the default caps, which name no
/// UD, UC or RC QP, each frame charged as it leaves (its bytes, headers included).
#[test]
fn raw_frames_leave_at_the_limit_with_the_default_caps() {
    let cfg = NicConfig {
        pacing_clock: PacingClock::Manual,
        ..eth::eth_config()
    };
    assert_eq!(cfg.packet_pacing, PacketPacing::default());
    let f = Fabric::new();
    let (na, nb) = (Nic::new(&f, cfg.clone()), Nic::new(&f, cfg));
    let mut a = eth::Raw::new(&na);
    let _b = eth::Raw::new(&nb);
    let u = ud::side(&na);
    assert!(matches!(
        na.modify_qp_rate_limit(u.qp.qpn, &limit(BYTE_PER_US, 0)),
        Err(HwError::NotSupported(_))
    ));
    na.modify_qp_rate_limit(a.qp.qpn, &limit(BYTE_PER_US, 0))
        .unwrap();
    // Five 1000-byte frames: one every millisecond, the first at once.
    let frame = vec![0x5a; 1000];
    for _ in 0..5 {
        a.send_frame(&frame);
    }
    let mut done = a.drain_send().len();
    assert_eq!(done, 1);
    assert_eq!(na.stats().paced_waits, 1);
    for (step, total) in [(999 * US, 1), (US, 2), (2_000 * US, 4), (10_000 * US, 5)] {
        na.advance_pacing_clock(step).unwrap();
        na.progress();
        done += a.drain_send().len();
        assert_eq!(done, total, "at {} us", na.pacing_clock() / US);
    }
    assert_eq!(na.stats().packets, 0, "frames are not request packets");
}
