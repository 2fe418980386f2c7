//! Raw Ethernet formats: the Ethernet segment of a packet QP's send WQE, enhanced
//! multi-packet send (eMPW), the striding receive WQE, and the Ethernet fields of a
//! responder CQE.
//!
//! `struct mlx5_wqe_eth_seg`, `struct mlx5_mprq_wqe`, `MLX5_ETH_WQE_L*_CSUM`,
//! `MLX5_CQE_L*_OK` and `MLX5_CQE_L3_HDR_TYPE_*` are rdma-core's `mlx5dv.h` and pinned by the
//! golden tests. What only the kernel (`include/linux/mlx5/qp.h`, `device.h`,
//! `en/txrx.h`) or DPDK (`drivers/common/mlx5/mlx5_prm.h`, `drivers/net/mlx5/mlx5_tx.h`)
//! defines is pinned by value with its source named on each item.
//! Facts: `shared/docs/prm-facts-next.md` §5, `prm-facts.md` §4.8 and §7.2.

use bitfield_struct::bitfield;

use super::wire::wire_bytes;
use super::{Be16, Be32, Cqe64, DataSeg, SrqNextSeg, DS};

/// `MLX5_ETH_WQE_L3_CSUM`: `cs_flags` bit asking for the IPv4 header checksum.
pub const ETH_WQE_L3_CSUM: u8 = 1 << 6;
/// `MLX5_ETH_WQE_L4_CSUM`: `cs_flags` bit asking for the TCP or UDP checksum.
pub const ETH_WQE_L4_CSUM: u8 = 1 << 7;
/// `MLX5_ETH_WQE_INSERT_VLAN` (the kernel's `include/linux/mlx5/qp.h`): bit 15 of bytes
/// 12..14 of the Ethernet segment turns them and the next two into a VLAN insertion command.
pub const ETH_WQE_INSERT_VLAN: u16 = 1 << 15;
/// `MLX5_ETH_WQE_SVLAN` (the kernel's `qp.h`): with [`ETH_WQE_INSERT_VLAN`], insert an
/// 802.1ad (S-VLAN) tag instead of an 802.1Q one.
pub const ETH_WQE_SVLAN: u16 = 1 << 0;
/// `MLX5_ETH_L2_INLINE_HEADER_SIZE` (rdma-core `providers/mlx5/wqe.h`): the inline header
/// rdma-core copies into every send when the device needs one (14-byte Ethernet header and a
/// 4-byte VLAN tag).
pub const ETH_L2_INLINE_HEADER_SIZE: usize = 18;
/// `MLX5_ETH_L2_MIN_HEADER_SIZE` (rdma-core `wqe.h`): the smallest header a TSO WQE inlines.
pub const ETH_L2_MIN_HEADER_SIZE: usize = 14;
/// Offset of `inline_hdr_start` in the Ethernet segment: where the inline header begins.
pub const ETH_INLINE_HDR_OFFSET: usize = 14;

/// `struct mlx5_wqe_eth_seg` (32 bytes; a WQE holds its first 16 bytes and then as much of
/// the inline header as [`EthSeg::size`] says).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EthSeg {
    /// Bytes 0..4: software-parser offsets (`rsvd0` in `mlx5dv.h`); written 0.
    pub swp_offsets: [u8; 4],
    /// Byte 4: checksum offload flags ([`ETH_WQE_L3_CSUM`], [`ETH_WQE_L4_CSUM`]).
    pub cs_flags: u8,
    /// Byte 5: software-parser flags (`rsvd1`); written 0.
    pub swp_flags: u8,
    /// Bytes 6..8: TSO's segment payload size; 0 on every other WQE.
    pub mss: Be16,
    /// Bytes 8..12: flow-table metadata (`rsvd2`); written 0.
    pub metadata: Be32,
    /// Bytes 12..14: bytes of inline header; or the VLAN command's type
    /// ([`ETH_WQE_INSERT_VLAN`]).
    pub inline_hdr_sz: Be16,
    /// Bytes 14..16: the first two inline header bytes; or the TCI to insert.
    pub inline_hdr_start: [u8; 2],
    /// Bytes 16..32: the next 16 inline header bytes (a longer header runs on past the
    /// struct, into the WQE's following 16-byte units).
    pub inline_hdr: [u8; 16],
}

