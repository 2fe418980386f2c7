//! The NIC's events in the public API: completion channels, the NIC's own completion event
//! queue and the asynchronous event queue, polled or waited for.

use crate::nic::{insert, Nic};
use crate::state::{NicState, CHANNEL_BASE};
use crate::types::{AsyncEvent, Event, HwError};
use std::fs::File;
use std::sync::Arc;
use std::time::{Duration, Instant};

impl Nic {
    /// Creates a completion channel (`ibv_create_comp_channel`): CQs created with it
    /// ([`CqParams::channel`](crate::CqParams::channel)) queue their completion events
    /// there. Returns its number.
    pub fn create_channel(&self) -> Result<u32, HwError> {
        let channel = crate::channel::Channel::new()?;
        self.with(|n| Ok(insert(&mut n.channels, channel, CHANNEL_BASE)))
    }

    /// The channel's file descriptor: an eventfd, readable while an event waits (as the
    /// kernel's completion channel fd), for poll(2), epoll or an async runtime. Take the
    /// events with [`Nic::poll_channel`]; do not read the fd.
    pub fn channel_fd(&self, channel: u32) -> Result<Arc<File>, HwError> {
        self.with(|n| {
            n.channel(channel)
                .map(|c| c.fd())
                .ok_or(HwError::NoSuchObject)
        })
    }

    /// Takes the next completion event of `channel`, if any (`ibv_get_cq_event` on a
    /// non-blocking channel).
    pub fn poll_channel(&self, channel: u32) -> Result<Option<Event>, HwError> {
        self.with(|n| {
            n.channel(channel)
                .map(|c| c.pop())
                .ok_or(HwError::NoSuchObject)
        })
    }

    /// Destroys a completion channel; [`HwError::Busy`] while a CQ uses it. Events still
    /// queued are discarded, as closing the channel's file discards them.
    pub fn destroy_channel(&self, channel: u32) -> Result<(), HwError> {
        self.with(|n| {
            if n.channel(channel).ok_or(HwError::NoSuchObject)?.refs != 0 {
                return Err(HwError::Busy);
            }
            n.channels[(channel - CHANNEL_BASE) as usize] = None;
            Ok(())
        })
    }

    /// Take the next completion event of a CQ on no channel, if any (the NIC's own queue;
    /// asynchronous events are [`Nic::poll_async_event`]).
    pub fn poll_event(&self) -> Option<Event> {
        self.with(|n| n.events.pop_front())
    }

    /// Wait up to `timeout` for the next completion event of a CQ on no channel.
    pub fn wait_event(&self, timeout: Duration) -> Option<Event> {
        self.wait(timeout, |n| n.events.pop_front())
    }

    /// Take the next affiliated asynchronous event, if any (CQ error, QP fatal, ...: what
    /// the kernel delivers through the context's async fd).
    pub fn poll_async_event(&self) -> Option<AsyncEvent> {
        self.with(|n| n.async_events.pop_front())
    }

    /// Wait up to `timeout` for the next affiliated asynchronous event.
    pub fn wait_async_event(&self, timeout: Duration) -> Option<AsyncEvent> {
        self.wait(timeout, |n| n.async_events.pop_front())
    }

    /// Wait up to `timeout` until `take` finds something in this NIC's state.
    fn wait<T>(
        &self,
        timeout: Duration,
        mut take: impl FnMut(&mut NicState) -> Option<T>,
    ) -> Option<T> {
        let deadline = Instant::now() + timeout;
        let mut w = self.fabric.lock();
        loop {
            if let Some(e) = take(&mut w.nics[self.idx]) {
                return Some(e);
            }
            let now = Instant::now();
            if now >= deadline {
                return None;
            }
            w = self
                .fabric
                .events
                .wait_timeout(w, deadline - now)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }
}
