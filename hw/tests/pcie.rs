//! Exact PCIe accounting per posting mode (defaults, `PcieConfig::pcie_bench()`: MPS 256,
//! MRRS 512, RCB 128 with completions up to MPS, MWr/MRd overhead 24, CplD overhead 20),
//! and of the optional traffic: RCB-sized completions, BlueFlame eviction, EQ re-arm, the
//! context cache and the WQE re-fetch on retransmission.

mod common;
use common::*;
use mlx5_hw::{
    Completions, ContextCache, Dir, Fault, Nic, NicConfig, PcieConfig, PcieCounters, Purpose,
    TlpKind, TranslationCache,
};

#[allow(clippy::too_many_arguments)]
fn counters(
    mmio: u64,
    mrd: u64,
    cpl: u64,
    mwr: u64,
    bytes_down: u64,
    bytes_up: u64,
    payload_down: u64,
    payload_up: u64,
) -> PcieCounters {
    PcieCounters {
        mmio_writes: mmio,
        dma_reads: mrd,
        completions: cpl,
        dma_writes: mwr,
        tlps_down: mmio + cpl,
        tlps_up: mrd + mwr,
        bytes_down,
        bytes_up,
        payload_down,
        payload_up,
        ..PcieCounters::default()
    }
}

/// Run `f` and return the requester's and responder's counter deltas, checking that the
/// per-QP counters saw the same as the whole link.
fn measure(
    a: &mut Side,
    b: &mut Side,
    f: impl FnOnce(&mut Side, &mut Side),
) -> (PcieCounters, PcieCounters) {
    let (a0, b0) = (a.nic.pcie(), b.nic.pcie());
    let (qa0, qb0) = (
        a.nic.qp_pcie(a.qp.qpn).unwrap(),
        b.nic.qp_pcie(b.qp.qpn).unwrap(),
    );
    f(a, b);
    let (da, db) = (a.nic.pcie() - a0, b.nic.pcie() - b0);
    assert_eq!(a.nic.qp_pcie(a.qp.qpn).unwrap() - qa0, da);
    assert_eq!(b.nic.qp_pcie(b.qp.qpn).unwrap() - qb0, db);
    (da, db)
}

#[test]
fn doorbell_wqe_fetch_gather_and_cqe() {
    let (_f, mut a, mut b) = pair();
    let (da, db) = measure(&mut a, &mut b, |a, b| {
        a.post_op(
            WRITE,
            0,
            SIGNALED,
            0,
            &[raddr_seg(b.data(0), b.key), data_seg(32, a.key, a.data(0))],
        );
        a.ring();
    });
    // Doorbell 8+24; fetch MRd 24 + CplD 64+20; gather MRd 24 + CplD 32+20; CQE 64+24.
    assert_eq!(
        da,
        counters(1, 2, 2, 1, 32 + 84 + 52, 24 + 24 + 88, 8 + 64 + 32, 64)
    );
    // The payload lands at the responder: one MWr of 32.
    assert_eq!(db, counters(0, 0, 0, 1, 0, 56, 0, 32));
}

#[test]
fn doorbell_inline_signaled() {
    let (_f, mut a, mut b) = pair();
    let (da, db) = measure(&mut a, &mut b, |a, b| {
        let idx = a.write_inline(b.data(0), b.key, &[5; 12], SIGNALED);
        assert_eq!(a.sq_pi.wrapping_sub(idx), 1, "one WQEBB");
        a.ring();
    });
    assert_eq!(da, counters(1, 1, 1, 1, 32 + 84, 24 + 88, 8 + 64, 64));
    assert_eq!(db, counters(0, 0, 0, 1, 0, 36, 0, 12));
}

#[test]
fn blueflame_inline_signaled_and_unsignaled() {
    let (_f, mut a, mut b) = pair();
    for (flags, want) in [
        (SIGNALED, counters(1, 0, 0, 1, 88, 88, 64, 64)),
        (0, counters(1, 0, 0, 0, 88, 0, 64, 0)),
    ] {
        let (da, _) = measure(&mut a, &mut b, |a, b| {
            a.write_inline(b.data(0), b.key, &[5; 12], flags);
            a.ring_bf();
        });
        assert_eq!(da, want);
    }
    let s = a.nic.stats();
    assert_eq!(
        (s.bf_writes, s.bf_used, s.bf_mismatch, s.doorbells),
        (2, 2, 0, 2)
    );
}

