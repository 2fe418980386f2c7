//! The model's integration tests (`common::bodies`: every operation, doorbell mode, event
//! mode and error cause) on a ConnectX NIC through the `verbs` backend. Two sides share one
//! device and connect through its port (loopback).
//!
//! Run on a host with a NIC (see docs/hardware.md):
//! `MLX5_DIRECT_DEVICE=mlx5_0 cargo test --features verbs --test verbs_hw -- --ignored`
//! (`MLX5_DIRECT_PORT` and `MLX5_DIRECT_GID_INDEX` choose the port and GID index). On the
//! emulated ConnectX (docs/emulator.md) `hw/emu/verbs-hw.sh` runs every body, as CI does
//! (rdma_cm's with `MLX5_DIRECT_CM_ADDR=10.47.0.1:PORT`, `mlx5_0`'s address there).
#![cfg(feature = "verbs")]

mod common;

use common::{bodies, side_on, BugCheck, Drive, Rig, Side};
use mlx5_direct::backend::verbs::{GidType, LinkLayer, Verbs, VerbsOptions};
use mlx5_direct::{Context, MemOptions, Pages, QpConfig, HUGE_PAGE};

impl Drive for Verbs {
    fn progress(_: &Context<Verbs>) {
        std::hint::spin_loop();
    }

    fn bug_check(_: &Context<Verbs>) -> BugCheck {
        BugCheck::off()
    }
}

/// One opened device; every side is a PD, CQ, QP and region on it.
struct Hw(Context<Verbs>);

impl Rig for Hw {
    type B = Verbs;
    fn side_sized(&self, config: &QpConfig, cq_entries: u32, cqe_size: usize) -> Side<Verbs> {
        side_on(self.0.clone(), config, cq_entries, cqe_size)
    }
}

fn env<T: std::str::FromStr>(name: &str) -> Option<T> {
    let value = std::env::var(name).ok()?;
    Some(
        value
            .parse()
            .unwrap_or_else(|_| panic!("{name}={value} does not parse")),
    )
}

fn hw() -> Hw {
    hw_with(None)
}

fn hw_with(ring_memory: Option<MemOptions>) -> Hw {
    let options = VerbsOptions {
        device: std::env::var("MLX5_DIRECT_DEVICE").ok(),
        port: env("MLX5_DIRECT_PORT").unwrap_or(1),
        gid_index: env("MLX5_DIRECT_GID_INDEX"),
        ring_memory,
    };
    Hw(Context::open(&options).expect("open the device named by MLX5_DIRECT_DEVICE"))
}

macro_rules! on_hardware {
    ($($name:ident),* $(,)?) => {$(
        #[test]
        #[ignore = "needs a device: an mlx5 NIC or the emulator (hw/emu/verbs-hw.sh); set MLX5_DIRECT_DEVICE"]
        fn $name() {
            bodies::$name(&hw());
        }
    )*};
}

on_hardware!(
    send_with_immediate_reaches_a_posted_receive,
    read_fetches_remote_bytes,
    atomics_return_the_original_value,
    masked_atomics_return_the_original_value,
    srq_shared_by_two_qps,
    bad_rkey_fails_then_flushes_then_reset_reuses_the_qp,
    receive_too_small_fails_on_both_sides,
    send_inv_of_a_registered_key_is_refused,
    bad_local_key_is_a_local_protection_error,
    one_side_reset_and_reconnected_keeps_working,
    no_receive_posted_exhausts_rnr_retries,
    an_unanswering_peer_exhausts_transport_retries,
    posting_before_rts_is_refused,
    armed_cq_raises_one_event_per_arm,
    event_driven_ping_pong,
    a_batch_completes_in_every_doorbell_mode,
    operations_complete_on_128_byte_cqes,
    cq_overrun_is_an_asynchronous_cq_error,
    queues_are_sized_by_rdma_cores_formula,
    connecting_takes_the_port_depth_and_rights_of_the_device,
    hw_timestamps_convert_with_the_clock_page,
    uc_operations_complete_and_read_is_refused,
    rate_limit_refusals,
    small_sends_come_through_the_cqe,
    on_demand_regions_prefetch_and_carry_writes,
);

