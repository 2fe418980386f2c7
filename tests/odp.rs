//! On-demand paging on the model (issue 17): a first touch faults (the responder answers
//! RNR NAK while the fault is resolved, the requester retries), a prefetch takes the fault
//! out of the data path, an unmapped address fails on the side that touched it, and a
//! device without ODP refuses the registration.

mod common;
use common::bodies::syndrome;
use common::{connect_with, poll_n, rig_pair, side, side_on, Side};
use mlx5_direct::backend::sim::hw::Purpose;
use mlx5_direct::backend::sim::{Fabric, NicConfig, Sim, TlpKind};
use mlx5_direct::prm::Syndrome;
use mlx5_direct::{
    Access, ConnectOptions, Context, Data, Error, MemoryRegion, PostError, QpConfig, SendFlags,
    SendOp, Status,
};

const LEN: usize = 16 << 10;
const ODP: Access = Access(Access::ALL.0 | Access::ON_DEMAND.0);

fn write_all(from: &mut Side, to: &MemoryRegion<mlx5_direct::backend::sim::Sim>) -> Status {
    let src = from.mr.sge(0, LEN as u32);
    from.qp
        .sq()
        .post(
            1,
            SendOp::Write(to.remote(0)),
            Data::Sges(&[src]),
            SendFlags::SIGNALED,
        )
        .unwrap();
    poll_n(from, 1)[0].status
}

fn stats(s: &Side) -> mlx5_direct::backend::sim::Stats {
    s.ctx.backend().nic().stats()
}

/// The first WRITE into an on-demand region faults its 4 pages in once: one page-fault
/// event (EQE + MSI-X) and one read of the 4 new 8-byte translations at the responder, which
/// answers one RNR NAK, then the data lands. The second WRITE takes no fault.
#[test]
fn first_touch_faults_once_and_the_requester_sees_an_rnr_nak() {
    let (mut a, b) = rig_pair(&Fabric::new());
    let target = b.pd.alloc_mr(LEN, ODP).unwrap();
    a.mr.write(0, &[0x5a; LEN]);
    let sb = stats(&b);
    b.ctx.backend().nic().set_tlp_trace(true);
    b.ctx.backend().nic().take_tlps();
    assert_eq!(write_all(&mut a, &target), Status::Success);
    assert_eq!(stats(&b).odp_faults - sb.odp_faults, 1);
    assert_eq!(stats(&b).odp_pages_mapped - sb.odp_pages_mapped, 4);
    assert_eq!(stats(&b).rnr_naks - sb.rnr_naks, 1);
    let fault: Vec<_> = b
        .ctx
        .backend()
        .nic()
        .take_tlps()
        .into_iter()
        .filter(|t| {
            matches!(
                t.purpose,
                Purpose::Eqe | Purpose::Msix | Purpose::Translation
            )
        })
        .map(|t| (t.purpose, t.kind, t.payload))
        .collect();
    assert_eq!(
        fault,
        [
            (Purpose::Eqe, TlpKind::MWr, 64),
            (Purpose::Msix, TlpKind::MWr, 4),
            (Purpose::Translation, TlpKind::MRd, 0),
            (Purpose::Translation, TlpKind::CplD, 32),
        ]
    );
    let mut back = [0u8; 8];
    target.read(LEN - 8, &mut back);
    assert_eq!(back, [0x5a; 8]);
    let sb = stats(&b);
    assert_eq!(write_all(&mut a, &target), Status::Success);
    assert_eq!(stats(&b).odp_faults - sb.odp_faults, 0);
    assert_eq!(stats(&b).rnr_naks - sb.rnr_naks, 0);
}

/// Prefetching the region maps its pages without a fault event; the WRITE then takes none.
#[test]
fn prefetch_takes_the_fault_out_of_the_data_path() {
    let (mut a, b) = rig_pair(&Fabric::new());
    let target = b.pd.alloc_mr(LEN, ODP).unwrap();
    let sb = stats(&b);
    target.prefetch(0, LEN).unwrap();
    assert_eq!(stats(&b).odp_pages_mapped - sb.odp_pages_mapped, 4);
    assert_eq!(stats(&b).odp_faults - sb.odp_faults, 0);
    assert_eq!(write_all(&mut a, &target), Status::Success);
    assert_eq!(stats(&b).odp_faults - sb.odp_faults, 0);
    assert_eq!(stats(&b).rnr_naks - sb.rnr_naks, 0);
    // A region not on demand, and a range outside it, are refused.
    assert!(matches!(
        a.mr.prefetch(0, 64),
        Err(Error::OnDemandPaging(_))
    ));
    assert!(matches!(
        target.prefetch(LEN - 8, 16),
        Err(Error::OnDemandPaging(_))
    ));
}

