//! Test bodies every backend runs: `tests/sim_*.rs` on the model, `tests/verbs_hw.rs` on a
//! ConnectX NIC. Each asserts only what the driver sees (completions, bytes, states), so the
//! same body holds on both; model-only checks (statistics, PCIe counts) stay in the sim
//! tests, which get the sides back.

use std::time::Duration;

use mlx5_direct::backend::Backend;
use mlx5_direct::prm::Syndrome;
use mlx5_direct::sq::{MaskedCs32Args, MaskedCs64Args};
use mlx5_direct::{
    Access, AhAttr, AsyncEvent, CompChannel, Completion, ConnectOptions, Context, Cq, Data,
    DmSlots, DoorbellMode, Error, GlobalRoute, MemoryRegion, PostError, Qp, QpConfig, QpPsn,
    QpState, Remote, SendFlags, SendOp, SendWr, Status, Transport, WcOpcode, UD_GRH_BYTES,
};

use super::{assert_empty, connect, connect_with, poll_n, rig_pair, Drive, Rig, Side, MR_LEN};

/// The syndrome of an error completion.
pub fn syndrome(status: Status) -> Option<Syndrome> {
    match status {
        Status::Error(e) => e.syndrome(),
        _ => None,
    }
}

/// Polls, on a UD or UC side, the LOCAL_PROT_ERR of a send with a bad key and the flush of
/// the send posted behind it, and asserts the QP is in SQE, not ERR.
pub fn expect_sqe_after_a_bad_key<B: Drive>(side: &mut Side<B>) {
    let cs = poll_n(side, 2);
    assert_eq!(
        cs.iter().map(|c| syndrome(c.status)).collect::<Vec<_>>(),
        [Some(Syndrome::LocalProtErr), Some(Syndrome::WrFlushErr)]
    );
    assert_eq!(side.qp.state(), QpState::Sqe);
}

/// An inline WRITE in each doorbell mode lands and completes once.
pub fn inline_write_lands_and_completes<R: Rig>(rig: &R) -> (Side<R::B>, Side<R::B>) {
    let (mut a, mut b) = rig_pair(rig);
    let remote = b.mr.remote(128);
    for mode in [DoorbellMode::Doorbell, DoorbellMode::BlueFlame] {
        a.qp.sq().set_mode(mode);
        a.qp.sq()
            .post(
                42,
                SendOp::Write(remote),
                Data::Inline(b"hello, mlx5"),
                SendFlags::SIGNALED,
            )
            .unwrap();
        let c = poll_n(&mut a, 1)[0];
        assert_eq!(c.wr_id, 42);
        assert_eq!(c.opcode, WcOpcode::RdmaWrite);
        assert_eq!(c.status, Status::Success);
        assert_eq!(c.qpn, a.qp.qpn());
        let mut buf = [0u8; 11];
        b.mr.read(128, &mut buf);
        assert_eq!(&buf, b"hello, mlx5");
        b.mr.write(128, &[0; 11]);
        assert_empty(&mut b);
    }
    (a, b)
}

/// A SEND with immediate data reaches a posted receive.
pub fn send_with_immediate_reaches_a_posted_receive<R: Rig>(rig: &R) {
    let (mut a, mut b) = rig_pair(rig);
    let rsge = b.mr.sge(0, 64);
    b.qp.rq().unwrap().post(7, &[rsge]).unwrap();
    a.mr.write(0, b"0123456789abcdef");
    let sge = a.mr.sge(0, 16);
    a.qp.sq()
        .post(
            1,
            SendOp::SendImm(0xdead_beef),
            Data::Sges(&[sge]),
            SendFlags::SIGNALED,
        )
        .unwrap();
    let c = poll_n(&mut a, 1)[0];
    assert_eq!(
        (c.wr_id, c.opcode, c.status),
        (1, WcOpcode::Send, Status::Success)
    );
    let r = poll_n(&mut b, 1)[0];
    assert_eq!(r.wr_id, 7);
    assert_eq!(r.opcode, WcOpcode::Recv);
    assert_eq!(r.byte_len, 16);
    assert_eq!(r.imm(), Some(0xdead_beef));
    let mut buf = [0u8; 16];
    b.mr.read(0, &mut buf);
    assert_eq!(&buf, b"0123456789abcdef");
}

/// A READ fetches the remote bytes.
pub fn read_fetches_remote_bytes<R: Rig>(rig: &R) {
    let (mut a, b) = rig_pair(rig);
    b.mr.write(256, b"remote bytes!");
    let sge = a.mr.sge(64, 13);
    a.qp.sq()
        .post(
            3,
            SendOp::Read(b.mr.remote(256)),
            Data::Sges(&[sge]),
            SendFlags::SIGNALED,
        )
        .unwrap();
    let c = poll_n(&mut a, 1)[0];
    assert_eq!(
        (c.wr_id, c.opcode, c.status, c.byte_len),
        (3, WcOpcode::RdmaRead, Status::Success, 13)
    );
    let mut buf = [0u8; 13];
    a.mr.read(64, &mut buf);
    assert_eq!(&buf, b"remote bytes!");
}

/// Fetch-and-add and compare-and-swap return the original value and update the target.
pub fn atomics_return_the_original_value<R: Rig>(rig: &R) {
    let (mut a, b) = rig_pair(rig);
    b.mr.write(8, &100u64.to_ne_bytes());
    let sge = a.mr.sge(0, 8);
    let remote = b.mr.remote(8);
    a.qp.sq()
        .post(
            1,
            SendOp::FetchAdd { remote, add: 5 },
            Data::Sges(&[sge]),
            SendFlags::SIGNALED,
        )
        .unwrap();
    let c = poll_n(&mut a, 1)[0];
    assert_eq!((c.opcode, c.status), (WcOpcode::FetchAdd, Status::Success));
    assert_eq!(a.mr.read_u64(0), 100);
    assert_eq!(b.mr.read_u64(8), 105);
    let op = SendOp::CompareSwap {
        remote,
        compare: 105,
        swap: 7,
    };
    a.qp.sq()
        .post(2, op, Data::Sges(&[sge]), SendFlags::SIGNALED)
        .unwrap();
    let c = poll_n(&mut a, 1)[0];
    assert_eq!((c.wr_id, c.opcode), (2, WcOpcode::CompareSwap));
    assert_eq!(a.mr.read_u64(0), 105);
    assert_eq!(b.mr.read_u64(8), 7);
}

