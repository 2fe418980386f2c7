//! `mlx5-perf`: perftest-compatible RDMA benchmarks over the mlx5-direct data path, a
//! per-message PCIe report and a WQE-level explanation of each operation. The modules live
//! in the package's library (`lib.rs`); this is the command line.

use clap::Parser;

use mlx5_perf::cli::{Cli, Command, Kind, Test, Verb};
use mlx5_perf::{cpu, explain, pcie, run};

fn test(verb: Verb, kind: Kind) -> Test {
    Test { verb, kind }
}

fn main() {
    let cli = Cli::parse();
    let result = match &cli.command {
        Command::WriteLat(a) => run::bench(test(Verb::Write, Kind::Lat), a),
        Command::WriteBw(a) => run::bench(test(Verb::Write, Kind::Bw), a),
        Command::SendLat(a) => run::bench(test(Verb::Send, Kind::Lat), a),
        Command::SendBw(a) => run::bench(test(Verb::Send, Kind::Bw), a),
        Command::ReadLat(a) => run::bench(test(Verb::Read, Kind::Lat), a),
        Command::ReadBw(a) => run::bench(test(Verb::Read, Kind::Bw), a),
        Command::AtomicLat(a) => run::bench(test(Verb::Atomic, Kind::Lat), a),
        Command::AtomicBw(a) => run::bench(test(Verb::Atomic, Kind::Bw), a),
        Command::Explain(a) => explain::run(a),
        Command::Pcie(a) => pcie::run(a),
        Command::Cpu(a) => cpu::run(a),
    };
    if let Err(e) = result {
        eprintln!("mlx5-perf: {e}");
        std::process::exit(1);
    }
}
