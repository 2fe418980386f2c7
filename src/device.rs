//! User-facing objects: context, protection domain, memory region, CQ, SRQ, QP.
//!
//! Control objects are reference counted: a QP keeps its PD, CQs and SRQ alive, a memory
//! region its PD, every object its context, so teardown order is always right whatever
//! order values are dropped in. The data-path parts ([`crate::sq::SendQueue`],
//! [`crate::rq::RecvQueue`], [`crate::cq::CompletionQueue`]) are reached through `&mut`.

use core::sync::atomic::{AtomicBool, Ordering};
use core::time::Duration;
use std::collections::HashMap;
use std::ops::{Deref, DerefMut};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use crate::backend::{AhHandle, Backend};
use crate::channel::CompChannel;
use crate::clock::ClockInfo;
use crate::cq::{CompletionQueue, CqAttachments, QpEntry, RecvShared};
use crate::error::Error;
use crate::event::AsyncEvent;
use crate::mem::{MemOptions, Memory, MrTable};
use crate::prm::{Av, DS};
use crate::rq::{RecvQueue, RqShared, SharedRecvQueue, SrqShared};
use crate::sq::{DcDest, Remote, SendQueue, Sge, SqShared, UdDest};
use crate::types::{
    Access, AhAttr, ConnectOptions, CqConfig, DeviceCaps, Endpoint, GidEntry, PortInfo, QpConfig,
    QpState, Transition, Transport,
};

/// The error flags of a context's live QPs (by QPN) or CQs (by CQN): where an asynchronous
/// error event is recorded.
type ErrorFlags = Mutex<HashMap<u32, Arc<AtomicBool>>>;

/// Locks `flags`, a poisoned lock included (a flag map has no invariant to break).
fn lock_flags(flags: &ErrorFlags) -> MutexGuard<'_, HashMap<u32, Arc<AtomicBool>>> {
    flags.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Sets the flag of object `number` in `flags`, if it has one.
fn raise(flags: &ErrorFlags, number: u32) {
    if let Some(flag) = lock_flags(flags).get(&number) {
        flag.store(true, Ordering::Relaxed);
    }
}

/// An opened device.
#[derive(Debug)]
pub struct Context<B: Backend> {
    backend: Arc<B>,
    qps: Arc<ErrorFlags>,
    /// The send-queue error flags of UD and UC QPs, which a QP error sets too.
    sq_errors: Arc<ErrorFlags>,
    cqs: Arc<ErrorFlags>,
    /// The channel of the CQs made by [`Context::create_cq`], made with the first of them.
    channel: Arc<Mutex<Option<CompChannel<B>>>>,
    /// The live regions the device may write, for data carried in CQEs.
    mrs: Arc<MrTable>,
}

impl<B: Backend> Clone for Context<B> {
    fn clone(&self) -> Self {
        Context {
            backend: self.backend.clone(),
            qps: self.qps.clone(),
            sq_errors: self.sq_errors.clone(),
            cqs: self.cqs.clone(),
            channel: self.channel.clone(),
            mrs: self.mrs.clone(),
        }
    }
}

impl<B: Backend> Context<B> {
    /// A context over an opened backend.
    pub fn new(backend: B) -> Self {
        Context {
            backend: Arc::new(backend),
            qps: Arc::default(),
            sq_errors: Arc::default(),
            cqs: Arc::default(),
            channel: Arc::default(),
            mrs: Arc::default(),
        }
    }

    /// Takes the next asynchronous event of the device, if one is pending; never blocks.
    /// A QP the event says the device moved to ERR reports [`QpState::Err`] from now on, a
    /// CQ it says is in error reports [`Cq::is_error`] (see [`crate::event`]).
    pub fn poll_async_event(&self) -> Result<Option<AsyncEvent>, Error> {
        let event = self.backend.poll_async_event()?;
        Ok(self.record(event))
    }

    /// Waits up to `timeout` for the next asynchronous event (`None`: none came), recorded
    /// as by [`Context::poll_async_event`].
    pub fn wait_async_event(&self, timeout: Duration) -> Result<Option<AsyncEvent>, Error> {
        let event = self.backend.wait_async_event(timeout)?;
        Ok(self.record(event))
    }

    fn record(&self, event: Option<AsyncEvent>) -> Option<AsyncEvent> {
        if let Some(qpn) = event.as_ref().and_then(AsyncEvent::failed_qp) {
            raise(&self.qps, qpn);
            raise(&self.sq_errors, qpn);
        }
        if let Some(cqn) = event.as_ref().and_then(AsyncEvent::failed_cq) {
            raise(&self.cqs, cqn);
        }
        event
    }

    /// The backend (e.g. the model, for its PCIe counters and fault injection).
    pub fn backend(&self) -> &B {
        &self.backend
    }

    /// Device limits.
    pub fn caps(&self) -> DeviceCaps {
        self.backend.caps()
    }

    /// The device clock's calibration, to convert
    /// [`Completion::timestamp`](crate::Completion::timestamp) with [`ClockInfo::to_ns`]: a
    /// copy of a page of host
    /// memory (`mlx5dv_get_clock_info`), no device access. Take it again every
    /// few seconds in long runs (see [`crate::clock`]). [`Error::Unsupported`] without a clock.
    pub fn clock_info(&self) -> Result<ClockInfo, Error> {
        self.backend.clock_info()
    }

    /// Port attributes.
    pub fn port(&self, port: u8) -> Result<PortInfo, Error> {
        self.backend.port(port)
    }

    /// Entry `index` of `port`'s GID table, below [`PortInfo::gid_table_len`]
    /// (`ibv_query_gid_ex`): the GID and its type, which decides what a UD address handle
    /// from it sends ([`GlobalRoute::sgid_index`](crate::GlobalRoute::sgid_index)) and what
    /// a receive's 40-byte area holds. An index beyond the table, or an empty entry, is an
    /// error.
    pub fn query_gid(&self, port: u8, index: u32) -> Result<GidEntry, Error> {
        self.backend.gid(port, index)
    }

    /// Allocates a protection domain.
    pub fn alloc_pd(&self) -> Result<ProtectionDomain<B>, Error> {
        let handle = self.backend.alloc_pd()?;
        Ok(ProtectionDomain {
            inner: Arc::new(PdInner {
                handle,
                ctx: self.clone(),
                _parent: None,
            }),
        })
    }

    /// Creates a completion channel: CQs created on it
    /// ([`Context::create_cq_on`]) deliver their completion events there, and one thread
    /// (or an epoll loop, or an async task) waits for all of them. See [`crate::channel`].
    pub fn create_comp_channel(&self) -> Result<CompChannel<B>, Error> {
        CompChannel::new(self.backend.clone())
    }

    /// Creates a CQ with at least `entries` entries of `cqe_size` (64 or 128) bytes, on the
    /// context's own completion channel (shared by every CQ created this way; reach it
    /// with [`Cq::channel`]).
    pub fn create_cq(&self, entries: u32, cqe_size: usize) -> Result<Cq<B>, Error> {
        self.create_cq_with(&CqConfig::new(entries, cqe_size))
    }

    /// Creates a CQ as `config` says, on the context's own completion channel (as
    /// [`Context::create_cq`]).
    pub fn create_cq_with(&self, config: &CqConfig) -> Result<Cq<B>, Error> {
        self.make_cq(&self.own_channel()?, config)
    }

    /// The context's own completion channel, created on first use.
    fn own_channel(&self) -> Result<CompChannel<B>, Error> {
        let mut own = self.channel.lock().unwrap_or_else(PoisonError::into_inner);
        Ok(match &*own {
            Some(channel) => channel.clone(),
            None => own.insert(self.create_comp_channel()?).clone(),
        })
    }

    /// Creates a CQ with at least `entries` entries of `cqe_size` (64 or 128) bytes whose
    /// completion events go to `channel` (`ibv_create_cq` with a channel).
    pub fn create_cq_on(
        &self,
        channel: &CompChannel<B>,
        entries: u32,
        cqe_size: usize,
    ) -> Result<Cq<B>, Error> {
        let config = CqConfig::new(entries, cqe_size);
        self.create_cq_on_with(channel, &config)
    }

