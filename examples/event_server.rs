//! An event-driven RC server on the model: instead of spinning on its CQ, the server sleeps
//! until the CQ's completion channel has an event, either in epoll (the channel's fd, as an
//! application with its own event loop does) or, with `--tokio` (feature `tokio`), in an
//! async task on `AsyncCompChannel`. A client thread sends `-n` requests, one at a time;
//! the server answers each with the same bytes and counts how many events it slept for.
//!
//! ```text
//! cargo run --release --example event_server -- [-n REQUESTS]
//! cargo run --release --features tokio --example event_server -- --tokio [-n REQUESTS]
//! ```
//!
//! The pattern (see `mlx5_direct::channel`): arm the CQ, poll it dry, sleep until the
//! channel's fd is readable, take the event (`try_next`, the whole acknowledgement), arm
//! again, poll dry again. Arming before the last poll means a CQE that lands between the
//! poll and the sleep still raises an event. The same code runs on a NIC (feature `verbs`).

use std::os::fd::{AsFd, AsRawFd};

use mlx5_direct::backend::sim::{Fabric, NicConfig, Sim};
use mlx5_direct::{
    Access, CompChannel, Completion, ConnectOptions, Context, Cq, Data, MemoryRegion, Qp, QpConfig,
    SendFlags, SendOp,
};

type Res<T> = Result<T, Box<dyn std::error::Error + Send + Sync>>;

/// Request and response size.
const MSG: usize = 16;

/// The server's queue, CQ and buffers: the request lands at 0, the answer goes from `MSG`.
struct Server {
    cq: Cq<Sim>,
    qp: Qp<Sim>,
    mr: MemoryRegion<Sim>,
    answered: u32,
    events: u32,
}

impl Server {
    /// Polls the CQ dry: answers each request (and re-posts its receive), retires each
    /// answer's send completion.
    fn drain(&mut self) -> Res<()> {
        let mut done = [Completion::default(); 16];
        loop {
            let n = self.cq.poll(&mut done);
            if n == 0 {
                return Ok(());
            }
            for c in &done[..n] {
                if !c.status.is_ok() {
                    return Err(format!("completion failed: {c:?}").into());
                }
                if c.wr_id == 1 {
                    let mut request = [0u8; MSG];
                    self.mr.read(0, &mut request);
                    self.mr.write(MSG, &request);
                    self.qp
                        .rq()
                        .ok_or("no receive queue")?
                        .post(1, &[self.mr.sge(0, MSG as u32)])?;
                    let answer = [self.mr.sge(MSG, MSG as u32)];
                    self.qp
                        .sq()
                        .post(2, SendOp::Send, Data::Sges(&answer), SendFlags::SIGNALED)?;
                    self.answered += 1;
                }
            }
        }
    }

    /// One event taken: arm again, then poll dry.
    fn on_event(&mut self, cqn: u32) -> Res<()> {
        if cqn != self.cq.cqn() {
            return Err(format!("an event for CQ {cqn}").into());
        }
        self.events += 1;
        self.cq.arm(false);
        self.drain()
    }
}

/// The server's loop in epoll: sleeps on the channel's fd until `requests` are answered.
fn serve_epoll(mut server: Server, channel: CompChannel<Sim>, requests: u32) -> Res<Server> {
    // SAFETY: plain system call; the descriptor it returns is closed below.
    let epoll = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
    if epoll < 0 {
        return Err(std::io::Error::last_os_error().into());
    }
    let fd = channel.as_fd().as_raw_fd();
    let mut interest = libc::epoll_event {
        events: libc::EPOLLIN as u32,
        u64: 0,
    };
    // SAFETY: `epoll` and `fd` are open descriptors; `interest` outlives the call.
    if unsafe { libc::epoll_ctl(epoll, libc::EPOLL_CTL_ADD, fd, &mut interest) } != 0 {
        return Err(std::io::Error::last_os_error().into());
    }
    server.cq.arm(false);
    server.drain()?;
    while server.answered < requests {
        let mut ready = [libc::epoll_event { events: 0, u64: 0 }; 1];
        // SAFETY: `ready` has room for the one event asked for.
        let n = unsafe { libc::epoll_wait(epoll, ready.as_mut_ptr(), 1, 5_000) };
        match n {
            0 => return Err("no completion event for 5 s".into()),
            n if n < 0 => {
                let e = std::io::Error::last_os_error();
                if e.kind() != std::io::ErrorKind::Interrupted {
                    return Err(e.into());
                }
            }
            _ => {
                // Readable: an event is there (try_next takes it without blocking).
                if let Some(cqn) = channel.try_next()? {
                    server.on_event(cqn)?;
                }
            }
        }
    }
    // SAFETY: `epoll` is this function's own descriptor, closed once.
    unsafe { libc::close(epoll) };
    Ok(server)
}

