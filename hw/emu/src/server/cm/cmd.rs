//! The `rdma_ucm` commands as `ucma_write` frames and dispatches them
//! (drivers/infiniband/core/ucma.c): the header, then each command's struct, checked and
//! answered as the kernel's handler does. Binding, resolution and queries are in
//! [`super::bind`]; the IB CM's part of connect, accept, reject and disconnect in
//! [`super::ib`].
//!
//! One difference in framing: the kernel copies each command's struct from the program's
//! memory whatever `in` says, so a write shorter than the struct reads on past it; here a
//! command is what the write holds, and a write shorter than its struct is `EINVAL`
//! (CONNECT and ACCEPT take the shorter struct of an older librdmacm, without `ece`, as the
//! kernel does).

use super::addr::{Addr, QPT_UD};
use super::ib::{padded, IbState, Msg, Rep};
use super::route::{Path, CA_ACK_DELAY};
use super::{Cm, Cma, Outcome, State};
use crate::abi::ucma::not_in_headers::*;
use crate::abi::ucma::*;
use crate::abi::uverbs::ib_uverbs_qp_attr;
use crate::abi::{self, FromBytes, Immutable, IntoBytes};
use std::mem::size_of;

/// `max_backlog` (the `net.rdma_ucm.max_backlog` sysctl's default).
const MAX_BACKLOG: u32 = 1024;
/// The number of `rdma_ucm` commands (`ucma_cmd_table`).
const COMMANDS: u32 = RDMA_USER_CM_CMD_JOIN_MCAST + 1;

/// One command of one file.
pub(super) struct Call<'a> {
    pub(super) cm: &'a Cm,
    pub(super) file: u64,
    pub(super) space: u16,
    pub(super) pid: i32,
    /// The command's bytes after the header.
    pub(super) body: &'a [u8],
    /// `hdr.in`: the bytes of the command the program says it wrote.
    pub(super) in_len: usize,
    /// `hdr.out`: the room of its response.
    pub(super) out: usize,
}

/// A command's result: `Err` is the errno `write()` fails with.
pub(super) type Res = Result<(), i32>;

impl Call<'_> {
    /// The command's struct.
    pub(super) fn req<T: FromBytes>(&self) -> Result<T, i32> {
        abi::read(self.body, 0).map_err(|_| libc::EINVAL)
    }

    /// The command's struct from its first `min` bytes on, zero-extended (CONNECT and
    /// ACCEPT: `min_t(in_len, sizeof(cmd))`, at least `offsetofend(reserved)`).
    fn req_from<T: FromBytes + IntoBytes>(&self, min: usize) -> Result<(T, usize), i32> {
        let n = self.in_len.min(size_of::<T>()).min(self.body.len());
        if n < min {
            return Err(libc::EINVAL);
        }
        let mut t = T::new_zeroed();
        t.as_mut_bytes()[..n].copy_from_slice(&self.body[..n]);
        Ok((t, n))
    }

    /// Copy to the program (`copy_to_user`): `EFAULT` if it is not there.
    pub(super) fn put(&self, addr: u64, bytes: &[u8]) -> Res {
        match self.cm.spaces.copy_out(self.space, addr, bytes) {
            true => Ok(()),
            false => Err(libc::EFAULT),
        }
    }

    /// Write `resp` to `addr`, at most `room` bytes of it.
    pub(super) fn respond<T: IntoBytes + Immutable>(
        &self,
        addr: u64,
        resp: &T,
        room: usize,
    ) -> Res {
        let b = resp.as_bytes();
        self.put(addr, &b[..room.min(b.len())])
    }
}

