//! Error causes end to end: exact syndromes on each side, flushes, reset and reuse.

mod common;

use common::{assert_empty, connect, pair, poll_n};
use mlx5_direct::prm::Syndrome;
use mlx5_direct::{Data, PostError, QpState, Remote, SendFlags, SendOp, Status, WcOpcode};

fn syndrome(status: Status) -> Option<Syndrome> {
    match status {
        Status::Error(e) => e.syndrome(),
        _ => None,
    }
}

#[test]
fn bad_rkey_fails_then_flushes_then_reset_reuses_the_qp() {
    let (mut a, mut b) = pair();
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
        let mut out = [mlx5_direct::Completion::default(); 8];
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

#[test]
fn receive_too_small_fails_on_both_sides() {
    let (mut a, mut b) = pair();
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

#[test]
fn bad_local_key_is_a_local_protection_error() {
    let (mut a, mut b) = pair();
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

#[test]
fn no_receive_posted_exhausts_rnr_retries() {
    let fabric = mlx5_direct::backend::sim::Fabric::new();
    let config = mlx5_direct::QpConfig::default();
    let mut a = common::side(&fabric, &config);
    let mut b = common::side(&fabric, &config);
    let (ea, eb) = (a.qp.endpoint().unwrap(), b.qp.endpoint().unwrap());
    let options = mlx5_direct::ConnectOptions {
        rnr_retry: 2,
        ..Default::default()
    };
    a.qp.connect(&eb, &options).unwrap();
    b.qp.connect(&ea, &options).unwrap();
    a.qp.sq()
        .post(1, SendOp::Send, Data::Inline(&[1; 4]), SendFlags::SIGNALED)
        .unwrap();
    let c = poll_n(&mut a, 1)[0];
    assert_eq!(syndrome(c.status), Some(Syndrome::RnrRetryExcErr));
}

#[test]
fn posting_before_rts_is_refused() {
    let fabric = mlx5_direct::backend::sim::Fabric::new();
    let mut a = common::side(&fabric, &mlx5_direct::QpConfig::default());
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
    a.qp.init(1, mlx5_direct::Access::ALL).unwrap();
    a.qp.rq().unwrap().post(1, &[rsge]).unwrap();
    assert_eq!(
        a.qp.sq()
            .post(1, SendOp::Nop, Data::NONE, SendFlags::SIGNALED),
        Err(PostError::NotReadyToSend)
    );
}
