//! Public parameter, result and error types of the model.

use crate::clock::ClockShift;
use crate::pcie::PcieConfig;
use std::fmt;
use std::ops::BitOr;

/// Memory and QP access rights (same values as `ibv_access_flags`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Access(pub u32);

impl Access {
    /// No rights beyond local read.
    pub const NONE: Access = Access(0);
    /// The NIC may write local memory (receive scatter, READ and atomic results).
    pub const LOCAL_WRITE: Access = Access(1);
    /// Remote peers may RDMA WRITE.
    pub const REMOTE_WRITE: Access = Access(2);
    /// Remote peers may RDMA READ.
    pub const REMOTE_READ: Access = Access(4);
    /// Remote peers may run atomics.
    pub const REMOTE_ATOMIC: Access = Access(8);
    /// A memory key registered on demand (`IBV_ACCESS_ON_DEMAND`, bit 6): nothing is
    /// present at registration; the NIC faults pages in on first touch. Memory keys only.
    pub const ON_DEMAND: Access = Access(1 << 6);

    /// True if every right in `other` is also in `self`.
    pub fn contains(self, other: Access) -> bool {
        self.0 & other.0 == other.0
    }
}

impl BitOr for Access {
    type Output = Access;
    fn bitor(self, rhs: Access) -> Access {
        Access(self.0 | rhs.0)
    }
}

/// Errors of the slow-path (object) interface.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HwError {
    /// The named object does not exist on this NIC.
    NoSuchObject,
    /// The object is still referenced by another object.
    Busy,
    /// The QP state transition is not allowed from the current state.
    InvalidTransition,
    /// A parameter is out of range; the text names it.
    InvalidParam(&'static str),
    /// A table or ring limit was reached.
    OutOfResources,
    /// An address is null, misaligned or wraps the address space.
    BadAddress,
    /// The device does not have this capability (`NicConfig` turned it off).
    NotSupported(&'static str),
}

impl fmt::Display for HwError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HwError::NoSuchObject => f.write_str("no such object"),
            HwError::Busy => f.write_str("object in use"),
            HwError::InvalidTransition => f.write_str("invalid QP state transition"),
            HwError::InvalidParam(what) => write!(f, "invalid parameter: {what}"),
            HwError::OutOfResources => f.write_str("out of resources"),
            HwError::BadAddress => f.write_str("bad address"),
            HwError::NotSupported(what) => write!(f, "not supported by the device: {what}"),
        }
    }
}

impl std::error::Error for HwError {}

/// Device capabilities (the subset of `ibv_device_attr` / HCA caps the driver needs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Caps {
    /// Maximum send queue size in WQEBBs.
    pub max_qp_wr: u32,
    /// Maximum size of one send WQE in bytes (63 DS).
    pub max_sq_desc_sz: u32,
    /// Maximum gather entries in a send WQE.
    pub max_send_sge: u32,
    /// Maximum scatter entries in a receive WQE.
    pub max_recv_sge: u32,
    /// Maximum CQ entries.
    pub max_cqe: u32,
    /// Maximum inline payload in one WQE.
    pub max_inline: u32,
    /// BlueFlame half size in bytes (0 = none).
    pub bf_size: u32,
    /// Maximum outstanding RDMA READ/atomic per QP.
    pub max_rd_atomic: u8,
    /// Maximum message size.
    pub max_msg_sz: u32,
    /// 8-byte atomic results in host byte order (`NicConfig::atomic_8b_host_order`).
    pub atomic_8b_host_order: bool,
    /// The compact (16-byte) address vector is accepted (`NicConfig::compact_av`).
    pub compact_av: bool,
    /// Device memory in bytes (`max_dm_size` of `ibv_query_device_ex`; 0: none), whole
    /// 4 KiB pages of [`NicConfig::dm_size`].
    pub max_dm_size: u64,
}

/// Port attributes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PortAttr {
    /// Local identifier of the port (0 on Ethernet).
    pub lid: u16,
    /// The link layer ([`NicConfig::link_layer`]).
    pub link_layer: LinkLayer,
    /// GID 0 of the port.
    pub gid: [u8; 16],
    /// Active MTU in bytes.
    pub active_mtu: u32,
    /// Entries in the port's GID table (`ibv_port_attr.gid_tbl_len`): 1 on InfiniBand, the
    /// length of [`NicConfig::roce_gids`] (1 when it is empty) on Ethernet.
    pub gid_table_len: u32,
}

/// The type of a GID table entry (`enum ibv_gid_type` of `ibv_query_gid_ex`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GidType {
    /// An InfiniBand port's GID.
    Ib,
    /// RoCE v1: the packets carry an IBA GRH (next header 0x1B) straight over Ethernet
    /// (ethertype 0x8915); not routable.
    RoceV1,
    /// RoCE v2: the packets carry IPv6 (or IPv4 for an IPv4-mapped GID) and UDP (port
    /// 4791).
    RoceV2,
}

