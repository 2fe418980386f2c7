//! The parameters both sides must agree on, from the command line.

use std::time::{Duration, Instant};

use mlx5_direct::DM_LINE;
use serde::{Deserialize, Serialize};

use crate::cli::{AtomicType, BenchArgs, Kind, Output, RateLimitType, RateUnits, Test, Verb};
use crate::stats::Schedule;

/// The parameters both sides must agree on (compared field by field in the handshake).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Params {
    /// The test.
    pub test: Test,
    /// The transport (`-c`).
    pub connection: Connection,
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
    /// Outstanding READs / atomics per QP (`-o`; 0: the device's maximum).
    pub out_reads: u32,
    /// Both sides send (`-b`).
    pub duplex: bool,
    /// The client warms up before each size (`--perform_warm_up`).
    pub warm_up: bool,
    /// WRITE_IMM or SEND_IMM instead of WRITE or SEND (`--write_with_imm`,
    /// `--send_with_imm`).
    pub imm: bool,
    /// `--run_infinitely`: the number of `-D` periods to run and report one by one
    /// (`u64::MAX`: until interrupted).
    pub periods: Option<u64>,
    /// The software rate limiter (`--rate_limit`, `--rate_units`, `--burst_size`).
    pub rate_limit: Option<RateLimit>,
    /// The receiving end checks every payload byte (`--data_validation`).
    pub validate: bool,
    /// The end without a host sends (`--reversed`).
    pub reversed: bool,
    /// Receives from a shared receive queue (`--use-srq`).
    pub srq: bool,
    /// Receive WRs per post call (`--recv_post_list`).
    pub recv_post_list: u32,
    /// What rdma_cm does (`-R`, `-z`).
    pub rdma_cm: RdmaCm,
    /// Messages above the inline size go through device memory (`--use-dm`).
    pub use_dm: bool,
    /// DC: the DCIs' stream channels (`--log_dci_streams`, `--log_active_dci_streams`).
    #[serde(default)]
    pub dci_streams: Option<DciStreamArgs>,
    /// Packet pacing (`--rate_limit_type PP`): every QP's rate limit in kbit/s, set once
    /// it is in RTS (`Qp::set_rate_limit`).
    #[serde(default)]
    pub pacing_kbps: Option<u32>,
    /// `-g` (`-M`): the MGID of the multicast group the server's QP joins and the client
    /// sends to.
    #[serde(default)]
    pub mcast: Option<[u8; 16]>,
}

/// perftest's DCS (`--log_dci_streams N`): each DCI has `2^log` stream channels
/// (`log_num_concurent`; `log_num_errored` 0, as perftest leaves it), and a QP's posts take
/// the streams `0, 1, ..` round-robin modulo `2^active` (perftest's `dci_stream_id`, one
/// counter per QP moved on at every post).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DciStreamArgs {
    /// `--log_dci_streams`.
    pub log: u8,
    /// `--log_active_dci_streams` (default `log`).
    pub active: u8,
}

impl DciStreamArgs {
    /// The stream after `stream` (round-robin over the active streams).
    pub fn next(&self, stream: u16) -> u16 {
        ((u32::from(stream) + 1) & ((1u32 << self.active) - 1)) as u16
    }
}

/// perftest's checks of `--log_dci_streams` and `--log_active_dci_streams`
/// (`check_params`): DC only, the active count only with streams; ours besides: at most 16
/// (stream ids are 16 bits), and no more active streams than the DCI has (perftest posts
/// the ids beyond them, which the device refuses).
fn check_dci_streams(
    a: &BenchArgs,
    connection: Connection,
) -> Result<Option<DciStreamArgs>, String> {
    let log = a.log_dci_streams;
    if log == 0 && a.log_active_dci_streams.is_none_or(|n| n == 0) {
        return Ok(None);
    }
    if connection != Connection::Dc {
        let flag = if log != 0 {
            "log_dci_streams"
        } else {
            "log_active_dci_streams"
        };
        return Err(format!("--{flag}: {flag} supported only on DC"));
    }
    if log == 0 {
        return Err("--log_active_dci_streams: log_dci_streams must be greater than 0".into());
    }
    if log > 16 {
        return Err(format!(
            "--log_dci_streams {log}: at most 16 (a stream id is 16 bits in the WQE)"
        ));
    }
    let active = a.log_active_dci_streams.unwrap_or(log);
    if active > log {
        return Err(format!(
            "--log_active_dci_streams {active}: more than the {log} of --log_dci_streams (the \
             DCIs have 2^{log} streams)"
        ));
    }
    Ok(Some(DciStreamArgs {
        log: log as u8,
        active: active as u8,
    }))
}

/// perftest's use of rdma_cm: none (the QP records go over TCP), the records through it
/// (`-z`, perftest's `use_rdma_cm`), or the QPs connected by it (`-R`, `work_rdma_cm`,
/// which implies `use_rdma_cm`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum RdmaCm {
    /// Neither flag.
    Off,
    /// `-z`: the records through rdma_cm, the QPs connected directly.
    Exchange,
    /// `-R`: the QPs connected by rdma_cm, the records in its private data.
    Qps,
}

