//! The IB CM between two ids of the fabric (drivers/infiniband/core/cm.c, and the
//! `cma_ib_handler` / `cma_ib_req_handler` of cma.c that turn its events into rdma_cm
//! events): REQ, REP, RTU, REJ, DREQ and DREP as messages on the server's "wire"
//! ([`Msg`], delivered in order before a command returns), the connection state of each
//! side (`enum ib_cm_state`), timewait, and the MAD layer's retries of a REQ no one had
//! room for. The QP attributes each state gives are in [`super::attr`].
//!
//! The kernel's MRA states are folded in: a passive id that has reported its REQ is in
//! `MRA_REQ_SENT`, which takes what `REQ_RCVD` takes ([`IbState::ReqRcvd`]); the same for
//! `MRA_REP_SENT` and [`IbState::RepRcvd`]. No MRA message is ever needed: the peer's CM
//! answers at once.

use super::addr::Addr;
use super::hdr::{cma_hdr, match_private_data, parse_cma_hdr, user_data_offset};
use super::route::{self, ack_timeout, to_ms, NicInfo, Path, CA_ACK_DELAY, DEFAULT_PKEY};
use super::{Cma, Due, Queued, State};
use crate::abi::ucma::not_in_headers::*;
use crate::abi::ucma::*;
use crate::abi::FromZeros;

/// `CMA_CM_RESPONSE_TIMEOUT` (cma.c): the CM response timeout exponent a REQ carries.
const CM_RESPONSE_TIMEOUT: u8 = 20;
/// `CMA_MAX_CM_RETRIES`: how often a REQ is sent before the CM gives up.
const MAX_CM_RETRIES: u8 = 15;

/// `enum ib_cm_state`, the MRA states folded in (module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum IbState {
    Idle,
    ReqSent,
    ReqRcvd,
    RepSent,
    RepRcvd,
    Established,
    DreqSent,
    DreqRcvd,
    Timewait,
    /// A SIDR REQ sent (`IB_CM_SIDR_REQ_SENT`), and received (`IB_CM_SIDR_REQ_RCVD`).
    SidrReqSent,
    SidrReqRcvd,
}

/// A side's address vector (`struct cm_av`): its path, source GID and ACK timeout.
#[derive(Clone, Copy, Debug)]
pub(super) struct Av {
    pub(super) path: Path,
    pub(super) sgid_index: u8,
    pub(super) timeout: u8,
}

/// An id's end of a connection (`struct cm_id_private`).
#[derive(Clone, Debug)]
pub(super) struct Conn {
    /// This connection's number: messages and timers name it, so none reaches a later
    /// connection of a reused id.
    pub(super) serial: u64,
    pub(super) state: IbState,
    /// The other end (id, serial), once known.
    pub(super) peer: Option<(u32, u64)>,
    pub(super) local_qpn: u32,
    pub(super) remote_qpn: u32,
    pub(super) sq_psn: u32,
    pub(super) rq_psn: u32,
    pub(super) initiator_depth: u8,
    pub(super) responder_resources: u8,
    pub(super) retry_count: u8,
    pub(super) rnr_retry_count: u8,
    pub(super) path_mtu: u8,
    pub(super) qp_type: u8,
    pub(super) av: Av,
    /// An active side's REQ, kept for the MAD layer's retries, and the retries left.
    pub(super) req: Option<Box<Req>>,
    pub(super) retries: u8,
}

/// A REQ (`struct cm_req_msg`, the fields the CM uses), or a SIDR REQ (`struct
/// cm_sidr_req_msg`: service id, P_Key and private data; the path it took).
#[derive(Clone, Debug)]
pub(super) struct Req {
    pub(super) sidr: bool,
    pub(super) from: (u32, u64),
    /// The NIC it arrives at (the one holding the path's destination GID).
    pub(super) nic: usize,
    pub(super) service_id: u64,
    pub(super) qpn: u32,
    pub(super) qp_type: u8,
    pub(super) starting_psn: u32,
    pub(super) responder_resources: u8,
    pub(super) initiator_depth: u8,
    pub(super) flow_control: u8,
    pub(super) retry_count: u8,
    pub(super) rnr_retry_count: u8,
    pub(super) srq: bool,
    pub(super) path: Path,
    pub(super) local_ack_timeout: u8,
    /// `IB_CM_REQ_PRIVATE_DATA_SIZE` bytes, or `IB_CM_SIDR_REQ_PRIVATE_DATA_SIZE`.
    pub(super) private: Vec<u8>,
    pub(super) ece: rdma_ucm_ece,
}

