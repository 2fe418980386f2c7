//! Random operation sequences through the driver on the model, checked against a plain
//! in-memory reference executor.
//!
//! Each case builds 1 or 2 connected QP pairs (2 or 4 QPs) across two model NICs, with
//! one CQ per NIC shared by all its QPs or a send and a receive CQ per QP, receives from
//! each QP's RQ or from an SRQ of its own, random ring sizes, BlueFlame size and path
//! MTU, and synchronous or deferred execution (`Fault::DeferExecution`: the model runs a
//! doorbell's work in a later progress step, so a ring slot the driver reuses before its
//! completion would show as corrupted data). It then runs a random list of actions: batches of
//! send WRs (every RC opcode including masked atomics; inline data and gathers from 0 bytes
//! to several WQEBBs, zero-length entries included; random signaling, solicited and fence
//! flags; every doorbell mode), receives (posted before or after the SENDs that need them),
//! polls, model progress steps and faults (lost request packets, lost responses, forced RNR
//! NAKs, dropped BlueFlame data, held-back CQEs; losses stay below the retry count, so a
//! fault may delay a WR but must not change any outcome: retransmitted WRITEs land once,
//! replayed atomics do not apply twice). At the end every pending message gets its receive, all
//! completions are drained, and the target memory, atomic results and completion streams
//! (per QP, send and receive side apart) must equal the reference's exactly.
//!
//! The reference is timing independent: a QP's sends execute in posting order, and the
//! k-th message needing a receive at a QP takes the k-th receive posted there. Each
//! direction of a pair touches its own memory ranges (sources and results in the sender's
//! `L`, targets in the receiver's `T`, receive buffers in the receiver's `R`), so stalls of
//! one QP (RNR while no receive is posted) cannot change the outcome.
//!
//! A second property runs UC and UD (one pair, both directions): UD SEND / SEND_IMM of up
//! to the MTU through address handles with or without a global route (the GRH area left
//! alone, or the IBA GRH written, `grh_present`, `src_qp`, `slid` checked), UC SEND /
//! SEND_IMM / WRITE / WRITE_IMM of up to 4096 bytes at a random path MTU, receives from the
//! RQ or an SRQ (made for UD on UD), 32 cases. These transports drop a message that finds
//! no receive, so each batch's receives are posted before it and nothing may be dropped.
//!
//! Cases: 128 by default, `PROPTEST_CASES=n` for more; `PROPTEST_RNG_SEED=n` replays one
//! run. A failure is shrunk, printed as the minimal action list, and saved under
//! `tests/prop_ops.proptest-regressions`, which later runs replay first (see docs/testing.md).

mod common;

use std::collections::VecDeque;

use mlx5_direct::backend::sim::{Fabric, Fault, NicConfig, Sim};
use mlx5_direct::sq::{MaskedCs32Args, MaskedCs64Args};
use mlx5_direct::{
    Access, AddressHandle, AhAttr, Completion, ConnectOptions, Context, Cq, Data, DoorbellMode,
    GlobalRoute, MemoryRegion, PostError, Qp, QpConfig, SendFlags, SendOp, SendWr, Sge, Srq,
    Status, Transport, WcOpcode, UD_GRH_BYTES,
};
use proptest::prelude::*;

/// Sources, READ and atomic results of the QP's own sends.
const L: usize = 0;
const L_LEN: usize = 8192;
/// Where the peer's WRITEs, READs and atomics go.
const T: usize = 8192;
const T_LEN: usize = 8192;
/// Receive buffers: one area of `RECV_CAP` bytes per receive slot.
const R: usize = 16384;
const RECV_CAP: usize = 1024;
const MAX_RQ: usize = 16;
const MR_LEN: usize = R + MAX_RQ * RECV_CAP;
const MAX_INLINE: usize = 512;
const MAX_SGE: usize = 4;

#[derive(Clone, Debug)]
struct Setup {
    pairs: usize,
    shared_cq: bool,
    /// Each QP takes its receives from an SRQ of its own instead of its RQ.
    srq: bool,
    log_sq: u8,
    log_rq: u8,
    bf_size: u32,
    path_mtu: u32,
    /// Doorbells only queue their work and the model's progress steps run it
    /// (`Fault::DeferExecution`), as a NIC running in parallel with the CPU.
    defer: bool,
}

#[derive(Clone, Debug)]
struct Wr {
    kind: u8,
    len: u16,
    pieces: u8,
    inline: bool,
    local: u16,
    remote: u16,
    signaled: bool,
    solicited: bool,
    fence: bool,
    x: u64,
    y: u64,
}

#[derive(Clone, Debug)]
enum Action {
    Post {
        qp: usize,
        mode: u8,
        wrs: Vec<Wr>,
    },
    Recv {
        qp: usize,
        count: u8,
        split: u32,
    },
    Poll {
        cq: usize,
        max: u8,
    },
    Progress {
        side: usize,
    },
    /// A fault of the model on one NIC (see `Rig::fault`).
    Fault {
        side: usize,
        kind: u8,
        count: u8,
        qp: usize,
    },
}

fn setup() -> impl Strategy<Value = Setup> {
    (
        1..=2usize,
        any::<bool>(),
        any::<bool>(),
        4..=8u8,
        2..=4u8,
        prop_oneof![Just(0u32), Just(64), Just(256), Just(512)],
        prop_oneof![Just(256u32), Just(1024), Just(4096)],
        any::<bool>(),
    )
        .prop_map(
            |(pairs, shared_cq, srq, log_sq, log_rq, bf_size, path_mtu, defer)| Setup {
                pairs,
                shared_cq,
                srq,
                log_sq,
                log_rq,
                bf_size,
                path_mtu,
                defer,
            },
        )
}

fn wr() -> impl Strategy<Value = Wr> {
    (
        (0..13u8, 0..=1024u16, 1..=MAX_SGE as u8, any::<bool>()),
        (any::<u16>(), any::<u16>()),
        (prop::bool::weighted(0.3), any::<bool>(), any::<bool>()),
        (any::<u64>(), any::<u64>()),
    )
        .prop_map(
            |(
                (kind, len, pieces, inline),
                (local, remote),
                (signaled, solicited, fence),
                (x, y),
            )| {
                Wr {
                    kind,
                    len,
                    pieces,
                    inline,
                    local,
                    remote,
                    signaled,
                    solicited,
                    fence,
                    x,
                    y,
                }
            },
        )
}

fn action() -> impl Strategy<Value = Action> {
    prop_oneof![
        5 => (0..4usize, 0..4u8, prop::collection::vec(wr(), 1..8))
            .prop_map(|(qp, mode, wrs)| Action::Post { qp, mode, wrs }),
        3 => (0..4usize, 1..=4u8, any::<u32>())
            .prop_map(|(qp, count, split)| Action::Recv { qp, count, split }),
        2 => (0..8usize, 1..=16u8).prop_map(|(cq, max)| Action::Poll { cq, max }),
        1 => (0..2usize).prop_map(|side| Action::Progress { side }),
        1 => (0..2usize, 0..7u8, 1..=3u8, 0..5usize)
            .prop_map(|(side, kind, count, qp)| Action::Fault { side, kind, count, qp }),
    ]
}

