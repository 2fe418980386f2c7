//! A UD RPC on the model: a client keeps 64 requests outstanding over UD SEND; the server
//! answers each one through an address handle made from the request's receive (its
//! completion and the 40-byte GRH area before the payload: `Context::ah_attr_from_recv`,
//! as `ProtectionDomain::create_ah_from_recv` does, rdma-core's `ibv_create_ah_from_wc`) to
//! the completion's source QP, with the request's slot as immediate data. The same code
//! answers on InfiniBand (the sender's LID) and, with `--roce`, on RoCE v2, where there are
//! no LIDs (`Completion::slid` is 0) and the address is the packet's source GID. Prints the
//! counts and the PCIe cost of one request and one response as the model counts it (model
//! numbers, both NICs together):
//!
//! ```text
//! cargo run --release --example ud_rpc -- [--roce] [ROUNDS]
//! ```
//!
//! Results: `docs/transports.md`.

use mlx5_direct::backend::sim::hw::LinkLayer;
use mlx5_direct::backend::sim::{Fabric, NicConfig, PcieCounters, Sim};
use mlx5_direct::{
    Access, AddressHandle, AhAttr, Completion, Context, Cq, Data, GlobalRoute, GrhArea,
    MemoryRegion, ProtectionDomain, Qp, QpConfig, SendFlags, SendOp, SendWr, Status, Transport,
    WcOpcode,
};

/// Requests in flight.
const DEPTH: usize = 64;
/// The Q_Key both sides use.
const QKEY: u32 = 0x1100_2233;
/// Bytes of receive buffer per slot: the GRH area and the message.
const SLOT: usize = 512;
/// Request and response size.
const MSG: usize = 8;

/// One UD endpoint on its own model NIC.
struct Side {
    ctx: Context<Sim>,
    pd: ProtectionDomain<Sim>,
    cq: Cq<Sim>,
    qp: Qp<Sim>,
    mr: MemoryRegion<Sim>,
}

impl Side {
    fn new(
        fabric: &std::sync::Arc<Fabric>,
        nic: NicConfig,
    ) -> Result<Side, Box<dyn std::error::Error>> {
        let ctx = Context::new(Sim::on_fabric(fabric, nic));
        let pd = ctx.alloc_pd()?;
        let cq = ctx.create_cq(512, 64)?;
        let config = QpConfig {
            transport: Transport::Ud,
            sq_wqebbs: 256,
            rq_wqes: 128,
            ..QpConfig::default()
        };
        let mut qp = pd.create_qp(&cq, &cq, &config)?;
        qp.activate_ud(1, QKEY)?;
        let mr = pd.alloc_mr(DEPTH * SLOT, Access::LOCAL_WRITE)?;
        Ok(Side {
            ctx,
            pd,
            cq,
            qp,
            mr,
        })
    }

    /// Posts the receive of slot `slot`: the GRH area and up to `SLOT - 40` bytes.
    fn post_recv(&mut self, slot: usize) -> Result<(), Box<dyn std::error::Error>> {
        let sge = self.mr.sge(slot * SLOT, SLOT as u32);
        self.qp
            .rq()
            .expect("a UD QP has a receive queue")
            .post(slot as u64, &[sge])?;
        Ok(())
    }

    /// Polls until `n` completions arrived, running the model's deferred work meanwhile;
    /// every one must have succeeded.
    fn poll_n(&mut self, n: usize) -> Result<Vec<Completion>, Box<dyn std::error::Error>> {
        let mut out = vec![Completion::default(); n];
        let mut got = 0;
        while got < n {
            let k = self.cq.poll(&mut out[got..]);
            if k == 0 {
                self.ctx.backend().nic().progress();
            }
            got += k;
        }
        if let Some(bad) = out.iter().find(|c| c.status != Status::Success) {
            return Err(format!("error completion: {bad:?}").into());
        }
        Ok(out)
    }

    /// The GRH area of receive completion `c`: the first 40 bytes of its slot.
    fn grh_area(&self, c: &Completion) -> GrhArea {
        let mut area = [0u8; 40];
        self.mr.read(c.wr_id as usize * SLOT, &mut area);
        area
    }

    /// The payload of receive completion `c`.
    fn payload(&self, c: &Completion) -> [u8; MSG] {
        let mut buf = [0u8; MSG];
        let at = c.wr_id as usize * SLOT + c.ud_payload().start;
        self.mr.read(at, &mut buf);
        buf
    }

    fn pcie(&self) -> PcieCounters {
        self.ctx.backend().nic().pcie()
    }
}

/// What the two NICs moved over their PCIe links since `before`.
fn link(client: &Side, server: &Side, before: (PcieCounters, PcieCounters)) -> PcieCounters {
    (client.pcie() - before.0) + (server.pcie() - before.1)
}

fn per_message(what: &str, c: PcieCounters, n: usize) {
    let n = n as f64;
    println!(
        "  {what}: {:.2} MMIO writes, {:.2} DMA reads, {:.2} DMA writes, {:.1} TLPs, \
         {:.1} link bytes down + {:.1} up",
        c.mmio_writes as f64 / n,
        c.dma_reads as f64 / n,
        c.dma_writes as f64 / n,
        (c.tlps_down + c.tlps_up) as f64 / n,
        c.bytes_down as f64 / n,
        c.bytes_up as f64 / n,
    );
}

