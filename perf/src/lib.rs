//! `mlx5-perf` (the library half of the tool; `main.rs` is the command line): perftest-compatible RDMA benchmarks over the mlx5-direct data path, a
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

/// Boxed errors: the tool reports them and exits.
pub type Error = Box<dyn std::error::Error + Send + Sync>;

pub mod bench;
pub mod cli;
pub mod cpu;
pub mod exchange;
pub mod explain;
pub mod mcast_pcie;
pub mod pcie;
pub mod perftest_out;
pub mod perftest_wire;
pub mod plot;
pub mod probe;
pub mod raw;
pub mod raw_pcie;
pub mod report;
pub mod run;
pub mod stats;
pub mod traced;

/// Writes one line to stdout (the `outln!` macro of this crate).
pub fn print_line(line: std::fmt::Arguments<'_>) {
    use std::io::Write;
    if let Err(e) = writeln!(std::io::stdout().lock(), "{line}") {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
        eprintln!("mlx5-perf: writing the results: {e}");
        std::process::exit(1);
    }
}
