//! Per-QP rate limits (packet pacing) in the public API, and the pacer's clock
//! (docs/model.md, "Rate limits").

use crate::nic::Nic;
use crate::sq::run_sq;
use crate::state::{NicState, Pacer};
use crate::types::{HwError, QpState, RateLimit, Transport};

impl Nic {
    /// Set or remove the rate limit of QP `qpn` in RTS (`ibv_modify_qp_rate_limit`, an
    /// RTS -> RTS modify with `IBV_QP_RATE_LIMIT`): from now on its send queue leaves no
    /// faster than `limit.kbps` (0 removes the limit), with up to `limit.max_burst_sz`
    /// bytes at once after a pause. Refused as the stack refuses it:
    ///
    /// * `InvalidParam`: a burst or typical size without a rate or without the caps
    ///   (rdma-core's `mlx5_modify_qp_rate_limit`, EINVAL);
    /// * `InvalidTransition`: a QP not in RTS (only RTR -> RTS and RTS -> RTS take the
    ///   attribute, `qp_state_table`; the model offers the second);
    /// * `NotSupported`: a device without packet pacing (`PacketPacing::max_kbps` 0) or a
    ///   QP of a transport its caps do not name (`__mlx5_ib_modify_qp`: EOPNOTSUPP; a raw
    ///   packet QP is always named);
    /// * `InvalidParam`: a rate outside `min_kbps..=max_kbps` (`mlx5_rl_add_rate`:
    ///   "Invalid rate", EINVAL);
    /// * `OutOfResources`: a limit no QP of the NIC has while `PacketPacing::rates`
    ///   distinct limits are in use (`mlx5_rl_add_rate`: ENOSPC). The new limit is
    ///   added before the QP's old one is released, as the kernel does.
    ///
    /// A QP whose head WQE was waiting for its old limit is run under the new one at once.
    pub fn modify_qp_rate_limit(&self, qpn: u32, limit: &RateLimit) -> Result<(), HwError> {
        self.with_world(|w, i| {
            let n = &mut w.nics[i];
            let qpi = n.qp_index(qpn).ok_or(HwError::NoSuchObject)?;
            check(n, qpi, limit)?;
            let old = n.qp(qpi).pacer;
            let new = match (limit.kbps, old) {
                (0, _) => None,
                (_, Some(p)) => Some(p.relimit(*limit)),
                (_, None) => Some(Pacer::new(*limit)),
            };
            n.set_pacer(qpi, new);
            if old.is_some_and(|p| p.wait.is_some()) {
                run_sq(w, i, qpi, &[]);
            }
            Ok(())
        })
    }

    /// The rate limit of QP `qpn` (`kbps` 0: none).
    pub fn qp_rate_limit(&self, qpn: u32) -> Result<RateLimit, HwError> {
        self.with(|n| {
            let qpi = n.qp_index(qpn).ok_or(HwError::NoSuchObject)?;
            Ok(n.qp(qpi).pacer.map(|p| p.limit).unwrap_or_default())
        })
    }

    /// The pacer's clock now, in nanoseconds: since the NIC was made on
    /// `PacingClock::Host`, as advanced on `PacingClock::Manual`.
    pub fn pacing_clock(&self) -> u64 {
        self.with(|n| n.pacing.now() / 1000)
    }

    /// Move a `PacingClock::Manual` clock on by `ns` nanoseconds. Nothing runs until the
    /// next doorbell or [`Nic::progress`]. `InvalidParam` on the host's clock.
    pub fn advance_pacing_clock(&self, ns: u64) -> Result<(), HwError> {
        self.with(|n| match n.pacing.manual.as_mut() {
            Some(ps) => {
                *ps = ps.saturating_add(ns.saturating_mul(1000));
                Ok(())
            }
            None => Err(HwError::InvalidParam(
                "the pacing clock is the host's, not a manual one",
            )),
        })
    }
}

/// The checks of a rate limit `limit` for QP index `qpi` (see
/// [`Nic::modify_qp_rate_limit`]).
fn check(n: &mut NicState, qpi: usize, limit: &RateLimit) -> Result<(), HwError> {
    let caps = n.cfg.packet_pacing;
    // In the order they are made: rdma-core's, the core's state table, the driver's.
    let sized = limit.max_burst_sz != 0 || limit.typical_pkt_sz != 0;
    if sized && (limit.kbps == 0 || !caps.burst) {
        return Err(HwError::InvalidParam(
            "burst and typical packet size need a rate and the burst caps",
        ));
    }
    let q = n.qp(qpi);
    if q.state != QpState::Rts {
        return Err(HwError::InvalidTransition);
    }
    let paced = match q.transport {
        // Every mlx5 kernel that reports pacing names raw packet QPs in `supported_qpts`
        // (`mlx5_ib_query_device`), with no cap of their own.
        Transport::Raw => true,
        Transport::Ud => caps.ud,
        Transport::Uc => caps.uc,
        Transport::Rc => caps.rc,
        _ => false,
    };
    if caps.max_kbps == 0 || !paced {
        return Err(HwError::NotSupported("packet pacing on this QP type"));
    }
    if limit.kbps == 0 {
        return Ok(());
    }
    if !(caps.min_kbps..=caps.max_kbps).contains(&limit.kbps) {
        return Err(HwError::InvalidParam("rate outside qp_rate_limit_min..max"));
    }
    let mut in_use: Vec<RateLimit> = Vec::new();
    for p in n.qps.iter().flatten().filter_map(|q| q.pacer) {
        if !in_use.contains(&p.limit) {
            in_use.push(p.limit);
        }
    }
    if !in_use.contains(limit) && in_use.len() >= usize::from(caps.rates) {
        return Err(HwError::OutOfResources);
    }
    Ok(())
}