#[test]
#[ignore = "needs a device with device memory (max_dm_size >= 1 KiB): an mlx5 NIC or the emulator (hw/emu/verbs-hw.sh); set MLX5_DIRECT_DEVICE"]
fn device_memory_slots_carry_payloads() {
    bodies::device_memory_slots_carry_payloads(&hw());
}

/// A UD server answers the sender of a receive through an address from its completion and
/// GRH area (`create_ah_from_recv`), without a route and, on InfiniBand, with one from GID
/// index 0.
#[test]
#[ignore = "needs an mlx5 NIC; set MLX5_DIRECT_DEVICE"]
fn ud_answers_the_sender_of_a_receive() {
    bodies::ud_answers_the_sender_of_a_receive(&hw(), None);
    bodies::ud_answers_the_sender_of_a_receive(&hw(), Some(0));
}

/// The group of the multicast tests: on RoCE the IPv4 group 239.1.2.3 (its mapped GID,
/// sent from GID index `MLX5_DIRECT_GID_INDEX`, which must then be an IPv4 RoCE v2 GID); on
/// InfiniBand MGID ff15::1234 and MLID 0xc001, with the sender's port GID 0. The datagrams
/// stay in the device (every QP is on it): no subnet-manager join is made.
fn mcast_group(hw: &Hw) -> (mlx5_direct::McastGroup, u8) {
    use mlx5_direct::McastGroup;
    if hw.0.port(1).expect("port 1").roce {
        let group = McastGroup::ipv4(std::net::Ipv4Addr::new(239, 1, 2, 3));
        (group, env("MLX5_DIRECT_GID_INDEX").unwrap_or(0))
    } else {
        let mut mgid = [0u8; 16];
        (mgid[0], mgid[1], mgid[14], mgid[15]) = (0xff, 0x15, 0x12, 0x34);
        (McastGroup { mgid, mlid: 0xc001 }, 0)
    }
}

/// UD multicast through `ibv_attach_mcast` / `ibv_detach_mcast`: the datagram reaches the
/// two attached QPs through the device's multicast loopback, and the refusals. On a device
/// without multicast (`max_mcast_grp` 0) only the driver's refusal.
#[test]
#[ignore = "needs a device: an mlx5 NIC or the emulator (hw/emu/verbs-hw.sh, on InfiniBand and RoCE); set MLX5_DIRECT_DEVICE"]
fn ud_multicast_reaches_attached_qps() {
    let hw = hw();
    let (group, sgid_index) = mcast_group(&hw);
    if hw.0.caps().max_mcast_grp == 0 {
        let ud = QpConfig {
            transport: mlx5_direct::Transport::Ud,
            ..QpConfig::default()
        };
        let s = hw.side(&ud);
        assert!(matches!(
            s.qp.attach_mcast(&group),
            Err(mlx5_direct::Error::Unsupported(_))
        ));
        eprintln!("max_mcast_grp is 0: only the refusal of attach_mcast was checked");
        return;
    }
    bodies::ud_multicast_reaches_attached_qps(&hw, group, sgid_index);
    bodies::mcast_attach_refuses_bad_input(&hw, group);
}

/// XRC through `ibv_open_xrcd`, `ibv_create_srq_ex` (`IBV_SRQT_XRC`) and
/// `IBV_QPT_XRC_SEND` / `XRC_RECV`: one initiator reaches two XRC SRQs through one target.
/// The poller finds an XRC SRQ's completions by the user index rdma-core gave it, read
/// from libmlx5's private `struct mlx5_resource` (checked by this body on the emulator,
/// whose libmlx5 is Debian's unmodified one; UNVERIFIED on a NIC). On a device without XRC
/// only the refusal.
#[test]
#[ignore = "needs a device: an mlx5 NIC, or the emulator (hw/emu/verbs-hw.sh runs it there); set MLX5_DIRECT_DEVICE"]
fn xrc_reaches_two_srqs_through_one_target() {
    let hw = hw();
    if !hw.0.caps().xrc {
        assert!(matches!(
            hw.0.open_xrcd(),
            Err(mlx5_direct::Error::Unsupported(_))
        ));
        eprintln!("no IBV_DEVICE_XRC: only the refusal of open_xrcd was checked");
        return;
    }
    bodies::xrc_reaches_two_srqs_through_one_target(&hw);
}

