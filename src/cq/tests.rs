use super::*;
use crate::prm::Opcode;

#[test]
fn a_requester_completion_sets_its_fields_first_and_the_zero_ones_after() {
    use core::mem::offset_of;
    // Set by every completion: 0..32 (user index and status included); the receive's
    // details and the timestamp, zero on the requester path, after them.
    let offsets = [
        offset_of!(Completion, wr_id),
        offset_of!(Completion, qpn),
        offset_of!(Completion, byte_len),
        offset_of!(Completion, uidx_wire),
        offset_of!(Completion, opcode),
        offset_of!(Completion, status),
        offset_of!(Completion, extra),
        offset_of!(Completion, rqpn),
        offset_of!(Completion, slid),
        offset_of!(Completion, flags),
        offset_of!(Completion, l4_l3),
        offset_of!(Completion, vlan_info),
        offset_of!(Completion, timestamp),
    ];
    // 32..56 in one run of zeros (two stores), no zero field between the others.
    assert_eq!(offsets, [0, 8, 12, 16, 20, 24, 32, 36, 40, 42, 43, 44, 48]);
    assert_eq!(size_of::<Completion>(), 56);
}

#[test]
fn the_accessors_read_what_the_builders_wrote() {
    let c = Completion::default();
    assert_eq!(
        (c.imm(), c.invalidated_rkey(), c.pkey_index()),
        (None, None, 0)
    );
    assert_eq!((c.src_qp(), c.slid(), c.ud_flags(), c.sl()), (0, 0, 0, 0));
    assert_eq!(
        (c.solicited(), c.data_in_cqe(), c.grh_present()),
        (false, false, false)
    );
    assert_eq!((c.user_index(), c.timestamp()), (0, 0));
    let c = c
        .with_pkey_index(0xffff)
        .with_src_qp(0xfff_ffff)
        .with_ud_flags(0x13)
        .with_slid(7)
        .with_solicited(true)
        .with_user_index(0xab_cdef)
        .with_timestamp(1 << 40)
        .with_data_in_cqe(true);
    assert_eq!(
        (c.imm(), c.invalidated_rkey(), c.pkey_index()),
        (None, None, 0xffff)
    );
    assert_eq!(
        (c.src_qp(), c.ud_flags(), c.sl(), c.grh_present()),
        (0xff_ffff, 0x13, 3, true)
    );
    assert_eq!((c.slid(), c.solicited(), c.data_in_cqe()), (7, true, true));
    assert_eq!((c.user_index(), c.timestamp()), (0xab_cdef, 1 << 40));
    // One CQE field holds the immediate, the invalidated rkey or the P_Key.
    let imm = c.with_imm(Some(0));
    assert_eq!(
        (imm.imm(), imm.invalidated_rkey(), imm.pkey_index()),
        (Some(0), None, 0)
    );
    let inv = imm.with_invalidated_rkey(Some(9));
    assert_eq!(
        (inv.imm(), inv.invalidated_rkey(), inv.pkey_index()),
        (None, Some(9), 0)
    );
    assert_eq!(inv.with_imm(None), inv);
    let none = inv.with_invalidated_rkey(None);
    assert_eq!(
        (none.imm(), none.invalidated_rkey(), none.pkey_index()),
        (None, None, 0)
    );
    assert_ne!(imm, c.with_pkey_index(0).with_imm(Some(1)));
    // Clearing a flag leaves the others.
    let c = c.with_solicited(false);
    assert_eq!(
        (c.solicited(), c.data_in_cqe(), c.src_qp()),
        (false, true, 0xff_ffff)
    );
    // The VLAN tag: present or not, a tag of 0 included, the other flags kept.
    assert_eq!(c.cvlan(), None);
    let v = c.with_cvlan(Some(0xa123));
    assert_eq!(
        (v.cvlan(), v.data_in_cqe(), v.solicited()),
        (Some(0xa123), true, false)
    );
    assert_eq!(v.with_cvlan(Some(0)).cvlan(), Some(0));
    assert_eq!(v.with_cvlan(None), c);
}

