//! The report: perftest's header and table (text), CSV or one JSON object, with the PCIe
//! cost per message on the model, a progress bar for sweeps and the optional SVG plot.

use std::path::PathBuf;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde_json::{json, Value};

use crate::bench::{Params, PerMessage, RdmaCm, Row, Setup, Sink, Stats};
use crate::cli::{Kind, Output, Verb};
use crate::exchange::QpRecord;
use crate::perftest_out::{self, data_exchange_line, kind_name, link_type, on_off, verb_name};
use crate::stats::{c_g, BwUnit, LatRow, Latencies};
use crate::Error;

/// Output format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// perftest's table.
    Text,
    /// CSV, one line per size.
    Csv,
    /// One JSON object at the end.
    Json,
    /// perftest's `--output`: one number per size, nothing else.
    Number(Output),
}

/// What the header says about where the numbers come from.
#[derive(Clone, Debug)]
pub struct Origin {
    /// True on the model.
    pub model: bool,
    /// The doorbell mode asked for.
    pub requested_mode: String,
    /// The TLP overheads in use (model).
    pub link: Option<String>,
    /// False with `-N` (no warning about the peak then, as perftest).
    pub peak: bool,
    /// `-e`: completion events.
    pub events: bool,
}

/// What the report does besides printing: perftest's JSON file, pass/fail limits and
/// per-sample lines.
#[derive(Clone, Debug)]
pub struct Extras {
    /// `--out_json`: rewrite this file with perftest's JSON after each row.
    pub out_json: Option<PathBuf>,
    /// `--output` (also selects the JSON file's one key).
    pub output: Option<Output>,
    /// `-w`: the least average bandwidth, in the report's unit.
    pub limit_bw: Option<f64>,
    /// `-y` (with `-w`): the least message rate, Mpps.
    pub limit_msgrate: Option<f64>,
    /// `-H`: perftest's sorted samples before each row.
    pub histogram: bool,
    /// `-U`: perftest's samples in order before each row.
    pub unsorted: bool,
    /// `--cpu_util`: the `CPU_Util[%]` column.
    pub cpu_util: bool,
    /// `-W`: the counters to report after each row.
    pub counters: Option<String>,
    /// `--report-both`: each direction's row of a `-b` run after the summed one.
    pub report_both: bool,
    /// `-C`: the CPU's MHz, by which microseconds become cycles.
    pub cycles_per_usec: Option<f64>,
    /// `--hw-timestamps`: the latency columns by the NIC's clock.
    pub hw_timestamps: bool,
}

const LAT_COLUMNS: [&str; 11] = [
    "#bytes",
    "#iterations",
    "t_min[usec]",
    "t_max[usec]",
    "t_typical[usec]",
    "t_avg[usec]",
    "t_stdev[usec]",
    "99% percentile[usec]",
    "99.9% percentile[usec]",
    "90%[usec]",
    "99.99%[usec]",
];

/// perftest's `RESULT_LINE`.
const RULE: &str =
    "---------------------------------------------------------------------------------------";

/// The BW peak cell when the peak is not measured.
const NOT_MEASURED: &str = "n/a";

const PCIE_COLUMNS: [&str; 6] = ["MMIO", "MRd", "CplD", "MWr", "B_down", "B_up"];

/// The columns of each `--hw-timestamps` measure, after its prefix (`hw_t` for the
/// iteration, `hw_post_cqe` for post to CQE); always microseconds of the NIC's clock.
const HW_COLUMNS: [&str; 5] = [
    "min[usec]",
    "typical[usec]",
    "avg[usec]",
    "99%[usec]",
    "99.9%[usec]",
];

/// A `--hw-timestamps` measure's cells (`n/a` where the test has none).
fn hw_values(row: Option<&LatRow>) -> Vec<String> {
    match row {
        Some(r) => [r.t_min, r.t_typical, r.t_avg, r.p99, r.p99_9]
            .iter()
            .map(|x| format!("{x:.3}"))
            .collect(),
        None => vec![NOT_MEASURED.to_string(); HW_COLUMNS.len()],
    }
}

