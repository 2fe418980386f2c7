//! Writing one WQE into the ring: the checks, the segments and the record for the poller.

use core::sync::atomic::{AtomicU32, Ordering};

use crate::error::PostError;
use crate::prm::{
    self, Be32, CtrlSeg, DataSeg, InlineSeg, OpmodIdxOpcode, QpnDs, DS, INLINE_SEG, MAX_DS,
    SEND_WQE_BB,
};
use crate::ring::{Block, Staging, WqeBuf, WqeRing};
use crate::types::Transport;

use super::shared::{Slots, SqDesc, SqSlot};
use super::wr::{Data, Remote, SendWr, Shape};
use super::MAX_MESSAGE_SIZE;

/// A WQE just written, as the doorbell needs it.
pub(super) struct Written<'r> {
    /// Ring offset.
    pub(super) offset: usize,
    /// Size in bytes (DS × 16).
    pub(super) bytes: usize,
    /// Size in WQEBBs.
    pub(super) bbs: usize,
    /// Its first 64 bytes in the ring (located while the ring's address is at hand, read
    /// by the doorbell).
    pub(super) first: Block<'r>,
}

/// What writing a WQE reads of its queue besides the ring and the counters, by value: a
/// run of writes (a post list) then keeps it in registers, where fields of the queue would
/// be reloaded after every store into the ring (which could alias them as far as the
/// compiler knows).
#[derive(Clone, Copy, Debug)]
pub(super) struct Limits {
    /// Number of WQEBBs in the ring.
    pub(super) wqe_cnt: u32,
    pub(super) ready: Ready,
    /// The control segment's first word (memory order, see [`CtrlSeg::to_words`]) with
    /// nothing but this QP's number (DS 0), set once: the number already in wire order and
    /// in place, one OR per WQE.
    pub(super) qpn_word: u64,
    pub(super) max_ds: usize,
    pub(super) max_inline: usize,
    /// The largest inline payload that passes both the inline limit and the WQE size limit
    /// after a control segment alone (`[0]`) or with a remote-address segment (`[1]`):
    /// one compare for an inline SEND or WRITE.
    pub(super) inline_fit: [usize; 2],
    /// The largest inline payload of the short path (one WQEBB, see [`Limits::write`]), by
    /// [`Shape::fit_index`]: without and with a remote-address segment, then 0 twice for
    /// the operations with a local length (READ and atomics, which take no inline data).
    pub(super) short_fit: [usize; 4],
    pub(super) max_sge: usize,
}

/// The counters WQE writes advance (a run of writes works on a copy: see [`Limits`]).
#[derive(Clone, Copy, Debug)]
pub(super) struct Cursor {
    /// Producer count of WQEBBs (`cur_post`); its low 16 bits go into each WQE.
    pub(super) pi: u32,
    /// Producer count up to which the ring is known to be free: the retire counter as last
    /// read, plus the ring size. Posts under it need no load of the counter the poller
    /// writes; the counter only grows, so the cached value is never too high. While the
    /// queue is not ready it equals `pi` (no room), so the one room compare of the hot
    /// path also sends every post of a queue that is not ready to the checking slow path.
    pub(super) limit: u32,
}

/// Whether a queue's entry takes posts, and which operations: a UC queue's entry takes
/// no READ or atomic. (The transport rides here, read only on the slow paths, rather than
/// in a field of its own that every post would carry.)
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Ready {
    /// Not in RTS, or in error.
    No,
    /// Ready.
    Yes,
    /// Never: this is a UD queue, posted through [`SendQueue::post_ud`].
    ///
    /// [`SendQueue::post_ud`]: super::SendQueue::post_ud
    UdOnly,
    /// Never: this is a DCI's queue, posted through [`SendQueue::post_dc`].
    ///
    /// [`SendQueue::post_dc`]: super::SendQueue::post_dc
    DciOnly,
    /// Never: this is an XRC initiator's queue, posted through [`SendQueue::post_xrc`].
    ///
    /// [`SendQueue::post_xrc`]: super::SendQueue::post_xrc
    XrcOnly,
    /// Never: this is a raw packet QP's queue, posted through [`SendQueue::post_eth`].
    ///
    /// [`SendQueue::post_eth`]: super::SendQueue::post_eth
    EthOnly,
    /// A UC queue, not ready.
    UcNo,
    /// A UC queue, ready.
    UcYes,
}

