//! The `mlx5-perf` benchmark protocol between two model NICs of one fabric, one thread per
//! side, over TCP on 127.0.0.1 with an OS-chosen port: what runs without hardware exactly as
//! a server and a client on two hosts would.

use std::net::{TcpListener, TcpStream};
use std::sync::Arc;

use clap::Parser;
use mlx5_direct::backend::sim::{Fabric, Fault, NicConfig, Sim};
use mlx5_direct::Context;
use mlx5_perf::bench::{self, Error, Local, Params, RdmaCm, Row, Setup, Sink, Stats};
use mlx5_perf::cli::{AtomicType, Cli, Kind, Test, Verb};
use mlx5_perf::exchange::Peer;
use mlx5_perf::stats::{BwRow, LatRow};

fn params(verb: Verb, kind: Kind, size: usize, iters: u64) -> Params {
    Params {
        connection: bench::Connection::Rc,
        test: Test { verb, kind },
        atomic_type: AtomicType::FetchAndAdd,
        sizes: vec![size],
        iters,
        duration_ms: None,
        margin_ms: 0,
        inline_size: if verb == Verb::Write { 220 } else { 0 },
        tx_depth: if kind == Kind::Lat { 1 } else { 32 },
        rx_depth: 64,
        post_list: 1,
        cq_mod: if kind == Kind::Lat { 1 } else { 8 },
        qps: 1,
        out_reads: 0,
        duplex: false,
        warm_up: false,
        imm: false,
        periods: None,
        rate_limit: None,
        validate: false,
        reversed: false,
        srq: false,
        recv_post_list: 1,
        rdma_cm: RdmaCm::Off,
        use_dm: false,
        dci_streams: None,
        pacing_kbps: None,
        mcast: None,
    }
}

#[derive(Default)]
struct Collect {
    setup: Option<Setup>,
    rows: Vec<Row>,
}

impl Sink for Collect {
    fn header(&mut self, setup: &Setup, _: &Params) {
        self.setup = Some(setup.clone());
    }

    fn row(&mut self, row: Row) -> Result<(), Error> {
        self.rows.push(row);
        Ok(())
    }
}

/// Runs a server with `server` and a client with `client` on two NICs of one fabric; the
/// client's report, then the server's.
fn run(server: Params, client: Params) -> (Result<(), Error>, Result<(), Error>, Collect, Collect) {
    run_with(server, client, None)
}

/// [`run`], the client's NIC given `fault` first.
fn run_with(
    server: Params,
    client: Params,
    fault: Option<Fault>,
) -> (Result<(), Error>, Result<(), Error>, Collect, Collect) {
    let fabric: Arc<Fabric> = Fabric::new();
    let cli = Cli::try_parse_from(["mlx5-perf", "write_bw"]).unwrap();
    let local = Local::new(cli.command.bench().unwrap().1);
    let listener = TcpListener::bind(("127.0.0.1", 0)).unwrap();
    let addr = listener.local_addr().unwrap();
    let server_ctx = Context::new(Sim::on_fabric(&fabric, NicConfig::default()));
    let thread = std::thread::spawn(move || {
        let (stream, _) = listener.accept().unwrap();
        let mut sink = Collect::default();
        let result = bench::serve(
            server_ctx,
            Peer::new(stream),
            &server,
            local,
            &mut sink,
            None,
        );
        (result, sink)
    });
    let ctx = Context::new(Sim::on_fabric(&fabric, NicConfig::default()));
    if let Some(fault) = fault {
        ctx.backend().nic().inject(fault);
    }
    let mut sink = Collect::default();
    let stream = TcpStream::connect(addr).unwrap();
    let c = bench::client(ctx, Peer::new(stream), &client, local, &mut sink, None);
    let (s, server_sink) = thread.join().unwrap();
    (s, c, sink, server_sink)
}

/// [`run`] with the same parameters on both sides, both succeeding.
fn run_ok(p: Params) -> (Collect, Collect) {
    let (server, client, sink, served) = run(p.clone(), p);
    server.unwrap();
    client.unwrap();
    (sink, served)
}

fn lat(row: &Row) -> &LatRow {
    match &row.stats {
        Stats::Lat(l) => l,
        Stats::Bw(_) => panic!("a latency row"),
    }
}

fn bw(row: &Row) -> &BwRow {
    match &row.stats {
        Stats::Bw(b) => b,
        Stats::Lat(_) => panic!("a bandwidth row"),
    }
}

