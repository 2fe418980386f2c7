//! An opened device ([`Context`]): the root every other control object keeps alive, the
//! asynchronous events and the error flags they raise, the CQs and their completion
//! channels.

use core::sync::atomic::{AtomicBool, Ordering};
use core::time::Duration;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use crate::backend::Backend;
use crate::channel::CompChannel;
use crate::clock::ClockInfo;
use crate::cq::{CompletionQueue, CqAttachments};
use crate::error::Error;
use crate::event::AsyncEvent;
use crate::mem::MrTable;
use crate::sq::SqShared;
use crate::types::{CqConfig, DeviceCaps, GidEntry, PortInfo};

use super::cq::{Cq, CqInner};
use super::pd::{PdInner, ProtectionDomain};

/// The error flags of a context's live QPs (by QPN) or CQs (by CQN): where an asynchronous
/// error event is recorded.
pub(super) type ErrorFlags = Mutex<HashMap<u32, Arc<AtomicBool>>>;

/// Locks a registry by object number (`ErrorFlags`, `SendQueues`), a poisoned lock included
/// (a registry has no invariant to break).
pub(super) fn lock_flags<T>(flags: &Mutex<HashMap<u32, T>>) -> MutexGuard<'_, HashMap<u32, T>> {
    flags.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The send queues of a context's live QPs (by QPN): where an asynchronous QP error makes
/// the send queue refuse posts.
pub(super) type SendQueues = Mutex<HashMap<u32, Arc<SqShared>>>;

/// Sets the flag of object `number` in `flags`, if it has one.
pub(super) fn raise(flags: &ErrorFlags, number: u32) {
    if let Some(flag) = lock_flags(flags).get(&number) {
        flag.store(true, Ordering::Relaxed);
    }
}

/// An opened device.
#[derive(Debug)]
pub struct Context<B: Backend> {
    pub(super) backend: Arc<B>,
    pub(super) qps: Arc<ErrorFlags>,
    /// The send queues of the live QPs, which a QP error makes refuse posts.
    pub(super) sqs: Arc<SendQueues>,
    pub(super) cqs: Arc<ErrorFlags>,
    /// The channel of the CQs made by [`Context::create_cq`], made with the first of them.
    channel: Arc<Mutex<Option<CompChannel<B>>>>,
    /// The live regions the device may write, for data carried in CQEs.
    pub(super) mrs: Arc<MrTable>,
}

impl<B: Backend> Clone for Context<B> {
    fn clone(&self) -> Self {
        Context {
            backend: self.backend.clone(),
            qps: self.qps.clone(),
            sqs: self.sqs.clone(),
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
            sqs: Arc::default(),
            cqs: Arc::default(),
            channel: Arc::default(),
            mrs: Arc::default(),
        }
    }

    /// Takes the next asynchronous event of the device, if one is pending; never blocks.
    /// A QP the event says the device moved to ERR reports [`QpState::Err`](crate::QpState::Err) from now on, a
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
            if let Some(sq) = lock_flags(&self.sqs).get(&qpn) {
                sq.refuse();
            }
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
#[cfg_attr(docsrs, doc(cfg(feature = "sim")))]
impl Context<crate::backend::sim::Sim> {
    /// Opens a model NIC on a fabric of its own.
    pub fn open_sim() -> Self {
        Context::new(crate::backend::sim::Sim::new())
    }
}

#[cfg(feature = "verbs")]
#[cfg_attr(docsrs, doc(cfg(feature = "verbs")))]
impl Context<crate::backend::verbs::Verbs> {
    /// Opens a ConnectX device (`-d mlx5_0 -i port -x gid_index` in perftest's terms).
    pub fn open(options: &crate::backend::verbs::VerbsOptions) -> Result<Self, Error> {
        Ok(Context::new(crate::backend::verbs::Verbs::open(options)?))
    }
}
