//! Completion queue entries.
//!
//! PRM "Completion Queue Entry Format"; `struct mlx5_cqe64` and `struct mlx5_err_cqe` in
//! `mlx5dv.h`, opcodes `MLX5_CQE_*`, syndromes `MLX5_CQE_SYNDROME_*`.
//! Facts: `shared/docs/prm-facts.md` §7.

use bitfield_struct::bitfield;

use super::wire::wire_bytes;
use super::{Be16, Be32, Be64, CQE_SIZE};

/// CQE opcodes: bits 7..4 of `op_own` (`MLX5_CQE_*`).
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CqeOpcode {
    /// `MLX5_CQE_REQ`: send-side success; the send opcode is in `sop_drop_qpn` bits 31..24.
    Req = 0,
    /// `MLX5_CQE_RESP_WR_IMM`: an RDMA WRITE with immediate consumed a receive.
    RespWrImm = 1,
    /// `MLX5_CQE_RESP_SEND`.
    RespSend = 2,
    /// `MLX5_CQE_RESP_SEND_IMM`.
    RespSendImm = 3,
    /// `MLX5_CQE_RESP_SEND_INV`: the rkey named in `imm_inval_pkey` was invalidated.
    RespSendInv = 4,
    /// `MLX5_CQE_RESIZE_CQ`.
    ResizeCq = 5,
    /// `MLX5_CQE_NO_PACKET` (tag matching).
    NoPacket = 6,
    /// `MLX5_CQE_SIG_ERR`.
    SigErr = 12,
    /// `MLX5_CQE_REQ_ERR`: send-side error, flush included.
    ReqErr = 13,
    /// `MLX5_CQE_RESP_ERR`: receive-side error, flush included.
    RespErr = 14,
    /// `MLX5_CQE_INVALID`: never written by the device; software's initial value.
    Invalid = 15,
}

impl CqeOpcode {
    /// The CQE opcode with this 4-bit value, if it is one.
    pub const fn from_u8(value: u8) -> Option<CqeOpcode> {
        Some(match value {
            0 => CqeOpcode::Req,
            1 => CqeOpcode::RespWrImm,
            2 => CqeOpcode::RespSend,
            3 => CqeOpcode::RespSendImm,
            4 => CqeOpcode::RespSendInv,
            5 => CqeOpcode::ResizeCq,
            6 => CqeOpcode::NoPacket,
            12 => CqeOpcode::SigErr,
            13 => CqeOpcode::ReqErr,
            14 => CqeOpcode::RespErr,
            15 => CqeOpcode::Invalid,
            _ => return None,
        })
    }
}

/// CQE format, bits 3..2 of `op_own`.
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CqeFormat {
    /// Normal CQE.
    Normal = 0,
    /// Up to 32 bytes of data scattered into bytes 0..32 of the CQE (`MLX5_INLINE_SCATTER_32`).
    InlineScatter32 = 1,
    /// Up to 64 bytes of data in the 64 bytes before the `cqe64` of a 128-byte CQE
    /// (`MLX5_INLINE_SCATTER_64`).
    InlineScatter64 = 2,
    /// A compressed-CQE block title.
    Compressed = 3,
}

impl CqeFormat {
    const fn into_bits(self) -> u8 {
        self as u8
    }
    const fn from_bits(bits: u8) -> Self {
        match bits & 3 {
            0 => CqeFormat::Normal,
            1 => CqeFormat::InlineScatter32,
            2 => CqeFormat::InlineScatter64,
            _ => CqeFormat::Compressed,
        }
    }
}

/// Byte 63 of a CQE, `op_own`: opcode (7..4), format (3..2), solicited event (1), owner (0).
/// The device writes it last. The getters match `mlx5dv_get_cqe_owner/se/format/opcode`.
#[bitfield(u8)]
#[derive(PartialEq, Eq)]
pub struct OpOwn {
    /// Owner bit: the entry is software's when it equals `(ci >> log2(cqe_cnt)) & 1`.
    pub owner: bool,
    /// Solicited event.
    pub se: bool,
    /// CQE format.
    #[bits(2)]
    pub format: CqeFormat,
    /// CQE opcode (raw 4-bit value; see [`CqeOpcode`]).
    #[bits(4)]
    pub opcode: u8,
}

