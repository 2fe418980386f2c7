//! rdma_cm connections for QPs the driver created (librdmacm, facts from its man pages
//! `rdma_create_id(3)`, `rdma_resolve_addr(3)`, `rdma_resolve_route(3)`, `rdma_connect(3)`,
//! `rdma_accept(3)`, `rdma_init_qp_attr(3)`, `rdma_establish(3)`, `rdma_get_cm_event(3)`).
//!
//! The QP is never created on the `rdma_cm_id` (`id->qp` stays NULL): the connect and accept
//! calls name it by `rdma_conn_param.qp_num`, and each transition takes the attributes
//! `rdma_init_qp_attr` returns (port, P_Key index, the resolved path, MTU, the peer's QPN,
//! the negotiated READ / atomic depths, timeout and retries) applied with `ibv_modify_qp` by
//! the driver, which keeps owning the QP and its rings. Two fields are the driver's own: the
//! access rights at INIT (rdma_cm grants REMOTE_WRITE, plus READ and atomics only with
//! responder resources) and the PSNs, which the [`CmPrivateData`] of each side carries (the
//! driver numbers its packets and continues its sequence across resets).
//!
//! - Active side ([`connect_qp`]): resolve the address and the route, INIT, `rdma_connect`,
//!   wait for `RDMA_CM_EVENT_CONNECT_RESPONSE` (the event a QP-less id gets instead of
//!   ESTABLISHED), RTR, RTS, `rdma_establish`.
//! - Passive side ([`CmListener`], [`CmRequest::accept_qp`]): a connect request, INIT,
//!   RTR, RTS (as librdmacm's `rdma_accept` does for its own QPs), `rdma_accept`, wait for
//!   ESTABLISHED.
//! - Exchange only ([`exchange`], [`CmRequest::accept`]): the same handshake carrying the
//!   private data, the QPs left to the caller (perftest's `-z`).
//!
//! Events are read from a non-blocking event channel with a timeout; events of other ids
//! on the same channel wait in a queue for their turn.
//!
//! This module takes plain descriptions only (addresses, QP numbers, records, the
//! transition asked for); what reads and moves a [`Qp`](crate::Qp) (the records of
//! [`connect_qp`] and [`CmRequest::accept_qp`], each transition applied) is
//! [`crate::rdma_cm`], above the control objects. Every failure is an
//! [`Error::RdmaCm`] naming the event ([`CmError`]) or an [`Error::Device`] naming the call.

use core::ffi::{c_int, c_void};
use core::ptr::NonNull;
use std::collections::VecDeque;
use std::net::SocketAddr;
use std::os::fd::BorrowedFd;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::backend::ffi::{
    ibv_get_device_name, ibv_qp_attr, ibv_qp_attr_mask as m, ibv_qp_state, rdma_accept,
    rdma_bind_addr, rdma_cm_id, rdma_conn_param, rdma_connect, rdma_create_event_channel,
    rdma_create_id, rdma_destroy_event_channel, rdma_destroy_id, rdma_disconnect, rdma_establish,
    rdma_event_channel, rdma_init_qp_attr, rdma_listen, rdma_port_space, rdma_reject,
    rdma_resolve_addr, rdma_resolve_route, rdma_set_option,
};

use super::{errno, events};
use crate::backend::rdmacm::{
    rdma_ack_cm_event, rdma_get_cm_event, RDMA_OPTION_ID, RDMA_OPTION_ID_ACK_TIMEOUT,
    RDMA_OPTION_ID_TOS,
};
use crate::cm::{CmError, CmEvent, CmPrivateData};
use crate::error::Error;
use crate::types::{Access, QpState};

/// Kept at its old path: the driver half lives above the control objects.
pub use crate::rdma_cm::connect_qp;