impl EthSeg {
    /// The segment `mlx5dv_set_eth_seg` writes: `cs_flags`, `mss`, and the first
    /// `min(header.len(), 18)` bytes of `header` as the inline header (`inline_hdr_sz` is
    /// `header.len()`: the bytes past 18 are the caller's to write after the struct).
    pub fn new(cs_flags: u8, mss: u16, header: &[u8]) -> EthSeg {
        let mut seg = EthSeg {
            cs_flags,
            mss: Be16::new(mss),
            inline_hdr_sz: Be16::new(header.len() as u16),
            ..EthSeg::default()
        };
        let first = header.len().min(2);
        seg.inline_hdr_start[..first].copy_from_slice(&header[..first]);
        let rest = &header[first..header.len().min(ETH_L2_INLINE_HEADER_SIZE)];
        seg.inline_hdr[..rest.len()].copy_from_slice(rest);
        seg
    }

    /// A segment that inserts the VLAN tag `tci` (802.1ad when `svlan`) and inlines nothing:
    /// bytes 12..16 are the kernel's `insert` command, what DPDK writes as one BE32
    /// (`MLX5_ETH_WQE_VLAN_INSERT | vlan_tci`).
    pub fn vlan_insert(cs_flags: u8, tci: u16, svlan: bool) -> EthSeg {
        let kind = ETH_WQE_INSERT_VLAN | if svlan { ETH_WQE_SVLAN } else { 0 };
        EthSeg {
            cs_flags,
            inline_hdr_sz: Be16::new(kind),
            inline_hdr_start: tci.to_be_bytes(),
            ..EthSeg::default()
        }
    }

    /// The VLAN command of this segment, if it is one: the TCI and whether the tag is an
    /// S-VLAN.
    pub fn vlan(&self) -> Option<(u16, bool)> {
        let kind = self.inline_hdr_sz.get();
        (kind & ETH_WQE_INSERT_VLAN != 0).then(|| {
            (
                u16::from_be_bytes(self.inline_hdr_start),
                kind & ETH_WQE_SVLAN != 0,
            )
        })
    }

    /// Bytes the segment takes in a WQE with `inline` bytes of inline header: the 16-byte
    /// fixed part, then the header past its first two bytes rounded up to 16 (16 with none,
    /// 32 with rdma-core's 18, 80 with a 54-byte TSO header).
    #[inline(always)]
    pub const fn size(inline: usize) -> usize {
        let past = inline.saturating_sub(2);
        DS + past.div_ceil(DS) * DS
    }
}

/// `MLX5_OPCODE_ENHANCED_MPSW`'s entry limits as DPDK keeps them (`mlx5_prm.h`,
/// `mlx5_tx.h`): driver policy, not the device's (its limit is the 6-bit DS count).
pub mod empw {
    /// `MLX5_EMPW_MAX_PACKETS` (= `MLX5_TX_COMP_THRESH`): packets per eMPW WQE.
    pub const MAX_PACKETS: usize = 32;
    /// `MLX5_WQE_SIZE_MAX` / `MLX5_WQE_DSEG_SIZE` (960 / 16): DS per eMPW WQE.
    pub const MAX_DS: usize = 60;
    /// `MLX5_EMPW_DEF_INLINE_LEN` (4 × `MLX5_WQE_SIZE` + `MLX5_DSEG_MIN_INLINE_SIZE`,
    /// 4 × 64 + 12 = 268 bytes): the largest packet DPDK inlines into an eMPW by default.
    pub const DEF_INLINE_LEN: usize = 268;
    /// `MLX5_ETH_WQE_DATA_INLINE`: bit 31 of an entry's first word marks an inline packet
    /// (the same bit as `MLX5_INLINE_SEG`).
    pub const DATA_INLINE: u32 = 0x8000_0000;
    /// DS of the control and Ethernet segments that open every eMPW WQE.
    pub const HEADER_DS: usize = 2;
}

