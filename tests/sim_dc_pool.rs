//! DCI pools and DCI streams on the model: a pool keeps a DCI per busy destination and
//! recovers a failed one, CQE version 1 completions carry the DCI's user index, an error on
//! one stream leaves the others running, and the stream checks refuse before anything is
//! written.

mod common;

use common::dc::*;
use common::{poll_n, side, Side};
use mlx5_direct::backend::sim::{DcRefusal, Fabric, NicConfig, Sim};
use mlx5_direct::prm::Syndrome;
use mlx5_direct::{
    AddressHandle, Completion, ConnectOptions, Context, Data, DciPool, DciStreams, PostError,
    QpConfig, QpState, SendFlags, SendOp, SendWr, Status,
};

/// Polls `n` completions of `a`'s CQ and hands each to `pool`.
fn drain(a: &mut Side, pool: &mut DciPool<Sim>, n: usize) -> Vec<Completion> {
    let cs = poll_n(a, n);
    for c in &cs {
        assert!(pool.complete(c).unwrap().is_some());
    }
    cs
}

#[test]
fn a_pool_keeps_a_dci_per_busy_destination_and_reuses_released_ones() {
    let fabric = Fabric::new();
    let targets: Vec<Target> = (0..3).map(|_| target(&fabric)).collect();
    let mut a = dci(&fabric);
    let mut pool =
        DciPool::new(&a.pd, &a.cq, 2, &dci_config(), &ConnectOptions::default()).unwrap();
    let ahs: Vec<_> = targets.iter().map(|t| ah_to(&a, t)).collect();
    let dests: Vec<_> = (0..3)
        .map(|i| ahs[i].dc_dest(targets[i].dct.number().unwrap(), DC_KEY))
        .collect();
    const PAYLOADS: [[u8; 4]; 5] = [[0; 4], [0xa1; 4], [0xa2; 4], [0xa3; 4], [0xa4; 4]];
    let put = |id: u64, t: &Target, off: usize| {
        wr(
            id,
            SendOp::Write(t.mr.remote(off)),
            Data::Inline(&PAYLOADS[id as usize]),
        )
    };
    let first = pool.post(put(1, &targets[0], 0), &dests[0]).unwrap();
    assert_eq!(pool.post(put(2, &targets[0], 4), &dests[0]).unwrap(), first);
    let second = pool.post(put(3, &targets[1], 0), &dests[1]).unwrap();
    assert_ne!(first, second);
    assert_eq!(pool.serving(&dests[1]), Some(second));
    assert_eq!(pool.free(), 0);
    // Every DCI busy with another destination: refused, nothing written.
    let before: Vec<u32> = (0..2)
        .map(|i| pool.dci(i).send_queue().producer_count())
        .collect();
    assert_eq!(
        pool.post(put(4, &targets[2], 0), &dests[2]),
        Err(PostError::NoFreeDci { dcis: 2 })
    );
    let after: Vec<u32> = (0..2)
        .map(|i| pool.dci(i).send_queue().producer_count())
        .collect();
    assert_eq!(before, after);
    let cs = drain(&mut a, &mut pool, 3);
    assert!(cs.iter().all(|c| c.status.is_ok()));
    assert_eq!((pool.free(), pool.serving(&dests[0])), (2, None));
    // The last DCI released is taken first (UCX's stack).
    assert_eq!(
        pool.post(put(4, &targets[2], 0), &dests[2]).unwrap(),
        second
    );
    drain(&mut a, &mut pool, 1);
    for (t, want) in targets.iter().zip([[0xa1, 0xa2], [0xa3, 0], [0xa4, 0]]) {
        let mut got = [0u8; 8];
        t.mr.read(0, &mut got);
        assert_eq!(
            got,
            [want[0], want[0], want[0], want[0], want[1], want[1], want[1], want[1]]
        );
    }
    // Each DCI's connections: DCI `first` one (to t0), DCI `second` two (t1, then t2).
    let stats = a.ctx.backend().nic().stats();
    assert_eq!((stats.dc_connects, stats.dc_disconnects), (3, 1));
}