/// How to connect.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CmOptions {
    /// How long address resolution, route resolution and each awaited event may take
    /// (perftest gives the resolutions 2000 ms).
    pub timeout: Duration,
    /// Type of service (`RDMA_OPTION_ID_TOS`); `None` leaves the CM's default.
    pub tos: Option<u8>,
    /// Local ACK timeout exponent (`RDMA_OPTION_ID_ACK_TIMEOUT`); `None` leaves the CM's.
    pub ack_timeout: Option<u8>,
    /// Transport retries (`rdma_conn_param.retry_count`, 3 bits; perftest's
    /// `--retry_count`, default 7).
    pub retry_count: u8,
    /// RNR retries (`rdma_conn_param.rnr_retry_count`, 3 bits; 7 is infinite).
    pub rnr_retry_count: u8,
    /// READs and atomics outstanding each way (`responder_resources` and
    /// `initiator_depth`, each capped at the device's limit; perftest's `-o`).
    pub rd_atomic: u8,
    /// The rights the QP grants the peer at INIT; `None`: REMOTE_WRITE and READ, and
    /// atomics when the device has them (as [`crate::ConnectOptions`]).
    pub access: Option<Access>,
    /// At most this path MTU in bytes (the CM's is the port's active MTU); `None`: the CM's.
    pub path_mtu: Option<u32>,
}

impl Default for CmOptions {
    fn default() -> Self {
        CmOptions {
            timeout: Duration::from_millis(2000),
            tos: None,
            ack_timeout: None,
            retry_count: 7,
            rnr_retry_count: 7,
            rd_atomic: 16,
            access: None,
            path_mtu: None,
        }
    }
}

impl CmOptions {
    pub(crate) fn check(&self) -> Result<(), Error> {
        if self.retry_count > 7 || self.rnr_retry_count > 7 {
            return Err(Error::InvalidArgument(
                "rdma_cm retry counts are 3 bits (0..=7)",
            ));
        }
        if self.ack_timeout.is_some_and(|t| t > 31) {
            return Err(Error::InvalidArgument("the ACK timeout exponent is 5 bits"));
        }
        Ok(())
    }

    fn timeout_ms(&self) -> c_int {
        self.timeout.as_millis().clamp(1, c_int::MAX as u128) as c_int
    }
}

/// One transition of a connection and what the driver sets itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Step {
    /// RESET → INIT granting `access`.
    Init { access: Access },
    /// INIT → RTR expecting `rq_psn` (the peer's), the path MTU at most `max_mtu`, at most
    /// `max_dest_rd_atomic` incoming READs and atomics (the device's `max_qp_rd_atom`).
    Rtr {
        rq_psn: u32,
        max_mtu: Option<u32>,
        max_dest_rd_atomic: u8,
    },
    /// RTR → RTS sending from `sq_psn` (ours), at most `max_rd_atomic` outstanding READs
    /// and atomics (the device's `max_qp_init_rd_atom`).
    Rts { sq_psn: u32, max_rd_atomic: u8 },
}

impl Step {
    pub(crate) fn state(self) -> (ibv_qp_state::Type, QpState) {
        match self {
            Step::Init { .. } => (ibv_qp_state::IBV_QPS_INIT, QpState::Init),
            Step::Rtr { .. } => (ibv_qp_state::IBV_QPS_RTR, QpState::Rtr),
            Step::Rts { .. } => (ibv_qp_state::IBV_QPS_RTS, QpState::Rts),
        }
    }

    /// The attributes the IB core requires of this transition of an RC QP (its
    /// `qp_state_table`), by name.
    fn required(self) -> &'static [(m, &'static str)] {
        match self {
            Step::Init { .. } => &[
                (m::IBV_QP_STATE, "IBV_QP_STATE"),
                (m::IBV_QP_PKEY_INDEX, "IBV_QP_PKEY_INDEX"),
                (m::IBV_QP_PORT, "IBV_QP_PORT"),
                (m::IBV_QP_ACCESS_FLAGS, "IBV_QP_ACCESS_FLAGS"),
            ],
            Step::Rtr { .. } => &[
                (m::IBV_QP_STATE, "IBV_QP_STATE"),
                (m::IBV_QP_AV, "IBV_QP_AV"),
                (m::IBV_QP_PATH_MTU, "IBV_QP_PATH_MTU"),
                (m::IBV_QP_DEST_QPN, "IBV_QP_DEST_QPN"),
                (m::IBV_QP_RQ_PSN, "IBV_QP_RQ_PSN"),
                (m::IBV_QP_MAX_DEST_RD_ATOMIC, "IBV_QP_MAX_DEST_RD_ATOMIC"),
                (m::IBV_QP_MIN_RNR_TIMER, "IBV_QP_MIN_RNR_TIMER"),
            ],
            Step::Rts { .. } => &[
                (m::IBV_QP_STATE, "IBV_QP_STATE"),
                (m::IBV_QP_TIMEOUT, "IBV_QP_TIMEOUT"),
                (m::IBV_QP_RETRY_CNT, "IBV_QP_RETRY_CNT"),
                (m::IBV_QP_RNR_RETRY, "IBV_QP_RNR_RETRY"),
                (m::IBV_QP_SQ_PSN, "IBV_QP_SQ_PSN"),
                (m::IBV_QP_MAX_QP_RD_ATOMIC, "IBV_QP_MAX_QP_RD_ATOMIC"),
            ],
        }
    }
}

