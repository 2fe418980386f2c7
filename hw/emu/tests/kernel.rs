//! The emulated kernel's refusals: commands written as libibverbs writes them, straight to a
//! fabric server in this process (no preload, no rdma-core), each answered with the errno
//! `ib_uverbs` / `mlx5_ib` give for it. The server reaches this test's memory as it reaches
//! a program's, through its pid.

mod kernel_common;

use kernel_common::{alloc_pd, another, context, get_context, legacy, reg_mr};
use mlx5_emu::abi::mlx5::*;
use mlx5_emu::abi::uverbs::*;
use mlx5_emu::abi::IntoBytes;
use std::mem::size_of;

#[test]
fn nothing_but_get_context_works_before_it_and_it_works_once() {
    let ctx = context("order");
    let mut resp = [0u32; 2];
    let req = ib_uverbs_alloc_pd {
        response: resp.as_mut_ptr() as u64,
    };
    let alloc = legacy(IB_USER_VERBS_CMD_ALLOC_PD, &req, &[], 8);
    assert_eq!(ctx.command(&alloc, None), Err(libc::EINVAL));
    // No DEVX here: the kernel's context creation fails, and libmlx5 asks again without it.
    assert_eq!(
        get_context(&ctx, MLX5_IB_ALLOC_UCTX_DEVX).unwrap_err(),
        libc::EOPNOTSUPP
    );
    let resp = get_context(&ctx, 0).unwrap();
    let (core, drv) = resp.split_at(size_of::<ib_uverbs_get_context_resp>());
    let drv: mlx5_ib_alloc_ucontext_resp = mlx5_emu::abi::read(drv, 0).unwrap();
    assert_eq!(
        (drv.tot_bfregs, drv.bf_reg_size, drv.cqe_version),
        (16, 512, 1)
    );
    assert!(core[..4] != [0xff; 4], "the async fd is named");
    assert_eq!(
        get_context(&ctx, 0).unwrap_err(),
        libc::EINVAL,
        "a second context"
    );
    assert!(ctx.command(&alloc, None).is_ok());
}

#[test]
fn malformed_commands_get_the_dispatchers_errnos() {
    let ctx = context("frames");
    get_context(&ctx, 0).unwrap();
    let mut resp = [0u32; 2];
    let req = ib_uverbs_alloc_pd {
        response: resp.as_mut_ptr() as u64,
    };
    let mut cmd = legacy(IB_USER_VERBS_CMD_ALLOC_PD, &req, &[], 8);
    // in_words must count the whole write (verify_hdr).
    cmd[4] += 1;
    assert_eq!(ctx.command(&cmd, None), Err(libc::EINVAL));
    // A response room smaller than the response: ENOSPC.
    let small = legacy(IB_USER_VERBS_CMD_ALLOC_PD, &req, &[], 0);
    assert_eq!(ctx.command(&small, None), Err(libc::ENOSPC));
    // A command the kernel does not have (POST_SEND goes through the rings on mlx5).
    let unknown = legacy(IB_USER_VERBS_CMD_POST_SEND, &req, &[], 8);
    assert_eq!(ctx.command(&unknown, None), Err(libc::EOPNOTSUPP));
    // A write shorter than a header.
    assert_eq!(ctx.command(&[0; 4], None), Err(libc::EINVAL));
}