impl RdmaCm {
    fn of(a: &BenchArgs) -> RdmaCm {
        match (a.rdma_cm, a.comm_rdma_cm) {
            (true, _) => RdmaCm::Qps,
            (false, true) => RdmaCm::Exchange,
            (false, false) => RdmaCm::Off,
        }
    }
}

/// perftest's rules for `-R`, `-z`, `-T` (`force_dependecies`): TOS only with `-R`; no UC,
/// XRC or DC with `-R` (perftest refuses DC only when `work_rdma_cm`); and ours: `-R` RC
/// only and `-z` RC or UC (perftest also runs UD over rdma_cm, and DC and XRC with `-z`:
/// our record carries no Q_Key, DC target or XRC SRQ number), and none of the path flags
/// the route of rdma_cm decides (perftest ignores them there).
fn check_rdma_cm(a: &BenchArgs) -> Result<RdmaCm, String> {
    let cm = RdmaCm::of(a);
    if let (false, Some(tos)) = (cm == RdmaCm::Qps, a.tos) {
        return Err(format!(
            "-T {tos}: TOS only valid for rdma_cm based QP and RawEth QP (give -R)"
        ));
    }
    let flag = match cm {
        RdmaCm::Off => return Ok(cm),
        RdmaCm::Exchange => "-z",
        RdmaCm::Qps => "-R",
    };
    match (cm, a.connection.as_str()) {
        (RdmaCm::Qps, "UC") => return Err("-R: UC is not supported in librdmacm".into()),
        (RdmaCm::Qps, "XRC") => return Err("-R: XRC does not support RDMA_CM".into()),
        (RdmaCm::Qps, "DC") => return Err("-R: DC does not support RDMA_CM".into()),
        (_, c @ ("UD" | "DC" | "XRC")) => {
            return Err(format!(
                "{flag} with -c {c}: mlx5-perf's rdma_cm record carries no Q_Key, DC target \
                 or XRC SRQ number (RC{} only; perftest also runs UD over rdma_cm, and DC and \
                 XRC with -z: it refuses them with -R alone)",
                if cm == RdmaCm::Exchange {
                    " and UC"
                } else {
                    ""
                }
            ))
        }
        _ => {}
    }
    if cm == RdmaCm::Exchange {
        return Ok(cm);
    }
    let path = [
        ("-S", a.sl != 0),
        ("--tclass", a.tclass != 0),
        ("--flow_label", a.flow_label != 0),
        ("--pkey_index", a.pkey_index != 0),
        ("-x", a.gid_index.is_some()),
    ];
    if let Some((flag, _)) = path.iter().find(|(_, set)| *set) {
        return Err(format!(
            "{flag} with -R: the path (SL, traffic class, flow label, P_Key, GID) is the one \
             rdma_cm resolves for the address; set the type of service with -T"
        ));
    }
    Ok(cm)
}

/// The transports of `-c` mlx5-perf runs (perftest's `connection_type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Connection {
    /// Reliable connection.
    #[serde(rename = "RC")]
    Rc,
    /// Unreliable connection: SEND and WRITE, no acknowledgements.
    #[serde(rename = "UC")]
    Uc,
    /// Unreliable datagram: SEND of at most one MTU, each receive behind a 40-byte GRH area.
    #[serde(rename = "UD")]
    Ud,
    /// Dynamically connected: DC initiators (DCIs) on the sending side, DC targets (DCTs)
    /// on a shared receive queue on the other.
    #[serde(rename = "DC")]
    Dc,
    /// eXtended reliable connection: XRC initiators on the sending side, each connected to
    /// an XRC target on the other, whose requests land in that side's one XRC SRQ (each
    /// WQE names it by number).
    #[serde(rename = "XRC")]
    Xrc,
}

impl Connection {
    /// perftest's name (`RC`, `UC`, `UD`, `DC`, `XRC`).
    pub fn name(self) -> &'static str {
        match self {
            Connection::Rc => "RC",
            Connection::Uc => "UC",
            Connection::Ud => "UD",
            Connection::Dc => "DC",
            Connection::Xrc => "XRC",
        }
    }

    /// True for the transports without acknowledgements (UC, UD): a message that finds no
    /// receive is dropped, not retried.
    pub fn unreliable(self) -> bool {
        matches!(self, Connection::Uc | Connection::Ud)
    }

    /// `-c` as given, with perftest's rule of which tests each transport runs
    /// (`change_conn_type` and the parser's checks): UD runs SEND only, UC SEND and WRITE,
    /// DC and XRC every test; SRD is refused with the reason.
    fn new(name: &str, verb: Verb) -> Result<Connection, String> {
        let c = match name {
            "RC" => Connection::Rc,
            "UC" => Connection::Uc,
            "UD" => Connection::Ud,
            "DC" => Connection::Dc,
            "XRC" => Connection::Xrc,
            "SRD" => return Err("-c SRD: SRD is EFA's transport, not mlx5's".into()),
            other => {
                return Err(format!(
                    "-c {other}: not a connection type (RC, UC, UD, XRC, DC or SRD)"
                ))
            }
        };
        match (c, verb) {
            (Connection::Ud, Verb::Write | Verb::Read | Verb::Atomic) => Err(
                "-c UD: UD runs send_lat and send_bw only (a datagram reaches no remote memory)"
                    .into(),
            ),
            (Connection::Uc, Verb::Read | Verb::Atomic) => {
                Err("-c UC: UC has no READ or atomic tests (it carries SEND and WRITE only)".into())
            }
            _ => Ok(c),
        }
    }
}

