//! A queue pair ([`Qp`]): its states and transitions, its packet sequence numbers and the
//! queues it owns.

use core::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use crate::backend::Backend;
use crate::error::Error;
use crate::mcast::McastGroup;
use crate::rq::RecvQueue;
use crate::sq::{SendQueue, SqShared};
use crate::types::{
    Access, ConnectOptions, DeviceCaps, Endpoint, QpState, RateLimit, Transition, Transport,
};

use super::context::{lock_flags, Context};
use super::cq::CqInner;
use super::pd::PdInner;
use super::qp_halves::{QpReceiver, QpSender};
use super::srq::SrqInner;

/// The path MTU a connection on `port` takes: `options.path_mtu`, at most the port's active
/// MTU, as perftest's `set_mtu` clamps `-m` and rdma_cm takes the active MTU (on RoCE the
/// kernel's `iboe_get_mtu` of the netdev MTU: 1024 under the Ethernet default of 1500).
pub(super) fn path_mtu<B: Backend>(
    backend: &B,
    port: u8,
    options: &ConnectOptions,
) -> Result<u32, Error> {
    Ok(options.path_mtu.min(backend.port(port)?.active_mtu))
}

/// RC's INIT → RTR to `to` (the peer, with the PSN to expect): the path MTU, the READ /
/// atomic depth (at most the device's), the RNR timer and the address fields of `options`.
pub(super) fn rc_rtr(
    to: Endpoint,
    path_mtu: u32,
    options: &ConnectOptions,
    caps: &DeviceCaps,
) -> Transition {
    Transition::Rtr {
        remote: to,
        path_mtu,
        max_dest_rd_atomic: options.rd_atomic.min(caps.max_dest_rd_atomic),
        min_rnr_timer: options.min_rnr_timer,
        hop_limit: options.hop_limit,
        traffic_class: options.traffic_class,
        sl: options.sl,
        flow_label: options.flow_label,
    }
}

/// RC's RTR → RTS sending from `sq_psn` with the timeout, retry counts and READ / atomic
/// depth (at most the device's) of `options`.
fn rc_rts(sq_psn: u32, options: &ConnectOptions, caps: &DeviceCaps) -> Transition {
    Transition::Rts {
        sq_psn,
        timeout: options.timeout,
        retry_cnt: options.retry_cnt,
        rnr_retry: options.rnr_retry,
        max_rd_atomic: options.rd_atomic.min(caps.max_rd_atomic),
    }
}

/// What a QP's two halves share, released with the last of them: the device object and
/// the objects it uses.
#[derive(Debug)]
pub(super) struct QpCore<B: Backend> {
    pub(super) handle: B::Qp,
    pub(super) qpn: u32,
    pub(super) transport: Transport,
    pub(super) errored: Arc<AtomicBool>,
    /// The send queue's shared state, whose flag says it refuses posts (`SqShared::refuse`):
    /// set with `errored` on a QP error, alone when the send queue of a QP with an SQE
    /// state (`sqe`) failed.
    pub(super) sq: Arc<SqShared>,
    /// The QP has a send-queue error state (UD, UC, raw packet; see `QpEntry::sqe`).
    pub(super) sqe: bool,
    /// The packet sequence numbers of the QP's connections (slow path only).
    pub(super) seq: Mutex<Sequence>,
    /// The multicast groups the QP is attached to (UD), detached before it is destroyed.
    pub(super) mcast: Mutex<Vec<McastGroup>>,
    pub(super) send_cq: Arc<CqInner<B>>,
    pub(super) recv_cq: Arc<CqInner<B>>,
    pub(super) _srq: Option<Arc<SrqInner<B>>>,
    pub(super) _pd: Arc<PdInner<B>>,
}

impl<B: Backend> QpCore<B> {
    pub(super) fn state(&self, recorded: QpState) -> QpState {
        if self.errored.load(Ordering::Relaxed) {
            QpState::Err
        } else if self.sqe && self.sq.is_refused() {
            QpState::Sqe
        } else {
            recorded
        }
    }