/// The address of a RoCE GID table entry ([`RoceGid`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GidAddr {
    /// The port's link-local IPv6 address: `fe80::` + the modified EUI-64 of the model's
    /// MAC `02:00:00:00:LID` (the kernel's default GID of a netdev).
    LinkLocal,
    /// An IPv4 address: the IPv4-mapped GID `::ffff:a.b.c.d` (the kernel's
    /// `rdma_ip2gid`).
    Ipv4([u8; 4]),
    /// Any other IPv6 address, as given.
    Ipv6([u8; 16]),
}

/// One entry of a RoCE port's GID table ([`NicConfig::roce_gids`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RoceGid {
    /// RoCE v1 or v2 ([`GidType::Ib`] is not a RoCE type: `Nic::new` panics on it).
    pub gid_type: GidType,
    /// The address.
    pub addr: GidAddr,
    /// The VLAN of the netdev holding the address (12 bits, 0..=4094; `Nic::new` panics
    /// on a larger value): packets from this GID carry the tag, and packets to it are
    /// received only with it.
    pub vlan: Option<u16>,
}

impl RoceGid {
    /// The two entries the kernel adds for one address of a netdev (`roce_gid_mgmt.c`
    /// `update_gid` adds one per GID type the port supports: RoCE v1, then v2).
    pub fn both_types(addr: GidAddr, vlan: Option<u16>) -> [RoceGid; 2] {
        [GidType::RoceV1, GidType::RoceV2].map(|gid_type| RoceGid {
            gid_type,
            addr,
            vlan,
        })
    }
}

/// A GID table entry as [`Nic::query_gid`](crate::Nic::query_gid) reads it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GidEntry {
    /// The GID.
    pub gid: [u8; 16],
    /// Its type.
    pub gid_type: GidType,
    /// Its VLAN (RoCE).
    pub vlan: Option<u16>,
}

/// A port's link layer (`ibv_port_attr.link_layer`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LinkLayer {
    /// InfiniBand: LIDs; a GRH only where an address has a global route.
    #[default]
    InfiniBand,
    /// Ethernet, RoCE: no LIDs (the port reports LID 0), every address is global, the
    /// source GID's entry in [`NicConfig::roce_gids`] says what the packets carry (RoCE v1:
    /// an IBA GRH; v2: IPv6, or IPv4 for an IPv4-mapped GID, and UDP; a VLAN tag), and UD
    /// receives always get that header in their GRH area (docs/model.md, "RoCE").
    Ethernet,
}

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
    /// keys registered with [`Access::ON_DEMAND`]. Off, such registrations are refused.
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
    /// When and how CQs created with [`CqParams::compression`] compress (docs/model.md,
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

/// A CQ's request for compressed CQEs (CQC `cqe_comp_en`, `cqe_comp_layout`,
/// `mini_cqe_res_format`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CqCompression {
    /// The block layout.
    pub layout: ZipLayout,
    /// What responder mini-CQEs carry besides the byte count.
    pub format: MiniFormat,
}

/// `cqe_comp_layout`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ZipLayout {
    /// 0: a title CQE, then arrays of 8 mini-CQEs at title+1, +8, +16, ...
    Basic,
    /// 1: after a normal title CQE, slots of up to 7 mini-CQEs; validity counts in byte 62.
    Enhanced,
}

/// `mini_cqe_res_format` of responder mini-CQEs (bytes 0..4).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MiniFormat {
    /// RX hash (BE32). The model computes no RSS hash on IB: 0.
    Hash,
    /// Checksum (BE16); bytes 2..4 reserved. The model writes 0 (no IP checksum on IB).
    Csum,
    /// Checksum and stride index (BE16 each); the model writes 0 for both.
    CsumStridx,
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
        }
    }
}

/// CQ creation parameters (the CQC fields the kernel would fill).
#[derive(Clone, Copy, Debug, Default)]
pub struct CqParams {
    /// CQ buffer: `cqe_size << log_cqe_cnt` bytes, 64-byte aligned.
    pub buf: u64,
    /// log2 of the number of CQEs.
    pub log_cqe_cnt: u8,
    /// 64 or 128.
    pub cqe_size: u32,
    /// Doorbell record: BE32 consumer index at +0, BE32 arm word at +4.
    pub dbrec: u64,
    /// Do not check the consumer index for overrun.
    pub overrun_ignore: bool,
    /// The completion channel ([`Nic::create_channel`](crate::Nic::create_channel)) its
    /// events go to; `None`: the NIC's own event queue ([`Nic::poll_event`](crate::Nic::poll_event)).
    pub channel: Option<u32>,
    /// Compressed CQEs (`cqe_comp_en`), when the NIC's [`ZipConfig::policy`] compresses.
    pub compression: Option<CqCompression>,
}

/// Result of CQ creation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CqInfo {
    /// CQ number.
    pub cqn: u32,
    /// UAR page whose offset 0x20 is this CQ's arm doorbell.
    pub uar: u32,
}

