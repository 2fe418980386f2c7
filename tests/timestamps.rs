//! Hardware timestamps end to end on the model: CQs created with timestamps, the CQE's
//! clock in `Completion::timestamp`, the conversion to nanoseconds with the device's
//! clock-info page (no device access), and the typed refusal on a device without a clock.
#![cfg(feature = "sim")]

mod common;

use mlx5_direct::backend::sim::{ClockShift, Fabric, NicConfig, Sim};
use mlx5_direct::{
    Access, Completion, ConnectOptions, Context, Cq, CqConfig, Data, Error, MemoryRegion, Qp,
    QpConfig, SendFlags, SendOp, Sge, Status, WcOpcode,
};

fn ctx(fabric: &std::sync::Arc<Fabric>, config: NicConfig) -> Context<Sim> {
    Context::new(Sim::on_fabric(fabric, config))
}

const TIMESTAMPS: CqConfig = CqConfig {
    entries: 64,
    cqe_size: 64,
    timestamps: true,
    compression: None,
};

/// Two model NICs of `nic`, each with a CQ of `cq` and a connected RC QP on it, and a region
/// on `b`.
struct Pair {
    a: Context<Sim>,
    cq_a: Cq<Sim>,
    cq_b: Cq<Sim>,
    qp_a: Qp<Sim>,
    qp_b: Qp<Sim>,
    mr_b: MemoryRegion<Sim>,
}

fn pair(nic: NicConfig, cq: &CqConfig) -> Pair {
    let fabric = Fabric::new();
    let (a, b) = (ctx(&fabric, nic.clone()), ctx(&fabric, nic));
    let (pd_a, pd_b) = (a.alloc_pd().unwrap(), b.alloc_pd().unwrap());
    let (cq_a, cq_b) = (a.create_cq_with(cq).unwrap(), b.create_cq_with(cq).unwrap());
    let mut qp_a = pd_a.create_qp(&cq_a, &cq_a, &QpConfig::default()).unwrap();
    let mut qp_b = pd_b.create_qp(&cq_b, &cq_b, &QpConfig::default()).unwrap();
    let mr_b = pd_b.alloc_mr(4096, Access::ALL).unwrap();
    qp_a.connect(&qp_b.endpoint().unwrap(), &ConnectOptions::default())
        .unwrap();
    qp_b.connect(&qp_a.endpoint().unwrap(), &ConnectOptions::default())
        .unwrap();
    Pair {
        a,
        cq_a,
        cq_b,
        qp_a,
        qp_b,
        mr_b,
    }
}

/// A signaled inline WRITE of `qp` into `mr`, and its completion.
fn write_one(qp: &mut Qp<Sim>, cq: &mut Cq<Sim>, mr: &MemoryRegion<Sim>, wr_id: u64) -> Completion {
    qp.sq()
        .post(
            wr_id,
            SendOp::Write(mr.remote(0)),
            Data::Inline(b"ts"),
            SendFlags::SIGNALED,
        )
        .unwrap();
    poll_one(cq)
}

fn poll_one(cq: &mut Cq<Sim>) -> Completion {
    let mut out = [Completion::default(); 2];
    assert_eq!(cq.poll(&mut out), 1);
    out[0]
}