/// The attributes to apply for `step`, from what `rdma_init_qp_attr` returned (`attr`,
/// `mask`): checked to be the transition asked for with every attribute it needs, then
/// the driver's own fields set (INIT's access, the PSNs, a lower path MTU).
pub(crate) fn translate(
    step: Step,
    mut attr: ibv_qp_attr,
    mask: c_int,
) -> Result<(ibv_qp_attr, m), Error> {
    let (state, _) = step.state();
    if attr.qp_state != state {
        return Err(Error::Device {
            operation: "rdma_init_qp_attr",
            reason: format!("asked for QP state {state}, got {}", attr.qp_state),
        });
    }
    let mask = m(mask as u32);
    let missing: Vec<&str> = step
        .required()
        .iter()
        .filter(|(bit, _)| mask.0 & bit.0 == 0)
        .map(|(_, name)| *name)
        .collect();
    if !missing.is_empty() {
        return Err(Error::Device {
            operation: "rdma_init_qp_attr",
            reason: format!("the attributes lack {}", missing.join(", ")),
        });
    }
    match step {
        Step::Init { access } => attr.qp_access_flags = access.0,
        // The depths the CM negotiated may exceed this device's on mixed devices (the
        // passive side gets the REQ's responder resources as its `max_rd_atomic`), which
        // mlx5's modify_qp refuses with EINVAL: at most the local caps.
        Step::Rtr {
            rq_psn,
            max_mtu,
            max_dest_rd_atomic,
        } => {
            attr.rq_psn = rq_psn;
            if let Some(cap) = max_mtu {
                let cap = super::attr::ibv_mtu_of(cap)?;
                attr.path_mtu = attr.path_mtu.min(cap);
            }
            attr.max_dest_rd_atomic = attr.max_dest_rd_atomic.min(max_dest_rd_atomic);
        }
        Step::Rts {
            sq_psn,
            max_rd_atomic,
        } => {
            attr.sq_psn = sq_psn;
            attr.max_rd_atomic = attr.max_rd_atomic.min(max_rd_atomic);
        }
    }
    Ok((attr, mask))
}

/// A copy of one event, acknowledged at once.
#[derive(Debug)]
struct Event {
    id: *mut rdma_cm_id,
    listen_id: *mut rdma_cm_id,
    raw: u32,
    status: i32,
    private: Vec<u8>,
}

/// An event channel (its fd non-blocking) and the events read for other ids than the one
/// awaited.
#[derive(Debug)]
struct Channel {
    ch: NonNull<rdma_event_channel>,
    queued: Mutex<VecDeque<Event>>,
}

// SAFETY: librdmacm's calls on a channel are thread-safe; the queue is behind a lock and the
// ids in it are only compared, never dereferenced.
unsafe impl Send for Channel {}
// SAFETY: as above.
unsafe impl Sync for Channel {}

impl Drop for Channel {
    fn drop(&mut self) {
        // SAFETY: every id on the channel held it (`Id::channel`) and is destroyed.
        unsafe { rdma_destroy_event_channel(self.ch.as_ptr()) };
    }
}

impl Channel {
    fn new() -> Result<Arc<Channel>, Error> {
        // SAFETY: no arguments; NULL on failure.
        let ch =
            NonNull::new(unsafe { rdma_create_event_channel() }).ok_or_else(|| Error::Device {
                operation: "rdma_create_event_channel",
                reason: format!("{} (is the rdma_ucm module loaded?)", errno(-1)),
            })?;
        // SAFETY: the channel is live; its fd is the channel's.
        events::set_nonblocking(unsafe { (*ch.as_ptr()).fd });
        Ok(Arc::new(Channel {
            ch,
            queued: Mutex::new(VecDeque::new()),
        }))
    }

