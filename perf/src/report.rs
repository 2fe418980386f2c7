//! The report: perftest's header and table (text), CSV or one JSON object, with the PCIe
//! cost per message on the model, a progress bar for sweeps and the optional SVG plot.

use std::path::PathBuf;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde_json::{json, Value};

use crate::bench::{Params, PerMessage, Row, Setup, Sink, Stats};
use crate::cli::{Kind, Verb};
use crate::exchange::QpRecord;
use crate::stats::{BwUnit, Latencies};
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

/// The BW peak cell when the peak is not measured.
const NOT_MEASURED: &str = "n/a";

const PCIE_COLUMNS: [&str; 6] = ["MMIO", "MRd", "CplD", "MWr", "B_down", "B_up"];

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

/// perftest's `local address:` / `remote address:` line.
fn record_line(side: &str, r: &QpRecord) -> String {
    let gid: Vec<String> = r
        .gid
        .chunks(2)
        .map(|c| format!("{:02x}{:02x}", c[0], c[1]))
        .collect();
    format!(
        " {side} address: LID {:#06x} QPN {:#08x} PSN {:#08x} RKey {:#010x} VAddr {:#018x} GID {}",
        r.lid,
        r.qpn,
        r.psn,
        r.rkey,
        r.addr,
        gid.join(":")
    )
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
}

impl Reporter {
    /// A reporter for `params`.
    pub fn new(
        format: Format,
        origin: Origin,
        params: &Params,
        unit: BwUnit,
        plot: Option<PathBuf>,
    ) -> Self {
        let bar = (params.sizes.len() > 1 && format != Format::Json).then(|| {
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
        let rule = "-".repeat(87);
        let test = match params.test.verb {
            Verb::Write => "RDMA_Write",
            Verb::Send => "Send",
            Verb::Read => "RDMA_Read",
            Verb::Atomic => "Atomic",
        };
        let kind = match params.test.kind {
            Kind::Lat => "Latency",
            Kind::Bw if params.post_list > 1 => "Post List BW",
            Kind::Bw => "BW",
        };
        let mut h = vec![
            rule.clone(),
            format!("                    {test} {kind} Test"),
        ];
        if self.origin.model {
            h.push(" ON THE MODEL: CPU-side numbers of the driver and the mlx5-hw model's software, both ends in this process; not a NIC's latency or bandwidth".into());
        }
        h.push(format!(" Device          : {}", setup.device));
        h.push(format!(
            " Number of qps   : {}\t\tTransport type : IB",
            params.qps
        ));
        h.push(" Connection type : RC\t\tUsing SRQ      : OFF".into());
        h.push(format!(" TX depth        : {}", params.tx_depth));
        if params.post_list > 1 {
            h.push(format!(" Post List       : {}", params.post_list));
        }
        if params.test.kind == Kind::Bw {
            h.push(format!(" CQ Moderation   : {}", params.cq_mod));
        }
        h.push(format!(" Mtu             : {}[B]", setup.mtu));
        h.push(format!(" Max inline data : {}[B]", params.inline_size));
        h.push(format!(
            " Doorbell mode   : {:?} (asked: {})",
            setup.mode, self.origin.requested_mode
        ));
        h.push(" Time            : CLOCK_MONOTONIC (std::time::Instant)".into());
        if params.test.kind == Kind::Lat {
            h.push(match params.test.verb {
                Verb::Write | Verb::Send => {
                    " Latency         : half the round trip of a ping-pong".into()
                }
                _ => " Latency         : post to completion".into(),
            });
        }
        if let Some(d) = params.duration_ms {
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
        for r in &setup.local {
            h.push(record_line("local", r));
        }
        for r in &setup.remote {
            h.push(record_line("remote", r));
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
        if self.format == Format::Json {
            let doc = json!({"header": self.header, "results": self.rows});
            outln!("{}", serde_json::to_string_pretty(&doc)?);
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

impl Sink for Reporter {
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
    }

    fn row(&mut self, mut row: Row) -> Result<(), Error> {
        if let Stats::Bw(b) = &row.stats {
            row.stats = Stats::Bw(b.in_unit(self.unit));
        }
        if !self.columns_printed {
            self.columns_printed = true;
            match self.format {
                Format::Text => self.print(&self.columns.join("  ")),
                Format::Csv => self.print(&self.columns.join(",")),
                Format::Json => {}
            }
        }
        let mut values = stat_values(&row.stats);
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
            }
            Format::Csv => self.print(&values.join(",")),
            Format::Json => {
                let mut v = serde_json::to_value(&row.stats)?;
                v["pcie_per_message"] = serde_json::to_value(row.pcie)?;
                v["messages_run"] = row.messages.into();
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
