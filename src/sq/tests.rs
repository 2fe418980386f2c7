//! Unit tests of the send queue over plain memory.

use super::*;
use crate::null::NullQueues;
use crate::prm::{Av, CqeOpcode, Opcode};

mod datagram;
mod eth;
mod prepared;
mod queue;
mod typed;

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

/// The short path's gate (`SqShared::takes_short`: one compare says that a payload is
/// short and that the queue takes posts) is open at the queue's bounds once it is built,
/// closed by a refusal and open again on acceptance; a fresh state is closed, and bounds
/// set while it refuses stay closed until it accepts. READ and atomics never take it.
#[test]
fn a_refusal_closes_the_short_path_and_acceptance_opens_it() {
    let q = NullQueues::new(64, 64, 220).unwrap();
    let [write, send] = [WRITE, SendOp::Send].map(|op| op.shape().fit_index());
    let gate = |s: &SqShared| {
        [(write, 28), (send, 44)]
            .map(|(i, fit)| [0, 1, fit, fit + 1].map(|len| s.takes_short(i, len)))
    };
    let (open, closed) = ([[false, true, true, false]; 2], [[false; 4]; 2]);
    let shared = &*q.sq.shared;
    assert_eq!(gate(shared), open);
    assert!(!shared.takes_short(2, 1) && !shared.takes_short(3, 1));
    shared.refuse();
    assert_eq!(gate(shared), closed);
    q.sq.accept();
    assert_eq!(gate(shared), open);

    let fresh = SqShared::new(64, 1);
    assert_eq!(gate(&fresh), closed);
    fresh.refuse();
    fresh.open_short(q.sq.k.short_fit);
    assert_eq!(gate(&fresh), closed);
    fresh.accept(q.sq.k.short_fit);
    assert_eq!(gate(&fresh), open);
}

