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

use core::num::NonZeroUsize;
use core::ptr::NonNull;
use core::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use crate::cqz::{BadCompression, CqeCompression, Unzip};
use crate::mem::{MrTable, MAX_RECV_SGE};
use crate::mmio::{ring_cq_arm, udma_from_device_barrier, DbRec, Uar};
use crate::prm::{
    self, validity_count, Arm, ArmCmd, Be32, CqeCompLayout, CqeFormat, CqeOpcode, OpOwn, Opcode,
    Syndrome, WcStatus,
};
use crate::ring::{CqBuf, CqeEntry};
use crate::rq::{RqShared, SrqShared};
use crate::sq::{Sge, SqShared};

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

/// What a completion reports.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum WcOpcode {
    /// SEND (also with immediate or invalidate) completed at the requester.
    Send,
    /// RDMA WRITE (also with immediate) completed at the requester.
    RdmaWrite,
    /// RDMA READ completed; `byte_len` bytes were read.
    RdmaRead,
    /// Compare-and-swap completed.
    CompareSwap,
    /// Fetch-and-add completed.
    FetchAdd,
    /// Masked compare-and-swap completed.
    MaskedCompareSwap,
    /// Masked fetch-and-add completed.
    MaskedFetchAdd,
    /// NOP completed.
    Nop,
    /// A SEND arrived (`imm` / `invalidated_rkey` tell which kind).
    #[default]
    Recv,
    /// An RDMA WRITE with immediate arrived.
    RecvRdmaWithImm,
    /// A send opcode this driver never posts.
    Other(u8),
}

impl WcOpcode {
    /// What a requester CQE for send opcode `op` reports (a table lookup: see
    /// [`SEND_OPCODES`]).
    #[inline(always)]
    fn from_send_opcode(op: u8) -> WcOpcode {
        SEND_OPCODES[op as usize]
    }

    const fn map_send_opcode(op: u8) -> WcOpcode {
        const SEND: u8 = Opcode::Send as u8;
        const SEND_IMM: u8 = Opcode::SendImm as u8;
        const SEND_INVAL: u8 = Opcode::SendInval as u8;
        const RDMA_WRITE: u8 = Opcode::RdmaWrite as u8;
        const RDMA_WRITE_IMM: u8 = Opcode::RdmaWriteImm as u8;
        const RDMA_READ: u8 = Opcode::RdmaRead as u8;
        const ATOMIC_CS: u8 = Opcode::AtomicCs as u8;
        const ATOMIC_FA: u8 = Opcode::AtomicFa as u8;
        const ATOMIC_MASKED_CS: u8 = Opcode::AtomicMaskedCs as u8;
        const ATOMIC_MASKED_FA: u8 = Opcode::AtomicMaskedFa as u8;
        const NOP: u8 = Opcode::Nop as u8;
        match op {
            SEND | SEND_IMM | SEND_INVAL => WcOpcode::Send,
            RDMA_WRITE | RDMA_WRITE_IMM => WcOpcode::RdmaWrite,
            RDMA_READ => WcOpcode::RdmaRead,
            ATOMIC_CS => WcOpcode::CompareSwap,
            ATOMIC_FA => WcOpcode::FetchAdd,
            ATOMIC_MASKED_CS => WcOpcode::MaskedCompareSwap,
            ATOMIC_MASKED_FA => WcOpcode::MaskedFetchAdd,
            NOP => WcOpcode::Nop,
            _ => WcOpcode::Other(op),
        }
    }
}

/// [`WcOpcode`] for every send opcode byte, built at compile time: one load per CQE
/// instead of a search.
static SEND_OPCODES: [WcOpcode; 256] = {
    let mut table = [WcOpcode::Recv; 256];
    let mut op = 0;
    while op < 256 {
        table[op] = WcOpcode::map_send_opcode(op as u8);
        op += 1;
    }
    table
};

/// An error CQE: the syndrome names the cause.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct WcError {
    /// Raw syndrome (see [`WcError::syndrome`]).
    pub syndrome: u8,
    /// Vendor syndrome (`ibv_wc.vendor_err`).
    pub vendor_syndrome: u8,
    /// WQE counter of the failed WQE (send: first WQEBB; receive: counter or SRQ index).
    pub wqe_counter: u16,
}

impl WcError {
    /// The named syndrome, if the value is one.
    pub fn syndrome(&self) -> Option<Syndrome> {
        Syndrome::from_u8(self.syndrome)
    }

    /// The `ibv_wc_status` a verbs poller would report.
    pub fn wc_status(&self) -> WcStatus {
        WcStatus::from_syndrome(self.syndrome)
    }

    /// A flush (the QP was in error when this WQE's turn came).
    pub fn is_flush(&self) -> bool {
        self.syndrome == Syndrome::WrFlushErr as u8
    }

    /// An SRQ receive the device consumed while its on-demand buffer faulted
    /// (REMOTE_ABORTED_ERR with vendor syndrome 0x93, `MLX5_CQE_VENDOR_SYNDROME_ODP_PFAULT`;
    /// rdma-core's `is_odp_pfault_err`): no data landed, the QP is not in error, and the
    /// sender retries. rdma-core re-posts the WQE unseen; this driver reports it, and the
    /// caller posts the same buffer to the SRQ again (its pages are the ones the kernel is
    /// bringing in, so the retry lands there without another fault; docs/memory.md,
    /// "On-demand paging"). The
    /// faulted slot cools down for a lap of the SRQ's ring (the kernel may still read its
    /// WQE), as rdma-core's wait queue keeps it.
    pub fn is_odp_fault(&self) -> bool {
        self.syndrome == Syndrome::RemoteAbortedErr as u8 && self.vendor_syndrome == ODP_PFAULT
    }
}

impl core::fmt::Display for WcError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let name = self.syndrome().map_or("unknown syndrome", Syndrome::name);
        write!(
            f,
            "{name} ({:#04x}, vendor {:#04x}) at WQE {}",
            self.syndrome, self.vendor_syndrome, self.wqe_counter
        )
    }
}

