//! Asynchronous events: what the device reports outside any CQE.
//!
//! Completions and their completion events (an armed CQ) tell the application what its work
//! requests did. Some trouble cannot be told that way: a CQ that overran cannot take the CQE
//! that would report it, a responder QP that rejects an RDMA WRITE consumed no receive to
//! complete with an error, a port goes down. The device reports these as asynchronous
//! events, and the kernel hands them to the application through the context's async fd
//! (`ibv_get_async_event`), apart from the completion channel.
//!
//! [`Context::poll_async_event`](crate::Context::poll_async_event) takes the next one
//! without blocking, [`Context::wait_async_event`](crate::Context::wait_async_event) waits
//! for one up to a timeout. Each is an [`AsyncEvent`] naming the object it is about by
//! number (CQN, QPN, SRQN, port), never by pointer: the object may be gone by the time the
//! application looks.
//!
//! An event that says the device moved a QP to ERR on its own ([`AsyncEvent::QpFatal`],
//! [`AsyncEvent::QpRequestError`], [`AsyncEvent::QpAccessError`]) is also recorded: from the
//! moment the context hands it out, [`Qp::state`](crate::Qp::state) of that QP reports
//! [`QpState::Err`](crate::QpState::Err) and posts are refused, as after an error CQE.
//! Nothing is recorded for events nobody reads, so drain them before
//! [`Qp::reset`](crate::Qp::reset) (the verbs rule: finish error processing before moving
//! a QP to RESET); an event read after the reset marks the QP ERR again.

use core::fmt;

/// An asynchronous event (`ibv_event_type`, with the object it names).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum AsyncEvent {
    /// `IBV_EVENT_CQ_ERR`: the CQ went to error (overrun: the consumer index lagged a whole
    /// ring; or a protection error) and writes no more CQEs. Destroy it and its QPs.
    CqError {
        /// The CQ.
        cqn: u32,
    },
    /// `IBV_EVENT_QP_FATAL`: the QP could not report a completion (its CQ is in error, or
    /// a work queue error) and is in ERR.
    QpFatal {
        /// The QP.
        qpn: u32,
    },
    /// `IBV_EVENT_QP_REQ_ERR`: as responder the QP received an invalid request (an
    /// operation it does not allow, a misaligned atomic, an unsupported opcode) that no CQE
    /// reports, and is in ERR.
    QpRequestError {
        /// The QP.
        qpn: u32,
    },
    /// `IBV_EVENT_QP_ACCESS_ERR`: as responder the QP rejected a remote access (bad rkey,
    /// out of bounds, missing right) that no CQE reports, and is in ERR.
    QpAccessError {
        /// The QP.
        qpn: u32,
    },
    /// `IBV_EVENT_COMM_EST`: the first packet arrived on a QP in RTR.
    CommEstablished {
        /// The QP.
        qpn: u32,
    },
    /// `IBV_EVENT_SQ_DRAINED`: the send queue of a QP in SQD has no outstanding work.
    SqDrained {
        /// The QP.
        qpn: u32,
    },
    /// `IBV_EVENT_PATH_MIG`: the QP migrated to its alternate path.
    PathMigrated {
        /// The QP.
        qpn: u32,
    },
    /// `IBV_EVENT_PATH_MIG_ERR`: a path migration request was not accepted.
    PathMigrationError {
        /// The QP.
        qpn: u32,
    },
    /// `IBV_EVENT_QP_LAST_WQE_REACHED`: a QP on an SRQ is in ERR and takes no more WQEs
    /// from the SRQ.
    LastWqeReached {
        /// The QP.
        qpn: u32,
    },
    /// `IBV_EVENT_SRQ_ERR`: the SRQ failed; its QPs are in error.
    SrqError {
        /// The SRQ.
        srqn: u32,
    },
    /// `IBV_EVENT_SRQ_LIMIT_REACHED`: the SRQ fell below its armed limit.
    SrqLimitReached {
        /// The SRQ.
        srqn: u32,
    },
    /// `IBV_EVENT_PORT_ACTIVE`: the link came up.
    PortActive {
        /// The port (from 1).
        port: u8,
    },
    /// `IBV_EVENT_PORT_ERR`: the link went down.
    PortError {
        /// The port (from 1).
        port: u8,
    },
    /// `IBV_EVENT_LID_CHANGE`: the port's LID changed.
    LidChange {
        /// The port (from 1).
        port: u8,
    },
    /// `IBV_EVENT_PKEY_CHANGE`: the port's P_Key table changed.
    PkeyChange {
        /// The port (from 1).
        port: u8,
    },
    /// `IBV_EVENT_GID_CHANGE`: the port's GID table changed (RoCE addresses).
    GidChange {
        /// The port (from 1).
        port: u8,
    },
    /// `IBV_EVENT_SM_CHANGE`: the subnet manager of the port changed.
    SmChange {
        /// The port (from 1).
        port: u8,
    },
    /// `IBV_EVENT_CLIENT_REREGISTER`: the subnet manager asks for re-registration.
    ClientReregister {
        /// The port (from 1).
        port: u8,
    },
    /// `IBV_EVENT_DEVICE_FATAL`: the device failed; every object on it is unusable. Close
    /// the context.
    DeviceFatal,
    /// An event this crate does not name (`IBV_EVENT_WQ_FATAL`, or a type added after it
    /// was written), with its raw `ibv_event_type`.
    Other {
        /// The `ibv_event_type` value.
        event_type: u32,
    },
}

