//! Raw queue memory shared with the device: send and receive rings and the CQ buffer.
//!
//! Offsets are byte offsets that wrap at the ring size (a power of two), so a WQE that runs
//! past the ring end continues at the start without any special case in the callers: this
//! is rdma-core's "split at `qend`" behaviour, and the device reads BB *k* of a WQE at slot
//! `(start + k) mod wqe_cnt` the same way.

use core::ptr::NonNull;
use core::sync::atomic::{AtomicU8, Ordering};

use volatile::access::ReadOnly;
use volatile::VolatilePtr;

use crate::prm::{Cqe64, ErrCqe, MiniCqe, CQE_SIZE, DS, MINI_CQES_PER_ARRAY, SEND_WQE_BB};

/// A power-of-two ring of bytes in memory the device reads (or writes).
#[derive(Debug)]
pub(crate) struct Ring {
    base: NonNull<u8>,
    mask: usize,
}

// SAFETY: the ring is plain memory; the queue owning this value is the only CPU-side writer.
unsafe impl Send for Ring {}

impl Ring {
    /// # Safety
    /// `base` must point to `size` bytes, `size` a power of two and a multiple of 64, aligned
    /// to 64 bytes, valid for the life of the value and written on the CPU side only through
    /// it.
    pub(crate) unsafe fn new(base: NonNull<u8>, size: usize) -> Self {
        debug_assert!(size.is_power_of_two() && size >= SEND_WQE_BB);
        debug_assert!(base.as_ptr() as usize % SEND_WQE_BB == 0);
        Ring {
            base,
            mask: size - 1,
        }
    }

    #[inline(always)]
    fn at(&self, offset: usize) -> *mut u8 {
        self.view().at(offset)
    }

    /// The ring by value, for a run of WQE writes: the compiler keeps a value's fields in
    /// registers, where it must reload a borrowed ring's after every store into the ring
    /// (which could alias them as far as it knows).
    #[inline(always)]
    pub(crate) fn view(&self) -> RingView<'_> {
        RingView {
            base: self.base,
            mask: self.mask,
            _ring: core::marker::PhantomData,
        }
    }

    /// Writes one 16-byte unit. `offset` is a multiple of 16, so the unit never straddles the
    /// ring end (a multiple of 64).
    #[inline(always)]
    pub(crate) fn write_ds(&self, offset: usize, unit: [u8; DS]) {
        debug_assert!(offset % DS == 0);
        // SAFETY: 16 bytes inside the ring (see above); unaligned store of a byte array.
        unsafe { self.at(offset).cast::<[u8; DS]>().write_unaligned(unit) }
    }

    /// Writes any `#[repr(C)]` segment of 16 or 32 bytes at a 16-byte boundary.
    #[inline(always)]
    pub(crate) fn write_seg<T: Copy>(&self, offset: usize, seg: T) {
        const { assert!(core::mem::size_of::<T>() % DS == 0) };
        debug_assert!(offset % DS == 0);
        let units = core::mem::size_of::<T>() / DS;
        if units == 1 || (offset & self.mask) + core::mem::size_of::<T>() <= self.mask + 1 {
            // SAFETY: the whole segment lies inside the ring (checked just above, or it is
            // one 16-byte unit). Segments are byte arrays: no alignment requirement.
            unsafe { self.at(offset).cast::<T>().write_unaligned(seg) }
        } else {
            let bytes: *const u8 = (&seg as *const T).cast();
            for u in 0..units {
                // SAFETY: reading unit `u` of a local `T` of `units * 16` bytes.
                let unit = unsafe { bytes.add(u * DS).cast::<[u8; DS]>().read_unaligned() };
                self.write_ds(offset + u * DS, unit);
            }
        }
    }

    /// Ring size in bytes.
    pub(crate) fn size(&self) -> usize {
        self.mask + 1
    }

    /// The 64-byte block at `offset` (a multiple of 64), located now and read later (its
    /// address stays in a register across barriers, which make the compiler reload the
    /// ring's fields).
    #[inline(always)]
    pub(crate) fn block(&self, offset: usize) -> Block<'_> {
        self.view().block(offset)
    }

    /// Reads the 64-byte block at `offset` (a multiple of 64) as eight words, for a
    /// BlueFlame copy.
    #[inline(always)]
    pub(crate) fn read_block(&self, offset: usize) -> [u64; 8] {
        self.block(offset).read()
    }

    /// Size in bytes of the WQE at `offset` (a multiple of 64), from the DS count in its
    /// control segment.
    #[inline(always)]
    pub(crate) fn wqe_bytes(&self, offset: usize) -> usize {
        let [_, _, _, _, a, b, c, d, ..] = self.read_ds(offset);
        let qpn_ds = crate::prm::QpnDs::from_bits(crate::prm::Be32::from_bytes([a, b, c, d]));
        qpn_ds.ds() as usize * DS
    }

    /// Reads 16 bytes (used by `explain`-style dumps and tests of the ring contents).
    #[inline(always)]
    pub(crate) fn read_ds(&self, offset: usize) -> [u8; DS] {
        // SAFETY: 16 bytes inside the ring, as in `write_ds`.
        unsafe { self.at(offset).cast::<[u8; DS]>().read_unaligned() }
    }
}

