//! A QP's state: its rings' places and counters, its connection, PSNs and retries, and its
//! PCIe counters.

use crate::pcie::PcieCounters;
use crate::types::{Access, QpState, Transport};

/// The remote end of a connected QP (from RTR).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Dest {
    /// Destination LID (0: route by GID).
    pub(crate) lid: u16,
    pub(crate) gid: [u8; 16],
    pub(crate) qpn: u32,
}

/// Why the head of a send queue is waiting.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Stall {
    /// The responder answered RNR NAK.
    Rnr,
    /// A request packet (or its ACK) was lost: retransmit after the timeout.
    Lost,
}

/// The QP context. `Default` is a QP in RESET with nothing attached, for the XRC target
/// QP, which has no rings, PD or CQ of its own.
#[derive(Default)]
pub(crate) struct Qp {
    pub(crate) qpn: u32,
    pub(crate) transport: Transport,
    /// Q_Key incoming datagrams must carry (UD).
    pub(crate) qkey: u32,
    pub(crate) pdn: u32,
    pub(crate) send_cq: usize,
    pub(crate) recv_cq: usize,
    pub(crate) srq: Option<usize>,
    /// Receives of at most the CQE's data size go into the CQE (`QpParams::scatter_to_cqe`).
    pub(crate) scatter_cqe: bool,
    pub(crate) sq_buf: u64,
    /// The address space of the QP's memory (`host`'s space bits, of its rings): the
    /// addresses its WQEs name, and the remote addresses of requests it receives, are in it.
    pub(crate) space: u64,
    pub(crate) log_sq: u8,
    pub(crate) rq_buf: u64,
    pub(crate) log_rq: u8,
    pub(crate) log_rq_stride: u8,
    pub(crate) dbrec: u64,
    pub(crate) uar: u32,
    pub(crate) state: QpState,
    pub(crate) access: Access,
    pub(crate) dest: Dest,
    /// Expected PSN of the next incoming request.
    pub(crate) rq_psn: u32,
    /// A sequence NAK went out since the last request in sequence: the responder sends one
    /// per sequence error and drops the rest silently.
    pub(crate) psn_nak_sent: bool,
    pub(crate) mtu: u32,
    /// PSN of the next new request packet (`next_send_psn`): advanced when a message is
    /// first transmitted, moved back only by an RNR NAK, which names the PSN the responder
    /// still expects.
    pub(crate) sq_psn: u32,
    /// First PSN of the head message once transmitted, until it is acknowledged: its
    /// retransmissions reuse it.
    pub(crate) head_psn: Option<u32>,
    pub(crate) retry_cnt: u8,
    pub(crate) rnr_retry: u8,
    /// Service level of the primary path (RTR).
    pub(crate) sl: u8,
    /// User index written into CQEs under CQE version 1.
    pub(crate) user_index: u32,
    /// A DCT's access key (set at RTR).
    pub(crate) dc_key: u64,
    /// A DCI's current connection (one per DCI, whatever its streams: docs/model.md).
    pub(crate) dc: Option<DcConn>,
    /// A DCI's stream channels, and the ids of its streams in error.
    pub(crate) dci_streams: crate::types::DciStreams,
    pub(crate) errored_streams: Vec<u16>,
    /// Outgoing READ/atomic depth (RTS) and incoming depth (RTR), as set.
    pub(crate) max_rd_atomic: u8,
    pub(crate) max_dest_rd_atomic: u8,
    /// First BB of the next WQE to execute (16-bit BB counter).
    pub(crate) sq_ci: u16,
    /// Producer known from the last doorbell.
    pub(crate) sq_pi: u16,
    /// BBs fetched (or delivered by BlueFlame) so far.
    pub(crate) sq_fetched: u16,
    pub(crate) stall: Option<Stall>,
    pub(crate) retries: u8,
    pub(crate) rnr_retries: u8,
    /// Receive WQEs consumed (16-bit counter).
    pub(crate) rq_ci: u16,
    /// RQ producer last read from the doorbell record.
    pub(crate) rq_known_pi: u16,
    /// A CQE of this QP was lost to a CQ in error.
    pub(crate) fatal: bool,
    /// PSN and original value of the last atomic executed as responder, to answer a
    /// duplicate of it.
    pub(crate) atomic_replay: Option<(u32, u64)>,
    /// `Fault::DeferExecution`: a doorbell queued work for `progress()`.
    pub(crate) deferred: bool,
    /// The BBs `[from, to)` copied into `snapshot` at their deferred doorbells and not yet
    /// executed: a WQE read from the ring among them is compared with its copy whichever
    /// run reads it (the deferred one, a later doorbell's, a retry's after a stall).
    pub(crate) snapped: Option<(u16, u16)>,
    /// BlueFlame WQEs (first BB, bytes) delivered with deferred doorbells.
    pub(crate) deferred_bf: Vec<(u16, Box<[u8]>)>,
    /// The send ring as deferred doorbells found it (one copy per slot; empty until the
    /// first deferred doorbell).
    pub(crate) snapshot: Vec<u8>,
    pub(crate) pcie: PcieCounters,
    /// An XRC target's XRC domain (0: not an XRC target).
    pub(crate) xrcd: u32,
    /// `block_lb_mc`: multicast this QP sends is not looped back to its NIC's QPs.
    pub(crate) block_mcast_loopback: bool,
    /// Its rate limit (`Nic::modify_qp_rate_limit`), if any.
    pub(crate) pacer: Option<super::pace::Pacer>,
}

impl Qp {
    pub(crate) fn sq_mask(&self) -> u16 {
        ((1u32 << self.log_sq) - 1) as u16
    }

    /// Record a new producer `pi`; returns the first BB not yet fetched (kept only if it
    /// lies within the new outstanding range).
    pub(crate) fn advance_producer(&mut self, pi: u16) -> u16 {
        let ci = self.sq_ci;
        let fetched = if self.sq_fetched.wrapping_sub(ci) <= pi.wrapping_sub(ci) {
            self.sq_fetched
        } else {
            ci
        };
        self.sq_pi = pi;
        self.sq_fetched = pi;
        fetched
    }
}

/// A DCI's connection: the DCT it talks to, and the part of that DCT's responder context
/// that belongs to it (the PSN it expects next), set up by the connect handshake.
#[derive(Clone, Copy, Debug)]
pub(crate) struct DcConn {
    pub(crate) nic: usize,
    pub(crate) dctn: u32,
    pub(crate) key: u64,
    pub(crate) rq_psn: u32,
}
