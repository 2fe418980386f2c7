//! Flow-steering rules: an `ibv_create_flow` attribute compiled as the kernel's mlx5 driver
//! compiles it (drivers/infiniband/hw/mlx5/fs.c), and the choice of the rules a received
//! frame meets.
//!
//! * **Compiling** (`parse_flow_attr`): every spec sets fields of one match (masked value);
//!   an IPv4 or IPv6 spec also sets the EtherType, a TCP or UDP spec the IP protocol, and a
//!   second protocol that differs is EINVAL (`set_proto`); a VLAN mask matches tagged
//!   frames only (`cvlan_tag`); masks on fields mlx5 does not match (IPv4 TTL and flags,
//!   IPv6 hop limit) are EOPNOTSUPP (`FIELDS_NOT_SUPPORTED`); an Ethernet spec's EtherType
//!   must agree with an IP spec, with a full mask (`is_valid_ethertype`); a tag takes 24
//!   bits and is refused on the default rules.
//! * **Tables** (`get_flow_table`, `ib_prio_to_core_prio`): a normal rule of priority `p`
//!   (0..=15, `MLX5_IB_FLOW_LAST_PRIO`; more is ENOMEM) sits in bypass table `2p`, or `2p +
//!   1` without `IBV_FLOW_ATTR_FLAGS_DONT_TRAP`; a rule that matches only group addresses
//!   (its first spec an IPv4 multicast destination, or an Ethernet spec whose destination
//!   mask and value are both group addresses: `flow_is_multicast_only`) without DONT_TRAP
//!   sits in the multicast table after them (`MLX5_IB_FLOW_MCAST_PRIO`); the default rules
//!   in the leftovers table after that (`create_leftovers_rule`: a group-address rule, and
//!   for `ALL_DEFAULT` a unicast one too); sniffer rules match everything, in tables of
//!   their own on both directions (`create_sniffer_rule`, which ignores the specs).
//! * **A frame** meets the tables in order. In a table, rules with the same mask form a
//!   group (the auto-grouped flow table), groups are tried in the order they were made,
//!   and the rules of a group with the same masked value are one entry whose destinations
//!   all get the frame (`mlx5_add_flow_rules` adds a destination to an existing entry; one
//!   with another action or tag is EEXIST, `check_conflicting_ftes`). A rule with the drop
//!   action drops the frame; a DONT_TRAP rule's frame goes on to the next tables
//!   (`MLX5_FLOW_CONTEXT_ACTION_FWD_NEXT_PRIO`); any other match ends the search.

use crate::eth::frame::{is_group, Headers, ETHERTYPE_IPV4, ETHERTYPE_IPV6, L3, L4};
use crate::eth::frame::{PROTO_TCP, PROTO_UDP};
use crate::types::{FlowAttr, FlowKind, FlowSpec, HwError};

/// The last normal priority (`MLX5_IB_FLOW_LAST_PRIO`: `MLX5_BY_PASS_NUM_REGULAR_PRIOS`
/// 16, less one).
const LAST_PRIO: u16 = 15;
/// The multicast table, after the 32 bypass tables (`MLX5_IB_FLOW_MCAST_PRIO`).
const MCAST_TABLE: u32 = 32;
/// The leftovers table (`MLX5_IB_FLOW_LEFTOVERS_PRIO`).
const LEFTOVERS_TABLE: u32 = 33;
/// Flow tags are 24 bits (`parse_flow_attr`: `tag_id >= BIT(24)` is EINVAL).
const TAG_LIMIT: u32 = 1 << 24;

/// The header fields a rule can match, as a frame has them or as a rule masks them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Fields {
    dmac: [u8; 6],
    smac: [u8; 6],
    ether_type: u16,
    cvlan: bool,
    tci: u16,
    src_ip: [u8; 16],
    dst_ip: [u8; 16],
    proto: u8,
    tos: u8,
    flow_label: u32,
    sport: u16,
    dport: u16,
}

fn and<const N: usize>(a: [u8; N], b: [u8; N]) -> [u8; N] {
    std::array::from_fn(|i| a[i] & b[i])
}

