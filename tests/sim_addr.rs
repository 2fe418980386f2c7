//! Addressing on the model: the P_Key index at the INIT of UD QPs and DCIs (as RC's), and
//! the sender's service level in the receive CQEs of RC, UC and DC (`flags_rqpn` bits
//! 27..24, which rdma-core's and the kernel's `handle_responder` read as `wc->sl`).

mod common;

use common::{connect_with, poll_n, side, Side};
use mlx5_direct::backend::sim::{Fabric, NicConfig, Sim};
use mlx5_direct::{
    Access, AhAttr, ConnectOptions, Context, Data, Error, QpConfig, QpState, SendFlags, SendOp,
    SendWr, Transport,
};

/// Options with P_Key index `pkey_index` and the rest perftest's defaults.
fn pkey(pkey_index: u16) -> ConnectOptions {
    ConnectOptions {
        pkey_index,
        ..ConnectOptions::default()
    }
}

#[test]
fn ud_and_dci_init_take_the_pkey_index_and_the_device_checks_it() {
    let fabric = Fabric::new();
    let ud = QpConfig {
        transport: Transport::Ud,
        ..QpConfig::default()
    };
    let dci = QpConfig {
        transport: Transport::Dci,
        ..QpConfig::default()
    };
    for config in [ud, dci] {
        let mut s = side(&fabric, &config);
        let activate = |s: &mut Side, options: &ConnectOptions| match config.transport {
            Transport::Ud => s.qp.activate_ud_with(0x1111_1111, options),
            _ => s.qp.activate_dci(options),
        };
        // The model's P_Key table holds one entry: index 1 is beyond it (the kernel's
        // EINVAL), and the QP stays in RESET.
        let refused = activate(&mut s, &pkey(1));
        assert!(
            matches!(&refused, Err(Error::Device { reason, .. }) if reason.contains("pkey_index")),
            "{refused:?}"
        );
        assert_eq!(s.qp.state(), QpState::Reset);
        activate(&mut s, &pkey(0)).unwrap();
        assert_eq!(s.qp.state(), QpState::Rts);
    }
}

/// Sends one SEND of 8 bytes from `a` to `b` and returns the SL of b's receive CQE.
fn sl_of_a_send(a: &mut Side, b: &mut Side) -> u8 {
    b.qp.rq().unwrap().post(1, &[b.mr.sge(0, 64)]).unwrap();
    a.qp.sq()
        .post(
            2,
            SendOp::Send,
            Data::Inline(b"service!"),
            SendFlags::SIGNALED,
        )
        .unwrap();
    assert!(poll_n(a, 1)[0].status.is_ok());
    let r = poll_n(b, 1)[0];
    assert_eq!((r.wr_id, r.byte_len), (1, 8));
    r.sl()
}

#[test]
fn rc_and_uc_receives_carry_the_senders_service_level() {
    for transport in [Transport::Rc, Transport::Uc] {
        let fabric = Fabric::new();
        let config = QpConfig {
            transport,
            ..QpConfig::default()
        };
        let (mut a, mut b) = (side(&fabric, &config), side(&fabric, &config));
        // Each side's RTR sets the SL of its own path: a sends on 11, b on 0.
        let (ea, eb) = (a.qp.endpoint().unwrap(), b.qp.endpoint().unwrap());
        let sl11 = ConnectOptions {
            sl: 11,
            ..ConnectOptions::default()
        };
        a.qp.connect(&eb, &sl11).unwrap();
        b.qp.connect(&ea, &ConnectOptions::default()).unwrap();
        assert_eq!(sl_of_a_send(&mut a, &mut b), 11, "{transport:?}");
        assert_eq!(sl_of_a_send(&mut b, &mut a), 0, "{transport:?}");
    }
    // Refused above 4 bits before anything changes.
    let fabric = Fabric::new();
    let (mut a, mut b) = (
        side(&fabric, &QpConfig::default()),
        side(&fabric, &QpConfig::default()),
    );
    let bad = ConnectOptions {
        sl: 16,
        ..ConnectOptions::default()
    };
    assert!(matches!(
        a.qp.connect(&b.qp.endpoint().unwrap(), &bad),
        Err(Error::InvalidArgument(_))
    ));
    connect_with(&mut a, &mut b, &ConnectOptions::default());
}

#[test]
fn a_dct_receive_carries_the_sl_of_the_dcis_address_vector() {
    let (got, dci_qpn) = dct_receive(NicConfig::default());
    assert_eq!((got.wr_id, got.src_qp(), got.sl()), (9, dci_qpn, 13));
}

