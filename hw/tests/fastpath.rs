//! The model's fast path for small inline RDMA WRITEs on RC (`hw/src/fast.rs`) is an
//! optimisation, not a behaviour: every scenario here runs twice, on two fresh fabrics, with
//! the fast paths on and off (`Nic::set_fast_paths`), and everything observable must be
//! equal: the memory the NIC writes (CQs, data), every statistic, the PCIe counters (NIC
//! and per QP) and the TLP trace, PSNs, QP states, completion and asynchronous events.
//! Each scenario also says how many WQEs the fast path must have taken, so a scenario
//! that stops exercising it fails too.

mod common;

use common::*;
use mlx5_hw::{
    Access, AsyncEvent, ContextCache, Event, Fault, NicConfig, PcieConfig, PcieCounters, QpPsn,
    QpState, Stats, Tlp, TranslationCache,
};

/// What one side shows after a scenario.
#[derive(Debug, PartialEq)]
struct Seen {
    /// Host memory from the send CQ to the end of the data region (the rings before it
    /// hold the test's own WQEs, whose remote addresses differ between the two runs).
    mem: Vec<u8>,
    stats: Stats,
    pcie: PcieCounters,
    qp_pcie: Option<PcieCounters>,
    tlps: Vec<Tlp>,
    psn: QpPsn,
    state: QpState,
    events: Vec<Event>,
    async_events: Vec<AsyncEvent>,
}

fn seen(s: &Side) -> Seen {
    let n = &s.nic;
    let qpn = s.qp.qpn;
    Seen {
        mem: s.mem.read(SCQ, MEM_LEN - SCQ),
        stats: n.stats(),
        pcie: n.pcie(),
        qp_pcie: n.qp_pcie(qpn),
        tlps: n.take_tlps(),
        psn: n.qp_psn(qpn).unwrap(),
        state: n.qp_state(qpn).unwrap(),
        events: std::iter::from_fn(|| n.poll_event()).collect(),
        async_events: std::iter::from_fn(|| n.poll_async_event()).collect(),
    }
}

/// A deterministic device clock (CQE timestamps step per CQE, not with the host's time).
fn stepped(cfg: NicConfig) -> NicConfig {
    NicConfig {
        clock_step: 1,
        ..cfg
    }
}

/// Run `script` on a fresh pair with the fast paths `fast`; what both sides show, and how
/// many WQEs the fast path took on the requester `a`.
fn run(
    fast: bool,
    cfg: Cfg,
    conn: Conn,
    nic_cfg: &NicConfig,
    script: &dyn Fn(&mut Side, &mut Side),
) -> (Seen, Seen, u64) {
    let (_f, mut a, mut b) = pair_with(cfg, conn, stepped(nic_cfg.clone()));
    for s in [&a, &b] {
        s.nic.set_fast_paths(fast);
        s.nic.set_tlp_trace(true);
    }
    script(&mut a, &mut b);
    let taken = a.nic.fast_path_wqes();
    (seen(&a), seen(&b), taken)
}

/// The scenario gives the same everything both ways, and the fast path took `taken` WQEs.
fn same_both_ways(
    cfg: Cfg,
    conn: Conn,
    nic_cfg: NicConfig,
    taken: u64,
    script: &dyn Fn(&mut Side, &mut Side),
) {
    let (fa, fb, fast_taken) = run(true, cfg, conn, &nic_cfg, script);
    let (sa, sb, slow_taken) = run(false, cfg, conn, &nic_cfg, script);
    assert_eq!(slow_taken, 0, "fast paths off");
    assert_eq!(fast_taken, taken, "WQEs taken by the fast path");
    assert_eq!(fa.stats, sa.stats, "requester statistics");
    assert_eq!(fb.stats, sb.stats, "responder statistics");
    assert_eq!(fa.tlps, sa.tlps, "requester TLP trace");
    assert_eq!(fb.tlps, sb.tlps, "responder TLP trace");
    assert_eq!(fa, sa, "requester");
    assert_eq!(fb, sb, "responder");
}

/// Post an 8-byte inline WRITE of `v` to the responder's data at `off`, and ring.
fn write8(a: &mut Side, b: &Side, off: usize, v: u64, flags: u8) {
    a.write_inline(b.data(off), b.key, &v.to_ne_bytes(), flags);
    a.ring();
}

