//! CQE compression in the model: the exact bytes of basic and enhanced blocks, when the NIC
//! compresses, and what a block costs on the link.

mod common;
use common::*;
use mlx5_hw::{
    CqCompression, Fault, MiniFormat, NicConfig, Purpose, ZipConfig, ZipLayout, ZipPolicy,
};

/// `byte_cnt` the model writes in requester CQEs other than READ's.
const POISON: [u8; 4] = 0x8bad_f00du32.to_be_bytes();

fn zip_pair(layout: ZipLayout, zip: ZipConfig, log_cq: u8) -> (Side, Side) {
    let cfg = Cfg {
        log_cq,
        zip: Some(CqCompression {
            layout,
            format: MiniFormat::Hash,
        }),
        ..Cfg::default()
    };
    let nic = NicConfig {
        cqe_zip: zip,
        ..NicConfig::default()
    };
    let (_f, a, b) = pair_with(cfg, Conn::default(), nic);
    (a, b)
}

fn every_burst() -> ZipConfig {
    ZipConfig {
        policy: ZipPolicy::EveryBurst,
        ..ZipConfig::default()
    }
}

/// Posts `n` signaled one-WQEBB WRITEs and rings one doorbell: one burst of `n` CQEs.
fn burst(a: &mut Side, b: &Side, n: usize) {
    for i in 0..n {
        a.write_inline(b.data(64 * i), b.key, &[i as u8; 8], SIGNALED);
    }
    a.ring();
}

fn slot(a: &Side, i: usize) -> Vec<u8> {
    a.mem.read(SCQ + 64 * i, 64)
}

/// A requester mini-CQE: BE16 counter, send opcode at byte 2, BE32 byte count.
fn req_mini(counter: u16) -> Vec<u8> {
    let mut m = counter.to_be_bytes().to_vec();
    m.extend_from_slice(&[WRITE, 0]);
    m.extend_from_slice(&POISON);
    m
}

fn cqe_writes(a: &Side) -> usize {
    a.nic
        .take_tlps()
        .iter()
        .filter(|t| t.purpose == Purpose::Cqe)
        .count()
}

#[test]
fn basic_block_is_a_title_and_arrays_at_1_and_8() {
    let (mut a, b) = zip_pair(ZipLayout::Basic, every_burst(), 6);
    a.nic.set_tlp_trace(true);
    burst(&mut a, &b, 10);
    let title = slot(&a, 0);
    assert_eq!(title[63], 0x0c, "REQ, compressed format, owner 0");
    assert_eq!(&title[44..48], &10u32.to_be_bytes(), "byte_cnt = N");
    assert_eq!(
        &title[56..60],
        &(u32::from(WRITE) << 24 | a.qp.qpn).to_be_bytes()
    );
    let first: Vec<u8> = (0..8).flat_map(req_mini).collect();
    assert_eq!(slot(&a, 1), first);
    let mut second: Vec<u8> = (8..10).flat_map(req_mini).collect();
    second.resize(64, 0);
    assert_eq!(slot(&a, 8), second);
    for hole in 2..8 {
        assert_eq!(slot(&a, hole)[63], 0xf0, "slot {hole} is not written");
    }
    assert_eq!(slot(&a, 10)[63], 0xf0);
    assert_eq!(cqe_writes(&a), 3, "title + 2 arrays instead of 10 CQEs");
    let s = a.nic.stats();
    assert_eq!((s.cqes, s.zip_blocks, s.zip_minis), (10, 1, 10));
}

#[test]
fn enhanced_block_follows_a_whole_title_in_slots_of_seven() {
    let (mut a, b) = zip_pair(ZipLayout::Enhanced, every_burst(), 6);
    a.nic.set_tlp_trace(true);
    burst(&mut a, &b, 10);
    let title = slot(&a, 0);
    assert_eq!((title[62], title[63]), (0, 0x00), "a normal REQ CQE");
    assert_eq!(&title[60..62], &[0, 0]);
    let mut seven: Vec<u8> = (1..8).flat_map(req_mini).collect();
    seven.extend_from_slice(&[0; 6]);
    seven.extend_from_slice(&[0, 0x6c]);
    assert_eq!(slot(&a, 1), seven, "7 minis, op_own (7-1)<<4 | 0x0c");
    let mut two: Vec<u8> = (8..10).flat_map(req_mini).collect();
    two.resize(62, 0);
    two.extend_from_slice(&[0, 0x1c]);
    assert_eq!(slot(&a, 8), two);
    assert_eq!(
        slot(&a, 2)[63],
        0xf0,
        "the indices a slot takes are not written"
    );
    assert_eq!(cqe_writes(&a), 3);
    let s = a.nic.stats();
    assert_eq!((s.cqes, s.zip_blocks, s.zip_minis), (10, 1, 9));
}

