//! DC end to end on the model: the DCI WQE bytes (ctrl + datagram segment with the DC key and
//! `dqp_dct = DCT number | 1 << 31` + the RC segments), every operation with its data, the
//! target's completions naming the DCT and the sender, one DCI alternating between many
//! DCTs (connects and disconnects counted, no PCIe for them), refusals (wrong key, unknown
//! DCT, no receive) with their syndromes, and recovery of the DCI.

mod common;

use common::{assert_empty, poll_n, side, BugCheck, Side, MR_LEN};
use mlx5_direct::backend::sim::hw::LinkLayer;
use mlx5_direct::backend::sim::{DcRefusal, Fabric, NicConfig, PcieCounters, Sim};
use mlx5_direct::prm::Syndrome;
use mlx5_direct::{
    Access, AddressHandle, AhAttr, Completion, ConnectOptions, Context, Cq, Data, DciPool,
    DciStreams, Dct, GlobalRoute, MemoryRegion, PostError, ProtectionDomain, QpConfig, QpState,
    SendFlags, SendOp, SendWr, Srq, Status, Transport, WcOpcode,
};

/// perftest's DC key (`DC_KEY`, prm-facts-next §3.3).
const DC_KEY: u64 = 0xffee_ddcc;

/// A DC target: its own NIC, a CQ, an SRQ, a DCT in RTR and a region with every right.
struct Target {
    ctx: Context<Sim>,
    cq: Cq<Sim>,
    srq: Srq<Sim>,
    dct: Dct<Sim>,
    mr: MemoryRegion<Sim>,
    _pd: ProtectionDomain<Sim>,
    _bugs: BugCheck,
}

fn target_on(ctx: Context<Sim>, key: u64) -> Target {
    let pd = ctx.alloc_pd().unwrap();
    let cq = ctx.create_cq(256, 64).unwrap();
    let srq = pd.create_srq(64, 1).unwrap();
    let mut dct = pd.create_dct(&cq, &srq, key).unwrap();
    assert!(matches!(
        dct.number(),
        Err(mlx5_direct::Error::WrongState { .. })
    ));
    dct.activate(1, Access::ALL, &ConnectOptions::default())
        .unwrap();
    let mr = pd.alloc_mr(MR_LEN, Access::ALL).unwrap();
    Target {
        _bugs: BugCheck::on(ctx.backend().nic()),
        ctx,
        cq,
        srq,
        dct,
        mr,
        _pd: pd,
    }
}

fn target(fabric: &std::sync::Arc<Fabric>) -> Target {
    target_on(
        Context::new(Sim::on_fabric(fabric, NicConfig::default())),
        DC_KEY,
    )
}

fn dci_config() -> QpConfig {
    QpConfig {
        transport: Transport::Dci,
        ..QpConfig::default()
    }
}

/// A DCI in RTS on its own NIC, with `retry_cnt` transport retries.
fn dci_on(ctx: Context<Sim>, retry_cnt: u8) -> Side {
    let mut s = common::side_on(ctx, &dci_config(), 256, 64);
    s.qp.activate_dci(&ConnectOptions {
        retry_cnt,
        rnr_retry: 1,
        ..ConnectOptions::default()
    })
    .unwrap();
    s
}

fn dci(fabric: &std::sync::Arc<Fabric>) -> Side {
    dci_on(
        Context::new(Sim::on_fabric(fabric, NicConfig::default())),
        7,
    )
}

/// An address handle from `from` to `to`'s port: by LID on InfiniBand, by a GRH to its
/// GID on RoCE (where the LID is 0 and every address is global).
fn ah_to(from: &Side, to: &Target) -> AddressHandle<Sim> {
    let port = to.ctx.port(1).unwrap();
    from.pd
        .create_ah(&AhAttr {
            port: 1,
            dlid: port.lid,
            grh: port.roce.then_some(GlobalRoute {
                dgid: port.gid,
                hop_limit: 64,
                ..GlobalRoute::default()
            }),
            ..AhAttr::default()
        })
        .unwrap()
}

