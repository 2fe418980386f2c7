//! Per-QP rate limits through the driver on the model (`Qp::set_rate_limit`): the limit
//! reaches the model's pacer with every field, UD datagrams leave on its schedule (the
//! model's manual pacing clock, not the host's), raw frames on the same schedule, and the refusals of the driver and of
//! the device.

mod common;

use common::raw;
use common::ud::{send, QKEY};
use common::{bodies, Rig, Side};
use mlx5_direct::backend::sim::hw::{self, PacingClock, PacketPacing};
use mlx5_direct::backend::sim::{EthConfig, Fabric, NicConfig};
use mlx5_direct::{AhAttr, Completion, Data, Error, EthWr, QpConfig, RateLimit, SendOp, Transport};

const US: u64 = 1_000;

/// NICs whose pacer runs on the manual clock and paces UD (the 2026 `packet_pacing_req_ud`
/// cap, off by default).
fn paced() -> (std::sync::Arc<Fabric>, NicConfig) {
    let config = NicConfig {
        pacing_clock: PacingClock::Manual,
        packet_pacing: PacketPacing {
            ud: true,
            ..PacketPacing::default()
        },
        ..NicConfig::default()
    };
    (Fabric::new(), config)
}

fn ud_config() -> QpConfig {
    QpConfig {
        transport: Transport::Ud,
        ..QpConfig::default()
    }
}

/// Completions on `s`'s CQ now, without waiting.
fn done(s: &mut Side) -> usize {
    let mut out = [Completion::default(); 16];
    s.cq.poll(&mut out)
}

/// Completions of `a`'s sends at each step of `nic`'s manual pacing clock when one leaves
/// a millisecond: the first at once, 4 after 3 ms. Returns how many completed.
fn one_a_millisecond(a: &mut Side, nic: &hw::Nic) -> usize {
    let mut sent = done(a);
    assert_eq!(sent, 1);
    for (step, total) in [(999 * US, 1), (US, 2), (2_000 * US, 4)] {
        nic.advance_pacing_clock(step).unwrap();
        nic.progress();
        sent += done(a);
        assert_eq!(sent, total, "at {} us", nic.pacing_clock() / US);
    }
    sent
}

#[test]
fn datagrams_leave_at_the_limit_on_the_models_clock() {
    let rig = paced();
    let (mut a, mut b) = (rig.side(&ud_config()), rig.side(&ud_config()));
    let pacing = a.ctx.caps().pacing;
    assert_eq!(
        (
            pacing.min_kbps,
            pacing.max_kbps,
            pacing.rc,
            pacing.uc,
            pacing.ud
        ),
        (1, 100_000_000, false, false, true)
    );
    a.qp.activate_ud(1, QKEY).unwrap();
    b.qp.activate_ud(1, QKEY).unwrap();
    let nic = a.ctx.backend().nic().clone();
    // 8000 kbit/s: one 1000-byte datagram per millisecond.
    let limit = RateLimit {
        kbps: 8_000,
        max_burst_sz: 0,
        typical_pkt_sz: 1000,
    };
    a.qp.set_rate_limit(&limit).unwrap();
    assert_eq!(
        nic.qp_rate_limit(a.qp.qpn()).unwrap(),
        hw::RateLimit {
            kbps: 8_000,
            max_burst_sz: 0,
            typical_pkt_sz: 1000,
        }
    );
    let ah =
        a.pd.create_ah(&AhAttr::to_lid(1, &b.qp.endpoint().unwrap()))
            .unwrap();
    let sge = [a.mr.sge(0, 1000)];
    for _ in 0..5 {
        let wr = send(Data::Sges(&sge), SendOp::Send);
        a.qp.sq().post_ud(wr, &ah.dest(b.qp.qpn(), QKEY)).unwrap();
    }
    // The first leaves at once, then one a millisecond of the model's clock.
    let sent = one_a_millisecond(&mut a, &nic);
    // Removed: the last one leaves at the next doorbell or progress.
    a.qp.set_rate_limit(&RateLimit::default()).unwrap();
    nic.progress();
    assert_eq!(sent + done(&mut a), 5);
    assert_eq!(nic.stats().packets, 5);
}

#[test]
fn the_driver_and_the_device_refuse_what_the_stack_refuses() {
    // Not in RTS, a burst without a rate, RC (the model's `PacketPacing::rc`, off).
    bodies::rate_limit_refusals(&Fabric::new());
    let rig = paced();
    let mut ud = rig.side(&ud_config());
    let rate = RateLimit {
        kbps: 1_000,
        ..RateLimit::default()
    };
    ud.qp.activate_ud(1, QKEY).unwrap();
    // Above the device's qp_rate_limit_max (100 Gb/s): refused before the device is asked
    // (where the kernel answers EINVAL).
    let too_fast = RateLimit {
        kbps: 100_000_001,
        ..RateLimit::default()
    };
    assert!(matches!(
        ud.qp.set_rate_limit(&too_fast),
        Err(Error::InvalidArgument(_))
    ));
    // A limit the device took, then ERR releases it.
    ud.qp.set_rate_limit(&rate).unwrap();
    let nic = ud.ctx.backend().nic().clone();
    assert_eq!(nic.qp_rate_limit(ud.qp.qpn()).unwrap().kbps, 1_000);
    ud.qp.to_error().unwrap();
    assert_eq!(nic.qp_rate_limit(ud.qp.qpn()).unwrap().kbps, 0);
}

/// Raw packet QPs are paced with the model's default caps (which name no UD, UC or RC
/// QP), as every mlx5 kernel with pacing lists them: the driver asks, the model's pacer
/// spaces the frames, each charged whole (1000 bytes at 8000 kbit/s: one a millisecond).
#[test]
fn raw_frames_are_paced_with_the_default_caps() {
    let fabric = Fabric::new();
    let config = NicConfig {
        pacing_clock: PacingClock::Manual,
        ..raw::eth_nic(EthConfig::default())
    };
    let mut a = raw::raw_side_on(&fabric, config.clone());
    let b = raw::raw_side_on(&fabric, config);
    let pacing = a.ctx.caps().pacing;
    assert_eq!(
        (pacing.raw, pacing.ud, pacing.uc, pacing.rc),
        (true, false, false, false)
    );
    a.qp.set_rate_limit(&RateLimit {
        kbps: 8_000,
        ..RateLimit::default()
    })
    .unwrap();
    let frame = raw::udp_frame(raw::mac(&b), raw::mac(&a), None, 1, 2, &[0x5a; 958], true);
    assert_eq!(frame.len(), 1000);
    a.mr.write(0, &frame);
    let sge = [a.mr.sge(0, 1000)];
    for _ in 0..4 {
        a.qp.sq()
            .post_eth(&EthWr::new(1, &[], Data::Sges(&sge)))
            .unwrap();
    }
    let nic = a.ctx.backend().nic().clone();
    one_a_millisecond(&mut a, &nic);
    assert_eq!(nic.stats().eth.tx_frames, 4);
}
