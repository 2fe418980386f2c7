use super::*;
use rdma_sys::ibv_mtu;

fn attr(state: ibv_qp_state::Type) -> ibv_qp_attr {
    // SAFETY: plain C data; zero is valid.
    let mut a: ibv_qp_attr = unsafe { core::mem::zeroed() };
    a.qp_state = state;
    a
}

const INIT: m =
    m(m::IBV_QP_STATE.0 | m::IBV_QP_PKEY_INDEX.0 | m::IBV_QP_PORT.0 | m::IBV_QP_ACCESS_FLAGS.0);
const RTR: m = m(m::IBV_QP_STATE.0
    | m::IBV_QP_AV.0
    | m::IBV_QP_PATH_MTU.0
    | m::IBV_QP_DEST_QPN.0
    | m::IBV_QP_RQ_PSN.0
    | m::IBV_QP_MAX_DEST_RD_ATOMIC.0
    | m::IBV_QP_MIN_RNR_TIMER.0);
const RTS: m = m(m::IBV_QP_STATE.0
    | m::IBV_QP_TIMEOUT.0
    | m::IBV_QP_RETRY_CNT.0
    | m::IBV_QP_RNR_RETRY.0
    | m::IBV_QP_SQ_PSN.0
    | m::IBV_QP_MAX_QP_RD_ATOMIC.0);

#[test]
fn init_keeps_the_cms_port_and_pkey_and_sets_the_drivers_access() {
    let mut a = attr(ibv_qp_state::IBV_QPS_INIT);
    a.port_num = 2;
    a.pkey_index = 3;
    a.qp_access_flags = 1 << 1; // REMOTE_WRITE only, as the IB CM grants it
    let (out, mask) = translate(
        Step::Init {
            access: Access::remote_default(true),
        },
        a,
        INIT.0 as c_int,
    )
    .unwrap();
    assert_eq!(mask, INIT);
    assert_eq!((out.port_num, out.pkey_index), (2, 3));
    assert_eq!(out.qp_access_flags, Access::remote_default(true).0);
}

#[test]
fn rtr_takes_the_cms_path_and_the_peers_psn() {
    let mut a = attr(ibv_qp_state::IBV_QPS_RTR);
    a.dest_qp_num = 0x1234;
    a.rq_psn = 0x00aa_aaaa;
    a.path_mtu = ibv_mtu::IBV_MTU_4096;
    a.max_dest_rd_atomic = 16;
    a.min_rnr_timer = 12;
    a.ah_attr.is_global = 1;
    a.ah_attr.grh.sgid_index = 3;
    a.ah_attr.grh.dgid.raw = [7; 16];
    let extra = RTR.0 | m::IBV_QP_ALT_PATH.0;
    let step = Step::Rtr {
        rq_psn: 0x00_0bcd,
        max_mtu: Some(1024),
        max_dest_rd_atomic: 16,
    };
    let (out, mask) = translate(step, a, extra as c_int).unwrap();
    assert_eq!(mask.0, extra, "the CM's mask is applied as it is");
    assert_eq!(out.rq_psn, 0x00_0bcd);
    assert_eq!(out.path_mtu, ibv_mtu::IBV_MTU_1024);
    assert_eq!(
        (out.dest_qp_num, out.max_dest_rd_atomic, out.min_rnr_timer),
        (0x1234, 16, 12)
    );
    // SAFETY: the GID union read as its bytes.
    assert_eq!(unsafe { out.ah_attr.grh.dgid.raw }, [7; 16]);
    assert_eq!(out.ah_attr.grh.sgid_index, 3);
    let low = Step::Rtr {
        rq_psn: 0,
        max_mtu: Some(4096),
        max_dest_rd_atomic: 4,
    };
    let mut a1024 = attr(ibv_qp_state::IBV_QPS_RTR);
    a1024.path_mtu = ibv_mtu::IBV_MTU_1024;
    a1024.max_dest_rd_atomic = 16;
    let out = translate(low, a1024, RTR.0 as c_int).unwrap().0;
    assert_eq!(
        out.path_mtu,
        ibv_mtu::IBV_MTU_1024,
        "a cap above the CM's MTU keeps the CM's"
    );
    assert_eq!(
        out.max_dest_rd_atomic, 4,
        "at most the device's max_qp_rd_atom"
    );
}

