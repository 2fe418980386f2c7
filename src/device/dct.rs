//! A DC target ([`Dct`]).

use core::sync::atomic::AtomicBool;
use std::sync::Arc;

use crate::backend::Backend;
use crate::cq::{QpEntry, RecvShared};
use crate::error::Error;
use crate::sq::SqShared;
use crate::types::{Access, ConnectOptions, QpState, Transition};

use super::cq::CqInner;
use super::pd::PdInner;
use super::qp::path_mtu;
use super::srq::SrqInner;

/// A DC target (DCT): executes the RC operations of every DCI that carries its DC key,
/// taking receives from its SRQ. Its completions (on the receive CQ) name the DCT as
/// [`Completion::qpn`](crate::Completion::qpn) and the sender as `src_qp` (the DCI) and
/// `slid`.
#[derive(Debug)]
pub struct Dct<B: Backend> {
    // Dropped first: the device object before the CQ, SRQ and PD it uses.
    pub(super) handle: B::Qp,
    pub(super) number: Option<u32>,
    pub(super) state: QpState,
    pub(super) dc_key: u64,
    pub(super) recv_cq: Arc<CqInner<B>>,
    pub(super) srq: Arc<SrqInner<B>>,
    pub(super) _pd: Arc<PdInner<B>>,
}

impl<B: Backend> Dct<B> {
    /// RESET → INIT (`port`, the rights granted to DCIs) → RTR (the path MTU, the RNR
    /// timer and, on RoCE, the GRH fields of `options`): DCIs reach it from now on, by
    /// [`Dct::number`].
    pub fn activate(
        &mut self,
        port: u8,
        access: Access,
        options: &ConnectOptions,
    ) -> Result<(), Error> {
        if self.state != QpState::Reset {
            return Err(Error::WrongState {
                operation: "activate",
                state: self.state,
            });
        }
        let ctx = &self._pd.ctx;
        if access.contains(Access::REMOTE_ATOMIC) && !ctx.caps().atomics {
            return Err(Error::InvalidArgument(
                "REMOTE_ATOMIC on a device without atomics",
            ));
        }
        options.validate()?;
        ctx.backend.modify_qp(
            &self.handle,
            &Transition::Init {
                port,
                access,
                pkey_index: options.pkey_index,
            },
        )?;
        self.state = QpState::Init;
        ctx.backend.modify_qp(
            &self.handle,
            &Transition::RtrDct {
                path_mtu: path_mtu(&*ctx.backend, port, options)?,
                min_rnr_timer: options.min_rnr_timer,
                hop_limit: options.hop_limit,
                traffic_class: options.traffic_class,
                sl: options.sl,
                flow_label: options.flow_label,
            },
        )?;
        self.state = QpState::Rtr;
        let number = ctx.backend.dct_number(&self.handle)?;
        self.recv_cq.attachments.attach(QpEntry {
            qpn: number,
            sq: Arc::new(SqShared::new(1, number)),
            recv: RecvShared::Srq(self.srq.shared.clone()),
            errored: Arc::new(AtomicBool::new(false)),
            sqe: false,
            streams: false,
            eth_rq: false,
        });
        self.number = Some(number);
        Ok(())
    }

    /// The DCT number DCIs address (in `dqp_dct`): known once in RTR (the device creates
    /// the DCT at INIT → RTR).
    pub fn number(&self) -> Result<u32, Error> {
        self.number.ok_or(Error::WrongState {
            operation: "read the DCT number",
            state: self.state,
        })
    }

    /// The DC access key DCIs must carry.
    pub fn dc_key(&self) -> u64 {
        self.dc_key
    }

    /// The state as last set (RESET, INIT or RTR: a DCT has no other).
    pub fn state(&self) -> QpState {
        self.state
    }

    /// The backend handle.
    pub fn handle(&self) -> &B::Qp {
        &self.handle
    }
}

impl<B: Backend> Drop for Dct<B> {
    fn drop(&mut self) {
        if let Some(number) = self.number {
            self.recv_cq.attachments.detach(number);
        }
    }
}
