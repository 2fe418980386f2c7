//! Faults injected into the model, end to end through the driver: lost packets and lost
//! responses, RNR, dropped BlueFlame data, delayed CQEs, CQ overrun and the asynchronous
//! events that report it (and a QP on an SRQ entering ERR). Each time the driver surfaces
//! what happened (or, where the fault is invisible by design, loses nothing), the
//! application recovers the QP and goes on, and a second QP on the same CQ keeps working
//! throughout.

mod common;

use common::BugCheck;

use mlx5_direct::backend::sim::{Fabric, Fault, Nic, NicConfig, Sim};
use mlx5_direct::prm::Syndrome;
use mlx5_direct::{
    Access, AsyncEvent, Completion, ConnectOptions, Context, Cq, Data, DoorbellMode, MemoryRegion,
    PostError, Qp, QpConfig, QpState, SendFlags, SendOp, Status, WcOpcode,
};
use std::time::Duration;

const VICTIM: usize = 0;
const BYSTANDER: usize = 1;

/// Two QPs on A sharing one CQ, each connected to its own QP on B (B's share a CQ too).
struct Rig {
    a: Context<Sim>,
    b: Context<Sim>,
    cq_a: Cq<Sim>,
    cq_b: Cq<Sim>,
    qa: Vec<Qp<Sim>>,
    qb: Vec<Qp<Sim>>,
    mr_a: MemoryRegion<Sim>,
    mr_b: MemoryRegion<Sim>,
    options: ConnectOptions,
    next: u64,
    /// The model's driver-bug counters of both NICs stay 0.
    _bugs: [BugCheck; 2],
}

/// Two model NICs on one fabric, each with the check that its driver-bug counters stay 0.
fn two_nics() -> (Context<Sim>, Context<Sim>, [BugCheck; 2]) {
    let fabric = Fabric::new();
    let a = Context::new(Sim::on_fabric(&fabric, NicConfig::default()));
    let b = Context::new(Sim::on_fabric(&fabric, NicConfig::default()));
    let bugs = [
        BugCheck::on(a.backend().nic()),
        BugCheck::on(b.backend().nic()),
    ];
    (a, b, bugs)
}

impl Rig {
    fn new(options: ConnectOptions) -> Rig {
        let (a, b, bugs) = two_nics();
        let (pa, pb) = (a.alloc_pd().unwrap(), b.alloc_pd().unwrap());
        let cq_a = a.create_cq(256, 64).unwrap();
        let cq_b = b.create_cq(256, 64).unwrap();
        let config = QpConfig::default();
        let qa: Vec<_> = (0..2)
            .map(|_| pa.create_qp(&cq_a, &cq_a, &config).unwrap())
            .collect();
        let qb: Vec<_> = (0..2)
            .map(|_| pb.create_qp(&cq_b, &cq_b, &config).unwrap())
            .collect();
        let mut rig = Rig {
            mr_a: pa.alloc_mr(4096, Access::ALL).unwrap(),
            mr_b: pb.alloc_mr(4096, Access::ALL).unwrap(),
            _bugs: bugs,
            a,
            b,
            cq_a,
            cq_b,
            qa,
            qb,
            options,
            next: 1,
        };
        rig.connect(VICTIM);
        rig.connect(BYSTANDER);
        rig
    }

    fn connect(&mut self, i: usize) {
        let (ea, eb) = (
            self.qa[i].endpoint().unwrap(),
            self.qb[i].endpoint().unwrap(),
        );
        self.qa[i].connect(&eb, &self.options).unwrap();
        self.qb[i].connect(&ea, &self.options).unwrap();
    }

    fn nic_a(&self) -> &Nic {
        self.a.backend().nic()
    }

    fn nic_b(&self) -> &Nic {
        self.b.backend().nic()
    }

    /// One timer step on both NICs.
    fn step(&self) {
        self.nic_a().progress();
        self.nic_b().progress();
    }

    /// Everything A's CQ holds now. A poll that finds nothing is one timer step of A's
    /// NIC (the sim backend's idle hook runs `progress()`).
    fn drain_a(&mut self) -> Vec<Completion> {
        drain(&mut self.cq_a)
    }

