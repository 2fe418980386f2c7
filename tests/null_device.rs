//! The data path against the null device: exact WQE bytes, doorbell records, MMIO stores,
//! queue accounting and CQE parsing, with expected bytes written out from the PRM tables.

use mlx5_direct::null::{NullQueues, NULL_BF_OFFSET, NULL_BF_SIZE, NULL_QPN};
use mlx5_direct::prm::{CqeOpcode, Opcode, Syndrome};
use mlx5_direct::{
    Completion, Data, DoorbellMode, PostError, Remote, SendFlags, SendOp, Sge, Status, WcOpcode,
};

const REMOTE: Remote = Remote {
    addr: 0x1122_3344_5566_7788,
    rkey: 0xaabb_ccdd,
};

fn queues(wqebbs: u32) -> NullQueues {
    NullQueues::new(wqebbs, 16, 220).unwrap()
}

fn ctrl(idx: u16, opcode: u8, ds: u8, fm_ce_se: u8) -> Vec<u8> {
    let mut v = vec![0, (idx >> 8) as u8, idx as u8, opcode];
    v.extend_from_slice(&((NULL_QPN << 8) | ds as u32).to_be_bytes());
    v.extend_from_slice(&[0, 0, 0, fm_ce_se, 0, 0, 0, 0]);
    v
}

fn raddr() -> Vec<u8> {
    let mut v = REMOTE.addr.to_be_bytes().to_vec();
    v.extend_from_slice(&REMOTE.rkey.to_be_bytes());
    v.extend_from_slice(&[0; 4]);
    v
}

#[test]
fn inline_write_blueflame_bytes_record_and_register() {
    let mut q = queues(64);
    q.sq.set_mode(DoorbellMode::BlueFlame);
    q.sq.post(
        7,
        SendOp::Write(REMOTE),
        Data::Inline(b"ABCDEFGH"),
        SendFlags::SIGNALED,
    )
    .unwrap();
    let mut expect = ctrl(0, 0x08, 3, 0x08);
    expect.extend(raddr());
    expect.extend_from_slice(&[0x80, 0, 0, 8]);
    expect.extend_from_slice(b"ABCDEFGH");
    assert_eq!(q.sq.wqe_bytes(0, 44), expect);
    assert_eq!(q.sq.doorbell_record(), 1);
    // The whole 64-byte WQEBB was copied to the first half; the next half is in use now.
    assert_eq!(q.sq.uar().read64(NULL_BF_OFFSET).to_vec(), expect[..8]);
    assert_eq!(
        q.sq.uar().read64(NULL_BF_OFFSET + 16).to_vec(),
        expect[16..24]
    );
    assert_eq!(q.sq.register_offset(), NULL_BF_OFFSET + NULL_BF_SIZE);
}

#[test]
fn doorbell_mode_stores_only_the_first_eight_ctrl_bytes() {
    let mut q = queues(64);
    q.sq.set_mode(DoorbellMode::Doorbell);
    let sge = Sge {
        addr: 0x1000,
        len: 32,
        lkey: 0x55,
    };
    let one = [sge];
    q.sq.post(1, SendOp::Send, Data::Sges(&one), SendFlags::UNSIGNALED)
        .unwrap();
    let mut expect = ctrl(0, 0x0a, 2, 0);
    expect.extend_from_slice(&[0, 0, 0, 32, 0, 0, 0, 0x55, 0, 0, 0, 0, 0, 0, 0x10, 0]);
    assert_eq!(q.sq.wqe_bytes(0, 32), expect);
    assert_eq!(q.sq.uar().read64(NULL_BF_OFFSET).to_vec(), expect[..8]);
    assert_eq!(
        q.sq.uar().read64(NULL_BF_OFFSET + 8),
        [0; 8],
        "nothing but 8 bytes"
    );
    // The half toggles after plain doorbells too.
    assert_eq!(q.sq.register_offset(), NULL_BF_OFFSET + NULL_BF_SIZE);
}

