//! The plain data types every layer shares: access rights, device and port limits,
//! endpoints, QP states and transitions, QP and connection settings. They depend on nothing
//! else in the crate, so the backends, the errors and the control objects all point down
//! to them.

use std::ops::BitOr;

/// Memory and QP access rights (the values of `ibv_access_flags`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Access(pub u32);

impl Access {
    /// Local read only.
    pub const NONE: Access = Access(0);
    /// The device may write the memory (receives, READ and atomic results).
    pub const LOCAL_WRITE: Access = Access(1);
    /// Peers may RDMA WRITE.
    pub const REMOTE_WRITE: Access = Access(2);
    /// Peers may RDMA READ.
    pub const REMOTE_READ: Access = Access(4);
    /// Peers may run atomics.
    pub const REMOTE_ATOMIC: Access = Access(8);
    /// Every right.
    pub const ALL: Access = Access(15);

    /// True if every right in `other` is in `self`.
    pub fn contains(self, other: Access) -> bool {
        self.0 & other.0 == other.0
    }
}

impl BitOr for Access {
    type Output = Access;
    fn bitor(self, rhs: Access) -> Access {
        Access(self.0 | rhs.0)
    }
}

/// Device limits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeviceCaps {
    /// Largest send queue in WQEBBs, and receive queue in WQEs (`ibv_device_attr.max_qp_wr`).
    pub max_sq_wqebbs: u32,
    /// Largest send WQE in bytes.
    pub max_wqe_size: u32,
    /// Largest send gather list.
    pub max_send_sge: u32,
    /// Largest receive scatter list.
    pub max_recv_sge: u32,
    /// Largest CQ.
    pub max_cqe: u32,
    /// Largest inline payload the device accepts in one WQE.
    pub max_inline: u32,
    /// BlueFlame half size (0: no BlueFlame, doorbells only).
    pub bf_size: u32,
    /// Outstanding READ / atomic operations per QP.
    pub max_rd_atomic: u8,
    /// The device writes the results of 8-byte atomics (standard and masked) in host byte
    /// order (`atomic_req_8B_endianness_mode` 1, which the kernel sets whenever the device
    /// supports it and reports as `IBV_ATOMIC_HCA`); false: big-endian. 4-byte masked
    /// results are big-endian either way. [`SendOp::atomic_result`](crate::SendOp::atomic_result)
    /// decodes them.
    pub atomic_8b_host_order: bool,
}

/// A port's addressing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PortInfo {
    /// Local identifier (InfiniBand).
    pub lid: u16,
    /// GID (RoCE, or IB with GRH).
    pub gid: [u8; 16],
    /// Active MTU in bytes.
    pub active_mtu: u32,
    /// Largest message in bytes (`ibv_port_attr.max_msg_sz`; ConnectX ports report 2^30).
    pub max_msg_size: u32,
}

/// Everything a peer needs to connect to a QP.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Endpoint {
    /// LID of the port.
    pub lid: u16,
    /// GID of the port.
    pub gid: [u8; 16],
    /// QP number.
    pub qpn: u32,
    /// First PSN the QP sends with.
    pub psn: u32,
}

/// QP states as the driver tracks them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QpState {
    /// Created or reset; nothing may be posted.
    Reset,
    /// Receives may be posted.
    Init,
    /// Ready to receive.
    Rtr,
    /// Ready to send.
    Rts,
    /// A WQE failed: everything outstanding is flushed; reset to reuse.
    Err,
}

/// A QP state change, with the attributes each step needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transition {
    /// RESET → INIT.
    Init {
        /// Port (from 1).
        port: u8,
        /// Rights granted to the peer.
        access: Access,
    },
    /// INIT → RTR.
    Rtr {
        /// The peer.
        remote: Endpoint,
        /// Path MTU in bytes.
        path_mtu: u32,
        /// Incoming READ / atomic depth.
        max_dest_rd_atomic: u8,
        /// RNR NAK timer code.
        min_rnr_timer: u8,
        /// GRH hop limit (RoCE; InfiniBand within a subnet sends no GRH).
        hop_limit: u8,
        /// GRH traffic class (RoCE).
        traffic_class: u8,
    },
    /// RTR → RTS.
    Rts {
        /// First PSN sent.
        sq_psn: u32,
        /// Local ACK timeout code.
        timeout: u8,
        /// Transport retries (0–7).
        retry_cnt: u8,
        /// RNR retries (0–7, 7 = forever).
        rnr_retry: u8,
        /// Outgoing READ / atomic depth.
        max_rd_atomic: u8,
    },
    /// → ERR.
    Err,
    /// → RESET.
    Reset,
}

/// QP sizes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QpConfig {
    /// Send queue size in 64-byte WQEBBs (rounded up to a power of two).
    pub sq_wqebbs: u32,
    /// Receive queue size in WQEs (rounded up to a power of two); ignored with an SRQ.
    pub rq_wqes: u32,
    /// Largest send gather list.
    pub max_send_sge: u32,
    /// Largest receive scatter list.
    pub max_recv_sge: u32,
    /// Largest inline payload.
    pub max_inline: u32,
}

impl Default for QpConfig {
    fn default() -> Self {
        QpConfig {
            sq_wqebbs: 256,
            rq_wqes: 256,
            max_send_sge: 4,
            max_recv_sge: 4,
            max_inline: 220,
        }
    }
}

/// Connection attributes (perftest's defaults).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConnectOptions {
    /// Port (from 1).
    pub port: u8,
    /// Rights granted to the peer on this QP.
    pub access: Access,
    /// Path MTU in bytes.
    pub path_mtu: u32,
    /// Local ACK timeout code.
    pub timeout: u8,
    /// Transport retries.
    pub retry_cnt: u8,
    /// RNR retries (7 = forever).
    pub rnr_retry: u8,
    /// RNR NAK timer code.
    pub min_rnr_timer: u8,
    /// READ / atomic depth, both directions.
    pub rd_atomic: u8,
    /// GRH hop limit on RoCE (ignored on InfiniBand and by the model).
    pub hop_limit: u8,
    /// GRH traffic class on RoCE (ignored on InfiniBand and by the model).
    pub traffic_class: u8,
}

impl Default for ConnectOptions {
    fn default() -> Self {
        ConnectOptions {
            port: 1,
            access: Access::REMOTE_WRITE | Access::REMOTE_READ | Access::REMOTE_ATOMIC,
            path_mtu: 4096,
            timeout: 14,
            retry_cnt: 7,
            rnr_retry: 7,
            min_rnr_timer: 12,
            rd_atomic: 16,
            hop_limit: 64,
            traffic_class: 0,
        }
    }
}
