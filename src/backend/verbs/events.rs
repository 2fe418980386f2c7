//! Events on hardware. Completion events: a [`VerbsChannel`] (`ibv_comp_channel`, its fd
//! non-blocking), each event read with `ibv_get_cq_event` and acknowledged at once.
//! Asynchronous events: `ibv_get_async_event` on the context's async fd (made non-blocking
//! when the device is opened), each event acknowledged with `ibv_ack_async_event` once its
//! object's number is read, and its `ibv_event_type` mapped to an [`AsyncEvent`].
//!
//! The kernel's mlx5 driver turns the NIC's EQEs into these types (`mlx5_ib_cq_event`:
//! `MLX5_EVENT_TYPE_CQ_ERROR` → `IBV_EVENT_CQ_ERR`; `mlx5_ib_qp_event`:
//! `WQ_CATAS_ERROR` → `QP_FATAL`, `WQ_INVAL_REQ_ERROR` → `QP_REQ_ERR`, `WQ_ACCESS_ERROR` →
//! `QP_ACCESS_ERR`, `SRQ_LAST_WQE` → `QP_LAST_WQE_REACHED`, `COMM_EST`, `SQ_DRAINED`, path
//! migration), and the port and device events.
//!
//! Objects are named by number: a QP by `qp_num`, a CQ and an SRQ by the `cq_context` /
//! `srq_context` the backend set to its CQN / SRQN at creation. The pointers are valid
//! while the event is unacknowledged (destroying an object waits for its events' acks).

use core::ffi::{c_int, c_void};
use core::ptr::NonNull;
use core::time::Duration;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd};
use std::sync::Arc;
use std::time::Instant;

use crate::backend::ffi::{
    ibv_ack_async_event, ibv_ack_cq_events, ibv_async_event, ibv_async_event_element_t,
    ibv_comp_channel, ibv_cq, ibv_create_comp_channel, ibv_destroy_comp_channel, ibv_event_type,
    ibv_get_async_event, ibv_get_cq_event,
};

use super::{failed, DeviceCtx, Verbs};
use crate::backend::wait_readable;
use crate::error::Error;
use crate::event::AsyncEvent;

/// `struct ibv_async_event` with its type as the plain `unsigned int` C has: rdma-sys
/// declares it as a Rust enum, and a type value newer than its bindings (a newer kernel)
/// must not become an invalid enum value.
#[repr(C)]
struct RawAsyncEvent {
    element: ibv_async_event_element_t,
    event_type: u32,
}

const _: () = {
    assert!(core::mem::size_of::<RawAsyncEvent>() == core::mem::size_of::<ibv_async_event>());
    assert!(core::mem::align_of::<RawAsyncEvent>() == core::mem::align_of::<ibv_async_event>());
};

/// The `ibv_event_type` values, as C has them.
mod ty {
    use super::ibv_event_type as E;
    pub const CQ_ERR: u32 = E::IBV_EVENT_CQ_ERR as u32;
    pub const QP_FATAL: u32 = E::IBV_EVENT_QP_FATAL as u32;
    pub const QP_REQ_ERR: u32 = E::IBV_EVENT_QP_REQ_ERR as u32;
    pub const QP_ACCESS_ERR: u32 = E::IBV_EVENT_QP_ACCESS_ERR as u32;
    pub const COMM_EST: u32 = E::IBV_EVENT_COMM_EST as u32;
    pub const SQ_DRAINED: u32 = E::IBV_EVENT_SQ_DRAINED as u32;
    pub const PATH_MIG: u32 = E::IBV_EVENT_PATH_MIG as u32;
    pub const PATH_MIG_ERR: u32 = E::IBV_EVENT_PATH_MIG_ERR as u32;
    pub const DEVICE_FATAL: u32 = E::IBV_EVENT_DEVICE_FATAL as u32;
    pub const PORT_ACTIVE: u32 = E::IBV_EVENT_PORT_ACTIVE as u32;
    pub const PORT_ERR: u32 = E::IBV_EVENT_PORT_ERR as u32;
    pub const LID_CHANGE: u32 = E::IBV_EVENT_LID_CHANGE as u32;
    pub const PKEY_CHANGE: u32 = E::IBV_EVENT_PKEY_CHANGE as u32;
    pub const SM_CHANGE: u32 = E::IBV_EVENT_SM_CHANGE as u32;
    pub const SRQ_ERR: u32 = E::IBV_EVENT_SRQ_ERR as u32;
    pub const SRQ_LIMIT_REACHED: u32 = E::IBV_EVENT_SRQ_LIMIT_REACHED as u32;
    pub const QP_LAST_WQE_REACHED: u32 = E::IBV_EVENT_QP_LAST_WQE_REACHED as u32;
    pub const CLIENT_REREGISTER: u32 = E::IBV_EVENT_CLIENT_REREGISTER as u32;
    pub const GID_CHANGE: u32 = E::IBV_EVENT_GID_CHANGE as u32;
}