#[test]
fn a_batch_rings_once_with_the_last_wqe() {
    let mut q = queues(64);
    q.sq.set_mode(DoorbellMode::BlueFlame);
    for i in 0..3u16 {
        q.sq.push(
            u64::from(i),
            SendOp::Write(REMOTE),
            Data::Inline(&[i as u8; 4]),
            SendFlags::UNSIGNALED,
        )
        .unwrap();
    }
    assert_eq!(
        q.sq.doorbell_record(),
        0,
        "nothing rung before ring_doorbell"
    );
    assert_eq!(q.sq.ring_doorbell(), 3);
    assert_eq!(q.sq.doorbell_record(), 3);
    // rdma-core's rule: a batch gets the 8-byte doorbell naming the last WQE (index 2).
    assert_eq!(
        q.sq.uar().read64(NULL_BF_OFFSET).to_vec(),
        ctrl(2, 0x08, 3, 0)[..8]
    );
    assert_eq!(q.sq.uar().read64(NULL_BF_OFFSET + 8), [0; 8]);
    assert_eq!(q.sq.ring_doorbell(), 0, "an empty batch rings nothing");
}

#[test]
fn inline_data_wraps_at_the_ring_end() {
    let mut q = queues(4);
    q.sq.set_mode(DoorbellMode::Doorbell);
    for i in 0..3 {
        q.sq.post(i, SendOp::Nop, Data::NONE, SendFlags::UNSIGNALED)
            .unwrap();
    }
    q.complete(2, Opcode::Nop, CqeOpcode::Req, 0);
    let mut out = [Completion::default(); 4];
    assert_eq!(q.cq.poll(&mut out), 1);
    assert_eq!(out[0].wr_id, 2);
    assert_eq!(
        q.sq.free_wqebbs(),
        4,
        "the CQE retired every earlier unsignaled WQE"
    );
    // 100 bytes of inline data: ds = 2 + ceil(104 / 16) = 9, three WQEBBs: slots 3, 0, 1.
    let payload: Vec<u8> = (0..100).collect();
    q.sq.post(
        9,
        SendOp::Write(REMOTE),
        Data::Inline(&payload),
        SendFlags::SIGNALED,
    )
    .unwrap();
    let mut expect = ctrl(3, 0x08, 9, 0x08);
    expect.extend(raddr());
    expect.extend_from_slice(&[0x80, 0, 0, 100]);
    expect.extend_from_slice(&payload);
    assert_eq!(q.sq.wqe_bytes(3, expect.len()), expect);
    assert_eq!(q.sq.producer_count(), 6);
    assert_eq!(q.sq.doorbell_record(), 6);
}

#[test]
fn inline_payloads_of_every_length_are_copied_exactly_and_nothing_more() {
    // The inline copy uses overlapping loads and stores of 1 to 16 bytes: every length up
    // to 220 must land exactly, with the rest of the ring untouched (still zero).
    for len in 0..=220usize {
        let mut q = queues(16);
        let payload: Vec<u8> = (0..len).map(|i| (i * 7 + 1) as u8).collect();
        q.sq.post(
            1,
            SendOp::Write(REMOTE),
            Data::Inline(&payload),
            SendFlags::SIGNALED,
        )
        .unwrap();
        let mut expect = ctrl(
            0,
            0x08,
            if len == 0 {
                2
            } else {
                2 + (4 + len).div_ceil(16)
            } as u8,
            0x08,
        );
        expect.extend(raddr());
        if len != 0 {
            expect.extend_from_slice(&(0x8000_0000u32 | len as u32).to_be_bytes());
            expect.extend_from_slice(&payload);
        }
        let ring = q.sq.wqe_bytes(0, 16 * 64);
        assert_eq!(ring[..expect.len()], expect[..], "length {len}");
        assert!(
            ring[expect.len()..].iter().all(|&b| b == 0),
            "length {len}: bytes written past the payload"
        );
    }
}

#[test]
fn blueflame_copy_of_a_two_bb_wqe_reads_across_the_ring_end() {
    let mut q = queues(4);
    q.sq.set_mode(DoorbellMode::BlueFlameLast);
    for i in 0..3 {
        q.sq.post(i, SendOp::Nop, Data::NONE, SendFlags::UNSIGNALED)
            .unwrap();
    }
    q.complete(2, Opcode::Nop, CqeOpcode::Req, 0);
    assert_eq!(q.cq.poll(&mut [Completion::default(); 1]), 1);
    let payload = [0x5au8; 100];
    q.sq.post(
        3,
        SendOp::Write(REMOTE),
        Data::Inline(&payload),
        SendFlags::SIGNALED,
    )
    .unwrap();
    let wqe = q.sq.wqe_bytes(3, 128);
    let half = q.sq.register_offset() ^ NULL_BF_SIZE;
    for k in 0..16 {
        assert_eq!(
            q.sq.uar().read64(half + 8 * k).to_vec(),
            wqe[8 * k..8 * k + 8]
        );
    }
}

