//! Queue pairs: CREATE_QP (and its extended form), MODIFY_QP (both forms), QUERY_QP,
//! DESTROY_QP, as `ib_uverbs` (uverbs_cmd.c `create_qp`, `modify_qp`) and `mlx5_ib`
//! (qp.c `create_user_qp`, `mlx5_ib_modify_qp`) answer them for RC, UC and UD QPs, and for
//! mlx5's DC QPs (`IBV_QPT_DRIVER` with `MLX5_QP_FLAG_TYPE_DCI` / `_DCT`, what
//! `mlx5dv_create_qp` sends): a DCI is a send queue checked by `modify_dci_qp_is_ok`; a DCT
//! has no rings, takes its receives from an SRQ, and exists on the device only from its
//! RTR (`mlx5_ib_modify_dct`), which answers its number (`mlx5_ib_modify_qp_resp.dctn`).
//! A raw packet QP (`IBV_QPT_RAW_PACKET`, qp.c `create_raw_packet_qp`) has its RQ alone in
//! the program's buffer and its SQ in a second one (`mlx5_ib_create_qp.sq_buf_addr`), and
//! takes the port alone at INIT, nothing after.
//!
//! The attribute masks are checked against the kernel's state table (`ib_modify_qp_is_ok`,
//! drivers/infiniband/core/verbs.c `qp_state_table`), then the transition goes to the model,
//! which checks the values as firmware does. The QP's attributes are kept for QUERY_QP as
//! the kernel reports them; its state and PSNs are read from the model.

use super::cmd::{driver_request, request, Bundle, Res};
use super::context::Ctx;
use super::events::Kind;
use super::objects::{access, errno};
use super::uar::Uars;
use crate::abi::mlx5::*;
use crate::abi::uverbs::*;
use mlx5_hw::{in_space, Access, QpInfo, QpParams, QpState, QpTransition, Transport};

/// `enum ib_qp_attr_mask` (rdma/ib_verbs.h; the same bits as `enum ibv_qp_attr_mask`).
pub(crate) mod mask {
    pub const STATE: u32 = 1 << 0;
    pub const CUR_STATE: u32 = 1 << 1;
    pub const EN_SQD_ASYNC_NOTIFY: u32 = 1 << 2;
    pub const ACCESS_FLAGS: u32 = 1 << 3;
    pub const PKEY_INDEX: u32 = 1 << 4;
    pub const PORT: u32 = 1 << 5;
    pub const QKEY: u32 = 1 << 6;
    pub const AV: u32 = 1 << 7;
    pub const PATH_MTU: u32 = 1 << 8;
    pub const TIMEOUT: u32 = 1 << 9;
    pub const RETRY_CNT: u32 = 1 << 10;
    pub const RNR_RETRY: u32 = 1 << 11;
    pub const RQ_PSN: u32 = 1 << 12;
    pub const MAX_QP_RD_ATOMIC: u32 = 1 << 13;
    pub const ALT_PATH: u32 = 1 << 14;
    pub const MIN_RNR_TIMER: u32 = 1 << 15;
    pub const SQ_PSN: u32 = 1 << 16;
    pub const MAX_DEST_RD_ATOMIC: u32 = 1 << 17;
    pub const PATH_MIG_STATE: u32 = 1 << 18;
    pub const DEST_QPN: u32 = 1 << 20;
    pub const RATE_LIMIT: u32 = 1 << 25;
}

/// `enum ib_qp_state`.
pub(crate) mod state {
    pub const RESET: u8 = 0;
    pub const INIT: u8 = 1;
    pub const RTR: u8 = 2;
    pub const RTS: u8 = 3;
    pub const SQD: u8 = 4;
    pub const SQE: u8 = 5;
    pub const ERR: u8 = 6;
}

/// A QP of the context.
#[derive(Debug)]
pub(crate) struct Qp {
    pub(crate) qpn: u32,
    /// The model's UAR page of the QP.
    pub(crate) uar: u32,
    /// The net bfreg its doorbells and BlueFlame copies use.
    pub(crate) bfreg: u32,
    transport: Transport,
    /// A DCT's access key (`mlx5_ib_create_qp.access_key`), set on the device at RTR.
    dc_key: u64,
    /// The state the kernel believes (`qp->state`: the last one moved to).
    state: u8,
    /// What QUERY_QP reports (state and PSNs filled in from the model).
    attr: ib_uverbs_query_qp_resp,
    /// The handle of an XRC target's domain.
    xrcd: Option<u32>,
    /// The groups attached through ATTACH_MCAST (uverbs' `mcast_list` of the QP's uobject):
    /// (MGID, MLID).
    pub(crate) mcast: Vec<([u8; 16], u16)>,
}

/// `IB_QPT_DRIVER`: the QP type of mlx5's DC QPs.
const QPT_DRIVER: u8 = 0xff;