/// Over RoCE a DCT receive carries the RoCE packet type where InfiniBand has the SL
/// (`flags_rqpn` bits 27..24; UCX ib_mlx5.inl quotes the PRM: "for responder UD/DC over
/// RoCE sl represents RoCE packet type"): bit 3 for a UDP header, bits 2..0 the L3 header
/// type. RoCE v2 over IPv6 (the default link-local GID) is 0x9, over IPv4 0xA, RoCE v1 0.
#[test]
fn a_dct_receive_over_roce_carries_the_packet_type() {
    use mlx5_direct::backend::sim::hw::{GidAddr, GidType, LinkLayer, RoceGid};
    for (gid_type, addr, packet_type) in [
        (GidType::RoceV2, GidAddr::LinkLocal, 0x9),
        (GidType::RoceV2, GidAddr::Ipv4([10, 0, 0, 9]), 0xa),
        (GidType::RoceV1, GidAddr::LinkLocal, 0),
    ] {
        let nic = NicConfig {
            link_layer: LinkLayer::Ethernet,
            roce_gids: vec![RoceGid {
                gid_type,
                addr,
                vlan: None,
            }],
            ..NicConfig::default()
        };
        let (got, dci_qpn) = dct_receive(nic);
        assert_eq!(
            (got.wr_id, got.src_qp(), got.sl()),
            (9, dci_qpn, packet_type),
            "{gid_type:?}"
        );
    }
}

/// A SEND from a DCI (AV SL 13) to a DCT, both on NICs of `nic` (on RoCE each with its own
/// copy of the GID table, the DCT's address found by the fabric in the first NIC that has
/// it: the target's, created first): the DCT's receive completion and the DCI's QPN.
fn dct_receive(nic: NicConfig) -> (mlx5_direct::Completion, u32) {
    let fabric = Fabric::new();
    let t = Context::new(Sim::on_fabric(&fabric, nic.clone()));
    let pd = t.alloc_pd().unwrap();
    let mut cq = t.create_cq(64, 64).unwrap();
    let mut srq = pd.create_srq(16, 1).unwrap();
    let mut dct = pd.create_dct(&cq, &srq, 7).unwrap();
    dct.activate(1, Access::ALL, &ConnectOptions::default())
        .unwrap();
    let mr = pd.alloc_mr(4096, Access::ALL).unwrap();
    srq.post(9, &[mr.sge(0, 64)]).unwrap();
    let dci = QpConfig {
        transport: Transport::Dci,
        ..QpConfig::default()
    };
    let mut a = common::side_on(Context::new(Sim::on_fabric(&fabric, nic)), &dci, 256, 64);
    a.qp.activate_dci(&ConnectOptions::default()).unwrap();
    let port = t.port(1).unwrap();
    let ah =
        a.pd.create_ah(&AhAttr {
            port: 1,
            dlid: port.lid,
            sl: 13,
            grh: port.roce.then_some(mlx5_direct::GlobalRoute {
                dgid: port.gid,
                hop_limit: 64,
                ..mlx5_direct::GlobalRoute::default()
            }),
            ..AhAttr::default()
        })
        .unwrap();
    let wr = SendWr {
        wr_id: 3,
        op: SendOp::Send,
        data: Data::Inline(b"dc"),
        flags: SendFlags::SIGNALED,
    };
    a.qp.sq()
        .post_dc(wr, &ah.dc_dest(dct.number().unwrap(), 7))
        .unwrap();
    assert!(poll_n(&mut a, 1)[0].status.is_ok());
    let mut got = [mlx5_direct::Completion::default(); 1];
    for _ in 0..1000 {
        if cq.poll(&mut got) == 1 {
            break;
        }
        t.backend().nic().progress();
    }
    (got[0], a.qp.qpn())
}

/// RC and UC between RoCE ports (`NicConfig::link_layer = Ethernet`): the ports have LID 0,
/// so the connection is routed by the GID of the peer's endpoint, and a WRITE lands.
#[test]
fn rc_and_uc_over_roce_connect_by_gid_and_a_write_lands() {
    use common::{connect, Rig};
    use mlx5_direct::backend::sim::hw::LinkLayer;
    let rig = (
        Fabric::new(),
        NicConfig {
            link_layer: LinkLayer::Ethernet,
            ..NicConfig::default()
        },
    );
    for (transport, fill) in [(Transport::Rc, 0x71u8), (Transport::Uc, 0x72)] {
        let config = QpConfig {
            transport,
            ..QpConfig::default()
        };
        let (mut a, mut b) = (rig.side(&config), rig.side(&config));
        let (ea, eb) = (a.qp.endpoint().unwrap(), b.qp.endpoint().unwrap());
        assert_eq!((ea.lid, eb.lid), (0, 0));
        assert_ne!(ea.gid, eb.gid);
        connect(&mut a, &mut b);
        write_lands(&mut a, &mut b, fill, 64);
    }
}

/// `a` WRITEs `len` bytes of `fill` to `b`'s region at 128: the requester completes and
/// the bytes are there.
fn write_lands(a: &mut Side, b: &mut Side, fill: u8, len: usize) {
    a.mr.write(0, &vec![fill; len]);
    let sge = a.mr.sge(0, len as u32);
    a.qp.sq()
        .post_wr(&SendWr {
            wr_id: 9,
            op: SendOp::Write(b.mr.remote(128)),
            data: Data::Sges(&[sge]),
            flags: SendFlags::SIGNALED,
        })
        .unwrap();
    let c = poll_n(a, 1);
    assert_eq!((c[0].wr_id, c[0].status), (9, mlx5_direct::Status::Success));
    let mut got = vec![0u8; len];
    b.mr.read(128, &mut got);
    assert_eq!(got, vec![fill; len]);
}