/// A REP.
#[derive(Clone, Debug)]
pub(super) struct Rep {
    pub(super) qpn: u32,
    pub(super) starting_psn: u32,
    pub(super) responder_resources: u8,
    pub(super) initiator_depth: u8,
    pub(super) flow_control: u8,
    pub(super) rnr_retry_count: u8,
    pub(super) srq: bool,
    pub(super) target_ack_delay: u8,
    pub(super) private: [u8; IB_CM_REP_PRIVATE_DATA_SIZE],
    pub(super) ece: rdma_ucm_ece,
}

/// A CM message in flight, addressed to an id's connection (id, serial).
#[derive(Clone, Debug)]
pub(super) enum Msg {
    Req(Box<Req>),
    Rep {
        from: (u32, u64),
        to: (u32, u64),
        rep: Box<Rep>,
    },
    Rtu {
        to: (u32, u64),
    },
    Rej {
        to: (u32, u64),
        reason: u32,
        private: Box<[u8; IB_CM_REJ_PRIVATE_DATA_SIZE]>,
    },
    Dreq {
        from: (u32, u64),
        to: (u32, u64),
    },
    Drep {
        to: (u32, u64),
    },
    SidrRep(Box<super::sidr::SidrRep>),
}

/// `len` bytes of `data` at the start of an `N`-byte private data area.
pub(super) fn padded<const N: usize>(data: &[u8]) -> [u8; N] {
    let mut p = [0u8; N];
    let n = data.len().min(N);
    p[..n].copy_from_slice(&data[..n]);
    p
}

/// An event's `param.conn` carrying `private`.
fn conn_param(private: &[u8]) -> rdma_ucm_conn_param {
    let mut c = rdma_ucm_conn_param::new_zeroed();
    c.private_data[..private.len()].copy_from_slice(private);
    c.private_data_len = private.len() as u8;
    c
}

impl State {
    /// The connection `(id, serial)`, if that id still has it.
    pub(super) fn conn_mut(&mut self, (id, serial): (u32, u64)) -> Option<&mut Conn> {
        self.ids
            .get_mut(&id)?
            .conn
            .as_mut()
            .filter(|c| c.serial == serial)
    }

    /// `cm_enter_timewait`: the connection waits out stale packets for its ACK timeout
    /// (`cm_convert_to_ms(av.timeout)`), then reports TIMEWAIT_EXIT.
    fn enter_timewait(&mut self, id: u32) {
        let Some(c) = self.ids.get_mut(&id).and_then(|i| i.conn.as_mut()) else {
            return;
        };
        c.state = IbState::Timewait;
        c.req = None;
        let (serial, ms) = (c.serial, to_ms(c.av.timeout));
        self.at(ms, Due::Timewait { id, serial });
    }

    /// Send a REJ from `id`'s connection (`cm_send_rej_locked`): `EINVAL` in a state that
    /// has none.
    pub(super) fn send_rej(&mut self, id: u32, reason: u32, private: &[u8]) -> Result<(), i32> {
        if private.len() > IB_CM_REJ_PRIVATE_DATA_SIZE {
            return Err(libc::EINVAL);
        }
        let c = self
            .ids
            .get_mut(&id)
            .and_then(|i| i.conn.as_mut())
            .ok_or(libc::EINVAL)?;
        let peer = c.peer;
        match c.state {
            IbState::ReqSent | IbState::ReqRcvd | IbState::RepRcvd => {
                c.state = IbState::Idle;
                c.req = None;
            }
            IbState::RepSent => self.enter_timewait(id),
            _ => return Err(libc::EINVAL),
        }
        if let Some(to) = peer {
            self.wire.push_back(Msg::Rej {
                to,
                reason,
                private: Box::new(padded(private)),
            });
        }
        Ok(())
    }

