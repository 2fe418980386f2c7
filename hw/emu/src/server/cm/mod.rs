//! rdma_cm: the kernel's `rdma_ucm` (drivers/infiniband/core/ucma.c) behind
//! `/dev/infiniband/rdma_cm`, with the connection manager under it (`cma.c`) and the IB CM's
//! protocol between two ids (`cm.c`) run inside the server: both ends are NICs of this
//! fabric, so a REQ, REP, RTU, REJ, DREQ or DREP is a call here, not a MAD.
//!
//! A program's `open("/dev/infiniband/rdma_cm")` is a connection of its own (`serve`);
//! the program holds an eventfd in semaphore mode that counts the events queued for that
//! file (so `poll` and `O_NONBLOCK` behave as on the kernel's fd), and the preload's
//! `write()` sends each command here (`crate::cm_client`). Ids are numbered across the
//! fabric as the kernel's `ctx_table` numbers them (the lowest free number). The fabric's
//! NICs have IPv4 addresses (`10.47.0.N/24` for `mlx5_{N-1}`, `addr::nic_ip`); address
//! resolution, routes and path records are the kernel's for a host that owns them all
//! (docs/emulator.md, "rdma_cm").
//!
//! Lock order: the CM's state, then a file's eventfd; the model is never called with it
//! held.

mod addr;
mod attr;
mod bind;
mod cmd;
mod hdr;
mod ib;
mod route;
mod sidr;

pub use addr::{in_subnet, nic_ip, MAX_NICS, SUBNET};
pub(crate) use route::NicInfo;

use super::remote::Spaces;
use crate::abi::ucma::{rdma_ucm_conn_param, rdma_ucm_ece, rdma_ucm_event_resp, rdma_ucm_ud_param};
use crate::abi::FromZeros;
use crate::proto::{self, Reply, Request};
use addr::Addr;
use route::Path;
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::fs::File;
use std::io::{self, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::sync::{Mutex, MutexGuard};
use std::time::Instant;

/// `enum rdma_cm_state` (cma_priv.h): where an id is in the CM's state machine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Cma {
    Idle,
    AddrQuery,
    AddrResolved,
    RouteResolved,
    Connect,
    Disconnect,
    AddrBound,
    Listen,
}

/// The device an id is attached to (`cma_attach_to_dev`; always port 1) and the index of
/// its source GID (`dev_addr.sgid_attr`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Dev {
    nic: usize,
    sgid_index: u8,
}

/// One `rdma_cm_id` with the `ucma_context` around it.
#[derive(Debug)]
struct Id {
    /// The file (`ucma_file`) it belongs to.
    file: u64,
    /// The program's handle for it (`ctx->uid`); 0 until a passive id is accepted, and
    /// events are reported only once it is set (`ucma_event_handler`).
    uid: u64,
    ps: u16,
    qp_type: u8,
    state: Cma,
    src: Addr,
    dst: Addr,
    dev: Option<Dev>,
    /// `dev_addr`: the source and destination GIDs and the P_Key.
    sgid: [u8; 16],
    dgid: [u8; 16],
    pkey: u16,
    /// The port-space bind (`bind_list`): port space and port.
    bind: Option<(u16, u16)>,
    reuseaddr: bool,
    afonly: bool,
    afonly_set: bool,
    tos: Option<u8>,
    /// The ACK timeout set with `RDMA_OPTION_ID_ACK_TIMEOUT`.
    timeout: Option<u8>,
    /// `route.path_rec[0]`.
    route: Option<Path>,
    /// The id's starting PSN (`seq_num`, 24 random bits).
    seq_num: u32,
    /// A listener's room for connect requests not yet read.
    backlog: u32,
    /// The QP number and SRQ flag a QP-less connect or accept names.
    qp_num: u32,
    srq: bool,
    ece: rdma_ucm_ece,
    /// The IB CM's part (`cm_id.ib`), from CONNECT or a received REQ on.
    conn: Option<ib::Conn>,
    /// Events of this id the program has read (`events_reported`).
    events_reported: u32,
    /// The address resolution under way, for its timer.
    addr_req: u64,
}

impl Id {
    fn new(file: u64, uid: u64, ps: u16, qp_type: u8, seq_num: u32) -> Id {
        Id {
            file,
            uid,
            ps,
            qp_type,
            state: Cma::Idle,
            src: Addr::None,
            dst: Addr::None,
            dev: None,
            sgid: [0; 16],
            dgid: [0; 16],
            pkey: 0,
            bind: None,
            reuseaddr: false,
            afonly: false,
            afonly_set: false,
            tos: None,
            timeout: None,
            route: None,
            seq_num,
            backlog: 0,
            qp_num: 0,
            srq: false,
            ece: rdma_ucm_ece::default(),
            conn: None,
            events_reported: 0,
            addr_req: 0,
        }
    }
}

