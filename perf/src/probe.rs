//! Posting a case on the model and capturing what it cost: the WQE bytes from the driver's
//! ring, the doorbell record, the MMIO stores the driver made (through [`Traced`]) and every
//! TLP the model counted on each NIC's link. Shared by `explain` and `pcie`.

use mlx5_direct::backend::sim::hw::LinkLayer;
use mlx5_direct::backend::sim::{
    Completions, Fabric, Fault, Nic, NicConfig, PcieConfig, PcieCounters, Sim, Tlp, ZipConfig,
    ZipPolicy,
};
use mlx5_direct::prm::{DS, SEND_WQE_BB};
use mlx5_direct::{
    Access, AhAttr, Completion, ConnectOptions, Context, Cq, CqConfig, CqeCompression, Data,
    DmSlots, DoorbellMode, GlobalRoute, MemOptions, Pages, QpConfig, SendFlags, SendOp, SendWr,
    Sge, Transport, DM_LINE, UD_GRH_BYTES,
};

use crate::cli::{ExplainOp, PostMode, TlpOverhead};
use crate::traced::{MmioWrite, Traced};

/// perftest's default inline limit for RDMA WRITE: the largest inline payload the tables and
/// plots use, and the queue's inline limit unless a case needs more.
pub const PERFTEST_INLINE: usize = 220;

/// What to post.
#[derive(Clone, Copy, Debug)]
pub struct Case {
    /// The operation.
    pub op: ExplainOp,
    /// Payload bytes.
    pub size: usize,
    /// Inline payload.
    pub inline: bool,
    /// Gather entries.
    pub sge: usize,
    /// A CQE every this many WRs (0: none), counted over all rounds.
    pub signal_every: u32,
    /// Doorbell or BlueFlame-last.
    pub mode: PostMode,
    /// WRs per doorbell.
    pub batch: u32,
    /// Doorbells rung on each QP.
    pub rounds: u32,
    /// QP pairs, posted to round robin: each round rings every QP's doorbell in turn.
    pub qps: u32,
    /// Arm the requester's CQ before each doorbell (one completion event per doorbell).
    pub arm: bool,
    /// Request packets the requester's NIC loses (each retransmitted).
    pub lose: u32,
    /// Link parameters. With a context cache, one unmeasured pass of the same posts warms
    /// it first.
    pub pcie: PcieConfig,
    /// The pages of both sides' buffers.
    pub pages: Pages,
    /// The page size the model NICs are told the buffers are in, at least
    /// (`Sim::with_mr_page_size`; 0: what the host gave).
    pub mr_page_size: usize,
    /// Each message of a QP at the next `size` bytes of the buffers (which then hold every
    /// message of a pass) instead of all at offset 0.
    pub walk: bool,
    /// Both sides' buffers registered on demand (cold: the measured pass is the first).
    pub odp: bool,
    /// Both sides' rings (CQ, QP, SRQ buffers) on 2 MiB-aligned memory that the model NICs
    /// are told is in 2 MiB pages (`Sim::with_ring_page_size`); else 4 KiB pages.
    pub huge_rings: bool,
    /// The requester's CQ compresses CQEs so (the model compressing every burst).
    pub zip: Option<CqeCompression>,
    /// The requester's QPs: RC, UC, UD, XRC initiators (`Transport::XrcIni`, each to a
    /// target of its own, all naming one XRC SRQ), or DC initiators (`Transport::Dci`) sending to DC
    /// targets on the responder's SRQ.
    pub transport: Transport,
    /// UD and DC: the address handle carries a GRH (InfiniBand with a global route), so UD
    /// receives get the GRH area written.
    pub grh: bool,
    /// Both NICs' ports on Ethernet (RoCE v2, `NicConfig::link_layer`): every address
    /// handle has a GRH and its AV is RoCE's (`mlx5_create_ah`), every UD receive gets the
    /// IPv6 header.
    pub roce: bool,
    /// DC: the responder's DC targets, the messages addressed to them in turn (1: every
    /// message to the same DCT).
    pub dc_targets: u32,
    /// UD and DC: a compact address handle (the 16-byte AV), both NICs given the
    /// `compact_address_vector` cap (`NicConfig::compact_av`).
    pub compact_av: bool,
    /// Bytes per CQE of the responder's CQ: 64 or 128.
    pub recv_cqe: usize,
    /// The responder's QPs scatter to CQE (`QpConfig::scatter_to_cqe`; RC and UC).
    pub scatter_to_cqe: bool,
    /// Each message's payload copied into device-memory slots of the requester's QP and
    /// gathered from there (`SendQueue::push_dm`; the model NICs get the device memory).
    pub dm: bool,
    /// Both sides' CQs created with completion timestamps (`CqConfig::timestamps`).
    pub timestamps: bool,
}

