//! How a batch of WQEs is handed to the device: the doorbell modes and the final ring.

use crate::mmio::{ring_send_doorbell, BfReg, DbRec, Uar};
use crate::ring::Ring;

use super::write::Written;

/// How a batch of WQEs is handed to the device.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum DoorbellMode {
    /// Always the 8-byte doorbell; the device DMA-reads every WQE from the ring.
    Doorbell,
    /// rdma-core's rule (qp.c `post_send_db`): BlueFlame when exactly one WQE is rung and it
    /// fits the BlueFlame half; the 8-byte doorbell for batches.
    BlueFlame,
    /// BlueFlame-copy the last WQE of every batch when it fits; the device fetches the rest.
    /// Unverified on silicon: rdma-core and UCX copy only a WQE rung alone, so no reference
    /// shows a ConnectX taking a copy of a WQE that is not the next one it fetches (the
    /// hw-path review, C1). An explicit choice, never the default.
    BlueFlameLast,
    /// What rdma-core proves on hardware: [`DoorbellMode::BlueFlame`] when the register has
    /// BlueFlame, else [`DoorbellMode::Doorbell`].
    #[default]
    Auto,
}

/// Rings the doorbell for the WQEs up to `last` (producer count `pi`): BlueFlame if it is
/// at most `bf_max` WQEBBs (the copy is of whole 64-byte blocks, so those must fit the
/// register's half; and on the one-WQEBB paths the size in blocks is a constant 1, where
/// the size in bytes is not).
#[inline(always)]
pub(super) fn ring_last<U: Uar>(
    bf: &mut BfReg<U>,
    dbrec: &DbRec,
    pi: u32,
    ring: &Ring,
    last: &Written<'_>,
    bf_max: usize,
) {
    // One compare decides: the WQE's size in blocks is known already.
    let bf_chunks = (last.bbs <= bf_max).then_some(last.bbs);
    ring_send_doorbell(bf, dbrec, pi, ring, (last.offset, last.first), bf_chunks);
}

/// Bit 31 of a queue's `pushed` word: a WQE rung alone is not BlueFlame-copied (its
/// `bf_single` is 0; the doorbell mode's). Bits 30..0 count the WQEs pushed and not yet
/// rung. A WQE rung alone in a BlueFlame mode then finds the word 0: one compare tells
/// that nothing was pushed before it and that it is copied.
pub(super) const NO_BF: u32 = 1 << 31;

/// The WQEs counted in a `pushed` word (see [`NO_BF`]).
#[inline(always)]
pub(super) fn pushed_count(pushed: u32) -> u32 {
    pushed & !NO_BF
}

/// The BlueFlame bound of a WQE rung now, after the WQEs counted in `pushed` (see
/// [`NO_BF`]; the count cleared): `bf_single` when it is rung alone, `bf_batch` when it
/// ends a batch (out of line: a WQE rung alone pays one compare for it, in a BlueFlame
/// mode; two in the doorbell mode).
#[inline(always)]
pub(super) fn bound_now(pushed: &mut u32, bf_single: usize, bf_batch: usize) -> usize {
    if *pushed == 0 {
        // `NO_BF` clear: `bf_single` is at least one block (said so that a one-WQEBB WQE
        // folds the size compare).
        bf_single.max(1)
    } else if *pushed == NO_BF {
        0
    } else {
        end_batch(pushed, bf_batch)
    }
}

/// The BlueFlame bound of a WQE rung after others pushed before it (`bf_batch`), the
/// pushed count cleared.
#[cold]
#[inline(never)]
fn end_batch(pushed: &mut u32, bf_batch: usize) -> usize {
    *pushed &= NO_BF;
    bf_batch
}

/// `mode` as it takes effect on a register with a BlueFlame half of `bf_size` bytes.
pub(super) fn effective_mode(mode: DoorbellMode, bf_size: usize) -> DoorbellMode {
    match (mode, bf_size) {
        (_, 0) | (DoorbellMode::Doorbell, _) => DoorbellMode::Doorbell,
        (DoorbellMode::Auto, _) => DoorbellMode::BlueFlame,
        (mode, _) => mode,
    }
}
