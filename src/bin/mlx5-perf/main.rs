//! `mlx5-perf`: perftest-style latency tests, run on the built-in device model when no NIC
//! is given.
//!
//! On the model the numbers are CPU-side numbers: the model runs synchronously in the
//! posting thread, so a latency is the time the driver and the model's software take from
//! the post to the requester's completion, not a NIC's wire latency. Each row also shows the
//! PCIe transactions the model counted per message.

use std::time::Instant;

use clap::{Parser, ValueEnum};
use hdrhistogram::Histogram;
use mlx5_direct::backend::sim::{Fabric, NicConfig, Sim};
use mlx5_direct::{
    Access, Completion, ConnectOptions, Context, Cq, Data, DoorbellMode, MemoryRegion, Qp,
    QpConfig, SendFlags, SendOp,
};

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
#[allow(clippy::enum_variant_names)] // perftest's test names
enum Test {
    #[value(name = "write_lat", alias = "ib_write_lat")]
    WriteLat,
    #[value(name = "send_lat", alias = "ib_send_lat")]
    SendLat,
    #[value(name = "read_lat", alias = "ib_read_lat")]
    ReadLat,
    #[value(name = "atomic_lat", alias = "ib_atomic_lat")]
    AtomicLat,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Mode {
    Bf,
    Db,
    Auto,
}

/// perftest-style RDMA latency tests on the mlx5-hw device model.
#[derive(Parser, Debug)]
#[command(version)]
struct Args {
    /// The test to run.
    test: Test,
    /// Message size in bytes (atomics: always 8).
    #[arg(short = 's', long = "size", default_value_t = 2)]
    size: usize,
    /// Iterations.
    #[arg(short = 'n', long = "iters", default_value_t = 1000)]
    iters: u64,
    /// Largest message sent inline (WRITE and SEND).
    #[arg(short = 'I', long = "inline_size", default_value_t = 220)]
    inline: usize,
    /// Doorbell mode.
    #[arg(long, value_enum, default_value_t = Mode::Auto)]
    mode: Mode,
}

struct Side {
    cq: Cq<Sim>,
    qp: Qp<Sim>,
    mr: MemoryRegion<Sim>,
    ctx: Context<Sim>,
}

fn side(fabric: &std::sync::Arc<Fabric>, len: usize) -> Result<Side, mlx5_direct::Error> {
    let ctx = Context::new(Sim::on_fabric(fabric, NicConfig::default()));
    let pd = ctx.alloc_pd()?;
    let cq = ctx.create_cq(256, 64)?;
    let qp = pd.create_qp(&cq, &cq, &QpConfig::default())?;
    let mr = pd.alloc_mr(len.max(64), Access::ALL)?;
    Ok(Side { cq, qp, mr, ctx })
}

fn wait(cq: &mut Cq<Sim>) -> Result<Completion, String> {
    let mut c = [Completion::default(); 1];
    while cq.poll(&mut c) == 0 {}
    if c[0].status.is_ok() {
        Ok(c[0])
    } else {
        Err(format!("completion failed: {:?}", c[0]))
    }
}

fn run(args: &Args) -> Result<(), Box<dyn std::error::Error>> {
    let size = if matches!(args.test, Test::AtomicLat) {
        8
    } else {
        args.size
    };
    let fabric = Fabric::new();
    let mut a = side(&fabric, size)?;
    let mut b = side(&fabric, size)?;
    a.qp.connect(&b.qp.endpoint()?, &ConnectOptions::default())?;
    b.qp.connect(&a.qp.endpoint()?, &ConnectOptions::default())?;
    a.qp.sq().set_mode(match args.mode {
        Mode::Bf => DoorbellMode::BlueFlame,
        Mode::Db => DoorbellMode::Doorbell,
        Mode::Auto => DoorbellMode::Auto,
    });
    let payload = vec![0xa5u8; size];
    let (remote, sge) = (b.mr.remote(0), a.mr.sge(0, size as u32));
    let inline = size <= args.inline && matches!(args.test, Test::WriteLat | Test::SendLat);
    let data = if inline {
        Data::Inline(&payload)
    } else {
        Data::Sges(std::slice::from_ref(&sge))
    };
    let op = match args.test {
        Test::WriteLat => SendOp::Write(remote),
        Test::SendLat => SendOp::Send,
        Test::ReadLat => SendOp::Read(remote),
        Test::AtomicLat => SendOp::FetchAdd { remote, add: 1 },
    };
    let rsge = b.mr.sge(0, size as u32);
    let mut hist = Histogram::<u64>::new(3)?;
    let mut samples = Vec::with_capacity(args.iters as usize);
    let before = (a.ctx.backend().nic().pcie(), b.ctx.backend().nic().pcie());
    for i in 0..args.iters {
        if args.test == Test::SendLat {
            b.qp.rq().ok_or("no receive queue")?.post(i, &[rsge])?;
        }
        let start = Instant::now();
        a.qp.sq().post(i, op, data, SendFlags::SIGNALED)?;
        wait(&mut a.cq)?;
        let ns = start.elapsed().as_nanos() as u64;
        if args.test == Test::SendLat {
            wait(&mut b.cq)?;
        }
        hist.record(ns.max(1))?;
        samples.push(ns as f64);
    }
    let req = a.ctx.backend().nic().pcie() - before.0;
    let resp = b.ctx.backend().nic().pcie() - before.1;
    let n = args.iters.max(1) as f64;
    let avg = samples.iter().sum::<f64>() / n;
    let stdev = (samples.iter().map(|x| (x - avg).powi(2)).sum::<f64>() / n).sqrt();
    let us = |ns: f64| ns / 1000.0;
    println!(
        "# {:?} on the mlx5-hw model: CPU-side numbers (driver + model software), not a NIC",
        args.test
    );
    println!("# doorbell mode {:?}, inline {inline}, time from post to requester completion (CLOCK_MONOTONIC)", a.qp.sq().effective_mode());
    println!(
        "{:>8} {:>11} {:>9} {:>9} {:>11} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}",
        "#bytes",
        "#iterations",
        "t_min",
        "t_max",
        "t_typical",
        "t_avg",
        "t_stdev",
        "99%",
        "99.9%",
        "99.99%",
        "[usec]"
    );
    println!(
        "{:>8} {:>11} {:>9.3} {:>9.3} {:>11.3} {:>9.3} {:>9.3} {:>9.3} {:>9.3} {:>9.3}",
        size,
        args.iters,
        us(hist.min() as f64),
        us(hist.max() as f64),
        us(hist.value_at_quantile(0.5) as f64),
        us(avg),
        us(stdev),
        us(hist.value_at_quantile(0.99) as f64),
        us(hist.value_at_quantile(0.999) as f64),
        us(hist.value_at_quantile(0.9999) as f64),
    );
    for (name, c) in [("requester", req), ("responder", resp)] {
        println!(
            "# PCIe per message, {name}: {:.2} MMIO writes, {:.2} DMA reads, {:.2} DMA writes, {:.1} bytes down, {:.1} bytes up",
            c.mmio_writes as f64 / n,
            c.dma_reads as f64 / n,
            c.dma_writes as f64 / n,
            c.bytes_down as f64 / n,
            c.bytes_up as f64 / n,
        );
    }
    Ok(())
}

fn main() {
    let args = Args::parse();
    if let Err(e) = run(&args) {
        eprintln!("mlx5-perf: {e}");
        std::process::exit(1);
    }
}