/// A [`Ring`] by value (see [`Ring::view`]).
#[derive(Clone, Copy, Debug)]
pub(crate) struct RingView<'a> {
    base: NonNull<u8>,
    mask: usize,
    _ring: core::marker::PhantomData<&'a Ring>,
}

impl<'a> RingView<'a> {
    #[inline(always)]
    fn at(self, offset: usize) -> *mut u8 {
        // SAFETY: masked into the ring (the borrowed ring's constructor contract).
        unsafe { self.base.as_ptr().add(offset & self.mask) }
    }

    /// See [`Ring::block`].
    #[inline(always)]
    pub(crate) fn block(self, offset: usize) -> Block<'a> {
        debug_assert!(offset % SEND_WQE_BB == 0);
        Block {
            ptr: self.at(offset).cast(),
            _ring: core::marker::PhantomData,
        }
    }
}

/// Where WQEs are built: a borrowed [`Ring`] (its fields loaded where used) or a
/// [`RingView`] (loaded once, kept in registers over a run of WQEs).
pub(crate) trait WqeRing<'a>: Copy {
    /// The ring's base and mask.
    fn view(self) -> RingView<'a>;

    /// Where to build the WQE of `len` bytes (a multiple of 64, at most
    /// [`MAX_WQE_BYTES`]) that starts at `offset` (a multiple of 64), and that start as
    /// an offset inside the ring.
    ///
    /// When the WQE fits before the ring end (always for a 64-byte WQE, and for nearly
    /// every other) the [`WqeBuf`] is the ring itself. When it would run past the end it is
    /// `staging`, copied into the ring in two parts (the second at slot 0) when the
    /// `WqeBuf` is dropped: the split at `qend` that rdma-core does per segment, done once
    /// per WQE and off the common path.
    #[inline(always)]
    fn wqe<'s>(self, offset: usize, len: usize, staging: &'s mut Staging) -> (WqeBuf<'s>, usize)
    where
        'a: 's,
    {
        let view = self.view();
        debug_assert!(offset % SEND_WQE_BB == 0 && len % SEND_WQE_BB == 0);
        let start = offset & view.mask;
        let room = view.mask + 1 - start;
        // A one-WQEBB WQE always fits (`start` and the ring size are multiples of 64);
        // said explicitly, so a constant `len` of 64 folds the wrap case away.
        let buf = if len == SEND_WQE_BB || len <= room {
            WqeBuf {
                ptr: view.at(start),
                len,
                wrap: None,
                _ring: core::marker::PhantomData,
            }
        } else {
            // Only a staged WQE needs these (the direct case is inside the ring by the
            // check above): the staging buffer holds it, and its tail fits before `start`.
            assert!(len <= MAX_WQE_BYTES && len <= view.mask + 1);
            WqeBuf {
                ptr: staging.0.as_mut_ptr(),
                len,
                wrap: Some(Wrap {
                    start: view.at(start),
                    room,
                    base: view.base.as_ptr(),
                }),
                _ring: core::marker::PhantomData,
            }
        };
        (buf, start)
    }
}

