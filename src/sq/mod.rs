//! The send queue: WQEs built in the ring, doorbells, BlueFlame.
//!
//! Layouts: `prm` (control, remote-address, atomic, data and inline segments). Sequence:
//! [`crate::mmio`]. Facts: `shared/docs/prm-facts.md` §1–§4, §6.
//!
//! **Wrap.** A WQE starts on a WQEBB boundary and may run past the ring end; it then
//! continues at slot 0, inline data split at the end (rdma-core's behaviour). We do not pad
//! with a NOP: a pad WQE costs ring space, a DMA read and, with BlueFlame, an extra MMIO
//! write, while the device already reads WQEs wrap-aware.
//!
//! **Accounting.** The queue counts WQEBBs exactly. Every WQE records its `wr_id` and the
//! producer count after it at its first slot; a CQE for that WQE (signaled, error or flush)
//! retires it and every earlier unsignaled one. A post that does not fit is refused with
//! [`PostError::QueueFull`]; nothing is ever overwritten.

use core::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use crate::error::{Error, PostError};
use crate::mmio::{BfReg, DbRec, Uar};
use crate::prm::{self, Be32, DS, SEND_WQE_BB};
use crate::ring::{Ring, RingView, Staging};

mod dc;
pub(crate) mod dm;
mod doorbell;
mod empw;
mod eth;
mod prepared;
mod shared;
#[cfg(test)]
mod tests;
mod typed;
mod ud;
mod wr;
mod write;
mod xrc;

use dm::DmSlots;

pub use dc::DcDest;
pub use doorbell::DoorbellMode;
pub use empw::{EmpwPacket, EmpwWr};
pub use eth::EthWr;
pub use prepared::PreparedWr;
pub use shared::SqDesc;
pub(crate) use shared::{qpn_key, SqShared};
pub use ud::UdDest;
pub use wr::{Data, MaskedCs32Args, MaskedCs64Args, Remote, SendFlags, SendOp, SendWr, Sge};
pub use xrc::XRC_SEG_BYTES;

use dc::DcEntry;
use doorbell::{effective_mode, pushed_count, ring_last, NO_BF};
use eth::EthEntry;
use shared::SqSlot;
use ud::UdEntry;
use write::{Cursor, Limits, Written};
use xrc::XrcEntry;

/// Largest total message length: 1 GiB, the `max_msg_sz` ConnectX-4..7 ports report
/// (`1 << log_max_msg`, 30). [`PortInfo::max_msg_size`](crate::PortInfo::max_msg_size) is
/// the opened device's value.
pub const MAX_MESSAGE_SIZE: u64 = 1 << 30;

/// A QP's send queue. Posting takes `&mut self`: no locks, no allocation.
///
/// [`SendQueue::push`] writes one WQE into the ring; [`SendQueue::ring_doorbell`] hands every
/// pushed WQE to the device with one doorbell (a batch); [`SendQueue::post`] does both.
#[derive(Debug)]
pub struct SendQueue<U: Uar> {
    ring: Ring,
    staging: Staging,
    k: Limits,
    c: Cursor,
    /// WQEs pushed since the last doorbell (bits 30..0; when not 0, `last_offset` is the
    /// ring offset of the last of them, its size read back from its control segment), and
    /// [`doorbell::NO_BF`] in bit 31.
    pushed: u32,
    /// Ring offset of the last pushed WQE.
    last_offset: usize,
    qpn: u32,
    dbrec: DbRec,
    bf: BfReg<U>,
    mode: DoorbellMode,
    /// `mode` resolved against the register (see [`SendQueue::effective_mode`]).
    effective: DoorbellMode,
    /// Largest WQE (in WQEBBs) BlueFlame-copied when it is rung alone (0: never): the
    /// 64-byte blocks that fit the register's half.
    bf_single: usize,
    /// Largest last WQE (in WQEBBs) of a batch BlueFlame-copied (0: never).
    bf_batch: usize,
    shared: Arc<SqShared>,
    /// The UD post entry ([`SendQueue::post_ud`]) of a UD QP's queue; `None` for RC.
    ud: Option<UdEntry>,
    /// The DC post entry ([`SendQueue::post_dc`]) of a DCI's queue.
    dc: Option<DcEntry>,
    /// The XRC post entry ([`SendQueue::post_xrc`]) of an XRC initiator's queue.
    xrc: Option<XrcEntry>,
    /// The raw packet post entry ([`SendQueue::post_eth`]) of a raw packet QP's queue.
    eth: Option<EthEntry>,
    /// This queue's identity, for the [`PreparedWr`]s it prepares.
    id: u64,
    /// The device-memory send path ([`SendQueue::post_dm`]), when attached.
    dm: Option<Box<DmSlots>>,
}