#[test]
fn a_detached_hot_qp_completes_nothing_and_its_number_is_looked_up_again() {
    use crate::null::{NullQueues, NULL_QPN};
    use crate::{Data, Remote, SendFlags, SendOp};
    let mut q = NullQueues::new(16, 8, 64).unwrap();
    let mut out = [Completion::default(); 1];
    let write = SendOp::Write(Remote { addr: 0, rkey: 1 });
    for wr_id in [1, 2] {
        let data = Data::Inline(&[7; 8]);
        q.sq.post(wr_id, write, data, SendFlags::SIGNALED).unwrap();
    }
    // WQE 0 completes: the QP is the hot one.
    q.complete(0, Opcode::RdmaWrite, CqeOpcode::Req, 0);
    assert_eq!(q.cq.poll(&mut out), 1);
    assert_eq!((out[0].wr_id, out[0].status), (1, Status::Success));
    // Detached (destroyed): its CQE for WQE 1 completes nothing.
    q.cq.qps.attachments.detach(NULL_QPN);
    q.complete(1, Opcode::RdmaWrite, CqeOpcode::Req, 0);
    assert_eq!(q.cq.poll(&mut out), 1);
    assert_eq!((out[0].status, out[0].qpn), (Status::UnknownQp, NULL_QPN));
    // A new QP with the same number: its own state, where WQE 1 is not outstanding.
    q.cq.qps.attachments.attach(QpEntry {
        qpn: NULL_QPN,
        sq: Arc::new(SqShared::new(16, NULL_QPN)),
        recv: RecvShared::None,
        errored: Arc::default(),
        sqe: false,
        streams: false,
        eth_rq: false,
    });
    q.complete(1, Opcode::RdmaWrite, CqeOpcode::Req, 0);
    assert_eq!(q.cq.poll(&mut out), 1);
    assert_eq!(
        (out[0].status, out[0].qpn),
        (Status::UnknownWqe(1), NULL_QPN)
    );
    // The old queue still holds WQE 1 (nothing retired it).
    assert_eq!(q.sq.outstanding_wqebbs(), 1);
}

#[test]
fn the_owner_key_tells_ours_and_the_inline_requester_case() {
    for op_own in 0..=255u8 {
        for owner in [0, 1] {
            let key = owner_key(op_own, owner);
            let ours = op_own & 1 == owner && op_own >> 4 != 0xf;
            assert_eq!(key < OWNED_BELOW, ours, "{op_own:#04x} {owner}");
            // Ours, opcode 0 (REQ), format 0 (normal), the solicited-event bit aside.
            let req = (op_own ^ owner) & 0xfd == 0;
            assert_eq!(key < REQ_INLINE, req, "{op_own:#04x} {owner}");
        }
    }
}

#[test]
fn send_opcode_table_names_every_posted_opcode_and_only_those() {
    let posted = [
        (Opcode::Send, WcOpcode::Send),
        (Opcode::SendImm, WcOpcode::Send),
        (Opcode::SendInval, WcOpcode::Send),
        (Opcode::RdmaWrite, WcOpcode::RdmaWrite),
        (Opcode::RdmaWriteImm, WcOpcode::RdmaWrite),
        (Opcode::RdmaRead, WcOpcode::RdmaRead),
        (Opcode::AtomicCs, WcOpcode::CompareSwap),
        (Opcode::AtomicFa, WcOpcode::FetchAdd),
        (Opcode::AtomicMaskedCs, WcOpcode::MaskedCompareSwap),
        (Opcode::AtomicMaskedFa, WcOpcode::MaskedFetchAdd),
        (Opcode::Nop, WcOpcode::Nop),
    ];
    for op in 0..=255u8 {
        let expect = posted
            .iter()
            .find(|(o, _)| *o as u8 == op)
            .map_or(WcOpcode::Other(op), |(_, wc)| *wc);
        assert_eq!(WcOpcode::from_send_opcode(op), expect, "opcode {op:#04x}");
    }
}