/// SRQ creation parameters.
#[derive(Clone, Copy, Debug, Default)]
pub struct SrqParams {
    /// Protection domain.
    pub pdn: u32,
    /// WQE buffer: `1 << (log_wqe_cnt + log_stride)` bytes, 64-byte aligned.
    pub buf: u64,
    /// log2 of the number of WQEs.
    pub log_wqe_cnt: u8,
    /// log2 of the WQE stride in bytes (5..=10: next segment + at least one data segment).
    pub log_stride: u8,
    /// Doorbell record: one BE32 counter (16 bits used).
    pub dbrec: u64,
}

/// The transport service of a QP (QPC `st`: RC 0, UC 1, UD 2).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Transport {
    /// Reliable connection.
    #[default]
    Rc,
    /// Unreliable datagram: SEND / SEND_IMM of at most one packet to any QP named by an
    /// address vector in each WQE; no acknowledgements.
    Ud,
    /// DC initiator (mlx5 Dynamically Connected): RC operations to any DCT named by the
    /// address vector, DCT number and DC key in each WQE; send queue only.
    Dci,
    /// DC target: executes the requests of any DCI that carries its DC key, taking receives
    /// from its SRQ; no send queue.
    Dct,
    /// Unreliable connection: SEND (with immediate or invalidate) and WRITE (with
    /// immediate) to the one connected QP; no acknowledgements, no retries, a message with
    /// a lost packet is dropped by the responder.
    Uc,
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

/// The stream channels of a DCI (QPC `log_num_dci_stream_channels` and
/// `log_num_dci_errored_streams`, which the kernel's `create_dci` fills from rdma-core's
/// `mlx5dv_dci_streams` when `MLX5_QP_FLAG_DCI_STREAM` is set; both 0 otherwise). Each WQE
/// names its stream in control-segment bytes 9..10 (`dci_stream_channel_id`, BE16,
/// `mlx5dv_wr_set_dc_addr_stream`). The default (both 0) is a plain DCI: one stream, id 0,
/// and its first error takes the DCI to ERR.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DciStreams {
    /// log2 of the stream channels (`log_num_concurent`): ids `0..1 << log_channels`.
    pub log_channels: u8,
    /// log2 of the errored streams that take the DCI to ERR (`log_num_errored`): a stream
    /// error is confined to its stream while fewer than `1 << log_errored` streams are in
    /// error; the one that reaches it fails the DCI (mlx5dv_dci_stream_id_reset(3)).
    pub log_errored: u8,
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
}

impl Default for DciStreamConfig {
    fn default() -> Self {
        DciStreamConfig {
            max_log_channels: 4,
            max_log_errored: 4,
            bad_stream_syndrome: 0x02,
            local_errors_are_stream_errors: false,
        }
    }
}

/// QP creation parameters.
#[derive(Clone, Copy, Debug, Default)]
pub struct QpParams {
    /// Transport service.
    pub transport: Transport,
    /// Protection domain.
    pub pdn: u32,
    /// CQ for send completions.
    pub send_cqn: u32,
    /// CQ for receive completions.
    pub recv_cqn: u32,
    /// Shared receive queue; the RQ fields are ignored when set.
    pub srqn: Option<u32>,
    /// Send ring: `64 << log_sq_wqe_cnt` bytes, 64-byte aligned.
    pub sq_buf: u64,
    /// log2 of the number of 64-byte WQEBBs in the send ring.
    pub log_sq_wqe_cnt: u8,
    /// Receive ring: `1 << (log_rq_wqe_cnt + log_rq_stride)` bytes, 16-byte aligned.
    pub rq_buf: u64,
    /// log2 of the number of receive WQEs.
    pub log_rq_wqe_cnt: u8,
    /// log2 of the receive WQE stride in bytes (4..=10).
    pub log_rq_stride: u8,
    /// Doorbell record: BE32 RQ counter at +0, BE32 SQ counter at +4.
    pub dbrec: u64,
    /// User index (24 bits) for CQE version 1 (`NicConfig::cqe_version`).
    pub user_index: u32,
    /// Scatter to CQE on the responder (`MLX5_QP_FLAG_SCATTER_CQE`: the kernel sets the
    /// QPC's `cs_res` to 32 bytes with a 64-byte receive CQ, 64 with a 128-byte one): a
    /// SEND of at most that many bytes is written into its CQE instead of the receive's
    /// buffers. The model applies it on RC and UC QPs (docs/model.md).
    pub scatter_to_cqe: bool,
    /// A DCI's stream channels ([`DciStreams`]); must be the default on other QPs.
    pub dci_streams: DciStreams,
}

/// The global route of an address handle (`ibv_global_route`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GlobalRoute {
    /// Destination GID.
    pub dgid: [u8; 16],
    /// Flow label (20 bits).
    pub flow_label: u32,
    /// Source GID index (the model's ports have one GID: index 0).
    pub sgid_index: u8,
    /// Hop limit.
    pub hop_limit: u8,
    /// Traffic class.
    pub traffic_class: u8,
}

