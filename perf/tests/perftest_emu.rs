//! `mlx5-perf --perftest-exchange` paired with Debian's unmodified perftest 4.5+0.17 on the
//! emulated ConnectX (`mlx5-emu run`, docs/emulator.md), both ways: our data path (the
//! `verbs` backend on the rings libmlx5 allocated) on one model NIC and libmlx5's on the
//! other, talking perftest's TCP exchange (`perf/src/perftest_wire.rs`).
//!
//! Ignored without perftest (`cfg(perftest)`, set by build.rs; `MLX5_EMU_REQUIRE_PROGRAMS=1`
//! makes its absence a build error) and without the `verbs` feature (a device needs it;
//! CI's `--all-features` step runs these). The launcher and its preload are built if they
//! are not beside the binary (`$CARGO build -p mlx5-emu -p mlx5-emu-preload`).

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// How long a pair may take: these run in seconds (a debug build too); this stops a hang.
const LIMIT: Duration = Duration::from_secs(120);

/// This build's mlx5-perf.
const PERF: &str = env!("CARGO_BIN_EXE_mlx5-perf");

/// The launcher beside this build's mlx5-perf, with its preload; built (same profile and
/// target directory) when either is missing.
fn launcher() -> &'static Path {
    static READY: OnceLock<PathBuf> = OnceLock::new();
    READY.get_or_init(|| {
        let exe = Path::new(PERF).with_file_name("mlx5-emu");
        let preload = exe.with_file_name("libmlx5_emu_preload.so");
        if exe.is_file() && preload.is_file() {
            return exe;
        }
        let profile_dir = exe.parent().expect("the binary's directory");
        let target = profile_dir.parent().expect("the target directory");
        let profile = match profile_dir.file_name().and_then(|n| n.to_str()) {
            Some("debug") => "dev",
            Some(name) => name,
            None => panic!("no profile in {}", exe.display()),
        };
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let status = Command::new(cargo)
            .args([
                "build",
                "--quiet",
                "-p",
                "mlx5-emu",
                "-p",
                "mlx5-emu-preload",
            ])
            .args(["--profile", profile])
            .arg("--target-dir")
            .arg(target)
            .status()
            .expect("running cargo");
        assert!(status.success(), "building mlx5-emu: {status}");
        assert!(
            exe.is_file() && preload.is_file(),
            "{} missing",
            exe.display()
        );
        exe
    })
}

/// Whether something listens on TCP `port` (`/proc/net/tcp{,6}`, state 0A), found without
/// connecting: a perftest server takes the first connection as its client.
fn listening(port: u16) -> bool {
    let want = format!(":{port:04X}");
    ["/proc/net/tcp", "/proc/net/tcp6"].iter().any(|table| {
        std::fs::read_to_string(table).is_ok_and(|text| {
            text.lines().skip(1).any(|line| {
                let f: Vec<&str> = line.split_whitespace().collect();
                f.len() > 3 && f[1].ends_with(&want) && f[3] == "0A"
            })
        })
    })
}

