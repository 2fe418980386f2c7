//! Flow steering: CREATE_FLOW and DESTROY_FLOW (`ib_uverbs_ex_create_flow`,
//! `ib_uverbs_ex_destroy_flow`, drivers/infiniband/core/uverbs_cmd.c; `mlx5_ib_create_flow`),
//! a rule and its specs made into the model's [`FlowAttr`] for `Nic::create_flow`.
//!
//! The core's checks come first, as the kernel makes them (each EINVAL): a `comp_mask`,
//! unknown flags, DONT_TRAP on a default rule, more than 10 specs, specs larger than 10
//! of the union, reserved bytes; a spec whose filter is longer than the kernel's with a
//! non-zero mask past it (`spec_filter_size`), an unknown spec type, sizes that do not add
//! up; a handle that is not a QP. What the model does not match (tunnel inner headers,
//! egress rules) is EOPNOTSUPP; the rest (the QP type, the port, the priority, conflicts)
//! the model refuses as mlx5 does. The kernel's CAP_NET_RAW check is not made: the program
//! runs with the emulator's rights.

use super::cmd::{Bundle, Res};
use super::context::Ctx;
use super::objects::errno;
use crate::abi::uverbs::*;
use crate::abi::{self, FromBytes, IntoBytes};
use mlx5_hw::{EthFilter, FlowAttr, FlowKind, FlowSpec, Ipv4Filter, Ipv6Filter, L4Filter};
use std::mem::size_of;

/// `IB_FLOW_SPEC_SUPPORT_LAYERS`: the most specs a rule has.
const MAX_SPECS: usize = 10;
/// `IB_FLOW_ATTR_FLAGS_RESERVED`: the first flag the kernel does not know.
const FLAGS_RESERVED: u32 = 1 << 3;
/// `sizeof(struct ib_uverbs_flow_spec)`: the union of the specs, whose largest is IPv6's.
const SPEC_UNION: usize = size_of::<ib_uverbs_flow_spec_ipv6>();
/// The specs' header.
const HDR: usize = size_of::<ib_uverbs_flow_spec_hdr>();

/// A steering rule of the context.
#[derive(Debug)]
pub(crate) struct Flow {
    /// The model's rule.
    pub(crate) id: u32,
}

/// The value and mask of a filter spec of `T` (`spec_filter_size`): the spec's bytes after
/// its header are the value then the mask, of equal size; a filter shorter than `T` is
/// zero-extended, a longer one must have a zero mask past `T`.
fn filter<T: FromBytes + IntoBytes>(spec: &[u8]) -> Result<(T, T), i32> {
    let body = &spec[HDR..];
    let n = body.len() / 2;
    if n == 0 {
        return Err(libc::EINVAL);
    }
    let (val, mask) = (&body[..n], &body[n..2 * n]);
    let real = size_of::<T>();
    if n > real && mask[real..].iter().any(|&b| b != 0) {
        return Err(libc::EINVAL);
    }
    let take = |bytes: &[u8]| {
        let mut v = T::new_zeroed();
        let k = real.min(bytes.len());
        v.as_mut_bytes()[..k].copy_from_slice(&bytes[..k]);
        v
    };
    Ok((take(val), take(mask)))
}

fn eth(f: ib_uverbs_flow_eth_filter) -> EthFilter {
    EthFilter {
        dst_mac: f.dst_mac,
        src_mac: f.src_mac,
        ether_type: u16::from_be(f.ether_type),
        vlan_tag: u16::from_be(f.vlan_tag),
    }
}

fn ipv4(f: ib_uverbs_flow_ipv4_filter) -> Ipv4Filter {
    Ipv4Filter {
        // In network order in memory: the bytes as they are.
        src_ip: f.src_ip.to_ne_bytes(),
        dst_ip: f.dst_ip.to_ne_bytes(),
        proto: f.proto,
        tos: f.tos,
        ttl: f.ttl,
        flags: f.flags,
    }
}

