//! The emulated kernel's raw Ethernet: what a RoCE (Ethernet) port reports for it, raw
//! packet QPs (`IBV_QPT_RAW_PACKET`: two rings, the port alone at INIT) and steering rules
//! (`IB_USER_VERBS_EX_CMD_CREATE_FLOW` / `DESTROY_FLOW`), commands written as libibverbs and
//! libmlx5 write them, each refusal with the kernel's errno.

mod kernel_common;

use kernel_common::{alloc_pd, context_on, extended, get_context, legacy};
use mlx5_emu::abi::mlx5::*;
use mlx5_emu::abi::uverbs::*;
use mlx5_emu::abi::{read, IntoBytes};
use mlx5_emu::client::Context;
use mlx5_emu::server::Link;
use std::mem::size_of;

/// `IB_QP_STATE`, `IB_QP_PORT`, `IB_QP_ACCESS_FLAGS`, `IB_QP_SQ_PSN`.
const STATE: u32 = 1 << 0;
const PORT: u32 = 1 << 5;
const ACCESS: u32 = 1 << 3;
const SQ_PSN: u32 = 1 << 16;
/// `IB_QP_RATE_LIMIT`.
const RATE_LIMIT: u32 = 1 << 25;

/// A context on a fabric of `link` with a PD, a CQ and page-aligned memory for rings.
struct Rig {
    ctx: Context,
    pd: u32,
    cq: u32,
    /// The rings' memory, kept while the rig lives.
    _mem: Vec<u8>,
    base: u64,
}

fn rig(name: &str, link: Link) -> Rig {
    let ctx = context_on(name, link);
    get_context(&ctx, 0).unwrap();
    let pd = alloc_pd(&ctx);
    let mem = vec![0u8; 128 * 1024 + 4096];
    let base = (mem.as_ptr() as u64 + 4095) & !4095;
    let mut resp = [0u32; 4];
    let req = ib_uverbs_create_cq {
        response: resp.as_mut_ptr() as u64,
        cqe: 63,
        comp_channel: -1,
        ..Default::default()
    };
    let drv = mlx5_ib_create_cq {
        buf_addr: base,
        db_addr: base + 124 * 1024,
        cqe_size: 64,
        ..Default::default()
    };
    let cmd = legacy(IB_USER_VERBS_CMD_CREATE_CQ, &req, drv.as_bytes(), 16);
    ctx.command(&cmd, None).unwrap();
    Rig {
        ctx,
        pd,
        cq: resp[0],
        _mem: mem,
        base,
    }
}

impl Rig {
    /// CREATE_QP as libmlx5 sends it for `qp_type`, ring set `n` of the memory (the RQ at
    /// `buf_addr`, a raw QP's SQ at `sq_buf_addr`): the handle, QP number and driver
    /// response.
    fn create_qp(
        &self,
        qp_type: u8,
        n: u64,
        rq_wqes: u32,
    ) -> Result<(u32, u32, mlx5_ib_create_qp_resp), i32> {
        let mut resp = [0u8; 32 + size_of::<mlx5_ib_create_qp_resp>()];
        let req = ib_uverbs_create_qp {
            response: resp.as_mut_ptr() as u64,
            pd_handle: self.pd,
            send_cq_handle: self.cq,
            recv_cq_handle: self.cq,
            max_send_wr: 16,
            max_recv_wr: rq_wqes,
            max_send_sge: 1,
            max_recv_sge: 1,
            qp_type,
            ..Default::default()
        };
        let at = self.base + 16 * 1024 * (n + 1);
        let drv = mlx5_ib_create_qp {
            buf_addr: at,
            sq_buf_addr: at + 8 * 1024,
            db_addr: self.base + 124 * 1024 + 64 * (n + 1),
            sq_wqe_count: 16,
            rq_wqe_count: rq_wqes,
            rq_wqe_shift: 4,
            ..Default::default()
        };
        let cmd = legacy(
            IB_USER_VERBS_CMD_CREATE_QP,
            &req,
            drv.as_bytes(),
            resp.len(),
        );
        self.ctx.command(&cmd, None)?;
        let core: ib_uverbs_create_qp_resp = read(&resp, 0).unwrap();
        let drv: mlx5_ib_create_qp_resp = read(&resp, 32).unwrap();
        Ok((core.qp_handle, core.qpn, drv))
    }