#[test]
fn registrations_are_checked_as_ib_uverbs_checks_them() {
    let ctx = context("mr");
    get_context(&ctx, 0).unwrap();
    let pd = alloc_pd(&ctx);
    let buf = vec![0u8; 8192];
    let addr = buf.as_ptr() as u64;
    // Remote write without local write (ib_check_mr_access).
    assert_eq!(
        reg_mr(&ctx, pd, addr, 4096, IB_UVERBS_ACCESS_REMOTE_WRITE),
        Err(libc::EINVAL)
    );
    // A PD that is not there.
    assert_eq!(reg_mr(&ctx, pd + 100, addr, 4096, 0), Err(libc::EINVAL));
    // Memory the program does not have (ib_umem_get cannot pin it).
    assert_eq!(reg_mr(&ctx, pd, 0x1000, 4096, 0), Err(libc::EFAULT));
    let mr = reg_mr(&ctx, pd, addr, 4096, IB_UVERBS_ACCESS_LOCAL_WRITE).unwrap();
    // A PD with a region on it cannot go.
    let dealloc = legacy(
        IB_USER_VERBS_CMD_DEALLOC_PD,
        &ib_uverbs_dealloc_pd { pd_handle: pd },
        &[],
        0,
    );
    assert_eq!(ctx.command(&dealloc, None), Err(libc::EBUSY));
    let dereg = legacy(
        IB_USER_VERBS_CMD_DEREG_MR,
        &ib_uverbs_dereg_mr { mr_handle: mr },
        &[],
        0,
    );
    assert!(ctx.command(&dereg, None).is_ok());
    assert!(ctx.command(&dealloc, None).is_ok());
    assert_eq!(ctx.command(&dereg, None), Err(libc::EINVAL), "gone");
}