impl Cm {
    /// One `write()` on file `file`.
    pub(crate) fn command(&self, file: u64, bytes: &[u8]) -> Outcome {
        let Ok(hdr) = abi::read::<rdma_ucm_cmd_hdr>(bytes, 0) else {
            return Outcome::Errno(libc::EINVAL);
        };
        if hdr.cmd >= COMMANDS || usize::from(hdr.in_) + size_of::<rdma_ucm_cmd_hdr>() > bytes.len()
        {
            return Outcome::Errno(libc::EINVAL);
        }
        let mut st = self.lock();
        let Some(f) = st.files.get(&file) else {
            return Outcome::Errno(libc::EBADF);
        };
        let call = Call {
            cm: self,
            file,
            space: f.space,
            pid: f.pid,
            body: &bytes[size_of::<rdma_ucm_cmd_hdr>()..],
            in_len: usize::from(hdr.in_),
            out: usize::from(hdr.out),
        };
        let r = if hdr.cmd == RDMA_USER_CM_CMD_GET_EVENT {
            st.get_event(&call)
        } else {
            st.dispatch(hdr.cmd, &call).map(|()| Outcome::Done)
        };
        st.deliver(&self.nics);
        if crate::server::trace() {
            eprintln!(
                "mlx5-emu: rdma_cm pid {} command {}: {r:?}",
                call.pid, hdr.cmd
            );
        }
        r.unwrap_or_else(Outcome::Errno)
    }
}

impl State {
    fn dispatch(&mut self, cmd: u32, c: &Call<'_>) -> Res {
        let nics = &c.cm.nics[..];
        match cmd {
            RDMA_USER_CM_CMD_CREATE_ID => self.create_id(c),
            RDMA_USER_CM_CMD_DESTROY_ID => self.destroy_id(c),
            RDMA_USER_CM_CMD_BIND_IP => self.bind_ip(c, nics),
            RDMA_USER_CM_CMD_BIND => self.bind_cmd(c, nics),
            RDMA_USER_CM_CMD_RESOLVE_IP => self.resolve_ip(c, nics),
            RDMA_USER_CM_CMD_RESOLVE_ADDR => self.resolve_addr(c, nics),
            RDMA_USER_CM_CMD_RESOLVE_ROUTE => self.resolve_route(c, nics),
            RDMA_USER_CM_CMD_QUERY_ROUTE => self.query_route(c, nics),
            RDMA_USER_CM_CMD_QUERY => self.query(c, nics),
            RDMA_USER_CM_CMD_CONNECT => self.connect(c, nics),
            RDMA_USER_CM_CMD_LISTEN => self.listen(c, nics),
            RDMA_USER_CM_CMD_ACCEPT => self.accept(c),
            RDMA_USER_CM_CMD_REJECT => self.reject(c),
            RDMA_USER_CM_CMD_DISCONNECT => {
                let cmd: rdma_ucm_disconnect = c.req()?;
                let id = self.ctx_dev(c.file, cmd.id)?;
                self.disconnect(id)
            }
            RDMA_USER_CM_CMD_INIT_QP_ATTR => self.init_qp_attr_cmd(c),
            RDMA_USER_CM_CMD_SET_OPTION => self.set_option(c, nics),
            RDMA_USER_CM_CMD_NOTIFY => self.notify(c),
            RDMA_USER_CM_CMD_JOIN_IP_MCAST | RDMA_USER_CM_CMD_JOIN_MCAST => self.join(cmd, c),
            RDMA_USER_CM_CMD_LEAVE_MCAST => {
                if c.out < size_of::<rdma_ucm_destroy_id_resp>() {
                    return Err(libc::ENOSPC);
                }
                let _: rdma_ucm_destroy_id = c.req()?;
                // No multicast id was ever made (`xa_load` finds none).
                Err(libc::ENOENT)
            }
            RDMA_USER_CM_CMD_MIGRATE_ID => self.migrate(c),
            // GET_OPTION has no handler.
            _ => Err(libc::ENOSYS),
        }
    }

    /// `ucma_get_ctx`: id `id` of file `file` (`ENOENT`: no such id; `EINVAL`: another
    /// file's).
    pub(super) fn ctx(&self, file: u64, id: u32) -> Result<u32, i32> {
        match self.ids.get(&id) {
            None => Err(libc::ENOENT),
            Some(i) if i.file != file => Err(libc::EINVAL),
            Some(_) => Ok(id),
        }
    }

    /// `ucma_get_ctx_dev`: the same, bound to a device (`EINVAL` if not).
    pub(super) fn ctx_dev(&self, file: u64, id: u32) -> Result<u32, i32> {
        let id = self.ctx(file, id)?;
        match self.ids[&id].dev {
            Some(_) => Ok(id),
            None => Err(libc::EINVAL),
        }
    }

