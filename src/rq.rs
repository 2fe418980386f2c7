//! Receive queues: the QP's own RQ and the shared receive queue (SRQ).
//!
//! Posting writes a scatter list into the ring and then the doorbell record; it never touches
//! the UAR (`shared/docs/prm-facts.md` §5). The device discovers new receives by reading the
//! record.

use core::ptr::NonNull;
use core::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;

use crate::error::PostError;
use crate::mem::{Sge, MAX_RECV_SGE};
use crate::mmio::{udma_to_device_barrier, DbRec};
use crate::prm::{self, Be16, Be32, DataSeg, SrqNextSeg, DS};
use crate::ring::Ring;

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
///
/// A `usize`, as every size in this crate, so it sizes an array as it is:
///
/// ```
/// use mlx5_direct::{GrhArea, UD_GRH_BYTES};
///
/// let area = [0u8; UD_GRH_BYTES];
/// let grh: &GrhArea = &area;
/// assert_eq!(grh.len(), 40);
/// ```
pub const UD_GRH_BYTES: usize = 40;

/// [`UD_GRH_BYTES`] as a scatter entry's length.
const GRH_AREA_LEN: u32 = UD_GRH_BYTES as u32;

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
        self.min_first = GRH_AREA_LEN;
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

/// An SRQ slot the device may be given.
const FREE: u8 = 0;
/// An SRQ slot holding a posted receive.
const POSTED: u8 = 1;
/// An SRQ slot whose receive completed with an on-demand-paging fault
/// ([`WcError::is_odp_fault`](crate::WcError::is_odp_fault)): the kernel's page-fault
/// handler may still read the WQE, so it is not rewritten until the head has passed it once.
const COOLING: u8 = 2;

/// SRQ bookkeeping shared between the SRQ and every CQ completing its receives.
#[derive(Debug)]
pub(crate) struct SrqShared {
    wr_id: Box<[AtomicU64]>,
    /// [`FREE`], [`POSTED`] or [`COOLING`], per slot.
    state: Box<[AtomicU8]>,
    /// Receives retired (completed or faulted), for the poster's count of those outstanding.
    retired: AtomicU32,
    /// The posted scatter lists: any QP on the SRQ may scatter to CQE.
    pub(crate) log: ScatterLog,
}

impl SrqShared {
    pub(crate) fn new(wqe_cnt: u32, max_sge: usize) -> Self {
        SrqShared {
            wr_id: (0..wqe_cnt).map(|_| AtomicU64::new(0)).collect(),
            state: (0..wqe_cnt).map(|_| AtomicU8::new(FREE)).collect(),
            retired: AtomicU32::new(0),
            log: ScatterLog::new(wqe_cnt, max_sge),
        }
    }

    /// Retires SRQ WQE `index`; returns its `wr_id`, or `None` when that WQE is not
    /// posted (a duplicate or garbage CQE: the slot stays as it is).
    #[inline(always)]
    pub(crate) fn complete(&self, index: u16) -> Option<u64> {
        self.retire(index, FREE)
    }

    /// Retires SRQ WQE `index`, which completed with an on-demand-paging fault, into the
    /// cooldown ([`COOLING`]); as [`complete`](Self::complete) otherwise.
    #[cold]
    pub(crate) fn complete_faulted(&self, index: u16) -> Option<u64> {
        self.retire(index, COOLING)
    }

    #[inline(always)]
    fn retire(&self, index: u16, to: u8) -> Option<u64> {
        let i = index as usize % self.wr_id.len();
        if self.state[i].load(Ordering::Relaxed) != POSTED {
            return None;
        }
        let wr_id = self.wr_id[i].load(Ordering::Relaxed);
        self.state[i].store(to, Ordering::Release);
        self.retired.fetch_add(1, Ordering::Release);
        Some(wr_id)
    }
}

