//! Completion events as an application uses them, on the model: a completion channel that
//! several CQs share, waiting for one CQ or for any, the channel's fd under poll(2) and
//! tokio, and waiting threads. The event loop every backend runs is
//! `common::bodies::event_driven_ping_pong` (tests/sim_rc.rs, tests/verbs_hw.rs).

use std::os::fd::{AsFd, AsRawFd};
use std::time::Duration;

use mlx5_direct::backend::sim::{
    Event, Fabric, Fault, Nic, NicConfig, PcieConfig, PcieCounters, Sim, Stats,
};
use mlx5_direct::{
    Access, CompChannel, Completion, ConnectOptions, Context, Cq, Data, MemoryRegion, Qp, QpConfig,
    SendFlags, SendOp,
};

/// A model NIC with a channel, two CQs on it and a looped-back QP on each CQ.
struct Loop {
    ctx: Context<Sim>,
    channel: CompChannel<Sim>,
    cqs: [Cq<Sim>; 2],
    qps: [Qp<Sim>; 2],
    mr: MemoryRegion<Sim>,
}

fn setup() -> Loop {
    let ctx = Context::new(Sim::on_fabric(&Fabric::new(), NicConfig::default()));
    let pd = ctx.alloc_pd().unwrap();
    let channel = ctx.create_comp_channel().unwrap();
    let cqs = [
        ctx.create_cq_on(&channel, 16, 64).unwrap(),
        ctx.create_cq_on(&channel, 16, 64).unwrap(),
    ];
    let qps = [0, 1].map(|i| {
        let mut qp = pd
            .create_qp(&cqs[i], &cqs[i], &QpConfig::default())
            .unwrap();
        let me = qp.endpoint().unwrap();
        qp.connect(&me, &ConnectOptions::default()).unwrap();
        qp
    });
    let mr = pd.alloc_mr(4096, Access::ALL).unwrap();
    Loop {
        ctx,
        channel,
        cqs,
        qps,
        mr,
    }
}

impl Loop {
    /// A signaled WRITE on QP `i`: one CQE on CQ `i`.
    fn write(&mut self, i: usize) {
        self.qps[i]
            .sq()
            .post(
                i as u64,
                SendOp::Write(self.mr.remote(0)),
                Data::Inline(b"x"),
                SendFlags::SIGNALED,
            )
            .unwrap();
    }

    fn cqn(&self, i: usize) -> u32 {
        self.cqs[i].cqn()
    }
}

