//! The protection domain ([`ProtectionDomain`]): memory registration and the creation of
//! the objects that live in a PD (address handles, QPs, DCIs and DCTs, SRQs).

use core::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};

use crate::backend::Backend;
use crate::cq::{QpEntry, RecvShared};
use crate::error::Error;
use crate::mem::{MemOptions, Memory};
use crate::prm::DS;
use crate::rq::{RecvQueue, RqShared, SharedRecvQueue, SrqShared};
use crate::sq::{SendQueue, SqShared};
use crate::types::{Access, AhAttr, QpConfig, QpState, Transport};

use super::ah::AddressHandle;
use super::context::{lock_flags, Context};
use super::cq::Cq;
use super::dct::Dct;
use super::mr::MemoryRegion;
use super::qp::{random_psn, Qp, QpCore, Sequence};
use super::srq::{Srq, SrqInner};

#[derive(Debug)]
pub(super) struct PdInner<B: Backend> {
    pub(super) handle: B::Pd,
    pub(super) ctx: Context<B>,
    /// A parent domain's PD, released after the domain (field order).
    pub(super) _parent: Option<ProtectionDomain<B>>,
}

/// A protection domain.
#[derive(Debug)]
pub struct ProtectionDomain<B: Backend> {
    pub(super) inner: Arc<PdInner<B>>,
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
        // A DCI and an XRC initiator have a send queue alone.
        let send_only = matches!(config.transport, Transport::Dci | Transport::XrcIni);
        let raw = config.transport == Transport::Raw;
        let sizes = config.check(&ctx.backend.caps(), srq.is_some() || send_only)?;
        let eth = super::raw::check_cqs(ctx, send_cq, recv_cq, srq.is_some(), raw)?;
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
        // UD, UC and raw packet QPs have a send-queue error state: their send queue refuses
        // posts (`SqShared::refuse`) while the QP goes on receiving.
        let sqe = matches!(
            config.transport,
            Transport::Ud | Transport::Uc | Transport::Raw
        );
        let sq_shared = Arc::new(SqShared::new(parts.sq.wqe_cnt, parts.sq.qpn));
        // SAFETY: the descriptions stay valid while `parts.handle` lives; the QP drops its
        // queues before the handle (field order).
        let mut sq = unsafe { SendQueue::new(&parts.sq, parts.uar, sq_shared.clone()) };
        let ud = config.transport == Transport::Ud;
        match config.transport {
            Transport::Rc | Transport::Dct | Transport::XrcTgt => {}
            Transport::Ud => sq.make_ud(&parts.sq),
            Transport::Uc => sq.make_uc(),
            Transport::Raw => sq.make_eth(&parts.sq, eth.expect("checked for a raw packet QP")),
            Transport::Dci => sq.make_dci(&parts.sq, config.dci_streams.map_or(1, |s| s.count())),
            Transport::XrcIni => sq.make_xrc(&parts.sq),
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
            (None, None) if send_only => (None, RecvShared::None),
            (None, None) => {
                return Err(Error::InvalidArgument(
                    "backend created a QP without a receive queue",
                ))
            }
        };
        let entry = QpEntry {
            qpn: parts.qpn,
            sq: sq_shared.clone(),
            recv,
            errored: errored.clone(),
            sqe,
            streams: config.dci_streams.is_some(),
            eth_rq: false,
        };
        send_cq.inner.attachments.attach(entry.clone());
        recv_cq.inner.attachments.attach(QpEntry {
            eth_rq: raw,
            ..entry
        });
        lock_flags(&ctx.qps).insert(parts.qpn, errored.clone());
        lock_flags(&ctx.sqs).insert(parts.qpn, sq_shared.clone());
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
                sq: sq_shared,
                sqe,
                seq: Mutex::new(Sequence {
                    psn: random_psn(),
                    peer: None,
                    resume: None,
                }),
                mcast: Mutex::new(Vec::new()),
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
        self.create_send_only(send_cq, &config)
    }

    /// A QP of `config` with a send queue alone (a DCI, an XRC initiator), completing on
    /// `send_cq`.
    pub(super) fn create_send_only(
        &self,
        send_cq: &Cq<B>,
        config: &QpConfig,
    ) -> Result<Qp<B>, Error> {
        self.build_qp(send_cq, send_cq, None, config)
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

/// True if every page of `[addr, addr + len)` is mapped (`mincore` fails with ENOMEM on
/// a hole). The range is known not to wrap.
pub(super) fn is_mapped(addr: *mut u8, len: usize) -> bool {
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
