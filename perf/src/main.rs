//! `mlx5-perf`: perftest-compatible RDMA benchmarks over the mlx5-direct data path, a
//! per-message PCIe report and a WQE-level explanation of each operation. The modules live
//! in the package's library (`lib.rs`); this is the command line.

use clap::Parser;

use mlx5_perf::cli::{Cli, Command};
use mlx5_perf::{cpu, explain, pcie, run};

fn main() {
    let cli = Cli::parse();
    let result = match (&cli.command, cli.command.bench()) {
        (_, Some((test, args))) => run::bench(test, args),
        (Command::Explain(a), None) => explain::run(a),
        (Command::Pcie(a), None) => pcie::run(a),
        (Command::Cpu(a), None) => cpu::run(a),
        (_, None) => unreachable!("every other subcommand is a benchmark"),
    };
    if let Err(e) = result {
        eprintln!("mlx5-perf: {e}");
        std::process::exit(1);
    }
}