#[test]
fn completions_carry_the_device_clock_and_convert_exactly() {
    // A clock that advances 1000 ticks per CQE: the values are exact.
    // The shift of the kernels that introduced the page (`MLX5_CYCLES_SHIFT` 23).
    let stepped = NicConfig {
        clock_step: 1_000,
        clock_shift: ClockShift::Fixed(23),
        ..NicConfig::default()
    };
    let Pair {
        a,
        mut cq_a,
        mut cq_b,
        mut qp_a,
        mut qp_b,
        mr_b,
    } = pair(stepped, &TIMESTAMPS);

    let mut stamps = Vec::new();
    for i in 0..4 {
        let c = write_one(&mut qp_a, &mut cq_a, &mr_b, i);
        assert_eq!((c.wr_id, c.status), (i, Status::Success));
        stamps.push(c.timestamp());
    }
    assert_eq!(stamps, [1_000, 2_000, 3_000, 4_000]);

    // A receive completion carries the responder's clock (its first CQE: 1000).
    let sge = Sge {
        addr: mr_b.addr(),
        len: 64,
        lkey: mr_b.lkey(),
    };
    qp_b.rq().unwrap().post(77, &[sge]).unwrap();
    qp_a.sq()
        .post(9, SendOp::Send, Data::Inline(b"hello"), SendFlags::SIGNALED)
        .unwrap();
    let r = poll_one(&mut cq_b);
    assert_eq!(
        (r.wr_id, r.opcode, r.timestamp()),
        (77, WcOpcode::Recv, 1_000)
    );
    assert_eq!(poll_one(&mut cq_a).timestamp(), 5_000);

    // The clock-info page of a stepped model clock: 0 ns at cycle 0, 156.25 MHz, shift 23.
    let info = a.clock_info().unwrap();
    assert_eq!(
        (info.nsec, info.last_cycles, info.mult, info.shift),
        (0, 0, 53_687_091, 23)
    );
    // 1000 ticks · 53 687 091 >> 23 = 6 399 ns (6.4 ns a tick, less mult's rounding);
    // 4000 ticks: 25 599 ns.
    assert_eq!(info.to_ns(stamps[0]), 6_399);
    assert_eq!(info.to_ns(stamps[3]), 25_599);
    assert_eq!(info.to_ns(stamps[3]) - info.to_ns(stamps[0]), 19_200);
}

#[test]
fn a_host_driven_clock_converts_to_wall_clock_nanoseconds() {
    // The responder's CQ and QP stay alive (bound, unused) for the whole test.
    let Pair {
        a,
        mut cq_a,
        cq_b: _cq_b,
        mut qp_a,
        qp_b: _qp_b,
        mr_b,
    } = pair(NicConfig::default(), &TIMESTAMPS);
    let wall = || {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos() as u64
    };
    let info = a.clock_info().unwrap();
    let paired = wall();
    let mut last = 0;
    for i in 0..50 {
        let before = wall();
        let c = write_one(&mut qp_a, &mut cq_a, &mr_b, i);
        let after = wall();
        assert!(
            c.timestamp() > last,
            "monotonic: {} after {last}",
            c.timestamp()
        );
        last = c.timestamp();
        // The page pairs the device clock with the wall clock: the CQE's time lies between
        // the post and the poll, give or take a microsecond for the two clocks' rounding and
        // what NTP may slew the wall clock against the monotonic one since the pairing (at
        // most 500 ppm, the kernel's MAXFREQ).
        let ns = info.to_ns(c.timestamp());
        let slack = 1_000 + (after - paired) / 2_000;
        assert!(
            before - slack <= ns && ns <= after + slack,
            "{before} <= {ns} <= {after} (slack {slack})"
        );
    }
}

#[test]
fn timestamps_are_refused_without_a_device_clock() {
    let fabric = Fabric::new();
    let no_clock = ctx(
        &fabric,
        NicConfig {
            clock_khz: 0,
            ..NicConfig::default()
        },
    );
    assert!(matches!(
        no_clock.create_cq_with(&TIMESTAMPS),
        Err(Error::Unsupported(_))
    ));
    assert!(matches!(no_clock.clock_info(), Err(Error::Unsupported(_))));
    // Without timestamps the CQ is created as before.
    assert!(no_clock.create_cq_with(&CqConfig::default()).is_ok());
}

#[test]
fn hw_timestamps_convert_with_the_clock_page() {
    // The body the hardware test runs too (tests/verbs_hw.rs).
    common::bodies::hw_timestamps_convert_with_the_clock_page(&Fabric::new());
}

