//! DC end to end on the model: the DCI WQE bytes (ctrl + datagram segment with the DC key and
//! `dqp_dct = DCT number | 1 << 31` + the RC segments), every operation with its data, the
//! target's completions naming the DCT and the sender, one DCI alternating between many
//! DCTs (connects and disconnects counted, no PCIe for them), refusals (wrong key, unknown
//! DCT, no receive) with their syndromes, and recovery of the DCI. DCI pools and streams:
//! `tests/sim_dc_pool.rs`.

mod common;

use common::dc::*;
use common::{assert_empty, poll_n, side, Side};
use mlx5_direct::backend::sim::hw::LinkLayer;
use mlx5_direct::backend::sim::{DcRefusal, Fabric, NicConfig, PcieCounters, Sim};
use mlx5_direct::prm::Syndrome;
use mlx5_direct::{
    AddressHandle, AhAttr, Completion, ConnectOptions, Context, Data, DciStreams, MemoryRegion,
    PostError, QpConfig, QpState, SendFlags, SendOp, Status, Transport, WcOpcode,
};

fn poll_target(t: &mut Target, n: usize) -> Vec<Completion> {
    let mut out = vec![Completion::default(); n];
    let mut got = 0;
    for _ in 0..10_000 {
        got += t.cq.poll(&mut out[got..]);
        if got == n {
            return out;
        }
        t.ctx.backend().nic().progress();
    }
    panic!("only {got} of {n} target completions: {:?}", &out[..got]);
}

/// Posts WRITE 5 of `payload` inline to byte 64 of `t`'s region through `ah`; returns the
/// producer count before it and what it cost on `a`'s link.
fn write_inline(
    a: &mut Side,
    t: &Target,
    ah: &AddressHandle<Sim>,
    payload: &[u8],
) -> (u32, PcieCounters) {
    let pi = a.qp.sq().producer_count();
    let before = a.ctx.backend().nic().pcie();
    a.qp.sq()
        .post_dc(
            wr(5, SendOp::Write(t.mr.remote(64)), Data::Inline(payload)),
            &ah.dc_dest(t.dct.number().unwrap(), DC_KEY),
        )
        .unwrap();
    (pi, a.ctx.backend().nic().pcie() - before)
}

#[test]
fn dc_operations_reach_a_dct() {
    common::bodies::dc_operations_reach_a_dct(&Fabric::new(), 0, None);
    let streams = DciStreams {
        log_concurrent: 2,
        log_errored: 0,
    };
    common::bodies::dc_operations_reach_a_dct(&Fabric::new(), 0, Some(streams));
}

#[test]
fn dci_wqe_is_ctrl_datagram_segment_and_rc_segments() {
    let fabric = Fabric::new();
    let t = target(&fabric);
    let mut a = dci(&fabric);
    let ah = ah_to(&a, &t);
    let dctn = t.dct.number().unwrap();
    let payload = *b"dc-write";
    let (pi, cost) = write_inline(&mut a, &t, &ah, &payload);

    // ctrl (1 DS) + AV (3) + raddr (1) + 8 inline bytes after their header (1): 6 DS, 2 BBs.
    let wqe = a.qp.sq().wqe_bytes(pi, 128);
    assert_eq!(wqe[3], 0x08, "RDMA_WRITE");
    assert_eq!(&wqe[4..8], &(a.qp.qpn() << 8 | 6).to_be_bytes());
    let mut av = *ah.av();
    av.set_dc(dctn, DC_KEY);
    assert_eq!(&wqe[16..64], &av.to_bytes());
    assert_eq!(&wqe[16..24], &DC_KEY.to_be_bytes(), "BE64 DC key");
    assert_eq!(&wqe[24..28], &(dctn | 1 << 31).to_be_bytes(), "dqp_dct");
    assert_eq!(&wqe[28..30], &[0, 0]);
    assert_eq!(&wqe[30..32], &t.ctx.port(1).unwrap().lid.to_be_bytes());
    assert_eq!(&wqe[64..72], &(t.mr.addr() + 64).to_be_bytes(), "raddr");
    assert_eq!(&wqe[72..76], &t.mr.rkey().to_be_bytes());
    assert_eq!(&wqe[80..84], &(0x8000_0000u32 | 8).to_be_bytes());
    assert_eq!(&wqe[84..92], &payload);
    assert_eq!(a.qp.sq().producer_count() - pi, 2);
    // A lone WQE of 96 bytes is BlueFlame-copied in two 64-byte writes (RC's: one).
    assert_eq!((cost.mmio_writes, cost.dma_reads), (2, 0));

    let c = poll_n(&mut a, 1)[0];
    assert_eq!(
        (c.wr_id, c.qpn, c.opcode, c.status),
        (5, a.qp.qpn(), WcOpcode::RdmaWrite, Status::Success)
    );
    let mut got = [0u8; 8];
    t.mr.read(64, &mut got);
    assert_eq!(got, payload);
    let stats = a.ctx.backend().nic().stats();
    assert_eq!((stats.dc_connects, stats.dc_disconnects), (1, 0));
}