    fn modify(&self, qp: u32, state: u8, mask: u32) -> Result<(), i32> {
        let m = ib_uverbs_modify_qp {
            qp_handle: qp,
            attr_mask: mask,
            qp_state: state,
            port_num: 1,
            ..Default::default()
        };
        let cmd = legacy(IB_USER_VERBS_CMD_MODIFY_QP, &m, &[], 0);
        self.ctx.command(&cmd, None)
    }

    /// MODIFY_QP_EX as libmlx5's `mlx5_modify_qp_rate_limit` sends it: RTS -> RTS with
    /// `IB_QP_RATE_LIMIT`, the rate in the core part, the burst in mlx5's.
    fn rate_limit(&self, qp: u32, kbps: u32, burst: u32) -> Result<(), i32> {
        let m = ib_uverbs_ex_modify_qp {
            base: ib_uverbs_modify_qp {
                qp_handle: qp,
                attr_mask: RATE_LIMIT,
                ..Default::default()
            },
            rate_limit: kbps,
            reserved: 0,
        };
        let drv = mlx5_ib_modify_qp {
            burst_info: mlx5_ib_burst_info {
                max_burst_sz: burst,
                ..Default::default()
            },
            ..Default::default()
        };
        let mut out = [0u8; 8 + 16];
        let cmd = extended(
            IB_USER_VERBS_EX_CMD_MODIFY_QP,
            m.as_bytes(),
            drv.as_bytes(),
            out.as_mut_ptr() as u64,
            8,
            16,
        );
        self.ctx.command(&cmd, None)
    }

    fn destroy_qp(&self, qp: u32) -> Result<(), i32> {
        let mut resp = [0u32; 2];
        let req = ib_uverbs_destroy_qp {
            response: resp.as_mut_ptr() as u64,
            qp_handle: qp,
            ..Default::default()
        };
        let cmd = legacy(IB_USER_VERBS_CMD_DESTROY_QP, &req, &[], 8);
        self.ctx.command(&cmd, None)
    }

    /// CREATE_FLOW of `attr` and `specs` (their bytes) on `qp`: the flow's handle.
    fn create_flow(
        &self,
        qp: u32,
        attr: ib_uverbs_flow_attr,
        specs: &[u8],
        comp_mask: u32,
    ) -> Result<u32, i32> {
        let c = ib_uverbs_create_flow {
            comp_mask,
            qp_handle: qp,
            flow_attr: attr,
        };
        let mut core = c.as_bytes().to_vec();
        core.extend_from_slice(specs);
        let mut resp = ib_uverbs_create_flow_resp::default();
        let at = &mut resp as *mut ib_uverbs_create_flow_resp as u64;
        let cmd = extended(IB_USER_VERBS_EX_CMD_CREATE_FLOW, &core, &[], at, 8, 0);
        self.ctx.command(&cmd, None)?;
        Ok(resp.flow_handle)
    }

    fn destroy_flow(&self, flow: u32, comp_mask: u32) -> Result<(), i32> {
        let d = ib_uverbs_destroy_flow {
            comp_mask,
            flow_handle: flow,
        };
        let cmd = extended(
            IB_USER_VERBS_EX_CMD_DESTROY_FLOW,
            d.as_bytes(),
            &[],
            0,
            0,
            0,
        );
        self.ctx.command(&cmd, None)
    }
}

/// A rule of `kind` with `specs` specs of `size` bytes in all, on port 1.
fn attr(kind: u32, specs: u8, size: usize) -> ib_uverbs_flow_attr {
    ib_uverbs_flow_attr {
        r#type: kind,
        size: size as u16,
        num_of_specs: specs,
        port: 1,
        ..Default::default()
    }
}

fn hdr<T>(ty: u32) -> ib_uverbs_flow_spec_hdr {
    ib_uverbs_flow_spec_hdr {
        r#type: ty,
        size: size_of::<T>() as u16,
        reserved: 0,
    }
}

/// A destination MAC spec.
fn dst_mac(mac: [u8; 6]) -> ib_uverbs_flow_spec_eth {
    ib_uverbs_flow_spec_eth {
        hdr: hdr::<ib_uverbs_flow_spec_eth>(IBV_FLOW_SPEC_ETH),
        val: ib_uverbs_flow_eth_filter {
            dst_mac: mac,
            ..Default::default()
        },
        mask: ib_uverbs_flow_eth_filter {
            dst_mac: [0xff; 6],
            ..Default::default()
        },
    }
}

