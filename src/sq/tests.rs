//! Unit tests of the send queue over plain memory.

use super::*;
use crate::null::NullQueues;
use crate::prm::{Av, CqeOpcode, Opcode};

const WRITE: SendOp = SendOp::Write(Remote {
    addr: 0x1000,
    rkey: 7,
});

/// Readiness is folded into the room check of the hot path (`limit`); a queue that is
/// not ready must still refuse first with `NotReadyToSend`, before any other check.
#[test]
fn a_queue_that_is_not_ready_refuses_everything_first() {
    let mut q = NullQueues::new(4, 8, 16).unwrap();
    q.sq.set_ready(false);
    let big = [0u8; 17];
    let refused = [
        q.sq.post(1, WRITE, Data::Inline(&[1; 8]), SendFlags::SIGNALED),
        q.sq.push(1, WRITE, Data::Inline(&[1; 8]), SendFlags::SIGNALED),
        q.sq.post(1, WRITE, Data::Inline(&big), SendFlags::SIGNALED),
        q.sq.post(
            1,
            SendOp::Read(Remote::default()),
            Data::Inline(&[1]),
            SendFlags::SIGNALED,
        ),
        q.sq.post(
            1,
            SendOp::Nop,
            Data::Sges(&[Sge::default(); 5]),
            SendFlags::SIGNALED,
        ),
    ];
    for r in refused {
        assert_eq!(r, Err(PostError::NotReadyToSend));
    }
    assert_eq!((q.sq.producer_count(), q.sq.ring_doorbell()), (0, 0));

    // Ready again: the precise errors, then posts until the ring is full.
    q.sq.set_ready(true);
    assert_eq!(
        q.sq.post(1, WRITE, Data::Inline(&big), SendFlags::SIGNALED),
        Err(PostError::InlineTooLarge { len: 17, max: 16 })
    );
    for i in 0..4 {
        q.sq.post(i, WRITE, Data::Inline(&[1; 8]), SendFlags::SIGNALED)
            .unwrap();
    }
    assert_eq!(
        q.sq.post(4, SendOp::Nop, Data::NONE, SendFlags::SIGNALED),
        Err(PostError::QueueFull { needed: 1, free: 0 })
    );
    // Full and not ready: not ready is named.
    q.sq.set_ready(false);
    assert_eq!(
        q.sq.post(4, SendOp::Nop, Data::NONE, SendFlags::SIGNALED),
        Err(PostError::NotReadyToSend)
    );
    assert_eq!(q.sq.producer_count(), 4);
}

/// The one-compare bound for inline SEND / WRITE (`inline_fit`) accepts exactly what
/// the separate inline and WQE-size checks accept, and refusals keep their own error.
#[test]
fn inline_posts_at_the_size_limits() {
    // 63 DS at most (1008-byte WQEs); inline limit above what 63 DS can hold.
    let mut q = NullQueues::new(64, 8, 1000).unwrap();
    let bytes = [0x77u8; 1001];
    let mut post = |op, len: usize| {
        q.sq.post(1, op, Data::Inline(&bytes[..len]), SendFlags::SIGNALED)
    };
    // ctrl + raddr + 61 units (4-byte header + 972 bytes) = 63 DS.
    assert_eq!(post(WRITE, 972), Ok(()));
    assert_eq!(
        post(WRITE, 973),
        Err(PostError::WqeTooLarge { ds: 64, max_ds: 63 })
    );
    // ctrl + 62 units (header + 988 bytes) = 63 DS.
    assert_eq!(post(SendOp::Send, 988), Ok(()));
    assert_eq!(
        post(SendOp::Send, 989),
        Err(PostError::WqeTooLarge { ds: 64, max_ds: 63 })
    );
    assert_eq!(
        post(SendOp::Send, 1001),
        Err(PostError::InlineTooLarge {
            len: 1001,
            max: 1000
        })
    );
    assert_eq!(
        post(SendOp::Read(Remote::default()), 8),
        Err(PostError::InlineNotAllowed)
    );
    // A queue whose inline limit is the tighter one.
    let mut q = NullQueues::new(64, 8, 12).unwrap();
    assert_eq!(
        q.sq.post(1, WRITE, Data::Inline(&bytes[..12]), SendFlags::SIGNALED),
        Ok(())
    );
    assert_eq!(
        q.sq.post(1, WRITE, Data::Inline(&bytes[..13]), SendFlags::SIGNALED),
        Err(PostError::InlineTooLarge { len: 13, max: 12 })
    );
    assert_eq!(q.sq.producer_count(), 1);
}