#[test]
fn eight_byte_writes_signaled_every_fourth_over_the_ring_wrap() {
    // 200 WQEs on a 64-BB ring (three wraps), a CQE every fourth on a 64-entry CQ polled
    // as it goes.
    same_both_ways(
        Cfg::default(),
        Conn::default(),
        NicConfig::default(),
        200,
        &|a, b| {
            for i in 0..200u64 {
                let flags = if i % 4 == 3 { SIGNALED } else { 0 };
                write8(a, b, (i as usize * 8) % 4096, i * 0x0101, flags);
                if i % 32 == 31 {
                    assert_eq!(a.drain_send().len(), 8);
                }
            }
        },
    );
}

#[test]
fn every_inline_length_from_0_to_13_bytes() {
    // 1..=12 bytes fit the fast path; 0 and 13 (two 16-byte inline chunks) go the general
    // way. Each at an offset that crosses 64-byte lines.
    same_both_ways(
        Cfg::default(),
        Conn::default(),
        NicConfig::default(),
        12,
        &|a, b| {
            for len in 0..=13usize {
                let payload: Vec<u8> = (0..len as u8).map(|x| x ^ 0xa5).collect();
                a.write_inline(b.data(60 + 100 * len), b.key, &payload, SIGNALED);
                a.ring();
            }
            assert_eq!(a.drain_send().len(), 14);
        },
    );
}

#[test]
fn blueflame_copies_matching_and_differing_from_the_ring() {
    same_both_ways(
        Cfg::default(),
        Conn::default(),
        NicConfig::default(),
        4,
        &|a, b| {
            for i in 0..4u64 {
                a.write_inline(b.data(8 * i as usize), b.key, &i.to_ne_bytes(), SIGNALED);
                if i % 2 == 0 {
                    a.ring_bf();
                    continue;
                }
                // The copy carries other payload bytes than the ring (a driver bug the
                // model counts in `bf_mismatch`; the copy is what executes).
                a.mem.put_be32(DBREC + 4, a.sq_pi.into());
                let slot = usize::from(a.last_wqe) % 64;
                let mut chunk = a.mem.read(SQ + slot * 64, 64);
                chunk[36] ^= 0xff;
                a.nic
                    .mmio_write(a.qp.uar, a.qp.bf_offset + a.bf_half, &chunk);
                a.bf_half ^= a.qp.bf_size;
            }
            assert_eq!(a.drain_send().len(), 4);
        },
    );
}

#[test]
fn several_wqes_on_one_doorbell_and_a_nop_go_the_general_way() {
    same_both_ways(
        Cfg::default(),
        Conn::default(),
        NicConfig::default(),
        1,
        &|a, b| {
            for i in 0..3u64 {
                a.write_inline(b.data(8 * i as usize), b.key, &i.to_ne_bytes(), SIGNALED);
            }
            a.ring();
            a.post_op(NOP, 0, SIGNALED, 0, &[]);
            a.ring();
            write8(a, b, 64, 7, SIGNALED);
            assert_eq!(a.drain_send().len(), 5);
        },
    );
}

#[test]
fn a_bad_key_and_a_range_outside_the_region_fail_as_before() {
    for (off, key_xor) in [(0usize, 0x100u32), (DATA_LEN - 4, 0)] {
        same_both_ways(
            Cfg::default(),
            Conn::default(),
            NicConfig::default(),
            1,
            &move |a, b| {
                write8(a, b, 0, 1, SIGNALED);
                a.write_inline(b.data(off), b.key ^ key_xor, &[1; 8], SIGNALED);
                a.ring();
                // Flushed behind the error.
                write8(a, b, 16, 2, SIGNALED);
                let c = a.drain_send();
                assert_eq!(c.len(), 3);
                assert_eq!((c[1].opcode, c[2].opcode), (REQ_ERR, REQ_ERR));
            },
        );
    }
}

#[test]
fn a_responder_without_remote_write_refuses_as_before() {
    let conn = Conn {
        access: Access::LOCAL_WRITE | Access::REMOTE_READ,
        ..Conn::default()
    };
    same_both_ways(Cfg::default(), conn, NicConfig::default(), 0, &|a, b| {
        write8(a, b, 0, 1, SIGNALED);
        assert_eq!(a.drain_send()[0].opcode, REQ_ERR);
    });
}

