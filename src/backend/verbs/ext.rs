//! The extended verbs: provider ops libibverbs reaches only through its `verbs_context`,
//! called here through one checked lookup.
//!
//! None of these is an exported libibverbs symbol: verbs.h defines each as an inline
//! function that finds the `struct verbs_context` around the `ibv_context` and calls the
//! provider's op. `verbs_get_ctx` accepts the context only when `abi_compat` holds
//! `__VERBS_ABI_IS_EXTENDED`, which is `(void *)UINTPTR_MAX` (verbs.h; libibverbs' device.c
//! `verbs_init_context` stores it in every context it opens), and `verbs_get_ctx_op` only
//! when the provider's struct is new enough to have the op
//! (`sz >= sizeof(struct verbs_context) - offsetof(struct verbs_context, op)`: the struct
//! grows at its start) and the op is set.
//!
//! rdma-sys 0.3.0's wrappers (its `verbs_get_ctx`) compare `abi_compat` with `u32::MAX`
//! instead, so on a 64-bit host they never reach the provider: `ibv_query_device_ex` falls
//! back to `ibv_query_device` (every extended attribute reads 0) and the others answer
//! `EOPNOTSUPP`. [`lookup`] is the verbs.h rule; every extended verb this crate calls goes
//! through it. The crate calls exactly these of rdma-sys's lookup-based wrappers' verbs:
//! `ibv_query_device_ex`, `ibv_query_port` (verbs.h `___ibv_query_port`), `ibv_alloc_dm`,
//! `ibv_free_dm`, `ibv_reg_dm_mr`, `ibv_advise_mr`, `ibv_alloc_parent_domain`,
//! `ibv_modify_qp_rate_limit`, `ibv_open_xrcd`, `ibv_close_xrcd`, `ibv_create_srq_ex`
//! (for an XRC SRQ), `ibv_create_flow`, `ibv_destroy_flow`, `ibv_modify_wq`,
//! `ibv_destroy_wq`, `ibv_create_rwq_ind_table` and `ibv_destroy_rwq_ind_table` (work
//! queues are created by the exported `mlx5dv_create_wq`). It calls
//! none of the others (`ibv_create_cq_ex`: CQs come from the exported `mlx5dv_create_cq`;
//! `ibv_query_rt_values_ex`, `ibv_modify_cq`, `ibv_create_qp_ex`, `ibv_alloc_td`, ...), and
//! `clippy.toml` disallows every rdma-sys wrapper built on the broken lookup, so a new
//! caller has to come here. (`ibv_cq_ex_to_cq` is a pointer cast without a lookup.)

use core::ffi::{c_int, c_uint};
use core::mem::{offset_of, size_of};
use core::ptr::{self, NonNull};

use crate::backend::ffi::{
    _compat_ibv_port_attr, ib_uverbs_advise_mr_advice, ibv_alloc_dm_attr, ibv_context,
    ibv_device_attr_ex, ibv_dm, ibv_flow, ibv_flow_attr, ibv_mr, ibv_parent_domain_init_attr,
    ibv_pd, ibv_port_attr, ibv_qp, ibv_qp_rate_limit_attr, ibv_query_device, ibv_query_port,
    ibv_rwq_ind_table, ibv_rwq_ind_table_init_attr, ibv_sge, ibv_srq, ibv_srq_init_attr_ex, ibv_wq,
    ibv_wq_attr, ibv_xrcd, ibv_xrcd_init_attr, verbs_context,
};

/// `__VERBS_ABI_IS_EXTENDED` (verbs.h): `UINTPTR_MAX`, all bits of a pointer set.
const ABI_IS_EXTENDED: usize = usize::MAX;

/// The `verbs_context` of `ctx` when its provider has the op at `op_offset` in that struct
/// (verbs.h `verbs_get_ctx_op` without the last test, which the caller makes by reading the
/// op).
///
/// # Safety
/// `ctx` points to a live `ibv_context` that libibverbs opened (or a test built the same
/// way): when `abi_compat` is [`ABI_IS_EXTENDED`] it is the `context` field of a
/// `verbs_context` whose last `sz` bytes, up to and including `context`, are the
/// provider's.
unsafe fn lookup(ctx: *mut ibv_context, op_offset: usize) -> Option<NonNull<verbs_context>> {
    // SAFETY: a live context (the caller's promise).
    if unsafe { (*ctx).abi_compat } as usize != ABI_IS_EXTENDED {
        return None;
    }
    // SAFETY: an extended context is the `context` field of a `verbs_context` (verbs.h
    // `verbs_get_ctx`), so stepping back by that field's offset stays in the allocation.
    let vctx = unsafe { ctx.byte_sub(offset_of!(verbs_context, context)) }.cast::<verbs_context>();
    // SAFETY: `sz` sits just before `context`, inside every provider's struct.
    let sz = unsafe { (*vctx).sz };
    if sz < size_of::<verbs_context>() - op_offset {
        return None;
    }
    NonNull::new(vctx)
}

