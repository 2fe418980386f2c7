//! XRC (docs/model.md, "XRC"): WQEs built by hand with the XRC segment after the control
//! segment (rdma-core's `mlx5_wqe_xrc_seg`: BE32 `xrc_srqn`, 12 reserved bytes), the
//! target taking the SRQ the segment names, the refusals of a wrong SRQ number and of
//! another XRC domain, one SRQ shared by two target QPs, and the segment's 16 bytes in
//! the WQE fetch.

mod common;
use common::syndromes::*;
use common::*;
use mlx5_hw::{
    AsyncEvent, Fabric, HwError, Nic, NicConfig, Purpose, QpParams, QpState, SrqParams, Transport,
    XrcConfig, XrcRefusal, XrcSrqParams,
};
use std::sync::Arc;

/// The XRC segment naming SRQ `srqn` (`set_xrc_seg` / `mlx5_send_wr_set_xrc_srqn`).
fn xrc_seg(srqn: u32) -> Vec<u8> {
    let mut s = srqn.to_be_bytes().to_vec();
    s.resize(16, 0);
    s
}

/// An XRC initiator on one NIC connected to an XRC target on another (its XRC SRQ on its
/// receive CQ, in a domain of its own), on NICs of `cfg`.
fn xrc_pair(cfg: NicConfig) -> (Arc<Fabric>, Side, Side) {
    let f = Fabric::new();
    let (na, nb) = (Nic::new(&f, cfg.clone()), Nic::new(&f, cfg));
    let ini = Side::new(
        &na,
        Cfg {
            transport: Transport::XrcIni,
            ..Cfg::default()
        },
    );
    let tgt = Side::new(
        &nb,
        Cfg {
            transport: Transport::XrcTgt,
            srq: true,
            ..Cfg::default()
        },
    );
    connect_one(&ini, &tgt, Conn::default());
    connect_one(&tgt, &ini, Conn::default());
    (f, ini, tgt)
}

/// Another SRQ on `s`'s NIC, in memory of its own (returned with it): an XRC SRQ of
/// `xrc` on `s`'s receive CQ, or a basic one.
fn another_srq(s: &Side, xrcd: Option<u32>) -> (Mem, u32) {
    another_srq_in(s, s.pd, xrcd)
}

/// [`another_srq`] in PD `pdn`.
fn another_srq_in(s: &Side, pdn: u32, xrcd: Option<u32>) -> (Mem, u32) {
    let mem = Mem::new(0x2000);
    let p = SrqParams {
        pdn,
        buf: mem.addr(0),
        log_wqe_cnt: 4,
        log_stride: 6,
        dbrec: mem.addr(0x1000),
    };
    let x = xrcd.map(|xrcd| XrcSrqParams {
        xrcd,
        cqn: s.rcq.cqn,
        user_index: 7,
    });
    let srqn = match x {
        // SAFETY: the ring and record live in `mem`, returned to the caller.
        Some(x) => unsafe { s.nic.create_xrc_srq(&p, &x) },
        // SAFETY: as above.
        None => unsafe { s.nic.create_srq(&p) },
    }
    .unwrap();
    (mem, srqn)
}

#[test]
fn a_send_lands_in_the_srq_its_xrc_segment_names() {
    let (_f, mut a, mut b) = xrc_pair(NicConfig::default());
    let srqn = b.srqn.unwrap();
    b.recv_at(0x100, 64);
    let idx = a.post_op(
        SEND,
        0,
        SIGNALED,
        0,
        &[xrc_seg(srqn), inline_seg(b"to the shared queue")],
    );
    a.ring();
    let c = a.poll_send().expect("the initiator's CQE");
    assert_eq!(
        (c.opcode, c.send_opcode(), c.qpn(), c.wqe_counter),
        (REQ, SEND, a.qp.qpn, idx)
    );
    // The SRQ's CQ, the target QP's number, the SRQ's number and WQE index.
    let r = b.poll_recv().expect("the receive CQE");
    assert_eq!(
        (r.opcode, r.qpn(), r.byte_cnt, r.srqn, r.wqe_counter),
        (RESP_SEND, b.qp.qpn, 19, srqn, 0)
    );
    assert_eq!(b.read_data(0x100, 19), b"to the shared queue");
    assert_eq!(b.state(), QpState::Rts);
}

