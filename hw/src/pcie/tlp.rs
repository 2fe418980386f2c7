//! What the link accounting records: each TLP's direction, kind and purpose, the optional
//! trace, and the cumulative counters.

use std::ops::{Add, Sub};

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
    /// The driver's 4-byte EQ doorbell after handling an event (`PcieConfig::eq_rearm`).
    EqArm,
    /// Send WQE re-read for a retransmission (`PcieConfig::retry_refetch`).
    WqeRefetch,
    /// QP context read on a context-cache miss.
    QpContext,
    /// CQ context read on a context-cache miss.
    CqContext,
    /// Memory-key context read on a context-cache miss.
    MkeyContext,
    /// Translation (MTT entry) read on a translation-cache miss.
    Translation,
    /// CPU write into on-chip device memory (MEMIC) through its write-combining mapping.
    DeviceMemory,
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
    pub(crate) fn count(&mut self, t: &Tlp, dllps: bool) {
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
