//! Raw Ethernet's plain types: the device's Ethernet capabilities, the options of one frame
//! send and why a send is refused, and the steering rules (`ibv_create_flow`'s attribute and
//! specs) that deliver frames to a raw packet QP. docs/transports.md, "Raw Ethernet".

use crate::prm::{ETH_L2_MIN_HEADER_SIZE, ETH_WQE_L3_CSUM, ETH_WQE_L4_CSUM};

/// A device's Ethernet capabilities (the Ethernet half of `mlx5dv_query_device` and
/// `ibv_query_device_ex`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct EthCaps {
    /// The port's MAC address.
    pub mac: [u8; 6],
    /// Bytes of the frame every SEND and TSO WQE must carry inline in its Ethernet segment
    /// (rdma-core's `eth_min_inline_size`: 0, or 18 on ConnectX-4 and 4 Lx).
    pub min_inline: usize,
    /// Enhanced multi-packet send (`MLX5DV_CONTEXT_FLAGS_ENHANCED_MPW`).
    pub enhanced_mpw: bool,
    /// Striding receive queues (`striding_rq_caps` not empty).
    pub striding_rq: bool,
    /// The largest TSO payload (`tso_caps.max_tso`).
    pub max_tso: u32,
    /// The largest frame the port sends or takes, without FCS.
    pub max_frame: usize,
}

/// Checksum offloads of a frame (`cs_flags` of the Ethernet segment): the device computes
/// and writes the checksums asked for where the frame has those headers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Checksum(pub u8);

impl Checksum {
    /// No offload: the frame goes out as written.
    pub const NONE: Checksum = Checksum(0);
    /// The IPv4 header checksum (`MLX5_ETH_WQE_L3_CSUM`).
    pub const L3: Checksum = Checksum(ETH_WQE_L3_CSUM);
    /// The TCP or UDP checksum over its pseudo-header (`MLX5_ETH_WQE_L4_CSUM`).
    pub const L4: Checksum = Checksum(ETH_WQE_L4_CSUM);
    /// Both, what `IBV_SEND_IP_CSUM` asks for.
    pub const IP: Checksum = Checksum(ETH_WQE_L3_CSUM | ETH_WQE_L4_CSUM);
}

/// A VLAN tag the device inserts after the MAC addresses of a frame (the Ethernet
/// segment's insertion command).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct VlanInsert {
    /// The TCI: PCP (15..13), DEI (12), VID (11..0).
    pub tci: u16,
    /// An 802.1ad (S-VLAN, TPID 0x88A8) tag instead of 802.1Q (0x8100).
    pub svlan: bool,
}

/// Why [`SendQueue::post_eth`](crate::SendQueue::post_eth) refused a frame, before anything
/// was written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum EthRefusal {
    /// The inline header is shorter than the device's minimum ([`EthCaps::min_inline`]).
    HeaderTooShort {
        /// Bytes given.
        len: usize,
        /// The device's minimum.
        min: usize,
    },
    /// A VLAN insertion with an inline header, or on a device that needs one: the
    /// insertion command takes the bytes of the inline header's size (the kernel's mlx5e
    /// inserts in software whenever it inlines).
    VlanWithInlineHeader,
    /// A TSO send whose header is under the 14 bytes of an Ethernet header
    /// (`MLX5_ETH_L2_MIN_HEADER_SIZE`).
    TsoHeaderTooShort {
        /// Bytes given.
        len: usize,
    },
    /// A TSO payload over the device's largest ([`EthCaps::max_tso`]).
    TsoTooLarge {
        /// Payload bytes.
        len: u64,
        /// The device's largest.
        max: u32,
    },
    /// A frame of no bytes.
    EmptyFrame,
    /// Enhanced multi-packet send on a device without it
    /// ([`EthCaps::enhanced_mpw`]), or that needs an inline header (eMPW carries none:
    /// DPDK does not use it there).
    EmpwUnsupported,
    /// An eMPW WQE of no packet, or of more than DPDK's 32 (`MLX5_EMPW_MAX_PACKETS`).
    EmpwPackets {
        /// Packets given.
        count: usize,
    },
    /// An eMPW WQE over DPDK's 60 DS (`MLX5_WQE_SIZE_MAX`, 960 bytes).
    EmpwTooLarge {
        /// Its size in 16-byte units.
        ds: usize,
    },
    /// An inline eMPW packet over DPDK's 268 bytes (`MLX5_EMPW_DEF_INLINE_LEN`).
    EmpwInlineTooLarge {
        /// Its length.
        len: usize,
    },
}

