//! Soak: many messages through small rings in every posting mode and operation, with a
//! sequence number in every message checked end to end (payloads, immediates, atomic
//! results, wr_ids of both sides) and the wraps of the SQ, RQ and CQs counted.
//!
//! `soak_small` runs in the test suite, and `soak_small_deferred`, a quarter as long, with
//! the model executing each doorbell's work in a later progress step. The full run (at least 10 million messages and
//! 1,000 wraps of every ring) is ignored by default:
//!
//! ```sh
//! cargo test --release --test soak -- --ignored --nocapture
//! ```
//!
//! `SOAK_MESSAGES=n` sets the message count of either. Results are in docs/testing.md.

use std::collections::VecDeque;
use std::time::Instant;

use mlx5_direct::backend::sim::{DriverBug, Fabric, Fault, NicConfig, Sim};
use mlx5_direct::{
    Access, Completion, ConnectOptions, Context, Cq, Data, DoorbellMode, MemoryRegion, Qp,
    QpConfig, SendFlags, SendOp, Sge, Status, WcOpcode,
};

const SQ_WQEBBS: u32 = 64;
const RQ_WQES: u32 = 64;
/// Destination slots of 64 bytes: more than can be outstanding, so a slot is rewritten
/// only after its previous message was checked.
const SLOTS: u64 = 256;
const SLOT: usize = 64;
const RECV_AT: usize = SLOTS as usize * SLOT;
const READ_AT: usize = 2 * SLOTS as usize * SLOT;
const COUNTER: usize = 3 * SLOTS as usize * SLOT;
/// A: READ and atomic results.
const RESULT_AT: usize = SLOTS as usize * SLOT;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    SendInline,
    SendGather,
    SendImm,
    WriteImm,
    Write,
    Read,
    FetchAdd,
}

const OPS: [Op; 7] = [
    Op::SendInline,
    Op::SendGather,
    Op::SendImm,
    Op::WriteImm,
    Op::Write,
    Op::Read,
    Op::FetchAdd,
];
const MODES: [DoorbellMode; 4] = [
    DoorbellMode::Doorbell,
    DoorbellMode::BlueFlame,
    DoorbellMode::BlueFlameLast,
    DoorbellMode::Auto,
];

impl Op {
    fn needs_receive(self) -> bool {
        matches!(
            self,
            Op::SendInline | Op::SendGather | Op::SendImm | Op::WriteImm
        )
    }
}

struct Soak {
    a: Context<Sim>,
    cq_a: Cq<Sim>,
    cq_b: Cq<Sim>,
    qp_a: Qp<Sim>,
    qp_b: Qp<Sim>,
    /// A: gather sources at `0`, READ / atomic results at `SLOTS * SLOT`.
    mr_a: MemoryRegion<Sim>,
    /// B: WRITE targets at `0`, receive buffers at `SLOTS * SLOT`, READ sources at
    /// `2 * SLOTS * SLOT`, the atomic counter at `COUNTER`.
    mr_b: MemoryRegion<Sim>,
    /// Next message sequence number (also its wr_id).
    seq: u64,
    /// Next receive wr_id.
    recv_posted: u64,
    recv_done: u64,
    /// Messages that consumed a receive.
    recv_messages: u64,
    /// Sequence numbers of sent messages waiting for their receive completion.
    awaiting_recv: VecDeque<(u64, Op, u32)>,
    /// Signaled sequence numbers waiting for their send completion.
    awaiting_send: VecDeque<u64>,
    /// Posted WRs whose effect is not verified yet (verified at the next send
    /// completion at or after them).
    unverified: VecDeque<(u64, Op)>,
    /// Fetch-and-adds posted so far: the value the next one must return.
    fetch_adds: u64,
    wqebbs: u64,
    cqes_a: u64,
    cqes_b: u64,
}

fn value(slot: u64) -> u64 {
    slot.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ 0x5eed
}

