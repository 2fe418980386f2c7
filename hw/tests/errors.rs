//! Error causes with their exact syndromes on both sides (flushes, RNR and retries:
//! `flush_retry.rs`).

mod common;
use common::syndromes::*;
use common::*;
use mlx5_hw::{Access, AsyncEvent, BugClass, NicConfig, QpState};

/// Post a bad WQE followed by an unsignaled and a signaled good one, in one batch.
fn fails_then_flushes(a: &mut Side, bad: Vec<u8>) -> Vec<Cqe> {
    let first = a.post(&bad);
    for flags in [0, SIGNALED] {
        a.post_op(NOP, 0, flags, 0, &[]);
    }
    a.ring();
    let c = a.drain_send();
    assert_eq!(c[0].wqe_counter, first);
    summary(&c);
    c
}

#[test]
fn bad_lkey_is_local_prot_err_and_flushes_sq_and_rq() {
    let (_f, mut a, b) = pair();
    a.recv_at(0, 64);
    a.recv_at(64, 64);
    let w = a.wqe(
        WRITE,
        0,
        SIGNALED,
        0,
        &[raddr_seg(b.data(0), b.key), data_seg(8, 0xbad00, a.data(0))],
    );
    let c = fails_then_flushes(&mut a, w);
    assert_eq!(
        summary(&c),
        vec![
            (REQ_ERR, LOCAL_PROT_ERR, 0),
            (REQ_ERR, WR_FLUSH_ERR, 1),
            (REQ_ERR, WR_FLUSH_ERR, 2)
        ]
    );
    assert_eq!(c[0].send_opcode(), WRITE);
    assert_eq!(c[1].send_opcode(), NOP);
    assert_eq!(
        summary(&a.drain_recv()),
        vec![(RESP_ERR, WR_FLUSH_ERR, 0), (RESP_ERR, WR_FLUSH_ERR, 1)]
    );
    assert_eq!(a.state(), QpState::Err);
    assert_eq!(b.state(), QpState::Rts, "the responder sees nothing");
}

#[test]
fn local_buffer_out_of_range_is_local_prot_err() {
    let (_f, mut a, b) = pair();
    let w = a.wqe(
        WRITE,
        0,
        0,
        0,
        &[
            raddr_seg(b.data(0), b.key),
            data_seg(64, a.key, a.data(DATA_LEN - 32)),
        ],
    );
    let c = fails_then_flushes(&mut a, w);
    assert_eq!(c[0].syndrome, LOCAL_PROT_ERR);
}

#[test]
fn read_into_memory_without_local_write_is_local_prot_err() {
    let (_f, mut a, b) = pair();
    let addr = a.data(0);
    // SAFETY: `a.mem` outlives the key.
    let ro = unsafe { a.nic.reg_mr(a.pd, addr, 64, Access::REMOTE_READ) }.unwrap();
    let w = a.wqe(
        READ,
        0,
        SIGNALED,
        0,
        &[raddr_seg(b.data(0), b.key), data_seg(8, ro, addr)],
    );
    let c = fails_then_flushes(&mut a, w);
    assert_eq!(c[0].syndrome, LOCAL_PROT_ERR);
}

fn remote_error(op: u8, bad: impl Fn(&mut Side) -> (u64, u32), want: u8) {
    let (_f, mut a, mut b) = pair();
    b.recv_at(0, 64);
    let (addr, rkey) = bad(&mut b);
    let l = a.data(0);
    let w = match op {
        READ => a.wqe(
            READ,
            0,
            SIGNALED,
            0,
            &[raddr_seg(addr, rkey), data_seg(8, a.key, l)],
        ),
        FA => a.wqe(
            FA,
            0,
            SIGNALED,
            0,
            &[
                raddr_seg(addr, rkey),
                atomic_seg(1, 0),
                data_seg(8, a.key, l),
            ],
        ),
        _ => a.wqe(
            op,
            0,
            SIGNALED,
            0,
            &[raddr_seg(addr, rkey), inline_seg(&[1; 8])],
        ),
    };
    let c = fails_then_flushes(&mut a, w);
    assert_eq!(
        summary(&c),
        vec![
            (REQ_ERR, want, 0),
            (REQ_ERR, WR_FLUSH_ERR, 1),
            (REQ_ERR, WR_FLUSH_ERR, 2)
        ]
    );
    assert_eq!(b.state(), QpState::Err, "responder QP goes to ERR");
    // WRITE_IMM takes its receive before the rkey check; that receive reports the violation.
    let resp = if op == WRITE_IMM {
        LOCAL_ACCESS_ERR
    } else {
        WR_FLUSH_ERR
    };
    assert_eq!(summary(&b.drain_recv()), vec![(RESP_ERR, resp, 0)]);
    // An error no CQE reports is an affiliated asynchronous error naming the responder QP;
    // the requester's error CQE needs none.
    let qpn = b.qp.qpn;
    let event = match (op, want) {
        (WRITE_IMM, _) => None,
        (_, REMOTE_ACCESS_ERR) => Some(AsyncEvent::QpAccessError { qpn }),
        _ => Some(AsyncEvent::QpRequestError { qpn }),
    };
    assert_eq!(b.nic.poll_async_event(), event);
    assert_eq!(b.nic.poll_async_event(), None);
    assert_eq!(a.nic.poll_async_event(), None);
}

