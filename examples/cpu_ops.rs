//! Runs one CPU-cost case `N` times against the null device, for instruction counting:
//!
//! ```text
//! cargo build --release --example cpu_ops
//! valgrind --tool=callgrind --toggle-collect='*CpuBench*timed_chunk*' \
//!     target/release/examples/cpu_ops post_write8_inline_bf 10000
//! ```
//!
//! Only the timed chunks are counted (`--toggle-collect`); `benches/callgrind.sh` runs two
//! values of `N` per case and reports `(Ir(N2) - Ir(N1)) / (N2 - N1)` instructions per
//! operation, so the per-chunk overhead that does not scale with `N` cancels.

use mlx5_direct::null::{CpuBench, CpuCase};

fn main() {
    let mut args = std::env::args().skip(1);
    let usage = "usage: cpu_ops <case> <operations>; cases: post_write8_inline_bf, \
                 post_write8_inline_db, post_write8_inline_batch32, post_write8_inline_list32, \
                 poll_one_cqe, poll_empty_cq";
    let case = args
        .next()
        .and_then(|name| CpuCase::from_name(&name))
        .expect(usage);
    let ops: u64 = args.next().and_then(|n| n.parse().ok()).expect(usage);
    let mut bench = CpuBench::new(case).expect("null device");
    let spent = bench.run(ops);
    println!("{} {ops} {:?}", case.name(), spent);
}
