//! An address handle ([`AddressHandle`]): the address vector UD and DC sends carry.

use std::sync::Arc;

use crate::backend::{AhHandle, Backend};
use crate::mcast::MCAST_QPN;
use crate::prm::Av;
use crate::sq::{DcDest, UdDest};
use crate::types::AhAttr;

use super::pd::PdInner;

/// An address handle: the 48-byte address vector UD sends copy into each WQE, and the
/// backend object behind it.
#[derive(Debug)]
pub struct AddressHandle<B: Backend> {
    pub(super) av: Av,
    pub(super) attr: AhAttr,
    pub(super) compact: bool,
    pub(super) _handle: AhHandle,
    pub(super) _pd: Arc<PdInner<B>>,
}

impl<B: Backend> AddressHandle<B> {
    /// The address vector (`mlx5_wqe_av`), `dqp_dct` and Q_Key 0.
    pub fn av(&self) -> &Av {
        &self.av
    }

    /// What it was created for.
    pub fn attr(&self) -> &AhAttr {
        &self.attr
    }

    /// True if its WQEs carry the 16-byte compact AV
    /// ([`ProtectionDomain::create_compact_ah`](crate::ProtectionDomain::create_compact_ah)).
    pub fn is_compact(&self) -> bool {
        self.compact
    }

    /// The destination of a DC operation to DCT `dctn` with access key `dc_key` through
    /// this handle.
    pub fn dc_dest(&self, dctn: u32, dc_key: u64) -> DcDest<'_> {
        DcDest {
            av: &self.av,
            dctn,
            dc_key,
            compact: self.compact,
            stream: 0,
        }
    }

    /// The destination of a UD send to the multicast group this handle addresses (its DLID
    /// the group's MLID, its global route's DGID the MGID) with Q_Key `qkey`: the
    /// multicast QPN [`MCAST_QPN`]. Every QP attached to the group
    /// ([`Qp::attach_mcast`](crate::Qp::attach_mcast)) with that Q_Key receives a copy;
    /// the send completes as any UD send, when the datagram has left.
    pub fn mcast_dest(&self, qkey: u32) -> UdDest<'_> {
        self.dest(MCAST_QPN, qkey)
    }

    /// The destination of a UD send to QP `remote_qpn` with Q_Key `qkey` through this
    /// handle.
    pub fn dest(&self, remote_qpn: u32, qkey: u32) -> UdDest<'_> {
        UdDest {
            av: &self.av,
            remote_qpn,
            qkey,
            compact: self.compact,
        }
    }
}