impl<'a> WqeRing<'a> for &'a Ring {
    #[inline(always)]
    fn view(self) -> RingView<'a> {
        Ring::view(self)
    }
}

impl<'a> WqeRing<'a> for RingView<'a> {
    #[inline(always)]
    fn view(self) -> RingView<'a> {
        self
    }
}

/// A 64-byte block of a [`Ring`] (see [`Ring::block`]).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Block<'a> {
    ptr: *const [u64; 8],
    _ring: core::marker::PhantomData<&'a Ring>,
}

impl Block<'_> {
    /// The block's eight words.
    #[inline(always)]
    pub(crate) fn read(self) -> [u64; 8] {
        // SAFETY: a 64-aligned block inside the ring (`RingView::block` masks the offset; the
        // base is 64-aligned), which the borrow keeps alive; plain bytes written earlier by
        // this CPU.
        unsafe { self.ptr.read() }
    }
}

/// One entry of a [`CqBuf`] (its `cqe64`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct CqeEntry<'a> {
    cqe: *mut u8,
    _buf: core::marker::PhantomData<&'a CqBuf>,
}

impl CqeEntry<'_> {
    /// The `op_own` byte (a relaxed load: the caller then issues
    /// [`crate::mmio::udma_from_device_barrier`] before any other read). An atomic, not a
    /// volatile read: the device writes the byte while the CPU may read it, and a relaxed
    /// atomic load (one byte load, as a volatile one) is what makes that race defined.
    #[inline(always)]
    pub(crate) fn op_own(self) -> u8 {
        self.owner_byte().load(Ordering::Relaxed)
    }

    /// The validity iteration count, byte 62 (a relaxed load, as [`op_own`](Self::op_own)):
    /// what says an entry of an enhanced-compression CQ is new.
    #[inline(always)]
    pub(crate) fn validity(self) -> u8 {
        // SAFETY: byte 62 of an entry inside the buffer; the device writes it as a whole
        // byte, before or with `op_own`, so an atomic byte view is sound.
        unsafe { &*self.cqe.add(CQE_SIZE - 2).cast::<AtomicU8>() }.load(Ordering::Relaxed)
    }

    #[inline(always)]
    fn owner_byte(&self) -> &AtomicU8 {
        // SAFETY: byte 63 of an entry inside the buffer; the device writes it last and only
        // as a whole byte, so an atomic byte view is sound.
        unsafe { &*self.cqe.add(CQE_SIZE - 1).cast::<AtomicU8>() }
    }

    /// The whole `cqe64`, read after ownership was established.
    #[inline(always)]
    pub(crate) fn read(self) -> Cqe64 {
        // A plain (not volatile) read lets the compiler load only the fields the caller uses.
        // Measured with the `volatile` crate's read of the whole `Cqe64` instead
        // (benches/callgrind.sh, issue 28): poll_one_cqe 70.1 -> 270.1 instructions per
        // CQE, poll_one_cqe_zipped 108.9 -> 386.2, as every poll then copies all 64 bytes.
        // SAFETY: a 64-byte entry inside the buffer that the device handed to software (the
        // owner bit was checked and a from-device barrier, also a compiler barrier, issued by
        // the caller), so the device no longer writes it; `Cqe64` is plain bytes.
        unsafe { self.cqe.cast::<Cqe64>().read() }
    }

    /// The same entry through the error-CQE layout (`mlx5_err_cqe`), for REQ_ERR / RESP_ERR.
    #[inline(always)]
    pub(crate) fn read_err(self) -> ErrCqe {
        // SAFETY: as in `read`; `ErrCqe` is another plain-bytes view of the same 64 bytes.
        unsafe { self.cqe.cast::<ErrCqe>().read() }
    }

    /// The entry as an array of 8 mini-CQEs (a compressed block's slot), read after the
    /// block's title or slot was found to be software's.
    pub(crate) fn read_minis(self) -> [MiniCqe; MINI_CQES_PER_ARRAY] {
        // SAFETY: as in `read`: the device wrote the block before handing over its title
        // (or this slot) and no longer writes it; `MiniCqe` is plain bytes, 8 of them fill
        // the 64-byte entry.
        unsafe { self.cqe.cast::<[MiniCqe; MINI_CQES_PER_ARRAY]>().read() }
    }

    /// Overwrites the entry with `cqe` (the expansion of a compressed block in place).
    pub(crate) fn write(self, cqe: &Cqe64) {
        // SAFETY: an entry of a block the device handed over and software has not yet
        // released through the consumer index, so the device does not write it; no
        // reference to its bytes is live (reads copy them out).
        unsafe { self.cqe.cast::<Cqe64>().write(*cqe) }
    }
}

