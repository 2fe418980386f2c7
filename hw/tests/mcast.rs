//! UD multicast (docs/model.md, "UD multicast"): attach and detach, delivery to every
//! attached QP of the fabric with the GRH, one packet per port, loopback and its block,
//! RoCE group addresses, and what the stack refuses.

mod common;
use common::ud::{self, QKEY};
use common::*;
use mlx5_hw::{
    Fabric, GidAddr, GidType, HwError, LinkLayer, McastConfig, McastJoin, Nic, NicConfig,
    PcieCounters, QpTransition, RoceGid, Stats,
};
use std::sync::Arc;

/// IBA's multicast QPN.
const MCAST_QPN: u32 = 0xff_ffff;
/// A multicast LID and an MGID of InfiniBand.
const MLID: u16 = 0xc001;
const MGID: [u8; 16] = [0xff, 0x0e, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x12, 0x34];
/// The GRH bit of `flags_rqpn` (`MLX5_GRH_IN_BUFFER`).
const GRH_IN_BUFFER: u32 = 1 << 28;

/// `n` NICs of `cfg` on one fabric.
fn nics(n: usize, cfg: &NicConfig) -> (Arc<Fabric>, Vec<Nic>) {
    let f = Fabric::new();
    let nics = (0..n).map(|_| Nic::new(&f, cfg.clone())).collect();
    (f, nics)
}

/// The IBA GRH a receive's first 40 bytes hold (IBA 8.3.1) for a `len`-byte SEND from
/// `sgid` to `dgid` with hop limit 64: PayLen = BTH 12 + DETH 8 + payload padded to 4 +
/// ICRC 4, NxtHdr 0x1B.
fn grh(sgid: [u8; 16], dgid: [u8; 16], len: usize) -> Vec<u8> {
    let mut g = 0x6000_0000u32.to_be_bytes().to_vec();
    g.extend_from_slice(&((24 + len.next_multiple_of(4)) as u16).to_be_bytes());
    g.extend_from_slice(&[0x1b, 64]);
    g.extend_from_slice(&sgid);
    g.extend_from_slice(&dgid);
    g
}

/// The receive CQE a UD QP of `s` gets for a datagram of `len` bytes from the QP of `src`
/// (its port's LID in `slid`: 0 on RoCE), `flags` in `flags_rqpn` bits 31..24.
fn check_recv(s: &mut Side, (src_qpn, slid): (u32, u16), len: usize, flags: u32) {
    let c = s.poll_recv().expect("a receive CQE");
    assert_eq!(
        (
            c.opcode,
            c.qpn(),
            c.byte_cnt,
            c.flags_rqpn,
            c.slid,
            c.syndrome
        ),
        (
            RESP_SEND,
            s.qp.qpn,
            40 + len as u32,
            flags | src_qpn,
            slid,
            0
        )
    );
    assert!(s.poll_recv().is_none(), "one copy per QP");
}

/// The QPN and port LID of side `s` (LID 0 on RoCE).
fn id(s: &Side) -> (u32, u16) {
    (s.qp.qpn, s.nic.port(1).unwrap().lid)
}

/// Counters of interest, all NICs.
fn mcast_stats(nics: &[Nic]) -> Vec<(u64, u64, u64)> {
    nics.iter()
        .map(|n| {
            let s: Stats = n.stats();
            (s.mcast_packets, s.mcast_loopback, s.mcast_dropped)
        })
        .collect()
}

