//! The command line: perftest's test names and flags where they overlap, plus ours.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};
use serde::{Deserialize, Serialize};

/// perftest-compatible RDMA benchmarks on mlx5 (on the built-in device model when no device
/// is given), a per-message PCIe report and a WQE-level explanation of each operation.
#[derive(Parser, Debug)]
#[command(version, about)]
pub struct Cli {
    /// What to run.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Subcommand, Debug)]
#[allow(clippy::enum_variant_names, clippy::large_enum_variant)] // perftest's test names
pub enum Command {
    /// RDMA WRITE latency (ping-pong, half the round trip).
    #[command(name = "write_lat", alias = "ib_write_lat")]
    WriteLat(BenchArgs),
    /// RDMA WRITE bandwidth.
    #[command(name = "write_bw", alias = "ib_write_bw")]
    WriteBw(BenchArgs),
    /// SEND latency (ping-pong, half the round trip).
    #[command(name = "send_lat", alias = "ib_send_lat")]
    SendLat(BenchArgs),
    /// SEND bandwidth.
    #[command(name = "send_bw", alias = "ib_send_bw")]
    SendBw(BenchArgs),
    /// RDMA READ latency (post to completion).
    #[command(name = "read_lat", alias = "ib_read_lat")]
    ReadLat(BenchArgs),
    /// RDMA READ bandwidth.
    #[command(name = "read_bw", alias = "ib_read_bw")]
    ReadBw(BenchArgs),
    /// Atomic (fetch-and-add, or compare-and-swap with -A CMP_AND_SWAP) latency.
    #[command(name = "atomic_lat", alias = "ib_atomic_lat")]
    AtomicLat(BenchArgs),
    /// Atomic bandwidth.
    #[command(name = "atomic_bw", alias = "ib_atomic_bw")]
    AtomicBw(BenchArgs),
    /// Raw Ethernet frame rate (perftest's raw_ethernet_bw), on the model.
    #[command(name = "raw_ethernet_bw")]
    RawEthernetBw(crate::raw::RawArgs),
    /// Raw Ethernet ping-pong latency (perftest's raw_ethernet_lat), on the model.
    #[command(name = "raw_ethernet_lat")]
    RawEthernetLat(crate::raw::RawArgs),
    /// Raw Ethernet burst latency (perftest's raw_ethernet_burst_lat), on the model.
    #[command(name = "raw_ethernet_burst_lat")]
    RawEthernetBurstLat(crate::raw::RawArgs),
    /// Post one operation (or a batch) on the model and show every byte and TLP it costs.
    Explain(ExplainArgs),
    /// The PCIe cost per message of each posting optimisation, measured on the model.
    Pcie(PcieArgs),
    /// The driver's CPU cost per post and per poll against a null device.
    Cpu(CpuArgs),
}

impl Command {
    /// The benchmark this command runs and its flags (None for the other subcommands).
    pub fn bench(&self) -> Option<(Test, &BenchArgs)> {
        let (verb, kind, args) = match self {
            Command::WriteLat(a) => (Verb::Write, Kind::Lat, a),
            Command::WriteBw(a) => (Verb::Write, Kind::Bw, a),
            Command::SendLat(a) => (Verb::Send, Kind::Lat, a),
            Command::SendBw(a) => (Verb::Send, Kind::Bw, a),
            Command::ReadLat(a) => (Verb::Read, Kind::Lat, a),
            Command::ReadBw(a) => (Verb::Read, Kind::Bw, a),
            Command::AtomicLat(a) => (Verb::Atomic, Kind::Lat, a),
            Command::AtomicBw(a) => (Verb::Atomic, Kind::Bw, a),
            Command::Explain(_)
            | Command::Pcie(_)
            | Command::Cpu(_)
            | Command::RawEthernetBw(_)
            | Command::RawEthernetLat(_)
            | Command::RawEthernetBurstLat(_) => return None,
        };
        Some((Test { verb, kind }, args))
    }
}

/// The operation a benchmark measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verb {
    /// RDMA WRITE.
    Write,
    /// SEND.
    Send,
    /// RDMA READ.
    Read,
    /// Atomic.
    Atomic,
}

/// Latency or bandwidth.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// perftest's `_lat`.
    Lat,
    /// perftest's `_bw`.
    Bw,
}

/// A benchmark: operation and kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Test {
    /// The operation.
    pub verb: Verb,
    /// Latency or bandwidth.
    pub kind: Kind,
}

impl Test {
    /// perftest's name (`write_lat`, ...).
    pub fn name(self) -> String {
        let verb = match self.verb {
            Verb::Write => "write",
            Verb::Send => "send",
            Verb::Read => "read",
            Verb::Atomic => "atomic",
        };
        let kind = match self.kind {
            Kind::Lat => "lat",
            Kind::Bw => "bw",
        };
        format!("{verb}_{kind}")
    }
}

/// The doorbell mode flag.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// BlueFlame: the WQE is copied to the device with the doorbell (the last of a batch).
    Bf,
    /// The 8-byte doorbell; the device fetches WQEs by DMA.
    Db,
    /// BlueFlame when the device has it, else the doorbell.
    Auto,
}

