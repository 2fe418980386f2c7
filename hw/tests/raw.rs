//! Raw packet QPs on the model (docs/model.md, "Raw Ethernet"): the transitions the kernel
//! gives `IBV_QPT_RAW_PACKET`, frames between NICs through the learning switch in both
//! directions with exact bytes, CQEs and counters, and flow steering (match, no match,
//! the default rules, priorities, DONT_TRAP, drop, tags, the kernel's refusals).

mod common;

use common::eth::*;
use common::{Cfg, Side};
use mlx5_hw::{
    EthFilter, Fabric, FlowKind, FlowSpec, HwError, Ipv4Filter, Ipv6Filter, Nic, NicConfig,
    QpState, QpTransition, Transport,
};

fn three() -> (std::sync::Arc<Fabric>, Nic, Nic, Nic) {
    let f = Fabric::new();
    let a = Nic::new(&f, eth_config());
    let b = Nic::new(&f, eth_config());
    let c = Nic::new(&f, eth_config());
    (f, a, b, c)
}

#[test]
fn a_raw_qp_takes_the_kernels_raw_packet_transitions() {
    let f = Fabric::new();
    let nic = Nic::new(&f, eth_config());
    let r = Raw::created(&nic, true);
    let qpn = r.qp.qpn;
    let rc_init = QpTransition::Init {
        port: 1,
        access: mlx5_hw::Access::NONE,
        pkey_index: 0,
    };
    assert!(matches!(
        nic.modify_qp(qpn, &rc_init),
        Err(HwError::InvalidParam(_))
    ));
    assert_eq!(
        nic.modify_qp(qpn, &QpTransition::RtrRaw),
        Err(HwError::InvalidTransition)
    );
    assert_eq!(
        nic.modify_qp(qpn, &QpTransition::InitRaw { port: 2 }),
        Err(HwError::InvalidParam("port"))
    );
    nic.modify_qp(qpn, &QpTransition::InitRaw { port: 1 })
        .unwrap();
    assert_eq!(nic.qp_state(qpn), Ok(QpState::Init));
    assert_eq!(
        nic.modify_qp(qpn, &QpTransition::RtsRaw),
        Err(HwError::InvalidTransition)
    );
    nic.modify_qp(qpn, &QpTransition::RtrRaw).unwrap();
    nic.modify_qp(qpn, &QpTransition::RtsRaw).unwrap();
    assert_eq!(nic.qp_state(qpn), Ok(QpState::Rts));
    // `modify_raw_packet_qp` knows no SQERR2RTS.
    assert!(matches!(
        nic.modify_qp(qpn, &QpTransition::SqeToRts),
        Err(HwError::InvalidParam(_))
    ));
    nic.modify_qp(qpn, &QpTransition::Err).unwrap();
    assert_eq!(nic.qp_state(qpn), Ok(QpState::Err));
    nic.modify_qp(qpn, &QpTransition::Reset).unwrap();
    assert_eq!(nic.qp_state(qpn), Ok(QpState::Reset));
}

#[test]
fn raw_packet_qps_need_an_ethernet_port_and_no_srq() {
    let f = Fabric::new();
    let ib = Nic::new(&f, NicConfig::default());
    let side = Side::new(&ib, Cfg::default());
    let mut p = mlx5_hw::QpParams {
        transport: Transport::Raw,
        pdn: side.pd,
        send_cqn: side.scq.cqn,
        recv_cqn: side.rcq.cqn,
        sq_buf: side.mem.addr(common::SQ),
        log_sq_wqe_cnt: 6,
        rq_buf: side.mem.addr(common::RQ),
        log_rq_wqe_cnt: 4,
        log_rq_stride: 6,
        dbrec: side.mem.addr(common::DBREC + 64),
        ..Default::default()
    };
    // SAFETY: the rings and record live in `side.mem`, which outlives the calls (which fail).
    let e = unsafe { ib.create_qp(&p) };
    assert_eq!(
        e,
        Err(HwError::NotSupported("raw Ethernet on an InfiniBand port"))
    );
    let eth = Nic::new(&f, eth_config());
    let r = Raw::created(&eth, true);
    p.pdn = r.pd;
    p.send_cqn = r.scq.cqn;
    p.recv_cqn = r.rcq.cqn;
    p.srqn = Some(0x800);
    // SAFETY: as above.
    let e = unsafe { eth.create_qp(&p) };
    assert_eq!(e, Err(HwError::InvalidParam("a raw packet QP has no SRQ")));
    // Rules steer to raw packet QPs with a receive queue only.
    let send_only = Raw::created(&eth, false);
    let rule = dmac_rule(send_only.mac(), 0);
    assert!(matches!(
        eth.create_flow(send_only.qp.qpn, &rule),
        Err(HwError::InvalidParam(_))
    ));
}

