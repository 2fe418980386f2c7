//! PCIe link accounting: every transaction layer packet on the NIC's link, as an analyser
//! sitting between the root port and the NIC would count it.

mod config;
mod tlp;

pub use config::{Completions, ContextCache, PcieConfig, TranslationCache};
pub use tlp::{Dir, PcieCounters, Purpose, Tlp, TlpKind, DLLP_BYTES};

use std::collections::{BTreeMap, HashMap};

/// TLPs may not cross a 4 KiB address boundary.
const PAGE: u64 = 4096;

/// Largest chunk starting at `addr`, at most `max` and `left` bytes, not crossing `align`.
fn chunk(addr: u64, left: u64, max: u64, align: u64) -> u64 {
    // Link parameters are powers of two in practice: avoid a division per TLP.
    let offset = if align.is_power_of_two() {
        addr & (align - 1)
    } else {
        addr % align
    };
    let to_boundary = align - offset;
    left.min(max).min(to_boundary)
}

/// Payload of the completion starting at `addr` with `left` bytes of the request to go.
fn completion(addr: u64, left: u64, mps: u64, rcb: u64, split: Completions) -> u64 {
    match split {
        Completions::Rcb => chunk(addr, left, mps, rcb),
        Completions::Mps if left <= mps => left,
        Completions::Mps => {
            // The largest completion within MPS that ends on an RCB boundary.
            let end = (addr + mps) / rcb * rcb;
            if end > addr {
                end - addr
            } else {
                mps
            }
        }
    }
}

/// The link of one NIC: configuration, counters and the optional trace.
///
/// A TLP serving a QP is counted once, in that QP's counters; the NIC-wide total is the sum
/// of every QP's counters and `other` (TLPs of no QP, and the counters of destroyed QPs).
/// Counting each TLP once keeps the per-WQE cost of the model low.
#[derive(Debug)]
pub(crate) struct Link {
    cfg: PcieConfig,
    pub(crate) other: PcieCounters,
    trace: Option<Vec<Tlp>>,
    contexts: Lru,
    translations: Lru,
    /// Complete BlueFlame copies seen (for `bf_evict_every`).
    bf_copies: u64,
    /// DMA reads of at most this many bytes that stay within one `read_align` block are
    /// one MRd and one CplD (0: no such shortcut for this configuration).
    read_one: u64,
    read_align: u64,
    /// DMA writes of at most this many bytes within one `write_align` block are one MWr.
    write_one: u64,
    write_align: u64,
}

/// The largest single-TLP transfer and the power-of-two block it must stay in, for a
/// transfer split at most `max` bytes per TLP and at `align` boundaries (no shortcut when
/// `align` is not a power of two no larger than a page).
fn one_tlp(max: u64, align: u64) -> (u64, u64) {
    if align.is_power_of_two() && align <= PAGE {
        (max.min(align), align)
    } else {
        (0, PAGE)
    }
}

/// A context the NIC may have to read from host memory: a QP by number, a CQ by number, a
/// memory key by index (key >> 8).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Ctx {
    Qp(u32),
    Cq(u32),
    Mkey(u32),
    /// The translation of page `page` (in the region's page size) of memory key index
    /// `mkey`.
    Page {
        mkey: u32,
        page: u64,
    },
}

/// The memory-key index under which ring pages are cached: above every real key index
/// (24 bits), so a ring page never shares an entry with a region's. Ring pages are keyed
/// by their address, unique across the rings of a NIC.
pub(crate) const RING_MKEY: u32 = 1 << 24;

/// Base of the (made-up) host addresses of the context tables: each context sits at its
/// size rounded up to a power of two, so its read splits like an aligned one.
const ICM_BASE: u64 = 0x7e00_0000_0000;

/// The (made-up) host address of the buffer the kernel writes new translation entries to
/// when it resolves a page fault or a prefetch, which the NIC reads.
pub(crate) const XLT_BUF: u64 = ICM_BASE - (1 << 30);

