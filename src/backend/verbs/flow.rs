//! Raw Ethernet through libibverbs: the device's Ethernet capabilities, and steering rules
//! (`ibv_create_flow`: a `struct ibv_flow_attr` followed by its `struct ibv_flow_spec_*`,
//! values in network byte order as verbs.h has them) and their handle.

use core::ptr::NonNull;
use std::sync::Arc;

use crate::backend::ffi::{
    ibv_flow, ibv_flow_attr, ibv_flow_attr_type, ibv_flow_eth_filter, ibv_flow_ipv4_ext_filter,
    ibv_flow_ipv6_filter, ibv_flow_spec_action_drop, ibv_flow_spec_action_tag, ibv_flow_spec_eth,
    ibv_flow_spec_ipv4_ext, ibv_flow_spec_ipv6, ibv_flow_spec_tcp_udp, ibv_flow_spec_type,
    ibv_flow_tcp_udp_filter, ibv_qp,
};
use crate::error::Error;
use crate::eth::{
    EthCaps, EthFilter, FlowKind, FlowRule, FlowSpec, Ipv4Filter, Ipv6Filter, L4Filter,
};
use crate::prm::ETH_L2_INLINE_HEADER_SIZE;

use super::{failed, DeviceCtx, Verbs};

/// PCI device ids of ConnectX-4 and ConnectX-4 Lx (physical functions and VFs), which need
/// the 18-byte inline header (DPDK `mlx5.rst`, `txq_inline_min`).
const NEEDS_L2_INLINE: [u32; 4] = [0x1013, 0x1014, 0x1015, 0x1016];

impl Verbs {
    /// The Ethernet capabilities of `port`: the netdev's MAC and MTU (sysfs: the port's
    /// `gid_attrs/ndevs/0` under the device's directory, then that netdev's `class/net`
    /// entry beside `class/infiniband`), TSO and eMPW and striding from the device queries,
    /// and the inline header by the part: rdma-core keeps the kernel's `eth_min_inline` in
    /// its private context, so the driver applies DPDK's device rule (18 bytes on
    /// ConnectX-4 and 4 Lx, none later), which holds unless the eswitch's inline mode was
    /// raised.
    pub(super) fn eth_caps_of(&self, port: u8) -> Result<EthCaps, Error> {
        let no_netdev = || Error::Unsupported("raw Ethernet on a port without a netdev");
        let sys =
            |path: std::path::PathBuf| std::fs::read_to_string(path).map(|s| s.trim().to_string());
        let dev = super::port::sysfs_dir(self.dev.ctx);
        let ndev =
            sys(dev.join(format!("ports/{port}/gid_attrs/ndevs/0"))).map_err(|_| no_netdev())?;
        // `<root>/class/infiniband/<device>` -> `<root>/class/net/<netdev>`.
        let class = dev
            .parent()
            .and_then(|d| d.parent())
            .ok_or_else(no_netdev)?;
        let net = class.join("net").join(ndev);
        let address = sys(net.join("address")).map_err(|_| no_netdev())?;
        let mtu: usize = sys(net.join("mtu"))
            .ok()
            .and_then(|m| m.parse().ok())
            .ok_or_else(no_netdev)?;
        let mut mac = [0u8; 6];
        for (byte, hex) in mac.iter_mut().zip(address.split(':')) {
            *byte = u8::from_str_radix(hex, 16).map_err(|_| no_netdev())?;
        }
        let min_inline = if NEEDS_L2_INLINE.contains(&self.info.vendor_part_id) {
            ETH_L2_INLINE_HEADER_SIZE
        } else {
            0
        };
        Ok(EthCaps {
            mac,
            min_inline,
            enhanced_mpw: self.info.enhanced_mpw,
            striding_rq: self.info.striding_rq,
            max_tso: self.info.max_tso,
            // The netdev MTU plus the Ethernet header and one VLAN tag.
            max_frame: mtu + 18,
        })
    }
}

/// `IBV_FLOW_ATTR_FLAGS_DONT_TRAP`.
const DONT_TRAP: u32 = 1 << 1;

/// A steering rule; destroyed (`ibv_destroy_flow`) when dropped.
#[derive(Debug)]
pub(super) struct VerbsFlow {
    flow: NonNull<ibv_flow>,
    _dev: Arc<DeviceCtx>,
}

// SAFETY: an `ibv_flow` is a handle libibverbs may use from any thread.
unsafe impl Send for VerbsFlow {}
// SAFETY: as above; nothing is called through a shared reference.
unsafe impl Sync for VerbsFlow {}

