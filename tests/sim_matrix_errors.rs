//! The driver against the model, table-driven, on errors: every error cause with its exact
//! syndrome on both sides, the flush of the rest, then reset and reuse; an RNR-retried SEND
//! that completes once a receive is posted; CQEs held back that arrive through polling
//! alone.
//!
//! Completions are awaited with plain `poll` loops: a poll that finds nothing runs the
//! model's deferred work (`Uar::idle`), so RNR and transport retries happen without the
//! test calling `progress()`.

mod common;

use common::matrix::*;
use std::sync::Arc;

use common::{assert_empty, connect_with, side_sized, Side, MR_LEN};
use mlx5_direct::backend::sim::{Fabric, Fault, Sim};
use mlx5_direct::prm::Syndrome;
use mlx5_direct::{
    Access, Completion, ConnectOptions, Data, MemoryRegion, PostError, QpConfig, QpState, Remote,
    SendFlags, SendOp, Sge, Status,
};

/// Builds the failing operation from the requester, the responder and a region of the
/// responder's that grants remote READ only.
type FailingOp = fn(&Side, &Side, &MemoryRegion<Sim>) -> (SendOp, Vec<Sge>);

/// An error cause: how to set it up and what each side reports.
struct ErrorCase {
    name: &'static str,
    options: ConnectOptions,
    /// The failing operation (posted first).
    op: FailingOp,
    /// Before posting: fault injection or other setup on the pair.
    setup: fn(&Side, &Side),
    /// Receives the responder has posted before the failing operation.
    receives: usize,
    requester: Syndrome,
    /// What the responder's CQ shows for its posted receives: (syndrome or success) each.
    responder: &'static [Option<Syndrome>],
    responder_state: QpState,
}

fn no_setup(_: &Side, _: &Side) {}

fn write_to(remote: Remote, a: &Side) -> (SendOp, Vec<Sge>) {
    (SendOp::Write(remote), vec![a.mr.sge(SRC, 8)])
}

/// A WRITE the responder refuses with a remote access error: the responder's QP goes to
/// error and flushes its one posted receive.
fn remote_access(name: &'static str, op: FailingOp) -> ErrorCase {
    ErrorCase {
        name,
        options: ConnectOptions::default(),
        op,
        setup: no_setup,
        receives: 1,
        requester: Syndrome::RemoteAccessErr,
        responder: &[Some(Syndrome::WrFlushErr)],
        responder_state: QpState::Err,
    }
}

fn error_cases() -> Vec<ErrorCase> {
    let defaults = ConnectOptions::default();
    vec![
        ErrorCase {
            name: "bad lkey",
            options: defaults,
            op: |a, b, _| {
                let mut sge = a.mr.sge(SRC, 8);
                sge.lkey ^= 0x200;
                (SendOp::Write(b.mr.remote(DST)), vec![sge])
            },
            setup: no_setup,
            receives: 1,
            requester: Syndrome::LocalProtErr,
            responder: &[],
            responder_state: QpState::Rts,
        },
        remote_access("bad rkey", |a, b, _| {
            let bad = Remote {
                rkey: b.mr.rkey() ^ 0x100,
                ..b.mr.remote(DST)
            };
            write_to(bad, a)
        }),
        remote_access("missing remote right", |a, _, read_only| {
            write_to(read_only.remote(0), a)
        }),
        remote_access("out of bounds", |a, b, _| {
            write_to(b.mr.remote(MR_LEN - 4), a)
        }),
        ErrorCase {
            name: "receive too small",
            options: defaults,
            op: |a, _, _| (SendOp::Send, vec![a.mr.sge(SRC, 128)]),
            setup: no_setup,
            receives: 2,
            requester: Syndrome::RemoteInvalReqErr,
            responder: &[Some(Syndrome::LocalLengthErr), Some(Syndrome::WrFlushErr)],
            responder_state: QpState::Err,
        },
        ErrorCase {
            name: "RNR retries exceeded",
            options: ConnectOptions {
                rnr_retry: 2,
                ..defaults
            },
            op: |a, _, _| (SendOp::Send, vec![a.mr.sge(SRC, 8)]),
            setup: no_setup,
            receives: 0,
            requester: Syndrome::RnrRetryExcErr,
            responder: &[],
            responder_state: QpState::Rts,
        },
        ErrorCase {
            name: "transport retries exceeded",
            options: ConnectOptions {
                retry_cnt: 2,
                ..defaults
            },
            op: |a, b, _| write_to(b.mr.remote(DST), a),
            setup: |a, _| {
                a.ctx.backend().nic().inject(Fault::LosePackets {
                    qpn: Some(a.qp.qpn()),
                    count: u32::MAX,
                })
            },
            receives: 1,
            requester: Syndrome::TransportRetryExcErr,
            responder: &[],
            responder_state: QpState::Rts,
        },
    ]
}

