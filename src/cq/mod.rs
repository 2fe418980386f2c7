//! Completion queues: CQE parsing and polling.
//!
//! A CQE belongs to software when its owner bit equals `(ci >> log2(cqe_cnt)) & 1` and its
//! opcode is not INVALID; only then, after [`udma_from_device_barrier`], are its other bytes
//! read. The consumer index is written to the doorbell record once per poll batch.
//! Facts: `shared/docs/prm-facts.md` §7.
//!
//! Every CQE reaches the caller: successes, error and flush CQEs (of signaled and unsignaled
//! WQEs alike, with that WQE's `wr_id`), CQEs with an opcode this driver does not know and
//! compressed CQEs (reported as errors and skipped, never a stall).
//!
//! **Scatter to CQE.** A receive CQE with format 1 or 2 carries the message (prm-facts
//! §7.2, §7.5); it is parsed out of line (the responder path already is) and its bytes are
//! copied into the receive's scatter list, recorded when the receive was posted, as
//! rdma-core's `mlx5_copy_to_recv_wqe` / `mlx5_copy_to_recv_srq` do
//! ([`Completion::data_in_cqe`], [`Status::BadScatter`]).
//!
//! **Progress of a software device.** A poll that finds the CQ empty calls the UAR's
//! [`Uar::idle`] hook. It does nothing on hardware; on the `sim` backend it runs the
//! model's deferred work (`mlx5_hw::Nic::progress`: RNR and transport retries, CQEs held
//! back by fault injection), so polling drives the model the way time drives a NIC. The
//! application may still call `progress()` itself (e.g. to advance a NIC it does not poll).
//!
//! Files: this one holds the queue ([`CompletionQueue`], its poll loop, what it shares with
//! the QPs it serves); `completion` what a poll returns ([`Completion`], [`Status`],
//! [`WcOpcode`], [`WcError`]); `parse` each CQE's parse, the requester's fast path and the
//! out-of-line rest.

use core::num::NonZeroUsize;
use core::ptr::NonNull;
use core::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use crate::cqz::{CqeCompression, Unzip};
use crate::mem::MrTable;
use crate::mmio::{ring_cq_arm, udma_from_device_barrier, DbRec, Uar};
use crate::prm::{
    self, validity_count, Arm, ArmCmd, Be32, CqeCompLayout, CqeFormat, CqeOpcode, CQE_SIZE,
};
use crate::ring::CqBuf;
use crate::rq::{RqShared, SrqShared};
use crate::sq::{qpn_key, SqShared};

mod completion;
mod lean;
pub mod mprq;
mod parse;
#[cfg(test)]
mod tests;

pub use completion::{Completion, Status, WcError, WcOpcode};
pub use lean::CompletionView;

use lean::Sink;

/// Description of a CQ as `mlx5dv_init_obj` (or the model) hands it over.
#[derive(Debug)]
pub struct CqDesc {
    /// First entry (64-byte aligned).
    pub buf: NonNull<u8>,
    /// Number of entries (a power of two).
    pub cqe_cnt: u32,
    /// Bytes per entry: 64 or 128.
    pub cqe_size: usize,
    /// The CQ doorbell record: word 0 consumer index, word 1 arm.
    pub dbrec: NonNull<Be32>,
    /// CQ number.
    pub cqn: u32,
}

/// The receive side of a QP as a CQ sees it.
#[derive(Debug, Clone)]
pub(crate) enum RecvShared {
    Rq(Arc<RqShared>),
    Srq(Arc<SrqShared>),
    /// A DCI: no receive side.
    None,
}

/// The key an XRC SRQ is attached to its CQ under ([`QpEntry::qpn`]): the `srqn_uidx`
/// bits 23..0 its receive CQEs carry (its user index under CQE version 1, its number under
/// version 0; rdma-core's `get_resp_ctx_v1` finds an XRC SRQ by it, `MLX5_RSC_TYPE_XSRQ`),
/// with bit 31 set, which no 24-bit QPN has. Its CQEs name the XRC target QP, which no CQ
/// serves, so the poller looks this key up when their QPN is unknown.
pub(crate) fn xrc_srq_key(srqn_uidx: u32) -> u32 {
    1 << 31 | srqn_uidx & 0xff_ffff
}

