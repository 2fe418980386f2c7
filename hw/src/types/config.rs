//! What a NIC is built with ([`NicConfig`]) and the knobs it holds: CQE compression, the
//! P_Key a UD CQE carries, DC refusals, DCI stream capabilities (multicast, XRC and
//! packet pacing knobs have files of their own).

use crate::clock::ClockShift;
use crate::pcie::PcieConfig;
use crate::types::device::{LinkLayer, RoceGid};
use crate::types::eth::EthConfig;
use crate::types::mcast::McastConfig;
use crate::types::pacing::{PacingClock, PacketPacing};
use crate::types::xrc::XrcConfig;

/// NIC construction parameters.
#[derive(Clone, Debug)]
pub struct NicConfig {
    /// BlueFlame half size in bytes: 0 (no BlueFlame) or a multiple of 64 up to 1024;
    /// any other value means 0.
    pub bf_size: u32,
    /// PCIe link parameters used for accounting.
    pub pcie: PcieConfig,
    /// Number of ports (all share the NIC's LID).
    pub ports: u8,
    /// `atomic_req_8B_endianness_mode` of the HCA atomic caps: true (mode 1, what the
    /// kernel's `handle_hca_cap_atomic` sets whenever the device supports it) writes the
    /// results of 8-byte atomics (standard and masked) to the requester's buffer in host
    /// byte order; false (mode 0) writes them big-endian. Results of 4-byte masked atomics
    /// are big-endian in both modes.
    pub atomic_8b_host_order: bool,
    /// PCIe AtomicOps enabled between the NIC and the host (a firmware setting, off by
    /// default): the responder's atomic is then one atomic operation on host memory, atomic
    /// against CPU threads too. Off, it is a DMA read followed by a DMA write, atomic only
    /// against other atomics through the same HCA (`IB_ATOMIC_HCA`).
    pub pcie_atomic_ops: bool,
    /// Largest message in bytes (`1 << log_max_msg`; ConnectX-4..7 report 2^30). At most
    /// 2^31; larger values mean 2^31.
    pub max_msg_sz: u32,
    /// CQE version of the QPs' context: 1 writes each QP's `QpParams::user_index` into
    /// `srqn_uidx` of every CQE of that QP (what rdma-core contexts negotiate on current
    /// kernels, and what `mlx5_poll_cq_v1` looks QPs up by); any other value is version 0
    /// (`srqn_uidx` is the SRQN of an SRQ receive, else 0).
    pub cqe_version: u8,
    /// What a refused DC connect request does ([`DcRefusal`]; not pinned by a source).
    pub dc_refusal: DcRefusal,
    /// The device supports on-demand paging for RC (`IBV_ODP_SUPPORT` with the RC
    /// SEND/RECV/WRITE/READ/ATOMIC transport caps, as ConnectX-4 and later report): memory
    /// keys registered with [`Access::ON_DEMAND`](crate::Access::ON_DEMAND). Off, such
    /// registrations are refused.
    pub odp: bool,
    /// An SRQ receive whose on-demand buffer is not present is consumed and completed with
    /// REMOTE_ABORTED_ERR (0x22) and vendor syndrome 0x93 (`MLX5_CQE_VENDOR_SYNDROME_ODP_PFAULT`)
    /// while the pages are faulted in, the requester answered an RNR NAK, the QP left in
    /// RTS: rdma-core's `mlx5_complete_odp_fault` path. Off (the default), the NIC waits for
    /// the fault as for an RQ receive. When hardware does which is not public: a knob.
    pub srq_odp_fault_cqe: bool,
    /// Device clock rate in kHz (`device_frequency_khz`, reported as `hca_core_clock`): the
    /// free-running clock every successful CQE carries at bytes 48..56 (`Nic::clock_info`
    /// converts it). 156 250 is what a ConnectX-5 reports; 0 is a device without a clock,
    /// whose CQEs carry 0 and which refuses [`Nic::clock_info`](crate::Nic::clock_info).
    pub clock_khz: u32,
    /// How the kernel chose the clock-info page's shift: by frequency as current kernels do
    /// (default), or the constant of older ones ([`ClockShift::Fixed`]`(23)`). Only the
    /// page changes: how long a copy of it converts right.
    pub clock_shift: ClockShift,
    /// 0: the device clock follows the host's monotonic clock at `clock_khz` (CQE timestamps
    /// are real elapsed time); any other value: the clock advances by this many ticks at
    /// each CQE written and nothing else (deterministic timestamps for tests and `explain`).
    pub clock_step: u64,
    /// When and how CQs created with
    /// [`CqParams::compression`](crate::CqParams::compression) compress (docs/model.md,
    /// "CQE compression").
    pub cqe_zip: ZipConfig,
    /// The HCA cap `compact_address_vector`: UD and DCI WQEs may carry the 16-byte compact
    /// AV (bit 31 of `dqp_dct` clear: key, `dqp_dct`, `stat_rate_sl`, `fl_mlid`, `rlid`, no
    /// GRH), which UCX uses only when the cap is set. Off (default), a WQE whose AV lacks
    /// `MLX5_EXTENDED_UD_AV` is malformed: LOCAL_QP_OP_ERR (docs/model.md, UD).
    pub compact_av: bool,
    /// On-chip device memory (MEMIC) in bytes: the `max_dm_size` the device reports
    /// (`memic_bar_size`), allocated in whole 4 KiB pages. 0 (the default): none, and
    /// [`Nic::alloc_dm`](crate::Nic::alloc_dm) is refused (docs/model.md, "Device memory").
    pub dm_size: u64,
    /// What a UD receive CQE carries in `imm_inval_pkey` bits 15..0 when the message had no
    /// immediate ([`CqePkey`]; the sources disagree, docs/model.md "UD").
    pub cqe_pkey: CqePkey,
    /// DCI stream capabilities and knobs ([`DciStreamConfig`]).
    pub dci_streams: DciStreamConfig,
    /// The ports' link layer: InfiniBand (default) or Ethernet (RoCE).
    pub link_layer: LinkLayer,
    /// The MTU of the Ethernet interface under a RoCE port (`ip link`; default 1500, the
    /// Ethernet default). The port's active MTU is the largest IB MTU left after RoCE's
    /// headers, as the kernel's `iboe_get_mtu` (include/rdma/ib_addr.h) computes it for
    /// mlx5's RoCE port query ([`NicConfig::active_mtu`]). Unused on InfiniBand.
    pub netdev_mtu: u32,
    /// The GID table of an Ethernet port, in index order (ignored on InfiniBand). Empty
    /// (the default): one entry, the link-local address as RoCE v2 at index 0. A real
    /// netdev lists each address twice, RoCE v1 then v2 ([`RoceGid::both_types`]).
    pub roce_gids: Vec<RoceGid>,
    /// The UDP source port of a RoCE v2 address handle with flow label 0, for which
    /// rdma-core picks a random port in 0xC000..=0xFFFF (`mlx5_ah_set_udp_sport`,
    /// `providers/mlx5/verbs.c`). `None` (the default): always 0xC000. `Some(seed)`: a
    /// pseudo-random port in that range per address handle, the same sequence for the same
    /// seed (xorshift64*; a seed of 0 is taken as 1).
    pub udp_sport_seed: Option<u64>,
    /// Raw Ethernet capabilities and knobs ([`EthConfig`]).
    pub eth: EthConfig,
    /// UD multicast: group limits and loopback ([`McastConfig`]).
    pub mcast: McastConfig,
    /// XRC: the cap and the target's refusal ([`XrcConfig`]).
    pub xrc: XrcConfig,
    /// Packet pacing caps: per-QP rate limits ([`PacketPacing`]).
    pub packet_pacing: PacketPacing,
    /// The time the packet pacer runs on ([`PacingClock`]).
    pub pacing_clock: PacingClock,
}