#[test]
fn cqe_version_1_completions_carry_the_dcis_user_index() {
    let fabric = Fabric::new();
    let t = target(&fabric);
    // A NIC whose context negotiated CQE version 1, NAKing refusals (an error CQE at once).
    let cfg = NicConfig {
        cqe_version: 1,
        dc_refusal: DcRefusal::Nak,
        ..NicConfig::default()
    };
    let ctx = Context::new(Sim::on_fabric(&fabric, cfg));
    let config = QpConfig {
        user_index: Some(0xab_cdef),
        ..dci_config()
    };
    let mut a = common::side_on(ctx, &config, 256, 64);
    a.qp.activate_dci(&ConnectOptions::default()).unwrap();
    let mut other =
        a.pd.create_dci(
            &a.cq,
            &QpConfig {
                user_index: Some(7),
                ..dci_config()
            },
        )
        .unwrap();
    other.activate_dci(&ConnectOptions::default()).unwrap();
    let ah = ah_to(&a, &t);
    let dctn = t.dct.number().unwrap();
    let op = SendOp::Write(t.mr.remote(0));
    other
        .sq()
        .post_dc(wr(3, op, Data::Inline(b"ok")), &ah.dc_dest(dctn, DC_KEY))
        .unwrap();
    a.qp.sq()
        .post_dc(wr(1, op, Data::Inline(b"ok")), &ah.dc_dest(dctn, DC_KEY))
        .unwrap();
    a.qp.sq()
        .post_dc(
            wr(2, op, Data::Inline(b"no")),
            &ah.dc_dest(dctn, DC_KEY ^ 1),
        )
        .unwrap();
    let cs = poll_n(&mut a, 3);
    assert_eq!(
        (cs[0].status, cs[0].qpn, cs[0].user_index()),
        (Status::Success, other.qpn(), 7)
    );
    assert_eq!(
        (cs[1].status, cs[1].qpn, cs[1].user_index()),
        (Status::Success, a.qp.qpn(), 0xab_cdef)
    );
    // The error CQE carries it too (mlx5_err_cqe.srqn).
    assert_eq!(
        (syndrome(&cs[2]), cs[2].user_index()),
        (Some(Syndrome::RemoteAccessErr), 0xab_cdef)
    );
    assert_eq!(&a.cq.cqe_bytes(1)[32..36], &0x00ab_cdefu32.to_be_bytes());
    // More than 24 bits is refused before the device is asked.
    let wide = QpConfig {
        user_index: Some(1 << 24),
        ..dci_config()
    };
    assert!(matches!(
        a.pd.create_dci(&a.cq, &wide),
        Err(mlx5_direct::Error::InvalidArgument(_))
    ));
}

#[test]
fn a_pool_recovers_a_dci_that_failed_and_serves_on() {
    let fabric = Fabric::new();
    let t = target(&fabric);
    let mut a = refusing(&fabric, DcRefusal::Nak);
    let mut pool =
        DciPool::new(&a.pd, &a.cq, 1, &dci_config(), &ConnectOptions::default()).unwrap();
    let ah = ah_to(&a, &t);
    let dctn = t.dct.number().unwrap();
    let (bad, good) = (ah.dc_dest(dctn, DC_KEY ^ 1), ah.dc_dest(dctn, DC_KEY));
    let op = SendOp::Write(t.mr.remote(0));
    pool.post(wr(1, op, Data::Inline(b"no")), &bad).unwrap();
    let unsignaled = SendWr {
        flags: SendFlags::UNSIGNALED,
        ..wr(2, op, Data::Inline(b"no"))
    };
    pool.post(unsignaled, &bad).unwrap();
    // The error, then the flush of the unsignaled one: only then is the DCI drained.
    let cs = drain(&mut a, &mut pool, 2);
    assert_eq!(syndrome(&cs[0]), Some(Syndrome::RemoteAccessErr));
    assert_eq!(
        (cs[1].wr_id, syndrome(&cs[1])),
        (2, Some(Syndrome::WrFlushErr))
    );
    assert_eq!((pool.free(), pool.dci(0).state()), (1, QpState::Rts));
    pool.post(wr(3, op, Data::Inline(b"ok")), &good).unwrap();
    assert_eq!(drain(&mut a, &mut pool, 1)[0].status, Status::Success);
    let mut got = [0u8; 2];
    t.mr.read(0, &mut got);
    assert_eq!(&got, b"ok");
}

/// A target and a DCI with `log_concurrent` / `log_errored` streams on a NIC whose DCTs NAK
/// a refused connect (a wrong key fails at once with REMOTE_ACCESS_ERR), with an address
/// handle from the DCI to the target.
fn stream_rig(log_concurrent: u8, log_errored: u8) -> (Target, Side, AddressHandle<Sim>) {
    let fabric = Fabric::new();
    let t = target(&fabric);
    let cfg = NicConfig {
        dc_refusal: DcRefusal::Nak,
        ..NicConfig::default()
    };
    let config = QpConfig {
        dci_streams: Some(DciStreams {
            log_concurrent,
            log_errored,
        }),
        ..dci_config()
    };
    let mut a = common::side_on(Context::new(Sim::on_fabric(&fabric, cfg)), &config, 256, 64);
    a.qp.activate_dci(&ConnectOptions::default()).unwrap();
    let ah = ah_to(&a, &t);
    (t, a, ah)
}

