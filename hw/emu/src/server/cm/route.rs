//! What the CM knows of the fabric's NICs, and routes: the path record an IB subnet
//! administrator answers (the kernel's `cma_query_ib_route`), the one `cma_resolve_iboe_route`
//! builds on RoCE, the one the passive side builds from a REQ (`cm.c`
//! `cm_format_paths_from_req`), and how each is handed to the program (`ib_sa_pack_path`,
//! `ib_copy_path_rec_to_user`) and turned into a QP's address vector
//! (`ib_init_ah_attr_from_path`).

use crate::abi::ucma::{ib_user_path_rec, ibv_path_record};
use crate::abi::uverbs::ib_uverbs_ah_attr;
use mlx5_hw::{GidType, LinkLayer, Nic};

/// `IB_SA_EQ`: a path record selector meaning "exactly".
const SA_EQ: u8 = 2;
/// `IB_RATE_100_GBPS` (`enum ib_rate`, `IBV_RATE_100_GBPS`): a 4X EDR link, the rate the
/// subnet administrator reports for a path between two of the fabric's ports.
pub(super) const RATE_100_GBPS: u8 = 16;
/// The packet lifetime the subnet administrator reports on InfiniBand: OpenSM's default
/// (`OSM_DEFAULT_SUBNET_TIMEOUT` / `packet_life_time`, 0x12 = 18, about one second), the
/// same as the port's `subnet_timeout`.
pub(super) const IB_PACKET_LIFETIME: u8 = 18;
/// `CMA_IBOE_PACKET_LIFETIME` (cma.c): the packet lifetime of a RoCE route.
pub(super) const IBOE_PACKET_LIFETIME: u8 = 16;
/// The hop limit of an IPv4 route (`ip4_dst_hoplimit`: `net.ipv4.ip_default_ttl`, 64).
pub(super) const IPV4_HOP_LIMIT: u8 = 64;
/// The hop limit `ib_init_ah_attr_from_wc` gives the answer to a RoCE packet (0xff).
pub(super) const RESPONSE_HOP_LIMIT: u8 = 0xff;
/// The one P_Key of every port (the default, full member).
pub(super) const DEFAULT_PKEY: u16 = 0xffff;
/// `local_ca_ack_delay` of the model NICs (what QUERY_DEVICE reports, and the CM's
/// `cm_dev->ack_delay`).
pub(super) const CA_ACK_DELAY: u8 = 16;

/// One of the fabric's NICs as the CM sees it (port 1).
#[derive(Clone, Debug)]
pub(crate) struct NicInfo {
    /// `node_guid` (host order).
    pub(super) node_guid: u64,
    /// The port's LID (0 on RoCE).
    pub(super) lid: u16,
    /// Whether the port is Ethernet.
    pub(super) roce: bool,
    /// The GID table: each GID and whether it is RoCE v2 (else IB or RoCE v1).
    pub(super) gids: Vec<([u8; 16], GidType)>,
    /// The active MTU (`enum ib_mtu`).
    pub(super) mtu: u8,
    /// Its IPv4 address (IPoIB or the Ethernet interface's).
    pub(super) ip: [u8; 4],
}

impl NicInfo {
    /// NIC `index` of the fabric.
    pub(crate) fn of(nic: &Nic, index: usize) -> NicInfo {
        let port = nic.port(1).expect("port 1");
        let gids = (0..port.gid_table_len)
            .filter_map(|g| nic.query_gid(1, g).ok())
            .map(|e| (e.gid, e.gid_type))
            .collect();
        NicInfo {
            node_guid: crate::sysfs::node_guid(nic, index as u32),
            lid: port.lid,
            roce: port.link_layer == LinkLayer::Ethernet,
            gids,
            mtu: crate::server::device::mtu_enum(port.active_mtu),
            ip: super::addr::nic_ip(index),
        }
    }

    /// The index of the GID the CM sources traffic of `ip_gid` from
    /// (`cma_acquire_dev_by_src_ip` via `cma_validate_port`): on InfiniBand the port GID
    /// (the IPoIB address's hardware address holds it), on RoCE the entry of the address as
    /// RoCE v2 (`CMA_PREFERRED_ROCE_GID_TYPE`).
    pub(super) fn sgid_index(&self, ip_gid: &[u8; 16]) -> Option<u8> {
        if !self.roce {
            return Some(0);
        }
        self.gids
            .iter()
            .position(|(g, t)| g == ip_gid && *t == GidType::RoceV2)
            .map(|i| i as u8)
    }

    /// The GID at `index`.
    pub(super) fn gid(&self, index: u8) -> [u8; 16] {
        self.gids
            .get(usize::from(index))
            .map(|g| g.0)
            .unwrap_or_default()
    }

