//! The `sim` backend's handles: each object of the model a control object keeps, released
//! in `Drop` (UAR, device memory, PD, MR, channel, CQ, SRQ, QP).

use std::fs::File;
use std::os::fd::{AsFd, BorrowedFd};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::error::Error;
use crate::mem::{memlock_limit, MemOptions, Memory, Pages};
use crate::mmio::{DmWindow, Uar};
use crate::prm::SEND_WQE_BB;

use super::*;

/// A UAR page of the model: stores become MMIO events.
#[derive(Debug)]
pub struct SimUar {
    pub(super) nic: NicHandle,
    pub(super) uar: u32,
}

impl Uar for SimUar {
    #[inline]
    unsafe fn write64(&self, offset: usize, bytes: [u8; 8]) {
        self.nic.mmio_write(self.uar, offset as u32, &bytes);
    }

    #[inline]
    unsafe fn write_block(&self, offset: usize, block: &[u64; 8]) {
        let mut bytes = [0u8; SEND_WQE_BB];
        for (chunk, word) in bytes.chunks_exact_mut(8).zip(block) {
            chunk.copy_from_slice(&word.to_ne_bytes());
        }
        self.nic.mmio_write(self.uar, offset as u32, &bytes);
    }

    /// The model's deferred work (retries, held-back CQEs) runs when a poll finds nothing.
    #[inline]
    fn idle(&self) {
        self.nic.progress();
    }
}

/// Device memory of the model: stores become `Nic::dm_write` calls (MMIO writes).
#[derive(Debug)]
pub struct SimDm {
    pub(super) nic: NicHandle,
    pub(super) id: u32,
}

impl SimDm {
    /// The model's allocation id.
    pub fn id(&self) -> u32 {
        self.id
    }
}

impl DmWindow for SimDm {
    fn write64(&self, offset: usize, bytes: [u8; 8]) {
        self.nic.dm_write(self.id, offset as u64, &bytes);
    }

    fn write_line(&self, offset: usize, line: &[u64; 8]) {
        let mut bytes = [0u8; SEND_WQE_BB];
        for (chunk, word) in bytes.chunks_exact_mut(8).zip(line) {
            chunk.copy_from_slice(&word.to_ne_bytes());
        }
        self.nic.dm_write(self.id, offset as u64, &bytes);
    }
}

impl Drop for SimDm {
    fn drop(&mut self) {
        // Dropped after every region on it (they hold it), so this cannot be busy.
        let _ = self.nic.free_dm(self.id);
    }
}

/// A model protection domain.
#[derive(Debug)]
pub struct SimPd {
    pub(super) nic: NicHandle,
    pub(super) pdn: u32,
    /// A parent domain ([`Backend::alloc_parent_domain`]): where its queues' rings go. It
    /// shares `pdn` with its parent, which deallocates it.
    pub(super) rings: Option<MemOptions>,
}

impl SimPd {
    /// Where a queue created on this PD puts its buffer and its doorbell record: a parent
    /// domain's choice (records on base pages of its node: libmlx5 asks a domain for each
    /// 8-byte record alone), else `context`'s for both.
    pub(super) fn ring_memory(&self, context: MemOptions) -> (MemOptions, MemOptions) {
        match self.rings {
            Some(rings) => (
                rings,
                MemOptions {
                    pages: Pages::Base,
                    ..rings
                },
            ),
            None => (context, context),
        }
    }
}

impl Drop for SimPd {
    fn drop(&mut self) {
        // Dropped last of its objects (they hold it), so this cannot be busy; a parent
        // domain leaves the PD to its parent.
        if self.rings.is_none() {
            let _ = self.nic.dealloc_pd(self.pdn);
        }
    }
}

/// Bytes the model's registrations have pinned in this process: what the kernel counts in
/// `pinned_vm` for registrations on hardware (`ib_umem_get`), checked against the same
/// limit ([`memlock_limit`]).
pub(super) static PINNED: AtomicU64 = AtomicU64::new(0);

