//! One process reaching 1,000 model peers through 8 DCIs: the peers are 1,000 DC targets
//! (DCTs) on 125 model NICs, 8 per NIC, each with a region of its own. A [`DciPool`] of 8
//! DCIs writes 4 messages of 16 bytes to every peer, then READs each peer's 64 bytes back;
//! every byte is checked, both in the peer's memory and in what the READs brought back.
//! Prints the QPs used, the DC connects and disconnects, and the PCIe cost per message as
//! the model counts it (model numbers, the initiator's link):
//!
//! ```text
//! cargo run --release --example dc_peers [PEERS]
//! ```
//!
//! Results: `docs/transports.md`.

use mlx5_direct::backend::sim::{Fabric, NicConfig, PcieCounters, Sim};
use mlx5_direct::{
    Access, AddressHandle, AhAttr, Completion, ConnectOptions, Context, Cq, Data, DcDest, DciPool,
    Dct, MemoryRegion, PostError, ProtectionDomain, QpConfig, SendFlags, SendOp, SendWr, Srq,
    Status, Transport,
};

/// DCIs in the pool.
const DCIS: usize = 8;
/// DCTs per model NIC.
const PER_NIC: usize = 8;
/// WRITEs per peer, and their size.
const WRITES: usize = 4;
const MSG: usize = 16;
/// perftest's DC key.
const DC_KEY: u64 = 0xffee_ddcc;

type Res<T> = Result<T, Box<dyn std::error::Error>>;

/// A model NIC hosting DCTs: one CQ and one SRQ shared by its DCTs.
struct Host {
    ctx: Context<Sim>,
    pd: ProtectionDomain<Sim>,
    cq: Cq<Sim>,
    srq: Srq<Sim>,
}

/// One peer: a DCT and its region.
struct Peer {
    dct: Dct<Sim>,
    mr: MemoryRegion<Sim>,
    host: usize,
}

/// The 16 bytes WRITE `k` puts at peer `p`.
fn pattern(p: usize, k: usize) -> [u8; MSG] {
    core::array::from_fn(|i| (p * 31 + k * 7 + i) as u8)
}

/// Posts through the pool; while no DCI is free, takes completions and hands them back.
fn post(pool: &mut DciPool<Sim>, cq: &mut Cq<Sim>, wr: SendWr<'_>, dest: &DcDest<'_>) -> Res<()> {
    loop {
        match pool.post(wr, dest) {
            Err(PostError::NoFreeDci { .. }) => reap(pool, cq, 1)?,
            r => return Ok(r.map(|_| ())?),
        }
    }
}

/// Takes at least `min` completions (all there are, in batches) and hands them to the pool.
fn reap(pool: &mut DciPool<Sim>, cq: &mut Cq<Sim>, min: usize) -> Res<()> {
    let mut out = [Completion::default(); 32];
    let mut got = 0;
    while got < min {
        let n = cq.poll(&mut out);
        for c in &out[..n] {
            if c.status != Status::Success {
                return Err(format!("completion failed: {c:?}").into());
            }
            pool.complete(c)?;
        }
        got += n;
    }
    Ok(())
}