/// The contexts cached, each with the time of its last use (and by time, to evict).
#[derive(Debug, Default)]
struct Lru {
    used: HashMap<Ctx, u64>,
    by_time: BTreeMap<u64, Ctx>,
    clock: u64,
}

impl Lru {
    /// Use `c` in a cache of `entries`; true if it was cached (a hit). A miss evicts the
    /// least recently used context when the cache is full.
    fn touch(&mut self, c: Ctx, entries: u32) -> bool {
        self.clock += 1;
        if let Some(t) = self.used.get_mut(&c) {
            self.by_time.remove(t);
            *t = self.clock;
            self.by_time.insert(self.clock, c);
            return true;
        }
        if entries == 0 {
            return false;
        }
        if self.used.len() >= entries as usize {
            if let Some((_, oldest)) = self.by_time.pop_first() {
                self.used.remove(&oldest);
            }
        }
        self.used.insert(c, self.clock);
        self.by_time.insert(self.clock, c);
        false
    }
}

impl Link {
    pub(crate) fn new(cfg: PcieConfig) -> Self {
        let mut l = Link {
            cfg,
            other: PcieCounters::default(),
            trace: None,
            contexts: Lru::default(),
            translations: Lru::default(),
            bf_copies: 0,
            read_one: 0,
            read_align: PAGE,
            write_one: 0,
            write_align: PAGE,
        };
        l.set_shortcuts();
        l
    }

    /// The single-TLP shortcuts of `dma_read` and `dma_write` for this configuration:
    /// exactly the transfers their loops would send as one request (and one completion).
    fn set_shortcuts(&mut self) {
        let c = &self.cfg;
        let (mrrs, mps, rcb) = (u64::from(c.mrrs), u64::from(c.mps), u64::from(c.rcb));
        // A read is one MRd when it fits MRRS within a page; one CplD when it fits MPS
        // (and, with RCB completions, one RCB block).
        let block = match c.completions {
            Completions::Rcb => rcb,
            Completions::Mps => PAGE,
        };
        (self.read_one, self.read_align) = one_tlp(mrrs.min(mps), block);
        let align = if c.mps_aligned_writes {
            mps.min(PAGE)
        } else {
            PAGE
        };
        (self.write_one, self.write_align) = one_tlp(mps, align);
    }

    #[inline]
    pub(crate) fn cfg(&self) -> &PcieConfig {
        &self.cfg
    }

    /// Change the configuration; a different context cache starts empty.
    pub(crate) fn set_cfg(&mut self, cfg: PcieConfig) {
        if cfg.context_cache != self.cfg.context_cache {
            self.contexts = Lru::default();
        }
        if cfg.translation_cache != self.cfg.translation_cache {
            self.translations = Lru::default();
        }
        self.cfg = cfg;
        self.set_shortcuts();
    }

    /// Count one complete BlueFlame copy; true if `bf_evict_every` evicts it.
    pub(crate) fn bf_evicted(&mut self) -> bool {
        let every = u64::from(self.cfg.bf_evict_every);
        if every == 0 {
            return false;
        }
        self.bf_copies += 1;
        self.bf_copies % every == 0
    }

    /// The NIC uses context `c` for `qp`: with a context cache, a miss reads it from host
    /// memory. Returns true on a miss.
    pub(crate) fn context(
        &mut self,
        qp: Option<&mut PcieCounters>,
        qpn: Option<u32>,
        c: Ctx,
    ) -> bool {
        let Some(cc) = self.cfg.context_cache else {
            return false;
        };
        if self.contexts.touch(c, cc.entries) {
            return false;
        }
        let (kind, id, bytes, purpose) = match c {
            Ctx::Qp(n) => (0, n, cc.qpc_bytes, Purpose::QpContext),
            Ctx::Cq(n) => (1, n, cc.cqc_bytes, Purpose::CqContext),
            Ctx::Mkey(n) | Ctx::Page { mkey: n, .. } => (2, n, cc.mkc_bytes, Purpose::MkeyContext),
        };
        let stride = u64::from(bytes.max(1)).next_power_of_two();
        let addr = ICM_BASE + (kind << 40) + u64::from(id) * stride;
        self.dma_read(qp, qpn, addr, bytes.into(), purpose);
        true
    }