    /// The MAC of the Ethernet port, read back from its link-local GID (the kernel's
    /// `rdma_get_ll_mac`: the modified EUI-64 of the MAC).
    pub(super) fn mac(&self) -> [u8; 6] {
        let g = self
            .gids
            .iter()
            .map(|e| e.0)
            .find(|g| g[..8] == [0xfe, 0x80, 0, 0, 0, 0, 0, 0])
            .unwrap_or_default();
        [g[8] ^ 0x02, g[9], g[10], g[13], g[14], g[15]]
    }
}

/// A path record (`struct sa_path_rec`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Path {
    pub(super) service_id: u64,
    pub(super) dgid: [u8; 16],
    pub(super) sgid: [u8; 16],
    pub(super) dlid: u16,
    pub(super) slid: u16,
    pub(super) flow_label: u32,
    pub(super) hop_limit: u8,
    pub(super) traffic_class: u8,
    pub(super) reversible: bool,
    pub(super) numb_path: u8,
    pub(super) pkey: u16,
    pub(super) sl: u8,
    pub(super) mtu: u8,
    pub(super) rate: u8,
    pub(super) packet_life_time: u8,
    /// On RoCE: whether the route is resolved and the destination MAC
    /// (`struct sa_path_rec_roce`, which shares the record's union with the IB LIDs).
    pub(super) roce: Option<(bool, [u8; 6])>,
}

impl Path {
    /// What the subnet administrator answers for a path from `src` to `dst` (InfiniBand;
    /// `cma_query_ib_route` asks by GIDs, P_Key, service id and QoS class).
    pub(super) fn ib(src: &NicInfo, dst: &NicInfo, service_id: u64) -> Path {
        Path {
            service_id,
            dgid: dst.gid(0),
            sgid: src.gid(0),
            dlid: dst.lid,
            slid: src.lid,
            reversible: true,
            numb_path: 1,
            pkey: DEFAULT_PKEY,
            mtu: src.mtu.min(dst.mtu),
            rate: RATE_100_GBPS,
            packet_life_time: IB_PACKET_LIFETIME,
            ..Path::default()
        }
    }

    /// The route `cma_resolve_iboe_route` builds on RoCE from the addresses' GIDs: hop
    /// limit of the IP route, traffic class and SL from the type of service (the SL of a
    /// netdev without traffic classes is 0), the port's MTU, the current rate, the packet
    /// lifetime (the ACK timeout less one when one was set), and the flow label
    /// `cma_get_roce_udp_flow_label` hashes from the ports.
    pub(super) fn iboe(sgid: [u8; 16], dgid: [u8; 16], dst: &NicInfo, mtu: u8) -> Path {
        Path {
            dgid,
            sgid,
            hop_limit: IPV4_HOP_LIMIT,
            reversible: true,
            pkey: DEFAULT_PKEY,
            mtu,
            packet_life_time: IBOE_PACKET_LIFETIME,
            roce: Some((true, dst.mac())),
            ..Path::default()
        }
    }

    /// `ib_sa_pack_path`: the IBA PathRecord. A RoCE record packs its union as the IB
    /// LIDs and raw-traffic bit: the bytes of `route_resolved` and the MAC
    /// (`sa_path_rec_roce` over `sa_path_rec_ib`).
    pub(super) fn packed(&self) -> ibv_path_record {
        let (dlid, slid, raw) = match self.roce {
            None => (self.dlid, self.slid, 0u32),
            Some((resolved, mac)) => (
                u16::from_be_bytes([u8::from(resolved), mac[0]]),
                u16::from_be_bytes([mac[1], mac[2]]),
                u32::from(mac[3] & 1),
            ),
        };
        ibv_path_record {
            service_id: self.service_id.to_be(),
            dgid: self.dgid,
            sgid: self.sgid,
            dlid: dlid.to_be(),
            slid: slid.to_be(),
            flowlabel_hoplimit: ((raw << 31)
                | ((self.flow_label & 0xf_ffff) << 8)
                | u32::from(self.hop_limit))
            .to_be(),
            tclass: self.traffic_class,
            reversible_numpath: (u8::from(self.reversible) << 7) | (self.numb_path & 0x7f),
            pkey: self.pkey.to_be(),
            qosclass_sl: u16::from(self.sl & 0xf).to_be(),
            mtu: (SA_EQ << 6) | (self.mtu & 0x3f),
            rate: (SA_EQ << 6) | (self.rate & 0x3f),
            packetlifetime: (SA_EQ << 6) | (self.packet_life_time & 0x3f),
            preference: 0,
            reserved: [0; 6],
        }
    }

