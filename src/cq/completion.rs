//! What a poll returns: [`Completion`], its [`Status`], [`WcOpcode`] and [`WcError`], with
//! the accessors and builders of the packed fields.

use crate::cqz::BadCompression;
use crate::prm::{EthCqe, HdrType, Opcode, RssHashType, Syndrome, WcStatus, CQE_FLOW_TAG_MASK};

use super::{swap24, ODP_PFAULT, UIDX_MASK};

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
    pub(super) fn from_send_opcode(op: u8) -> WcOpcode {
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
pub(super) static SEND_OPCODES: [WcOpcode; 256] = {
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
    /// `srqn_uidx` bits 23..0 as the CQE has them, in the order of a [`qpn_key`]
    /// (`srqn_uidx`'s bytes read as a native word, the SRQ byte shifted out):
    /// [`Completion::user_index`] reorders them (the poll stores the bytes it loaded).
    ///
    /// [`qpn_key`]: crate::sq::qpn_key
    pub(super) uidx_wire: u32,
    /// What completed.
    pub opcode: WcOpcode,
    /// Success or the error.
    pub status: Status,
    /// The CQE's `imm_inval_pkey` as [`Completion::imm`], [`Completion::invalidated_rkey`]
    /// or [`Completion::pkey_index`] read it: which one, `flags` says (one CQE field holds
    /// one of the three).
    pub(super) extra: u32,
    /// `flags_rqpn` of a receive: [`Completion::src_qp`] in bits 23..0,
    /// [`Completion::ud_flags`] in bits 31..24.
    pub(super) rqpn: u32,
    /// [`Completion::slid`].
    pub(super) slid: u16,
    /// [`HAS_IMM`], [`HAS_INV`], [`SOLICITED`], [`DATA_IN_CQE`].
    pub(super) flags: u8,
    /// A receive's `l4_l3_hdr_type`: [`Completion::cvlan`] is there when bit 0 is set.
    pub(super) l4_l3: u8,
    /// A receive's `vlan_info`: [`Completion::cvlan`]. (Byte 43 and these two leave no
    /// padding in 32..46, so the requester's zeros there take as many stores as before.)
    pub(super) vlan_info: u16,
    /// [`Completion::timestamp`].
    pub(super) timestamp: u64,
}

/// [`Completion`]'s `flags`: `extra` is the immediate.
pub(super) const HAS_IMM: u8 = 1;
/// `extra` is the invalidated rkey (neither bit: it is the P_Key field).
pub(super) const HAS_INV: u8 = 2;
/// [`Completion::solicited`].
pub(super) const SOLICITED: u8 = 4;
/// [`Completion::data_in_cqe`].
pub(super) const DATA_IN_CQE: u8 = 8;
/// A raw packet QP's receive: [`Completion::eth`] reads `extra` as the RSS hash, `rqpn`
/// as the flow tag (23..0) and the RSS hash type (31..24), `slid` as `hds_ip_ext`.
pub(super) const ETH: u8 = 16;
/// `mlx5_cqe64.l4_hdr_type_etc` bit 0 (the kernel's `handle_responder`: `vlan_present =
/// cqe->l4_l3_hdr_type & 0x1`): the frame carried a VLAN tag.
pub(super) const CQE_VLAN_PRESENT: u8 = 1;

/// `MLX5_GRH_IN_BUFFER` in [`Completion::ud_flags`] (`flags_rqpn` bit 28).
pub(super) const GRH_IN_BUFFER: u8 = 1 << 4;

impl Completion {
    /// The Ethernet fields of a frame a raw packet QP received (`None` for any other
    /// completion): the checksum-OK bits, the L3 / L4 header types, the VLAN tag, the
    /// steering rule's flow tag, the RSS hash. rdma-core's `IBV_WC_IP_CSUM_OK` is
    /// [`EthCqe::ip_csum_ok`](crate::prm::EthCqe::ip_csum_ok).
    #[inline]
    pub fn eth(&self) -> Option<EthCqe> {
        (self.flags & ETH != 0).then(|| {
            let hdr = HdrType::from_bits(self.l4_l3);
            EthCqe {
                ok: self.slid as u8,
                hdr,
                vlan: hdr.vlan().then_some(self.vlan_info),
                flow_tag: self.rqpn & CQE_FLOW_TAG_MASK,
                rss_hash: self.extra,
                rss_type: RssHashType::from_bits((self.rqpn >> 24) as u8),
            }
        })
    }

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
        swap24(self.uidx_wire)
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
        let grh = crate::rq::UD_GRH_BYTES;
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
            uidx_wire: swap24(user_index & UIDX_MASK),
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
pub(super) struct CompletionFields {
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