    fn create_id(&mut self, c: &Call<'_>) -> Res {
        if c.out < size_of::<rdma_ucm_create_id_resp>() {
            return Err(libc::ENOSPC);
        }
        let cmd: rdma_ucm_create_id = c.req()?;
        let qp_type = super::addr::qp_type_of(cmd.ps, cmd.qp_type)?;
        let id = self.new_id(c.file, cmd.uid, cmd.ps, qp_type);
        let done = c.respond(cmd.response, &rdma_ucm_create_id_resp { id }, usize::MAX);
        if done.is_err() {
            self.destroy(id);
        }
        done
    }

    fn destroy_id(&mut self, c: &Call<'_>) -> Res {
        if c.out < size_of::<rdma_ucm_destroy_id_resp>() {
            return Err(libc::ENOSPC);
        }
        let cmd: rdma_ucm_destroy_id = c.req()?;
        let id = self.ctx(c.file, cmd.id)?;
        let events_reported = self.destroy(id);
        c.respond(
            cmd.response,
            &rdma_ucm_destroy_id_resp { events_reported },
            usize::MAX,
        )
    }

    /// `ucma_destroy_private_ctx`: the id goes (telling its peer, `cm_destroy_id`), its
    /// unread events with it, and the ids of connect requests it had not reported yet
    /// (each rejected). Returns the events the program had read.
    pub(super) fn destroy(&mut self, id: u32) -> u32 {
        self.destroy_conn(id);
        self.release_port(id);
        let Some(i) = self.ids.remove(&id) else {
            return 0;
        };
        let mut pending = Vec::new();
        if let Some(f) = self.files.get_mut(&i.file) {
            f.ids.retain(|&x| x != id);
            f.queue.retain(|q| {
                if q.ctx != id {
                    return true;
                }
                pending.extend(q.conn_req);
                false
            });
        }
        for conn_req in pending {
            self.destroy(conn_req);
        }
        i.events_reported
    }

    /// GET_EVENT (`ucma_get_event`): the oldest event of the file. The program's count
    /// was taken by the preload, which blocked (or answered `EAGAIN`) as the kernel's
    /// read of an empty list would.
    fn get_event(&mut self, c: &Call<'_>) -> Result<Outcome, i32> {
        let resp_len = size_of::<rdma_ucm_event_resp>();
        if c.out < resp_len - size_of::<u32>() - size_of::<rdma_ucm_ece>() {
            return Err(libc::ENOSPC);
        }
        let cmd: rdma_ucm_get_event = c.req()?;
        let f = self.files.get_mut(&c.file).ok_or(libc::EBADF)?;
        let Some(q) = f.queue.front() else {
            return Ok(Outcome::NoEvent);
        };
        c.respond(cmd.response, &q.resp, c.out)?;
        let q = f.queue.pop_front().expect("a front");
        if let Some(i) = self.ids.get_mut(&q.ctx) {
            i.events_reported += 1;
            if q.resp.event == RDMA_CM_EVENT_CONNECT_REQUEST {
                i.backlog += 1;
            }
        }
        Ok(Outcome::Done)
    }

    fn connect(&mut self, c: &Call<'_>, nics: &[super::NicInfo]) -> Res {
        let reserved_end = size_of::<rdma_ucm_conn_param>() + 2 * size_of::<u32>();
        let (cmd, n): (rdma_ucm_connect, usize) = c.req_from(reserved_end)?;
        if cmd.conn_param.valid == 0 {
            return Err(libc::EINVAL);
        }
        let id = self.ctx_dev(c.file, cmd.id)?;
        let ece = if n >= size_of::<rdma_ucm_connect>() {
            cmd.ece
        } else {
            rdma_ucm_ece::default()
        };
        let i = self.ids.get_mut(&id).expect("checked");
        if i.state != Cma::RouteResolved {
            return Err(libc::EINVAL);
        }
        i.state = Cma::Connect;
        i.qp_num = cmd.conn_param.qp_num & 0x00ff_ffff;
        i.srq = cmd.conn_param.srq != 0;
        i.ece = ece;
        let r = self.send_req(id, &cmd.conn_param, ece, nics);
        if r.is_err() {
            if let Some(i) = self.ids.get_mut(&id) {
                i.state = Cma::RouteResolved;
            }
        }
        r
    }

