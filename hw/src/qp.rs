//! QP error handling: the move to ERR and the flush of outstanding work (prm-facts §9),
//! plus the send-ring helpers shared by execution and flush.

use crate::complete::complete;
use crate::cq::raise_async;
use crate::cqe::{synd, Cqe};
use crate::host;
use crate::pcie::Purpose;
use crate::state::{NicState, Qp};
use crate::types::{AsyncEvent, QpState, Transport};
use crate::wqe::{Ctrl, BB};

/// Read `out.len()` bytes of the send ring from BB counter `start`; BB k of the range is at
/// slot `(start + k) mod wqe_cnt`.
pub(crate) fn read_sq(q: &Qp, start: u16, out: &mut [u8]) {
    let mask = q.sq_mask();
    for (k, chunk) in out.chunks_mut(BB).enumerate() {
        let slot = start.wrapping_add(k as u16) & mask;
        host::read(q.sq_buf + u64::from(slot) * BB as u64, chunk);
    }
}

/// Read the BB at counter `bb` of the send ring (one fixed-size copy).
#[inline(always)]
pub(crate) fn read_bb(q: &Qp, bb: u16, out: &mut [u8; BB]) {
    let slot = bb & q.sq_mask();
    host::read_array(q.sq_buf + u64::from(slot) * BB as u64, out);
}

/// Account the NIC's fetch of BBs `[from, to)`: one DMA read per contiguous ring span.
#[inline(always)]
pub(crate) fn fetch_sq(nic: &mut NicState, qpi: usize, from: u16, to: u16) {
    read_ring(nic, qpi, from, to, Purpose::SendWqeFetch);
}

/// Account a DMA read of send-ring BBs `[from, to)` for `purpose`, one per contiguous span.
#[inline(always)]
pub(crate) fn read_ring(nic: &mut NicState, qpi: usize, from: u16, to: u16, purpose: Purpose) {
    let q = nic.qp(qpi);
    let cnt = 1u32 << q.log_sq;
    let buf = q.sq_buf;
    let mut left = u32::from(to.wrapping_sub(from));
    let mut slot = u32::from(from & q.sq_mask());
    while left > 0 {
        let run = left.min(cnt - slot);
        let addr = buf + u64::from(slot) * BB as u64;
        nic.dma_read(Some(qpi), addr, u64::from(run) * BB as u64, purpose);
        left -= run;
        slot = 0;
    }
}

/// The send producer from doorbell record word 1, if it is consistent with the ring
/// (at most `wqe_cnt` BBs outstanding).
#[inline]
pub(crate) fn sq_producer(q: &Qp) -> Option<u16> {
    let pi = host::read_be32(q.dbrec + 4) as u16;
    (u32::from(pi.wrapping_sub(q.sq_ci)) <= 1u32 << q.log_sq).then_some(pi)
}

/// Complete the WQE at the head of the SQ with error `syndrome` (ctrl already decoded),
/// then move the QP to ERR and flush; a UD or UC QP in RTS moves to SQE instead and
/// flushes its send queue only (IB's send queue error state: the kernel's `qp_state_table`
/// has SQE for UD and UC, not RC; which local errors take mlx5 there is not public,
/// prm-facts-next §1.5: the model sends every send-side failure there). So does a raw
/// packet QP, whose SQ and RQ are separate objects: an SQ in error beside a ready RQ is
/// SQE in the kernel's `sqrq_state_to_qp_state`.
#[cold]
pub(crate) fn fail_head(nic: &mut NicState, qpi: usize, ctrl: Ctrl, syndrome: u8) {
    let q = nic.qp(qpi);
    let cqe = Cqe::req_err(q.qpn, ctrl.opcode, q.sq_ci, syndrome);
    let left = q.sq_pi.wrapping_sub(q.sq_ci);
    q.sq_ci = q.sq_ci.wrapping_add(ctrl.nbb().min(left));
    let sq_error = matches!(q.transport, Transport::Ud | Transport::Uc | Transport::Raw)
        && q.state == QpState::Rts;
    complete(nic, qpi, false, cqe);
    if !sq_error || nic.qp(qpi).fatal {
        fail(nic, qpi);
        return;
    }
    let q = nic.qp(qpi);
    q.state = QpState::Sqe;
    q.stall = None;
    flush_sq(nic, qpi);
}