/// `SendQueue::write_parts` of one work request on the fields of the queue `$sq`: the
/// result borrows its ring alone, so the doorbell can still take the register.
macro_rules! write_wqe {
    ($sq:expr, $wr:expr) => {
        Self::write_parts(
            &$sq.k,
            &$sq.ring,
            &mut $sq.staging,
            &$sq.shared,
            &mut $sq.c,
            $wr,
        )
    };
}

/// Rings the WQE just written (`$written`) and any pushed before it, on the fields of the
/// queue `$sq`: no last-WQE state to store and reload.
macro_rules! ring_alone {
    ($sq:expr, $written:expr) => {{
        let written = $written;
        let bf_max = $crate::sq::doorbell::bound_now(&mut $sq.pushed, $sq.bf_single, $sq.bf_batch);
        $crate::sq::doorbell::ring_last(
            &mut $sq.bf,
            &$sq.dbrec,
            $sq.c.pi,
            &$sq.ring,
            &written,
            bf_max,
        );
    }};
}
pub(super) use ring_alone;

/// After the WQE `$written` of the queue `$sq`: rings it alone (`$ring`, see `ring_alone!`)
/// or leaves it pushed for the next doorbell.
macro_rules! finish {
    ($sq:expr, $ring:expr, $written:expr) => {{
        let written = $written;
        if $ring {
            $crate::sq::ring_alone!($sq, written);
        } else {
            $sq.last_offset = written.offset;
            $sq.pushed += 1;
        }
    }};
}
pub(super) use finish;

impl<U: Uar> SendQueue<U> {
    /// A send queue over the described memory.
    ///
    /// # Safety
    /// Every pointer in `desc` must be valid as described (ring of `wqe_cnt * 64` bytes,
    /// 64-byte aligned; doorbell record of two words) for the life of the queue, written on
    /// the CPU side only through it, and `uar` must be the UAR page holding `desc.bf_offset`.
    pub(crate) unsafe fn new(desc: &SqDesc, uar: U, shared: Arc<SqShared>) -> Self {
        // SAFETY: forwarded from this function's contract.
        let ring = unsafe { Ring::new(desc.buf, desc.wqe_cnt as usize * SEND_WQE_BB) };
        // `Limits::write` relies on this: one slot per WQEBB of the ring.
        assert_eq!(shared.slots.len(), ring.size() / SEND_WQE_BB);
        // SAFETY: word 1 of the record the contract makes ours.
        let dbrec = unsafe { DbRec::new(desc.dbrec.add(prm::SND_DBR)) };
        let mut sq = SendQueue {
            ring,
            staging: Staging::default(),
            k: Limits::new(desc, 0),
            c: Cursor { pi: 0, limit: 0 },
            pushed: 0,
            last_offset: 0,
            qpn: desc.qpn,
            dbrec,
            bf: BfReg::new(uar, desc.bf_offset, desc.bf_size),
            mode: DoorbellMode::Auto,
            effective: DoorbellMode::Doorbell,
            bf_single: 0,
            bf_batch: 0,
            shared,
            ud: None,
            dc: None,
            xrc: None,
            eth: None,
            id: prepared::next_queue_id(),
            dm: None,
        };
        sq.set_mode(DoorbellMode::Auto);
        sq.shared.open_short(sq.k.short_fit);
        sq
    }

    /// Takes posts again after a refusal (the QP reset, or its send queue back from SQE to
    /// RTS): the shared state's flag cleared, the short path open at this queue's bounds.
    pub(crate) fn accept(&self) {
        self.shared.accept(self.k.short_fit);
    }

    /// Chooses how doorbells are rung.
    pub fn set_mode(&mut self, mode: DoorbellMode) {
        self.mode = mode;
        self.effective = effective_mode(mode, self.bf.size());
        let blocks = self.bf.size() / SEND_WQE_BB;
        (self.bf_single, self.bf_batch) = match self.effective {
            DoorbellMode::BlueFlame => (blocks, 0),
            DoorbellMode::BlueFlameLast => (blocks, blocks),
            _ => (0, 0),
        };
        let no_bf = if self.bf_single == 0 { NO_BF } else { 0 };
        self.pushed = pushed_count(self.pushed) | no_bf;
    }

