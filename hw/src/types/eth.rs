//! Raw Ethernet in the public API (docs/model.md, "Raw Ethernet"): the NIC's Ethernet knobs
//! and capabilities, receive work queues (plain and striding), RSS QPs, flow-steering rules
//! shaped like `ibv_create_flow`'s specs, and the counters of the port.

/// The minimum inline header a raw send WQE must carry in its Ethernet segment, as
/// rdma-core sees it: the kernel answers `eth_min_inline` (`MLX5_USER_INLINE_MODE_*`) and
/// rdma-core's `mlx5_init_context` (providers/mlx5/mlx5.c) collapses every mode but NONE
/// to 18 bytes (`MLX5_ETH_L2_INLINE_HEADER_SIZE`, providers/mlx5/wqe.h).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum MinInline {
    /// `MLX5_USER_INLINE_MODE_NONE`: no inline header needed (ConnectX-5 and later, DPDK
    /// `mlx5.rst` `txq_inline_min`).
    #[default]
    None,
    /// 18 bytes, the L2 header with one VLAN tag (ConnectX-4 and ConnectX-4 Lx).
    L2,
}

impl MinInline {
    /// The bytes a SEND or TSO WQE must inline at least: 0 or 18.
    pub fn bytes(self) -> usize {
        match self {
            MinInline::None => 0,
            MinInline::L2 => 18,
        }
    }
}

/// A NIC's Ethernet capabilities and the parts of raw Ethernet no public source pins
/// (`NicConfig::eth`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EthConfig {
    /// The inline header every SEND and TSO WQE must carry ([`MinInline`]).
    pub min_inline: MinInline,
    /// The ETH cap `enhanced_multi_pkt_send_wqe` (`MLX5DV_CONTEXT_FLAGS_ENHANCED_MPW`):
    /// opcode 0x29 is accepted. Off, such a WQE fails with LOCAL_QP_OP_ERR.
    pub enhanced_mpw: bool,
    /// The GEN cap `striding_rq`: work queues may be striding (`mlx5dv_create_wq`).
    pub striding_rq: bool,
    /// The GEN cap `ext_stride_num_range`: striding WQEs may hold 2^3 strides and up,
    /// else 2^9 and up (the kernel's `mlx5_ib_query_device`). Which devices have it is not
    /// public; DPDK's default of 64 strides per WQE needs it.
    pub ext_stride_num_range: bool,
    /// The largest TSO payload (`ibv_device_attr_ex.tso_caps.max_tso`, `1 <<
    /// max_lso_cap`; ConnectX-4..7 report 262144).
    pub max_tso: u32,
    /// The flow-table cap `allow_sniffer_and_nic_rx_shared_tir`: sniffer rules
    /// ([`FlowKind::Sniffer`]) are accepted (the kernel's `get_flow_table` answers
    /// EOPNOTSUPP without it).
    pub sniffer: bool,
    /// Frames a raw QP of this NIC sends to the NIC's own MAC, or to a group address, are
    /// also delivered to this NIC's own steering (the TIR's self-loopback enables, which
    /// rdma-core asks for per QP with `MLX5DV_QP_CREATE_TIR_ALLOW_SELF_LOOPBACK_UC/_MC`;
    /// off in the kernel's default TIR). The model keeps one switch for the whole NIC.
    pub self_loopback: bool,
}

impl Default for EthConfig {
    fn default() -> Self {
        EthConfig {
            min_inline: MinInline::None,
            enhanced_mpw: true,
            striding_rq: true,
            ext_stride_num_range: true,
            max_tso: 1 << 18,
            sniffer: true,
            self_loopback: false,
        }
    }
}

/// What [`Nic::eth_caps`](crate::Nic::eth_caps) reports: the Ethernet half of
/// `mlx5dv_query_device` and `ibv_query_device_ex`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EthCaps {
    /// The port's MAC address.
    pub mac: [u8; 6],
    /// Bytes every SEND and TSO WQE must inline (`eth_min_inline_size`: 0 or 18).
    pub min_inline: usize,
    /// `MLX5DV_CONTEXT_FLAGS_ENHANCED_MPW`.
    pub enhanced_mpw: bool,
    /// `striding_rq_caps` (`None`: no striding RQ): the stride size range (log2 bytes) and
    /// the strides-per-WQE range (log2).
    pub striding: Option<StridingCaps>,
    /// `tso_caps.max_tso`.
    pub max_tso: u32,
    /// The largest frame the port sends or takes, without FCS: the netdev MTU plus the
    /// Ethernet header and one VLAN tag (the kernel's `MLX5E_SW2HW_MTU`, less the FCS).
    pub max_frame: usize,
}

