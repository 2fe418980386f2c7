//! UD ids: Service ID Resolution (cm.c `ib_send_cm_sidr_req`, `cm_sidr_req_handler`,
//! `ib_send_cm_sidr_rep`, `cm_sidr_rep_handler`; cma.c `cma_resolve_ib_udp`,
//! `cma_send_sidr_rep`, `cma_sidr_rep_handler`). The requester's CONNECT sends a SIDR REQ
//! (the REQ of [`super::ib`] with `sidr` set); the listener hears CONNECT_REQUEST with the
//! request's private data; its ACCEPT answers with the QP number and Q_Key of its UD QP,
//! its REJECT (or the CM, when no one can take the request) with a status; the requester
//! hears ESTABLISHED with the QP number, the Q_Key and the address handle of its route, or
//! UNREACHABLE with the status. No connection follows: neither side has anything to
//! disconnect.

use super::ib::{padded, IbState, Msg};
use super::State;
use crate::abi::ucma::not_in_headers::*;
use crate::abi::ucma::*;
use crate::abi::FromZeros;

/// A SIDR REP (`struct cm_sidr_rep_msg`).
#[derive(Clone, Debug)]
pub(super) struct SidrRep {
    /// The requester's connection (id, serial).
    to: (u32, u64),
    status: u32,
    qpn: u32,
    qkey: u32,
    private: [u8; IB_CM_SIDR_REP_PRIVATE_DATA_SIZE],
}

/// An event's `param.ud` carrying `private`.
pub(super) fn ud_param(private: &[u8]) -> rdma_ucm_ud_param {
    let mut u = rdma_ucm_ud_param::new_zeroed();
    u.private_data[..private.len()].copy_from_slice(private);
    u.private_data_len = private.len() as u8;
    u
}

/// The Q_Key a UD id of port space `ps` takes when none is given (`cma_set_default_qkey`):
/// `RDMA_UDP_QKEY`; for `RDMA_PS_IPOIB` the Q_Key of the IPoIB broadcast group, which the
/// fabric does not have (`ib_sa_get_mcmember_rec`: `EADDRNOTAVAIL`).
pub(super) fn default_qkey(ps: u16) -> Result<u32, i32> {
    match u32::from(ps) {
        RDMA_PS_IPOIB => Err(libc::EADDRNOTAVAIL),
        _ => Ok(RDMA_UDP_QKEY),
    }
}

impl State {
    /// The SIDR REP of `id`'s received request (`cma_send_sidr_rep`): status
    /// `IB_SIDR_SUCCESS` names QP `qpn` and the id's Q_Key; `EINVAL` unless the id holds
    /// a request not yet answered, or for more private data than the REP has room for.
    pub(super) fn send_sidr_rep(
        &mut self,
        id: u32,
        status: u32,
        qpn: u32,
        private: &[u8],
    ) -> Result<(), i32> {
        if private.len() > IB_CM_SIDR_REP_PRIVATE_DATA_SIZE {
            return Err(libc::EINVAL);
        }
        let i = self.ids.get_mut(&id).ok_or(libc::EINVAL)?;
        let qkey = match status {
            IB_SIDR_SUCCESS => default_qkey(i.ps)?,
            _ => 0,
        };
        let c = i.conn.as_mut().ok_or(libc::EINVAL)?;
        if c.state != IbState::SidrReqRcvd {
            return Err(libc::EINVAL);
        }
        c.state = IbState::Idle;
        if let Some(to) = c.peer {
            self.wire.push_back(Msg::SidrRep(Box::new(SidrRep {
                to,
                status,
                qpn: qpn & 0x00ff_ffff,
                qkey,
                private: padded(private),
            })));
        }
        Ok(())
    }

    /// A SIDR REP from the CM itself, to a request no id took (`cm_reject_sidr_req`).
    pub(super) fn sidr_rep_to(&mut self, to: (u32, u64), status: u32) {
        self.wire.push_back(Msg::SidrRep(Box::new(SidrRep {
            to,
            status,
            qpn: 0,
            qkey: 0,
            private: [0; IB_CM_SIDR_REP_PRIVATE_DATA_SIZE],
        })));
    }

    /// A SIDR REP arrives (`cma_sidr_rep_handler`): ESTABLISHED with the peer's QP, its
    /// Q_Key and the address handle of the route (`ib_init_ah_attr_from_path`), or
    /// UNREACHABLE with the REP's status; the REP's whole private data either way.
    pub(super) fn on_sidr_rep(&mut self, rep: SidrRep) {
        let Some(c) = self.conn_mut(rep.to) else {
            return;
        };
        if c.state != IbState::SidrReqSent {
            return;
        }
        c.state = IbState::Idle;
        c.req = None;
        let ah = c.av.path.ah_attr(c.av.sgid_index);
        let mut ud = ud_param(&rep.private);
        let (event, status) = match rep.status {
            IB_SIDR_SUCCESS => {
                ud.qp_num = rep.qpn;
                ud.qkey = rep.qkey;
                ud.ah_attr = ah;
                (RDMA_CM_EVENT_ESTABLISHED, 0)
            }
            s => (RDMA_CM_EVENT_UNREACHABLE, s),
        };
        let id = rep.to.0;
        if self.ids.get(&id).map(|i| i.state) == Some(super::Cma::Connect) {
            self.report_ud(id, event, status as i32, &ud);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_ipoib_ids_lack_a_default_qkey() {
        assert_eq!(default_qkey(RDMA_PS_UDP as u16), Ok(0x0123_4567));
        assert_eq!(default_qkey(RDMA_PS_IB as u16), Ok(RDMA_UDP_QKEY));
        assert_eq!(default_qkey(RDMA_PS_IPOIB as u16), Err(libc::EADDRNOTAVAIL));
    }

    #[test]
    fn the_ud_param_carries_the_private_data_and_its_length() {
        let u = ud_param(&[1, 2, 3]);
        assert_eq!(
            (&u.private_data[..4], u.private_data_len),
            (&[1, 2, 3, 0][..], 3)
        );
        assert_eq!((u.qp_num, u.qkey, u.ah_attr.dlid), (0, 0, 0));
    }
}