/// A deterministic byte stream (splitmix64) for payloads and initial memory.
fn bytes(seed: u64, len: usize) -> Vec<u8> {
    let mut s = seed;
    (0..len.div_ceil(8))
        .flat_map(|_| {
            s = s.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = s;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            (z ^ (z >> 31)).to_le_bytes()
        })
        .take(len)
        .collect()
}

/// Splits `len` into `pieces` lengths (some may be 0) from the bits of `x`.
fn split(len: usize, pieces: usize, x: u64) -> Vec<usize> {
    let mut left = len;
    let mut out = Vec::with_capacity(pieces);
    for i in 0..pieces - 1 {
        let l = ((x >> (i * 12)) as usize & 0xfff) % (left + 1);
        out.push(l);
        left -= l;
    }
    out.push(left);
    out
}

/// The two NICs of a case on one fabric: BlueFlame size `bf_size`, execution deferred to
/// progress steps if `defer`.
fn nics(bf_size: u32, defer: bool) -> Vec<Context<Sim>> {
    let fabric = Fabric::new();
    let ctxs: Vec<_> = (0..2)
        .map(|_| {
            Context::new(Sim::on_fabric(
                &fabric,
                NicConfig {
                    bf_size,
                    ..NicConfig::default()
                },
            ))
        })
        .collect();
    for ctx in &ctxs {
        ctx.backend().nic().inject(Fault::DeferExecution(defer));
    }
    ctxs
}

fn doorbell_mode(mode: u8) -> DoorbellMode {
    [
        DoorbellMode::Doorbell,
        DoorbellMode::BlueFlame,
        DoorbellMode::BlueFlameLast,
        DoorbellMode::Auto,
    ][mode as usize]
}

/// The gather list of `wr` for `len` bytes in `L`: its pieces with random gaps, from an
/// offset that leaves room for `max_len` bytes.
fn gather(wr: &Wr, len: usize, max_len: usize) -> Vec<(usize, usize)> {
    let lens = split(len, wr.pieces as usize, wr.x);
    let mut at = L + wr.local as usize % (L_LEN - max_len - 64 * MAX_SGE);
    let mut list = Vec::new();
    for (i, l) in lens.into_iter().enumerate() {
        list.push((at, l));
        at += l + ((wr.y >> (8 * i)) & 63) as usize;
    }
    list
}

/// Entries of `lens` bytes back to back from `area`.
fn back_to_back(area: usize, lens: Vec<usize>) -> Vec<(usize, usize)> {
    let mut at = area;
    lens.into_iter()
        .map(|l| {
            at += l;
            (at - l, l)
        })
        .collect()
}

/// The scatter/gather entries of `list` (offset, length) in `mr`.
fn entries(mr: &MemoryRegion<Sim>, list: &[(usize, usize)]) -> Vec<Sge> {
    list.iter().map(|&(o, l)| mr.sge(o, l as u32)).collect()
}

/// The driver's data for `source`; gather entries in `mr`, kept in `sges`.
fn data_of<'a>(source: &'a Source, mr: &MemoryRegion<Sim>, sges: &'a mut Vec<Sge>) -> Data<'a> {
    match source {
        Source::Inline(b) => Data::Inline(b),
        Source::Gather(list) => {
            *sges = entries(mr, list);
            Data::Sges(sges)
        }
    }
}

/// `c` without the source QP, SLID and their flags: defined for UD only, not compared on
/// connected QPs.
fn without_sender(c: Completion) -> Completion {
    c.with_src_qp(0).with_slid(0).with_ud_flags(0)
}

/// The local data of a send as the reference sees it.
#[derive(Clone, Debug)]
enum Source {
    Inline(Vec<u8>),
    /// (offset in the MR, length) entries, zero-length ones included.
    Gather(Vec<(usize, usize)>),
}

/// What the reference executes for one posted WR.
#[derive(Clone, Debug)]
struct RefOp {
    wr_id: u64,
    op: SendOp,
    source: Source,
    /// Offset of the remote target in the peer's MR.
    remote: usize,
    signaled: bool,
    solicited: bool,
}

fn needs_receive(op: &SendOp) -> bool {
    matches!(op, SendOp::Send | SendOp::SendImm(_) | SendOp::WriteImm(..))
}

#[derive(Default)]
struct RefQp {
    mem: Vec<u8>,
    ops: VecDeque<RefOp>,
    recvs: VecDeque<(u64, Vec<(usize, usize)>)>,
    sends: Vec<Completion>,
    recv_done: Vec<Completion>,
}

/// Carry-cut addition of masked fetch-and-add: no carry out of a bit set in `boundary`.
fn masked_add(mem: u64, add: u64, boundary: u64, bits: u32) -> u64 {
    let (mut out, mut carry) = (0u64, 0u64);
    for i in 0..bits {
        let (a, b) = ((mem >> i) & 1, (add >> i) & 1);
        out |= (a ^ b ^ carry) << i;
        carry = (a & b) | (carry & (a ^ b));
        if (boundary >> i) & 1 == 1 {
            carry = 0;
        }
    }
    out
}

/// The reference: plain memory and queues, one step per WR in posting order.
struct Reference {
    qps: Vec<RefQp>,
    qpns: Vec<u32>,
}

impl Reference {
    fn read(&self, q: usize, off: usize, len: usize) -> Vec<u8> {
        self.qps[q].mem[off..off + len].to_vec()
    }

    fn gather(&self, q: usize, source: &Source) -> Vec<u8> {
        match source {
            Source::Inline(b) => b.clone(),
            Source::Gather(list) => list.iter().flat_map(|&(o, l)| self.read(q, o, l)).collect(),
        }
    }

    fn scatter(&mut self, q: usize, list: &[(usize, usize)], data: &[u8]) {
        let mut at = 0;
        for &(o, l) in list {
            let n = l.min(data.len() - at);
            self.qps[q].mem[o..o + n].copy_from_slice(&data[at..at + n]);
            at += n;
        }
        assert_eq!(at, data.len(), "reference: receive too small");
    }

