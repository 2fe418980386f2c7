//! perftest's defaults and refusals, flag by flag: the same command line gives the same
//! experiment (`init_perftest_params`, `parser` and `force_dependecies` of perftest 6.29's
//! `src/perftest_parameters.c`). Parsed as the binary parses them, no run.

use clap::Parser;

use mlx5_perf::bench::{Local, Params, RdmaCm};
use mlx5_perf::cli::{parse_size, AtomicType, Cli};

fn params(line: &str) -> Result<Params, String> {
    let argv = std::iter::once("mlx5-perf").chain(line.split_whitespace());
    let cli = Cli::try_parse_from(argv).map_err(|e| e.to_string())?;
    let (test, args) = cli.command.bench().expect("a benchmark");
    Params::new(test, args)
}

/// This side's settings for `line`, as the binary takes them.
fn local(line: &str) -> Local {
    let argv = std::iter::once("mlx5-perf").chain(line.split_whitespace());
    let cli = Cli::try_parse_from(argv).unwrap();
    Local::new(cli.command.bench().expect("a benchmark").1)
}

fn ok(line: &str) -> Params {
    params(line).unwrap_or_else(|e| panic!("{line}: {e}"))
}

fn refused(line: &str, message: &str) {
    match params(line) {
        Ok(p) => panic!("{line} should be refused, got {p:?}"),
        Err(e) => assert!(e.contains(message), "{line}: {e:?} lacks {message:?}"),
    }
}

#[test]
fn inline_is_on_in_the_latency_tests_only() {
    let inline = |line| ok(line).inline_size;
    assert_eq!(inline("write_lat"), 220);
    assert_eq!(inline("send_lat"), 236);
    for test in [
        "write_bw",
        "send_bw",
        "read_lat",
        "read_bw",
        "atomic_lat",
        "atomic_bw",
    ] {
        assert_eq!(inline(test), 0, "{test}");
    }
    assert_eq!(inline("write_bw -I 64"), 64);
    assert_eq!(inline("send_lat -I 0"), 0);
    refused("read_bw -I 8", "not available on READ/Atomic");
    refused("write_bw -I 1025", "between 0 and 1024");
}

#[test]
fn iterations_are_5000_for_write_bw_only() {
    for (test, n) in [
        ("write_bw", 5000),
        ("send_bw", 1000),
        ("read_bw", 1000),
        ("atomic_bw", 1000),
        ("write_lat", 1000),
        ("send_lat", 1000),
        ("read_lat", 1000),
        ("atomic_lat", 1000),
    ] {
        assert_eq!(ok(test).iters, n, "{test}");
    }
    assert_eq!(ok("write_lat -n 5").iters, 5);
    refused(
        "write_lat -n 4",
        "-n (iteration num) should be between 5 and 4294967296",
    );
    refused("write_bw -n 4294967297", "between 5 and");
}

#[test]
fn the_tx_depth_is_lowered_to_the_iterations() {
    assert_eq!(ok("write_bw").tx_depth, 128);
    assert_eq!(ok("write_bw -n 100 -t 200").tx_depth, 100);
    assert_eq!(ok("atomic_bw -n 10").tx_depth, 10);
    // Not in duration mode.
    assert_eq!(ok("write_bw -n 10 -D 1").tx_depth, 128);
    assert_eq!(ok("write_lat").tx_depth, 1);
    refused(
        "write_bw -t 15001",
        "-t (tx depth) should be between 1 and 15000",
    );
}

