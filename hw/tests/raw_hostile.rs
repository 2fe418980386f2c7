//! Hostile input to raw Ethernet: random send WQEs of every raw opcode behind a control
//! segment that names the QP and the index (so the doorbell is taken): random Ethernet
//! segments, random eMPW entries, random keys, addresses and lengths; and striding receive
//! queues fed random WQEs (bad keys, addresses outside every region, junk byte counts),
//! doorbell records that announce more than the ring holds, and frames of every size. The
//! model must never panic or write outside the buffers the WQEs name within registered
//! memory; every send WQE completes with success or with a send-side syndrome, after which
//! the QP is in SQE; a striding queue's CQEs account for every stride it hands out.
//! Then each malformed eMPW form one at a time, with its exact syndrome.
//!
//! Deterministic: each case derives from a splitmix64 seed printed on failure; run one with
//! `HOSTILE_SEED=<n> cargo test -p mlx5-hw --test raw_hostile`.

mod common;

use common::eth::*;
use common::rng::{seeds, Rng};
use common::{data_seg, inline_seg};
use mlx5_hw::{Fabric, FlowKind, Nic, QpState, Striding, WqState};

/// A send-side syndrome a raw WQE may fail with: LOCAL_LENGTH, LOCAL_QP_OP, LOCAL_PROT.
const SEND_SYNDROMES: [u8; 3] = [0x01, 0x02, 0x04];
/// The receiver's sentinel.
const SENTINEL: u8 = 0xa5;

/// A random data or eMPW entry: inline bytes, a pointer into the sender's frame area, a
/// pointer with a bad key or address, or random bytes.
fn entry(r: &mut Rng, a: &Raw) -> Vec<u8> {
    match r.below(5) {
        0 => {
            let n = r.below(200) as usize;
            inline_seg(&r.bytes(n))
        }
        1 | 2 => {
            let len = 1 + r.below(1500) as u32;
            data_seg(len, a.key, a.data(TX + r.below(0x1000) as usize))
        }
        3 => data_seg(r.next() as u32, r.next() as u32, r.next()),
        _ => r.bytes(16),
    }
}

#[test]
fn random_raw_send_wqes_complete_or_fail_cleanly() {
    let mut reached = std::collections::BTreeSet::new();
    for seed in seeds(300) {
        let mut r = Rng(seed);
        let f = Fabric::new();
        let (na, nb) = (Nic::new(&f, eth_config()), Nic::new(&f, eth_config()));
        let mut a = Raw::new(&na);
        let mut b = Raw::new(&nb);
        b.flow(&kind_rule(FlowKind::AllDefault));
        b.recv_frames(16);
        let noise = r.bytes(0x2000);
        a.write_data(TX, &noise);
        // The receive buffers' sentinel, and memory past them.
        b.write_data(16 * RX_SLOT, &[SENTINEL; 0x100]);
        let opcode = [SEND, TSO, EMPW, r.next() as u8][r.below(4) as usize];
        let mut e = match r.below(3) {
            0 => {
                let (cs, mss, n) = (r.next() as u8, r.next() as u16, r.below(80) as usize);
                eseg(cs, mss, &r.bytes(n))
            }
            1 => eseg_vlan(r.next() as u8, r.next() as u16, r.below(2) == 0),
            _ => r.bytes(16),
        };
        if opcode == EMPW && r.below(2) == 0 {
            e = eseg(r.next() as u8, 0, &[]);
        }
        let mut segs = vec![e];
        for _ in 0..r.below(12) {
            segs.push(entry(&mut r, &a));
        }
        let w = a.wqe(opcode, if r.below(8) == 0 { 1 } else { 0 }, SIGNALED, &segs);
        if w.len() > 63 * 16 {
            continue;
        }
        a.post(&w);
        a.ring();
        let sent = a.drain_send();
        assert_eq!(sent.len(), 1, "seed {seed}");
        reached.insert(sent[0].syndrome() * u8::from(sent[0].opcode() != 0));
        match sent[0].opcode() {
            0 => assert_eq!(na.qp_state(a.qp.qpn), Ok(QpState::Rts), "seed {seed}"),
            13 => {
                assert!(SEND_SYNDROMES.contains(&sent[0].syndrome()), "seed {seed}");
                assert_eq!(na.qp_state(a.qp.qpn), Ok(QpState::Sqe), "seed {seed}");
                assert_eq!(
                    nb.stats().eth.rx_frames,
                    0,
                    "seed {seed}: checked before sending"
                );
            }
            op => panic!("seed {seed}: CQE opcode {op}"),
        }
        let got = b.drain_recv();
        assert!(
            got.iter().all(|c| c.opcode() == 2 && c.byte_cnt() >= 60),
            "seed {seed}"
        );
        assert_eq!(
            b.read_data(16 * RX_SLOT, 0x100),
            [SENTINEL; 0x100],
            "seed {seed}"
        );
        let s = nb.stats().eth;
        assert_eq!(
            s.rx_frames,
            s.rx_delivered + s.rx_out_of_buffer + s.rx_oversize + s.rx_not_ready,
            "seed {seed}"
        );
    }
    if std::env::var("HOSTILE_SEED").is_err() {
        // Success and every send-side syndrome were reached.
        assert_eq!(reached.into_iter().collect::<Vec<_>>(), [0, 1, 2, 4]);
    }
}