/// Pins `len` bytes (rounded to whole pages of `page_size`) against the locked-memory
/// limit, as `ib_umem_get` does: [`Error::MemlockTooLow`] past it. Returns the bytes pinned.
pub(super) fn pin(len: usize, page_size: usize) -> Result<u64, Error> {
    let bytes = len.next_multiple_of(page_size.max(1)) as u64;
    let total = PINNED.fetch_add(bytes, Ordering::Relaxed) + bytes;
    match memlock_limit() {
        Some(limit) if total > limit => {
            PINNED.fetch_sub(bytes, Ordering::Relaxed);
            Err(Error::MemlockTooLow {
                needed: total,
                limit,
            })
        }
        _ => Ok(bytes),
    }
}

/// A model memory key.
#[derive(Debug)]
pub struct SimMr {
    pub(super) nic: NicHandle,
    pub(super) key: u32,
    /// Bytes counted in [`PINNED`] (0 on demand).
    pub(super) pinned: u64,
}

impl Drop for SimMr {
    fn drop(&mut self) {
        let _ = self.nic.dereg_mr(self.key);
        PINNED.fetch_sub(self.pinned, Ordering::Relaxed);
    }
}

/// A model completion channel: its fd is the model's eventfd, which counts the events
/// waiting on the channel.
#[derive(Debug)]
pub struct SimChannel {
    pub(super) nic: NicHandle,
    pub(super) number: u32,
    pub(super) fd: Arc<File>,
}

impl SimChannel {
    /// The channel's number in the model (for [`Nic::poll_channel`]).
    pub fn number(&self) -> u32 {
        self.number
    }
}

impl AsFd for SimChannel {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

impl Drop for SimChannel {
    fn drop(&mut self) {
        // Dropped after its CQs (each holds it), so this cannot be busy.
        let _ = self.nic.destroy_channel(self.number);
    }
}

/// A model CQ and its memory.
#[derive(Debug)]
pub struct SimCq {
    pub(super) nic: NicHandle,
    pub(super) cqn: u32,
    pub(super) _buf: Memory,
    pub(super) _dbrec: Memory,
}

impl SimCq {
    /// CQ number.
    pub fn cqn(&self) -> u32 {
        self.cqn
    }
}

impl Drop for SimCq {
    fn drop(&mut self) {
        let _ = self.nic.destroy_cq(self.cqn);
    }
}

/// A model SRQ and its memory.
#[derive(Debug)]
pub struct SimSrq {
    pub(super) nic: NicHandle,
    pub(super) srqn: u32,
    pub(super) _buf: Memory,
    pub(super) _dbrec: Memory,
}

impl Drop for SimSrq {
    fn drop(&mut self) {
        let _ = self.nic.destroy_srq(self.srqn);
    }
}

/// A model XRC domain.
#[derive(Debug)]
pub struct SimXrcd {
    pub(super) nic: NicHandle,
    pub(super) xrcd: u32,
}

impl SimXrcd {
    /// The model's XRC domain number.
    pub fn xrcd(&self) -> u32 {
        self.xrcd
    }
}

impl Drop for SimXrcd {
    fn drop(&mut self) {
        // Dropped after its XRC SRQs and targets (each holds it), so this cannot be busy.
        let _ = self.nic.dealloc_xrcd(self.xrcd);
    }
}

/// A model QP and its memory.
#[derive(Debug)]
pub struct SimQp {
    pub(super) nic: NicHandle,
    pub(super) qpn: u32,
    /// A DCT's access key: the model takes it at RTR, where the firmware creates the DCT.
    pub(super) dc_key: u64,
    pub(super) _buf: Memory,
    pub(super) _dbrec: Memory,
}

impl SimQp {
    /// QP number.
    pub fn qpn(&self) -> u32 {
        self.qpn
    }
}

impl Drop for SimQp {
    fn drop(&mut self) {
        let _ = self.nic.destroy_qp(self.qpn);
    }
}