fn ipv6(f: ib_uverbs_flow_ipv6_filter) -> Ipv6Filter {
    Ipv6Filter {
        src_ip: f.src_ip,
        dst_ip: f.dst_ip,
        flow_label: u32::from_be(f.flow_label),
        next_hdr: f.next_hdr,
        traffic_class: f.traffic_class,
        hop_limit: f.hop_limit,
    }
}

fn l4(f: ib_uverbs_flow_tcp_udp_filter) -> L4Filter {
    L4Filter {
        dst_port: u16::from_be(f.dst_port),
        src_port: u16::from_be(f.src_port),
    }
}

/// One spec (`kern_spec_to_ib_spec`), its header already checked to fit.
fn spec(ty: u32, bytes: &[u8]) -> Result<FlowSpec, i32> {
    Ok(match ty {
        IBV_FLOW_SPEC_ETH => {
            let (v, m) = filter(bytes)?;
            FlowSpec::Eth {
                val: eth(v),
                mask: eth(m),
            }
        }
        IBV_FLOW_SPEC_IPV4 => {
            let (v, m) = filter(bytes)?;
            FlowSpec::Ipv4 {
                val: ipv4(v),
                mask: ipv4(m),
            }
        }
        IBV_FLOW_SPEC_IPV6 => {
            let (v, m) = filter(bytes)?;
            // `kern_spec_to_ib_spec_filter`: a flow label is 20 bits.
            let (v, m): (ib_uverbs_flow_ipv6_filter, ib_uverbs_flow_ipv6_filter) = (v, m);
            if (u32::from_be(v.flow_label) | u32::from_be(m.flow_label)) >> 20 != 0 {
                return Err(libc::EINVAL);
            }
            FlowSpec::Ipv6 {
                val: ipv6(v),
                mask: ipv6(m),
            }
        }
        IBV_FLOW_SPEC_TCP | IBV_FLOW_SPEC_UDP => {
            let (v, m) = filter(bytes)?;
            let (val, mask) = (l4(v), l4(m));
            match ty {
                IBV_FLOW_SPEC_TCP => FlowSpec::Tcp { val, mask },
                _ => FlowSpec::Udp { val, mask },
            }
        }
        IBV_FLOW_SPEC_ACTION_TAG => {
            let tag: ib_uverbs_flow_spec_action_tag =
                abi::read(bytes, 0).map_err(|_| libc::EINVAL)?;
            if bytes.len() != size_of::<ib_uverbs_flow_spec_action_tag>() {
                return Err(libc::EINVAL);
            }
            FlowSpec::Tag(tag.tag_id)
        }
        IBV_FLOW_SPEC_ACTION_DROP if bytes.len() == HDR => FlowSpec::Drop,
        IBV_FLOW_SPEC_ACTION_DROP => return Err(libc::EINVAL),
        // Inner headers of a tunnel: the kernel's, which the model does not parse.
        t if t & IBV_FLOW_SPEC_INNER != 0 => return Err(libc::EOPNOTSUPP),
        _ => return Err(libc::EINVAL),
    })
}

