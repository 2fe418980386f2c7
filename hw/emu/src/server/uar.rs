//! UAR pages: the kernel's static bfreg scheme (`mlx5_ib_alloc_ucontext` with
//! `tot_bfregs` != 0, drivers/infiniband/hw/mlx5/main.c `calc_total_bfregs`; qp.c
//! `alloc_bfreg`), the `mmap`s of the command fd (`mlx5_ib_mmap`), and the routing of each
//! CPU store on a program's UAR page to the model.
//!
//! libmlx5 (v44 mlx5.c `mlx5_set_context`) maps `tot_bfregs / 2` pages and puts bfreg
//! `4 * page + k` (k = 0, 1; 2 and 3 are the fast-path registers it never hands out) at
//! `page + 0x800 + k * bf_reg_size`, each of two BlueFlame halves of `bf_reg_size / 2`
//! bytes; every CQ is armed through page 0 at +0x20. The model gives each QP a UAR page of
//! its own, with one register at 0x800 in halves of `bf_size`. A store reaches the model
//! as the device would see it: the QP is the one the control segment names (bytes 4..7 of
//! a doorbell or of a BlueFlame copy's first chunk), and must be a QP of this context on
//! that very bfreg; the later chunks of a copy go where its first went. A store that names
//! no such QP is dropped and counted (`misrouted` in the report).

use super::context::Ctx;
use crate::abi::mlx5::*;
use crate::proto::Mapping;
use std::collections::HashMap;
use std::os::fd::OwnedFd;

/// `bf_reg_size`: two BlueFlame halves of 256 bytes (the model's `bf_size`).
pub(crate) const BF_REG_SIZE: u32 = 512;
/// The kernel's gross bfregs per 4 KiB UAR (`MLX5_BFREGS_PER_UAR`) and the usable ones
/// (`MLX5_NON_FP_BFREGS_PER_UAR`).
const BFREGS_PER_UAR: u32 = 4;
const NON_FP_BFREGS_PER_UAR: u32 = 2;
/// `MLX5_MAX_BFREGS`.
const MAX_BFREGS: u32 = 512;
/// Where the registers start in a UAR page (`MLX5_BF_OFFSET`), and the CQ arm doorbell
/// (`MLX5_CQ_DOORBELL`).
const BF_OFFSET: u32 = 0x800;
const CQ_DOORBELL: u32 = 0x20;
/// The model's UAR page every CQ is armed through.
const MODEL_CQ_UAR: u32 = 0;
const PAGE: u64 = 4096;

/// A context's bfregs.
#[derive(Debug, Default)]
pub(crate) struct Uars {
    /// Usable ("net") bfregs: `tot_bfregs`.
    total: u32,
    low_latency: u32,
    /// QPs on each net bfreg.
    users: Vec<u32>,
    /// The QP each (gross bfreg, half) is receiving a BlueFlame copy for.
    open: HashMap<(u32, u32), u32>,
    /// Stores that named no QP of the context on their register.
    pub(crate) misrouted: u64,
}

impl Uars {
    /// `calc_total_bfregs` for 4 KiB UARs: the request rounded up to whole pages; returns
    /// `tot_bfregs`.
    pub(crate) fn configure(&mut self, total: u32, low_latency: u32) -> Result<u32, i32> {
        if total == 0 {
            return Err(libc::EINVAL);
        }
        if total > MAX_BFREGS {
            return Err(libc::ENOMEM);
        }
        let total = total.next_multiple_of(NON_FP_BFREGS_PER_UAR);
        if low_latency > total - 1 {
            return Err(libc::EINVAL);
        }
        self.total = total;
        self.low_latency = low_latency;
        self.users = vec![0; total as usize];
        Ok(total)
    }

    /// The UAR pages the program maps.
    fn pages(&self) -> u32 {
        self.total / NON_FP_BFREGS_PER_UAR
    }