impl Ready {
    pub(super) fn from(ready: bool) -> Ready {
        if ready {
            Ready::Yes
        } else {
            Ready::No
        }
    }

    /// The same entry, ready or not as `ready` says.
    pub(super) fn set(self, ready: bool) -> Ready {
        match (self.uc(), ready) {
            (true, true) => Ready::UcYes,
            (true, false) => Ready::UcNo,
            (false, _) => Ready::from(ready),
        }
    }

    /// Whether posts are taken.
    fn is_ready(self) -> bool {
        matches!(self, Ready::Yes | Ready::UcYes)
    }

    /// Whether this is a UC queue's entry.
    pub(super) fn uc(self) -> bool {
        matches!(self, Ready::UcNo | Ready::UcYes)
    }

    /// What a post to an entry that is not ready is refused with.
    pub(super) fn refusal(self) -> PostError {
        match self {
            Ready::UdOnly => PostError::WrongTransport {
                transport: Transport::Ud,
            },
            Ready::DciOnly => PostError::WrongTransport {
                transport: Transport::Dci,
            },
            Ready::XrcOnly => PostError::WrongTransport {
                transport: Transport::XrcIni,
            },
            Ready::EthOnly => PostError::WrongTransport {
                transport: Transport::Raw,
            },
            _ => PostError::NotReadyToSend,
        }
    }
}

impl Limits {
    /// The limits of the queue `desc` describes, not ready, for WQEs with `xport_ds` units
    /// of transport segment after the control segment.
    pub(super) fn new(desc: &SqDesc, xport_ds: usize) -> Limits {
        let max_ds = (desc.max_wqe_size / DS).min(MAX_DS);
        // Inline units left after the control (transport and remote-address) segments:
        // `16 d - 4` bytes fit in `d` of them with the 4-byte header.
        let inline_fit = [1, 2].map(|fixed| match max_ds.saturating_sub(fixed + xport_ds) {
            0 => 0,
            units => desc.max_inline.min(units * DS - 4),
        });
        // What fits one WQEBB with the 4-byte header after the control segments.
        let short_fit = [1, 2].map(|fixed| {
            let one_bb = (SEND_WQE_BB / DS).saturating_sub(fixed + xport_ds);
            inline_fit[fixed - 1].min((one_bb * DS).saturating_sub(4))
        });
        Limits {
            wqe_cnt: desc.wqe_cnt,
            ready: Ready::No,
            qpn_word: ctrl_word0(QpnDs::pack(desc.qpn, 0)),
            max_ds,
            max_inline: desc.max_inline,
            inline_fit,
            short_fit: [short_fit[0], short_fit[1], 0, 0],
            max_sge: desc.max_sge,
        }
    }

