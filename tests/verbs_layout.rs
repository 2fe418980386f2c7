//! The `verbs` backend's FFI against rdma-core's headers: every struct it declares by hand
//! (`src/backend/mlx5dv.rs`) and the verbs structs `rdma-sys` writes by hand, member by member
//! (`offsetof`, `sizeof`), and every constant, through the golden shim (`tests/golden-shim`,
//! `c/ffi.c`). Ignored, with the reason, without the headers; CI requires them.
#![cfg(feature = "verbs")]

use core::mem::{offset_of, size_of};
use std::collections::BTreeSet;

use mlx5_direct::backend::mlx5dv::*;
use mlx5_direct::backend::rdmacm::*;
use mlx5_direct::CmEvent;
use mlx5_golden as golden;
use rdma_sys::{
    ibv_ah_attr, ibv_global_route, ibv_parent_domain_init_attr,
    ibv_parent_domain_init_attr_mask as Mask, rdma_cm_id, rdma_conn_param, rdma_event_channel,
    rdma_ud_param,
};

/// The size of the field `F` of some struct, given a projection to it (no value needed).
fn size_of_field<T, F>(_: fn(&T) -> &F) -> usize {
    size_of::<F>()
}

/// One field of ours: struct, member path as the C header names it, offset, size.
type Ours = (&'static str, String, usize, usize);

/// `fields!(T; a, b.c, …)`: each member's C path (`r#in` is C's `in`), offset and size.
macro_rules! fields {
    ($ty:ident; $($($part:ident).+),+ $(,)?) => {
        vec![$((
            stringify!($ty),
            stringify!($($part).+).replace(' ', "").replace("r#", ""),
            offset_of!($ty, $($part).+),
            size_of_field(|s: &$ty| &s.$($part).+),
        )),+]
    };
}

/// Our structs by C name, with their sizes.
fn our_structs() -> Vec<(&'static str, usize)> {
    vec![
        ("mlx5dv_cqe_comp_caps", size_of::<mlx5dv_cqe_comp_caps>()),
        (
            "mlx5dv_sw_parsing_caps",
            size_of::<mlx5dv_sw_parsing_caps>(),
        ),
        (
            "mlx5dv_striding_rq_caps",
            size_of::<mlx5dv_striding_rq_caps>(),
        ),
        ("mlx5dv_sig_caps", size_of::<mlx5dv_sig_caps>()),
        (
            "mlx5dv_dci_streams_caps",
            size_of::<mlx5dv_dci_streams_caps>(),
        ),
        ("mlx5dv_dci_streams", size_of::<mlx5dv_dci_streams>()),
        ("mlx5dv_crypto_caps", size_of::<mlx5dv_crypto_caps>()),
        ("mlx5dv_context", size_of::<mlx5dv_context>()),
        ("mlx5dv_qp", size_of::<mlx5dv_qp>()),
        ("mlx5dv_cq", size_of::<mlx5dv_cq>()),
        ("mlx5dv_srq", size_of::<mlx5dv_srq>()),
        ("mlx5dv_rwq", size_of::<mlx5dv_rwq>()),
        (
            "mlx5dv_striding_rq_init_attr",
            size_of::<mlx5dv_striding_rq_init_attr>(),
        ),
        ("mlx5dv_wq_init_attr", size_of::<mlx5dv_wq_init_attr>()),
        ("mlx5dv_obj", size_of::<mlx5dv_obj>()),
        ("mlx5dv_clock_info", size_of::<mlx5dv_clock_info>()),
        ("mlx5dv_cq_init_attr", size_of::<mlx5dv_cq_init_attr>()),
        ("mlx5dv_ctx_allocators", size_of::<mlx5dv_ctx_allocators>()),
        (
            "ibv_parent_domain_init_attr",
            size_of::<ibv_parent_domain_init_attr>(),
        ),
        ("mlx5dv_ah", size_of::<mlx5dv_ah>()),
        ("mlx5dv_dm", size_of::<mlx5dv_dm>()),
        ("mlx5dv_dc_init_attr", size_of::<mlx5dv_dc_init_attr>()),
        ("mlx5dv_qp_init_attr", size_of::<mlx5dv_qp_init_attr>()),
        ("ibv_global_route", size_of::<ibv_global_route>()),
        ("ibv_ah_attr", size_of::<ibv_ah_attr>()),
        ("rdma_event_channel", size_of::<rdma_event_channel>()),
        ("rdma_conn_param", size_of::<rdma_conn_param>()),
        ("rdma_ud_param", size_of::<rdma_ud_param>()),
        ("rdma_cm_event", size_of::<rdma_cm_event>()),
        ("rdma_cm_id", size_of::<rdma_cm_id>()),
    ]
}

/// Every member of ours.
fn our_fields() -> Vec<Ours> {
    [
        fields!(mlx5dv_cqe_comp_caps; max_num, supported_format),
        fields!(mlx5dv_sw_parsing_caps; sw_parsing_offloads, supported_qpts),
        fields!(mlx5dv_striding_rq_caps;
            min_single_stride_log_num_of_bytes, max_single_stride_log_num_of_bytes,
            min_single_wqe_log_num_of_strides, max_single_wqe_log_num_of_strides,
            supported_qpts),
        fields!(mlx5dv_sig_caps; block_size, block_prot, t10dif_bg, crc_type),
        fields!(mlx5dv_dci_streams_caps; max_log_num_concurent, max_log_num_errored),
        fields!(mlx5dv_dci_streams; log_num_concurent, log_num_errored),
        fields!(mlx5dv_crypto_caps;
            failed_selftests, crypto_engines, wrapped_import_method, log_max_num_deks, flags),
        fields!(mlx5dv_context;
            version, flags, comp_mask, cqe_comp_caps, sw_parsing_caps, striding_rq_caps,
            tunnel_offloads_caps, max_dynamic_bfregs, max_clock_info_update_nsec,
            flow_action_flags, dc_odp_caps, hca_core_clock, num_lag_ports, sig_caps,
            dci_streams_caps, max_wr_memcpy_length, crypto_caps),
        fields!(mlx5dv_qp;
            dbrec, sq.buf, sq.wqe_cnt, sq.stride, rq.buf, rq.wqe_cnt, rq.stride, bf.reg,
            bf.size, comp_mask, uar_mmap_offset, tirn, tisn, rqn, sqn, tir_icm_addr),
        fields!(mlx5dv_cq; buf, dbrec, cqe_cnt, cqe_size, cq_uar, cqn, comp_mask),
        fields!(mlx5dv_srq; buf, dbrec, stride, head, tail, comp_mask, srqn),
        fields!(mlx5dv_rwq; buf, dbrec, wqe_cnt, stride, comp_mask),
        fields!(mlx5dv_striding_rq_init_attr;
            single_stride_log_num_of_bytes, single_wqe_log_num_of_strides, two_byte_shift_en),
        fields!(mlx5dv_wq_init_attr; comp_mask, striding_rq_attrs),
        fields!(mlx5dv_obj;
            qp.r#in, qp.out, cq.r#in, cq.out, srq.r#in, srq.out, rwq.r#in, rwq.out,
            dm.r#in, dm.out, ah.r#in, ah.out, pd.r#in, pd.out),
        fields!(mlx5dv_clock_info; nsec, last_cycles, frac, mult, shift, mask),
        fields!(mlx5dv_cq_init_attr; comp_mask, cqe_comp_res_format, flags, cqe_size),
        fields!(mlx5dv_ctx_allocators; alloc, free, data),
        fields!(ibv_parent_domain_init_attr; pd, td, comp_mask, alloc, free, pd_context),
        fields!(mlx5dv_ah; av, comp_mask),
        fields!(mlx5dv_dm; buf, length, comp_mask, remote_va),
        fields!(mlx5dv_dc_init_attr; dc_type, dct_access_key),
        fields!(mlx5dv_qp_init_attr; comp_mask, create_flags, dc_init_attr, send_ops_flags),
        fields!(ibv_global_route; dgid, flow_label, sgid_index, hop_limit, traffic_class),
        fields!(ibv_ah_attr; grh, dlid, sl, src_path_bits, static_rate, is_global, port_num),
        fields!(rdma_event_channel; fd),
        fields!(rdma_conn_param;
            private_data, private_data_len, responder_resources, initiator_depth,
            flow_control, retry_count, rnr_retry_count, srq, qp_num),
        fields!(rdma_ud_param; private_data, private_data_len, ah_attr, qp_num, qkey),
        fields!(rdma_cm_event; id, listen_id, event, status, param),
        fields!(rdma_cm_id;
            verbs, channel, context, qp, route, ps, port_num, event, send_cq_channel,
            send_cq, recv_cq_channel, recv_cq, srq, pd, qp_type),
    ]
    .concat()
}

/// Header members that are union alternatives we do not declare, and the member of ours
/// whose bytes they share.
const UNION_ALTERNATIVES: [(&str, &str, &str); 3] = [
    ("mlx5dv_dc_init_attr", "dci_streams", "dct_access_key"),
    ("rdma_cm_event", "param.conn", "param"),
    ("rdma_cm_event", "param.ud", "param"),
];

#[test]
#[cfg_attr(
    not(rdma_headers),
    ignore = "install libibverbs-dev to compare with rdma-core"
)]
fn ffi_struct_sizes_match_the_headers() {
    let theirs = golden::ffi_structs();
    let ours = our_structs();
    let names = |it: &mut dyn Iterator<Item = &'static str>| it.collect::<BTreeSet<_>>();
    assert_eq!(
        names(&mut theirs.iter().map(|s| s.strct)),
        names(&mut ours.iter().map(|s| s.0)),
        "every checked struct is ours and every one of ours is checked"
    );
    for s in &theirs {
        let (_, size) = ours.iter().find(|o| o.0 == s.strct).unwrap();
        assert_eq!(*size, s.size, "sizeof(struct {})", s.strct);
    }
}

