//! rdma_cm connections of QPs the driver created: the part that moves a [`Qp`], above the
//! control objects. The `verbs` backend's [`cm`](crate::backend::verbs::cm) does the
//! librdmacm calls with plain descriptions (addresses, QP numbers, the private data, the
//! attributes `rdma_init_qp_attr` returns); this module reads what it needs from the QP
//! (its record, its device's rights and depths) and applies each transition to it with
//! `Qp::step_by`, the only way a QP changes state outside [`Qp::connect`].
//!
//! - Active side ([`connect_qp`], also at `backend::verbs::cm::connect_qp`): resolve, INIT,
//!   `rdma_connect`, RTR, RTS, `rdma_establish`.
//! - Passive side ([`CmRequest::accept_qp`]): INIT, RTR, RTS, `rdma_accept`.

use std::net::SocketAddr;

use crate::backend::verbs::cm::{
    accept, depths, resolve, CmConnection, CmOptions, CmRequest, Id, Step,
};
use crate::backend::verbs::Verbs;
use crate::cm::{CmError, CmPrivateData};
use crate::device::Qp;
use crate::error::Error;
use crate::types::{Access, Endpoint};

impl Id {
    /// Moves `qp` through `step` with the CM's attributes.
    fn step(&self, qp: &mut Qp<Verbs>, step: Step) -> Result<(), Error> {
        let (mut attr, mask) = self.qp_attr(step)?;
        let port = attr.port_num;
        qp.step_by(step.state().1, port, |_, handle| {
            handle.modify(&mut attr, mask)
        })
    }
}

/// [`depths`] of `qp`'s device.
fn qp_depths(qp: &Qp<Verbs>, options: &CmOptions) -> (u8, u8) {
    use crate::backend::Backend;
    let caps = qp.backend().caps();
    depths(
        options.rd_atomic,
        Some((caps.max_dest_rd_atomic, caps.max_rd_atomic)),
    )
}

/// The peer's endpoint from its record.
fn endpoint_of(peer: &CmPrivateData) -> Endpoint {
    Endpoint {
        lid: peer.lid,
        gid: peer.gid,
        qpn: peer.qpn,
        psn: peer.psn,
    }
}

/// `mine` completed with what the QP says of itself.
fn record_of(qp: &Qp<Verbs>, mine: &CmPrivateData) -> Result<CmPrivateData, Error> {
    let ep = qp.endpoint()?;
    Ok(CmPrivateData {
        cm_qp: true,
        qpn: ep.qpn,
        psn: ep.psn,
        lid: ep.lid,
        gid: ep.gid,
        ..*mine
    })
}

/// The access the QP grants: `options.access`, or the device's default.
fn access_of(qp: &Qp<Verbs>, options: &CmOptions) -> Access {
    use crate::backend::Backend;
    options
        .access
        .unwrap_or_else(|| Access::remote_default(qp.backend().caps().atomics))
}

/// Connects `qp` (in RESET) to the listener at `to` through rdma_cm: the CM's attributes at
/// each transition, `mine` as the private data with the QP's QPN, PSN, LID and GID filled
/// in. Returns the connection (keep it while the QP is in use) with the peer's record.
pub fn connect_qp(
    qp: &mut Qp<Verbs>,
    to: SocketAddr,
    mine: &CmPrivateData,
    options: &CmOptions,
) -> Result<CmConnection, Error> {
    use crate::backend::Backend;
    let id = resolve(&to, options)?;
    id.same_device(qp.backend().name(), qp.port())?;
    let mine = record_of(qp, mine)?;
    id.step(
        qp,
        Step::Init {
            access: access_of(qp, options),
        },
    )?;
    let peer = id.request(qp.qpn(), &mine, options, qp_depths(qp, options))?;
    finish_qp(&id, qp, &mine, &peer, options)?;
    id.establish()?;
    Ok(CmConnection { id, peer })
}

/// RTR and RTS of a QP connected through `id`, with the PSNs of the two records.
fn finish_qp(
    id: &Id,
    qp: &mut Qp<Verbs>,
    mine: &CmPrivateData,
    peer: &CmPrivateData,
    options: &CmOptions,
) -> Result<(), Error> {
    if !peer.cm_qp {
        return Err(CmError::PrivateData("the peer's QP is not connected by rdma_cm").into());
    }
    let caps = {
        use crate::backend::Backend;
        qp.backend().caps()
    };
    id.step(
        qp,
        Step::Rtr {
            rq_psn: peer.psn,
            max_mtu: options.path_mtu,
            max_dest_rd_atomic: caps.max_dest_rd_atomic,
        },
    )?;
    id.step(
        qp,
        Step::Rts {
            sq_psn: mine.psn,
            max_rd_atomic: caps.max_rd_atomic,
        },
    )?;
    qp.connected_to(&endpoint_of(peer));
    Ok(())
}

impl CmRequest {
    /// Accepts with `qp` (in RESET, on the device and port the request came to): INIT, RTR,
    /// RTS with the CM's attributes, then `rdma_accept` with `mine` (the QP's QPN, PSN, LID
    /// and GID filled in), then the ESTABLISHED event.
    pub fn accept_qp(
        self,
        qp: &mut Qp<Verbs>,
        mine: &CmPrivateData,
        options: &CmOptions,
    ) -> Result<CmConnection, Error> {
        use crate::backend::Backend;
        options.check()?;
        let CmRequest { id, peer } = self;
        id.same_device(qp.backend().name(), qp.port())?;
        let mine = record_of(qp, mine)?;
        id.step(
            qp,
            Step::Init {
                access: access_of(qp, options),
            },
        )?;
        finish_qp(&id, qp, &mine, &peer, options)?;
        accept(id, peer, &mine, options, qp_depths(qp, options))
    }
}
