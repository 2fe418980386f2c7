//! Striding receive work queues (`mlx5dv_create_wq` with the striding attributes) and RSS
//! QPs (`ibv_create_rwq_ind_table`, `mlx5dv_create_qp` of `IBV_QPT_RAW_PACKET` with the
//! table and a Toeplitz hash) through libibverbs. Not run on hardware yet: the emulator has
//! no raw packet objects.

use core::ptr::NonNull;
use std::sync::Arc;

use crate::backend::ffi::{
    ibv_destroy_qp, ibv_qp, ibv_qp_init_attr_ex, ibv_qp_init_attr_mask, ibv_qp_type,
    ibv_rwq_ind_table, ibv_rwq_ind_table_init_attr, ibv_rx_hash_function_flags, ibv_wq,
    ibv_wq_attr, ibv_wq_attr_mask, ibv_wq_init_attr, ibv_wq_state, ibv_wq_type,
};
use crate::backend::mlx5dv::{
    mlx5dv_create_qp, mlx5dv_create_wq, mlx5dv_qp_init_attr, mlx5dv_rwq,
    mlx5dv_striding_rq_init_attr, mlx5dv_wq_init_attr, MLX5DV_OBJ_RWQ,
    MLX5DV_WQ_INIT_ATTR_MASK_STRIDING_RQ,
};
use crate::backend::{FlowHandle, RssObject, WqObject};
use crate::cq::mprq::WqDesc;
use crate::error::Error;
use crate::eth::{FlowRule, RxHashConfig, StridingConfig};
use crate::prm::Be32;

use super::objects::{empty_obj, init_obj, VerbsCq, VerbsPd};
use super::{failed, DeviceCtx};

/// A work queue; destroyed when dropped.
#[derive(Debug)]
pub(super) struct VerbsWq {
    wq: NonNull<ibv_wq>,
    _dev: Arc<DeviceCtx>,
}

// SAFETY: an `ibv_wq` is a handle libibverbs may use from any thread; the driver posts
// through the ring, not through the handle.
unsafe impl Send for VerbsWq {}
// SAFETY: as above.
unsafe impl Sync for VerbsWq {}

impl WqObject for VerbsWq {
    fn wqn(&self) -> u32 {
        // SAFETY: a live work queue.
        unsafe { (*self.wq.as_ptr()).wq_num }
    }

    fn ready(&self) -> Result<(), Error> {
        // SAFETY: plain C data.
        let mut attr: ibv_wq_attr = unsafe { core::mem::zeroed() };
        attr.attr_mask = ibv_wq_attr_mask::IBV_WQ_ATTR_STATE.0;
        attr.wq_state = ibv_wq_state::IBV_WQS_RDY;
        // SAFETY: a live work queue of an open context.
        let rc = unsafe { super::ext::modify_wq(self.wq.as_ptr(), &mut attr) };
        match rc {
            0 => Ok(()),
            rc => Err(failed("modify WQ", rc)),
        }
    }

    fn as_any(&self) -> &dyn core::any::Any {
        self
    }
}

impl Drop for VerbsWq {
    fn drop(&mut self) {
        // SAFETY: a work queue this handle created; the RSS QPs naming it hold it alive.
        unsafe { super::ext::destroy_wq(self.wq.as_ptr()) };
    }
}

/// Creates a striding work queue of `config` on `cq` and describes its ring.
pub(super) fn create_striding_wq(
    dev: &Arc<DeviceCtx>,
    pd: &VerbsPd,
    cq: &VerbsCq,
    config: &StridingConfig,
) -> Result<(Box<dyn WqObject>, WqDesc), Error> {
    // SAFETY: plain C data.
    let mut attr: ibv_wq_init_attr = unsafe { core::mem::zeroed() };
    attr.wq_type = ibv_wq_type::IBV_WQT_RQ;
    attr.max_wr = 1 << config.log_wqes;
    attr.max_sge = 1;
    attr.pd = pd.pd.as_ptr();
    attr.cq = cq.cq.as_ptr();
    let mut dv = mlx5dv_wq_init_attr {
        comp_mask: MLX5DV_WQ_INIT_ATTR_MASK_STRIDING_RQ,
        striding_rq_attrs: mlx5dv_striding_rq_init_attr {
            single_stride_log_num_of_bytes: config.log_stride_bytes.into(),
            single_wqe_log_num_of_strides: config.log_num_strides.into(),
            two_byte_shift_en: config.two_byte_shift.into(),
        },
    };
    // SAFETY: an open context, a live PD and CQ, valid attribute structs.
    let wq = unsafe { mlx5dv_create_wq(dev.ctx.as_ptr(), &mut attr, &mut dv) };
    let wq = NonNull::new(wq).ok_or_else(|| failed("create WQ", -1))?;
    let handle = VerbsWq {
        wq,
        _dev: dev.clone(),
    };
    // SAFETY: plain C data.
    let mut out: mlx5dv_rwq = unsafe { core::mem::zeroed() };
    let mut obj = empty_obj();
    obj.rwq.r#in = wq.as_ptr();
    obj.rwq.out = &mut out;
    init_obj(&mut obj, MLX5DV_OBJ_RWQ, "describe WQ")?;
    if out.stride != 32 || out.wqe_cnt != 1 << config.log_wqes {
        return Err(Error::Device {
            operation: "describe WQ",
            reason: format!(
                "unexpected ring: {} WQEs of {} bytes (expected {} of 32)",
                out.wqe_cnt,
                out.stride,
                1u32 << config.log_wqes
            ),
        });
    }
    let desc = WqDesc {
        buf: NonNull::new(out.buf.cast()).ok_or(Error::OutOfMemory)?,
        wqe_cnt: out.wqe_cnt,
        dbrec: NonNull::new(out.dbrec.cast::<Be32>()).ok_or(Error::OutOfMemory)?,
    };
    Ok((Box::new(handle), desc))
}