    /// Creates a CQ as `config` says whose completion events go to `channel`.
    pub fn create_cq_on_with(
        &self,
        channel: &CompChannel<B>,
        config: &CqConfig,
    ) -> Result<Cq<B>, Error> {
        self.make_cq(channel, config)
    }

    fn make_cq(&self, channel: &CompChannel<B>, config: &CqConfig) -> Result<Cq<B>, Error> {
        if config.cqe_size != 64 && config.cqe_size != 128 {
            return Err(Error::InvalidArgument("CQE size must be 64 or 128"));
        }
        let (handle, desc, uar) = self.backend.create_cq(config, channel.handle())?;
        let attachments = Arc::new(CqAttachments::default());
        let events = channel.register(desc.cqn);
        // SAFETY: the backend's description stays valid while `handle` lives, and the
        // queue is dropped before its `inner` (field order; `inner` holds the handle).
        let mut queue = unsafe {
            CompletionQueue::new(&desc, uar, attachments.clone(), events, config.timestamps)
        };
        if let Some(c) = config.compression {
            queue.expand_compressed(c);
        }
        queue.copy_scattered(self.mrs.clone());
        let errored = Arc::new(AtomicBool::new(false));
        lock_flags(&self.cqs).insert(desc.cqn, errored.clone());
        Ok(Cq {
            queue,
            inner: Arc::new(CqInner {
                handle,
                attachments,
                cqn: desc.cqn,
                errored,
                channel: channel.clone(),
                ctx: self.clone(),
            }),
        })
    }
}

#[cfg(feature = "sim")]
impl Context<crate::backend::sim::Sim> {
    /// Opens a model NIC on a fabric of its own.
    pub fn open_sim() -> Self {
        Context::new(crate::backend::sim::Sim::new())
    }
}

#[cfg(feature = "verbs")]
impl Context<crate::backend::verbs::Verbs> {
    /// Opens a ConnectX device (`-d mlx5_0 -i port -x gid_index` in perftest's terms).
    pub fn open(options: &crate::backend::verbs::VerbsOptions) -> Result<Self, Error> {
        Ok(Context::new(crate::backend::verbs::Verbs::open(options)?))
    }
}

#[derive(Debug)]
struct PdInner<B: Backend> {
    handle: B::Pd,
    ctx: Context<B>,
    /// A parent domain's PD, released after the domain (field order).
    _parent: Option<ProtectionDomain<B>>,
}

/// A protection domain.
#[derive(Debug)]
pub struct ProtectionDomain<B: Backend> {
    inner: Arc<PdInner<B>>,
}

impl<B: Backend> Clone for ProtectionDomain<B> {
    fn clone(&self) -> Self {
        ProtectionDomain {
            inner: self.inner.clone(),
        }
    }
}

impl<B: Backend> ProtectionDomain<B> {
    /// The backend's handle.
    pub fn handle(&self) -> &B::Pd {
        &self.inner.handle
    }

    /// The context the PD was allocated on.
    pub fn context(&self) -> &Context<B> {
        &self.inner.ctx
    }

    /// A parent domain of this PD (`ibv_alloc_parent_domain` with `alloc`/`free`
    /// callbacks on hardware): the QPs, DCIs, DCTs and SRQs created on it take their
    /// buffers and doorbell records from memory placed as `ring_memory` says (huge pages, a
    /// NUMA node), a choice per resource where `VerbsOptions::ring_memory` and
    /// `Sim::with_ring_memory` make one per context (the domain's comes first). The
    /// doorbell records take base pages of the node (libmlx5 asks a domain for each 8-byte
    /// record alone). Its queues are in this PD's protection domain: register their memory
    /// on this PD. A refused allocation fails the creation with the typed error
    /// ([`Error::NoHugePages`], [`Error::NumaNode`]). CQs belong to no PD and keep the
    /// context's choice (docs/memory.md).
    pub fn alloc_parent_domain(
        &self,
        ring_memory: &MemOptions,
    ) -> Result<ProtectionDomain<B>, Error> {
        let ctx = &self.inner.ctx;
        let handle = ctx
            .backend()
            .alloc_parent_domain(&self.inner.handle, ring_memory)?;
        Ok(ProtectionDomain {
            inner: Arc::new(PdInner {
                handle,
                ctx: ctx.clone(),
                _parent: Some(self.clone()),
            }),
        })
    }

    /// Allocates `len` bytes of page-aligned, zeroed memory and registers it.
    pub fn alloc_mr(&self, len: usize, access: Access) -> Result<MemoryRegion<B>, Error> {
        self.alloc_mr_with(len, access, &MemOptions::BASE)
    }

    /// Allocates `len` bytes of zeroed memory placed as `options` says (huge pages, a NUMA
    /// node; `docs/memory.md`) and registers it. The region's [`MemoryRegion::page_size`]
    /// is the page size the device translates it in.
    pub fn alloc_mr_with(
        &self,
        len: usize,
        access: Access,
        options: &MemOptions,
    ) -> Result<MemoryRegion<B>, Error> {
        let memory = Memory::with_options(len, options)?;
        // SAFETY: `memory` is owned by the region and dropped after the registration.
        unsafe { self.register_memory(memory, access) }
    }

    /// Registers memory the caller owns.
    ///
    /// # Safety
    /// `len` bytes at `addr` must stay allocated until the region is dropped, and must not
    /// be accessed through Rust references while the device may read or write them (the
    /// device writes behind the compiler's back: use [`MemoryRegion::read`] and
    /// [`MemoryRegion::write`], or raw pointers).
    pub unsafe fn register(
        &self,
        addr: *mut u8,
        len: usize,
        access: Access,
    ) -> Result<MemoryRegion<B>, Error> {
        let memory = Memory::foreign(addr, len)?;
        // On demand nothing is pinned or looked at until the device touches it (the kernel
        // registers the range as it is: an unmapped page fails at that touch).
        if !access.contains(Access::ON_DEMAND) && !is_mapped(addr, len) {
            // What the kernel's page pinning answers (EFAULT) before any device sees it.
            return Err(Error::InvalidArgument(
                "memory to register is not mapped in this process",
            ));
        }
        // SAFETY: forwarded from this function's contract.
        unsafe { self.register_memory(memory, access) }
    }

    /// # Safety
    /// `memory` stays valid until the returned region (which owns it) is dropped.
    unsafe fn register_memory(
        &self,
        memory: Memory,
        access: Access,
    ) -> Result<MemoryRegion<B>, Error> {
        let ctx = &self.inner.ctx.backend;
        // SAFETY: the region owns `memory` and drops the handle first (field order).
        let (handle, lkey, rkey) = unsafe {
            ctx.reg_mr(
                &self.inner.handle,
                memory.ptr(),
                memory.len(),
                memory.page_size(),
                access,
            )?
        };
        if access.contains(Access::LOCAL_WRITE) {
            self.inner.ctx.mrs.insert(lkey, memory.ptr(), memory.len());
        }
        Ok(MemoryRegion {
            handle,
            memory,
            lkey,
            rkey,
            _pd: self.inner.clone(),
        })
    }

    /// Creates an address handle for UD sends to `attr` (`ibv_create_ah`; on hardware its
    /// 48-byte AV comes from `mlx5dv_init_obj(MLX5DV_OBJ_AH)`, on the model from the port's
    /// addressing). On a RoCE port ([`PortInfo::roce`](crate::PortInfo::roce)) an address
    /// without a global route is [`Error::InvalidArgument`], as `mlx5_create_ah` refuses
    /// it with EINVAL.
    pub fn create_ah(&self, attr: &AhAttr) -> Result<AddressHandle<B>, Error> {
        if attr.grh.is_none() && self.inner.ctx.backend.port(attr.port)?.roce {
            return Err(Error::InvalidArgument(
                "an address handle on a RoCE port needs a global route (AhAttr::grh)",
            ));
        }
        let (handle, av) = self.inner.ctx.backend.create_ah(&self.inner.handle, attr)?;
        Ok(AddressHandle {
            av,
            attr: *attr,
            compact: false,
            _handle: handle,
            _pd: self.inner.clone(),
        })
    }