/// Masked atomics of both sizes: the target changes in host order, the original value lands
/// in the byte order of its kind (4 bytes: big-endian; 8 bytes: the device's mode), and
/// `SendOp::atomic_result` decodes it; `byte_len` is the operand size.
pub fn masked_atomics_return_the_original_value<R: Rig>(rig: &R) {
    let (mut a, b) = rig_pair(rig);
    let host_order_8b = a.ctx.caps().atomic_8b_host_order;
    b.mr.write(16, &0x0102_0304u32.to_ne_bytes());
    b.mr.write(24, &0x0102_0304_0506_0708u64.to_ne_bytes());
    let ops = [
        SendOp::MaskedFetchAdd32 {
            remote: b.mr.remote(16),
            add: 0x10,
            field_boundary: 0,
        },
        SendOp::MaskedCompareSwap32 {
            remote: b.mr.remote(16),
            args: MaskedCs32Args {
                compare: 0x0102_0314,
                compare_mask: u32::MAX,
                swap: 0xaabb_0000,
                swap_mask: 0xffff_0000,
            },
        },
        SendOp::MaskedFetchAdd64 {
            remote: b.mr.remote(24),
            add: 1,
            field_boundary: 0,
        },
        SendOp::MaskedCompareSwap64 {
            remote: b.mr.remote(24),
            args: MaskedCs64Args {
                compare: 0x0102_0304_0506_0709,
                compare_mask: u64::MAX,
                swap: 7,
                swap_mask: 0xff,
            },
        },
    ];
    // (bytes in the local entry, decoded value, byte_len)
    let be8 = [1, 2, 3, 4, 5, 6, 7, 8];
    let v8 = 0x0102_0304_0506_0708u64;
    let entry8 = if host_order_8b { v8.to_ne_bytes() } else { be8 };
    let entry9 = if host_order_8b {
        (v8 + 1).to_ne_bytes()
    } else {
        (v8 + 1).to_be_bytes()
    };
    let want: [(&[u8], u64, u32); 4] = [
        (&[1, 2, 3, 4], 0x0102_0304, 4),
        (&[1, 2, 3, 0x14], 0x0102_0314, 4),
        (&entry8, v8, 8),
        (&entry9, v8 + 1, 8),
    ];
    for (i, (op, (bytes, value, len))) in ops.into_iter().zip(want).enumerate() {
        let sge = a.mr.sge(64 * i, len);
        a.qp.sq()
            .post(i as u64, op, Data::Sges(&[sge]), SendFlags::SIGNALED)
            .unwrap();
        let c = poll_n(&mut a, 1)[0];
        assert_eq!(
            (c.wr_id, c.status, c.byte_len),
            (i as u64, Status::Success, len)
        );
        let mut entry = vec![0; len as usize];
        a.mr.read(64 * i, &mut entry);
        assert_eq!(entry, bytes, "{op:?}");
        assert_eq!(
            op.atomic_result(&entry, host_order_8b),
            Some(value),
            "{op:?}"
        );
    }
    let mut t4 = [0; 4];
    b.mr.read(16, &mut t4);
    assert_eq!(u32::from_ne_bytes(t4), 0xaabb_0314);
    assert_eq!(b.mr.read_u64(24), 0x0102_0304_0506_0707);
}

/// Two QPs draw receives from one SRQ, in posting order.
pub fn srq_shared_by_two_qps<R: Rig>(rig: &R) {
    let config = QpConfig::default();
    let mut a = rig.side(&config);
    let mut c = rig.side(&config);
    let mut b = rig.side(&config);
    let mut srq = b.pd.create_srq(16, 1).unwrap();
    let mut b1 =
        b.pd.create_qp_with_srq(&b.cq, &b.cq, &srq, &config)
            .unwrap();
    let mut b2 =
        b.pd.create_qp_with_srq(&b.cq, &b.cq, &srq, &config)
            .unwrap();
    for i in 0..4 {
        srq.post(100 + i, &[b.mr.sge(i as usize * 64, 64)]).unwrap();
    }
    let opts = ConnectOptions::default();
    // One SEND at a time: across QPs, receives are taken in arrival order, which on a real
    // link two concurrent senders do not fix.
    a.qp.connect(&b1.endpoint().unwrap(), &opts).unwrap();
    b1.connect(&a.qp.endpoint().unwrap(), &opts).unwrap();
    c.qp.connect(&b2.endpoint().unwrap(), &opts).unwrap();
    b2.connect(&c.qp.endpoint().unwrap(), &opts).unwrap();
    a.qp.sq()
        .post(
            1,
            SendOp::Send,
            Data::Inline(b"from a"),
            SendFlags::SIGNALED,
        )
        .unwrap();
    poll_n(&mut a, 1);
    let r = poll_n(&mut b, 1);
    c.qp.sq()
        .post(
            1,
            SendOp::Send,
            Data::Inline(b"from c"),
            SendFlags::SIGNALED,
        )
        .unwrap();
    poll_n(&mut c, 1);
    let r = [r[0], poll_n(&mut b, 1)[0]];
    assert_eq!((r[0].wr_id, r[0].qpn, r[0].byte_len), (100, b1.qpn(), 6));
    assert_eq!((r[1].wr_id, r[1].qpn, r[1].byte_len), (101, b2.qpn(), 6));
    let mut buf = [0u8; 6];
    b.mr.read(0, &mut buf);
    assert_eq!(&buf, b"from a");
    b.mr.read(64, &mut buf);
    assert_eq!(&buf, b"from c");
}

/// A WRITE with a bad rkey fails with REMOTE_ACCESS_ERR, the WQEs behind it flush, posting
/// is refused, and after RESET and reconnecting both ends the QP works again.
pub fn bad_rkey_fails_then_flushes_then_reset_reuses_the_qp<R: Rig>(rig: &R) {
    let (mut a, mut b) = rig_pair(rig);
    let bad = Remote {
        addr: b.mr.remote(0).addr,
        rkey: b.mr.rkey() ^ 0x100,
    };
    let good = b.mr.remote(0);
    let sq = a.qp.sq();
    sq.push(
        1,
        SendOp::Write(bad),
        Data::Inline(&[1; 8]),
        SendFlags::UNSIGNALED,
    )
    .unwrap();
    sq.push(
        2,
        SendOp::Write(good),
        Data::Inline(&[2; 8]),
        SendFlags::UNSIGNALED,
    )
    .unwrap();
    sq.push(
        3,
        SendOp::Write(good),
        Data::Inline(&[3; 8]),
        SendFlags::SIGNALED,
    )
    .unwrap();
    sq.ring_doorbell();
    let c = poll_n(&mut a, 3);
    assert_eq!(c.iter().map(|c| c.wr_id).collect::<Vec<_>>(), [1, 2, 3]);
    assert_eq!(syndrome(c[0].status), Some(Syndrome::RemoteAccessErr));
    assert_eq!(syndrome(c[1].status), Some(Syndrome::WrFlushErr));
    assert_eq!(syndrome(c[2].status), Some(Syndrome::WrFlushErr));
    assert_eq!(a.qp.state(), QpState::Err);
    let mut byte = [0u8; 1];
    b.mr.read(0, &mut byte);
    assert_eq!(byte, [0], "flushed WRITEs wrote nothing");
    assert_eq!(
        a.qp.sq().post(
            4,
            SendOp::Write(good),
            Data::Inline(&[4; 8]),
            SendFlags::SIGNALED
        ),
        Err(PostError::NotReadyToSend)
    );

    // Both ends go back through RESET and reconnect (the responder is in error too).
    let b_flushes = {
        let mut out = [Completion::default(); 8];
        b.cq.poll(&mut out)
    };
    assert_eq!(b_flushes, 0, "the responder had no receives to flush");
    a.qp.reset().unwrap();
    b.qp.reset().unwrap();
    connect(&mut a, &mut b);
    a.qp.sq()
        .post(
            5,
            SendOp::Write(good),
            Data::Inline(&[5; 8]),
            SendFlags::SIGNALED,
        )
        .unwrap();
    let c = poll_n(&mut a, 1)[0];
    assert_eq!((c.wr_id, c.status), (5, Status::Success));
    b.mr.read(0, &mut byte);
    assert_eq!(byte, [5]);
}

/// Posts a signaled inline WRITE of `payload` from `from` into `to`'s region at `off`;
/// returns its completion status.
pub fn write<B: Drive>(from: &mut Side<B>, to: &Side<B>, off: usize, payload: &[u8]) -> Status {
    from.qp
        .sq()
        .post(
            off as u64,
            SendOp::Write(to.mr.remote(off)),
            Data::Inline(payload),
            SendFlags::SIGNALED,
        )
        .unwrap();
    poll_n(from, 1)[0].status
}