#[test]
fn write_lat_between_two_model_nics() {
    let p = params(Verb::Write, Kind::Lat, 8, 100);
    let (sink, _) = run_ok(p);
    let setup = sink.setup.unwrap();
    // Two NICs: LIDs 1 (server, attached first) and 2, each told the other's QP.
    assert_eq!((setup.local[0].lid, setup.remote[0].lid), (2, 1));
    assert_eq!(sink.rows.len(), 1);
    let Stats::Lat(lat) = &sink.rows[0].stats else {
        panic!("a latency row")
    };
    assert_eq!((lat.bytes, lat.iterations), (8, 100));
    assert!(lat.t_min <= lat.t_typical && lat.t_typical <= lat.t_max);
    // Per iteration each NIC sends one 8-byte inline WRITE by BlueFlame (88 B down), writes
    // its CQE (88 B up) and receives the peer's payload (8 + 24 B up).
    let pcie = sink.rows[0].pcie.unwrap();
    for side in [pcie.client, pcie.server] {
        assert_eq!(side.mmio_writes, 1.0);
        assert_eq!(side.dma_reads, 0.0);
        assert_eq!(side.dma_writes, 2.0);
        assert_eq!((side.bytes_down, side.bytes_up), (88.0, 88.0 + 32.0));
    }
}

#[test]
fn send_bw_between_two_model_nics() {
    let p = params(Verb::Send, Kind::Bw, 256, 500);
    let (sink, _) = run_ok(p);
    let Stats::Bw(bw) = &sink.rows[0].stats else {
        panic!("a bandwidth row")
    };
    assert_eq!((bw.bytes, bw.iterations), (256, 500));
    // Every message landed in a receive: one scatter MWr and one CQE per message at the
    // server, plus the receive WQE fetch (and now and then the receive doorbell record).
    let server = sink.rows[0].pcie.unwrap().server;
    assert_eq!(server.dma_writes, 2.0);
    assert!(server.dma_reads >= 1.0, "{server:?}");
}

#[test]
fn a_parameter_mismatch_stops_both_sides_and_names_the_flag() {
    let (server, client, sink, _) = run(
        params(Verb::Write, Kind::Bw, 64, 100),
        params(Verb::Write, Kind::Bw, 64, 200),
    );
    let client = client.unwrap_err().to_string();
    assert_eq!(
        client,
        "parameter mismatch: `iters` is 200 on this side but 100 on the peer (set by -n); \
         give both sides the same flags"
    );
    let server = server.unwrap_err().to_string();
    assert!(
        server.contains("`iters` is 100 on this side but 200"),
        "{server}"
    );
    assert!(sink.setup.is_none() && sink.rows.is_empty());
}

#[test]
fn a_different_test_is_named() {
    let (_, client, _, _) = run(
        params(Verb::Read, Kind::Lat, 8, 10),
        params(Verb::Write, Kind::Lat, 8, 10),
    );
    let client = client.unwrap_err().to_string();
    assert!(
        client.contains("`test.verb` is \"write\" on this side but \"read\""),
        "{client}"
    );
}

#[test]
fn the_ping_pong_server_reports_its_own_latency() {
    let p = params(Verb::Send, Kind::Lat, 8, 100);
    let (sink, served) = run_ok(p);
    // perftest's server times its consecutive answers: one sample fewer than iterations,
    // and #iterations is -n, as perftest prints it.
    assert!(served.setup.is_some());
    assert_eq!(served.rows.len(), 1);
    let s = lat(&served.rows[0]);
    assert_eq!((s.bytes, s.iterations), (8, 100));
    assert!(s.t_min <= s.t_typical && s.t_typical <= s.t_max);
    assert_eq!(served.rows[0].messages, 100);
    assert_eq!(
        served.rows[0].latencies.as_ref().map(|l| l.count()),
        Some(99)
    );
    assert_eq!(lat(&sink.rows[0]).iterations, 100);
}