    fn listen(&mut self, c: &Call<'_>, nics: &[super::NicInfo]) -> Res {
        let cmd: rdma_ucm_listen = c.req()?;
        let id = self.ctx(c.file, cmd.id)?;
        let backlog = match cmd.backlog {
            0 => MAX_BACKLOG,
            b if b > MAX_BACKLOG => MAX_BACKLOG,
            b => b,
        };
        // rdma_listen: an unbound id is bound to the IPv4 wildcard first.
        if self.ids[&id].state != Cma::AddrBound {
            let any = Addr::In {
                ip: [0; 4],
                port: 0,
            };
            self.bind(id, any, c.pid, nics)?;
        }
        let i = &self.ids[&id];
        if i.reuseaddr {
            self.check_port(id, false)?;
            self.ids.get_mut(&id).expect("checked").reuseaddr = false;
        }
        let i = self.ids.get_mut(&id).expect("checked");
        i.state = Cma::Listen;
        i.backlog = backlog;
        Ok(())
    }

    fn accept(&mut self, c: &Call<'_>) -> Res {
        let reserved_end = size_of::<u64>() + size_of::<rdma_ucm_conn_param>() + 8;
        let (cmd, n): (rdma_ucm_accept, usize) = c.req_from(reserved_end)?;
        let id = self.ctx_dev(c.file, cmd.id)?;
        let ece = if n >= size_of::<rdma_ucm_accept>() {
            cmd.ece
        } else {
            rdma_ucm_ece::default()
        };
        let i = self.ids.get_mut(&id).expect("checked");
        if i.state != Cma::Connect {
            return Err(libc::EINVAL);
        }
        i.ece = ece;
        if i.qp_type == QPT_UD {
            // rdma_accept of a UD id: the SIDR REP (`cma_send_sidr_rep`).
            let p = &cmd.conn_param;
            let (qpn, private) = match p.valid {
                0 => (i.qp_num, &[][..]),
                _ => (p.qp_num, &p.private_data[..usize::from(p.private_data_len)]),
            };
            let r = self.send_sidr_rep(id, IB_SIDR_SUCCESS, qpn, private);
            match r {
                Ok(()) => self.ids.get_mut(&id).expect("checked").uid = cmd.uid,
                // rdma_accept's failure: the request is rejected.
                Err(_) => drop(self.send_sidr_rep(id, IB_SIDR_REJECT, 0, &[])),
            }
            return r;
        }
        let r = if cmd.conn_param.valid != 0 {
            i.qp_num = cmd.conn_param.qp_num & 0x00ff_ffff;
            i.srq = cmd.conn_param.srq != 0;
            let r = self.send_rep(id, &cmd.conn_param, ece);
            if r.is_ok() {
                self.ids.get_mut(&id).expect("checked").uid = cmd.uid;
            }
            r
        } else {
            // The active side accepts the REP (`cma_rep_recv`): the RTU.
            self.send_rtu(id)
        };
        if r.is_err() {
            // rdma_accept's failure: the connection is rejected.
            let _ = self.send_rej(id, IB_CM_REJ_CONSUMER_DEFINED, &[]);
        }
        r
    }

