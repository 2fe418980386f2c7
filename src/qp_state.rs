//! A QP's states and the transitions between them, with the attributes each step takes
//! (`ibv_modify_qp`'s attribute masks per transport: the kernel's `qp_state_table`).

use crate::types::{Access, Endpoint};

/// QP states as the driver tracks them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum QpState {
    /// Created or reset; nothing may be posted.
    Reset,
    /// Receives may be posted.
    Init,
    /// Ready to receive.
    Rtr,
    /// Ready to send.
    Rts,
    /// Send queue error (UD and UC): a send failed and the rest of the send queue was
    /// flushed; receives go on. [`Qp::recover_sq`](crate::Qp::recover_sq) returns to RTS.
    Sqe,
    /// A WQE failed: everything outstanding is flushed; reset to reuse.
    Err,
}

/// A QP state change, with the attributes each step needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum Transition {
    /// RESET → INIT.
    Init {
        /// Port (from 1).
        port: u8,
        /// Rights granted to the peer.
        access: Access,
        /// P_Key table index.
        pkey_index: u16,
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
        /// Service level (4 bits).
        sl: u8,
        /// GRH flow label (RoCE; 20 bits).
        flow_label: u32,
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
    /// INIT → RTR of a UC QP (`IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
    /// IBV_QP_RQ_PSN`: no READ / atomic depth, no RNR timer).
    RtrUc {
        /// The peer.
        remote: Endpoint,
        /// Path MTU in bytes.
        path_mtu: u32,
        /// GRH hop limit (RoCE; InfiniBand within a subnet sends no GRH).
        hop_limit: u8,
        /// GRH traffic class (RoCE).
        traffic_class: u8,
        /// Service level (4 bits).
        sl: u8,
        /// GRH flow label (RoCE; 20 bits).
        flow_label: u32,
    },
    /// RTR → RTS of a UC QP (`IBV_QP_SQ_PSN` only: no timeout, retries or READ depth).
    RtsUc {
        /// First PSN sent.
        sq_psn: u32,
    },
    /// INIT → RTR of an XRC initiator: UC's attributes (`IBV_QP_AV | IBV_QP_PATH_MTU |
    /// IBV_QP_DEST_QPN | IBV_QP_RQ_PSN`; the kernel's `qp_state_table` allows no READ /
    /// atomic depth or RNR timer for `IB_QPT_XRC_INI`, which receives no requests). Its
    /// RTR → RTS is [`Transition::Rts`].
    RtrXrcIni {
        /// The peer (the XRC target).
        remote: Endpoint,
        /// Path MTU in bytes.
        path_mtu: u32,
        /// GRH hop limit (RoCE; InfiniBand within a subnet sends no GRH).
        hop_limit: u8,
        /// GRH traffic class (RoCE).
        traffic_class: u8,
        /// Service level (4 bits).
        sl: u8,
        /// GRH flow label (RoCE; 20 bits).
        flow_label: u32,
    },
    /// RTR → RTS of an XRC target (`IBV_QP_TIMEOUT | IBV_QP_SQ_PSN`: the kernel's
    /// `qp_state_table` requires and allows no retry counts or outgoing READ depth for
    /// `IB_QPT_XRC_TGT`, which sends no requests). Its INIT → RTR is [`Transition::Rtr`].
    RtsXrcTgt {
        /// First PSN sent (of its responses).
        sq_psn: u32,
        /// Local ACK timeout code.
        timeout: u8,
    },
    /// RESET → INIT of a UD QP (`IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY`).
    InitUd {
        /// Port (from 1).
        port: u8,
        /// The Q_Key datagrams to this QP must carry.
        qkey: u32,
        /// P_Key table index.
        pkey_index: u16,
    },
    /// INIT → RTR of a UD QP: nothing remote.
    RtrUd,
    /// RTR → RTS of a UD QP (`IBV_QP_SQ_PSN` only).
    RtsUd {
        /// First PSN sent.
        sq_psn: u32,
    },
    /// RESET → INIT of a DCI (`IBV_QP_PKEY_INDEX | IBV_QP_PORT`: no access flags; the
    /// kernel's `modify_dci_qp_is_ok`). A DCI's RTR → RTS is [`Transition::Rts`] (the same
    /// attribute mask), a DCT's RESET → INIT is [`Transition::Init`].
    InitDci {
        /// Port (from 1).
        port: u8,
        /// P_Key table index.
        pkey_index: u16,
    },
    /// INIT → RTR of a DCI (`IBV_QP_PATH_MTU`, nothing remote).
    RtrDci {
        /// Path MTU in bytes.
        path_mtu: u32,
    },
    /// INIT → RTR of a DCT (`IBV_QP_MIN_RNR_TIMER | IBV_QP_AV | IBV_QP_PATH_MTU`, the
    /// kernel's `mlx5_ib_modify_dct`): the DCT's number exists from here on. On RoCE the
    /// address carries `is_global`, the SGID index and the hop limit (without them the
    /// kernel answers EINVAL).
    RtrDct {
        /// Path MTU in bytes.
        path_mtu: u32,
        /// RNR NAK timer code.
        min_rnr_timer: u8,
        /// GRH hop limit (RoCE).
        hop_limit: u8,
        /// GRH traffic class (RoCE).
        traffic_class: u8,
        /// Service level (4 bits) of the DCT's responses.
        sl: u8,
        /// GRH flow label (RoCE; 20 bits).
        flow_label: u32,
    },
    /// RESET → INIT of a raw packet QP (`IBV_QP_PORT` alone): its receive queue takes
    /// frames from here on.
    InitRaw {
        /// Port (from 1).
        port: u8,
    },
    /// INIT → RTR of a raw packet QP: no attributes.
    RtrRaw,
    /// RTR → RTS of a raw packet QP: no attributes; its send queue sends from here on.
    RtsRaw,
    /// SQE → RTS of a UD or UC QP (`IBV_QP_STATE | IBV_QP_CUR_STATE`, current state SQE).
    SqeToRts,
    /// → ERR.
    Err,
    /// → RESET.
    Reset,
}
