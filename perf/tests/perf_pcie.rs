//! `mlx5-perf pcie` end to end: the PCIe cost tables (steps, rates, options, memory, MEMIC,
//! compression, scatter, transports, timestamps), checked against the exact numbers of
//! `tests/sim_pcie.rs` and against the tables docs/pcie.md shows.

mod common;

use serde_json::Value;

use common::*;

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

/// The `side` row of `v` whose step is `step`.
fn side_row<'a>(v: &'a Value, side: &str, step: &str) -> &'a Value {
    v["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["side"] == side && r["step"] == step)
        .unwrap_or_else(|| panic!("no {side} row {step}"))
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
    // XRC: a small inline WRITE's segment fits RC's one chunk (ctrl + XRC + raddr + 12
    // inline bytes: 64); a WRITE gathered from two entries is 80 bytes, two BlueFlame
    // chunks (one more 88-byte MWr down) where RC's 64 take one.
    let per = |step| side_row(&v, "requester", step)["per_message"].clone();
    assert_eq!(per("XRC RDMA WRITE, row 3"), *rc);
    let (rc2, xrc2) = (
        per("RC RDMA WRITE, 2 gather entries, row 3"),
        per("XRC RDMA WRITE, 2 gather entries, row 3"),
    );
    assert_eq!(
        (rc2["mmio_writes"].as_f64(), rc2["bytes_down"].as_f64()),
        (Some(1.0), Some(136.0))
    );
    assert_eq!(
        (xrc2["mmio_writes"].as_f64(), xrc2["bytes_down"].as_f64()),
        (Some(2.0), Some(224.0))
    );
    assert_eq!(xrc2["dma_reads"], rc2["dma_reads"]);
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
        out.contains("# transport rows (UC, UD, DC, XRC) left out: they post on one QP"),
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
    assert_eq!(block.len(), 32, "{out}");
    assert!(
        doc.contains(&format!("```\n{}\n```", block.join("\n"))),
        "docs/pcie.md is stale: regenerate the transport rows of `cargo run --release -p mlx5-perf -- pcie --transports`:\n{}",
        block.join("\n")
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

/// `pcie --mcast --json`: one 64-byte UD SEND unicast with a GRH and to a group of 1, 2 and
/// 4 NICs; the sender's link and the wire are the same in every row (one packet), every
/// receiving NIC's link costs the unicast receiver's, each port took the group's packet
/// once. `explain send --transport ud --mcast 2 --json` is the same send to two NICs.
#[test]
fn pcie_mcast_rows_cost_the_sender_once_and_each_receiver_its_own() {
    let v = json(&["pcie", "--mcast", "--json"]);
    let rows = v.as_array().unwrap();
    let link = |l: &Value| {
        [
            "mmio_writes",
            "dma_reads",
            "completions",
            "dma_writes",
            "bytes_down",
            "bytes_up",
        ]
        .map(|k| l[k].as_u64().unwrap())
    };
    let got: Vec<_> = rows
        .iter()
        .map(|r| {
            let receivers = r["receiver_links"].as_array().unwrap();
            assert!(receivers.iter().all(|l| link(l) == [0, 2, 2, 2, 108, 264]));
            (
                r["receivers"].as_u64().unwrap(),
                r["wire_packets"].as_u64().unwrap(),
                link(&r["sender"]),
                r["taken"].clone(),
            )
        })
        .collect();
    let sender = [2, 1, 1, 1, 260, 112];
    assert_eq!(
        got,
        [
            (1, 1, sender, serde_json::json!([0])),
            (1, 1, sender, serde_json::json!([1])),
            (2, 1, sender, serde_json::json!([1, 1])),
            (4, 1, sender, serde_json::json!([1, 1, 1, 1])),
        ]
    );
    let v = json(&[
        "explain",
        "send",
        "--transport",
        "ud",
        "--mcast",
        "2",
        "--size",
        "64",
        "--json",
    ]);
    assert_eq!(link(&v["sender"]), sender);
    assert_eq!(v["taken"], serde_json::json!([1, 1]));
    assert_eq!(v["received_bytes"], serde_json::json!([104, 104]));
    // The datagram segment's dqp_dct (bytes 24..28 of the WQE): the group's QPN 0xFFFFFF.
    assert_eq!(&v["wqe"].as_str().unwrap()[48..56], "80ffffff");
}