#[test]
fn an_ethernet_port_reports_the_raw_caps_the_model_has() {
    let r = rig("raw-caps", Link::Roce);
    let resp = get_context(&context_on("raw-caps-2", Link::Roce), 0).unwrap();
    let drv: mlx5_ib_alloc_ucontext_resp =
        read(&resp[size_of::<ib_uverbs_get_context_resp>()..], 0).unwrap();
    // The model's default: no inline header (ConnectX-5), the firmware's mode plus one.
    assert_eq!(drv.eth_min_inline, MLX5_USER_INLINE_MODE_NONE);

    let core_out = size_of::<ib_uverbs_ex_query_device_resp>();
    let drv_out = size_of::<mlx5_ib_query_device_resp>().next_multiple_of(8);
    let mut out = vec![0u8; core_out + drv_out];
    let q = ib_uverbs_ex_query_device::default();
    let at = out.as_mut_ptr() as u64;
    let cmd = extended(
        IB_USER_VERBS_EX_CMD_QUERY_DEVICE,
        q.as_bytes(),
        &[],
        at,
        core_out,
        drv_out,
    );
    r.ctx.command(&cmd, None).unwrap();
    let core: ib_uverbs_ex_query_device_resp = read(&out, 0).unwrap();
    let drv: mlx5_ib_query_device_resp = read(&out, core_out).unwrap();
    let flags = u64::from(core.base.device_cap_flags);
    assert_ne!(flags & IB_UVERBS_DEVICE_RAW_IP_CSUM, 0);
    assert_ne!(flags & IB_UVERBS_DEVICE_MANAGED_FLOW_STEERING, 0);
    assert_eq!(core.raw_packet_caps, IB_UVERBS_RAW_PACKET_CAP_IP_CSUM);
    let raw = 1 << IB_UVERBS_QPT_RAW_PACKET;
    assert_eq!(
        (drv.tso_caps.max_tso, drv.tso_caps.supported_qpts),
        (1 << 18, raw)
    );
    assert_eq!(
        drv.mlx5_ib_support_multi_pkt_send_wqes,
        MLX5_IB_SUPPORT_EMPW
    );
    let s = drv.striding_rq_caps;
    assert_eq!(
        (
            s.min_single_stride_log_num_of_bytes,
            s.max_single_stride_log_num_of_bytes,
            s.min_single_wqe_log_num_of_strides,
            s.max_single_wqe_log_num_of_strides,
            s.supported_qpts
        ),
        (6, 13, 3, 16, raw)
    );
    // `mlx5_ib_query_device`'s packet pacing: raw packet QPs, the model's default range
    // and the burst caps.
    assert_eq!(
        drv.packet_pacing_caps,
        mlx5_packet_pacing_caps {
            qp_rate_limit_min: 1,
            qp_rate_limit_max: 100_000_000,
            supported_qpts: raw,
            cap_flags: MLX5_IB_PP_SUPPORT_BURST,
            reserved: [0; 3],
        }
    );
}

