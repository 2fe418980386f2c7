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
        offset_of!(Completion, uidx_be),
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
        sq: Arc::new(SqShared::new(16)),
        recv: RecvShared::None,
        errored: Arc::default(),
        sq_error: None,
        streams: false,
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
