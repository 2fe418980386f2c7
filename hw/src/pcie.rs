//! PCIe link accounting: every transaction layer packet on the NIC's link, as an analyser
//! sitting between the root port and the NIC would count it.

use std::ops::{Add, Sub};

/// Link parameters. Overheads are bytes per TLP on the wire beyond the payload
/// (framing, sequence number, header, LCRC).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PcieConfig {
    /// Max payload size of a write or completion TLP.
    pub mps: u32,
    /// Max read request size.
    pub mrrs: u32,
    /// Read completion boundary.
    pub rcb: u32,
    /// Overhead of a memory write TLP.
    pub mwr_overhead: u32,
    /// Overhead of a memory read request TLP.
    pub mrd_overhead: u32,
    /// Overhead of a completion-with-data TLP.
    pub cpld_overhead: u32,
    /// Count data link layer packets: for every TLP, the receiving side returns one Ack and
    /// one UpdateFC DLLP of [`DLLP_BYTES`] each (no coalescing: an upper bound).
    pub dllps: bool,
}

impl PcieConfig {
    /// MPS 256, MRRS 512, RCB 128, 24/24/20 bytes of overhead (64-bit addresses), no DLLPs.
    pub fn pcie_bench() -> Self {
        PcieConfig {
            mps: 256,
            mrrs: 512,
            rcb: 128,
            mwr_overhead: 24,
            mrd_overhead: 24,
            cpld_overhead: 20,
            dllps: false,
        }
    }

    /// As `pcie_bench` but with the 26/26/22 overheads of Kalia et al. (ATC'16).
    pub fn kalia() -> Self {
        PcieConfig {
            mwr_overhead: 26,
            mrd_overhead: 26,
            cpld_overhead: 22,
            ..Self::pcie_bench()
        }
    }
}

impl Default for PcieConfig {
    fn default() -> Self {
        Self::pcie_bench()
    }
}

/// Bytes of one DLLP on the link: 6 bytes plus 2 of framing.
pub const DLLP_BYTES: u64 = 8;

/// Direction on the link.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dir {
    /// Host to NIC (MMIO writes, read completions).
    Down,
    /// NIC to host (read requests, DMA writes).
    Up,
}

/// TLP type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TlpKind {
    /// Memory write (posted).
    MWr,
    /// Memory read request.
    MRd,
    /// Completion with data.
    CplD,
}

/// Why a TLP was sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Purpose {
    /// 8-byte send doorbell.
    Doorbell,
    /// 64-byte BlueFlame chunk.
    BlueFlame,
    /// CQ arm doorbell.
    CqArm,
    /// Send WQE fetch from the SQ ring.
    SendWqeFetch,
    /// Receive WQE fetch from the RQ or SRQ.
    RecvWqeFetch,
    /// Receive doorbell record read.
    DbrecRead,
    /// Requester payload read (send gather).
    Gather,
    /// Payload write: receive scatter, RDMA WRITE target, READ result at the requester.
    Scatter,
    /// Responder memory read serving an RDMA READ.
    ReadResponse,
    /// Responder read-modify-write of an atomic operand.
    AtomicOperand,
    /// Atomic original value written to the requester's buffer.
    AtomicResult,
    /// Completion queue entry.
    Cqe,
    /// Event queue entry of a completion or asynchronous event.
    Eqe,
    /// MSI-X interrupt message of a completion or asynchronous event.
    Msix,
}

/// One traced TLP.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tlp {
    /// Direction.
    pub dir: Dir,
    /// Type.
    pub kind: TlpKind,
    /// Payload bytes (0 for MRd).
    pub payload: u32,
    /// Bytes on the link (payload + overhead).
    pub bytes: u32,
    /// Why it was sent.
    pub purpose: Purpose,
    /// QP it served, if any.
    pub qpn: Option<u32>,
}

/// Cumulative link counters.
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
pub struct PcieCounters {
    /// CPU-to-NIC MWr TLPs (doorbells, BlueFlame chunks, CQ arms).
    pub mmio_writes: u64,
    /// NIC MRd requests.
    pub dma_reads: u64,
    /// CplD TLPs returning host memory to the NIC.
    pub completions: u64,
    /// NIC MWr TLPs into host memory.
    pub dma_writes: u64,
    /// TLPs host to NIC.
    pub tlps_down: u64,
    /// TLPs NIC to host.
    pub tlps_up: u64,
    /// Link bytes host to NIC.
    pub bytes_down: u64,
    /// Link bytes NIC to host.
    pub bytes_up: u64,
    /// Payload bytes host to NIC.
    pub payload_down: u64,
    /// Payload bytes NIC to host.
    pub payload_up: u64,
    /// DLLPs, both directions (when enabled): one Ack and one UpdateFC per TLP.
    pub dllps: u64,
    /// DLLP bytes host to NIC (answering TLPs up); not in `bytes_down`.
    pub dllp_bytes_down: u64,
    /// DLLP bytes NIC to host (answering TLPs down); not in `bytes_up`.
    pub dllp_bytes_up: u64,
}