/// A raw packet QP's frame, with its checksums offloaded, seen by another raw QP's sniffer
/// rule (`ibv_create_flow` with `IBV_FLOW_ATTR_SNIFFER`) on the same port. On an Ethernet
/// port only: hw/emu/verbs-hw.sh runs it on its RoCE fabric.
#[test]
#[ignore = "needs an mlx5 NIC with an Ethernet port and CAP_NET_RAW, or the emulator's RoCE fabric (hw/emu/verbs-hw.sh); set MLX5_DIRECT_DEVICE"]
fn a_raw_sniffer_sees_a_sent_frame_with_its_checksums() {
    bodies::a_sniffer_sees_a_sent_frame_with_its_checksums(&hw());
}

/// A striding work queue (`mlx5dv_create_wq`) behind an RSS QP
/// (`ibv_create_rwq_ind_table`, `mlx5dv_create_qp`) takes a raw QP's frames in place
/// through a sniffer rule, across the ring's wrap. On an Ethernet port only, with striding
/// RQs: hw/emu/verbs-hw.sh runs it on its RoCE fabric.
#[test]
#[ignore = "needs an mlx5 NIC with an Ethernet port, striding RQs and CAP_NET_RAW, or the emulator's RoCE fabric (hw/emu/verbs-hw.sh); set MLX5_DIRECT_DEVICE"]
fn a_raw_striding_queue_takes_frames_in_place() {
    bodies::a_striding_queue_takes_frames_in_place(&hw());
}

/// An RSS QP over two striding work queues spreads 32 UDP flows by their Toeplitz hash
/// (`mlx5dv_create_qp` with `rx_hash_conf`). On an Ethernet port only: hw/emu/verbs-hw.sh
/// runs it on its RoCE fabric.
/// A raw packet QP takes a rate limit through `ibv_modify_qp_rate_limit` (libmlx5's
/// MODIFY_QP_EX with `IBV_QP_RATE_LIMIT`), within the device's `packet_pacing_caps`. On
/// an Ethernet port only: hw/emu/verbs-hw.sh runs it on its RoCE fabric.
#[test]
#[ignore = "needs an mlx5 NIC with an Ethernet port and CAP_NET_RAW, or the emulator's RoCE fabric (hw/emu/verbs-hw.sh); set MLX5_DIRECT_DEVICE"]
fn a_raw_qp_takes_a_rate_limit() {
    bodies::a_raw_qp_takes_a_rate_limit(&hw());
}

#[test]
#[ignore = "needs an mlx5 NIC with an Ethernet port, striding RQs and CAP_NET_RAW, or the emulator's RoCE fabric (hw/emu/verbs-hw.sh); set MLX5_DIRECT_DEVICE"]
fn a_raw_rss_qp_spreads_flows_by_hash() {
    bodies::rss_spreads_flows_over_striding_queues_by_hash(&hw());
}

#[test]
#[ignore = "needs a device: an mlx5 NIC or the emulator (hw/emu/verbs-hw.sh); set MLX5_DIRECT_DEVICE"]
fn dc_operations_reach_a_dct() {
    bodies::dc_operations_reach_a_dct(&hw(), env("MLX5_DIRECT_GID_INDEX").unwrap_or(0), None);
}

