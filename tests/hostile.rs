//! Hostile input and API misuse.
//!
//! - API misuse against the model: each refused with a typed error and nothing posted (no
//!   WQE written, no doorbell rung).
//! - Trouble on the device side reaches the application: a region dropped while a WR using
//!   it waits, a dropped key at the responder (an asynchronous access error there), flushes.
//! - The model's driver-bug counters, checked when every `common::Side` drops, see a misuse
//!   (an arm repeated without acknowledging the event) and fail the test unless it opts out.
//!
//! Random bytes as CQEs into the driver's parser are in `tests/hostile_cqes.rs`; random WQE
//! bytes into the model in `hw/tests/hostile.rs`.

mod common;

use common::bodies::syndrome;
use common::hostile::*;
use std::time::Duration;

use common::{assert_empty, pair, pair_with, poll_n, side, DriverBug, Side};
use mlx5_direct::backend::sim::{Fabric, Sim};
use mlx5_direct::prm::Syndrome;
use mlx5_direct::sq::{MaskedCs32Args, MaskedCs64Args, MAX_MESSAGE_SIZE};
use mlx5_direct::{
    Access, AsyncEvent, ConnectOptions, Data, Error, PostError, QpConfig, QpState, Remote,
    SendFlags, SendOp, Sge, Status, WcOpcode,
};

#[test]
fn posting_in_reset_init_and_err_is_refused_and_posts_nothing() {
    let fabric = Fabric::new();
    let mut a = side(&fabric, &QpConfig::default());
    let mut b = side(&fabric, &QpConfig::default());
    let sge = a.mr.sge(0, 8);
    let remote = b.mr.remote(0);
    let try_send = |s: &mut Side| {
        s.qp.sq().post(
            1,
            SendOp::Write(remote),
            Data::Sges(&[sge]),
            SendFlags::SIGNALED,
        )
    };
    // RESET: nothing at all.
    let before = posted(&mut a);
    assert_eq!(try_send(&mut a), Err(PostError::NotReadyToSend));
    assert_eq!(
        a.qp.rq().unwrap().post(1, &[sge]),
        Err(PostError::NotReadyToReceive)
    );
    // INIT: receives only.
    a.qp.init(1, Access::ALL).unwrap();
    assert_eq!(try_send(&mut a), Err(PostError::NotReadyToSend));
    // ERR (moved there by the application): neither.
    let (ea, eb) = (a.qp.endpoint().unwrap(), b.qp.endpoint().unwrap());
    a.qp.connect(&eb, &ConnectOptions::default()).unwrap();
    b.qp.connect(&ea, &ConnectOptions::default()).unwrap();
    a.qp.to_error().unwrap();
    assert_eq!(a.qp.state(), QpState::Err);
    assert_eq!(try_send(&mut a), Err(PostError::NotReadyToSend));
    assert_eq!(
        a.qp.rq().unwrap().post(2, &[sge]),
        Err(PostError::NotReadyToReceive)
    );
    assert_eq!(posted(&mut a), before);
    assert_eq!(a.qp.sq().doorbell_record(), 0);
    assert_empty(&mut a);
    // Reset and connect again: usable.
    a.qp.reset().unwrap();
    b.qp.reset().unwrap();
    common::connect(&mut a, &mut b);
    try_send(&mut a).unwrap();
    assert_eq!(poll_n(&mut a, 1)[0].status, Status::Success);
}

#[test]
fn connecting_or_initialising_twice_is_a_wrong_state_error() {
    let (mut a, b) = pair();
    let eb = b.qp.endpoint().unwrap();
    assert_eq!(
        a.qp.connect(&eb, &ConnectOptions::default()),
        Err(Error::WrongState {
            operation: "connect",
            state: QpState::Rts
        })
    );
    assert_eq!(
        a.qp.init(1, Access::ALL),
        Err(Error::WrongState {
            operation: "initialise",
            state: QpState::Rts
        })
    );
    assert_eq!(a.qp.state(), QpState::Rts);
}