/// The transport of a uverbs QP type (and, for `IB_QPT_DRIVER`, mlx5's flags) the model
/// has.
fn transport(qp_type: u8, flags: u32) -> Result<Transport, i32> {
    match qp_type {
        IB_UVERBS_QPT_RC => Ok(Transport::Rc),
        IB_UVERBS_QPT_UC => Ok(Transport::Uc),
        IB_UVERBS_QPT_UD => Ok(Transport::Ud),
        IB_UVERBS_QPT_RAW_PACKET => Ok(Transport::Raw),
        IB_UVERBS_QPT_XRC_INI => Ok(Transport::XrcIni),
        IB_UVERBS_QPT_XRC_TGT => Ok(Transport::XrcTgt),
        QPT_DRIVER if flags & MLX5_QP_FLAG_TYPE_DCI != 0 => Ok(Transport::Dci),
        QPT_DRIVER if flags & MLX5_QP_FLAG_TYPE_DCT != 0 => Ok(Transport::Dct),
        QPT_DRIVER => Err(libc::EINVAL),
        _ => Err(libc::EOPNOTSUPP),
    }
}

/// The kernel's `qp_state_table` for RC, UC, UD and XRC (an initiator takes UC's receive
/// side and RC's send side; a target RC's masks but for RTR -> RTS, which requires only
/// the timeout and SQ PSN), `modify_dci_qp_is_ok` for a DCI and
/// `mlx5_ib_modify_dct`'s exact masks for a DCT: whether `cur -> next` is a transition and
/// which attributes it requires and allows.
fn transition_masks(cur: u8, next: u8, t: Transport) -> Option<(u32, u32)> {
    use mask::*;
    use state::*;
    if t == Transport::Dci {
        return Some(match (cur, next) {
            (_, RESET) => (0, 0),
            (RESET, INIT) => (PKEY_INDEX | PORT, 0),
            (INIT, INIT) => (0, PKEY_INDEX | PORT),
            (INIT, RTR) => (PATH_MTU, PKEY_INDEX | AV),
            (RTR, RTS) => (
                TIMEOUT | RETRY_CNT | RNR_RETRY | MAX_QP_RD_ATOMIC | SQ_PSN,
                MIN_RNR_TIMER,
            ),
            (RTS, RTS) => (0, MIN_RNR_TIMER),
            (c, ERR) if c != RESET => (0, 0),
            _ => return None,
        });
    }
    if t == Transport::Dct {
        return Some(match (cur, next) {
            (_, RESET) | (_, ERR) => (0, 0),
            (RESET, INIT) => (PKEY_INDEX | PORT | ACCESS_FLAGS, 0),
            (INIT, RTR) => (MIN_RNR_TIMER | AV | PATH_MTU, 0),
            _ => return None,
        });
    }
    if t == Transport::Raw {
        return Some(match (cur, next) {
            (_, RESET) | (_, ERR) => (0, 0),
            (RESET, INIT) => (PORT, 0),
            (INIT, INIT) => (0, PORT),
            (INIT, RTR) => (0, 0),
            // The rate limit (packet pacing) on the way to RTS and in RTS, as the table's
            // raw packet column allows it.
            (RTR, RTS) | (RTS, RTS) => (0, RATE_LIMIT),
            _ => return None,
        });
    }
    let (ud, uc) = (t == Transport::Ud, t == Transport::Uc);
    let (ini, tgt) = (t == Transport::XrcIni, t == Transport::XrcTgt);
    Some(match (cur, next) {
        (_, RESET) | (_, ERR) => (0, 0),
        (RESET, INIT) if ud => (PKEY_INDEX | PORT | QKEY, 0),
        (RESET, INIT) => (PKEY_INDEX | PORT | ACCESS_FLAGS, 0),
        (INIT, INIT) if ud => (0, PKEY_INDEX | PORT | QKEY),
        (INIT, INIT) => (0, PKEY_INDEX | PORT | ACCESS_FLAGS),
        (INIT, RTR) if ud => (0, PKEY_INDEX | QKEY),
        (INIT, RTR) if uc || ini => (
            AV | PATH_MTU | DEST_QPN | RQ_PSN,
            ALT_PATH | ACCESS_FLAGS | PKEY_INDEX,
        ),
        (INIT, RTR) => (
            AV | PATH_MTU | DEST_QPN | RQ_PSN | MAX_DEST_RD_ATOMIC | MIN_RNR_TIMER,
            ALT_PATH | ACCESS_FLAGS | PKEY_INDEX,
        ),
        (RTR, RTS) if ud => (SQ_PSN, CUR_STATE | QKEY),
        (RTR, RTS) if uc => (SQ_PSN, CUR_STATE | ALT_PATH | ACCESS_FLAGS | PATH_MIG_STATE),
        (RTR, RTS) if ini => (
            TIMEOUT | RETRY_CNT | RNR_RETRY | SQ_PSN | MAX_QP_RD_ATOMIC,
            CUR_STATE | ALT_PATH | ACCESS_FLAGS | PATH_MIG_STATE,
        ),
        (RTR, RTS) if tgt => (
            TIMEOUT | SQ_PSN,
            CUR_STATE | ALT_PATH | ACCESS_FLAGS | MIN_RNR_TIMER | PATH_MIG_STATE,
        ),
        (RTR, RTS) => (
            TIMEOUT | RETRY_CNT | RNR_RETRY | SQ_PSN | MAX_QP_RD_ATOMIC,
            CUR_STATE | ALT_PATH | ACCESS_FLAGS | MIN_RNR_TIMER | PATH_MIG_STATE,
        ),
        (RTS, RTS) if ud => (0, CUR_STATE | QKEY),
        (RTS, RTS) if uc || ini => (0, CUR_STATE | ACCESS_FLAGS | ALT_PATH | PATH_MIG_STATE),
        (RTS, RTS) => (
            0,
            CUR_STATE | ACCESS_FLAGS | ALT_PATH | PATH_MIG_STATE | MIN_RNR_TIMER,
        ),
        (RTS, SQD) => (0, EN_SQD_ASYNC_NOTIFY),
        (SQE, RTS) if ud => (0, CUR_STATE | QKEY),
        (SQE, RTS) if uc => (0, CUR_STATE | ACCESS_FLAGS),
        _ => return None,
    })
}