fn bw_columns(unit: BwUnit) -> [&'static str; 5] {
    if unit == BwUnit::Gbits {
        [
            "#bytes",
            "#iterations",
            "BW peak[Gb/sec]",
            "BW average[Gb/sec]",
            "MsgRate[Mpps]",
        ]
    } else {
        [
            "#bytes",
            "#iterations",
            "BW peak[MiB/sec]",
            "BW average[MiB/sec]",
            "MsgRate[Mpps]",
        ]
    }
}

fn pcie_values(p: &PerMessage) -> [f64; 6] {
    [
        p.mmio_writes,
        p.dma_reads,
        p.completions,
        p.dma_writes,
        p.bytes_down,
        p.bytes_up,
    ]
}

fn stat_values(s: &Stats) -> Vec<String> {
    match s {
        Stats::Lat(r) => {
            let mut v = vec![r.bytes.to_string(), r.iterations.to_string()];
            v.extend(
                [
                    r.t_min,
                    r.t_max,
                    r.t_typical,
                    r.t_avg,
                    r.t_stdev,
                    r.p99,
                    r.p99_9,
                    r.p90,
                    r.p99_99,
                ]
                .iter()
                .map(|x| format!("{x:.3}")),
            );
            v
        }
        Stats::Bw(r) => vec![
            r.bytes.to_string(),
            r.iterations.to_string(),
            r.bw_peak
                .map_or_else(|| NOT_MEASURED.to_string(), |p| format!("{p:.2}")),
            format!("{:.2}", r.bw_average),
            format!("{:.6}", r.msg_rate_mpps),
        ],
    }
}

/// C's `%#0{width}x`: zero-padded hex with `0x` before nonzero values only (C's `#` flag
/// adds no prefix to 0), the prefix counted in the width.
fn c_hex(value: u64, width: usize) -> String {
    if value == 0 {
        format!("{:0width$}", 0)
    } else {
        format!("{value:#0width$x}")
    }
}

/// perftest's `local address:` / `remote address:` line (`BASIC_ADDR_FMT`, then
/// `READ_FMT` in READ tests and `RDMA_FMT` in WRITE and READ tests), and its `GID:` line
/// (`PERF_GID_FMT`, the bytes in decimal) when a GID is in use.
fn record_lines(side: &str, r: &QpRecord, verb: Verb, out_reads: u8, gid: bool) -> Vec<String> {
    let mut line = format!(
        " {side} address: LID {} QPN {} PSN {}",
        c_hex(r.lid.into(), 4),
        c_hex(r.qpn.into(), 6),
        c_hex(r.psn.into(), 6)
    );
    if verb == Verb::Read {
        line += &format!(" OUT {}", c_hex(out_reads.into(), 4));
    }
    if matches!(verb, Verb::Read | Verb::Write) {
        line += &format!(
            " RKey {} VAddr {}",
            c_hex(r.rkey.into(), 8),
            c_hex(r.addr, 16)
        );
    }
    if let Some(d) = r.dct {
        // mlx5-perf's own field: the DC target the peer's DCI addresses.
        line += &format!(" DCTN {}", c_hex(d.number.into(), 6));
    }
    if let Some(x) = r.xrc {
        // perftest's `XRC_FMT`.
        line += &format!(" SRQn {}", c_hex(x.srqn.into(), 8));
    }
    let mut lines = vec![line];
    if gid {
        let bytes: Vec<String> = r.gid.iter().map(|b| format!("{b:02}")).collect();
        lines.push(format!(" GID: {}", bytes.join(":")));
    }
    lines
}

/// A side's report sink.
pub struct Reporter {
    format: Format,
    origin: Origin,
    unit: BwUnit,
    plot: Option<PathBuf>,
    kind: Kind,
    columns: Vec<String>,
    /// The column names are printed (before the first row).
    columns_printed: bool,
    header: Value,
    rows: Vec<Value>,
    bar: Option<ProgressBar>,
    last_latencies: Option<(usize, Latencies)>,
    bw_points: Vec<(f64, f64)>,
    extras: Extras,
    /// perftest's `test_info` block, from the header.
    test_info: String,
    /// The first limit a row missed.
    below_limit: Option<String>,
}

