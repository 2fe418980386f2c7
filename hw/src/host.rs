//! The only code that touches host memory through raw addresses (what DMA does).
//!
//! Every caller has checked the range against a registered object (ring, doorbell record,
//! CQ buffer, or a memory region after key, bounds and rights checks). The creator of
//! that object promised, in the `# Safety` contract of the creating `unsafe fn`, that the
//! memory stays valid until the object is destroyed. The driver may access the same memory
//! concurrently (it polls CQEs while the model writes them), as with real DMA: reads and
//! writes are volatile, and the CQE ownership byte is published with a release store.

use std::sync::atomic::{AtomicU32, AtomicU64, AtomicU8, Ordering};

/// Copy `dst.len()` bytes from host address `src`.
pub(crate) fn read(src: u64, dst: &mut [u8]) {
    // SAFETY: `src..src+dst.len()` lies in a registered object (module contract) that does
    // not overlap the model's own buffer `dst`.
    unsafe { std::ptr::copy_nonoverlapping(src as *const u8, dst.as_mut_ptr(), dst.len()) }
}

/// Copy `src` to host address `dst`.
pub(crate) fn write(dst: u64, src: &[u8]) {
    // SAFETY: `dst..dst+src.len()` lies in a registered object (module contract) that does
    // not overlap the model's own buffer `src`.
    unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), dst as *mut u8, src.len()) }
}

/// Copy `len` bytes between two host ranges (which may overlap: loopback).
pub(crate) fn copy(dst: u64, src: u64, len: usize) {
    // SAFETY: both ranges lie in registered objects (module contract); `ptr::copy` allows
    // overlap.
    unsafe { std::ptr::copy(src as *const u8, dst as *mut u8, len) }
}

/// Read a big-endian 32-bit word (a doorbell record).
pub(crate) fn read_be32(addr: u64) -> u32 {
    // SAFETY: `addr` is a 4-byte aligned doorbell record checked at object creation; the
    // driver updates it concurrently, hence the volatile read.
    u32::from_be(unsafe { std::ptr::read_volatile(addr as *const u32) })
}

/// Write a 64-byte CQE at `addr`: bytes 0..63 first, then `op_own` (byte 63) with a
/// release store, so a poller that sees the new owner bit sees the whole entry.
pub(crate) fn write_cqe(addr: u64, cqe: &[u8; 64]) {
    // SAFETY: `addr..addr+64` is a CQE slot of a registered CQ buffer (module contract).
    unsafe { std::ptr::copy_nonoverlapping(cqe.as_ptr(), addr as *mut u8, 63) };
    // SAFETY: the byte lies in the same slot; `AtomicU8` has alignment 1.
    let own = unsafe { &*((addr + 63) as *const AtomicU8) };
    own.store(cqe[63], Ordering::Release);
}

/// Atomically apply `f` to the host-endian 8-byte word at `addr` (8-byte aligned,
/// checked by the caller); returns the original value.
pub(crate) fn atomic_update64(addr: u64, f: impl Fn(u64) -> u64) -> u64 {
    // SAFETY: `addr` is 8-byte aligned and inside a registered MR with atomic rights.
    let cell = unsafe { &*(addr as *const AtomicU64) };
    let mut old = cell.load(Ordering::Acquire);
    loop {
        match cell.compare_exchange_weak(old, f(old), Ordering::AcqRel, Ordering::Acquire) {
            Ok(v) => return v,
            Err(v) => old = v,
        }
    }
}

/// As [`atomic_update64`] for a 4-byte aligned 4-byte word.
pub(crate) fn atomic_update32(addr: u64, f: impl Fn(u32) -> u32) -> u32 {
    // SAFETY: `addr` is 4-byte aligned and inside a registered MR with atomic rights.
    let cell = unsafe { &*(addr as *const AtomicU32) };
    let mut old = cell.load(Ordering::Acquire);
    loop {
        match cell.compare_exchange_weak(old, f(old), Ordering::AcqRel, Ordering::Acquire) {
            Ok(v) => return v,
            Err(v) => old = v,
        }
    }
}
