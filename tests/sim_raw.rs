//! Raw Ethernet end to end on the model: two NICs exchange frames both ways through the
//! switch (exact bytes), steering hits and misses, checksum offload, VLAN insertion, TSO
//! segments, no receive buffer, the Ethernet segment's bytes on a device that needs an
//! inline header, and the typed refusals.

mod common;

use common::raw::*;
use common::{assert_empty, poll_n, side_on, Drive};
use mlx5_direct::backend::sim::hw::MinInline;
use mlx5_direct::backend::sim::{EthConfig, Fabric, Sim};
use mlx5_direct::prm::{L3Type, L4Type};
use mlx5_direct::{
    Checksum, Context, Data, Error, EthRefusal, EthWr, FlowRule, PostError, QpConfig, Transport,
    VlanInsert, WcOpcode,
};

/// Ethernet + IPv4 + UDP headers.
const HDR: usize = 14 + 20 + 8;

fn progress(s: &common::Side) {
    Sim::progress(&s.ctx);
}

/// The body `tests/verbs_hw.rs` runs on a NIC.
#[test]
fn a_sniffer_sees_a_sent_frame_with_its_checksums() {
    let fabric = Fabric::new();
    let rig = (fabric.clone(), eth_nic(EthConfig::default()));
    common::bodies::a_sniffer_sees_a_sent_frame_with_its_checksums(&rig);
}

#[test]
fn a_raw_qp_takes_a_rate_limit() {
    let rig = (Fabric::new(), eth_nic(EthConfig::default()));
    common::bodies::a_raw_qp_takes_a_rate_limit(&rig);
}

#[test]
fn frames_cross_the_switch_both_ways_byte_for_byte() {
    let fabric = Fabric::new();
    let (mut a, mut b) = raw_pair(&fabric);
    let (mac_a, mac_b) = (mac(&a), mac(&b));
    assert_ne!(mac_a, mac_b);
    let _to_a = a.qp.create_flow(&FlowRule::dst_mac(mac_a)).unwrap();
    let _to_b = b.qp.create_flow(&FlowRule::dst_mac(mac_b)).unwrap();
    post_recv(&mut a, 10, 0x4000);
    post_recv(&mut b, 20, 0x4000);

    let ab = udp_frame(mac_b, mac_a, None, 1000, 2000, &[0x5a; 100], true);
    send_frame(&mut a, &ab, 14, |_| {});
    let c = poll_n(&mut b, 1)[0];
    assert!(c.status.is_ok(), "{c:?}");
    assert_eq!(
        (c.wr_id, c.opcode, c.byte_len),
        (20, WcOpcode::Recv, ab.len() as u32)
    );
    assert_eq!(c.qpn, b.qp.qpn());
    assert_eq!(bytes(&b, 0x4000, ab.len()), ab);
    let eth = c.eth().expect("an Ethernet receive");
    assert!(eth.ip_csum_ok());
    assert_eq!((eth.hdr.l3(), eth.hdr.l4()), (L3Type::Ipv4, L4Type::Udp));
    assert_eq!((eth.vlan, eth.flow_tag, eth.rss_hash), (None, 0, 0));

    // Back the other way; the switch learned both MACs: nothing flooded.
    let ba = udp_frame(mac_a, mac_b, None, 2000, 1000, b"pong", true);
    send_frame(&mut b, &ba, 0, |_| {});
    let c = poll_n(&mut a, 1)[0];
    // A 46-byte frame leaves padded to the 60-byte minimum.
    assert_eq!(ba.len(), 46);
    assert_eq!((c.wr_id, c.byte_len), (10, 60));
    let mut padded = ba.clone();
    padded.resize(60, 0);
    assert_eq!(bytes(&a, 0x4000, 60), padded);
    assert_eq!(eth_stats(&a).tx_frames, 1);
    assert_eq!(eth_stats(&b).rx_frames, 1);
    assert_eq!(eth_stats(&b).tx_flooded, 0);
    assert_empty(&mut a);
    assert_empty(&mut b);
}

