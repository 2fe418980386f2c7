//! Completion queues: CQE writes with ownership, overrun detection, arming and events
//! (prm-facts §7.1, §7.8). The engines report a completion through `complete`, which
//! holds it back, compresses it (`cqz`) or writes it here.

use crate::cqe::{cqe_op, Cqe, CQE_SE};
use crate::host;
use crate::pcie::{Ctx, Purpose};
use crate::state::access::eqe;
use crate::state::{Arm, Cq, NicState, CQ_UAR};
use crate::types::{AsyncEvent, Event, ZipLayout};
use crate::wqe::be32;

/// `MLX5_CQ_DB_REQ_NOT_SOL`: arm for solicited (or error) CQEs only.
const ARM_SOLICITED: u32 = 1;

pub(crate) fn lost(nic: &mut NicState, qpi: usize) {
    let q = nic.qp(qpi);
    if !q.fatal {
        q.fatal = true;
        let qpn = q.qpn;
        nic.defer();
        raise_async(nic, AsyncEvent::QpFatal { qpn });
    }
}

/// Write one whole CQE now. Returns false if the CQ is (or just went) into error.
pub(crate) fn write_now(nic: &mut NicState, cq: usize, qp: Option<usize>, cqe: &Cqe) -> bool {
    let Some((at, fire)) = claim(nic, cq, qp, 1, cqe) else {
        return false;
    };
    let timestamp = nic.clock.read();
    let c = nic.cq(cq);
    let mut bytes = cqe.encode((at >> c.log_cnt) & 1 == 1, timestamp);
    if c.zip.is_some_and(|z| z.layout == ZipLayout::Enhanced) {
        bytes[62] = validity(nic, cq, at);
    }
    if let Some(s) = cqe.scattered.filter(|s| s.wide) {
        // Format 2: the data is the first half of the 128-byte entry, written before the
        // `cqe64` hands the entry over.
        host::write(entry_addr(nic.cq(cq), at), &s.data);
    }
    put(nic, cq, qp, at, &bytes, true);
    nic.stats.cqes += 1;
    if fire {
        let cqn = nic.cq(cq).cqn;
        raise(nic, cqn);
    }
    true
}

/// Takes `slots` CQ indices for CQE `cqe` (the first of a compressed block): the first
/// index and whether an armed CQ fires for it (the caller raises the event once the
/// entries are written). `None` if the CQ is (or just went) into error.
pub(crate) fn claim(
    nic: &mut NicState,
    cq: usize,
    qp: Option<usize>,
    slots: u32,
    cqe: &Cqe,
) -> Option<(u32, bool)> {
    let cqn = nic.cq(cq).cqn;
    nic.context(qp, Ctx::Cq(cqn));
    let c = nic.cq(cq);
    if c.error {
        nic.stats.cqes_dropped += u64::from(slots);
        return None;
    }
    let cnt = 1u32 << c.log_cnt;
    if !c.overrun_ignore {
        let ci = host::read_be32(c.dbrec) & 0xff_ffff;
        if c.pi.wrapping_add(slots - 1).wrapping_sub(ci) & 0xff_ffff >= cnt {
            c.error = true;
            c.armed = None;
            raise_async(nic, AsyncEvent::CqError { cqn });
            nic.stats.cqes_dropped += u64::from(slots);
            return None;
        }
    }
    let at = c.pi;
    c.pi = c.pi.wrapping_add(slots);
    let fire = c.armed.filter(|a| !a.solicited || cqe.se || cqe.is_error());
    if let Some(a) = fire {
        c.armed = None;
        c.fired_sn = Some(a.sn);
    }
    Some((at, fire.is_some()))
}

/// Writes the 64 bytes of the `cqe64` at CQ index `at` (`handover`: `op_own` last, with a
/// release store; otherwise a mini-CQE array, plain bytes) and accounts the DMA write of the
/// whole entry.
pub(crate) fn put(
    nic: &mut NicState,
    cq: usize,
    qp: Option<usize>,
    at: u32,
    bytes: &[u8; 64],
    handover: bool,
) {
    let c = nic.cq(cq);
    let size = u64::from(c.cqe_size);
    let base = entry_addr(c, at);
    // A 128-byte CQE's first half carries scatter-to-CQE data only (written by
    // `write_now`); otherwise it is left as it was (the link still sees one write of the
    // whole entry).
    if handover {
        host::write_cqe(base + size - 64, bytes);
    } else {
        host::write(base + size - 64, bytes);
    }
    nic.dma_write(qp, base, size, Purpose::Cqe);
}

