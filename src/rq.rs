//! Receive queues: the QP's own RQ and the shared receive queue (SRQ).
//!
//! Posting writes a scatter list into the ring and then the doorbell record; it never touches
//! the UAR (`shared/docs/prm-facts.md` §5). The device discovers new receives by reading the
//! record.

use core::ptr::NonNull;
use core::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;

use crate::error::PostError;
use crate::mmio::{udma_to_device_barrier, DbRec};
use crate::prm::{self, Be16, Be32, DataSeg, SrqNextSeg, DS};
use crate::ring::Ring;
use crate::sq::Sge;

/// Description of a receive queue (the QP's RQ, or an SRQ) as `mlx5dv_init_obj` (or the
/// model) hands it over.
#[derive(Debug)]
pub struct RqDesc {
    /// First byte of the ring (64-byte aligned).
    pub buf: NonNull<u8>,
    /// Number of WQEs (a power of two).
    pub wqe_cnt: u32,
    /// Bytes per WQE (a power of two, at least 16).
    pub stride: usize,
    /// The counter word of the doorbell record (QP: word 0; SRQ: its only word).
    pub dbrec: NonNull<Be32>,
}

/// Most scatter entries of one receive WQE (the largest stride, 1024 bytes, of 16-byte
/// entries).
pub(crate) const MAX_RECV_SGE: usize = 64;

/// The scatter lists of posted receives, kept (when a QP scatters to CQE) for the CQ that
/// puts data carried in a CQE where the receive said, as rdma-core's
/// `mlx5_copy_to_recv_wqe` / `mlx5_copy_to_recv_srq` do from the WQE they wrote. A copy,
/// not the ring: the CQ may outlive the ring's owner. Entry words: the address, then
/// `len << 32 | lkey`; a zero second word ends a shorter list.
#[derive(Debug, Default)]
pub(crate) struct ScatterLog {
    max_sge: usize,
    words: Box<[AtomicU64]>,
}

impl ScatterLog {
    fn new(slots: u32, max_sge: usize) -> Self {
        ScatterLog {
            max_sge,
            words: (0..slots as usize * max_sge * 2)
                .map(|_| AtomicU64::new(0))
                .collect(),
        }
    }

    /// Records the list posted in `slot` (published by the poster's release store).
    fn record(&self, slot: usize, sges: &[Sge]) {
        if self.words.is_empty() {
            return;
        }
        let words = &self.words[slot * self.max_sge * 2..][..self.max_sge * 2];
        let mut n = 0;
        for sge in sges.iter().filter(|s| s.len != 0) {
            words[2 * n].store(sge.addr, Ordering::Relaxed);
            words[2 * n + 1].store(
                u64::from(sge.len) << 32 | u64::from(sge.lkey),
                Ordering::Relaxed,
            );
            n += 1;
        }
        if n < self.max_sge {
            words[2 * n + 1].store(0, Ordering::Relaxed);
        }
    }

    /// The list recorded for `slot` into `out`; how many entries (0 when nothing is kept).
    pub(crate) fn list(&self, slot: usize, out: &mut [Sge; MAX_RECV_SGE]) -> usize {
        if self.words.is_empty() {
            return 0;
        }
        let words = &self.words
            [(slot % (self.words.len() / (self.max_sge * 2))) * self.max_sge * 2..]
            [..self.max_sge * 2];
        let mut n = 0;
        while n < self.max_sge.min(MAX_RECV_SGE) {
            let word = words[2 * n + 1].load(Ordering::Relaxed);
            if word == 0 {
                break;
            }
            out[n] = Sge {
                addr: words[2 * n].load(Ordering::Relaxed),
                len: (word >> 32) as u32,
                lkey: word as u32,
            };
            n += 1;
        }
        n
    }
}

/// Receive bookkeeping shared between a receive queue and the CQ completing it.
#[derive(Debug)]
pub(crate) struct RqShared {
    mask: u32,
    wr_id: Box<[AtomicU64]>,
    /// Receives completed (the RQ completes in order).
    tail: AtomicU32,
    /// Receives posted (published with the doorbell record).
    head: AtomicU32,
    /// The posted scatter lists, on a QP that scatters to CQE (else empty).
    pub(crate) log: ScatterLog,
}

