//! The benchmarks, generic over the backend: one side's resources, the client's and the
//! server's loops, and the per-size protocol over the [`Peer`] connection.
//!
//! - `*_lat` WRITE and SEND: ping-pong. Each side answers the other's message; a sample is
//!   half the round trip, as in perftest. The WRITE side spins on the last byte of its buffer.
//! - `*_lat` READ and atomic: the client alone, a sample is post to completion.
//! - `*_bw`: the client keeps up to `-t` WRs outstanding per QP, posts `-l` WRs per doorbell
//!   and asks for a CQE every `-Q` WRs; the SEND server keeps receives posted.

use std::time::{Duration, Instant};

use mlx5_direct::backend::sim::PcieCounters;
use mlx5_direct::backend::Backend;
use mlx5_direct::{Access, Context, MemOptions, Pages, Qp};
use serde::{Deserialize, Serialize};

use crate::cli::{BenchArgs, Kind, Mode, Verb};
use crate::exchange::{ExchangeError, Peer, QpRecord};
use crate::stats::{perftest_samples, perftest_summary, BwUnit, Latencies, Phase, Throughput};
pub use crate::Error;

mod host;
mod hwts;
mod pace;
mod params;
pub mod perftest;
mod row;
mod side;
#[cfg(test)]
mod tests;
mod xrc;

pub use host::{cpu_mhz, MODEL_COUNTERS};
pub use hwts::HwRow;
pub use params::{pp_kbps, Connection, Params, RateLimit, RdmaCm, DEF_DC_KEY, DEF_MGID, DEF_QKEY};
pub use row::{Counts, PerMessage, Row, RowCompletions, RowPcie, Setup, Stats};
use side::{await_ping, data_for, finished, lat_signals, peer_stopped, sample, spin, Side};

/// What the benchmarks need from a backend beyond [`Backend`].
pub trait Device: Backend {
    /// The link counters, when the device counts them (the model).
    fn pcie(&self) -> Option<PcieCounters>;
    /// Runs deferred device work (the model's timers: RNR and transport retries); nothing
    /// on hardware, where the NIC has its own clock.
    fn progress(&self);
    /// The value of the `-W` counter `name` of `port`: on hardware the sysfs file
    /// `/sys/class/infiniband/DEVICE/ports/PORT/NAME` that perftest reads, on the model one
    /// of its own counts ([`host::MODEL_COUNTERS`]).
    fn counter(&self, port: u8, name: &str) -> Result<u64, Error>;
    /// True when the peer's device work runs on a CPU thread of this process (the model):
    /// a waiting thread then yields often, so a ping-pong survives sharing a core.
    const SHARES_CPU: bool;
    /// True when a multicast group's MLID comes from the subnet manager's join (a NIC on
    /// InfiniBand), which mlx5-perf does not make; the model has no subnet manager and
    /// takes any multicast LID.
    const MLID_FROM_SM: bool;
}

impl Device for mlx5_direct::backend::sim::Sim {
    fn pcie(&self) -> Option<PcieCounters> {
        Some(self.nic().pcie())
    }

    fn progress(&self) {
        self.nic().progress();
    }

    fn counter(&self, _port: u8, name: &str) -> Result<u64, Error> {
        host::model_counter(self, name).ok_or_else(|| {
            format!(
                "-W {name}: the model has no sysfs port counters; it counts {}",
                host::MODEL_COUNTERS.join(", ")
            )
            .into()
        })
    }

    const SHARES_CPU: bool = true;
    const MLID_FROM_SM: bool = false;
}

#[cfg(feature = "verbs")]
impl Device for mlx5_direct::backend::verbs::Verbs {
    fn pcie(&self) -> Option<PcieCounters> {
        None
    }

    fn progress(&self) {}

    fn counter(&self, port: u8, name: &str) -> Result<u64, Error> {
        let path = format!(
            "/sys/class/infiniband/{}/ports/{port}/{name}",
            mlx5_direct::backend::Backend::name(self)
        );
        let text = std::fs::read_to_string(&path).map_err(|e| format!("-W {path}: {e}"))?;
        text.trim()
            .parse()
            .map_err(|e| format!("-W {path}: {text:?}: {e}").into())
    }

