//! Work requests checked and encoded once, then posted many times ([`PreparedWr`]).
//!
//! A post of a [`SendWr`] decodes the operation, checks the data against the queue's
//! limits and builds every segment, on every post. When an application posts the same kind
//! of work request again and again (the same operation, remote buffer and local data, the
//! `wr_id` aside) all of that gives the same bytes each time. [`SendQueue::prepare`] runs
//! it once, through the very code a post runs (so the bytes and the refusals are the same),
//! and keeps the WQE it built; a post of the prepared work request copies that WQE into the
//! ring with the WQE index of its slot, records the `wr_id` for the poller and rings the
//! doorbell. UCX and DPDK keep templates of control segments in the same way.
//!
//! An inline payload is part of the kept WQE: the work request borrows its bytes for as
//! long as it lives, so they cannot change in between (prepare it again for other bytes).
//!
//! What a post still checks: that the queue is the one that prepared it (its QPN and
//! limits are in the WQE), that the QP is not in error, that it is ready, and that the ring
//! has room. A work request of more than one WQEBB is kept as it is and posted through the
//! general path (every check again).

use core::ptr::NonNull;
use core::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use crate::error::PostError;
use crate::mmio::Uar;
use crate::prm::{CtrlSeg, InlineSeg, DS, SEND_WQE_BB};
use crate::ring::{copy_small, Ring, Staging, WqeRing, MAX_WQE_BYTES};

use super::shared::{Slots, SqShared, SqSlot};
use super::wr::{Data, Remote, Shape};
use super::write::{inline_data_ds, inline_header, Cursor, Limits, Ready, Written};
use super::{ring_alone, SendQueue, SendWr};

/// Bytes of the control segment, where the segments after it start in a kept WQE.
const CTRL: usize = size_of::<CtrlSeg>();

/// The identity of the next send queue created (never reused, so a prepared work request
/// can only ever match the queue that prepared it).
static NEXT_QUEUE_ID: AtomicU64 = AtomicU64::new(1);

/// A new send queue identity.
pub(super) fn next_queue_id() -> u64 {
    NEXT_QUEUE_ID.fetch_add(1, Ordering::Relaxed)
}

/// A work request checked and encoded for one send queue by [`SendQueue::prepare`], posted
/// with [`SendQueue::post_prepared`], [`SendQueue::push_prepared`] or
/// [`SendQueue::post_many_prepared`] (each post copies the kept WQE into the ring with its
/// slot's WQE index, after checking the queue, its state and its room).
///
/// It borrows the work request's data (an inline payload is encoded with the WQE, a gather
/// list too when the WQE is one WQEBB). Posting it on another queue is refused with
/// [`PostError::ForeignPreparedWr`].
#[derive(Clone, Copy, Debug)]
pub struct PreparedWr<'a> {
    wr: SendWr<'a>,
    /// The preparing queue's identity.
    queue: u64,
    /// `queue` when the WQE is one WQEBB, posted from `image`; otherwise 0 (no queue's),
    /// posted through the general path. One compare for both.
    fast_queue: u64,
    /// The WQE's bytes as a post at WQE index 0 writes them (valid when `fast_queue` is
    /// set).
    image: [u8; SEND_WQE_BB],
    /// The WQE's size in bytes when it is not one WQEBB (`fast_queue` 0; otherwise
    /// [`PreparedWr::wqe_bytes`] reads the kept WQE's DS count).
    bytes: usize,
    /// The completion's `byte_len` the post records, as the high half of the slot's word
    /// (`SqSlot::pack(0, byte_len)`: ORed with the producer count, one instruction).
    kept_word: u64,
    /// The largest inline payload that keeps the WQE one WQEBB on the preparing queue
    /// ([`PreparedWr::set_payload`]; 0 for operations without inline data).
    short_max: usize,
    /// The operation's shape, decoded once for the patches.
    shape: Shape,
    /// Its [`Shape::align_mask`].
    align_mask: u64,
}

