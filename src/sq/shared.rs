//! What a send queue shares with the CQ that completes it, and the queue's description.

use core::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};

use crate::prm::Be32;

/// State shared between a send queue (poster) and the CQ that completes it (poller).
#[derive(Debug)]
pub(crate) struct SqShared {
    pub(super) mask: u32,
    /// `mask` in bytes of `slots` (`mask × size_of::<SqSlot>()`): a slot's offset from a
    /// counter scaled by one shift (see [`SqShared::complete_tail`]).
    slot_mask: u32,
    /// Per first WQEBB of a WQE: what its CQE needs (one array, one bounds check).
    pub(super) slots: Box<[SqSlot]>,
    /// Producer count up to which every WQE has completed.
    pub(super) tail: AtomicU32,
    /// The QP's number as a poller compares it with a CQE's ([`qpn_key`]), or [`GONE`]
    /// once the QP was detached from its CQs (it is being destroyed): one load and one
    /// compare tell a poller that a CQE is this QP's and that the QP is still served
    /// ([`SqShared::is_gone`]).
    key: AtomicU32,
    /// Whether the send queue refuses posts: its QP is in ERR, or (UD, UC and raw packet
    /// QPs) its send queue in SQE. Set by the CQs' pollers on an error CQE and by the
    /// context's asynchronous events, cleared by a reset or SQE → RTS (each also closes or
    /// opens `gate`, which the short path reads instead).
    refused: AtomicBool,
    /// The short path's payload bounds (`Limits::short_fit`, by `Shape::fit_index`) while
    /// the send queue takes posts, 0 while it refuses them: one compare of a payload's
    /// length says both that it is short and that the queue is not refused
    /// ([`SqShared::takes_short`]). All 0 until the send queue sets its bounds
    /// ([`SqShared::open_short`]): every post then goes through the general path.
    gate: [AtomicUsize; 4],
}

/// A [`SqShared`]'s key once its QP is detached: no [`qpn_key`] equals it (QPNs have 24
/// bits).
const GONE: u32 = u32::MAX;

/// The key of a CQE whose `sop_drop_qpn` lies in the CQE as `sop_wire` (its four bytes
/// read as a native word): its 24 QPN bits, the opcode byte dropped, in an order of their
/// own (one shift on a little-endian CPU, where the mask of the bytes in place takes a
/// constant in a register and an AND). [`SqShared::key`] holds its QP's.
#[inline(always)]
pub(crate) fn qpn_key(sop_wire: u32) -> u32 {
    if cfg!(target_endian = "little") {
        sop_wire >> 8
    } else {
        sop_wire & 0xff_ffff
    }
}

/// Where a WQE write finds the `wr_id` slots: through the shared state (loaded where
/// used: a single post) or as a slice (loaded once: a post list).
pub(super) trait Slots<'a>: Copy {
    fn slots(self) -> &'a [SqSlot];
}

impl<'a> Slots<'a> for &'a SqShared {
    #[inline(always)]
    fn slots(self) -> &'a [SqSlot] {
        &self.slots
    }
}

impl<'a> Slots<'a> for &'a [SqSlot] {
    #[inline(always)]
    fn slots(self) -> &'a [SqSlot] {
        self
    }
}

/// Bytes of one [`SqSlot`].
const SLOT_BYTES: u32 = size_of::<SqSlot>() as u32;

/// What the poller needs about the WQE starting at one WQEBB.
#[derive(Debug, Default)]
pub(super) struct SqSlot {
    pub(super) wr_id: AtomicU64,
    /// The producer count after the WQE (low 32 bits) and the completion's `byte_len`
    /// unless the WQE is a READ, whose CQE carries it (high 32 bits: an atomic's operand
    /// size, else 0; the CQE's byte count is not defined there), in one word: one store
    /// per post, one load per completion ([`SqSlot::pack`]).
    pub(super) next_len: AtomicU64,
}

impl SqSlot {
    /// The word of [`SqSlot::next_len`].
    #[inline(always)]
    pub(super) fn pack(next_pi: u32, byte_len: u32) -> u64 {
        u64::from(next_pi) | (u64::from(byte_len) << 32)
    }

    /// The kept `byte_len` of a [`SqSlot::next_len`] word.
    #[inline(always)]
    pub(super) fn byte_len(next_len: u64) -> u32 {
        (next_len >> 32) as u32
    }
}

impl SqShared {
    /// The state of QP `qpn`'s send queue of `wqe_cnt` WQEBBs.
    pub(crate) fn new(wqe_cnt: u32, qpn: u32) -> Self {
        SqShared {
            mask: wqe_cnt - 1,
            slot_mask: (wqe_cnt - 1) * SLOT_BYTES,
            slots: (0..wqe_cnt).map(|_| SqSlot::default()).collect(),
            tail: AtomicU32::new(0),
            key: AtomicU32::new(qpn_key(u32::from_ne_bytes((qpn & 0xff_ffff).to_be_bytes()))),
            refused: AtomicBool::new(false),
            gate: Default::default(),
        }
    }

