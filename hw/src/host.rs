//! The only code that touches host memory through raw addresses (what DMA does).
//!
//! Every caller has checked the range against a registered object (ring, doorbell record,
//! CQ buffer, or a memory region after key, bounds and rights checks). The creator of
//! that object promised, in the `# Safety` contract of the creating `unsafe fn`, that the
//! memory stays valid until the object is destroyed. The driver may access the same memory
//! concurrently (it polls CQEs while the model writes them), as with real DMA: reads and
//! writes are volatile, and the CQE ownership byte is published with a release store.
//!
//! **Address spaces.** Bits 48..63 of a host address name the address space it lies in, as
//! a PCIe PASID names the process whose memory a DMA reaches. Space 0 is this process: the
//! address is a pointer, as in every in-process use of the model. Any other space belongs to
//! the [`RemoteMemory`] installed with [`set_remote_memory`] (the emulator's fabric server
//! reaches its programs' memory that way). A queue's space is that of its ring, and the
//! addresses a WQE carries take the space of the queue that reads them ([`in_space`]).

use std::sync::atomic::{AtomicU32, AtomicU64, AtomicU8, Ordering};
use std::sync::OnceLock;

/// The lowest bit of a host address's space number.
pub const SPACE_SHIFT: u32 = 48;
pub(crate) const SPACE_MASK: u64 = !0 << SPACE_SHIFT;
/// The space no object is ever created in: where a WQE's address that already had space
/// bits is sent, so that no key or ring covers it (a 64-bit address beyond every region, as
/// on hardware).
const NOWHERE: u16 = 0xffff;

/// The memory of address spaces other than this process's (see the module docs): what a
/// server standing in for the kernel installs so that the model's DMA reaches its programs.
///
/// A range that cannot be reached (its process has gone) reads as zeros and takes no
/// writes: the server tears the objects of a process down when it leaves.
pub trait RemoteMemory: Send + Sync {
    /// Copy `dst.len()` bytes from `addr` of space `space`.
    fn read(&self, space: u16, addr: u64, dst: &mut [u8]);
    /// Copy `src` to `addr` of space `space`.
    fn write(&self, space: u16, addr: u64, src: &[u8]);
    /// Whether every page of `[addr, addr + len)` of space `space` is mapped (what an
    /// on-demand key's fault needs).
    fn mapped(&self, space: u16, addr: u64, len: u64) -> bool;
}

static REMOTE: OnceLock<&'static dyn RemoteMemory> = OnceLock::new();

/// Install the memory of the spaces other than 0, once per process. Returns `false` (and
/// changes nothing) if one was installed before.
pub fn set_remote_memory(memory: &'static dyn RemoteMemory) -> bool {
    REMOTE.set(memory).is_ok()
}

/// Address `addr` (below 2^48) of space `space`: how an object in another process's memory
/// is named to the model (rings, doorbell records, CQ buffers, memory regions). Space 0 is
/// this process, whose addresses are used as they are.
pub fn in_space(space: u16, addr: u64) -> u64 {
    debug_assert_eq!(addr & SPACE_MASK, 0, "a process address has no space bits");
    u64::from(space) << SPACE_SHIFT | addr & !SPACE_MASK
}

/// `addr`, found in a WQE or a received request, in the space of the queue whose ring (or
/// buffer) address is `of`. An address that already carries space bits names nothing: it
/// goes to the space no object is in, unless the queue is in this process's space, where it
/// stays as it was (no registered range reaches that high).
#[inline(always)]
pub(crate) fn in_space_of(of: u64, addr: u64) -> u64 {
    if addr & SPACE_MASK == 0 {
        addr | of & SPACE_MASK
    } else {
        nowhere(of, addr)
    }
}

#[cold]
#[inline(never)]
fn nowhere(of: u64, addr: u64) -> u64 {
    match of & SPACE_MASK {
        0 => addr,
        _ => in_space(NOWHERE, addr & !SPACE_MASK),
    }
}

/// The space of a host address, if it is not this process's.
#[inline(always)]
fn remote(addr: u64) -> Option<u16> {
    match addr >> SPACE_SHIFT {
        0 => None,
        space => Some(space as u16),
    }
}

#[cold]
#[inline(never)]
fn remote_memory() -> &'static dyn RemoteMemory {
    *REMOTE
        .get()
        .expect("an address of another space reached the model, and no RemoteMemory is set")
}

#[cold]
#[inline(never)]
fn remote_read(src: u64, dst: &mut [u8]) {
    remote_memory().read((src >> SPACE_SHIFT) as u16, src & !SPACE_MASK, dst);
}

#[cold]
#[inline(never)]
fn remote_write(dst: u64, src: &[u8]) {
    remote_memory().write((dst >> SPACE_SHIFT) as u16, dst & !SPACE_MASK, src);
}

/// Copy `dst.len()` bytes from host address `src`.
#[inline]
pub(crate) fn read(src: u64, dst: &mut [u8]) {
    if remote(src).is_some() {
        return remote_read(src, dst);
    }
    // SAFETY: `src..src+dst.len()` lies in a registered object (module contract) that does
    // not overlap the model's own buffer `dst`.
    unsafe { std::ptr::copy_nonoverlapping(src as *const u8, dst.as_mut_ptr(), dst.len()) }
}