/// `struct mlx5_mprq_wqe` (32 bytes): a striding receive WQE, a next segment (unused: the
/// queue is cyclic) and one data segment covering the WQE's whole buffer.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MprqWqe {
    /// Bytes 0..16: `struct mlx5_wqe_srq_next_seg`, written 0.
    pub nseg: SrqNextSeg,
    /// Bytes 16..32: the buffer (`strides << stride_shift` bytes).
    pub dseg: DataSeg,
}

impl MprqWqe {
    /// The WQE for a buffer of `length` bytes at `addr` under `lkey`.
    pub const fn new(length: u32, lkey: u32, addr: u64) -> MprqWqe {
        MprqWqe {
            nseg: SrqNextSeg {
                reserved0: [0; 2],
                next_wqe_index: Be16::new(0),
                signature: 0,
                reserved1: [0; 11],
            },
            dseg: DataSeg::new(length, lkey, addr),
        }
    }
}

wire_bytes!(
    EthSeg,
    32,
    [
        swp_offsets,
        cs_flags,
        swp_flags,
        mss,
        metadata,
        inline_hdr_sz,
        inline_hdr_start,
        inline_hdr,
    ]
);

impl MprqWqe {
    /// The WQE's bytes in wire order.
    pub fn to_bytes(&self) -> [u8; 32] {
        let mut out = [0u8; 32];
        out[..16].copy_from_slice(&self.nseg.to_bytes());
        out[16..].copy_from_slice(&self.dseg.to_bytes());
        out
    }
}

const _: () = assert!(core::mem::size_of::<MprqWqe>() == 32);

/// `MLX5_CQE_L2_OK`: bit of `hds_ip_ext`.
pub const CQE_L2_OK: u8 = 1 << 0;
/// `MLX5_CQE_L3_OK`: the IPv4 header checksum is right (or the header is IPv6).
pub const CQE_L3_OK: u8 = 1 << 1;
/// `MLX5_CQE_L4_OK`: the TCP or UDP checksum is right.
pub const CQE_L4_OK: u8 = 1 << 2;

/// The L3 header type, bits 3..2 of `l4_l3_hdr_type` (`MLX5_CQE_L3_HDR_TYPE_*`).
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum L3Type {
    /// `MLX5_CQE_L3_HDR_TYPE_NONE`.
    None = 0,
    /// `MLX5_CQE_L3_HDR_TYPE_IPV6`.
    Ipv6 = 1,
    /// `MLX5_CQE_L3_HDR_TYPE_IPV4`.
    Ipv4 = 2,
    /// The value 3, which no header names.
    Reserved = 3,
}

impl L3Type {
    const fn into_bits(self) -> u8 {
        self as u8
    }
    const fn from_bits(bits: u8) -> Self {
        match bits & 3 {
            0 => L3Type::None,
            1 => L3Type::Ipv6,
            2 => L3Type::Ipv4,
            _ => L3Type::Reserved,
        }
    }
}

/// The L4 header type, bits 6..4 of `l4_l3_hdr_type` (the kernel's `CQE_L4_HDR_TYPE_*`,
/// `en/txrx.h` / `device.h`).
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum L4Type {
    /// No TCP or UDP header.
    None = 0,
    /// TCP without ACK (`CQE_L4_HDR_TYPE_TCP_NO_ACK`).
    TcpNoAck = 1,
    /// UDP (`CQE_L4_HDR_TYPE_UDP`).
    Udp = 2,
    /// TCP ACK without data (`CQE_L4_HDR_TYPE_TCP_ACK_NO_DATA`).
    TcpAckNoData = 3,
    /// TCP ACK with data (`CQE_L4_HDR_TYPE_TCP_ACK_AND_DATA`).
    TcpAckAndData = 4,
    /// A value 5..=7, which no header names.
    Reserved = 7,
}