/// A port's link layer, as perftest's `--force-link` names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Link {
    /// InfiniBand.
    Ib,
    /// Ethernet (RoCE).
    Ethernet,
}

/// perftest's `str_link_layer`: `IB` or `Ethernet` at the start of the value, in any case.
pub fn parse_link(text: &str) -> Result<Link, String> {
    let starts = |name: &str| {
        text.get(..name.len())
            .is_some_and(|head| head.eq_ignore_ascii_case(name))
    };
    if starts("IB") {
        Ok(Link::Ib)
    } else if starts("Ethernet") {
        Ok(Link::Ethernet)
    } else {
        Err(format!("{text:?}: the link layer is IB or Ethernet"))
    }
}

/// perftest's `--output`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Output {
    /// The average bandwidth.
    #[value(name = "bandwidth")]
    Bandwidth,
    /// The average message rate.
    #[value(name = "message_rate")]
    MessageRate,
    /// The average latency.
    #[value(name = "latency")]
    Latency,
}

/// perftest's `--rate_units`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, Serialize, Deserialize)]
pub enum RateUnits {
    /// MiB/s (perftest's `MEGA_BYTE_PS`).
    #[value(name = "M")]
    MiBs,
    /// Gb/s (`GIGA_BIT_PS`, the default).
    #[value(name = "g")]
    Gbits,
    /// Messages per second (`PACKET_PS`).
    #[value(name = "p")]
    Pps,
}

/// perftest's `--rate_limit_type`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum RateLimitType {
    /// Software pacing: bursts released by deadlines.
    #[value(name = "SW")]
    Sw,
    /// The QP's static rate (perftest's default with --rate_limit).
    #[value(name = "HW")]
    Hw,
    /// Packet pacing: each QP's rate limit on the device (`ibv_modify_qp_rate_limit`;
    /// raw Ethernet only in perftest).
    #[value(name = "PP")]
    Pp,
}

/// The atomic operation (perftest's `-A`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, Serialize, Deserialize)]
pub enum AtomicType {
    /// Fetch-and-add.
    #[value(name = "FETCH_AND_ADD")]
    FetchAndAdd,
    /// Compare-and-swap.
    #[value(name = "CMP_AND_SWAP")]
    CmpAndSwap,
}

