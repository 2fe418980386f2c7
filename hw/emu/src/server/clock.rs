//! The clock-info page (`MLX5_IB_MMAP_CLOCK_INFO`, `struct mlx5_ib_clock_info`): a page the
//! kernel keeps up to date for `mlx5dv_get_clock_info`, which converts CQE timestamps to
//! nanoseconds without a system call. Here a shared memory file the server writes and the
//! program maps read-only, written under the kernel's protocol
//! (drivers/net/ethernet/mellanox/mlx5/core/lib/clock.c `mlx5_update_clock_info_page`):
//! `sign` made odd (`MLX5_IB_CLOCK_INFO_KERNEL_UPDATING`) while the fields change, then
//! advanced to the next even value, so a reader retries a page it caught mid-update.

use super::context::Ctx;
use crate::abi::mlx5::{mlx5_ib_clock_info, MLX5_IB_CLOCK_INFO_KERNEL_UPDATING};
use crate::abi::IntoBytes;
use mlx5_hw::Nic;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Weak};

const PAGE: usize = 4096;

/// One context's clock-info page.
#[derive(Debug)]
pub(crate) struct ClockPage {
    memfd: OwnedFd,
    map: NonNull<u8>,
    nic: usize,
}

// SAFETY: the mapping is owned by the page and only written through `update`, which the
// server serialises per page (the ticker, or the context's thread at creation).
unsafe impl Send for ClockPage {}
// SAFETY: as above; concurrent updates would only interleave whole seqlock rounds.
unsafe impl Sync for ClockPage {}

impl ClockPage {
    fn new(nic: usize) -> std::io::Result<ClockPage> {
        // SAFETY: memfd_create with a NUL-terminated name; the fd is owned below.
        let fd = unsafe { libc::memfd_create(c"mlx5-emu-clock-info".as_ptr(), libc::MFD_CLOEXEC) };
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: a fresh fd, owned once.
        let memfd = unsafe { OwnedFd::from_raw_fd(fd) };
        // SAFETY: ftruncate of an fd this function owns.
        if unsafe { libc::ftruncate(memfd.as_raw_fd(), PAGE as libc::off_t) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: a new shared mapping of the whole (one-page) file.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                PAGE,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                memfd.as_raw_fd(),
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error());
        }
        Ok(ClockPage {
            memfd,
            map: NonNull::new(p.cast()).expect("mmap returned a mapping"),
            nic,
        })
    }

    /// Write the NIC's current clock information, as the kernel's update does.
    pub(crate) fn update(&self, nic: &Nic) {
        let Some(ci) = nic.clock_info() else { return };
        // SAFETY: the page is mapped and 4096 bytes long; `sign` is its first u32, aligned.
        let sign = unsafe { &*self.map.as_ptr().cast::<AtomicU32>() };
        let before = sign.load(Ordering::Acquire) & !MLX5_IB_CLOCK_INFO_KERNEL_UPDATING;
        sign.store(
            before | MLX5_IB_CLOCK_INFO_KERNEL_UPDATING,
            Ordering::SeqCst,
        );
        let info = mlx5_ib_clock_info {
            sign: 0,
            resv: 0,
            nsec: ci.nsec,
            cycles: ci.last_cycles,
            frac: ci.frac,
            mult: ci.mult,
            shift: ci.shift,
            mask: ci.mask,
            overflow_period: 0,
        };
        let bytes = &info.as_bytes()[4..];
        // SAFETY: the fields after `sign` lie within the page; nothing else writes it.
        unsafe {
            std::ptr::copy_nonoverlapping(bytes.as_ptr(), self.map.as_ptr().add(4), bytes.len())
        };
        sign.store(
            before + 2 * MLX5_IB_CLOCK_INFO_KERNEL_UPDATING,
            Ordering::Release,
        );
    }

    /// The NIC this page follows.
    pub(crate) fn nic(&self) -> usize {
        self.nic
    }
}

impl Drop for ClockPage {
    fn drop(&mut self) {
        // SAFETY: the page's own mapping, unmapped once.
        unsafe { libc::munmap(self.map.as_ptr().cast(), PAGE) };
    }
}

/// The context's clock-info page (made on the first mmap), as an fd the program maps.
pub(crate) fn page(ctx: &mut Ctx<'_>) -> Result<OwnedFd, i32> {
    if ctx.nic.clock_info().is_none() {
        return Err(libc::EOPNOTSUPP);
    }
    let page = match &ctx.clock_page {
        Some(p) => p.clone(),
        None => {
            let p = Arc::new(ClockPage::new(ctx.index).map_err(|_| libc::ENOMEM)?);
            p.update(ctx.nic);
            ctx.shared
                .clock_pages
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(Arc::downgrade(&p));
            ctx.clock_page = Some(p.clone());
            p
        }
    };
    page.memfd.try_clone().map_err(|_| libc::EMFILE)
}

/// Refresh every live page (the ticker's job), forgetting the pages of closed contexts.
pub(crate) fn refresh(pages: &std::sync::Mutex<Vec<Weak<ClockPage>>>, nics: &[Nic]) {
    let mut pages = pages.lock().unwrap_or_else(|e| e.into_inner());
    pages.retain(|w| match w.upgrade() {
        Some(p) => {
            p.update(&nics[p.nic()]);
            true
        }
        None => false,
    });
}
