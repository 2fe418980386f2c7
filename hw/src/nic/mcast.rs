//! UD multicast in the public API: attaching a QP to a group and detaching it, and the
//! per-QP loopback block (docs/model.md, "UD multicast").

use crate::mcast::{is_mcast_gid, is_mcast_lid};
use crate::nic::Nic;
use crate::state::{McastGroup, NicState};
use crate::types::{HwError, LinkLayer, QpState, Transport};

impl Nic {
    /// Attach UD QP `qpn` to the multicast group of MGID `gid` and MLID `lid`
    /// (`ibv_attach_mcast`): the QP then receives the datagrams sent to the group. The
    /// checks are the kernel's `ib_attach_mcast`: a multicast `gid`
    /// (`rdma_is_multicast_addr`), a UD QP and, on an InfiniBand port, a multicast `lid`
    /// (0xC000..=0xFFFE; RoCE ignores it) — else `InvalidParam`. Attaching the same
    /// (`gid`, `lid`) again does nothing, as uverbs' `ib_uverbs_attach_mcast` finds it in
    /// the QP's list; the same group with another MLID is a second attachment and the QP
    /// still receives one copy (`ibv_attach_mcast(3)`). A group beyond
    /// `McastConfig::max_groups`, or a QP beyond `McastConfig::max_qps_per_group` in one, is
    /// `OutOfResources` (the firmware's limit error; its status is not public). Any state.
    pub fn attach_mcast(&self, qpn: u32, gid: &[u8; 16], lid: u16) -> Result<(), HwError> {
        self.with(|n| {
            let qpi = check(n, qpn, gid, lid)?;
            let cfg = n.cfg.mcast;
            match n.mcast.iter().position(|g| g.gid == *gid) {
                Some(gi) => {
                    let g = &mut n.mcast[gi];
                    if g.members.contains(&(qpi, lid)) {
                        return Ok(());
                    }
                    if !g.has(qpi) && g.qps().count() >= cfg.max_qps_per_group as usize {
                        return Err(HwError::OutOfResources);
                    }
                    g.members.push((qpi, lid));
                }
                None => {
                    if n.mcast.len() >= cfg.max_groups as usize || cfg.max_qps_per_group == 0 {
                        return Err(HwError::OutOfResources);
                    }
                    n.mcast.push(McastGroup {
                        gid: *gid,
                        members: vec![(qpi, lid)],
                    });
                }
            }
            Ok(())
        })
    }

    /// Detach QP `qpn` from the group of `gid` and `lid` (`ibv_detach_mcast`): the checks
    /// of [`Nic::attach_mcast`], and an attachment of exactly that (`gid`, `lid`), else
    /// `InvalidParam` (uverbs' `ib_uverbs_detach_mcast` answers EINVAL when the QP's list
    /// lacks it). A group left without QPs is gone.
    pub fn detach_mcast(&self, qpn: u32, gid: &[u8; 16], lid: u16) -> Result<(), HwError> {
        self.with(|n| {
            let qpi = check(n, qpn, gid, lid)?;
            let gi = n
                .mcast
                .iter()
                .position(|g| g.members.contains(&(qpi, lid)) && g.gid == *gid)
                .ok_or(HwError::InvalidParam(
                    "the QP is not attached to that group",
                ))?;
            let g = &mut n.mcast[gi];
            g.members.retain(|&m| m != (qpi, lid));
            if g.members.is_empty() {
                n.mcast.remove(gi);
            }
            Ok(())
        })
    }

    /// Block the loopback of the multicast QP `qpn` sends: its datagrams no longer reach
    /// the QPs of this NIC attached to their group (`block_lb_mc` in the QP context, which
    /// the kernel sets for `IB_QP_CREATE_BLOCK_MULTICAST_LOOPBACK`, rdma-core's
    /// `IBV_QP_CREATE_BLOCK_SELF_MCAST_LB`). A creation flag: only in RESET
    /// (`InvalidTransition` after), and only on a device with the cap
    /// (`McastConfig::block_loopback`, else `NotSupported`: the kernel's
    /// `process_create_flags` refuses a flag without its cap with EOPNOTSUPP).
    pub fn block_mcast_loopback(&self, qpn: u32) -> Result<(), HwError> {
        self.with(|n| {
            let qpi = n.qp_index(qpn).ok_or(HwError::NoSuchObject)?;
            if !n.cfg.mcast.block_loopback {
                return Err(HwError::NotSupported("block_lb_mc"));
            }
            let q = n.qp(qpi);
            if q.state != QpState::Reset {
                return Err(HwError::InvalidTransition);
            }
            q.block_mcast_loopback = true;
            Ok(())
        })
    }
}

/// `ib_attach_mcast`'s checks: the QP exists and is UD, `gid` is multicast and, on an
/// InfiniBand port, `lid` is a multicast LID. Returns the QP's index.
fn check(n: &mut NicState, qpn: u32, gid: &[u8; 16], lid: u16) -> Result<usize, HwError> {
    let qpi = n.qp_index(qpn).ok_or(HwError::NoSuchObject)?;
    if !is_mcast_gid(gid) {
        return Err(HwError::InvalidParam("MGID is not a multicast address"));
    }
    if n.qp(qpi).transport != Transport::Ud {
        return Err(HwError::InvalidParam("only UD QPs join multicast groups"));
    }
    if n.cfg.link_layer == LinkLayer::InfiniBand && !is_mcast_lid(lid) {
        return Err(HwError::InvalidParam("MLID is not a multicast LID"));
    }
    Ok(qpi)
}
