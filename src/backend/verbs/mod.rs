//! The hardware backend: a ConnectX NIC through rdma-core (libibverbs for the slow path,
//! `mlx5dv_init_obj` for the queue memory). Everything after creation is the same data-path
//! code the model exercises.
//!
//! - Device: [`Context::open`](crate::Context::open) lists the RDMA devices, takes the named one or the first mlx5
//!   one, opens it, queries it ([`VerbsDeviceInfo`]) and its port ([`VerbsPort`]: link layer,
//!   LID, GID: on RoCE a RoCE v2 GID by default, or the index given).
//! - Objects: PD, MR (`ibv_reg_mr`), CQ (`mlx5dv_create_cq` with the CQE size asked for, on
//!   the completion channel given), QP (`mlx5dv_create_qp` with scatter-to-CQE disabled
//!   unless [`QpConfig::scatter_to_cqe`](crate::QpConfig::scatter_to_cqe) asks for its
//!   responder side), SRQ. Each is described by
//!   `mlx5dv_init_obj` as the same [`SqDesc`] / [`RqDesc`] / [`CqDesc`] the model backend
//!   produces, with a [`VerbsUar`] for its UAR page (`objects.rs`).
//! - BlueFlame: rdma-core's `MLX5_SHUT_UP_BF` (set and not "0") or a QP without a BlueFlame
//!   register (`mlx5dv_qp.bf.size == 0`) means 8-byte doorbells only;
//!   [`VerbsQp::doorbell_only`] says why, `SendQueue::effective_mode` says what is asked
//!   for. A register libmlx5 gave to several live QPs rings 8-byte doorbells while it is
//!   shared, since this data path takes no lock, unless `MLX5_SINGLE_THREADED=1`: then its
//!   copies alternate the register's halves (`bfreg.rs`).
//! - Refused at open: `MLX5_QP_SIGNATURE` / `MLX5_SRQ_SIGNATURE` in the environment
//!   ([`Error::Environment`]); docs/hardware.md lists every libmlx5 variable.
//! - Events: arm with `CompletionQueue::arm` (our own arm doorbell); a [`VerbsChannel`] is an
//!   `ibv_comp_channel` with a non-blocking fd, each event read with `ibv_get_cq_event` and
//!   acknowledged at once; `crate::channel` waits on it as on any backend's. Asynchronous events
//!   (CQ error, QP fatal, port changes, ...) come from the context's async fd
//!   (`ibv_get_async_event`, acknowledged at once) through `Context::poll_async_event` /
//!   `Context::wait_async_event` (`events.rs`).
//! - Teardown: each handle destroys its object in `Drop` and holds the device context, which
//!   is closed last; `device` orders QP before SRQ and CQ, MR before PD. Failures in `Drop`
//!   are ignored, never panics.
//!
//! Missing pieces surface as follows: without rdma-core's development packages the crate does
//! not build with `verbs` (rdma-sys's build script names the package; only its documentation
//! does, under `--cfg mlx5_direct_docs`: `Cargo.toml`, `[package.metadata.docs.rs]`); without the shared
//! libraries (`libibverbs.so.1`, `libmlx5.so.1`) the dynamic loader refuses to start the
//! program; without a device, a kernel driver or a provider library, [`Context::open`](crate::Context::open)
//! returns [`Error::NoDevice`] saying which; a non-mlx5 device is [`Error::NotMlx5`]; no
//! permission on `/dev/infiniband` is an [`Error::Device`] from opening the device.
//!
//! [`SqDesc`]: crate::sq::SqDesc
//! [`RqDesc`]: crate::rq::RqDesc
//! [`CqDesc`]: crate::cq::CqDesc

// The MMIO path assumes what these two give: a single 64-bit store per doorbell and the
// barriers of `crate::mmio`. Elsewhere rdma-core uses other means (s390x: MIO instructions in
// util/mmio.c; 32-bit targets: an out-of-line `mmio_write64_be` there), which this driver
// does not have.
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
compile_error!("the `verbs` backend supports x86_64 and aarch64 only (see docs/hardware.md)");

mod attr;
mod backend;
mod bfreg;
pub mod cm;
mod events;
mod ext;
mod flow;
mod objects;
mod odp;
mod port;
mod rings;
mod wq;

use core::ffi::c_int;
use core::ptr::NonNull;
use std::sync::Arc;