    /// Creates an address handle as [`ProtectionDomain::create_ah`] does whose UD and DC
    /// WQEs carry the 16-byte compact AV (`dqp_dct` bit 31 clear: key, `dqp_dct`,
    /// `stat_rate_sl`, `fl_mlid`, `rlid`), two DS less than the full 48 bytes. As UCX
    /// (`uct_ib_mlx5_get_compact_av`, `ud_mlx5_common.c`), only where the device has the
    /// `compact_address_vector` cap ([`DeviceCaps::compact_av`](crate::DeviceCaps::compact_av),
    /// else [`Error::Unsupported`]) and only to a destination without a GRH (the compact AV
    /// has no GRH fields; a global route is [`Error::InvalidArgument`], so RoCE, where every
    /// address is global, never gets one).
    pub fn create_compact_ah(&self, attr: &AhAttr) -> Result<AddressHandle<B>, Error> {
        if attr.grh.is_some() {
            return Err(Error::InvalidArgument(
                "a compact address vector carries no GRH",
            ));
        }
        if !self.inner.ctx.backend.caps().compact_av {
            return Err(Error::Unsupported(
                "the compact address vector (HCA cap compact_address_vector)",
            ));
        }
        Ok(AddressHandle {
            compact: true,
            ..self.create_ah(attr)?
        })
    }

    /// Creates a QP of `config.transport` with its own receive queue.
    pub fn create_qp(
        &self,
        send_cq: &Cq<B>,
        recv_cq: &Cq<B>,
        config: &QpConfig,
    ) -> Result<Qp<B>, Error> {
        self.build_qp(send_cq, recv_cq, None, config)
    }

    /// Creates a QP of `config.transport` whose receives come from `srq`. A UD QP needs an
    /// SRQ made for UD ([`ProtectionDomain::create_ud_srq`]): the device writes the GRH area
    /// into the first scatter entry of every UD receive (`ibv_post_recv(3)`), so only such
    /// an SRQ checks that each receive holds it; any other is refused with
    /// [`Error::InvalidArgument`].
    pub fn create_qp_with_srq(
        &self,
        send_cq: &Cq<B>,
        recv_cq: &Cq<B>,
        srq: &Srq<B>,
        config: &QpConfig,
    ) -> Result<Qp<B>, Error> {
        if config.transport == Transport::Ud && !srq.holds_grh_area() {
            return Err(Error::InvalidArgument(
                "a UD QP's SRQ must be made for UD (create_ud_srq) to check the GRH area",
            ));
        }
        self.build_qp(send_cq, recv_cq, Some(srq), config)
    }

    fn build_qp(
        &self,
        send_cq: &Cq<B>,
        recv_cq: &Cq<B>,
        srq: Option<&Srq<B>>,
        config: &QpConfig,
    ) -> Result<Qp<B>, Error> {
        let ctx = &self.inner.ctx;
        let dci = config.transport == Transport::Dci;
        let sizes = config.check(&ctx.backend.caps(), srq.is_some() || dci)?;
        if config.scatter_to_cqe && recv_cq.queue.compresses() {
            // No public source says how a compressed block carries scattered data.
            return Err(Error::InvalidArgument(
                "scatter to CQE on a QP whose receive CQ compresses CQEs",
            ));
        }
        let parts = ctx.backend.create_qp(
            &self.inner.handle,
            &send_cq.inner.handle,
            &recv_cq.inner.handle,
            srq.map(|s| &s.inner.handle),
            config,
            &sizes,
        )?;
        let ring = |wqe_cnt: u32| wqe_cnt.is_power_of_two();
        if !ring(parts.sq.wqe_cnt) || !parts.rq.as_ref().is_none_or(|rq| ring(rq.wqe_cnt)) {
            // Never from this crate's backends (`check` refused empty queues); a ring that is
            // not a power of two of at least one entry cannot be driven.
            return Err(Error::Device {
                operation: "create QP",
                reason: "the backend returned an empty or non-power-of-two ring".into(),
            });
        }
        let errored = Arc::new(AtomicBool::new(false));
        // UD and UC have a send-queue error state: their send queue refuses posts on a flag
        // of its own, which a QP error sets too.
        let sq_error = matches!(config.transport, Transport::Ud | Transport::Uc)
            .then(|| Arc::new(AtomicBool::new(false)));
        let sq_shared = Arc::new(SqShared::new(parts.sq.wqe_cnt));
        let sq_flag = sq_error.clone().unwrap_or_else(|| errored.clone());
        // SAFETY: the descriptions stay valid while `parts.handle` lives; the QP drops its
        // queues before the handle (field order).
        let mut sq = unsafe { SendQueue::new(&parts.sq, parts.uar, sq_shared.clone(), sq_flag) };
        let ud = config.transport == Transport::Ud;
        match config.transport {
            Transport::Rc | Transport::Dct => {}
            Transport::Ud => sq.make_ud(&parts.sq),
            Transport::Uc => sq.make_uc(),
            Transport::Dci => sq.make_dci(&parts.sq, config.dci_streams.map_or(1, |s| s.count())),
        }
        let (rq, recv) = match (&parts.rq, srq) {
            (_, Some(srq)) => (None, RecvShared::Srq(srq.inner.shared.clone())),
            (Some(desc), None) => {
                let log = config.scatter_to_cqe.then_some(desc.stride / DS);
                let shared = Arc::new(RqShared::new(desc.wqe_cnt, log));
                // SAFETY: as for the send queue.
                let mut rq = unsafe { RecvQueue::new(desc, shared.clone(), errored.clone()) };
                if ud {
                    rq.make_ud();
                }
                (Some(rq), RecvShared::Rq(shared))
            }
            (None, None) if dci => (None, RecvShared::None),
            (None, None) => {
                return Err(Error::InvalidArgument(
                    "backend created a QP without a receive queue",
                ))
            }
        };
        let entry = QpEntry {
            qpn: parts.qpn,
            sq: sq_shared,
            recv,
            errored: errored.clone(),
            sq_error: sq_error.clone(),
            streams: config.dci_streams.is_some(),
        };
        send_cq.inner.attachments.attach(entry.clone());
        recv_cq.inner.attachments.attach(entry);
        lock_flags(&ctx.qps).insert(parts.qpn, errored.clone());
        if let Some(flag) = &sq_error {
            lock_flags(&ctx.sq_errors).insert(parts.qpn, flag.clone());
        }
        Ok(Qp {
            sq,
            rq,
            state: QpState::Reset,
            port: ctx.backend.default_port(),
            core: Arc::new(QpCore {
                handle: parts.handle,
                qpn: parts.qpn,
                transport: config.transport,
                errored,
                sq_error,
                seq: Mutex::new(Sequence {
                    psn: random_psn(),
                    peer: None,
                    resume: None,
                }),
                send_cq: send_cq.inner.clone(),
                recv_cq: recv_cq.inner.clone(),
                _srq: srq.map(|s| s.inner.clone()),
                _pd: self.inner.clone(),
            }),
        })
    }

    /// Creates a DC initiator (`mlx5dv_create_qp` with `MLX5DV_DCTYPE_DCI`; `config`'s
    /// transport is taken as [`Transport::Dci`], its receive fields are ignored): a send
    /// queue whose completions go to `send_cq`, posted with
    /// [`SendQueue::post_dc`](crate::SendQueue::post_dc) once [`Qp::activate_dci`] made it
    /// ready. It has no receive queue.
    pub fn create_dci(&self, send_cq: &Cq<B>, config: &QpConfig) -> Result<Qp<B>, Error> {
        let config = QpConfig {
            transport: Transport::Dci,
            ..*config
        };
        self.build_qp(send_cq, send_cq, None, &config)
    }

    /// Creates a DC target (`mlx5dv_create_qp` with `MLX5DV_DCTYPE_DCT` and
    /// `dct_access_key = dc_key`) in RESET: it executes the operations of every DCI whose
    /// WQEs carry `dc_key`, takes receives from `srq` and completes them on `recv_cq`. Its
    /// number exists once [`Dct::activate`] brought it to RTR.
    pub fn create_dct(&self, recv_cq: &Cq<B>, srq: &Srq<B>, dc_key: u64) -> Result<Dct<B>, Error> {
        let handle = self.inner.ctx.backend.create_dct(
            &self.inner.handle,
            &recv_cq.inner.handle,
            &srq.inner.handle,
            dc_key,
        )?;
        Ok(Dct {
            handle,
            number: None,
            state: QpState::Reset,
            dc_key,
            recv_cq: recv_cq.inner.clone(),
            srq: srq.inner.clone(),
            _pd: self.inner.clone(),
        })
    }

