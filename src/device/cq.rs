//! A completion queue as an object ([`Cq`]): its poller ([`CompletionQueue`]), its channel
//! and its error flag.

use core::sync::atomic::{AtomicBool, Ordering};
use core::time::Duration;
use std::ops::{Deref, DerefMut};
use std::sync::Arc;

use crate::backend::Backend;
use crate::channel::CompChannel;
use crate::cq::{CompletionQueue, CqAttachments};
use crate::error::Error;

use super::context::{lock_flags, Context};

#[derive(Debug)]
pub(super) struct CqInner<B: Backend> {
    pub(super) handle: B::Cq,
    pub(super) attachments: Arc<CqAttachments>,
    pub(super) cqn: u32,
    /// Set when the context hands out [`AsyncEvent::CqError`] for this CQ.
    pub(super) errored: Arc<AtomicBool>,
    /// Where its completion events go; released after the CQ (field order).
    pub(super) channel: CompChannel<B>,
    pub(super) ctx: Context<B>,
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
    pub(super) queue: CompletionQueue<B::Uar>,
    pub(super) inner: Arc<CqInner<B>>,
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

    /// Whether the device reported this CQ in error ([`AsyncEvent::CqError`](crate::AsyncEvent::CqError), e.g. after
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
