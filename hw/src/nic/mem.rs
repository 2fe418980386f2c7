//! Protection domains, memory keys and device memory in the public API.

use crate::nic::{free, insert, slot, Nic, ALL_ACCESS};
use crate::state::{Mr, MrSlot, NicState, INVALID_LKEY, PDN_BASE};
use crate::types::{Access, HwError};

/// The access bits a memory key may carry: the rights and `ON_DEMAND`.
const MR_ACCESS: u32 = ALL_ACCESS | Access::ON_DEMAND.0;

impl Nic {
    /// Allocate a protection domain.
    pub fn alloc_pd(&self) -> u32 {
        self.with(|n| insert(&mut n.pds, 0, PDN_BASE))
    }

    /// Free a protection domain; `Busy` while MRs, QPs or SRQs use it.
    pub fn dealloc_pd(&self, pdn: u32) -> Result<(), HwError> {
        self.with(|n| free(&mut n.pds, pdn, PDN_BASE))
    }

    /// Register `[addr, addr+len)` in PD `pdn` in 4 KiB pages; returns the key (lkey ==
    /// rkey).
    ///
    /// # Safety
    /// The range must be valid, writable process memory that stays allocated until the key
    /// is deregistered; the model reads and writes it whenever a WQE or an incoming request
    /// names the key.
    pub unsafe fn reg_mr(
        &self,
        pdn: u32,
        addr: u64,
        len: u64,
        access: Access,
    ) -> Result<u32, HwError> {
        // SAFETY: forwarded from this function's contract.
        unsafe { self.reg_mr_paged(pdn, addr, len, access, 4096) }
    }

    /// Register `[addr, addr+len)` in PD `pdn`, backed by pages of `page_size` bytes (4 KiB
    /// or 2 MiB: the page size the kernel's registration finds, `mlx5_umem_find_best_pgsz`,
    /// and what one translation entry covers); returns the key (lkey == rkey).
    ///
    /// # Safety
    /// As [`Nic::reg_mr`].
    pub unsafe fn reg_mr_paged(
        &self,
        pdn: u32,
        addr: u64,
        len: u64,
        access: Access,
        page_size: u64,
    ) -> Result<u32, HwError> {
        check_mr_access(access)?;
        if addr == 0 || len == 0 || addr.checked_add(len).is_none() {
            return Err(HwError::BadAddress);
        }
        if !page_size.is_power_of_two() || !(4096..=1 << 30).contains(&page_size) {
            return Err(HwError::InvalidParam("page_size"));
        }
        let on_demand = access.contains(Access::ON_DEMAND);
        self.with(|n| {
            if on_demand && !n.cfg.odp {
                return Err(HwError::NotSupported("on-demand paging"));
            }
            slot(&mut n.pds, pdn, PDN_BASE)?;
            new_key(
                n,
                Mr {
                    pdn,
                    addr,
                    len,
                    access,
                    invalid: false,
                    remote_invalidate: false,
                    page_shift: page_size.trailing_zeros() as u8,
                    present: on_demand.then(Default::default),
                    dm: None,
                },
            )
        })
    }

    /// Allocate `len` bytes of device memory (`ibv_alloc_dm`, MEMIC) aligned to
    /// `1 << log_align`: the size is rounded up to 64 bytes and whole 4 KiB pages of the
    /// NIC's [`NicConfig::dm_size`](crate::NicConfig::dm_size) are taken
    /// (`mlx5_cmd_alloc_memic`). Returns the allocation's id and its rounded size.
    /// `NotSupported` on a NIC without device memory, `InvalidParam` for a length of 0 or
    /// beyond `dm_size` or an alignment beyond 4 KiB, `OutOfResources` when no run of free
    /// pages is long enough.
    pub fn alloc_dm(&self, len: u64, log_align: u8) -> Result<(u32, u64), HwError> {
        self.with(|n| n.dm.alloc(len, log_align))
    }

