//! The PCIe cost of your own post loop, on the model: run the loop against a model NIC and
//! read what the model counted on the link (MMIO writes, DMA reads and writes, TLP bytes
//! both ways) before and after. Replace the loops in `main` with yours; `probe` does the
//! counting. These are model numbers (`docs/pcie.md` says what they mean for hardware).
//!
//! ```text
//! cargo run --release --example pcie_probe -- [MESSAGES]
//! ```

use mlx5_direct::backend::sim::{Fabric, NicConfig, PcieCounters, Sim};
use mlx5_direct::{
    Access, Completion, ConnectOptions, Context, Cq, Data, MemoryRegion, Qp, QpConfig, Remote,
    SendFlags, SendOp, SendWr,
};

type Res<T> = Result<T, Box<dyn std::error::Error>>;

/// A connected pair of model NICs: the requester's QP and CQ, and a target region.
struct Rig {
    ctx: Context<Sim>,
    qp: Qp<Sim>,
    cq: Cq<Sim>,
    source: MemoryRegion<Sim>,
    target: Remote,
    // Kept alive while the requester writes into them.
    _peer: (Context<Sim>, Qp<Sim>, Cq<Sim>, MemoryRegion<Sim>),
}

impl Rig {
    fn new() -> Res<Rig> {
        let fabric = Fabric::new();
        let ctx = Context::new(Sim::on_fabric(&fabric, NicConfig::default()));
        let peer = Context::new(Sim::on_fabric(&fabric, NicConfig::default()));
        let (pd, peer_pd) = (ctx.alloc_pd()?, peer.alloc_pd()?);
        let (cq, peer_cq) = (ctx.create_cq(256, 64)?, peer.create_cq(64, 64)?);
        let config = QpConfig {
            sq_wqebbs: 256,
            ..QpConfig::default()
        };
        let mut qp = pd.create_qp(&cq, &cq, &config)?;
        let mut peer_qp = peer_pd.create_qp(&peer_cq, &peer_cq, &QpConfig::default())?;
        qp.connect(&peer_qp.endpoint()?, &ConnectOptions::default())?;
        peer_qp.connect(&qp.endpoint()?, &ConnectOptions::default())?;
        let region = peer_pd.alloc_mr(1 << 16, Access::ALL)?;
        Ok(Rig {
            source: pd.alloc_mr(1 << 16, Access::LOCAL_WRITE)?,
            target: region.remote(0),
            ctx,
            qp,
            cq,
            _peer: (peer, peer_qp, peer_cq, region),
        })
    }

    /// Polls until `n` completions arrived; each must have succeeded.
    fn reap(&mut self, n: usize) -> Res<()> {
        let mut done = [Completion::default(); 64];
        let mut got = 0;
        while got < n {
            let k = self.cq.poll(&mut done[..(n - got).min(64)]);
            if let Some(bad) = done[..k].iter().find(|c| !c.status.is_ok()) {
                return Err(format!("completion failed: {bad:?}").into());
            }
            got += k;
        }
        Ok(())
    }
}

/// Runs `post_loop` for `messages` messages on a fresh rig and prints what the requester's
/// link carried per message.
fn probe(name: &str, messages: usize, post_loop: impl FnOnce(&mut Rig) -> Res<()>) -> Res<()> {
    let mut rig = Rig::new()?;
    let before: PcieCounters = rig.ctx.backend().nic().pcie();
    post_loop(&mut rig)?;
    let c = rig.ctx.backend().nic().pcie() - before;
    let n = messages as f64;
    println!(
        "{name:<34} {:>6.2} {:>6.2} {:>6.2} {:>6.2} {:>8.1} {:>7.1}",
        c.mmio_writes as f64 / n,
        c.dma_reads as f64 / n,
        c.completions as f64 / n,
        c.dma_writes as f64 / n,
        c.bytes_down as f64 / n,
        c.bytes_up as f64 / n,
    );
    Ok(())
}

/// The message.
const PAYLOAD: &[u8; 8] = b"8 bytes!";

/// A post loop: one post (and doorbell) per message, inline or from registered memory,
/// a CQE every `signal_every` messages.
fn one_by_one(rig: &mut Rig, messages: usize, gather: bool, signal_every: usize) -> Res<()> {
    let sge = [rig.source.sge(0, PAYLOAD.len() as u32)];
    for i in 0..messages {
        let data = match gather {
            true => Data::Sges(&sge),
            false => Data::Inline(PAYLOAD),
        };
        let signaled = i % signal_every == signal_every - 1;
        let flags = match signaled {
            true => SendFlags::SIGNALED,
            false => SendFlags::UNSIGNALED,
        };
        rig.qp
            .sq()
            .post(i as u64, SendOp::Write(rig.target), data, flags)?;
        if signaled {
            rig.reap(1)?;
        }
    }
    Ok(())
}

fn main() -> Res<()> {
    let messages: usize = match std::env::args().nth(1) {
        Some(n) => n.parse()?,
        None => 4096,
    };
    if messages % 32 != 0 || messages == 0 {
        return Err("MESSAGES must be a multiple of 32".into());
    }
    println!("PCIe per 8-byte RDMA WRITE on the requester's link (model numbers)");
    println!(
        "{:<34} {:>6} {:>6} {:>6} {:>6} {:>8} {:>7}",
        "post loop", "MMIO", "MRd", "CplD", "MWr", "B down", "B up"
    );
    // Each message its own post and doorbell, inline, signaled: one BlueFlame write, one
    // CQE back.
    probe("inline, signaled, one by one", messages, |rig| {
        one_by_one(rig, messages, false, 1)
    })?;
    // The same from registered memory: the NIC reads the WQE's gather entry by DMA.
    probe("gather, signaled, one by one", messages, |rig| {
        one_by_one(rig, messages, true, 1)
    })?;
    // Inline, one CQE per 32 messages.
    probe("inline, every 32nd signaled", messages, |rig| {
        one_by_one(rig, messages, false, 32)
    })?;

    // Lists of 32 with one doorbell each (the NIC fetches the WQEs by DMA).
    probe("inline, lists of 32, last signaled", messages, |rig| {
        for list in 0..messages / 32 {
            let wrs: Vec<SendWr> = (0..32)
                .map(|k| SendWr {
                    wr_id: (list * 32 + k) as u64,
                    op: SendOp::Write(rig.target),
                    data: Data::Inline(PAYLOAD),
                    flags: match k {
                        31 => SendFlags::SIGNALED,
                        _ => SendFlags::UNSIGNALED,
                    },
                })
                .collect();
            rig.qp.sq().post_many(&wrs).map_err(|(_, e)| e)?;
            rig.reap(1)?;
        }
        Ok(())
    })?;
    Ok(())
}
