//! The multicast groups a NIC's QPs are attached to: the device's group table
//! (`ATTACH_TO_MCG`, keyed by MGID and QPN) with the MLIDs each attach named, as the
//! kernel's uverbs keeps them per QP.

/// One multicast group of a NIC and the attachments to it.
pub(crate) struct McastGroup {
    /// The MGID.
    pub(crate) gid: [u8; 16],
    /// (QP index, MLID) of every attachment; a QP attached with two MLIDs appears twice
    /// and still receives one copy.
    pub(crate) members: Vec<(usize, u16)>,
}

impl McastGroup {
    /// Whether QP index `qpi` is attached (with any MLID).
    pub(crate) fn has(&self, qpi: usize) -> bool {
        self.members.iter().any(|&(q, _)| q == qpi)
    }

    /// The distinct QPs attached, in the order they first attached.
    pub(crate) fn qps(&self) -> impl Iterator<Item = usize> + '_ {
        self.members
            .iter()
            .enumerate()
            .filter(|&(i, &(q, _))| self.members[..i].iter().all(|&(p, _)| p != q))
            .map(|(_, &(q, _))| q)
    }
}