/// The lean poll hands over exactly the completions `poll` returns, in order, whatever
/// the CQE (success, READ, error, a WQE it does not know, a QP it does not serve), and
/// each view's fields are those of its completion.
#[test]
fn poll_with_sees_what_poll_returns() {
    use crate::null::NullQueues;
    use crate::prm::CqeOpcode;
    use crate::sq::{Data, Remote, SendFlags, SendOp, Sge};

    let remote = Remote {
        addr: 0x8000,
        rkey: 3,
    };
    let result = [Sge {
        addr: 0x10,
        len: 8,
        lkey: 1,
    }];
    let ops = [
        (SendOp::Write(remote), Data::Inline(&[1; 8][..])),
        (SendOp::Read(remote), Data::Sges(&result[..])),
        (SendOp::FetchAdd { remote, add: 1 }, Data::Sges(&result[..])),
        (SendOp::Nop, Data::NONE),
    ];
    let (mut a, mut b) = (
        NullQueues::new(64, 64, 64).unwrap(),
        NullQueues::new(64, 64, 64).unwrap(),
    );
    let (mut polled_a, mut polled_b) = (Vec::new(), Vec::new());
    for round in 0..30u16 {
        for q in [&mut a, &mut b] {
            let pi = q.sq.producer_count() as u16;
            for (i, (op, data)) in ops.iter().enumerate() {
                let wr_id = u64::from(round) * 10 + i as u64;
                q.sq.post(wr_id, *op, *data, SendFlags::SIGNALED).unwrap();
            }
            for (i, opcode) in [
                Opcode::RdmaWrite,
                Opcode::RdmaRead,
                Opcode::AtomicFa,
                Opcode::Nop,
            ]
            .into_iter()
            .enumerate()
            {
                let at = pi + i as u16;
                match (round, i) {
                    // A retry-exceeded error CQE for the last WRITE (the QP is in error
                    // after it: the last round).
                    (29, 0) => q.complete(at, opcode, CqeOpcode::ReqErr, 0x15),
                    // A CQE naming a WQE that is not outstanding.
                    (r, 2) if r % 5 == 4 => q.complete(at + 40, opcode, CqeOpcode::Req, 0),
                    _ => q.complete(at, opcode, CqeOpcode::Req, 0),
                }
            }
            // A CQE of a QP this CQ does not serve.
            if round % 7 == 6 {
                let mut cqe = [0u8; 64];
                cqe[56..60].copy_from_slice(&0x0800_0777u32.to_be_bytes());
                cqe[63] = ((q.produced() / 64) & 1) as u8;
                q.write_raw_cqe(&cqe);
            }
        }
        // Polled one at a time, then in twos (the loop's two exits).
        let max = 1 + usize::from(round % 2);
        loop {
            let mut out = [Completion::default(); 2];
            let n = a.cq.poll(&mut out[..max]);
            polled_a.extend_from_slice(&out[..n]);
            let mut seen = 0;
            let m = b.cq.poll_with(max, |c| {
                let full = c.completion();
                assert_eq!(
                    (
                        c.wr_id(),
                        c.status(),
                        c.is_ok(),
                        c.qpn(),
                        c.opcode(),
                        c.byte_len()
                    ),
                    (
                        full.wr_id,
                        full.status,
                        full.status.is_ok(),
                        full.qpn,
                        full.opcode,
                        full.byte_len
                    )
                );
                assert_eq!(format!("{c:?}"), format!("{full:?}"));
                polled_b.push(full);
                seen += 1;
            });
            assert_eq!((n, m), (m, seen));
            assert_eq!(a.cq.consumer_index(), b.cq.consumer_index());
            if n == 0 {
                break;
            }
        }
    }
    assert_eq!(polled_a, polled_b);
    assert!(polled_a.len() > 120, "{}", polled_a.len());
    // Every kind was seen: errors, unknown WQEs and QPs, READ and atomic lengths.
    let count = |f: &dyn Fn(&Completion) -> bool| polled_a.iter().filter(|c| f(c)).count();
    assert_eq!(count(&|c| matches!(c.status, Status::Error(_))), 1);
    assert_eq!(count(&|c| matches!(c.status, Status::UnknownWqe(_))), 6);
    assert_eq!(count(&|c| c.status == Status::UnknownQp), 4);
    assert_eq!(count(&|c| c.status.is_ok() && c.byte_len == 8), 24);
}