/// The short path (`short_fit`, one compare) takes inline SEND / WRITE payloads of one
/// WQEBB: the WQE sizes and the inline bytes at its limits (1 and 28 bytes with a remote
/// address, 44 without) and just past them (29, 45 and the empty payload, through the
/// general path) are those of the segments counted one by one.
#[test]
fn short_inline_posts_at_the_one_wqebb_limit() {
    let mut q = NullQueues::new(64, 64, 220).unwrap();
    let bytes: Vec<u8> = (1..=64).collect();
    for (op, fit, fixed_ds) in [(WRITE, 28, 2), (SendOp::Send, 44, 1)] {
        for len in [0, 1, fit, fit + 1] {
            let pi = q.sq.producer_count();
            let data = Data::Inline(&bytes[..len]);
            assert_eq!(q.sq.post(1, op, data, SendFlags::SIGNALED), Ok(()));
            let data_ds = if len == 0 { 0 } else { (4 + len).div_ceil(DS) };
            let ds = fixed_ds + data_ds;
            assert_eq!(wr_bytes(&q.sq, pi), ds * DS, "{op:?} {len}");
            assert_eq!(q.sq.producer_count() - pi, ds.div_ceil(4) as u32);
            if len != 0 {
                let wqe = q.sq.wqe_bytes(pi, ds * DS);
                let at = fixed_ds * DS;
                let header = (len as u32 | prm::INLINE_SEG).to_be_bytes();
                assert_eq!(wqe[at..at + 4], header, "{op:?} {len}");
                assert_eq!(wqe[at + 4..at + 4 + len], bytes[..len], "{op:?} {len}");
            }
        }
    }
}