/// Striding receive queues under random WQEs and frames: every handed-out stride is
/// reported once by a CQE (frames and fillers) until the queue fails, no write lands
/// outside the posted buffers, and an error leaves the queue in ERR with the rest flushed.
#[test]
fn random_striding_receives_account_for_every_stride() {
    let (mut frames, mut fillers, mut failures) = (0, 0, 0);
    for seed in seeds(200) {
        let mut r = Rng(seed);
        let s = Striding {
            log_stride_bytes: 6 + r.below(2) as u8,
            log_num_strides: 3 + r.below(2) as u8,
            two_byte_shift: r.below(2) == 0,
        };
        let wqe_bytes = 1usize << (s.log_stride_bytes + s.log_num_strides);
        let strides = 1u32 << s.log_num_strides;
        let Rig {
            mut a,
            mut b,
            mut wq,
            ..
        } = Rig::new(eth_config(), 2, Some(s));
        let nb = b.nic.clone();
        b.write_data(0, &vec![SENTINEL; 0x8000]);
        for _ in 0..40 {
            match r.below(6) {
                0 | 1 => {
                    // A WQE: mostly its own buffer; sometimes a bad key or address.
                    let slot = wq.pi as usize % 4;
                    let (addr, key) = match r.below(8) {
                        0 => (b.data(0x7000), b.key ^ 0x100),
                        1 => (0x1000, b.key),
                        _ => (b.data(slot * wqe_bytes), b.key),
                    };
                    wq.post(addr, r.next() as u32, key);
                }
                2 => {
                    // A record that announces junk.
                    wq.pi = r.next() as u16;
                    wq.publish();
                }
                _ => {
                    let len = 18 + r.below(700) as usize;
                    let payload = r.bytes(len);
                    a.send_frame(&frame(&Pkt::udp(b.mac(), a.mac(), &payload)));
                }
            }
        }
        let got = wq.drain();
        let mut used = std::collections::BTreeMap::<u16, u32>::new();
        let mut failed = false;
        for c in &got {
            match c.opcode() {
                2 => {
                    assert!(!failed, "seed {seed}: a frame after the queue failed");
                    let n = (c.byte_cnt() >> 16) & 0x3fff;
                    if c.byte_cnt() >> 31 == 1 {
                        fillers += 1;
                    } else {
                        frames += 1;
                    }
                    let at = u32::from(c.wqe_counter());
                    let e = used.entry(c.wqe_id()).or_default();
                    assert_eq!(at, *e, "seed {seed}: strides in order");
                    *e += n;
                    assert!(*e <= strides, "seed {seed}: strides past the WQE");
                }
                14 => {
                    assert!([0x01, 0x04, 0x05].contains(&c.syndrome()), "seed {seed}");
                    failed = true;
                }
                op => panic!("seed {seed}: CQE opcode {op}"),
            }
        }
        if failed {
            failures += 1;
            assert_eq!(nb.wq_state(wq.wqn), Ok(WqState::Err), "seed {seed}");
        }
        // Beyond the four WQE buffers nothing was written.
        let past = b.read_data(4 * wqe_bytes, 0x8000 - 4 * wqe_bytes);
        assert!(past.iter().all(|&x| x == SENTINEL), "seed {seed}");
    }
    if std::env::var("HOSTILE_SEED").is_err() {
        // Frames, fillers and failed queues were all reached.
        assert!(
            frames > 100 && fillers > 20 && failures > 20,
            "{frames} {fillers} {failures}"
        );
    }
}