use crate::backend::ffi::{
    ibv_atomic_cap, ibv_close_device, ibv_context, ibv_device_attr, ibv_device_attr_ex,
    ibv_device_cap_flags, ibv_open_device,
};

pub use attr::Addressing;
pub use bfreg::VerbsUar;
pub use cm::{CmConnection, CmListener, CmOptions, CmRequest};
pub use events::VerbsChannel;
pub use objects::{VerbsCq, VerbsMr, VerbsPd, VerbsQp, VerbsSrq, VerbsXrcd};
pub use odp::OdpCaps;
pub use port::{GidType, LinkLayer, VerbsPort};
pub use rings::RingBuffer;

use super::mlx5dv::{
    mlx5dv_context, mlx5dv_query_device, MLX5DV_CONTEXT_FLAGS_BLUEFLAME,
    MLX5DV_CONTEXT_FLAGS_CQE_128B_COMP, MLX5DV_CONTEXT_FLAGS_CQE_128B_PAD,
    MLX5DV_CONTEXT_FLAGS_CQE_V1, MLX5DV_CONTEXT_FLAGS_ENHANCED_MPW,
    MLX5DV_CONTEXT_MASK_CQE_COMPRESION, MLX5DV_CONTEXT_MASK_DCI_STREAMS,
    MLX5DV_CONTEXT_MASK_DC_ODP_CAPS, MLX5DV_CONTEXT_MASK_STRIDING_RQ,
};
use bfreg::BfRegisters;
use rings::RingAllocator;

use crate::error::Error;
use crate::mem::MemOptions;
use crate::prm::DS;
use crate::sizing;
use crate::types::{DeviceCaps, PacingCaps};

/// The largest WQE the mlx5 format can describe (6-bit DS count: 63 × 16 bytes).
const MAX_WQE_FORMAT: u32 = 63 * DS as u32;

/// A BlueFlame half on every ConnectX with BlueFlame (`bf_reg_size / 2`).
const BF_HALF: u32 = 256;

/// What to open.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VerbsOptions {
    /// Device name (e.g. `mlx5_0`); `None` takes the first mlx5 device.
    pub device: Option<String>,
    /// Port (from 1).
    pub port: u8,
    /// GID index on that port; `None` chooses: RoCE v2 on Ethernet, 0 on InfiniBand.
    pub gid_index: Option<u32>,
    /// Where the rings and doorbell records of the context's CQs, QPs and SRQs live:
    /// `Some` installs this crate's allocator in libmlx5
    /// (`mlx5dv_set_context_attr(MLX5DV_CTX_ATTR_BUF_ALLOCATORS)`), which takes each buffer
    /// and each doorbell-record page as [`MemOptions`] says (whole huge pages, a NUMA node),
    /// as `Sim::with_ring_memory` does on the model; a refused allocation fails the
    /// creation with its typed error ([`Error::NoHugePages`], [`Error::NumaNode`]). `None`
    /// leaves them to libmlx5 (4 KiB pages, or what `MLX_QP_ALLOC_TYPE` and friends ask
    /// for).
    pub ring_memory: Option<MemOptions>,
}

impl Default for VerbsOptions {
    fn default() -> Self {
        VerbsOptions {
            device: None,
            port: 1,
            gid_index: None,
            ring_memory: None,
        }
    }
}