#[test]
fn cq_moderation_follows_perftests_rules() {
    let q = |line| ok(line).cq_mod;
    // 100 for small messages, lowered to the TX depth.
    assert_eq!(q("write_bw -s 8"), 100);
    assert_eq!(q("write_bw -s 8192"), 100);
    assert_eq!(q("write_bw -s 8 -t 64"), 64);
    assert_eq!(q("write_bw -s 8 -n 20"), 20);
    // 1 above 8 KiB (so the default 64 KiB write_bw), unless -Q or -a.
    assert_eq!(q("write_bw"), 1);
    assert_eq!(q("send_bw -s 8193"), 1);
    assert_eq!(q("write_bw -s 65536 -Q 10"), 10);
    assert_eq!(q("write_bw -a"), 100);
    assert_eq!(q("send_bw -e"), 100);
    // Atomics are 8 bytes (perftest's DEF_SIZE_ATOMIC, set before the 8 KiB rule looks).
    assert_eq!(q("atomic_bw"), 100);
    assert_eq!(q("atomic_bw -l 8"), 8);
    // The post list's size when -l is given without -Q.
    assert_eq!(q("write_bw -s 8 -l 8"), 8);
    assert_eq!(q("write_bw -l 40"), 40);
    assert_eq!(q("write_bw -s 8 -l 32 -n 3200 -Q 16"), 16);
    refused(
        "write_bw -s 8 -l 32 -n 3200 -Q 10",
        "multiple of CQ moderation",
    );
    refused(
        "write_bw -Q 0",
        "-Q (CQ moderation) should be between 1 and 1024",
    );
    refused("write_bw -Q 1025", "between 1 and 1024");
}

#[test]
fn post_list_rules() {
    refused(
        "write_bw -n 1000 -l 3",
        "must be a multiple of the post list size",
    );
    refused("write_lat -l 2", "post list is supported in BW tests only");
    assert_eq!(ok("write_bw -n 999 -l 3 -Q 3").post_list, 3);
    // Duration mode has no iteration count to divide.
    assert_eq!(ok("write_bw -D 1 -l 3 -Q 3").post_list, 3);
}

#[test]
fn refusals_where_perftest_refuses() {
    refused("write_lat -N", "NoPeak only valid for BW tests");
    refused("send_lat -b", "bidirectional is only available in BW tests");
    refused(
        "send_bw --perform_warm_up",
        "valid in Atomic, Read and Write BW tests",
    );
    refused(
        "read_lat --perform_warm_up",
        "valid in Atomic, Read and Write BW tests",
    );
    assert!(ok("atomic_bw --perform_warm_up").warm_up);
    assert!(ok("read_bw -b").duplex);
    refused(
        "write_bw -A CMP_AND_SWAP",
        "not running the atomic_lat/bw test",
    );
    assert_eq!(
        ok("atomic_lat -A CMP_AND_SWAP").atomic_type,
        AtomicType::CmpAndSwap
    );
    assert_eq!(ok("atomic_bw").atomic_type, AtomicType::FetchAndAdd);
    refused("atomic_bw -a", "cannot be changed for Atomic tests");
    refused("atomic_lat -s 16", "cannot be changed for Atomic tests");
    assert_eq!(ok("atomic_lat -s 8").sizes, [8]);
    refused("write_bw -a -D 2", "doesn't support running on all sizes");
    refused("write_lat -e", "events feature not available on WRITE verb");
    refused("send_bw -e -D 2", "duration mode doesn't work with events");
    refused("send_lat -q 2", "multiple QPs only available on bw tests");
    refused("write_bw -q 16385", "between 1 and 16384");
}

#[test]
fn sizes_take_suffixes_and_hex() {
    assert_eq!(ok("write_bw -s 4K").sizes, [4096]);
    assert_eq!(ok("write_bw -s 2M").sizes, [2 << 20]);
    assert_eq!(ok("write_bw -s 0x1000").sizes, [4096]);
    assert_eq!(ok("write_bw -s 0x10K").sizes, [16 << 10]);
    // strtol with base 0: a leading 0 is octal.
    assert_eq!(parse_size("010"), Ok(8));
    assert_eq!(parse_size("0"), Ok(0));
    assert!(parse_size("4k").is_err());
    assert!(parse_size("12x").is_err());
    assert_eq!(ok("write_lat").sizes, [2]);
    assert_eq!(ok("send_bw").sizes, [65536]);
    assert_eq!(ok("write_lat -a").sizes.len(), 23);
}

