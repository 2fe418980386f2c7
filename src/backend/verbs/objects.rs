//! The objects of the `verbs` backend (PD, MR, CQ, SRQ, QP): created through rdma-core,
//! described by `mlx5dv_init_obj` as the queue descriptions the data path takes, destroyed
//! in `Drop`. The `Backend` calls that make them are in `backend.rs`.

use core::ffi::{c_int, c_void};
use core::ptr::NonNull;
use core::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;

use crate::backend::ffi::{
    ibv_ah, ibv_cq, ibv_cq_ex_to_cq, ibv_cq_init_attr_ex, ibv_create_cq_wc_flags, ibv_dealloc_pd,
    ibv_dereg_mr, ibv_destroy_ah, ibv_destroy_cq, ibv_destroy_qp, ibv_destroy_srq, ibv_modify_qp,
    ibv_mr, ibv_pd, ibv_qp, ibv_qp_attr, ibv_qp_attr_mask, ibv_qp_create_send_ops_flags,
    ibv_qp_rate_limit_attr, ibv_srq, ibv_xrcd,
};
use crate::backend::ffi::{ibv_attach_mcast, ibv_detach_mcast, ibv_dm, ibv_gid};

use super::bfreg::{RegState, VerbsUar};
use super::events::VerbsChannel;
use super::ext;
use super::odp::PdOdp;
use super::rings::{RingAllocator, RingBuffer};
use super::{errno, failed, DeviceCtx, Verbs, VerbsDeviceInfo};
use crate::backend::mlx5dv::{
    mlx5dv_cq, mlx5dv_cq_init_attr, mlx5dv_create_cq, mlx5dv_dc_init_attr, mlx5dv_init_obj,
    mlx5dv_obj, mlx5dv_qp_init_attr, MLX5DV_CQ_INIT_ATTR_MASK_COMPRESSED_CQE,
    MLX5DV_CQ_INIT_ATTR_MASK_CQE_SIZE, MLX5DV_OBJ_CQ, MLX5DV_QP_CREATE_DISABLE_SCATTER_TO_CQE,
    MLX5DV_QP_INIT_ATTR_MASK_DC, MLX5DV_QP_INIT_ATTR_MASK_DCI_STREAMS,
    MLX5DV_QP_INIT_ATTR_MASK_QP_CREATE_FLAGS,
};
use crate::backend::mlx5dv::{mlx5dv_srq, MLX5DV_OBJ_SRQ, MLX5DV_SRQ_MASK_SRQN};
use crate::cq::CqDesc;
use crate::cqz::CqeCompression;
use crate::error::{Error, McastRefusal};
use crate::mcast::McastGroup;
use crate::mmio::MappedDm;
use crate::prm::{Be32, CqeCompLayout, UAR_PAGE_SIZE};
use crate::rq::RqDesc;
use crate::types::{Access, CqConfig, RateLimit, Transport};

/// The UAR page holding `reg` and the register's offset in it.
pub(super) fn uar_page(reg: *mut c_void) -> Result<(NonNull<u8>, usize), Error> {
    let addr = reg as usize;
    let base = NonNull::new((addr & !(UAR_PAGE_SIZE - 1)) as *mut u8)
        .ok_or(Error::InvalidArgument("mlx5dv_init_obj returned no UAR"))?;
    Ok((base, addr & (UAR_PAGE_SIZE - 1)))
}

