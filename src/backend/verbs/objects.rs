//! The objects of the `verbs` backend (PD, MR, CQ, SRQ, QP): created through rdma-core,
//! described by `mlx5dv_init_obj` as the queue descriptions the data path takes, destroyed
//! in `Drop`.

use core::ffi::{c_int, c_void};
use core::ptr::NonNull;
use core::sync::atomic::{AtomicU8, Ordering};
use core::time::Duration;
use std::sync::Arc;

use rdma_sys::{ibv_access_flags, ibv_alloc_dm_attr, ibv_dm};
use rdma_sys::{
    ibv_ah, ibv_alloc_pd, ibv_cq, ibv_cq_ex_to_cq, ibv_cq_init_attr_ex, ibv_create_ah,
    ibv_create_cq_wc_flags, ibv_create_srq, ibv_dealloc_pd, ibv_dereg_mr, ibv_destroy_ah,
    ibv_destroy_cq, ibv_destroy_qp, ibv_destroy_srq, ibv_modify_qp, ibv_mr, ibv_pd, ibv_qp,
    ibv_qp_attr, ibv_qp_attr_mask, ibv_qp_create_send_ops_flags, ibv_qp_init_attr,
    ibv_qp_init_attr_ex, ibv_qp_init_attr_mask, ibv_qp_type, ibv_query_qp, ibv_reg_mr, ibv_sge,
    ibv_srq, ibv_srq_init_attr,
};

use super::attr::{self, Addressing};
use super::bfreg::{RegState, VerbsUar};
use super::events::VerbsChannel;
use super::ext;
use super::odp::{self, PdOdp};
use super::rings::{RingAllocator, RingBuffer};
use super::{failed, failed_registration, DeviceCtx, Verbs, VerbsDeviceInfo};
use crate::backend::mlx5dv::{
    mlx5dv_ah, mlx5dv_cq, mlx5dv_cq_init_attr, mlx5dv_create_cq, mlx5dv_create_qp,
    mlx5dv_dc_init_attr, mlx5dv_dci_stream_id_reset, mlx5dv_dci_streams, mlx5dv_dm,
    mlx5dv_get_clock_info, mlx5dv_init_obj, mlx5dv_obj, mlx5dv_qp, mlx5dv_qp_init_attr, mlx5dv_srq,
    MLX5DV_CQ_INIT_ATTR_MASK_COMPRESSED_CQE, MLX5DV_CQ_INIT_ATTR_MASK_CQE_SIZE, MLX5DV_DCTYPE_DCT,
    MLX5DV_OBJ_AH, MLX5DV_OBJ_CQ, MLX5DV_OBJ_DM, MLX5DV_OBJ_QP, MLX5DV_OBJ_SRQ,
    MLX5DV_QP_CREATE_DISABLE_SCATTER_TO_CQE, MLX5DV_QP_INIT_ATTR_MASK_DC,
    MLX5DV_QP_INIT_ATTR_MASK_DCI_STREAMS, MLX5DV_QP_INIT_ATTR_MASK_QP_CREATE_FLAGS,
    MLX5DV_SRQ_MASK_SRQN,
};
use crate::backend::{AhHandle, Backend, QpParts};
use crate::clock::ClockInfo;
use crate::cq::CqDesc;
use crate::cqz::CqeCompression;
use crate::error::{DmRefusal, Error};
use crate::event::AsyncEvent;
use crate::mem::MemOptions;
use crate::mmio::MappedDm;
use crate::prm::{Av, Be32, CqeCompLayout, SEND_WQE_BB, UAR_PAGE_SIZE};
use crate::rq::RqDesc;
use crate::sq::SqDesc;
use crate::types::{
    Access, AhAttr, CqConfig, DeviceCaps, GidEntry, PortInfo, QpConfig, QpPsn, QpSizes, Transition,
    Transport,
};

/// The UAR page holding `reg` and the register's offset in it.
fn uar_page(reg: *mut c_void) -> Result<(NonNull<u8>, usize), Error> {
    let addr = reg as usize;
    let base = NonNull::new((addr & !(UAR_PAGE_SIZE - 1)) as *mut u8)
        .ok_or(Error::InvalidArgument("mlx5dv_init_obj returned no UAR"))?;
    Ok((base, addr & (UAR_PAGE_SIZE - 1)))
}

fn init_obj(obj: &mut mlx5dv_obj, kind: u64, operation: &'static str) -> Result<(), Error> {
    // SAFETY: `obj` names live objects of this context and valid out-structs for `kind`.
    let rc = unsafe { mlx5dv_init_obj(obj, kind) };
    if rc != 0 {
        return Err(failed(operation, rc));
    }
    Ok(())
}

/// The mlx5dv attributes of a new QP: scatter-to-CQE off unless `scatter_to_cqe` asks for
/// it (then rdma-core's default stands: it asks the kernel for `MLX5_QP_FLAG_SCATTER_CQE`
/// unless `MLX5_SCATTER_TO_CQE=0` is set, and the kernel enables the responder side, `cs_res`;
/// the requester side, `cs_req`, needs `sq_sig_all` or `MLX5DV_QP_CREATE_ALLOW_SCATTER_TO_CQE`,
/// neither of which this crate sets), and the DC type and key of a DCI or DCT.
fn dv_qp_attr(dc: Option<mlx5dv_dc_init_attr>, scatter_to_cqe: bool) -> mlx5dv_qp_init_attr {
    dv_qp_attr_streams(dc, scatter_to_cqe, false)
}

/// [`dv_qp_attr`], with `MLX5DV_QP_INIT_ATTR_MASK_DCI_STREAMS` when `streams` (`dc` then
/// carries them: [`mlx5dv_dc_init_attr::dci`]).
fn dv_qp_attr_streams(
    dc: Option<mlx5dv_dc_init_attr>,
    scatter_to_cqe: bool,
    streams: bool,
) -> mlx5dv_qp_init_attr {
    mlx5dv_qp_init_attr {
        comp_mask: MLX5DV_QP_INIT_ATTR_MASK_QP_CREATE_FLAGS
            | dc.map_or(0, |_| MLX5DV_QP_INIT_ATTR_MASK_DC)
            | if streams {
                MLX5DV_QP_INIT_ATTR_MASK_DCI_STREAMS
            } else {
                0
            },
        create_flags: if scatter_to_cqe {
            0
        } else {
            MLX5DV_QP_CREATE_DISABLE_SCATTER_TO_CQE
        },
        dc_init_attr: dc.unwrap_or_default(),
        ..Default::default()
    }
}

