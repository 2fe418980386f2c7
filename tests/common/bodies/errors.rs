//! Errors with their exact syndromes on both sides, flushes, reset and reconnect, RNR and
//! transport retries exhausted, a CQ overrun, the refusals of a rate limit.

use std::time::Duration;

use mlx5_direct::prm::Syndrome;
use mlx5_direct::{
    Access, AsyncEvent, Completion, ConnectOptions, Data, Error, PostError, QpConfig, QpState,
    RateLimit, Remote, SendFlags, SendOp, Status, WcOpcode,
};

use super::super::{assert_empty, connect, connect_with, poll_n, rig_pair, Rig};
use super::*;

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

/// A rate limit (`Qp::set_rate_limit`) is refused on a QP not in RTS, with a burst but no
/// rate, and on an RC QP in RTS, whose transport no mlx5 paces (the device's
/// `packet_pacing_caps`, the model's default caps), each before the device is asked.
pub fn rate_limit_refusals<R: Rig>(rig: &R) {
    let mut fresh = rig.side(&QpConfig::default());
    let rate = RateLimit {
        kbps: 1_000,
        ..RateLimit::default()
    };
    assert_eq!(
        fresh.qp.set_rate_limit(&rate),
        Err(Error::WrongState {
            operation: "set the rate limit of",
            state: QpState::Reset
        })
    );
    let (mut a, _b) = rig_pair(rig);
    let burst_only = RateLimit {
        max_burst_sz: 4096,
        ..RateLimit::default()
    };
    assert!(matches!(
        a.qp.set_rate_limit(&burst_only),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        a.qp.set_rate_limit(&rate),
        Err(Error::Unsupported(_))
    ));
}