/// Address handle attributes (`ibv_ah_attr`), from which [`Nic::create_ah`] builds the
/// 48-byte address vector.
///
/// [`Nic::create_ah`]: crate::Nic::create_ah
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AhAttr {
    /// Local port (1-based).
    pub port: u8,
    /// Destination LID.
    pub dlid: u16,
    /// Service level (4 bits).
    pub sl: u8,
    /// Source path bits (7 bits).
    pub src_path_bits: u8,
    /// The GRH to send with, if any.
    pub grh: Option<GlobalRoute>,
}

/// Result of QP creation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QpInfo {
    /// QP number.
    pub qpn: u32,
    /// UAR page holding this QP's doorbell/BlueFlame register.
    pub uar: u32,
    /// Offset of the register in the UAR page (0x800).
    pub bf_offset: u32,
    /// BlueFlame half size (0 = 8-byte doorbells only).
    pub bf_size: u32,
}

/// QP state machine commands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QpTransition {
    /// RESET -> INIT of a UD QP (`IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY`).
    InitUd {
        /// Port number (1-based).
        port: u8,
        /// Q_Key incoming datagrams must carry.
        qkey: u32,
        /// P_Key table index: below the port's table length, as for [`QpTransition::Init`].
        pkey_index: u16,
    },
    /// INIT -> RTR of a UD QP: nothing remote.
    RtrUd,
    /// RTR -> RTS of a UD QP (`IBV_QP_SQ_PSN` only).
    RtsUd {
        /// First PSN sent.
        sq_psn: u32,
    },
    /// RESET -> INIT.
    Init {
        /// Port number (1-based).
        port: u8,
        /// Remote access rights granted by the QP.
        access: Access,
        /// P_Key table index (`IBV_QP_PKEY_INDEX`): below the port's table length.
        pkey_index: u16,
    },
    /// INIT -> RTR. On a RoCE port (`NicConfig::link_layer = Ethernet`) the address must
    /// be global (`global`), as for every RTR that carries one ([`QpTransition::RtrUc`],
    /// [`QpTransition::RtrDci`], [`QpTransition::RtrDct`]): the kernel's
    /// `rdma_check_ah_attr` (`drivers/infiniband/core/verbs.c`, from `_ib_modify_qp`
    /// through `rdma_fill_sgid_attr` for `IB_QP_AV`) answers EINVAL before the device is
    /// asked; the model refuses it as [`HwError::InvalidParam`] and the QP stays in INIT.
    /// On InfiniBand either is taken (the model sends no GRH on a connected QP).
    Rtr {
        /// Destination LID (0: resolve by GID).
        dest_lid: u16,
        /// Destination GID (used when `dest_lid` is 0).
        dest_gid: [u8; 16],
        /// Destination QP number.
        dest_qpn: u32,
        /// Expected PSN of the first incoming request.
        rq_psn: u32,
        /// Path MTU in bytes (256..=4096, a power of two).
        path_mtu: u32,
        /// Incoming READ/atomic depth.
        max_dest_rd_atomic: u8,
        /// RNR NAK timer code.
        min_rnr_timer: u8,
        /// Service level of the primary path (4 bits).
        sl: u8,
        /// The address carries a global route (`ah_attr.is_global`, the kernel's
        /// `IB_AH_GRH`): required on a RoCE port (see [`QpTransition::Rtr`]).
        global: bool,
    },
    /// RTR -> RTS.
    Rts {
        /// First PSN to send.
        sq_psn: u32,
        /// Local ACK timeout code.
        timeout: u8,
        /// Transport retries (0..=7).
        retry_cnt: u8,
        /// RNR retries (0..=7, 7 = forever).
        rnr_retry: u8,
        /// Outgoing READ/atomic depth.
        max_rd_atomic: u8,
    },
    /// RESET -> INIT of a DCI (`IBV_QP_PKEY_INDEX | IBV_QP_PORT`: no access flags,
    /// `modify_dci_qp_is_ok`). A DCT's RESET -> INIT is [`QpTransition::Init`].
    InitDci {
        /// Port number (1-based).
        port: u8,
        /// P_Key table index: below the port's table length, as for [`QpTransition::Init`].
        pkey_index: u16,
    },
    /// INIT -> RTR of a DCI (`IBV_QP_PATH_MTU`, and the local half of an address:
    /// nothing remote).
    RtrDci {
        /// Path MTU in bytes (256..=4096, a power of two).
        path_mtu: u32,
        /// The address carries a global route (`ah_attr.is_global`, the kernel's
        /// `IB_AH_GRH`): required on a RoCE port (see [`QpTransition::Rtr`]).
        global: bool,
    },
    /// INIT -> RTR of a DCT (`IBV_QP_MIN_RNR_TIMER | IBV_QP_AV | IBV_QP_PATH_MTU`): the
    /// firmware creates the DCT here (`mlx5_core_create_dct` runs at RTR), with its access
    /// key from `dctc.dc_access_key`; DCIs reach it from now on. A DCI's RTR -> RTS is
    /// [`QpTransition::Rts`]; a DCT has no other transition (`mlx5_ib_modify_dct`).
    RtrDct {
        /// Path MTU in bytes (256..=4096, a power of two).
        path_mtu: u32,
        /// RNR NAK timer code.
        min_rnr_timer: u8,
        /// The DC access key every DCI's WQE must carry.
        dc_key: u64,
        /// The address carries a global route (`ah_attr.is_global`, the kernel's
        /// `IB_AH_GRH`): required on a RoCE port (see [`QpTransition::Rtr`]).
        global: bool,
    },
    /// INIT -> RTR of a UC QP (`IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
    /// IBV_QP_RQ_PSN`: no READ/atomic depth, no RNR timer).
    RtrUc {
        /// Destination LID (0: resolve by GID).
        dest_lid: u16,
        /// Destination GID (used when `dest_lid` is 0).
        dest_gid: [u8; 16],
        /// Destination QP number.
        dest_qpn: u32,
        /// Expected PSN of the first incoming packet.
        rq_psn: u32,
        /// Path MTU in bytes (256..=4096, a power of two).
        path_mtu: u32,
        /// Service level of the primary path (4 bits).
        sl: u8,
        /// The address carries a global route (`ah_attr.is_global`, the kernel's
        /// `IB_AH_GRH`): required on a RoCE port (see [`QpTransition::Rtr`]).
        global: bool,
    },
    /// RTR -> RTS of a UC QP (`IBV_QP_SQ_PSN` only: no timeout, retry counts or READ
    /// depth).
    RtsUc {
        /// First PSN sent.
        sq_psn: u32,
    },
    /// SQE -> RTS of a UD or UC QP (`SQERR2RTS_QP`; verbs: `IBV_QP_STATE |
    /// IBV_QP_CUR_STATE`).
    SqeToRts,
    /// Any state -> ERR.
    Err,
    /// Any state -> RESET.
    Reset,
}