    const SHARES_CPU: bool = false;
    const MLID_FROM_SM: bool = true;
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
    /// CQEs taken per poll call (`--cqe_poll`; perftest's `CTX_POLL_BATCH` is 16).
    pub cqe_poll: u16,
    /// Path MTU (`-m`; None: the port's active MTU).
    pub mtu: Option<u32>,
    /// Local ACK timeout exponent (`-u`).
    pub qp_timeout: u8,
    /// GRH traffic class (`--tclass`).
    pub traffic_class: u8,
    /// Service level (`-S`).
    pub sl: u8,
    /// GRH flow label (`--flow_label`).
    pub flow_label: u32,
    /// P_Key index (`--pkey_index`).
    pub pkey_index: u16,
    /// The source GID index `-x` names: with it UD and DC address handles carry a GRH on
    /// InfiniBand too (perftest sets `is_global` whenever `-x` is given); RoCE uses the
    /// port's default without it (`PortInfo::gid_index`).
    pub gid_index: Option<u8>,
    /// Type of service of the rdma_cm connections (`-T`).
    pub tos: Option<u8>,
    /// Transport retries of the rdma_cm connections (`--retry_count`).
    pub retry_count: u8,
    /// Latency tests: spin this long before each post (`--latency_gap`).
    pub latency_gap: Duration,
    /// Latency tests: perftest's statistics (`--perftest-stats`) instead of ours.
    pub perftest_stats: bool,
    /// Latency tests: keep perftest's samples for the report (`-H`, `-U`).
    pub keep_samples: bool,
    /// Sleep on CQ events instead of spinning on the CQ (`-e`).
    pub events: bool,
    /// `--cpu_util`: the CPU utilisation over each sampling window.
    pub cpu_util: bool,
    /// Seconds to wait before releasing the resources (`--wait_destroy`).
    pub wait_destroy: u32,
    /// Where the test buffers live (`--use_hugepages`, `--numa_node`).
    pub memory: MemOptions,
    /// The test buffers are registered on demand (`--odp`).
    pub odp: bool,
    /// Latency tests: CQs with timestamps, and the latency by the NIC's clock beside the
    /// CPU's (`--hw-timestamps`).
    pub hw_timestamps: bool,
    /// The least bytes of each QP's receive and send areas: 0, or with perftest's exchange
    /// its cycle buffer (the larger page size of the two sides), within which a perftest
    /// peer moves its remote address from message to message (`increase_rem_addr`).
    pub area: usize,
    /// The exchange is perftest 4.5+0.17's (`--perftest-exchange`, [`perftest`]).
    pub perftest_exchange: bool,
}

impl Local {
    /// This side's settings as the flags give them.
    pub fn new(a: &BenchArgs) -> Local {
        Local {
            mode: a.mode,
            port: a.ib_port,
            unit: BwUnit::new(a.report_gbits),
            peak: !a.no_peak,
            cqe_poll: a.cqe_poll,
            mtu: a.mtu,
            qp_timeout: a.qp_timeout,
            traffic_class: a.tclass,
            sl: a.sl,
            flow_label: a.flow_label,
            pkey_index: a.pkey_index,
            gid_index: a.gid_index.map(|x| x as u8),
            tos: a.tos,
            retry_count: a.retry_count,
            latency_gap: Duration::from_micros(a.latency_gap),
            perftest_stats: a.perftest_stats,
            keep_samples: a.histogram || a.unsorted,
            events: a.events,
            cpu_util: a.cpu_util,
            wait_destroy: a.wait_destroy,
            memory: MemOptions {
                pages: if a.use_hugepages {
                    Pages::Huge
                } else {
                    Pages::Base
                },
                numa_node: a.numa_node,
            },
            odp: a.odp,
            hw_timestamps: a.hw_timestamps,
            area: 0,
            perftest_exchange: a.perftest_exchange,
        }
    }

    /// The rights of the test buffers' registration (on demand with `--odp`).
    pub(super) fn access(&self) -> Access {
        if self.odp {
            Access(Access::ALL.0 | Access::ON_DEMAND.0)
        } else {
            Access::ALL
        }
    }