    /// `cma_accept_ib`, `ib_send_cm_rep`: the REP of a received REQ.
    fn send_rep(&mut self, id: u32, p: &rdma_ucm_conn_param, ece: rdma_ucm_ece) -> Res {
        if usize::from(p.private_data_len) > IB_CM_REP_PRIVATE_DATA_SIZE {
            return Err(libc::EINVAL);
        }
        let i = self.ids.get_mut(&id).ok_or(libc::EINVAL)?;
        let (seq, qpn, srq) = (i.seq_num, i.qp_num, i.srq);
        let c = i.conn.as_mut().ok_or(libc::EINVAL)?;
        if c.state != IbState::ReqRcvd {
            return Err(libc::EINVAL);
        }
        let rep = Rep {
            qpn,
            starting_psn: seq,
            responder_resources: p.responder_resources,
            initiator_depth: p.initiator_depth,
            flow_control: p.flow_control,
            rnr_retry_count: p.rnr_retry_count.min(7),
            srq,
            target_ack_delay: CA_ACK_DELAY,
            private: padded(&p.private_data[..usize::from(p.private_data_len)]),
            ece,
        };
        c.state = IbState::RepSent;
        c.initiator_depth = p.initiator_depth;
        c.responder_resources = p.responder_resources;
        c.rq_psn = seq;
        c.local_qpn = qpn;
        let (from, to) = ((id, c.serial), c.peer.ok_or(libc::EINVAL)?);
        self.wire.push_back(Msg::Rep {
            from,
            to,
            rep: Box::new(rep),
        });
        Ok(())
    }

    /// `ib_send_cm_rtu`: the active side's answer to the REP.
    fn send_rtu(&mut self, id: u32) -> Res {
        let c = self
            .ids
            .get_mut(&id)
            .and_then(|i| i.conn.as_mut())
            .ok_or(libc::EINVAL)?;
        if c.state != IbState::RepRcvd {
            return Err(libc::EINVAL);
        }
        c.state = IbState::Established;
        if let Some(to) = c.peer {
            self.wire.push_back(Msg::Rtu { to });
        }
        Ok(())
    }

    fn reject(&mut self, c: &Call<'_>) -> Res {
        let cmd: rdma_ucm_reject = c.req()?;
        let reason = match u32::from(cmd.reason) {
            0 => IB_CM_REJ_CONSUMER_DEFINED,
            r @ (IB_CM_REJ_CONSUMER_DEFINED | IB_CM_REJ_VENDOR_OPTION_NOT_SUPPORTED) => r,
            _ => return Err(libc::EINVAL),
        };
        let id = self.ctx_dev(c.file, cmd.id)?;
        let len = usize::from(cmd.private_data_len);
        if self.ids[&id].qp_type == QPT_UD {
            // `cma_send_sidr_rep` with `IB_SIDR_REJECT`.
            return self.send_sidr_rep(id, IB_SIDR_REJECT, 0, &cmd.private_data[..len]);
        }
        self.send_rej(id, reason, &cmd.private_data[..len])
    }

    fn init_qp_attr_cmd(&mut self, c: &Call<'_>) -> Res {
        if c.out < size_of::<ib_uverbs_qp_attr>() {
            return Err(libc::ENOSPC);
        }
        let cmd: rdma_ucm_init_qp_attr = c.req()?;
        if cmd.qp_state > u32::from(crate::server::qp::state::ERR) {
            return Err(libc::EINVAL);
        }
        let id = self.ctx_dev(c.file, cmd.id)?;
        let attr = self.init_qp_attr(&self.ids[&id], cmd.qp_state as u8)?;
        c.respond(cmd.response, &attr, usize::MAX)
    }

