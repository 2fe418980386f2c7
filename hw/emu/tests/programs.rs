//! Debian's unmodified `ibverbs-utils` (rdma-core 44) on the emulated ConnectX: device
//! discovery, the device's attributes as the model has them, and the four ping-pong
//! examples between two processes on one fabric, on InfiniBand and RoCE.
//!
//! Ignored when `ibverbs-utils` is not installed (`cfg(ibverbs_utils)`, hw/emu/build.rs);
//! CI installs it and sets `MLX5_EMU_REQUIRE_PROGRAMS=1`, which makes its absence a build
//! error instead.

mod emu_common;

use emu_common::{assert_ok, text, Fabric};
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(60);

/// The field of `ibv_devinfo -v`'s text after `name:` (the first occurrence).
fn field<'a>(out: &'a str, name: &str) -> &'a str {
    out.lines()
        .find_map(|l| l.trim_start().strip_prefix(&format!("{name}:")))
        .unwrap_or_else(|| panic!("no {name} in:\n{out}"))
        .trim()
}

#[test]
#[cfg_attr(not(ibverbs_utils), ignore = "needs ibverbs-utils (Debian package)")]
fn ibv_devices_lists_every_nic_of_the_fabric() {
    let f = Fabric::new("devices", &["--nics", "3"]);
    let o = f.run("ibv_devices", &[], LIMIT);
    assert_ok("ibv_devices", &f, &[&o]);
    let out = text(&o);
    for dev in ["mlx5_0", "mlx5_1", "mlx5_2"] {
        assert!(out.contains(dev), "{dev} missing:\n{out}");
    }
    assert!(!out.contains("mlx5_3"), "{out}");
}

#[test]
#[cfg_attr(not(ibverbs_utils), ignore = "needs ibverbs-utils (Debian package)")]
fn ibv_devinfo_reports_the_models_caps() {
    for (link, args) in [("ib", ["--link", "ib"]), ("roce", ["--link", "roce"])] {
        let f = Fabric::new(&format!("devinfo-{link}"), &args);
        let o = f.run("ibv_devinfo", &["-v", "-d", "mlx5_1"], LIMIT);
        assert_ok("ibv_devinfo", &f, &[&o]);
        let out = text(&o);
        // The same NIC, made as the server makes it: the second of the fabric.
        let fabric = mlx5_hw::Fabric::new();
        let config = mlx5_emu::server::nic_config(mlx5_emu::server::Link::parse(link).unwrap());
        let _first = mlx5_hw::Nic::new(&fabric, config.clone());
        let nic = mlx5_hw::Nic::new(&fabric, config);
        let (caps, port) = (nic.caps(), nic.port(1).unwrap());
        assert_eq!(field(&out, "hca_id"), "mlx5_1");
        assert_eq!(field(&out, "vendor_part_id"), "4119", "a ConnectX-5");
        assert_eq!(field(&out, "max_qp_wr"), caps.max_qp_wr.to_string());
        assert_eq!(
            field(&out, "max_sge"),
            caps.max_send_sge.min(caps.max_recv_sge).to_string()
        );
        assert_eq!(field(&out, "max_cqe"), (caps.max_cqe - 1).to_string());
        assert_eq!(
            field(&out, "max_qp_rd_atom"),
            caps.max_rd_atomic.to_string()
        );
        assert_eq!(field(&out, "max_msg_sz"), format!("{:#x}", caps.max_msg_sz));
        // QUERY_DEVICE_EX's max_dm_size, which libmlx5 also checks ibv_alloc_dm against.
        assert_eq!(
            field(&out, "maximum available device memory"),
            format!("{}Bytes", caps.max_dm_size)
        );
        assert_ne!(caps.max_dm_size, 0);
        assert_eq!(field(&out, "state"), "PORT_ACTIVE (4)");
        let mtu = format!("{} (", port.active_mtu);
        assert!(field(&out, "active_mtu").starts_with(&mtu), "{out}");
        assert_eq!(field(&out, "port_lid"), port.lid.to_string());
        let layer = if link == "ib" {
            "InfiniBand"
        } else {
            "Ethernet"
        };
        assert_eq!(field(&out, "link_layer"), layer);
        // InfiniBand GIDs print as eight hex words; RoCE ones as IPv6 text with their type.
        let gid = match link {
            "ib" => port
                .gid
                .chunks(2)
                .map(|w| format!("{:02x}{:02x}", w[0], w[1]))
                .collect::<Vec<_>>()
                .join(":"),
            _ => format!("{}, RoCE v2", std::net::Ipv6Addr::from(port.gid)),
        };
        assert!(
            out.contains(&format!("GID[  0]:\t\t{gid}")),
            "GID {gid} missing:\n{out}"
        );
    }
}