/// perftest's Q_Key of its UD QPs (`DEF_QKEY`).
pub const DEF_QKEY: u32 = 0x1111_1111;

/// perftest's DC access key (`DC_KEY`).
pub const DEF_DC_KEY: u64 = 0xffee_ddcc;

/// The bytes in front of every UD receive's payload: the GRH area (perftest's
/// `UD_ADDITION`).
pub const UD_GRH: usize = mlx5_direct::UD_GRH_BYTES;

/// perftest's `-a` sizes.
const ALL_SIZES: std::ops::RangeInclusive<u32> = 1..=23;

/// perftest's software rate limiter: at most `rate` in `units`, sent in bursts of `burst`
/// messages.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct RateLimit {
    /// The limit (`--rate_limit`).
    pub rate: f64,
    /// Its unit (`--rate_units`).
    pub units: RateUnits,
    /// Messages per burst (`--burst_size`, default the TX depth).
    pub burst: u32,
}

impl RateLimit {
    /// Messages per second at `size` bytes, truncated to a whole number as perftest's
    /// `rate_limit_pps` (an `int`) is.
    pub fn pps(&self, size: usize) -> u64 {
        let size = size as f64;
        let pps = match self.units {
            RateUnits::MiBs => self.rate / size * 1048576.0,
            RateUnits::Gbits => self.rate / (size * 8.0) * 1e9,
            RateUnits::Pps => self.rate,
        };
        pps as u64
    }
}

/// perftest's rate limiter checks (`parser`, `force_dependecies`); the limiter of `a` with
/// the burst defaulting to `tx_depth`.
fn rate_limit(test: Test, a: &BenchArgs, tx_depth: u32) -> Result<Option<RateLimit>, String> {
    if a.rate_limit.is_some_and(|r| r.is_nan() || r <= 0.0) {
        return Err("--rate_limit: rate limit must be a positive number".into());
    }
    // Giving a rate without a type selects the HW limiter, as in perftest.
    let kind = match (a.rate_limit_type, a.rate_limit) {
        (Some(t), _) => Some(t),
        (None, Some(_)) => Some(RateLimitType::Hw),
        (None, None) => None,
    };
    let Some(kind) = kind else {
        if a.burst_size.is_some_and(|b| b > 0) {
            return Err("--burst_size: can't enable burst mode when rate limiter is off".into());
        }
        return Ok(None);
    };
    match kind {
        RateLimitType::Sw => {}
        RateLimitType::Hw => {
            return Err(
                "--rate_limit_type HW (perftest's default when --rate_limit is given): the \
                 QP's static rate is not among what the driver's ConnectOptions set, so \
                 mlx5-perf limits in software only; give --rate_limit_type SW"
                    .into(),
            )
        }
        RateLimitType::Pp => return Ok(None),
    }
    if test.kind != Kind::Bw
        || test.verb == Verb::Atomic
        || (test.verb == Verb::Send && a.bidirectional)
    {
        return Err(
            "--rate_limit_type SW: SW rate limiter can't be executed on non-BW, \
                    ATOMIC or bidirectional SEND / SEND_IMM tests"
                .into(),
        );
    }
    let Some(rate) = a.rate_limit else {
        return Err("--rate_limit_type SW: give the rate with --rate_limit".into());
    };
    Ok(Some(RateLimit {
        rate,
        units: a.rate_units,
        burst: a.burst_size.filter(|&b| b > 0).unwrap_or(tx_depth),
    }))
}

/// Packet pacing (`--rate_limit_type PP`): the rate in kbit/s as perftest converts it
/// (`--rate_limit` in MB/s, the only unit it takes, times 8 x 1024, truncated), checked as
/// perftest checks it, on the bandwidth tests of every transport the device paces (perftest:
/// raw Ethernet only).
fn packet_pacing(test: Test, a: &BenchArgs) -> Result<Option<u32>, String> {
    if a.rate_limit_type != Some(RateLimitType::Pp) {
        return Ok(None);
    }
    let bw = test.kind == Kind::Bw;
    pp_kbps(a.rate_limit, a.rate_units, bw, a.burst_size.is_some()).map(Some)
}