    /// Creates a shared receive queue holding at least `entries` receives (rounded up to a
    /// power of two, [`SharedRecvQueue::capacity`](crate::SharedRecvQueue::capacity)) with
    /// `max_sge` scatter entries each. Its ring has more WQEs than that (rdma-core's
    /// `entries + 1` rounded up to a power of two, the last post's link to a free WQE).
    pub fn create_srq(&self, entries: u32, max_sge: u32) -> Result<Srq<B>, Error> {
        self.build_srq(entries, max_sge, false)
    }

    /// [`create_srq`](Self::create_srq) for an SRQ that serves UD QPs (and may serve
    /// others): every post must leave the [`UD_GRH_BYTES`](crate::UD_GRH_BYTES) area at the
    /// start of its first scatter entry, or it is refused with
    /// [`PostError::GrhAreaTooSmall`](crate::PostError::GrhAreaTooSmall), as a UD QP's own
    /// receive queue refuses it.
    pub fn create_ud_srq(&self, entries: u32, max_sge: u32) -> Result<Srq<B>, Error> {
        self.build_srq(entries, max_sge, true)
    }

    fn build_srq(&self, entries: u32, max_sge: u32, ud: bool) -> Result<Srq<B>, Error> {
        let (handle, desc, srqn) =
            self.inner
                .ctx
                .backend
                .create_srq(&self.inner.handle, entries, max_sge)?;
        let shared = Arc::new(SrqShared::new(desc.wqe_cnt, desc.stride / DS - 1));
        let limit = entries.max(1).next_power_of_two();
        // SAFETY: the description stays valid while `handle` lives; the queue is dropped
        // before its `inner` (field order).
        let mut queue = unsafe { SharedRecvQueue::new(&desc, limit, shared.clone()) };
        if ud {
            queue.make_ud();
        }
        Ok(Srq {
            queue,
            srqn,
            inner: Arc::new(SrqInner {
                handle,
                shared,
                _pd: self.inner.clone(),
            }),
        })
    }
}

/// The path MTU a connection on `port` takes: `options.path_mtu`, at most the port's active
/// MTU, as perftest's `set_mtu` clamps `-m` and rdma_cm takes the active MTU (on RoCE the
/// kernel's `iboe_get_mtu` of the netdev MTU: 1024 under the Ethernet default of 1500).
fn path_mtu<B: Backend>(backend: &B, port: u8, options: &ConnectOptions) -> Result<u32, Error> {
    Ok(options.path_mtu.min(backend.port(port)?.active_mtu))
}

/// True if every page of `[addr, addr + len)` is mapped (`mincore` fails with ENOMEM on
/// a hole). The range is known not to wrap.
fn is_mapped(addr: *mut u8, len: usize) -> bool {
    if len == 0 {
        return true;
    }
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(1) as usize;
    let start = addr as usize & !(page - 1);
    let Some(end) = (addr as usize + len).checked_next_multiple_of(page) else {
        return false;
    };
    let mut residency = vec![0u8; (end - start) / page];
    // SAFETY: mincore only reads the page tables of the given range and writes one byte per
    // page into `residency`, which has exactly that many.
    unsafe {
        libc::mincore(
            start as *mut libc::c_void,
            end - start,
            residency.as_mut_ptr().cast(),
        ) == 0
    }
}

/// Registered memory. Owned regions ([`ProtectionDomain::alloc_mr`]) are page aligned and
/// zeroed.
///
/// The device may write the memory at any time (receives, peers' WRITEs, READ results), so it
/// is never lent out as `&[u8]` by safe code: copy in and out with [`MemoryRegion::read`]
/// and [`MemoryRegion::write`], or borrow a range the device no longer writes with the
/// `unsafe` [`MemoryRegion::bytes`].
#[derive(Debug)]
pub struct MemoryRegion<B: Backend> {
    handle: B::Mr,
    memory: Memory,
    lkey: u32,
    rkey: u32,
    _pd: Arc<PdInner<B>>,
}

impl<B: Backend> MemoryRegion<B> {
    /// Local key.
    pub fn lkey(&self) -> u32 {
        self.lkey
    }

    /// Remote key.
    pub fn rkey(&self) -> u32 {
        self.rkey
    }

    /// Brings `len` bytes at `offset` of a region registered with [`Access::ON_DEMAND`] in
    /// before the device touches them (`ibv_advise_mr`, flushed: done when this returns;
    /// for writing when the region has [`Access::LOCAL_WRITE`], else for reading), so the
    /// first message does not take a page fault. Refused
    /// ([`Error::OnDemandPaging`]) for a region not on demand, a range outside it or a page
    /// the process has not mapped.
    pub fn prefetch(&self, offset: usize, len: usize) -> Result<(), Error> {
        if offset
            .checked_add(len)
            .is_none_or(|end| end > self.memory.len())
        {
            return Err(Error::OnDemandPaging("range outside the region".into()));
        }
        self._pd.ctx.backend.advise_mr(
            &self._pd.handle,
            &self.handle,
            self.addr() + offset as u64,
            len,
        )
    }

    /// Size of the pages backing the region (4 KiB, or 2 MiB on huge pages): the device
    /// needs one translation per page it touches.
    pub fn page_size(&self) -> usize {
        self.memory.page_size()
    }

    /// Address of the first byte.
    pub fn addr(&self) -> u64 {
        self.memory.ptr() as u64
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.memory.len()
    }

    /// True for a zero-length region.
    pub fn is_empty(&self) -> bool {
        self.memory.len() == 0
    }

    /// A gather / scatter entry for `len` bytes at `offset`.
    pub fn sge(&self, offset: usize, len: u32) -> Sge {
        Sge {
            addr: self.addr() + offset as u64,
            len,
            lkey: self.lkey,
        }
    }

    /// The remote address of `offset`, for a peer.
    pub fn remote(&self, offset: usize) -> Remote {
        Remote {
            addr: self.addr() + offset as u64,
            rkey: self.rkey,
        }
    }

    /// Copies `buf.len()` bytes at `offset` out of the region.
    ///
    /// # Panics
    /// If the range is outside the region.
    pub fn read(&self, offset: usize, buf: &mut [u8]) {
        self.memory.read(offset, buf);
    }

    /// Copies `data` into the region at `offset`.
    ///
    /// # Panics
    /// If the range is outside the region.
    pub fn write(&self, offset: usize, data: &[u8]) {
        self.memory.write(offset, data);
    }

    /// `len` bytes at `offset`, in place: for reading a received message where it landed,
    /// without the copy of [`MemoryRegion::read`] (the pattern: crate docs, "Zero-copy
    /// receive").
    ///
    /// # Safety
    /// While the returned slice lives, nothing may write `offset..offset + len`:
    /// - not the device for this process: the range is in no posted receive (the receive
    ///   that filled it has completed, its completion was returned by a poll, which orders
    ///   the device's writes of the data before it, and it is not posted again while the
    ///   slice lives), and is no local entry of an outstanding RDMA READ or atomic;
    /// - not a peer: no RDMA WRITE or atomic targets the range (the region's rkey went to no
    ///   peer with remote write or atomic rights, or the peers' protocol keeps them off this
    ///   range while the slice lives);
    /// - not this process: no [`MemoryRegion::write`] to the range, no other pointer
    ///   writes through it.
    ///
    /// # Panics
    /// If the range is outside the region.
    pub unsafe fn bytes(&self, offset: usize, len: usize) -> &[u8] {
        // SAFETY: forwarded from this function's contract.
        unsafe { self.memory.slice(offset, len) }
    }

    /// The byte at `offset`, read with one volatile load: for spinning on memory a peer
    /// writes by RDMA WRITE (perftest's `write_lat` polls the last byte of its buffer).
    ///
    /// # Panics
    /// If `offset` is outside the region.
    pub fn read_volatile_u8(&self, offset: usize) -> u8 {
        self.memory.read_volatile_u8(offset)
    }

