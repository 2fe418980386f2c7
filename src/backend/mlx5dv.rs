//! The few `mlx5dv_*` declarations of rdma-core's `<infiniband/mlx5dv.h>` (v44) the `verbs`
//! backend uses, written by hand (`rdma-sys` has no mlx5dv bindings) and linked to libmlx5.
//!
//! Every struct here has the C name and field names of the header and is compared with it
//! field by field (`offsetof`, `sizeof`) by `tests/verbs_layout.rs` through the golden shim;
//! every constant likewise. The structs are public so that test can see them; the functions
//! are the backend's own.
#![allow(non_camel_case_types, missing_docs)]

use core::ffi::{c_int, c_void};

use crate::backend::ffi::{ibv_ah, ibv_cq_ex, ibv_dm, ibv_srq, ibv_wq, ibv_wq_init_attr};
use crate::backend::ffi::{
    ibv_context, ibv_cq, ibv_cq_init_attr_ex, ibv_device, ibv_qp, ibv_qp_init_attr_ex,
};

/// `MLX5DV_CONTEXT_MASK_CQE_COMPRESION` (sic): ask for `cqe_comp_caps`.
pub const MLX5DV_CONTEXT_MASK_CQE_COMPRESION: u64 = 1 << 0;
/// `MLX5DV_CONTEXT_MASK_DC_ODP_CAPS`: ask for `dc_odp_caps`.
pub const MLX5DV_CONTEXT_MASK_DC_ODP_CAPS: u64 = 1 << 7;
/// `MLX5DV_CONTEXT_MASK_DCI_STREAMS`: ask for `dci_streams_caps`.
pub const MLX5DV_CONTEXT_MASK_DCI_STREAMS: u64 = 1 << 11;
/// `MLX5DV_CONTEXT_MASK_STRIDING_RQ`: ask for `striding_rq_caps`.
pub const MLX5DV_CONTEXT_MASK_STRIDING_RQ: u64 = 1 << 2;
/// `MLX5DV_CONTEXT_FLAGS_ENHANCED_MPW`: enhanced multi-packet send (opcode 0x29).
pub const MLX5DV_CONTEXT_FLAGS_ENHANCED_MPW: u64 = 1 << 3;
/// `MLX5DV_CONTEXT_FLAGS_CQE_V1`: CQE version 1 (`srqn_uidx` carries the user index).
pub const MLX5DV_CONTEXT_FLAGS_CQE_V1: u64 = 1 << 0;
/// `MLX5DV_CONTEXT_FLAGS_CQE_128B_COMP`: 128-byte CQEs can be compressed.
pub const MLX5DV_CONTEXT_FLAGS_CQE_128B_COMP: u64 = 1 << 4;
/// `MLX5DV_CONTEXT_FLAGS_CQE_128B_PAD`: 128-byte CQE padding is supported.
pub const MLX5DV_CONTEXT_FLAGS_CQE_128B_PAD: u64 = 1 << 5;

/// `MLX5DV_CONTEXT_FLAGS_BLUEFLAME`: the device has BlueFlame registers. Set by rdma-core
/// releases from 2025 on; not in the v44 header (so not checked by the golden shim), and a
/// v44 library never sets it.
pub const MLX5DV_CONTEXT_FLAGS_BLUEFLAME: u64 = 1 << 8;

/// `MLX5DV_CQ_INIT_ATTR_MASK_COMPRESSED_CQE`: `mlx5dv_cq_init_attr.cqe_comp_res_format`
/// is set: the CQ may receive compressed CQEs (basic layout) in that responder format.
pub const MLX5DV_CQ_INIT_ATTR_MASK_COMPRESSED_CQE: u64 = 1 << 0;
/// `MLX5DV_CQ_INIT_ATTR_MASK_CQE_SIZE`: `mlx5dv_cq_init_attr.cqe_size` is set.
pub const MLX5DV_CQ_INIT_ATTR_MASK_CQE_SIZE: u64 = 1 << 2;