/// A shared receive queue, used by any number of QPs.
///
/// The device takes the WQEs in the order their `next_wqe_index` links give. Each post
/// links its WQE to the slot the next post will take: the first slot after it in ring
/// order that is not cooling down, which must be free (so the WQE the device may read next
/// is never one a completion could still change; a post that finds it in use is
/// [`PostError::QueueFull`]). A receive that completed with an on-demand-paging fault
/// ([`WcError::is_odp_fault`](crate::WcError::is_odp_fault)) leaves its slot cooling down:
/// the next post whose link passes it skips it, so its WQE is not rewritten for a whole
/// lap of the ring after its fault, while the kernel may still read it to resolve the
/// fault (rdma-core keeps such a WQE in the SRQ's wait queue for the same reason: srq.c
/// `mlx5_complete_odp_fault` / `srq_cooldown_wqe`). rdma-core relinks freed WQEs one at a
/// time under a lock instead of following ring order. A slot is reused only once its
/// completion was polled; if completions return out of order (QPs on different CQs), a
/// post can see [`PostError::QueueFull`] while a later slot is free.
#[derive(Debug)]
pub struct SharedRecvQueue {
    ring: Ring,
    wqe_cnt: u32,
    /// Receives outstanding at most ([`capacity`](Self::capacity)), below `wqe_cnt`.
    limit: u32,
    stride: usize,
    max_sge: usize,
    /// The slot the next post takes (always free: the last post linked to it).
    head: u32,
    /// Receives posted (the doorbell record's counter).
    posted: u32,
    dbrec: DbRec,
    /// Bytes the first scatter entry must hold: the GRH area on an SRQ made for UD, else 0.
    min_first: u32,
    shared: Arc<SrqShared>,
}

impl SharedRecvQueue {
    /// At most `limit` receives outstanding (below `desc.wqe_cnt`: one slot is always the
    /// free one the last post linked to).
    ///
    /// # Safety
    /// As [`RecvQueue::new`]; `desc.dbrec` is the SRQ's one-word record.
    pub(crate) unsafe fn new(desc: &RqDesc, limit: u32, shared: Arc<SrqShared>) -> Self {
        // SAFETY: forwarded from this function's contract.
        let ring = unsafe { Ring::new(desc.buf, (desc.wqe_cnt as usize * desc.stride).max(64)) };
        for i in 0..desc.wqe_cnt {
            ring.write_seg(i as usize * desc.stride, srq_link((i + 1) % desc.wqe_cnt));
        }
        SharedRecvQueue {
            ring,
            wqe_cnt: desc.wqe_cnt,
            limit: limit.min(desc.wqe_cnt - 1),
            stride: desc.stride,
            max_sge: desc.stride / DS - 1,
            head: 0,
            posted: 0,
            // SAFETY: forwarded from this function's contract.
            dbrec: unsafe { DbRec::new(desc.dbrec) },
            min_first: 0,
            shared,
        }
    }

    /// Makes this an SRQ that serves UD QPs: every receive's first scatter entry must hold
    /// the [`UD_GRH_BYTES`] area.
    pub(crate) fn make_ud(&mut self) {
        self.min_first = GRH_AREA_LEN;
    }

    /// True if the SRQ was made for UD QPs
    /// ([`ProtectionDomain::create_ud_srq`](crate::ProtectionDomain::create_ud_srq)): each
    /// receive's first scatter entry holds the [`UD_GRH_BYTES`] area.
    pub fn holds_grh_area(&self) -> bool {
        self.min_first == GRH_AREA_LEN
    }