    /// True when the times of the posts are kept (perftest's samples).
    fn times_posts(&self) -> bool {
        self.perftest_stats || self.keep_samples
    }

    /// The latency row of `lat`, or perftest's from the times of the posts, and perftest's
    /// samples when asked for.
    fn lat_row(
        &self,
        lat: &Latencies,
        posts: &[Instant],
        halves: bool,
        size: usize,
        iterations: u64,
    ) -> Result<(Stats, Option<Vec<f64>>), Error> {
        let samples = perftest_samples(posts, halves);
        let row = if self.perftest_stats {
            perftest_summary(&samples, size, iterations).ok_or(
                "--perftest-stats: fewer than 3 gaps between posts (perftest leaves the two \
                 largest out)",
            )?
        } else {
            lat.summary(size, iterations)
        };
        Ok((Stats::Lat(row), self.keep_samples.then_some(samples)))
    }
}

/// Messages after the handshake.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "msg", rename_all = "snake_case")]
enum Msg {
    Qps {
        qps: Vec<QpRecord>,
    },
    Ready {
        size: usize,
    },
    Done {
        count: u64,
    },
    Result {
        pcie: Option<Counts>,
        /// The server's completions by opcode.
        completions: std::collections::BTreeMap<String, u64>,
        /// `-b`: the server's own sending, and its messages.
        duplex: Option<(Stats, u64)>,
    },
    Report {
        stats: Stats,
        pcie: Option<RowPcie>,
        completions: RowCompletions,
    },
}

/// One side's own measurement of a size: statistics, latency samples (latency tests),
/// perftest's samples (with `-H` / `-U`), the messages run in all and the latency by the
/// NIC's clock (`--hw-timestamps`).
type Measured = (
    Stats,
    Option<Latencies>,
    Option<Vec<f64>>,
    u64,
    Option<HwRow>,
);

/// Checks that `msg` is the peer's Ready for `size`.
fn expect_ready(msg: Msg, size: usize) -> Result<(), Error> {
    match msg {
        Msg::Ready { size: s } if s == size => Ok(()),
        m => Err(format!("expected Ready for {size} bytes, got {m:?}").into()),
    }
}

/// The client's half of one size.
fn client_body<B: Device>(
    side: &mut Side<B>,
    peer: &mut Peer,
    size: usize,
    local: Local,
) -> Result<Measured, Error> {
    side.rebase(size)?;
    let p = side.params.clone();
    let mut payload = vec![0u8; size.max(1)];
    let mut sge = [mlx5_direct::Sge::default(); 1];
    let schedule = p.schedule();
    match p.test.kind {
        Kind::Lat => {
            let mut lat = Latencies::new();
            let mut posts = Vec::new();
            let ping_pong = matches!(p.test.verb, Verb::Write | Verb::Send);
            side.time_by_nic(schedule)?;
            let mut i = 0;
            while !finished(schedule.as_ref(), i, p.iters) {
                side.refill()?;
                let op = side.op(0);
                let data = data_for(side, size, &mut payload, &mut sge, i);
                side.make_room(0, 1)?;
                spin(local.latency_gap);
                let t0 = Instant::now();
                if local.times_posts() && schedule.is_none_or(|s| s.phase(t0) == Phase::Sample) {
                    posts.push(t0);
                }
                let signal = lat_signals(&p, schedule.as_ref(), i);
                side.post(0, 1, signal, op, data)?;
                if ping_pong {
                    if !await_ping(side, peer, size, i)? {
                        return Err(peer_stopped(peer));
                    }
                } else {
                    while side.outstanding(0) > 0 {
                        side.pump()?;
                    }
                }
                let t1 = Instant::now();
                sample(&mut lat, schedule.as_ref(), t0, t1, ping_pong);
                if let Some(s) = &schedule {
                    side.cpu.look(s.phase(t1));
                }
                side.pump()?;
                i += 1;
            }
            if schedule.is_some() {
                // The window closed between two iterations (no end margin to look in).
                side.cpu.look(Phase::End);
            }
            side.drain()?;
            let iterations = if schedule.is_some() { lat.count() } else { i };
            let (stats, samples) = local.lat_row(&lat, &posts, ping_pong, size, iterations)?;
            let hw = side.hw.take().map(|h| h.row(size));
            Ok((stats, Some(lat), samples, i, hw))
        }
        Kind::Bw => {
            let (stats, completed) =
                bw_loop(side, Some(peer), size, local, &mut payload, &mut sge)?;
            Ok((stats, None, None, completed, None))
        }
    }
}

