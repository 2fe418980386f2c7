//! XRC end to end on the model: one initiator reaching two XRC SRQs through one target
//! (the shared body), the completions naming the target QP and the SRQ (its number under
//! CQE version 0, its user index under version 1), the exact bytes of the XRC segment in
//! the WQE and what its 16 bytes cost on the link, the refusals of a wrong SRQ number and
//! of another domain under both of the model's refusal knobs, the entries' typed refusals
//! and the teardown order.

mod common;

use common::bodies::{syndrome, xrc_ini_config, xrc_reaches_two_srqs_through_one_target, xrc_rig};
use common::dc::wr as signaled;
use common::{poll_n, side, Side};
use mlx5_direct::backend::sim::hw::XrcRefusal;
use mlx5_direct::backend::sim::{Fabric, NicConfig, PcieCounters, Sim, XrcConfig};
use mlx5_direct::prm::Syndrome;
use mlx5_direct::{
    AsyncEvent, ConnectOptions, Context, Data, DoorbellMode, Error, PostError, QpConfig, QpState,
    SendOp, Transport, XRC_SEG_BYTES,
};

/// Model NICs of `cfg` on one fabric.
fn nics(cfg: NicConfig) -> (std::sync::Arc<Fabric>, NicConfig) {
    (Fabric::new(), cfg)
}

#[test]
fn one_initiator_reaches_two_srqs_through_one_target() {
    let (x, got) = xrc_reaches_two_srqs_through_one_target(&Fabric::new());
    // CQE version 0 (the model's default): `srqn_uidx` is the SRQ's number.
    assert_eq!(
        got.map(|c| c.user_index()),
        [x.srqs[0].srqn(), x.srqs[1].srqn()]
    );
    assert_eq!(x.a.qp.transport(), Transport::XrcIni);
    assert!(x.a.qp.recv_queue().is_none());
    assert_eq!(x.tgt.state(), QpState::Rts);
    let s = x.b.ctx.backend().nic().stats();
    assert_eq!((s.xrc_unknown_srq, s.xrc_domain_mismatch), (0, 0));
}

#[test]
fn under_cqe_version_1_an_xrc_srq_is_found_by_its_user_index() {
    let cfg = NicConfig {
        cqe_version: 1,
        ..NicConfig::default()
    };
    let (x, got) = xrc_reaches_two_srqs_through_one_target(&nics(cfg));
    // The sim backend gives each XRC SRQ a user index of its own (from 1): not its number.
    let uidx = got.map(|c| c.user_index());
    assert_ne!(uidx[0], uidx[1]);
    assert_ne!(uidx, [x.srqs[0].srqn(), x.srqs[1].srqn()]);
}

/// The WQE an initiator writes: ctrl, then the XRC segment, then RC's segments.
#[test]
fn the_xrc_segment_follows_the_control_segment() {
    // Pinned by value, with its source: rdma-core's `struct mlx5_wqe_xrc_seg` is in the
    // private providers/mlx5/mlx5.h, not in the installed mlx5dv.h the golden shim
    // compiles against. It is 16 bytes, a big-endian 32-bit `xrc_srqn` at byte 0 and 12
    // reserved bytes; qp.c's `_mlx5_post_send` (IBV_QPT_XRC_SEND, every opcode but
    // BIND_MW and LOCAL_INV) and `_common_wqe_init` put it right after the control
    // segment, before the remote-address segment.
    assert_eq!(XRC_SEG_BYTES, 16);
    let mut x = xrc_rig(&Fabric::new(), &ConnectOptions::default());
    let srqn = x.srqs[1].srqn();
    let remote = x.b.mr.remote(64);
    let pi = x.a.qp.sq().producer_count();
    x.a.qp
        .sq()
        .post_xrc(
            signaled(5, SendOp::Write(remote), Data::Inline(b"xrc-bytes")),
            srqn | 0xab00_0000,
        )
        .unwrap();
    // ctrl (1 DS) + XRC (1) + raddr (1) + 9 inline bytes after their header (1): 4 DS.
    let wqe = x.a.qp.sq().wqe_bytes(pi, 64);
    assert_eq!(wqe[3], 0x08, "RDMA_WRITE");
    assert_eq!(&wqe[4..8], &(x.a.qp.qpn() << 8 | 4).to_be_bytes());
    assert_eq!(&wqe[16..20], &srqn.to_be_bytes(), "BE32 xrc_srqn, 24 bits");
    assert_eq!(&wqe[20..32], &[0; 12], "12 reserved bytes");
    assert_eq!(&wqe[32..40], &(x.b.mr.addr() + 64).to_be_bytes(), "raddr");
    assert_eq!(&wqe[40..44], &x.b.mr.rkey().to_be_bytes());
    assert_eq!(&wqe[48..52], &(0x8000_0000u32 | 9).to_be_bytes());
    assert_eq!(&wqe[52..61], b"xrc-bytes");
    assert_eq!(x.a.qp.sq().producer_count() - pi, 1);
    assert_eq!(poll_n(&mut x.a, 1)[0].wr_id, 5);
    assert_eq!(common::bodies::read(&x.b, 64, 9), b"xrc-bytes");
}