/// `len` bytes of `s`'s region at `off`.
pub fn read<B: Backend>(s: &Side<B>, off: usize, len: usize) -> Vec<u8> {
    let mut b = vec![0; len];
    s.mr.read(off, &mut b);
    b
}

/// The device's sequence numbers of `s`'s QP.
pub fn psn<B: Backend>(s: &Side<B>) -> QpPsn {
    s.ctx.backend().query_psn(s.qp.handle()).unwrap()
}

/// The crate docs' recovery on one side only: after a local error (a bad lkey, which never
/// reaches the wire), `a` polls its error CQE, resets and connects again to the endpoint it
/// had from `b`, while `b` stays connected. Both directions go on: nothing is taken for a
/// duplicate (a WRITE that completes without landing) or a sequence error.
pub fn one_side_reset_and_reconnected_keeps_working<R: Rig>(rig: &R) {
    let (mut a, mut b) = rig_pair(rig);
    let eb = b.qp.endpoint().unwrap();
    assert_eq!(write(&mut a, &b, 0, b"before"), Status::Success);
    assert_eq!(write(&mut b, &a, 0, b"peer-1"), Status::Success);
    let mut bad = a.mr.sge(0, 8);
    bad.lkey ^= 0x200;
    a.qp.sq()
        .post(
            99,
            SendOp::Write(b.mr.remote(0)),
            Data::Sges(&[bad]),
            SendFlags::SIGNALED,
        )
        .unwrap();
    let c = poll_n(&mut a, 1)[0];
    assert_eq!(syndrome(c.status), Some(Syndrome::LocalProtErr));
    a.qp.reset().unwrap();
    a.qp.connect(&eb, &ConnectOptions::default()).unwrap();
    assert_eq!(b.qp.state(), QpState::Rts);
    assert_eq!(write(&mut a, &b, 16, b"after"), Status::Success);
    assert_eq!(read(&b, 16, 5), b"after", "the WRITE landed");
    assert_eq!(write(&mut b, &a, 16, b"peer-2"), Status::Success);
    assert_eq!(read(&a, 16, 6), b"peer-2", "the peer's WRITE landed");
    assert_eq!(psn(&a).sq_psn, psn(&b).rq_psn);
    assert_eq!(psn(&b).sq_psn, psn(&a).rq_psn);
}

/// A SEND longer than the receive: LOCAL_LENGTH_ERR at the responder (and its next receive
/// flushed), REMOTE_INVAL_REQ_ERR at the requester.
pub fn receive_too_small_fails_on_both_sides<R: Rig>(rig: &R) {
    let (mut a, mut b) = rig_pair(rig);
    let rsge = b.mr.sge(0, 8);
    b.qp.rq().unwrap().post(70, &[rsge]).unwrap();
    b.qp.rq().unwrap().post(71, &[rsge]).unwrap();
    let sge = a.mr.sge(0, 16);
    a.qp.sq()
        .post(1, SendOp::Send, Data::Sges(&[sge]), SendFlags::SIGNALED)
        .unwrap();
    let c = poll_n(&mut a, 1)[0];
    assert_eq!(syndrome(c.status), Some(Syndrome::RemoteInvalReqErr));
    let r = poll_n(&mut b, 2);
    assert_eq!((r[0].wr_id, r[0].opcode), (70, WcOpcode::Recv));
    assert_eq!(syndrome(r[0].status), Some(Syndrome::LocalLengthErr));
    assert_eq!(r[1].wr_id, 71);
    assert_eq!(syndrome(r[1].status), Some(Syndrome::WrFlushErr));
    assert_eq!(b.qp.state(), QpState::Err);
    assert_empty(&mut a);
}

/// A SEND with invalidate naming a key this crate registered (an `ibv_reg_mr` key, never
/// remotely invalidatable) is refused: the receive it consumed completes with a remote
/// invalid request error, the SEND too, both QPs go to error and the key still works.
/// The syndromes follow rxe (unverified on mlx5: this body on a NIC settles it).
pub fn send_inv_of_a_registered_key_is_refused<R: Rig>(rig: &R) {
    let (mut a, mut b) = rig_pair(rig);
    let rsge = b.mr.sge(0, 16);
    b.qp.rq().unwrap().post(80, &[rsge]).unwrap();
    b.qp.rq().unwrap().post(81, &[rsge]).unwrap();
    a.qp.sq()
        .post(
            1,
            SendOp::SendInv(b.mr.rkey()),
            Data::Inline(b"invalidate"),
            SendFlags::SIGNALED,
        )
        .unwrap();
    let c = poll_n(&mut a, 1)[0];
    assert_eq!((c.wr_id, c.opcode), (1, WcOpcode::Send));
    assert_eq!(syndrome(c.status), Some(Syndrome::RemoteInvalReqErr));
    let r = poll_n(&mut b, 2);
    assert_eq!((r[0].wr_id, r[0].opcode), (80, WcOpcode::Recv));
    assert_eq!(syndrome(r[0].status), Some(Syndrome::RemoteInvalReqErr));
    assert_eq!(r[0].invalidated_rkey(), None);
    assert_eq!(r[1].wr_id, 81);
    assert_eq!(syndrome(r[1].status), Some(Syndrome::WrFlushErr));
    assert_eq!((a.qp.state(), b.qp.state()), (QpState::Err, QpState::Err));
    let mut byte = [0u8; 1];
    b.mr.read(0, &mut byte);
    assert_eq!(byte, [0], "nothing was received");
    // The key was not invalidated: after both QPs are reconnected, a WRITE through it lands.
    a.qp.reset().unwrap();
    b.qp.reset().unwrap();
    connect(&mut a, &mut b);
    a.qp.sq()
        .post(
            2,
            SendOp::Write(b.mr.remote(0)),
            Data::Inline(b"still valid"),
            SendFlags::SIGNALED,
        )
        .unwrap();
    assert_eq!(poll_n(&mut a, 1)[0].status, Status::Success);
    let mut got = [0u8; 11];
    b.mr.read(0, &mut got);
    assert_eq!(&got, b"still valid");
}

/// A gather entry with a bad lkey is a LOCAL_PROT_ERR, reported though unsignaled.
pub fn bad_local_key_is_a_local_protection_error<R: Rig>(rig: &R) {
    let (mut a, mut b) = rig_pair(rig);
    let mut sge = a.mr.sge(0, 16);
    sge.lkey ^= 0x200;
    a.qp.sq()
        .post(
            9,
            SendOp::Write(b.mr.remote(0)),
            Data::Sges(&[sge]),
            SendFlags::UNSIGNALED,
        )
        .unwrap();
    let c = poll_n(&mut a, 1)[0];
    assert_eq!(c.wr_id, 9);
    assert_eq!(syndrome(c.status), Some(Syndrome::LocalProtErr));
    assert_empty(&mut b);
}

/// A SEND that finds no receive, with two RNR retries, ends in RNR_RETRY_EXC_ERR.
pub fn no_receive_posted_exhausts_rnr_retries<R: Rig>(rig: &R) {
    let config = QpConfig::default();
    let (mut a, mut b) = (rig.side(&config), rig.side(&config));
    let options = ConnectOptions {
        rnr_retry: 2,
        ..Default::default()
    };
    connect_with(&mut a, &mut b, &options);
    a.qp.sq()
        .post(1, SendOp::Send, Data::Inline(&[1; 4]), SendFlags::SIGNALED)
        .unwrap();
    let c = poll_n(&mut a, 1)[0];
    assert_eq!(syndrome(c.status), Some(Syndrome::RnrRetryExcErr));
}

