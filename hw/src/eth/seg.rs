//! The send WQE of a raw packet QP (prm-facts §4.8, prm-facts-next §5.1): the control
//! segment, the Ethernet segment `mlx5_wqe_eth_seg`, then data, inline or pointer segments
//! (SEND and TSO) or one entry per packet (enhanced MPW), decoded and checked as the
//! model's NIC takes them.
//!
//! The Ethernet segment (rdma-core `mlx5dv.h` `struct mlx5_wqe_eth_seg`; the kernel's
//! `include/linux/mlx5/qp.h` names the same bytes; DPDK `struct mlx5_wqe_eseg`):
//!
//! | bytes | field |
//! |---|---|
//! | 0..4 | software-parser offsets (not modelled, ignored) |
//! | 4 | `cs_flags`: 0x40 L3 checksum, 0x80 L4 checksum (`MLX5_ETH_WQE_L3_CSUM`, `_L4_CSUM`); 0x10 / 0x20 the inner ones of a tunnel (not modelled, ignored) |
//! | 5 | software-parser flags (ignored) |
//! | 6..8 | `mss`, BE16: TSO's segment payload; "must be 0 on non TSO WQEs" (`mlx5dv_set_eth_seg`) |
//! | 8..12 | flow-table metadata (ignored) |
//! | 12..14 | `inline_hdr_sz`, BE16; or, with bit 15 set (`MLX5_ETH_WQE_INSERT_VLAN`), the VLAN insertion command, bit 0 the S-VLAN TPID (`MLX5_ETH_WQE_SVLAN`) |
//! | 14..16 | the first 2 inline header bytes; or the TCI to insert |
//! | 16.. | the rest of the inline header |
//!
//! The segment takes `16 + align(inline_hdr_sz - 2, 16)` bytes: 16 without an inline
//! header, 32 with rdma-core's 18 (`_mlx5_post_send`: `(offsetof(inline_hdr) +
//! inline_size) & ~0xf`; `set_tso_eth_seg` for longer TSO headers). DPDK writes the VLAN
//! command as one BE32 at 12 (`MLX5_ETH_WQE_VLAN_INSERT | vlan_tci`), the same bytes.

use crate::cqe::synd;
use crate::eth::frame::{TPID_CVLAN, TPID_SVLAN};
use crate::types::EthConfig;
use crate::wqe::{be16, opcode, Ctrl};

/// `MLX5_OPCODE_TSO`.
pub(crate) const TSO: u8 = 0x0e;
/// `MLX5_OPCODE_ENHANCED_MPSW` (DPDK mlx5_prm.h, the kernel's device.h; not in
/// rdma-core's `mlx5dv.h`).
pub(crate) const ENHANCED_MPSW: u8 = 0x29;
/// Where the Ethernet segment starts in the WQE.
pub(crate) const AT: usize = 16;
/// Its fixed part.
const FIXED: usize = 16;
/// `cs_flags` bits.
pub(crate) const CS_L3: u8 = 0x40;
/// The L4 checksum bit of `cs_flags`.
pub(crate) const CS_L4: u8 = 0x80;
/// `MLX5_ETH_WQE_INSERT_VLAN` in bytes 12..14.
const INSERT_VLAN: u16 = 1 << 15;
/// `MLX5_ETH_WQE_SVLAN`: insert an 802.1ad tag.
const SVLAN: u16 = 1 << 0;
/// The smallest header a TSO WQE inlines (`MLX5_ETH_L2_MIN_HEADER_SIZE`, rdma-core
/// providers/mlx5/wqe.h; `set_tso_eth_seg` refuses less).
pub(crate) const TSO_MIN_HEADER: usize = 14;

/// What a raw send WQE asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// `MLX5_OPCODE_SEND`: one frame.
    Send,
    /// `MLX5_OPCODE_TSO`: one frame cut into MSS-sized segments.
    Tso,
    /// `MLX5_OPCODE_ENHANCED_MPSW`: one frame per entry.
    Empw,
}

/// A decoded Ethernet segment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Eseg {
    pub(crate) cs_flags: u8,
    pub(crate) mss: u16,
    /// WQE offsets of the inline header bytes.
    pub(crate) inline: (usize, usize),
    /// A VLAN tag to insert: TPID and TCI.
    pub(crate) vlan: Option<(u16, u16)>,
}

/// A checked raw send WQE: its kind, its Ethernet segment, and where the data segments
/// (or eMPW entries) start.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct RawWqe {
    pub(crate) kind: Kind,
    pub(crate) eseg: Eseg,
    pub(crate) data: usize,
}