/// A QP a CQ serves.
#[derive(Debug, Clone)]
pub(crate) struct QpEntry {
    pub(crate) qpn: u32,
    pub(crate) sq: Arc<SqShared>,
    pub(crate) recv: RecvShared,
    pub(crate) errored: Arc<AtomicBool>,
    /// A UD, UC or raw packet QP, which has a send-queue error state: a requester error
    /// CQE makes its send queue refuse posts (`SqShared::refuse`) and sets no `errored`
    /// (the QP is in SQE, its receives go on); RC's errors all end in ERR, both set.
    pub(crate) sqe: bool,
    /// A DCI with streams: a requester error CQE may be one stream's (the DCI stays in
    /// RTS), so it sets no flag; the device flushes what follows if the DCI failed.
    pub(crate) streams: bool,
    /// A raw packet QP's receive queue, attached to its receive CQ: that CQ's receive CQEs
    /// are its (they carry the flow tag where other QPs' carry the QPN), so the CQ serves
    /// no other QP.
    pub(crate) eth_rq: bool,
}

/// The QPs attached to a CQ. Attaching happens on the slow path (any thread); the poller
/// copies the list when the generation changed, which it checks before every search of its
/// copy (the out-of-line paths). The hot QP's completions search nothing: a detach marks
/// the detached QP's send state gone ([`SqShared::is_gone`]), which the poller reads with
/// the state it reads anyway, and then searches (so refreshes) its copy.
#[derive(Debug, Default)]
pub(crate) struct CqAttachments {
    generation: AtomicU64,
    entries: Mutex<Vec<QpEntry>>,
}

impl CqAttachments {
    pub(crate) fn attach(&self, entry: QpEntry) {
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        match entries
            .iter_mut()
            .find(|e| e.qpn == entry.qpn && Arc::ptr_eq(&e.sq, &entry.sq))
        {
            Some(e) => e.eth_rq |= entry.eth_rq,
            None => entries.push(entry),
        }
        self.generation.fetch_add(1, Ordering::Release);
    }

    /// Whether any QP is attached.
    pub(crate) fn serves_any(&self) -> bool {
        !self
            .entries
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_empty()
    }

    /// Whether a raw packet QP's receive queue is attached (see [`QpEntry::eth_rq`]).
    pub(crate) fn serves_eth_rq(&self) -> bool {
        self.entries
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .any(|e| e.eth_rq)
    }

    pub(crate) fn detach(&self, qpn: u32) {
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        let (gone, kept) = entries.drain(..).partition(|e: &QpEntry| e.qpn == qpn);
        *entries = kept;
        self.generation.fetch_add(1, Ordering::Release);
        for e in gone {
            e.sq.set_gone();
        }
    }
}

/// A completion queue. Polling takes `&mut self`: no locks, no allocation, no hashing
/// (except for a receive whose data came in its CQE, [`QpConfig::scatter_to_cqe`]: its copy
/// into the scatter list takes the context's region table lock, to write only into live
/// regions).
///
/// [`QpConfig::scatter_to_cqe`]: crate::QpConfig::scatter_to_cqe
#[derive(Debug)]
pub struct CompletionQueue<U: Uar> {
    buf: CqBuf,
    /// Number of entries (a power of two): the owner bit of a pass is `ci & cqe_cnt`.
    cqe_cnt: u32,
    ci: u32,
    /// The position of the entry at `ci` ([`CqBuf::entry_at`]: its address), kept as
    /// polling advances: a poll of an empty CQ is then one load and one compare (with the
    /// owner bit of the pass).
    head: usize,
    /// The owner bit of the current pass (`ci & cqe_cnt`, kept as polling wraps); on an
    /// enhanced CQ the validity count expected at `ci`.
    owner: u8,
    /// [`REQ_INLINE`], or 0 on a CQ whose requester CQEs need more than the inline parse
    /// (timestamps) or that polls by validity count (`enhanced`): no [`owner_key`] is below
    /// 0, so every CQE goes out of line.
    req_below: u8,
    /// A CQ of the enhanced compression layout, polled by validity count
    /// ([`Self::poll_enhanced`]). Its `head` is one byte before the entry and its `owner`
    /// the entry's expected validity count, so that the first test of [`poll`](Self::poll),
    /// unchanged, reads byte 62 and passes (at least) every new entry.
    enhanced: bool,
    set_ci: DbRec,
    arm_db: DbRec,
    cqn: u32,
    uar: U,
    /// Completion events handed out for this CQ (by its channel): the arm sequence number
    /// is this count mod 4, as libmlx5 advances it inside `ibv_get_cq_event`.
    events: Arc<AtomicU32>,
    qps: QpTable,
}