/// Host address of the entry at CQ index `at`.
fn entry_addr(c: &Cq, at: u32) -> u64 {
    c.buf + u64::from(at & ((1u32 << c.log_cnt) - 1)) * u64::from(c.cqe_size)
}

/// The validity iteration count of CQ index `at`: `(at >> log_cnt) & 0xff`.
pub(crate) fn validity(nic: &mut NicState, cq: usize, at: u32) -> u8 {
    let c = nic.cq(cq);
    (at >> c.log_cnt) as u8
}

/// Deliver a completion event: EQE + MSI-X, then the completion event queue.
pub(crate) fn raise(nic: &mut NicState, cqn: u32) {
    eqe(nic);
    nic.stats.events += 1;
    let event = Event::Completion { cqn };
    let channel = nic.cq_index(cqn).and_then(|i| nic.cq(i).channel);
    match channel.and_then(|ch| nic.channel(ch)) {
        Some(channel) => channel.push(event),
        None => {
            nic.events.push_back(event);
            nic.note_after_lock();
        }
    }
}

/// Deliver an asynchronous event: EQE + MSI-X (the asynchronous EQ's), then the
/// asynchronous event queue.
pub(crate) fn raise_async(nic: &mut NicState, event: AsyncEvent) {
    eqe(nic);
    nic.async_events.push_back(event);
    nic.note_after_lock();
}

/// The CQ arm doorbell: `BE32(sn<<28 | cmd | ci)`, `BE32(cqn)` (prm-facts §7.8).
///
/// * The arm word must equal doorbell record word 1, which the driver writes first
///   (`mlx5_arm_cq`); a difference is a driver bug, counted in `Stats::arm_dbrec_mismatch`
///   (the MMIO is what the model acts on).
/// * `sn` is the driver's count of events consumed (mod 4). An arm carrying the `sn` of the
///   arm that produced the last event asks again for an event already delivered: it is
///   stale and ignored (`Stats::stale_arms`). A driver that consumes the event and
///   increments `sn` arms again normally.
/// * If CQEs were written past `ci`, the event fires at once (either command); otherwise
///   the next qualifying CQE fires it. One event per accepted arm.
pub(crate) fn arm(nic: &mut NicState, uar: u32, data: &[u8]) {
    let w0 = be32(data, 0);
    let cqn = be32(data, 4);
    let cmd = (w0 >> 24) & 0xf;
    let sn = ((w0 >> 28) & 3) as u8;
    let ci = w0 & 0xff_ffff;
    let Some(i) = nic
        .cq_index(cqn)
        .filter(|_| uar == CQ_UAR && cmd <= ARM_SOLICITED)
    else {
        nic.stats.bad_mmio += 1;
        return;
    };
    let c = nic.cq(i);
    let dbrec_word = host::read_be32(c.dbrec + 4);
    nic.stats.arm_dbrec_mismatch += u64::from(dbrec_word != w0);
    let c = nic.cq(i);
    if c.fired_sn == Some(sn) {
        nic.stats.stale_arms += 1;
        return;
    }
    nic.stats.arms += 1;
    let c = nic.cq(i);
    if c.error {
        return;
    }
    let solicited = cmd == ARM_SOLICITED;
    if c.pi & 0xff_ffff != ci && (!solicited || unpolled_solicited(c, ci)) {
        c.armed = None;
        c.fired_sn = Some(sn);
        raise(nic, cqn);
    } else {
        c.armed = Some(Arm { solicited, sn });
    }
}

/// True if a CQE written past consumer index `ci` is solicited or an error: what a
/// solicited-only arm waits for.
fn unpolled_solicited(c: &Cq, ci: u32) -> bool {
    let cnt = 1u32 << c.log_cnt;
    let size = u64::from(c.cqe_size);
    let mut at = ci;
    while at & 0xff_ffff != c.pi & 0xff_ffff {
        let mut op_own = [0u8; 1];
        host::read(
            c.buf + u64::from(at & (cnt - 1)) * size + size - 1,
            &mut op_own,
        );
        let opcode = op_own[0] >> 4;
        if op_own[0] & CQE_SE != 0 || opcode == cqe_op::REQ_ERR || opcode == cqe_op::RESP_ERR {
            return true;
        }
        at = at.wrapping_add(1);
    }
    false
}