#[test]
fn on_demand_regions_prefetch_and_carry_writes() {
    // The body the hardware test runs too (tests/verbs_hw.rs).
    common::bodies::on_demand_regions_prefetch_and_carry_writes(&Fabric::new());
}

/// With no RNR retries (disni #39: ODP needs `rnr_retry` other than 0), the fault's RNR NAK
/// ends the WRITE with RNR_RETRY_EXC_ERR.
#[test]
fn a_fault_without_rnr_retries_fails_the_request() {
    let fabric = Fabric::new();
    let (mut a, mut b) = (
        side(&fabric, &QpConfig::default()),
        side(&fabric, &QpConfig::default()),
    );
    let options = ConnectOptions {
        rnr_retry: 0,
        ..ConnectOptions::default()
    };
    connect_with(&mut a, &mut b, &options);
    let target = b.pd.alloc_mr(LEN, ODP).unwrap();
    assert_eq!(
        syndrome(write_all(&mut a, &target)),
        Some(Syndrome::RnrRetryExcErr)
    );
}

/// Pages that are not mapped in the process cannot be faulted in: a WRITE into them fails
/// at the requester with REMOTE_ACCESS_ERR (the responder's NAK), a gather from them with
/// LOCAL_PROT_ERR, and a prefetch is refused. The registration itself succeeds: on demand,
/// nothing is looked at until the device touches it.
#[test]
fn unmapped_pages_fail_on_the_side_that_touches_them() {
    // Below `vm.mmap_min_addr`: no thread of the test binary can be mapping it (see
    // tests/hostile.rs).
    let hole = 0x4000 as *mut u8;
    let (mut a, b) = rig_pair(&Fabric::new());
    // SAFETY: the device never reaches the range: every access to it fails.
    let remote = unsafe { b.pd.register(hole, 8192, ODP) }.unwrap();
    assert!(matches!(
        remote.prefetch(0, 64),
        Err(Error::OnDemandPaging(_))
    ));
    let src = a.mr.sge(0, 64);
    a.qp.sq()
        .post(
            1,
            SendOp::Write(remote.remote(0)),
            Data::Sges(&[src]),
            SendFlags::SIGNALED,
        )
        .unwrap();
    assert_eq!(
        syndrome(poll_n(&mut a, 1)[0].status),
        Some(Syndrome::RemoteAccessErr)
    );

    let (mut a, b) = rig_pair(&Fabric::new());
    // SAFETY: as above.
    let local = unsafe { a.pd.register(hole, 8192, ODP) }.unwrap();
    a.qp.sq()
        .post(
            1,
            SendOp::Write(b.mr.remote(0)),
            Data::Sges(&[local.sge(0, 64)]),
            SendFlags::SIGNALED,
        )
        .unwrap();
    assert_eq!(
        syndrome(poll_n(&mut a, 1)[0].status),
        Some(Syndrome::LocalProtErr)
    );
}

#[test]
fn a_device_without_odp_refuses_on_demand_registrations() {
    let ctx = mlx5_direct::Context::new(mlx5_direct::backend::sim::Sim::on_fabric(
        &Fabric::new(),
        NicConfig {
            odp: false,
            ..NicConfig::default()
        },
    ));
    let pd = ctx.alloc_pd().unwrap();
    let err = pd.alloc_mr(4096, ODP).unwrap_err();
    assert_eq!(
        err,
        Error::OnDemandPaging("the device does not support on-demand paging".into())
    );
    pd.alloc_mr(4096, Access::ALL).unwrap();
}

/// The counters of a fault the NIC resolves while the WQE waits: (page-fault events, pages
/// mapped, RNR NAKs) since `before`.
fn faults(s: &Side, before: &mlx5_direct::backend::sim::Stats) -> (u64, u64, u64) {
    let now = stats(s);
    (
        now.odp_faults - before.odp_faults,
        now.odp_pages_mapped - before.odp_pages_mapped,
        now.rnr_naks - before.rnr_naks,
    )
}