/// Nothing may be posted in RESET; receives from INIT; sends only from RTS.
pub fn posting_before_rts_is_refused<R: Rig>(rig: &R) {
    let mut a = rig.side(&QpConfig::default());
    let rsge = a.mr.sge(0, 8);
    assert_eq!(
        a.qp.sq()
            .post(1, SendOp::Nop, Data::NONE, SendFlags::SIGNALED),
        Err(PostError::NotReadyToSend)
    );
    assert_eq!(
        a.qp.rq().unwrap().post(1, &[rsge]),
        Err(PostError::NotReadyToReceive)
    );
    a.qp.init(a.qp.port(), Access::ALL).unwrap();
    a.qp.rq().unwrap().post(1, &[rsge]).unwrap();
    assert_eq!(
        a.qp.sq()
            .post(1, SendOp::Nop, Data::NONE, SendFlags::SIGNALED),
        Err(PostError::NotReadyToSend)
    );
}

/// Event mode: an armed CQ raises one event for the next CQE; once the event is taken and
/// the CQ re-armed (nothing else to acknowledge), the next CQE raises another.
pub fn armed_cq_raises_one_event_per_arm<R: Rig>(rig: &R) {
    let (mut a, b) = rig_pair(rig);
    let remote = b.mr.remote(0);
    for wr_id in 1..=2 {
        a.cq.arm(false);
        a.qp.sq()
            .post(
                wr_id,
                SendOp::Write(remote),
                Data::Inline(b"event"),
                SendFlags::SIGNALED,
            )
            .unwrap();
        assert_eq!(
            a.cq.wait_event(Duration::from_secs(5)),
            Ok(true),
            "arm {wr_id}"
        );
        let c = poll_n(&mut a, 1)[0];
        assert_eq!((c.wr_id, c.status), (wr_id, Status::Success));
    }
    a.qp.sq()
        .post(
            3,
            SendOp::Write(remote),
            Data::Inline(b"quiet"),
            SendFlags::SIGNALED,
        )
        .unwrap();
    poll_n(&mut a, 1);
    assert_eq!(
        a.cq.wait_event(Duration::from_millis(50)),
        Ok(false),
        "an unarmed CQ raises no event"
    );
    assert_eq!(a.cq.channel().try_next(), Ok(None));
}

/// A batch of WRITEs behind one doorbell lands and completes in every doorbell mode (the
/// last WQE signaled retires the unsignaled ones).
pub fn a_batch_completes_in_every_doorbell_mode<R: Rig>(rig: &R) {
    let (mut a, b) = rig_pair(rig);
    let modes = [
        DoorbellMode::Doorbell,
        DoorbellMode::BlueFlame,
        DoorbellMode::BlueFlameLast,
        DoorbellMode::Auto,
    ];
    for (m, mode) in modes.into_iter().enumerate() {
        let sq = a.qp.sq();
        sq.set_mode(mode);
        for i in 0..4u8 {
            let offset = m * 64 + i as usize * 8;
            let flags = if i == 3 {
                SendFlags::SIGNALED
            } else {
                SendFlags::UNSIGNALED
            };
            let data = [m as u8 * 16 + i + 1; 8];
            sq.push(
                u64::from(i),
                SendOp::Write(b.mr.remote(offset)),
                Data::Inline(&data),
                flags,
            )
            .unwrap();
        }
        sq.ring_doorbell();
        let c = poll_n(&mut a, 1)[0];
        assert_eq!((c.wr_id, c.status), (3, Status::Success), "{mode:?}");
        assert_eq!(a.qp.sq().outstanding_wqebbs(), 0, "{mode:?}");
        for i in 0..4u8 {
            let mut got = [0u8; 8];
            b.mr.read(m * 64 + i as usize * 8, &mut got);
            assert_eq!(got, [m as u8 * 16 + i + 1; 8], "{mode:?} WRITE {i}");
        }
    }
    assert_empty(&mut a);
}

/// WRITE, SEND with immediate and READ complete on 128-byte CQEs as on 64-byte ones.
pub fn operations_complete_on_128_byte_cqes<R: Rig>(rig: &R) {
    let config = QpConfig::default();
    let mut a = rig.side_sized(&config, 64, 128);
    let mut b = rig.side_sized(&config, 64, 128);
    connect(&mut a, &mut b);
    b.qp.rq().unwrap().post(11, &[b.mr.sge(0, 64)]).unwrap();
    let sq = a.qp.sq();
    sq.post(
        1,
        SendOp::Write(b.mr.remote(MR_LEN - 16)),
        Data::Inline(b"wide"),
        SendFlags::SIGNALED,
    )
    .unwrap();
    sq.post(
        2,
        SendOp::SendImm(7),
        Data::Inline(b"wide send"),
        SendFlags::SIGNALED,
    )
    .unwrap();
    b.mr.write(512, b"wide read");
    let sge = a.mr.sge(1024, 9);
    sq.post(
        3,
        SendOp::Read(b.mr.remote(512)),
        Data::Sges(&[sge]),
        SendFlags::SIGNALED,
    )
    .unwrap();
    let c = poll_n(&mut a, 3);
    let got: Vec<_> = c.iter().map(|c| (c.wr_id, c.opcode, c.status)).collect();
    assert_eq!(
        got,
        [
            (1, WcOpcode::RdmaWrite, Status::Success),
            (2, WcOpcode::Send, Status::Success),
            (3, WcOpcode::RdmaRead, Status::Success),
        ]
    );
    let r = poll_n(&mut b, 1)[0];
    assert_eq!((r.wr_id, r.byte_len, r.imm()), (11, 9, Some(7)));
    let mut buf = [0u8; 9];
    b.mr.read(0, &mut buf);
    assert_eq!(&buf, b"wide send");
    a.mr.read(1024, &mut buf);
    assert_eq!(&buf, b"wide read");
    b.mr.read(MR_LEN - 16, &mut buf[..4]);
    assert_eq!(&buf[..4], b"wide");
}

/// A peer that never answers (its QP stays in RESET, so every packet is dropped) exhausts the
/// transport retries: TRANSPORT_RETRY_EXC_ERR, then the QP is in error.
pub fn an_unanswering_peer_exhausts_transport_retries<R: Rig>(rig: &R) {
    let config = QpConfig::default();
    let (mut a, b) = (rig.side(&config), rig.side(&config));
    let options = ConnectOptions {
        retry_cnt: 1,
        timeout: 8,
        ..Default::default()
    };
    a.qp.connect(&b.qp.endpoint().unwrap(), &options).unwrap();
    a.qp.sq()
        .post(
            1,
            SendOp::Write(b.mr.remote(0)),
            Data::Inline(&[1; 4]),
            SendFlags::SIGNALED,
        )
        .unwrap();
    let c = poll_n(&mut a, 1)[0];
    assert_eq!(c.wr_id, 1);
    assert_eq!(syndrome(c.status), Some(Syndrome::TransportRetryExcErr));
    assert_eq!(a.qp.state(), QpState::Err);
}

