//! Answering the sender of a UD receive (`ProtectionDomain::create_ah_from_recv`, rdma-core's
//! `ibv_init_ah_from_wc` / `ibv_create_ah_from_wc`) on the model: the address made from the
//! completion and the 40-byte GRH area, on InfiniBand without and with a GRH and on RoCE v1,
//! v2 over IPv6 and v2 over IPv4, and the answer reaching the sender.

mod common;

use std::cell::Cell;

use common::bodies::{ud_answers_the_sender_of_a_receive as exchange, UdAnswer};
use common::{side_on, Rig, Side};
use mlx5_direct::backend::sim::hw::{GidAddr, LinkLayer, RoceGid};
use mlx5_direct::backend::sim::{Fabric, NicConfig, Sim};
use mlx5_direct::{AhAttr, Completion, Context, Error, GidType, GlobalRoute, QpConfig, Status};

/// What the answer's route must be: back to the sender's GID from the receiver's entry
/// `sgid_index` (the one holding the packet's destination), with the hop limit and traffic
/// class sent, and `flow_label` (0 from IPv4, which has none).
fn route_back(x: &UdAnswer, sgid_index: u8, flow_label: u32) -> Option<GlobalRoute> {
    let sent = x.request.grh.expect("a global route");
    Some(GlobalRoute {
        dgid: x.sender_gid,
        flow_label,
        sgid_index,
        hop_limit: sent.hop_limit,
        traffic_class: sent.traffic_class,
    })
}

/// A rig whose first side is on a NIC of `configs[0]`, the next on `configs[1]`.
struct TwoNics {
    fabric: std::sync::Arc<Fabric>,
    configs: [NicConfig; 2],
    made: Cell<usize>,
}

impl Rig for TwoNics {
    type B = Sim;
    fn side_sized(&self, config: &QpConfig, cq_entries: u32, cqe_size: usize) -> Side {
        let nic = self.configs[self.made.replace(self.made.get() + 1) % 2].clone();
        side_on(
            Context::new(Sim::on_fabric(&self.fabric, nic)),
            config,
            cq_entries,
            cqe_size,
        )
    }
}

fn roce(gids: Vec<RoceGid>) -> NicConfig {
    NicConfig {
        link_layer: LinkLayer::Ethernet,
        roce_gids: gids,
        ..NicConfig::default()
    }
}

#[test]
fn infiniband_answers_by_lid_and_sl_without_a_grh() {
    let x = exchange(&Fabric::new(), None);
    assert_eq!(x.request.dlid, 2);
    assert_eq!(
        x.answer,
        AhAttr {
            port: 1,
            dlid: 1,
            sl: 5,
            src_path_bits: 0,
            grh: None,
        }
    );
}

#[test]
fn infiniband_answers_a_grh_with_one_back() {
    let x = exchange(&(Fabric::new(), NicConfig::default()), Some(0));
    assert_eq!((x.answer.dlid, x.answer.sl), (1, 5));
    assert_eq!(x.answer.grh, route_back(&x, 0, 0x5a5a5));
}

/// A netdev's table on each NIC: the link-local address and an IPv4 one (a's 10.0.0.1,
/// b's 10.0.0.2), each as RoCE v1 (even index) and v2 (odd index). A request from each
/// entry is answered from the receiver's entry of the same address and type: v1 names the
/// IBA next header in its GRH, v2 over IPv6 UDP, v2 over IPv4 (index 3) has its IPv4 header
/// in the area's last 20 bytes and no flow label. The sender's SL (5) travels on RoCE only
/// as a VLAN tag's priority: untagged the answer's SL is 0, tagged 5, as the kernel reads it.
#[test]
fn roce_answers_from_the_entry_of_the_packets_type_and_address() {
    let table = |v4| {
        let mut t = RoceGid::both_types(GidAddr::LinkLocal, None).to_vec();
        t.extend(RoceGid::both_types(GidAddr::Ipv4(v4), None));
        t
    };
    for (index, flow_label) in [(0u8, 0x5a5a5), (1, 0x5a5a5), (2, 0x5a5a5), (3, 0)] {
        let rig = TwoNics {
            fabric: Fabric::new(),
            configs: [roce(table([10, 0, 0, 1])), roce(table([10, 0, 0, 2]))],
            made: Cell::new(0),
        };
        let x = exchange(&rig, Some(index));
        assert_eq!((x.answer.dlid, x.answer.sl), (0, 0), "index {index}");
        assert_eq!(
            x.answer.grh,
            route_back(&x, index, flow_label),
            "index {index}"
        );
    }
    let tagged = roce(RoceGid::both_types(GidAddr::LinkLocal, Some(7)).to_vec());
    let x = exchange(&(Fabric::new(), tagged), Some(1));
    assert_eq!(x.received.cvlan(), Some(5 << 13 | 7));
    assert_eq!((x.answer.sl, x.answer.grh), (5, route_back(&x, 1, 0x5a5a5)));
}

/// The model's default RoCE port: one link-local RoCE v2 GID, so the datagram is IPv6.
#[test]
fn roce_v2_over_ipv6_by_default() {
    let x = exchange(&(Fabric::new(), roce(Vec::new())), None);
    assert_eq!(x.answer.grh, route_back(&x, 0, 0x5a5a5));
    assert_eq!(x.grh[0] >> 4, 6, "an IPv6 header");
}

/// What cannot be answered is refused before an address handle exists: a completion that
/// is not a successful receive, a RoCE receive without the GRH flag, an area with no
/// header, and a destination GID the port does not have. The receiver's port is rebuilt on
/// a fabric of its own (the second NIC: the same LID, so the same GID).
#[test]
fn what_cannot_be_answered_is_refused() {
    let x = exchange(&(Fabric::new(), roce(Vec::new())), None);
    let fabric = Fabric::new();
    let nics = [(); 2].map(|_| Context::new(Sim::on_fabric(&fabric, roce(Vec::new()))));
    let b = &nics[1];
    assert_eq!(b.query_gid(1, 0).unwrap().gid_type, GidType::RoceV2);
    assert_eq!(b.ah_attr_from_recv(1, &x.received, &x.grh), Ok(x.answer));
    let refused = |wc: &Completion, grh: &[u8; 40]| {
        matches!(
            b.ah_attr_from_recv(1, wc, grh),
            Err(Error::InvalidArgument(_))
        )
    };
    let mut failed = x.received;
    failed.status = Status::UnknownQp;
    assert!(refused(&failed, &x.grh));
    let mut no_flag = Completion::default();
    (no_flag.opcode, no_flag.status) = (x.received.opcode, Status::Success);
    assert!(refused(&no_flag, &x.grh));
    assert!(refused(&x.received, &[0; 40]));
    let mut elsewhere = x.grh;
    elsewhere[39] ^= 1;
    assert!(refused(&x.received, &elsewhere), "not this port's GID");
}
