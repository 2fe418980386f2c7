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

use core::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;

use crate::error::PostError;
use crate::mmio::{ring_send_doorbell, BfReg, DbRec, Uar};
use crate::prm::{
    self, AtomicSeg, Be32, Be64, CqUpdate, CtrlSeg, DataSeg, FenceMode, FmCeSe, InlineSeg,
    MaskedCs32, MaskedCs64, MaskedFa32, MaskedFa64, Opcode, OpmodIdxOpcode, QpnDs, RaddrSeg, DS,
    MAX_DS, SEND_WQE_BB,
};
use crate::ring::{Block, Ring, Staging, WqeBuf, WqeRing};

/// A gather or scatter entry: `len` bytes at `addr` in memory registered with `lkey`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sge {
    /// Virtual address.
    pub addr: u64,
    /// Length in bytes.
    pub len: u32,
    /// Local key of the memory region.
    pub lkey: u32,
}

/// The remote side of an RDMA or atomic operation.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Remote {
    /// Remote virtual address.
    pub addr: u64,
    /// Remote key.
    pub rkey: u32,
}

/// A send-queue operation (RC).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SendOp {
    /// SEND.
    Send,
    /// SEND with immediate data (host order; delivered unchanged to the receiver).
    SendImm(u32),
    /// SEND that invalidates `rkey` at the responder.
    SendInv(u32),
    /// RDMA WRITE.
    Write(Remote),
    /// RDMA WRITE with immediate (consumes a receive at the responder).
    WriteImm(Remote, u32),
    /// RDMA READ into the gather list.
    Read(Remote),
    /// 8-byte compare-and-swap; the original value lands in the single 8-byte local entry.
    CompareSwap {
        /// Target (8-byte aligned).
        remote: Remote,
        /// Value compared with the target.
        compare: u64,
        /// Value stored if equal.
        swap: u64,
    },
    /// 8-byte fetch-and-add; the original value lands in the single 8-byte local entry.
    FetchAdd {
        /// Target (8-byte aligned).
        remote: Remote,
        /// Value added.
        add: u64,
    },
    /// Masked compare-and-swap on a 4-byte target.
    MaskedCompareSwap32 {
        /// Target (4-byte aligned).
        remote: Remote,
        /// Arguments.
        args: MaskedCs32Args,
    },
    /// Masked compare-and-swap on an 8-byte target.
    MaskedCompareSwap64 {
        /// Target (8-byte aligned).
        remote: Remote,
        /// Arguments.
        args: MaskedCs64Args,
    },
    /// Masked fetch-and-add on a 4-byte target.
    MaskedFetchAdd32 {
        /// Target (4-byte aligned).
        remote: Remote,
        /// Value added.
        add: u32,
        /// Bits at which carries stop.
        field_boundary: u32,
    },
    /// Masked fetch-and-add on an 8-byte target.
    MaskedFetchAdd64 {
        /// Target (8-byte aligned).
        remote: Remote,
        /// Value added.
        add: u64,
        /// Bits at which carries stop.
        field_boundary: u64,
    },
    /// NOP (a control segment alone); useful as a fence or to request a CQE.
    Nop,
}

/// Arguments of a 4-byte masked compare-and-swap.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MaskedCs32Args {
    /// Value compared.
    pub compare: u32,
    /// Bits compared.
    pub compare_mask: u32,
    /// Value stored.
    pub swap: u32,
    /// Bits stored.
    pub swap_mask: u32,
}

/// Arguments of an 8-byte masked compare-and-swap.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MaskedCs64Args {
    /// Value compared.
    pub compare: u64,
    /// Bits compared.
    pub compare_mask: u64,
    /// Value stored.
    pub swap: u64,
    /// Bits stored.
    pub swap_mask: u64,
}

/// Where a send's local data comes from (or, for READ and atomics, goes to).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Data<'a> {
    /// A gather (or, for READ and atomics, scatter) list of registered memory.
    Sges(&'a [Sge]),
    /// Bytes copied into the WQE itself (SEND and WRITE only).
    Inline(&'a [u8]),
}

impl Data<'static> {
    /// No data.
    pub const NONE: Data<'static> = Data::Sges(&[]);
}

/// One work request of a list posted with [`SendQueue::post_many`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SendWr<'a> {
    /// Reported by the WQE's completion.
    pub wr_id: u64,
    /// The operation.
    pub op: SendOp,
    /// Its local data.
    pub data: Data<'a>,
    /// Its flags.
    pub flags: SendFlags,
}

/// Per-WR flags.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SendFlags {
    /// Ask for a CQE (`MLX5_WQE_CTRL_CQ_UPDATE`). Without it the WQE completes silently
    /// unless it fails, and is retired by the next signaled CQE.
    pub signaled: bool,
    /// Wait for earlier READs and atomics of this QP (`MLX5_WQE_CTRL_FENCE`).
    pub fence: bool,
    /// Solicited event at the responder (`MLX5_WQE_CTRL_SOLICITED`).
    pub solicited: bool,
}

impl SendFlags {
    /// Signaled, nothing else.
    pub const SIGNALED: SendFlags = SendFlags {
        signaled: true,
        fence: false,
        solicited: false,
    };
    /// Unsignaled, nothing else.
    pub const UNSIGNALED: SendFlags = SendFlags {
        signaled: false,
        fence: false,
        solicited: false,
    };

