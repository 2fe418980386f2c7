//! The `mlx5-perf` benchmark protocol between two model NICs of one fabric, one thread per
//! side, over TCP on 127.0.0.1 with an OS-chosen port: what runs without hardware exactly as
//! a server and a client on two hosts would. The tool's own modules are compiled in.
#![cfg(feature = "cli")]
#![allow(dead_code)] // the tool's modules; the tests use part of them

#[path = "../src/bin/mlx5-perf/bench.rs"]
mod bench;
#[path = "../src/bin/mlx5-perf/cli.rs"]
mod cli;
/// `cli` names the `cpu` subcommand's arguments; that subcommand is not under test here.
mod cpu {
    #[derive(clap::Args, Debug, Clone)]
    pub struct CpuArgs {}
}
#[path = "../src/bin/mlx5-perf/exchange.rs"]
mod exchange;
#[path = "../src/bin/mlx5-perf/stats.rs"]
mod stats;

use std::net::{TcpListener, TcpStream};
use std::sync::Arc;

use bench::{Error, Local, Params, Row, Setup, Sink, Stats};
use cli::{AtomicType, Kind, Mode, Test, Verb};
use exchange::Peer;
use mlx5_direct::backend::sim::{Fabric, NicConfig, Sim};
use mlx5_direct::Context;

fn params(verb: Verb, kind: Kind, size: usize, iters: u64) -> Params {
    Params {
        test: Test { verb, kind },
        atomic_type: AtomicType::FetchAndAdd,
        sizes: vec![size],
        iters,
        duration: None,
        inline_size: if verb == Verb::Write { 220 } else { 0 },
        tx_depth: if kind == Kind::Lat { 1 } else { 32 },
        rx_depth: 64,
        post_list: 1,
        cq_mod: if kind == Kind::Lat { 1 } else { 8 },
        qps: 1,
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

/// Runs a server with `server` and a client with `client` on two NICs of one fabric.
fn run(server: Params, client: Params) -> (Result<(), Error>, Result<(), Error>, Collect) {
    let fabric: Arc<Fabric> = Fabric::new();
    let local = Local {
        mode: Mode::Auto,
        port: 1,
    };
    let listener = TcpListener::bind(("127.0.0.1", 0)).unwrap();
    let addr = listener.local_addr().unwrap();
    let server_ctx = Context::new(Sim::on_fabric(&fabric, NicConfig::default()));
    let thread = std::thread::spawn(move || {
        let (stream, _) = listener.accept().unwrap();
        bench::serve(server_ctx, Peer::new(stream), &server, local, |_| {})
    });
    let ctx = Context::new(Sim::on_fabric(&fabric, NicConfig::default()));
    let mut sink = Collect::default();
    let stream = TcpStream::connect(addr).unwrap();
    let c = bench::client(ctx, Peer::new(stream), &client, local, false, &mut sink);
    (thread.join().unwrap(), c, sink)
}

#[test]
fn write_lat_between_two_model_nics() {
    let p = params(Verb::Write, Kind::Lat, 8, 100);
    let (server, client, sink) = run(p.clone(), p);
    server.unwrap();
    client.unwrap();
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
    let (server, client, sink) = run(p.clone(), p);
    server.unwrap();
    client.unwrap();
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
    let (server, client, sink) = run(
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
    let (_, client, _) = run(
        params(Verb::Read, Kind::Lat, 8, 10),
        params(Verb::Write, Kind::Lat, 8, 10),
    );
    let client = client.unwrap_err().to_string();
    assert!(
        client.contains("`test.verb` is \"write\" on this side but \"read\""),
        "{client}"
    );
}