/// A WRITE with two pointer segments of 32 bytes from `from`'s queue (posted by `post`)
/// in doorbell `mode`: its WQE size in DS, WQEBBs, and what it cost on `from`'s link.
fn two_pointer_write(
    from: &mut Side,
    mode: DoorbellMode,
    post: impl FnOnce(&mut Side, [mlx5_direct::Sge; 2]),
) -> (u8, u32, PcieCounters) {
    from.qp.sq().set_mode(mode);
    let sges = [from.mr.sge(0, 32), from.mr.sge(4096, 32)];
    let nic = from.ctx.backend().nic().clone();
    let pi = from.qp.sq().producer_count();
    let before = nic.pcie();
    post(from, sges);
    poll_n(from, 1);
    let cost = nic.pcie() - before;
    let ds = from.qp.sq().wqe_bytes(pi, 16)[7] & 0x3f;
    (ds, from.qp.sq().producer_count() - pi, cost)
}

/// A WRITE with two pointer segments: RC's is 64 bytes, one WQEBB; the initiator's 80,
/// two WQEBBs, which the NIC fetches (doorbell) or takes by BlueFlame (two 64-byte
/// writes) as such. Model numbers, pinned.
#[test]
fn a_write_with_two_pointers_takes_two_wqebbs_where_rc_takes_one() {
    let fabric = Fabric::new();
    let mut x = xrc_rig(&fabric, &ConnectOptions::default());
    let srqn = x.srqs[0].srqn();
    let remote = x.b.mr.remote(0);
    let (mut a, mut b) = (
        side(&fabric, &QpConfig::default()),
        side(&fabric, &QpConfig::default()),
    );
    common::connect(&mut a, &mut b);
    let rc_remote = b.mr.remote(0);
    let mut rows = Vec::new();
    for mode in [DoorbellMode::Doorbell, DoorbellMode::BlueFlame] {
        let xrc = two_pointer_write(&mut x.a, mode, |s, sges| {
            let wr = signaled(1, SendOp::Write(remote), Data::Sges(&sges));
            s.qp.sq().post_xrc(wr, srqn).unwrap();
        });
        let rc = two_pointer_write(&mut a, mode, |s, sges| {
            let wr = signaled(1, SendOp::Write(rc_remote), Data::Sges(&sges));
            s.qp.sq().post_wr(&wr).unwrap();
        });
        assert_eq!(
            (xrc.0, xrc.1),
            (5, 2),
            "ctrl + XRC + raddr + 2 data: 80 bytes"
        );
        assert_eq!((rc.0, rc.1), (4, 1), "ctrl + raddr + 2 data: 64 bytes");
        // The same payload both ways: the gather reads and the CQE write.
        assert_eq!(xrc.2.bytes_up, rc.2.bytes_up);
        assert_eq!(xrc.2.dma_writes, rc.2.dma_writes);
        rows.push((xrc.2.mmio_writes, xrc.2.dma_reads, xrc.2.bytes_down));
        rows.push((rc.2.mmio_writes, rc.2.dma_reads, rc.2.bytes_down));
    }
    // (MMIO writes, DMA reads, bytes down) of XRC then RC: with the doorbell, the WQE
    // fetch brings 128 bytes where RC's brings 64; by BlueFlame the CPU writes two 64-byte
    // blocks where RC's writes one.
    assert_eq!(rows, [(1, 3, 284), (1, 3, 220), (2, 2, 280), (1, 2, 192)]);
}

