//! CQE compression ("zipping"): the two block layouts, the mini-CQE formats and the `op_own`
//! and `signature` bytes of compressed slots.
//!
//! Sources: kernel `include/linux/mlx5/device.h` (`struct mlx5_mini_cqe8`,
//! `MLX5_MINI_CQE_ARRAY_SIZE`, `MLX5_CQE_COMPRESS_LAYOUT_*`), `mlx5dv.h`
//! (`enum mlx5dv_cqe_comp_res_format`), the kernel's `mini_cqe_res_format_to_hw`, DPDK
//! `mlx5_rx.c` / `mlx5_common.h` and UCX `ib_mlx5.c`. Facts: `shared/docs/prm-facts-next.md`
//! §4 and `prm-facts.md` §7.7. The mini-CQE itself is [`MiniCqe`](super::MiniCqe).

use super::{CqeFormat, OP_OWN_INVALID};

/// Mini-CQEs one compressed slot of the enhanced layout holds at most (`op_own` bits 7..4
/// are the count minus one; UCX and DPDK expand at most 7 per slot).
pub const ENHANCED_MINIS_PER_SLOT: u32 = 7;

/// `op_own` bits 3..2 of a compressed slot (basic title, or enhanced mini slot), in place.
pub const OP_OWN_COMPRESSED: u8 = (CqeFormat::Compressed as u8) << 2;

/// The CQ context's `cqe_comp_layout` (kernel `MLX5_CQE_COMPRESS_LAYOUT_BASIC/ENHANCED`).
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum CqeCompLayout {
    /// A title CQE whose `byte_cnt` is the number N of completions, then arrays of 8
    /// mini-CQEs at slots title+1, title+8, title+16, ...; the block takes N CQ indices and
    /// the slots between the arrays are not written (software invalidates them).
    Basic = 0,
    /// The title is the last normal CQE before the block; each compressed slot holds up to
    /// 7 mini-CQEs and takes as many CQ indices; every CQE carries a validity iteration
    /// count in byte 62 (`signature`). ConnectX-6 and later, DevX only.
    Enhanced = 1,
}

/// What bytes 0..4 of a responder mini-CQE carry (`enum mlx5dv_cqe_comp_res_format`).
/// Requester mini-CQEs always carry `wqe_counter` and the send opcode there.
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum MiniCqeFormat {
    /// `MLX5DV_CQE_RES_FORMAT_HASH`: the RX hash (BE32).
    Hash = 1 << 0,
    /// `MLX5DV_CQE_RES_FORMAT_CSUM`: the checksum (BE16), bytes 2..4 reserved.
    Csum = 1 << 1,
    /// `MLX5DV_CQE_RES_FORMAT_CSUM_STRIDX`: checksum (BE16) and stride index (BE16).
    CsumStridx = 1 << 2,
}

impl MiniCqeFormat {
    /// The `mlx5dv_cq_init_attr.cqe_comp_res_format` bit.
    pub const fn dv_bit(self) -> u8 {
        self as u8
    }

    /// The CQ context's `mini_cqe_res_format` code the kernel writes for it
    /// (`mini_cqe_res_format_to_hw`: HASH 0, CSUM 1, CSUM_STRIDX 3).
    pub const fn cqc_code(self) -> u8 {
        match self {
            MiniCqeFormat::Hash => 0,
            MiniCqeFormat::Csum => 1,
            MiniCqeFormat::CsumStridx => 3,
        }
    }
}

/// The CQ index (relative to the title) of mini-CQE array `array` of a basic block: array 0
/// right after the title, array j ≥ 1 at title + 8·j (DPDK `mlx5_rx_poll_len`: "the second
/// one is located 7 CQEs after the initial CQE instead of 8").
pub const fn basic_array_slot(array: u32) -> u32 {
    if array == 0 {
        1
    } else {
        array * super::MINI_CQES_PER_ARRAY as u32
    }
}

/// `op_own` of an enhanced compressed slot holding `count` (1..=7) mini-CQEs, owner bit
/// `owner`.
pub const fn enhanced_op_own(count: u32, owner: bool) -> u8 {
    ((count - 1) as u8) << 4 | OP_OWN_COMPRESSED | owner as u8
}

/// The number of mini-CQEs an enhanced compressed slot's `op_own` announces (1..=16; more
/// than [`ENHANCED_MINIS_PER_SLOT`] is a corrupt slot).
pub const fn enhanced_count(op_own: u8) -> u32 {
    (op_own >> 4) as u32 + 1
}

/// The validity iteration count (byte 62) of the CQE at CQ index `index` of a CQ of
/// `1 << log_cnt` entries: `(index >> log_cnt) & 0xff` (DPDK `check_cqe_iteration`).
pub const fn validity_count(index: u32, log_cnt: u32) -> u8 {
    (index >> log_cnt) as u8
}

/// `op_own` software leaves in a slot of a basic block it consumed that nothing rewrites
/// (DPDK writes `0xF0`, opcode INVALID): never taken for a new CQE.
pub const OP_OWN_CONSUMED: u8 = OP_OWN_INVALID;

#[cfg(test)]
mod tests {
    use super::super::{MiniCqe, OpOwn};
    use super::*;

    #[test]
    fn basic_arrays_sit_at_1_8_16() {
        let slots: Vec<u32> = (0..4).map(basic_array_slot).collect();
        assert_eq!(slots, [1, 8, 16, 24]);
    }

    #[test]
    fn enhanced_op_own_bytes() {
        assert_eq!(enhanced_op_own(7, true), 0x6d);
        assert_eq!(enhanced_op_own(1, false), 0x0c);
        assert_eq!(enhanced_count(0x6d), 7);
        assert_eq!(enhanced_count(0xfc), 16);
        assert_eq!(
            OpOwn::from_bits(enhanced_op_own(3, true)).format(),
            CqeFormat::Compressed
        );
        assert_eq!(validity_count(0x1234, 4), 0x23);
        assert_eq!(validity_count(5 << 10 | 7, 10), 5);
    }

    #[test]
    fn mini_cqe_bytes_follow_mlx5_mini_cqe8() {
        // Requester: BE16 wqe_counter, s_wqe_opcode at byte 2 (kernel device.h, UCX).
        let m = MiniCqe::from_bytes(&[0x12, 0x34, 0x0a, 0x00, 0, 0, 0x01, 0x00]);
        assert_eq!(
            (m.wqe_counter(), m.s_wqe_opcode(), m.byte_cnt.get()),
            (0x1234, 0x0a, 256)
        );
        // Responder: BE32 hash, or BE16 checksum + BE16 stride index.
        let m = MiniCqe::from_bytes(&[0xde, 0xad, 0xbe, 0xef, 0, 0, 0, 40]);
        assert_eq!(m.rx_hash_result(), 0xdead_beef);
        assert_eq!((m.checksum(), m.stride_idx()), (0xdead, 0xbeef));
        assert_eq!(m.byte_cnt.get(), 40);
    }

    #[test]
    fn format_codes() {
        let dv: Vec<u8> = [
            MiniCqeFormat::Hash,
            MiniCqeFormat::Csum,
            MiniCqeFormat::CsumStridx,
        ]
        .iter()
        .map(|f| f.dv_bit())
        .collect();
        assert_eq!(dv, [1, 2, 4]);
        assert_eq!(MiniCqeFormat::CsumStridx.cqc_code(), 3);
        assert_eq!(CqeCompLayout::Enhanced as u8, 1);
    }
}