#[test]
fn cqs_without_timestamps_report_zero() {
    let Pair {
        mut cq_a,
        mut cq_b,
        mut qp_a,
        mut qp_b,
        mr_b,
        ..
    } = pair(NicConfig::default(), &CqConfig::default());
    qp_b.rq().unwrap().post(1, &[mr_b.sge(0, 64)]).unwrap();
    qp_a.sq()
        .post(2, SendOp::Send, Data::Inline(b"x"), SendFlags::SIGNALED)
        .unwrap();
    // The device wrote its clock into both CQEs; a CQ without timestamps does not read it.
    let (s, r) = (poll_one(&mut cq_a), poll_one(&mut cq_b));
    assert_eq!(
        (s.wr_id, s.timestamp(), r.wr_id, r.timestamp()),
        (2, 0, 1, 0)
    );
}

#[test]
fn timestamps_cost_nothing_on_the_link() {
    // The requester's PCIe traffic for one signaled inline WRITE, with and without
    // timestamps: the same CQE write (every CQE carries the clock), nothing else.
    let cost = |cq: &CqConfig| {
        let Pair {
            a,
            mut cq_a,
            cq_b: _cq_b,
            mut qp_a,
            qp_b: _qp_b,
            mr_b,
        } = pair(NicConfig::default(), cq);
        write_one(&mut qp_a, &mut cq_a, &mr_b, 0);
        let before = a.backend().nic().pcie();
        write_one(&mut qp_a, &mut cq_a, &mr_b, 1);
        a.backend().nic().pcie() - before
    };
    let (with, without) = (cost(&TIMESTAMPS), cost(&CqConfig::default()));
    assert_eq!(with, without);
    // One BlueFlame write down; up: the 64-byte CQE as one MWr, 64 + 24 bytes.
    assert_eq!(
        (with.mmio_writes, with.dma_reads, with.dma_writes),
        (1, 0, 1)
    );
    assert_eq!(with.bytes_up, 88);
}

/// The clock-info page of current kernels (shift 29 at 156.25 MHz) goes stale: the kernel
/// refreshes it every 2 684 354 559 cycles (17.2 s), and a copy converts right only up to
/// 5 368 709 119 cycles past its `last_cycles`. A clock stepping 3·10^9 ticks per CQE: the
/// copy taken before the first WRITE converts the first timestamp and refuses the second
/// (`to_ns_checked`), whose conversion wraps; the page read again converts it exactly
/// (6.4 ns a tick). With the old shift (23) the first copy would still be right.
#[test]
fn a_stale_clock_page_is_refused_and_a_fresh_one_converts() {
    const STEP: u64 = 3_000_000_000;
    let nic = NicConfig {
        clock_step: STEP,
        ..NicConfig::default()
    };
    let mut p = pair(nic, &TIMESTAMPS);
    let page = p.a.clock_info().unwrap();
    assert_eq!((page.shift, page.last_cycles), (29, 0));
    assert_eq!(page.update_period_ns(), 17_179_869_178);
    let first = write_one(&mut p.qp_a, &mut p.cq_a, &p.mr_b, 1).timestamp();
    let second = write_one(&mut p.qp_a, &mut p.cq_a, &p.mr_b, 2).timestamp();
    assert_eq!((first, second), (STEP, 2 * STEP));
    // Exact to a nanosecond (mult is rounded: 6.4 ns a tick plus 2^-29 ns).
    let exact = |ts: u64| ts * 32 / 5;
    let near = |ns: Option<u64>, ts: u64| ns.is_some_and(|ns| ns.abs_diff(exact(ts)) <= 1);
    assert!(near(page.to_ns_checked(first), first));
    assert_eq!(page.to_ns_checked(second), None);
    assert_ne!(page.to_ns(second), exact(second), "the old copy wraps");
    let fresh = p.a.clock_info().unwrap();
    assert_eq!(fresh.last_cycles, 2 * 2_684_354_559);
    assert!(near(fresh.to_ns_checked(second), second));
    let old = NicConfig {
        clock_step: STEP,
        clock_shift: ClockShift::Fixed(23),
        ..NicConfig::default()
    };
    let old_page = ctx(&Fabric::new(), old).clock_info().unwrap();
    assert!(old_page.to_ns_checked(second).is_some());
}