impl Fields {
    /// A frame's fields (IPv4 addresses in the first 4 bytes).
    pub(crate) fn of(h: &Headers) -> Fields {
        let mut f = Fields {
            dmac: h.dmac,
            smac: h.smac,
            ether_type: h.ether_type,
            cvlan: h.vlan.is_some(),
            tci: h.vlan.unwrap_or(0),
            ..Fields::default()
        };
        match h.l3 {
            L3::V4 {
                src,
                dst,
                proto,
                tos,
                ..
            } => {
                f.src_ip[..4].copy_from_slice(&src);
                f.dst_ip[..4].copy_from_slice(&dst);
                (f.proto, f.tos) = (proto, tos);
            }
            L3::V6 {
                src,
                dst,
                next,
                tclass,
                flow_label,
                ..
            } => {
                (f.src_ip, f.dst_ip, f.proto, f.tos) = (src, dst, next, tclass);
                f.flow_label = flow_label;
            }
            L3::None => {}
        }
        if let L4::Tcp { sport, dport, .. } | L4::Udp { sport, dport } = h.l4 {
            (f.sport, f.dport) = (sport, dport);
        }
        f
    }

    fn masked(&self, m: &Fields) -> Fields {
        Fields {
            dmac: and(self.dmac, m.dmac),
            smac: and(self.smac, m.smac),
            ether_type: self.ether_type & m.ether_type,
            cvlan: self.cvlan && m.cvlan,
            tci: self.tci & m.tci,
            src_ip: and(self.src_ip, m.src_ip),
            dst_ip: and(self.dst_ip, m.dst_ip),
            proto: self.proto & m.proto,
            tos: self.tos & m.tos,
            flow_label: self.flow_label & m.flow_label,
            sport: self.sport & m.sport,
            dport: self.dport & m.dport,
        }
    }
}

/// One entry of a steering table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Rule {
    table: u32,
    mask: Fields,
    /// The value, masked.
    val: Fields,
    tag: Option<u32>,
    drop: bool,
}

impl Rule {
    fn hits(&self, f: &Fields) -> bool {
        f.masked(&self.mask) == self.val
    }

    fn same_entry(&self, o: &Rule) -> bool {
        self.table == o.table && self.mask == o.mask && self.val == o.val
    }
}

/// Where a rule sends what it takes: a raw packet QP (its index) or an RSS QP (its index
/// among the NIC's RSS QPs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Dest {
    Qp(usize),
    Rss(usize),
}

/// A steering rule of a QP: its compiled entries (none for a sniffer, two for an
/// `ALL_DEFAULT` rule) and when it was made.
#[derive(Clone, Debug)]
pub(crate) struct Flow {
    pub(crate) dest: Dest,
    pub(crate) sniffer: bool,
    pub(crate) rules: Vec<Rule>,
    pub(crate) seq: u64,
}

/// Set the IP protocol of `m`/`v` (`set_proto`): a second, different one is EINVAL.
fn set_proto(m: &mut Fields, v: &mut Fields, mask: u8, val: u8) -> Result<(), HwError> {
    if mask == 0 {
        return Ok(());
    }
    if m.proto == 0 {
        (m.proto, v.proto) = (mask, val & mask);
        return Ok(());
    }
    if m.proto == mask && v.proto == val & mask {
        return Ok(());
    }
    Err(HwError::InvalidParam(
        "two different IP protocols in one flow",
    ))
}

/// The EtherType check of `is_valid_ethertype`: an Ethernet spec's masked EtherType next
/// to an IP spec must be that IP's, with a full mask.
fn check_ethertype(specs: &[FlowSpec]) -> Result<(), HwError> {
    let eth = specs.iter().find_map(|s| match s {
        FlowSpec::Eth { val, mask } if mask.ether_type != 0 => {
            Some((val.ether_type, mask.ether_type))
        }
        _ => None,
    });
    let ip = specs.iter().find_map(|s| match s {
        FlowSpec::Ipv4 { .. } => Some(ETHERTYPE_IPV4),
        FlowSpec::Ipv6 { .. } => Some(ETHERTYPE_IPV6),
        _ => None,
    });
    match (eth, ip) {
        (Some((t, m)), Some(ip)) if m != 0xffff || t != ip => Err(HwError::InvalidParam(
            "an EtherType that disagrees with the IP spec",
        )),
        _ => Ok(()),
    }
}

