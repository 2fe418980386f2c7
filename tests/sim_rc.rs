//! The driver against the model: RC operations end to end.

mod common;

use common::{assert_empty, pair, poll_n};
use mlx5_direct::{Data, DoorbellMode, SendFlags, SendOp, Status, WcOpcode};

#[test]
fn inline_write_lands_and_completes() {
    let (mut a, mut b) = pair();
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
    let stats = a.ctx.backend().nic().stats();
    assert_eq!(stats.bf_mismatch, 0);
    assert_eq!(stats.bf_used, 1);
}

#[test]
fn send_with_immediate_reaches_a_posted_receive() {
    let (mut a, mut b) = pair();
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
    assert_eq!(r.imm, Some(0xdead_beef));
    assert_eq!(r.src_qp, a.qp.qpn());
    let mut buf = [0u8; 16];
    b.mr.read(0, &mut buf);
    assert_eq!(&buf, b"0123456789abcdef");
}