/// `MLX5DV_QP_INIT_ATTR_MASK_QP_CREATE_FLAGS`: `mlx5dv_qp_init_attr.create_flags` is set.
pub const MLX5DV_QP_INIT_ATTR_MASK_QP_CREATE_FLAGS: u64 = 1 << 0;
/// `MLX5DV_QP_CREATE_DISABLE_SCATTER_TO_CQE`: small receives and READ results always land in
/// the buffers, never inline in the CQE (set unless `QpConfig::scatter_to_cqe`).
pub const MLX5DV_QP_CREATE_DISABLE_SCATTER_TO_CQE: u32 = 1 << 3;
pub const MLX5DV_QP_INIT_ATTR_MASK_DC: u64 = 1 << 1;
/// `MLX5DV_QP_INIT_ATTR_MASK_DCI_STREAMS`: `dc_init_attr.dci_streams` is set (a DCI).
pub const MLX5DV_QP_INIT_ATTR_MASK_DCI_STREAMS: u64 = 1 << 3;
pub const MLX5DV_DCTYPE_DCT: u32 = 1;
pub const MLX5DV_DCTYPE_DCI: u32 = 2;

/// `MLX5DV_OBJ_QP`.
pub const MLX5DV_OBJ_QP: u64 = 1 << 0;
/// `MLX5DV_OBJ_CQ`.
pub const MLX5DV_OBJ_CQ: u64 = 1 << 1;
/// `MLX5DV_OBJ_SRQ`.
pub const MLX5DV_OBJ_SRQ: u64 = 1 << 2;
/// `MLX5DV_OBJ_RWQ`.
pub const MLX5DV_OBJ_RWQ: u64 = 1 << 3;
/// `MLX5DV_WQ_INIT_ATTR_MASK_STRIDING_RQ`: `mlx5dv_wq_init_attr.striding_rq_attrs` is set.
pub const MLX5DV_WQ_INIT_ATTR_MASK_STRIDING_RQ: u64 = 1 << 0;
pub const MLX5DV_OBJ_AH: u64 = 1 << 5;
/// `MLX5DV_OBJ_DM`.
pub const MLX5DV_OBJ_DM: u64 = 1 << 4;
/// `MLX5DV_SRQ_MASK_SRQN`: ask `mlx5dv_init_obj` for `mlx5dv_srq.srqn`.
pub const MLX5DV_SRQ_MASK_SRQN: u64 = 1 << 0;

/// `IBV_LINK_LAYER_INFINIBAND` (an anonymous enum of `verbs.h` that `rdma-sys` omits).
pub const IBV_LINK_LAYER_INFINIBAND: u8 = 1;
/// `IBV_LINK_LAYER_ETHERNET`.
pub const IBV_LINK_LAYER_ETHERNET: u8 = 2;

/// `struct mlx5dv_cqe_comp_caps`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct mlx5dv_cqe_comp_caps {
    pub max_num: u32,
    pub supported_format: u32,
}

/// `struct mlx5dv_sw_parsing_caps`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct mlx5dv_sw_parsing_caps {
    pub sw_parsing_offloads: u32,
    pub supported_qpts: u32,
}

/// `struct mlx5dv_striding_rq_caps`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct mlx5dv_striding_rq_caps {
    pub min_single_stride_log_num_of_bytes: u32,
    pub max_single_stride_log_num_of_bytes: u32,
    pub min_single_wqe_log_num_of_strides: u32,
    pub max_single_wqe_log_num_of_strides: u32,
    pub supported_qpts: u32,
}

/// `struct mlx5dv_sig_caps`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct mlx5dv_sig_caps {
    pub block_size: u64,
    pub block_prot: u32,
    pub t10dif_bg: u16,
    pub crc_type: u16,
}

/// `struct mlx5dv_dci_streams_caps`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct mlx5dv_dci_streams_caps {
    pub max_log_num_concurent: u8,
    pub max_log_num_errored: u8,
}

/// `struct mlx5dv_crypto_caps`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct mlx5dv_crypto_caps {
    pub failed_selftests: u16,
    pub crypto_engines: u8,
    pub wrapped_import_method: u8,
    pub log_max_num_deks: u8,
    pub flags: u32,
}

