//! `--perftest-exchange` between two `mlx5-perf` ends on the model: every test speaks
//! perftest 4.5+0.17's exchange (`perf/src/perftest_wire.rs`, the steps of
//! `perf/src/bench/perftest.rs`) and prints its rows; what the exchange cannot carry is
//! refused before anything runs. Against perftest itself: `tests/perftest_emu.rs`.

use std::process::Command;

fn perf(args: &[&str]) -> (bool, String, String) {
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

/// The `(bytes, iterations)` of each JSON row of `args` with `--perftest-exchange`.
fn rows(args: &[&str]) -> Vec<(u64, u64)> {
    let mut all = args.to_vec();
    all.extend(["--perftest-exchange", "--json"]);
    let (ok, out, err) = perf(&all);
    assert!(ok, "{args:?}: {err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    v["results"]
        .as_array()
        .expect("results")
        .iter()
        .map(|r| {
            (
                r["bytes"].as_u64().expect("bytes"),
                r["iterations"].as_u64().expect("iterations"),
            )
        })
        .collect()
}

#[test]
fn every_test_runs_over_perftests_exchange() {
    for (test, size) in [
        ("write_lat", 2),
        ("send_lat", 2),
        ("read_lat", 2),
        ("atomic_lat", 8),
        ("write_bw", 65536),
        ("send_bw", 65536),
        ("read_bw", 65536),
        ("atomic_bw", 8),
    ] {
        assert_eq!(rows(&[test, "-n", "300"]), [(size, 300)], "{test}");
    }
    // Several QPs (a record each way per QP), post lists, small messages whose areas are
    // the peer's cycle buffer.
    assert_eq!(
        rows(&["write_bw", "-q", "3", "-s", "8", "-l", "4", "-n", "400"]),
        [(8, 1200)]
    );
    assert_eq!(
        rows(&["send_bw", "-q", "2", "-s", "64", "-n", "256"]),
        [(64, 512)]
    );
}

#[test]
fn sweeps_keep_perftests_barriers() {
    // write_lat has no barrier between sizes; send_bw one before and one after each.
    let sizes: Vec<(u64, u64)> = (1..24).map(|k| (1u64 << k, 5)).collect();
    assert_eq!(rows(&["write_lat", "-a", "-n", "5"]), sizes);
    assert_eq!(rows(&["send_bw", "-a", "-n", "5"]), sizes);
    assert_eq!(rows(&["send_lat", "-a", "-n", "5"]), sizes);
}

#[test]
fn what_the_exchange_cannot_carry_is_refused() {
    for (args, message) in [
        (&["send_bw", "-c", "UD"][..], "-c UD: RC only"),
        (&["write_lat", "-c", "UC"][..], "-c UC: RC only"),
        (&["write_bw", "-b"][..], "-b: not implemented"),
        (&["write_bw", "-D", "1"][..], "-D / --run_infinitely"),
        (
            &["write_bw", "--reversed"][..],
            "--reversed: not implemented",
        ),
        (
            &["send_lat", "--send_with_imm"][..],
            "perftest 4.5+0.17 has no such test",
        ),
    ] {
        let mut all = args.to_vec();
        all.push("--perftest-exchange");
        let (ok, _, err) = perf(&all);
        assert!(!ok, "{args:?} should be refused");
        assert!(
            err.contains("mlx5-perf: --perftest-exchange: ") && err.contains(message),
            "{args:?}: {err}"
        );
    }
}
