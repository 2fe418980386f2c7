//! XRC in the public API: XRC domains, XRC SRQs and XRC target QPs (docs/model.md, "XRC").
//! An XRC initiator is a QP of `Transport::XrcIni` made by [`Nic::create_qp`].

use crate::nic::{free, insert, slot, Nic};
use crate::state::{Qp, CQ_UAR, QPN_BASE, XRCDN_BASE};
use crate::types::{HwError, SrqParams, Transport, XrcSrqParams};

impl Nic {
    /// Open an XRC domain (`ibv_open_xrcd`; the kernel's `mlx5_ib_alloc_xrcd`, EOPNOTSUPP
    /// without the HCA cap `xrc`: `NotSupported` when `XrcConfig::supported` is off).
    pub fn alloc_xrcd(&self) -> Result<u32, HwError> {
        self.with(|n| {
            if !n.cfg.xrc.supported {
                return Err(HwError::NotSupported("xrc"));
            }
            Ok(insert(&mut n.xrcds, 0, XRCDN_BASE))
        })
    }

    /// Close an XRC domain; `Busy` while an XRC SRQ or target QP is in it
    /// (`ib_dealloc_xrcd_user`: EBUSY while its use count is not 0).
    pub fn dealloc_xrcd(&self, xrcd: u32) -> Result<(), HwError> {
        self.with(|n| free(&mut n.xrcds, xrcd, XRCDN_BASE))
    }

    /// Create an XRC SRQ (`ibv_create_srq_ex` with `IBV_SRQT_XRC`): an SRQ of `p`'s ring,
    /// in XRC domain `x.xrcd`, completing on CQ `x.cqn`. Its number (the one in the same
    /// space as basic SRQs) is what initiators put in their WQEs' XRC segment
    /// (`ibv_get_srq_num`). Its receive WQEs are a basic SRQ's; XRC targets of its domain
    /// deliver into it. No QP holds it: a target names it per request.
    ///
    /// # Safety
    /// As for [`Nic::create_srq`].
    pub unsafe fn create_xrc_srq(&self, p: &SrqParams, x: &XrcSrqParams) -> Result<u32, HwError> {
        if !self.with(|n| n.cfg.xrc.supported) {
            return Err(HwError::NotSupported("xrc"));
        }
        // SAFETY: the caller's contract is `new_srq`'s.
        unsafe { self.new_srq(p, Some(x)) }
    }

    /// Create an XRC target QP in XRC domain `xrcd` (`ibv_create_qp_ex` with
    /// `IBV_QPT_XRC_RECV`), in RESET: no send queue, receive queue, PD or CQ (uverbs
    /// exports target QPs "not associated with CQs or a PD", Linux b93f3c18), so no
    /// doorbell register either. It moves through RC's transitions and, connected to an
    /// XRC initiator, executes its requests, each in the XRC SRQ of its domain that the
    /// request's XRC segment names. Returns the QP number.
    pub fn create_xrc_tgt_qp(&self, xrcd: u32) -> Result<u32, HwError> {
        self.with(|n| {
            *slot(&mut n.xrcds, xrcd, XRCDN_BASE)? += 1;
            let qpi = n.qps.len();
            let qpn = QPN_BASE + qpi as u32;
            n.qps.push(Some(Qp {
                qpn,
                transport: Transport::XrcTgt,
                xrcd,
                // No register of its own; its CQ is its request's SRQ's (`xrc::bind`).
                uar: CQ_UAR,
                send_cq: usize::MAX,
                recv_cq: usize::MAX,
                mtu: 4096,
                ..Qp::default()
            }));
            Ok(qpn)
        })
    }
}