#[test]
fn rts_takes_the_cms_timers_and_our_psn() {
    let cm = || {
        let mut a = attr(ibv_qp_state::IBV_QPS_RTS);
        a.timeout = 14;
        a.retry_cnt = 7;
        a.rnr_retry = 7;
        a.max_rd_atomic = 16;
        a.sq_psn = 0x55;
        a
    };
    let rts = |max_rd_atomic| Step::Rts {
        sq_psn: 0x77,
        max_rd_atomic,
    };
    let (out, mask) = translate(rts(16), cm(), RTS.0 as c_int).unwrap();
    assert_eq!(mask, RTS);
    assert_eq!(out.sq_psn, 0x77);
    assert_eq!(
        (out.timeout, out.retry_cnt, out.rnr_retry, out.max_rd_atomic),
        (14, 7, 7, 16)
    );
    // The REQ's depth above this device's max_qp_init_rd_atom: at most the cap.
    let (out, _) = translate(rts(8), cm(), RTS.0 as c_int).unwrap();
    assert_eq!(out.max_rd_atomic, 8);
}

#[test]
fn a_wrong_state_or_a_missing_attribute_is_refused_by_name() {
    let reason = |r: Result<(ibv_qp_attr, m), Error>| match r {
        Err(Error::Device { operation, reason }) => {
            assert_eq!(operation, "rdma_init_qp_attr");
            reason
        }
        other => panic!("{:?}", other.map(|(_, mask)| mask)),
    };
    let rts = Step::Rts {
        sq_psn: 0,
        max_rd_atomic: 16,
    };
    assert_eq!(
        reason(translate(
            rts,
            attr(ibv_qp_state::IBV_QPS_RTR),
            RTS.0 as c_int
        )),
        "asked for QP state 3, got 2"
    );
    let without = RTS.0 & !m::IBV_QP_SQ_PSN.0 & !m::IBV_QP_TIMEOUT.0;
    assert_eq!(
        reason(translate(
            rts,
            attr(ibv_qp_state::IBV_QPS_RTS),
            without as c_int
        )),
        "the attributes lack IBV_QP_TIMEOUT, IBV_QP_SQ_PSN"
    );
    let rtr = Step::Rtr {
        rq_psn: 0,
        max_mtu: None,
        max_dest_rd_atomic: 16,
    };
    let without = RTR.0 & !m::IBV_QP_AV.0;
    assert_eq!(
        reason(translate(
            rtr,
            attr(ibv_qp_state::IBV_QPS_RTR),
            without as c_int
        )),
        "the attributes lack IBV_QP_AV"
    );
    let init = Step::Init {
        access: Access::REMOTE_WRITE,
    };
    assert_eq!(
        reason(translate(init, attr(ibv_qp_state::IBV_QPS_INIT), 1)),
        "the attributes lack IBV_QP_PKEY_INDEX, IBV_QP_PORT, IBV_QP_ACCESS_FLAGS"
    );
}

#[test]
fn options_are_checked_before_anything_is_created() {
    let bad = CmOptions {
        retry_count: 8,
        ..CmOptions::default()
    };
    assert!(matches!(bad.check(), Err(Error::InvalidArgument(_))));
    let bad = CmOptions {
        ack_timeout: Some(32),
        ..CmOptions::default()
    };
    assert!(matches!(bad.check(), Err(Error::InvalidArgument(_))));
    assert_eq!(CmOptions::default().check(), Ok(()));
    assert_eq!(CmOptions::default().timeout_ms(), 2000);
}

#[test]
fn negotiated_depths_stay_within_the_devices_limits() {
    let limits = Some((16, 64));
    assert_eq!(depths(32, limits), (16, 32));
    assert_eq!(depths(100, limits), (16, 64));
    assert_eq!(depths(4, limits), (4, 4));
    assert_eq!(
        depths(16, None),
        (0, 0),
        "nothing to negotiate without a QP"
    );
    let p = Id::conn_param(0x42, &[1, 2, 3], &CmOptions::default(), (16, 32));
    assert_eq!(
        (p.responder_resources, p.initiator_depth, p.private_data_len),
        (16, 32, 3)
    );
    assert_eq!((p.retry_count, p.rnr_retry_count, p.qp_num), (7, 7, 0x42));
}

#[test]
fn socket_addresses_become_their_c_form() {
    let ss = sockaddr(&"10.1.2.3:18515".parse().unwrap());
    // SAFETY: an IPv4 address was written.
    let sin = unsafe { *(&ss as *const _ as *const libc::sockaddr_in) };
    assert_eq!(sin.sin_family, libc::AF_INET as libc::sa_family_t);
    assert_eq!(u16::from_be(sin.sin_port), 18515);
    assert_eq!(sin.sin_addr.s_addr.to_ne_bytes(), [10, 1, 2, 3]);
    let ss = sockaddr(&"[fe80::1]:7".parse().unwrap());
    // SAFETY: an IPv6 address was written.
    let sin6 = unsafe { *(&ss as *const _ as *const libc::sockaddr_in6) };
    assert_eq!(sin6.sin6_family, libc::AF_INET6 as libc::sa_family_t);
    assert_eq!(u16::from_be(sin6.sin6_port), 7);
    assert_eq!(sin6.sin6_addr.s6_addr[0], 0xfe);
    assert_eq!(sin6.sin6_addr.s6_addr[15], 1);
}
