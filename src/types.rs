//! The plain data types every layer shares: access rights, device and port limits,
//! endpoints, QP states and transitions, QP, CQ and connection settings. They depend on
//! nothing else in the crate but the device formats ([`crate::prm`]), so the memory and
//! queue layers, the errors, the backends and the control objects all point down to them.

use core::fmt;
use core::str::FromStr;
use std::ops::BitOr;

use crate::prm::{CqeCompLayout, MiniCqeFormat};
// The QP states and transitions live in their own file; this keeps their public path.
pub use crate::qp_state::QpState;
pub use crate::qp_state::Transition;

/// Memory and QP access rights (the values of `ibv_access_flags`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Access(pub u32);

impl Access {
    /// Local read only.
    pub const NONE: Access = Access(0);
    /// The device may write the memory (receives, READ and atomic results).
    pub const LOCAL_WRITE: Access = Access(1);
    /// Peers may RDMA WRITE.
    pub const REMOTE_WRITE: Access = Access(2);
    /// Peers may RDMA READ.
    pub const REMOTE_READ: Access = Access(4);
    /// Peers may run atomics.
    pub const REMOTE_ATOMIC: Access = Access(8);
    /// Every right.
    pub const ALL: Access = Access(15);
    /// A memory region registered on demand (`IBV_ACCESS_ON_DEMAND`): nothing is pinned;
    /// the device faults pages in on first touch (`docs/memory.md`). Not a QP right.
    pub const ON_DEMAND: Access = Access(1 << 6);

    /// True if every right in `other` is in `self`.
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

/// Device limits: each is the largest value [`QpConfig::check`] accepts for its field alone
/// (rdma-core's sizing formula, `crate::sizing`, may refuse combinations).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct DeviceCaps {
    /// Largest send queue in WQEBBs, and receive queue in WQEs (`max_send_wqebb`,
    /// `max_recv_wr`).
    pub max_sq_wqebbs: u32,
    /// Largest send WQE in bytes (`max_sq_desc_sz`); every QP's send queue accepts WQEs up
    /// to this size.
    pub max_wqe_size: u32,
    /// Largest send gather list that fits the largest WQE after the fixed segments.
    pub max_send_sge: u32,
    /// Largest receive scatter list (its power-of-two stride fits the largest receive WQE).
    pub max_recv_sge: u32,
    /// Largest CQ.
    pub max_cqe: u32,
    /// Largest inline payload that fits the largest WQE after the fixed segments.
    pub max_inline: u32,
    /// BlueFlame half size (0: no BlueFlame, doorbells only).
    pub bf_size: u32,
    /// Outstanding READ / atomic operations a QP may initiate (`max_qp_init_rd_atom`): the
    /// most `Transition::Rts::max_rd_atomic` takes.
    pub max_rd_atomic: u8,
    /// The device writes the results of 8-byte atomics (standard and masked) in host byte
    /// order (`atomic_req_8B_endianness_mode` 1, which the kernel sets whenever the device
    /// supports it and reports as `IBV_ATOMIC_HCA`); false: big-endian. 4-byte masked
    /// results are big-endian either way. [`SendOp::atomic_result`](crate::SendOp::atomic_result)
    /// decodes them.
    pub atomic_8b_host_order: bool,
    /// Incoming READ / atomic operations a QP may have in progress (`max_qp_rd_atom`): the
    /// most `Transition::Rtr::max_dest_rd_atomic` takes.
    pub max_dest_rd_atomic: u8,
    /// The device executes atomics (`ibv_device_attr.atomic_cap` is not
    /// `IBV_ATOMIC_NONE`): QPs are created for atomic WQEs and grant `REMOTE_ATOMIC` by
    /// default.
    pub atomics: bool,
    /// UD and DCI WQEs may carry the 16-byte compact address vector (the HCA cap
    /// `compact_address_vector`, which UCX reads before using it):
    /// [`ProtectionDomain::create_compact_ah`](crate::ProtectionDomain::create_compact_ah)
    /// refuses without it.
    pub compact_av: bool,
    /// Device memory (MEMIC) in bytes (`max_dm_size` of `ibv_query_device_ex`; 0: none):
    /// the most [`Context::alloc_dm`](crate::Context::alloc_dm) allocates.
    pub max_dm_size: u64,
    /// Multicast groups the device holds (`max_mcast_grp`; 0: no multicast, and
    /// [`Qp::attach_mcast`](crate::Qp::attach_mcast) refuses).
    pub max_mcast_grp: u32,
    /// XRC domains, XRC SRQs and XRC QPs (`IBV_DEVICE_XRC`, the HCA cap `xrc`):
    /// [`Context::open_xrcd`](crate::Context::open_xrcd) refuses without it.
    pub xrc: bool,
    /// Packet pacing (`packet_pacing_caps` of `ibv_query_device_ex`):
    /// [`Qp::set_rate_limit`](crate::Qp::set_rate_limit) refuses a transport it does not
    /// name.
    pub pacing: PacingCaps,
}

