//! XRC state: the numbers of a NIC's XRC domains and what makes an SRQ an XRC SRQ.

/// First XRC domain number (a range of its own, so a swapped identifier fails loudly).
pub(crate) const XRCDN_BASE: u32 = 0x1000;

/// What an XRC SRQ adds to an SRQ: its domain, its CQ and the user index its completions
/// carry under CQE version 1.
#[derive(Clone, Copy, Debug)]
pub(crate) struct XrcSrq {
    pub(crate) xrcd: u32,
    /// CQ index.
    pub(crate) cq: usize,
    pub(crate) user_index: u32,
}