    /// Polls A's CQ until `n` completions arrived; also returns how many polls found
    /// nothing, i.e. how many timer steps it took.
    fn wait_a(&mut self, n: usize) -> (Vec<Completion>, usize) {
        let mut got = Vec::new();
        let mut empty = 0;
        while got.len() < n {
            let c = self.drain_a();
            empty += c.is_empty() as usize;
            got.extend(c);
            assert!(empty < 100, "only {got:?} after {empty} timer steps");
        }
        (got, empty)
    }

    fn drain_b(&mut self) -> Vec<Completion> {
        drain(&mut self.cq_b)
    }

    /// Posts a signaled 8-byte inline WRITE of `byte` on A's QP `i` into B's region at
    /// `64 * i`; returns its wr_id.
    fn write(&mut self, i: usize, byte: u8) -> u64 {
        let wr_id = self.next;
        self.next += 1;
        let remote = self.mr_b.remote(64 * i);
        self.qa[i]
            .sq()
            .post(
                wr_id,
                SendOp::Write(remote),
                Data::Inline(&[byte; 8]),
                SendFlags::SIGNALED,
            )
            .unwrap();
        wr_id
    }

    /// Posts a signaled SEND of 8 bytes on A's QP `i`; returns its wr_id.
    fn send(&mut self, i: usize) -> u64 {
        let wr_id = self.next;
        self.next += 1;
        self.qa[i]
            .sq()
            .post(
                wr_id,
                SendOp::Send,
                Data::Inline(&[0x77; 8]),
                SendFlags::SIGNALED,
            )
            .unwrap();
        wr_id
    }

    fn target(&self, i: usize) -> u8 {
        let mut b = [0u8];
        self.mr_b.read(64 * i, &mut b);
        b[0]
    }

    /// The bystander QP posts a WRITE and its completion is on the shared CQ at once.
    fn bystander_works(&mut self, byte: u8) {
        let wr_id = self.write(BYSTANDER, byte);
        let c = self.drain_a();
        assert_eq!(c.len(), 1, "{c:?}");
        assert_eq!(
            (c[0].wr_id, c[0].qpn, c[0].status),
            (wr_id, self.qa[BYSTANDER].qpn(), Status::Success)
        );
        assert_eq!(self.target(BYSTANDER), byte);
        assert_eq!(self.qa[BYSTANDER].state(), QpState::Rts);
    }

    /// The application's recovery: both ends of pair `i` to ERR, their flushes polled,
    /// RESET, connect again. Returns the flushes seen on A and on B.
    fn recover(&mut self, i: usize) -> (Vec<Completion>, Vec<Completion>) {
        self.qa[i].to_error().unwrap();
        self.qb[i].to_error().unwrap();
        self.step();
        let (fa, fb) = (self.drain_a(), self.drain_b());
        for c in fa.iter().chain(&fb) {
            assert_eq!(syndrome(c.status), Some(Syndrome::WrFlushErr), "{c:?}");
        }
        self.qa[i].reset().unwrap();
        self.qb[i].reset().unwrap();
        self.connect(i);
        (fa, fb)
    }
}

fn drain(cq: &mut Cq<Sim>) -> Vec<Completion> {
    let mut out = vec![Completion::default(); 64];
    let n = cq.poll(&mut out);
    out.truncate(n);
    out
}

fn syndrome(status: Status) -> Option<Syndrome> {
    match status {
        Status::Error(e) => e.syndrome(),
        _ => None,
    }
}

fn options(retry_cnt: u8, rnr_retry: u8) -> ConnectOptions {
    ConnectOptions {
        retry_cnt,
        rnr_retry,
        ..ConnectOptions::default()
    }
}