fn wr(wr_id: u64, data: Data<'_>) -> SendWr<'_> {
    SendWr {
        wr_id,
        op: WRITE,
        data,
        flags: SendFlags::UNSIGNALED,
    }
}

/// `post_many` writes in order, stops at the first refusal and rings once everything
/// written, earlier pushes included.
#[test]
fn post_many_rings_once_what_it_wrote() {
    let mut q = NullQueues::new(16, 8, 16).unwrap();
    q.sq.set_mode(DoorbellMode::Doorbell);
    let reg = q.sq.register_offset();
    assert_eq!(q.sq.post_many([] as [SendWr; 0]), Ok(0));
    assert_eq!((q.sq.doorbell_record(), q.sq.register_offset()), (0, reg));

    q.sq.push(1, SendOp::Nop, Data::NONE, SendFlags::SIGNALED)
        .unwrap();
    let list = [wr(2, Data::Inline(&[2; 8])), wr(3, Data::Inline(&[3; 16]))];
    assert_eq!(q.sq.post_many(list), Ok(2));
    assert_eq!(q.sq.doorbell_record(), 3);
    assert_eq!(q.sq.uar().read64(reg), q.sq.wqe_bytes(2, 8)[..]);
    assert_eq!(q.sq.ring_doorbell(), 0, "nothing left pending");

    // Refused in the middle: the one before it is posted and rung, nothing after.
    let reg = q.sq.register_offset();
    let list = [
        wr(4, Data::Inline(&[4; 8])),
        wr(5, Data::Inline(&[5; 17])),
        wr(6, Data::Inline(&[6; 8])),
    ];
    assert_eq!(
        q.sq.post_many(list),
        Err((1, PostError::InlineTooLarge { len: 17, max: 16 }))
    );
    assert_eq!((q.sq.producer_count(), q.sq.doorbell_record()), (4, 4));
    assert_eq!(q.sq.uar().read64(reg), q.sq.wqe_bytes(3, 8)[..]);

    // A QP in error (an error CQE was polled): nothing written.
    q.complete(3, Opcode::RdmaWrite, CqeOpcode::ReqErr, 0x04);
    let mut out = [crate::cq::Completion::default()];
    assert_eq!(q.cq.poll(&mut out), 1);
    assert_eq!(
        q.sq.post_many([wr(7, Data::Inline(&[7; 8]))]),
        Err((0, PostError::NotReadyToSend))
    );
    assert_eq!((q.sq.producer_count(), q.sq.doorbell_record()), (4, 4));
}

/// `ring_doorbell` reads the size of the last pushed WQE back from its control
/// segment: a batch whose last WQE fits the BlueFlame half is copied whole
/// (`BlueFlameLast`), one whose last WQE does not is rung with the 8-byte doorbell.
#[test]
fn the_last_pushed_wqe_size_comes_from_its_control_segment() {
    let mut q = NullQueues::new(16, 8, 512).unwrap();
    q.sq.set_mode(DoorbellMode::BlueFlameLast);
    let reg = q.sq.register_offset();
    q.sq.push(1, SendOp::Nop, Data::NONE, SendFlags::SIGNALED)
        .unwrap();
    q.sq.push(2, WRITE, Data::Inline(&[0x33; 20]), SendFlags::SIGNALED)
        .unwrap();
    let last = q.sq.producer_count() - 1;
    assert_eq!(q.sq.ring_doorbell(), 2);
    // The 64-byte last WQE, all of it in the register (ds = 4: ctrl, raddr, 2 inline).
    let wqe = q.sq.wqe_bytes(last, 64);
    assert_eq!(wqe[7] & 0x3f, 4);
    for (k, chunk) in wqe.chunks(8).enumerate() {
        assert_eq!(q.sq.uar().read64(reg + k * 8), chunk, "word {k}");
    }
    // Last WQE of 21 DS, 6 WQEBBs (> the 256-byte half): the doorbell, 8 bytes only.
    let reg = q.sq.register_offset();
    q.sq.push(3, SendOp::Nop, Data::NONE, SendFlags::SIGNALED)
        .unwrap();
    q.sq.push(4, WRITE, Data::Inline(&[0x44; 300]), SendFlags::SIGNALED)
        .unwrap();
    let last = q.sq.producer_count() - 6;
    assert_eq!(q.sq.ring_doorbell(), 2);
    let wqe = q.sq.wqe_bytes(last, 16);
    assert_eq!(q.sq.uar().read64(reg), wqe[..8]);
    assert_eq!(q.sq.uar().read64(reg + 8), [0; 8], "no BlueFlame copy");
}

/// BlueFlame copies whole 64-byte blocks, so a WQE rung alone is copied when its WQEBBs fit
/// the register's half: on a half of 100 bytes (not a multiple of 64) a WQE of one WQEBB
/// (48 bytes) is copied whole, one of 80 bytes (two WQEBBs, 128 bytes copied) is rung with
/// the 8-byte doorbell.
#[test]
fn blueflame_takes_a_wqe_whose_blocks_fit_the_half() {
    for (payload, copied) in [(8, true), (40, false)] {
        let mut q = NullQueues::new(16, 16, 256).unwrap();
        q.sq.bf.size = 100;
        q.sq.set_mode(DoorbellMode::BlueFlame);
        let reg = q.sq.register_offset();
        q.sq.post(
            1,
            WRITE,
            Data::Inline(&[0x55; 40][..payload]),
            SendFlags::SIGNALED,
        )
        .unwrap();
        let wqe = q.sq.wqe_bytes(0, 64);
        assert_eq!(wqe[7] & 0x3f, if copied { 3 } else { 5 }, "{payload}: DS");
        assert_eq!(q.sq.uar().read64(reg), wqe[..8], "{payload}");
        let second = q.sq.uar().read64(reg + 8);
        if copied {
            for (k, chunk) in wqe.chunks(8).enumerate() {
                assert_eq!(q.sq.uar().read64(reg + k * 8), chunk, "word {k}");
            }
        } else {
            assert_eq!(second, [0; 8], "{payload}: no BlueFlame copy");
        }
    }
}

/// Byte 11 of the control segment (`fm_ce_se`) for every combination of the flags: rdma-core's
/// `MLX5_WQE_CTRL_CQ_UPDATE`, `_SOLICITED` and `_FENCE` bits (golden-tested constants).
#[test]
fn flags_set_the_fm_ce_se_bits() {
    let mut q = NullQueues::new(16, 16, 16).unwrap();
    for bits in 0..8u8 {
        let flags = SendFlags::new(bits & 1 != 0, bits & 4 != 0, bits & 2 != 0);
        let pi = q.sq.producer_count();
        q.sq.post(0, SendOp::Nop, Data::NONE, flags).unwrap();
        let expect = [
            (bits & 1 != 0, prm::WQE_CTRL_CQ_UPDATE),
            (bits & 2 != 0, prm::WQE_CTRL_SOLICITED),
            (bits & 4 != 0, prm::WQE_CTRL_FENCE),
        ]
        .iter()
        .filter(|(on, _)| *on)
        .fold(0, |b, (_, bit)| b | bit);
        assert_eq!(q.sq.wqe_bytes(pi, 16)[11], expect, "{flags:?}");
    }
}

#[test]
fn atomic_results_decode_in_each_kinds_byte_order() {
    let remote = Remote::default();
    let v8 = 0x0102_0304_0506_0708u64;
    let be8 = [1, 2, 3, 4, 5, 6, 7, 8];
    let eight = [
        SendOp::CompareSwap {
            remote,
            compare: 0,
            swap: 0,
        },
        SendOp::FetchAdd { remote, add: 0 },
        SendOp::MaskedCompareSwap64 {
            remote,
            args: MaskedCs64Args::default(),
        },
        SendOp::MaskedFetchAdd64 {
            remote,
            add: 0,
            field_boundary: 0,
        },
    ];
    for op in eight {
        assert_eq!(op.atomic_size(), Some(8));
        assert_eq!(
            op.atomic_result(&v8.to_ne_bytes(), true),
            Some(v8),
            "{op:?}"
        );
        assert_eq!(op.atomic_result(&be8, false), Some(v8), "{op:?}");
        assert_eq!(
            op.atomic_result(&be8[..7], true),
            None,
            "{op:?}: short entry"
        );
    }
    let four = [
        SendOp::MaskedCompareSwap32 {
            remote,
            args: MaskedCs32Args::default(),
        },
        SendOp::MaskedFetchAdd32 {
            remote,
            add: 0,
            field_boundary: 0,
        },
    ];
    for op in four {
        assert_eq!(op.atomic_size(), Some(4));
        // Big-endian whatever the 8-byte mode.
        for mode in [true, false] {
            assert_eq!(
                op.atomic_result(&be8[..4], mode),
                Some(0x0102_0304),
                "{op:?}"
            );
        }
    }
    for op in [SendOp::Send, SendOp::Read(remote), SendOp::Nop] {
        assert_eq!(
            (op.atomic_size(), op.atomic_result(&be8, true)),
            (None, None)
        );
    }
}

/// The decoded shape of every operation: its opcode and opmod, and the immediate and remote
/// address the WQE takes from the operation (read through the shape's bits alone: each
/// bit must be set exactly for the variants that have the field).
#[test]
fn every_operation_decodes_to_its_opcode_immediate_and_remote() {
    let r = Remote {
        addr: 0x1122_3344_5566_7788,
        rkey: 0x99aa_bbcc,
    };
    let b4 = prm::OPMOD_MASKED_ATOMIC_4B;
    let b8 = prm::OPMOD_MASKED_ATOMIC_8B;
    let cases = [
        (SendOp::Send, Opcode::Send, 0, 0, None),
        (
            SendOp::SendImm(0x0102_0304),
            Opcode::SendImm,
            0,
            0x0102_0304,
            None,
        ),
        (
            SendOp::SendInv(0x0506_0708),
            Opcode::SendInval,
            0,
            0x0506_0708,
            None,
        ),
        (SendOp::Write(r), Opcode::RdmaWrite, 0, 0, Some(r)),
        (
            SendOp::WriteImm(r, 0x0a0b_0c0d),
            Opcode::RdmaWriteImm,
            0,
            0x0a0b_0c0d,
            Some(r),
        ),
        (SendOp::Read(r), Opcode::RdmaRead, 0, 0, Some(r)),
        (
            SendOp::CompareSwap {
                remote: r,
                compare: 1,
                swap: 2,
            },
            Opcode::AtomicCs,
            0,
            0,
            Some(r),
        ),
        (
            SendOp::FetchAdd { remote: r, add: 3 },
            Opcode::AtomicFa,
            0,
            0,
            Some(r),
        ),
        (
            SendOp::MaskedCompareSwap32 {
                remote: r,
                args: MaskedCs32Args::default(),
            },
            Opcode::AtomicMaskedCs,
            b4,
            0,
            Some(r),
        ),
        (
            SendOp::MaskedCompareSwap64 {
                remote: r,
                args: MaskedCs64Args::default(),
            },
            Opcode::AtomicMaskedCs,
            b8,
            0,
            Some(r),
        ),
        (
            SendOp::MaskedFetchAdd32 {
                remote: r,
                add: 4,
                field_boundary: 5,
            },
            Opcode::AtomicMaskedFa,
            b4,
            0,
            Some(r),
        ),
        (
            SendOp::MaskedFetchAdd64 {
                remote: r,
                add: 6,
                field_boundary: 7,
            },
            Opcode::AtomicMaskedFa,
            b8,
            0,
            Some(r),
        ),
        (SendOp::Nop, Opcode::Nop, 0, 0, None),
    ];
    for (op, opcode, opmod, imm, remote) in cases {
        let shape = op.shape();
        assert_eq!(
            (shape.opcode(), shape.opmod()),
            (opcode as u8, opmod),
            "{op:?}"
        );
        assert_eq!(shape.imm(&op), Be32::new(imm), "{op:?}");
        assert_eq!(shape.remote(&op), remote, "{op:?}");
    }
}

/// The work requests of the prepared-post tests: every shape of one WQEBB (inline WRITE
/// and SEND, a gather list, READ, an atomic, WRITE with immediate, NOP, flags) and one of
/// three WQEBBs (posted through the general path).
fn prepared_cases<'a>(payload: &'a [u8], sges: &'a [Sge]) -> Vec<(SendWr<'a>, Opcode)> {
    let remote = Remote {
        addr: 0x2000,
        rkey: 9,
    };
    let flags = SendFlags::SIGNALED | SendFlags::FENCE | SendFlags::SOLICITED;
    let wr = |op, data, flags| SendWr {
        wr_id: 0,
        op,
        data,
        flags,
    };
    vec![
        (
            wr(WRITE, Data::Inline(&payload[..8]), SendFlags::SIGNALED),
            Opcode::RdmaWrite,
        ),
        (
            wr(SendOp::Send, Data::Inline(&payload[..44]), flags),
            Opcode::Send,
        ),
        (
            wr(SendOp::Write(remote), Data::Sges(&sges[..2]), flags),
            Opcode::RdmaWrite,
        ),
        (
            wr(
                SendOp::Read(remote),
                Data::Sges(&sges[..1]),
                SendFlags::SIGNALED,
            ),
            Opcode::RdmaRead,
        ),
        (
            wr(
                SendOp::FetchAdd { remote, add: 5 },
                Data::Sges(&sges[2..3]),
                SendFlags::SIGNALED,
            ),
            Opcode::AtomicFa,
        ),
        (
            wr(
                SendOp::WriteImm(remote, 0xdead_beef),
                Data::Inline(&payload[..3]),
                SendFlags::SIGNALED,
            ),
            Opcode::RdmaWriteImm,
        ),
        (
            wr(SendOp::Nop, Data::NONE, SendFlags::SIGNALED),
            Opcode::Nop,
        ),
        (
            wr(WRITE, Data::Inline(&payload[..100]), SendFlags::SIGNALED),
            Opcode::RdmaWrite,
        ),
    ]
}

