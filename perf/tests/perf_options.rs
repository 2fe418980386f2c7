//! `mlx5-perf` benchmarks with perftest's options on the model: events, MTU, timeout, SL, flow
//! label and P_Key index, immediates, an SRQ, run-infinitely, the rate limiter, counters, CPU
//! utilisation, completion opcodes, data validation, memory placement, device memory and the
//! NIC's clock (`--hw-timestamps`).

mod common;

#[cfg(feature = "verbs")]
use std::process::Command;

use serde_json::Value;

use common::*;

#[test]
fn events_sleep_on_the_cq_and_complete_every_test() {
    for (test, n) in [
        ("send_lat", 20),
        ("read_lat", 20),
        ("atomic_lat", 20),
        ("send_bw", 100),
        ("read_bw", 100),
        ("atomic_bw", 100),
    ] {
        let ns = n.to_string();
        let v = json(&[test, "-e", "-n", &ns, "--json"]);
        assert_eq!(v["results"][0]["iterations"], n, "{test}");
    }
    // -b with events: both sides sleep, the SENDs of each keep landing.
    let v = json(&["send_bw", "-e", "-b", "-n", "100", "--json"]);
    assert_eq!(v["results"][0]["messages_run"], 200);
    let (ok, out, err) = perf(&["read_lat", "-e", "-n", "5"]);
    assert!(ok, "{err}");
    assert!(
        out.contains("\n Test with events. Using mlx5-hw model_comp0\n"),
        "{out}"
    );
}

#[test]
fn mtu_and_timeout_reach_the_qp() {
    let (ok, out, err) = perf(&[
        "write_bw", "-n", "50", "-m", "1024", "-u", "18", "--tclass", "32",
    ]);
    assert!(ok, "{err}");
    assert!(out.contains("\n Mtu             : 1024[B]\n"), "{out}");
}

#[test]
fn sl_flow_label_and_pkey_index_reach_the_qp() {
    for flag in [
        ["-S", "7"],
        ["--flow_label", "12345"],
        ["--pkey_index", "0"],
    ] {
        let (ok, out, err) = perf(&["write_bw", "-n", "50", flag[0], flag[1]]);
        assert!(ok, "{flag:?}: {err}");
        assert!(out.contains("\n 65536           50 "), "{flag:?}: {out}");
    }
    // The model's P_Key table holds index 0 alone: the device refuses index 1 at INIT, of
    // a UD QP and a DCI too.
    for c in ["RC", "UD", "DC"] {
        fails_with(
            &["send_bw", "-c", c, "-n", "50", "--pkey_index", "0x1"],
            "pkey_index",
        );
    }
}

/// The responder's PCIe row of a run's first size: `per_message`'s five counts.
fn responder(v: &Value) -> [f64; 5] {
    per_message(&serde_json::json!({
        "per_message": v["results"][0]["pcie_per_message"]["server"]
    }))
}

#[test]
fn write_with_imm_costs_the_responder_a_receive() {
    let write = json(&["write_bw", "-n", "200", "-s", "64", "--json"]);
    let imm = json(&[
        "write_bw",
        "-n",
        "200",
        "-s",
        "64",
        "--write_with_imm",
        "--json",
    ]);
    let send = json(&["send_bw", "-n", "200", "-s", "64", "--json"]);
    let pcie = |v: &Value| v["results"][0]["pcie_per_message"].clone();
    // The requester's side is the same WQE with another opcode.
    assert_eq!(pcie(&imm)["client"], pcie(&write)["client"]);
    // The responder of plain WRITE only writes the payload (one 88-byte MWr). WRITE_IMM
    // also consumes a receive: one receive-WQE fetch per message (MRd 24 B up, CplD 36 B
    // down) and a CQE (MWr 88 B up), plus the receive refill traffic a send_bw responder
    // has too (201 reads for 200 messages).
    assert_eq!(responder(&write), [0.0, 0.0, 1.0, 0.0, 88.0]);
    assert_eq!(responder(&imm), [0.0, 1.005, 2.0, 36.12, 200.12]);
    // Exactly what a SEND costs its responder.
    assert_eq!(pcie(&imm)["server"], pcie(&send)["server"]);
}