#[test]
fn a_full_queue_refuses_and_overwrites_nothing() {
    let mut q = queues(4);
    for i in 0..4 {
        q.sq.post(
            i,
            SendOp::Write(REMOTE),
            Data::Inline(&[1; 8]),
            SendFlags::UNSIGNALED,
        )
        .unwrap();
    }
    let before = q.sq.wqe_bytes(0, 256);
    let err =
        q.sq.post(
            4,
            SendOp::Write(REMOTE),
            Data::Inline(&[2; 8]),
            SendFlags::SIGNALED,
        )
        .unwrap_err();
    assert_eq!(err, PostError::QueueFull { needed: 1, free: 0 });
    assert_eq!(q.sq.wqe_bytes(0, 256), before);
    assert_eq!(q.sq.doorbell_record(), 4);
}

#[test]
fn bad_posts_get_typed_errors_and_write_nothing() {
    let mut q = queues(16);
    let sge = Sge {
        addr: 0x2000,
        len: 8,
        lkey: 1,
    };
    let one = [sge];
    let five = [sge; 5];
    let short = [Sge { len: 4, ..sge }];
    let huge = [
        Sge {
            len: u32::MAX,
            ..sge
        },
        sge,
    ];
    let cases: Vec<(SendOp, Data<'_>, PostError)> = vec![
        (
            SendOp::Write(REMOTE),
            Data::Inline(&[0; 221]),
            PostError::InlineTooLarge { len: 221, max: 220 },
        ),
        (
            SendOp::Send,
            Data::Sges(&five),
            PostError::TooManySges { count: 5, max: 4 },
        ),
        (
            SendOp::Read(REMOTE),
            Data::Inline(&[0; 8]),
            PostError::InlineNotAllowed,
        ),
        (
            SendOp::FetchAdd {
                remote: Remote {
                    addr: 0x1004,
                    rkey: 1,
                },
                add: 1,
            },
            Data::Sges(&one),
            PostError::MisalignedAtomic { addr: 0x1004 },
        ),
        (
            SendOp::CompareSwap {
                remote: Remote {
                    addr: 0x1000,
                    rkey: 1,
                },
                compare: 0,
                swap: 1,
            },
            Data::Sges(&short),
            PostError::AtomicResultBuffer { len: 8 },
        ),
        (
            SendOp::Send,
            Data::Sges(&huge),
            PostError::MessageTooLarge {
                len: u32::MAX as u64 + 8,
            },
        ),
    ];
    for (op, data, expected) in cases {
        assert_eq!(q.sq.post(1, op, data, SendFlags::SIGNALED), Err(expected));
    }
    assert_eq!(q.sq.producer_count(), 0);
    assert_eq!(q.sq.doorbell_record(), 0);
}

#[test]
fn error_cqe_of_an_unsignaled_wqe_carries_its_wr_id_and_blocks_posting() {
    let mut q = queues(16);
    q.sq.post(
        10,
        SendOp::Write(REMOTE),
        Data::Inline(&[1; 8]),
        SendFlags::UNSIGNALED,
    )
    .unwrap();
    q.sq.post(
        11,
        SendOp::Write(REMOTE),
        Data::Inline(&[1; 8]),
        SendFlags::UNSIGNALED,
    )
    .unwrap();
    q.complete(
        0,
        Opcode::RdmaWrite,
        CqeOpcode::ReqErr,
        Syndrome::RemoteAccessErr as u8,
    );
    q.complete(
        1,
        Opcode::RdmaWrite,
        CqeOpcode::ReqErr,
        Syndrome::WrFlushErr as u8,
    );
    let mut out = [Completion::default(); 4];
    assert_eq!(q.cq.poll(&mut out), 2);
    assert_eq!(out[0].wr_id, 10);
    assert_eq!(out[0].qpn, NULL_QPN);
    assert_eq!(out[0].opcode, WcOpcode::RdmaWrite);
    let Status::Error(e) = out[0].status else {
        panic!("{:?}", out[0].status)
    };
    assert_eq!(e.syndrome(), Some(Syndrome::RemoteAccessErr));
    assert_eq!(e.wqe_counter, 0);
    assert_eq!(out[1].wr_id, 11);
    assert!(matches!(out[1].status, Status::Error(e) if e.is_flush()));
    assert_eq!(
        q.sq.post(12, SendOp::Nop, Data::NONE, SendFlags::SIGNALED),
        Err(PostError::NotReadyToSend)
    );
}

