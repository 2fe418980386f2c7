//! The benchmarks, generic over the backend: one side's resources, the client's and the
//! server's loops, and the per-size protocol over the [`Peer`] connection.
//!
//! - `*_lat` WRITE and SEND: ping-pong. Each side answers the other's message; a sample is
//!   half the round trip, as in perftest. The WRITE side spins on the last byte of its buffer.
//! - `*_lat` READ and atomic: the client alone, a sample is post to completion.
//! - `*_bw`: the client keeps up to `-t` WRs outstanding per QP, posts `-l` WRs per doorbell
//!   and asks for a CQE every `-Q` WRs; the SEND server keeps receives posted.

use std::time::{Duration, Instant};

use mlx5_direct::backend::Backend;
use mlx5_direct::{
    Access, Completion, ConnectOptions, Context, Cq, Data, DoorbellMode, Endpoint, MemoryRegion,
    Qp, QpConfig, Remote, SendFlags, SendOp, WcOpcode,
};
use mlx5_hw::PcieCounters;
use serde::{Deserialize, Serialize};

use crate::cli::{AtomicType, BenchArgs, Kind, Mode, Test, Verb};
use crate::exchange::{ExchangeError, Peer, QpRecord};
use crate::stats::{BwRow, BwUnit, LatRow, Latencies, Phase, Schedule, Throughput};

/// Boxed errors: the tool reports them and exits.
pub type Error = Box<dyn std::error::Error + Send + Sync>;

/// What the benchmarks need from a backend beyond [`Backend`].
pub trait Device: Backend {
    /// The link counters, when the device counts them (the model).
    fn pcie(&self) -> Option<PcieCounters>;
    /// Runs deferred device work (the model's timers: RNR and transport retries); nothing
    /// on hardware, where the NIC has its own clock.
    fn progress(&self);
    /// True when the peer's device work runs on a CPU thread of this process (the model):
    /// a waiting thread then yields often, so a ping-pong survives sharing a core.
    const SHARES_CPU: bool;
}

impl Device for mlx5_direct::backend::sim::Sim {
    fn pcie(&self) -> Option<PcieCounters> {
        Some(self.nic().pcie())
    }

    fn progress(&self) {
        self.nic().progress();
    }

    const SHARES_CPU: bool = true;
}

#[cfg(feature = "verbs")]
impl Device for mlx5_direct::backend::verbs::Verbs {
    fn pcie(&self) -> Option<PcieCounters> {
        None
    }

    fn progress(&self) {}

    const SHARES_CPU: bool = false;
}

/// The parameters both sides must agree on (compared field by field in the handshake).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Params {
    /// The test.
    pub test: Test,
    /// Atomic operation (`-A`).
    pub atomic_type: AtomicType,
    /// Message sizes (`-s`, or all with `-a`).
    pub sizes: Vec<usize>,
    /// Iterations per size and QP (`-n`).
    pub iters: u64,
    /// Milliseconds per size instead of iterations (`-D`).
    pub duration_ms: Option<u64>,
    /// Duration mode: milliseconds of warm-up and of end margin, not sampled (`--margin`).
    pub margin_ms: u64,
    /// Largest inline message (`-I`).
    pub inline_size: usize,
    /// Outstanding WRs per QP (`-t`).
    pub tx_depth: u32,
    /// Receives kept posted per QP.
    pub rx_depth: u32,
    /// WRs per doorbell (`-l`).
    pub post_list: u32,
    /// A CQE every this many WRs (`-Q`).
    pub cq_mod: u32,
    /// QPs (`-q`).
    pub qps: u32,
}

/// perftest's `-a` sizes.
const ALL_SIZES: std::ops::RangeInclusive<u32> = 1..=23;

/// perftest measures the bandwidth peak up to this many iterations per QP.
const PEAK_MAX_ITERS: u64 = 20000;

/// Whole milliseconds of `seconds` given for `flag`, or an error.
fn millis(seconds: f64, flag: &str) -> Result<u64, String> {
    if (0.0..1e9).contains(&seconds) {
        Ok((seconds * 1e3).round() as u64)
    } else {
        Err(format!("{flag} must be a number of seconds, not {seconds}"))
    }
}

