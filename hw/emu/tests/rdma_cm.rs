//! The emulated `rdma_ucm`: commands written as librdmacm writes them to
//! `/dev/infiniband/rdma_cm`, straight to a fabric server in this process (no preload, no
//! librdmacm), each answered with the errno or the event the kernel's ucma.c / cma.c /
//! cm.c give for it. The server reaches this test's memory as it reaches a program's,
//! through its pid.

use mlx5_emu::abi::ucma::not_in_headers::*;
use mlx5_emu::abi::ucma::*;
use mlx5_emu::abi::uverbs::ib_uverbs_qp_attr;
use mlx5_emu::abi::{FromZeros, Immutable, IntoBytes};
use mlx5_emu::cm_client::Direct;
use mlx5_emu::server::{serve, Link, Options};
use std::mem::size_of;
use std::time::Duration;

/// `IB_QPS_INIT`, `IB_QPS_RTR`, `IB_QPS_RTS`.
const INIT: u32 = 1;
const RTR: u32 = 2;
const RTS: u32 = 3;
/// `IB_QPT_RC`.
const QPT_RC: u8 = 2;
/// `IB_QP_STATE`, `IB_QP_ACCESS_FLAGS`, `IB_QP_PKEY_INDEX`, `IB_QP_PORT`.
const QP_BASE_MASK: u32 = 1 | (1 << 3) | (1 << 4) | (1 << 5);