/// What packet pacing a device offers (`struct ibv_packet_pacing_caps`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct PacingCaps {
    /// The lowest rate limit in kbit/s (`qp_rate_limit_min`).
    pub min_kbps: u32,
    /// The highest rate limit in kbit/s (`qp_rate_limit_max`; 0: no pacing).
    pub max_kbps: u32,
    /// RC QPs may be paced (`supported_qpts` bit `IBV_QPT_RC`: no mlx5 sets it).
    pub rc: bool,
    /// UC QPs may be paced (bit `IBV_QPT_UC`).
    pub uc: bool,
    /// UD QPs may be paced (bit `IBV_QPT_UD`).
    pub ud: bool,
    /// Raw packet QPs may be paced (bit `IBV_QPT_RAW_PACKET`: every mlx5 kernel that
    /// reports pacing sets it, `mlx5_ib_query_device`).
    pub raw: bool,
}

impl PacingCaps {
    /// True if QPs of `transport` may be rate limited.
    pub fn paces(&self, transport: Transport) -> bool {
        self.max_kbps != 0
            && match transport {
                Transport::Rc => self.rc,
                Transport::Uc => self.uc,
                Transport::Ud => self.ud,
                Transport::Raw => self.raw,
                Transport::Dci | Transport::Dct | Transport::XrcIni | Transport::XrcTgt => false,
            }
    }
}

/// The queues a [`QpConfig`] gets (from [`QpConfig::check`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct QpSizes {
    /// rdma-core's worst-case send WQE for the configuration, in bytes (a multiple of 64).
    pub send_wqe_size: u32,
    /// The send WRs asked of rdma-core, so that it allocates exactly `sq_wqebbs`.
    pub max_send_wr: u32,
    /// The send ring in WQEBBs (a power of two).
    pub sq_wqebbs: u32,
    /// The receive ring in WQEs (a power of two; 0 on an SRQ).
    pub rq_wqes: u32,
    /// The receive WQE stride in bytes (0 on an SRQ).
    pub rq_stride: u32,
}

/// A port's addressing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct PortInfo {
    /// Local identifier (InfiniBand).
    pub lid: u16,
    /// GID (RoCE, or IB with GRH).
    pub gid: [u8; 16],
    /// Index of [`PortInfo::gid`] in the port's GID table: the one the context was opened
    /// with (`VerbsOptions::gid_index`, perftest's `-x`), else the default the backend chose.
    #[cfg_attr(feature = "serde", serde(default))]
    pub gid_index: u8,
    /// Active MTU in bytes.
    pub active_mtu: u32,
    /// Largest message in bytes (`ibv_port_attr.max_msg_sz`; ConnectX ports report 2^30).
    pub max_msg_size: u32,
    /// The link layer is Ethernet (RoCE): there are no LIDs and every address handle needs
    /// a global route ([`AhAttr::grh`]).
    #[cfg_attr(feature = "serde", serde(default))]
    pub roce: bool,
    /// Entries in the port's GID table (`ibv_port_attr.gid_tbl_len`): the indexes
    /// [`Context::query_gid`](crate::Context::query_gid) takes.
    #[cfg_attr(feature = "serde", serde(default))]
    pub gid_table_len: u32,
}