    /// The 8 bytes at `offset` as a host-order `u64` (e.g. an atomic's result).
    pub fn read_u64(&self, offset: usize) -> u64 {
        let mut b = [0u8; 8];
        self.read(offset, &mut b);
        u64::from_ne_bytes(b)
    }

    /// The backend handle.
    pub fn handle(&self) -> &B::Mr {
        &self.handle
    }
}

impl<B: Backend> Drop for MemoryRegion<B> {
    fn drop(&mut self) {
        // Before the registration and the memory go (the fields, after this).
        self._pd.ctx.mrs.remove(self.lkey);
    }
}

#[derive(Debug)]
struct CqInner<B: Backend> {
    handle: B::Cq,
    attachments: Arc<CqAttachments>,
    cqn: u32,
    /// Set when the context hands out [`AsyncEvent::CqError`] for this CQ.
    errored: Arc<AtomicBool>,
    /// Where its completion events go; released after the CQ (field order).
    channel: CompChannel<B>,
    ctx: Context<B>,
}

impl<B: Backend> Drop for CqInner<B> {
    fn drop(&mut self) {
        lock_flags(&self.ctx.cqs).remove(&self.cqn);
        self.channel.unregister(self.cqn);
    }
}

/// A completion queue: polling goes through [`CompletionQueue`] (`Deref`).
#[derive(Debug)]
pub struct Cq<B: Backend> {
    queue: CompletionQueue<B::Uar>,
    inner: Arc<CqInner<B>>,
}

impl<B: Backend> Cq<B> {
    /// Destroys the CQ, or gives it back with [`Error::Busy`] while a QP still uses it.
    #[allow(clippy::result_large_err)] // the CQ itself is handed back, by design
    pub fn destroy(self) -> Result<(), (Self, Error)> {
        if Arc::strong_count(&self.inner) > 1 {
            return Err((self, Error::Busy("CQ")));
        }
        Ok(())
    }

    /// Whether the device reported this CQ in error ([`AsyncEvent::CqError`], e.g. after
    /// an overrun), as recorded when the event was read from the context. A CQ in error
    /// writes no more CQEs; what it held is unreliable. Destroy it (after its QPs).
    pub fn is_error(&self) -> bool {
        self.inner.errored.load(Ordering::Relaxed)
    }

    /// Waits up to `timeout` for a completion event of this CQ (armed with
    /// [`CompletionQueue::arm`]); true if one came. Taking it is the whole acknowledgement:
    /// arm again for the next. Events of other CQs on the same channel that arrive
    /// meanwhile are kept for their own waiters.
    pub fn wait_event(&self, timeout: Duration) -> Result<bool, Error> {
        Ok(self
            .inner
            .channel
            .wait_for(Some(self.inner.cqn), timeout)?
            .is_some())
    }

    /// The completion channel this CQ's events go to.
    pub fn channel(&self) -> &CompChannel<B> {
        &self.inner.channel
    }
}

impl<B: Backend> Deref for Cq<B> {
    type Target = CompletionQueue<B::Uar>;
    fn deref(&self) -> &Self::Target {
        &self.queue
    }
}

impl<B: Backend> DerefMut for Cq<B> {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.queue
    }
}

#[derive(Debug)]
struct SrqInner<B: Backend> {
    handle: B::Srq,
    shared: Arc<SrqShared>,
    _pd: Arc<PdInner<B>>,
}

/// A shared receive queue: posting goes through [`SharedRecvQueue`] (`Deref`).
#[derive(Debug)]
pub struct Srq<B: Backend> {
    queue: SharedRecvQueue,
    srqn: u32,
    inner: Arc<SrqInner<B>>,
}

impl<B: Backend> Srq<B> {
    /// SRQ number.
    pub fn srqn(&self) -> u32 {
        self.srqn
    }
}

impl<B: Backend> Deref for Srq<B> {
    type Target = SharedRecvQueue;
    fn deref(&self) -> &Self::Target {
        &self.queue
    }
}

impl<B: Backend> DerefMut for Srq<B> {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.queue
    }
}

/// An address handle: the 48-byte address vector UD sends copy into each WQE, and the
/// backend object behind it.
#[derive(Debug)]
pub struct AddressHandle<B: Backend> {
    av: Av,
    attr: AhAttr,
    compact: bool,
    _handle: AhHandle,
    _pd: Arc<PdInner<B>>,
}

impl<B: Backend> AddressHandle<B> {
    /// The address vector (`mlx5_wqe_av`), `dqp_dct` and Q_Key 0.
    pub fn av(&self) -> &Av {
        &self.av
    }

    /// What it was created for.
    pub fn attr(&self) -> &AhAttr {
        &self.attr
    }

    /// True if its WQEs carry the 16-byte compact AV
    /// ([`ProtectionDomain::create_compact_ah`]).
    pub fn is_compact(&self) -> bool {
        self.compact
    }

    /// The destination of a DC operation to DCT `dctn` with access key `dc_key` through
    /// this handle.
    pub fn dc_dest(&self, dctn: u32, dc_key: u64) -> DcDest<'_> {
        DcDest {
            av: &self.av,
            dctn,
            dc_key,
            compact: self.compact,
            stream: 0,
        }
    }

    /// The destination of a UD send to QP `remote_qpn` with Q_Key `qkey` through this
    /// handle.
    pub fn dest(&self, remote_qpn: u32, qkey: u32) -> UdDest<'_> {
        UdDest {
            av: &self.av,
            remote_qpn,
            qkey,
            compact: self.compact,
        }
    }
}

/// What a QP's two halves share, released with the last of them: the device object and
/// the objects it uses.
#[derive(Debug)]
struct QpCore<B: Backend> {
    handle: B::Qp,
    qpn: u32,
    transport: Transport,
    errored: Arc<AtomicBool>,
    /// The send-queue error flag of a UD or UC QP (see `QpEntry::sq_error`).
    sq_error: Option<Arc<AtomicBool>>,
    /// The packet sequence numbers of the QP's connections (slow path only).
    seq: Mutex<Sequence>,
    send_cq: Arc<CqInner<B>>,
    recv_cq: Arc<CqInner<B>>,
    _srq: Option<Arc<SrqInner<B>>>,
    _pd: Arc<PdInner<B>>,
}

impl<B: Backend> QpCore<B> {
    fn state(&self, recorded: QpState) -> QpState {
        if self.errored.load(Ordering::Relaxed) {
            QpState::Err
        } else if self
            .sq_error
            .as_ref()
            .is_some_and(|f| f.load(Ordering::Relaxed))
        {
            QpState::Sqe
        } else {
            recorded
        }
    }

    fn seq(&self) -> MutexGuard<'_, Sequence> {
        self.seq.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Where a QP stands in its packet sequences.
#[derive(Debug)]
struct Sequence {
    /// The first PSN of the next (or current) connection: what [`Qp::endpoint`] gives out.
    psn: u32,
    /// The peer of the current connection, from a successful [`Qp::connect`].
    peer: Option<Endpoint>,
    /// Set by [`Qp::reset`] of a connected QP: its peer then and the PSN it expected next,
    /// for a reconnection to a peer that did not reconnect.
    resume: Option<(Endpoint, u32)>,
}

/// PSNs are 24 bits.
const PSN_MASK: u32 = 0xff_ffff;

/// A random 24-bit PSN for a new QP, as `rc_pingpong` (`lrand48() & 0xffffff`) and perftest
/// choose them: from the process's randomly keyed hasher (no dependency).
fn random_psn() -> u32 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u32(PSN_MASK);
    h.finish() as u32 & PSN_MASK
}

impl<B: Backend> Drop for QpCore<B> {
    fn drop(&mut self) {
        self.send_cq.attachments.detach(self.qpn);
        self.recv_cq.attachments.detach(self.qpn);
        lock_flags(&self._pd.ctx.qps).remove(&self.qpn);
        lock_flags(&self._pd.ctx.sq_errors).remove(&self.qpn);
    }
}