#[test]
fn outstanding_reads_default_to_the_device_maximum() {
    // 0 stands for the device's maximum, resolved when the QPs connect.
    assert_eq!(ok("read_bw").out_reads, 0);
    assert_eq!(ok("read_lat -o 4").out_reads, 4);
    assert_eq!(ok("atomic_bw -o 2").out_reads, 2);
    refused("write_bw -o 4", "only available on READ and atomic verbs");
}

#[test]
fn rx_depth_is_512_lowered_to_the_iterations_and_even() {
    assert_eq!(ok("send_bw").rx_depth, 512);
    assert_eq!(ok("send_lat").rx_depth, 512);
    assert_eq!(ok("send_bw -n 100").rx_depth, 100);
    assert_eq!(ok("send_bw -r 33").rx_depth, 34);
    assert_eq!(ok("send_bw -n 7").rx_depth, 8);
    // -a keeps an odd depth (perftest's workaround is for RUN_REGULAR only).
    assert_eq!(ok("send_bw -a -r 33").rx_depth, 33);
    // RDMA verbs post no receives.
    assert_eq!(ok("write_bw").rx_depth, 1);
    assert_eq!(ok("read_bw -r 1").rx_depth, 1);
    refused("write_bw -r 2", "on RDMA verbs rx depth can be only 1");
    refused("send_bw -r 16385", "between 1 and 16384");
}

#[test]
fn connection_types_follow_perftests_test_rules() {
    use mlx5_perf::bench::Connection;
    let conn = |line: &str| ok(line).connection;
    assert_eq!(conn("write_bw"), Connection::Rc);
    assert_eq!(conn("write_bw --connection RC"), Connection::Rc);
    // UC: SEND and WRITE tests.
    for test in ["send_lat", "send_bw", "write_lat", "write_bw"] {
        assert_eq!(conn(&format!("{test} -c UC")), Connection::Uc, "{test}");
    }
    for test in ["read_lat", "read_bw", "atomic_lat", "atomic_bw"] {
        refused(
            &format!("{test} -c UC"),
            "-c UC: UC has no READ or atomic tests",
        );
    }
    // UD: SEND tests only.
    assert_eq!(conn("send_lat -c UD"), Connection::Ud);
    assert_eq!(conn("send_bw -c UD"), Connection::Ud);
    for test in ["write_lat", "write_bw", "read_bw", "atomic_lat"] {
        refused(
            &format!("{test} -c UD"),
            "-c UD: UD runs send_lat and send_bw only",
        );
    }
    // DC and XRC: every test, their targets on an SRQ (perftest forces it; for XRC it sets
    // `use_srq` with `use_xrc`).
    for (name, connection) in [("DC", Connection::Dc), ("XRC", Connection::Xrc)] {
        for test in [
            "write_lat",
            "write_bw",
            "read_lat",
            "read_bw",
            "send_lat",
            "send_bw",
            "atomic_lat",
            "atomic_bw",
        ] {
            let p = ok(&format!("{test} -c {name}"));
            assert_eq!(
                (p.connection, p.srq),
                (connection, true),
                "{test} -c {name}"
            );
        }
    }
    assert!(!ok("send_bw").srq);
    // perftest's latency inline defaults, as RC's (DEF_INLINE_SEND_RC_UC_XRC).
    assert_eq!(ok("send_lat -c XRC").inline_size, 236);
    assert_eq!(ok("write_lat -c XRC").inline_size, 220);
    refused("write_bw -c SRD", "-c SRD: SRD is EFA's transport");
    refused("write_bw -c XX", "-c XX: not a connection type");
    // Post lists on the datagram entries too (push_ud / push_dc, one doorbell).
    assert_eq!(ok("send_bw -c UD -l 4").post_list, 4);
    assert_eq!(ok("write_bw -c DC -l 4").post_list, 4);
    assert_eq!(ok("write_bw -c UC -l 4").post_list, 4);
    assert!(ok("send_bw -c UD --use-srq").srq);
}