    /// Free a device-memory allocation (`ibv_free_dm`); `Busy` while keys are registered on
    /// it.
    pub fn free_dm(&self, dm: u32) -> Result<(), HwError> {
        self.with(|n| n.dm.free(dm))
    }

    /// One CPU store through the write-combining mapping of allocation `dm`: `data` (4, 8 or
    /// a merged 64-byte line, aligned to its size) at `offset`. It crosses the link as one
    /// MMIO write TLP (`Purpose::DeviceMemory`); a write of another size, misaligned or
    /// outside the allocation is counted in `Stats::bad_mmio` and dropped.
    pub fn dm_write(&self, dm: u32, offset: u64, data: &[u8]) {
        self.with(|n| crate::dm::write(n, dm, offset, data));
    }

    /// Register `len` bytes at `offset` of device-memory allocation `dm` in PD `pdn`
    /// (`ibv_reg_dm_mr`): a zero-based key (its addresses run from 0) without translation
    /// entries. Only local read (gather) is modelled: any other right is `NotSupported`. A
    /// range outside the allocation is `BadAddress`.
    pub fn reg_dm_mr(
        &self,
        pdn: u32,
        dm: u32,
        offset: u64,
        len: u64,
        access: Access,
    ) -> Result<u32, HwError> {
        crate::dm::check_dm_access(access)?;
        self.with(|n| {
            slot(&mut n.pds, pdn, PDN_BASE)?;
            let map = n.dm.map(dm, offset, len)?;
            let key = new_key(
                n,
                Mr {
                    pdn,
                    addr: 0,
                    len,
                    access,
                    invalid: false,
                    remote_invalidate: false,
                    page_shift: crate::state::DM_PAGE.trailing_zeros() as u8,
                    present: None,
                    dm: Some(map),
                },
            );
            if key.is_err() {
                n.dm.unmap(dm);
            }
            key
        })
    }

    /// Let a SEND with invalidate from a peer invalidate `key`, as the mkey context's
    /// remote-invalidate enable (`en_rinval`) does. The kernel sets it only for
    /// fast-registration MRs (`set_reg_mkey_seg` in drivers/infiniband/hw/mlx5/wr.c) and
    /// type-2 memory windows (`mlx5_ib_alloc_mw`), never for `ibv_reg_mr` keys, so keys of
    /// [`Nic::reg_mr`] start without it. This stands in for those key types, which the
    /// model does not have.
    pub fn allow_remote_invalidate(&self, key: u32) -> Result<(), HwError> {
        self.with(|n| {
            n.mr_mut(key)
                .ok_or(HwError::NoSuchObject)?
                .remote_invalidate = true;
            Ok(())
        })
    }

    /// Tells the NIC that the queue memory at `[addr, addr + len)` is in pages of
    /// `page_size` bytes (4 KiB or 2 MiB), as the kernel's queue creation does: it registers
    /// a CQ, QP or SRQ buffer as a umem with the largest page size the memory allows and
    /// hands the device its page list and `log_page_size` (drivers/infiniband/hw/mlx5
    /// cq.c `create_cq_user`, qp.c `_create_user_qp`, `mlx5_umem_find_best_pgsz`). Rings
    /// the NIC was told nothing about are in 4 KiB pages. Replaces what overlaps the range
    /// (memory reused by a later ring). Only translations use it
    /// (`TranslationCache::rings`); doorbell records need none: the kernel gives the device
    /// their bus address (`dbr_addr`, `cq->db.dma`).
    pub fn set_ring_page_size(&self, addr: u64, len: u64, page_size: u64) -> Result<(), HwError> {
        if !page_size.is_power_of_two() || !(4096..=1 << 30).contains(&page_size) {
            return Err(HwError::InvalidParam("page_size"));
        }
        let end = addr.checked_add(len).ok_or(HwError::BadAddress)?;
        if len == 0 {
            return Err(HwError::BadAddress);
        }
        self.with(|n| {
            let overlapping: Vec<u64> = n
                .ring_pages
                .range(..end)
                .filter(|(_, &(e, _))| e > addr)
                .map(|(&start, _)| start)
                .collect();
            for start in overlapping {
                n.ring_pages.remove(&start);
            }
            n.ring_pages
                .insert(addr, (end, page_size.trailing_zeros() as u8));
            Ok(())
        })
    }