    /// Whether the send queue refuses posts ([`PostError::NotReadyToSend`]): its QP or
    /// its send queue is in error.
    ///
    /// [`PostError::NotReadyToSend`]: crate::PostError::NotReadyToSend
    #[inline(always)]
    pub(crate) fn is_refused(&self) -> bool {
        self.refused.load(Ordering::Relaxed)
    }

    /// Whether an inline payload of `len` bytes of an operation whose
    /// [`Shape::fit_index`] is `fit_index` takes the short path (1..=`Limits::short_fit`
    /// bytes) and the send queue takes posts: one compare with the gate, which a refusal
    /// closes.
    ///
    /// [`Shape::fit_index`]: super::wr::Shape::fit_index
    #[inline(always)]
    pub(super) fn takes_short(&self, fit_index: usize, len: usize) -> bool {
        len.wrapping_sub(1) < self.gate[fit_index].load(Ordering::Relaxed)
    }

    /// Opens the short path at the send queue's bounds (`Limits::short_fit`) unless the
    /// queue refuses posts; the send queue does once it is built.
    pub(super) fn open_short(&self, fit: [usize; 4]) {
        if !self.refused.load(Ordering::SeqCst) {
            self.open_gate(fit);
        }
    }

    /// Makes the send queue refuse posts (its QP or send queue went to an error state):
    /// the flag, then the gate closed.
    pub(crate) fn refuse(&self) {
        self.refused.store(true, Ordering::SeqCst);
        self.close_gate();
    }

    /// Makes the send queue take posts again (reset, or SQE → RTS), its short path open at
    /// its bounds (`Limits::short_fit`; see [`SendQueue::accept`]).
    ///
    /// [`SendQueue::accept`]: super::SendQueue::accept
    pub(super) fn accept(&self, fit: [usize; 4]) {
        self.refused.store(false, Ordering::SeqCst);
        self.open_gate(fit);
    }

    /// Opens the gate at the kept bounds, then closes it again if a refusal came in the
    /// meantime (a poller's, on another thread): a refusal's flag is stored before its
    /// gate is closed, all in one order (`SeqCst`), so that whichever of the two runs
    /// last, a refused queue's gate ends closed.
    fn open_gate(&self, fit: [usize; 4]) {
        for (gate, bound) in self.gate.iter().zip(fit) {
            gate.store(bound, Ordering::SeqCst);
        }
        if self.refused.load(Ordering::SeqCst) {
            self.close_gate();
        }
    }

    fn close_gate(&self) {
        for gate in &self.gate {
            gate.store(0, Ordering::SeqCst);
        }
    }

    /// A one-slot state that no CQE's key matches ([`SqShared::is_gone`]): a poller's
    /// placeholder, or the entry of an XRC SRQ, which has no send queue.
    pub(crate) fn gone() -> Self {
        let state = SqShared::new(1, 0);
        state.set_gone();
        state
    }

    /// The key ([`qpn_key`]) of this QP's CQEs, or one no CQE has once the QP is gone
    /// ([`SqShared::is_gone`]).
    #[inline(always)]
    pub(crate) fn key(&self) -> u32 {
        self.key.load(Ordering::Relaxed)
    }

    #[inline(always)]
    fn slot(&self, counter: u32) -> &SqSlot {
        let index = (counter & self.mask) as usize;
        debug_assert!(index < self.slots.len());
        // SAFETY: `slots` has `mask + 1` entries (both set in `new`, never changed), so a
        // masked counter is always in bounds; this is the hot path of every post and poll.
        unsafe { self.slots.get_unchecked(index) }
    }

    /// Retires the WQE whose first WQEBB index is `wqe_counter` (and every earlier one);
    /// returns its `wr_id`, or `None` if no outstanding WQE starts there (a duplicate CQE,
    /// one left from before a reset, or garbage): then nothing is retired, so the free
    /// count can never run past the ring.
    #[inline(always)]
    pub(crate) fn complete(&self, wqe_counter: u16) -> Option<u64> {
        self.retire(wqe_counter, |slot, _| slot.wr_id.load(Ordering::Relaxed))
    }

