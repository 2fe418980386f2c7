//! Send and receive WQE segments after the control segment.
//!
//! PRM "Send WQE" segments; `mlx5dv.h` / rdma-core `wqe.h` structs named on each type.
//! Facts: `shared/docs/prm-facts.md` §4–§5. All 16 bytes unless noted.

use super::wire::wire_bytes;
use super::{Be16, Be32, Be64, DS};

/// `struct mlx5_wqe_raddr_seg`: remote address and key of an RDMA or atomic operation.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RaddrSeg {
    /// Remote virtual address.
    pub raddr: Be64,
    /// Remote key.
    pub rkey: Be32,
    /// Reserved, written 0.
    pub reserved: Be32,
}

/// `struct mlx5_wqe_data_seg`: one gather (send) or scatter (receive) entry.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DataSeg {
    /// Length in bytes (never 0 in a send gather list; 0 in the receive terminator).
    pub byte_count: Be32,
    /// Local key.
    pub lkey: Be32,
    /// Virtual address.
    pub addr: Be64,
}

/// `MLX5_INVALID_LKEY`: the lkey of the receive scatter-list terminator.
pub const INVALID_LKEY: u32 = 0x100;

impl DataSeg {
    /// A data segment (what `mlx5dv_set_data_seg` writes).
    #[inline(always)]
    pub const fn new(length: u32, lkey: u32, addr: u64) -> Self {
        DataSeg {
            byte_count: Be32::new(length),
            lkey: Be32::new(lkey),
            addr: Be64::new(addr),
        }
    }

    /// The terminator closing a receive scatter list shorter than the queue's maximum.
    pub const TERMINATOR: DataSeg = DataSeg::new(0, INVALID_LKEY, 0);
}

/// `MLX5_INLINE_SEG`: bit 31 of the first word marks an inline data segment.
pub const INLINE_SEG: u32 = 0x8000_0000;

/// `struct mlx5_wqe_inline_seg`: the 4-byte header of inline data; the data follows at byte 4
/// and the segment is padded to a multiple of 16 bytes.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct InlineSeg {
    /// `INLINE_SEG | length`.
    pub byte_count: Be32,
}

impl InlineSeg {
    /// The header for `length` bytes of inline data.
    #[inline(always)]
    pub const fn new(length: u32) -> Self {
        InlineSeg {
            byte_count: Be32::new(INLINE_SEG | length),
        }
    }

    /// Number of 16-byte units an inline segment of `length` bytes occupies.
    #[inline(always)]
    pub const fn ds(length: usize) -> usize {
        (4 + length).div_ceil(DS)
    }
}

/// `struct mlx5_wqe_atomic_seg`: compare-and-swap / fetch-and-add arguments.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AtomicSeg {
    /// Swap value (CS) or add value (FA).
    pub swap_add: Be64,
    /// Compare value (CS only).
    pub compare: Be64,
}

/// Masked compare-and-swap with 4-byte arguments (16 bytes, opmod 0x08).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MaskedCs32 {
    /// Swap value.
    pub swap: Be32,
    /// Compare value.
    pub compare: Be32,
    /// Bits of `swap` to write.
    pub swap_mask: Be32,
    /// Bits to compare.
    pub compare_mask: Be32,
}

/// Masked compare-and-swap with 8-byte arguments (32 bytes, opmod 0x09); rdma-core
/// `struct mlx5_wqe_masked_atomic_seg`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MaskedCs64 {
    /// Swap value.
    pub swap: Be64,
    /// Compare value.
    pub compare: Be64,
    /// Bits of `swap` to write.
    pub swap_mask: Be64,
    /// Bits to compare.
    pub compare_mask: Be64,
}

/// Masked fetch-and-add with 4-byte arguments (16 bytes, opmod 0x08).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MaskedFa32 {
    /// Value to add.
    pub add: Be32,
    /// Bits at which carries stop (field boundaries).
    pub field_boundary: Be32,
    /// Reserved.
    pub reserved: Be64,
}

/// Masked fetch-and-add with 8-byte arguments (16 bytes, opmod 0x09).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MaskedFa64 {
    /// Value to add.
    pub add: Be64,
    /// Bits at which carries stop (field boundaries).
    pub field_boundary: Be64,
}

/// `MLX5_EXTENDED_UD_AV`: bit 31 of `dqp_dct`, set when the full 48-byte AV is present.
pub const EXTENDED_UD_AV: u32 = 0x8000_0000;

