//! Receive work queues behind RSS QPs, sniffers and the self-loopback: the Toeplitz hash
//! in the CQE checked against Microsoft's published vector, frames spread by it over an
//! indirection table, the kernel's refusals of RSS QPs, work queue states with their
//! flushes and user indexes, sniffer copies of both directions, and a NIC hearing itself
//! only with the self-loopback enabled.

mod common;

use common::eth::*;
use mlx5_hw::{
    EthConfig, Fabric, FlowKind, HashFields, HwError, Nic, NicConfig, RssQpParams, RxHash, WqState,
};

/// Microsoft's RSS verification key ("Verifying the RSS Hash Calculation").
const MS_KEY: [u8; 40] = [
    0x6d, 0x5a, 0x56, 0xda, 0x25, 0x5b, 0x0e, 0xc2, 0x41, 0x67, 0x25, 0x3d, 0x43, 0xa3, 0x8f, 0xb0,
    0xd0, 0xca, 0x2b, 0xcb, 0xae, 0x7b, 0x30, 0xb4, 0x77, 0xcb, 0x2d, 0xa3, 0x80, 0x30, 0xf2, 0x0c,
    0x6a, 0x42, 0xb7, 0x3b, 0xbe, 0xac, 0x01, 0xfa,
];

fn cqe_v1() -> NicConfig {
    NicConfig {
        cqe_version: 1,
        ..eth_config()
    }
}

/// The first IPv4 example of Microsoft's table, through the model: 66.9.149.187:2794 to
/// 161.142.100.80:1766 hashes to 0x323e8fc2 over the addresses and to 0x51ccc178 with the
/// TCP ports; the CQE carries the hash and its type (the kernel's `CQE_RSS_HTYPE_IP` IPv4
/// 1 << 2, `CQE_RSS_HTYPE_L4` TCP 1 << 6); the work queue's CQE its user index.
#[test]
fn the_rss_hash_is_microsofts_toeplitz() {
    let f = Fabric::new();
    let (na, nb) = (Nic::new(&f, eth_config()), Nic::new(&f, cqe_v1()));
    let mut a = Raw::new(&na);
    let b = Raw::new(&nb);
    let p = Pkt {
        tcp: true,
        sport: 2794,
        dport: 1766,
        src4: [66, 9, 149, 187],
        dst4: [161, 142, 100, 80],
        ..Pkt::udp(b.mac(), a.mac(), b"hash me")
    };
    let tuple = HashFields::SRC_IPV4
        | HashFields::DST_IPV4
        | HashFields::SRC_PORT_TCP
        | HashFields::DST_PORT_TCP;
    for (fields, hash, kind) in [
        (
            HashFields::SRC_IPV4 | HashFields::DST_IPV4,
            0x323e_8fc2,
            0x04,
        ),
        (tuple, 0x51cc_c178, 0x44),
    ] {
        let mut wq = Wq::new(&nb, b.pd, 3, None, 0x77);
        wq.post(b.data(0), 2048, b.key);
        let conf = Some(RxHash {
            key: MS_KEY,
            fields,
        });
        let rss = rss_qp(&nb, b.pd, vec![wq.wqn], conf, &dmac_rule(b.mac(), 0));
        a.send_frame(&frame(&p));
        let got = wq.drain();
        assert_eq!(got.len(), 1);
        assert_eq!((got[0].rss_hash(), got[0].rss_type()), (hash, kind));
        assert_eq!((got[0].srqn_uidx(), got[0].wqe_counter()), (0x77, 0));
        assert_eq!(b.read_data(0, frame(&p).len()), frame(&p));
        assert_eq!(nb.destroy_rss_qp(rss), Err(HwError::Busy));
    }
}

/// Frames of eight flows spread over a two-entry indirection table by the hash's low bit.
#[test]
fn rss_spreads_frames_over_the_indirection_table() {
    let f = Fabric::new();
    let (na, nb) = (Nic::new(&f, eth_config()), Nic::new(&f, eth_config()));
    let mut a = Raw::new(&na);
    let b = Raw::new(&nb);
    let mut wqs = [
        Wq::new(&nb, b.pd, 4, None, 0),
        Wq::new(&nb, b.pd, 4, None, 0),
    ];
    for (i, wq) in wqs.iter_mut().enumerate() {
        for k in 0..8 {
            wq.post(b.data((i * 8 + k) * 0x200), 0x200, b.key);
        }
    }
    let fields = HashFields::SRC_IPV4
        | HashFields::DST_IPV4
        | HashFields::SRC_PORT_UDP
        | HashFields::DST_PORT_UDP;
    let hash = Some(RxHash {
        key: MS_KEY,
        fields,
    });
    let wqns = vec![wqs[0].wqn, wqs[1].wqn];
    rss_qp(&nb, b.pd, wqns, hash, &dmac_rule(b.mac(), 0));
    for sport in 4000..4008 {
        let p = Pkt {
            sport,
            ..Pkt::udp(b.mac(), a.mac(), b"spread")
        };
        a.send_frame(&frame(&p));
    }
    let mut seen = 0;
    let mut hashes = std::collections::BTreeSet::new();
    for (k, wq) in wqs.iter_mut().enumerate() {
        for c in wq.drain() {
            // IPv4 (1 << 2) and UDP (2 << 6); the entry is the hash's low bit.
            assert_eq!((c.rss_type(), c.rss_hash() as usize & 1), (0x84, k));
            hashes.insert(c.rss_hash());
            seen += 1;
        }
    }
    assert_eq!((seen, hashes.len()), (8, 8));
    assert!(wqs.iter().all(|w| w.pi == 8));
}