/// A prepared work request puts exactly what `post_wr` of the same work request puts in
/// the ring, the doorbell record and the register (BlueFlame copy included; the WQE's
/// bytes, not the rest of its last block), at every
/// ring position (the WQE index runs past 255 and the ring wraps, a 3-WQEBB WQE across
/// its end), and its completions report the same.
#[test]
fn a_prepared_post_writes_what_post_wr_writes() {
    let payload: Vec<u8> = (0..128).map(|b| b as u8 ^ 0xa5).collect();
    let sges = [
        Sge {
            addr: 0x1_0000,
            len: 64,
            lkey: 3,
        },
        Sge {
            addr: 0x2_0040,
            len: 8,
            lkey: 4,
        },
        Sge {
            addr: 0x3_0000,
            len: 8,
            lkey: 5,
        },
    ];
    let cases = prepared_cases(&payload, &sges);
    let (mut a, mut b) = (
        NullQueues::new(16, 64, 128).unwrap(),
        NullQueues::new(16, 64, 128).unwrap(),
    );
    let mut prepared: Vec<PreparedWr> = cases
        .iter()
        .map(|(wr, _)| b.sq.prepare(wr).unwrap())
        .collect();
    assert_eq!(prepared[0].wqe_bytes(), 48);
    assert_eq!(prepared[7].wqe_bytes(), 144);
    let (mut out_a, mut out_b) = (
        [crate::cq::Completion::default()],
        [crate::cq::Completion::default()],
    );
    for round in 0..60u64 {
        for (i, (wr, opcode)) in cases.iter().enumerate() {
            let wr_id = round * 100 + i as u64;
            let pi = a.sq.producer_count();
            let reg = a.sq.register_offset();
            assert_eq!((pi, reg), (b.sq.producer_count(), b.sq.register_offset()));
            a.sq.post_wr(&SendWr { wr_id, ..*wr }).unwrap();
            prepared[i].set_wr_id(wr_id);
            b.sq.post_prepared(&prepared[i]).unwrap();
            let bytes = wr_bytes(&b.sq, pi);
            // What the device reads: the WQE's `ds` units, less the padding after an
            // inline payload (left as the ring slot held it by a post, zero in a prepared
            // WQE); in the register (whole 64-byte blocks) the same bytes of the first.
            let meaningful = match wr.data {
                Data::Inline(p) if !p.is_empty() => {
                    bytes - crate::prm::InlineSeg::ds(p.len()) * DS + 4 + p.len()
                }
                _ => bytes,
            };
            let (ring_a, ring_b) = (a.sq.wqe_bytes(pi, bytes), b.sq.wqe_bytes(pi, bytes));
            assert_eq!(ring_a[..meaningful], ring_b[..meaningful], "{i} at {pi}");
            assert_eq!(a.sq.doorbell_record(), b.sq.doorbell_record());
            let register = |q: &NullQueues| -> Vec<u8> {
                (0..8)
                    .flat_map(|k| q.sq.uar().read64(reg + k * 8))
                    .collect()
            };
            let (reg_a, reg_b) = (register(&a), register(&b));
            let shown = meaningful.min(64);
            assert_eq!(reg_a[..shown], reg_b[..shown], "{i} at {pi}");
            assert_eq!(
                reg_b[..shown],
                ring_b[..shown],
                "{i} at {pi}: BlueFlame copy"
            );
            for (q, out) in [(&mut a, &mut out_a), (&mut b, &mut out_b)] {
                q.complete(pi as u16, *opcode, CqeOpcode::Req, 0);
                assert_eq!(q.cq.poll(out), 1);
            }
            assert_eq!(out_a, out_b);
            assert_eq!(
                (out_b[0].wr_id, out_b[0].status),
                (wr_id, crate::Status::Success)
            );
        }
    }
    assert!(a.sq.producer_count() > 256 + 16);
}