    fn atomic(&mut self, p: usize, off: usize, op: &SendOp) -> (u64, u32) {
        let word = |m: &[u8], n: usize| {
            let mut b = [0u8; 8];
            b[..n].copy_from_slice(&m[off..off + n]);
            u64::from_ne_bytes(b)
        };
        let mem = &mut self.qps[p].mem;
        let (old, new, n) = match *op {
            SendOp::CompareSwap { compare, swap, .. } => {
                let old = word(mem, 8);
                (old, if old == compare { swap } else { old }, 8)
            }
            SendOp::FetchAdd { add, .. } => {
                let old = word(mem, 8);
                (old, old.wrapping_add(add), 8)
            }
            SendOp::MaskedCompareSwap32 { args, .. } => {
                let old = word(mem, 4) as u32;
                let new = if (old ^ args.compare) & args.compare_mask == 0 {
                    (old & !args.swap_mask) | (args.swap & args.swap_mask)
                } else {
                    old
                };
                (old as u64, new as u64, 4)
            }
            SendOp::MaskedCompareSwap64 { args, .. } => {
                let old = word(mem, 8);
                let new = if (old ^ args.compare) & args.compare_mask == 0 {
                    (old & !args.swap_mask) | (args.swap & args.swap_mask)
                } else {
                    old
                };
                (old, new, 8)
            }
            SendOp::MaskedFetchAdd32 {
                add,
                field_boundary,
                ..
            } => {
                let old = word(mem, 4);
                (
                    old,
                    masked_add(old, add as u64, field_boundary as u64, 32),
                    4,
                )
            }
            SendOp::MaskedFetchAdd64 {
                add,
                field_boundary,
                ..
            } => {
                let old = word(mem, 8);
                (old, masked_add(old, add, field_boundary, 64), 8)
            }
            _ => unreachable!("not an atomic: {op:?}"),
        };
        mem[off..off + n].copy_from_slice(&new.to_ne_bytes()[..n]);
        (old, n as u32)
    }

    /// Executes every op whose receive (if it needs one) has been posted.
    fn run(&mut self) {
        for q in 0..self.qps.len() {
            let p = q ^ 1;
            while let Some(op) = self.qps[q].ops.front().cloned() {
                if needs_receive(&op.op) && self.qps[p].recvs.is_empty() {
                    break;
                }
                self.qps[q].ops.pop_front();
                self.execute(q, p, op);
            }
        }
    }

    fn execute(&mut self, q: usize, p: usize, op: RefOp) {
        let mut byte_len = 0;
        let recv = |this: &mut Self, opcode, len, imm, data: Option<&[u8]>| {
            let (wr_id, list) = this.qps[p].recvs.pop_front().expect("receive");
            if let Some(data) = data {
                this.scatter(p, &list, data);
            }
            // The source QP, SLID and UD flags are defined for UD only (the rig does not
            // compare them); an RC receive carries no P_Key (the model writes 0); the SRQ
            // number the rig checks on its own: all 0 here.
            this.qps[p].recv_done.push(
                Completion::default()
                    .with_wr_id(wr_id)
                    .with_qpn(this.qpns[p])
                    .with_opcode(opcode)
                    .with_status(Status::Success)
                    .with_byte_len(len as u32)
                    .with_imm(imm)
                    .with_solicited(op.solicited),
            );
        };
        let opcode = match op.op {
            SendOp::Send | SendOp::SendImm(_) => {
                let data = self.gather(q, &op.source);
                let imm = match op.op {
                    SendOp::SendImm(i) => Some(i),
                    _ => None,
                };
                recv(self, WcOpcode::Recv, data.len(), imm, Some(&data));
                WcOpcode::Send
            }
            SendOp::Write(_) | SendOp::WriteImm(..) => {
                let data = self.gather(q, &op.source);
                self.qps[p].mem[T + op.remote..T + op.remote + data.len()].copy_from_slice(&data);
                if let SendOp::WriteImm(_, imm) = op.op {
                    recv(self, WcOpcode::RecvRdmaWithImm, data.len(), Some(imm), None);
                }
                WcOpcode::RdmaWrite
            }
            SendOp::Read(_) => {
                let Source::Gather(list) = &op.source else {
                    unreachable!()
                };
                let len = list.iter().map(|e| e.1).sum::<usize>();
                let data = self.read(p, T + op.remote, len);
                self.scatter(q, list, &data);
                byte_len = len as u32;
                WcOpcode::RdmaRead
            }
            SendOp::Nop => WcOpcode::Nop,
            ref atomic => {
                let (old, n) = self.atomic(p, T + op.remote, atomic);
                let Source::Gather(list) = &op.source else {
                    unreachable!()
                };
                // The hardware rule, not the model's: 8-byte results in host order (the
                // kernel's atomic_req_8B_endianness_mode 1), 4-byte masked results
                // big-endian (UCX's ext_atomic_arg_sizes_be; docs/model.md).
                let off = list[0].0;
                let result = match n {
                    8 => old.to_ne_bytes().to_vec(),
                    _ => (old as u32).to_be_bytes().to_vec(),
                };
                self.qps[q].mem[off..off + n as usize].copy_from_slice(&result);
                byte_len = n;
                match atomic {
                    SendOp::CompareSwap { .. } => WcOpcode::CompareSwap,
                    SendOp::FetchAdd { .. } => WcOpcode::FetchAdd,
                    SendOp::MaskedCompareSwap32 { .. } | SendOp::MaskedCompareSwap64 { .. } => {
                        WcOpcode::MaskedCompareSwap
                    }
                    _ => WcOpcode::MaskedFetchAdd,
                }
            }
        };
        if op.signaled {
            self.qps[q].sends.push(
                Completion::default()
                    .with_wr_id(op.wr_id)
                    .with_qpn(self.qpns[q])
                    .with_opcode(opcode)
                    .with_byte_len(byte_len),
            );
        }
    }
}

/// The driver side: contexts, CQs, QPs and one region per QP, plus what was polled.
struct Rig {
    ctxs: Vec<Context<Sim>>,
    cqs: Vec<Cq<Sim>>,
    /// The NIC (0 or 1) of each CQ: QP numbers are per NIC.
    cq_side: Vec<usize>,
    qps: Vec<Qp<Sim>>,
    /// One per QP when the case uses SRQs.
    srqs: Vec<Srq<Sim>>,
    mrs: Vec<MemoryRegion<Sim>>,
    recv_posted: Vec<usize>,
    /// Packets and responses lost so far: kept below the retry count (7), so faults
    /// delay but never fail a WR.
    losses: u32,
    rq_cap: usize,
    sends: Vec<Vec<Completion>>,
    recvs: Vec<Vec<Completion>>,
    next_wr_id: u64,
    /// Per QP, the local ranges READs and atomics may still be writing: a WR that gathers
    /// from one of them is fenced, as an application must (else hardware may gather before
    /// the result lands). Cleared when the SQ has nothing outstanding.
    results: Vec<Vec<(usize, usize)>>,
    /// Fails the case if the model counted a driver bug (an unfenced gather included).
    _bugs: Vec<common::BugCheck>,
}

