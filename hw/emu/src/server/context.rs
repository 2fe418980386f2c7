//! One device context: what the kernel keeps per open `/dev/infiniband/uverbsN` (its
//! `ib_ucontext` and the uobjects under it), the request loop of its connection, and its
//! teardown when the program closes the fd or exits (the kernel's
//! `uverbs_destroy_ufile_hw`: flows, RSS QPs, QPs, indirection tables, work queues, SRQs,
//! XRC domains, CQs, address handles, MRs, device memory, PDs, in that order).

use super::events::{EventQueue, Kind};
use super::Shared;
use crate::proto::{self, Mapping, Reply, Request};
use mlx5_hw::Nic;
use std::collections::HashMap;
use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::sync::Arc;

/// A protection domain.
#[derive(Debug)]
pub(crate) struct Pd {
    pub(crate) pdn: u32,
}

/// A memory region.
#[derive(Debug)]
pub(crate) struct Mr {
    pub(crate) key: u32,
    /// Its PD's number.
    pub(crate) pdn: u32,
    /// `IB_UVERBS_ACCESS_*` as registered.
    pub(crate) access: u32,
    /// Its first address (the program's, or 0 for device memory) and length.
    pub(crate) addr: u64,
    pub(crate) len: u64,
}

/// A completion queue.
#[derive(Debug)]
pub(crate) struct Cq {
    pub(crate) cqn: u32,
}

/// A shared receive queue.
#[derive(Debug)]
pub(crate) struct Srq {
    pub(crate) srqn: u32,
    pub(crate) max_wr: u32,
    pub(crate) max_sge: u32,
    pub(crate) limit: u32,
    /// The handle of an XRC SRQ's domain.
    pub(crate) xrcd: Option<u32>,
}

/// Everything of one device context.
pub(crate) struct Ctx<'a> {
    pub(crate) shared: &'a Shared,
    pub(crate) nic: &'a Nic,
    /// The NIC's index in the fabric.
    pub(crate) index: usize,
    /// The address space the program's memory is named in.
    pub(crate) space: u16,
    /// GET_CONTEXT has been answered (once per fd, as the kernel's `ib_uverbs_get_context`).
    pub(crate) ready: bool,
    /// The CQE version GET_CONTEXT answered (`mlx5_ib_ucontext.cqe_version`).
    pub(crate) cqe_version: u8,
    /// The context's async event queue and the program's fd for it.
    pub(crate) async_events: Option<(Arc<EventQueue>, i32)>,
    /// The program's fd number of each completion channel → its model channel and queue.
    pub(crate) channels: HashMap<i32, (u32, Arc<EventQueue>)>,
    pub(crate) next_handle: u32,
    pub(crate) pds: HashMap<u32, Pd>,
    /// XRC domains (`ibv_open_xrcd`).
    pub(crate) xrcds: HashMap<u32, super::xrc::Xrcd>,
    pub(crate) mrs: HashMap<u32, Mr>,
    /// Device-memory allocations (`ibv_alloc_dm`).
    pub(crate) dms: HashMap<u32, super::memory::Dm>,
    pub(crate) cqs: HashMap<u32, Cq>,
    pub(crate) srqs: HashMap<u32, Srq>,
    pub(crate) qps: HashMap<u32, super::qp::Qp>,
    /// Steering rules (`ibv_create_flow`).
    pub(crate) flows: HashMap<u32, super::flow::Flow>,
    /// Receive work queues, indirection tables, RSS QPs.
    pub(crate) wqs: HashMap<u32, super::wq::Wq>,
    pub(crate) ind_tables: HashMap<u32, super::wq::IndTable>,
    pub(crate) rss_qps: HashMap<u32, super::wq::RssQp>,
    /// Address handles (RoCE only: on InfiniBand libmlx5 builds its AV without the kernel).
    pub(crate) ahs: std::collections::HashSet<u32>,
    pub(crate) uars: super::uar::Uars,
    /// The clock-info page (`MLX5_IB_MMAP_CLOCK_INFO`), once mapped.
    pub(crate) clock_page: Option<Arc<super::clock::ClockPage>>,
}

/// Serve device `device` for the program at the other end of `stream`.
pub(crate) fn serve(
    shared: &Arc<Shared>,
    stream: &UnixStream,
    device: u32,
    buf: &mut [u8],
) -> io::Result<()> {
    let pid = rustix::net::sockopt::socket_peercred(stream)
        .map(|c| c.pid.as_raw_nonzero().get())
        .map_err(io::Error::from)?;
    let index = device as usize;
    let mut ctx = Ctx {
        shared,
        nic: &shared.nics[index],
        index,
        space: shared.spaces.add(pid),
        ready: false,
        cqe_version: 0,
        async_events: None,
        channels: HashMap::new(),
        next_handle: 1,
        pds: HashMap::new(),
        xrcds: HashMap::new(),
        mrs: HashMap::new(),
        dms: HashMap::new(),
        cqs: HashMap::new(),
        srqs: HashMap::new(),
        qps: HashMap::new(),
        flows: HashMap::new(),
        wqs: HashMap::new(),
        ind_tables: HashMap::new(),
        rss_qps: HashMap::new(),
        ahs: Default::default(),
        uars: super::uar::Uars::default(),
        clock_page: None,
    };
    let result = ctx.run(stream, buf);
    ctx.teardown();
    result
}