impl core::fmt::Display for EthRefusal {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            EthRefusal::HeaderTooShort { len, min } => write!(
                f,
                "an inline header of {len} bytes, the device needs at least {min}"
            ),
            EthRefusal::VlanWithInlineHeader => {
                f.write_str("VLAN insertion leaves no room for an inline header")
            }
            EthRefusal::TsoHeaderTooShort { len } => write!(
                f,
                "a TSO header of {len} bytes is under the {ETH_L2_MIN_HEADER_SIZE} of Ethernet"
            ),
            EthRefusal::TsoTooLarge { len, max } => {
                write!(f, "a TSO payload of {len} bytes exceeds the device's {max}")
            }
            EthRefusal::EmptyFrame => f.write_str("an Ethernet frame of no bytes"),
            EthRefusal::EmpwUnsupported => f.write_str(
                "enhanced multi-packet send needs the device's cap and no inline header",
            ),
            EthRefusal::EmpwPackets { count } => {
                write!(f, "an eMPW WQE of {count} packets (1 to 32)")
            }
            EthRefusal::EmpwTooLarge { ds } => {
                write!(f, "an eMPW WQE of {ds} DS exceeds 60")
            }
            EthRefusal::EmpwInlineTooLarge { len } => {
                write!(f, "an inline eMPW packet of {len} bytes exceeds 268")
            }
        }
    }
}

/// A striding (multi-packet) receive work queue (`mlx5dv_create_wq` with
/// `MLX5DV_WQ_INIT_ATTR_MASK_STRIDING_RQ`): `1 << log_wqes` WQEs, each a buffer of
/// `1 << log_num_strides` strides of `1 << log_stride_bytes` bytes; a frame takes
/// consecutive strides of the WQE being filled.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct StridingConfig {
    /// log2 of the WQEs in the ring.
    pub log_wqes: u8,
    /// `single_stride_log_num_of_bytes` (6..=13 on mlx5).
    pub log_stride_bytes: u8,
    /// `single_wqe_log_num_of_strides` (9..=16, or from 3 with `ext_stride_num_range`).
    pub log_num_strides: u8,
    /// `two_byte_shift_en`: each frame starts 2 bytes into its first stride (so that its
    /// IP header is 4-byte aligned).
    pub two_byte_shift: bool,
}

impl StridingConfig {
    /// Bytes of one WQE's buffer.
    pub fn wqe_bytes(&self) -> usize {
        1 << (self.log_stride_bytes + self.log_num_strides)
    }
}

/// An RSS QP's hash (`struct ibv_rx_hash_conf`, Toeplitz, the one function mlx5 has):
/// the 40-byte key and the fields (`enum ibv_rx_hash_fields` bits).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RxHashConfig {
    /// The Toeplitz key.
    pub key: [u8; 40],
    /// `IBV_RX_HASH_*` bits: [`RxHashConfig::SRC_IPV4`] and the others.
    pub fields: u32,
}

impl RxHashConfig {
    /// `IBV_RX_HASH_SRC_IPV4`.
    pub const SRC_IPV4: u32 = 1 << 0;
    /// `IBV_RX_HASH_DST_IPV4`.
    pub const DST_IPV4: u32 = 1 << 1;
    /// `IBV_RX_HASH_SRC_IPV6`.
    pub const SRC_IPV6: u32 = 1 << 2;
    /// `IBV_RX_HASH_DST_IPV6`.
    pub const DST_IPV6: u32 = 1 << 3;
    /// `IBV_RX_HASH_SRC_PORT_TCP`.
    pub const SRC_PORT_TCP: u32 = 1 << 4;
    /// `IBV_RX_HASH_DST_PORT_TCP`.
    pub const DST_PORT_TCP: u32 = 1 << 5;
    /// `IBV_RX_HASH_SRC_PORT_UDP`.
    pub const SRC_PORT_UDP: u32 = 1 << 6;
    /// `IBV_RX_HASH_DST_PORT_UDP`.
    pub const DST_PORT_UDP: u32 = 1 << 7;
}

/// What kind of steering rule (`enum ibv_flow_attr_type`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum FlowKind {
    /// `IBV_FLOW_ATTR_NORMAL`: the frames its specs match.
    #[default]
    Normal,
    /// `IBV_FLOW_ATTR_ALL_DEFAULT`: every frame no normal rule took (the catch-all).
    AllDefault,
    /// `IBV_FLOW_ATTR_MC_DEFAULT`: every group-addressed frame no normal rule took.
    McDefault,
    /// `IBV_FLOW_ATTR_SNIFFER`: a copy of every frame the port receives and sends.
    Sniffer,
}

/// `struct ibv_flow_eth_filter`, host order.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct EthFilter {
    /// Destination MAC.
    pub dst_mac: [u8; 6],
    /// Source MAC.
    pub src_mac: [u8; 6],
    /// EtherType after any VLAN tag.
    pub ether_type: u16,
    /// The VLAN tag's TCI; a non-zero mask matches tagged frames only.
    pub vlan_tag: u16,
}

