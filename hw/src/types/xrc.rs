//! XRC: the device's cap and the target's answer to a request it cannot place
//! (docs/model.md, "XRC").

/// XRC capabilities and behaviour of a NIC ([`NicConfig::xrc`]).
///
/// [`NicConfig::xrc`]: crate::NicConfig::xrc
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct XrcConfig {
    /// The HCA cap `xrc` (`IBV_DEVICE_XRC`, which ConnectX-4 and later report): false
    /// refuses XRC domains ([`Nic::alloc_xrcd`](crate::Nic::alloc_xrcd): the kernel's
    /// `mlx5_ib_alloc_xrcd` answers EOPNOTSUPP without it), and so every XRC object.
    pub supported: bool,
    /// What an XRC target does with a request naming an SRQ it may not use ([`XrcRefusal`]).
    pub refusal: XrcRefusal,
}

impl Default for XrcConfig {
    fn default() -> Self {
        XrcConfig {
            supported: true,
            refusal: XrcRefusal::Drop,
        }
    }
}

/// What an XRC target QP does with a request whose XRC segment names no XRC SRQ of this
/// NIC, or an XRC SRQ of another XRC domain. The kernel's XRC domains exist to "limit
/// which XRC SRQs an incoming message can target" (Linux commit 59991f94eb32); how a
/// ConnectX refuses such a message is not public, so the model offers two readings.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum XrcRefusal {
    /// Silently dropped (the default): the initiator hears nothing, retransmits on its
    /// timeout and completes with TRANSPORT_RETRY_EXC_ERR after `retry_cnt`; the target
    /// stays as it is. The one public implementation does this: the rxe XRC series
    /// (linux-rdma, September 2022, "RDMA/rxe: Extend rxe_recv.c to support xrc") fails
    /// `hdr_check` in its `check_xrcd`, which drops the packet.
    #[default]
    Drop,
    /// An Invalid Request NAK, as an RC responder answers a request it cannot execute:
    /// the initiator completes with REMOTE_INVAL_REQ_ERR (0x12) and moves to ERR, the
    /// target moves to ERR with `AsyncEvent::QpRequestError` (no receive was consumed, so
    /// no CQE can report it).
    Nak,
}

/// What makes an SRQ an XRC SRQ (`ibv_create_srq_ex` with `IBV_SRQT_XRC`: its XRC domain
/// and CQ, `comp_mask` `IBV_SRQ_INIT_ATTR_XRCD | IBV_SRQ_INIT_ATTR_CQ`), given to
/// [`Nic::create_xrc_srq`](crate::Nic::create_xrc_srq) with the ring's [`SrqParams`].
///
/// [`SrqParams`]: crate::SrqParams
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct XrcSrqParams {
    /// The XRC domain ([`Nic::alloc_xrcd`](crate::Nic::alloc_xrcd)) whose target QPs may
    /// deliver into it.
    pub xrcd: u32,
    /// The CQ its receive completions go to (an XRC target QP has none of its own).
    pub cqn: u32,
    /// The user index (24 bits) its completions carry under CQE version 1: rdma-core's
    /// `mlx5_create_xrc_srq` stores the SRQ in the context's user-index table, and
    /// `mlx5_poll_cq_v1` finds an XRC SRQ's completions by it (`MLX5_RSC_TYPE_XSRQ`).
    pub user_index: u32,
}