impl Params {
    /// The parameters of `test` as the flags give them, checked.
    pub fn new(test: Test, a: &BenchArgs) -> Result<Params, String> {
        let lat = test.kind == Kind::Lat;
        let atomic = test.verb == Verb::Atomic;
        let sizes = if atomic {
            if a.size.is_some_and(|s| s != 8) {
                return Err("atomics move 8 bytes: -s must be 8 (or left out)".into());
            }
            vec![8]
        } else if a.all {
            ALL_SIZES.map(|k| 1usize << k).collect()
        } else {
            vec![a.size.unwrap_or(if lat { 2 } else { 65536 })]
        };
        if sizes.iter().any(|&s| s == 0 || s > 1 << 31) {
            return Err("-s must be between 1 and 2^31".into());
        }
        let inline_size = a.inline.unwrap_or(match test.verb {
            Verb::Write => 220,
            Verb::Send => 236,
            _ => 0,
        });
        if inline_size > 0 && matches!(test.verb, Verb::Read | Verb::Atomic) {
            return Err("READ and atomics cannot send inline: -I must be 0".into());
        }
        let tx_depth = a.tx_depth.unwrap_or(if lat { 1 } else { 128 });
        let cq_mod = a.cq_mod.unwrap_or(if lat { 1 } else { 100 }).min(tx_depth);
        if tx_depth == 0 || cq_mod == 0 || a.post_list == 0 || a.qps == 0 {
            return Err("-t, -Q, -l and -q must be at least 1".into());
        }
        if a.post_list > tx_depth {
            return Err(format!(
                "-l {} is more than the TX depth -t {tx_depth}",
                a.post_list
            ));
        }
        if lat && (a.qps > 1 || a.post_list > 1) {
            return Err("latency tests use one QP and one WR per doorbell (-q 1, -l 1)".into());
        }
        if a.iters == Some(0) {
            return Err("-n must be at least 1".into());
        }
        let duration_ms = a.duration.map(|d| millis(d, "-D")).transpose()?;
        if duration_ms == Some(0) {
            return Err("-D must be at least a millisecond".into());
        }
        // perftest's default margin: a quarter of the duration in whole seconds.
        let margin_ms = match (a.margin, duration_ms) {
            (Some(m), _) => millis(m, "--margin")?,
            (None, Some(d)) => d / 4 / 1000 * 1000,
            (None, None) => 0,
        };
        if let Some(d) = duration_ms {
            if d <= 2 * margin_ms {
                return Err(format!(
                    "-D {} s must be more than twice the margin ({} s): nothing would be \
                     sampled",
                    d as f64 / 1e3,
                    margin_ms as f64 / 1e3
                ));
            }
        }
        Ok(Params {
            test,
            atomic_type: a.atomic_type,
            sizes,
            iters: a.iters.unwrap_or(if lat { 1000 } else { 5000 }),
            duration_ms,
            margin_ms,
            inline_size,
            tx_depth,
            rx_depth: if lat { 16 } else { 512 },
            post_list: a.post_list,
            cq_mod,
            qps: a.qps,
        })
    }

    /// The duration-mode schedule of a run starting now.
    fn schedule(&self) -> Option<Schedule> {
        self.duration_ms.map(|d| {
            Schedule::new(
                Instant::now(),
                Duration::from_millis(d),
                Duration::from_millis(self.margin_ms),
            )
        })
    }

    /// True when perftest would measure the bandwidth peak of this run.
    fn peak_measured(&self) -> bool {
        self.duration_ms.is_none() && self.iters <= PEAK_MAX_ITERS
    }

    fn max_size(&self) -> usize {
        self.sizes.iter().copied().max().unwrap_or(8)
    }

    /// Bytes of buffer per QP: a receive half and a send half.
    fn slot(&self) -> usize {
        2 * self.max_size().next_multiple_of(64)
    }
}

/// Settings that are each side's own business (not compared).
#[derive(Clone, Copy, Debug)]
pub struct Local {
    /// Doorbell mode.
    pub mode: Mode,
    /// Device port.
    pub port: u8,
    /// The unit of this side's bandwidth report.
    pub unit: BwUnit,
    /// False with `-N`: no bandwidth peak.
    pub peak: bool,
}

/// Messages after the handshake.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "msg", rename_all = "snake_case")]
enum Msg {
    Qps { qps: Vec<QpRecord> },
    Ready { size: usize },
    Done { count: u64 },
    Result { pcie: Option<Counts> },
    Report { stats: Stats, pcie: Option<RowPcie> },
}

/// Link counters as exchanged.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counts {
    /// MMIO writes (CPU to NIC).
    pub mmio_writes: u64,
    /// DMA read requests.
    pub dma_reads: u64,
    /// Read completions (CplD).
    pub completions: u64,
    /// DMA writes.
    pub dma_writes: u64,
    /// Link bytes host to NIC.
    pub bytes_down: u64,
    /// Link bytes NIC to host.
    pub bytes_up: u64,
}

