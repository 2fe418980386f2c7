//! `mlx5-hw`: a strict behavioural model of an NVIDIA/Mellanox mlx5 (ConnectX) RDMA NIC
//! and of the PCIe link in front of it.
//!
//! The model is the hardware for every test of `mlx5-direct`. It reads the same memory
//! formats a real ConnectX reads (send rings, receive rings, SRQ lists, doorbell records)
//! and writes the same CQEs, from process memory whose addresses the driver registers.
//! MMIO writes (doorbells, BlueFlame chunks, CQ arms) arrive through [`Nic::mmio_write`];
//! the work they start runs synchronously in the caller's thread, or, under
//! [`Fault::DeferExecution`], in the next [`Nic::progress`]. Everything a real NIC
//! would reject is rejected the hardware way: error CQE with the right syndrome, QP to
//! ERR, flush of the rest. Every transaction on the link is counted ([`PcieCounters`]).
//!
//! See `docs/model.md` in the workspace for what is modelled and what is simplified.
//!
//! # Quick start
//! ```
//! use mlx5_hw::{Fabric, Nic, NicConfig};
//! let fabric = Fabric::new();
//! let nic = Nic::new(&fabric, NicConfig::default());
//! assert_eq!(nic.port(1).unwrap().lid, 1);
//! let pd = nic.alloc_pd();
//! nic.dealloc_pd(pd).unwrap();
//! ```
#![deny(missing_docs)]
#![deny(unsafe_op_in_unsafe_fn)]

mod channel;
mod clock;
mod complete;
mod cq;
mod cqe;
mod cqz;
mod dc;
mod dm;
mod eth;
mod fast;
mod host;
mod mcast;
mod mmio;
mod nic;
mod pcie;
mod qp;
mod req;
mod resp;
mod roce;
mod sq;
mod state;
mod types;
mod uc;
mod ud;
mod wqe;
mod xfer;
mod xrc;

pub use clock::{ClockInfo, ClockShift};
pub use host::{in_space, set_remote_memory, RemoteMemory, SPACE_SHIFT};
pub use nic::{Fabric, Nic};
pub use pcie::{
    Completions, ContextCache, Dir, PcieConfig, PcieCounters, Purpose, Tlp, TlpKind,
    TranslationCache, DLLP_BYTES,
};
pub use types::{
    Access, AhAttr, AsyncEvent, BugClass, Caps, CqInfo, CqParams, DcRefusal, DriverBug, Event,
    Fault, GlobalRoute, HwError, NicConfig, PortAttr, QpInfo, QpParams, QpPsn, QpState,
    QpTransition, SrqParams, Stats, Transport,
};
pub use types::{CqCompression, CqePkey, MiniFormat, ZipConfig, ZipLayout, ZipPolicy};
pub use types::{DciStreamConfig, DciStreams, LinkLayer};
pub use types::{
    EthCaps, EthConfig, EthFilter, EthStats, FlowAttr, FlowKind, FlowSpec, HashFields, Ipv4Filter,
    Ipv6Filter, L4Filter, MinInline, RssQpParams, RxHash, Striding, StridingCaps, WqParams,
    WqState,
};
pub use types::{GidAddr, GidEntry, GidType, RoceGid};
pub use types::{McastConfig, McastJoin, PacingClock, PacketPacing, RateLimit};
pub use types::{XrcConfig, XrcRefusal, XrcSrqParams};