/// Posts WRITE `wr_id` of `payload` to byte `off` of `t`'s region on stream `stream` with
/// DC key `key`.
fn write_on_stream(
    a: &mut Side,
    t: &Target,
    ah: &AddressHandle<Sim>,
    (stream, key): (u16, u64),
    wr_id: u64,
    off: usize,
    payload: &[u8],
) {
    let dest = ah.dc_dest(t.dct.number().unwrap(), key).on_stream(stream);
    a.qp.sq()
        .post_dc(
            wr(
                wr_id,
                SendOp::Write(t.mr.remote(off)),
                Data::Inline(payload),
            ),
            &dest,
        )
        .unwrap();
}

fn read_target(t: &Target, off: usize, len: usize) -> Vec<u8> {
    let mut got = vec![0u8; len];
    t.mr.read(off, &mut got);
    got
}

fn outcome(cs: &[Completion]) -> Vec<(u64, Option<Syndrome>)> {
    cs.iter().map(|c| (c.wr_id, syndrome(c))).collect()
}

#[test]
fn an_error_on_one_stream_leaves_the_other_running_until_the_stream_is_reset() {
    let (t, mut a, ah) = stream_rig(1, 1);
    // The stream id is in control bytes 9..10 (BE16), as mlx5dv_wr_set_dc_addr_stream
    // writes it.
    let pi = a.qp.sq().producer_count();
    write_on_stream(&mut a, &t, &ah, (1, DC_KEY ^ 1), 1, 0, b"bad");
    assert_eq!(a.qp.send_queue().wqe_bytes(pi, 16)[9..11], [0, 1]);
    write_on_stream(&mut a, &t, &ah, (0, DC_KEY), 2, 8, b"zero-a");
    write_on_stream(&mut a, &t, &ah, (1, DC_KEY), 3, 16, b"one");
    write_on_stream(&mut a, &t, &ah, (0, DC_KEY), 4, 24, b"zero-b");
    assert_eq!(
        outcome(&poll_n(&mut a, 4)),
        [
            (1, Some(Syndrome::RemoteAccessErr)),
            (2, None),
            (3, Some(Syndrome::WrFlushErr)),
            (4, None)
        ]
    );
    // Stream 0 ran on in order; stream 1's WRITE after the error never landed.
    assert_eq!(read_target(&t, 8, 6), b"zero-a");
    assert_eq!(read_target(&t, 24, 6), b"zero-b");
    assert_eq!(read_target(&t, 16, 3), [0; 3]);
    assert_eq!(a.qp.state(), QpState::Rts);
    // Flushed until reset, then it runs again.
    write_on_stream(&mut a, &t, &ah, (1, DC_KEY), 5, 16, b"one");
    assert_eq!(
        outcome(&poll_n(&mut a, 1)),
        [(5, Some(Syndrome::WrFlushErr))]
    );
    a.qp.reset_dci_stream(1).unwrap();
    write_on_stream(&mut a, &t, &ah, (1, DC_KEY), 6, 16, b"one");
    assert_eq!(outcome(&poll_n(&mut a, 1)), [(6, None)]);
    assert_eq!(read_target(&t, 16, 3), b"one");
    let s = a.ctx.backend().nic().stats();
    assert_eq!((s.dci_stream_errors, s.dci_stream_flushes), (1, 2));
}

#[test]
fn the_errored_stream_beyond_the_limit_takes_the_dci_to_error() {
    // log_errored 1: the second stream in error is the limit.
    let (t, mut a, ah) = stream_rig(2, 1);
    write_on_stream(&mut a, &t, &ah, (3, DC_KEY ^ 1), 1, 0, b"a");
    write_on_stream(&mut a, &t, &ah, (2, DC_KEY ^ 1), 2, 0, b"b");
    write_on_stream(&mut a, &t, &ah, (0, DC_KEY), 3, 8, b"c");
    assert_eq!(
        outcome(&poll_n(&mut a, 3)),
        [
            (1, Some(Syndrome::RemoteAccessErr)),
            (2, Some(Syndrome::RemoteAccessErr)),
            (3, Some(Syndrome::WrFlushErr))
        ]
    );
    assert_eq!(
        a.ctx.backend().nic().qp_state(a.qp.qpn()).unwrap(),
        hw_err()
    );
    // The device refuses a stream reset of a DCI in ERR; the recovery is the QP's.
    assert!(matches!(
        a.qp.reset_dci_stream(3),
        Err(mlx5_direct::Error::Device { .. })
    ));
    a.qp.reset().unwrap();
    a.qp.activate_dci(&ConnectOptions::default()).unwrap();
    write_on_stream(&mut a, &t, &ah, (3, DC_KEY), 4, 8, b"back");
    assert_eq!(outcome(&poll_n(&mut a, 1)), [(4, None)]);
    assert_eq!(read_target(&t, 8, 4), b"back");
}