impl Rig {
    fn new(s: &Setup, reference: &mut Reference) -> Rig {
        let ctxs = nics(s.bf_size, s.defer);
        let pds: Vec<_> = ctxs.iter().map(|c| c.alloc_pd().unwrap()).collect();
        let nqps = 2 * s.pairs;
        let config = QpConfig {
            sq_wqebbs: 1 << s.log_sq,
            rq_wqes: 1 << s.log_rq,
            max_send_sge: MAX_SGE as u32,
            max_recv_sge: MAX_SGE as u32,
            max_inline: MAX_INLINE as u32,
            ..QpConfig::default()
        };
        let per_qp = config.sq_wqebbs + config.rq_wqes;
        let mut cqs = Vec::new();
        // (send CQ, receive CQ) of each QP.
        let mut cq_of = Vec::new();
        if s.shared_cq {
            for ctx in &ctxs {
                cqs.push(ctx.create_cq(per_qp * s.pairs as u32, 64).unwrap());
            }
            cq_of.extend((0..nqps).map(|q| (q % 2, q % 2)));
        } else {
            for q in 0..nqps {
                let ctx = &ctxs[q % 2];
                cqs.push(ctx.create_cq(config.sq_wqebbs, 64).unwrap());
                cqs.push(ctx.create_cq(config.rq_wqes, 128).unwrap());
                cq_of.push((2 * q, 2 * q + 1));
            }
        }
        let srqs: Vec<Srq<Sim>> = if s.srq {
            (0..nqps)
                .map(|q| {
                    pds[q % 2]
                        .create_srq(config.rq_wqes, MAX_SGE as u32)
                        .unwrap()
                })
                .collect()
        } else {
            Vec::new()
        };
        let mut qps: Vec<Qp<Sim>> = (0..nqps)
            .map(|q| {
                let (s_cq, r_cq) = cq_of[q];
                let (s_cq, r_cq) = (&cqs[s_cq], &cqs[r_cq]);
                match srqs.get(q) {
                    Some(srq) => pds[q % 2].create_qp_with_srq(s_cq, r_cq, srq, &config),
                    None => pds[q % 2].create_qp(s_cq, r_cq, &config),
                }
                .unwrap()
            })
            .collect();
        let options = ConnectOptions {
            path_mtu: s.path_mtu,
            ..ConnectOptions::default()
        };
        for q in 0..nqps {
            let peer = qps[q ^ 1].endpoint().unwrap();
            qps[q].connect(&peer, &options).unwrap();
        }
        let mut mrs = Vec::new();
        for (q, qp) in qps.iter().enumerate() {
            let mr = pds[q % 2].alloc_mr(MR_LEN, Access::ALL).unwrap();
            let init = bytes(q as u64 + 1, MR_LEN);
            mr.write(0, &init);
            mrs.push(mr);
            reference.qpns.push(qp.qpn());
            reference.qps.push(RefQp {
                mem: init,
                ..RefQp::default()
            });
        }
        let cq_side = if s.shared_cq {
            vec![0, 1]
        } else {
            (0..2 * nqps).map(|c| (c / 2) % 2).collect()
        };
        Rig {
            cqs,
            cq_side,
            qps,
            srqs,
            mrs,
            recv_posted: vec![0; nqps],
            losses: 0,
            rq_cap: config.rq_wqes as usize,
            sends: vec![Vec::new(); nqps],
            recvs: vec![Vec::new(); nqps],
            next_wr_id: 1,
            results: vec![Vec::new(); nqps],
            _bugs: ctxs
                .iter()
                .map(|c| common::BugCheck::on(c.backend().nic()))
                .collect(),
            ctxs,
        }
    }

    /// Turns a generated WR into a send op and its reference twin.
    fn build(&mut self, q: usize, wr: &Wr, force_signal: bool) -> RefOp {
        let p = q ^ 1;
        let wr_id = self.next_wr_id;
        self.next_wr_id += 1;
        let remote_mr = &self.mrs[p];
        let mut len = wr.len as usize;
        let atomic_len = match wr.kind {
            6 | 7 | 9 | 11 => Some(8),
            8 | 10 => Some(4),
            _ => None,
        };
        let inline = wr.inline && wr.kind <= 4;
        if inline {
            len = len.min(MAX_INLINE);
        }
        let remote = match atomic_len {
            Some(n) => (wr.remote as usize % (T_LEN / n)) * n,
            None if wr.kind >= 3 => wr.remote as usize % (T_LEN - len + 1),
            None => 0,
        };
        let r = remote_mr.remote(T + remote);
        let (x, y) = (wr.x, wr.y);
        let op = match wr.kind {
            0 => SendOp::Send,
            1 => SendOp::SendImm(x as u32),
            // SEND_INV of a key this crate registered is always refused (none may be
            // invalidated remotely; tests/sim_errors.rs): a plain SEND here.
            2 => SendOp::Send,
            3 => SendOp::Write(r),
            4 => SendOp::WriteImm(r, y as u32),
            5 => SendOp::Read(r),
            6 => SendOp::CompareSwap {
                remote: r,
                // Half the time compare with the current value's low bits (a hit is likely
                // only when the generator picked it; both outcomes get exercised).
                compare: if y & 1 == 0 { x } else { 0 },
                swap: y,
            },
            7 => SendOp::FetchAdd { remote: r, add: x },
            8 => SendOp::MaskedCompareSwap32 {
                remote: r,
                args: MaskedCs32Args {
                    compare: x as u32,
                    compare_mask: (y >> 32) as u32 & (x >> 32) as u32,
                    swap: y as u32,
                    swap_mask: (x >> 40) as u32,
                },
            },
            9 => SendOp::MaskedCompareSwap64 {
                remote: r,
                args: MaskedCs64Args {
                    compare: x,
                    compare_mask: x & y & (y >> 7),
                    swap: y,
                    swap_mask: x.rotate_left(17),
                },
            },
            10 => SendOp::MaskedFetchAdd32 {
                remote: r,
                add: x as u32,
                field_boundary: y as u32,
            },
            11 => SendOp::MaskedFetchAdd64 {
                remote: r,
                add: x,
                field_boundary: y,
            },
            _ => SendOp::Nop,
        };
        let source = if let Some(n) = atomic_len {
            let off = L + (wr.local as usize % (L_LEN / 8)) * 8;
            Source::Gather(vec![(off, n)])
        } else if matches!(op, SendOp::Nop) {
            Source::Gather(Vec::new())
        } else if inline {
            Source::Inline(bytes(x ^ wr_id, len))
        } else {
            Source::Gather(gather(wr, len, 1024))
        };
        RefOp {
            wr_id,
            op,
            source,
            remote,
            signaled: wr.signaled || force_signal,
            solicited: wr.solicited,
        }
    }

    /// Pushes `wrs` (up to the first that does not fit) and rings once; returns how many
    /// were posted.
    fn post(&mut self, q: usize, mode: u8, wrs: &[Wr], reference: &mut Reference) -> usize {
        self.qps[q].sq().set_mode(doorbell_mode(mode));
        if self.qps[q].sq().outstanding_wqebbs() == 0 {
            self.results[q].clear();
        }
        let mut posted = 0;
        for wr in wrs {
            let sq = self.qps[q].sq();
            // Keep the ring draining: a WR that may leave less than half the ring free is
            // signaled (an application must signal at least once per ring-full). 9 WQEBBs
            // is the largest WQE built here (a 512-byte inline WRITE).
            let force = sq.free_wqebbs() <= sq.wqebbs() / 2 + 9;
            let op = self.build(q, wr, force);
            let mut sges = Vec::new();
            let data = data_of(&op.source, &self.mrs[q], &mut sges);
            let writes_result = matches!(
                op.op,
                SendOp::Read(_)
                    | SendOp::CompareSwap { .. }
                    | SendOp::FetchAdd { .. }
                    | SendOp::MaskedCompareSwap32 { .. }
                    | SendOp::MaskedCompareSwap64 { .. }
                    | SendOp::MaskedFetchAdd32 { .. }
                    | SendOp::MaskedFetchAdd64 { .. }
            );
            let list = match &op.source {
                Source::Gather(list) => list.as_slice(),
                Source::Inline(_) => &[],
            };
            let hazard = !writes_result
                && list.iter().any(|&(o, l)| {
                    self.results[q]
                        .iter()
                        .any(|&(ro, rl)| o < ro + rl && ro < o + l)
                });
            let flags = SendFlags::new(op.signaled, wr.fence || hazard, op.solicited);
            match self.qps[q].sq().push(op.wr_id, op.op, data, flags) {
                Ok(()) => {
                    if writes_result {
                        self.results[q].extend_from_slice(list);
                    }
                    reference.qps[q].ops.push_back(op);
                    posted += 1;
                }
                Err(PostError::QueueFull { needed, free }) => {
                    assert!(needed > free);
                    break;
                }
                Err(e) => panic!("post of {op:?} refused: {e}"),
            }
        }
        self.qps[q].sq().ring_doorbell();
        posted
    }

