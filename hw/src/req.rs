//! The requester's steps every transport shares: what a WQE's execution ends in, its packets
//! and PSN on the wire, where the request lands at the responder, the gather-list check,
//! and the head WQE's completion. The send-queue loop (`sq`), the fast path (`fast`) and
//! the UC and UD transports (`uc`, `ud`) build on them.

use crate::complete::complete;
use crate::cqe::{cqe_op, synd, Cqe};
use crate::host;
use crate::pcie::Purpose;
use crate::state::{Dest, InFlight, NicState, Qp, World, PSN_MASK};
use crate::types::{Access, QpState, Transport};
use crate::wqe::{Ctrl, Seg, Segs, Wqe};

/// A WQE delivered by BlueFlame: its first BB index and its `ds*16` bytes.
#[derive(Clone, Copy)]
pub(crate) struct BfWqe<'a> {
    pub(crate) idx: u16,
    pub(crate) bytes: &'a [u8],
}

/// Result of executing one WQE.
pub(crate) enum Outcome {
    /// Completed; the requester CQE's byte count.
    Done(u32),
    Rnr,
    Lost,
    Fail(u8),
    /// Not executed: its DCI stream is in error (flushed).
    Flushed,
}

/// The head WQE of QP index `qpi` (RTS, `ctrl` at counter `sq_ci`) has completed with
/// `byte_cnt`: move past it, write its CQE if it is signaled, and fail the QP if it is
/// fatal (a CQE lost earlier or now). Returns false if the QP failed.
#[inline(always)]
pub(crate) fn done(nic: &mut NicState, qpi: usize, ctrl: Ctrl, byte_cnt: u32) -> bool {
    let q = nic.qp(qpi);
    let cons = q.sq_ci;
    q.sq_ci = cons.wrapping_add(ctrl.nbb());
    q.retries = 0;
    q.rnr_retries = 0;
    let mut fatal = q.fatal;
    if ctrl.signaled() {
        let cqe = Cqe {
            opcode: cqe_op::REQ,
            qpn: q.qpn,
            send_opcode: ctrl.opcode,
            wqe_counter: cons,
            byte_cnt,
            ..Cqe::default()
        };
        complete(nic, qpi, false, cqe);
        // A CQE the CQ could not take makes the QP fatal.
        fatal = nic.qp(qpi).fatal;
    }
    if fatal {
        crate::qp::fail(nic, qpi);
    }
    !fatal
}

/// The packets of a message of `len` bytes on a path MTU of `mtu` (a power of two, checked
/// at RTR): at least one.
pub(crate) fn packets(len: u64, mtu: u32) -> u32 {
    ((len + u64::from(mtu) - 1) >> mtu.trailing_zeros()).max(1) as u32
}

/// The PSN of the message at the head of the SQ, which is being put on the wire: on its
/// first transmission the next new PSN, which then moves past its `npkts` packets; on a
/// retransmission the same PSN again.
pub(crate) fn transmit(q: &mut Qp, npkts: u32) -> u32 {
    match q.head_psn {
        Some(psn) => psn,
        None => {
            let psn = q.sq_psn;
            q.head_psn = Some(psn);
            q.sq_psn = psn.wrapping_add(npkts) & PSN_MASK;
            psn
        }
    }
}

/// Where a request's PSN falls at the responder (IB spec 9.7.5.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Seq {
    /// The expected PSN: executed.
    Expected,
    /// Within half the 24-bit PSN space behind the expected PSN: already executed, its
    /// response was lost; acknowledged (READ re-answered, atomic from the saved result)
    /// without executing again.
    Duplicate,
    /// Ahead of the expected PSN (the other half): a sequence error.
    Ahead,
}

/// Where a request packet lands.
pub(crate) struct Landing {
    pub(crate) nic: usize,
    pub(crate) qpi: usize,
    pub(crate) seq: Seq,
}

/// The responder QP for a request of a `transport` QP, if the packet would reach a QP that
/// accepts it: the destination routes, the QP exists with that transport in RTR/RTS and
/// is connected back to the sender. Anything else is a silently dropped packet.
#[inline(always)]
pub(crate) fn connected(
    w: &World,
    n: usize,
    qpn: u32,
    transport: Transport,
    dest: &Dest,
    psn: u32,
) -> Option<Landing> {
    let m = w.route(dest)?;
    let rqpi = w.nics[m].qp_index(dest.qpn)?;
    let r = w.nics[m].qps[rqpi].as_ref()?;
    let back = w.route(&r.dest) == Some(n);
    // A UC QP in SQE still receives.
    let ready =
        matches!(r.state, QpState::Rtr | QpState::Rts | QpState::Sqe) && r.transport == transport;
    (ready && back && r.dest.qpn == qpn).then_some(Landing {
        nic: m,
        qpi: rqpi,
        seq: seq(r.rq_psn, psn),
    })
}

