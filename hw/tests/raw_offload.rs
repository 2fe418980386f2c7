//! The send offloads of a raw packet QP and what the receiving port checks: IPv4 and
//! TCP/UDP checksums computed by the sending NIC (`cs_flags`) and verified by the receiving
//! one (the CQE's `hds_ip_ext`); VLAN insertion and VLAN rules; the device's minimum inline
//! header; TSO segments with their rewritten headers; and the drops: oversize frames at
//! either port, short frames padded, no receive posted, a QP not ready, a receive too
//! small.

mod common;

use common::data_seg;
use common::eth::*;
use mlx5_hw::{Fabric, FlowSpec, MinInline, Nic, NicConfig, QpState};

fn pair(a_cfg: NicConfig, b_cfg: NicConfig) -> (std::sync::Arc<Fabric>, Raw, Raw) {
    let f = Fabric::new();
    let (na, nb) = (Nic::new(&f, a_cfg), Nic::new(&f, b_cfg));
    let (mut a, mut b) = (Raw::new(&na), Raw::new(&nb));
    a.flow(&dmac_rule(a.mac(), 0));
    b.flow(&dmac_rule(b.mac(), 0));
    a.recv_frames(16);
    b.recv_frames(16);
    (f, a, b)
}

fn zero_checksums(f: &mut [u8]) {
    let at = l4_csum_at(f);
    f[IP_CSUM..IP_CSUM + 2].fill(0);
    f[at..at + 2].fill(0);
}

/// The sending NIC fills the checksums it is asked for; the receiving one finds them
/// right. rdma-core's `get_csum_ok` reports `IBV_WC_IP_CSUM_OK` when `hds_ip_ext` has L3_OK
/// and L4_OK and the L3 type (bits 3..2 of byte 29) is IPv4.
#[test]
fn checksums_are_offloaded_and_verified() {
    let (_f, mut a, mut b) = pair(eth_config(), eth_config());
    for (tcp, v6) in [(false, false), (true, false), (false, true), (true, true)] {
        let good = frame(&Pkt {
            tcp,
            v6,
            ..Pkt::udp(b.mac(), a.mac(), b"checksum me, please")
        });
        let mut sent = good.clone();
        if v6 {
            let at = 14 + 40 + if tcp { 16 } else { 6 };
            sent[at..at + 2].fill(0);
        } else {
            zero_checksums(&mut sent);
        }
        a.write_data(TX, &sent);
        let (addr, key) = (a.data(TX), a.key);
        let e = eseg(CS_L3 | CS_L4, 0, &[]);
        a.send(
            SEND,
            0,
            SIGNALED,
            &[e, data_seg(sent.len() as u32, key, addr)],
        );
        let got = b.drain_recv();
        assert_eq!(got.len(), 1, "tcp {tcp} v6 {v6}");
        assert_eq!(b.received(&got[0]), good, "tcp {tcp} v6 {v6}");
        let l3 = if v6 { 1 << 2 } else { 2 << 2 };
        let l4 = if tcp { 4 << 4 } else { 2 << 4 };
        assert_eq!((got[0].hds_ip_ext(), got[0].l4_l3_hdr_type()), (7, l3 | l4));
    }
    // Without the flags the zeros go out, and the receiver says so.
    let mut bad = frame(&Pkt::udp(b.mac(), a.mac(), b"wrong sums"));
    bad[IP_CSUM] ^= 0xff;
    a.send_frame(&bad);
    let mut worse = frame(&Pkt {
        tcp: true,
        ..Pkt::udp(b.mac(), a.mac(), b"wrong sums")
    });
    let at = l4_csum_at(&worse);
    worse[at] ^= 0xff;
    a.send_frame(&worse);
    let got = b.drain_recv();
    // A wrong IPv4 header checksum clears L3_OK only (the L4 checksum does not cover it);
    // a wrong TCP checksum clears L4_OK.
    assert_eq!(
        got.iter().map(|c| c.hds_ip_ext()).collect::<Vec<_>>(),
        [5, 3]
    );
    assert_eq!(b.received(&got[0])[..bad.len()], bad[..]);
    assert_eq!(b.nic.stats().eth.rx_csum_bad, 2);
}