#[test]
fn bad_rkey_is_remote_access_err() {
    remote_error(WRITE, |b| (b.data(0), b.key ^ 0x100), REMOTE_ACCESS_ERR);
    remote_error(WRITE_IMM, |b| (b.data(0), b.key ^ 0x100), REMOTE_ACCESS_ERR);
    remote_error(READ, |b| (b.data(0), 0x12345), REMOTE_ACCESS_ERR);
}

#[test]
fn remote_out_of_bounds_is_remote_access_err() {
    remote_error(WRITE, |b| (b.data(DATA_LEN - 4), b.key), REMOTE_ACCESS_ERR);
    remote_error(FA, |b| (b.data(DATA_LEN), b.key), REMOTE_ACCESS_ERR);
}

#[test]
fn missing_mr_right_is_remote_access_err() {
    let ro = |b: &mut Side| {
        let addr = b.data(0);
        // SAFETY: `b.mem` outlives the key.
        let k = unsafe { b.nic.reg_mr(b.pd, addr, 64, Access::REMOTE_READ) }.unwrap();
        (addr, k)
    };
    remote_error(WRITE, ro, REMOTE_ACCESS_ERR);
    remote_error(FA, ro, REMOTE_ACCESS_ERR);
}

#[test]
fn key_of_another_pd_is_remote_access_err() {
    remote_error(
        WRITE,
        |b| {
            let pd = b.nic.alloc_pd();
            let addr = b.data(0);
            // SAFETY: `b.mem` outlives the key.
            let k = unsafe { b.nic.reg_mr(pd, addr, 64, all_access()) }.unwrap();
            (addr, k)
        },
        REMOTE_ACCESS_ERR,
    );
}

#[test]
fn misaligned_atomic_is_remote_inval_req() {
    remote_error(FA, |b| (b.data(4), b.key), REMOTE_INVAL_REQ_ERR);
}

#[test]
fn qp_without_remote_write_rejects_writes() {
    let conn = Conn {
        access: Access::LOCAL_WRITE,
        ..Conn::default()
    };
    let (_f, mut a, b) = pair_with(Cfg::default(), conn, NicConfig::default());
    let w = a.wqe(
        WRITE,
        0,
        SIGNALED,
        0,
        &[raddr_seg(b.data(0), b.key), inline_seg(&[1; 8])],
    );
    let c = fails_then_flushes(&mut a, w);
    assert_eq!(c[0].syndrome, REMOTE_INVAL_REQ_ERR);
    assert_eq!(b.state(), QpState::Err);
    let qpn = b.qp.qpn;
    assert_eq!(
        b.nic.poll_async_event(),
        Some(AsyncEvent::QpRequestError { qpn })
    );
    assert_eq!(b.nic.poll_async_event(), None);
}

#[test]
fn qp_access_needs_no_local_write_for_remote_writes() {
    // LOCAL_WRITE alongside REMOTE_WRITE is required of memory keys, not of QPs.
    let conn = Conn {
        access: Access::REMOTE_WRITE,
        ..Conn::default()
    };
    let (_f, mut a, b) = pair_with(Cfg::default(), conn, NicConfig::default());
    a.write_inline(b.data(0), b.key, &[9; 8], SIGNALED);
    a.ring();
    let c = a.poll_send().unwrap();
    assert_eq!((c.opcode, c.syndrome), (REQ, 0));
    assert_eq!(b.read_data(0, 8), vec![9; 8]);
    assert_eq!(b.state(), QpState::Rts);
}