/// `op_own` of a freshly initialised CQ entry as rdma-core writes it: opcode INVALID, owner 0.
pub const OP_OWN_INVALID: u8 = (CqeOpcode::Invalid as u8) << 4;

/// `struct mlx5_cqe64`: the 64-byte CQE (in a 128-byte CQE, its second half).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cqe64 {
    /// Byte 0: Ethernet tunnel flags.
    pub tls_outer_l3_tunneled: u8,
    /// Byte 1: reserved.
    pub reserved0: u8,
    /// Bytes 2..4: WQE id (striding RQ / Ethernet).
    pub wqe_id: Be16,
    /// Bytes 4..12: LRO / SHAMPO information (Ethernet).
    pub lro: [u8; 8],
    /// Bytes 12..16: RSS hash (Ethernet).
    pub rss_hash_result: Be32,
    /// Byte 16: RSS hash type.
    pub rss_hash_type: u8,
    /// Byte 17: DLID path bits (6..0).
    pub ml_path: u8,
    /// Bytes 18..20: reserved.
    pub reserved1: [u8; 2],
    /// Bytes 20..22: checksum or stride index.
    pub checksum: Be16,
    /// Bytes 22..24: source LID.
    pub slid: Be16,
    /// Bytes 24..28: source QPN (23..0), SL / L3 type (27..24), GRH present (29..28).
    pub flags_rqpn: Be32,
    /// Byte 28: L2/L3/L4 OK bits.
    pub hds_ip_ext: u8,
    /// Byte 29: VLAN, L3 and L4 header types.
    pub l4_l3_hdr_type: u8,
    /// Bytes 30..32: VLAN information.
    pub vlan_info: Be16,
    /// Bytes 32..36: SRQN (CQE v0) or user index (CQE v1) in bits 23..0.
    pub srqn_uidx: Be32,
    /// Bytes 36..40: immediate (raw, as sent), invalidated rkey, or P_Key index.
    pub imm_inval_pkey: Be32,
    /// Byte 40: application (1 = tag matching).
    pub app: u8,
    /// Byte 41: application sub-operation.
    pub app_op: u8,
    /// Bytes 42..44: application information (tag index).
    pub app_info: Be16,
    /// Bytes 44..48: bytes received (responder), read (RDMA READ requester), or the number of
    /// entries of a compressed block.
    pub byte_cnt: Be32,
    /// Bytes 48..56: raw HCA timestamp.
    pub timestamp: Be64,
    /// Bytes 56..60: send opcode of the completed WQE (31..24) and local QPN (23..0).
    pub sop_drop_qpn: Be32,
    /// Bytes 60..62: first WQEBB index of the completed send WQE, the receive counter, or the
    /// SRQ WQE index.
    pub wqe_counter: Be16,
    /// Byte 62: signature (enhanced compression: validity iteration count).
    pub signature: u8,
    /// Byte 63: opcode, format, SE and owner; written last by the device.
    pub op_own: u8,
}

/// `struct mlx5_err_cqe`: the layout of a CQE whose opcode is REQ_ERR or RESP_ERR.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ErrCqe {
    /// Bytes 0..32: reserved.
    pub reserved0: [u8; 32],
    /// Bytes 32..36: SRQN / user index.
    pub srqn: Be32,
    /// Bytes 36..52: reserved.
    pub reserved1: [u8; 16],
    /// Byte 52: hardware error syndrome.
    pub hw_err_synd: u8,
    /// Byte 53: hardware syndrome type (bits 7..4).
    pub hw_synd_type: u8,
    /// Byte 54: vendor syndrome (`ibv_wc.vendor_err`).
    pub vendor_err_synd: u8,
    /// Byte 55: syndrome (see [`Syndrome`]).
    pub syndrome: u8,
    /// Bytes 56..60: opcode of the failing send WQE (31..24) and the QPN (23..0).
    pub s_wqe_opcode_qpn: Be32,
    /// Bytes 60..62: WQE counter of the failing WQE.
    pub wqe_counter: Be16,
    /// Byte 62: signature.
    pub signature: u8,
    /// Byte 63: opcode, format, SE and owner.
    pub op_own: u8,
}

