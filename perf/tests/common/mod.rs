//! What the `mlx5-perf` end-to-end tests share: running the binary, its JSON, a refusal
//! and its message, the per-message PCIe numbers, a table's row and a block of its output.

#![allow(dead_code)]

use std::process::Command;

use serde_json::Value;

pub fn perf(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_mlx5-perf"))
        .args(args)
        .output()
        .expect("run mlx5-perf");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

pub fn json(args: &[&str]) -> Value {
    let (ok, out, err) = perf(args);
    assert!(ok, "mlx5-perf {args:?} failed: {err}");
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("not JSON ({e}): {out}"))
}

pub fn fails_with(args: &[&str], message: &str) {
    let (ok, _, err) = perf(args);
    assert!(!ok, "mlx5-perf {args:?} should fail");
    assert!(err.contains(message), "{args:?}: {err:?} lacks {message:?}");
}

pub fn per_message(v: &Value) -> [f64; 5] {
    let p = &v["per_message"];
    [
        "mmio_writes",
        "dma_reads",
        "dma_writes",
        "bytes_down",
        "bytes_up",
    ]
    .map(|k| {
        p[k].as_f64()
            .unwrap_or_else(|| panic!("{k} missing in {p}"))
    })
}

/// The row of `v` whose step starts with `name`.
pub fn row<'a>(v: &'a Value, name: &str) -> &'a Value {
    v["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["step"].as_str().unwrap().starts_with(name))
        .unwrap_or_else(|| panic!("no row {name}"))
}

/// The lines of `out` from `first` up to the next perftest rule.
pub fn block<'a>(out: &'a str, first: &str) -> Vec<&'a str> {
    let rule = "-".repeat(87);
    out.lines()
        .skip_while(|l| !l.starts_with(first))
        .take_while(|l| *l != rule)
        .collect()
}