    fn seq(&self) -> MutexGuard<'_, Sequence> {
        self.seq.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Where a QP stands in its packet sequences.
#[derive(Debug)]
pub(super) struct Sequence {
    /// The first PSN of the next (or current) connection: what [`Qp::endpoint`] gives out.
    pub(super) psn: u32,
    /// The peer of the current connection, from a successful [`Qp::connect`].
    pub(super) peer: Option<Endpoint>,
    /// Set by [`Qp::reset`] of a connected QP: its peer then and the PSN it expected next,
    /// for a reconnection to a peer that did not reconnect.
    pub(super) resume: Option<(Endpoint, u32)>,
}

/// PSNs are 24 bits.
pub(super) const PSN_MASK: u32 = 0xff_ffff;

/// A random 24-bit PSN for a new QP, as `rc_pingpong` (`lrand48() & 0xffffff`) and perftest
/// choose them: from the process's randomly keyed hasher (no dependency).
pub(super) fn random_psn() -> u32 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u32(PSN_MASK);
    h.finish() as u32 & PSN_MASK
}

impl<B: Backend> Drop for QpCore<B> {
    fn drop(&mut self) {
        // The kernel refuses to destroy a QP still attached (`uverbs_free_qp`: EBUSY).
        self.detach_all();
        self.send_cq.attachments.detach(self.qpn);
        self.recv_cq.attachments.detach(self.qpn);
        lock_flags(&self._pd.ctx.qps).remove(&self.qpn);
        lock_flags(&self._pd.ctx.sqs).remove(&self.qpn);
    }
}

/// A QP (reliable connected, or UD with [`Transport::Ud`]): its send queue, its receive
/// queue (unless it uses an SRQ) and its state. [`Qp::split`] makes it two owned halves for two threads.
#[derive(Debug)]
pub struct Qp<B: Backend> {
    // The queues drop before `core`, which holds the device object and its memory.
    pub(super) sq: SendQueue<B::Uar>,
    pub(super) rq: Option<RecvQueue>,
    pub(super) state: QpState,
    pub(super) port: u8,
    pub(super) core: Arc<QpCore<B>>,
}

impl<B: Backend> Qp<B> {
    /// QP number.
    pub fn qpn(&self) -> u32 {
        self.core.qpn
    }

    /// The state as last set, or [`QpState::Err`] once a CQE reported an error on it or the
    /// context handed out an asynchronous event saying the device moved it to ERR
    /// ([`AsyncEvent::failed_qp`](crate::AsyncEvent::failed_qp)). Recorded, not queried: no call to the device.
    pub fn state(&self) -> QpState {
        self.core.state(self.state)
    }

    /// The send queue.
    pub fn sq(&mut self) -> &mut SendQueue<B::Uar> {
        &mut self.sq
    }

    /// The send queue, to read (`max_inline`, `effective_mode`, free and outstanding
    /// counts).
    pub fn send_queue(&self) -> &SendQueue<B::Uar> {
        &self.sq
    }

    /// The receive queue (`None` when the QP uses an SRQ).
    pub fn rq(&mut self) -> Option<&mut RecvQueue> {
        self.rq.as_mut()
    }

    /// The receive queue, to read (`free`, `capacity`, `max_sge`).
    pub fn recv_queue(&self) -> Option<&RecvQueue> {
        self.rq.as_ref()
    }

    /// Splits the QP into an owned send half and an owned receive half, each `Send` and each
    /// keeping the QP alive: one thread posts sends (and may poll the send CQ), another
    /// posts receives. The QP is destroyed when both halves are gone. State changes
    /// (connect, reset) need the whole QP: connect before splitting, and
    /// [`QpSender::join`] the halves to reset after an error.
    pub fn split(self) -> (QpSender<B>, QpReceiver<B>) {
        let Qp {
            sq,
            rq,
            state,
            port,
            core,
        } = self;
        let receiver = QpReceiver {
            rq,
            state,
            core: core.clone(),
        };
        (
            QpSender {
                sq,
                state,
                port,
                core,
            },
            receiver,
        )
    }

    /// Both queues at once.
    pub fn queues(&mut self) -> (&mut SendQueue<B::Uar>, Option<&mut RecvQueue>) {
        (&mut self.sq, self.rq.as_mut())
    }

    /// The port the QP uses (or will use): the context's, unless [`Qp::init`] named
    /// another.
    pub fn port(&self) -> u8 {
        self.port
    }

    /// The address to give the peer, with the first PSN this QP sends on its next (or
    /// current) connection, on its port ([`Qp::port`]): random (24 bits) for a new QP, as rdma-core's `rc_pingpong` and
    /// perftest choose it, the continuation of the sequence after [`Qp::reset`], or what
    /// [`Qp::set_psn`] chose.
    pub fn endpoint(&self) -> Result<Endpoint, Error> {
        let psn = self.core.seq().psn;
        self.ctx().backend.endpoint(self.port, self.core.qpn, psn)
    }