#[test]
fn raw_packet_qps_have_two_rings_and_take_the_port_alone() {
    let r = rig("raw-qp", Link::Roce);
    let (qp, qpn, drv) = r.create_qp(IB_UVERBS_QPT_RAW_PACKET, 0, 16).unwrap();
    // `create_raw_packet_qp`: the SQ's and the RQ's numbers (the model's one QP number),
    // no TIS or TIR (the model has none).
    assert_eq!(
        drv.comp_mask,
        MLX5_IB_CREATE_QP_RESP_MASK_SQN | MLX5_IB_CREATE_QP_RESP_MASK_RQN
    );
    assert_eq!((drv.sqn, drv.rqn, drv.tisn, drv.tirn), (qpn, qpn, 0, 0));
    // Without receive WQEs no RQ: the SQ's number alone.
    let (send_only, qpn2, drv) = r.create_qp(IB_UVERBS_QPT_RAW_PACKET, 1, 0).unwrap();
    assert_eq!(drv.comp_mask, MLX5_IB_CREATE_QP_RESP_MASK_SQN);
    assert_eq!((drv.sqn, drv.rqn), (qpn2, 0));
    // The kernel's state table for raw packet QPs: the port at INIT, nothing else.
    assert_eq!(
        r.modify(qp, 1, STATE),
        Err(libc::EINVAL),
        "INIT needs the port"
    );
    assert_eq!(
        r.modify(qp, 1, STATE | PORT | ACCESS),
        Err(libc::EINVAL),
        "no access flags"
    );
    r.modify(qp, 1, STATE | PORT).unwrap();
    assert_eq!(
        r.modify(qp, 2, STATE | PORT),
        Err(libc::EINVAL),
        "RTR takes nothing"
    );
    r.modify(qp, 2, STATE).unwrap();
    assert_eq!(r.modify(qp, 3, STATE | SQ_PSN), Err(libc::EINVAL), "no PSN");
    r.modify(qp, 3, STATE).unwrap();
    // Packet pacing in RTS: through the extended command only (the legacy one takes
    // attributes up to DEST_QPN), within the device's range, a burst only with a rate.
    assert_eq!(r.modify(qp, 3, STATE | RATE_LIMIT), Err(libc::EOPNOTSUPP));
    r.rate_limit(qp, 1_000_000, 4096).unwrap();
    assert_eq!(r.rate_limit(qp, 100_000_001, 0), Err(libc::EINVAL));
    assert_eq!(r.rate_limit(qp, 0, 4096), Err(libc::EINVAL));
    r.rate_limit(qp, 0, 0).unwrap();
    r.destroy_qp(send_only).unwrap();
    r.destroy_qp(qp).unwrap();

    // On an InfiniBand port the model has no raw Ethernet.
    let ib = rig("raw-qp-ib", Link::Ib);
    assert_eq!(
        ib.create_qp(IB_UVERBS_QPT_RAW_PACKET, 0, 16).unwrap_err(),
        libc::EOPNOTSUPP
    );
}

#[test]
fn flows_are_checked_as_uverbs_checks_them() {
    let r = rig("raw-flow", Link::Roce);
    let (qp, _, _) = r.create_qp(IB_UVERBS_QPT_RAW_PACKET, 0, 16).unwrap();
    let (rc, _, _) = r.create_qp(IB_UVERBS_QPT_RC, 1, 16).unwrap();
    let eth = dst_mac([0x02, 0, 0, 0, 0, 0x42]);
    let spec = eth.as_bytes();
    let one = attr(IBV_FLOW_ATTR_NORMAL, 1, spec.len());
    let flow = |a: ib_uverbs_flow_attr, specs: &[u8]| r.create_flow(qp, a, specs, 0);

    // The core's checks (ib_uverbs_ex_create_flow), each EINVAL.
    assert_eq!(
        r.create_flow(qp, one, spec, 1),
        Err(libc::EINVAL),
        "comp_mask"
    );
    let flags = |f| ib_uverbs_flow_attr { flags: f, ..one };
    assert_eq!(
        flow(flags(1 << 3), spec),
        Err(libc::EINVAL),
        "a reserved flag"
    );
    let default_dont_trap = ib_uverbs_flow_attr {
        flags: IBV_FLOW_ATTR_FLAGS_DONT_TRAP,
        ..attr(IBV_FLOW_ATTR_ALL_DEFAULT, 0, 0)
    };
    assert_eq!(
        flow(default_dont_trap, &[]),
        Err(libc::EINVAL),
        "DONT_TRAP on a default"
    );
    let eleven = [spec; 11].concat();
    let too_many = attr(IBV_FLOW_ATTR_NORMAL, 11, eleven.len());
    assert_eq!(flow(too_many, &eleven), Err(libc::EINVAL), "11 specs");
    let reserved = ib_uverbs_flow_attr {
        reserved: [0, 1],
        ..one
    };
    assert_eq!(flow(reserved, spec), Err(libc::EINVAL), "reserved bytes");
    let two = [spec; 2].concat();
    let short = attr(IBV_FLOW_ATTR_NORMAL, 2, spec.len());
    assert_eq!(
        flow(short, &two),
        Err(libc::EINVAL),
        "sizes short of 2 specs"
    );
    let mut unknown = eth;
    unknown.hdr.r#type = 0x22;
    assert_eq!(
        flow(one, unknown.as_bytes()),
        Err(libc::EINVAL),
        "unknown type"
    );
    // A filter longer than the kernel's: its mask past the kernel's must be zero.
    let mut long = spec.to_vec();
    long.truncate(8);
    long[4] = 48;
    long.extend_from_slice(
        &[
            eth.val.as_bytes(),
            &[0; 4],
            eth.mask.as_bytes(),
            &[0, 0, 0, 1],
        ]
        .concat(),
    );
    let long_attr = attr(IBV_FLOW_ATTR_NORMAL, 1, long.len());
    assert_eq!(
        flow(long_attr, &long),
        Err(libc::EINVAL),
        "a mask past the filter"
    );
    let mut inner = eth;
    inner.hdr.r#type |= IBV_FLOW_SPEC_INNER;
    assert_eq!(
        flow(one, inner.as_bytes()),
        Err(libc::EOPNOTSUPP),
        "inner headers"
    );
    assert_eq!(
        r.create_flow(rc, one, spec, 0),
        Err(libc::EINVAL),
        "an RC QP"
    );
    assert_eq!(
        r.create_flow(999, one, spec, 0),
        Err(libc::EINVAL),
        "no such QP"
    );
    let prio = ib_uverbs_flow_attr {
        priority: 16,
        ..one
    };
    assert_eq!(
        flow(prio, spec),
        Err(libc::ENOMEM),
        "past the last priority"
    );

    // The same filter, zero-extended from a short spec and with a zero tail, is accepted.
    let f = flow(one, spec).unwrap();
    let mut zero_tail = long.clone();
    *zero_tail.last_mut().unwrap() = 0;
    let g = flow(long_attr, &zero_tail).unwrap();
    assert_ne!(f, g);
    // Another rule on the same match with a tag: a conflict (mlx5's flow table).
    let tag = ib_uverbs_flow_spec_action_tag {
        hdr: hdr::<ib_uverbs_flow_spec_action_tag>(IBV_FLOW_SPEC_ACTION_TAG),
        tag_id: 7,
        reserved1: 0,
    };
    let tagged = [spec, tag.as_bytes()].concat();
    let tagged_attr = attr(IBV_FLOW_ATTR_NORMAL, 2, tagged.len());
    assert_eq!(
        flow(tagged_attr, &tagged),
        Err(libc::EINVAL),
        "another action"
    );
    let sniffer = flow(attr(IBV_FLOW_ATTR_SNIFFER, 0, 0), &[]).unwrap();

    // A rule holds its QP; a flow is destroyed once.
    assert_eq!(r.destroy_qp(qp), Err(libc::EBUSY));
    assert_eq!(r.destroy_flow(f, 1), Err(libc::EINVAL), "comp_mask");
    for h in [f, g, sniffer] {
        r.destroy_flow(h, 0).unwrap();
        assert_eq!(r.destroy_flow(h, 0), Err(libc::EINVAL));
    }
    r.destroy_qp(qp).unwrap();
}