/// Move QP `qpi` to ERR and flush its SQ and RQ. A QP on an SRQ that enters ERR takes no
/// more WQEs from it: `AsyncEvent::LastWqeReached` (SRQ WQEs are never flushed).
pub(crate) fn fail(nic: &mut NicState, qpi: usize) {
    nic.defer();
    let q = nic.qp(qpi);
    if matches!(q.transport, Transport::Dct | Transport::XrcTgt) {
        // No send queue to flush, and SRQ receives are never flushed.
        q.state = QpState::Err;
        return;
    }
    let entered = q.state != QpState::Err;
    q.state = QpState::Err;
    if entered && q.srq.is_some() {
        let qpn = q.qpn;
        raise_async(nic, AsyncEvent::LastWqeReached { qpn });
    }
    let q = nic.qp(qpi);
    q.stall = None;
    flush_sq(nic, qpi);
    flush_rq(nic, qpi);
}

/// Complete every SQ WQE up to the producer with WR_FLUSH_ERR, signaled or not, except
/// those asking for a CQE only on the first error (CE = 1).
#[cold]
pub(crate) fn flush_sq(nic: &mut NicState, qpi: usize) -> usize {
    let q = nic.qp(qpi);
    let Some(pi) = sq_producer(q) else {
        nic.stats.bad_doorbells += 1;
        return 0;
    };
    let fetched = q.advance_producer(pi);
    fetch_sq(nic, qpi, fetched, pi);
    let mut n = 0;
    while nic.qp(qpi).sq_ci != pi {
        let q = nic.qp(qpi);
        let mut c = [0u8; 16];
        read_sq(q, q.sq_ci, &mut c);
        n += usize::from(flush_head(nic, qpi, Ctrl::parse(&c), pi));
    }
    n
}

/// Complete the WQE at the head of the SQ (`ctrl`, ending by producer `pi`) with
/// WR_FLUSH_ERR unless it asks for a CQE only on the first error (CE = 1), and move past
/// it; returns whether a CQE was written.
pub(crate) fn flush_head(nic: &mut NicState, qpi: usize, ctrl: Ctrl, pi: u16) -> bool {
    let q = nic.qp(qpi);
    let cqe = Cqe::req_err(q.qpn, ctrl.opcode, q.sq_ci, synd::WR_FLUSH_ERR);
    q.sq_ci = q
        .sq_ci
        .wrapping_add(ctrl.nbb().min(pi.wrapping_sub(q.sq_ci)));
    let written = !ctrl.only_first_error();
    if written {
        complete(nic, qpi, false, cqe);
    }
    written
}

/// Complete every posted RQ WQE with WR_FLUSH_ERR (SRQ WQEs are never flushed). The
/// doorbell record read is accounted when it reveals new WQEs.
pub(crate) fn flush_rq(nic: &mut NicState, qpi: usize) -> usize {
    let q = nic.qp(qpi);
    // An XRC target has no receive queue (the SRQ of its last request is never flushed).
    if q.srq.is_some() || q.transport == Transport::XrcTgt {
        return 0;
    }
    let pi = host::read_be32(q.dbrec) as u16;
    if pi != q.rq_known_pi {
        q.rq_known_pi = pi;
        let dbrec = q.dbrec;
        nic.dma_read(Some(qpi), dbrec, 4, Purpose::DbrecRead);
    }
    let q = nic.qp(qpi);
    let count = pi.wrapping_sub(q.rq_ci).min(1u16 << q.log_rq);
    for _ in 0..count {
        let q = nic.qp(qpi);
        let cqe = Cqe::resp_err(q.qpn, q.rq_ci, 0, synd::WR_FLUSH_ERR);
        q.rq_ci = q.rq_ci.wrapping_add(1);
        complete(nic, qpi, true, cqe);
    }
    let q = nic.qp(qpi);
    q.rq_ci = pi;
    usize::from(count)
}
