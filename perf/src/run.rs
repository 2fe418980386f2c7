//! Running a benchmark: on the model (both sides in this process, one thread each, talking
//! over TCP on 127.0.0.1 exactly as two hosts would) or on hardware (server or client).

use std::net::{TcpListener, TcpStream};

use mlx5_direct::backend::sim::{hw, Fabric, Fault, NicConfig, Sim};
use mlx5_direct::{Context, MemOptions};

use crate::bench::{self, Local, Params, RdmaCm, Row, Setup, Sink};
use crate::cli::{BenchArgs, Kind, Link, Test};
use crate::exchange::Peer;
use crate::report::{Extras, Format, Origin, Reporter};
use crate::stats::BwUnit;
use crate::Error;

/// Runs `test` as the flags say.
pub fn bench(test: Test, args: &BenchArgs) -> Result<(), Error> {
    let params = Params::new(test, args)?;
    let local = Local::new(args);
    if local.perftest_exchange {
        bench::perftest::check(&params)?;
    }
    // perftest's --numa_node runs the test on the node's CPUs (perftest_resources.c
    // `set_process_affinity` / `run_on_node`); threads started from here (the model's
    // server) inherit the binding.
    if let Some(node) = args.numa_node {
        mlx5_direct::run_on_node(node)?;
    }
    if args.corrupt_payloads && args.device.is_some() {
        return Err("--corrupt-payloads injects a fault into the model; a device has none".into());
    }
    if args.model_clock_khz.is_some() && args.device.is_some() {
        return Err("--model-clock-khz sets the model's clock; a device has its own".into());
    }
    if args.hw_timestamps && test.kind == Kind::Bw {
        return Err(format!(
            "--hw-timestamps: latency tests only ({} has no per-message latency to time; \
             the NIC's clock is not used for bandwidth)",
            test.name()
        )
        .into());
    }
    if args.force_link.is_some() && args.device.is_some() {
        return Err(
            "--force-link sets the model's link layer; a device's is its port's (-i)".into(),
        );
    }
    if let Some(x) = args.gid_index.filter(|&x| x != 0 && args.device.is_none()) {
        return Err(format!("-x {x}: the model's ports have one GID, index 0").into());
    }
    if args.dm_size.is_some() && args.device.is_some() {
        return Err("--dm-size sizes the model's device memory; a device reports its own".into());
    }
    if args.device.is_none() && params.rdma_cm != RdmaCm::Off {
        return Err(format!(
            "{}: rdma_cm needs an IP-addressed RDMA device (IPoIB or RoCE), which the model is \
             not; give -d DEVICE on hardware, or run without it",
            if params.rdma_cm == RdmaCm::Qps {
                "-R"
            } else {
                "-z"
            }
        )
        .into());
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
        hw_timestamps: args.hw_timestamps,
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
/// `cm` carries the QP records through rdma_cm (`-R`, `-z`; hardware only). With
/// `--perftest-exchange` the end speaks perftest's exchange instead (`bench::perftest`,
/// which refuses `--reversed`: the end that sends is the one with a host).
fn end<B: bench::Device>(
    sends: bool,
    ctx: Context<B>,
    peer: Peer,
    params: &Params,
    local: Local,
    sink: &mut dyn Sink,
    cm: Option<&mut dyn bench::CmLink<B>>,
) -> Result<(), Error> {
    if local.perftest_exchange {
        bench::perftest::run(ctx, peer, params, local, sink, sends)
    } else if sends {
        bench::client(ctx, peer, params, local, sink, cm)
    } else {
        bench::serve(ctx, peer, params, local, sink, cm)
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
    let config = NicConfig {
        clock_khz: args
            .model_clock_khz
            .unwrap_or(NicConfig::default().clock_khz),
        // Device memory for --use-dm, in the model's whole 4 KiB pages.
        dm_size: args
            .dm_size
            .unwrap_or(params.dm_bytes().next_multiple_of(4096)),
        link_layer: crate::probe::link_layer(args.force_link == Some(Link::Ethernet)),
        // --rate_limit_type PP: the model paces RC (a what-if: no mlx5 does), UC and UD
        // (the caps of NVIDIA's 2026 packet-pacing series), on the host's clock.
        packet_pacing: hw::PacketPacing {
            rc: params.pacing_kbps.is_some(),
            uc: params.pacing_kbps.is_some(),
            ud: params.pacing_kbps.is_some(),
            ..hw::PacketPacing::default()
        },
        ..NicConfig::default()
    };
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
    // perftest's exchange carries no link counts: no PCIe columns with it.
    let link = (!local.perftest_exchange).then_some(link);
    let mut report = reporter(args, params, true, link)?;
    let server = std::thread::spawn(move || -> Result<(), Error> {
        let (stream, _) = listener.accept()?;
        // One table: the client's. The server's own report is for a server on its own host.
        let sends = server_params.reversed;
        let peer = Peer::new(stream);
        end(
            sends,
            server_ctx,
            peer,
            &server_params,
            local,
            &mut Quiet,
            None,
        )
    });
    let ctx = Context::new(Sim::on_fabric(&fabric, config).with_ring_memory(rings));
    corrupt(ctx.backend());
    let sends = !params.reversed;
    let client = TcpStream::connect(addr)
        .map_err(Error::from)
        .and_then(|s| end(sends, ctx, Peer::new(s), params, local, &mut report, None));
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
    let (stream, sends, mut cm) = match &args.host {
        None => {
            // Listening before the client can ask: it connects its QPs right after the
            // handshake.
            let cm = match params.rdma_cm {
                RdmaCm::Off => None,
                how => {
                    let any = std::net::SocketAddr::from(([0, 0, 0, 0], args.port));
                    let listener =
                        cm_link::Role::Server(mlx5_direct::backend::verbs::CmListener::bind(any)?);
                    eprintln!(
                        "mlx5-perf: waiting for the client's rdma_cm connections on port {} \
                         (the client names this host by its IPoIB or RoCE address)",
                        args.port
                    );
                    Some(cm_link::Link::new(listener, how, local))
                }
            };
            let listener = TcpListener::bind(("0.0.0.0", args.port))?;
            eprintln!(
                "mlx5-perf: {} server on {device}, waiting for a client on TCP port {}",
                params.test.name(),
                args.port
            );
            let (stream, from) = listener.accept()?;
            eprintln!("mlx5-perf: client {from} connected");
            (stream, params.reversed, cm)
        }
        Some(host) => {
            let cm = match params.rdma_cm {
                RdmaCm::Off => None,
                how => {
                    use std::net::ToSocketAddrs;
                    let to = (host.as_str(), args.port)
                        .to_socket_addrs()
                        .map_err(|e| format!("{host}: {e}"))?
                        .next()
                        .ok_or_else(|| format!("{host}: no address"))?;
                    Some(cm_link::Link::new(cm_link::Role::Client(to), how, local))
                }
            };
            let stream = TcpStream::connect((host.as_str(), args.port))
                .map_err(|e| format!("connect to {host}:{}: {e}", args.port))?;
            (stream, !params.reversed, cm)
        }
    };
    let mut report = reporter(args, params, false, None)?;
    let link = cm.as_mut().map(|l| l as &mut dyn bench::CmLink<Verbs>);
    end(
        sends,
        ctx,
        Peer::new(stream),
        params,
        local,
        &mut report,
        link,
    )?;
    report.finish()
}

/// The hardware side's rdma_cm connections (`-R`, `-z`): one per QP, this side's record
/// in the private data of the request (client) or of the reply (server).
#[cfg(feature = "verbs")]
mod cm_link {
    use std::net::SocketAddr;

    use mlx5_direct::backend::verbs::{cm, CmConnection, CmListener, CmOptions, Verbs};
    use mlx5_direct::{CmPrivateData, Qp};

    use crate::bench::{CmLink, Local, RdmaCm};
    use crate::exchange::QpRecord;
    use crate::Error;

    /// Which end: the client connects to the server's address, the server listens.
    pub(super) enum Role {
        Client(SocketAddr),
        Server(CmListener),
    }

    /// The connections, kept until the run ends (dropping one disconnects it).
    pub(super) struct Link {
        role: Role,
        qps: bool,
        local: Local,
        conns: Vec<CmConnection>,
    }

    impl Link {
        pub(super) fn new(role: Role, how: RdmaCm, local: Local) -> Link {
            Link {
                role,
                qps: how == RdmaCm::Qps,
                local,
                conns: Vec::new(),
            }
        }
    }

    impl CmLink<Verbs> for Link {
        fn link(
            &mut self,
            qp: &mut Qp<Verbs>,
            index: usize,
            mine: &QpRecord,
            out_reads: u8,
            path_mtu: u32,
        ) -> Result<QpRecord, Error> {
            let options = CmOptions {
                tos: self.local.tos,
                ack_timeout: Some(self.local.qp_timeout),
                retry_count: self.local.retry_count,
                rd_atomic: out_reads,
                path_mtu: Some(path_mtu),
                ..CmOptions::default()
            };
            let mine = CmPrivateData {
                cm_qp: self.qps,
                index: u16::try_from(index).map_err(|_| "-q: at most 65536 QPs over rdma_cm")?,
                qpn: mine.qpn,
                psn: mine.psn,
                rkey: mine.rkey,
                lid: mine.lid,
                addr: mine.addr,
                gid: mine.gid,
            };
            let conn = match &self.role {
                Role::Client(to) if self.qps => cm::connect_qp(qp, *to, &mine, &options)?,
                Role::Client(to) => cm::exchange(*to, &mine, &options)?,
                Role::Server(listener) => {
                    let request = listener.next_request(None)?;
                    if self.qps {
                        request.accept_qp(qp, &mine, &options)?
                    } else {
                        request.accept(&mine, &options)?
                    }
                }
            };
            let peer = *conn.peer();
            self.conns.push(conn);
            if usize::from(peer.index) != index || peer.cm_qp != self.qps {
                return Err(format!(
                    "rdma_cm: the peer introduced its QP {} ({}) where this side expected QP \
                     {index} ({})",
                    peer.index,
                    if peer.cm_qp { "-R" } else { "-z" },
                    if self.qps { "-R" } else { "-z" }
                )
                .into());
            }
            Ok(QpRecord {
                lid: peer.lid,
                qpn: peer.qpn,
                psn: peer.psn,
                rkey: peer.rkey,
                addr: peer.addr,
                gid: peer.gid,
                qkey: None,
                dct: None,
                xrc: None,
            })
        }
    }
}

#[cfg(not(feature = "verbs"))]
fn hardware(device: &str, _: &Params, _: Local, _: &BenchArgs) -> Result<(), Error> {
    Err(format!(
        "-d {device}: this mlx5-perf was built without the `verbs` feature, so it runs on the \
         model only; rebuild with `--features verbs` (`cargo install mlx5-perf --features \
         verbs`); the packages that needs are listed in mlx5-direct's docs/hardware.md, \
         \"Packages\""
    )
    .into())
}