    /// `alloc_bfreg`: a free low-latency bfreg (dedicated), else the least used medium
    /// one, else bfreg 0 (doorbells only). Returns the net index.
    pub(crate) fn alloc(&mut self) -> u32 {
        // `num_med_bfreg`: all but the low-latency ones and bfreg 0.
        let medium = self.total.saturating_sub(self.low_latency + 1);
        let first_high = medium + 1;
        let pick = (first_high..self.total)
            .find(|&i| self.users[i as usize] == 0)
            .or_else(|| (1..first_high).min_by_key(|&i| (self.users[i as usize], i)))
            .unwrap_or(0);
        self.users[pick as usize] += 1;
        pick
    }

    /// A QP on net bfreg `net` is gone.
    pub(crate) fn free(&mut self, net: u32) {
        if let Some(n) = self.users.get_mut(net as usize) {
            *n = n.saturating_sub(1);
        }
    }

    /// The kernel's "gross" index of net bfreg `net` (`bfregn_to_uar_index`'s numbering,
    /// what `mlx5_ib_create_qp_resp.bfreg_index` carries).
    pub(crate) fn gross(net: u32) -> u32 {
        net / NON_FP_BFREGS_PER_UAR * BFREGS_PER_UAR + net % NON_FP_BFREGS_PER_UAR
    }
}

/// An mmap of the command fd (`mlx5_ib_mmap`): a UAR page by index (regular, WC or NC:
/// stores are stores), or the clock-info page, one page each as the kernel requires; or
/// device memory (`super::memory::mmap`).
pub(crate) fn mmap(
    ctx: &mut Ctx<'_>,
    offset: u64,
    len: u64,
) -> Result<(Mapping, Option<OwnedFd>), i32> {
    if offset % PAGE == 0 && mmap_command(offset / PAGE) == MLX5_IB_MMAP_DEVICE_MEM {
        return super::memory::mmap(ctx, offset / PAGE, len);
    }
    if offset % PAGE != 0 || len != PAGE {
        return Err(libc::EINVAL);
    }
    let pgoff = offset / PAGE;
    let index = u32::from(mmap_index(pgoff));
    match mmap_command(pgoff) {
        MLX5_IB_MMAP_REGULAR_PAGE | MLX5_IB_MMAP_WC_PAGE | MLX5_IB_MMAP_NC_PAGE => {
            if index >= ctx.uars.pages() {
                return Err(libc::EINVAL);
            }
            Ok((Mapping::Uar, None))
        }
        // The page of the device's internal timer (`mlx5_ib_mmap`: read-only, one page).
        MLX5_IB_MMAP_CORE_CLOCK => match ctx.nic.read_clock() {
            Some(_) => Ok((Mapping::Registers, None)),
            None => Err(libc::EOPNOTSUPP),
        },
        MLX5_IB_MMAP_CLOCK_INFO => {
            if index != MLX5_IB_CLOCK_INFO_V1 {
                return Err(libc::EINVAL);
            }
            let page = super::clock::page(ctx)?;
            Ok((Mapping::Shared, Some(page)))
        }
        _ => Err(libc::EINVAL),
    }
}