    /// Posts up to `count` receives at `q` (one by one, or with one `post_many` when the
    /// top bit of `split_bits` is set); returns how many were posted.
    fn recv(
        &mut self,
        q: usize,
        count: usize,
        split_bits: u32,
        reference: &mut Reference,
    ) -> usize {
        let room = self.qps[q].rq().map_or(count, |rq| rq.free() as usize);
        let mut wrs = Vec::new();
        for k in 0..count.min(room) {
            let area = R + ((self.recv_posted[q] + k) % self.rq_cap) * RECV_CAP;
            let pieces = 1 + (split_bits as usize >> (2 * k)) % MAX_SGE;
            let lens = split(
                RECV_CAP,
                pieces,
                split_bits.rotate_left(k as u32 * 5) as u64 * 0x1_0001,
            );
            let list = back_to_back(area, lens);
            let sges = entries(&self.mrs[q], &list);
            wrs.push((self.next_wr_id, sges, list));
            self.next_wr_id += 1;
        }
        let posted = match self.qps[q].rq() {
            Some(rq) if split_bits >> 31 == 1 => {
                let n = rq.post_many(wrs.iter().map(|(id, sges, _)| (*id, sges.as_slice())));
                n.unwrap_or_else(|(_, e)| panic!("receives refused: {e}"))
            }
            Some(rq) => {
                for (id, sges, _) in &wrs {
                    rq.post(*id, sges).unwrap();
                }
                wrs.len()
            }
            // An SRQ slot is reused only once its completion was polled: stop at the first
            // one still in use.
            None => wrs
                .iter()
                .take_while(|(id, sges, _)| match self.srqs[q].post(*id, sges) {
                    Ok(()) => true,
                    Err(PostError::QueueFull { .. }) => false,
                    Err(e) => panic!("receive refused: {e}"),
                })
                .count(),
        };
        for (id, _, list) in wrs.into_iter().take(posted) {
            reference.qps[q].recvs.push_back((id, list));
        }
        self.recv_posted[q] += posted;
        posted
    }

    /// Injects a fault on NIC `side`, for one of its QPs (`qp` picks it; 4 means all):
    /// lost request packets (from the next one or after a few), lost responses, forced RNR
    /// NAKs, dropped BlueFlame data, CQEs held back. None of them may change the outcome.
    fn fault(&mut self, side: usize, kind: u8, count: u32, qp: usize) {
        let qps: Vec<u32> = (side..self.qps.len())
            .step_by(2)
            .map(|q| self.qps[q].qpn())
            .collect();
        let qpn = qps.get(qp).copied();
        let lossy = matches!(kind, 0..=2);
        if lossy && self.losses + count > 6 {
            return;
        }
        self.losses += if lossy { count } else { 0 };
        let fault = match kind {
            0 => Fault::LosePackets { qpn, count },
            1 => Fault::LosePacketsAfter {
                qpn,
                skip: count,
                count,
            },
            2 => Fault::LoseResponses { qpn, count },
            3 => Fault::Rnr { qpn, count },
            4 => Fault::DropBlueFlame(count != 2),
            _ => Fault::DelayCqes(count != 2),
        };
        self.ctxs[side].backend().nic().inject(fault);
    }

    fn poll(&mut self, cq: usize, max: usize) {
        let mut out = [Completion::default(); 16];
        let n = self.cqs[cq].poll(&mut out[..max.min(16)]);
        for c in &out[..n] {
            assert_eq!(c.status, Status::Success, "unexpected completion {c:?}");
            let side = self.cq_side[cq];
            let q = (0..self.qps.len())
                .position(|q| q % 2 == side && self.qps[q].qpn() == c.qpn)
                .expect("completion for a QP of this NIC");
            // The reference has no clock: timestamps are pinned by tests/timestamps.rs.
            let c = c.with_timestamp(0);
            match c.opcode {
                // The source QP, SLID and their flags are defined for UD only: not compared
                // on these RC QPs.
                WcOpcode::Recv | WcOpcode::RecvRdmaWithImm => {
                    // CQE version 0: `srqn_uidx` is the SRQ's number, or 0 on an RQ.
                    let srqn = self.srqs.get(q).map_or(0, Srq::srqn);
                    assert_eq!(c.user_index(), srqn, "srqn_uidx of {c:?}");
                    self.recvs[q].push(without_sender(c.with_user_index(0)))
                }
                _ => self.sends[q].push(c),
            }
        }
    }

    fn poll_all(&mut self) {
        for cq in 0..self.cqs.len() {
            self.poll(cq, 16);
        }
    }

    fn progress(&self) {
        for ctx in &self.ctxs {
            ctx.backend().nic().progress();
        }
    }
}