/// The server's loop as an async task on a tokio runtime of one thread.
#[cfg(feature = "tokio")]
fn serve_tokio(mut server: Server, channel: CompChannel<Sim>, requests: u32) -> Res<Server> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .build()?;
    runtime.block_on(async move {
        let channel = mlx5_direct::AsyncCompChannel::new(channel)?;
        server.cq.arm(false);
        server.drain()?;
        while server.answered < requests {
            let cqn = channel.wait().await?;
            server.on_event(cqn)?;
        }
        Ok(server)
    })
}

#[cfg(not(feature = "tokio"))]
fn serve_tokio(_: Server, _: CompChannel<Sim>, _: u32) -> Res<Server> {
    Err("--tokio needs the `tokio` feature: cargo run --features tokio --example event_server -- --tokio".into())
}

fn main() -> Res<()> {
    let mut requests = 1000u32;
    let mut tokio = false;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "-n" => requests = args.next().ok_or("-n needs a value")?.parse()?,
            "--tokio" => tokio = true,
            other => return Err(format!("unknown argument {other}").into()),
        }
    }
    let fabric = Fabric::new();
    let (sctx, cctx) = (
        Context::new(Sim::on_fabric(&fabric, NicConfig::default())),
        Context::new(Sim::on_fabric(&fabric, NicConfig::default())),
    );
    let channel = sctx.create_comp_channel()?;
    let cq = sctx.create_cq_on(&channel, 64, 64)?;
    let (spd, cpd) = (sctx.alloc_pd()?, cctx.alloc_pd()?);
    let mut qp = spd.create_qp(&cq, &cq, &QpConfig::default())?;
    let mut ccq = cctx.create_cq(64, 64)?;
    let mut cqp = cpd.create_qp(&ccq, &ccq, &QpConfig::default())?;
    qp.connect(&cqp.endpoint()?, &ConnectOptions::default())?;
    cqp.connect(&qp.endpoint()?, &ConnectOptions::default())?;
    let mr = spd.alloc_mr(2 * MSG, Access::LOCAL_WRITE)?;
    qp.rq()
        .ok_or("no receive queue")?
        .post(1, &[mr.sge(0, MSG as u32)])?;
    let cmr = cpd.alloc_mr(2 * MSG, Access::LOCAL_WRITE)?;

    // The client: one request at a time, each answer checked.
    let client = std::thread::spawn(move || -> Res<()> {
        let mut done = [Completion::default(); 2];
        for i in 0..requests {
            let request = [(i as u8); MSG];
            cmr.write(0, &request);
            cqp.rq()
                .ok_or("no receive queue")?
                .post(1, &[cmr.sge(MSG, MSG as u32)])?;
            cqp.sq().post(
                2,
                SendOp::Send,
                Data::Sges(&[cmr.sge(0, MSG as u32)]),
                SendFlags::SIGNALED,
            )?;
            let mut got = 0;
            while got < 2 {
                got += ccq.poll(&mut done[got..]);
            }
            if let Some(bad) = done.iter().find(|c| !c.status.is_ok()) {
                return Err(format!("completion failed: {bad:?}").into());
            }
            let mut answer = [0u8; MSG];
            cmr.read(MSG, &mut answer);
            if answer != request {
                return Err(format!("request {i}: answered {answer:?}").into());
            }
        }
        Ok(())
    });

    let server = Server {
        cq,
        qp,
        mr,
        answered: 0,
        events: 0,
    };
    let server = match tokio {
        true => serve_tokio(server, channel, requests)?,
        false => serve_epoll(server, channel, requests)?,
    };
    client.join().map_err(|_| "the client panicked")??;
    println!(
        "{} requests answered from {} completion events ({}), every answer checked",
        server.answered,
        server.events,
        if tokio {
            "tokio, AsyncCompChannel"
        } else {
            "epoll on the channel fd"
        }
    );
    Ok(())
}