/// `struct mlx5_wqe_av` (48 bytes): the address vector of UD and DCI WQEs.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Av {
    /// UD: BE32 qkey in bytes 0..4; DC: BE64 access key.
    pub key: Be64,
    /// Remote QPN or DCT number (23..0); bit 31 = extended (48-byte) AV.
    pub dqp_dct: Be32,
    /// Static rate (7..4) and SL.
    pub stat_rate_sl: u8,
    /// Force loopback (bit 7) and source path bits.
    pub fl_mlid: u8,
    /// Destination LID (IB) or UDP source port (RoCE v2).
    pub rlid: Be16,
    /// Reserved.
    pub reserved0: [u8; 4],
    /// Destination MAC (RoCE).
    pub rmac: [u8; 6],
    /// Traffic class.
    pub tclass: u8,
    /// Hop limit.
    pub hop_limit: u8,
    /// GRH present (bit 30), SGID index (27..20), flow label (19..0).
    pub grh_gid_fl: Be32,
    /// Destination GID.
    pub rgid: [u8; 16],
}

impl Av {
    /// The address vector `mlx5dv_set_dgram_seg` writes, from the same arguments: `key` as a
    /// BE64 (a UD qkey goes in its upper half), `dqp_dct | ext << 31`, then each field as
    /// given, multi-byte ones big-endian.
    #[allow(
        clippy::too_many_arguments,
        reason = "the arguments of mlx5dv_set_dgram_seg, in its order"
    )]
    pub const fn new(
        key: u64,
        dqp_dct: u32,
        ext: bool,
        stat_rate_sl: u8,
        fl_mlid: u8,
        rlid: u16,
        rmac: [u8; 6],
        tclass: u8,
        hop_limit: u8,
        grh_gid_fl: u32,
        rgid: [u8; 16],
    ) -> Av {
        let ext = if ext { EXTENDED_UD_AV } else { 0 };
        Av {
            key: Be64::new(key),
            dqp_dct: Be32::new(dqp_dct | ext),
            stat_rate_sl,
            fl_mlid,
            rlid: Be16::new(rlid),
            reserved0: [0; 4],
            rmac,
            tclass,
            hop_limit,
            grh_gid_fl: Be32::new(grh_gid_fl),
            rgid,
        }
    }

    /// The UD form `mlx5dv_set_dgram_seg` writes into a zeroed AV: remote QPN with the
    /// extended bit as asked, and the qkey.
    pub fn set_ud(&mut self, remote_qpn: u32, qkey: u32, extended: bool) {
        let ext = if extended { EXTENDED_UD_AV } else { 0 };
        self.dqp_dct = Be32::new(remote_qpn | ext);
        let mut key = [0u8; 8];
        key[0..4].copy_from_slice(&Be32::new(qkey).to_bytes());
        self.key = Be64::from_bytes(key);
    }

    /// The DC form `mlx5dv_set_dgram_seg` writes with `ext` 1 (and `mlx5_send_wr_set_dc_addr`
    /// ORs into an AH's AV): the DCT number with the extended bit, and the 64-bit DC access
    /// key.
    pub fn set_dc(&mut self, dctn: u32, dc_key: u64) {
        self.dqp_dct = Be32::new(dctn | EXTENDED_UD_AV);
        self.key = Be64::new(dc_key);
    }
}

/// The compact (16-byte) address vector: the first 16 bytes of [`Av`], used when bit 31 of
/// `dqp_dct` is clear.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CompactAv {
    /// As [`Av::key`].
    pub key: Be64,
    /// As [`Av::dqp_dct`], bit 31 clear.
    pub dqp_dct: Be32,
    /// As [`Av::stat_rate_sl`].
    pub stat_rate_sl: u8,
    /// As [`Av::fl_mlid`].
    pub fl_mlid: u8,
    /// As [`Av::rlid`].
    pub rlid: Be16,
}

impl CompactAv {
    /// The compact AV of a UD WQE to QP `remote_qpn` with `qkey` through an address
    /// handle's `av`: what `mlx5dv_set_dgram_seg` writes into the first 16 bytes with `ext`
    /// 0 (the Q_Key in the upper half of `key`, `dqp_dct` as given: a 24-bit QPN leaves
    /// bit 31 clear), the AH's rate, SL, path bits and DLID kept.
    pub fn ud(av: &Av, remote_qpn: u32, qkey: u32) -> CompactAv {
        CompactAv::of(av, remote_qpn, u64::from(qkey) << 32)
    }

    /// The compact AV of a DCI WQE to DCT `dctn` with `dc_key` through `av`: as
    /// [`CompactAv::ud`] with the 64-bit DC key.
    pub fn dc(av: &Av, dctn: u32, dc_key: u64) -> CompactAv {
        CompactAv::of(av, dctn, dc_key)
    }

