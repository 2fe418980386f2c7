//! How the NIC touches host memory, and what each touch costs on the link: the key check
//! (with on-demand faults and translations), the context and translation caches, and the
//! accounting of every DMA read, DMA write and MMIO write.

use crate::pcie::{Ctx, PcieCounters, Purpose};
use crate::state::{take_fault, NicState, Qp, Touch};
use crate::types::Access;

impl NicState {
    /// True if `[addr, addr+len)` is covered by live key `key` of PD `pdn` with rights `need`.
    /// Zero-length accesses need no key (IB rule). Looking a registered key up uses its
    /// context, for QP index `qp`.
    #[inline]
    pub(crate) fn check_mr(
        &mut self,
        qp: usize,
        key: u32,
        pdn: u32,
        addr: u64,
        len: u64,
        need: Access,
    ) -> bool {
        self.check_key(Some(qp), key, pdn, addr, len, need)
    }

    /// [`NicState::check_mr`] for QP index `qp`, or for the NIC alone (`None`: a receive
    /// work queue's buffer, which serves no QP).
    pub(crate) fn check_key(
        &mut self,
        qp: Option<usize>,
        key: u32,
        pdn: u32,
        addr: u64,
        len: u64,
        need: Access,
    ) -> bool {
        if len == 0 {
            return true;
        }
        let Some(slot) = self.mrs.get((key >> 8) as usize) else {
            return false;
        };
        let Some(mr) = &slot.mr else { return false };
        let page_shift = mr.page_shift;
        let on_demand = mr.present.is_some();
        let on_chip = mr.dm.is_some();
        let ok = slot.variant == key as u8 && mr.grants(pdn, addr, len, need);
        self.context(qp, Ctx::Mkey(key >> 8));
        if !ok {
            return false;
        }
        if on_chip {
            // Device memory: no translation entries, nothing to fault in.
            return true;
        }
        // A fault the NIC raises here stalls this WQE until the kernel has resolved it;
        // the model has no clock and resolves it at once. One it cannot resolve fails the
        // access like any other bad address.
        if on_demand && self.fault_in(qp, key, addr, len) == Touch::Unmapped {
            return false;
        }
        if self.link.cfg().translation_cache.is_some() {
            self.translate_cached(qp, key >> 8, page_shift, addr, len);
        }
        true
    }

    /// Brings the pages of `[addr, addr + len)` (len > 0, inside the key) of on-demand key
    /// `key` in: a page fault event (EQE + MSI-X, as `odp.c`'s page-fault EQ receives it)
    /// when `qp` is given (the NIC faulted; `None` is a prefetch, which raises none), and
    /// one write of the new translation entries (8 bytes each, a DMA read of them by the
    /// NIC: `mlx5r_umr_update_xlt`). Pages not mapped in the process cannot be brought in.
    pub(crate) fn fault_in(&mut self, qp: Option<usize>, key: u32, addr: u64, len: u64) -> Touch {
        let Some(mr) = self.mr_mut(key) else {
            return Touch::Present;
        };
        let shift = mr.page_shift;
        let Some(present) = &mr.present else {
            return Touch::Present;
        };
        let (first, last) = (addr >> shift, (addr + len - 1) >> shift);
        let missing: Vec<u64> = (first..=last).filter(|p| !present.contains(p)).collect();
        if missing.is_empty() {
            return Touch::Present;
        }
        if !missing
            .iter()
            .all(|&p| crate::host::mapped(p << shift, 1 << shift))
        {
            return Touch::Unmapped;
        }
        if let Some(present) = self.mr_mut(key).and_then(|mr| mr.present.as_mut()) {
            present.extend(missing.iter().copied());
        }
        if qp.is_some() {
            self.stats.odp_faults += 1;
            eqe(self);
        }
        self.stats.odp_pages_mapped += missing.len() as u64;
        let entries = missing.len() as u64 * 8;
        self.dma_read(qp, crate::pcie::XLT_BUF, entries, Purpose::Translation);
        Touch::Faulted
    }

    /// Whether the on-demand key `key` lacks a page of `[addr, addr + len)` that the
    /// process has mapped: the responder then faults it in and answers RNR NAK (the
    /// request is retried after the requester's RNR timer, as `mlx5_ib_mr_rdma_pfault_handler`
    /// resolves the fault meanwhile). Anything else (not on demand, a bad key, an unmapped
    /// page) is left to the key check.
    pub(crate) fn responder_fault(&mut self, qp: usize, key: u32, addr: u64, len: u64) -> bool {
        let inside = self.mr_mut(key).is_some_and(|mr| {
            mr.present.is_some()
                && len > 0
                && addr >= mr.addr
                && addr
                    .checked_add(len)
                    .is_some_and(|end| end <= mr.addr + mr.len)
        });
        inside && self.fault_in(Some(qp), key, addr, len) == Touch::Faulted
    }

    /// The NIC translates every page of `[addr, addr + len)` (len > 0) of memory key index
    /// `mkey`, in pages of `1 << page_shift` bytes, for QP index `qp`: translation-cache
    /// misses read their entries (`PcieConfig::translation_cache`).
    #[inline]
    pub(crate) fn translate(&mut self, qp: usize, mkey: u32, page_shift: u8, addr: u64, len: u64) {
        if self.link.cfg().translation_cache.is_some() {
            self.translate_cached(Some(qp), mkey, page_shift, addr, len);
        }
    }