/// Largest WQE in bytes: 63 DS (the 6-bit DS field), rounded up to whole WQEBBs.
pub(crate) const MAX_WQE_BYTES: usize = 1024;

/// A WQE-sized staging buffer for WQEs that run past the ring end (allocated once per
/// send queue).
#[derive(Debug)]
pub(crate) struct Staging(Box<[u8; MAX_WQE_BYTES]>);

impl Default for Staging {
    fn default() -> Self {
        Staging(Box::new([0; MAX_WQE_BYTES]))
    }
}

/// `len` contiguous writable bytes where one WQE is being built: ring memory, or the
/// staging buffer of a WQE that wraps (copied into the ring on drop). Writes are unaligned
/// stores of plain bytes.
#[derive(Debug)]
pub(crate) struct WqeBuf<'a> {
    ptr: *mut u8,
    len: usize,
    wrap: Option<Wrap>,
    _ring: core::marker::PhantomData<&'a mut [u8]>,
}

/// Where a staged WQE goes: `room` bytes at `start` (up to the ring end), the rest at
/// `base`.
#[derive(Debug)]
struct Wrap {
    start: *mut u8,
    room: usize,
    base: *mut u8,
}

impl Drop for WqeBuf<'_> {
    #[inline(always)]
    fn drop(&mut self) {
        if let Some(wrap) = self.wrap.take() {
            // SAFETY: `ptr` is the staging buffer of `len` bytes when `wrap` is set
            // (`Ring::wqe`), and `wrap` describes the ring range it goes to.
            unsafe { unstage(self.ptr, self.len, wrap.start, wrap.room, wrap.base) };
        }
    }
}

/// Copies the `len` staged bytes at `staged` into the ring in two parts: `room` bytes at
/// `start` (up to the ring end), the rest at `base` (the ring start). Scalar arguments, so
/// the caller keeps them in registers.
///
/// # Safety
/// `staged` must be valid for `len` bytes of reads, `start` for `room` bytes of writes and
/// `base` for `len - room`, with `room <= len`.
#[cold]
#[inline(never)]
unsafe fn unstage(staged: *const u8, len: usize, start: *mut u8, room: usize, base: *mut u8) {
    // SAFETY: the ranges of the contract.
    unsafe {
        copy_small(staged, start, room);
        copy_small(staged.add(room), base, len - room);
    }
}

