//! Memory keys: a registered region, its key slot, and what touching it finds.

use crate::types::Access;
use std::collections::BTreeSet;

pub(crate) struct Mr {
    pub(crate) pdn: u32,
    pub(crate) addr: u64,
    pub(crate) len: u64,
    pub(crate) access: Access,
    /// Invalidated by a SEND_INVAL; unusable until deregistered.
    pub(crate) invalid: bool,
    /// A SEND_INVAL may invalidate it (`en_rinval`; `Nic::allow_remote_invalidate`).
    pub(crate) remote_invalidate: bool,
    /// log2 of the page size one translation entry covers.
    pub(crate) page_shift: u8,
    /// On-demand keys: the pages (in `page_shift` units) the NIC has a translation for.
    pub(crate) present: Option<BTreeSet<u64>>,
    /// Keys on device memory (zero based, no translation entries): where byte 0 is.
    pub(crate) dm: Option<crate::state::dm::DmMap>,
}

impl Mr {
    /// Whether this (live) MR lets PD `pdn` access `[addr, addr + len)` with rights
    /// `need`.
    #[inline]
    pub(crate) fn grants(&self, pdn: u32, addr: u64, len: u64, need: Access) -> bool {
        !self.invalid
            && self.pdn == pdn
            && self.access.contains(need)
            && addr >= self.addr
            && addr
                .checked_add(len)
                .is_some_and(|end| end <= self.addr + self.len)
    }
}

/// What touching a range of a memory key finds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Touch {
    /// Every page is present (or the key is not on demand).
    Present,
    /// Some pages were not present and have been faulted in now.
    Faulted,
    /// A page is not mapped in the process: the fault cannot be resolved.
    Unmapped,
}

/// A memory-key slot: key = slot << 8 | variant.
pub(crate) struct MrSlot {
    pub(crate) variant: u8,
    pub(crate) mr: Option<Mr>,
}