impl AsyncEvent {
    /// The QP the device moved to ERR on its own, for the events that say so.
    pub fn failed_qp(&self) -> Option<u32> {
        match *self {
            AsyncEvent::QpFatal { qpn }
            | AsyncEvent::QpRequestError { qpn }
            | AsyncEvent::QpAccessError { qpn } => Some(qpn),
            _ => None,
        }
    }

    /// The CQ the device moved to error, for [`AsyncEvent::CqError`].
    pub fn failed_cq(&self) -> Option<u32> {
        match *self {
            AsyncEvent::CqError { cqn } => Some(cqn),
            _ => None,
        }
    }
}

impl fmt::Display for AsyncEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            AsyncEvent::CqError { cqn } => write!(f, "CQ {cqn:#x} in error (overrun)"),
            AsyncEvent::QpFatal { qpn } => write!(f, "QP {qpn:#x} fatal error"),
            AsyncEvent::QpRequestError { qpn } => write!(f, "QP {qpn:#x} invalid request"),
            AsyncEvent::QpAccessError { qpn } => write!(f, "QP {qpn:#x} access violation"),
            AsyncEvent::CommEstablished { qpn } => {
                write!(f, "QP {qpn:#x} communication established")
            }
            AsyncEvent::SqDrained { qpn } => write!(f, "QP {qpn:#x} send queue drained"),
            AsyncEvent::PathMigrated { qpn } => write!(f, "QP {qpn:#x} path migrated"),
            AsyncEvent::PathMigrationError { qpn } => write!(f, "QP {qpn:#x} path migration error"),
            AsyncEvent::LastWqeReached { qpn } => write!(f, "QP {qpn:#x} last WQE reached"),
            AsyncEvent::SrqError { srqn } => write!(f, "SRQ {srqn:#x} in error"),
            AsyncEvent::SrqLimitReached { srqn } => write!(f, "SRQ {srqn:#x} limit reached"),
            AsyncEvent::PortActive { port } => write!(f, "port {port} active"),
            AsyncEvent::PortError { port } => write!(f, "port {port} down"),
            AsyncEvent::LidChange { port } => write!(f, "port {port} LID changed"),
            AsyncEvent::PkeyChange { port } => write!(f, "port {port} P_Key table changed"),
            AsyncEvent::GidChange { port } => write!(f, "port {port} GID table changed"),
            AsyncEvent::SmChange { port } => write!(f, "port {port} subnet manager changed"),
            AsyncEvent::ClientReregister { port } => write!(f, "port {port} client reregister"),
            AsyncEvent::DeviceFatal => f.write_str("device fatal error"),
            AsyncEvent::Other { event_type } => write!(f, "asynchronous event type {event_type}"),
        }
    }
}