fn empty_obj() -> mlx5dv_obj {
    // SAFETY: a struct of null pointer pairs.
    unsafe { core::mem::zeroed() }
}

/// A protection domain.
#[derive(Debug)]
pub struct VerbsPd {
    pd: NonNull<ibv_pd>,
    /// Its QPs' transports and on-demand registrations, shared with its parent domains.
    odp: Arc<PdOdp>,
    /// A parent domain's allocator ([`Backend::alloc_parent_domain`]), dropped after the
    /// domain is deallocated (field drops follow `Drop::drop`).
    rings: Option<Box<RingAllocator>>,
    _dev: Arc<DeviceCtx>,
}

impl VerbsPd {
    /// A parent domain's live ring allocations, in address order, each with the resource
    /// type libmlx5 named; empty for a plain PD.
    pub fn ring_buffers(&self) -> Vec<RingBuffer> {
        self.rings.as_ref().map_or_else(Vec::new, |r| r.buffers())
    }

    /// The error of a creation on this PD that returned NULL: its allocator's refusal
    /// first (a typed error), then the context's reading.
    fn creation_failed(&self, dev: &DeviceCtx, operation: &'static str) -> Error {
        self.rings
            .as_ref()
            .and_then(|r| r.take_refusal())
            .unwrap_or_else(|| dev.creation_failed(operation))
    }
}

/// A device-memory allocation (`ibv_alloc_dm`) and its write-combining mapping
/// (`mlx5dv_init_obj(MLX5DV_OBJ_DM)`); freed (`ibv_free_dm`, which unmaps it) when dropped.
#[derive(Debug)]
pub struct VerbsDm {
    /// Dropped before the allocation is freed (field order; `Drop` frees).
    map: MappedDm,
    dm: NonNull<ibv_dm>,
    _dev: Arc<DeviceCtx>,
}

// SAFETY: an `ibv_dm` may be used from any thread (libibverbs objects have no thread
// affinity); its mapping is `MappedDm`, which is `Send` and `Sync`.
unsafe impl Send for VerbsDm {}
// SAFETY: as for `Send`: shared use only stores through the mapping.
unsafe impl Sync for VerbsDm {}

impl crate::mmio::DmWindow for VerbsDm {
    fn write64(&self, offset: usize, bytes: [u8; 8]) {
        self.map.write64(offset, bytes);
    }

    fn write_line(&self, offset: usize, line: &[u64; 8]) {
        self.map.write_line(offset, line);
    }
}

impl Drop for VerbsDm {
    fn drop(&mut self) {
        // SAFETY: a live allocation with no registration left (each `DmRegion` holds it).
        let _ = unsafe { ext::free_dm(self.dm.as_ptr()) };
    }
}

/// A memory registration.
#[derive(Debug)]
pub struct VerbsMr {
    mr: NonNull<ibv_mr>,
    access: Access,
    _dev: Arc<DeviceCtx>,
}

/// A CQ.
#[derive(Debug)]
pub struct VerbsCq {
    cq: NonNull<ibv_cq>,
    cqn: u32,
    _dev: Arc<DeviceCtx>,
}

/// An address handle (`ibv_create_ah`): the AV bytes were copied out of it, it lives as long
/// as WQEs may use them.
#[derive(Debug)]
pub struct VerbsAh {
    ah: NonNull<ibv_ah>,
    _dev: Arc<DeviceCtx>,
}

/// An SRQ.
#[derive(Debug)]
pub struct VerbsSrq {
    srq: NonNull<ibv_srq>,
    _dev: Arc<DeviceCtx>,
}

/// An RC QP.
#[derive(Debug)]
pub struct VerbsQp {
    qp: NonNull<ibv_qp>,
    port: AtomicU8,
    bf_size: u32,
    shut_up_bf: bool,
    /// The BlueFlame register's address, and its state among the QPs using it.
    bf_reg: usize,
    bf_state: Arc<RegState>,
    /// `MLX5_SINGLE_THREADED=1`: a shared register keeps BlueFlame.
    single_threaded: bool,
    _dev: Arc<DeviceCtx>,
}

macro_rules! verbs_handle {
    ($($ty:ident { $field:ident: $destroy:ident }),* $(,)?) => {$(
        // SAFETY: verbs objects may be used and destroyed from any thread; the handle only
        // passes the pointer to slow-path calls.
        unsafe impl Send for $ty {}
        // SAFETY: as above.
        unsafe impl Sync for $ty {}

        impl Drop for $ty {
            fn drop(&mut self) {
                // SAFETY: created by this backend and destroyed once, before the context
                // (held by `_dev`). A failure cannot be reported from `Drop`; it is ignored.
                unsafe { $destroy(self.$field.as_ptr()) };
            }
        }
    )*};
}

verbs_handle! {
    VerbsPd { pd: ibv_dealloc_pd },
    VerbsMr { mr: ibv_dereg_mr },
    VerbsCq { cq: ibv_destroy_cq },
    VerbsSrq { srq: ibv_destroy_srq },
    VerbsAh { ah: ibv_destroy_ah },
}

// SAFETY: as for the handles above.
unsafe impl Send for VerbsQp {}
// SAFETY: as above.
unsafe impl Sync for VerbsQp {}

impl Drop for VerbsQp {
    fn drop(&mut self) {
        // SAFETY: created by this backend and destroyed once, before the context (held by
        // `_dev`). A failure cannot be reported from `Drop`; it is ignored.
        unsafe { ibv_destroy_qp(self.qp.as_ptr()) };
        self._dev.bf_regs.detach(self.bf_reg);
    }
}

impl VerbsCq {
    /// CQ number.
    pub fn cqn(&self) -> u32 {
        self.cqn
    }
}

impl VerbsQp {
    /// `ibv_modify_qp` with `attr` and `mask` as given, the port recorded when `mask` sets
    /// it.
    pub(crate) fn modify(
        &self,
        attr: &mut ibv_qp_attr,
        mask: ibv_qp_attr_mask,
    ) -> Result<(), Error> {
        // SAFETY: a live QP and a valid attribute struct with the fields `mask` names set.
        let rc = unsafe { ibv_modify_qp(self.qp.as_ptr(), attr, mask.0 as c_int) };
        if rc != 0 {
            return Err(failed("modify QP", rc));
        }
        if mask.0 & ibv_qp_attr_mask::IBV_QP_PORT.0 != 0 {
            self.port.store(attr.port_num, Ordering::Relaxed);
        }
        Ok(())
    }