#[test]
fn cqs_and_qp_transitions_are_refused_as_the_kernel_refuses_them() {
    let ctx = context("qp");
    get_context(&ctx, 0).unwrap();
    let pd = alloc_pd(&ctx);
    let ring = vec![0u8; 64 * 1024 + 4096];
    let base = (ring.as_ptr() as u64 + 4095) & !4095;
    let create_cq = |cqe: u32, cqe_size: u32, buf: u64| {
        let mut resp = [0u32; 4];
        let req = ib_uverbs_create_cq {
            response: resp.as_mut_ptr() as u64,
            cqe,
            comp_channel: -1,
            ..Default::default()
        };
        let drv = mlx5_ib_create_cq {
            buf_addr: buf,
            db_addr: base + 60 * 1024,
            cqe_size,
            ..Default::default()
        };
        ctx.command(
            &legacy(IB_USER_VERBS_CMD_CREATE_CQ, &req, drv.as_bytes(), 16),
            None,
        )
        .map(|()| resp[0])
    };
    assert_eq!(
        create_cq(u32::MAX >> 1, 64, base),
        Err(libc::EINVAL),
        "too many"
    );
    assert_eq!(
        create_cq(63, 32, base),
        Err(libc::EINVAL),
        "a CQE of 32 bytes"
    );
    let cq = create_cq(63, 64, base).unwrap();
    let mut resp = [0u32; 16];
    let req = ib_uverbs_create_qp {
        response: resp.as_mut_ptr() as u64,
        pd_handle: pd,
        send_cq_handle: cq,
        recv_cq_handle: cq,
        max_send_wr: 16,
        max_recv_wr: 16,
        max_send_sge: 1,
        max_recv_sge: 1,
        qp_type: IB_UVERBS_QPT_RC,
        ..Default::default()
    };
    let drv = mlx5_ib_create_qp {
        buf_addr: base + 8192,
        db_addr: base + 60 * 1024 + 64,
        sq_wqe_count: 16,
        rq_wqe_count: 16,
        rq_wqe_shift: 4,
        ..Default::default()
    };
    let mut bad = drv;
    bad.sq_wqe_count = 12;
    let cmd = |d: &mlx5_ib_create_qp| legacy(IB_USER_VERBS_CMD_CREATE_QP, &req, d.as_bytes(), 64);
    assert_eq!(
        ctx.command(&cmd(&bad), None),
        Err(libc::EINVAL),
        "not a power of two"
    );
    ctx.command(&cmd(&drv), None).unwrap();
    let qp = resp[0];
    // The CQ is in use now.
    let destroy_cq = legacy(
        IB_USER_VERBS_CMD_DESTROY_CQ,
        &ib_uverbs_destroy_cq {
            response: resp.as_mut_ptr() as u64,
            cq_handle: cq,
            ..Default::default()
        },
        &[],
        8,
    );
    assert_eq!(ctx.command(&destroy_cq, None), Err(libc::EBUSY));
    let modify = |state: u8, mask: u32| {
        let m = ib_uverbs_modify_qp {
            qp_handle: qp,
            attr_mask: mask,
            qp_state: state,
            port_num: 1,
            qp_access_flags: IB_UVERBS_ACCESS_LOCAL_WRITE,
            ..Default::default()
        };
        ctx.command(&legacy(IB_USER_VERBS_CMD_MODIFY_QP, &m, &[], 0), None)
    };
    // IB_QP_STATE | IB_QP_PKEY_INDEX | IB_QP_PORT | IB_QP_ACCESS_FLAGS.
    let (state, pkey, port, access) = (1, 1 << 4, 1 << 5, 1 << 3);
    assert_eq!(modify(2, state), Err(libc::EINVAL), "RESET -> RTR");
    assert_eq!(
        modify(1, state | pkey | port),
        Err(libc::EINVAL),
        "INIT needs access"
    );
    assert_eq!(
        modify(1, state | pkey | port | access | (1 << 6)),
        Err(libc::EINVAL),
        "a Q_Key on an RC QP"
    );
    modify(1, state | pkey | port | access).unwrap();
    modify(6, state).unwrap();
    modify(0, state).unwrap();

    // Multicast (uverbs' ib_uverbs_attach_mcast / detach_mcast over ib_attach_mcast): only a
    // UD QP joins; attaching a group twice is one attachment; a QP in a group is EBUSY to
    // destroy; detaching a group the QP is not in is EINVAL.
    let mut mgid = [0u8; 16];
    (mgid[0], mgid[1], mgid[15]) = (0xff, 0x15, 0x34);
    let attach = |qp_handle, mlid| {
        let m = ib_uverbs_attach_mcast {
            gid: mgid,
            qp_handle,
            mlid,
            reserved: 0,
        };
        ctx.command(&legacy(IB_USER_VERBS_CMD_ATTACH_MCAST, &m, &[], 0), None)
    };
    let detach = |qp_handle, mlid| {
        let m = ib_uverbs_detach_mcast {
            gid: mgid,
            qp_handle,
            mlid,
            reserved: 0,
        };
        ctx.command(&legacy(IB_USER_VERBS_CMD_DETACH_MCAST, &m, &[], 0), None)
    };
    assert_eq!(attach(qp, 0xc001), Err(libc::EINVAL), "an RC QP");
    let ud_req = ib_uverbs_create_qp {
        qp_type: IB_UVERBS_QPT_UD,
        ..req
    };
    let ud_drv = mlx5_ib_create_qp {
        buf_addr: base + 32 * 1024,
        db_addr: base + 60 * 1024 + 128,
        ..drv
    };
    ctx.command(
        &legacy(IB_USER_VERBS_CMD_CREATE_QP, &ud_req, ud_drv.as_bytes(), 64),
        None,
    )
    .unwrap();
    let ud = resp[0];
    assert_eq!(attach(ud, 0x0001), Err(libc::EINVAL), "a unicast MLID");
    attach(ud, 0xc001).unwrap();
    attach(ud, 0xc001).unwrap();
    assert_eq!(
        detach(ud, 0xc002),
        Err(libc::EINVAL),
        "not attached with that MLID"
    );
    let destroy_qp = legacy(
        IB_USER_VERBS_CMD_DESTROY_QP,
        &ib_uverbs_destroy_qp {
            response: resp.as_mut_ptr() as u64,
            qp_handle: ud,
            ..Default::default()
        },
        &[],
        8,
    );
    assert_eq!(ctx.command(&destroy_qp, None), Err(libc::EBUSY));
    detach(ud, 0xc001).unwrap();
    assert_eq!(
        detach(ud, 0xc001),
        Err(libc::EINVAL),
        "once attached, detached once"
    );
    ctx.command(&destroy_qp, None).unwrap();
}

