//! Honest statistics: true minimum and maximum, a floating-point standard deviation
//! (Welford), and percentiles from an HDR histogram, in iteration and duration mode alike.

use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

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

impl Default for Latencies {
    fn default() -> Self {
        Latencies::new()
    }
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

    /// Samples recorded.
    pub fn count(&self) -> u64 {
        self.n
    }

    /// The latency row, in microseconds; `iterations` is what `#iterations` shows
    /// (perftest's: `-n` in iteration mode, the sampled iterations with `-D`).
    pub fn summary(&self, bytes: usize, iterations: u64) -> LatRow {
        let us = |ns: f64| ns / 1e3;
        let q = |p: f64| us(self.hist.value_at_quantile(p) as f64);
        let stdev = if self.n > 0 {
            (self.m2 / self.n as f64).sqrt()
        } else {
            0.0
        };
        LatRow {
            bytes,
            iterations,
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

/// perftest's latency samples from the times of consecutive posts, in microseconds: each
/// gap, halved in the ping-pong tests (`print_report_lat`: `tposted[i + 1] - tposted[i]`
/// over `rtt_factor`), so one sample fewer than posts.
pub fn perftest_samples(posts: &[Instant], halves: bool) -> Vec<f64> {
    let rtt = if halves { 2.0 } else { 1.0 };
    posts
        .windows(2)
        .map(|w| (w[1] - w[0]).as_nanos() as f64 / 1e3 / rtt)
        .collect()
}

/// perftest's statistics of `samples` (microseconds), as `print_report_lat` computes them:
/// sorted, the two largest left out of the mean, median and deviation
/// (`LAT_MEASURE_TAIL`); `t_max` the second-largest sample (`delta[kept]`);
/// `t_typical` the median; each deviation truncated to a whole microsecond (an `int`)
/// before it is squared; the percentiles the sample at `ceil(kept * p)`. `p50`, `p90` and
/// `p99_99`, which perftest does not print, by the same index rule. None below 3 samples.
pub fn perftest_summary(samples: &[f64], bytes: usize, iterations: u64) -> Option<LatRow> {
    let mut d = samples.to_vec();
    d.sort_by(f64::total_cmp);
    let kept = d.len().checked_sub(2).filter(|&k| k > 0)?;
    // get_median(kept, d): the mean of the middle two when kept - 1 is odd.
    let median = if (kept - 1) % 2 == 1 {
        (d[kept / 2] + d[kept / 2 - 1]) / 2.0
    } else {
        d[kept / 2]
    };
    let average = d[..kept].iter().sum::<f64>() / kept as f64;
    let stdev_sum: f64 = d[..kept]
        .iter()
        .map(|&x| ((average - x) as i64 as f64).powi(2))
        .sum();
    let at = |p: f64| d[((kept as f64 * p).ceil() as usize).min(kept)];
    Some(LatRow {
        bytes,
        iterations,
        t_min: d[0],
        t_max: d[kept],
        t_typical: median,
        t_avg: average,
        t_stdev: (stdev_sum / kept as f64).sqrt(),
        p50: median,
        p90: at(0.9),
        p99: at(0.99),
        p99_9: at(0.999),
        p99_99: at(0.9999),
    })
}

/// C's `printf("%g")`: six significant digits, trailing zeros dropped, an exponent below
/// 1e-4 and from 1e6 (perftest's `-H` / `-U` lines).
pub fn c_g(x: f64) -> String {
    if x == 0.0 || !x.is_finite() {
        return format!("{x}");
    }
    let exp = format!("{x:.5e}");
    let (mantissa, e) = exp.split_once('e').unwrap_or((&exp, "0"));
    let e: i32 = e.parse().unwrap_or(0);
    let trim = |t: &str| {
        if t.contains('.') {
            t.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            t.to_string()
        }
    };
    if !(-4..6).contains(&e) {
        let sign = if e < 0 { '-' } else { '+' };
        format!("{}e{sign}{:02}", trim(mantissa), e.abs())
    } else {
        let decimals = (5 - e).max(0) as usize;
        trim(&format!("{x:.decimals$}"))
    }
}

/// A latency row (microseconds).
#[derive(Clone, Debug, Serialize, Deserialize)]
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

impl LatRow {
    /// The row with every time multiplied by `factor` (`-C`: microseconds to cycles).
    pub fn scaled(&self, factor: f64) -> LatRow {
        LatRow {
            t_min: self.t_min * factor,
            t_max: self.t_max * factor,
            t_typical: self.t_typical * factor,
            t_avg: self.t_avg * factor,
            t_stdev: self.t_stdev * factor,
            p50: self.p50 * factor,
            p90: self.p90 * factor,
            p99: self.p99 * factor,
            p99_9: self.p99_9 * factor,
            p99_99: self.p99_99 * factor,
            ..self.clone()
        }
    }
}

/// perftest's duration-mode states: a warm-up margin, the sampling window, an end margin,
/// then the end of the run (perftest's START, SAMPLE, STOP_SAMPLE and END states).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Phase {
    /// The warm-up margin: nothing is counted.
    Warmup,
    /// The sampling window: the statistics come from here only.
    Sample,
    /// The end margin: still running, nothing is counted.
    Cooldown,
    /// The run is over.
    End,
}

/// The phases of one duration-mode run: `margin`, `total - 2 * margin` of sampling,
/// `margin`, from `start`.
#[derive(Clone, Copy, Debug)]
pub struct Schedule {
    start: Instant,
    total: Duration,
    margin: Duration,
}

impl Schedule {
    /// A run of `total` starting at `start` with `margin` at each end (`total > 2 * margin`,
    /// checked with the flags).
    pub fn new(start: Instant, total: Duration, margin: Duration) -> Self {
        Schedule {
            start,
            total,
            margin,
        }
    }

    /// The phase at `at`.
    pub fn phase(&self, at: Instant) -> Phase {
        let t = at.saturating_duration_since(self.start);
        if t < self.margin {
            Phase::Warmup
        } else if t < self.total.saturating_sub(self.margin) {
            Phase::Sample
        } else if t < self.total {
            Phase::Cooldown
        } else {
            Phase::End
        }
    }

    /// True when a sample that began at `from` and ended at `to` lies inside the sampling
    /// window.
    pub fn sampled(&self, from: Instant, to: Instant) -> bool {
        self.phase(from) == Phase::Sample && self.phase(to) == Phase::Sample
    }
}

/// The bandwidth unit of a row.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum BwUnit {
    /// 2^20 bytes per second (perftest's default).
    #[serde(rename = "MiB/sec")]
    MiBs,
    /// 10^9 bits per second (`--report_gbits`).
    #[serde(rename = "Gb/sec")]
    Gbits,
}

impl BwUnit {
    /// The unit `--report_gbits` asks for.
    pub fn new(gbits: bool) -> Self {
        if gbits {
            BwUnit::Gbits
        } else {
            BwUnit::MiBs
        }
    }