/// The outcome of a completion.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum Status {
    /// Success.
    #[default]
    Success,
    /// An error CQE.
    Error(WcError),
    /// A CQE with an opcode this driver does not know (`op_own` given); skipped.
    UnknownOpcode(u8),
    /// A compressed CQE on a CQ created without compression; skipped.
    Compressed,
    /// A compressed block or slot that cannot be expanded ([`BadCompression`] says why):
    /// the entry was consumed, nothing was retired.
    BadCompression(BadCompression),
    /// A CQE for a QP this CQ does not serve (e.g. a destroyed QP's stale entry).
    UnknownQp,
    /// A CQE naming a WQE (by its `wqe_counter`) that is not outstanding on its queue: a
    /// duplicate, an entry left from before a reset, or garbage. Nothing was retired.
    UnknownWqe(u16),
    /// A receive whose data came in the CQE ([`QpConfig::scatter_to_cqe`]) that could not
    /// be put into its scatter list: an entry is in no region of this context registered
    /// with local write, the list is shorter than the data (rdma-core's copy answers
    /// `IBV_WC_LOC_LEN_ERR`), or the CQE claims more bytes than it can carry. The receive
    /// was retired; its buffers were not written.
    ///
    /// [`QpConfig::scatter_to_cqe`]: crate::QpConfig::scatter_to_cqe
    BadScatter,
}

impl Status {
    /// Success?
    pub fn is_ok(&self) -> bool {
        *self == Status::Success
    }
}

/// One polled completion.
///
/// The fields every completion sets are public; the details of a receive (immediate,
/// invalidated rkey, P_Key, source QP and LID, the UD flags, the solicited bit, data in
/// the CQE), the user index and the timestamp are read through accessors
/// ([`Completion::imm`], [`Completion::src_qp`], ...) over a packed form, so that a
/// requester completion, the common case, is written with few stores: its fields first,
/// the ones it leaves zero together after them (`repr(C)`; a unit test pins the offsets).
/// The `with_*` methods build a completion field by field (an expected one, in a test or a
/// software model). Equality compares every field; `Debug` and serde show them by name.
#[repr(C)]
#[derive(Clone, Copy, Default, PartialEq, Eq)]
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize, serde::Deserialize),
    serde(into = "CompletionFields", from = "CompletionFields")
)]
pub struct Completion {
    /// The `wr_id` given when the WQE was posted (0 for unknown-QP / unknown-opcode CQEs).
    pub wr_id: u64,
    /// Local QP number.
    pub qpn: u32,
    /// Bytes received (responder), read (RDMA READ, from the CQE), or the operand size of
    /// an atomic (8, or 4 for 4-byte masked atomics; from the posted WQE, as rdma-core does:
    /// the CQE's byte count is not defined there). 0 for every other requester completion
    /// and for errors.
    pub byte_len: u32,
    /// `srqn_uidx` bits 23..0 as the CQE has them, big-endian: [`Completion::user_index`]
    /// swaps them (the poll stores the bytes it loaded).
    uidx_be: u32,
    /// What completed.
    pub opcode: WcOpcode,
    /// Success or the error.
    pub status: Status,
    /// The CQE's `imm_inval_pkey` as [`Completion::imm`], [`Completion::invalidated_rkey`]
    /// or [`Completion::pkey_index`] read it: which one, `flags` says (one CQE field holds
    /// one of the three).
    extra: u32,
    /// `flags_rqpn` of a receive: [`Completion::src_qp`] in bits 23..0,
    /// [`Completion::ud_flags`] in bits 31..24.
    rqpn: u32,
    /// [`Completion::slid`].
    slid: u16,
    /// [`HAS_IMM`], [`HAS_INV`], [`SOLICITED`], [`DATA_IN_CQE`].
    flags: u8,
    /// A receive's `l4_l3_hdr_type`: [`Completion::cvlan`] is there when bit 0 is set.
    l4_l3: u8,
    /// A receive's `vlan_info`: [`Completion::cvlan`]. (Byte 43 and these two leave no
    /// padding in 32..46, so the requester's zeros there take as many stores as before.)
    vlan_info: u16,
    /// [`Completion::timestamp`].
    timestamp: u64,
}

/// [`Completion`]'s `flags`: `extra` is the immediate.
const HAS_IMM: u8 = 1;
/// `extra` is the invalidated rkey (neither bit: it is the P_Key field).
const HAS_INV: u8 = 2;
/// [`Completion::solicited`].
const SOLICITED: u8 = 4;
/// [`Completion::data_in_cqe`].
const DATA_IN_CQE: u8 = 8;
/// `mlx5_cqe64.l4_hdr_type_etc` bit 0 (the kernel's `handle_responder`: `vlan_present =
/// cqe->l4_l3_hdr_type & 0x1`): the frame carried a VLAN tag.
const CQE_VLAN_PRESENT: u8 = 1;

/// `MLX5_GRH_IN_BUFFER` in [`Completion::ud_flags`] (`flags_rqpn` bit 28).
const GRH_IN_BUFFER: u8 = 1 << 4;

impl Completion {
    /// Immediate data of a SEND or RDMA WRITE with immediate, host order as the sender
    /// gave it.
    #[inline]
    pub fn imm(&self) -> Option<u32> {
        (self.flags & HAS_IMM != 0).then_some(self.extra)
    }

    /// The rkey a SEND with invalidate invalidated.
    #[inline]
    pub fn invalidated_rkey(&self) -> Option<u32> {
        (self.flags & HAS_INV != 0).then_some(self.extra)
    }

    /// The P_Key field of a receive without immediate or invalidate (`imm_inval_pkey` bits
    /// 15..0), which rdma-core's `handle_responder` reports as `wc.pkey_index`; the kernel
    /// reads the same bits as the P_Key value (QP1), and the model writes either
    /// (`NicConfig::cqe_pkey`, docs/model.md). Defined for UD; 0 for every other completion.
    #[inline]
    pub fn pkey_index(&self) -> u16 {
        if self.flags & (HAS_IMM | HAS_INV) == 0 {
            self.extra as u16
        } else {
            0
        }
    }

