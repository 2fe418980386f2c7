//! Slow-path backends: where queues, keys and QP states come from.
//!
//! A backend creates objects and hands over their memory as queue descriptions
//! ([`SqDesc`], [`RqDesc`], [`CqDesc`]); from there on the data path is the same code for
//! every backend. Handles release their object when dropped.
//!
//! - [`sim`] (feature `sim`, default): the built-in device model, `mlx5-hw`.
//! - `verbs` (feature `verbs`): a ConnectX NIC through libibverbs and `mlx5dv_init_obj`;
//!   `mlx5dv` holds its hand-written mlx5dv FFI declarations.

use crate::clock::ClockInfo;
use crate::cq::mprq::WqDesc;
use crate::cq::CqDesc;
use crate::error::Error;
use crate::eth::{EthCaps, FlowRule, RxHashConfig, StridingConfig};
use crate::event::AsyncEvent;
use crate::mcast::McastGroup;
use crate::mem::MemOptions;
use crate::mmio::{DmWindow, Uar};
use crate::prm::Av;
use crate::rq::RqDesc;
use crate::sq::SqDesc;
use crate::types::{
    Access, AhAttr, CqConfig, DeviceCaps, Endpoint, GidEntry, PortInfo, QpConfig, QpPsn, QpSizes,
    RateLimit, Transition,
};
use core::time::Duration;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd};

#[cfg(feature = "verbs")]
mod ffi;
#[cfg(feature = "verbs")]
#[cfg_attr(docsrs, doc(cfg(feature = "verbs")))]
pub mod mlx5dv;
#[cfg(feature = "verbs")]
#[cfg_attr(docsrs, doc(cfg(feature = "verbs")))]
pub mod rdmacm;
#[cfg(feature = "sim")]
#[cfg_attr(docsrs, doc(cfg(feature = "sim")))]
pub mod sim;
#[cfg(feature = "verbs")]
#[cfg_attr(docsrs, doc(cfg(feature = "verbs")))]
pub mod verbs;

