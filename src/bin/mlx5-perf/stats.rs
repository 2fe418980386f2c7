//! Honest statistics: true minimum and maximum, a floating-point standard deviation
//! (Welford), and percentiles from an HDR histogram, in iteration and duration mode alike.

use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use serde::Serialize;

/// Latency samples in nanoseconds.
#[derive(Debug)]
pub struct Latencies {
    hist: Histogram<u64>,
    n: u64,
    mean: f64,
    m2: f64,
    min: f64,
    max: f64,
}

impl Latencies {
    /// No samples yet.
    pub fn new() -> Self {
        Latencies {
            // 1 ns to an hour at 3 significant digits; longer samples count as an hour in
            // the percentiles only.
            hist: Histogram::new_with_bounds(1, 3_600_000_000_000, 3)
                .expect("valid bounds and precision"),
            n: 0,
            mean: 0.0,
            m2: 0.0,
            min: f64::INFINITY,
            max: 0.0,
        }
    }

    /// Adds one sample.
    pub fn record(&mut self, ns: f64) {
        self.n += 1;
        let d = ns - self.mean;
        self.mean += d / self.n as f64;
        self.m2 += d * (ns - self.mean);
        self.min = self.min.min(ns);
        self.max = self.max.max(ns);
        // The histogram only feeds percentiles; min, max, mean and stdev are exact.
        self.hist.saturating_record(ns.round().max(1.0) as u64);
    }

    /// The latency row, in microseconds.
    pub fn summary(&self, bytes: usize) -> LatRow {
        let us = |ns: f64| ns / 1e3;
        let q = |p: f64| us(self.hist.value_at_quantile(p) as f64);
        let stdev = if self.n > 0 {
            (self.m2 / self.n as f64).sqrt()
        } else {
            0.0
        };
        LatRow {
            bytes,
            iterations: self.n,
            t_min: if self.n > 0 { us(self.min) } else { 0.0 },
            t_max: us(self.max),
            t_typical: q(0.5),
            t_avg: us(self.mean),
            t_stdev: us(stdev),
            p50: q(0.5),
            p90: q(0.9),
            p99: q(0.99),
            p99_9: q(0.999),
            p99_99: q(0.9999),
        }
    }

    /// `bins` equal bins from the minimum to the 99.9th percentile (later samples go to the
    /// last bin): `(from_us, to_us, count)`.
    pub fn bins(&self, bins: usize) -> Vec<(f64, f64, u64)> {
        let lo = self.hist.min() as f64;
        let hi = (self.hist.value_at_quantile(0.999) as f64).max(lo + 1.0);
        let width = (hi - lo) / bins as f64;
        let mut out: Vec<(f64, f64, u64)> = (0..bins)
            .map(|i| {
                let a = lo + width * i as f64;
                (a / 1e3, (a + width) / 1e3, 0)
            })
            .collect();
        for v in self.hist.iter_recorded() {
            let i = (((v.value_iterated_to() as f64 - lo) / width) as usize).min(bins - 1);
            out[i].2 += v.count_at_value();
        }
        out
    }
}

/// A latency row (microseconds).
#[derive(Clone, Debug, Serialize)]
pub struct LatRow {
    /// Message size.
    pub bytes: usize,
    /// Samples.
    pub iterations: u64,
    /// True minimum.
    pub t_min: f64,
    /// True maximum.
    pub t_max: f64,
    /// Median.
    pub t_typical: f64,
    /// Mean.
    pub t_avg: f64,
    /// Standard deviation (population, floating point).
    pub t_stdev: f64,
    /// Percentiles.
    pub p50: f64,
    /// 90th percentile.
    pub p90: f64,
    /// 99th percentile.
    pub p99: f64,
    /// 99.9th percentile.
    pub p99_9: f64,
    /// 99.99th percentile.
    pub p99_99: f64,
}

/// Completion progress of a bandwidth run: (messages completed, when).
#[derive(Debug)]
pub struct Throughput {
    start: Instant,
    marks: Vec<(u64, Instant)>,
    every: u64,
}

impl Throughput {
    /// Starts the clock; a mark is kept at most every `every` messages.
    pub fn start(every: u64) -> Self {
        let start = Instant::now();
        Throughput {
            start,
            marks: vec![(0, start)],
            every: every.max(1),
        }
    }

    /// `completed` messages have completed by now.
    pub fn mark(&mut self, completed: u64) {
        if self
            .marks
            .last()
            .is_some_and(|m| completed >= m.0 + self.every)
        {
            self.marks.push((completed, Instant::now()));
        }
    }

    /// The row for `completed` messages of `bytes`, ended now.
    pub fn summary(mut self, bytes: usize, completed: u64, gbits: bool) -> BwRow {
        let end = Instant::now();
        self.marks.push((completed, end));
        let unit = |b: f64, t: Duration| {
            let per_s = b / t.as_secs_f64().max(f64::MIN_POSITIVE);
            if gbits {
                per_s * 8.0 / 1e9
            } else {
                per_s / (1u64 << 20) as f64
            }
        };
        let total = end - self.start;
        // Peak: the best rate between two marks at least a hundredth of the run apart.
        let span = (completed / 100).max(self.every).min(completed.max(1));
        let mut peak = 0f64;
        let mut i = 0;
        for j in 1..self.marks.len() {
            while i + 1 < j && self.marks[j].0 - self.marks[i + 1].0 >= span {
                i += 1;
            }
            let ((c0, t0), (c1, t1)) = (self.marks[i], self.marks[j]);
            if c1 - c0 >= span && t1 > t0 {
                peak = peak.max(unit(((c1 - c0) * bytes as u64) as f64, t1 - t0));
            }
        }
        let avg = unit((completed * bytes as u64) as f64, total);
        BwRow {
            bytes,
            iterations: completed,
            bw_peak: peak.max(avg),
            bw_average: avg,
            msg_rate_mpps: completed as f64 / total.as_secs_f64().max(f64::MIN_POSITIVE) / 1e6,
            unit: if gbits { "Gb/sec" } else { "MiB/sec" },
            seconds: total.as_secs_f64(),
        }
    }
}

/// A bandwidth row.
#[derive(Clone, Debug, Serialize)]
pub struct BwRow {
    /// Message size.
    pub bytes: usize,
    /// Messages completed.
    pub iterations: u64,
    /// Best rate over a hundredth of the run.
    pub bw_peak: f64,
    /// Bytes over the whole run.
    pub bw_average: f64,
    /// Messages per second, millions.
    pub msg_rate_mpps: f64,
    /// `MiB/sec` or `Gb/sec`.
    pub unit: &'static str,
    /// Run time.
    pub seconds: f64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stdev_and_extremes_are_exact() {
        let mut l = Latencies::new();
        for ns in [1000.0, 2000.0, 3000.0, 4000.0] {
            l.record(ns);
        }
        let r = l.summary(8);
        assert_eq!((r.t_min, r.t_max, r.t_avg), (1.0, 4.0, 2.5));
        assert!((r.t_stdev - 1.25f64.sqrt()).abs() < 1e-12);
        assert_eq!(r.iterations, 4);
    }

    #[test]
    fn bins_hold_every_sample() {
        let mut l = Latencies::new();
        for ns in 1..=1000 {
            l.record(f64::from(ns) * 10.0);
        }
        assert_eq!(l.bins(20).iter().map(|b| b.2).sum::<u64>(), 1000);
    }
}