    /// Source QP of a receive: defined for UD only. On the RC QPs of this crate it is
    /// whatever the device writes (the model writes 0); do not rely on it.
    #[inline]
    pub fn src_qp(&self) -> u32 {
        self.rqpn & 0xff_ffff
    }

    /// Source LID of a UD receive (InfiniBand).
    #[inline]
    pub fn slid(&self) -> u16 {
        self.slid
    }

    /// `flags_rqpn` bits 31..24 of a receive: on UD where the GRH went (bits 5..4, see
    /// [`Completion::grh_present`]) and the SL (InfiniBand) or packet type (RoCE) in bits
    /// 3..0 ([`Completion::sl`]).
    #[inline]
    pub fn ud_flags(&self) -> u8 {
        (self.rqpn >> 24) as u8
    }

    /// The sender asked for a solicited event.
    #[inline]
    pub fn solicited(&self) -> bool {
        self.flags & SOLICITED != 0
    }

    /// `srqn_uidx` bits 23..0 of the CQE (`mlx5_err_cqe.srqn` of an error CQE): on a
    /// context with CQE version 1 (what rdma-core negotiates on current kernels, and
    /// `mlx5_poll_cq_v1` looks resources up by) the user index the QP was created with
    /// ([`QpConfig::user_index`](crate::QpConfig::user_index) on the model); with version
    /// 0 the SRQ number of an SRQ receive, else 0. UCX gives each DCI its pool index here,
    /// so that a CQE names its DCI without a lookup.
    #[inline]
    pub fn user_index(&self) -> u32 {
        u32::from_be(self.uidx_be)
    }

    /// The device clock when the CQE was written (`mlx5_cqe64.timestamp`): convert with
    /// [`ClockInfo::to_ns`](crate::ClockInfo::to_ns) from
    /// [`Context::clock_info`](crate::Context::clock_info). Read on CQs created with
    /// [`CqConfig::timestamps`](crate::CqConfig::timestamps) only (whose requester CQEs are
    /// then parsed out of line: the common poll pays nothing for the feature); 0 elsewhere
    /// and for error CQEs, whose layout has no timestamp. The completions of a compressed
    /// block all carry its title's timestamp: a mini-CQE has none (the kernel's
    /// `mlx5e_decompress_cqe` and MLNX libmlx5's `copy_cqes` do the same).
    #[inline]
    pub fn timestamp(&self) -> u64 {
        self.timestamp
    }

    /// The received bytes came inside the CQE ([`QpConfig::scatter_to_cqe`]) and polling
    /// copied them into the receive's scatter list: they are where a DMA write would have
    /// put them. ([`Completion::src_qp`], [`Completion::slid`] and
    /// [`Completion::ud_flags`] are then 0: a 64-byte CQE's data takes their bytes.)
    ///
    /// [`QpConfig::scatter_to_cqe`]: crate::QpConfig::scatter_to_cqe
    #[inline]
    pub fn data_in_cqe(&self) -> bool {
        self.flags & DATA_IN_CQE != 0
    }

    /// The VLAN tag of a receive on RoCE (the 16-bit TCI of `mlx5_cqe64.vlan_info`, as
    /// rdma-core's `mlx5_cq_read_wc_cvlan` returns it for `IBV_WC_EX_WITH_CVLAN`): the
    /// VLAN id in bits 11..0, the priority (PCP) in bits 15..13, which the kernel's
    /// `handle_responder` reports as `wc->sl` on RoCE. `None` when the CQE's VLAN-present
    /// bit (`l4_l3_hdr_type` bit 0) is clear, and on InfiniBand.
    #[inline]
    pub fn cvlan(&self) -> Option<u16> {
        (self.l4_l3 & CQE_VLAN_PRESENT != 0).then_some(self.vlan_info)
    }

    /// A UD receive that carried a GRH: the device wrote it into the first
    /// [`UD_GRH_BYTES`](crate::rq::UD_GRH_BYTES) of the receive buffer. Without one
    /// (InfiniBand without a global route) those bytes are undefined.
    pub fn grh_present(&self) -> bool {
        self.ud_flags() & 0x30 == GRH_IN_BUFFER
    }

    /// The SL of a receive on InfiniBand: the sender's path SL (UD, DC: its address
    /// vector's), as rdma-core's `handle_responder` reads `wc->sl` from `flags_rqpn` bits
    /// 27..24 for every transport. On RoCE a UD or DC receive carries the RoCE packet type
    /// there (UCX ib_mlx5.inl quoting the PRM): bit 3 set for a UDP header (RoCE v2), bits
    /// 2..0 the L3 header type (0 GRH, 1 IPv6, 2 IPv4), so 0x9 or 0xA for RoCE v2.
    pub fn sl(&self) -> u8 {
        self.ud_flags() & 0xf
    }

    /// Where a UD receive's payload is in its scatter list: after the GRH area, up to
    /// `byte_len` (which counts the area). Empty for a completion too short to be one.
    pub fn ud_payload(&self) -> core::ops::Range<usize> {
        let grh = crate::rq::UD_GRH_BYTES as usize;
        grh..(self.byte_len as usize).max(grh)
    }

    /// With `wr_id` `wr_id`.
    #[must_use]
    pub fn with_wr_id(self, wr_id: u64) -> Completion {
        Completion { wr_id, ..self }
    }

    /// With `qpn` `qpn`.
    #[must_use]
    pub fn with_qpn(self, qpn: u32) -> Completion {
        Completion { qpn, ..self }
    }

    /// With `byte_len` `byte_len`.
    #[must_use]
    pub fn with_byte_len(self, byte_len: u32) -> Completion {
        Completion { byte_len, ..self }
    }

    /// With `opcode` `opcode`.
    #[must_use]
    pub fn with_opcode(self, opcode: WcOpcode) -> Completion {
        Completion { opcode, ..self }
    }

    /// With `status` `status`.
    #[must_use]
    pub fn with_status(self, status: Status) -> Completion {
        Completion { status, ..self }
    }