fn run_case(s: Setup, actions: Vec<Action>) {
    let mut reference = Reference {
        qps: Vec::new(),
        qpns: Vec::new(),
    };
    let mut rig = Rig::new(&s, &mut reference);
    let nqps = rig.qps.len();
    for a in &actions {
        match a {
            Action::Post { qp, mode, wrs } => {
                rig.post(qp % nqps, *mode, wrs, &mut reference);
            }
            Action::Recv { qp, count, split } => {
                rig.recv(qp % nqps, *count as usize, *split, &mut reference);
            }
            Action::Poll { cq, max } => {
                let n = rig.cqs.len();
                rig.poll(cq % n, *max as usize)
            }
            Action::Progress { side } => {
                rig.ctxs[*side].backend().nic().progress();
            }
            Action::Fault {
                side,
                kind,
                count,
                qp,
            } => rig.fault(*side, *kind, u32::from(*count), *qp),
        }
    }
    // End: a signaled NOP on every QP retires its unsignaled tail; every message still
    // waiting gets its receive.
    let nop = Wr {
        kind: 12,
        len: 0,
        pieces: 1,
        inline: false,
        local: 0,
        remote: 0,
        signaled: true,
        solicited: false,
        fence: false,
        x: 0,
        y: 0,
    };
    for ctx in &rig.ctxs {
        ctx.backend().nic().inject(Fault::Clear);
        ctx.backend().nic().inject(Fault::DeferExecution(s.defer));
    }
    let mut nop_posted = vec![false; nqps];
    for _ in 0..10_000 {
        for (q, nop_posted) in nop_posted.iter_mut().enumerate() {
            let wanted = reference.qps[q ^ 1]
                .ops
                .iter()
                .filter(|o| needs_receive(&o.op))
                .count()
                .saturating_sub(reference.qps[q].recvs.len());
            if wanted > 0 {
                rig.recv(q, wanted, 0x5a5a_5a5a, &mut reference);
            }
            reference.run();
            if !*nop_posted {
                *nop_posted = rig.post(q, 0, std::slice::from_ref(&nop), &mut reference) == 1;
            }
        }
        reference.run();
        rig.progress();
        rig.poll_all();
        let done = (0..nqps).all(|q| {
            nop_posted[q]
                && reference.qps[q].ops.is_empty()
                && rig.sends[q].len() >= reference.qps[q].sends.len()
                && rig.recvs[q].len() >= reference.qps[q].recv_done.len()
        });
        if done {
            break;
        }
    }
    for _ in 0..4 {
        rig.progress();
        rig.poll_all();
    }
    for q in 0..nqps {
        assert_eq!(
            rig.sends[q], reference.qps[q].sends,
            "send completions of QP {q}"
        );
        assert_eq!(
            rig.recvs[q], reference.qps[q].recv_done,
            "receive completions of QP {q}"
        );
        let mut mem = vec![0u8; MR_LEN];
        rig.mrs[q].read(0, &mut mem);
        if let Some(i) = (0..MR_LEN).find(|&i| mem[i] != reference.qps[q].mem[i]) {
            panic!(
                "memory of QP {q} differs first at byte {i}: driver {:#04x}, reference {:#04x}",
                mem[i], reference.qps[q].mem[i]
            );
        }
        assert_eq!(rig.qps[q].sq().outstanding_wqebbs(), 0, "QP {q} SQ retired");
    }
}

proptest! {
    #![proptest_config(common::proptest_config(128))]
    #[test]
    fn random_operations_match_the_reference(
        s in setup(),
        actions in prop::collection::vec(action(), 1..48),
    ) {
        run_case(s, actions);
    }
}

// UC and UD: random SEND / SEND_IMM (UD; sizes up to the 4096-byte MTU, the GRH area
// checked) and SEND / SEND_IMM / WRITE / WRITE_IMM (UC; up to 4096 bytes, several packets
// at a smaller path MTU) in both directions of one pair, against the same kind of
// reference. These transports drop a message that finds no receive, so the rig posts the
// receives a batch needs before the batch: then the k-th message needing a receive takes
// the k-th receive, whatever the timing, and nothing may be dropped.

/// Receive areas of the UC/UD cases: the GRH area and one MTU each.
const DG_RECV_CAP: usize = UD_GRH_BYTES as usize + 4096;
const DG_RQ: usize = 8;
const DG_R: usize = T + T_LEN;
const DG_MR_LEN: usize = DG_R + DG_RQ * DG_RECV_CAP;
const DG_MAX_INLINE: usize = 188;
const GRH: usize = UD_GRH_BYTES as usize;
const QKEY: u32 = 0x1ee7_a330;

#[derive(Clone, Debug)]
struct DgSetup {
    ud: bool,
    /// Receives from an SRQ of each QP's own (made for UD on UD).
    srq: bool,
    /// UD: address handles with a global route (the NIC writes the GRH), flow label.
    grh: Option<u32>,
    log_sq: u8,
    bf_size: u32,
    path_mtu: u32,
    defer: bool,
}

#[derive(Clone, Debug)]
enum DgAction {
    Post { from: usize, mode: u8, wrs: Vec<Wr> },
    Poll { max: u8 },
    Progress { side: usize },
}

fn dg_setup() -> impl Strategy<Value = DgSetup> {
    (
        any::<bool>(),
        any::<bool>(),
        prop::option::of(0..=0xf_ffffu32),
        4..=7u8,
        prop_oneof![Just(0u32), Just(256)],
        prop_oneof![Just(256u32), Just(1024), Just(4096)],
        any::<bool>(),
    )
        .prop_map(|(ud, srq, grh, log_sq, bf_size, path_mtu, defer)| DgSetup {
            ud,
            srq,
            grh,
            log_sq,
            bf_size,
            path_mtu,
            defer,
        })
}

fn dg_action() -> impl Strategy<Value = DgAction> {
    prop_oneof![
        4 => (0..2usize, 0..4u8, prop::collection::vec(wr(), 1..6))
            .prop_map(|(from, mode, wrs)| DgAction::Post { from, mode, wrs }),
        2 => (1..=16u8).prop_map(|max| DgAction::Poll { max }),
        1 => (0..2usize).prop_map(|side| DgAction::Progress { side }),
    ]
}

/// The IBA GRH (IBA 8.3.1) of a UD message of `len` bytes: IPVer 6, TClass 0, FlowLabel,
/// PayLen = BTH 12 + DETH 8 + immediate + payload padded to 4 + ICRC 4, NxtHdr 0x1b
/// (IBA transport), HopLmt, SGID, DGID.
fn iba_grh(flow_label: u32, len: usize, imm: bool, sgid: &[u8; 16], dgid: &[u8; 16]) -> Vec<u8> {
    let paylen = 12 + 8 + 4 * usize::from(imm) + len.next_multiple_of(4) + 4;
    let mut g = (6u32 << 28 | flow_label).to_be_bytes().to_vec();
    g.extend_from_slice(&(paylen as u16).to_be_bytes());
    g.extend_from_slice(&[0x1b, 64]);
    g.extend_from_slice(sgid);
    g.extend_from_slice(dgid);
    g
}

struct DgRig {
    ud: bool,
    ctxs: Vec<Context<Sim>>,
    /// One CQ per NIC, for its QP's sends and receives.
    cqs: Vec<Cq<Sim>>,
    qps: Vec<Qp<Sim>>,
    srqs: Vec<Srq<Sim>>,
    /// UD: the handle from QP q to QP q ^ 1.
    ahs: Vec<AddressHandle<Sim>>,
    mrs: Vec<MemoryRegion<Sim>>,
    /// Per QP: receives posted, and those polled.
    recv_posted: Vec<usize>,
    recv_polled: Vec<usize>,
    sends: Vec<Vec<Completion>>,
    recvs: Vec<Vec<Completion>>,
    next_wr_id: u64,
    _bugs: Vec<common::BugCheck>,
}

/// The reference of a UC/UD case: memory, posted receives and expected completions per QP;
/// a message executes when posted (its receive is already there).
struct DgReference {
    qps: Vec<RefQp>,
    qpns: Vec<u32>,
    lids: Vec<u16>,
    gids: Vec<[u8; 16]>,
    grh: Option<u32>,
    ud: bool,
    srqns: Vec<u32>,
}