impl<'a> PreparedWr<'a> {
    /// The work request it encodes.
    pub fn wr(&self) -> &SendWr<'a> {
        &self.wr
    }

    /// Sets the `wr_id` the following posts of it report. The remote address
    /// ([`PreparedWr::set_remote`]), the immediate ([`PreparedWr::set_imm`]) and an
    /// inline payload ([`PreparedWr::set_payload`]) are patched in the kept WQE too; prepare
    /// another work request to change anything else.
    #[inline(always)]
    pub fn set_wr_id(&mut self, wr_id: u64) {
        self.wr.wr_id = wr_id;
    }

    /// Sets the remote address and key of a RDMA or atomic operation, patched into the
    /// kept WQE (its remote-address segment). An atomic's target must stay aligned to its
    /// operand size: refused with [`PostError::MisalignedAtomic`] otherwise, nothing
    /// changed.
    ///
    /// # Panics
    /// If the operation has no remote address (SEND, NOP).
    #[inline(always)]
    pub fn set_remote(&mut self, remote: Remote) -> Result<(), PostError> {
        let shape = self.shape;
        assert!(shape.has_remote(), "{:?} has no remote address", self.wr.op);
        Shape::check_alignment(self.align_mask, remote.addr)?;
        // SAFETY: the operation has a remote address (just asserted).
        unsafe { self.wr.op.set_remote(remote) };
        // The remote-address segment follows the control segment (RC and UC).
        self.image[CTRL..CTRL + 8].copy_from_slice(&remote.addr.to_be_bytes());
        self.image[CTRL + 8..CTRL + 12].copy_from_slice(&remote.rkey.to_be_bytes());
        Ok(())
    }

    /// Sets the immediate of a SEND or WRITE with immediate (the key of a SEND_INV),
    /// patched into the kept WQE's control segment.
    ///
    /// # Panics
    /// If the operation has no immediate.
    #[inline(always)]
    pub fn set_imm(&mut self, imm: u32) {
        assert!(self.wr.op.set_imm(imm), "{:?} has no immediate", self.wr.op);
        self.image[12..16].copy_from_slice(&imm.to_be_bytes());
    }

    /// Sets the inline payload of a SEND or WRITE (of any kind) prepared with inline
    /// data. A payload of 1 byte up to what keeps the WQE one WQEBB is patched into the
    /// kept WQE (its size, the inline header and the bytes); any other (none, or longer)
    /// makes the following posts take the general path, with every check of a post (an
    /// inline payload over the queue's limit is refused there).
    ///
    /// # Panics
    /// If the work request's data is not inline.
    #[inline(always)]
    pub fn set_payload(&mut self, data: &'a [u8]) {
        let Data::Inline(kept) = &mut self.wr.data else {
            panic!("a work request prepared with a gather list")
        };
        *kept = data;
        let at = CTRL + self.shape.has_remote() as usize * DS;
        let len = data.len();
        // Control segments, the 4-byte header and the bytes, in whole units (none of the
        // last two for no payload).
        if len.wrapping_sub(1) >= self.short_max {
            // No payload or a long one: the general path.
            self.bytes = at + inline_data_ds(len) * DS;
            self.fast_queue = 0;
            return;
        }
        // One WQEBB: its size is the kept WQE's DS count (`wqe_bytes`).
        // `at` is whole units and `len` at least 1: one add and a shift (as
        // `inline_data_ds`; no overflow to handle, `len` is short).
        const LOG_DS: u32 = DS.trailing_zeros();
        let ds = (at + len + size_of::<InlineSeg>() + DS - 1) >> LOG_DS;
        debug_assert_eq!(ds, at / DS + inline_data_ds(len));
        // The DS count is the low byte of the control segment's `qpn_ds` (bytes 4..8).
        self.image[7] = ds as u8;
        self.image[at..at + 4].copy_from_slice(&inline_header(len));
        debug_assert!(at + 4 + len <= SEND_WQE_BB);
        // `len` is at most `short_max`, the queue's `short_fit` for this shape: `at + 4 +
        // short_fit <= 64` (`Limits::new`; `prepare` refuses queues with a transport segment).
        // SAFETY: so the `len` bytes land inside the image, after the 4-byte header.
        unsafe { copy_small(data.as_ptr(), self.image.as_mut_ptr().add(at + 4), len) };
        // After the copy, which the compiler cannot tell from this field: a post right after
        // the patch then compares the value it holds in a register instead of reloading it.
        self.fast_queue = self.queue;
    }

    /// The WQE's size in bytes.
    pub fn wqe_bytes(&self) -> usize {
        if self.fast_queue != 0 {
            // One WQEBB: its DS count, as the kept WQE has it.
            usize::from(self.image[7] & 0x3f) * DS
        } else {
            self.bytes
        }
    }
}

/// `SendQueue::write_prepared_parts` of a prepared work request on the fields of the queue
/// `$sq` (as `write_wqe!`: the result borrows the ring alone).
macro_rules! write_prepared {
    ($sq:expr, $wr:expr, $fast:expr) => {
        Self::write_prepared_parts::<$fast>(
            &$sq.k,
            &$sq.ring,
            &mut $sq.staging,
            &$sq.shared,
            &mut $sq.c,
            $sq.id,
            $wr,
        )
    };
}

/// A ring-sized scratch area for [`SendQueue::prepare`]: the largest WQE fits at offset 0.
#[repr(C, align(64))]
struct Scratch([u8; MAX_WQE_BYTES]);