/// Waits up to `timeout` for `fd` to become readable (poll(2)); false on timeout or when a
/// signal interrupted the wait.
pub(crate) fn wait_readable(fd: BorrowedFd<'_>, timeout: Duration) -> std::io::Result<bool> {
    let mut fds = libc::pollfd {
        fd: fd.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    let ms = timeout.as_millis().min(libc::c_int::MAX as u128) as libc::c_int;
    // SAFETY: one valid pollfd, for the duration of the call.
    let ready = unsafe { libc::poll(&mut fds, 1, ms) };
    if ready < 0 {
        let err = std::io::Error::last_os_error();
        if err.kind() == std::io::ErrorKind::Interrupted {
            return Ok(false);
        }
        return Err(err);
    }
    Ok(ready > 0)
}

/// What a backend returns for a new QP.
#[derive(Debug)]
pub struct QpParts<B: Backend> {
    /// The backend's handle (destroys the QP when dropped).
    pub handle: B::Qp,
    /// QP number.
    pub qpn: u32,
    /// The send queue.
    pub sq: SqDesc,
    /// The receive queue (none with an SRQ).
    pub rq: Option<RqDesc>,
    /// The UAR page holding the QP's doorbell register.
    pub uar: B::Uar,
}

/// A backend's address handle: whatever must live as long as the AV is used (the
/// `ibv_ah` on hardware; nothing on the model).
pub type AhHandle = Box<dyn core::fmt::Debug + Send + Sync>;

/// A backend's steering rule: destroys the rule when dropped (`ibv_destroy_flow` on
/// hardware).
pub type FlowHandle = Box<dyn core::fmt::Debug + Send + Sync>;

/// A backend's receive work queue (`ibv_wq`): destroyed when dropped.
pub trait WqObject: core::fmt::Debug + Send + Sync {
    /// Its number.
    fn wqn(&self) -> u32;
    /// Moves it RESET → RDY (`ibv_modify_wq`): it takes frames from an RSS QP from here on.
    fn ready(&self) -> Result<(), Error>;
    /// The backend's own type, for its [`Backend::create_rss_qp`].
    fn as_any(&self) -> &dyn core::any::Any;
}

/// A backend's RSS QP (`ibv_create_qp_ex` with an indirection table and a hash):
/// destroyed when dropped.
pub trait RssObject: core::fmt::Debug + Send + Sync {
    /// Its number.
    fn qpn(&self) -> u32;
    /// Creates the steering rule `rule` on `port` delivering to it.
    fn create_flow(&self, port: u8, rule: &FlowRule) -> Result<FlowHandle, Error>;
}

/// A slow-path backend.
pub trait Backend: Send + Sync + Sized + core::fmt::Debug + 'static {
    /// The UAR page type the data path stores doorbells to.
    type Uar: Uar;
    /// Protection domain handle.
    type Pd: Send + Sync + core::fmt::Debug;
    /// Memory region handle.
    type Mr: Send + Sync + core::fmt::Debug;
    /// CQ handle (owns the CQ memory when the backend allocated it).
    type Cq: Send + Sync + core::fmt::Debug;
    /// SRQ handle.
    type Srq: Send + Sync + core::fmt::Debug;
    /// QP handle.
    type Qp: Send + Sync + core::fmt::Debug;
    /// Completion channel handle: a file descriptor that is readable while a completion
    /// event waits on the channel.
    type Channel: Send + Sync + core::fmt::Debug + AsFd;
    /// Device memory (MEMIC) handle: the allocation and its write-combining mapping; frees
    /// the allocation when dropped.
    type Dm: DmWindow;
    /// XRC domain handle (closes the domain when dropped, after every XRC SRQ and target
    /// in it: they hold it).
    type Xrcd: Send + Sync + core::fmt::Debug;

    /// Device name.
    fn name(&self) -> &str;
    /// Device limits.
    fn caps(&self) -> DeviceCaps;
    /// Port attributes (ports are numbered from 1).
    fn port(&self, port: u8) -> Result<PortInfo, Error>;
    /// Entry `index` of `port`'s GID table.
    fn gid(&self, port: u8, index: u32) -> Result<GidEntry, Error>;
    /// The port the context was opened on: QPs use it unless told otherwise.
    fn default_port(&self) -> u8;
    /// Allocates a protection domain.
    fn alloc_pd(&self) -> Result<Self::Pd, Error>;
    /// A parent domain of `pd`: the same protection domain, whose QPs and SRQs take their
    /// buffers and doorbell records from memory placed as `ring_memory` says
    /// (`ibv_alloc_parent_domain` with `alloc`/`free` callbacks on hardware).
    fn alloc_parent_domain(
        &self,
        pd: &Self::Pd,
        ring_memory: &MemOptions,
    ) -> Result<Self::Pd, Error>;
    /// Registers `len` bytes at `addr`, backed by pages of `page_size` bytes (what the
    /// device's translations cover); returns the handle, lkey and rkey.
    ///
    /// # Safety
    /// The memory must stay valid until the handle is dropped.
    unsafe fn reg_mr(
        &self,
        pd: &Self::Pd,
        addr: *mut u8,
        len: usize,
        page_size: usize,
        access: Access,
    ) -> Result<(Self::Mr, u32, u32), Error>;
    /// Brings `len` bytes at `addr` of the on-demand region `mr` in before the device
    /// touches them (`ibv_advise_mr` with `IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE`, flushed:
    /// done when this returns). A backend without on-demand paging refuses.
    fn advise_mr(&self, pd: &Self::Pd, mr: &Self::Mr, addr: u64, len: usize) -> Result<(), Error> {
        let _ = (pd, mr, addr, len);
        Err(Error::OnDemandPaging(
            "this backend has no on-demand paging".into(),
        ))
    }
    /// Allocates `len` bytes of device memory (not above `DeviceCaps::max_dm_size`, checked
    /// by the caller) aligned to `1 << log_align` (`ibv_alloc_dm`); returns the handle and
    /// the size the device gave (rounded up to 64 bytes).
    fn alloc_dm(&self, len: usize, log_align: u8) -> Result<(Self::Dm, usize), Error>;
    /// Registers `len` bytes at `offset` of `dm` in `pd` (`ibv_reg_dm_mr` with
    /// `IBV_ACCESS_ZERO_BASED`; the range checked by the caller); returns the handle, lkey
    /// and rkey.
    fn reg_dm_mr(
        &self,
        pd: &Self::Pd,
        dm: &Self::Dm,
        offset: usize,
        len: usize,
        access: Access,
    ) -> Result<(Self::Mr, u32, u32), Error>;
    /// Creates a completion channel (`ibv_create_comp_channel`).
    fn create_channel(&self) -> Result<Self::Channel, Error>;
    /// Takes the next completion event of `channel` and returns the CQN it is for, or
    /// `None` if none is pending; never blocks. The event is acknowledged to the layer
    /// below (`ibv_ack_cq_events`), so destroying its CQ never waits for it.
    fn get_cq_event(&self, channel: &Self::Channel) -> Result<Option<u32>, Error>;
    /// Creates a CQ as `config` says (its CQE size already checked: 64 or 128) whose
    /// completion events go to `channel`; refuses ([`Error::Unsupported`]) timestamps on a
    /// device without a clock and compression (`mlx5dv_create_cq` with
    /// `MLX5DV_CQ_INIT_ATTR_MASK_COMPRESSED_CQE`) the device cannot give.
    fn create_cq(
        &self,
        config: &CqConfig,
        channel: &Self::Channel,
    ) -> Result<(Self::Cq, CqDesc, Self::Uar), Error>;
    /// The device clock's calibration (`mlx5dv_get_clock_info`): converts CQE timestamps to
    /// nanoseconds; [`Error::Unsupported`] without a clock.
    fn clock_info(&self) -> Result<ClockInfo, Error>;
    /// Creates an SRQ of at least `entries` WQEs with `max_sge` scatter entries each.
    fn create_srq(
        &self,
        pd: &Self::Pd,
        entries: u32,
        max_sge: u32,
    ) -> Result<(Self::Srq, RqDesc, u32), Error>;
    /// Opens an XRC domain (`ibv_open_xrcd`, with no file: a domain of this process
    /// alone). A device without XRC ([`DeviceCaps::xrc`]) refuses with
    /// [`Error::Unsupported`]; so does a backend without XRC.
    fn open_xrcd(&self) -> Result<Self::Xrcd, Error> {
        Err(Error::Unsupported("XRC on this backend"))
    }
    /// Creates an XRC SRQ (`ibv_create_srq_ex` with `IBV_SRQT_XRC`) of at least `entries`
    /// WQEs with `max_sge` scatter entries each, in `pd` and XRC domain `xrcd`, completing
    /// on `cq`. Returns the handle, its ring, its number (what initiators name,
    /// `ibv_get_srq_num`) and the `srqn_uidx` bits 23..0 its receive CQEs carry (its user
    /// index under CQE version 1, else its number), by which the poller finds it.
    fn create_xrc_srq(
        &self,
        pd: &Self::Pd,
        xrcd: &Self::Xrcd,
        cq: &Self::Cq,
        entries: u32,
        max_sge: u32,
    ) -> Result<(Self::Srq, RqDesc, u32, u32), Error> {
        let _ = (pd, xrcd, cq, entries, max_sge);
        Err(Error::Unsupported("XRC on this backend"))
    }
    /// Creates an XRC target QP in `xrcd` (`ibv_create_qp_ex` with `IBV_QPT_XRC_RECV`), in
    /// RESET, with no rings, PD or CQ: it moves through RC's transitions
    /// ([`Backend::modify_qp`]). Returns the handle and the QP number.
    fn create_xrc_target(&self, xrcd: &Self::Xrcd) -> Result<(Self::Qp, u32), Error> {
        let _ = xrcd;
        Err(Error::Unsupported("XRC on this backend"))
    }
    /// Creates an address handle for UD sends and returns it with its 48-byte address vector
    /// (`dqp_dct` and the Q_Key 0: every WQE writes both). A backend without UD refuses.
    fn create_ah(&self, pd: &Self::Pd, attr: &AhAttr) -> Result<(AhHandle, Av), Error> {
        let _ = (pd, attr);
        Err(Error::Device {
            operation: "create AH",
            reason: "this backend has no UD support".into(),
        })
    }
    /// The device's Ethernet capabilities, for raw packet QPs. A backend without raw
    /// Ethernet refuses.
    fn eth_caps(&self) -> Result<EthCaps, Error> {
        Err(Error::Unsupported("raw Ethernet on this backend"))
    }
    /// Creates the steering rule `rule` on `port` delivering frames to the raw packet QP
    /// `qp` (`ibv_create_flow`). A backend without raw Ethernet refuses.
    fn create_flow(&self, qp: &Self::Qp, port: u8, rule: &FlowRule) -> Result<FlowHandle, Error> {
        let _ = (qp, port, rule);
        Err(Error::Unsupported("raw Ethernet on this backend"))
    }
    /// Creates a striding receive work queue of `config` completing on `cq`, in RESET,
    /// its ring and record the backend's (`mlx5dv_create_wq` with
    /// `MLX5DV_WQ_INIT_ATTR_MASK_STRIDING_RQ`). A backend without it refuses.
    fn create_striding_wq(
        &self,
        pd: &Self::Pd,
        cq: &Self::Cq,
        config: &StridingConfig,
    ) -> Result<(Box<dyn WqObject>, WqDesc), Error> {
        let _ = (pd, cq, config);
        Err(Error::Unsupported("striding work queues on this backend"))
    }
    /// Creates an RSS QP over the work queues `wqs` (the indirection table, a power of
    /// two of them, this backend's: `ibv_create_rwq_ind_table`) with `hash` (`None`:
    /// every frame to the first). A backend without it refuses.
    fn create_rss_qp(
        &self,
        pd: &Self::Pd,
        wqs: &[&dyn WqObject],
        hash: Option<&RxHashConfig>,
    ) -> Result<Box<dyn RssObject>, Error> {
        let _ = (pd, wqs, hash);
        Err(Error::Unsupported("RSS QPs on this backend"))
    }
    /// Creates a QP (`config.transport`) of `config`, whose rings `sizes` (from [`QpConfig::check`]) gives.
    fn create_qp(
        &self,
        pd: &Self::Pd,
        send_cq: &Self::Cq,
        recv_cq: &Self::Cq,
        srq: Option<&Self::Srq>,
        config: &QpConfig,
        sizes: &QpSizes,
    ) -> Result<QpParts<Self>, Error>;
    /// Creates a DC target (`mlx5dv_create_qp` with `MLX5DV_DCTYPE_DCT`) in RESET, taking
    /// its receives from `srq` and completing them on `recv_cq`, admitting DCIs that carry
    /// `dc_key`. Its number exists once it is in RTR ([`Backend::dct_number`]). A backend
    /// without DC refuses.
    fn create_dct(
        &self,
        pd: &Self::Pd,
        recv_cq: &Self::Cq,
        srq: &Self::Srq,
        dc_key: u64,
    ) -> Result<Self::Qp, Error> {
        let _ = (pd, recv_cq, srq, dc_key);
        Err(Error::Device {
            operation: "create DCT",
            reason: "this backend has no DC support".into(),
        })
    }
    /// The number of a DCT in RTR (the device hands it out at INIT → RTR).
    fn dct_number(&self, dct: &Self::Qp) -> Result<u32, Error> {
        let _ = dct;
        Err(Error::Device {
            operation: "query DCT",
            reason: "this backend has no DC support".into(),
        })
    }
    /// Attaches the UD QP `qp` to `group` (`ibv_attach_mcast`): it then receives the
    /// datagrams sent to the group. The caller has checked what the kernel checks (a UD
    /// QP, a multicast MGID, on InfiniBand a multicast MLID) and that the QP is not
    /// attached to it yet. A full group table is
    /// [`McastRefusal::TableFull`](crate::McastRefusal::TableFull); a backend without
    /// multicast refuses.
    fn attach_mcast(&self, qp: &Self::Qp, group: &McastGroup) -> Result<(), Error> {
        let _ = (qp, group);
        Err(Error::Unsupported("multicast on this backend"))
    }
    /// Detaches `qp` from `group`, to which the caller attached it (`ibv_detach_mcast`).
    fn detach_mcast(&self, qp: &Self::Qp, group: &McastGroup) -> Result<(), Error> {
        let _ = (qp, group);
        Err(Error::Unsupported("multicast on this backend"))
    }
    /// Sets or removes (`limit.kbps` 0) the rate limit of a QP in RTS
    /// (`ibv_modify_qp_rate_limit`; the caller has checked the state and that a burst or
    /// typical size comes with a rate). A device without packet pacing for the QP's
    /// transport is [`Error::Unsupported`]; a backend without pacing refuses so.
    fn set_rate_limit(&self, qp: &Self::Qp, limit: &RateLimit) -> Result<(), Error> {
        let _ = (qp, limit);
        Err(Error::Unsupported("packet pacing on this backend"))
    }
    /// Moves a QP to another state.
    fn modify_qp(&self, qp: &Self::Qp, transition: &Transition) -> Result<(), Error>;
    /// Takes stream `stream` of a DCI in RTS out of error (`mlx5dv_dci_stream_id_reset`).
    /// A backend without DCI streams refuses.
    fn reset_dci_stream(&self, qp: &Self::Qp, stream: u16) -> Result<(), Error> {
        let _ = (qp, stream);
        Err(Error::Unsupported("DCI streams on this backend"))
    }
    /// Reads a QP's sequence numbers from the device, in any state but RESET (which clears
    /// them): [`Qp::reset`](crate::Qp::reset) continues them across the reset.
    fn query_psn(&self, qp: &Self::Qp) -> Result<QpPsn, Error>;
    /// Takes the next asynchronous event of the device, if one is pending; never blocks.
    fn poll_async_event(&self) -> Result<Option<AsyncEvent>, Error>;
    /// Waits up to `timeout` for the next asynchronous event (`None`: none came).
    fn wait_async_event(&self, timeout: Duration) -> Result<Option<AsyncEvent>, Error>;
    /// The address a peer needs to reach `qpn` through `port`.
    fn endpoint(&self, port: u8, qpn: u32, psn: u32) -> Result<Endpoint, Error> {
        let info = self.port(port)?;
        Ok(Endpoint {
            lid: info.lid,
            gid: info.gid,
            qpn,
            psn,
        })
    }
}
