//! Completion and asynchronous events, delivered as the kernel delivers them.
//!
//! - A completion channel's fd yields `struct ib_uverbs_comp_event_desc` (8 bytes: the
//!   CQ's `user_handle`, which libibverbs set to its `struct ibv_cq *`), read by
//!   `ibv_get_cq_event` (libibverbs verbs.c).
//! - The context's async fd yields `struct ib_uverbs_async_event_desc` (16 bytes: the
//!   object's `user_handle`, the `ib_event_type`, 4 reserved bytes), read by
//!   `ibv_get_async_event`.
//!
//! The kernel keeps each fd's events in a queue and counts, per object, the events the
//! program has *read* (`ib_uverbs_event_read` increments the object's counter); destroying
//! the object drops its unread events (`ib_uverbs_release_ucq`) and reports the count
//! (`comp_events_reported`, `async_events_reported`), and `ibv_destroy_cq` /
//! `ibv_destroy_qp` wait until the program has acknowledged that many (libibverbs
//! cmd_cq.c, cmd_qp.c). Here each queue is an [`EventQueue`] in the server; the program's
//! fd is an eventfd in semaphore mode that counts queued events (so `poll`, `epoll` and
//! `O_NONBLOCK` behave as on the kernel's fd), and the preload's `read` takes one count
//! from it, then the record from the server ([`EventQueue::pop`]). A record dropped with
//! its object leaves a count with no record: the read goes round again, as the kernel's
//! would block on the emptied queue.
//!
//! Lock order: the registry, then a queue; the model is called with the registry held
//! (the pump), never the other way round.

use mlx5_hw::{AsyncEvent, Event, Nic};
use std::collections::{HashMap, VecDeque};
use std::fs::File;
use std::io::Write;
use std::sync::{Arc, Mutex, MutexGuard};

/// `enum ib_event_type` (rdma/ib_verbs.h; the same numbers as `enum ibv_event_type`).
pub(crate) mod event_type {
    /// `IB_EVENT_CQ_ERR`.
    pub const CQ_ERR: u32 = 0;
    /// `IB_EVENT_QP_FATAL`.
    pub const QP_FATAL: u32 = 1;
    /// `IB_EVENT_QP_REQ_ERR`.
    pub const QP_REQ_ERR: u32 = 2;
    /// `IB_EVENT_QP_ACCESS_ERR`.
    pub const QP_ACCESS_ERR: u32 = 3;
    /// `IB_EVENT_QP_LAST_WQE_REACHED`.
    pub const QP_LAST_WQE_REACHED: u32 = 16;
}

/// Which table an object is in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Kind {
    /// A CQ (by CQN).
    Cq,
    /// A QP (by QPN).
    Qp,
}

/// An object: its kind, its NIC, its number.
type Key = (Kind, usize, u32);

/// One event waiting to be read.
#[derive(Debug)]
struct Pending {
    /// The object it counts against.
    key: Key,
    /// Whether it is a completion event (else asynchronous).
    completion: bool,
    record: [u8; 16],
    len: usize,
}

/// One event fd's queue: what the program's eventfd counts.
#[derive(Debug)]
pub(crate) struct EventQueue {
    efd: File,
    pending: Mutex<VecDeque<Pending>>,
}

impl EventQueue {
    /// A queue whose events the eventfd `efd` counts.
    pub(crate) fn new(efd: File) -> Arc<EventQueue> {
        Arc::new(EventQueue {
            efd,
            pending: Mutex::new(VecDeque::new()),
        })
    }

    fn lock(&self) -> MutexGuard<'_, VecDeque<Pending>> {
        self.pending.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn push(&self, p: Pending) {
        self.lock().push_back(p);
        // One count per event; the eventfd is in semaphore mode.
        let _ = (&self.efd).write(&1u64.to_ne_bytes());
    }
}

/// Where an object's events go and how many the program has read.
#[derive(Debug)]
struct Sink {
    user_handle: u64,
    /// The context's async queue.
    asynchronous: Arc<EventQueue>,
    comp_read: u32,
    async_read: u32,
}

#[derive(Debug, Default)]
struct Inner {
    sinks: HashMap<Key, Sink>,
    /// Each model completion channel's queue, by (NIC, channel).
    channels: HashMap<(usize, u32), Arc<EventQueue>>,
}

/// Every object that can have events, on every NIC of the fabric.
#[derive(Debug, Default)]
pub(crate) struct Registry {
    inner: Mutex<Inner>,
}