    /// Reads one event if one is there.
    fn read(&self) -> Result<Option<Event>, Error> {
        let mut raw: *mut crate::backend::rdmacm::rdma_cm_event = core::ptr::null_mut();
        // SAFETY: a live channel and a valid out-pointer.
        let rc = unsafe { rdma_get_cm_event(self.ch.as_ptr(), &mut raw) };
        if rc != 0 {
            let err = errno(-1);
            if err.kind() == std::io::ErrorKind::WouldBlock {
                return Ok(None);
            }
            return Err(super::failed_with("rdma_get_cm_event", err, ""));
        }
        // SAFETY: librdmacm returned a valid event, which stays valid until acknowledged
        // below; its private data (connection events only) is `private_data_len` bytes.
        let event = unsafe {
            let e = &*raw;
            let conn = e.param.conn;
            let private = if conn.private_data.is_null() || conn.private_data_len == 0 {
                Vec::new()
            } else {
                core::slice::from_raw_parts(
                    conn.private_data.cast::<u8>(),
                    usize::from(conn.private_data_len),
                )
                .to_vec()
            };
            Event {
                id: e.id,
                listen_id: e.listen_id,
                raw: e.event,
                status: e.status,
                private,
            }
        };
        // SAFETY: the event read above, acknowledged once; nothing refers to it after.
        unsafe { rdma_ack_cm_event(raw) };
        Ok(Some(event))
    }

    /// The next event `matches` takes, within `timeout` (`None`: no limit), as `expected`
    /// or the failure it means.
    fn wait(
        &self,
        matches: impl Fn(&Event) -> bool,
        expected: CmEvent,
        timeout: Option<Duration>,
    ) -> Result<Event, Error> {
        let start = Instant::now();
        loop {
            let found = {
                let mut q = self.queued.lock().unwrap_or_else(|e| e.into_inner());
                q.iter().position(&matches).and_then(|i| q.remove(i))
            };
            let event = match found {
                Some(e) => e,
                None => match self.read()? {
                    Some(e) if matches(&e) => e,
                    Some(e) => {
                        let mut q = self.queued.lock().unwrap_or_else(|e| e.into_inner());
                        q.push_back(e);
                        continue;
                    }
                    None => {
                        let left = match timeout {
                            Some(t) => match t.checked_sub(start.elapsed()) {
                                Some(left) => left,
                                None => {
                                    return Err(CmError::Timeout {
                                        expected,
                                        waited_ms: t.as_millis() as u64,
                                    }
                                    .into())
                                }
                            },
                            None => Duration::from_secs(3600),
                        };
                        // SAFETY: the channel's fd, open while `self` lives.
                        let fd = unsafe { BorrowedFd::borrow_raw((*self.ch.as_ptr()).fd) };
                        crate::backend::wait_readable(fd, left)
                            .map_err(|e| super::failed_with("wait for an rdma_cm event", e, ""))?;
                        continue;
                    }
                },
            };
            let got = CmEvent::from_raw(event.raw).ok_or_else(|| Error::Device {
                operation: "rdma_get_cm_event",
                reason: format!("unknown event {}", event.raw),
            })?;
            return match CmError::of_event(expected, got, event.status) {
                None => Ok(event),
                Some(e) => Err(e.into()),
            };
        }
    }
}

/// An `rdma_cm_id`, destroyed on drop (before its channel).
#[derive(Debug)]
pub(crate) struct Id {
    id: NonNull<rdma_cm_id>,
    channel: Arc<Channel>,
}

// SAFETY: librdmacm's calls on an id may come from any thread; the handle only passes the
// pointer to them.
unsafe impl Send for Id {}
// SAFETY: as above.
unsafe impl Sync for Id {}

impl Drop for Id {
    fn drop(&mut self) {
        // SAFETY: a live id, destroyed once; its events were all acknowledged when read.
        // A failure cannot be reported from `Drop`; it is ignored.
        unsafe { rdma_destroy_id(self.id.as_ptr()) };
    }
}

/// A call's return code as a result (`-1` and errno on failure).
fn check(operation: &'static str, rc: c_int) -> Result<(), Error> {
    match rc {
        0 => Ok(()),
        rc => Err(super::failed_with(operation, errno(rc), "")),
    }
}

