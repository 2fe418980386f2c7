//! Enhanced multi-packet send (`MLX5_OPCODE_ENHANCED_MPSW`, 0x29 in DPDK's mlx5_prm.h): one
//! WQE of a control segment, an Ethernet segment without inline header, and one entry per
//! packet, a 16-byte pointer segment or an inline segment (`BE32(len | 0x80000000)` and the
//! bytes, padded to 16), as DPDK's `mlx5_tx_burst_empw_simple` / `_inline` build it. Sends
//! of 1 to 32 pointer packets (DPDK's `MLX5_EMPW_MAX_PACKETS`) and of the 61 a 63-DS WQE
//! holds, inline and mixed entries, the checksums applied to every packet, exact bytes on
//! the receiver and one CQE for the WQE.

mod common;

use common::eth::*;
use common::{data_seg, inline_seg};
use mlx5_hw::{EthConfig, NicConfig};

/// An eMPW entry.
enum Entry {
    /// The frame inline.
    Inline(Vec<u8>),
    /// The frame at this data offset of the sender.
    Ptr(usize, Vec<u8>),
}

/// A sender, and a receiver taking frames into a 64-entry plain work queue.
struct Rig {
    rig: common::eth::Rig,
}

impl Rig {
    fn new(a_cfg: NicConfig) -> Rig {
        let mut r = Rig {
            rig: common::eth::Rig::new(a_cfg, 6, None),
        };
        r.refill(64);
        r
    }

    /// Post `n` receives of 128 bytes (WQE `k` at data offset `(k mod 64) * 128`).
    fn refill(&mut self, n: usize) {
        for _ in 0..n {
            let off = (self.rig.wq.pi as usize % 64) * 128;
            self.rig.wq.write(self.rig.b.data(off), 128, self.rig.b.key);
        }
        self.rig.wq.publish();
    }

    fn packet(&self, i: usize) -> Vec<u8> {
        let payload = vec![i as u8; 18 + i % 40];
        frame(&Pkt {
            sport: 1000 + i as u16,
            ..Pkt::udp(self.rig.b.mac(), self.rig.a.mac(), &payload)
        })
    }

    /// One eMPW WQE of `entries` with `cs_flags`; returns its `ds`.
    fn empw(&mut self, entries: &[Entry], cs_flags: u8) -> usize {
        let mut segs = vec![eseg(cs_flags, 0, &[])];
        for e in entries {
            match e {
                Entry::Inline(f) => segs.push(inline_seg(f)),
                Entry::Ptr(off, f) => {
                    self.rig.a.write_data(*off, f);
                    segs.push(data_seg(
                        f.len() as u32,
                        self.rig.a.key,
                        self.rig.a.data(*off),
                    ));
                }
            }
        }
        let w = self.rig.a.wqe(EMPW, 0, SIGNALED, &segs);
        self.rig.a.post(&w);
        self.rig.a.ring();
        w.len() / 16
    }

    /// The frames the receiver got, in order, padded as they arrived.
    fn received(&mut self) -> Vec<Vec<u8>> {
        let got = self.rig.wq.drain();
        let frames = got
            .iter()
            .map(|c| {
                let off = (c.wqe_counter() as usize % 64) * 128;
                self.rig.b.read_data(off, c.byte_cnt() as usize)
            })
            .collect::<Vec<_>>();
        self.refill(frames.len());
        frames
    }
}

fn padded(mut f: Vec<u8>) -> Vec<u8> {
    if f.len() < 60 {
        f.resize(60, 0);
    }
    f
}