/// Whether `fd` polls readable right now.
fn readable(fd: &impl AsFd) -> bool {
    let mut p = libc::pollfd {
        fd: fd.as_fd().as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd.
    unsafe { libc::poll(&mut p, 1, 0) == 1 }
}

#[test]
fn a_shared_channel_names_the_cq_of_each_event_and_its_fd_is_readable_while_one_waits() {
    let mut l = setup();
    assert!(!readable(&l.channel));
    l.cqs[0].arm(false);
    l.cqs[1].arm(false);
    l.write(1);
    assert!(readable(&l.channel), "an event waits");
    l.write(0);
    assert_eq!(l.channel.try_next(), Ok(Some(l.cqn(1))), "oldest first");
    assert!(readable(&l.channel), "one still waits");
    assert_eq!(l.channel.wait(Duration::ZERO), Ok(Some(l.cqn(0))));
    assert!(!readable(&l.channel));
    assert_eq!(l.channel.wait(Duration::from_millis(20)), Ok(None));
    // One event per arm: the CQEs are there, but no arm asked again.
    l.write(0);
    assert_eq!(l.channel.try_next(), Ok(None));
    let mut done = [Completion::default(); 4];
    assert_eq!(l.cqs[0].poll(&mut done), 2);
    assert_eq!(l.cqs[1].poll(&mut done), 1);
}

#[test]
fn rearming_after_taking_an_event_needs_no_acknowledgement() {
    let mut l = setup();
    let mut done = [Completion::default(); 4];
    for round in 0..6 {
        l.cqs[0].arm(false);
        l.write(0);
        assert_eq!(
            l.cqs[0].wait_event(Duration::from_secs(1)),
            Ok(true),
            "round {round}"
        );
        assert_eq!(l.cqs[0].poll(&mut done), 1);
    }
    let stats: Stats = l.ctx.backend().nic().stats();
    assert_eq!((stats.events, stats.stale_arms), (6, 0));
}

#[test]
fn waiting_for_one_cq_keeps_the_events_of_the_others() {
    let mut l = setup();
    l.cqs[0].arm(false);
    l.cqs[1].arm(false);
    l.write(0);
    l.write(1);
    assert_eq!(l.cqs[1].wait_event(Duration::ZERO), Ok(true));
    assert_eq!(l.cqs[1].wait_event(Duration::ZERO), Ok(false));
    assert!(
        !readable(&l.channel),
        "both events were read off the channel"
    );
    assert_eq!(l.channel.try_next(), Ok(Some(l.cqn(0))), "kept for CQ 0");
    assert_eq!(l.cqs[0].wait_event(Duration::ZERO), Ok(false));
}

#[test]
fn threads_waiting_on_one_channel_each_get_their_cqs_event() {
    let Loop {
        cqs, mut qps, mr, ..
    } = setup();
    // Each thread owns its CQ (a CQ is `Send`; its poller is one thread at a time).
    let waiters = cqs.map(|mut cq| {
        std::thread::spawn(move || {
            cq.arm(false);
            let woke = cq.wait_event(Duration::from_secs(10));
            let mut done = [Completion::default(); 2];
            (woke, cq.poll(&mut done), done[0].wr_id)
        })
    });
    std::thread::sleep(Duration::from_millis(50));
    for (i, qp) in qps.iter_mut().enumerate() {
        let op = SendOp::Write(mr.remote(0));
        qp.sq()
            .post(10 + i as u64, op, Data::Inline(b"x"), SendFlags::SIGNALED)
            .unwrap();
    }
    let got = waiters.map(|w| w.join().unwrap());
    assert_eq!(got, [(Ok(true), 1, 10), (Ok(true), 1, 11)]);
}

#[cfg(feature = "tokio")]
#[test]
fn tokio_wakes_an_async_wait_for_the_next_event() {
    use mlx5_direct::AsyncCompChannel;

    let mut l = setup();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .build()
        .unwrap();
    let events = runtime.block_on(async {
        let channel = AsyncCompChannel::new(l.channel.clone()).unwrap();
        let mut events = Vec::new();
        for i in [1, 0, 1] {
            l.cqs[i].arm(false);
            l.write(i);
            events.push(channel.wait().await.unwrap());
            let mut done = [Completion::default(); 1];
            assert_eq!(l.cqs[i].poll(&mut done), 1);
        }
        events
    });
    assert_eq!(events, [l.cqn(1), l.cqn(0), l.cqn(1)]);
}

#[test]
fn a_user_crate_names_the_models_types_and_matches_its_events() {
    let mut l = setup();
    let nic: &Nic = l.ctx.backend().nic();
    nic.set_pcie_config(PcieConfig::default());
    let before: PcieCounters = nic.pcie();
    nic.inject(Fault::DropBlueFlame(false));
    l.cqs[0].arm(false);
    l.write(0);
    let nic: &Nic = l.ctx.backend().nic();
    assert!(nic.pcie() - before != PcieCounters::default());
    // The model's own view of the channel: its events by variant.
    let number = l.channel.handle().number();
    match nic.poll_channel(number) {
        Ok(Some(Event::Completion { cqn })) => assert_eq!(cqn, l.cqs[0].cqn()),
        other => panic!("expected a completion event, got {other:?}"),
    }
    assert_eq!(nic.poll_channel(number), Ok(None));
    let stats: Stats = nic.stats();
    assert_eq!(stats.events, 1);
}