    /// Chooses the first PSN (24 bits) of the next connection, before its [`Qp::endpoint`]
    /// goes to the peer: only in RESET or INIT, and only before the QP's first connection
    /// (a QP reset after a connection continues its sequence; see [`Qp::reset`]).
    pub fn set_psn(&mut self, psn: u32) -> Result<(), Error> {
        if !matches!(self.state(), QpState::Reset | QpState::Init) {
            return Err(Error::WrongState {
                operation: "choose the PSN",
                state: self.state(),
            });
        }
        let mut seq = self.core.seq();
        if seq.resume.is_some() {
            return Err(Error::InvalidArgument(
                "a QP reset after a connection continues its PSN",
            ));
        }
        if psn > PSN_MASK {
            return Err(Error::InvalidArgument("PSNs are 24 bits"));
        }
        seq.psn = psn;
        Ok(())
    }

    pub(super) fn ctx(&self) -> &Context<B> {
        &self.core._pd.ctx
    }

    pub(super) fn modify(&mut self, transition: Transition, state: QpState) -> Result<(), Error> {
        self.ctx()
            .backend
            .modify_qp(&self.core.handle, &transition)?;
        self.state = state;
        Ok(())
    }

    /// The transport service.
    pub fn transport(&self) -> Transport {
        self.core.transport
    }

    /// Brings a UD QP from RESET to RTS (`IBV_QP_QKEY` at INIT, nothing at RTR, the SQ PSN
    /// 0 at RTS): it then receives datagrams carrying `qkey` and sends with
    /// [`SendQueue::post_ud`], datagrams of at most the port's active MTU.
    pub fn activate_ud(&mut self, port: u8, qkey: u32) -> Result<(), Error> {
        let options = ConnectOptions {
            port: Some(port),
            ..ConnectOptions::default()
        };
        self.activate_ud_with(qkey, &options)
    }

    /// [`Qp::activate_ud`] on the port `options` names (else the QP's) with its P_Key
    /// index at INIT (`IBV_QP_PKEY_INDEX`, as perftest's `--pkey_index`); the other fields
    /// do not apply to UD.
    pub fn activate_ud_with(&mut self, qkey: u32, options: &ConnectOptions) -> Result<(), Error> {
        if self.core.transport != Transport::Ud {
            return Err(Error::InvalidArgument("activate_ud on a QP that is not UD"));
        }
        if self.state() != QpState::Reset {
            return Err(Error::WrongState {
                operation: "activate",
                state: self.state(),
            });
        }
        let port = options.port.unwrap_or(self.port);
        let mtu = self.ctx().backend.port(port)?.active_mtu;
        let init = Transition::InitUd {
            port,
            qkey,
            pkey_index: options.pkey_index,
        };
        self.modify(init, QpState::Init)?;
        self.port = port;
        if let Some(rq) = &mut self.rq {
            rq.set_ready(true);
        }
        self.modify(Transition::RtrUd, QpState::Rtr)?;
        self.modify(Transition::RtsUd { sq_psn: 0 }, QpState::Rts)?;
        self.sq.set_ud_mtu(mtu);
        self.sq.set_ready(true);
        Ok(())
    }

    /// Brings a DCI from RESET to RTS (INIT on the port `options` names or the QP's with
    /// its P_Key index, RTR
    /// with the path MTU, RTS with the SQ PSN of [`Qp::endpoint`], the timeout, the retry
    /// counts and the READ / atomic depth of `options`): it then posts with
    /// [`SendQueue::post_dc`]. After an error, [`Qp::reset`] and activate again (the
    /// recovery UCX's `uct_dc_mlx5_iface_reset_dci` does).
    pub fn activate_dci(&mut self, options: &ConnectOptions) -> Result<(), Error> {
        self.dci_only("activate_dci on a QP that is not a DCI")?;
        if self.state() != QpState::Reset {
            return Err(Error::WrongState {
                operation: "activate",
                state: self.state(),
            });
        }
        self.activate_dci_now(options)
    }

    /// Refuses with `what` unless this is a DCI.
    fn dci_only(&self, what: &'static str) -> Result<(), Error> {
        if self.core.transport == Transport::Dci {
            Ok(())
        } else {
            Err(Error::InvalidArgument(what))
        }
    }