/// The Q_Key of the UD cases, and the DC key of the DC ones (perftest's).
const QKEY: u32 = 0x1111_1111;
const DC_KEY: u64 = 0xffee_ddcc;

/// What a case's measured pass did on the wire, as the requester's NIC counts it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Wire {
    /// Request packets sent.
    pub packets: u64,
    /// DC connections set up (one handshake on the wire each).
    pub dc_connects: u64,
    /// DC connections torn down to reach another target.
    pub dc_disconnects: u64,
}

impl Case {
    /// Messages posted on each QP.
    fn per_qp(&self) -> u32 {
        self.batch * self.rounds
    }

    /// Messages posted in all (measured pass).
    pub fn messages(&self) -> u32 {
        self.per_qp() * self.qps
    }
}

/// One WQE as it sits in the ring.
#[derive(Clone, Debug)]
pub struct Wqe {
    /// Its first WQEBB's producer count.
    pub pi: u32,
    /// Its `ds * 16` bytes.
    pub bytes: Vec<u8>,
}

/// What posting a case cost.
#[derive(Clone, Debug)]
pub struct Observed {
    /// The WQEs posted on the first QP, in order.
    pub wqes: Vec<Wqe>,
    /// The first QP's send doorbell record after posting.
    pub dbrec: u32,
    /// The requester's MMIO stores.
    pub mmio: Vec<MmioWrite>,
    /// TLPs on the requester's link.
    pub requester_tlps: Vec<Tlp>,
    /// TLPs on the responder's link.
    pub responder_tlps: Vec<Tlp>,
    /// Requester link counters for the whole case.
    pub requester: PcieCounters,
    /// Responder link counters for the whole case.
    pub responder: PcieCounters,
    /// The CQEs polled at the requester, each as the NIC wrote it, with its consumer count.
    pub cqes: Vec<(u32, Vec<u8>)>,
    /// The requester CQ's entries the measured pass took, as the NIC wrote them (before
    /// polling, which expands compressed ones in place): its first index and the `cqe64`s.
    pub cq_entries: (u32, Vec<[u8; 64]>),
    /// The requester NIC's wire counts of the measured pass.
    pub wire: Wire,
    /// With `timestamps`: the requester's clock-info page (`mlx5dv_get_clock_info`), which
    /// converts the CQEs' timestamps.
    pub clock: Option<mlx5_direct::ClockInfo>,
    /// The case ran on RoCE ports ([`Case::roce`]).
    pub roce: bool,
}

/// The link parameters of a preset with the given sizes.
pub fn link(overhead: TlpOverhead, mps: u32, mrrs: u32, rcb: u32) -> PcieConfig {
    let base = match overhead {
        TlpOverhead::PcieBench => PcieConfig::pcie_bench(),
        TlpOverhead::Kalia => PcieConfig::kalia(),
    };
    PcieConfig {
        mps,
        mrrs,
        rcb,
        ..base
    }
}

use crate::Error;

/// The link parameters in words, for headers.
pub fn describe_link(pcie: &PcieConfig) -> String {
    let completions = match pcie.completions {
        Completions::Mps => "completions up to MPS",
        Completions::Rcb => "a completion per RCB",
    };
    format!(
        "TLP overhead MWr {} B, MRd {} B, CplD {} B; MPS {}, MRRS {}, RCB {}, {completions}",
        pcie.mwr_overhead, pcie.mrd_overhead, pcie.cpld_overhead, pcie.mps, pcie.mrrs, pcie.rcb
    )
}