/// perftest's inline defaults of the latency tests per transport (`ctx_set_max_inline`:
/// `DEF_INLINE_SEND_UD` 188, `DEF_INLINE_DC` 150).
#[test]
fn inline_defaults_per_transport() {
    let inline = |line| ok(line).inline_size;
    assert_eq!(inline("send_lat -c UD"), 188);
    assert_eq!(inline("send_lat -c UC"), 236);
    assert_eq!(inline("write_lat -c UC"), 220);
    assert_eq!(inline("send_lat -c DC"), 150);
    assert_eq!(inline("write_lat -c DC"), 150);
    assert_eq!(inline("read_lat -c DC"), 0);
    assert_eq!(inline("send_bw -c UD"), 0);
}

/// UD messages fit the MTU: a size not given becomes the MTU, `-a` stops at it, a larger
/// `-s` is refused; the receive buffer holds the 40-byte GRH area in front.
#[test]
fn ud_sizes_stop_at_the_mtu() {
    assert_eq!(ok("send_bw -c UD").sizes, vec![4096]);
    assert_eq!(ok("send_bw -c UD -m 1024").sizes, vec![1024]);
    assert_eq!(ok("send_lat -c UD").sizes, vec![2]);
    assert_eq!(
        ok("send_bw -c UD -a").sizes,
        (1..=12).map(|k| 1usize << k).collect::<Vec<_>>()
    );
    assert_eq!(ok("send_lat -c UD -a -m 256").sizes.last(), Some(&256));
    assert_eq!(ok("send_bw -c UD -s 4096").sizes, vec![4096]);
    refused(
        "send_bw -c UD -s 4097",
        "-s 4097: Max message size in UD cannot be greater than MTU (4096)",
    );
    refused("send_lat -c UD -s 2048 -m 1024", "greater than MTU (1024)");
    assert_eq!(ok("send_bw -c UD -s 64").grh(), 40);
    assert_eq!(ok("send_bw -c UC -s 64").grh(), 0);
}

#[test]
fn fabric_flags_take_what_the_driver_carries() {
    assert!(params("write_bw -m 1024 -u 20 --tclass 96").is_ok());
    refused("write_bw -m 1000", "256, 512, 1024, 2048 or 4096");
    assert!(params("write_bw -u 32").is_err());
    for (line, want) in [
        (
            "write_bw -S 15 --flow_label 1048575 --pkey_index 3",
            (15, 0xf_ffff, 3),
        ),
        ("write_bw", (0, 0, 0)),
        // strtol base 0, as perftest reads them: hex and octal too.
        (
            "write_bw -S 0xa --flow_label 0xABCDE --pkey_index 0x2",
            (10, 0xa_bcde, 2),
        ),
        (
            "write_bw -S 017 --flow_label 0X10 --pkey_index 0",
            (15, 16, 0),
        ),
    ] {
        ok(line);
        let l = local(line);
        assert_eq!((l.sl, l.flow_label, l.pkey_index), want, "{line}");
    }
    refused("write_bw -S 16", "-S 16: only 16 service levels (0..15)");
    refused("write_bw -S 0x10", "-S 16: only 16 service levels (0..15)");
    for line in [
        "write_bw -S 0x",
        "write_bw -S 0x100",
        "write_bw --pkey_index 0x10000",
        "write_bw --flow_label 12z",
        "write_bw -S 08",
    ] {
        refused(
            line,
            "is not a number in range (decimal, 0x hex or 0 octal)",
        );
    }
    refused(
        "write_bw --flow_label 1048576",
        "--flow_label 1048576: the GRH flow label has 20 bits",
    );
}

#[test]
fn reporting_flags_belong_to_their_kind_of_test() {
    assert!(params("write_bw --output bandwidth").is_ok());
    assert!(params("send_bw --output message_rate").is_ok());
    assert!(params("read_lat --output latency").is_ok());
    refused("write_bw --output latency", "bandwidth or message_rate");
    refused("write_lat --output bandwidth", "can be latency");
    refused("write_lat -w 10", "BW tests only");
    refused("write_bw --latency_gap 5", "only on latency tests");
    refused("write_bw --perftest-stats", "only on latency tests");
    refused("write_bw -H", "only on latency tests");
    refused("send_bw -U", "only on latency tests");
    // -y is checked with -w only in perftest: here it needs -w.
    assert!(params("write_bw -y 1").is_err());
    assert!(params("write_bw -w 1 -y 1").is_ok());
    assert!(params("write_bw --output bandwidth --json").is_err());
}