impl Ctx<'_> {
    /// One CPU store of `data` at `offset` of the UAR page the program mapped at page
    /// offset `pgoff`: to the model's UAR of the QP it is for, or the CQ arm (or to device
    /// memory, for its mapping).
    pub(crate) fn store(&mut self, pgoff: u64, offset: u32, data: &[u8]) {
        if mmap_command(pgoff) == MLX5_IB_MMAP_DEVICE_MEM {
            return self.dm_store(pgoff, offset, data);
        }
        let page = u32::from(mmap_index(pgoff));
        self.shared.reap();
        let routed = self.route(page, offset, data).is_some();
        if super::trace() {
            let hex: String = data.iter().map(|b| format!("{b:02x}")).collect();
            eprintln!(
                "mlx5-emu: space {} store page {page} +{offset:#x}: {hex}{}",
                self.space,
                if routed { "" } else { " (misrouted)" }
            );
        }
        if !routed {
            self.uars.misrouted += 1;
        }
        self.pump();
    }

    fn route(&mut self, page: u32, offset: u32, data: &[u8]) -> Option<()> {
        if page >= self.uars.pages() {
            return None;
        }
        if offset == CQ_DOORBELL {
            if page != 0 {
                return None;
            }
            self.nic.mmio_write(MODEL_CQ_UAR, CQ_DOORBELL, data);
            return Some(());
        }
        let rel = offset.checked_sub(BF_OFFSET)?;
        let (k, in_reg) = (rel / BF_REG_SIZE, rel % BF_REG_SIZE);
        if k >= NON_FP_BFREGS_PER_UAR {
            return None;
        }
        let gross = page * BFREGS_PER_UAR + k;
        let half_size = BF_REG_SIZE / 2;
        let (half, within) = (in_reg / half_size, in_reg % half_size);
        let qpn = if within == 0 {
            // A doorbell or a copy's first chunk: the control segment names the QP.
            let qpn_ds = u32::from_be_bytes(data.get(4..8)?.try_into().ok()?);
            let qpn = qpn_ds >> 8;
            self.uars.open.insert((gross, half), qpn);
            qpn
        } else {
            *self.uars.open.get(&(gross, half))?
        };
        let qp = self
            .qps
            .values()
            .find(|q| q.qpn == qpn && Uars::gross(q.bfreg) == gross)?;
        self.nic
            .mmio_write(qp.uar, BF_OFFSET + half * half_size + within, data);
        Some(())
    }

    /// A CPU load of `len` bytes at `offset` of the register page mapped at page offset
    /// `pgoff`: the core-clock page's internal timer (`internal_timer_h` then `_l`, each a
    /// big-endian 32-bit register, read by `mlx5_read_clock` as two 4-byte loads), the
    /// bytes as they lie in the page, little-endian in the value's low bytes as the CPU
    /// loads them. Any other load is counted as misrouted and reads zeros.
    pub(crate) fn load(&mut self, pgoff: u64, offset: u32, len: u8) -> u64 {
        let clock = (mmap_command(pgoff) == MLX5_IB_MMAP_CORE_CLOCK)
            .then(|| self.nic.read_clock())
            .flatten();
        let (at, len) = (offset as usize, usize::from(len));
        match clock {
            Some(cycles) if at + len <= 8 => {
                let mut value = [0u8; 8];
                value[..len].copy_from_slice(&cycles.to_be_bytes()[at..at + len]);
                u64::from_le_bytes(value)
            }
            _ => {
                self.uars.misrouted += 1;
                0
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bfregs_are_allocated_as_the_kernel_does() {
        let mut u = Uars::default();
        assert_eq!(u.configure(16, 4), Ok(16));
        // Low latency first (12..15, dedicated), then the least used medium one (1..11).
        assert_eq!(
            (0..4).map(|_| u.alloc()).collect::<Vec<_>>(),
            [12, 13, 14, 15]
        );
        assert_eq!(u.alloc(), 1);
        assert_eq!(u.alloc(), 2);
        u.free(13);
        assert_eq!(u.alloc(), 13);
        // Gross numbering: 4 per page, of which 2 usable.
        assert_eq!([0, 1, 2, 3, 13].map(Uars::gross), [0, 1, 4, 5, 25]);
    }

    #[test]
    fn a_request_is_rounded_and_checked_as_calc_total_bfregs_does() {
        let mut u = Uars::default();
        assert_eq!(u.configure(0, 0), Err(libc::EINVAL));
        assert_eq!(u.configure(513, 4), Err(libc::ENOMEM));
        assert_eq!(u.configure(15, 4), Ok(16));
        assert_eq!(u.configure(4, 4), Err(libc::EINVAL));
        assert_eq!(u.pages(), 8, "the last good configuration stays");
    }

    #[test]
    fn with_no_low_latency_bfreg_the_medium_ones_are_shared() {
        let mut u = Uars::default();
        u.configure(4, 0).unwrap();
        assert_eq!(
            (0..5).map(|_| u.alloc()).collect::<Vec<_>>(),
            [1, 2, 3, 1, 2]
        );
    }
}
