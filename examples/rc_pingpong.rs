//! RC ping-pong between two processes, as rdma-core's `ibv_rc_pingpong`: the same binary is
//! the server (no host given) and the client (the server's host given). They exchange
//! their endpoints over TCP (each side's `Endpoint` as one line, in `rc_pingpong`'s
//! `LID:QPN:PSN:GID` form), connect their RC QPs, and bounce a SEND of `-s` bytes back and
//! forth `-n` times; the client prints the round-trip time.
//!
//! ```text
//! # On a NIC (feature `verbs`), one process per host:
//! cargo run --release --features verbs --example rc_pingpong -- -d mlx5_0
//! cargo run --release --features verbs --example rc_pingpong -- -d mlx5_0 server-host
//! # On the model: server and client in one process (two threads, the same code, the
//! # endpoints still exchanged over TCP on 127.0.0.1):
//! cargo run --release --example rc_pingpong -- --loopback -n 1000
//! ```
//!
//! Two processes on the model share one fabric only through the emulated ConnectX
//! (`docs/emulator.md`): run the `-d` form of each side under `mlx5-emu run --fabric NAME`,
//! with `-d mlx5_0` on one and `-d mlx5_1` on the other. Options: `-p PORT` (TCP, default
//! 18515), `-n ITERS` (default 1000), `-s SIZE` (bytes, default 64), `-i IB_PORT` (default
//! 1), `-g GID_INDEX`. Both sides must be given the same `-n` and `-s`.

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::time::Instant;

use mlx5_direct::backend::Backend;
use mlx5_direct::{
    Access, Completion, ConnectOptions, Context, Cq, Data, Endpoint, QpConfig, SendFlags, SendOp,
};

type Res<T> = Result<T, Box<dyn std::error::Error>>;

/// The command line.
#[derive(Clone, Debug)]
struct Opts {
    device: Option<String>,
    ib_port: u8,
    gid_index: Option<u32>,
    tcp_port: u16,
    iters: u32,
    size: usize,
    host: Option<String>,
    loopback: bool,
}

fn parse() -> Res<Opts> {
    let mut o = Opts {
        device: None,
        ib_port: 1,
        gid_index: None,
        tcp_port: 18515,
        iters: 1000,
        size: 64,
        host: None,
        loopback: false,
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || args.next().ok_or(format!("{arg} needs a value"));
        match arg.as_str() {
            "-d" => o.device = Some(value()?),
            "-i" => o.ib_port = value()?.parse()?,
            "-g" => o.gid_index = Some(value()?.parse()?),
            "-p" => o.tcp_port = value()?.parse()?,
            "-n" => o.iters = value()?.parse()?,
            "-s" => o.size = value()?.parse()?,
            "--loopback" => o.loopback = true,
            host if !host.starts_with('-') && o.host.is_none() => o.host = Some(host.into()),
            other => return Err(format!("unknown argument {other}").into()),
        }
    }
    if o.size == 0 {
        return Err("-s must be at least 1".into());
    }
    Ok(o)
}

/// Sends `line` and reads the peer's.
fn swap_lines(tcp: &mut BufReader<TcpStream>, line: &str) -> Res<String> {
    writeln!(tcp.get_mut(), "{line}")?;
    let mut peer = String::new();
    if tcp.read_line(&mut peer)? == 0 {
        return Err("the peer closed the connection".into());
    }
    Ok(peer.trim_end().to_string())
}

/// Polls `cq` until one completion arrives; it must have succeeded. Spins, giving the core
/// away every 64 empty polls: with `--loopback` on a machine with fewer free cores than
/// threads, a spinning thread would otherwise hold the core its peer needs for a whole time
/// slice. (On a NIC, pure spinning is the lowest latency.)
fn next<B: Backend>(cq: &mut Cq<B>) -> Res<Completion> {
    let mut done = [Completion::default(); 1];
    let mut empty = 0u32;
    while cq.poll(&mut done) == 0 {
        empty += 1;
        match empty % 64 {
            0 => std::thread::yield_now(),
            _ => std::hint::spin_loop(),
        }
    }
    match done[0].status.is_ok() {
        true => Ok(done[0]),
        false => Err(format!("completion failed: {:?}", done[0]).into()),
    }
}