impl L4Type {
    const fn into_bits(self) -> u8 {
        self as u8
    }
    const fn from_bits(bits: u8) -> Self {
        match bits & 7 {
            0 => L4Type::None,
            1 => L4Type::TcpNoAck,
            2 => L4Type::Udp,
            3 => L4Type::TcpAckNoData,
            4 => L4Type::TcpAckAndData,
            _ => L4Type::Reserved,
        }
    }

    /// Whether this is a TCP header type.
    pub const fn is_tcp(self) -> bool {
        matches!(
            self,
            L4Type::TcpNoAck | L4Type::TcpAckNoData | L4Type::TcpAckAndData
        )
    }
}

/// Byte 29 of an Ethernet CQE, `l4_l3_hdr_type` (`l4_hdr_type_etc` in `mlx5dv.h`).
#[bitfield(u8)]
#[derive(PartialEq, Eq)]
pub struct HdrType {
    /// Bit 0: the frame carries a C-VLAN tag (the kernel's `cqe_has_vlan`).
    pub vlan: bool,
    /// Bit 1: reserved.
    #[bits(1)]
    __: u8,
    /// Bits 3..2.
    #[bits(2)]
    pub l3: L3Type,
    /// Bits 6..4.
    #[bits(3)]
    pub l4: L4Type,
    /// Bit 7: reserved.
    #[bits(1)]
    __: u8,
}

/// `byte_cnt` of a striding-RQ CQE (DPDK `mlx5_prm.h` `MLX5_MPRQ_LEN_MASK`,
/// `MLX5_MPRQ_STRIDE_NUM_MASK` / `_SHIFT`, `MLX5_MPRQ_FILLER_MASK`; the kernel's
/// `mlx5_mpwrq_cqe_bc` family).
#[bitfield(u32)]
#[derive(PartialEq, Eq)]
pub struct MprqByteCnt {
    /// Bits 15..0: the packet's length.
    #[bits(16)]
    pub length: u16,
    /// Bits 29..16: strides the packet (or the filler) consumed.
    #[bits(14)]
    pub strides: u16,
    /// Bit 30: reserved.
    #[bits(1)]
    __: u8,
    /// Bit 31: a filler CQE: the strides to the WQE's end are skipped, no packet.
    pub filler: bool,
}

/// The RSS hash type, byte 16 of an Ethernet CQE (the kernel's `CQE_RSS_HTYPE_*`,
/// `en/txrx.h`): bits 3..2 the IP version hashed, bits 7..6 the L4 protocol.
#[bitfield(u8)]
#[derive(PartialEq, Eq)]
pub struct RssHashType {
    /// Bits 1..0: reserved.
    #[bits(2)]
    __: u8,
    /// Bits 3..2: 1 IPv4 (`CQE_RSS_HTYPE_IPV4`), 2 IPv6 (`CQE_RSS_HTYPE_IPV6`), 0 none.
    #[bits(2)]
    pub ip: u8,
    /// Bits 5..4: reserved.
    #[bits(2)]
    __: u8,
    /// Bits 7..6: 1 TCP (`CQE_RSS_HTYPE_TCP`), 2 UDP (`CQE_RSS_HTYPE_UDP`), 0 none.
    #[bits(2)]
    pub l4: u8,
}

/// Bits 23..0 of `sop_drop_qpn` in an Ethernet responder CQE: the steering rule's flow tag
/// (rdma-core `mlx5_cq_read_flow_tag`).
pub const CQE_FLOW_TAG_MASK: u32 = 0x00ff_ffff;

