//! UD multicast through the driver on the model (`Qp::attach_mcast`, `detach_mcast`,
//! `AddressHandle::mcast_dest`): the shared body on InfiniBand and RoCE with the model's
//! view (the exact GRH area and IPv4 header, one packet per receiving port, the group's
//! MAC in the AV), the refusals, a full group table, and a QP dropped while attached.

mod common;

use std::cell::Cell;
use std::net::Ipv4Addr;
use std::sync::Arc;

use common::bodies::{self, Multicast};
use common::ud::{ipv4_header, ipv6_header};
use common::{side_on, Rig, Side};
use mlx5_direct::backend::sim::hw::{GidAddr, GidType, LinkLayer, McastConfig, RoceGid};
use mlx5_direct::backend::sim::{Fabric, NicConfig, Sim};
use mlx5_direct::{
    AhAttr, Context, Data, Error, GlobalRoute, McastGroup, McastRefusal, QpConfig, SendFlags,
    SendOp, SendWr, Status, Transport,
};

/// An InfiniBand group: a multicast LID and a site-local MGID.
const IB_GROUP: McastGroup = McastGroup {
    mgid: [0xff, 0x15, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x12, 0x34],
    mlid: 0xc001,
};

fn bytes(s: &Side, off: usize, len: usize) -> Vec<u8> {
    bodies::read(s, off, len)
}

/// `(packets sent, multicast packets its port took, taken by no QP)` of each side's NIC.
fn counts(m: &Multicast<Sim>) -> Vec<(u64, u64, u64)> {
    [&m.a, &m.b1, &m.b2, &m.c]
        .iter()
        .map(|s| {
            let st = s.ctx.backend().nic().stats();
            (st.packets, st.mcast_packets, st.mcast_dropped)
        })
        .collect()
}

#[test]
fn an_ib_datagram_reaches_the_attached_qps_of_two_nics_with_the_grh() {
    let m = bodies::ud_multicast_reaches_attached_qps(&Fabric::new(), IB_GROUP, 0);
    let sgid = m.a.ctx.port(1).unwrap().gid;
    // IBA 8.3.1: IPVer 6, TClass 0, FlowLabel 0, PayLen = BTH 12 + DETH 8 + the payload
    // padded to 4 + ICRC 4, NxtHdr 0x1b, HopLmt 7, SGID, DGID = the MGID.
    let grh = |len: u16| {
        ipv6_header(
            0,
            0,
            24 + len.next_multiple_of(4),
            0x1b,
            7,
            &sgid,
            &IB_GROUP.mgid,
        )
    };
    for s in [&m.b1, &m.b2] {
        assert_eq!(bytes(s, 0, 40), grh(11));
    }
    assert_eq!(bytes(&m.b2, 256, 40), grh(6));
    // Two datagrams, each one packet on the wire; b1's port took the first only (then
    // detached, its port no longer takes the group), b2's both, c's none.
    assert_eq!(counts(&m), [(2, 0, 0), (0, 1, 0), (0, 2, 0), (0, 0, 0)]);
}

/// At the sender a datagram to a group costs on the PCIe link exactly what a unicast
/// datagram with the same GRH costs, however many QPs (here two) receive it.
#[test]
fn a_multicast_send_costs_the_sender_what_a_unicast_send_costs() {
    let mut m = bodies::ud_multicast_reaches_attached_qps(&Fabric::new(), IB_GROUP, 0);
    m.b1.qp.attach_mcast(&IB_GROUP).unwrap();
    let pb = m.b2.ctx.port(1).unwrap();
    let ah = |dlid, dgid| {
        let grh = GlobalRoute {
            dgid,
            hop_limit: 7,
            ..GlobalRoute::default()
        };
        m.a.pd
            .create_ah(&AhAttr {
                port: 1,
                dlid,
                grh: Some(grh),
                ..AhAttr::default()
            })
            .unwrap()
    };
    let (group, unicast) = (ah(IB_GROUP.mlid, IB_GROUP.mgid), ah(pb.lid, pb.gid));
    let nic = m.a.ctx.backend().nic().clone();
    let qpn = m.a.qp.qpn();
    let mut cost = |dest: mlx5_direct::UdDest<'_>| {
        let before = nic.qp_pcie(qpn).unwrap();
        let wr = SendWr {
            wr_id: 1,
            op: SendOp::Send,
            data: Data::Inline(b"market data"),
            flags: SendFlags::SIGNALED,
        };
        m.a.qp.sq().post_ud(wr, &dest).unwrap();
        assert_eq!(common::poll_n(&mut m.a, 1)[0].status, Status::Success);
        nic.qp_pcie(qpn).unwrap() - before
    };
    let to_group = cost(group.mcast_dest(0x1100_2233));
    let to_one = cost(unicast.dest(m.b2.qp.qpn(), 0x1100_2233));
    assert_eq!(to_group, to_one);
    // The 80-byte WQE (control, the 48-byte AV, 11 bytes inline) as two 64-byte BlueFlame
    // writes, no fetch, and the CQE.
    assert_eq!(
        (
            to_group.mmio_writes,
            to_group.dma_reads,
            to_group.dma_writes,
            to_group.payload_down,
            to_group.payload_up
        ),
        (2, 0, 1, 128, 64)
    );
}

/// RoCE v2 NICs whose GID 0 is the IPv4 address 10.0.0.<n> (n from 1, in creation
/// order), GID 1 their link-local address.
struct RoceRig {
    fabric: Arc<Fabric>,
    hosts: Cell<u8>,
    mcast: McastConfig,
}