/// `--rate_limit_type PP`'s rate in kbit/s: `rate` (`--rate_limit`) in `units` (M only,
/// perftest's MEGA_BYTE_PS: 1 M is 8 × 1024 kbit/s), on a bandwidth test (`bw`), without
/// a burst size (`burst`): perftest sets the rate alone.
pub fn pp_kbps(rate: Option<f64>, units: RateUnits, bw: bool, burst: bool) -> Result<u32, String> {
    let Some(rate) = rate else {
        return Err(
            "--rate_limit_type PP: must specify a rate limit when using Packet \
                    Pacing (--rate_limit)"
                .into(),
        );
    };
    if units != RateUnits::MiBs {
        return Err(
            "--rate_limit_type PP: Packet Pacing only supports MEGA_BYTE_PS \
                    (--rate_units M)"
                .into(),
        );
    }
    if !bw {
        return Err("--rate_limit_type PP: on the bandwidth tests only (ours)".into());
    }
    if burst {
        return Err("--rate_limit_type PP: perftest sets the rate alone \
                    (ibv_modify_qp with IBV_QP_RATE_LIMIT), no burst size"
            .into());
    }
    let kbps = rate * 8.0 * 1024.0;
    if !(1.0..=f64::from(u32::MAX)).contains(&kbps) {
        return Err(format!(
            "--rate_limit {rate} M: {kbps} kbit/s is outside 1..=4294967295"
        ));
    }
    Ok(kbps as u32)
}

/// perftest's default MGID (multicast_resources.h `MCG_GID`), the server's group.
pub const DEF_MGID: [u8; 16] = [255, 1, 0, 0, 0, 2, 201, 133, 0, 0, 0, 0, 0, 0, 0, 0];

/// `-g` and `-M`: the group's MGID. perftest: "MultiCast feature only available on SEND
/// verb"; ours: UD `send_bw` only, one QP, one way (perftest also runs `send_lat`, `-b` and
/// several QPs, every server QP attached to the group).
fn mcast(test: Test, a: &BenchArgs, connection: Connection) -> Result<Option<[u8; 16]>, String> {
    if !a.mcg {
        return match a.mgid {
            Some(_) => Err("-M: the MGID of -g (give -g)".into()),
            None => Ok(None),
        };
    }
    if test.verb != Verb::Send {
        return Err("-g: MultiCast feature only available on SEND verb".into());
    }
    if connection != Connection::Ud {
        return Err("-g: multicast is UD (give -c UD)".into());
    }
    if test.kind != Kind::Bw || a.bidirectional || a.reversed || a.qps != 1 {
        return Err(
            "-g: mlx5-perf runs multicast in send_bw alone, one QP, one way (ours: \
                    perftest also has send_lat, -b and -q)"
                .into(),
        );
    }
    a.mgid
        .as_deref()
        .map_or(Ok(DEF_MGID), crate::cli::parse_mgid)
        .map(Some)
}

/// perftest's period of `--run_infinitely` without `-D`, in seconds (`DEF_DURATION`).
const DEF_PERIOD: f64 = 5.0;

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

/// perftest's ranges (`perftest_parameters.h`: `MIN_ITER`..`MAX_ITER`, `MAX_TX`,
/// `MAX_CQ_MOD`, `MAX_RX`, `MAX_QP_NUM`, `MAX_INLINE`).
const ITERS: std::ops::RangeInclusive<u64> = 5..=1 << 32;
const TX_DEPTH: std::ops::RangeInclusive<u32> = 1..=15000;
const CQ_MOD: std::ops::RangeInclusive<u32> = 1..=1024;
const RX_DEPTH: std::ops::RangeInclusive<u32> = 1..=16384;
const QPS: std::ops::RangeInclusive<u32> = 1..=16384;
const MAX_INLINE: usize = 1024;

/// perftest's default CQ moderation, and the size above which it turns moderation off
/// (`DEF_CQ_MOD`, `MSG_SIZE_CQ_MOD_LIMIT`).
const DEF_CQ_MOD: u32 = 100;
const CQ_MOD_SIZE_LIMIT: usize = 8192;

/// `value` of `flag` within `range`, or perftest's range error.
fn in_range<T: PartialOrd + std::fmt::Display>(
    value: T,
    range: std::ops::RangeInclusive<T>,
    name: &str,
) -> Result<T, String> {
    if range.contains(&value) {
        Ok(value)
    } else {
        Err(format!(
            "{name} should be between {} and {}",
            range.start(),
            range.end()
        ))
    }
}

/// `-m`, `-S`, `--flow_label`: perftest's MTUs and `MAX_SL`, and the flow label's 20 bits
/// (`--pkey_index` is checked by the device, against its P_Key table, when the QP is set up).
fn check_fabric(a: &BenchArgs) -> Result<(), String> {
    if let Some(m) = a.mtu {
        if ![256, 512, 1024, 2048, 4096].contains(&m) {
            return Err(format!("-m {m}: the MTU is 256, 512, 1024, 2048 or 4096"));
        }
    }
    if a.sl > 15 {
        return Err(format!("-S {}: only 16 service levels (0..15)", a.sl));
    }
    if a.flow_label >= 1 << 20 {
        return Err(format!(
            "--flow_label {}: the GRH flow label has 20 bits (at most 1048575)",
            a.flow_label
        ));
    }
    Ok(())
}