impl From<PcieCounters> for Counts {
    fn from(c: PcieCounters) -> Self {
        Counts {
            mmio_writes: c.mmio_writes,
            dma_reads: c.dma_reads,
            completions: c.completions,
            dma_writes: c.dma_writes,
            bytes_down: c.bytes_down,
            bytes_up: c.bytes_up,
        }
    }
}

/// Link cost per message (or per ping-pong iteration).
#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
pub struct PerMessage {
    /// MMIO writes.
    pub mmio_writes: f64,
    /// DMA read requests (MRd).
    pub dma_reads: f64,
    /// Read completions (CplD).
    pub completions: f64,
    /// DMA writes (MWr up).
    pub dma_writes: f64,
    /// Link bytes host to NIC.
    pub bytes_down: f64,
    /// Link bytes NIC to host.
    pub bytes_up: f64,
}

impl PerMessage {
    fn new(c: Counts, n: u64) -> Self {
        let f = |x: u64| x as f64 / n.max(1) as f64;
        PerMessage {
            mmio_writes: f(c.mmio_writes),
            dma_reads: f(c.dma_reads),
            completions: f(c.completions),
            dma_writes: f(c.dma_writes),
            bytes_down: f(c.bytes_down),
            bytes_up: f(c.bytes_up),
        }
    }
}

/// The PCIe cost of a row on each side's link.
#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
pub struct RowPcie {
    /// The client's NIC (the requester in bandwidth tests).
    pub client: PerMessage,
    /// The server's NIC (the responder in bandwidth tests).
    pub server: PerMessage,
}

/// One result row.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Stats {
    /// A latency row.
    Lat(LatRow),
    /// A bandwidth row.
    Bw(BwRow),
}

/// One size's results.
#[derive(Debug)]
pub struct Row {
    /// Statistics.
    pub stats: Stats,
    /// PCIe per message, on the model.
    pub pcie: Option<RowPcie>,
    /// The latency samples (latency tests), for the plot.
    pub latencies: Option<Latencies>,
    /// Messages (ping-pong iterations) run in all; more than the row's iterations in
    /// duration mode, whose margins are run and not sampled.
    pub messages: u64,
}

/// What the client learnt while connecting, for the report header.
#[derive(Clone, Debug)]
pub struct Setup {
    /// Device name.
    pub device: String,
    /// The doorbell mode in effect.
    pub mode: DoorbellMode,
    /// Active MTU.
    pub mtu: u32,
    /// Our QPs.
    pub local: Vec<QpRecord>,
    /// The peer's QPs.
    pub remote: Vec<QpRecord>,
}

/// A WR's send-queue bookkeeping for one QP.
#[derive(Clone, Copy, Debug, Default)]
struct Window {
    posted: u64,
    completed: u64,
    /// Signaled WRs posted and not completed.
    signaled: u64,
    /// The last WR is posted.
    closed: bool,
}

/// Polls between calls to the device's deferred work while nothing arrives.
const IDLE_POLLS: u32 = 256;

/// How long a wait on the model spins before it starts yielding the core: far longer than a
/// model round trip on two free cores (well under a microsecond), so only a shared core
/// yields.
const YIELD_AFTER: Duration = Duration::from_micros(2);

/// Idle polls between looks at the TCP connection (the peer's Done, or its end).
const PEER_CHECK: u32 = 4096;

/// The error to report when the peer spoke (or hung up) in the middle of a test.
fn peer_stopped(peer: &mut Peer) -> Error {
    match peer.recv::<Msg>() {
        Err(e) => format!("the peer stopped during the test: {e}").into(),
        Ok(m) => format!("unexpected message from the peer during the test: {m:?}").into(),
    }
}

/// One side: device, CQ (sends and receives), QPs and their buffer.
struct Side<B: Device> {
    ctx: Context<B>,
    cq: Cq<B>,
    qps: Vec<Qp<B>>,
    mr: MemoryRegion<B>,
    params: Params,
    windows: Vec<Window>,
    received: Vec<u64>,
    recv_posted: Vec<u64>,
    remote: Vec<QpRecord>,
    idle: u32,
    /// When the current run of empty polls began.
    idle_since: Instant,
}

fn marker(i: u64) -> u8 {
    (i % 255 + 1) as u8
}