impl RqShared {
    /// `scatter_log`: keep the posted scatter lists of `max_sge` entries (scatter to CQE).
    pub(crate) fn new(wqe_cnt: u32, scatter_log: Option<usize>) -> Self {
        RqShared {
            mask: wqe_cnt - 1,
            wr_id: (0..wqe_cnt).map(|_| AtomicU64::new(0)).collect(),
            tail: AtomicU32::new(0),
            head: AtomicU32::new(0),
            log: scatter_log.map_or_else(ScatterLog::default, |max| ScatterLog::new(wqe_cnt, max)),
        }
    }

    /// Retires the receive at 16-bit counter `wqe_counter`; returns its `wr_id`, or `None`
    /// when it is not the oldest outstanding receive (nothing is retired then).
    #[inline(always)]
    pub(crate) fn complete(&self, wqe_counter: u16) -> Option<u64> {
        let tail = self.tail.load(Ordering::Relaxed);
        if tail == self.head.load(Ordering::Acquire) || (wqe_counter as u32 ^ tail) & self.mask != 0
        {
            return None;
        }
        let wr_id = self.wr_id[(tail & self.mask) as usize].load(Ordering::Relaxed);
        self.tail.store(tail.wrapping_add(1), Ordering::Release);
        Some(wr_id)
    }

    pub(crate) fn reset(&self) {
        self.tail.store(0, Ordering::Release);
        self.head.store(0, Ordering::Release);
    }
}

/// Writes a receive scatter list at `offset`: entries in order (zero-length ones skipped),
/// then the terminator if fewer than `max_sge` were written.
#[inline(always)]
fn write_scatter(
    ring: &Ring,
    offset: usize,
    max_sge: usize,
    sges: &[Sge],
) -> Result<(), PostError> {
    if sges.len() > max_sge {
        return Err(PostError::TooManySges {
            count: sges.len(),
            max: max_sge,
        });
    }
    let mut n = 0;
    for sge in sges.iter().filter(|s| s.len != 0) {
        ring.write_seg(offset + n * DS, DataSeg::new(sge.len, sge.lkey, sge.addr));
        n += 1;
    }
    if n < max_sge {
        ring.write_seg(offset + n * DS, DataSeg::TERMINATOR);
    }
    Ok(())
}

/// Refuses a receive whose first scatter entry is shorter than `min_first` (the GRH area of
/// a queue serving UD, else 0). Zero-length entries never reach the ring
/// ([`write_scatter`]): the first that does is the one the device writes the area into.
#[inline(always)]
fn check_grh_area(sges: &[Sge], min_first: u32) -> Result<(), PostError> {
    let first = sges.iter().find(|s| s.len != 0).map_or(0, |s| s.len);
    if first < min_first {
        return Err(PostError::GrhAreaTooSmall { len: first });
    }
    Ok(())
}

/// A QP's receive queue. Posting takes `&mut self`.
#[derive(Debug)]
pub struct RecvQueue {
    ring: Ring,
    wqe_cnt: u32,
    stride: usize,
    max_sge: usize,
    head: u32,
    dbrec: DbRec,
    ready: bool,
    /// Bytes the first scatter entry must hold: the GRH area on a UD QP, else 0.
    min_first: u32,
    shared: Arc<RqShared>,
    errored: Arc<AtomicBool>,
}

/// The area at the start of every UD receive where the device writes the GRH (or, on RoCE,
/// the IP header) of the datagram; the payload follows it (`ibv_post_recv(3)`).
pub const UD_GRH_BYTES: u32 = 40;

impl RecvQueue {
    /// # Safety
    /// The memory in `desc` must be valid as described for the life of the queue and written
    /// on the CPU side only through it.
    pub(crate) unsafe fn new(
        desc: &RqDesc,
        shared: Arc<RqShared>,
        errored: Arc<AtomicBool>,
    ) -> Self {
        RecvQueue {
            // SAFETY: forwarded from this function's contract.
            ring: unsafe { Ring::new(desc.buf, (desc.wqe_cnt as usize * desc.stride).max(64)) },
            wqe_cnt: desc.wqe_cnt,
            stride: desc.stride,
            max_sge: desc.stride / DS,
            head: 0,
            // SAFETY: forwarded from this function's contract.
            dbrec: unsafe { DbRec::new(desc.dbrec) },
            ready: false,
            min_first: 0,
            shared,
            errored,
        }
    }