/// Size in bytes of the WQE at producer count `pi` (from its control segment).
fn wr_bytes<U: Uar>(sq: &SendQueue<U>, pi: u32) -> usize {
    (sq.wqe_bytes(pi, 8)[7] & 0x3f) as usize * DS
}

/// `prepare` refuses what a post refuses, with the same error, whatever the queue's
/// state; each post of a prepared work request checks the queue (its own), the error
/// flag, readiness and room, as a post does; `post_many_prepared` stops at the first
/// refusal and rings what it wrote.
#[test]
fn prepared_posts_keep_every_check() {
    let mut q = NullQueues::new(4, 8, 16).unwrap();
    let mut other = NullQueues::new(4, 8, 16).unwrap();
    q.sq.set_ready(false);
    let read = SendOp::Read(Remote::default());
    let five = [Sge::default(); 5];
    let refused = [
        (
            wr(1, Data::Inline(&[0; 17])),
            PostError::InlineTooLarge { len: 17, max: 16 },
        ),
        (
            SendWr {
                op: read,
                ..wr(1, Data::Inline(&[1]))
            },
            PostError::InlineNotAllowed,
        ),
        (
            wr(1, Data::Sges(&five)),
            PostError::TooManySges { count: 5, max: 4 },
        ),
    ];
    for (wr, err) in refused {
        assert_eq!(q.sq.prepare(&wr).unwrap_err(), err);
    }
    let mut write = q.sq.prepare(&wr(1, Data::Inline(&[1; 8]))).unwrap();
    assert_eq!(q.sq.post_prepared(&write), Err(PostError::NotReadyToSend));
    assert_eq!(q.sq.push_prepared(&write), Err(PostError::NotReadyToSend));
    q.sq.set_ready(true);
    assert_eq!(
        other.sq.post_prepared(&write),
        Err(PostError::ForeignPreparedWr)
    );
    let foreign = other.sq.prepare(&wr(9, Data::Inline(&[9; 8]))).unwrap();
    let reg = q.sq.register_offset();
    assert_eq!(
        q.sq.post_many_prepared([&write, &foreign, &write]),
        Err((1, PostError::ForeignPreparedWr))
    );
    assert_eq!((q.sq.producer_count(), q.sq.doorbell_record()), (1, 1));
    assert_eq!(q.sq.uar().read64(reg), q.sq.wqe_bytes(0, 8)[..]);
    for wr_id in 2..5 {
        write.set_wr_id(wr_id);
        q.sq.push_prepared(&write).unwrap();
    }
    assert_eq!(
        q.sq.post_prepared(&write),
        Err(PostError::QueueFull { needed: 1, free: 0 })
    );
    assert_eq!(q.sq.ring_doorbell(), 3);
    assert_eq!(write.wr().wr_id, 4);
    // The last one fails: the QP is in error, nothing more is written.
    q.complete(3, Opcode::RdmaWrite, CqeOpcode::ReqErr, 0x04);
    let mut out = [crate::cq::Completion::default()];
    assert_eq!(q.cq.poll(&mut out), 1);
    assert_eq!(out[0].wr_id, 4);
    assert_eq!(q.sq.post_prepared(&write), Err(PostError::NotReadyToSend));
    assert_eq!(
        q.sq.post_many_prepared([&write]),
        Err((0, PostError::NotReadyToSend))
    );
    assert_eq!(q.sq.producer_count(), 4);
}