/// The type of a GID table entry (`enum ibv_gid_type` of `ibv_query_gid_ex`): what the
/// packets sent from it carry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum GidType {
    /// An InfiniBand port's GID (`IBV_GID_TYPE_IB`).
    Ib,
    /// RoCE v1 (`IBV_GID_TYPE_ROCE_V1`): an IBA GRH over Ethernet, not routable; a UD
    /// receive's 40-byte area holds that GRH.
    RoceV1,
    /// RoCE v2 (`IBV_GID_TYPE_ROCE_V2`): IPv6, or IPv4 for an IPv4-mapped GID
    /// (`::ffff:a.b.c.d`), and UDP; a UD receive's 40-byte area holds the IPv6 header, or
    /// the IPv4 header in its last 20 bytes.
    RoceV2,
}

/// One entry of a port's GID table (`struct ibv_gid_entry`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct GidEntry {
    /// The GID.
    pub gid: [u8; 16],
    /// Its type.
    pub gid_type: GidType,
}

/// Everything a peer needs to connect to a QP.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Endpoint {
    /// LID of the port.
    pub lid: u16,
    /// GID of the port.
    pub gid: [u8; 16],
    /// QP number.
    pub qpn: u32,
    /// First packet sequence number the QP sends with on this connection (24 bits); the
    /// peer expects it. Random for a new QP, the continuation of the sequence after a
    /// [`Qp::reset`](crate::Qp::reset), or what [`Qp::set_psn`](crate::Qp::set_psn) chose.
    pub psn: u32,
}

/// The wire forms of an [`Endpoint`], for two processes to exchange (over TCP, a file, ...).
///
/// Text: rdma-core's `rc_pingpong` message, `"%04x:%06x:%06x:%s"` of LID, QPN, PSN and the
/// GID as 32 hex digits of its 16 bytes in order (`gid_to_wire_gid`), so
/// `"0001:000108:000000:fe800000000000000000000000000001"`: [`fmt::Display`] writes it,
/// [`FromStr`] reads it (lowercase or uppercase hex). Bytes: [`Endpoint::to_bytes`], 26
/// bytes, all big-endian: LID (2), QPN (4), PSN (4), GID (16).
impl Endpoint {
    /// Length of [`Endpoint::to_bytes`].
    pub const WIRE_LEN: usize = 26;
    /// Length of the text form (rc_pingpong's message without its NUL).
    pub const TEXT_LEN: usize = 51;

    /// The 26-byte binary form.
    pub fn to_bytes(&self) -> [u8; Endpoint::WIRE_LEN] {
        let mut b = [0u8; Endpoint::WIRE_LEN];
        b[0..2].copy_from_slice(&self.lid.to_be_bytes());
        b[2..6].copy_from_slice(&self.qpn.to_be_bytes());
        b[6..10].copy_from_slice(&self.psn.to_be_bytes());
        b[10..].copy_from_slice(&self.gid);
        b
    }

    /// Reads the binary form; QPN and PSN must fit in 24 bits.
    pub fn from_bytes(bytes: &[u8]) -> Result<Endpoint, ParseEndpointError> {
        let b: &[u8; Endpoint::WIRE_LEN] = bytes
            .try_into()
            .map_err(|_| ParseEndpointError("not 26 bytes"))?;
        let word = |i: usize| u32::from_be_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
        let mut gid = [0u8; 16];
        gid.copy_from_slice(&b[10..]);
        Endpoint {
            lid: u16::from_be_bytes([b[0], b[1]]),
            qpn: word(2),
            psn: word(6),
            gid,
        }
        .checked()
    }

    fn checked(self) -> Result<Endpoint, ParseEndpointError> {
        if self.qpn > 0xff_ffff {
            return Err(ParseEndpointError("QPN over 24 bits"));
        }
        if self.psn > 0xff_ffff {
            return Err(ParseEndpointError("PSN over 24 bits"));
        }
        Ok(self)
    }
}

impl fmt::Display for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:04x}:{:06x}:{:06x}:", self.lid, self.qpn, self.psn)?;
        self.gid.iter().try_for_each(|b| write!(f, "{b:02x}"))
    }
}

impl FromStr for Endpoint {
    type Err = ParseEndpointError;