    /// The mode actually in effect: BlueFlame modes fall back to the doorbell when the
    /// register has no BlueFlame (`bf.size == 0`).
    pub fn effective_mode(&self) -> DoorbellMode {
        self.effective
    }

    /// Number of WQEBBs in the ring.
    pub fn wqebbs(&self) -> u32 {
        self.k.wqe_cnt
    }

    /// WQEBBs free for new WQEs (those not yet retired by a CQE are in use).
    pub fn free_wqebbs(&self) -> u32 {
        self.k.wqe_cnt
            - self
                .c
                .pi
                .wrapping_sub(self.shared.tail.load(Ordering::Acquire))
    }

    /// WQEBBs whose WQEs have not completed yet.
    pub fn outstanding_wqebbs(&self) -> u32 {
        self.k.wqe_cnt - self.free_wqebbs()
    }

    /// Producer count (WQEBBs posted since the queue was created or reset).
    pub fn producer_count(&self) -> u32 {
        self.c.pi
    }

    /// The QP number.
    pub fn qpn(&self) -> u32 {
        self.qpn
    }

    /// Largest inline payload accepted.
    pub fn max_inline(&self) -> usize {
        self.k.max_inline
    }

    /// Largest gather list accepted.
    pub fn max_sge(&self) -> usize {
        self.k.max_sge
    }

    pub(crate) fn set_ready(&mut self, ready: bool) {
        if let Some(ud) = &mut self.ud {
            ud.set_ready(ready, self.c.pi);
            return;
        }
        if let Some(dc) = &mut self.dc {
            dc.set_ready(ready, self.c.pi);
            return;
        }
        if let Some(xrc) = &mut self.xrc {
            xrc.set_ready(ready, self.c.pi);
            return;
        }
        if let Some(eth) = &mut self.eth {
            eth.set_ready(ready, self.c.pi);
            return;
        }
        self.k.ready = self.k.ready.set(ready);
        if !ready {
            // No room until ready again (see `Cursor::limit`); the next post after that re-reads
            // the retire counter.
            self.c.limit = self.c.pi;
        }
    }

    /// The transport whose post entry this queue takes (for [`PostError::WrongTransport`]).
    fn entry_transport(&self) -> crate::types::Transport {
        use crate::types::Transport;
        if self.ud.is_some() {
            Transport::Ud
        } else if self.dc.is_some() {
            Transport::Dci
        } else if self.xrc.is_some() {
            Transport::XrcIni
        } else if self.k.ready.uc() {
            Transport::Uc
        } else {
            Transport::Rc
        }
    }

    pub(crate) fn reset(&mut self) {
        self.c.pi = 0;
        self.c.limit = 0;
        self.pushed &= NO_BF;
        self.set_ready(false);
        self.dbrec.write(Be32::new(0));
        self.shared.reset();
        if let Some(dm) = &mut self.dm {
            dm.clear();
        }
    }

    /// Gives the queue device-memory slots for [`SendQueue::post_dm`] (`crate::dm`). Refused
    /// ([`Error::Busy`]) while slots attached before still hold payloads of WQEs that have
    /// not completed.
    pub fn attach_dm(&mut self, slots: DmSlots) -> Result<(), Error> {
        if let Some(old) = &mut self.dm {
            // Look again: completions polled since the last post may have freed them all.
            let tail = self.shared.tail.load(Ordering::Acquire);
            if !old.idle(tail) {
                return Err(Error::Busy("device-memory slots"));
            }
        }
        self.dm = Some(Box::new(slots));
        Ok(())
    }

    /// The device-memory slots attached ([`SendQueue::attach_dm`]).
    pub fn dm_slots(&self) -> Option<&DmSlots> {
        self.dm.as_deref()
    }

    /// [`SendQueue::push_dm`], then [`SendQueue::ring_doorbell`].
    pub fn post_dm(
        &mut self,
        wr_id: u64,
        op: SendOp,
        payload: &[u8],
        flags: SendFlags,
    ) -> Result<(), PostError> {
        self.push_dm(wr_id, op, payload, flags)?;
        self.ring_doorbell();
        Ok(())
    }