impl Soak {
    /// Two connected sides; with `defer`, doorbells only queue their work and the empty
    /// polls' progress steps run it (`Fault::DeferExecution`).
    fn new(defer: bool) -> Soak {
        let fabric = Fabric::new();
        let a = Context::new(Sim::on_fabric(&fabric, NicConfig::default()));
        let b = Context::new(Sim::on_fabric(&fabric, NicConfig::default()));
        for ctx in [&a, &b] {
            ctx.backend().nic().inject(Fault::DeferExecution(defer));
        }
        let (pa, pb) = (a.alloc_pd().unwrap(), b.alloc_pd().unwrap());
        // The send CQ holds every signaled WQE of a full SQ; the receive CQ every receive.
        let cq_a = a.create_cq(SQ_WQEBBS, 64).unwrap();
        let cq_b = b.create_cq(RQ_WQES, 64).unwrap();
        let config = QpConfig {
            sq_wqebbs: SQ_WQEBBS,
            rq_wqes: RQ_WQES,
            max_send_sge: 2,
            max_recv_sge: 1,
            max_inline: 64,
            ..QpConfig::default()
        };
        let mut qp_a = pa.create_qp(&cq_a, &cq_a, &config).unwrap();
        let mut qp_b = pb.create_qp(&cq_b, &cq_b, &config).unwrap();
        let (ea, eb) = (qp_a.endpoint().unwrap(), qp_b.endpoint().unwrap());
        qp_a.connect(&eb, &ConnectOptions::default()).unwrap();
        qp_b.connect(&ea, &ConnectOptions::default()).unwrap();
        let len = COUNTER + 64;
        let mr_a = pa.alloc_mr(len, Access::ALL).unwrap();
        let mr_b = pb.alloc_mr(len, Access::ALL).unwrap();
        for s in 0..SLOTS {
            mr_b.write(READ_AT + s as usize * SLOT, &value(s).to_ne_bytes());
        }
        let mut soak = Soak {
            a,
            cq_a,
            cq_b,
            qp_a,
            qp_b,
            mr_a,
            mr_b,
            seq: 0,
            recv_posted: 0,
            recv_done: 0,
            recv_messages: 0,
            awaiting_recv: VecDeque::new(),
            awaiting_send: VecDeque::new(),
            unverified: VecDeque::new(),
            fetch_adds: 0,
            wqebbs: 0,
            cqes_a: 0,
            cqes_b: 0,
        };
        soak.replenish();
        soak
    }

    /// Keeps B's receive queue full: one 64-byte buffer per receive, slot by wr_id.
    fn replenish(&mut self) {
        let rq = self.qp_b.rq().unwrap();
        while rq.free() > 0 {
            let off = RECV_AT + (self.recv_posted % SLOTS) as usize * SLOT;
            rq.post(self.recv_posted, &[self.mr_b.sge(off, SLOT as u32)])
                .unwrap();
            self.recv_posted += 1;
        }
    }

    /// Pushes message `seq` of kind `op`; false if the SQ has no room.
    fn push(&mut self, op: Op, signaled: bool) -> bool {
        let seq = self.seq;
        let slot = (seq % SLOTS) as usize * SLOT;
        let remote = self.mr_b.remote(slot);
        let result = self.mr_a.sge(RESULT_AT + slot, 8);
        let bytes = seq.to_ne_bytes();
        // Payloads of 8 to 64 bytes: the sequence number, then its low byte repeated.
        let len = 8 + (seq % 57) as usize;
        let mut payload = [seq as u8; 64];
        payload[..8].copy_from_slice(&bytes);
        let gather: [Sge; 2];
        let (send_op, data) = match op {
            Op::SendInline => (SendOp::Send, Data::Inline(&payload[..len])),
            Op::SendGather => {
                self.mr_a.write(slot, &payload[..len]);
                gather = [
                    self.mr_a.sge(slot, 8),
                    self.mr_a.sge(slot + 8, len as u32 - 8),
                ];
                (SendOp::Send, Data::Sges(&gather))
            }
            Op::SendImm => (SendOp::SendImm(seq as u32), Data::Inline(&payload[..len])),
            Op::WriteImm => (
                SendOp::WriteImm(remote, seq as u32),
                Data::Inline(&payload[..8]),
            ),
            Op::Write => (SendOp::Write(remote), Data::Inline(&payload[..8])),
            Op::Read => (
                SendOp::Read(self.mr_b.remote(READ_AT + slot)),
                Data::Sges(std::slice::from_ref(&result)),
            ),
            Op::FetchAdd => (
                SendOp::FetchAdd {
                    remote: self.mr_b.remote(COUNTER),
                    add: 1,
                },
                Data::Sges(std::slice::from_ref(&result)),
            ),
        };
        let before = self.qp_a.sq().producer_count();
        let flags = if signaled {
            SendFlags::SIGNALED
        } else {
            SendFlags::UNSIGNALED
        };
        match self.qp_a.sq().push(seq, send_op, data, flags) {
            Ok(()) => {}
            Err(mlx5_direct::PostError::QueueFull { .. }) => return false,
            Err(e) => panic!("message {seq}: {e}"),
        }
        self.wqebbs += u64::from(self.qp_a.sq().producer_count().wrapping_sub(before));
        if op.needs_receive() {
            let len = if op == Op::WriteImm { 8 } else { len as u32 };
            self.awaiting_recv.push_back((seq, op, len));
            self.recv_messages += 1;
        }
        if signaled {
            self.awaiting_send.push_back(seq);
        }
        if op == Op::FetchAdd {
            self.fetch_adds += 1;
        }
        self.unverified.push_back((seq, op));
        self.seq += 1;
        true
    }

