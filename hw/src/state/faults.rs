//! Injected faults (`Nic::inject`): what is armed, and the per-QP budgets they spend.

#[derive(Default)]
pub(crate) struct Faults {
    pub(crate) drop_bf: bool,
    pub(crate) lose: Option<Budget>,
    pub(crate) lose_responses: Option<Budget>,
    pub(crate) delay_cqes: bool,
    pub(crate) rnr: Option<Budget>,
    /// `Fault::HostStoreInAtomic`: a CPU store into the next atomic's target.
    pub(crate) host_store: Option<u64>,
    pub(crate) defer: bool,
    /// `Fault::CorruptPayload`.
    pub(crate) corrupt: Option<Budget>,
    /// `Fault::PcieBackpressure`.
    pub(crate) backpressure: bool,
}

/// A per-QP fault budget: let `skip` units pass, then hit `count`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Budget {
    pub(crate) qpn: Option<u32>,
    pub(crate) skip: u32,
    pub(crate) count: u32,
}

/// Spend `n` units (packets or messages) of QP `qpn` against the budget; true if any of
/// them is hit.
#[inline]
pub(crate) fn take_fault(f: &mut Option<Budget>, qpn: u32, n: u32) -> bool {
    // No budget set (the common case) is decided without a call.
    f.is_some() && hit_range(f, qpn, n).is_some()
}

/// Spend `n` units of QP `qpn` against the budget; the units hit, if any, as the index of
/// the first and how many (a run: the budget hits every unit after its skip, up to its
/// count).
pub(crate) fn hit_range(f: &mut Option<Budget>, qpn: u32, n: u32) -> Option<(u32, u32)> {
    let b = f
        .as_mut()
        .filter(|b| b.count > 0 && b.qpn.is_none_or(|q| q == qpn))?;
    if b.skip >= n {
        b.skip -= n;
        return None;
    }
    let first = b.skip;
    let hit = (n - first).min(b.count);
    b.skip = 0;
    b.count -= hit;
    if b.count == 0 {
        *f = None;
    }
    Some((first, hit))
}