#[test]
fn a_compact_av_makes_a_small_dc_write_one_wqebb_and_a_read_lands() {
    let fabric = Fabric::new();
    let cap = NicConfig {
        compact_av: true,
        ..NicConfig::default()
    };
    let mut t = target_on(Context::new(Sim::on_fabric(&fabric, cap.clone())), DC_KEY);
    let mut a = dci_on(Context::new(Sim::on_fabric(&fabric, cap)), 7);
    let lid = t.ctx.port(1).unwrap().lid;
    let ah =
        a.pd.create_compact_ah(&AhAttr {
            port: 1,
            dlid: lid,
            sl: 2,
            ..AhAttr::default()
        })
        .unwrap();
    let dctn = t.dct.number().unwrap();
    let payload = *b"twelve bytes";
    let (pi, cost) = write_inline(&mut a, &t, &ah, &payload);
    // prm-facts-next §3.3: ctrl (1 DS) + compact AV (1) + raddr (1) + 12 inline bytes
    // after their header (1): 4 DS, one WQEBB, one BlueFlame chunk (the full AV: 2).
    let wqe = a.qp.sq().wqe_bytes(pi, 64);
    assert_eq!(&wqe[4..8], &(a.qp.qpn() << 8 | 4).to_be_bytes());
    assert_eq!(&wqe[16..24], &DC_KEY.to_be_bytes(), "BE64 DC key");
    assert_eq!(&wqe[24..28], &dctn.to_be_bytes(), "dqp_dct, bit 31 clear");
    assert_eq!((wqe[28], wqe[29]), (2, 0), "stat_rate_sl, fl_mlid");
    assert_eq!(&wqe[30..32], &lid.to_be_bytes());
    assert_eq!(&wqe[32..40], &(t.mr.addr() + 64).to_be_bytes(), "raddr");
    assert_eq!(&wqe[40..44], &t.mr.rkey().to_be_bytes());
    assert_eq!(&wqe[48..52], &(0x8000_0000u32 | 12).to_be_bytes());
    assert_eq!(&wqe[52..64], &payload);
    assert_eq!(a.qp.sq().producer_count() - pi, 1);
    assert_eq!(
        (cost.mmio_writes, cost.bytes_down, cost.dma_reads),
        (1, 88, 0)
    );
    // A READ of it back through the same compact handle.
    a.qp.sq()
        .post_dc(
            wr(
                6,
                SendOp::Read(t.mr.remote(64)),
                Data::Sges(&[a.mr.sge(0, 12)]),
            ),
            &ah.dc_dest(dctn, DC_KEY),
        )
        .unwrap();
    let cs = poll_n(&mut a, 2);
    assert!(cs.iter().all(|c| c.status == Status::Success), "{cs:?}");
    let mut got = [0u8; 12];
    a.mr.read(0, &mut got);
    assert_eq!(got, payload);
    let stats = a.ctx.backend().nic().stats();
    assert_eq!((stats.dc_connects, stats.dc_disconnects), (1, 0));
    assert_empty_target(&mut t);
}