/// The optional NIC traffic counted, in words, for headers ("none" when off).
pub fn describe_options(pcie: &PcieConfig) -> String {
    let mut on = Vec::new();
    if pcie.bf_evict_every != 0 {
        on.push(format!(
            "1 BlueFlame copy in {} evicted (WQE read by DMA)",
            pcie.bf_evict_every
        ));
    }
    if pcie.eq_rearm {
        on.push("EQ doorbell per event (4 B)".into());
    }
    if let Some(c) = pcie.context_cache {
        on.push(format!(
            "context cache of {} (misses read QPC {} B, CQC {} B, mkey {} B), warmed by one pass",
            c.entries, c.qpc_bytes, c.cqc_bytes, c.mkc_bytes
        ));
    }
    if pcie.retry_refetch {
        on.push("WQE re-read per retransmission".into());
    }
    if on.is_empty() {
        "none".into()
    } else {
        on.join("; ")
    }
}

/// Does the operation consume a receive at the responder?
fn needs_receive(op: ExplainOp) -> bool {
    matches!(
        op,
        ExplainOp::Send | ExplainOp::SendImm | ExplainOp::WriteImm
    )
}

fn check(case: &Case) -> Result<(), Error> {
    let atomic = matches!(case.op, ExplainOp::Cas | ExplainOp::Faa);
    if atomic && case.size != 8 {
        return Err("atomics move 8 bytes: use --size 8".into());
    }
    if case.inline && (atomic || case.op == ExplainOp::Read) {
        return Err("READ and atomics cannot carry inline data".into());
    }
    if !case.inline && (case.sge == 0 || case.sge > case.size) {
        return Err(format!(
            "--sge must be between 1 and the size ({}): an entry cannot be empty",
            case.size
        )
        .into());
    }
    if case.batch == 0 || case.rounds == 0 {
        return Err("--batch must be at least 1".into());
    }
    if case.qps == 0 {
        return Err("--qps must be at least 1".into());
    }
    let payload_op = matches!(
        case.op,
        ExplainOp::Write | ExplainOp::WriteImm | ExplainOp::Send | ExplainOp::SendImm
    );
    let rc = case.transport == Transport::Rc;
    if case.dm && (case.inline || !payload_op || case.signal_every != 1 || !rc) {
        return Err(
            "device memory carries the payload of RC WRITEs and SENDs, each signaled".into(),
        );
    }
    let datagram = matches!(case.transport, Transport::Ud | Transport::Dci);
    let refusal = match case.transport {
        Transport::Ud if !matches!(case.op, ExplainOp::Send | ExplainOp::SendImm) => {
            Some("UD carries SEND and SEND with immediate only")
        }
        Transport::Uc if atomic || case.op == ExplainOp::Read => {
            Some("UC carries no READ or atomics")
        }
        Transport::Dct => Some("a DCT sends nothing: give the DCI side (dc)"),
        Transport::XrcTgt => Some("an XRC target sends nothing: give the initiator side (xrc)"),
        _ if datagram && case.qps > 1 => Some("--qps: UD and DC cases use one QP"),
        _ if case.grh && !datagram => Some("--grh: address handles are UD's and DC's"),
        _ if case.compact_av && !datagram => {
            Some("--compact-av: address handles are UD's and DC's")
        }
        _ if case.compact_av && case.grh => Some("--compact-av: a compact AV carries no GRH"),
        _ if case.compact_av && case.roce => {
            Some("--compact-av: RoCE has no compact AV (every address is global)")
        }
        _ if case.dc_targets == 0 || (case.dc_targets > 1 && case.transport != Transport::Dci) => {
            Some("DC targets: at least 1, and more only for DC")
        }
        _ if case.recv_cqe != 64 && case.recv_cqe != 128 => {
            Some("--scatter-to-cqe takes the CQE size: 64 or 128")
        }
        _ if case.scatter_to_cqe && !matches!(case.transport, Transport::Rc | Transport::Uc) => {
            Some("--scatter-to-cqe: RC and UC receives only")
        }
        _ => None,
    };
    match refusal {
        Some(r) => Err(r.into()),
        None => Ok(()),
    }
}