impl RoceRig {
    fn new() -> RoceRig {
        RoceRig {
            fabric: Fabric::new(),
            hosts: Cell::new(0),
            mcast: McastConfig::default(),
        }
    }
}

impl Rig for RoceRig {
    type B = Sim;
    fn side_sized(&self, config: &QpConfig, cq_entries: u32, cqe_size: usize) -> Side {
        self.hosts.set(self.hosts.get() + 1);
        let v2 = |addr| RoceGid {
            gid_type: GidType::RoceV2,
            addr,
            vlan: None,
        };
        let nic = NicConfig {
            link_layer: LinkLayer::Ethernet,
            roce_gids: vec![
                v2(GidAddr::Ipv4([10, 0, 0, self.hosts.get()])),
                v2(GidAddr::LinkLocal),
            ],
            mcast: self.mcast,
            ..NicConfig::default()
        };
        let ctx = Context::new(Sim::on_fabric(&self.fabric, nic));
        side_on(ctx, config, cq_entries, cqe_size)
    }
}

#[test]
fn a_roce_ipv4_group_is_its_mapped_gid_with_the_groups_mac_and_an_ipv4_header() {
    let group = McastGroup::ipv4(Ipv4Addr::new(239, 1, 2, 3));
    let m = bodies::ud_multicast_reaches_attached_qps(&RoceRig::new(), group, 0);
    // The AV to the group: ip_eth_mc_map's MAC, 01:00:5e and the address's low 23 bits.
    let ah =
        m.a.pd
            .create_ah(&AhAttr {
                port: 1,
                grh: Some(GlobalRoute {
                    dgid: group.mgid,
                    ..GlobalRoute::default()
                }),
                ..AhAttr::default()
            })
            .unwrap();
    assert_eq!(
        ah.av().to_bytes()[20..26],
        [0x01, 0x00, 0x5e, 0x01, 0x02, 0x03]
    );
    // RFC 791 in the area's last 20 bytes: TOS 0, total length = IPv4 20 + UDP 8 + BTH 12
    // + DETH 8 + 12 (11 bytes padded) + ICRC 4 = 64, TTL = the hop limit 7, 10.0.0.1 ->
    // 239.1.2.3.
    let want = ipv4_header(0, 64, 7, [10, 0, 0, 1], [239, 1, 2, 3]);
    for s in [&m.b1, &m.b2] {
        assert_eq!(bytes(s, 20, 20), want);
    }
    assert_eq!(counts(&m), [(2, 0, 0), (0, 1, 0), (0, 2, 0), (0, 0, 0)]);
}

#[test]
fn attach_refuses_bad_input_on_infiniband_and_roce() {
    bodies::mcast_attach_refuses_bad_input(&Fabric::new(), IB_GROUP);
    let group = McastGroup::ipv4(Ipv4Addr::new(239, 1, 2, 3));
    bodies::mcast_attach_refuses_bad_input(&RoceRig::new(), group);
    // RoCE ignores the MLID, any MLID: the kernel's `ib_attach_mcast` checks it on IB only.
    let roce = RoceRig::new().side(&ud_config());
    roce.qp
        .attach_mcast(&McastGroup { mlid: 7, ..group })
        .unwrap();
}

fn ud_config() -> QpConfig {
    QpConfig {
        transport: Transport::Ud,
        ..QpConfig::default()
    }
}

#[test]
fn a_full_group_table_is_refused_until_a_group_is_left() {
    let rig = RoceRig {
        mcast: McastConfig {
            max_groups: 1,
            ..McastConfig::default()
        },
        ..RoceRig::new()
    };
    let s = rig.side(&ud_config());
    let [g1, g2] = [1, 2].map(|n| McastGroup::ipv4(Ipv4Addr::new(239, 0, 0, n)));
    s.qp.attach_mcast(&g1).unwrap();
    assert_eq!(
        s.qp.attach_mcast(&g2),
        Err(Error::Multicast(McastRefusal::TableFull))
    );
    assert_eq!(
        s.qp.mcast_groups(),
        [g1],
        "the refused group is not recorded"
    );
    s.qp.detach_mcast(&g1).unwrap();
    s.qp.attach_mcast(&g2).unwrap();
    // A device without multicast (max_mcast_grp 0): refused before the device is asked.
    let none = RoceRig {
        mcast: McastConfig {
            max_groups: 0,
            ..McastConfig::default()
        },
        ..RoceRig::new()
    };
    let s = none.side(&ud_config());
    assert_eq!(s.ctx.caps().max_mcast_grp, 0);
    assert!(matches!(s.qp.attach_mcast(&g1), Err(Error::Unsupported(_))));
}

/// The model, as the kernel (`uverbs_free_qp`: EBUSY), refuses to destroy an attached QP:
/// dropping one detaches it first, so the QP is gone (and its buffers with it) and its
/// port no longer takes the group.
#[test]
fn dropping_an_attached_qp_detaches_it_and_destroys_it() {
    let fabric = Fabric::new();
    let s = common::side(&fabric, &ud_config());
    let nic = s.ctx.backend().nic().clone();
    let qpn = s.qp.qpn();
    for mlid in [0xc001, 0xc002] {
        s.qp.attach_mcast(&McastGroup { mlid, ..IB_GROUP }).unwrap();
    }
    assert!(nic.qp_pcie(qpn).is_some());
    drop(s);
    assert!(nic.qp_pcie(qpn).is_none(), "QP {qpn:#x} was not destroyed");
}