#[test]
fn blueflame_128_byte_wqe() {
    let (_f, mut a, mut b) = pair();
    let (da, db) = measure(&mut a, &mut b, |a, b| {
        // ctrl 16 + raddr 16 + inline header 4 + 92 bytes = 128 bytes, 8 DS, 2 chunks.
        let w = a.wqe(
            WRITE,
            0,
            SIGNALED,
            0,
            &[raddr_seg(b.data(0), b.key), inline_seg(&[6; 92])],
        );
        assert_eq!((w.len(), w[7] & 0x3f), (128, 8));
        a.post(&w);
        a.ring_bf();
    });
    // Two 64-byte MWr down, no fetch, the CQE up.
    assert_eq!(da, counters(2, 0, 0, 1, 2 * 88, 88, 128, 64));
    assert_eq!(db, counters(0, 0, 0, 1, 0, 116, 0, 92));
    assert_eq!(b.read_data(0, 92), vec![6; 92]);
    assert_eq!((a.nic.stats().bf_used, a.nic.stats().bf_writes), (1, 2));
}

/// A signaled 1000-byte RDMA WRITE gathered from data offset 0x40 to the peer's 0x10.
fn write_1000_from_0x40(a: &mut Side, b: &mut Side) {
    let src = a.data(0x40);
    a.post_op(
        WRITE,
        0,
        SIGNALED,
        0,
        &[raddr_seg(b.data(0x10), b.key), data_seg(1000, a.key, src)],
    );
    a.ring();
}

/// The requester's counters of [`write_1000_from_0x40`] with `cpls` gather completions in
/// `mrds` read requests (plus the doorbell, the 64-byte WQE fetch and the CQE).
fn write_1000(mrds: u64, cpls: u64) -> PcieCounters {
    counters(
        1,
        1 + mrds,
        1 + cpls,
        1,
        32 + 84 + 1000 + cpls * 20,
        24 * (1 + mrds) + 88,
        8 + 64 + 1000,
        64,
    )
}

/// Sets the link of both NICs.
fn set_links(a: &Side, b: &Side, cfg: PcieConfig) {
    a.nic.set_pcie_config(cfg);
    b.nic.set_pcie_config(cfg);
}

/// The default link with `completions`.
fn split(completions: Completions) -> PcieConfig {
    PcieConfig {
        completions,
        ..PcieConfig::default()
    }
}

#[test]
fn large_transfers_split_at_mrrs_rcb_and_mps() {
    let (_f, mut a, mut b) = pair();
    // A 1000-byte gather from offset 0x40: MRd [0x40, 0x240) and [0x240, 0x428) (MRRS 512).
    // Completions up to MPS, each ending on a 128-byte boundary: 192+256+64 and
    // 192+256+40. At the responder, MWr of at most MPS: 256+256+256+232.
    let (da, db) = measure(&mut a, &mut b, write_1000_from_0x40);
    assert_eq!(da, write_1000(2, 6));
    assert_eq!(db, counters(0, 0, 0, 4, 0, 1000 + 4 * 24, 0, 1000));
    // A 600-byte READ: the responder reads [0x400, 0x658) as 512 + 88 (256+256 and 88: 3
    // CplDs), the requester writes the result as 256 + 256 + 88.
    let read_600 = |a: &mut Side, b: &mut Side| {
        let dst = a.data(0);
        a.post_op(
            READ,
            0,
            0,
            0,
            &[raddr_seg(b.data(0x400), b.key), data_seg(600, a.key, dst)],
        );
        a.ring();
    };
    let (da, db) = measure(&mut a, &mut b, read_600);
    assert_eq!(db, counters(0, 2, 3, 0, 600 + 3 * 20, 48, 600, 0));
    assert_eq!(
        da,
        counters(1, 1, 1, 3, 32 + 84, 24 + 600 + 3 * 24, 72, 600)
    );
    // RCB-sized completions (Kalia's 128 bytes): the gather's completions are cut at every
    // 128-byte boundary, 64+128+128+128+64 and 64+128+128+128+40; the READ's 512 + 88 are
    // 4 + 1 completions.
    set_links(&a, &b, split(Completions::Rcb));
    let (da, _) = measure(&mut a, &mut b, write_1000_from_0x40);
    assert_eq!(da, write_1000(2, 10));
    let (_, db) = measure(&mut a, &mut b, read_600);
    assert_eq!(db, counters(0, 2, 5, 0, 600 + 5 * 20, 48, 600, 0));
    // The same gather on a link with MPS 128, MRRS 256, RCB 64: 4 MRd (256, 256, 256, 232)
    // answered by 16 CplDs of 64 (the last 40) with RCB-sized completions, or by 8 of 128
    // (the last 104) with completions up to MPS; 8 MWr at the responder (7 x 128 + 104).
    for (completions, cpls) in [(Completions::Rcb, 16), (Completions::Mps, 8)] {
        let small = PcieConfig {
            mps: 128,
            mrrs: 256,
            rcb: 64,
            ..split(completions)
        };
        set_links(&a, &b, small);
        let (da, db) = measure(&mut a, &mut b, write_1000_from_0x40);
        assert_eq!(da, write_1000(4, cpls));
        assert_eq!(db, counters(0, 0, 0, 8, 0, 1000 + 8 * 24, 0, 1000));
    }
}

