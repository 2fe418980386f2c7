//! Completion channels: where a CQ's completion events go, with a file descriptor that is
//! readable while events wait.
//!
//! libibverbs ties each CQ to the channel given to `ibv_create_cq` (or none), and the kernel
//! queues every completion event of that CQ on the channel's file (`ib_uverbs_comp_handler`,
//! drivers/infiniband/core/uverbs_main.c), whose `poll` reports `EPOLLIN` while its list is
//! not empty (`ib_uverbs_event_poll`); each read takes one event. The model keeps the list
//! per channel and mirrors its length in an eventfd counter (`EFD_SEMAPHORE`: one read takes
//! one), updated under the fabric lock with the list, so the fd is readable exactly while an
//! event waits. A channel with CQs on it cannot be destroyed (`ibv_create_comp_channel(3)`:
//! destroying fails while CQs are associated with it).

use std::collections::VecDeque;
use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::{FromRawFd, OwnedFd};
use std::sync::Arc;

use crate::types::{Event, HwError};

/// One completion channel of a NIC.
pub(crate) struct Channel {
    /// The events not yet taken, oldest first.
    events: VecDeque<Event>,
    /// The eventfd whose counter is `events.len()`.
    fd: Arc<File>,
    /// CQs delivering their events here.
    pub(crate) refs: u32,
}

impl Channel {
    pub(crate) fn new() -> Result<Channel, HwError> {
        // SAFETY: eventfd(2) takes no pointers.
        let raw = unsafe {
            libc::eventfd(
                0,
                libc::EFD_CLOEXEC | libc::EFD_NONBLOCK | libc::EFD_SEMAPHORE,
            )
        };
        if raw < 0 {
            return Err(HwError::OutOfResources);
        }
        // SAFETY: a new descriptor that nothing else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        Ok(Channel {
            events: VecDeque::new(),
            fd: Arc::new(File::from(fd)),
            refs: 0,
        })
    }

    /// The descriptor a waiter polls.
    pub(crate) fn fd(&self) -> Arc<File> {
        self.fd.clone()
    }

    pub(crate) fn push(&mut self, event: Event) {
        self.events.push_back(event);
        // The counter cannot overflow (it counts queued events); a full one would block,
        // and the fd is non-blocking, so a failure here is impossible in practice and the
        // list stays authoritative either way.
        let _ = (&*self.fd).write(&1u64.to_ne_bytes());
    }

    pub(crate) fn pop(&mut self) -> Option<Event> {
        let event = self.events.pop_front()?;
        let _ = (&*self.fd).read(&mut [0u8; 8]);
        Some(event)
    }
}