/// A QP's sequence numbers, as [`Nic::qp_psn`](crate::Nic::qp_psn) reads them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QpPsn {
    /// PSN of the next new request packet the QP sends.
    pub sq_psn: u32,
    /// PSN the QP expects on the next incoming request.
    pub rq_psn: u32,
}

/// QP states visible to the driver.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QpState {
    /// RST.
    Reset,
    /// INIT.
    Init,
    /// Ready to receive.
    Rtr,
    /// Ready to send.
    Rts,
    /// Send queue error (UD and UC only, QPC state SQER): a send WQE failed; the rest of
    /// the send queue is flushed, receives go on. [`QpTransition::SqeToRts`] resumes.
    Sqe,
    /// Error.
    Err,
}

/// A completion event: what the kernel hands on through a completion channel
/// (`ibv_get_cq_event`). Asynchronous events are [`AsyncEvent`], on their own queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// An armed CQ produced a qualifying CQE.
    Completion {
        /// The CQ.
        cqn: u32,
    },
}

/// An affiliated asynchronous event: what the kernel hands on through the context's async
/// fd (`ibv_get_async_event`), each named after the EQE type the NIC writes and the
/// `ibv_event_type` the kernel's mlx5 driver turns it into (`mlx5_ib_cq_event`,
/// `mlx5_ib_qp_event`). Delivered by [`Nic::poll_async_event`](crate::Nic::poll_async_event),
/// never mixed with completion events.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AsyncEvent {
    /// `MLX5_EVENT_TYPE_CQ_ERROR` → `IBV_EVENT_CQ_ERR`: CQ overrun; the CQ stopped writing
    /// CQEs.
    CqError {
        /// The CQ.
        cqn: u32,
    },
    /// `MLX5_EVENT_TYPE_WQ_CATAS_ERROR` → `IBV_EVENT_QP_FATAL`: the QP could not report a
    /// completion (its CQ is in error) and went to ERR.
    QpFatal {
        /// The QP.
        qpn: u32,
    },
    /// `MLX5_EVENT_TYPE_WQ_INVAL_REQ_ERROR` → `IBV_EVENT_QP_REQ_ERR`: as responder the QP
    /// NAKed an invalid request that consumed no receive WQE (so no CQE reports it) and went
    /// to ERR.
    QpRequestError {
        /// The QP.
        qpn: u32,
    },
    /// `MLX5_EVENT_TYPE_WQ_ACCESS_ERROR` → `IBV_EVENT_QP_ACCESS_ERR`: as responder the QP
    /// NAKed a remote access violation that consumed no receive WQE and went to ERR.
    QpAccessError {
        /// The QP.
        qpn: u32,
    },
    /// `MLX5_EVENT_TYPE_SRQ_LAST_WQE` → `IBV_EVENT_QP_LAST_WQE_REACHED`: a QP attached to
    /// an SRQ went to ERR and takes no more WQEs from it.
    LastWqeReached {
        /// The QP.
        qpn: u32,
    },
}