#[test]
fn under_cqe_version_1_the_receive_carries_the_srqs_user_index() {
    let (_f, mut a, mut b) = xrc_pair(NicConfig {
        cqe_version: 1,
        ..NicConfig::default()
    });
    b.recv_at(0, 64);
    a.post_op(
        SEND,
        0,
        0,
        0,
        &[xrc_seg(b.srqn.unwrap()), inline_seg(b"v1")],
    );
    a.ring();
    // `mlx5_poll_cq_v1` finds an XRC SRQ's completion by the SRQ's own index
    // (`MLX5_RSC_TYPE_XSRQ`); the target QP has none.
    assert_eq!(b.poll_recv().map(|r| r.srqn), Some(USER_INDEX));
}

#[test]
fn rdma_write_and_read_use_the_named_srqs_pd_for_the_rkey() {
    let (_f, mut a, b) = xrc_pair(NicConfig::default());
    let srqn = b.srqn.unwrap();
    let dst = b.data(0x400);
    a.post_op(
        WRITE,
        0,
        SIGNALED,
        0,
        &[
            xrc_seg(srqn),
            raddr_seg(dst, b.key),
            inline_seg(b"xrc write"),
        ],
    );
    a.ring();
    assert_eq!(a.poll_send().map(|c| c.opcode), Some(REQ));
    assert_eq!(b.read_data(0x400, 9), b"xrc write");
    let local = a.data(0);
    a.post_op(
        READ,
        0,
        SIGNALED,
        0,
        &[
            xrc_seg(srqn),
            raddr_seg(dst, b.key),
            data_seg(9, a.key, local),
        ],
    );
    a.ring();
    let c = a.poll_send().unwrap();
    assert_eq!((c.opcode, c.byte_cnt), (REQ, 9));
    assert_eq!(a.read_data(0, 9), b"xrc write");
    // An XRC SRQ of the same domain in another PD: the rkey of B's PD no longer serves.
    let (_mem, other) = another_srq_in(&b, b.nic.alloc_pd(), b.xrcd);
    a.post_op(
        WRITE,
        0,
        SIGNALED,
        0,
        &[
            xrc_seg(other),
            raddr_seg(dst, b.key),
            inline_seg(b"other pd"),
        ],
    );
    a.ring();
    assert_eq!(summary(&a.drain_send()), [(REQ_ERR, REMOTE_ACCESS_ERR, 2)]);
    assert_eq!(b.read_data(0x400, 9), b"xrc write");
    assert_eq!(
        b.nic.poll_async_event(),
        Some(AsyncEvent::QpAccessError { qpn: b.qp.qpn })
    );
}

#[test]
fn one_xrc_srq_serves_two_target_qps() {
    let (_f, mut a, mut b) = xrc_pair(NicConfig::default());
    let srqn = b.srqn.unwrap();
    let xrcd = b.xrcd.unwrap();
    // A second initiator on A, a second target in the same domain on B.
    let mut a2 = Side::new(
        &a.nic,
        Cfg {
            transport: Transport::XrcIni,
            ..Cfg::default()
        },
    );
    let t2 = b.nic.create_xrc_tgt_qp(xrcd).unwrap();
    connect_qp(&a2.nic, a2.qp.qpn, &b.nic, t2, Conn::default());
    connect_qp(&b.nic, t2, &a2.nic, a2.qp.qpn, Conn::default());
    b.recv_at(0, 64);
    b.recv_at(0x40, 64);
    b.recv_at(0x80, 64);
    for (second, msg) in [(false, b"one"), (true, b"two"), (false, b"six")] {
        let s = if second { &mut a2 } else { &mut a };
        s.post_op(SEND, 0, 0, 0, &[xrc_seg(srqn), inline_seg(msg)]);
        s.ring();
    }
    let got: Vec<_> = b
        .drain_recv()
        .iter()
        .map(|r| (r.qpn(), r.srqn, r.wqe_counter))
        .collect();
    assert_eq!(
        got,
        [(b.qp.qpn, srqn, 0), (t2, srqn, 1), (b.qp.qpn, srqn, 2)]
    );
    assert_eq!(b.read_data(0, 3), b"one");
    assert_eq!(b.read_data(0x40, 3), b"two");
    assert_eq!(b.read_data(0x80, 3), b"six");
}