wire_bytes!(
    Cqe64,
    CQE_SIZE,
    [
        tls_outer_l3_tunneled,
        reserved0,
        wqe_id,
        lro,
        rss_hash_result,
        rss_hash_type,
        ml_path,
        reserved1,
        checksum,
        slid,
        flags_rqpn,
        hds_ip_ext,
        l4_l3_hdr_type,
        vlan_info,
        srqn_uidx,
        imm_inval_pkey,
        app,
        app_op,
        app_info,
        byte_cnt,
        timestamp,
        sop_drop_qpn,
        wqe_counter,
        signature,
        op_own,
    ]
);
wire_bytes!(
    ErrCqe,
    CQE_SIZE,
    [
        reserved0,
        srqn,
        reserved1,
        hw_err_synd,
        hw_synd_type,
        vendor_err_synd,
        syndrome,
        s_wqe_opcode_qpn,
        wqe_counter,
        signature,
        op_own,
    ]
);

const _: () = {
    assert!(core::mem::size_of::<Cqe64>() == CQE_SIZE);
    assert!(core::mem::size_of::<ErrCqe>() == CQE_SIZE);
};

/// Offset of the `mlx5_cqe64` inside a CQE of `cqe_size` bytes (64 → 0; 128 → 64: the first
/// half of a 128-byte CQE holds scattered data or a GRH).
#[inline(always)]
pub const fn cqe64_offset(cqe_size: usize) -> usize {
    cqe_size - CQE_SIZE
}

/// Error syndromes (`MLX5_CQE_SYNDROME_*`), byte 55 of an error CQE.
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Syndrome {
    /// `MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR`.
    LocalLengthErr = 0x01,
    /// `MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR`.
    LocalQpOpErr = 0x02,
    /// `MLX5_CQE_SYNDROME_LOCAL_PROT_ERR`.
    LocalProtErr = 0x04,
    /// `MLX5_CQE_SYNDROME_WR_FLUSH_ERR`.
    WrFlushErr = 0x05,
    /// `MLX5_CQE_SYNDROME_MW_BIND_ERR`.
    MwBindErr = 0x06,
    /// `MLX5_CQE_SYNDROME_BAD_RESP_ERR`.
    BadRespErr = 0x10,
    /// `MLX5_CQE_SYNDROME_LOCAL_ACCESS_ERR`.
    LocalAccessErr = 0x11,
    /// `MLX5_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR`.
    RemoteInvalReqErr = 0x12,
    /// `MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR`.
    RemoteAccessErr = 0x13,
    /// `MLX5_CQE_SYNDROME_REMOTE_OP_ERR`.
    RemoteOpErr = 0x14,
    /// `MLX5_CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR`.
    TransportRetryExcErr = 0x15,
    /// `MLX5_CQE_SYNDROME_RNR_RETRY_EXC_ERR`.
    RnrRetryExcErr = 0x16,
    /// `MLX5_CQE_SYNDROME_REMOTE_ABORTED_ERR`.
    RemoteAbortedErr = 0x22,
}

impl Syndrome {
    /// Every named syndrome.
    pub const ALL: [Syndrome; 13] = [
        Syndrome::LocalLengthErr,
        Syndrome::LocalQpOpErr,
        Syndrome::LocalProtErr,
        Syndrome::WrFlushErr,
        Syndrome::MwBindErr,
        Syndrome::BadRespErr,
        Syndrome::LocalAccessErr,
        Syndrome::RemoteInvalReqErr,
        Syndrome::RemoteAccessErr,
        Syndrome::RemoteOpErr,
        Syndrome::TransportRetryExcErr,
        Syndrome::RnrRetryExcErr,
        Syndrome::RemoteAbortedErr,
    ];