/// uverbs' `modify_qp_mask`: the attributes the kernel drops from an XRC QP's mask before
/// the state table sees it (an initiator's responder resources and RNR timer, a target's
/// requester depth and retry counts), so a program may set what RC takes (perftest does).
fn ignored_for(t: Transport, m: u32) -> u32 {
    use mask::*;
    match t {
        Transport::XrcIni => m & !(MAX_DEST_RD_ATOMIC | MIN_RNR_TIMER),
        Transport::XrcTgt => m & !(MAX_QP_RD_ATOMIC | RETRY_CNT | RNR_RETRY),
        _ => m,
    }
}

/// `ib_modify_qp_is_ok`.
fn modify_is_ok(cur: u8, next: u8, t: Transport, m: u32) -> bool {
    if m & mask::CUR_STATE != 0 && !matches!(cur, state::RTR | state::RTS | state::SQD | state::SQE)
    {
        return false;
    }
    let Some((req, opt)) = transition_masks(cur, next, t) else {
        return false;
    };
    m & req == req && m & !(req | opt | mask::STATE) == 0
}

/// `enum ib_mtu` to bytes.
fn mtu_bytes(mtu: u8) -> Result<u32, i32> {
    match mtu {
        1..=5 => Ok(128 << mtu),
        _ => Err(libc::EINVAL),
    }
}

