//! A shared receive queue's state: its ring and counters.

pub(crate) struct Srq {
    pub(crate) pdn: u32,
    pub(crate) buf: u64,
    pub(crate) log_cnt: u8,
    pub(crate) log_stride: u8,
    pub(crate) dbrec: u64,
    /// Last counter value read from the doorbell record.
    pub(crate) known_pi: u16,
    /// WQEs consumed.
    pub(crate) consumed: u16,
    /// Index of the next WQE in the linked list.
    pub(crate) head: u16,
    pub(crate) refs: u32,
    /// An XRC SRQ's domain, CQ and user index (`None`: a basic SRQ).
    pub(crate) xrc: Option<super::xrc::XrcSrq>,
}