impl<U: Uar> SendQueue<U> {
    /// Checks `wr` against this queue's limits and encodes it once (see [`PreparedWr`]).
    /// Refuses what a post of `wr` would refuse for its data and size, with the same
    /// error; whether the QP is ready (or in error) and the room in the ring are checked
    /// by each post of it. A UD or DCI queue is refused with [`PostError::WrongTransport`]
    /// (they post through [`SendQueue::post_ud`] and [`SendQueue::post_dc`]), and so is a
    /// READ or atomic on a UC queue.
    pub fn prepare<'a>(&self, wr: &SendWr<'a>) -> Result<PreparedWr<'a>, PostError> {
        if matches!(self.k.ready, Ready::UdOnly | Ready::DciOnly) {
            return Err(self.k.ready.refusal());
        }
        let mut scratch = Scratch([0; MAX_WQE_BYTES]);
        // SAFETY: `scratch` is MAX_WQE_BYTES (a power of two, a multiple of 64) bytes,
        // 64-byte aligned, outlives `ring` and is written only through it below.
        let ring = unsafe { Ring::new(NonNull::from(&mut scratch.0).cast(), MAX_WQE_BYTES) };
        let slots: Vec<SqSlot> = (0..MAX_WQE_BYTES / SEND_WQE_BB)
            .map(|_| SqSlot::default())
            .collect();
        // Ready, keeping a UC queue's mark (it refuses READ and atomics).
        let k = Limits {
            ready: self.k.ready.set(true),
            ..self.k
        };
        let mut cur = Cursor {
            pi: 0,
            limit: slots.len() as u32,
        };
        // SAFETY: a ring of MAX_WQE_BYTES with one slot per WQEBB; a WQE written at 0 never
        // wraps (it is at most MAX_WQE_BYTES long).
        let written = unsafe {
            k.write(
                &ring,
                &mut Staging::default(),
                &slots[..],
                &AtomicU32::new(0),
                &mut cur,
                wr,
                (),
            )?
        };
        // The first WQEBB, read through the ring that wrote it.
        let mut image = [0; SEND_WQE_BB];
        for (bytes, word) in image.chunks_exact_mut(8).zip(ring.read_block(0)) {
            bytes.copy_from_slice(&word.to_ne_bytes());
        }
        Ok(PreparedWr {
            wr: *wr,
            queue: self.id,
            fast_queue: if written.bbs == 1 { self.id } else { 0 },
            image,
            bytes: written.bytes,
            kept_word: SqSlot::pack(
                0,
                SqSlot::byte_len(slots[0].next_len.load(Ordering::Relaxed)),
            ),
            shape: wr.op.shape(),
            align_mask: wr.op.shape().align_mask(),
            short_max: match wr.data {
                Data::Inline(_) => k.short_fit[wr.op.shape().fit_index()],
                Data::Sges(_) => 0,
            },
        })
    }

    /// Posts a prepared work request alone: [`SendQueue::push_prepared`] then
    /// [`SendQueue::ring_doorbell`], as [`SendQueue::post_wr`] does with a [`SendWr`].
    #[inline(always)]
    pub fn post_prepared(&mut self, wr: &PreparedWr<'_>) -> Result<(), PostError> {
        if wr.fast_queue != self.id {
            return self.post_other(wr);
        }
        // One WQEBB from here on: the doorbell's size and chunk count are constants.
        ring_alone!(self, write_prepared!(self, wr, true)?);
        Ok(())
    }

    /// [`SendQueue::post_prepared`] of a work request of another queue (refused) or of
    /// more than one WQEBB (the general path), out of line.
    #[cold]
    #[inline(never)]
    fn post_other(&mut self, wr: &PreparedWr<'_>) -> Result<(), PostError> {
        if wr.queue != self.id {
            return Err(PostError::ForeignPreparedWr);
        }
        self.post_wr(&wr.wr)
    }

    /// Builds the WQE of a prepared work request in the ring without ringing the doorbell,
    /// as [`SendQueue::push_wr`] does with a [`SendWr`].
    #[inline(always)]
    pub fn push_prepared(&mut self, wr: &PreparedWr<'_>) -> Result<(), PostError> {
        self.last_offset = write_prepared!(self, wr, false)?.offset;
        self.pushed += 1;
        Ok(())
    }

    /// Posts a list of prepared work requests with one doorbell, as
    /// [`SendQueue::post_many`] does with [`SendWr`]s (the same checks and results).
    #[inline(always)]
    pub fn post_many_prepared<'w, 'a: 'w>(
        &mut self,
        wrs: impl IntoIterator<Item = &'w PreparedWr<'a>>,
    ) -> Result<usize, (usize, PostError)> {
        let queue = self.id;
        self.post_list(wrs, |k, ring, staging, slots, tail, cur, wr| {
            // SAFETY: as in `post_list`.
            unsafe { k.write_prepared(ring, staging, slots, tail, cur, wr, queue) }
        })
    }

    #[allow(
        clippy::too_many_arguments,
        reason = "the queue's fields one by one, as `write_parts`"
    )]
    /// A single post's write: the QP-in-error flag, then [`Limits::write_prepared`], or
    /// [`Limits::write_fast`] when the caller knows the work request is this queue's and
    /// one WQEBB (`FAST`).
    #[inline(always)]
    fn write_prepared_parts<'r, const FAST: bool>(
        k: &Limits,
        ring: &'r Ring,
        staging: &mut Staging,
        shared: &SqShared,
        c: &mut Cursor,
        queue: u64,
        wr: &PreparedWr<'_>,
    ) -> Result<Written<'r>, PostError> {
        if shared.is_refused() {
            return Err(PostError::NotReadyToSend);
        }
        // SAFETY: the queue's own ring and slots (one per WQEBB, checked in `new`); the
        // fast write's condition is `FAST`'s.
        unsafe {
            if FAST {
                k.write_fast(ring, staging, shared, &shared.tail, c, wr)
            } else {
                k.write_prepared(ring, staging, shared, &shared.tail, c, wr, queue)
            }
        }
    }
}

