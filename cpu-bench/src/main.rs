//! Runs one CPU-cost case `N` times against the null device, for instruction counting:
//!
//! ```text
//! cargo build --release -p mlx5-cpu-bench --bin cpu_ops
//! valgrind --tool=callgrind --toggle-collect='*timed_chunk*' \
//!     target/release/cpu_ops post_write8_inline_bf_rt 10000
//! ```
//!
//! Only the timed chunks are counted (`--toggle-collect`); `benches/callgrind.sh` runs two
//! values of `N` per case and reports `(Ir(N2) - Ir(N1)) / (N2 - N1)` instructions per
//! operation, so the per-chunk overhead that does not scale with `N` cancels. `cpu_ops --list`
//! prints every case's name.

use mlx5_cpu_bench::{Bench, Case};

fn main() {
    let mut args = std::env::args().skip(1).peekable();
    let names: Vec<String> = Case::ALL.into_iter().map(Case::name).collect();
    if args.peek().is_some_and(|a| a == "--list") {
        println!("{}", names.join("\n"));
        return;
    }
    let usage = format!(
        "usage: cpu_ops <case> <operations> | --list; cases: {}",
        names.join(", ")
    );
    let case = args.next().and_then(|name| Case::from_name(&name));
    let ops = args.next().and_then(|n| n.parse::<u64>().ok());
    let (Some(case), Some(ops)) = (case, ops) else {
        eprintln!("{usage}");
        std::process::exit(2);
    };
    let mut bench = Bench::new(case).expect("null device");
    let spent = bench.run(ops);
    println!("{} {ops} {:?}", case.name(), spent);
}