#[test]
#[cfg_attr(
    not(rdma_headers),
    ignore = "install libibverbs-dev to compare with rdma-core"
)]
fn every_ffi_member_sits_where_the_header_puts_it() {
    let ours = our_fields();
    let theirs = golden::ffi_fields();
    let primary: BTreeSet<_> = theirs
        .iter()
        .filter(|f| f.primary)
        .map(|f| (f.strct, f.field.to_string()))
        .collect();
    let declared: BTreeSet<_> = ours.iter().map(|o| (o.0, o.1.clone())).collect();
    assert_eq!(primary, declared, "the header's members are exactly ours");
    for f in &theirs {
        let (name, exact) = match UNION_ALTERNATIVES
            .iter()
            .find(|(s, alt, _)| *s == f.strct && *alt == f.field)
        {
            Some((_, _, ours)) => (*ours, false),
            None => (f.field, true),
        };
        let o = ours
            .iter()
            .find(|o| o.0 == f.strct && o.1 == name)
            .unwrap_or_else(|| panic!("{}.{} has no counterpart", f.strct, f.field));
        if exact {
            assert_eq!((o.2, o.3), (f.offset, f.size), "{}.{}", f.strct, f.field);
        } else {
            assert!(
                o.2 <= f.offset && f.offset + f.size <= o.2 + o.3,
                "{}.{} is not inside {}",
                f.strct,
                f.field,
                name
            );
        }
    }
}