    /// The unit as the report's column names write it.
    pub fn label(self) -> &'static str {
        match self {
            BwUnit::MiBs => "MiB/sec",
            BwUnit::Gbits => "Gb/sec",
        }
    }

    /// Bytes per second in this unit.
    fn per_second(self) -> f64 {
        match self {
            BwUnit::MiBs => (1u64 << 20) as f64,
            BwUnit::Gbits => 1e9 / 8.0,
        }
    }
}

/// A message count and when it was reached.
type Event = (u64, Instant);

/// A bandwidth run's accounting, as perftest's `print_report_bw` does it.
///
/// Iteration mode: the average is over the time from the first post (a receiver: the first
/// arrival) to the last completion. The peak, when measured, is perftest's: the size over
/// the shortest time per message of any stretch from one post to a later completion
/// (`(t_completion - t_post) / messages in between`, minimised over every post and every
/// later CQE). Duration mode: completions counted from the first look at the CQ in the
/// sampling window to the first look after it, over the time between those looks; no peak.
#[derive(Debug)]
pub struct Throughput {
    schedule: Option<Schedule>,
    window_start: Option<(u64, Instant)>,
    window_end: Option<(u64, Instant)>,
    first: Option<Instant>,
    last: (u64, Option<Instant>),
    /// Peak measurement: (messages posted before, when) for each post, (messages completed,
    /// when) for each look at the CQ that found completions.
    trace: Option<(Vec<Event>, Vec<Event>)>,
}

impl Throughput {
    /// Iteration mode, with perftest's peak when `peak`.
    pub fn iterations(peak: bool) -> Self {
        Throughput {
            schedule: None,
            window_start: None,
            window_end: None,
            first: None,
            last: (0, None),
            trace: peak.then(|| (Vec::new(), Vec::new())),
        }
    }

    /// Duration mode over `schedule`.
    pub fn duration(schedule: Schedule) -> Self {
        Throughput {
            schedule: Some(schedule),
            ..Throughput::iterations(false)
        }
    }