#[test]
#[ignore = "needs a device with DCI streams (dci_streams_caps.max_log_num_concurent >= 2): an mlx5 NIC or the emulator (hw/emu/verbs-hw.sh); set MLX5_DIRECT_DEVICE"]
fn dc_operations_on_a_dci_stream_reach_a_dct() {
    let streams = mlx5_direct::DciStreams {
        log_concurrent: 2,
        log_errored: 0,
    };
    let gid = env("MLX5_DIRECT_GID_INDEX").unwrap_or(0);
    bodies::dc_operations_reach_a_dct(&hw(), gid, Some(streams));
}

#[test]
#[ignore = "needs a device: an mlx5 NIC or the emulator (hw/emu/verbs-hw.sh); set MLX5_DIRECT_DEVICE"]
fn inline_write_lands_and_completes() {
    let (mut a, _b) = bodies::inline_write_lands_and_completes(&hw());
    let why = a.qp.handle().doorbell_only();
    let mode = a.qp.sq().effective_mode();
    assert_eq!(
        why.is_some(),
        mode == mlx5_direct::DoorbellMode::Doorbell,
        "BlueFlame mode {mode:?} and reason {why:?} agree"
    );
}

/// Rings and doorbell records through libmlx5's external allocator
/// (`VerbsOptions::ring_memory`, `MLX5DV_CTX_ATTR_BUF_ALLOCATORS`): with transparent huge
/// pages, the two sides' CQ buffers (verbs.c `mlx5_alloc_cq_buf`), QP buffers (one for both
/// rings, `mlx5_alloc_qp_buf`) and the one doorbell-record page their four records share
/// (dbrec.c `__add_page`) are this crate's 2 MiB pages, the queues work on them, and all
/// five are freed with the objects.
#[test]
#[ignore = "needs a device (an mlx5 NIC or the emulator: hw/emu/verbs-hw.sh) and transparent huge pages; set MLX5_DIRECT_DEVICE"]
fn rings_come_from_the_crates_allocator() {
    let hw = hw_with(Some(MemOptions {
        pages: Pages::Transparent,
        numa_node: None,
    }));
    let sides = bodies::inline_write_lands_and_completes(&hw);
    let rings = hw.0.backend().ring_buffers();
    assert_eq!(rings.len(), 5, "{rings:?}");
    assert!(rings.iter().all(|b| b.page_size == HUGE_PAGE), "{rings:?}");
    drop(sides);
    assert_eq!(hw.0.backend().ring_buffers(), []);
}

/// A parent domain on hardware (`ibv_alloc_parent_domain` with allocators): a QP created
/// on it takes its buffer (`MLX5DV_RES_TYPE_QP`) and its doorbell record
/// (`MLX5DV_RES_TYPE_DBR`, a base page) from the domain's allocator, the context's
/// allocator is not installed, and everything is freed with the QP.
#[test]
#[ignore = "needs a device: an mlx5 NIC or the emulator (hw/emu/verbs-hw.sh); set MLX5_DIRECT_DEVICE"]
fn a_parent_domain_allocates_its_qps_rings() {
    use mlx5_direct::backend::mlx5dv::{MLX5DV_RES_TYPE_DBR, MLX5DV_RES_TYPE_QP};
    let hw = hw();
    let ctx = &hw.0;
    let pd = ctx.alloc_pd().unwrap();
    let domain = pd.alloc_parent_domain(&MemOptions::BASE).unwrap();
    let cq = ctx.create_cq(16, 64).unwrap();
    let qp = domain.create_qp(&cq, &cq, &QpConfig::default()).unwrap();
    let mut types: Vec<u64> = domain
        .handle()
        .ring_buffers()
        .iter()
        .map(|b| b.resource_type)
        .collect();
    types.sort_unstable();
    assert_eq!(types, [MLX5DV_RES_TYPE_QP, MLX5DV_RES_TYPE_DBR]);
    assert_eq!(ctx.backend().ring_buffers(), []);
    drop(qp);
    assert_eq!(domain.handle().ring_buffers(), []);
}

