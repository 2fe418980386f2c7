//! The UD post entry: SEND and SEND with immediate, each with a datagram segment
//! (`mlx5_wqe_datagram_seg`: the address handle's 48-byte AV with `dqp_dct = remote QPN |
//! MLX5_EXTENDED_UD_AV` and the Q_Key, as rdma-core's `_set_datagram_seg` writes it), or
//! with a compact address handle the 16-byte compact AV (bit 31 clear, as UCX writes it on
//! a device with the `compact_address_vector` cap), two DS shorter.
//!
//! A UD queue refuses the RC entries ([`SendQueue::post`], `push`, `post_many`) with
//! [`PostError::WrongTransport`] through their not-ready path, and an RC queue refuses
//! [`SendQueue::post_ud`]: the RC hot path has no transport branch. [`SendQueue::push_ud`] writes
//! the same WQE without the doorbell, so that a list rings once with
//! [`SendQueue::ring_doorbell`] (BlueFlame only for a list of one, as RC's). Facts:
//! `shared/docs/prm-facts-next.md` §1.

use crate::error::PostError;
use crate::mmio::Uar;
use crate::prm::{Av, CompactAv, DS};
use crate::ring::WqeBuf;
use crate::types::Transport;

use super::wr::{Data, SendOp, SendWr};
use super::write::{Cursor, Limits, Ready, Xport};
use super::SendQueue;

/// Where a datagram goes: an address handle's AV, the remote QP and its Q_Key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UdDest<'a> {
    /// The address vector of an address handle (`AddressHandle::av`).
    pub av: &'a Av,
    /// Remote QP number (24 bits).
    pub remote_qpn: u32,
    /// The Q_Key the remote QP was given, written as given (as rdma-core does). With bit 31
    /// set ([`UdDest::OWN_QKEY`], a controlled Q_Key) the device sends the sending QP's own
    /// Q_Key instead (the IB rule; docs/model.md "UD").
    pub qkey: u32,
    /// Write the 16-byte compact AV (the first 16 bytes of `av`, `dqp_dct` bit 31 clear)
    /// instead of the full 48 bytes: set by a compact address handle
    /// ([`ProtectionDomain::create_compact_ah`](crate::ProtectionDomain::create_compact_ah)).
    pub compact: bool,
}

impl UdDest<'_> {
    /// A Q_Key with bit 31 set: "send with my QP's own Q_Key" (the one given at
    /// `activate_ud`), for a sender whose QP shares its Q_Key with every peer.
    pub const OWN_QKEY: u32 = 1 << 31;
}

/// The datagram segment of one UD or DCI WQE, built before the write: the full AV or the
/// compact one.
#[derive(Clone, Copy)]
pub(super) struct Datagram<S>(pub(super) S);

/// The address-vector layouts a datagram segment may be.
pub(super) trait AvSeg: Copy {}
impl AvSeg for Av {}
impl AvSeg for CompactAv {}

impl<S: AvSeg> Xport for Datagram<S> {
    const DS: usize = size_of::<S>() / DS;

    #[inline(always)]
    unsafe fn write(self, wqe: &mut WqeBuf<'_>, at: usize) {
        // SAFETY: `Self::DS` units at `at` (caller's contract); `S` is a PRM layout.
        unsafe { wqe.seg(at, self.0) };
    }
}

/// Whether a datagram post rings the doorbell ([`SendQueue::post_ud`],
/// [`SendQueue::post_dc`]) or leaves its WQE pushed ([`SendQueue::push_ud`],
/// [`SendQueue::push_dc`]).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Doorbell {
    /// Ring now, with any WQEs pushed before.
    Now,
    /// Ring with the next [`SendQueue::ring_doorbell`] or post.
    Later,
}

/// Rings the doorbell for the WQE `$written` just written (producer count `$pi` after it)
/// with any pushed before, or leaves it pushed, as `$doorbell` says; on the fields of the
/// queue `$sq` (the WQE borrows its ring).
macro_rules! ring_or_push {
    ($sq:expr, $written:expr, $pi:expr, $doorbell:expr) => {
        match $doorbell {
            $crate::sq::ud::Doorbell::Now => {
                let bf_max =
                    $crate::sq::doorbell::bound_now(&mut $sq.pushed, $sq.bf_single, $sq.bf_batch);
                $crate::sq::doorbell::ring_last(
                    &mut $sq.bf,
                    &$sq.dbrec,
                    $pi,
                    &$sq.ring,
                    &$written,
                    bf_max,
                );
            }
            $crate::sq::ud::Doorbell::Later => {
                $sq.last_offset = $written.offset;
                $sq.pushed += 1;
            }
        }
    };
}
pub(super) use ring_or_push;

/// The UD entry of a queue: its limits with the full and with the compact datagram segment
/// counted in every WQE, its room limit and the path MTU.
#[derive(Clone, Copy, Debug)]
pub(super) struct UdEntry {
    k: Limits,
    compact: Limits,
    /// As [`Cursor::limit`], for this entry alone (the RC entry's stays at the producer).
    limit: u32,
    mtu: u32,
}

impl UdEntry {
    pub(super) fn set_ready(&mut self, ready: bool, pi: u32) {
        self.k.ready = Ready::from(ready);
        self.compact.ready = self.k.ready;
        if !ready {
            self.limit = pi;
        }
    }
}