    /// Validates and writes one WQE at the producer counter `cur.pi` and records it for
    /// the poller in `slots`, once the QP is known not to be in error; returns where it is
    /// and what the doorbell needs of it.
    ///
    /// # Safety
    /// `ring` and `slots` must be one queue's: one slot per WQEBB of the ring.
    #[inline(always)]
    #[allow(
        clippy::too_many_arguments,
        reason = "the queue's parts by value or alone, so a post list keeps them in registers"
    )]
    pub(super) unsafe fn write<'r, 's, X: Xport>(
        &self,
        ring: impl WqeRing<'r>,
        staging: &mut Staging,
        slots: impl Slots<'s>,
        tail: &AtomicU32,
        cur: &mut Cursor,
        wr: &SendWr<'_>,
        xport: X,
    ) -> Result<Written<'r>, PostError> {
        // By reference: a work request in memory is loaded field by field where used,
        // not copied whole up front.
        let (op, data) = (&wr.op, wr.data);
        // The checks in order: ready (folded into the room check, see `Cursor::limit`; an
        // earlier refusal names it first through `refused`), not in error (by the caller),
        // data, size, room.
        let shape = op.shape();
        let fixed_ds = 1 + X::DS + shape.fixed_ds();
        let ds = match data {
            // A short inline SEND / WRITE (1..=`short_fit` bytes: one WQEBB, under every
            // limit), recognised by one compare, in code of its own.
            Data::Inline(bytes) if self.is_short(shape, bytes.len()) => {
                // SAFETY: forwarded; the payload is short (just checked).
                return unsafe {
                    self.write_short::<false, X>(
                        ring, staging, slots, tail, cur, wr, xport, shape, bytes,
                    )
                };
            }
            Data::Inline(bytes) => {
                // Inline SEND / WRITE under `inline_fit`: every size check in one compare.
                // Anything else takes the full checks (out of line); the size is computed
                // here either way, so that a constant payload gives a constant size.
                if shape.local_len().is_some()
                    || bytes.len() > self.inline_fit[shape.has_remote() as usize]
                {
                    checked_ds::<X>(*self, shape, shape.remote(op), data)?;
                }
                fixed_ds + inline_data_ds(bytes.len())
            }
            // Out of line, with values only (see `refused`): its loop and refusals would
            // otherwise crowd the registers of every post.
            Data::Sges(_) => checked_ds::<X>(*self, shape, shape.remote(op), data)?,
        };
        // A WQE of one WQEBB (every inline payload up to 28 bytes with a remote address, 44
        // without) in code of its own: its size, the wrap and the BlueFlame chunk count are
        // then constants.
        if ds <= SEND_WQE_BB / DS {
            // SAFETY: forwarded.
            unsafe {
                self.place::<true, true, false, X>(
                    ring, staging, slots, tail, cur, wr, data, xport, shape, ds,
                )
            }
        } else {
            // SAFETY: forwarded.
            unsafe {
                self.place::<false, true, false, X>(
                    ring, staging, slots, tail, cur, wr, data, xport, shape, ds,
                )
            }
        }
    }

    /// Whether an inline payload of `len` bytes of an operation of `shape` takes the short
    /// path ([`Limits::write_short`]): 1..=`short_fit` bytes, one WQEBB, under every limit.
    #[inline(always)]
    pub(super) fn is_short(&self, shape: Shape, len: usize) -> bool {
        len.wrapping_sub(1) < self.short_fit[shape.fit_index()]
    }

    /// [`Limits::write`] of a short inline SEND / WRITE (`bytes` is `wr`'s inline payload
    /// and [`Limits::is_short`]): no further size check, no argument segment, a known kind
    /// of data. The typed posts call it alone, so that their short case has no code in
    /// common with the long one. `LOCAL`: the room check's out-of-line part compiled in
    /// the caller's crate (see [`Limits::refresh_limit`]).
    ///
    /// # Safety
    /// As for [`Limits::write`], and `bytes` must be `wr`'s short inline payload.
    #[allow(clippy::too_many_arguments, reason = "as Limits::write")]
    #[inline(always)]
    pub(super) unsafe fn write_short<'r, 's, const LOCAL: bool, X: Xport>(
        &self,
        ring: impl WqeRing<'r>,
        staging: &mut Staging,
        slots: impl Slots<'s>,
        tail: &AtomicU32,
        cur: &mut Cursor,
        wr: &SendWr<'_>,
        xport: X,
        shape: Shape,
        bytes: &[u8],
    ) -> Result<Written<'r>, PostError> {
        debug_assert!(self.is_short(shape, bytes.len()));
        // Its size in DS: the control segments before the data and the inline header,
        // rounded up, by the same index (a load, an add and a shift; folded for a constant
        // work request). The indices of operations with a local length are never short.
        const LOG_DS: u32 = DS.trailing_zeros();
        let base = const {
            let header = size_of::<InlineSeg>() + DS - 1;
            [(1 + X::DS) * DS + header, (2 + X::DS) * DS + header, 0, 0]
        };
        let ds = (bytes.len() + base[shape.fit_index()]) >> LOG_DS;
        debug_assert_eq!(
            ds,
            1 + X::DS + shape.has_remote() as usize + inline_data_ds(bytes.len())
        );
        // SAFETY: forwarded.
        unsafe {
            self.place::<true, false, LOCAL, X>(
                ring,
                staging,
                slots,
                tail,
                cur,
                wr,
                Data::Inline(bytes),
                xport,
                shape,
                ds,
            )
        }
    }

    /// The rest of [`Limits::write`] once the WQE's size is known (`ds` units; `ONE_BB`:
    /// at most one WQEBB; `ARGS`: the operation may have a local length, a READ or an
    /// atomic with its argument segments; without, its kept length is 0; `LOCAL`: see
    /// [`Limits::write_short`]): the room check, the segments and the record for the poller.
    ///
    /// # Safety
    /// As for [`Limits::write`].
    #[allow(clippy::too_many_arguments, reason = "Limits::write's, split in two")]
    #[inline(always)]
    unsafe fn place<'r, 's, const ONE_BB: bool, const ARGS: bool, const LOCAL: bool, X: Xport>(
        &self,
        ring: impl WqeRing<'r>,
        staging: &mut Staging,
        slots: impl Slots<'s>,
        tail: &AtomicU32,
        cur: &mut Cursor,
        wr: &SendWr<'_>,
        data: Data<'_>,
        xport: X,
        shape: Shape,
        ds: usize,
    ) -> Result<Written<'r>, PostError> {
        // `wr_id` and the flags are read where used (short live ranges: no spills across
        // the segment stores); the data was read once, by the size check.
        let op = &wr.op;
        let bbs = if ONE_BB { 1 } else { prm::wqebbs(ds) as u32 };
        let pi = cur.pi;
        if cur.limit.wrapping_sub(pi) < bbs {
            self.refresh_limit(tail, cur, bbs, LOCAL)?;
        }

        let ctrl = CtrlSeg {
            opmod_idx_opcode: OpmodIdxOpcode::pack(shape.opcode(), pi as u16, shape.opmod()),
            // The QPN and the DS count are ORed into the first word below.
            qpn_ds: QpnDs::from_bits(Be32::new(0)),
            signature: 0,
            dci_stream_channel_id: [0; 2],
            fm_ce_se: wr.flags.fm_ce_se(),
            imm: shape.imm(op),
        };
        let (mut wqe, start) = ring.wqe(
            pi as usize * SEND_WQE_BB,
            bbs as usize * SEND_WQE_BB,
            staging,
        );
        // Located before the stores into the ring, which would make the compiler reload
        // the ring's fields (as `write_fast` does).
        let first = ring.view().block(start);
        {
            let wqe = &mut wqe;
            // The control segment as two words built in registers: the compiler then folds
            // the constant bytes (signature, stream id, often `fm_ce_se` and `imm`) into them.
            // SAFETY (every segment write below): the segments are the `ds` units counted
            // above in the same order (control, remote address, `args_ds` argument units,
            // then `data_ds` data units), so each ends within `ds * 16 <= bbs * 64` bytes.
            // The remote-address segment first: its operands are then dead before the
            // control segment is built (fewer registers live across the stores).
            let mut at = DS + X::DS * DS;
            if let Some(remote) = shape.remote(op) {
                // SAFETY: see above.
                unsafe { wqe.seg(at, raddr_words(remote)) };
                at += DS;
            }
            let [word0, word1] = ctrl.to_words();
            // SAFETY: see above.
            unsafe { wqe.seg(0, [word0 | self.qpn_word | ds_word(ds), word1]) };
            // SAFETY: see above (`X::DS` units; none for RC).
            unsafe { xport.write(wqe, DS) };
            if ARGS && shape.args_ds() != 0 {
                // SAFETY: see above (`args_ds` units).
                unsafe { op.write_args(wqe, at) };
                at += shape.args_ds() * DS;
            }
            match data {
                Data::Sges(sges) => {
                    let segs = sges
                        .iter()
                        .filter(|s| s.len != 0)
                        .map(|s| DataSeg::new(s.len, s.lkey, s.addr));
                    // SAFETY: see above (one unit per non-empty entry).
                    unsafe { wqe.seg_list(at, segs) };
                }
                Data::Inline(bytes) if !bytes.is_empty() => {
                    // SAFETY: see above: `InlineSeg::ds` units hold the 4-byte header and
                    // the bytes.
                    unsafe {
                        wqe.bytes(at, &inline_header(bytes.len()));
                        wqe.bytes(at + 4, bytes);
                    }
                }
                Data::Inline(_) => {}
            }
        }
        drop(wqe);

        let next_pi = pi.wrapping_add(bbs);
        // An atomic's operand size is its required local length; READ's (Some(0)) and the
        // others' (None) completions report 0 here.
        let kept = if ARGS { shape.kept_len() } else { 0 };
        // SAFETY: `start` is a masked ring offset (this function's contract).
        unsafe { record(slots, start, wr.wr_id, next_pi, SqSlot::pack(0, kept)) };

        cur.pi = next_pi;
        Ok(Written {
            offset: start,
            bytes: ds * DS,
            bbs: bbs as usize,
            first,
        })
    }

    /// What a post that failed a check before the room check is refused with: a queue
    /// that is not ready refuses everything with [`PostError::NotReadyToSend`] first.
    /// (Out of line with values only, here and in `refresh_limit`: no address of the
    /// limits or counters escapes, so a post list can keep them in registers.)
    #[inline(always)]
    fn refused(&self, err: PostError) -> PostError {
        #[cold]
        fn refused(ready: Ready, err: PostError) -> PostError {
            if ready.is_ready() {
                err
            } else {
                ready.refusal()
            }
        }
        refused(self.ready, err)
    }

    /// Re-reads the retire counter `tail` the poller advances when `needed` WQEBBs do not
    /// fit under the cached limit (or the queue is not ready: see `Cursor::limit`);
    /// refuses with [`PostError::NotReadyToSend`] or [`PostError::QueueFull`]. `local` (a
    /// constant at every call): the out-of-line part is compiled in the caller's crate and
    /// called directly (the typed calls' short path); a call into this crate goes through
    /// the GOT, whose load the compiler hoists out of the loop of a user's typed posts
    /// into a register held across every post (4 instructions a post in `cpu-bench`),
    /// while the generic entries' loops measured better with the call kept out.
    #[inline(always)]
    pub(super) fn refresh_limit(
        &self,
        tail: &AtomicU32,
        cur: &mut Cursor,
        needed: u32,
        local: bool,
    ) -> Result<(), PostError> {
        #[inline(always)]
        fn refresh(
            tail: &AtomicU32,
            wqe_cnt: u32,
            ready: Ready,
            pi: u32,
            needed: u32,
        ) -> Result<u32, PostError> {
            if !ready.is_ready() {
                return Err(ready.refusal());
            }
            let limit = tail.load(Ordering::Acquire).wrapping_add(wqe_cnt);
            let free = limit.wrapping_sub(pi);
            if needed > free {
                return Err(PostError::QueueFull { needed, free });
            }
            Ok(limit)
        }
        #[cold]
        #[inline]
        fn local_refresh(
            t: &AtomicU32,
            c: u32,
            r: Ready,
            pi: u32,
            n: u32,
        ) -> Result<u32, PostError> {
            refresh(t, c, r, pi, n)
        }
        #[cold]
        #[inline(never)]
        fn far(t: &AtomicU32, c: u32, r: Ready, pi: u32, n: u32) -> Result<u32, PostError> {
            refresh(t, c, r, pi, n)
        }
        let refresh = if local { local_refresh } else { far };
        cur.limit = refresh(tail, self.wqe_cnt, self.ready, cur.pi, needed)?;
        Ok(())
    }

    /// Validates the data part of a WQE and returns its size in DS.
    #[inline(always)]
    fn check_data(
        &self,
        shape: &Shape,
        remote: Option<Remote>,
        data: Data<'_>,
    ) -> Result<usize, PostError> {
        if shape.local_len().is_some() && self.ready.uc() {
            // READ and atomics (the operations with a local result) are not UC operations
            // (`MLX5_SUPPORTED_SEND_OPS_FLAGS_UC`); every one of them takes this path, so
            // RC posts pay nothing for the check.
            return Err(PostError::WrongTransport {
                transport: Transport::Uc,
            });
        }
        match data {
            Data::Inline(bytes) => {
                if shape.local_len().is_some() {
                    return Err(PostError::InlineNotAllowed);
                }
                if bytes.len() > self.max_inline {
                    return Err(PostError::InlineTooLarge {
                        len: bytes.len(),
                        max: self.max_inline,
                    });
                }
                Ok(inline_data_ds(bytes.len()))
            }
            Data::Sges(sges) => {
                if sges.len() > self.max_sge {
                    return Err(PostError::TooManySges {
                        count: sges.len(),
                        max: self.max_sge,
                    });
                }
                let total: u64 = sges.iter().map(|s| s.len as u64).sum();
                if total > MAX_MESSAGE_SIZE {
                    return Err(PostError::MessageTooLarge { len: total });
                }
                if let Some(len) = shape.local_len().filter(|l| *l != 0) {
                    Shape::check_alignment(shape.align_mask(), remote.map_or(0, |r| r.addr))?;
                    if sges.len() != 1 || sges[0].len != len {
                        return Err(PostError::AtomicResultBuffer { len });
                    }
                }
                Ok(sges.iter().filter(|s| s.len != 0).count())
            }
        }
    }
}