impl Rig {
    /// One extended command with `core` and `driver`, `out` bytes of core response room
    /// and `driver_out` of the driver's; the response bytes.
    fn ex(
        &self,
        cmd: u32,
        core: &[u8],
        driver: &[u8],
        out: usize,
        driver_out: usize,
    ) -> Result<Vec<u8>, i32> {
        let mut resp = vec![0u8; out + driver_out];
        let at = if resp.is_empty() {
            0
        } else {
            resp.as_mut_ptr() as u64
        };
        self.ctx
            .command(&extended(cmd, core, driver, at, out, driver_out), None)?;
        Ok(resp)
    }

    /// CREATE_WQ of 4 striding WQEs (`drv` tweaked): its handle and number.
    fn create_wq(
        &self,
        c: ib_uverbs_ex_create_wq,
        tweak: impl FnOnce(&mut mlx5_ib_create_wq),
    ) -> Result<(u32, u32), i32> {
        let mut drv = mlx5_ib_create_wq {
            buf_addr: self.base + 96 * 1024,
            db_addr: self.base + 124 * 1024 + 512,
            rq_wqe_count: 4,
            rq_wqe_shift: 5,
            comp_mask: MLX5_IB_CREATE_WQ_STRIDING_RQ,
            single_stride_log_num_of_bytes: 6,
            single_wqe_log_num_of_strides: 3,
            ..Default::default()
        };
        tweak(&mut drv);
        let out = size_of::<ib_uverbs_ex_create_wq_resp>();
        let resp = self.ex(
            IB_USER_VERBS_EX_CMD_CREATE_WQ,
            c.as_bytes(),
            drv.as_bytes(),
            out,
            8,
        )?;
        let r: ib_uverbs_ex_create_wq_resp = read(&resp, 0).unwrap();
        Ok((r.wq_handle, r.wqn))
    }