#[test]
fn the_kernels_rss_refusals() {
    let f = Fabric::new();
    let nb = Nic::new(&f, eth_config());
    let b = Raw::new(&nb);
    let w: Vec<Wq> = (0..3).map(|_| Wq::new(&nb, b.pd, 2, None, 0)).collect();
    let hash = |fields| {
        Some(RxHash {
            key: MS_KEY,
            fields,
        })
    };
    let v4 = HashFields::SRC_IPV4;
    let cases = [
        (vec![w[0].wqn, w[1].wqn, w[2].wqn], hash(v4)),
        (vec![], hash(v4)),
        (vec![w[0].wqn, w[1].wqn], None),
        (vec![w[0].wqn], hash(v4 | HashFields::DST_IPV6)),
        (
            vec![w[0].wqn],
            hash(HashFields::SRC_PORT_TCP | HashFields::DST_PORT_UDP),
        ),
        (vec![w[0].wqn], hash(HashFields(1 << 8))),
    ];
    for (wqns, hash) in cases {
        let p = RssQpParams {
            pdn: b.pd,
            wqns,
            hash,
        };
        assert!(
            matches!(nb.create_rss_qp(&p), Err(HwError::InvalidParam(_))),
            "{p:?}"
        );
    }
    // One entry needs no hash; its work queue and the RSS QP are then busy.
    let rss = nb
        .create_rss_qp(&RssQpParams {
            pdn: b.pd,
            wqns: vec![w[0].wqn],
            hash: None,
        })
        .unwrap();
    assert_eq!(nb.destroy_wq(w[0].wqn), Err(HwError::Busy));
    let flow = nb.create_flow(rss, &dmac_rule(b.mac(), 0)).unwrap();
    assert_eq!(nb.destroy_rss_qp(rss), Err(HwError::Busy));
    nb.destroy_flow(flow).unwrap();
    nb.destroy_rss_qp(rss).unwrap();
    nb.destroy_wq(w[0].wqn).unwrap();
    assert_eq!(nb.dealloc_pd(b.pd), Err(HwError::Busy));
}

/// A work queue takes frames in RDY only; ERR flushes what is posted (and, at `progress`,
/// what is posted later); RESET restarts its counters; ERR to RDY is refused.
#[test]
fn work_queue_states_and_flushes() {
    let f = Fabric::new();
    let (na, nb) = (Nic::new(&f, eth_config()), Nic::new(&f, cqe_v1()));
    let mut a = Raw::new(&na);
    let b = Raw::new(&nb);
    let mut wq = Wq::new(&nb, b.pd, 2, None, 0x42);
    rss_qp(&nb, b.pd, vec![wq.wqn], None, &dmac_rule(b.mac(), 0));
    let f1 = frame(&Pkt::udp(b.mac(), a.mac(), b"one"));
    wq.post(b.data(0), 0x100, b.key);
    wq.post(b.data(0x100), 0x100, b.key);
    a.send_frame(&f1);
    assert_eq!(wq.drain().len(), 1);
    nb.modify_wq(wq.wqn, WqState::Err).unwrap();
    let flushed = wq.drain();
    assert_eq!(flushed.len(), 1);
    assert_eq!(
        (
            flushed[0].opcode(),
            flushed[0].syndrome(),
            flushed[0].wqe_counter()
        ),
        (14, 0x05, 1)
    );
    a.send_frame(&f1);
    assert_eq!(nb.stats().eth.rx_not_ready, 1);
    wq.post(b.data(0), 0x100, b.key);
    assert_eq!(nb.progress(), 1);
    let late = wq.drain();
    assert_eq!(
        (late.len(), late[0].wqe_counter(), late[0].srqn_uidx()),
        (1, 2, 0x42)
    );
    assert_eq!(
        nb.modify_wq(wq.wqn, WqState::Rdy),
        Err(HwError::InvalidTransition)
    );
    nb.modify_wq(wq.wqn, WqState::Reset).unwrap();
    nb.modify_wq(wq.wqn, WqState::Rdy).unwrap();
    assert_eq!(nb.wq_state(wq.wqn), Ok(WqState::Rdy));
    // The driver restarts its counters too (rdma-core zeroes the record).
    wq.pi = 0;
    wq.post(b.data(0), 0x100, b.key);
    a.send_frame(&f1);
    let got = wq.drain();
    assert_eq!(
        (got.len(), got[0].wqe_counter(), got[0].opcode()),
        (1, 0, 2)
    );
}