/// perftest's flags where they overlap, plus `--mode`, `--json`, `--csv`, `--plot`.
#[derive(Args, Debug, Clone)]
pub struct BenchArgs {
    /// Server to connect to (hardware only). Without it: the server side, or on the model
    /// both sides in this process.
    pub host: Option<String>,
    /// RDMA device (e.g. mlx5_0); needs the `verbs` feature. Without it: the model.
    #[arg(short = 'd', long = "ib-dev")]
    pub device: Option<String>,
    /// Port of the device.
    #[arg(short = 'i', long = "ib-port", default_value_t = 1)]
    pub ib_port: u8,
    /// GID index (default: RoCE v2 on Ethernet, 0 on InfiniBand; the model's ports have
    /// index 0 alone).
    #[arg(short = 'x', long = "gid-index")]
    pub gid_index: Option<u32>,
    /// On the model: its ports' link layer, `IB` (the default) or `Ethernet` (RoCE v2: LID
    /// 0, a link-local GID, every address global). On a device the link layer is the
    /// port's, and the flag is refused (perftest's relabels the port).
    #[arg(long = "force-link", value_parser = parse_link, value_name = "IB|Ethernet")]
    pub force_link: Option<Link>,
    /// Message size in bytes, decimal, hex (0x...) or with a K / M suffix, as perftest
    /// parses it (default 2 for latency, 65536 for bandwidth; atomics: 8).
    #[arg(short = 's', long = "size", value_parser = parse_size)]
    pub size: Option<usize>,
    /// Run all sizes 2..2^23 (not with atomics or -D, as perftest).
    #[arg(short = 'a', long = "all")]
    pub all: bool,
    /// Iterations, at least 5 (default 5000 for write_bw, 1000 otherwise, as perftest).
    #[arg(short = 'n', long = "iters")]
    pub iters: Option<u64>,
    /// Run for this many seconds instead of a number of iterations (fractions allowed);
    /// only the time between the two margins is sampled.
    #[arg(short = 'D', long = "duration")]
    pub duration: Option<f64>,
    /// Duration mode: seconds of warm-up before sampling and of running on after it
    /// (default: a quarter of -D rounded down to whole seconds, as perftest).
    #[arg(short = 'f', long = "margin", requires = "duration")]
    pub margin: Option<f64>,
    /// Do not measure the bandwidth peak (bandwidth tests; it is measured in iteration mode
    /// up to 20000 iterations per QP).
    #[arg(short = 'N', long = "noPeak")]
    pub no_peak: bool,
    /// Largest message sent inline (default: 220 in write_lat, 236 in send_lat, 0 in the
    /// bandwidth tests, as perftest).
    #[arg(short = 'I', long = "inline_size")]
    pub inline: Option<usize>,
    /// Outstanding WRs per QP (default 1 for latency, 128 for bandwidth; lowered to -n in
    /// iteration mode, as perftest).
    #[arg(short = 't', long = "tx-depth")]
    pub tx_depth: Option<u32>,
    /// Post list: WRs per doorbell (bandwidth tests; -n must be a multiple of it).
    #[arg(short = 'l', long = "post_list", default_value_t = 1)]
    pub post_list: u32,
    /// CQ moderation: a completion every this many WRs (default 100, 1 for messages over
    /// 8 KiB, the post list with -l; at most the TX depth; as perftest).
    #[arg(short = 'Q', long = "cq-mod")]
    pub cq_mod: Option<u32>,
    /// Outstanding READs / atomics per QP (READ and atomic tests; default the device's
    /// maximum, as perftest).
    #[arg(short = 'o', long = "outs")]
    pub outs: Option<u32>,
    /// Receive queue depth (SEND tests; default 512, lowered to -n and made even, as
    /// perftest).
    #[arg(short = 'r', long = "rx-depth")]
    pub rx_depth: Option<u32>,
    /// Bidirectional: both sides send at once; the report sums both directions (bandwidth
    /// tests).
    #[arg(short = 'b', long = "bidirectional")]
    pub bidirectional: bool,
    /// Sleep on completion events instead of spinning on the CQ (not WRITE, not with -D,
    /// as perftest).
    #[arg(short = 'e', long = "events")]
    pub events: bool,
    /// Bandwidth tests: run until interrupted, printing a row for every period of -D
    /// seconds (default 5), as perftest; no peak.
    #[arg(long = "run_infinitely")]
    pub run_infinitely: bool,
    /// With --run_infinitely: stop after this many periods (for tests and scripts).
    #[arg(long = "periods", hide = true, requires = "run_infinitely")]
    pub periods: Option<u64>,
    /// Bandwidth tests: the most this side sends, in --rate_units (needs --rate_limit_type
    /// SW or PP: the QP's static rate, HW, is not set by the driver).
    #[arg(long = "rate_limit")]
    pub rate_limit: Option<f64>,
    /// The unit of --rate_limit: M (MiB/s), g (Gb/s, default) or p (messages per second).
    #[arg(long = "rate_units", value_enum, default_value = "g")]
    pub rate_units: RateUnits,
    /// The rate limiter: SW (software pacing) or PP (the device's packet pacing, in M
    /// only); HW is refused with the reason.
    #[arg(long = "rate_limit_type", value_enum)]
    pub rate_limit_type: Option<RateLimitType>,
    /// Messages per burst of the software rate limiter (default: the TX depth).
    #[arg(long = "burst_size")]
    pub burst_size: Option<u32>,
    /// Before each size, post a TX depth of WRs per QP and complete them, untimed (READ,
    /// WRITE and atomic bandwidth tests).
    #[arg(long = "perform_warm_up")]
    pub perform_warm_up: bool,
    /// RDMA WRITE with immediate instead of WRITE (write tests): the responder consumes a
    /// receive per message and polls its CQ for it.
    #[arg(long = "write_with_imm")]
    pub write_with_imm: bool,
    /// SEND with immediate instead of SEND (send tests).
    #[arg(long = "send_with_imm")]
    pub send_with_imm: bool,
    /// Receives come from one shared receive queue per side, of -r WRs, that all its QPs
    /// take from (SEND tests, as perftest).
    #[arg(long = "use-srq")]
    pub use_srq: bool,
    /// send_bw -c UD: the server's QP joins a multicast group and the client sends to the
    /// group (perftest's --mcg).
    #[arg(short = 'g', long = "mcg")]
    pub mcg: bool,
    /// With -g: the group's MGID, 16 byte values separated by ':' (decimal, 0x hex or 0
    /// octal; default perftest's 255:1:0:0:0:2:201:133:0:0:0:0:0:0:0:0).
    #[arg(short = 'M', long = "MGID", value_name = "MGID")]
    pub mgid: Option<String>,
    /// DC: each DCI with 2^N stream channels (perftest's DCS; 0: a plain DCI).
    #[arg(long = "log_dci_streams", default_value_t = 0)]
    pub log_dci_streams: u16,
    /// DC: the posts go round-robin over the first 2^N streams (default --log_dci_streams).
    #[arg(long = "log_active_dci_streams")]
    pub log_active_dci_streams: Option<u16>,
    /// The test buffers on 2 MiB hugetlbfs pages (refused when the pool has too few free:
    /// reserve them with `sysctl vm.nr_hugepages=N`).
    #[arg(long = "use_hugepages")]
    pub use_hugepages: bool,
    /// The test buffers registered on demand (`IBV_ACCESS_ON_DEMAND`; refused by a device
    /// without RC on-demand paging).
    #[arg(long = "odp")]
    pub odp: bool,
    /// Run on this NUMA node's CPUs and bind the test buffers and the rings to it.
    #[arg(long = "numa_node", value_name = "NODE")]
    pub numa_node: Option<u32>,
    /// SEND and WRITE tests on RC and UC: every message above the inline size is copied
    /// into device memory (MEMIC) and gathered from there, a slot of the largest message
    /// per outstanding WR and QP (refused when the device has too little; ours, not
    /// perftest's `--use_ib_dm_dmabuf`).
    #[arg(long = "use-dm")]
    pub use_dm: bool,
    /// On the model: each NIC's device memory in bytes (default: what `--use-dm` needs, 0
    /// without it).
    #[arg(long = "dm-size", hide = true)]
    pub dm_size: Option<u64>,
    /// Receive WRs posted per call (bandwidth tests with receives; -n must be a multiple
    /// of it).
    #[arg(long = "recv_post_list", default_value_t = 1)]
    pub recv_post_list: u32,
    /// Number of QPs (bandwidth tests).
    #[arg(short = 'q', long = "qp", default_value_t = 1)]
    pub qps: u32,
    /// CQEs taken per poll call (1..65535; perftest's default 16, without its dynamic
    /// polling).
    #[arg(long = "cqe_poll", default_value_t = 16, value_parser = clap::value_parser!(u16).range(1..))]
    pub cqe_poll: u16,
    /// TCP port of the exchange.
    #[arg(short = 'p', long = "port", default_value_t = 18515)]
    pub port: u16,
    /// Report bandwidth in Gb/s instead of MiB/s.
    #[arg(long = "report_gbits")]
    pub report_gbits: bool,
    /// Accepted for perftest compatibility: time comes from CLOCK_MONOTONIC, never from the
    /// CPU frequency, so there is no frequency warning to silence.
    #[arg(short = 'F', long = "CPU-freq")]
    pub cpu_freq: bool,
    /// Atomic operation (atomic tests; default FETCH_AND_ADD).
    #[arg(short = 'A', long = "atomic_type", value_enum)]
    pub atomic_type: Option<AtomicType>,
    /// Connection type: RC, UC (SEND and WRITE tests), UD (SEND tests, messages up to the
    /// MTU), DC (every test; DCIs send to the peer's DCTs on an SRQ) or XRC (every test; XRC
    /// initiators send through the peer's XRC targets into its XRC SRQ).
    #[arg(short = 'c', long = "connection", default_value = "RC")]
    pub connection: String,
    /// Path MTU in bytes (256, 512, 1024, 2048 or 4096; default the port's active MTU).
    #[arg(short = 'm', long = "mtu")]
    pub mtu: Option<u32>,
    /// Local ACK timeout exponent (4.096 us x 2^N; 0..31).
    #[arg(short = 'u', long = "qp-timeout", default_value_t = 14, value_parser = clap::value_parser!(u8).range(..32))]
    pub qp_timeout: u8,
    /// Service level (0..15).
    #[arg(short = 'S', long = "sl", default_value_t = 0, value_parser = parse_int::<u8>)]
    pub sl: u8,
    /// GRH traffic class (RoCE, and InfiniBand with -x; the model ignores it).
    #[arg(long = "tclass", default_value_t = 0)]
    pub tclass: u8,
    /// GRH flow label (20 bits; RoCE, and InfiniBand with -x).
    #[arg(long = "flow_label", default_value_t = 0, value_parser = parse_int::<u32>)]
    pub flow_label: u32,
    /// P_Key index (the device refuses one beyond its P_Key table).
    #[arg(long = "pkey_index", default_value_t = 0, value_parser = parse_int::<u16>)]
    pub pkey_index: u16,
    /// Connect the QPs with rdma_cm (hardware; the host is the server's IPoIB or RoCE
    /// address), their addresses, rkeys and PSNs in the connection's private data.
    #[arg(short = 'R', long = "rdma_cm")]
    pub rdma_cm: bool,
    /// Exchange the QPs' addresses, rkeys and PSNs through rdma_cm, connecting the QPs
    /// directly (hardware).
    #[arg(short = 'z', long = "comm_rdma_cm")]
    pub comm_rdma_cm: bool,
    /// Transport retries of the rdma_cm connection (-R; 0..7, perftest's default 7).
    #[arg(long = "retry_count", default_value_t = 7, value_parser = clap::value_parser!(u8).range(..8))]
    pub retry_count: u8,
    /// Type of service of the rdma_cm connection (-R only; 0..255).
    #[arg(short = 'T', long = "tos")]
    pub tos: Option<u8>,
    /// Print one number per size instead of the report, for scripts: `bandwidth` or
    /// `message_rate` (bandwidth tests), `latency` (the average; latency tests).
    #[arg(long = "output", value_enum, conflicts_with_all = ["json", "csv"])]
    pub output: Option<Output>,
    /// Also write perftest's JSON report (`test_info` and `results`) to a file.
    #[arg(long = "out_json")]
    pub out_json: bool,
    /// The file of --out_json.
    #[arg(long = "out_json_file", default_value = "perftest_out.json")]
    pub out_json_file: PathBuf,
    /// Fail (exit status 1) when the average bandwidth is below this (bandwidth tests, in
    /// the report's unit).
    #[arg(short = 'w', long = "limit_bw")]
    pub limit_bw: Option<f64>,
    /// With -w: also fail when the message rate (Mpps) is below this.
    #[arg(short = 'y', long = "limit_msgrate", requires = "limit_bw")]
    pub limit_msgrate: Option<f64>,
    /// Latency tests: spin this many microseconds between an iteration's end and the next
    /// post (perftest's gap, which lands inside its next sample).
    #[arg(long = "latency_gap", default_value_t = 0)]
    pub latency_gap: u64,
    /// Latency statistics computed as perftest computes them: samples are the gaps
    /// between consecutive posts (halved in the ping-pong tests), the two largest dropped,
    /// the median of the rest, each deviation truncated to whole microseconds.
    #[arg(long = "perftest-stats")]
    pub perftest_stats: bool,
    /// Speak perftest 4.5+0.17's TCP exchange instead of this tool's, to pair with Debian's
    /// `ib_*` programs (RC; the same flags on both ends: perftest compares none).
    #[arg(long = "perftest-exchange")]
    pub perftest_exchange: bool,
    /// Print every sorted sample of perftest's statistics before the row (latency tests).
    #[arg(short = 'H', long = "report-histogrm", alias = "report-histogram")]
    pub histogram: bool,
    /// Print every sample of perftest's statistics in order before the row (latency tests).
    #[arg(short = 'U', long = "report-unsorted")]
    pub unsorted: bool,
    /// Bandwidth tests: the end without a host sends and the one with a host receives
    /// (perftest's reversed traffic direction).
    #[arg(long = "reversed")]
    pub reversed: bool,
    /// With -b: also print each direction's own row (local, then remote).
    #[arg(long = "report-both")]
    pub report_both: bool,
    /// Seconds to wait before releasing the QPs, CQ and memory after the run.
    #[arg(long = "wait_destroy", default_value_t = 0)]
    pub wait_destroy: u32,
    /// Completion vector of -e's events: only 0, the context's one channel (not WRITE
    /// tests, as perftest).
    #[arg(short = 'X', long = "vector")]
    pub vector: Option<u32>,
    /// Latency tests: report times in CPU cycles (microseconds x the MHz of
    /// /proc/cpuinfo); the column names still say usec, as perftest's.
    #[arg(short = 'C', long = "report-cycles")]
    pub cycles: bool,
    /// WRITE and READ bandwidth tests: every message carries a pattern the receiving end
    /// checks byte for byte after each size; a wrong byte fails the run.
    #[arg(long = "data_validation")]
    pub data_validation: bool,
    /// On the model: corrupt the first byte of every payload written into host memory
    /// (`Fault::CorruptPayload`), to see --data_validation fail.
    #[arg(long = "corrupt-payloads", hide = true)]
    pub corrupt_payloads: bool,
    /// Latency tests: create the CQ with completion timestamps and add the latency by the
    /// NIC's clock (differences of two CQEs' timestamps on one NIC; docs/benchmarks.md):
    /// hw_t_* = requester CQE to the next WR's requester CQE (halved in the ping-pongs);
    /// hw_post_cqe_* = requester CQE minus the CQE that let the CPU post (the peer's
    /// receive CQE in send_lat and write_lat --write_with_imm, the previous requester CQE
    /// in read_lat and atomic_lat; none in write_lat, which spins on memory). A device
    /// without a clock is refused.
    #[arg(long = "hw-timestamps")]
    pub hw_timestamps: bool,
    /// On the model: the NICs' clock in kHz (`NicConfig::clock_khz`; 0: no clock).
    #[arg(long = "model-clock-khz", hide = true)]
    pub model_clock_khz: Option<u32>,
    /// Duration mode: add perftest's CPU_Util[%] column, the user time's share of user plus
    /// idle time in /proc/stat over the sampling window.
    #[arg(long = "cpu_util")]
    pub cpu_util: bool,
    /// Counters to report the change of after each row, comma-separated: on hardware paths
    /// under /sys/class/infiniband/DEV/ports/PORT/ (counters/port_xmit_data, ...); on the
    /// model its own counts (packets, cqes, pcie/dma_reads, ...).
    #[arg(short = 'W', long = "report-counters", value_name = "LIST")]
    pub counters: Option<String>,
    /// Print the version and exit.
    #[arg(short = 'V', long = "version")]
    pub version: bool,
    /// Doorbell mode.
    #[arg(long, value_enum, default_value_t = Mode::Auto)]
    pub mode: Mode,
    /// Print the results as one JSON object.
    #[arg(long, conflicts_with = "csv")]
    pub json: bool,
    /// Print the results as CSV.
    #[arg(long)]
    pub csv: bool,
    /// Write an SVG plot: latency distribution (latency tests) or bandwidth against size
    /// (bandwidth tests with -a).
    #[arg(long, value_name = "FILE.svg")]
    pub plot: Option<PathBuf>,
}