#[test]
fn the_core_clock_page_reads_the_devices_free_running_timer() {
    let ctx = context("clock");
    let resp = get_context(&ctx, 0).unwrap();
    let drv: mlx5_ib_alloc_ucontext_resp =
        mlx5_emu::abi::read(&resp, size_of::<ib_uverbs_get_context_resp>()).unwrap();
    assert_ne!(
        drv.comp_mask & MLX5_IB_ALLOC_UCONTEXT_RESP_MASK_CORE_CLOCK_OFFSET,
        0,
        "the page is offered"
    );
    assert_eq!(drv.hca_core_clock_offset, 0, "internal_timer_h % PAGE_SIZE");
    let pgoff = mmap_pgoff(MLX5_IB_MMAP_CORE_CLOCK, 0);
    let (mapping, _) = ctx.mmap(pgoff * 4096, 4096).unwrap();
    assert_eq!(mapping, mlx5_emu::proto::Mapping::Registers);
    // mlx5_read_clock: two big-endian 32-bit loads, high then low.
    let read = || {
        let hi = u32::from_be(ctx.load(pgoff, 0, 4).unwrap() as u32);
        let lo = u32::from_be(ctx.load(pgoff, 4, 4).unwrap() as u32);
        (u64::from(hi) << 32) | u64::from(lo)
    };
    let (first, second) = (read(), read());
    assert!(first > 0 && second > first, "{first} then {second}");
    // One 8-byte load is the same register pair.
    let both = u64::from_be(ctx.load(pgoff, 0, 8).unwrap());
    assert!(both >= second, "{both} after {second}");
    assert_eq!(
        ctx.mmap(pgoff * 4096, 8192).unwrap_err(),
        libc::EINVAL,
        "one page"
    );
}

