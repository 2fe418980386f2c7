//! Post on one thread, poll on another, on the model: how many 8-byte inline WRITEs per
//! second go through, and how often a post found the send queue full. Model numbers (the
//! model executes each WRITE in the posting thread); run several times to see the spread:
//!
//! ```text
//! cargo run --release --example model_threads [MESSAGES]
//! ```
//!
//! Results: `docs/benchmarks.md` (two threads on the model).

use std::time::Instant;

use mlx5_direct::backend::sim::{Fabric, NicConfig, Sim};
use mlx5_direct::{
    Access, Completion, ConnectOptions, Context, Data, PostError, QpConfig, SendFlags, SendOp,
};

/// A thread that found nothing to do for the `n`th time: spin, and give the core away
/// every 64 times (with fewer free cores than threads, a spinning thread would otherwise
/// hold the core the other one needs for a whole time slice).
fn idle(n: u64) {
    if n % 64 == 0 {
        std::thread::yield_now();
    } else {
        std::hint::spin_loop();
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let messages: u64 = match std::env::args().nth(1) {
        Some(n) => n.parse()?,
        None => 1_000_000,
    };
    let fabric = Fabric::new();
    let a = Context::new(Sim::on_fabric(&fabric, NicConfig::default()));
    let b = Context::new(Sim::on_fabric(&fabric, NicConfig::default()));
    let (pd_a, pd_b) = (a.alloc_pd()?, b.alloc_pd()?);
    let (mut cq_a, cq_b) = (a.create_cq(1024, 64)?, b.create_cq(64, 64)?);
    let mut qp_a = pd_a.create_qp(&cq_a, &cq_a, &QpConfig::default())?;
    let mut qp_b = pd_b.create_qp(&cq_b, &cq_b, &QpConfig::default())?;
    let target = pd_b.alloc_mr(4096, Access::ALL)?;
    qp_a.connect(&qp_b.endpoint()?, &ConnectOptions::default())?;
    qp_b.connect(&qp_a.endpoint()?, &ConnectOptions::default())?;
    let op = SendOp::Write(target.remote(0));

    let start = Instant::now();
    let (full, polled) = std::thread::scope(|s| {
        let poster = s.spawn(|| {
            let mut full = 0u64;
            let sq = qp_a.sq();
            let mut i = 0;
            while i < messages {
                match sq.post(i, op, Data::Inline(&[0x5a; 8]), SendFlags::SIGNALED) {
                    Ok(()) => i += 1,
                    Err(PostError::QueueFull { .. }) => {
                        full += 1;
                        idle(full);
                    }
                    Err(e) => panic!("post {i}: {e}"),
                }
            }
            full
        });
        let mut out = [Completion::default(); 32];
        let (mut polled, mut empty) = (0u64, 0u64);
        while polled < messages {
            let n = cq_a.poll(&mut out);
            if n == 0 {
                empty += 1;
                idle(empty);
            }
            assert!(out[..n].iter().all(|c| c.status.is_ok()), "{out:?}");
            polled += n as u64;
        }
        (poster.join().expect("poster"), polled)
    });
    let secs = start.elapsed().as_secs_f64();
    println!(
        "{polled} WRITEs in {secs:.3} s: {:.3} M/s (model), {full} posts found the queue full",
        polled as f64 / secs / 1e6
    );
    Ok(())
}