    fn from_str(s: &str) -> Result<Endpoint, ParseEndpointError> {
        let mut fields = s.split(':');
        let mut field = |digits: usize, what: &'static str| {
            let text = fields.next().ok_or(ParseEndpointError(what))?;
            if text.len() != digits || !text.bytes().all(|c| c.is_ascii_hexdigit()) {
                return Err(ParseEndpointError(what));
            }
            Ok(text)
        };
        // Digits checked above, so `to_digit` cannot fail.
        let digit = |c: u8| (c as char).to_digit(16).unwrap_or(0);
        let number = |text: &str| text.bytes().fold(0, |n, c| n << 4 | digit(c));
        let lid = number(field(4, "LID is not 4 hex digits")?) as u16;
        let qpn = number(field(6, "QPN is not 6 hex digits")?);
        let psn = number(field(6, "PSN is not 6 hex digits")?);
        let gid_text = field(32, "GID is not 32 hex digits")?;
        if fields.next().is_some() {
            return Err(ParseEndpointError("more than four fields"));
        }
        let mut gid = [0u8; 16];
        for (byte, pair) in gid.iter_mut().zip(gid_text.as_bytes().chunks_exact(2)) {
            *byte = (digit(pair[0]) << 4 | digit(pair[1])) as u8;
        }
        Ok(Endpoint { lid, gid, qpn, psn })
    }
}

/// Why an [`Endpoint`]'s wire form did not read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ParseEndpointError(&'static str);

impl fmt::Display for ParseEndpointError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "bad endpoint: {}", self.0)
    }
}

impl std::error::Error for ParseEndpointError {}

/// A QP's packet sequence numbers as the device keeps them (`ibv_query_qp` with
/// `IBV_QP_SQ_PSN | IBV_QP_RQ_PSN`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct QpPsn {
    /// PSN of the next new request packet the QP sends.
    pub sq_psn: u32,
    /// PSN the QP expects on the next incoming request.
    pub rq_psn: u32,
}

/// The transport service of a QP.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Transport {
    /// Reliable connection: every operation, acknowledged and retried.
    #[default]
    Rc,
    /// Unreliable datagram: SEND and SEND with immediate of at most one path MTU to any UD
    /// QP an address handle names; no acknowledgements, no retries; every receive starts
    /// with the 40-byte GRH area.
    Ud,
    /// DC initiator (mlx5 Dynamically Connected): RC operations (SEND, WRITE, READ,
    /// atomics) to any DC target an address handle, a DCT number and a DC key name, per
    /// WQE ([`SendQueue::post_dc`](crate::SendQueue::post_dc)); send queue only. Created with
    /// [`ProtectionDomain::create_dci`](crate::ProtectionDomain::create_dci).
    Dci,
    /// DC target: executes the requests of every DCI that carries its DC key, its receives
    /// from an SRQ. Not a QP of [`QpConfig`]: [`ProtectionDomain::create_dct`](crate::ProtectionDomain::create_dct).
    Dct,
    /// Unreliable connection: SEND, WRITE and their immediate forms to the one connected QP
    /// (no READ, no atomics); no acknowledgements, no retries: a send completes when it
    /// has left, and a message that loses a packet is dropped by the responder unseen.
    Uc,
    /// XRC initiator (`IBV_QPT_XRC_SEND`): RC operations to one connected XRC target, each
    /// naming the XRC SRQ it lands in ([`SendQueue::post_xrc`](crate::SendQueue::post_xrc));
    /// send queue only. Created with
    /// [`ProtectionDomain::create_xrc_initiator`](crate::ProtectionDomain::create_xrc_initiator).
    XrcIni,
    /// XRC target (`IBV_QPT_XRC_RECV`): no rings, PD or CQ; executes its initiator's
    /// requests in the XRC SRQs of its domain they name. Not a QP of [`QpConfig`]:
    /// [`XrcDomain::create_target`](crate::XrcDomain::create_target).
    XrcTgt,
    /// Raw packet (`IBV_QPT_RAW_PACKET`): Ethernet frames, sent with
    /// [`SendQueue::post_eth`](crate::SendQueue::post_eth) and received as the steering
    /// rules ([`Qp::create_flow`](crate::Qp::create_flow)) deliver them; an Ethernet port
    /// only. Brought up with [`Qp::activate_raw`](crate::Qp::activate_raw).
    Raw,
}