/// An error CQE reaches the lean poll's closure as an error, with its syndrome, and
/// retires its WQE.
#[test]
fn poll_with_reports_an_error_cqe() {
    use crate::null::NullQueues;
    use crate::prm::CqeOpcode;
    use crate::sq::{Data, SendFlags, SendOp};

    let mut q = NullQueues::new(8, 8, 16).unwrap();
    q.sq.post(41, SendOp::Nop, Data::NONE, SendFlags::SIGNALED)
        .unwrap();
    q.complete(0, Opcode::Nop, CqeOpcode::ReqErr, 0x05);
    let mut seen = Vec::new();
    assert_eq!(
        q.cq.poll_with(4, |c| seen.push((c.wr_id(), c.status(), c.is_ok()))),
        1
    );
    let [(wr_id, Status::Error(e), false)] = seen[..] else {
        panic!("{seen:?}");
    };
    assert_eq!((wr_id, e.syndrome, e.wqe_counter), (41, 0x05, 0));
    assert_eq!(q.sq.outstanding_wqebbs(), 0);
    assert_eq!(q.cq.poll_with(4, |_| unreachable!()), 0);
}

#[test]
fn the_plain_builders_and_the_pkey_set_their_field_alone() {
    let c = Completion::default()
        .with_wr_id(3)
        .with_solicited(true)
        .with_status(Status::UnknownWqe(9));
    assert_eq!(
        (c.status, c.wr_id, c.solicited()),
        (Status::UnknownWqe(9), 3, true)
    );
    let c = c
        .with_qpn(0x12_3456)
        .with_byte_len(77)
        .with_opcode(WcOpcode::RdmaRead);
    assert_eq!(
        (c.wr_id, c.qpn, c.byte_len, c.opcode, c.status),
        (3, 0x12_3456, 77, WcOpcode::RdmaRead, Status::UnknownWqe(9))
    );
    // The P_Key index takes the shared word from an immediate or an invalidated rkey, and
    // leaves the other flags.
    for shared in [
        c.with_imm(Some(0x1111_2222)),
        c.with_invalidated_rkey(Some(0x3333_4444)),
    ] {
        let p = shared.with_pkey_index(0x8005);
        assert_eq!(
            (p.imm(), p.invalidated_rkey(), p.pkey_index()),
            (None, None, 0x8005)
        );
        assert_eq!((p.solicited(), p.status), (true, Status::UnknownWqe(9)));
        assert_eq!(p, c.with_pkey_index(0x8005));
    }
}

/// Writes a CQE of `cqe_opcode` naming send opcode `opcode` (its top byte), QP `qpn` and
/// WQE counter `counter` as the next entry of `q`'s CQ.
fn write_cqe(
    q: &mut crate::null::NullQueues,
    cqe_opcode: CqeOpcode,
    opcode: u8,
    qpn: u32,
    counter: u16,
) {
    let mut cqe = [0u8; crate::prm::CQE_SIZE];
    cqe[55] = crate::prm::Syndrome::LocalLengthErr as u8;
    cqe[56..60].copy_from_slice(&(u32::from(opcode) << 24 | qpn).to_be_bytes());
    cqe[60..62].copy_from_slice(&counter.to_be_bytes());
    cqe[63] = (cqe_opcode as u8) << 4 | ((q.produced() / 16) & 1) as u8;
    q.write_raw_cqe(&cqe);
}