impl WqeBuf<'_> {
    /// Writes a `#[repr(C)]` plain-bytes segment at byte `at` of the WQE.
    ///
    /// # Safety
    /// `at + size_of::<T>()` must not exceed the WQE length given to [`Ring::wqe`], and
    /// `T` must be plain bytes (a PRM segment layout).
    #[inline(always)]
    pub(crate) unsafe fn seg<T: Copy>(&mut self, at: usize, seg: T) {
        debug_assert!(at + core::mem::size_of::<T>() <= self.len);
        const { assert!(core::mem::size_of::<T>() % 8 == 0) };
        let words = core::mem::size_of::<T>() / 8;
        let src: *const u64 = (&seg as *const T).cast();
        for i in 0..words {
            // Whole 8-byte stores let the compiler build each word in a register instead of
            // storing the segment's fields one by one.
            // SAFETY: word `i` of a local `T` of `words * 8` plain bytes, and of the
            // buffer's `size_of::<T>()` bytes at `at` (caller's contract).
            unsafe {
                let word = src.add(i).read_unaligned();
                self.ptr.add(at + i * 8).cast::<u64>().write_unaligned(word);
            }
        }
    }

    /// Writes the segments `segs` one after another from byte `at`, out of line: a loop of
    /// unknown length inlined into a post would crowd the registers of every post.
    ///
    /// # Safety
    /// As for [`WqeBuf::seg`], for every segment `segs` yields.
    #[inline(always)]
    pub(crate) unsafe fn seg_list<T: Copy>(&mut self, at: usize, segs: impl Iterator<Item = T>) {
        #[inline(never)]
        unsafe fn run<T: Copy>(mut wqe: WqeBuf<'_>, at: usize, segs: impl Iterator<Item = T>) {
            for (i, seg) in segs.enumerate() {
                // SAFETY: the caller's contract.
                unsafe { wqe.seg(at + i * core::mem::size_of::<T>(), seg) };
            }
        }
        let view = WqeBuf {
            ptr: self.ptr,
            len: self.len,
            wrap: None,
            _ring: core::marker::PhantomData,
        };
        // SAFETY: forwarded; `view` is this buffer without the wrap (it stays with `self`,
        // which copies the staged bytes into the ring when dropped).
        unsafe { run(view, at, segs) }
    }

    /// Writes a whole WQEBB at byte 0 of the WQE: `word0` as its first 8 bytes, then bytes
    /// 8..64 of `image` (one 8-byte and three 16-byte copies).
    ///
    /// # Safety
    /// The WQE must be at least 64 bytes long (as given to [`Ring::wqe`]).
    #[inline(always)]
    pub(crate) unsafe fn wqebb(&mut self, word0: u64, image: &[u8; SEND_WQE_BB]) {
        debug_assert!(self.len >= SEND_WQE_BB);
        let src = image.as_ptr();
        // SAFETY: the buffer's first 64 bytes (caller's contract) and the image's 64.
        unsafe {
            self.ptr.cast::<u64>().write_unaligned(word0);
            let word1 = src.add(8).cast::<u64>().read_unaligned();
            self.ptr.add(8).cast::<u64>().write_unaligned(word1);
            for at in [16, 32, 48] {
                let chunk = src.add(at).cast::<u128>().read_unaligned();
                self.ptr.add(at).cast::<u128>().write_unaligned(chunk);
            }
        }
    }

    /// Copies `data` to byte `at` of the WQE.
    ///
    /// # Safety
    /// `at + data.len()` must not exceed the WQE length given to [`Ring::wqe`].
    #[inline(always)]
    pub(crate) unsafe fn bytes(&mut self, at: usize, data: &[u8]) {
        debug_assert!(at + data.len() <= self.len);
        // SAFETY: inside the buffer (caller's contract); the source is a slice outside it.
        unsafe { copy_small(data.as_ptr(), self.ptr.add(at), data.len()) }
    }
}

/// Marks the payload sizes [`copy_small`] takes past its first case as the less likely
/// (a call to a cold function: the compiler lays the 8..=16-byte copy out to fall through).
#[cold]
#[inline(always)]
fn other_sizes() {}