fn hw_err() -> mlx5_direct::backend::sim::hw::QpState {
    mlx5_direct::backend::sim::hw::QpState::Err
}

#[test]
fn streams_are_checked_before_anything_is_written() {
    let (t, mut a, ah) = stream_rig(2, 0);
    let dest = ah.dc_dest(t.dct.number().unwrap(), DC_KEY);
    let pi = a.qp.sq().producer_count();
    assert_eq!(
        a.qp.sq().post_dc(
            wr(1, SendOp::Write(t.mr.remote(0)), Data::Inline(b"x")),
            &dest.on_stream(4)
        ),
        Err(PostError::NoSuchStream {
            stream: 4,
            streams: 4
        })
    );
    assert_eq!(a.qp.sq().producer_count(), pi, "nothing written");
    // A plain DCI has stream 0 alone.
    let fabric = Fabric::new();
    let mut plain = dci(&fabric);
    let ah = ah_to(&plain, &t);
    assert_eq!(
        plain.qp.sq().post_dc(
            wr(1, SendOp::Write(t.mr.remote(0)), Data::Inline(b"x")),
            &ah.dc_dest(t.dct.number().unwrap(), DC_KEY).on_stream(1)
        ),
        Err(PostError::NoSuchStream {
            stream: 1,
            streams: 1
        })
    );
    // Streams are a DCI's; stream reset too.
    let rc = QpConfig {
        dci_streams: Some(DciStreams::default()),
        ..QpConfig::default()
    };
    assert!(matches!(
        plain.pd.create_qp(&plain.cq, &plain.cq, &rc),
        Err(mlx5_direct::Error::InvalidArgument(_))
    ));
    let mut rc_side = side(&fabric, &QpConfig::default());
    assert!(matches!(
        rc_side.qp.reset_dci_stream(0),
        Err(mlx5_direct::Error::InvalidArgument(_))
    ));
    // Above the device's caps (the model's 4): refused at creation.
    let above = QpConfig {
        dci_streams: Some(DciStreams {
            log_concurrent: 5,
            log_errored: 0,
        }),
        ..dci_config()
    };
    assert!(matches!(
        plain.pd.create_dci(&plain.cq, &above),
        Err(mlx5_direct::Error::Device { .. })
    ));
}

/// A pool created with `user_index = Some(base)` numbers its DCIs `base + i`; on a NIC with
/// CQE version 1 their completions carry it and the pool maps them by it (checking the
/// QPN); with CQE version 0 (user index 0 in every CQE) it maps them by QPN.
#[test]
fn a_pool_numbers_its_dcis_by_user_index_and_maps_completions_either_way() {
    for version in [1, 0] {
        let fabric = Fabric::new();
        let targets: Vec<Target> = (0..3).map(|_| target(&fabric)).collect();
        let cfg = NicConfig {
            cqe_version: version,
            ..NicConfig::default()
        };
        let mut a = common::side_on(
            Context::new(Sim::on_fabric(&fabric, cfg)),
            &dci_config(),
            256,
            64,
        );
        let config = QpConfig {
            user_index: Some(100),
            ..dci_config()
        };
        let mut pool = DciPool::new(&a.pd, &a.cq, 3, &config, &ConnectOptions::default()).unwrap();
        let ahs: Vec<_> = targets.iter().map(|t| ah_to(&a, t)).collect();
        let mut used = Vec::new();
        for (k, t) in targets.iter().enumerate() {
            let dest = ahs[k].dc_dest(t.dct.number().unwrap(), DC_KEY);
            let op = SendOp::Write(t.mr.remote(0));
            used.push(
                pool.post(wr(k as u64, op, Data::Inline(b"uidx")), &dest)
                    .unwrap(),
            );
        }
        let cs = poll_n(&mut a, 3);
        for c in &cs {
            let i = pool.complete(c).unwrap().unwrap();
            assert_eq!(i, used[c.wr_id as usize], "version {version}");
            assert_eq!(c.qpn, pool.dci(i).qpn());
            let want = if version == 1 { 100 + i as u32 } else { 0 };
            assert_eq!(c.user_index(), want, "version {version}");
        }
        assert_eq!(pool.free(), 3);
        // Another QP's completion that carries a pool DCI's user index is not the pool's.
        let foreign = Completion::default()
            .with_qpn(a.qp.qpn())
            .with_user_index(101);
        assert_eq!(pool.complete(&foreign).unwrap(), None);
    }
}
