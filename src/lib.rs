//! # mlx5-direct
//!
//! A userspace data path for NVIDIA/Mellanox ConnectX (mlx5) NICs. rdma-core is used only
//! for the slow path (opening the device, protection domains, registration, creating and
//! connecting queues); after `mlx5dv_init_obj` this crate builds WQEs in the send ring,
//! writes doorbell records, rings 8-byte doorbells or BlueFlame-copies whole WQEs, posts
//! receives and parses CQEs itself: no locks, no allocation and no indirect calls per
//! operation.
//!
//! No NIC? The default backend is [`backend::sim`], a strict model of an mlx5 NIC and its
//! PCIe link (the `mlx5-hw` crate), driven through the very same ring bytes, doorbell
//! records, UAR writes and CQEs. It also counts every PCIe transaction.
//!
//! On a ConnectX NIC (feature `verbs`): `Context::<Verbs>::open(&VerbsOptions { device,
//! port, gid_index })` from `backend::verbs` opens the device through rdma-core; the same
//! queues then run on hardware. `docs/hardware.md` has the setup.
//!
//! ## Quick start (on the model)
//!
//! ```
//! use mlx5_direct::backend::sim::{Fabric, NicConfig, Sim};
//! use mlx5_direct::{Access, Completion, ConnectOptions, Context, Data, QpConfig, SendFlags, SendOp};
//!
//! let fabric = Fabric::new();
//! let (a, b) = (
//!     Context::new(Sim::on_fabric(&fabric, NicConfig::default())),
//!     Context::new(Sim::on_fabric(&fabric, NicConfig::default())),
//! );
//! let (pd_a, pd_b) = (a.alloc_pd()?, b.alloc_pd()?);
//! let (mut cq_a, cq_b) = (a.create_cq(64, 64)?, b.create_cq(64, 64)?);
//! let mut qp_a = pd_a.create_qp(&cq_a, &cq_a, &QpConfig::default())?;
//! let mut qp_b = pd_b.create_qp(&cq_b, &cq_b, &QpConfig::default())?;
//! let target = pd_b.alloc_mr(4096, Access::ALL)?;
//! qp_a.connect(&qp_b.endpoint()?, &ConnectOptions::default())?;
//! qp_b.connect(&qp_a.endpoint()?, &ConnectOptions::default())?;
//!
//! qp_a.sq().post(1, SendOp::Write(target.remote(0)), Data::Inline(b"hello"), SendFlags::SIGNALED)?;
//! let mut done = [Completion::default(); 1];
//! assert_eq!(cq_a.poll(&mut done), 1);
//! assert!(done[0].status.is_ok());
//! let mut bytes = [0u8; 5];
//! target.read(0, &mut bytes);
//! assert_eq!(&bytes, b"hello");
//!
//! // The same WRITE through its typed call (exactly its operands: nothing to decode at run
//! // time, the bytes `post` writes), and its completion through the lean poll (a view of
//! // each CQE; read only what you need, errors included).
//! qp_a.sq().write_inline(2, target.remote(8), b"again", SendFlags::SIGNALED)?;
//! let mut ok = false;
//! assert_eq!(cq_a.poll_with(1, |c| ok = c.wr_id() == 2 && c.is_ok()), 1);
//! assert!(ok);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Every common operation has such a typed call on [`SendQueue`] (`write_inline`, `write`,
//! `write_imm[_inline]`, `send[_inline]`, `send_imm[_inline]`, `read`, `compare_swap`,
//! `fetch_add`; `send_ud` / `send_dc` and their immediate forms for datagrams), each with a
//! `push_` form for a list rung once by [`SendQueue::ring_doorbell`]; [`SendQueue::post_wr`]
//! takes any [`SendWr`]. A [`PreparedWr`] keeps a whole WQE and patches its remote address,
//! immediate, payload and `wr_id` per post.
//!
//! ## Layers
//!
//! Each imports only those below it (`docs/architecture.md`, kept by `tests/layers.rs`):
//!
//! - [`prm`]: the device's byte formats (segments, CQEs, opcodes, syndromes), big-endian,
//!   each pinned to rdma-core's `mlx5dv.h` by golden tests. No `unsafe`.
//! - [`types`], [`error`], [`cm`], [`event`], [`clock`], [`sizing`]: the plain data every
//!   layer shares (endpoints and their wire forms, QP and connection settings, errors).
//! - [`mmio`]: the only code that stores to a UAR, with rdma-core's barrier names; the ring
//!   and registered memory beside it.
//! - [`sq`], [`rq`], [`cq`], [`cqz`]: the data path over raw queue memory.
//! - [`backend`]: where queues, keys and QP states come from; [`null`]: queues over plain
//!   memory, for CPU-cost benchmarks and byte-level tests.
//! - [`device`]: reference-counted control objects over a [`backend::Backend`], a file per
//!   object; [`dm`]: device memory; [`channel`]: completion channels, waited on the same way
//!   on every backend.
//! - [`dci_pool`], and with feature `verbs` `rdma_cm`: helpers built on the objects.
//!
//! ## Connecting two processes
//!
//! Each side sends the other its [`Endpoint`] (from [`Qp::endpoint`]) and, for one-sided
//! operations, a [`Remote`] (address and rkey; [`Remote::offset`] moves into it). An
//! `Endpoint` prints and parses as rdma-core's `rc_pingpong` message
//! (`"%04x:%06x:%06x:%s"`: LID, QPN, PSN, GID in hex) and converts to and from 26 bytes
//! ([`Endpoint::to_bytes`], [`Endpoint::from_bytes`]).
//!
//! ## Cargo features
//!
//! `sim` (default): the model backend. `verbs`: ConnectX hardware through rdma-core.
//! `tokio`: `AsyncCompChannel`, completion events in async code. `serde`: `Serialize` /
//! `Deserialize` for the plain data types ([`types`], [`Completion`], [`Status`],
//! [`Remote`], [`Sge`], [`AsyncEvent`]).
//!
//! ## Safety
//!
//! `unsafe` lives in `mmio`, the ring and memory modules and the backends, each block with
//! its reason. Memory the device may write (registered regions, rings, CQEs) is never handed
//! out as `&[u8]` by safe code: [`MemoryRegion::read`] and [`MemoryRegion::write`] copy;
//! [`MemoryRegion::bytes`] lends a range in place under an `unsafe` contract (below).
//! Registering memory the caller owns is `unsafe` ([`ProtectionDomain::register`]): the
//! caller promises it outlives the registration.
//!
//! ## Zero-copy receive
//!
//! A received message can be read where it landed instead of copied out. Once its
//! completion is polled, the device has finished writing the receive's buffer (the poll
//! orders the data before the CQE), and it writes there again only if the application posts
//! that buffer again or lets a peer write it. [`MemoryRegion::bytes`] borrows the range;
//! its `# Safety` contract is exactly that: no posted receive, outstanding READ / atomic
//! result, peer WRITE / atomic or local write covers the range while the slice lives. The
//! safe way to keep the peer out is a receive region registered without remote rights
//! (`Access::LOCAL_WRITE`), so no rkey of it can be used.
//!
//! ```
//! # use mlx5_direct::backend::sim::Sim;
//! # use mlx5_direct::{Access, Completion, ConnectOptions, Context, Data, QpConfig, SendFlags, SendOp};
//! # let ctx = Context::new(Sim::new());
//! # let pd = ctx.alloc_pd()?;
//! # let mut cq = ctx.create_cq(64, 64)?;
//! # let mut qp = pd.create_qp(&cq, &cq, &QpConfig::default())?;
//! # let me = qp.endpoint()?;
//! # qp.connect(&me, &ConnectOptions::default())?;
//! // Receive buffers: local write only, so no peer can target them.
//! let buffers = pd.alloc_mr(16 * 1024, Access::LOCAL_WRITE)?;
//! qp.rq().unwrap().post(3, &[buffers.sge(3 * 1024, 1024)])?;
//! qp.sq().post(1, SendOp::Send, Data::Inline(b"in place"), SendFlags::SIGNALED)?;
//! let mut done = [Completion::default(); 2];
//! let mut n = 0;
//! while n < 2 { n += cq.poll(&mut done[n..]); }
//! let c = done.iter().find(|c| c.wr_id == 3).unwrap();
//! // SAFETY: receive 3 completed (polled above) and its buffer is posted again only after
//! // `msg` is gone; the region grants no remote access; nothing else writes it.
//! let msg = unsafe { buffers.bytes(3 * 1024, c.byte_len as usize) };
//! assert_eq!(msg, b"in place");
//! qp.rq().unwrap().post(3, &[buffers.sge(3 * 1024, 1024)])?; // after the last use of `msg`
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! ## Threading
//!
//! Control objects are `Send + Sync` and reference counted. The data path takes `&mut`:
//! one thread posts on a QP's [`SendQueue`], one polls a [`Cq`]; they may be different
//! threads (a QP and its CQ are separate values, each `Send`). To post sends and receives
//! of one QP from two threads, [`Qp::split`] it into an owned [`QpSender`] (`Deref` to its
//! [`SendQueue`]) and an owned [`QpReceiver`], each `Send` and each keeping the QP alive;
//! [`QpSender::join`] puts them back together for a reset. Reading a queue's limits and
//! counts needs only `&` ([`Qp::send_queue`], [`Qp::recv_queue`]).
//!
//! ```
//! # use mlx5_direct::backend::sim::Sim;
//! # use mlx5_direct::{Access, Completion, ConnectOptions, Context, Data, QpConfig, SendFlags, SendOp};
//! # let ctx = Context::new(Sim::new());
//! # let pd = ctx.alloc_pd()?;
//! let (mut send_cq, mut recv_cq) = (ctx.create_cq(64, 64)?, ctx.create_cq(64, 64)?);
//! let mut qp = pd.create_qp(&send_cq, &recv_cq, &QpConfig::default())?;
//! # let mr = pd.alloc_mr(4096, Access::ALL)?;
//! # let me = qp.endpoint()?;
//! qp.connect(&me, &ConnectOptions::default())?;
//! let (mut tx, mut rx) = qp.split();
//! rx.rq().unwrap().post(1, &[mr.sge(0, 64)])?;
//! let receiver = std::thread::spawn(move || {
//!     let mut done = [Completion::default(); 1];
//!     while recv_cq.poll(&mut done) == 0 {}
//!     (rx, done[0].byte_len)
//! });
//! tx.post(2, SendOp::Send, Data::Inline(b"hello"), SendFlags::SIGNALED)?;
//! let mut done = [Completion::default(); 1];
//! while send_cq.poll(&mut done) == 0 {}
//! let (rx, len) = receiver.join().unwrap();
//! assert_eq!(len, 5);
//! let qp = tx.join(rx).ok().unwrap();
//! # drop(qp);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Send-side bookkeeping shared with the poller uses atomics, never a lock. Several QPs on several threads may share one hardware
//! BlueFlame register (libmlx5 hands shared registers out and locks them); the `verbs`
//! backend then rings 8-byte doorbells on that register instead of locking (see
//! `docs/hardware.md`).
//!
//! ## Atomics
//!
//! An atomic's original value lands in its local entry in the byte order the device uses
//! for that kind: 8-byte results in host order on a device in the kernel's default mode
//! ([`DeviceCaps::atomic_8b_host_order`]), 4-byte masked results big-endian always.
//! [`SendOp::atomic_result`] decodes the entry; the table is on [`SendOp`]. An atomic is
//! atomic only against other atomics through the same HCA (`IBV_ATOMIC_HCA`): without PCIe
//! AtomicOps the device reads the target by DMA and writes it back by DMA, so a CPU store to
//! the same word in between is lost. Never update one word from both the CPU and the NIC.
//!
//! ## Teardown
//!
//! Drop values in any order: a QP keeps its CQs, SRQ and PD alive, a region its PD, every
//! object its context, and each is destroyed when its last user goes (QP before CQ, MR before
//! PD). [`Cq::destroy`] refuses with [`Error::Busy`] while a QP still uses the CQ. After an
//! error CQE the QP is in error: poll its flush CQEs, then [`Qp::reset`] and [`Qp::connect`]
//! again. If the peer stayed connected, connect to the endpoint you already have from it:
//! the reset QP continues both packet sequences where they stood ([`Qp::reset`] reads them
//! from the device), so the peer goes on with it. If the peer was reset too, exchange fresh
//! [`Qp::endpoint`]s first. One case cannot recover on one side: a request the peer never
//! received (the QP failed with `TransportRetryExcErr` after losing it) leaves the QP's
//! sequence ahead of the peer's, so its next request fails the same way, loudly, until both
//! sides are reset and reconnected with fresh endpoints. A continued sequence is never
//! behind the peer's, so no request completes as a success the peer did not execute (on
//! hardware this rests on the device's next send PSN being past every request it sent;
//! `docs/model.md`, "Transport").
//!
//! ## Completion events
//!
//! Instead of polling in a loop, arm a CQ ([`CompletionQueue::arm`]) and sleep until its
//! next CQE raises a completion event. Events go to the CQ's [`CompChannel`]
//! ([`Context::create_comp_channel`], [`Context::create_cq_on`]; [`Context::create_cq`] uses
//! the context's own), which several CQs may share. [`Cq::wait_event`] waits for one CQ,
//! [`CompChannel::wait`] for any CQ of the channel and names it; the channel's fd
//! ([`std::os::fd::AsFd`]) goes into epoll, and feature `tokio` adds `AsyncCompChannel`.
//! The same code runs on the model and on hardware. Taking the event is the whole
//! acknowledgement: re-arm, then poll the CQ dry. See [`channel`].
//!
//! ## Asynchronous events
//!
//! What no CQE can report (a CQ overrun, a QP the device moved to ERR, a port going down)
//! arrives as an [`AsyncEvent`]: [`Context::poll_async_event`] takes one without blocking,
//! [`Context::wait_async_event`] waits for one. A QP named by a fatal event reports
//! [`QpState::Err`] from then on. See [`event`].
// docs.rs (nightly, `--cfg docsrs`) marks each feature-gated item with its feature.
#![cfg_attr(docsrs, feature(doc_cfg))]
#![deny(missing_docs)]
#![deny(unsafe_op_in_unsafe_fn)]

