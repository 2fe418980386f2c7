//! What the NIC hands the driver besides CQEs (completion and asynchronous events), and the
//! faults a test may inject.

/// A completion event: what the kernel hands on through a completion channel
/// (`ibv_get_cq_event`). Asynchronous events are [`AsyncEvent`], on their own queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// An armed CQ produced a qualifying CQE.
    Completion {
        /// The CQ.
        cqn: u32,
    },
}

/// An affiliated asynchronous event: what the kernel hands on through the context's async
/// fd (`ibv_get_async_event`), each named after the EQE type the NIC writes and the
/// `ibv_event_type` the kernel's mlx5 driver turns it into (`mlx5_ib_cq_event`,
/// `mlx5_ib_qp_event`). Delivered by [`Nic::poll_async_event`](crate::Nic::poll_async_event),
/// never mixed with completion events.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AsyncEvent {
    /// `MLX5_EVENT_TYPE_CQ_ERROR` → `IBV_EVENT_CQ_ERR`: CQ overrun; the CQ stopped writing
    /// CQEs.
    CqError {
        /// The CQ.
        cqn: u32,
    },
    /// `MLX5_EVENT_TYPE_WQ_CATAS_ERROR` → `IBV_EVENT_QP_FATAL`: the QP could not report a
    /// completion (its CQ is in error) and went to ERR.
    QpFatal {
        /// The QP.
        qpn: u32,
    },
    /// `MLX5_EVENT_TYPE_WQ_INVAL_REQ_ERROR` → `IBV_EVENT_QP_REQ_ERR`: as responder the QP
    /// NAKed an invalid request that consumed no receive WQE (so no CQE reports it) and went
    /// to ERR.
    QpRequestError {
        /// The QP.
        qpn: u32,
    },
    /// `MLX5_EVENT_TYPE_WQ_ACCESS_ERROR` → `IBV_EVENT_QP_ACCESS_ERR`: as responder the QP
    /// NAKed a remote access violation that consumed no receive WQE and went to ERR.
    QpAccessError {
        /// The QP.
        qpn: u32,
    },
    /// `MLX5_EVENT_TYPE_SRQ_LAST_WQE` → `IBV_EVENT_QP_LAST_WQE_REACHED`: a QP attached to
    /// an SRQ went to ERR and takes no more WQEs from it.
    LastWqeReached {
        /// The QP.
        qpn: u32,
    },
}

/// Fault injection knobs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// Discard BlueFlame data (the chunks still ring the doorbell), forcing ring fetches.
    DropBlueFlame(bool),
    /// Lose the next `count` request packets sent by `qpn` (any QP of this NIC if `None`).
    LosePackets {
        /// Requester QP, or any.
        qpn: Option<u32>,
        /// Packets to lose.
        count: u32,
    },
    /// Let the next `skip` request packets of `qpn` (any QP of this NIC if `None`) through,
    /// then lose `count`: loses chosen packets, e.g. the third packet of a message or the
    /// second WQE of a batch. A message that loses any packet is retransmitted whole.
    LosePacketsAfter {
        /// Requester QP, or any.
        qpn: Option<u32>,
        /// Packets to let through first.
        skip: u32,
        /// Packets to lose.
        count: u32,
    },
    /// Lose the next `count` positive responses (ACK, READ response, atomic response) to
    /// requester `qpn` (any QP of this NIC if `None`): the responder has executed the
    /// request, the requester retransmits it on `progress()`, and the responder answers the
    /// duplicate without executing it again.
    LoseResponses {
        /// Requester QP, or any.
        qpn: Option<u32>,
        /// Responses to lose.
        count: u32,
    },
    /// Hold CQE writes back until `progress()` (while true).
    DelayCqes(bool),
    /// While true, a send doorbell only queues its work (the WQE fetch is accounted at the
    /// doorbell) and the next `progress()` executes it, as a real NIC runs in parallel with
    /// the CPU: WQEs are read from the ring and payloads gathered then, so a ring slot or
    /// gather buffer the driver reuses before its completion shows up as corrupted data. A
    /// WQE read from the ring that differs from the ring at its doorbell counts in
    /// `Stats::ring_overwritten`.
    DeferExecution(bool),
    /// Answer the next `count` messages needing a receive at responder `qpn` (any if `None`)
    /// with an RNR NAK even if a receive is posted.
    Rnr {
        /// Responder QP, or any.
        qpn: Option<u32>,
        /// Messages to refuse.
        count: u32,
    },
    /// The next atomic a responder of this NIC executes without PCIe AtomicOps finds a CPU
    /// store of `value` (host order, 4 or 8 bytes as the atomic) to its target between its
    /// DMA read and its DMA write: the NIC's write then overwrites it and the store is lost.
    /// With `NicConfig::pcie_atomic_ops` the store lands before the atomic, which sees it.
    HostStoreInAtomic {
        /// The value the CPU stores.
        value: u64,
    },
    /// Flip every bit of the first byte of each of the next `count` payload writes into
    /// host memory (receive scatter, RDMA WRITE target, READ result) by QP `qpn` (any QP of
    /// this NIC if `None`), after the bytes land: corruption between the wire and host
    /// memory, which no public source describes; a knob for testing data checks.
    CorruptPayload {
        /// The QP whose payload writes are corrupted, or any.
        qpn: Option<u32>,
        /// Payload writes to corrupt.
        count: u32,
    },
    /// While true the NIC sees PCIe back pressure: CQs with compression compress under
    /// [`ZipPolicy::UnderBackpressure`](crate::ZipPolicy::UnderBackpressure).
    PcieBackpressure(bool),
    /// Remove every pending fault.
    Clear,
}