    /// The named syndrome with this value, if it is one.
    pub fn from_u8(value: u8) -> Option<Syndrome> {
        Self::ALL.iter().copied().find(|s| *s as u8 == value)
    }

    /// The rdma-core name, e.g. `"REMOTE_ACCESS_ERR"`.
    pub const fn name(self) -> &'static str {
        match self {
            Syndrome::LocalLengthErr => "LOCAL_LENGTH_ERR",
            Syndrome::LocalQpOpErr => "LOCAL_QP_OP_ERR",
            Syndrome::LocalProtErr => "LOCAL_PROT_ERR",
            Syndrome::WrFlushErr => "WR_FLUSH_ERR",
            Syndrome::MwBindErr => "MW_BIND_ERR",
            Syndrome::BadRespErr => "BAD_RESP_ERR",
            Syndrome::LocalAccessErr => "LOCAL_ACCESS_ERR",
            Syndrome::RemoteInvalReqErr => "REMOTE_INVAL_REQ_ERR",
            Syndrome::RemoteAccessErr => "REMOTE_ACCESS_ERR",
            Syndrome::RemoteOpErr => "REMOTE_OP_ERR",
            Syndrome::TransportRetryExcErr => "TRANSPORT_RETRY_EXC_ERR",
            Syndrome::RnrRetryExcErr => "RNR_RETRY_EXC_ERR",
            Syndrome::RemoteAbortedErr => "REMOTE_ABORTED_ERR",
        }
    }

    /// The `ibv_wc_status` rdma-core reports for this syndrome (`mlx5_handle_error_cqe`).
    pub const fn wc_status(self) -> WcStatus {
        match self {
            Syndrome::LocalLengthErr => WcStatus::LocLenErr,
            Syndrome::LocalQpOpErr => WcStatus::LocQpOpErr,
            Syndrome::LocalProtErr => WcStatus::LocProtErr,
            Syndrome::WrFlushErr => WcStatus::WrFlushErr,
            Syndrome::MwBindErr => WcStatus::MwBindErr,
            Syndrome::BadRespErr => WcStatus::BadRespErr,
            Syndrome::LocalAccessErr => WcStatus::LocAccessErr,
            Syndrome::RemoteInvalReqErr => WcStatus::RemInvReqErr,
            Syndrome::RemoteAccessErr => WcStatus::RemAccessErr,
            Syndrome::RemoteOpErr => WcStatus::RemOpErr,
            Syndrome::TransportRetryExcErr => WcStatus::RetryExcErr,
            Syndrome::RnrRetryExcErr => WcStatus::RnrRetryExcErr,
            Syndrome::RemoteAbortedErr => WcStatus::RemAbortErr,
        }
    }
}

/// `enum ibv_wc_status` (verbs.h), the status a verbs poller would report.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[allow(missing_docs)]
pub enum WcStatus {
    Success = 0,
    LocLenErr = 1,
    LocQpOpErr = 2,
    LocEecOpErr = 3,
    LocProtErr = 4,
    WrFlushErr = 5,
    MwBindErr = 6,
    BadRespErr = 7,
    LocAccessErr = 8,
    RemInvReqErr = 9,
    RemAccessErr = 10,
    RemOpErr = 11,
    RetryExcErr = 12,
    RnrRetryExcErr = 13,
    LocRddViolErr = 14,
    RemInvRdReqErr = 15,
    RemAbortErr = 16,
    InvEecnErr = 17,
    InvEecStateErr = 18,
    FatalErr = 19,
    RespTimeoutErr = 20,
    GeneralErr = 21,
}