impl DgReference {
    fn execute(&mut self, q: usize, op: &RefOp) {
        let p = q ^ 1;
        let data = match &op.source {
            Source::Inline(b) => b.clone(),
            Source::Gather(list) => list
                .iter()
                .flat_map(|&(o, l)| self.qps[q].mem[o..o + l].to_vec())
                .collect(),
        };
        let (opcode, imm, to_recv) = match op.op {
            SendOp::Send => (WcOpcode::Recv, None, true),
            SendOp::SendImm(i) => (WcOpcode::Recv, Some(i), true),
            SendOp::Write(_) => (WcOpcode::RdmaWrite, None, false),
            SendOp::WriteImm(_, i) => (WcOpcode::RecvRdmaWithImm, Some(i), false),
            _ => unreachable!("not a UC/UD operation: {:?}", op.op),
        };
        if matches!(op.op, SendOp::Write(_) | SendOp::WriteImm(..)) {
            self.qps[p].mem[T + op.remote..T + op.remote + data.len()].copy_from_slice(&data);
        }
        if op.signaled {
            self.qps[q].sends.push(
                Completion::default()
                    .with_wr_id(op.wr_id)
                    .with_qpn(self.qpns[q])
                    .with_opcode(if to_recv {
                        WcOpcode::Send
                    } else {
                        WcOpcode::RdmaWrite
                    }),
            );
        }
        if opcode == WcOpcode::RdmaWrite {
            return;
        }
        let (wr_id, list) = self.qps[p].recvs.pop_front().expect("a receive posted");
        let mut byte_len = data.len();
        if to_recv {
            let mut landed = data;
            if self.ud {
                // The GRH area: the IBA GRH with a global route, else left as it was.
                let (o, _) = list[0];
                let area = match self.grh {
                    Some(fl) => iba_grh(fl, byte_len, imm.is_some(), &self.gids[q], &self.gids[p]),
                    None => self.qps[p].mem[o..o + GRH].to_vec(),
                };
                landed = [area, landed].concat();
                byte_len += GRH;
            }
            let mut at = 0;
            for &(o, l) in &list {
                let n = l.min(landed.len() - at);
                self.qps[p].mem[o..o + n].copy_from_slice(&landed[at..at + n]);
                at += n;
            }
            assert_eq!(at, landed.len(), "reference: receive too small");
        }
        // The sender and the GRH flag: UD only (not compared on UC).
        self.qps[p].recv_done.push(
            Completion::default()
                .with_wr_id(wr_id)
                .with_qpn(self.qpns[p])
                .with_opcode(opcode)
                .with_status(Status::Success)
                .with_byte_len(byte_len as u32)
                .with_imm(imm)
                .with_solicited(op.solicited)
                .with_src_qp(if self.ud { self.qpns[q] } else { 0 })
                .with_slid(if self.ud { self.lids[q] } else { 0 })
                .with_ud_flags(if self.ud && self.grh.is_some() {
                    0x10
                } else {
                    0
                })
                .with_user_index(self.srqns[p]),
        );
    }
}

impl DgRig {
    fn new(s: &DgSetup, reference: &mut DgReference) -> DgRig {
        let ctxs = nics(s.bf_size, s.defer);
        let pds: Vec<_> = ctxs.iter().map(|c| c.alloc_pd().unwrap()).collect();
        let config = QpConfig {
            transport: if s.ud { Transport::Ud } else { Transport::Uc },
            sq_wqebbs: 1 << s.log_sq,
            rq_wqes: DG_RQ as u32,
            max_send_sge: MAX_SGE as u32,
            max_recv_sge: MAX_SGE as u32,
            max_inline: DG_MAX_INLINE as u32,
            ..QpConfig::default()
        };
        let cqs: Vec<_> = ctxs
            .iter()
            .map(|c| c.create_cq(config.sq_wqebbs + DG_RQ as u32, 64).unwrap())
            .collect();
        let srqs: Vec<Srq<Sim>> = match (s.srq, s.ud) {
            (false, _) => Vec::new(),
            (true, ud) => pds
                .iter()
                .map(|pd| match ud {
                    true => pd.create_ud_srq(DG_RQ as u32, MAX_SGE as u32),
                    false => pd.create_srq(DG_RQ as u32, MAX_SGE as u32),
                })
                .collect::<Result<_, _>>()
                .unwrap(),
        };
        let mut qps: Vec<Qp<Sim>> = (0..2)
            .map(|q| match srqs.get(q) {
                Some(srq) => pds[q].create_qp_with_srq(&cqs[q], &cqs[q], srq, &config),
                None => pds[q].create_qp(&cqs[q], &cqs[q], &config),
            })
            .collect::<Result<_, _>>()
            .unwrap();
        let ports: Vec<_> = ctxs.iter().map(|c| c.port(1).unwrap()).collect();
        let mut ahs = Vec::new();
        for q in 0..2 {
            if s.ud {
                qps[q].activate_ud(1, QKEY).unwrap();
                let grh = s.grh.map(|flow_label| GlobalRoute {
                    dgid: ports[q ^ 1].gid,
                    flow_label,
                    sgid_index: 0,
                    hop_limit: 64,
                    traffic_class: 0,
                });
                let attr = AhAttr {
                    port: 1,
                    dlid: ports[q ^ 1].lid,
                    grh,
                    ..AhAttr::default()
                };
                ahs.push(pds[q].create_ah(&attr).unwrap());
            } else {
                let peer = qps[q ^ 1].endpoint().unwrap();
                let options = ConnectOptions {
                    path_mtu: s.path_mtu,
                    ..ConnectOptions::default()
                };
                qps[q].connect(&peer, &options).unwrap();
            }
        }
        let mut mrs = Vec::new();
        for (q, qp) in qps.iter().enumerate() {
            let mr = pds[q].alloc_mr(DG_MR_LEN, Access::ALL).unwrap();
            let init = bytes(q as u64 + 7, DG_MR_LEN);
            mr.write(0, &init);
            mrs.push(mr);
            reference.qpns.push(qp.qpn());
            reference.lids.push(ports[q].lid);
            reference.gids.push(ports[q].gid);
            reference.srqns.push(srqs.get(q).map_or(0, Srq::srqn));
            reference.qps.push(RefQp {
                mem: init,
                ..RefQp::default()
            });
        }
        DgRig {
            ud: s.ud,
            _bugs: ctxs
                .iter()
                .map(|c| common::BugCheck::on(c.backend().nic()))
                .collect(),
            ctxs,
            cqs,
            qps,
            srqs,
            ahs,
            mrs,
            recv_posted: vec![0; 2],
            recv_polled: vec![0; 2],
            sends: vec![Vec::new(); 2],
            recvs: vec![Vec::new(); 2],
            next_wr_id: 1,
        }
    }