/// Decode the raw send WQE `wqe` (`ds * 16` bytes, `ctrl` parsed) for a NIC with `cfg`.
/// Every structural failure is LOCAL_QP_OP_ERR, the model's syndrome for a malformed WQE
/// (what a ConnectX reports for each is not public): an opcode other than SEND, TSO and
/// (with the cap) eMPW, or an opmod other than 0 (legacy MPW, TSO with opmod 1, is not
/// modelled); an Ethernet segment the WQE cannot hold, or an inline header running past
/// the WQE; a SEND with a non-zero `mss`; a SEND or TSO with fewer inline bytes than the
/// device's minimum (a VLAN command inlines none); a TSO with `mss` 0 or a header shorter
/// than 14 bytes; an eMPW with an inline header or a VLAN command (DPDK: eMPW "does not
/// support partial packet inlining" nor VLAN insertion) or without a packet.
pub(crate) fn decode(ctrl: &Ctrl, wqe: &[u8], cfg: &EthConfig) -> Result<RawWqe, u8> {
    let bad = synd::LOCAL_QP_OP_ERR;
    let kind = match (ctrl.opcode, ctrl.opmod) {
        (opcode::SEND, 0) => Kind::Send,
        (TSO, 0) => Kind::Tso,
        (ENHANCED_MPSW, 0) if cfg.enhanced_mpw => Kind::Empw,
        _ => return Err(bad),
    };
    if usize::from(ctrl.ds) * 16 != wqe.len() || wqe.len() < AT + FIXED {
        return Err(bad);
    }
    let e = &wqe[AT..];
    let mss = be16(e, 6);
    let word = be16(e, 12);
    let (n, vlan) = if word & INSERT_VLAN != 0 {
        let tpid = if word & SVLAN != 0 {
            TPID_SVLAN
        } else {
            TPID_CVLAN
        };
        (0, Some((tpid, be16(e, 14))))
    } else {
        (usize::from(word), None)
    };
    let len = FIXED + n.saturating_sub(2).next_multiple_of(16);
    let start = AT + 14;
    if AT + len > wqe.len() || start + n > wqe.len() {
        return Err(bad);
    }
    let eseg = Eseg {
        cs_flags: e[4],
        mss,
        inline: (start, start + n),
        vlan,
    };
    let data = AT + len;
    let min = cfg.min_inline.bytes();
    let ok = match kind {
        Kind::Send => mss == 0 && n >= min,
        Kind::Tso => mss != 0 && n >= min.max(TSO_MIN_HEADER),
        Kind::Empw => n == 0 && vlan.is_none() && data < wqe.len(),
    };
    if !ok {
        return Err(bad);
    }
    Ok(RawWqe { kind, eseg, data })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wqe(opcode: u8, ds: u8, eseg: &[u8]) -> Vec<u8> {
        let mut w = vec![0u8; usize::from(ds) * 16];
        w[3] = opcode;
        w[7] = ds;
        w[AT..AT + eseg.len()].copy_from_slice(eseg);
        w
    }

    #[test]
    fn eseg_size_follows_the_inline_header() {
        let cfg = EthConfig::default();
        for (n, data) in [(0usize, 32usize), (2, 32), (18, 48), (54, 96)] {
            let mut e = [0u8; 16];
            e[12..14].copy_from_slice(&(n as u16).to_be_bytes());
            let w = wqe(opcode::SEND, 8, &e);
            let d = decode(&Ctrl::parse(&w), &w, &cfg).unwrap();
            assert_eq!((d.data, d.eseg.inline), (data, (30, 30 + n)), "{n}");
        }
    }

    #[test]
    fn vlan_command_and_min_inline() {
        let mut e = [0u8; 16];
        e[12..16].copy_from_slice(&[0x80, 0x01, 0x20, 0x05]);
        let w = wqe(opcode::SEND, 3, &e);
        let d = decode(&Ctrl::parse(&w), &w, &EthConfig::default()).unwrap();
        assert_eq!(d.eseg.vlan, Some((TPID_SVLAN, 0x2005)));
        let l2 = EthConfig {
            min_inline: crate::types::MinInline::L2,
            ..EthConfig::default()
        };
        assert_eq!(
            decode(&Ctrl::parse(&w), &w, &l2),
            Err(synd::LOCAL_QP_OP_ERR)
        );
    }
}