/// `struct mlx5dv_context`: what `mlx5dv_query_device` fills (the blocks selected by
/// `comp_mask`; the library clears the bits it does not fill).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct mlx5dv_context {
    pub version: u8,
    pub flags: u64,
    pub comp_mask: u64,
    pub cqe_comp_caps: mlx5dv_cqe_comp_caps,
    pub sw_parsing_caps: mlx5dv_sw_parsing_caps,
    pub striding_rq_caps: mlx5dv_striding_rq_caps,
    pub tunnel_offloads_caps: u32,
    pub max_dynamic_bfregs: u32,
    pub max_clock_info_update_nsec: u64,
    pub flow_action_flags: u32,
    pub dc_odp_caps: u32,
    pub hca_core_clock: *mut c_void,
    pub num_lag_ports: u8,
    pub sig_caps: mlx5dv_sig_caps,
    pub dci_streams_caps: mlx5dv_dci_streams_caps,
    pub max_wr_memcpy_length: usize,
    pub crypto_caps: mlx5dv_crypto_caps,
}

/// `struct mlx5dv_qp`, anonymous `sq` / `rq` member.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct mlx5dv_qp_wq {
    pub buf: *mut c_void,
    pub wqe_cnt: u32,
    pub stride: u32,
}

/// `struct mlx5dv_qp`, anonymous `bf` member.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct mlx5dv_qp_bf {
    pub reg: *mut c_void,
    pub size: u32,
}

/// `struct mlx5dv_qp`: a QP's rings, doorbell record and BlueFlame register.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct mlx5dv_qp {
    pub dbrec: *mut u32,
    pub sq: mlx5dv_qp_wq,
    pub rq: mlx5dv_qp_wq,
    pub bf: mlx5dv_qp_bf,
    pub comp_mask: u64,
    pub uar_mmap_offset: libc::off_t,
    pub tirn: u32,
    pub tisn: u32,
    pub rqn: u32,
    pub sqn: u32,
    pub tir_icm_addr: u64,
}

/// `struct mlx5dv_cq`: a CQ's buffer, doorbell record, UAR page and number.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct mlx5dv_cq {
    pub buf: *mut c_void,
    pub dbrec: *mut u32,
    pub cqe_cnt: u32,
    pub cqe_size: u32,
    pub cq_uar: *mut c_void,
    pub cqn: u32,
    pub comp_mask: u64,
}

/// `struct mlx5dv_srq`: an SRQ's ring, doorbell record and number.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct mlx5dv_srq {
    pub buf: *mut c_void,
    pub dbrec: *mut u32,
    pub stride: u32,
    pub head: u32,
    pub tail: u32,
    pub comp_mask: u64,
    pub srqn: u32,
}

/// `struct mlx5dv_dm`: the process's write-combining mapping of a device-memory allocation
/// (`buf`, `length` bytes); `remote_va` only with `MLX5DV_DM_MASK_REMOTE_VA` in `comp_mask`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct mlx5dv_dm {
    pub buf: *mut c_void,
    pub length: u64,
    pub comp_mask: u64,
    pub remote_va: u64,
}

/// `struct mlx5dv_obj`, one `{in, out}` member. The members this backend never fills
/// (`rwq`, `pd`) are typed as untyped pointers: only their layout matters.
/// `struct mlx5dv_ah`: the address handle's own 48-byte `mlx5_wqe_av`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct mlx5dv_ah {
    pub av: *mut crate::prm::Av,
    pub comp_mask: u64,
}

#[repr(C)]
pub struct mlx5dv_obj_pair<I, O> {
    pub r#in: *mut I,
    pub out: *mut O,
}