/// `op_own` XOR the owner bit of the pass, rotated right by one: the owner mismatch in bit
/// 7, the opcode in bits 6..3, the format in bits 2..1, the solicited-event bit in bit 0.
/// Two compares of this one byte tell a poll what it needs ([`OWNED_BELOW`],
/// [`REQ_INLINE`]).
#[inline(always)]
fn owner_key(op_own: u8, owner: u8) -> u8 {
    (op_own ^ owner).rotate_right(1)
}

/// An entry belongs to software when its [`owner_key`] is below this: the owner bit
/// matches (bit 7 clear) and the opcode is not INVALID (bits 6..3 not all ones).
const OWNED_BELOW: u8 = 0x78;
const _: () = assert!(CqeOpcode::Invalid as u8 == 0xf);
/// An [`owner_key`] below this is ours, opcode REQ, normal format (the solicited-event bit
/// aside): the common case, parsed inline.
const REQ_INLINE: u8 = 2;
const _: () = assert!(CqeOpcode::Req as u8 == 0 && CqeFormat::Normal as u8 == 0);

/// QP number that no CQE carries (QPNs are 24-bit).
const NO_QPN: u32 = u32::MAX;
/// `MLX5_CQE_VENDOR_SYNDROME_ODP_PFAULT` (rdma-core mlx5dv.h).
const ODP_PFAULT: u8 = 0x93;

/// The bits of `srqn_uidx` rdma-core reads as the user index (`mlx5_parse_cqe`, CQE v1).
const UIDX_MASK: u32 = 0xff_ffff;

/// [`Completion`]'s `uidx_wire` from a CQE's `srqn_uidx`: its bytes, the SRQ byte dropped,
/// not swapped ([`qpn_key`]: one shift on a little-endian CPU).
#[inline(always)]
fn uidx_wire(srqn_uidx: Be32) -> u32 {
    qpn_key(u32::from_ne_bytes(srqn_uidx.to_bytes()))
}

/// A 24-bit value from the order [`qpn_key`] leaves its three bytes in, and back (the
/// same reordering both ways).
#[inline(always)]
fn swap24(x: u32) -> u32 {
    if cfg!(target_endian = "little") {
        x.swap_bytes() >> 8
    } else {
        x
    }
}

/// The poller's copy of the attached QPs, and the parsing that needs them.
#[derive(Debug)]
struct QpTable {
    qps: Vec<QpEntry>,
    /// Index of the QP the last CQE that was looked up named.
    last: usize,
    /// Index of the raw packet QP whose receive queue this CQ serves, if one does.
    eth_rq: Option<usize>,
    /// The list `qps` is a copy of, and its generation at the copy.
    attachments: Arc<CqAttachments>,
    seen: u64,
    /// The CQ was created with timestamps: completions carry the CQE's.
    timestamps: bool,
    /// The send queue of the QP the last requester CQE named, and that QP's number
    /// ([`NO_QPN`] when none; `hot_sq` is then a placeholder, whose key no CQE has):
    /// consecutive CQEs usually name the same QP, which then costs one compare with the
    /// key in its state ([`qpn_key`]; that of a detached QP matches nothing) and no table
    /// access.
    hot_qpn: u32,
    hot_sq: Arc<SqShared>,
    /// Expansion of compressed CQEs, on a CQ created with compression.
    unzip: Option<Box<Unzip>>,
    /// Where data carried in CQEs goes (scatter to CQE): the CQ's buffer and the
    /// context's writable regions.
    scattered: Option<Box<(CqBuf, Arc<MrTable>)>>,
}

impl<U: Uar> CompletionQueue<U> {
    /// # Safety
    /// The memory in `desc` must be valid as described for the life of the queue; `uar` is
    /// the UAR page holding this CQ's arm doorbell; `events` counts the completion events
    /// handed out for it. `timestamps`: the CQ was created with timestamps.
    pub(crate) unsafe fn new(
        desc: &CqDesc,
        uar: U,
        attachments: Arc<CqAttachments>,
        events: Arc<AtomicU32>,
        timestamps: bool,
    ) -> Self {
        // SAFETY: forwarded from this function's contract.
        let buf = unsafe { CqBuf::new(desc.buf, desc.cqe_cnt, desc.cqe_size) };
        buf.init();
        let head = buf.start();
        // SAFETY: the two record words the contract makes ours.
        let (set_ci, arm_db) = unsafe {
            (
                DbRec::new(desc.dbrec.add(prm::CQ_SET_CI)),
                DbRec::new(desc.dbrec.add(prm::CQ_ARM_DB)),
            )
        };
        set_ci.write(Be32::new(0));
        CompletionQueue {
            buf,
            cqe_cnt: desc.cqe_cnt,
            ci: 0,
            head,
            owner: 0,
            req_below: if timestamps { 0 } else { REQ_INLINE },
            enhanced: false,
            set_ci,
            arm_db,
            cqn: desc.cqn,
            uar,
            events,
            qps: QpTable {
                qps: Vec::new(),
                last: 0,
                eth_rq: None,
                attachments,
                seen: u64::MAX,
                timestamps,
                hot_qpn: NO_QPN,
                hot_sq: Arc::new(SqShared::gone()),
                unzip: None,
                scattered: None,
            },
        }
    }