/// A QP (reliable connected, or UD with [`Transport::Ud`]): its send queue, its receive
/// queue (unless it uses an SRQ) and its state. [`Qp::split`] makes it two owned halves for two threads.
#[derive(Debug)]
pub struct Qp<B: Backend> {
    // The queues drop before `core`, which holds the device object and its memory.
    sq: SendQueue<B::Uar>,
    rq: Option<RecvQueue>,
    state: QpState,
    port: u8,
    core: Arc<QpCore<B>>,
}

impl<B: Backend> Qp<B> {
    /// QP number.
    pub fn qpn(&self) -> u32 {
        self.core.qpn
    }

    /// The state as last set, or [`QpState::Err`] once a CQE reported an error on it or the
    /// context handed out an asynchronous event saying the device moved it to ERR
    /// ([`AsyncEvent::failed_qp`]). Recorded, not queried: no call to the device.
    pub fn state(&self) -> QpState {
        self.core.state(self.state)
    }

    /// The send queue.
    pub fn sq(&mut self) -> &mut SendQueue<B::Uar> {
        &mut self.sq
    }

    /// The send queue, to read (`max_inline`, `effective_mode`, free and outstanding
    /// counts).
    pub fn send_queue(&self) -> &SendQueue<B::Uar> {
        &self.sq
    }

    /// The receive queue (`None` when the QP uses an SRQ).
    pub fn rq(&mut self) -> Option<&mut RecvQueue> {
        self.rq.as_mut()
    }

    /// The receive queue, to read (`free`, `capacity`, `max_sge`).
    pub fn recv_queue(&self) -> Option<&RecvQueue> {
        self.rq.as_ref()
    }

    /// Splits the QP into an owned send half and an owned receive half, each `Send` and each
    /// keeping the QP alive: one thread posts sends (and may poll the send CQ), another
    /// posts receives. The QP is destroyed when both halves are gone. State changes
    /// (connect, reset) need the whole QP: connect before splitting, and
    /// [`QpSender::join`] the halves to reset after an error.
    pub fn split(self) -> (QpSender<B>, QpReceiver<B>) {
        let Qp {
            sq,
            rq,
            state,
            port,
            core,
        } = self;
        let receiver = QpReceiver {
            rq,
            state,
            core: core.clone(),
        };
        (
            QpSender {
                sq,
                state,
                port,
                core,
            },
            receiver,
        )
    }

    /// Both queues at once.
    pub fn queues(&mut self) -> (&mut SendQueue<B::Uar>, Option<&mut RecvQueue>) {
        (&mut self.sq, self.rq.as_mut())
    }

    /// The port the QP uses (or will use): the context's, unless [`Qp::init`] named
    /// another.
    pub fn port(&self) -> u8 {
        self.port
    }

    /// The address to give the peer, with the first PSN this QP sends on its next (or
    /// current) connection, on its port ([`Qp::port`]): random (24 bits) for a new QP, as rdma-core's `rc_pingpong` and
    /// perftest choose it, the continuation of the sequence after [`Qp::reset`], or what
    /// [`Qp::set_psn`] chose.
    pub fn endpoint(&self) -> Result<Endpoint, Error> {
        let psn = self.core.seq().psn;
        self.ctx().backend.endpoint(self.port, self.core.qpn, psn)
    }

    /// Chooses the first PSN (24 bits) of the next connection, before its [`Qp::endpoint`]
    /// goes to the peer: only in RESET or INIT, and only before the QP's first connection
    /// (a QP reset after a connection continues its sequence; see [`Qp::reset`]).
    pub fn set_psn(&mut self, psn: u32) -> Result<(), Error> {
        if !matches!(self.state(), QpState::Reset | QpState::Init) {
            return Err(Error::WrongState {
                operation: "choose the PSN",
                state: self.state(),
            });
        }
        let mut seq = self.core.seq();
        if seq.resume.is_some() {
            return Err(Error::InvalidArgument(
                "a QP reset after a connection continues its PSN",
            ));
        }
        if psn > PSN_MASK {
            return Err(Error::InvalidArgument("PSNs are 24 bits"));
        }
        seq.psn = psn;
        Ok(())
    }

    fn ctx(&self) -> &Context<B> {
        &self.core._pd.ctx
    }

    fn modify(&mut self, transition: Transition, state: QpState) -> Result<(), Error> {
        self.ctx()
            .backend
            .modify_qp(&self.core.handle, &transition)?;
        self.state = state;
        Ok(())
    }

    /// The transport service.
    pub fn transport(&self) -> Transport {
        self.core.transport
    }

    /// Brings a UD QP from RESET to RTS (`IBV_QP_QKEY` at INIT, nothing at RTR, the SQ PSN
    /// 0 at RTS): it then receives datagrams carrying `qkey` and sends with
    /// [`SendQueue::post_ud`], datagrams of at most the port's active MTU.
    pub fn activate_ud(&mut self, port: u8, qkey: u32) -> Result<(), Error> {
        let options = ConnectOptions {
            port: Some(port),
            ..ConnectOptions::default()
        };
        self.activate_ud_with(qkey, &options)
    }

    /// [`Qp::activate_ud`] on the port `options` names (else the QP's) with its P_Key
    /// index at INIT (`IBV_QP_PKEY_INDEX`, as perftest's `--pkey_index`); the other fields
    /// do not apply to UD.
    pub fn activate_ud_with(&mut self, qkey: u32, options: &ConnectOptions) -> Result<(), Error> {
        if self.core.transport != Transport::Ud {
            return Err(Error::InvalidArgument("activate_ud on a QP that is not UD"));
        }
        if self.state() != QpState::Reset {
            return Err(Error::WrongState {
                operation: "activate",
                state: self.state(),
            });
        }
        let port = options.port.unwrap_or(self.port);
        let mtu = self.ctx().backend.port(port)?.active_mtu;
        let init = Transition::InitUd {
            port,
            qkey,
            pkey_index: options.pkey_index,
        };
        self.modify(init, QpState::Init)?;
        self.port = port;
        if let Some(rq) = &mut self.rq {
            rq.set_ready(true);
        }
        self.modify(Transition::RtrUd, QpState::Rtr)?;
        self.modify(Transition::RtsUd { sq_psn: 0 }, QpState::Rts)?;
        self.sq.set_ud_mtu(mtu);
        self.sq.set_ready(true);
        Ok(())
    }

    /// Brings a DCI from RESET to RTS (INIT on the port `options` names or the QP's with
    /// its P_Key index, RTR
    /// with the path MTU, RTS with the SQ PSN of [`Qp::endpoint`], the timeout, the retry
    /// counts and the READ / atomic depth of `options`): it then posts with
    /// [`SendQueue::post_dc`]. After an error, [`Qp::reset`] and activate again (the
    /// recovery UCX's `uct_dc_mlx5_iface_reset_dci` does).
    pub fn activate_dci(&mut self, options: &ConnectOptions) -> Result<(), Error> {
        self.dci_only("activate_dci on a QP that is not a DCI")?;
        if self.state() != QpState::Reset {
            return Err(Error::WrongState {
                operation: "activate",
                state: self.state(),
            });
        }
        self.activate_dci_now(options)
    }

    /// Refuses with `what` unless this is a DCI.
    fn dci_only(&self, what: &'static str) -> Result<(), Error> {
        if self.core.transport == Transport::Dci {
            Ok(())
        } else {
            Err(Error::InvalidArgument(what))
        }
    }

    /// Takes stream `stream` of this DCI (created with
    /// [`QpConfig::dci_streams`](crate::QpConfig::dci_streams)) out of error
    /// (`mlx5dv_dci_stream_id_reset`): after an error completion of one of its operations
    /// and the flush of the rest of that stream (each a completion in error), the stream's
    /// new operations execute again. The DCI stays in RTS through a stream error while
    /// fewer than `1 << log_errored` streams are in error; the error that reaches that count
    /// fails the DCI, and this is then refused by the device (recover with [`Qp::reset`]
    /// and [`Qp::activate_dci`]). Completions do not name the stream: the application knows
    /// it from the `wr_id` (mlx5dv_dci_stream_id_reset(3)). Refused: not a DCI
    /// (`InvalidArgument`), a backend or device without stream reset, a DCI not in RTS.
    pub fn reset_dci_stream(&mut self, stream: u16) -> Result<(), Error> {
        self.dci_only("reset_dci_stream on a QP that is not a DCI")?;
        self.ctx()
            .backend
            .reset_dci_stream(&self.core.handle, stream)
    }