/// What the device reports beyond [`DeviceCaps`] (`ibv_query_device`, `mlx5dv_query_device`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VerbsDeviceInfo {
    /// Firmware version.
    pub fw_ver: String,
    /// PCI device id of the part.
    pub vendor_part_id: u32,
    /// Physical ports.
    pub phys_port_cnt: u8,
    /// Largest number of QPs.
    pub max_qp: u32,
    /// Largest SRQ in WQEs.
    pub max_srq_wr: u32,
    /// Largest SRQ scatter list.
    pub max_srq_sge: u32,
    /// Atomic support (`enum ibv_atomic_cap`: 0 none, 1 within the HCA, 2 global).
    pub atomic_cap: u32,
    /// CQE version (1 when `MLX5DV_CONTEXT_FLAGS_CQE_V1`).
    pub cqe_version: u8,
    /// 128-byte CQEs can be compressed.
    pub cqe_128b_compression: bool,
    /// 128-byte CQE padding is supported.
    pub cqe_128b_padding: bool,
    /// CQE compression: largest session (0: no compression).
    pub cqe_comp_max_num: u32,
    /// CQE compression formats (`enum mlx5dv_cqe_comp_res_format` bits).
    pub cqe_comp_formats: u32,
    /// `MLX5_SHUT_UP_BF` is set: every QP rings 8-byte doorbells.
    pub shut_up_bf: bool,
    /// The library reported BlueFlame registers (`MLX5DV_CONTEXT_FLAGS_BLUEFLAME`, rdma-core
    /// 2025 and later). False from older libraries (Debian 12's v44) whatever the device has:
    /// there each QP's `mlx5dv_qp.bf.size` is the only sign ([`VerbsQp::doorbell_only`]).
    pub blueflame_reported: bool,
    /// Device clock rate in kHz (`ibv_device_attr_ex.hca_core_clock`; 0: no clock, CQs with
    /// timestamps are refused).
    pub hca_core_clock_khz: u64,
    /// Bits of the CQE timestamp (`completion_timestamp_mask`; 0: no timestamps).
    pub completion_timestamp_mask: u64,
    /// On-demand paging per transport (`odp_caps`, and `dc_odp_caps` from
    /// `mlx5dv_query_device`), read once at open.
    pub odp: OdpCaps,
    /// DCI streams (`dci_streams_caps`: `max_log_num_concurent`, `max_log_num_errored`);
    /// `None` when libmlx5 does not report them (no streams).
    pub dci_streams: Option<(u8, u8)>,
    /// The largest TSO payload (`tso_caps.max_tso`; 0: no TSO).
    pub max_tso: u32,
    /// Enhanced multi-packet send (`MLX5DV_CONTEXT_FLAGS_ENHANCED_MPW`).
    pub enhanced_mpw: bool,
    /// Striding receive queues (`striding_rq_caps` reported with a non-zero range).
    pub striding_rq: bool,
}

/// The open device context, released last: every handle holds it.
#[derive(Debug)]
struct DeviceCtx {
    ctx: NonNull<ibv_context>,
    /// The BlueFlame registers the context's live QPs use.
    bf_regs: BfRegisters,
    /// The allocator installed in the context for its rings ([`VerbsOptions::ring_memory`]),
    /// dropped after the context is closed (field drops follow `Drop::drop`).
    rings: Option<Box<RingAllocator>>,
}

impl DeviceCtx {
    /// The error of a creation that returned NULL: the ring allocator's refusal when it
    /// refused (a typed error), else `failed_pinning`'s reading of `errno`.
    fn creation_failed(&self, operation: &'static str) -> Error {
        let err = failed_pinning(operation, -1);
        self.rings
            .as_ref()
            .and_then(|r| r.take_refusal())
            .unwrap_or(err)
    }
}

// SAFETY: a verbs context may be used from any thread (libibverbs locks internally where it
// must); we only pass the pointer to slow-path calls.
unsafe impl Send for DeviceCtx {}
// SAFETY: as above.
unsafe impl Sync for DeviceCtx {}

impl Drop for DeviceCtx {
    fn drop(&mut self) {
        // SAFETY: every object of the context held this value, so they are all destroyed;
        // the context is closed once. Failures cannot be reported from `Drop` and are
        // ignored.
        unsafe { ibv_close_device(self.ctx.as_ptr()) };
    }
}

/// The errno of a failed verbs call: the one it returned (positive), or `errno` (for calls
/// that return -1 or NULL).
fn errno(rc: c_int) -> std::io::Error {
    if rc > 0 {
        std::io::Error::from_raw_os_error(rc)
    } else {
        std::io::Error::last_os_error()
    }
}

/// The error of a failed verbs call (see [`errno`]); `EBUSY` is [`Error::Busy`].
fn failed(operation: &'static str, rc: c_int) -> Error {
    failed_with(operation, errno(rc), "")
}

/// [`failed`] for a call that pins memory (registrations, queues): `ENOMEM` or `EPERM` there
/// is usually `RLIMIT_MEMLOCK`, which the reason then names.
fn failed_pinning(operation: &'static str, rc: c_int) -> Error {
    let err = errno(rc);
    let hint = match err.raw_os_error() {
        Some(libc::ENOMEM | libc::EPERM) => {
            " (pinned memory counts against RLIMIT_MEMLOCK: raise it, e.g. `ulimit -l \
             unlimited`; see docs/hardware.md)"
        }
        _ => "",
    };
    failed_with(operation, err, hint)
}