/// A fabric of two NICs served by a thread of this process; its socket.
fn fabric(name: &str, link: Link) -> String {
    let dir = std::env::temp_dir().join(format!("mlx5-emu-cm-{}-{name}", std::process::id()));
    let options = Options {
        name: name.into(),
        nics: 2,
        link,
        dir,
    };
    let socket = options.socket().to_str().unwrap().to_string();
    std::thread::spawn(move || serve(options).unwrap());
    for _ in 0..500 {
        if std::os::unix::net::UnixStream::connect(&socket).is_ok() {
            return socket;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    panic!("no server at {socket}");
}

/// One rdma_cm file, with the commands librdmacm writes.
struct File(Direct);

fn open(socket: &str) -> File {
    File(Direct::open(socket).unwrap())
}

fn ip4(ip: [u8; 4], port: u16) -> __kernel_sockaddr_storage {
    let sin = sockaddr_in {
        sin_family: libc::AF_INET as u16,
        sin_port: port.to_be(),
        sin_addr: u32::from_ne_bytes(ip),
        __pad: [0; 8],
    };
    let mut s = __kernel_sockaddr_storage::new_zeroed();
    s.as_mut_bytes()[..size_of::<sockaddr_in>()].copy_from_slice(sin.as_bytes());
    s
}

impl File {
    /// `cmd` with its header (`in` the struct's size, `out` as given).
    fn write<T: IntoBytes + Immutable>(&self, cmd: u32, body: &T, out: usize) -> Result<(), i32> {
        let mut b = rdma_ucm_cmd_hdr {
            cmd,
            in_: size_of::<T>() as u16,
            out: out as u16,
        }
        .as_bytes()
        .to_vec();
        b.extend_from_slice(body.as_bytes());
        self.0.write(&b)
    }

    fn create_id(&self, uid: u64) -> u32 {
        self.create_id_in(uid, RDMA_PS_TCP)
    }

    /// An id of port space `ps` (`RDMA_PS_TCP`: RC, `RDMA_PS_UDP`: UD).
    fn create_id_in(&self, uid: u64, ps: u32) -> u32 {
        let mut resp = rdma_ucm_create_id_resp::default();
        let cmd = rdma_ucm_create_id {
            uid,
            response: &raw mut resp as u64,
            ps: ps as u16,
            qp_type: QPT_RC,
            ..Default::default()
        };
        self.write(RDMA_USER_CM_CMD_CREATE_ID, &cmd, size_of_val(&resp))
            .unwrap();
        resp.id
    }

    fn destroy_id(&self, id: u32) -> Result<u32, i32> {
        let mut resp = rdma_ucm_destroy_id_resp::default();
        let cmd = rdma_ucm_destroy_id {
            response: &raw mut resp as u64,
            id,
            reserved: 0,
        };
        self.write(RDMA_USER_CM_CMD_DESTROY_ID, &cmd, size_of_val(&resp))?;
        Ok(resp.events_reported)
    }

    fn bind(&self, id: u32, ip: [u8; 4], port: u16) -> Result<(), i32> {
        let cmd = rdma_ucm_bind {
            id,
            addr_size: size_of::<sockaddr_in>() as u16,
            reserved: 0,
            addr: ip4(ip, port),
        };
        self.write(RDMA_USER_CM_CMD_BIND, &cmd, 0)
    }

    fn listen(&self, id: u32, backlog: u32) -> Result<(), i32> {
        self.write(RDMA_USER_CM_CMD_LISTEN, &rdma_ucm_listen { id, backlog }, 0)
    }

    /// RESOLVE_ADDR from `src` (none: the wildcard) to `dst`.
    fn resolve_addr(
        &self,
        id: u32,
        src: Option<[u8; 4]>,
        dst: ([u8; 4], u16),
        timeout_ms: u32,
    ) -> Result<(), i32> {
        let cmd = rdma_ucm_resolve_addr {
            id,
            timeout_ms,
            src_size: src.map_or(0, |_| size_of::<sockaddr_in>() as u16),
            dst_size: size_of::<sockaddr_in>() as u16,
            reserved: 0,
            src_addr: src.map_or_else(__kernel_sockaddr_storage::new_zeroed, |ip| ip4(ip, 0)),
            dst_addr: ip4(dst.0, dst.1),
        };
        self.write(RDMA_USER_CM_CMD_RESOLVE_ADDR, &cmd, 0)
    }

    fn resolve_route(&self, id: u32) -> Result<(), i32> {
        let cmd = rdma_ucm_resolve_route {
            id,
            timeout_ms: 2000,
        };
        self.write(RDMA_USER_CM_CMD_RESOLVE_ROUTE, &cmd, 0)
    }

    fn connect(&self, id: u32, p: rdma_ucm_conn_param) -> Result<(), i32> {
        let cmd = rdma_ucm_connect {
            conn_param: p,
            id,
            ..rdma_ucm_connect::new_zeroed()
        };
        self.write(RDMA_USER_CM_CMD_CONNECT, &cmd, 0)
    }

    fn accept(&self, id: u32, uid: u64, p: rdma_ucm_conn_param) -> Result<(), i32> {
        let cmd = rdma_ucm_accept {
            uid,
            conn_param: p,
            id,
            ..rdma_ucm_accept::new_zeroed()
        };
        self.write(RDMA_USER_CM_CMD_ACCEPT, &cmd, 0)
    }

    fn disconnect(&self, id: u32) -> Result<(), i32> {
        self.write(RDMA_USER_CM_CMD_DISCONNECT, &rdma_ucm_disconnect { id }, 0)
    }

    fn init_qp_attr(&self, id: u32, qp_state: u32) -> Result<ib_uverbs_qp_attr, i32> {
        let mut resp = ib_uverbs_qp_attr::default();
        let cmd = rdma_ucm_init_qp_attr {
            response: &raw mut resp as u64,
            id,
            qp_state,
        };
        self.write(RDMA_USER_CM_CMD_INIT_QP_ATTR, &cmd, size_of_val(&resp))?;
        Ok(resp)
    }

    fn query_addr(&self, id: u32) -> rdma_ucm_query_addr_resp {
        let mut resp = rdma_ucm_query_addr_resp::new_zeroed();
        let cmd = rdma_ucm_query {
            response: &raw mut resp as u64,
            id,
            option: RDMA_USER_CM_QUERY_ADDR,
        };
        self.write(RDMA_USER_CM_CMD_QUERY, &cmd, size_of_val(&resp))
            .unwrap();
        resp
    }

    /// GET_EVENT with `out` bytes of room.
    fn get_event_room(&self, out: usize) -> Result<rdma_ucm_event_resp, i32> {
        let mut resp = rdma_ucm_event_resp::new_zeroed();
        let cmd = rdma_ucm_get_event {
            response: &raw mut resp as u64,
        };
        self.write(RDMA_USER_CM_CMD_GET_EVENT, &cmd, out)?;
        Ok(resp)
    }

    /// Whether an event is waiting, waited for at most `ms` milliseconds (poll on the
    /// file's fd, as librdmacm's users do).
    fn ready_within(&self, ms: i32) -> bool {
        let mut pfd = libc::pollfd {
            fd: self.0.fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one pollfd that lives across the call.
        unsafe { libc::poll(&mut pfd, 1, ms) == 1 }
    }

    /// The next event, waited for at most `secs` seconds.
    fn event_within(&self, secs: i32) -> rdma_ucm_event_resp {
        assert!(self.ready_within(secs * 1000), "no event within {secs} s");
        self.get_event_room(size_of::<rdma_ucm_event_resp>())
            .unwrap()
    }

    fn event(&self) -> rdma_ucm_event_resp {
        self.event_within(5)
    }
}

fn conn(qp_num: u32, private: &[u8]) -> rdma_ucm_conn_param {
    let mut p = rdma_ucm_conn_param::new_zeroed();
    p.qp_num = qp_num;
    p.private_data[..private.len()].copy_from_slice(private);
    p.private_data_len = private.len() as u8;
    p.valid = 1;
    p
}

/// A client id of `c` (uid `uid`) with its route to `10.47.0.2:port` resolved.
fn routed(c: &File, uid: u64, port: u16) -> u32 {
    routed_in(c, uid, port, RDMA_PS_TCP)
}

/// [`routed`] for an id of port space `ps`.
fn routed_in(c: &File, uid: u64, port: u16, ps: u32) -> u32 {
    let id = c.create_id_in(uid, ps);
    c.resolve_addr(id, Some([10, 47, 0, 1]), ([10, 47, 0, 2], port), 2000)
        .unwrap();
    let e = c.event();
    assert_eq!(
        (e.uid, e.event, e.status),
        (uid, RDMA_CM_EVENT_ADDR_RESOLVED, 0)
    );
    c.resolve_route(id).unwrap();
    let e = c.event();
    assert_eq!((e.event, e.status), (RDMA_CM_EVENT_ROUTE_RESOLVED, 0));
    id
}

/// A listener of `l` (uid 0x11) on `10.47.0.2:port`.
fn listener(l: &File, port: u16) -> u32 {
    listener_in(l, port, RDMA_PS_TCP)
}

/// [`listener`] in port space `ps`.
fn listener_in(l: &File, port: u16, ps: u32) -> u32 {
    let id = l.create_id_in(0x11, ps);
    l.bind(id, [10, 47, 0, 2], port).unwrap();
    l.listen(id, 4).unwrap();
    id
}

/// A connection between a client id of `c` and the passive id of `l` that its request
/// made, established: the passive id.
fn established(c: &File, l: &File, port: u16) -> u32 {
    let id = routed(c, 0xc1, port);
    c.connect(id, conn(0x111, b"req")).unwrap();
    let req = l.event();
    assert_eq!(req.event, RDMA_CM_EVENT_CONNECT_REQUEST);
    l.accept(req.id, 0xa1, conn(0x222, b"rep")).unwrap();
    assert_eq!(c.event().event, RDMA_CM_EVENT_CONNECT_RESPONSE);
    c.accept(id, 0, rdma_ucm_conn_param::new_zeroed()).unwrap();
    let e = l.event();
    assert_eq!((e.uid, e.event), (0xa1, RDMA_CM_EVENT_ESTABLISHED));
    req.id
}

#[test]
fn bind_takes_only_the_fabrics_addresses_and_ports_nobody_holds() {
    let s = fabric("bind", Link::Ib);
    let f = open(&s);
    let a = f.create_id(1);
    let b = f.create_id(2);
    // No NIC has 10.47.0.3 (two NICs: .1 and .2), nor a host address.
    assert_eq!(f.bind(a, [10, 47, 0, 3], 0), Err(libc::EADDRNOTAVAIL));
    assert_eq!(f.bind(a, [192, 0, 2, 1], 0), Err(libc::EADDRNOTAVAIL));
    f.bind(a, [10, 47, 0, 1], 7471).unwrap();
    let q = f.query_addr(a);
    assert_eq!(
        (q.port_num, q.ibdev_index, q.pkey),
        (1, 0, 0xffff_u16.to_be())
    );
    assert_eq!(
        q.src_addr.as_bytes()[..8],
        ip4([10, 47, 0, 1], 7471).as_bytes()[..8]
    );
    assert_eq!(
        f.bind(a, [10, 47, 0, 1], 7472),
        Err(libc::EINVAL),
        "bound once"
    );
    assert_eq!(f.bind(b, [10, 47, 0, 1], 7471), Err(libc::EADDRINUSE));
    // cma_check_port: a wildcard against a bound address (either way) is "not available".
    assert_eq!(f.bind(b, [0, 0, 0, 0], 7471), Err(libc::EADDRNOTAVAIL));
    f.bind(b, [10, 47, 0, 2], 7471).unwrap();
    // ucma_get_ctx: no such id; another file's id.
    assert_eq!(f.destroy_id(77), Err(libc::ENOENT));
    assert_eq!(open(&s).destroy_id(a), Err(libc::EINVAL));
    assert_eq!(f.destroy_id(a), Ok(0));
    let c = f.create_id(3);
    f.bind(c, [10, 47, 0, 1], 7471).unwrap();
}

#[test]
fn an_address_no_nic_has_does_not_resolve() {
    let s = fabric("resolve", Link::Ib);
    let f = open(&s);
    let id = f.create_id(5);
    // Off the fabric's subnet: no route through any RDMA device.
    f.resolve_addr(id, None, ([192, 0, 2, 7], 1), 2000).unwrap();
    let e = f.event();
    assert_eq!(
        (e.uid, e.event, e.status as i32),
        (5, RDMA_CM_EVENT_ADDR_ERROR, -libc::ENODEV)
    );
    // On the subnet, but no NIC answers for it: the neighbour lookup times out.
    let id = f.create_id(6);
    f.resolve_addr(id, None, ([10, 47, 0, 9], 1), 300).unwrap();
    assert!(!f.ready_within(0), "not before the timeout");
    let e = f.event();
    assert_eq!(
        (e.uid, e.event, e.status as i32),
        (6, RDMA_CM_EVENT_ADDR_ERROR, -libc::ETIMEDOUT)
    );
    // No route before the address.
    assert_eq!(f.resolve_route(f.create_id(7)), Err(libc::EINVAL));
}

#[test]
fn a_request_nobody_listens_for_is_rejected() {
    let s = fabric("nolisten", Link::Ib);
    let c = open(&s);
    let id = routed(&c, 9, 9999);
    c.connect(id, conn(0x10, b"")).unwrap();
    let e = c.event();
    assert_eq!(
        (e.uid, e.event, e.status),
        (9, RDMA_CM_EVENT_REJECTED, IB_CM_REJ_INVALID_SERVICE_ID)
    );
}

#[test]
fn connect_accept_and_disconnect_carry_the_kernels_data() {
    let s = fabric("handshake", Link::Ib);
    let (c, l) = (open(&s), open(&s));
    let lid = listener(&l, 5000);
    let id = routed(&c, 0xc1, 5000);
    let mut p = conn(0x111, b"hello");
    (p.responder_resources, p.initiator_depth) = (2, 3);
    (p.retry_count, p.rnr_retry_count) = (5, 6);
    c.connect(id, p).unwrap();
    assert_eq!(c.connect(id, p), Err(libc::EINVAL), "once");

    // The listener's event names a new id; its private data is the REQ's after the CM
    // header, its depths the requester's seen from here.
    let req = l.event();
    assert_eq!((req.uid, req.event), (0x11, RDMA_CM_EVENT_CONNECT_REQUEST));
    assert_ne!(req.id, lid);
    let r = req.conn();
    assert_eq!(&r.private_data[..5], b"hello");
    assert_eq!(
        usize::from(r.private_data_len),
        IB_CM_REQ_PRIVATE_DATA_SIZE - CMA_HDR_SIZE
    );
    assert_eq!(
        (r.qp_num, r.responder_resources, r.initiator_depth),
        (0x111, 3, 2)
    );
    assert_eq!((r.retry_count, r.rnr_retry_count), (5, 6));

    let rtr = l.init_qp_attr(req.id, RTR).unwrap();
    assert_eq!(
        (rtr.dest_qp_num, rtr.ah_attr.dlid),
        (0x111, 1),
        "to mlx5_0 (LID 1)"
    );
    let mut a = conn(0x222, b"world");
    (a.responder_resources, a.initiator_depth, a.rnr_retry_count) = (3, 2, 7);
    l.accept(req.id, 0xa1, a).unwrap();

    // A QP-less id hears CONNECT_RESPONSE with the REP's whole private data.
    let rep = c.event();
    assert_eq!((rep.uid, rep.event), (0xc1, RDMA_CM_EVENT_CONNECT_RESPONSE));
    let r = rep.conn();
    assert_eq!(&r.private_data[..5], b"world");
    assert_eq!(usize::from(r.private_data_len), IB_CM_REP_PRIVATE_DATA_SIZE);
    assert_eq!(r.qp_num, 0x222);

    // Each side's QP sends with the PSN the other receives with.
    let c_rtr = c.init_qp_attr(id, RTR).unwrap();
    let c_rts = c.init_qp_attr(id, RTS).unwrap();
    let l_rts = l.init_qp_attr(req.id, RTS).unwrap();
    assert_eq!((c_rtr.dest_qp_num, c_rtr.ah_attr.dlid), (0x222, 2));
    assert_eq!(c_rts.sq_psn, rtr.rq_psn);
    assert_eq!(l_rts.sq_psn, c_rtr.rq_psn);
    assert_eq!(
        (c_rts.retry_cnt, c_rts.rnr_retry, c_rts.max_rd_atomic),
        (5, 7, 3)
    );
    assert_eq!(
        (l_rts.retry_cnt, l_rts.rnr_retry, l_rts.max_rd_atomic),
        (5, 6, 2)
    );
    let init = c.init_qp_attr(id, INIT).unwrap();
    assert_eq!(
        (init.qp_attr_mask, init.qp_access_flags),
        (QP_BASE_MASK, 0b1110)
    );

    // The active side's ACCEPT is the RTU.
    c.accept(id, 0, rdma_ucm_conn_param::new_zeroed()).unwrap();
    let e = l.event();
    assert_eq!(
        (e.uid, e.id, e.event),
        (0xa1, req.id, RDMA_CM_EVENT_ESTABLISHED)
    );

    // DREQ, DREP; then each side waits out its timewait.
    c.disconnect(id).unwrap();
    let e = l.event();
    assert_eq!((e.id, e.event), (req.id, RDMA_CM_EVENT_DISCONNECTED));
    l.disconnect(req.id).unwrap();
    assert_eq!(c.event().event, RDMA_CM_EVENT_DISCONNECTED);
    assert_eq!(c.event_within(10).event, RDMA_CM_EVENT_TIMEWAIT_EXIT);
    assert_eq!(l.event_within(10).event, RDMA_CM_EVENT_TIMEWAIT_EXIT);
    assert_eq!(c.destroy_id(id), Ok(5));
}

#[test]
fn a_peer_that_closes_its_file_disconnects_or_rejects() {
    let s = fabric("close", Link::Ib);
    let l = open(&s);
    listener(&l, 6000);
    // Established: its DREQ.
    let c = open(&s);
    let passive = established(&c, &l, 6000);
    drop(c);
    let e = l.event();
    assert_eq!((e.id, e.event), (passive, RDMA_CM_EVENT_DISCONNECTED));
    // Requested, not yet answered: its REJ, which the passive id (not yet accepted) drops;
    // the accept then finds no request to answer.
    let c = open(&s);
    let id = routed(&c, 0xc2, 6000);
    c.connect(id, conn(0x333, b"")).unwrap();
    let req = l.event();
    assert_eq!(req.event, RDMA_CM_EVENT_CONNECT_REQUEST);
    drop(c);
    assert_eq!(l.accept(req.id, 0xa2, conn(0x444, b"")), Err(libc::EINVAL));
    assert!(!l.ready_within(0));
}

#[test]
fn a_rejected_request_carries_the_reason_and_data() {
    let s = fabric("reject", Link::Ib);
    let (c, l) = (open(&s), open(&s));
    listener(&l, 6100);
    let id = routed(&c, 0xc3, 6100);
    c.connect(id, conn(0x10, b"")).unwrap();
    let req = l.event();
    let mut rej = rdma_ucm_reject {
        id: req.id,
        private_data_len: 2,
        reason: 3,
        reserved: [0; 2],
        private_data: [0; 256],
    };
    rej.private_data[..2].copy_from_slice(b"no");
    // Only "consumer defined" (and "vendor option not supported") are the program's.
    assert_eq!(l.write(RDMA_USER_CM_CMD_REJECT, &rej, 0), Err(libc::EINVAL));
    rej.reason = 0;
    l.write(RDMA_USER_CM_CMD_REJECT, &rej, 0).unwrap();
    let e = c.event();
    assert_eq!(
        (e.event, e.status),
        (RDMA_CM_EVENT_REJECTED, IB_CM_REJ_CONSUMER_DEFINED)
    );
    assert_eq!(&e.conn().private_data[..2], b"no");
    assert_eq!(
        usize::from(e.conn().private_data_len),
        IB_CM_REJ_PRIVATE_DATA_SIZE
    );
}

#[test]
fn get_event_needs_room_and_waits_only_on_a_blocking_file() {
    let s = fabric("getevent", Link::Ib);
    let f = open(&s);
    let room = size_of::<rdma_ucm_event_resp>() - size_of::<u32>() - size_of::<rdma_ucm_ece>();
    assert_eq!(f.get_event_room(room - 1).unwrap_err(), libc::ENOSPC);
    let fd = f.0.fd();
    // SAFETY: fcntl on this file's fd, no pointers.
    unsafe {
        libc::fcntl(
            fd,
            libc::F_SETFL,
            libc::fcntl(fd, libc::F_GETFL) | libc::O_NONBLOCK,
        )
    };
    assert_eq!(f.get_event_room(room).unwrap_err(), libc::EAGAIN);
    // An older librdmacm's shorter response is enough.
    let id = f.create_id(8);
    f.resolve_addr(id, None, ([192, 0, 2, 7], 1), 2000).unwrap();
    let e = f.get_event_room(room).unwrap();
    assert_eq!((e.uid, e.event), (8, RDMA_CM_EVENT_ADDR_ERROR));
}

#[test]
fn init_qp_attr_needs_a_device_and_a_state_the_connection_has() {
    let s = fabric("qpattr", Link::Ib);
    let f = open(&s);
    let id = f.create_id(1);
    assert_eq!(
        f.init_qp_attr(id, INIT).unwrap_err(),
        libc::EINVAL,
        "no device yet"
    );
    f.bind(id, [10, 47, 0, 1], 0).unwrap();
    assert_eq!(
        f.init_qp_attr(id, 7).unwrap_err(),
        libc::EINVAL,
        "past IB_QPS_ERR"
    );
    // Before a connection: what the CM knows of the port (cma_ib_init_qp_attr).
    let a = f.init_qp_attr(id, INIT).unwrap();
    assert_eq!(
        (a.qp_attr_mask, a.qp_access_flags, a.port_num, a.pkey_index),
        (QP_BASE_MASK, 0, 1, 0)
    );
    // A connection that has sent its REQ: INIT, but no RTR before the REP.
    let l = open(&s);
    listener(&l, 6200);
    let c = routed(&f, 2, 6200);
    f.connect(c, conn(0x10, b"")).unwrap();
    assert!(f.init_qp_attr(c, INIT).is_ok());
    assert_eq!(f.init_qp_attr(c, RTR).unwrap_err(), libc::EINVAL);
}

#[test]
fn roce_routes_use_the_gid_of_each_nics_address() {
    let s = fabric("roce", Link::Roce);
    let (c, l) = (open(&s), open(&s));
    listener(&l, 6300);
    let id = routed(&c, 0xc4, 6300);
    c.connect(id, conn(0x10, b"")).unwrap();
    let req = l.event();
    l.accept(req.id, 0xa4, conn(0x20, b"")).unwrap();
    assert_eq!(c.event().event, RDMA_CM_EVENT_CONNECT_RESPONSE);
    let a = c.init_qp_attr(id, RTR).unwrap();
    let v4 = |last: u8| {
        let mut g = [0u8; 16];
        g[10..12].copy_from_slice(&[0xff, 0xff]);
        g[12..].copy_from_slice(&[10, 47, 0, last]);
        g
    };
    // The GRH to 10.47.0.2's GID from the RoCE v2 entry of 10.47.0.1 (GID index 2: the
    // link-local entry, then the address's v1 and v2 entries).
    assert_eq!(a.ah_attr.is_global, 1);
    assert_eq!((a.ah_attr.grh.dgid, a.ah_attr.grh.sgid_index), (v4(2), 2));
    // The loopback address has no netdev to route through on RoCE.
    let lo = c.create_id(0xc5);
    c.resolve_addr(lo, None, ([127, 0, 0, 1], 6300), 2000)
        .unwrap();
    assert_eq!(c.event().event, RDMA_CM_EVENT_ADDR_RESOLVED);
    assert_eq!(c.resolve_route(lo), Err(libc::ENODEV));
}

#[test]
fn a_ud_id_resolves_the_listeners_qp_through_sidr() {
    let s = fabric("sidr", Link::Ib);
    let (c, l) = (open(&s), open(&s));
    listener_in(&l, 6400, RDMA_PS_UDP);
    let id = routed_in(&c, 0xc6, 6400, RDMA_PS_UDP);
    c.connect(id, conn(0, b"who")).unwrap();
    // The listener's event: the SIDR REQ's private data after the CM header, nothing else.
    let req = l.event();
    assert_eq!((req.uid, req.event), (0x11, RDMA_CM_EVENT_CONNECT_REQUEST));
    let u = req.ud();
    assert_eq!(&u.private_data[..3], b"who");
    assert_eq!(
        usize::from(u.private_data_len),
        IB_CM_SIDR_REQ_PRIVATE_DATA_SIZE - CMA_HDR_SIZE
    );
    assert_eq!((u.qp_num, u.qkey, u.ah_attr.dlid), (0, 0, 0));
    l.accept(req.id, 0xa6, conn(0x1234, b"me")).unwrap();
    assert_eq!(
        l.accept(req.id, 0xa6, conn(0x1234, b"")),
        Err(libc::EINVAL),
        "answered once"
    );
    // ESTABLISHED with the QP, the port space's Q_Key and the way there (mlx5_1, LID 2).
    let e = c.event();
    assert_eq!(
        (e.uid, e.event, e.status),
        (0xc6, RDMA_CM_EVENT_ESTABLISHED, 0)
    );
    let u = e.ud();
    assert_eq!((u.qp_num, u.qkey), (0x1234, RDMA_UDP_QKEY));
    assert_eq!((u.ah_attr.dlid, u.ah_attr.port_num), (2, 1));
    assert_eq!(&u.private_data[..2], b"me");
    assert_eq!(
        usize::from(u.private_data_len),
        IB_CM_SIDR_REP_PRIVATE_DATA_SIZE
    );
    // A UD QP's attributes come from the port and the Q_Key, never a connection.
    let a = c.init_qp_attr(id, RTR).unwrap();
    assert_eq!((a.qkey, a.dest_qp_num), (RDMA_UDP_QKEY, 0));
    assert!(!l.ready_within(0), "the listener hears nothing more");
}

#[test]
fn a_sidr_request_nobody_takes_is_unreachable() {
    let s = fabric("sidrrej", Link::Ib);
    let (c, l) = (open(&s), open(&s));
    // No listener: "unsupported".
    let id = routed_in(&c, 0xc7, 6500, RDMA_PS_UDP);
    c.connect(id, conn(0, b"")).unwrap();
    let e = c.event();
    assert_eq!(
        (e.event, e.status),
        (RDMA_CM_EVENT_UNREACHABLE, IB_SIDR_UNSUPPORTED)
    );
    // The listener's REJECT: "reject", with its private data.
    listener_in(&l, 6500, RDMA_PS_UDP);
    let id = routed_in(&c, 0xc8, 6500, RDMA_PS_UDP);
    c.connect(id, conn(0, b"")).unwrap();
    let req = l.event();
    let mut rej = rdma_ucm_reject {
        id: req.id,
        private_data_len: 4,
        reason: 0,
        reserved: [0; 2],
        private_data: [0; 256],
    };
    rej.private_data[..4].copy_from_slice(b"full");
    l.write(RDMA_USER_CM_CMD_REJECT, &rej, 0).unwrap();
    let e = c.event();
    assert_eq!(
        (e.event, e.status),
        (RDMA_CM_EVENT_UNREACHABLE, IB_SIDR_REJECT)
    );
    assert_eq!(&e.ud().private_data[..4], b"full");
    // A TCP listener on the same port is in another port space, which the service id
    // carries (cma_get_service_id): no one listens on the request's.
    listener(&l, 6600);
    let id = routed_in(&c, 0xc9, 6600, RDMA_PS_UDP);
    c.connect(id, conn(0, b"")).unwrap();
    let e = c.event();
    assert_eq!(
        (e.event, e.status),
        (RDMA_CM_EVENT_UNREACHABLE, IB_SIDR_UNSUPPORTED)
    );
    assert!(!l.ready_within(0));
}