/// The shim's table is complete: the primary members of each struct cover it, leaving only
/// alignment padding (so no member can be missing from the comparison above).
#[test]
#[cfg_attr(
    not(rdma_headers),
    ignore = "install libibverbs-dev to compare with rdma-core"
)]
fn the_ffi_members_cover_each_struct() {
    let fields = golden::ffi_fields();
    for s in golden::ffi_structs() {
        assert_eq!(golden::tiling_error(&fields, &s, true), None);
    }
}

#[test]
#[cfg_attr(
    not(rdma_headers),
    ignore = "install libibverbs-dev to compare with rdma-core"
)]
fn ffi_constants_match_the_headers() {
    let mut ours: Vec<(&str, i64)> = vec![
        (
            "MLX5DV_CONTEXT_MASK_CQE_COMPRESION",
            MLX5DV_CONTEXT_MASK_CQE_COMPRESION as i64,
        ),
        (
            "MLX5DV_CONTEXT_MASK_DC_ODP_CAPS",
            MLX5DV_CONTEXT_MASK_DC_ODP_CAPS as i64,
        ),
        (
            "MLX5DV_CONTEXT_MASK_DCI_STREAMS",
            MLX5DV_CONTEXT_MASK_DCI_STREAMS as i64,
        ),
        (
            "MLX5DV_CONTEXT_MASK_STRIDING_RQ",
            MLX5DV_CONTEXT_MASK_STRIDING_RQ as i64,
        ),
        (
            "MLX5DV_CONTEXT_FLAGS_ENHANCED_MPW",
            MLX5DV_CONTEXT_FLAGS_ENHANCED_MPW as i64,
        ),
        (
            "MLX5DV_CONTEXT_FLAGS_CQE_V1",
            MLX5DV_CONTEXT_FLAGS_CQE_V1 as i64,
        ),
        (
            "MLX5DV_CONTEXT_FLAGS_CQE_128B_COMP",
            MLX5DV_CONTEXT_FLAGS_CQE_128B_COMP as i64,
        ),
        (
            "MLX5DV_CONTEXT_FLAGS_CQE_128B_PAD",
            MLX5DV_CONTEXT_FLAGS_CQE_128B_PAD as i64,
        ),
        (
            "MLX5DV_CQ_INIT_ATTR_MASK_CQE_SIZE",
            MLX5DV_CQ_INIT_ATTR_MASK_CQE_SIZE as i64,
        ),
        (
            "MLX5DV_CQ_INIT_ATTR_MASK_COMPRESSED_CQE",
            MLX5DV_CQ_INIT_ATTR_MASK_COMPRESSED_CQE as i64,
        ),
        (
            "MLX5DV_QP_INIT_ATTR_MASK_QP_CREATE_FLAGS",
            MLX5DV_QP_INIT_ATTR_MASK_QP_CREATE_FLAGS as i64,
        ),
        (
            "MLX5DV_QP_CREATE_DISABLE_SCATTER_TO_CQE",
            MLX5DV_QP_CREATE_DISABLE_SCATTER_TO_CQE.into(),
        ),
        (
            "MLX5DV_QP_INIT_ATTR_MASK_DC",
            MLX5DV_QP_INIT_ATTR_MASK_DC as i64,
        ),
        (
            "MLX5DV_QP_INIT_ATTR_MASK_DCI_STREAMS",
            MLX5DV_QP_INIT_ATTR_MASK_DCI_STREAMS as i64,
        ),
        ("MLX5DV_DCTYPE_DCT", MLX5DV_DCTYPE_DCT.into()),
        ("MLX5DV_DCTYPE_DCI", MLX5DV_DCTYPE_DCI.into()),
        (
            "MLX5DV_CTX_ATTR_BUF_ALLOCATORS",
            MLX5DV_CTX_ATTR_BUF_ALLOCATORS.into(),
        ),
        ("MLX5DV_RES_TYPE_QP", MLX5DV_RES_TYPE_QP as i64),
        ("MLX5DV_RES_TYPE_RWQ", MLX5DV_RES_TYPE_RWQ as i64),
        ("MLX5DV_RES_TYPE_DBR", MLX5DV_RES_TYPE_DBR as i64),
        ("MLX5DV_RES_TYPE_SRQ", MLX5DV_RES_TYPE_SRQ as i64),
        ("MLX5DV_RES_TYPE_CQ", MLX5DV_RES_TYPE_CQ as i64),
        (
            "IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS",
            Mask::IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS.0.into(),
        ),
        (
            "IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT",
            Mask::IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT.0.into(),
        ),
        ("MLX5DV_OBJ_AH", MLX5DV_OBJ_AH as i64),
        ("MLX5DV_OBJ_DM", MLX5DV_OBJ_DM as i64),
        ("MLX5DV_OBJ_QP", MLX5DV_OBJ_QP as i64),
        ("MLX5DV_OBJ_CQ", MLX5DV_OBJ_CQ as i64),
        ("MLX5DV_OBJ_SRQ", MLX5DV_OBJ_SRQ as i64),
        ("MLX5DV_OBJ_RWQ", MLX5DV_OBJ_RWQ as i64),
        (
            "MLX5DV_WQ_INIT_ATTR_MASK_STRIDING_RQ",
            MLX5DV_WQ_INIT_ATTR_MASK_STRIDING_RQ as i64,
        ),
        ("MLX5DV_SRQ_MASK_SRQN", MLX5DV_SRQ_MASK_SRQN as i64),
        (
            "IBV_LINK_LAYER_INFINIBAND",
            IBV_LINK_LAYER_INFINIBAND.into(),
        ),
        ("IBV_LINK_LAYER_ETHERNET", IBV_LINK_LAYER_ETHERNET.into()),
        ("RDMA_OPTION_ID", RDMA_OPTION_ID.into()),
        ("RDMA_OPTION_ID_TOS", RDMA_OPTION_ID_TOS.into()),
        (
            "RDMA_OPTION_ID_ACK_TIMEOUT",
            RDMA_OPTION_ID_ACK_TIMEOUT.into(),
        ),
    ];
    // `enum rdma_cm_event_type`, every value by its C name.
    ours.extend(CmEvent::ALL.iter().map(|e| (e.name(), *e as i64)));
    let theirs = golden::ffi_constants();
    assert_eq!(
        theirs.len(),
        ours.len(),
        "every header constant is compared"
    );
    for v in theirs {
        let (_, value) = ours
            .iter()
            .find(|(name, _)| *name == v.name)
            .unwrap_or_else(|| panic!("header constant {} is not ours", v.name));
        assert_eq!(*value, v.value, "{}", v.name);
    }
}