/// `mlx5-emu run --fabric FABRIC -- PROGRAM -d DEVICE -p PORT ARGS [localhost]` in a
/// process group of its own.
fn start(fabric: &str, dir: &Path, device: &str, port: u16, program: &[&str], host: bool) -> Child {
    Command::new(launcher())
        .args(["run", "--fabric", fabric, "--"])
        .args(program)
        .args(["-d", device, "-p", &port.to_string()])
        .args(host.then_some("localhost"))
        .env("MLX5_EMU_DIR", dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .expect("starting mlx5-emu run")
}

/// Waits for `child` until `deadline` (then kills its group): its status, stdout, stderr.
fn finish(mut child: Child, deadline: Instant) -> (ExitStatus, String, String) {
    let pipe = |mut r: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut s = String::new();
            let _ = r.read_to_string(&mut s);
            s
        })
    };
    let out = pipe(Box::new(child.stdout.take().expect("stdout")));
    let err = pipe(Box::new(child.stderr.take().expect("stderr")));
    let status = loop {
        if let Some(status) = child.try_wait().expect("waiting") {
            break status;
        }
        if Instant::now() > deadline {
            // The launcher's whole group: the program with it.
            let _ = Command::new("kill")
                .args(["-KILL", "--", &format!("-{}", child.id())])
                .status();
            break child.wait().expect("waiting after the kill");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    (status, out.join().unwrap(), err.join().unwrap())
}

/// The rows under a `#bytes` header as (bytes, iterations, the other numbers as printed).
fn rows(text: &str) -> Vec<(u64, u64, Vec<String>)> {
    let mut header = false;
    let mut rows = Vec::new();
    for line in text.lines() {
        if line.contains("#bytes") {
            header = true;
            continue;
        }
        let f: Vec<&str> = line.split_whitespace().collect();
        if let (true, [b, n, rest @ ..]) = (header, f.as_slice()) {
            if let (Ok(b), Ok(n)) = (b.parse(), n.parse()) {
                rows.push((b, n, rest.iter().map(|s| s.to_string()).collect()));
            }
        }
    }
    rows
}

/// A server `server` on mlx5_0 and a client `client` on mlx5_1 of one fabric; both must
/// exit 0. Their outputs (stdout), server first.
fn pair(name: &str, server: &[&str], client: &[&str]) -> (String, String) {
    let dir = std::env::temp_dir().join(format!("mlx5-perf-pt-{}-{name}", std::process::id()));
    let fabric = format!("perftest-exchange-{name}");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let deadline = Instant::now() + LIMIT;
    let s = start(&fabric, &dir, "mlx5_0", port, server, false);
    while !listening(port) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let c = start(&fabric, &dir, "mlx5_1", port, client, true);
    let (cs, cout, cerr) = finish(c, deadline);
    let (ss, sout, serr) = finish(s, deadline);
    let shown = format!(
        "--- server {server:?}: {ss}\n{sout}{serr}\n--- client {client:?}: {cs}\n{cout}{cerr}"
    );
    assert!(ss.success() && cs.success(), "{name}\n{shown}");
    let _ = std::fs::remove_dir_all(&dir);
    (sout, cout)
}

/// `test` with `args` both ways: perftest's server with our client, then ours with
/// perftest's client; each side prints the one row `(bytes, iters)`. The outputs of both
/// runs: (perftest server, our client), (our server, perftest client).
fn both_ways(test: &str, args: &[&str], row: (u64, u64)) -> [(String, String); 2] {
    let ib = format!("ib_{test}");
    let mut ib_side = vec![ib.as_str()];
    ib_side.extend(args);
    let mut ours = vec![PERF, test, "--perftest-exchange"];
    ours.extend(args);
    let runs = [
        pair(&format!("{test}-ib-server"), &ib_side, &ours),
        pair(&format!("{test}-ours-server"), &ours, &ib_side),
    ];
    for (server, client) in &runs {
        for out in [server, client] {
            let got: Vec<(u64, u64)> = rows(out).iter().map(|r| (r.0, r.1)).collect();
            assert_eq!(got, [row], "{test}: one row of {row:?}\n{out}");
        }
    }
    runs
}

#[test]
#[cfg_attr(not(perftest), ignore = "perftest is not installed")]
#[cfg_attr(
    all(perftest, not(feature = "verbs")),
    ignore = "needs the verbs feature (-d on the emulator)"
)]
fn write_lat_pairs_with_ib_write_lat_both_ways() {
    // 300 iterations: the byte each side spins on wraps past 255 (perftest's (char)++scnt).
    both_ways("write_lat", &["-n", "300"], (2, 300));
}

#[test]
#[cfg_attr(not(perftest), ignore = "perftest is not installed")]
#[cfg_attr(
    all(perftest, not(feature = "verbs")),
    ignore = "needs the verbs feature (-d on the emulator)"
)]
fn send_bw_pairs_with_ib_send_bw_both_ways() {
    // Each side prints its own row: the client its sending, the server its receiving.
    both_ways("send_bw", &["-n", "200", "-s", "4096"], (4096, 200));
}

#[test]
#[cfg_attr(not(perftest), ignore = "perftest is not installed")]
#[cfg_attr(
    all(perftest, not(feature = "verbs")),
    ignore = "needs the verbs feature (-d on the emulator)"
)]
fn write_bw_servers_print_the_clients_report_both_ways() {
    // perftest's server prints the report the client sent (xchg_bw_reports): the same
    // average and message rate, to the printed digits (%.2lf, %.6lf on both).
    for (server, client) in both_ways("write_bw", &["-n", "200", "-s", "8"], (8, 200)) {
        let (s, c) = (&rows(&server)[0].2, &rows(&client)[0].2);
        assert_eq!(s[1..3], c[1..3], "server {s:?}, client {c:?}");
    }
}