#[test]
fn sizes_at_the_maximum_pass_and_one_over_is_refused() {
    let caps = mlx5_direct::Context::new(Sim::new()).caps();
    let config = QpConfig {
        max_inline: caps.max_inline,
        max_send_sge: caps.max_send_sge,
        max_recv_sge: caps.max_recv_sge,
        ..QpConfig::default()
    };
    // Over the device's limits: refused at creation.
    let fabric = Fabric::new();
    let s = side(&fabric, &QpConfig::default());
    for bad in [
        QpConfig {
            max_inline: caps.max_inline + 1,
            ..config
        },
        QpConfig {
            max_send_sge: caps.max_send_sge + 1,
            ..config
        },
        QpConfig {
            max_recv_sge: caps.max_recv_sge + 1,
            ..config
        },
        QpConfig {
            sq_wqebbs: caps.max_sq_wqebbs + 1,
            ..config
        },
        QpConfig {
            rq_wqes: caps.max_sq_wqebbs + 1,
            ..config
        },
    ] {
        assert!(matches!(
            s.pd.create_qp(&s.cq, &s.cq, &bad),
            Err(Error::InvalidArgument(_))
        ));
    }
    let (mut a, mut b) = pair_with(&config);
    let remote = b.mr.remote(0);
    let before = posted(&mut a);
    // Inline: the maximum lands whole; one more byte is refused.
    let max_inline = vec![0xa5; caps.max_inline as usize];
    let over = vec![0; caps.max_inline as usize + 1];
    assert_eq!(
        a.qp.sq().post(
            1,
            SendOp::Write(remote),
            Data::Inline(&over),
            SendFlags::SIGNALED
        ),
        Err(PostError::InlineTooLarge {
            len: over.len(),
            max: max_inline.len()
        })
    );
    // Gathers: the maximum count is accepted, one more refused; the same for scatters.
    let sges: Vec<Sge> = (0..=caps.max_send_sge as usize)
        .map(|i| a.mr.sge(4096 + 16 * i, 16))
        .collect();
    assert_eq!(
        a.qp.sq().post(
            2,
            SendOp::Write(remote),
            Data::Sges(&sges),
            SendFlags::SIGNALED
        ),
        Err(PostError::TooManySges {
            count: sges.len(),
            max: sges.len() - 1
        })
    );
    let rsges: Vec<Sge> = (0..=caps.max_recv_sge as usize)
        .map(|i| b.mr.sge(8192 + 16 * i, 16))
        .collect();
    assert_eq!(
        b.qp.rq().unwrap().post(3, &rsges),
        Err(PostError::TooManySges {
            count: rsges.len(),
            max: rsges.len() - 1
        })
    );
    // Messages: 1 GiB + 1 is refused before anything is written.
    let huge = [
        Sge {
            len: 1 << 29,
            ..a.mr.sge(0, 0)
        },
        Sge {
            len: (1 << 29) + 1,
            ..a.mr.sge(0, 0)
        },
    ];
    assert_eq!(
        a.qp.sq().post(
            4,
            SendOp::Write(remote),
            Data::Sges(&huge),
            SendFlags::SIGNALED
        ),
        Err(PostError::MessageTooLarge {
            len: MAX_MESSAGE_SIZE + 1
        })
    );
    assert_eq!(posted(&mut a), before, "refused posts wrote nothing");

    a.qp.sq()
        .post(
            5,
            SendOp::Write(remote),
            Data::Inline(&max_inline),
            SendFlags::SIGNALED,
        )
        .unwrap();
    assert_eq!(poll_n(&mut a, 1)[0].status, Status::Success);
    let mut got = vec![0; max_inline.len()];
    b.mr.read(0, &mut got);
    assert_eq!(got, max_inline);
    sges[..caps.max_send_sge as usize]
        .iter()
        .enumerate()
        .for_each(|(i, s)| {
            a.mr.write(s.addr as usize - a.mr.addr() as usize, &[i as u8; 16])
        });
    b.qp.rq()
        .unwrap()
        .post(6, &rsges[..caps.max_recv_sge as usize])
        .unwrap();
    a.qp.sq()
        .post(
            7,
            SendOp::Send,
            Data::Sges(&sges[..caps.max_send_sge as usize]),
            SendFlags::SIGNALED,
        )
        .unwrap();
    assert_eq!(poll_n(&mut a, 1)[0].status, Status::Success);
    let r = poll_n(&mut b, 1)[0];
    assert_eq!((r.wr_id, r.byte_len), (6, 16 * caps.max_send_sge));
    let mut got = vec![0; 16 * caps.max_send_sge as usize];
    b.mr.read(8192, &mut got);
    assert!(got.chunks(16).enumerate().all(|(i, c)| c == [i as u8; 16]));
    // Exactly 1 GiB is a legal length: the driver posts it, and the device refuses the
    // gather because the region is only 64 KiB (a protection error, not a length error).
    let one_gib = [
        huge[0],
        Sge {
            len: 1 << 29,
            ..huge[1]
        },
    ];
    a.qp.sq()
        .post(
            8,
            SendOp::Write(remote),
            Data::Sges(&one_gib),
            SendFlags::SIGNALED,
        )
        .unwrap();
    let c = poll_n(&mut a, 1)[0];
    assert_eq!(
        (c.wr_id, syndrome(c.status)),
        (8, Some(Syndrome::LocalProtErr))
    );
}