/// A QP's rate limit (packet pacing: `struct ibv_qp_rate_limit_attr` of
/// `ibv_modify_qp_rate_limit`), set with [`Qp::set_rate_limit`](crate::Qp::set_rate_limit).
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RateLimit {
    /// The most the QP sends, in kbit/s (`rate_limit`); 0 removes the limit.
    pub kbps: u32,
    /// The most bytes the QP sends at once after a pause (`max_burst_sz`; 0: none given).
    pub max_burst_sz: u32,
    /// The typical packet size in bytes, a hint for the device's pacer (`typical_pkt_sz`;
    /// 0: none given).
    pub typical_pkt_sz: u16,
}

/// The global route of an address handle (`ibv_global_route`): sent as a GRH.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GlobalRoute {
    /// Destination GID.
    pub dgid: [u8; 16],
    /// Flow label (20 bits).
    pub flow_label: u32,
    /// Index of the source GID in the port's table.
    pub sgid_index: u8,
    /// Hop limit.
    pub hop_limit: u8,
    /// Traffic class.
    pub traffic_class: u8,
}

/// What an address handle addresses (`ibv_ah_attr`).
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AhAttr {
    /// Local port (from 1).
    pub port: u8,
    /// Destination LID (InfiniBand).
    pub dlid: u16,
    /// Service level (0–15).
    pub sl: u8,
    /// Source path bits (0–127).
    pub src_path_bits: u8,
    /// The GRH to send with: required on RoCE, optional on InfiniBand.
    pub grh: Option<GlobalRoute>,
}

impl AhAttr {
    /// The address of `remote`'s port through local port `port`: its LID, no GRH.
    pub fn to_lid(port: u8, remote: &Endpoint) -> AhAttr {
        AhAttr {
            port,
            dlid: remote.lid,
            ..AhAttr::default()
        }
    }
}

/// How a CQ asks for compressed CQEs ([`CqConfig::compression`](crate::CqConfig::compression):
/// `mlx5dv_create_cq` with `MLX5DV_CQ_INIT_ATTR_MASK_COMPRESSED_CQE`; the enhanced layout
/// needs DevX).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct CqeCompression {
    /// Block layout.
    pub layout: CqeCompLayout,
    /// What responder mini-CQEs carry besides the byte count (RDMA completions use none of
    /// it; the device needs one).
    pub format: MiniCqeFormat,
}

impl CqeCompression {
    /// The basic layout with RX-hash responder mini-CQEs: what every device that
    /// compresses offers through verbs.
    pub const BASIC: CqeCompression = CqeCompression {
        layout: CqeCompLayout::Basic,
        format: MiniCqeFormat::Hash,
    };
    /// The enhanced layout with RX-hash responder mini-CQEs.
    pub const ENHANCED: CqeCompression = CqeCompression {
        layout: CqeCompLayout::Enhanced,
        format: MiniCqeFormat::Hash,
    };
}

/// How a CQ is created ([`Context::create_cq_with`](crate::Context::create_cq_with)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct CqConfig {
    /// At least this many entries (the CQ gets the next power of two above, as rdma-core's
    /// `align_queue_size(cqe + 1)`).
    pub entries: u32,
    /// Bytes per CQE: 64 or 128.
    pub cqe_size: usize,
    /// Completion timestamps: the device must have a clock (`hca_core_clock` on hardware,
    /// `NicConfig::clock_khz` on the model), else creation fails with
    /// [`Error::Unsupported`](crate::Error::Unsupported); on hardware the CQ is created with
    /// `IBV_WC_EX_WITH_COMPLETION_TIMESTAMP`. Convert with
    /// [`Context::clock_info`](crate::Context::clock_info).
    pub timestamps: bool,
    /// Compressed CQEs ([`CqeCompression`]): the device may write
    /// several completions as one block, which polling expands, so each still arrives as
    /// one [`Completion`](crate::Completion). Devices compress only CQEs that are ready
    /// together (under PCIe back pressure on hardware, as the model's `ZipPolicy` says on
    /// the model); a latency-bound loop never sees a block. On hardware the basic layout
    /// comes through `mlx5dv_create_cq` where the device lists the format (and, for
    /// 128-byte CQEs, `MLX5DV_CONTEXT_FLAGS_CQE_128B_COMP`); the enhanced layout needs a
    /// DevX CQ, which the verbs backend does not create. What the device cannot do fails
    /// creation with [`Error::Unsupported`](crate::Error::Unsupported). See
    /// `docs/pcie.md`. To see blocks on the model, give its NIC
    /// `ZipConfig { policy: ZipPolicy::EveryBurst, .. }` (its default compresses only under
    /// `Fault::PcieBackpressure`, as hardware does under back pressure), as the crate's
    /// compression tests do.
    pub compression: Option<CqeCompression>,
}