impl Reporter {
    /// A reporter for `params`.
    pub fn new(
        format: Format,
        origin: Origin,
        params: &Params,
        unit: BwUnit,
        plot: Option<PathBuf>,
        extras: Extras,
    ) -> Self {
        let bar =
            (params.sizes.len() > 1 && matches!(format, Format::Text | Format::Csv)).then(|| {
                let bar = ProgressBar::with_draw_target(
                    Some(params.sizes.len() as u64),
                    ProgressDrawTarget::stderr(),
                );
                bar.set_style(
                    ProgressStyle::with_template("{bar:40} {pos}/{len} sizes, {elapsed} {msg}")
                        .unwrap_or_else(|_| ProgressStyle::default_bar()),
                );
                bar
            });
        Reporter {
            format,
            origin,
            unit,
            plot,
            kind: params.test.kind,
            columns: Vec::new(),
            columns_printed: false,
            header: Value::Null,
            rows: Vec::new(),
            bar,
            last_latencies: None,
            bw_points: Vec::new(),
            extras,
            test_info: String::new(),
            below_limit: None,
        }
    }

    fn print(&self, line: &str) {
        // Rows go to stdout; the bar (stderr) steps aside while one is printed.
        match &self.bar {
            Some(bar) => bar.suspend(|| outln!("{line}")),
            None => outln!("{line}"),
        }
    }

    fn header_lines(&self, setup: &Setup, params: &Params) -> Vec<String> {
        let rule = RULE.to_string();
        let verb = params.test.verb;
        let bw = params.test.kind == Kind::Bw;
        let mut h = Vec::new();
        if let Some(why) = params
            .peak_skipped(setup.server)
            .filter(|_| self.origin.peak)
        {
            h.push(" WARNING: BW peak won't be measured in this run.".into());
            h.push(format!(" (perftest's rule: {why})"));
        }
        h.push(rule.clone());
        h.push(format!(
            "                    {} {} Test",
            verb_name(params),
            kind_name(params)
        ));
        if self.origin.events {
            h.push(format!(" Test with events. Using {}_comp0", setup.device));
        }
        if self.origin.model {
            h.push(" ON THE MODEL: CPU-side numbers of the driver and the mlx5-hw model's software, both ends in this process; not a NIC's latency or bandwidth".into());
        }
        h.push(format!(
            " Dual-port       : OFF\t\tDevice         : {}",
            setup.device
        ));
        h.push(format!(
            " Number of qps   : {}\t\tTransport type : IB",
            params.qps
        ));
        h.push(format!(
            " Connection type : {}\t\tUsing SRQ      : {}",
            params.connection.name(),
            on_off(params.srq)
        ));
        h.push(" PCIe relax order: OFF\t\tLock-free      : ON".into());
        h.push(" ibv_wr* API     : OFF\t\tUsing Enhanced Reorder      : OFF".into());
        if !setup.server || params.duplex {
            h.push(format!(" TX depth        : {}", params.tx_depth));
        }
        if params.post_list > 1 {
            h.push(format!(" Post List       : {}", params.post_list));
        }
        if params.recv_post_list > 1 {
            h.push(format!(" Recv Post List  : {}", params.recv_post_list));
        }
        if params.receives() && (setup.server || params.duplex) {
            h.push(format!(" RX depth        : {}", params.rx_depth));
        }
        if let Some(s) = params.dci_streams {
            h.push(format!(" DCS num streams : {}", s.log));
            h.push(format!(" DCS active num streams : {}", s.active));
        }
        if bw {
            h.push(format!(" CQ Moderation   : {}", params.cq_mod));
            h.push(format!(" CQE Poll Batch  : {}", setup.cqe_poll));
        }
        h.push(format!(" Mtu             : {}[B]", setup.mtu));
        let link = link_type(setup);
        h.push(format!(" Link type       : {link}"));
        if let Some(x) = setup.gid_index {
            h.push(format!(" GID index       : {x}"));
        }
        if matches!(verb, Verb::Read | Verb::Atomic) {
            h.push(format!(" Outstand reads  : {}", setup.out_reads));
        } else {
            h.push(format!(" Max inline data : {}[B]", params.inline_size));
        }
        h.push(format!(
            " rdma_cm QPs\t : {}",
            on_off(params.rdma_cm == RdmaCm::Qps)
        ));
        h.push(data_exchange_line(params.rdma_cm, setup.tos));
        h.push(format!(
            " Doorbell mode   : {:?} (asked: {})",
            setup.mode, self.origin.requested_mode
        ));
        h.push(" Time            : CLOCK_MONOTONIC (std::time::Instant)".into());
        if params.test.kind == Kind::Lat {
            h.push(match verb {
                Verb::Write | Verb::Send => {
                    " Latency         : half the round trip of a ping-pong".into()
                }
                _ => " Latency         : post to completion".into(),
            });
        }
        if let (Some(d), Some(_)) = (params.duration_ms, params.periods) {
            h.push(format!(
                " Duration        : a row every {} s until interrupted (run_infinitely)",
                d as f64 / 1e3
            ));
        } else if let Some(d) = params.duration_ms {
            let m = params.margin_ms as f64 / 1e3;
            h.push(format!(
                " Duration        : {} s per size: {m} s warm-up, {} s sampled, {m} s end margin",
                d as f64 / 1e3,
                (d - 2 * params.margin_ms) as f64 / 1e3,
            ));
        }
        if let Some(link) = &self.origin.link {
            h.push(format!(
                " PCIe            : per {} on each NIC's link, counted by the model ({link})",
                if params.test.kind == Kind::Lat {
                    "iteration"
                } else {
                    "message"
                }
            ));
        }
        h.push(rule.clone());
        // perftest prints the GID lines when a GID index is in use: given with -x, or
        // chosen on RoCE.
        let gid = setup.gid_index.is_some();
        for r in &setup.local {
            h.extend(record_lines("local", r, verb, setup.out_reads, gid));
        }
        for r in &setup.remote {
            h.extend(record_lines("remote", r, verb, setup.out_reads, gid));
        }
        h.push(rule);
        h
    }

