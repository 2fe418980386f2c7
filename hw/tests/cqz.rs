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
    zip_pair_sized(layout, zip, log_cq, 64)
}

/// Two connected sides whose CQs of `1 << log_cq` entries of `cqe_size` bytes compress in
/// `layout`, on NICs compressing as `zip` says.
fn zip_pair_sized(layout: ZipLayout, zip: ZipConfig, log_cq: u8, cqe_size: u32) -> (Side, Side) {
    let cfg = Cfg {
        log_cq,
        cqe_size,
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

/// Completions, compressed blocks and mini-CQEs the NIC wrote.
fn zip_stats(a: &Side) -> (u64, u64, u64) {
    let s = a.nic.stats();
    (s.cqes, s.zip_blocks, s.zip_minis)
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
    assert_eq!(zip_stats(&a), (10, 1, 10));
}

#[test]
fn requester_blocks_take_any_counters_and_send_opcodes() {
    // WQEBBs 0, 1-2 and 3: a WRITE, a two-WQEBB WRITE (40 bytes inline) and a READ.
    let (mut a, b) = zip_pair(ZipLayout::Basic, every_burst(), 6);
    a.write_inline(b.data(0), b.key, &[1; 8], SIGNALED);
    a.write_inline(b.data(64), b.key, &[2; 40], SIGNALED);
    let sink = data_seg(16, a.key, a.data(0x1000));
    a.post_op(READ, 0, SIGNALED, 0, &[raddr_seg(b.data(0), b.key), sink]);
    a.ring();
    let title = slot(&a, 0);
    assert_eq!((title[63], &title[44..48]), (0x0c, &3u32.to_be_bytes()[..]));
    let mut minis = [req_mini(0), req_mini(1)].concat();
    minis.extend_from_slice(&[0, 3, READ, 0, 0, 0, 0, 16]);
    assert_eq!(&slot(&a, 1)[..24], &minis[..]);
    assert_eq!(zip_stats(&a), (3, 1, 3));
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
    assert_eq!(zip_stats(&a), (10, 1, 9));
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
    for layout in [ZipLayout::Basic, ZipLayout::Enhanced] {
        let (mut a, b) = zip_pair(layout, every_burst(), 6);
        burst(&mut a, &b, 1);
        burst(&mut a, &b, 1);
        assert_eq!(a.drain_send().len(), 2);
        assert_eq!(zip_stats(&a), (2, 0, 0), "{layout:?}");
    }
}

#[test]
fn under_backpressure_compresses_only_while_the_link_is_congested() {
    let (mut a, b) = zip_pair(ZipLayout::Basic, ZipConfig::default(), 6);
    burst(&mut a, &b, 4);
    assert_eq!(a.drain_send().len(), 4);
    let formats: Vec<u8> = (0..4).map(|i| slot(&a, i)[63] & 0x0c).collect();
    assert_eq!(formats, [0; 4], "four whole CQEs");
    assert_eq!(zip_stats(&a), (4, 0, 0));
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
    // An enhanced session open across bursts ends at max_num too: title 0 and minis 1..4
    // make 4; index 4 opens a session of its own.
    let zip = ZipConfig {
        sessions_span_bursts: true,
        ..zip
    };
    let (mut a, b) = zip_pair(ZipLayout::Enhanced, zip, 6);
    burst(&mut a, &b, 3);
    burst(&mut a, &b, 3);
    assert_eq!(slot(&a, 1), req_slot(1..3));
    assert_eq!(slot(&a, 3), req_slot(3..4));
    assert_eq!(slot(&a, 4)[63], 0x00);
    assert_eq!(slot(&a, 5), req_slot(5..6));
    assert_eq!(a.nic.stats().zip_blocks, 2);
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
fn responder_cqes_of_one_qp_that_differ_are_written_whole() {
    // SEND, SEND with immediate 5, SEND with immediate 6: one QP, consecutive counters,
    // but the opcode and then the immediate differ, which a mini-CQE cannot carry.
    let (mut a, mut b) = zip_pair(ZipLayout::Basic, every_burst(), 6);
    for i in 0..3 {
        b.recv_at(64 * i, 64);
    }
    a.post_op(SEND, 0, 0, 0, &[inline_seg(&[1; 8])]);
    for imm in [5u32, 6] {
        a.post_op(SEND_IMM, 0, 0, imm, &[inline_seg(&[1; 8])]);
    }
    a.ring();
    let ops: Vec<u8> = (0..3).map(|i| b.mem.read(RCQ + 64 * i, 64)[63]).collect();
    assert_eq!(
        ops,
        [RESP_SEND << 4, RESP_SEND_IMM << 4, RESP_SEND_IMM << 4]
    );
    let imms: Vec<Vec<u8>> = (1..3).map(|i| b.mem.read(RCQ + 64 * i + 36, 4)).collect();
    assert_eq!(imms, [5u32.to_be_bytes(), 6u32.to_be_bytes()]);
    assert_eq!(b.nic.stats().zip_blocks, 0);
}

#[test]
fn receives_scattered_to_the_cqe_are_written_whole() {
    // Three equal SENDs whose CQEs would make a block, but each carries its payload.
    let cfg = Cfg {
        scatter_to_cqe: true,
        zip: Some(CqCompression {
            layout: ZipLayout::Basic,
            format: MiniFormat::Hash,
        }),
        ..Cfg::default()
    };
    let nic = NicConfig {
        cqe_zip: every_burst(),
        ..NicConfig::default()
    };
    let (_f, mut a, mut b) = pair_with(cfg, Conn::default(), nic);
    for i in 0..3 {
        b.recv_at(64 * i, 64);
    }
    for _ in 0..3 {
        a.post_op(SEND, 0, 0, 0, &[inline_seg(&[9; 8])]);
    }
    a.ring();
    for i in 0..3 {
        let cqe = b.mem.read(RCQ + 64 * i, 64);
        assert_eq!(cqe[63], RESP_SEND << 4 | 1 << 2, "CQE {i}: whole, format 1");
        assert_eq!(&cqe[..9], &[9, 9, 9, 9, 9, 9, 9, 9, 0]);
    }
    assert_eq!(b.nic.stats().zip_blocks, 0);
}

#[test]
fn error_and_flush_cqes_are_written_whole() {
    // A WRITE under a bad rkey fails; the three after it flush with one syndrome and
    // consecutive counters, yet no error CQE joins a block.
    let (mut a, b) = zip_pair(ZipLayout::Basic, every_burst(), 6);
    a.write_inline(b.data(0), b.key ^ 0x100, &[1; 8], SIGNALED);
    burst(&mut a, &b, 3);
    let op_owns: Vec<u8> = (0..4).map(|i| slot(&a, i)[63]).collect();
    assert_eq!(op_owns, [0xd0; 4], "four whole requester error CQEs");
    let syndromes: Vec<u8> = (0..4).map(|i| slot(&a, i)[55]).collect();
    assert_eq!(syndromes, [0x13, 0x05, 0x05, 0x05]);
    assert_eq!(zip_stats(&a), (4, 0, 0));
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
        Err(mlx5_hw::HwError::InvalidParam("cqe_compression_128"))
    );
    assert_eq!(
        create(params(64, ZipLayout::Enhanced)),
        Err(mlx5_hw::HwError::InvalidParam("cqe_comp_layout"))
    );
    assert_eq!(create(params(64, ZipLayout::Basic)), Ok(()));
}

/// An enhanced slot of requester mini-CQEs for `counters`, validity count 0, owner 0.
fn req_slot(counters: std::ops::Range<u16>) -> Vec<u8> {
    let k = counters.len() as u8;
    let mut slot: Vec<u8> = counters.flat_map(req_mini).collect();
    slot.resize(62, 0);
    slot.extend_from_slice(&[0, (k - 1) << 4 | 0x0c]);
    slot
}

fn spanning() -> ZipConfig {
    ZipConfig {
        sessions_span_bursts: true,
        ..every_burst()
    }
}

#[test]
fn an_enhanced_session_continues_across_bursts_when_asked() {
    let (mut a, b) = zip_pair(ZipLayout::Enhanced, spanning(), 6);
    a.nic.set_tlp_trace(true);
    for n in [3, 3, 1] {
        burst(&mut a, &b, n);
    }
    assert_eq!(
        (slot(&a, 0)[62], slot(&a, 0)[63]),
        (0, 0x00),
        "the one title"
    );
    assert_eq!(slot(&a, 1), req_slot(1..3));
    assert_eq!(
        slot(&a, 3),
        req_slot(3..6),
        "no new title: the session goes on"
    );
    assert_eq!(slot(&a, 6), req_slot(6..7), "a lone CQE joins it too");
    assert_eq!(cqe_writes(&a), 4);
    assert_eq!(zip_stats(&a), (7, 1, 6));
}

#[test]
fn by_default_every_burst_opens_its_own_session() {
    let (mut a, b) = zip_pair(ZipLayout::Enhanced, every_burst(), 6);
    burst(&mut a, &b, 3);
    burst(&mut a, &b, 3);
    assert_eq!(slot(&a, 1), req_slot(1..3));
    assert_eq!((slot(&a, 3)[62], slot(&a, 3)[63]), (0, 0x00), "a new title");
    assert_eq!(slot(&a, 4), req_slot(4..6));
    assert_eq!(a.nic.stats().zip_blocks, 2);
}

#[test]
fn a_whole_cqe_between_bursts_ends_the_session() {
    let zip = ZipConfig {
        policy: ZipPolicy::UnderBackpressure,
        ..spanning()
    };
    let (mut a, b) = zip_pair(ZipLayout::Enhanced, zip, 6);
    a.nic.inject(Fault::PcieBackpressure(true));
    burst(&mut a, &b, 3);
    a.nic.inject(Fault::PcieBackpressure(false));
    burst(&mut a, &b, 1);
    a.nic.inject(Fault::PcieBackpressure(true));
    burst(&mut a, &b, 2);
    assert_eq!(slot(&a, 1), req_slot(1..3));
    assert_eq!(slot(&a, 3)[63], 0x00, "written whole: no back pressure");
    assert_eq!(slot(&a, 4)[63], 0x00, "a new title after the whole CQE");
    assert_eq!(slot(&a, 5), req_slot(5..6));
    assert_eq!(a.nic.stats().zip_blocks, 2);
}

#[test]
fn compressed_128_byte_cqes_fill_the_entries_last_64_bytes() {
    let zip = ZipConfig {
        compress_128: true,
        ..every_burst()
    };
    for layout in [ZipLayout::Basic, ZipLayout::Enhanced] {
        let (mut a, b) = zip_pair_sized(layout, zip, 5, 128);
        a.nic.set_tlp_trace(true);
        burst(&mut a, &b, 10);
        let entry = |i: usize| a.mem.read(SCQ + 128 * i, 128);
        for i in 0..10 {
            assert_eq!(
                entry(i)[..64],
                [0; 64],
                "{layout:?}: entry {i}'s first half"
            );
        }
        let (title, first) = (entry(0), entry(1));
        match layout {
            ZipLayout::Basic => {
                assert_eq!(title[127], 0x0c);
                assert_eq!(&title[64 + 44..64 + 48], &10u32.to_be_bytes());
                let minis: Vec<u8> = (0..8).flat_map(req_mini).collect();
                assert_eq!(first[64..], minis[..]);
            }
            ZipLayout::Enhanced => {
                assert_eq!(title[127], 0x00);
                assert_eq!(first[64..], req_slot(1..8)[..]);
            }
        }
        let tlps = a.nic.take_tlps();
        let cqe_bytes: Vec<u32> = tlps
            .iter()
            .filter(|t| t.purpose == Purpose::Cqe)
            .map(|t| t.payload)
            .collect();
        assert_eq!(
            cqe_bytes, [128; 3],
            "{layout:?}: each write is a whole entry"
        );
    }
}
