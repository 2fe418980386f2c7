//! Completion channels: waiting for a CQ's completion events, the same way on every backend.
//!
//! A CQ armed with [`CompletionQueue::arm`](crate::cq::CompletionQueue::arm) raises one
//! completion event for its next CQE (or next solicited one). The event goes to the CQ's
//! [`CompChannel`] (`ibv_comp_channel`): the channel the CQ was created on
//! ([`Context::create_cq_on`](crate::Context::create_cq_on)), or the context's own channel
//! for [`Context::create_cq`](crate::Context::create_cq). Several CQs may share a channel;
//! each channel has a file descriptor, readable while an event waits, for poll(2), epoll or
//! an async runtime (feature `tokio`: `AsyncCompChannel`).
//!
//! - [`Cq::wait_event`](crate::Cq::wait_event) waits for an event of one CQ,
//! - [`CompChannel::wait`] for an event of any CQ on the channel (it returns the CQN),
//! - [`CompChannel::try_next`] takes one without blocking (after epoll said readable).
//!
//! A waiter for one CQ reads the channel until its CQ's event comes; the events of other CQs
//! it reads on the way are kept in the channel for their waiters (and for `wait` /
//! `try_next`), but the fd no longer signals them. So on one channel, either wait per CQ,
//! or wait on the fd (epoll, tokio) and use `try_next`, not both.
//!
//! Taking an event is all the acknowledging there is: the backend acknowledges it below
//! (`ibv_ack_cq_events`) and the CQ's next [`arm`](crate::cq::CompletionQueue::arm) carries
//! the advanced arm sequence number, as libmlx5 advances it inside `ibv_get_cq_event`. (An
//! arm with the sequence number of the arm that already fired is ignored by the device:
//! forgetting to count an event would lose every later one.)
//!
//! The pattern (poll until empty, then arm, poll once more, then wait):
//!
//! ```
//! # use mlx5_direct::backend::sim::{Fabric, NicConfig, Sim};
//! # use mlx5_direct::{Access, Completion, ConnectOptions, Context, Data, QpConfig, SendFlags, SendOp};
//! # use std::time::Duration;
//! # let ctx = Context::new(Sim::new());
//! # let pd = ctx.alloc_pd()?;
//! let channel = ctx.create_comp_channel()?;
//! let mut cq = ctx.create_cq_on(&channel, 64, 64)?;
//! # let mut qp = pd.create_qp(&cq, &cq, &QpConfig::default())?;
//! # let mr = pd.alloc_mr(64, Access::ALL)?;
//! # let me = qp.endpoint()?;
//! # qp.connect(&me, &ConnectOptions::default())?;
//! let mut done = [Completion::default(); 16];
//! cq.arm(false);
//! qp.sq().post(7, SendOp::Write(mr.remote(0)), Data::Inline(b"x"), SendFlags::SIGNALED)?;
//! assert_eq!(channel.wait(Duration::from_secs(1))?, Some(cq.cqn()));
//! assert_eq!(cq.poll(&mut done), 1);
//! cq.arm(false); // the next event
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use core::sync::atomic::{AtomicU32, Ordering};
use core::time::Duration;
use std::collections::{HashMap, VecDeque};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, RawFd};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::Instant;

use crate::backend::{wait_readable, Backend};
use crate::error::Error;

/// A completion channel (`ibv_comp_channel`): where the completion events of the CQs created
/// on it arrive. Cheap to clone (reference counted); `Send + Sync`, and any number of
/// threads may wait on it at once.
#[derive(Debug)]
pub struct CompChannel<B: Backend> {
    inner: Arc<ChannelInner<B>>,
}

impl<B: Backend> Clone for CompChannel<B> {
    fn clone(&self) -> Self {
        CompChannel {
            inner: self.inner.clone(),
        }
    }
}

#[derive(Debug)]
struct ChannelInner<B: Backend> {
    handle: B::Channel,
    backend: Arc<B>,
    pending: Mutex<Pending>,
    /// Signalled when a reader puts events into `pending` or stops reading.
    turn: Condvar,
}

/// Events taken from the backend but not yet handed out (a waiter for one CQ takes the
/// events of the others off the backend), and the CQs on the channel.
#[derive(Debug, Default)]
struct Pending {
    /// CQNs with an event taken, oldest first.
    events: VecDeque<u32>,
    /// One thread at a time reads the backend; the others wait on `turn`.
    reading: bool,
    /// Each CQ's count of events handed out (its arm sequence number).
    cqs: HashMap<u32, Arc<AtomicU32>>,
}

impl<B: Backend> CompChannel<B> {
    pub(crate) fn new(backend: Arc<B>) -> Result<Self, Error> {
        Ok(CompChannel {
            inner: Arc::new(ChannelInner {
                handle: backend.create_channel()?,
                backend,
                pending: Mutex::default(),
                turn: Condvar::new(),
            }),
        })
    }

    /// The backend handle (e.g. the model's channel number).
    pub fn handle(&self) -> &B::Channel {
        &self.inner.handle
    }

    pub(crate) fn register(&self, cqn: u32) -> Arc<AtomicU32> {
        let events = Arc::new(AtomicU32::new(0));
        self.lock().cqs.insert(cqn, events.clone());
        events
    }

    pub(crate) fn unregister(&self, cqn: u32) {
        let mut pending = self.lock();
        pending.cqs.remove(&cqn);
        pending.events.retain(|&c| c != cqn);
    }