/// An event waiting to be read (`struct ucma_event`).
#[derive(Debug)]
struct Queued {
    /// The id it counts against (for a connect request, the listener).
    ctx: u32,
    /// A connect request's new id.
    conn_req: Option<u32>,
    resp: rdma_ucm_event_resp,
}

/// One open `/dev/infiniband/rdma_cm` (`struct ucma_file`).
#[derive(Debug)]
struct CmFile {
    pid: i32,
    /// The address space the program's memory is reached in.
    space: u16,
    /// Counts the queued events (semaphore mode).
    efd: File,
    queue: VecDeque<Queued>,
    /// Its ids, oldest first (`ctx_list`).
    ids: Vec<u32>,
}

impl CmFile {
    fn push(&mut self, q: Queued) {
        self.queue.push_back(q);
        let _ = (&self.efd).write(&1u64.to_ne_bytes());
    }
}

/// What a timer does when it fires.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Due {
    /// Timewait ends (`cm_timewait_handler`): the id's connection `serial`.
    Timewait { id: u32, serial: u64 },
    /// A REQ the listener had no room for is sent again (the MAD layer's retry).
    ReqRetry { id: u32, serial: u64 },
    /// An address nobody answers for (`addr.c` `process_one_req`: `-ETIMEDOUT`).
    AddrTimeout { id: u32, req: u64 },
}

/// The CM of one fabric: every rdma_cm file and id of every program on it.
pub(crate) struct Cm {
    nics: Vec<NicInfo>,
    spaces: &'static Spaces,
    state: Mutex<State>,
}

/// Everything under the CM's lock.
#[derive(Debug, Default)]
struct State {
    files: HashMap<u64, CmFile>,
    /// Files by the program's pid and the token its preload gave the file (for
    /// MIGRATE_ID, which names the old file by the program's fd).
    tokens: HashMap<(i32, u32), u64>,
    next_file: u64,
    ids: BTreeMap<u32, Id>,
    /// Bind lists: the ids on each (port space, port).
    binds: HashMap<(u16, u16), Vec<u32>>,
    timers: Vec<(Instant, Due)>,
    /// CM messages in flight (`ib::Msg`), delivered before a command returns.
    wire: VecDeque<ib::Msg>,
    next_serial: u64,
    rng: u64,
}

impl State {
    /// 32 pseudo-random bits (xorshift64*, Vigna 2016) for PSNs and ephemeral ports.
    fn random(&mut self) -> u32 {
        if self.rng == 0 {
            let t = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(1, |d| d.as_nanos() as u64);
            self.rng = t | 1;
        }
        let x = &mut self.rng;
        *x ^= *x >> 12;
        *x ^= *x << 25;
        *x ^= *x >> 27;
        (x.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 32) as u32
    }

    fn serial(&mut self) -> u64 {
        self.next_serial += 1;
        self.next_serial
    }

    /// A new id of `file` (`ucma_alloc_ctx`: the lowest free number).
    fn new_id(&mut self, file: u64, uid: u64, ps: u16, qp_type: u8) -> u32 {
        let n = (0..).find(|n| !self.ids.contains_key(n)).expect("ids left");
        let seq = self.random() & 0x00ff_ffff;
        self.ids.insert(n, Id::new(file, uid, ps, qp_type, seq));
        if let Some(f) = self.files.get_mut(&file) {
            f.ids.push(n);
        }
        n
    }

    /// Report event `event` of id `id` (`ucma_event_handler` / `ucma_create_uevent`):
    /// queued for its file once the program has given the id a handle.
    fn report(&mut self, id: u32, event: u32, status: i32, conn: Option<rdma_ucm_conn_param>) {
        self.report_ece(id, event, status, conn, rdma_ucm_ece::default());
    }

    fn report_ece(
        &mut self,
        id: u32,
        event: u32,
        status: i32,
        conn: Option<rdma_ucm_conn_param>,
        ece: rdma_ucm_ece,
    ) {
        self.report_with(id, event, status, |r| {
            if let Some(c) = conn {
                r.set_conn(&c);
            }
            r.ece = ece;
        });
    }

    /// [`State::report`] of a UD id's event, its `param.ud`.
    fn report_ud(&mut self, id: u32, event: u32, status: i32, ud: &rdma_ucm_ud_param) {
        self.report_with(id, event, status, |r| r.set_ud(ud));
    }