#[test]
fn empw_sends_1_to_32_pointer_packets() {
    let mut r = Rig::new(eth_config());
    let mut total = 0;
    for n in 1..=32usize {
        let frames: Vec<Vec<u8>> = (0..n).map(|i| r.packet(i)).collect();
        let entries: Vec<Entry> = frames
            .iter()
            .enumerate()
            .map(|(i, f)| Entry::Ptr(TX + i * 128, f.clone()))
            .collect();
        let ds = r.empw(&entries, 0);
        assert_eq!(ds, 2 + n);
        assert_eq!(
            r.received(),
            frames.into_iter().map(padded).collect::<Vec<_>>()
        );
        let sent = r.rig.a.drain_send();
        assert_eq!(sent.len(), 1, "n {n}");
        assert_eq!(
            (sent[0].opcode(), sent[0].sop_drop_qpn() >> 24),
            (0, u32::from(EMPW))
        );
        total += n as u64;
    }
    let s = r.rig.a.nic.stats().eth;
    assert_eq!((s.empw_packets, s.tx_frames), (total, total));
    assert_eq!(r.rig.a.nic.stats().doorbells, 32);
}

/// A WQE of 63 DS holds 61 pointer packets: the hardware's limit is the 6-bit `ds`, not
/// DPDK's 32 (the kernel's mlx5e puts up to `MLX5E_TX_MPW_MAX_NUM_DS` in one).
#[test]
fn empw_takes_as_many_packets_as_63_ds_hold() {
    let mut r = Rig::new(eth_config());
    let frames: Vec<Vec<u8>> = (0..61).map(|i| r.packet(i)).collect();
    let entries: Vec<Entry> = frames
        .iter()
        .enumerate()
        .map(|(i, f)| Entry::Ptr(TX + i * 128, f.clone()))
        .collect();
    assert_eq!(r.empw(&entries, 0), 63);
    assert_eq!(
        r.received(),
        frames.into_iter().map(padded).collect::<Vec<_>>()
    );
}

/// Inline entries (each its bytes padded to 16) mixed with pointer entries, in order.
#[test]
fn empw_inline_and_pointer_entries() {
    let mut r = Rig::new(eth_config());
    let frames: Vec<Vec<u8>> = (0..6).map(|i| r.packet(i * 7)).collect();
    let entries = vec![
        Entry::Inline(frames[0].clone()),
        Entry::Ptr(TX, frames[1].clone()),
        Entry::Inline(frames[2].clone()),
        Entry::Inline(frames[3].clone()),
        Entry::Ptr(TX + 128, frames[4].clone()),
        Entry::Inline(frames[5].clone()),
    ];
    let inline_ds: usize = [0, 2, 3, 5]
        .iter()
        .map(|&i| (4 + frames[i].len()).div_ceil(16))
        .sum();
    assert_eq!(r.empw(&entries, 0), 2 + 2 + inline_ds);
    assert_eq!(
        r.received(),
        frames.into_iter().map(padded).collect::<Vec<_>>()
    );
}

/// The Ethernet segment's `cs_flags` apply to every packet of the WQE.
#[test]
fn empw_checksums_every_packet() {
    let mut r = Rig::new(eth_config());
    let good: Vec<Vec<u8>> = (0..3).map(|i| r.packet(i + 20)).collect();
    let entries: Vec<Entry> = good
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let mut z = f.clone();
            let at = l4_csum_at(&z);
            z[IP_CSUM..IP_CSUM + 2].fill(0);
            z[at..at + 2].fill(0);
            if i == 1 {
                Entry::Inline(z)
            } else {
                Entry::Ptr(TX + i * 128, z)
            }
        })
        .collect();
    r.empw(&entries, CS_L3 | CS_L4);
    assert_eq!(
        r.received(),
        good.into_iter().map(padded).collect::<Vec<_>>()
    );
}

/// Without the ETH cap `enhanced_multi_pkt_send_wqe` the opcode is a malformed WQE.
#[test]
fn empw_needs_its_cap() {
    let no_empw = NicConfig {
        eth: EthConfig {
            enhanced_mpw: false,
            ..EthConfig::default()
        },
        ..eth_config()
    };
    let mut r = Rig::new(no_empw);
    assert!(!r.rig.a.nic.eth_caps().enhanced_mpw);
    let f = r.packet(0);
    r.empw(&[Entry::Inline(f)], 0);
    let sent = r.rig.a.drain_send();
    assert_eq!((sent[0].opcode(), sent[0].syndrome()), (13, 0x02));
    assert!(r.received().is_empty());
}
