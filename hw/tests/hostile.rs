//! Hostile bytes into the model: random WQEs (behind a control segment that names the QP and
//! the WQE index, so the doorbell is taken), random receive WQEs and random MMIO. The model
//! must never panic or stall: a WQE it cannot execute fails with an error CQE and the QP
//! goes to ERR; malformed MMIO is counted and ignored.
//!
//! Deterministic: each case derives from a splitmix64 seed printed on failure; run one with
//! `HOSTILE_SEED=<n> cargo test -p mlx5-hw --test hostile`.

mod common;

use common::rng::{seeds, Rng};
use common::*;
use mlx5_hw::{NicConfig, QpState};

/// Syndromes a send-side error CQE may carry (PRM; `MLX5_CQE_SYNDROME_*`).
const SEND_SYNDROMES: [u8; 9] = [0x01, 0x02, 0x04, 0x05, 0x12, 0x13, 0x14, 0x15, 0x16];

/// Connected pair whose retries end quickly, so nothing can wait for ever.
fn short_retry_pair() -> (std::sync::Arc<mlx5_hw::Fabric>, Side, Side) {
    let conn = Conn {
        retry_cnt: 1,
        rnr_retry: 1,
        ..Conn::default()
    };
    pair_with(Cfg::default(), conn, NicConfig::default())
}

/// Timer steps on both NICs, then every send CQE of `a`.
fn settle(a: &mut Side, b: &Side) -> Vec<Cqe> {
    for _ in 0..8 {
        a.nic.progress();
        b.nic.progress();
    }
    a.drain_send()
}

/// Random bytes after a control segment with the right QPN and index (and CE set): CQEs
/// say how it ended (success, or an error with a send syndrome, flushes after it and the
/// QP in ERR); never a panic, never a stall.
#[test]
fn random_wqes_fail_with_an_error_cqe_or_run() {
    for seed in seeds(400) {
        let mut r = Rng(seed);
        let (_f, mut a, b) = short_retry_pair();
        let bbs = 1 + r.below(4) as usize;
        let mut w = r.bytes(64 * bbs);
        // Opcode: a supported one half of the time, anything otherwise.
        let opcodes = [
            NOP, SEND, SEND_IMM, SEND_INVAL, WRITE, WRITE_IMM, READ, CS, FA,
        ];
        let opcode = if r.below(2) == 0 {
            opcodes[r.below(opcodes.len() as u64) as usize]
        } else {
            r.next() as u8
        };
        let ds = if r.below(2) == 0 {
            (4 * bbs) as u8 - r.below(4) as u8
        } else {
            r.next() as u8
        };
        let c = ctrl(
            opcode,
            w[0],
            a.sq_pi,
            a.qp.qpn,
            ds,
            w[11] | SIGNALED,
            u32::from_be_bytes([w[12], w[13], w[14], w[15]]),
        );
        w[..16].copy_from_slice(&c);
        a.post(&w);
        if r.below(2) == 0 {
            a.ring_bf();
        }
        // An 8-byte doorbell as well: a BlueFlame copy the model dropped (a ds larger than
        // the copy) leaves the WQE to this; one it took makes this a counted repeat.
        a.ring();
        let cqes = settle(&mut a, &b);
        let what = format!("seed {seed}: opcode {opcode:#x} ds {ds} bbs {bbs}: {cqes:?}");
        // The first WQE is signaled, so its CQE comes. WQEBBs past its `ds` are parsed as
        // further WQEs. Successes, then at most one error, then only flushes, in WQE order.
        assert!(!cqes.is_empty(), "no CQE for a signaled WQE: {what}");
        assert_eq!(cqes[0].wqe_counter, 0, "{what}");
        let first_err = cqes.iter().position(|c| c.opcode != REQ);
        for (i, c) in cqes.iter().enumerate() {
            assert!(i == 0 || c.wqe_counter > cqes[i - 1].wqe_counter, "{what}");
            assert!((c.wqe_counter as usize) < bbs, "{what}");
            match first_err {
                Some(e) if i == e => {
                    assert_eq!(c.opcode, REQ_ERR, "{what}");
                    assert!(SEND_SYNDROMES.contains(&c.syndrome), "{what}");
                }
                Some(e) if i > e => {
                    assert_eq!((c.opcode, c.syndrome), (REQ_ERR, 0x05), "{what}");
                }
                _ => assert_eq!(c.opcode, REQ, "{what}"),
            }
        }
        let state = if first_err.is_some() {
            QpState::Err
        } else {
            QpState::Rts
        };
        assert_eq!(a.state(), state, "{what}");
    }
}