#[test]
fn every_error_cause_then_flush_then_reset_and_reuse() {
    for case in error_cases() {
        let name = case.name;
        let fabric: Arc<Fabric> = Fabric::new();
        let config = QpConfig::default();
        let mut a = side_sized(&fabric, &config, 64, 64);
        let mut b = side_sized(&fabric, &config, 64, 64);
        connect_with(&mut a, &mut b, &case.options);
        for r in 0..case.receives {
            let rsge = b.mr.sge(DST + r * 64, 16);
            b.qp.rq().unwrap().post(700 + r as u64, &[rsge]).unwrap();
        }
        b.mr.write(0x800, &[0; 16]);
        (case.setup)(&a, &b);
        let read_only = b.pd.alloc_mr(64, Access::REMOTE_READ).unwrap();
        let (op, sges) = (case.op)(&a, &b, &read_only);
        let sq = a.qp.sq();
        sq.push(1, op, Data::Sges(&sges), SendFlags::UNSIGNALED)
            .unwrap();
        let follow = SendOp::Write(b.mr.remote(0x800));
        sq.push(2, follow, Data::Inline(&[2; 8]), SendFlags::UNSIGNALED)
            .unwrap();
        sq.push(3, follow, Data::Inline(&[3; 8]), SendFlags::SIGNALED)
            .unwrap();
        sq.ring_doorbell();

        let c = poll_exact(&mut a, 3);
        assert_eq!(
            c.iter().map(|c| (c.wr_id, syndrome(c))).collect::<Vec<_>>(),
            [
                (1, Some(case.requester)),
                (2, Some(Syndrome::WrFlushErr)),
                (3, Some(Syndrome::WrFlushErr))
            ],
            "{name}"
        );
        assert_eq!(a.qp.state(), QpState::Err, "{name}");
        assert_eq!(bytes(&b, 0x800, 16), [0; 16], "{name}: flushed WRs wrote");
        let r = poll_exact(&mut b, case.responder.len());
        assert_eq!(
            r.iter().map(|r| (r.wr_id, syndrome(r))).collect::<Vec<_>>(),
            case.responder
                .iter()
                .enumerate()
                .map(|(i, s)| (700 + i as u64, *s))
                .collect::<Vec<_>>(),
            "{name}"
        );
        assert_eq!(b.qp.state(), case.responder_state, "{name}");
        assert_eq!(
            a.qp.sq()
                .post(4, follow, Data::Inline(&[4; 8]), SendFlags::SIGNALED),
            Err(PostError::NotReadyToSend),
            "{name}"
        );

        // Reset both ends, reconnect, and the same QPs work again.
        a.ctx.backend().nic().inject(Fault::Clear);
        a.qp.reset().unwrap();
        b.qp.reset().unwrap();
        connect_with(&mut a, &mut b, &case.options);
        let rsge = b.mr.sge(DST, 64);
        b.qp.rq().unwrap().post(800, &[rsge]).unwrap();
        let sq = a.qp.sq();
        sq.post(5, follow, Data::Inline(&[5; 8]), SendFlags::SIGNALED)
            .unwrap();
        sq.post(6, SendOp::Send, Data::Inline(b"again"), SendFlags::SIGNALED)
            .unwrap();
        let c = poll_exact(&mut a, 2);
        assert_eq!(
            c.iter().map(|c| (c.wr_id, c.status)).collect::<Vec<_>>(),
            [(5, Status::Success), (6, Status::Success)],
            "{name}"
        );
        let r = poll_exact(&mut b, 1)[0];
        assert_eq!((r.wr_id, r.status, r.byte_len), (800, Status::Success, 5));
        assert_eq!(bytes(&b, 0x800, 8), [5; 8], "{name}");
        assert_eq!(bytes(&b, DST, 5), b"again", "{name}");
    }
}

#[test]
fn rnr_then_success_once_a_receive_is_posted() {
    let (mut a, mut b) = pair_sized(&QpConfig::default(), 64, 64);
    a.qp.sq()
        .post(1, SendOp::Send, Data::Inline(b"late"), SendFlags::SIGNALED)
        .unwrap();
    // RNR retries forever (rnr_retry 7): polling keeps retrying, nothing completes.
    for _ in 0..50 {
        assert_empty(&mut a);
    }
    assert!(b.ctx.backend().nic().stats().rnr_naks >= 50);
    let rsge = b.mr.sge(DST, 64);
    b.qp.rq().unwrap().post(9, &[rsge]).unwrap();
    let c = poll_exact(&mut a, 1)[0];
    assert_eq!((c.wr_id, c.status), (1, Status::Success));
    let r = poll_exact(&mut b, 1)[0];
    assert_eq!((r.wr_id, r.status, r.byte_len), (9, Status::Success, 4));
    assert_eq!(bytes(&b, DST, 4), b"late");
}

#[test]
fn held_back_cqes_arrive_through_polling_alone() {
    let (mut a, b) = pair_sized(&QpConfig::default(), 64, 64);
    a.ctx.backend().nic().inject(Fault::DelayCqes(true));
    a.qp.sq()
        .post(
            1,
            SendOp::Write(b.mr.remote(0)),
            Data::Inline(b"x"),
            SendFlags::SIGNALED,
        )
        .unwrap();
    // The first poll finds nothing and runs the model's deferred work; the next finds it.
    let mut out = [Completion::default(); 1];
    assert_eq!(a.cq.poll(&mut out), 0);
    assert_eq!(a.cq.poll(&mut out), 1);
    assert_eq!((out[0].wr_id, out[0].status), (1, Status::Success));
}