/// Splits `len` bytes at `offset` of a region into `k` gather entries.
fn split(base: Sge, k: usize) -> Vec<Sge> {
    let chunk = (base.len as usize).div_ceil(k) as u32;
    (0..k as u32)
        .map(|i| Sge {
            addr: base.addr + u64::from(i * chunk),
            len: chunk.min(base.len.saturating_sub(i * chunk)),
            lkey: base.lkey,
        })
        .filter(|s| s.len > 0)
        .collect()
}

fn poll_all<B: mlx5_direct::backend::Backend>(
    cq: &mut Cq<B>,
    want: usize,
    nic: &Nic,
) -> Result<usize, Error> {
    let mut done = vec![Completion::default(); want.max(1)];
    let mut got = 0;
    for _ in 0..1000 {
        got += cq.poll(&mut done[got..]);
        if got >= want {
            break;
        }
        nic.progress();
    }
    if let Some(bad) = done[..got].iter().find(|c| !c.status.is_ok()) {
        return Err(format!("completion failed: {:?}", bad.status).into());
    }
    if got != want {
        return Err(format!("{got} of {want} completions arrived").into());
    }
    Ok(got)
}

/// Waits for one completion on `cq` of the model context `ctx`, running the NIC's deferred
/// work between polls; an error completion is an error.
pub fn complete_one(
    ctx: &Context<mlx5_direct::backend::sim::Sim>,
    cq: &mut Cq<mlx5_direct::backend::sim::Sim>,
) -> Result<Completion, Error> {
    let mut out = [Completion::default(); 1];
    for _ in 0..100_000 {
        if cq.poll(&mut out) == 1 {
            return match out[0].status.is_ok() {
                true => Ok(out[0]),
                false => Err(format!("{:?}", out[0]).into()),
            };
        }
        ctx.backend().nic().progress();
    }
    Err("no completion".into())
}

/// A link's (MWr down, MRd, CplD, MWr up, bytes down, bytes up).
pub fn link_counts(c: &PcieCounters) -> (u64, u64, u64, u64, u64, u64) {
    (
        c.mmio_writes,
        c.dma_reads,
        c.completions,
        c.dma_writes,
        c.bytes_down,
        c.bytes_up,
    )
}

/// The device memory of one QP of a `dm` case: a slot (the size in whole 64-byte lines) per
/// message of a pass.
fn dm_bytes(case: &Case) -> usize {
    case.size.next_multiple_of(DM_LINE) * case.per_qp() as usize
}

/// The model's ports' link layer: Ethernet (RoCE v2) or InfiniBand.
pub fn link_layer(roce: bool) -> LinkLayer {
    match roce {
        true => LinkLayer::Ethernet,
        false => LinkLayer::InfiniBand,
    }
}