/// Whether the rule takes only group-addressed frames (`flow_is_multicast_only`).
fn multicast_only(a: &FlowAttr) -> bool {
    match a.specs.first() {
        Some(FlowSpec::Ipv4 { val, .. }) => val.dst_ip[0] & 0xf0 == 0xe0,
        Some(FlowSpec::Eth { val, mask }) => is_group(&mask.dst_mac) && is_group(&val.dst_mac),
        _ => false,
    }
}

/// Compile `a` for `dest` (the `seq`-th rule made on the NIC). `ports` is the NIC's port
/// count.
pub(crate) fn compile(a: &FlowAttr, dest: Dest, seq: u64, ports: u8) -> Result<Flow, HwError> {
    if a.port == 0 || a.port > ports {
        return Err(HwError::InvalidParam("port"));
    }
    let flow = |rules| Flow {
        dest,
        sniffer: a.kind == FlowKind::Sniffer,
        rules,
        seq,
    };
    let (mut m, mut v) = (Fields::default(), Fields::default());
    let (mut tag, mut drop) = (None, false);
    match a.kind {
        FlowKind::Sniffer => return Ok(flow(Vec::new())),
        FlowKind::AllDefault | FlowKind::McDefault => {
            if a.specs.iter().any(|s| matches!(s, FlowSpec::Tag(_))) {
                return Err(HwError::InvalidParam("a flow tag on a default rule"));
            }
            m.dmac[0] = 1;
            let mc = Rule {
                table: LEFTOVERS_TABLE,
                mask: m,
                val: m,
                tag: None,
                drop: false,
            };
            let uc = Rule { val: v, ..mc };
            let rules = match a.kind {
                FlowKind::AllDefault => vec![mc, uc],
                _ => vec![mc],
            };
            return Ok(flow(rules));
        }
        FlowKind::Normal => {}
    }
    if a.priority > LAST_PRIO {
        return Err(HwError::OutOfResources);
    }
    check_ethertype(&a.specs)?;
    for s in &a.specs {
        match *s {
            FlowSpec::Eth { val, mask } => {
                (m.dmac, v.dmac) = (mask.dst_mac, and(val.dst_mac, mask.dst_mac));
                (m.smac, v.smac) = (mask.src_mac, and(val.src_mac, mask.src_mac));
                (m.ether_type, v.ether_type) = (mask.ether_type, val.ether_type & mask.ether_type);
                if mask.vlan_tag != 0 {
                    (m.cvlan, v.cvlan) = (true, true);
                    (m.tci, v.tci) = (mask.vlan_tag, val.vlan_tag & mask.vlan_tag);
                }
            }
            FlowSpec::Ipv4 { val, mask } => {
                if mask.ttl != 0 || mask.flags != 0 {
                    return Err(HwError::NotSupported("IPv4 TTL or flags in a flow"));
                }
                (m.ether_type, v.ether_type) = (0xffff, ETHERTYPE_IPV4);
                m.src_ip[..4].copy_from_slice(&mask.src_ip);
                v.src_ip[..4].copy_from_slice(&and(val.src_ip, mask.src_ip));
                m.dst_ip[..4].copy_from_slice(&mask.dst_ip);
                v.dst_ip[..4].copy_from_slice(&and(val.dst_ip, mask.dst_ip));
                (m.tos, v.tos) = (mask.tos, val.tos & mask.tos);
                set_proto(&mut m, &mut v, mask.proto, val.proto)?;
            }
            FlowSpec::Ipv6 { val, mask } => {
                if mask.hop_limit != 0 {
                    return Err(HwError::NotSupported("IPv6 hop limit in a flow"));
                }
                (m.ether_type, v.ether_type) = (0xffff, ETHERTYPE_IPV6);
                (m.src_ip, v.src_ip) = (mask.src_ip, and(val.src_ip, mask.src_ip));
                (m.dst_ip, v.dst_ip) = (mask.dst_ip, and(val.dst_ip, mask.dst_ip));
                (m.tos, v.tos) = (mask.traffic_class, val.traffic_class & mask.traffic_class);
                m.flow_label = mask.flow_label & 0xf_ffff;
                v.flow_label = val.flow_label & m.flow_label;
                set_proto(&mut m, &mut v, mask.next_hdr, val.next_hdr)?;
            }
            FlowSpec::Tcp { val, mask } | FlowSpec::Udp { val, mask } => {
                let proto = match s {
                    FlowSpec::Tcp { .. } => PROTO_TCP,
                    _ => PROTO_UDP,
                };
                set_proto(&mut m, &mut v, 0xff, proto)?;
                (m.sport, v.sport) = (mask.src_port, val.src_port & mask.src_port);
                (m.dport, v.dport) = (mask.dst_port, val.dst_port & mask.dst_port);
            }
            FlowSpec::Tag(id) if id >= TAG_LIMIT => {
                return Err(HwError::InvalidParam("a flow tag takes 24 bits"))
            }
            FlowSpec::Tag(id) => tag = Some(id),
            FlowSpec::Drop => drop = true,
        }
    }
    let table = if multicast_only(a) && !a.dont_trap {
        MCAST_TABLE
    } else {
        u32::from(a.priority) * 2 + u32::from(!a.dont_trap)
    };
    Ok(flow(vec![Rule {
        table,
        mask: m,
        val: v,
        tag,
        drop,
    }]))
}