#[test]
fn write_with_imm_and_send_with_imm() {
    // WRITE_IMM costs the responder a receive: perftest's receive depth rules apply.
    let p = ok("write_bw --write_with_imm");
    assert!(p.imm);
    assert_eq!(p.rx_depth, 512);
    assert_eq!(ok("write_lat --write_with_imm -r 7 -n 100").rx_depth, 8);
    assert_eq!(ok("write_bw").rx_depth, 1);
    assert!(!ok("write_bw").imm);
    assert!(ok("send_lat --send_with_imm").imm);
    refused(
        "send_bw --write_with_imm",
        "only for the write_lat/bw tests",
    );
    refused(
        "read_bw --write_with_imm",
        "only for the write_lat/bw tests",
    );
    refused(
        "write_lat --send_with_imm",
        "only for the send_lat/bw tests",
    );
    refused(
        "write_lat --write_with_imm -e",
        "events feature not available on WRITE verb",
    );
    refused(
        "write_bw --write_with_imm --perform_warm_up",
        "not with --write_with_imm",
    );
}

#[test]
fn use_srq_is_for_send_tests_with_a_depth_above_the_qps() {
    let p = ok("send_bw --use-srq -q 4");
    assert!(p.srq);
    assert_eq!(p.rx_depth, 512);
    assert!(ok("send_lat --send_with_imm --use-srq").srq);
    assert!(!ok("send_bw").srq);
    refused(
        "write_bw --use-srq",
        "using SRQ only available in SEND / SEND_IMM tests",
    );
    refused(
        "write_bw --write_with_imm --use-srq",
        "only available in SEND / SEND_IMM",
    );
    refused("read_lat --use-srq", "only available in SEND / SEND_IMM");
    // The depth is checked after it is lowered to -n, before it is made even.
    refused(
        "send_bw --use-srq -q 8 -r 7",
        "using SRQ depth (-r 7) should be greater than number of QPs (-q 8)",
    );
    refused(
        "send_bw --use-srq -q 8 -n 5",
        "should be greater than number of QPs",
    );
    assert_eq!(ok("send_bw --use-srq -q 8 -r 8").rx_depth, 8);
}

#[test]
fn recv_post_list_rules() {
    assert_eq!(ok("send_bw").recv_post_list, 1);
    assert_eq!(ok("send_bw --recv_post_list 8").recv_post_list, 8);
    assert_eq!(
        ok("write_bw --write_with_imm --recv_post_list 4").recv_post_list,
        4
    );
    refused(
        "send_bw -n 1001 --recv_post_list 2",
        "must be a multiple of receive post list size",
    );
    refused(
        "send_lat --recv_post_list 2",
        "receive post list is supported in BW tests only",
    );
    refused("write_bw --recv_post_list 2", "this test posts no receives");
    refused("send_bw --recv_post_list 0", "at least 1");
    // A list must fit the receive depth (with an SRQ, each QP's share of it).
    refused(
        "send_bw -r 4 --recv_post_list 8",
        "no whole receive post list fits the RX depth -r 4",
    );
    refused(
        "send_bw --use-srq -q 4 -r 6 --recv_post_list 2",
        "fits the RX depth -r 6 shared by the QPs",
    );
    assert!(params("send_bw --use-srq -q 4 -r 8 --recv_post_list 2").is_ok());
}