    #[inline(always)]
    fn fm_ce_se(self) -> FmCeSe {
        FmCeSe::new()
            .with_ce(if self.signaled {
                CqUpdate::Always
            } else {
                CqUpdate::Never
            })
            .with_solicited(self.solicited)
            .with_fm(if self.fence {
                FenceMode::SmallAndFence
            } else {
                FenceMode::None
            })
    }
}

/// How a batch of WQEs is handed to the device.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum DoorbellMode {
    /// Always the 8-byte doorbell; the device DMA-reads every WQE from the ring.
    Doorbell,
    /// rdma-core's rule: BlueFlame when exactly one WQE is rung and it fits the BlueFlame
    /// half; the 8-byte doorbell for batches.
    BlueFlame,
    /// BlueFlame-copy the last WQE of every batch when it fits; the device fetches the rest.
    BlueFlameLast,
    /// [`DoorbellMode::BlueFlameLast`] when the register has BlueFlame, else
    /// [`DoorbellMode::Doorbell`].
    #[default]
    Auto,
}

/// State shared between a send queue (poster) and the CQ that completes it (poller).
#[derive(Debug)]
pub(crate) struct SqShared {
    mask: u32,
    /// Per first WQEBB of a WQE: what its CQE needs (one array, one bounds check).
    slots: Box<[SqSlot]>,
    /// Producer count up to which every WQE has completed.
    tail: AtomicU32,
}

/// Where a WQE write finds the `wr_id` slots: through the shared state (loaded where
/// used: a single post) or as a slice (loaded once: a post list).
trait Slots<'a>: Copy {
    fn slots(self) -> &'a [SqSlot];
}

impl<'a> Slots<'a> for &'a SqShared {
    #[inline(always)]
    fn slots(self) -> &'a [SqSlot] {
        &self.slots
    }
}

impl<'a> Slots<'a> for &'a [SqSlot] {
    #[inline(always)]
    fn slots(self) -> &'a [SqSlot] {
        self
    }
}

/// What the poller needs about the WQE starting at one WQEBB.
#[derive(Debug, Default)]
struct SqSlot {
    wr_id: AtomicU64,
    /// Producer count after the WQE.
    next_pi: AtomicU32,
}

impl SqShared {
    pub(crate) fn new(wqe_cnt: u32) -> Self {
        SqShared {
            mask: wqe_cnt - 1,
            slots: (0..wqe_cnt).map(|_| SqSlot::default()).collect(),
            tail: AtomicU32::new(0),
        }
    }

    #[inline(always)]
    fn slot(&self, counter: u32) -> &SqSlot {
        let index = (counter & self.mask) as usize;
        debug_assert!(index < self.slots.len());
        // SAFETY: `slots` has `mask + 1` entries (both set in `new`, never changed), so a
        // masked counter is always in bounds; this is the hot path of every post and poll.
        unsafe { self.slots.get_unchecked(index) }
    }

    /// Retires the WQE whose first WQEBB index is `wqe_counter` (and every earlier one);
    /// returns its `wr_id`, or `None` if no outstanding WQE starts there (a duplicate CQE,
    /// one left from before a reset, or garbage): then nothing is retired, so the free
    /// count can never run past the ring.
    #[inline(always)]
    pub(crate) fn complete(&self, wqe_counter: u16) -> Option<u64> {
        let slot = self.slot(wqe_counter as u32);
        let next = slot.next_pi.load(Ordering::Relaxed);
        // Only the poller writes `tail`. An outstanding WQE ends 1..=wqe_cnt WQEBBs past
        // it; a retired one (and every slot not starting a WQE of this lap) at or before it.
        let ahead = next.wrapping_sub(self.tail.load(Ordering::Relaxed));
        // `ahead` in 1..=wqe_cnt, as one unsigned compare.
        if ahead.wrapping_sub(1) > self.mask {
            return None;
        }
        self.tail.store(next, Ordering::Release);
        Some(slot.wr_id.load(Ordering::Relaxed))
    }

    pub(crate) fn reset(&self) {
        for slot in self.slots.iter() {
            slot.next_pi.store(0, Ordering::Relaxed);
        }
        self.tail.store(0, Ordering::Release);
    }
}

/// Description of a send queue as `mlx5dv_init_obj` (or the model) hands it over.
#[derive(Debug)]
pub struct SqDesc {
    /// First byte of the SQ ring (64-byte aligned).
    pub buf: core::ptr::NonNull<u8>,
    /// Number of 64-byte WQEBBs (a power of two).
    pub wqe_cnt: u32,
    /// The QP doorbell record (word 1 is the send counter).
    pub dbrec: core::ptr::NonNull<Be32>,
    /// Offset of the QP's doorbell / BlueFlame register in its UAR page.
    pub bf_offset: usize,
    /// BlueFlame half size in bytes; 0 = no BlueFlame.
    pub bf_size: usize,
    /// QP number.
    pub qpn: u32,
    /// Largest WQE the device accepts, in bytes (`max_sq_desc_sz`; at most 63 DS).
    pub max_wqe_size: usize,
    /// Largest inline payload to accept.
    pub max_inline: usize,
    /// Largest gather list to accept.
    pub max_sge: usize,
}

/// A WQE just written, as the doorbell needs it.
struct Written<'r> {
    /// Ring offset.
    offset: usize,
    /// Size in bytes (DS × 16).
    bytes: usize,
    /// Its first 64 bytes in the ring (located while the ring's address is at hand, read
    /// by the doorbell).
    first: Block<'r>,
}

