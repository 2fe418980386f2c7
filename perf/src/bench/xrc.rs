//! `-c XRC`: a side's XRC domain, its one XRC SRQ and the XRC target of each QP index.
//!
//! As perftest (`ctx_xrcd_create`, `ctx_xrc_srq_create`, `ctx_xrc_qp_create`): one XRC
//! SRQ per side, on the side's CQ, whose number every record carries; this side's
//! initiator of index `q` connects to the peer's target of index `q` and names the peer's
//! SRQ in each WQE, and this side's target `q` serves the peer's initiator `q`. Unlike
//! perftest, every side has both (as `-c DC` here has DCIs and DCTs on both sides), so
//! `-b` and the latency tests need no second half of QPs.

use mlx5_direct::{
    ConnectOptions, Context, Cq, Endpoint, ProtectionDomain, SharedRecvQueue, XrcSrq, XrcTarget,
};

use super::{Device, Error};
use crate::exchange::{QpRecord, XrcRecord};

/// One side's XRC receiving half.
pub(super) struct XrcSide<B: Device> {
    /// The side's XRC SRQ (it keeps the domain open).
    srq: XrcSrq<B>,
    /// The target of each QP index.
    targets: Vec<XrcTarget<B>>,
}

impl<B: Device> XrcSide<B> {
    /// Opens the domain, its SRQ of `rx_depth` receives completing on `cq`, and `qps`
    /// targets.
    pub(super) fn new(
        ctx: &Context<B>,
        pd: &ProtectionDomain<B>,
        cq: &Cq<B>,
        rx_depth: u32,
        qps: u32,
    ) -> Result<Self, Error> {
        let xrcd = ctx.open_xrcd()?;
        let srq = xrcd.create_srq(pd, cq, rx_depth, 1)?;
        let targets = (0..qps)
            .map(|_| xrcd.create_target())
            .collect::<Result<_, _>>()?;
        Ok(XrcSide { srq, targets })
    }

    /// What the peer needs of QP index `q`: its target and this side's SRQ number.
    pub(super) fn record(&self, q: usize) -> Result<XrcRecord, Error> {
        let target = &self.targets[q];
        Ok(XrcRecord {
            target: target.qpn(),
            psn: target.endpoint()?.psn,
            srqn: self.srq.srqn(),
        })
    }

    /// Connects target `q` to the peer's initiator `remote` (its record's own address).
    pub(super) fn connect(
        &mut self,
        q: usize,
        remote: &QpRecord,
        options: &ConnectOptions,
    ) -> Result<(), Error> {
        let initiator = Endpoint {
            lid: remote.lid,
            gid: remote.gid,
            qpn: remote.qpn,
            psn: remote.psn,
        };
        self.targets[q].connect(&initiator, options)?;
        Ok(())
    }

    /// The QP index whose target is `qpn` (a receive completion names the target).
    pub(super) fn index_of(&self, qpn: u32) -> Option<usize> {
        self.targets.iter().position(|t| t.qpn() == qpn)
    }

    /// The SRQ, to post receives on.
    pub(super) fn srq(&mut self) -> &mut SharedRecvQueue {
        &mut self.srq
    }
}

/// The peer's target of `remote`, which this side's initiator connects to.
pub(super) fn target_endpoint(remote: &QpRecord) -> Result<Endpoint, Error> {
    let x = remote
        .xrc
        .ok_or("-c XRC: the peer's record has no XRC target and SRQ number")?;
    Ok(Endpoint {
        lid: remote.lid,
        gid: remote.gid,
        qpn: x.target,
        psn: x.psn,
    })
}
