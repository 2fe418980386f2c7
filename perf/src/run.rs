//! Running a benchmark: on the model (both sides in this process, one thread each, talking
//! over TCP on 127.0.0.1 exactly as two hosts would) or on hardware (server or client).

use std::net::{TcpListener, TcpStream};

use mlx5_direct::backend::sim::{Fabric, Fault, NicConfig, Sim};
use mlx5_direct::{Context, MemOptions};

use crate::bench::{self, Local, Params, Row, Setup, Sink};
use crate::cli::{BenchArgs, Test};
use crate::exchange::Peer;
use crate::report::{Extras, Format, Origin, Reporter};
use crate::stats::BwUnit;
use crate::Error;

/// Runs `test` as the flags say.
pub fn bench(test: Test, args: &BenchArgs) -> Result<(), Error> {
    let params = Params::new(test, args)?;
    let local = Local::new(args);
    // perftest's --numa_node runs the test on the node's CPUs (perftest_resources.c
    // `set_process_affinity` / `run_on_node`); threads started from here (the model's
    // server) inherit the binding.
    if let Some(node) = args.numa_node {
        mlx5_direct::run_on_node(node)?;
    }
    if args.corrupt_payloads && args.device.is_some() {
        return Err("--corrupt-payloads injects a fault into the model; a device has none".into());
    }
    match &args.device {
        None if args.host.is_some() => Err(
            "the model runs both ends in this process: no host to connect to (give -d DEVICE \
             for perftest's server/client form on hardware)"
                .into(),
        ),
        None => model(&params, local, args),
        Some(device) => hardware(device, &params, local, args),
    }
}

fn format(args: &BenchArgs) -> Format {
    if let Some(output) = args.output {
        Format::Number(output)
    } else if args.json {
        Format::Json
    } else if args.csv {
        Format::Csv
    } else {
        Format::Text
    }
}

fn reporter(
    args: &BenchArgs,
    params: &Params,
    model: bool,
    link: Option<String>,
) -> Result<Reporter, Error> {
    let cycles_per_usec = match args.cycles {
        true => Some(
            std::fs::read_to_string("/proc/cpuinfo")
                .ok()
                .as_deref()
                .and_then(bench::cpu_mhz)
                .ok_or("-C: no \"cpu MHz\" in /proc/cpuinfo to turn microseconds into cycles")?,
        ),
        false => None,
    };
    let origin = Origin {
        model,
        requested_mode: format!("{:?}", args.mode).to_lowercase(),
        link,
        gid_index: args.gid_index,
        peak: !args.no_peak,
        events: args.events,
    };
    let extras = Extras {
        out_json: args.out_json.then(|| args.out_json_file.clone()),
        output: args.output,
        limit_bw: args.limit_bw,
        limit_msgrate: args.limit_msgrate,
        histogram: args.histogram,
        unsorted: args.unsorted,
        cpu_util: args.cpu_util,
        counters: args.counters.clone(),
        report_both: args.report_both,
        cycles_per_usec,
    };
    Ok(Reporter::new(
        format(args),
        origin,
        params,
        BwUnit::new(args.report_gbits),
        args.plot.clone(),
        extras,
    ))
}

/// One end of a run: the sending side (`bench::client`) or the other (`bench::serve`).
/// Without `--reversed` the end with a host sends; with it, the end without one.
fn end<B: bench::Device>(
    sends: bool,
    ctx: Context<B>,
    peer: Peer,
    params: &Params,
    local: Local,
    sink: &mut dyn Sink,
) -> Result<(), Error> {
    if sends {
        bench::client(ctx, peer, params, local, sink)
    } else {
        bench::serve(ctx, peer, params, local, sink)
    }
}

/// Drops a report.
struct Quiet;

impl Sink for Quiet {
    fn header(&mut self, _: &Setup, _: &Params) {}

    fn row(&mut self, _: Row) -> Result<(), Error> {
        Ok(())
    }
}