/// perftest flags mlx5-perf refuses with a reason instead of clap's "unexpected argument".
const REFUSED: &[(&[&str], &str)] = &[
    (
        &[
            "--use-null-mr",
            "--mmap",
            "--mmap-offset",
            "--mr_per_qp",
            "--payload_file_path",
            "--use_cuda",
            "--cuda_mem_type",
            "--use_cuda_bus_id",
            "--use_cuda_dmabuf",
            "--use_cuda_pcie_mapping",
            "--use_data_direct",
            "--gpu_touch",
            "--use_rocm",
            "--use_rocm_dmabuf",
            "--use_neuron",
            "--use_neuron_dmabuf",
            "--use_hl",
            "--use_mlu",
            "--use_mlu_dmabuf",
            "--use_opencl",
            "--opencl_platform_id",
            "--use_musa",
            "--use_musa_bus_id",
            "--use_musa_dmabuf",
            "--use_musa_pcie_mapping",
            "--use_ib_dm_dmabuf",
            "--tph_mem",
            "--cpu_id",
            "--ph",
            "--pin_cores",
            "--disable_numa",
        ],
        "memory and placement flags come with the memory issue (issue 17)",
    ),
    (
        &["--connectionless"],
        "perftest's connectionless UD test (separate sender and receiver processes with no \
         exchange) is not in mlx5-perf",
    ),
    (
        &["--typical_pkt_size"],
        "perftest's packet pacing sets the rate alone (ibv_modify_qp with \
         IBV_QP_RATE_LIMIT), and so does mlx5-perf's --rate_limit_type PP",
    ),
    (
        &["-O", "--dualport", "--report-per-port"],
        "dual-port runs are not implemented (one port per run; -i picks it)",
    ),
    (
        &[
            "--data_validation_debug",
            "--disable_dynamic_polling",
            "--dlid",
            "--ipv6",
            "--ipv6-addr",
            "--bind_source_ip",
            "--dont_xchg_versions",
            "--no_enhanced_reorder",
            "--use_ooo",
            "--use_old_post_send",
            "--no_lock",
            "--disable_pcie_relaxed",
            "--unsolicited_write",
            "--congest_type",
            "-L",
            "--hop_limit",
        ],
        "not implemented in mlx5-perf yet (docs/perftest-parity.md lists each perftest \
         flag and its state)",
    ),
];