/// Posts a SEND to `srqn` and expects it to fail with `expected`, then the QP in ERR.
fn refused(x: &mut common::bodies::Xrc<Sim>, srqn: u32, expected: Syndrome) {
    x.a.qp
        .sq()
        .post_xrc(signaled(7, SendOp::Send, Data::Inline(b"nowhere")), srqn)
        .unwrap();
    let c = poll_n(&mut x.a, 1)[0];
    assert_eq!((c.wr_id, syndrome(c.status)), (7, Some(expected)));
    assert_eq!(x.a.qp.state(), QpState::Err);
    common::assert_empty(&mut x.b);
}

/// Short retries, so that a dropped request fails quickly.
fn quick() -> ConnectOptions {
    ConnectOptions {
        retry_cnt: 1,
        timeout: 1,
        ..ConnectOptions::default()
    }
}

fn refusing(refusal: XrcRefusal) -> (std::sync::Arc<Fabric>, NicConfig) {
    nics(NicConfig {
        xrc: XrcConfig {
            refusal,
            ..XrcConfig::default()
        },
        ..NicConfig::default()
    })
}

#[test]
fn a_wrong_srq_number_is_dropped_or_nakked_as_the_knob_says() {
    // Drop (the model's default): the target never answers, the initiator retries and
    // fails with TRANSPORT_RETRY_EXC_ERR; the target stays as it was.
    let mut x = xrc_rig(&refusing(XrcRefusal::Drop), &quick());
    let wrong = x.srqs[0].srqn().max(x.srqs[1].srqn()) + 100;
    refused(&mut x, wrong, Syndrome::TransportRetryExcErr);
    let s = x.b.ctx.backend().nic().stats();
    // The first try and its one retry.
    assert_eq!((s.xrc_unknown_srq, s.xrc_domain_mismatch), (2, 0));
    assert_eq!(x.tgt.state(), QpState::Rts);
    assert_eq!(x.b.ctx.poll_async_event().unwrap(), None);

    // Nak: REMOTE_INVAL_REQ_ERR at once, the target in ERR with a request error event.
    let mut x = xrc_rig(&refusing(XrcRefusal::Nak), &quick());
    // A basic SRQ's number is no XRC SRQ's either.
    let basic = x.b.pd.create_srq(4, 1).unwrap();
    refused(&mut x, basic.srqn(), Syndrome::RemoteInvalReqErr);
    let s = x.b.ctx.backend().nic().stats();
    assert_eq!((s.xrc_unknown_srq, s.xrc_domain_mismatch), (1, 0));
    let tgt = x.tgt.qpn();
    assert_eq!(
        x.b.ctx.poll_async_event().unwrap(),
        Some(AsyncEvent::QpRequestError { qpn: tgt })
    );
    assert_eq!(x.tgt.state(), QpState::Err);
}

#[test]
fn an_srq_of_another_domain_is_refused_under_both_knobs() {
    for (refusal, expected, tries) in [
        (XrcRefusal::Drop, Syndrome::TransportRetryExcErr, 2),
        (XrcRefusal::Nak, Syndrome::RemoteInvalReqErr, 1),
    ] {
        let mut x = xrc_rig(&refusing(refusal), &quick());
        let other = x.b.ctx.open_xrcd().unwrap();
        let mut foreign = other.create_srq(&x.b.pd, &x.b.cq, 4, 1).unwrap();
        foreign.post(1, &[x.b.mr.sge(0, 64)]).unwrap();
        refused(&mut x, foreign.srqn(), expected);
        let s = x.b.ctx.backend().nic().stats();
        assert_eq!(
            (s.xrc_unknown_srq, s.xrc_domain_mismatch),
            (0, tries),
            "{refusal:?}"
        );
    }
}

#[test]
fn each_post_entry_refuses_the_other_transports() {
    let fabric = Fabric::new();
    let mut x = xrc_rig(&fabric, &ConnectOptions::default());
    let send = || signaled(1, SendOp::Send, Data::Inline(b"x"));
    assert_eq!(
        x.a.qp.sq().post_wr(&send()),
        Err(PostError::WrongTransport {
            transport: Transport::XrcIni
        })
    );
    let mut rc = side(&fabric, &QpConfig::default());
    assert_eq!(
        rc.qp.sq().post_xrc(send(), x.srqs[0].srqn()),
        Err(PostError::WrongTransport {
            transport: Transport::Rc
        })
    );
    // Not connected yet: not ready.
    let mut fresh =
        x.a.pd
            .create_xrc_initiator(&x.a.cq, &xrc_ini_config())
            .unwrap();
    assert_eq!(
        fresh.sq().post_xrc(send(), x.srqs[0].srqn()),
        Err(PostError::NotReadyToSend)
    );
    // A target is made by its domain, not as a QP.
    let tgt_config = QpConfig {
        transport: Transport::XrcTgt,
        ..QpConfig::default()
    };
    assert!(matches!(
        x.b.pd.create_qp(&x.b.cq, &x.b.cq, &tgt_config),
        Err(Error::InvalidArgument(_))
    ));
    // A connected target cannot connect again.
    let ea = x.a.qp.endpoint().unwrap();
    assert!(matches!(
        x.tgt.connect(&ea, &ConnectOptions::default()),
        Err(Error::WrongState { .. })
    ));
}