#[test]
fn enhanced_validity_count_and_owner_follow_the_pass() {
    // 16 entries: the second burst of 10 wraps into pass 1 at index 16.
    let (mut a, b) = zip_pair(ZipLayout::Enhanced, every_burst(), 4);
    burst(&mut a, &b, 10);
    a.mem.put_be32(SCQ_DB, 10);
    burst(&mut a, &b, 10);
    // Indices 10 (title), 11..=17 (7 minis: slot 11), 18..=19 (slot 18 = entry 2).
    assert_eq!((slot(&a, 10)[62], slot(&a, 10)[63]), (0, 0x00));
    assert_eq!((slot(&a, 11)[62], slot(&a, 11)[63]), (0, 0x6c));
    assert_eq!(
        (slot(&a, 2)[62], slot(&a, 2)[63]),
        (1, 0x1d),
        "pass 1: count 1, owner 1"
    );
}

#[test]
fn a_lone_cqe_is_never_compressed() {
    let (mut a, b) = zip_pair(ZipLayout::Basic, every_burst(), 6);
    burst(&mut a, &b, 1);
    burst(&mut a, &b, 1);
    assert_eq!(a.drain_send().len(), 2);
    assert_eq!(a.nic.stats().zip_blocks, 0);
}

#[test]
fn under_backpressure_compresses_only_while_the_link_is_congested() {
    let (mut a, b) = zip_pair(ZipLayout::Basic, ZipConfig::default(), 6);
    burst(&mut a, &b, 4);
    assert_eq!(a.drain_send().len(), 4, "four whole CQEs");
    a.nic.inject(Fault::PcieBackpressure(true));
    burst(&mut a, &b, 4);
    assert_eq!(slot(&a, 4)[63], 0x0c);
    assert_eq!(&slot(&a, 4)[44..48], &4u32.to_be_bytes());
    assert_eq!(a.nic.stats().zip_minis, 4);
}

#[test]
fn max_num_splits_a_burst_into_blocks() {
    let zip = ZipConfig {
        max_num: 4,
        ..every_burst()
    };
    let (mut a, b) = zip_pair(ZipLayout::Basic, zip, 6);
    burst(&mut a, &b, 10);
    for (at, n) in [(0, 4u32), (4, 4), (8, 2)] {
        assert_eq!(slot(&a, at)[63], 0x0c, "title at {at}");
        assert_eq!(&slot(&a, at)[44..48], &n.to_be_bytes());
    }
    assert_eq!(a.nic.stats().zip_blocks, 3);
}

#[test]
fn responder_blocks_need_consecutive_counters_and_equal_fields() {
    let (mut a, mut b) = zip_pair(ZipLayout::Basic, every_burst(), 6);
    for i in 0..3 {
        b.recv_at(64 * i, 64);
    }
    for len in [8u32, 16, 24] {
        a.post_op(SEND, 0, 0, 0, &[inline_seg(&vec![7; len as usize])]);
    }
    a.ring();
    let title = b.mem.read(RCQ, 64);
    assert_eq!(title[63], (RESP_SEND << 4) | 0x0c);
    assert_eq!(&title[44..48], &3u32.to_be_bytes());
    assert_eq!(&title[60..62], &[0, 0], "the first receive's counter");
    let minis = b.mem.read(RCQ + 64, 24);
    let want: Vec<u8> = [8u32, 16, 24]
        .iter()
        .flat_map(|l| [[0; 4], l.to_be_bytes()].concat())
        .collect();
    assert_eq!(minis, want, "hash 0 (no RSS on IB), byte counts");
}

#[test]
fn dpdk_reading_puts_the_opcode_in_byte_3() {
    let zip = ZipConfig {
        req_opcode_byte3: true,
        ..every_burst()
    };
    let (mut a, b) = zip_pair(ZipLayout::Enhanced, zip, 4);
    burst(&mut a, &b, 2);
    assert_eq!(&slot(&a, 1)[..4], &[0, 1, 0, WRITE]);
}

#[test]
fn compression_needs_64_byte_cqes_and_the_enhanced_cap() {
    let mut mem = Mem::new(0x10000);
    let f = mlx5_hw::Fabric::new();
    let nic = mlx5_hw::Nic::new(
        &f,
        NicConfig {
            cqe_zip: ZipConfig {
                enhanced: false,
                ..ZipConfig::default()
            },
            ..NicConfig::default()
        },
    );
    mem.write(0, &[0xf0]);
    let params = |cqe_size, layout| mlx5_hw::CqParams {
        buf: mem.addr(0),
        log_cqe_cnt: 4,
        cqe_size,
        dbrec: mem.addr(0x8000),
        compression: Some(CqCompression {
            layout,
            format: MiniFormat::Csum,
        }),
        ..Default::default()
    };
    // SAFETY: the buffer and record live in `mem`, which outlives the NIC's use of them.
    let create = |p| unsafe { nic.create_cq(&p) }.map(|_| ());
    assert_eq!(
        create(params(128, ZipLayout::Basic)),
        Err(mlx5_hw::HwError::InvalidParam(
            "compression needs 64-byte CQEs"
        ))
    );
    assert_eq!(
        create(params(64, ZipLayout::Enhanced)),
        Err(mlx5_hw::HwError::InvalidParam("cqe_comp_layout"))
    );
    assert_eq!(create(params(64, ZipLayout::Basic)), Ok(()));
}