/// Fault injection knobs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// Discard BlueFlame data (the chunks still ring the doorbell), forcing ring fetches.
    DropBlueFlame(bool),
    /// Lose the next `count` request packets sent by `qpn` (any QP of this NIC if `None`).
    LosePackets {
        /// Requester QP, or any.
        qpn: Option<u32>,
        /// Packets to lose.
        count: u32,
    },
    /// Let the next `skip` request packets of `qpn` (any QP of this NIC if `None`) through,
    /// then lose `count`: loses chosen packets, e.g. the third packet of a message or the
    /// second WQE of a batch. A message that loses any packet is retransmitted whole.
    LosePacketsAfter {
        /// Requester QP, or any.
        qpn: Option<u32>,
        /// Packets to let through first.
        skip: u32,
        /// Packets to lose.
        count: u32,
    },
    /// Lose the next `count` positive responses (ACK, READ response, atomic response) to
    /// requester `qpn` (any QP of this NIC if `None`): the responder has executed the
    /// request, the requester retransmits it on `progress()`, and the responder answers the
    /// duplicate without executing it again.
    LoseResponses {
        /// Requester QP, or any.
        qpn: Option<u32>,
        /// Responses to lose.
        count: u32,
    },
    /// Hold CQE writes back until `progress()` (while true).
    DelayCqes(bool),
    /// While true, a send doorbell only queues its work (the WQE fetch is accounted at the
    /// doorbell) and the next `progress()` executes it, as a real NIC runs in parallel with
    /// the CPU: WQEs are read from the ring and payloads gathered then, so a ring slot or
    /// gather buffer the driver reuses before its completion shows up as corrupted data. A
    /// WQE read from the ring that differs from the ring at its doorbell counts in
    /// `Stats::ring_overwritten`.
    DeferExecution(bool),
    /// Answer the next `count` messages needing a receive at responder `qpn` (any if `None`)
    /// with an RNR NAK even if a receive is posted.
    Rnr {
        /// Responder QP, or any.
        qpn: Option<u32>,
        /// Messages to refuse.
        count: u32,
    },
    /// The next atomic a responder of this NIC executes without PCIe AtomicOps finds a CPU
    /// store of `value` (host order, 4 or 8 bytes as the atomic) to its target between its
    /// DMA read and its DMA write: the NIC's write then overwrites it and the store is lost.
    /// With `NicConfig::pcie_atomic_ops` the store lands before the atomic, which sees it.
    HostStoreInAtomic {
        /// The value the CPU stores.
        value: u64,
    },
    /// Flip every bit of the first byte of each of the next `count` payload writes into
    /// host memory (receive scatter, RDMA WRITE target, READ result) by QP `qpn` (any QP of
    /// this NIC if `None`), after the bytes land: corruption between the wire and host
    /// memory, which no public source describes; a knob for testing data checks.
    CorruptPayload {
        /// The QP whose payload writes are corrupted, or any.
        qpn: Option<u32>,
        /// Payload writes to corrupt.
        count: u32,
    },
    /// While true the NIC sees PCIe back pressure: CQs with compression compress under
    /// [`ZipPolicy::UnderBackpressure`].
    PcieBackpressure(bool),
    /// Remove every pending fault.
    Clear,
}

