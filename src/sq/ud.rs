//! The UD post entry: SEND and SEND with immediate, each with a datagram segment
//! (`mlx5_wqe_datagram_seg`: the address handle's 48-byte AV with `dqp_dct = remote QPN |
//! MLX5_EXTENDED_UD_AV` and the Q_Key, as rdma-core's `_set_datagram_seg` writes it).
//!
//! A UD queue refuses the RC entries ([`SendQueue::post`], `push`, `post_many`) with
//! [`PostError::WrongTransport`] through their not-ready path, and an RC queue refuses
//! [`SendQueue::post_ud`]: the RC hot path has no transport branch. Facts:
//! `shared/docs/prm-facts-next.md` §1.

use core::sync::atomic::Ordering;

use crate::error::PostError;
use crate::mmio::Uar;
use crate::prm::{Av, DS};
use crate::ring::WqeBuf;
use crate::types::Transport;

use super::doorbell::ring_last;
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
    /// The Q_Key the remote QP was given.
    pub qkey: u32,
}

/// The datagram segment of one WQE.
#[derive(Clone, Copy)]
struct Datagram<'a>(&'a UdDest<'a>);

impl Xport for Datagram<'_> {
    const DS: usize = size_of::<Av>() / DS;

    #[inline(always)]
    unsafe fn write(self, wqe: &mut WqeBuf<'_>, at: usize) {
        let mut av = *self.0.av;
        av.set_ud(self.0.remote_qpn & 0xff_ffff, self.0.qkey, true);
        // SAFETY: `Self::DS` units at `at` (caller's contract).
        unsafe { wqe.seg(at, av) };
    }
}

/// The UD entry of a queue: its limits (the datagram segment counted in every WQE), its
/// room limit and the path MTU.
#[derive(Clone, Copy, Debug)]
pub(super) struct UdEntry {
    k: Limits,
    /// As [`Cursor::limit`], for this entry alone (the RC entry's stays at the producer).
    limit: u32,
    mtu: u32,
}

impl UdEntry {
    pub(super) fn set_ready(&mut self, ready: bool, pi: u32) {
        self.k.ready = Ready::from(ready);
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
            k: Limits::new(desc, Datagram::DS),
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
    /// ([`PostError::OverMtu`]), and every check of [`SendQueue::post`].
    #[inline(always)]
    pub fn post_ud(&mut self, wr: SendWr<'_>, dest: &UdDest<'_>) -> Result<(), PostError> {
        let Some(ud) = &mut self.ud else {
            let transport = if self.k.ready.uc() {
                Transport::Uc
            } else {
                Transport::Rc
            };
            return Err(PostError::WrongTransport { transport });
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
        let (k, limit) = (ud.k, ud.limit);
        let limit = self.post_via(k, limit, &wr, Datagram(dest))?;
        if let Some(ud) = &mut self.ud {
            ud.limit = limit;
        }
        Ok(())
    }

    /// Posts `wr` through an entry of its own (`k`, room limit `limit`) with transport
    /// segment `xport`, and rings the doorbell (with any WQEs pushed before); returns the
    /// entry's new room limit. Refused before anything is written when the QP is in error,
    /// and by every check of [`Limits::write`].
    #[inline(always)]
    pub(super) fn post_via<X: Xport>(
        &mut self,
        k: Limits,
        limit: u32,
        wr: &SendWr<'_>,
        xport: X,
    ) -> Result<u32, PostError> {
        if self.errored.load(Ordering::Relaxed) {
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
        self.c.pi = cur.pi;
        let bf_max = if self.pushed == 0 {
            self.bf_single
        } else {
            self.pushed = 0;
            self.bf_batch
        };
        ring_last(&mut self.bf, &self.dbrec, cur.pi, ring, &written, bf_max);
        Ok(cur.limit)
    }
}