    /// The NIC translates page `page` of memory key index `mkey` for `qp`: with a
    /// translation cache, a miss reads the MTT entry from host memory. Returns true on a
    /// miss.
    pub(crate) fn translate(
        &mut self,
        qp: Option<&mut PcieCounters>,
        qpn: Option<u32>,
        mkey: u32,
        page: u64,
    ) -> bool {
        let Some(tc) = self.cfg.translation_cache else {
            return false;
        };
        if self
            .translations
            .touch(Ctx::Page { mkey, page }, tc.entries)
        {
            return false;
        }
        // Each key's table in a region of its own; entries in page order.
        let bytes = u64::from(tc.entry_bytes.max(1));
        let table = ICM_BASE + (3 << 40) + (u64::from(mkey) << 32);
        let addr = table.wrapping_add(page.wrapping_mul(bytes) & ((1 << 32) - 1));
        self.dma_read(qp, qpn, addr, bytes, Purpose::Translation);
        true
    }

    pub(crate) fn set_trace(&mut self, on: bool) {
        match (on, self.trace.is_some()) {
            (true, false) => self.trace = Some(Vec::new()),
            (false, true) => self.trace = None,
            _ => {}
        }
    }

    pub(crate) fn take_trace(&mut self) -> Vec<Tlp> {
        self.trace.as_mut().map(std::mem::take).unwrap_or_default()
    }

    /// Count one TLP in `qp`'s counters (or `other`) and trace it.
    #[inline(always)]
    fn emit(
        &mut self,
        qp: &mut Option<&mut PcieCounters>,
        qpn: Option<u32>,
        (dir, kind): (Dir, TlpKind),
        payload: u32,
        purpose: Purpose,
    ) {
        let overhead = match kind {
            TlpKind::MWr => self.cfg.mwr_overhead,
            TlpKind::MRd => self.cfg.mrd_overhead,
            TlpKind::CplD => self.cfg.cpld_overhead,
        };
        let t = Tlp {
            dir,
            kind,
            payload,
            bytes: payload + overhead,
            purpose,
            qpn,
        };
        let c = match qp {
            Some(c) => &mut **c,
            None => &mut self.other,
        };
        c.count(&t, self.cfg.dllps);
        if self.trace.is_some() {
            self.record(t);
        }
    }

    #[cold]
    fn record(&mut self, t: Tlp) {
        if let Some(tr) = &mut self.trace {
            tr.push(t);
        }
    }

    /// One CPU-to-NIC memory write.
    pub(crate) fn mmio(
        &mut self,
        mut qp: Option<&mut PcieCounters>,
        qpn: Option<u32>,
        len: u32,
        purpose: Purpose,
    ) {
        self.emit(&mut qp, qpn, (Dir::Down, TlpKind::MWr), len, purpose);
    }

    /// A DMA read of `[addr, addr+len)`: MRd requests of at most MRRS bytes not crossing
    /// 4 KiB, each answered by CplDs of at most MPS bytes that end on RCB-aligned addresses
    /// (one per RCB block with [`Completions::Rcb`]), the last at the request's end.
    #[inline(always)]
    pub(crate) fn dma_read(
        &mut self,
        mut qp: Option<&mut PcieCounters>,
        qpn: Option<u32>,
        addr: u64,
        len: u64,
        purpose: Purpose,
    ) {
        // One request and one completion (a WQE, a doorbell record): no split to work out,
        // no call.
        if len != 0
            && len <= self.read_one
            && (addr & (self.read_align - 1)) + len <= self.read_align
        {
            self.emit(&mut qp, qpn, (Dir::Up, TlpKind::MRd), 0, purpose);
            self.emit(
                &mut qp,
                qpn,
                (Dir::Down, TlpKind::CplD),
                len as u32,
                purpose,
            );
            return;
        }
        self.dma_read_split(qp, qpn, addr, len, purpose);
    }

