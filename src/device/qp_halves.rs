//! The owned halves of a [`Qp::split`] QP ([`QpSender`], [`QpReceiver`]), each `Send`.

use std::ops::{Deref, DerefMut};
use std::sync::Arc;

use crate::backend::Backend;
use crate::rq::RecvQueue;
use crate::sq::SendQueue;
use crate::types::QpState;

use super::qp::{Qp, QpCore};

/// The send half of a [`Qp::split`] QP: its send queue (`Deref` to [`SendQueue`]), owned,
/// `Send`, keeping the QP alive.
#[derive(Debug)]
pub struct QpSender<B: Backend> {
    pub(super) sq: SendQueue<B::Uar>,
    pub(super) state: QpState,
    pub(super) port: u8,
    pub(super) core: Arc<QpCore<B>>,
}

impl<B: Backend> QpSender<B> {
    /// QP number.
    pub fn qpn(&self) -> u32 {
        self.core.qpn
    }

    /// The state when split, or [`QpState::Err`] once an error CQE or a fatal asynchronous
    /// event named the QP (as [`Qp::state`]).
    pub fn state(&self) -> QpState {
        self.core.state(self.state)
    }

    /// Puts the halves of one QP back together (to reset or reconnect it); gives them back
    /// if they are halves of different QPs.
    #[allow(clippy::result_large_err)] // the halves themselves are handed back, by design
    pub fn join(self, receiver: QpReceiver<B>) -> Result<Qp<B>, (QpSender<B>, QpReceiver<B>)> {
        if !Arc::ptr_eq(&self.core, &receiver.core) {
            return Err((self, receiver));
        }
        let QpSender {
            sq,
            state,
            port,
            core,
        } = self;
        Ok(Qp {
            sq,
            rq: receiver.rq,
            state,
            port,
            core,
        })
    }
}

impl<B: Backend> Deref for QpSender<B> {
    type Target = SendQueue<B::Uar>;
    fn deref(&self) -> &Self::Target {
        &self.sq
    }
}

impl<B: Backend> DerefMut for QpSender<B> {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.sq
    }
}

/// The receive half of a [`Qp::split`] QP: its receive queue (none with an SRQ), owned,
/// `Send`, keeping the QP alive.
#[derive(Debug)]
pub struct QpReceiver<B: Backend> {
    pub(super) rq: Option<RecvQueue>,
    pub(super) state: QpState,
    pub(super) core: Arc<QpCore<B>>,
}

impl<B: Backend> QpReceiver<B> {
    /// QP number.
    pub fn qpn(&self) -> u32 {
        self.core.qpn
    }

    /// The state when split, or [`QpState::Err`] once an error CQE or a fatal asynchronous
    /// event named the QP (as [`Qp::state`]).
    pub fn state(&self) -> QpState {
        self.core.state(self.state)
    }

    /// The receive queue (`None` when the QP uses an SRQ).
    pub fn rq(&mut self) -> Option<&mut RecvQueue> {
        self.rq.as_mut()
    }

    /// The receive queue, to read.
    pub fn recv_queue(&self) -> Option<&RecvQueue> {
        self.rq.as_ref()
    }
}