#[test]
fn imm_latency_tests_complete_through_receive_completions() {
    // write_lat spins on the last byte; with --write_with_imm each side polls its CQ for
    // the receive the WRITE_IMM consumed: one receive-WQE fetch and one CQE more per
    // message on each side than plain write_lat.
    let write = json(&["write_lat", "-n", "200", "--json"]);
    let imm = json(&["write_lat", "-n", "200", "--write_with_imm", "--json"]);
    assert_eq!(imm["results"][0]["iterations"], 200);
    assert_eq!(responder(&write), [1.0, 0.0, 2.0, 88.0, 114.0]);
    assert_eq!(responder(&imm), [1.0, 1.005, 3.0, 124.12, 226.12]);
    // send_lat with and without the immediate: the same traffic, both complete.
    let send = json(&["send_lat", "-n", "200", "--json"]);
    let simm = json(&["send_lat", "-n", "200", "--send_with_imm", "--json"]);
    assert_eq!(simm["results"][0]["iterations"], 200);
    assert_eq!(
        simm["results"][0]["pcie_per_message"],
        send["results"][0]["pcie_per_message"]
    );
    let bw = json(&[
        "send_bw",
        "-n",
        "200",
        "-s",
        "64",
        "--send_with_imm",
        "--json",
    ]);
    assert_eq!(bw["results"][0]["iterations"], 200);
}

#[test]
fn use_srq_takes_the_receives_from_one_shared_queue() {
    let plain = json(&["send_bw", "-n", "200", "-s", "64", "--json"]);
    let srq = json(&["send_bw", "-n", "200", "-s", "64", "--use-srq", "--json"]);
    assert_eq!(srq["header"]["params"]["srq"], true);
    assert_eq!(srq["results"][0]["iterations"], 200);
    // Same traffic, but the receive WQE the responder fetches per message is an SRQ WQE:
    // a 16-byte next segment before the data segment, 32 bytes instead of 16.
    assert_eq!(responder(&plain), [0.0, 1.005, 2.0, 36.12, 200.12]);
    assert_eq!(responder(&srq), [0.0, 1.005, 2.0, 52.12, 200.12]);
    // Four QPs on one SRQ, lists of 4 receives, and both directions at once.
    let v = json(&[
        "send_bw",
        "-n",
        "200",
        "-q",
        "4",
        "--use-srq",
        "--recv_post_list",
        "4",
        "--json",
    ]);
    assert_eq!(v["results"][0]["iterations"], 800);
    let v = json(&[
        "send_bw",
        "-b",
        "-n",
        "100",
        "-q",
        "2",
        "--use-srq",
        "--json",
    ]);
    assert_eq!(v["results"][0]["messages_run"], 400);
    // UD on an SRQ made for UD: every receive leaves room for the GRH area.
    let v = json(&[
        "send_bw",
        "-c",
        "UD",
        "-n",
        "200",
        "-s",
        "64",
        "--use-srq",
        "--json",
    ]);
    assert_eq!(v["results"][0]["iterations"], 200);
    let (ok, out, err) = perf(&["send_lat", "-n", "20", "--use-srq"]);
    assert!(ok, "{err}");
    assert!(
        out.contains("\n Connection type : RC\t\tUsing SRQ      : ON\n"),
        "{out}"
    );
    let (ok, out, err) = perf(&["send_bw", "-b", "-n", "20", "--recv_post_list", "2"]);
    assert!(ok, "{err}");
    assert!(out.contains("\n Recv Post List  : 2\n"), "{out}");
    // perftest prints the RX depth wherever receives complete: WRITE_IMM too.
    let (ok, out, err) = perf(&["write_bw", "-b", "-n", "20", "--write_with_imm"]);
    assert!(ok, "{err}");
    assert!(out.contains("\n RX depth        : 20\n"), "{out}");
}