/// Which member of the event's union names its object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Element {
    Cq,
    Qp,
    Srq,
    Port,
    Device,
}

/// The object an event type names (as `ibv_get_async_event(3)` lists them).
fn element(event_type: u32) -> Element {
    match event_type {
        ty::CQ_ERR => Element::Cq,
        ty::QP_FATAL
        | ty::QP_REQ_ERR
        | ty::QP_ACCESS_ERR
        | ty::COMM_EST
        | ty::SQ_DRAINED
        | ty::PATH_MIG
        | ty::PATH_MIG_ERR
        | ty::QP_LAST_WQE_REACHED => Element::Qp,
        ty::SRQ_ERR | ty::SRQ_LIMIT_REACHED => Element::Srq,
        ty::PORT_ACTIVE
        | ty::PORT_ERR
        | ty::LID_CHANGE
        | ty::PKEY_CHANGE
        | ty::SM_CHANGE
        | ty::CLIENT_REREGISTER
        | ty::GID_CHANGE => Element::Port,
        _ => Element::Device,
    }
}

/// The event of type `event_type` about object number `n` (a QPN, CQN, SRQN or port).
fn typed(event_type: u32, n: u32) -> AsyncEvent {
    let port = u8::try_from(n).unwrap_or(u8::MAX);
    match event_type {
        ty::CQ_ERR => AsyncEvent::CqError { cqn: n },
        ty::QP_FATAL => AsyncEvent::QpFatal { qpn: n },
        ty::QP_REQ_ERR => AsyncEvent::QpRequestError { qpn: n },
        ty::QP_ACCESS_ERR => AsyncEvent::QpAccessError { qpn: n },
        ty::COMM_EST => AsyncEvent::CommEstablished { qpn: n },
        ty::SQ_DRAINED => AsyncEvent::SqDrained { qpn: n },
        ty::PATH_MIG => AsyncEvent::PathMigrated { qpn: n },
        ty::PATH_MIG_ERR => AsyncEvent::PathMigrationError { qpn: n },
        ty::QP_LAST_WQE_REACHED => AsyncEvent::LastWqeReached { qpn: n },
        ty::SRQ_ERR => AsyncEvent::SrqError { srqn: n },
        ty::SRQ_LIMIT_REACHED => AsyncEvent::SrqLimitReached { srqn: n },
        ty::PORT_ACTIVE => AsyncEvent::PortActive { port },
        ty::PORT_ERR => AsyncEvent::PortError { port },
        ty::LID_CHANGE => AsyncEvent::LidChange { port },
        ty::PKEY_CHANGE => AsyncEvent::PkeyChange { port },
        ty::SM_CHANGE => AsyncEvent::SmChange { port },
        ty::CLIENT_REREGISTER => AsyncEvent::ClientReregister { port },
        ty::GID_CHANGE => AsyncEvent::GidChange { port },
        ty::DEVICE_FATAL => AsyncEvent::DeviceFatal,
        _ => AsyncEvent::Other { event_type },
    }
}

/// Makes `fd` non-blocking, so a read of an empty event queue fails with `EAGAIN` instead of
/// blocking (a wait blocks in poll(2), with its timeout).
pub(super) fn set_nonblocking(fd: c_int) {
    // SAFETY: fcntl on a descriptor the caller owns; no pointers.
    unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFL);
        libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK);
    }
}

/// A completion channel (`ibv_comp_channel`) with a non-blocking fd.
#[derive(Debug)]
pub struct VerbsChannel {
    channel: NonNull<ibv_comp_channel>,
    _dev: Arc<DeviceCtx>,
}