/// `struct ibv_flow_ipv4_ext_filter` (the fields mlx5 matches), host order.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Ipv4Filter {
    /// Source address.
    pub src_ip: [u8; 4],
    /// Destination address.
    pub dst_ip: [u8; 4],
    /// Protocol.
    pub proto: u8,
    /// Type of service.
    pub tos: u8,
}

/// `struct ibv_flow_ipv6_filter` (the fields mlx5 matches), host order.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
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
}

/// `struct ibv_flow_tcp_udp_filter`, host order.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct L4Filter {
    /// Destination port.
    pub dst_port: u16,
    /// Source port.
    pub src_port: u16,
}

/// One spec of a rule (`struct ibv_flow_spec_*`): a frame matches when every field, masked,
/// equals the value masked.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum FlowSpec {
    /// `IBV_FLOW_SPEC_ETH`.
    Eth {
        /// Value.
        val: EthFilter,
        /// Mask.
        mask: EthFilter,
    },
    /// `IBV_FLOW_SPEC_IPV4_EXT`: also matches the EtherType 0x0800.
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
    /// `IBV_FLOW_SPEC_ACTION_TAG`: the rule's receive completions carry this 24-bit tag
    /// ([`Completion::eth`](crate::Completion::eth)).
    Tag(u32),
    /// `IBV_FLOW_SPEC_ACTION_DROP`: matching frames are dropped.
    Drop,
}

/// A steering rule (`struct ibv_flow_attr` and its specs), built with the constructors
/// and the chained matchers: `FlowRule::dst_mac(mac).udp_dst_port(4791).tag(7)`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct FlowRule {
    /// The kind of rule.
    pub kind: FlowKind,
    /// Priority, 0 (first) to 15.
    pub priority: u16,
    /// `IBV_FLOW_ATTR_FLAGS_DONT_TRAP`: a matched frame also goes on to later rules.
    pub dont_trap: bool,
    /// The specs, all of which a frame must match.
    pub specs: Vec<FlowSpec>,
}

const FULL_MAC: [u8; 6] = [0xff; 6];
/// The VID bits of a TCI.
const VID_MASK: u16 = 0x0fff;

impl FlowRule {
    /// A rule of `kind` without specs.
    pub fn of_kind(kind: FlowKind) -> FlowRule {
        FlowRule {
            kind,
            ..FlowRule::default()
        }
    }

    /// Frames to `mac`.
    pub fn dst_mac(mac: [u8; 6]) -> FlowRule {
        FlowRule::default().eth(
            EthFilter {
                dst_mac: mac,
                ..EthFilter::default()
            },
            EthFilter {
                dst_mac: FULL_MAC,
                ..EthFilter::default()
            },
        )
    }

    /// The catch-all: every frame no normal rule took (`IBV_FLOW_ATTR_ALL_DEFAULT`).
    pub fn all_default() -> FlowRule {
        FlowRule::of_kind(FlowKind::AllDefault)
    }

    /// Every group-addressed frame no normal rule took (`IBV_FLOW_ATTR_MC_DEFAULT`).
    pub fn mc_default() -> FlowRule {
        FlowRule::of_kind(FlowKind::McDefault)
    }

    /// A copy of every frame of the port, both directions (`IBV_FLOW_ATTR_SNIFFER`).
    pub fn sniffer() -> FlowRule {
        FlowRule::of_kind(FlowKind::Sniffer)
    }

    /// Adds an Ethernet spec, merged into the rule's first one if it has one (a rule holds
    /// one spec of each layer).
    pub fn eth(mut self, val: EthFilter, mask: EthFilter) -> FlowRule {
        let merged = self.specs.iter_mut().find_map(|s| match s {
            FlowSpec::Eth { val, mask } => Some((val, mask)),
            _ => None,
        });
        match merged {
            Some((v, m)) => {
                for (i, byte) in mask.dst_mac.iter().enumerate() {
                    if *byte != 0 {
                        (v.dst_mac[i], m.dst_mac[i]) = (val.dst_mac[i], *byte);
                    }
                }
                for (i, byte) in mask.src_mac.iter().enumerate() {
                    if *byte != 0 {
                        (v.src_mac[i], m.src_mac[i]) = (val.src_mac[i], *byte);
                    }
                }
                if mask.ether_type != 0 {
                    (v.ether_type, m.ether_type) = (val.ether_type, mask.ether_type);
                }
                if mask.vlan_tag != 0 {
                    (v.vlan_tag, m.vlan_tag) = (val.vlan_tag, mask.vlan_tag);
                }
            }
            None => self.specs.insert(0, FlowSpec::Eth { val, mask }),
        }
        self
    }