/// The reason mlx5-perf refuses the perftest flag `arg` (`--name`, `--name=value` or
/// `-x`), if it is one it refuses.
pub fn refusal(arg: &str) -> Option<String> {
    let name = arg.split_once('=').map_or(arg, |(n, _)| n);
    REFUSED
        .iter()
        .find(|(flags, _)| flags.contains(&name))
        .map(|(_, why)| format!("{name}: {why}"))
}

/// A message size as perftest's `-s` reads it: an optional `K` or `M` suffix, then
/// `strtol` with base 0 (`0x` hex, a leading `0` octal, else decimal).
pub fn parse_size(text: &str) -> Result<usize, String> {
    let (digits, factor) = match text.strip_suffix('K') {
        Some(d) => (d, 1024),
        None => match text.strip_suffix('M') {
            Some(d) => (d, 1024 * 1024),
            None => (text, 1),
        },
    };
    strtol0(digits)
        .and_then(|n| usize::try_from(n).ok())
        .and_then(|n| n.checked_mul(factor))
        .ok_or_else(|| format!("{text:?} is not a size (decimal, 0x hex, or with K / M)"))
}

/// `strtol(text, NULL, 0)` of a whole non-negative number: `0x` / `0X` hex, a leading `0`
/// octal, else decimal; `None` for anything else (perftest reads it without checking the
/// end, we refuse trailing text).
fn strtol0(digits: &str) -> Option<u64> {
    if let Some(hex) = digits
        .strip_prefix("0x")
        .or_else(|| digits.strip_prefix("0X"))
    {
        u64::from_str_radix(hex, 16).ok()
    } else if digits.len() > 1 && digits.starts_with('0') {
        u64::from_str_radix(&digits[1..], 8).ok()
    } else {
        digits.parse().ok()
    }
}