#[test]
fn malformed_control_segments_fail_as_before() {
    // A wrong QPN, a wrong index, an opmod on the WRITE, and a WRITE longer than the
    // NIC's largest message: each fails on the general path.
    for (byte, xor) in [(6usize, 0x01u8), (2, 0x01), (0, 0x01)] {
        same_both_ways(
            Cfg::default(),
            Conn::default(),
            NicConfig::default(),
            0,
            &move |a, b| {
                let w = a.wqe(
                    WRITE,
                    0,
                    SIGNALED,
                    0,
                    &[raddr_seg(b.data(0), b.key), inline_seg(&[3; 8])],
                );
                let mut w = w;
                w[byte] ^= xor;
                a.post(&w);
                a.ring();
                a.drain_send();
            },
        );
    }
    let small = NicConfig {
        max_msg_sz: 4,
        ..NicConfig::default()
    };
    same_both_ways(Cfg::default(), Conn::default(), small, 1, &|a, b| {
        a.write_inline(b.data(0), b.key, &[5; 4], SIGNALED);
        a.ring();
        write8(a, b, 8, 6, SIGNALED);
        let c = a.drain_send();
        assert_eq!((c[0].opcode, c[1].opcode), (REQ, REQ_ERR));
    });
}

#[test]
fn psns_wrap_at_24_bits() {
    let conn = Conn {
        sq_psn: 0xff_fffd,
        rq_psn: 0xff_fffd,
        ..Conn::default()
    };
    same_both_ways(Cfg::default(), conn, NicConfig::default(), 6, &|a, b| {
        for i in 0..6 {
            write8(a, b, 8 * i, i as u64, 0);
        }
    });
}

#[test]
fn a_full_send_cq_makes_the_qp_fatal_as_before() {
    // A 2-entry CQ never polled: the third signaled WRITE overruns it.
    let cfg = Cfg {
        log_cq: 1,
        ..Cfg::default()
    };
    same_both_ways(cfg, Conn::default(), NicConfig::default(), 3, &|a, b| {
        for i in 0..5 {
            write8(a, b, 8 * i, 1, SIGNALED);
        }
    });
}

#[test]
fn faults_go_the_general_way_or_act_the_same() {
    let a_qpn = 0x100;
    for (fault, on_responder, taken) in [
        (
            Fault::LosePackets {
                qpn: None,
                count: 1,
            },
            false,
            0,
        ),
        (
            Fault::LoseResponses {
                qpn: None,
                count: 1,
            },
            false,
            0,
        ),
        (Fault::DelayCqes(true), false, 3),
        (Fault::DeferExecution(true), false, 0),
        (
            Fault::CorruptPayload {
                qpn: None,
                count: 2,
            },
            true,
            3,
        ),
        (
            Fault::Rnr {
                qpn: Some(a_qpn),
                count: 1,
            },
            true,
            3,
        ),
    ] {
        same_both_ways(
            Cfg::default(),
            Conn::default(),
            NicConfig::default(),
            taken,
            &move |a, b| {
                if on_responder {
                    b.nic.inject(fault);
                } else {
                    a.nic.inject(fault);
                }
                for i in 0..3 {
                    write8(a, b, 8 * i, 9, SIGNALED);
                }
                a.nic.progress();
                a.nic.progress();
                a.drain_send();
            },
        );
    }
}

#[test]
fn link_presets_caches_and_dllps_count_the_same() {
    let cached = PcieConfig {
        context_cache: Some(ContextCache::new(2)),
        translation_cache: Some(TranslationCache::new(2).with_rings()),
        dllps: true,
        mps: 128,
        mps_aligned_writes: true,
        ..PcieConfig::default()
    };
    for pcie in [cached, PcieConfig::pcie_bench(), PcieConfig::kalia()] {
        let nic_cfg = NicConfig {
            pcie,
            ..NicConfig::default()
        };
        same_both_ways(Cfg::default(), Conn::default(), nic_cfg, 8, &|a, b| {
            // Payloads crossing a 128-byte (MPS-aligned) line, a 4 KiB page, and not.
            for (i, off) in [0usize, 124, 4092, 8192, 250, 4096, 60, 12284]
                .into_iter()
                .enumerate()
            {
                write8(a, b, off, i as u64, SIGNALED);
            }
            assert_eq!(a.drain_send().len(), 8);
        });
    }
}

#[test]
fn an_on_demand_key_faults_as_before() {
    same_both_ways(
        Cfg::default(),
        Conn::default(),
        NicConfig::default(),
        1,
        &|a, b| {
            // SAFETY: the range is the responder's data region, which `b` keeps.
            let odp = unsafe {
                b.nic.reg_mr(
                    b.pd,
                    b.data(0),
                    DATA_LEN as u64,
                    all_access() | Access::ON_DEMAND,
                )
            }
            .unwrap();
            a.write_inline(b.data(0), odp, &[1; 8], SIGNALED);
            a.ring();
            a.nic.progress();
            a.nic.progress();
            write8(a, b, 64, 2, SIGNALED);
            a.drain_send();
        },
    );
}