impl Limits {
    /// [`Limits::write`] of a prepared work request: the WQE image with this slot's WQE
    /// index, the inline payload and the record for the poller.
    ///
    /// # Safety
    /// As for [`Limits::write`].
    #[allow(clippy::too_many_arguments, reason = "as Limits::write")]
    #[inline(always)]
    pub(super) unsafe fn write_prepared<'r, 's>(
        &self,
        ring: impl WqeRing<'r>,
        staging: &mut Staging,
        slots: impl Slots<'s>,
        tail: &AtomicU32,
        cur: &mut Cursor,
        wr: &PreparedWr<'_>,
        queue: u64,
    ) -> Result<Written<'r>, PostError> {
        // SAFETY: forwarded; `write_fast` is called for a work request of this queue of one
        // WQEBB only.
        unsafe {
            if wr.fast_queue != queue {
                self.write_other(ring, staging, slots, tail, cur, wr, queue)
            } else {
                self.write_fast(ring, staging, slots, tail, cur, wr)
            }
        }
    }

    /// [`Limits::write_prepared`] of a work request of this queue of one WQEBB.
    ///
    /// # Safety
    /// As for [`Limits::write`], and `wr` must have been prepared by this queue with a WQE
    /// of one WQEBB (its `fast_queue` is this queue's).
    #[inline(always)]
    pub(super) unsafe fn write_fast<'r, 's>(
        &self,
        ring: impl WqeRing<'r>,
        staging: &mut Staging,
        slots: impl Slots<'s>,
        tail: &AtomicU32,
        cur: &mut Cursor,
        wr: &PreparedWr<'_>,
    ) -> Result<Written<'r>, PostError> {
        let pi = cur.pi;
        if cur.limit == pi {
            self.refresh_limit(tail, cur, 1, false)?;
        }
        let (mut wqe, start) = ring.wqe(pi as usize * SEND_WQE_BB, SEND_WQE_BB, staging);
        // Located before the stores into the ring, which would make the compiler reload
        // the ring's fields.
        let first = ring.view().block(start);
        let [w0, w1, w2, w3, w4, w5, w6, w7, ..] = wr.image;
        let word0 = u64::from_ne_bytes([w0, w1, w2, w3, w4, w5, w6, w7]);
        // SAFETY: one WQEBB (64 bytes): the image, with this slot's WQE index in its first
        // word.
        unsafe { wqe.wqebb(word0 | CtrlSeg::index_word(pi as u16), &wr.image) };
        drop(wqe);
        let next_pi = pi.wrapping_add(1);
        // SAFETY: `start` is a masked ring offset (this function's contract).
        unsafe { super::write::record(slots, start, wr.wr.wr_id, next_pi, wr.kept_word) };
        cur.pi = next_pi;
        Ok(Written {
            offset: start,
            bytes: wr.wqe_bytes(),
            bbs: 1,
            first,
        })
    }
}

impl Limits {
    /// [`Limits::write_prepared`] of a work request of another queue (refused) or of more
    /// than one WQEBB (the general path), out of line.
    ///
    /// # Safety
    /// As for [`Limits::write`].
    #[allow(clippy::too_many_arguments, reason = "as Limits::write")]
    #[cold]
    #[inline(never)]
    unsafe fn write_other<'r, 's>(
        &self,
        ring: impl WqeRing<'r>,
        staging: &mut Staging,
        slots: impl Slots<'s>,
        tail: &AtomicU32,
        cur: &mut Cursor,
        wr: &PreparedWr<'_>,
        queue: u64,
    ) -> Result<Written<'r>, PostError> {
        if wr.queue != queue {
            return Err(PostError::ForeignPreparedWr);
        }
        // SAFETY: forwarded.
        unsafe { self.write(ring, staging, slots, tail, cur, &wr.wr, ()) }
    }
}