    /// As [`SqShared::complete`] of the counter in `tail_word`, the last four bytes of a
    /// CQE (`wqe_counter`, big-endian, then the signature and `op_own`) read as a native
    /// word, also returning the `byte_len` the post kept for the WQE (read with the
    /// `wr_id`, from the same cache line).
    #[inline(always)]
    pub(crate) fn complete_tail(&self, tail_word: u32) -> Option<(u64, u32)> {
        // The slot's offset in bytes, the counter × 16 masked: the counter in the high
        // half of the word in wire order, shifted down to 16 × counter (the other bytes'
        // bits left below bit 4 and masked off with them): one load, a byte swap, a shift
        // and the mask.
        let scaled = if cfg!(target_endian = "little") {
            tail_word.swap_bytes() >> 12
        } else {
            tail_word >> 12
        };
        let offset = (scaled & self.slot_mask) as usize;
        #[cfg(debug_assertions)]
        {
            let [hi, lo, ..] = tail_word.to_ne_bytes();
            let counter = u32::from(u16::from_be_bytes([hi, lo]));
            debug_assert_eq!(offset, ((counter & self.mask) * SLOT_BYTES) as usize);
        }
        // SAFETY: `offset` is a multiple of a slot's size below `slots.len()` slots (the
        // mask is `(len - 1) × size`): a slot of the array.
        let slot = unsafe {
            &*self
                .slots
                .as_ptr()
                .cast::<u8>()
                .add(offset)
                .cast::<SqSlot>()
        };
        // The `wr_id` read with the slot's word, before the check (an address computed
        // once; the slot is in the array whatever the counter).
        let wr_id = slot.wr_id.load(Ordering::Relaxed);
        let next_len = self.check(slot)?;
        self.tail.store(next_len as u32, Ordering::Release);
        Some((wr_id, SqSlot::byte_len(next_len)))
    }

    /// Whether an outstanding WQE starts at `wqe_counter` (what [`SqShared::complete`]
    /// checks before it retires anything).
    pub(crate) fn is_outstanding(&self, wqe_counter: u16) -> bool {
        self.retire_check(wqe_counter).is_some()
    }

    /// The slot of the outstanding WQE starting at `wqe_counter` and its
    /// [`SqSlot::next_len`] word, if there is one.
    #[inline(always)]
    fn retire_check(&self, wqe_counter: u16) -> Option<(&SqSlot, u64)> {
        let slot = self.slot(wqe_counter as u32);
        self.check(slot).map(|next_len| (slot, next_len))
    }

    /// The [`SqSlot::next_len`] word of `slot` if an outstanding WQE starts there.
    #[inline(always)]
    fn check(&self, slot: &SqSlot) -> Option<u64> {
        let next_len = slot.next_len.load(Ordering::Relaxed);
        let next = next_len as u32;
        // Only the poller writes `tail`. An outstanding WQE ends 1..=wqe_cnt WQEBBs past
        // it; a retired one (and every slot not starting a WQE of this lap) at or before it.
        let ahead = next.wrapping_sub(self.tail.load(Ordering::Relaxed));
        // `ahead` in 1..=wqe_cnt, as one unsigned compare.
        (ahead.wrapping_sub(1) <= self.mask).then_some(next_len)
    }

    /// Retires the WQE starting at `wqe_counter` and returns what `read` takes from its
    /// slot (and its [`SqSlot::next_len`] word), read before the retirement lets the poster
    /// reuse the slot.
    #[inline(always)]
    fn retire<T>(&self, wqe_counter: u16, read: impl FnOnce(&SqSlot, u64) -> T) -> Option<T> {
        let (slot, next_len) = self.retire_check(wqe_counter)?;
        let out = read(slot, next_len);
        self.tail.store(next_len as u32, Ordering::Release);
        Some(out)
    }

    /// The QP was detached from its CQs: a poller that holds this state for a QP number
    /// must not complete anything on it (it looks the number up again, and the new entry,
    /// if there is one, has a state of its own).
    #[inline(always)]
    pub(crate) fn is_gone(&self) -> bool {
        self.key() == GONE
    }

    /// Marks the QP detached (after its entries left the CQs' lists).
    pub(crate) fn set_gone(&self) {
        self.key.store(GONE, Ordering::Relaxed);
    }

    pub(crate) fn reset(&self) {
        for slot in self.slots.iter() {
            slot.next_len.store(0, Ordering::Relaxed);
        }
        self.tail.store(0, Ordering::Release);
    }
}

/// Description of a send queue as `mlx5dv_init_obj` (or the model) hands it over.
#[derive(Debug)]
pub struct SqDesc {
    /// First byte of the SQ ring (64-byte aligned).
    pub buf: core::ptr::NonNull<u8>,
    /// Number of 64-byte WQEBBs (a power of two).
    pub wqe_cnt: u32,
    /// The QP doorbell record (word 1 is the send counter).
    pub dbrec: core::ptr::NonNull<Be32>,
    /// Offset of the QP's doorbell / BlueFlame register in its UAR page.
    pub bf_offset: usize,
    /// BlueFlame half size in bytes; 0 = no BlueFlame.
    pub bf_size: usize,
    /// QP number.
    pub qpn: u32,
    /// Largest WQE the device accepts, in bytes (`max_sq_desc_sz`; at most 63 DS).
    pub max_wqe_size: usize,
    /// Largest inline payload to accept.
    pub max_inline: usize,
    /// Largest gather list to accept.
    pub max_sge: usize,
}
