//! A send queue's device-memory slots ([`DmSlots`]): the data-path half of device memory
//! (MEMIC, [`crate::dm`]). Payloads above the inline limit are copied into a slot with
//! 8-byte stores and posted as a pointer WQE on it
//! ([`SendQueue::post_dm`](crate::SendQueue::post_dm)); a slot is reused only once the WQE
//! that read it has completed. The region the slots cut up is the control object
//! [`DmRegion`](crate::DmRegion), reached only through its window ([`DmTarget`]), so this
//! layer names no backend.

use crate::error::PostError;
use crate::mem::Sge;
use crate::mmio::{mmio_flush_writes, DmWindow};
use crate::prm::SEND_WQE_BB;

/// What device memory is allocated and written in: `MLX5_MEMIC_BASE_SIZE` (the kernel rounds
/// sizes up to it) and the line the write-combining buffer merges.
pub const DM_LINE: usize = SEND_WQE_BB;

/// The size of a store into device memory.
pub(crate) const WORD: usize = 8;

/// Stores `data` at `offset` (8-byte aligned, room for `data` rounded up to 8 bytes checked
/// by the caller) of `window`: whole aligned lines as lines, the rest as 8-byte words, the
/// last word padded with zeros; then drains the write-combining buffers.
pub(crate) fn store(window: &dyn DmWindow, offset: usize, data: &[u8]) {
    let mut at = 0;
    while at < data.len() {
        let rest = &data[at..];
        if (offset + at) % DM_LINE == 0 && rest.len() >= DM_LINE {
            let mut line = [0u64; 8];
            for (w, chunk) in line.iter_mut().zip(rest.chunks_exact(WORD)) {
                *w = u64::from_ne_bytes(chunk.try_into().expect("8-byte chunk"));
            }
            window.write_line(offset + at, &line);
            at += DM_LINE;
        } else {
            let mut word = [0u8; WORD];
            let n = rest.len().min(WORD);
            word[..n].copy_from_slice(&rest[..n]);
            window.write64(offset + at, word);
            at += WORD;
        }
    }
    mmio_flush_writes();
}

/// A region's window and its place in it, without the backend type: what a send queue keeps.
pub(crate) trait DmTarget: Send + Sync + core::fmt::Debug {
    fn window(&self) -> &dyn DmWindow;
}

/// A send queue's device-memory slots: a [`DmRegion`](crate::DmRegion) cut into slots of equal size that
/// [`SendQueue::post_dm`](crate::SendQueue::post_dm) copies payloads into, in turn. A slot
/// is taken again only when the WQE that gathered from it has completed (the queue's
/// completions retire WQEs in order, so the oldest slot is always the next to free).
#[derive(Debug)]
pub struct DmSlots {
    pub(crate) region: Box<dyn DmTarget>,
    /// The region's offset in its allocation (where slot 0 is in the window).
    pub(crate) base: usize,
    pub(crate) lkey: u32,
    pub(crate) slot: usize,
    /// Per slot: the producer count after the WQE that reads it.
    pub(crate) ends: Box<[u32]>,
    /// The next slot to take.
    pub(crate) next: usize,
    /// Slots whose WQEs may not have completed yet (the oldest at `next - busy`).
    pub(crate) busy: usize,
}

impl DmSlots {
    /// Number of slots.
    pub fn count(&self) -> usize {
        self.ends.len()
    }

    /// Slot size in bytes.
    pub fn slot_size(&self) -> usize {
        self.slot
    }

    /// Slots whose WQEs had not completed when last looked at (a post looks).
    pub fn in_flight(&self) -> usize {
        self.busy
    }

    /// Frees the slots of WQEs retired up to producer count `tail`, and returns the gather
    /// entry of the next slot with `payload` copied into it. The slot is taken by
    /// [`DmSlots::commit`] once its WQE is posted; until then nothing changes.
    pub(crate) fn fill(&mut self, tail: u32, payload: &[u8]) -> Result<Sge, PostError> {
        if payload.len() > self.slot {
            return Err(PostError::DmPayloadTooLarge {
                len: payload.len(),
                slot: self.slot,
            });
        }
        self.reclaim(tail);
        let n = self.ends.len();
        if self.busy == n {
            return Err(PostError::DmSlotsFull { slots: n as u32 });
        }
        let offset = self.next * self.slot;
        store(self.region.window(), self.base + offset, payload);
        Ok(Sge {
            addr: offset as u64,
            len: payload.len() as u32,
            lkey: self.lkey,
        })
    }

    /// Frees the slots of WQEs retired up to producer count `tail`, oldest first.
    fn reclaim(&mut self, tail: u32) {
        let n = self.ends.len();
        while self.busy > 0 {
            let oldest = (self.next + n - self.busy) % n;
            // Retired when `tail` has reached or passed the producer count after it.
            if (tail.wrapping_sub(self.ends[oldest]) as i32) < 0 {
                break;
            }
            self.busy -= 1;
        }
    }

    /// Whether no slot is in flight once the WQEs retired up to `tail` are let go.
    pub(crate) fn idle(&mut self, tail: u32) -> bool {
        self.reclaim(tail);
        self.busy == 0
    }

    /// The slot [`DmSlots::fill`] returned is read by the WQE ending at producer count `end`.
    pub(crate) fn commit(&mut self, end: u32) {
        self.ends[self.next] = end;
        self.next = (self.next + 1) % self.ends.len();
        self.busy += 1;
    }

    /// The queue was reset: no WQE reads any slot.
    pub(crate) fn clear(&mut self) {
        self.busy = 0;
    }
}