    /// Makes this the receive queue of a UD QP: every receive's first scatter entry must
    /// hold the [`UD_GRH_BYTES`] area.
    pub(crate) fn make_ud(&mut self) {
        self.min_first = UD_GRH_BYTES;
    }

    /// Posts one receive: `sges` scattered in order (at most [`RecvQueue::max_sge`]).
    #[inline]
    pub fn post(&mut self, wr_id: u64, sges: &[Sge]) -> Result<(), PostError> {
        self.push(wr_id, sges)?;
        self.publish();
        Ok(())
    }

    /// Posts several receives with one doorbell-record update. Stops at the first error,
    /// after publishing those already written; returns how many were posted.
    pub fn post_many<'a>(
        &mut self,
        wrs: impl IntoIterator<Item = (u64, &'a [Sge])>,
    ) -> Result<usize, (usize, PostError)> {
        let mut n = 0;
        let mut result = Ok(());
        for (wr_id, sges) in wrs {
            if let Err(e) = self.push(wr_id, sges) {
                result = Err(e);
                break;
            }
            n += 1;
        }
        self.publish();
        result.map(|()| n).map_err(|e| (n, e))
    }

    #[inline(always)]
    fn push(&mut self, wr_id: u64, sges: &[Sge]) -> Result<(), PostError> {
        if !self.ready || self.errored.load(Ordering::Relaxed) {
            return Err(PostError::NotReadyToReceive);
        }
        let free = self.free();
        if free == 0 {
            return Err(PostError::QueueFull { needed: 1, free });
        }
        check_grh_area(sges, self.min_first)?;
        let slot = self.head & (self.wqe_cnt - 1);
        write_scatter(&self.ring, slot as usize * self.stride, self.max_sge, sges)?;
        self.shared.log.record(slot as usize, sges);
        self.shared.wr_id[slot as usize].store(wr_id, Ordering::Relaxed);
        self.head = self.head.wrapping_add(1);
        Ok(())
    }

    #[inline(always)]
    fn publish(&mut self) {
        self.shared.head.store(self.head, Ordering::Release);
        udma_to_device_barrier();
        self.dbrec.write(prm::qp_counter(self.head));
    }

    /// Receives that can be posted now.
    pub fn free(&self) -> u32 {
        self.wqe_cnt
            - self
                .head
                .wrapping_sub(self.shared.tail.load(Ordering::Acquire))
    }

    /// Scatter entries per receive.
    pub fn max_sge(&self) -> usize {
        self.max_sge
    }

    /// Number of WQEs in the ring.
    pub fn capacity(&self) -> u32 {
        self.wqe_cnt
    }

    pub(crate) fn set_ready(&mut self, ready: bool) {
        self.ready = ready;
    }

    pub(crate) fn reset(&mut self) {
        self.head = 0;
        self.ready = false;
        self.dbrec.write(Be32::new(0));
        self.shared.reset();
    }
}

/// SRQ bookkeeping shared between the SRQ and every CQ completing its receives.
#[derive(Debug)]
pub(crate) struct SrqShared {
    wr_id: Box<[AtomicU64]>,
    free: Box<[AtomicBool]>,
    /// The posted scatter lists: any QP on the SRQ may scatter to CQE.
    pub(crate) log: ScatterLog,
}

impl SrqShared {
    pub(crate) fn new(wqe_cnt: u32, max_sge: usize) -> Self {
        SrqShared {
            wr_id: (0..wqe_cnt).map(|_| AtomicU64::new(0)).collect(),
            free: (0..wqe_cnt).map(|_| AtomicBool::new(true)).collect(),
            log: ScatterLog::new(wqe_cnt, max_sge),
        }
    }

