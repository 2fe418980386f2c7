//! Missing-fence detection. The model runs every WQE to completion before the next, so a
//! fence is honoured trivially and its absence would go unseen; this remembers what real
//! hardware could still have in flight (prm-facts §2, FM bits).

use crate::state::consts::MAX_RD_ATOMIC;

/// The local result buffers of the READ and atomic WQEs executed so far in one run of the
/// send queue, back to back since the last fenced WQE. Real hardware pipelines such a run:
/// a later unfenced WQE may gather its payload before those results arrive, so a gather
/// that overlaps one of them is a missing fence (a driver bug the synchronous model would
/// otherwise hide). At most the device's READ/atomic depth are remembered.
pub(crate) struct InFlight {
    n: usize,
    spans: [(u64, u64); MAX_RD_ATOMIC as usize],
}

impl InFlight {
    pub(crate) fn new() -> Self {
        InFlight {
            n: 0,
            spans: [(0, 0); MAX_RD_ATOMIC as usize],
        }
    }

    /// Forget everything: a new run, or a fenced WQE that waits for all of it.
    pub(crate) fn clear(&mut self) {
        self.n = 0;
    }

    /// A READ or atomic result lands in `[addr, addr+len)`.
    pub(crate) fn push(&mut self, addr: u64, len: u64) {
        let depth = self.spans.len();
        self.spans[self.n % depth] = (addr, addr + len);
        self.n += 1;
    }

    /// Does a gather of `[addr, addr+len)` read a result that may still be in flight?
    pub(crate) fn overlaps(&self, addr: u64, len: u64) -> bool {
        let end = addr + len;
        self.spans[..self.n.min(self.spans.len())]
            .iter()
            .any(|&(a, e)| addr < e && a < end)
    }
}