impl Ctx<'_> {
    fn run(&mut self, stream: &UnixStream, buf: &mut [u8]) -> io::Result<()> {
        let mut out = vec![0u8; 256];
        while let Some((n, fd)) = proto::recv(stream.as_fd(), buf)? {
            let (reply, lend) = match proto::decode(&buf[..n])? {
                Request::Command { bytes, event_fd } => {
                    let errno = self.command(bytes, fd, event_fd).err().unwrap_or(0);
                    (Reply::Command { errno }, None)
                }
                Request::Mmap { offset, len } => match self.mmap(offset, len) {
                    Ok((m, fd)) => (Reply::Mmap(Ok(m)), fd),
                    Err(e) => (Reply::Mmap(Err(e)), None),
                },
                Request::Store { page, offset, data } => {
                    self.store(page, offset, data);
                    (Reply::Stored, None)
                }
                Request::Load { page, offset, len } => {
                    (Reply::Loaded(self.load(page, offset, len)), None)
                }
                Request::Event { fd, room } => (Reply::Event(self.event(fd, room)), None),
                Request::Ioctl { request, arg } => {
                    let errno = self.ioctl(request, arg).err().unwrap_or(0);
                    (Reply::Command { errno }, None)
                }
                Request::Report => (
                    Reply::Command {
                        errno: libc::EINVAL,
                    },
                    None,
                ),
            };
            let n = proto::encode(&reply, &mut out)?;
            proto::send(stream.as_fd(), &out[..n], lend.as_ref().map(|f| f.as_fd()))?;
        }
        Ok(())
    }

    /// A new uobject handle (the kernel's per-file IDR: small, never reused while live).
    pub(crate) fn handle(&mut self) -> u32 {
        let h = self.next_handle;
        self.next_handle += 1;
        h
    }

    /// An mmap of the command fd (`mlx5_ib_mmap`): UAR pages by index, the clock-info page.
    fn mmap(&mut self, offset: u64, len: u64) -> Result<(Mapping, Option<OwnedFd>), i32> {
        super::uar::mmap(self, offset, len)
    }

    /// A read of the event fd `fd`: the next record of its queue.
    fn event(&self, fd: i32, room: u32) -> Result<Option<Vec<u8>>, i32> {
        let queue = match &self.async_events {
            Some((q, n)) if *n == fd => q,
            _ => &self.channels.get(&fd).ok_or(libc::EBADF)?.1,
        };
        self.shared.events.pop(queue, room as usize)
    }

    /// Deliver what the fabric's NICs have queued (after every command and store; the
    /// ticker does it too). Every NIC, not only this context's: a doorbell here writes CQEs
    /// on the peer's NIC too (the responder's receive), whose events the kernel delivers
    /// from that NIC's interrupt at once (`mlx5_eq_comp_int` -> `mlx5_ib_cq_comp` ->
    /// `ib_uverbs_comp_handler`), not when its program next makes a call.
    pub(crate) fn pump(&self) {
        for (i, nic) in self.shared.nics.iter().enumerate() {
            self.shared.events.pump(i, nic);
        }
    }

    /// The kernel's cleanup of a closed context: every object, children first.
    fn teardown(&mut self) {
        let nic = self.nic;
        // A rule holds its QP (the kernel's use count): the rules go first.
        for (_, flow) in self.flows.drain() {
            let _ = nic.destroy_flow(flow.id);
        }
        for (_, qp) in self.rss_qps.drain() {
            let _ = nic.destroy_rss_qp(qp.qpn);
        }
        self.ind_tables.clear();
        for (_, qp) in self.qps.drain() {
            // As mlx5_ib's `destroy_qp_common`: to RESET (2RST_QP), then destroyed. Not
            // through ERR, whose flush would write CQEs into a program that has gone.
            let _ = nic.modify_qp(qp.qpn, &mlx5_hw::QpTransition::Reset);
            // Its groups first, as `uverbs_free_qp`'s `ib_uverbs_detach_umcast`.
            for (gid, lid) in &qp.mcast {
                let _ = nic.detach_mcast(qp.qpn, gid, *lid);
            }
            let _ = nic.destroy_qp(qp.qpn);
            self.shared.events.remove(Kind::Qp, self.index, qp.qpn);
        }
        for (_, wq) in self.wqs.drain() {
            let _ = nic.destroy_wq(wq.wqn);
        }
        for (_, srq) in self.srqs.drain() {
            let _ = nic.destroy_srq(srq.srqn);
        }
        // The domains once their SRQs and target QPs are gone (`uverbs_free_xrcd`).
        let xrcds: Vec<_> = self.xrcds.drain().collect();
        for (_, xrcd) in &xrcds {
            let _ = self.release_xrcd(xrcd);
        }
        for (_, cq) in self.cqs.drain() {
            let _ = nic.destroy_cq(cq.cqn);
            self.shared.events.remove(Kind::Cq, self.index, cq.cqn);
        }
        self.ahs.clear();
        for (_, mr) in self.mrs.drain() {
            let _ = nic.dereg_mr(mr.key);
        }
        self.free_dms();
        for (_, pd) in self.pds.drain() {
            let _ = nic.dealloc_pd(pd.pdn);
        }
        for (_, (channel, _)) in self.channels.drain() {
            self.shared.events.remove_channel(self.index, channel);
            let _ = nic.destroy_channel(channel);
        }
        self.shared
            .space_qps
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&self.space);
        self.shared.spaces.remove(self.space);
    }
}