#[test]
fn every_operation_over_dc_lands_with_its_data() {
    let fabric = Fabric::new();
    let mut t = target(&fabric);
    let mut a = dci(&fabric);
    let ah = ah_to(&a, &t);
    let dest = ah.dc_dest(t.dct.number().unwrap(), DC_KEY);
    let lid_a = a.ctx.port(1).unwrap().lid;
    for i in 0..3u64 {
        t.srq
            .post(100 + i, &[t.mr.sge(4096 + 256 * i as usize, 256)])
            .unwrap();
    }
    t.mr.write(0, &0x1111u64.to_ne_bytes());
    t.mr.write(8, &40u64.to_ne_bytes());
    t.mr.write(512, b"remote bytes to read");
    a.mr.write(0, b"gathered send payload");
    let ops = [
        (1, SendOp::Send, Data::Sges(&[a.mr.sge(0, 21)])),
        (2, SendOp::SendImm(0xabcd), Data::Inline(b"imm")),
        (3, SendOp::Write(t.mr.remote(256)), Data::Inline(b"written")),
        (
            4,
            SendOp::WriteImm(t.mr.remote(300), 0x77),
            Data::Inline(b"w+imm"),
        ),
        (
            5,
            SendOp::Read(t.mr.remote(512)),
            Data::Sges(&[a.mr.sge(1024, 20)]),
        ),
        (
            6,
            SendOp::CompareSwap {
                remote: t.mr.remote(0),
                compare: 0x1111,
                swap: 0x2222,
            },
            Data::Sges(&[a.mr.sge(2048, 8)]),
        ),
        (
            7,
            SendOp::FetchAdd {
                remote: t.mr.remote(8),
                add: 2,
            },
            Data::Sges(&[a.mr.sge(2056, 8)]),
        ),
    ];
    for (id, op, data) in ops {
        a.qp.sq().post_dc(wr(id, op, data), &dest).unwrap();
    }
    let cs = poll_n(&mut a, 7);
    let want = [
        WcOpcode::Send,
        WcOpcode::Send,
        WcOpcode::RdmaWrite,
        WcOpcode::RdmaWrite,
        WcOpcode::RdmaRead,
        WcOpcode::CompareSwap,
        WcOpcode::FetchAdd,
    ];
    for (i, c) in cs.iter().enumerate() {
        assert_eq!(
            (c.wr_id, c.opcode, c.status),
            (i as u64 + 1, want[i], Status::Success)
        );
    }
    assert_eq!(cs[4].byte_len, 20);
    // The target: three receives from the SRQ, each naming the DCT and the DCI.
    let rs = poll_target(&mut t, 3);
    let dctn = t.dct.number().unwrap();
    // CQE version 0: srqn_uidx of an SRQ receive is the SRQ's number.
    let base = Completion::default()
        .with_qpn(dctn)
        .with_opcode(WcOpcode::Recv)
        .with_src_qp(a.qp.qpn())
        .with_slid(lid_a)
        .with_user_index(t.srq.srqn());
    assert_eq!(
        rs,
        [
            base.with_wr_id(100).with_byte_len(21),
            base.with_wr_id(101).with_byte_len(3).with_imm(Some(0xabcd)),
            base.with_wr_id(102)
                .with_byte_len(5)
                .with_imm(Some(0x77))
                .with_opcode(WcOpcode::RecvRdmaWithImm),
        ]
    );
    let bytes = |mr: &MemoryRegion<Sim>, off: usize, len: usize| {
        let mut b = vec![0u8; len];
        mr.read(off, &mut b);
        b
    };
    assert_eq!(bytes(&t.mr, 4096, 21), b"gathered send payload");
    assert_eq!(bytes(&t.mr, 4352, 3), b"imm");
    assert_eq!(bytes(&t.mr, 256, 7), b"written");
    assert_eq!(bytes(&t.mr, 300, 5), b"w+imm");
    assert_eq!(bytes(&a.mr, 1024, 20), b"remote bytes to read");
    assert_eq!((a.mr.read_u64(2048), t.mr.read_u64(0)), (0x1111, 0x2222));
    assert_eq!((a.mr.read_u64(2056), t.mr.read_u64(8)), (40, 42));
    // One destination: one connect, no disconnect.
    let stats = a.ctx.backend().nic().stats();
    assert_eq!((stats.dc_connects, stats.dc_disconnects), (1, 0));
    assert_empty(&mut a);
}