#[test]
fn steering_hits_carry_the_tag_and_misses_are_counted() {
    let fabric = Fabric::new();
    let (mut a, mut b) = raw_pair(&fabric);
    let rule = FlowRule::dst_mac(mac(&b))
        .udp(None, Some(319))
        .tag(0x00ab_cdef);
    let flow = b.qp.create_flow(&rule).unwrap();
    post_recv(&mut b, 1, 0);
    post_recv(&mut b, 2, 0x800);

    let miss = udp_frame(mac(&b), mac(&a), None, 5, 320, &[1; 32], true);
    send_frame(&mut a, &miss, 0, |_| {});
    progress(&b);
    assert_empty(&mut b);
    assert_eq!(eth_stats(&b).rx_steer_missed, 1);

    let hit = udp_frame(mac(&b), mac(&a), None, 5, 319, &[2; 32], true);
    send_frame(&mut a, &hit, 0, |_| {});
    let c = poll_n(&mut b, 1)[0];
    assert_eq!(c.wr_id, 1);
    assert_eq!(c.eth().unwrap().flow_tag, 0x00ab_cdef);
    assert_eq!(bytes(&b, 0, hit.len()), hit);

    // The rule gone, the same frame misses.
    drop(flow);
    send_frame(&mut a, &hit, 0, |_| {});
    progress(&b);
    assert_empty(&mut b);
    assert_eq!(eth_stats(&b).rx_steer_missed, 2);
    assert_eq!(eth_stats(&b).rx_delivered, 1);
}

#[test]
fn the_catch_all_takes_what_no_rule_took() {
    let fabric = Fabric::new();
    let (mut a, mut b) = raw_pair(&fabric);
    let _all = b.qp.create_flow(&FlowRule::all_default()).unwrap();
    post_recv(&mut b, 1, 0);
    let f = udp_frame(mac(&b), mac(&a), None, 1, 2, &[3; 20], true);
    send_frame(&mut a, &f, 0, |_| {});
    let c = poll_n(&mut b, 1)[0];
    assert_eq!(bytes(&b, 0, f.len()), f);
    assert_eq!(c.eth().unwrap().flow_tag, 0);
    assert_eq!(eth_stats(&b).rx_steer_missed, 0);
}

#[test]
fn checksums_are_offloaded_and_bad_ones_reported() {
    let fabric = Fabric::new();
    let (mut a, mut b) = raw_pair(&fabric);
    let _f = b.qp.create_flow(&FlowRule::dst_mac(mac(&b))).unwrap();
    post_recv(&mut b, 1, 0);
    post_recv(&mut b, 2, 0x800);

    // Sent with both checksums 0 and the offload asked for: they arrive right.
    let zero = udp_frame(mac(&b), mac(&a), None, 7, 8, &[9; 50], false);
    send_frame(&mut a, &zero, HDR, |wr| wr.checksum = Checksum::IP);
    let c = poll_n(&mut b, 1)[0];
    let mut right = zero.clone();
    fix_checksums(&mut right, 14);
    assert_ne!(right, zero);
    assert_eq!(bytes(&b, 0, right.len()), right);
    let eth = c.eth().unwrap();
    assert!(eth.ip_csum_ok(), "{eth:?}");

    // Sent wrong without the offload: delivered as sent, the OK bits clear.
    let mut wrong = right.clone();
    wrong[14 + 10] ^= 0xff;
    send_frame(&mut a, &wrong, 0, |_| {});
    let c = poll_n(&mut b, 1)[0];
    assert_eq!(bytes(&b, 0x800, wrong.len()), wrong);
    assert!(!c.eth().unwrap().ip_csum_ok());
    assert_eq!(eth_stats(&b).rx_csum_bad, 1);
}

#[test]
fn a_vlan_tag_is_inserted_and_reported() {
    let fabric = Fabric::new();
    let (mut a, mut b) = raw_pair(&fabric);
    let _f =
        b.qp.create_flow(&FlowRule::dst_mac(mac(&b)).vlan(0x064))
            .unwrap();
    post_recv(&mut b, 1, 0);
    let untagged = udp_frame(mac(&b), mac(&a), None, 7, 8, &[4; 30], true);
    send_frame(&mut a, &untagged, 0, |wr| {
        wr.vlan = Some(VlanInsert {
            tci: 0x2064,
            svlan: false,
        })
    });
    let c = poll_n(&mut b, 1)[0];
    let tagged = udp_frame(mac(&b), mac(&a), Some(0x2064), 7, 8, &[4; 30], true);
    assert_eq!(c.byte_len, tagged.len() as u32);
    assert_eq!(bytes(&b, 0, tagged.len()), tagged);
    let eth = c.eth().unwrap();
    assert_eq!(eth.vlan, Some(0x2064));
    assert!(eth.hdr.vlan());
}

