//! The DCI post entry: RC operations to a DC target, each WQE carrying a datagram segment
//! (`mlx5_wqe_datagram_seg`: the address handle's 48-byte AV with `dqp_dct = DCT number |
//! MLX5_EXTENDED_UD_AV` and the 64-bit DC access key, as `mlx5_send_wr_set_dc_addr` writes
//! it) between the control segment and the RC segments; with a compact address handle the
//! 16-byte compact AV (bit 31 clear), two DS shorter.
//!
//! A DCI's queue refuses the RC entries ([`SendQueue::post`], `push`, `post_many`) with
//! [`PostError::WrongTransport`] through their not-ready path, and every other queue
//! refuses [`SendQueue::post_dc`]: the RC hot path has no transport branch. [`SendQueue::push_dc`] writes
//! the same WQE without the doorbell, so that a list rings once with
//! [`SendQueue::ring_doorbell`] (BlueFlame only for a list of one, as RC's). Facts:
//! `shared/docs/prm-facts-next.md` §3.
//!
//! On a DCI with streams ([`DciStreams`](crate::DciStreams)) each WQE names its stream,
//! [`DcDest::stream`], in the control segment's `dci_stream_channel_id` (bytes 9..10,
//! BE16), as `mlx5dv_wr_set_dc_addr_stream` writes it; a plain DCI has stream 0 alone.

use crate::error::PostError;
use crate::mmio::Uar;
use crate::prm::{Av, CompactAv, DS};
use crate::ring::WqeBuf;

use super::ud::{AvSeg, Datagram, Doorbell};
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
    /// Write the 16-byte compact AV instead of the full 48 bytes (as
    /// [`UdDest::compact`](crate::UdDest::compact)).
    pub compact: bool,
    /// The DCI stream the operation goes on (below the DCI's
    /// [`DciStreams::count`](crate::DciStreams::count); 0 on a plain DCI). Operations of one
    /// stream stay in order; an error of one stream flushes only its operations until
    /// [`Qp::reset_dci_stream`](crate::Qp::reset_dci_stream).
    pub stream: u16,
}

impl DcDest<'_> {
    /// The same destination on DCI stream `stream`.
    pub fn on_stream(self, stream: u16) -> Self {
        DcDest { stream, ..self }
    }
}

/// A DCI WQE's datagram segment and its stream id, which goes into the control segment
/// already written at byte 0 (`dci_stream_channel_id`, bytes 9..10).
#[derive(Clone, Copy)]
struct DcSeg<S> {
    av: Datagram<S>,
    stream: u16,
}

impl<S: AvSeg> Xport for DcSeg<S> {
    const DS: usize = Datagram::<S>::DS;

    #[inline(always)]
    unsafe fn write(self, wqe: &mut WqeBuf<'_>, at: usize) {
        // SAFETY: the caller's contract for the segment; bytes 9..11 are inside the control
        // segment every WQE starts with (`at` is past it).
        unsafe {
            self.av.write(wqe, at);
            wqe.bytes(STREAM_AT, &self.stream.to_be_bytes());
        }
    }
}

/// Byte of `mlx5_wqe_ctrl_seg.dci_stream_channel_id`.
const STREAM_AT: usize = 9;
const _: () = assert!(STREAM_AT + 2 < DS);

/// The DC entry of a DCI's queue: its limits with the full and with the compact datagram
/// segment counted in every WQE, and its room limit (as [`super::write::Cursor::limit`],
/// for this entry alone).
#[derive(Clone, Copy, Debug)]
pub(super) struct DcEntry {
    k: Limits,
    compact: Limits,
    limit: u32,
    /// The DCI's streams (1 on a plain DCI).
    streams: u32,
}

impl DcEntry {
    pub(super) fn set_ready(&mut self, ready: bool, pi: u32) {
        self.k.ready = Ready::from(ready);
        self.compact.ready = self.k.ready;
        if !ready {
            self.limit = pi;
        }
    }
}

impl<U: Uar> SendQueue<U> {
    /// Makes this the queue of a DCI with `streams` streams: [`SendQueue::post_dc`] only.
    pub(crate) fn make_dci(&mut self, desc: &super::SqDesc, streams: u32) {
        self.k.ready = Ready::DciOnly;
        self.c.limit = self.c.pi;
        self.dc = Some(DcEntry {
            k: Limits::new(desc, DcSeg::<Av>::DS),
            compact: Limits::new(desc, DcSeg::<CompactAv>::DS),
            limit: self.c.pi,
            streams,
        });
    }

    /// Posts one operation of a DCI (SEND, SEND with immediate or invalidate, WRITE, WRITE
    /// with immediate, READ, atomics, NOP) to the DC target `dest` and rings the doorbell
    /// (with any WQEs pushed before). Refused before anything is written: a queue that is
    /// not a DCI's ([`PostError::WrongTransport`]), a stream the DCI does not have
    /// ([`PostError::NoSuchStream`]), and every check of [`SendQueue::post`] (the datagram
    /// segment's 48 bytes, or 16 when `dest.compact`, counted in the WQE size).
    #[inline(always)]
    pub fn post_dc(&mut self, wr: SendWr<'_>, dest: &DcDest<'_>) -> Result<(), PostError> {
        self.write_dc(&wr, dest, Doorbell::Now)
    }

    /// [`SendQueue::post_dc`] without the doorbell: writes the WQE, which reaches the device
    /// with the next [`SendQueue::ring_doorbell`] (or post), as [`SendQueue::push_wr`] does
    /// for RC. A list of DC operations then costs one doorbell. Refused as `post_dc`,
    /// nothing written then.
    #[inline(always)]
    pub fn push_dc(&mut self, wr: &SendWr<'_>, dest: &DcDest<'_>) -> Result<(), PostError> {
        self.write_dc(wr, dest, Doorbell::Later)
    }

    /// The checks and the write of [`SendQueue::post_dc`] and [`SendQueue::push_dc`].
    #[inline(always)]
    fn write_dc(
        &mut self,
        wr: &SendWr<'_>,
        dest: &DcDest<'_>,
        doorbell: Doorbell,
    ) -> Result<(), PostError> {
        let Some(dc) = &self.dc else {
            return Err(PostError::WrongTransport {
                transport: self.entry_transport(),
            });
        };
        let (k, compact, limit) = (dc.k, dc.compact, dc.limit);
        if u32::from(dest.stream) >= dc.streams {
            return Err(PostError::NoSuchStream {
                stream: dest.stream,
                streams: dc.streams,
            });
        }
        let dctn = dest.dctn & 0xff_ffff;
        let stream = dest.stream;
        let limit = if dest.compact {
            let av = Datagram(CompactAv::dc(dest.av, dctn, dest.dc_key));
            self.post_via(compact, limit, wr, DcSeg { av, stream }, doorbell)?
        } else {
            let mut av = *dest.av;
            av.set_dc(dctn, dest.dc_key);
            let av = Datagram(av);
            self.post_via(k, limit, wr, DcSeg { av, stream }, doorbell)?
        };
        if let Some(dc) = &mut self.dc {
            dc.limit = limit;
        }
        Ok(())
    }
}
