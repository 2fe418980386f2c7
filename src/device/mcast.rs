//! A UD QP's multicast groups: [`Qp::attach_mcast`], [`Qp::detach_mcast`], and the
//! detaching of what is left before the QP is destroyed.

use std::sync::{MutexGuard, PoisonError};

use crate::backend::Backend;
use crate::error::{Error, McastRefusal};
use crate::mcast::McastGroup;
use crate::types::Transport;

use super::qp::{Qp, QpCore};

impl<B: Backend> QpCore<B> {
    fn groups(&self) -> MutexGuard<'_, Vec<McastGroup>> {
        self.mcast.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Detaches the QP from every group it is still attached to (before its destruction,
    /// which the kernel refuses while it is attached). A failure cannot be reported from
    /// `Drop`; the destruction then fails as it would have.
    pub(super) fn detach_all(&mut self) {
        let groups = std::mem::take(&mut *self.groups());
        for group in &groups {
            let _ = self._pd.ctx.backend.detach_mcast(&self.handle, group);
        }
    }
}

impl<B: Backend> Qp<B> {
    /// Attaches this UD QP to multicast group `group` (`ibv_attach_mcast`), in any state:
    /// it then receives, once activated ([`Qp::activate_ud`]) and with receives posted,
    /// every datagram sent to the group with its Q_Key, each with the GRH area (the DGID is
    /// the MGID). A sender addresses the group through an address handle whose DLID is the
    /// MLID and whose global route's DGID is the MGID, and
    /// [`AddressHandle::mcast_dest`](crate::AddressHandle::mcast_dest).
    ///
    /// Refused with [`Error::Multicast`] before the device is asked: a QP that is not UD,
    /// an MGID that is not multicast, on an InfiniBand port an MLID that is not a multicast
    /// LID (the kernel's EINVAL of `ib_attach_mcast`), and a group the QP is attached to
    /// already (the device would take the second attach as a no-op, and the first detach
    /// would end both); [`Error::Unsupported`] on a device without multicast
    /// ([`DeviceCaps::max_mcast_grp`](crate::DeviceCaps::max_mcast_grp) 0); by the device,
    /// [`McastRefusal::TableFull`]. The QP is detached from its groups when it is
    /// destroyed.
    pub fn attach_mcast(&self, group: &McastGroup) -> Result<(), Error> {
        let refuse = |why| Err(Error::Multicast(why));
        let transport = self.core.transport;
        if transport != Transport::Ud {
            return refuse(McastRefusal::NotUd { transport });
        }
        if !group.has_multicast_gid() {
            return refuse(McastRefusal::NotMulticastGid);
        }
        let backend = &self.core._pd.ctx.backend;
        if backend.caps().max_mcast_grp == 0 {
            return Err(Error::Unsupported(
                "multicast (the device's max_mcast_grp is 0)",
            ));
        }
        // RoCE ignores the MLID ("RoCE annex declares that multicast LID should be
        // ignored", `ib_attach_mcast`).
        if !backend.port(self.port)?.roce && !group.has_multicast_lid() {
            return refuse(McastRefusal::NotMulticastLid { mlid: group.mlid });
        }
        let mut groups = self.core.groups();
        if groups.contains(group) {
            return refuse(McastRefusal::AlreadyAttached);
        }
        backend.attach_mcast(&self.core.handle, group)?;
        groups.push(*group);
        Ok(())
    }

    /// Detaches this QP from `group` (`ibv_detach_mcast`): no datagram to the group reaches
    /// it after this returns. [`McastRefusal::NotAttached`] if [`Qp::attach_mcast`] did
    /// not attach it (uverbs' EINVAL).
    pub fn detach_mcast(&self, group: &McastGroup) -> Result<(), Error> {
        let mut groups = self.core.groups();
        let Some(i) = groups.iter().position(|g| g == group) else {
            return Err(Error::Multicast(McastRefusal::NotAttached));
        };
        self.core
            ._pd
            .ctx
            .backend
            .detach_mcast(&self.core.handle, group)?;
        groups.remove(i);
        Ok(())
    }

    /// The groups this QP is attached to, in the order they were attached.
    pub fn mcast_groups(&self) -> Vec<McastGroup> {
        self.core.groups().clone()
    }
}