/// Posts `case` on two fresh model NICs and returns what it cost.
pub fn observe(case: &Case) -> Result<Observed, Error> {
    check(case)?;
    let fabric = Fabric::new();
    let config = NicConfig {
        pcie: case.pcie,
        // A clock of one tick per CQE: the CQEs' timestamps, and so their bytes, are the
        // same on every run.
        clock_step: 1,
        cqe_zip: ZipConfig {
            policy: ZipPolicy::EveryBurst,
            ..ZipConfig::default()
        },
        compact_av: case.compact_av,
        link_layer: link_layer(case.roce),
        // A slot per message of a QP's pass, each allocation in whole 4 KiB pages.
        dm_size: if case.dm {
            u64::from(case.qps) * dm_bytes(case).next_multiple_of(4096) as u64
        } else {
            0
        },
        ..NicConfig::default()
    };
    let sim = |config| {
        let sim = Sim::on_fabric(&fabric, config).with_mr_page_size(case.mr_page_size);
        match case.huge_rings {
            true => sim
                .with_ring_memory(MemOptions {
                    pages: Pages::Transparent,
                    numa_node: None,
                })
                .with_ring_page_size(mlx5_direct::HUGE_PAGE),
            false => sim,
        }
    };
    let a = Context::new(Traced::new(sim(config.clone())));
    let b = Context::new(sim(config));
    let n = case.messages();
    let per_qp = case.per_qp();
    let qp_config = QpConfig {
        // Room for the warming pass and the measured one.
        sq_wqebbs: (per_qp * 8).next_power_of_two().max(64),
        // 256 receives of one 16-byte entry: 4 KiB, so the SQ that follows is page aligned.
        rq_wqes: per_qp.next_power_of_two().max(256),
        max_send_sge: case.sge.max(1) as u32,
        max_recv_sge: 1,
        max_inline: if case.inline {
            case.size.max(PERFTEST_INLINE)
        } else {
            PERFTEST_INLINE
        } as u32,
        transport: case.transport,
        scatter_to_cqe: false,
        ..QpConfig::default()
    };
    let qp_config_b = QpConfig {
        scatter_to_cqe: case.scatter_to_cqe,
        ..qp_config
    };
    let (pd_a, pd_b) = (a.alloc_pd()?, b.alloc_pd()?);
    let mut cq_a = a.create_cq_with(&CqConfig {
        compression: case.zip,
        timestamps: case.timestamps,
        ..CqConfig::new(2 * n + 16, 64)
    })?;
    let mut cq_b = b.create_cq_with(&CqConfig {
        timestamps: case.timestamps,
        ..CqConfig::new(2 * n + 16, case.recv_cqe)
    })?;
    let mode = match case.mode {
        PostMode::Bf => DoorbellMode::BlueFlame,
        PostMode::BfLast => DoorbellMode::BlueFlameLast,
        PostMode::Db => DoorbellMode::Doorbell,
    };
    // Each requester QP with its responder QP (none for a DCI: its targets are `dcts`; none
    // for an XRC initiator: its target is in `xrc_targets`).
    let mut pairs = Vec::new();
    let options = ConnectOptions::default();
    // XRC: the responder's domain and its one XRC SRQ (on `cq_b`), which every initiator
    // names in its WQEs, and a target per initiator.
    let xrcd_b = match case.transport {
        Transport::XrcIni => Some(b.open_xrcd()?),
        _ => None,
    };
    let mut xsrq_b = match &xrcd_b {
        Some(x) => Some(x.create_srq(&pd_b, &cq_b, qp_config.rq_wqes, 1)?),
        None => None,
    };
    let xsrqn = xsrq_b.as_ref().map_or(0, |s| s.srqn());
    let mut xrc_targets = Vec::new();
    for _ in 0..case.qps {
        let (mut qp_a, qp_b) = match case.transport {
            Transport::Dci => {
                let mut dci = pd_a.create_dci(&cq_a, &qp_config)?;
                dci.activate_dci(&options)?;
                (dci, None)
            }
            Transport::XrcIni => {
                let xrcd = xrcd_b.as_ref().ok_or("no XRC domain")?;
                let mut ini = pd_a.create_xrc_initiator(&cq_a, &qp_config)?;
                let mut tgt = xrcd.create_target()?;
                ini.connect(&tgt.endpoint()?, &options)?;
                tgt.connect(&ini.endpoint()?, &options)?;
                xrc_targets.push(tgt);
                (ini, None)
            }
            Transport::Ud => {
                let mut qp_a = pd_a.create_qp(&cq_a, &cq_a, &qp_config)?;
                let mut qp_b = pd_b.create_qp(&cq_b, &cq_b, &qp_config_b)?;
                qp_a.activate_ud(1, QKEY)?;
                qp_b.activate_ud(1, QKEY)?;
                (qp_a, Some(qp_b))
            }
            _ => {
                let mut qp_a = pd_a.create_qp(&cq_a, &cq_a, &qp_config)?;
                let mut qp_b = pd_b.create_qp(&cq_b, &cq_b, &qp_config_b)?;
                qp_a.connect(&qp_b.endpoint()?, &options)?;
                qp_b.connect(&qp_a.endpoint()?, &options)?;
                (qp_a, Some(qp_b))
            }
        };
        qp_a.sq().set_mode(mode);
        if case.dm {
            let dm = a.alloc_dm(dm_bytes(case))?;
            let region = dm.register(&pd_a, 0, dm.len(), Access::NONE)?;
            qp_a.sq()
                .attach_dm(DmSlots::new(region, case.size.next_multiple_of(DM_LINE))?)?;
        }
        pairs.push((qp_a, qp_b));
    }
    let mut srq_b = match case.transport {
        Transport::Dci => Some(pd_b.create_srq(qp_config.rq_wqes, 1)?),
        _ => None,
    };
    // The DCTs (kept alive for the case) and their numbers.
    let mut dct_objects = Vec::new();
    let mut dcts = Vec::new();
    if let Some(srq) = &srq_b {
        for _ in 0..case.dc_targets {
            let mut dct = pd_b.create_dct(&cq_b, srq, DC_KEY)?;
            dct.activate(1, Access::ALL, &options)?;
            dcts.push(dct.number()?);
            dct_objects.push(dct);
        }
    }
    // UD and DC: the address handle of the responder's port.
    let port_b = b.port(1)?;
    let attr = AhAttr {
        port: 1,
        dlid: port_b.lid,
        grh: (case.grh || port_b.roce).then_some(GlobalRoute {
            dgid: port_b.gid,
            hop_limit: 64,
            ..GlobalRoute::default()
        }),
        ..AhAttr::default()
    };
    let ah = match (case.transport, case.compact_av) {
        (Transport::Ud | Transport::Dci, false) => Some(pd_a.create_ah(&attr)?),
        (Transport::Ud | Transport::Dci, true) => Some(pd_a.create_compact_ah(&attr)?),
        _ => None,
    };
    let ud_qpns: Vec<u32> = pairs
        .iter()
        .map(|(_, b)| b.as_ref().map_or(0, |q| q.qpn()))
        .collect();
    let stride = if case.walk { case.size } else { 0 };
    // UD receives: the GRH area in front of the message.
    let grh = match case.transport {
        Transport::Ud => UD_GRH_BYTES,
        _ => 0,
    };
    let len = (grh + case.size + stride * per_qp as usize).max(64);
    let memory = MemOptions {
        pages: case.pages,
        numa_node: None,
    };
    let access = if case.odp {
        Access(Access::ALL.0 | Access::ON_DEMAND.0)
    } else {
        Access::ALL
    };
    let (mr_a, mr_b) = (
        pd_a.alloc_mr_with(len, access, &memory)?,
        pd_b.alloc_mr_with(len, access, &memory)?,
    );
    let op_at = |i: u32| {
        let remote = mr_b.remote(i as usize * stride);
        match case.op {
            ExplainOp::Write => SendOp::Write(remote),
            ExplainOp::WriteImm => SendOp::WriteImm(remote, 0x1234_5678),
            ExplainOp::Send => SendOp::Send,
            ExplainOp::SendImm => SendOp::SendImm(0x1234_5678),
            ExplainOp::Read => SendOp::Read(remote),
            ExplainOp::Cas => SendOp::CompareSwap {
                remote,
                compare: 0,
                swap: 1,
            },
            ExplainOp::Faa => SendOp::FetchAdd { remote, add: 1 },
        }
    };
    let payload = vec![0xa5u8; case.size];
    let sges_at = |i: u32| split(mr_a.sge(i as usize * stride, case.size as u32), case.sge);
    let (nic_a, nic_b) = (a.backend().inner().nic(), b.backend().nic());

    // One pass: receives for it, then `rounds` rounds ringing each QP's doorbell once, then
    // every completion polled. The measured pass may lose packets and arm the CQ before each
    // doorbell (the model runs the doorbell's work before it returns, so the arm's event has
    // fired when the next arm comes; acknowledging it advances the arm sequence number).
    // Returns the CQEs polled, the first QP's producer count before the pass and the
    // requester CQ's entries the pass took, before they were polled.
    type Pass = (usize, u32, (u32, Vec<[u8; 64]>));
    let mut pass = |measured: bool| -> Result<Pass, Error> {
        let pi0 = pairs[0].0.sq().producer_count();
        let ci0 = cq_a.consumer_index();
        if measured && case.lose > 0 {
            nic_a.inject(Fault::LosePackets {
                qpn: None,
                count: case.lose,
            });
        }
        if needs_receive(case.op) {
            let sge = |i: u32| [mr_b.sge(i as usize * stride, (grh + case.size) as u32)];
            if let Some(srq) = srq_b.as_mut() {
                for i in 0..n {
                    srq.post(u64::from(i), &sge(i))?;
                }
            }
            if let Some(srq) = xsrq_b.as_mut() {
                for i in 0..n {
                    srq.post(u64::from(i), &sge(i))?;
                }
            }
            for (_, qp_b) in pairs.iter_mut() {
                let Some(rq) = qp_b.as_mut().and_then(|q| q.rq()) else {
                    continue;
                };
                for i in 0..per_qp {
                    rq.post(u64::from(i), &sge(i))?;
                }
            }
        }
        let mut signaled = 0;
        for round in 0..case.rounds {
            for (j, (qp_a, _)) in pairs.iter_mut().enumerate() {
                if measured && case.arm {
                    cq_a.arm(false);
                }
                let sq = qp_a.sq();
                for k in 0..case.batch {
                    let i = round * case.batch + k;
                    let signal = case.signal_every != 0 && (i + 1) % case.signal_every == 0;
                    signaled += usize::from(signal);
                    let flags = if signal {
                        SendFlags::SIGNALED
                    } else {
                        SendFlags::UNSIGNALED
                    };
                    let sges = sges_at(i);
                    let data = if case.inline {
                        Data::Inline(&payload)
                    } else {
                        Data::Sges(&sges)
                    };
                    let wr = SendWr {
                        wr_id: u64::from(i),
                        op: op_at(i),
                        data,
                        flags,
                    };
                    match (&ah, case.transport) {
                        (Some(ah), Transport::Ud) => sq.push_ud(&wr, &ah.dest(ud_qpns[j], QKEY))?,
                        (Some(ah), _) => {
                            let dct = dcts[i as usize % dcts.len()];
                            sq.push_dc(&wr, &ah.dc_dest(dct, DC_KEY))?
                        }
                        (None, Transport::XrcIni) => sq.push_xrc(&wr, xsrqn)?,
                        (None, _) if case.dm => sq.push_dm(wr.wr_id, wr.op, &payload, wr.flags)?,
                        (None, _) => sq.push_wr(&wr)?,
                    }
                }
                sq.ring_doorbell();
                if measured && case.arm {
                    // Take the event the doorbell's CQE raised (if it was signaled), so
                    // the next arm asks for a new one.
                    cq_a.wait_event(std::time::Duration::ZERO)?;
                }
            }
        }
        let entries = nic_a.cq_entries(cq_a.cqn(), ci0, signaled as u32)?;
        let cqes = poll_all(&mut cq_a, signaled, nic_a)?;
        if needs_receive(case.op) {
            poll_all(&mut cq_b, n as usize, nic_b)?;
        }
        Ok((cqes, pi0, (ci0, entries)))
    };
    if case.pcie.context_cache.is_some() {
        pass(false)?;
    }
    for nic in [nic_a, nic_b] {
        nic.set_tlp_trace(true);
        nic.take_tlps();
    }
    a.backend().take_mmio();
    let before = (nic_a.pcie(), nic_b.pcie());
    let stats = nic_a.stats();
    let (polled, pi0, cq_entries) = pass(true)?;
    let after = nic_a.stats();
    let wire = Wire {
        packets: after.packets - stats.packets,
        dc_connects: after.dc_connects - stats.dc_connects,
        dc_disconnects: after.dc_disconnects - stats.dc_disconnects,
    };
    let ci0 = cq_entries.0;
    let cqes = (ci0..ci0 + polled as u32)
        .map(|i| (i, cq_a.cqe_bytes(i)))
        .collect();
    let requester = nic_a.pcie() - before.0;
    let responder = nic_b.pcie() - before.1;

    let sq = pairs[0].0.sq();
    let mut wqes = Vec::new();
    let mut pi = pi0;
    while pi != sq.producer_count() {
        let ds = (sq.wqe_bytes(pi, DS)[7] & 0x3f) as usize;
        wqes.push(Wqe {
            pi,
            bytes: sq.wqe_bytes(pi, ds * DS),
        });
        pi = pi.wrapping_add((ds * DS).div_ceil(SEND_WQE_BB) as u32);
    }
    Ok(Observed {
        wqes,
        dbrec: sq.doorbell_record(),
        mmio: a.backend().take_mmio(),
        requester_tlps: nic_a.take_tlps(),
        responder_tlps: nic_b.take_tlps(),
        requester,
        responder,
        cqes,
        cq_entries,
        wire,
        clock: case.timestamps.then(|| a.clock_info()).transpose()?,
        roce: case.roce,
    })
}