fn wr(wr_id: u64, data: Data<'_>) -> SendWr<'_> {
    SendWr {
        wr_id,
        op: WRITE,
        data,
        flags: SendFlags::UNSIGNALED,
    }
}

/// Size in bytes of the WQE at producer count `pi` (from its control segment).
fn wr_bytes<U: Uar>(sq: &SendQueue<U>, pi: u32) -> usize {
    (sq.wqe_bytes(pi, 8)[7] & 0x3f) as usize * DS
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

/// A change of doorbell mode keeps the WQEs pushed before it (their count is kept apart
/// from the mode's "no BlueFlame alone" mark): a WQE posted after them is rung as the end
/// of a batch, a WQE posted alone as the new mode says.
#[test]
fn a_mode_change_keeps_the_pushed_wqes() {
    let mut q = NullQueues::new(16, 8, 256).unwrap();
    let flags = SendFlags::SIGNALED;
    // Pushed in doorbell mode, then a WQE posted in BlueFlame mode: a batch of two, rung
    // with the 8-byte doorbell (rdma-core's rule for more than one WQE).
    q.sq.set_mode(DoorbellMode::Doorbell);
    q.sq.push(1, WRITE, Data::Inline(&[1; 8]), flags).unwrap();
    q.sq.set_mode(DoorbellMode::BlueFlame);
    let first_half = q.sq.register_offset();
    q.sq.post(2, WRITE, Data::Inline(&[2; 8]), flags).unwrap();
    assert_eq!(q.sq.doorbell_record(), 2);
    let reg = |q: &NullQueues, at| q.sq.uar().read64(at);
    assert_eq!(reg(&q, first_half), q.sq.wqe_bytes(1, 8)[..]);
    assert_eq!(reg(&q, first_half + 8), [0; 8], "no BlueFlame copy");
    assert_eq!(q.sq.ring_doorbell(), 0, "nothing left pending");
    // Alone in BlueFlame mode: copied whole.
    let second_half = q.sq.register_offset();
    q.sq.post(3, WRITE, Data::Inline(&[3; 8]), flags).unwrap();
    let copied = q.sq.wqe_bytes(2, 64);
    for (k, chunk) in copied.chunks(8).enumerate() {
        assert_eq!(reg(&q, second_half + k * 8), chunk, "word {k}");
    }
    // Pushed in BlueFlame mode, rung in doorbell mode: both rung, 8 bytes.
    q.sq.push(4, WRITE, Data::Inline(&[4; 8]), flags).unwrap();
    q.sq.push(5, WRITE, Data::Inline(&[5; 8]), flags).unwrap();
    q.sq.set_mode(DoorbellMode::Doorbell);
    assert_eq!(q.sq.register_offset(), first_half);
    assert_eq!(q.sq.ring_doorbell(), 2);
    assert_eq!(q.sq.doorbell_record(), 5);
    assert_eq!(reg(&q, first_half), q.sq.wqe_bytes(4, 8)[..]);
    assert_eq!(reg(&q, first_half + 8), [0; 8], "no BlueFlame copy");
    // Alone in doorbell mode: 8 bytes, the rest of the half still the earlier copy.
    q.sq.post(6, WRITE, Data::Inline(&[6; 8]), flags).unwrap();
    assert_eq!(q.sq.doorbell_record(), 6);
    assert_eq!(reg(&q, second_half), q.sq.wqe_bytes(5, 8)[..]);
    assert_eq!(reg(&q, second_half + 40), copied[40..48]);
    assert_ne!(copied[40..48], q.sq.wqe_bytes(5, 64)[40..48]);
}

/// BlueFlame copies whole 64-byte blocks, so a WQE rung alone is copied when its WQEBBs fit
/// the register's half: on a half of 64 bytes a WQE of one WQEBB (48 bytes) is copied
/// whole, one of 80 bytes (two WQEBBs, 128 bytes to copy) is rung with the 8-byte doorbell.
#[test]
fn blueflame_takes_a_wqe_whose_blocks_fit_the_half() {
    for (payload, copied) in [(8, true), (40, false)] {
        let mut q = NullQueues::new(16, 16, 256).unwrap();
        q.sq.bf = BfReg::new(crate::mmio::NullUar::default(), q.sq.register_offset(), 64);
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

#[test]
fn a_remote_offset_moves_the_address_and_keeps_the_key() {
    let base = Remote {
        addr: 0x1000,
        rkey: 7,
    };
    assert_eq!(
        base.offset(0x28),
        Remote {
            addr: 0x1028,
            rkey: 7
        }
    );
    assert_eq!(base.offset(0), base);
    let top = Remote {
        addr: u64::MAX - 1,
        rkey: 7,
    };
    assert_eq!(top.offset(1).addr, u64::MAX);
    assert!(std::panic::catch_unwind(|| top.offset(2)).is_err());
}

#[test]
fn send_flags_combine_and_read_back() {
    let (s, f, so) = (SendFlags::SIGNALED, SendFlags::FENCE, SendFlags::SOLICITED);
    let switches = |x: SendFlags| (x.signaled(), x.fence(), x.solicited());
    assert_eq!(switches(SendFlags::UNSIGNALED), (false, false, false));
    assert_eq!(switches(s), (true, false, false));
    assert_eq!(switches(f), (false, true, false));
    assert_eq!(switches(so), (false, false, true));
    let all = s | f | so;
    assert_eq!(all, SendFlags::new(true, true, true));
    // A flag ORed in twice stays set (an OR, not a toggle).
    assert_eq!(all | s, all);
    // MLX5_WQE_CTRL_FENCE 0x80 | MLX5_WQE_CTRL_CQ_UPDATE 0x08 | MLX5_WQE_CTRL_SOLICITED 0x02.
    assert_eq!(all.fm_ce_se().into_bits(), 0x8a);
    let mut g = s;
    g |= so;
    assert_eq!(switches(g), (true, false, true));
    assert_eq!(
        format!("{g:?}"),
        "SendFlags { signaled: true, fence: false, solicited: true }"
    );
}

#[test]
fn set_imm_changes_only_an_operation_that_carries_one() {
    let r = Remote {
        addr: 0x1000,
        rkey: 7,
    };
    for (before, after) in [
        (SendOp::SendImm(1), SendOp::SendImm(5)),
        (SendOp::SendInv(1), SendOp::SendInv(5)),
        (SendOp::WriteImm(r, 1), SendOp::WriteImm(r, 5)),
    ] {
        let mut op = before;
        assert!(op.set_imm(5), "{before:?}");
        assert_eq!(op, after);
    }
    for before in [SendOp::Send, SendOp::Write(r), SendOp::Read(r), SendOp::Nop] {
        let mut op = before;
        assert!(!op.set_imm(5), "{before:?}");
        assert_eq!(op, before);
    }
}

#[test]
fn an_xrc_initiators_and_a_raw_qps_queues_refuse_the_rc_entries() {
    use crate::types::Transport;
    for transport in [Transport::XrcIni, Transport::Raw] {
        let mut q = datagram::entry_queues(transport);
        assert_eq!(
            q.sq.post(1, SendOp::Send, Data::NONE, SendFlags::SIGNALED),
            Err(PostError::WrongTransport { transport })
        );
        assert_eq!(q.sq.producer_count(), 0);
    }
}

/// The room check's refresh (the cached limit is stale once completions retire WQEs): a
/// ring freed by one completion takes exactly one more WQEBB.
#[test]
fn a_ring_freed_by_one_completion_takes_exactly_one_more() {
    let mut q = NullQueues::new(4, 8, 16).unwrap();
    q.sq.set_ready(true);
    for i in 0..4 {
        q.sq.post(i, WRITE, Data::Inline(&[1; 8]), SendFlags::SIGNALED)
            .unwrap();
    }
    let full = Err(PostError::QueueFull { needed: 1, free: 0 });
    assert_eq!(
        q.sq.post(4, WRITE, Data::Inline(&[2; 8]), SendFlags::SIGNALED),
        full
    );
    q.complete(0, Opcode::RdmaWrite, CqeOpcode::Req, 0);
    let mut out = [crate::cq::Completion::default()];
    assert_eq!(q.cq.poll(&mut out), 1);
    assert_eq!(
        q.sq.post(4, WRITE, Data::Inline(&[2; 8]), SendFlags::SIGNALED),
        Ok(())
    );
    assert_eq!(
        q.sq.post(5, WRITE, Data::Inline(&[3; 8]), SendFlags::SIGNALED),
        full
    );
    assert_eq!(q.sq.producer_count(), 5);
}

/// The inline bound of the general path (payloads over one WQEBB): exactly `max_inline`
/// is taken, one byte more is refused.
#[test]
fn a_long_inline_payload_of_exactly_max_inline_is_taken() {
    let mut q = NullQueues::new(16, 8, 256).unwrap();
    q.sq.set_ready(true);
    for op in [SendOp::Send, SendOp::SendImm(9), WRITE] {
        assert_eq!(
            q.sq.post(1, op, Data::Inline(&[7; 257]), SendFlags::SIGNALED),
            Err(PostError::InlineTooLarge { len: 257, max: 256 }),
            "{op:?}"
        );
        let pi = q.sq.producer_count();
        assert_eq!(
            q.sq.post(1, op, Data::Inline(&[7; 256]), SendFlags::SIGNALED),
            Ok(()),
            "{op:?}"
        );
        // 16 (control) + the remote address + 4 + 256, in WQEBBs.
        let remote = if op == WRITE { 16 } else { 0 };
        let wqebbs = (16 + remote + 4 + 256_u32).div_ceil(64);
        assert_eq!(q.sq.producer_count() - pi, wqebbs, "{op:?}");
    }
}

/// A queue whose `max_inline` (1000) is more than its largest WQE (63 units) holds: a
/// payload of exactly `max_inline` passes the inline bound and is refused for its size.
#[test]
fn an_inline_payload_the_wqe_cannot_hold_is_too_large_a_wqe() {
    let mut q = NullQueues::new(64, 8, 1000).unwrap();
    q.sq.set_ready(true);
    let send = |q: &mut NullQueues, len: usize| {
        let payload = vec![7; len];
        q.sq.post(1, SendOp::Send, Data::Inline(&payload), SendFlags::SIGNALED)
    };
    // 16 + 4 + 1000 bytes: 64 units.
    assert_eq!(
        send(&mut q, 1000),
        Err(PostError::WqeTooLarge { ds: 64, max_ds: 63 })
    );
    assert_eq!(
        send(&mut q, 1001),
        Err(PostError::InlineTooLarge {
            len: 1001,
            max: 1000
        })
    );
    // 16 + 4 + 988: the largest that fits.
    assert_eq!(send(&mut q, 988), Ok(()));
}

/// A gather list of exactly the largest message (1 GiB: ConnectX's `max_msg_sz`, log 30)
/// is taken; one byte more is refused.
#[test]
fn a_gather_list_of_exactly_the_largest_message_is_taken() {
    let mut q = NullQueues::new(16, 8, 16).unwrap();
    q.sq.set_ready(true);
    let max = 1u64 << 30;
    let half = Sge {
        addr: 0x1000,
        len: (max / 2) as u32,
        lkey: 1,
    };
    let over = Sge { len: 1, ..half };
    assert_eq!(
        q.sq.post(
            1,
            SendOp::Send,
            Data::Sges(&[half, half, over]),
            SendFlags::SIGNALED
        ),
        Err(PostError::MessageTooLarge { len: max + 1 })
    );
    assert_eq!(
        q.sq.post(
            1,
            SendOp::Send,
            Data::Sges(&[half, half]),
            SendFlags::SIGNALED
        ),
        Ok(())
    );
}