    /// Why this QP rings 8-byte doorbells only, or `None` when it has BlueFlame.
    pub fn doorbell_only(&self) -> Option<&'static str> {
        if self.shut_up_bf {
            Some("MLX5_SHUT_UP_BF is set")
        } else if self.bf_size == 0 {
            Some("the device gave this QP no BlueFlame register (mlx5dv_qp.bf.size is 0)")
        } else if self.bf_state.is_shared() && !self.single_threaded {
            Some(
                "another live QP of this context uses the same BlueFlame register (libmlx5 \
                 would lock it; MLX5_SINGLE_THREADED=1 keeps BlueFlame there)",
            )
        } else {
            None
        }
    }

    /// The BlueFlame half size the device reported for this QP.
    pub fn bf_size(&self) -> u32 {
        self.bf_size
    }
}

/// Refuses DCI streams beyond the device's `dci_streams_caps` (`caps`: the largest log2
/// of concurrent and of errored streams), as v44 verbs.c `create_qp` does with EINVAL.
fn check_dci_streams(s: crate::types::DciStreams, caps: Option<(u8, u8)>) -> Result<(), Error> {
    match caps {
        None => Err(Error::Unsupported(
            "DCI streams (libmlx5 reports no dci_streams_caps)",
        )),
        Some((concurrent, errored)) if s.log_concurrent > concurrent || s.log_errored > errored => {
            Err(Error::InvalidArgument(
                "DCI streams beyond the device's dci_streams_caps (max_log_num_concurent, \
                 max_log_num_errored)",
            ))
        }
        Some(_) => Ok(()),
    }
}

/// The verbs send operations (`enum ibv_qp_create_send_ops_flags`) a QP of `transport` is
/// created for: the ones the driver posts on it (`crate::sizing::sq_overhead` names them),
/// within what libmlx5 allows the transport (`MLX5_SUPPORTED_SEND_OPS_FLAGS_UC`: no READ, no
/// atomics; `_UD`: SEND and SEND_WITH_IMM only; anything more is `EOPNOTSUPP` from
/// qp.c `mlx5_qp_fill_wr_pfns`). Atomic flags only on an RC QP of a device with atomics:
/// libmlx5 refuses them otherwise.
fn send_ops(transport: Transport, atomics: bool) -> u64 {
    use ibv_qp_create_send_ops_flags as op;
    let send = [op::IBV_QP_EX_WITH_SEND, op::IBV_QP_EX_WITH_SEND_WITH_IMM];
    let connected = [
        op::IBV_QP_EX_WITH_SEND_WITH_INV,
        op::IBV_QP_EX_WITH_RDMA_WRITE,
        op::IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM,
    ];
    let read = [op::IBV_QP_EX_WITH_RDMA_READ];
    let atomic = [
        op::IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP,
        op::IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD,
    ];
    let (connected, read, atomic): (&[op], &[op], &[op]) = match transport {
        Transport::Ud => (&[], &[], &[]),
        Transport::Uc => (&connected, &[], &[]),
        // A DCI takes RC's operations (`MLX5_SUPPORTED_SEND_OPS_FLAGS_DCI`); a DCT has no
        // send queue (and no verbs QP here yet).
        Transport::Rc | Transport::Dci | Transport::Dct => {
            (&connected, &read, if atomics { &atomic } else { &[] })
        }
    };
    send.iter()
        .chain(connected)
        .chain(read)
        .chain(atomic)
        .fold(0, |all, o| all | u64::from(o.0))
}

/// Refuses, before asking the device, what `mlx5dv_create_cq` cannot give: the enhanced
/// layout (verbs never sets the CQ context's `cqe_comp_layout`: it needs a DevX CQ), a
/// device without compression (`cqe_comp_caps.max_num` 0), a responder format it does not
/// list, and 128-byte CQEs without `MLX5DV_CONTEXT_FLAGS_CQE_128B_COMP`.
fn check_compression(
    info: &VerbsDeviceInfo,
    cqe_size: usize,
    c: CqeCompression,
) -> Result<(), Error> {
    if c.layout == CqeCompLayout::Enhanced {
        return Err(Error::Unsupported(
            "the enhanced CQE compression layout through verbs (it needs a DevX CQ)",
        ));
    }
    if info.cqe_comp_max_num == 0 {
        return Err(Error::Unsupported(
            "CQE compression on this device (cqe_comp_caps.max_num is 0)",
        ));
    }
    if info.cqe_comp_formats & u32::from(c.format.dv_bit()) == 0 {
        return Err(Error::Unsupported(
            "this mini-CQE format on this device (not in cqe_comp_caps.supported_format)",
        ));
    }
    if cqe_size == 128 && !info.cqe_128b_compression {
        return Err(Error::Unsupported(
            "compressed 128-byte CQEs on this device",
        ));
    }
    Ok(())
}

impl Verbs {
    /// A CQ through `mlx5dv_create_cq`, compressed or not.
    fn cq(
        &self,
        config: &CqConfig,
        channel: &VerbsChannel,
    ) -> Result<(VerbsCq, CqDesc, VerbsUar), Error> {
        let cqe_size = config.cqe_size;
        if config.entries > self.caps.max_cqe {
            return Err(Error::InvalidArgument("CQ larger than the device supports"));
        }
        // SAFETY: plain C data; zero is valid for every field.
        let mut attr: ibv_cq_init_attr_ex = unsafe { core::mem::zeroed() };
        attr.cqe = config.entries;
        attr.channel = channel.as_ptr();
        if config.timestamps {
            // rdma-core does not pass the flag to the kernel (the device writes its clock
            // into every CQE); what says the device has a clock is `hca_core_clock`.
            if self.info.hca_core_clock_khz == 0 || self.info.completion_timestamp_mask == 0 {
                return Err(Error::Unsupported(
                    "completion timestamps (no hca_core_clock)",
                ));
            }
            attr.wc_flags =
                u64::from(ibv_create_cq_wc_flags::IBV_WC_EX_WITH_COMPLETION_TIMESTAMP.0);
        }
        // Always through mlx5dv with the size given, so `MLX5_CQE_SIZE` cannot change it.
        let mut dv_attr = mlx5dv_cq_init_attr {
            comp_mask: MLX5DV_CQ_INIT_ATTR_MASK_CQE_SIZE,
            cqe_size: cqe_size as u16,
            ..Default::default()
        };
        if let Some(c) = config.compression {
            dv_attr.comp_mask |= MLX5DV_CQ_INIT_ATTR_MASK_COMPRESSED_CQE;
            dv_attr.cqe_comp_res_format = c.format.dv_bit();
        }
        // SAFETY: an open context, valid attribute structs.
        let cq_ex = unsafe { mlx5dv_create_cq(self.dev.ctx.as_ptr(), &mut attr, &mut dv_attr) };
        if cq_ex.is_null() {
            return Err(self.dev.creation_failed("create CQ"));
        }
        // SAFETY: an extended CQ starts with its `ibv_cq`.
        let cq = unsafe { NonNull::new_unchecked(ibv_cq_ex_to_cq(cq_ex)) };
        let mut handle = VerbsCq {
            cq,
            cqn: 0,
            _dev: self.dev.clone(),
        };
        // SAFETY: plain C data.
        let mut out: mlx5dv_cq = unsafe { core::mem::zeroed() };
        let mut obj = empty_obj();
        obj.cq.r#in = cq.as_ptr();
        obj.cq.out = &mut out;
        init_obj(&mut obj, MLX5DV_OBJ_CQ, "describe CQ")?;
        if out.cqe_size as usize != cqe_size {
            return Err(Error::InvalidArgument("the device chose another CQE size"));
        }
        handle.cqn = out.cqn;
        // The event channel hands back `cq_context`: make it the CQN.
        // SAFETY: a field of our live CQ that libibverbs only passes back to us.
        unsafe { (*cq.as_ptr()).cq_context = out.cqn as usize as *mut c_void };
        let (uar, _) = uar_page(out.cq_uar)?;
        let desc = CqDesc {
            buf: NonNull::new(out.buf.cast()).ok_or(Error::OutOfMemory)?,
            cqe_cnt: out.cqe_cnt,
            cqe_size,
            dbrec: NonNull::new(out.dbrec.cast::<Be32>()).ok_or(Error::OutOfMemory)?,
            cqn: out.cqn,
        };
        // SAFETY: the CQ's UAR page is mapped by the context, which the CQ (and so the
        // queue) keeps alive; the arm doorbell at 0x20 belongs to this CQ's writes.
        let uar = unsafe { VerbsUar::cq(uar) };
        Ok((handle, desc, uar))
    }
}