#[test]
fn a_datagram_reaches_0_1_and_3_attached_qps_across_nics_one_packet_per_port() {
    let (_f, nics) = nics(4, &NicConfig::default());
    let mut a = ud::side(&nics[0]);
    let [mut b1, mut b2, mut c, mut d] = [&nics[1], &nics[1], &nics[2], &nics[3]].map(ud::side);
    for s in [&mut b1, &mut b2, &mut c, &mut d] {
        for k in 0..3 {
            s.recv_at(k * 0x100, 0x100);
        }
    }
    let av = ud::av(&a, MLID, Some(MGID), MCAST_QPN, QKEY);
    let sgid = nics[0].port(1).unwrap().gid;
    let payload = b"market data";
    let len = payload.len();

    // No QP attached: the packet leaves the sender and reaches no port.
    ud::send(&mut a, &av, payload, SIGNALED);
    assert_eq!(a.poll_send().map(|c| c.opcode), Some(REQ));
    assert!([&mut b1, &mut b2, &mut c, &mut d]
        .into_iter()
        .all(|s| s.poll_recv().is_none()));
    assert_eq!(mcast_stats(&nics), [(0, 0, 0); 4]);

    // One: B's port takes one packet.
    nics[1].attach_mcast(b1.qp.qpn, &MGID, MLID).unwrap();
    ud::send(&mut a, &av, payload, SIGNALED);
    check_recv(&mut b1, id(&a), len, GRH_IN_BUFFER);
    assert_eq!(b1.read_data(0, 40), grh(sgid, MGID, len));
    assert_eq!(b1.read_data(40, len), payload);
    assert_eq!(
        mcast_stats(&nics),
        [(0, 0, 0), (1, 0, 0), (0, 0, 0), (0, 0, 0)]
    );

    // Three, two of them on B: B's port still takes one packet, each QP one copy.
    nics[1].attach_mcast(b2.qp.qpn, &MGID, MLID).unwrap();
    nics[2].attach_mcast(c.qp.qpn, &MGID, MLID).unwrap();
    let before: Vec<PcieCounters> = [&b1, &b2, &c]
        .iter()
        .map(|s| s.nic.qp_pcie(s.qp.qpn).unwrap())
        .collect();
    ud::send(&mut a, &av, payload, SIGNALED);
    for s in [&mut b1, &mut b2, &mut c] {
        check_recv(s, id(&a), len, GRH_IN_BUFFER);
    }
    assert!(d.poll_recv().is_none());
    assert_eq!(
        mcast_stats(&nics),
        [(0, 0, 0), (2, 0, 0), (1, 0, 0), (0, 0, 0)]
    );
    assert_eq!(nics[0].stats().packets, 3, "one packet per datagram");
    // At each receiver: the receive WQE (64 bytes) read, the receive record (4 bytes) too
    // where no posted receive was known yet (b2, c: their first datagram; b1 learnt of
    // three at its first), the GRH area and payload written in one MWr, the CQE.
    let len = len as u64;
    for ((s, was), record) in [&b1, &b2, &c].iter().zip(before).zip([0, 1, 1]) {
        let got = s.nic.qp_pcie(s.qp.qpn).unwrap() - was;
        assert_eq!(
            (
                got.dma_reads,
                got.completions,
                got.dma_writes,
                got.mmio_writes
            ),
            (1 + record, 1 + record, 2, 0)
        );
        assert_eq!(
            (got.payload_down, got.payload_up),
            (64 + 4 * record, 40 + len + 64)
        );
        assert_eq!(
            (got.bytes_down, got.bytes_up),
            (
                (20 + 64) + record * (20 + 4),
                24 * (1 + record) + (24 + 40 + len) + (24 + 64)
            )
        );
    }
}

#[test]
fn a_detached_qp_receives_nothing_and_its_port_no_longer_takes_the_group() {
    let (_f, nics) = nics(2, &NicConfig::default());
    let mut a = ud::side(&nics[0]);
    let mut b = ud::side(&nics[1]);
    b.recv_at(0, 0x100);
    b.recv_at(0x100, 0x100);
    let av = ud::av(&a, MLID, Some(MGID), MCAST_QPN, QKEY);
    nics[1].attach_mcast(b.qp.qpn, &MGID, MLID).unwrap();
    ud::send(&mut a, &av, b"one", 0);
    check_recv(&mut b, id(&a), 3, GRH_IN_BUFFER);
    nics[1].detach_mcast(b.qp.qpn, &MGID, MLID).unwrap();
    ud::send(&mut a, &av, b"two", 0);
    assert!(b.poll_recv().is_none());
    assert_eq!(mcast_stats(&nics), [(0, 0, 0), (1, 0, 0)]);
    assert_eq!(
        nics[1].detach_mcast(b.qp.qpn, &MGID, MLID),
        Err(HwError::InvalidParam(
            "the QP is not attached to that group"
        ))
    );
    // With the group gone the QP can be destroyed.
    nics[1].destroy_qp(b.qp.qpn).unwrap();
}