/// A compressed CQ where the device offers one (else the typed refusal), of 64-byte CQEs
/// and of 128-byte ones where the device has `MLX5DV_CONTEXT_FLAGS_CQE_128B_COMP`, and
/// bursts of 64 signaled WRITEs polled through each: whether the NIC compressed (it does
/// so only under PCIe back pressure) the completions are the same.
#[test]
#[ignore = "needs a device with CQE compression: an mlx5 NIC or the emulator (hw/emu/verbs-hw.sh); set MLX5_DIRECT_DEVICE"]
fn a_compressed_cq_delivers_every_completion() {
    use mlx5_direct::{CqConfig, CqeCompression, Error};
    let zipped = |c, cqe_size| CqConfig {
        compression: Some(c),
        ..CqConfig::new(256, cqe_size)
    };
    let hw = hw();
    let ctx = &hw.0;
    if hw.0.backend().info().cqe_comp_max_num == 0 {
        let refused = ctx.create_cq_with(&zipped(CqeCompression::BASIC, 64));
        assert!(matches!(refused.map(|_| ()), Err(Error::Unsupported(_))));
        return;
    }
    let enhanced = ctx.create_cq_with(&zipped(CqeCompression::ENHANCED, 64));
    assert!(matches!(enhanced.map(|_| ()), Err(Error::Unsupported(_))));
    for cqe_size in [64, 128] {
        let cq = ctx.create_cq_with(&zipped(CqeCompression::BASIC, cqe_size));
        if cqe_size == 128 && !hw.0.backend().info().cqe_128b_compression {
            assert!(matches!(cq.map(|_| ()), Err(Error::Unsupported(_))));
            continue;
        }
        let config = QpConfig::default();
        let mut a = side_on(ctx.clone(), &config, 256, 64);
        let mut b = side_on(ctx.clone(), &config, 256, 64);
        let cq = cq.unwrap();
        a.qp = a.pd.create_qp(&cq, &cq, &config).unwrap();
        a.cq = cq;
        common::connect(&mut a, &mut b);
        write_rounds(&mut a, &b);
    }
}

/// 16 doorbells of 64 signaled 8-byte inline WRITEs, each polled to its exact completions.
fn write_rounds(a: &mut Side<Verbs>, b: &Side<Verbs>) {
    use mlx5_direct::{Data, SendFlags, SendOp, SendWr};
    let remote = b.mr.remote(0);
    for round in 0..16u64 {
        let wrs: Vec<SendWr<'_>> = (0..64u64)
            .map(|i| SendWr {
                wr_id: round * 64 + i,
                op: SendOp::Write(remote.offset(8 * i)),
                data: Data::Inline(&[1; 8]),
                flags: SendFlags::SIGNALED,
            })
            .collect();
        assert_eq!(a.qp.sq().post_many(&wrs), Ok(64));
        let got = common::poll_n(a, 64);
        for (i, c) in got.iter().enumerate() {
            assert_eq!(
                (c.wr_id, c.status),
                (round * 64 + i as u64, mlx5_direct::Status::Success)
            );
        }
    }
}

#[test]
#[ignore = "needs a device: an mlx5 NIC or the emulator (hw/emu/verbs-hw.sh); set MLX5_DIRECT_DEVICE"]
fn the_opened_port_reports_its_addressing() {
    let hw = hw();
    let verbs = hw.0.backend();
    let port = verbs
        .port_attr(env("MLX5_DIRECT_PORT").unwrap_or(1))
        .unwrap();
    assert!(port.active, "port {port:?} is not ACTIVE");
    assert!(port.active_mtu >= 256, "{port:?}");
    assert_ne!(port.gid, [0; 16]);
    if let Some(index) = env::<u32>("MLX5_DIRECT_GID_INDEX") {
        assert_eq!(port.gid_index, index);
    }
    // ibv_query_gid_ex reads the same GID as ibv_query_gid, of the type sysfs names.
    let entry = hw.0.query_gid(port.port, port.gid_index).unwrap();
    assert_eq!(entry.gid, port.gid);
    let want = match (port.link_layer, port.gid_type) {
        (LinkLayer::Ethernet, Some(GidType::RoceV2)) => Some(mlx5_direct::GidType::RoceV2),
        (LinkLayer::Ethernet, Some(GidType::IbRoceV1)) => Some(mlx5_direct::GidType::RoceV1),
        (LinkLayer::InfiniBand, _) => Some(mlx5_direct::GidType::Ib),
        _ => None,
    };
    if let Some(want) = want {
        assert_eq!(entry.gid_type, want, "{port:?}");
    }
    assert_eq!(
        hw.0.port(port.port).unwrap().gid_table_len,
        port.gid_table_len
    );
    assert!(hw.0.query_gid(port.port, port.gid_table_len).is_err());
    let caps = hw.0.caps();
    assert!(caps.max_sq_wqebbs >= 256 && caps.max_cqe >= 256, "{caps:?}");
    assert!(verbs.info().phys_port_cnt >= 1);
}