/// RC and UC over RoCE v2 with IPv4 addresses: each port's GID 0 is its IPv4-mapped
/// address (`::ffff:a.b.c.d`, `NicConfig::roce_gids`), the endpoints carry it, and the
/// connection is routed to the NIC whose GID table holds the peer's.
#[test]
fn rc_and_uc_over_roce_v2_ipv4_connect_by_the_mapped_address() {
    use common::{connect, side_on};
    use mlx5_direct::backend::sim::hw::{GidAddr, GidType, LinkLayer, RoceGid};
    let fabric = Fabric::new();
    let on = |v4: [u8; 4], config: &QpConfig| {
        let nic = NicConfig {
            link_layer: LinkLayer::Ethernet,
            roce_gids: vec![RoceGid {
                gid_type: GidType::RoceV2,
                addr: GidAddr::Ipv4(v4),
                vlan: None,
            }],
            ..NicConfig::default()
        };
        side_on(Context::new(Sim::on_fabric(&fabric, nic)), config, 256, 64)
    };
    // Every NIC stays on the fabric: each pass takes addresses of its own.
    for (transport, fill) in [(Transport::Rc, 0x81u8), (Transport::Uc, 0x82)] {
        let config = QpConfig {
            transport,
            ..QpConfig::default()
        };
        let (mut a, mut b) = (on([10, 1, fill, 1], &config), on([10, 1, fill, 2], &config));
        let eb = b.qp.endpoint().unwrap();
        assert_eq!(
            (eb.lid, eb.gid),
            (
                0,
                [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 1, fill, 2]
            )
        );
        connect(&mut a, &mut b);
        write_lands(&mut a, &mut b, fill, 64);
    }
}

/// A RoCE port's active MTU follows its netdev (`NicConfig::netdev_mtu`, the kernel's
/// `iboe_get_mtu`: the netdev MTU less 96 bytes of GRH, UDP, BTH, extension and ICRC
/// headers, rounded down to an IB MTU): 1024 under the Ethernet default of 1500, 4096 under
/// 9000 and on InfiniBand. A connection asked for path MTU 4096 takes the port's (perftest's
/// `set_mtu`), so a 4096-byte WRITE is four packets under 1500 and one under 9000; a UD
/// datagram above the port's MTU is refused before it is written.
#[test]
fn a_roce_ports_mtu_follows_its_netdev() {
    use common::{connect, side_on};
    use mlx5_direct::backend::sim::hw::LinkLayer;
    use mlx5_direct::{AhAttr as Ah, GlobalRoute, PostError};
    let nic = |netdev_mtu| NicConfig {
        link_layer: LinkLayer::Ethernet,
        netdev_mtu,
        ..NicConfig::default()
    };
    for (config, mtu) in [
        (nic(1500), 1024),
        (nic(9000), 4096),
        (nic(1500 + 96 + 1024), 2048),
        (NicConfig::default(), 4096),
    ] {
        assert_eq!(config.active_mtu(), mtu);
        let fabric = Fabric::new();
        let ctx = || Context::new(Sim::on_fabric(&fabric, config.clone()));
        let (mut a, mut b) = (
            side_on(ctx(), &QpConfig::default(), 256, 64),
            side_on(ctx(), &QpConfig::default(), 256, 64),
        );
        assert_eq!(a.ctx.port(1).unwrap().active_mtu, mtu);
        connect(&mut a, &mut b);
        let before = a.ctx.backend().nic().stats().packets;
        write_lands(&mut a, &mut b, 0x5a, 4096);
        let packets = a.ctx.backend().nic().stats().packets - before;
        assert_eq!(
            packets,
            u64::from(4096 / mtu),
            "netdev MTU {}",
            config.netdev_mtu
        );
        // A UD datagram of one byte more than the port's MTU.
        let ud = QpConfig {
            transport: Transport::Ud,
            ..QpConfig::default()
        };
        let mut u = side_on(ctx(), &ud, 256, 64);
        u.qp.activate_ud(1, 0x1111_1111).unwrap();
        let gid = u.qp.endpoint().unwrap().gid;
        let grh = (config.link_layer == LinkLayer::Ethernet).then_some(GlobalRoute {
            dgid: gid,
            ..GlobalRoute::default()
        });
        let ah = u.pd.create_ah(&Ah {
            port: 1,
            dlid: u.qp.endpoint().unwrap().lid,
            grh,
            ..Ah::default()
        });
        let dest = ah.unwrap();
        let over = u.mr.sge(0, mtu + 1);
        let wr = SendWr {
            wr_id: 2,
            op: SendOp::Send,
            data: Data::Sges(&[over]),
            flags: SendFlags::SIGNALED,
        };
        let to_self = dest.dest(u.qp.qpn(), 0x1111_1111);
        assert_eq!(
            u.qp.sq().post_ud(wr, &to_self),
            Err(PostError::OverMtu {
                len: u64::from(mtu) + 1,
                mtu
            })
        );
    }
}
