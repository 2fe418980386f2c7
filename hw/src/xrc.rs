//! XRC (docs/model.md, "XRC"): the XRC segment an initiator's WQE carries after its
//! control segment, and the target side choosing the SRQ a request lands in by the number
//! in it.
//!
//! * The segment is rdma-core's `struct mlx5_wqe_xrc_seg` (providers/mlx5/mlx5.h; the
//!   kernel's include/linux/mlx5/qp.h): a BE32 `xrc_srqn` and 12 reserved bytes, written
//!   right after the control segment of every XRC send WQE (`_mlx5_post_send` for
//!   `IBV_QPT_XRC_SEND`, `mlx5_send_wr_set_xrc_srqn`), before the remote-address, atomic
//!   and data segments.
//! * An XRC target QP has no receive queue, PD or CQ of its own (Linux b93f3c18 "TGT QPs
//!   are not associated with CQs or a PD"): each request takes the XRC SRQ it names, which
//!   must belong to the target's XRC domain ("XRCDs are used to limit which XRC SRQs an
//!   incoming message can target", 59991f94eb32). The model loads the SRQ's receive queue,
//!   CQ, PD and user index into the target's context for the request (`bind`), so the
//!   responder runs as for any QP on an SRQ.

use crate::cq::raise_async;
use crate::cqe::synd;
use crate::qp::fail;
use crate::state::NicState;
use crate::types::{AsyncEvent, XrcRefusal};
use crate::wqe::be32;

/// Size of `mlx5_wqe_xrc_seg`.
pub(crate) const SEG_BYTES: usize = 16;

/// The remote SRQ number an XRC initiator's WQE names: bits 23..0 of `xrc_srqn`, the BE32
/// at bytes 16..20 (after the 16-byte control segment).
pub(crate) fn srqn(wqe: &[u8]) -> u32 {
    be32(wqe, 16) & 0xff_ffff
}

/// Load XRC SRQ `srqn` into XRC target QP index `qpi` of `nic` for the request arriving:
/// its receive queue, CQ, PD (the target's rkey checks use it), user index and address
/// space. A number that names no XRC SRQ, or one of another XRC domain, is refused as
/// `NicConfig::xrc` says: `Err(Some(syndrome))` is a NAK the initiator completes with
/// (the target moves to ERR), `Err(None)` a request dropped without an answer.
pub(crate) fn bind(nic: &mut NicState, qpi: usize, srqn: u32) -> Result<(), Option<u8>> {
    let xrcd = nic.qp(qpi).xrcd;
    let found = nic.srq_index(srqn).and_then(|si| {
        let s = nic.srqs[si].as_ref()?;
        Some((si, s.xrc?, s.pdn, s.buf))
    });
    let refused = match found {
        None => &mut nic.stats.xrc_unknown_srq,
        Some((_, x, ..)) if x.xrcd != xrcd => &mut nic.stats.xrc_domain_mismatch,
        Some((si, x, pdn, buf)) => {
            let q = nic.qp(qpi);
            q.srq = Some(si);
            q.recv_cq = x.cq;
            q.pdn = pdn;
            q.user_index = x.user_index;
            q.space = buf & crate::host::SPACE_MASK;
            return Ok(());
        }
    };
    *refused += 1;
    match nic.cfg.xrc.refusal {
        XrcRefusal::Drop => Err(None),
        XrcRefusal::Nak => {
            // An Invalid Request NAK that consumed no receive: the target reports it as an
            // affiliated asynchronous error and moves to ERR, as an RC responder does.
            let qpn = nic.qp(qpi).qpn;
            raise_async(nic, AsyncEvent::QpRequestError { qpn });
            fail(nic, qpi);
            Err(Some(synd::REMOTE_INVAL_REQ_ERR))
        }
    }
}