/// perftest's `--data_validation` checks (`force_dependecies`), in its order.
fn check_data_validation(test: Test, a: &BenchArgs, tx_depth: u32) -> Result<(), String> {
    let refusal = if !matches!(test.verb, Verb::Write | Verb::Read) || a.write_with_imm {
        "is only supported with WRITE or READ verb"
    } else if test.kind != Kind::Bw {
        "is only supported in bandwidth tests"
    } else if a.post_list > 1 {
        "is incompatible with --post_list > 1"
    } else if a.run_infinitely {
        "is incompatible with --run_infinitely"
    } else if a.all {
        "is incompatible with -a (run all sizes)"
    } else if tx_depth < 32 {
        "requires tx_depth >= 32 (use -t)"
    } else if a.bidirectional {
        "is not available with -b in mlx5-perf (one end writes, the other checks)"
    } else {
        return Ok(());
    };
    Err(format!("--data_validation {refusal}"))
}

/// The UD path MTU `Params::new` sizes for: `-m`, or the largest MTU (the active MTU of
/// an InfiniBand port); a smaller active MTU (a RoCE port under a 1500-byte netdev, on
/// hardware or the model) is refused when the QPs are set up.
fn ud_mtu(a: &BenchArgs) -> usize {
    a.mtu.unwrap_or(4096) as usize
}

/// perftest's UD sizes: no message above the MTU. `-a` stops at the MTU and a size not
/// given becomes the MTU ("Max msg size in UD is MTU ... Changing to this MTU"); a larger
/// `-s` is refused.
fn ud_sizes(sizes: Vec<usize>, a: &BenchArgs) -> Result<Vec<usize>, String> {
    let mtu = ud_mtu(a);
    match a.size {
        Some(s) if s > mtu && !a.all => Err(format!(
            "-s {s}: Max message size in UD cannot be greater than MTU ({mtu})"
        )),
        _ if a.all => Ok(sizes.into_iter().filter(|&s| s <= mtu).collect()),
        _ => Ok(sizes.into_iter().map(|s| s.min(mtu)).collect()),
    }
}

/// perftest's run_infinitely dependencies (`force_dependecies`).
fn check_run_infinitely(test: Test, a: &BenchArgs) -> Result<(), String> {
    let receives = test.verb == Verb::Send || a.write_with_imm;
    let refusal = if test.kind == Kind::Lat {
        "run_infinitely exists only in BW tests for now"
    } else if a.events {
        "run_infinitely does not support events feature yet"
    } else if a.bidirectional && receives {
        "run_infinitely mode is not supported in SEND, SEND_IMM or WRITE_IMM Bidirectional BW \
         test"
    } else if a.all {
        "not with -a (perftest runs one size then: its last test method wins)"
    } else if a.rate_limit.is_some() || a.rate_limit_type.is_some() {
        "run_infinitely does not support rate limit feature yet"
    } else if a.margin.is_some() {
        "not with --margin: every period is reported whole"
    } else if a.json && a.periods.is_none() {
        "not with --json, which prints one object at the end an endless run never reaches \
         (the table and --csv print a row per period)"
    } else {
        return Ok(());
    };
    Err(format!("--run_infinitely: {refusal}"))
}

/// The reporting flags each kind of test takes, as perftest's parser allows them.
fn check_reporting(lat: bool, a: &BenchArgs) -> Result<(), String> {
    match (a.output, lat) {
        (Some(Output::Latency), false) => {
            return Err("--output: the output for BW tests can be bandwidth or message_rate".into())
        }
        (Some(Output::Bandwidth | Output::MessageRate), true) => {
            return Err("--output: the output for LAT tests can be latency".into())
        }
        _ => {}
    }
    if a.cycles && !lat {
        return Err("-C: available only on Latency tests".into());
    }
    if a.report_both && !a.bidirectional {
        return Err(
            "--report-both: needs -b, whose two directions it reports separately (perftest ignores it \
             without -b)"
                .into(),
        );
    }
    if a.cpu_util && a.duration.is_none() {
        return Err("--cpu_util: CPU Utilization works only with Duration mode (-D)".into());
    }
    if a.counters
        .as_deref()
        .is_some_and(|c| c.split(',').any(str::is_empty))
    {
        return Err("-W: failed to parse the performance counter list (an empty name)".into());
    }
    if lat && (a.limit_bw.is_some() || a.limit_msgrate.is_some()) {
        return Err("-w / -y: bandwidth limits apply to BW tests only".into());
    }
    if !lat {
        for (given, flag) in [
            (a.latency_gap > 0, "--latency_gap"),
            (a.perftest_stats, "--perftest-stats"),
            (a.histogram, "-H"),
            (a.unsorted, "-U"),
        ] {
            if given {
                return Err(format!("{flag}: available only on latency tests"));
            }
        }
    }
    Ok(())
}