/// `addr` as a `sockaddr_storage` and its length.
fn sockaddr(addr: &SocketAddr) -> libc::sockaddr_storage {
    // SAFETY: plain C data; zero is valid.
    let mut ss: libc::sockaddr_storage = unsafe { core::mem::zeroed() };
    match addr {
        SocketAddr::V4(a) => {
            // SAFETY: `sockaddr_storage` is large and aligned enough for any address.
            let sin = unsafe { &mut *(&mut ss as *mut _ as *mut libc::sockaddr_in) };
            sin.sin_family = libc::AF_INET as libc::sa_family_t;
            sin.sin_port = a.port().to_be();
            sin.sin_addr.s_addr = u32::from_ne_bytes(a.ip().octets());
        }
        SocketAddr::V6(a) => {
            // SAFETY: as above.
            let sin6 = unsafe { &mut *(&mut ss as *mut _ as *mut libc::sockaddr_in6) };
            sin6.sin6_family = libc::AF_INET6 as libc::sa_family_t;
            sin6.sin6_port = a.port().to_be();
            sin6.sin6_addr.s6_addr = a.ip().octets();
            sin6.sin6_flowinfo = a.flowinfo();
            sin6.sin6_scope_id = a.scope_id();
        }
    }
    ss
}

impl Id {
    fn new(channel: Arc<Channel>) -> Result<Id, Error> {
        let mut id: *mut rdma_cm_id = core::ptr::null_mut();
        // SAFETY: a live channel and a valid out-pointer; no context.
        let rc = unsafe {
            rdma_create_id(
                channel.ch.as_ptr(),
                &mut id,
                core::ptr::null_mut(),
                rdma_port_space::RDMA_PS_TCP,
            )
        };
        check("rdma_create_id", rc)?;
        let id = NonNull::new(id).ok_or_else(|| Error::Device {
            operation: "rdma_create_id",
            reason: "no id returned".into(),
        })?;
        Ok(Id { id, channel })
    }

    /// The id of a connect request on a listener's channel.
    fn adopt(id: *mut rdma_cm_id, channel: Arc<Channel>) -> Result<Id, Error> {
        let id = NonNull::new(id).ok_or_else(|| Error::Device {
            operation: "rdma_get_cm_event",
            reason: "a connect request without an id".into(),
        })?;
        Ok(Id { id, channel })
    }

    fn set_u8(&self, name: c_int, what: &'static str, value: u8) -> Result<(), Error> {
        let mut v = value;
        // SAFETY: a live id and a one-byte option value, as the header types both options.
        let rc = unsafe {
            rdma_set_option(
                self.id.as_ptr(),
                RDMA_OPTION_ID,
                name,
                (&mut v as *mut u8).cast::<c_void>(),
                1,
            )
        };
        check(what, rc)
    }

    /// Waits for `expected` on this id.
    fn wait(&self, expected: CmEvent, timeout: Option<Duration>) -> Result<Event, Error> {
        let me = self.id.as_ptr();
        self.channel.wait(|e| e.id == me, expected, timeout)
    }

    /// The device and port rdma_cm bound the id to, as `mlx5_0:1`.
    fn device_port(&self) -> String {
        // SAFETY: a live id; after address resolution (or on a connect request) `verbs`
        // is librdmacm's open context of the device and `port_num` the port.
        unsafe {
            let id = &*self.id.as_ptr();
            let name = if id.verbs.is_null() {
                "no device".to_string()
            } else {
                let n = ibv_get_device_name((*id.verbs).device);
                if n.is_null() {
                    "an unnamed device".to_string()
                } else {
                    std::ffi::CStr::from_ptr(n).to_string_lossy().into_owned()
                }
            };
            format!("{name}:{}", id.port_num)
        }
    }

    /// Refused unless rdma_cm chose `device`, `port` (where the QP is).
    pub(crate) fn same_device(&self, device: &str, port: u8) -> Result<(), Error> {
        let cm = self.device_port();
        let qp = format!("{device}:{port}");
        if cm == qp {
            Ok(())
        } else {
            Err(CmError::WrongDevice { cm, qp }.into())
        }
    }

    /// `rdma_init_qp_attr` for `step`, translated.
    pub(crate) fn qp_attr(&self, step: Step) -> Result<(ibv_qp_attr, m), Error> {
        // SAFETY: plain C data; zero is valid.
        let mut attr: ibv_qp_attr = unsafe { core::mem::zeroed() };
        attr.qp_state = step.state().0;
        let mut mask: c_int = 0;
        // SAFETY: a live, resolved id and valid out-pointers.
        let rc = unsafe { rdma_init_qp_attr(self.id.as_ptr(), &mut attr, &mut mask) };
        check("rdma_init_qp_attr", rc)?;
        translate(step, attr, mask)
    }