#[test]
fn presets_name_their_completion_split() {
    assert_eq!(PcieConfig::pcie_bench().completions, Completions::Mps);
    assert_eq!(PcieConfig::kalia().completions, Completions::Rcb);
    assert_eq!(PcieConfig::default(), PcieConfig::pcie_bench());
    let k = PcieConfig::kalia();
    assert_eq!(
        (k.mps, k.mrrs, k.rcb, k.mwr_overhead, k.cpld_overhead),
        (256, 512, 128, 26, 22)
    );
}

#[test]
fn destroyed_qp_traffic_stays_in_the_nic_total() {
    let (_f, mut a, b) = pair();
    a.write_inline(b.data(0), b.key, b"x", SIGNALED);
    a.ring();
    let total = a.nic.pcie();
    assert_eq!(total, a.nic.qp_pcie(a.qp.qpn).unwrap());
    a.nic.destroy_qp(a.qp.qpn).unwrap();
    assert_eq!(a.nic.qp_pcie(a.qp.qpn), None);
    assert_eq!(a.nic.pcie(), total);
}

#[test]
fn batch_of_16_on_one_doorbell() {
    let (_f, mut a, mut b) = pair();
    // 1024 bytes of ring: 2 MRd (MRRS 512) answered by 4 CplD of 256 (MPS), or by 8 of
    // 128 (RCB).
    for (completions, cpls) in [(Completions::Mps, 4), (Completions::Rcb, 8)] {
        set_links(&a, &b, split(completions));
        let (da, db) = measure(&mut a, &mut b, |a, b| {
            for i in 0..16 {
                let flags = if i == 15 { SIGNALED } else { 0 };
                a.write_inline(b.data(i * 8), b.key, &[i as u8; 8], flags);
            }
            a.ring();
        });
        assert_eq!(
            da,
            counters(1, 2, cpls, 1, 32 + 1024 + cpls * 20, 48 + 88, 8 + 1024, 64)
        );
        assert_eq!(db, counters(0, 0, 0, 16, 0, 16 * 32, 0, 128));
        assert_eq!(a.drain_send().len(), 1);
    }
}

#[test]
fn inbound_read_at_responder() {
    let (_f, mut a, mut b) = pair();
    let (da, db) = measure(&mut a, &mut b, |a, b| {
        a.post_op(
            READ,
            0,
            SIGNALED,
            0,
            &[
                raddr_seg(b.data(0x400), b.key),
                data_seg(64, a.key, a.data(0)),
            ],
        );
        a.ring();
    });
    assert_eq!(db, counters(0, 1, 1, 0, 84, 24, 64, 0));
    // Doorbell, WQE fetch, READ result MWr 64, CQE.
    assert_eq!(da, counters(1, 1, 1, 2, 32 + 84, 24 + 88 + 88, 72, 128));
}