#[test]
fn lost_packets_are_retried_up_to_the_retry_count_then_retry_exceeded() {
    let mut rig = Rig::new(options(3, 7));
    let victim = rig.qa[VICTIM].qpn();

    // Three losses with retry_cnt 3: the third retransmission (third timer step) gets
    // through; meanwhile the bystander on the same CQ completes at once.
    rig.nic_a().inject(Fault::LosePackets {
        qpn: Some(victim),
        count: 3,
    });
    let w1 = rig.write(VICTIM, 1);
    rig.bystander_works(10);
    let (c, steps) = rig.wait_a(1);
    assert_eq!((c[0].wr_id, c[0].status, steps), (w1, Status::Success, 3));
    assert_eq!(rig.target(VICTIM), 1);
    let stats = rig.nic_a().stats();
    assert_eq!((stats.packets_lost, stats.retransmits), (3, 3));

    // Four losses: the retries run out at the fourth timer step and the WR fails with
    // RETRY_EXC; the WR behind it is flushed, with its wr_id.
    rig.nic_a().inject(Fault::LosePackets {
        qpn: Some(victim),
        count: 4,
    });
    let w2 = rig.write(VICTIM, 2);
    let w3 = rig.write(VICTIM, 3);
    rig.bystander_works(11);
    let (c, steps) = rig.wait_a(2);
    assert_eq!(steps, 4);
    assert_eq!(
        (c[0].wr_id, syndrome(c[0].status)),
        (w2, Some(Syndrome::TransportRetryExcErr))
    );
    assert_eq!(
        (c[1].wr_id, syndrome(c[1].status)),
        (w3, Some(Syndrome::WrFlushErr))
    );
    assert_eq!(rig.qa[VICTIM].state(), QpState::Err);
    assert_eq!(rig.target(VICTIM), 1, "neither WRITE landed");
    assert_eq!(
        rig.qa[VICTIM]
            .sq()
            .post(0, SendOp::Nop, Data::NONE, SendFlags::SIGNALED),
        Err(PostError::NotReadyToSend)
    );
    rig.bystander_works(12);

    rig.recover(VICTIM);
    let w4 = rig.write(VICTIM, 4);
    let (c, steps) = rig.wait_a(1);
    assert_eq!((c[0].wr_id, c[0].status, steps), (w4, Status::Success, 0));
    assert_eq!(rig.target(VICTIM), 4);
    rig.bystander_works(13);
}

#[test]
fn rnr_naks_are_retried_up_to_rnr_retry_then_rnr_retry_exceeded() {
    let mut rig = Rig::new(options(7, 2));
    let peer = rig.qb[VICTIM].qpn();
    let rsge = rig.mr_b.sge(1024, 64);
    rig.qb[VICTIM].rq().unwrap().post(500, &[rsge]).unwrap();

    // Two forced RNR NAKs with rnr_retry 2: the second retry (second timer step) is taken.
    rig.nic_b().inject(Fault::Rnr {
        qpn: Some(peer),
        count: 2,
    });
    let s1 = rig.send(VICTIM);
    rig.bystander_works(20);
    let (c, steps) = rig.wait_a(1);
    assert_eq!((c[0].wr_id, c[0].status, steps), (s1, Status::Success, 2));
    let r = rig.drain_b();
    assert_eq!(
        (r[0].wr_id, r[0].opcode, r[0].byte_len),
        (500, WcOpcode::Recv, 8)
    );
    assert_eq!(rig.nic_b().stats().rnr_naks, 2);

    // Three: exhausted at the third timer step.
    rig.qb[VICTIM].rq().unwrap().post(501, &[rsge]).unwrap();
    rig.nic_b().inject(Fault::Rnr {
        qpn: Some(peer),
        count: 3,
    });
    let s2 = rig.send(VICTIM);
    rig.bystander_works(21);
    let (c, steps) = rig.wait_a(1);
    assert_eq!(
        (c[0].wr_id, syndrome(c[0].status), steps),
        (s2, Some(Syndrome::RnrRetryExcErr), 3)
    );
    assert_eq!(rig.qa[VICTIM].state(), QpState::Err);
    rig.bystander_works(22);

    // Recovery flushes the receive that was never used, with its wr_id: nothing lost.
    let (_, fb) = rig.recover(VICTIM);
    assert_eq!(fb.iter().map(|c| c.wr_id).collect::<Vec<_>>(), [501]);
    rig.qb[VICTIM].rq().unwrap().post(502, &[rsge]).unwrap();
    let s3 = rig.send(VICTIM);
    assert_eq!(rig.drain_a()[0].wr_id, s3);
    assert_eq!(rig.drain_b()[0].wr_id, 502);
    rig.bystander_works(23);
}