impl Verbs {
    /// The handle and keys of a registration just made on this context.
    fn registered(&self, mr: NonNull<ibv_mr>, access: Access) -> (VerbsMr, u32, u32) {
        // SAFETY: a live registration.
        let (lkey, rkey) = unsafe { ((*mr.as_ptr()).lkey, (*mr.as_ptr()).rkey) };
        let handle = VerbsMr {
            mr,
            access,
            _dev: self.dev.clone(),
        };
        (handle, lkey, rkey)
    }
}

impl Backend for Verbs {
    type Uar = VerbsUar;
    type Pd = VerbsPd;
    type Mr = VerbsMr;
    type Cq = VerbsCq;
    type Srq = VerbsSrq;
    type Qp = VerbsQp;
    type Channel = VerbsChannel;
    type Dm = VerbsDm;

    fn alloc_dm(&self, len: usize, log_align: u8) -> Result<(VerbsDm, usize), Error> {
        let mut attr = ibv_alloc_dm_attr {
            length: len,
            log_align_req: log_align.into(),
            comp_mask: 0,
        };
        // SAFETY: an open context and an attribute struct read during the call.
        let dm = unsafe { ext::alloc_dm(self.dev.ctx.as_ptr(), &mut attr) };
        let Some(dm) = NonNull::new(dm) else {
            let err = std::io::Error::last_os_error();
            return Err(match err.raw_os_error() {
                Some(libc::EOPNOTSUPP | libc::ENOSYS) => {
                    Error::DeviceMemory(DmRefusal::NoDeviceMemory)
                }
                Some(libc::ENOMEM) => Error::DeviceMemory(DmRefusal::Exhausted { len: len as u64 }),
                _ => failed("allocate device memory", 0),
            });
        };
        // SAFETY: plain C data, all-null is valid.
        let mut out: mlx5dv_dm = unsafe { core::mem::zeroed() };
        let mut obj = empty_obj();
        obj.dm.r#in = dm.as_ptr();
        obj.dm.out = &mut out;
        let mapped = init_obj(&mut obj, MLX5DV_OBJ_DM, "describe device memory").and_then(|()| {
            NonNull::new(out.buf.cast::<u8>()).ok_or(Error::InvalidArgument(
                "mlx5dv_init_obj returned no DM mapping",
            ))
        });
        let base = match mapped {
            Ok(base) => base,
            Err(e) => {
                // SAFETY: the allocation just made, never registered.
                let _ = unsafe { ext::free_dm(dm.as_ptr()) };
                return Err(e);
            }
        };
        let length = out.length as usize;
        Ok((
            VerbsDm {
                // SAFETY: libmlx5 mapped `length` bytes at `buf` (page aligned) for the life of
                // the allocation, which this value frees after dropping the mapping.
                map: unsafe { MappedDm::new(base, length) },
                dm,
                _dev: self.dev.clone(),
            },
            length,
        ))
    }

    fn reg_dm_mr(
        &self,
        pd: &VerbsPd,
        dm: &VerbsDm,
        offset: usize,
        len: usize,
        access: Access,
    ) -> Result<(VerbsMr, u32, u32), Error> {
        // libibverbs refuses a DM registration that is not zero based (`ibv_cmd_reg_dm_mr`).
        let flags = access.0 | ibv_access_flags::IBV_ACCESS_ZERO_BASED.0;
        // SAFETY: a live PD and allocation of this context; the range is inside it (checked
        // by the caller).
        let mr =
            unsafe { ext::reg_dm_mr(pd.pd.as_ptr(), dm.dm.as_ptr(), offset as u64, len, flags) };
        let mr = NonNull::new(mr).ok_or_else(|| failed("register device memory", 0))?;
        Ok(self.registered(mr, access))
    }

    fn name(&self) -> &str {
        &self.name
    }

    fn caps(&self) -> DeviceCaps {
        self.caps
    }

    fn default_port(&self) -> u8 {
        self.port
    }

    fn port(&self, port: u8) -> Result<PortInfo, Error> {
        let p = self.port_attr(port)?;
        Ok(PortInfo {
            lid: p.lid,
            gid: p.gid,
            // At most 255: `query_port` refuses a larger index.
            gid_index: p.gid_index as u8,
            active_mtu: p.active_mtu,
            max_msg_size: p.max_msg_size,
            roce: p.link_layer == super::LinkLayer::Ethernet,
            gid_table_len: p.gid_table_len,
        })
    }

    fn gid(&self, port: u8, index: u32) -> Result<GidEntry, Error> {
        super::port::query_gid_ex(self.dev.ctx, port, index)
    }

