//! The raw packet post entry: one Ethernet frame per WQE, SEND (0x0a) or TSO (0x0e), each
//! a control segment, the Ethernet segment (`mlx5_wqe_eth_seg`: checksum flags, MSS, the
//! inline header or a VLAN insertion command) and the rest of the frame as an inline
//! segment or gather entries; rdma-core's `_mlx5_post_send` for `IBV_QPT_RAW_PACKET`
//! (`copy_eth_inline_headers`, `set_tso_eth_seg`) writes the same bytes.
//!
//! A raw queue refuses the RC and UD entries ([`PostError::WrongTransport`]), and the other
//! queues refuse [`SendQueue::post_eth`]. Facts: `shared/docs/prm-facts-next.md` §5.1.

use crate::error::PostError;
use crate::eth::{Checksum, EthCaps, EthRefusal, VlanInsert};
use crate::mmio::Uar;
use crate::prm::{
    self, Be32, CtrlSeg, DataSeg, EthSeg, InlineSeg, Opcode, DS, MAX_DS, SEND_WQE_BB,
};
use crate::ring::WqeRing;
use crate::types::Transport;

use super::shared::SqSlot;
use super::ud::{ring_or_push, Doorbell};
use super::wr::{Data, SendFlags};
use super::write::{inline_data_ds, record, Cursor, Limits, Ready, Written};
use super::{SendQueue, MAX_MESSAGE_SIZE};

/// One Ethernet frame to send: `header` then `data`, as the wire gets them (less what the
/// device inserts: a VLAN tag, and per TSO segment the headers it rewrites).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EthWr<'a> {
    /// Returned in the completion.
    pub wr_id: u64,
    /// Completion request, fence, solicited event.
    pub flags: SendFlags,
    /// The frame's first bytes, carried in the Ethernet segment: at least the device's
    /// [`EthCaps::min_inline`](crate::EthCaps::min_inline) (none with a VLAN insertion),
    /// and with TSO every header up to the payload.
    pub header: &'a [u8],
    /// The rest of the frame (with TSO: the payload cut into `mss`-byte segments).
    pub data: Data<'a>,
    /// Checksums the device computes.
    pub checksum: Checksum,
    /// A VLAN tag the device inserts after the MAC addresses.
    pub vlan: Option<VlanInsert>,
    /// TSO's segment payload size; 0 sends the frame as it is (SEND).
    pub mss: u16,
}

impl<'a> EthWr<'a> {
    /// A signaled SEND of `header` then `data`, no offload.
    pub fn new(wr_id: u64, header: &'a [u8], data: Data<'a>) -> EthWr<'a> {
        EthWr {
            wr_id,
            flags: SendFlags::SIGNALED,
            header,
            data,
            checksum: Checksum::NONE,
            vlan: None,
            mss: 0,
        }
    }
}

/// The raw entry of a queue: its limits, its room limit and the device's Ethernet caps.
#[derive(Clone, Copy, Debug)]
pub(super) struct EthEntry {
    pub(super) k: Limits,
    limit: u32,
    pub(super) caps: EthCaps,
}

impl EthEntry {
    pub(super) fn set_ready(&mut self, ready: bool, pi: u32) {
        self.k.ready = Ready::from(ready);
        if !ready {
            self.limit = pi;
        }
    }
}

/// The largest WQE: 63 DS.
pub(super) const MAX_WQE: usize = MAX_DS * DS;

impl<U: Uar> SendQueue<U> {
    /// Makes this the queue of a raw packet QP on a device with `caps`:
    /// [`SendQueue::post_eth`] and [`SendQueue::post_empw`] only.
    pub(crate) fn make_eth(&mut self, desc: &super::SqDesc, caps: EthCaps) {
        self.k.ready = Ready::EthOnly;
        self.c.limit = self.c.pi;
        self.eth = Some(EthEntry {
            k: Limits::new(desc, 1),
            limit: self.c.pi,
            caps,
        });
    }