/// CQ overrun: more signaled completions than a small CQ holds, none polled. No CQE can
/// report it; the device raises the CQ error as an asynchronous event, then the QP that lost
/// a completion to it as fatal, and from that event on the driver reports the QP in ERR and
/// refuses its posts. Its peer hears of nothing.
pub fn cq_overrun_is_an_asynchronous_cq_error<R: Rig>(rig: &R) {
    let config = QpConfig::default();
    let mut a = rig.side_sized(&config, 3, 64);
    let mut b = rig.side(&config);
    connect(&mut a, &mut b);
    let remote = b.mr.remote(0);
    let capacity = a.cq.capacity();
    for wr_id in 0..u64::from(capacity) + 2 {
        a.qp.sq()
            .post(
                wr_id,
                SendOp::Write(remote),
                Data::Inline(b"overrun"),
                SendFlags::SIGNALED,
            )
            .unwrap();
    }
    let (cqn, qpn) = (a.cq.cqn(), a.qp.qpn());
    let timeout = Duration::from_secs(5);
    assert!(!a.cq.is_error(), "recorded only when the event is read");
    assert_eq!(
        a.ctx.wait_async_event(timeout),
        Ok(Some(AsyncEvent::CqError { cqn }))
    );
    assert!(a.cq.is_error());
    assert!(!b.cq.is_error());
    assert_eq!(
        a.ctx.wait_async_event(timeout),
        Ok(Some(AsyncEvent::QpFatal { qpn }))
    );
    assert_eq!(a.qp.state(), QpState::Err);
    assert_eq!(
        a.qp.sq().post(
            99,
            SendOp::Write(remote),
            Data::Inline(b"refused"),
            SendFlags::SIGNALED,
        ),
        Err(PostError::NotReadyToSend)
    );
    assert_eq!(a.ctx.wait_async_event(Duration::from_millis(50)), Ok(None));
    assert_eq!(b.ctx.poll_async_event(), Ok(None));
    assert_eq!(b.qp.state(), QpState::Rts);
}

/// One end of [`event_driven_ping_pong`]: a completion channel shared by a send CQ and a
/// receive CQ, a QP on them and a buffer; nothing but the public API.
struct EventEnd<B: Backend> {
    channel: CompChannel<B>,
    send_cq: Cq<B>,
    recv_cq: Cq<B>,
    qp: Qp<B>,
    mr: MemoryRegion<B>,
}

impl<B: Backend> EventEnd<B> {
    fn new(ctx: &Context<B>) -> Self {
        let pd = ctx.alloc_pd().unwrap();
        let channel = ctx.create_comp_channel().unwrap();
        let mut send_cq = ctx.create_cq_on(&channel, 64, 64).unwrap();
        let mut recv_cq = ctx.create_cq_on(&channel, 64, 64).unwrap();
        let qp = pd
            .create_qp(&send_cq, &recv_cq, &QpConfig::default())
            .unwrap();
        let mr = pd.alloc_mr(4096, Access::ALL).unwrap();
        send_cq.arm(false);
        recv_cq.arm(false);
        EventEnd {
            channel,
            send_cq,
            recv_cq,
            qp,
            mr,
        }
    }

    fn post_receive(&mut self) {
        let sge = self.mr.sge(0, 64);
        self.qp.rq().unwrap().post(0, &[sge]).unwrap();
    }

    fn send(&mut self, wr_id: u64, text: &[u8]) {
        self.qp
            .sq()
            .post(wr_id, SendOp::Send, Data::Inline(text), SendFlags::SIGNALED)
            .unwrap();
    }

    /// Sleeps on the channel until the receive CQ holds a message, handling every event
    /// the way an event loop does: re-arm the CQ it names, then poll that CQ dry. Returns
    /// the message and how many send completions came meanwhile.
    fn wait_for_message(&mut self) -> (Vec<u8>, usize) {
        let mut sends = 0;
        let mut done = [Completion::default(); 8];
        loop {
            let cqn = self
                .channel
                .wait(Duration::from_secs(10))
                .unwrap()
                .expect("a completion event within 10 s");
            let cq = if cqn == self.send_cq.cqn() {
                &mut self.send_cq
            } else {
                assert_eq!(cqn, self.recv_cq.cqn(), "an event of a CQ on the channel");
                &mut self.recv_cq
            };
            cq.arm(false);
            let n = cq.poll(&mut done);
            assert!(
                done[..n].iter().all(|c| c.status.is_ok()),
                "{:?}",
                &done[..n]
            );
            if cqn == self.send_cq.cqn() {
                sends += n;
                continue;
            }
            assert_eq!(n, 1, "one message at a time: {:?}", &done[..n]);
            let mut text = vec![0u8; done[0].byte_len as usize];
            self.mr.read(0, &mut text);
            return (text, sends);
        }
    }
}

/// rc_pingpong with `-e` (events instead of busy polling), written once for every backend:
/// each end sleeps on a completion channel its send and receive CQs share, wakes for each
/// event, re-arms and polls the CQ the event names. 100 round trips, each message checked.
pub fn event_driven_ping_pong<R: Rig>(rig: &R) {
    let (a, b) = (
        rig.side(&QpConfig::default()),
        rig.side(&QpConfig::default()),
    );
    let (mut ping, mut pong) = (EventEnd::new(&a.ctx), EventEnd::new(&b.ctx));
    let (ep_ping, ep_pong) = (ping.qp.endpoint().unwrap(), pong.qp.endpoint().unwrap());
    ping.qp
        .connect(&ep_pong, &ConnectOptions::default())
        .unwrap();
    pong.qp
        .connect(&ep_ping, &ConnectOptions::default())
        .unwrap();
    let (mut ping_sends, mut pong_sends) = (0, 0);
    for round in 0..100u64 {
        pong.post_receive();
        ping.post_receive();
        let text = format!("ping {round}");
        ping.send(round, text.as_bytes());
        let (got, n) = pong.wait_for_message();
        assert_eq!(got, text.as_bytes());
        pong_sends += n;
        let reply = format!("pong {round}");
        pong.send(round, reply.as_bytes());
        let (got, n) = ping.wait_for_message();
        assert_eq!(got, reply.as_bytes());
        ping_sends += n;
    }
    // Every send completion comes through an event too (the last ones may still wait).
    for (end, mut counted) in [(&mut ping, ping_sends), (&mut pong, pong_sends)] {
        let mut done = [Completion::default(); 8];
        while counted < 100 {
            assert_eq!(end.send_cq.wait_event(Duration::from_secs(10)), Ok(true));
            end.send_cq.arm(false);
            counted += end.send_cq.poll(&mut done);
        }
        assert_eq!(counted, 100);
    }
}

/// A QP's rings are the ones `QpConfig::check` computes with rdma-core's formula (on hardware:
/// the ones rdma-core allocated for what the backend asked), and empty queues are refused the
/// same way on every backend; on an SRQ a QP has no receive queue to size.
pub fn queues_are_sized_by_rdma_cores_formula<R: Rig>(rig: &R) {
    let a = rig.side(&QpConfig::default());
    let caps = a.ctx.caps();
    let tiny = QpConfig {
        sq_wqebbs: 1,
        rq_wqes: 1,
        max_recv_sge: 1,
        ..QpConfig::default()
    };
    let odd = QpConfig {
        sq_wqebbs: 300,
        rq_wqes: 300,
        max_send_sge: 1,
        max_recv_sge: 3,
        max_inline: 0,
        ..QpConfig::default()
    };
    for config in [QpConfig::default(), tiny, odd] {
        let sizes = config.check(&caps, false).unwrap();
        let mut qp = a.pd.create_qp(&a.cq, &a.cq, &config).unwrap();
        assert_eq!(qp.sq().wqebbs(), sizes.sq_wqebbs, "{config:?}");
        assert_eq!(qp.rq().unwrap().capacity(), sizes.rq_wqes, "{config:?}");
    }
    // The default WQE (220 inline bytes) needs 320 bytes: one of them takes a 512-byte ring.
    let sizes = tiny.check(&caps, false).unwrap();
    assert_eq!((sizes.sq_wqebbs, sizes.rq_wqes), (8, 4));
    for (config, why) in [
        (
            QpConfig {
                sq_wqebbs: 0,
                ..QpConfig::default()
            },
            "a QP needs a send queue of at least one WQEBB",
        ),
        (
            QpConfig {
                rq_wqes: 0,
                ..QpConfig::default()
            },
            "a QP without an SRQ needs a receive queue of at least one WQE",
        ),
    ] {
        let got = a.pd.create_qp(&a.cq, &a.cq, &config).map(|_| ());
        assert_eq!(got, Err(Error::InvalidArgument(why)), "{config:?}");
    }
    let srq = a.pd.create_srq(16, 1).unwrap();
    let config = QpConfig {
        rq_wqes: 0,
        ..QpConfig::default()
    };
    let mut qp =
        a.pd.create_qp_with_srq(&a.cq, &a.cq, &srq, &config)
            .unwrap();
    assert!(qp.rq().is_none());
}