    /// A generated WR as a UC or UD operation and its reference twin.
    fn build(&mut self, q: usize, wr: &Wr, force_signal: bool) -> RefOp {
        let wr_id = self.next_wr_id;
        self.next_wr_id += 1;
        let inline = wr.inline;
        let mut len = (wr.len as usize * 4).min(4096);
        if inline {
            len = len.min(DG_MAX_INLINE);
        }
        let remote = wr.remote as usize % (T_LEN - len + 1);
        let r = self.mrs[q ^ 1].remote(T + remote);
        let kinds = if self.ud { 2 } else { 4 };
        let op = match wr.kind % kinds {
            0 => SendOp::Send,
            1 => SendOp::SendImm(wr.x as u32),
            2 => SendOp::Write(r),
            _ => SendOp::WriteImm(r, wr.y as u32),
        };
        let source = if inline {
            Source::Inline(bytes(wr.x ^ wr_id, len))
        } else {
            Source::Gather(gather(wr, len, 4096))
        };
        RefOp {
            wr_id,
            op,
            source,
            remote,
            signaled: wr.signaled || force_signal,
            solicited: wr.solicited,
        }
    }

    /// Posts `n` receives at QP `q`, each over its slot's area split in up to `MAX_SGE`
    /// entries (on UD the first holds the GRH area), waiting for room first.
    fn recv(&mut self, q: usize, n: usize, bits: u64, reference: &mut DgReference) {
        for k in 0..n {
            while self.recv_posted[q] - self.recv_polled[q] == DG_RQ {
                self.step();
            }
            let area = DG_R + (self.recv_posted[q] % DG_RQ) * DG_RECV_CAP;
            let first = if self.ud { GRH } else { 0 };
            let pieces = 1 + (bits >> (2 * k)) as usize % MAX_SGE;
            let mut lens = split(DG_RECV_CAP - first, pieces, bits.rotate_left(7 * k as u32));
            lens[0] += first;
            let list = back_to_back(area, lens);
            let sges = entries(&self.mrs[q], &list);
            let id = self.next_wr_id;
            self.next_wr_id += 1;
            match self.srqs.get_mut(q) {
                Some(srq) => srq.post(id, &sges).unwrap(),
                None => self.qps[q].rq().unwrap().post(id, &sges).unwrap(),
            }
            self.recv_posted[q] += 1;
            reference.qps[q].recvs.push_back((id, list));
        }
    }

    /// Posts `wrs` from QP `q` with doorbell mode `mode` after the receives they need,
    /// ringing and draining whenever the send queue is full.
    fn post(&mut self, q: usize, mode: u8, wrs: &[Wr], reference: &mut DgReference) {
        self.qps[q].sq().set_mode(doorbell_mode(mode));
        let kinds = if self.ud { 2 } else { 4 };
        let needs = wrs.iter().filter(|w| w.kind % kinds != 2).count();
        self.recv(q ^ 1, needs, wrs[0].x ^ wrs[0].y, reference);
        for wr in wrs {
            let sq = self.qps[q].sq();
            // Keep the ring draining: signal a WR that may leave less than half free.
            let force = sq.free_wqebbs() <= sq.wqebbs() / 2 + 4;
            let op = self.build(q, wr, force);
            let mut sges = Vec::new();
            let data = data_of(&op.source, &self.mrs[q], &mut sges);
            let flags = SendFlags::new(op.signaled, false, op.solicited);
            loop {
                let sq = self.qps[q].sq();
                let pushed = match self.ahs.get(q) {
                    Some(ah) => {
                        let wr = SendWr {
                            wr_id: op.wr_id,
                            op: op.op,
                            data,
                            flags,
                        };
                        sq.push_ud(&wr, &ah.dest(reference.qpns[q ^ 1], QKEY))
                    }
                    None => sq.push(op.wr_id, op.op, data, flags),
                };
                match pushed {
                    Ok(()) => break,
                    Err(PostError::QueueFull { .. }) => {
                        self.qps[q].sq().ring_doorbell();
                        self.step();
                    }
                    Err(e) => panic!("post of {op:?} refused: {e}"),
                }
            }
            reference.execute(q, &op);
        }
        self.qps[q].sq().ring_doorbell();
    }

    fn poll(&mut self, max: usize) {
        for side in 0..2 {
            let mut out = [Completion::default(); 16];
            let n = self.cqs[side].poll(&mut out[..max.min(16)]);
            for c in &out[..n] {
                assert_eq!(c.status, Status::Success, "unexpected completion {c:?}");
                assert_eq!(c.qpn, self.qps[side].qpn());
                let c = c.with_timestamp(0);
                match c.opcode {
                    WcOpcode::Recv | WcOpcode::RecvRdmaWithImm => {
                        self.recv_polled[side] += 1;
                        self.recvs[side].push(match self.ud {
                            true => c,
                            false => without_sender(c),
                        });
                    }
                    _ => self.sends[side].push(c),
                }
            }
        }
    }

    fn step(&mut self) {
        for ctx in &self.ctxs {
            ctx.backend().nic().progress();
        }
        self.poll(16);
    }
}

fn run_dg_case(s: DgSetup, actions: Vec<DgAction>) {
    let mut reference = DgReference {
        qps: Vec::new(),
        qpns: Vec::new(),
        lids: Vec::new(),
        gids: Vec::new(),
        grh: s.grh.filter(|_| s.ud),
        ud: s.ud,
        srqns: Vec::new(),
    };
    let mut rig = DgRig::new(&s, &mut reference);
    for a in &actions {
        match a {
            DgAction::Post { from, mode, wrs } => rig.post(*from, *mode, wrs, &mut reference),
            DgAction::Poll { max } => rig.poll(*max as usize),
            DgAction::Progress { side } => {
                rig.ctxs[*side].backend().nic().progress();
            }
        }
    }
    for _ in 0..10_000 {
        rig.step();
        if (0..2).all(|q| {
            rig.sends[q].len() >= reference.qps[q].sends.len()
                && rig.recvs[q].len() >= reference.qps[q].recv_done.len()
        }) {
            break;
        }
    }
    rig.step();
    for q in 0..2 {
        assert_eq!(
            rig.sends[q], reference.qps[q].sends,
            "send completions of QP {q}"
        );
        assert_eq!(
            rig.recvs[q], reference.qps[q].recv_done,
            "receive completions of QP {q}"
        );
        for r in &rig.recvs[q] {
            assert_eq!(r.grh_present(), reference.grh.is_some());
        }
        let mut mem = vec![0u8; DG_MR_LEN];
        rig.mrs[q].read(0, &mut mem);
        if let Some(i) = (0..DG_MR_LEN).find(|&i| mem[i] != reference.qps[q].mem[i]) {
            panic!(
                "memory of QP {q} differs first at byte {i}: driver {:#04x}, reference {:#04x}",
                mem[i], reference.qps[q].mem[i]
            );
        }
        let stats = rig.ctxs[q].backend().nic().stats();
        assert_eq!(
            (
                stats.packets_lost,
                stats.ud_no_receive,
                stats.uc_no_receive,
                stats.uc_incomplete
            ),
            (0, 0, 0, 0),
            "nothing dropped at NIC {q}"
        );
    }
}

proptest! {
    #![proptest_config(common::proptest_config(32))]
    #[test]
    fn random_uc_and_ud_operations_match_the_reference(
        s in dg_setup(),
        actions in prop::collection::vec(dg_action(), 1..24),
    ) {
        run_dg_case(s, actions);
    }
}
