//! `mlx5-emu`: run unmodified rdma-core programs on model ConnectX NICs.
//!
//! ```text
//! mlx5-emu run [--nics N] [--link ib|roce] [--fabric NAME] [--pcie FILE] -- PROGRAM ARGS...
//! mlx5-emu serve --fabric NAME --nics N --link ib|roce [--dir DIR]
//! ```
//!
//! `run` starts the fabric's server unless one answers, and runs PROGRAM with the preload.
//! Every process run with the same fabric name shares its NICs (`mlx5_0` ...); the server
//! ends when the last has gone. NIC `mlx5_N` has the IPv4 address `10.47.0.(N+1)` for
//! rdma_cm. See docs/emulator.md.

use clap::{Parser, Subcommand};
use mlx5_emu::client::{hello, SOCKET_ENV};
use mlx5_emu::proto::{self, Hello, Reply, Request};
use mlx5_emu::server::{self, Link, Options};
use std::os::unix::net::UnixStream;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::PathBuf;
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

/// The preload's file name, next to this executable (`cargo build -p mlx5-emu-preload`).
const PRELOAD: &str = "libmlx5_emu_preload.so";

#[derive(Parser)]
#[command(
    name = "mlx5-emu",
    about = "Unmodified rdma-core programs on model ConnectX NICs"
)]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Run PROGRAM on the fabric's NICs (starting its server if none answers).
    ///
    /// Each NIC has an IPv4 address for rdma_cm: mlx5_0 is 10.47.0.1, mlx5_N is
    /// 10.47.0.(N+1) (on RoCE also in its GID table); a connect() to one reaches this host.
    Run {
        /// Number of NICs of a fabric this starts (mlx5_0 ...; at most 254); must match a
        /// running one.
        #[arg(long)]
        nics: Option<u32>,
        /// Link layer of a fabric this starts: ib or roce; must match a running one.
        #[arg(long)]
        link: Option<String>,
        /// The fabric's name: processes run with the same name share its NICs.
        #[arg(long, default_value = "default")]
        fabric: String,
        /// Write the fabric's PCIe counters and statistics (JSON) here when PROGRAM ends
        /// (also `MLX5_EMU_PCIE`).
        #[arg(long, env = "MLX5_EMU_PCIE")]
        pcie: Option<PathBuf>,
        /// The program and its arguments.
        #[arg(trailing_var_arg = true, required = true)]
        program: Vec<String>,
    },
    /// Serve a fabric (what `run` starts).
    Serve {
        /// The fabric's name.
        #[arg(long, default_value = "default")]
        fabric: String,
        /// Number of NICs.
        #[arg(long, default_value_t = 2)]
        nics: u32,
        /// Link layer: ib or roce.
        #[arg(long, default_value = "ib")]
        link: String,
        /// Directory of the socket, lock and sysfs tree.
        #[arg(long)]
        dir: Option<PathBuf>,
    },
}

fn main() -> ExitCode {
    match Cli::parse().command {
        Cmd::Serve {
            fabric,
            nics,
            link,
            dir,
        } => {
            let Some(link) = Link::parse(&link) else {
                eprintln!("mlx5-emu: --link {link}: ib or roce");
                return ExitCode::from(2);
            };
            let options = Options {
                name: fabric,
                nics,
                link,
                dir: dir.unwrap_or_else(server::default_dir),
            };
            match server::serve(options) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("mlx5-emu serve: {e}");
                    ExitCode::FAILURE
                }
            }
        }
        Cmd::Run {
            nics,
            link,
            fabric,
            pcie,
            program,
        } => match run(nics, link, fabric, pcie, &program) {
            Ok(code) => code,
            Err(e) => {
                eprintln!("mlx5-emu run: {e}");
                ExitCode::from(2)
            }
        },
    }
}

fn run(
    nics: Option<u32>,
    link: Option<String>,
    fabric: String,
    pcie: Option<PathBuf>,
    program: &[String],
) -> Result<ExitCode, String> {
    let link = match link.as_deref() {
        None => None,
        Some(name) => Some(Link::parse(name).ok_or(format!("--link {name}: ib or roce"))?),
    };
    let options = Options {
        name: fabric,
        nics: nics.unwrap_or(2),
        link: link.unwrap_or(Link::Ib),
        dir: server::default_dir(),
    };
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let preload = match std::env::var_os("MLX5_EMU_PRELOAD") {
        Some(p) => PathBuf::from(p),
        None => exe.with_file_name(PRELOAD),
    };
    if !preload.is_file() {
        return Err(format!(
            "{} is missing: build it with `cargo build -p mlx5-emu-preload` (same profile)",
            preload.display()
        ));
    }
    let sock = connect_or_start(&exe, &options)?;
    let (welcome, _) = hello(&sock, &Hello::Launcher).map_err(|e| e.to_string())?;
    if nics.is_some_and(|n| n != welcome.nics) || link.is_some_and(|l| l.name() != welcome.link) {
        return Err(format!(
            "fabric {} runs {} {} NICs; stop its programs or pick another --fabric",
            options.name, welcome.nics, welcome.link
        ));
    }
    let mut preloads = preload.display().to_string();
    if let Ok(more) = std::env::var("LD_PRELOAD") {
        preloads = format!("{preloads}:{more}");
    }
    let status = Command::new(&program[0])
        .args(&program[1..])
        .env("LD_PRELOAD", preloads)
        .env("SYSFS_PATH", &welcome.sysfs)
        .env(SOCKET_ENV, options.socket())
        .status()
        .map_err(|e| format!("{}: {e}", program[0]))?;
    if let Some(path) = pcie {
        let report = match proto::call(&sock, &Request::Report, None) {
            Ok((Reply::Report(json), _)) => json,
            other => return Err(format!("no report from the server: {other:?}")),
        };
        std::fs::write(&path, report).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    Ok(match (status.code(), status.signal()) {
        (Some(code), _) => ExitCode::from(code as u8),
        (None, Some(signal)) => ExitCode::from(128 + signal as u8),
        _ => ExitCode::FAILURE,
    })
}

/// A connection to the fabric's server, starting one (detached, logging to
/// `<dir>/<fabric>.log`) if none answers.
fn connect_or_start(exe: &std::path::Path, options: &Options) -> Result<UnixStream, String> {
    if let Ok(s) = UnixStream::connect(options.socket()) {
        return Ok(s);
    }
    std::fs::create_dir_all(&options.dir).map_err(|e| e.to_string())?;
    let log = std::fs::File::create(options.dir.join(format!("{}.log", options.name)))
        .map_err(|e| e.to_string())?;
    Command::new(exe)
        .args(["serve", "--fabric", &options.name])
        .args([
            "--nics",
            &options.nics.to_string(),
            "--link",
            options.link.name(),
        ])
        .arg("--dir")
        .arg(&options.dir)
        .stdin(Stdio::null())
        .stdout(log.try_clone().map_err(|e| e.to_string())?)
        .stderr(log)
        .process_group(0)
        .spawn()
        .map_err(|e| format!("starting the server: {e}"))?;
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match UnixStream::connect(options.socket()) {
            Ok(s) => return Ok(s),
            Err(_) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(10)),
            Err(e) => return Err(format!("no server at {}: {e}", options.socket().display())),
        }
    }
}