    /// Expands compressed CQEs of `compression`'s layout from now on (the CQ was created
    /// with it).
    pub(crate) fn expand_compressed(&mut self, compression: CqeCompression) {
        if compression.layout == CqeCompLayout::Enhanced {
            self.buf.init_validity();
            (self.enhanced, self.req_below) = (true, 0);
            // Byte 62 of entry 0, expecting the first pass's count, 0.
            (self.head, self.owner) = (self.buf.start().wrapping_sub(1), 0);
        }
        self.qps.unzip = Some(Box::new(Unzip::new(
            self.buf.clone(),
            self.cqe_cnt,
            compression.layout,
        )));
    }

    /// Puts the data of CQEs that carry it (scatter to CQE) into the receives' scatter
    /// lists, into the regions of `mrs` only.
    pub(crate) fn copy_scattered(&mut self, mrs: Arc<MrTable>) {
        self.qps.scattered = Some(Box::new((self.buf.clone(), mrs)));
    }

    /// The CQ was created with compression.
    pub(crate) fn compresses(&self) -> bool {
        self.qps.unzip.is_some()
    }

    /// The CQ number.
    pub fn cqn(&self) -> u32 {
        self.cqn
    }

    /// Number of entries.
    pub fn capacity(&self) -> u32 {
        self.cqe_cnt
    }

    /// Consumer index (CQEs consumed since creation).
    pub fn consumer_index(&self) -> u32 {
        self.ci
    }

    /// A copy of the entry at consumer count `index` (all of its 64 or 128 bytes), as the
    /// device last wrote that slot: to show what a NIC wrote (e.g. after polling it). Never a
    /// reference: the device may write the slot again.
    pub fn cqe_bytes(&self, index: u32) -> Vec<u8> {
        self.buf.copy_entry(index)
    }

    /// Polls up to `out.len()` completions into `out`; returns how many.
    ///
    /// When there is none, the UAR's [`Uar::idle`] hook runs: on the `sim` backend that is
    /// the model's `progress()` (RNR and transport retries, CQEs held back by a fault), so
    /// a loop that polls until a completion arrives needs nothing backend-specific.
    #[inline(always)]
    pub fn poll(&mut self, out: &mut [Completion]) -> usize {
        self.poll_into(out)
    }

    /// The next CQE software owns, whole, the consumer index moved past it: for a queue
    /// that parses its own CQEs (a striding work queue's dedicated CQ, [`mprq`]). Only for
    /// a CQ without compression.
    pub(crate) fn next_raw(&mut self) -> Option<[u8; CQE_SIZE]> {
        let at = self.head;
        if owner_key(self.buf.own_byte(at), self.owner) >= OWNED_BELOW {
            return None;
        }
        udma_from_device_barrier();
        let cqe = self.buf.entry_at(at).read().to_bytes();
        self.head = match self.buf.next_pos(at) {
            Some(next) => next,
            None => {
                self.owner ^= 1;
                self.buf.start()
            }
        };
        self.ci = self.ci.wrapping_add(1);
        self.set_ci.write(prm::cq_set_ci(self.ci));
        Some(cqe)
    }