#[test]
fn the_segment_counts_in_the_sizing_and_the_inline_limit() {
    use mlx5_direct::sizing::sq_overhead;
    // rdma-core verbs.c `_sq_overhead`: IBV_QPT_XRC_SEND falls through to XRC_RECV's
    // ctrl + XRC + raddr (48 bytes), with or without atomics; RC's is 48 with atomics, 32
    // without.
    assert_eq!(
        [true, false].map(|a| sq_overhead(Transport::XrcIni, a)),
        [48, 48]
    );
    assert_eq!(
        [true, false].map(|a| sq_overhead(Transport::Rc, a)),
        [48, 32]
    );
    let fabric = Fabric::new();
    let x = xrc_rig(&fabric, &ConnectOptions::default());
    let caps = x.a.ctx.caps();
    let config = QpConfig {
        max_inline: caps.max_inline,
        ..xrc_ini_config()
    };
    let sizes = config.check(&caps, true).unwrap();
    assert_eq!(
        sizes.send_wqe_size,
        (48 + 4 + caps.max_inline).next_multiple_of(64)
    );
    // The largest inline WRITE the queue takes: the XRC segment is one DS of the WQE.
    let mut ini = x.a.pd.create_xrc_initiator(&x.a.cq, &config).unwrap();
    let et = x.xrcd.create_target().unwrap();
    ini.connect(&et.endpoint().unwrap(), &ConnectOptions::default())
        .unwrap();
    let max = ini.send_queue().max_inline();
    assert_eq!(max, caps.max_inline as usize);
    let payload = vec![0x5a; max];
    let pi = ini.sq().producer_count();
    let remote = x.b.mr.remote(0);
    let write = signaled(1, SendOp::Write(remote), Data::Inline(&payload));
    ini.sq().post_xrc(write, x.srqs[0].srqn()).unwrap();
    let ds = 3 + (4 + max).div_ceil(16);
    assert_eq!(ini.sq().wqe_bytes(pi, 8)[7] as usize & 0x3f, ds);
    let too_long = vec![0; max + 1];
    let write = signaled(2, SendOp::Write(remote), Data::Inline(&too_long));
    assert_eq!(
        ini.sq().post_xrc(write, x.srqs[0].srqn()),
        Err(PostError::InlineTooLarge { len: max + 1, max })
    );
}

#[test]
fn teardown_order_is_refused_while_objects_are_in_use() {
    let fabric = Fabric::new();
    let Side { ctx, pd, cq, .. } = side(&fabric, &QpConfig::default());
    let xrcd = ctx.open_xrcd().unwrap();
    let srq = xrcd.create_srq(&pd, &cq, 4, 1).unwrap();
    let tgt = xrcd.create_target().unwrap();
    // The domain while an SRQ and a target are in it; the CQ while an SRQ completes on it.
    let (xrcd, e) = xrcd.close().unwrap_err();
    assert!(matches!(e, Error::Busy("XRC domain")));
    let (cq, e) = cq.destroy().unwrap_err();
    assert!(matches!(e, Error::Busy(_)));
    drop(srq);
    let (xrcd, _) = xrcd.close().unwrap_err();
    drop(tgt);
    cq.destroy().unwrap();
    xrcd.close().unwrap();
    // The model's domain is gone: a new one is made from scratch.
    ctx.open_xrcd().unwrap().close().unwrap();
}

#[test]
fn a_device_without_xrc_refuses_the_domain() {
    let ctx = Context::new(Sim::on_fabric(
        &Fabric::new(),
        NicConfig {
            xrc: XrcConfig {
                supported: false,
                ..XrcConfig::default()
            },
            ..NicConfig::default()
        },
    ));
    assert!(!ctx.caps().xrc);
    assert!(matches!(ctx.open_xrcd(), Err(Error::Unsupported(_))));
    assert!(Context::new(Sim::new()).caps().xrc);
}