    /// Retires SRQ WQE `index`; returns its `wr_id`, or `None` when that WQE is not
    /// posted (a duplicate or garbage CQE: the slot stays as it is).
    #[inline(always)]
    pub(crate) fn complete(&self, index: u16) -> Option<u64> {
        let i = index as usize % self.wr_id.len();
        if self.free[i].load(Ordering::Relaxed) {
            return None;
        }
        let wr_id = self.wr_id[i].load(Ordering::Relaxed);
        self.free[i].store(true, Ordering::Release);
        Some(wr_id)
    }
}

/// A shared receive queue, used by any number of QPs.
///
/// The WQEs are linked in a ring (`next_wqe_index` of WQE *i* is *i + 1* mod the size) and
/// never relinked: the device consumes them in that order, so posting is a cyclic buffer
/// (rdma-core instead relinks freed WQEs one at a time under a lock). A slot is reused
/// only once its completion was polled; if completions return out of order (QPs on
/// different CQs), a post can see [`PostError::QueueFull`] while a later slot is free.
#[derive(Debug)]
pub struct SharedRecvQueue {
    ring: Ring,
    wqe_cnt: u32,
    stride: usize,
    max_sge: usize,
    head: u32,
    dbrec: DbRec,
    /// Bytes the first scatter entry must hold: the GRH area on an SRQ made for UD, else 0.
    min_first: u32,
    shared: Arc<SrqShared>,
}

impl SharedRecvQueue {
    /// # Safety
    /// As [`RecvQueue::new`]; `desc.dbrec` is the SRQ's one-word record.
    pub(crate) unsafe fn new(desc: &RqDesc, shared: Arc<SrqShared>) -> Self {
        // SAFETY: forwarded from this function's contract.
        let ring = unsafe { Ring::new(desc.buf, (desc.wqe_cnt as usize * desc.stride).max(64)) };
        for i in 0..desc.wqe_cnt {
            let next = SrqNextSeg {
                next_wqe_index: Be16::new(((i + 1) % desc.wqe_cnt) as u16),
                ..SrqNextSeg::default()
            };
            ring.write_seg(i as usize * desc.stride, next);
        }
        SharedRecvQueue {
            ring,
            wqe_cnt: desc.wqe_cnt,
            stride: desc.stride,
            max_sge: desc.stride / DS - 1,
            head: 0,
            // SAFETY: forwarded from this function's contract.
            dbrec: unsafe { DbRec::new(desc.dbrec) },
            min_first: 0,
            shared,
        }
    }

    /// Makes this an SRQ that serves UD QPs: every receive's first scatter entry must hold
    /// the [`UD_GRH_BYTES`] area.
    pub(crate) fn make_ud(&mut self) {
        self.min_first = UD_GRH_BYTES;
    }

    /// True if the SRQ was made for UD QPs
    /// ([`ProtectionDomain::create_ud_srq`](crate::ProtectionDomain::create_ud_srq)): each
    /// receive's first scatter entry holds the [`UD_GRH_BYTES`] area.
    pub fn holds_grh_area(&self) -> bool {
        self.min_first == UD_GRH_BYTES
    }

    /// Posts one receive. On an SRQ made for UD, a first scatter entry shorter than
    /// [`UD_GRH_BYTES`] is refused with [`PostError::GrhAreaTooSmall`].
    pub fn post(&mut self, wr_id: u64, sges: &[Sge]) -> Result<(), PostError> {
        let slot = (self.head & (self.wqe_cnt - 1)) as usize;
        if !self.shared.free[slot].load(Ordering::Acquire) {
            return Err(PostError::QueueFull { needed: 1, free: 0 });
        }
        check_grh_area(sges, self.min_first)?;
        write_scatter(&self.ring, slot * self.stride + DS, self.max_sge, sges)?;
        self.shared.log.record(slot, sges);
        self.shared.wr_id[slot].store(wr_id, Ordering::Relaxed);
        self.shared.free[slot].store(false, Ordering::Relaxed);
        self.head = self.head.wrapping_add(1);
        udma_to_device_barrier();
        self.dbrec.write(prm::qp_counter(self.head));
        Ok(())
    }

    /// Scatter entries per receive.
    pub fn max_sge(&self) -> usize {
        self.max_sge
    }

    /// Number of WQEs in the ring.
    pub fn capacity(&self) -> u32 {
        self.wqe_cnt
    }
}