    /// [`Link::dma_read`] of a transfer that is not one MRd and one CplD.
    #[inline(never)]
    fn dma_read_split(
        &mut self,
        mut qp: Option<&mut PcieCounters>,
        qpn: Option<u32>,
        addr: u64,
        len: u64,
        purpose: Purpose,
    ) {
        let (mrrs, mps, rcb) = (
            u64::from(self.cfg.mrrs),
            u64::from(self.cfg.mps),
            u64::from(self.cfg.rcb),
        );
        let (mut addr, end) = (addr, addr + len);
        while addr < end {
            let req_end = addr + chunk(addr, end - addr, mrrs, PAGE);
            self.emit(&mut qp, qpn, (Dir::Up, TlpKind::MRd), 0, purpose);
            while addr < req_end {
                let n = completion(addr, req_end - addr, mps, rcb, self.cfg.completions) as u32;
                self.emit(&mut qp, qpn, (Dir::Down, TlpKind::CplD), n, purpose);
                addr += u64::from(n);
            }
        }
    }

    /// A DMA write of `[addr, addr+len)`: MWr TLPs of at most MPS bytes not crossing 4 KiB
    /// (nor, with `mps_aligned_writes`, an MPS-aligned address).
    #[inline(always)]
    pub(crate) fn dma_write(
        &mut self,
        mut qp: Option<&mut PcieCounters>,
        qpn: Option<u32>,
        addr: u64,
        len: u64,
        purpose: Purpose,
    ) {
        // One MWr (a CQE, a small payload): no split to work out, no call.
        if len != 0
            && len <= self.write_one
            && (addr & (self.write_align - 1)) + len <= self.write_align
        {
            self.emit(&mut qp, qpn, (Dir::Up, TlpKind::MWr), len as u32, purpose);
            return;
        }
        self.dma_write_split(qp, qpn, addr, len, purpose);
    }

