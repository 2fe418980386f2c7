//! XRC: one initiator reaching two XRC SRQs through one XRC target, SEND and SEND with
//! immediate landing in the SRQ each names, WRITE and READ through the same target.

use mlx5_direct::{
    ConnectOptions, Data, QpConfig, SendOp, Status, Transport, WcOpcode, XrcDomain, XrcSrq,
    XrcTarget,
};

use super::super::dc::wr as signaled;
use super::super::{assert_empty, poll_n, Drive, Rig, Side};
use super::*;

/// An XRC initiator's configuration.
pub fn xrc_ini_config() -> QpConfig {
    QpConfig {
        transport: Transport::XrcIni,
        ..QpConfig::default()
    }
}

/// The objects of [`xrc_reaches_two_srqs_through_one_target`]: the initiator side `a`, the
/// target side `b` (its PD, CQ and region; its own QP unused), the domain, the two SRQs on
/// `b`'s CQ and the target.
pub struct Xrc<B: Drive> {
    pub a: Side<B>,
    pub b: Side<B>,
    pub srqs: [XrcSrq<B>; 2],
    pub tgt: XrcTarget<B>,
    pub xrcd: XrcDomain<B>,
}

/// An initiator on one side of `rig` connected to an XRC target on another, whose domain
/// holds two XRC SRQs completing on the target side's CQ.
pub fn xrc_rig<R: Rig>(rig: &R, options: &ConnectOptions) -> Xrc<R::B> {
    let mut a = rig.side(&xrc_ini_config());
    let b = rig.side(&QpConfig::default());
    let xrcd = b.ctx.open_xrcd().unwrap();
    let srqs = [0, 1].map(|_| xrcd.create_srq(&b.pd, &b.cq, 16, 1).unwrap());
    let mut tgt = xrcd.create_target().unwrap();
    let (ea, et) = (a.qp.endpoint().unwrap(), tgt.endpoint().unwrap());
    a.qp.connect(&et, options).unwrap();
    tgt.connect(&ea, options).unwrap();
    Xrc {
        a,
        b,
        srqs,
        tgt,
        xrcd,
    }
}

/// One initiator sends to two XRC SRQs through one target: a SEND to the first lands in
/// its receive (byte 0 of the target side's region), a SEND with immediate to the second
/// in its own (byte 256), each completion naming the target QP; then a WRITE through the
/// second SRQ lands at byte 1024 and a READ through the first brings it back into the
/// initiator's region. Returns the rig and the two receive completions (in SRQ order).
pub fn xrc_reaches_two_srqs_through_one_target<R: Rig>(
    rig: &R,
) -> (Xrc<R::B>, [mlx5_direct::Completion; 2]) {
    let mut x = xrc_rig(rig, &ConnectOptions::default());
    let (s0, s1) = (x.srqs[0].srqn(), x.srqs[1].srqn());
    assert_ne!(s0, s1);
    let recv0 = x.b.mr.sge(0, 64);
    let recv1 = x.b.mr.sge(256, 64);
    x.srqs[0].post(10, &[recv0]).unwrap();
    x.srqs[1].post(11, &[recv1]).unwrap();

    let sq = x.a.qp.sq();
    sq.post_xrc(signaled(1, SendOp::Send, Data::Inline(b"to srq 0")), s0)
        .unwrap();
    sq.post_xrc(
        signaled(2, SendOp::SendImm(0x1234_5678), Data::Inline(b"to srq one")),
        s1,
    )
    .unwrap();
    let sent = poll_n(&mut x.a, 2);
    assert_eq!(
        sent.iter().map(|c| (c.wr_id, c.status)).collect::<Vec<_>>(),
        [(1, Status::Success), (2, Status::Success)]
    );
    let got = poll_n(&mut x.b, 2);
    let tgt = x.tgt.qpn();
    assert_eq!(
        got.iter()
            .map(|c| (c.wr_id, c.qpn, c.opcode, c.status, c.byte_len))
            .collect::<Vec<_>>(),
        [
            (10, tgt, WcOpcode::Recv, Status::Success, 8),
            (11, tgt, WcOpcode::Recv, Status::Success, 10),
        ]
    );
    assert_eq!(got[0].imm(), None);
    assert_eq!(got[1].imm(), Some(0x1234_5678));
    assert_eq!(read(&x.b, 0, 8), b"to srq 0");
    assert_eq!(read(&x.b, 256, 10), b"to srq one");

    let write = signaled(
        3,
        SendOp::Write(x.b.mr.remote(1024)),
        Data::Inline(b"written through xrc"),
    );
    x.a.qp.sq().post_xrc(write, s1).unwrap();
    assert_eq!(poll_n(&mut x.a, 1)[0].status, Status::Success);
    assert_eq!(read(&x.b, 1024, 19), b"written through xrc");
    let into = [x.a.mr.sge(2048, 19)];
    let read_wr = signaled(4, SendOp::Read(x.b.mr.remote(1024)), Data::Sges(&into));
    x.a.qp.sq().post_xrc(read_wr, s0).unwrap();
    let c = poll_n(&mut x.a, 1)[0];
    assert_eq!(
        (c.wr_id, c.opcode, c.status, c.byte_len),
        (4, WcOpcode::RdmaRead, Status::Success, 19)
    );
    assert_eq!(read(&x.a, 2048, 19), b"written through xrc");
    assert_empty(&mut x.b);
    let got = [got[0], got[1]];
    (x, got)
}