impl<B: Device> Side<B> {
    fn new(ctx: Context<B>, params: &Params, local: Local) -> Result<Self, Error> {
        let pd = ctx.alloc_pd()?;
        let q = params.qps;
        let cq = ctx.create_cq(q * (params.tx_depth + params.rx_depth) + 16, 64)?;
        // ctrl + raddr + inline header and data, in WQEBBs.
        let bbs = (36 + params.inline_size).div_ceil(64).max(1) as u32;
        let config = QpConfig {
            sq_wqebbs: (params.tx_depth * bbs).next_power_of_two().max(64),
            rq_wqes: params.rx_depth.next_power_of_two(),
            max_send_sge: 1,
            max_recv_sge: 1,
            max_inline: params.inline_size as u32,
        };
        let mut qps = Vec::new();
        for _ in 0..q {
            let mut qp = pd.create_qp(&cq, &cq, &config)?;
            qp.sq().set_mode(match local.mode {
                Mode::Bf => DoorbellMode::BlueFlame,
                Mode::Db => DoorbellMode::Doorbell,
                Mode::Auto => DoorbellMode::Auto,
            });
            qps.push(qp);
        }
        let mr = pd.alloc_mr(params.slot() * q as usize, Access::ALL)?;
        Ok(Side {
            ctx,
            cq,
            qps,
            mr,
            params: params.clone(),
            windows: vec![Window::default(); q as usize],
            received: vec![0; q as usize],
            recv_posted: vec![0; q as usize],
            remote: Vec::new(),
            idle: 0,
            idle_since: Instant::now(),
        })
    }

    fn recv_area(&self, q: usize) -> usize {
        q * self.params.slot()
    }

    fn send_area(&self, q: usize) -> usize {
        self.recv_area(q) + self.params.slot() / 2
    }

    fn records(&self, port: u8) -> Result<Vec<QpRecord>, Error> {
        let mut out = Vec::new();
        for (q, qp) in self.qps.iter().enumerate() {
            let ep = self.ctx.backend().endpoint(port, qp.qpn(), 0)?;
            out.push(QpRecord {
                lid: ep.lid,
                qpn: ep.qpn,
                psn: ep.psn,
                rkey: self.mr.rkey(),
                addr: self.mr.addr() + self.recv_area(q) as u64,
                gid: ep.gid,
            });
        }
        Ok(out)
    }

    fn connect(&mut self, remote: Vec<QpRecord>, port: u8) -> Result<(), Error> {
        if remote.len() != self.qps.len() {
            return Err(format!(
                "the peer has {} QPs, this side {}",
                remote.len(),
                self.qps.len()
            )
            .into());
        }
        // The port's active MTU, as perftest uses by default (4096 on the model; often 1024
        // on RoCE with a 1500-byte Ethernet MTU, where 4096 would be refused).
        let options = ConnectOptions {
            port,
            path_mtu: self.ctx.port(port)?.active_mtu.min(4096),
            ..ConnectOptions::default()
        };
        for (qp, r) in self.qps.iter_mut().zip(&remote) {
            let ep = Endpoint {
                lid: r.lid,
                gid: r.gid,
                qpn: r.qpn,
                psn: r.psn,
            };
            qp.connect(&ep, &options)?;
        }
        self.remote = remote;
        Ok(())
    }

    /// Keeps `rx_depth` receives posted on every QP (SEND tests), each for the largest size,
    /// so a receive posted during one size still fits the next.
    fn refill(&mut self) -> Result<(), Error> {
        let len = (self.params.slot() / 2) as u32;
        if self.params.test.verb != Verb::Send {
            return Ok(());
        }
        for q in 0..self.qps.len() {
            let sge = [self.mr.sge(self.recv_area(q), len)];
            let rq = self.qps[q].rq().ok_or("QP without a receive queue")?;
            while self.recv_posted[q] - self.received[q] < u64::from(self.params.rx_depth) {
                rq.post(self.recv_posted[q], &sge)?;
                self.recv_posted[q] += 1;
            }
        }
        Ok(())
    }

    /// Polls the CQ once; returns how many completions it took.
    fn pump(&mut self) -> Result<usize, Error> {
        let mut done = [Completion::default(); 32];
        let n = self.cq.poll(&mut done);
        for c in &done[..n] {
            if !c.status.is_ok() {
                return Err(format!("completion error on QP {:#x}: {:?}", c.qpn, c.status).into());
            }
            let q = self
                .qps
                .iter()
                .position(|qp| qp.qpn() == c.qpn)
                .ok_or("completion for an unknown QP")?;
            if matches!(c.opcode, WcOpcode::Recv | WcOpcode::RecvRdmaWithImm) {
                self.received[q] += 1;
            } else {
                let w = &mut self.windows[q];
                w.completed = c.wr_id + 1;
                w.signaled -= 1;
            }
        }
        if n == 0 {
            self.idle = self.idle.wrapping_add(1);
            if self.idle == 1 {
                self.idle_since = Instant::now();
            }
            self.waited(self.idle, self.idle_since);
        } else {
            self.idle = 0;
        }
        Ok(n)
    }