    /// [`Qp::activate_dci`] once checked.
    fn activate_dci_now(&mut self, options: &ConnectOptions) -> Result<(), Error> {
        options.validate()?;
        let caps = self.ctx().caps();
        let port = options.port.unwrap_or(self.port);
        self.modify(
            Transition::InitDci {
                port,
                pkey_index: options.pkey_index,
            },
            QpState::Init,
        )?;
        self.port = port;
        let path_mtu = path_mtu(&*self.ctx().backend, port, options)?;
        self.modify(Transition::RtrDci { path_mtu }, QpState::Rtr)?;
        let sq_psn = self.core.seq().psn;
        self.enter_rts(sq_psn, options, &caps)
    }

    /// RTR → RTS sending from `sq_psn` with the timeout, retry counts and READ / atomic
    /// depth of `options` (at most the device's), then ready to post.
    fn enter_rts(
        &mut self,
        sq_psn: u32,
        options: &ConnectOptions,
        caps: &DeviceCaps,
    ) -> Result<(), Error> {
        self.modify(
            Transition::Rts {
                sq_psn,
                timeout: options.timeout,
                retry_cnt: options.retry_cnt,
                rnr_retry: options.rnr_retry,
                max_rd_atomic: options.rd_atomic.min(caps.max_rd_atomic),
            },
            QpState::Rts,
        )?;
        self.sq.set_ready(true);
        Ok(())
    }

    /// RESET → INIT on `port`, granting the peer `access`: receives may be posted from here
    /// on. A device without atomics refuses REMOTE_ATOMIC.
    pub fn init(&mut self, port: u8, access: Access) -> Result<(), Error> {
        self.init_with_pkey(port, access, 0)
    }

    /// [`Qp::init`] with the P_Key at `pkey_index` of the port's table.
    fn init_with_pkey(&mut self, port: u8, access: Access, pkey_index: u16) -> Result<(), Error> {
        if self.state() != QpState::Reset {
            return Err(Error::WrongState {
                operation: "initialise",
                state: self.state(),
            });
        }
        if access.contains(Access::REMOTE_ATOMIC) && !self.ctx().caps().atomics {
            return Err(Error::InvalidArgument(
                "REMOTE_ATOMIC on a device without atomics",
            ));
        }
        self.modify(
            Transition::Init {
                port,
                access,
                pkey_index,
            },
            QpState::Init,
        )?;
        self.port = port;
        if let Some(rq) = &mut self.rq {
            rq.set_ready(true);
        }
        Ok(())
    }

    /// Connects to `remote`: INIT (if still in RESET), RTR, RTS. The QP sends from the PSN
    /// of its own [`Qp::endpoint`] and expects `remote.psn`, except after a [`Qp::reset`]
    /// when `remote` is the very endpoint it was connected to before: that peer has not
    /// reconnected and goes on with its sequence, so the QP goes on expecting the PSN it
    /// expected before the reset. The port, the
    /// rights and the READ / atomic depth follow the device where `options` leaves them to
    /// it ([`ConnectOptions`]). The P_Key index of `options` is set when this call brings
    /// the QP from RESET to INIT; out-of-range fields are refused before anything changes.
    pub fn connect(&mut self, remote: &Endpoint, options: &ConnectOptions) -> Result<(), Error> {
        options.validate()?;
        let caps = self.ctx().caps();
        let uc = self.core.transport == Transport::Uc;
        if self.state() == QpState::Reset {
            let access = options.access.unwrap_or(if uc {
                Access::REMOTE_WRITE
            } else {
                Access::remote_default(caps.atomics)
            });
            self.init_with_pkey(
                options.port.unwrap_or(self.port),
                access,
                options.pkey_index,
            )?;
        }
        if self.state() != QpState::Init {
            return Err(Error::WrongState {
                operation: "connect",
                state: self.state(),
            });
        }
        let (expected, psn) = {
            let seq = self.core.seq();
            let expected = match seq.resume {
                Some((peer, rq_psn)) if peer == *remote => rq_psn,
                _ => remote.psn,
            };
            (expected, seq.psn)
        };
        let to = Endpoint {
            psn: expected,
            ..*remote
        };
        let path_mtu = path_mtu(&*self.ctx().backend, self.port, options)?;
        if uc {
            // UC: no READ / atomic depth, no RNR timer, no ACK timeout, no retries.
            let rtr = Transition::RtrUc {
                remote: to,
                path_mtu,
                hop_limit: options.hop_limit,
                traffic_class: options.traffic_class,
                sl: options.sl,
                flow_label: options.flow_label,
            };
            self.modify(rtr, QpState::Rtr)?;
            self.modify(Transition::RtsUc { sq_psn: psn }, QpState::Rts)?;
            self.sq.set_ready(true);
        } else {
            let rtr = Transition::Rtr {
                remote: to,
                path_mtu,
                max_dest_rd_atomic: options.rd_atomic.min(caps.max_dest_rd_atomic),
                min_rnr_timer: options.min_rnr_timer,
                hop_limit: options.hop_limit,
                traffic_class: options.traffic_class,
                sl: options.sl,
                flow_label: options.flow_label,
            };
            self.modify(rtr, QpState::Rtr)?;
            self.enter_rts(psn, options, &caps)?;
        }
        let mut seq = self.core.seq();
        seq.peer = Some(*remote);
        seq.resume = None;
        Ok(())
    }

    /// Moves the QP to the error state: everything outstanding completes with flush CQEs.
    pub fn to_error(&mut self) -> Result<(), Error> {
        self.modify(Transition::Err, QpState::Err)?;
        self.sq.set_ready(false);
        if let Some(rq) = &mut self.rq {
            rq.set_ready(false);
        }
        Ok(())
    }

    /// Resets the QP (after an error, or to reuse it): state RESET, queues emptied, doorbell
    /// records zeroed. Poll the flush CQEs first: CQEs still in the CQ for this QP are not
    /// removed (the CQ is driver-owned, rdma-core does not clean it).
    ///
    /// A connected QP keeps its place in both packet sequences: before the reset it reads
    /// the next send PSN and the expected receive PSN from the device
    /// ([`Backend::query_psn`]). Its next [`Qp::endpoint`] carries that send PSN, and a
    /// [`Qp::connect`] to the same peer endpoint as before expects that receive PSN. So a
    /// QP reset and reconnected on one side only, while the peer stays connected, goes on
    /// where the peer expects it. A fresh sequence instead would land, half the time, in the
    /// peer's duplicate window (the 2^23 PSNs behind the one it expects), where an IB
    /// responder acknowledges a request without executing it: a WRITE would complete with
    /// success and never land. Continued, the sequence is never behind the peer: the device
    /// moves its send PSN on when a request first goes out, so at worst it is ahead (the
    /// request was lost), which the peer answers with a sequence NAK, and the request fails
    /// with [`Syndrome::TransportRetryExcErr`](crate::prm::Syndrome) after its retries
    /// rather than completing as a false success.
    pub fn reset(&mut self) -> Result<(), Error> {
        let peer = self.core.seq().peer;
        if let Some(peer) = peer {
            let now = self.ctx().backend.query_psn(&self.core.handle)?;
            let mut seq = self.core.seq();
            seq.psn = now.sq_psn;
            seq.resume = Some((peer, now.rq_psn));
            seq.peer = None;
        }
        self.modify(Transition::Reset, QpState::Reset)?;
        self.sq.reset();
        if let Some(rq) = &mut self.rq {
            rq.reset();
        }
        self.core.errored.store(false, Ordering::Relaxed);
        if let Some(f) = &self.core.sq_error {
            f.store(false, Ordering::Relaxed);
        }
        Ok(())
    }

    /// Takes a UD or UC QP in the send-queue error state back to RTS (SQE → RTS): after a
    /// send failed, the device flushed the rest of the send queue and went on receiving;
    /// poll the error and flush CQEs first, then post again. Refused in any other state
    /// (an RC QP never enters SQE).
    pub fn recover_sq(&mut self) -> Result<(), Error> {
        if self.state() != QpState::Sqe {
            return Err(Error::WrongState {
                operation: "recover the send queue",
                state: self.state(),
            });
        }
        self.modify(Transition::SqeToRts, QpState::Rts)?;
        if let Some(f) = &self.core.sq_error {
            f.store(false, Ordering::Relaxed);
        }
        Ok(())
    }