/// Everything a post needs to know about one WQE before writing it.
struct Shape {
    opcode: Opcode,
    opmod: u8,
    imm: Be32,
    remote: Option<Remote>,
    args_ds: usize,
    /// For READ and atomics: required local-buffer length (0 = any, READ).
    local_len: Option<u32>,
}

impl SendOp {
    #[inline(always)]
    fn shape(&self) -> Shape {
        let plain = |opcode, imm: u32, remote| Shape {
            opcode,
            opmod: 0,
            imm: Be32::new(imm),
            remote,
            args_ds: 0,
            local_len: None,
        };
        let atomic = |opcode, opmod, remote, args_ds, len| Shape {
            opcode,
            opmod,
            imm: Be32::new(0),
            remote: Some(remote),
            args_ds,
            local_len: Some(len),
        };
        match *self {
            SendOp::Send => plain(Opcode::Send, 0, None),
            SendOp::SendImm(imm) => plain(Opcode::SendImm, imm, None),
            SendOp::SendInv(rkey) => plain(Opcode::SendInval, rkey, None),
            SendOp::Write(r) => plain(Opcode::RdmaWrite, 0, Some(r)),
            SendOp::WriteImm(r, imm) => plain(Opcode::RdmaWriteImm, imm, Some(r)),
            SendOp::Read(r) => Shape {
                local_len: Some(0),
                ..plain(Opcode::RdmaRead, 0, Some(r))
            },
            SendOp::CompareSwap { remote, .. } => atomic(Opcode::AtomicCs, 0, remote, 1, 8),
            SendOp::FetchAdd { remote, .. } => atomic(Opcode::AtomicFa, 0, remote, 1, 8),
            SendOp::MaskedCompareSwap32 { remote, .. } => atomic(
                Opcode::AtomicMaskedCs,
                prm::OPMOD_MASKED_ATOMIC_4B,
                remote,
                1,
                4,
            ),
            SendOp::MaskedCompareSwap64 { remote, .. } => atomic(
                Opcode::AtomicMaskedCs,
                prm::OPMOD_MASKED_ATOMIC_8B,
                remote,
                2,
                8,
            ),
            SendOp::MaskedFetchAdd32 { remote, .. } => atomic(
                Opcode::AtomicMaskedFa,
                prm::OPMOD_MASKED_ATOMIC_4B,
                remote,
                1,
                4,
            ),
            SendOp::MaskedFetchAdd64 { remote, .. } => atomic(
                Opcode::AtomicMaskedFa,
                prm::OPMOD_MASKED_ATOMIC_8B,
                remote,
                1,
                8,
            ),
            SendOp::Nop => plain(Opcode::Nop, 0, None),
        }
    }

    /// Writes the atomic argument segment(s) at byte `offset` of the WQE.
    ///
    /// # Safety
    /// The WQE must have room for `self.shape().args_ds` units at `offset`.
    #[inline(always)]
    unsafe fn write_args(&self, wqe: &mut WqeBuf<'_>, offset: usize) {
        // SAFETY: each arm writes exactly `args_ds` units of its shape (caller's contract).
        unsafe {
            match *self {
                SendOp::CompareSwap { compare, swap, .. } => wqe.seg(
                    offset,
                    AtomicSeg {
                        swap_add: Be64::new(swap),
                        compare: Be64::new(compare),
                    },
                ),
                SendOp::FetchAdd { add, .. } => wqe.seg(
                    offset,
                    AtomicSeg {
                        swap_add: Be64::new(add),
                        compare: Be64::new(0),
                    },
                ),
                SendOp::MaskedCompareSwap32 { args, .. } => wqe.seg(
                    offset,
                    MaskedCs32 {
                        swap: Be32::new(args.swap),
                        compare: Be32::new(args.compare),
                        swap_mask: Be32::new(args.swap_mask),
                        compare_mask: Be32::new(args.compare_mask),
                    },
                ),
                SendOp::MaskedCompareSwap64 { args, .. } => wqe.seg(
                    offset,
                    MaskedCs64 {
                        swap: Be64::new(args.swap),
                        compare: Be64::new(args.compare),
                        swap_mask: Be64::new(args.swap_mask),
                        compare_mask: Be64::new(args.compare_mask),
                    },
                ),
                SendOp::MaskedFetchAdd32 {
                    add,
                    field_boundary,
                    ..
                } => wqe.seg(
                    offset,
                    MaskedFa32 {
                        add: Be32::new(add),
                        field_boundary: Be32::new(field_boundary),
                        reserved: Be64::new(0),
                    },
                ),
                SendOp::MaskedFetchAdd64 {
                    add,
                    field_boundary,
                    ..
                } => wqe.seg(
                    offset,
                    MaskedFa64 {
                        add: Be64::new(add),
                        field_boundary: Be64::new(field_boundary),
                    },
                ),
                _ => {}
            }
        }
    }
}

