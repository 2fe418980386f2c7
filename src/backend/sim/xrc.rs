//! XRC on the model: domains, XRC SRQs (bound to a domain and a CQ) and target QPs, as
//! the [`Backend`](crate::backend::Backend) methods of [`Sim`] ask for them.

use std::sync::atomic::Ordering;

use crate::error::Error;
use crate::mem::Memory;
use crate::rq::RqDesc;

use super::{device_error, hw, Sim, SimCq, SimPd, SimQp, SimSrq, SimXrcd};

impl Sim {
    pub(super) fn xrcd(&self) -> Result<SimXrcd, Error> {
        let xrcd = self.nic.alloc_xrcd().map_err(|e| match e {
            hw::HwError::NotSupported(_) => {
                Error::Unsupported("XRC (the device does not report IBV_DEVICE_XRC)")
            }
            e => device_error("open XRC domain")(e),
        })?;
        Ok(SimXrcd {
            nic: self.nic.clone(),
            xrcd,
        })
    }

    pub(super) fn xrc_srq(
        &self,
        pd: &SimPd,
        xrcd: &SimXrcd,
        cq: &SimCq,
        entries: u32,
        max_sge: u32,
    ) -> Result<(SimSrq, RqDesc, u32, u32), Error> {
        // A user index of this context's own (rdma-core's `mlx5_store_uidx` gives each XRC
        // SRQ one under CQE version 1): unique among its XRC SRQs.
        let user_index = self.next_uidx.fetch_add(1, Ordering::Relaxed) & 0xff_ffff;
        let x = hw::XrcSrqParams {
            xrcd: xrcd.xrcd,
            cqn: cq.cqn,
            user_index,
        };
        let (handle, desc, srqn) = self.srq(pd, entries, max_sge, Some(&x))?;
        let key = if self.nic.cqe_version() == 1 {
            user_index
        } else {
            srqn
        };
        Ok((handle, desc, srqn, key))
    }

    pub(super) fn xrc_target(&self, xrcd: &SimXrcd) -> Result<(SimQp, u32), Error> {
        let qpn = self
            .nic
            .create_xrc_tgt_qp(xrcd.xrcd)
            .map_err(device_error("create XRC target QP"))?;
        let handle = SimQp {
            nic: self.nic.clone(),
            qpn,
            dc_key: 0,
            _buf: Memory::new(0)?,
            _dbrec: Memory::new(0)?,
        };
        Ok((handle, qpn))
    }
}