    /// `ib_copy_path_rec_to_user` (QUERY_ROUTE): the record unpacked; a RoCE record has
    /// no LIDs (`sa_path_get_dlid`).
    pub(super) fn user(&self) -> ib_user_path_rec {
        let ib = self.roce.is_none();
        ib_user_path_rec {
            dgid: self.dgid,
            sgid: self.sgid,
            dlid: if ib { self.dlid.to_be() } else { 0 },
            slid: if ib { self.slid.to_be() } else { 0 },
            raw_traffic: 0,
            flow_label: self.flow_label.to_be(),
            reversible: u32::from(self.reversible),
            mtu: u32::from(self.mtu),
            pkey: self.pkey.to_be(),
            hop_limit: self.hop_limit,
            traffic_class: self.traffic_class,
            numb_path: self.numb_path,
            sl: self.sl,
            mtu_selector: SA_EQ,
            rate_selector: SA_EQ,
            rate: self.rate,
            packet_life_time_selector: SA_EQ,
            packet_life_time: self.packet_life_time,
            preference: 0,
        }
    }

    /// `ib_init_ah_attr_from_path` then `ib_copy_ah_attr_to_user`: the address vector of a
    /// QP sending on this path from GID `sgid_index`; a global route on RoCE and wherever
    /// the path has a hop limit.
    pub(super) fn ah_attr(&self, sgid_index: u8) -> ib_uverbs_ah_attr {
        let mut ah = ib_uverbs_ah_attr {
            dlid: if self.roce.is_none() { self.dlid } else { 0 },
            sl: self.sl,
            src_path_bits: 0,
            static_rate: self.rate,
            port_num: 1,
            ..Default::default()
        };
        if self.roce.is_some() || self.hop_limit > 0 {
            ah.is_global = 1;
            ah.grh.dgid = self.dgid;
            ah.grh.flow_label = self.flow_label;
            ah.grh.sgid_index = sgid_index;
            ah.grh.hop_limit = self.hop_limit;
            ah.grh.traffic_class = self.traffic_class;
        }
        ah
    }
}

/// `cm_ack_timeout` (cm.c): the local ACK timeout exponent for a target ACK delay and a
/// packet lifetime, `4.096 us * 2^t >= ack delay + 2 * lifetime`, rounded as the kernel
/// rounds it.
pub(super) fn ack_timeout(ca_ack_delay: u8, packet_life_time: u8) -> u8 {
    let mut t = i32::from(packet_life_time) + 1;
    let d = i32::from(ca_ack_delay);
    if t >= d {
        t += i32::from(d >= t - 1);
    } else {
        t = d + i32::from(t >= d - 1);
    }
    t.min(31) as u8
}

/// `cm_convert_to_ms`: milliseconds of an IBA time exponent (4.096 us * 2^t, roughly).
pub(super) fn to_ms(iba_time: u8) -> u64 {
    1 << i32::from(iba_time).saturating_sub(8).max(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ack_timeouts_round_as_the_cm_does() {
        // RoCE: lifetime 16, the model's ACK delay 16.
        assert_eq!(ack_timeout(16, 16), 18);
        // InfiniBand: OpenSM's lifetime 18.
        assert_eq!(ack_timeout(16, 18), 19);
        assert_eq!(ack_timeout(20, 10), 20);
        assert_eq!(ack_timeout(20, 18), 21);
        assert_eq!(ack_timeout(0, 31), 31);
        assert_eq!(
            (to_ms(18), to_ms(19), to_ms(20), to_ms(3)),
            (1024, 2048, 4096, 1)
        );
    }

    #[test]
    fn a_path_packs_as_the_iba_path_record() {
        let p = Path {
            service_id: 0x0106_4853,
            dgid: [2; 16],
            sgid: [1; 16],
            dlid: 2,
            slid: 1,
            flow_label: 0x12345,
            hop_limit: 64,
            traffic_class: 0x60,
            reversible: true,
            numb_path: 1,
            pkey: 0xffff,
            sl: 3,
            mtu: 5,
            rate: 16,
            packet_life_time: 18,
            roce: None,
        };
        let r = p.packed();
        let b = crate::abi::IntoBytes::as_bytes(&r);
        assert_eq!(b.len(), 64);
        assert_eq!(&b[..8], &0x0106_4853u64.to_be_bytes());
        assert_eq!(&b[40..44], &[0, 2, 0, 1]);
        assert_eq!(&b[44..48], &[0x01, 0x23, 0x45, 64]);
        assert_eq!(&b[48..52], &[0x60, 0x81, 0xff, 0xff]);
        assert_eq!(&b[52..58], &[0, 3, 0x85, 0x90, 0x92, 0]);
        let roce = Path {
            roce: Some((true, [0x02, 0, 0, 0, 0, 7])),
            ..p
        };
        let b = roce.packed();
        assert_eq!(u16::from_be(b.dlid), 0x0102, "route_resolved, then the MAC");
        assert_eq!(roce.user().dlid, 0, "no LIDs on RoCE");
        let ah = roce.ah_attr(2);
        assert_eq!((ah.is_global, ah.grh.sgid_index, ah.dlid), (1, 2, 0));
        let ah = p.ah_attr(0);
        assert_eq!(
            (ah.is_global, ah.dlid, ah.static_rate),
            (1, 2, 16),
            "hop limit 64: global"
        );
    }
}