// SAFETY: libibverbs allows a channel to be used from any thread; the handle only passes the
// pointer to slow-path calls.
unsafe impl Send for VerbsChannel {}
// SAFETY: as above.
unsafe impl Sync for VerbsChannel {}

impl VerbsChannel {
    pub(super) fn new(dev: &Arc<DeviceCtx>) -> Result<VerbsChannel, Error> {
        // SAFETY: an open context; the channel is destroyed in `drop`, before the context.
        let channel = unsafe { ibv_create_comp_channel(dev.ctx.as_ptr()) };
        let channel =
            NonNull::new(channel).ok_or_else(|| failed("create completion channel", -1))?;
        let channel = VerbsChannel {
            channel,
            _dev: dev.clone(),
        };
        set_nonblocking(channel.as_fd().as_raw_fd());
        Ok(channel)
    }

    /// The raw channel, for `ibv_create_cq`.
    pub(super) fn as_ptr(&self) -> *mut ibv_comp_channel {
        self.channel.as_ptr()
    }

    /// The next completion event (its CQ's context, which the backend sets to the CQN),
    /// acknowledged; `None` if none is pending.
    pub(super) fn next(&self) -> Result<Option<u32>, Error> {
        let mut cq: *mut ibv_cq = core::ptr::null_mut();
        let mut cq_context: *mut c_void = core::ptr::null_mut();
        // SAFETY: the channel is live; the out-pointers are valid.
        let rc = unsafe { ibv_get_cq_event(self.channel.as_ptr(), &mut cq, &mut cq_context) };
        if rc != 0 {
            nothing_pending("read a completion event")?;
            return Ok(None);
        }
        // SAFETY: `cq` is the CQ the event is for; one event is acknowledged once. Its
        // destruction waits for this acknowledgement, so it is still alive.
        unsafe { ibv_ack_cq_events(cq, 1) };
        Ok(Some(cq_context as usize as u32))
    }
}

impl AsFd for VerbsChannel {
    fn as_fd(&self) -> BorrowedFd<'_> {
        // SAFETY: the channel's fd stays open until `ibv_destroy_comp_channel` in `drop`,
        // which the borrow of `self` outlives.
        unsafe { BorrowedFd::borrow_raw((*self.channel.as_ptr()).fd) }
    }
}

impl Drop for VerbsChannel {
    fn drop(&mut self) {
        // SAFETY: created in `new`, destroyed once; every CQ on it held this handle and is
        // destroyed. A failure cannot be reported from `Drop`; it is ignored.
        unsafe { ibv_destroy_comp_channel(self.channel.as_ptr()) };
    }
}

/// After a failed read of a non-blocking event fd: `Ok` if nothing was pending (another
/// thread may have taken what poll(2) saw), the error otherwise.
pub(super) fn nothing_pending(operation: &'static str) -> Result<(), Error> {
    let err = std::io::Error::last_os_error();
    if err.kind() == std::io::ErrorKind::WouldBlock {
        Ok(())
    } else {
        Err(Error::Device {
            operation,
            reason: err.to_string(),
        })
    }
}

impl Verbs {
    /// The next asynchronous event, acknowledged; `None` if none is pending (the async fd
    /// is non-blocking).
    pub(super) fn next_async_event(&self) -> Result<Option<AsyncEvent>, Error> {
        // SAFETY: plain C data; zero is valid for every field.
        let mut raw: RawAsyncEvent = unsafe { core::mem::zeroed() };
        let event = (&mut raw as *mut RawAsyncEvent).cast::<ibv_async_event>();
        // SAFETY: an open context; `event` points to storage of the struct's size and
        // alignment, whose type field is read back only as the `u32` C writes.
        let rc = unsafe { ibv_get_async_event(self.dev.ctx.as_ptr(), event) };
        if rc != 0 {
            nothing_pending("read an asynchronous event")?;
            return Ok(None);
        }
        let kind = element(raw.event_type);
        // SAFETY: `ibv_get_async_event(3)` fills the union member `kind` names; the object
        // it points to lives until the event is acknowledged below.
        let n = unsafe {
            match kind {
                Element::Cq => (*raw.element.cq).cq_context as usize as u32,
                Element::Qp => (*raw.element.qp).qp_num,
                Element::Srq => (*raw.element.srq).srq_context as usize as u32,
                Element::Port => raw.element.port_num as u32,
                Element::Device => 0,
            }
        };
        // SAFETY: the event just read, acknowledged once.
        unsafe { ibv_ack_async_event(event) };
        Ok(Some(typed(raw.event_type, n)))
    }