    /// Called on the `spins`-th empty look of a wait that began `since`: runs the device's
    /// timers now and then and, on the model, once the wait is long, lets the peer's thread
    /// have this core if it is waiting for it (a busy machine; never on hardware).
    fn waited(&self, spins: u32, since: Instant) {
        if B::SHARES_CPU && spins % 64 == 0 && since.elapsed() > YIELD_AFTER {
            std::thread::yield_now();
        }
        if spins % IDLE_POLLS == 0 {
            self.ctx.backend().progress();
        }
    }

    fn op(&self, q: usize) -> SendOp {
        let r = &self.remote[q];
        let remote = Remote {
            addr: r.addr,
            rkey: r.rkey,
        };
        match (self.params.test.verb, self.params.atomic_type) {
            (Verb::Write, _) => SendOp::Write(remote),
            (Verb::Send, _) => SendOp::Send,
            (Verb::Read, _) => SendOp::Read(remote),
            (Verb::Atomic, AtomicType::FetchAndAdd) => SendOp::FetchAdd { remote, add: 1 },
            (Verb::Atomic, AtomicType::CmpAndSwap) => SendOp::CompareSwap {
                remote,
                compare: 0,
                swap: 0,
            },
        }
    }

    /// Posts `count` WRs on QP `q` with one doorbell; `last` closes the QP's stream (its last
    /// WR is signaled so everything completes).
    fn post(
        &mut self,
        q: usize,
        count: u32,
        last: bool,
        op: SendOp,
        data: Data<'_>,
    ) -> Result<(), Error> {
        let p = &self.params;
        let w = &mut self.windows[q];
        let sq = self.qps[q].sq();
        for j in 0..count {
            let n = w.posted;
            let end = j + 1 == count;
            let outstanding = n + 1 - w.completed;
            // Also signal when the next batch could not be posted without a completion and
            // none is on its way, so moderation never deadlocks the window.
            let signal = (n + 1) % u64::from(p.cq_mod) == 0
                || (end && last)
                || (end
                    && w.signaled == 0
                    && outstanding + u64::from(p.post_list) > u64::from(p.tx_depth));
            let flags = if signal {
                SendFlags::SIGNALED
            } else {
                SendFlags::UNSIGNALED
            };
            sq.push(n, op, data, flags)?;
            w.posted += 1;
            w.signaled += u64::from(signal);
        }
        sq.ring_doorbell();
        w.closed |= last;
        Ok(())
    }

    /// Starts a new size: WR and receive counts from zero. Everything posted before has
    /// completed (each size ends drained), so WR ids can start over.
    fn rebase(&mut self) -> Result<(), Error> {
        if (0..self.qps.len()).any(|q| self.outstanding(q) > 0) {
            return Err("WRs still outstanding at the start of a size".into());
        }
        self.windows.fill(Window::default());
        for (posted, received) in self.recv_posted.iter_mut().zip(&mut self.received) {
            *posted -= *received;
            *received = 0;
        }
        Ok(())
    }

    fn outstanding(&self, q: usize) -> u64 {
        self.windows[q].posted - self.windows[q].completed
    }

    /// Waits until QP `q` may have `count` more WRs outstanding.
    fn make_room(&mut self, q: usize, count: u32) -> Result<(), Error> {
        while self.outstanding(q) + u64::from(count) > u64::from(self.params.tx_depth) {
            self.pump()?;
        }
        Ok(())
    }

    fn drain(&mut self) -> Result<(), Error> {
        while (0..self.qps.len()).any(|q| self.outstanding(q) > 0) {
            self.pump()?;
        }
        Ok(())
    }

    fn pcie(&self) -> Option<PcieCounters> {
        self.ctx.backend().pcie()
    }
}

/// The message payload for iteration `i` (inline), or the local buffer with the marker.
fn data_for<'a, B: Device>(
    side: &Side<B>,
    size: usize,
    payload: &'a mut [u8],
    sge: &'a mut [mlx5_direct::Sge; 1],
    i: u64,
) -> Data<'a> {
    let p = &side.params;
    match p.test.verb {
        Verb::Write | Verb::Send if size <= p.inline_size => {
            payload[size - 1] = marker(i);
            Data::Inline(&payload[..size])
        }
        Verb::Atomic => {
            sge[0] = side.mr.sge(side.send_area(0), 8);
            Data::Sges(&sge[..])
        }
        _ => {
            side.mr.write(side.send_area(0) + size - 1, &[marker(i)]);
            sge[0] = side.mr.sge(side.send_area(0), size as u32);
            Data::Sges(&sge[..])
        }
    }
}