/// Whether adding `new` to `flows` makes an entry with two actions or tags (EEXIST in
/// `check_conflicting_ftes`).
pub(crate) fn conflicts<'a>(new: &Flow, mut flows: impl Iterator<Item = &'a Flow>) -> bool {
    flows.any(|f| {
        f.rules.iter().any(|o| {
            new.rules.iter().any(|r| {
                r.same_entry(o)
                    && (r.drop != o.drop || r.tag.is_some_and(|t| t != o.tag.unwrap_or(0)))
            })
        })
    })
}

/// Where steering sends a frame: each destination with the entry's flow tag (0 when it
/// has none), and whether a rule dropped it.
#[derive(Debug, Default)]
pub(crate) struct Steered {
    pub(crate) to: Vec<(Dest, u32)>,
    pub(crate) dropped: bool,
}

/// Steer a frame with fields `f` through `flows` (the NIC's rules, sniffers aside).
pub(crate) fn steer<'a>(flows: impl Iterator<Item = &'a Flow> + Clone, f: &Fields) -> Steered {
    let mut out = Steered::default();
    let entries = || {
        flows
            .clone()
            .flat_map(|fl| fl.rules.iter().map(move |r| (fl, r)))
    };
    let mut tables: Vec<u32> = entries().map(|(_, r)| r.table).collect();
    tables.sort_unstable();
    tables.dedup();
    for table in tables {
        // The groups of this table, in the order their first rule was made.
        let mut groups: Vec<(u64, Fields)> = Vec::new();
        for (fl, r) in entries().filter(|(_, r)| r.table == table) {
            match groups.iter_mut().find(|g| g.1 == r.mask) {
                Some(g) => g.0 = g.0.min(fl.seq),
                None => groups.push((fl.seq, r.mask)),
            }
        }
        groups.sort_by_key(|g| g.0);
        let hit = groups.iter().find_map(|(_, mask)| {
            entries()
                .filter(|(fl, r)| r.table == table && r.mask == *mask && r.hits(f) && !fl.sniffer)
                .min_by_key(|(fl, _)| fl.seq)
        });
        let Some((_, first)) = hit else { continue };
        if first.drop {
            out.dropped = true;
            return out;
        }
        let tag = first.tag.unwrap_or(0);
        for (fl, _) in entries().filter(|(_, r)| r.same_entry(first)) {
            if !out.to.iter().any(|(d, _)| *d == fl.dest) {
                out.to.push((fl.dest, tag));
            }
        }
        // An odd table traps; a DONT_TRAP table (even, below the multicast one) forwards
        // to the next.
        if table >= MCAST_TABLE || table % 2 == 1 {
            return out;
        }
    }
    out
}