/// An MGID as perftest's `set_multicast_gid` reads `-M`: 16 byte values separated by `:`,
/// each `strtol` with base 0 (we refuse a value above 255, which perftest truncates).
pub fn parse_mgid(text: &str) -> Result<[u8; 16], String> {
    let parts: Vec<&str> = text.split(':').collect();
    let mut gid = [0u8; 16];
    if parts.len() != 16 {
        return Err(format!(
            "-M {text:?}: 16 byte values separated by ':', not {}",
            parts.len()
        ));
    }
    for (b, part) in gid.iter_mut().zip(parts) {
        *b = parse_int(part).map_err(|e| format!("-M: {e}"))?;
    }
    Ok(gid)
}

/// A number as perftest reads `-S`, `--flow_label` and `--pkey_index` (`strtol` with base
/// 0: decimal, `0x` hex or `0` octal), that fits `T`.
pub fn parse_int<T: TryFrom<u64>>(text: &str) -> Result<T, String> {
    strtol0(text)
        .and_then(|n| T::try_from(n).ok())
        .ok_or_else(|| format!("{text:?} is not a number in range (decimal, 0x hex or 0 octal)"))
}

/// Operations `explain` knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ExplainOp {
    /// RDMA WRITE.
    Write,
    /// RDMA WRITE with immediate.
    #[value(name = "write_imm")]
    WriteImm,
    /// SEND.
    Send,
    /// SEND with immediate.
    #[value(name = "send_imm")]
    SendImm,
    /// RDMA READ.
    Read,
    /// Compare-and-swap.
    Cas,
    /// Fetch-and-add.
    Faa,
}

/// The CQE compression layouts `explain` shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ZipArg {
    /// A title CQE and arrays of 8 mini-CQEs (what verbs can create).
    Basic,
    /// A whole title, then slots of up to 7 mini-CQEs with validity counts (DevX).
    Enhanced,
}