/// True when a run with this `schedule` (duration mode) is over, or `i` iterations of
/// `iters` are done (iteration mode).
fn finished(schedule: Option<&Schedule>, i: u64, iters: u64) -> bool {
    match schedule {
        Some(s) => s.phase(Instant::now()) == Phase::End,
        None => i >= iters,
    }
}

/// Records a latency sample from `from` to `to` (halved for a ping-pong) unless duration
/// mode's margins exclude it.
fn sample(
    lat: &mut Latencies,
    schedule: Option<&Schedule>,
    from: Instant,
    to: Instant,
    halves: bool,
) {
    if schedule.is_none_or(|s| s.sampled(from, to)) {
        let ns = (to - from).as_nanos() as f64;
        lat.record(if halves { ns / 2.0 } else { ns });
    }
}

/// Waits for the peer's ping-pong message `i` on QP 0; false if a TCP message (the client's
/// Done) or the end of the connection came instead.
fn await_ping<B: Device>(
    side: &mut Side<B>,
    peer: &mut Peer,
    size: usize,
    i: u64,
) -> Result<bool, Error> {
    let (mut spins, since) = (0u32, Instant::now());
    loop {
        let arrived = match side.params.test.verb {
            Verb::Write => side.mr.read_volatile_u8(side.recv_area(0) + size - 1) == marker(i),
            _ => {
                side.pump()?;
                side.received[0] > i
            }
        };
        if arrived {
            return Ok(true);
        }
        spins = spins.wrapping_add(1);
        if side.params.test.verb == Verb::Write {
            side.waited(spins, since);
        }
        if spins % PEER_CHECK == 0 && peer.pending()? {
            return Ok(false);
        }
    }
}

/// One side's own measurement of a size: statistics, latency samples (latency tests) and
/// the messages run in all.
type Measured = (Stats, Option<Latencies>, u64);

/// The client's half of one size.
fn client_body<B: Device>(
    side: &mut Side<B>,
    peer: &mut Peer,
    size: usize,
    local: Local,
) -> Result<Measured, Error> {
    side.rebase()?;
    let p = side.params.clone();
    let mut payload = vec![0u8; size.max(1)];
    let mut sge = [mlx5_direct::Sge::default(); 1];
    let schedule = p.schedule();
    match p.test.kind {
        Kind::Lat => {
            let mut lat = Latencies::new();
            let ping_pong = matches!(p.test.verb, Verb::Write | Verb::Send);
            let mut i = 0;
            while !finished(schedule.as_ref(), i, p.iters) {
                side.refill()?;
                let op = side.op(0);
                let data = data_for(side, size, &mut payload, &mut sge, i);
                side.make_room(0, 1)?;
                let t0 = Instant::now();
                side.post(0, 1, false, op, data)?;
                if ping_pong {
                    if !await_ping(side, peer, size, i)? {
                        return Err(peer_stopped(peer));
                    }
                } else {
                    while side.outstanding(0) > 0 {
                        side.pump()?;
                    }
                }
                sample(&mut lat, schedule.as_ref(), t0, Instant::now(), ping_pong);
                side.pump()?;
                i += 1;
            }
            side.drain()?;
            let stats = Stats::Lat(lat.summary(size));
            Ok((stats, Some(lat), i))
        }
        Kind::Bw => {
            let nq = side.qps.len();
            let mut tp = match schedule {
                Some(s) => Throughput::duration(s),
                None => Throughput::iterations(local.peak && p.peak_measured()),
            };
            let mut posted = 0;
            loop {
                for q in 0..nq {
                    let w = side.windows[q];
                    if w.closed {
                        continue;
                    }
                    let remaining = match schedule {
                        Some(_) => u64::MAX,
                        None => p.iters - w.posted,
                    };
                    let count = u64::from(p.post_list).min(remaining) as u32;
                    if side.outstanding(q) + u64::from(count) > u64::from(p.tx_depth) {
                        continue;
                    }
                    let last =
                        u64::from(count) == remaining || finished(schedule.as_ref(), 0, p.iters);
                    let op = side.op(q);
                    let data = data_for(side, size, &mut payload, &mut sge, w.posted);
                    tp.post(posted);
                    side.post(q, count, last, op, data)?;
                    posted += u64::from(count);
                }
                let idle = side.pump()? == 0;
                let completed: u64 = side.windows.iter().map(|w| w.completed).sum();
                tp.look(completed);
                // Nothing arrives for long: is the server still there?
                if idle && side.idle % PEER_CHECK == 0 && peer.pending()? {
                    return Err(peer_stopped(peer));
                }
                if side
                    .windows
                    .iter()
                    .all(|w| w.closed && w.completed == w.posted)
                {
                    return Ok((Stats::Bw(tp.summary(size, local.unit)?), None, completed));
                }
            }
        }
    }
}