    #[inline(never)]
    fn translate_cached(
        &mut self,
        qp: Option<usize>,
        mkey: u32,
        page_shift: u8,
        addr: u64,
        len: u64,
    ) {
        for page in addr >> page_shift..=(addr + len - 1) >> page_shift {
            let (cnt, qpn) = qp_counters(&mut self.qps, qp);
            if self.link.translate(cnt, qpn, mkey, page) {
                self.stats.translation_misses += 1;
            }
        }
    }

    /// The NIC uses context `c` for QP index `qp` (or the NIC only): a context-cache miss
    /// reads it (`PcieConfig::context_cache`).
    #[inline]
    pub(crate) fn context(&mut self, qp: Option<usize>, c: Ctx) {
        // The common case (no context cache): no call, no lookup of the QP's counters.
        if self.link.cfg().context_cache.is_some() {
            self.context_cached(qp, c);
        }
    }

    #[inline(never)]
    fn context_cached(&mut self, qp: Option<usize>, c: Ctx) {
        let (cnt, qpn) = qp_counters(&mut self.qps, qp);
        if self.link.context(cnt, qpn, c) {
            self.stats.context_misses += 1;
        }
    }

    /// A ring access of `[addr, addr + len)` (len > 0) for `qp`: with a translation cache
    /// that covers rings, every page of it needs its translation, in the ring's page size.
    #[inline(always)]
    fn translate_ring(&mut self, qp: Option<usize>, addr: u64, len: u64) {
        // The common case (no such cache): no call.
        if self.link.cfg().translation_cache.is_some_and(|t| t.rings) && len != 0 {
            self.translate_ring_cached(qp, addr, len);
        }
    }

    #[inline(never)]
    fn translate_ring_cached(&mut self, qp: Option<usize>, addr: u64, len: u64) {
        let shift = match self.ring_pages.range(..=addr).next_back() {
            Some((_, &(end, shift))) if addr < end => shift,
            _ => 12,
        };
        for page in addr >> shift..=(addr + len - 1) >> shift {
            let (cnt, qpn) = qp_counters(&mut self.qps, qp);
            if self
                .link
                .translate(cnt, qpn, crate::pcie::RING_MKEY, page << (shift - 12))
            {
                self.stats.translation_misses += 1;
            }
        }
    }

    /// Account a DMA read for QP index `qp` (or the NIC only).
    #[inline(always)]
    pub(crate) fn dma_read(&mut self, qp: Option<usize>, addr: u64, len: u64, p: Purpose) {
        if matches!(
            p,
            Purpose::SendWqeFetch | Purpose::WqeRefetch | Purpose::RecvWqeFetch
        ) {
            self.translate_ring(qp, addr, len);
        }
        let (c, qpn) = qp_counters(&mut self.qps, qp);
        self.link.dma_read(c, qpn, addr, len, p);
    }

    /// Account a DMA write for QP index `qp` (or the NIC only).
    #[inline(always)]
    pub(crate) fn dma_write(&mut self, qp: Option<usize>, addr: u64, len: u64, p: Purpose) {
        if p == Purpose::Cqe {
            self.translate_ring(qp, addr, len);
        }
        let (c, qpn) = qp_counters(&mut self.qps, qp);
        self.link.dma_write(c, qpn, addr, len, p);
        if let (Purpose::Scatter, Some(qpn)) = (p, qpn) {
            if len > 0 && take_fault(&mut self.faults.corrupt, qpn, 1) {
                let mut byte = [0u8];
                crate::host::read(addr, &mut byte);
                crate::host::write(addr, &[!byte[0]]);
            }
        }
    }

    /// Account an MMIO write for QP index `qp` (or the NIC only).
    #[inline]
    pub(crate) fn mmio(&mut self, qp: Option<usize>, len: u32, p: Purpose) {
        let (c, qpn) = qp_counters(&mut self.qps, qp);
        self.link.mmio(c, qpn, len, p);
    }
}

/// The per-QP counters a TLP is attributed to, and the QP number for the trace.
fn qp_counters(
    qps: &mut [Option<Qp>],
    qp: Option<usize>,
) -> (Option<&mut PcieCounters>, Option<u32>) {
    match qp.and_then(|i| qps[i].as_mut()) {
        Some(q) => (Some(&mut q.pcie), Some(q.qpn)),
        None => (None, None),
    }
}

/// Size of an event queue entry and of an MSI-X message, for accounting.
const EQE_SIZE: u64 = 64;
const MSIX_SIZE: u64 = 4;
/// The EQ doorbell the kernel writes per interrupt (`eq_update_ci`: one 32-bit write).
const EQ_DOORBELL_SIZE: u32 = 4;

/// An EQE write and its MSI-X interrupt on the link (no QP's), and the driver's EQ
/// doorbell when counted (`PcieConfig::eq_rearm`).
pub(crate) fn eqe(nic: &mut NicState) {
    nic.dma_write(None, 0, EQE_SIZE, Purpose::Eqe);
    nic.dma_write(None, 0, MSIX_SIZE, Purpose::Msix);
    if nic.link.cfg().eq_rearm {
        nic.mmio(None, EQ_DOORBELL_SIZE, Purpose::EqArm);
    }
}
