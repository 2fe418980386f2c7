//! What one size's run produces: link counters, statistics and the row the report prints.

use mlx5_direct::backend::sim::PcieCounters;
use mlx5_direct::DoorbellMode;
use serde::{Deserialize, Serialize};

use crate::exchange::QpRecord;
use crate::stats::{BwRow, LatRow, Latencies};

/// Link counters as exchanged.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counts {
    /// MMIO writes (CPU to NIC).
    pub mmio_writes: u64,
    /// DMA read requests.
    pub dma_reads: u64,
    /// Read completions (CplD).
    pub completions: u64,
    /// DMA writes.
    pub dma_writes: u64,
    /// Link bytes host to NIC.
    pub bytes_down: u64,
    /// Link bytes NIC to host.
    pub bytes_up: u64,
}

impl From<PcieCounters> for Counts {
    fn from(c: PcieCounters) -> Self {
        Counts {
            mmio_writes: c.mmio_writes,
            dma_reads: c.dma_reads,
            completions: c.completions,
            dma_writes: c.dma_writes,
            bytes_down: c.bytes_down,
            bytes_up: c.bytes_up,
        }
    }
}

/// Link cost per message (or per ping-pong iteration).
#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
pub struct PerMessage {
    /// MMIO writes.
    pub mmio_writes: f64,
    /// DMA read requests (MRd).
    pub dma_reads: f64,
    /// Read completions (CplD).
    pub completions: f64,
    /// DMA writes (MWr up).
    pub dma_writes: f64,
    /// Link bytes host to NIC.
    pub bytes_down: f64,
    /// Link bytes NIC to host.
    pub bytes_up: f64,
}

impl PerMessage {
    pub(super) fn new(c: Counts, n: u64) -> Self {
        let f = |x: u64| x as f64 / n.max(1) as f64;
        PerMessage {
            mmio_writes: f(c.mmio_writes),
            dma_reads: f(c.dma_reads),
            completions: f(c.completions),
            dma_writes: f(c.dma_writes),
            bytes_down: f(c.bytes_down),
            bytes_up: f(c.bytes_up),
        }
    }
}

/// The PCIe cost of a row on each side's link.
#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
pub struct RowPcie {
    /// The client's NIC (the requester in bandwidth tests).
    pub client: PerMessage,
    /// The server's NIC (the responder in bandwidth tests).
    pub server: PerMessage,
}

/// One result row.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Stats {
    /// A latency row.
    Lat(LatRow),
    /// A bandwidth row.
    Bw(BwRow),
}

/// Completions by opcode on each side.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct RowCompletions {
    /// The client's.
    pub client: std::collections::BTreeMap<String, u64>,
    /// The server's.
    pub server: std::collections::BTreeMap<String, u64>,
}

/// One size's results.
#[derive(Debug)]
pub struct Row {
    /// Statistics.
    pub stats: Stats,
    /// PCIe per message, on the model.
    pub pcie: Option<RowPcie>,
    /// The latency samples (latency tests), for the plot.
    pub latencies: Option<Latencies>,
    /// perftest's latency samples in microseconds, in order (with `-H` / `-U`).
    pub samples: Option<Vec<f64>>,
    /// `--hw-timestamps`: the latency by the NIC's clock (latency tests).
    pub hw: Option<super::HwRow>,
    /// Messages (ping-pong iterations) run in all; more than the row's iterations in
    /// duration mode, whose margins are run and not sampled.
    pub messages: u64,
    /// Completions each side polled during the size, by opcode (`send`, `rdma_write`,
    /// `recv_rdma_with_imm`, ...; `with_imm`: those carrying an immediate).
    pub completions: Option<RowCompletions>,
    /// `--cpu_util`: the CPU utilisation over the sampling window, in percent.
    pub cpu_util: Option<f64>,
    /// `-W`: each counter's change over the size.
    pub counters: Vec<(String, u64)>,
    /// `-b`: this side's own row and the peer's (`--report-both` prints them).
    pub directions: Option<(Stats, Stats)>,
}

/// What the client learnt while connecting, for the report header.
#[derive(Clone, Debug)]
pub struct Setup {
    /// Device name.
    pub device: String,
    /// The doorbell mode in effect.
    pub mode: DoorbellMode,
    /// Active MTU.
    pub mtu: u32,
    /// Our QPs.
    pub local: Vec<QpRecord>,
    /// The peer's QPs.
    pub remote: Vec<QpRecord>,
    /// True on the server (perftest's server prints no TX depth and, in SEND tests, its RX
    /// depth).
    pub server: bool,
    /// Outstanding READs / atomics per QP in effect (`-o` or the device's maximum).
    pub out_reads: u8,
    /// CQEs taken per poll call.
    pub cqe_poll: u16,
    /// Type of service of the rdma_cm connections (`-T`).
    pub tos: Option<u8>,
    /// The source GID index in use where perftest prints one (`GID index` and the `GID:`
    /// lines): `-x`, or on RoCE the port's; none on InfiniBand without `-x`.
    pub gid_index: Option<u32>,
}
