//! `mlx5-perf` benchmarks over the other transports and links on the model: UC, UD, DC and XRC
//! over the TCP exchange, RoCE, post lists, SRQs, and what needs a device (rdma_cm).

mod common;

use serde_json::Value;

use common::*;

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

/// `-g`: the server's UD QP joins perftest's default group (MGID ff01:0:0:2:c985::, on
/// the model MLID 0xC001, on RoCE none) and its record names the group (QPN 0xFFFFFF);
/// the client sends every datagram to the group, which reaches the server's QP with its
/// GRH: the receive costs what a unicast datagram with a GRH costs (`-x 0`), so none was
/// dropped. `-M` names another group; the refusals.
#[test]
fn ud_send_bw_to_a_multicast_group() {
    let v = json(&["send_bw", "-c", "UD", "-n", "20", "-g", "--json"]);
    let remote = &v["header"]["remote"][0];
    assert_eq!(
        (&remote["lid"], &remote["qpn"]),
        (&0xc001.into(), &0xff_ffff.into())
    );
    assert_eq!(
        v["header"]["params"]["mcast"],
        serde_json::json!([255, 1, 0, 0, 0, 2, 201, 133, 0, 0, 0, 0, 0, 0, 0, 0])
    );
    assert_eq!(ud_receive_pcie(&["-g"]), ud_receive_pcie(&["-x", "0"]));
    let roce = ["--force-link", "Ethernet", "-m", "1024"];
    let roce_mcast = [&roce[..], &["-g"]].concat();
    assert_eq!(ud_receive_pcie(&roce_mcast), ud_receive_pcie(&roce));
    let mgid = "255:14:0:0:0:0:0:0:0:0:0:0:0:0:0x12:0x34";
    let v = json(&[
        "send_bw", "-c", "UD", "-n", "20", "-g", "-M", mgid, "--json",
    ]);
    assert_eq!(v["results"][0]["iterations"], 20);
    assert_eq!(v["header"]["params"]["mcast"][14], 0x12);
    fails_with(
        &["write_bw", "-g"],
        "MultiCast feature only available on SEND verb",
    );
    fails_with(&["send_bw", "-g"], "give -c UD");
    fails_with(
        &["send_bw", "-c", "UD", "-g", "-b"],
        "send_bw alone, one QP, one way",
    );
    fails_with(
        &["send_lat", "-c", "UD", "-g"],
        "send_bw alone, one QP, one way",
    );
    fails_with(&["send_bw", "-c", "UD", "-M", mgid], "give -g");
    fails_with(
        &["send_bw", "-c", "UD", "-g", "-M", "1:2"],
        "16 byte values",
    );
}

/// `-c XRC`: each side's XRC initiators connect to the peer's XRC targets and every WQE
/// names the peer's one XRC SRQ, whose number rides in each record (perftest's `SRQn` in
/// the address lines); every test runs, `-q 2` through two targets into one SRQ. The XRC
/// segment's 16 bytes cost a second BlueFlame chunk where RC's WQE fits one: a 16-byte
/// inline WRITE (52 → 68 bytes) and an atomic (64 → 80).
#[test]
fn xrc_runs_every_test_through_the_peers_targets_and_srq() {
    let bytes_down = |v: &Value| {
        let p = &v["results"][0]["pcie_per_message"]["client"];
        (p["mmio_writes"].as_f64(), p["bytes_down"].as_f64())
    };
    let args = ["-s", "16", "-n", "100", "--json"];
    let rc = json(&[&["write_lat", "-c", "RC"][..], &args].concat());
    let v = json(&[&["write_lat", "-c", "XRC"][..], &args].concat());
    assert_eq!(bytes_down(&rc), (Some(1.0), Some(88.0)));
    assert_eq!(bytes_down(&v), (Some(2.0), Some(176.0)));
    let h = &v["header"];
    assert_eq!(h["params"]["connection"], "XRC");
    assert_eq!(h["params"]["srq"], true);
    assert_eq!(h["params"]["inline_size"], 220);
    for end in ["local", "remote"] {
        let x = &h[end][0]["xrc"];
        assert!(
            x["srqn"].as_u64().is_some() && x["target"].as_u64().is_some(),
            "{end}"
        );
        assert_ne!(x["target"], h[end][0]["qpn"], "{end}");
    }
    assert_eq!(v["results"][0]["completions"]["server"]["rdma_write"], 100);

    let v = json(&[
        "send_bw", "-c", "XRC", "-q", "2", "-n", "100", "-s", "64", "--json",
    ]);
    let r = &v["results"][0];
    assert_eq!(r["iterations"], 200);
    assert_eq!(r["completions"]["server"]["recv"], 200);
    let remote: Vec<&Value> = v["header"]["remote"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| &r["xrc"])
        .collect();
    assert_eq!(remote.len(), 2);
    assert_ne!(remote[0]["target"], remote[1]["target"]);
    assert_eq!(remote[0]["srqn"], remote[1]["srqn"]);

    let v = json(&["send_lat", "-c", "XRC", "-n", "100", "--json"]);
    for side in ["client", "server"] {
        let c = &v["results"][0]["completions"][side];
        assert_eq!(
            (&c["send"], &c["recv"]),
            (&100.into(), &100.into()),
            "{side}"
        );
    }
    for (test, op) in [
        ("read_bw", "rdma_read"),
        ("atomic_bw", "fetch_add"),
        ("write_bw", "rdma_write"),
        ("read_lat", "rdma_read"),
        ("atomic_lat", "fetch_add"),
    ] {
        let v = json(&[test, "-c", "XRC", "-n", "50", "-Q", "1", "--json"]);
        assert_eq!(v["results"][0]["completions"]["client"][op], 50, "{test}");
        if test == "atomic_bw" {
            assert_eq!(bytes_down(&v), (Some(2.0), Some(176.0)));
        }
    }
    let v = json(&["atomic_bw", "-c", "RC", "-n", "50", "-Q", "1", "--json"]);
    assert_eq!(bytes_down(&v), (Some(1.0), Some(88.0)));

    let (ok, out, err) = perf(&["write_lat", "-c", "XRC", "-n", "20"]);
    assert!(ok, "{err}");
    assert!(
        out.contains(" Connection type : XRC\t\tUsing SRQ      : ON"),
        "{out}"
    );
    assert!(
        out.lines()
            .any(|l| l.starts_with(" remote address:") && l.contains(" SRQn 0x")),
        "{out}"
    );
    fails_with(
        &["write_bw", "-c", "XRC", "--perftest-exchange"],
        "--perftest-exchange: -c XRC: RC only",
    );
}
