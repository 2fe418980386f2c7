//! The operations of each transport-independent kind complete and land: inline WRITE, SEND with
//! immediate, READ, atomics and masked atomics, an SRQ shared by two QPs, batches in every
//! doorbell mode, 128-byte CQEs, scatter to CQE, the queue sizes, the connection's depths
//! and rights, hardware timestamps.

use std::time::Duration;

use mlx5_direct::backend::Backend;
use mlx5_direct::sq::{MaskedCs32Args, MaskedCs64Args};
use mlx5_direct::{
    Access, Completion, ConnectOptions, Data, DoorbellMode, Error, QpConfig, QpState, SendFlags,
    SendOp, Status, WcOpcode,
};

use super::super::{
    assert_empty, connect, connect_with, poll_n, rig_pair, Drive, Rig, Side, MR_LEN,
};

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
