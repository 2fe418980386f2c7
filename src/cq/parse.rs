//! The parse of one CQE into a [`Completion`](super::Completion): the requester's fast
//! path, the responder's and every other entry out of line, the QP lookup behind them.

use core::sync::atomic::Ordering;

use crate::mem::MAX_RECV_SGE;
use crate::prm::{Cqe64, CqeFormat, CqeOpcode, OpOwn, Opcode, CQE_FLOW_TAG_MASK};
use crate::ring::CqeEntry;
use crate::sq::Sge;

use super::completion::{DATA_IN_CQE, ETH, HAS_IMM, HAS_INV, SOLICITED};
use super::*;

/// A successful requester CQE of the hot QP, its WQE retired ([`QpTable::retire_req`]):
/// what its [`Completion`] is built of, each field read from the CQE when asked for.
#[derive(Clone, Copy)]
pub(super) struct HotReq<'e> {
    pub(super) entry: CqeEntry<'e>,
    /// The CQE's `sop_drop_qpn` as it lies in the CQE, read as a native word (the opcode
    /// its first byte in memory, the QPN the rest: [`qpn_key`]).
    pub(super) sop_wire: u32,
    pub(super) wr_id: u64,
    /// The `byte_len` kept at post time (see `SqSlot::byte_len`).
    pub(super) kept: u32,
}

impl HotReq<'_> {
    /// The send opcode: the first byte of `sop_drop_qpn` as it lies in the CQE.
    #[inline(always)]
    fn send_opcode(&self) -> u8 {
        self.sop_wire.to_ne_bytes()[0]
    }

    /// The QPN, from the key the hot-QP compare computed ([`qpn_key`]).
    #[inline(always)]
    pub(super) fn qpn(&self) -> u32 {
        swap24(qpn_key(self.sop_wire))
    }

    #[inline(always)]
    pub(super) fn opcode(&self) -> WcOpcode {
        WcOpcode::from_send_opcode(self.send_opcode())
    }

    /// `byte_cnt` means something for READ only (rdma-core's `handle_good_req`); every
    /// other length (an atomic's operand size, else 0) was kept at post time.
    #[inline(always)]
    pub(super) fn byte_len(&self) -> u32 {
        if self.send_opcode() == Opcode::RdmaRead as u8 {
            self.entry.read().byte_cnt.get()
        } else {
            self.kept
        }
    }

    /// The whole completion.
    #[inline(always)]
    pub(super) fn completion(&self) -> Completion {
        Completion {
            wr_id: self.wr_id,
            qpn: self.qpn(),
            opcode: self.opcode(),
            byte_len: self.byte_len(),
            uidx_wire: uidx_wire(self.entry.read().srqn_uidx),
            ..Completion::default()
        }
    }
}

impl QpTable {
    /// The entry of QP `qpn`, from the current list of attached QPs.
    #[inline(always)]
    fn lookup(&mut self, qpn: u32) -> Option<&QpEntry> {
        self.lookup_or(qpn, None)
    }

    /// The entry of QP `qpn`, or else (a receive of an XRC target, which no CQ serves)
    /// the XRC SRQ whose completions carry `srqn_uidx` ([`xrc_srq_key`]).
    #[inline(always)]
    fn lookup_or(&mut self, qpn: u32, srqn_uidx: Option<Be32>) -> Option<&QpEntry> {
        let generation = self.attachments.generation.load(Ordering::Acquire);
        if generation != self.seen {
            self.refresh(generation);
        }
        if self.qps.get(self.last).is_some_and(|e| e.qpn == qpn) {
            return self.qps.get(self.last);
        }
        let i = match self.qps.iter().position(|e| e.qpn == qpn) {
            Some(i) => i,
            None => {
                let key = xrc_srq_key(srqn_uidx?.get());
                self.qps.iter().position(|e| e.qpn == key)?
            }
        };
        self.last = i;
        self.qps.get(i)
    }

    /// The entry a receive CQE naming `qpn` is for: the raw packet QP's when this CQ serves
    /// one's receive queue (its CQEs carry the flow tag there), else QP `qpn`'s or the XRC
    /// SRQ's that `srqn_uidx` names ([`QpTable::lookup_or`]).
    fn lookup_recv(&mut self, qpn: u32, srqn_uidx: Be32) -> Option<&QpEntry> {
        let generation = self.attachments.generation.load(Ordering::Acquire);
        if generation != self.seen {
            self.refresh(generation);
        }
        match self.eth_rq {
            Some(i) => self.qps.get(i),
            None => self.lookup_or(qpn, Some(srqn_uidx)),
        }
    }