/// Records the WQE written at ring offset `start` for the poller: its `wr_id`, the
/// producer count after it and the `byte_len` its completion reports unless it is a READ
/// (`kept_word`: [`SqSlot::pack`]`(0, byte_len)`).
///
/// # Safety
/// `start` must be a masked offset of the ring `slots` belong to (one slot per WQEBB).
#[inline(always)]
pub(super) unsafe fn record<'s>(
    slots: impl Slots<'s>,
    start: usize,
    wr_id: u64,
    next_pi: u32,
    kept_word: u64,
) {
    let index = start / SEND_WQE_BB;
    let slots = slots.slots();
    debug_assert!(index < slots.len());
    // SAFETY: `start` is a masked ring offset, so its WQEBB is a ring slot, and there is
    // one slot per WQEBB (the caller's contract).
    let slot = unsafe { slots.get_unchecked(index) };
    slot.wr_id.store(wr_id, Ordering::Relaxed);
    slot.next_len
        .store(u64::from(next_pi) | kept_word, Ordering::Relaxed);
}

/// The first word of a control segment (memory order) with `qpn_ds` alone.
fn ctrl_word0(qpn_ds: QpnDs) -> u64 {
    CtrlSeg {
        opmod_idx_opcode: OpmodIdxOpcode::from_bits(Be32::new(0)),
        qpn_ds,
        signature: 0,
        dci_stream_channel_id: [0; 2],
        fm_ce_se: crate::prm::FmCeSe::from_bits(0),
        imm: Be32::new(0),
    }
    .to_words()[0]
}

