//! Device memory (MEMIC): on-chip memory of the NIC, mapped write-combining into the
//! process, that send WQEs gather from without a DMA read of host memory
//! (`docs/memory.md`, "Device memory").
//!
//! - [`Context::alloc_dm`] allocates it (`ibv_alloc_dm`; `mlx5dv_init_obj(MLX5DV_OBJ_DM)`
//!   gives the mapping on hardware), refused with a typed [`DmRefusal`] when the device has
//!   none or not that much (`max_dm_size`, [`DeviceCaps::max_dm_size`](crate::DeviceCaps)).
//! - [`DeviceMemory::copy_in`] writes it with 8-byte stores (UCX's
//!   `uct_rc_mlx5_iface_common_copy_to_dm`; full aligned 64-byte lines go as eight stores
//!   in address order, which the write-combining buffer merges), then drains the
//!   write-combining buffers (`mmio_flush_writes`) so a WQE posted next finds the bytes.
//! - [`DeviceMemory::register`] makes a zero-based memory key on part of it
//!   (`ibv_reg_dm_mr` with `IBV_ACCESS_ZERO_BASED`): its [`DmRegion::sge`] addresses run
//!   from 0.
//! - [`DmSlots`] is the opt-in send path of one queue: payloads above the inline limit are
//!   copied into a slot and posted as a pointer WQE on it
//!   ([`SendQueue::post_dm`](crate::SendQueue::post_dm)); a slot is reused only once the
//!   WQE that read it has completed. It lives with the send queue (`sq/dm.rs`, with the
//!   stores both use); [`DmSlots::new`] is here, as it takes a [`DmRegion`].

use std::sync::Arc;

use crate::backend::Backend;
use crate::device::{Context, ProtectionDomain};
use crate::error::{DmRefusal, Error};
use crate::mem::Sge;
use crate::mmio::DmWindow;
use crate::sq::dm::{store, DmTarget, WORD};
use crate::types::Access;

pub use crate::sq::dm::{DmSlots, DM_LINE};

/// The alignment every allocation asks for (`log_align_req`): one 64-byte line.
const LOG_DM_LINE: u8 = DM_LINE.trailing_zeros() as u8;

fn refused(why: DmRefusal) -> Error {
    Error::DeviceMemory(why)
}

/// `[offset, offset + len)` inside `size` bytes, else [`DmRefusal::OutOfRange`].
fn inside(offset: usize, len: usize, size: usize) -> Result<(), Error> {
    match offset.checked_add(len) {
        Some(end) if end <= size => Ok(()),
        _ => Err(refused(DmRefusal::OutOfRange {
            offset: offset as u64,
            len: len as u64,
            size: size as u64,
        })),
    }
}

/// `value` a multiple of `align`, else [`DmRefusal::Misaligned`].
fn aligned(value: usize, align: usize) -> Result<(), Error> {
    if value % align != 0 {
        return Err(refused(DmRefusal::Misaligned {
            value: value as u64,
            align: align as u64,
        }));
    }
    Ok(())
}

impl<B: Backend> Context<B> {
    /// Allocates `len` bytes of device memory (`ibv_alloc_dm`, 64-byte aligned). The kernel
    /// allocates the size rounded up to 64 bytes (`handle_alloc_dm_memic`), which is what
    /// [`DeviceMemory::len`] says on the model; on hardware it says `len`, as rdma-core
    /// reports the request (`_mlx5dv_alloc_dm` keeps `dm->length = dm_attr->length` and maps
    /// only that). Refused with
    /// [`Error::DeviceMemory`]: [`DmRefusal::NoDeviceMemory`] on a device without it,
    /// [`DmRefusal::TooLarge`] beyond `max_dm_size`, [`DmRefusal::Exhausted`] when other
    /// allocations hold it; a length of 0 is [`Error::InvalidArgument`].
    pub fn alloc_dm(&self, len: usize) -> Result<DeviceMemory<B>, Error> {
        let max = self.caps().max_dm_size;
        if max == 0 {
            return Err(refused(DmRefusal::NoDeviceMemory));
        }
        if len == 0 {
            return Err(Error::InvalidArgument("device memory of 0 bytes"));
        }
        if len as u64 > max {
            return Err(refused(DmRefusal::TooLarge {
                len: len as u64,
                max,
            }));
        }
        let (handle, len) = self.backend().alloc_dm(len, LOG_DM_LINE)?;
        Ok(DeviceMemory {
            inner: Arc::new(DmInner {
                handle,
                len,
                ctx: self.clone(),
            }),
        })
    }
}

#[derive(Debug)]
struct DmInner<B: Backend> {
    /// Freed (`ibv_free_dm`) when the last region on it and the last clone are gone.
    handle: B::Dm,
    len: usize,
    ctx: Context<B>,
}

/// An allocation of device memory. Clones share it; it is freed when the last clone and
/// the last [`DmRegion`] on it are dropped.
///
/// The device reads it whenever a posted WQE gathers from it, so its bytes are written only
/// with [`DeviceMemory::copy_in`] (stores, never a `&mut [u8]`).
#[derive(Debug)]
pub struct DeviceMemory<B: Backend> {
    inner: Arc<DmInner<B>>,
}