/// A UD queue (MTU 1024) or a DCI's over `NullQueues`' memory: 16 WQEBBs, 256 inline
/// bytes, BlueFlame (`Auto` on a 256-byte half).
fn datagram_queues(dci: bool) -> NullQueues {
    let mut q = NullQueues::new(16, 8, 256).unwrap();
    // `make_ud` / `make_dci` read the limits of the description only (no pointer).
    let desc = SqDesc {
        buf: core::ptr::NonNull::dangling(),
        wqe_cnt: 16,
        dbrec: core::ptr::NonNull::dangling(),
        bf_offset: crate::null::NULL_BF_OFFSET,
        bf_size: crate::null::NULL_BF_SIZE,
        qpn: crate::null::NULL_QPN,
        max_wqe_size: 1008,
        max_inline: 256,
        max_sge: 4,
    };
    if dci {
        q.sq.make_dci(&desc, 4);
    } else {
        q.sq.make_ud(&desc);
        q.sq.set_ud_mtu(1024);
    }
    q.sq.set_ready(true);
    q
}

fn send(wr_id: u64, payload: &[u8]) -> SendWr<'_> {
    SendWr {
        wr_id,
        op: SendOp::Send,
        data: Data::Inline(payload),
        flags: SendFlags::SIGNALED,
    }
}