#[test]
fn one_dci_alternates_between_many_dcts_in_order() {
    let fabric = Fabric::new();
    let targets: Vec<Target> = (0..8).map(|_| target(&fabric)).collect();
    let mut a = dci(&fabric);
    let ahs: Vec<_> = targets.iter().map(|t| ah_to(&a, t)).collect();
    let pcie_before: Vec<_> = targets
        .iter()
        .map(|t| t.ctx.backend().nic().pcie())
        .collect();
    // Two rounds over the 8 targets, two WRITEs each visit: 16 switches, 32 WRITEs.
    let mut posted = 0;
    for round in 0..2u8 {
        for (i, t) in targets.iter().enumerate() {
            let dest = ahs[i].dc_dest(t.dct.number().unwrap(), DC_KEY);
            for k in 0..2u8 {
                let off = usize::from(round * 2 + k) * 8;
                let payload = [i as u8, round, k, 0xdc, 0, 0, 0, 0];
                a.qp.sq()
                    .post_dc(
                        wr(
                            posted,
                            SendOp::Write(t.mr.remote(off)),
                            Data::Inline(&payload),
                        ),
                        &dest,
                    )
                    .unwrap();
                posted += 1;
            }
        }
    }
    let cs = poll_n(&mut a, 32);
    assert!(cs
        .iter()
        .enumerate()
        .all(|(i, c)| c.wr_id == i as u64 && c.status.is_ok()));
    for (i, t) in targets.iter().enumerate() {
        for slot in 0..4u8 {
            let mut got = [0u8; 8];
            t.mr.read(usize::from(slot) * 8, &mut got);
            assert_eq!(got, [i as u8, slot / 2, slot % 2, 0xdc, 0, 0, 0, 0]);
        }
    }
    let stats = a.ctx.backend().nic().stats();
    assert_eq!((stats.dc_connects, stats.dc_disconnects), (16, 15));
    // The handshakes are wire-only: each target's link carried only the 4 WRITEs' data.
    for (t, before) in targets.iter().zip(pcie_before) {
        let cost = t.ctx.backend().nic().pcie() - before;
        assert_eq!(
            (cost.mmio_writes, cost.dma_reads, cost.dma_writes),
            (0, 0, 4)
        );
    }
}

/// Posts a WRITE to `dest` and returns its completion and the flush of a second one.
fn fail_two(
    a: &mut Side,
    dest: &mlx5_direct::DcDest<'_>,
    remote: mlx5_direct::Remote,
) -> Vec<Completion> {
    for id in [1, 2] {
        a.qp.sq()
            .post_dc(wr(id, SendOp::Write(remote), Data::Inline(b"x")), dest)
            .unwrap();
    }
    poll_n(a, 2)
}

