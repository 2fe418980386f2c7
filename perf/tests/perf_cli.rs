//! `mlx5-perf` end to end: the binary run on the model, its JSON and CSV parsed, exact PCIe
//! numbers checked against `tests/sim_pcie.rs` (MWr/MRd 24 B, CplD 20 B, MPS 256, MRRS 512,
//! RCB 128, completions up to MPS), the benchmarks run over the TCP exchange between two
//! model NICs.

use std::process::Command;

use serde_json::Value;

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

fn json(args: &[&str]) -> Value {
    let (ok, out, err) = perf(args);
    assert!(ok, "mlx5-perf {args:?} failed: {err}");
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("not JSON ({e}): {out}"))
}

fn fails_with(args: &[&str], message: &str) {
    let (ok, _, err) = perf(args);
    assert!(!ok, "mlx5-perf {args:?} should fail");
    assert!(err.contains(message), "{args:?}: {err:?} lacks {message:?}");
}

fn per_message(v: &Value) -> [f64; 5] {
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

#[test]
fn explain_inline_blueflame_write_is_one_mmio_and_one_cqe() {
    let v = json(&[
        "explain", "write", "--size", "8", "--inline", "--mode", "bf", "--json",
    ]);
    // Integers where they divide evenly, exactly the issue's shape.
    assert_eq!(
        v["per_message"],
        serde_json::json!({"mmio_writes": 1, "dma_reads": 0, "dma_writes": 1, "completions": 0,
                           "bytes_down": 88, "bytes_up": 88})
    );
    assert_eq!(v["dbrec"], 1);
    // ctrl + raddr + inline (4 + 8 bytes) = 3 DS.
    let wqes = v["wqes"].as_array().unwrap();
    assert_eq!(wqes.len(), 1);
    assert_eq!(wqes[0]["index"], 0);
    let wqe = wqes[0]["hex"].as_str().unwrap();
    assert_eq!(wqe.len(), 3 * 16 * 2);
    // ctrl: opcode RDMA_WRITE (0x08) at index 0, DS 3, CE = always (0x08 in fm_ce_se).
    assert!(wqe.starts_with("00000008"), "{wqe}");
    assert_eq!(&wqe[14..16], "03");
    assert_eq!(&wqe[22..24], "08");
    // One 64-byte BlueFlame chunk at the register (0x800): the WQE, then zeros.
    let mmio = v["mmio"].as_array().unwrap();
    assert_eq!(mmio.len(), 1);
    assert_eq!(mmio[0]["offset"], 2048);
    let chunk = mmio[0]["hex"].as_str().unwrap();
    assert_eq!(chunk.len(), 128);
    assert_eq!(&chunk[..96], wqe);
    assert!(chunk[96..].bytes().all(|b| b == b'0'));
    let tlps: Vec<(String, String, String, u64, u64)> = v["tlps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["side"].as_str().unwrap().into(),
                t["dir"].as_str().unwrap().into(),
                t["kind"].as_str().unwrap().into(),
                t["payload"].as_u64().unwrap(),
                t["bytes"].as_u64().unwrap(),
            )
        })
        .collect();
    let t = |s: &str, d: &str, k: &str, p, b| (s.into(), d.into(), k.into(), p, b);
    assert_eq!(
        tlps,
        vec![
            t("requester", "down", "MWr", 64, 88),
            t("requester", "up", "MWr", 64, 88),
            t("responder", "up", "MWr", 8, 32),
        ]
    );
}

#[test]
fn explain_doorbell_gather_write_matches_sim_pcie() {
    // tests/sim_pcie.rs doorbell_wqe_fetch_gather_and_cqe: 32 bytes gathered.
    let v = json(&["explain", "write", "--size", "32", "--mode", "db", "--json"]);
    assert_eq!(
        per_message(&v),
        [1.0, 2.0, 1.0, (32 + 84 + 52) as f64, (24 + 24 + 88) as f64]
    );
    assert_eq!(v["per_message"]["completions"], 2);
    assert_eq!(v["per_message_responder"]["bytes_up"], 56);
    // The doorbell is the WQE's first 8 bytes.
    let wqe = v["wqes"][0]["hex"].as_str().unwrap();
    assert_eq!(v["mmio"][0]["offset"], 2048);
    assert_eq!(v["mmio"][0]["hex"].as_str().unwrap(), &wqe[..16]);
}

#[test]
fn explain_batch_of_sixteen_averages_over_the_batch() {
    // tests/sim_pcie.rs a_batch_of_sixteen_rings_once, per message.
    let v = json(&[
        "explain",
        "write",
        "--inline",
        "--batch",
        "16",
        "--signal-every",
        "16",
        "--mode",
        "db",
        "--json",
    ]);
    assert_eq!(v["wqes"].as_array().unwrap().len(), 16);
    assert_eq!(v["dbrec"], 16);
    assert_eq!(v["mmio"].as_array().unwrap().len(), 1);
    let total = per_message(&v).map(|x| x * 16.0);
    assert_eq!(
        total,
        [
            1.0,
            2.0,
            1.0,
            (32 + 4 * (256 + 20)) as f64,
            (2 * 24 + 88) as f64
        ]
    );
}

#[test]
fn explain_batch_with_blueflame_copies_the_last_wqe() {
    let v = json(&[
        "explain", "write", "--inline", "--batch", "4", "--mode", "bf-last", "--json",
    ]);
    let wqes = v["wqes"].as_array().unwrap();
    assert_eq!(wqes.len(), 4);
    let mmio = v["mmio"].as_array().unwrap();
    assert_eq!(mmio.len(), 1);
    let last = wqes[3]["hex"].as_str().unwrap();
    assert_eq!(&mmio[0]["hex"].as_str().unwrap()[..last.len()], last);
    // The first three WQEs are fetched by DMA (3 WQEBBs, one read answered by one
    // completion of 192 bytes), the last is not; one CQE per WR.
    let total = per_message(&v).map(|x| x * 4.0);
    assert_eq!(
        total,
        [
            1.0,
            1.0,
            4.0,
            (88 + 3 * 64 + 20) as f64,
            (24 + 4 * 88) as f64
        ]
    );
}

#[test]
fn explain_knows_every_operation() {
    // (op, DS of an 8-byte gathered WQE, responder DMA reads: receive record + WQE fetch,
    // READ source, atomic operand).
    for (op, ds, resp_reads) in [
        ("write", 3, 0),
        ("write_imm", 3, 2),
        ("send", 2, 2),
        ("send_imm", 2, 2),
        ("read", 3, 1),
        ("cas", 4, 1),
        ("faa", 4, 1),
    ] {
        let v = json(&["explain", op, "--json"]);
        assert_eq!(v["wqes"][0]["ds"], ds, "{op}");
        assert_eq!(v["per_message_responder"]["dma_reads"], resp_reads, "{op}");
    }
}

#[test]
fn explain_rejects_what_the_driver_cannot_post() {
    fails_with(&["explain", "read", "--inline"], "cannot carry inline");
    fails_with(&["explain", "faa", "--size", "16"], "atomics move 8 bytes");
    fails_with(&["explain", "write", "--size", "4", "--sge", "5"], "--sge");
}

#[test]
fn explain_human_output_names_segments() {
    let (ok, out, err) = perf(&["explain", "cas"]);
    assert!(ok, "{err}");
    for needle in [
        "ctrl",
        "raddr",
        "atomic",
        "data",
        "UAR+0x800",
        "per message, requester",
    ] {
        assert!(out.contains(needle), "{needle:?} missing:\n{out}");
    }
}