impl Registry {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Object `num` of NIC `nic` reports asynchronous events with `user_handle` to
    /// `asynchronous` (and a CQ its completion events to its channel's queue).
    pub(crate) fn add(
        &self,
        kind: Kind,
        nic: usize,
        num: u32,
        user_handle: u64,
        asynchronous: Arc<EventQueue>,
    ) {
        let sink = Sink {
            user_handle,
            asynchronous,
            comp_read: 0,
            async_read: 0,
        };
        self.lock().sinks.insert((kind, nic, num), sink);
    }

    /// Forget an object and drop its unread events; returns the counts the program has
    /// read (completion, asynchronous) for the destroy response.
    pub(crate) fn remove(&self, kind: Kind, nic: usize, num: u32) -> (u32, u32) {
        let mut g = self.lock();
        let key = (kind, nic, num);
        let Some(sink) = g.sinks.remove(&key) else {
            return (0, 0);
        };
        sink.asynchronous.lock().retain(|p| p.key != key);
        for q in g.channels.values() {
            q.lock().retain(|p| p.key != key);
        }
        (sink.comp_read, sink.async_read)
    }

    /// Model channel `channel` of NIC `nic` queues into `queue`.
    pub(crate) fn add_channel(&self, nic: usize, channel: u32, queue: Arc<EventQueue>) {
        self.lock().channels.insert((nic, channel), queue);
    }

    /// Forget a channel.
    pub(crate) fn remove_channel(&self, nic: usize, channel: u32) {
        self.lock().channels.remove(&(nic, channel));
    }

    /// The next event of `queue` for a read of `room` bytes (`ib_uverbs_event_read`):
    /// the record, counted against its object; `Ok(None)` when the queue is empty;
    /// `Err(EINVAL)` when the record does not fit.
    pub(crate) fn pop(&self, queue: &EventQueue, room: usize) -> Result<Option<Vec<u8>>, i32> {
        let mut g = self.lock();
        let mut q = queue.lock();
        let Some(p) = q.front() else {
            return Ok(None);
        };
        if p.len > room {
            return Err(libc::EINVAL);
        }
        let p = q.pop_front().expect("a front");
        if let Some(s) = g.sinks.get_mut(&p.key) {
            match p.completion {
                true => s.comp_read += 1,
                false => s.async_read += 1,
            }
        }
        Ok(Some(p.record[..p.len].to_vec()))
    }

    /// Deliver what NIC `nic` has queued: completion events of its channels, then its
    /// asynchronous events.
    pub(crate) fn pump(&self, index: usize, nic: &Nic) {
        let g = self.lock();
        for (&(n, channel), queue) in &g.channels {
            if n != index {
                continue;
            }
            while let Ok(Some(Event::Completion { cqn })) = nic.poll_channel(channel) {
                let key = (Kind::Cq, n, cqn);
                if let Some(cq) = g.sinks.get(&key) {
                    let mut record = [0u8; 16];
                    record[..8].copy_from_slice(&cq.user_handle.to_ne_bytes());
                    queue.push(Pending {
                        key,
                        completion: true,
                        record,
                        len: 8,
                    });
                }
            }
        }
        while let Some(ev) = nic.poll_async_event() {
            let (key, kind) = match ev {
                AsyncEvent::CqError { cqn } => ((Kind::Cq, index, cqn), event_type::CQ_ERR),
                AsyncEvent::QpFatal { qpn } => ((Kind::Qp, index, qpn), event_type::QP_FATAL),
                AsyncEvent::QpRequestError { qpn } => {
                    ((Kind::Qp, index, qpn), event_type::QP_REQ_ERR)
                }
                AsyncEvent::QpAccessError { qpn } => {
                    ((Kind::Qp, index, qpn), event_type::QP_ACCESS_ERR)
                }
                AsyncEvent::LastWqeReached { qpn } => {
                    ((Kind::Qp, index, qpn), event_type::QP_LAST_WQE_REACHED)
                }
            };
            let Some(sink) = g.sinks.get(&key) else {
                continue;
            };
            let mut record = [0u8; 16];
            record[..8].copy_from_slice(&sink.user_handle.to_ne_bytes());
            record[8..12].copy_from_slice(&kind.to_ne_bytes());
            sink.asynchronous.push(Pending {
                key,
                completion: false,
                record,
                len: 16,
            });
        }
    }
}