impl<U: Uar> SendQueue<U> {
    /// Makes this the queue of a UD QP: [`SendQueue::post_ud`] only (datagrams of at most
    /// the MTU given when it becomes ready).
    pub(crate) fn make_ud(&mut self, desc: &super::SqDesc) {
        self.k.ready = Ready::UdOnly;
        self.c.limit = self.c.pi;
        self.ud = Some(UdEntry {
            k: Limits::new(desc, Datagram::<Av>::DS),
            compact: Limits::new(desc, Datagram::<CompactAv>::DS),
            limit: self.c.pi,
            mtu: 0,
        });
    }

    /// Makes this the queue of a UC QP: the RC entries without READ and atomics.
    pub(crate) fn make_uc(&mut self) {
        self.k.ready = Ready::UcNo;
    }

    /// The path MTU of a UD queue (its port's active MTU).
    pub(crate) fn set_ud_mtu(&mut self, mtu: u32) {
        if let Some(ud) = &mut self.ud {
            ud.mtu = mtu;
        }
    }

    /// Posts one UD SEND or SEND with immediate to `dest` and rings the doorbell (with any
    /// WQEs pushed before). Refused before anything is written: another operation or an RC
    /// queue ([`PostError::WrongTransport`]), more than the path MTU
    /// ([`PostError::OverMtu`]), and every check of [`SendQueue::post`] (the datagram
    /// segment, 48 bytes or 16 when `dest.compact`, counted in the WQE size).
    #[inline(always)]
    pub fn post_ud(&mut self, wr: SendWr<'_>, dest: &UdDest<'_>) -> Result<(), PostError> {
        self.write_ud(&wr, dest, Doorbell::Now)
    }

    /// [`SendQueue::post_ud`] without the doorbell: writes the WQE, which reaches the device
    /// with the next [`SendQueue::ring_doorbell`] (or post), as [`SendQueue::push_wr`] does
    /// for RC. A list of datagrams then costs one doorbell. Refused as `post_ud`, nothing
    /// written then.
    #[inline(always)]
    pub fn push_ud(&mut self, wr: &SendWr<'_>, dest: &UdDest<'_>) -> Result<(), PostError> {
        self.write_ud(wr, dest, Doorbell::Later)
    }

    /// The checks and the write of [`SendQueue::post_ud`] and [`SendQueue::push_ud`].
    #[inline(always)]
    fn write_ud(
        &mut self,
        wr: &SendWr<'_>,
        dest: &UdDest<'_>,
        doorbell: Doorbell,
    ) -> Result<(), PostError> {
        let Some(ud) = &mut self.ud else {
            return Err(PostError::WrongTransport {
                transport: self.entry_transport(),
            });
        };
        if !matches!(wr.op, SendOp::Send | SendOp::SendImm(_)) {
            return Err(PostError::WrongTransport {
                transport: Transport::Ud,
            });
        }
        let len = match wr.data {
            Data::Inline(b) => b.len() as u64,
            Data::Sges(s) => s.iter().map(|s| u64::from(s.len)).sum(),
        };
        if len > u64::from(ud.mtu) {
            return Err(PostError::OverMtu { len, mtu: ud.mtu });
        }
        let (k, compact, limit) = (ud.k, ud.compact, ud.limit);
        let qpn = dest.remote_qpn & 0xff_ffff;
        let limit = if dest.compact {
            let av = CompactAv::ud(dest.av, qpn, dest.qkey);
            self.post_via(compact, limit, wr, Datagram(av), doorbell)?
        } else {
            let mut av = *dest.av;
            av.set_ud(qpn, dest.qkey, true);
            self.post_via(k, limit, wr, Datagram(av), doorbell)?
        };
        if let Some(ud) = &mut self.ud {
            ud.limit = limit;
        }
        Ok(())
    }

    /// Posts `wr` through an entry of its own (`k`, room limit `limit`) with transport
    /// segment `xport`; rings the doorbell (with any WQEs pushed before) when `doorbell` is
    /// [`Doorbell::Now`], or leaves the WQE pushed for [`SendQueue::ring_doorbell`]; returns
    /// the entry's new room limit. Refused before anything is written when the QP is in
    /// error, and by every check of [`Limits::write`].
    #[inline(always)]
    pub(super) fn post_via<X: Xport>(
        &mut self,
        k: Limits,
        limit: u32,
        wr: &SendWr<'_>,
        xport: X,
        doorbell: Doorbell,
    ) -> Result<u32, PostError> {
        if self.shared.is_refused() {
            return Err(PostError::NotReadyToSend);
        }
        let mut cur = Cursor {
            pi: self.c.pi,
            limit,
        };
        let (ring, shared) = (&self.ring, &*self.shared);
        // SAFETY: the queue's own ring and slots (one per WQEBB, checked in `new`).
        let written = unsafe {
            k.write(
                ring,
                &mut self.staging,
                shared,
                &shared.tail,
                &mut cur,
                wr,
                xport,
            )
        }?;
        // The RC entry's limit stays at the producer (no room: its posts take the refusing
        // slow path), also once datagram WQEs moved the producer on.
        self.c = Cursor {
            pi: cur.pi,
            limit: cur.pi,
        };
        ring_or_push!(self, written, cur.pi, doorbell);
        Ok(cur.limit)
    }
}