    fn column_names(&self) -> Vec<String> {
        let mut c: Vec<String> = match self.kind {
            Kind::Lat => LAT_COLUMNS.iter().map(|s| s.to_string()).collect(),
            Kind::Bw => bw_columns(self.unit)
                .iter()
                .map(|s| s.to_string())
                .collect(),
        };
        if self.extras.cpu_util {
            c.push("CPU_Util[%]".into());
        }
        if self.extras.hw_timestamps {
            for prefix in ["hw_t", "hw_post_cqe"] {
                c.extend(HW_COLUMNS.iter().map(|h| format!("{prefix}_{h}")));
            }
        }
        if self.origin.link.is_some() {
            for side in ["client", "server"] {
                c.extend(PCIE_COLUMNS.iter().map(|p| format!("{side}_{p}")));
            }
        }
        c
    }

    /// Ends the report: JSON output, plot, progress bar.
    pub fn finish(mut self) -> Result<(), Error> {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
        if self.format == Format::Text && self.columns_printed {
            // perftest's closing rule under the table.
            self.print(RULE);
        }
        if self.format == Format::Json {
            let doc = json!({"header": self.header, "results": self.rows});
            outln!("{}", serde_json::to_string_pretty(&doc)?);
        }
        if let Some(why) = self.below_limit.take() {
            return Err(why.into());
        }
        if let Some(path) = &self.plot {
            let model = if self.origin.model {
                " (model, CPU-side)"
            } else {
                ""
            };
            match (&self.last_latencies, self.kind) {
                (Some((size, lat)), Kind::Lat) => crate::plot::histogram(
                    path,
                    &format!("latency distribution, {size} bytes{model}"),
                    "latency [usec]",
                    &lat.bins(60),
                ),
                _ => crate::plot::lines(
                    path,
                    &format!("bandwidth against message size{model}"),
                    "message size [bytes]",
                    if self.unit == BwUnit::Gbits {
                        "BW average [Gb/sec]"
                    } else {
                        "BW average [MiB/sec]"
                    },
                    &[("BW average".to_string(), self.bw_points.clone())],
                ),
            }
            .map_err(|e| format!("plot {}: {e}", path.display()))?;
        }
        Ok(())
    }
}

