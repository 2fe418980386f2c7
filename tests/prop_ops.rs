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
//! A second property, in `tests/prop_datagram.rs`, runs UC and UD (one pair, both
//! directions): UD SEND / SEND_IMM of up to the MTU through address handles with or without
//! a global route (the GRH area left alone, or the IBA GRH written, `grh_present`,
//! `src_qp`, `slid` checked), UC SEND / SEND_IMM / WRITE / WRITE_IMM of up to 4096 bytes at
//! a random path MTU, receives from the RQ or an SRQ (made for UD on UD), 32 cases. These
//! transports drop a message that finds no receive, so each batch's receives are posted
//! before it and nothing may be dropped.
//!
//! Cases: 128 by default, `PROPTEST_CASES=n` for more; `PROPTEST_RNG_SEED=n` replays one
//! run. A failure is shrunk, printed as the minimal action list, and saved under
//! `tests/prop_ops.proptest-regressions`, which later runs replay first (see docs/testing.md).

mod common;

use common::prop::*;

use mlx5_direct::backend::sim::{Fault, Sim};
use mlx5_direct::sq::{MaskedCs32Args, MaskedCs64Args};
use mlx5_direct::{
    Access, Completion, ConnectOptions, Context, Cq, MemoryRegion, PostError, Qp, QpConfig,
    SendFlags, SendOp, Srq, Status, WcOpcode,
};
use proptest::prelude::*;

/// Receive buffers: one area of `RECV_CAP` bytes per receive slot.
const R: usize = 16384;

const RECV_CAP: usize = 1024;

const MAX_RQ: usize = 16;

const MR_LEN: usize = R + MAX_RQ * RECV_CAP;

const MAX_INLINE: usize = 512;

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