/// `struct mlx5dv_obj`: the objects `mlx5dv_init_obj` describes.
#[repr(C)]
pub struct mlx5dv_obj {
    pub qp: mlx5dv_obj_pair<ibv_qp, mlx5dv_qp>,
    pub cq: mlx5dv_obj_pair<ibv_cq, mlx5dv_cq>,
    pub srq: mlx5dv_obj_pair<ibv_srq, mlx5dv_srq>,
    pub rwq: mlx5dv_obj_pair<ibv_wq, mlx5dv_rwq>,
    pub dm: mlx5dv_obj_pair<ibv_dm, mlx5dv_dm>,
    pub ah: mlx5dv_obj_pair<ibv_ah, mlx5dv_ah>,
    pub pd: mlx5dv_obj_pair<c_void, c_void>,
}

/// `struct mlx5dv_rwq`: a work queue's ring as `mlx5dv_init_obj` describes it.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct mlx5dv_rwq {
    pub buf: *mut c_void,
    pub dbrec: *mut u32,
    pub wqe_cnt: u32,
    pub stride: u32,
    pub comp_mask: u64,
}

/// `struct mlx5dv_striding_rq_init_attr`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct mlx5dv_striding_rq_init_attr {
    pub single_stride_log_num_of_bytes: u32,
    pub single_wqe_log_num_of_strides: u32,
    pub two_byte_shift_en: u8,
}

/// `struct mlx5dv_wq_init_attr`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct mlx5dv_wq_init_attr {
    pub comp_mask: u64,
    pub striding_rq_attrs: mlx5dv_striding_rq_init_attr,
}

/// `struct mlx5dv_cq_init_attr`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct mlx5dv_cq_init_attr {
    pub comp_mask: u64,
    pub cqe_comp_res_format: u8,
    pub flags: u32,
    pub cqe_size: u16,
}

/// `struct mlx5dv_dc_init_attr` (the anonymous union of `dct_access_key` and
/// `dci_streams` is its largest member, `dct_access_key`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct mlx5dv_dc_init_attr {
    pub dc_type: u32,
    pub dct_access_key: u64,
}

/// `struct mlx5dv_dci_streams`: the union alternative of
/// [`mlx5dv_dc_init_attr::dct_access_key`] a DCI with streams fills.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct mlx5dv_dci_streams {
    pub log_num_concurent: u8,
    pub log_num_errored: u8,
}

impl mlx5dv_dc_init_attr {
    /// A DCI's attributes (`MLX5DV_DCTYPE_DCI`) with `streams` in the union: its first two
    /// bytes, the rest of the union zero.
    pub fn dci(streams: mlx5dv_dci_streams) -> Self {
        let mut union = [0u8; 8];
        union[0] = streams.log_num_concurent;
        union[1] = streams.log_num_errored;
        mlx5dv_dc_init_attr {
            dc_type: MLX5DV_DCTYPE_DCI,
            dct_access_key: u64::from_ne_bytes(union),
        }
    }
}

/// `struct mlx5dv_qp_init_attr`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct mlx5dv_qp_init_attr {
    pub comp_mask: u64,
    pub create_flags: u32,
    pub dc_init_attr: mlx5dv_dc_init_attr,
    pub send_ops_flags: u64,
}

/// `MLX5DV_RES_TYPE_QP` (mlx5dv.h, `RDMA_DRIVER_MLX5 << 32 | 1`): a parent domain's
/// allocator is asked for a QP buffer.
pub const MLX5DV_RES_TYPE_QP: u64 = 1 << 32 | 1;
/// `MLX5DV_RES_TYPE_RWQ`: a receive work queue's buffer.
pub const MLX5DV_RES_TYPE_RWQ: u64 = 1 << 32 | 2;
/// `MLX5DV_RES_TYPE_DBR`: one doorbell record (8 bytes, 8-byte aligned).
pub const MLX5DV_RES_TYPE_DBR: u64 = 1 << 32 | 3;
/// `MLX5DV_RES_TYPE_SRQ`: an SRQ buffer.
pub const MLX5DV_RES_TYPE_SRQ: u64 = 1 << 32 | 4;
/// `MLX5DV_RES_TYPE_CQ`: a CQ buffer.
pub const MLX5DV_RES_TYPE_CQ: u64 = 1 << 32 | 5;