impl Reporter {
    /// perftest's `-U` / `-H` lines: `#, usec`, then `i, value` per sample (in order, or
    /// sorted without the two largest), then the rule and the column names again.
    fn print_samples(&self, samples: &[f64]) {
        if self.format != Format::Text {
            return;
        }
        if self.extras.unsorted {
            self.print("#, usec");
            for (i, x) in samples.iter().enumerate() {
                self.print(&format!("{}, {}", i + 1, c_g(*x)));
            }
        }
        if self.extras.histogram {
            let mut sorted = samples.to_vec();
            sorted.sort_by(f64::total_cmp);
            sorted.truncate(sorted.len().saturating_sub(2));
            self.print("#, usec");
            for (i, x) in sorted.iter().enumerate() {
                self.print(&format!("{}, {}", i + 1, c_g(*x)));
            }
        }
        self.print(RULE);
        self.print(&self.columns.join("  "));
    }

    /// perftest's `--report-both` blocks: this side's row, then the peer's, each under
    /// its title and the bandwidth columns.
    fn print_directions(&self, local: &Stats, remote: &Stats) {
        for (title, stats) in [(" Local results: ", local), (" Remote results: ", remote)] {
            let stats = match stats {
                Stats::Bw(b) => Stats::Bw(b.in_unit(self.unit)),
                s => s.clone(),
            };
            self.print(RULE);
            self.print("");
            self.print(title);
            self.print(RULE);
            let columns = bw_columns(self.unit);
            self.print(&columns.join("  "));
            let cells: Vec<String> = stat_values(&stats)
                .iter()
                .zip(columns)
                .map(|(v, c)| format!("{v:>w$}", w = c.len()))
                .collect();
            self.print(&cells.join("  "));
        }
    }

    /// perftest's `-w` / `-y` check of a bandwidth row; the first miss fails the run.
    fn check_limits(&mut self, stats: &Stats) {
        let Stats::Bw(b) = stats else { return };
        let Some(limit) = self.extras.limit_bw else {
            return;
        };
        let miss = if b.bw_average < limit {
            Some(format!(
                "Error: BW result is below bw limit ({:.2} < {limit} {})",
                b.bw_average,
                b.unit.label()
            ))
        } else {
            self.extras
                .limit_msgrate
                .filter(|&m| b.msg_rate_mpps < m)
                .map(|m| {
                    format!(
                        "Error: Msg rate is below msg_rate limit ({:.6} < {m} Mpps)",
                        b.msg_rate_mpps
                    )
                })
        };
        if self.below_limit.is_none() {
            self.below_limit = miss;
        }
    }
}

impl Sink for Reporter {
    fn counters(&self) -> Option<&str> {
        self.extras.counters.as_deref()
    }

    fn header(&mut self, setup: &Setup, params: &Params) {
        self.columns = self.column_names();
        self.header = json!({
            "test": params.test.name(),
            "model": self.origin.model,
            "note": if self.origin.model { "CPU-side numbers on the mlx5-hw model, not a NIC" } else { "hardware" },
            "device": setup.device,
            "params": params,
            "doorbell_mode": format!("{:?}", setup.mode),
            "mtu": setup.mtu,
            "pcie_link": self.origin.link,
            "local": setup.local,
            "remote": setup.remote,
            "time": "CLOCK_MONOTONIC",
        });
        if self.format == Format::Text {
            for line in self.header_lines(setup, params) {
                self.print(&line);
            }
        }
        self.test_info = perftest_out::test_info(params, setup);
    }