#[test]
fn xrc_objects_are_refused_as_the_kernel_refuses_them() {
    let ctx = context("xrc");
    get_context(&ctx, 0).unwrap();
    // QUERY_DEVICE reports IB_DEVICE_XRC (the model's XrcConfig::supported, on by default).
    let mut attr = ib_uverbs_query_device_resp::default();
    let req = ib_uverbs_query_device {
        response: &mut attr as *mut ib_uverbs_query_device_resp as u64,
    };
    let query = legacy(
        IB_USER_VERBS_CMD_QUERY_DEVICE,
        &req,
        &[],
        size_of::<ib_uverbs_query_device_resp>(),
    );
    ctx.command(&query, None).unwrap();
    assert_eq!(
        u64::from(attr.device_cap_flags) & IB_UVERBS_DEVICE_XRC,
        IB_UVERBS_DEVICE_XRC
    );
    let pd = alloc_pd(&ctx);
    let ring = vec![0u8; 64 * 1024 + 4096];
    let base = (ring.as_ptr() as u64 + 4095) & !4095;
    let mut resp = [0u32; 16];
    let cq_req = ib_uverbs_create_cq {
        response: resp.as_mut_ptr() as u64,
        cqe: 63,
        comp_channel: -1,
        ..Default::default()
    };
    let cq_drv = mlx5_ib_create_cq {
        buf_addr: base,
        db_addr: base + 60 * 1024,
        cqe_size: 64,
        ..Default::default()
    };
    let cq_cmd = legacy(IB_USER_VERBS_CMD_CREATE_CQ, &cq_req, cq_drv.as_bytes(), 16);
    ctx.command(&cq_cmd, None).unwrap();
    let cq = resp[0];

    // OPEN_XRCD: fd -1 is a domain of this context.
    let open_flags = |fd: u32, oflags: i32, resp: &mut [u32; 16]| {
        let req = ib_uverbs_open_xrcd {
            response: resp.as_mut_ptr() as u64,
            fd,
            oflags: oflags as u32,
        };
        ctx.command(&legacy(IB_USER_VERBS_CMD_OPEN_XRCD, &req, &[], 4), None)
    };
    let open = |fd: u32, resp: &mut [u32; 16]| open_flags(fd, libc::O_CREAT, resp);
    open(u32::MAX, &mut resp).unwrap();
    let xrcd = resp[0];
    assert_ne!(xrcd, pd, "a handle of its own");

    // CREATE_XSRQ of type XRC: its domain and CQ must be live handles.
    let xsrq = |xrcd_handle: u32, cq_handle: u32, uidx: u32, resp: &mut [u32; 16]| {
        let req = ib_uverbs_create_xsrq {
            response: resp.as_mut_ptr() as u64,
            srq_type: IB_UVERBS_SRQT_XRC,
            pd_handle: pd,
            max_wr: 15,
            max_sge: 1,
            xrcd_handle,
            cq_handle,
            ..Default::default()
        };
        let drv = mlx5_ib_create_srq {
            buf_addr: base + 16 * 1024,
            db_addr: base + 60 * 1024 + 256,
            uidx,
            ..Default::default()
        };
        let cmd = legacy(IB_USER_VERBS_CMD_CREATE_XSRQ, &req, drv.as_bytes(), 24);
        ctx.command(&cmd, None)
    };
    assert_eq!(xsrq(xrcd + 100, cq, 5, &mut resp), Err(libc::EINVAL));
    // Under CQE version 1 a user index of 24 bits, not the default (verify_assign_uidx).
    assert_eq!(xsrq(xrcd, cq, 0xff_ffff, &mut resp), Err(libc::EINVAL));
    assert_eq!(xsrq(xrcd, cq, 1 << 24, &mut resp), Err(libc::EINVAL));
    assert_eq!(xsrq(xrcd, cq + 100, 5, &mut resp), Err(libc::EINVAL));
    xsrq(xrcd, cq, 5, &mut resp).unwrap();
    let (srq, srqn) = (resp[0], resp[3]);
    assert_eq!((resp[1], resp[2]), (15, 1), "max_wr, max_sge");
    // The SRQ number in the core response (XRC SRQs only) and in the driver's.
    assert_ne!(srqn, 0);
    assert_eq!(resp[4], srqn);
    // Its CQ is in use now (the SRQ completes on it).
    let destroy_cq = ib_uverbs_destroy_cq {
        response: resp.as_mut_ptr() as u64,
        cq_handle: cq,
        ..Default::default()
    };
    let destroy_cq = legacy(IB_USER_VERBS_CMD_DESTROY_CQ, &destroy_cq, &[], 8);
    assert_eq!(ctx.command(&destroy_cq, None), Err(libc::EBUSY));

    // CREATE_QP of an XRC target: the domain's handle where the PD's goes, no CQ.
    let create_qp = |req: &ib_uverbs_create_qp, buf: u64, resp: &mut [u32; 16]| {
        let req = ib_uverbs_create_qp {
            response: resp.as_mut_ptr() as u64,
            ..*req
        };
        let drv = mlx5_ib_create_qp {
            buf_addr: buf,
            db_addr: base + 60 * 1024 + 512,
            sq_wqe_count: if req.max_send_wr == 0 { 0 } else { 16 },
            rq_wqe_count: 0,
            rq_wqe_shift: 4,
            ..Default::default()
        };
        let cmd = legacy(IB_USER_VERBS_CMD_CREATE_QP, &req, drv.as_bytes(), 64);
        ctx.command(&cmd, None)
    };
    let tgt_req = ib_uverbs_create_qp {
        pd_handle: xrcd,
        qp_type: IB_UVERBS_QPT_XRC_TGT,
        ..Default::default()
    };
    let by_pd = ib_uverbs_create_qp {
        pd_handle: pd,
        ..tgt_req
    };
    assert_eq!(
        create_qp(&by_pd, 0, &mut resp),
        Err(libc::EINVAL),
        "a PD is no XRC domain"
    );
    create_qp(&tgt_req, 0, &mut resp).unwrap();
    let (tgt, tgt_qpn) = (resp[0], resp[1]);
    assert_ne!(tgt_qpn, 0);

    // An XRC initiator: a send queue only; uverbs zeroes its receive capacities.
    let ini_req = ib_uverbs_create_qp {
        pd_handle: pd,
        send_cq_handle: cq,
        max_send_wr: 16,
        max_recv_wr: 16,
        max_send_sge: 1,
        max_recv_sge: 1,
        qp_type: IB_UVERBS_QPT_XRC_INI,
        ..Default::default()
    };
    create_qp(&ini_req, base + 32 * 1024, &mut resp).unwrap();
    let ini = resp[0];
    assert_eq!((resp[2], resp[3], resp[4], resp[5]), (16, 0, 1, 0));

    // An RC QP may not take an XRC SRQ.
    let rc_req = ib_uverbs_create_qp {
        pd_handle: pd,
        send_cq_handle: cq,
        recv_cq_handle: cq,
        srq_handle: srq,
        is_srq: 1,
        max_send_wr: 16,
        max_send_sge: 1,
        qp_type: IB_UVERBS_QPT_RC,
        ..Default::default()
    };
    assert_eq!(
        create_qp(&rc_req, base + 40 * 1024, &mut resp),
        Err(libc::EINVAL)
    );

    // MODIFY_QP against qp_state_table's XRC columns.
    let modify = |qp_handle: u32, state: u8, mask: u32| {
        let m = ib_uverbs_modify_qp {
            qp_handle,
            attr_mask: mask,
            qp_state: state,
            port_num: 1,
            path_mtu: 3,
            qp_access_flags: IB_UVERBS_ACCESS_REMOTE_WRITE,
            ..Default::default()
        };
        ctx.command(&legacy(IB_USER_VERBS_CMD_MODIFY_QP, &m, &[], 0), None)
    };
    // IB_QP_STATE, PKEY_INDEX, PORT, ACCESS_FLAGS, AV, PATH_MTU, DEST_QPN, RQ_PSN,
    // MAX_DEST_RD_ATOMIC, MIN_RNR_TIMER.
    let init = 1 | 1 << 4 | 1 << 5 | 1 << 3;
    let ini_rtr = 1 | 1 << 7 | 1 << 8 | 1 << 20 | 1 << 12;
    let tgt_rtr = ini_rtr | 1 << 17 | 1 << 15;
    modify(tgt, 1, init).unwrap();
    modify(ini, 1, init).unwrap();
    assert_eq!(
        modify(tgt, 2, ini_rtr),
        Err(libc::EINVAL),
        "a target's RTR needs its responder resources and RNR timer"
    );
    assert_eq!(
        modify(ini, 2, ini_rtr | 1 << 6),
        Err(libc::EINVAL),
        "a Q_Key on an initiator"
    );
    // uverbs' modify_qp_mask drops what an initiator ignores (perftest's RTR sets RC's).
    modify(ini, 2, tgt_rtr).unwrap();

    // The domain is busy while its SRQ and target live; each destroy is its own.
    let close = |xrcd_handle| {
        let req = ib_uverbs_close_xrcd { xrcd_handle };
        ctx.command(&legacy(IB_USER_VERBS_CMD_CLOSE_XRCD, &req, &[], 0), None)
    };
    // Where the destroys' responses go.
    let mut sink = [0u32; 2];
    let sink = sink.as_mut_ptr() as u64;
    let destroy_srq = |srq_handle| {
        let req = ib_uverbs_destroy_srq {
            response: sink,
            srq_handle,
            reserved: 0,
        };
        ctx.command(&legacy(IB_USER_VERBS_CMD_DESTROY_SRQ, &req, &[], 4), None)
    };
    assert_eq!(close(xrcd), Err(libc::EBUSY));
    let destroy_qp = |qp_handle| {
        let req = ib_uverbs_destroy_qp {
            response: sink,
            qp_handle,
            reserved: 0,
        };
        ctx.command(&legacy(IB_USER_VERBS_CMD_DESTROY_QP, &req, &[], 4), None)
    };
    destroy_qp(tgt).unwrap();
    assert_eq!(close(xrcd), Err(libc::EBUSY), "the SRQ");
    destroy_srq(srq).unwrap();
    close(xrcd).unwrap();
    assert_eq!(close(xrcd), Err(libc::EINVAL), "closed once");
    destroy_qp(ini).unwrap();

    // A domain through a file: the NIC's one for the file's inode, one per file.
    let dir = std::env::temp_dir();
    let path = |n: &str| dir.join(format!("mlx5-emu-xrcd-{}-{n}", std::process::id()));
    let (f1, f2) = (
        std::fs::File::create(path("a")).unwrap(),
        std::fs::File::create(path("b")).unwrap(),
    );
    use std::os::fd::AsRawFd;
    let (fd1, fd2) = (f1.as_raw_fd() as u32, f2.as_raw_fd() as u32);
    assert_eq!(
        open_flags(fd1, 0, &mut resp),
        Err(libc::EAGAIN),
        "none yet, no O_CREAT"
    );
    assert_eq!(open(9999, &mut resp), Err(libc::EBADF), "no such fd");
    open(fd1, &mut resp).unwrap();
    let first = resp[0];
    open_flags(fd1, 0, &mut resp).unwrap();
    let second = resp[0];
    assert_eq!(
        open_flags(fd1, libc::O_CREAT | libc::O_EXCL, &mut resp),
        Err(libc::EINVAL),
        "there already"
    );
    open(fd2, &mut resp).unwrap();
    let other = resp[0];
    // An SRQ through the second handle: the first closes (the domain lives on in the
    // second), the second is busy with its SRQ.
    xsrq(second, cq, 6, &mut resp).unwrap();
    let srq = resp[0];
    close(first).unwrap();
    assert_eq!(close(second), Err(libc::EBUSY));
    destroy_srq(srq).unwrap();
    close(second).unwrap();
    close(other).unwrap();
    // The file's domain went with its last handle: without O_CREAT there is none.
    assert_eq!(open_flags(fd1, 0, &mut resp), Err(libc::EAGAIN));
    let _ = (
        std::fs::remove_file(path("a")),
        std::fs::remove_file(path("b")),
    );
}