/// A UDP checksum that comes out 0 goes out as 0xFFFF (RFC 768); over IPv4 a zero
/// checksum received means none and is OK.
#[test]
fn udp_zero_checksums() {
    let (_f, mut a, mut b) = pair(eth_config(), eth_config());
    let mut f = frame(&Pkt::udp(b.mac(), a.mac(), b"none"));
    let at = l4_csum_at(&f);
    f[at..at + 2].fill(0);
    a.send_frame(&f);
    let got = b.drain_recv();
    assert_eq!(got[0].hds_ip_ext(), 7);
    assert_eq!(b.nic.stats().eth.rx_csum_bad, 0);
}

/// The VLAN command inserts an 802.1Q tag (or, with the S-VLAN bit, 802.1ad) after the
/// MACs; the receive CQE reports it (`l4_l3_hdr_type` bit 0, `vlan_info`); a VLAN rule
/// takes only frames with that tag.
#[test]
fn vlan_insertion_and_vlan_rules() {
    let f = Fabric::new();
    let (na, nb) = (Nic::new(&f, eth_config()), Nic::new(&f, eth_config()));
    let mut a = Raw::new(&na);
    let mut b = Raw::new(&nb);
    b.recv_frames(8);
    let mut rule = dmac_rule(b.mac(), 0);
    if let FlowSpec::Eth { val, mask } = &mut rule.specs[0] {
        val.vlan_tag = 5;
        mask.vlan_tag = 0x0fff;
    }
    b.flow(&rule);
    let plain = frame(&Pkt::udp(b.mac(), a.mac(), b"tag me with VLAN five"));
    a.write_data(TX, &plain);
    let (addr, key) = (a.data(TX), a.key);
    let len = plain.len() as u32;
    // PCP 1, VID 5.
    a.send(
        SEND,
        0,
        SIGNALED,
        &[eseg_vlan(0, 0x2005, false), data_seg(len, key, addr)],
    );
    let got = b.drain_recv();
    assert_eq!(got.len(), 1);
    let mut tagged = plain[..12].to_vec();
    tagged.extend_from_slice(&[0x81, 0x00, 0x20, 0x05]);
    tagged.extend_from_slice(&plain[12..]);
    assert_eq!(b.received(&got[0]), tagged);
    assert_eq!(
        (
            got[0].l4_l3_hdr_type(),
            got[0].vlan_info(),
            got[0].hds_ip_ext()
        ),
        (0x29, 0x2005, 7)
    );
    // Another VID, no tag, and an S-VLAN tag do not match the C-VLAN rule.
    a.send(
        SEND,
        0,
        SIGNALED,
        &[eseg_vlan(0, 6, false), data_seg(len, key, addr)],
    );
    a.send(
        SEND,
        0,
        SIGNALED,
        &[eseg(0, 0, &[]), data_seg(len, key, addr)],
    );
    a.send(
        SEND,
        0,
        SIGNALED,
        &[eseg_vlan(0, 5, true), data_seg(len, key, addr)],
    );
    assert!(b.drain_recv().is_empty());
    assert_eq!(nb.stats().eth.rx_steer_missed, 3);
    // A sniffer sees the 802.1ad tag as it went.
    let sniffer = Raw::new(&nb);
    let mut sniffer = sniffer;
    sniffer.recv_frames(1);
    sniffer.flow(&kind_rule(mlx5_hw::FlowKind::Sniffer));
    a.send(
        SEND,
        0,
        SIGNALED,
        &[eseg_vlan(0, 5, true), data_seg(len, key, addr)],
    );
    let got = sniffer.drain_recv();
    assert_eq!(sniffer.received(&got[0])[12..16], [0x88, 0xa8, 0x00, 0x05]);
    assert_eq!(a.drain_send().len(), 5);
}

