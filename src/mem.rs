//! Memory the device reads and writes: registered regions and queue buffers.
//!
//! The device writes such memory behind the compiler's back, so it is only ever reached
//! through raw pointers: copies in and out, never a `&[u8]` that could change under it.

use core::ptr::NonNull;

use memmap2::MmapMut;

use crate::error::Error;

/// Page-aligned memory, owned (an anonymous mapping) or the caller's.
#[derive(Debug)]
pub(crate) struct Memory {
    ptr: NonNull<u8>,
    len: usize,
    _map: Option<MmapMut>,
}

// SAFETY: the memory is plain bytes reached only through raw-pointer copies; the mapping
// (if owned) has no thread affinity.
unsafe impl Send for Memory {}
// SAFETY: as above: no `&[u8]` is ever formed, copies are the only access.
unsafe impl Sync for Memory {}

impl Memory {
    /// `len` zeroed bytes, page aligned (at least one page).
    pub(crate) fn new(len: usize) -> Result<Self, Error> {
        let mut map = MmapMut::map_anon(len.max(1)).map_err(|_| Error::OutOfMemory)?;
        let ptr = NonNull::new(map.as_mut_ptr()).ok_or(Error::OutOfMemory)?;
        Ok(Memory {
            ptr,
            len,
            _map: Some(map),
        })
    }

    /// The caller's memory.
    pub(crate) fn foreign(addr: *mut u8, len: usize) -> Result<Self, Error> {
        let ptr = NonNull::new(addr).ok_or(Error::InvalidArgument("null region address"))?;
        if (addr as usize).checked_add(len).is_none() {
            return Err(Error::InvalidArgument("region wraps the address space"));
        }
        Ok(Memory {
            ptr,
            len,
            _map: None,
        })
    }

    pub(crate) fn ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    pub(crate) fn non_null(&self) -> NonNull<u8> {
        self.ptr
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    fn check(&self, offset: usize, len: usize) {
        assert!(
            offset.checked_add(len).is_some_and(|end| end <= self.len),
            "range {offset}+{len} outside memory of {} bytes",
            self.len
        );
    }

    pub(crate) fn read(&self, offset: usize, buf: &mut [u8]) {
        self.check(offset, buf.len());
        // SAFETY: inside the memory (checked); `buf` is a distinct Rust slice.
        unsafe {
            core::ptr::copy_nonoverlapping(self.ptr().add(offset), buf.as_mut_ptr(), buf.len())
        }
    }

    /// `len` bytes at `offset`, borrowed in place.
    ///
    /// # Safety
    /// Nothing writes the range while the slice lives (the contract of
    /// `MemoryRegion::bytes`).
    pub(crate) unsafe fn slice(&self, offset: usize, len: usize) -> &[u8] {
        self.check(offset, len);
        // SAFETY: inside the memory (checked), which stays mapped while `self` lives; the
        // caller promises that nothing writes the range while the slice lives.
        unsafe { core::slice::from_raw_parts(self.ptr().add(offset), len) }
    }

    pub(crate) fn read_volatile_u8(&self, offset: usize) -> u8 {
        self.check(offset, 1);
        // SAFETY: inside the memory (checked). Volatile: the device (or a peer's RDMA WRITE)
        // changes the byte behind the compiler's back, so a spin loop must reload it.
        unsafe { self.ptr().add(offset).read_volatile() }
    }

    pub(crate) fn write(&self, offset: usize, data: &[u8]) {
        self.check(offset, data.len());
        // SAFETY: inside the memory (checked); `data` is a distinct Rust slice.
        unsafe { core::ptr::copy_nonoverlapping(data.as_ptr(), self.ptr().add(offset), data.len()) }
    }
}