/// A ping-pong pair on fabric `f`: both end with status 0 and their summary lines, and
/// the same number of iterations.
fn pingpong(f: &Fabric, program: &str, args: &[&str], iters: u32) {
    let port = emu_common::free_port().to_string();
    let mut server = vec!["-d", "mlx5_0", "-p", &port];
    server.extend_from_slice(args);
    let mut client = vec!["-d", "mlx5_1", "-p", &port];
    client.extend_from_slice(args);
    let (s, c) = f.pair(program, &server, &client, LIMIT);
    let what = format!("{program} {args:?}");
    assert_ok(&what, f, &[&s, &c]);
    for o in [&s, &c] {
        let out = text(o);
        assert!(
            out.contains(&format!("{iters} iters in")),
            "{what}: no summary line:\n{out}"
        );
        assert!(out.contains("remote address:"), "{what}:\n{out}");
    }
}

#[test]
#[cfg_attr(not(ibverbs_utils), ignore = "needs ibverbs-utils (Debian package)")]
fn rc_pingpong_completes_polled_with_events_and_with_4k_messages() {
    let f = Fabric::new("rc", &[]);
    pingpong(&f, "ibv_rc_pingpong", &["-n", "200"], 200);
    pingpong(&f, "ibv_rc_pingpong", &["-n", "200", "-e"], 200);
    pingpong(&f, "ibv_rc_pingpong", &["-s", "4096", "-n", "1000"], 1000);
}

#[test]
#[cfg_attr(not(ibverbs_utils), ignore = "needs ibverbs-utils (Debian package)")]
fn uc_ud_and_srq_pingpongs_complete() {
    let f = Fabric::new("others", &[]);
    pingpong(&f, "ibv_uc_pingpong", &["-n", "200"], 200);
    pingpong(&f, "ibv_ud_pingpong", &["-n", "200"], 200);
    pingpong(&f, "ibv_srq_pingpong", &["-n", "200"], 200);
    pingpong(&f, "ibv_srq_pingpong", &["-n", "200", "-e"], 200);
}

#[test]
#[cfg_attr(not(ibverbs_utils), ignore = "needs ibverbs-utils (Debian package)")]
fn every_pingpong_completes_on_roce_by_gid() {
    let f = Fabric::new("roce", &["--link", "roce"]);
    for program in [
        "ibv_rc_pingpong",
        "ibv_uc_pingpong",
        "ibv_ud_pingpong",
        "ibv_srq_pingpong",
    ] {
        pingpong(&f, program, &["-n", "100", "-g", "0"], 100);
    }
}

/// The pid of `program`, which `mlx5-emu run` (pid `launcher`) started (the first launcher of
/// a fabric has started its server too).
fn program_of(launcher: u32, program: &str) -> u32 {
    let path = format!("/proc/{launcher}/task/{launcher}/children");
    for _ in 0..200 {
        let children = std::fs::read_to_string(&path).unwrap_or_default();
        let found = children.split_whitespace().find(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/comm"))
                .is_ok_and(|comm| comm.trim() == program)
        });
        if let Some(pid) = found {
            return pid.parse().unwrap();
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    panic!("mlx5-emu run {launcher} started no {program}");
}

#[test]
#[cfg_attr(not(perftest), ignore = "needs perftest (Debian package)")]
fn a_killed_peer_fails_the_survivors_qp_and_the_fabric_goes_on() {
    let f = Fabric::new("crash", &[]);
    let port = emu_common::free_port().to_string();
    // The client writes into the server's memory for as long as it may; the server only waits.
    let args = ["-p", &port, "-D", "30"];
    let target = f
        .command("ib_write_bw", &[&["-d", "mlx5_0"][..], &args].concat())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let writer = f
        .command(
            "ib_write_bw",
            &[&["-d", "mlx5_1"][..], &args, &["localhost"]].concat(),
        )
        .spawn()
        .unwrap();
    // Let it write a while, then the target dies without a word.
    std::thread::sleep(Duration::from_millis(2000));
    let victim = program_of(target.id(), "ib_write_bw");
    // SAFETY: kill(2) of a pid this test started (through the launcher).
    assert_eq!(unsafe { libc::kill(victim as i32, libc::SIGKILL) }, 0);
    let t = emu_common::finish(target, LIMIT);
    assert_eq!(t.status.code(), Some(128 + libc::SIGKILL), "{}", text(&t));
    // The writer's next WRITEs find no responder: its retries run out and it stops, long
    // before its 30 seconds.
    let started = std::time::Instant::now();
    let w = emu_common::finish(writer, LIMIT);
    assert!(!w.status.success(), "the writer went on:\n{}", text(&w));
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "the writer hung"
    );
    // The fabric serves the next pair.
    pingpong(&f, "ibv_rc_pingpong", &["-n", "50"], 50);
}