/// A wrong DC key and an unknown DCT number are dropped at the target and the DCI's retries
/// run out, over RoCE (the DCI's AV global, routed by the DGID) exactly as over InfiniBand.
#[test]
fn a_wrong_key_or_an_unknown_dct_is_dropped_and_retries_run_out() {
    for link in [LinkLayer::InfiniBand, LinkLayer::Ethernet] {
        let fabric = Fabric::new();
        let t = target_on(Context::new(Sim::on_fabric(&fabric, on_link(link))), DC_KEY);
        let mut a = refusing_on(&fabric, DcRefusal::Drop, link);
        let ah = ah_to(&a, &t);
        let dctn = t.dct.number().unwrap();
        let remote = t.mr.remote(0);
        for (dest, key_violations, unknown) in [
            (ah.dc_dest(dctn, DC_KEY ^ 1), 1 + 2, 0),
            (ah.dc_dest(dctn + 1000, DC_KEY), 3, 1 + 2),
        ] {
            let cs = fail_two(&mut a, &dest, remote);
            assert_eq!(syndrome(&cs[0]), Some(Syndrome::TransportRetryExcErr));
            assert_eq!(syndrome(&cs[1]), Some(Syndrome::WrFlushErr));
            assert_eq!(a.qp.state(), QpState::Err);
            let s = t.ctx.backend().nic().stats();
            // The first try and its 2 retries, each refused at the target.
            assert_eq!(
                (s.dc_key_violations, s.dc_unknown_dct),
                (key_violations, unknown),
                "{link:?}"
            );
            a.qp.reset().unwrap();
            a.qp.activate_dci(&ConnectOptions {
                retry_cnt: 2,
                ..ConnectOptions::default()
            })
            .unwrap();
        }
        assert_eq!(a.ctx.backend().nic().stats().dc_connects, 0);
        let mut got = [0u8; 1];
        t.mr.read(0, &mut got);
        assert_eq!(got, [0], "nothing landed ({link:?})");
        // The right key reaches the DCT through the same address.
        write_inline(&mut a, &t, &ah, b"ok");
        assert_eq!(poll_n(&mut a, 1)[0].status, Status::Success, "{link:?}");
        let mut got = [0u8; 2];
        t.mr.read(64, &mut got);
        assert_eq!(&got, b"ok", "{link:?}");
    }
}

/// DC between RoCE ports (`NicConfig::link_layer = Ethernet`, LID 0): the DCI's AV carries
/// a GRH to the target's GID (the one way `mlx5_create_ah` builds an AV on RoCE), and a
/// WRITE, a READ and a SEND into the DCT's SRQ land with their data.
#[test]
fn dc_over_roce_reaches_a_dct_by_its_gid() {
    let rig = (Fabric::new(), on_link(LinkLayer::Ethernet));
    common::bodies::dc_operations_reach_a_dct(&rig, 0, None);
}

#[test]
fn with_naks_a_refusal_fails_at_once_and_the_dci_recovers() {
    let fabric = Fabric::new();
    let t = target(&fabric);
    let mut a = refusing(&fabric, DcRefusal::Nak);
    let ah = ah_to(&a, &t);
    let dctn = t.dct.number().unwrap();
    let remote = t.mr.remote(0);
    for (dest, want) in [
        (ah.dc_dest(dctn, DC_KEY ^ 1), Syndrome::RemoteAccessErr),
        (ah.dc_dest(dctn + 1000, DC_KEY), Syndrome::RemoteInvalReqErr),
    ] {
        let cs = fail_two(&mut a, &dest, remote);
        assert_eq!(syndrome(&cs[0]), Some(want));
        assert_eq!(syndrome(&cs[1]), Some(Syndrome::WrFlushErr));
        // Posting to a DCI in error is refused before anything is written.
        assert_eq!(
            a.qp.sq()
                .post_dc(wr(3, SendOp::Write(remote), Data::Inline(b"x")), &dest),
            Err(PostError::NotReadyToSend)
        );
        a.qp.reset().unwrap();
        a.qp.activate_dci(&ConnectOptions::default()).unwrap();
    }
    // Recovered: the right key goes through.
    a.qp.sq()
        .post_dc(
            wr(9, SendOp::Write(remote), Data::Inline(b"ok")),
            &ah.dc_dest(dctn, DC_KEY),
        )
        .unwrap();
    assert_eq!(poll_n(&mut a, 1)[0].status, Status::Success);
    let mut got = [0u8; 2];
    t.mr.read(0, &mut got);
    assert_eq!(&got, b"ok");
    // The DCT served on: a refusal fails the DCI, never the target.
    assert_eq!(t.dct.state(), QpState::Rtr);
}