/// `mlx5dv_striding_rq_caps`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StridingCaps {
    /// `min_single_stride_log_num_of_bytes` (6).
    pub min_log_stride_bytes: u8,
    /// `max_single_stride_log_num_of_bytes` (13).
    pub max_log_stride_bytes: u8,
    /// `min_single_wqe_log_num_of_strides` (3 with `ext_stride_num_range`, else 9).
    pub min_log_num_strides: u8,
    /// `max_single_wqe_log_num_of_strides` (16).
    pub max_log_num_strides: u8,
}

/// The striding (multi-packet) attributes of a work queue
/// (`mlx5dv_striding_rq_init_attr`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Striding {
    /// `single_stride_log_num_of_bytes`: log2 of a stride's bytes.
    pub log_stride_bytes: u8,
    /// `single_wqe_log_num_of_strides`: log2 of the strides of one WQE.
    pub log_num_strides: u8,
    /// `two_byte_shift_en`: each packet starts 2 bytes into its first stride (the two
    /// bytes are not written).
    pub two_byte_shift: bool,
}

/// Receive work queue creation parameters (`ibv_create_wq` / `mlx5dv_create_wq` with
/// `IBV_WQT_RQ`).
#[derive(Clone, Copy, Debug, Default)]
pub struct WqParams {
    /// Protection domain.
    pub pdn: u32,
    /// The CQ its completions go to.
    pub cqn: u32,
    /// WQE ring: `1 << (log_wqe_cnt + log_stride)` bytes, 16-byte aligned.
    pub buf: u64,
    /// log2 of the number of WQEs.
    pub log_wqe_cnt: u8,
    /// log2 of the WQE stride in bytes: 4..=10 plain (data segments), 5..=10 striding
    /// (`mlx5_mprq_wqe`: a 16-byte next segment, then one data segment).
    pub log_stride: u8,
    /// Doorbell record: BE32 receive counter at +0 (16 bits used).
    pub dbrec: u64,
    /// User index (24 bits) its CQEs carry under CQE version 1 (rdma-core finds the
    /// work queue by it).
    pub user_index: u32,
    /// Striding attributes; `None` is a plain work queue.
    pub striding: Option<Striding>,
}

/// A work queue's state (`enum ibv_wq_state`; the PRM's RQ states RST, RDY, ERR).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WqState {
    /// `IBV_WQS_RESET`: takes no packets.
    Reset,
    /// `IBV_WQS_RDY`: takes packets.
    Rdy,
    /// `IBV_WQS_ERR`: takes no packets; its posted WQEs are flushed.
    Err,
}

/// The receive hash fields (`enum ibv_rx_hash_fields`, values as in verbs.h).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HashFields(pub u32);

impl HashFields {
    /// `IBV_RX_HASH_SRC_IPV4`.
    pub const SRC_IPV4: HashFields = HashFields(1 << 0);
    /// `IBV_RX_HASH_DST_IPV4`.
    pub const DST_IPV4: HashFields = HashFields(1 << 1);
    /// `IBV_RX_HASH_SRC_IPV6`.
    pub const SRC_IPV6: HashFields = HashFields(1 << 2);
    /// `IBV_RX_HASH_DST_IPV6`.
    pub const DST_IPV6: HashFields = HashFields(1 << 3);
    /// `IBV_RX_HASH_SRC_PORT_TCP`.
    pub const SRC_PORT_TCP: HashFields = HashFields(1 << 4);
    /// `IBV_RX_HASH_DST_PORT_TCP`.
    pub const DST_PORT_TCP: HashFields = HashFields(1 << 5);
    /// `IBV_RX_HASH_SRC_PORT_UDP`.
    pub const SRC_PORT_UDP: HashFields = HashFields(1 << 6);
    /// `IBV_RX_HASH_DST_PORT_UDP`.
    pub const DST_PORT_UDP: HashFields = HashFields(1 << 7);