/// The DS count `ds` (at most [`MAX_DS`], checked by every path before) as it lies in a
/// control segment's first word: its last byte. On a little-endian CPU a rotation, one
/// instruction (the compiler turns a shift of the size's computation into a shift, an
/// add and a mask of two 64-bit constants).
#[inline(always)]
fn ds_word(ds: usize) -> u64 {
    debug_assert!(ds <= MAX_DS);
    let word = if cfg!(target_endian = "little") {
        (ds as u64).rotate_right(8)
    } else {
        ds as u64
    };
    debug_assert_eq!(word, ctrl_word0(QpnDs::pack(0, ds as u8)));
    word
}

/// `struct mlx5_wqe_raddr_seg` ([`RaddrSeg`](crate::prm::RaddrSeg)) of `remote` as the two
/// words a WQE write stores (memory order): the key and the reserved zero in one word, one
/// store.
#[inline(always)]
fn raddr_words(remote: Remote) -> [u64; 2] {
    let rkey = u64::from(u32::from_ne_bytes(remote.rkey.to_be_bytes()));
    [
        u64::from_ne_bytes(remote.addr.to_be_bytes()),
        if cfg!(target_endian = "little") {
            rkey
        } else {
            rkey << 32
        },
    ]
}

/// The size in DS of a WQE whose data is not an inline payload under `inline_fit`: every
/// data and size check, in order, with the refusal as `Limits::refused` names it.
#[inline(never)]
fn checked_ds<X: Xport>(
    k: Limits,
    shape: Shape,
    remote: Option<Remote>,
    data: Data<'_>,
) -> Result<usize, PostError> {
    let fixed_ds = 1 + X::DS + shape.fixed_ds();
    let ds = match k.check_data(&shape, remote, data) {
        Ok(data_ds) => fixed_ds + data_ds,
        Err(e) => return Err(k.refused(e)),
    };
    if ds > k.max_ds {
        return Err(k.refused(PostError::WqeTooLarge {
            ds,
            max_ds: k.max_ds,
        }));
    }
    Ok(ds)
}

