//! XRC (eXtended Reliable Connection): an XRC domain ([`XrcDomain`]), its XRC SRQs
//! ([`XrcSrq`]) and XRC target QPs ([`XrcTarget`]). The XRC initiator is a [`Qp`] of
//! [`Transport::XrcIni`] ([`ProtectionDomain::create_xrc_initiator`]), posted with
//! [`SendQueue::post_xrc`](crate::SendQueue::post_xrc), which names the SRQ per WQE.
//!
//! An initiator connects to one target as RC QPs connect; the target has no rings, PD or
//! CQ of its own: each request lands in the XRC SRQ of the target's domain its XRC segment
//! names, and completes on that SRQ's CQ (the completion names the target QP in
//! [`Completion::qpn`](crate::Completion::qpn)). One target serves every SRQ of its
//! domain, one SRQ every target of it: N processes reach M receive queues with N × M
//! fewer connections than RC would need (docs/transports.md, "XRC").

use core::sync::atomic::{AtomicBool, Ordering};
use std::ops::{Deref, DerefMut};
use std::sync::Arc;

use crate::backend::Backend;
use crate::cq::{xrc_srq_key, QpEntry, RecvShared};
use crate::error::Error;
use crate::prm::DS;
use crate::rq::{SharedRecvQueue, SrqShared};
use crate::sq::SqShared;
use crate::types::{Access, ConnectOptions, Endpoint, QpConfig, QpState, Transition, Transport};

use super::context::{lock_flags, Context};
use super::cq::{Cq, CqInner};
use super::pd::{PdInner, ProtectionDomain};
use super::qp::{path_mtu, random_psn, rc_rtr, Qp};

#[derive(Debug)]
pub(super) struct XrcdInner<B: Backend> {
    handle: B::Xrcd,
    ctx: Context<B>,
}

/// An XRC domain (`ibv_open_xrcd`): the XRC SRQs a target QP of the domain may deliver
/// into. Closed when the last of it, its SRQs and its targets is dropped;
/// [`XrcDomain::close`] closes it now or says it is in use.
#[derive(Debug)]
pub struct XrcDomain<B: Backend> {
    inner: Arc<XrcdInner<B>>,
}

impl<B: Backend> Context<B> {
    /// Opens an XRC domain (`ibv_open_xrcd`, of this process alone: no file is shared).
    /// [`Error::Unsupported`] on a device without XRC
    /// ([`DeviceCaps::xrc`](crate::DeviceCaps::xrc)) or a backend without it.
    pub fn open_xrcd(&self) -> Result<XrcDomain<B>, Error> {
        let handle = self.backend.open_xrcd()?;
        Ok(XrcDomain {
            inner: Arc::new(XrcdInner {
                handle,
                ctx: self.clone(),
            }),
        })
    }
}

/// Refuses an object of another context than `ctx`'s.
fn same_context<B: Backend>(ctx: &Context<B>, other: &Context<B>) -> Result<(), Error> {
    if Arc::ptr_eq(&ctx.backend, &other.backend) {
        Ok(())
    } else {
        Err(Error::InvalidArgument(
            "an XRC object and the objects it uses must be of one context",
        ))
    }
}