#[test]
fn init_to_init_grants_the_rights_the_qp_takes_from_then_on() {
    // librdmacm's path: RESET -> INIT with no remote rights (rdma_create_qp), INIT -> INIT
    // with the CM's (INIT2INIT_QP), then RTR and RTS.
    use mlx5_hw::{HwError, QpTransition};
    let f = mlx5_hw::Fabric::new();
    let (na, nb) = (
        mlx5_hw::Nic::new(&f, NicConfig::default()),
        mlx5_hw::Nic::new(&f, NicConfig::default()),
    );
    let mut a = Side::new(&na, Cfg::default());
    let b = Side::new(&nb, Cfg::default());
    connect_one(&a, &b, Conn::default());
    let again = QpTransition::InitToInit {
        port: 1,
        access: Access::REMOTE_WRITE,
        pkey_index: 0,
    };
    assert_eq!(
        nb.modify_qp(b.qp.qpn, &again),
        Err(HwError::InvalidTransition),
        "INIT -> INIT starts in INIT"
    );
    let init = |access| QpTransition::Init {
        port: 1,
        access,
        pkey_index: 0,
    };
    nb.modify_qp(b.qp.qpn, &init(Access::LOCAL_WRITE)).unwrap();
    nb.modify_qp(b.qp.qpn, &again).unwrap();
    assert_eq!(b.state(), QpState::Init);
    let port = na.port(1).unwrap();
    nb.modify_qp(
        b.qp.qpn,
        &QpTransition::Rtr {
            dest_lid: port.lid,
            dest_gid: [0; 16],
            dest_qpn: a.qp.qpn,
            rq_psn: 0x100,
            path_mtu: 1024,
            max_dest_rd_atomic: 4,
            min_rnr_timer: 1,
            sl: 0,
            global: false,
        },
    )
    .unwrap();
    assert_eq!(
        nb.modify_qp(b.qp.qpn, &again),
        Err(HwError::InvalidTransition),
        "not from RTR"
    );
    a.write_inline(b.data(0), b.key, &[7; 8], SIGNALED);
    a.ring();
    let c = a.poll_send().unwrap();
    assert_eq!((c.opcode, c.syndrome), (REQ, 0), "the write is granted");
    assert_eq!(b.read_data(0, 8), vec![7; 8]);
}

#[test]
fn receive_too_small_errors_on_both_sides() {
    let (_f, mut a, mut b) = pair();
    b.recv_at(0, 4);
    b.recv_at(64, 64);
    let w = a.wqe(SEND, 0, 0, 0, &[inline_seg(b"too long")]);
    let c = fails_then_flushes(&mut a, w);
    assert_eq!(c[0].syndrome, REMOTE_INVAL_REQ_ERR);
    assert_eq!(
        summary(&b.drain_recv()),
        vec![(RESP_ERR, LOCAL_LENGTH_ERR, 0), (RESP_ERR, WR_FLUSH_ERR, 1)]
    );
    assert_eq!(b.state(), QpState::Err);
}

#[test]
fn bad_lkey_in_receive_errors_on_both_sides() {
    let (_f, mut a, mut b) = pair();
    let addr = b.data(0);
    b.post_recv(&[(addr, 64, 0x777700)]);
    let w = a.wqe(SEND, 0, SIGNALED, 0, &[inline_seg(b"data")]);
    let c = fails_then_flushes(&mut a, w);
    assert_eq!(c[0].syndrome, REMOTE_OP_ERR);
    assert_eq!(
        summary(&b.drain_recv()),
        vec![(RESP_ERR, LOCAL_PROT_ERR, 0)]
    );
}