    /// Takes stream `stream` of this DCI (created with
    /// [`QpConfig::dci_streams`](crate::QpConfig::dci_streams)) out of error
    /// (`mlx5dv_dci_stream_id_reset`): after an error completion of one of its operations
    /// and the flush of the rest of that stream (each a completion in error), the stream's
    /// new operations execute again. The DCI stays in RTS through a stream error while
    /// fewer than `1 << log_errored` streams are in error; the error that reaches that count
    /// fails the DCI, and this is then refused by the device (recover with [`Qp::reset`]
    /// and [`Qp::activate_dci`]). Completions do not name the stream: the application knows
    /// it from the `wr_id` (mlx5dv_dci_stream_id_reset(3)). Refused: not a DCI
    /// (`InvalidArgument`), a backend or device without stream reset, a DCI not in RTS.
    pub fn reset_dci_stream(&mut self, stream: u16) -> Result<(), Error> {
        self.dci_only("reset_dci_stream on a QP that is not a DCI")?;
        self.ctx()
            .backend
            .reset_dci_stream(&self.core.handle, stream)
    }

    /// [`Qp::activate_dci`] once checked.
    fn activate_dci_now(&mut self, options: &ConnectOptions) -> Result<(), Error> {
        options.validate()?;
        let caps = self.ctx().caps();
        let port = options.port.unwrap_or(self.port);
        self.modify(
            Transition::InitDci {
                port,
                pkey_index: options.pkey_index,
            },
            QpState::Init,
        )?;
        self.port = port;
        let path_mtu = path_mtu(&*self.ctx().backend, port, options)?;
        self.modify(Transition::RtrDci { path_mtu }, QpState::Rtr)?;
        let sq_psn = self.core.seq().psn;
        self.enter_rts(sq_psn, options, &caps)
    }

    /// RTR → RTS sending from `sq_psn` with the timeout, retry counts and READ / atomic
    /// depth of `options` (at most the device's), then ready to post.
    fn enter_rts(
        &mut self,
        sq_psn: u32,
        options: &ConnectOptions,
        caps: &DeviceCaps,
    ) -> Result<(), Error> {
        self.modify(rc_rts(sq_psn, options, caps), QpState::Rts)?;
        self.sq.set_ready(true);
        Ok(())
    }

    /// RESET → INIT on `port`, granting the peer `access`: receives may be posted from here
    /// on. A device without atomics refuses REMOTE_ATOMIC.
    pub fn init(&mut self, port: u8, access: Access) -> Result<(), Error> {
        self.init_with_pkey(port, access, 0)
    }

    /// [`Qp::init`] with the P_Key at `pkey_index` of the port's table.
    fn init_with_pkey(&mut self, port: u8, access: Access, pkey_index: u16) -> Result<(), Error> {
        if self.state() != QpState::Reset {
            return Err(Error::WrongState {
                operation: "initialise",
                state: self.state(),
            });
        }
        if access.contains(Access::REMOTE_ATOMIC) && !self.ctx().caps().atomics {
            return Err(Error::InvalidArgument(
                "REMOTE_ATOMIC on a device without atomics",
            ));
        }
        self.modify(
            Transition::Init {
                port,
                access,
                pkey_index,
            },
            QpState::Init,
        )?;
        self.port = port;
        if let Some(rq) = &mut self.rq {
            rq.set_ready(true);
        }
        Ok(())
    }