impl<B: Backend> XrcDomain<B> {
    /// Creates an XRC SRQ in this domain and `pd` (`ibv_create_srq_ex` with
    /// `IBV_SRQT_XRC`), completing on `cq`, holding at least `entries` receives with
    /// `max_sge` scatter entries each (sized as [`ProtectionDomain::create_srq`]). Its
    /// receives are posted as a basic SRQ's; initiators name it by [`XrcSrq::srqn`]. It
    /// keeps the domain, `pd` and `cq` alive ([`Cq::destroy`] and [`XrcDomain::close`] say
    /// [`Error::Busy`] meanwhile).
    pub fn create_srq(
        &self,
        pd: &ProtectionDomain<B>,
        cq: &Cq<B>,
        entries: u32,
        max_sge: u32,
    ) -> Result<XrcSrq<B>, Error> {
        let ctx = &self.inner.ctx;
        same_context(ctx, &pd.inner.ctx)?;
        same_context(ctx, &cq.inner.ctx)?;
        let (handle, desc, srqn, key) = ctx.backend.create_xrc_srq(
            &pd.inner.handle,
            &self.inner.handle,
            &cq.inner.handle,
            entries,
            max_sge,
        )?;
        let shared = Arc::new(SrqShared::new(desc.wqe_cnt, desc.stride / DS - 1));
        let limit = entries.max(1).next_power_of_two();
        // SAFETY: the description stays valid while `handle` lives; the queue is dropped
        // before it (field order).
        let queue = unsafe { SharedRecvQueue::new(&desc, limit, shared.clone()) };
        let key = xrc_srq_key(key);
        cq.inner.attachments.attach(QpEntry {
            qpn: key,
            // No requester CQE names the key (bit 31): a send state that matches none.
            sq: Arc::new(SqShared::gone()),
            recv: RecvShared::Srq(shared),
            errored: Arc::new(AtomicBool::new(false)),
            sqe: false,
            streams: false,
            eth_rq: false,
        });
        Ok(XrcSrq {
            queue,
            srqn,
            key,
            handle,
            cq: cq.inner.clone(),
            _xrcd: self.inner.clone(),
            _pd: pd.inner.clone(),
        })
    }

    /// Creates an XRC target QP in this domain (`ibv_create_qp_ex` with
    /// `IBV_QPT_XRC_RECV`), in RESET: no rings, PD or CQ. [`XrcTarget::connect`] it to an
    /// initiator's [`Qp::endpoint`](crate::Qp::endpoint).
    pub fn create_target(&self) -> Result<XrcTarget<B>, Error> {
        let ctx = &self.inner.ctx;
        let (handle, qpn) = ctx.backend.create_xrc_target(&self.inner.handle)?;
        let errored = Arc::new(AtomicBool::new(false));
        lock_flags(&ctx.qps).insert(qpn, errored.clone());
        Ok(XrcTarget {
            handle,
            qpn,
            state: QpState::Reset,
            psn: random_psn(),
            errored,
            xrcd: self.inner.clone(),
        })
    }

    /// Closes the domain (`ibv_close_xrcd`), or gives it back with [`Error::Busy`] while an
    /// XRC SRQ or target of it lives (the kernel's `ib_dealloc_xrcd_user`: EBUSY).
    #[allow(clippy::result_large_err)] // the domain itself is handed back, by design
    pub fn close(self) -> Result<(), (Self, Error)> {
        if Arc::strong_count(&self.inner) > 1 {
            return Err((self, Error::Busy("XRC domain")));
        }
        Ok(())
    }

    /// The backend's handle.
    pub fn handle(&self) -> &B::Xrcd {
        &self.inner.handle
    }
}

/// An XRC SRQ: receives posted through [`SharedRecvQueue`] (`Deref`), taken by the
/// requests of the domain's targets that name [`XrcSrq::srqn`], completed on its CQ.
#[derive(Debug)]
pub struct XrcSrq<B: Backend> {
    // Dropped in this order: the queue, the device object, then what it uses.
    queue: SharedRecvQueue,
    srqn: u32,
    /// Its key among its CQ's attachments ([`xrc_srq_key`]).
    key: u32,
    handle: B::Srq,
    cq: Arc<CqInner<B>>,
    _xrcd: Arc<XrcdInner<B>>,
    _pd: Arc<PdInner<B>>,
}

impl<B: Backend> XrcSrq<B> {
    /// The SRQ number initiators put in their XRC segment (`ibv_get_srq_num`).
    pub fn srqn(&self) -> u32 {
        self.srqn
    }

    /// The backend handle.
    pub fn handle(&self) -> &B::Srq {
        &self.handle
    }
}

impl<B: Backend> Drop for XrcSrq<B> {
    fn drop(&mut self) {
        self.cq.attachments.detach(self.key);
    }
}

impl<B: Backend> Deref for XrcSrq<B> {
    type Target = SharedRecvQueue;
    fn deref(&self) -> &Self::Target {
        &self.queue
    }
}

impl<B: Backend> DerefMut for XrcSrq<B> {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.queue
    }
}