#[test]
fn zero_length_operations_need_no_key_and_complete() {
    let (mut a, mut b) = pair();
    let nowhere = Remote { addr: 0, rkey: 0 };
    b.qp.rq().unwrap().post(1, &[]).unwrap();
    let sq = a.qp.sq();
    sq.push(10, SendOp::Write(nowhere), Data::NONE, SendFlags::SIGNALED)
        .unwrap();
    sq.push(11, SendOp::Read(nowhere), Data::NONE, SendFlags::SIGNALED)
        .unwrap();
    // A zero-length entry is dropped from the WQE, like an empty gather list.
    sq.push(
        12,
        SendOp::Send,
        Data::Sges(&[Sge {
            addr: 0,
            len: 0,
            lkey: 0xdead,
        }]),
        SendFlags::SIGNALED,
    )
    .unwrap();
    sq.push(
        13,
        SendOp::Write(nowhere),
        Data::Inline(&[]),
        SendFlags::SIGNALED,
    )
    .unwrap();
    sq.ring_doorbell();
    let c = poll_n(&mut a, 4);
    assert_eq!(
        c.iter()
            .map(|c| (c.wr_id, c.opcode, c.status))
            .collect::<Vec<_>>(),
        [
            (10, WcOpcode::RdmaWrite, Status::Success),
            (11, WcOpcode::RdmaRead, Status::Success),
            (12, WcOpcode::Send, Status::Success),
            (13, WcOpcode::RdmaWrite, Status::Success),
        ]
    );
    assert_eq!(c[1].byte_len, 0, "the READ read nothing");
    let r = poll_n(&mut b, 1)[0];
    assert_eq!((r.wr_id, r.status, r.byte_len), (1, Status::Success, 0));
}