/// The provider's `$op` for the context `$ctx`, or `None` as verbs.h `verbs_get_ctx_op`
/// answers NULL. Only inside an `unsafe fn` whose caller promises what [`lookup`] needs.
macro_rules! op {
    ($ctx:expr, $op:ident) => {{
        let ctx: *mut ibv_context = $ctx;
        // SAFETY: the caller of the enclosing function promised a live libibverbs context.
        unsafe { lookup(ctx, offset_of!(verbs_context, $op)) }
            // SAFETY: `lookup` checked that the provider's struct reaches this field.
            .and_then(|vctx| unsafe { (*vctx.as_ptr()).$op })
    }};
}

/// Sets `errno` as the verbs.h wrappers do when the provider lacks an op.
fn set_errno(value: c_int) {
    // SAFETY: the calling thread's errno slot.
    unsafe { *libc::__errno_location() = value };
}

/// verbs.h `ibv_query_device_ex` with no input: the provider's `query_device_ex`, or, when
/// it has none or answers `EOPNOTSUPP` / `ENOSYS`, `attr` zeroed and `ibv_query_device`
/// into `attr.orig_attr`.
///
/// # Safety
/// `ctx` is an open device context.
pub(super) unsafe fn query_device_ex(
    ctx: *mut ibv_context,
    attr: &mut ibv_device_attr_ex,
) -> c_int {
    if let Some(query) = op!(ctx, query_device_ex) {
        // SAFETY: an open context and an out-struct of the size passed.
        let rc = unsafe { query(ctx, ptr::null(), attr, size_of::<ibv_device_attr_ex>()) };
        if rc != libc::EOPNOTSUPP && rc != libc::ENOSYS {
            return rc;
        }
    }
    // SAFETY: plain C data; zero is valid for every field.
    *attr = unsafe { core::mem::zeroed() };
    // SAFETY: an open context and a valid out-struct.
    unsafe { ibv_query_device(ctx, &mut attr.orig_attr) }
}

/// verbs.h `ibv_query_port` (`___ibv_query_port`): the provider's `query_port` with the
/// size of the whole struct, else `attr` zeroed and the compat entry point, which fills
/// the older, shorter layout.
///
/// # Safety
/// `ctx` is an open device context.
pub(super) unsafe fn query_port(
    ctx: *mut ibv_context,
    port: u8,
    attr: &mut ibv_port_attr,
) -> c_int {
    if let Some(query) = op!(ctx, query_port) {
        // SAFETY: an open context and an out-struct of the size passed.
        return unsafe { query(ctx, port, attr, size_of::<ibv_port_attr>()) };
    }
    // SAFETY: plain C data; zero is valid for every field.
    *attr = unsafe { core::mem::zeroed() };
    let compat = ptr::from_mut(attr).cast::<_compat_ibv_port_attr>();
    // SAFETY: the compat layout is a prefix of `ibv_port_attr` (verbs.h casts the same way).
    unsafe { ibv_query_port(ctx, port, compat) }
}

/// verbs.h `ibv_alloc_dm`: NULL with `errno` `EOPNOTSUPP` when the provider has no
/// `alloc_dm`.
///
/// # Safety
/// `ctx` is an open device context; `attr` is read during the call.
pub(super) unsafe fn alloc_dm(ctx: *mut ibv_context, attr: &mut ibv_alloc_dm_attr) -> *mut ibv_dm {
    match op!(ctx, alloc_dm) {
        // SAFETY: an open context and a valid attribute struct.
        Some(alloc) => unsafe { alloc(ctx, attr) },
        None => {
            set_errno(libc::EOPNOTSUPP);
            ptr::null_mut()
        }
    }
}

/// verbs.h `ibv_create_flow`: NULL with `errno` `EOPNOTSUPP` when the provider has no
/// `ibv_create_flow`.
///
/// # Safety
/// `qp` is a live QP of an open context; `attr` an `ibv_flow_attr` followed by its
/// `attr.size - sizeof(ibv_flow_attr)` bytes of specs.
pub(super) unsafe fn create_flow(qp: *mut ibv_qp, attr: *mut ibv_flow_attr) -> *mut ibv_flow {
    // SAFETY: a live QP names its context.
    match op!(unsafe { (*qp).context }, ibv_create_flow) {
        // SAFETY: a live QP and a complete attribute (the caller's promise).
        Some(create) => unsafe { create(qp, attr) },
        None => {
            set_errno(libc::EOPNOTSUPP);
            ptr::null_mut()
        }
    }
}