/// A pointer entry naming the frame at the sender's `TX`.
fn ptr(a: &Raw, len: u32) -> Vec<u8> {
    data_seg(len, a.key, a.data(TX))
}

/// Malformed eMPW WQEs, one at a time: each fails with its syndrome before any packet
/// leaves (the whole WQE is checked first), and the QP goes to SQE. An inline header or a
/// VLAN command in the Ethernet segment, no entry, opmod 1 (legacy MPW), an inline entry
/// running past the WQE: LOCAL_QP_OP_ERR; a pointer entry of `byte_count` 0 (2^31 bytes):
/// LOCAL_LENGTH_ERR; a bad key in the third entry: LOCAL_PROT_ERR. A well-formed WQE of
/// the same entries first, as the control.
#[test]
fn malformed_empw_wqes() {
    type Case = fn(&Raw, &[u8]) -> (u8, Vec<Vec<u8>>);
    let cases: [(&str, Case, u8); 8] = [
        (
            "well formed",
            |a, f| {
                (
                    0,
                    vec![eseg(0, 0, &[]), inline_seg(f), ptr(a, f.len() as u32)],
                )
            },
            0,
        ),
        (
            "inline header",
            |a, f| (0, vec![eseg(0, 0, &f[..18]), ptr(a, f.len() as u32)]),
            0x02,
        ),
        (
            "VLAN command",
            |a, f| (0, vec![eseg_vlan(0, 5, false), ptr(a, f.len() as u32)]),
            0x02,
        ),
        ("no entry", |_, _| (0, vec![eseg(0, 0, &[])]), 0x02),
        (
            "legacy MPW",
            |a, f| (1, vec![eseg(0, 0, &[]), ptr(a, f.len() as u32)]),
            0x02,
        ),
        (
            "inline past the WQE",
            |_, f| {
                let mut e = inline_seg(&f[..12]);
                e[..4].copy_from_slice(&(200u32 | 0x8000_0000).to_be_bytes());
                (0, vec![eseg(0, 0, &[]), e])
            },
            0x02,
        ),
        (
            "byte_count 0",
            |a, f| (0, vec![eseg(0, 0, &[]), inline_seg(f), ptr(a, 0)]),
            0x01,
        ),
        (
            "bad key",
            |a, f| {
                let mut bad = ptr(a, f.len() as u32);
                bad[4..8].copy_from_slice(&(a.key ^ 0x100).to_be_bytes());
                (
                    0,
                    vec![eseg(0, 0, &[]), inline_seg(f), ptr(a, f.len() as u32), bad],
                )
            },
            0x04,
        ),
    ];
    for (name, case, want) in cases {
        let f = Fabric::new();
        let (na, nb) = (Nic::new(&f, eth_config()), Nic::new(&f, eth_config()));
        let mut a = Raw::new(&na);
        let mut b = Raw::new(&nb);
        b.flow(&kind_rule(FlowKind::AllDefault));
        b.recv_frames(16);
        let fr = frame(&Pkt::udp(b.mac(), a.mac(), &[7; 40]));
        a.write_data(TX, &fr);
        let (opmod, segs) = case(&a, &fr);
        a.send(EMPW, opmod, SIGNALED, &segs);
        let sent = a.drain_send();
        assert_eq!(sent.len(), 1, "{name}");
        if want == 0 {
            assert_eq!(sent[0].opcode(), 0, "{name}");
            assert_eq!(b.drain_recv().len(), 2, "{name}");
            continue;
        }
        assert_eq!((sent[0].opcode(), sent[0].syndrome()), (13, want), "{name}");
        assert_eq!(na.qp_state(a.qp.qpn), Ok(QpState::Sqe), "{name}");
        assert_eq!(nb.stats().eth.rx_frames, 0, "{name}");
        assert_eq!(na.stats().eth.tx_frames, 0, "{name}");
    }
}
