//! `mlx5-perf`: perftest-compatible RDMA benchmarks over the mlx5-direct data path, a
//! per-message PCIe report and a WQE-level explanation of each operation.
//!
//! Without `-d`, the benchmarks run on the built-in device model: both ends in this process,
//! one thread each, connected over TCP on 127.0.0.1 like two hosts. The numbers are then
//! CPU-side numbers (the driver plus the model's software, which runs synchronously in the
//! posting thread), not a NIC's; each row adds the PCIe transactions the model counted per
//! message. With `-d mlx5_0` (feature `verbs`) they run on hardware in perftest's
//! server / client form.

/// `println!` for results: a reader that went away (`| head`) ends the program quietly
/// instead of a panic.
macro_rules! outln {
    ($($arg:tt)*) => {
        $crate::print_line(format_args!($($arg)*))
    };
}

mod bench;
mod cli;
mod cpu;
mod exchange;
mod explain;
mod pcie;
mod plot;
mod probe;
mod report;
mod run;
mod stats;
mod traced;

use clap::Parser;

use cli::{Cli, Command, Kind, Test, Verb};

/// Writes one line to stdout; see [`outln`].
fn print_line(line: std::fmt::Arguments<'_>) {
    use std::io::Write;
    if let Err(e) = writeln!(std::io::stdout().lock(), "{line}") {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
        eprintln!("mlx5-perf: writing the results: {e}");
        std::process::exit(1);
    }
}

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