/// verbs.h `ibv_destroy_flow`: `EOPNOTSUPP` when the provider has no `ibv_destroy_flow`.
///
/// # Safety
/// `flow` is a live steering rule of an open context.
pub(super) unsafe fn destroy_flow(flow: *mut ibv_flow) -> c_int {
    // SAFETY: a live rule names its context.
    match op!(unsafe { (*flow).context }, ibv_destroy_flow) {
        // SAFETY: a live rule (the caller's promise).
        Some(destroy) => unsafe { destroy(flow) },
        None => libc::EOPNOTSUPP,
    }
}

/// verbs.h `ibv_modify_wq`: `EOPNOTSUPP` when the provider has no `modify_wq`.
///
/// # Safety
/// `wq` is a live work queue of an open context.
pub(super) unsafe fn modify_wq(wq: *mut ibv_wq, attr: &mut ibv_wq_attr) -> c_int {
    // SAFETY: a live work queue names its context.
    match op!(unsafe { (*wq).context }, modify_wq) {
        // SAFETY: a live work queue and a valid attribute (the caller's promise).
        Some(modify) => unsafe { modify(wq, attr) },
        None => libc::EOPNOTSUPP,
    }
}

/// verbs.h `ibv_destroy_wq`: `EOPNOTSUPP` when the provider has no `destroy_wq`.
///
/// # Safety
/// `wq` is a live work queue no indirection table names any more.
pub(super) unsafe fn destroy_wq(wq: *mut ibv_wq) -> c_int {
    // SAFETY: a live work queue names its context.
    match op!(unsafe { (*wq).context }, destroy_wq) {
        // SAFETY: a live work queue (the caller's promise).
        Some(destroy) => unsafe { destroy(wq) },
        None => libc::EOPNOTSUPP,
    }
}

/// verbs.h `ibv_create_rwq_ind_table`: NULL with `errno` `EOPNOTSUPP` when the provider has
/// no `create_rwq_ind_table`.
///
/// # Safety
/// `ctx` is an open device context; `attr` names `1 << log_ind_tbl_size` live work queues.
pub(super) unsafe fn create_rwq_ind_table(
    ctx: *mut ibv_context,
    attr: &mut ibv_rwq_ind_table_init_attr,
) -> *mut ibv_rwq_ind_table {
    match op!(ctx, create_rwq_ind_table) {
        // SAFETY: an open context and a valid attribute (the caller's promise).
        Some(create) => unsafe { create(ctx, attr) },
        None => {
            set_errno(libc::EOPNOTSUPP);
            ptr::null_mut()
        }
    }
}

/// verbs.h `ibv_destroy_rwq_ind_table`: `EOPNOTSUPP` when the provider has none.
///
/// # Safety
/// `table` is a live indirection table no QP uses any more.
pub(super) unsafe fn destroy_rwq_ind_table(table: *mut ibv_rwq_ind_table) -> c_int {
    // SAFETY: a live table names its context.
    match op!(unsafe { (*table).context }, destroy_rwq_ind_table) {
        // SAFETY: a live table (the caller's promise).
        Some(destroy) => unsafe { destroy(table) },
        None => libc::EOPNOTSUPP,
    }
}

/// verbs.h `ibv_free_dm`: `EOPNOTSUPP` when the provider has no `free_dm`.
///
/// # Safety
/// `dm` is a live allocation of an open context, not registered any more.
pub(super) unsafe fn free_dm(dm: *mut ibv_dm) -> c_int {
    // SAFETY: a live allocation names its context.
    match op!(unsafe { (*dm).context }, free_dm) {
        // SAFETY: a live allocation (the caller's promise).
        Some(free) => unsafe { free(dm) },
        None => libc::EOPNOTSUPP,
    }
}

/// verbs.h `ibv_reg_dm_mr`: NULL with `errno` `EOPNOTSUPP` when the provider has no
/// `reg_dm_mr`.
///
/// # Safety
/// `pd` and `dm` are live objects of the same open context.
pub(super) unsafe fn reg_dm_mr(
    pd: *mut ibv_pd,
    dm: *mut ibv_dm,
    offset: u64,
    len: usize,
    access: c_uint,
) -> *mut ibv_mr {
    // SAFETY: a live PD names its context.
    match op!(unsafe { (*pd).context }, reg_dm_mr) {
        // SAFETY: live objects (the caller's promise).
        Some(reg) => unsafe { reg(pd, dm, offset, len, access) },
        None => {
            set_errno(libc::EOPNOTSUPP);
            ptr::null_mut()
        }
    }
}