#[test]
fn pcie_table_steps_and_rates() {
    let v = json(&["pcie", "--json"]);
    let rows = v["rows"].as_array().unwrap();
    let step = |name: &str| {
        rows.iter()
            .find(|r| r["step"].as_str().unwrap().starts_with(name))
            .unwrap_or_else(|| panic!("no row {name}"))
    };
    // 8 bytes gathered: doorbell 32, WQE 84, payload 28 down; 2 MRd 48 + CQE 88 up.
    assert_eq!(
        per_message(step("doorbell, DMA gather")),
        [1.0, 2.0, 1.0, 144.0, 136.0]
    );
    assert_eq!(per_message(step("+ inline")), [1.0, 1.0, 1.0, 116.0, 112.0]);
    let bf = step("+ BlueFlame");
    assert_eq!(per_message(bf), [1.0, 0.0, 1.0, 88.0, 88.0]);
    assert_eq!(
        per_message(step("+ unsignaled")),
        [1.0, 0.0, 0.0, 88.0, 0.0]
    );
    // Gen3 x16: 8 GT/s x 16 x 128/130 / 8 bytes/s, 88 bytes each way.
    let gen3 = 8e9 * 16.0 * 128.0 / 130.0 / 8.0 / 88.0 / 1e6;
    assert!((bf["max_mmsg_per_s"]["gen3"].as_f64().unwrap() - gen3).abs() < 1e-9);
    // Responder: a WRITE of 8 bytes is one 32-byte MWr; a SEND also fetches the receive
    // WQE and reads the receive doorbell record, and writes a CQE.
    assert_eq!(
        per_message(step("inbound WRITE")),
        [0.0, 0.0, 1.0, 0.0, 32.0]
    );
    let send = step("inbound SEND");
    assert_eq!(send["per_message"]["dma_reads"], 2);
    assert_eq!(send["per_message"]["dma_writes"], 2);
    // Both batch policies: rdma-core's rings the batch with the 8-byte doorbell (the NIC
    // fetches all 32 WQEs), BlueFlameLast copies the last one (it fetches 31).
    let rule = per_message(step("batch of 32, rdma-core's rule"));
    let last = per_message(step("batch of 32, last WQE BlueFlame"));
    assert_eq!(
        (rule[0], rule[1]),
        (last[0], last[1]),
        "one MMIO, one read per batch"
    );
    assert!(
        rule[3] > last[3],
        "the copied WQE is not read: {rule:?} {last:?}"
    );
    // 14 posting and responder rows, then 10 memory rows (2 sides x 5).
    assert_eq!(rows.len(), 24);
}

/// The row of `v` whose step starts with `name`.
fn row<'a>(v: &'a Value, name: &str) -> &'a Value {
    v["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["step"].as_str().unwrap().starts_with(name))
        .unwrap_or_else(|| panic!("no row {name}"))
}

#[test]
fn pcie_options_add_the_traffic_the_research_rows_miss() {
    let plain = json(&["pcie", "--json"]);
    let all = json(&[
        "pcie",
        "--json",
        "--eq-rearm",
        "--retry-refetch",
        "--bf-evict-every",
        "2",
        "--completions",
        "rcb",
    ]);
    // Row 1 with an armed CQ: the arm doorbell (8+24 down), the EQE (64+24 up) and the
    // MSI-X (4+24 up); with --eq-rearm the driver's 4-byte EQ doorbell too (4+24 down).
    let event = "row 1 + completion event";
    assert_eq!(
        per_message(row(&plain, event)),
        [2.0, 2.0, 3.0, 176.0, 252.0]
    );
    assert_eq!(per_message(row(&all, event)), [3.0, 2.0, 3.0, 204.0, 252.0]);
    // Row 1 lost once: the payload gathered again (24 up, 8+20 down); with --retry-refetch
    // the 64-byte WQE read again too (24 up, 64+20 down).
    let lost = "row 1, request lost once";
    assert_eq!(
        per_message(row(&plain, lost)),
        [1.0, 3.0, 1.0, 172.0, 160.0]
    );
    assert_eq!(per_message(row(&all, lost)), [1.0, 4.0, 1.0, 256.0, 184.0]);
    // Every second BlueFlame copy of the completion-every-32 row is fetched from the ring.
    let every = "completion every 32";
    assert_eq!(per_message(row(&plain, every))[1], 0.0);
    assert_eq!(per_message(row(&all, every))[1], 0.5);
    // 32 WQEs of one doorbell: 2048 bytes, 8 completions of 256 or 16 of 128.
    let batch = "doorbell batching of 32";
    assert_eq!(row(&plain, batch)["per_message"]["completions"], 0.25);
    assert_eq!(row(&all, batch)["per_message"]["completions"], 0.5);
    assert_eq!(plain["link"]["completions"], "mps");
    assert_eq!(plain["link"]["optional"], "none");
    assert_eq!(all["link"]["completions"], "rcb");
}

#[test]
fn pcie_cost_per_message_grows_with_the_qps_past_the_context_cache() {
    // An 8-entry context cache, messages round robin over n QP pairs, measured after a
    // warming pass. Row 1's requester uses n QP contexts, one key and one CQ: up to 6 QPs
    // they stay cached, from 7 every message reads its QP context (232+20 down, 24 up). The
    // responder of a WRITE uses n QP contexts and one key: it misses from 8 QPs.
    let at = |n: &str| json(&["pcie", "--json", "--ctx-cache", "8", "--qps", n]);
    let (six, seven, eight) = (at("6"), at("7"), at("8"));
    let textbook = "doorbell, DMA gather";
    assert_eq!(
        per_message(row(&six, textbook)),
        [1.0, 2.0, 1.0, 144.0, 136.0]
    );
    assert_eq!(
        per_message(row(&seven, textbook)),
        [1.0, 3.0, 1.0, 144.0 + 252.0, 136.0 + 24.0]
    );
    let write = "inbound WRITE";
    assert_eq!(per_message(row(&seven, write)), [0.0, 0.0, 1.0, 0.0, 32.0]);
    assert_eq!(
        per_message(row(&eight, write)),
        [0.0, 1.0, 1.0, 252.0, 56.0]
    );
    assert_eq!(row(&eight, write)["messages"], 8);
    assert_eq!(eight["qps"], 8);
}

#[test]
fn pcie_headers_name_the_link_and_the_options() {
    for (args, link, options) in [
        (&["pcie"][..], "RCB 128, completions up to MPS", "none"),
        (
            &["pcie", "--tlp-overhead", "kalia"][..],
            "RCB 128, a completion per RCB",
            "none",
        ),
        (
            &["pcie", "--eq-rearm", "--ctx-cache", "4"][..],
            "completions up to MPS",
            "EQ doorbell per event (4 B); context cache of 4 (misses read QPC 232 B, CQC 64 B, \
             mkey 64 B), warmed by one pass",
        ),
    ] {
        let (ok, out, err) = perf(args);
        assert!(ok, "{err}");
        assert!(out.contains(link), "{args:?}: {out}");
        let want = format!("# optional NIC traffic: {options}\n");
        assert!(out.contains(&want), "{args:?}: {out}");
    }
}

#[test]
fn pcie_kalia_overheads_change_the_bytes() {
    let v = json(&["pcie", "--json", "--tlp-overhead", "kalia"]);
    let bf = &v["rows"][2];
    assert_eq!(bf["step"], "+ BlueFlame");
    assert_eq!(per_message(bf)[3..], [90.0, 90.0]);
    assert_eq!(v["link"]["cpld_overhead"], 22);
}

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

/// The lines of `out` from `first` up to the next perftest rule.
fn block<'a>(out: &'a str, first: &str) -> Vec<&'a str> {
    let rule = "-".repeat(87);
    out.lines()
        .skip_while(|l| !l.starts_with(first))
        .take_while(|l| *l != rule)
        .collect()
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