    fn modify_wq(&self, wq: u32, mask: u32, state: u32, cur: u32) -> Result<(), i32> {
        let m = ib_uverbs_ex_modify_wq {
            attr_mask: mask,
            wq_handle: wq,
            wq_state: state,
            curr_wq_state: cur,
            ..Default::default()
        };
        self.ex(IB_USER_VERBS_EX_CMD_MODIFY_WQ, m.as_bytes(), &[], 0, 0)
            .map(drop)
    }

    fn destroy_wq(&self, wq: u32) -> Result<(), i32> {
        let d = ib_uverbs_ex_destroy_wq {
            comp_mask: 0,
            wq_handle: wq,
        };
        let out = size_of::<ib_uverbs_ex_destroy_wq_resp>();
        self.ex(IB_USER_VERBS_EX_CMD_DESTROY_WQ, d.as_bytes(), &[], out, 0)
            .map(drop)
    }

    /// CREATE_RWQ_IND_TBL of one work queue (its handle padded to 8 bytes).
    fn create_table(&self, log: u32, wq: u32) -> Result<u32, i32> {
        let c = ib_uverbs_ex_create_rwq_ind_table {
            comp_mask: 0,
            log_ind_tbl_size: log,
        };
        let core = [c.as_bytes(), &wq.to_ne_bytes(), &[0; 4]].concat();
        let out = size_of::<ib_uverbs_ex_create_rwq_ind_table_resp>();
        let resp = self.ex(IB_USER_VERBS_EX_CMD_CREATE_RWQ_IND_TBL, &core, &[], out, 0)?;
        let r: ib_uverbs_ex_create_rwq_ind_table_resp = read(&resp, 0).unwrap();
        Ok(r.ind_tbl_handle)
    }

    fn destroy_table(&self, table: u32) -> Result<(), i32> {
        let d = ib_uverbs_ex_destroy_rwq_ind_table {
            comp_mask: 0,
            ind_tbl_handle: table,
        };
        self.ex(
            IB_USER_VERBS_EX_CMD_DESTROY_RWQ_IND_TBL,
            d.as_bytes(),
            &[],
            0,
            0,
        )
        .map(drop)
    }

    /// CREATE_QP (extended) of an RSS QP of `qp_type` on `table` with `rss`: its handle.
    fn create_rss_qp(
        &self,
        qp_type: u8,
        table: u32,
        rss: &mlx5_ib_create_qp_rss,
    ) -> Result<u32, i32> {
        let c = ib_uverbs_ex_create_qp {
            pd_handle: self.pd,
            qp_type,
            comp_mask: IB_UVERBS_CREATE_QP_MASK_IND_TABLE,
            rwq_ind_tbl_handle: table,
            ..Default::default()
        };
        let out = size_of::<ib_uverbs_ex_create_qp_resp>();
        let drv_out = size_of::<mlx5_ib_create_qp_resp>().next_multiple_of(8);
        let resp = self.ex(
            IB_USER_VERBS_EX_CMD_CREATE_QP,
            c.as_bytes(),
            rss.as_bytes(),
            out,
            drv_out,
        )?;
        let r: ib_uverbs_ex_create_qp_resp = read(&resp, 0).unwrap();
        Ok(r.base.qp_handle)
    }
}

