//! Prepared work requests: what `prepare` keeps and every post of it writes and checks.

use super::*;

/// `a` and `b` show the same WQE `wr` at producer count `pi` (BlueFlame register at `reg`
/// when rung): what the device reads, the WQE's `ds` units less the padding after an
/// inline payload (left as the ring slot held it by a post, zero in a prepared WQE), in
/// the ring and, in the register (whole 64-byte blocks), of the first; and the doorbell
/// record.
fn same_wqe(a: &NullQueues, b: &NullQueues, wr: &SendWr<'_>, pi: u32, reg: usize) {
    let bytes = wr_bytes(&b.sq, pi);
    let meaningful = match wr.data {
        Data::Inline(p) if !p.is_empty() => {
            bytes - crate::prm::InlineSeg::ds(p.len()) * DS + 4 + p.len()
        }
        _ => bytes,
    };
    let (ring_a, ring_b) = (a.sq.wqe_bytes(pi, bytes), b.sq.wqe_bytes(pi, bytes));
    assert_eq!(ring_a[..meaningful], ring_b[..meaningful], "{wr:?} at {pi}");
    assert_eq!(a.sq.doorbell_record(), b.sq.doorbell_record());
    let register = |q: &NullQueues| -> Vec<u8> {
        (0..8)
            .flat_map(|k| q.sq.uar().read64(reg + k * 8))
            .collect()
    };
    let (reg_a, reg_b) = (register(a), register(b));
    let shown = meaningful.min(64);
    assert_eq!(reg_a[..shown], reg_b[..shown], "{wr:?} at {pi}");
    assert_eq!(
        reg_b[..shown],
        ring_b[..shown],
        "{wr:?} at {pi}: BlueFlame copy"
    );
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
            same_wqe(&a, &b, wr, pi, reg);
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

/// A prepared work request whose remote address, immediate, payload and `wr_id` are
/// patched before each post writes what `post_wr` writes for the work request with those
/// fields: the bytes the device reads, in the ring and in the register, and the doorbell
/// record; it refuses what `post_wr` refuses (a payload over the inline limit, posted
/// through the general path), and a misaligned atomic target is refused by the patch.
#[test]
fn a_patched_prepared_wr_posts_what_post_wr_posts() {
    let payload: Vec<u8> = (0..=200u8).map(|b| b ^ 0x5c).collect();
    let result = [Sge {
        addr: 0x7000,
        len: 8,
        lkey: 2,
    }];
    let remote = |i: u64| Remote {
        addr: 0x10_0000 + i * 8,
        rkey: 0x40 + i as u32,
    };
    let bases = [
        SendWr {
            wr_id: 0,
            op: SendOp::Write(remote(0)),
            data: Data::Inline(&payload[..8]),
            flags: SendFlags::SIGNALED,
        },
        SendWr {
            wr_id: 0,
            op: SendOp::WriteImm(remote(0), 1),
            data: Data::Inline(&payload[..8]),
            flags: SendFlags::SIGNALED | SendFlags::SOLICITED,
        },
        SendWr {
            wr_id: 0,
            op: SendOp::SendImm(1),
            data: Data::Inline(&payload[..8]),
            flags: SendFlags::UNSIGNALED,
        },
        SendWr {
            wr_id: 0,
            op: SendOp::FetchAdd {
                remote: remote(0),
                add: 5,
            },
            data: Data::Sges(&result),
            flags: SendFlags::SIGNALED,
        },
    ];
    let lengths = [8, 1, 28, 29, 44, 45, 0, 100, 128, 129, 16];
    let (mut a, mut b) = (
        NullQueues::new(16, 64, 128).unwrap(),
        NullQueues::new(16, 64, 128).unwrap(),
    );
    let mut out = [crate::cq::Completion::default()];
    let mut refused = 0;
    for base in bases {
        let mut prepared = b.sq.prepare(&base).unwrap();
        for (i, len) in lengths.into_iter().enumerate() {
            let mut expected = base;
            expected.wr_id = 1000 + i as u64;
            prepared.set_wr_id(expected.wr_id);
            if base.op.shape().has_remote() {
                // SAFETY: the operation has a remote address.
                unsafe { expected.op.set_remote(remote(i as u64 + 1)) };
                prepared.set_remote(remote(i as u64 + 1)).unwrap();
            }
            if expected.op.set_imm(0x0101_0101 * i as u32) {
                prepared.set_imm(0x0101_0101 * i as u32);
            }
            if let Data::Inline(_) = base.data {
                expected.data = Data::Inline(&payload[..len]);
                prepared.set_payload(&payload[..len]);
            }
            assert_eq!(*prepared.wr(), expected);
            let pi = a.sq.producer_count();
            let reg = a.sq.register_offset();
            let posted = a.sq.post_wr(&expected);
            assert_eq!(posted, b.sq.post_prepared(&prepared), "{expected:?}");
            if posted.is_err() {
                refused += 1;
                continue;
            }
            assert_eq!(prepared.wqe_bytes(), wr_bytes(&a.sq, pi));
            same_wqe(&a, &b, &expected, pi, reg);
            for q in [&mut a, &mut b] {
                q.complete(pi as u16, Opcode::Nop, CqeOpcode::Req, 0);
                assert_eq!(q.cq.poll(&mut out), 1);
            }
        }
    }
    // 129 bytes, over the inline limit, for each of the three inline work requests.
    assert_eq!(refused, 3);
    let mut atomic = b.sq.prepare(&bases[3]).unwrap();
    assert_eq!(
        atomic.set_remote(Remote { addr: 4, rkey: 1 }),
        Err(PostError::MisalignedAtomic { addr: 4 })
    );
    assert_eq!(*atomic.wr(), bases[3]);
}