#[test]
fn unknown_and_compressed_cqes_are_reported_and_skipped() {
    let mut q = queues(16);
    let mut cqe = [0u8; 64];
    cqe[63] = 0x70; // opcode 7: not a CQE opcode, owner 0
    q.write_raw_cqe(&cqe);
    cqe[63] = 0x0c; // format 3: compressed
    q.write_raw_cqe(&cqe);
    let mut out = [Completion::default(); 4];
    assert_eq!(q.cq.poll(&mut out), 2);
    assert_eq!(out[0].status, Status::UnknownOpcode(0x70));
    assert_eq!(out[1].status, Status::Compressed);
    assert_eq!(q.cq.consumer_index(), 2);
}

#[test]
fn owner_bit_alternates_per_pass_and_stale_entries_are_not_taken() {
    let mut q = queues(64);
    let mut out = [Completion::default(); 16];
    for round in 0..3u32 {
        for i in 0..16u16 {
            let wr = u64::from(round) * 16 + u64::from(i);
            q.sq.post(wr, SendOp::Nop, Data::NONE, SendFlags::SIGNALED)
                .unwrap();
            q.complete((round * 16) as u16 + i, Opcode::Nop, CqeOpcode::Req, 0);
        }
        assert_eq!(q.cq.poll(&mut out), 16);
        assert!(out
            .iter()
            .enumerate()
            .all(|(i, c)| c.wr_id == u64::from(round) * 16 + i as u64
                && c.opcode == WcOpcode::Nop
                && c.status.is_ok()));
        // The entries of this pass are still there but carry the old owner bit.
        assert_eq!(q.cq.poll(&mut out), 0);
    }
    assert_eq!(q.produced(), 48);
}

/// An empty send queue is refused before any memory is touched: a ring needs a power of two
/// of at least one WQEBB (the model and hardware refuse it in `QpConfig::check`).
#[test]
fn an_empty_send_queue_is_refused() {
    assert!(matches!(
        NullQueues::new(0, 64, 64),
        Err(mlx5_direct::Error::InvalidArgument(_))
    ));
}

/// The default mode is rdma-core's rule (qp.c `post_send_db`), what hardware is known to
/// take: a WQE rung alone is BlueFlame-copied, a batch gets the 8-byte doorbell (the first 8
/// bytes of its last WQE) and no copy. `BlueFlameLast` is only ever asked for.
#[test]
fn the_default_mode_is_rdma_cores_rule() {
    let mut q = queues(16);
    assert_eq!(q.sq.effective_mode(), DoorbellMode::BlueFlame);
    let payload = [0x5au8; 16];
    let write = |q: &mut NullQueues, wr_id| {
        q.sq.push(
            wr_id,
            SendOp::Write(REMOTE),
            Data::Inline(&payload),
            SendFlags::UNSIGNALED,
        )
        .unwrap()
    };
    // Alone: the one-WQEBB WQE copied to the register's current half.
    let half = q.sq.register_offset();
    write(&mut q, 0);
    q.sq.ring_doorbell();
    let wqe = q.sq.wqe_bytes(0, 64);
    for k in 0..8 {
        assert_eq!(
            q.sq.uar().read64(half + 8 * k).to_vec(),
            wqe[8 * k..8 * k + 8]
        );
    }
    // A batch of two on the other half: its first word is the last WQE's first 8 bytes, the
    // rest of the half keeps nothing of that WQE.
    let half = q.sq.register_offset();
    write(&mut q, 1);
    write(&mut q, 2);
    q.sq.ring_doorbell();
    let last = q.sq.wqe_bytes(2, 64);
    assert_eq!(q.sq.uar().read64(half).to_vec(), last[..8]);
    for k in 1..8 {
        assert_eq!(q.sq.uar().read64(half + 8 * k), [0; 8], "word {k}");
    }
}