#[test]
fn run_infinitely_prints_a_row_per_period() {
    // A bounded run (the hidden --periods): three periods of 0.1 s, each its own row.
    let v = json(&[
        "write_bw",
        "--run_infinitely",
        "-D",
        "0.1",
        "--periods",
        "3",
        "-s",
        "8",
        "--json",
    ]);
    let rows = v["results"].as_array().unwrap();
    assert_eq!(rows.len(), 3);
    for r in rows {
        assert_eq!(r["bytes"], 8);
        assert_eq!(r["bw_peak"], Value::Null);
        assert!(r["iterations"].as_u64().unwrap() > 0, "{r}");
    }
    let (ok, out, err) = perf(&[
        "send_bw",
        "--run_infinitely",
        "-D",
        "0.1",
        "--periods",
        "2",
        "--csv",
    ]);
    assert!(ok, "{err}");
    assert_eq!(out.lines().count(), 3, "{out}");
    let (ok, out, err) = perf(&[
        "read_bw",
        "--run_infinitely",
        "-D",
        "0.05",
        "--periods",
        "1",
    ]);
    assert!(ok, "{err}");
    assert!(out.starts_with(" WARNING: BW peak won't be measured in this run.\n"));
    assert!(
        out.contains(
            "\n Duration        : a row every 0.05 s until interrupted (run_infinitely)\n"
        ),
        "{out}"
    );
}

#[test]
fn the_rate_limiter_holds_the_sender_to_the_limit() {
    // 2000 messages per second in bursts of 10: 100 messages are 10 bursts whose
    // deadlines are 5 ms apart, so the run lasts at least 45 ms whatever the machine does
    // and its rate cannot exceed 2000 x 10 / 9 per second (the bound is a consequence of
    // the deadlines, not a timing). The margin covers the time between the first burst's
    // deadline and the first post's timestamp.
    let v = json(&[
        "write_bw",
        "-n",
        "100",
        "-s",
        "8",
        "--rate_limit",
        "2000",
        "--rate_units",
        "p",
        "--rate_limit_type",
        "SW",
        "--burst_size",
        "10",
        "--json",
    ]);
    let r = &v["results"][0];
    assert_eq!(r["iterations"], 100);
    let rate = r["msg_rate_mpps"].as_f64().unwrap() * 1e6;
    assert!(rate <= 2000.0 * 10.0 / 9.0 * 1.25, "{r}");
    assert_eq!(v["header"]["params"]["rate_limit"]["burst"], 10);
    fails_with(
        &["write_bw", "--rate_limit", "1"],
        "--rate_limit_type HW (perftest's default when --rate_limit is given)",
    );
    fails_with(
        &["write_bw", "--typical_pkt_size", "64"],
        "sets the rate alone",
    );
}

#[test]
fn packet_pacing_holds_the_sender_to_the_qps_rate_limit() {
    // PP: each QP's rate limit on the model's pacer (Qp::set_rate_limit), perftest's 1 M =
    // 8 x 1024 kbit/s = 1 024 000 bytes/s, 250 messages of 4096 bytes a second. The pacer
    // spaces them exactly on the host's clock from the first, which leaves at once: 100
    // messages take at least 99 gaps, so the rate cannot exceed 250 x 100 / 99 a second
    // (a consequence of the schedule, not a timing; 0.5 % for the timestamps around it).
    let v = json(&[
        "write_bw",
        "-n",
        "100",
        "-s",
        "4096",
        "--rate_limit",
        "1",
        "--rate_units",
        "M",
        "--rate_limit_type",
        "PP",
        "--json",
    ]);
    assert_eq!(v["header"]["params"]["pacing_kbps"], 8192);
    let r = &v["results"][0];
    assert_eq!(r["iterations"], 100);
    let rate = r["msg_rate_mpps"].as_f64().unwrap() * 1e6;
    assert!(rate <= 250.0 * 100.0 / 99.0 * 1.005, "{r}");
    // Without the limit the same run is not held to it.
    let v = json(&["write_bw", "-n", "100", "-s", "4096", "--json"]);
    let free = v["results"][0]["msg_rate_mpps"].as_f64().unwrap() * 1e6;
    assert!(free > 2.0 * 250.0, "unlimited: {free} messages a second");
}