/// Requester side: a SEND and a WRITE gathering from an on-demand source that is not present
/// fault its 4 pages in at the requester once (one event, one translation read) while the
/// WQE waits (`mlx5_ib_mr_wqe_pfault_handler`), with no wire effect: no RNR NAK anywhere, and
/// the bytes arrive. The second message takes no fault.
#[test]
fn a_gather_from_a_page_not_present_faults_at_the_requester() {
    for op in ["send", "write"] {
        let (mut a, mut b) = rig_pair(&Fabric::new());
        let src = a.pd.alloc_mr(LEN, ODP).unwrap();
        let dst = b.pd.alloc_mr(LEN, Access::ALL).unwrap();
        src.write(0, &[0xa5; LEN]);
        for round in 0..2u64 {
            let (sa, sb) = (stats(&a), stats(&b));
            let send_op = if op == "send" {
                b.qp.rq()
                    .unwrap()
                    .post(round, &[dst.sge(0, LEN as u32)])
                    .unwrap();
                SendOp::Send
            } else {
                SendOp::Write(dst.remote(0))
            };
            a.qp.sq()
                .post(
                    round,
                    send_op,
                    Data::Sges(&[src.sge(0, LEN as u32)]),
                    SendFlags::SIGNALED,
                )
                .unwrap();
            assert_eq!(poll_n(&mut a, 1)[0].status, Status::Success, "{op}");
            if op == "send" {
                assert_eq!(poll_n(&mut b, 1)[0].byte_len, LEN as u32);
            }
            let want = if round == 0 { (1, 4, 0) } else { (0, 0, 0) };
            assert_eq!(faults(&a, &sa), want, "{op} round {round}");
            assert_eq!(faults(&b, &sb), (0, 0, 0), "{op} round {round}");
        }
        let mut back = [0u8; 8];
        dst.read(LEN - 8, &mut back);
        assert_eq!(back, [0xa5; 8], "{op}");
    }
}

/// Requester side: a READ whose local scatter is an on-demand region not present faults its
/// pages in at the requester when the response arrives; the responder sees nothing.
#[test]
fn a_read_into_a_page_not_present_faults_at_the_requester() {
    let (mut a, b) = rig_pair(&Fabric::new());
    let sink = a.pd.alloc_mr(LEN, ODP).unwrap();
    let source = b.pd.alloc_mr(LEN, Access::ALL).unwrap();
    source.write(0, &[0x3c; LEN]);
    let (sa, sb) = (stats(&a), stats(&b));
    a.qp.sq()
        .post(
            1,
            SendOp::Read(source.remote(0)),
            Data::Sges(&[sink.sge(0, LEN as u32)]),
            SendFlags::SIGNALED,
        )
        .unwrap();
    assert_eq!(poll_n(&mut a, 1)[0].status, Status::Success);
    assert_eq!(faults(&a, &sa), (1, 4, 0));
    assert_eq!(faults(&b, &sb), (0, 0, 0));
    let mut back = [0u8; 8];
    sink.read(LEN - 8, &mut back);
    assert_eq!(back, [0x3c; 8]);
}

/// Receive side: a receive buffer (RQ, then SRQ) in an on-demand region not present is
/// faulted in at the responder when the SEND lands (one event, one translation read), with
/// no RNR NAK: the model resolves the receive WQE's fault at once (the SRQ's error-CQE
/// alternative is `an_srq_receive_that_faults_completes_with_the_odp_fault_cqe`).
#[test]
fn a_receive_into_a_page_not_present_faults_at_the_responder() {
    for shared in [false, true] {
        let fabric = Fabric::new();
        let config = QpConfig::default();
        let (mut a, mut b) = (side(&fabric, &config), side(&fabric, &config));
        let sink = b.pd.alloc_mr(LEN, ODP).unwrap();
        let srq = shared.then(|| {
            let mut srq = b.pd.create_srq(4, 1).unwrap();
            b.qp =
                b.pd.create_qp_with_srq(&b.cq, &b.cq, &srq, &QpConfig::default())
                    .unwrap();
            srq.post(9, &[sink.sge(0, LEN as u32)]).unwrap();
            srq
        });
        common::connect(&mut a, &mut b);
        if !shared {
            b.qp.rq()
                .unwrap()
                .post(9, &[sink.sge(0, LEN as u32)])
                .unwrap();
        }
        let src = a.mr.sge(0, LEN as u32);
        a.mr.write(0, &[0x77; LEN]);
        let (sa, sb) = (stats(&a), stats(&b));
        a.qp.sq()
            .post(1, SendOp::Send, Data::Sges(&[src]), SendFlags::SIGNALED)
            .unwrap();
        assert_eq!(poll_n(&mut a, 1)[0].status, Status::Success);
        let r = poll_n(&mut b, 1)[0];
        assert_eq!(
            (r.status, r.wr_id, r.byte_len),
            (Status::Success, 9, LEN as u32)
        );
        assert_eq!(faults(&b, &sb), (1, 4, 0), "shared {shared}");
        assert_eq!(faults(&a, &sa), (0, 0, 0), "shared {shared}");
        let mut back = [0u8; 8];
        sink.read(LEN - 8, &mut back);
        assert_eq!(back, [0x77; 8]);
        drop(srq);
    }
}