    /// With [`Completion::imm`] `imm` (`Some` replaces an invalidated rkey or P_Key: the
    /// CQE has one field for the three).
    #[must_use]
    pub fn with_imm(self, imm: Option<u32>) -> Completion {
        self.with_extra(HAS_IMM, imm)
    }

    /// With [`Completion::invalidated_rkey`] `rkey` (`Some` replaces an immediate or
    /// P_Key).
    #[must_use]
    pub fn with_invalidated_rkey(self, rkey: Option<u32>) -> Completion {
        self.with_extra(HAS_INV, rkey)
    }

    /// With [`Completion::pkey_index`] `pkey` (replaces an immediate or invalidated rkey).
    #[must_use]
    pub fn with_pkey_index(self, pkey: u16) -> Completion {
        Completion {
            extra: pkey.into(),
            flags: self.flags & !(HAS_IMM | HAS_INV),
            ..self
        }
    }

    /// `extra` as the field `bit` names: set (`Some`), or cleared if it was that field.
    fn with_extra(self, bit: u8, value: Option<u32>) -> Completion {
        let others = self.flags & !(HAS_IMM | HAS_INV);
        match value {
            Some(extra) => Completion {
                extra,
                flags: others | bit,
                ..self
            },
            None if self.flags & bit != 0 => Completion {
                extra: 0,
                flags: others,
                ..self
            },
            None => self,
        }
    }

    /// With [`Completion::src_qp`] `src_qp` (its low 24 bits).
    #[must_use]
    pub fn with_src_qp(self, src_qp: u32) -> Completion {
        Completion {
            rqpn: (self.rqpn & !0xff_ffff) | (src_qp & 0xff_ffff),
            ..self
        }
    }

    /// With [`Completion::slid`] `slid`.
    #[must_use]
    pub fn with_slid(self, slid: u16) -> Completion {
        Completion { slid, ..self }
    }

    /// With [`Completion::ud_flags`] `ud_flags`.
    #[must_use]
    pub fn with_ud_flags(self, ud_flags: u8) -> Completion {
        Completion {
            rqpn: (self.rqpn & 0xff_ffff) | u32::from(ud_flags) << 24,
            ..self
        }
    }

    /// With [`Completion::solicited`] `solicited`.
    #[must_use]
    pub fn with_solicited(self, solicited: bool) -> Completion {
        self.with_flag(SOLICITED, solicited)
    }

    /// With [`Completion::user_index`] `user_index` (its low 24 bits).
    #[must_use]
    pub fn with_user_index(self, user_index: u32) -> Completion {
        Completion {
            uidx_be: (user_index & UIDX_MASK).to_be(),
            ..self
        }
    }

    /// With [`Completion::timestamp`] `timestamp`.
    #[must_use]
    pub fn with_timestamp(self, timestamp: u64) -> Completion {
        Completion { timestamp, ..self }
    }

    /// With [`Completion::data_in_cqe`] `data_in_cqe`.
    #[must_use]
    pub fn with_data_in_cqe(self, data_in_cqe: bool) -> Completion {
        self.with_flag(DATA_IN_CQE, data_in_cqe)
    }

    /// With [`Completion::cvlan`] `cvlan`.
    #[must_use]
    pub fn with_cvlan(self, cvlan: Option<u16>) -> Completion {
        Completion {
            l4_l3: if cvlan.is_some() { CQE_VLAN_PRESENT } else { 0 },
            vlan_info: cvlan.unwrap_or(0),
            ..self
        }
    }

    fn with_flag(self, bit: u8, on: bool) -> Completion {
        Completion {
            flags: if on {
                self.flags | bit
            } else {
                self.flags & !bit
            },
            ..self
        }
    }
}

impl core::fmt::Debug for Completion {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Completion")
            .field("wr_id", &self.wr_id)
            .field("qpn", &self.qpn)
            .field("byte_len", &self.byte_len)
            .field("opcode", &self.opcode)
            .field("status", &self.status)
            .field("imm", &self.imm())
            .field("invalidated_rkey", &self.invalidated_rkey())
            .field("pkey_index", &self.pkey_index())
            .field("src_qp", &self.src_qp())
            .field("slid", &self.slid)
            .field("ud_flags", &self.ud_flags())
            .field("solicited", &self.solicited())
            .field("user_index", &self.user_index())
            .field("timestamp", &self.timestamp)
            .field("data_in_cqe", &self.data_in_cqe())
            .field("cvlan", &self.cvlan())
            .finish()
    }
}

/// [`Completion`] field by field, as serde writes and reads it (the names of its
/// accessors).
#[cfg(feature = "serde")]
#[derive(serde::Serialize, serde::Deserialize)]
struct CompletionFields {
    wr_id: u64,
    qpn: u32,
    byte_len: u32,
    opcode: WcOpcode,
    status: Status,
    imm: Option<u32>,
    invalidated_rkey: Option<u32>,
    pkey_index: u16,
    src_qp: u32,
    slid: u16,
    ud_flags: u8,
    solicited: bool,
    user_index: u32,
    timestamp: u64,
    data_in_cqe: bool,
    #[serde(default)]
    cvlan: Option<u16>,
}

#[cfg(feature = "serde")]
impl From<Completion> for CompletionFields {
    fn from(c: Completion) -> Self {
        CompletionFields {
            wr_id: c.wr_id,
            qpn: c.qpn,
            byte_len: c.byte_len,
            opcode: c.opcode,
            status: c.status,
            imm: c.imm(),
            invalidated_rkey: c.invalidated_rkey(),
            pkey_index: c.pkey_index(),
            src_qp: c.src_qp(),
            slid: c.slid,
            ud_flags: c.ud_flags(),
            solicited: c.solicited(),
            user_index: c.user_index(),
            timestamp: c.timestamp,
            data_in_cqe: c.data_in_cqe(),
            cvlan: c.cvlan(),
        }
    }
}