/// `MLX5DV_CTX_ATTR_BUF_ALLOCATORS` (`enum mlx5dv_set_ctx_attr_type`): the attribute of
/// `mlx5dv_set_context_attr` that installs [`mlx5dv_ctx_allocators`].
pub const MLX5DV_CTX_ATTR_BUF_ALLOCATORS: u32 = 1;

/// `struct mlx5dv_ctx_allocators`: the callbacks through which libmlx5 allocates the QP, CQ,
/// SRQ and RWQ buffers and the doorbell-record pages of a context once installed
/// (providers/mlx5 buf.c `mlx5_alloc_buf_extern`, dbrec.c `__add_page`).
#[repr(C)]
#[derive(Debug)]
pub struct mlx5dv_ctx_allocators {
    pub alloc: Option<unsafe extern "C" fn(size: usize, priv_data: *mut c_void) -> *mut c_void>,
    pub free: Option<unsafe extern "C" fn(ptr: *mut c_void, priv_data: *mut c_void)>,
    pub data: *mut c_void,
}

/// `struct mlx5dv_clock_info`: the crate's [`ClockInfo`](crate::ClockInfo), declared with
/// the header's layout.
pub type mlx5dv_clock_info = crate::clock::ClockInfo;

#[link(name = "mlx5")]
extern "C" {
    /// Copies the kernel's clock-info page (no device access); 0 or an errno (`EINVAL`: the
    /// kernel mapped no page, `EOPNOTSUPP`: not mlx5).
    pub(crate) fn mlx5dv_get_clock_info(
        context: *mut ibv_context,
        clock_info: *mut mlx5dv_clock_info,
    ) -> c_int;
    /// Sets a context attribute (`MLX5DV_CTX_ATTR_BUF_ALLOCATORS`: copies the allocators);
    /// 0 or an errno (`EOPNOTSUPP`: not mlx5).
    pub(crate) fn mlx5dv_set_context_attr(
        context: *mut ibv_context,
        attr_type: u32,
        attr: *mut c_void,
    ) -> c_int;
    /// True if `device` is driven by the mlx5 provider.
    pub(crate) fn mlx5dv_is_supported(device: *mut ibv_device) -> bool;
    /// Fills `attrs_out` with the blocks requested in its `comp_mask`; 0 or an errno.
    pub(crate) fn mlx5dv_query_device(
        ctx_in: *mut ibv_context,
        attrs_out: *mut mlx5dv_context,
    ) -> c_int;
    /// Fills the `out` structs of the objects selected by `obj_type`; 0 or an errno.
    pub(crate) fn mlx5dv_init_obj(obj: *mut mlx5dv_obj, obj_type: u64) -> c_int;
    /// Creates a CQ with mlx5 options (CQE size); NULL with `errno` set on failure.
    pub(crate) fn mlx5dv_create_cq(
        context: *mut ibv_context,
        cq_attr: *mut ibv_cq_init_attr_ex,
        mlx5_cq_attr: *mut mlx5dv_cq_init_attr,
    ) -> *mut ibv_cq_ex;
    /// Creates a QP with mlx5 options (create flags); NULL with `errno` set on failure.
    pub(crate) fn mlx5dv_create_qp(
        context: *mut ibv_context,
        qp_attr: *mut ibv_qp_init_attr_ex,
        mlx5_qp_attr: *mut mlx5dv_qp_init_attr,
    ) -> *mut ibv_qp;
    /// Creates a work queue with mlx5 options (striding); NULL with `errno` set on failure.
    pub(crate) fn mlx5dv_create_wq(
        context: *mut ibv_context,
        wq_init_attr: *mut ibv_wq_init_attr,
        mlx5_wq_attr: *mut mlx5dv_wq_init_attr,
    ) -> *mut ibv_wq;
    /// Takes stream `stream_id` of a DCI out of error (an RTS2RTS through DevX); 0 or an
    /// errno (`EOPNOTSUPP`: the device's `max_log_num_errored` is 0 or the QP is not in
    /// RTS; `EINVAL`: not a DCI).
    pub(crate) fn mlx5dv_dci_stream_id_reset(qp: *mut ibv_qp, stream_id: u16) -> c_int;
}