/// The P_Key field of a UD receive CQE (`mlx5_cqe64.imm_inval_pkey` bits 15..0 of a
/// SEND without immediate). rdma-core's `handle_responder` reports those bits as
/// `wc.pkey_index`; the kernel's reads them as the P_Key *value* and looks its index up
/// (QP1 only, `ib_find_cached_pkey`). No public source says which one ConnectX writes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CqePkey {
    /// The receiving QP's P_Key index (rdma-core's reading; the model's table has one
    /// entry, so 0).
    #[default]
    Index,
    /// The P_Key at that index (the kernel's reading): the model's default P_Key 0xffff.
    Value,
}

/// The NIC side of CQE compression: when it compresses and what its mini-CQEs look like.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ZipConfig {
    /// When CQEs that are ready together are compressed.
    pub policy: ZipPolicy,
    /// `cqe_compression_max_num`: the most completions one block (one session) holds; at
    /// least 2 (smaller values mean 2). Nothing public gives a device's value; 64 is what
    /// the facts table's largest block uses.
    pub max_num: u16,
    /// The HCA cap `enhanced_cqe_compression` (ConnectX-6 on, per the kernel commit that
    /// added the layout): false refuses CQs asking for the enhanced layout.
    pub enhanced: bool,
    /// Where a requester mini-CQE's send opcode goes: false is byte 2 (kernel
    /// `mlx5_mini_cqe8.s_wqe_info`, UCX, what the driver reads); true is byte 3 with
    /// byte 2 the validity iteration count (a DPDK header's reading; UNVERIFIED which one
    /// ConnectX writes).
    pub req_opcode_byte3: bool,
    /// Whether an enhanced session outlives the burst that opened it. True: CQEs of a later
    /// burst that could have joined it (same QP and fields, within `max_num`, and nothing
    /// else written to the CQ since) continue it in new compressed slots with no new title,
    /// which is what the poll loops expect (UCX keeps the title while compressed slots
    /// follow each other: `uct_ib_mlx5_iface_cqe_unzip_init`, `title_cqe_valid`; the
    /// kernel's 2c925db0a7d6: the session's CQEs reach software "as soon as a single CQE
    /// slot is filled, instead of waiting for session to close"). False (the default):
    /// every burst closes its sessions. How long hardware keeps a session open between
    /// CQEs is `cqe_compression_timeout`, whose value is not public: a knob. The basic
    /// layout's title counts the whole block, so its sessions always end with the burst.
    pub sessions_span_bursts: bool,
    /// The HCA cap `cqe_compression_128` (the kernel requires it for compressed 128-byte
    /// CQEs, rdma-core reports it as `MLX5DV_CONTEXT_FLAGS_CQE_128B_COMP`): true accepts
    /// compressed CQs of 128-byte CQEs, whose titles, mini-CQE arrays and slots sit in
    /// the entry's last 64 bytes. False (the default; which devices set it is not public)
    /// refuses them.
    pub compress_128: bool,
    /// Whether an enhanced compressed slot carries the owner bit of its pass in bit 0 of
    /// byte 63. Nothing public says: the kernel (`mlx5_cqwq_get_cqe_enhanced_comp`), DPDK
    /// (`check_cqe_iteration`) and UCX poll this layout by the validity count (byte 62) and
    /// never read it, and NVIDIA's FlexIO header names byte 63 of a compressed CQE
    /// `num_and_type`, with no owner field. True (the default) writes it; false leaves it
    /// 0, so that a poller that relies on it stalls on every odd pass.
    pub owner_in_enhanced_slots: bool,
}