/// rdma_cm between two driver QPs of one device (loopback): a listener on
/// `MLX5_DIRECT_CM_ADDR` (the device's IPoIB or RoCE address and a port, `IP:PORT`), a QP
/// connected to it through rdma_cm and one accepted on it, each told the other's buffer in
/// the private data; a WRITE then lands and both QPs are in RTS.
#[test]
#[ignore = "needs an mlx5 NIC with an IP address, or the emulator (hw/emu/verbs-hw.sh); set MLX5_DIRECT_DEVICE and MLX5_DIRECT_CM_ADDR"]
fn rdma_cm_connects_driver_qps() {
    use mlx5_direct::backend::verbs::{cm, CmListener, CmOptions};
    use mlx5_direct::{CmPrivateData, Data, QpState, SendFlags, SendOp, Status};
    let hw = hw();
    let to: std::net::SocketAddr =
        env("MLX5_DIRECT_CM_ADDR").expect("MLX5_DIRECT_CM_ADDR=IP:PORT of the device");
    let config = QpConfig::default();
    let mut a = side_on(hw.0.clone(), &config, 64, 64);
    let mut b = side_on(hw.0.clone(), &config, 64, 64);
    let listener = CmListener::bind(to).unwrap();
    let options = CmOptions::default();
    let record = |index: u16, mr: &mlx5_direct::MemoryRegion<Verbs>| CmPrivateData {
        index,
        rkey: mr.rkey(),
        addr: mr.addr(),
        ..CmPrivateData::default()
    };
    let (a_record, b_record) = (record(0, &a.mr), record(0, &b.mr));
    let b_qp = &mut b.qp;
    let (a_conn, b_conn) = std::thread::scope(|s| {
        let server = s.spawn(|| {
            let request = listener
                .next_request(Some(std::time::Duration::from_secs(10)))
                .unwrap();
            assert_eq!(request.peer().rkey, a_record.rkey);
            request.accept_qp(b_qp, &b_record, &options).unwrap()
        });
        let a_conn = cm::connect_qp(&mut a.qp, to, &a_record, &options).unwrap();
        (a_conn, server.join().unwrap())
    });
    assert_eq!(
        (a_conn.peer().qpn, b_conn.peer().qpn),
        (b.qp.qpn(), a.qp.qpn())
    );
    assert_eq!(
        (a_conn.peer().addr, a_conn.peer().rkey),
        (b.mr.addr(), b.mr.rkey())
    );
    assert_eq!((a.qp.state(), b.qp.state()), (QpState::Rts, QpState::Rts));
    let remote = b.mr.remote(0);
    a.qp.sq()
        .post(
            1,
            SendOp::Write(remote),
            Data::Inline(b"rdma_cm"),
            SendFlags::SIGNALED,
        )
        .unwrap();
    let done = common::poll_n(&mut a, 1);
    assert_eq!((done[0].wr_id, done[0].status), (1, Status::Success));
    let mut buf = [0u8; 7];
    b.mr.read(0, &mut buf);
    assert_eq!(&buf, b"rdma_cm");
}