#[test]
fn work_queues_tables_and_rss_qps_are_refused_as_the_kernel_refuses_them() {
    let r = rig("raw-wq", Link::Roce);
    let c = ib_uverbs_ex_create_wq {
        wq_type: IB_UVERBS_WQT_RQ,
        pd_handle: r.pd,
        cq_handle: r.cq,
        max_wr: 4,
        max_sge: 1,
        ..Default::default()
    };
    let masked = ib_uverbs_ex_create_wq { comp_mask: 1, ..c };
    assert_eq!(
        r.create_wq(masked, |_| {}),
        Err(libc::EOPNOTSUPP),
        "comp_mask"
    );
    let sq = ib_uverbs_ex_create_wq { wq_type: 1, ..c };
    assert_eq!(r.create_wq(sq, |_| {}), Err(libc::EINVAL), "not an RQ");
    let unknown = |d: &mut mlx5_ib_create_wq| d.comp_mask |= 2;
    assert_eq!(
        r.create_wq(c, unknown),
        Err(libc::EOPNOTSUPP),
        "mlx5 comp_mask"
    );
    let sig = |d: &mut mlx5_ib_create_wq| d.flags = MLX5_WQ_FLAG_SIGNATURE;
    assert_eq!(r.create_wq(c, sig), Err(libc::EOPNOTSUPP), "signatures");
    let three = |d: &mut mlx5_ib_create_wq| d.rq_wqe_count = 3;
    assert_eq!(r.create_wq(c, three), Err(libc::EINVAL), "3 WQEs");
    let small = |d: &mut mlx5_ib_create_wq| d.single_stride_log_num_of_bytes = 5;
    assert_eq!(r.create_wq(c, small), Err(libc::EINVAL), "32-byte strides");
    let (wq, wqn) = r.create_wq(c, |_| {}).unwrap();
    assert_ne!(wqn, 0);

    // IB_WQ_STATE (1), IB_WQ_CUR_STATE (2); RESET 0, RDY 1.
    assert_eq!(r.modify_wq(wq, 0, 1, 0), Err(libc::EINVAL), "no attributes");
    assert_eq!(
        r.modify_wq(wq, 8, 1, 0),
        Err(libc::EINVAL),
        "an unknown attribute"
    );
    assert_eq!(r.modify_wq(wq, 3, 1, 1), Err(libc::EINVAL), "it is not RDY");
    assert_eq!(
        r.modify_wq(wq + 100, 1, 1, 0),
        Err(libc::EINVAL),
        "no such WQ"
    );
    r.modify_wq(wq, 3, 1, 0).unwrap();

    assert_eq!(r.create_table(14, wq), Err(libc::EINVAL), "2^14 entries");
    assert_eq!(r.create_table(0, wq + 100), Err(libc::EINVAL), "no such WQ");
    let table = r.create_table(0, wq).unwrap();
    assert_eq!(r.destroy_wq(wq), Err(libc::EBUSY), "in a table");

    let mut rss = mlx5_ib_create_qp_rss {
        rx_hash_fields_mask: MLX5_RX_HASH_SRC_IPV4 | MLX5_RX_HASH_DST_IPV4,
        rx_hash_function: MLX5_RX_HASH_FUNC_TOEPLITZ,
        rx_key_len: 40,
        ..Default::default()
    };
    let raw = IB_UVERBS_QPT_RAW_PACKET;
    assert_eq!(
        r.create_rss_qp(IB_UVERBS_QPT_RC, table, &rss),
        Err(libc::EINVAL),
        "RC"
    );
    assert_eq!(
        r.create_rss_qp(raw, table + 100, &rss),
        Err(libc::EINVAL),
        "no table"
    );
    let bad = |f: fn(&mut mlx5_ib_create_qp_rss)| {
        let mut x = rss;
        f(&mut x);
        r.create_rss_qp(raw, table, &x)
    };
    assert_eq!(
        bad(|x| x.rx_key_len = 20),
        Err(libc::EINVAL),
        "a 20-byte key"
    );
    assert_eq!(
        bad(|x| x.rx_hash_function = 2),
        Err(libc::EOPNOTSUPP),
        "XOR"
    );
    assert_eq!(
        bad(|x| x.rx_hash_fields_mask |= MLX5_RX_HASH_INNER),
        Err(libc::EOPNOTSUPP),
        "inner"
    );
    assert_eq!(
        bad(|x| x.comp_mask = 1),
        Err(libc::EOPNOTSUPP),
        "mlx5 comp_mask"
    );
    assert_eq!(
        bad(|x| x.rx_hash_fields_mask |= MLX5_RX_HASH_SRC_IPV6),
        Err(libc::EINVAL),
        "IPv4 and IPv6 fields together"
    );
    rss.rx_hash_key[..40].copy_from_slice(&[0x6d; 40]);
    let qp = r.create_rss_qp(raw, table, &rss).unwrap();
    assert_eq!(
        r.destroy_table(table),
        Err(libc::EBUSY),
        "an RSS QP uses it"
    );
    let sniffer = attr(IBV_FLOW_ATTR_SNIFFER, 0, 0);
    let flow = r.create_flow(qp, sniffer, &[], 0).unwrap();
    assert_eq!(r.destroy_qp(qp), Err(libc::EBUSY), "a rule steers to it");
    r.destroy_flow(flow, 0).unwrap();
    r.destroy_qp(qp).unwrap();
    assert_eq!(r.destroy_qp(qp), Err(libc::EINVAL));
    r.destroy_table(table).unwrap();
    assert_eq!(r.destroy_table(table), Err(libc::EINVAL));
    r.destroy_wq(wq).unwrap();
    assert_eq!(r.destroy_wq(wq), Err(libc::EINVAL));
}