    fn row(&mut self, mut row: Row) -> Result<(), Error> {
        match (&row.stats, self.extras.cycles_per_usec) {
            (Stats::Bw(b), _) => row.stats = Stats::Bw(b.in_unit(self.unit)),
            (Stats::Lat(l), Some(mhz)) => {
                row.stats = Stats::Lat(l.scaled(mhz));
                for x in row.samples.iter_mut().flatten() {
                    *x *= mhz;
                }
            }
            (Stats::Lat(_), None) => {}
        }
        if !self.columns_printed {
            self.columns_printed = true;
            match self.format {
                Format::Text => self.print(&self.columns.join("  ")),
                Format::Csv => self.print(&self.columns.join(",")),
                Format::Json | Format::Number(_) => {}
            }
        }
        if let Some(samples) = &row.samples {
            self.print_samples(samples);
        }
        self.check_limits(&row.stats);
        if let Some(path) = &self.extras.out_json {
            let doc = format!(
                "{{\n{}{}}}\n",
                self.test_info,
                perftest_out::results(&row.stats, self.extras.output, row.cpu_util)
            );
            std::fs::write(path, doc)
                .map_err(|e| format!("--out_json_file {}: {e}", path.display()))?;
        }
        let mut values = stat_values(&row.stats);
        if self.extras.cpu_util {
            values.push(
                row.cpu_util
                    .map_or_else(|| NOT_MEASURED.into(), |u| format!("{u:.2}")),
            );
        }
        if self.extras.hw_timestamps {
            let hw = row.hw.as_ref();
            values.extend(hw_values(hw.map(|h| &h.iteration)));
            values.extend(hw_values(hw.and_then(|h| h.post_to_cqe.as_ref())));
        }
        if let Some(p) = &row.pcie {
            for side in [&p.client, &p.server] {
                values.extend(pcie_values(side).iter().map(|x| format!("{x:.2}")));
            }
        }
        match self.format {
            Format::Text => {
                let cells: Vec<String> = values
                    .iter()
                    .zip(&self.columns)
                    .map(|(v, c)| format!("{v:>w$}", w = c.len()))
                    .collect();
                self.print(&cells.join("  "));
                if let Some((local, remote)) =
                    row.directions.as_ref().filter(|_| self.extras.report_both)
                {
                    self.print_directions(local, remote);
                }
                // perftest's counters_print: a tab, name=change, then an empty line.
                if !row.counters.is_empty() {
                    for (name, delta) in &row.counters {
                        self.print(&format!("\t{name}={delta}"));
                    }
                    self.print("");
                }
            }
            Format::Csv => self.print(&values.join(",")),
            Format::Number(output) => self.print(&perftest_out::number(&row.stats, output)),
            Format::Json => {
                let mut v = serde_json::to_value(&row.stats)?;
                v["pcie_per_message"] = serde_json::to_value(row.pcie)?;
                v["messages_run"] = row.messages.into();
                v["completions"] = serde_json::to_value(&row.completions)?;
                if self.extras.cpu_util {
                    v["cpu_util"] = row.cpu_util.into();
                }
                if self.extras.hw_timestamps {
                    v["hw"] = serde_json::to_value(&row.hw)?;
                }
                if !row.counters.is_empty() {
                    v["counters"] = row.counters.iter().cloned().collect();
                }
                if let Some((local, remote)) =
                    row.directions.as_ref().filter(|_| self.extras.report_both)
                {
                    v["local"] = serde_json::to_value(local)?;
                    v["remote"] = serde_json::to_value(remote)?;
                }
                self.rows.push(v);
            }
        }
        match &row.stats {
            Stats::Bw(b) => self.bw_points.push((b.bytes as f64, b.bw_average)),
            Stats::Lat(l) => {
                self.last_latencies = row.latencies.map(|lat| (l.bytes, lat));
            }
        }
        if let Some(bar) = &self.bar {
            bar.inc(1);
        }
        Ok(())
    }
}