    /// [`Link::dma_write`] of a transfer that is not one MWr.
    #[inline(never)]
    fn dma_write_split(
        &mut self,
        mut qp: Option<&mut PcieCounters>,
        qpn: Option<u32>,
        addr: u64,
        len: u64,
        purpose: Purpose,
    ) {
        let mps = u64::from(self.cfg.mps);
        let align = if self.cfg.mps_aligned_writes {
            mps.min(PAGE)
        } else {
            PAGE
        };
        let (mut addr, end) = (addr, addr + len);
        while addr < end {
            let n = chunk(addr, end - addr, mps, align) as u32;
            self.emit(&mut qp, qpn, (Dir::Up, TlpKind::MWr), n, purpose);
            addr += u64::from(n);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn link(completions: Completions) -> Link {
        Link::new(PcieConfig {
            completions,
            ..PcieConfig::default()
        })
    }

    #[test]
    fn read_splits_at_mrrs_then_rcb_or_mps() {
        // 1024 bytes: 2 MRd of 512, answered by 128-byte or 256-byte completions.
        for (split, cpls) in [(Completions::Rcb, 8), (Completions::Mps, 4)] {
            let mut l = link(split);
            l.dma_read(None, None, 0x10000, 1024, Purpose::SendWqeFetch);
            assert_eq!(l.other.dma_reads, 2);
            assert_eq!(l.other.completions, cpls);
            assert_eq!(l.other.bytes_up, 48);
            assert_eq!(l.other.bytes_down, 1024 + cpls * 20);
        }
    }

    #[test]
    fn unaligned_reads() {
        // 32 bytes across an RCB boundary: two RCB blocks, or one completion of the whole
        // request.
        for (split, cpls) in [(Completions::Rcb, 2), (Completions::Mps, 1)] {
            let mut l = link(split);
            l.dma_read(None, None, 0x10070, 32, Purpose::Gather);
            assert_eq!((l.other.dma_reads, l.other.completions), (1, cpls));
        }
        // 512 bytes from 0x40 with MPS completions: the first ends at the last RCB boundary
        // within MPS (0x40..0x100, 192 bytes), then 256, then the 64 left.
        let mut l = link(Completions::Mps);
        l.set_trace(true);
        l.dma_read(None, None, 0x10040, 512, Purpose::Gather);
        let cpls: Vec<u32> = l
            .take_trace()
            .iter()
            .filter(|t| t.kind == TlpKind::CplD)
            .map(|t| t.payload)
            .collect();
        assert_eq!(cpls, [192, 256, 64]);
    }

    #[test]
    fn write_splits_at_mps_and_page() {
        let mut l = Link::new(PcieConfig::default());
        l.dma_write(None, None, 0x10f80, 512, Purpose::Scatter);
        // 128 up to the page boundary, then 256 + 128.
        assert_eq!(l.other.dma_writes, 3);
        assert_eq!(l.other.payload_up, 512);
    }

    #[test]
    fn writes_split_from_the_start_or_at_mps_aligned_addresses() {
        // (start, length, MWr payloads from the start, at MPS-aligned addresses)
        for (addr, len, from_start, aligned) in [
            (
                0x10010,
                1000,
                &[256, 256, 256, 232][..],
                &[240, 256, 256, 248][..],
            ),
            (0x10010, 256, &[256][..], &[240, 16][..]),
            (0x10100, 512, &[256, 256][..], &[256, 256][..]),
        ] {
            for (mps_aligned_writes, want) in [(false, from_start), (true, aligned)] {
                let mut l = Link::new(PcieConfig {
                    mps_aligned_writes,
                    ..PcieConfig::default()
                });
                l.set_trace(true);
                l.dma_write(None, None, addr, len, Purpose::Scatter);
                let got: Vec<u32> = l.take_trace().iter().map(|t| t.payload).collect();
                assert_eq!(got, want, "{addr:#x}+{len}, aligned {mps_aligned_writes}");
            }
        }
    }

    #[test]
    fn single_tlp_shortcuts_count_what_the_split_loops_count() {
        let configs = [
            PcieConfig::default(),
            PcieConfig::kalia(),
            PcieConfig {
                mps_aligned_writes: true,
                dllps: true,
                ..PcieConfig::default()
            },
            PcieConfig {
                mps: 128,
                mrrs: 4096,
                rcb: 64,
                ..PcieConfig::kalia()
            },
            PcieConfig {
                rcb: 96,
                mps: 200,
                ..PcieConfig::kalia()
            },
        ];
        for cfg in configs {
            for base in [0x10000u64, 0x10f00] {
                for off in [0u64, 1, 8, 60, 63, 64, 100, 127, 128, 200, 255] {
                    for len in [0u64, 1, 4, 8, 16, 63, 64, 65, 128, 129, 256, 257, 512, 600] {
                        let addr = base + off;
                        let (mut fast, mut split) = (Link::new(cfg), Link::new(cfg));
                        (split.read_one, split.write_one) = (0, 0);
                        for l in [&mut fast, &mut split] {
                            l.dma_read(None, None, addr, len, Purpose::Gather);
                            l.dma_write(None, None, addr, len, Purpose::Scatter);
                        }
                        assert_eq!(fast.other, split.other, "{cfg:?} {addr:#x}+{len}");
                    }
                }
            }
        }
    }

    #[test]
    fn sub_and_add_are_fieldwise() {
        let mut l = Link::new(PcieConfig::default());
        let a = l.other;
        l.mmio(None, None, 8, Purpose::Doorbell);
        let d = l.other - a;
        assert_eq!(d.mmio_writes, 1);
        assert_eq!(d.bytes_down, 32);
        assert_eq!(a + d, l.other);
    }
}