/// Copies `len` bytes with a few unaligned loads and stores (the short inline payloads of
/// WQEs), instead of a call to `memcpy`: 16-byte chunks, then the tail as two overlapping
/// loads/stores of the largest size that fits, so no byte outside either range is touched.
///
/// # Safety
/// `src` valid for `len` bytes of reads, `dst` for `len` bytes of writes, not overlapping.
#[inline(always)]
pub(crate) unsafe fn copy_small(src: *const u8, dst: *mut u8, len: usize) {
    /// Copies the `T`-sized ranges at `0` and at `len - size_of::<T>()`.
    ///
    /// # Safety
    /// As for `copy_small`, with `size_of::<T>() <= len`.
    #[inline(always)]
    unsafe fn ends<T>(src: *const u8, dst: *mut u8, len: usize) {
        let last = len - core::mem::size_of::<T>();
        // One range after the other (the two do not overlap the source, by the contract):
        // one register, where both loads first would take two.
        // SAFETY: both ranges lie inside the `len` bytes of each side (caller's contract).
        unsafe {
            let head = src.cast::<T>().read_unaligned();
            dst.cast::<T>().write_unaligned(head);
            let tail = src.add(last).cast::<T>().read_unaligned();
            dst.add(last).cast::<T>().write_unaligned(tail);
        }
    }
    // SAFETY (every block below): offsets and sizes stay inside the `len` bytes the caller
    // vouches for.
    unsafe {
        // 8..=16 bytes first (the common short payload): one compare of `len - 8`.
        if len.wrapping_sub(8) <= 8 {
            ends::<u64>(src, dst, len);
            return;
        }
        other_sizes();
        if len > 16 {
            let mut at = 0;
            while at + 16 < len {
                let chunk = src.add(at).cast::<u128>().read_unaligned();
                dst.add(at).cast::<u128>().write_unaligned(chunk);
                at += 16;
            }
            ends::<u128>(src, dst, len);
        } else if len >= 4 {
            ends::<u32>(src, dst, len);
        } else if len >= 2 {
            ends::<u16>(src, dst, len);
        } else if len == 1 {
            dst.write(src.read());
        }
    }
}

/// The CQ buffer: `cqe_cnt` entries of `cqe_size` bytes, each ending with a `mlx5_cqe64`.
#[derive(Clone, Debug)]
pub(crate) struct CqBuf {
    /// The `cqe64` of entry 0: the buffer start for 64-byte CQEs, 64 bytes in for 128-byte
    /// ones.
    first: NonNull<u8>,
    /// Bytes per entry (64 or 128).
    size: usize,
    /// `(cqe_cnt - 1) * size`: an entry offset masked into the buffer (`size` is a power
    /// of two).
    byte_mask: usize,
    mask: u32,
    /// The position ([`CqBuf::entry_at`]) of the last entry: where a pass ends.
    last: usize,
}

// SAFETY: plain memory the device writes; this value is the only CPU-side reader/writer.
unsafe impl Send for CqBuf {}

impl CqBuf {
    /// # Safety
    /// `base` must point to `cqe_cnt * cqe_size` bytes (`cqe_cnt` a power of two, `cqe_size`
    /// 64 or 128), 64-byte aligned, valid for the life of the value.
    pub(crate) unsafe fn new(base: NonNull<u8>, cqe_cnt: u32, cqe_size: usize) -> Self {
        debug_assert!(cqe_cnt.is_power_of_two() && (cqe_size == 64 || cqe_size == 128));
        // SAFETY: the `cqe64` offset (0 or 64) is inside the first entry.
        let first = unsafe { base.add(crate::prm::cqe64_offset(cqe_size)) };
        let byte_mask = (cqe_cnt as usize - 1) * cqe_size;
        CqBuf {
            first,
            size: cqe_size,
            byte_mask,
            mask: cqe_cnt - 1,
            last: first.as_ptr() as usize + byte_mask,
        }
    }

    #[inline(always)]
    fn cqe(&self, index: u32) -> *mut u8 {
        // `(index mod cqe_cnt) * size` in two instructions: sizes are powers of two.
        let offset = (index as usize).wrapping_mul(self.size) & self.byte_mask;
        // SAFETY: masked entry inside the buffer (constructor contract).
        unsafe { self.first.as_ptr().add(offset) }
    }