/// A frames B (exact bytes, the CQEs on both sides); B answers; the switch floods the
/// first frame to C (which has no rule) and, having learned both MACs, nothing after.
#[test]
fn frames_cross_the_switch_both_ways() {
    let (_f, na, nb, nc) = three();
    let (mut a, mut b) = (Raw::new(&na), Raw::new(&nb));
    let c = Raw::new(&nc);
    a.flow(&dmac_rule(a.mac(), 0));
    b.flow(&dmac_rule(b.mac(), 0));
    a.recv_frames(4);
    b.recv_frames(4);
    let payload: Vec<u8> = (0..40u8).collect();
    let ab = frame(&Pkt::udp(b.mac(), a.mac(), &payload));
    assert_eq!(ab.len(), 82);
    a.send_frame(&ab);
    let sent = a.drain_send();
    assert_eq!(sent.len(), 1);
    assert_eq!(
        (sent[0].opcode(), sent[0].sop_drop_qpn() >> 24),
        (0, u32::from(SEND))
    );
    assert_eq!(sent[0].wqe_counter(), 0);
    let got = b.drain_recv();
    assert_eq!(got.len(), 1);
    let r = got[0];
    assert_eq!((r.opcode(), r.byte_cnt(), r.wqe_counter()), (2, 82, 0));
    // L2, L3 and L4 OK; UDP (2 << 4) over IPv4 (2 << 2); no VLAN; no tag.
    assert_eq!(
        (r.hds_ip_ext(), r.l4_l3_hdr_type(), r.sop_drop_qpn()),
        (7, 0x28, 0)
    );
    assert_eq!(b.received(&r), ab);
    let ba = frame(&Pkt::udp(a.mac(), b.mac(), b"answer"));
    b.send_frame(&ba);
    let got = a.drain_recv();
    assert_eq!(got.len(), 1);
    // 14 + 20 + 8 + 6 = 48 bytes, padded by B's MAC to 60.
    assert_eq!(got[0].byte_cnt(), 60);
    let mut padded = ba.clone();
    padded.resize(60, 0);
    assert_eq!(a.received(&got[0]), padded);
    a.send_frame(&ab);
    assert_eq!(b.drain_recv().len(), 1);
    let (sa, sb, sc) = (na.stats().eth, nb.stats().eth, nc.stats().eth);
    assert_eq!((sa.tx_frames, sa.tx_bytes, sa.tx_flooded), (2, 164, 1));
    assert_eq!((sb.tx_frames, sb.tx_bytes, sb.tx_flooded), (1, 60, 0));
    assert_eq!((sa.rx_frames, sa.rx_delivered), (1, 1));
    assert_eq!((sb.rx_frames, sb.rx_delivered, sb.rx_bytes), (2, 2, 164));
    // C saw the flooded first frame only, and had no rule for it.
    assert_eq!(
        (sc.rx_frames, sc.rx_steer_missed, sc.rx_delivered),
        (1, 1, 0)
    );
    drop(c);
}

fn udp_to(dport: u16, b: &Raw, a: &Raw) -> Vec<u8> {
    frame(&Pkt {
        dport,
        ..Pkt::udp(b.mac(), a.mac(), b"steer me")
    })
}

/// Which of `qps` got a frame each, as (index, CQE), draining every one.
fn arrivals(qps: &mut [&mut Raw]) -> Vec<(usize, EthCqe)> {
    let mut out = Vec::new();
    for (i, q) in qps.iter_mut().enumerate() {
        for c in q.drain_recv() {
            out.push((i, c));
        }
    }
    out
}

/// A sender, and two raw QPs of one receiving NIC with 16 receives each.
fn steering() -> (std::sync::Arc<Fabric>, Raw, Raw, Raw) {
    let f = Fabric::new();
    let na = Nic::new(&f, eth_config());
    let nb = Nic::new(&f, eth_config());
    let a = Raw::new(&na);
    let (mut q1, mut q2) = (Raw::new(&nb), Raw::new(&nb));
    q1.recv_frames(16);
    q2.recv_frames(16);
    (f, a, q1, q2)
}