/// `push_ud` writes the WQE `post_ud` writes and leaves the doorbell alone; a list of four
/// is rung once by `ring_doorbell` with the 8-byte doorbell (no BlueFlame for a batch, as
/// RC), a list of one is BlueFlame-copied whole (its two WQEBBs). Refusals write nothing.
#[test]
fn push_ud_writes_what_post_ud_writes_and_a_list_rings_once() {
    let av = Av::new(0, 0, false, 0, 0, 7, [0; 6], 0, 0, 0, [0; 16]);
    let dest = UdDest {
        av: &av,
        remote_qpn: 0x12_3456,
        qkey: 0x1111_1111,
        compact: false,
    };
    let payloads = [[1u8; 8], [2; 8], [3; 8], [4; 8]];
    let mut posted = datagram_queues(false);
    for (i, p) in payloads.iter().enumerate() {
        posted.sq.post_ud(send(i as u64, p), &dest).unwrap();
    }
    let mut q = datagram_queues(false);
    let reg = q.sq.register_offset();
    for (i, p) in payloads.iter().enumerate() {
        q.sq.push_ud(&send(i as u64, p), &dest).unwrap();
    }
    // ctrl + 48-byte AV + 8 inline bytes = 5 DS: two WQEBBs each, nothing rung yet.
    assert_eq!((q.sq.producer_count(), q.sq.doorbell_record()), (8, 0));
    assert_eq!(q.sq.uar().read64(reg), [0; 8]);
    assert_eq!(q.sq.wqe_bytes(0, 512), posted.sq.wqe_bytes(0, 512));
    assert_eq!(q.sq.ring_doorbell(), 4);
    assert_eq!(q.sq.doorbell_record(), 8);
    let last = q.sq.wqe_bytes(6, 128);
    assert_eq!(q.sq.uar().read64(reg), last[..8]);
    assert_eq!(q.sq.uar().read64(reg + 8), [0; 8], "no BlueFlame copy");
    assert_eq!(q.sq.register_offset(), reg ^ crate::null::NULL_BF_SIZE);

    // Refused: the RC entry (also once datagram WQEs moved the producer on), another
    // opcode, more than the MTU, a DC post; nothing written or pending.
    assert_eq!(
        q.sq.push_wr(&send(9, &[0; 8])),
        Err(PostError::WrongTransport {
            transport: crate::types::Transport::Ud
        })
    );
    assert_eq!(
        q.sq.push_ud(&write(9, &[0; 8]), &dest),
        Err(PostError::WrongTransport {
            transport: crate::types::Transport::Ud
        })
    );
    let sge = [Sge {
        addr: 0,
        len: 1025,
        lkey: 1,
    }];
    let over = SendWr {
        data: Data::Sges(&sge),
        ..send(9, &[])
    };
    assert_eq!(
        q.sq.push_ud(&over, &dest),
        Err(PostError::OverMtu {
            len: 1025,
            mtu: 1024
        })
    );
    let dc = DcDest {
        av: &av,
        dctn: 1,
        dc_key: 2,
        compact: false,
        stream: 0,
    };
    assert_eq!(
        q.sq.push_dc(&send(9, &[0; 8]), &dc),
        Err(PostError::WrongTransport {
            transport: crate::types::Transport::Ud
        })
    );
    assert_eq!((q.sq.producer_count(), q.sq.ring_doorbell()), (8, 0));

    // A list of one: BlueFlame, the whole 128 bytes of the WQE.
    let reg = q.sq.register_offset();
    q.sq.push_ud(&send(5, &[5; 8]), &dest).unwrap();
    assert_eq!(q.sq.ring_doorbell(), 1);
    assert_eq!(q.sq.doorbell_record(), 10);
    for (k, chunk) in q.sq.wqe_bytes(8, 128).chunks(8).enumerate() {
        assert_eq!(q.sq.uar().read64(reg + k * 8), chunk, "word {k}");
    }
}