    fn alloc_pd(&self) -> Result<VerbsPd, Error> {
        // SAFETY: an open context.
        let pd = unsafe { ibv_alloc_pd(self.dev.ctx.as_ptr()) };
        Ok(VerbsPd {
            pd: NonNull::new(pd).ok_or_else(|| failed("allocate PD", -1))?,
            odp: Arc::default(),
            rings: None,
            _dev: self.dev.clone(),
        })
    }

    fn alloc_parent_domain(
        &self,
        pd: &VerbsPd,
        ring_memory: &MemOptions,
    ) -> Result<VerbsPd, Error> {
        let rings = Box::new(RingAllocator::new(*ring_memory));
        // SAFETY: an open context and a live PD; the allocator is boxed in the returned
        // handle, which drops it after deallocating the domain (field order after `Drop`).
        let domain = unsafe { rings.parent_domain(self.dev.ctx, pd.pd) }?;
        Ok(VerbsPd {
            pd: domain,
            odp: pd.odp.clone(),
            rings: Some(rings),
            _dev: self.dev.clone(),
        })
    }

    unsafe fn reg_mr(
        &self,
        pd: &VerbsPd,
        addr: *mut u8,
        len: usize,
        _page_size: usize,
        access: Access,
    ) -> Result<(VerbsMr, u32, u32), Error> {
        if access.contains(Access::ON_DEMAND) {
            pd.odp.register(&self.info.odp)?;
        }
        // SAFETY: the caller keeps the memory valid until the handle (which deregisters it)
        // is dropped; `access` holds `ibv_access_flags` values.
        let mr = unsafe { ibv_reg_mr(pd.pd.as_ptr(), addr.cast(), len, access.0 as c_int) };
        let mr = NonNull::new(mr).ok_or_else(|| failed_registration(len, access))?;
        Ok(self.registered(mr, access))
    }

    fn advise_mr(&self, pd: &VerbsPd, mr: &VerbsMr, addr: u64, len: usize) -> Result<(), Error> {
        /// `IB_UVERBS_ADVISE_MR_FLAG_FLUSH`: return once the pages are in.
        const FLUSH: u32 = 1;
        let mut sge = [ibv_sge {
            addr,
            length: u32::try_from(len)
                .map_err(|_| Error::InvalidArgument("prefetch of 4 GiB or more"))?,
            // SAFETY: a live registration.
            lkey: unsafe { (*mr.mr.as_ptr()).lkey },
        }];
        let advice = odp::prefetch_advice(mr.access);
        // SAFETY: a live PD and a scatter entry of one of its registrations.
        let rc = unsafe { ext::advise_mr(pd.pd.as_ptr(), advice, FLUSH, &mut sge) };
        match rc {
            0 => Ok(()),
            rc => Err(Error::OnDemandPaging(format!(
                "ibv_advise_mr: {}",
                std::io::Error::from_raw_os_error(rc.abs())
            ))),
        }
    }

    fn create_channel(&self) -> Result<VerbsChannel, Error> {
        VerbsChannel::new(&self.dev)
    }

    fn get_cq_event(&self, channel: &VerbsChannel) -> Result<Option<u32>, Error> {
        channel.next()
    }

    fn clock_info(&self) -> Result<ClockInfo, Error> {
        let mut info = ClockInfo::default();
        // mlx5.c `mlx5dv_get_clock_info` answers EBUSY when the kernel was updating the page
        // through all of its seqlock retries: try once more before reporting it.
        let mut rc = libc::EBUSY;
        for _ in 0..2 {
            // SAFETY: an open context and a valid out-struct of the header's layout.
            rc = unsafe { mlx5dv_get_clock_info(self.dev.ctx.as_ptr(), &mut info) };
            if rc != libc::EBUSY {
                break;
            }
        }
        match rc {
            0 => Ok(info),
            libc::EINVAL | libc::EOPNOTSUPP => Err(Error::Unsupported(
                "a clock-info page (mlx5dv_get_clock_info)",
            )),
            rc => Err(failed("read the clock-info page", rc)),
        }
    }

    fn create_cq(
        &self,
        config: &CqConfig,
        channel: &VerbsChannel,
    ) -> Result<(VerbsCq, CqDesc, VerbsUar), Error> {
        if let Some(c) = config.compression {
            check_compression(&self.info, config.cqe_size, c)?;
        }
        self.cq(config, channel)
    }

    fn create_srq(
        &self,
        pd: &VerbsPd,
        entries: u32,
        max_sge: u32,
    ) -> Result<(VerbsSrq, RqDesc, u32), Error> {
        // SAFETY: plain C data.
        let mut attr: ibv_srq_init_attr = unsafe { core::mem::zeroed() };
        attr.attr.max_wr = entries;
        attr.attr.max_sge = max_sge;
        // SAFETY: a live PD and a valid attribute struct.
        let srq = unsafe { ibv_create_srq(pd.pd.as_ptr(), &mut attr) };
        let srq = NonNull::new(srq).ok_or_else(|| pd.creation_failed(&self.dev, "create SRQ"))?;
        let handle = VerbsSrq {
            srq,
            _dev: self.dev.clone(),
        };
        // SAFETY: plain C data.
        let mut out: mlx5dv_srq = unsafe { core::mem::zeroed() };
        out.comp_mask = MLX5DV_SRQ_MASK_SRQN;
        let mut obj = empty_obj();
        obj.srq.r#in = srq.as_ptr();
        obj.srq.out = &mut out;
        init_obj(&mut obj, MLX5DV_OBJ_SRQ, "describe SRQ")?;
        if out.comp_mask & MLX5DV_SRQ_MASK_SRQN == 0 {
            return Err(Error::Device {
                operation: "describe SRQ",
                reason: "libmlx5 did not report the SRQ number".into(),
            });
        }
        // rdma-core starts an SRQ with head 0 and tail at the last WQE of a power-of-two
        // list; its buffer may hold a wait queue past `tail`, which the driver never links in
        // (it links WQEs 0..=tail into its own ring).
        let wqe_cnt = out.tail + 1;
        if !wqe_cnt.is_power_of_two() || out.head != 0 {
            return Err(Error::Device {
                operation: "describe SRQ",
                reason: format!("unexpected ring: head {}, tail {}", out.head, out.tail),
            });
        }
        let desc = RqDesc {
            buf: NonNull::new(out.buf.cast()).ok_or(Error::OutOfMemory)?,
            wqe_cnt,
            stride: out.stride as usize,
            dbrec: NonNull::new(out.dbrec.cast::<Be32>()).ok_or(Error::OutOfMemory)?,
        };
        // Asynchronous events hand back `srq_context`: make it the SRQN.
        // SAFETY: a field of our live SRQ that libibverbs only passes back to us.
        unsafe { (*srq.as_ptr()).srq_context = out.srqn as usize as *mut c_void };
        Ok((handle, desc, out.srqn))
    }

