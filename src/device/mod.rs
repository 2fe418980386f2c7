//! User-facing objects: context, protection domain, memory region, CQ, SRQ, QP.
//!
//! Control objects are reference counted: a QP keeps its PD, CQs and SRQ alive, a memory
//! region its PD, every object its context, so teardown order is always right whatever
//! order values are dropped in. The data-path parts ([`crate::sq::SendQueue`],
//! [`crate::rq::RecvQueue`], [`crate::cq::CompletionQueue`]) are reached through `&mut`.
//!
//! One file per object: `context` ([`Context`], the asynchronous events and the error flags
//! they raise), `pd` ([`ProtectionDomain`], registration and the objects created in a PD),
//! `mr` ([`MemoryRegion`]), `cq` ([`Cq`]), `srq` ([`Srq`]), `ah` ([`AddressHandle`]), `qp`
//! ([`Qp`], its states, transitions and PSNs), `mcast` (a UD QP's multicast groups),
//! `qp_halves` ([`QpSender`], [`QpReceiver`]), `dct` ([`Dct`]) and `xrc` ([`XrcDomain`],
//! [`XrcSrq`], [`XrcTarget`], the XRC initiator's creation). Device memory is
//! [`crate::dm`], completion channels [`crate::channel`].

mod ah;
mod context;
mod cq;
mod dct;
mod mcast;
mod mr;
mod pd;
mod qp;
mod qp_halves;
mod raw;
mod srq;
mod wq;
mod xrc;

pub use ah::AddressHandle;
pub use context::Context;
pub use cq::Cq;
pub use dct::Dct;
pub use mr::MemoryRegion;
pub use pd::ProtectionDomain;
pub use qp::Qp;
pub use qp_halves::{QpReceiver, QpSender};
pub use raw::Flow;
pub use srq::Srq;
pub use wq::{RssQp, StridingWq};
pub use xrc::{XrcDomain, XrcSrq, XrcTarget};