/// Two sides, `b` on a NIC reporting SRQ ODP faults with error CQEs (`srq_odp_fault_cqe`)
/// and its QP receiving from an SRQ of one SGE, not connected yet: 3 receives in a ring of
/// 4 WQEs, so that the SRQ is full when its posts reach the slot before the first.
fn srq_pair() -> (Side, Side, mlx5_direct::Srq<Sim>) {
    let fabric = Fabric::new();
    let config = QpConfig::default();
    let a = side(&fabric, &config);
    let nic = NicConfig {
        srq_odp_fault_cqe: true,
        ..NicConfig::default()
    };
    let mut b = side_on(Context::new(Sim::on_fabric(&fabric, nic)), &config, 256, 64);
    let srq = b.pd.create_srq(3, 1).unwrap();
    b.qp =
        b.pd.create_qp_with_srq(&b.cq, &b.cq, &srq, &config)
            .unwrap();
    (a, b, srq)
}

/// Receive side, SRQ, with `NicConfig::srq_odp_fault_cqe`: the NIC consumes the SRQ WQE
/// whose buffer is not present and completes it with REMOTE_ABORTED_ERR (0x22) and vendor
/// syndrome 0x93 while it faults the 4 pages in (one event, one translation read), and
/// answers the SEND with an RNR NAK. The poller reports it (`WcError::is_odp_fault`)
/// without putting the QP in error; the caller posts the buffer again (what rdma-core's
/// `mlx5_complete_odp_fault` does unseen), the requester's retry lands in it, and the QP
/// carries the next SEND without a fault.
#[test]
fn an_srq_receive_that_faults_completes_with_the_odp_fault_cqe() {
    let (mut a, mut b, mut srq) = srq_pair();
    let sink = b.pd.alloc_mr(LEN, ODP).unwrap();
    let buffer = [sink.sge(0, LEN as u32)];
    srq.post(9, &buffer).unwrap();
    common::connect(&mut a, &mut b);
    a.mr.write(0, &[0x77; LEN]);
    let src = [a.mr.sge(0, LEN as u32)];
    let (sa, sb) = (stats(&a), stats(&b));
    a.qp.sq()
        .post(1, SendOp::Send, Data::Sges(&src), SendFlags::SIGNALED)
        .unwrap();
    let r = poll_n(&mut b, 1)[0];
    let Status::Error(e) = r.status else {
        panic!("expected the ODP fault CQE, got {r:?}");
    };
    assert_eq!(
        (e.syndrome, e.vendor_syndrome, e.wqe_counter),
        (0x22, 0x93, 0)
    );
    assert!(e.is_odp_fault());
    assert_eq!(
        (r.wr_id, r.qpn, r.user_index()),
        (9, b.qp.qpn(), srq.srqn())
    );
    assert_eq!(faults(&b, &sb), (1, 4, 1));
    let mut back = [0u8; 8];
    sink.read(LEN - 8, &mut back);
    assert_eq!(back, [0; 8], "no data landed");
    srq.post(9, &buffer).unwrap();
    assert_eq!(poll_n(&mut a, 1)[0].status, Status::Success);
    let r = poll_n(&mut b, 1)[0];
    assert_eq!(
        (r.status, r.wr_id, r.byte_len),
        (Status::Success, 9, LEN as u32)
    );
    sink.read(LEN - 8, &mut back);
    assert_eq!(back, [0x77; 8]);
    assert_eq!(faults(&a, &sa), (0, 0, 0));
    // The QP goes on, both ways (the poller did not mark it in error); the pages are
    // present now.
    b.qp.sq()
        .post(
            3,
            SendOp::Write(a.mr.remote(0)),
            Data::Inline(&[1; 8]),
            SendFlags::SIGNALED,
        )
        .unwrap();
    assert_eq!(poll_n(&mut b, 1)[0].status, Status::Success);
    let sb = stats(&b);
    srq.post(10, &buffer).unwrap();
    a.qp.sq()
        .post(2, SendOp::Send, Data::Sges(&src), SendFlags::SIGNALED)
        .unwrap();
    assert_eq!(poll_n(&mut a, 1)[0].status, Status::Success);
    assert_eq!(poll_n(&mut b, 1)[0].wr_id, 10);
    assert_eq!(faults(&b, &sb), (0, 0, 0));
}