/// What `ConnectOptions` leaves to the device comes from it: the QP's port is the one the
/// context was opened on, a READ / atomic depth above the device's connects with the
/// device's, and the default rights include REMOTE_ATOMIC exactly when the device executes
/// atomics.
pub fn connecting_takes_the_port_depth_and_rights_of_the_device<R: Rig>(rig: &R) {
    let config = QpConfig::default();
    let (mut a, mut b) = (rig.side(&config), rig.side(&config));
    let port = a.ctx.backend().default_port();
    assert_eq!((a.qp.port(), b.qp.port()), (port, port));
    let options = ConnectOptions {
        rd_atomic: u8::MAX,
        ..ConnectOptions::default()
    };
    connect_with(&mut a, &mut b, &options);
    assert_eq!((a.qp.port(), a.qp.state()), (port, QpState::Rts));
    let remote = b.mr.remote(0);
    b.mr.write(0, b"deep");
    a.qp.sq()
        .post(
            1,
            SendOp::Read(remote),
            Data::Sges(&[a.mr.sge(0, 4)]),
            SendFlags::SIGNALED,
        )
        .unwrap();
    assert_eq!(poll_n(&mut a, 1)[0].status, Status::Success);
    let mut got = [0; 4];
    a.mr.read(0, &mut got);
    assert_eq!(&got, b"deep");
    if a.ctx.caps().atomics {
        return;
    }
    let mut c = rig.side(&config);
    assert_eq!(
        c.qp.init(port, Access::ALL),
        Err(Error::InvalidArgument(
            "REMOTE_ATOMIC on a device without atomics"
        ))
    );
}

/// A DCI WRITEs to a DCT, READs it back and SENDs to the DCT's SRQ; the target's completion
/// names the DCT and the DCI. `sgid_index`: the GID index a RoCE address handle uses (the
/// address is global only when the target's port has no LID). With `streams`, the DCI has
/// those stream channels and every operation goes on its last stream.
pub fn dc_operations_reach_a_dct<R: Rig>(
    rig: &R,
    sgid_index: u8,
    streams: Option<mlx5_direct::DciStreams>,
) {
    const DC_KEY: u64 = 0xffee_ddcc;
    let dci_config = QpConfig {
        transport: Transport::Dci,
        dci_streams: streams,
        ..QpConfig::default()
    };
    let mut a = rig.side(&dci_config);
    a.qp.activate_dci(&ConnectOptions::default()).unwrap();
    let mut t = rig.side(&QpConfig::default());
    let mut srq = t.pd.create_srq(16, 1).unwrap();
    let mut dct = t.pd.create_dct(&t.cq, &srq, DC_KEY).unwrap();
    dct.activate(t.qp.port(), Access::ALL, &ConnectOptions::default())
        .unwrap();
    let ep = t.qp.endpoint().unwrap();
    let ah =
        a.pd.create_ah(&AhAttr {
            port: a.qp.port(),
            dlid: ep.lid,
            grh: (ep.lid == 0).then_some(GlobalRoute {
                dgid: ep.gid,
                sgid_index,
                hop_limit: 64,
                ..GlobalRoute::default()
            }),
            ..AhAttr::default()
        })
        .unwrap();
    let last = streams.map_or(0, |s| s.count() - 1) as u16;
    let dest = ah.dc_dest(dct.number().unwrap(), DC_KEY).on_stream(last);
    let signaled = |wr_id, op, data| SendWr {
        wr_id,
        op,
        data,
        flags: SendFlags::SIGNALED,
    };
    a.qp.sq()
        .post_dc(
            signaled(1, SendOp::Write(t.mr.remote(8)), Data::Inline(b"dc write")),
            &dest,
        )
        .unwrap();
    let into = [a.mr.sge(64, 8)];
    let read = signaled(2, SendOp::Read(t.mr.remote(8)), Data::Sges(&into));
    a.qp.sq().post_dc(read, &dest).unwrap();
    srq.post(9, &[t.mr.sge(256, 64)]).unwrap();
    a.qp.sq()
        .post_dc(
            signaled(3, SendOp::Send, Data::Inline(b"to the srq")),
            &dest,
        )
        .unwrap();
    let cs = poll_n(&mut a, 3);
    let got: Vec<_> = cs.iter().map(|c| (c.wr_id, c.opcode, c.status)).collect();
    assert_eq!(
        got,
        [
            (1, WcOpcode::RdmaWrite, Status::Success),
            (2, WcOpcode::RdmaRead, Status::Success),
            (3, WcOpcode::Send, Status::Success),
        ]
    );
    let mut back = [0u8; 8];
    a.mr.read(64, &mut back);
    assert_eq!(&back, b"dc write");
    let r = poll_n(&mut t, 1)[0];
    assert_eq!(
        (r.wr_id, r.qpn, r.src_qp(), r.byte_len, r.opcode),
        (9, dct.number().unwrap(), a.qp.qpn(), 10, WcOpcode::Recv)
    );
    let mut landed = [0u8; 10];
    t.mr.read(256, &mut landed);
    assert_eq!(&landed, b"to the srq");
}

/// CQs created with timestamps report the device clock, which the clock-info page converts
/// to nanoseconds: two completions a sleep apart are at least that far apart, and not
/// absurdly more.
pub fn hw_timestamps_convert_with_the_clock_page<R: Rig>(rig: &R) {
    let (a, b) = rig_pair(rig);
    let config = mlx5_direct::CqConfig {
        timestamps: true,
        ..mlx5_direct::CqConfig::default()
    };
    let (mut cq_a, cq_b) = (
        a.ctx.create_cq_with(&config).unwrap(),
        b.ctx.create_cq_with(&config).unwrap(),
    );
    let mut qa = a.pd.create_qp(&cq_a, &cq_a, &QpConfig::default()).unwrap();
    let mut qb = b.pd.create_qp(&cq_b, &cq_b, &QpConfig::default()).unwrap();
    let (ea, eb) = (qa.endpoint().unwrap(), qb.endpoint().unwrap());
    qa.connect(&eb, &ConnectOptions::default()).unwrap();
    qb.connect(&ea, &ConnectOptions::default()).unwrap();
    let mut stamps = [0u64; 2];
    for (i, stamp) in stamps.iter_mut().enumerate() {
        if i > 0 {
            std::thread::sleep(Duration::from_millis(2));
        }
        qa.sq()
            .post(
                i as u64,
                SendOp::Write(b.mr.remote(0)),
                Data::Inline(b"ts"),
                SendFlags::SIGNALED,
            )
            .unwrap();
        let mut out = [Completion::default(); 1];
        while cq_a.poll(&mut out) == 0 {
            R::B::progress(&a.ctx);
        }
        assert_eq!(out[0].status, Status::Success);
        *stamp = out[0].timestamp();
    }
    let info = a.ctx.clock_info().unwrap();
    let (t0, t1) = (info.to_ns(stamps[0]), info.to_ns(stamps[1]));
    assert!(
        (2_000_000..1_000_000_000).contains(&(t1 - t0)),
        "{stamps:?}: {t0} -> {t1}"
    );
}