    #[cold]
    fn refresh(&mut self, generation: u64) {
        let entries = self
            .attachments
            .entries
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        self.qps.clone_from(&entries);
        self.eth_rq = self.qps.iter().position(|e| e.eth_rq);
        self.seen = generation;
        self.last = 0;
        self.hot_qpn = NO_QPN;
    }

    /// Makes QP `qpn` the hot one; false if this CQ does not serve it (a QP being
    /// detached included).
    #[inline(always)]
    fn make_hot(&mut self, qpn: u32) -> bool {
        let Some(sq) = self
            .lookup(qpn)
            .map(|qp| qp.sq.clone())
            .filter(|sq| !sq.is_gone())
        else {
            return false;
        };
        self.hot_qpn = qpn;
        self.hot_sq = sq;
        true
    }

    /// A requester (REQ) CQE at the consumer index, written straight into the caller's
    /// slot (no temporary to copy). Only a CQE of the hot QP naming an outstanding WQE is
    /// parsed here; everything else goes out of line ([`QpTable::req_slow`]), so that no
    /// value of the common case lives across a call.
    #[inline(always)]
    pub(super) fn parse_req(&mut self, entry: CqeEntry<'_>, out: &mut Completion) {
        match self.retire_req(entry) {
            Some(req) => *out = req.completion(),
            None => *out = self.req_slow(entry),
        }
    }