    /// `rdma_disconnect` on `id`'s connection: a DREQ from an established connection, a
    /// DREP to a received DREQ, else nothing (`EINVAL` without a connection).
    pub(super) fn disconnect(&mut self, id: u32) -> Result<(), i32> {
        let c = self
            .ids
            .get_mut(&id)
            .and_then(|i| i.conn.as_mut())
            .ok_or(libc::EINVAL)?;
        let me = (id, c.serial);
        match (c.state, c.peer) {
            (IbState::Established, Some(to)) => {
                c.state = IbState::DreqSent;
                self.wire.push_back(Msg::Dreq { from: me, to });
            }
            (IbState::DreqRcvd, peer) => {
                self.enter_timewait(id);
                if let Some(to) = peer {
                    self.wire.push_back(Msg::Drep { to });
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// `cm_destroy_id`: what a connection tells its peer as its id goes.
    pub(super) fn destroy_conn(&mut self, id: u32) {
        let Some(c) = self.ids.get(&id).and_then(|i| i.conn.as_ref()) else {
            return;
        };
        let (st, peer) = (c.state, c.peer);
        match st {
            IbState::ReqSent => {
                let _ = self.send_rej(id, IB_CM_REJ_TIMEOUT, &[]);
            }
            IbState::ReqRcvd | IbState::RepSent | IbState::RepRcvd => {
                let _ = self.send_rej(id, IB_CM_REJ_CONSUMER_DEFINED, &[]);
            }
            IbState::Established => {
                if let Some(to) = peer {
                    let from = (id, c.serial);
                    self.wire.push_back(Msg::Dreq { from, to });
                }
            }
            IbState::DreqRcvd => {
                if let Some(to) = peer {
                    self.wire.push_back(Msg::Drep { to });
                }
            }
            IbState::SidrReqRcvd => {
                let _ = self.send_sidr_rep(id, IB_SIDR_REJECT, 0, &[]);
            }
            IbState::DreqSent | IbState::Timewait | IbState::Idle | IbState::SidrReqSent => {}
        }
        if let Some(i) = self.ids.get_mut(&id) {
            i.conn = None;
        }
    }

    /// CONNECT's IB part (`cma_connect_ib`, `ib_send_cm_req`; for a UD id
    /// `cma_resolve_ib_udp`, `ib_send_cm_sidr_req`): the REQ or SIDR REQ to the NIC holding
    /// the route's destination GID, from `id` in state CONNECT with its route resolved.
    pub(super) fn send_req(
        &mut self,
        id: u32,
        p: &rdma_ucm_conn_param,
        ece: rdma_ucm_ece,
        nics: &[NicInfo],
    ) -> Result<(), i32> {
        let serial = self.serial();
        let i = self.ids.get(&id).ok_or(libc::EINVAL)?;
        let sidr = i.qp_type == super::addr::QPT_UD;
        let room = match sidr {
            true => IB_CM_SIDR_REQ_PRIVATE_DATA_SIZE,
            false => IB_CM_REQ_PRIVATE_DATA_SIZE,
        };
        let offset = user_data_offset(&i.src);
        let len = usize::from(p.private_data_len).min(RDMA_MAX_PRIVATE_DATA as usize);
        if offset + len > room {
            return Err(libc::EINVAL);
        }
        let (Some(dev), Some(path)) = (i.dev, i.route) else {
            return Err(libc::EINVAL);
        };
        let mut private = vec![0u8; room];
        if offset > 0 {
            private[..offset].copy_from_slice(&cma_hdr(&i.src, &i.dst));
        }
        private[offset..offset + len].copy_from_slice(&p.private_data[..len]);
        let dst_nic = nics
            .iter()
            .position(|n| n.gids.iter().any(|g| g.0 == path.dgid))
            .ok_or(libc::EHOSTUNREACH)?;
        let req = Req {
            sidr,
            from: (id, serial),
            nic: dst_nic,
            service_id: super::addr::service_id(i.ps, &i.dst),
            qpn: i.qp_num & 0x00ff_ffff,
            qp_type: i.qp_type,
            starting_psn: i.seq_num,
            responder_resources: p.responder_resources,
            initiator_depth: p.initiator_depth,
            flow_control: p.flow_control,
            retry_count: p.retry_count.min(7),
            rnr_retry_count: p.rnr_retry_count.min(7),
            srq: i.srq,
            path,
            local_ack_timeout: ack_timeout(CA_ACK_DELAY, path.packet_life_time),
            private,
            ece,
        };
        let conn = Conn {
            serial,
            state: if sidr {
                IbState::SidrReqSent
            } else {
                IbState::ReqSent
            },
            peer: None,
            local_qpn: req.qpn,
            remote_qpn: 0,
            sq_psn: 0,
            rq_psn: req.starting_psn,
            initiator_depth: req.initiator_depth,
            responder_resources: req.responder_resources,
            retry_count: req.retry_count,
            rnr_retry_count: 0,
            path_mtu: path.mtu,
            qp_type: i.qp_type,
            av: Av {
                path,
                sgid_index: dev.sgid_index,
                timeout: path.packet_life_time + 1,
            },
            req: Some(Box::new(req.clone())),
            retries: MAX_CM_RETRIES,
        };
        if let Some(i) = self.ids.get_mut(&id) {
            i.conn = Some(conn);
        }
        self.wire.push_back(Msg::Req(Box::new(req)));
        Ok(())
    }

    /// Deliver every message in flight (and what they provoke).
    pub(super) fn deliver(&mut self, nics: &[NicInfo]) {
        while let Some(m) = self.wire.pop_front() {
            match m {
                Msg::Req(req) => self.on_req(*req, nics),
                Msg::Rep { from, to, rep } => self.on_rep(from, to, *rep),
                Msg::Rtu { to } => {
                    if let Some(c) = self.conn_mut(to) {
                        if c.state == IbState::RepSent {
                            c.state = IbState::Established;
                            self.cma_event(to.0, RDMA_CM_EVENT_ESTABLISHED, 0, None);
                        }
                    }
                }
                Msg::Rej {
                    to,
                    reason,
                    private,
                } => self.on_rej(to, reason, &private[..]),
                Msg::Dreq { from, to } => self.on_dreq(from, to),
                Msg::SidrRep(rep) => self.on_sidr_rep(*rep),
                Msg::Drep { to } => {
                    let Some(c) = self.conn_mut(to) else {
                        continue;
                    };
                    if matches!(c.state, IbState::DreqSent | IbState::DreqRcvd) {
                        self.enter_timewait(to.0);
                        self.disconnected(to.0, 0);
                    }
                }
            }
        }
    }

    /// An event of `id`'s connection as `cma_ib_handler` passes it on: only while the id
    /// is in state CONNECT.
    fn cma_event(&mut self, id: u32, event: u32, status: i32, conn: Option<rdma_ucm_conn_param>) {
        if self.ids.get(&id).map(|i| i.state) == Some(Cma::Connect) {
            self.report(id, event, status, conn);
        }
    }

    /// DREQ or DREP received, or a DREQ unanswered: CONNECT becomes DISCONNECT and the
    /// program hears DISCONNECTED (`cma_ib_handler`).
    fn disconnected(&mut self, id: u32, status: i32) {
        let Some(i) = self.ids.get_mut(&id) else {
            return;
        };
        if i.state == Cma::Connect {
            i.state = Cma::Disconnect;
            self.report(id, RDMA_CM_EVENT_DISCONNECTED, status, None);
        }
    }

    fn on_rep(&mut self, from: (u32, u64), to: (u32, u64), rep: Rep) {
        let Some(c) = self.conn_mut(to) else {
            return;
        };
        if c.state != IbState::ReqSent {
            return;
        }
        c.state = IbState::RepRcvd;
        c.peer = Some(from);
        c.req = None;
        c.remote_qpn = rep.qpn;
        c.initiator_depth = rep.responder_resources;
        c.responder_resources = rep.initiator_depth;
        c.sq_psn = rep.starting_psn;
        c.rnr_retry_count = rep.rnr_retry_count;
        c.av.timeout = ack_timeout(rep.target_ack_delay, c.av.timeout - 1);
        // cma_set_rep_event_data: the REP's whole private data, its depths as the peer
        // offers them; a QP-less id gets CONNECT_RESPONSE (librdmacm moves its own QP and
        // makes ESTABLISHED of it).
        let mut p = conn_param(&rep.private);
        p.responder_resources = rep.initiator_depth;
        p.initiator_depth = rep.responder_resources;
        p.flow_control = rep.flow_control;
        p.rnr_retry_count = rep.rnr_retry_count;
        p.srq = u8::from(rep.srq);
        p.qp_num = rep.qpn;
        if self.ids.get(&to.0).map(|i| i.state) == Some(Cma::Connect) {
            self.report_ece(to.0, RDMA_CM_EVENT_CONNECT_RESPONSE, 0, Some(p), rep.ece);
        }
    }

    fn on_rej(&mut self, to: (u32, u64), reason: u32, private: &[u8]) {
        let Some(c) = self.conn_mut(to) else {
            return;
        };
        match c.state {
            IbState::ReqSent | IbState::RepSent | IbState::ReqRcvd => {
                if reason == IB_CM_REJ_STALE_CONN {
                    self.enter_timewait(to.0);
                } else {
                    c.state = IbState::Idle;
                    c.req = None;
                }
            }
            IbState::DreqSent | IbState::RepRcvd | IbState::Established => {
                self.enter_timewait(to.0)
            }
            _ => return,
        }
        self.cma_event(
            to.0,
            RDMA_CM_EVENT_REJECTED,
            reason as i32,
            Some(conn_param(private)),
        );
    }

    fn on_dreq(&mut self, from: (u32, u64), to: (u32, u64)) {
        let Some(c) = self.conn_mut(to) else {
            // `cm_dreq_handler`: no such connection (any more): answer with a DREP.
            self.wire.push_back(Msg::Drep { to: from });
            return;
        };
        match c.state {
            IbState::RepSent | IbState::DreqSent | IbState::Established => {
                c.state = IbState::DreqRcvd;
                self.disconnected(to.0, 0);
            }
            IbState::Timewait => self.wire.push_back(Msg::Drep { to: from }),
            _ => {}
        }
    }

    /// A REQ arrives at its NIC (`cm_req_handler`, `cma_ib_req_handler`): no listener on
    /// the service id there is a REJ "invalid service id"; a listener the CM cannot hand it
    /// to (the addresses, the QP type, the state) a REJ "consumer defined"; a listener with
    /// no room left leaves it to the sender's retries; else a new id and CONNECT_REQUEST.
    /// A SIDR REQ (`cm_sidr_req_handler`) is answered "unsupported" without a listener and
    /// "reject" by one that cannot take it (`cm_destroy_id` in `IB_CM_SIDR_REQ_RCVD`).
    fn on_req(&mut self, req: Req, nics: &[NicInfo]) {
        let from = req.from;
        let sent = match req.sidr {
            true => IbState::SidrReqSent,
            false => IbState::ReqSent,
        };
        if self.conn_mut(from).map(|c| c.state) != Some(sent) {
            return;
        }
        let ps = ((req.service_id >> 16) & 0xffff) as u16;
        let port = (req.service_id & 0xffff) as u16;
        let owners = self.binds.get(&(ps, port)).cloned().unwrap_or_default();
        let listening = |st: &State, i: &u32| {
            st.ids
                .get(i)
                .is_some_and(|l| l.state == Cma::Listen && l.dev.is_none_or(|d| d.nic == req.nic))
        };
        if !owners.iter().any(|i| listening(self, i)) {
            match req.sidr {
                true => self.sidr_rep_to(from, IB_SIDR_UNSUPPORTED),
                false => self.reject_req(from, IB_CM_REJ_INVALID_SERVICE_ID),
            }
            return;
        }
        match self.accept_req(&req, &owners, nics) {
            Ok(()) => {}
            Err(_) if req.sidr => self.sidr_rep_to(from, IB_SIDR_REJECT),
            Err(libc::ENOMEM) => {
                let ms = 2 * to_ms(req.path.packet_life_time) + to_ms(CM_RESPONSE_TIMEOUT);
                self.at(
                    ms,
                    Due::ReqRetry {
                        id: from.0,
                        serial: from.1,
                    },
                );
            }
            Err(_) => self.reject_req(from, IB_CM_REJ_CONSUMER_DEFINED),
        }
    }

    /// A REJ to the sender of a REQ that made no id (`cm_issue_rej`).
    fn reject_req(&mut self, to: (u32, u64), reason: u32) {
        self.wire.push_back(Msg::Rej {
            to,
            reason,
            private: Box::new([0; IB_CM_REJ_PRIVATE_DATA_SIZE]),
        });
    }

    /// `cma_ib_id_from_event`, `cma_ib_new_conn_id`, `cma_ib_acquire_dev` and
    /// `ucma_connect_event_handler` for a REQ: the new id, or why none.
    fn accept_req(&mut self, req: &Req, owners: &[u32], nics: &[NicInfo]) -> Result<(), i32> {
        let nic = &nics[req.nic];
        // cma_save_ip_info: the CM header of an IP-addressed REQ (else AF_IB).
        let hdr = parse_cma_hdr(&req.private)?;
        if let Some((src, dst)) = hdr {
            // The net device the REQ came through: IPoIB takes it only for its own address
            // (`ib_get_net_dev_by_params`), RoCE by the GID it arrived at. Then
            // `validate_net_dev`: neither address a loopback or wildcard one, and the way
            // back to the requester through that device.
            let (sip, dip) = (src.ipv4(), dst.ipv4());
            if !nic.roce && dip != Some(nic.ip) {
                return Err(libc::ENODEV);
            }
            let routable = |a: Option<[u8; 4]>| a.is_some_and(super::addr::in_subnet);
            if !routable(sip) || !routable(dip) {
                return Err(libc::EHOSTUNREACH);
            }
        }
        let listener = owners
            .iter()
            .copied()
            .find(|l| {
                self.ids.get(l).is_some_and(|l| {
                    l.state == Cma::Listen
                        && l.dev.is_none_or(|d| d.nic == req.nic)
                        && match_private_data(l, hdr.as_ref().map(|h| &h.1))
                })
            })
            .ok_or(libc::EINVAL)?;
        let l = &self.ids[&listener];
        if l.qp_type != 0 && l.qp_type != req.qp_type {
            return Err(libc::EINVAL);
        }
        if l.backlog == 0 {
            return Err(libc::ENOMEM);
        }
        let (file, ps, lport, luid) = (l.file, l.ps, l.src.port(), l.uid);
        // The new id's addresses (cma_save_ip4_info): this side's is the REQ's destination
        // on the listener's port, the other the REQ's source.
        let (src, dst) = match hdr {
            Some((s, d)) => (d.with_port(lport), s),
            None => (l.src, Addr::None),
        };
        let sgid = if nic.roce { src.gid() } else { nic.gid(0) };
        let sgid_index = nic.sgid_index(&sgid).ok_or(libc::ENODEV)?;
        // The path from the REQ (`cm_format_paths_from_req`), seen from here.
        let p = &req.path;
        let path = Path {
            service_id: req.service_id,
            dgid: p.sgid,
            sgid: p.dgid,
            dlid: p.slid,
            slid: p.dlid,
            flow_label: p.flow_label,
            hop_limit: if nic.roce {
                route::RESPONSE_HOP_LIMIT
            } else {
                0
            },
            traffic_class: p.traffic_class,
            reversible: true,
            numb_path: 0,
            pkey: p.pkey,
            sl: p.sl,
            mtu: p.mtu,
            rate: p.rate,
            packet_life_time: req.local_ack_timeout.saturating_sub(1),
            roce: nics
                .get(
                    self.ids
                        .get(&req.from.0)
                        .and_then(|i| i.dev)
                        .map_or(0, |d| d.nic),
                )
                .filter(|_| nic.roce)
                .map(|a| (false, a.mac())),
        };
        let serial = self.serial();
        let new = self.new_id(file, 0, ps, req.qp_type);
        let i = self.ids.get_mut(&new).expect("just made");
        i.state = Cma::Connect;
        i.src = src;
        i.dst = dst;
        i.dev = Some(super::Dev {
            nic: req.nic,
            sgid_index,
        });
        i.sgid = sgid;
        i.dgid = path.dgid;
        i.pkey = if nic.roce { 0 } else { DEFAULT_PKEY };
        i.route = Some(path);
        i.conn = Some(Conn {
            serial,
            state: if req.sidr {
                IbState::SidrReqRcvd
            } else {
                IbState::ReqRcvd
            },
            peer: Some(req.from),
            local_qpn: 0,
            remote_qpn: req.qpn,
            sq_psn: req.starting_psn,
            rq_psn: 0,
            initiator_depth: req.responder_resources,
            responder_resources: req.initiator_depth,
            retry_count: req.retry_count,
            rnr_retry_count: req.rnr_retry_count,
            path_mtu: p.mtu,
            qp_type: req.qp_type,
            av: Av {
                path,
                sgid_index,
                timeout: req.local_ack_timeout,
            },
            req: None,
            retries: 0,
        });
        if let Some(l) = self.ids.get_mut(&listener) {
            l.backlog -= 1;
        }
        if let Some(c) = self.conn_mut(req.from) {
            c.peer = Some((new, serial));
        }
        let offset = if hdr.is_some() { CMA_HDR_SIZE } else { 0 };
        let mut resp = rdma_ucm_event_resp::new_zeroed();
        resp.uid = luid;
        resp.id = new;
        resp.event = RDMA_CM_EVENT_CONNECT_REQUEST;
        if req.sidr {
            // cma_ib_req_handler for a SIDR REQ: only its private data after the header
            // (no QP number, Q_Key or address yet).
            resp.set_ud(&super::sidr::ud_param(&req.private[offset..]));
        } else {
            // cma_set_req_event_data: the private data after the CM header, the REQ's
            // depths as this side sees them.
            let mut c = conn_param(&req.private[offset..]);
            c.responder_resources = req.initiator_depth;
            c.initiator_depth = req.responder_resources;
            c.flow_control = req.flow_control;
            c.retry_count = req.retry_count;
            c.rnr_retry_count = req.rnr_retry_count;
            c.srq = u8::from(req.srq);
            c.qp_num = req.qpn;
            resp.set_conn(&c);
        }
        resp.ece = req.ece;
        if let Some(f) = self.files.get_mut(&file) {
            f.push(Queued {
                ctx: listener,
                conn_req: Some(new),
                resp,
            });
        }
        Ok(())
    }

    /// A timer fires.
    pub(super) fn fire(&mut self, due: Due, nics: &[NicInfo]) {
        match due {
            Due::Timewait { id, serial } => {
                let Some(c) = self.conn_mut((id, serial)) else {
                    return;
                };
                if c.state != IbState::Timewait {
                    return;
                }
                c.state = IbState::Idle;
                if self.ids.get(&id).map(|i| i.state) == Some(Cma::Disconnect) {
                    self.report(id, RDMA_CM_EVENT_TIMEWAIT_EXIT, 0, None);
                }
            }
            Due::ReqRetry { id, serial } => {
                let Some(c) = self.conn_mut((id, serial)) else {
                    return;
                };
                if c.state != IbState::ReqSent || c.peer.is_some() {
                    return;
                }
                if c.retries == 0 {
                    // `cm_process_send_error`: REQ_ERROR, the CM gives up.
                    c.state = IbState::Idle;
                    c.req = None;
                    self.cma_event(id, RDMA_CM_EVENT_UNREACHABLE, -libc::ETIMEDOUT, None);
                    return;
                }
                c.retries -= 1;
                if let Some(req) = c.req.clone() {
                    self.on_req(*req, nics);
                }
            }
            Due::AddrTimeout { id, req } => {
                let Some(i) = self.ids.get_mut(&id) else {
                    return;
                };
                if i.state == Cma::AddrQuery && i.addr_req == req {
                    i.state = Cma::AddrBound;
                    self.report(id, RDMA_CM_EVENT_ADDR_ERROR, -libc::ETIMEDOUT, None);
                }
            }
        }
    }
}