    /// `rdma_connect` for `qpn` carrying `mine`, then the connect response (the event a
    /// QP-less id gets instead of ESTABLISHED): the peer's record. `depths` as in
    /// [`Id::conn_param`].
    pub(crate) fn request(
        &self,
        qpn: u32,
        mine: &CmPrivateData,
        options: &CmOptions,
        depths: (u8, u8),
    ) -> Result<CmPrivateData, Error> {
        let bytes = mine.encode();
        let mut param = Id::conn_param(qpn, &bytes, options, depths);
        // SAFETY: a live, routed id; `param` and the private data it points to outlive the
        // call (librdmacm copies them).
        check("rdma_connect", unsafe {
            rdma_connect(self.id.as_ptr(), &mut param)
        })?;
        let response = self.wait(CmEvent::ConnectResponse, Some(options.timeout * 4))?;
        Ok(CmPrivateData::decode(&response.private)?)
    }

    /// `rdma_establish`, once the connect response came (and a QP moved by the driver is
    /// in RTS).
    pub(crate) fn establish(&self) -> Result<(), Error> {
        // SAFETY: a live id whose connect response came.
        check("rdma_establish", unsafe {
            rdma_establish(self.id.as_ptr())
        })
    }

    /// `rdma_conn_param` for `qpn` carrying `private`.
    fn conn_param(
        qpn: u32,
        private: &[u8],
        options: &CmOptions,
        (responder_resources, initiator_depth): (u8, u8),
    ) -> rdma_conn_param {
        // SAFETY: plain C data; zero is valid.
        let mut p: rdma_conn_param = unsafe { core::mem::zeroed() };
        p.private_data = private.as_ptr().cast();
        p.private_data_len = private.len() as u8;
        p.responder_resources = responder_resources;
        p.initiator_depth = initiator_depth;
        p.retry_count = options.retry_count;
        p.rnr_retry_count = options.rnr_retry_count;
        p.qp_num = qpn;
        p
    }
}

/// `rdma_conn_param`'s `responder_resources` and `initiator_depth` for a QP on a device
/// whose `max_qp_rd_atom` and `max_qp_init_rd_atom` are `limits` (`None`: no QP is moved,
/// nothing is negotiated): `rd_atomic` capped at each, which librdmacm's
/// `ucma_valid_param` checks them against (EINVAL above).
pub(crate) fn depths(rd_atomic: u8, limits: Option<(u8, u8)>) -> (u8, u8) {
    match limits {
        Some((responder, initiator)) => (rd_atomic.min(responder), rd_atomic.min(initiator)),
        None => (0, 0),
    }
}

/// A connection: its id (disconnected and destroyed on drop) and the peer's record.
#[derive(Debug)]
pub struct CmConnection {
    pub(crate) id: Id,
    pub(crate) peer: CmPrivateData,
}

impl CmConnection {
    /// What the peer sent in its private data.
    pub fn peer(&self) -> &CmPrivateData {
        &self.peer
    }
}

impl Drop for CmConnection {
    fn drop(&mut self) {
        // SAFETY: a live, connected id; the QP is the driver's, so the disconnect only
        // sends the DREQ. A failure (the peer went first) is ignored.
        unsafe { rdma_disconnect(self.id.id.as_ptr()) };
    }
}

/// A resolved id: address and route to `to`, with the TOS and ACK timeout of `options`.
pub(crate) fn resolve(to: &SocketAddr, options: &CmOptions) -> Result<Id, Error> {
    options.check()?;
    let id = Id::new(Channel::new()?)?;
    if let Some(tos) = options.tos {
        id.set_u8(
            RDMA_OPTION_ID_TOS,
            "rdma_set_option(RDMA_OPTION_ID_TOS)",
            tos,
        )?;
    }
    let mut dst = sockaddr(to);
    // SAFETY: a live id, no source address, a valid destination address.
    let rc = unsafe {
        rdma_resolve_addr(
            id.id.as_ptr(),
            core::ptr::null_mut(),
            (&mut dst as *mut libc::sockaddr_storage).cast(),
            options.timeout_ms(),
        )
    };
    check("rdma_resolve_addr", rc)?;
    let wait = Some(options.timeout + Duration::from_secs(1));
    id.wait(CmEvent::AddrResolved, wait)?;
    if let Some(t) = options.ack_timeout {
        id.set_u8(
            RDMA_OPTION_ID_ACK_TIMEOUT,
            "rdma_set_option(RDMA_OPTION_ID_ACK_TIMEOUT)",
            t,
        )?;
    }
    // SAFETY: a live id with its address resolved.
    let rc = unsafe { rdma_resolve_route(id.id.as_ptr(), options.timeout_ms()) };
    check("rdma_resolve_route", rc)?;
    id.wait(CmEvent::RouteResolved, wait)?;
    Ok(id)
}