#[test]
fn malformed_wqes_are_local_qp_op_err() {
    type Corrupt = fn(&mut Vec<u8>);
    let cases: [(&str, Corrupt); 8] = [
        ("unknown opcode", |w| w[3] = 0x1f),
        ("opmod on a WRITE", |w| w[0] = 0x01),
        ("ds too small for the remote-address segment", |w| w[7] = 1),
        ("inline data in a READ", |w| w[3] = READ),
        ("wrong qpn", |w| w[6] ^= 1),
        ("wrong wqe index", |w| w[2] ^= 1),
        ("ds = 0", |w| w[7] = 0),
        ("bad masked opmod", |w| {
            w[3] = MASKED_FA;
            w[0] = 0x07;
        }),
    ];
    for (what, corrupt) in cases {
        let (_f, mut a, b) = pair();
        let mut w = a.wqe(
            WRITE,
            0,
            0,
            0,
            &[raddr_seg(b.data(0), b.key), inline_seg(&[1; 8])],
        );
        corrupt(&mut w);
        let c = fails_then_flushes(&mut a, w);
        assert_eq!(c[0].syndrome, LOCAL_QP_OP_ERR, "{what}");
        assert_eq!(c.len(), 3, "{what}");
        assert_eq!(
            b.state(),
            QpState::Rts,
            "{what}: nothing reached the responder"
        );
        assert_eq!(b.read_data(0, 8), vec![0; 8], "{what}");
    }
}

#[test]
fn message_longer_than_the_limit_is_local_length_err() {
    let (_f, mut a, b) = pair();
    let l = a.data(0);
    // Two gather entries of 2^31 - 1 bytes (over any max_msg_sz): rejected before any key
    // or memory is touched.
    let w = a.wqe(
        WRITE,
        0,
        0,
        0,
        &[
            raddr_seg(b.data(0), b.key),
            data_seg(0x7fff_ffff, a.key, l),
            data_seg(0x7fff_ffff, a.key, l),
        ],
    );
    let c = fails_then_flushes(&mut a, w);
    assert_eq!(summary(&c)[0], (REQ_ERR, LOCAL_LENGTH_ERR, 0));
    assert_eq!(b.state(), QpState::Rts, "nothing reached the responder");
}

#[test]
fn send_inval_of_a_foreign_key_errors_on_both_sides() {
    let (_f, mut a, mut b) = pair();
    b.recv_at(0, 16);
    b.recv_at(16, 16);
    let pd = b.nic.alloc_pd();
    let addr = b.data(0);
    // SAFETY: `b.mem` outlives the key.
    let foreign = unsafe { b.nic.reg_mr(pd, addr, 64, all_access()) }.unwrap();
    let w = a.wqe(SEND_INVAL, 0, SIGNALED, foreign, &[inline_seg(b"x")]);
    b.nic.allow_remote_invalidate(foreign).unwrap();
    let c = fails_then_flushes(&mut a, w);
    assert_eq!(summary(&c)[0], (REQ_ERR, REMOTE_INVAL_REQ_ERR, 0));
    assert_eq!(
        summary(&b.drain_recv()),
        vec![
            (RESP_ERR, REMOTE_INVAL_REQ_ERR, 0),
            (RESP_ERR, WR_FLUSH_ERR, 1)
        ]
    );
    assert_eq!(b.state(), QpState::Err);
    // The key was not invalidated.
    assert_eq!(b.nic.dereg_mr(foreign), Ok(()));
}

#[test]
fn srq_receive_error_names_the_srq() {
    let cfg = Cfg {
        srq: true,
        ..Cfg::default()
    };
    let (_f, mut a, mut b) = pair_with(cfg, Conn::default(), NicConfig::default());
    b.recv_at(0, 2);
    let w = a.wqe(SEND, 0, 0, 0, &[inline_seg(b"four")]);
    let c = fails_then_flushes(&mut a, w);
    assert_eq!(c[0].syndrome, REMOTE_INVAL_REQ_ERR);
    let r = b.drain_recv();
    assert_eq!(summary(&r), vec![(RESP_ERR, LOCAL_LENGTH_ERR, 0)]);
    assert_eq!(r[0].srqn, b.srqn.unwrap());
    // The CQE reports the error; the QP leaving the SRQ is the only asynchronous event.
    let qpn = b.qp.qpn;
    assert_eq!(
        b.nic.poll_async_event(),
        Some(AsyncEvent::LastWqeReached { qpn })
    );
    assert_eq!(b.nic.poll_async_event(), None);
}