/// UC: WRITE, WRITE with immediate and SEND with immediate complete on both sides (the
/// requester without waiting for an ACK), and READ and atomics are refused at post.
pub fn uc_operations_complete_and_read_is_refused<R: Rig>(rig: &R) {
    let config = QpConfig {
        transport: Transport::Uc,
        ..QpConfig::default()
    };
    let (mut a, mut b) = (rig.side(&config), rig.side(&config));
    connect(&mut a, &mut b);
    assert_eq!((a.qp.state(), b.qp.state()), (QpState::Rts, QpState::Rts));
    let remote = b.mr.remote(512);
    let signaled = SendFlags::SIGNALED;
    a.qp.sq()
        .post(
            1,
            SendOp::Write(remote),
            Data::Inline(b"uc write"),
            signaled,
        )
        .unwrap();
    b.qp.rq().unwrap().post(10, &[b.mr.sge(0, 64)]).unwrap();
    b.qp.rq().unwrap().post(11, &[b.mr.sge(64, 64)]).unwrap();
    let imm_at = b.mr.remote(1024);
    a.qp.sq()
        .post(
            2,
            SendOp::WriteImm(imm_at, 0x1234),
            Data::Inline(b"wi"),
            signaled,
        )
        .unwrap();
    a.qp.sq()
        .post(
            3,
            SendOp::SendImm(0x5678),
            Data::Inline(b"uc send"),
            signaled,
        )
        .unwrap();
    let cs = poll_n(&mut a, 3);
    assert!(cs.iter().all(|c| c.status == Status::Success), "{cs:?}");
    let rs = poll_n(&mut b, 2);
    assert_eq!(
        (rs[0].wr_id, rs[0].opcode, rs[0].imm(), rs[0].byte_len),
        (10, WcOpcode::RecvRdmaWithImm, Some(0x1234), 2)
    );
    assert_eq!(
        (rs[1].wr_id, rs[1].opcode, rs[1].imm(), rs[1].byte_len),
        (11, WcOpcode::Recv, Some(0x5678), 7)
    );
    let mut buf = [0u8; 8];
    b.mr.read(512, &mut buf);
    assert_eq!(&buf, b"uc write");
    let mut buf = [0u8; 7];
    b.mr.read(64, &mut buf);
    assert_eq!(&buf, b"uc send");
    let sge = a.mr.sge(0, 8);
    let refused = Err(PostError::WrongTransport {
        transport: Transport::Uc,
    });
    let read = SendOp::Read(remote);
    let fadd = SendOp::FetchAdd { remote, add: 1 };
    for op in [read, fadd] {
        assert_eq!(a.qp.sq().post(4, op, Data::Sges(&[sge]), signaled), refused);
    }
    assert_empty(&mut a);
}

/// The payload of the `i`th message of the device-memory body: `len` bytes counting from `i`.
fn dm_payload(i: u8, len: usize) -> Vec<u8> {
    (0..len)
        .map(|k| (k as u8).wrapping_mul(3).wrapping_add(i))
        .collect()
}

/// A send queue's device-memory slots (4 of 256 bytes on 1 KiB of device memory): WRITEs
/// and a SEND of payloads copied into the slots land byte for byte; a fifth post while the
/// four WQEs have not been seen complete is refused (a slot is never reused before its WQE
/// completed, even unsignaled ones: they retire with the signaled one after them), and
/// succeeds once the completion is polled. Needs a device with at least 1 KiB of device
/// memory.
pub fn device_memory_slots_carry_payloads<R: Rig>(rig: &R) -> (Side<R::B>, Side<R::B>) {
    let (mut a, mut b) = rig_pair(rig);
    let dm = a.ctx.alloc_dm(1024).unwrap();
    assert_eq!(dm.len(), 1024);
    let region = dm.register(&a.pd, 0, 1024, Access::NONE).unwrap();
    let slots = DmSlots::new(region, 256).unwrap();
    assert_eq!((slots.count(), slots.slot_size()), (4, 256));
    let write = |at: usize| SendOp::Write(b.mr.remote(at));
    let sq = a.qp.sq();
    assert_eq!(
        sq.post_dm(9, write(0), &[1; 8], SendFlags::SIGNALED),
        Err(PostError::NoDmSlots)
    );
    sq.attach_dm(slots).unwrap();
    // Three unsignaled WRITEs and a signaled one, of lengths not all multiples of 8.
    for i in 0..4u8 {
        let flags = if i == 3 {
            SendFlags::SIGNALED
        } else {
            SendFlags::UNSIGNALED
        };
        let payload = dm_payload(i, 200 + 17 * usize::from(i));
        sq.post_dm(u64::from(i), write(1024 * usize::from(i)), &payload, flags)
            .unwrap();
    }
    assert_eq!(sq.dm_slots().unwrap().in_flight(), 4);
    assert_eq!(
        sq.post_dm(4, write(4096), &[4; 64], SendFlags::SIGNALED),
        Err(PostError::DmSlotsFull { slots: 4 })
    );
    assert_eq!(
        sq.post_dm(4, write(4096), &[4; 257], SendFlags::SIGNALED),
        Err(PostError::DmPayloadTooLarge {
            len: 257,
            slot: 256
        })
    );
    assert_eq!(
        sq.post_dm(
            4,
            SendOp::Read(b.mr.remote(0)),
            &[4; 8],
            SendFlags::SIGNALED
        ),
        Err(PostError::InlineNotAllowed)
    );
    let c = poll_n(&mut a, 1);
    assert_eq!((c[0].wr_id, c[0].status), (3, Status::Success));
    for i in 0..4u8 {
        let want = dm_payload(i, 200 + 17 * usize::from(i));
        assert_eq!(
            read(&b, 1024 * usize::from(i), want.len()),
            want,
            "message {i}"
        );
    }
    // Every slot is free again: a SEND of 100 bytes goes through slot 0.
    b.qp.rq().unwrap().post(7, &[b.mr.sge(8192, 256)]).unwrap();
    let payload = dm_payload(9, 100);
    a.qp.sq()
        .post_dm(5, SendOp::Send, &payload, SendFlags::SIGNALED)
        .unwrap();
    assert_eq!(a.qp.sq().dm_slots().unwrap().in_flight(), 1);
    let c = poll_n(&mut a, 1);
    assert_eq!((c[0].wr_id, c[0].status), (5, Status::Success));
    let r = poll_n(&mut b, 1);
    assert_eq!(
        (r[0].wr_id, r[0].status, r[0].byte_len),
        (7, Status::Success, 100)
    );
    assert_eq!(read(&b, 8192, 100), payload);
    assert_empty(&mut a);
    (a, b)
}