    /// Pushes `op` (SEND, SEND with immediate, WRITE or WRITE with immediate) with `payload`
    /// copied into the next device-memory slot and gathered from there: the payload crosses
    /// the link as the CPU's writes into device memory, and the device reads no host memory
    /// for it (UCX's device-memory send path, `docs/memory.md`). The WQE reaches the device
    /// with the next doorbell, as for [`SendQueue::push`]. Refused when the queue has no
    /// slots ([`PostError::NoDmSlots`]), the payload exceeds a slot
    /// ([`PostError::DmPayloadTooLarge`]), every slot's WQE is outstanding
    /// ([`PostError::DmSlotsFull`]), for other operations ([`PostError::InlineNotAllowed`]:
    /// like inline data, the path carries a payload), and for every reason
    /// [`SendQueue::push`] refuses; nothing is pushed then.
    pub fn push_dm(
        &mut self,
        wr_id: u64,
        op: SendOp,
        payload: &[u8],
        flags: SendFlags,
    ) -> Result<(), PostError> {
        if !matches!(
            op,
            SendOp::Send | SendOp::SendImm(_) | SendOp::Write(_) | SendOp::WriteImm(..)
        ) {
            return Err(PostError::InlineNotAllowed);
        }
        let Some(dm) = self.dm.as_deref_mut() else {
            return Err(PostError::NoDmSlots);
        };
        if payload.is_empty() {
            return self.push(wr_id, op, Data::Sges(&[]), flags);
        }
        let sge = dm.fill(self.shared.tail.load(Ordering::Acquire), payload)?;
        self.push(wr_id, op, Data::Sges(&[sge]), flags)?;
        if let Some(dm) = self.dm.as_deref_mut() {
            dm.commit(self.c.pi);
        }
        Ok(())
    }

    /// Builds one WQE in the ring without ringing the doorbell.
    ///
    /// The WQE reaches the device with the next [`SendQueue::ring_doorbell`]. On error
    /// nothing is written.
    #[inline(always)]
    pub fn push(
        &mut self,
        wr_id: u64,
        op: SendOp,
        data: Data<'_>,
        flags: SendFlags,
    ) -> Result<(), PostError> {
        self.push_wr(&SendWr {
            wr_id,
            op,
            data,
            flags,
        })
    }

    /// [`SendQueue::push`] of a work request by reference (in memory, it is read field by
    /// field where needed instead of copied whole).
    #[inline(always)]
    pub fn push_wr(&mut self, wr: &SendWr<'_>) -> Result<(), PostError> {
        self.write_wr::<false>(wr)
    }

    /// [`SendQueue::post_wr`] (`RING`) or [`SendQueue::push_wr`]: a short inline SEND /
    /// WRITE on a QP not in error in code of its own (the typed calls' path: a constant
    /// size of one WQEBB for the doorbell); the rest, and every refusal, through the
    /// general write.
    #[inline(always)]
    fn write_wr<const RING: bool>(&mut self, wr: &SendWr<'_>) -> Result<(), PostError> {
        if let Data::Inline(data) = wr.data {
            let shape = wr.op.shape();
            if self.shared.takes_short(shape.fit_index(), data.len()) {
                return self.short_wr::<RING, false>(wr, shape, data);
            }
        }
        finish!(self, RING, write_wqe!(self, wr)?);
        Ok(())
    }

    /// Posts a list of work requests with one doorbell, as `ibv_post_send` does with a
    /// linked list: writes them in order, stops at the first one refused, then rings every
    /// WQE written (and any pushed before). Returns how many were posted, or that count and
    /// the refusal.
    ///
    /// The work requests may be given by value or by reference (`&SendWr`, e.g. a slice's
    /// `iter()`: read field by field where needed, as by [`SendQueue::post_wr`]).
    ///
    /// Every check of [`SendQueue::push`] applies to each work request, except that whether
    /// the QP is in error is read once per call: a QP that a CQE moves to error during the
    /// call is indistinguishable from one moved just after it.
    #[inline(always)]
    pub fn post_many<'a, W: core::borrow::Borrow<SendWr<'a>>>(
        &mut self,
        wrs: impl IntoIterator<Item = W>,
    ) -> Result<usize, (usize, PostError)> {
        self.post_list(wrs, |k, ring, staging, slots, tail, cur, wr| {
            // SAFETY: as in `post_list`.
            unsafe { k.write(ring, staging, slots, tail, cur, wr.borrow(), ()) }
        })
    }