    /// Checks what message `seq` did, now that it has completed.
    fn verify(&self, seq: u64, op: Op, fetch_add_index: u64) {
        let slot = (seq % SLOTS) as usize * SLOT;
        match op {
            Op::Write | Op::WriteImm => {
                assert_eq!(self.mr_b.read_u64(slot), seq, "WRITE {seq} landed");
            }
            Op::Read => assert_eq!(
                self.mr_a.read_u64(RESULT_AT + slot),
                value(seq % SLOTS),
                "READ {seq}"
            ),
            Op::FetchAdd => assert_eq!(
                self.mr_a.read_u64(RESULT_AT + slot),
                fetch_add_index,
                "fetch-and-add {seq} returned the count before it"
            ),
            _ => {}
        }
    }

    /// Polls both CQs once, checking every completion; returns how many there were.
    fn poll(&mut self) -> usize {
        let mut out = [Completion::default(); 32];
        let n = self.cq_a.poll(&mut out);
        self.cqes_a += n as u64;
        for c in &out[..n] {
            assert_eq!(c.status, Status::Success, "{c:?}");
            let want = self.awaiting_send.pop_front().expect("a signaled WR");
            assert_eq!(c.wr_id, want, "send completions in order");
            // Everything up to it has completed: verify their effects.
            let done_fetch_adds = self.fetch_adds
                - self
                    .unverified
                    .iter()
                    .filter(|(_, op)| *op == Op::FetchAdd)
                    .count() as u64;
            let mut fa = done_fetch_adds;
            while let Some(&(seq, op)) = self.unverified.front() {
                if seq > want {
                    break;
                }
                self.unverified.pop_front();
                self.verify(seq, op, fa);
                fa += u64::from(op == Op::FetchAdd);
            }
        }
        let m = self.cq_b.poll(&mut out);
        self.cqes_b += m as u64;
        for c in &out[..m] {
            assert_eq!(c.status, Status::Success, "{c:?}");
            let (seq, op, len) = self.awaiting_recv.pop_front().expect("a message");
            assert_eq!(c.wr_id, self.recv_done, "receives complete in order");
            assert_eq!(c.byte_len, len, "message {seq}");
            match op {
                Op::WriteImm => {
                    assert_eq!(
                        (c.opcode, c.imm()),
                        (WcOpcode::RecvRdmaWithImm, Some(seq as u32))
                    );
                    assert_eq!(self.mr_b.read_u64((seq % SLOTS) as usize * SLOT), seq);
                }
                _ => {
                    let imm = (op == Op::SendImm).then_some(seq as u32);
                    assert_eq!((c.opcode, c.imm()), (WcOpcode::Recv, imm));
                    let off = RECV_AT + (c.wr_id % SLOTS) as usize * SLOT;
                    let mut got = [0u8; 64];
                    self.mr_b.read(off, &mut got[..len as usize]);
                    assert_eq!(&got[..8], &seq.to_ne_bytes(), "payload of message {seq}");
                    assert!(got[8..len as usize].iter().all(|&b| b == seq as u8));
                }
            }
            self.recv_done += 1;
        }
        if m != 0 {
            self.replenish();
        }
        n + m
    }

