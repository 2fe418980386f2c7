//! Enhanced multi-packet send (eMPW, opcode 0x29 `MLX5_OPCODE_ENHANCED_MPSW`, DPDK's
//! `mlx5_tx_burst_empw_simple` / `_inline`): up to 32 frames in one WQE and one doorbell.
//! The WQE is the control segment, a 16-byte Ethernet segment without inline header (its
//! `cs_flags` shared by every packet), then one entry per packet: a 16-byte pointer segment,
//! or an inline segment `BE32(len | 0x80000000)` and the bytes, padded to 16. The limits are
//! DPDK's, kept as this driver's policy (`prm::empw`): 32 packets, 60 DS, inline packets of
//! at most 268 bytes. Facts: `shared/docs/prm-facts-next.md` §5.1.

use crate::error::PostError;
use crate::eth::{Checksum, EthRefusal};
use crate::mmio::Uar;
use crate::prm::{empw, Be32, CtrlSeg, DataSeg, EthSeg, InlineSeg, Opcode, DS};

use super::eth::MAX_WQE;
use super::ud::Doorbell;
use super::wr::{SendFlags, Sge};
use super::SendQueue;

/// One packet of an eMPW WQE.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EmpwPacket<'a> {
    /// The frame's bytes copied into the WQE (at most 268).
    Inline(&'a [u8]),
    /// The frame gathered from one registered buffer.
    Pointer(Sge),
}

/// An enhanced multi-packet send: 1 to 32 frames, one WQE, one completion.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EmpwWr<'a> {
    /// Returned in the completion.
    pub wr_id: u64,
    /// Completion request, fence, solicited event.
    pub flags: SendFlags,
    /// Checksums the device computes, for every packet.
    pub checksum: Checksum,
    /// The frames, sent in order.
    pub packets: &'a [EmpwPacket<'a>],
}

impl<U: Uar> SendQueue<U> {
    /// Posts 1 to 32 frames as one eMPW WQE and rings the doorbell (with any WQEs pushed
    /// before). Refused before anything is written: a queue that is not a raw packet QP's
    /// ([`PostError::WrongTransport`]); a device without eMPW or that needs an inline
    /// header, 0 or over 32 packets, over 60 DS, an inline packet over 268 bytes, an empty
    /// packet ([`PostError::Ethernet`]); no room.
    pub fn post_empw(&mut self, wr: &EmpwWr<'_>) -> Result<(), PostError> {
        self.write_empw(wr, Doorbell::Now)
    }

    /// [`SendQueue::post_empw`] without the doorbell.
    pub fn push_empw(&mut self, wr: &EmpwWr<'_>) -> Result<(), PostError> {
        self.write_empw(wr, Doorbell::Later)
    }

    fn write_empw(&mut self, wr: &EmpwWr<'_>, doorbell: Doorbell) -> Result<(), PostError> {
        let eth = self.eth_entry()?;
        let refuse = |why| Err(PostError::Ethernet(why));
        if !eth.caps.enhanced_mpw || eth.caps.min_inline != 0 {
            return refuse(EthRefusal::EmpwUnsupported);
        }
        let count = wr.packets.len();
        if count == 0 || count > empw::MAX_PACKETS {
            return refuse(EthRefusal::EmpwPackets { count });
        }
        let mut ds = empw::HEADER_DS;
        for p in wr.packets {
            ds += match p {
                EmpwPacket::Inline([]) => return refuse(EthRefusal::EmptyFrame),
                EmpwPacket::Inline(b) if b.len() > empw::DEF_INLINE_LEN => {
                    return refuse(EthRefusal::EmpwInlineTooLarge { len: b.len() })
                }
                EmpwPacket::Inline(b) => InlineSeg::ds(b.len()),
                EmpwPacket::Pointer(s) if s.len == 0 => return refuse(EthRefusal::EmptyFrame),
                EmpwPacket::Pointer(_) => 1,
            };
        }
        if ds > empw::MAX_DS {
            return refuse(EthRefusal::EmpwTooLarge { ds });
        }
        let mut image = [0u8; MAX_WQE];
        let ctrl = CtrlSeg::new(
            Opcode::EnhancedMpsw as u8,
            0,
            self.producer_count() as u16,
            self.qpn(),
            ds as u8,
            wr.flags.fm_ce_se(),
            Be32::new(0),
        );
        image[..DS].copy_from_slice(&ctrl.to_bytes());
        let eseg = EthSeg::new(wr.checksum.0, 0, &[]);
        image[DS..2 * DS].copy_from_slice(&eseg.to_bytes()[..DS]);
        let mut at = 2 * DS;
        for p in wr.packets {
            match p {
                EmpwPacket::Inline(b) => {
                    let seg = InlineSeg::new(b.len() as u32).to_bytes();
                    image[at..at + 4].copy_from_slice(&seg);
                    image[at + 4..at + 4 + b.len()].copy_from_slice(b);
                    at += InlineSeg::ds(b.len()) * DS;
                }
                EmpwPacket::Pointer(s) => {
                    let seg = DataSeg::new(s.len, s.lkey, s.addr).to_bytes();
                    image[at..at + DS].copy_from_slice(&seg);
                    at += DS;
                }
            }
        }
        self.post_image(eth, &image[..ds * DS], wr.wr_id, doorbell)
    }
}