impl<B: Backend> Clone for DeviceMemory<B> {
    fn clone(&self) -> Self {
        DeviceMemory {
            inner: self.inner.clone(),
        }
    }
}

impl<B: Backend> DeviceMemory<B> {
    /// Size in bytes (the request rounded up to 64).
    pub fn len(&self) -> usize {
        self.inner.len
    }

    /// Never true: allocations are at least 64 bytes.
    pub fn is_empty(&self) -> bool {
        self.inner.len == 0
    }

    /// Copies `data` to `offset` with 8-byte stores (the last one padded with zeros) and
    /// drains the write-combining buffers. `offset` must be a multiple of 8
    /// ([`DmRefusal::Misaligned`]), and `data` rounded up to 8 bytes must fit
    /// ([`DmRefusal::OutOfRange`]).
    ///
    /// A WQE still in flight may be reading these bytes: overwrite only what no outstanding
    /// WQE names ([`DmSlots`] keeps to that).
    pub fn copy_in(&self, offset: usize, data: &[u8]) -> Result<(), Error> {
        aligned(offset, WORD)?;
        inside(offset, data.len().next_multiple_of(WORD), self.len())?;
        store(&self.inner.handle, offset, data);
        Ok(())
    }

    /// Registers `len` bytes at `offset` in `pd` (`ibv_reg_dm_mr`, zero based: the
    /// region's addresses run from 0). The range must lie inside the allocation
    /// ([`DmRefusal::OutOfRange`]); `offset` must be a multiple of 64
    /// ([`DmRefusal::Misaligned`]). `access` beyond local read is the device's to refuse
    /// (the model refuses it: it does not model the NIC writing device memory).
    pub fn register(
        &self,
        pd: &ProtectionDomain<B>,
        offset: usize,
        len: usize,
        access: Access,
    ) -> Result<DmRegion<B>, Error> {
        aligned(offset, DM_LINE)?;
        if len == 0 {
            return Err(Error::InvalidArgument("device-memory region of 0 bytes"));
        }
        inside(offset, len, self.len())?;
        let (handle, lkey, rkey) = self.inner.ctx.backend().reg_dm_mr(
            pd.handle(),
            &self.inner.handle,
            offset,
            len,
            access,
        )?;
        Ok(DmRegion {
            handle,
            lkey,
            rkey,
            offset,
            len,
            dm: self.clone(),
            _pd: pd.clone(),
        })
    }
}

/// A zero-based memory key on part of a [`DeviceMemory`].
#[derive(Debug)]
pub struct DmRegion<B: Backend> {
    /// Deregistered first (field order), before the allocation may be freed.
    handle: B::Mr,
    lkey: u32,
    rkey: u32,
    offset: usize,
    len: usize,
    dm: DeviceMemory<B>,
    _pd: ProtectionDomain<B>,
}

impl<B: Backend> DmRegion<B> {
    /// Local key.
    pub fn lkey(&self) -> u32 {
        self.lkey
    }

    /// Remote key.
    pub fn rkey(&self) -> u32 {
        self.rkey
    }

    /// Where the region starts in its allocation.
    pub fn offset(&self) -> usize {
        self.offset
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Never true: regions are at least one byte.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The allocation.
    pub fn memory(&self) -> &DeviceMemory<B> {
        &self.dm
    }

    /// A gather entry for `len` bytes at `offset` of the region: its address is `offset`
    /// (zero based).
    pub fn sge(&self, offset: usize, len: u32) -> Sge {
        Sge {
            addr: offset as u64,
            len,
            lkey: self.lkey,
        }
    }

    /// [`DeviceMemory::copy_in`] at `offset` of the region.
    pub fn copy_in(&self, offset: usize, data: &[u8]) -> Result<(), Error> {
        inside(offset, data.len(), self.len)?;
        self.dm.copy_in(self.offset + offset, data)
    }

    /// The backend handle.
    pub fn handle(&self) -> &B::Mr {
        &self.handle
    }
}

impl<B: Backend> DmTarget for DmRegion<B> {
    fn window(&self) -> &dyn DmWindow {
        &self.dm.inner.handle
    }
}

impl DmSlots {
    /// Cuts `region` into slots of `slot` bytes (a multiple of 64, at least one slot).
    pub fn new<B: Backend>(region: DmRegion<B>, slot: usize) -> Result<Self, Error> {
        aligned(slot, DM_LINE)?;
        if slot == 0 || slot > region.len() {
            return Err(Error::InvalidArgument(
                "device-memory slot of 0 bytes or larger than the region",
            ));
        }
        let count = region.len() / slot;
        Ok(DmSlots {
            base: region.offset(),
            lkey: region.lkey(),
            region: Box::new(region),
            slot,
            ends: vec![0; count].into_boxed_slice(),
            next: 0,
            busy: 0,
        })
    }
}