fn write(wr_id: u64, payload: &[u8]) -> SendWr<'_> {
    SendWr {
        op: WRITE,
        ..send(wr_id, payload)
    }
}

/// `push_dc` writes the WQE `post_dc` writes (WRITE: ctrl, the AV with the DCT number and
/// key, raddr, inline), rung once for the list; a pushed WQE is rung by the next
/// `post_dc` with it (one doorbell for both, no BlueFlame for two).
#[test]
fn push_dc_writes_what_post_dc_writes_and_a_list_rings_once() {
    let av = Av::new(0, 0, false, 0, 0, 9, [0; 6], 0, 0, 0, [0; 16]);
    let dest = DcDest {
        av: &av,
        dctn: 0x00_0abc,
        dc_key: 0x0123_4567_89ab_cdef,
        compact: false,
        stream: 0,
    };
    let mut posted = datagram_queues(true);
    let mut q = datagram_queues(true);
    let reg = q.sq.register_offset();
    for i in 0..4u8 {
        posted
            .sq
            .post_dc(write(u64::from(i), &[i; 8]), &dest)
            .unwrap();
        q.sq.push_dc(&write(u64::from(i), &[i; 8]), &dest).unwrap();
    }
    // ctrl + AV + raddr + 8 inline bytes = 6 DS: two WQEBBs each.
    assert_eq!((q.sq.producer_count(), q.sq.doorbell_record()), (8, 0));
    assert_eq!(q.sq.wqe_bytes(0, 512), posted.sq.wqe_bytes(0, 512));
    assert_eq!(q.sq.ring_doorbell(), 4);
    assert_eq!(q.sq.doorbell_record(), 8);
    assert_eq!(q.sq.uar().read64(reg), q.sq.wqe_bytes(6, 8)[..]);
    assert_eq!(q.sq.uar().read64(reg + 8), [0; 8], "no BlueFlame copy");
    // RC entries stay refused on a DCI, UD posts too.
    assert_eq!(
        q.sq.push_wr(&write(9, &[0; 8])),
        Err(PostError::WrongTransport {
            transport: crate::types::Transport::Dci
        })
    );

    let reg = q.sq.register_offset();
    q.sq.push_dc(&write(4, &[4; 8]), &dest).unwrap();
    q.sq.post_dc(write(5, &[5; 8]), &dest).unwrap();
    assert_eq!((q.sq.doorbell_record(), q.sq.ring_doorbell()), (12, 0));
    assert_eq!(q.sq.uar().read64(reg), q.sq.wqe_bytes(10, 8)[..]);
    assert_eq!(q.sq.uar().read64(reg + 8), [0; 8], "no BlueFlame copy");
}