/// What writing a WQE reads of its queue besides the ring and the counters, by value: a
/// run of writes (a post list) then keeps it in registers, where fields of the queue would
/// be reloaded after every store into the ring (which could alias them as far as the
/// compiler knows).
#[derive(Clone, Copy, Debug)]
struct Limits {
    /// Number of WQEBBs in the ring.
    wqe_cnt: u32,
    ready: bool,
    /// Control dword 1 with this QP's number and DS 0, set once (DS ORed in per WQE).
    qpn_ds: QpnDs,
    max_ds: usize,
    max_inline: usize,
    /// The largest inline payload that passes both the inline limit and the WQE size limit
    /// after a control segment alone (`[0]`) or with a remote-address segment (`[1]`):
    /// one compare for an inline SEND or WRITE.
    inline_fit: [usize; 2],
    max_sge: usize,
}

/// The counters WQE writes advance (a run of writes works on a copy: see [`Limits`]).
#[derive(Clone, Copy, Debug)]
struct Cursor {
    /// Producer count of WQEBBs (`cur_post`); its low 16 bits go into each WQE.
    pi: u32,
    /// Producer count up to which the ring is known to be free: the retire counter as last
    /// read, plus the ring size. Posts under it need no load of the counter the poller
    /// writes; the counter only grows, so the cached value is never too high. While the
    /// queue is not ready it equals `pi` (no room), so the one room compare of the hot
    /// path also sends every post of a queue that is not ready to the checking slow path.
    limit: u32,
}

impl Limits {
    /// Validates and writes one WQE at the producer counter `cur.pi` and records it for
    /// the poller in `slots`, once the QP is known not to be in error; returns where it is
    /// and what the doorbell needs of it.
    ///
    /// # Safety
    /// `ring` and `slots` must be one queue's: one slot per WQEBB of the ring.
    #[inline(always)]
    unsafe fn write<'r, 's>(
        &self,
        ring: impl WqeRing<'r>,
        staging: &mut Staging,
        slots: impl Slots<'s>,
        tail: &AtomicU32,
        cur: &mut Cursor,
        wr: SendWr<'_>,
    ) -> Result<Written<'r>, PostError> {
        let SendWr {
            wr_id,
            op,
            data,
            flags,
        } = wr;
        // The checks in order: ready (folded into the room check, see `Cursor::limit`; an
        // earlier refusal names it first through `refused`), not in error (by the caller),
        // data, size, room.
        let shape = op.shape();
        let fixed_ds = 1 + shape.remote.is_some() as usize + shape.args_ds;
        let ds = match data {
            // Inline SEND / WRITE under `inline_fit`: every size check in one compare.
            Data::Inline(bytes)
                if shape.local_len.is_none()
                    && bytes.len() <= self.inline_fit[shape.remote.is_some() as usize] =>
            {
                debug_assert_eq!(shape.args_ds, 0);
                fixed_ds + inline_data_ds(bytes.len())
            }
            _ => {
                let ds = match self.check_data(&shape, data) {
                    Ok(data_ds) => fixed_ds + data_ds,
                    Err(e) => return Err(self.refused(e)),
                };
                if ds > self.max_ds {
                    return Err(self.refused(PostError::WqeTooLarge {
                        ds,
                        max_ds: self.max_ds,
                    }));
                }
                ds
            }
        };
        let bbs = prm::wqebbs(ds) as u32;
        let pi = cur.pi;
        if cur.limit.wrapping_sub(pi) < bbs {
            self.refresh_limit(tail, cur, bbs)?;
        }

        let ctrl = CtrlSeg {
            opmod_idx_opcode: OpmodIdxOpcode::new()
                .with_opcode(shape.opcode as u8)
                .with_wqe_index(pi as u16)
                .with_opmod(shape.opmod),
            // `qpn_ds` has DS 0 and `ds <= max_ds <= 63`: OR it in (no field masking).
            qpn_ds: QpnDs::from_bits(Be32::new(self.qpn_ds.into_bits().get() | ds as u32)),
            fm_ce_se: flags.fm_ce_se(),
            imm: shape.imm,
            ..CtrlSeg::default()
        };
        let (mut wqe, start) = ring.wqe(
            pi as usize * SEND_WQE_BB,
            bbs as usize * SEND_WQE_BB,
            staging,
        );
        {
            let wqe = &mut wqe;
            // The control segment as one 16-byte value: the compiler then folds the constant
            // bytes (signature, stream id, often `fm_ce_se` and `imm`) into whole-word stores.
            // SAFETY (every segment write below): the segments are the `ds` units counted
            // above in the same order (control, remote address, `args_ds` argument units,
            // then `data_ds` data units), so each ends within `ds * 16 <= bbs * 64` bytes.
            unsafe { wqe.seg(0, u128::from_ne_bytes(ctrl.to_bytes())) };
            let mut at = DS;
            if let Some(remote) = shape.remote {
                let raddr = RaddrSeg {
                    raddr: Be64::new(remote.addr),
                    rkey: Be32::new(remote.rkey),
                    reserved: Be32::new(0),
                };
                // SAFETY: see above.
                unsafe { wqe.seg(at, raddr) };
                at += DS;
            }
            // SAFETY: see above (`args_ds` units).
            unsafe { op.write_args(wqe, at) };
            at += shape.args_ds * DS;
            match data {
                Data::Sges(sges) => {
                    for sge in sges.iter().filter(|s| s.len != 0) {
                        // SAFETY: see above (one unit per non-empty entry).
                        unsafe { wqe.seg(at, DataSeg::new(sge.len, sge.lkey, sge.addr)) };
                        at += DS;
                    }
                }
                Data::Inline(bytes) if !bytes.is_empty() => {
                    let header = InlineSeg::new(bytes.len() as u32);
                    // SAFETY: see above: `InlineSeg::ds` units hold the 4-byte header and
                    // the bytes.
                    unsafe {
                        wqe.bytes(at, &header.byte_count.to_bytes());
                        wqe.bytes(at + 4, bytes);
                    }
                }
                Data::Inline(_) => {}
            }
        }
        drop(wqe);