/// The transport segment between the control segment and the rest of a WQE: none for RC
/// (`()`, compiled away), the datagram segment for UD.
pub(super) trait Xport: Copy {
    /// Its size in 16-byte units.
    const DS: usize;

    /// Writes the segment at byte `at` of the WQE.
    ///
    /// # Safety
    /// The WQE must have room for `Self::DS` units at `at`.
    unsafe fn write(self, wqe: &mut WqeBuf<'_>, at: usize);
}

impl Xport for () {
    const DS: usize = 0;

    #[inline(always)]
    unsafe fn write(self, _: &mut WqeBuf<'_>, _: usize) {}
}

/// The inline segment's header for `len` bytes ([`InlineSeg::new`]), as an add: `len` is
/// below the inline bit (an inline payload fits a WQE, checked before), so the sum is the
/// OR, and an add of a constant is one `lea` where the OR took a copy and the OR.
#[inline(always)]
pub(super) fn inline_header(len: usize) -> [u8; 4] {
    debug_assert!(len < INLINE_SEG as usize);
    let header = Be32::new((len as u32).wrapping_add(INLINE_SEG));
    debug_assert_eq!(header, InlineSeg::new(len as u32).byte_count);
    header.to_bytes()
}

/// DS of `len` bytes of inline data (none at all when empty). `len` is at most the
/// queue's inline limit here (checked before), so the sum cannot overflow: an add and a
/// shift, where `InlineSeg::ds`'s `div_ceil` of any length takes five instructions.
#[inline(always)]
pub(super) fn inline_data_ds(len: usize) -> usize {
    if len == 0 {
        0
    } else {
        const LOG_DS: u32 = DS.trailing_zeros();
        (len + size_of::<InlineSeg>() + DS - 1) >> LOG_DS
    }
}