#[test]
fn a_files_xrc_domain_outlives_a_closed_context_and_goes_with_its_last_handle() {
    let (a, b) = (context("xrcfile"), another("xrcfile"));
    get_context(&a, 0).unwrap();
    get_context(&b, 0).unwrap();
    let path = std::env::temp_dir().join(format!("mlx5-emu-xrcd-{}-shared", std::process::id()));
    let file = std::fs::File::create(&path).unwrap();
    let fd = std::os::fd::AsRawFd::as_raw_fd(&file) as u32;
    let open = |ctx: &mlx5_emu::client::Context, oflags: i32| {
        let mut resp = [0u32; 2];
        let req = ib_uverbs_open_xrcd {
            response: resp.as_mut_ptr() as u64,
            fd,
            oflags: oflags as u32,
        };
        ctx.command(&legacy(IB_USER_VERBS_CMD_OPEN_XRCD, &req, &[], 4), None)
            .map(|()| resp[0])
    };
    let close = |ctx: &mlx5_emu::client::Context, xrcd_handle| {
        let req = ib_uverbs_close_xrcd { xrcd_handle };
        ctx.command(&legacy(IB_USER_VERBS_CMD_CLOSE_XRCD, &req, &[], 0), None)
    };
    open(&a, libc::O_CREAT).unwrap();
    // The second context finds the first's domain (no O_CREAT needed).
    let in_b = open(&b, 0).unwrap();
    // The first context goes without closing its handle: its teardown gives it back.
    drop(a);
    close(&b, in_b).unwrap();
    // Both handles gone, so is the domain; a third context finds none (once the first's
    // teardown, on the server's thread, has run).
    let c = another("xrcfile");
    get_context(&c, 0).unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    loop {
        match open(&c, 0) {
            Err(e) => {
                assert_eq!(e, libc::EAGAIN);
                break;
            }
            Ok(h) => {
                close(&c, h).unwrap();
                assert!(
                    std::time::Instant::now() < deadline,
                    "the closed context's handle still holds the domain"
                );
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
        }
    }
    let _ = std::fs::remove_file(&path);
}