    fn of(av: &Av, dqp_dct: u32, key: u64) -> CompactAv {
        CompactAv {
            key: Be64::new(key),
            dqp_dct: Be32::new(dqp_dct),
            stat_rate_sl: av.stat_rate_sl,
            fl_mlid: av.fl_mlid,
            rlid: av.rlid,
        }
    }
}

/// `struct mlx5_wqe_srq_next_seg`: first 16 bytes of an SRQ WQE, linking the free list.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SrqNextSeg {
    /// Reserved.
    pub reserved0: [u8; 2],
    /// Index of the next WQE in the list.
    pub next_wqe_index: Be16,
    /// Signature.
    pub signature: u8,
    /// Reserved.
    pub reserved1: [u8; 11],
}

wire_bytes!(RaddrSeg, 16, [raddr, rkey, reserved]);
wire_bytes!(DataSeg, 16, [byte_count, lkey, addr]);
wire_bytes!(InlineSeg, 4, [byte_count]);
wire_bytes!(AtomicSeg, 16, [swap_add, compare]);
wire_bytes!(MaskedCs32, 16, [swap, compare, swap_mask, compare_mask]);
wire_bytes!(MaskedCs64, 32, [swap, compare, swap_mask, compare_mask]);
wire_bytes!(MaskedFa32, 16, [add, field_boundary, reserved]);
wire_bytes!(MaskedFa64, 16, [add, field_boundary]);
wire_bytes!(
    Av,
    48,
    [
        key,
        dqp_dct,
        stat_rate_sl,
        fl_mlid,
        rlid,
        reserved0,
        rmac,
        tclass,
        hop_limit,
        grh_gid_fl,
        rgid,
    ]
);
wire_bytes!(CompactAv, 16, [key, dqp_dct, stat_rate_sl, fl_mlid, rlid]);
wire_bytes!(
    SrqNextSeg,
    16,
    [reserved0, next_wqe_index, signature, reserved1]
);

const _: () = {
    use core::mem::size_of;
    assert!(size_of::<RaddrSeg>() == 16);
    assert!(size_of::<DataSeg>() == 16);
    assert!(size_of::<InlineSeg>() == 4);
    assert!(size_of::<AtomicSeg>() == 16);
    assert!(size_of::<MaskedCs32>() == 16);
    assert!(size_of::<MaskedCs64>() == 32);
    assert!(size_of::<MaskedFa32>() == 16);
    assert!(size_of::<MaskedFa64>() == 16);
    assert!(size_of::<Av>() == 48);
    assert!(size_of::<CompactAv>() == 16);
    assert!(size_of::<SrqNextSeg>() == 16);
};

#[cfg(test)]
mod tests {
    use super::*;
    use core::mem::offset_of;

    #[test]
    fn av_offsets_follow_the_prm_table() {
        assert_eq!(offset_of!(Av, dqp_dct), 8);
        assert_eq!(offset_of!(Av, stat_rate_sl), 12);
        assert_eq!(offset_of!(Av, fl_mlid), 13);
        assert_eq!(offset_of!(Av, rlid), 14);
        assert_eq!(offset_of!(Av, rmac), 20);
        assert_eq!(offset_of!(Av, tclass), 26);
        assert_eq!(offset_of!(Av, hop_limit), 27);
        assert_eq!(offset_of!(Av, grh_gid_fl), 28);
        assert_eq!(offset_of!(Av, rgid), 32);
        // The compact AV is the head of the full one.
        assert_eq!(offset_of!(CompactAv, dqp_dct), offset_of!(Av, dqp_dct));
        assert_eq!(offset_of!(CompactAv, stat_rate_sl), 12);
        assert_eq!(offset_of!(CompactAv, fl_mlid), 13);
        assert_eq!(offset_of!(CompactAv, rlid), 14);
        assert_eq!(offset_of!(SrqNextSeg, next_wqe_index), 2);
        assert_eq!(offset_of!(SrqNextSeg, signature), 4);
    }

    #[test]
    fn inline_header_and_size() {
        assert_eq!(InlineSeg::new(8).byte_count.to_bytes(), [0x80, 0, 0, 8]);
        assert_eq!(InlineSeg::ds(0), 1);
        assert_eq!(InlineSeg::ds(12), 1);
        assert_eq!(InlineSeg::ds(13), 2);
        assert_eq!(
            DataSeg::TERMINATOR.lkey.to_bytes(),
            [0, 0, 1, 0],
            "the terminator key is 0x100"
        );
    }
}