    /// Connects to `remote`: INIT (if still in RESET), RTR, RTS. The QP sends from the PSN
    /// of its own [`Qp::endpoint`] and expects `remote.psn`, except after a [`Qp::reset`]
    /// when `remote` is the very endpoint it was connected to before: that peer has not
    /// reconnected and goes on with its sequence, so the QP goes on expecting the PSN it
    /// expected before the reset. The port, the
    /// rights and the READ / atomic depth follow the device where `options` leaves them to
    /// it ([`ConnectOptions`]). The P_Key index of `options` is set when this call brings
    /// the QP from RESET to INIT; out-of-range fields are refused before anything changes.
    pub fn connect(&mut self, remote: &Endpoint, options: &ConnectOptions) -> Result<(), Error> {
        options.validate()?;
        let caps = self.ctx().caps();
        let uc = self.core.transport == Transport::Uc;
        if self.state() == QpState::Reset {
            let access = options.access.unwrap_or(if uc {
                Access::REMOTE_WRITE
            } else {
                Access::remote_default(caps.atomics)
            });
            self.init_with_pkey(
                options.port.unwrap_or(self.port),
                access,
                options.pkey_index,
            )?;
        }
        if self.state() != QpState::Init {
            return Err(Error::WrongState {
                operation: "connect",
                state: self.state(),
            });
        }
        let (expected, psn) = {
            let seq = self.core.seq();
            let expected = match seq.resume {
                Some((peer, rq_psn)) if peer == *remote => rq_psn,
                _ => remote.psn,
            };
            (expected, seq.psn)
        };
        let to = Endpoint {
            psn: expected,
            ..*remote
        };
        let path_mtu = path_mtu(&*self.ctx().backend, self.port, options)?;
        if uc {
            // UC: no READ / atomic depth, no RNR timer, no ACK timeout, no retries.
            let rtr = Transition::RtrUc {
                remote: to,
                path_mtu,
                hop_limit: options.hop_limit,
                traffic_class: options.traffic_class,
                sl: options.sl,
                flow_label: options.flow_label,
            };
            self.modify(rtr, QpState::Rtr)?;
            self.modify(Transition::RtsUc { sq_psn: psn }, QpState::Rts)?;
            self.sq.set_ready(true);
        } else {
            let rtr = match self.core.transport {
                // An XRC initiator executes no requests: UC's RTR attributes.
                Transport::XrcIni => Transition::RtrXrcIni {
                    remote: to,
                    path_mtu,
                    hop_limit: options.hop_limit,
                    traffic_class: options.traffic_class,
                    sl: options.sl,
                    flow_label: options.flow_label,
                },
                _ => rc_rtr(to, path_mtu, options, &caps),
            };
            self.modify(rtr, QpState::Rtr)?;
            self.enter_rts(psn, options, &caps)?;
        }
        let mut seq = self.core.seq();
        seq.peer = Some(*remote);
        seq.resume = None;
        Ok(())
    }

    /// Moves the QP to the error state: everything outstanding completes with flush CQEs.
    pub fn to_error(&mut self) -> Result<(), Error> {
        self.modify(Transition::Err, QpState::Err)?;
        self.sq.set_ready(false);
        if let Some(rq) = &mut self.rq {
            rq.set_ready(false);
        }
        Ok(())
    }

    /// Resets the QP (after an error, or to reuse it): state RESET, queues emptied, doorbell
    /// records zeroed. Poll the flush CQEs first: CQEs still in the CQ for this QP are not
    /// removed (the CQ is driver-owned, rdma-core does not clean it).
    ///
    /// A connected QP keeps its place in both packet sequences: before the reset it reads
    /// the next send PSN and the expected receive PSN from the device
    /// ([`Backend::query_psn`]). Its next [`Qp::endpoint`] carries that send PSN, and a
    /// [`Qp::connect`] to the same peer endpoint as before expects that receive PSN. So a
    /// QP reset and reconnected on one side only, while the peer stays connected, goes on
    /// where the peer expects it. A fresh sequence instead would land, half the time, in the
    /// peer's duplicate window (the 2^23 PSNs behind the one it expects), where an IB
    /// responder acknowledges a request without executing it: a WRITE would complete with
    /// success and never land. Continued, the sequence is never behind the peer: the device
    /// moves its send PSN on when a request first goes out, so at worst it is ahead (the
    /// request was lost), which the peer answers with a sequence NAK, and the request fails
    /// with [`Syndrome::TransportRetryExcErr`](crate::prm::Syndrome) after its retries
    /// rather than completing as a false success.
    pub fn reset(&mut self) -> Result<(), Error> {
        let peer = self.core.seq().peer;
        if let Some(peer) = peer {
            let now = self.ctx().backend.query_psn(&self.core.handle)?;
            let mut seq = self.core.seq();
            seq.psn = now.sq_psn;
            seq.resume = Some((peer, now.rq_psn));
            seq.peer = None;
        }
        self.modify(Transition::Reset, QpState::Reset)?;
        self.sq.reset();
        if let Some(rq) = &mut self.rq {
            rq.reset();
        }
        self.core.errored.store(false, Ordering::Relaxed);
        self.sq.accept();
        Ok(())
    }

