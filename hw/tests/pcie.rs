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
        dllps: 0,
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
        let w = a.wqe(
            WRITE,
            0,
            SIGNALED,
            0,
            &[raddr_seg(b.data(0), b.key), data_seg(32, a.key, a.data(0))],
        );
        a.post(&w);
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
        let w = a.wqe(
            WRITE,
            0,
            SIGNALED,
            0,
            &[raddr_seg(b.data(0), b.key), inline_seg(&[5; 12])],
        );
        assert_eq!(w.len(), 48);
        a.post(&w);
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
            let w = a.wqe(
                WRITE,
                0,
                flags,
                0,
                &[raddr_seg(b.data(0), b.key), inline_seg(&[5; 12])],
            );
            a.post(&w);
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
fn blueflame_two_chunks() {
    let (_f, mut a, mut b) = pair();
    let (da, db) = measure(&mut a, &mut b, |a, b| {
        let w = a.wqe(
            WRITE,
            0,
            SIGNALED,
            0,
            &[raddr_seg(b.data(0), b.key), inline_seg(&[6; 60])],
        );
        assert_eq!(w.len(), 96, "2 BBs");
        a.post(&w);
        a.ring_bf();
    });
    assert_eq!(da, counters(2, 0, 0, 1, 2 * 88, 88, 128, 64));
    assert_eq!(db, counters(0, 0, 0, 1, 0, 84, 0, 60));
    assert_eq!(b.read_data(0, 60), vec![6; 60]);
}

#[test]
fn batch_of_16_on_one_doorbell() {
    let (_f, mut a, mut b) = pair();
    let (da, db) = measure(&mut a, &mut b, |a, b| {
        for i in 0..16 {
            let flags = if i == 15 { SIGNALED } else { 0 };
            let w = a.wqe(
                WRITE,
                0,
                flags,
                0,
                &[raddr_seg(b.data(i * 8), b.key), inline_seg(&[i as u8; 8])],
            );
            a.post(&w);
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
        let w = a.wqe(
            READ,
            0,
            SIGNALED,
            0,
            &[
                raddr_seg(b.data(0x400), b.key),
                data_seg(64, a.key, a.data(0)),
            ],
        );
        a.post(&w);
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
        let w = a.wqe(SEND, 0, 0, 0, &[inline_seg(&[1; 32])]);
        a.post(&w);
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
        let w = a.wqe(
            WRITE,
            0,
            0,
            0,
            &[raddr_seg(b.data(0x10), b.key), inline_seg(&[1; 32])],
        );
        a.post(&w);
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
    let w = a.wqe(
        WRITE,
        0,
        SIGNALED,
        0,
        &[raddr_seg(b.data(0), b.key), inline_seg(&[5; 12])],
    );
    a.post(&w);
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
    assert_eq!(a.nic.pcie().dllps, 4);
    assert!(a.nic.take_tlps().is_empty());
}