impl Params {
    /// The parameters of `test` as the flags give them, checked, with perftest's defaults
    /// and its dependencies between them (`init_perftest_params`, the `parser` and
    /// `force_dependecies` of perftest's `perftest_parameters.c`, in that order).
    pub fn new(test: Test, a: &BenchArgs) -> Result<Params, String> {
        let lat = test.kind == Kind::Lat;
        let atomic = test.verb == Verb::Atomic;
        if a.write_with_imm && test.verb != Verb::Write {
            return Err("--write_with_imm: only for the write_lat/bw tests".into());
        }
        if a.send_with_imm && test.verb != Verb::Send {
            return Err("--send_with_imm: only for the send_lat/bw tests".into());
        }
        let imm = a.write_with_imm || a.send_with_imm;
        let receives = test.verb == Verb::Send || imm;
        if a.run_infinitely {
            check_run_infinitely(test, a)?;
        }
        let iteration_mode = a.duration.is_none() && !a.run_infinitely;
        let rdma_cm = check_rdma_cm(a)?;
        let connection = Connection::new(&a.connection, test.verb)?;
        // The parser's per-flag checks.
        check_fabric(a)?;
        check_reporting(lat, a)?;
        if a.atomic_type.is_some() && !atomic {
            return Err(
                "-A: you are not running the atomic_lat/bw test (perftest refuses it too)".into(),
            );
        }
        if a.perform_warm_up && (lat || test.verb == Verb::Send) {
            return Err(
                "--perform_warm_up: valid in Atomic, Read and Write BW tests (perftest accepts \
                 and ignores it elsewhere)"
                    .into(),
            );
        }
        if a.perform_warm_up && imm {
            return Err(
                "--perform_warm_up: not with --write_with_imm in mlx5-perf (the warm-up's \
                 WRITE_IMMs would need the server's receives)"
                    .into(),
            );
        }
        if a.vector.is_some() && test.verb == Verb::Write {
            return Err("-X: events feature not available on WRITE verb".into());
        }
        if a.vector.is_some_and(|v| v != 0) {
            return Err(
                "-X: one completion vector, 0: the CQs' events go to the context's \
                        one channel"
                    .into(),
            );
        }
        if lat && a.reversed {
            return Err("--reversed: bandwidth tests only (perftest offers it there)".into());
        }
        if lat && a.bidirectional {
            return Err("-b: bidirectional is only available in BW tests".into());
        }
        if lat && a.no_peak {
            return Err("-N: NoPeak only valid for BW tests".into());
        }
        if lat && a.qps > 1 {
            return Err("-q: multiple QPs only available on bw tests".into());
        }
        let qps = in_range(a.qps, QPS, "-q (num of QPs)")?;
        let iters = a
            .iters
            .map(|n| in_range(n, ITERS, "-n (iteration num)"))
            .transpose()?
            .unwrap_or(if test.verb == Verb::Write && !lat {
                5000
            } else {
                1000
            });
        let tx_depth = a
            .tx_depth
            .map(|t| in_range(t, TX_DEPTH, "-t (tx depth)"))
            .transpose()?
            .unwrap_or(if lat { 1 } else { 128 });
        let asked_cq_mod = a
            .cq_mod
            .map(|q| in_range(q, CQ_MOD, "-Q (CQ moderation)"))
            .transpose()?;
        if let Some(i) = a.inline {
            if matches!(test.verb, Verb::Read | Verb::Atomic) {
                return Err("-I: inline feature not available on READ/Atomic verbs".into());
            }
            in_range(i, 0..=MAX_INLINE, "-I (max inline)")?;
        }
        if a.outs.is_some() && !matches!(test.verb, Verb::Read | Verb::Atomic) {
            return Err(
                "-o: setting outstanding reads only available on READ and atomic verbs".into(),
            );
        }
        if a.use_srq && test.verb != Verb::Send {
            return Err("--use-srq: using SRQ only available in SEND / SEND_IMM tests".into());
        }
        if a.use_dm && !matches!(test.verb, Verb::Send | Verb::Write) {
            return Err(
                "--use-dm: SEND and WRITE tests only (device memory holds the payload a send \
                 WQE gathers)"
                    .into(),
            );
        }
        if a.use_dm && !matches!(connection, Connection::Rc | Connection::Uc) {
            return Err(
                "--use-dm: RC and UC only (the device-memory path posts connected WQEs)".into(),
            );
        }
        if a.recv_post_list == 0 {
            return Err("--recv_post_list must be at least 1".into());
        }
        if a.recv_post_list > 1 && lat {
            return Err("--recv_post_list: receive post list is supported in BW tests only".into());
        }
        if a.recv_post_list > 1 && !receives {
            return Err(
                "--recv_post_list: this test posts no receives (perftest accepts and ignores \
                 it)"
                .into(),
            );
        }
        if let Some(r) = a.rx_depth {
            in_range(r, RX_DEPTH, "-r (rx depth)")?;
            if !receives && r > 1 {
                return Err("-r: on RDMA verbs rx depth can be only 1".into());
            }
        }
        let duration = match a.run_infinitely {
            true => Some(a.duration.unwrap_or(DEF_PERIOD)),
            false => a.duration,
        };
        let duration_ms = duration.map(|d| millis(d, "-D")).transpose()?;
        if duration_ms == Some(0) {
            return Err("-D must be at least a millisecond".into());
        }
        // force_dependecies, in its order.
        let mut tx_depth = tx_depth;
        let mut rx_depth = if receives {
            a.rx_depth.unwrap_or(512)
        } else {
            1
        };
        if iteration_mode {
            tx_depth = tx_depth.min(iters.min(u64::from(u32::MAX)) as u32);
            if receives {
                rx_depth = rx_depth.min(iters.min(u64::from(u32::MAX)) as u32);
            }
        }
        // perftest's default size: DEF_SIZE_ATOMIC (8) for the atomic tests, set in
        // `init_perftest_params` before `force_dependecies` looks at it for CQ moderation.
        let size = a.size.unwrap_or(match (atomic, lat) {
            (true, _) => 8,
            (false, true) => 2,
            (false, false) => 65536,
        });
        let mut cq_mod = asked_cq_mod.unwrap_or(DEF_CQ_MOD);
        if !lat && size > CQ_MOD_SIZE_LIMIT && !a.all && !a.events && asked_cq_mod.is_none() {
            cq_mod = 1;
        }
        cq_mod = cq_mod.min(tx_depth);
        if atomic && (a.all || a.size.is_some_and(|s| s != 8)) {
            return Err("atomics move 8 bytes: message size cannot be changed for Atomic tests (-s 8 only, no -a)".into());
        }
        if a.post_list == 0 {
            return Err("-l must be at least 1".into());
        }
        if a.post_list > 1 {
            if lat {
                return Err("-l: post list is supported in BW tests only".into());
            }
            if iteration_mode && iters % u64::from(a.post_list) != 0 {
                return Err(format!(
                    "-n {iters} must be a multiple of the post list size -l {}",
                    a.post_list
                ));
            }
            match asked_cq_mod {
                None => cq_mod = a.post_list,
                Some(q) if a.post_list % q != 0 => {
                    return Err(format!(
                        "-l {}: post list size must be a multiple of CQ moderation -Q {q}",
                        a.post_list
                    ))
                }
                Some(_) => {}
            }
        }
        if a.recv_post_list > 1 && iteration_mode && iters % u64::from(a.recv_post_list) != 0 {
            return Err(format!(
                "-n {iters}: number of iterations must be a multiple of receive post list size \
                 --recv_post_list {}",
                a.recv_post_list
            ));
        }
        if a.use_srq && qps > rx_depth {
            return Err(format!(
                "--use-srq: using SRQ depth (-r {rx_depth}) should be greater than number of \
                 QPs (-q {qps})"
            ));
        }
        if a.data_validation {
            check_data_validation(test, a, tx_depth)?;
        }
        if a.events && test.verb == Verb::Write {
            return Err("-e: events feature not available on WRITE verb".into());
        }
        if a.events && duration_ms.is_some() {
            return Err("-e: duration mode doesn't work with events".into());
        }
        if duration_ms.is_some() && a.all {
            return Err("-D: duration mode doesn't support running on all sizes (-a)".into());
        }
        if a.post_list > tx_depth {
            return Err(format!(
                "-l {} is more than the TX depth -t {tx_depth}",
                a.post_list
            ));
        }
        // perftest's workaround for an odd receive depth in SEND tests.
        if receives && rx_depth % 2 == 1 && !a.all && !a.run_infinitely {
            rx_depth += 1;
        }

        let mut sizes = if atomic {
            vec![8]
        } else if a.all {
            ALL_SIZES.map(|k| 1usize << k).collect()
        } else {
            vec![size]
        };
        if connection == Connection::Ud {
            sizes = ud_sizes(sizes, a)?;
        }
        if sizes.iter().any(|&s| s == 0 || s > 1 << 31) {
            return Err("-s must be between 1 and 2^31".into());
        }
        let inline_size = a
            .inline
            .unwrap_or(match (test.verb, test.kind, connection) {
                (Verb::Write | Verb::Send, Kind::Lat, Connection::Dc) => 150,
                (Verb::Send, Kind::Lat, Connection::Ud) => 188,
                (Verb::Write, Kind::Lat, _) => 220,
                (Verb::Send, Kind::Lat, _) => 236,
                _ => 0,
            });
        // perftest's default margin: a quarter of the duration in whole seconds.
        let margin_ms = match (a.margin, duration_ms) {
            // Each period is reported whole.
            _ if a.run_infinitely => 0,
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
        let rate_limit = rate_limit(test, a, tx_depth)?;
        if let Some(r) = rate_limit {
            if let Some(&size) = sizes.iter().find(|&&s| r.pps(s) == 0) {
                return Err(format!(
                    "--rate_limit {} {:?}: less than one {size}-byte message per second",
                    r.rate, r.units
                ));
            }
        }
        let dci_streams = check_dci_streams(a, connection)?;
        let pacing_kbps = packet_pacing(test, a)?;
        let mcast = mcast(test, a, connection)?;
        let params = Params {
            test,
            connection,
            atomic_type: a.atomic_type.unwrap_or(AtomicType::FetchAndAdd),
            sizes,
            iters,
            duration_ms,
            margin_ms,
            inline_size,
            tx_depth,
            rx_depth,
            post_list: a.post_list,
            cq_mod,
            qps,
            out_reads: a.outs.unwrap_or(0),
            duplex: a.bidirectional,
            warm_up: a.perform_warm_up,
            imm,
            periods: a.run_infinitely.then(|| a.periods.unwrap_or(u64::MAX)),
            rate_limit,
            validate: a.data_validation,
            reversed: a.reversed,
            // perftest's DC targets take their receives from an SRQ, XRC's targets from
            // an XRC SRQ (its `use_srq` set with `use_xrc`).
            srq: a.use_srq || matches!(connection, Connection::Dc | Connection::Xrc),
            recv_post_list: a.recv_post_list,
            rdma_cm,
            use_dm: a.use_dm,
            dci_streams,
            pacing_kbps,
            mcast,
        };
        if params.receives() && params.recv_depth() == 0 {
            return Err(format!(
                "--recv_post_list {}: no whole receive post list fits the RX depth -r {}{}",
                params.recv_post_list,
                params.rx_depth,
                if params.srq { " shared by the QPs" } else { "" }
            ));
        }
        Ok(params)
    }

    /// The duration-mode schedule of a run starting now.
    pub(super) fn schedule(&self) -> Option<Schedule> {
        self.duration_ms.map(|d| {
            Schedule::new(
                Instant::now(),
                Duration::from_millis(d),
                Duration::from_millis(self.margin_ms),
            )
        })
    }

    /// True when perftest would measure the bandwidth peak of this run.
    pub(super) fn peak_measured(&self) -> bool {
        self.peak_skipped(false).is_none()
    }

    /// Why perftest would not measure the bandwidth peak of this bandwidth test (on the
    /// `server` side when true), if it would not (`-N` aside).
    pub fn peak_skipped(&self, server: bool) -> Option<&'static str> {
        if self.test.kind != Kind::Bw {
            None
        } else if self.periods.is_some() {
            Some("run_infinitely reports the average of each period")
        } else if self.duration_ms.is_some() {
            Some("duration mode (-D) measures the average over the sampling window only")
        } else if self.iters > PEAK_MAX_ITERS {
            Some("more than 20000 iterations per QP (the peak search keeps a time per post)")
        } else if server && self.receives() && !self.duplex {
            Some("the server only receives: it has no posts to time a peak from")
        } else {
            None
        }
    }