    /// A post list is about to be posted, after `posted` messages.
    pub fn post(&mut self, posted: u64) {
        if self.first.is_none() || self.trace.is_some() {
            self.post_at(posted, Instant::now());
        }
    }

    /// A look at the CQ found `completed` messages done in all.
    pub fn look(&mut self, completed: u64) {
        if completed > self.last.0 || self.schedule.is_some() {
            self.look_at(completed, Instant::now());
        }
    }

    /// [`Throughput::post`] at `at`.
    pub fn post_at(&mut self, posted: u64, at: Instant) {
        self.first.get_or_insert(at);
        if let Some((posts, _)) = &mut self.trace {
            posts.push((posted, at));
        }
    }

    /// [`Throughput::look`] at `at`.
    pub fn look_at(&mut self, completed: u64, at: Instant) {
        if let Some(schedule) = &self.schedule {
            let phase = schedule.phase(at);
            if phase == Phase::Sample && self.window_start.is_none() {
                self.window_start = Some((completed, at));
            }
            if phase >= Phase::Cooldown && self.window_end.is_none() {
                self.window_start.get_or_insert((completed, at));
                self.window_end = Some((completed, at));
            }
        }
        if completed > self.last.0 {
            self.first.get_or_insert(at);
            self.last = (completed, Some(at));
            if let Some((_, done)) = &mut self.trace {
                done.push((completed, at));
            }
        }
    }

    /// Duration mode: the sender stopped with `completed` messages done, so the sampling
    /// window ends now if this side's clock has not ended it yet (its schedule may have
    /// started after the sender's).
    pub fn close(&mut self, completed: u64) {
        if self.schedule.is_some() && self.window_end.is_none() {
            let now = Instant::now();
            self.window_start.get_or_insert((completed, now));
            self.window_end = Some((completed, now));
        }
    }

    /// The row for messages of `bytes`, in `unit`.
    pub fn summary(&self, bytes: usize, unit: BwUnit) -> Result<BwRow, String> {
        let (count, time) = match (self.schedule, self.window_start, self.window_end) {
            (Some(_), Some((c0, t0)), Some((c1, t1))) if t1 > t0 => (c1 - c0, t1 - t0),
            (Some(_), ..) => {
                return Err(
                    "no look at the CQ fell inside the sampling window (the machine \
                            was too busy): give a longer -D or a shorter --margin"
                        .into(),
                )
            }
            (None, ..) => {
                let (count, last) = self.last;
                let time = match (self.first, last) {
                    (Some(first), Some(last)) => last.saturating_duration_since(first),
                    _ => Duration::ZERO,
                };
                (count, time)
            }
        };
        let secs = time.as_secs_f64().max(f64::MIN_POSITIVE);
        let rate = |b: f64| b / unit.per_second();
        let peak = self.trace.as_ref().and_then(|(posts, done)| {
            shortest_per_message(posts, done).map(|ns| rate(bytes as f64 / (ns / 1e9)))
        });
        Ok(BwRow {
            bytes,
            iterations: count,
            bw_peak: peak,
            bw_average: rate(count as f64 * bytes as f64 / secs),
            msg_rate_mpps: count as f64 / secs / 1e6,
            unit,
            seconds: time.as_secs_f64(),
        })
    }
}

/// perftest's peak: the least `(t_done - t_post) / (completed - posted)` in nanoseconds
/// over every post and every later look that found messages of that post or later done.
fn shortest_per_message(posts: &[Event], done: &[Event]) -> Option<f64> {
    let mut best = f64::INFINITY;
    let mut from = 0;
    for &(posted, t_post) in posts {
        while from < done.len() && done[from].0 <= posted {
            from += 1;
        }
        for &(completed, t_done) in &done[from..] {
            let ns = t_done.saturating_duration_since(t_post).as_nanos() as f64;
            best = best.min(ns / (completed - posted) as f64);
        }
    }
    (best.is_finite() && best > 0.0).then_some(best)
}

/// A bandwidth row.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct BwRow {
    /// Message size.
    pub bytes: usize,
    /// Messages counted (duration mode: in the sampling window).
    pub iterations: u64,
    /// perftest's peak (None when not measured: duration mode, `-N`, more than 20000
    /// iterations, a receiver).
    pub bw_peak: Option<f64>,
    /// Bytes over the measured time.
    pub bw_average: f64,
    /// Messages per second, millions.
    pub msg_rate_mpps: f64,
    /// The unit of the two bandwidths.
    pub unit: BwUnit,
    /// The measured time.
    pub seconds: f64,
}