#[test]
fn a_port_that_takes_every_group_drops_and_counts_what_no_qp_took() {
    let every = NicConfig {
        mcast: McastConfig {
            join: McastJoin::Every,
            ..McastConfig::default()
        },
        ..NicConfig::default()
    };
    let f = Fabric::new();
    let nics = [
        Nic::new(&f, NicConfig::default()),
        Nic::new(&f, every.clone()),
        Nic::new(&f, every),
        Nic::new(&f, NicConfig::default()),
    ];
    let mut a = ud::side(&nics[0]);
    let mut b = ud::side(&nics[1]);
    // C has a UD QP but not attached; D takes only its groups.
    let _c = ud::side(&nics[2]);
    b.recv_at(0, 0x100);
    nics[1].attach_mcast(b.qp.qpn, &MGID, MLID).unwrap();
    let av = ud::av(&a, MLID, Some(MGID), MCAST_QPN, QKEY);
    ud::send(&mut a, &av, b"x", 0);
    check_recv(&mut b, id(&a), 1, GRH_IN_BUFFER);
    assert_eq!(
        mcast_stats(&nics),
        [(0, 0, 0), (1, 0, 0), (1, 0, 1), (0, 0, 0)]
    );
}

#[test]
fn the_senders_nic_loops_back_unless_the_qp_or_the_knob_blocks_it() {
    let f = Fabric::new();
    let no_loopback = NicConfig {
        mcast: McastConfig {
            loopback: false,
            ..McastConfig::default()
        },
        ..NicConfig::default()
    };
    let (n0, n1) = (
        Nic::new(&f, NicConfig::default()),
        Nic::new(&f, no_loopback),
    );
    let mut a = ud::side(&n0);
    let mut a2 = ud::side(&n0);
    for s in [&mut a, &mut a2] {
        s.recv_at(0, 0x100);
        s.recv_at(0x100, 0x100);
        n0.attach_mcast(s.qp.qpn, &MGID, MLID).unwrap();
    }
    let av = ud::av(&a, MLID, Some(MGID), MCAST_QPN, QKEY);
    ud::send(&mut a, &av, b"self", 0);
    // The sender's own QP is attached too: it gets its own datagram, as a2 does.
    let from_a = id(&a);
    check_recv(&mut a, from_a, 4, GRH_IN_BUFFER);
    check_recv(&mut a2, from_a, 4, GRH_IN_BUFFER);
    assert_eq!(
        mcast_stats(std::slice::from_ref(&n0)),
        [(0, 1, 0)],
        "no wire: loopback"
    );

    // A QP created with the block (IBV_QP_CREATE_BLOCK_SELF_MCAST_LB) reaches no one here.
    let mut blocked = Side::new(
        &n0,
        Cfg {
            transport: mlx5_hw::Transport::Ud,
            ..Cfg::default()
        },
    );
    n0.block_mcast_loopback(blocked.qp.qpn).unwrap();
    ud::activate(&blocked);
    assert_eq!(
        n0.block_mcast_loopback(blocked.qp.qpn),
        Err(HwError::InvalidTransition),
        "a creation flag: RESET only"
    );
    ud::send(&mut blocked, &av, b"none", 0);
    assert!(a.poll_recv().is_none() && a2.poll_recv().is_none());
    assert_eq!(n0.stats().mcast_loopback, 1);

    // A NIC that never loops back.
    let mut b = ud::side(&n1);
    let mut b2 = ud::side(&n1);
    b2.recv_at(0, 0x100);
    n1.attach_mcast(b2.qp.qpn, &MGID, MLID).unwrap();
    let bav = ud::av(&b, MLID, Some(MGID), MCAST_QPN, QKEY);
    ud::send(&mut b, &bav, b"none", 0);
    assert!(b2.poll_recv().is_none());
    // ... while a's NIC, attached, took it from the wire.
    check_recv(&mut a, id(&b), 4, GRH_IN_BUFFER);
    assert_eq!(mcast_stats(&[n0, n1]), [(1, 1, 0), (0, 0, 0)]);
}

#[test]
fn each_attached_qp_checks_its_own_q_key() {
    let (_f, nics) = nics(3, &NicConfig::default());
    let mut a = ud::side(&nics[0]);
    let mut b = ud::side(&nics[1]);
    let c = Side::new(
        &nics[2],
        Cfg {
            transport: mlx5_hw::Transport::Ud,
            ..Cfg::default()
        },
    );
    for t in [
        QpTransition::InitUd {
            port: 1,
            qkey: QKEY ^ 1,
            pkey_index: 0,
        },
        QpTransition::RtrUd,
    ] {
        nics[2].modify_qp(c.qp.qpn, &t).unwrap();
    }
    let mut c = c;
    for s in [&mut b, &mut c] {
        s.recv_at(0, 0x100);
        s.nic.attach_mcast(s.qp.qpn, &MGID, MLID).unwrap();
    }
    let av = ud::av(&a, MLID, Some(MGID), MCAST_QPN, QKEY);
    ud::send(&mut a, &av, b"q", 0);
    check_recv(&mut b, id(&a), 1, GRH_IN_BUFFER);
    assert!(
        c.poll_recv().is_none(),
        "a receiver in RTR takes it, but not this Q_Key"
    );
    assert_eq!(nics[2].stats().qkey_violations, 1);
    assert_eq!(nics[2].stats().mcast_packets, 1);
}