#[test]
fn inbound_send_at_responder() {
    let (_f, mut a, mut b) = pair();
    b.recv_at(0, 64);
    b.recv_at(64, 64);
    let send = |a: &mut Side, _: &mut Side| {
        a.post_op(SEND, 0, 0, 0, &[inline_seg(&[1; 32])]);
        a.ring();
    };
    let (_, db) = measure(&mut a, &mut b, send);
    // Doorbell-record read (4 B) + receive WQE fetch (64 B stride), payload MWr 32, CQE.
    assert_eq!(db, counters(0, 2, 2, 2, 24 + 84, 24 + 24 + 56 + 88, 68, 96));
    // The second receive is already known: no record read.
    let (_, db) = measure(&mut a, &mut b, send);
    assert_eq!(db, counters(0, 1, 1, 2, 84, 24 + 56 + 88, 64, 96));
}

#[test]
fn inbound_write_at_responder() {
    let (_f, mut a, mut b) = pair();
    let (_, db) = measure(&mut a, &mut b, |a, b| {
        a.write_inline(b.data(0x10), b.key, &[1; 32], 0);
        a.ring();
    });
    assert_eq!(db, counters(0, 0, 0, 1, 0, 56, 0, 32));
}

#[test]
fn trace_and_kalia_overheads_and_dllps() {
    let cfg = NicConfig {
        pcie: PcieConfig {
            dllps: true,
            ..PcieConfig::kalia()
        },
        ..NicConfig::default()
    };
    let (_f, mut a, b) = pair_with(Cfg::default(), Conn::default(), cfg);
    a.nic.set_tlp_trace(true);
    a.write_inline(b.data(0), b.key, &[5; 12], SIGNALED);
    a.ring();
    let t = a.nic.take_tlps();
    let kinds: Vec<_> = t
        .iter()
        .map(|t| (t.dir, t.kind, t.payload, t.bytes, t.purpose))
        .collect();
    assert_eq!(
        kinds,
        vec![
            (Dir::Down, TlpKind::MWr, 8, 34, Purpose::Doorbell),
            (Dir::Up, TlpKind::MRd, 0, 26, Purpose::SendWqeFetch),
            (Dir::Down, TlpKind::CplD, 64, 86, Purpose::SendWqeFetch),
            (Dir::Up, TlpKind::MWr, 64, 90, Purpose::Cqe),
        ]
    );
    assert!(t.iter().all(|t| t.qpn == Some(a.qp.qpn)));
    // An Ack and an UpdateFC answer each of the 4 TLPs, in the opposite direction.
    let c = a.nic.pcie();
    assert_eq!((c.dllps, c.dllp_bytes_down, c.dllp_bytes_up), (8, 32, 32));
    assert_eq!((c.bytes_down, c.bytes_up), (34 + 86, 26 + 90));
    assert!(a.nic.take_tlps().is_empty());
}

/// Two NICs on one fabric with the link `pcie`, and `n` connected QP pairs between them
/// (each side with its own PD, CQs and region).
fn pairs(n: usize, pcie: PcieConfig) -> (Vec<Side>, Vec<Side>) {
    let f = mlx5_hw::Fabric::new();
    let cfg = NicConfig {
        pcie,
        ..NicConfig::default()
    };
    let (na, nb) = (Nic::new(&f, cfg.clone()), Nic::new(&f, cfg));
    let a: Vec<Side> = (0..n).map(|_| Side::new(&na, Cfg::default())).collect();
    let b: Vec<Side> = (0..n).map(|_| Side::new(&nb, Cfg::default())).collect();
    for (x, y) in a.iter().zip(&b) {
        connect_one(x, y, Conn::default());
        connect_one(y, x, Conn::default());
    }
    (a, b)
}

#[test]
fn blueflame_copies_evicted_every_third_are_fetched_from_the_ring() {
    let cfg = PcieConfig {
        bf_evict_every: 3,
        ..PcieConfig::default()
    };
    let (mut a, mut b) = pairs(1, cfg);
    let (a, b) = (&mut a[0], &mut b[0]);
    let (da, db) = measure(a, b, |a, b| {
        for i in 0..6 {
            a.write_inline(b.data(i * 8), b.key, &[i as u8; 8], 0);
            a.ring_bf();
        }
    });
    // Six 64-byte chunks down; the 3rd and 6th WQE read back from the ring (MRd 24 up,
    // CplD 64+20 down each).
    assert_eq!(
        da,
        counters(6, 2, 2, 0, 6 * 88 + 2 * 84, 2 * 24, 6 * 64 + 2 * 64, 0)
    );
    assert_eq!(db, counters(0, 0, 0, 6, 0, 6 * 32, 0, 48));
    let s = a.nic.stats();
    assert_eq!((s.bf_writes, s.bf_used, s.bf_evicted), (6, 4, 2));
    assert_eq!(
        (0..6).map(|i| b.read_data(i * 8, 1)[0]).collect::<Vec<_>>(),
        [0, 1, 2, 3, 4, 5]
    );
}