    /// Posts one receive. On an SRQ made for UD, a first scatter entry shorter than
    /// [`UD_GRH_BYTES`] is refused with [`PostError::GrhAreaTooSmall`].
    pub fn post(&mut self, wr_id: u64, sges: &[Sge]) -> Result<(), PostError> {
        let outstanding = self
            .posted
            .wrapping_sub(self.shared.retired.load(Ordering::Acquire));
        let next = self.next_slot();
        let Some(next) = next.filter(|_| outstanding < self.limit) else {
            return Err(PostError::QueueFull { needed: 1, free: 0 });
        };
        check_grh_area(sges, self.min_first)?;
        let slot = self.head as usize;
        write_scatter(&self.ring, slot * self.stride + DS, self.max_sge, sges)?;
        self.ring.write_seg(slot * self.stride, srq_link(next));
        self.shared.log.record(slot, sges);
        self.shared.wr_id[slot].store(wr_id, Ordering::Relaxed);
        self.shared.state[slot].store(POSTED, Ordering::Relaxed);
        // The cooling slots this link passes are next reached a whole lap from now (and
        // `next`, when every other slot was cooling, is the next one taken).
        let mut passed = slot;
        while passed != next as usize {
            passed = (passed + 1) % self.wqe_cnt as usize;
            self.shared.state[passed].store(FREE, Ordering::Relaxed);
        }
        self.head = next;
        self.posted = self.posted.wrapping_add(1);
        udma_to_device_barrier();
        self.dbrec.write(prm::qp_counter(self.posted));
        Ok(())
    }

    /// The slot the WQE at `head` links to: the first after it that is not cooling down,
    /// if that one is free; `None` when it is in use. When every other slot is cooling
    /// down, the next one in ring order (its cooldown ends there).
    #[inline(always)]
    fn next_slot(&self) -> Option<u32> {
        let n = self.wqe_cnt;
        let mut slot = (self.head + 1) % n;
        while slot != self.head {
            match self.shared.state[slot as usize].load(Ordering::Acquire) {
                COOLING => slot = (slot + 1) % n,
                FREE => return Some(slot),
                _ => return None,
            }
        }
        Some((self.head + 1) % n)
    }

    /// Scatter entries per receive.
    pub fn max_sge(&self) -> usize {
        self.max_sge
    }

    /// Receives that may be outstanding at once: at least the `entries` the SRQ was
    /// created with, rounded up to a power of two, and fewer than the ring's WQEs.
    pub fn capacity(&self) -> u32 {
        self.limit
    }
}

