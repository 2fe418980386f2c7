//! The latency tests with a TX depth above 1 (`-t`): each completes, and signals its WRs as
//! perftest's latency loops do (perftest_resources.c of 4.5-0.17 and 6.29): every WRITE
//! (`run_iter_lat_write`), READ and atomic (`run_iter_lat`) signaled, a SEND every `-Q`
//! and the last of the size (`run_iter_lat_send`). The binary on the model, with a time
//! limit: a WR left unsignaled at the end of a size used to leave it waiting forever.

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

/// Runs `mlx5-perf ARGS --json` and returns its JSON, failing after 60 seconds.
fn run(args: &[&str]) -> Value {
    let mut child = Command::new(env!("CARGO_BIN_EXE_mlx5-perf"))
        .args(args)
        .arg("--json")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run mlx5-perf");
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(status) = child.try_wait().expect("waiting") {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("mlx5-perf {args:?} did not finish in 60 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let (mut out, mut err) = (String::new(), String::new());
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert!(status.success(), "mlx5-perf {args:?}: {status}: {err}");
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("not JSON ({e}): {out}"))
}

/// The client's completions of `opcode` in the first row.
fn client_completions(v: &Value, opcode: &str) -> u64 {
    v["results"][0]["completions"]["client"][opcode]
        .as_u64()
        .unwrap_or_else(|| panic!("no {opcode} completions in {v}"))
}

#[test]
fn write_read_and_atomic_latency_signal_every_wr_at_any_depth() {
    // -t 16 makes -Q 16; 100 is not a multiple of it.
    for (test, opcode) in [
        ("write_lat", "rdma_write"),
        ("read_lat", "rdma_read"),
        ("atomic_lat", "fetch_add"),
    ] {
        let v = run(&[test, "-t", "16", "-n", "100"]);
        assert_eq!(v["results"][0]["iterations"], 100, "{test}");
        assert_eq!(client_completions(&v, opcode), 100, "{test}");
    }
}

#[test]
fn send_latency_signals_every_q_th_send_and_the_last() {
    // -Q 4 (the TX depth): the 4th, 8th, ... 100th SEND, and the 102nd, the last.
    let v = run(&["send_lat", "-t", "4", "-n", "102"]);
    assert_eq!(v["results"][0]["iterations"], 102);
    assert_eq!(client_completions(&v, "send"), 26);
    assert_eq!(client_completions(&v, "recv"), 102);
}