#[test]
fn dropped_blueflame_data_falls_back_to_the_ring_and_loses_nothing() {
    let mut rig = Rig::new(ConnectOptions::default());
    for qp in &mut rig.qa {
        qp.sq().set_mode(DoorbellMode::BlueFlame);
    }
    rig.nic_a().inject(Fault::DropBlueFlame(true));
    let before = rig.nic_a().stats();
    for k in 0..8u8 {
        let i = (k % 2) as usize;
        let wr_id = rig.write(i, 100 + k);
        let c = rig.drain_a();
        assert_eq!(
            (c.len(), c[0].wr_id, c[0].status),
            (1, wr_id, Status::Success)
        );
        assert_eq!(rig.target(i), 100 + k);
    }
    let s = rig.nic_a().stats();
    assert_eq!(s.bf_dropped - before.bf_dropped, 8);
    assert_eq!(s.bf_used - before.bf_used, 0);
    rig.nic_a().inject(Fault::Clear);
    rig.write(VICTIM, 1);
    assert_eq!(rig.drain_a()[0].status, Status::Success);
    assert_eq!(rig.nic_a().stats().bf_used - s.bf_used, 1);
}

#[test]
fn delayed_cqes_arrive_later_in_order_and_complete() {
    let mut rig = Rig::new(ConnectOptions::default());
    rig.nic_a().inject(Fault::DelayCqes(true));
    let ids: Vec<(u64, usize)> = (0..6)
        .map(|k| {
            let i = k % 2;
            (rig.write(i, 30 + k as u8), i)
        })
        .collect();
    assert_eq!(rig.target(VICTIM), 34, "payloads are not delayed");
    // Nothing retires before the CQEs arrive.
    assert_eq!(rig.qa[VICTIM].sq().outstanding_wqebbs(), 3);
    // The first poll finds nothing (the CQEs are held back) and is the timer step that
    // releases them; the next one gets all six, in posting order across both QPs.
    let (c, steps) = rig.wait_a(6);
    assert_eq!(steps, 1);
    assert_eq!(
        c.iter()
            .map(|c| (c.wr_id, c.qpn, c.status))
            .collect::<Vec<_>>(),
        ids.iter()
            .map(|&(w, i)| (w, rig.qa[i].qpn(), Status::Success))
            .collect::<Vec<_>>()
    );
    assert_eq!(rig.qa[VICTIM].sq().outstanding_wqebbs(), 0);
}