    /// The common case of a requester CQE: of the hot QP, naming an outstanding WQE, which
    /// it retires; what a completion of it needs ([`HotReq`]). `None` for everything else
    /// (nothing retired: [`QpTable::req_slow`] parses it).
    #[inline(always)]
    pub(super) fn retire_req<'e>(&mut self, entry: CqeEntry<'e>) -> Option<HotReq<'e>> {
        // Each field is read where it is used (a read of the entry per field; the compiler
        // loads the one field): loads hoisted above the checks would hold registers
        // across them and spill.
        // The QPN compared in the CQE's byte order (no byte swap on the common path), with
        // the hot QP's key, which also says whether it is still attached.
        let sop_wire = u32::from_ne_bytes(entry.read().sop_drop_qpn.to_bytes());
        if qpn_key(sop_wire) != self.hot_sq.key() {
            return None;
        }
        // The CQE's last four bytes (counter, signature, `op_own`) as one word: the slot's
        // offset from one load (`SqShared::complete_tail`).
        let cqe = entry.read();
        let [counter_hi, counter_lo] = cqe.wqe_counter.to_bytes();
        let tail_word = u32::from_ne_bytes([counter_hi, counter_lo, cqe.signature, cqe.op_own]);
        let (wr_id, kept) = self.hot_sq.complete_tail(tail_word)?;
        Some(HotReq {
            entry,
            sop_wire,
            wr_id,
            kept,
        })
    }

    /// A requester CQE of another QP than the hot one, or naming no outstanding WQE.
    #[inline(never)]
    pub(super) fn req_slow(&mut self, entry: CqeEntry<'_>) -> Completion {
        let cqe = entry.read();
        let sop = cqe.sop_drop_qpn.get();
        let qpn = sop & 0xff_ffff;
        let opcode = WcOpcode::from_send_opcode((sop >> 24) as u8);
        if (qpn != self.hot_qpn || self.hot_sq.is_gone()) && !self.make_hot(qpn) {
            return unknown_qp(qpn, opcode);
        }
        let counter = cqe.wqe_counter.get();
        if self.hot_sq.is_outstanding(counter) {
            let mut out = Completion::default();
            self.parse_req(entry, &mut out);
            return out;
        }
        unknown_wqe(qpn, opcode, counter)
    }

    #[inline(never)]
    pub(super) fn parse_other(&mut self, entry: CqeEntry<'_>, op_own: u8, ci: u32) -> Completion {
        let bits = OpOwn::from_bits(op_own);
        if bits.format() == CqeFormat::Compressed {
            return self.parse_compressed(entry, op_own, ci);
        }
        match CqeOpcode::from_u8(bits.opcode()) {
            Some(CqeOpcode::Req) => {
                let mut out = Completion::default();
                self.parse_req(entry, &mut out);
                if self.timestamps && out.status.is_ok() {
                    out.timestamp = entry.read().timestamp.get();
                }
                out
            }
            Some(
                op @ (CqeOpcode::RespSend
                | CqeOpcode::RespSendImm
                | CqeOpcode::RespSendInv
                | CqeOpcode::RespWrImm),
            ) => {
                let cqe = entry.read();
                let qpn = cqe.sop_drop_qpn.get() & 0xff_ffff;
                let opcode = if op == CqeOpcode::RespWrImm {
                    WcOpcode::RecvRdmaWithImm
                } else {
                    WcOpcode::Recv
                };
                let Some(qp) = self.lookup_recv(qpn, cqe.srqn_uidx) else {
                    return unknown_qp(qpn, opcode);
                };
                if qp.eth_rq {
                    let (qpn, counter) = (qp.qpn, cqe.wqe_counter.get());
                    let Some(wr_id) = complete_recv(qp, counter) else {
                        return unknown_wqe(qpn, opcode, counter);
                    };
                    return self.eth_recv(&cqe, qpn, wr_id, bits.se());
                }
                let counter = cqe.wqe_counter.get();
                // The scatter list is read before the receive is retired (and its slot
                // reused).
                let scattered = match bits.format() {
                    CqeFormat::InlineScatter32 => Some((false, recorded_list(qp, counter))),
                    CqeFormat::InlineScatter64 => Some((true, recorded_list(qp, counter))),
                    _ => None,
                };
                let Some(wr_id) = complete_recv(qp, counter) else {
                    return unknown_wqe(qpn, opcode, counter);
                };
                let raw = cqe.imm_inval_pkey.get();
                let (extra, kind) = match op {
                    CqeOpcode::RespSend => (raw & 0xffff, 0),
                    CqeOpcode::RespSendInv => (raw, HAS_INV),
                    _ => (raw, HAS_IMM),
                };
                let out = Completion {
                    wr_id,
                    qpn,
                    opcode,
                    status: Status::Success,
                    byte_len: cqe.byte_cnt.get(),
                    uidx_wire: uidx_wire(cqe.srqn_uidx),
                    extra,
                    rqpn: cqe.flags_rqpn.get(),
                    slid: cqe.slid.get(),
                    timestamp: if self.timestamps {
                        cqe.timestamp.get()
                    } else {
                        0
                    },
                    flags: kind | if bits.se() { SOLICITED } else { 0 },
                    l4_l3: cqe.l4_l3_hdr_type,
                    vlan_info: cqe.vlan_info.get(),
                };
                match scattered {
                    Some((wide, (sges, n))) => self.put_scattered(entry, wide, &sges[..n], out),
                    None => out,
                }
            }
            Some(op @ (CqeOpcode::ReqErr | CqeOpcode::RespErr)) => {
                let err = entry.read_err();
                let word = err.s_wqe_opcode_qpn.get();
                let qpn = word & 0xff_ffff;
                let requester = op == CqeOpcode::ReqErr;
                let opcode = if requester {
                    WcOpcode::from_send_opcode((word >> 24) as u8)
                } else {
                    WcOpcode::Recv
                };
                let error = WcError {
                    syndrome: err.syndrome,
                    vendor_syndrome: err.vendor_err_synd,
                    wqe_counter: err.wqe_counter.get(),
                };
                let Some(qp) = self.lookup_or(qpn, (!requester).then_some(err.srqn)) else {
                    return unknown_qp(qpn, opcode);
                };
                let odp_fault =
                    !requester && error.is_odp_fault() && matches!(qp.recv, RecvShared::Srq(_));
                match () {
                    _ if requester && qp.streams => {}
                    // The QP goes on: the NIC only gave the SRQ WQE back.
                    _ if odp_fault => {}
                    _ if requester && qp.sqe => qp.sq.refuse(),
                    _ => {
                        qp.sq.refuse();
                        qp.errored.store(true, Ordering::Relaxed);
                    }
                }
                let wr_id = match &qp.recv {
                    _ if requester => qp.sq.complete(error.wqe_counter),
                    RecvShared::Srq(srq) if odp_fault => srq.complete_faulted(error.wqe_counter),
                    _ => complete_recv(qp, error.wqe_counter),
                };
                let Some(wr_id) = wr_id else {
                    return unknown_wqe(qpn, opcode, error.wqe_counter);
                };
                Completion {
                    wr_id,
                    qpn,
                    opcode,
                    status: Status::Error(error),
                    uidx_wire: uidx_wire(err.srqn),
                    ..Completion::default()
                }
            }
            _ => Completion {
                status: Status::UnknownOpcode(op_own),
                ..Completion::default()
            },
        }
    }
}