/// The first segment of an SRQ WQE, linking it to WQE `next`.
fn srq_link(next: u32) -> SrqNextSeg {
    SrqNextSeg {
        next_wqe_index: Be16::new(next as u16),
        ..SrqNextSeg::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mem::Memory;

    /// An SRQ of `wqe_cnt` 32-byte WQEs (one scatter entry) over plain memory, at most
    /// `limit` receives outstanding.
    struct PlainSrq {
        queue: SharedRecvQueue,
        shared: Arc<SrqShared>,
        ring: Memory,
        _dbrec: Memory,
    }

    impl PlainSrq {
        fn new(wqe_cnt: u32, limit: u32) -> PlainSrq {
            let ring = Memory::new(wqe_cnt as usize * 32).unwrap();
            let dbrec = Memory::new(64).unwrap();
            let desc = RqDesc {
                buf: ring.non_null(),
                wqe_cnt,
                stride: 32,
                dbrec: dbrec.non_null().cast(),
            };
            let shared = Arc::new(SrqShared::new(wqe_cnt, 1));
            // SAFETY: both allocations live in the value, dropped after the queue.
            let queue = unsafe { SharedRecvQueue::new(&desc, limit, shared.clone()) };
            PlainSrq {
                queue,
                shared,
                ring,
                _dbrec: dbrec,
            }
        }

        /// Posts a receive of a buffer at `addr`, `wr_id` `addr`.
        fn post(&mut self, addr: u64) -> Result<(), PostError> {
            let sge = Sge {
                addr,
                len: 64,
                lkey: 1,
            };
            self.queue.post(addr, &[sge])
        }

        /// The `next_wqe_index` of WQE `slot`, and the address its scatter entry names.
        fn wqe(&self, slot: usize) -> (u16, u64) {
            let mut bytes = [0u8; 32];
            self.ring.read(slot * 32, &mut bytes);
            let next = u16::from_be_bytes([bytes[2], bytes[3]]);
            (next, u64::from_be_bytes(bytes[24..32].try_into().unwrap()))
        }
    }

    /// rdma-core's reason for its wait queue (srq.c `mlx5_complete_odp_fault`): after an
    /// on-demand-paging fault the kernel may still read the faulted WQE, so a post must not
    /// rewrite it soon. Seven receives in slots 0..6 of an 8-WQE ring; slot 0 faults, the
    /// rest complete. The next post takes slot 7 and links it past slot 0 to slot 1, and
    /// the one after takes slot 1: slot 0 keeps the faulted buffer. Slot 0 is linked again
    /// only a whole lap later.
    #[test]
    fn a_faulted_slot_is_passed_over_for_a_lap() {
        let mut srq = PlainSrq::new(8, 7);
        assert_eq!(srq.queue.capacity(), 7);
        for i in 0..7 {
            srq.post(0x1000 * (i + 1)).unwrap();
        }
        assert_eq!(
            srq.post(0x9000),
            Err(PostError::QueueFull { needed: 1, free: 0 })
        );
        assert_eq!(srq.shared.complete_faulted(0), Some(0x1000));
        for slot in 1..7 {
            assert_eq!(
                srq.shared.complete(slot),
                Some(0x1000 * (u64::from(slot) + 1))
            );
        }
        assert_eq!(srq.shared.complete(0), None, "a cooling slot is not posted");
        srq.post(0xa000).unwrap();
        assert_eq!(srq.wqe(7), (1, 0xa000), "slot 7 links past slot 0");
        srq.post(0xb000).unwrap();
        assert_eq!(srq.wqe(1), (2, 0xb000));
        assert_eq!(srq.wqe(0).1, 0x1000, "the faulted WQE is untouched");
        // Slots 2..5; slot 6 must link to 7, in use until it completes.
        for i in 2..=5 {
            srq.post(0xc000 + i).unwrap();
        }
        assert_eq!(
            srq.post(0xd000),
            Err(PostError::QueueFull { needed: 1, free: 0 })
        );
        for slot in [7, 1, 2, 3] {
            srq.shared.complete(slot).unwrap();
        }
        srq.post(0xd000).unwrap();
        assert_eq!(srq.wqe(6), (7, 0xd000));
        srq.post(0xe000).unwrap();
        assert_eq!(
            srq.wqe(7),
            (0, 0xe000),
            "slot 0 is linked a lap after its fault"
        );
        srq.post(0xf000).unwrap();
        assert_eq!(srq.wqe(0), (1, 0xf000));
    }

    /// When every other slot is cooling down, the next post links the slot after it
    /// anyway: the ring does not stall. The receives outstanding never pass the limit.
    #[test]
    fn cooling_slots_never_stall_the_ring() {
        let mut srq = PlainSrq::new(4, 3);
        for i in 0..3 {
            srq.post(0x100 + i).unwrap();
        }
        for slot in 0..3 {
            assert!(srq.shared.complete_faulted(slot).is_some());
        }
        srq.post(0x200).unwrap();
        assert_eq!(srq.wqe(3), (0, 0x200), "0, 1 and 2 all cool: 3 links to 0");
        // 0 must link past the cooling 1 and 2 to 3, in use until it completes.
        assert_eq!(
            srq.post(0x201),
            Err(PostError::QueueFull { needed: 1, free: 0 })
        );
        srq.shared.complete(3).unwrap();
        srq.post(0x201).unwrap();
        assert_eq!(srq.wqe(0), (3, 0x201));
        // 1 and 2 were passed: free, reached after 0 again.
        assert_eq!(
            srq.post(0x202),
            Err(PostError::QueueFull { needed: 1, free: 0 })
        );
        srq.shared.complete(0).unwrap();
        for addr in [0x202, 0x203, 0x204] {
            srq.post(addr).unwrap();
        }
        assert_eq!(
            [srq.wqe(3), srq.wqe(0), srq.wqe(1)],
            [(0, 0x202), (1, 0x203), (2, 0x204)]
        );
    }
}