#[test]
fn a_send_to_a_dct_without_receives_runs_out_of_rnr_retries() {
    let fabric = Fabric::new();
    let mut t = target(&fabric);
    let mut a = dci(&fabric);
    let ah = ah_to(&a, &t);
    let dest = ah.dc_dest(t.dct.number().unwrap(), DC_KEY);
    a.qp.sq()
        .post_dc(wr(1, SendOp::Send, Data::Inline(b"hello")), &dest)
        .unwrap();
    let c = poll_n(&mut a, 1)[0];
    assert_eq!(syndrome(&c), Some(Syndrome::RnrRetryExcErr));
    assert_eq!(
        t.ctx.backend().nic().stats().rnr_naks,
        2,
        "the first try and 1 retry"
    );
    assert_empty_target(&mut t);
    // A remote access error at the DCT fails the DCI, not the DCT: it serves the next DCI.
    let mut b = dci(&fabric);
    let ah_b = ah_to(&b, &t);
    let bad = mlx5_direct::Remote {
        rkey: t.mr.rkey() ^ 0xff,
        ..t.mr.remote(0)
    };
    b.qp.sq()
        .post_dc(
            wr(1, SendOp::Write(bad), Data::Inline(b"x")),
            &ah_b.dc_dest(t.dct.number().unwrap(), DC_KEY),
        )
        .unwrap();
    assert_eq!(
        syndrome(&poll_n(&mut b, 1)[0]),
        Some(Syndrome::RemoteAccessErr)
    );
    t.srq.post(1, &[t.mr.sge(0, 64)]).unwrap();
    let mut c = dci(&fabric);
    let ah_c = ah_to(&c, &t);
    c.qp.sq()
        .post_dc(
            wr(1, SendOp::Send, Data::Inline(b"later")),
            &ah_c.dc_dest(t.dct.number().unwrap(), DC_KEY),
        )
        .unwrap();
    assert_eq!(poll_n(&mut c, 1)[0].status, Status::Success);
    let r = poll_target(&mut t, 1)[0];
    assert_eq!((r.wr_id, r.src_qp(), r.byte_len), (1, c.qp.qpn(), 5));
}

fn assert_empty_target(t: &mut Target) {
    let mut out = [Completion::default(); 2];
    assert_eq!(t.cq.poll(&mut out), 0);
}

#[test]
fn the_rc_entries_and_post_dc_refuse_each_others_queues() {
    let fabric = Fabric::new();
    let t = target(&fabric);
    let mut a = dci(&fabric);
    let mut rc = side(&fabric, &QpConfig::default());
    let ah = ah_to(&a, &t);
    let dest = ah.dc_dest(t.dct.number().unwrap(), DC_KEY);
    let op = SendOp::Write(t.mr.remote(0));
    assert_eq!(
        a.qp.sq()
            .post(1, op, Data::Inline(b"x"), SendFlags::SIGNALED),
        Err(PostError::WrongTransport {
            transport: Transport::Dci
        })
    );
    assert_eq!(
        rc.qp.sq().post_dc(wr(1, op, Data::Inline(b"x")), &dest),
        Err(PostError::WrongTransport {
            transport: Transport::Rc
        })
    );
    // Over the WQE size: the 48-byte AV counts.
    let max = a.qp.sq().max_inline();
    let big = vec![0u8; max + 1];
    assert!(matches!(
        a.qp.sq().post_dc(wr(1, op, Data::Inline(&big)), &dest),
        Err(PostError::InlineTooLarge { .. } | PostError::WqeTooLarge { .. })
    ));
    assert_eq!(a.qp.sq().producer_count(), 0, "nothing written");
    // A DCT is not a QP of create_qp.
    let dct_config = QpConfig {
        transport: Transport::Dct,
        ..QpConfig::default()
    };
    assert!(a.pd.create_qp(&a.cq, &a.cq, &dct_config).is_err());
    // A DCI is activated, not connected.
    let mut d = a.pd.create_dci(&a.cq, &dci_config()).unwrap();
    assert!(d.activate_ud(1, 0).is_err());
    d.activate_dci(&ConnectOptions::default()).unwrap();
    assert!(matches!(
        d.activate_dci(&ConnectOptions::default()),
        Err(mlx5_direct::Error::WrongState { .. })
    ));
}