/// The rule of a CREATE_FLOW request (`core`: the command and its specs).
fn rule(c: &ib_uverbs_create_flow, specs: &[u8]) -> Result<FlowAttr, i32> {
    let a = &c.flow_attr;
    if c.comp_mask != 0
        || a.flags >= FLAGS_RESERVED
        || a.reserved != [0; 2]
        || usize::from(a.num_of_specs) > MAX_SPECS
        || usize::from(a.size) > usize::from(a.num_of_specs) * SPEC_UNION
        || usize::from(a.size) > specs.len()
    {
        return Err(libc::EINVAL);
    }
    let kind = match a.r#type {
        IBV_FLOW_ATTR_NORMAL => FlowKind::Normal,
        IBV_FLOW_ATTR_ALL_DEFAULT => FlowKind::AllDefault,
        IBV_FLOW_ATTR_MC_DEFAULT => FlowKind::McDefault,
        IBV_FLOW_ATTR_SNIFFER => FlowKind::Sniffer,
        _ => return Err(libc::EINVAL),
    };
    let dont_trap = a.flags & IBV_FLOW_ATTR_FLAGS_DONT_TRAP != 0;
    if dont_trap && matches!(kind, FlowKind::AllDefault | FlowKind::McDefault) {
        return Err(libc::EINVAL);
    }
    if a.flags & IBV_FLOW_ATTR_FLAGS_EGRESS != 0 {
        return Err(libc::EOPNOTSUPP);
    }
    let mut rest = &specs[..usize::from(a.size)];
    let mut out = Vec::new();
    while out.len() < usize::from(a.num_of_specs) && rest.len() >= HDR {
        let hdr: ib_uverbs_flow_spec_hdr = abi::read(rest, 0).map_err(|_| libc::EINVAL)?;
        let size = usize::from(hdr.size);
        if size < HDR || size > rest.len() {
            return Err(libc::EINVAL);
        }
        out.push(spec(hdr.r#type, &rest[..size])?);
        rest = &rest[size..];
    }
    // The sizes add up to `size` exactly, over `num_of_specs` specs.
    if !rest.is_empty() || out.len() != usize::from(a.num_of_specs) {
        return Err(libc::EINVAL);
    }
    Ok(FlowAttr {
        kind,
        priority: a.priority,
        port: a.port,
        dont_trap,
        specs: out,
    })
}

impl Ctx<'_> {
    /// CREATE_FLOW: the rule to the model's `create_flow` on the QP's number.
    pub(crate) fn create_flow(&mut self, b: &Bundle<'_>) -> Res {
        let c: ib_uverbs_create_flow = abi::read(b.core, 0).map_err(|e| e.errno())?;
        let attr = rule(&c, &b.core[size_of::<ib_uverbs_create_flow>()..])?;
        let qpn = match self.qps.get(&c.qp_handle) {
            Some(qp) => qp.qpn,
            None => self.rss_qps.get(&c.qp_handle).ok_or(libc::EINVAL)?.qpn,
        };
        let id = self.nic.create_flow(qpn, &attr).map_err(errno)?;
        let handle = self.handle();
        let resp = ib_uverbs_create_flow_resp {
            comp_mask: 0,
            flow_handle: handle,
        };
        if let Err(e) = self.respond(b, &resp) {
            let _ = self.nic.destroy_flow(id);
            return Err(e);
        }
        self.flows.insert(handle, Flow { id });
        Ok(())
    }

    /// DESTROY_FLOW.
    pub(crate) fn destroy_flow(&mut self, b: &Bundle<'_>) -> Res {
        let c: ib_uverbs_destroy_flow = abi::read_extensible(b.core).map_err(|e| e.errno())?;
        if c.comp_mask != 0 {
            return Err(libc::EINVAL);
        }
        let flow = self.flows.remove(&c.flow_handle).ok_or(libc::EINVAL)?;
        self.nic.destroy_flow(flow.id).map_err(errno)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A rule as libibverbs sends `ibv_create_flow`'s destination MAC + IPv4 + UDP + tag:
    /// the model gets every field in host order, addresses as their bytes.
    #[test]
    fn specs_become_the_models_rule_in_host_order() {
        let eth = ib_uverbs_flow_spec_eth {
            hdr: ib_uverbs_flow_spec_hdr {
                r#type: IBV_FLOW_SPEC_ETH,
                size: 40,
                reserved: 0,
            },
            val: ib_uverbs_flow_eth_filter {
                dst_mac: [2, 0, 0, 0, 0, 9],
                ether_type: 0x0800u16.to_be(),
                vlan_tag: 0x0123u16.to_be(),
                ..Default::default()
            },
            mask: ib_uverbs_flow_eth_filter {
                dst_mac: [0xff; 6],
                ether_type: 0xffff,
                vlan_tag: 0x0fffu16.to_be(),
                ..Default::default()
            },
        };
        let ip = ib_uverbs_flow_spec_ipv4 {
            hdr: ib_uverbs_flow_spec_hdr {
                r#type: IBV_FLOW_SPEC_IPV4,
                size: 32,
                reserved: 0,
            },
            val: ib_uverbs_flow_ipv4_filter {
                dst_ip: u32::from_ne_bytes([10, 0, 0, 2]),
                proto: 17,
                ..Default::default()
            },
            mask: ib_uverbs_flow_ipv4_filter {
                dst_ip: u32::MAX,
                proto: 0xff,
                ..Default::default()
            },
        };
        let udp = ib_uverbs_flow_spec_tcp_udp {
            hdr: ib_uverbs_flow_spec_hdr {
                r#type: IBV_FLOW_SPEC_UDP,
                size: 16,
                reserved: 0,
            },
            val: ib_uverbs_flow_tcp_udp_filter {
                dst_port: 4791u16.to_be(),
                src_port: 0,
            },
            mask: ib_uverbs_flow_tcp_udp_filter {
                dst_port: 0xffff,
                src_port: 0,
            },
        };
        let tag = ib_uverbs_flow_spec_action_tag {
            hdr: ib_uverbs_flow_spec_hdr {
                r#type: IBV_FLOW_SPEC_ACTION_TAG,
                size: 16,
                reserved: 0,
            },
            tag_id: 0x42,
            reserved1: 0,
        };
        let specs = [
            eth.as_bytes(),
            ip.as_bytes(),
            udp.as_bytes(),
            tag.as_bytes(),
        ]
        .concat();
        let c = ib_uverbs_create_flow {
            comp_mask: 0,
            qp_handle: 1,
            flow_attr: ib_uverbs_flow_attr {
                r#type: IBV_FLOW_ATTR_NORMAL,
                size: specs.len() as u16,
                priority: 3,
                num_of_specs: 4,
                reserved: [0; 2],
                port: 1,
                flags: IBV_FLOW_ATTR_FLAGS_DONT_TRAP,
            },
        };
        let got = rule(&c, &specs).unwrap();
        let want = FlowAttr {
            kind: FlowKind::Normal,
            priority: 3,
            port: 1,
            dont_trap: true,
            specs: vec![
                FlowSpec::Eth {
                    val: EthFilter {
                        dst_mac: [2, 0, 0, 0, 0, 9],
                        src_mac: [0; 6],
                        ether_type: 0x0800,
                        vlan_tag: 0x0123,
                    },
                    mask: EthFilter {
                        dst_mac: [0xff; 6],
                        src_mac: [0; 6],
                        ether_type: 0xffff,
                        vlan_tag: 0x0fff,
                    },
                },
                FlowSpec::Ipv4 {
                    val: Ipv4Filter {
                        dst_ip: [10, 0, 0, 2],
                        proto: 17,
                        ..Default::default()
                    },
                    mask: Ipv4Filter {
                        dst_ip: [0xff; 4],
                        proto: 0xff,
                        ..Default::default()
                    },
                },
                FlowSpec::Udp {
                    val: L4Filter {
                        dst_port: 4791,
                        src_port: 0,
                    },
                    mask: L4Filter {
                        dst_port: 0xffff,
                        src_port: 0,
                    },
                },
                FlowSpec::Tag(0x42),
            ],
        };
        assert_eq!(got, want);
        // libibverbs' IPv4 spec without the `_EXT` fields (8-byte filters): zero-extended.
        let short = [
            &ip.as_bytes()[..8],
            &ip.as_bytes()[8..16],
            &ip.as_bytes()[20..28],
        ]
        .concat();
        let mut short = short;
        short[4] = 24;
        let c = ib_uverbs_create_flow {
            flow_attr: ib_uverbs_flow_attr {
                size: 24,
                num_of_specs: 1,
                flags: 0,
                ..c.flow_attr
            },
            ..c
        };
        let got = rule(&c, &short).unwrap();
        let FlowSpec::Ipv4 { val, mask } = got.specs[0] else {
            panic!("{got:?}")
        };
        assert_eq!(
            (val.dst_ip, val.proto, mask.dst_ip),
            ([10, 0, 0, 2], 0, [0xff; 4])
        );
    }
}