/// NICs that NAK a request naming an SRQ the target may not use.
fn nak() -> NicConfig {
    NicConfig {
        xrc: XrcConfig {
            refusal: XrcRefusal::Nak,
            ..XrcConfig::default()
        },
        ..NicConfig::default()
    }
}

/// The initiator's error CQE and the target's fate for a request naming `srqn`.
fn refused(cfg: NicConfig, srqn: impl Fn(&Side) -> u32) -> (Side, Side, Vec<Cqe>) {
    let (_f, mut a, b) = xrc_pair(cfg);
    let n = srqn(&b);
    a.post_op(SEND, 0, SIGNALED, 0, &[xrc_seg(n), inline_seg(b"lost")]);
    a.ring();
    for _ in 0..8 {
        a.nic.progress();
    }
    let cqes = a.drain_send();
    (a, b, cqes)
}

#[test]
fn with_the_nak_knob_a_wrong_srq_number_is_an_invalid_request() {
    for (name, pick) in [
        (
            "no SRQ",
            Box::new(|_: &Side| 0x7ffu32) as Box<dyn Fn(&Side) -> u32>,
        ),
        (
            "a basic SRQ",
            Box::new(|b: &Side| {
                let (mem, n) = another_srq(b, None);
                std::mem::forget(mem);
                n
            }),
        ),
    ] {
        let (a, b, cqes) = refused(nak(), pick);
        assert_eq!(
            summary(&cqes),
            [(REQ_ERR, REMOTE_INVAL_REQ_ERR, 0)],
            "{name}"
        );
        assert_eq!(a.state(), QpState::Err, "{name}");
        assert_eq!(b.state(), QpState::Err, "{name}");
        assert_eq!(
            b.nic.poll_async_event(),
            Some(AsyncEvent::QpRequestError { qpn: b.qp.qpn }),
            "{name}"
        );
        let s = b.nic.stats();
        assert_eq!((s.xrc_unknown_srq, s.xrc_domain_mismatch), (1, 0), "{name}");
    }
}

#[test]
fn with_the_nak_knob_an_xrc_srq_of_another_domain_is_an_invalid_request() {
    let (a, mut b, cqes) = refused(nak(), |b| {
        let other = b.nic.alloc_xrcd().unwrap();
        let (mem, n) = another_srq(b, Some(other));
        std::mem::forget(mem);
        n
    });
    assert_eq!(summary(&cqes), [(REQ_ERR, REMOTE_INVAL_REQ_ERR, 0)]);
    assert_eq!((a.state(), b.state()), (QpState::Err, QpState::Err));
    let s = b.nic.stats();
    assert_eq!((s.xrc_unknown_srq, s.xrc_domain_mismatch), (0, 1));
    assert!(b.poll_recv().is_none());
}

#[test]
fn by_default_the_request_is_dropped_the_initiator_retries_and_the_target_stays_up() {
    let (a, b, cqes) = refused(NicConfig::default(), |_| 0x7ff);
    // `Conn::default()` retries 3 times: 4 requests, then TRANSPORT_RETRY_EXC_ERR.
    assert_eq!(summary(&cqes), [(REQ_ERR, TRANSPORT_RETRY_EXC_ERR, 0)]);
    assert_eq!((a.state(), b.state()), (QpState::Err, QpState::Rts));
    assert_eq!(b.nic.stats().xrc_unknown_srq, 4);
    let sa = a.nic.stats();
    assert_eq!(
        (sa.retransmits, sa.packets_lost),
        (3, 4),
        "each request lost"
    );
    assert_eq!(b.nic.poll_async_event(), None);
}