#[test]
fn eq_rearm_is_one_4_byte_mmio_per_event() {
    for eq_rearm in [false, true] {
        let cfg = PcieConfig {
            eq_rearm,
            ..PcieConfig::default()
        };
        let (mut a, mut b) = pairs(1, cfg);
        let (a, b) = (&mut a[0], &mut b[0]);
        a.arm(false, 0, false);
        a.nic.set_tlp_trace(true);
        let before = a.nic.pcie();
        a.write_inline(b.data(0), b.key, b"x", SIGNALED);
        a.ring();
        let d = a.nic.pcie() - before;
        assert!(a.nic.poll_event().is_some());
        // The QP's doorbell, fetch and CQE; then, of no QP, the EQE (64+24 up), the MSI-X
        // (4+24 up) and, when counted, the driver's EQ doorbell (4+24 down).
        let n = u64::from(eq_rearm);
        let qp = counters(1, 1, 1, 1, 32 + 84, 24 + 88, 8 + 64, 64);
        let event = counters(n, 0, 0, 2, 28 * n, 88 + 28, 4 * n, 68);
        assert_eq!(d, qp + event);
        let tail: Vec<_> = a
            .nic
            .take_tlps()
            .iter()
            .skip(4)
            .map(|t| (t.dir, t.kind, t.payload, t.purpose, t.qpn))
            .collect();
        let mut want = vec![
            (Dir::Up, TlpKind::MWr, 64, Purpose::Eqe, None),
            (Dir::Up, TlpKind::MWr, 4, Purpose::Msix, None),
        ];
        if eq_rearm {
            want.push((Dir::Down, TlpKind::MWr, 4, Purpose::EqArm, None));
        }
        assert_eq!(tail, want);
    }
}

/// `c` added up `k` times.
fn times(c: PcieCounters, k: u64) -> PcieCounters {
    (0..k).fold(PcieCounters::default(), |t, _| t + c)
}

#[test]
fn context_misses_read_each_kind_from_host_memory() {
    // A cache of no entries: every use of a context reads it.
    let cfg = PcieConfig {
        context_cache: Some(ContextCache::new(0)),
        ..PcieConfig::default()
    };
    let (mut a, mut b) = pairs(1, cfg);
    let (a, b) = (&mut a[0], &mut b[0]);
    a.nic.set_tlp_trace(true);
    let (da, db) = measure(a, b, |a, b| {
        a.post_op(
            WRITE,
            0,
            SIGNALED,
            0,
            &[raddr_seg(b.data(0), b.key), data_seg(32, a.key, a.data(0))],
        );
        a.ring();
    });
    let reads: Vec<_> = a
        .nic
        .take_tlps()
        .iter()
        .filter(|t| t.kind == TlpKind::CplD)
        .map(|t| (t.purpose, t.payload))
        .collect();
    assert_eq!(
        reads,
        [
            (Purpose::SendWqeFetch, 64),
            (Purpose::QpContext, 232),
            (Purpose::MkeyContext, 64),
            (Purpose::Gather, 32),
            (Purpose::CqContext, 64),
        ]
    );
    // The row-1 message (doorbell, WQE, gather, CQE) plus QPC 232+20, mkey 64+20 and CQC
    // 64+20 down, and their three requests up.
    assert_eq!(
        da,
        counters(
            1,
            5,
            5,
            1,
            32 + 84 + 52 + 252 + 84 + 84,
            5 * 24 + 88,
            8 + 64 + 32 + 232 + 64 + 64,
            64
        )
    );
    // The responder reads the QP's context and the rkey's before writing the payload.
    assert_eq!(db, counters(0, 2, 2, 1, 252 + 84, 48 + 56, 232 + 64, 32));
    assert_eq!(
        (a.nic.stats().context_misses, b.nic.stats().context_misses),
        (3, 2)
    );
}