impl ZipArg {
    /// The driver's request for this layout.
    pub fn compression(self) -> mlx5_direct::CqeCompression {
        match self {
            ZipArg::Basic => mlx5_direct::CqeCompression::BASIC,
            ZipArg::Enhanced => mlx5_direct::CqeCompression::ENHANCED,
        }
    }
}

/// The posting modes `explain` and `pcie` compare.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum PostMode {
    /// rdma-core's rule (`DoorbellMode::BlueFlame`, the driver's default): a WQE rung alone
    /// is BlueFlame-copied, a batch gets the 8-byte doorbell.
    Bf,
    /// The last WQE of every batch BlueFlame-copied (`DoorbellMode::BlueFlameLast`;
    /// unverified on silicon).
    BfLast,
    /// 8-byte doorbell.
    Db,
}

/// Link presets of the model: TLP overheads and how read completions are split.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum TlpOverhead {
    /// MWr/MRd 24 B, CplD 20 B (64-bit addresses), completions up to MPS: pcie-bench's
    /// model.
    PcieBench,
    /// MWr/MRd 26 B, CplD 22 B, 128-byte (RCB-sized) completions (Kalia et al., ATC'16).
    Kalia,
}

/// How the host splits read completions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum CompletionSplit {
    /// One completion per read completion boundary (RCB) block.
    Rcb,
    /// Completions as large as MPS allows, each ending on an RCB boundary.
    Mps,
}

/// `mlx5-perf explain`.
#[derive(Args, Debug, Clone)]
pub struct ExplainArgs {
    /// The operation.
    pub op: ExplainOp,
    /// Payload bytes (atomics: 8).
    #[arg(long, default_value_t = 8)]
    pub size: usize,
    /// Send the payload inline in the WQE (WRITE and SEND only).
    #[arg(long)]
    pub inline: bool,
    /// Gather (or READ scatter) entries the payload is split into.
    #[arg(long, default_value_t = 1)]
    pub sge: usize,
    /// A CQE for every K-th WR (0: none).
    #[arg(long, default_value_t = 1)]
    pub signal_every: u32,
    /// Doorbell or BlueFlame (the last WQE of a batch).
    #[arg(long, value_enum, default_value_t = PostMode::Bf)]
    pub mode: PostMode,
    /// WRs posted with one doorbell.
    #[arg(long, default_value_t = 1)]
    pub batch: u32,
    /// TLP overhead preset.
    #[arg(long, value_enum, default_value_t = TlpOverhead::PcieBench)]
    pub tlp_overhead: TlpOverhead,
    /// The requester's CQ compresses CQEs in this layout (the model compresses every
    /// burst); the CQ entries as the NIC wrote them are shown, mini-CQEs decoded.
    #[arg(long, value_enum)]
    pub cqe_compression: Option<ZipArg>,
    /// The responder's QP scatters to CQE, on a CQ of this many bytes per CQE (64 or 128):
    /// a SEND of up to 32 / 64 bytes comes up inside the CQE, without the payload's write.
    #[arg(long, value_name = "CQE_SIZE")]
    pub scatter_to_cqe: Option<usize>,
    /// The transport of the requester's QP: UD carries SEND only, UC no READ or atomics,
    /// DC posts on a DC initiator to a DC target (UD and DC: one WR per doorbell), XRC on an
    /// XRC initiator to a target, each WQE naming the XRC SRQ (the 16-byte XRC segment).
    #[arg(long, value_enum, default_value_t = TransportArg::Rc)]
    pub transport: TransportArg,
    /// Raw Ethernet: N frames of `--size` bytes in one enhanced multi-packet WQE (0: one
    /// frame per WQE).
    #[arg(long, default_value_t = 0)]
    pub empw: usize,
    /// UD SEND to a multicast group (perftest's default MGID) that N model NICs each attach
    /// one UD QP to (1 to 8; 0: unicast): the WQE, the one packet on the wire and each
    /// NIC's link.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub mcast: usize,
    /// UD and DC: the address handle carries a GRH (InfiniBand with a global route).
    #[arg(long)]
    pub grh: bool,
    /// UD and DC: a compact address handle (the 16-byte AV, `dqp_dct` bit 31 clear), the
    /// model NICs given the `compact_address_vector` cap.
    #[arg(long)]
    pub compact_av: bool,
    /// The model NICs' ports' link layer, as the benchmarks' `--force-link`: on
    /// `Ethernet` (RoCE v2) every address handle is global and its AV is RoCE's (UD and
    /// DC: the datagram segment decoded as such), every UD receive gets the IPv6 header.
    #[arg(long = "force-link", value_parser = parse_link, value_name = "IB|Ethernet")]
    pub force_link: Option<Link>,
    /// Both CQs created with completion timestamps: the requester's CQEs are shown decoded,
    /// the device clock at bytes 48..56 and its nanoseconds by the clock-info page
    /// (`--json`: `timestamp`, `ns` and `text` in each `cqes` entry). The model's clock
    /// here steps one tick per CQE, so the bytes are the same on every run.
    #[arg(long)]
    pub hw_timestamps: bool,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// The transports `explain` posts on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum TransportArg {
    /// Reliable connection.
    Rc,
    /// Unreliable connection.
    Uc,
    /// Unreliable datagram.
    Ud,
    /// Dynamically connected (a DCI to a DCT).
    Dc,
    /// XRC (an initiator to a target, into an XRC SRQ).
    Xrc,
    /// Raw Ethernet (a packet QP's frame to another NIC's MAC; SEND only).
    Raw,
}