#[test]
fn run_infinitely_reports_every_period_of_d_seconds() {
    let p = ok("write_bw --run_infinitely");
    assert_eq!(p.periods, Some(u64::MAX));
    // perftest's DEF_DURATION: a row every 5 s; each period whole (no margins).
    assert_eq!((p.duration_ms, p.margin_ms), (Some(5000), 0));
    assert_eq!(ok("read_bw --run_infinitely -D 2").duration_ms, Some(2000));
    assert_eq!(ok("write_bw --run_infinitely --periods 3").periods, Some(3));
    assert_eq!(ok("write_bw").periods, None);
    // Duration mode: -t is not lowered to -n, the odd receive depth stays odd.
    assert_eq!(ok("write_bw --run_infinitely -n 10").tx_depth, 128);
    assert_eq!(ok("send_bw --run_infinitely -r 33").rx_depth, 33);
    refused("write_lat --run_infinitely", "exists only in BW tests");
    refused("send_bw --run_infinitely -e", "does not support events");
    refused(
        "send_bw --run_infinitely -b",
        "not supported in SEND, SEND_IMM or WRITE_IMM Bidirectional",
    );
    refused(
        "write_bw --write_with_imm --run_infinitely -b",
        "Bidirectional BW test",
    );
    assert!(ok("write_bw --run_infinitely -b").duplex);
    refused("write_bw --run_infinitely -a", "not with -a");
    refused(
        "write_bw --run_infinitely -D 4 -f 1",
        "every period is reported whole",
    );
    assert!(params("write_bw --periods 2").is_err());
    refused(
        "write_bw --run_infinitely --json",
        "an endless run never reaches",
    );
    assert!(params("write_bw --run_infinitely --periods 2 --json").is_ok());
}

#[test]
fn the_software_rate_limiter() {
    use mlx5_perf::cli::RateUnits;
    let r = ok("write_bw --rate_limit 10 --rate_limit_type SW")
        .rate_limit
        .unwrap();
    // g (Gb/s) by default, bursts of the TX depth.
    assert_eq!((r.rate, r.units, r.burst), (10.0, RateUnits::Gbits, 128));
    // perftest's rate_limit_pps, truncated: 10 Gb/s of 65536-byte messages.
    assert_eq!(r.pps(65536), 19073);
    let r =
        ok("read_bw -s 4096 --rate_limit 100 --rate_units M --rate_limit_type SW --burst_size 8")
            .rate_limit
            .unwrap();
    assert_eq!((r.pps(4096), r.burst), (25600, 8));
    let r = ok("send_bw -n 100 --rate_limit 5000.5 --rate_units p --rate_limit_type SW")
        .rate_limit
        .unwrap();
    // The burst is the TX depth after it is lowered to -n.
    assert_eq!((r.pps(1), r.burst), (5000, 100));
    assert!(ok("write_bw").rate_limit.is_none());
    assert!(ok("write_bw -b --rate_limit 1 --rate_limit_type SW")
        .rate_limit
        .is_some());
    // Without a type a rate selects the HW limiter, as in perftest: refused with why.
    refused("write_bw --rate_limit 10", "QP's static rate is not among");
    refused(
        "write_bw --rate_limit 10 --rate_limit_type HW",
        "give --rate_limit_type SW",
    );
    // Packet pacing: perftest's M only, times 8 x 1024 kbit/s; no burst; BW tests.
    let p = ok("write_bw --rate_limit 12.5 --rate_units M --rate_limit_type PP");
    assert_eq!((p.pacing_kbps, p.rate_limit), (Some(102_400), None));
    assert_eq!(
        ok("write_bw --rate_limit 12.5 --rate_limit_type SW").pacing_kbps,
        None
    );
    refused(
        "write_bw --rate_limit 10 --rate_limit_type PP",
        "Packet Pacing only supports MEGA_BYTE_PS",
    );
    refused("write_bw --rate_limit_type PP", "must specify a rate limit");
    refused(
        "write_bw --rate_limit 1 --rate_units M --rate_limit_type PP --burst_size 8",
        "sets the rate alone",
    );
    refused(
        "write_lat --rate_limit 1 --rate_units M --rate_limit_type PP",
        "bandwidth tests only",
    );
    for line in [
        "write_lat --rate_limit 1 --rate_limit_type SW",
        "atomic_bw --rate_limit 1 --rate_limit_type SW",
        "send_bw -b --rate_limit 1 --rate_limit_type SW",
    ] {
        refused(
            line,
            "can't be executed on non-BW, ATOMIC or bidirectional SEND",
        );
    }
    refused(
        "write_bw --rate_limit_type SW",
        "give the rate with --rate_limit",
    );
    refused(
        "write_bw --rate_limit 0 --rate_limit_type SW",
        "must be a positive number",
    );
    refused(
        "write_bw --rate_limit=-3 --rate_limit_type SW",
        "must be a positive number",
    );
    refused(
        "write_bw --burst_size 8",
        "can't enable burst mode when rate limiter is off",
    );
    refused("write_bw --rate_units x", "invalid value");
    refused(
        "write_bw --run_infinitely --rate_limit 1 --rate_limit_type SW",
        "does not support rate limit feature yet",
    );
    refused(
        "write_bw -s 8M --rate_limit 1 --rate_units M --rate_limit_type SW",
        "less than one 8388608-byte message per second",
    );
}