impl Drop for VerbsFlow {
    fn drop(&mut self) {
        // SAFETY: a flow this handle created, destroyed once.
        unsafe { super::ext::destroy_flow(self.flow.as_ptr()) };
    }
}

/// Creates `rule` on `port` to `qp` (a raw packet or RSS QP of `dev`).
pub(super) fn create_flow(
    dev: &Arc<DeviceCtx>,
    qp: NonNull<ibv_qp>,
    port: u8,
    rule: &FlowRule,
) -> Result<VerbsFlow, Error> {
    let mut buf = flow_attr(rule, port);
    // SAFETY: a live QP; `buf` holds the attribute and its specs, 8-byte aligned, for the
    // call (libibverbs copies it into the command).
    let flow = unsafe { super::ext::create_flow(qp.as_ptr(), buf.as_mut_ptr().cast()) };
    let flow = NonNull::new(flow).ok_or_else(|| failed("create flow", -1))?;
    Ok(VerbsFlow {
        flow,
        _dev: dev.clone(),
    })
}

/// The bytes of `value`, a plain C struct.
fn bytes_of<T: Copy>(value: &T) -> &[u8] {
    // SAFETY: `T` is one of the plain `#[repr(C)]` structs of verbs.h (integers and byte
    // arrays), `size_of::<T>()` readable bytes; padding is zeroed by the callers' zeroed
    // starting values.
    unsafe { core::slice::from_raw_parts((value as *const T).cast(), size_of::<T>()) }
}

/// A zeroed plain C struct of verbs.h.
fn zeroed<T: Copy>() -> T {
    // SAFETY: the structs this is used for are integers and byte arrays: all zeroes is a
    // valid value.
    unsafe { core::mem::zeroed() }
}

/// `struct ibv_flow_attr` for `rule` on `port`, followed by its specs, in a buffer of
/// 8-byte words.
pub(super) fn flow_attr(rule: &FlowRule, port: u8) -> Vec<u64> {
    let specs: Vec<Vec<u8>> = rule.specs.iter().map(spec).collect();
    let mut attr: ibv_flow_attr = zeroed();
    attr.type_ = match rule.kind {
        FlowKind::Normal => ibv_flow_attr_type::IBV_FLOW_ATTR_NORMAL,
        FlowKind::AllDefault => ibv_flow_attr_type::IBV_FLOW_ATTR_ALL_DEFAULT,
        FlowKind::McDefault => ibv_flow_attr_type::IBV_FLOW_ATTR_MC_DEFAULT,
        FlowKind::Sniffer => ibv_flow_attr_type::IBV_FLOW_ATTR_SNIFFER,
    };
    attr.size = (size_of::<ibv_flow_attr>() + specs.iter().map(Vec::len).sum::<usize>()) as u16;
    attr.priority = rule.priority;
    attr.num_of_specs = specs.len() as u8;
    attr.port = port;
    attr.flags = if rule.dont_trap { DONT_TRAP } else { 0 };
    let mut bytes = bytes_of(&attr).to_vec();
    for s in specs {
        bytes.extend_from_slice(&s);
    }
    let mut words = vec![0u64; bytes.len().div_ceil(8)];
    for (w, chunk) in words.iter_mut().zip(bytes.chunks(8)) {
        let mut b = [0u8; 8];
        b[..chunk.len()].copy_from_slice(chunk);
        *w = u64::from_ne_bytes(b);
    }
    words
}

fn eth(f: &EthFilter) -> ibv_flow_eth_filter {
    ibv_flow_eth_filter {
        dst_mac: f.dst_mac,
        src_mac: f.src_mac,
        ether_type: f.ether_type.to_be(),
        vlan_tag: f.vlan_tag.to_be(),
    }
}

fn ipv4(f: &Ipv4Filter) -> ibv_flow_ipv4_ext_filter {
    ibv_flow_ipv4_ext_filter {
        src_ip: u32::from_ne_bytes(f.src_ip),
        dst_ip: u32::from_ne_bytes(f.dst_ip),
        proto: f.proto,
        tos: f.tos,
        ttl: 0,
        flags: 0,
    }
}

fn ipv6(f: &Ipv6Filter) -> ibv_flow_ipv6_filter {
    ibv_flow_ipv6_filter {
        src_ip: f.src_ip,
        dst_ip: f.dst_ip,
        flow_label: f.flow_label.to_be(),
        next_hdr: f.next_hdr,
        traffic_class: f.traffic_class,
        hop_limit: 0,
    }
}