    /// Sets every entry to "invalid, owner 0", as rdma-core does at creation, so that
    /// untouched entries are never taken as valid.
    pub(crate) fn init(&self) {
        for i in 0..=self.mask {
            // SAFETY: entry `i` is inside the buffer; the device has not been given it yet.
            unsafe {
                self.cqe(i).write_bytes(0, CQE_SIZE);
                self.entry(i)
                    .owner_byte()
                    .store(crate::prm::OP_OWN_INVALID, Ordering::Relaxed);
            }
        }
    }

    /// Sets every entry's validity count (byte 62) to 0xff, which no entry of the first
    /// pass carries (count 0), as the kernel (`mlx5e_alloc_cq_common`) and DPDK
    /// (`MLX5_CQE_VIC_INIT`) initialise the CQs they poll by it.
    pub(crate) fn init_validity(&self) {
        for i in 0..=self.mask {
            // SAFETY: byte 62 of entry `i`, inside the buffer; the device has not been given
            // the CQ yet.
            unsafe { self.cqe(i).add(CQE_SIZE - 2).write(0xff) };
        }
    }

    /// The position of entry 0 (the address of its `cqe64`): where [`CqBuf::entry_at`]
    /// starts and [`CqBuf::next_pos`] wraps to.
    #[inline(always)]
    pub(crate) fn start(&self) -> usize {
        self.first.as_ptr() as usize
    }

    /// The position of the entry after the one at `pos`, or `None` when `pos` is the last
    /// entry (the next is entry 0: a new pass).
    #[inline(always)]
    pub(crate) fn next_pos(&self, pos: usize) -> Option<usize> {
        (pos != self.last).then(|| pos + self.size)
    }

    /// The byte that says whether software owns what `pos` names (a relaxed load): `op_own`
    /// (byte 63) of the entry at entry position `pos`, or, for `pos` one byte before an
    /// entry's position (the head of a CQ polled by validity count), that entry's validity
    /// count (byte 62). The same load either way, so the poll's first test costs the same.
    #[inline(always)]
    pub(crate) fn own_byte(&self, pos: usize) -> u8 {
        let offset = pos.wrapping_sub(self.start()).wrapping_add(CQE_SIZE - 1);
        debug_assert!(offset < self.byte_mask + CQE_SIZE && offset % self.size >= CQE_SIZE - 2);
        // SAFETY: byte 63 of an entry at `offset - 63`, or byte 62 of the one at `offset -
        // 62` (a position or a position less one), inside the buffer (constructor contract);
        // the device writes it as a whole byte, so an atomic byte view is sound.
        let byte = unsafe { &*self.first.as_ptr().add(offset).cast::<AtomicU8>() };
        byte.load(Ordering::Relaxed)
    }