    /// Whether every field of `other` is in `self`.
    pub fn contains(self, other: HashFields) -> bool {
        self.0 & other.0 == other.0
    }

    /// Whether any field of `other` is in `self`.
    pub fn intersects(self, other: HashFields) -> bool {
        self.0 & other.0 != 0
    }
}

impl std::ops::BitOr for HashFields {
    type Output = HashFields;
    fn bitor(self, rhs: HashFields) -> HashFields {
        HashFields(self.0 | rhs.0)
    }
}

/// An RSS QP's hash (`ibv_rx_hash_conf` with `IBV_RX_HASH_FUNC_TOEPLITZ`, the one
/// function mlx5 offers for it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RxHash {
    /// The Toeplitz key: 40 bytes, the TIR's `rx_hash_toeplitz_key` (the kernel's
    /// `create_rss_raw_qp_tir` refuses any other length).
    pub key: [u8; 40],
    /// The fields hashed.
    pub fields: HashFields,
}

/// RSS QP creation parameters (`ibv_create_qp_ex` with `IBV_QP_INIT_ATTR_IND_TABLE |
/// IBV_QP_INIT_ATTR_RX_HASH` on `IBV_QPT_RAW_PACKET`): a receive-only QP that spreads
/// what its flows steer to it over `wqns` (the indirection table).
#[derive(Clone, Debug, Default)]
pub struct RssQpParams {
    /// Protection domain.
    pub pdn: u32,
    /// The indirection table (`ibv_create_rwq_ind_table`): a power of two of work queue
    /// numbers, entry `hash & (len - 1)` taking a packet.
    pub wqns: Vec<u32>,
    /// The hash; `None` (no hash fields) sends every packet to entry 0.
    pub hash: Option<RxHash>,
}

/// What kind of steering rule (`enum ibv_flow_attr_type`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FlowKind {
    /// `IBV_FLOW_ATTR_NORMAL`: the frames its specs match.
    #[default]
    Normal,
    /// `IBV_FLOW_ATTR_ALL_DEFAULT`: every frame no normal rule took (the catch-all).
    AllDefault,
    /// `IBV_FLOW_ATTR_MC_DEFAULT`: every group-addressed frame no normal rule took.
    McDefault,
    /// `IBV_FLOW_ATTR_SNIFFER`: a copy of every frame the port receives and sends
    /// (promiscuous).
    Sniffer,
}

/// `ibv_flow_eth_filter`, in host order.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EthFilter {
    /// Destination MAC.
    pub dst_mac: [u8; 6],
    /// Source MAC.
    pub src_mac: [u8; 6],
    /// EtherType after any VLAN tag.
    pub ether_type: u16,
    /// The first VLAN tag's TCI: PCP (15..13), CFI (12), VID (11..0). A non-zero mask
    /// matches only tagged frames.
    pub vlan_tag: u16,
}

/// `ibv_flow_ipv4_ext_filter`, in host order.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Ipv4Filter {
    /// Source address.
    pub src_ip: [u8; 4],
    /// Destination address.
    pub dst_ip: [u8; 4],
    /// Protocol.
    pub proto: u8,
    /// Type of service (DSCP and ECN).
    pub tos: u8,
    /// TTL: mlx5 does not match it (a non-zero mask is `NotSupported`).
    pub ttl: u8,
    /// Flags: mlx5 does not match them (a non-zero mask is `NotSupported`).
    pub flags: u8,
}

/// `ibv_flow_ipv6_filter`, in host order.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Ipv6Filter {
    /// Source address.
    pub src_ip: [u8; 16],
    /// Destination address.
    pub dst_ip: [u8; 16],
    /// Flow label (20 bits).
    pub flow_label: u32,
    /// Next header.
    pub next_hdr: u8,
    /// Traffic class.
    pub traffic_class: u8,
    /// Hop limit: mlx5 does not match it (a non-zero mask is `NotSupported`).
    pub hop_limit: u8,
}

/// `ibv_flow_tcp_udp_filter`, in host order.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct L4Filter {
    /// Destination port.
    pub dst_port: u16,
    /// Source port.
    pub src_port: u16,
}