#[test]
fn counters_report_the_change_over_each_size() {
    // On the model -W names its own counts; each is this side's (the client's NIC): 100
    // WRITEs of 8 bytes are 100 packets, 100 WQEs executed, 100 payload reads, and one CQE
    // (-Q 100).
    let (ok, out, err) = perf(&[
        "write_bw",
        "-n",
        "100",
        "-s",
        "8",
        "-W",
        "packets,wqes,pcie/dma_reads,cqes",
    ]);
    assert!(ok, "{err}");
    assert!(
        out.contains("\n\tpackets=100\n\twqes=100\n\tpcie/dma_reads=100\n\tcqes=1\n\n"),
        "{out}"
    );
    // 100 SENDs of 64 KiB at the model's 4096-byte MTU: 16 packets each.
    let v = json(&["send_bw", "-n", "100", "-W", "packets", "--json"]);
    assert_eq!(v["results"][0]["counters"]["packets"], 1600);
    // A sweep reports each size's own change.
    let v = json(&["write_lat", "-a", "-n", "5", "-W", "packets", "--json"]);
    let packets: Vec<u64> = v["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["counters"]["packets"].as_u64().unwrap())
        .collect();
    assert_eq!(packets[0], 5);
    assert_eq!(packets[22], 5 * (8 << 20) / 4096);
    fails_with(
        &["write_bw", "-n", "100", "-W", "counters/port_xmit_data"],
        "-W counters/port_xmit_data: the model has no sysfs port counters; it counts packets",
    );
}

#[test]
fn cpu_util_adds_perftests_column() {
    let (ok, out, err) = perf(&["write_bw", "-D", "0.2", "-s", "8", "--cpu_util", "--csv"]);
    assert!(ok, "{err}");
    let lines: Vec<&str> = out.lines().collect();
    let header: Vec<&str> = lines[0].split(',').collect();
    assert_eq!(header[5], "CPU_Util[%]");
    let util: f64 = lines[1].split(',').nth(5).unwrap().parse().unwrap();
    assert!((0.0..=100.0).contains(&util), "{util}");
    let dir = std::env::temp_dir().join(format!("mlx5-perf-cpu-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("out.json");
    let (ok, _, err) = perf(&[
        "read_lat",
        "-D",
        "0.2",
        "--cpu_util",
        "--out_json",
        "--out_json_file",
        file.to_str().unwrap(),
    ]);
    assert!(ok, "{err}");
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert!(v["results"]["CPU_util"].is_number(), "{v}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn completions_name_their_opcodes() {
    let completions = |args: &[&str]| {
        let mut all = args.to_vec();
        all.push("--json");
        json(&all)["results"][0]["completions"].clone()
    };
    // WRITE_IMM: the requester's CQEs (one per -Q 100) are RDMA WRITE completions; each
    // message costs the responder a receive that completes as RECV_RDMA_WITH_IMM with the
    // immediate.
    assert_eq!(
        completions(&["write_bw", "-n", "200", "-s", "64", "--write_with_imm"]),
        serde_json::json!({"client": {"rdma_write": 2},
                           "server": {"recv_rdma_with_imm": 200, "with_imm": 200}})
    );
    assert_eq!(
        completions(&["write_bw", "-n", "200", "-s", "64"]),
        serde_json::json!({"client": {"rdma_write": 2}, "server": {}})
    );
    assert_eq!(
        completions(&["send_bw", "-n", "200", "-s", "64", "--send_with_imm"]),
        serde_json::json!({"client": {"send": 2}, "server": {"recv": 200, "with_imm": 200}})
    );
    assert_eq!(
        completions(&["send_bw", "-n", "200", "-s", "64"]),
        serde_json::json!({"client": {"send": 2}, "server": {"recv": 200}})
    );
    // Ping-pong: each side's WRs are signaled (-Q 1) and it receives the other's.
    let side = serde_json::json!({"rdma_write": 100, "recv_rdma_with_imm": 100, "with_imm": 100});
    assert_eq!(
        completions(&["write_lat", "-n", "100", "--write_with_imm"]),
        serde_json::json!({"client": side, "server": side})
    );
    let side = serde_json::json!({"send": 100, "recv": 100, "with_imm": 100});
    assert_eq!(
        completions(&["send_lat", "-n", "100", "--send_with_imm"]),
        serde_json::json!({"client": side, "server": side})
    );
    assert_eq!(
        completions(&["atomic_lat", "-n", "20", "-A", "CMP_AND_SWAP"]),
        serde_json::json!({"client": {"compare_swap": 20}, "server": {}})
    );
    assert_eq!(
        completions(&["read_bw", "-n", "100"]),
        serde_json::json!({"client": {"rdma_read": 100}, "server": {}})
    );
}

#[test]
fn data_validation_fails_on_a_corrupted_byte() {
    // WRITE: the server checks its receive areas after the client's Done; READ: the client
    // checks what it read. Clean runs pass; with the model corrupting the first byte of
    // every payload written to host memory (the hidden --corrupt-payloads), the check
    // fails naming the byte, and the same corrupted run without the check passes.
    for test in ["write_bw", "read_bw"] {
        let v = json(&[test, "-n", "100", "-q", "2", "--data_validation", "--json"]);
        assert_eq!(v["results"][0]["iterations"], 200, "{test}");
        fails_with(
            &[test, "-n", "100", "--data_validation", "--corrupt-payloads"],
            "--data_validation: byte 0 of the 65536-byte message at offset",
        );
        let (ok, _, err) = perf(&[test, "-n", "100", "--corrupt-payloads"]);
        assert!(ok, "{test}: {err}");
    }
    fails_with(
        &["write_bw", "-d", "mlx5_0", "--corrupt-payloads"],
        "injects a fault into the model",
    );
}

/// Issue 17's memory flags: `--odp` and `--numa_node` run on the model, a missing node is
/// refused by name, and `--use_hugepages` either runs on 2 MiB pages or, when the pool is
/// short (as on a machine with none reserved), says how to reserve them.
#[test]
fn memory_flags_place_the_buffers() {
    for flags in [
        &["--odp"][..],
        &["--numa_node", "0"],
        &["--odp", "--numa_node", "0"],
    ] {
        let mut args = vec!["write_bw", "-n", "50"];
        args.extend_from_slice(flags);
        let (ok, _, err) = perf(&args);
        assert!(ok, "{flags:?}: {err}");
    }
    fails_with(
        &["write_lat", "-n", "10", "--numa_node", "4000"],
        "cannot bind to NUMA node 4000: no such node",
    );
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap();
    let free: u64 = meminfo
        .lines()
        .find_map(|l| l.strip_prefix("HugePages_Free:"))
        .map(|v| v.trim().parse().unwrap())
        .unwrap();
    let args = ["send_lat", "-n", "10", "--use_hugepages"];
    if free >= 2 {
        let (ok, _, err) = perf(&args);
        assert!(ok, "{free} hugepages free: {err}");
    } else {
        fails_with(&args, "sysctl vm.nr_hugepages=");
    }
}

/// `--use-dm` (ours): above the inline size each message is copied into device memory and
/// gathered there, so a run's link counts move as the `pcie --memic` rows say: per 256-byte
/// WRITE the client's payload read (MRd 24 up, CplD 256 + 20 down) becomes four 64-byte
/// CPU writes (4 x 88 down); the server's side does not change. Sizes that go inline do
/// not touch device memory.
#[test]
fn use_dm_runs_trade_the_payload_read_as_the_memic_rows_say() {
    let client = |args: &[&str]| {
        let v = json(&[args, &["--json"][..]].concat());
        let r = &v["results"][0];
        assert_eq!(r["iterations"], 200, "{args:?}");
        let p = &r["pcie_per_message"];
        (
            per_message(&serde_json::json!({ "per_message": p["client"] })),
            p["server"].clone(),
        )
    };
    let (dma, dma_server) = client(&["write_bw", "-s", "256", "-n", "200"]);
    let (dm, dm_server) = client(&["write_bw", "-s", "256", "-n", "200", "--use-dm"]);
    // [MMIO, MRd, MWr, down, up]: BlueFlame (88 down), a CQE every 100 WRs (0.88 up).
    assert_eq!(dma, [1.0, 1.0, 0.01, 88.0 + 276.0, 24.0 + 0.88]);
    assert_eq!(dm, [5.0, 0.0, 0.01, 5.0 * 88.0, 0.88]);
    assert_eq!(dma_server, dm_server);
    let v = json(&["pcie", "--memic", "--json"]);
    let row = |step: &str| {
        per_message(
            v["rows"]
                .as_array()
                .unwrap()
                .iter()
                .find(|r| r["step"] == step)
                .unwrap(),
        )
    };
    let (gather, memic) = (
        row("256 B, BlueFlame, DMA gather"),
        row("256 B, BlueFlame, from device memory (MEMIC)"),
    );
    for k in 0..5 {
        assert_eq!(dm[k] - dma[k], memic[k] - gather[k], "column {k}");
    }
    // SEND on UC, 1 KiB: 16 lines instead of two 512-byte reads (MRRS) and four completions.
    let (dma, _) = client(&["send_bw", "-c", "UC", "-s", "1024", "-n", "200"]);
    let (dm, _) = client(&["send_bw", "-c", "UC", "-s", "1024", "-n", "200", "--use-dm"]);
    assert_eq!(dm[0] - dma[0], 16.0);
    assert_eq!((dma[1], dm[1]), (2.0, 0.0));
    assert_eq!(dm[3] - dma[3], 16.0 * 88.0 - 4.0 * 276.0);
    // Inline: the same run with and without.
    let (inline, _) = client(&["write_lat", "-s", "64", "-n", "200"]);
    let (inline_dm, _) = client(&["write_lat", "-s", "64", "-n", "200", "--use-dm"]);
    assert_eq!(inline, inline_dm);
    // The bytes the server checks came through device memory.
    let v = json(&[
        "write_bw",
        "-n",
        "100",
        "-s",
        "4096",
        "--use-dm",
        "--data_validation",
        "--json",
    ]);
    assert_eq!(v["results"][0]["iterations"], 100);
}

/// `--use-dm` on hardware: a server and a client on the device of `MLX5_DIRECT_DEVICE`
/// (through loopback TCP), 256-byte WRITEs and 1 KiB SENDs through device memory.
#[test]
#[cfg(feature = "verbs")]
#[ignore = "needs a device with 64 KiB of device memory: an mlx5 NIC or the emulator (hw/emu/verbs-hw.sh --perf); set MLX5_DIRECT_DEVICE"]
fn use_dm_runs_on_hardware() {
    let device = std::env::var("MLX5_DIRECT_DEVICE").expect("MLX5_DIRECT_DEVICE");
    for (test, size) in [
        ("write_bw", "256"),
        ("send_bw", "1024"),
        ("write_lat", "512"),
    ] {
        let args = [
            test, "-d", &device, "-s", size, "-n", "64", "--use-dm", "-p", "18777",
        ];
        let mut server = Command::new(env!("CARGO_BIN_EXE_mlx5-perf"))
            .args(args)
            .spawn()
            .expect("start the server");
        std::thread::sleep(std::time::Duration::from_secs(1));
        let client = json(&[&args[..], &["127.0.0.1", "--json"]].concat());
        assert!(server.wait().expect("server").success(), "{test}");
        assert_eq!(client["results"][0]["iterations"], 64, "{test}");
    }
}

/// `--use-dm` refusals: a device without device memory or with too little (the hidden
/// `--dm-size` sets the model's), and tests or transports the path does not serve.
#[test]
fn use_dm_refusals_name_the_reason() {
    let dm_run = |dm_size: &str, message: &str| {
        fails_with(
            &[
                "write_bw",
                "-s",
                "256",
                "-n",
                "100",
                "--use-dm",
                "--dm-size",
                dm_size,
            ],
            message,
        )
    };
    dm_run(
        "0",
        "--use-dm: the device has no device memory (max_dm_size 0)",
    );
    dm_run(
        "4096",
        "--use-dm: 1 QP(s) x 100 outstanding WRs x 256-byte slots need 25600 bytes of device \
         memory, the device has 4096: lower -t, -q or -s",
    );
    fails_with(
        &["read_bw", "--use-dm"],
        "--use-dm: SEND and WRITE tests only",
    );
    fails_with(
        &["send_bw", "-c", "UD", "-s", "64", "--use-dm"],
        "--use-dm: RC and UC only",
    );
    fails_with(
        &["write_bw", "-d", "mlx5_0", "--use-dm", "--dm-size", "0"],
        "--dm-size sizes the model's device memory",
    );
}

/// The `hw` object of the one row of a `--json` run.
fn hw_of(args: &[&str]) -> Value {
    let (ok, out, err) = perf(args);
    assert!(ok, "mlx5-perf {args:?} failed: {err}");
    let v: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("not JSON ({e}): {out}"));
    let rows = v["results"].as_array().expect("results");
    assert_eq!(rows.len(), 1, "{out}");
    rows[0]["hw"].clone()
}

const LAT_FIELDS: [&str; 12] = [
    "bytes",
    "iterations",
    "t_min",
    "t_max",
    "t_typical",
    "t_avg",
    "t_stdev",
    "p50",
    "p90",
    "p99",
    "p99_9",
    "p99_99",
];

/// Checks one measure: the CPU row's fields, `samples` samples, ordered, and its true
/// minimum and maximum whole multiples of `step_ns` nanoseconds (the clock's tick, or half
/// of it where the ping-pong halves).
fn check_measure(m: &Value, samples: u64, step_ns: f64) {
    let fields: Vec<&str> = m
        .as_object()
        .expect("a row")
        .keys()
        .map(|k| k.as_str())
        .collect();
    let mut want = LAT_FIELDS.to_vec();
    want.sort();
    assert_eq!(fields, want);
    assert_eq!(m["iterations"], samples, "{m}");
    let f = |k: &str| m[k].as_f64().unwrap();
    assert!(f("t_min") > 0.0, "{m}");
    assert!(f("t_min") <= f("t_avg") && f("t_avg") <= f("t_max"), "{m}");
    assert!(
        f("t_typical") <= f("p99") * 1.001 && f("p99") <= f("t_max") * 1.001,
        "{m}"
    );
    for k in ["t_min", "t_max"] {
        let ticks = f(k) * 1e3 / step_ns;
        assert!(
            (ticks - ticks.round()).abs() < 1e-6,
            "{k} {} not whole {step_ns} ns",
            f(k)
        );
    }
}

#[test]
fn each_latency_test_times_its_iterations_by_the_nics_clock() {
    // A 100 MHz clock: 10 ns per tick, exactly (mult 10 · 2^28, shift 28), so every
    // difference of two converted CQE times is a whole number of 10 ns. 40 iterations, all
    // signaled: 39 pairs of consecutive requester CQEs; the first post has no trigger.
    for (test, extra, halves, post_to_cqe) in [
        ("send_lat", None, true, true),
        ("write_lat", Some("--write_with_imm"), true, true),
        ("write_lat", None, true, false),
        ("read_lat", None, false, true),
        ("atomic_lat", None, false, true),
    ] {
        let mut args = vec![test, "-n", "40", "--hw-timestamps", "--model-clock-khz"];
        args.extend(["100000", "--json"]);
        args.extend(extra);
        let h = hw_of(&args);
        assert_eq!(h["tick_ns"], 10.0, "{test}");
        let step = if halves { 5.0 } else { 10.0 };
        check_measure(&h["iteration"], 39, step);
        match post_to_cqe {
            true => check_measure(&h["post_to_cqe"], 39, 10.0),
            // write_lat spins on memory: no CQE triggers its posts.
            false => assert!(h["post_to_cqe"].is_null(), "{test}: {h}"),
        }
        if test == "read_lat" {
            // READ: the trigger is the previous requester CQE, so both measures agree.
            assert_eq!(h["iteration"], h["post_to_cqe"]);
        }
    }
}

#[test]
fn the_default_model_clock_is_a_connectx5s() {
    // 156 250 kHz: mult 3 435 973 837 at shift 29 (current kernels' per-frequency shift;
    // 53 687 091 at shift 23 on the kernels that introduced the page), 6.4 ns per tick as
    // rounded by the kernel.
    let h = hw_of(&["read_lat", "-n", "20", "--hw-timestamps", "--json"]);
    assert_eq!(h["tick_ns"], 3_435_973_837.0 / 536_870_912.0);
    assert_eq!(h["iteration"]["iterations"], 19);
    // Duration mode: only samples polled in the sampling window.
    let (ok, out, err) = perf(&["send_lat", "-D", "1", "--hw-timestamps", "--json"]);
    assert!(ok, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    let r = &v["results"][0];
    let hw = r["hw"]["iteration"]["iterations"].as_u64().unwrap();
    let cpu = r["iterations"].as_u64().unwrap();
    assert!(hw > 0 && hw <= r["messages_run"].as_u64().unwrap(), "{r}");
    assert!(hw.abs_diff(cpu) <= 2, "{hw} hw samples, {cpu} CPU samples");
}

#[test]
fn the_table_and_csv_add_the_hw_columns() {
    let (ok, out, err) = perf(&["write_lat", "-n", "20", "--hw-timestamps", "--csv"]);
    assert!(ok, "{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 2, "{out}");
    let header: Vec<&str> = lines[0].split(',').collect();
    let row: Vec<&str> = lines[1].split(',').collect();
    assert_eq!(header.len(), row.len());
    let at = |name: &str| {
        let i = header.iter().position(|h| *h == name);
        row[i.unwrap_or_else(|| panic!("no column {name}: {header:?}"))]
    };
    for name in ["min", "typical", "avg", "99%", "99.9%"] {
        let cpu = at(&format!("hw_t_{name}[usec]")).parse::<f64>().unwrap();
        assert!(cpu > 0.0);
        // write_lat: no trigger CQE.
        assert_eq!(at(&format!("hw_post_cqe_{name}[usec]")), "n/a");
    }
    // Without the flag, no hw column and no `hw` key.
    let (ok, out, _) = perf(&["write_lat", "-n", "20", "--csv"]);
    assert!(ok && !out.contains("hw_"), "{out}");
    let (ok, out, _) = perf(&["write_lat", "-n", "20", "--json"]);
    assert!(ok && !out.contains("\"hw\""), "{out}");
    // The text table names the same columns.
    let (ok, out, err) = perf(&["send_lat", "-n", "20", "--hw-timestamps"]);
    assert!(ok, "{err}");
    assert!(out.contains("hw_t_typical[usec]") && out.contains("hw_post_cqe_99%[usec]"));
}