    /// The backend handle.
    pub fn handle(&self) -> &B::Qp {
        &self.core.handle
    }

    /// One step of a connection whose attributes another party computes (rdma_cm on the
    /// `verbs` backend): `apply` moves the device QP to `state` (INIT from RESET, RTR from
    /// INIT, RTS from RTR, refused otherwise), then the queues follow as in [`Qp::connect`]:
    /// receives from INIT (on `port`), sends from RTS.
    #[cfg(feature = "verbs")]
    pub(crate) fn step_by(
        &mut self,
        state: QpState,
        port: u8,
        apply: impl FnOnce(&B, &B::Qp) -> Result<(), Error>,
    ) -> Result<(), Error> {
        let from = match state {
            QpState::Init => QpState::Reset,
            QpState::Rtr => QpState::Init,
            QpState::Rts => QpState::Rtr,
            _ => {
                return Err(Error::InvalidArgument(
                    "a connection steps to INIT, RTR, RTS",
                ))
            }
        };
        if self.state() != from {
            return Err(Error::WrongState {
                operation: "connect",
                state: self.state(),
            });
        }
        apply(&self.ctx().backend, &self.core.handle)?;
        self.state = state;
        match state {
            QpState::Init => {
                self.port = port;
                if let Some(rq) = &mut self.rq {
                    rq.set_ready(true);
                }
            }
            QpState::Rts => self.sq.set_ready(true),
            _ => {}
        }
        Ok(())
    }

    /// Records the peer of a connection made with [`Qp::step_by`], as [`Qp::connect`] does
    /// (a [`Qp::reset`] then continues both sequences).
    #[cfg(feature = "verbs")]
    pub(crate) fn connected_to(&mut self, peer: &Endpoint) {
        let mut seq = self.core.seq();
        seq.peer = Some(*peer);
        seq.resume = None;
    }

    /// The backend the QP lives on.
    #[cfg(feature = "verbs")]
    pub(crate) fn backend(&self) -> &B {
        &self.ctx().backend
    }
}

/// The send half of a [`Qp::split`] QP: its send queue (`Deref` to [`SendQueue`]), owned,
/// `Send`, keeping the QP alive.
#[derive(Debug)]
pub struct QpSender<B: Backend> {
    sq: SendQueue<B::Uar>,
    state: QpState,
    port: u8,
    core: Arc<QpCore<B>>,
}

impl<B: Backend> QpSender<B> {
    /// QP number.
    pub fn qpn(&self) -> u32 {
        self.core.qpn
    }

    /// The state when split, or [`QpState::Err`] once an error CQE or a fatal asynchronous
    /// event named the QP (as [`Qp::state`]).
    pub fn state(&self) -> QpState {
        self.core.state(self.state)
    }

    /// Puts the halves of one QP back together (to reset or reconnect it); gives them back
    /// if they are halves of different QPs.
    #[allow(clippy::result_large_err)] // the halves themselves are handed back, by design
    pub fn join(self, receiver: QpReceiver<B>) -> Result<Qp<B>, (QpSender<B>, QpReceiver<B>)> {
        if !Arc::ptr_eq(&self.core, &receiver.core) {
            return Err((self, receiver));
        }
        let QpSender {
            sq,
            state,
            port,
            core,
        } = self;
        Ok(Qp {
            sq,
            rq: receiver.rq,
            state,
            port,
            core,
        })
    }
}

impl<B: Backend> Deref for QpSender<B> {
    type Target = SendQueue<B::Uar>;
    fn deref(&self) -> &Self::Target {
        &self.sq
    }
}

impl<B: Backend> DerefMut for QpSender<B> {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.sq
    }
}

/// The receive half of a [`Qp::split`] QP: its receive queue (none with an SRQ), owned,
/// `Send`, keeping the QP alive.
#[derive(Debug)]
pub struct QpReceiver<B: Backend> {
    rq: Option<RecvQueue>,
    state: QpState,
    core: Arc<QpCore<B>>,
}

impl<B: Backend> QpReceiver<B> {
    /// QP number.
    pub fn qpn(&self) -> u32 {
        self.core.qpn
    }

    /// The state when split, or [`QpState::Err`] once an error CQE or a fatal asynchronous
    /// event named the QP (as [`Qp::state`]).
    pub fn state(&self) -> QpState {
        self.core.state(self.state)
    }

    /// The receive queue (`None` when the QP uses an SRQ).
    pub fn rq(&mut self) -> Option<&mut RecvQueue> {
        self.rq.as_mut()
    }

    /// The receive queue, to read.
    pub fn recv_queue(&self) -> Option<&RecvQueue> {
        self.rq.as_ref()
    }
}

/// A DC target (DCT): executes the RC operations of every DCI that carries its DC key,
/// taking receives from its SRQ. Its completions (on the receive CQ) name the DCT as
/// [`Completion::qpn`](crate::Completion::qpn) and the sender as `src_qp` (the DCI) and
/// `slid`.
#[derive(Debug)]
pub struct Dct<B: Backend> {
    // Dropped first: the device object before the CQ, SRQ and PD it uses.
    handle: B::Qp,
    number: Option<u32>,
    state: QpState,
    dc_key: u64,
    recv_cq: Arc<CqInner<B>>,
    srq: Arc<SrqInner<B>>,
    _pd: Arc<PdInner<B>>,
}

impl<B: Backend> Dct<B> {
    /// RESET → INIT (`port`, the rights granted to DCIs) → RTR (the path MTU, the RNR
    /// timer and, on RoCE, the GRH fields of `options`): DCIs reach it from now on, by
    /// [`Dct::number`].
    pub fn activate(
        &mut self,
        port: u8,
        access: Access,
        options: &ConnectOptions,
    ) -> Result<(), Error> {
        if self.state != QpState::Reset {
            return Err(Error::WrongState {
                operation: "activate",
                state: self.state,
            });
        }
        let ctx = &self._pd.ctx;
        if access.contains(Access::REMOTE_ATOMIC) && !ctx.caps().atomics {
            return Err(Error::InvalidArgument(
                "REMOTE_ATOMIC on a device without atomics",
            ));
        }
        options.validate()?;
        ctx.backend.modify_qp(
            &self.handle,
            &Transition::Init {
                port,
                access,
                pkey_index: options.pkey_index,
            },
        )?;
        self.state = QpState::Init;
        ctx.backend.modify_qp(
            &self.handle,
            &Transition::RtrDct {
                path_mtu: path_mtu(&*ctx.backend, port, options)?,
                min_rnr_timer: options.min_rnr_timer,
                hop_limit: options.hop_limit,
                traffic_class: options.traffic_class,
                sl: options.sl,
                flow_label: options.flow_label,
            },
        )?;
        self.state = QpState::Rtr;
        let number = ctx.backend.dct_number(&self.handle)?;
        self.recv_cq.attachments.attach(QpEntry {
            qpn: number,
            sq: Arc::new(SqShared::new(1)),
            recv: RecvShared::Srq(self.srq.shared.clone()),
            errored: Arc::new(AtomicBool::new(false)),
            sq_error: None,
            streams: false,
        });
        self.number = Some(number);
        Ok(())
    }

    /// The DCT number DCIs address (in `dqp_dct`): known once in RTR (the device creates
    /// the DCT at INIT → RTR).
    pub fn number(&self) -> Result<u32, Error> {
        self.number.ok_or(Error::WrongState {
            operation: "read the DCT number",
            state: self.state,
        })
    }

    /// The DC access key DCIs must carry.
    pub fn dc_key(&self) -> u64 {
        self.dc_key
    }

    /// The state as last set (RESET, INIT or RTR: a DCT has no other).
    pub fn state(&self) -> QpState {
        self.state
    }

    /// The backend handle.
    pub fn handle(&self) -> &B::Qp {
        &self.handle
    }
}

impl<B: Backend> Drop for Dct<B> {
    fn drop(&mut self) {
        if let Some(number) = self.number {
            self.recv_cq.attachments.detach(number);
        }
    }
}