impl BwRow {
    /// This direction and `other`'s summed, as perftest reports `-b` (peaks, averages and
    /// message rates added; this side's iterations and time).
    pub fn plus(&self, other: &BwRow) -> BwRow {
        let other = other.in_unit(self.unit);
        BwRow {
            bw_peak: self.bw_peak.zip(other.bw_peak).map(|(a, b)| a + b),
            bw_average: self.bw_average + other.bw_average,
            msg_rate_mpps: self.msg_rate_mpps + other.msg_rate_mpps,
            ..self.clone()
        }
    }

    /// The row in `unit`.
    pub fn in_unit(&self, unit: BwUnit) -> BwRow {
        let f = self.unit.per_second() / unit.per_second();
        BwRow {
            bw_peak: self.bw_peak.map(|p| p * f),
            bw_average: self.bw_average * f,
            unit,
            ..self.clone()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scaled_latency_row_scales_every_time_and_nothing_else() {
        let row = LatRow {
            bytes: 2,
            iterations: 1000,
            t_min: 1.0,
            t_max: 2.0,
            t_typical: 3.0,
            t_avg: 4.0,
            t_stdev: 5.0,
            p50: 6.0,
            p90: 7.0,
            p99: 8.0,
            p99_9: 9.0,
            p99_99: 10.0,
        };
        let s = row.scaled(2000.0);
        assert_eq!((s.bytes, s.iterations), (2, 1000));
        assert_eq!(
            [s.t_min, s.t_max, s.t_typical, s.t_avg, s.t_stdev],
            [2000.0, 4000.0, 6000.0, 8000.0, 10000.0]
        );
        assert_eq!(
            [s.p50, s.p90, s.p99, s.p99_9, s.p99_99],
            [12000.0, 14000.0, 16000.0, 18000.0, 20000.0]
        );
    }

    #[test]
    fn stdev_and_extremes_are_exact() {
        let mut l = Latencies::new();
        for ns in [1000.0, 2000.0, 3000.0, 4000.0] {
            l.record(ns);
        }
        let r = l.summary(8, 4);
        assert_eq!((r.t_min, r.t_max, r.t_avg), (1.0, 4.0, 2.5));
        assert!((r.t_stdev - 1.25f64.sqrt()).abs() < 1e-12);
        assert_eq!(r.iterations, 4);
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-9 * b.abs()
    }

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn a_schedule_has_perftests_four_states() {
        let t0 = Instant::now();
        let s = Schedule::new(t0, ms(1000), ms(250));
        let at = |n| s.phase(t0 + ms(n));
        assert_eq!(
            [at(0), at(249), at(250), at(749), at(750), at(999), at(1000)],
            [
                Phase::Warmup,
                Phase::Warmup,
                Phase::Sample,
                Phase::Sample,
                Phase::Cooldown,
                Phase::Cooldown,
                Phase::End
            ]
        );
        // A sample straddling either edge of the window is not taken.
        assert!(s.sampled(t0 + ms(250), t0 + ms(749)));
        assert!(!s.sampled(t0 + ms(249), t0 + ms(300)));
        assert!(!s.sampled(t0 + ms(700), t0 + ms(750)));
        // No margin: everything until the end is sampled.
        let s = Schedule::new(t0, ms(1000), ms(0));
        assert_eq!(s.phase(t0), Phase::Sample);
        assert_eq!(s.phase(t0 + ms(1000)), Phase::End);
    }

    #[test]
    fn duration_mode_counts_the_window_only() {
        let t0 = Instant::now();
        let mut tp = Throughput::duration(Schedule::new(t0, ms(1000), ms(250)));
        // Warm-up completions are not counted, nor those of the end margin.
        tp.look_at(100, t0 + ms(100));
        tp.look_at(300, t0 + ms(300));
        tp.look_at(500, t0 + ms(500));
        tp.look_at(800, t0 + ms(800));
        tp.look_at(900, t0 + ms(900));
        let row = tp.summary(1 << 20, BwUnit::MiBs).unwrap();
        assert_eq!((row.iterations, row.seconds), (500, 0.5));
        assert!(close(row.bw_average, 1000.0));
        assert_eq!(row.bw_peak, None);
        // No look inside the window: an error, not a number.
        let mut tp = Throughput::duration(Schedule::new(t0, ms(1000), ms(250)));
        tp.look_at(100, t0 + ms(100));
        tp.look_at(900, t0 + ms(900));
        assert!(tp.summary(8, BwUnit::MiBs).is_err());
    }

    #[test]
    fn the_peak_is_perftests_shortest_time_per_message() {
        let t0 = Instant::now();
        let ns = |n| t0 + Duration::from_nanos(n);
        let mut tp = Throughput::iterations(true);
        // Four single posts, a CQE every two messages.
        for (posted, at) in [(0, 0), (1, 10), (2, 20), (3, 30)] {
            tp.post_at(posted, ns(at));
        }
        tp.look_at(2, ns(40));
        tp.look_at(2, ns(60));
        tp.look_at(4, ns(200));
        // Post 0 to the CQE of message 1: 40 ns for 2 messages, the least of
        // 20, 50 (post 0), 30, 63.3 (post 1), 90 (post 2), 170 (post 3).
        let row = tp.summary(1000, BwUnit::Gbits).unwrap();
        assert!(close(row.bw_peak.unwrap(), 1000.0 * 8.0 / 20.0));
        // The average: 4 messages from the first post to the last completion.
        assert_eq!((row.iterations, row.seconds), (4, 200e-9));
        assert!(close(row.bw_average, 4000.0 * 8.0 / 200.0));
        assert!(close(row.msg_rate_mpps, 4.0 / 200e-9 / 1e6));
        // Converted for a reader who asked for the other unit.
        let mib = row.in_unit(BwUnit::MiBs);
        assert_eq!(mib.unit, BwUnit::MiBs);
        assert!(close(mib.bw_peak.unwrap(), 1000.0 / 20e-9 / 1048576.0));
        // Not asked for: no peak.
        let mut tp = Throughput::iterations(false);
        tp.post_at(0, ns(0));
        tp.look_at(1, ns(10));
        assert_eq!(tp.summary(8, BwUnit::MiBs).unwrap().bw_peak, None);
    }

    #[test]
    fn perftests_statistics_drop_two_and_truncate_the_deviation() {
        // Ten samples: the two largest (50, 90) are left out of the mean, median and
        // deviation; t_max is delta[kept], the second-largest.
        let samples = [1.2, 1.0, 1.4, 1.1, 90.0, 1.3, 2.9, 1.5, 50.0, 1.6];
        let r = perftest_summary(&samples, 2, 11).unwrap();
        let kept = [1.0, 1.1, 1.2, 1.3, 1.4, 1.5, 1.6, 2.9];
        let avg = kept.iter().sum::<f64>() / 8.0;
        assert_eq!((r.t_min, r.t_max, r.iterations), (1.0, 50.0, 11));
        assert!((r.t_avg - avg).abs() < 1e-12);
        // 8 kept, kept - 1 odd: the mean of d[4] and d[3].
        assert!((r.t_typical - 1.35).abs() < 1e-12);
        // avg 1.5: every deviation truncates to 0 except 1.5 - 2.9 = -1.4 -> -1.
        assert!((r.t_stdev - (1.0f64 / 8.0).sqrt()).abs() < 1e-12);
        // ceil(8 * 0.99) = 8: delta[8], t_max; ceil(8 * 0.9) = 8 too; ceil(8 * 0.5) = 4.
        assert_eq!((r.p99, r.p99_9, r.p90), (50.0, 50.0, 50.0));
        // An odd count: the middle one.
        let r = perftest_summary(&[3.0, 1.0, 2.0, 8.0, 9.0], 2, 6).unwrap();
        assert_eq!((r.t_typical, r.t_max), (2.0, 8.0));
        assert!(perftest_summary(&[1.0, 2.0], 2, 3).is_none());
    }

    #[test]
    fn samples_are_gaps_between_posts() {
        let t0 = Instant::now();
        let posts: Vec<Instant> = [0, 4000, 10000]
            .iter()
            .map(|&ns| t0 + Duration::from_nanos(ns))
            .collect();
        assert_eq!(perftest_samples(&posts, true), [2.0, 3.0]);
        assert_eq!(perftest_samples(&posts, false), [4.0, 6.0]);
    }

    #[test]
    fn c_g_formats_as_printf() {
        for (x, want) in [
            (1.0, "1"),
            (0.5, "0.5"),
            (1.23456789, "1.23457"),
            (123456.7, "123457"),
            (1234567.0, "1.23457e+06"),
            (0.0001, "0.0001"),
            (0.00001234, "1.234e-05"),
            (100.0, "100"),
            (0.0, "0"),
        ] {
            assert_eq!(c_g(x), want, "{x}");
        }
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