#[test]
fn tso_cuts_the_payload_into_mss_segments() {
    let fabric = Fabric::new();
    let (mut a, mut b) = raw_pair(&fabric);
    let _f = b.qp.create_flow(&FlowRule::dst_mac(mac(&b))).unwrap();
    for i in 0..3 {
        post_recv(&mut b, i, i as usize * 0x800);
    }
    let payload: Vec<u8> = (0..250u32).map(|i| i as u8).collect();
    let whole = udp_frame(mac(&b), mac(&a), None, 7, 8, &payload, false);
    send_frame(&mut a, &whole, HDR, |wr| {
        wr.mss = 100;
        wr.checksum = Checksum::IP;
    });
    let cs = poll_n(&mut b, 3);
    for (i, seg) in payload.chunks(100).enumerate() {
        assert_eq!(cs[i].wr_id, i as u64);
        let mut want = udp_frame(mac(&b), mac(&a), None, 7, 8, seg, false);
        // Each segment's IPv4 identification is the template's plus its index.
        want[14 + 5] = i as u8;
        fix_checksums(&mut want, 14);
        assert_eq!(cs[i].byte_len, want.len() as u32);
        assert_eq!(bytes(&b, i * 0x800, want.len()), want, "segment {i}");
        assert!(cs[i].eth().unwrap().ip_csum_ok());
    }
    assert_eq!(eth_stats(&a).tso_segments, 3);
    assert_eq!(eth_stats(&a).tx_frames, 3);
}

#[test]
fn a_frame_without_a_receive_buffer_is_counted_and_dropped() {
    let fabric = Fabric::new();
    let (mut a, mut b) = raw_pair(&fabric);
    let _f = b.qp.create_flow(&FlowRule::dst_mac(mac(&b))).unwrap();
    let first = udp_frame(mac(&b), mac(&a), None, 1, 2, b"first", true);
    send_frame(&mut a, &first, 0, |_| {});
    progress(&b);
    assert_empty(&mut b);
    assert_eq!(eth_stats(&b).rx_out_of_buffer, 1);
    post_recv(&mut b, 5, 0);
    let second = udp_frame(mac(&b), mac(&a), None, 1, 2, b"second", true);
    send_frame(&mut a, &second, 0, |_| {});
    let c = poll_n(&mut b, 1)[0];
    assert_eq!(c.wr_id, 5);
    assert_eq!(bytes(&b, 0, second.len()), second);
}