/// ConnectX-4's minimum inline header (rdma-core's 18 bytes): a SEND that inlines the
/// first 18 bytes of the frame goes out whole; one that inlines less, or asks for a VLAN
/// insertion (whose command takes the inline header's bytes), fails with LOCAL_QP_OP_ERR
/// and the QP's send queue goes to error (SQE) while it still receives.
#[test]
fn the_minimum_inline_header() {
    let cx4 = NicConfig {
        eth: mlx5_hw::EthConfig {
            min_inline: MinInline::L2,
            ..Default::default()
        },
        ..eth_config()
    };
    let (_f, mut a, mut b) = pair(cx4, eth_config());
    assert_eq!(a.nic.eth_caps().min_inline, 18);
    let f = frame(&Pkt::udp(
        b.mac(),
        a.mac(),
        b"the first eighteen bytes ride inline",
    ));
    a.write_data(TX, &f[18..]);
    let (addr, key) = (a.data(TX), a.key);
    let rest = data_seg((f.len() - 18) as u32, key, addr);
    // 16 + 18 bytes: a 32-byte Ethernet segment, the data segment at WQE offset 48.
    let e = eseg(0, 0, &f[..18]);
    assert_eq!(e.len(), 32);
    a.send(SEND, 0, SIGNALED, &[e, rest.clone()]);
    let got = b.drain_recv();
    assert_eq!(b.received(&got[0]), f);
    a.send(SEND, 0, SIGNALED, &[eseg(0, 0, &[]), rest]);
    let sent = a.drain_send();
    assert_eq!(sent.len(), 2);
    assert_eq!((sent[1].opcode(), sent[1].syndrome()), (13, 0x02));
    assert_eq!(a.nic.qp_state(a.qp.qpn), Ok(QpState::Sqe));
    b.send_frame(&frame(&Pkt::udp(a.mac(), b.mac(), b"still heard")));
    assert_eq!(a.drain_recv().len(), 1);
}

/// TSO: the header inline, the payload cut into MSS-sized segments; each segment's IPv4
/// total length and identification, TCP sequence number, flags and checksums rewritten.
#[test]
fn tso_cuts_the_payload_into_segments() {
    let (_f, mut a, mut b) = pair(eth_config(), eth_config());
    let payload: Vec<u8> = (0..250u32).map(|i| i as u8).collect();
    let template = Pkt {
        tcp: true,
        seq: 0xffff_ff00,
        // CWR, PSH, ACK, FIN.
        tcp_flags: 0x80 | 0x08 | 0x10 | 0x01,
        ..Pkt::udp(b.mac(), a.mac(), &payload)
    };
    let whole = frame(&template);
    let hdr = &whole[..54];
    a.write_data(TX, &payload);
    let (addr, key) = (a.data(TX), a.key);
    let e = eseg(CS_L3 | CS_L4, 100, hdr);
    // 16 + align(52, 16): the data segment at WQE offset 16 + 80.
    assert_eq!(e.len(), 80);
    a.send(TSO, 0, SIGNALED, &[e, data_seg(250, key, addr)]);
    let got = b.drain_recv();
    assert_eq!(got.len(), 3);
    for (i, c) in got.iter().enumerate() {
        let chunk = &payload[i * 100..((i + 1) * 100).min(250)];
        let flags = match i {
            0 => 0x80 | 0x10,
            1 => 0x10,
            _ => 0x08 | 0x10 | 0x01,
        };
        let mut want = frame(&Pkt {
            seq: template.seq.wrapping_add(i as u32 * 100),
            tcp_flags: flags,
            payload: chunk,
            ..template
        });
        // The identification goes up by one per segment.
        want[14 + 4..14 + 6].copy_from_slice(&(0x1234u16 + i as u16).to_be_bytes());
        want[IP_CSUM..IP_CSUM + 2].fill(0);
        let ip = csum(&want[14..34]);
        want[IP_CSUM..IP_CSUM + 2].copy_from_slice(&ip.to_be_bytes());
        assert_eq!(b.received(c), want, "segment {i}");
        assert_eq!(c.hds_ip_ext(), 7);
    }
    let sent = a.drain_send();
    assert_eq!(
        (sent.len(), sent[0].sop_drop_qpn() >> 24),
        (1, u32::from(TSO))
    );
    let s = a.nic.stats().eth;
    assert_eq!((s.tso_segments, s.tx_frames), (3, 3));
}

