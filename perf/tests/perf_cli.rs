//! `mlx5-perf` end to end: the binary run on the model, its JSON and CSV parsed, exact PCIe
//! numbers checked against `tests/sim_pcie.rs` (MWr/MRd 24 B, CplD 20 B, MPS 256, MRRS 512,
//! RCB 128, completions up to MPS), the benchmarks run over the TCP exchange between two
//! model NICs.
//!
//! Split by subcommand and transport: `explain` in `perf_explain.rs`, `pcie` in
//! `perf_pcie.rs`, perftest's options (events, immediates, SRQ, rate limit, counters,
//! memory, device memory, the NIC's clock) in `perf_options.rs`, UC / UD / DC / RoCE runs
//! in `perf_transports.rs`; the helpers they share (running the binary, parsing its output)
//! in `common/mod.rs`.

mod common;

use serde_json::Value;

use common::*;

#[test]
fn write_bw_json_over_the_tcp_exchange() {
    let v = json(&["write_bw", "-n", "200", "-s", "64", "--json"]);
    let h = &v["header"];
    assert_eq!(h["test"], "write_bw");
    assert_eq!(h["model"], true);
    // Two model NICs (LIDs 1 and 2) that exchanged their QP records over TCP.
    let (local, remote) = (&h["local"][0], &h["remote"][0]);
    assert_ne!(local["lid"], remote["lid"]);
    assert_eq!(local["gid"].as_str().unwrap().len(), 32);
    let r = &v["results"][0];
    assert_eq!(r["bytes"], 64);
    assert_eq!(r["iterations"], 200);
    assert!(r["bw_average"].as_f64().unwrap() > 0.0);
    assert!(r["bw_peak"].as_f64().unwrap() >= r["bw_average"].as_f64().unwrap());
    // perftest's bandwidth tests send nothing inline: one BlueFlame copy per WR (ctrl,
    // raddr and a data segment: one 64-byte chunk), one DMA read of the 64-byte payload,
    // 64 bytes written at the responder in one MWr.
    assert_eq!(h["params"]["inline_size"], 0);
    let p = &r["pcie_per_message"];
    assert_eq!(p["client"]["mmio_writes"], 1.0);
    assert_eq!(p["client"]["dma_reads"], 1.0);
    assert_eq!(p["server"]["dma_writes"], 1.0);
    assert_eq!(p["server"]["bytes_up"], 88.0);
}

