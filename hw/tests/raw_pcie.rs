//! What raw Ethernet costs on the PCIe link, as the rows of prm-facts-next §5.3 (with the
//! model's TLP overheads: MWr 24, MRd 24, CplD 20 bytes; MPS 256, MRRS 512, RCB 128): one
//! 64-byte frame per WQE with and without ConnectX-4's 18-byte inline header, an eMPW of 32
//! pointer packets and one of 12 inline packets, and 64-byte frames received through a
//! plain RQ (a WQE per frame) and a striding one (a WQE per 64 frames). Every count and
//! byte is pinned.

mod common;

use common::eth::*;
use common::{data_seg, inline_seg};
use mlx5_hw::{EthConfig, Fabric, MinInline, Nic, NicConfig, PcieCounters, Striding};

/// (MWr down, MRd, CplD, MWr up, bytes down, bytes up).
fn row(p: PcieCounters) -> (u64, u64, u64, u64, u64, u64) {
    (
        p.mmio_writes,
        p.dma_reads,
        p.completions,
        p.dma_writes,
        p.bytes_down,
        p.bytes_up,
    )
}

fn rig(a_cfg: NicConfig) -> (std::sync::Arc<Fabric>, Raw, Raw) {
    let f = Fabric::new();
    let (na, nb) = (Nic::new(&f, a_cfg), Nic::new(&f, eth_config()));
    let a = Raw::new(&na);
    let b = Raw::new(&nb);
    (f, a, b)
}

/// A 64-byte frame to `b`.
fn frame64(a: &Raw, b: &Raw, i: u8) -> Vec<u8> {
    frame(&Pkt::udp(b.mac(), a.mac(), &[i; 22]))
}

/// One frame per WQE. ConnectX-4 (18-byte minimum inline): a 64-byte WQE (ctrl, a 32-byte
/// Ethernet segment, one data segment) and a 46-byte gather. ConnectX-5: a 48-byte WQE
/// (fetched as its 64-byte BB) and a 64-byte gather. Each with the doorbell and the CQE.
#[test]
fn one_frame_per_wqe() {
    let cx4 = NicConfig {
        eth: EthConfig {
            min_inline: MinInline::L2,
            ..EthConfig::default()
        },
        ..eth_config()
    };
    for (cfg, inline, want) in [
        (cx4, 18, (1, 2, 2, 1, 32 + 84 + 66, 48 + 88)),
        (eth_config(), 0, (1, 2, 2, 1, 32 + 84 + 84, 48 + 88)),
    ] {
        let (_f, mut a, b) = rig(cfg);
        let f = frame64(&a, &b, 1);
        a.write_data(TX + inline, &f[inline..]);
        let (addr, key) = (a.data(TX + inline), a.key);
        let segs = [
            eseg(0, 0, &f[..inline]),
            data_seg((64 - inline) as u32, key, addr),
        ];
        let w = a.wqe(SEND, 0, SIGNALED, &segs);
        assert_eq!(w.len(), if inline == 18 { 64 } else { 48 });
        let before = a.nic.pcie();
        a.post(&w);
        a.ring();
        assert_eq!(row(a.nic.pcie() - before), want, "inline {inline}");
    }
}

/// eMPW, 32 pointer packets: one 34-DS WQE (544 bytes, fetched as 9 BBs: two reads of 512
/// and 64 bytes, three completions), one doorbell, 32 gathers, one CQE. The WQE's share
/// per packet: 17 bytes of descriptor, (576 + 3 * 20 + 2 * 24) / 32 = 21.4 bytes with
/// the BB padding and TLP headers.
#[test]
fn empw_of_32_pointer_packets() {
    let (_f, mut a, b) = rig(eth_config());
    let mut segs = vec![eseg(0, 0, &[])];
    for i in 0..32u8 {
        let off = TX + usize::from(i) * 128;
        a.write_data(off, &frame64(&a, &b, i));
        segs.push(data_seg(64, a.key, a.data(off)));
    }
    let w = a.wqe(EMPW, 0, SIGNALED, &segs);
    assert_eq!(w.len(), 544);
    let before = a.nic.pcie();
    a.post(&w);
    a.ring();
    let fetch = (576 + 3 * 20, 2 * 24);
    let gathers = (32 * 84, 32 * 24);
    let want = (
        1,
        2 + 32,
        3 + 32,
        1,
        32 + fetch.0 + gathers.0,
        fetch.1 + gathers.1 + 88,
    );
    assert_eq!(row(a.nic.pcie() - before), want);
    assert_eq!(b.nic.stats().eth.rx_frames, 32);
}

/// eMPW, 12 inline packets of 64 bytes: each entry 4 + 64 bytes padded to 80 (5 DS); 62
/// DS fetched as 16 BBs (two 512-byte reads, four 256-byte completions); no gather.
#[test]
fn empw_of_12_inline_packets() {
    let (_f, mut a, b) = rig(eth_config());
    let mut segs = vec![eseg(0, 0, &[])];
    for i in 0..12u8 {
        segs.push(inline_seg(&frame64(&a, &b, i)));
    }
    let w = a.wqe(EMPW, 0, SIGNALED, &segs);
    assert_eq!(w.len(), 62 * 16);
    let before = a.nic.pcie();
    a.post(&w);
    a.ring();
    assert_eq!(
        row(a.nic.pcie() - before),
        (1, 2, 4, 1, 32 + 1024 + 80, 48 + 88)
    );
    assert_eq!(b.nic.stats().eth.rx_delivered, 0);
    assert_eq!(b.nic.stats().eth.rx_steer_missed, 12);
}

/// 16 frames of 64 bytes into a plain RQ (64-byte stride) with 16 receives posted: one
/// doorbell record read, then per frame a WQE fetch, the payload write and the CQE.
#[test]
fn a_plain_rq_takes_a_wqe_per_frame() {
    let (_f, mut a, mut b) = rig(eth_config());
    b.flow(&dmac_rule(b.mac(), 0));
    b.recv_frames(16);
    let before = b.nic.pcie();
    for i in 0..16 {
        a.send_frame(&frame64(&a, &b, i));
    }
    let want = (0, 1 + 16, 1 + 16, 32, 24 + 16 * 84, 24 + 16 * 24 + 32 * 88);
    assert_eq!(row(b.nic.pcie() - before), want);
}

/// 64 frames of 64 bytes into a striding RQ of 64 strides of 64 bytes: one record read and
/// one 32-byte WQE fetch (24 + 52 bytes: 1.2 bytes per frame), then per frame the payload
/// write and its CQE.
#[test]
fn a_striding_rq_takes_a_wqe_per_64_frames() {
    let s = Striding {
        log_stride_bytes: 6,
        log_num_strides: 6,
        two_byte_shift: false,
    };
    let Rig {
        mut a, b, mut wq, ..
    } = Rig::new(eth_config(), 2, Some(s));
    wq.post(b.data(0), 4096, b.key);
    let before = b.nic.pcie();
    for i in 0..64 {
        a.send_frame(&frame64(&a, &b, i));
    }
    let want = (0, 2, 2, 128, 24 + 52, 2 * 24 + 128 * 88);
    assert_eq!(row(b.nic.pcie() - before), want);
    assert_eq!(wq.drain().len(), 64);
}