    /// Runs `count` messages of one kind in one posting mode: batches of `batch`, one
    /// signaled every `signal` (and the last one).
    fn segment(&mut self, op: Op, mode: DoorbellMode, batch: usize, signal: u64, count: u64) {
        self.qp_a.sq().set_mode(mode);
        let end = self.seq + count;
        while self.seq < end {
            let mut pushed = 0;
            while pushed < batch && self.seq < end {
                let signaled = self.seq % signal == signal - 1 || self.seq + 1 == end;
                if !self.push(op, signaled) {
                    break;
                }
                pushed += 1;
            }
            self.qp_a.sq().ring_doorbell();
            self.poll();
        }
        let mut idle = 0;
        while !self.awaiting_send.is_empty() || !self.awaiting_recv.is_empty() {
            if self.poll() == 0 {
                idle += 1;
                assert!(idle < 1000, "stalled at message {}", self.seq);
            }
        }
        assert!(self.unverified.is_empty());
    }
}

struct Summary {
    messages: u64,
    sq_wraps: u64,
    rq_wraps: u64,
    cq_wraps: u64,
}

fn run(messages: u64, defer: bool) -> Summary {
    let mut soak = Soak::new(defer);
    let segments = (OPS.len() * MODES.len()) as u64;
    let per = messages.div_ceil(segments);
    let batches = [1, 3, 8, 16, 32];
    let signals = [1, 4, 16, 31];
    let mut k = 0;
    // Several rounds over every (operation, mode) pair, each with its own batch size and
    // signaling interval.
    let rounds = 4;
    for _ in 0..rounds {
        for &op in &OPS {
            for &mode in &MODES {
                let batch = batches[k % batches.len()];
                let signal = signals[(k / batches.len()) % signals.len()];
                soak.segment(op, mode, batch, signal, per.div_ceil(rounds));
                k += 1;
            }
        }
    }
    assert_eq!(soak.mr_b.read_u64(COUNTER), soak.fetch_adds);
    assert_eq!(soak.recv_done, soak.recv_messages);
    let stats = soak.a.backend().nic().stats();
    for bug in DriverBug::ALL {
        assert_eq!(stats.bug(bug), 0, "{bug:?}");
    }
    Summary {
        messages: soak.seq,
        sq_wraps: soak.wqebbs / u64::from(SQ_WQEBBS),
        rq_wraps: soak.recv_done / u64::from(RQ_WQES),
        cq_wraps: (soak.cqes_a / u64::from(soak.cq_a.capacity()))
            .min(soak.cqes_b / u64::from(soak.cq_b.capacity())),
    }
}

fn messages(default: u64) -> u64 {
    std::env::var("SOAK_MESSAGES")
        .ok()
        .map(|s| s.parse().expect("SOAK_MESSAGES is a number"))
        .unwrap_or(default)
}

fn report(s: &Summary, started: Instant) {
    println!(
        "soak: {} messages, {} SQ wraps, {} RQ wraps, {} CQ wraps (smaller of the two CQs), {:.1} s",
        s.messages,
        s.sq_wraps,
        s.rq_wraps,
        s.cq_wraps,
        started.elapsed().as_secs_f64()
    );
}

/// Runs `n` messages and checks the totals: every ring wrapped at least once per 560
/// messages (10 million messages: well over 1,000 wraps of each).
fn soak(n: u64, defer: bool) {
    let started = Instant::now();
    let s = run(n, defer);
    report(&s, started);
    assert!(s.messages >= n);
    let wraps = n / 560;
    assert!(
        s.sq_wraps >= wraps && s.rq_wraps >= wraps && s.cq_wraps >= wraps,
        "fewer than {wraps} wraps"
    );
}

#[test]
fn soak_small() {
    soak(messages(56_000), false);
}

/// A quarter of `soak_small` with deferred execution: a ring slot or gather buffer reused
/// before its completion would arrive corrupted.
#[test]
fn soak_small_deferred() {
    soak(messages(56_000) / 4, true);
}

#[test]
#[ignore = "long soak: see docs/testing.md"]
fn soak_full() {
    soak(messages(10_000_000), false);
}