/// The Ethernet fields of a responder CQE (`prm-facts.md` §7.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EthCqe {
    /// `hds_ip_ext`: [`CQE_L2_OK`], [`CQE_L3_OK`], [`CQE_L4_OK`].
    pub ok: u8,
    /// `l4_l3_hdr_type`.
    pub hdr: HdrType,
    /// The C-VLAN TCI (`vlan_info`), when [`HdrType::vlan`] says the frame has one.
    pub vlan: Option<u16>,
    /// The steering rule's flow tag (0 without one).
    pub flow_tag: u32,
    /// The RSS hash of an RSS QP's frame (`rss_hash_result`), else 0.
    pub rss_hash: u32,
    /// Its type (`rss_hash_type`).
    pub rss_type: RssHashType,
}

impl EthCqe {
    /// The Ethernet fields of `cqe`.
    pub fn of(cqe: &Cqe64) -> EthCqe {
        let hdr = HdrType::from_bits(cqe.l4_l3_hdr_type);
        EthCqe {
            ok: cqe.hds_ip_ext,
            hdr,
            vlan: hdr.vlan().then(|| cqe.vlan_info.get()),
            flow_tag: cqe.sop_drop_qpn.get() & CQE_FLOW_TAG_MASK,
            rss_hash: cqe.rss_hash_result.get(),
            rss_type: RssHashType::from_bits(cqe.rss_hash_type),
        }
    }

    /// What rdma-core reports as `IBV_WC_IP_CSUM_OK` (`cq.c` `get_csum_ok`): L3 and L4 OK
    /// on an IPv4 frame.
    pub fn ip_csum_ok(&self) -> bool {
        let both = CQE_L3_OK | CQE_L4_OK;
        self.ok & both == both && self.hdr.l3() == L3Type::Ipv4
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::mem::offset_of;

    #[test]
    fn eth_seg_offsets_and_sizes() {
        assert_eq!(offset_of!(EthSeg, cs_flags), 4);
        assert_eq!(offset_of!(EthSeg, mss), 6);
        assert_eq!(offset_of!(EthSeg, inline_hdr_sz), 12);
        assert_eq!(offset_of!(EthSeg, inline_hdr_start), ETH_INLINE_HDR_OFFSET);
        assert_eq!(offset_of!(EthSeg, inline_hdr), 16);
        assert_eq!(offset_of!(MprqWqe, dseg), 16);
        assert_eq!(EthSeg::size(0), 16);
        assert_eq!(EthSeg::size(2), 16);
        assert_eq!(EthSeg::size(3), 32);
        assert_eq!(EthSeg::size(ETH_L2_INLINE_HEADER_SIZE), 32);
        assert_eq!(EthSeg::size(19), 48);
        assert_eq!(EthSeg::size(54), 80);
    }

    #[test]
    fn vlan_command_bytes() {
        // DPDK writes BE32(MLX5_ETH_WQE_VLAN_INSERT (1 << 31) | tci) at byte 12.
        let seg = EthSeg::vlan_insert(0, 0x2064, false).to_bytes();
        assert_eq!(seg[12..16], (0x8000_0000u32 | 0x2064).to_be_bytes());
        assert_eq!(
            EthSeg::from_bytes(&seg).vlan(),
            Some((0x2064, false)),
            "decoded back"
        );
        let s = EthSeg::vlan_insert(0, 7, true);
        assert_eq!(s.to_bytes()[12..14], [0x80, 0x01]);
        assert_eq!(EthSeg::new(0, 0, &[1; 18]).vlan(), None);
    }

    #[test]
    fn cqe_bitfields() {
        let bc = MprqByteCnt::from_bits(0x8003_0040);
        assert!(bc.filler());
        assert_eq!((bc.strides(), bc.length()), (3, 64));
        let h = HdrType::from_bits(0x29);
        assert!(h.vlan());
        assert_eq!((h.l3(), h.l4()), (L3Type::Ipv4, L4Type::Udp));
        assert_eq!(HdrType::from_bits(0x70).l4(), L4Type::Reserved);
        let r = RssHashType::from_bits(0x44);
        assert_eq!((r.ip(), r.l4()), (1, 1));
    }
}