    /// Posts one Ethernet frame and rings the doorbell (with any WQEs pushed before).
    /// Refused before anything is written: a queue that is not a raw packet QP's
    /// ([`PostError::WrongTransport`]), a frame the device would refuse
    /// ([`PostError::Ethernet`]), inline data over the queue's maximum, more gather
    /// entries than its maximum, a WQE over the device's largest, no room.
    pub fn post_eth(&mut self, wr: &EthWr<'_>) -> Result<(), PostError> {
        self.write_eth(wr, Doorbell::Now)
    }

    /// [`SendQueue::post_eth`] without the doorbell: the WQE reaches the device with the
    /// next [`SendQueue::ring_doorbell`] (or post).
    pub fn push_eth(&mut self, wr: &EthWr<'_>) -> Result<(), PostError> {
        self.write_eth(wr, Doorbell::Later)
    }

    fn write_eth(&mut self, wr: &EthWr<'_>, doorbell: Doorbell) -> Result<(), PostError> {
        let eth = self.eth_entry()?;
        let mut image = [0u8; MAX_WQE];
        let ds = eth.build(wr, self.c.pi, self.qpn, &mut image)?;
        self.post_image(eth, &image[..ds * DS], wr.wr_id, doorbell)
    }

    /// The raw entry, once the queue is known to be a raw packet QP's and not in error.
    pub(super) fn eth_entry(&self) -> Result<EthEntry, PostError> {
        let Some(eth) = self.eth else {
            let transport = match (self.ud.is_some(), self.k.ready.uc()) {
                (true, _) => Transport::Ud,
                (_, true) => Transport::Uc,
                _ => Transport::Rc,
            };
            return Err(PostError::WrongTransport { transport });
        };
        if self.shared.is_refused() {
            return Err(PostError::NotReadyToSend);
        }
        Ok(eth)
    }

    /// Copies the checked WQE `image` (its control segment written for the producer count)
    /// into the ring, records `wr_id` for the poller and rings the doorbell or leaves the
    /// WQE pushed; refused when the ring has no room for it.
    pub(super) fn post_image(
        &mut self,
        eth: EthEntry,
        image: &[u8],
        wr_id: u64,
        doorbell: Doorbell,
    ) -> Result<(), PostError> {
        let ds = image.len() / DS;
        let bbs = prm::wqebbs(ds) as u32;
        let mut cur = Cursor {
            pi: self.c.pi,
            limit: eth.limit,
        };
        if cur.limit.wrapping_sub(cur.pi) < bbs {
            eth.k
                .refresh_limit(&self.shared.tail, &mut cur, bbs, false)?;
        }
        let ring = &self.ring;
        let (mut wqe, start) = ring.wqe(
            cur.pi as usize * SEND_WQE_BB,
            bbs as usize * SEND_WQE_BB,
            &mut self.staging,
        );
        let first = ring.view().block(start);
        // SAFETY: `ds * 16 <= bbs * 64` bytes, the WQE's length.
        unsafe { wqe.bytes(0, image) };
        drop(wqe);
        let next_pi = cur.pi.wrapping_add(bbs);
        // SAFETY: `start` is a masked offset of this queue's ring, one slot per WQEBB.
        unsafe { record(&*self.shared, start, wr_id, next_pi, SqSlot::pack(0, 0)) };
        let written = Written {
            offset: start,
            bytes: ds * DS,
            bbs: bbs as usize,
            first,
        };
        if let Some(e) = &mut self.eth {
            e.limit = cur.limit;
        }
        self.c = Cursor {
            pi: next_pi,
            limit: next_pi,
        };
        ring_or_push!(self, written, next_pi, doorbell);
        Ok(())
    }
}

