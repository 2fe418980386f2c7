//! Device memory (MEMIC) as the NIC holds it: the on-chip bytes and their allocations.
//!
//! Allocation follows the kernel's `mlx5_cmd_alloc_memic` (drivers/infiniband/hw/mlx5/dm.c):
//! the size is rounded up to `MLX5_MEMIC_BASE_SIZE` (64 bytes) and each allocation takes
//! whole 4 KiB pages of the MEMIC BAR, first fit in a bitmap.

use std::sync::atomic::AtomicU64;

use crate::types::HwError;

/// Allocation granularity of the MEMIC BAR (the kernel's `PAGE_SIZE` there).
pub(crate) const DM_PAGE: u64 = 4096;
/// `MLX5_MEMIC_BASE_SIZE`: sizes are rounded up to it.
pub(crate) const DM_BASE_SIZE: u64 = 64;
/// The largest `log_align_req` the model serves: its allocations start on a 4 KiB page
/// (the device's own `log_max_memic_addr_alignment` is not public; a model choice).
pub(crate) const DM_MAX_LOG_ALIGN: u8 = 12;

/// The NIC's on-chip memory and its allocations.
pub(crate) struct DevMem {
    /// The memory, 8-byte words (atomics: the model writes it through raw addresses while
    /// no reference to a word exists).
    words: Box<[AtomicU64]>,
    /// Per 4 KiB page: the allocation holding it.
    pages: Vec<Option<u32>>,
    /// Allocations by id (index).
    allocs: Vec<Option<DmAlloc>>,
}

/// One allocation (`ibv_alloc_dm`).
#[derive(Clone, Copy)]
struct DmAlloc {
    first_page: usize,
    pages: usize,
    /// Size rounded to 64 bytes: what CPU writes and registrations may cover.
    size: u64,
    /// Memory keys registered on it.
    refs: u32,
}

/// Where a device-memory key's byte 0 is: its allocation and the model's address of it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct DmMap {
    pub(crate) alloc: u32,
    pub(crate) host: u64,
}

impl DevMem {
    /// `size` bytes of on-chip memory (whole 4 KiB pages of it are allocatable).
    pub(crate) fn new(size: u64) -> Self {
        let pages = (size / DM_PAGE) as usize;
        DevMem {
            words: (0..pages as u64 * DM_PAGE / 8)
                .map(|_| AtomicU64::new(0))
                .collect(),
            pages: vec![None; pages],
            allocs: Vec::new(),
        }
    }

    fn base(&self) -> u64 {
        self.words.as_ptr() as u64
    }

    fn alloc_mut(&mut self, id: u32) -> Result<&mut DmAlloc, HwError> {
        self.allocs
            .get_mut(id as usize)
            .and_then(Option::as_mut)
            .ok_or(HwError::NoSuchObject)
    }

    /// Allocates `len` bytes aligned to `1 << log_align`; returns the id and the rounded
    /// size.
    pub(crate) fn alloc(&mut self, len: u64, log_align: u8) -> Result<(u32, u64), HwError> {
        if self.pages.is_empty() {
            return Err(HwError::NotSupported("device memory"));
        }
        if len == 0 || len > self.pages.len() as u64 * DM_PAGE {
            return Err(HwError::InvalidParam("device memory length"));
        }
        if log_align > DM_MAX_LOG_ALIGN {
            return Err(HwError::InvalidParam("device memory alignment"));
        }
        let size = len.next_multiple_of(DM_BASE_SIZE);
        let need = size.div_ceil(DM_PAGE) as usize;
        let first = (0..=self.pages.len() - need)
            .find(|&p| self.pages[p..p + need].iter().all(Option::is_none))
            .ok_or(HwError::OutOfResources)?;
        let alloc = DmAlloc {
            first_page: first,
            pages: need,
            size,
            refs: 0,
        };
        let id = match self.allocs.iter().position(Option::is_none) {
            Some(i) => i,
            None => {
                self.allocs.push(None);
                self.allocs.len() - 1
            }
        };
        self.allocs[id] = Some(alloc);
        self.pages[first..first + need].fill(Some(id as u32));
        Ok((id as u32, size))
    }

    /// Frees allocation `id`; `Busy` while keys are registered on it.
    pub(crate) fn free(&mut self, id: u32) -> Result<(), HwError> {
        let a = *self.alloc_mut(id)?;
        if a.refs != 0 {
            return Err(HwError::Busy);
        }
        self.pages[a.first_page..a.first_page + a.pages].fill(None);
        self.allocs[id as usize] = None;
        Ok(())
    }

    /// The model's address of byte `offset` of allocation `id` for `len` bytes inside it.
    pub(crate) fn at(&mut self, id: u32, offset: u64, len: u64) -> Result<u64, HwError> {
        let base = self.base();
        let a = self.alloc_mut(id)?;
        let inside = offset
            .checked_add(len)
            .is_some_and(|end| len > 0 && end <= a.size);
        if !inside {
            return Err(HwError::BadAddress);
        }
        Ok(base + a.first_page as u64 * DM_PAGE + offset)
    }

    /// A key on `len` bytes at `offset` of allocation `id` takes a reference to it.
    pub(crate) fn map(&mut self, id: u32, offset: u64, len: u64) -> Result<DmMap, HwError> {
        let host = self.at(id, offset, len)?;
        self.alloc_mut(id)?.refs += 1;
        Ok(DmMap { alloc: id, host })
    }

    /// A key on allocation `id` is gone.
    pub(crate) fn unmap(&mut self, id: u32) {
        if let Ok(a) = self.alloc_mut(id) {
            a.refs -= 1;
        }
    }
}