/// Model statistics (driver-visible diagnostics).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Send doorbells accepted (8-byte, or a completed BlueFlame copy).
    pub doorbells: u64,
    /// 64-byte BlueFlame chunks received.
    pub bf_writes: u64,
    /// WQEs taken from BlueFlame data instead of the ring.
    pub bf_used: u64,
    /// BlueFlame WQEs whose bytes differed from the ring (a driver bug).
    pub bf_mismatch: u64,
    /// BlueFlame copies abandoned, out of order, oversized or not matching a posted WQE.
    pub bf_incomplete: u64,
    /// BlueFlame copies discarded by `Fault::DropBlueFlame`.
    pub bf_dropped: u64,
    /// BlueFlame copies evicted before use (`PcieConfig::bf_evict_every`): the WQE was read
    /// from the ring instead.
    pub bf_evicted: u64,
    /// MMIO writes to no register, of a bad size, or to an unknown UAR.
    pub bad_mmio: u64,
    /// Send doorbells ignored: naming another QP, a QP in RESET, or a doorbell record that
    /// announces no new work (stale) or more than the ring holds.
    pub bad_doorbells: u64,
    /// Send doorbells executed up to the doorbell record although the producer the MMIO
    /// names (`idx + ceil(ds/4)`, or `idx` when `ds` is 0) differs from it, e.g. a doorbell
    /// carrying the first WQE of a batch (a driver bug; what hardware does is unknown).
    pub ambiguous_doorbells: u64,
    /// Send doorbells rung while the QP was in INIT or RTR (a driver bug; the model fails
    /// the head WQE, what hardware does is unknown).
    pub doorbells_before_rts: u64,
    /// WQEs completed or failed by execution (not flushed ones; retransmissions not counted).
    pub wqes: u64,
    /// WQEs a deferred run (`Fault::DeferExecution`) read from the ring that differed from
    /// the ring at their doorbell: the driver overwrote a slot before its completion (a
    /// driver bug; hardware may have fetched the WQE before or after the write).
    pub ring_overwritten: u64,
    /// Unfenced WQEs whose gather overlapped the result buffer of an earlier READ or atomic
    /// of the same run (a missing fence: real hardware may gather before the result lands).
    pub fence_hazards: u64,
    /// Completions written (a compressed block counts each completion in it).
    pub cqes: u64,
    /// Receive completions whose payload went into the CQE (scatter to CQE) instead of a
    /// DMA write to the receive's buffers.
    pub scatter_cqes: u64,
    /// Payload bytes those CQEs carried.
    pub scatter_cqe_bytes: u64,
    /// Compressed blocks written (basic: a title and its arrays; enhanced: the slots after
    /// one title).
    pub zip_blocks: u64,
    /// Completions written as mini-CQEs.
    pub zip_minis: u64,
    /// CQEs discarded because their CQ was in error.
    pub cqes_dropped: u64,
    /// Request packets put on the wire (including retransmissions).
    pub packets: u64,
    /// Messages retransmitted after a loss or RNR.
    pub retransmits: u64,
    /// Request packets of messages that did not get through (fault, unreachable or
    /// non-ready peer, PSN ahead of the expected one); a message with one lost packet counts all of them.
    pub packets_lost: u64,
    /// Positive responses to this NIC's requesters lost by `Fault::LoseResponses`.
    pub responses_lost: u64,
    /// RNR NAKs sent by responders of this NIC.
    pub rnr_naks: u64,
    /// PSN sequence error NAKs sent by responders of this NIC: a request ahead of the
    /// expected PSN, once until a request in sequence arrives.
    pub seq_naks: u64,
    /// CQ arm doorbells accepted.
    pub arms: u64,
    /// CQ arm doorbells ignored because their `sn` is that of the arm that produced the
    /// last event (a request already answered).
    pub stale_arms: u64,
    /// CQ arm doorbells whose word differs from the CQ doorbell record's arm word (a driver
    /// bug: `mlx5_arm_cq` writes the record first).
    pub arm_dbrec_mismatch: u64,
    /// Completion events raised.
    pub events: u64,
    /// Context-cache misses (`PcieConfig::context_cache`), each a DMA read of a context.
    pub context_misses: u64,
    /// Translation-cache misses (`PcieConfig::translation_cache`).
    pub translation_misses: u64,
    /// Page faults of on-demand keys the NIC raised (one page-fault event each, however
    /// many pages it brought in).
    pub odp_faults: u64,
    /// Pages of on-demand keys made present, by faults and by prefetch.
    pub odp_pages_mapped: u64,
    /// CPU writes into device memory accepted (`Nic::dm_write`).
    pub dm_writes: u64,
    /// Send data segments gathered from device memory (no DMA read).
    pub dm_gathers: u64,
    /// Bytes those segments named.
    pub dm_gather_bytes: u64,
    /// Data segments with `byte_count` 0, which mlx5 reads as 2^31 bytes (send gather and
    /// receive scatter).
    pub zero_length_segments: u64,
    /// READ or atomic requests sent by a QP whose `max_rd_atomic` exceeds the responder's
    /// `max_dest_rd_atomic` (a connection set-up bug: hardware that pipelines would NAK
    /// the excess; the model never has more than one outstanding).
    pub rd_atomic_depth_mismatch: u64,
    /// UD datagrams dropped at a QP whose Q_Key they did not carry (`qkey_viol_cntr`).
    pub qkey_violations: u64,
    /// UD datagrams dropped because no QP took them: unknown destination or QPN, a QP that
    /// is not UD or not in RTR/RTS.
    pub ud_unroutable: u64,
    /// UD datagrams dropped for want of a posted receive (UD has no RNR).
    pub ud_no_receive: u64,
    /// RoCE datagrams dropped because the destination GID is not on the VLAN they carry
    /// (or carry none where the GID is on one, or the reverse): counted at the NIC that
    /// has the GID.
    pub vlan_mismatches: u64,
    /// DC connections a DCI of this NIC set up (its first WQE to a destination, or the
    /// first after a WQE to another): one connect handshake on the wire each, no PCIe.
    pub dc_connects: u64,
    /// DC connections a DCI of this NIC tore down to reach another destination: one
    /// disconnect on the wire each, no PCIe.
    pub dc_disconnects: u64,
    /// DC requests a DCT of this NIC refused for a DC key that is not its own.
    pub dc_key_violations: u64,
    /// DC requests to a DCT number no ready DCT has (counted at the NIC the address names,
    /// or at the DCI's when it names no NIC).
    pub dc_unknown_dct: u64,
    /// WQEs of a DCI that failed with an error confined to their stream (the DCI stayed
    /// in RTS, the stream entered error: `DciStreams`).
    pub dci_stream_errors: u64,
    /// WQEs of a DCI flushed because their stream was in error.
    pub dci_stream_flushes: u64,
    /// UC messages a lost packet cut short: the responder got some of their packets and
    /// discarded the rest, up to the next first or only packet (the requester never
    /// learns).
    pub uc_incomplete: u64,
    /// UC messages dropped for want of a posted receive (UC has no RNR).
    pub uc_no_receive: u64,
    /// UC messages the responder refused without a NAK: WRITE without REMOTE_WRITE, a bad
    /// rkey or range, a receive too short (dropped, or completed in error on an SRQ).
    pub uc_errors: u64,
}