        let index = start / SEND_WQE_BB;
        let slots = slots.slots();
        debug_assert!(index < slots.len());
        // SAFETY: `start` is a masked ring offset, so its WQEBB is a ring slot, and there is
        // one slot per WQEBB (this function's contract).
        let slot = unsafe { slots.get_unchecked(index) };
        let next_pi = pi.wrapping_add(bbs);
        slot.wr_id.store(wr_id, Ordering::Relaxed);
        slot.next_pi.store(next_pi, Ordering::Relaxed);
        cur.pi = next_pi;
        Ok(Written {
            offset: start,
            bytes: ds * DS,
            first: ring.view().block(start),
        })
    }

    /// What a post that failed a check before the room check is refused with: a queue
    /// that is not ready refuses everything with [`PostError::NotReadyToSend`] first.
    /// (Out of line with values only, here and in `refresh_limit`: no address of the
    /// limits or counters escapes, so a post list can keep them in registers.)
    #[inline(always)]
    fn refused(&self, err: PostError) -> PostError {
        #[cold]
        fn refused(ready: bool, err: PostError) -> PostError {
            if ready {
                err
            } else {
                PostError::NotReadyToSend
            }
        }
        refused(self.ready, err)
    }

    /// Re-reads the retire counter `tail` the poller advances when `needed` WQEBBs do not
    /// fit under the cached limit (or the queue is not ready: see `Cursor::limit`);
    /// refuses with [`PostError::NotReadyToSend`] or [`PostError::QueueFull`].
    #[inline(always)]
    fn refresh_limit(
        &self,
        tail: &AtomicU32,
        cur: &mut Cursor,
        needed: u32,
    ) -> Result<(), PostError> {
        #[cold]
        fn refresh(
            tail: &AtomicU32,
            wqe_cnt: u32,
            ready: bool,
            pi: u32,
            needed: u32,
        ) -> Result<u32, PostError> {
            if !ready {
                return Err(PostError::NotReadyToSend);
            }
            let limit = tail.load(Ordering::Acquire).wrapping_add(wqe_cnt);
            let free = limit.wrapping_sub(pi);
            if needed > free {
                return Err(PostError::QueueFull { needed, free });
            }
            Ok(limit)
        }
        cur.limit = refresh(tail, self.wqe_cnt, self.ready, cur.pi, needed)?;
        Ok(())
    }

    /// Validates the data part of a WQE and returns its size in DS.
    #[inline(always)]
    fn check_data(&self, shape: &Shape, data: Data<'_>) -> Result<usize, PostError> {
        match data {
            Data::Inline(bytes) => {
                if shape.local_len.is_some() {
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
                if let Some(len) = shape.local_len.filter(|l| *l != 0) {
                    let remote = shape.remote.map_or(0, |r| r.addr);
                    if remote % len as u64 != 0 {
                        return Err(PostError::MisalignedAtomic { addr: remote });
                    }
                    if sges.len() != 1 || sges[0].len != len {
                        return Err(PostError::AtomicResultBuffer { len });
                    }
                }
                Ok(sges.iter().filter(|s| s.len != 0).count())
            }
        }
    }
}

/// Rings the doorbell for the WQEs up to `last` (producer count `pi`): BlueFlame if it is
/// at most `bf_max` bytes.
#[inline(always)]
fn ring_last<U: Uar>(
    bf: &mut BfReg<U>,
    dbrec: &DbRec,
    pi: u32,
    ring: &Ring,
    last: &Written<'_>,
    bf_max: usize,
) {
    let bf_chunks = if last.bytes <= bf_max {
        last.bytes.div_ceil(SEND_WQE_BB)
    } else {
        0
    };
    ring_send_doorbell(bf, dbrec, pi, ring, (last.offset, last.first), bf_chunks);
}

/// `mode` as it takes effect on a register with a BlueFlame half of `bf_size` bytes.
fn effective_mode(mode: DoorbellMode, bf_size: usize) -> DoorbellMode {
    match (mode, bf_size) {
        (_, 0) | (DoorbellMode::Doorbell, _) => DoorbellMode::Doorbell,
        (DoorbellMode::Auto, _) => DoorbellMode::BlueFlameLast,
        (mode, _) => mode,
    }
}

/// DS of `len` bytes of inline data (none at all when empty).
#[inline(always)]
fn inline_data_ds(len: usize) -> usize {
    if len == 0 {
        0
    } else {
        InlineSeg::ds(len)
    }
}

/// Largest total message length (`max_msg_sz`, 2 GiB).
pub const MAX_MESSAGE_SIZE: u64 = 1 << 31;

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
    /// WQEs pushed since the last doorbell; when not 0, `last_offset` is the ring offset
    /// of the last of them (its size is read back from its control segment).
    pushed: u32,
    /// Ring offset of the last pushed WQE.
    last_offset: usize,
    qpn: u32,
    dbrec: DbRec,
    bf: BfReg<U>,
    mode: DoorbellMode,
    /// `mode` resolved against the register (see [`SendQueue::effective_mode`]).
    effective: DoorbellMode,
    /// Largest WQE (bytes) BlueFlame-copied when it is rung alone (0: never).
    bf_single: usize,
    /// Largest last WQE (bytes) of a batch BlueFlame-copied (0: never).
    bf_batch: usize,
    shared: Arc<SqShared>,
    errored: Arc<AtomicBool>,
}