impl Ctx<'_> {
    /// CREATE_QP (legacy and extended): RC, UC or UD with its send and receive rings in one
    /// program buffer (the RQ first, the SQ after it), a raw packet QP with its SQ in a
    /// buffer of its own (`sq_buf_addr`), a bfreg as `alloc_bfreg` picks it.
    pub(crate) fn create_qp(&mut self, b: &Bundle<'_>, ex: bool) -> Res {
        let mut c: ib_uverbs_ex_create_qp = if ex {
            let c: ib_uverbs_ex_create_qp = request(b, true)?;
            if c.comp_mask & !IB_UVERBS_CREATE_QP_SUP_COMP_MASK != 0
                || c.create_flags != 0
                || c.source_qpn != 0
            {
                return Err(libc::EOPNOTSUPP);
            }
            if c.comp_mask & IB_UVERBS_CREATE_QP_MASK_IND_TABLE != 0 {
                return self.create_rss_qp(b, &c);
            }
            c
        } else {
            let c: ib_uverbs_create_qp = request(b, false)?;
            ib_uverbs_ex_create_qp {
                user_handle: c.user_handle,
                pd_handle: c.pd_handle,
                send_cq_handle: c.send_cq_handle,
                recv_cq_handle: c.recv_cq_handle,
                srq_handle: c.srq_handle,
                max_send_wr: c.max_send_wr,
                max_recv_wr: c.max_recv_wr,
                max_send_sge: c.max_send_sge,
                max_recv_sge: c.max_recv_sge,
                max_inline_data: c.max_inline_data,
                sq_sig_all: c.sq_sig_all,
                qp_type: c.qp_type,
                is_srq: c.is_srq,
                ..Default::default()
            }
        };
        let drv: mlx5_ib_create_qp = driver_request(b, true)?;
        let t = transport(c.qp_type, drv.flags)?;
        if t == Transport::XrcIni {
            // uverbs' `create_qp`: an initiator receives nothing (no RQ, no receive CQ).
            c.max_recv_wr = 0;
            c.max_recv_sge = 0;
        }
        let (qpn, uar) = match t {
            // No send queue, so no doorbell: no register of its own.
            Transport::XrcTgt => (self.create_xrc_tgt_qp(&c, &drv)?, 0),
            _ => {
                let info = self.create_model_qp(&c, &drv, t)?;
                (info.qpn, info.uar)
            }
        };
        let bfreg = self.uars.alloc();
        let handle = self.handle();
        let base = ib_uverbs_create_qp_resp {
            qp_handle: handle,
            // A DCT has no number before its RTR.
            qpn: if t == Transport::Dct { 0 } else { qpn },
            max_send_wr: c.max_send_wr,
            max_recv_wr: c.max_recv_wr,
            max_send_sge: c.max_send_sge,
            max_recv_sge: c.max_recv_sge,
            max_inline_data: c.max_inline_data,
            reserved: 0,
        };
        let done = if ex {
            self.respond(
                b,
                &ib_uverbs_ex_create_qp_resp {
                    base,
                    comp_mask: 0,
                    response_length: std::mem::size_of::<ib_uverbs_ex_create_qp_resp>() as u32,
                },
            )
        } else {
            self.respond(b, &base)
        }
        .and_then(|()| {
            self.respond_driver(
                b,
                &mlx5_ib_create_qp_resp {
                    bfreg_index: Uars::gross(bfreg),
                    ..raw_resp(t == Transport::Raw, drv.rq_wqe_count != 0, qpn)
                },
            )
        });
        if let Err(e) = done {
            self.uars.free(bfreg);
            let _ = self.nic.destroy_qp(qpn);
            return Err(e);
        }
        let queue = self.async_events.clone().ok_or(libc::EINVAL)?.0;
        self.shared
            .events
            .add(Kind::Qp, self.index, qpn, c.user_handle, queue);
        self.shared.track_qp(self.space, self.index, qpn, true);
        if t == Transport::XrcTgt {
            self.xrcd_user(c.pd_handle, true);
        }
        self.qps.insert(
            handle,
            Qp {
                qpn,
                uar,
                bfreg,
                transport: t,
                dc_key: drv.access_key(),
                state: state::RESET,
                mcast: Vec::new(),
                xrcd: (t == Transport::XrcTgt).then_some(c.pd_handle),
                attr: ib_uverbs_query_qp_resp {
                    max_send_wr: c.max_send_wr,
                    max_recv_wr: c.max_recv_wr,
                    max_send_sge: c.max_send_sge,
                    max_recv_sge: c.max_recv_sge,
                    max_inline_data: c.max_inline_data,
                    sq_sig_all: c.sq_sig_all,
                    port_num: 1,
                    ..Default::default()
                },
            },
        );
        Ok(())
    }

    /// The model QP of CREATE_QP for every type but an XRC target.
    fn create_model_qp(
        &mut self,
        c: &ib_uverbs_ex_create_qp,
        drv: &mlx5_ib_create_qp,
        t: Transport,
    ) -> Result<QpInfo, i32> {
        let pdn = self.pd(c.pd_handle)?.pdn;
        let send_cqn = self.cqs.get(&c.send_cq_handle).ok_or(libc::EINVAL)?.cqn;
        // An XRC initiator has no receive CQ (uverbs' `create_qp` looks none up): the
        // model's receive side of it is its send CQ, never written.
        let recv_cqn = match t {
            Transport::XrcIni => send_cqn,
            _ => self.cqs.get(&c.recv_cq_handle).ok_or(libc::EINVAL)?.cqn,
        };
        let srq = match c.is_srq {
            _ if t == Transport::XrcIni => None,
            0 => None,
            _ => Some(self.srqs.get(&c.srq_handle).ok_or(libc::EINVAL)?.srqn),
        };
        let known = match t {
            Transport::Dci => MLX5_QP_FLAG_TYPE_DCI | MLX5_QP_FLAG_DCI_STREAM,
            // Without `SCAT2CQE_DCT` libmlx5 leaves scatter-to-CQE off a DCT.
            Transport::Dct => MLX5_QP_FLAG_TYPE_DCT,
            _ => MLX5_QP_FLAG_SCATTER_CQE,
        };
        if drv.flags & !known != 0 {
            return Err(libc::EOPNOTSUPP);
        }
        // `create_dct`: a DCT takes its receives from an SRQ.
        if t == Transport::Dct && srq.is_none() {
            return Err(libc::EINVAL);
        }
        let dci_streams = match drv.flags & MLX5_QP_FLAG_DCI_STREAM {
            0 => mlx5_hw::DciStreams::default(),
            _ => mlx5_hw::DciStreams {
                log_channels: drv.dci_streams.log_num_concurent,
                log_errored: drv.dci_streams.log_num_errored,
            },
        };
        let caps = self.nic.caps();
        let pow2 = |n: u32| n == 0 || n.is_power_of_two();
        if !pow2(drv.sq_wqe_count)
            || !pow2(drv.rq_wqe_count)
            || drv.sq_wqe_count > caps.max_qp_wr
            || drv.rq_wqe_count > caps.max_qp_wr
        {
            return Err(libc::EINVAL);
        }
        let raw = t == Transport::Raw;
        // `create_raw_packet_qp`: the SQ at `sq_buf_addr`; an RQ only with receive WQEs.
        let sq_buf = match raw {
            true => drv.sq_buf_addr,
            false => drv.buf_addr + (u64::from(drv.rq_wqe_count) << drv.rq_wqe_shift),
        };
        let rq_buf = match raw && drv.rq_wqe_count == 0 {
            true => 0,
            false => in_space(self.space, drv.buf_addr),
        };
        let params = QpParams {
            transport: t,
            pdn,
            send_cqn,
            recv_cqn,
            // A DCI receives nothing: the kernel's `create_dci` gives it no RQ and takes no
            // SRQ into its context, whatever the program passed.
            srqn: if t == Transport::Dci { None } else { srq },
            sq_buf: in_space(self.space, sq_buf),
            log_sq_wqe_cnt: drv.sq_wqe_count.max(1).trailing_zeros() as u8,
            rq_buf,
            log_rq_wqe_cnt: drv.rq_wqe_count.max(1).trailing_zeros() as u8,
            log_rq_stride: if srq.is_some() {
                4
            } else {
                drv.rq_wqe_shift as u8
            },
            dbrec: in_space(self.space, drv.db_addr),
            user_index: drv.uidx,
            scatter_to_cqe: drv.flags & MLX5_QP_FLAG_SCATTER_CQE != 0,
            dci_streams,
        };
        // SAFETY: the rings and record are the program's, reached through its space.
        unsafe { self.nic.create_qp(&params) }.map_err(errno)
    }

    /// MODIFY_QP (legacy and extended).
    pub(crate) fn modify_qp(&mut self, b: &Bundle<'_>, ex: bool) -> Res {
        // uverbs: the legacy command takes the attributes up to DEST_QPN, the extended one
        // up to RATE_LIMIT (`IB_USER_LAST_QP_ATTR_MASK`); more is EOPNOTSUPP.
        let (cmd, rate_limit): (ib_uverbs_modify_qp, u32) = if ex {
            let c: ib_uverbs_ex_modify_qp = request(b, true)?;
            (c.base, c.rate_limit)
        } else {
            (request(b, false)?, 0)
        };
        let last = if ex { mask::RATE_LIMIT } else { mask::DEST_QPN };
        if cmd.attr_mask & !((last << 1) - 1) != 0 {
            return Err(libc::EOPNOTSUPP);
        }
        let max_rd = u32::from(self.nic.caps().max_rd_atomic);
        let qp = self.qps.get_mut(&cmd.qp_handle).ok_or(libc::EINVAL)?;
        let t = qp.transport;
        let m = ignored_for(t, cmd.attr_mask);
        // What the mask leaves out the kernel does not apply.
        let mut cmd = cmd;
        for (bit, field) in [
            (mask::MAX_QP_RD_ATOMIC, &mut cmd.max_rd_atomic),
            (mask::MAX_DEST_RD_ATOMIC, &mut cmd.max_dest_rd_atomic),
            (mask::MIN_RNR_TIMER, &mut cmd.min_rnr_timer),
            (mask::RETRY_CNT, &mut cmd.retry_cnt),
            (mask::RNR_RETRY, &mut cmd.rnr_retry),
        ] {
            if m & bit == 0 {
                *field = 0;
            }
        }
        let cur = if m & mask::CUR_STATE != 0 {
            cmd.cur_qp_state
        } else {
            qp.state
        };
        let next = if m & mask::STATE != 0 {
            cmd.qp_state
        } else {
            cur
        };
        if next > state::ERR || !modify_is_ok(cur, next, t, m) {
            return Err(libc::EINVAL);
        }
        if m & mask::PORT != 0 && cmd.port_num != 1 {
            return Err(libc::EINVAL);
        }
        if m & mask::PKEY_INDEX != 0 && cmd.pkey_index != 0 {
            return Err(libc::EINVAL);
        }
        if (m & mask::MAX_QP_RD_ATOMIC != 0 && u32::from(cmd.max_rd_atomic) > max_rd)
            || (m & mask::MAX_DEST_RD_ATOMIC != 0 && u32::from(cmd.max_dest_rd_atomic) > max_rd)
        {
            return Err(libc::EINVAL);
        }
        let rights = Access(if m & mask::ACCESS_FLAGS != 0 {
            access(
                cmd.qp_access_flags,
                IB_UVERBS_ACCESS_LOCAL_WRITE
                    | IB_UVERBS_ACCESS_REMOTE_WRITE
                    | IB_UVERBS_ACCESS_REMOTE_READ
                    | IB_UVERBS_ACCESS_REMOTE_ATOMIC,
            )
            .map(|a| a.0)
            // The kernel takes QP access flags as given (remote write needs no local write).
            .or(Ok::<u32, i32>(cmd.qp_access_flags & 0xf))?
        } else {
            qp.attr.qp_access_flags
        });
        let a = &qp.attr;
        let transition = match (cur, next) {
            (state::RESET, state::INIT) => Some(match t {
                Transport::Dci => QpTransition::InitDci {
                    port: cmd.port_num,
                    pkey_index: cmd.pkey_index,
                },
                Transport::Raw => QpTransition::InitRaw { port: cmd.port_num },
                Transport::Ud => QpTransition::InitUd {
                    port: cmd.port_num,
                    qkey: cmd.qkey,
                    pkey_index: cmd.pkey_index,
                },
                _ => QpTransition::Init {
                    port: cmd.port_num,
                    access: rights,
                    pkey_index: cmd.pkey_index,
                },
            }),
            (state::INIT, state::RTR) => Some(match t {
                Transport::Dci => QpTransition::RtrDci {
                    path_mtu: mtu_bytes(cmd.path_mtu)?,
                    global: cmd.dest.is_global != 0,
                },
                Transport::Dct => QpTransition::RtrDct {
                    path_mtu: mtu_bytes(cmd.path_mtu)?,
                    min_rnr_timer: cmd.min_rnr_timer,
                    dc_key: qp.dc_key,
                    global: cmd.dest.is_global != 0,
                },
                Transport::Ud => QpTransition::RtrUd,
                Transport::Raw => QpTransition::RtrRaw,
                Transport::Uc => QpTransition::RtrUc {
                    dest_lid: cmd.dest.dlid,
                    dest_gid: cmd.dest.dgid,
                    dest_qpn: cmd.dest_qp_num,
                    rq_psn: cmd.rq_psn,
                    path_mtu: mtu_bytes(cmd.path_mtu)?,
                    sl: cmd.dest.sl,
                    global: cmd.dest.is_global != 0,
                },
                _ => QpTransition::Rtr {
                    dest_lid: cmd.dest.dlid,
                    dest_gid: cmd.dest.dgid,
                    dest_qpn: cmd.dest_qp_num,
                    rq_psn: cmd.rq_psn,
                    path_mtu: mtu_bytes(cmd.path_mtu)?,
                    max_dest_rd_atomic: cmd.max_dest_rd_atomic,
                    min_rnr_timer: cmd.min_rnr_timer,
                    sl: cmd.dest.sl,
                    global: cmd.dest.is_global != 0,
                },
            }),
            (state::RTR, state::RTS) => Some(match t {
                Transport::Ud => QpTransition::RtsUd { sq_psn: cmd.sq_psn },
                Transport::Raw => QpTransition::RtsRaw,
                Transport::Uc => QpTransition::RtsUc { sq_psn: cmd.sq_psn },
                _ => QpTransition::Rts {
                    sq_psn: cmd.sq_psn,
                    timeout: cmd.timeout,
                    retry_cnt: cmd.retry_cnt,
                    rnr_retry: cmd.rnr_retry,
                    max_rd_atomic: cmd.max_rd_atomic,
                },
            }),
            // INIT -> INIT of a connected QP (librdmacm's `ucma_init_conn_qp`, then
            // `ucma_modify_qp_rtr` again on the passive side) takes the access rights, the
            // P_Key index and the port anew; the kernel keeps those not in the mask.
            (state::INIT, state::INIT)
                if matches!(
                    t,
                    Transport::Rc | Transport::Uc | Transport::XrcIni | Transport::XrcTgt
                ) =>
            {
                Some(QpTransition::InitToInit {
                    port: if m & mask::PORT != 0 {
                        cmd.port_num
                    } else {
                        a.port_num
                    },
                    access: rights,
                    pkey_index: if m & mask::PKEY_INDEX != 0 {
                        cmd.pkey_index
                    } else {
                        a.pkey_index
                    },
                })
            }
            (state::SQE, state::RTS) => Some(QpTransition::SqeToRts),
            (_, state::ERR) if cur != state::ERR => Some(QpTransition::Err),
            (_, state::RESET) if cur != state::RESET => Some(QpTransition::Reset),
            (state::RTS, state::SQD) => return Err(libc::EOPNOTSUPP),
            // RTS -> RTS (and INIT -> INIT of the other transports) change attributes the
            // model takes only at the first transition: accepted when they change nothing
            // it holds.
            _ if m & mask::ACCESS_FLAGS != 0 && rights.0 != a.qp_access_flags => {
                return Err(libc::EOPNOTSUPP)
            }
            _ => None,
        };
        if let Some(tr) = transition {
            self.nic.modify_qp(qp.qpn, &tr).map_err(errno)?;
        }
        if m & mask::RATE_LIMIT != 0 {
            // `__mlx5_ib_modify_qp`'s raw packet path: the rate with mlx5's burst info. On
            // RTR -> RTS the model takes it once in RTS (a refused rate leaves the QP in RTS
            // where the kernel would leave it in RTR).
            let drv: mlx5_ib_modify_qp = driver_request(b, true)?;
            let limit = mlx5_hw::RateLimit {
                kbps: rate_limit,
                max_burst_sz: drv.burst_info.max_burst_sz,
                typical_pkt_sz: drv.burst_info.typical_pkt_sz,
            };
            self.nic
                .modify_qp_rate_limit(qp.qpn, &limit)
                .map_err(|e| match e {
                    // `mlx5_rl_add_rate`: the rate table is full.
                    mlx5_hw::HwError::OutOfResources => libc::ENOSPC,
                    e => errno(e),
                })?;
        }
        record(&mut qp.attr, &cmd, m);
        qp.attr.qp_access_flags = rights.0;
        qp.state = next;
        let dct_created = t == Transport::Dct && next == state::RTR;
        let qpn = qp.qpn;
        if ex {
            self.respond(
                b,
                &ib_uverbs_ex_modify_qp_resp {
                    comp_mask: 0,
                    response_length: std::mem::size_of::<ib_uverbs_ex_modify_qp_resp>() as u32,
                },
            )?;
            // `mlx5_ib_modify_dct`: the response carries the DCT's number from its RTR on
            // (`response_length` counting `dctn` then).
            let resp = match dct_created {
                true => mlx5_ib_modify_qp_resp {
                    response_length: 8,
                    dctn: qpn,
                    ..Default::default()
                },
                false => mlx5_ib_modify_qp_resp {
                    response_length: 4,
                    ..Default::default()
                },
            };
            self.respond_driver(b, &resp)?;
        }
        Ok(())
    }

    /// QUERY_QP: the kept attributes, the model's state and PSNs.
    pub(crate) fn query_qp(&self, b: &Bundle<'_>) -> Res {
        let cmd: ib_uverbs_query_qp = request(b, false)?;
        let qp = self.qps.get(&cmd.qp_handle).ok_or(libc::EINVAL)?;
        let mut resp = qp.attr;
        let st = self.nic.qp_state(qp.qpn).map_err(errno)?;
        resp.qp_state = match st {
            QpState::Reset => state::RESET,
            QpState::Init => state::INIT,
            QpState::Rtr => state::RTR,
            QpState::Rts => state::RTS,
            QpState::Sqe => state::SQE,
            QpState::Err => state::ERR,
        };
        resp.cur_qp_state = resp.qp_state;
        if let Ok(psn) = self.nic.qp_psn(qp.qpn) {
            resp.sq_psn = psn.sq_psn;
            resp.rq_psn = psn.rq_psn;
        }
        self.respond(b, &resp)
    }

    /// ATTACH_MCAST (uverbs' `ib_uverbs_attach_mcast`): a group already in the QP's list
    /// (the same MGID and MLID) is success without a call to the device; else the device's
    /// checks (`ib_attach_mcast`: a multicast GID, a UD QP, an MLID in the multicast range on
    /// InfiniBand: EINVAL) and its attach, then the group joins the list.
    pub(crate) fn attach_mcast(&mut self, b: &Bundle<'_>) -> Res {
        let cmd: ib_uverbs_attach_mcast = request(b, false)?;
        let qp = self.qps.get_mut(&cmd.qp_handle).ok_or(libc::EINVAL)?;
        let group = (cmd.gid, cmd.mlid);
        if !qp.mcast.contains(&group) {
            self.nic
                .attach_mcast(qp.qpn, &cmd.gid, cmd.mlid)
                .map_err(errno)?;
            qp.mcast.push(group);
        }
        Ok(())
    }

    /// DETACH_MCAST (uverbs' `ib_uverbs_detach_mcast`): EINVAL for a group not in the QP's
    /// list, else the device's detach, and the group leaves the list.
    pub(crate) fn detach_mcast(&mut self, b: &Bundle<'_>) -> Res {
        let cmd: ib_uverbs_detach_mcast = request(b, false)?;
        let qp = self.qps.get_mut(&cmd.qp_handle).ok_or(libc::EINVAL)?;
        let at = qp.mcast.iter().position(|g| *g == (cmd.gid, cmd.mlid));
        let at = at.ok_or(libc::EINVAL)?;
        self.nic
            .detach_mcast(qp.qpn, &cmd.gid, cmd.mlid)
            .map_err(errno)?;
        qp.mcast.remove(at);
        Ok(())
    }

    /// DESTROY_QP: the asynchronous events delivered, for `ibv_destroy_qp` to wait for. A QP
    /// still in a group is EBUSY (uverbs' `uverbs_free_qp` on an explicit destroy).
    pub(crate) fn destroy_qp(&mut self, b: &Bundle<'_>) -> Res {
        let cmd: ib_uverbs_destroy_qp = request(b, false)?;
        if self.rss_qps.contains_key(&cmd.qp_handle) {
            return self.destroy_rss_qp(b, cmd.qp_handle);
        }
        let qp = self.qps.get(&cmd.qp_handle).ok_or(libc::EINVAL)?;
        self.nic.destroy_qp(qp.qpn).map_err(errno)?;
        let (_, events) = self.shared.events.remove(Kind::Qp, self.index, qp.qpn);
        self.shared.track_qp(self.space, self.index, qp.qpn, false);
        self.uars.free(qp.bfreg);
        if let Some(h) = qp.xrcd {
            self.xrcd_user(h, false);
        }
        self.qps.remove(&cmd.qp_handle);
        self.respond(
            b,
            &ib_uverbs_destroy_qp_resp {
                events_reported: events,
            },
        )
    }
}