    /// Waits up to `timeout` for the next asynchronous event.
    pub(super) fn wait_next_async_event(
        &self,
        timeout: Duration,
    ) -> Result<Option<AsyncEvent>, Error> {
        let deadline = Instant::now() + timeout;
        // SAFETY: the context lives as long as `self.dev`.
        let fd = unsafe { (*self.dev.ctx.as_ptr()).async_fd };
        loop {
            if let Some(event) = self.next_async_event()? {
                return Ok(Some(event));
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Ok(None);
            }
            // Readable or not, the next read says (another thread may have taken it).
            // SAFETY: the async fd stays open while the context (`self.dev`) lives.
            let fd = unsafe { BorrowedFd::borrow_raw(fd) };
            wait_readable(fd, left).map_err(|e| Error::Device {
                operation: "wait for an asynchronous event",
                reason: e.to_string(),
            })?;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_event_type_names_its_object() {
        assert_eq!(element(ty::CQ_ERR), Element::Cq);
        assert_eq!(typed(ty::CQ_ERR, 0x41), AsyncEvent::CqError { cqn: 0x41 });
        for (t, want) in [
            (ty::QP_FATAL, AsyncEvent::QpFatal { qpn: 7 }),
            (ty::QP_REQ_ERR, AsyncEvent::QpRequestError { qpn: 7 }),
            (ty::QP_ACCESS_ERR, AsyncEvent::QpAccessError { qpn: 7 }),
            (ty::COMM_EST, AsyncEvent::CommEstablished { qpn: 7 }),
            (ty::SQ_DRAINED, AsyncEvent::SqDrained { qpn: 7 }),
            (ty::PATH_MIG, AsyncEvent::PathMigrated { qpn: 7 }),
            (ty::PATH_MIG_ERR, AsyncEvent::PathMigrationError { qpn: 7 }),
            (
                ty::QP_LAST_WQE_REACHED,
                AsyncEvent::LastWqeReached { qpn: 7 },
            ),
        ] {
            assert_eq!((element(t), typed(t, 7)), (Element::Qp, want));
        }
        for (t, want) in [
            (ty::SRQ_ERR, AsyncEvent::SrqError { srqn: 7 }),
            (
                ty::SRQ_LIMIT_REACHED,
                AsyncEvent::SrqLimitReached { srqn: 7 },
            ),
        ] {
            assert_eq!((element(t), typed(t, 7)), (Element::Srq, want));
        }
        for (t, want) in [
            (ty::PORT_ACTIVE, AsyncEvent::PortActive { port: 1 }),
            (ty::PORT_ERR, AsyncEvent::PortError { port: 1 }),
            (ty::LID_CHANGE, AsyncEvent::LidChange { port: 1 }),
            (ty::PKEY_CHANGE, AsyncEvent::PkeyChange { port: 1 }),
            (ty::SM_CHANGE, AsyncEvent::SmChange { port: 1 }),
            (
                ty::CLIENT_REREGISTER,
                AsyncEvent::ClientReregister { port: 1 },
            ),
            (ty::GID_CHANGE, AsyncEvent::GidChange { port: 1 }),
        ] {
            assert_eq!((element(t), typed(t, 1)), (Element::Port, want));
        }
        assert_eq!(element(ty::DEVICE_FATAL), Element::Device);
        assert_eq!(typed(ty::DEVICE_FATAL, 0), AsyncEvent::DeviceFatal);
        // IBV_EVENT_WQ_FATAL (19) and anything newer: kept, with the raw type.
        assert_eq!(element(19), Element::Device);
        assert_eq!(typed(19, 0), AsyncEvent::Other { event_type: 19 });
        assert_eq!(typed(99, 0), AsyncEvent::Other { event_type: 99 });
    }
}