#[test]
fn cpu_util_needs_duration_mode_and_counters_need_names() {
    assert!(params("write_bw -D 1 --cpu_util").is_ok());
    assert!(params("read_lat -D 1 --cpu_util").is_ok());
    refused(
        "write_bw --cpu_util",
        "CPU Utilization works only with Duration mode",
    );
    // perftest checks before --run_infinitely turns duration mode on.
    refused(
        "write_bw --run_infinitely --cpu_util",
        "works only with Duration mode",
    );
    assert!(params("write_bw -W packets,cqes").is_ok());
    refused("write_bw -W packets,,cqes", "an empty name");
}

#[test]
fn small_reporting_and_direction_flags() {
    assert!(params("write_lat -C").is_ok());
    refused("write_bw -C", "available only on Latency tests");
    assert!(params("write_bw -b --report-both").is_ok());
    refused("write_bw --report-both", "needs -b");
    assert!(params("send_bw -e -X 0").is_ok());
    refused("send_bw -X 1", "one completion vector, 0");
    refused(
        "write_bw -X 0",
        "events feature not available on WRITE verb",
    );
    assert!(ok("send_bw --reversed").reversed);
    assert!(!ok("send_bw").reversed);
    refused("write_lat --reversed", "bandwidth tests only");
    assert!(params("read_bw --wait_destroy 3").is_ok());
}

#[test]
fn data_validation_follows_perftests_checks() {
    assert!(ok("write_bw --data_validation").validate);
    assert!(ok("read_bw -q 4 --data_validation").validate);
    assert!(!ok("write_bw").validate);
    for (line, why) in [
        (
            "send_bw --data_validation",
            "only supported with WRITE or READ verb",
        ),
        (
            "atomic_bw --data_validation",
            "only supported with WRITE or READ verb",
        ),
        (
            "write_bw --write_with_imm --data_validation",
            "only supported with WRITE or READ verb",
        ),
        (
            "read_lat --data_validation",
            "only supported in bandwidth tests",
        ),
        (
            "write_bw -l 2 --data_validation",
            "incompatible with --post_list > 1",
        ),
        (
            "write_bw --run_infinitely --data_validation",
            "incompatible with --run_infinitely",
        ),
        ("write_bw -a --data_validation", "incompatible with -a"),
        (
            "write_bw -t 16 --data_validation",
            "requires tx_depth >= 32",
        ),
        // The TX depth after it is lowered to -n.
        ("read_bw -n 20 --data_validation", "requires tx_depth >= 32"),
        ("write_bw -b --data_validation", "not available with -b"),
    ] {
        refused(line, why);
    }
}

