//! UC and UD: random SEND / SEND_IMM (UD; sizes up to the 4096-byte MTU, the GRH area
//! checked) and SEND / SEND_IMM / WRITE / WRITE_IMM (UC; up to 4096 bytes, several packets
//! at a smaller path MTU) in both directions of one pair, against the same kind of
//! reference. These transports drop a message that finds no receive, so the rig posts the
//! receives a batch needs before the batch: then the k-th message needing a receive takes
//! the k-th receive, whatever the timing, and nothing may be dropped.
//!
//! Split from `tests/prop_ops.rs` (RC), whose module docs describe the reference; the
//! pieces both use are `tests/common/prop.rs`. Cases: 32 by default, `PROPTEST_CASES=n` for
//! more.

mod common;

use common::prop::*;

use mlx5_direct::backend::sim::Sim;
use mlx5_direct::{
    Access, AddressHandle, AhAttr, Completion, ConnectOptions, Context, Cq, GlobalRoute,
    MemoryRegion, PostError, Qp, QpConfig, SendFlags, SendOp, SendWr, Srq, Status, Transport,
    WcOpcode, UD_GRH_BYTES,
};
use proptest::prelude::*;

/// Receive areas of the UC/UD cases: the GRH area and one MTU each.
const DG_RECV_CAP: usize = UD_GRH_BYTES + 4096;

const DG_RQ: usize = 8;

const DG_R: usize = T + T_LEN;

const DG_MR_LEN: usize = DG_R + DG_RQ * DG_RECV_CAP;

const DG_MAX_INLINE: usize = 188;

const GRH: usize = UD_GRH_BYTES;

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