fn l4(f: &L4Filter) -> ibv_flow_tcp_udp_filter {
    ibv_flow_tcp_udp_filter {
        dst_port: f.dst_port.to_be(),
        src_port: f.src_port.to_be(),
    }
}

/// One `struct ibv_flow_spec_*`'s bytes.
fn spec(s: &FlowSpec) -> Vec<u8> {
    use ibv_flow_spec_type as t;
    macro_rules! filled {
        ($ty:ty, $kind:expr, $($field:ident: $value:expr),*) => {{
            let mut v: $ty = zeroed();
            v.type_ = $kind;
            v.size = size_of::<$ty>() as u16;
            $(v.$field = $value;)*
            bytes_of(&v).to_vec()
        }};
    }
    match s {
        FlowSpec::Eth { val, mask } => {
            filled!(ibv_flow_spec_eth, t::IBV_FLOW_SPEC_ETH, val: eth(val), mask: eth(mask))
        }
        FlowSpec::Ipv4 { val, mask } => filled!(
            ibv_flow_spec_ipv4_ext,
            t::IBV_FLOW_SPEC_IPV4_EXT,
            val: ipv4(val),
            mask: ipv4(mask)
        ),
        FlowSpec::Ipv6 { val, mask } => {
            filled!(ibv_flow_spec_ipv6, t::IBV_FLOW_SPEC_IPV6, val: ipv6(val), mask: ipv6(mask))
        }
        FlowSpec::Tcp { val, mask } => {
            filled!(ibv_flow_spec_tcp_udp, t::IBV_FLOW_SPEC_TCP, val: l4(val), mask: l4(mask))
        }
        FlowSpec::Udp { val, mask } => {
            filled!(ibv_flow_spec_tcp_udp, t::IBV_FLOW_SPEC_UDP, val: l4(val), mask: l4(mask))
        }
        FlowSpec::Tag(tag) => filled!(
            ibv_flow_spec_action_tag,
            t::IBV_FLOW_SPEC_ACTION_TAG,
            tag_id: *tag
        ),
        FlowSpec::Drop => filled!(ibv_flow_spec_action_drop, t::IBV_FLOW_SPEC_ACTION_DROP,),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The attribute and specs as verbs.h lays them out (sizes from rdma-sys's bindgen of
    /// the installed headers): a 20-byte attribute, then each spec with its type and size.
    #[test]
    fn a_rule_is_the_attribute_and_its_specs_back_to_back() {
        let rule = FlowRule::dst_mac([2, 0, 0, 0, 0, 7])
            .udp(None, Some(0x1234))
            .tag(9)
            .priority(3)
            .dont_trap();
        let words = flow_attr(&rule, 1);
        let b: Vec<u8> = words.iter().flat_map(|w| w.to_ne_bytes()).collect();
        let at = size_of::<ibv_flow_attr>();
        assert_eq!(at, 20);
        let u16_at = |i: usize| u16::from_ne_bytes([b[i], b[i + 1]]);
        let u32_at = |i: usize| u32::from_ne_bytes(b[i..i + 4].try_into().unwrap());
        // type NORMAL (0), size, priority 3, 3 specs, port 1, DONT_TRAP.
        assert_eq!(u32_at(4), 0);
        assert_eq!(usize::from(u16_at(8)), at + 40 + 16 + 12);
        assert_eq!((u16_at(10), b[12], b[13], u32_at(16)), (3, 3, 1, 2));
        // ETH spec (0x20), 40 bytes: the filters from byte 6 (2-byte aligned), the
        // destination MAC and its mask.
        assert_eq!((u32_at(at), u16_at(at + 4)), (0x20, 40));
        assert_eq!(b[at + 6..at + 12], [2, 0, 0, 0, 0, 7]);
        assert_eq!(b[at + 22..at + 28], [0xff; 6]);
        // UDP spec (0x41), 16 bytes: the destination port in network order.
        let udp = at + 40;
        assert_eq!((u32_at(udp), u16_at(udp + 4)), (0x41, 16));
        assert_eq!(b[udp + 6..udp + 8], [0x12, 0x34]);
        assert_eq!(b[udp + 10..udp + 12], [0xff, 0xff]);
        // ACTION_TAG (0x1000), 12 bytes.
        let tag = udp + 16;
        assert_eq!(
            (u32_at(tag), u16_at(tag + 4), u32_at(tag + 8)),
            (0x1000, 12, 9)
        );
    }
}