#[test]
fn the_xrc_segment_is_16_bytes_of_the_wqe_fetch() {
    // ctrl + raddr + two pointer segments: 64 bytes, one WQEBB on RC; with the XRC segment
    // 80 bytes, two WQEBBs: the fetch reads 128 bytes.
    let fetch = |a: &mut Side, first: Vec<Vec<u8>>| {
        a.nic.set_tlp_trace(true);
        a.post_op(WRITE, 0, SIGNALED, 0, &first);
        a.ring();
        assert_eq!(a.poll_send().map(|c| c.opcode), Some(REQ));
        let fetched: u32 = a
            .nic
            .take_tlps()
            .iter()
            .filter(|t| t.purpose == Purpose::SendWqeFetch)
            .map(|t| t.payload)
            .sum();
        a.nic.set_tlp_trace(false);
        fetched
    };
    let (_f, mut rc, rb) = pair();
    let (_g, mut xa, xb) = xrc_pair(NicConfig::default());
    let segs = |s: &Side, peer: &Side| {
        vec![
            raddr_seg(peer.data(0), peer.key),
            data_seg(8, s.key, s.data(0)),
            data_seg(8, s.key, s.data(8)),
        ]
    };
    let rc_segs = segs(&rc, &rb);
    let mut xrc_segs = vec![xrc_seg(xb.srqn.unwrap())];
    xrc_segs.extend(segs(&xa, &xb));
    assert_eq!(fetch(&mut rc, rc_segs), 64);
    assert_eq!(fetch(&mut xa, xrc_segs), 128);
}

#[test]
fn an_xrc_wqe_without_room_for_its_segment_is_malformed() {
    let (_f, mut a, _b) = xrc_pair(NicConfig::default());
    a.post_op(NOP, 0, SIGNALED, 0, &[]);
    a.ring();
    assert_eq!(summary(&a.drain_send()), [(REQ_ERR, LOCAL_QP_OP_ERR, 0)]);
}

#[test]
fn xrc_objects_are_refused_and_held_as_the_stack_does() {
    let (_f, a, b) = xrc_pair(NicConfig::default());
    let (nb, xrcd) = (&b.nic, b.xrcd.unwrap());
    assert_eq!(
        nb.dealloc_xrcd(xrcd),
        Err(HwError::Busy),
        "SRQ and target in it"
    );
    assert_eq!(
        nb.destroy_cq(b.rcq.cqn),
        Err(HwError::Busy),
        "the XRC SRQ's CQ"
    );
    // An XRC SRQ is no SRQ of another QP (uverbs' `create_qp`: EINVAL).
    // SAFETY: the creation is refused before any memory is used.
    let r = unsafe {
        nb.create_qp(&QpParams {
            transport: Transport::Rc,
            pdn: b.pd,
            send_cqn: b.scq.cqn,
            recv_cqn: b.rcq.cqn,
            srqn: b.srqn,
            ..params_of(&a)
        })
    };
    assert!(matches!(r, Err(HwError::InvalidParam(_))));
    for t in [Transport::XrcTgt, Transport::XrcIni] {
        let p = QpParams {
            transport: t,
            srqn: b.srqn,
            pdn: b.pd,
            send_cqn: b.scq.cqn,
            recv_cqn: b.rcq.cqn,
            ..params_of(&a)
        };
        // SAFETY: as above.
        assert!(matches!(
            unsafe { nb.create_qp(&p) },
            Err(HwError::InvalidParam(_))
        ));
    }
    // The target goes, then the SRQ (which frees the CQ), then the domain.
    nb.destroy_qp(b.qp.qpn).unwrap();
    assert_eq!(nb.dealloc_xrcd(xrcd), Err(HwError::Busy));
    nb.destroy_srq(b.srqn.unwrap()).unwrap();
    nb.dealloc_xrcd(xrcd).unwrap();

    let f = Fabric::new();
    let none = Nic::new(
        &f,
        NicConfig {
            xrc: XrcConfig {
                supported: false,
                ..XrcConfig::default()
            },
            ..NicConfig::default()
        },
    );
    assert!(matches!(none.alloc_xrcd(), Err(HwError::NotSupported(_))));
    assert!(!none.caps().xrc && nb.caps().xrc);
}

/// The creation parameters of side `s`'s QP (rings, records, CQs, PD).
fn params_of(s: &Side) -> QpParams {
    QpParams {
        transport: s.cfg.transport,
        pdn: s.pd,
        send_cqn: s.scq.cqn,
        recv_cqn: s.rcq.cqn,
        srqn: None,
        sq_buf: s.mem.addr(SQ),
        log_sq_wqe_cnt: s.cfg.log_sq,
        rq_buf: s.mem.addr(RQ),
        log_rq_wqe_cnt: s.cfg.log_rq,
        log_rq_stride: s.cfg.log_rq_stride,
        dbrec: s.mem.addr(DBREC),
        user_index: 0,
        scatter_to_cqe: false,
        dci_streams: Default::default(),
    }
}