/// verbs.h `ibv_advise_mr`: `EOPNOTSUPP` when the provider has no `advise_mr`.
///
/// # Safety
/// `pd` is a live PD; `sges` name live registrations of it.
pub(super) unsafe fn advise_mr(
    pd: *mut ibv_pd,
    advice: ib_uverbs_advise_mr_advice::Type,
    flags: u32,
    sges: &mut [ibv_sge],
) -> c_int {
    let Ok(count) = u32::try_from(sges.len()) else {
        return libc::EINVAL;
    };
    // SAFETY: a live PD names its context.
    match op!(unsafe { (*pd).context }, advise_mr) {
        // SAFETY: a live PD and `count` scatter entries, read during the call.
        Some(advise) => unsafe { advise(pd, advice, flags, sges.as_mut_ptr(), count) },
        None => libc::EOPNOTSUPP,
    }
}

/// verbs.h `ibv_alloc_parent_domain`: NULL with `errno` `EOPNOTSUPP` when the provider has
/// no `alloc_parent_domain`.
///
/// # Safety
/// `ctx` is an open device context; what `attr` points to lives as long as libibverbs
/// documents for the domain.
pub(super) unsafe fn alloc_parent_domain(
    ctx: *mut ibv_context,
    attr: &mut ibv_parent_domain_init_attr,
) -> *mut ibv_pd {
    match op!(ctx, alloc_parent_domain) {
        // SAFETY: an open context and a valid attribute struct (the caller's promise).
        Some(alloc) => unsafe { alloc(ctx, attr) },
        None => {
            set_errno(libc::EOPNOTSUPP);
            ptr::null_mut()
        }
    }
}

/// verbs.h `ibv_modify_qp_rate_limit`: `EOPNOTSUPP` when the provider has no
/// `modify_qp_rate_limit`.
///
/// # Safety
/// `qp` is a live QP of an open context.
pub(super) unsafe fn modify_qp_rate_limit(
    qp: *mut ibv_qp,
    attr: &mut ibv_qp_rate_limit_attr,
) -> c_int {
    // SAFETY: a live QP names its context.
    match op!(unsafe { (*qp).context }, modify_qp_rate_limit) {
        // SAFETY: a live QP and a valid attribute struct (the caller's promise).
        Some(modify) => unsafe { modify(qp, attr) },
        None => libc::EOPNOTSUPP,
    }
}

/// verbs.h `ibv_open_xrcd`: NULL with `errno` `EOPNOTSUPP` when the provider has no
/// `open_xrcd`.
///
/// # Safety
/// `ctx` is an open device context; `attr` is read during the call.
pub(super) unsafe fn open_xrcd(
    ctx: *mut ibv_context,
    attr: &mut ibv_xrcd_init_attr,
) -> *mut ibv_xrcd {
    match op!(ctx, open_xrcd) {
        // SAFETY: an open context and a valid attribute struct.
        Some(open) => unsafe { open(ctx, attr) },
        None => {
            set_errno(libc::EOPNOTSUPP);
            ptr::null_mut()
        }
    }
}

/// verbs.h `ibv_close_xrcd`: `EOPNOTSUPP` when the provider has no `close_xrcd`.
///
/// # Safety
/// `xrcd` is a live XRC domain of an open context, with no SRQ or QP left in it.
pub(super) unsafe fn close_xrcd(xrcd: *mut ibv_xrcd) -> c_int {
    // SAFETY: a live domain names its context.
    match op!(unsafe { (*xrcd).context }, close_xrcd) {
        // SAFETY: a live domain (the caller's promise).
        Some(close) => unsafe { close(xrcd) },
        None => libc::EOPNOTSUPP,
    }
}

/// verbs.h `ibv_create_srq_ex` for an SRQ that is not basic (verbs.h hands a basic one,
/// `comp_mask` PD alone, to `ibv_create_srq` instead): NULL with `errno` `EOPNOTSUPP` when
/// the provider has no `create_srq_ex`.
///
/// # Safety
/// `ctx` is an open device context; the objects `attr` names are live objects of it.
pub(super) unsafe fn create_srq_ex(
    ctx: *mut ibv_context,
    attr: &mut ibv_srq_init_attr_ex,
) -> *mut ibv_srq {
    match op!(ctx, create_srq_ex) {
        // SAFETY: an open context and a valid attribute struct (the caller's promise).
        Some(create) => unsafe { create(ctx, attr) },
        None => {
            set_errno(libc::EOPNOTSUPP);
            ptr::null_mut()
        }
    }
}

#[cfg(test)]
mod tests;
