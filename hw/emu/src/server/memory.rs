//! Device memory and on-demand paging through the ioctl interface: `ibv_alloc_dm` /
//! `ibv_free_dm` / `ibv_reg_dm_mr` (`UVERBS_METHOD_DM_ALLOC`, `DM_FREE`, `DM_MR_REG`), the
//! DM page libmlx5 then maps (`MLX5_IB_MMAP_DEVICE_MEM`) and the CPU stores to it, and
//! `ibv_advise_mr` (`UVERBS_METHOD_ADVISE_MR`), each checked as the kernel checks it and
//! answered from the model (`Nic::alloc_dm`, `free_dm`, `reg_dm_mr`, `dm_write`,
//! `advise_mr`).
//!
//! **Allocation** (drivers/infiniband/hw/mlx5/dm.c `handle_alloc_dm_memic`,
//! `mlx5_cmd_alloc_memic`): the length rounded up to 64 bytes (0: `EINVAL`), the alignment
//! normalised to the device's 64-byte units and refused beyond its
//! `log_max_memic_addr_alignment` (`EINVAL`), whole 4 KiB pages first fit (none:
//! `ENOMEM`). The allocation gets a range of mmap page indices of the context
//! (`add_dm_mmap_entry`: `rdma_user_mmap_entry_insert_range` first fit in
//! `MLX5_IB_MMAP_DEVICE_MEM << 16 ...+ 0xffff`); its first index and the offset of the
//! memory in its first page (0: the model's allocations start on a page) are the answer.
//! libmlx5 maps the pages at that index (`dm_mmap`: command `MLX5_IB_MMAP_DEVICE_MEM`, the
//! index in the extended index bits), exactly their length (`rdma_user_mmap_io`).
//!
//! **Stores.** The mapping is trapped like a UAR page; each store the trap emits (a 4- or
//! 8-byte store, a full 64-byte line, or the contiguous written run of a partial line) goes
//! to `Nic::dm_write` as the CPU's write-combining buffer sends it: a full line as one
//! write, a partial line as aligned 8-byte pieces and 4-byte pieces where 8 do not fit (x86
//! flushes a partial WC buffer in chunks of at most 8 bytes). A store to a freed
//! allocation's mapping is dropped and counted (`misrouted`); on a NIC it would land on
//! whatever the BAR holds there by then.
//!
//! **What is not here.** The kernel keeps an allocation's page indices until the last
//! mapping of them is gone; here they are free again at `DM_FREE` (libmlx5 unmaps right
//! after). Loads of device memory (`ibv_memcpy_from_dm`) are not emulated: the model has
//! no CPU read of it, and the preload stops the program on one (`Mapping::DeviceMemory`).

use super::cmd::Res;
use super::context::{Ctx, Mr};
use super::ioctl::Call;
use super::objects::{access, errno};
use crate::abi::ioctl::*;
use crate::abi::mlx5::{mmap_extended_index, MLX5_IB_MMAP_DEVICE_MEM};
use crate::abi::uverbs::*;
use crate::abi::IntoBytes;
use crate::proto::Mapping;
use mlx5_hw::{in_space, Access, HwError};
use std::os::fd::OwnedFd;

/// The kernel's `PAGE_SIZE`.
const PAGE: u64 = 4096;
/// `MLX5_MEMIC_BASE_ALIGN` (hw/mlx5/dm.h): the device counts alignments in 64-byte units.
const MEMIC_BASE_ALIGN: u32 = 6;
/// `MLX5_MEMIC_BASE_SIZE`: allocations are rounded up to it.
const MEMIC_BASE_SIZE: u64 = 1 << MEMIC_BASE_ALIGN;
/// `log_max_memic_addr_alignment` in the device's units: the model places allocations on
/// 4 KiB pages and serves alignments up to that (log 12), which is 6 in 64-byte units.
const LOG_MAX_MEMIC_ADDR_ALIGNMENT: u32 = 12 - MEMIC_BASE_ALIGN;
/// The mmap page indices of a context's device memory (`(1UL << 16)` of them).
const PAGE_INDICES: u32 = 1 << 16;
/// `MLX5_IB_DM_MEMIC_ALLOWED_ACCESS` (hw/mlx5/mlx5_ib.h): the rights a MEMIC key may have.
const MEMIC_ALLOWED_ACCESS: u32 = IB_UVERBS_ACCESS_LOCAL_WRITE
    | IB_UVERBS_ACCESS_REMOTE_WRITE
    | IB_UVERBS_ACCESS_REMOTE_READ
    | IB_UVERBS_ACCESS_REMOTE_ATOMIC
    | IB_UVERBS_ACCESS_ZERO_BASED;