/// Both sides on model NICs of one fabric: the server in a thread, the client here.
fn model(params: &Params, local: Local, args: &BenchArgs) -> Result<(), Error> {
    let fabric = Fabric::new();
    let config = NicConfig::default();
    let link = crate::probe::describe_link(&config.pcie);
    let listener = TcpListener::bind(("127.0.0.1", 0))?;
    let addr = listener.local_addr()?;
    // The hidden --corrupt-payloads: every payload either NIC writes to host memory.
    let corrupt = |sim: &Sim| {
        if args.corrupt_payloads {
            sim.nic().inject(Fault::CorruptPayload {
                qpn: None,
                count: u32::MAX,
            });
        }
    };
    let rings = ring_memory(&local);
    let server_ctx = Context::new(Sim::on_fabric(&fabric, config.clone()).with_ring_memory(rings));
    corrupt(server_ctx.backend());
    let server_params = params.clone();
    let mut report = reporter(args, params, true, Some(link))?;
    let server = std::thread::spawn(move || -> Result<(), Error> {
        let (stream, _) = listener.accept()?;
        // One table: the client's. The server's own report is for a server on its own host.
        let sends = server_params.reversed;
        let peer = Peer::new(stream);
        end(sends, server_ctx, peer, &server_params, local, &mut Quiet)
    });
    let ctx = Context::new(Sim::on_fabric(&fabric, config).with_ring_memory(rings));
    corrupt(ctx.backend());
    let sends = !params.reversed;
    let client = TcpStream::connect(addr)
        .map_err(Error::from)
        .and_then(|s| end(sends, ctx, Peer::new(s), params, local, &mut report));
    let server = server
        .join()
        .map_err(|_| Error::from("the server thread panicked"))?;
    match (client, server) {
        (Err(c), Err(s)) if c.to_string() != s.to_string() => {
            Err(format!("client: {c}; server: {s}").into())
        }
        (Err(e), _) | (Ok(()), Err(e)) => Err(e),
        (Ok(()), Ok(())) => report.finish(),
    }
}

/// Where the rings go: perftest's --numa_node also sets the process's memory policy to the
/// node (`numa_set_membind` in `run_on_node`), so rings and doorbell records go there too,
/// on the model and (through libmlx5's external allocator) on hardware.
fn ring_memory(local: &Local) -> MemOptions {
    MemOptions {
        numa_node: local.memory.numa_node,
        ..MemOptions::BASE
    }
}

/// perftest's server / client form on a ConnectX NIC: without a host this side listens on
/// `-p` and serves; with one it connects and reports.
#[cfg(feature = "verbs")]
fn hardware(device: &str, params: &Params, local: Local, args: &BenchArgs) -> Result<(), Error> {
    use mlx5_direct::backend::verbs::{Verbs, VerbsOptions};

    let ctx = Context::<Verbs>::open(&VerbsOptions {
        device: Some(device.to_string()),
        port: args.ib_port,
        gid_index: args.gid_index,
        ring_memory: local.memory.numa_node.map(|_| ring_memory(&local)),
    })?;
    match &args.host {
        None => {
            let listener = TcpListener::bind(("0.0.0.0", args.port))?;
            eprintln!(
                "mlx5-perf: {} server on {device}, waiting for a client on TCP port {}",
                params.test.name(),
                args.port
            );
            let (stream, from) = listener.accept()?;
            eprintln!("mlx5-perf: client {from} connected");
            let mut report = reporter(args, params, false, None)?;
            let sends = params.reversed;
            end(sends, ctx, Peer::new(stream), params, local, &mut report)?;
            report.finish()
        }
        Some(host) => {
            let stream = TcpStream::connect((host.as_str(), args.port))
                .map_err(|e| format!("connect to {host}:{}: {e}", args.port))?;
            let mut report = reporter(args, params, false, None)?;
            let sends = !params.reversed;
            end(sends, ctx, Peer::new(stream), params, local, &mut report)?;
            report.finish()
        }
    }
}

#[cfg(not(feature = "verbs"))]
fn hardware(device: &str, _: &Params, _: Local, _: &BenchArgs) -> Result<(), Error> {
    Err(format!(
        "-d {device}: this mlx5-perf was built without the `verbs` feature, so it runs on the \
         model only; rebuild with `--features verbs` (needs rdma-core's libibverbs-dev)"
    )
    .into())
}