#[test]
fn full_queue_and_a_batch_larger_than_the_queue() {
    let config = QpConfig {
        sq_wqebbs: 16,
        rq_wqes: 4,
        ..QpConfig::default()
    };
    let (mut a, mut b) = pair_with(&config);
    let remote = b.mr.remote(0);
    let sq = a.qp.sq();
    // A batch of 17 one-WQEBB WQEs: a SEND that will wait for a receive, then WRITEs; 16
    // fit, the 17th is refused and not written.
    sq.push(
        0,
        SendOp::Send,
        Data::Inline(&[0; 8]),
        SendFlags::UNSIGNALED,
    )
    .unwrap();
    for i in 1..17u64 {
        let r = sq.push(
            i,
            SendOp::Write(remote),
            Data::Inline(&[i as u8; 8]),
            SendFlags::UNSIGNALED,
        );
        if i < 16 {
            r.unwrap();
        } else {
            assert_eq!(r, Err(PostError::QueueFull { needed: 1, free: 0 }));
        }
    }
    assert_eq!(sq.producer_count(), 16);
    assert_eq!(sq.ring_doorbell(), 16);
    assert_eq!(
        sq.post(99, SendOp::Nop, Data::NONE, SendFlags::SIGNALED),
        Err(PostError::QueueFull { needed: 1, free: 0 })
    );
    // Receives: a batch over the ring's size posts what fits and says so.
    let rsge = b.mr.sge(1024, 64);
    let batch: Vec<(u64, &[Sge])> = (0..7).map(|i| (i, std::slice::from_ref(&rsge))).collect();
    assert_eq!(
        b.qp.rq().unwrap().post_many(batch),
        Err((4, PostError::QueueFull { needed: 1, free: 0 }))
    );
    // The SEND is still waiting (its RNR retry comes with the next timer step). Moving the
    // QP to error flushes all 16, unsignaled ones included, in order with their wr_ids;
    // then the ring is free again and nothing was executed.
    a.qp.to_error().unwrap();
    let c = poll_n(&mut a, 16);
    assert!(
        c.iter()
            .enumerate()
            .all(|(i, c)| c.wr_id == i as u64 && syndrome(c.status) == Some(Syndrome::WrFlushErr)),
        "{c:?}"
    );
    assert_eq!(a.qp.sq().free_wqebbs(), 16);
    assert_empty(&mut a);
    let mut byte = [0u8];
    b.mr.read(0, &mut byte);
    assert_eq!(byte, [0], "flushed WRITEs wrote nothing");
}

#[test]
fn misaligned_masked_atomics_are_refused() {
    let (mut a, b) = pair();
    let result4 = [a.mr.sge(0, 4)];
    let result8 = [a.mr.sge(0, 8)];
    let at = |off| b.mr.remote(off);
    let before = posted(&mut a);
    let cases = [
        (
            SendOp::MaskedCompareSwap32 {
                remote: at(2),
                args: MaskedCs32Args::default(),
            },
            &result4,
            2,
        ),
        (
            SendOp::MaskedFetchAdd32 {
                remote: at(6),
                add: 1,
                field_boundary: 0,
            },
            &result4,
            6,
        ),
        (
            SendOp::MaskedCompareSwap64 {
                remote: at(4),
                args: MaskedCs64Args::default(),
            },
            &result8,
            4,
        ),
        (
            SendOp::CompareSwap {
                remote: at(12),
                compare: 0,
                swap: 0,
            },
            &result8,
            12,
        ),
    ];
    for (op, result, off) in cases {
        assert_eq!(
            a.qp.sq()
                .post(1, op, Data::Sges(result), SendFlags::SIGNALED),
            Err(PostError::MisalignedAtomic {
                addr: b.mr.addr() + off
            }),
            "{op:?}"
        );
    }
    assert_eq!(posted(&mut a), before);
    // 4-byte alignment is enough for the 4-byte forms.
    a.qp.sq()
        .post(
            2,
            SendOp::MaskedFetchAdd32 {
                remote: at(4),
                add: 3,
                field_boundary: 0,
            },
            Data::Sges(&result4),
            SendFlags::SIGNALED,
        )
        .unwrap();
    let c = poll_n(&mut a, 1)[0];
    assert_eq!((c.status, c.byte_len), (Status::Success, 4));
}

#[test]
fn registering_unmapped_memory_is_refused() {
    let fabric = Fabric::new();
    let s = side(&fabric, &QpConfig::default());
    // Two pages just above the zero page: below `vm.mmap_min_addr` (no mapping without
    // MAP_FIXED lands there) and below every address the kernel hands out (mmap allocates
    // downwards from near the stack), so no thread of the test binary can be mapping them.
    // A hole made by unmapping a fresh mapping could be reused by another test's mmap.
    let hole = 0x1000 as *mut u8;
    // SAFETY: each call is refused before the range is used.
    unsafe {
        assert!(matches!(
            s.pd.register(hole, 8192, Access::ALL),
            Err(Error::InvalidArgument(_))
        ));
        assert!(matches!(
            s.pd.register(std::ptr::null_mut(), 64, Access::ALL),
            Err(Error::InvalidArgument(_))
        ));
        assert!(matches!(
            s.pd.register((usize::MAX - 8) as *mut u8, 64, Access::ALL),
            Err(Error::InvalidArgument(_))
        ));
    }
    // The check passes mapped memory: the last 64 bytes of an existing region.
    let tail = (s.mr.addr() as usize + s.mr.len() - 64) as *mut u8;
    // SAFETY: inside a live region's mapping; the new region is dropped at once and
    // nothing is posted with it.
    let r = unsafe { s.pd.register(tail, 64, Access::ALL) };
    assert!(r.is_ok(), "{r:?}");
}