/// An XRC target QP: the responder of one initiator's connection, with no queue of its
/// own (nothing can be posted to it), executing each request in the XRC SRQ of its domain
/// the request names.
#[derive(Debug)]
pub struct XrcTarget<B: Backend> {
    handle: B::Qp,
    qpn: u32,
    state: QpState,
    /// The first PSN it sends (its ACKs and READ responses follow the initiator's PSNs; a
    /// target's own send PSN is RC's RTS attribute).
    psn: u32,
    errored: Arc<AtomicBool>,
    xrcd: Arc<XrcdInner<B>>,
}

impl<B: Backend> XrcTarget<B> {
    /// QP number.
    pub fn qpn(&self) -> u32 {
        self.qpn
    }

    /// The state as last set, or [`QpState::Err`] once the context handed out an
    /// asynchronous event saying the device moved it to ERR (e.g. after answering a
    /// request for an SRQ it may not use with a NAK).
    pub fn state(&self) -> QpState {
        if self.errored.load(Ordering::Relaxed) {
            QpState::Err
        } else {
            self.state
        }
    }

    /// The address to give the initiator, on the context's port.
    pub fn endpoint(&self) -> Result<Endpoint, Error> {
        let backend = &self.xrcd.ctx.backend;
        backend.endpoint(backend.default_port(), self.qpn, self.psn)
    }

    /// Connects to the initiator at `remote` as an RC QP connects ([`Qp::connect`]): INIT
    /// (the port and the rights of `options`, by default every right the device has),
    /// RTR expecting `remote.psn` ([`Transition::Rtr`]), RTS with the timeout alone
    /// ([`Transition::RtsXrcTgt`]). Only from RESET.
    pub fn connect(&mut self, remote: &Endpoint, options: &ConnectOptions) -> Result<(), Error> {
        options.validate()?;
        if self.state() != QpState::Reset {
            return Err(Error::WrongState {
                operation: "connect",
                state: self.state(),
            });
        }
        let xrcd = self.xrcd.clone();
        let ctx = &xrcd.ctx;
        let caps = ctx.caps();
        let access = options
            .access
            .unwrap_or(Access::remote_default(caps.atomics));
        if access.contains(Access::REMOTE_ATOMIC) && !caps.atomics {
            return Err(Error::InvalidArgument(
                "REMOTE_ATOMIC on a device without atomics",
            ));
        }
        let port = options.port.unwrap_or(ctx.backend.default_port());
        let init = Transition::Init {
            port,
            access,
            pkey_index: options.pkey_index,
        };
        self.modify(init, QpState::Init)?;
        let path_mtu = path_mtu(&*ctx.backend, port, options)?;
        self.modify(rc_rtr(*remote, path_mtu, options, &caps), QpState::Rtr)?;
        let rts = Transition::RtsXrcTgt {
            sq_psn: self.psn,
            timeout: options.timeout,
        };
        self.modify(rts, QpState::Rts)
    }

    /// Moves the target to the error state.
    pub fn to_error(&mut self) -> Result<(), Error> {
        self.modify(Transition::Err, QpState::Err)
    }

    fn modify(&mut self, transition: Transition, state: QpState) -> Result<(), Error> {
        self.xrcd.ctx.backend.modify_qp(&self.handle, &transition)?;
        self.state = state;
        Ok(())
    }

    /// The backend handle.
    pub fn handle(&self) -> &B::Qp {
        &self.handle
    }
}

impl<B: Backend> Drop for XrcTarget<B> {
    fn drop(&mut self) {
        lock_flags(&self.xrcd.ctx.qps).remove(&self.qpn);
    }
}

impl<B: Backend> ProtectionDomain<B> {
    /// Creates an XRC initiator (`ibv_create_qp_ex` with `IBV_QPT_XRC_SEND`; `config`'s
    /// transport is taken as [`Transport::XrcIni`], its receive fields are ignored): a send
    /// queue whose completions go to `send_cq`, posted with
    /// [`SendQueue::post_xrc`](crate::SendQueue::post_xrc) once [`Qp::connect`] connected
    /// it to an [`XrcTarget`]. It has no receive queue; its WQEs are 16 bytes longer than
    /// RC's (the XRC segment, counted in the sizing of `config`).
    pub fn create_xrc_initiator(&self, send_cq: &Cq<B>, config: &QpConfig) -> Result<Qp<B>, Error> {
        let config = QpConfig {
            transport: Transport::XrcIni,
            ..*config
        };
        self.create_send_only(send_cq, &config)
    }
}