/// The handshake alone, to `to`, carrying `mine` (perftest's `-z`): no QP is moved;
/// `mine.qpn` goes in the request as its QP number. Returns the connection with the
/// peer's record.
pub fn exchange(
    to: SocketAddr,
    mine: &CmPrivateData,
    options: &CmOptions,
) -> Result<CmConnection, Error> {
    let id = resolve(&to, options)?;
    let peer = id.request(mine.qpn, mine, options, depths(0, None))?;
    id.establish()?;
    Ok(CmConnection { id, peer })
}

/// A listening id.
#[derive(Debug)]
pub struct CmListener {
    id: Id,
}

impl CmListener {
    /// Listens on `addr` (`0.0.0.0:PORT`: every RDMA device's addresses) in the TCP port
    /// space of rdma_cm.
    pub fn bind(addr: SocketAddr) -> Result<CmListener, Error> {
        let id = Id::new(Channel::new()?)?;
        let mut sa = sockaddr(&addr);
        // SAFETY: a live id and a valid address.
        let rc = unsafe {
            rdma_bind_addr(
                id.id.as_ptr(),
                (&mut sa as *mut libc::sockaddr_storage).cast(),
            )
        };
        check("rdma_bind_addr", rc)?;
        // SAFETY: a bound id.
        check("rdma_listen", unsafe { rdma_listen(id.id.as_ptr(), 64) })?;
        Ok(CmListener { id })
    }

    /// The next connect request, within `timeout` (`None`: waits as long as it takes).
    pub fn next_request(&self, timeout: Option<Duration>) -> Result<CmRequest, Error> {
        let me = self.id.id.as_ptr();
        let event =
            self.id
                .channel
                .wait(|e| e.listen_id == me, CmEvent::ConnectRequest, timeout)?;
        let id = Id::adopt(event.id, self.id.channel.clone())?;
        let peer = match CmPrivateData::decode(&event.private) {
            Ok(peer) => peer,
            Err(e) => {
                // SAFETY: a live id with a pending request; no private data.
                unsafe { rdma_reject(id.id.as_ptr(), core::ptr::null(), 0) };
                return Err(e.into());
            }
        };
        Ok(CmRequest { id, peer })
    }
}

/// A connect request, not yet answered (rejected when dropped unanswered: the id is
/// destroyed).
#[derive(Debug)]
pub struct CmRequest {
    pub(crate) id: Id,
    pub(crate) peer: CmPrivateData,
}

impl CmRequest {
    /// The requester's record.
    pub fn peer(&self) -> &CmPrivateData {
        &self.peer
    }

    /// Accepts carrying `mine`, moving no QP (perftest's `-z`).
    pub fn accept(self, mine: &CmPrivateData, options: &CmOptions) -> Result<CmConnection, Error> {
        options.check()?;
        let CmRequest { id, peer } = self;
        accept(id, peer, mine, options, depths(0, None))
    }
}

/// `rdma_accept` with `mine`, then the ESTABLISHED event.
pub(crate) fn accept(
    id: Id,
    peer: CmPrivateData,
    mine: &CmPrivateData,
    options: &CmOptions,
    depths: (u8, u8),
) -> Result<CmConnection, Error> {
    let bytes = mine.encode();
    let mut param = Id::conn_param(mine.qpn, &bytes, options, depths);
    // SAFETY: a live id with a pending request; `param` and its private data outlive the
    // call.
    check("rdma_accept", unsafe {
        rdma_accept(id.id.as_ptr(), &mut param)
    })?;
    id.wait(CmEvent::Established, Some(options.timeout * 4))?;
    Ok(CmConnection { id, peer })
}

#[cfg(test)]
mod tests;