impl WcStatus {
    /// The status rdma-core reports for a raw syndrome byte: unnamed values map to
    /// `IBV_WC_GENERAL_ERR`.
    pub fn from_syndrome(syndrome: u8) -> WcStatus {
        Syndrome::from_u8(syndrome).map_or(WcStatus::GeneralErr, Syndrome::wc_status)
    }
}

/// A mini-CQE (8 bytes) of a compressed block: bytes 0..4 depend on the format, bytes 4..8
/// are the byte count.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MiniCqe {
    /// RX hash (hash format); checksum + stride index (checksum formats); or for requester
    /// CQEs the WQE counter (BE16), the send opcode and a reserved byte.
    pub info: [u8; 4],
    /// Byte count.
    pub byte_cnt: Be32,
}

impl MiniCqe {
    /// RX hash result (hash format).
    pub fn rx_hash_result(&self) -> u32 {
        u32::from_be_bytes(self.info)
    }
    /// Checksum (checksum formats).
    pub fn checksum(&self) -> u16 {
        u16::from_be_bytes([self.info[0], self.info[1]])
    }
    /// Stride index (checksum + stride-index format).
    pub fn stride_idx(&self) -> u16 {
        u16::from_be_bytes([self.info[2], self.info[3]])
    }
    /// WQE counter (requester mini-CQEs).
    pub fn wqe_counter(&self) -> u16 {
        u16::from_be_bytes([self.info[0], self.info[1]])
    }
    /// Send opcode (requester mini-CQEs).
    pub fn s_wqe_opcode(&self) -> u8 {
        self.info[2]
    }
}

wire_bytes!(MiniCqe, 8, [info, byte_cnt]);

/// Mini-CQEs per 64-byte array.
pub const MINI_CQES_PER_ARRAY: usize = 8;
const _: () = assert!(core::mem::size_of::<MiniCqe>() * MINI_CQES_PER_ARRAY == CQE_SIZE);

#[cfg(test)]
mod tests {
    use super::*;
    use core::mem::offset_of;

    #[test]
    fn cqe_offsets_follow_the_prm_table() {
        assert_eq!(offset_of!(Cqe64, ml_path), 17);
        assert_eq!(offset_of!(Cqe64, checksum), 20);
        assert_eq!(offset_of!(Cqe64, slid), 22);
        assert_eq!(offset_of!(Cqe64, flags_rqpn), 24);
        assert_eq!(offset_of!(Cqe64, srqn_uidx), 32);
        assert_eq!(offset_of!(Cqe64, imm_inval_pkey), 36);
        assert_eq!(offset_of!(Cqe64, byte_cnt), 44);
        assert_eq!(offset_of!(Cqe64, timestamp), 48);
        assert_eq!(offset_of!(Cqe64, sop_drop_qpn), 56);
        assert_eq!(offset_of!(Cqe64, wqe_counter), 60);
        assert_eq!(offset_of!(Cqe64, op_own), 63);
        assert_eq!(offset_of!(ErrCqe, vendor_err_synd), 54);
        assert_eq!(offset_of!(ErrCqe, syndrome), 55);
        assert_eq!(offset_of!(ErrCqe, s_wqe_opcode_qpn), 56);
        assert_eq!(cqe64_offset(128), 64);
    }

    #[test]
    fn op_own_bits() {
        let v = OpOwn::from_bits(0xd7);
        assert!(v.owner());
        assert!(v.se());
        assert_eq!(v.format(), CqeFormat::InlineScatter32);
        assert_eq!(v.opcode(), CqeOpcode::ReqErr as u8);
        assert_eq!(OpOwn::from_bits(OP_OWN_INVALID).opcode(), 15);
    }

    #[test]
    fn unnamed_syndromes_are_general_errors() {
        assert_eq!(WcStatus::from_syndrome(0x13), WcStatus::RemAccessErr);
        assert_eq!(WcStatus::from_syndrome(0x03), WcStatus::GeneralErr);
        assert_eq!(
            Syndrome::from_u8(0x16).map(Syndrome::name),
            Some("RNR_RETRY_EXC_ERR")
        );
    }
}