/// `SendQueue::write_parts` of one work request on the fields of the queue `$sq`: the
/// result borrows its ring alone, so the doorbell can still take the register.
macro_rules! write_wqe {
    ($sq:expr, $wr_id:expr, $op:expr, $data:expr, $flags:expr) => {
        Self::write_parts(
            &$sq.k,
            &$sq.ring,
            &mut $sq.staging,
            &$sq.shared,
            &mut $sq.c,
            &$sq.errored,
            SendWr {
                wr_id: $wr_id,
                op: $op,
                data: $data,
                flags: $flags,
            },
        )
    };
}

impl<U: Uar> SendQueue<U> {
    /// A send queue over the described memory.
    ///
    /// # Safety
    /// Every pointer in `desc` must be valid as described (ring of `wqe_cnt * 64` bytes,
    /// 64-byte aligned; doorbell record of two words) for the life of the queue, written on
    /// the CPU side only through it, and `uar` must be the UAR page holding `desc.bf_offset`.
    pub(crate) unsafe fn new(
        desc: &SqDesc,
        uar: U,
        shared: Arc<SqShared>,
        errored: Arc<AtomicBool>,
    ) -> Self {
        // SAFETY: forwarded from this function's contract.
        let ring = unsafe { Ring::new(desc.buf, desc.wqe_cnt as usize * SEND_WQE_BB) };
        // `Limits::write` relies on this: one slot per WQEBB of the ring.
        assert_eq!(shared.slots.len(), ring.size() / SEND_WQE_BB);
        // SAFETY: word 1 of the record the contract makes ours.
        let dbrec = unsafe { DbRec::new(desc.dbrec.add(prm::SND_DBR)) };
        let max_ds = (desc.max_wqe_size / DS).min(MAX_DS);
        // Inline units left after the control (and remote-address) segment: `16 d - 4`
        // bytes fit in `d` of them with the 4-byte header.
        let inline_fit = [1, 2].map(|fixed| match max_ds.saturating_sub(fixed) {
            0 => 0,
            units => desc.max_inline.min(units * DS - 4),
        });
        let mut sq = SendQueue {
            ring,
            staging: Staging::default(),
            k: Limits {
                wqe_cnt: desc.wqe_cnt,
                ready: false,
                qpn_ds: QpnDs::new().with_qpn(desc.qpn),
                max_ds,
                max_inline: desc.max_inline,
                inline_fit,
                max_sge: desc.max_sge,
            },
            c: Cursor { pi: 0, limit: 0 },
            pushed: 0,
            last_offset: 0,
            qpn: desc.qpn,
            dbrec,
            bf: BfReg {
                uar,
                offset: desc.bf_offset,
                size: desc.bf_size,
            },
            mode: DoorbellMode::Auto,
            effective: DoorbellMode::Doorbell,
            bf_single: 0,
            bf_batch: 0,
            shared,
            errored,
        };
        sq.set_mode(DoorbellMode::Auto);
        sq
    }

    /// Chooses how doorbells are rung.
    pub fn set_mode(&mut self, mode: DoorbellMode) {
        self.mode = mode;
        self.effective = effective_mode(mode, self.bf.size);
        (self.bf_single, self.bf_batch) = match self.effective {
            DoorbellMode::BlueFlame => (self.bf.size, 0),
            DoorbellMode::BlueFlameLast => (self.bf.size, self.bf.size),
            _ => (0, 0),
        };
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
        self.k.ready = ready;
        if !ready {
            // No room until ready again (see `Cursor::limit`); the next post after that re-reads
            // the retire counter.
            self.c.limit = self.c.pi;
        }
    }

    pub(crate) fn reset(&mut self) {
        self.c.pi = 0;
        self.c.limit = 0;
        self.pushed = 0;
        self.k.ready = false;
        self.dbrec.write(Be32::new(0));
        self.shared.reset();
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
        self.last_offset = write_wqe!(self, wr_id, op, data, flags)?.offset;
        self.pushed += 1;
        Ok(())
    }