proptest::proptest! {
    #![proptest_config(common::proptest_config(48))]
    /// An RC QP and a DCI of one NIC, on one CQ, WRITE in any order to the RC peer and to
    /// three DCTs: every byte lands as a reference says (the last WRITE to a slot wins), every
    /// completion names its QP, and the DCI connects once per run of WRITEs to one DCT.
    #[test]
    fn rc_and_dc_writes_mixed_on_one_cq_match_the_reference(
        ops in proptest::collection::vec((0..4usize, 0..16usize, proptest::prelude::any::<u8>()), 1..40),
    ) {
        let fabric = Fabric::new();
        let (mut a, mut b) = (side(&fabric, &QpConfig::default()), side(&fabric, &QpConfig::default()));
        common::connect(&mut a, &mut b);
        let mut d = a.pd.create_dci(&a.cq, &dci_config()).unwrap();
        d.activate_dci(&ConnectOptions::default()).unwrap();
        let targets: Vec<Target> = (0..3).map(|_| target(&fabric)).collect();
        let ahs: Vec<_> = targets.iter().map(|t| ah_to(&a, t)).collect();
        let mut want = [[[0u8; 8]; 16]; 4];
        let (mut runs, mut last_dc) = (0u64, None);
        for (i, &(to, slot, val)) in ops.iter().enumerate() {
            let bytes = [val; 8];
            if to == 3 {
                let op = SendOp::Write(b.mr.remote(slot * 8));
                a.qp.sq().post(i as u64, op, Data::Inline(&bytes), SendFlags::SIGNALED).unwrap();
            } else {
                let t = &targets[to];
                let dest = ahs[to].dc_dest(t.dct.number().unwrap(), DC_KEY);
                let op = SendOp::Write(t.mr.remote(slot * 8));
                d.sq().post_dc(wr(i as u64, op, Data::Inline(&bytes)), &dest).unwrap();
                runs += u64::from(last_dc != Some(to));
                last_dc = Some(to);
            }
            want[to][slot] = bytes;
        }
        let cs = poll_n(&mut a, ops.len());
        for c in &cs {
            let (to, _, _) = ops[c.wr_id as usize];
            let qpn = if to == 3 { a.qp.qpn() } else { d.qpn() };
            proptest::prop_assert_eq!((c.qpn, c.status), (qpn, Status::Success));
        }
        for (to, slots) in want.iter().enumerate() {
            let mr = if to == 3 { &b.mr } else { &targets[to].mr };
            for (slot, bytes) in slots.iter().enumerate() {
                let mut got = [0u8; 8];
                mr.read(slot * 8, &mut got);
                proptest::prop_assert_eq!(&got, bytes, "target {} slot {}", to, slot);
            }
        }
        let s = a.ctx.backend().nic().stats();
        proptest::prop_assert_eq!((s.dc_connects, s.dc_disconnects), (runs, runs.saturating_sub(1)));
    }
}
