//! `mlx5-perf`: perftest-compatible RDMA benchmarks over the mlx5-direct data path, a
//! per-message PCIe report and a WQE-level explanation of each operation. The modules live
//! in the package's library (`lib.rs`); this is the command line.

use clap::Parser;

use mlx5_perf::cli::{refusal, Cli, Command};
use mlx5_perf::raw::{self, RawTest};
use mlx5_perf::{cpu, explain, pcie, run};

fn fail(e: impl std::fmt::Display) -> ! {
    eprintln!("mlx5-perf: {e}");
    std::process::exit(1);
}

fn main() {
    // perftest flags this tool refuses get their reason, not clap's "unexpected argument".
    if let Some(why) = std::env::args().skip(2).find_map(|a| refusal(&a)) {
        fail(why);
    }
    let cli = Cli::parse();
    let result = match (&cli.command, cli.command.bench()) {
        (_, Some((_, args))) if args.version => {
            println!("Version: {}", env!("CARGO_PKG_VERSION"));
            Ok(())
        }
        (_, Some((test, args))) => run::bench(test, args),
        (Command::Explain(a), None) => explain::run(a),
        (Command::Pcie(a), None) => pcie::run(a),
        (Command::Cpu(a), None) => cpu::run(a),
        (Command::RawEthernetBw(a), None) => raw::run(RawTest::Bw, a),
        (Command::RawEthernetLat(a), None) => raw::run(RawTest::Lat, a),
        (Command::RawEthernetBurstLat(a), None) => raw::run(RawTest::BurstLat, a),
        (_, None) => unreachable!("every other subcommand is a benchmark"),
    };
    if let Err(e) = result {
        fail(e);
    }
}