impl CqConfig {
    /// `entries` entries of `cqe_size` bytes, without timestamps or compression.
    pub fn new(entries: u32, cqe_size: usize) -> Self {
        CqConfig {
            entries,
            cqe_size,
            timestamps: false,
            compression: None,
        }
    }
}

impl Default for CqConfig {
    fn default() -> Self {
        CqConfig::new(64, 64)
    }
}

/// QP sizes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct QpConfig {
    /// Send queue size in 64-byte WQEBBs, at least 1 (rounded up to a power of two, and to
    /// hold at least one WQE of the size `max_inline` and `max_send_sge` call for).
    pub sq_wqebbs: u32,
    /// Receive queue size in WQEs, at least 1 (rounded up to a power of two, and to 64 bytes
    /// of ring); ignored with an SRQ.
    pub rq_wqes: u32,
    /// Largest send gather list.
    pub max_send_sge: u32,
    /// Largest receive scatter list.
    pub max_recv_sge: u32,
    /// Largest inline payload.
    pub max_inline: u32,
    /// Transport service.
    pub transport: Transport,
    /// Scatter to CQE on the receive side (RC and UC only): a SEND of up to 32 bytes (64-byte
    /// receive CQEs) or 64 bytes (128-byte CQEs) arrives inside its CQE instead of by a DMA
    /// write to the receive's buffers, saving that write on the link. Polling copies the
    /// bytes into the receive's scatter list, so they are where a normal receive puts them
    /// (rdma-core's `mlx5_copy_to_recv_wqe`); [`Completion::data_in_cqe`] says it happened.
    /// Off by default (the verbs backend then creates the QP with
    /// `MLX5DV_QP_CREATE_DISABLE_SCATTER_TO_CQE`). Refused with a receive CQ that
    /// compresses CQEs. See `docs/pcie.md`.
    ///
    /// [`Completion::data_in_cqe`]: crate::Completion::data_in_cqe
    pub scatter_to_cqe: bool,
    /// The user index CQEs of this QP carry in `srqn_uidx` on a context with CQE version 1
    /// ([`Completion::user_index`](crate::Completion::user_index); 24 bits): `None` leaves
    /// it to the backend. The model takes it from the create call (`QpParams::user_index`);
    /// through verbs rdma-core allocates it itself (`mlx5_store_uidx`: `mlx5dv_create_qp`
    /// has no attribute for it, only a DevX QPC's `user_index`, which UCX sets), so `Some`
    /// is refused there with [`Error::Unsupported`](crate::Error::Unsupported).
    pub user_index: Option<u32>,
    /// A DCI's stream channels ([`DciStreams`]); `None`: a plain DCI (one stream, id 0).
    /// Refused on other QPs.
    pub dci_streams: Option<DciStreams>,
}

/// The stream channels of a DCI (`struct mlx5dv_dci_streams` in `mlx5dv_qp_init_attr`
/// with `MLX5DV_QP_INIT_ATTR_MASK_DCI_STREAMS`): up to `1 << log_concurrent` streams whose
/// operations are independent of each other's order and errors
/// ([`DcDest::stream`](crate::DcDest::stream), [`Qp::reset_dci_stream`](crate::Qp::reset_dci_stream);
/// docs/transports.md "DCI streams").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct DciStreams {
    /// log2 of the streams (`log_num_concurent`): ids `0..1 << log_concurrent`. At most the
    /// device's `max_log_num_concurent`.
    pub log_concurrent: u8,
    /// log2 of the streams in error that take the DCI to ERR (`log_num_errored`): with 0,
    /// the first error of any stream fails the DCI.
    pub log_errored: u8,
}