/// The server's half of one size: serves until the client's Done. Returns the server's own
/// measurement where perftest's server makes one (the ping-pong latency tests: the time
/// between its consecutive answers; `send_bw`: the receive bandwidth), and the client's
/// count of messages.
fn server_body<B: Device>(
    side: &mut Side<B>,
    peer: &mut Peer,
    size: usize,
    local: Local,
) -> Result<(Option<Measured>, u64), Error> {
    side.rebase()?;
    let p = side.params.clone();
    let mut payload = vec![0u8; size.max(1)];
    let mut sge = [mlx5_direct::Sge::default(); 1];
    let schedule = p.schedule();
    let ping_pong = p.test.kind == Kind::Lat && matches!(p.test.verb, Verb::Write | Verb::Send);
    let receives = p.test.kind == Kind::Bw && p.test.verb == Verb::Send;
    let mut lat = Latencies::new();
    let mut tp = match schedule {
        Some(s) => Throughput::duration(s),
        None => Throughput::iterations(false),
    };
    if ping_pong {
        let mut i = 0;
        let mut answered: Option<Instant> = None;
        while await_ping(side, peer, size, i)? {
            side.refill()?;
            let op = side.op(0);
            let data = data_for(side, size, &mut payload, &mut sge, i);
            side.make_room(0, 1)?;
            let now = Instant::now();
            if let Some(before) = answered {
                sample(&mut lat, schedule.as_ref(), before, now, true);
            }
            answered = Some(now);
            side.post(0, 1, false, op, data)?;
            side.pump()?;
            i += 1;
        }
        side.drain()?;
    } else if receives {
        let mut spins = 0u32;
        loop {
            side.pump()?;
            tp.look(side.received.iter().sum());
            side.refill()?;
            spins = spins.wrapping_add(1);
            if spins % PEER_CHECK == 0 && peer.pending()? {
                break;
            }
        }
    }
    let count = match peer.recv()? {
        Msg::Done { count } => count,
        m => return Err(format!("expected the client's Done, got {m:?}").into()),
    };
    let own = if ping_pong {
        Some((Stats::Lat(lat.summary(size)), Some(lat), count))
    } else if receives {
        while side.received.iter().sum::<u64>() < count {
            side.pump()?;
            tp.look(side.received.iter().sum());
            side.refill()?;
        }
        Some((Stats::Bw(tp.summary(size, local.unit)?), None, count))
    } else {
        None
    };
    Ok((own, count))
}

/// The flag that sets a [`Params`] field.
fn flag(field: &str) -> &'static str {
    match field {
        "test.verb" | "test.kind" => "the test name",
        "atomic_type" => "-A",
        "sizes" => "-s / -a",
        "iters" => "-n",
        "duration_ms" => "-D",
        "margin_ms" => "--margin",
        "inline_size" => "-I",
        "tx_depth" => "-t",
        "post_list" => "-l",
        "cq_mod" => "-Q",
        "qps" => "-q",
        _ => "the test (derived from it)",
    }
}

/// The handshake, with a mismatch also naming the flag to change.
fn handshake(peer: &mut Peer, params: &Params) -> Result<(), Error> {
    peer.handshake(params).map_err(|e| match &e {
        ExchangeError::Mismatch(differences) => {
            let all: Vec<String> = differences
                .iter()
                .map(|d| format!("{d} (set by {})", flag(&d.field)))
                .collect();
            format!(
                "parameter mismatch: {}; give both sides the same flags",
                all.join("; ")
            )
            .into()
        }
        _ => e.into(),
    })
}

/// Opens both sides' QPs to each other: exchanges records, connects, pre-posts receives.
fn setup<B: Device>(
    ctx: Context<B>,
    peer: &mut Peer,
    params: &Params,
    local: Local,
) -> Result<(Side<B>, Setup), Error> {
    let mut side = Side::new(ctx, params, local)?;
    let mine = side.records(local.port)?;
    let theirs = match peer.swap(&Msg::Qps { qps: mine.clone() })? {
        Msg::Qps { qps } => qps,
        m => return Err(format!("expected the peer's QPs, got {m:?}").into()),
    };
    side.connect(theirs.clone(), local.port)?;
    side.refill()?;
    let port = side.ctx.port(local.port)?;
    let mode = side.qps[0].sq().effective_mode();
    let info = Setup {
        device: side.ctx.backend().name().to_string(),
        mode,
        mtu: port.active_mtu,
        local: mine,
        remote: theirs,
    };
    Ok((side, info))
}