#[test]
fn steering_matches_misses_and_catches_all() {
    let (_f, mut a, mut q1, mut q2) = steering();
    let nb = q1.nic.clone();
    q1.flow(&udp_rule(1000));
    let catch_all = q2.flow(&kind_rule(FlowKind::AllDefault));
    a.send_frame(&udp_to(1000, &q1, &a));
    a.send_frame(&udp_to(2000, &q1, &a));
    let got = arrivals(&mut [&mut q1, &mut q2]);
    assert_eq!(got.iter().map(|g| g.0).collect::<Vec<_>>(), [0, 1]);
    nb.destroy_flow(catch_all).unwrap();
    a.send_frame(&udp_to(2000, &q1, &a));
    assert!(arrivals(&mut [&mut q1, &mut q2]).is_empty());
    assert_eq!(nb.stats().eth.rx_steer_missed, 1);
    // The multicast default takes group-addressed frames only.
    q2.flow(&kind_rule(FlowKind::McDefault));
    let bcast = frame(&Pkt::udp([0xff; 6], a.mac(), b"to all"));
    a.send_frame(&bcast);
    a.send_frame(&udp_to(2000, &q1, &a));
    let got = arrivals(&mut [&mut q1, &mut q2]);
    assert_eq!(got.len(), 1);
    assert_eq!(q2.received(&got[0].1)[..bcast.len()], bcast[..]);
    assert_eq!(nb.stats().eth.rx_steer_missed, 2);
    // Drop.
    let mut drop_rule = udp_rule(3000);
    drop_rule.specs.push(FlowSpec::Drop);
    q2.flow(&drop_rule);
    a.send_frame(&udp_to(3000, &q1, &a));
    assert!(arrivals(&mut [&mut q1, &mut q2]).is_empty());
    assert_eq!(nb.stats().eth.rx_rule_drops, 1);
}

#[test]
fn priorities_dont_trap_shared_entries_and_tags() {
    let (_f, mut a, mut q1, mut q2) = steering();
    let nb = q1.nic.clone();
    // A DONT_TRAP rule of the same priority sits in the table before the trapping one and
    // lets the frame go on to it.
    q1.flow(&udp_rule(1000));
    let mut peek = udp_rule(1000);
    peek.dont_trap = true;
    q2.flow(&peek);
    a.send_frame(&udp_to(1000, &q1, &a));
    let got = arrivals(&mut [&mut q1, &mut q2]);
    assert_eq!(got.iter().map(|g| g.0).collect::<Vec<_>>(), [0, 1]);
    // Priority 0 before priority 1, whatever the order of creation.
    let mut low = udp_rule(4000);
    low.priority = 1;
    q1.flow(&low);
    let mut high = udp_rule(4000);
    high.specs.push(FlowSpec::Eth {
        val: EthFilter {
            src_mac: a.mac(),
            ..EthFilter::default()
        },
        mask: EthFilter {
            src_mac: [0xff; 6],
            ..EthFilter::default()
        },
    });
    q2.flow(&high);
    a.send_frame(&udp_to(4000, &q1, &a));
    let got = arrivals(&mut [&mut q1, &mut q2]);
    assert_eq!(got.iter().map(|g| g.0).collect::<Vec<_>>(), [1]);
    // The same match in the same table: one entry, both destinations.
    let mut shared = udp_rule(6000);
    shared.priority = 2;
    q1.flow(&shared);
    q2.flow(&shared);
    a.send_frame(&udp_to(6000, &q1, &a));
    assert_eq!(arrivals(&mut [&mut q1, &mut q2]).len(), 2);
    // A tag rides in sop_drop_qpn; the same entry with another tag is EEXIST.
    let mut tagged = udp_rule(7000);
    tagged.specs.push(FlowSpec::Tag(0x12_3456));
    q1.flow(&tagged);
    a.send_frame(&udp_to(7000, &q1, &a));
    let got = arrivals(&mut [&mut q1, &mut q2]);
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].1.sop_drop_qpn(), 0x12_3456);
    let mut other = udp_rule(7000);
    other.specs.push(FlowSpec::Tag(0x65_4321));
    assert!(matches!(
        nb.create_flow(q2.qp.qpn, &other),
        Err(HwError::InvalidParam(_))
    ));
}