    fn create_qp(
        &self,
        pd: &VerbsPd,
        send_cq: &VerbsCq,
        recv_cq: &VerbsCq,
        srq: Option<&VerbsSrq>,
        config: &QpConfig,
        sizes: &QpSizes,
    ) -> Result<QpParts<Verbs>, Error> {
        if config.user_index.is_some() {
            // rdma-core allocates the user index (mlx5_store_uidx); only a DevX QP sets it.
            return Err(Error::Unsupported(
                "choosing a QP's user index through verbs (rdma-core allocates it)",
            ));
        }
        pd.odp
            .create_qp(&self.info.odp, config.transport, srq.is_some())?;
        // SAFETY: plain C data.
        let mut attr: ibv_qp_init_attr_ex = unsafe { core::mem::zeroed() };
        attr.send_cq = send_cq.cq.as_ptr();
        attr.recv_cq = recv_cq.cq.as_ptr();
        attr.srq = srq.map_or(core::ptr::null_mut(), |s| s.srq.as_ptr());
        let dci = config.transport == Transport::Dci;
        attr.qp_type = match config.transport {
            Transport::Rc => ibv_qp_type::IBV_QPT_RC,
            Transport::Ud => ibv_qp_type::IBV_QPT_UD,
            // mlx5dv_create_qp(3): DC QPs are IBV_QPT_DRIVER with MLX5DV_QP_INIT_ATTR_MASK_DC.
            Transport::Dci => ibv_qp_type::IBV_QPT_DRIVER,
            Transport::Dct => {
                return Err(Error::InvalidArgument(
                    "a DCT is made by create_dct, not create_qp",
                ))
            }
            Transport::Uc => ibv_qp_type::IBV_QPT_UC,
        };
        // rdma-core sizes the ring for `max_send_wr` WRs of its worst-case WQE for the
        // operations named below (verbs.c `mlx5_calc_sq_size`): `sizes` asks for as many as
        // make that ring exactly `sizes.sq_wqebbs` (crate::sizing).
        attr.cap.max_send_wr = sizes.max_send_wr;
        // A QP on an SRQ, and a DCI (send-only), have no receive queue.
        let no_rq = srq.is_some() || dci;
        attr.cap.max_recv_wr = if no_rq { 0 } else { config.rq_wqes };
        attr.cap.max_send_sge = config.max_send_sge;
        attr.cap.max_recv_sge = if no_rq { 0 } else { config.max_recv_sge };
        attr.cap.max_inline_data = config.max_inline;
        attr.comp_mask = ibv_qp_init_attr_mask::IBV_QP_INIT_ATTR_PD.0
            | ibv_qp_init_attr_mask::IBV_QP_INIT_ATTR_SEND_OPS_FLAGS.0;
        attr.pd = pd.pd.as_ptr();
        attr.send_ops_flags = send_ops(config.transport, self.caps.atomics);
        // A DCI's send_ops_flags are the crate's operations alone (above), so that
        // rdma-core's overhead is not its worst case (prm-facts-next §3.1).
        // DCI streams: `mlx5dv_dci_streams` in the union, rdma-core checks them against
        // `dci_streams_caps` (a bare EINVAL; refused here first, typed) and the kernel
        // writes them into the QPC.
        if let Some(s) = config.dci_streams {
            check_dci_streams(s, self.info.dci_streams)?;
        }
        let streams = config.dci_streams.map(|s| mlx5dv_dci_streams {
            log_num_concurent: s.log_concurrent,
            log_num_errored: s.log_errored,
        });
        let mut dv_attr = dv_qp_attr_streams(
            dci.then(|| mlx5dv_dc_init_attr::dci(streams.unwrap_or_default())),
            config.scatter_to_cqe,
            streams.is_some(),
        );
        // SAFETY: an open context, live CQs / SRQ / PD, valid attribute structs.
        let qp = unsafe { mlx5dv_create_qp(self.dev.ctx.as_ptr(), &mut attr, &mut dv_attr) };
        let qp = NonNull::new(qp).ok_or_else(|| pd.creation_failed(&self.dev, "create QP"))?;
        // SAFETY: plain C data.
        let mut out: mlx5dv_qp = unsafe { core::mem::zeroed() };
        let mut obj = empty_obj();
        obj.qp.r#in = qp.as_ptr();
        obj.qp.out = &mut out;
        let shut_up_bf = self.info.shut_up_bf;
        let mut handle = VerbsQp {
            qp,
            port: AtomicU8::new(self.port),
            bf_size: 0,
            shut_up_bf,
            // No register yet: detaching address 0 (never a register) does nothing.
            bf_reg: 0,
            bf_state: Arc::default(),
            single_threaded: self.dev.bf_regs.single_threaded(),
            _dev: self.dev.clone(),
        };
        init_obj(&mut obj, MLX5DV_OBJ_QP, "describe QP")?;
        handle.bf_size = out.bf.size;
        handle.bf_reg = out.bf.reg as usize;
        handle.bf_state = self.dev.bf_regs.attach(handle.bf_reg);
        if out.sq.stride as usize != SEND_WQE_BB {
            return Err(Error::Device {
                operation: "describe QP",
                reason: format!("send WQE stride {} (expected 64)", out.sq.stride),
            });
        }
        // SAFETY: a QP just created.
        let qpn = unsafe { (*qp.as_ptr()).qp_num };
        let dbrec = NonNull::new(out.dbrec.cast::<Be32>()).ok_or(Error::OutOfMemory)?;
        let (uar, bf_offset) = uar_page(out.bf.reg)?;
        let bf_state = handle.bf_state.clone();
        let sq = SqDesc {
            buf: NonNull::new(out.sq.buf.cast()).ok_or(Error::OutOfMemory)?,
            wqe_cnt: out.sq.wqe_cnt,
            dbrec,
            bf_offset,
            bf_size: if shut_up_bf { 0 } else { out.bf.size as usize },
            qpn,
            max_wqe_size: self.caps.max_wqe_size as usize,
            max_inline: config.max_inline as usize,
            max_sge: config.max_send_sge as usize,
        };
        let rq = match no_rq {
            true => None,
            false => Some(RqDesc {
                buf: NonNull::new(out.rq.buf.cast()).ok_or(Error::OutOfMemory)?,
                wqe_cnt: out.rq.wqe_cnt,
                stride: out.rq.stride as usize,
                dbrec,
            }),
        };
        Ok(QpParts {
            handle,
            qpn,
            sq,
            rq,
            // SAFETY: the QP's UAR page is mapped by the context, which the QP keeps alive;
            // the register at `bf_offset` is this QP's, or shared under `bf_state`'s rule.
            uar: unsafe {
                VerbsUar::qp(
                    uar,
                    bf_offset,
                    out.bf.size as usize,
                    bf_state,
                    self.dev.bf_regs.single_threaded(),
                )
            },
        })
    }

