//! The device clock: CQE timestamps (bytes 48..56, big-endian), the clock-info page that
//! converts them, a device without a clock.

mod common;

use common::*;
use mlx5_hw::{ClockInfo, ClockShift, NicConfig};

/// A NIC whose clock advances `step` ticks per CQE written.
fn stepped(step: u64) -> NicConfig {
    NicConfig {
        clock_step: step,
        ..NicConfig::default()
    }
}

/// Bytes 48..56 of the send CQE at consumer count `ci` (64-byte CQEs).
fn send_cqe_timestamp(s: &Side, ci: usize) -> [u8; 8] {
    s.mem
        .read(SCQ + ci * 64 + 48, 8)
        .try_into()
        .expect("8 bytes")
}

#[test]
fn every_successful_cqe_carries_the_clock_big_endian() {
    let (_f, mut a, mut b) = pair_with(Cfg::default(), Conn::default(), stepped(1_000));
    let raddr = b.data(0);
    let rkey = b.key;
    for i in 0..3u64 {
        a.write_inline(raddr, rkey, b"tick", SIGNALED);
        a.ring();
        assert_eq!(a.poll_send().map(|c| c.opcode), Some(REQ));
        // The NIC's clock has advanced 1000 per CQE it wrote: 1000, 2000, 3000.
        assert_eq!(
            send_cqe_timestamp(&a, i as usize),
            ((i + 1) * 1_000).to_be_bytes()
        );
    }
    // The receive side's clock is its own: the first CQE it writes carries 1000.
    b.recv_at(0, 64);
    a.post_op(SEND, 0, SIGNALED, 0, &[inline_seg(b"hello")]);
    a.ring();
    let r = b.poll_recv().expect("receive CQE");
    assert_eq!(r.opcode, RESP_SEND);
    assert_eq!(b.mem.read(RCQ + 48, 8), 1_000u64.to_be_bytes());
}

#[test]
fn the_clock_info_page_is_the_kernels_calibration() {
    // The shift of the kernels that introduced the page (`MLX5_CYCLES_SHIFT` 23).
    let old = NicConfig {
        clock_shift: ClockShift::Fixed(23),
        ..stepped(1)
    };
    let (_f, a, _b) = pair_with(Cfg::default(), Conn::default(), old);
    let info = a.nic.clock_info().expect("a clock");
    // clocksource_khz2mult(156250, 23) and CLOCKSOURCE_MASK(41); a stepped clock's page
    // starts at 0 ns at cycle 0.
    assert_eq!(
        info,
        ClockInfo {
            nsec: 0,
            last_cycles: 0,
            frac: 0,
            mult: 53_687_091,
            shift: 23,
            mask: (1 << 41) - 1,
        }
    );
}

#[test]
fn a_host_driven_clock_is_monotonic_and_runs_at_its_rate() {
    let (_f, mut a, b) = pair();
    let (raddr, rkey) = (b.data(0), b.key);
    let mut stamps = Vec::new();
    for i in 0..20 {
        a.write_inline(raddr, rkey, b"t", SIGNALED);
        a.ring();
        a.poll_send().expect("CQE");
        stamps.push(u64::from_be_bytes(send_cqe_timestamp(&a, i)));
        std::thread::sleep(std::time::Duration::from_micros(50));
    }
    assert!(stamps.windows(2).all(|w| w[0] < w[1]), "{stamps:?}");
    // 19 sleeps of at least 50 µs at 156.25 MHz: at least 19 · 50 000 / 6.4 ticks.
    assert!(
        stamps[19] - stamps[0] >= 19 * 50_000 * 10 / 64,
        "{stamps:?}"
    );
}

#[test]
fn a_device_without_a_clock_writes_zero_and_has_no_page() {
    let cfg = NicConfig {
        clock_khz: 0,
        ..NicConfig::default()
    };
    let (_f, mut a, b) = pair_with(Cfg::default(), Conn::default(), cfg);
    assert_eq!(a.nic.clock_info(), None);
    a.write_inline(b.data(0), b.key, b"t", SIGNALED);
    a.ring();
    a.poll_send().expect("CQE");
    assert_eq!(send_cqe_timestamp(&a, 0), [0; 8]);
}