#[test]
fn cq_overrun_is_reported_and_the_application_rebuilds_the_victim() {
    let (a, b, _bugs) = two_nics();
    let (pa, pb) = (a.alloc_pd().unwrap(), b.alloc_pd().unwrap());
    let config = QpConfig::default();
    // The victim has a CQ of 4 entries (3 requested, rounded up with one spare); the
    // bystander a CQ of its own on the same NIC.
    let mut small = a.create_cq(3, 64).unwrap();
    assert_eq!(small.capacity(), 4);
    let mut other = a.create_cq(64, 64).unwrap();
    let cq_b = b.create_cq(64, 64).unwrap();
    let mut victim = pa.create_qp(&small, &small, &config).unwrap();
    let mut bystander = pa.create_qp(&other, &other, &config).unwrap();
    let mut peer_v = pb.create_qp(&cq_b, &cq_b, &config).unwrap();
    let mut peer_b = pb.create_qp(&cq_b, &cq_b, &config).unwrap();
    let target = pb.alloc_mr(4096, Access::ALL).unwrap();
    let opts = ConnectOptions::default();
    let join = |x: &mut Qp<Sim>, y: &mut Qp<Sim>| {
        let (ex, ey) = (x.endpoint().unwrap(), y.endpoint().unwrap());
        x.connect(&ey, &opts).unwrap();
        y.connect(&ex, &opts).unwrap();
    };
    join(&mut victim, &mut peer_v);
    join(&mut bystander, &mut peer_b);
    let write = |qp: &mut Qp<Sim>, wr_id: u64, off: usize| {
        qp.sq().post(
            wr_id,
            SendOp::Write(target.remote(off)),
            Data::Inline(&[wr_id as u8; 8]),
            SendFlags::SIGNALED,
        )
    };

    // Six signaled WQEs and no polling: the fifth CQE finds the CQ full.
    for w in 1..=6 {
        write(&mut victim, w, 0).unwrap();
    }
    let nic = a.backend().nic();
    // No CQE can say so: the driver learns it from the asynchronous events, the CQ error
    // first, then the QP that lost a completion to it. Until the application reads them
    // the QP is still RTS as far as the driver knows.
    assert_eq!(victim.state(), QpState::Rts);
    assert_eq!(
        a.poll_async_event(),
        Ok(Some(AsyncEvent::CqError { cqn: small.cqn() }))
    );
    assert_eq!(
        a.wait_async_event(Duration::ZERO),
        Ok(Some(AsyncEvent::QpFatal { qpn: victim.qpn() }))
    );
    assert_eq!(a.poll_async_event(), Ok(None));
    assert_eq!(victim.state(), QpState::Err);
    assert_eq!(bystander.state(), QpState::Rts);
    // Nothing on the completion channel, nothing at the peer.
    assert_eq!(small.channel().try_next(), Ok(None));
    assert_eq!(b.poll_async_event(), Ok(None));
    assert_eq!(nic.stats().cqes_dropped, 2);
    let c = drain(&mut small);
    assert_eq!(
        c.iter().map(|c| (c.wr_id, c.status)).collect::<Vec<_>>(),
        (1..=4).map(|w| (w, Status::Success)).collect::<Vec<_>>()
    );
    // The driver refuses further work on the fatal QP, and the CQ writes nothing more.
    assert_eq!(write(&mut victim, 7, 0), Err(PostError::NotReadyToSend));
    nic.progress();
    assert_eq!(drain(&mut small), []);
    assert_eq!(a.poll_async_event(), Ok(None));
    // The bystander's CQ is untouched.
    write(&mut bystander, 50, 64).unwrap();
    assert_eq!(drain(&mut other)[0].wr_id, 50);

    // Recovery: a CQ in error cannot be reused; the victim QP goes, then its CQ.
    drop(victim);
    small.destroy().unwrap();
    let mut fresh_cq = a.create_cq(64, 64).unwrap();
    let mut victim = pa.create_qp(&fresh_cq, &fresh_cq, &config).unwrap();
    peer_v.reset().unwrap();
    join(&mut victim, &mut peer_v);
    write(&mut victim, 8, 0).unwrap();
    let c = drain(&mut fresh_cq);
    assert_eq!((c[0].wr_id, c[0].status), (8, Status::Success));
    write(&mut bystander, 51, 64).unwrap();
    assert_eq!(drain(&mut other)[0].wr_id, 51);
    let mut byte = [0u8];
    target.read(0, &mut byte);
    assert_eq!(byte, [8]);
}

#[test]
fn cq_overrun_is_an_asynchronous_cq_error() {
    common::bodies::cq_overrun_is_an_asynchronous_cq_error(&Fabric::new());
}