impl QpTable {
    /// The completion of a frame received by raw packet QP `qpn` into receive `wr_id`:
    /// the Ethernet fields kept where [`Completion::eth`] reads them.
    #[cold]
    fn eth_recv(&self, cqe: &Cqe64, qpn: u32, wr_id: u64, se: bool) -> Completion {
        let flow_tag = cqe.sop_drop_qpn.get() & CQE_FLOW_TAG_MASK;
        Completion {
            wr_id,
            qpn,
            opcode: WcOpcode::Recv,
            status: Status::Success,
            byte_len: cqe.byte_cnt.get(),
            uidx_wire: uidx_wire(cqe.srqn_uidx),
            extra: cqe.rss_hash_result.get(),
            rqpn: flow_tag | u32::from(cqe.rss_hash_type) << 24,
            slid: u16::from(cqe.hds_ip_ext),
            timestamp: if self.timestamps {
                cqe.timestamp.get()
            } else {
                0
            },
            flags: ETH | if se { SOLICITED } else { 0 },
            l4_l3: cqe.l4_l3_hdr_type,
            vlan_info: cqe.vlan_info.get(),
        }
    }

    /// Completion `out` of a receive whose data the CQE `entry` carries (`wide`: format 2),
    /// with the data copied into its scatter list `sges` as rdma-core's
    /// `mlx5_copy_to_recv_wqe` does, or [`Status::BadScatter`].
    #[cold]
    fn put_scattered(
        &self,
        entry: CqeEntry<'_>,
        wide: bool,
        sges: &[Sge],
        mut out: Completion,
    ) -> Completion {
        // Bytes 0..32 of the CQE (flags_rqpn, slid, the VLAN fields) are the data.
        (out.rqpn, out.slid) = (0, 0);
        (out.l4_l3, out.vlan_info) = (0, 0);
        let copied = self.scattered.as_ref().and_then(|to| {
            let data = to.0.scattered(entry, wide)?;
            let data = data.get(..out.byte_len as usize)?;
            to.1.scatter(data, sges).ok()
        });
        match copied {
            Some(()) => out.flags |= DATA_IN_CQE,
            None => out.status = Status::BadScatter,
        }
        out
    }

    /// A compressed entry at consumer index `ci`: expanded in place (see [`crate::cqz`]),
    /// then the first expanded CQE parsed; or reported.
    #[cold]
    fn parse_compressed(&mut self, entry: CqeEntry<'_>, op_own: u8, ci: u32) -> Completion {
        let Some(unzip) = self.unzip.as_mut() else {
            return Completion {
                status: Status::Compressed,
                ..Completion::default()
            };
        };
        match unzip.expand(ci, op_own) {
            (_, Ok(())) => {
                let op_own = entry.op_own();
                debug_assert_ne!(OpOwn::from_bits(op_own).format(), CqeFormat::Compressed);
                self.parse_other(entry, op_own, ci)
            }
            (qpn, Err(bad)) => Completion {
                qpn,
                status: Status::BadCompression(bad),
                ..Completion::default()
            },
        }
    }
}

/// The scatter list posted for receive `wqe_counter` of `qp`, as its queue recorded it.
#[cold]
pub(super) fn recorded_list(qp: &QpEntry, wqe_counter: u16) -> ([Sge; MAX_RECV_SGE], usize) {
    let mut sges = [Sge::default(); MAX_RECV_SGE];
    let n = match &qp.recv {
        RecvShared::Rq(rq) => rq.log.list(wqe_counter.into(), &mut sges),
        RecvShared::Srq(srq) => srq.log.list(wqe_counter.into(), &mut sges),
        RecvShared::None => 0,
    };
    (sges, n)
}

pub(super) fn complete_recv(qp: &QpEntry, wqe_counter: u16) -> Option<u64> {
    match &qp.recv {
        RecvShared::Rq(rq) => rq.complete(wqe_counter),
        RecvShared::Srq(srq) => srq.complete(wqe_counter),
        RecvShared::None => None,
    }
}

#[cold]
pub(super) fn unknown_wqe(qpn: u32, opcode: WcOpcode, wqe_counter: u16) -> Completion {
    Completion {
        qpn,
        opcode,
        status: Status::UnknownWqe(wqe_counter),
        ..Completion::default()
    }
}

#[cold]
pub(super) fn unknown_qp(qpn: u32, opcode: WcOpcode) -> Completion {
    Completion {
        qpn,
        opcode,
        status: Status::UnknownQp,
        ..Completion::default()
    }
}