#[test]
fn perftest_flags_not_taken_say_why() {
    fails_with(
        &["write_bw", "--use_cuda=0"],
        "--use_cuda: memory and placement flags come with the memory issue (issue 17)",
    );
    fails_with(&["send_bw", "-g"], "multicast is not in mlx5-perf");
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
fn docs_pcie_md_shows_the_tables_the_tool_prints() {
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/pcie.md"))
        .expect("docs/pcie.md");
    for args in [
        &["pcie"][..],
        &["pcie", "--tlp-overhead", "kalia"][..],
        &["pcie", "--completions", "rcb"][..],
        &[
            "pcie",
            "--bf-evict-every",
            "2",
            "--eq-rearm",
            "--retry-refetch",
        ][..],
        &["pcie", "--ctx-cache", "64", "--qps", "32"][..],
        &["pcie", "--ctx-cache", "64", "--qps", "128"][..],
        &["pcie", "--memic"][..],
    ] {
        let (ok, out, err) = perf(args);
        assert!(ok, "{err}");
        assert!(
            doc.contains(&format!("```\n{out}```")),
            "docs/pcie.md is stale: regenerate the table of `cargo run --release -p mlx5-perf -- {}`:\n{out}",
            args.join(" ")
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
    fails_with(&["write_bw", "--typical_pkt_size", "64"], "raw Ethernet");
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

/// The memory rows: 16 translations per 64 KiB message and side on 4 KiB pages against 2
/// per 4 MiB on 2 MiB pages, rings on 4 KiB against 2 MiB pages, and the first touch of
/// on-demand buffers.
#[test]
fn pcie_memory_rows_show_what_page_size_and_odp_cost() {
    let v = json(&["pcie", "--json"]);
    let rows = v["rows"].as_array().unwrap();
    let row = |step: &str, side: &str| {
        let r = rows
            .iter()
            .find(|r| r["step"].as_str().unwrap().starts_with(step) && r["side"] == side)
            .unwrap_or_else(|| panic!("no {side} row {step}"));
        per_message(r)
    };
    let small = "64K WRITEs over 4 MiB, 4 KiB pages";
    let huge = "64K WRITEs over 4 MiB, 2 MiB pages";
    // The responder writes the payload: its reads are its translations.
    assert_eq!(row(small, "responder")[1], 16.0);
    assert_eq!(row(huge, "responder")[1], 2.0 / 64.0);
    let (rs, rh) = (row(small, "requester"), row(huge, "requester"));
    assert_eq!(rs[1] - rh[1], 16.0 - 2.0 / 64.0);
    assert_eq!(rs[3] - rh[3], (16.0 - 2.0 / 64.0) * 28.0);
    // First touch: the responder adds the fault's EQE and MSI-X and a translation read to an
    // inbound WRITE; the requester sends the WRITE twice (RNR NAK) and faults once itself.
    let inbound = row("inbound WRITE", "responder");
    let odp = row("row 1, first touch of on-demand", "responder");
    assert_eq!(
        [
            odp[1] - inbound[1],
            odp[2] - inbound[2],
            odp[3] - inbound[3]
        ],
        [1.0, 2.0, 28.0]
    );
    assert_eq!(odp[4] - inbound[4], 24.0 + 88.0 + 28.0);
    let first = row("doorbell, DMA gather", "requester");
    let odp = row("row 1, first touch of on-demand", "requester");
    assert_eq!([odp[0], odp[1], odp[2]], [1.0, 4.0, 3.0]);
    assert_eq!(first[1], 2.0);
    // Rings (translation cache with rings): over 128 messages the requester translates 2
    // send-ring and 2 CQ pages on 4 KiB pages, one of each on 2 MiB pages (8-byte MTT
    // reads: MRd up, CplD of 28 B down); the responder's one page of region is the same.
    let small = "inline WRITEs, rings on 4 KiB pages";
    let huge = "inline WRITEs, rings on 2 MiB pages";
    let (rs, rh) = (row(small, "requester"), row(huge, "requester"));
    assert_eq!(rs[1], rh[1] + 2.0 / 128.0);
    assert_eq!(rs[3], rh[3] + 2.0 / 128.0 * 28.0);
    assert_eq!(row(small, "responder"), row(huge, "responder"));
}

/// The MEMIC rows (docs/pcie.md, `pcie --memic`): per signaled BlueFlame WRITE, the payload
/// crosses down as the CPU's 64-byte writes (88 bytes each on the link) instead of the NIC's
/// read requests up (24 each, MRRS 512) and completions down (256 + 20 each, MPS 256).
#[test]
fn pcie_memic_rows_trade_the_dma_read_for_cpu_writes() {
    let v = json(&["pcie", "--memic", "--json"]);
    let rows = v["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 8);
    let row = |step: String| {
        per_message(
            rows.iter()
                .find(|r| r["step"] == step.as_str())
                .unwrap_or_else(|| panic!("no row {step}")),
        )
    };
    for (size, reads) in [(256, 1.0), (2048, 4.0)] {
        let gather = row(format!("{size} B, BlueFlame, DMA gather"));
        let memic = row(format!("{size} B, BlueFlame, from device memory (MEMIC)"));
        let (lines, completions) = (f64::from(size / 64), f64::from(size / 256));
        // [MMIO, MRd, MWr, down, up]: BlueFlame 88 down, the CQE 88 up.
        assert_eq!(
            gather,
            [
                1.0,
                reads,
                1.0,
                88.0 + completions * 276.0,
                reads * 24.0 + 88.0
            ]
        );
        assert_eq!(memic, [1.0 + lines, 0.0, 1.0, (1.0 + lines) * 88.0, 88.0]);
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

#[test]
fn explain_json_lists_every_cqe_as_the_nic_wrote_it() {
    let v = json(&["explain", "write", "--size", "8", "--inline", "--json"]);
    // One signaled WRITE: its requester CQE, 64 bytes: byte_cnt the model's poison for a
    // requester CQE (44..48), the model's stepped clock at 1 (48..56), send opcode 0x08 and
    // QPN 0x100 (56..60), WQE counter 0, opcode REQ with owner 0 (op_own 0x00).
    let expect = format!("{}8badf00d{:016x}0800010000000000", "00".repeat(44), 1);
    assert_eq!(
        v["cqes"],
        serde_json::json!([{"index": 0, "hex": expect}]),
        "{}",
        v["cqes"]
    );
    // Four WRITEs in one doorbell, a CQE every second: two CQEs, one clock tick apart.
    let v = json(&[
        "explain",
        "write",
        "--size",
        "8",
        "--inline",
        "--batch",
        "4",
        "--signal-every",
        "2",
        "--json",
    ]);
    let cqes = v["cqes"].as_array().unwrap();
    assert_eq!(cqes.len(), 2);
    for (i, c) in cqes.iter().enumerate() {
        assert_eq!(c["index"], i);
        let hex = c["hex"].as_str().unwrap();
        assert_eq!(hex.len(), 128);
        assert_eq!(
            &hex[96..112],
            format!("{:016x}", i + 1),
            "timestamp of CQE {i}"
        );
    }
}

#[test]
fn pcie_compression_rows_count_the_cqe_writes_of_each_layout() {
    let v = json(&["pcie", "--cqe-compression", "--json"]);
    let plain = json(&["pcie", "--json"])["rows"].as_array().unwrap().len();
    assert_eq!(v["rows"].as_array().unwrap().len(), plain + 12);
    let dma_writes = |name: &str| row(&v, name)["per_message"]["dma_writes"].as_f64().unwrap();
    // A CQE MWr is 88 bytes; the WQE fetch adds 3 bytes up per message in bursts.
    for burst in [1, 8, 16, 64] {
        let whole = format!("burst of {burst}, CQE each, whole CQEs");
        assert_eq!(dma_writes(&whole), 1.0, "{whole}");
    }
    // Basic: a title and one array per 8 (1 + ceil(N / 8) writes); enhanced: a whole title,
    // then a slot per 7 (1 + ceil((N - 1) / 7)); a lone CQE is never compressed.
    for (burst, basic, enhanced) in [(1, 1, 1), (8, 2, 2), (16, 3, 4), (64, 9, 10)] {
        let b = format!("burst of {burst}, CQE each, basic compression");
        let e = format!("burst of {burst}, CQE each, enhanced compression");
        assert_eq!(dma_writes(&b), f64::from(basic) / f64::from(burst), "{b}");
        assert_eq!(
            dma_writes(&e),
            f64::from(enhanced) / f64::from(burst),
            "{e}"
        );
    }
    assert_eq!(
        row(&v, "burst of 64, CQE each, basic compression")["per_message"]["bytes_up"],
        (9.0 * 88.0 + 8.0 * 24.0) / 64.0
    );
}

#[test]
fn pcie_scatter_rows_save_the_payload_write_up_to_the_cqe_limit() {
    let rows = |size: &str| {
        json(&[
            "pcie",
            "--op",
            "send",
            "--size",
            size,
            "--scatter-to-cqe",
            "--json",
        ])
    };
    let up = |v: &Value, name: &str| {
        let m = &row(v, name)["per_message"];
        (
            m["dma_writes"].as_f64().unwrap(),
            m["bytes_up"].as_f64().unwrap(),
        )
    };
    // Up the link per 32-byte SEND: two read requests (record, WQE: 48 B), the payload MWr
    // (32 + 24) and the CQE MWr (64 + 24, or 128 + 24); scatter to CQE drops the payload's.
    let v = rows("32");
    assert_eq!(up(&v, "inbound SEND (receive"), (2.0, 48.0 + 56.0 + 88.0));
    assert_eq!(
        up(&v, "inbound SEND, 128-byte CQEs"),
        (2.0, 48.0 + 56.0 + 152.0)
    );
    assert_eq!(
        up(&v, "inbound SEND, scatter to CQE, 64-byte"),
        (1.0, 48.0 + 88.0)
    );
    assert_eq!(
        up(&v, "inbound SEND, scatter to CQE, 128-byte"),
        (1.0, 48.0 + 152.0)
    );
    // 64 bytes: over the 64-byte CQE's 32, within the 128-byte CQE's 64.
    let v = rows("64");
    assert_eq!(
        up(&v, "inbound SEND, scatter to CQE, 64-byte"),
        (2.0, 48.0 + 88.0 + 88.0)
    );
    assert_eq!(
        up(&v, "inbound SEND, scatter to CQE, 128-byte"),
        (1.0, 48.0 + 152.0)
    );
    // Without the flag, no such rows.
    let plain = json(&["pcie", "--op", "send", "--json"])["rows"]
        .as_array()
        .unwrap()
        .len();
    assert_eq!(rows("8")["rows"].as_array().unwrap().len(), plain + 3);
}

#[test]
fn explain_shows_the_send_that_came_in_the_cqe() {
    let v = json(&[
        "explain",
        "send",
        "--size",
        "32",
        "--scatter-to-cqe",
        "64",
        "--json",
    ]);
    let writes: Vec<&str> = v["tlps"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["side"] == "responder" && t["kind"] == "MWr")
        .map(|t| t["purpose"].as_str().unwrap())
        .collect();
    assert_eq!(writes, ["Cqe"]);
    fails_with(
        &["explain", "send", "--scatter-to-cqe", "96"],
        "--scatter-to-cqe takes the CQE size: 64 or 128",
    );
    fails_with(
        &[
            "explain",
            "send",
            "--transport",
            "ud",
            "--scatter-to-cqe",
            "64",
        ],
        "--scatter-to-cqe: RC and UC receives only",
    );
}

#[test]
fn explain_shows_the_compressed_entries_as_written() {
    let explain = |layout: &str| {
        let args = ["explain", "write", "--inline", "--batch", "10"];
        let v = json(&[&args[..], &["--cqe-compression", layout, "--json"]].concat());
        let entries = v["compressed_cq"].as_array().unwrap().clone();
        assert_eq!(entries.len(), 10, "{layout}");
        let text: Vec<String> = entries
            .iter()
            .map(|e| e["text"].as_str().unwrap().to_string())
            .collect();
        (v, entries, text)
    };
    let (v, entries, text) = explain("basic");
    assert!(text[0].starts_with("title of a basic block of 10 completions"));
    assert!(text[1].starts_with("mini-CQE array 0:"));
    assert!(text[1].contains("mini 7: wqe_counter 7, opcode 0x08 RDMA_WRITE"));
    assert_eq!(text[2], "(taken by the block, not written)");
    assert!(text[8].contains("mini 1: wqe_counter 9"));
    let title = entries[0]["hex"].as_str().unwrap();
    assert_eq!(&title[88..96], "0000000a", "byte_cnt = 10");
    assert_eq!(&title[126..], "0c");
    assert_eq!(v["per_message"]["dma_writes"], 0.3);

    let (_, _, text) = explain("enhanced");
    assert!(text[0].starts_with("CQE: opcode 0"));
    assert!(text[1].starts_with("compressed slot of 7 mini-CQEs, validity count 0, op_own 0x6c"));
    assert!(text[8].starts_with("compressed slot of 2 mini-CQEs"));
    assert_eq!(text[9], "(taken by the slot above, not written)");
    assert!(json(&["explain", "write", "--json"])["compressed_cq"].is_null());
}

/// `-c UC`: the WRITE and SEND tests run over the exchange; a UC WRITE costs the link what
/// an RC WRITE does (one BlueFlame copy, the payload read, one MWr at the responder).
#[test]
fn uc_runs_write_and_send_over_the_tcp_exchange() {
    let v = json(&["write_bw", "-c", "UC", "-n", "200", "-s", "64", "--json"]);
    assert_eq!(v["header"]["params"]["connection"], "UC");
    let r = &v["results"][0];
    assert_eq!(
        (r["bytes"].as_u64(), r["iterations"].as_u64()),
        (Some(64), Some(200))
    );
    let p = &r["pcie_per_message"];
    assert_eq!(p["client"]["mmio_writes"], 1.0);
    assert_eq!(p["client"]["dma_reads"], 1.0);
    assert_eq!(p["server"]["dma_writes"], 1.0);
    assert_eq!(p["server"]["bytes_up"], 88.0);
    let v = json(&["send_bw", "-c", "UC", "-n", "200", "-s", "64", "--json"]);
    assert_eq!(v["results"][0]["completions"]["server"]["recv"], 200);
    let (ok, out, err) = perf(&["send_lat", "-c", "UC", "-n", "50"]);
    assert!(ok, "{err}");
    assert!(out.contains(" Connection type : UC"), "{out}");
    fails_with(
        &["read_bw", "-c", "UC"],
        "-c UC: UC has no READ or atomic tests",
    );
}

/// `-c UD`: the records carry perftest's Q_Key; every message is one datagram of ctrl, the
/// 48-byte datagram segment and a data segment (80 bytes: two 64-byte BlueFlame chunks),
/// and lands after the receive's 40-byte GRH area (not written on InfiniBand without a
/// GRH: the payload's MWr and the CQE only).
#[test]
fn ud_send_bw_and_send_lat_over_the_tcp_exchange() {
    let v = json(&["send_bw", "-c", "UD", "-n", "200", "-s", "64", "--json"]);
    let h = &v["header"];
    assert_eq!(h["params"]["connection"], "UD");
    assert_eq!(h["local"][0]["qkey"], 0x1111_1111);
    assert_eq!(h["remote"][0]["qkey"], 0x1111_1111);
    assert!(h["local"][0].get("dct").is_none());
    let r = &v["results"][0];
    assert_eq!(
        (r["bytes"].as_u64(), r["iterations"].as_u64()),
        (Some(64), Some(200))
    );
    assert_eq!(r["completions"]["server"]["recv"], 200);
    let p = &r["pcie_per_message"];
    assert_eq!(p["client"]["mmio_writes"], 2.0);
    // Two BlueFlame chunks (2 x (64 + 24)) and the payload's CplD (64 + 20).
    assert_eq!(p["client"]["bytes_down"], 260.0);
    assert_eq!(p["server"]["dma_writes"], 2.0);
    let v = json(&["send_lat", "-c", "UD", "-n", "100", "-s", "32", "--json"]);
    let r = &v["results"][0];
    assert_eq!(v["header"]["params"]["inline_size"], 188);
    assert_eq!(
        (r["bytes"].as_u64(), r["iterations"].as_u64()),
        (Some(32), Some(100))
    );
    // Each side: its SEND's CQE, the peer's payload and its receive CQE.
    for side in ["client", "server"] {
        assert_eq!(r["pcie_per_message"][side]["mmio_writes"], 2.0, "{side}");
        assert_eq!(r["pcie_per_message"][side]["dma_writes"], 3.0, "{side}");
    }
    // -a stops at the MTU.
    let v = json(&[
        "send_bw", "-c", "UD", "-a", "-n", "20", "-m", "256", "--json",
    ]);
    let sizes: Vec<u64> = v["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["bytes"].as_u64().unwrap())
        .collect();
    assert_eq!(sizes, [2, 4, 8, 16, 32, 64, 128, 256]);
    fails_with(
        &["send_bw", "-c", "UD", "-s", "8192"],
        "Max message size in UD cannot be greater than MTU (4096)",
    );
    fails_with(
        &["write_bw", "-c", "UD"],
        "-c UD: UD runs send_lat and send_bw only",
    );
}

/// The receiving side's link bytes up and DMA writes per message of a 64-byte UD `send_bw`
/// with `extra` flags.
fn ud_receive_pcie(extra: &[&str]) -> (f64, Option<f64>) {
    let mut args = vec!["send_bw", "-c", "UD", "-n", "200", "-s", "64", "--json"];
    args.extend_from_slice(extra);
    let v = json(&args);
    let p = &v["results"][0]["pcie_per_message"]["server"];
    (p["bytes_up"].as_f64().unwrap(), p["dma_writes"].as_f64())
}

/// `-x` on InfiniBand gives every path a GRH, as perftest sets `is_global` whenever `-x` is
/// given: each UD datagram then carries one and its receive gets the 40-byte GRH written
/// (40 bytes more up the link per message); the model's ports have GID index 0 alone.
#[test]
fn ud_with_x_on_infiniband_sends_a_grh() {
    let (plain, plain_writes) = ud_receive_pcie(&[]);
    let (global, global_writes) = ud_receive_pcie(&["-x", "0"]);
    assert_eq!(global - plain, 40.0);
    assert_eq!(global_writes, plain_writes);
    fails_with(
        &["send_bw", "-c", "UD", "-n", "20", "-x", "1"],
        "-x 1: the model's ports have one GID, index 0",
    );
}

/// The model's GID of the port of LID `lid` as perftest prints it (`PERF_GID_FMT`, the
/// bytes in decimal): `fe80::` + the modified EUI-64 of the MAC `02:00:00:00:00:LID`.
fn model_gid_line(lid: u8) -> String {
    format!(" GID: 254:128:00:00:00:00:00:00:00:00:00:255:254:00:00:{lid:02}")
}

/// `--force-link Ethernet` puts the model's ports on RoCE v2, as perftest runs on an
/// Ethernet port: `Link type : Ethernet`, the GID index perftest picks there (0, the
/// model's only GID) and a `GID:` line under each address, LID 0. The server's NIC is the
/// fabric's first (LID 1 on InfiniBand), the client's the second.
#[test]
fn ud_send_lat_and_rc_write_bw_over_roce_print_perftests_gid_lines() {
    for (args, connection) in [
        (&["send_lat", "-c", "UD", "-n", "50"][..], "UD"),
        (&["write_bw", "-n", "200", "-s", "64"][..], "RC"),
    ] {
        let mut args = args.to_vec();
        args.extend(["--force-link", "Ethernet"]);
        let (ok, out, err) = perf(&args);
        assert!(ok, "{args:?}: {err}");
        let lines: Vec<&str> = out.lines().collect();
        for line in [
            " Link type       : Ethernet",
            " GID index       : 0",
            "\tTransport type : IB",
        ] {
            assert!(
                lines.iter().any(|l| l.ends_with(line)),
                "{line:?} missing:\n{out}"
            );
        }
        assert!(out.contains(&format!(" Connection type : {connection}\t")));
        let addresses = block(&out, " local address:");
        assert_eq!(addresses.len(), 4, "{out}");
        assert!(addresses[0].starts_with(" local address: LID 0000 QPN 0x"));
        assert_eq!(addresses[1], model_gid_line(2));
        assert!(addresses[2].starts_with(" remote address: LID 0000 QPN 0x"));
        assert_eq!(addresses[3], model_gid_line(1));
    }
    // The JSON header's records carry the RoCE port's LID 0.
    let (ok, out, err) = perf(&[
        "send_lat",
        "-c",
        "UD",
        "-n",
        "20",
        "--force-link",
        "ethernet",
        "--json",
    ]);
    assert!(ok, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["header"]["local"][0]["lid"], 0);
    // InfiniBand without -x: no GID index, no GID lines (perftest's gid_index -1).
    let (ok, out, _) = perf(&["send_lat", "-c", "UD", "-n", "20", "--force-link", "IB"]);
    assert!(ok);
    assert!(out.contains(" Link type       : IB\n"), "{out}");
    assert!(!out.contains("GID"), "{out}");
}

/// Every test runs over RoCE on the model where perftest runs it (RC, UC, UD, DC), and a
/// UD receive there always gets the 40-byte header written: the same PCIe bytes per
/// message as a UD datagram with a GRH on InfiniBand (`-x 0`), 40 more up than without.
#[test]
fn every_test_runs_over_roce_and_a_ud_receive_gets_the_header() {
    for (test, connection) in [
        ("write_lat", "RC"),
        ("read_bw", "RC"),
        ("atomic_lat", "RC"),
        ("send_bw", "UC"),
        ("write_lat", "UC"),
        ("send_bw", "UD"),
        ("send_lat", "DC"),
        ("read_lat", "DC"),
        ("atomic_bw", "DC"),
        ("write_bw", "DC"),
    ] {
        let mut args = vec![
            test,
            "-c",
            connection,
            "-n",
            "20",
            "--force-link",
            "Ethernet",
            "--json",
        ];
        // The model's RoCE port under its netdev's 1500 bytes: active MTU 1024, which UD
        // sizes must be cut to (mlx5-perf refuses a larger default at setup).
        if connection == "UD" {
            args.extend(["-m", "1024"]);
        }
        let v = json(&args);
        assert_eq!(v["results"][0]["iterations"], 20, "{args:?}");
        assert_eq!(v["header"]["remote"][0]["lid"], 0, "{args:?}");
    }
    fails_with(
        &[
            "send_bw",
            "-c",
            "UD",
            "-n",
            "20",
            "--force-link",
            "Ethernet",
        ],
        "-c UD: 4096-byte messages are more than the path MTU 1024",
    );
    let roce = ud_receive_pcie(&["--force-link", "Ethernet"]);
    assert_eq!(roce, ud_receive_pcie(&["-x", "0"]));
    assert_eq!(roce.0 - ud_receive_pcie(&[]).0, 40.0);
}

/// `--force-link` is the model's: with a device (`-d`) it is refused in one line, as is a
/// value that names no link layer; `-x` beyond the model's one GID is refused.
#[test]
fn force_link_refusals() {
    fails_with(
        &["write_lat", "-d", "mlx5_0", "--force-link", "Ethernet"],
        "--force-link sets the model's link layer",
    );
    fails_with(
        &["write_lat", "--force-link", "Token-Ring"],
        "the link layer is IB or Ethernet",
    );
    fails_with(
        &[
            "write_lat",
            "-n",
            "20",
            "--force-link",
            "Ethernet",
            "-x",
            "3",
        ],
        "-x 3: the model's ports have one GID, index 0",
    );
    let (ok, _, err) = perf(&["write_lat", "-d", "mlx5_0", "--force-link", "Ethernet"]);
    assert!(!ok);
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
}

/// `-c DC`: DCIs send to the peer's DCTs, whose numbers and perftest's DC key ride in the
/// records; a DC WQE carries the 48-byte datagram segment, so the smallest WRITE takes two
/// BlueFlame chunks where RC takes one.
#[test]
fn dc_write_lat_and_send_bw_over_the_tcp_exchange() {
    let v = json(&["write_lat", "-c", "DC", "-n", "100", "--json"]);
    let h = &v["header"];
    assert_eq!(h["params"]["connection"], "DC");
    assert_eq!(h["params"]["srq"], true);
    assert_eq!(h["params"]["inline_size"], 150);
    for end in ["local", "remote"] {
        assert_eq!(h[end][0]["dct"]["key"], 0xffee_ddccu64, "{end}");
        assert!(h[end][0]["dct"]["number"].as_u64().is_some(), "{end}");
    }
    let r = &v["results"][0];
    assert_eq!(r["iterations"], 100);
    for side in ["client", "server"] {
        let p = &r["pcie_per_message"][side];
        assert_eq!(p["mmio_writes"], 2.0, "{side}");
        assert_eq!(p["bytes_down"], 176.0, "{side}");
        // The WQE's CQE and the peer's 2-byte payload (2 + 24 B).
        assert_eq!(p["dma_writes"], 2.0, "{side}");
    }
    let v = json(&["send_bw", "-c", "DC", "-n", "200", "-s", "64", "--json"]);
    let r = &v["results"][0];
    assert_eq!(r["completions"]["server"]["recv"], 200);
    assert_eq!(r["pcie_per_message"]["server"]["dma_writes"], 2.0);
    for (test, op) in [
        ("read_bw", "rdma_read"),
        ("atomic_bw", "fetch_add"),
        ("write_bw", "rdma_write"),
    ] {
        let v = json(&[test, "-c", "DC", "-n", "50", "-Q", "1", "--json"]);
        assert_eq!(v["results"][0]["completions"]["client"][op], 50, "{test}");
    }
    let (ok, out, err) = perf(&["write_lat", "-c", "DC", "-n", "20"]);
    assert!(ok, "{err}");
    assert!(
        out.contains(" Connection type : DC\t\tUsing SRQ      : ON"),
        "{out}"
    );
    assert!(
        out.lines()
            .any(|l| l.starts_with(" remote address:") && l.contains(" DCTN 0x")),
        "{out}"
    );
}

/// `-l 4` on UD and DC: each list of four datagram WQEs is rung with one 8-byte doorbell
/// (push_ud / push_dc, then ring_doorbell; no BlueFlame for a list), where `-l 1` takes two
/// BlueFlame chunks per message; every message still arrives or completes.
#[test]
fn ud_and_dc_post_lists_ring_once_per_list() {
    // Completions: every receive (UD), every fourth WRITE (DC; -Q follows -l).
    for (test, connection, end, opcode, count) in [
        ("send_bw", "UD", "server", "recv", 200),
        ("write_bw", "DC", "client", "rdma_write", 50),
    ] {
        let v = json(&[
            test, "-c", connection, "-l", "4", "-n", "200", "-s", "64", "--json",
        ]);
        assert_eq!(v["header"]["params"]["post_list"], 4, "{connection}");
        let r = &v["results"][0];
        assert_eq!(r["iterations"], 200, "{connection}");
        assert_eq!(r["completions"][end][opcode], count, "{connection}");
        assert_eq!(
            r["pcie_per_message"]["client"]["mmio_writes"], 0.25,
            "{connection}"
        );
    }
}

/// `--use-srq` on UD: the UD QP takes its receives (GRH area and message, each checked)
/// from the server's SRQ, which holds one receive per message (`-r` is cut to `-n`; with
/// `-q 2` the SRQ would hold half of them and UD, without RNR, may drop the rest, as in
/// perftest); every datagram arrives.
#[test]
fn ud_send_bw_with_an_srq() {
    let v = json(&[
        "send_bw",
        "-c",
        "UD",
        "--use-srq",
        "-n",
        "200",
        "-s",
        "64",
        "--json",
    ]);
    assert_eq!(v["header"]["params"]["srq"], true);
    let r = &v["results"][0];
    assert_eq!(r["iterations"], 200);
    assert_eq!(r["completions"]["server"]["recv"], 200);
}

/// `explain --batch 4` on UD and DC: four datagram WQEs of two WQEBBs each, rung with one
/// 8-byte doorbell (the first 8 bytes of the last WQE, no BlueFlame for a batch).
#[test]
fn explain_ud_and_dc_batches_ring_once() {
    for (op, transport) in [("send", "ud"), ("write", "dc")] {
        let v = explain_8_inline(op, &["--transport", transport, "--batch", "4"]);
        let wqes = v["wqes"].as_array().unwrap();
        assert_eq!(wqes.len(), 4, "{transport}");
        let mmio = v["mmio"].as_array().unwrap();
        assert_eq!(mmio.len(), 1, "{transport}");
        let last = wqes[3]["hex"].as_str().unwrap();
        assert_eq!(mmio[0]["hex"].as_str().unwrap(), &last[..16], "{transport}");
    }
}

/// `explain OP --size 8 --inline EXTRA --json`.
fn explain_8_inline(op: &str, extra: &[&str]) -> Value {
    let args = [
        &["explain", op, "--size", "8", "--inline"][..],
        extra,
        &["--json"],
    ]
    .concat();
    json(&args)
}

/// The `side` row of `v` whose step is `step`.
fn side_row<'a>(v: &'a Value, side: &str, step: &str) -> &'a Value {
    v["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["side"] == side && r["step"] == step)
        .unwrap_or_else(|| panic!("no {side} row {step}"))
}

/// `explain --transport ud`: ctrl, the 48-byte datagram segment (perftest's Q_Key, the
/// remote QPN with bit 31, the responder's LID) and the inline data: 80 bytes, two
/// BlueFlame chunks. With `--grh` the AV carries the GRH and the responder writes the GRH
/// area in front of the payload: 40 bytes more in the same MWr.
#[test]
fn explain_ud_decodes_the_datagram_segment() {
    let v = explain_8_inline("send", &["--transport", "ud"]);
    assert_eq!(v["transport"], "UD");
    let wqe = v["wqes"][0]["hex"].as_str().unwrap();
    assert_eq!(v["wqes"][0]["ds"], 5);
    // ctrl: SEND (0x0a), 5 DS.
    assert!(wqe.starts_with("0000000a"), "{wqe}");
    assert_eq!(&wqe[14..16], "05");
    let d = &v["datagram"];
    assert_eq!(d["qkey"], "0x11111111");
    assert_eq!(d["ext"], "1");
    let qpn = u32::from_str_radix(&d["remote_qpn"].as_str().unwrap()[2..], 16).unwrap();
    assert_eq!(d["dqp_dct"], format!("{:#010x}", 1u32 << 31 | qpn));
    assert_eq!(
        &wqe[32..56],
        format!("1111111100000000{:08x}", 1u32 << 31 | qpn)
    );
    assert_eq!(d["rlid"], "0x0002");
    assert_eq!(
        (d["grh"].as_str(), d["sl"].as_str()),
        (Some("0"), Some("0"))
    );
    // Two 64-byte BlueFlame chunks: the WQE, then zeros.
    let mmio = v["mmio"].as_array().unwrap();
    assert_eq!(
        (mmio[0]["offset"].as_u64(), mmio[1]["offset"].as_u64()),
        (Some(2048), Some(2112))
    );
    let chunks = format!(
        "{}{}",
        mmio[0]["hex"].as_str().unwrap(),
        mmio[1]["hex"].as_str().unwrap()
    );
    assert_eq!(&chunks[..160], wqe);
    assert_eq!(v["per_message"]["mmio_writes"], 2);
    assert_eq!(v["per_message"]["bytes_down"], 176);
    assert_eq!(v["wire"]["packets"], 1);
    let plain_up = v["per_message_responder"]["bytes_up"].as_u64().unwrap();
    let g = explain_8_inline("send", &["--transport", "ud", "--grh"]);
    assert_eq!(g["datagram"]["grh"], "1");
    assert_eq!(g["datagram"]["hop_limit"], "64");
    assert_eq!(g["datagram"]["rgid"], "fe800000000000000000000000000002");
    assert_eq!(g["per_message_responder"]["bytes_up"], plain_up + 40);
    let scatter: Vec<u64> = g["tlps"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["side"] == "responder" && t["purpose"] == "Scatter")
        .map(|t| t["payload"].as_u64().unwrap())
        .collect();
    assert_eq!(scatter, [48]);
    // The compact AV: 16 bytes, bit 31 of dqp_dct clear, no GRH fields; one DS.
    let c = explain_8_inline("send", &["--transport", "ud", "--compact-av"]);
    assert_eq!(c["wqes"][0]["ds"], 3);
    assert_eq!(c["datagram"]["ext"], "0");
    assert_eq!(c["datagram"]["dqp_dct"], format!("{qpn:#010x}"));
    assert!(c["datagram"].get("rgid").is_none(), "{}", c["datagram"]);
    let cwqe = c["wqes"][0]["hex"].as_str().unwrap();
    assert_eq!(&cwqe[32..56], format!("1111111100000000{qpn:08x}"));
    assert_eq!(c["per_message"]["mmio_writes"], 1);
    fails_with(
        &[
            "explain",
            "send",
            "--transport",
            "ud",
            "--compact-av",
            "--grh",
        ],
        "--compact-av: a compact AV carries no GRH",
    );
    fails_with(
        &["explain", "send", "--compact-av"],
        "--compact-av: address handles are UD's and DC's",
    );
    let (ok, out, err) = perf(&["explain", "send", "--transport", "ud", "--compact-av"]);
    assert!(ok, "{err}");
    assert!(out.contains("  DS  1  compact AV "), "{out}");
    assert!(out.contains("the compact AV: the first 16 bytes"), "{out}");
    let (ok, out, err) = perf(&["explain", "send", "--transport", "ud"]);
    assert!(ok, "{err}");
    for needle in [
        "over UD",
        "datagram 1/3",
        "datagram 3/3",
        "qkey        0x11111111",
        "request packets",
    ] {
        assert!(out.contains(needle), "{needle:?} missing:\n{out}");
    }
}

/// `explain --force-link Ethernet`: on RoCE ports the UD and DC datagram segments are
/// RoCE's AV as `mlx5_create_ah` fills it (the SL in bits 3..1 of `stat_rate_sl`, the UDP
/// source port of flow label 0, 0xc000, where InfiniBand has the DLID; bit 30 reserved; the
/// destination MAC and the link-local GID of the responder's port), and a message costs the
/// same TLPs and bytes as with a GRH on InfiniBand: the receive gets the 40-byte header.
#[test]
fn explain_over_roce_decodes_roces_address_vector() {
    let ib = explain_8_inline("send", &["--transport", "ud", "--grh"]);
    for transport in ["ud", "dc"] {
        let op = if transport == "ud" { "send" } else { "write" };
        let v = explain_8_inline(op, &["--transport", transport, "--force-link", "Ethernet"]);
        let d = &v["datagram"];
        assert_eq!(d["ext"], "1", "{transport}");
        assert_eq!(d["udp_sport"], "0xc000", "{transport}");
        assert!(d.get("rlid").is_none(), "{d}");
        assert_eq!(
            (d["sl"].as_str(), d["grh"].as_str(), d["hop_limit"].as_str()),
            (Some("0"), Some("0"), Some("64")),
            "{transport}"
        );
        assert_eq!(d["rmac"], "020000000002", "{transport}");
        assert_eq!(d["rgid"], "fe80000000000000000000fffe000002", "{transport}");
        let wqe = v["wqes"][0]["hex"].as_str().unwrap();
        // rlid (bytes 14..16 of the AV, after the 16-byte control segment) is the port.
        assert_eq!(&wqe[60..64], "c000", "{wqe}");
        if transport == "ud" {
            for side in ["per_message", "per_message_responder"] {
                assert_eq!(v[side], ib[side], "{side}");
            }
        }
    }
    fails_with(
        &[
            "explain",
            "send",
            "--transport",
            "ud",
            "--compact-av",
            "--force-link",
            "Ethernet",
        ],
        "--compact-av: RoCE has no compact AV",
    );
}

/// `explain --transport dc`: the datagram segment carries the DC key (BE64) and the DCT
/// number, the RC segments follow it; the first WRITE to a target is one DC connect.
/// `--transport uc`: RC's bytes and RC's link cost.
#[test]
fn explain_dc_and_uc() {
    let v = explain_8_inline("write", &["--transport", "dc"]);
    assert_eq!(v["transport"], "DC");
    assert_eq!(v["wqes"][0]["ds"], 6);
    let d = &v["datagram"];
    assert_eq!(d["dc_key"], "0x00000000ffeeddcc");
    assert_eq!(d["ext"], "1");
    assert!(d.get("qkey").is_none() && d.get("dctn").is_some(), "{d}");
    assert_eq!(v["wire"]["dc_connects"], 1);
    assert_eq!(v["per_message"]["mmio_writes"], 2);
    let (ok, out, err) = perf(&["explain", "faa", "--transport", "dc"]);
    assert!(ok, "{err}");
    let names: Vec<&str> = out
        .lines()
        .filter(|l| l.starts_with("  DS "))
        .map(|l| l[9..25].trim())
        .collect();
    assert_eq!(
        names,
        [
            "ctrl",
            "datagram 1/3",
            "datagram 2/3",
            "datagram 3/3",
            "raddr",
            "atomic",
            "data"
        ]
    );
    let rc = explain_8_inline("write", &[]);
    let uc = explain_8_inline("write", &["--transport", "uc"]);
    assert_eq!(uc["transport"], "UC");
    assert!(uc["datagram"].is_null());
    for k in ["per_message", "per_message_responder"] {
        assert_eq!(uc[k], rc[k], "{k}");
    }
    assert_eq!(
        uc["wqes"][0]["hex"].as_str().map(str::len),
        rc["wqes"][0]["hex"].as_str().map(str::len)
    );
    fails_with(
        &["explain", "write", "--transport", "ud"],
        "UD carries SEND and SEND with immediate only",
    );
    fails_with(
        &["explain", "read", "--transport", "uc"],
        "UC carries no READ or atomics",
    );
    fails_with(
        &["explain", "send", "--grh"],
        "--grh: address handles are UD's and DC's",
    );
}

/// `pcie --transports`: UC costs RC's row 3 on the link; the 48-byte AV makes a UD SEND and
/// a DC WRITE two BlueFlame chunks where RC's takes one; the GRH area is 40 bytes more at a
/// UD responder; a DCI switching between two DCTs connects for every message and
/// disconnects for all but the first, one DCT connects once.
#[test]
fn pcie_transport_rows() {
    let v = json(&["pcie", "--transports", "--json"]);
    let mmio = |side, step| {
        side_row(&v, side, step)["per_message"]["mmio_writes"]
            .as_f64()
            .unwrap()
    };
    let rc = &row(&v, "+ BlueFlame")["per_message"];
    assert_eq!(rc["mmio_writes"], 1);
    assert_eq!(
        side_row(&v, "requester", "UC RDMA WRITE, row 3")["per_message"],
        *rc
    );
    assert_eq!(mmio("requester", "UD SEND, 48-byte AV, row 3"), 2.0);
    assert_eq!(mmio("requester", "DC RDMA WRITE, one DCT, row 3"), 2.0);
    let up = |step| {
        side_row(&v, "responder", step)["per_message"]["bytes_up"]
            .as_f64()
            .unwrap()
    };
    assert_eq!(
        up("UD SEND, AV with GRH, row 3"),
        up("UD SEND, 48-byte AV, row 3") + 40.0
    );
    let wire = |step| &side_row(&v, "requester", step)["wire"];
    let one = wire("DC RDMA WRITE, one DCT, row 3");
    assert_eq!(
        (
            one["packets"].as_u64(),
            one["dc_connects"].as_u64(),
            one["dc_disconnects"].as_u64()
        ),
        (Some(8), Some(1), Some(0))
    );
    // The compact AV: one DS where the full AV takes three, so RC's one chunk again.
    let compact = side_row(&v, "requester", "UD SEND, 16-byte compact AV, row 3");
    assert_eq!(compact["per_message"]["mmio_writes"], 1);
    assert_eq!(compact["per_message"]["bytes_down"], 88);
    assert_eq!(
        mmio("requester", "DC RDMA WRITE, compact AV, one DCT, row 3"),
        1.0
    );
    let two = wire("DC RDMA WRITE, two DCTs in turn, row 3");
    assert_eq!(
        (two["dc_connects"].as_u64(), two["dc_disconnects"].as_u64()),
        (Some(8), Some(7))
    );
    assert!(row(&v, "+ BlueFlame")["wire"].is_null());
    // Not without the flag, not over several QPs.
    let plain = json(&["pcie", "--json"]);
    assert!(plain["rows"]
        .as_array()
        .unwrap()
        .iter()
        .all(|r| r["wire"].is_null()));
    let (ok, out, err) = perf(&["pcie", "--transports", "--qps", "2"]);
    assert!(ok, "{err}");
    assert!(
        out.contains("# transport rows (UC, UD, DC) left out: they post on one QP"),
        "{out}"
    );
    assert!(!out.contains("UD SEND"), "{out}");
}

/// docs/pcie.md's scatter-to-CQE rows are the ones `pcie --op send --scatter-to-cqe` prints.
#[test]
fn docs_pcie_md_shows_the_scatter_rows() {
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/pcie.md"))
        .expect("docs/pcie.md");
    for size in ["32", "64"] {
        let args = ["pcie", "--op", "send", "--size", size, "--scatter-to-cqe"];
        let (ok, out, err) = perf(&args);
        assert!(ok, "{err}");
        let block: Vec<&str> = out
            .lines()
            .filter(|l| {
                l.starts_with(['#', ' ']) || l.starts_with("side ") || l.contains("inbound SEND")
            })
            .collect();
        assert_eq!(block.len(), 10, "{out}");
        assert!(
            doc.contains(&format!("```\n{}\n```", block.join("\n"))),
            "docs/pcie.md is stale: regenerate the scatter rows of `cargo run --release -p mlx5-perf -- {}`:\n{}",
            args.join(" "),
            block.join("\n")
        );
    }
}

/// docs/pcie.md's transport rows are the ones `pcie --transports` prints.
#[test]
fn docs_pcie_md_shows_the_transport_rows() {
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/pcie.md"))
        .expect("docs/pcie.md");
    let (ok, out, err) = perf(&["pcie", "--transports"]);
    assert!(ok, "{err}");
    let block: Vec<&str> = out
        .lines()
        .filter(|l| {
            l.starts_with("side ") || l.contains(", row 3") || l.starts_with("# on the wire")
        })
        .collect();
    assert_eq!(block.len(), 23, "{out}");
    assert!(
        doc.contains(&format!("```\n{}\n```", block.join("\n"))),
        "docs/pcie.md is stale: regenerate the transport rows of `cargo run --release -p mlx5-perf -- pcie --transports`:\n{}",
        block.join("\n")
    );
}

/// rdma_cm needs an IP-addressed RDMA device: on the model `-R` and `-z` exit non-zero with
/// one line saying so, whatever the test.
#[test]
fn rdma_cm_on_the_model_says_it_needs_a_device() {
    for (args, flag) in [
        (&["write_lat", "-R"][..], "-R"),
        (&["read_bw", "--rdma_cm", "-T", "32"][..], "-R"),
        (&["send_bw", "-z"][..], "-z"),
        (
            &["atomic_lat", "--comm_rdma_cm", "--retry_count", "3"][..],
            "-z",
        ),
        (&["write_bw", "-R", "-z"][..], "-R"),
    ] {
        let (ok, out, err) = perf(args);
        assert!(!ok, "{args:?} should fail");
        assert_eq!(out, "", "{args:?}");
        assert_eq!(
            err.lines().filter(|l| !l.is_empty()).count(),
            1,
            "{args:?}: one line: {err:?}"
        );
        assert!(
            err.contains(&format!(
                "{flag}: rdma_cm needs an IP-addressed RDMA device (IPoIB or RoCE), which the \
                 model is not"
            )),
            "{args:?}: {err:?}"
        );
    }
    // perftest's own refusals come first, as its parser's do.
    fails_with(
        &["write_bw", "-T", "8"],
        "-T 8: TOS only valid for rdma_cm based QP and RawEth QP",
    );
    fails_with(
        &["write_bw", "-R", "-c", "UC"],
        "-R: UC is not supported in librdmacm",
    );
}

/// `-q`: one DCI per QP, each to the peer's DCT of its index, and one UD QP per QP, each to
/// the peer's of its index: every QP's messages arrive.
#[test]
fn dc_and_ud_run_one_qp_per_q() {
    for connection in ["DC", "UD"] {
        let v = json(&[
            "send_bw", "-c", connection, "-q", "2", "-n", "100", "-s", "64", "--json",
        ]);
        let h = &v["header"];
        assert_eq!(
            h["remote"].as_array().map(Vec::len),
            Some(2),
            "{connection}"
        );
        let r = &v["results"][0];
        assert_eq!(r["completions"]["server"]["recv"], 200, "{connection}");
        assert_eq!(r["iterations"], 200, "{connection}");
    }
    let v = json(&["write_bw", "-c", "DC", "-q", "2", "-n", "100", "--json"]);
    let numbers: Vec<u64> = v["header"]["remote"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["dct"]["number"].as_u64().unwrap())
        .collect();
    assert_eq!(numbers.len(), 2);
    assert_ne!(numbers[0], numbers[1]);
}

// `--hw-timestamps`: the columns of the table and CSV, the `hw` object of `--json`, samples
// that fit the model clock's tick (`NicConfig::clock_khz`, the hidden `--model-clock-khz`),
// and the refusals.

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

/// `--log_dci_streams 2` (perftest's DCS): the DCIs have 4 streams and the posts take them
/// round-robin; every message lands and completes, and the header prints perftest's two
/// DCS lines.
#[test]
fn dc_with_dci_streams_runs_and_says_so() {
    let v = json(&[
        "write_bw",
        "-c",
        "DC",
        "--log_dci_streams",
        "2",
        "-n",
        "100",
        "-Q",
        "1",
        "--json",
    ]);
    let streams = &v["header"]["params"]["dci_streams"];
    assert_eq!(
        (&streams["log"], &streams["active"]),
        (&2.into(), &2.into())
    );
    let r = &v["results"][0];
    assert_eq!(r["completions"]["client"]["rdma_write"], 100);
    let (ok, out, err) = perf(&[
        "write_lat",
        "-c",
        "DC",
        "--log_dci_streams",
        "2",
        "--log_active_dci_streams",
        "1",
        "-n",
        "20",
    ]);
    assert!(ok, "{err}");
    assert!(
        out.contains(" DCS num streams : 2\n DCS active num streams : 1\n"),
        "{out}"
    );
}

#[test]
fn pcie_timestamp_rows_cost_what_the_rows_without_cost() {
    // The timestamp is bytes 48..56 of the 64-byte CQE the NIC writes either way: row 1
    // (doorbell, DMA gather, a CQE: 1 MMIO, record and WQE reads, the payload read, one
    // 88-byte CQE MWr up) and the inbound SEND (receive WQE fetched; payload and CQE MWr)
    // cost the same TLPs and bytes with both CQs created with timestamps.
    let v = json(&["pcie", "--hw-timestamps", "--json"]);
    let cost = |name: &str| row(&v, name)["per_message"].clone();
    let stamped = cost("row 1, CQs with timestamps");
    assert_eq!(stamped, cost("doorbell, DMA gather, signaled CQE"));
    assert_eq!(stamped["mmio_writes"], 1);
    assert_eq!(stamped["dma_writes"], 1);
    assert_eq!(stamped["bytes_up"], 136);
    let inbound = cost("inbound SEND, CQs with timestamps");
    assert_eq!(inbound, cost("inbound SEND (receive WQE fetched)"));
    assert_eq!(inbound["dma_writes"], 2);
    assert_eq!(row(&v, "inbound SEND, CQs")["side"], "responder");
    // Without the flag, neither row.
    let plain = json(&["pcie", "--json"]);
    let steps = plain["rows"].as_array().unwrap();
    assert!(steps
        .iter()
        .all(|r| !r["step"].as_str().unwrap().contains("timestamps")));
    assert_eq!(steps.len() + 2, v["rows"].as_array().unwrap().len());
    // docs/pcie.md shows the four rows as the table prints them.
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/pcie.md"))
        .expect("docs/pcie.md");
    let (ok, out, err) = perf(&["pcie", "--hw-timestamps"]);
    assert!(ok, "{err}");
    let shown: Vec<&str> = out
        .lines()
        .filter(|l| {
            l.starts_with('#')
                || l.starts_with("side ")
                || l.contains("timestamps")
                || l.contains("doorbell, DMA gather, signaled")
                || l.contains("inbound SEND (receive")
        })
        .collect();
    assert_eq!(shown.len(), 9, "{out}");
    assert!(
        doc.contains(&format!("```\n{}\n```", shown.join("\n"))),
        "docs/pcie.md is stale: regenerate the timestamp rows of `cargo run --release -p \
         mlx5-perf -- pcie --hw-timestamps`:\n{}",
        shown.join("\n")
    );
}

#[test]
fn explain_decodes_the_cqe_timestamps() {
    // Four WRITEs, a CQE every second, on CQs with timestamps: the model's clock steps one
    // tick per CQE, so the CQEs carry 1 and 2 at bytes 48..56, converted by the clock-info
    // page of a 156 250 kHz clock (mult 3 435 973 837, shift 29, 0 ns at tick 0):
    // 1 · 3 435 973 837 >> 29 = 6 ns, 2 · 3 435 973 837 >> 29 = 12 ns.
    let args = [
        "explain",
        "write",
        "--inline",
        "--batch",
        "4",
        "--signal-every",
        "2",
        "--hw-timestamps",
    ];
    let v = json(&[&args[..], &["--json"]].concat());
    let cqes = v["cqes"].as_array().unwrap();
    assert_eq!(cqes.len(), 2);
    for (i, (c, ns)) in cqes.iter().zip([6, 12]).enumerate() {
        let tick = i as u64 + 1;
        assert_eq!(c["timestamp"], tick);
        assert_eq!(c["ns"], ns);
        assert_eq!(&c["hex"].as_str().unwrap()[96..112], format!("{tick:016x}"));
        assert_eq!(
            c["text"],
            format!(
                "CQE: opcode 0, qpn 0x100, wqe_counter {}, byte_cnt 0x8badf00d, signature 0, \
                 op_own 0x00, timestamp {tick:#x} (bytes 48..56) = {ns} ns",
                2 * i + 1
            )
        );
    }
    let (ok, out, err) = perf(&args);
    assert!(ok, "{err}");
    assert!(
        out.contains(&format!(
            "  CQ   1  {}\n",
            cqes[1]["text"].as_str().unwrap()
        )),
        "{out}"
    );
    // Without the flag the entries are index and bytes only.
    let plain = json(&["explain", "write", "--inline", "--json"]);
    assert_eq!(
        plain["cqes"][0]
            .as_object()
            .unwrap()
            .keys()
            .collect::<Vec<_>>(),
        ["hex", "index"]
    );
}
