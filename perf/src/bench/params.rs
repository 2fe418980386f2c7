//! The parameters both sides must agree on, from the command line.

use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::cli::{AtomicType, BenchArgs, Kind, Test, Verb};
use crate::stats::Schedule;

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
        self.duration_ms.is_none() && self.iters <= PEAK_MAX_ITERS
    }

    fn max_size(&self) -> usize {
        self.sizes.iter().copied().max().unwrap_or(8)
    }

    /// Bytes of buffer per QP: a receive half and a send half.
    pub(super) fn slot(&self) -> usize {
        2 * self.max_size().next_multiple_of(64)
    }
}