pub mod backend;
pub mod channel;
pub mod clock;
pub mod cm;
pub mod cq;
pub mod cqz;
pub mod dci_pool;
pub mod device;
pub mod dm;
pub mod error;
pub mod eth;
pub mod event;
mod grh;
mod mcast;
mod mem;
pub mod mmio;
pub mod null;
pub mod prm;
mod qp_state;
#[cfg(feature = "verbs")]
#[cfg_attr(docsrs, doc(cfg(feature = "verbs")))]
pub mod rdma_cm;
mod ring;
pub mod rq;
pub mod sizing;
pub mod sq;
pub mod types;

#[cfg(feature = "tokio")]
#[cfg_attr(docsrs, doc(cfg(feature = "tokio")))]
pub use channel::AsyncCompChannel;
pub use channel::CompChannel;
pub use clock::ClockInfo;
pub use cm::{CmError, CmEvent, CmPrivateData};
pub use cq::mprq::{StridedFrame, StridingError};
pub use cq::{Completion, CompletionQueue, CompletionView, Status, WcError, WcOpcode};
pub use cqz::{BadCompression, CqeCompression};
pub use dci_pool::DciPool;
pub use device::{
    AddressHandle, Context, Cq, Dct, Flow, MemoryRegion, ProtectionDomain, Qp, QpReceiver,
    QpSender, RssQp, Srq, StridingWq, XrcDomain, XrcSrq, XrcTarget,
};
pub use dm::{DeviceMemory, DmRegion, DmSlots, DM_LINE};
pub use error::{DmRefusal, Error, McastRefusal, PostError};
pub use eth::{
    Checksum, EthCaps, EthFilter, EthRefusal, FlowKind, FlowRule, FlowSpec, Ipv4Filter, Ipv6Filter,
    L4Filter, RxHashConfig, StridingConfig, VlanInsert,
};
pub use event::AsyncEvent;
pub use grh::GrhArea;
pub use mcast::{McastGroup, MCAST_QPN};
pub use mem::{run_on_node, MemOptions, Pages, HUGE_PAGE};
pub use rq::{RecvQueue, SharedRecvQueue, UD_GRH_BYTES};
pub use sq::{
    Data, DcDest, DoorbellMode, EmpwPacket, EmpwWr, EthWr, PreparedWr, Remote, SendFlags, SendOp,
    SendQueue, SendWr, Sge, UdDest, XRC_SEG_BYTES,
};
pub use types::{
    Access, AhAttr, ConnectOptions, CqConfig, DciStreams, DeviceCaps, Endpoint, GidEntry, GidType,
    GlobalRoute, PacingCaps, ParseEndpointError, PortInfo, QpConfig, QpPsn, QpSizes, QpState,
    RateLimit, Transition, Transport,
};

/// The README's examples, compiled and run as doctests.
#[cfg(all(doctest, feature = "sim"))]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
