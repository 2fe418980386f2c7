//! Enhanced multi-packet send on the model: 1 to 32 frames per WQE, pointer and inline
//! entries, exact bytes at the receiver and the counts, the WQE's bytes as DPDK writes
//! them, and DPDK's limits as typed refusals.

mod common;

use common::poll_n;
use common::raw::*;
use mlx5_direct::backend::sim::hw::MinInline;
use mlx5_direct::backend::sim::{EthConfig, Fabric};
use mlx5_direct::{
    Checksum, EmpwPacket, EmpwWr, EthRefusal, FlowRule, PostError, SendFlags, WcOpcode,
};

/// Frame `i` of a burst: a UDP frame with `16 + i` payload bytes.
fn burst(to: [u8; 6], from: [u8; 6], n: usize) -> Vec<Vec<u8>> {
    (0..n)
        .map(|i| {
            let payload: Vec<u8> = (0..16 + i).map(|j| (i * 7 + j) as u8).collect();
            udp_frame(to, from, None, 100 + i as u16, 9, &payload, true)
        })
        .collect()
}

#[test]
fn one_to_thirty_two_frames_per_wqe_arrive_byte_for_byte() {
    let fabric = Fabric::new();
    let (mut a, mut b) = raw_pair(&fabric);
    let _f = b.qp.create_flow(&FlowRule::dst_mac(mac(&b))).unwrap();
    let mut sent = 0;
    for n in [1, 2, 5, 31, 32] {
        let frames = burst(mac(&b), mac(&a), n);
        // Every eighth packet inline, the others gathered from a's region.
        let mut packets = Vec::new();
        for (i, f) in frames.iter().enumerate() {
            if i % 8 == 0 {
                packets.push(EmpwPacket::Inline(f));
            } else {
                a.mr.write(i * 128, f);
                packets.push(EmpwPacket::Pointer(a.mr.sge(i * 128, f.len() as u32)));
            }
        }
        for i in 0..n {
            post_recv(&mut b, i as u64, i * 0x100);
        }
        let wr = EmpwWr {
            wr_id: n as u64,
            flags: SendFlags::SIGNALED,
            checksum: Checksum::NONE,
            packets: &packets,
        };
        a.qp.sq().post_empw(&wr).unwrap();
        let c = poll_n(&mut a, 1)[0];
        assert!(c.status.is_ok(), "{c:?}");
        assert_eq!((c.wr_id, c.opcode), (n as u64, WcOpcode::Other(0x29)));
        let got = poll_n(&mut b, n);
        for (i, f) in frames.iter().enumerate() {
            // The wire pads the 58-byte first frame to 60.
            let mut wire = f.clone();
            wire.resize(f.len().max(60), 0);
            assert_eq!(got[i].wr_id, i as u64);
            assert_eq!(got[i].byte_len, wire.len() as u32);
            assert_eq!(
                bytes(&b, i * 0x100, wire.len()),
                wire,
                "burst {n}, frame {i}"
            );
        }
        sent += n as u64;
        assert_eq!(eth_stats(&a).empw_packets, sent);
        assert_eq!(eth_stats(&b).rx_delivered, sent);
    }
}

/// The WQE of one inline and one pointer packet: control (opcode 0x29, DS 2 + 4 + 1), the
/// 16-byte Ethernet segment with the shared `cs_flags` and no inline header, an inline
/// entry `BE32(len | 0x80000000)` and the bytes padded to 16, a pointer entry.
#[test]
fn the_wqe_is_dpdks_layout() {
    let fabric = Fabric::new();
    let (mut a, mut b) = raw_pair(&fabric);
    let _f = b.qp.create_flow(&FlowRule::dst_mac(mac(&b))).unwrap();
    post_recv(&mut b, 0, 0);
    post_recv(&mut b, 1, 0x800);
    let frames = burst(mac(&b), mac(&a), 2);
    a.mr.write(0, &frames[1]);
    let packets = [
        EmpwPacket::Inline(&frames[0]),
        EmpwPacket::Pointer(a.mr.sge(0, frames[1].len() as u32)),
    ];
    let pi = a.qp.sq().producer_count();
    let wr = EmpwWr {
        wr_id: 1,
        flags: SendFlags::SIGNALED,
        checksum: Checksum::IP,
        packets: &packets,
    };
    a.qp.sq().post_empw(&wr).unwrap();
    let inline_ds = (4 + frames[0].len()).div_ceil(16);
    let ds = 2 + inline_ds + 1;
    let mut want = vec![0u8; ds * 16];
    want[0..4].copy_from_slice(&(u32::from(pi as u16) << 8 | 0x29).to_be_bytes());
    want[4..8].copy_from_slice(&(a.qp.qpn() << 8 | ds as u32).to_be_bytes());
    want[11] = 0x08;
    want[16 + 4] = 0xc0;
    want[32..36].copy_from_slice(&(0x8000_0000u32 | frames[0].len() as u32).to_be_bytes());
    want[36..36 + frames[0].len()].copy_from_slice(&frames[0]);
    let p = 32 + inline_ds * 16;
    want[p..p + 4].copy_from_slice(&(frames[1].len() as u32).to_be_bytes());
    want[p + 4..p + 8].copy_from_slice(&a.mr.lkey().to_be_bytes());
    want[p + 8..p + 16].copy_from_slice(&a.mr.addr().to_be_bytes());
    assert_eq!(a.qp.sq().wqe_bytes(pi, ds * 16), want);
    poll_n(&mut a, 1);
    poll_n(&mut b, 2);
}

#[test]
fn dpdks_limits_are_typed_refusals() {
    let fabric = Fabric::new();
    let (mut a, _b) = raw_pair(&fabric);
    let f = [0x11u8; 60];
    let post = |a: &mut common::Side, packets: &[EmpwPacket<'_>]| {
        let wr = EmpwWr {
            wr_id: 0,
            flags: SendFlags::SIGNALED,
            checksum: Checksum::NONE,
            packets,
        };
        a.qp.sq().post_empw(&wr)
    };
    let refused = |why| Err(PostError::Ethernet(why));
    let sge = a.mr.sge(0, 60);
    assert_eq!(
        post(&mut a, &[EmpwPacket::Pointer(sge); 33]),
        refused(EthRefusal::EmpwPackets { count: 33 })
    );
    assert_eq!(
        post(&mut a, &[]),
        refused(EthRefusal::EmpwPackets { count: 0 })
    );
    let big = [0u8; 269];
    assert_eq!(
        post(&mut a, &[EmpwPacket::Inline(&big)]),
        refused(EthRefusal::EmpwInlineTooLarge { len: 269 })
    );
    // 15 inline frames of 60 bytes: 2 + 15 x 4 = 62 DS.
    assert_eq!(
        post(&mut a, &[EmpwPacket::Inline(&f); 15]),
        refused(EthRefusal::EmpwTooLarge { ds: 62 })
    );
    assert_eq!(
        post(&mut a, &[EmpwPacket::Inline(&[])]),
        refused(EthRefusal::EmptyFrame)
    );
    assert_eq!(a.qp.sq().producer_count(), 0, "nothing was written");
    // Devices without eMPW, or that need an inline header (ConnectX-4).
    for eth in [
        EthConfig {
            enhanced_mpw: false,
            ..EthConfig::default()
        },
        EthConfig {
            min_inline: MinInline::L2,
            ..EthConfig::default()
        },
    ] {
        let mut s = raw_side_on(&fabric, eth_nic(eth));
        assert_eq!(
            post(&mut s, &[EmpwPacket::Inline(&f)]),
            refused(EthRefusal::EmpwUnsupported)
        );
    }
}