    fn create_ah(&self, pd: &VerbsPd, attr: &AhAttr) -> Result<(AhHandle, Av), Error> {
        // v44 `mlx5_create_ah` returns NULL without errno for a port out of range.
        if attr.port == 0 || attr.port > self.info.phys_port_cnt {
            return Err(Error::InvalidArgument("no such port on the device"));
        }
        let mut ah_attr = attr::ah_attr(attr);
        let roce = matches!(
            self.port_attr(attr.port)?.addressing(),
            Addressing::Gid { .. }
        );
        if roce && attr.grh.is_none() {
            // mlx5_create_ah: EINVAL on RoCE without is_global.
            return Err(Error::InvalidArgument(
                "an address handle on RoCE needs a global route",
            ));
        }
        // SAFETY: a live PD and a valid attribute struct.
        let ah = unsafe { ibv_create_ah(pd.pd.as_ptr(), &mut ah_attr) };
        let ah = NonNull::new(ah).ok_or_else(|| failed("create AH", -1))?;
        let handle = VerbsAh {
            ah,
            _dev: self.dev.clone(),
        };
        // SAFETY: plain C data.
        let mut out: mlx5dv_ah = unsafe { core::mem::zeroed() };
        let mut obj = empty_obj();
        obj.ah.r#in = ah.as_ptr();
        obj.ah.out = &mut out;
        init_obj(&mut obj, MLX5DV_OBJ_AH, "describe AH")?;
        let av = NonNull::new(out.av).ok_or(Error::Device {
            operation: "describe AH",
            reason: "mlx5dv_init_obj returned no AV".into(),
        })?;
        // SAFETY: the AH's own 48-byte AV, live while `handle` is; rdma-core wrote it at
        // creation and never again.
        let av = unsafe { av.as_ptr().read_unaligned() };
        Ok((Box::new(handle), av))
    }

    fn create_dct(
        &self,
        pd: &VerbsPd,
        recv_cq: &VerbsCq,
        srq: &VerbsSrq,
        dc_key: u64,
    ) -> Result<VerbsQp, Error> {
        pd.odp.create_qp(&self.info.odp, Transport::Dct, true)?;
        // SAFETY: plain C data.
        let mut attr: ibv_qp_init_attr_ex = unsafe { core::mem::zeroed() };
        attr.qp_type = ibv_qp_type::IBV_QPT_DRIVER;
        attr.send_cq = recv_cq.cq.as_ptr();
        attr.recv_cq = recv_cq.cq.as_ptr();
        attr.srq = srq.srq.as_ptr();
        // No send_ops_flags: rdma-core refuses them for a DCT.
        attr.comp_mask = ibv_qp_init_attr_mask::IBV_QP_INIT_ATTR_PD.0;
        attr.pd = pd.pd.as_ptr();
        let mut dv_attr = dv_qp_attr(
            Some(mlx5dv_dc_init_attr {
                dc_type: MLX5DV_DCTYPE_DCT,
                dct_access_key: dc_key,
            }),
            false,
        );
        // SAFETY: an open context, a live CQ, SRQ and PD, valid attribute structs.
        let qp = unsafe { mlx5dv_create_qp(self.dev.ctx.as_ptr(), &mut attr, &mut dv_attr) };
        let qp = NonNull::new(qp).ok_or_else(|| failed("create DCT", -1))?;
        Ok(VerbsQp {
            qp,
            port: AtomicU8::new(self.port),
            bf_size: 0,
            shut_up_bf: self.info.shut_up_bf,
            // No send queue, no register: detaching address 0 does nothing.
            bf_reg: 0,
            bf_state: Arc::default(),
            single_threaded: self.dev.bf_regs.single_threaded(),
            _dev: self.dev.clone(),
        })
    }

    fn dct_number(&self, dct: &VerbsQp) -> Result<u32, Error> {
        // SAFETY: a live QP; rdma-core's `modify_dct` stores the DCT number at RTR.
        Ok(unsafe { (*dct.qp.as_ptr()).qp_num })
    }

    fn modify_qp(&self, qp: &VerbsQp, transition: &Transition) -> Result<(), Error> {
        let port = qp.port.load(Ordering::Relaxed);
        let path = match transition {
            Transition::Rtr { .. }
            | Transition::RtrUc { .. }
            | Transition::RtrDci { .. }
            | Transition::RtrDct { .. } => {
                let p = self.port_attr(port)?;
                attr::PathInfo {
                    port,
                    addressing: p.addressing(),
                    active_mtu: p.active_mtu,
                }
            }
            _ => attr::PathInfo {
                port,
                addressing: Addressing::Lid,
                active_mtu: 0,
            },
        };
        let (mut attr, mask) = attr::qp_attr(transition, &path)?;
        qp.modify(&mut attr, mask)
    }

    fn reset_dci_stream(&self, qp: &VerbsQp, stream: u16) -> Result<(), Error> {
        // SAFETY: a live QP.
        let rc = unsafe { mlx5dv_dci_stream_id_reset(qp.qp.as_ptr(), stream) };
        match rc {
            0 => Ok(()),
            // v44 mlx5.c issues the reset through `mlx5dv_devx_qp_modify`: the kernel
            // (devx.c `devx_get_uid`) answers EINVAL to a context without DevX, and libmlx5
            // EOPNOTSUPP without `qpc_extension_cap` / `max_log_num_errored`.
            libc::EINVAL | libc::EOPNOTSUPP => Err(Error::Unsupported(
                "resetting a DCI stream (needs a DevX context and the device's \
                 qpc_extension_cap; or the stream id is beyond the DCI's)",
            )),
            rc => Err(failed("reset DCI stream", rc)),
        }
    }

    fn query_psn(&self, qp: &VerbsQp) -> Result<QpPsn, Error> {
        // SAFETY: both are plain C data (integers, GIDs, pointers `ibv_query_qp` does not
        // read); all zeroes is a valid value of each.
        let (mut attr, mut init): (ibv_qp_attr, ibv_qp_init_attr) =
            unsafe { (core::mem::zeroed(), core::mem::zeroed()) };
        // SAFETY: a live QP and two writable out-structs.
        let rc = unsafe {
            ibv_query_qp(
                qp.qp.as_ptr(),
                &mut attr,
                attr::PSN_QUERY.0 as c_int,
                &mut init,
            )
        };
        if rc != 0 {
            return Err(failed("query QP", rc));
        }
        Ok(QpPsn {
            sq_psn: attr.sq_psn,
            rq_psn: attr.rq_psn,
        })
    }