pub(super) fn init_obj(
    obj: &mut mlx5dv_obj,
    kind: u64,
    operation: &'static str,
) -> Result<(), Error> {
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
pub(super) fn dv_qp_attr(
    dc: Option<mlx5dv_dc_init_attr>,
    scatter_to_cqe: bool,
) -> mlx5dv_qp_init_attr {
    dv_qp_attr_streams(dc, scatter_to_cqe, false)
}

/// [`dv_qp_attr`], with `MLX5DV_QP_INIT_ATTR_MASK_DCI_STREAMS` when `streams` (`dc` then
/// carries them: [`mlx5dv_dc_init_attr::dci`]).
pub(super) fn dv_qp_attr_streams(
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

pub(super) fn empty_obj() -> mlx5dv_obj {
    // SAFETY: a struct of null pointer pairs.
    unsafe { core::mem::zeroed() }
}

/// A protection domain.
#[derive(Debug)]
pub struct VerbsPd {
    pub(super) pd: NonNull<ibv_pd>,
    /// Its QPs' transports and on-demand registrations, shared with its parent domains.
    pub(super) odp: Arc<PdOdp>,
    /// A parent domain's allocator ([`Backend::alloc_parent_domain`]), dropped after the
    /// domain is deallocated (field drops follow `Drop::drop`).
    pub(super) rings: Option<Box<RingAllocator>>,
    pub(super) _dev: Arc<DeviceCtx>,
}

impl VerbsPd {
    /// A parent domain's live ring allocations, in address order, each with the resource
    /// type libmlx5 named; empty for a plain PD.
    pub fn ring_buffers(&self) -> Vec<RingBuffer> {
        self.rings.as_ref().map_or_else(Vec::new, |r| r.buffers())
    }

    /// The error of a creation on this PD that returned NULL: its allocator's refusal
    /// first (a typed error), then the context's reading.
    pub(super) fn creation_failed(&self, dev: &DeviceCtx, operation: &'static str) -> Error {
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
    pub(super) map: MappedDm,
    pub(super) dm: NonNull<ibv_dm>,
    pub(super) _dev: Arc<DeviceCtx>,
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
    pub(super) mr: NonNull<ibv_mr>,
    pub(super) access: Access,
    _dev: Arc<DeviceCtx>,
}

/// A CQ.
#[derive(Debug)]
pub struct VerbsCq {
    pub(super) cq: NonNull<ibv_cq>,
    cqn: u32,
    _dev: Arc<DeviceCtx>,
}

/// An address handle (`ibv_create_ah`): the AV bytes were copied out of it, it lives as long
/// as WQEs may use them.
#[derive(Debug)]
pub struct VerbsAh {
    pub(super) ah: NonNull<ibv_ah>,
    pub(super) _dev: Arc<DeviceCtx>,
}

/// An SRQ.
#[derive(Debug)]
pub struct VerbsSrq {
    pub(super) srq: NonNull<ibv_srq>,
    pub(super) _dev: Arc<DeviceCtx>,
}

/// An XRC domain (`ibv_open_xrcd`).
#[derive(Debug)]
pub struct VerbsXrcd {
    pub(super) xrcd: NonNull<ibv_xrcd>,
    pub(super) _dev: Arc<DeviceCtx>,
}

// SAFETY: as for the handles below.
unsafe impl Send for VerbsXrcd {}
// SAFETY: as above.
unsafe impl Sync for VerbsXrcd {}

impl Drop for VerbsXrcd {
    fn drop(&mut self) {
        // SAFETY: opened by this backend and closed once, after its SRQs and QPs (which
        // hold it) and before the context (held by `_dev`).
        unsafe { ext::close_xrcd(self.xrcd.as_ptr()) };
    }
}

/// rdma-core's `struct mlx5_resource` (providers/mlx5/mlx5.h, private): the first member
/// of its `struct mlx5_srq` ("must be first"), right before the `verbs_srq` whose
/// `ibv_srq` libibverbs hands out; `rsn` is the user index an XRC SRQ's completions carry
/// under CQE version 1 (`mlx5_create_xrc_srq` stores `mlx5_store_uidx`'s answer there,
/// `get_resp_ctx_v1` looks it up). No installed header declares it: UNVERIFIED against
/// hardware; on the emulator, under Debian's unmodified libmlx5 44.0, the XRC body of
/// tests/verbs_hw.rs finds both SRQs' completions by it (hw/emu/verbs-hw.sh).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub(super) struct Mlx5Resource {
    /// `enum mlx5_rsc_type` (`MLX5_RSC_TYPE_XSRQ` for an XRC SRQ).
    pub(super) rsc_type: u32,
    /// The resource number: the user index under CQE version 1, else the SRQ number.
    pub(super) rsn: u32,
}

/// The `srqn_uidx` an XRC SRQ's completions carry: its number under CQE version 0, else
/// the user index rdma-core gave it ([`Mlx5Resource::rsn`]).
///
/// # Safety
/// `srq` is a live XRC SRQ libmlx5 created (`ibv_create_srq_ex`).
pub(super) unsafe fn xrc_srq_key(srq: NonNull<ibv_srq>, srqn: u32, cqe_version: u8) -> u32 {
    if cqe_version == 0 {
        return srqn;
    }
    // SAFETY: libmlx5 allocates the `ibv_srq` inside its `struct mlx5_srq`, after the
    // 8-byte `mlx5_resource` it starts with (no padding: `verbs_srq` is 8-byte aligned);
    // the read stays in that allocation.
    let rsc = unsafe { srq.as_ptr().byte_sub(size_of::<Mlx5Resource>()) }.cast::<Mlx5Resource>();
    // SAFETY: as above; written at creation, read once here.
    unsafe { rsc.read_unaligned() }.rsn & 0xff_ffff
}

/// The ring of a new SRQ as `mlx5dv_init_obj` describes it, and its number.
pub(super) fn describe_srq(srq: NonNull<ibv_srq>) -> Result<(RqDesc, u32), Error> {
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
    Ok((desc, out.srqn))
}

/// An RC QP.
#[derive(Debug)]
pub struct VerbsQp {
    pub(super) qp: NonNull<ibv_qp>,
    pub(super) port: AtomicU8,
    pub(super) bf_size: u32,
    pub(super) shut_up_bf: bool,
    /// The BlueFlame register's address, and its state among the QPs using it.
    pub(super) bf_reg: usize,
    pub(super) bf_state: Arc<RegState>,
    /// `MLX5_SINGLE_THREADED=1`: a shared register keeps BlueFlame.
    pub(super) single_threaded: bool,
    pub(super) _dev: Arc<DeviceCtx>,
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

    /// `ibv_attach_mcast` of `group` (`attach`), else `ibv_detach_mcast`. ENOMEM, the
    /// kernel's answer when the device's group table is full, is
    /// [`McastRefusal::TableFull`].
    pub(crate) fn mcast(&self, group: &McastGroup, attach: bool) -> Result<(), Error> {
        let gid = ibv_gid { raw: group.mgid };
        let qp = self.qp.as_ptr();
        // SAFETY: a live QP and a GID that outlives the call.
        let rc = unsafe {
            if attach {
                ibv_attach_mcast(qp, &gid, group.mlid)
            } else {
                ibv_detach_mcast(qp, &gid, group.mlid)
            }
        };
        match rc {
            0 => Ok(()),
            _ if attach && errno(rc).raw_os_error() == Some(libc::ENOMEM) => {
                Err(Error::Multicast(McastRefusal::TableFull))
            }
            _ if attach => Err(failed("attach to a multicast group", rc)),
            _ => Err(failed("detach from a multicast group", rc)),
        }
    }

    /// `ibv_modify_qp_rate_limit` with `limit`. EOPNOTSUPP (a provider without the call,
    /// or the kernel's answer for a transport the device does not pace) is
    /// [`Error::Unsupported`].
    pub(crate) fn set_rate_limit(&self, limit: &RateLimit) -> Result<(), Error> {
        let mut attr = ibv_qp_rate_limit_attr {
            rate_limit: limit.kbps,
            max_burst_sz: limit.max_burst_sz,
            typical_pkt_sz: limit.typical_pkt_sz,
            comp_mask: 0,
        };
        // SAFETY: a live QP of an open context and an attribute struct that outlives the
        // call.
        let rc = unsafe { ext::modify_qp_rate_limit(self.qp.as_ptr(), &mut attr) };
        match rc {
            0 => Ok(()),
            _ if errno(rc).raw_os_error() == Some(libc::EOPNOTSUPP) => Err(Error::Unsupported(
                "packet pacing of this QP's transport (packet_pacing_caps.supported_qpts)",
            )),
            _ => Err(failed("set the rate limit", rc)),
        }
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
pub(super) fn check_dci_streams(
    s: crate::types::DciStreams,
    caps: Option<(u8, u8)>,
) -> Result<(), Error> {
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
pub(super) fn send_ops(transport: Transport, atomics: bool) -> u64 {
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
    if transport == Transport::Raw {
        // rdma-core's raw packet operations are SEND and TSO
        // (`MLX5_SUPPORTED_SEND_OPS_FLAGS_RAW_PACKET`); TSO's flag would size every WQE
        // for the largest TSO header, and the driver's queue takes TSO WQEs up to the
        // device's largest WQE without it.
        return u64::from(op::IBV_QP_EX_WITH_SEND.0);
    }
    let (connected, read, atomic): (&[op], &[op], &[op]) = match transport {
        Transport::Ud | Transport::Raw => (&[], &[], &[]),
        Transport::Uc => (&connected, &[], &[]),
        // A DCI takes RC's operations (`MLX5_SUPPORTED_SEND_OPS_FLAGS_DCI`), so does an
        // XRC initiator (`MLX5_SUPPORTED_SEND_OPS_FLAGS_XRC`); a DCT and an XRC target have
        // no send queue.
        Transport::Rc | Transport::Dci | Transport::Dct | Transport::XrcIni | Transport::XrcTgt => {
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
pub(super) fn check_compression(
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
    pub(super) fn cq(
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
    pub(super) fn registered(&self, mr: NonNull<ibv_mr>, access: Access) -> (VerbsMr, u32, u32) {
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

#[cfg(test)]
mod tests;