    /// Prefetch `[addr, addr+len)` of on-demand key `key` of PD `pdn` (`ibv_advise_mr`
    /// with `IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE` and `IBV_ADVISE_MR_FLAG_FLUSH`: done when
    /// this returns): every page not yet present is brought in as a fault would (its
    /// translation written, `Purpose::Translation`), without a page-fault event. A key
    /// that is not on demand or of another PD is `InvalidParam` (the kernel's
    /// `pagefault_single_data_segment` answers `-EINVAL`); a range outside the key, or a
    /// page not mapped in the process, is `BadAddress` (`-EFAULT`).
    pub fn advise_mr(&self, pdn: u32, key: u32, addr: u64, len: u64) -> Result<(), HwError> {
        self.with(|n| {
            let mr = n.mr_mut(key).ok_or(HwError::NoSuchObject)?;
            if mr.present.is_none() || mr.pdn != pdn {
                return Err(HwError::InvalidParam("prefetch of a key not on demand"));
            }
            let inside = addr >= mr.addr
                && addr
                    .checked_add(len)
                    .is_some_and(|end| end <= mr.addr + mr.len);
            if len == 0 || !inside {
                return Err(HwError::BadAddress);
            }
            match n.fault_in(None, key, addr, len) {
                crate::state::Touch::Unmapped => Err(HwError::BadAddress),
                _ => Ok(()),
            }
        })
    }

    /// Deregister a memory key.
    pub fn dereg_mr(&self, key: u32) -> Result<(), HwError> {
        self.with(|n| {
            let s = n
                .mrs
                .get_mut((key >> 8) as usize)
                .filter(|s| s.variant == key as u8 && key >> 8 != 0)
                .ok_or(HwError::NoSuchObject)?;
            let mr = s.mr.take().ok_or(HwError::NoSuchObject)?;
            *slot(&mut n.pds, mr.pdn, PDN_BASE)? -= 1;
            if let Some(m) = mr.dm {
                n.dm.unmap(m.alloc);
            }
            Ok(())
        })
    }
}

/// A memory key granting remote write or atomic must also grant local write (the verbs rule
/// for `ibv_reg_mr`; it does not apply to QP access flags).
fn check_mr_access(a: Access) -> Result<(), HwError> {
    if a.0 & !MR_ACCESS != 0 {
        return Err(HwError::InvalidParam("access flags"));
    }
    let needs_local = Access::REMOTE_WRITE | Access::REMOTE_ATOMIC;
    if a.0 & needs_local.0 != 0 && !a.contains(Access::LOCAL_WRITE) {
        Err(HwError::InvalidParam(
            "remote write/atomic needs LOCAL_WRITE",
        ))
    } else {
        Ok(())
    }
}

/// A new key for `mr` in a free slot (PD `mr.pdn` exists, checked by the caller), which
/// takes a reference to the PD.
fn new_key(n: &mut NicState, mr: Mr) -> Result<u32, HwError> {
    let i = match n.mrs.iter().skip(1).position(|s| s.mr.is_none()) {
        Some(i) => i + 1,
        None => {
            n.mrs.push(MrSlot {
                variant: 0,
                mr: None,
            });
            n.mrs.len() - 1
        }
    };
    if i >= 1 << 24 {
        return Err(HwError::OutOfResources);
    }
    *slot(&mut n.pds, mr.pdn, PDN_BASE)? += 1;
    let s = &mut n.mrs[i];
    // Variants cycle through 1..=255, so a freed key is not reused soon and no key is ever
    // MLX5_INVALID_LKEY (0x100).
    s.variant = s.variant % 255 + 1;
    s.mr = Some(mr);
    let key = (i as u32) << 8 | u32::from(s.variant);
    debug_assert_ne!(key, INVALID_LKEY);
    Ok(key)
}
