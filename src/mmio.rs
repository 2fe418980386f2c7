//! Device registers and memory barriers: the only code that stores to a UAR page.
//!
//! The barriers carry rdma-core's names (`util/udma_barrier.h`) so a reader who knows the C
//! driver recognises the send sequence of `post_send_db` (`shared/docs/prm-facts.md` §6.4):
//!
//! 1. WQE stores into the ring;
//! 2. [`udma_to_device_barrier`];
//! 3. doorbell record;
//! 4. [`mmio_wc_start`];
//! 5. the 8-byte doorbell or the BlueFlame copy ([`Uar`]);
//! 6. [`mmio_flush_writes`];
//! 7. toggle the BlueFlame half.
//!
//! `ring_send_doorbell` is that sequence, in one place.

use core::cell::UnsafeCell;
use core::ptr::NonNull;

use volatile::access::WriteOnly;
use volatile::VolatilePtr;

use crate::prm::{Be32, SEND_WQE_BB, UAR_PAGE_SIZE};
use crate::ring::{Block, Ring};

/// Orders the CPU's stores to host memory (WQEs, receive WQEs) before a later store that
/// tells the device about them (a doorbell record). Without it the device could read the
/// record, then stale WQE bytes.
///
/// x86-64 keeps stores in order (TSO), so only the compiler must be stopped; aarch64 needs
/// `dmb oshst` (store-store, outer shareable: the device is an observer there).
/// The aarch64 barriers here are rdma-core master's; v44 uses the stronger `dsb st` /
/// `dsb ld` (`util/udma_barrier.h`), and both are accepted upstream.
#[inline(always)]
pub fn udma_to_device_barrier() {
    #[cfg(target_arch = "aarch64")]
    // SAFETY: a barrier instruction; it touches no memory and no registers we rely on.
    unsafe {
        core::arch::asm!("dmb oshst", options(nostack, preserves_flags));
    }
    #[cfg(target_arch = "x86_64")]
    core::sync::atomic::compiler_fence(core::sync::atomic::Ordering::SeqCst);
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    core::sync::atomic::fence(core::sync::atomic::Ordering::SeqCst);
}

/// Orders the read of a CQE's owner byte before the reads of its other fields. Without it
/// the CPU may read the byte count or WQE counter from before the device wrote the entry.
///
/// x86-64: `lfence`; aarch64: `dmb oshld`. Both also stop the compiler from moving memory
/// accesses across (rdma-core's `"memory"` clobber), so the entry may then be read with
/// plain loads.
#[inline(always)]
pub fn udma_from_device_barrier() {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: `lfence` has no operands and no effect but ordering.
        unsafe { core::arch::x86_64::_mm_lfence() };
        core::sync::atomic::compiler_fence(core::sync::atomic::Ordering::SeqCst);
    }
    #[cfg(target_arch = "aarch64")]
    // SAFETY: a barrier instruction; it touches no memory and no registers we rely on.
    unsafe {
        core::arch::asm!("dmb oshld", options(nostack, preserves_flags));
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    core::sync::atomic::fence(core::sync::atomic::Ordering::SeqCst);
}