/// An RSS QP and its indirection table; destroyed (QP, then table) when dropped.
#[derive(Debug)]
pub(super) struct VerbsRss {
    qp: NonNull<ibv_qp>,
    table: NonNull<ibv_rwq_ind_table>,
    dev: Arc<DeviceCtx>,
}

// SAFETY: handles libibverbs may use from any thread.
unsafe impl Send for VerbsRss {}
// SAFETY: as above.
unsafe impl Sync for VerbsRss {}

impl RssObject for VerbsRss {
    fn qpn(&self) -> u32 {
        // SAFETY: a live QP.
        unsafe { (*self.qp.as_ptr()).qp_num }
    }

    fn create_flow(&self, port: u8, rule: &FlowRule) -> Result<FlowHandle, Error> {
        Ok(Box::new(super::flow::create_flow(
            &self.dev, self.qp, port, rule,
        )?))
    }
}

impl Drop for VerbsRss {
    fn drop(&mut self) {
        // SAFETY: objects this handle created, destroyed once, the QP before its table.
        unsafe {
            ibv_destroy_qp(self.qp.as_ptr());
            super::ext::destroy_rwq_ind_table(self.table.as_ptr());
        }
    }
}

/// Creates an RSS QP over `wqs` (this backend's work queues) with `hash`.
pub(super) fn create_rss_qp(
    dev: &Arc<DeviceCtx>,
    pd: &VerbsPd,
    wqs: &[&dyn WqObject],
    hash: Option<&RxHashConfig>,
) -> Result<Box<dyn RssObject>, Error> {
    if !wqs.len().is_power_of_two() {
        return Err(Error::InvalidArgument(
            "an indirection table of a power of two of work queues",
        ));
    }
    let mut table: Vec<*mut ibv_wq> = wqs
        .iter()
        .map(|w| {
            w.as_any()
                .downcast_ref::<VerbsWq>()
                .map(|v| v.wq.as_ptr())
                .ok_or(Error::InvalidArgument("a work queue of another backend"))
        })
        .collect::<Result<_, _>>()?;
    let mut attr = ibv_rwq_ind_table_init_attr {
        log_ind_tbl_size: wqs.len().trailing_zeros(),
        ind_tbl: table.as_mut_ptr(),
        comp_mask: 0,
    };
    // SAFETY: an open context; the table names live work queues of it.
    let ind = unsafe { super::ext::create_rwq_ind_table(dev.ctx.as_ptr(), &mut attr) };
    let ind = NonNull::new(ind).ok_or_else(|| failed("create indirection table", -1))?;
    // With no hash the kernel still wants the Toeplitz function and a 40-byte key (no
    // fields: every frame to entry 0).
    let mut key = hash.map_or([0u8; 40], |h| h.key);
    // SAFETY: plain C data.
    let mut qp_attr: ibv_qp_init_attr_ex = unsafe { core::mem::zeroed() };
    qp_attr.qp_type = ibv_qp_type::IBV_QPT_RAW_PACKET;
    qp_attr.comp_mask = ibv_qp_init_attr_mask::IBV_QP_INIT_ATTR_PD.0
        | ibv_qp_init_attr_mask::IBV_QP_INIT_ATTR_IND_TABLE.0
        | ibv_qp_init_attr_mask::IBV_QP_INIT_ATTR_RX_HASH.0;
    qp_attr.pd = pd.pd.as_ptr();
    qp_attr.rwq_ind_tbl = ind.as_ptr();
    qp_attr.rx_hash_conf.rx_hash_function =
        ibv_rx_hash_function_flags::IBV_RX_HASH_FUNC_TOEPLITZ.0 as u8;
    qp_attr.rx_hash_conf.rx_hash_key_len = key.len() as u8;
    qp_attr.rx_hash_conf.rx_hash_key = key.as_mut_ptr();
    qp_attr.rx_hash_conf.rx_hash_fields_mask = hash.map_or(0, |h| u64::from(h.fields));
    // SAFETY: plain C data.
    let mut dv: mlx5dv_qp_init_attr = unsafe { core::mem::zeroed() };
    // SAFETY: an open context, a live PD and table, valid attribute structs (the key
    // outlives the call, which copies it).
    let qp = unsafe { mlx5dv_create_qp(dev.ctx.as_ptr(), &mut qp_attr, &mut dv) };
    let Some(qp) = NonNull::new(qp) else {
        let err = failed("create RSS QP", -1);
        // SAFETY: the table just created, named by no QP.
        unsafe { super::ext::destroy_rwq_ind_table(ind.as_ptr()) };
        return Err(err);
    };
    Ok(Box::new(VerbsRss {
        qp,
        table: ind,
        dev: dev.clone(),
    }))
}