    fn set_option(&mut self, c: &Call<'_>, nics: &[super::NicInfo]) -> Res {
        let cmd: rdma_ucm_set_option = c.req()?;
        let id = self.ctx(c.file, cmd.id)?;
        // memdup_user: the value, `EFAULT` if it is not there.
        let mut val = vec![0u8; cmd.optlen as usize];
        if !c.cm.spaces.copy_in(c.space, cmd.optval, &mut val) {
            return Err(libc::EFAULT);
        }
        let i = self.ids.get_mut(&id).expect("checked");
        let int = |v: &[u8]| -> Result<bool, i32> {
            let b: [u8; 4] = v.try_into().map_err(|_| libc::EINVAL)?;
            Ok(i32::from_ne_bytes(b) != 0)
        };
        match (cmd.level, cmd.optname) {
            (RDMA_OPTION_ID, RDMA_OPTION_ID_TOS) => {
                let [tos] = val[..] else {
                    return Err(libc::EINVAL);
                };
                i.tos = Some(tos);
            }
            (RDMA_OPTION_ID, RDMA_OPTION_ID_REUSEADDR) => {
                let reuse = int(&val)?;
                // rdma_set_reuseaddr.
                if (reuse && i.state != Cma::Listen) || i.state == Cma::Idle {
                    i.reuseaddr = reuse;
                } else {
                    return Err(libc::EINVAL);
                }
            }
            (RDMA_OPTION_ID, RDMA_OPTION_ID_AFONLY) => {
                let only = int(&val)?;
                if !matches!(i.state, Cma::Idle | Cma::AddrBound) {
                    return Err(libc::EINVAL);
                }
                i.afonly = only;
                i.afonly_set = true;
            }
            (RDMA_OPTION_ID, RDMA_OPTION_ID_ACK_TIMEOUT) => {
                let [t] = val[..] else {
                    return Err(libc::EINVAL);
                };
                if i.qp_type != super::addr::QPT_RC {
                    return Err(libc::EINVAL);
                }
                i.timeout = Some(t);
            }
            (RDMA_OPTION_IB, RDMA_OPTION_IB_PATH) => return self.set_ib_path(id, &val, nics),
            _ => return Err(libc::ENOSYS),
        }
        Ok(())
    }

    /// `ucma_set_ib_path`, `rdma_set_ib_path`: a route the program found itself (an
    /// `ib_path_rec_data` list; the primary bidirectional one is taken).
    fn set_ib_path(&mut self, id: u32, val: &[u8], nics: &[super::NicInfo]) -> Res {
        let each = size_of::<ib_path_rec_data>();
        if val.len() % each != 0 {
            return Err(libc::EINVAL);
        }
        let want = IB_PATH_GMP | IB_PATH_PRIMARY | IB_PATH_BIDIRECTIONAL;
        let data = val
            .chunks(each)
            .filter_map(|c| abi::read::<ib_path_rec_data>(c, 0).ok())
            .find(|d| d.flags == want)
            .ok_or(libc::EINVAL)?;
        let i = self.ids.get_mut(&id).expect("checked");
        let dev = i.dev.ok_or(libc::EINVAL)?;
        if i.state != Cma::AddrResolved {
            return Err(libc::EINVAL);
        }
        let r: ibv_path_record =
            abi::read(data.path_rec.as_bytes(), 0).map_err(|_| libc::EINVAL)?;
        let fl_hop = u32::from_be(r.flowlabel_hoplimit);
        let nic = &nics[dev.nic];
        let mut path = Path {
            service_id: u64::from_be(r.service_id),
            dgid: r.dgid,
            sgid: r.sgid,
            dlid: u16::from_be(r.dlid),
            slid: u16::from_be(r.slid),
            flow_label: (fl_hop >> 8) & 0xf_ffff,
            hop_limit: fl_hop as u8,
            traffic_class: r.tclass,
            reversible: r.reversible_numpath & 0x80 != 0,
            numb_path: r.reversible_numpath & 0x7f,
            pkey: u16::from_be(r.pkey),
            sl: (u16::from_be(r.qosclass_sl) & 0xf) as u8,
            mtu: r.mtu & 0x3f,
            rate: r.rate & 0x3f,
            packet_life_time: r.packetlifetime & 0x3f,
            roce: None,
        };
        if nic.roce {
            // cma_iboe_set_path_rec_l2_fields: the destination MAC of the bound netdev.
            let to = nics
                .iter()
                .find(|n| n.gids.iter().any(|g| g.0 == path.dgid))
                .ok_or(libc::ENODEV)?;
            path.roce = Some((true, to.mac()));
        }
        i.route = Some(path);
        i.state = Cma::RouteResolved;
        self.report(id, RDMA_CM_EVENT_ROUTE_RESOLVED, 0, None);
        Ok(())
    }