/// A failed `ibv_reg_mr` of `len` bytes: [`Error::MemlockTooLow`] when it pinned nothing
/// on demand, failed with `ENOMEM` and a locked-memory limit applies (the kernel's
/// `ib_umem_get` refuses when the process's pinned pages, `VmPin`, would pass it), else
/// [`failed_pinning`].
fn failed_registration(len: usize, access: crate::types::Access) -> Error {
    let err = std::io::Error::last_os_error();
    let on_demand = access.contains(crate::types::Access::ON_DEMAND);
    match (err.raw_os_error(), crate::mem::memlock_limit()) {
        (Some(libc::ENOMEM), Some(limit)) if !on_demand => Error::MemlockTooLow {
            needed: crate::mem::pinned_bytes() + len as u64,
            limit,
        },
        _ => failed_with("register memory", err, ""),
    }
}

fn failed_with(operation: &'static str, err: std::io::Error, hint: &str) -> Error {
    match err.raw_os_error() {
        Some(libc::EBUSY) => Error::Busy(operation),
        _ => Error::Device {
            operation,
            reason: format!("{err}{hint}"),
        },
    }
}

fn is_set(var: Option<std::ffi::OsString>) -> bool {
    var.is_some_and(|v| v != "0")
}

/// libmlx5 variables that change the WQE formats this driver writes, refused at open. Both
/// count when present with any value, even "0" (verbs.c `qp_sig_enabled` /
/// `srq_sig_enabled`): the QP or SRQ is then created with `MLX5_QP_FLAG_SIGNATURE` /
/// `MLX5_SRQ_FLAG_SIGNATURE`, the kernel sets `wq_signature` in its context, every receive
/// WQE starts with a 16-byte signature segment (`mlx5_rwqe_sig`) and the device checks a
/// signature byte in every send WQE, none of which this driver writes.
const REFUSED_VARS: [(&str, &str); 2] = [
    (
        "MLX5_QP_SIGNATURE",
        "libmlx5 would create QPs that check WQE signatures this driver does not write",
    ),
    (
        "MLX5_SRQ_SIGNATURE",
        "libmlx5 would create SRQs that check WQE signatures this driver does not write",
    ),
];

/// The first refused variable `var` finds set ([`REFUSED_VARS`]).
fn refuse_environment(var: impl Fn(&str) -> Option<std::ffi::OsString>) -> Result<(), Error> {
    match REFUSED_VARS.iter().find(|(name, _)| var(name).is_some()) {
        Some(&(variable, reason)) => Err(Error::Environment { variable, reason }),
        None => Ok(()),
    }
}

/// A ConnectX NIC through rdma-core.
#[derive(Debug)]
pub struct Verbs {
    dev: Arc<DeviceCtx>,
    name: String,
    port: u8,
    gid_index: Option<u32>,
    caps: DeviceCaps,
    info: VerbsDeviceInfo,
}

impl Verbs {
    /// Opens the device `options` names (or the first mlx5 one) and checks its port.
    pub fn open(options: &VerbsOptions) -> Result<Self, Error> {
        refuse_environment(|name| std::env::var_os(name))?;
        let list = port::DeviceList::get()?;
        let (name, device) = list.choose(options.device.as_deref())?;
        // SAFETY: a device from the live list.
        let ctx = unsafe { ibv_open_device(device.as_ptr()) };
        let ctx = NonNull::new(ctx).ok_or_else(|| Error::Device {
            operation: "open device",
            reason: format!(
                "{name}: {} (is /dev/infiniband/uverbs* readable and writable by this user?)",
                errno(-1)
            ),
        })?;
        drop(list);
        let dev = Arc::new(DeviceCtx {
            ctx,
            bf_regs: BfRegisters::new(bfreg::single_threaded(
                std::env::var_os("MLX5_SINGLE_THREADED").as_deref(),
            )),
            rings: options.ring_memory.map(|m| Box::new(RingAllocator::new(m))),
        });
        if let Some(rings) = &dev.rings {
            // SAFETY: the context is open and no object exists yet; the allocator is boxed
            // in `dev`, which closes the context before dropping it.
            unsafe { rings.install(ctx) }?;
        }
        // SAFETY: the context is open while `dev` lives.
        events::set_nonblocking(unsafe { (*ctx.as_ptr()).async_fd });
        let (caps, info) = query_device(&dev)?;
        if options.port == 0 || options.port > info.phys_port_cnt {
            return Err(Error::InvalidArgument("no such port on the device"));
        }
        let verbs = Verbs {
            dev,
            name,
            port: options.port,
            gid_index: options.gid_index,
            caps,
            info,
        };
        verbs.port_attr(options.port)?;
        Ok(verbs)
    }

