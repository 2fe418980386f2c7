//! The DCI post entry: RC operations to a DC target, each WQE carrying a datagram segment
//! (`mlx5_wqe_datagram_seg`: the address handle's 48-byte AV with `dqp_dct = DCT number |
//! MLX5_EXTENDED_UD_AV` and the 64-bit DC access key, as `mlx5_send_wr_set_dc_addr` writes
//! it) between the control segment and the RC segments.
//!
//! A DCI's queue refuses the RC entries ([`SendQueue::post`], `push`, `post_many`) with
//! [`PostError::WrongTransport`] through their not-ready path, and every other queue
//! refuses [`SendQueue::post_dc`]: the RC hot path has no transport branch. Facts:
//! `shared/docs/prm-facts-next.md` §3.

use crate::error::PostError;
use crate::mmio::Uar;
use crate::prm::{Av, DS};
use crate::ring::WqeBuf;
use crate::types::Transport;

use super::wr::SendWr;
use super::write::{Limits, Ready, Xport};
use super::SendQueue;

/// Where a DC operation goes: an address handle's AV (the target's port), the DCT number
/// and the DC access key the DCT was created with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DcDest<'a> {
    /// The address vector of an address handle (`AddressHandle::av`).
    pub av: &'a Av,
    /// DCT number (24 bits).
    pub dctn: u32,
    /// The DCT's access key.
    pub dc_key: u64,
}

/// The datagram segment of one DCI WQE.
#[derive(Clone, Copy)]
struct DcDatagram<'a>(&'a DcDest<'a>);

impl Xport for DcDatagram<'_> {
    const DS: usize = size_of::<Av>() / DS;

    #[inline(always)]
    unsafe fn write(self, wqe: &mut WqeBuf<'_>, at: usize) {
        let mut av = *self.0.av;
        av.set_dc(self.0.dctn & 0xff_ffff, self.0.dc_key);
        // SAFETY: `Self::DS` units at `at` (caller's contract).
        unsafe { wqe.seg(at, av) };
    }
}

/// The DC entry of a DCI's queue: its limits (the datagram segment counted in every WQE)
/// and its room limit (as [`super::write::Cursor::limit`], for this entry alone).
#[derive(Clone, Copy, Debug)]
pub(super) struct DcEntry {
    k: Limits,
    limit: u32,
}

impl DcEntry {
    pub(super) fn set_ready(&mut self, ready: bool, pi: u32) {
        self.k.ready = Ready::from(ready);
        if !ready {
            self.limit = pi;
        }
    }
}

impl<U: Uar> SendQueue<U> {
    /// Makes this the queue of a DCI: [`SendQueue::post_dc`] only.
    pub(crate) fn make_dci(&mut self, desc: &super::SqDesc) {
        self.k.ready = Ready::DciOnly;
        self.c.limit = self.c.pi;
        self.dc = Some(DcEntry {
            k: Limits::new(desc, DcDatagram::DS),
            limit: self.c.pi,
        });
    }

    /// Posts one operation of a DCI (SEND, SEND with immediate or invalidate, WRITE, WRITE
    /// with immediate, READ, atomics, NOP) to the DC target `dest` and rings the doorbell
    /// (with any WQEs pushed before). Refused before anything is written: a queue that is
    /// not a DCI's ([`PostError::WrongTransport`]), and every check of
    /// [`SendQueue::post`] (the datagram segment's 48 bytes counted in the WQE size).
    #[inline(always)]
    pub fn post_dc(&mut self, wr: SendWr<'_>, dest: &DcDest<'_>) -> Result<(), PostError> {
        let Some(dc) = &self.dc else {
            return Err(PostError::WrongTransport {
                transport: if self.ud.is_some() {
                    Transport::Ud
                } else {
                    Transport::Rc
                },
            });
        };
        let (k, limit) = (dc.k, dc.limit);
        let limit = self.post_via(k, limit, &wr, DcDatagram(dest))?;
        if let Some(dc) = &mut self.dc {
            dc.limit = limit;
        }
        Ok(())
    }
}