    /// The loop of a post list: `write` writes each work request (on copies of the queue's
    /// fields, see `Limits`) and returns where it is; the QP-in-error flag is read once per
    /// call. Then rings every WQE written (and any pushed before).
    #[inline(always)]
    fn post_list<W>(
        &mut self,
        wrs: impl IntoIterator<Item = W>,
        write: impl for<'r, 's> Fn(
            &Limits,
            RingView<'r>,
            &mut Staging,
            &'s [SqSlot],
            &AtomicU32,
            &mut Cursor,
            W,
        ) -> Result<Written<'r>, PostError>,
    ) -> Result<usize, (usize, PostError)> {
        let errored = self.shared.is_refused();
        let mut n = 0;
        let mut result = Ok(());
        let mut last_offset = self.last_offset;
        // Everything the loop reads, in locals (see `Limits`).
        let (k, ring, slots, tail) = (
            self.k,
            self.ring.view(),
            &self.shared.slots[..],
            &self.shared.tail,
        );
        let mut cur = self.c;
        for wr in wrs {
            // `write` is given the queue's own ring and slots (one per WQEBB, checked in
            // `new`): what `Limits::write` needs.
            let written = if errored {
                Err(PostError::NotReadyToSend)
            } else {
                write(&k, ring, &mut self.staging, slots, tail, &mut cur, wr)
            };
            match written {
                Ok(w) => last_offset = w.offset,
                Err(e) => {
                    result = Err(e);
                    break;
                }
            }
            n += 1;
        }
        self.c = cur;
        self.last_offset = last_offset;
        self.pushed += n as u32;
        self.ring_doorbell();
        result.map(|()| n).map_err(|e| (n, e))
    }

    /// Validates and writes one WQE at the producer counter and records it for the poller;
    /// returns where it is and what the doorbell needs of it. Takes the queue's fields (see
    /// `write_wqe!`), so that the result borrows the ring alone.
    #[inline(always)]
    fn write_parts<'r>(
        k: &Limits,
        ring: &'r Ring,
        staging: &mut Staging,
        shared: &SqShared,
        c: &mut Cursor,
        wr: &SendWr<'_>,
    ) -> Result<Written<'r>, PostError> {
        if shared.is_refused() {
            return Err(PostError::NotReadyToSend);
        }
        // SAFETY: the queue's own ring and slots (one per WQEBB, checked in `new`).
        unsafe { k.write(ring, staging, shared, &shared.tail, c, wr, ()) }
    }

    /// Hands every WQE pushed since the last doorbell to the device: doorbell record, then
    /// one 8-byte doorbell or a BlueFlame copy of the last WQE (see [`DoorbellMode`]).
    /// Returns the number of WQEs rung.
    #[inline(always)]
    pub fn ring_doorbell(&mut self) -> u32 {
        let pushed = pushed_count(self.pushed);
        if pushed == 0 {
            return 0;
        }
        let bytes = self.ring.wqe_bytes(self.last_offset);
        let last = Written {
            offset: self.last_offset,
            bytes,
            bbs: bytes.div_ceil(SEND_WQE_BB),
            first: self.ring.block(self.last_offset),
        };
        let bf_max = if pushed == 1 {
            self.bf_single
        } else {
            self.bf_batch
        };
        ring_last(
            &mut self.bf,
            &self.dbrec,
            self.c.pi,
            &self.ring,
            &last,
            bf_max,
        );
        self.pushed &= NO_BF;
        pushed
    }

    /// [`SendQueue::push`] then [`SendQueue::ring_doorbell`] (one doorbell for this WQE and
    /// any pushed before it).
    #[inline(always)]
    pub fn post(
        &mut self,
        wr_id: u64,
        op: SendOp,
        data: Data<'_>,
        flags: SendFlags,
    ) -> Result<(), PostError> {
        self.post_wr(&SendWr {
            wr_id,
            op,
            data,
            flags,
        })
    }

    /// [`SendQueue::post`] of a work request by reference (in memory, it is read field by
    /// field where needed instead of copied whole).
    #[inline(always)]
    pub fn post_wr(&mut self, wr: &SendWr<'_>) -> Result<(), PostError> {
        self.write_wr::<true>(wr)
    }

    /// The value of the send doorbell record as last written.
    pub fn doorbell_record(&self) -> u32 {
        self.dbrec.read().get()
    }

    /// The current offset of the doorbell / BlueFlame register (toggles between halves).
    pub fn register_offset(&self) -> usize {
        self.bf.offset()
    }

    /// Copies the `len` bytes of ring content starting at WQEBB counter `pi` (wrap-aware), e.g.
    /// to show a posted WQE.
    pub fn wqe_bytes(&self, pi: u32, len: usize) -> Vec<u8> {
        let start = pi as usize * SEND_WQE_BB;
        (0..len.div_ceil(DS))
            .flat_map(|u| self.ring.read_ds(start + u * DS))
            .take(len)
            .collect()
    }

    /// The UAR this queue rings.
    pub fn uar(&self) -> &U {
        &self.bf.uar
    }
}