    /// The live ring allocations libmlx5 made through this crate's allocator
    /// ([`VerbsOptions::ring_memory`]), in address order; empty without it.
    pub fn ring_buffers(&self) -> Vec<RingBuffer> {
        self.dev
            .rings
            .as_ref()
            .map_or_else(Vec::new, |r| r.buffers())
    }

    /// What the device reports beyond [`DeviceCaps`].
    pub fn info(&self) -> &VerbsDeviceInfo {
        &self.info
    }

    /// The attributes of `port`, with the GID this backend uses there (the index given at
    /// open for the opened port, the default choice elsewhere).
    pub fn port_attr(&self, port: u8) -> Result<VerbsPort, Error> {
        let gid_index = if port == self.port {
            self.gid_index
        } else {
            None
        };
        port::query_port(self.dev.ctx, &self.name, port, gid_index)
    }
}

/// The limits `QpConfig::check` applies on this device (`crate::sizing`), from what
/// `ibv_query_device` reports. rdma-core v44 keeps the device's WQE limits
/// (`max_sq_desc_sz`, `max_rq_desc_sz`) private; the kernel derives `max_sge` from them
/// (mlx5 main.c `mlx5_ib_query_device`: the smaller of `max_wqe_sz_rq / 16` and
/// `(min(max_wqe_sz_sq, 512) - 32) / 16`), so `32 + 16 · max_sge` is a send WQE size and
/// `16 · max_sge` a receive WQE size the device is known to accept: the backend takes those
/// as the limits, refusing what it cannot show the device takes (e.g. `max_sge` 30: 512-byte
/// send WQEs, 460 inline bytes with atomics, 29 gather and 16 scatter entries).
fn caps_of(attr: &ibv_device_attr, shut_up_bf: bool) -> DeviceCaps {
    let max_sge = attr.max_sge.max(0) as u32;
    let max_wqe_size = (2 * DS as u32 + max_sge * DS as u32).min(MAX_WQE_FORMAT);
    let atomics = attr.atomic_cap != ibv_atomic_cap::IBV_ATOMIC_NONE;
    let depth = |n: c_int| n.clamp(0, 255) as u8;
    DeviceCaps {
        // `1 << log_max_qp_sz`, rdma-core's `max_send_wqebb` and `max_recv_wr`; kernels with
        // "RDMA/mlx5: Better estimate max_qp_wr" (6.17, stable backports) report a quarter
        // of it, which only makes the check stricter.
        max_sq_wqebbs: attr.max_qp_wr.max(0) as u32,
        max_wqe_size,
        max_send_sge: max_sge.min(sizing::max_gather(max_wqe_size, atomics)),
        // A receive stride is a power of two of 16-byte entries (verbs.c
        // `mlx5_calc_rcv_wqe`): the largest whose stride fits `16 · max_sge`.
        max_recv_sge: match max_sge {
            0 => 0,
            n => 1 << n.ilog2(),
        },
        max_cqe: attr.max_cqe.max(0) as u32,
        max_inline: sizing::max_inline(max_wqe_size, atomics),
        bf_size: if shut_up_bf { 0 } else { BF_HALF },
        max_rd_atomic: depth(attr.max_qp_init_rd_atom),
        max_dest_rd_atomic: depth(attr.max_qp_rd_atom),
        atomics,
        // mlx5 reports IBV_ATOMIC_HCA only in host-endianness mode (get_atomic_caps).
        atomic_8b_host_order: atomics,
        // The cap `compact_address_vector` is read only through DevX (QUERY_HCA_CAP), which
        // this backend does not issue; rdma-core's own AHs always set the extended bit.
        compact_av: false,
        // In the extended attributes only (`query_device`).
        max_dm_size: 0,
        max_mcast_grp: attr.max_mcast_grp.max(0) as u32,
        xrc: attr.device_cap_flags & ibv_device_cap_flags::IBV_DEVICE_XRC.0 != 0,
        pacing: PacingCaps::default(),
    }
}

