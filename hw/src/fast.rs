//! The requester's fast path for its most common WQE: one small inline RDMA WRITE on an RC
//! QP that the responder accepts, executed without the general send-queue loop, decoder
//! and responder dispatch of `sq` and `resp`.
//!
//! It is an optimisation of the model, not a behaviour: everything observable (memory,
//! CQE bytes, PCIe counters and trace, statistics, PSNs, QP states) is what the general
//! path gives for the same WQE. The fast path takes a WQE only when every check the
//! general path would make is known to pass before anything changes; any other WQE (a
//! malformed one, a bad key, a fault to inject, a responder that would refuse it) goes the
//! general way, which makes every check and reports every error. `hw/tests/fastpath.rs`
//! runs the same sequences with the fast path on and off ([`crate::Nic::set_fast_paths`])
//! and compares everything.

use crate::cqe::REQ_BYTE_CNT_POISON;
use crate::host;
use crate::pcie::{Ctx, Purpose};
use crate::req::{connected, done, packets, transmit, BfWqe, Seq};
use crate::state::{World, PSN_MASK};
use crate::types::{Access, Transport};
use crate::wqe::{be32, be64, opcode, Ctrl, BB};

/// `ds` of the WQE taken: ctrl + remote address + one 16-byte inline segment.
const DS: u8 = 3;
/// Its bytes.
const WQE: usize = DS as usize * 16;
/// Offset of the inline segment's byte count, and of its data.
const INLINE_AT: usize = 32;
const DATA_AT: usize = INLINE_AT + 4;
/// The inline bytes that fit the segment (`4 + len` within 16 bytes).
const MAX_INLINE: u32 = 12;
/// `MLX5_INLINE_SEG`.
const INLINE_SEG: u32 = 0x8000_0000;

/// Execute the one WQE a send doorbell of QP index `qpi` (in RTS) announced, if it is an
/// RDMA WRITE of 1 to 12 inline bytes in one BB that completes without error; `bf` is the
/// BlueFlame copy the doorbell delivered, if any. Returns false, having changed nothing,
/// when the fast path does not apply: the caller runs the general path.
#[inline(always)]
pub(crate) fn write_inline(w: &mut World, n: usize, qpi: usize, bf: Option<BfWqe<'_>>) -> bool {
    let nic = &mut w.nics[n];
    if !nic.fast_paths || nic.faults.lose.is_some() || nic.faults.lose_responses.is_some() {
        return false;
    }
    let max_msg = u64::from(nic.cfg.max_msg_sz);
    let q = nic.qp(qpi);
    let cons = q.sq_ci;
    // One WQE outstanding, on an RC QP that is not retransmitting or stalled.
    if q.transport != Transport::Rc
        || q.sq_pi.wrapping_sub(cons) != 1
        || q.stall.is_some()
        || q.head_psn.is_some()
    {
        return false;
    }
    // The WQE as `load_wqe` sees it: the BlueFlame copy of this BB, else the ring's.
    let mut ring = [0u8; BB];
    crate::qp::read_bb(q, cons, &mut ring);
    let from_bf = bf.filter(|b| b.idx == cons);
    let wqe: &[u8; WQE] = match from_bf {
        Some(b) => match b.bytes.try_into() {
            Ok(w) => w,
            Err(_) => return false,
        },
        None => ring[..WQE].try_into().expect("a BB holds the WQE"),
    };
    let ctrl = Ctrl::parse(&wqe[..16]);
    let inline = be32(wqe, INLINE_AT);
    let len = inline & !INLINE_SEG;
    if ctrl.qpn != q.qpn
        || ctrl.idx != cons
        || ctrl.ds != DS
        || ctrl.opcode != opcode::RDMA_WRITE
        || ctrl.opmod != 0
        || inline & INLINE_SEG == 0
        || !(1..=MAX_INLINE).contains(&len)
        || u64::from(len) > max_msg
    {
        return false;
    }
    let (raddr, rkey) = (be64(wqe, 16), be32(wqe, 24));
    let (qpn, mtu, dest, psn) = (q.qpn, q.mtu, q.dest, q.sq_psn);
    // The responder: connected back, expecting this PSN, granting the write through a key
    // that is neither on demand nor on device memory, and not about to fail.
    let Some(to) = connected(w, n, qpn, Transport::Rc, &dest, psn) else {
        return false;
    };
    let r = &w.nics[to.nic];
    let Some(rq) = r.qps[to.qpi]
        .as_ref()
        .filter(|rq| rq.access.contains(Access::REMOTE_WRITE) && !rq.fatal)
    else {
        return false;
    };
    let (rpdn, rqpn) = (rq.pdn, rq.qpn);
    let raddr = host::in_space_of(rq.space, raddr);
    if to.seq != Seq::Expected {
        return false;
    }
    let page_shift = match r.mr(rkey) {
        Some(mr)
            if mr.grants(rpdn, raddr, len.into(), Access::REMOTE_WRITE)
                && mr.present.is_none()
                && mr.dm.is_none() =>
        {
            mr.page_shift
        }
        _ => return false,
    };

    // Everything the general path does for this WQE, in its order.
    let nic = &mut w.nics[n];
    nic.context(Some(qpi), Ctx::Qp(qpn));
    if from_bf.is_some() {
        nic.stats.bf_used += 1;
        nic.stats.bf_mismatch += u64::from(ring[..WQE] != wqe[..]);
    }
    let npkts = packets(len.into(), mtu);
    nic.stats.packets += u64::from(npkts);
    // Sent, and acknowledged below (nothing there can fail): the head PSN is clear again.
    let q = nic.qp(qpi);
    transmit(q, npkts);
    q.head_psn = None;
    let r = &mut w.nics[to.nic];
    r.context(Some(to.qpi), Ctx::Qp(rqpn));
    r.context(Some(to.qpi), Ctx::Mkey(rkey >> 8));
    r.translate(to.qpi, rkey >> 8, page_shift, raddr, len.into());
    host::write(raddr, &wqe[DATA_AT..DATA_AT + len as usize]);
    r.dma_write(Some(to.qpi), raddr, len.into(), Purpose::Scatter);
    let rq = r.qp(to.qpi);
    rq.psn_nak_sent = false;
    rq.rq_psn = rq.rq_psn.wrapping_add(npkts) & PSN_MASK;
    let nic = &mut w.nics[n];
    nic.stats.wqes += 1;
    nic.fast_wqes += 1;
    // Still in RTS: nothing above can fail the QP.
    done(nic, qpi, ctrl, REQ_BYTE_CNT_POISON);
    true
}