    /// Only frames tagged with VLAN `vid` (12 bits).
    pub fn vlan(self, vid: u16) -> FlowRule {
        self.eth(
            EthFilter {
                vlan_tag: vid & VID_MASK,
                ..EthFilter::default()
            },
            EthFilter {
                vlan_tag: VID_MASK,
                ..EthFilter::default()
            },
        )
    }

    /// Only IPv4 packets from `src` (when given) to `dst` (when given).
    pub fn ipv4(mut self, src: Option<[u8; 4]>, dst: Option<[u8; 4]>) -> FlowRule {
        let mask = |a: Option<[u8; 4]>| a.map_or([0; 4], |_| [0xff; 4]);
        self.specs.push(FlowSpec::Ipv4 {
            val: Ipv4Filter {
                src_ip: src.unwrap_or_default(),
                dst_ip: dst.unwrap_or_default(),
                ..Ipv4Filter::default()
            },
            mask: Ipv4Filter {
                src_ip: mask(src),
                dst_ip: mask(dst),
                ..Ipv4Filter::default()
            },
        });
        self
    }

    /// Only IPv6 packets from `src` (when given) to `dst` (when given).
    pub fn ipv6(mut self, src: Option<[u8; 16]>, dst: Option<[u8; 16]>) -> FlowRule {
        let mask = |a: Option<[u8; 16]>| a.map_or([0; 16], |_| [0xff; 16]);
        self.specs.push(FlowSpec::Ipv6 {
            val: Ipv6Filter {
                src_ip: src.unwrap_or_default(),
                dst_ip: dst.unwrap_or_default(),
                ..Ipv6Filter::default()
            },
            mask: Ipv6Filter {
                src_ip: mask(src),
                dst_ip: mask(dst),
                ..Ipv6Filter::default()
            },
        });
        self
    }

    /// Only UDP datagrams from port `src` (when given) to port `dst` (when given).
    pub fn udp(mut self, src: Option<u16>, dst: Option<u16>) -> FlowRule {
        let (val, mask) = ports(src, dst);
        self.specs.push(FlowSpec::Udp { val, mask });
        self
    }

    /// Only TCP segments from port `src` (when given) to port `dst` (when given).
    pub fn tcp(mut self, src: Option<u16>, dst: Option<u16>) -> FlowRule {
        let (val, mask) = ports(src, dst);
        self.specs.push(FlowSpec::Tcp { val, mask });
        self
    }

    /// Tags the rule's receive completions with `tag` (24 bits).
    pub fn tag(mut self, tag: u32) -> FlowRule {
        self.specs.push(FlowSpec::Tag(tag));
        self
    }

    /// Drops the matching frames.
    pub fn drop_frames(mut self) -> FlowRule {
        self.specs.push(FlowSpec::Drop);
        self
    }

    /// With priority `priority` (0 first).
    pub fn priority(mut self, priority: u16) -> FlowRule {
        self.priority = priority;
        self
    }

    /// Lets matched frames go on to later rules too (`IBV_FLOW_ATTR_FLAGS_DONT_TRAP`).
    pub fn dont_trap(mut self) -> FlowRule {
        self.dont_trap = true;
        self
    }
}

/// The value and mask of a TCP or UDP spec.
fn ports(src: Option<u16>, dst: Option<u16>) -> (L4Filter, L4Filter) {
    let mask = |p: Option<u16>| p.map_or(0, |_| 0xffff);
    (
        L4Filter {
            src_port: src.unwrap_or(0),
            dst_port: dst.unwrap_or(0),
        },
        L4Filter {
            src_port: mask(src),
            dst_port: mask(dst),
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_merge_their_ethernet_specs() {
        let mac = [2, 0, 0, 0, 0, 9];
        let r = FlowRule::dst_mac(mac)
            .vlan(0x1064)
            .udp(None, Some(319))
            .tag(5);
        assert_eq!(r.specs.len(), 3);
        let FlowSpec::Eth { val, mask } = r.specs[0] else {
            panic!("{r:?}")
        };
        assert_eq!((val.dst_mac, mask.dst_mac), (mac, [0xff; 6]));
        assert_eq!((val.vlan_tag, mask.vlan_tag), (0x064, 0x0fff));
        assert_eq!(
            r.specs[1],
            FlowSpec::Udp {
                val: L4Filter {
                    dst_port: 319,
                    src_port: 0
                },
                mask: L4Filter {
                    dst_port: 0xffff,
                    src_port: 0
                }
            }
        );
        assert_eq!(r.specs[2], FlowSpec::Tag(5));
        assert_eq!(FlowRule::sniffer().kind, FlowKind::Sniffer);
        assert_eq!(Checksum::IP.0, 0xc0);
    }
}