/// One `ibv_flow_spec` of a rule. A frame matches a spec when every field, masked, equals
/// the value masked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FlowSpec {
    /// `IBV_FLOW_SPEC_ETH`.
    Eth {
        /// Value.
        val: EthFilter,
        /// Mask.
        mask: EthFilter,
    },
    /// `IBV_FLOW_SPEC_IPV4_EXT` (and `IBV_FLOW_SPEC_IPV4`, its first two fields): also
    /// matches the EtherType 0x0800.
    Ipv4 {
        /// Value.
        val: Ipv4Filter,
        /// Mask.
        mask: Ipv4Filter,
    },
    /// `IBV_FLOW_SPEC_IPV6`: also matches the EtherType 0x86DD.
    Ipv6 {
        /// Value.
        val: Ipv6Filter,
        /// Mask.
        mask: Ipv6Filter,
    },
    /// `IBV_FLOW_SPEC_TCP`: also matches IP protocol 6.
    Tcp {
        /// Value.
        val: L4Filter,
        /// Mask.
        mask: L4Filter,
    },
    /// `IBV_FLOW_SPEC_UDP`: also matches IP protocol 17.
    Udp {
        /// Value.
        val: L4Filter,
        /// Mask.
        mask: L4Filter,
    },
    /// `IBV_FLOW_SPEC_ACTION_TAG`: receive CQEs of the rule carry `tag_id` (24 bits) in
    /// `sop_drop_qpn`.
    Tag(u32),
    /// `IBV_FLOW_SPEC_ACTION_DROP`: matching frames are dropped.
    Drop,
}

/// A steering rule (`struct ibv_flow_attr` and its specs).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FlowAttr {
    /// The kind of rule.
    pub kind: FlowKind,
    /// Priority, 0 (first) to 15 (`MLX5_IB_FLOW_LAST_PRIO`).
    pub priority: u16,
    /// The port (1-based).
    pub port: u8,
    /// `IBV_FLOW_ATTR_FLAGS_DONT_TRAP`: a matched frame also goes on to the rules after
    /// this one's table.
    pub dont_trap: bool,
    /// The specs, all of which a frame must match.
    pub specs: Vec<FlowSpec>,
}

/// The port's Ethernet counters (`Stats::eth`); the ethtool name of the mlx5 counter each
/// stands for is given where there is one.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EthStats {
    /// Frames put on the wire (`tx_packets_phy`): one per SEND, per TSO segment, per eMPW
    /// packet.
    pub tx_frames: u64,
    /// Their bytes, without FCS (`tx_bytes_phy` less 4 per frame).
    pub tx_bytes: u64,
    /// Frames longer than the port's largest frame, dropped before the wire (the WQE
    /// still completes; what a ConnectX does is not public).
    pub tx_oversize: u64,
    /// TSO segments sent (each also a frame).
    pub tso_segments: u64,
    /// Packets sent by eMPW WQEs (each also a frame).
    pub empw_packets: u64,
    /// Frames the switch flooded for want of a learned destination.
    pub tx_flooded: u64,
    /// Frames taken from the wire (`rx_packets_phy`).
    pub rx_frames: u64,
    /// Their bytes (`rx_bytes_phy` less FCS).
    pub rx_bytes: u64,
    /// Frames longer than the port's largest frame, dropped (`rx_oversize_pkts_phy`).
    pub rx_oversize: u64,
    /// Frames no rule took (`rx_steer_missed_packets`).
    pub rx_steer_missed: u64,
    /// Frames a rule with the drop action took.
    pub rx_rule_drops: u64,
    /// Frames for a queue that had no receive WQE posted (`rx_out_of_buffer`).
    pub rx_out_of_buffer: u64,
    /// Frames for a queue not ready to receive (QP in RESET or ERR, work queue not RDY).
    pub rx_not_ready: u64,
    /// Frames written into a receive queue (a frame copied to several queues counts
    /// once per queue).
    pub rx_delivered: u64,
    /// Delivered frames whose IPv4 header or TCP/UDP checksum was wrong (delivered with
    /// the OK bit clear).
    pub rx_csum_bad: u64,
    /// Filler CQEs of striding work queues (the kernel's `mpwqe_filler_cqes`).
    pub mprq_fillers: u64,
}