/// One unsignaled 8-byte inline WRITE on each QP pair in turn; the link counters of both
/// NICs for the round.
fn round_robin(a: &mut [Side], b: &[Side]) -> (PcieCounters, PcieCounters) {
    let (a0, b0) = (a[0].nic.pcie(), b[0].nic.pcie());
    for (x, y) in a.iter_mut().zip(b) {
        x.write_inline(y.data(0), y.key, &[1; 8], 0);
        x.ring();
    }
    (a[0].nic.pcie() - a0, b[0].nic.pcie() - b0)
}

#[test]
fn context_cache_misses_grow_with_the_qps_in_use() {
    // Per message: doorbell + WQE fetch at the requester, the payload at the responder.
    let req = counters(1, 1, 1, 0, 32 + 84, 24, 8 + 64, 0);
    let resp = counters(0, 0, 0, 1, 0, 32, 0, 8);
    let qpc = counters(0, 1, 1, 0, 232 + 20, 24, 232, 0);
    let mkc = counters(0, 1, 1, 0, 64 + 20, 24, 64, 0);
    // 8 cached contexts. Round robin over n QPs: the requester uses n QP contexts, the
    // responder n QP and n key contexts. In LRU order a cyclic working set larger than the
    // cache misses on every use.
    for (n, req_miss, resp_miss) in [(1, 0, 0), (4, 0, 0), (5, 0, 1), (8, 0, 1), (9, 1, 1)] {
        let cfg = PcieConfig {
            context_cache: Some(ContextCache::new(8)),
            ..PcieConfig::default()
        };
        let (mut a, b) = pairs(n, cfg);
        let n = n as u64;
        // Cold: every context is read once.
        let (da, db) = round_robin(&mut a, &b);
        assert_eq!(da, times(req + qpc, n), "cold requester, {n} QPs");
        assert_eq!(db, times(resp + qpc + mkc, n), "cold responder, {n} QPs");
        // Warm: reads only where the working set exceeds the cache.
        let (da, db) = round_robin(&mut a, &b);
        assert_eq!(da, times(req, n) + times(qpc, n * req_miss), "{n} QPs");
        assert_eq!(
            db,
            times(resp, n) + times(qpc + mkc, n * resp_miss),
            "{n} QPs"
        );
    }
}

#[test]
fn retransmission_refetches_the_wqe_when_counted() {
    for (retry_refetch, n) in [(false, 0), (true, 1)] {
        let cfg = PcieConfig {
            retry_refetch,
            ..PcieConfig::default()
        };
        let (mut a, mut b) = pairs(1, cfg);
        let (a, b) = (&mut a[0], &mut b[0]);
        a.nic.inject(Fault::LosePackets {
            qpn: None,
            count: 1,
        });
        a.write_inline(b.data(0), b.key, b"again", SIGNALED);
        a.ring();
        a.nic.set_tlp_trace(true);
        let (da, _) = measure(a, b, |a, _| {
            a.nic.progress();
        });
        assert_eq!(a.nic.stats().retransmits, 1);
        // The retransmission: the 64-byte WQE read again (when counted), then the CQE.
        assert_eq!(da, counters(0, n, n, 1, 84 * n, 24 * n + 88, 64 * n, 64));
        let purposes: Vec<_> = a.nic.take_tlps().iter().map(|t| t.purpose).collect();
        let mut want = vec![Purpose::WqeRefetch; 2 * n as usize];
        want.push(Purpose::Cqe);
        assert_eq!(purposes, want);
        assert_eq!(b.read_data(0, 5), b"again");
    }
}