#[test]
fn send_lat_csv_has_one_row_per_size() {
    let (ok, out, err) = perf(&["send_lat", "-n", "50", "-s", "16", "--csv"]);
    assert!(ok, "{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 2, "{out}");
    let header: Vec<&str> = lines[0].split(',').collect();
    let row: Vec<f64> = lines[1].split(',').map(|x| x.parse().unwrap()).collect();
    assert_eq!(header.len(), row.len());
    assert_eq!(
        &header[..4],
        ["#bytes", "#iterations", "t_min[usec]", "t_max[usec]"]
    );
    assert_eq!(row[0], 16.0);
    assert_eq!(row[1], 50.0);
    let col = |name: &str| row[header.iter().position(|h| *h == name).unwrap()];
    assert!(col("t_min[usec]") <= col("t_typical[usec]"));
    assert!(col("t_typical[usec]") <= col("t_max[usec]") * 1.001);
    assert!(col("t_stdev[usec]") >= 0.0);
}

#[test]
fn sweeps_and_every_test_run() {
    for (test, extra) in [
        ("write_lat", &["-a", "-n", "5"][..]),
        ("read_lat", &["-n", "20"][..]),
        ("atomic_lat", &["-n", "20", "-A", "CMP_AND_SWAP"][..]),
        (
            "send_bw",
            &["-n", "300", "-s", "256", "-t", "16", "-Q", "4", "-l", "4"][..],
        ),
        ("read_bw", &["-n", "100", "-q", "2"][..]),
        ("atomic_bw", &["-n", "100"][..]),
    ] {
        let mut args = vec![test, "--json"];
        args.extend(extra);
        let v = json(&args);
        let results = v["results"].as_array().unwrap();
        let want = if extra.contains(&"-a") { 23 } else { 1 };
        assert_eq!(results.len(), want, "{test}");
        let per_qp: u64 = extra
            .iter()
            .position(|a| *a == "-n")
            .map(|i| extra[i + 1].parse().unwrap())
            .unwrap();
        let qps = if extra.contains(&"-q") { 2 } else { 1 };
        assert_eq!(results[0]["iterations"], per_qp * qps, "{test}");
    }
}

#[test]
fn duration_mode_keeps_percentiles_and_skips_the_margins() {
    let v = json(&["write_lat", "-D", "0.6", "--margin", "0.2", "--json"]);
    assert_eq!(v["header"]["params"]["duration_ms"], 600);
    assert_eq!(v["header"]["params"]["margin_ms"], 200);
    let r = &v["results"][0];
    let sampled = r["iterations"].as_u64().unwrap();
    assert!(sampled > 0 && sampled < r["messages_run"].as_u64().unwrap());
    assert!(r["p99_9"].as_f64().unwrap() >= r["p50"].as_f64().unwrap());
    // perftest's default margin: a quarter of -D in whole seconds (none below 4 s).
    let v = json(&["write_bw", "-D", "0.3", "--json"]);
    assert_eq!(v["header"]["params"]["margin_ms"], 0);
    let r = &v["results"][0];
    assert_eq!(r["bw_peak"], Value::Null);
    // The WRs still outstanding at the end complete after the window.
    assert!(r["iterations"].as_u64().unwrap() <= r["messages_run"].as_u64().unwrap());
    // The header says what is sampled. The window is 0.2 s so that a busy machine still
    // looks at the CQ inside it (0.1 s failed once under load).
    let (ok, out, err) = perf(&["read_bw", "-D", "0.6", "-f", "0.2"]);
    assert!(ok, "{err}");
    assert!(
        out.contains(
            " Duration        : 0.6 s per size: 0.2 s warm-up, 0.2 s sampled, 0.2 s end margin"
        ),
        "{out}"
    );
}

#[test]
fn the_peak_is_not_measured_where_perftest_does_not_measure_it() {
    for args in [
        &["write_bw", "-n", "100", "-N", "--csv"][..],
        &["write_bw", "-n", "20001", "-s", "8", "-Q", "128", "--csv"][..],
    ] {
        let (ok, out, err) = perf(args);
        assert!(ok, "{err}");
        let row = out.lines().nth(1).unwrap();
        assert_eq!(row.split(',').nth(2), Some("n/a"), "{args:?}: {row}");
    }
    let v = json(&["write_bw", "-n", "20000", "-s", "8", "-Q", "128", "--json"]);
    assert!(v["results"][0]["bw_peak"].as_f64().unwrap() > 0.0);
}

#[test]
fn the_header_prints_perftests_lines() {
    let (ok, out, err) = perf(&["read_bw", "-n", "100", "-s", "8"]);
    assert!(ok, "{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[1], "                    RDMA_Read BW Test");
    for line in [
        " Dual-port       : OFF\t\tDevice         : mlx5-hw model",
        " Number of qps   : 1\t\tTransport type : IB",
        " Connection type : RC\t\tUsing SRQ      : OFF",
        " PCIe relax order: OFF\t\tLock-free      : ON",
        " ibv_wr* API     : OFF\t\tUsing Enhanced Reorder      : OFF",
        " TX depth        : 100",
        " CQ Moderation   : 100",
        " CQE Poll Batch  : 16",
        " Mtu             : 4096[B]",
        " Link type       : IB",
        " Outstand reads  : 16",
        " rdma_cm QPs\t : OFF",
        " Data ex. method : Ethernet",
    ] {
        assert!(lines.contains(&line), "{line:?} missing:\n{out}");
    }
    assert!(!out.contains("Max inline data"), "{out}");
    // The address block: perftest's formats (C's %#x: no 0x before a zero).
    let addresses = block(&out, " local address:");
    assert_eq!(addresses.len(), 2, "{out}");
    let local = addresses[0];
    assert!(local.starts_with(" local address: LID 0x0"), "{local}");
    assert!(local.contains(" OUT 0x10 RKey 0x"), "{local}");
    assert!(addresses[1].starts_with(" remote address: LID 0x0"));
    // The table ends with a rule, as perftest's does.
    assert_eq!(lines.last(), Some(&"-".repeat(87).as_str()));
    // The atomic type is in the title; SEND and atomics print no RKey; -x prints the GID.
    let (ok, out, err) = perf(&["atomic_lat", "-n", "5", "-A", "CMP_AND_SWAP", "-x", "0"]);
    assert!(ok, "{err}");
    assert!(out.contains("                    Atomic CMP_AND_SWAP Latency Test\n"));
    assert!(out.contains("\n GID index       : 0\n"), "{out}");
    let addresses = block(&out, " local address:");
    assert_eq!(addresses.len(), 4, "{out}");
    assert!(!addresses[0].contains("RKey"));
    assert!(
        addresses[1].starts_with(" GID: 254:128:00:00:"),
        "{}",
        addresses[1]
    );
    let (ok, out, _) = perf(&["write_lat", "-n", "5"]);
    assert!(ok);
    assert!(out.contains("\n Max inline data : 220[B]\n"));
    assert!(!out.contains("CQ Moderation"));
}

#[test]
fn output_prints_one_number_per_size() {
    for (args, lines) in [
        (&["write_bw", "-n", "100", "--output", "bandwidth"][..], 1),
        (
            &[
                "write_bw",
                "-n",
                "100",
                "-s",
                "8",
                "--output",
                "message_rate",
            ][..],
            1,
        ),
        (&["send_lat", "-n", "20", "--output", "latency"][..], 1),
        (
            &["write_lat", "-a", "-n", "5", "--output", "latency"][..],
            23,
        ),
    ] {
        let (ok, out, err) = perf(args);
        assert!(ok, "{args:?}: {err}");
        let numbers: Vec<f64> = out.lines().map(|l| l.parse().unwrap()).collect();
        assert_eq!(numbers.len(), lines, "{args:?}: {out}");
        // C's %lf: six decimals.
        assert!(out
            .lines()
            .all(|l| l.split('.').nth(1).map(str::len) == Some(6)));
        assert!(numbers.iter().all(|&x| x > 0.0));
    }
}

#[test]
fn out_json_writes_perftests_file() {
    let dir = std::env::temp_dir().join(format!("mlx5-perf-json-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("out.json");
    let f = file.to_str().unwrap();
    let read =
        || -> Value { serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap() };
    let (ok, _, err) = perf(&[
        "write_bw",
        "-n",
        "100",
        "-s",
        "8",
        "-N",
        "--out_json",
        "--out_json_file",
        f,
    ]);
    assert!(ok, "{err}");
    let v = read();
    let info = &v["test_info"];
    assert_eq!(info["test"], "RDMA_Write_BW_Test");
    assert_eq!(info["TX_depth"], 100);
    assert_eq!(info["CQ_Moderation"], 100);
    assert_eq!(info["Max_inline_data"], 0);
    assert_eq!(info["Connection_type"], "RC");
    // InfiniBand without -x: perftest's gid_index is -1, no GID_index key.
    assert_eq!(info["Link_type"], "IB");
    assert!(info.get("GID_index").is_none(), "{info}");
    let r = &v["results"];
    assert_eq!(
        (r["MsgSize"].as_u64(), r["n_iterations"].as_u64()),
        (Some(8), Some(100))
    );
    // Not measured: 0.00, as perftest prints it.
    assert_eq!(r["BW_peak"].as_f64(), Some(0.0));
    assert!(r["BW_average"].as_f64().unwrap() > 0.0 && r["MsgRate"].as_f64().unwrap() > 0.0);
    // A sweep leaves the last size (perftest rewrites the file per row).
    let (ok, _, err) = perf(&[
        "atomic_lat",
        "-n",
        "20",
        "-A",
        "CMP_AND_SWAP",
        "--out_json",
        "--out_json_file",
        f,
    ]);
    assert!(ok, "{err}");
    let v = read();
    assert_eq!(v["test_info"]["test"], "Atomic_CMP_AND_SWAP_Latency_Test");
    assert_eq!(v["test_info"]["Outstand_reads"], 16);
    let r = &v["results"];
    for k in [
        "MsgSize",
        "n_iterations",
        "t_min",
        "t_max",
        "t_typical",
        "t_avg",
        "t_stdev",
        "percentile_99",
        "percentile_99.9",
    ] {
        assert!(r[k].is_number(), "{k}: {r}");
    }
    assert_eq!(r["n_iterations"], 20);
    let (ok, _, _) = perf(&[
        "send_lat",
        "-n",
        "20",
        "--output",
        "latency",
        "--out_json",
        "--out_json_file",
        f,
    ]);
    assert!(ok);
    assert!(read()["results"]["avg_lat"].as_f64().unwrap() > 0.0);
    // On RoCE perftest's gid_index is set (0 here, the model's only GID): the key is there.
    let (ok, _, err) = perf(&[
        "send_lat",
        "-n",
        "20",
        "--force-link",
        "Ethernet",
        "--out_json",
        "--out_json_file",
        f,
    ]);
    assert!(ok, "{err}");
    let info = &read()["test_info"];
    assert_eq!(
        (info["Link_type"].as_str(), info["GID_index"].as_u64()),
        (Some("Ethernet"), Some(0))
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn limits_fail_the_run() {
    fails_with(
        &["write_bw", "-n", "100", "-w", "1e12"],
        "Error: BW result is below bw limit",
    );
    fails_with(
        &["write_bw", "-n", "100", "-w", "0", "-y", "1e9"],
        "Error: Msg rate is below msg_rate limit",
    );
    let (ok, _, err) = perf(&["write_bw", "-n", "100", "-w", "0.001", "-y", "0.0000001"]);
    assert!(ok, "{err}");
}

#[test]
fn perftest_statistics_and_samples() {
    // -U: the 9 gaps between 10 posts in order; -H: the 7 kept, sorted; then the rule
    // and the columns again, and the row with -n as #iterations.
    let (ok, out, err) = perf(&[
        "write_lat",
        "-n",
        "10",
        "-U",
        "-H",
        "--perftest-stats",
        "--csv",
    ]);
    assert!(ok, "{err}");
    assert!(!out.contains("#, usec"), "samples are text-only: {out}");
    let (ok, out, err) = perf(&["write_lat", "-n", "10", "-U", "-H", "--perftest-stats"]);
    assert!(ok, "{err}");
    let blocks: Vec<&str> = out.split("#, usec\n").collect();
    assert_eq!(blocks.len(), 3, "{out}");
    let unsorted: Vec<f64> = blocks[1]
        .lines()
        .map(|l| l.split(", ").nth(1).unwrap().parse().unwrap())
        .collect();
    assert_eq!(unsorted.len(), 9);
    let sorted: Vec<f64> = blocks[2]
        .lines()
        .take_while(|l| !l.starts_with('-'))
        .map(|l| l.split(", ").nth(1).unwrap().parse().unwrap())
        .collect();
    assert_eq!(sorted.len(), 7);
    assert!(sorted.windows(2).all(|w| w[0] <= w[1]));
    let row = out.lines().rev().nth(1).unwrap();
    let cells: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(&cells[..2], ["2", "10"]);
    // t_min is the least gap, t_max perftest's delta[kept]: the second-largest gap, the
    // one after the last -H line (%g keeps 6 digits).
    let mut all = unsorted.clone();
    all.sort_by(f64::total_cmp);
    assert_eq!(all[..7], sorted[..]);
    let t_min: f64 = cells[2].parse().unwrap();
    let t_max: f64 = cells[3].parse().unwrap();
    assert!(
        (t_min - all[0]).abs() <= 1e-3 * all[0].max(1.0),
        "{t_min} {all:?}"
    );
    assert!(
        (t_max - all[7]).abs() <= 1e-3 * all[7].max(1.0),
        "{t_max} {all:?}"
    );
    // Our statistics: #iterations is -n too.
    let v = json(&["read_lat", "-n", "30", "--json"]);
    assert_eq!(v["results"][0]["iterations"], 30);
}

#[test]
fn bidirectional_runs_both_ways_and_sums() {
    for test in ["write_bw", "send_bw", "read_bw", "atomic_bw"] {
        let v = json(&[test, "-b", "-n", "200", "--json"]);
        let r = &v["results"][0];
        // The client's own 200 messages, and the server's 200 the other way.
        assert_eq!(r["iterations"], 200, "{test}");
        assert_eq!(r["messages_run"], 400, "{test}");
        assert!(r["bw_average"].as_f64().unwrap() > 0.0, "{test}");
        assert_eq!(v["header"]["params"]["duplex"], true);
    }
    let (ok, out, err) = perf(&["send_bw", "-b", "-n", "50", "-s", "64"]);
    assert!(ok, "{err}");
    assert!(
        out.contains("                    Send Bidirectional BW Test\n"),
        "{out}"
    );
    // Both sides post receives and sends: the client prints its RX depth too.
    assert!(out.contains("\n RX depth        : 50\n"), "{out}");
}

#[test]
fn warm_up_is_neither_timed_nor_counted() {
    for test in ["write_bw", "read_bw", "atomic_bw"] {
        let plain = json(&[test, "-n", "100", "-s", "8", "--json"]);
        let warm = json(&[test, "-n", "100", "-s", "8", "--perform_warm_up", "--json"]);
        let (p, w) = (&plain["results"][0], &warm["results"][0]);
        assert_eq!(w["messages_run"], 100, "{test}");
        // The warm-up's 100 WRs (a TX depth) ran before either side's link counts began.
        assert_eq!(w["pcie_per_message"], p["pcie_per_message"], "{test}");
        assert_eq!(warm["header"]["params"]["warm_up"], true);
    }
}

#[test]
fn the_latency_gap_lands_in_perftests_samples() {
    // A 200 us spin before each post: perftest's samples (gaps between posts, halved)
    // are at least 100 us.
    let v = json(&[
        "write_lat",
        "-n",
        "6",
        "--latency_gap",
        "200",
        "--perftest-stats",
        "--json",
    ]);
    assert!(v["results"][0]["t_min"].as_f64().unwrap() >= 100.0, "{v}");
}

#[test]
fn perftest_flags_not_taken_say_why() {
    fails_with(
        &["write_bw", "--use_cuda=0"],
        "--use_cuda: memory and placement flags come with the memory issue (issue 17)",
    );
    fails_with(&["send_bw", "--connectionless"], "connectionless UD test");
    fails_with(&["write_bw", "-O"], "dual-port runs are not implemented");
    let (ok, out, _) = perf(&["send_bw", "-V"]);
    assert!(ok);
    assert_eq!(out, format!("Version: {}\n", env!("CARGO_PKG_VERSION")));
}

#[test]
fn the_header_says_why_the_peak_is_not_measured() {
    let (ok, out, err) = perf(&["write_bw", "-D", "0.2", "-s", "8"]);
    assert!(ok, "{err}");
    assert!(
        out.starts_with(
            " WARNING: BW peak won't be measured in this run.\n (perftest's rule: duration mode"
        ),
        "{out}"
    );
    // Not with -N: the user asked.
    let (ok, out, _) = perf(&["write_bw", "-D", "0.2", "-s", "8", "-N"]);
    assert!(ok);
    assert!(!out.contains("WARNING"));
}

#[test]
fn plots_are_svg() {
    let dir = std::env::temp_dir().join(format!("mlx5-perf-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for (args, file) in [
        (&["write_lat", "-n", "100"][..], "lat.svg"),
        (&["write_bw", "-a", "-n", "5", "--csv"][..], "bw.svg"),
        (&["pcie"][..], "pcie.svg"),
    ] {
        let path = dir.join(file);
        let mut all: Vec<&str> = args.to_vec();
        let p = path.to_str().unwrap().to_string();
        all.extend(["--plot", &p]);
        let (ok, _, err) = perf(&all);
        assert!(ok, "{all:?}: {err}");
        let svg = std::fs::read_to_string(&path).unwrap();
        assert!(svg.starts_with("<svg"), "{file}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn clear_errors() {
    fails_with(
        &["write_lat", "somehost"],
        "the model runs both ends in this process",
    );
    fails_with(&["atomic_bw", "-s", "64"], "atomics move 8 bytes");
    fails_with(&["write_bw", "-l", "200"], "more than the TX depth");
    fails_with(
        &["write_bw", "-D", "2", "--margin", "1"],
        "-D 2 s must be more than twice the margin (1 s)",
    );
    fails_with(&["write_lat", "--margin", "1"], "--duration");
    #[cfg(not(feature = "verbs"))]
    fails_with(
        &["write_lat", "-d", "mlx5_0"],
        "built without the `verbs` feature",
    );
}

#[test]
fn report_both_reversed_cycles_and_wait_destroy() {
    // --report-both: the summed row, then this side's and the peer's, each under its title.
    let (ok, out, err) = perf(&["write_bw", "-b", "-n", "100", "-s", "8", "--report-both"]);
    assert!(ok, "{err}");
    let local = out.find("\n Local results: \n").expect(&out);
    let remote = out.find("\n Remote results: \n").expect(&out);
    assert!(local < remote);
    let rows: Vec<&str> = out[local..]
        .lines()
        .filter(|l| l.trim_start().starts_with("8 "))
        .collect();
    assert_eq!(rows.len(), 2, "{out}");
    assert!(rows
        .iter()
        .all(|r| r.split_whitespace().nth(1) == Some("100")));
    let v = json(&["send_bw", "-b", "-n", "100", "--report-both", "--json"]);
    let r = &v["results"][0];
    assert_eq!(
        (
            r["local"]["iterations"].as_u64(),
            r["remote"]["iterations"].as_u64()
        ),
        (Some(100), Some(100))
    );
    // --reversed: the end that reports (the one with the TCP connection out) receives; it
    // prints what perftest's receiving side prints (no TX depth) and the sender's row.
    let (ok, out, err) = perf(&["write_bw", "--reversed", "-n", "100", "-s", "8"]);
    assert!(ok, "{err}");
    assert!(!out.contains(" TX depth"), "{out}");
    let v = json(&["write_bw", "--reversed", "-n", "100", "-s", "8", "--json"]);
    assert_eq!(v["results"][0]["iterations"], 100);
    assert_eq!(v["results"][0]["completions"]["client"]["rdma_write"], 1);
    let (ok, out, err) = perf(&["send_bw", "--reversed", "-n", "100", "-s", "8"]);
    assert!(ok, "{err}");
    assert!(out.contains("\n RX depth        : 100\n"), "{out}");
    // -C: the same columns (still [usec], as perftest's).
    let (ok, out, err) = perf(&["read_lat", "-n", "20", "-C", "--csv"]);
    assert!(ok, "{err}");
    assert!(out.starts_with("#bytes,#iterations,t_min[usec]"), "{out}");
    // --wait_destroy: the notice on stderr (stdout stays the one number).
    let (ok, out, err) = perf(&[
        "read_bw",
        "-n",
        "10",
        "--wait_destroy",
        "1",
        "--output",
        "bandwidth",
    ]);
    assert!(ok, "{err}");
    assert_eq!(out.lines().count(), 1, "{out}");
    assert!(
        err.contains(" Waiting 1 seconds before releasing resources...\n"),
        "{err}"
    );
}

#[test]
fn refusals_are_one_line_and_fail_the_run() {
    for (args, reason) in [
        (
            &["send_lat", "--hw-timestamps", "--model-clock-khz", "0"][..],
            "--hw-timestamps: the device does not support a device clock",
        ),
        (
            &["write_bw", "--hw-timestamps"][..],
            "--hw-timestamps: latency tests only (write_bw",
        ),
        (
            &["send_lat", "-d", "mlx5_0", "--model-clock-khz", "1"][..],
            "--model-clock-khz sets the model's clock",
        ),
    ] {
        let (ok, out, err) = perf(args);
        assert!(!ok, "{args:?} should fail");
        assert!(out.is_empty(), "{args:?}: {out}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(
            err.starts_with(&format!("mlx5-perf: {reason}")),
            "{args:?}: {err}"
        );
    }
}