impl Default for ZipConfig {
    fn default() -> Self {
        ZipConfig {
            policy: ZipPolicy::UnderBackpressure,
            max_num: 64,
            enhanced: true,
            req_opcode_byte3: false,
            sessions_span_bursts: false,
            compress_128: false,
            owner_in_enhanced_slots: true,
        }
    }
}

/// When a NIC compresses the CQEs of a CQ created with compression.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ZipPolicy {
    /// Every burst: CQEs of one CQ produced by one doorbell (or one `progress`) that may
    /// share a block are compressed whenever there are two or more (deterministic, for
    /// tests and `explain`).
    EveryBurst,
    /// Only while the link is congested (`Fault::PcieBackpressure`), as hardware does
    /// ("when PCI back pressure is detected", DPDK 99c12dcca65d); otherwise every CQE is
    /// written whole.
    UnderBackpressure,
}

/// What `iboe_get_mtu` takes off a netdev MTU before choosing the IB MTU: the GRH (40),
/// UDP (8), BTH (12), XRC extension (4), AtomicETH (28) and ICRC (4) bytes.
const ROCE_HEADERS: u32 = 40 + 8 + 12 + 4 + 28 + 4;

impl NicConfig {
    /// The ports' active MTU in bytes: 4096 on InfiniBand; on Ethernet the largest of
    /// 4096, 2048, 1024, 512 and 256 that [`netdev_mtu`](Self::netdev_mtu) holds after 96
    /// bytes of headers (`iboe_get_mtu`: 1500 gives 1024, 9000 gives 4096), 0 below 352.
    pub fn active_mtu(&self) -> u32 {
        match self.link_layer {
            LinkLayer::InfiniBand => 4096,
            LinkLayer::Ethernet => {
                let room = self.netdev_mtu.saturating_sub(ROCE_HEADERS);
                [4096, 2048, 1024, 512, 256]
                    .into_iter()
                    .find(|&mtu| room >= mtu)
                    .unwrap_or(0)
            }
        }
    }
}

