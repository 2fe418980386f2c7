//! A completion queue's state: its ring, arming, compression burst and session, and the
//! CQEs held back by `Fault::DelayCqes`.

pub(crate) struct Cq {
    pub(crate) cqn: u32,
    pub(crate) buf: u64,
    pub(crate) log_cnt: u8,
    pub(crate) cqe_size: u32,
    pub(crate) dbrec: u64,
    pub(crate) overrun_ignore: bool,
    /// The completion channel its events go to (`None`: the NIC's own event queue).
    pub(crate) channel: Option<u32>,
    /// Producer counter (CQEs written).
    pub(crate) pi: u32,
    /// Pending arm request, if any.
    pub(crate) armed: Option<Arm>,
    /// Sequence number of the arm request that produced the last event: a later arm
    /// doorbell carrying the same `sn` is a stale (already answered) request.
    pub(crate) fired_sn: Option<u8>,
    /// Overrun happened: the CQ writes nothing more.
    pub(crate) error: bool,
    pub(crate) refs: u32,
    /// `CqParams::compression`.
    pub(crate) zip: Option<crate::types::CqCompression>,
    /// CQEs of the current burst held for compression (see `cqz`), with their QP index.
    pub(crate) burst: Vec<(Option<usize>, crate::cqe::Cqe)>,
    /// The enhanced session the CQ's last entries belong to (see `cqz`).
    pub(crate) session: Option<Session>,
}

/// An accepted CQ arm request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Arm {
    /// `MLX5_CQ_DB_REQ_NOT_SOL`: only a solicited or error CQE fires the event.
    pub(crate) solicited: bool,
    /// The 2-bit command sequence number.
    pub(crate) sn: u8,
}

/// A CQE held back by `Fault::DelayCqes`.
pub(crate) struct Delayed {
    pub(crate) cq: usize,
    pub(crate) qp: Option<usize>,
    pub(crate) cqe: crate::cqe::Cqe,
}

/// An enhanced session that may continue: its title, its QP, how many completions it has
/// (the title's included) and the CQ producer index its next slot must take.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Session {
    pub(crate) qp: Option<usize>,
    pub(crate) title: crate::cqe::Cqe,
    pub(crate) len: usize,
    pub(crate) next_pi: u32,
}
