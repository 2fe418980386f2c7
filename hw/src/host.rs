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

/// Copy `N` bytes from host address `src` (a constant size: no call to `memcpy`).
#[inline]
pub(crate) fn read_array<const N: usize>(src: u64, dst: &mut [u8; N]) {
    // SAFETY: as `read`: `src..src+N` lies in a registered object (module contract) that
    // does not overlap the model's own buffer `dst`.
    unsafe { std::ptr::copy_nonoverlapping(src as *const u8, dst.as_mut_ptr(), N) }
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

/// The host-order 4- or 8-byte word at `addr` (aligned to `size`, checked by the
/// caller), read as one access: a DMA read of an atomic's operand.
pub(crate) fn load(addr: u64, size: u8) -> u64 {
    match size {
        8 => cell64(addr).load(Ordering::Acquire),
        _ => cell32(addr).load(Ordering::Acquire).into(),
    }
}

/// Store the low `size` bytes of `v` (4 or 8) in host order at `addr` (aligned to `size`)
/// as one access: a DMA write of an atomic's result, or a CPU store.
pub(crate) fn store(addr: u64, size: u8, v: u64) {
    match size {
        8 => cell64(addr).store(v, Ordering::Release),
        _ => cell32(addr).store(v as u32, Ordering::Release),
    }
}

/// Atomically apply `f` to the host-order 4- or 8-byte word at `addr` (aligned to
/// `size`); returns the original value (a PCIe AtomicOp).
pub(crate) fn atomic_update(addr: u64, size: u8, f: impl Fn(u64) -> u64) -> u64 {
    let (rmw, read) = (Ordering::AcqRel, Ordering::Acquire);
    // `fetch_update` only fails when the closure returns `None`, which it never does.
    match size {
        8 => cell64(addr)
            .fetch_update(rmw, read, |old| Some(f(old)))
            .unwrap_or_else(|v| v),
        _ => cell32(addr)
            .fetch_update(rmw, read, |old| Some(f(old.into()) as u32))
            .map_or_else(u64::from, u64::from),
    }
}

fn cell64<'a>(addr: u64) -> &'a AtomicU64 {
    // SAFETY: `addr` is 8-byte aligned and inside a registered MR with atomic rights
    // (checked by the caller), valid until the MR is deregistered (module contract); the
    // CPU may access the word concurrently, hence atomic accesses.
    unsafe { &*(addr as *const AtomicU64) }
}

fn cell32<'a>(addr: u64) -> &'a AtomicU32 {
    // SAFETY: as `cell64`, for a 4-byte aligned word.
    unsafe { &*(addr as *const AtomicU32) }
}

/// Whether every page of `[addr, addr + len)` is mapped in the process (`mincore` fails
/// with `ENOMEM` on a hole): what the kernel's fault handler needs to resolve an on-demand
/// page. Reads no memory.
pub(crate) fn mapped(addr: u64, len: u64) -> bool {
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(1) as u64;
    let start = addr & !(page - 1);
    let Some(end) = addr
        .checked_add(len)
        .and_then(|e| e.checked_next_multiple_of(page))
    else {
        return false;
    };
    let mut residency = vec![0u8; ((end - start) / page) as usize];
    // SAFETY: mincore only reads the page tables of the range and writes one byte per page
    // into `residency`, which has exactly that many.
    unsafe {
        libc::mincore(
            start as *mut libc::c_void,
            (end - start) as usize,
            residency.as_mut_ptr(),
        ) == 0
    }
}
