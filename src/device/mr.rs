//! Registered memory ([`MemoryRegion`]).

use std::sync::Arc;

use crate::backend::Backend;
use crate::error::Error;
use crate::mem::Memory;
use crate::sq::{Remote, Sge};

use super::pd::PdInner;

/// Registered memory. Owned regions ([`ProtectionDomain::alloc_mr`](crate::ProtectionDomain::alloc_mr)) are page aligned and
/// zeroed.
///
/// The device may write the memory at any time (receives, peers' WRITEs, READ results), so it
/// is never lent out as `&[u8]` by safe code: copy in and out with [`MemoryRegion::read`]
/// and [`MemoryRegion::write`], or borrow a range the device no longer writes with the
/// `unsafe` [`MemoryRegion::bytes`].
#[derive(Debug)]
pub struct MemoryRegion<B: Backend> {
    pub(super) handle: B::Mr,
    pub(super) memory: Memory,
    pub(super) lkey: u32,
    pub(super) rkey: u32,
    pub(super) _pd: Arc<PdInner<B>>,
}

impl<B: Backend> MemoryRegion<B> {
    /// Local key.
    pub fn lkey(&self) -> u32 {
        self.lkey
    }

    /// Remote key.
    pub fn rkey(&self) -> u32 {
        self.rkey
    }

    /// Brings `len` bytes at `offset` of a region registered with [`Access::ON_DEMAND`](crate::Access::ON_DEMAND) in
    /// before the device touches them (`ibv_advise_mr`, flushed: done when this returns;
    /// for writing when the region has [`Access::LOCAL_WRITE`](crate::Access::LOCAL_WRITE), else for reading), so the
    /// first message does not take a page fault. Refused
    /// ([`Error::OnDemandPaging`]) for a region not on demand, a range outside it or a page
    /// the process has not mapped.
    pub fn prefetch(&self, offset: usize, len: usize) -> Result<(), Error> {
        if offset
            .checked_add(len)
            .is_none_or(|end| end > self.memory.len())
        {
            return Err(Error::OnDemandPaging("range outside the region".into()));
        }
        self._pd.ctx.backend.advise_mr(
            &self._pd.handle,
            &self.handle,
            self.addr() + offset as u64,
            len,
        )
    }

    /// Size of the pages backing the region (4 KiB, or 2 MiB on huge pages): the device
    /// needs one translation per page it touches.
    pub fn page_size(&self) -> usize {
        self.memory.page_size()
    }

    /// Address of the first byte.
    pub fn addr(&self) -> u64 {
        self.memory.ptr() as u64
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.memory.len()
    }

    /// True for a zero-length region.
    pub fn is_empty(&self) -> bool {
        self.memory.len() == 0
    }

    /// A gather / scatter entry for `len` bytes at `offset`.
    pub fn sge(&self, offset: usize, len: u32) -> Sge {
        Sge {
            addr: self.addr() + offset as u64,
            len,
            lkey: self.lkey,
        }
    }

    /// The remote address of `offset`, for a peer.
    pub fn remote(&self, offset: usize) -> Remote {
        Remote {
            addr: self.addr() + offset as u64,
            rkey: self.rkey,
        }
    }

    /// Copies `buf.len()` bytes at `offset` out of the region.
    ///
    /// # Panics
    /// If the range is outside the region.
    pub fn read(&self, offset: usize, buf: &mut [u8]) {
        self.memory.read(offset, buf);
    }

    /// Copies `data` into the region at `offset`.
    ///
    /// # Panics
    /// If the range is outside the region.
    pub fn write(&self, offset: usize, data: &[u8]) {
        self.memory.write(offset, data);
    }

    /// `len` bytes at `offset`, in place: for reading a received message where it landed,
    /// without the copy of [`MemoryRegion::read`] (the pattern: crate docs, "Zero-copy
    /// receive").
    ///
    /// # Safety
    /// While the returned slice lives, nothing may write `offset..offset + len`:
    /// - not the device for this process: the range is in no posted receive (the receive
    ///   that filled it has completed, its completion was returned by a poll, which orders
    ///   the device's writes of the data before it, and it is not posted again while the
    ///   slice lives), and is no local entry of an outstanding RDMA READ or atomic;
    /// - not a peer: no RDMA WRITE or atomic targets the range (the region's rkey went to no
    ///   peer with remote write or atomic rights, or the peers' protocol keeps them off this
    ///   range while the slice lives);
    /// - not this process: no [`MemoryRegion::write`] to the range, no other pointer
    ///   writes through it.
    ///
    /// # Panics
    /// If the range is outside the region.
    pub unsafe fn bytes(&self, offset: usize, len: usize) -> &[u8] {
        // SAFETY: forwarded from this function's contract.
        unsafe { self.memory.slice(offset, len) }
    }

    /// The byte at `offset`, read with one volatile load: for spinning on memory a peer
    /// writes by RDMA WRITE (perftest's `write_lat` polls the last byte of its buffer).
    ///
    /// # Panics
    /// If `offset` is outside the region.
    pub fn read_volatile_u8(&self, offset: usize) -> u8 {
        self.memory.read_volatile_u8(offset)
    }

    /// The 8 bytes at `offset` as a host-order `u64` (e.g. an atomic's result).
    pub fn read_u64(&self, offset: usize) -> u64 {
        let mut b = [0u8; 8];
        self.read(offset, &mut b);
        u64::from_ne_bytes(b)
    }

    /// The backend handle.
    pub fn handle(&self) -> &B::Mr {
        &self.handle
    }
}

impl<B: Backend> Drop for MemoryRegion<B> {
    fn drop(&mut self) {
        // Before the registration and the memory go (the fields, after this).
        self._pd.ctx.mrs.remove(self.lkey);
    }
}