impl EthEntry {
    /// Checks `wr` and writes its WQE (producer count `pi`, QP `qpn`) into `image`;
    /// returns its size in DS.
    fn build(
        &self,
        wr: &EthWr<'_>,
        pi: u32,
        qpn: u32,
        image: &mut [u8; MAX_WQE],
    ) -> Result<usize, PostError> {
        let refuse = |why| Err(PostError::Ethernet(why));
        let header = wr.header;
        if wr.vlan.is_some() && (!header.is_empty() || self.caps.min_inline != 0) {
            return refuse(EthRefusal::VlanWithInlineHeader);
        }
        if wr.vlan.is_none() && header.len() < self.caps.min_inline {
            return refuse(EthRefusal::HeaderTooShort {
                len: header.len(),
                min: self.caps.min_inline,
            });
        }
        let (data_ds, data_len) = match wr.data {
            Data::Inline(bytes) => {
                if bytes.len() > self.k.max_inline {
                    return Err(PostError::InlineTooLarge {
                        len: bytes.len(),
                        max: self.k.max_inline,
                    });
                }
                (inline_data_ds(bytes.len()), bytes.len() as u64)
            }
            Data::Sges(sges) => {
                if sges.len() > self.k.max_sge {
                    return Err(PostError::TooManySges {
                        count: sges.len(),
                        max: self.k.max_sge,
                    });
                }
                let total: u64 = sges.iter().map(|s| u64::from(s.len)).sum();
                if total > MAX_MESSAGE_SIZE {
                    return Err(PostError::MessageTooLarge { len: total });
                }
                (sges.iter().filter(|s| s.len != 0).count(), total)
            }
        };
        if header.is_empty() && data_len == 0 {
            return refuse(EthRefusal::EmptyFrame);
        }
        let opcode = if wr.mss == 0 {
            Opcode::Send
        } else {
            if header.len() < prm::ETH_L2_MIN_HEADER_SIZE {
                return refuse(EthRefusal::TsoHeaderTooShort { len: header.len() });
            }
            if data_len > u64::from(self.caps.max_tso) {
                return refuse(EthRefusal::TsoTooLarge {
                    len: data_len,
                    max: self.caps.max_tso,
                });
            }
            Opcode::Tso
        };
        let eseg_bytes = EthSeg::size(header.len());
        let ds = 1 + eseg_bytes / DS + data_ds;
        if ds > self.k.max_ds {
            return Err(PostError::WqeTooLarge {
                ds,
                max_ds: self.k.max_ds,
            });
        }
        let ctrl = CtrlSeg::new(
            opcode as u8,
            0,
            pi as u16,
            qpn,
            ds as u8,
            wr.flags.fm_ce_se(),
            Be32::new(0),
        );
        image[..DS].copy_from_slice(&ctrl.to_bytes());
        let eseg = match wr.vlan {
            Some(v) => EthSeg::vlan_insert(wr.checksum.0, v.tci, v.svlan),
            None => EthSeg::new(wr.checksum.0, wr.mss, header),
        };
        image[DS..2 * DS].copy_from_slice(&eseg.to_bytes()[..DS]);
        if header.len() > 2 {
            image[2 * DS..2 * DS + header.len() - 2].copy_from_slice(&header[2..]);
        }
        let at = DS + eseg_bytes;
        match wr.data {
            Data::Inline(bytes) if !bytes.is_empty() => {
                let seg = InlineSeg::new(bytes.len() as u32);
                image[at..at + 4].copy_from_slice(&seg.to_bytes());
                image[at + 4..at + 4 + bytes.len()].copy_from_slice(bytes);
            }
            Data::Inline(_) => {}
            Data::Sges(sges) => {
                for (i, s) in sges.iter().filter(|s| s.len != 0).enumerate() {
                    let seg = DataSeg::new(s.len, s.lkey, s.addr).to_bytes();
                    image[at + i * DS..at + (i + 1) * DS].copy_from_slice(&seg);
                }
            }
        }
        Ok(ds)
    }
}