    /// True when the responder consumes a receive per message (SEND, SEND_IMM, WRITE_IMM).
    pub fn receives(&self) -> bool {
        self.test.verb == Verb::Send || self.imm
    }

    /// The message size of each run, in order: the sizes, or with `--run_infinitely` the
    /// size once per period.
    pub fn runs(&self) -> Box<dyn Iterator<Item = usize> + '_> {
        match self.periods {
            Some(n) => Box::new(std::iter::repeat_n(self.sizes[0], n as usize)),
            None => Box::new(self.sizes.iter().copied()),
        }
    }

    /// Receives kept posted on each receive queue: `-r` in whole receive post lists, and
    /// with `--use-srq` the SRQ's share of every QP (perftest's `ctx_set_recv_wqes`).
    pub(super) fn recv_depth(&self) -> u32 {
        let list = self.recv_post_list;
        if self.srq {
            self.rx_depth / list / self.qps * list * self.qps
        } else {
            self.rx_depth / list * list
        }
    }

    /// `--use-dm`: the slot of one message in device memory (the largest message in whole
    /// 64-byte lines) and the slots of one QP (one per outstanding WR); None without
    /// `--use-dm` or when every message goes inline.
    pub fn dm_slots(&self) -> Option<(usize, u32)> {
        let size = self.max_size();
        (self.use_dm && size > self.inline_size)
            .then(|| (size.next_multiple_of(DM_LINE), self.tx_depth))
    }

    /// `--use-dm`: the device memory one side needs, every QP's slots.
    pub fn dm_bytes(&self) -> u64 {
        self.dm_slots().map_or(0, |(slot, count)| {
            slot as u64 * u64::from(count) * u64::from(self.qps)
        })
    }

    /// True when the `server` side (else the client) posts the test's operations: both in
    /// the latency tests and with `-b`, the server alone with `--reversed`.
    pub fn sends(&self, server: bool) -> bool {
        self.test.kind == Kind::Lat || self.duplex || server == self.reversed
    }

    fn max_size(&self) -> usize {
        self.sizes.iter().copied().max().unwrap_or(8)
    }

    /// Bytes in front of each received payload: UD's GRH area, else none.
    pub fn grh(&self) -> usize {
        match self.connection {
            Connection::Ud => UD_GRH,
            _ => 0,
        }
    }

    /// Bytes of buffer per QP: a receive half (UD's GRH area and the largest message, as
    /// perftest's `SIZE(UD, size)` is size + 40) and a send half.
    pub(super) fn slot(&self) -> usize {
        2 * (self.grh() + self.max_size()).next_multiple_of(64)
    }
}