/// The model's NIC with ports on `link`.
fn on_link(link: LinkLayer) -> NicConfig {
    NicConfig {
        link_layer: link,
        ..NicConfig::default()
    }
}

fn wr(wr_id: u64, op: SendOp, data: Data<'_>) -> SendWr<'_> {
    SendWr {
        wr_id,
        op,
        data,
        flags: SendFlags::SIGNALED,
    }
}

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

/// A DCI NIC with `dc_refusal`, `retry_cnt` 2.
fn refusing(fabric: &std::sync::Arc<Fabric>, refusal: DcRefusal) -> Side {
    refusing_on(fabric, refusal, LinkLayer::InfiniBand)
}

/// [`refusing`] with its port on `link`.
fn refusing_on(fabric: &std::sync::Arc<Fabric>, refusal: DcRefusal, link: LinkLayer) -> Side {
    let cfg = NicConfig {
        dc_refusal: refusal,
        ..on_link(link)
    };
    dci_on(Context::new(Sim::on_fabric(fabric, cfg)), 2)
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

fn syndrome(c: &Completion) -> Option<Syndrome> {
    match c.status {
        Status::Error(e) => e.syndrome(),
        _ => None,
    }
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

/// Polls `n` completions of `a`'s CQ and hands each to `pool`.
fn drain(a: &mut Side, pool: &mut DciPool<Sim>, n: usize) -> Vec<Completion> {
    let cs = poll_n(a, n);
    for c in &cs {
        assert!(pool.complete(c).unwrap().is_some());
    }
    cs
}

#[test]
fn a_pool_keeps_a_dci_per_busy_destination_and_reuses_released_ones() {
    let fabric = Fabric::new();
    let targets: Vec<Target> = (0..3).map(|_| target(&fabric)).collect();
    let mut a = dci(&fabric);
    let mut pool =
        DciPool::new(&a.pd, &a.cq, 2, &dci_config(), &ConnectOptions::default()).unwrap();
    let ahs: Vec<_> = targets.iter().map(|t| ah_to(&a, t)).collect();
    let dests: Vec<_> = (0..3)
        .map(|i| ahs[i].dc_dest(targets[i].dct.number().unwrap(), DC_KEY))
        .collect();
    const PAYLOADS: [[u8; 4]; 5] = [[0; 4], [0xa1; 4], [0xa2; 4], [0xa3; 4], [0xa4; 4]];
    let put = |id: u64, t: &Target, off: usize| {
        wr(
            id,
            SendOp::Write(t.mr.remote(off)),
            Data::Inline(&PAYLOADS[id as usize]),
        )
    };
    let first = pool.post(put(1, &targets[0], 0), &dests[0]).unwrap();
    assert_eq!(pool.post(put(2, &targets[0], 4), &dests[0]).unwrap(), first);
    let second = pool.post(put(3, &targets[1], 0), &dests[1]).unwrap();
    assert_ne!(first, second);
    assert_eq!(pool.serving(&dests[1]), Some(second));
    assert_eq!(pool.free(), 0);
    // Every DCI busy with another destination: refused, nothing written.
    let before: Vec<u32> = (0..2)
        .map(|i| pool.dci(i).send_queue().producer_count())
        .collect();
    assert_eq!(
        pool.post(put(4, &targets[2], 0), &dests[2]),
        Err(PostError::NoFreeDci { dcis: 2 })
    );
    let after: Vec<u32> = (0..2)
        .map(|i| pool.dci(i).send_queue().producer_count())
        .collect();
    assert_eq!(before, after);
    let cs = drain(&mut a, &mut pool, 3);
    assert!(cs.iter().all(|c| c.status.is_ok()));
    assert_eq!((pool.free(), pool.serving(&dests[0])), (2, None));
    // The last DCI released is taken first (UCX's stack).
    assert_eq!(
        pool.post(put(4, &targets[2], 0), &dests[2]).unwrap(),
        second
    );
    drain(&mut a, &mut pool, 1);
    for (t, want) in targets.iter().zip([[0xa1, 0xa2], [0xa3, 0], [0xa4, 0]]) {
        let mut got = [0u8; 8];
        t.mr.read(0, &mut got);
        assert_eq!(
            got,
            [want[0], want[0], want[0], want[0], want[1], want[1], want[1], want[1]]
        );
    }
    // Each DCI's connections: DCI `first` one (to t0), DCI `second` two (t1, then t2).
    let stats = a.ctx.backend().nic().stats();
    assert_eq!((stats.dc_connects, stats.dc_disconnects), (3, 1));
}

#[test]
fn cqe_version_1_completions_carry_the_dcis_user_index() {
    let fabric = Fabric::new();
    let t = target(&fabric);
    // A NIC whose context negotiated CQE version 1, NAKing refusals (an error CQE at once).
    let cfg = NicConfig {
        cqe_version: 1,
        dc_refusal: DcRefusal::Nak,
        ..NicConfig::default()
    };
    let ctx = Context::new(Sim::on_fabric(&fabric, cfg));
    let config = QpConfig {
        user_index: Some(0xab_cdef),
        ..dci_config()
    };
    let mut a = common::side_on(ctx, &config, 256, 64);
    a.qp.activate_dci(&ConnectOptions::default()).unwrap();
    let mut other =
        a.pd.create_dci(
            &a.cq,
            &QpConfig {
                user_index: Some(7),
                ..dci_config()
            },
        )
        .unwrap();
    other.activate_dci(&ConnectOptions::default()).unwrap();
    let ah = ah_to(&a, &t);
    let dctn = t.dct.number().unwrap();
    let op = SendOp::Write(t.mr.remote(0));
    other
        .sq()
        .post_dc(wr(3, op, Data::Inline(b"ok")), &ah.dc_dest(dctn, DC_KEY))
        .unwrap();
    a.qp.sq()
        .post_dc(wr(1, op, Data::Inline(b"ok")), &ah.dc_dest(dctn, DC_KEY))
        .unwrap();
    a.qp.sq()
        .post_dc(
            wr(2, op, Data::Inline(b"no")),
            &ah.dc_dest(dctn, DC_KEY ^ 1),
        )
        .unwrap();
    let cs = poll_n(&mut a, 3);
    assert_eq!(
        (cs[0].status, cs[0].qpn, cs[0].user_index()),
        (Status::Success, other.qpn(), 7)
    );
    assert_eq!(
        (cs[1].status, cs[1].qpn, cs[1].user_index()),
        (Status::Success, a.qp.qpn(), 0xab_cdef)
    );
    // The error CQE carries it too (mlx5_err_cqe.srqn).
    assert_eq!(
        (syndrome(&cs[2]), cs[2].user_index()),
        (Some(Syndrome::RemoteAccessErr), 0xab_cdef)
    );
    assert_eq!(&a.cq.cqe_bytes(1)[32..36], &0x00ab_cdefu32.to_be_bytes());
    // More than 24 bits is refused before the device is asked.
    let wide = QpConfig {
        user_index: Some(1 << 24),
        ..dci_config()
    };
    assert!(matches!(
        a.pd.create_dci(&a.cq, &wide),
        Err(mlx5_direct::Error::InvalidArgument(_))
    ));
}

#[test]
fn a_pool_recovers_a_dci_that_failed_and_serves_on() {
    let fabric = Fabric::new();
    let t = target(&fabric);
    let mut a = refusing(&fabric, DcRefusal::Nak);
    let mut pool =
        DciPool::new(&a.pd, &a.cq, 1, &dci_config(), &ConnectOptions::default()).unwrap();
    let ah = ah_to(&a, &t);
    let dctn = t.dct.number().unwrap();
    let (bad, good) = (ah.dc_dest(dctn, DC_KEY ^ 1), ah.dc_dest(dctn, DC_KEY));
    let op = SendOp::Write(t.mr.remote(0));
    pool.post(wr(1, op, Data::Inline(b"no")), &bad).unwrap();
    let unsignaled = SendWr {
        flags: SendFlags::UNSIGNALED,
        ..wr(2, op, Data::Inline(b"no"))
    };
    pool.post(unsignaled, &bad).unwrap();
    // The error, then the flush of the unsignaled one: only then is the DCI drained.
    let cs = drain(&mut a, &mut pool, 2);
    assert_eq!(syndrome(&cs[0]), Some(Syndrome::RemoteAccessErr));
    assert_eq!(
        (cs[1].wr_id, syndrome(&cs[1])),
        (2, Some(Syndrome::WrFlushErr))
    );
    assert_eq!((pool.free(), pool.dci(0).state()), (1, QpState::Rts));
    pool.post(wr(3, op, Data::Inline(b"ok")), &good).unwrap();
    assert_eq!(drain(&mut a, &mut pool, 1)[0].status, Status::Success);
    let mut got = [0u8; 2];
    t.mr.read(0, &mut got);
    assert_eq!(&got, b"ok");
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

/// A target and a DCI with `log_concurrent` / `log_errored` streams on a NIC whose DCTs NAK
/// a refused connect (a wrong key fails at once with REMOTE_ACCESS_ERR), with an address
/// handle from the DCI to the target.
fn stream_rig(log_concurrent: u8, log_errored: u8) -> (Target, Side, AddressHandle<Sim>) {
    let fabric = Fabric::new();
    let t = target(&fabric);
    let cfg = NicConfig {
        dc_refusal: DcRefusal::Nak,
        ..NicConfig::default()
    };
    let config = QpConfig {
        dci_streams: Some(DciStreams {
            log_concurrent,
            log_errored,
        }),
        ..dci_config()
    };
    let mut a = common::side_on(Context::new(Sim::on_fabric(&fabric, cfg)), &config, 256, 64);
    a.qp.activate_dci(&ConnectOptions::default()).unwrap();
    let ah = ah_to(&a, &t);
    (t, a, ah)
}

/// Posts WRITE `wr_id` of `payload` to byte `off` of `t`'s region on stream `stream` with
/// DC key `key`.
fn write_on_stream(
    a: &mut Side,
    t: &Target,
    ah: &AddressHandle<Sim>,
    (stream, key): (u16, u64),
    wr_id: u64,
    off: usize,
    payload: &[u8],
) {
    let dest = ah.dc_dest(t.dct.number().unwrap(), key).on_stream(stream);
    a.qp.sq()
        .post_dc(
            wr(
                wr_id,
                SendOp::Write(t.mr.remote(off)),
                Data::Inline(payload),
            ),
            &dest,
        )
        .unwrap();
}

fn read_target(t: &Target, off: usize, len: usize) -> Vec<u8> {
    let mut got = vec![0u8; len];
    t.mr.read(off, &mut got);
    got
}

fn outcome(cs: &[Completion]) -> Vec<(u64, Option<Syndrome>)> {
    cs.iter().map(|c| (c.wr_id, syndrome(c))).collect()
}

#[test]
fn an_error_on_one_stream_leaves_the_other_running_until_the_stream_is_reset() {
    let (t, mut a, ah) = stream_rig(1, 1);
    // The stream id is in control bytes 9..10 (BE16), as mlx5dv_wr_set_dc_addr_stream
    // writes it.
    let pi = a.qp.sq().producer_count();
    write_on_stream(&mut a, &t, &ah, (1, DC_KEY ^ 1), 1, 0, b"bad");
    assert_eq!(a.qp.send_queue().wqe_bytes(pi, 16)[9..11], [0, 1]);
    write_on_stream(&mut a, &t, &ah, (0, DC_KEY), 2, 8, b"zero-a");
    write_on_stream(&mut a, &t, &ah, (1, DC_KEY), 3, 16, b"one");
    write_on_stream(&mut a, &t, &ah, (0, DC_KEY), 4, 24, b"zero-b");
    assert_eq!(
        outcome(&poll_n(&mut a, 4)),
        [
            (1, Some(Syndrome::RemoteAccessErr)),
            (2, None),
            (3, Some(Syndrome::WrFlushErr)),
            (4, None)
        ]
    );
    // Stream 0 ran on in order; stream 1's WRITE after the error never landed.
    assert_eq!(read_target(&t, 8, 6), b"zero-a");
    assert_eq!(read_target(&t, 24, 6), b"zero-b");
    assert_eq!(read_target(&t, 16, 3), [0; 3]);
    assert_eq!(a.qp.state(), QpState::Rts);
    // Flushed until reset, then it runs again.
    write_on_stream(&mut a, &t, &ah, (1, DC_KEY), 5, 16, b"one");
    assert_eq!(
        outcome(&poll_n(&mut a, 1)),
        [(5, Some(Syndrome::WrFlushErr))]
    );
    a.qp.reset_dci_stream(1).unwrap();
    write_on_stream(&mut a, &t, &ah, (1, DC_KEY), 6, 16, b"one");
    assert_eq!(outcome(&poll_n(&mut a, 1)), [(6, None)]);
    assert_eq!(read_target(&t, 16, 3), b"one");
    let s = a.ctx.backend().nic().stats();
    assert_eq!((s.dci_stream_errors, s.dci_stream_flushes), (1, 2));
}

#[test]
fn the_errored_stream_beyond_the_limit_takes_the_dci_to_error() {
    // log_errored 1: the second stream in error is the limit.
    let (t, mut a, ah) = stream_rig(2, 1);
    write_on_stream(&mut a, &t, &ah, (3, DC_KEY ^ 1), 1, 0, b"a");
    write_on_stream(&mut a, &t, &ah, (2, DC_KEY ^ 1), 2, 0, b"b");
    write_on_stream(&mut a, &t, &ah, (0, DC_KEY), 3, 8, b"c");
    assert_eq!(
        outcome(&poll_n(&mut a, 3)),
        [
            (1, Some(Syndrome::RemoteAccessErr)),
            (2, Some(Syndrome::RemoteAccessErr)),
            (3, Some(Syndrome::WrFlushErr))
        ]
    );
    assert_eq!(
        a.ctx.backend().nic().qp_state(a.qp.qpn()).unwrap(),
        hw_err()
    );
    // The device refuses a stream reset of a DCI in ERR; the recovery is the QP's.
    assert!(matches!(
        a.qp.reset_dci_stream(3),
        Err(mlx5_direct::Error::Device { .. })
    ));
    a.qp.reset().unwrap();
    a.qp.activate_dci(&ConnectOptions::default()).unwrap();
    write_on_stream(&mut a, &t, &ah, (3, DC_KEY), 4, 8, b"back");
    assert_eq!(outcome(&poll_n(&mut a, 1)), [(4, None)]);
    assert_eq!(read_target(&t, 8, 4), b"back");
}

fn hw_err() -> mlx5_direct::backend::sim::hw::QpState {
    mlx5_direct::backend::sim::hw::QpState::Err
}

#[test]
fn streams_are_checked_before_anything_is_written() {
    let (t, mut a, ah) = stream_rig(2, 0);
    let dest = ah.dc_dest(t.dct.number().unwrap(), DC_KEY);
    let pi = a.qp.sq().producer_count();
    assert_eq!(
        a.qp.sq().post_dc(
            wr(1, SendOp::Write(t.mr.remote(0)), Data::Inline(b"x")),
            &dest.on_stream(4)
        ),
        Err(PostError::NoSuchStream {
            stream: 4,
            streams: 4
        })
    );
    assert_eq!(a.qp.sq().producer_count(), pi, "nothing written");
    // A plain DCI has stream 0 alone.
    let fabric = Fabric::new();
    let mut plain = dci(&fabric);
    let ah = ah_to(&plain, &t);
    assert_eq!(
        plain.qp.sq().post_dc(
            wr(1, SendOp::Write(t.mr.remote(0)), Data::Inline(b"x")),
            &ah.dc_dest(t.dct.number().unwrap(), DC_KEY).on_stream(1)
        ),
        Err(PostError::NoSuchStream {
            stream: 1,
            streams: 1
        })
    );
    // Streams are a DCI's; stream reset too.
    let rc = QpConfig {
        dci_streams: Some(DciStreams::default()),
        ..QpConfig::default()
    };
    assert!(matches!(
        plain.pd.create_qp(&plain.cq, &plain.cq, &rc),
        Err(mlx5_direct::Error::InvalidArgument(_))
    ));
    let mut rc_side = side(&fabric, &QpConfig::default());
    assert!(matches!(
        rc_side.qp.reset_dci_stream(0),
        Err(mlx5_direct::Error::InvalidArgument(_))
    ));
    // Above the device's caps (the model's 4): refused at creation.
    let above = QpConfig {
        dci_streams: Some(DciStreams {
            log_concurrent: 5,
            log_errored: 0,
        }),
        ..dci_config()
    };
    assert!(matches!(
        plain.pd.create_dci(&plain.cq, &above),
        Err(mlx5_direct::Error::Device { .. })
    ));
}

/// A pool created with `user_index = Some(base)` numbers its DCIs `base + i`; on a NIC with
/// CQE version 1 their completions carry it and the pool maps them by it (checking the
/// QPN); with CQE version 0 (user index 0 in every CQE) it maps them by QPN.
#[test]
fn a_pool_numbers_its_dcis_by_user_index_and_maps_completions_either_way() {
    for version in [1, 0] {
        let fabric = Fabric::new();
        let targets: Vec<Target> = (0..3).map(|_| target(&fabric)).collect();
        let cfg = NicConfig {
            cqe_version: version,
            ..NicConfig::default()
        };
        let mut a = common::side_on(
            Context::new(Sim::on_fabric(&fabric, cfg)),
            &dci_config(),
            256,
            64,
        );
        let config = QpConfig {
            user_index: Some(100),
            ..dci_config()
        };
        let mut pool = DciPool::new(&a.pd, &a.cq, 3, &config, &ConnectOptions::default()).unwrap();
        let ahs: Vec<_> = targets.iter().map(|t| ah_to(&a, t)).collect();
        let mut used = Vec::new();
        for (k, t) in targets.iter().enumerate() {
            let dest = ahs[k].dc_dest(t.dct.number().unwrap(), DC_KEY);
            let op = SendOp::Write(t.mr.remote(0));
            used.push(
                pool.post(wr(k as u64, op, Data::Inline(b"uidx")), &dest)
                    .unwrap(),
            );
        }
        let cs = poll_n(&mut a, 3);
        for c in &cs {
            let i = pool.complete(c).unwrap().unwrap();
            assert_eq!(i, used[c.wr_id as usize], "version {version}");
            assert_eq!(c.qpn, pool.dci(i).qpn());
            let want = if version == 1 { 100 + i as u32 } else { 0 };
            assert_eq!(c.user_index(), want, "version {version}");
        }
        assert_eq!(pool.free(), 3);
        // Another QP's completion that carries a pool DCI's user index is not the pool's.
        let foreign = Completion::default()
            .with_qpn(a.qp.qpn())
            .with_user_index(101);
        assert_eq!(pool.complete(&foreign).unwrap(), None);
    }
}