/// Pushes write-combined MMIO stores out of the CPU's WC buffers, and orders them after
/// every earlier store. Needed after a BlueFlame copy so the next copy into the other half
/// (or another CPU's copy) cannot overtake it; a DMA barrier does not drain WC buffers.
///
/// x86-64: `sfence`; aarch64: `dsb st`.
#[inline(always)]
pub fn mmio_flush_writes() {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `sfence` has no operands and no effect but ordering.
    unsafe {
        core::arch::x86_64::_mm_sfence();
    }
    #[cfg(target_arch = "aarch64")]
    // SAFETY: a barrier instruction; it touches no memory and no registers we rely on.
    unsafe {
        core::arch::asm!("dsb st", options(nostack, preserves_flags));
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    core::sync::atomic::fence(core::sync::atomic::Ordering::SeqCst);
}

/// Orders the doorbell record store before the write-combined MMIO that follows: the device
/// may act on the MMIO at once and must then see the new record. Same instruction as
/// [`mmio_flush_writes`], as in rdma-core.
#[inline(always)]
pub fn mmio_wc_start() {
    mmio_flush_writes();
}

/// A UAR page: where doorbells and BlueFlame copies are stored.
///
/// Implementations are the real mapped page ([`MappedUar`]), the device model (`sim`
/// backend) and plain memory ([`NullUar`], for CPU-cost benchmarks). The data path is
/// generic over this trait, so each is compiled in with no indirect call.
///
/// The stores are `unsafe`: a mapped page is device memory, where a store outside the page is
/// a wild write and a store to another queue's register rings that queue. The queues of this
/// crate store only to their own registers, whose offsets they check when they are built.
pub trait Uar: Send + core::fmt::Debug {
    /// One 8-byte MMIO store of `bytes` (memory order) at `offset` in the page.
    ///
    /// # Safety
    /// `offset` must be 8-byte aligned with `offset + 8 <= UAR_PAGE_SIZE`, and the register
    /// there must be the caller's (a doorbell of the caller's queue).
    unsafe fn write64(&self, offset: usize, bytes: [u8; 8]);
    /// One 64-byte write-combined block at `offset` (a BlueFlame chunk), as eight 8-byte
    /// stores in address order.
    ///
    /// # Safety
    /// `offset` must be 64-byte aligned with `offset + 64 <= UAR_PAGE_SIZE`, and the register
    /// there must be the caller's, as for [`Uar::write64`].
    unsafe fn write_block(&self, offset: usize, block: &[u64; 8]);
    /// Called by [`crate::cq::CompletionQueue::poll`] when it found the CQ empty: a device
    /// that runs in software (the `sim` backend's model) does its deferred work here (RNR
    /// and transport retries, held-back CQEs), so an ordinary polling loop makes progress
    /// without the application knowing the backend. Real hardware and the null device: no
    /// operation (the default), compiled away.
    #[inline(always)]
    fn idle(&self) {}
}

/// A UAR page mapped from the device (`verbs` backend).
#[derive(Debug)]
pub struct MappedUar {
    base: NonNull<u8>,
}

// SAFETY: the page is device memory with no thread affinity; each value is used by one
// `&mut`-exclusive queue. A register several QPs share gets stores from several values; the
// verbs backend keeps those to single 8-byte stores (`backend/verbs/bfreg.rs`).
unsafe impl Send for MappedUar {}

impl MappedUar {
    /// Wraps a mapped UAR page.
    ///
    /// # Safety
    /// `base` must be the start of a mapped 4 KiB UAR page that stays mapped for the life of
    /// the value, and the registers written through it must belong to the queues using it.
    pub unsafe fn new(base: NonNull<u8>) -> Self {
        MappedUar { base }
    }
}

impl Uar for MappedUar {
    #[inline(always)]
    unsafe fn write64(&self, offset: usize, bytes: [u8; 8]) {
        debug_assert!(offset % 8 == 0 && offset + 8 <= UAR_PAGE_SIZE);
        // SAFETY: the offset is 8-byte aligned inside the mapped page (this function's
        // contract, asserted in debug builds); one volatile 64-bit store is exactly the
        // single MMIO write the device expects (never split into two 32-bit stores).
        unsafe {
            VolatilePtr::new_restricted(WriteOnly, self.base.add(offset).cast::<u64>())
                .write(u64::from_ne_bytes(bytes));
        }
    }

    #[inline(always)]
    unsafe fn write_block(&self, offset: usize, block: &[u64; 8]) {
        debug_assert!(offset % SEND_WQE_BB == 0 && offset + SEND_WQE_BB <= UAR_PAGE_SIZE);
        // SAFETY: as in `write64`; the block is 64-byte aligned inside the page (this
        // function's contract). The stores go in address order and the write-combining
        // buffer merges them into one 64-byte TLP (rdma-core `mmio_memcpy_x64`).
        unsafe { store_block(self.base.add(offset), block) }
    }
}

/// Stores a 64-byte block at `dst` in address order with the widest plain stores the
/// baseline target has: four 16-byte SSE2 stores on x86-64 (as UCX's BlueFlame copy;
/// rdma-core's `mmio_memcpy_x64` uses eight 8-byte stores there, one NEON `vst4q` on
/// aarch64: the write-combining buffer merges either into one 64-byte write), eight 8-byte
/// stores elsewhere. Volatile: the target is a device
/// register (or stands for one) and each store must happen exactly once. Never `memcpy`,
/// which may use any access size or order.
///
/// # Safety
/// `dst` must be valid for 64 bytes of writes and 16-byte aligned.
#[inline(always)]
unsafe fn store_block(dst: NonNull<u8>, block: &[u64; 8]) {
    #[cfg(target_arch = "x86_64")]
    {
        use core::arch::x86_64::__m128i;
        let src: *const __m128i = block.as_ptr().cast();
        let dst: NonNull<__m128i> = dst.cast();
        for i in 0..4 {
            // SAFETY: `src` is 64 readable bytes (unaligned load); `dst` is 64 writable,
            // 16-aligned bytes (caller's contract).
            unsafe {
                VolatilePtr::new_restricted(WriteOnly, dst.add(i))
                    .write(src.add(i).read_unaligned())
            }
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    for (i, word) in block.iter().enumerate() {
        // SAFETY: 8-byte slot `i` of the 64 writable, aligned bytes (caller's contract).
        unsafe { VolatilePtr::new_restricted(WriteOnly, dst.cast::<u64>().add(i)).write(*word) }
    }
}

/// A write-combining mapping of device memory (MEMIC, [`crate::dm`]): every store is an
/// MMIO write the device receives. Implementations are the real mapping ([`MappedDm`]) and
/// the device model (`sim` backend).
pub trait DmWindow: Send + Sync + core::fmt::Debug {
    /// One 8-byte store of `bytes` (memory order) at `offset` (8-byte aligned).
    fn write64(&self, offset: usize, bytes: [u8; 8]);
    /// One 64-byte aligned line at `offset` as eight 8-byte stores in address order, which
    /// the write-combining buffer merges into one 64-byte write (as for BlueFlame).
    fn write_line(&self, offset: usize, line: &[u64; 8]);
}

/// Device memory mapped from the device (`verbs` backend: the `buf` of
/// `mlx5dv_init_obj(MLX5DV_OBJ_DM)`, a write-combining mapping of the MEMIC BAR pages).
#[derive(Debug)]
pub struct MappedDm {
    base: NonNull<u8>,
    len: usize,
}

// SAFETY: the mapping is device memory with no thread affinity; stores through it are single
// volatile accesses inside its bounds (checked), whichever thread makes them.
unsafe impl Send for MappedDm {}
// SAFETY: as for `Send`: `&self` methods only store, each store stays inside the mapping.
unsafe impl Sync for MappedDm {}

impl MappedDm {
    /// Wraps a mapping of `len` bytes of device memory.
    ///
    /// # Safety
    /// `base` must be 8-byte aligned and the start of a mapping of `len` bytes of device
    /// memory that stays mapped for the life of the value.
    pub unsafe fn new(base: NonNull<u8>, len: usize) -> Self {
        MappedDm { base, len }
    }

    /// The store of the 8 bytes at `offset`, bounds and alignment checked (a store outside
    /// the mapping would be a wild write: always checked, a compare next to an MMIO write).
    #[inline(always)]
    fn store(&self, offset: usize, word: u64) {
        assert!(offset % 8 == 0 && offset.checked_add(8).is_some_and(|e| e <= self.len));
        // SAFETY: 8 aligned bytes inside the mapping (asserted above, contract of `new`);
        // one volatile 64-bit store is one MMIO write of the device memory.
        unsafe {
            VolatilePtr::new_restricted(WriteOnly, self.base.add(offset).cast::<u64>()).write(word)
        }
    }
}

impl DmWindow for MappedDm {
    fn write64(&self, offset: usize, bytes: [u8; 8]) {
        self.store(offset, u64::from_ne_bytes(bytes));
    }

    fn write_line(&self, offset: usize, line: &[u64; 8]) {
        assert!(offset % SEND_WQE_BB == 0);
        for (i, word) in line.iter().enumerate() {
            self.store(offset + 8 * i, *word);
        }
    }
}

/// Plain memory standing in for a UAR page: the "null device" of the CPU-cost benchmarks.
/// Stores are volatile, so they cost what real MMIO stores cost the CPU (minus the bus).
#[derive(Debug)]
pub struct NullUar {
    page: Box<NullPage>,
}

/// The memory of a [`NullUar`], aligned like a real page's BlueFlame registers. In a cell:
/// the stores go through `&self`, as a mapped page's do (which makes `NullUar` not `Sync`).
#[derive(Debug)]
#[repr(C, align(64))]
struct NullPage(UnsafeCell<[u64; UAR_PAGE_SIZE / 8]>);

impl Default for NullUar {
    fn default() -> Self {
        NullUar {
            page: Box::new(NullPage(UnsafeCell::new([0; UAR_PAGE_SIZE / 8]))),
        }
    }
}

impl NullUar {
    /// The 8 bytes last stored at `offset`.
    ///
    /// # Panics
    /// If `offset` is not an aligned word of the page.
    pub fn read64(&self, offset: usize) -> [u8; 8] {
        assert!(offset % 8 == 0 && offset < UAR_PAGE_SIZE);
        // SAFETY: an aligned word of the page (asserted); no store is in flight (`NullUar` is
        // not `Sync`: its stores and this read run on one thread, one after the other).
        unsafe { self.slot(offset).read_volatile() }.to_ne_bytes()
    }
}

impl NullUar {
    /// The 8-byte slot at `offset` (in the page: the contract of [`Uar::write64`] and
    /// [`Uar::write_block`], asserted in debug builds; a mapped page has no mask either, so
    /// the stores cost what they cost there).
    ///
    /// # Safety
    /// `offset` must be 8-byte aligned and below `UAR_PAGE_SIZE`.
    #[inline(always)]
    unsafe fn slot(&self, offset: usize) -> NonNull<u64> {
        debug_assert!(offset % 8 == 0 && offset < UAR_PAGE_SIZE);
        // Writable through `&self`: the page is in a cell.
        let page = self.page.0.get().cast::<u8>();
        // SAFETY: an aligned word of the page (this function's contract), so not null. Added
        // in bytes: an index in words would mask the offset's low bits off.
        unsafe { NonNull::new_unchecked(page.add(offset)).cast() }
    }
}

impl Uar for NullUar {
    #[inline(always)]
    unsafe fn write64(&self, offset: usize, bytes: [u8; 8]) {
        // The page is never read while a store is in flight (`NullUar` is not `Sync`); the
        // volatile store only keeps the compiler from eliding it.
        // SAFETY: `slot` points into our own boxed page (this function's contract).
        unsafe {
            VolatilePtr::new_restricted(WriteOnly, self.slot(offset))
                .write(u64::from_ne_bytes(bytes))
        }
    }

    #[inline(always)]
    unsafe fn write_block(&self, offset: usize, block: &[u64; 8]) {
        debug_assert!(offset % SEND_WQE_BB == 0 && offset + SEND_WQE_BB <= UAR_PAGE_SIZE);
        // SAFETY: 64 bytes from a 64-aligned offset inside our boxed, 64-aligned page (this
        // function's contract); as in `write64` for the rest.
        unsafe { store_block(self.slot(offset).cast(), block) }
    }
}

/// A doorbell record word in host memory (read by the device by DMA).
#[derive(Debug)]
pub(crate) struct DbRec {
    word: NonNull<Be32>,
}

// SAFETY: a pointer to a record word this queue alone writes.
unsafe impl Send for DbRec {}

impl DbRec {
    /// # Safety
    /// `word` must point to a 4-byte-aligned doorbell record word that stays valid for the
    /// life of the value and is written by no one else.
    pub(crate) unsafe fn new(word: NonNull<Be32>) -> Self {
        DbRec { word }
    }

    #[inline(always)]
    pub(crate) fn write(&self, value: Be32) {
        // Volatile: the reader is the device, which the compiler cannot see. One 32-bit
        // store of the wire bytes (a `Be32` is a byte array; storing it as one would go
        // through the stack).
        // SAFETY: valid, 4-byte aligned and exclusively ours (constructor contract).
        unsafe {
            VolatilePtr::new(self.word.cast::<u32>()).write(u32::from_ne_bytes(value.to_bytes()))
        }
    }

    #[inline(always)]
    pub(crate) fn read(&self) -> Be32 {
        // SAFETY: as in `write`.
        unsafe { VolatilePtr::new(self.word).read() }
    }
}

/// A QP's doorbell / BlueFlame register: its base offset in the UAR page, the BlueFlame half
/// size (0: no BlueFlame) and the half in use (what `mlx5dv_qp.bf` leaves to the user).
///
/// Invariant (checked by [`BfReg::new`]): every store [`ring_send_doorbell`] makes is inside
/// the page, in either half: the 8-byte doorbell at `offset`, 8-byte aligned, and with
/// BlueFlame a copy of at most `size` bytes (whole 64-byte blocks) from either half's start,
/// 64-byte aligned.
#[derive(Debug)]
pub(crate) struct BfReg<U> {
    pub(crate) uar: U,
    offset: usize,
    size: usize,
}

impl<U> BfReg<U> {
    /// The register at `offset` of `uar`, with BlueFlame halves of `size` bytes (0: none).
    ///
    /// # Panics
    /// If a store to the register would leave the page or be misaligned (a backend bug:
    /// libmlx5 and the model hand over registers at 0x800 and 0x900 with halves of 256
    /// bytes).
    pub(crate) fn new(uar: U, offset: usize, size: usize) -> Self {
        let fits = |at: usize| {
            at.checked_add(size.max(8))
                .is_some_and(|end| end <= UAR_PAGE_SIZE)
        };
        let ok = if size == 0 {
            offset % 8 == 0 && fits(offset)
        } else {
            offset % SEND_WQE_BB == 0
                && size % SEND_WQE_BB == 0
                && fits(offset)
                && fits(offset ^ size)
        };
        assert!(ok, "doorbell register at {offset:#x} with BlueFlame halves of {size} bytes leaves the UAR page");
        BfReg { uar, offset, size }
    }

    /// The register's offset in the page now (the half the next copy takes).
    #[inline(always)]
    pub(crate) fn offset(&self) -> usize {
        self.offset
    }

    /// The BlueFlame half's size in bytes (0: no BlueFlame).
    #[inline(always)]
    pub(crate) fn size(&self) -> usize {
        self.size
    }
}

/// Rings the send doorbell: the exact sequence of design §4 / prm-facts §6.4, steps 2–7.
/// `last` is the last WQE: its ring offset and its first block. `bf_chunks` `None`: the
/// 8-byte doorbell, i.e. the first 8 bytes of that WQE; `Some(n)`: BlueFlame, the WQE
/// copied from the ring in `n` (at least 1) 64-byte blocks.
#[inline(always)]
pub(crate) fn ring_send_doorbell<U: Uar>(
    bf: &mut BfReg<U>,
    dbrec: &DbRec,
    pi: u32,
    ring: &Ring,
    last: (usize, Block<'_>),
    bf_chunks: Option<usize>,
) {
    let (wqe_offset, first) = last;
    // Read before the barriers (which make the compiler reload everything after them); the
    // WQE itself is read after them: a load of bytes just stored, right after them, would
    // stall on store forwarding. Loads only: the stores keep their order.
    let register = bf.offset;
    udma_to_device_barrier();
    dbrec.write(crate::prm::qp_counter(pi));
    mmio_wc_start();
    if let Some(bf_chunks) = bf_chunks {
        debug_assert!(bf_chunks * SEND_WQE_BB <= bf.size);
        // SAFETY: the register's half is in the page and 64-byte aligned (`BfReg`'s
        // invariant); the callers copy at most its size (`bf_chunks` blocks of at most
        // `bf_single` / `bf_batch`, `size / 64`), so every block is inside it.
        unsafe { bf.uar.write_block(register, &first.read()) };
        for k in 1..bf_chunks {
            let block = ring.read_block(wqe_offset + k * SEND_WQE_BB);
            // SAFETY: as for the first block.
            unsafe { bf.uar.write_block(register + k * SEND_WQE_BB, &block) };
        }
    } else {
        // SAFETY: the register is in the page and 8-byte aligned (`BfReg`'s invariant).
        unsafe { bf.uar.write64(register, first.read()[0].to_ne_bytes()) };
    }
    mmio_flush_writes();
    bf.offset ^= bf.size;
}

/// Arms a CQ (prm-facts §7.8): record word 1, then one 64-bit store to `UAR + 0x20`.
#[inline]
pub(crate) fn ring_cq_arm<U: Uar>(uar: &U, arm_dbrec: &DbRec, arm: &crate::prm::Arm) {
    arm_dbrec.write(arm.dbrec_word());
    mmio_wc_start();
    // SAFETY: the CQ doorbell (0x20) of the caller's UAR page: aligned, in the page.
    unsafe { uar.write64(crate::prm::CQ_DOORBELL_OFFSET, arm.doorbell_bytes()) };
    mmio_flush_writes();
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prm::{Arm, ArmCmd};

    /// A page of plain memory, aligned as a UAR page's BlueFlame registers.
    #[repr(C, align(64))]
    struct Page([u8; UAR_PAGE_SIZE]);

    fn block(seed: u8) -> [u64; 8] {
        core::array::from_fn(|i| u64::from_ne_bytes([seed + i as u8; 8]))
    }

    #[test]
    fn mapped_uar_stores_land_at_their_offsets() {
        let mut page = Box::new(Page([0; UAR_PAGE_SIZE]));
        // SAFETY: a 4 KiB page of our own, alive for the whole test; nothing else writes it.
        let uar = unsafe { MappedUar::new(NonNull::from(&mut page.0).cast()) };
        // SAFETY: an aligned register inside the test's page.
        unsafe { uar.write64(0x808, [1, 2, 3, 4, 5, 6, 7, 8]) };
        // SAFETY: an aligned register inside the test's page.
        unsafe { uar.write_block(0x900, &block(0x10)) };
        assert_eq!(page.0[0x808..0x810], [1, 2, 3, 4, 5, 6, 7, 8]);
        for (i, chunk) in page.0[0x900..0x940].chunks(8).enumerate() {
            assert_eq!(chunk, [0x10 + i as u8; 8]);
        }
        let written = 0x808..0x810;
        let blocked = 0x900..0x940;
        assert!(page
            .0
            .iter()
            .enumerate()
            .all(|(i, b)| *b == 0 || written.contains(&i) || blocked.contains(&i)));
    }

    #[test]
    fn mapped_dm_stores_land_at_their_offsets_and_stay_inside() {
        let mut mem = Box::new(Page([0; UAR_PAGE_SIZE]));
        // SAFETY: 256 bytes of our own page, alive for the whole test.
        let dm = unsafe { MappedDm::new(NonNull::from(&mut mem.0).cast(), 256) };
        dm.write64(8, [9; 8]);
        dm.write_line(128, &block(0x20));
        assert_eq!(mem.0[..8], [0; 8]);
        assert_eq!(mem.0[8..16], [9; 8]);
        assert!(mem.0[16..128].iter().all(|b| *b == 0));
        for (i, chunk) in mem.0[128..192].chunks(8).enumerate() {
            assert_eq!(chunk, [0x20 + i as u8; 8]);
        }
        assert!(mem.0[192..].iter().all(|b| *b == 0));
        let past_end = std::panic::catch_unwind(|| dm.write64(256, [1; 8]));
        assert!(past_end.is_err());
        let line_past_end = std::panic::catch_unwind(|| dm.write_line(256, &block(0)));
        assert!(line_past_end.is_err());
        assert!(mem.0[256..].iter().all(|b| *b == 0));
    }

    /// Every store `ring_send_doorbell` makes stays in the page, in either half, or the
    /// register is refused when the queue is built: what makes its `unsafe` stores sound.
    #[test]
    fn a_register_whose_stores_would_leave_the_page_is_refused() {
        let new = |offset, size| {
            std::panic::catch_unwind(|| BfReg::new(NullUar::default(), offset, size)).is_ok()
        };
        // libmlx5's registers: four per page from 0x800, two halves of 256 bytes each.
        assert!([0x800, 0x900, 0xa00, 0xe00, 0xf00]
            .iter()
            .all(|&at| new(at, 256)));
        assert!(
            new(0xff8, 0),
            "8-byte doorbell only, at the page's last word"
        );
        assert!(new(0xfc0, 64));
        for (offset, size) in [
            (0xffc, 0),     // the doorbell crosses the page's end
            (0x804, 0),     // not 8-byte aligned
            (0x1000, 0),    // past the page
            (0xf40, 256),   // the half runs past the page's end
            (0xc00, 0x800), // the other half (0x400) fits, this one does not
            (0x808, 256),   // a block not 64-byte aligned
            (0x800, 100),   // halves not whole blocks: the toggle misaligns the copy
            (usize::MAX - 7, 0),
        ] {
            assert!(!new(offset, size), "{offset:#x}, {size}");
        }
    }

    #[test]
    fn null_uar_keeps_each_slot() {
        let uar = NullUar::default();
        // SAFETY: aligned registers inside the page.
        unsafe {
            uar.write64(0x18, [7; 8]);
            uar.write_block(0x40, &block(0x30));
        }
        assert_eq!(uar.read64(0x18), [7; 8]);
        assert_eq!(uar.read64(0x10), [0; 8]);
        assert_eq!(uar.read64(0x20), [0; 8]);
        assert_eq!(uar.read64(0x48), [0x31; 8]);
        assert_eq!(uar.read64(0x78), [0x37; 8]);
    }

    #[test]
    fn arming_writes_the_record_then_the_doorbell() {
        let uar = NullUar::default();
        let mut word = Be32::new(0);
        // SAFETY: a local record word, alive and written only through `dbrec` below.
        let dbrec = unsafe { DbRec::new(NonNull::from(&mut word)) };
        let arm = Arm {
            sn: 2,
            cmd: ArmCmd::NextCqe,
            ci: 0x33,
            cqn: 0x45,
        };
        ring_cq_arm(&uar, &dbrec, &arm);
        assert_eq!(dbrec.read().to_bytes(), [0x20, 0, 0, 0x33]);
        assert_eq!(uar.read64(0x20), [0x20, 0, 0, 0x33, 0, 0, 0, 0x45]);
    }
}