#[test]
fn read_or_atomic_depth_above_the_device_limit_is_refused() {
    let f = mlx5_hw::Fabric::new();
    let nic = mlx5_hw::Nic::new(&f, NicConfig::default());
    let s = Side::new(&nic, Cfg::default());
    let limit = nic.caps().max_rd_atomic;
    let q = s.qp.qpn;
    let init = mlx5_hw::QpTransition::Init {
        port: 1,
        access: all_access(),
        pkey_index: 0,
    };
    let rtr = |depth| mlx5_hw::QpTransition::Rtr {
        dest_lid: 1,
        dest_gid: [0; 16],
        dest_qpn: q,
        rq_psn: 0,
        path_mtu: 1024,
        max_dest_rd_atomic: depth,
        min_rnr_timer: 0,
        sl: 0,
        global: false,
    };
    let rts = |depth| mlx5_hw::QpTransition::Rts {
        sq_psn: 0,
        timeout: 14,
        retry_cnt: 7,
        rnr_retry: 7,
        max_rd_atomic: depth,
    };
    nic.modify_qp(q, &init).unwrap();
    assert_eq!(
        nic.modify_qp(q, &rtr(limit + 1)),
        Err(mlx5_hw::HwError::InvalidParam("max_dest_rd_atomic"))
    );
    nic.modify_qp(q, &rtr(limit)).unwrap();
    assert_eq!(
        nic.modify_qp(q, &rts(limit + 1)),
        Err(mlx5_hw::HwError::InvalidParam("max_rd_atomic"))
    );
    nic.modify_qp(q, &rts(0)).unwrap();
    assert_eq!(s.state(), QpState::Rts);
}

/// An RTR whose address has no global route (`global: false`) is refused on a RoCE port
/// for every transport whose RTR carries an address (RC, UC, DCI, DCT), as the kernel's
/// `rdma_check_ah_attr` answers EINVAL there: `InvalidParam`, the QP still in INIT, and the
/// same RTR with the route then goes through. On InfiniBand the route is optional.
#[test]
fn an_rtr_without_a_global_route_is_refused_on_roce_only() {
    use mlx5_hw::{LinkLayer, QpTransition, Transport};
    for link in [LinkLayer::InfiniBand, LinkLayer::Ethernet] {
        let f = mlx5_hw::Fabric::new();
        let config = NicConfig {
            link_layer: link,
            ..NicConfig::default()
        };
        let nic = mlx5_hw::Nic::new(&f, config);
        let port = nic.port(1).unwrap();
        for transport in [Transport::Rc, Transport::Uc, Transport::Dci, Transport::Dct] {
            let s = Side::new(
                &nic,
                Cfg {
                    transport,
                    srq: transport == Transport::Dct,
                    ..Cfg::default()
                },
            );
            let q = s.qp.qpn;
            let init = match transport {
                Transport::Dci => QpTransition::InitDci {
                    port: 1,
                    pkey_index: 0,
                },
                _ => QpTransition::Init {
                    port: 1,
                    access: all_access(),
                    pkey_index: 0,
                },
            };
            nic.modify_qp(q, &init).unwrap();
            let rtr = |global| match transport {
                Transport::Rc => QpTransition::Rtr {
                    dest_lid: port.lid,
                    dest_gid: port.gid,
                    dest_qpn: q,
                    rq_psn: 0,
                    path_mtu: 1024,
                    max_dest_rd_atomic: 1,
                    min_rnr_timer: 0,
                    sl: 0,
                    global,
                },
                Transport::Uc => QpTransition::RtrUc {
                    dest_lid: port.lid,
                    dest_gid: port.gid,
                    dest_qpn: q,
                    rq_psn: 0,
                    path_mtu: 1024,
                    sl: 0,
                    global,
                },
                Transport::Dci => QpTransition::RtrDci {
                    path_mtu: 1024,
                    global,
                },
                _ => QpTransition::RtrDct {
                    path_mtu: 1024,
                    min_rnr_timer: 0,
                    dc_key: 1,
                    global,
                },
            };
            let without = nic.modify_qp(q, &rtr(false));
            if link == LinkLayer::Ethernet {
                assert_eq!(
                    without,
                    Err(mlx5_hw::HwError::InvalidParam(
                        "an RTR on a RoCE port needs a global route (GRH)"
                    )),
                    "{transport:?}"
                );
                assert_eq!(s.state(), QpState::Init, "{transport:?}");
                nic.modify_qp(q, &rtr(true)).unwrap();
            } else {
                assert_eq!(without, Ok(()), "{transport:?}");
            }
            assert_eq!(s.state(), QpState::Rtr, "{link:?} {transport:?}");
        }
    }
}

