//! READ, atomics and SRQ end to end.

mod common;

use common::{pair, poll_n, side};
use mlx5_direct::backend::sim::Fabric;
use mlx5_direct::{ConnectOptions, Data, QpConfig, SendFlags, SendOp, Status, WcOpcode};

#[test]
fn read_fetches_remote_bytes() {
    let (mut a, b) = pair();
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

#[test]
fn atomics_return_the_original_value() {
    let (mut a, b) = pair();
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

#[test]
fn srq_shared_by_two_qps() {
    let fabric = Fabric::new();
    let config = QpConfig::default();
    let mut a = side(&fabric, &config);
    let mut c = side(&fabric, &config);
    let mut b = side(&fabric, &config);
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
    c.qp.sq()
        .post(
            1,
            SendOp::Send,
            Data::Inline(b"from c"),
            SendFlags::SIGNALED,
        )
        .unwrap();
    poll_n(&mut a, 1);
    poll_n(&mut c, 1);
    let r = poll_n(&mut b, 2);
    assert_eq!((r[0].wr_id, r[0].qpn, r[0].byte_len), (100, b1.qpn(), 6));
    assert_eq!((r[1].wr_id, r[1].qpn, r[1].byte_len), (101, b2.qpn(), 6));
    let mut buf = [0u8; 6];
    b.mr.read(0, &mut buf);
    assert_eq!(&buf, b"from a");
    b.mr.read(64, &mut buf);
    assert_eq!(&buf, b"from c");
}