    /// Posts a list of work requests with one doorbell, as `ibv_post_send` does with a
    /// linked list: writes them in order, stops at the first one refused, then rings every
    /// WQE written (and any pushed before). Returns how many were posted, or that count and
    /// the refusal.
    ///
    /// Every check of [`SendQueue::push`] applies to each work request, except that whether
    /// the QP is in error is read once per call: a QP that a CQE moves to error during the
    /// call is indistinguishable from one moved just after it.
    #[inline(always)]
    pub fn post_many<'a>(
        &mut self,
        wrs: impl IntoIterator<Item = SendWr<'a>>,
    ) -> Result<usize, (usize, PostError)> {
        let errored = self.errored.load(Ordering::Relaxed);
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
            let written = if errored {
                Err(PostError::NotReadyToSend)
            } else {
                // SAFETY: as in `write_wqe`.
                unsafe { k.write(ring, &mut self.staging, slots, tail, &mut cur, wr) }
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
        errored: &AtomicBool,
        wr: SendWr<'_>,
    ) -> Result<Written<'r>, PostError> {
        if errored.load(Ordering::Relaxed) {
            return Err(PostError::NotReadyToSend);
        }
        // SAFETY: the queue's own ring and slots (one per WQEBB, checked in `new`).
        unsafe { k.write(ring, staging, shared, &shared.tail, c, wr) }
    }

    /// Hands every WQE pushed since the last doorbell to the device: doorbell record, then
    /// one 8-byte doorbell or a BlueFlame copy of the last WQE (see [`DoorbellMode`]).
    /// Returns the number of WQEs rung.
    #[inline(always)]
    pub fn ring_doorbell(&mut self) -> u32 {
        if self.pushed == 0 {
            return 0;
        }
        let last = Written {
            offset: self.last_offset,
            bytes: self.ring.wqe_bytes(self.last_offset),
            first: self.ring.block(self.last_offset),
        };
        let bf_max = if self.pushed == 1 {
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
        core::mem::replace(&mut self.pushed, 0)
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
        let written = write_wqe!(self, wr_id, op, data, flags)?;
        // Rings this WQE and any pushed before it; no last-WQE state to store and reload.
        let bf_max = if self.pushed == 0 {
            self.bf_single
        } else {
            self.pushed = 0;
            self.bf_batch
        };
        ring_last(
            &mut self.bf,
            &self.dbrec,
            self.c.pi,
            &self.ring,
            &written,
            bf_max,
        );
        Ok(())
    }

    /// The value of the send doorbell record as last written.
    pub fn doorbell_record(&self) -> u32 {
        self.dbrec.read().get()
    }

    /// The current offset of the doorbell / BlueFlame register (toggles between halves).
    pub fn register_offset(&self) -> usize {
        self.bf.offset
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::null::NullQueues;
    use crate::prm::CqeOpcode;

    const WRITE: SendOp = SendOp::Write(Remote {
        addr: 0x1000,
        rkey: 7,
    });

    /// Readiness is folded into the room check of the hot path (`limit`); a queue that is
    /// not ready must still refuse first with `NotReadyToSend`, before any other check.
    #[test]
    fn a_queue_that_is_not_ready_refuses_everything_first() {
        let mut q = NullQueues::new(4, 8, 16).unwrap();
        q.sq.set_ready(false);
        let big = [0u8; 17];
        let refused = [
            q.sq.post(1, WRITE, Data::Inline(&[1; 8]), SendFlags::SIGNALED),
            q.sq.push(1, WRITE, Data::Inline(&[1; 8]), SendFlags::SIGNALED),
            q.sq.post(1, WRITE, Data::Inline(&big), SendFlags::SIGNALED),
            q.sq.post(
                1,
                SendOp::Read(Remote::default()),
                Data::Inline(&[1]),
                SendFlags::SIGNALED,
            ),
            q.sq.post(
                1,
                SendOp::Nop,
                Data::Sges(&[Sge::default(); 5]),
                SendFlags::SIGNALED,
            ),
        ];
        for r in refused {
            assert_eq!(r, Err(PostError::NotReadyToSend));
        }
        assert_eq!((q.sq.producer_count(), q.sq.ring_doorbell()), (0, 0));

        // Ready again: the precise errors, then posts until the ring is full.
        q.sq.set_ready(true);
        assert_eq!(
            q.sq.post(1, WRITE, Data::Inline(&big), SendFlags::SIGNALED),
            Err(PostError::InlineTooLarge { len: 17, max: 16 })
        );
        for i in 0..4 {
            q.sq.post(i, WRITE, Data::Inline(&[1; 8]), SendFlags::SIGNALED)
                .unwrap();
        }
        assert_eq!(
            q.sq.post(4, SendOp::Nop, Data::NONE, SendFlags::SIGNALED),
            Err(PostError::QueueFull { needed: 1, free: 0 })
        );
        // Full and not ready: not ready is named.
        q.sq.set_ready(false);
        assert_eq!(
            q.sq.post(4, SendOp::Nop, Data::NONE, SendFlags::SIGNALED),
            Err(PostError::NotReadyToSend)
        );
        assert_eq!(q.sq.producer_count(), 4);
    }

    /// The one-compare bound for inline SEND / WRITE (`inline_fit`) accepts exactly what
    /// the separate inline and WQE-size checks accept, and refusals keep their own error.
    #[test]
    fn inline_posts_at_the_size_limits() {
        // 63 DS at most (1008-byte WQEs); inline limit above what 63 DS can hold.
        let mut q = NullQueues::new(64, 8, 1000).unwrap();
        let bytes = [0x77u8; 1001];
        let mut post = |op, len: usize| {
            q.sq.post(1, op, Data::Inline(&bytes[..len]), SendFlags::SIGNALED)
        };
        // ctrl + raddr + 61 units (4-byte header + 972 bytes) = 63 DS.
        assert_eq!(post(WRITE, 972), Ok(()));
        assert_eq!(
            post(WRITE, 973),
            Err(PostError::WqeTooLarge { ds: 64, max_ds: 63 })
        );
        // ctrl + 62 units (header + 988 bytes) = 63 DS.
        assert_eq!(post(SendOp::Send, 988), Ok(()));
        assert_eq!(
            post(SendOp::Send, 989),
            Err(PostError::WqeTooLarge { ds: 64, max_ds: 63 })
        );
        assert_eq!(
            post(SendOp::Send, 1001),
            Err(PostError::InlineTooLarge {
                len: 1001,
                max: 1000
            })
        );
        assert_eq!(
            post(SendOp::Read(Remote::default()), 8),
            Err(PostError::InlineNotAllowed)
        );
        // A queue whose inline limit is the tighter one.
        let mut q = NullQueues::new(64, 8, 12).unwrap();
        assert_eq!(
            q.sq.post(1, WRITE, Data::Inline(&bytes[..12]), SendFlags::SIGNALED),
            Ok(())
        );
        assert_eq!(
            q.sq.post(1, WRITE, Data::Inline(&bytes[..13]), SendFlags::SIGNALED),
            Err(PostError::InlineTooLarge { len: 13, max: 12 })
        );
        assert_eq!(q.sq.producer_count(), 1);
    }

    fn wr(wr_id: u64, data: Data<'_>) -> SendWr<'_> {
        SendWr {
            wr_id,
            op: WRITE,
            data,
            flags: SendFlags::UNSIGNALED,
        }
    }

    /// `post_many` writes in order, stops at the first refusal and rings once everything
    /// written, earlier pushes included.
    #[test]
    fn post_many_rings_once_what_it_wrote() {
        let mut q = NullQueues::new(16, 8, 16).unwrap();
        q.sq.set_mode(DoorbellMode::Doorbell);
        let reg = q.sq.register_offset();
        assert_eq!(q.sq.post_many([]), Ok(0));
        assert_eq!((q.sq.doorbell_record(), q.sq.register_offset()), (0, reg));

        q.sq.push(1, SendOp::Nop, Data::NONE, SendFlags::SIGNALED)
            .unwrap();
        let list = [wr(2, Data::Inline(&[2; 8])), wr(3, Data::Inline(&[3; 16]))];
        assert_eq!(q.sq.post_many(list), Ok(2));
        assert_eq!(q.sq.doorbell_record(), 3);
        assert_eq!(q.sq.uar().read64(reg), q.sq.wqe_bytes(2, 8)[..]);
        assert_eq!(q.sq.ring_doorbell(), 0, "nothing left pending");

        // Refused in the middle: the one before it is posted and rung, nothing after.
        let reg = q.sq.register_offset();
        let list = [
            wr(4, Data::Inline(&[4; 8])),
            wr(5, Data::Inline(&[5; 17])),
            wr(6, Data::Inline(&[6; 8])),
        ];
        assert_eq!(
            q.sq.post_many(list),
            Err((1, PostError::InlineTooLarge { len: 17, max: 16 }))
        );
        assert_eq!((q.sq.producer_count(), q.sq.doorbell_record()), (4, 4));
        assert_eq!(q.sq.uar().read64(reg), q.sq.wqe_bytes(3, 8)[..]);

        // A QP in error (an error CQE was polled): nothing written.
        q.complete(3, Opcode::RdmaWrite, CqeOpcode::ReqErr, 0x04);
        let mut out = [crate::cq::Completion::default()];
        assert_eq!(q.cq.poll(&mut out), 1);
        assert_eq!(
            q.sq.post_many([wr(7, Data::Inline(&[7; 8]))]),
            Err((0, PostError::NotReadyToSend))
        );
        assert_eq!((q.sq.producer_count(), q.sq.doorbell_record()), (4, 4));
    }

    /// `ring_doorbell` reads the size of the last pushed WQE back from its control
    /// segment: a batch whose last WQE fits the BlueFlame half is copied whole
    /// (`BlueFlameLast`), one whose last WQE does not is rung with the 8-byte doorbell.
    #[test]
    fn the_last_pushed_wqe_size_comes_from_its_control_segment() {
        let mut q = NullQueues::new(16, 8, 512).unwrap();
        q.sq.set_mode(DoorbellMode::BlueFlameLast);
        let reg = q.sq.register_offset();
        q.sq.push(1, SendOp::Nop, Data::NONE, SendFlags::SIGNALED)
            .unwrap();
        q.sq.push(2, WRITE, Data::Inline(&[0x33; 20]), SendFlags::SIGNALED)
            .unwrap();
        let last = q.sq.producer_count() - 1;
        assert_eq!(q.sq.ring_doorbell(), 2);
        // The 64-byte last WQE, all of it in the register (ds = 4: ctrl, raddr, 2 inline).
        let wqe = q.sq.wqe_bytes(last, 64);
        assert_eq!(wqe[7] & 0x3f, 4);
        for (k, chunk) in wqe.chunks(8).enumerate() {
            assert_eq!(q.sq.uar().read64(reg + k * 8), chunk, "word {k}");
        }
        // Last WQE of 21 DS, 6 WQEBBs (> the 256-byte half): the doorbell, 8 bytes only.
        let reg = q.sq.register_offset();
        q.sq.push(3, SendOp::Nop, Data::NONE, SendFlags::SIGNALED)
            .unwrap();
        q.sq.push(4, WRITE, Data::Inline(&[0x44; 300]), SendFlags::SIGNALED)
            .unwrap();
        let last = q.sq.producer_count() - 6;
        assert_eq!(q.sq.ring_doorbell(), 2);
        let wqe = q.sq.wqe_bytes(last, 16);
        assert_eq!(q.sq.uar().read64(reg), wqe[..8]);
        assert_eq!(q.sq.uar().read64(reg + 8), [0; 8], "no BlueFlame copy");
    }
}