#[test]
fn destroying_a_cq_in_use_is_busy_and_gives_it_back() {
    let fabric = Fabric::new();
    let s = side(&fabric, &QpConfig::default());
    let Side { cq, qp, .. } = s;
    let (cq, err) = cq.destroy().unwrap_err();
    assert_eq!(err, Error::Busy("CQ"));
    drop(qp);
    cq.destroy().unwrap();
}

#[test]
fn a_region_dropped_under_a_waiting_wr_and_a_dropped_key_fail_cleanly() {
    let (mut a, mut b) = pair();
    // A SEND gathering from a region waits for a receive (RNR, retried forever).
    let source = a.pd.alloc_mr(4096, Access::ALL).unwrap();
    source.write(0, &[0x5a; 64]);
    let sge = source.sge(0, 64);
    a.qp.sq()
        .post(1, SendOp::Send, Data::Sges(&[sge]), SendFlags::SIGNALED)
        .unwrap();
    for _ in 0..3 {
        a.ctx.backend().nic().progress();
    }
    assert_empty(&mut a);
    // The application drops the region (deregistered, then unmapped) while the WR waits.
    drop(source);
    b.qp.rq().unwrap().post(7, &[b.mr.sge(0, 64)]).unwrap();
    let c = poll_n(&mut a, 1)[0];
    assert_eq!(c.wr_id, 1);
    assert_eq!(syndrome(c.status), Some(Syndrome::LocalProtErr), "{c:?}");
    assert_eq!(a.qp.state(), QpState::Err);
    let mut got = [0u8; 64];
    b.mr.read(0, &mut got);
    assert_eq!(got, [0; 64], "nothing of the freed region was sent");

    // A key dropped at the responder fails a later WRITE there.
    let (mut a, b) = pair();
    let target = b.pd.alloc_mr(4096, Access::ALL).unwrap();
    let remote = target.remote(0);
    drop(target);
    a.qp.sq()
        .post(
            2,
            SendOp::Write(remote),
            Data::Inline(&[1; 8]),
            SendFlags::UNSIGNALED,
        )
        .unwrap();
    let c = poll_n(&mut a, 1)[0];
    assert_eq!(
        (c.wr_id, syndrome(c.status)),
        (2, Some(Syndrome::RemoteAccessErr))
    );
    assert_eq!(a.qp.state(), QpState::Err);
    // The responder consumed no receive, so no CQE tells it: the access error arrives as
    // an asynchronous event naming its QP, which the driver then reports in ERR.
    assert_eq!(b.qp.state(), QpState::Rts);
    assert_eq!(
        b.ctx.poll_async_event(),
        Ok(Some(AsyncEvent::QpAccessError { qpn: b.qp.qpn() }))
    );
    assert_eq!(b.qp.state(), QpState::Err);
    assert_eq!(b.ctx.poll_async_event(), Ok(None));
    assert_eq!(
        a.ctx.poll_async_event(),
        Ok(None),
        "the error CQE said it all"
    );
}

/// Arms `a`'s CQ, lets a completion fire the event, then arms again before taking the
/// event: the same `sn`, a request for an event already delivered (a stale arm).
fn arm_again_before_taking_the_event(a: &mut Side, b: &Side) {
    a.cq.arm(false);
    a.qp.sq()
        .post(
            1,
            SendOp::Write(b.mr.remote(0)),
            Data::Inline(b"event"),
            SendFlags::SIGNALED,
        )
        .unwrap();
    poll_n(a, 1);
    a.cq.arm(false);
    assert_eq!(
        a.cq.wait_event(Duration::ZERO),
        Ok(true),
        "the first arm's event"
    );
    assert_eq!(
        a.cq.wait_event(Duration::ZERO),
        Ok(false),
        "the second arm is ignored"
    );
}