impl TransportArg {
    /// The driver's transport of the requester's QP.
    pub fn transport(self) -> mlx5_direct::Transport {
        match self {
            TransportArg::Rc => mlx5_direct::Transport::Rc,
            TransportArg::Uc => mlx5_direct::Transport::Uc,
            TransportArg::Ud => mlx5_direct::Transport::Ud,
            TransportArg::Dc => mlx5_direct::Transport::Dci,
            TransportArg::Xrc => mlx5_direct::Transport::XrcIni,
            TransportArg::Raw => mlx5_direct::Transport::Raw,
        }
    }
}

/// Requester operations of the `pcie` table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PcieOp {
    /// RDMA WRITE.
    Write,
    /// SEND.
    Send,
}

/// `mlx5-perf pcie`.
#[derive(Args, Debug, Clone)]
pub struct PcieArgs {
    /// Requester operation.
    #[arg(long, value_enum, default_value_t = PcieOp::Write)]
    pub op: PcieOp,
    /// Payload bytes.
    #[arg(long, default_value_t = 8)]
    pub size: usize,
    /// N of the doorbell-batching row.
    #[arg(long, default_value_t = 32)]
    pub batch: u32,
    /// k of the completion-every-k row.
    #[arg(long, default_value_t = 32)]
    pub signal_every: u32,
    /// TLP overhead preset.
    #[arg(long, value_enum, default_value_t = TlpOverhead::PcieBench)]
    pub tlp_overhead: TlpOverhead,
    /// Max payload size.
    #[arg(long, default_value_t = 256)]
    pub mps: u32,
    /// Max read request size.
    #[arg(long, default_value_t = 512)]
    pub mrrs: u32,
    /// Read completion boundary.
    #[arg(long, default_value_t = 128)]
    pub rcb: u32,
    /// How read completions are split [default: the preset's: mps for pcie-bench, rcb for
    /// kalia].
    #[arg(long, value_enum)]
    pub completions: Option<CompletionSplit>,
    /// The raw Ethernet rows instead (one frame per WQE with and without the inline header,
    /// eMPW of 32 pointer and 12 inline packets, a plain and a striding receive queue).
    #[arg(long)]
    pub raw: bool,
    /// The UD multicast rows instead: one 64-byte SEND unicast with a GRH and to a group of
    /// 1, 2 and 4 receiving NICs (the sender's link, the wire, each receiver's link).
    #[arg(long)]
    pub mcast: bool,
    /// The NIC evicts every Nth BlueFlame copy before use and reads that WQE by DMA (0:
    /// never).
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub bf_evict_every: u32,
    /// Count the driver's 4-byte EQ doorbell after each event.
    #[arg(long)]
    pub eq_rearm: bool,
    /// A context cache of this many QP/CQ/memory-key contexts; a miss reads the context by
    /// DMA (default: no cache, no reads).
    #[arg(long, value_name = "ENTRIES")]
    pub ctx_cache: Option<u32>,
    /// Count the WQE re-read of a retransmission.
    #[arg(long)]
    pub retry_refetch: bool,
    /// Entries of the NIC's address-translation cache in the memory rows (one 8-byte MTT
    /// entry read per miss; the real size is not public).
    #[arg(long, value_name = "ENTRIES", default_value_t = 1024)]
    pub xlat_cache: u32,
    /// Post round robin over this many QP pairs (one doorbell's WRs per QP in turn).
    #[arg(long, default_value_t = 1)]
    pub qps: u32,
    /// Add rows with a CQE per WR in bursts of 1, 8, 16 and 64, written whole and
    /// compressed in each layout (the model compressing every burst).
    #[arg(long)]
    pub cqe_compression: bool,
    /// Add responder rows for the inbound SEND on 128-byte CQEs and with scatter to CQE on
    /// 64- and 128-byte CQEs.
    #[arg(long)]
    pub scatter_to_cqe: bool,
    /// Add row 1 and the inbound SEND with both CQs created with completion timestamps
    /// (the timestamp is inside the 64-byte CQE: the same bytes).
    #[arg(long)]
    pub hw_timestamps: bool,
    /// Add the transport rows: the BlueFlame row's posting on UC, as UD SENDs (the 48-byte
    /// AV, and with a GRH), and on a DC initiator to one DC target and to two in turn, with
    /// what the requester's NIC put on the wire (one QP).
    #[arg(long)]
    pub transports: bool,
    /// Only the MEMIC rows: WRITEs (or SENDs) of 256, 512, 1024 and 2048 bytes gathered
    /// from host memory against the same payloads copied into device memory and gathered
    /// there (docs/memory.md, "Device memory").
    #[arg(long)]
    pub memic: bool,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
    /// Also write an SVG plot of link bytes per message against message size per mode.
    #[arg(long, value_name = "FILE.svg")]
    pub plot: Option<PathBuf>,
}

/// `mlx5-perf cpu`.
#[derive(Args, Debug, Clone)]
pub struct CpuArgs {
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}