/// The client's address of the server: its LID on InfiniBand; on RoCE its GID, through the
/// client port's default GID entry (RoCE v2). In two processes both come from the
/// server's `Endpoint` (LID and GID), sent over TCP.
fn address_of(client: &Side, server: &Side) -> Result<AhAttr, Box<dyn std::error::Error>> {
    let remote = server.qp.endpoint()?;
    let port = client.ctx.port(1)?;
    let mut attr = AhAttr::to_lid(1, &remote);
    if port.roce {
        attr.grh = Some(GlobalRoute {
            dgid: remote.gid,
            sgid_index: port.gid_index,
            hop_limit: 64,
            ..GlobalRoute::default()
        });
    }
    Ok(attr)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut roce = false;
    let mut rounds = 16;
    for arg in std::env::args().skip(1) {
        match arg.as_str() {
            "--roce" => roce = true,
            n => {
                rounds = n
                    .parse()
                    .map_err(|_| format!("usage: ud_rpc [--roce] [ROUNDS]; got {n}"))?
            }
        }
    }
    let nic = NicConfig {
        link_layer: if roce {
            LinkLayer::Ethernet
        } else {
            LinkLayer::InfiniBand
        },
        ..NicConfig::default()
    };
    let fabric = Fabric::new();
    let (mut client, mut server) = (Side::new(&fabric, nic.clone())?, Side::new(&fabric, nic)?);
    for slot in 0..DEPTH {
        client.post_recv(slot)?;
        server.post_recv(slot)?;
    }
    let to_server = client.pd.create_ah(&address_of(&client, &server)?)?;
    let server_qpn = server.qp.qpn();
    // The server's address handles, one per sender address it has heard from.
    let mut replies: Vec<(AhAttr, AddressHandle<Sim>)> = Vec::new();
    let (mut req_cost, mut resp_cost) = (PcieCounters::default(), PcieCounters::default());
    let (mut requests, mut responses) = (0usize, 0usize);

    for round in 0..rounds {
        // Requests: the client posts DEPTH, the server receives them.
        let before = (client.pcie(), server.pcie());
        for slot in 0..DEPTH {
            let mut req = [0u8; MSG];
            req[0] = slot as u8;
            req[1..].copy_from_slice(&(round as u64).to_le_bytes()[..MSG - 1]);
            let wr = SendWr {
                wr_id: slot as u64,
                op: SendOp::Send,
                data: Data::Inline(&req),
                flags: SendFlags::SIGNALED,
            };
            client
                .qp
                .sq()
                .post_ud(wr, &to_server.dest(server_qpn, QKEY))?;
        }
        let arrived = server.poll_n(DEPTH)?;
        req_cost = req_cost + link(&client, &server, before);
        requests += DEPTH;

        // Responses: addressed from each request's completion.
        let before = (client.pcie(), server.pcie());
        for c in &arrived {
            let req = server.payload(c);
            // The sender's address from the receive (what `create_ah_from_recv` makes a
            // handle of), so the server keeps one handle per sender.
            let sender = server.ctx.ah_attr_from_recv(1, c, &server.grh_area(c))?;
            let known = replies.iter().position(|(attr, _)| *attr == sender);
            let at = match known {
                Some(at) => at,
                None => {
                    replies.push((sender, server.pd.create_ah(&sender)?));
                    replies.len() - 1
                }
            };
            let ah = &replies[at].1;
            let wr = SendWr {
                wr_id: c.wr_id,
                op: SendOp::SendImm(u32::from(req[0])),
                data: Data::Inline(&req),
                flags: SendFlags::SIGNALED,
            };
            server.qp.sq().post_ud(wr, &ah.dest(c.src_qp(), QKEY))?;
            server.post_recv(c.wr_id as usize)?;
        }
        // The client: DEPTH send completions and DEPTH responses, in any order.
        let mut seen = [false; DEPTH];
        for c in client.poll_n(2 * DEPTH)? {
            if c.opcode == WcOpcode::Send {
                continue;
            }
            let resp = client.payload(&c);
            let slot = c.imm().ok_or("a response without its slot")? as usize;
            if slot >= DEPTH || seen[slot] || usize::from(resp[0]) != slot {
                return Err(format!("response {resp:?} for slot {slot} unexpected").into());
            }
            seen[slot] = true;
            responses += 1;
            client.post_recv(c.wr_id as usize)?;
        }
        server.poll_n(DEPTH)?;
        resp_cost = resp_cost + link(&client, &server, before);
        if !seen.iter().all(|&s| s) {
            return Err(format!("round {round}: a response is missing").into());
        }
    }

    let stats = server.ctx.backend().nic().stats();
    let link = if roce { "RoCE v2" } else { "InfiniBand" };
    println!(
        "UD RPC on the model ({link}): {rounds} rounds x {DEPTH} outstanding, {MSG}-byte inline \
         SENDs"
    );
    println!(
        "  {requests} requests, {responses} responses, {} server address handle(s); \
         drops: no receive {}, Q_Key {}",
        replies.len(),
        stats.ud_no_receive,
        stats.qkey_violations
    );
    println!("PCIe per message (model numbers, both NICs, default link):");
    per_message("request ", req_cost, requests);
    per_message("response", resp_cost, responses);
    Ok(())
}