#[test]
fn a_datagram_only_partly_multicast_is_dropped_at_the_sender() {
    let (_f, nics) = nics(2, &NicConfig::default());
    let mut a = ud::side(&nics[0]);
    let mut b = ud::side(&nics[1]);
    b.recv_at(0, 0x100);
    nics[1].attach_mcast(b.qp.qpn, &MGID, MLID).unwrap();
    for av in [
        // The multicast QPN without a GRH (rxe: "no grh for mcast qpn").
        ud::av(&a, MLID, None, MCAST_QPN, QKEY),
        // A multicast route to a unicast QPN.
        ud::av(&a, MLID, Some(MGID), b.qp.qpn, QKEY),
        // The multicast QPN and group, to a unicast LID.
        ud::av(&a, 2, Some(MGID), MCAST_QPN, QKEY),
    ] {
        ud::send(&mut a, &av, b"no", SIGNALED);
        assert_eq!(
            a.poll_send().map(|c| c.opcode),
            Some(REQ),
            "UD never learns"
        );
    }
    assert!(b.poll_recv().is_none());
    assert_eq!(nics[0].stats().ud_unroutable, 3);
    assert_eq!(mcast_stats(&nics), [(0, 0, 0); 2]);
}

/// RoCE v2 NICs whose GID 0 is IPv4 address 10.0.0.<lid>, GID 1 their link-local address.
fn roce() -> NicConfig {
    NicConfig {
        link_layer: LinkLayer::Ethernet,
        ..NicConfig::default()
    }
}

fn roce_nic(f: &Arc<Fabric>, host: u8) -> Nic {
    let v2 = |addr| RoceGid {
        gid_type: GidType::RoceV2,
        addr,
        vlan: None,
    };
    Nic::new(
        f,
        NicConfig {
            roce_gids: vec![v2(GidAddr::Ipv4([10, 0, 0, host])), v2(GidAddr::LinkLocal)],
            ..roce()
        },
    )
}

#[test]
fn a_roce_group_is_an_ip_multicast_address_with_its_mac() {
    let f = Fabric::new();
    let (n0, n1) = (roce_nic(&f, 1), roce_nic(&f, 2));
    let mut a = ud::side(&n0);
    let mut b = ud::side(&n1);
    b.recv_at(0, 0x100);
    b.recv_at(0x100, 0x100);
    // 239.1.2.3 as its IPv4-mapped GID (rdma_cm's `cma_iboe_set_mgid`); the MLID is ignored.
    let group = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 239, 1, 2, 3];
    n1.attach_mcast(b.qp.qpn, &group, 0).unwrap();
    let av = ud::av(&a, 0, Some(group), MCAST_QPN, QKEY);
    assert_eq!(
        av[20..26],
        [0x01, 0x00, 0x5e, 0x01, 0x02, 0x03],
        "ip_eth_mc_map"
    );
    ud::send(&mut a, &av, b"v4 group", 0);
    // RoCE v2 over IPv4: GRH bit and packet type 0xA (UDP, IPv4 L3); `slid` 0.
    check_recv(&mut b, id(&a), 8, GRH_IN_BUFFER | 0x0a << 24);
    // The IPv4 header in the last 20 bytes of the area, to the group.
    let h = b.read_data(20, 20);
    assert_eq!((h[0], h[9]), (0x45, 17));
    assert_eq!(
        (&h[12..16], &h[16..20]),
        (&[10, 0, 0, 1][..], &[239, 1, 2, 3][..])
    );
    assert_eq!(b.read_data(40, 8), b"v4 group");

    // An IPv6 group from the link-local GID: the MAC is 33:33 and the group's low 32 bits.
    let group6 = [0xff, 0x0e, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4];
    n1.attach_mcast(b.qp.qpn, &group6, 0).unwrap();
    // From GID index 1, the link-local address (RoCE v2 over IPv6).
    let av6 = ud::av_from(&a, 1, 0, Some(group6), MCAST_QPN, QKEY);
    assert_eq!(av6[20..26], [0x33, 0x33, 1, 2, 3, 4], "ipv6_eth_mc_map");
    ud::send(&mut a, &av6, b"v6", 0);
    check_recv(&mut b, id(&a), 2, GRH_IN_BUFFER | 0x09 << 24);
    assert_eq!(
        b.read_data(0x100 + 24, 16),
        group6,
        "the DGID in the IPv6 header"
    );
    assert_eq!(n1.stats().mcast_packets, 2);
}