#[test]
fn work_queue_creation_checks() {
    let f = Fabric::new();
    let no_stride = NicConfig {
        eth: EthConfig {
            striding_rq: false,
            ..EthConfig::default()
        },
        ..eth_config()
    };
    let nb = Nic::new(&f, no_stride);
    let b = Raw::new(&nb);
    assert_eq!(nb.eth_caps().striding, None);
    let p = mlx5_hw::WqParams {
        pdn: b.pd,
        cqn: b.rcq.cqn,
        buf: b.data(0),
        log_wqe_cnt: 2,
        log_stride: 5,
        dbrec: b.data(0x1000),
        striding: Some(mlx5_hw::Striding {
            log_stride_bytes: 6,
            log_num_strides: 3,
            two_byte_shift: false,
        }),
        ..Default::default()
    };
    // SAFETY: the ring and record are in `b`'s memory, which outlives the (failing) call.
    assert_eq!(
        unsafe { nb.create_wq(&p) },
        Err(HwError::NotSupported("striding RQ"))
    );
    let na = Nic::new(&f, eth_config());
    let a = Raw::new(&na);
    let caps = na.eth_caps().striding.unwrap();
    assert_eq!(
        (
            caps.min_log_stride_bytes,
            caps.max_log_stride_bytes,
            caps.min_log_num_strides,
            caps.max_log_num_strides
        ),
        (6, 13, 3, 16)
    );
    let bad = [(5, 3, 5), (14, 3, 5), (6, 2, 5), (6, 17, 5), (6, 3, 4)];
    for (bytes, count, log_stride) in bad {
        let q = mlx5_hw::WqParams {
            pdn: a.pd,
            cqn: a.rcq.cqn,
            buf: a.data(0),
            dbrec: a.data(0x1000),
            log_stride,
            striding: Some(mlx5_hw::Striding {
                log_stride_bytes: bytes,
                log_num_strides: count,
                two_byte_shift: false,
            }),
            ..p
        };
        // SAFETY: as above.
        let e = unsafe { na.create_wq(&q) };
        assert!(
            matches!(e, Err(HwError::InvalidParam(_))),
            "{bytes} {count}"
        );
    }
}

/// A sniffer gets a copy of every frame the port receives and sends, besides the rule
/// that takes it; without the cap it is refused.
#[test]
fn a_sniffer_sees_both_directions() {
    let f = Fabric::new();
    let (na, nb) = (Nic::new(&f, eth_config()), Nic::new(&f, eth_config()));
    let mut a = Raw::new(&na);
    let (mut b, mut s) = (Raw::new(&nb), Raw::new(&nb));
    a.flow(&dmac_rule(a.mac(), 0));
    a.recv_frames(2);
    b.flow(&dmac_rule(b.mac(), 0));
    b.recv_frames(2);
    s.flow(&kind_rule(FlowKind::Sniffer));
    s.recv_frames(4);
    let ab = frame(&Pkt::udp(b.mac(), a.mac(), b"in"));
    let ba = frame(&Pkt::udp(a.mac(), b.mac(), b"out"));
    a.send_frame(&ab);
    b.send_frame(&ba);
    let copies = s.drain_recv();
    assert_eq!(copies.len(), 2);
    let mut padded = (ab.clone(), ba.clone());
    padded.0.resize(60, 0);
    padded.1.resize(60, 0);
    assert_eq!((s.received(&copies[0]), s.received(&copies[1])), padded);
    assert_eq!((b.drain_recv().len(), a.drain_recv().len()), (1, 1));
    let off = NicConfig {
        eth: EthConfig {
            sniffer: false,
            ..EthConfig::default()
        },
        ..eth_config()
    };
    let nc = Nic::new(&f, off);
    let c = Raw::new(&nc);
    assert_eq!(
        nc.create_flow(c.qp.qpn, &kind_rule(FlowKind::Sniffer)),
        Err(HwError::NotSupported("sniffer rules"))
    );
}

/// A NIC hears a frame to its own MAC only through its self-loopback; the switch never
/// sends a frame back out of the port it came in on.
#[test]
fn the_self_loopback() {
    for on in [false, true] {
        let f = Fabric::new();
        let cfg = NicConfig {
            eth: EthConfig {
                self_loopback: on,
                ..EthConfig::default()
            },
            ..eth_config()
        };
        let na = Nic::new(&f, cfg);
        let _other = Nic::new(&f, eth_config());
        let mut a = Raw::new(&na);
        a.flow(&dmac_rule(a.mac(), 0));
        a.recv_frames(2);
        let me = frame(&Pkt::udp(a.mac(), a.mac(), b"myself"));
        a.send_frame(&me);
        assert_eq!(a.drain_recv().len(), usize::from(on), "loopback {on}");
        // The switch learned the source on A's port before forwarding, so it filters.
        assert_eq!(na.stats().eth.tx_flooded, 0);
    }
}