/// `IB_ACCESS_SUPPORTED` (rdma/ib_verbs.h): every right up to `IB_ACCESS_HUGETLB`, and the
/// optional range.
const ACCESS_SUPPORTED: u32 =
    ((IB_UVERBS_ACCESS_HUGETLB << 1) - 1) | IB_UVERBS_ACCESS_OPTIONAL_RANGE;
/// `ib_access_writable` (rdma/ib_umem.h): the rights that make an ODP umem writable.
const WRITABLE: u32 = IB_UVERBS_ACCESS_LOCAL_WRITE
    | IB_UVERBS_ACCESS_REMOTE_WRITE
    | IB_UVERBS_ACCESS_REMOTE_ATOMIC
    | IB_UVERBS_ACCESS_MW_BIND;

/// One device-memory allocation of a context.
#[derive(Debug)]
pub(crate) struct Dm {
    /// The model's allocation.
    id: u32,
    /// The length asked for (`ib_dm.length`, what registrations are checked against).
    length: u64,
    /// Its first mmap page index, and how many it has.
    page: u32,
    pages: u32,
}

impl Ctx<'_> {
    /// `UVERBS_METHOD_DM_ALLOC` (`ib_uverbs_handler_UVERBS_METHOD_DM_ALLOC`,
    /// `mlx5_ib_alloc_dm`, `handle_alloc_dm_memic`).
    pub(crate) fn dm_alloc(&mut self, call: &Call) -> Res {
        let length = call.u64(self, UVERBS_ATTR_ALLOC_DM_LENGTH)?;
        let alignment = call.u32(self, UVERBS_ATTR_ALLOC_DM_ALIGNMENT)?;
        match call.constant(
            MLX5_IB_ATTR_ALLOC_DM_REQ_TYPE,
            Some(MLX5_IB_UAPI_DM_TYPE_MEMIC),
        )? {
            MLX5_IB_UAPI_DM_TYPE_MEMIC => {}
            // The steering ICM types (`handle_alloc_dm_sw_icm`): the device has no
            // software-owned steering (`sw_owner` caps 0). The kernel asks for
            // CAP_SYS_RAWIO first (`EPERM`); the emulator does not.
            _ => return Err(libc::EOPNOTSUPP),
        }
        // `mlx5_cmd_alloc_memic`.
        let size = length
            .checked_next_multiple_of(MEMIC_BASE_SIZE)
            .unwrap_or(0);
        if size == 0 {
            return Err(libc::EINVAL);
        }
        if alignment.saturating_sub(MEMIC_BASE_ALIGN) > LOG_MAX_MEMIC_ADDR_ALIGNMENT {
            return Err(libc::EINVAL);
        }
        if size > self.nic.caps().max_dm_size {
            return Err(libc::ENOMEM);
        }
        let (id, _) = self
            .nic
            .alloc_dm(size, alignment as u8)
            .map_err(|e| match e {
                HwError::OutOfResources => libc::ENOMEM,
                e => errno(e),
            })?;
        let pages = size.div_ceil(PAGE) as u32;
        let Some(page) = self.free_page_indices(pages) else {
            let _ = self.nic.free_dm(id);
            return Err(libc::ENOMEM);
        };
        // The page index first: its absence fails the call (`uverbs_copy_to`: ENOENT).
        let answered = call
            .copy_to(
                self,
                MLX5_IB_ATTR_ALLOC_DM_RESP_PAGE_INDEX,
                (page as u16).as_bytes(),
            )
            .and_then(|()| {
                call.copy_to(
                    self,
                    MLX5_IB_ATTR_ALLOC_DM_RESP_START_OFFSET,
                    0u64.as_bytes(),
                )
            });
        if let Err(e) = answered {
            let _ = self.nic.free_dm(id);
            return Err(e);
        }
        let handle = call.handle(UVERBS_ATTR_ALLOC_DM_HANDLE)?;
        self.dms.insert(
            handle,
            Dm {
                id,
                length,
                page,
                pages,
            },
        );
        Ok(())
    }

    /// The first run of `n` page indices no allocation of the context holds.
    fn free_page_indices(&self, n: u32) -> Option<u32> {
        let mut start = 0u32;
        loop {
            let end = start.checked_add(n).filter(|&e| e <= PAGE_INDICES)?;
            match self
                .dms
                .values()
                .filter(|d| d.page < end && start < d.page + d.pages)
                .map(|d| d.page + d.pages)
                .max()
            {
                None => return Some(start),
                Some(past) => start = past,
            }
        }
    }

    /// `UVERBS_METHOD_DM_FREE` (`uverbs_free_dm`: `EBUSY` while keys use it).
    pub(crate) fn dm_free(&mut self, call: &Call) -> Res {
        let handle = call.handle(UVERBS_ATTR_FREE_DM_HANDLE)?;
        let dm = self.dms.get(&handle).ok_or(libc::ENOENT)?;
        self.nic.free_dm(dm.id).map_err(errno)?;
        self.dms.remove(&handle);
        Ok(())
    }

    /// `UVERBS_METHOD_DM_MR_REG` (`ib_uverbs_handler_UVERBS_METHOD_DM_MR_REG`,
    /// `mlx5_ib_reg_dm_mr`): zero based, `ib_check_mr_access`, inside the length asked for,
    /// MEMIC's rights; the model then allows local read only (any other right
    /// `EOPNOTSUPP`, docs/model.md "Device memory").
    pub(crate) fn reg_dm_mr(&mut self, call: &Call) -> Res {
        if self.nic.caps().max_dm_size == 0 {
            // `ops.reg_dm_mr` is set with the DM ops.
            return Err(libc::EOPNOTSUPP);
        }
        let offset = call.u64(self, UVERBS_ATTR_REG_DM_MR_OFFSET)?;
        let length = call.u64(self, UVERBS_ATTR_REG_DM_MR_LENGTH)?;
        let flags = call.flags32(UVERBS_ATTR_REG_DM_MR_ACCESS_FLAGS, ACCESS_SUPPORTED)?;
        if flags & IB_UVERBS_ACCESS_ZERO_BASED == 0 {
            return Err(libc::EINVAL);
        }
        access(flags, ACCESS_SUPPORTED)?;
        let dm = self
            .dms
            .get(&call.handle(UVERBS_ATTR_REG_DM_MR_DM_HANDLE)?)
            .ok_or(libc::ENOENT)?;
        if offset > dm.length || length > dm.length || length > dm.length - offset {
            return Err(libc::EINVAL);
        }
        if flags & !MEMIC_ALLOWED_ACCESS != 0 {
            return Err(libc::EINVAL);
        }
        let dm_id = dm.id;
        let pdn = self.pd(call.handle(UVERBS_ATTR_REG_DM_MR_PD_HANDLE)?)?.pdn;
        let rights = Access(flags & !IB_UVERBS_ACCESS_ZERO_BASED);
        let key = self
            .nic
            .reg_dm_mr(pdn, dm_id, offset, length, rights)
            .map_err(errno)?;
        let answered = call
            .copy_to(self, UVERBS_ATTR_REG_DM_MR_RESP_LKEY, key.as_bytes())
            .and_then(|()| call.copy_to(self, UVERBS_ATTR_REG_DM_MR_RESP_RKEY, key.as_bytes()));
        if let Err(e) = answered {
            let _ = self.nic.dereg_mr(key);
            return Err(e);
        }
        let handle = call.handle(UVERBS_ATTR_REG_DM_MR_HANDLE)?;
        self.mrs.insert(
            handle,
            Mr {
                key,
                pdn,
                access: flags,
                addr: 0,
                len: length,
            },
        );
        Ok(())
    }

    /// `UVERBS_METHOD_ADVISE_MR` (`ib_uverbs_handler_UVERBS_METHOD_ADVISE_MR`,
    /// `mlx5_ib_advise_mr`, `mlx5_ib_advise_mr_prefetch`): each key must be an on-demand
    /// key of this PD (`get_prefetchable_mr`: else `ENOENT`; another PD's, or a prefetch for
    /// write of a key that cannot be written, `EPERM`); with
    /// `IB_UVERBS_ADVISE_MR_FLAG_FLUSH` each range is brought in before the next key is
    /// looked at and a range outside its key is `EFAULT` (`pagefault_mr`); without it the
    /// keys are checked first and the ranges brought in afterwards, their failures ignored
    /// (the kernel's queued work; here done before the answer). The three advices bring
    /// pages in alike: the model has no read-only or snapshot translation.
    pub(crate) fn advise_mr(&mut self, call: &Call) -> Res {
        if !self.shared.config.odp {
            // `ops.advise_mr` is set only on a device with ODP.
            return Err(libc::EOPNOTSUPP);
        }
        let advice = call.constant(UVERBS_ATTR_ADVISE_MR_ADVICE, None)? as u32;
        let flags = call.flags32(UVERBS_ATTR_ADVISE_MR_FLAGS, IB_UVERBS_ADVISE_MR_FLAG_FLUSH)?;
        let list = call.bytes(self, UVERBS_ATTR_ADVISE_MR_SGE_LIST)?;
        let sge_size = std::mem::size_of::<ib_uverbs_sge>();
        if list.len() % sge_size != 0 {
            return Err(libc::EINVAL);
        }
        let sges: Vec<ib_uverbs_sge> = list
            .chunks(sge_size)
            .map(|c| crate::abi::read(c, 0).map_err(|e| e.errno()))
            .collect::<Result<_, _>>()?;
        let pdn = self.pd(call.handle(UVERBS_ATTR_ADVISE_MR_PD_HANDLE)?)?.pdn;
        if advice > IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT {
            return Err(libc::EOPNOTSUPP);
        }
        let write = advice == IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH_WRITE;
        if flags & IB_UVERBS_ADVISE_MR_FLAG_FLUSH != 0 {
            for sge in &sges {
                let mr = self.prefetchable(pdn, sge.lkey, write)?;
                self.prefetch(pdn, mr, sge)?;
            }
        } else {
            let mrs = sges
                .iter()
                .map(|sge| self.prefetchable(pdn, sge.lkey, write))
                .collect::<Result<Vec<_>, _>>()?;
            for (mr, sge) in mrs.into_iter().zip(&sges) {
                let _ = self.prefetch(pdn, mr, sge);
            }
        }
        Ok(())
    }

    /// `get_prefetchable_mr`: the on-demand key `lkey` of PD `pdn`.
    fn prefetchable(&self, pdn: u32, lkey: u32, write: bool) -> Result<&Mr, i32> {
        let mr = self
            .mrs
            .values()
            .find(|m| m.key == lkey && m.access & IB_UVERBS_ACCESS_ON_DEMAND != 0)
            .ok_or(libc::ENOENT)?;
        if mr.pdn != pdn || (write && mr.access & WRITABLE == 0) {
            return Err(libc::EPERM);
        }
        Ok(mr)
    }

    /// `pagefault_mr` of one range of `mr`: `EFAULT` outside it; an empty range inside it
    /// brings nothing in.
    fn prefetch(&self, pdn: u32, mr: &Mr, sge: &ib_uverbs_sge) -> Res {
        let len = u64::from(sge.length);
        let inside = sge.addr >= mr.addr
            && sge
                .addr
                .checked_add(len)
                .is_some_and(|end| end <= mr.addr + mr.len && sge.addr < mr.addr + mr.len);
        if !inside {
            return Err(libc::EFAULT);
        }
        if len == 0 {
            return Ok(());
        }
        self.nic
            .advise_mr(pdn, mr.key, in_space(self.space, sge.addr), len)
            .map_err(errno)
    }

    /// One CPU store of `data` at byte `offset` of the device memory mapped at page offset
    /// `pgoff`, in the pieces the CPU's write-combining buffer sends ([`wc_pieces`]).
    pub(crate) fn dm_store(&mut self, pgoff: u64, offset: u32, data: &[u8]) {
        let page = u32::from(mmap_extended_index(pgoff));
        let Some(dm) = self.dms.values().find(|d| d.page == page) else {
            self.uars.misrouted += 1;
            return;
        };
        for (at, len) in wc_pieces(u64::from(offset), data.len()) {
            self.nic
                .dm_write(dm.id, u64::from(offset) + at as u64, &data[at..at + len]);
        }
    }

    /// Free the context's allocations (after its MRs, which hold them).
    pub(crate) fn free_dms(&mut self) {
        for (_, dm) in self.dms.drain() {
            let _ = self.nic.free_dm(dm.id);
        }
    }
}