    /// NOTIFY (`rdma_notify`, `ib_cm_notify`): the program saw its QP's first packet
    /// (`IBV_EVENT_COMM_EST`) before the RTU: the connection is established now.
    fn notify(&mut self, c: &Call<'_>) -> Res {
        let cmd: rdma_ucm_notify = c.req()?;
        let id = self.ctx_dev(c.file, cmd.id)?;
        let conn = self.ids[&id].conn.as_ref().ok_or(libc::EINVAL)?;
        match (cmd.event, conn.state) {
            (IBV_EVENT_COMM_EST, IbState::RepSent) => {
                let c = self.ids.get_mut(&id).and_then(|i| i.conn.as_mut());
                c.expect("checked").state = IbState::Established;
                if self.ids[&id].state == Cma::Connect {
                    self.report(id, RDMA_CM_EVENT_ESTABLISHED, 0, None);
                }
                Ok(())
            }
            (IBV_EVENT_COMM_EST, IbState::Established) => Err(libc::EISCONN),
            // cm_migrate: there is no alternate path to load.
            (IBV_EVENT_PATH_MIG, IbState::Established) => Ok(()),
            _ => Err(libc::EINVAL),
        }
    }

    /// JOIN_IP_MCAST, JOIN_MCAST (`ucma_process_join`, `rdma_join_multicast`): checked as
    /// the kernel checks them; a UD id's join is not emulated (the emulated CM makes no
    /// group join, though verbs' ATTACH_MCAST works): `ENOSYS`, the kernel's answer for a
    /// port with neither RoCE nor IB multicast.
    fn join(&mut self, cmd: u32, c: &Call<'_>) -> Res {
        let id = if cmd == RDMA_USER_CM_CMD_JOIN_IP_MCAST {
            let j: rdma_ucm_join_ip_mcast = c.req()?;
            let a = Addr::parse(j.addr.as_bytes()).map_err(|_| libc::EINVAL)?;
            if a.size() == 0 || a.size() > size_of::<sockaddr_in6>() {
                return Err(libc::EINVAL);
            }
            if c.out < size_of::<rdma_ucm_create_id_resp>() {
                return Err(libc::ENOSPC);
            }
            j.id
        } else {
            let j: rdma_ucm_join_mcast = c.req()?;
            let a = Addr::parse(j.addr.as_bytes()).map_err(|_| libc::EINVAL)?;
            if a.size() == 0 {
                return Err(libc::EINVAL);
            }
            if c.out < size_of::<rdma_ucm_create_id_resp>() {
                return Err(libc::ENOSPC);
            }
            if usize::from(j.addr_size) != a.size()
                || u32::from(j.join_flags) > RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER
            {
                return Err(libc::EINVAL);
            }
            j.id
        };
        let id = self.ctx_dev(c.file, id)?;
        let i = &self.ids[&id];
        if !matches!(i.state, Cma::AddrBound | Cma::AddrResolved) || i.qp_type != QPT_UD {
            return Err(libc::EINVAL);
        }
        Err(libc::ENOSYS)
    }

    /// MIGRATE_ID (`ucma_migrate_id`): the id moves to this file with its unread events.
    /// `fd` is the preload's token for the program's old file (`crate::cm_client`):
    /// `u32::MAX` for an fd that is not open (`ENOENT`), 0 for one that is not an rdma_cm
    /// file (`EINVAL`).
    fn migrate(&mut self, c: &Call<'_>) -> Res {
        let cmd: rdma_ucm_migrate_id = c.req()?;
        if cmd.fd == u32::MAX {
            return Err(libc::ENOENT);
        }
        let old = *self.tokens.get(&(c.pid, cmd.fd)).ok_or(libc::EINVAL)?;
        let id = self.ctx(old, cmd.id)?;
        let moved: Vec<_> = {
            let f = self.files.get_mut(&old).expect("a file");
            f.ids.retain(|&x| x != id);
            let (moved, kept): (Vec<_>, Vec<_>) = f.queue.drain(..).partition(|q| q.ctx == id);
            f.queue = kept.into();
            moved
        };
        let i = self.ids.get_mut(&id).expect("checked");
        i.file = c.file;
        let events_reported = i.events_reported;
        let f = self.files.get_mut(&c.file).expect("the caller's file");
        f.ids.push(id);
        for q in moved {
            f.push(q);
        }
        c.respond(
            cmd.response,
            &rdma_ucm_migrate_resp { events_reported },
            usize::MAX,
        )
    }
}