    fn report_with(
        &mut self,
        id: u32,
        event: u32,
        status: i32,
        fill: impl FnOnce(&mut rdma_ucm_event_resp),
    ) {
        let Some(i) = self.ids.get(&id) else {
            return;
        };
        if i.uid == 0 {
            return;
        }
        let mut resp = rdma_ucm_event_resp::new_zeroed();
        resp.uid = i.uid;
        resp.id = id;
        resp.event = event;
        resp.status = status as u32;
        fill(&mut resp);
        let file = i.file;
        if let Some(f) = self.files.get_mut(&file) {
            f.push(Queued {
                ctx: id,
                conn_req: None,
                resp,
            });
        }
    }

    fn at(&mut self, after_ms: u64, due: Due) {
        let when = Instant::now() + std::time::Duration::from_millis(after_ms);
        self.timers.push((when, due));
    }
}

/// What a command comes to.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// Done: `write()` returns the count.
    Done,
    /// `write()` fails with this errno.
    Errno(i32),
    /// GET_EVENT found no event for the count the program took (its id dropped it): the
    /// program waits for the next one, as the kernel's read would.
    NoEvent,
}

impl Cm {
    /// The CM of a fabric of `nics`, reaching programs' memory through `spaces`.
    pub(crate) fn new(nics: Vec<NicInfo>, spaces: &'static Spaces) -> Cm {
        Cm {
            nics,
            spaces,
            state: Mutex::new(State::default()),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A new file of program `pid` whose events `efd` counts; `token` is the preload's
    /// name for it (MIGRATE_ID). Returns the file's key.
    fn open(&self, pid: i32, token: u32, space: u16, efd: OwnedFd) -> u64 {
        let mut st = self.lock();
        st.next_file += 1;
        let key = st.next_file;
        st.files.insert(
            key,
            CmFile {
                pid,
                space,
                efd: File::from(efd),
                queue: VecDeque::new(),
                ids: Vec::new(),
            },
        );
        st.tokens.insert((pid, token), key);
        key
    }

    /// The file is closed (`ucma_close`): each of its ids is destroyed as the program's
    /// DESTROY_ID would, which tells their peers (REJ, DREQ, DREP: `cm_destroy_id`).
    fn close(&self, key: u64) {
        let mut st = self.lock();
        let ids = st
            .files
            .get(&key)
            .map(|f| f.ids.clone())
            .unwrap_or_default();
        for id in ids {
            st.destroy(id);
        }
        st.deliver(&self.nics);
        st.files.remove(&key);
        st.tokens.retain(|_, v| *v != key);
    }

    /// Fire the timers that are due (the ticker calls this).
    pub(crate) fn tick(&self) {
        let mut st = self.lock();
        if st.timers.is_empty() {
            return;
        }
        let now = Instant::now();
        let (due, rest): (Vec<_>, Vec<_>) = st.timers.drain(..).partition(|t| t.0 <= now);
        st.timers = rest;
        for (_, d) in due {
            st.fire(d, &self.nics);
        }
        st.deliver(&self.nics);
    }
}

/// Serve an rdma_cm file for the program at the other end of `stream` until it closes it
/// or exits: each request is one `write()`.
pub(crate) fn serve(
    cm: &Cm,
    stream: &UnixStream,
    efd: OwnedFd,
    token: u32,
    buf: &mut [u8],
) -> io::Result<()> {
    let pid = rustix::net::sockopt::socket_peercred(stream)
        .map(|c| c.pid.as_raw_nonzero().get())
        .map_err(io::Error::from)?;
    let space = cm.spaces.add(pid);
    let key = cm.open(pid, token, space, efd);
    let result = (|| {
        let mut out = vec![0u8; 64];
        while let Some((n, _)) = proto::recv(stream.as_fd(), buf)? {
            let reply = match proto::decode(&buf[..n])? {
                Request::Command { bytes, .. } => match cm.command(key, bytes) {
                    Outcome::Done => Reply::Command { errno: 0 },
                    Outcome::Errno(errno) => Reply::Command { errno },
                    Outcome::NoEvent => Reply::Event(Ok(None)),
                },
                _ => Reply::Command {
                    errno: libc::EINVAL,
                },
            };
            let n = proto::encode(&reply, &mut out)?;
            proto::send(stream.as_fd(), &out[..n], None)?;
        }
        Ok(())
    })();
    cm.close(key);
    cm.spaces.remove(space);
    result
}