fn main() -> Res<()> {
    let peers: usize = match std::env::args().nth(1) {
        Some(n) => n.parse()?,
        None => 1000,
    };
    let fabric = Fabric::new();
    let hosts: Vec<Host> = (0..peers.div_ceil(PER_NIC))
        .map(|_| -> Res<Host> {
            let ctx = Context::new(Sim::on_fabric(&fabric, NicConfig::default()));
            let pd = ctx.alloc_pd()?;
            let cq = ctx.create_cq(64, 64)?;
            let srq = pd.create_srq(16, 1)?;
            Ok(Host { ctx, pd, cq, srq })
        })
        .collect::<Res<_>>()?;
    let peers: Vec<Peer> = (0..peers)
        .map(|p| -> Res<Peer> {
            let h = &hosts[p / PER_NIC];
            let mut dct = h.pd.create_dct(&h.cq, &h.srq, DC_KEY)?;
            dct.activate(1, Access::ALL, &ConnectOptions::default())?;
            let mr = h.pd.alloc_mr(WRITES * MSG, Access::ALL)?;
            Ok(Peer {
                dct,
                mr,
                host: p / PER_NIC,
            })
        })
        .collect::<Res<_>>()?;

    let ctx = Context::new(Sim::on_fabric(&fabric, NicConfig::default()));
    let pd = ctx.alloc_pd()?;
    let mut cq = ctx.create_cq(4096, 64)?;
    let config = QpConfig {
        transport: Transport::Dci,
        sq_wqebbs: 64,
        ..QpConfig::default()
    };
    let mut pool = DciPool::new(&pd, &cq, DCIS, &config, &ConnectOptions::default())?;
    let back = pd.alloc_mr(peers.len() * WRITES * MSG, Access::LOCAL_WRITE)?;
    let ahs: Vec<AddressHandle<Sim>> = hosts
        .iter()
        .map(|h| {
            let lid = h.ctx.port(1)?.lid;
            pd.create_ah(&AhAttr {
                port: 1,
                dlid: lid,
                ..AhAttr::default()
            })
        })
        .collect::<Result<_, _>>()?;

    let before = ctx.backend().nic().pcie();
    let mut messages = 0;
    for (p, peer) in peers.iter().enumerate() {
        let dest = ahs[peer.host].dc_dest(peer.dct.number()?, DC_KEY);
        for k in 0..WRITES {
            let bytes = pattern(p, k);
            let wr = SendWr {
                wr_id: messages,
                op: SendOp::Write(peer.mr.remote(k * MSG)),
                data: Data::Inline(&bytes),
                flags: SendFlags::SIGNALED,
            };
            post(&mut pool, &mut cq, wr, &dest)?;
            messages += 1;
        }
        // The READ follows the WRITEs on the same DCI: in order, it sees them all.
        let at = p * WRITES * MSG;
        // Bound first: a temporary inside `Data::Sges(..)` would live as long as the
        // statement only before Rust 1.89.
        let into = [back.sge(at, (WRITES * MSG) as u32)];
        let wr = SendWr {
            wr_id: messages,
            op: SendOp::Read(peer.mr.remote(0)),
            data: Data::Sges(&into),
            flags: SendFlags::SIGNALED,
        };
        post(&mut pool, &mut cq, wr, &dest)?;
        messages += 1;
    }
    reap(&mut pool, &mut cq, 0)?;
    while pool.free() < DCIS {
        reap(&mut pool, &mut cq, 1)?;
    }
    let cost = ctx.backend().nic().pcie() - before;

    for (p, peer) in peers.iter().enumerate() {
        let mut there = vec![0u8; WRITES * MSG];
        let mut read = vec![0u8; WRITES * MSG];
        peer.mr.read(0, &mut there);
        back.read(p * WRITES * MSG, &mut read);
        let want: Vec<u8> = (0..WRITES).flat_map(|k| pattern(p, k)).collect();
        if there != want || read != want {
            return Err(format!("peer {p}: wrong bytes").into());
        }
    }
    let stats = ctx.backend().nic().stats();
    println!(
        "{} peers ({} DCTs on {} model NICs) reached through {DCIS} DCIs: {messages} messages \
         ({WRITES} WRITEs of {MSG} B and one READ of {} B each), every byte checked",
        peers.len(),
        peers.len(),
        hosts.len(),
        WRITES * MSG
    );
    println!(
        "QPs on the initiator: {DCIS} (RC would need {}); DC connects {}, disconnects {}",
        peers.len(),
        stats.dc_connects,
        stats.dc_disconnects
    );
    print_cost(
        "per message (initiator's link, model numbers)",
        &cost,
        messages,
    );
    Ok(())
}

fn print_cost(what: &str, c: &PcieCounters, messages: u64) {
    let m = messages as f64;
    println!(
        "{what}: MMIO writes {:.2}, DMA reads {:.2}, DMA writes {:.2}, link bytes down {:.1}, up {:.1}",
        c.mmio_writes as f64 / m,
        c.dma_reads as f64 / m,
        c.dma_writes as f64 / m,
        c.bytes_down as f64 / m,
        c.bytes_up as f64 / m,
    );
}