    /// The entry at position `pos` ([`CqBuf::start`], or a value from
    /// [`CqBuf::next_pos`]): its address, so that finding it costs no add.
    #[inline(always)]
    pub(crate) fn entry_at(&self, pos: usize) -> CqeEntry<'_> {
        let offset = pos.wrapping_sub(self.start());
        debug_assert!(offset & self.byte_mask == offset && offset % self.size == 0);
        CqeEntry {
            // SAFETY: `pos` is an entry's position (`start` or from `next_pos`), so `offset`
            // is an entry offset inside the buffer (constructor contract); the compiler
            // folds `first + (pos - first)` to `pos`.
            cqe: unsafe { self.first.as_ptr().add(offset) },
            _buf: core::marker::PhantomData,
        }
    }

    /// Copies the whole entry at consumer count `index` (a 128-byte CQE's first half
    /// included) as the device wrote it, byte by byte with volatile reads: the device may
    /// write the slot again once the consumer index passes it.
    pub(crate) fn copy_entry(&self, index: u32) -> Vec<u8> {
        // SAFETY: the `cqe64` of a masked entry minus the bytes before it in the entry is the
        // entry's first byte, inside the buffer (constructor contract).
        let start = unsafe { NonNull::new_unchecked(self.cqe(index).sub(self.size - CQE_SIZE)) };
        (0..self.size)
            // SAFETY: `size` bytes from an entry's start are that entry; volatile because the
            // device may be writing them.
            .map(|i| unsafe { VolatilePtr::new_restricted(ReadOnly, start.add(i)).read() })
            .collect()
    }

    /// The data a CQE carries (scatter to CQE, prm-facts §7.2): bytes 0..32 of its `cqe64`
    /// (format 1), or with `wide` the 64 bytes before it (format 2), which exist in
    /// 128-byte entries only (`None` on a CQ of 64-byte entries). Read after ownership was
    /// established, as [`CqeEntry::read`].
    pub(crate) fn scattered(&self, entry: CqeEntry<'_>, wide: bool) -> Option<[u8; 64]> {
        let mut data = [0u8; 64];
        if wide {
            if self.size != 2 * CQE_SIZE {
                return None;
            }
            // SAFETY: the first half of a 128-byte entry (its `cqe64` is the second half),
            // handed to software with it.
            unsafe {
                core::ptr::copy_nonoverlapping(entry.cqe.sub(CQE_SIZE), data.as_mut_ptr(), 64)
            };
        } else {
            // SAFETY: the first 32 bytes of the entry's `cqe64`, handed to software.
            unsafe { core::ptr::copy_nonoverlapping(entry.cqe, data.as_mut_ptr(), 32) };
        }
        Some(data)
    }

    /// The entry at consumer count `index`: its address computed once, for the owner
    /// check and then the reads.
    #[inline(always)]
    pub(crate) fn entry(&self, index: u32) -> CqeEntry<'_> {
        CqeEntry {
            cqe: self.cqe(index),
            _buf: core::marker::PhantomData,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Ring memory with a guard after it: the ring is the first 128 bytes.
    #[repr(C, align(64))]
    struct Mem([u8; 256]);

    const SIZE: usize = 128;

    fn with_ring(f: impl FnOnce(&Ring)) -> [u8; 256] {
        let mut mem = Mem([0xee; 256]);
        // SAFETY: 128 bytes of `mem`, 64-aligned, alive while `f` runs; only `ring` writes.
        let ring = unsafe { Ring::new(NonNull::from(&mut mem.0).cast(), SIZE) };
        f(&ring);
        mem.0
    }

    fn seg() -> [u8; 32] {
        core::array::from_fn(|i| i as u8 + 1)
    }

    #[test]
    fn a_unit_lands_at_its_offset_masked() {
        let mem = with_ring(|ring| ring.write_ds(SIZE + 48, [7; DS]));
        assert_eq!(mem[48..64], [7; DS]);
        assert!(mem[..48].iter().chain(&mem[64..]).all(|b| *b == 0xee));
    }

    #[test]
    fn a_segment_inside_the_ring_is_written_whole() {
        let mem = with_ring(|ring| ring.write_seg(2 * SIZE + 32, seg()));
        assert_eq!(mem[32..64], seg());
        assert!(mem[..32].iter().chain(&mem[64..]).all(|b| *b == 0xee));
    }

    #[test]
    fn a_segment_across_the_ring_end_continues_at_the_start() {
        let mem = with_ring(|ring| {
            ring.write_seg(SIZE - DS, seg());
            assert_eq!(ring.read_ds(SIZE - DS), seg()[..DS]);
            assert_eq!(ring.read_ds(0), seg()[DS..]);
        });
        assert_eq!(mem[SIZE - DS..SIZE], seg()[..DS]);
        assert_eq!(mem[..DS], seg()[DS..]);
        // Nothing between, nothing past the ring's end.
        assert!(mem[DS..SIZE - DS].iter().all(|b| *b == 0xee));
        assert!(mem[SIZE..].iter().all(|b| *b == 0xee));
    }
}