/// Where request PSN `psn` falls for a responder expecting `rq_psn`.
pub(crate) fn seq(rq_psn: u32, psn: u32) -> Seq {
    match rq_psn.wrapping_sub(psn) & PSN_MASK {
        0 => Seq::Expected,
        1..=0x80_0000 => Seq::Duplicate,
        _ => Seq::Ahead,
    }
}

/// Check the local keys of the gather list of WQE `d` (a SEND or WRITE) and account its DMA
/// reads, counting a gather that overlaps a READ or atomic result still in flight
/// (`fence_hazards`). Segments on device memory cost no DMA read. The NIC's copy `wqe` then
/// names the host address of every pointer segment ([`resolve_ptr_segs`]) where that is not
/// the address the WQE carries: on device memory, or in another address space.
#[inline]
pub(crate) fn check_gather(
    nic: &mut NicState,
    qpi: usize,
    pdn: u32,
    wqe: &mut [u8],
    d: &Wqe,
    in_flight: &InFlight,
) -> Result<(), u8> {
    // Inline data only (the common small WQE): nothing to check, no call.
    if d.ptr_segs == 0 {
        return Ok(());
    }
    let space = nic.qp(qpi).space;
    if check_ptr_segs(nic, (qpi, pdn), Segs::new(wqe, d.data), space, in_flight)? || space != 0 {
        resolve_ptr_segs(nic, wqe, d.data, space);
    }
    Ok(())
}

/// [`check_gather`]'s pointer segments, their addresses in the QP's address space `space`
/// (device-memory keys are zero based and in none); true when one is on device memory.
#[inline(never)]
fn check_ptr_segs(
    nic: &mut NicState,
    (qpi, pdn): (usize, u32),
    segs: Segs<'_>,
    space: u64,
    in_flight: &InFlight,
) -> Result<bool, u8> {
    let mut hazard = false;
    let mut on_chip = false;
    for seg in segs.flatten() {
        if let Seg::Ptr { len, lkey, addr } = seg {
            let dm = nic.mr(lkey).is_some_and(|mr| mr.dm.is_some());
            let addr = if dm {
                addr
            } else {
                host::in_space_of(space, addr)
            };
            if !nic.check_mr(qpi, lkey, pdn, addr, len.into(), Access::NONE) {
                return Err(synd::LOCAL_PROT_ERR);
            }
            if dm {
                on_chip = true;
                continue;
            }
            hazard |= in_flight.overlaps(addr, len.into());
            nic.dma_read(Some(qpi), addr, len.into(), Purpose::Gather);
        }
    }
    nic.stats.fence_hazards += u64::from(hazard);
    Ok(on_chip)
}

/// The NIC's copy of a WQE whose gather list [`check_ptr_segs`] has checked: each pointer
/// segment's address becomes the host address its bytes are at, so the data movement that
/// follows reads them there: on-chip for a device-memory key (`dm::host`), in the QP's
/// address space `space` otherwise. The host ring is untouched.
fn resolve_ptr_segs(nic: &mut NicState, wqe: &mut [u8], data: usize, space: u64) {
    let mut at = data;
    while at + 16 <= wqe.len() {
        let mut segs = Segs::new(wqe, at);
        let Some(Ok(seg)) = segs.next() else { break };
        let next = segs.pos();
        if let Seg::Ptr { lkey, addr, len } = seg {
            let resolved = match crate::dm::host(nic, lkey, addr, len) {
                Some(on_chip) => on_chip,
                None => host::in_space_of(space, addr),
            };
            wqe[at + 8..at + 16].copy_from_slice(&resolved.to_be_bytes());
        }
        at = next;
    }
}

#[cfg(test)]
mod tests {
    use super::packets;

    #[test]
    fn packets_round_up_to_whole_mtus_and_are_at_least_one() {
        let got: Vec<u32> = [0, 1, 1023, 1024, 1025, 2048, 2049]
            .iter()
            .map(|&len| packets(len, 1024))
            .collect();
        assert_eq!(got, [1, 1, 1, 1, 2, 2, 3]);
        assert_eq!(packets(256, 256), 1);
    }
}