#[cfg(feature = "serde")]
impl From<CompletionFields> for Completion {
    fn from(c: CompletionFields) -> Self {
        Completion {
            wr_id: c.wr_id,
            qpn: c.qpn,
            byte_len: c.byte_len,
            opcode: c.opcode,
            status: c.status,
            ..Completion::default()
        }
        .with_pkey_index(c.pkey_index)
        .with_imm(c.imm)
        .with_invalidated_rkey(c.invalidated_rkey)
        .with_src_qp(c.src_qp)
        .with_slid(c.slid)
        .with_ud_flags(c.ud_flags)
        .with_solicited(c.solicited)
        .with_user_index(c.user_index)
        .with_timestamp(c.timestamp)
        .with_data_in_cqe(c.data_in_cqe)
        .with_cvlan(c.cvlan)
    }
}

/// The receive side of a QP as a CQ sees it.
#[derive(Debug, Clone)]
pub(crate) enum RecvShared {
    Rq(Arc<RqShared>),
    Srq(Arc<SrqShared>),
    /// A DCI: no receive side.
    None,
}

/// A QP a CQ serves.
#[derive(Debug, Clone)]
pub(crate) struct QpEntry {
    pub(crate) qpn: u32,
    pub(crate) sq: Arc<SqShared>,
    pub(crate) recv: RecvShared,
    pub(crate) errored: Arc<AtomicBool>,
    /// A UD or UC QP's send-queue error flag: a requester error CQE sets this one alone
    /// (the QP is in SQE, its receives go on); `None` for RC, whose errors all end in ERR.
    pub(crate) sq_error: Option<Arc<AtomicBool>>,
    /// A DCI with streams: a requester error CQE may be one stream's (the DCI stays in
    /// RTS), so it sets no flag; the device flushes what follows if the DCI failed.
    pub(crate) streams: bool,
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
        if !entries
            .iter()
            .any(|e| e.qpn == entry.qpn && Arc::ptr_eq(&e.sq, &entry.sq))
        {
            entries.push(entry);
        }
        self.generation.fetch_add(1, Ordering::Release);
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

/// [`Completion`]'s `uidx_be` from a CQE's `srqn_uidx`: its bytes, masked, not swapped.
#[inline(always)]
fn uidx_be(srqn_uidx: Be32) -> u32 {
    u32::from_ne_bytes(srqn_uidx.to_bytes()) & UIDX_MASK.to_be()
}

/// The poller's copy of the attached QPs, and the parsing that needs them.
#[derive(Debug)]
struct QpTable {
    qps: Vec<QpEntry>,
    /// Index of the QP the last CQE that was looked up named.
    last: usize,
    /// The list `qps` is a copy of, and its generation at the copy.
    attachments: Arc<CqAttachments>,
    seen: u64,
    /// The CQ was created with timestamps: completions carry the CQE's.
    timestamps: bool,
    /// The send queue of the QP the last requester CQE named, and that QP's number
    /// ([`NO_QPN`] when none; `hot_sq` is then a placeholder): consecutive CQEs usually
    /// name the same QP, which then costs one compare and no table access.
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
                attachments,
                seen: u64::MAX,
                timestamps,
                hot_qpn: NO_QPN,
                hot_sq: Arc::new(SqShared::new(1)),
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
        let mut at = self.head;
        let mut op_own = self.buf.own_byte(at);
        let mut key = owner_key(op_own, self.owner);
        if out.is_empty() || key >= OWNED_BELOW {
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
                self.qps.parse_req(self.buf.entry_at(at), &mut out[n]);
            } else if self.enhanced {
                return self.poll_enhanced(out).get();
            } else {
                let ci = self.ci.wrapping_add(n as u32);
                out[n] = self.qps.parse_other(self.buf.entry_at(at), op_own, ci);
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
            if n == out.len() {
                break;
            }
            op_own = self.buf.entry_at(at).op_own();
            key = owner_key(op_own, self.owner);
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
    fn poll_enhanced(&mut self, out: &mut [Completion]) -> NonZeroUsize {
        let log_cnt = self.cqe_cnt.trailing_zeros();
        let mut at = self.head.wrapping_add(1);
        let mut n = 0;
        loop {
            let entry = self.buf.entry_at(at);
            udma_from_device_barrier();
            let ci = self.ci.wrapping_add(n as u32);
            out[n] = self.qps.parse_other(entry, entry.op_own(), ci);
            n += 1;
            at = self.buf.next_pos(at).unwrap_or_else(|| self.buf.start());
            let expected = validity_count(ci.wrapping_add(1), log_cnt);
            if n == out.len()
                || owner_key(self.buf.entry_at(at).validity(), expected) >= OWNED_BELOW
            {
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

impl QpTable {
    /// The entry of QP `qpn`, from the current list of attached QPs.
    #[inline(always)]
    fn lookup(&mut self, qpn: u32) -> Option<&QpEntry> {
        let generation = self.attachments.generation.load(Ordering::Acquire);
        if generation != self.seen {
            self.refresh(generation);
        }
        if self.qps.get(self.last).is_some_and(|e| e.qpn == qpn) {
            return self.qps.get(self.last);
        }
        let i = self.qps.iter().position(|e| e.qpn == qpn)?;
        self.last = i;
        self.qps.get(i)
    }

    #[cold]
    fn refresh(&mut self, generation: u64) {
        let entries = self
            .attachments
            .entries
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        self.qps.clone_from(&entries);
        self.seen = generation;
        self.last = 0;
        self.hot_qpn = NO_QPN;
    }

    /// Makes QP `qpn` the hot one; false if this CQ does not serve it (a QP being
    /// detached included).
    #[inline(always)]
    fn make_hot(&mut self, qpn: u32) -> bool {
        let Some(sq) = self
            .lookup(qpn)
            .map(|qp| qp.sq.clone())
            .filter(|sq| !sq.is_gone())
        else {
            return false;
        };
        self.hot_qpn = qpn;
        self.hot_sq = sq;
        true
    }

    /// A requester (REQ) CQE at the consumer index, written straight into the caller's
    /// slot (no temporary to copy). Only a CQE of the hot QP naming an outstanding WQE is
    /// parsed here; everything else goes out of line ([`QpTable::req_slow`]), so that no
    /// value of the common case lives across a call.
    #[inline(always)]
    fn parse_req(&mut self, entry: CqeEntry<'_>, out: &mut Completion) {
        // Each field is read where it is used (a read of the entry per field; the compiler
        // loads the one field): loads hoisted above the checks would hold registers
        // across them and spill.
        let sop = entry.read().sop_drop_qpn.get();
        let qpn = sop & 0xff_ffff;
        if qpn != self.hot_qpn || self.hot_sq.is_gone() {
            *out = self.req_slow(entry);
            return;
        }
        let counter = entry.read().wqe_counter.get();
        let Some((wr_id, kept)) = self.hot_sq.complete_with_len(counter) else {
            *out = self.req_slow(entry);
            return;
        };
        // `byte_cnt` means something for READ only (rdma-core's `handle_good_req`); every
        // other length (an atomic's operand size, else 0) was kept at post time.
        let byte_len = if sop >> 24 == Opcode::RdmaRead as u32 {
            entry.read().byte_cnt.get()
        } else {
            kept
        };
        *out = Completion {
            wr_id,
            qpn,
            opcode: WcOpcode::from_send_opcode((sop >> 24) as u8),
            byte_len,
            uidx_be: uidx_be(entry.read().srqn_uidx),
            ..Completion::default()
        };
    }

    /// A requester CQE of another QP than the hot one, or naming no outstanding WQE.
    #[inline(never)]
    fn req_slow(&mut self, entry: CqeEntry<'_>) -> Completion {
        let cqe = entry.read();
        let sop = cqe.sop_drop_qpn.get();
        let qpn = sop & 0xff_ffff;
        let opcode = WcOpcode::from_send_opcode((sop >> 24) as u8);
        if (qpn != self.hot_qpn || self.hot_sq.is_gone()) && !self.make_hot(qpn) {
            return unknown_qp(qpn, opcode);
        }
        let counter = cqe.wqe_counter.get();
        if self.hot_sq.is_outstanding(counter) {
            let mut out = Completion::default();
            self.parse_req(entry, &mut out);
            return out;
        }
        unknown_wqe(qpn, opcode, counter)
    }

    #[inline(never)]
    fn parse_other(&mut self, entry: CqeEntry<'_>, op_own: u8, ci: u32) -> Completion {
        let bits = OpOwn::from_bits(op_own);
        if bits.format() == CqeFormat::Compressed {
            return self.parse_compressed(entry, op_own, ci);
        }
        match CqeOpcode::from_u8(bits.opcode()) {
            Some(CqeOpcode::Req) => {
                let mut out = Completion::default();
                self.parse_req(entry, &mut out);
                if self.timestamps && out.status.is_ok() {
                    out.timestamp = entry.read().timestamp.get();
                }
                out
            }
            Some(
                op @ (CqeOpcode::RespSend
                | CqeOpcode::RespSendImm
                | CqeOpcode::RespSendInv
                | CqeOpcode::RespWrImm),
            ) => {
                let cqe = entry.read();
                let qpn = cqe.sop_drop_qpn.get() & 0xff_ffff;
                let opcode = if op == CqeOpcode::RespWrImm {
                    WcOpcode::RecvRdmaWithImm
                } else {
                    WcOpcode::Recv
                };
                let Some(qp) = self.lookup(qpn) else {
                    return unknown_qp(qpn, opcode);
                };
                let counter = cqe.wqe_counter.get();
                // The scatter list is read before the receive is retired (and its slot
                // reused).
                let scattered = match bits.format() {
                    CqeFormat::InlineScatter32 => Some((false, recorded_list(qp, counter))),
                    CqeFormat::InlineScatter64 => Some((true, recorded_list(qp, counter))),
                    _ => None,
                };
                let Some(wr_id) = complete_recv(qp, counter) else {
                    return unknown_wqe(qpn, opcode, counter);
                };
                let raw = cqe.imm_inval_pkey.get();
                let (extra, kind) = match op {
                    CqeOpcode::RespSend => (raw & 0xffff, 0),
                    CqeOpcode::RespSendInv => (raw, HAS_INV),
                    _ => (raw, HAS_IMM),
                };
                let out = Completion {
                    wr_id,
                    qpn,
                    opcode,
                    status: Status::Success,
                    byte_len: cqe.byte_cnt.get(),
                    uidx_be: uidx_be(cqe.srqn_uidx),
                    extra,
                    rqpn: cqe.flags_rqpn.get(),
                    slid: cqe.slid.get(),
                    timestamp: if self.timestamps {
                        cqe.timestamp.get()
                    } else {
                        0
                    },
                    flags: kind | if bits.se() { SOLICITED } else { 0 },
                    l4_l3: cqe.l4_l3_hdr_type,
                    vlan_info: cqe.vlan_info.get(),
                };
                match scattered {
                    Some((wide, (sges, n))) => self.put_scattered(entry, wide, &sges[..n], out),
                    None => out,
                }
            }
            Some(op @ (CqeOpcode::ReqErr | CqeOpcode::RespErr)) => {
                let err = entry.read_err();
                let word = err.s_wqe_opcode_qpn.get();
                let qpn = word & 0xff_ffff;
                let requester = op == CqeOpcode::ReqErr;
                let opcode = if requester {
                    WcOpcode::from_send_opcode((word >> 24) as u8)
                } else {
                    WcOpcode::Recv
                };
                let error = WcError {
                    syndrome: err.syndrome,
                    vendor_syndrome: err.vendor_err_synd,
                    wqe_counter: err.wqe_counter.get(),
                };
                let Some(qp) = self.lookup(qpn) else {
                    return unknown_qp(qpn, opcode);
                };
                let odp_fault =
                    !requester && error.is_odp_fault() && matches!(qp.recv, RecvShared::Srq(_));
                match &qp.sq_error {
                    _ if requester && qp.streams => {}
                    // The QP goes on: the NIC only gave the SRQ WQE back.
                    _ if odp_fault => {}
                    Some(sq) if requester => sq.store(true, Ordering::Relaxed),
                    Some(sq) => {
                        sq.store(true, Ordering::Relaxed);
                        qp.errored.store(true, Ordering::Relaxed);
                    }
                    None => qp.errored.store(true, Ordering::Relaxed),
                }
                let wr_id = match &qp.recv {
                    _ if requester => qp.sq.complete(error.wqe_counter),
                    RecvShared::Srq(srq) if odp_fault => srq.complete_faulted(error.wqe_counter),
                    _ => complete_recv(qp, error.wqe_counter),
                };
                let Some(wr_id) = wr_id else {
                    return unknown_wqe(qpn, opcode, error.wqe_counter);
                };
                Completion {
                    wr_id,
                    qpn,
                    opcode,
                    status: Status::Error(error),
                    uidx_be: uidx_be(err.srqn),
                    ..Completion::default()
                }
            }
            _ => Completion {
                status: Status::UnknownOpcode(op_own),
                ..Completion::default()
            },
        }
    }
}

impl QpTable {
    /// Completion `out` of a receive whose data the CQE `entry` carries (`wide`: format 2),
    /// with the data copied into its scatter list `sges` as rdma-core's
    /// `mlx5_copy_to_recv_wqe` does, or [`Status::BadScatter`].
    #[cold]
    fn put_scattered(
        &self,
        entry: CqeEntry<'_>,
        wide: bool,
        sges: &[Sge],
        mut out: Completion,
    ) -> Completion {
        // Bytes 0..32 of the CQE (flags_rqpn, slid, the VLAN fields) are the data.
        (out.rqpn, out.slid) = (0, 0);
        (out.l4_l3, out.vlan_info) = (0, 0);
        let copied = self.scattered.as_ref().and_then(|to| {
            let data = to.0.scattered(entry, wide)?;
            let data = data.get(..out.byte_len as usize)?;
            to.1.scatter(data, sges).ok()
        });
        match copied {
            Some(()) => out.flags |= DATA_IN_CQE,
            None => out.status = Status::BadScatter,
        }
        out
    }

    /// A compressed entry at consumer index `ci`: expanded in place (see [`crate::cqz`]),
    /// then the first expanded CQE parsed; or reported.
    #[cold]
    fn parse_compressed(&mut self, entry: CqeEntry<'_>, op_own: u8, ci: u32) -> Completion {
        let Some(unzip) = self.unzip.as_mut() else {
            return Completion {
                status: Status::Compressed,
                ..Completion::default()
            };
        };
        match unzip.expand(ci, op_own) {
            (_, Ok(())) => {
                let op_own = entry.op_own();
                debug_assert_ne!(OpOwn::from_bits(op_own).format(), CqeFormat::Compressed);
                self.parse_other(entry, op_own, ci)
            }
            (qpn, Err(bad)) => Completion {
                qpn,
                status: Status::BadCompression(bad),
                ..Completion::default()
            },
        }
    }
}

/// The scatter list posted for receive `wqe_counter` of `qp`, as its queue recorded it.
#[cold]
fn recorded_list(qp: &QpEntry, wqe_counter: u16) -> ([Sge; MAX_RECV_SGE], usize) {
    let mut sges = [Sge::default(); MAX_RECV_SGE];
    let n = match &qp.recv {
        RecvShared::Rq(rq) => rq.log.list(wqe_counter.into(), &mut sges),
        RecvShared::Srq(srq) => srq.log.list(wqe_counter.into(), &mut sges),
        RecvShared::None => 0,
    };
    (sges, n)
}

fn complete_recv(qp: &QpEntry, wqe_counter: u16) -> Option<u64> {
    match &qp.recv {
        RecvShared::Rq(rq) => rq.complete(wqe_counter),
        RecvShared::Srq(srq) => srq.complete(wqe_counter),
        RecvShared::None => None,
    }
}

#[cold]
fn unknown_wqe(qpn: u32, opcode: WcOpcode, wqe_counter: u16) -> Completion {
    Completion {
        qpn,
        opcode,
        status: Status::UnknownWqe(wqe_counter),
        ..Completion::default()
    }
}

#[cold]
fn unknown_qp(qpn: u32, opcode: WcOpcode) -> Completion {
    Completion {
        qpn,
        opcode,
        status: Status::UnknownQp,
        ..Completion::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_requester_completion_sets_its_fields_first_and_the_zero_ones_after() {
        use core::mem::offset_of;
        // Set by every completion: 0..32 (user index and status included); the receive's
        // details and the timestamp, zero on the requester path, after them.
        let offsets = [
            offset_of!(Completion, wr_id),
            offset_of!(Completion, qpn),
            offset_of!(Completion, byte_len),
            offset_of!(Completion, uidx_be),
            offset_of!(Completion, opcode),
            offset_of!(Completion, status),
            offset_of!(Completion, extra),
            offset_of!(Completion, rqpn),
            offset_of!(Completion, slid),
            offset_of!(Completion, flags),
            offset_of!(Completion, l4_l3),
            offset_of!(Completion, vlan_info),
            offset_of!(Completion, timestamp),
        ];
        // 32..56 in one run of zeros (two stores), no zero field between the others.
        assert_eq!(offsets, [0, 8, 12, 16, 20, 24, 32, 36, 40, 42, 43, 44, 48]);
        assert_eq!(size_of::<Completion>(), 56);
    }

    #[test]
    fn the_accessors_read_what_the_builders_wrote() {
        let c = Completion::default();
        assert_eq!(
            (c.imm(), c.invalidated_rkey(), c.pkey_index()),
            (None, None, 0)
        );
        assert_eq!((c.src_qp(), c.slid(), c.ud_flags(), c.sl()), (0, 0, 0, 0));
        assert_eq!(
            (c.solicited(), c.data_in_cqe(), c.grh_present()),
            (false, false, false)
        );
        assert_eq!((c.user_index(), c.timestamp()), (0, 0));
        let c = c
            .with_pkey_index(0xffff)
            .with_src_qp(0xfff_ffff)
            .with_ud_flags(0x13)
            .with_slid(7)
            .with_solicited(true)
            .with_user_index(0xab_cdef)
            .with_timestamp(1 << 40)
            .with_data_in_cqe(true);
        assert_eq!(
            (c.imm(), c.invalidated_rkey(), c.pkey_index()),
            (None, None, 0xffff)
        );
        assert_eq!(
            (c.src_qp(), c.ud_flags(), c.sl(), c.grh_present()),
            (0xff_ffff, 0x13, 3, true)
        );
        assert_eq!((c.slid(), c.solicited(), c.data_in_cqe()), (7, true, true));
        assert_eq!((c.user_index(), c.timestamp()), (0xab_cdef, 1 << 40));
        // One CQE field holds the immediate, the invalidated rkey or the P_Key.
        let imm = c.with_imm(Some(0));
        assert_eq!(
            (imm.imm(), imm.invalidated_rkey(), imm.pkey_index()),
            (Some(0), None, 0)
        );
        let inv = imm.with_invalidated_rkey(Some(9));
        assert_eq!(
            (inv.imm(), inv.invalidated_rkey(), inv.pkey_index()),
            (None, Some(9), 0)
        );
        assert_eq!(inv.with_imm(None), inv);
        let none = inv.with_invalidated_rkey(None);
        assert_eq!(
            (none.imm(), none.invalidated_rkey(), none.pkey_index()),
            (None, None, 0)
        );
        assert_ne!(imm, c.with_pkey_index(0).with_imm(Some(1)));
        // Clearing a flag leaves the others.
        let c = c.with_solicited(false);
        assert_eq!(
            (c.solicited(), c.data_in_cqe(), c.src_qp()),
            (false, true, 0xff_ffff)
        );
        // The VLAN tag: present or not, a tag of 0 included, the other flags kept.
        assert_eq!(c.cvlan(), None);
        let v = c.with_cvlan(Some(0xa123));
        assert_eq!(
            (v.cvlan(), v.data_in_cqe(), v.solicited()),
            (Some(0xa123), true, false)
        );
        assert_eq!(v.with_cvlan(Some(0)).cvlan(), Some(0));
        assert_eq!(v.with_cvlan(None), c);
    }

    #[test]
    fn a_detached_hot_qp_completes_nothing_and_its_number_is_looked_up_again() {
        use crate::null::{NullQueues, NULL_QPN};
        use crate::{Data, Remote, SendFlags, SendOp};
        let mut q = NullQueues::new(16, 8, 64).unwrap();
        let mut out = [Completion::default(); 1];
        let write = SendOp::Write(Remote { addr: 0, rkey: 1 });
        for wr_id in [1, 2] {
            let data = Data::Inline(&[7; 8]);
            q.sq.post(wr_id, write, data, SendFlags::SIGNALED).unwrap();
        }
        // WQE 0 completes: the QP is the hot one.
        q.complete(0, Opcode::RdmaWrite, CqeOpcode::Req, 0);
        assert_eq!(q.cq.poll(&mut out), 1);
        assert_eq!((out[0].wr_id, out[0].status), (1, Status::Success));
        // Detached (destroyed): its CQE for WQE 1 completes nothing.
        q.cq.qps.attachments.detach(NULL_QPN);
        q.complete(1, Opcode::RdmaWrite, CqeOpcode::Req, 0);
        assert_eq!(q.cq.poll(&mut out), 1);
        assert_eq!((out[0].status, out[0].qpn), (Status::UnknownQp, NULL_QPN));
        // A new QP with the same number: its own state, where WQE 1 is not outstanding.
        q.cq.qps.attachments.attach(QpEntry {
            qpn: NULL_QPN,
            sq: Arc::new(SqShared::new(16)),
            recv: RecvShared::None,
            errored: Arc::default(),
            sq_error: None,
            streams: false,
        });
        q.complete(1, Opcode::RdmaWrite, CqeOpcode::Req, 0);
        assert_eq!(q.cq.poll(&mut out), 1);
        assert_eq!(
            (out[0].status, out[0].qpn),
            (Status::UnknownWqe(1), NULL_QPN)
        );
        // The old queue still holds WQE 1 (nothing retired it).
        assert_eq!(q.sq.outstanding_wqebbs(), 1);
    }

    #[test]
    fn the_owner_key_tells_ours_and_the_inline_requester_case() {
        for op_own in 0..=255u8 {
            for owner in [0, 1] {
                let key = owner_key(op_own, owner);
                let ours = op_own & 1 == owner && op_own >> 4 != 0xf;
                assert_eq!(key < OWNED_BELOW, ours, "{op_own:#04x} {owner}");
                // Ours, opcode 0 (REQ), format 0 (normal), the solicited-event bit aside.
                let req = (op_own ^ owner) & 0xfd == 0;
                assert_eq!(key < REQ_INLINE, req, "{op_own:#04x} {owner}");
            }
        }
    }

    #[test]
    fn send_opcode_table_names_every_posted_opcode_and_only_those() {
        let posted = [
            (Opcode::Send, WcOpcode::Send),
            (Opcode::SendImm, WcOpcode::Send),
            (Opcode::SendInval, WcOpcode::Send),
            (Opcode::RdmaWrite, WcOpcode::RdmaWrite),
            (Opcode::RdmaWriteImm, WcOpcode::RdmaWrite),
            (Opcode::RdmaRead, WcOpcode::RdmaRead),
            (Opcode::AtomicCs, WcOpcode::CompareSwap),
            (Opcode::AtomicFa, WcOpcode::FetchAdd),
            (Opcode::AtomicMaskedCs, WcOpcode::MaskedCompareSwap),
            (Opcode::AtomicMaskedFa, WcOpcode::MaskedFetchAdd),
            (Opcode::Nop, WcOpcode::Nop),
        ];
        for op in 0..=255u8 {
            let expect = posted
                .iter()
                .find(|(o, _)| *o as u8 == op)
                .map_or(WcOpcode::Other(op), |(_, wc)| *wc);
            assert_eq!(WcOpcode::from_send_opcode(op), expect, "opcode {op:#04x}");
        }
    }
}