/// An mmap of device memory (`mlx5_ib_mmap_offset` of a MEMIC entry): an allocation's
/// first page index, exactly its pages (`rdma_user_mmap_io`), else `EINVAL`.
pub(crate) fn mmap(ctx: &Ctx<'_>, pgoff: u64, len: u64) -> Result<(Mapping, Option<OwnedFd>), i32> {
    debug_assert_eq!(
        crate::abi::mlx5::mmap_command(pgoff),
        MLX5_IB_MMAP_DEVICE_MEM
    );
    let page = u32::from(mmap_extended_index(pgoff));
    let dm = ctx
        .dms
        .values()
        .find(|d| d.page == page)
        .ok_or(libc::EINVAL)?;
    if len != u64::from(dm.pages) * PAGE {
        return Err(libc::EINVAL);
    }
    Ok((Mapping::DeviceMemory, None))
}

/// How a CPU sends a run of `len` bytes it wrote at `offset` of a write-combining mapping:
/// `(start in the run, length)` pieces. A full aligned 64-byte line is one write; a partial
/// line goes out in naturally aligned chunks of at most 8 bytes (Intel SDM vol. 3, 12.3.1:
/// a partial WC buffer is written as several 8-byte-or-smaller transactions), 4-byte ones
/// where 8 do not fit; what is not 4-byte aligned stays one piece (the model refuses it).
pub(crate) fn wc_pieces(offset: u64, len: usize) -> Vec<(usize, usize)> {
    if len == 64 && offset % 64 == 0 {
        return vec![(0, 64)];
    }
    let mut pieces = Vec::new();
    let mut at = 0;
    while at < len {
        let here = offset + at as u64;
        let left = len - at;
        let n = if here % 8 == 0 && left >= 8 {
            8
        } else if here % 4 == 0 && left >= 4 {
            4
        } else {
            left
        };
        pieces.push((at, n));
        at += n;
    }
    pieces
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_line_is_one_write_and_a_partial_one_goes_in_aligned_chunks() {
        assert_eq!(wc_pieces(128, 64), [(0, 64)]);
        // 12 bytes at a line start: 8 then 4.
        assert_eq!(wc_pieces(0, 12), [(0, 8), (8, 4)]);
        // A run starting on a 4-byte boundary: 4, then 8-byte chunks, then the 4 left.
        assert_eq!(wc_pieces(4, 24), [(0, 4), (4, 8), (12, 8), (20, 4)]);
        // A lone 4- or 8-byte store passes as it is.
        assert_eq!(wc_pieces(36, 4), [(0, 4)]);
        assert_eq!(wc_pieces(40, 8), [(0, 8)]);
        // Misaligned bytes stay one piece, which the model counts as malformed.
        assert_eq!(wc_pieces(2, 3), [(0, 3)]);
        // 64 bytes that are not one line are chunks.
        assert_eq!(wc_pieces(32, 64).len(), 8);
    }
}