macro_rules! fieldwise {
    ($trait:ident, $method:ident, $op:ident) => {
        impl $trait for PcieCounters {
            type Output = PcieCounters;
            fn $method(self, o: PcieCounters) -> PcieCounters {
                PcieCounters {
                    mmio_writes: self.mmio_writes.$op(o.mmio_writes),
                    dma_reads: self.dma_reads.$op(o.dma_reads),
                    completions: self.completions.$op(o.completions),
                    dma_writes: self.dma_writes.$op(o.dma_writes),
                    tlps_down: self.tlps_down.$op(o.tlps_down),
                    tlps_up: self.tlps_up.$op(o.tlps_up),
                    bytes_down: self.bytes_down.$op(o.bytes_down),
                    bytes_up: self.bytes_up.$op(o.bytes_up),
                    payload_down: self.payload_down.$op(o.payload_down),
                    payload_up: self.payload_up.$op(o.payload_up),
                    dllps: self.dllps.$op(o.dllps),
                    dllp_bytes_down: self.dllp_bytes_down.$op(o.dllp_bytes_down),
                    dllp_bytes_up: self.dllp_bytes_up.$op(o.dllp_bytes_up),
                }
            }
        }
    };
}

fieldwise!(Sub, sub, wrapping_sub);
fieldwise!(Add, add, wrapping_add);

impl PcieCounters {
    // Inlined so that each call site's constant kind and direction fold away.
    #[inline(always)]
    fn count(&mut self, t: &Tlp, dllps: bool) {
        match t.kind {
            TlpKind::MWr if t.dir == Dir::Down => self.mmio_writes += 1,
            TlpKind::MWr => self.dma_writes += 1,
            TlpKind::MRd => self.dma_reads += 1,
            TlpKind::CplD => self.completions += 1,
        }
        let (tlps, bytes, payload) = match t.dir {
            Dir::Down => (
                &mut self.tlps_down,
                &mut self.bytes_down,
                &mut self.payload_down,
            ),
            Dir::Up => (&mut self.tlps_up, &mut self.bytes_up, &mut self.payload_up),
        };
        *tlps += 1;
        *bytes += u64::from(t.bytes);
        *payload += u64::from(t.payload);
        if dllps {
            // An Ack and an UpdateFC travel back for every TLP.
            self.dllps += 2;
            match t.dir {
                Dir::Down => self.dllp_bytes_up += 2 * DLLP_BYTES,
                Dir::Up => self.dllp_bytes_down += 2 * DLLP_BYTES,
            }
        }
    }
}

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

/// The link of one NIC: configuration, counters and the optional trace.
///
/// A TLP serving a QP is counted once, in that QP's counters; the NIC-wide total is the sum
/// of every QP's counters and `other` (TLPs of no QP, and the counters of destroyed QPs).
/// Counting each TLP once keeps the per-WQE cost of the model low.
#[derive(Debug)]
pub(crate) struct Link {
    pub(crate) cfg: PcieConfig,
    pub(crate) other: PcieCounters,
    trace: Option<Vec<Tlp>>,
}

impl Link {
    pub(crate) fn new(cfg: PcieConfig) -> Self {
        Link {
            cfg,
            other: PcieCounters::default(),
            trace: None,
        }
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
    /// 4 KiB, each answered by CplDs of at most MPS bytes split at RCB-aligned boundaries.
    pub(crate) fn dma_read(
        &mut self,
        mut qp: Option<&mut PcieCounters>,
        qpn: Option<u32>,
        mut addr: u64,
        len: u64,
        purpose: Purpose,
    ) {
        let (mrrs, mps, rcb) = (
            u64::from(self.cfg.mrrs),
            u64::from(self.cfg.mps),
            u64::from(self.cfg.rcb),
        );
        let end = addr + len;
        while addr < end {
            let req_end = addr + chunk(addr, end - addr, mrrs, PAGE);
            self.emit(&mut qp, qpn, (Dir::Up, TlpKind::MRd), 0, purpose);
            while addr < req_end {
                let n = chunk(addr, req_end - addr, mps, rcb) as u32;
                self.emit(&mut qp, qpn, (Dir::Down, TlpKind::CplD), n, purpose);
                addr += u64::from(n);
            }
        }
    }

    /// A DMA write of `[addr, addr+len)`: MWr TLPs of at most MPS bytes not crossing 4 KiB.
    pub(crate) fn dma_write(
        &mut self,
        mut qp: Option<&mut PcieCounters>,
        qpn: Option<u32>,
        mut addr: u64,
        len: u64,
        purpose: Purpose,
    ) {
        let mps = u64::from(self.cfg.mps);
        let end = addr + len;
        while addr < end {
            let n = chunk(addr, end - addr, mps, PAGE) as u32;
            self.emit(&mut qp, qpn, (Dir::Up, TlpKind::MWr), n, purpose);
            addr += u64::from(n);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_splits_at_mrrs_and_rcb() {
        let mut l = Link::new(PcieConfig::default());
        l.dma_read(None, None, 0x10000, 1024, Purpose::SendWqeFetch);
        assert_eq!(l.other.dma_reads, 2);
        assert_eq!(l.other.completions, 8);
        assert_eq!(l.other.bytes_up, 48);
        assert_eq!(l.other.bytes_down, 1024 + 8 * 20);
    }

    #[test]
    fn unaligned_read_touches_two_rcb_blocks() {
        let mut l = Link::new(PcieConfig::default());
        l.dma_read(None, None, 0x10070, 32, Purpose::Gather);
        assert_eq!((l.other.dma_reads, l.other.completions), (1, 2));
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