/// A WRITE of the whole 64 KiB data area with a translation cache: the requester
/// translates every page it gathers from and the responder every page it writes, one
/// 8-byte MTT read (MRd 24 B up, CplD 28 B down) per miss; registered in 2 MiB pages the
/// same range needs one translation per side (or two where it straddles a 2 MiB
/// boundary). A second WRITE of the same range hits.
#[test]
fn translation_cache_reads_one_entry_per_page_touched() {
    for (page_size, keyed) in [(4096u64, false), (4096, true), (2 << 20, true)] {
        let cfg = PcieConfig {
            translation_cache: Some(TranslationCache::new(64)),
            ..PcieConfig::default()
        };
        let (_f, mut a, b) = pair_with(
            Cfg::default(),
            Conn::default(),
            NicConfig {
                pcie: cfg,
                ..NicConfig::default()
            },
        );
        // The data areas again under keys of the page size (the common key is 4 KiB).
        let rereg = |s: &Side| {
            // SAFETY: the side's memory outlives its NIC's use of the key in this test.
            unsafe {
                s.nic
                    .reg_mr_paged(s.pd, s.data(0), DATA_LEN as u64, all_access(), page_size)
            }
            .unwrap()
        };
        let (ka, kb) = if keyed {
            (rereg(&a), rereg(&b))
        } else {
            (a.key, b.key)
        };
        let pages = |s: &Side| {
            let (first, last) = (s.data(0) / page_size, (s.data(DATA_LEN - 1)) / page_size);
            last - first + 1
        };
        let (pa, pb) = (pages(&a), pages(&b));
        for (round, (want_a, want_b)) in [(pa, pb), (0, 0)].into_iter().enumerate() {
            a.nic.set_tlp_trace(true);
            b.nic.set_tlp_trace(true);
            let (sa, sb) = (a.nic.stats(), b.nic.stats());
            a.post_op(
                WRITE,
                0,
                SIGNALED,
                0,
                &[
                    raddr_seg(b.data(0), kb),
                    data_seg(DATA_LEN as u32, ka, a.data(0)),
                ],
            );
            a.ring();
            assert_eq!(a.drain_send().len(), 1);
            let label = format!("page {page_size}, round {round}");
            assert_eq!(
                a.nic.stats().translation_misses - sa.translation_misses,
                want_a,
                "{label}"
            );
            assert_eq!(
                b.nic.stats().translation_misses - sb.translation_misses,
                want_b,
                "{label}"
            );
            for (nic, want) in [(&a.nic, want_a), (&b.nic, want_b)] {
                let t: Vec<_> = nic
                    .take_tlps()
                    .into_iter()
                    .filter(|t| t.purpose == Purpose::Translation)
                    .map(|t| (t.dir, t.kind, t.payload, t.bytes))
                    .collect();
                let one = [
                    (Dir::Up, TlpKind::MRd, 0, 24),
                    (Dir::Down, TlpKind::CplD, 8, 28),
                ];
                assert_eq!(t, one.repeat(want as usize), "{label}");
            }
        }
    }
}

/// A UD datagram received without a GRH skips the receive's first 40 bytes: its payload is
/// written from 40 bytes into the scatter entry, and the DMA writes are split where those
/// bytes cross a 4 KiB boundary (a TLP may not cross one). A 64-byte payload landing 8
/// bytes before a page's end takes two MWr; the same payload inside a page one.
#[test]
fn a_ud_payload_after_the_grh_area_is_split_at_a_page_boundary() {
    let f = mlx5_hw::Fabric::new();
    let (na, nb) = (
        Nic::new(&f, NicConfig::default()),
        Nic::new(&f, NicConfig::default()),
    );
    let mut a = ud::side(&na);
    let mut b = ud::side(&nb);
    let av = ud::av(&a, nb.lid(), None, b.qp.qpn, ud::QKEY);
    let page_in = (b.data(0) % 0x1000) as usize;
    // The writes of one datagram's receive at data offset `off` (scatter and CQE).
    let mut writes_at = |off: usize| {
        b.recv_at(off, 256);
        let before = nb.pcie().dma_writes;
        ud::send(&mut a, &av, &[0x7e; 64], SIGNALED);
        assert_eq!(a.drain_send().len(), 1);
        let c = b.drain_recv();
        assert_eq!(c.len(), 1);
        assert_eq!(b.read_data(off + 40, 64), vec![0x7e; 64]);
        nb.pcie().dma_writes - before
    };
    let inside = writes_at(0x1000 - page_in + 0x400);
    // 48 bytes before the next page: the payload's last 56 bytes on the next page.
    let crossing = writes_at(0x2000 - page_in - 48);
    assert_eq!(crossing, inside + 1);
}