/// `-R`, `-z`, `-T`, `--retry_count` as perftest's parser and `force_dependecies` take them:
/// `-R` implies `-z`'s exchange, `-T` only with `-R`, no UC / XRC / DC over rdma_cm; and
/// ours: RC only, no path flags that rdma_cm's route decides.
#[test]
fn rdma_cm_flags_follow_perftests_rules() {
    assert_eq!(ok("write_bw").rdma_cm, RdmaCm::Off);
    assert_eq!(ok("write_bw -z").rdma_cm, RdmaCm::Exchange);
    assert_eq!(ok("write_bw --comm_rdma_cm").rdma_cm, RdmaCm::Exchange);
    assert_eq!(ok("write_lat -R").rdma_cm, RdmaCm::Qps);
    assert_eq!(ok("read_bw --rdma_cm -z").rdma_cm, RdmaCm::Qps);
    for test in ["send_lat", "send_bw", "read_lat", "atomic_bw"] {
        assert_eq!(ok(&format!("{test} -R")).rdma_cm, RdmaCm::Qps, "{test}");
    }
    assert_eq!(local("write_bw -R").tos, None);
    assert_eq!(local("write_bw -R -T 96").tos, Some(96));
    assert_eq!(local("write_bw -R --tos 255").tos, Some(255));
    assert_eq!(local("write_bw").retry_count, 7);
    assert_eq!(local("write_bw -R --retry_count 3").retry_count, 3);
    refused("write_bw -R --retry_count 8", "--retry_count");
    refused("write_bw -R -T 256", "--tos");
    refused(
        "write_bw -T 0",
        "TOS only valid for rdma_cm based QP and RawEth QP",
    );
    refused(
        "write_bw -z -T 4",
        "TOS only valid for rdma_cm based QP and RawEth QP",
    );
    refused("write_bw -R -c UC", "-R: UC is not supported in librdmacm");
    refused("write_bw -R -c XRC", "-R: XRC does not support RDMA_CM");
    refused("write_bw -R -c DC", "-R: DC does not support RDMA_CM");
    refused(
        "send_bw -R -c UD",
        "-R with -c UD: mlx5-perf's rdma_cm record carries no Q_Key, DC target or XRC SRQ number (RC only",
    );
    refused(
        "send_bw -z -c UD",
        "-z with -c UD: mlx5-perf's rdma_cm record carries no Q_Key, DC target or XRC SRQ number (RC and UC",
    );
    refused("write_bw -z -c DC", "-z with -c DC");
    refused("write_bw -z -c XRC", "-z with -c XRC");
    assert_eq!(ok("write_bw -z -c UC").rdma_cm, RdmaCm::Exchange);
    for flag in [
        "-S 1",
        "--tclass 8",
        "--flow_label 5",
        "--pkey_index 1",
        "-x 3",
    ] {
        let name = flag.split(' ').next().unwrap();
        refused(
            &format!("write_bw -R {flag}"),
            &format!("{name} with -R: the path"),
        );
    }
}

/// perftest's `--log_dci_streams` / `--log_active_dci_streams` checks, and ours.
#[test]
fn dci_streams_are_dc_only_and_the_active_ones_default_to_all() {
    let p = ok("write_bw -c DC --log_dci_streams 3");
    let s = p.dci_streams.unwrap();
    assert_eq!((s.log, s.active), (3, 3));
    // Round-robin over 2^active, from 0 (perftest's `dci_stream_id`).
    let s = ok("write_bw -c DC --log_dci_streams 3 --log_active_dci_streams 1")
        .dci_streams
        .unwrap();
    let seq: Vec<u16> = std::iter::successors(Some(0), |&i| Some(s.next(i)))
        .take(5)
        .collect();
    assert_eq!(seq, [0, 1, 0, 1, 0]);
    assert_eq!(ok("write_bw -c DC").dci_streams, None);
    assert_eq!(ok("write_bw -c DC --log_dci_streams 0").dci_streams, None);
    refused(
        "write_bw --log_dci_streams 2",
        "log_dci_streams supported only on DC",
    );
    refused(
        "write_bw --log_active_dci_streams 2",
        "log_active_dci_streams supported only on DC",
    );
    refused(
        "write_bw -c DC --log_active_dci_streams 2",
        "log_dci_streams must be greater than 0",
    );
    refused(
        "write_bw -c DC --log_dci_streams 1 --log_active_dci_streams 2",
        "more than the 1 of --log_dci_streams",
    );
    refused("write_bw -c DC --log_dci_streams 17", "at most 16");
}