    fn lock(&self) -> MutexGuard<'_, Pending> {
        self.inner
            .pending
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Waits up to `timeout` for a completion event of any CQ on this channel and returns
    /// its CQN (`None`: none came). The event is taken: the CQ's next arm asks for the
    /// next one.
    pub fn wait(&self, timeout: Duration) -> Result<Option<u32>, Error> {
        self.wait_for(None, timeout)
    }

    /// Takes a completion event if one is ready, without blocking (e.g. once epoll or an
    /// async runtime reported the fd readable).
    pub fn try_next(&self) -> Result<Option<u32>, Error> {
        self.wait_for(None, Duration::ZERO)
    }

    /// Waits up to `timeout` for an event of CQ `cqn` (any CQ when `None`). Events of other
    /// CQs read meanwhile stay pending for their own waiters.
    pub(crate) fn wait_for(
        &self,
        cqn: Option<u32>,
        timeout: Duration,
    ) -> Result<Option<u32>, Error> {
        let deadline = Instant::now() + timeout;
        let mut pending = self.lock();
        loop {
            if let Some(i) = pending
                .events
                .iter()
                .position(|&c| cqn.is_none_or(|w| w == c))
            {
                let got = pending.events.remove(i).expect("index found above");
                if let Some(count) = pending.cqs.get(&got) {
                    count.fetch_add(1, Ordering::Release);
                }
                return Ok(Some(got));
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if pending.reading {
                if left.is_zero() {
                    return Ok(None);
                }
                pending = self
                    .inner
                    .turn
                    .wait_timeout(pending, left)
                    .unwrap_or_else(PoisonError::into_inner)
                    .0;
                continue;
            }
            pending.reading = true;
            drop(pending);
            let read = self.read(cqn, left);
            pending = self.lock();
            pending.reading = false;
            self.inner.turn.notify_all();
            let read = read?;
            let found = !read.is_empty();
            pending.events.extend(read);
            if !found && left.is_zero() {
                return Ok(None);
            }
        }
    }

    /// Takes events from the backend up to the first of CQ `cqn` (the first of any CQ when
    /// `None`), so that events nobody asked for stay behind the fd; if there is none, waits
    /// up to `timeout` for the fd to become readable and tries once more.
    fn read(&self, cqn: Option<u32>, timeout: Duration) -> Result<Vec<u32>, Error> {
        let inner = &*self.inner;
        let take = |events: &mut Vec<u32>| -> Result<(), Error> {
            while let Some(got) = inner.backend.get_cq_event(&inner.handle)? {
                events.push(got);
                if cqn.is_none_or(|want| want == got) {
                    break;
                }
            }
            Ok(())
        };
        let mut events = Vec::new();
        take(&mut events)?;
        if events.is_empty() && !timeout.is_zero() {
            let ready =
                wait_readable(inner.handle.as_fd(), timeout).map_err(|e| Error::Device {
                    operation: "wait for a completion event",
                    reason: e.to_string(),
                })?;
            if ready {
                take(&mut events)?;
            }
        }
        Ok(events)
    }
}

impl<B: Backend> AsFd for CompChannel<B> {
    /// The channel's fd: readable while an event waits (the verbs channel fd on hardware,
    /// the model's eventfd on `sim`). Do not read it: take events with
    /// [`CompChannel::try_next`].
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.inner.handle.as_fd()
    }
}

impl<B: Backend> AsRawFd for CompChannel<B> {
    fn as_raw_fd(&self) -> RawFd {
        self.as_fd().as_raw_fd()
    }
}

/// A completion channel registered with the tokio runtime (feature `tokio`), for
/// `async` code: [`AsyncCompChannel::wait`] resolves with the CQN of the next event.
#[cfg(feature = "tokio")]
#[cfg_attr(docsrs, doc(cfg(feature = "tokio")))]
#[derive(Debug)]
pub struct AsyncCompChannel<B: Backend> {
    fd: tokio::io::unix::AsyncFd<CompChannel<B>>,
}

#[cfg(feature = "tokio")]
#[cfg_attr(docsrs, doc(cfg(feature = "tokio")))]
impl<B: Backend> AsyncCompChannel<B> {
    /// Registers `channel`'s fd with the current tokio runtime (call from within it).
    pub fn new(channel: CompChannel<B>) -> Result<Self, Error> {
        // SAFETY: the channel owns its fd (the backend handle, held by the channel's `Arc`),
        // which stays open and the same while the `AsyncFd` holds this clone.
        let fd = unsafe {
            tokio::io::unix::AsyncFd::register_with_interest(channel, tokio::io::Interest::READABLE)
        }
        .map_err(|e| Error::Device {
            operation: "register a completion channel with tokio",
            reason: e.into_parts().1.to_string(),
        })?;
        Ok(AsyncCompChannel { fd })
    }

    /// The channel.
    pub fn channel(&self) -> &CompChannel<B> {
        self.fd.get_ref()
    }

    /// Waits for the next completion event of any CQ on the channel; its CQN.
    pub async fn wait(&self) -> Result<u32, Error> {
        loop {
            let mut ready = self.fd.readable().await.map_err(|e| Error::Device {
                operation: "wait for a completion event",
                reason: e.to_string(),
            })?;
            if let Some(cqn) = self.fd.get_ref().try_next()? {
                return Ok(cqn);
            }
            ready.clear_ready();
        }
    }
}