/// The raw packet part of `mlx5_ib_create_qp_resp` (`create_raw_packet_qp`): the SQ's
/// number, and the RQ's when there is one; the model has one number for both, the QP's.
/// No TIS or TIR numbers: the model has no such objects (libmlx5 keeps them for DEVX).
fn raw_resp(raw: bool, rq: bool, qpn: u32) -> mlx5_ib_create_qp_resp {
    if !raw {
        return mlx5_ib_create_qp_resp::default();
    }
    mlx5_ib_create_qp_resp {
        comp_mask: MLX5_IB_CREATE_QP_RESP_MASK_SQN
            | if rq {
                MLX5_IB_CREATE_QP_RESP_MASK_RQN
            } else {
                0
            },
        sqn: qpn,
        rqn: if rq { qpn } else { 0 },
        ..Default::default()
    }
}

/// Keep what a modify set, for QUERY_QP (`mlx5_ib_query_qp` reads it back from the QPC).
fn record(a: &mut ib_uverbs_query_qp_resp, c: &ib_uverbs_modify_qp, m: u32) {
    if m & mask::QKEY != 0 {
        a.qkey = c.qkey;
    }
    if m & mask::AV != 0 {
        a.dest = c.dest;
    }
    if m & mask::DEST_QPN != 0 {
        a.dest_qp_num = c.dest_qp_num;
    }
    if m & mask::PKEY_INDEX != 0 {
        a.pkey_index = c.pkey_index;
    }
    if m & mask::PORT != 0 {
        a.port_num = c.port_num;
    }
    if m & mask::PATH_MTU != 0 {
        a.path_mtu = c.path_mtu;
    }
    if m & mask::TIMEOUT != 0 {
        a.timeout = c.timeout;
    }
    if m & mask::RETRY_CNT != 0 {
        a.retry_cnt = c.retry_cnt;
    }
    if m & mask::RNR_RETRY != 0 {
        a.rnr_retry = c.rnr_retry;
    }
    if m & mask::MAX_QP_RD_ATOMIC != 0 {
        a.max_rd_atomic = c.max_rd_atomic;
    }
    if m & mask::MAX_DEST_RD_ATOMIC != 0 {
        a.max_dest_rd_atomic = c.max_dest_rd_atomic;
    }
    if m & mask::MIN_RNR_TIMER != 0 {
        a.min_rnr_timer = c.min_rnr_timer;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_state_table_takes_what_the_kernel_takes() {
        use mask::*;
        use state::*;
        let rc = Transport::Rc;
        assert!(modify_is_ok(
            RESET,
            INIT,
            rc,
            STATE | PKEY_INDEX | PORT | ACCESS_FLAGS
        ));
        assert!(
            !modify_is_ok(RESET, INIT, rc, STATE | PKEY_INDEX | PORT),
            "access required"
        );
        assert!(!modify_is_ok(
            RESET,
            INIT,
            rc,
            STATE | PKEY_INDEX | PORT | ACCESS_FLAGS | QKEY
        ));
        let rtr = STATE | AV | PATH_MTU | DEST_QPN | RQ_PSN | MAX_DEST_RD_ATOMIC | MIN_RNR_TIMER;
        assert!(modify_is_ok(INIT, RTR, rc, rtr));
        assert!(
            !modify_is_ok(INIT, RTR, Transport::Uc, rtr),
            "UC has no RD atomic"
        );
        assert!(modify_is_ok(INIT, RTR, Transport::Ud, STATE));
        assert!(modify_is_ok(RTR, RTS, Transport::Ud, STATE | SQ_PSN));
        assert!(!modify_is_ok(RESET, RTS, rc, STATE));
        assert!(modify_is_ok(RTS, ERR, rc, STATE));
        assert!(
            !modify_is_ok(INIT, ERR, rc, STATE | CUR_STATE),
            "CUR_STATE only from RTR on"
        );
        assert!(modify_is_ok(SQE, RTS, Transport::Ud, STATE | CUR_STATE));
        assert!(!modify_is_ok(SQE, RTS, rc, STATE), "RC has no SQE");
        let (dci, dct) = (Transport::Dci, Transport::Dct);
        assert!(modify_is_ok(RESET, INIT, dci, STATE | PKEY_INDEX | PORT));
        assert!(!modify_is_ok(
            RESET,
            INIT,
            dci,
            STATE | PKEY_INDEX | PORT | ACCESS_FLAGS
        ));
        assert!(modify_is_ok(INIT, RTR, dci, STATE | PATH_MTU | AV));
        assert!(modify_is_ok(
            RESET,
            INIT,
            dct,
            STATE | PKEY_INDEX | PORT | ACCESS_FLAGS
        ));
        assert!(modify_is_ok(
            INIT,
            RTR,
            dct,
            STATE | MIN_RNR_TIMER | AV | PATH_MTU
        ));
        assert!(
            !modify_is_ok(INIT, RTR, dct, STATE | MIN_RNR_TIMER | AV),
            "MTU required"
        );
        assert!(
            !modify_is_ok(RTR, RTS, dct, STATE | SQ_PSN),
            "a DCT stops at RTR"
        );
        let (ini, tgt) = (Transport::XrcIni, Transport::XrcTgt);
        let init = STATE | PKEY_INDEX | PORT | ACCESS_FLAGS;
        assert!(modify_is_ok(RESET, INIT, ini, init));
        assert!(modify_is_ok(RESET, INIT, tgt, init));
        let ini_rtr = STATE | AV | PATH_MTU | DEST_QPN | RQ_PSN;
        assert!(modify_is_ok(INIT, RTR, ini, ini_rtr));
        assert!(
            !modify_is_ok(INIT, RTR, ini, rtr),
            "an initiator has no responder resources"
        );
        assert!(modify_is_ok(INIT, RTR, tgt, rtr));
        assert!(
            !modify_is_ok(INIT, RTR, tgt, ini_rtr),
            "a target needs them"
        );
        let rc_rts = STATE | TIMEOUT | RETRY_CNT | RNR_RETRY | SQ_PSN | MAX_QP_RD_ATOMIC;
        assert!(modify_is_ok(RTR, RTS, ini, rc_rts));
        assert!(!modify_is_ok(RTR, RTS, ini, rc_rts | MIN_RNR_TIMER));
        assert!(modify_is_ok(RTR, RTS, tgt, STATE | TIMEOUT | SQ_PSN));
        assert!(
            !modify_is_ok(RTR, RTS, tgt, rc_rts),
            "a target sends no requests"
        );
        assert!(modify_is_ok(
            RTR,
            RTS,
            tgt,
            STATE | TIMEOUT | SQ_PSN | MIN_RNR_TIMER
        ));
    }

    #[test]
    fn uverbs_drops_what_each_xrc_side_ignores() {
        use mask::*;
        let all = STATE | MAX_QP_RD_ATOMIC | MAX_DEST_RD_ATOMIC | MIN_RNR_TIMER | RETRY_CNT;
        let all = all | RNR_RETRY;
        assert_eq!(
            ignored_for(Transport::XrcIni, all),
            STATE | MAX_QP_RD_ATOMIC | RETRY_CNT | RNR_RETRY
        );
        assert_eq!(
            ignored_for(Transport::XrcTgt, all),
            STATE | MAX_DEST_RD_ATOMIC | MIN_RNR_TIMER
        );
        assert_eq!(ignored_for(Transport::Rc, all), all);
    }

    #[test]
    fn mtus_are_the_ib_enum() {
        assert_eq!(mtu_bytes(1), Ok(256));
        assert_eq!(mtu_bytes(5), Ok(4096));
        assert_eq!(mtu_bytes(6), Err(libc::EINVAL));
        assert_eq!(super::super::device::mtu_enum(1024), 3);
    }
}
