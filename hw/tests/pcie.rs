//! Exact PCIe accounting per posting mode (defaults: MPS 256, MRRS 512, RCB 128,
//! MWr/MRd overhead 24, CplD overhead 20).

mod common;
use common::*;
use mlx5_hw::{Dir, NicConfig, PcieConfig, PcieCounters, Purpose, TlpKind};

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

#[test]
fn large_transfers_split_at_mrrs_rcb_and_mps() {
    let (_f, mut a, mut b) = pair();
    // A 1000-byte gather from offset 0x40: MRd [0x40, 0x240) and [0x240, 0x428) (MRRS 512),
    // each answered by CplDs cut at 128-byte boundaries: 64+128+128+128+64 and
    // 64+128+128+128+40. At the responder, MWr of at most MPS: 256+256+256+232.
    let (da, db) = measure(&mut a, &mut b, write_1000_from_0x40);
    assert_eq!(
        da,
        counters(
            1,
            1 + 2,
            1 + 10,
            1,
            32 + 84 + 1000 + 10 * 20,
            24 * 3 + 88,
            8 + 64 + 1000,
            64
        )
    );
    assert_eq!(db, counters(0, 0, 0, 4, 0, 1000 + 4 * 24, 0, 1000));
    // A 600-byte READ: the responder reads [0x400, 0x658) as 512 + 88 (5 CplDs), the
    // requester writes the result as 256 + 256 + 88.
    let (da, db) = measure(&mut a, &mut b, |a, b| {
        let dst = a.data(0);
        a.post_op(
            READ,
            0,
            0,
            0,
            &[raddr_seg(b.data(0x400), b.key), data_seg(600, a.key, dst)],
        );
        a.ring();
    });
    assert_eq!(db, counters(0, 2, 5, 0, 600 + 5 * 20, 48, 600, 0));
    assert_eq!(
        da,
        counters(1, 1, 1, 3, 32 + 84, 24 + 600 + 3 * 24, 72, 600)
    );
    // The same gather on a link with MPS 128, MRRS 256, RCB 64: 4 MRd (256, 256, 256, 232)
    // answered by 16 CplDs of 64 (the last 40), and 8 MWr at the responder (7 x 128 + 104).
    let small = PcieConfig {
        mps: 128,
        mrrs: 256,
        rcb: 64,
        ..PcieConfig::default()
    };
    a.nic.set_pcie_config(small);
    b.nic.set_pcie_config(small);
    let (da, db) = measure(&mut a, &mut b, write_1000_from_0x40);
    assert_eq!(
        da,
        counters(
            1,
            1 + 4,
            1 + 16,
            1,
            32 + 84 + 1000 + 16 * 20,
            24 * 5 + 88,
            8 + 64 + 1000,
            64
        )
    );
    assert_eq!(db, counters(0, 0, 0, 8, 0, 1000 + 8 * 24, 0, 1000));
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
    let (da, db) = measure(&mut a, &mut b, |a, b| {
        for i in 0..16 {
            let flags = if i == 15 { SIGNALED } else { 0 };
            a.write_inline(b.data(i * 8), b.key, &[i as u8; 8], flags);
        }
        a.ring();
    });
    // 1024 bytes of ring: 2 MRd (MRRS 512) answered by 8 CplD of 128 (RCB).
    assert_eq!(
        da,
        counters(1, 2, 8, 1, 32 + 8 * 148, 48 + 88, 8 + 1024, 64)
    );
    assert_eq!(db, counters(0, 0, 0, 16, 0, 16 * 32, 0, 128));
    assert_eq!(a.drain_send().len(), 1);
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