/// The server: handshake, then each size as the client drives it, reported to `sink` as
/// perftest's server reports it: its own measurement in the ping-pong latency tests and
/// `send_bw`, the client's row in the other bandwidth tests, no row in `read_lat` and
/// `atomic_lat` (the header only).
pub fn serve<B: Device>(
    ctx: Context<B>,
    mut peer: Peer,
    params: &Params,
    local: Local,
    sink: &mut dyn Sink,
) -> Result<(), Error> {
    handshake(&mut peer, params)?;
    let (mut side, info) = setup(ctx, &mut peer, params, local)?;
    sink.header(&info, params);
    for &size in &params.sizes {
        match peer.recv()? {
            Msg::Ready { size: s } if s == size => {}
            m => return Err(format!("expected Ready for {size} bytes, got {m:?}").into()),
        }
        let before = side.pcie();
        peer.send(&Msg::Ready { size })?;
        let (own, count) = server_body(&mut side, &mut peer, size, local)?;
        let pcie = side.pcie().zip(before).map(|(a, b)| Counts::from(a - b));
        peer.send(&Msg::Result { pcie })?;
        let (stats, pcie) = match peer.recv()? {
            Msg::Report { stats, pcie } => (stats, pcie),
            m => return Err(format!("expected the client's report, got {m:?}").into()),
        };
        let row = match own {
            Some((stats, latencies, messages)) => Some(Row {
                stats,
                pcie,
                latencies,
                messages,
            }),
            None if params.test.kind == Kind::Bw => Some(Row {
                stats,
                pcie,
                latencies: None,
                messages: count,
            }),
            None => None,
        };
        if let Some(row) = row {
            sink.row(row)?;
        }
    }
    Ok(())
}

/// Receives a side's report.
pub trait Sink {
    /// Connected: the header.
    fn header(&mut self, setup: &Setup, params: &Params);
    /// One size done.
    fn row(&mut self, row: Row) -> Result<(), Error>;
}

/// The client: handshake, then each size, reported to `sink` (and to the server).
pub fn client<B: Device>(
    ctx: Context<B>,
    mut peer: Peer,
    params: &Params,
    local: Local,
    sink: &mut dyn Sink,
) -> Result<(), Error> {
    handshake(&mut peer, params)?;
    let (mut side, info) = setup(ctx, &mut peer, params, local)?;
    sink.header(&info, params);
    for &size in &params.sizes {
        match peer.swap(&Msg::Ready { size })? {
            Msg::Ready { size: s } if s == size => {}
            m => return Err(format!("expected Ready for {size} bytes, got {m:?}").into()),
        }
        let before = side.pcie();
        let (stats, latencies, count) = client_body(&mut side, &mut peer, size, local)?;
        let mine = side.pcie().zip(before).map(|(a, b)| Counts::from(a - b));
        peer.send(&Msg::Done { count })?;
        let theirs = match peer.recv()? {
            Msg::Result { pcie } => pcie,
            m => return Err(format!("expected the server's result, got {m:?}").into()),
        };
        let pcie = mine.zip(theirs).map(|(c, s)| RowPcie {
            client: PerMessage::new(c, count),
            server: PerMessage::new(s, count),
        });
        peer.send(&Msg::Report {
            stats: stats.clone(),
            pcie,
        })?;
        sink.row(Row {
            stats,
            pcie,
            latencies,
            messages: count,
        })?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_compared_parameter_names_its_flag() {
        let params = Params {
            test: Test {
                verb: Verb::Write,
                kind: Kind::Bw,
            },
            atomic_type: AtomicType::FetchAndAdd,
            sizes: vec![2],
            iters: 1,
            duration_ms: None,
            margin_ms: 0,
            inline_size: 0,
            tx_depth: 1,
            rx_depth: 1,
            post_list: 1,
            cq_mod: 1,
            qps: 1,
        };
        let serde_json::Value::Object(fields) = serde_json::to_value(&params).unwrap() else {
            panic!("params are an object");
        };
        for (k, v) in fields {
            let names: Vec<String> = match v {
                serde_json::Value::Object(inner) => {
                    inner.keys().map(|i| format!("{k}.{i}")).collect()
                }
                _ => vec![k],
            };
            for name in names {
                let derived = name == "rx_depth";
                assert_eq!(flag(&name) == flag("?"), derived, "{name}");
            }
        }
    }
}
