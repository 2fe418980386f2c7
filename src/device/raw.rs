//! Raw packet QPs: the checks of their creation, their bring-up ([`Qp::activate_raw`]),
//! the device's Ethernet capabilities ([`Context::eth_caps`]) and the steering rules that
//! deliver frames to them ([`Qp::create_flow`], [`Flow`]).

use std::sync::Arc;

use crate::backend::{Backend, FlowHandle};
use crate::error::Error;
use crate::eth::{EthCaps, FlowRule};
use crate::types::{QpState, Transition, Transport};

use super::context::Context;
use super::cq::Cq;
use super::qp::Qp;

/// What creating a QP checks of its CQs for raw packet QPs: a raw packet QP's receive
/// CQ serves it alone (its receive CQEs carry the steering rule's flow tag where other
/// QPs' carry the QPN, so with CQE version 0 nothing else tells them apart: rdma-core
/// finds raw QPs by the CQE's user index), and no QP joins a CQ that serves one. Returns
/// the device's Ethernet capabilities for a raw packet QP.
pub(super) fn check_cqs<B: Backend>(
    ctx: &Context<B>,
    send_cq: &Cq<B>,
    recv_cq: &Cq<B>,
    srq: bool,
    raw: bool,
) -> Result<Option<EthCaps>, Error> {
    let joined = |cq: &Cq<B>| cq.inner.attachments.serves_eth_rq();
    if joined(send_cq) || joined(recv_cq) {
        return Err(Error::InvalidArgument(
            "a CQ that serves a raw packet QP's receive queue serves no other QP",
        ));
    }
    if !raw {
        return Ok(None);
    }
    if srq {
        // The kernel's raw packet RQ is an inline memory RQ (`create_raw_packet_qp_rq`).
        return Err(Error::InvalidArgument("a raw packet QP takes no SRQ"));
    }
    if recv_cq.inner.attachments.serves_any() {
        return Err(Error::InvalidArgument(
            "a raw packet QP's receive CQ must serve it alone",
        ));
    }
    ctx.backend.eth_caps().map(Some)
}

impl<B: Backend> Context<B> {
    /// The device's Ethernet capabilities: its MAC, the inline header raw sends must carry,
    /// enhanced multi-packet send, striding receive queues, the TSO and frame limits.
    pub fn eth_caps(&self) -> Result<EthCaps, Error> {
        self.backend.eth_caps()
    }
}

/// A steering rule delivering frames to a raw packet QP ([`Qp::create_flow`]) or an RSS
/// QP ([`RssQp::create_flow`](crate::RssQp::create_flow)); destroyed when dropped. It
/// keeps its QP's device object alive (the kernel refuses to destroy a QP a rule steers
/// to).
#[derive(Debug)]
pub struct Flow {
    // Dropped before the QP (field order).
    _handle: FlowHandle,
    _target: Arc<dyn core::fmt::Debug + Send + Sync>,
}

impl Flow {
    pub(super) fn new(handle: FlowHandle, target: Arc<dyn core::fmt::Debug + Send + Sync>) -> Flow {
        Flow {
            _handle: handle,
            _target: target,
        }
    }
}

impl<B: Backend> Qp<B> {
    /// Brings a raw packet QP from RESET to RTS (`IBV_QP_PORT` at INIT, nothing at RTR and
    /// RTS): its receive queue takes the frames steering gives it from INIT on, its send
    /// queue sends with [`SendQueue::post_eth`](crate::SendQueue::post_eth).
    pub fn activate_raw(&mut self, port: u8) -> Result<(), Error> {
        if self.core.transport != Transport::Raw {
            return Err(Error::InvalidArgument(
                "activate_raw on a QP that is not raw packet",
            ));
        }
        if self.state() != QpState::Reset {
            return Err(Error::WrongState {
                operation: "activate",
                state: self.state(),
            });
        }
        self.modify(Transition::InitRaw { port }, QpState::Init)?;
        self.port = port;
        if let Some(rq) = &mut self.rq {
            rq.set_ready(true);
        }
        self.modify(Transition::RtrRaw, QpState::Rtr)?;
        self.modify(Transition::RtsRaw, QpState::Rts)?;
        self.sq.set_ready(true);
        Ok(())
    }

    /// Creates the steering rule `rule` on the QP's port, delivering the frames it matches
    /// to this raw packet QP (`ibv_create_flow`). Refused as the device refuses: a rule
    /// the device cannot match ([`Error::Unsupported`]), conflicting specs or a tag on a
    /// default rule ([`Error::InvalidArgument`]).
    pub fn create_flow(&self, rule: &FlowRule) -> Result<Flow, Error> {
        if self.core.transport != Transport::Raw {
            return Err(Error::InvalidArgument(
                "steering rules deliver to raw packet QPs",
            ));
        }
        let handle = self
            .ctx()
            .backend
            .create_flow(&self.core.handle, self.port, rule)?;
        Ok(Flow::new(handle, self.core.clone()))
    }
}
