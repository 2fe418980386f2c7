//! mlx5-direct (work in progress).
#![deny(missing_docs)]
#![deny(unsafe_op_in_unsafe_fn)]

pub mod backend;
pub mod cq;
pub mod device;
pub mod error;
mod mem;
pub mod mmio;
pub mod null;
pub mod prm;
mod ring;
pub mod rq;
pub mod sq;

pub use cq::{Completion, CompletionQueue, Status, WcError, WcOpcode};
pub use device::{
    Access, ConnectOptions, Context, Cq, DeviceCaps, Endpoint, MemoryRegion, PortInfo,
    ProtectionDomain, Qp, QpConfig, QpState, Srq, Transition,
};
pub use error::{Error, PostError};
pub use rq::{RecvQueue, SharedRecvQueue};
pub use sq::{Data, DoorbellMode, Remote, SendFlags, SendOp, SendQueue, Sge};