/// `mlx5dv_dc_init_attr::dci` puts `struct mlx5dv_dci_streams` where the header's union puts
/// `dci_streams`: its two bytes at that member's offset, the rest of the union zero.
#[test]
#[cfg_attr(
    not(rdma_headers),
    ignore = "install libibverbs-dev to compare with rdma-core"
)]
fn dci_streams_land_where_the_header_puts_them() {
    let theirs = golden::ffi_fields();
    let at = |strct: &str, field: &str| {
        theirs
            .iter()
            .find(|f| f.strct == strct && f.field == field)
            .unwrap_or_else(|| panic!("{strct}.{field}"))
            .offset
    };
    let attr = mlx5dv_dc_init_attr::dci(mlx5dv_dci_streams {
        log_num_concurent: 5,
        log_num_errored: 3,
    });
    // SAFETY: a repr(C) struct of plain integers, read as its bytes.
    let bytes: [u8; size_of::<mlx5dv_dc_init_attr>()] = unsafe { core::mem::transmute(attr) };
    let union = at("mlx5dv_dc_init_attr", "dci_streams");
    let conc = union + at("mlx5dv_dci_streams", "log_num_concurent");
    let errored = union + at("mlx5dv_dci_streams", "log_num_errored");
    assert_eq!((bytes[conc], bytes[errored]), (5, 3));
    assert_eq!(attr.dc_type, MLX5DV_DCTYPE_DCI);
    let rest = offset_of!(mlx5dv_dc_init_attr, dct_access_key)..size_of::<mlx5dv_dc_init_attr>();
    let zero = rest
        .filter(|&i| i != conc && i != errored)
        .all(|i| bytes[i] == 0);
    assert!(zero, "the rest of the union is zero: {bytes:?}");
}
