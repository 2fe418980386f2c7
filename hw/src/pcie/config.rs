//! The link's parameters ([`PcieConfig`]): payload and request sizes, how completions
//! split, the per-TLP overheads, the NIC's context and translation caches, and the traffic
//! the classic accounting leaves out.

/// How a root complex splits the completions answering one read request.
///
/// Either way the first completion ends at a read-completion-boundary (RCB) aligned address
/// and the later ones are whole RCB multiples until the last (PCIe Base Specification,
/// "Data Return for Read Requests"); the variants differ in how many RCBs one completion
/// carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Completions {
    /// One completion per RCB block: "observed on several older chipsets" (pcie-model's
    /// `rcb_chunks=True`), and the read completion size of Kalia et al. (ATC'16).
    Rcb,
    /// Completions as large as MPS allows, each still ending on an RCB boundary: what
    /// pcie-bench's model assumes by default (`rcb_chunks=False`, `ceil(len / MPS)`
    /// completions for an aligned read).
    Mps,
}

/// A cache of QP, CQ and memory-key contexts in the NIC, backed by context memory in host
/// RAM (ICM): a context not in the cache is read from the host by DMA before the NIC can
/// use it. One LRU over all kinds; the sizes default to the contexts' sizes in the command
/// interface (`mlx5_ifc.h`: `qpc` 0x740 bits, `cqc` 0x200, `mkc` 0x200). The cache's real
/// size, organisation and entry sizes are not public: every field is a knob.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ContextCache {
    /// Contexts the cache holds (of any kind); 0 caches nothing.
    pub entries: u32,
    /// Bytes read on a QP context miss.
    pub qpc_bytes: u32,
    /// Bytes read on a CQ context miss.
    pub cqc_bytes: u32,
    /// Bytes read on a memory-key context miss.
    pub mkc_bytes: u32,
}

impl ContextCache {
    /// A cache of `entries` contexts with the command-interface context sizes (232, 64 and
    /// 64 bytes).
    pub fn new(entries: u32) -> Self {
        ContextCache {
            entries,
            qpc_bytes: 0x740 / 8,
            cqc_bytes: 0x200 / 8,
            mkc_bytes: 0x200 / 8,
        }
    }
}

/// A cache of address translations in the NIC: every page of a memory region the NIC
/// touches needs its translation (an MTT entry of the region's memory key), and a
/// translation not in the cache is read from host memory (ICM) by DMA first. Keyed by memory
/// key and page, in the page size the region was registered with (4 KiB, or 2 MiB on huge
/// pages): a region on huge pages needs one entry per 2 MiB. The cache's real size and
/// organisation are not public: both are knobs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TranslationCache {
    /// Translations the cache holds; 0 caches nothing.
    pub entries: u32,
    /// Bytes read on a miss: one MTT entry, `struct mlx5_mtt` (a big-endian 64-bit page
    /// address), 8 bytes.
    pub entry_bytes: u32,
    /// Queue rings share the cache: the NIC's WQE fetches from send, receive and SRQ rings
    /// (not BlueFlame copies) and its CQE writes translate the ring's pages too, in the page
    /// size the ring was created with ([`crate::Nic::set_ring_page_size`]). The kernel hands
    /// rings to the device as page lists (`pas` with `log_page_size`), so they are
    /// translated; whether through the cache that serves memory keys is not public.
    pub rings: bool,
}

impl TranslationCache {
    /// A cache of `entries` translations of one 8-byte MTT entry each, of memory keys only.
    pub fn new(entries: u32) -> Self {
        TranslationCache {
            entries,
            entry_bytes: 8,
            rings: false,
        }
    }

    /// The same cache translating queue rings too ([`TranslationCache::rings`]).
    pub fn with_rings(self) -> Self {
        TranslationCache {
            rings: true,
            ..self
        }
    }
}

/// Link parameters, and the NIC-side traffic the classic per-message accounting leaves out
/// (each off by default). Overheads are bytes per TLP on the wire beyond the payload
/// (framing, sequence number, header, LCRC).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PcieConfig {
    /// Max payload size of a write or completion TLP.
    pub mps: u32,
    /// Max read request size.
    pub mrrs: u32,
    /// Read completion boundary.
    pub rcb: u32,
    /// How read completions are split (RCB-sized or up to MPS).
    pub completions: Completions,
    /// Split the NIC's writes at MPS-aligned addresses (a write starting mid-block then
    /// begins with a short TLP) instead of in MPS steps from the start address. Which one a
    /// ConnectX does is not public (review C10); both stay within 4 KiB pages.
    pub mps_aligned_writes: bool,
    /// Overhead of a memory write TLP.
    pub mwr_overhead: u32,
    /// Overhead of a memory read request TLP.
    pub mrd_overhead: u32,
    /// Overhead of a completion-with-data TLP.
    pub cpld_overhead: u32,
    /// Count data link layer packets: for every TLP, the receiving side returns one Ack and
    /// one UpdateFC DLLP of [`DLLP_BYTES`](crate::DLLP_BYTES) each (no coalescing: an upper
    /// bound).
    pub dllps: bool,
    /// Every this many complete BlueFlame WQEs (0: never), the NIC has evicted the pushed
    /// copy before using it (Kalia et al., ATC'16, section 3.5, under load) and reads the
    /// WQE from the ring by DMA instead (`Stats::bf_evicted`). Deterministic: the Nth,
    /// 2Nth, ... copy of the NIC is evicted.
    pub bf_evict_every: u32,
    /// Count the driver's EQ doorbell after each event: the kernel's `eq_update_ci` writes
    /// 4 bytes to the EQ's doorbell once per interrupt it handles (one 4-byte MMIO down per
    /// event, `Purpose::EqArm`).
    pub eq_rearm: bool,
    /// The NIC's context cache (`None`: every context is on chip, no reads).
    pub context_cache: Option<ContextCache>,
    /// Count the NIC's re-read of the send WQEs it retransmits (the model re-executes them
    /// from the ring either way; with this off the re-read is free).
    pub retry_refetch: bool,
    /// The NIC's address-translation cache (`None`: every translation is on chip, no
    /// reads).
    pub translation_cache: Option<TranslationCache>,
}

impl PcieConfig {
    /// The parameters of pcie-bench's model (Neugebauer et al., SIGCOMM'18, pcie-model's
    /// defaults): MPS 256, MRRS 512, RCB 128 with completions up to MPS
    /// ([`Completions::Mps`]), 24/24/20 bytes of overhead (64-bit addresses), no DLLPs;
    /// none of the optional NIC traffic.
    pub fn pcie_bench() -> Self {
        PcieConfig {
            mps: 256,
            mrrs: 512,
            rcb: 128,
            completions: Completions::Mps,
            mps_aligned_writes: false,
            mwr_overhead: 24,
            mrd_overhead: 24,
            cpld_overhead: 20,
            dllps: false,
            bf_evict_every: 0,
            eq_rearm: false,
            context_cache: None,
            retry_refetch: false,
            translation_cache: None,
        }
    }

    /// Kalia et al. (ATC'16): the 26/26/22 overheads and RCB-sized (128-byte) completions,
    /// their read completion size; otherwise as [`PcieConfig::pcie_bench`].
    pub fn kalia() -> Self {
        PcieConfig {
            completions: Completions::Rcb,
            mwr_overhead: 26,
            mrd_overhead: 26,
            cpld_overhead: 22,
            ..Self::pcie_bench()
        }
    }
}

impl Default for PcieConfig {
    /// [`PcieConfig::pcie_bench`].
    fn default() -> Self {
        Self::pcie_bench()
    }
}