#[test]
fn attach_refuses_what_the_stack_refuses() {
    let small = NicConfig {
        mcast: McastConfig {
            max_groups: 1,
            max_qps_per_group: 2,
            ..McastConfig::default()
        },
        ..NicConfig::default()
    };
    let f = Fabric::new();
    let nic = Nic::new(&f, small);
    let rc = Side::new(&nic, Cfg::default());
    let [u1, u2, u3] = [(); 3].map(|_| ud::side(&nic));
    let caps = nic.caps();
    assert_eq!(
        (
            caps.max_mcast_grp,
            caps.max_mcast_qp_attach,
            caps.max_total_mcast_qp_attach
        ),
        (1, 2, 2)
    );
    let unicast = nic.port(1).unwrap().gid;
    let bad = |r: Result<(), HwError>| matches!(r, Err(HwError::InvalidParam(_)));
    assert!(bad(nic.attach_mcast(rc.qp.qpn, &MGID, MLID)), "UD only");
    assert!(
        bad(nic.attach_mcast(u1.qp.qpn, &unicast, MLID)),
        "a unicast MGID"
    );
    assert!(
        bad(nic.attach_mcast(u1.qp.qpn, &MGID, 0x1234)),
        "a unicast MLID"
    );
    assert!(
        bad(nic.attach_mcast(u1.qp.qpn, &MGID, 0xffff)),
        "the permissive LID"
    );
    assert_eq!(
        nic.attach_mcast(0x7777, &MGID, MLID),
        Err(HwError::NoSuchObject)
    );
    nic.attach_mcast(u1.qp.qpn, &MGID, MLID).unwrap();
    nic.attach_mcast(u1.qp.qpn, &MGID, MLID).unwrap();
    // The same group under another MLID is a second attachment of the same QP.
    nic.attach_mcast(u1.qp.qpn, &MGID, MLID + 1).unwrap();
    nic.attach_mcast(u2.qp.qpn, &MGID, MLID).unwrap();
    assert_eq!(
        nic.attach_mcast(u3.qp.qpn, &MGID, MLID),
        Err(HwError::OutOfResources),
        "max_mcast_qp_attach"
    );
    let other = [0xff, 0x0e, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 9];
    assert_eq!(
        nic.attach_mcast(u3.qp.qpn, &other, MLID),
        Err(HwError::OutOfResources),
        "max_mcast_grp"
    );
    assert_eq!(nic.destroy_qp(u1.qp.qpn), Err(HwError::Busy));
    nic.detach_mcast(u1.qp.qpn, &MGID, MLID).unwrap();
    assert_eq!(
        nic.destroy_qp(u1.qp.qpn),
        Err(HwError::Busy),
        "still under MLID + 1"
    );
    nic.detach_mcast(u1.qp.qpn, &MGID, MLID + 1).unwrap();
    nic.destroy_qp(u1.qp.qpn).unwrap();

    let no_cap = Nic::new(
        &f,
        NicConfig {
            mcast: McastConfig {
                block_loopback: false,
                ..McastConfig::default()
            },
            ..NicConfig::default()
        },
    );
    let q = Side::new(&no_cap, Cfg::default());
    assert!(matches!(
        no_cap.block_mcast_loopback(q.qp.qpn),
        Err(HwError::NotSupported(_))
    ));
}

#[test]
fn the_connectx5_limits_are_the_default_caps() {
    let f = Fabric::new();
    let caps = Nic::new(&f, NicConfig::default()).caps();
    assert_eq!(
        (
            caps.max_mcast_grp,
            caps.max_mcast_qp_attach,
            caps.max_total_mcast_qp_attach
        ),
        (2_097_152, 240, 503_316_480)
    );
}