#[test]
fn the_driver_bug_check_counts_a_stale_arm_and_a_test_may_allow_it() {
    let (mut a, b) = pair();
    arm_again_before_taking_the_event(&mut a, &b);
    let counted = |b: DriverBug| u64::from(b == DriverBug::StaleArm);
    assert_eq!(
        a.bugs.counts(),
        DriverBug::ALL.map(|b| (b, counted(b))).to_vec()
    );
    a.bugs.allow(DriverBug::StaleArm);
    assert!(a
        .bugs
        .counts()
        .iter()
        .all(|&(bug, n)| bug != DriverBug::StaleArm && n == 0));
}

#[test]
#[should_panic(expected = "the model counted driver bugs [(StaleArm, 1)]")]
fn a_driver_bug_nobody_allowed_fails_the_test_when_the_side_drops() {
    let (mut a, b) = pair();
    arm_again_before_taking_the_event(&mut a, &b);
    drop(a);
}

/// mlx5 reads a data segment with `byte_count` 0 as 2 GiB, so the driver never writes one:
/// zero-length entries of a gather list, an RQ scatter list and an SRQ scatter list are
/// skipped, and the data lands in the entries that have room.
#[test]
fn zero_length_entries_never_reach_a_ring() {
    let (mut a, mut b) = pair();
    let empty = |side: &Side, off: usize| side.mr.sge(off, 0);
    let scatter = [empty(&b, 0), b.mr.sge(256, 16), empty(&b, 512)];
    b.qp.rq().unwrap().post(1, &scatter).unwrap();
    a.mr.write(0, b"gathered");
    let gather = [empty(&a, 64), a.mr.sge(0, 8), empty(&a, 128)];
    a.qp.sq()
        .post(2, SendOp::Send, Data::Sges(&gather), SendFlags::SIGNALED)
        .unwrap();
    assert_eq!(poll_n(&mut a, 1)[0].status, Status::Success);
    let r = poll_n(&mut b, 1)[0];
    assert_eq!((r.wr_id, r.status, r.byte_len), (1, Status::Success, 8));
    let mut got = [0u8; 8];
    b.mr.read(256, &mut got);
    assert_eq!(&got, b"gathered");
    b.mr.read(0, &mut got);
    assert_eq!(got, [0; 8], "nothing at the empty entry's address");

    // An SRQ, on a QP of its own.
    let fabric = Fabric::new();
    let config = QpConfig::default();
    let (mut c, mut d) = (side(&fabric, &config), side(&fabric, &config));
    let mut srq = c.pd.create_srq(4, 2).unwrap();
    let mut on_srq =
        c.pd.create_qp_with_srq(&c.cq, &c.cq, &srq, &config)
            .unwrap();
    let scatter = [empty(&c, 0), c.mr.sge(256, 16)];
    srq.post(3, &scatter).unwrap();
    let opts = ConnectOptions::default();
    d.qp.connect(&on_srq.endpoint().unwrap(), &opts).unwrap();
    on_srq.connect(&d.qp.endpoint().unwrap(), &opts).unwrap();
    d.qp.sq()
        .post(
            4,
            SendOp::Send,
            Data::Inline(b"to srq"),
            SendFlags::SIGNALED,
        )
        .unwrap();
    assert_eq!(poll_n(&mut d, 1)[0].status, Status::Success);
    assert_eq!(poll_n(&mut c, 1)[0].wr_id, 3);
    let mut got = [0u8; 6];
    c.mr.read(256, &mut got);
    assert_eq!(&got, b"to srq");
    for side in [&a, &b, &c, &d] {
        assert_eq!(side.ctx.backend().nic().stats().zero_length_segments, 0);
    }
}