/// `mlx5-perf explain OP ARGS --json`'s per-message counts, requester and responder (the
/// tool of this build, next to `mlx5-emu`, built if it is missing).
fn explain(args: &[&str]) -> (serde_json::Value, serde_json::Value) {
    let perf = emu_common::emu().with_file_name("mlx5-perf");
    if !perf.is_file() {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let mut cmd = std::process::Command::new(cargo);
        cmd.args(["build", "-p", "mlx5-perf"]);
        if perf.parent().and_then(|d| d.file_name()) == Some("release".as_ref()) {
            cmd.arg("--release");
        }
        assert!(cmd.status().unwrap().success(), "building mlx5-perf failed");
    }
    let out = std::process::Command::new(&perf)
        .arg("explain")
        .args(args)
        .arg("--json")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    (
        doc["per_message"].clone(),
        doc["per_message_responder"].clone(),
    )
}

#[test]
#[cfg_attr(not(ibverbs_utils), ignore = "needs ibverbs-utils (Debian package)")]
fn rc_pingpongs_pcie_counts_per_message_are_what_explain_shows() {
    const N: u64 = 400;
    let f = Fabric::new("pcie", &[]);
    let report = f.dir.join("pcie.json");
    let port = emu_common::free_port().to_string();
    let args = ["-p", &port, "-n", "400", "-s", "4096"];
    let server = f
        .command("ibv_rc_pingpong", &[&["-d", "mlx5_0"][..], &args].concat())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    // The client's launcher writes the fabric's report when its program is done: by then the
    // server has sent its last message too.
    let client = f
        .with_args(&["--pcie", report.to_str().unwrap()])
        .command(
            "ibv_rc_pingpong",
            &[&["-d", "mlx5_1"][..], &args, &["localhost"]].concat(),
        )
        .spawn()
        .unwrap();
    let c = emu_common::finish(client, LIMIT);
    let s = emu_common::finish(server, LIMIT);
    assert_ok("rc_pingpong", &f, &[&s, &c]);
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    // Each NIC sends N 4 KiB SENDs (libmlx5: one 64-byte BlueFlame copy each, as it prefers
    // BlueFlame for a lone WQE of at most 256 bytes) and receives N.
    let (req, resp) = explain(&["send", "--size", "4096", "--mode", "bf"]);
    let v = |j: &serde_json::Value, k: &str| j[k].as_u64().unwrap();
    for nic in doc["nics"].as_array().unwrap() {
        let p = &nic["pcie"];
        // The one difference: explain posts one receive before each message, so its
        // responder reads the RQ doorbell record every time (an MRd of 24 bytes up, a CplD
        // of 4 bytes, 24 bytes down); rc_pingpong posts 500 at once, and the model reads
        // the record only when the receives it knows of run out.
        let dbrec_reads =
            v(p, "dma_reads") - N * (v(&req, "dma_reads") + v(&resp, "dma_reads") - 1);
        assert!(
            (1..=N / 100).contains(&dbrec_reads),
            "{dbrec_reads} doorbell-record reads"
        );
        let want = |k: &str, per_dbrec: u64, dbrec_now: u64| {
            N * (v(&req, k) + v(&resp, k) - per_dbrec) + dbrec_now * dbrec_reads
        };
        assert_eq!(v(p, "mmio_writes"), want("mmio_writes", 0, 0), "{nic}");
        assert_eq!(v(p, "dma_writes"), want("dma_writes", 0, 0), "{nic}");
        assert_eq!(v(p, "completions"), want("completions", 1, 1), "{nic}");
        assert_eq!(v(p, "bytes_down"), want("bytes_down", 24, 24), "{nic}");
        assert_eq!(v(p, "bytes_up"), want("bytes_up", 24, 24), "{nic}");
        assert_eq!(
            v(&nic["stats"], "bf_used"),
            N,
            "every post a BlueFlame copy the NIC used"
        );
        assert_eq!(v(&nic["stats"], "bad_mmio"), 0);
    }
}