#[test]
fn reports_of_unknown_qps_and_wqes_name_the_cqes_opcode() {
    use crate::null::{NullQueues, NULL_QPN};
    use crate::{Data, SendFlags, SendOp};
    use CqeOpcode::{Req, ReqErr, RespErr, RespSendInv, RespWrImm};
    use Status::{UnknownQp as NoQp, UnknownWqe as NoWqe};
    let mut q = NullQueues::new(16, 16, 64).unwrap();
    q.sq.post(1, SendOp::Nop, Data::NONE, SendFlags::SIGNALED)
        .unwrap();
    let cases = [
        (Req, Opcode::RdmaRead, 0x99, WcOpcode::RdmaRead, NoQp),
        (
            Req,
            Opcode::RdmaWrite,
            NULL_QPN,
            WcOpcode::RdmaWrite,
            NoWqe(5),
        ),
        (
            Req,
            Opcode::AtomicCs,
            NULL_QPN,
            WcOpcode::CompareSwap,
            NoWqe(5),
        ),
        (ReqErr, Opcode::AtomicFa, 0x77, WcOpcode::FetchAdd, NoQp),
        (ReqErr, Opcode::SendImm, NULL_QPN, WcOpcode::Send, NoWqe(5)),
        (
            RespWrImm,
            Opcode::Nop,
            0x55,
            WcOpcode::RecvRdmaWithImm,
            NoQp,
        ),
        (
            RespWrImm,
            Opcode::Nop,
            NULL_QPN,
            WcOpcode::RecvRdmaWithImm,
            NoWqe(5),
        ),
        (
            RespSendInv,
            Opcode::RdmaWrite,
            NULL_QPN,
            WcOpcode::Recv,
            NoWqe(5),
        ),
        (RespErr, Opcode::RdmaWrite, 0x55, WcOpcode::Recv, NoQp),
    ];
    let mut out = [Completion::default(); 1];
    for (cqe_opcode, opcode, qpn, wc, status) in cases {
        write_cqe(&mut q, cqe_opcode, opcode as u8, qpn, 5);
        assert_eq!(q.cq.poll(&mut out), 1);
        assert_eq!(
            (out[0].status, out[0].opcode, out[0].qpn, out[0].wr_id),
            (status, wc, qpn, 0),
            "{cqe_opcode:?} {opcode:?}"
        );
    }
    // Nothing was retired: the NOP still completes.
    q.complete(0, Opcode::Nop, CqeOpcode::Req, 0);
    assert_eq!(q.cq.poll(&mut out), 1);
    assert_eq!(
        (out[0].wr_id, out[0].opcode, out[0].status),
        (1, WcOpcode::Nop, Status::Success)
    );
}

/// What creating a raw packet QP asks of a CQ's attachments: whether any QP is attached,
/// whether a raw QP's receive queue is, the same QP attached again (its receive CQ as its
/// send CQ) kept once with the raw flag of either attach, and a detach that leaves none.
#[test]
fn attachments_tell_any_qp_and_a_raw_receive_queue_until_detached() {
    let entry = |qpn, sq: &Arc<SqShared>, eth_rq| QpEntry {
        qpn,
        sq: sq.clone(),
        recv: RecvShared::None,
        errored: Arc::default(),
        sqe: false,
        streams: false,
        eth_rq,
    };
    let (sq7, sq9) = (
        Arc::new(SqShared::new(16, 7)),
        Arc::new(SqShared::new(16, 9)),
    );
    let a = CqAttachments::default();
    assert_eq!((a.serves_any(), a.serves_eth_rq()), (false, false));
    a.attach(entry(7, &sq7, false));
    assert_eq!((a.serves_any(), a.serves_eth_rq()), (true, false));
    // The same QP again, now with its raw receive queue: one entry, raw.
    a.attach(entry(7, &sq7, true));
    assert_eq!((a.serves_any(), a.serves_eth_rq()), (true, true));
    // And once more without: the flag stays.
    a.attach(entry(7, &sq7, false));
    assert_eq!(a.entries.lock().unwrap().len(), 1);
    assert_eq!((a.serves_any(), a.serves_eth_rq()), (true, true));
    // Another QP, and one of the same number with another queue: their own entries.
    let sq7b = Arc::new(SqShared::new(16, 7));
    a.attach(entry(9, &sq9, false));
    a.attach(entry(7, &sq7b, false));
    assert_eq!(a.entries.lock().unwrap().len(), 3);
    a.detach(7);
    assert!(sq7.is_gone() && sq7b.is_gone() && !sq9.is_gone());
    assert_eq!((a.serves_any(), a.serves_eth_rq()), (true, false));
    a.detach(9);
    assert!(sq9.is_gone());
    assert_eq!((a.serves_any(), a.serves_eth_rq()), (false, false));
}

/// An XRC SRQ's key: the 24 bits of `srqn_uidx` its CQEs carry (bits 31..24 of the word
/// dropped: CQE version 1's user index is 24 bits), with bit 31 set, which no 24-bit QPN has.
#[test]
fn an_xrc_srq_key_is_the_24_bit_index_with_bit_31() {
    assert_eq!(xrc_srq_key(0), 0x8000_0000);
    assert_eq!(xrc_srq_key(0x12_3456), 0x8012_3456);
    assert_eq!(xrc_srq_key(0xab12_3456), 0x8012_3456);
    assert_eq!(xrc_srq_key(u32::MAX), 0x80ff_ffff);
}

