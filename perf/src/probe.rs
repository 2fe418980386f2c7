//! Posting a case on the model and capturing what it cost: the WQE bytes from the driver's
//! ring, the doorbell record, the MMIO stores the driver made (through [`Traced`]) and every
//! TLP the model counted on each NIC's link. Shared by `explain` and `pcie`.

use mlx5_direct::backend::sim::{Fabric, NicConfig, Sim};
use mlx5_direct::prm::{DS, SEND_WQE_BB};
use mlx5_direct::{
    Access, Completion, ConnectOptions, Context, Cq, Data, DoorbellMode, QpConfig, SendFlags,
    SendOp, Sge,
};
use mlx5_hw::{PcieConfig, PcieCounters, Tlp};

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
    /// Doorbells rung.
    pub rounds: u32,
    /// Link parameters.
    pub pcie: PcieConfig,
}

impl Case {
    /// Messages posted in all.
    pub fn messages(&self) -> u32 {
        self.batch * self.rounds
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
    /// The WQEs posted, in order.
    pub wqes: Vec<Wqe>,
    /// The send doorbell record after posting.
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
    /// CQEs polled at the requester.
    pub cqes: usize,
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
    format!(
        "TLP overhead MWr {} B, MRd {} B, CplD {} B; MPS {}, MRRS {}, RCB {}",
        pcie.mwr_overhead, pcie.mrd_overhead, pcie.cpld_overhead, pcie.mps, pcie.mrrs, pcie.rcb
    )
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
    Ok(())
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
    nic: &mlx5_hw::Nic,
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

/// Posts `case` on two fresh model NICs and returns what it cost.
pub fn observe(case: &Case) -> Result<Observed, Error> {
    check(case)?;
    let fabric = Fabric::new();
    let config = NicConfig {
        pcie: case.pcie,
        ..NicConfig::default()
    };
    let a = Context::new(Traced::new(Sim::on_fabric(&fabric, config.clone())));
    let b = Context::new(Sim::on_fabric(&fabric, config));
    let n = case.messages();
    let qp_config = QpConfig {
        sq_wqebbs: (n * 4).next_power_of_two().max(64),
        // 256 receives of one 16-byte entry: 4 KiB, so the SQ that follows is page aligned.
        rq_wqes: n.next_power_of_two().max(256),
        max_send_sge: case.sge.max(1) as u32,
        max_recv_sge: 1,
        max_inline: if case.inline {
            case.size.max(PERFTEST_INLINE)
        } else {
            PERFTEST_INLINE
        } as u32,
    };
    let (pd_a, pd_b) = (a.alloc_pd()?, b.alloc_pd()?);
    let (mut cq_a, mut cq_b) = (a.create_cq(2 * n + 16, 64)?, b.create_cq(2 * n + 16, 64)?);
    let mut qp_a = pd_a.create_qp(&cq_a, &cq_a, &qp_config)?;
    let mut qp_b = pd_b.create_qp(&cq_b, &cq_b, &qp_config)?;
    let len = case.size.max(64);
    let (mr_a, mr_b) = (
        pd_a.alloc_mr(len, Access::ALL)?,
        pd_b.alloc_mr(len, Access::ALL)?,
    );
    qp_a.connect(&qp_b.endpoint()?, &ConnectOptions::default())?;
    qp_b.connect(&qp_a.endpoint()?, &ConnectOptions::default())?;
    if needs_receive(case.op) {
        let rq = qp_b.rq().ok_or("no receive queue")?;
        for i in 0..n {
            rq.post(u64::from(i), &[mr_b.sge(0, case.size as u32)])?;
        }
    }
    let remote = mr_b.remote(0);
    let op = match case.op {
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
    };
    let payload = vec![0xa5u8; case.size];
    let sges = split(mr_a.sge(0, case.size as u32), case.sge);
    let data = if case.inline {
        Data::Inline(&payload)
    } else {
        Data::Sges(&sges)
    };
    let sq = qp_a.sq();
    sq.set_mode(match case.mode {
        PostMode::Bf => DoorbellMode::BlueFlameLast,
        PostMode::Db => DoorbellMode::Doorbell,
    });

    let (nic_a, nic_b) = (a.backend().inner().nic(), b.backend().nic());
    for nic in [nic_a, nic_b] {
        nic.set_tlp_trace(true);
        nic.take_tlps();
    }
    a.backend().take_mmio();
    let before = (nic_a.pcie(), nic_b.pcie());
    let pi0 = sq.producer_count();
    let mut signaled = 0;
    for i in 0..n {
        let signal = case.signal_every != 0 && (i + 1) % case.signal_every == 0;
        signaled += usize::from(signal);
        let flags = if signal {
            SendFlags::SIGNALED
        } else {
            SendFlags::UNSIGNALED
        };
        sq.push(u64::from(i), op, data, flags)?;
        if (i + 1) % case.batch == 0 {
            sq.ring_doorbell();
        }
    }
    let cqes = poll_all(&mut cq_a, signaled, nic_a)?;
    if needs_receive(case.op) {
        poll_all(&mut cq_b, n as usize, nic_b)?;
    }
    let requester = nic_a.pcie() - before.0;
    let responder = nic_b.pcie() - before.1;

    let sq = qp_a.sq();
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
    })
}