/// TSO's malformed forms: MSS 0, headers not inline, a payload above `max_tso`.
#[test]
fn tso_refusals() {
    let small_tso = NicConfig {
        eth: mlx5_hw::EthConfig {
            max_tso: 200,
            ..Default::default()
        },
        ..eth_config()
    };
    let (_f, mut a, b) = pair(small_tso, eth_config());
    let payload = [7u8; 250];
    let whole = frame(&Pkt {
        tcp: true,
        ..Pkt::udp(b.mac(), a.mac(), &payload)
    });
    a.write_data(TX, &payload);
    let (addr, key) = (a.data(TX), a.key);
    let cases: [(u16, usize, u32, u8); 3] = [
        (0, 54, 100, 0x02),
        (100, 14, 100, 0x02),
        (100, 54, 201, 0x01),
    ];
    for (mss, inline, len, syndrome) in cases {
        let a_qpn = a.qp.qpn;
        a.nic
            .modify_qp(a_qpn, &mlx5_hw::QpTransition::Reset)
            .unwrap();
        a.sq_pi = 0;
        a.up();
        let data = if inline == 14 {
            // The IP and TCP headers and 100 payload bytes behind a bare Ethernet header.
            a.write_data(TX, &whole[14..154]);
            data_seg(140, key, addr)
        } else {
            a.write_data(TX, &payload);
            data_seg(len, key, addr)
        };
        a.send(TSO, 0, SIGNALED, &[eseg(0, mss, &whole[..inline]), data]);
        let sent = a.drain_send();
        assert_eq!(
            (sent[0].opcode(), sent[0].syndrome()),
            (13, syndrome),
            "mss {mss}"
        );
    }
    assert_eq!(b.nic.stats().eth.rx_frames, 0);
}

/// What each port drops: a frame longer than the receiver's MTU allows
/// (`rx_oversize_pkts_phy`), longer than the sender's (before the wire), no receive posted
/// (`rx_out_of_buffer`), a QP not ready; a short frame is padded to 60 bytes; a receive too
/// small completes with LOCAL_LENGTH_ERR and the QP goes to ERR.
#[test]
fn the_ports_drop_and_pad() {
    let small = NicConfig {
        netdev_mtu: 1000,
        ..eth_config()
    };
    let (_f, mut a, mut b) = pair(eth_config(), small);
    assert_eq!(b.nic.eth_caps().max_frame, 1018);
    let big = frame(&Pkt::udp(b.mac(), a.mac(), &[1u8; 1100]));
    a.send_frame(&big);
    assert_eq!(b.nic.stats().eth.rx_oversize, 1);
    let huge = frame(&Pkt::udp(b.mac(), a.mac(), &[1u8; 1600]));
    a.send_frame(&huge);
    let sent = a.drain_send();
    assert_eq!(sent.iter().map(|c| c.opcode()).collect::<Vec<_>>(), [0, 0]);
    assert_eq!(a.nic.stats().eth.tx_oversize, 1);
    assert!(b.drain_recv().is_empty());
    // 14 + 20 + 8 + 2 bytes, padded with zeros.
    let runt = frame(&Pkt::udp(b.mac(), a.mac(), b"hi"));
    a.send_frame(&runt);
    let got = b.drain_recv();
    let mut padded = runt.clone();
    padded.resize(60, 0);
    assert_eq!((got[0].byte_cnt(), b.received(&got[0])), (60, padded));
    assert_eq!(got[0].hds_ip_ext(), 7);
    // No receive left: 15 more frames take the rest, the 16th finds none.
    for _ in 0..16 {
        a.send_frame(&runt);
    }
    assert_eq!(b.drain_recv().len(), 15);
    assert_eq!(b.nic.stats().eth.rx_out_of_buffer, 1);
    // A receive smaller than the frame.
    b.post_recv(0, 32);
    a.send_frame(&frame(&Pkt::udp(b.mac(), a.mac(), &[9u8; 40])));
    let got = b.drain_recv();
    assert_eq!((got[0].opcode(), got[0].syndrome()), (14, 0x01));
    assert_eq!(b.nic.qp_state(b.qp.qpn), Ok(QpState::Err));
    // In ERR (and in RESET) the QP takes nothing.
    a.send_frame(&runt);
    b.nic
        .modify_qp(b.qp.qpn, &mlx5_hw::QpTransition::Reset)
        .unwrap();
    a.send_frame(&runt);
    assert_eq!(b.nic.stats().eth.rx_not_ready, 2);
}