/// On a device that needs rdma-core's 18-byte inline header (ConnectX-4), the WQE is the
/// control segment, a 32-byte Ethernet segment holding the header, and a data segment:
/// 4 DS, as `_mlx5_post_send` writes it; a shorter header is refused.
#[test]
fn an_eighteen_byte_inline_header_rides_in_the_ethernet_segment() {
    let fabric = Fabric::new();
    let l2 = eth_nic(EthConfig {
        min_inline: MinInline::L2,
        ..EthConfig::default()
    });
    let mut a = raw_side_on(&fabric, l2.clone());
    let mut b = raw_side_on(&fabric, l2);
    assert_eq!(a.ctx.eth_caps().unwrap().min_inline, 18);
    let _f = b.qp.create_flow(&FlowRule::dst_mac(mac(&b))).unwrap();
    post_recv(&mut b, 1, 0);
    let f = udp_frame(mac(&b), mac(&a), None, 1, 2, &[6; 64], true);
    let refused = EthWr::new(1, &f[..14], Data::Inline(&f[14..]));
    assert_eq!(
        a.qp.sq().post_eth(&refused),
        Err(PostError::Ethernet(EthRefusal::HeaderTooShort {
            len: 14,
            min: 18
        }))
    );
    let pi = a.qp.sq().producer_count();
    send_frame(&mut a, &f, 18, |wr| wr.checksum = Checksum::L4);
    let wqe = a.qp.sq().wqe_bytes(pi, 64);
    // Control: opcode SEND (0x0a), WQE index, QPN and DS 4, CE "always" (0x08).
    let mut want = vec![0u8; 64];
    want[0..4].copy_from_slice(&(u32::from(pi as u16) << 8 | 0x0a).to_be_bytes());
    want[4..8].copy_from_slice(&(a.qp.qpn() << 8 | 4).to_be_bytes());
    want[11] = 0x08;
    // Ethernet segment: cs_flags 0x80 at 4, inline_hdr_sz 18 at 12, the header from 14.
    want[16 + 4] = 0x80;
    want[16 + 12..16 + 14].copy_from_slice(&18u16.to_be_bytes());
    want[16 + 14..16 + 32].copy_from_slice(&f[..18]);
    // The rest of the frame gathered from the region at 0.
    want[48..52].copy_from_slice(&((f.len() - 18) as u32).to_be_bytes());
    want[52..56].copy_from_slice(&a.mr.lkey().to_be_bytes());
    want[56..64].copy_from_slice(&a.mr.addr().to_be_bytes());
    assert_eq!(wqe, want);
    poll_n(&mut b, 1);
    assert_eq!(bytes(&b, 0, f.len()), f);
    // No VLAN insertion where an inline header is needed.
    let mut vlan = EthWr::new(2, &[], Data::Inline(&f));
    vlan.vlan = Some(VlanInsert {
        tci: 1,
        svlan: false,
    });
    assert_eq!(
        a.qp.sq().post_eth(&vlan),
        Err(PostError::Ethernet(EthRefusal::VlanWithInlineHeader))
    );
}

#[test]
fn raw_queues_and_the_others_refuse_each_others_posts() {
    let fabric = Fabric::new();
    let (mut a, b) = raw_pair(&fabric);
    let f = [0u8; 60];
    let rc = mlx5_direct::SendWr {
        wr_id: 1,
        op: mlx5_direct::SendOp::Send,
        data: Data::Inline(&f),
        flags: mlx5_direct::SendFlags::SIGNALED,
    };
    assert_eq!(
        a.qp.sq().post(rc.wr_id, rc.op, rc.data, rc.flags),
        Err(PostError::WrongTransport {
            transport: Transport::Raw
        })
    );
    let mut tso = EthWr::new(1, &f[..10], Data::Inline(&f[10..]));
    tso.mss = 8;
    assert_eq!(
        a.qp.sq().post_eth(&tso),
        Err(PostError::Ethernet(EthRefusal::TsoHeaderTooShort {
            len: 10
        }))
    );
    assert_eq!(
        a.qp.sq().post_eth(&EthWr::new(1, &[], Data::Inline(&[]))),
        Err(PostError::Ethernet(EthRefusal::EmptyFrame))
    );
    // A QP joining the CQ of a raw QP's receives, and a raw QP on a CQ with another QP,
    // are refused: raw receive CQEs carry the flow tag where the QPN would be.
    let err = b.pd.create_qp(&b.cq, &b.cq, &raw_config()).unwrap_err();
    assert!(matches!(err, Error::InvalidArgument(_)), "{err:?}");
    // An RC side's queue refuses post_eth.
    let ctx = Context::new(Sim::on_fabric(&fabric, eth_nic(EthConfig::default())));
    let mut rc_side = side_on(ctx, &QpConfig::default(), 16, 64);
    assert_eq!(
        rc_side
            .qp
            .sq()
            .post_eth(&EthWr::new(1, &f, Data::Inline(&[]))),
        Err(PostError::WrongTransport {
            transport: Transport::Rc
        })
    );
    let cq2 = rc_side.ctx.create_cq(16, 64).unwrap();
    let err = rc_side
        .pd
        .create_qp(&cq2, &rc_side.cq, &raw_config())
        .unwrap_err();
    assert!(matches!(err, Error::InvalidArgument(_)), "{err:?}");
}