/// A CQ reports the number and the entry count of its description (`mlx5dv_cq`'s `cqn`
/// and `cqe_cnt`), and starts at consumer index 0. Arming it writes the arm word
/// `sn << 28 | cmd | ci` (sn: events taken mod 4; cmd: `MLX5_CQ_DB_REQ_NOT` 0 or
/// `MLX5_CQ_DB_REQ_NOT_SOL` 1 << 24) big-endian to record word 1 (`MLX5_CQ_ARM_DB`), then
/// `word << 32 | cqn` big-endian to the UAR at 0x20 (`MLX5_CQ_DOORBELL`), as libmlx5's
/// `mlx5_arm_cq` does.
#[test]
fn a_cq_reports_its_description_and_arms_with_its_number_index_and_sequence() {
    use crate::mem::Memory;
    use crate::mmio::NullUar;
    let (buf, dbrec) = (
        Memory::new(32 * CQE_SIZE).unwrap(),
        Memory::new(64).unwrap(),
    );
    let desc = CqDesc {
        buf: buf.non_null(),
        cqe_cnt: 32,
        cqe_size: CQE_SIZE,
        dbrec: dbrec.non_null().cast(),
        cqn: 0xab_cdef,
    };
    let events = Arc::new(AtomicU32::new(0));
    // SAFETY: both allocations outlive the queue (dropped at the end of the test, after it).
    let mut cq = unsafe {
        CompletionQueue::new(
            &desc,
            NullUar::default(),
            Arc::default(),
            events.clone(),
            false,
        )
    };
    assert_eq!(
        (cq.cqn(), cq.capacity(), cq.consumer_index()),
        (0xab_cdef, 32, 0)
    );
    let words = || {
        let mut w = [0u8; 8];
        dbrec.read(0, &mut w);
        w
    };
    cq.arm(false);
    assert_eq!(words(), [0; 8]);
    assert_eq!(cq.uar.read64(0x20), [0, 0, 0, 0, 0, 0xab, 0xcd, 0xef]);
    // One CQE consumed, five events taken: sequence 1, index 1.
    buf.write(63, &[(CqeOpcode::RespSend as u8) << 4]);
    assert!(cq.next_raw().is_some());
    events.store(5, Ordering::Release);
    cq.arm(true);
    assert_eq!(words(), [0, 0, 0, 1, 0x11, 0, 0, 1]);
    assert_eq!(cq.uar.read64(0x20), [0x11, 0, 0, 1, 0, 0xab, 0xcd, 0xef]);
    // Seven: sequence 3, the next CQE only.
    events.store(7, Ordering::Release);
    cq.arm(false);
    assert_eq!(words(), [0, 0, 0, 1, 0x30, 0, 0, 1]);
    assert_eq!(cq.uar.read64(0x20), [0x30, 0, 0, 1, 0, 0xab, 0xcd, 0xef]);
    drop(cq);
}

/// The raw poll of a striding RQ's CQ: each CQE software owns (owner bit of its pass, a
/// valid opcode) whole and once, over three passes of the ring, and nothing where the
/// device has not written this pass.
#[test]
fn next_raw_hands_over_each_owned_cqe_once_over_the_passes() {
    use crate::null::NullQueues;
    let mut q = NullQueues::new(8, 4, 64).unwrap();
    assert_eq!(q.cq.next_raw(), None);
    let cqe_of = |k: u32, owner: u8| {
        let mut cqe = [0u8; CQE_SIZE];
        for (i, b) in cqe.iter_mut().enumerate() {
            *b = (k as usize * 7 + i) as u8;
        }
        cqe[63] = (CqeOpcode::RespSend as u8) << 4 | owner;
        cqe
    };
    let mut k = 0;
    // One at a time, then in threes: 11 CQEs, the ring of 4 entries wraps twice.
    for batch in [1, 1, 1, 1, 1, 3, 3] {
        let written: Vec<_> = (0..batch)
            .map(|_| {
                let cqe = cqe_of(k, ((k / 4) & 1) as u8);
                q.write_raw_cqe(&cqe);
                k += 1;
                cqe
            })
            .collect();
        for cqe in written {
            assert_eq!(q.cq.next_raw(), Some(cqe), "before CQE {k}");
        }
        assert_eq!(q.cq.next_raw(), None, "after CQE {k}");
        assert_eq!(q.cq.consumer_index(), k);
    }
    assert_eq!(k, 11);
}