/// One side of the ping-pong over connection `tcp`; the client returns the mean round trip
/// in microseconds.
fn pingpong<B: Backend>(
    ctx: &Context<B>,
    tcp: TcpStream,
    o: &Opts,
    client: bool,
) -> Res<Option<f64>> {
    let pd = ctx.alloc_pd()?;
    let mut cq = ctx.create_cq(64, 64)?;
    let mut qp = pd.create_qp(&cq, &cq, &QpConfig::default())?;
    // The message at 0, the receive buffer after it.
    let mr = pd.alloc_mr(2 * o.size, Access::LOCAL_WRITE)?;
    let recv = [mr.sge(o.size, o.size as u32)];
    let send = [mr.sge(0, o.size as u32)];

    let mut tcp = BufReader::new(tcp);
    let peer: Endpoint = swap_lines(&mut tcp, &qp.endpoint()?.to_string())?.parse()?;
    qp.connect(&peer, &ConnectOptions::default())?;
    qp.rq()
        .ok_or("an RC QP has a receive queue")?
        .post(1, &recv)?;
    // Both sides are connected, with their first receive posted, before the first SEND.
    swap_lines(&mut tcp, "ready")?;

    let started = Instant::now();
    for i in 0..o.iters {
        if client {
            mr.write(0, &i.to_le_bytes()[..o.size.min(4)]);
            qp.sq()
                .post(2, SendOp::Send, Data::Sges(&send), SendFlags::SIGNALED)?;
        }
        // A SEND's completion and the peer's message, in either order.
        let mut got = (false, !client);
        while !(got.0 && got.1) {
            let c = next(&mut cq)?;
            match c.wr_id {
                1 => {
                    got.0 = true;
                    let mut seq = [0u8; 4];
                    let n = o.size.min(4);
                    mr.read(o.size, &mut seq[..n]);
                    if seq[..n] != i.to_le_bytes()[..n] {
                        return Err(format!("iteration {i}: got {seq:?}").into());
                    }
                    qp.rq().ok_or("no receive queue")?.post(1, &recv)?;
                    if !client {
                        // The server answers with what it received.
                        mr.write(0, &seq[..n]);
                        qp.sq()
                            .post(2, SendOp::Send, Data::Sges(&send), SendFlags::SIGNALED)?;
                    }
                }
                _ => got.1 = true,
            }
        }
        if !client {
            next(&mut cq)?; // the answer's send completion
        }
    }
    let elapsed = started.elapsed();
    swap_lines(&mut tcp, "done")?;
    Ok(client.then(|| elapsed.as_secs_f64() * 1e6 / f64::from(o.iters.max(1))))
}

/// Server and client as two threads of this process on one model fabric, over TCP on
/// 127.0.0.1.
#[cfg(feature = "sim")]
fn loopback(o: &Opts) -> Res<()> {
    use mlx5_direct::backend::sim::{Fabric, NicConfig, Sim};
    let fabric = Fabric::new();
    let listener = TcpListener::bind(("127.0.0.1", 0))?;
    let o = Opts {
        tcp_port: listener.local_addr()?.port(),
        ..o.clone()
    };
    let server_ctx = Context::new(Sim::on_fabric(&fabric, NicConfig::default()));
    let server_opts = o.clone();
    let server = std::thread::spawn(move || -> Result<(), String> {
        let (tcp, _) = listener.accept().map_err(|e| e.to_string())?;
        pingpong(&server_ctx, tcp, &server_opts, false)
            .map(drop)
            .map_err(|e| e.to_string())
    });
    let client_ctx = Context::new(Sim::on_fabric(&fabric, NicConfig::default()));
    let tcp = TcpStream::connect(("127.0.0.1", o.tcp_port))?;
    let us = pingpong(&client_ctx, tcp, &o, true)?.unwrap_or_default();
    server.join().map_err(|_| "the server panicked")??;
    println!(
        "{} iters of {} bytes on the model: {us:.2} us per round trip (CPU-side numbers of \
         the driver and the model, not a NIC's)",
        o.iters, o.size
    );
    Ok(())
}

#[cfg(not(feature = "sim"))]
fn loopback(_: &Opts) -> Res<()> {
    Err("--loopback runs on the model: build with the default feature `sim`".into())
}

#[cfg(feature = "verbs")]
fn on_device(o: &Opts, device: &str) -> Res<()> {
    use mlx5_direct::backend::verbs::{Verbs, VerbsOptions};
    let ctx = Context::<Verbs>::open(&VerbsOptions {
        device: Some(device.into()),
        port: o.ib_port,
        gid_index: o.gid_index,
        ..VerbsOptions::default()
    })?;
    // The server waits for the client; the client tries for 5 s, so the two may be started
    // together.
    let tcp = match &o.host {
        Some(host) => {
            let mut tries = 0;
            loop {
                match TcpStream::connect((host.as_str(), o.tcp_port)) {
                    Ok(tcp) => break tcp,
                    Err(_) if tries < 50 => {
                        tries += 1;
                        std::thread::sleep(std::time::Duration::from_millis(100));
                    }
                    Err(e) => {
                        return Err(format!("connecting to {host}:{}: {e}", o.tcp_port).into())
                    }
                }
            }
        }
        None => TcpListener::bind(("0.0.0.0", o.tcp_port))?.accept()?.0,
    };
    let us = pingpong(&ctx, tcp, o, o.host.is_some())?;
    if let Some(us) = us {
        println!(
            "{} iters of {} bytes on {device}: {us:.2} us per round trip",
            o.iters, o.size
        );
    }
    Ok(())
}

#[cfg(not(feature = "verbs"))]
fn on_device(_: &Opts, device: &str) -> Res<()> {
    Err(format!(
        "-d {device}: built without the `verbs` feature; rebuild with `--features verbs` \
         (docs/hardware.md, \"Packages\"), or run on the model with --loopback"
    )
    .into())
}

fn main() -> Res<()> {
    let o = parse()?;
    match (&o.device, o.loopback) {
        (Some(device), false) => on_device(&o, device),
        (None, true) => loopback(&o),
        _ => Err(
            "give either -d DEVICE (a NIC, or the emulated ConnectX) or --loopback \
                  (both sides on the model in this process)"
                .into(),
        ),
    }
}