/// Copy `N` bytes from host address `src` (a constant size: no call to `memcpy`).
#[inline]
pub(crate) fn read_array<const N: usize>(src: u64, dst: &mut [u8; N]) {
    if remote(src).is_some() {
        return remote_read(src, dst);
    }
    // SAFETY: as `read`: `src..src+N` lies in a registered object (module contract) that
    // does not overlap the model's own buffer `dst`.
    unsafe { std::ptr::copy_nonoverlapping(src as *const u8, dst.as_mut_ptr(), N) }
}

/// Copy `src` to host address `dst`.
#[inline]
pub(crate) fn write(dst: u64, src: &[u8]) {
    if remote(dst).is_some() {
        return remote_write(dst, src);
    }
    // SAFETY: `dst..dst+src.len()` lies in a registered object (module contract) that does
    // not overlap the model's own buffer `src`.
    unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), dst as *mut u8, src.len()) }
}

/// Copy `len` bytes between two host ranges (which may overlap: loopback).
#[inline]
pub(crate) fn copy(dst: u64, src: u64, len: usize) {
    if (dst | src) & SPACE_MASK != 0 {
        return copy_through(dst, src, len);
    }
    // SAFETY: both ranges lie in registered objects (module contract); `ptr::copy` allows
    // overlap.
    unsafe { std::ptr::copy(src as *const u8, dst as *mut u8, len) }
}

/// A copy with an end in another space, through the model's own buffer (a whole read
/// before the write, so overlapping ranges copy as `ptr::copy` does).
#[cold]
#[inline(never)]
fn copy_through(dst: u64, src: u64, len: usize) {
    let mut bounce = vec![0u8; len];
    read(src, &mut bounce);
    write(dst, &bounce);
}

/// Read a big-endian 32-bit word (a doorbell record).
#[inline]
pub(crate) fn read_be32(addr: u64) -> u32 {
    if remote(addr).is_some() {
        let mut word = [0u8; 4];
        remote_read(addr, &mut word);
        return u32::from_be_bytes(word);
    }
    // SAFETY: `addr` is a 4-byte aligned doorbell record checked at object creation; the
    // driver updates it concurrently, hence the volatile read.
    u32::from_be(unsafe { std::ptr::read_volatile(addr as *const u32) })
}

/// Write a 64-byte CQE at `addr`: bytes 0..63 first, then `op_own` (byte 63) with a
/// release store, so a poller that sees the new owner bit sees the whole entry. In another
/// space: two writes in that order.
#[inline]
pub(crate) fn write_cqe(addr: u64, cqe: &[u8; 64]) {
    if remote(addr).is_some() {
        remote_write(addr, &cqe[..63]);
        return remote_write(addr + 63, &cqe[63..]);
    }
    // SAFETY: `addr..addr+64` is a CQE slot of a registered CQ buffer (module contract).
    unsafe { std::ptr::copy_nonoverlapping(cqe.as_ptr(), addr as *mut u8, 63) };
    // SAFETY: the byte lies in the same slot; `AtomicU8` has alignment 1.
    let own = unsafe { &*((addr + 63) as *const AtomicU8) };
    own.store(cqe[63], Ordering::Release);
}

/// The host-order 4- or 8-byte word at `addr` (aligned to `size`, checked by the
/// caller), read as one access: a DMA read of an atomic's operand.
#[inline]
pub(crate) fn load(addr: u64, size: u8) -> u64 {
    if remote(addr).is_some() {
        let mut word = [0u8; 8];
        remote_read(addr, &mut word[..usize::from(size)]);
        return u64::from_ne_bytes(word);
    }
    match size {
        8 => cell64(addr).load(Ordering::Acquire),
        _ => cell32(addr).load(Ordering::Acquire).into(),
    }
}

/// Store the low `size` bytes of `v` (4 or 8) in host order at `addr` (aligned to `size`)
/// as one access: a DMA write of an atomic's result, or a CPU store.
#[inline]
pub(crate) fn store(addr: u64, size: u8, v: u64) {
    if remote(addr).is_some() {
        return remote_write(addr, &v.to_ne_bytes()[..usize::from(size)]);
    }
    match size {
        8 => cell64(addr).store(v, Ordering::Release),
        _ => cell32(addr).store(v as u32, Ordering::Release),
    }
}

/// Atomically apply `f` to the host-order 4- or 8-byte word at `addr` (aligned to
/// `size`); returns the original value (a PCIe AtomicOp). In another space it is a read
/// then a write, atomic against the model but not against that process's CPU.
pub(crate) fn atomic_update(addr: u64, size: u8, f: impl Fn(u64) -> u64) -> u64 {
    if remote(addr).is_some() {
        let old = load(addr, size);
        store(addr, size, f(old));
        return old;
    }
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
    if let Some(space) = remote(addr) {
        return remote_memory().mapped(space, addr & !SPACE_MASK, len);
    }
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