    /// The poll loop of [`poll`](Self::poll) and [`poll_with`](Self::poll_with): up to
    /// `sink.room()` completions into `sink`. (The sink moves into the out-of-line path by
    /// value: a reference to it would make every poll store it.)
    #[inline(always)]
    fn poll_into(&mut self, mut sink: impl Sink) -> usize {
        let mut at = self.head;
        let mut key = owner_key(self.buf.own_byte(at), self.owner);
        let room = sink.room();
        if room == 0 || key >= OWNED_BELOW {
            self.uar.idle();
            return 0;
        }
        // The consumer index and the owner bit stay in `self` (no register held for them
        // across the parse): the index moves by `n` at the end, the owner bit when a pass
        // ends.
        let mut n = 0;
        loop {
            udma_from_device_barrier();
            // The common case in one compare: ours, opcode REQ, normal format; its parse is
            // inlined here, everything else out of line. An enhanced CQ (`req_below` 0)
            // leaves here on its first entry.
            if key < self.req_below {
                sink.req(n, &mut self.qps, self.buf.entry_at(at));
            } else if self.enhanced {
                // At most `room` (said so: with a constant `room` of 1 the caller's compare
                // of the count then folds on every path).
                return self.poll_enhanced(sink, room).get().min(room);
            } else {
                let ci = self.ci.wrapping_add(n as u32);
                // `op_own` read again (the device no longer writes the entry): the key's
                // test then needs no copy of it.
                let entry = self.buf.entry_at(at);
                sink.put(n, self.qps.parse_other(entry, entry.op_own(), ci));
            }
            n += 1;
            at = match self.buf.next_pos(at) {
                Some(next) => next,
                None => {
                    // A new pass.
                    self.owner ^= 1;
                    self.buf.start()
                }
            };
            if n == room {
                break;
            }
            key = owner_key(self.buf.entry_at(at).op_own(), self.owner);
            if key >= OWNED_BELOW {
                break;
            }
        }
        let ci = self.ci.wrapping_add(n as u32);
        (self.ci, self.head) = (ci, at);
        self.set_ci.write(prm::cq_set_ci(ci));
        n
    }

    /// [`poll`](Self::poll) on a CQ of the enhanced compression layout, once its first test
    /// found the entry at `head` new: an entry is new when its validity count (byte 62) is
    /// the one of its index, `(ci >> log2(cqe_cnt)) & 0xff`, as the kernel
    /// (`mlx5_cqwq_get_cqe_enhanced_comp`), DPDK (`check_cqe_iteration`) and UCX
    /// (`own_field_offset` on the signature byte) poll such CQs. The owner bit is not read:
    /// none of them reads it in this layout, and NVIDIA's FlexIO header gives a compressed
    /// slot's byte 63 no owner field. Each entry is tested as [`poll`](Self::poll) tests the
    /// first, by [`owner_key`] of the count against the expected one: the parity bit and the
    /// high bits, which tell this pass from the last (an index holds the count of this pass
    /// or the last: the device or the expansion rewrites every index each pass). Returns at
    /// least one: the first entry was found new.
    #[inline(never)]
    fn poll_enhanced(&mut self, mut sink: impl Sink, room: usize) -> NonZeroUsize {
        let log_cnt = self.cqe_cnt.trailing_zeros();
        let mut at = self.head.wrapping_add(1);
        let mut n = 0;
        loop {
            let entry = self.buf.entry_at(at);
            udma_from_device_barrier();
            let ci = self.ci.wrapping_add(n as u32);
            sink.put(n, self.qps.parse_other(entry, entry.op_own(), ci));
            n += 1;
            at = self.buf.next_pos(at).unwrap_or_else(|| self.buf.start());
            let expected = validity_count(ci.wrapping_add(1), log_cnt);
            if n == room || owner_key(self.buf.entry_at(at).validity(), expected) >= OWNED_BELOW {
                break;
            }
        }
        self.ci = self.ci.wrapping_add(n as u32);
        (self.head, self.owner) = (at.wrapping_sub(1), validity_count(self.ci, log_cnt));
        self.set_ci.write(prm::cq_set_ci(self.ci));
        NonZeroUsize::MIN.saturating_add(n - 1)
    }

    /// Arms the CQ: one event for the next CQE (`solicited_only`: the next solicited or
    /// error CQE), delivered to the CQ's completion channel. Writes the arm record, then the
    /// 64-bit arm doorbell. The arm carries the count of events taken so far (mod 4): arm
    /// again after taking an event, and the device answers; nothing else to acknowledge.
    pub fn arm(&mut self, solicited_only: bool) {
        let arm = Arm {
            sn: self.events.load(Ordering::Acquire) & 3,
            cmd: if solicited_only {
                ArmCmd::Solicited
            } else {
                ArmCmd::NextCqe
            },
            ci: self.ci,
            cqn: self.cqn,
        };
        ring_cq_arm(&self.uar, &self.arm_db, &arm);
    }
}