#[test]
fn a_flush_and_an_odp_fault_are_told_by_both_syndromes() {
    let e = |syndrome, vendor_syndrome| WcError {
        syndrome,
        vendor_syndrome,
        wqe_counter: 7,
    };
    // WR_FLUSH_ERR 0x05; REMOTE_ABORTED_ERR 0x22 with MLX5_CQE_VENDOR_SYNDROME_ODP_PFAULT
    // 0x93 (rdma-core's is_odp_pfault_err).
    let kinds = |w: WcError| (w.is_flush(), w.is_odp_fault());
    assert_eq!(kinds(e(0x05, 0x00)), (true, false));
    assert_eq!(kinds(e(0x05, 0x93)), (true, false));
    assert_eq!(kinds(e(0x04, 0x00)), (false, false));
    assert_eq!(kinds(e(0x22, 0x93)), (false, true));
    assert_eq!(kinds(e(0x22, 0x92)), (false, false));
    assert_eq!(kinds(e(0x21, 0x93)), (false, false));
    assert_eq!(
        e(0x22, 0x93).to_string(),
        "REMOTE_ABORTED_ERR (0x22, vendor 0x93) at WQE 7"
    );
    assert_eq!(
        e(0x30, 0x01).to_string(),
        "unknown syndrome (0x30, vendor 0x01) at WQE 7"
    );
}

#[test]
fn only_a_raw_receive_has_ethernet_fields() {
    use crate::prm::{HdrType, RssHashType};
    let c = Completion {
        slid: 0x07,
        l4_l3: 0x27,
        vlan_info: 0x0123,
        rqpn: 0x0300_0042,
        extra: 0xdead_beef,
        ..Completion::default()
    };
    let others = completion::HAS_IMM | completion::SOLICITED | completion::DATA_IN_CQE;
    for flags in [0, others, completion::HAS_INV] {
        assert_eq!(Completion { flags, ..c }.eth(), None, "flags {flags:#x}");
    }
    // Bit 0 of l4_l3_hdr_type: the frame has a C-VLAN tag.
    let hdr = HdrType::from_bits(0x27);
    assert!(hdr.vlan());
    let eth = Completion {
        flags: completion::ETH,
        ..c
    }
    .eth()
    .unwrap();
    assert_eq!(
        (eth.ok, eth.hdr, eth.vlan, eth.flow_tag, eth.rss_hash),
        (0x07, hdr, Some(0x0123), 0x42, 0xdead_beef)
    );
    assert_eq!(eth.rss_type, RssHashType::from_bits(0x03));
}

#[test]
fn a_builder_replaces_its_field_and_keeps_the_others() {
    // The source QP and the UD flags share `rqpn` (bits 23..0 and 31..24).
    let c = Completion::default()
        .with_ud_flags(0x13)
        .with_src_qp(0x12_0012)
        .with_src_qp(0x21)
        .with_ud_flags(0x20);
    assert_eq!((c.src_qp(), c.ud_flags()), (0x21, 0x20));
    // Setting a flag that is set leaves it set.
    let c = c.with_solicited(true).with_solicited(true);
    assert!(c.solicited());
    assert!(c
        .with_data_in_cqe(true)
        .with_data_in_cqe(true)
        .data_in_cqe());
    let text = format!("{:?}", c.with_imm(Some(5)));
    assert!(
        text.starts_with("Completion { wr_id: 0, qpn: 0, byte_len: 0, opcode: "),
        "{text}"
    );
    for field in [
        "imm: Some(5)",
        "src_qp: 33",
        "ud_flags: 32",
        "solicited: true",
    ] {
        assert!(text.contains(field), "{field} in {text}");
    }
}