impl DciStreams {
    /// The number of streams, `1 << log_concurrent` (saturating at `u32::MAX`).
    pub fn count(&self) -> u32 {
        1u32.checked_shl(u32::from(self.log_concurrent))
            .unwrap_or(u32::MAX)
    }
}

impl Default for QpConfig {
    fn default() -> Self {
        QpConfig {
            sq_wqebbs: 256,
            rq_wqes: 256,
            max_send_sge: 4,
            max_recv_sge: 4,
            max_inline: 220,
            transport: Transport::Rc,
            scatter_to_cqe: false,
            user_index: None,
            dci_streams: None,
        }
    }
}

/// Connection attributes (perftest's defaults). What depends on the device is filled from
/// the context when the QP connects: the port, the rights granted, the READ / atomic depth.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct ConnectOptions {
    /// Port (from 1); `None`: the QP's port, which is the port the context was opened on
    /// unless `Qp::init` named another.
    pub port: Option<u8>,
    /// Rights granted to the peer on this QP; `None`: REMOTE_WRITE and REMOTE_READ, and
    /// REMOTE_ATOMIC when the device executes atomics ([`DeviceCaps::atomics`]); on a UC
    /// QP (which takes no READ or atomic) REMOTE_WRITE alone.
    pub access: Option<Access>,
    /// Path MTU in bytes, at most the port's active MTU (the smaller is taken, as
    /// perftest's `set_mtu` does; a RoCE port under a 1500-byte Ethernet MTU is 1024).
    pub path_mtu: u32,
    /// Local ACK timeout code (RC; UC has no ACKs).
    pub timeout: u8,
    /// Transport retries (RC; UC does not retry).
    pub retry_cnt: u8,
    /// RNR retries, 7 = forever (RC; UC has no RNR).
    pub rnr_retry: u8,
    /// RNR NAK timer code (RC).
    pub min_rnr_timer: u8,
    /// READ / atomic depth, both directions, at most the device's
    /// ([`DeviceCaps::max_rd_atomic`] outgoing, [`DeviceCaps::max_dest_rd_atomic`]
    /// incoming): a larger value connects with the device's.
    pub rd_atomic: u8,
    /// GRH hop limit on RoCE (ignored on InfiniBand and by the model).
    pub hop_limit: u8,
    /// GRH traffic class on RoCE (ignored on InfiniBand and by the model).
    pub traffic_class: u8,
    /// Service level of the path (0..=15), in the RTR address vector (`ah_attr.sl`).
    pub sl: u8,
    /// GRH flow label on RoCE (20 bits, `ah_attr.grh.flow_label`; ignored where no GRH is
    /// sent: InfiniBand, as perftest, and the model).
    pub flow_label: u32,
    /// P_Key table index, set at INIT (`IBV_QP_PKEY_INDEX`); an index beyond the port's
    /// table is refused by the device.
    pub pkey_index: u16,
}

impl Access {
    /// What a QP grants the peer by default on a device with (`atomics`) or without atomics:
    /// a device without them refuses a QP that grants REMOTE_ATOMIC (the kernel's
    /// `to_mlx5_access_flags`, `EOPNOTSUPP`).
    pub fn remote_default(atomics: bool) -> Access {
        let rw = Access::REMOTE_WRITE | Access::REMOTE_READ;
        if atomics {
            rw | Access::REMOTE_ATOMIC
        } else {
            rw
        }
    }
}

impl Default for ConnectOptions {
    fn default() -> Self {
        ConnectOptions {
            port: None,
            access: None,
            path_mtu: 4096,
            timeout: 14,
            retry_cnt: 7,
            rnr_retry: 7,
            min_rnr_timer: 12,
            rd_atomic: 16,
            hop_limit: 64,
            traffic_class: 0,
            sl: 0,
            flow_label: 0,
            pkey_index: 0,
        }
    }
}