    fn poll_async_event(&self) -> Result<Option<AsyncEvent>, Error> {
        self.next_async_event()
    }

    fn wait_async_event(&self, timeout: Duration) -> Result<Option<AsyncEvent>, Error> {
        self.wait_next_async_event(timeout)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::mlx5dv::MLX5DV_DCTYPE_DCI;

    #[test]
    fn uar_registers_split_into_page_and_offset() {
        let (base, offset) = uar_page(0x7f00_1234_5a00 as *mut c_void).unwrap();
        assert_eq!((base.as_ptr() as usize, offset), (0x7f00_1234_5000, 0xa00));
        assert!(uar_page(core::ptr::null_mut()).is_err());
    }

    #[test]
    fn qps_are_created_for_the_operations_posted_and_no_memory_windows() {
        // verbs.h: RDMA_WRITE 1 << 0, RDMA_WRITE_WITH_IMM 1 << 1, SEND 1 << 2, SEND_WITH_IMM
        // 1 << 3, RDMA_READ 1 << 4, SEND_WITH_INV 1 << 9; CMP_AND_SWP 1 << 5, FETCH_AND_ADD
        // 1 << 6. Not LOCAL_INV (1 << 7) nor BIND_MW (1 << 8).
        assert_eq!(send_ops(Transport::Rc, false), 0b10_0001_1111);
        assert_eq!(send_ops(Transport::Rc, true), 0b10_0111_1111);
        // UC: no READ, no atomics, on any device; UD: SEND and SEND_WITH_IMM.
        assert_eq!(send_ops(Transport::Uc, true), 0b10_0000_1111);
        assert_eq!(send_ops(Transport::Ud, true), 0b1100);
    }

    #[test]
    fn scatter_to_cqe_is_disabled_at_creation_unless_the_qp_asks_for_it() {
        // mlx5dv.h: MLX5DV_QP_INIT_ATTR_MASK_QP_CREATE_FLAGS 1 << 0, MLX5DV_QP_INIT_ATTR_MASK_DC
        // 1 << 1; MLX5DV_QP_CREATE_DISABLE_SCATTER_TO_CQE 1 << 3, ALLOW_SCATTER_TO_CQE 1 << 4.
        let off = dv_qp_attr(None, false);
        assert_eq!((off.comp_mask, off.create_flags), (1, 1 << 3));
        let on = dv_qp_attr(None, true);
        assert_eq!((on.comp_mask, on.create_flags), (1, 0));
        let dci = mlx5dv_dc_init_attr::dci(mlx5dv_dci_streams::default());
        let dc = dv_qp_attr(Some(dci), false);
        assert_eq!((dc.comp_mask, dc.create_flags), (3, 1 << 3));
        assert_eq!(dc.dc_init_attr.dc_type, MLX5DV_DCTYPE_DCI);
        assert_eq!(dc.dc_init_attr.dct_access_key, 0);
        // mlx5dv.h: MLX5DV_QP_INIT_ATTR_MASK_DCI_STREAMS 1 << 3.
        let streams = mlx5dv_dc_init_attr::dci(mlx5dv_dci_streams {
            log_num_concurent: 2,
            log_num_errored: 1,
        });
        let dcs = dv_qp_attr_streams(Some(streams), false, true);
        assert_eq!(dcs.comp_mask, 1 | 1 << 1 | 1 << 3);
        assert_eq!(
            dcs.dc_init_attr.dct_access_key.to_ne_bytes(),
            [2, 1, 0, 0, 0, 0, 0, 0]
        );
    }

    fn info(max_num: u32, formats: u32, comp_128: bool) -> VerbsDeviceInfo {
        VerbsDeviceInfo {
            fw_ver: String::new(),
            vendor_part_id: 4123,
            phys_port_cnt: 1,
            max_qp: 1 << 17,
            max_srq_wr: 1 << 15,
            max_srq_sge: 31,
            atomic_cap: 1,
            cqe_version: 1,
            cqe_128b_compression: comp_128,
            cqe_128b_padding: true,
            cqe_comp_max_num: max_num,
            cqe_comp_formats: formats,
            shut_up_bf: false,
            blueflame_reported: false,
            hca_core_clock_khz: 156_250,
            completion_timestamp_mask: (1 << 63) - 1,
            odp: super::odp::OdpCaps::default(),
            dci_streams: Some((4, 3)),
        }
    }

    use crate::prm::MiniCqeFormat;

    #[test]
    fn dci_streams_beyond_the_device_caps_are_refused() {
        let s = |log_concurrent, log_errored| crate::types::DciStreams {
            log_concurrent,
            log_errored,
        };
        assert!(check_dci_streams(s(4, 3), Some((4, 3))).is_ok());
        for bad in [s(5, 0), s(1, 4)] {
            assert!(matches!(
                check_dci_streams(bad, Some((4, 3))),
                Err(Error::InvalidArgument(_))
            ));
        }
        assert!(matches!(
            check_dci_streams(s(1, 0), None),
            Err(Error::Unsupported(_))
        ));
    }

    #[test]
    fn compression_is_refused_where_verbs_or_the_device_cannot() {
        let hash_csum = 0b011;
        let dev = info(64, hash_csum, false);
        let csum = CqeCompression {
            format: MiniCqeFormat::Csum,
            ..CqeCompression::BASIC
        };
        assert_eq!(check_compression(&dev, 64, CqeCompression::BASIC), Ok(()));
        assert_eq!(check_compression(&dev, 64, csum), Ok(()));
        let refused = |info: &VerbsDeviceInfo, size, c| match check_compression(info, size, c) {
            Err(Error::Unsupported(what)) => what,
            other => panic!("{other:?}"),
        };
        assert!(refused(&dev, 64, CqeCompression::ENHANCED).contains("DevX"));
        assert!(refused(&info(0, hash_csum, true), 64, CqeCompression::BASIC).contains("max_num"));
        let stridx = CqeCompression {
            format: MiniCqeFormat::CsumStridx,
            ..CqeCompression::BASIC
        };
        assert!(refused(&dev, 64, stridx).contains("supported_format"));
        assert!(refused(&dev, 128, CqeCompression::BASIC).contains("128-byte"));
        assert_eq!(
            check_compression(&info(64, hash_csum, true), 128, CqeCompression::BASIC),
            Ok(())
        );
    }
}