#[test]
fn unfenced_gather_of_a_read_result_is_a_fence_hazard() {
    const FENCE: u8 = 0x80;
    let (_f, mut a, mut b) = pair();
    b.write_data(0x400, b"fresh");
    let read_then_send = |a: &mut Side, fence: u8| {
        let (buf, k) = (a.data(0x100), a.key);
        let src = b.data(0x400);
        a.post_op(READ, 0, 0, 0, &[raddr_seg(src, b.key), data_seg(5, k, buf)]);
        // Forwards the READ result: without a fence, hardware may gather before it lands.
        a.post_op(
            WRITE,
            0,
            fence | SIGNALED,
            0,
            &[raddr_seg(b.data(0x500), b.key), data_seg(5, k, buf)],
        );
        a.ring();
        assert_eq!(a.poll_send().unwrap().opcode, REQ);
        a.nic.stats().fence_hazards
    };
    assert_eq!(read_then_send(&mut a, 0), 1);
    assert_eq!(read_then_send(&mut a, FENCE), 1, "a fenced WQE waits");
    assert_eq!(b.read_data(0x500, 5), b"fresh");
    // A READ rung by an earlier doorbell is not counted (conservative: no false alarms
    // for a driver that polled its completion in between).
    a.post_op(
        WRITE,
        0,
        SIGNALED,
        0,
        &[
            raddr_seg(b.data(0x500), b.key),
            data_seg(5, a.key, a.data(0x100)),
        ],
    );
    a.ring();
    assert_eq!(a.poll_send().unwrap().opcode, REQ);
    assert_eq!(a.nic.stats().fence_hazards, 1);
}

#[test]
fn structural_segment_errors() {
    let (_f, mut a, b) = pair();
    // Inline length running past the WQE.
    let mut w = a.wqe(
        WRITE,
        0,
        0,
        0,
        &[raddr_seg(b.data(0), b.key), inline_seg(&[1; 8])],
    );
    w[32..36].copy_from_slice(&(0x8000_0000u32 | 100).to_be_bytes());
    assert_eq!(fails_then_flushes(&mut a, w)[0].syndrome, LOCAL_QP_OP_ERR);
    let (_f, mut a, b) = pair();
    // Zero byte_count in a gather entry.
    let w = a.wqe(
        WRITE,
        0,
        0,
        0,
        &[raddr_seg(b.data(0), b.key), data_seg(0, a.key, a.data(0))],
    );
    assert_eq!(fails_then_flushes(&mut a, w)[0].syndrome, LOCAL_LENGTH_ERR);
    let (_f, mut a, b) = pair();
    // Atomic with a 4-byte result buffer.
    let w = a.wqe(
        FA,
        0,
        0,
        0,
        &[
            raddr_seg(b.data(0), b.key),
            atomic_seg(1, 0),
            data_seg(4, a.key, a.data(0)),
        ],
    );
    assert_eq!(fails_then_flushes(&mut a, w)[0].syndrome, LOCAL_LENGTH_ERR);
}

#[test]
fn send_in_init_is_local_qp_op_err() {
    let f = mlx5_hw::Fabric::new();
    let nic = mlx5_hw::Nic::new(&f, NicConfig::default());
    let mut a = Side::new(&nic, Cfg::default());
    nic.modify_qp(
        a.qp.qpn,
        &mlx5_hw::QpTransition::Init {
            port: 1,
            access: all_access(),
            pkey_index: 0,
        },
    )
    .unwrap();
    a.post_op(NOP, 0, SIGNALED, 0, &[]);
    a.ring();
    assert_eq!(
        summary(&a.drain_send()),
        vec![(REQ_ERR, LOCAL_QP_OP_ERR, 0)]
    );
    assert_eq!(a.state(), QpState::Err);
    let s = nic.stats();
    assert_eq!(
        (s.doorbells_before_rts, s.wqes, s.bugs(BugClass::Unknown)),
        (1, 1, 1)
    );
}