/// Scatter to CQE (`QpConfig::scatter_to_cqe`): a SEND of the CQE's limit (32 bytes with
/// 64-byte CQEs, 64 with 128) arrives inside the CQE and polling puts it into the receive's
/// buffer; one byte more arrives by DMA. On hardware `MLX5_SCATTER_TO_CQE=0` must not be set
/// (rdma-core would then not ask the kernel for it).
pub fn small_sends_come_through_the_cqe<R: Rig>(rig: &R) {
    let config = QpConfig {
        scatter_to_cqe: true,
        ..QpConfig::default()
    };
    for (cqe_size, limit) in [(64, 32usize), (128, 64)] {
        let (mut a, mut b) = (
            rig.side_sized(&config, 256, cqe_size),
            rig.side_sized(&config, 256, cqe_size),
        );
        connect(&mut a, &mut b);
        for len in [limit, limit + 1] {
            let data: Vec<u8> = (0..len).map(|i| 0x5a ^ i as u8).collect();
            b.mr.write(0, &[0; 128]);
            b.qp.rq().unwrap().post(7, &[b.mr.sge(0, 128)]).unwrap();
            a.qp.sq()
                .post(1, SendOp::Send, Data::Inline(&data), SendFlags::SIGNALED)
                .unwrap();
            assert_eq!(poll_n(&mut a, 1)[0].status, Status::Success);
            let r = poll_n(&mut b, 1)[0];
            assert_eq!(
                (r.wr_id, r.status, r.byte_len, r.data_in_cqe()),
                (7, Status::Success, len as u32, len == limit),
                "{cqe_size}-byte CQEs, {len} bytes"
            );
            let mut got = vec![0; 128];
            b.mr.read(0, &mut got);
            assert_eq!(got[..len], data[..], "{cqe_size}-byte CQEs, {len} bytes");
            assert_eq!(got[len..], vec![0; 128 - len][..]);
        }
    }
}

/// On-demand regions (`Access::ON_DEMAND`): a WRITE target registered on demand and
/// prefetched (for writing: it has LOCAL_WRITE) takes a WRITE; a source registered on demand
/// without LOCAL_WRITE, prefetched for reading (the kernel refuses a write prefetch of a
/// region that is not writable), is gathered by a second WRITE; a WRITE into a target never
/// prefetched lands after its fault. Needs a device with RC on-demand paging.
pub fn on_demand_regions_prefetch_and_carry_writes<R: Rig>(rig: &R) {
    const LEN: usize = 16 << 10;
    let (mut a, b) = rig_pair(rig);
    let on_demand = |access: Access| Access(access.0 | Access::ON_DEMAND.0);
    let target = b.pd.alloc_mr(LEN, on_demand(Access::ALL)).unwrap();
    target.prefetch(0, LEN).unwrap();
    let source = a.pd.alloc_mr(LEN, on_demand(Access::NONE)).unwrap();
    source.write(0, &[0x3c; LEN]);
    source.prefetch(0, LEN).unwrap();
    let cold = b.pd.alloc_mr(LEN, on_demand(Access::ALL)).unwrap();
    a.mr.write(0, &[0xa5; 64]);
    let writes = [
        (a.mr.sge(0, 64), target.remote(LEN - 64)),
        (source.sge(0, LEN as u32), target.remote(0)),
        (a.mr.sge(0, 64), cold.remote(4096)),
    ];
    for (i, (sge, to)) in writes.into_iter().enumerate() {
        a.qp.sq()
            .post(
                i as u64,
                SendOp::Write(to),
                Data::Sges(&[sge]),
                SendFlags::SIGNALED,
            )
            .unwrap();
        let c = poll_n(&mut a, 1)[0];
        assert_eq!((c.wr_id, c.status), (i as u64, Status::Success));
    }
    let mut back = [0u8; 64];
    target.read(LEN - 64, &mut back);
    assert_eq!(back, [0x3c; 64], "the second WRITE covered the first");
    cold.read(4096, &mut back);
    assert_eq!(back, [0xa5; 64]);
}

/// What [`ud_answers_the_sender_of_a_receive`] saw.
pub struct UdAnswer {
    /// The request's address (from the sender).
    pub request: AhAttr,
    /// The answer's address, from the receive.
    pub answer: AhAttr,
    /// The sender's GID at the request's source index (index 0 without a route).
    pub sender_gid: [u8; 16],
    /// The request's receive completion and its GRH area.
    pub received: Completion,
    pub grh: [u8; UD_GRH_BYTES as usize],
}

/// A UD server answers the sender of a datagram through an address handle made from the
/// receive's completion and its GRH area (`ProtectionDomain::create_ah_from_recv`,
/// rdma-core's `ibv_create_ah_from_wc`): the answer reaches the sender's QP. The request
/// goes from SGID index `route` to the receiver's GID of that index with a global route
/// (hop limit 33, traffic class 0x48, flow label 0x5a5a5), or, with `None`, without one on
/// InfiniBand and between the ports' GIDs on RoCE.
pub fn ud_answers_the_sender_of_a_receive<R: Rig>(rig: &R, route: Option<u8>) -> UdAnswer {
    const QKEY: u32 = 0x1100_2233;
    let config = QpConfig {
        transport: Transport::Ud,
        ..QpConfig::default()
    };
    let (mut a, mut b) = (rig.side(&config), rig.side(&config));
    for s in [&mut a, &mut b] {
        s.qp.activate_ud(1, QKEY).unwrap();
    }
    let (pa, pb) = (a.ctx.port(1).unwrap(), b.ctx.port(1).unwrap());
    let sgid_index = route.or(pa.roce.then_some(pa.gid_index));
    let request = AhAttr {
        port: 1,
        dlid: pb.lid,
        sl: 5,
        // To the receiver's GID of the same index as the source's (same type and address
        // family) when one is named, else its port's.
        grh: sgid_index.map(|sgid_index| GlobalRoute {
            dgid: route.map_or(pb.gid, |i| b.ctx.query_gid(1, i.into()).unwrap().gid),
            flow_label: 0x5a5a5,
            sgid_index,
            hop_limit: 33,
            traffic_class: 0x48,
        }),
        ..AhAttr::default()
    };
    let ah = a.pd.create_ah(&request).unwrap();
    let datagram = |wr_id, payload: &'static [u8]| SendWr {
        wr_id,
        op: SendOp::Send,
        data: Data::Inline(payload),
        flags: SendFlags::SIGNALED,
    };
    let into_b = [b.mr.sge(0, UD_GRH_BYTES + 64)];
    b.qp.rq().unwrap().post(1, &into_b).unwrap();
    a.qp.sq()
        .post_ud(datagram(2, b"ping"), &ah.dest(b.qp.qpn(), QKEY))
        .unwrap();
    assert_eq!(poll_n(&mut a, 1)[0].status, Status::Success);
    let received = poll_n(&mut b, 1)[0];
    let src_qp = received.src_qp();
    assert_eq!(
        (received.wr_id, received.status, src_qp),
        (1, Status::Success, a.qp.qpn())
    );
    let mut grh = [0u8; UD_GRH_BYTES as usize];
    b.mr.read(0, &mut grh);
    let answer = b.pd.create_ah_from_recv(1, &received, &grh).unwrap();
    let into_a = [a.mr.sge(4096, UD_GRH_BYTES + 64)];
    a.qp.rq().unwrap().post(3, &into_a).unwrap();
    b.qp.sq()
        .post_ud(datagram(4, b"pong"), &answer.dest(src_qp, QKEY))
        .unwrap();
    assert_eq!(poll_n(&mut b, 1)[0].status, Status::Success);
    let r = poll_n(&mut a, 1)[0];
    assert_eq!(
        (r.wr_id, r.status, r.src_qp()),
        (3, Status::Success, b.qp.qpn())
    );
    assert_eq!(read(&a, 4096 + UD_GRH_BYTES as usize, 4), b"pong");
    UdAnswer {
        request,
        answer: *answer.attr(),
        sender_gid: a
            .ctx
            .query_gid(1, sgid_index.unwrap_or(0).into())
            .unwrap()
            .gid,
        received,
        grh,
    }
}