/// perftest's `perform_warm_up`: a TX depth of WRs on every QP (in post lists), all
/// completed before the size starts (so neither timed nor in either side's link counts);
/// the measurement then counts from zero.
fn warm_up<B: Device>(side: &mut Side<B>, size: usize) -> Result<(), Error> {
    side.rebase(size)?;
    let p = side.params.clone();
    let mut payload = vec![0u8; size.max(1)];
    let mut sge = [mlx5_direct::Sge::default(); 1];
    for q in 0..side.qps.len() {
        for _ in 0..p.tx_depth / p.post_list {
            let op = side.op(q);
            let data = data_for(side, size, &mut payload, &mut sge, side.windows[q].posted);
            side.post(q, p.post_list, true, op, data)?;
        }
    }
    side.drain()
}

/// The bandwidth tests' posting loop: up to `-t` WRs outstanding per QP, `-l` per
/// doorbell, a CQE every `-Q`; with `-b` also keeping receives posted. Looks at `peer`
/// (when given) while idle, to stop if it went away. Returns the row and the messages
/// completed.
fn bw_loop<B: Device>(
    side: &mut Side<B>,
    mut peer: Option<&mut Peer>,
    size: usize,
    local: Local,
    payload: &mut [u8],
    sge: &mut [mlx5_direct::Sge; 1],
) -> Result<(Stats, u64), Error> {
    let p = side.params.clone();
    let schedule = p.schedule();
    let nq = side.qps.len();
    let mut tp = match schedule {
        Some(s) => Throughput::duration(s),
        None => Throughput::iterations(local.peak && p.peak_measured()),
    };
    let mut pacer = p.rate_limit.map(|r| pace::Pacer::new(r.pps(size), r.burst));
    let mut posted = 0;
    loop {
        if p.duplex {
            side.refill()?;
        }
        for q in 0..nq {
            let w = side.windows[q];
            if w.closed || pacer.as_mut().is_some_and(|r| !r.allow(Instant::now())) {
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
            let last = u64::from(count) == remaining || finished(schedule.as_ref(), 0, p.iters);
            let op = side.op(q);
            let data = data_for(side, size, payload, sge, w.posted);
            tp.post(posted);
            side.post(q, count, last, op, data)?;
            posted += u64::from(count);
            if let Some(r) = &mut pacer {
                r.posted(u64::from(count));
            }
        }
        let idle = side.pump()? == 0;
        let completed: u64 = side.windows.iter().map(|w| w.completed).sum();
        tp.look(completed);
        if let Some(s) = &schedule {
            side.cpu.look(s.phase(Instant::now()));
        }
        // Nothing arrives for long: is the peer still there?
        if let Some(peer) = peer.as_deref_mut() {
            if idle && side.peer_check_due(side.idle) && peer.pending()? {
                return Err(peer_stopped(peer));
            }
        }
        if side
            .windows
            .iter()
            .all(|w| w.closed && w.completed == w.posted)
        {
            return Ok((Stats::Bw(tp.summary(size, local.unit)?), completed));
        }
    }
}

/// Keeps completing and reposting receives until the peer's next TCP message (or its
/// end) is waiting: a side that finished first keeps the other's SENDs landing.
fn serve_until_message<B: Device>(
    side: &mut Side<B>,
    peer: &mut Peer,
    mut each: impl FnMut(&Side<B>),
) -> Result<(), Error> {
    let mut spins = 0u32;
    loop {
        side.pump()?;
        each(side);
        side.refill()?;
        spins = spins.wrapping_add(1);
        if side.peer_check_due(spins) && peer.pending()? {
            return Ok(());
        }
    }
}

/// How long a UC or UD receiver waits for the next message once the sender is done and
/// counted more than arrived: those messages found no receive and were dropped (neither
/// transport retries).
const LOSS_WAIT: Duration = Duration::from_millis(200);

/// Takes receive completions until `count` messages arrived in all (`tp` looking on), or,
/// on UC and UD, until none came for [`LOSS_WAIT`]: the rest were dropped, which is
/// reported on stderr. Returns the messages that arrived.
fn await_receives<B: Device>(
    side: &mut Side<B>,
    count: u64,
    tp: &mut Throughput,
) -> Result<u64, Error> {
    let unreliable = side.params.connection.unreliable();
    let mut last = (side.received.iter().sum::<u64>(), Instant::now());
    while last.0 < count {
        side.pump()?;
        let received = side.received.iter().sum();
        tp.look(received);
        side.refill()?;
        if received > last.0 {
            last = (received, Instant::now());
        } else if unreliable && last.1.elapsed() > LOSS_WAIT {
            eprintln!(
                "mlx5-perf: -c {}: {} of {count} messages were dropped (no receive was posted \
                 when they arrived; {} does not retry)",
                side.params.connection.name(),
                count - received,
                side.params.connection.name()
            );
            break;
        }
    }
    Ok(last.0)
}

/// The ping-pong side that answers (WRITE and SEND latency): waits for the peer's message
/// `i`, then posts its own, sampling the time between its consecutive answers (halved),
/// perftest's server measure. Ends after `count` answers (perftest's exchange), or without
/// one when the peer's next TCP message (its Done) is waiting. Returns the samples and the
/// times of the posts.
fn lat_follow<B: Device>(
    side: &mut Side<B>,
    peer: &mut Peer,
    size: usize,
    local: Local,
    count: Option<u64>,
) -> Result<(Latencies, Vec<Instant>), Error> {
    let p = side.params.clone();
    let mut payload = vec![0u8; size.max(1)];
    let mut sge = [mlx5_direct::Sge::default(); 1];
    let schedule = p.schedule();
    let mut lat = Latencies::new();
    let mut posts = Vec::new();
    side.time_by_nic(schedule)?;
    let mut i = 0;
    let mut answered: Option<Instant> = None;
    while count.is_none_or(|n| i < n) {
        if !await_ping(side, peer, size, i)? {
            match count {
                None => break,
                Some(_) => return Err(peer_stopped(peer)),
            }
        }
        side.refill()?;
        let op = side.op(0);
        let data = data_for(side, size, &mut payload, &mut sge, i);
        side.make_room(0, 1)?;
        let now = Instant::now();
        if let Some(before) = answered {
            sample(&mut lat, schedule.as_ref(), before, now, true);
        }
        if local.times_posts() {
            posts.push(now);
        }
        answered = Some(now);
        side.post(0, 1, lat_signals(&p, schedule.as_ref(), i), op, data)?;
        side.pump()?;
        i += 1;
    }
    side.drain()?;
    Ok((lat, posts))
}

/// The answering side's row of [`lat_follow`]'s samples for `count` iterations.
fn follow_row<B: Device>(
    side: &mut Side<B>,
    local: Local,
    (lat, posts): (Latencies, Vec<Instant>),
    size: usize,
    count: u64,
) -> Result<Measured, Error> {
    let iterations = match side.params.schedule() {
        Some(_) => lat.count(),
        None => count,
    };
    let (stats, samples) = local.lat_row(&lat, &posts, true, size, iterations)?;
    let hw = side.hw.take().map(|h| h.row(size));
    Ok((stats, Some(lat), samples, count, hw))
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
    side.rebase(size)?;
    let p = side.params.clone();
    let mut payload = vec![0u8; size.max(1)];
    let mut sge = [mlx5_direct::Sge::default(); 1];
    let schedule = p.schedule();
    let ping_pong = p.test.kind == Kind::Lat && matches!(p.test.verb, Verb::Write | Verb::Send);
    let receives = p.test.kind == Kind::Bw && p.receives() && !p.duplex;
    let mut duplex = None;
    let mut pong = None;
    let mut tp = match schedule {
        Some(s) => Throughput::duration(s),
        None => Throughput::iterations(false),
    };
    if ping_pong {
        pong = Some(lat_follow(side, peer, size, local, None)?);
    } else if receives {
        serve_until_message(side, peer, |s| tp.look(s.received.iter().sum()))?;
    } else if p.duplex {
        // -b: the server sends as the client does, at the same time.
        duplex = Some(bw_loop(side, None, size, local, &mut payload, &mut sge)?);
        serve_until_message(side, peer, |_| {})?;
    }
    let count = match peer.recv()? {
        Msg::Done { count } => count,
        m => return Err(format!("expected the client's Done, got {m:?}").into()),
    };
    let own = if let Some(pong) = pong {
        Some(follow_row(side, local, pong, size, count)?)
    } else if receives {
        Some(receive_row(side, count, &mut tp, size, local)?)
    } else {
        duplex.map(|(stats, sent)| (stats, None, None, sent, None))
    };
    Ok((own, count))
}

/// A receiver's own row (`send_bw`'s server): takes receives until `count` arrived
/// ([`await_receives`], `tp` looking on), then the receive bandwidth.
fn receive_row<B: Device>(
    side: &mut Side<B>,
    count: u64,
    tp: &mut Throughput,
    size: usize,
    local: Local,
) -> Result<Measured, Error> {
    let received = await_receives(side, count, tp)?;
    tp.close(received);
    Ok((
        Stats::Bw(tp.summary(size, local.unit)?),
        None,
        None,
        count,
        None,
    ))
}

/// The flag that sets a [`Params`] field.
fn flag(field: &str) -> &'static str {
    match field {
        "test.verb" | "test.kind" => "the test name",
        "connection" => "-c",
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
        "rx_depth" => "-r",
        "out_reads" => "-o",
        "duplex" => "-b",
        "warm_up" => "--perform_warm_up",
        "imm" => "--write_with_imm / --send_with_imm",
        "srq" => "--use-srq",
        "reversed" => "--reversed",
        "validate" => "--data_validation",
        "periods" => "--run_infinitely",
        f if f.starts_with("rate_limit") => "--rate_limit / --rate_units / --burst_size",
        "recv_post_list" => "--recv_post_list",
        "rdma_cm" => "-R / -z",
        "use_dm" => "--use-dm",
        "dci_streams" => "--log_dci_streams / --log_active_dci_streams",
        "pacing_kbps" => "--rate_limit / --rate_units with --rate_limit_type PP",
        "mcast" => "-g / -M",
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

/// Carries the QP records through rdma_cm instead of the TCP exchange (`-R`, `-z`): the
/// hardware side's connections (`run.rs`), one per QP, kept until the run ends.
pub trait CmLink<B: Backend> {
    /// Introduces this side's QP `index`, whose record is `mine`: with `-R` connects `qp`
    /// (in RESET) through rdma_cm (READ / atomic depth `out_reads`, path MTU at most
    /// `path_mtu`), with `-z` only exchanges the records. Returns the peer's record.
    fn link(
        &mut self,
        qp: &mut Qp<B>,
        index: usize,
        mine: &QpRecord,
        out_reads: u8,
        path_mtu: u32,
    ) -> Result<QpRecord, Error>;
}

/// Opens both sides' QPs to each other: compares the parameters, exchanges records (over
/// TCP, or through `cm`), connects, pre-posts receives, and hands the header to `sink`.
fn setup<B: Device>(
    ctx: Context<B>,
    peer: &mut Peer,
    params: &Params,
    local: Local,
    server: bool,
    sink: &mut dyn Sink,
    cm: Option<&mut dyn CmLink<B>>,
) -> Result<Side<B>, Error> {
    if local.hw_timestamps {
        // Before the handshake: both ends stop with this one reason.
        ctx.clock_info()
            .map_err(|e| format!("--hw-timestamps: {e} (the CQEs carry no time to convert)"))?;
    }
    handshake(peer, params)?;
    let mut side = Side::new(ctx, params, local)?;
    side.attach_dm(server)?;
    let mine = side.records(local.port, server)?;
    let theirs = match cm {
        Some(link) => side.link(link, &mine, local.port)?,
        None => {
            let theirs = match peer.swap(&Msg::Qps { qps: mine.clone() })? {
                Msg::Qps { qps } => qps,
                m => return Err(format!("expected the peer's QPs, got {m:?}").into()),
            };
            side.connect(theirs.clone(), local.port)?;
            theirs
        }
    };
    announce(&mut side, params, local, mine, theirs, server, sink)?;
    Ok(side)
}

/// perftest's `gid_index` after `check_link`: `-x`, else on RoCE the port's (none, -1, on
/// InfiniBand): whether records carry GIDs and the header prints them.
fn gid_index<B: Device>(side: &Side<B>, local: Local) -> Result<Option<u32>, Error> {
    let port = side.ctx.port(local.port)?;
    Ok(local
        .gid_index
        .or(port.roce.then_some(port.gid_index))
        .map(u32::from))
}

/// Connected: keeps receives posted, warns where perftest warns, and hands the header
/// (this side's and the peer's records `mine` and `theirs`) to `sink`.
fn announce<B: Device>(
    side: &mut Side<B>,
    params: &Params,
    local: Local,
    mine: Vec<QpRecord>,
    theirs: Vec<QpRecord>,
    server: bool,
    sink: &mut dyn Sink,
) -> Result<(), Error> {
    side.refill()?;
    let mode = side.qps[0].sq().effective_mode();
    let info = Setup {
        device: side.ctx.backend().name().to_string(),
        mode,
        mtu: side.path_mtu(local.port)?,
        local: mine,
        remote: theirs,
        server,
        out_reads: side.out_reads(),
        cqe_poll: local.cqe_poll,
        tos: local.tos,
        gid_index: gid_index(side, local)?,
    };
    if local.mtu.is_some_and(|m| m > info.mtu) {
        eprintln!(
            "mlx5-perf: -m: requested mtu is higher than active mtu; changing to active mtu - {}",
            info.mtu
        );
    }
    let max = side.ctx.caps().max_rd_atomic;
    if params.out_reads > u32::from(max) {
        eprintln!(
            "mlx5-perf: -o {}: the number of outstanding reads is above the device's maximum \
             {max}; using {max}",
            params.out_reads
        );
    }
    sink.header(&info, params);
    Ok(())
}

/// The server: handshake, then each size as the client drives it, reported to `sink` as
/// perftest's server reports it: its own measurement in the ping-pong latency tests and
/// `send_bw`, the client's row in the other bandwidth tests, no row in `read_lat` and
/// `atomic_lat` (the header only). `cm` carries the QP records through rdma_cm (`-R`,
/// `-z`); without it they go over `peer`.
pub fn serve<B: Device>(
    ctx: Context<B>,
    mut peer: Peer,
    params: &Params,
    local: Local,
    sink: &mut dyn Sink,
    cm: Option<&mut dyn CmLink<B>>,
) -> Result<(), Error> {
    let mut side = setup(ctx, &mut peer, params, local, true, sink, cm)?;
    for size in params.runs() {
        expect_ready(peer.recv()?, size)?;
        side.prepare_validation(size, true);
        let mut before = side.pcie();
        peer.send(&Msg::Ready { size })?;
        if params.warm_up {
            expect_ready(peer.recv()?, size)?;
            before = side.pcie();
            peer.send(&Msg::Ready { size })?;
        }
        let (own, count) = server_body(&mut side, &mut peer, size, local)?;
        // Every WRITE completed at the client before its Done: the data is in place.
        side.validate(size, true)?;
        let pcie = side.pcie().zip(before).map(|(a, b)| Counts::from(a - b));
        // -b: the server's sending goes to the client, which prints both directions.
        let (own, duplex) = match own {
            Some((stats, _, _, sent, _)) if params.duplex => (None, Some((stats, sent))),
            own => (own, None),
        };
        let completions = side.opcodes.to_map();
        peer.send(&Msg::Result {
            pcie,
            completions,
            duplex,
        })?;
        let (stats, pcie, completions) = match peer.recv()? {
            Msg::Report {
                stats,
                pcie,
                completions,
            } => (stats, pcie, completions),
            m => return Err(format!("expected the client's report, got {m:?}").into()),
        };
        let row = match own {
            Some((stats, latencies, samples, messages, hw)) => Some(Row {
                stats,
                pcie,
                latencies,
                samples,
                hw,
                messages,
                completions: Some(completions),
                cpu_util: side.cpu.take(),
                counters: Vec::new(),
                directions: None,
            }),
            None if params.test.kind == Kind::Bw => Some(Row {
                stats,
                pcie,
                latencies: None,
                samples: None,
                hw: None,
                messages: count,
                completions: Some(completions),
                cpu_util: None,
                counters: Vec::new(),
                directions: None,
            }),
            None => None,
        };
        if let Some(row) = row {
            sink.row(row)?;
        }
    }
    wait_destroy(local);
    Ok(())
}

/// perftest's `--wait_destroy`: waits before the side's resources are released (when the
/// caller returns). The notice goes to stderr: stdout may be `--json`.
fn wait_destroy(local: Local) {
    if local.wait_destroy > 0 {
        eprintln!(
            " Waiting {} seconds before releasing resources...",
            local.wait_destroy
        );
        std::thread::sleep(Duration::from_secs(local.wait_destroy.into()));
    }
}

/// Receives a side's report.
pub trait Sink {
    /// Connected: the header.
    fn header(&mut self, setup: &Setup, params: &Params);
    /// One size done.
    fn row(&mut self, row: Row) -> Result<(), Error>;
    /// The `-W` counters to report (perftest's comma-separated list), if any.
    fn counters(&self) -> Option<&str> {
        None
    }
}

/// The client: handshake, then each size, reported to `sink` (and to the server). `cm`
/// carries the QP records through rdma_cm (`-R`, `-z`); without it they go over `peer`.
pub fn client<B: Device>(
    ctx: Context<B>,
    mut peer: Peer,
    params: &Params,
    local: Local,
    sink: &mut dyn Sink,
    cm: Option<&mut dyn CmLink<B>>,
) -> Result<(), Error> {
    let mut side = setup(ctx, &mut peer, params, local, false, sink, cm)?;
    let mut counters = sink
        .counters()
        .map(|names| host::Counters::open(side.ctx.backend(), local.port, names))
        .transpose()?;
    for size in params.runs() {
        side.prepare_validation(size, false);
        expect_ready(peer.swap(&Msg::Ready { size })?, size)?;
        if params.warm_up {
            // After the barrier (the server's QPs are connected), before either side
            // starts counting: a second Ready exchange starts the size.
            warm_up(&mut side, size)?;
            expect_ready(peer.swap(&Msg::Ready { size })?, size)?;
        }
        let before = side.pcie();
        let (mut stats, latencies, samples, mut count, hw) =
            client_body(&mut side, &mut peer, size, local)?;
        side.validate(size, false)?;
        peer.send(&Msg::Done { count })?;
        if params.duplex {
            // The server may still be sending: keep its SENDs landing until it reports.
            serve_until_message(&mut side, &mut peer, |_| {})?;
        }
        let mine = side.pcie().zip(before).map(|(a, b)| Counts::from(a - b));
        let (theirs, server_completions, duplex) = match peer.recv()? {
            Msg::Result {
                pcie,
                completions,
                duplex,
            } => (pcie, completions, duplex),
            m => return Err(format!("expected the server's result, got {m:?}").into()),
        };
        let mut directions = None;
        if let (Stats::Bw(mine), Some((Stats::Bw(server), sent))) = (&stats, &duplex) {
            // perftest's -b report: both directions summed (print_full_bw_report with the
            // remote report), the messages of both.
            directions = Some((stats.clone(), Stats::Bw(server.clone())));
            stats = Stats::Bw(mine.plus(server));
            count += sent;
        }
        let pcie = mine.zip(theirs).map(|(c, s)| RowPcie {
            client: PerMessage::new(c, count),
            server: PerMessage::new(s, count),
        });
        let completions = RowCompletions {
            client: side.opcodes.to_map(),
            server: server_completions,
        };
        peer.send(&Msg::Report {
            stats: stats.clone(),
            pcie,
            completions: completions.clone(),
        })?;
        let cpu_util = side.cpu.take();
        let counters = match &mut counters {
            Some(c) => c.deltas(side.ctx.backend(), local.port)?,
            None => Vec::new(),
        };
        sink.row(Row {
            stats,
            pcie,
            latencies,
            samples,
            hw,
            messages: count,
            completions: Some(completions),
            cpu_util,
            counters,
            directions,
        })?;
    }
    wait_destroy(local);
    Ok(())
}