/// Which way a driver bug the model counts shows on hardware.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BugClass {
    /// Hardware would reject or ignore the same input: the work does not happen there
    /// either.
    Rejected,
    /// No public source pins what hardware does; the model picks one outcome (see
    /// `docs/model.md`, "Driver bugs").
    Unknown,
}

/// A driver bug the model detects and counts in [`Stats`]. A correct driver moves none of
/// these counters; tests assert every one of them stays zero.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DriverBug {
    /// [`Stats::bad_mmio`].
    BadMmio,
    /// [`Stats::bad_doorbells`].
    BadDoorbell,
    /// [`Stats::ambiguous_doorbells`].
    AmbiguousDoorbell,
    /// [`Stats::doorbells_before_rts`].
    DoorbellBeforeRts,
    /// [`Stats::bf_mismatch`].
    BfMismatch,
    /// [`Stats::bf_incomplete`].
    BfIncomplete,
    /// [`Stats::ring_overwritten`].
    RingOverwritten,
    /// [`Stats::fence_hazards`].
    FenceHazard,
    /// [`Stats::stale_arms`].
    StaleArm,
    /// [`Stats::arm_dbrec_mismatch`].
    ArmDbrecMismatch,
    /// [`Stats::zero_length_segments`].
    ZeroLengthSegment,
    /// [`Stats::rd_atomic_depth_mismatch`].
    RdAtomicDepthMismatch,
}

impl DriverBug {
    /// Every driver bug the model counts.
    pub const ALL: [DriverBug; 12] = [
        DriverBug::BadMmio,
        DriverBug::BadDoorbell,
        DriverBug::AmbiguousDoorbell,
        DriverBug::DoorbellBeforeRts,
        DriverBug::BfMismatch,
        DriverBug::BfIncomplete,
        DriverBug::RingOverwritten,
        DriverBug::FenceHazard,
        DriverBug::StaleArm,
        DriverBug::ArmDbrecMismatch,
        DriverBug::ZeroLengthSegment,
        DriverBug::RdAtomicDepthMismatch,
    ];

    /// Whether hardware is known to reject it, or behaves in an unknown way.
    pub fn class(self) -> BugClass {
        match self {
            // A responder that pipelines NAKs the excess READs/atomics (rxe:
            // RESPST_ERR_TOO_MANY_RDMA_ATM_REQ).
            DriverBug::BadMmio | DriverBug::BadDoorbell | DriverBug::RdAtomicDepthMismatch => {
                BugClass::Rejected
            }
            _ => BugClass::Unknown,
        }
    }
}

impl Stats {
    /// The counter of `bug`.
    pub fn bug(&self, bug: DriverBug) -> u64 {
        match bug {
            DriverBug::BadMmio => self.bad_mmio,
            DriverBug::BadDoorbell => self.bad_doorbells,
            DriverBug::AmbiguousDoorbell => self.ambiguous_doorbells,
            DriverBug::DoorbellBeforeRts => self.doorbells_before_rts,
            DriverBug::BfMismatch => self.bf_mismatch,
            DriverBug::BfIncomplete => self.bf_incomplete,
            DriverBug::RingOverwritten => self.ring_overwritten,
            DriverBug::FenceHazard => self.fence_hazards,
            DriverBug::StaleArm => self.stale_arms,
            DriverBug::ArmDbrecMismatch => self.arm_dbrec_mismatch,
            DriverBug::ZeroLengthSegment => self.zero_length_segments,
            DriverBug::RdAtomicDepthMismatch => self.rd_atomic_depth_mismatch,
        }
    }

    /// The sum of the counters of every driver bug of `class`.
    pub fn bugs(&self, class: BugClass) -> u64 {
        DriverBug::ALL
            .into_iter()
            .filter(|b| b.class() == class)
            .map(|b| self.bug(b))
            .sum()
    }
}