#[test]
fn the_kernels_flow_refusals() {
    let f = Fabric::new();
    let nb = Nic::new(&f, eth_config());
    let q = Raw::new(&nb);
    let qpn = q.qp.qpn;
    let mut r = udp_rule(1);
    r.specs.push(FlowSpec::Tag(1 << 24));
    assert!(matches!(
        nb.create_flow(qpn, &r),
        Err(HwError::InvalidParam(_))
    ));
    let mut r = kind_rule(FlowKind::AllDefault);
    r.specs.push(FlowSpec::Tag(1));
    assert!(matches!(
        nb.create_flow(qpn, &r),
        Err(HwError::InvalidParam(_))
    ));
    let mut r = udp_rule(1);
    r.priority = 16;
    assert_eq!(nb.create_flow(qpn, &r), Err(HwError::OutOfResources));
    let ttl = FlowSpec::Ipv4 {
        val: Ipv4Filter::default(),
        mask: Ipv4Filter {
            ttl: 0xff,
            ..Ipv4Filter::default()
        },
    };
    let r = mlx5_hw::FlowAttr {
        port: 1,
        specs: vec![ttl],
        ..Default::default()
    };
    assert!(matches!(
        nb.create_flow(qpn, &r),
        Err(HwError::NotSupported(_))
    ));
    // An EtherType that disagrees with the IP spec, and two IP protocols.
    let v6_type = FlowSpec::Eth {
        val: EthFilter {
            ether_type: 0x86dd,
            ..EthFilter::default()
        },
        mask: EthFilter {
            ether_type: 0xffff,
            ..EthFilter::default()
        },
    };
    let v4 = FlowSpec::Ipv4 {
        val: Ipv4Filter {
            proto: 17,
            ..Ipv4Filter::default()
        },
        mask: Ipv4Filter {
            proto: 0xff,
            ..Ipv4Filter::default()
        },
    };
    for specs in [vec![v6_type, v4], vec![v4, l4_spec(true, 80)]] {
        let r = mlx5_hw::FlowAttr {
            port: 1,
            specs,
            ..Default::default()
        };
        assert!(matches!(
            nb.create_flow(qpn, &r),
            Err(HwError::InvalidParam(_))
        ));
    }
    let mut r = udp_rule(1);
    r.port = 2;
    assert_eq!(nb.create_flow(qpn, &r), Err(HwError::InvalidParam("port")));
    // A QP a rule steers to cannot be destroyed (the flow holds a use count).
    let flow = nb.create_flow(qpn, &udp_rule(9)).unwrap();
    assert_eq!(nb.destroy_qp(qpn), Err(HwError::Busy));
    nb.destroy_flow(flow).unwrap();
    assert_eq!(nb.destroy_flow(flow), Err(HwError::NoSuchObject));
    nb.destroy_qp(qpn).unwrap();
}

/// An IPv6 5-tuple rule (addresses, protocol and ports) takes its flow and nothing else.
#[test]
fn an_ipv6_five_tuple_rule() {
    let f = Fabric::new();
    let na = Nic::new(&f, eth_config());
    let nb = Nic::new(&f, eth_config());
    let mut a = Raw::new(&na);
    let mut b = Raw::new(&nb);
    b.recv_frames(4);
    let v6 = FlowSpec::Ipv6 {
        val: Ipv6Filter {
            src_ip: SRC6,
            dst_ip: DST6,
            ..Ipv6Filter::default()
        },
        mask: Ipv6Filter {
            src_ip: [0xff; 16],
            dst_ip: [0xff; 16],
            ..Ipv6Filter::default()
        },
    };
    let mut ports = l4_spec(true, 443);
    if let FlowSpec::Tcp { val, mask } = &mut ports {
        val.src_port = 4000;
        mask.src_port = 0xffff;
    }
    b.flow(&mlx5_hw::FlowAttr {
        port: 1,
        specs: vec![v6, ports],
        ..Default::default()
    });
    let p = Pkt {
        v6: true,
        tcp: true,
        dport: 443,
        ..Pkt::udp(b.mac(), a.mac(), b"six")
    };
    let hit = frame(&p);
    a.send_frame(&hit);
    a.send_frame(&frame(&Pkt { dport: 444, ..p }));
    a.send_frame(&frame(&Pkt { tcp: false, ..p }));
    let got = b.drain_recv();
    assert_eq!(got.len(), 1);
    assert_eq!(b.received(&got[0]), hit);
    // TCP with ACK and data (4 << 4) over IPv6 (1 << 2), every check OK.
    assert_eq!((got[0].hds_ip_ext(), got[0].l4_l3_hdr_type()), (7, 0x44));
    assert_eq!(nb.stats().eth.rx_steer_missed, 2);
}

/// Rules steer to raw packet QPs only; an RC QP is refused.
#[test]
fn rules_refuse_other_qps() {
    let f = Fabric::new();
    let nic = Nic::new(&f, eth_config());
    let rc = Side::new(&nic, Cfg::default());
    assert!(matches!(
        nic.create_flow(rc.qp.qpn, &udp_rule(1)),
        Err(HwError::InvalidParam(_))
    ));
}