/// Random receive WQEs consumed by a valid SEND: the responder reports a RESP_ERR (or
/// scatters the message where its keys allow) and the requester learns the outcome.
#[test]
fn random_receive_wqes_fail_on_both_sides_or_receive() {
    for seed in seeds(200) {
        let mut r = Rng(seed);
        let (_f, mut a, mut b) = short_retry_pair();
        let stride = 1usize << b.cfg.log_rq_stride;
        let mut wqe = r.bytes(stride);
        if r.below(2) == 0 {
            // One entry of our own key in range, then random ones.
            wqe[..16].copy_from_slice(&data_seg(64, b.key, b.data(0)));
        }
        b.mem.write(RQ, &wqe);
        b.rq_pi = 1;
        b.mem.put_be32(DBREC, 1);
        let len = 1 + r.below(200) as usize;
        let payload = r.bytes(len);
        let w = a.wqe(SEND, 0, SIGNALED, 0, &[inline_seg(&payload)]);
        a.post(&w);
        a.ring();
        let sent = settle(&mut a, &b);
        let got = b.drain_recv();
        let what = format!("seed {seed}: send {sent:?} recv {got:?}");
        assert_eq!(sent.len(), 1, "{what}");
        assert_eq!(got.len(), 1, "{what}");
        if got[0].opcode == RESP_ERR {
            assert!([0x01, 0x04].contains(&got[0].syndrome), "{what}");
            assert_eq!(b.state(), QpState::Err, "{what}");
            assert_eq!(sent[0].opcode, REQ_ERR, "{what}");
            assert!([0x12, 0x14].contains(&sent[0].syndrome), "{what}");
        } else {
            assert_eq!(
                (got[0].opcode, got[0].byte_cnt),
                (RESP_SEND, payload.len() as u32),
                "{what}"
            );
            assert_eq!(sent[0].opcode, REQ, "{what}");
        }
    }
}

/// MMIO of random size at random offsets of every UAR page number nearby: ignored and
/// counted unless it is a well-formed doorbell, and the QP still works afterwards.
#[test]
fn random_mmio_is_counted_and_ignored() {
    for seed in seeds(50) {
        let mut r = Rng(seed);
        let (_f, mut a, b) = pair();
        for _ in 0..200 {
            let uar = a.qp.uar.wrapping_add(r.below(3) as u32).wrapping_sub(1);
            let offset = r.below(0x1000) as u32 & !(r.below(2) as u32 * 7);
            let len = [1usize, 4, 8, 8, 16, 64, 64, 128][r.below(8) as usize];
            let data = r.bytes(len);
            a.nic.mmio_write(uar, offset, &data);
        }
        let s = a.nic.stats();
        assert_eq!(s.doorbells, 0, "seed {seed}: nothing was posted: {s:?}");
        assert_eq!(a.drain_send(), [], "seed {seed}");
        // Still usable: a WRITE lands and completes. (A stray chunk may have left a half
        // BlueFlame copy behind; the 8-byte doorbell does not depend on it.)
        a.write_inline(b.data(0), b.key, &[seed as u8; 8], SIGNALED);
        a.ring();
        let c = a.drain_send();
        assert_eq!(c.len(), 1, "seed {seed}");
        assert_eq!((c[0].opcode, c[0].syndrome), (REQ, 0), "seed {seed}");
        assert_eq!(b.read_data(0, 8), [seed as u8; 8], "seed {seed}");
    }
}
