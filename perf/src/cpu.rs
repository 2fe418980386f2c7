//! `mlx5-perf cpu`: CPU cost per operation against the null device (plain memory as the UAR,
//! CQEs written ahead), in nanoseconds.
//!
//! The cases and their timed loops are the `cpu-bench` package's (`mlx5_cpu_bench::Case`,
//! the same loops as its criterion bench and `benches/callgrind.sh`, compiled in a crate of
//! their own as an application's); only the operations themselves are timed. Each case runs
//! `RUNS` times, the runs of all cases alternating (one run of each case, then the next
//! round), so that a slow spell of the machine spreads over every case instead of landing
//! on one; the median per-operation time is reported. Instruction counts come from
//! `benches/callgrind.sh` (see `docs/benchmarks.md`).

use mlx5_cpu_bench::{Bench, Case};
use serde::Serialize;

use crate::cli::CpuArgs;

/// Timed runs per case; the median is reported.
const RUNS: usize = 15;
/// Operations per run.
const OPS: u64 = 100_000;

/// One row of the report.
#[derive(Debug, Serialize)]
struct Row {
    case: String,
    ns_per_op: f64,
    min_ns_per_op: f64,
    runs: usize,
    ops_per_run: u64,
}

/// Runs `cpu`.
pub fn run(args: &CpuArgs) -> Result<(), crate::Error> {
    let rows = measure(&Case::ALL)?;
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&rows)?);
    } else {
        outln!("CPU cost per operation, null device (median of {RUNS} runs of {OPS} operations)");
        for row in &rows {
            outln!(
                "{:<33} {:>8.2} ns/op (min {:.2})",
                row.case,
                row.ns_per_op,
                row.min_ns_per_op
            );
        }
    }
    Ok(())
}

/// The rows of `cases`, their runs alternating (see the module's documentation).
fn measure(cases: &[Case]) -> Result<Vec<Row>, crate::Error> {
    let mut benches = cases
        .iter()
        .map(|case| Bench::new(*case))
        .collect::<Result<Vec<_>, _>>()?;
    for bench in &mut benches {
        bench.run(OPS); // warm up caches and branch predictors
    }
    let mut ns = vec![Vec::with_capacity(RUNS); cases.len()];
    for _ in 0..RUNS {
        for (bench, ns) in benches.iter_mut().zip(&mut ns) {
            ns.push(bench.run(OPS).as_nanos() as f64 / OPS as f64);
        }
    }
    Ok(cases
        .iter()
        .zip(ns)
        .map(|(case, mut ns)| {
            ns.sort_by(f64::total_cmp);
            Row {
                case: case.name(),
                ns_per_op: ns[RUNS / 2],
                min_ns_per_op: ns[0],
                runs: RUNS,
                ops_per_run: OPS,
            }
        })
        .collect())
}
