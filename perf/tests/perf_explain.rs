//! `mlx5-perf explain` end to end: one work request's WQE bytes, MMIO writes, DMA and CQEs
//! as the model saw them, for every operation, batch, transport and CQE layout, as JSON and
//! as text.

mod common;

use serde_json::Value;

use common::*;

#[test]
fn explain_inline_blueflame_write_is_one_mmio_and_one_cqe() {
    let v = json(&[
        "explain", "write", "--size", "8", "--inline", "--mode", "bf", "--json",
    ]);
    // Integers where they divide evenly, exactly the shape.
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
/// The segment name of each DS line of `explain`'s human output.
fn segment_names(out: &str) -> Vec<&str> {
    out.lines()
        .filter(|l| l.starts_with("  DS "))
        .map(|l| l[9..25].trim())
        .collect()
}

fn explain_8_inline(op: &str, extra: &[&str]) -> Value {
    let args = [
        &["explain", op, "--size", "8", "--inline"][..],
        extra,
        &["--json"],
    ]
    .concat();
    json(&args)
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

/// `explain --transport xrc`: ctrl, the 16-byte XRC segment (the XRC SRQ's number, BE32,
/// then 12 zero bytes), RC's segments. An 8-byte inline WRITE stays one WQEBB (RC's link
/// cost); a SEND gathered from two entries is ctrl, XRC and the two data segments.
#[test]
fn explain_xrc_shows_the_segment() {
    let v = explain_8_inline("write", &["--transport", "xrc"]);
    assert_eq!(v["transport"], "XRC");
    assert_eq!(v["wqes"][0]["ds"], 4);
    let hex = v["wqes"][0]["hex"].as_str().unwrap();
    // DS 1: a 24-bit SRQ number, then the reserved bytes.
    let seg = &hex[32..64];
    assert_eq!(&seg[..2], "00", "{seg}");
    assert_ne!(&seg[2..8], "000000", "{seg}");
    assert_eq!(&seg[8..], "0".repeat(24), "{seg}");
    let rc = explain_8_inline("write", &[]);
    for k in ["per_message", "per_message_responder"] {
        assert_eq!(v[k], rc[k], "{k}");
    }
    let (ok, out, err) = perf(&["explain", "send", "--transport", "xrc", "--sge", "2"]);
    assert!(ok, "{err}");
    let names = segment_names(&out);
    assert_eq!(names, ["ctrl", "xrc", "data", "data"]);
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
    let names = segment_names(&out);
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