#[test]
fn lost_responses_and_lost_middle_packets_execute_exactly_once() {
    let mut rig = Rig::new(ConnectOptions {
        path_mtu: 256,
        ..options(3, 7)
    });
    let victim = rig.qa[VICTIM].qpn();
    // A fetch-and-add whose response is lost twice: retransmitted twice, answered from the
    // responder's saved result; the counter moves once and the original value comes back.
    rig.mr_b.write(512, &100u64.to_ne_bytes());
    rig.nic_a().inject(Fault::LoseResponses {
        qpn: Some(victim),
        count: 2,
    });
    let result = rig.mr_a.sge(0, 8);
    rig.qa[VICTIM]
        .sq()
        .post(
            77,
            SendOp::FetchAdd {
                remote: rig.mr_b.remote(512),
                add: 5,
            },
            Data::Sges(&[result]),
            SendFlags::SIGNALED,
        )
        .unwrap();
    rig.bystander_works(40);
    let (c, steps) = rig.wait_a(1);
    assert_eq!(
        (c[0].wr_id, c[0].opcode, c[0].status, steps),
        (77, WcOpcode::FetchAdd, Status::Success, 2)
    );
    assert_eq!(rig.mr_b.read_u64(512), 105, "added once");
    assert_eq!(rig.mr_a.read_u64(0), 100, "the original value");

    // A 1000-byte WRITE is 4 packets at MTU 256: losing the third retransmits the message
    // whole, once; the data is intact.
    let data: Vec<u8> = (0..1000u32).map(|i| (i * 7) as u8).collect();
    rig.mr_a.write(1024, &data);
    rig.nic_a().inject(Fault::LosePacketsAfter {
        qpn: Some(victim),
        skip: 2,
        count: 1,
    });
    let before = rig.nic_a().stats();
    rig.qa[VICTIM]
        .sq()
        .post(
            78,
            SendOp::Write(rig.mr_b.remote(1024)),
            Data::Sges(&[rig.mr_a.sge(1024, 1000)]),
            SendFlags::SIGNALED,
        )
        .unwrap();
    let (c, steps) = rig.wait_a(1);
    assert_eq!((c[0].wr_id, c[0].status, steps), (78, Status::Success, 1));
    let s = rig.nic_a().stats();
    assert_eq!(
        (
            s.packets - before.packets,
            s.retransmits - before.retransmits
        ),
        (8, 1)
    );
    let mut got = vec![0u8; 1000];
    rig.mr_b.read(1024, &mut got);
    assert_eq!(got, data);
    rig.bystander_works(41);
}

#[test]
fn a_qp_on_an_srq_entering_err_raises_last_wqe_reached_once() {
    let (a, b, _bugs) = two_nics();
    let (pa, pb) = (a.alloc_pd().unwrap(), b.alloc_pd().unwrap());
    let (cq_a, cq_b) = (a.create_cq(64, 64).unwrap(), b.create_cq(64, 64).unwrap());
    let srq = pa.create_srq(16, 1).unwrap();
    let config = QpConfig::default();
    let mut qp = pa.create_qp_with_srq(&cq_a, &cq_a, &srq, &config).unwrap();
    let mut peer = pb.create_qp(&cq_b, &cq_b, &config).unwrap();
    let opts = ConnectOptions::default();
    let (e, ep) = (qp.endpoint().unwrap(), peer.endpoint().unwrap());
    qp.connect(&ep, &opts).unwrap();
    peer.connect(&e, &opts).unwrap();
    assert_eq!(a.poll_async_event(), Ok(None));
    qp.to_error().unwrap();
    assert_eq!(
        a.poll_async_event(),
        Ok(Some(AsyncEvent::LastWqeReached { qpn: qp.qpn() }))
    );
    assert_eq!(
        AsyncEvent::LastWqeReached { qpn: qp.qpn() }.failed_qp(),
        None
    );
    qp.to_error().unwrap();
    assert_eq!(a.poll_async_event(), Ok(None), "once per entry to ERR");
    // After a reset and a new connection, the next entry to ERR raises it again.
    qp.reset().unwrap();
    peer.reset().unwrap();
    let (e, ep) = (qp.endpoint().unwrap(), peer.endpoint().unwrap());
    qp.connect(&ep, &opts).unwrap();
    peer.connect(&e, &opts).unwrap();
    assert_eq!(qp.state(), QpState::Rts);
    qp.to_error().unwrap();
    assert_eq!(
        a.poll_async_event(),
        Ok(Some(AsyncEvent::LastWqeReached { qpn: qp.qpn() }))
    );
    assert_eq!(b.poll_async_event(), Ok(None));
}