impl Default for NicConfig {
    fn default() -> Self {
        NicConfig {
            bf_size: 256,
            pcie: PcieConfig::default(),
            ports: 1,
            atomic_8b_host_order: true,
            pcie_atomic_ops: false,
            max_msg_sz: 1 << 30,
            cqe_version: 0,
            dc_refusal: DcRefusal::Drop,
            odp: true,
            srq_odp_fault_cqe: false,
            clock_khz: 156_250,
            clock_shift: ClockShift::PerFrequency,
            clock_step: 0,
            cqe_zip: ZipConfig::default(),
            compact_av: false,
            dm_size: 0,
            cqe_pkey: CqePkey::Index,
            dci_streams: DciStreamConfig::default(),
            link_layer: LinkLayer::InfiniBand,
            netdev_mtu: 1500,
            roce_gids: Vec::new(),
            udp_sport_seed: None,
            eth: EthConfig::default(),
            mcast: McastConfig::default(),
            xrc: XrcConfig::default(),
            packet_pacing: PacketPacing::default(),
            pacing_clock: PacingClock::Host,
        }
    }
}

/// What a DCT does with a DCI's connect request it refuses (a wrong DC key, no such DCT).
/// No public source pins what mlx5 does (prm-facts-next §3.6 and §10: the DCI's syndrome
/// is UNVERIFIED), so the model offers both readings.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum DcRefusal {
    /// The request is dropped: the DCI hears nothing, retransmits on its timeout and
    /// completes with TRANSPORT_RETRY_EXC_ERR after `retry_cnt` retries.
    #[default]
    Drop,
    /// The DCT answers with a NAK: the DCI completes at once with REMOTE_ACCESS_ERR (wrong
    /// key) or REMOTE_INVAL_REQ_ERR (no such DCT).
    Nak,
}

/// The device's DCI stream capabilities and the parts of stream behaviour no public source
/// pins (docs/model.md, "DCI streams").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DciStreamConfig {
    /// `dci_streams_caps.max_log_num_concurent` (HCA cap `log_max_dci_stream_channels`): a
    /// DCI asking for more is refused (rdma-core's EINVAL). 0: no streams. The default 4 is
    /// the model's choice, not a device's.
    pub max_log_channels: u8,
    /// `dci_streams_caps.max_log_num_errored` (`log_max_dci_errored_streams`). 0 also makes
    /// [`Nic::reset_dci_stream`](crate::Nic::reset_dci_stream) unsupported, as rdma-core's
    /// `mlx5dv_dci_stream_id_reset` returns EOPNOTSUPP then. Default 4 (the model's).
    pub max_log_errored: u8,
    /// The syndrome of a WQE naming a stream id at or above `1 << log_channels` (a local
    /// error of the whole DCI: the stream does not exist). Not public; default
    /// LOCAL_QP_OP_ERR (0x02), the model's syndrome for a malformed WQE.
    pub bad_stream_syndrome: u8,
    /// Whether a local error of a WQE (length, protection, malformed) is confined to its
    /// stream like the errors reported by the target and the retry timers. Not public;
    /// default false: a local error takes the whole DCI to ERR.
    pub local_errors_are_stream_errors: bool,
    /// Whether a DCI created without streams (`log_channels` 0) ignores the stream id in
    /// its WQEs (control bytes 9..10). Not public; default true, because perftest (since
    /// de9ae43, 2021) posts ids 0, 1, 2, ... on plain DCIs (`-c DC` without
    /// `--log_dci_streams`) and NVIDIA runs that test on ConnectX. False: the id is checked
    /// as on a DCI with streams, and any id but 0 fails the DCI with `bad_stream_syndrome`.
    pub plain_dci_ignores_stream: bool,
}

impl Default for DciStreamConfig {
    fn default() -> Self {
        DciStreamConfig {
            max_log_channels: 4,
            max_log_errored: 4,
            bad_stream_syndrome: 0x02,
            local_errors_are_stream_errors: false,
            plain_dci_ignores_stream: true,
        }
    }
}