/// Receive side, unmapped: a receive buffer on demand over pages the process has not
/// mapped cannot be faulted in; the receive fails as a bad local key does: the responder's
/// receive completes LOCAL_PROT_ERR and the responder's NAK ends the requester's SEND with
/// REMOTE_OP_ERR, as the model answers a receive it cannot scatter. No fault event: nothing
/// could be brought in.
#[test]
fn a_receive_into_unmapped_pages_fails_at_the_responder() {
    let hole = 0x4000 as *mut u8;
    let (mut a, mut b) = rig_pair(&Fabric::new());
    // SAFETY: the device never reaches the range: every access to it fails.
    let sink = unsafe { b.pd.register(hole, 8192, ODP) }.unwrap();
    b.qp.rq().unwrap().post(9, &[sink.sge(0, 64)]).unwrap();
    let src = a.mr.sge(0, 64);
    a.qp.sq()
        .post(1, SendOp::Send, Data::Sges(&[src]), SendFlags::SIGNALED)
        .unwrap();
    let sent = poll_n(&mut a, 1)[0].status;
    let received = poll_n(&mut b, 1)[0].status;
    assert_eq!(
        (syndrome(received), syndrome(sent)),
        (Some(Syndrome::LocalProtErr), Some(Syndrome::RemoteOpErr))
    );
    assert_eq!(stats(&b).odp_faults, 0);
}

/// The contrast to the ODP fault above: any other error of a receive on an SRQ (here a
/// SEND longer than the SRQ's buffer) puts the QP in error. The poller reports it with its
/// syndrome and marks the QP, whose next post is refused; the SRQ's WQE is retired.
#[test]
fn another_receive_error_on_an_srq_puts_the_qp_in_error() {
    let (mut a, mut b, mut srq) = srq_pair();
    srq.post(9, &[b.mr.sge(0, 8)]).unwrap();
    common::connect(&mut a, &mut b);
    let src = [a.mr.sge(0, 16)];
    a.qp.sq()
        .post(1, SendOp::Send, Data::Sges(&src), SendFlags::SIGNALED)
        .unwrap();
    let r = poll_n(&mut b, 1)[0];
    assert_eq!(syndrome(r.status), Some(Syndrome::LocalLengthErr), "{r:?}");
    let Status::Error(e) = r.status else {
        unreachable!()
    };
    assert!(!e.is_odp_fault());
    assert_eq!((r.wr_id, r.qpn, e.wqe_counter), (9, b.qp.qpn(), 0));
    let write = SendOp::Write(a.mr.remote(0));
    assert_eq!(
        b.qp.sq()
            .post(2, write, Data::Inline(&[1; 8]), SendFlags::SIGNALED),
        Err(mlx5_direct::PostError::NotReadyToSend)
    );
    // The SRQ's slot is free again at once (no cooldown as after an ODP fault): the SRQ
    // takes as many receives as it holds.
    assert_eq!(fill(&mut srq, &b.mr), Ok(srq.capacity()));
}

/// Posts receives into `srq` until it refuses one; how many it took, or the refusal that is
/// not a full queue.
fn fill(srq: &mut mlx5_direct::Srq<Sim>, mr: &MemoryRegion<Sim>) -> Result<u32, PostError> {
    for n in 0.. {
        match srq.post(100 + u64::from(n), &[mr.sge(0, 8)]) {
            Ok(()) => {}
            Err(PostError::QueueFull { .. }) => return Ok(n),
            Err(e) => return Err(e),
        }
    }
    unreachable!()
}

/// The slot of an SRQ receive that faulted cools down for a lap of the ring: the posts after
/// the fault skip it, so the SRQ takes one receive fewer than it holds until a post passes
/// it.
#[test]
fn an_odp_faulted_srq_slot_cools_down() {
    let (mut a, mut b, mut srq) = srq_pair();
    let sink = b.pd.alloc_mr(LEN, ODP).unwrap();
    srq.post(9, &[sink.sge(0, LEN as u32)]).unwrap();
    common::connect(&mut a, &mut b);
    let src = [a.mr.sge(0, LEN as u32)];
    a.qp.sq()
        .post(1, SendOp::Send, Data::Sges(&src), SendFlags::SIGNALED)
        .unwrap();
    let r = poll_n(&mut b, 1)[0];
    assert!(
        matches!(r.status, Status::Error(e) if e.is_odp_fault()),
        "{r:?}"
    );
    assert_eq!(fill(&mut srq, &b.mr), Ok(srq.capacity() - 1));
}