#[test]
fn the_write_bw_server_prints_the_clients_row() {
    let p = params(Verb::Write, Kind::Bw, 64, 300);
    let (sink, served) = run_ok(p);
    assert_eq!(served.rows.len(), 1);
    let (c, s) = (bw(&sink.rows[0]), bw(&served.rows[0]));
    assert_eq!((s.bytes, s.iterations), (64, 300));
    // The same numbers, through JSON (exact to the last bit or two).
    let same = |a: f64, b: f64| (a - b).abs() <= 1e-12 * b.abs();
    assert!(same(s.bw_peak.unwrap(), c.bw_peak.unwrap()));
    assert!(same(s.bw_average, c.bw_average) && same(s.seconds, c.seconds));
    assert!(same(s.msg_rate_mpps, c.msg_rate_mpps));
    let (cp, sp) = (sink.rows[0].pcie.unwrap(), served.rows[0].pcie.unwrap());
    assert_eq!(cp.server.dma_writes, sp.server.dma_writes);
}

#[test]
fn the_send_bw_server_measures_what_it_receives() {
    let p = params(Verb::Send, Kind::Bw, 256, 400);
    let (_, served) = run_ok(p);
    let s = bw(&served.rows[0]);
    assert_eq!((s.bytes, s.iterations), (256, 400));
    // A receiver has no posts to time a peak from (perftest: not measured).
    assert_eq!(s.bw_peak, None);
    assert!(s.bw_average > 0.0 && s.seconds > 0.0);
}

#[test]
fn read_and_atomic_latency_servers_print_no_row() {
    for verb in [Verb::Read, Verb::Atomic] {
        let p = params(verb, Kind::Lat, 8, 20);
        let (sink, served) = run_ok(p);
        assert_eq!(sink.rows.len(), 1);
        assert!(served.setup.is_some() && served.rows.is_empty());
    }
}

#[test]
fn duration_mode_samples_between_the_margins_only() {
    for kind in [Kind::Lat, Kind::Bw] {
        let mut p = params(Verb::Write, kind, 64, 1);
        p.duration_ms = Some(300);
        p.margin_ms = 100;
        let (sink, served) = run_ok(p);
        let row = &sink.rows[0];
        let sampled = match kind {
            Kind::Lat => lat(row).iterations,
            Kind::Bw => {
                let b = bw(row);
                // The window is timed from the first look at the CQ inside it to the
                // first look after it; no peak in duration mode.
                assert!(b.seconds < 0.3, "{b:?}");
                assert_eq!(b.bw_peak, None);
                b.iterations
            }
        };
        // Both margins ran and were not sampled.
        assert!(
            sampled > 0 && sampled < row.messages,
            "{kind:?}: {sampled} of {}",
            row.messages
        );
        assert_eq!(served.rows.len(), 1);
    }
}

/// UD and UC do not retry: messages the client's NIC loses never arrive, and the server
/// reports what did arrive once nothing more comes, where RC would have retransmitted.
#[test]
fn unreliable_transports_report_lost_messages_and_finish() {
    for connection in [bench::Connection::Ud, bench::Connection::Uc] {
        // A receive posted for every message: only the lost ones are missing.
        let p = Params {
            connection,
            rx_depth: 100,
            ..params(Verb::Send, Kind::Bw, 64, 100)
        };
        let fault = Fault::LosePackets {
            qpn: None,
            count: 3,
        };
        let (server, client, sink, served) = run_with(p.clone(), p, Some(fault));
        server.unwrap();
        client.unwrap();
        // The client completed all 100 sends; 97 receives completed at the server.
        let completions = sink.rows[0].completions.as_ref().unwrap();
        assert_eq!(completions.server.get("recv"), Some(&97), "{connection:?}");
        assert_eq!(bw(&sink.rows[0]).iterations, 100, "{connection:?}");
        let own = served.rows[0].completions.as_ref().unwrap();
        assert_eq!(own.server.get("recv"), Some(&97), "{connection:?}");
    }
}

/// A UD ping-pong: every message is found after the receive's GRH area with the marker the
/// sender gave it (a payload at the wrong offset fails the run).
#[test]
fn ud_send_lat_between_two_model_nics() {
    let p = Params {
        connection: bench::Connection::Ud,
        ..params(Verb::Send, Kind::Lat, 100, 50)
    };
    let (sink, served) = run_ok(p);
    assert_eq!(
        (lat(&sink.rows[0]).bytes, lat(&sink.rows[0]).iterations),
        (100, 50)
    );
    let completions = sink.rows[0].completions.as_ref().unwrap();
    assert_eq!(completions.client.get("recv"), Some(&50));
    assert_eq!(completions.server.get("recv"), Some(&50));
    assert_eq!(served.rows.len(), 1);
}
