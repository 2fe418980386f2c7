//! The QP attributes an id gives for each state (`rdma_init_qp_attr`, cma.c
//! `cma_init_qp_attr`; the connection's from `ib_cm_init_qp_attr`, cm.c).

use super::addr::{QPT_RC, QPT_UD};
use super::ib::{Conn, IbState};
use super::route::DEFAULT_PKEY;
use super::{Id, State};
use crate::abi::uverbs::ib_uverbs_qp_attr;
use crate::server::qp::{mask, state};

/// `IB_ACCESS_REMOTE_WRITE`, `_READ`, `_ATOMIC`.
const ACCESS_REMOTE_WRITE: u32 = 1 << 1;
const ACCESS_REMOTE_READ: u32 = 1 << 2;
const ACCESS_REMOTE_ATOMIC: u32 = 1 << 3;

impl State {
    /// `rdma_init_qp_attr` for `id`: the attributes of `qp_state` its connection gives
    /// (`ib_cm_init_qp_attr`), or, before it has one (and for UD), what the CM knows of the
    /// port (`cma_ib_init_qp_attr`); the RTR's receive PSN is always the id's own
    /// sequence number, and a set ACK timeout replaces the connection's.
    pub(super) fn init_qp_attr(&self, id: &Id, qp_state: u8) -> Result<ib_uverbs_qp_attr, i32> {
        let mut a = ib_uverbs_qp_attr {
            qp_state: u32::from(qp_state),
            ..Default::default()
        };
        let m = match id.conn.as_ref().filter(|_| id.qp_type != QPT_UD) {
            None => {
                let pkey = if id.dev.is_some_and(|_| id.pkey == 0) {
                    DEFAULT_PKEY
                } else {
                    id.pkey
                };
                if pkey & 0x7fff != DEFAULT_PKEY & 0x7fff {
                    return Err(libc::ENOENT);
                }
                a.pkey_index = 0;
                a.port_num = 1;
                let base = mask::STATE | mask::PKEY_INDEX | mask::PORT;
                if id.qp_type == QPT_UD {
                    a.qkey = super::sidr::default_qkey(id.ps)?;
                    base | mask::QKEY
                } else {
                    a.qp_access_flags = 0;
                    base | mask::ACCESS_FLAGS
                }
            }
            Some(c) => conn_qp_attr(c, qp_state, &mut a)?,
        };
        if qp_state == state::RTR {
            a.rq_psn = id.seq_num;
        }
        if m & mask::TIMEOUT != 0 {
            if let Some(t) = id.timeout {
                a.timeout = t;
            }
        }
        a.qp_attr_mask = m;
        Ok(a)
    }
}

/// `cm_init_qp_init_attr`, `cm_init_qp_rtr_attr`, `cm_init_qp_rts_attr`.
fn conn_qp_attr(c: &Conn, qp_state: u8, a: &mut ib_uverbs_qp_attr) -> Result<u32, i32> {
    use IbState::*;
    let rc = c.qp_type == QPT_RC;
    match qp_state {
        state::INIT if matches!(c.state, ReqSent | ReqRcvd | RepRcvd | RepSent | Established) => {
            a.qp_access_flags = ACCESS_REMOTE_WRITE;
            if c.responder_resources != 0 {
                a.qp_access_flags |= ACCESS_REMOTE_READ | ACCESS_REMOTE_ATOMIC;
            }
            a.pkey_index = 0;
            a.port_num = 1;
            Ok(mask::STATE | mask::ACCESS_FLAGS | mask::PKEY_INDEX | mask::PORT)
        }
        state::RTR if matches!(c.state, ReqRcvd | RepRcvd | RepSent | Established) => {
            a.ah_attr = c.av.path.ah_attr(c.av.sgid_index);
            a.path_mtu = u32::from(c.path_mtu);
            a.dest_qp_num = c.remote_qpn;
            a.rq_psn = c.rq_psn;
            let mut m = mask::STATE | mask::AV | mask::PATH_MTU | mask::DEST_QPN | mask::RQ_PSN;
            if rc {
                m |= mask::MAX_DEST_RD_ATOMIC | mask::MIN_RNR_TIMER;
                a.max_dest_rd_atomic = c.responder_resources;
                a.min_rnr_timer = 0;
            }
            Ok(m)
        }
        state::RTS if matches!(c.state, ReqRcvd | RepRcvd | RepSent | Established) => {
            a.sq_psn = c.sq_psn;
            let mut m = mask::STATE | mask::SQ_PSN;
            if rc {
                m |= mask::RETRY_CNT | mask::RNR_RETRY | mask::MAX_QP_RD_ATOMIC | mask::TIMEOUT;
                a.retry_cnt = c.retry_count;
                a.rnr_retry = c.rnr_retry_count;
                a.max_rd_atomic = c.initiator_depth;
                a.timeout = c.av.timeout;
            }
            Ok(m)
        }
        _ => Err(libc::EINVAL),
    }
}

#[cfg(test)]
mod tests {
    use super::super::ib::Av;
    use super::super::route::Path;
    use super::*;

    #[test]
    fn rts_and_rtr_take_the_connections_numbers() {
        let path = Path {
            dlid: 2,
            mtu: 5,
            rate: 16,
            ..Path::default()
        };
        let c = Conn {
            serial: 1,
            state: IbState::RepRcvd,
            peer: None,
            local_qpn: 0x10,
            remote_qpn: 0x20,
            sq_psn: 0x111,
            rq_psn: 0x222,
            initiator_depth: 4,
            responder_resources: 8,
            retry_count: 7,
            rnr_retry_count: 6,
            path_mtu: 5,
            qp_type: QPT_RC,
            av: Av {
                path,
                sgid_index: 0,
                timeout: 19,
            },
            req: None,
            retries: 0,
        };
        let mut a = ib_uverbs_qp_attr::default();
        let m = conn_qp_attr(&c, state::RTR, &mut a).unwrap();
        assert_eq!(
            m,
            mask::STATE
                | mask::AV
                | mask::PATH_MTU
                | mask::DEST_QPN
                | mask::RQ_PSN
                | mask::MAX_DEST_RD_ATOMIC
                | mask::MIN_RNR_TIMER
        );
        assert_eq!(
            (a.dest_qp_num, a.max_dest_rd_atomic, a.ah_attr.dlid),
            (0x20, 8, 2)
        );
        let mut a = ib_uverbs_qp_attr::default();
        conn_qp_attr(&c, state::RTS, &mut a).unwrap();
        assert_eq!(
            (
                a.sq_psn,
                a.retry_cnt,
                a.rnr_retry,
                a.max_rd_atomic,
                a.timeout
            ),
            (0x111, 7, 6, 4, 19)
        );
        let mut a = ib_uverbs_qp_attr::default();
        conn_qp_attr(&c, state::INIT, &mut a).unwrap();
        assert_eq!(
            a.qp_access_flags,
            ACCESS_REMOTE_WRITE | ACCESS_REMOTE_READ | ACCESS_REMOTE_ATOMIC
        );
        let sent = Conn {
            state: IbState::ReqSent,
            ..c.clone()
        };
        assert_eq!(
            conn_qp_attr(&sent, state::RTR, &mut a),
            Err(libc::EINVAL),
            "no RTR before the REP"
        );
        assert_eq!(conn_qp_attr(&c, state::SQD, &mut a), Err(libc::EINVAL));
    }
}
