//! The XRC initiator's post entry: RC operations, each WQE carrying the 16-byte XRC
//! segment (rdma-core's `struct mlx5_wqe_xrc_seg` in providers/mlx5/mlx5.h: BE32
//! `xrc_srqn`, 12 reserved bytes) right after the control segment and before the
//! remote-address, atomic and data segments, as `_mlx5_post_send` writes it for
//! `IBV_QPT_XRC_SEND` (and `mlx5_send_wr_set_xrc_srqn` for the extended API). The number
//! names the XRC SRQ of the target's domain the operation lands in.
//!
//! An initiator's queue refuses the RC entries ([`SendQueue::post`], `push`, `post_many`)
//! with [`PostError::WrongTransport`] through their not-ready path, and every other queue
//! refuses [`SendQueue::post_xrc`]: the RC hot path has no transport branch and no SRQ
//! number to carry. [`SendQueue::push_xrc`] writes the same WQE without the doorbell.

use crate::error::PostError;
use crate::mmio::Uar;
use crate::ring::WqeBuf;

use super::ud::Doorbell;
use super::wr::SendWr;
use super::write::{Limits, Ready, Xport};
use super::SendQueue;

/// Size of `struct mlx5_wqe_xrc_seg`.
pub const XRC_SEG_BYTES: usize = 16;

/// The XRC segment of one WQE: the remote SRQ number (24 bits), BE32 at byte 0, then 12
/// reserved bytes written as zero.
#[derive(Clone, Copy)]
pub(super) struct XrcSeg(pub(super) u32);

impl XrcSeg {
    /// The segment's bytes.
    fn bytes(self) -> [u8; XRC_SEG_BYTES] {
        let mut seg = [0u8; XRC_SEG_BYTES];
        seg[..4].copy_from_slice(&(self.0 & 0xff_ffff).to_be_bytes());
        seg
    }
}

impl Xport for XrcSeg {
    const DS: usize = XRC_SEG_BYTES / crate::prm::DS;

    #[inline(always)]
    unsafe fn write(self, wqe: &mut WqeBuf<'_>, at: usize) {
        // SAFETY: one unit at `at` (caller's contract).
        unsafe { wqe.seg(at, self.bytes()) };
    }
}

/// The XRC entry of an initiator's queue: its limits with the XRC segment counted in every
/// WQE and its room limit (as [`super::write::Cursor::limit`], for this entry alone).
#[derive(Clone, Copy, Debug)]
pub(super) struct XrcEntry {
    k: Limits,
    limit: u32,
}

impl XrcEntry {
    pub(super) fn set_ready(&mut self, ready: bool, pi: u32) {
        self.k.ready = Ready::from(ready);
        if !ready {
            self.limit = pi;
        }
    }
}

impl<U: Uar> SendQueue<U> {
    /// Makes this the queue of an XRC initiator: [`SendQueue::post_xrc`] only.
    pub(crate) fn make_xrc(&mut self, desc: &super::SqDesc) {
        self.k.ready = Ready::XrcOnly;
        self.c.limit = self.c.pi;
        self.xrc = Some(XrcEntry {
            k: Limits::new(desc, XrcSeg::DS),
            limit: self.c.pi,
        });
    }

    /// Posts one operation of an XRC initiator (SEND, SEND with immediate or invalidate,
    /// WRITE, WRITE with immediate, READ, atomics, NOP) to the XRC SRQ `srqn` (its
    /// [`XrcSrq::srqn`](crate::XrcSrq::srqn), 24 bits) behind the connected XRC target, and
    /// rings the doorbell (with any WQEs pushed before). A SEND lands in that SRQ's next
    /// receive; a WRITE, READ or atomic is checked against its rkey there. Refused before
    /// anything is written: a queue that is not an XRC initiator's
    /// ([`PostError::WrongTransport`]) and every check of [`SendQueue::post`] (the XRC
    /// segment's 16 bytes counted in the WQE size). A number the target's domain does not
    /// hold fails on the wire: as the device answers (an error completion; see
    /// `docs/transports.md`, "XRC").
    #[inline(always)]
    pub fn post_xrc(&mut self, wr: SendWr<'_>, srqn: u32) -> Result<(), PostError> {
        self.write_xrc(&wr, srqn, Doorbell::Now)
    }

    /// [`SendQueue::post_xrc`] without the doorbell: writes the WQE, which reaches the
    /// device with the next [`SendQueue::ring_doorbell`] (or post), as
    /// [`SendQueue::push_wr`] does for RC. Refused as `post_xrc`, nothing written then.
    #[inline(always)]
    pub fn push_xrc(&mut self, wr: &SendWr<'_>, srqn: u32) -> Result<(), PostError> {
        self.write_xrc(wr, srqn, Doorbell::Later)
    }

    /// The checks and the write of [`SendQueue::post_xrc`] and [`SendQueue::push_xrc`].
    #[inline(always)]
    fn write_xrc(
        &mut self,
        wr: &SendWr<'_>,
        srqn: u32,
        doorbell: Doorbell,
    ) -> Result<(), PostError> {
        let Some(xrc) = &self.xrc else {
            return Err(PostError::WrongTransport {
                transport: self.entry_transport(),
            });
        };
        let (k, limit) = (xrc.k, xrc.limit);
        let limit = self.post_via(k, limit, wr, XrcSeg(srqn), doorbell)?;
        if let Some(xrc) = &mut self.xrc {
            xrc.limit = limit;
        }
        Ok(())
    }
}