/// The packet pacing of `caps` (`supported_qpts` holds `1 << ibv_qp_type`).
fn pacing_of(caps: &crate::backend::ffi::ibv_packet_pacing_caps) -> PacingCaps {
    let qpt = |t: u32| caps.supported_qpts & (1 << t) != 0;
    PacingCaps {
        min_kbps: caps.qp_rate_limit_min,
        max_kbps: caps.qp_rate_limit_max,
        rc: qpt(crate::backend::ffi::ibv_qp_type::IBV_QPT_RC),
        uc: qpt(crate::backend::ffi::ibv_qp_type::IBV_QPT_UC),
        ud: qpt(crate::backend::ffi::ibv_qp_type::IBV_QPT_UD),
        raw: qpt(crate::backend::ffi::ibv_qp_type::IBV_QPT_RAW_PACKET),
    }
}

fn query_device(dev: &DeviceCtx) -> Result<(DeviceCaps, VerbsDeviceInfo), Error> {
    // SAFETY: plain C data; zero is valid for every field (and stays so for the extended
    // fields of a provider that answers only the basic query).
    let mut ex: ibv_device_attr_ex = unsafe { core::mem::zeroed() };
    // SAFETY: an open context.
    let rc = unsafe { ext::query_device_ex(dev.ctx.as_ptr(), &mut ex) };
    if rc != 0 {
        return Err(failed("query device", rc));
    }
    let attr = ex.orig_attr;
    // SAFETY: plain C data (the one pointer, `hca_core_clock`, is only written when asked
    // for, and we do not ask).
    let mut dv: mlx5dv_context = unsafe { core::mem::zeroed() };
    dv.comp_mask = MLX5DV_CONTEXT_MASK_CQE_COMPRESION
        | MLX5DV_CONTEXT_MASK_DC_ODP_CAPS
        | MLX5DV_CONTEXT_MASK_DCI_STREAMS
        | MLX5DV_CONTEXT_MASK_STRIDING_RQ;
    // SAFETY: an open mlx5 context and a valid, fully sized out-struct.
    let rc = unsafe { mlx5dv_query_device(dev.ctx.as_ptr(), &mut dv) };
    if rc != 0 {
        return Err(failed("query mlx5 device", rc));
    }
    let fw = attr.fw_ver.map(|c| c as u8);
    let fw_len = fw.iter().position(|&b| b == 0).unwrap_or(fw.len());
    let shut_up_bf = is_set(std::env::var_os("MLX5_SHUT_UP_BF"));
    let caps = DeviceCaps {
        max_dm_size: ex.max_dm_size,
        pacing: pacing_of(&ex.packet_pacing_caps),
        ..caps_of(&attr, shut_up_bf)
    };
    let comp = dv.comp_mask & MLX5DV_CONTEXT_MASK_CQE_COMPRESION != 0;
    let info = VerbsDeviceInfo {
        fw_ver: String::from_utf8_lossy(&fw[..fw_len]).into_owned(),
        vendor_part_id: attr.vendor_part_id,
        phys_port_cnt: attr.phys_port_cnt,
        max_qp: attr.max_qp.max(0) as u32,
        max_srq_wr: attr.max_srq_wr.max(0) as u32,
        max_srq_sge: attr.max_srq_sge.max(0) as u32,
        atomic_cap: attr.atomic_cap,
        cqe_version: u8::from(dv.flags & MLX5DV_CONTEXT_FLAGS_CQE_V1 != 0),
        cqe_128b_compression: dv.flags & MLX5DV_CONTEXT_FLAGS_CQE_128B_COMP != 0,
        cqe_128b_padding: dv.flags & MLX5DV_CONTEXT_FLAGS_CQE_128B_PAD != 0,
        cqe_comp_max_num: if comp { dv.cqe_comp_caps.max_num } else { 0 },
        cqe_comp_formats: if comp {
            dv.cqe_comp_caps.supported_format
        } else {
            0
        },
        shut_up_bf,
        blueflame_reported: dv.flags & MLX5DV_CONTEXT_FLAGS_BLUEFLAME != 0,
        hca_core_clock_khz: ex.hca_core_clock,
        completion_timestamp_mask: ex.completion_timestamp_mask,
        odp: OdpCaps::new(
            &ex.odp_caps,
            match dv.comp_mask & MLX5DV_CONTEXT_MASK_DC_ODP_CAPS {
                0 => 0,
                _ => dv.dc_odp_caps,
            },
        ),
        dci_streams: (dv.comp_mask & MLX5DV_CONTEXT_MASK_DCI_STREAMS != 0).then_some((
            dv.dci_streams_caps.max_log_num_concurent,
            dv.dci_streams_caps.max_log_num_errored,
        )),
        max_tso: ex.tso_caps.max_tso,
        enhanced_mpw: dv.flags & MLX5DV_CONTEXT_FLAGS_ENHANCED_MPW != 0,
        striding_rq: dv.comp_mask & MLX5DV_CONTEXT_MASK_STRIDING_RQ != 0
            && dv.striding_rq_caps.max_single_wqe_log_num_of_strides != 0,
    };
    Ok((caps, info))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shut_up_bf_counts_when_set_to_anything_but_zero() {
        assert!(!is_set(None));
        assert!(!is_set(Some("0".into())));
        assert!(is_set(Some("1".into())));
        assert!(is_set(Some("".into())));
    }

    #[test]
    fn limits_follow_the_kernels_max_sge_and_rdma_cores_sizing() {
        // SAFETY: plain C data; zero is valid for every field.
        let mut attr: ibv_device_attr = unsafe { core::mem::zeroed() };
        attr.max_sge = 30;
        attr.max_qp_wr = 1 << 15;
        attr.max_cqe = (1 << 22) - 1;
        attr.max_qp_rd_atom = 16;
        attr.max_qp_init_rd_atom = 64;
        attr.atomic_cap = ibv_atomic_cap::IBV_ATOMIC_HCA;
        let caps = caps_of(&attr, false);
        assert_eq!(
            caps,
            DeviceCaps {
                max_sq_wqebbs: 1 << 15,
                max_wqe_size: 512,
                max_send_sge: 29,
                max_recv_sge: 16,
                max_cqe: (1 << 22) - 1,
                max_inline: 460,
                bf_size: 256,
                max_rd_atomic: 64,
                max_dest_rd_atomic: 16,
                atomics: true,
                atomic_8b_host_order: true,
                compact_av: false,
                max_dm_size: 0,
                max_mcast_grp: 0,
                xrc: false,
                pacing: PacingCaps::default(),
            }
        );
        attr.atomic_cap = ibv_atomic_cap::IBV_ATOMIC_NONE;
        attr.max_qp_init_rd_atom = 1000;
        let caps = caps_of(&attr, true);
        assert_eq!(
            (caps.max_send_sge, caps.max_inline, caps.bf_size),
            (30, 476, 0),
            "32 bytes of overhead without atomics"
        );
        assert_eq!((caps.max_rd_atomic, caps.atomics), (255, false));
        attr.max_sge = 64;
        assert_eq!(caps_of(&attr, false).max_wqe_size, MAX_WQE_FORMAT);
    }

    #[test]
    fn pinning_failures_name_the_memlock_limit() {
        let reason = |e: Error| match e {
            Error::Device { reason, .. } => reason,
            other => panic!("{other:?}"),
        };
        assert!(reason(failed_pinning("register memory", libc::ENOMEM)).contains("RLIMIT_MEMLOCK"));
        assert!(reason(failed_pinning("create QP", libc::EPERM)).contains("RLIMIT_MEMLOCK"));
        assert!(!reason(failed_pinning("create QP", libc::EINVAL)).contains("RLIMIT_MEMLOCK"));
        assert_eq!(
            failed_pinning("create CQ", libc::EBUSY),
            Error::Busy("create CQ")
        );
    }

    #[test]
    fn signature_variables_are_refused_whatever_their_value() {
        let only = |set: &'static str, value: &'static str| {
            move |name: &str| (name == set).then(|| value.into())
        };
        assert_eq!(refuse_environment(|_| None), Ok(()));
        assert_eq!(refuse_environment(only("MLX5_SHUT_UP_BF", "1")), Ok(()));
        for variable in ["MLX5_QP_SIGNATURE", "MLX5_SRQ_SIGNATURE"] {
            for value in ["1", "0", ""] {
                let err = refuse_environment(only(variable, value)).unwrap_err();
                assert!(
                    matches!(err, Error::Environment { variable: v, .. } if v == variable),
                    "{variable}={value:?}: {err:?}"
                );
            }
        }
    }
}