    /// Sets the QP's rate limit (packet pacing, `ibv_modify_qp_rate_limit`): from now on
    /// its send queue leaves no faster than `limit.kbps` kbit/s, at most
    /// `limit.max_burst_sz` bytes at once after a pause; `kbps` 0 removes the limit. Only
    /// in RTS ([`Error::WrongState`]); a burst or typical size without a rate is
    /// [`Error::InvalidArgument`] (rdma-core's `mlx5_modify_qp_rate_limit`); a transport
    /// the device does not pace is [`Error::Unsupported`] before the device is asked
    /// ([`DeviceCaps::pacing`](crate::DeviceCaps::pacing): mlx5 kernels list raw packet
    /// QPs, and UD and UC where the device has the caps, in
    /// `packet_pacing_caps.supported_qpts`; none lists RC), and so is a rate outside its
    /// `qp_rate_limit_min..=max` ([`Error::InvalidArgument`], where the kernel answers
    /// EINVAL). The device refuses a new distinct limit when its rate table is full.
    /// Moving the QP to ERR or RESET releases the limit.
    pub fn set_rate_limit(&mut self, limit: &RateLimit) -> Result<(), Error> {
        if self.state() != QpState::Rts {
            return Err(Error::WrongState {
                operation: "set the rate limit of",
                state: self.state(),
            });
        }
        if limit.kbps == 0 && (limit.max_burst_sz != 0 || limit.typical_pkt_sz != 0) {
            return Err(Error::InvalidArgument(
                "a burst or typical packet size needs a rate",
            ));
        }
        let pacing = self.ctx().caps().pacing;
        if !pacing.paces(self.core.transport) {
            return Err(Error::Unsupported(
                "packet pacing of this QP's transport (packet_pacing_caps.supported_qpts)",
            ));
        }
        if limit.kbps != 0 && !(pacing.min_kbps..=pacing.max_kbps).contains(&limit.kbps) {
            return Err(Error::InvalidArgument(
                "a rate outside the device's qp_rate_limit_min..=qp_rate_limit_max",
            ));
        }
        self.ctx().backend.set_rate_limit(&self.core.handle, limit)
    }

    /// Takes a UD or UC QP in the send-queue error state back to RTS (SQE → RTS): after a
    /// send failed, the device flushed the rest of the send queue and went on receiving;
    /// poll the error and flush CQEs first, then post again. Refused in any other state
    /// (an RC QP never enters SQE).
    pub fn recover_sq(&mut self) -> Result<(), Error> {
        if self.state() != QpState::Sqe {
            return Err(Error::WrongState {
                operation: "recover the send queue",
                state: self.state(),
            });
        }
        self.modify(Transition::SqeToRts, QpState::Rts)?;
        self.sq.accept();
        Ok(())
    }

    /// The backend handle.
    pub fn handle(&self) -> &B::Qp {
        &self.core.handle
    }

    /// One step of a connection whose attributes another party computes (rdma_cm on the
    /// `verbs` backend): `apply` moves the device QP to `state` (INIT from RESET, RTR from
    /// INIT, RTS from RTR, refused otherwise), then the queues follow as in [`Qp::connect`]:
    /// receives from INIT (on `port`), sends from RTS.
    #[cfg(feature = "verbs")]
    pub(crate) fn step_by(
        &mut self,
        state: QpState,
        port: u8,
        apply: impl FnOnce(&B, &B::Qp) -> Result<(), Error>,
    ) -> Result<(), Error> {
        let from = match state {
            QpState::Init => QpState::Reset,
            QpState::Rtr => QpState::Init,
            QpState::Rts => QpState::Rtr,
            _ => {
                return Err(Error::InvalidArgument(
                    "a connection steps to INIT, RTR, RTS",
                ))
            }
        };
        if self.state() != from {
            return Err(Error::WrongState {
                operation: "connect",
                state: self.state(),
            });
        }
        apply(&self.ctx().backend, &self.core.handle)?;
        self.state = state;
        match state {
            QpState::Init => {
                self.port = port;
                if let Some(rq) = &mut self.rq {
                    rq.set_ready(true);
                }
            }
            QpState::Rts => self.sq.set_ready(true),
            _ => {}
        }
        Ok(())
    }

    /// Records the peer of a connection made with [`Qp::step_by`], as [`Qp::connect`] does
    /// (a [`Qp::reset`] then continues both sequences).
    #[cfg(feature = "verbs")]
    pub(crate) fn connected_to(&mut self, peer: &Endpoint) {
        let mut seq = self.core.seq();
        seq.peer = Some(*peer);
        seq.resume = None;
    }

    /// The backend the QP lives on.
    #[cfg(feature = "verbs")]
    pub(crate) fn backend(&self) -> &B {
        &self.ctx().backend
    }
}
