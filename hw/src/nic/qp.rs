//! Queue pairs and address handles in the public API: creation, the state machine of each
//! transport with the checks the kernel makes, queries and destruction.

use crate::nic::{aligned, slot, Nic, ALL_ACCESS, LOG_MAX_QP_WR};
use crate::pcie::PcieCounters;
use crate::qp::fail;
use crate::state::{Dest, Qp, MAX_RD_ATOMIC, PDN_BASE, PSN_MASK, QPN_BASE};
use crate::types::{
    Access, AhAttr, DciStreams, HwError, QpInfo, QpParams, QpPsn, QpState, QpTransition, Transport,
};

/// Entries in each port's P_Key table: the default P_Key alone, at index 0 (a knob no
/// test needs yet; docs/model.md).
const PKEY_TABLE_LEN: u16 = 1;

impl Nic {
    /// The 48-byte address vector (`mlx5_wqe_av`) of an address handle to `attr`, as
    /// `mlx5_create_ah` fills it from the port's addressing (InfiniBand: DLID, SL, path
    /// bits, optional GRH); `dqp_dct` and the Q_Key are 0, written by every WQE.
    pub fn create_ah(&self, pdn: u32, attr: &AhAttr) -> Result<[u8; 48], HwError> {
        self.with_world(|w, n| {
            slot(&mut w.nics[n].pds, pdn, PDN_BASE)?;
            crate::ud::build_av(w, n, attr)
        })
    }

    /// Create a queue pair (RC, UD, DCI or DCT, `p.transport`) in RESET, with its own UAR
    /// page and register. A DCT takes its receives from `p.srqn` (required) and has no send
    /// queue (the SQ fields and `dbrec` are ignored); a DCI has no receive queue (the RQ
    /// fields are ignored, `p.srqn` must be `None`). A DCT's number is handed out here, but
    /// no DCI reaches it before [`QpTransition::RtrDct`].
    ///
    /// # Safety
    /// The SQ ring (`64 << log_sq_wqe_cnt` bytes), the RQ ring (unless an SRQ is used or
    /// the QP is a DCI) and `dbrec` (8 bytes; not for a DCT) must be valid process memory
    /// until the QP is destroyed.
    pub unsafe fn create_qp(&self, p: &QpParams) -> Result<QpInfo, HwError> {
        // A DCT needs an SRQ and has no send queue; a DCI has no receive side at all
        // (prm-facts-next §3.1: the kernel refuses a DCT without SRQ and receive CQ).
        match p.transport {
            Transport::Dct if p.srqn.is_none() => {
                return Err(HwError::InvalidParam("a DCT needs an SRQ"))
            }
            Transport::Dci | Transport::XrcIni if p.srqn.is_some() => {
                return Err(HwError::InvalidParam(
                    "a DCI or XRC initiator has no receive queue",
                ))
            }
            // Its domain, not a PD and CQs, makes an XRC target (`create_xrc_tgt_qp`).
            Transport::XrcTgt => {
                return Err(HwError::InvalidParam(
                    "an XRC target QP is created in its XRC domain",
                ))
            }
            _ => {}
        }
        if p.transport == Transport::Raw {
            self.with(|n| crate::nic::eth::check_raw_qp(n, p))?;
        }
        let caps = self.with(|n| n.cfg.dci_streams);
        if p.dci_streams != DciStreams::default() && p.transport != Transport::Dci {
            return Err(HwError::InvalidParam(
                "DCI streams on a QP that is not a DCI",
            ));
        }
        // rdma-core's `mlx5dv_create_qp` refuses more than `dci_streams_caps` with EINVAL.
        if p.dci_streams.log_channels > caps.max_log_channels
            || p.dci_streams.log_errored > caps.max_log_errored
        {
            return Err(HwError::InvalidParam("DCI streams above the device's caps"));
        }
        if p.transport != Transport::Dct {
            if p.log_sq_wqe_cnt > LOG_MAX_QP_WR {
                return Err(HwError::InvalidParam("log_sq_wqe_cnt"));
            }
            aligned(p.sq_buf, 64)?;
            aligned(p.dbrec, 4)?;
        }
        // A raw packet QP without an RQ (`rq_buf` 0) receives nothing of its own.
        let no_rq = p.transport == Transport::Raw && p.rq_buf == 0;
        if p.srqn.is_none() && !matches!(p.transport, Transport::Dci | Transport::XrcIni) && !no_rq
        {
            if p.log_rq_wqe_cnt > LOG_MAX_QP_WR {
                return Err(HwError::InvalidParam("log_rq_wqe_cnt"));
            }
            if !(4..=10).contains(&p.log_rq_stride) {
                return Err(HwError::InvalidParam("log_rq_stride"));
            }
            aligned(p.rq_buf, 16)?;
        }
        self.with(|n| {
            if p.transport == Transport::XrcIni && !n.cfg.xrc.supported {
                return Err(HwError::NotSupported("xrc"));
            }
            slot(&mut n.pds, p.pdn, PDN_BASE)?;
            let send_cq = n.cq_index(p.send_cqn).ok_or(HwError::NoSuchObject)?;
            let recv_cq = n.cq_index(p.recv_cqn).ok_or(HwError::NoSuchObject)?;
            let srq = match p.srqn {
                Some(s) => Some(n.srq_index(s).ok_or(HwError::NoSuchObject)?),
                None => None,
            };
            // uverbs' `create_qp` refuses an XRC SRQ for any QP (EINVAL): only XRC targets
            // deliver into one, named by each request.
            if srq.is_some_and(|s| n.srq(s).xrc.is_some()) {
                return Err(HwError::InvalidParam("an XRC SRQ serves XRC targets only"));
            }
            *slot(&mut n.pds, p.pdn, PDN_BASE)? += 1;
            n.cq(send_cq).refs += 1;
            n.cq(recv_cq).refs += 1;
            if let Some(s) = srq {
                n.srq(s).refs += 1;
            }
            let qpi = n.qps.len();
            let uar = n.new_uar(Some(qpi));
            // A DCT has neither rings nor a doorbell record: its SRQ's memory says.
            let space = match srq {
                Some(s) if p.transport == Transport::Dct => n.srq(s).buf,
                _ => p.sq_buf | p.rq_buf | p.dbrec,
            } & crate::host::SPACE_MASK;
            let qpn = QPN_BASE + qpi as u32;
            n.qps.push(Some(Qp {
                qpn,
                transport: p.transport,
                qkey: 0,
                pdn: p.pdn,
                send_cq,
                recv_cq,
                srq,
                scatter_cqe: p.scatter_to_cqe
                    && matches!(p.transport, Transport::Rc | Transport::Uc),
                sq_buf: p.sq_buf,
                space,
                log_sq: p.log_sq_wqe_cnt,
                rq_buf: p.rq_buf,
                log_rq: p.log_rq_wqe_cnt,
                log_rq_stride: p.log_rq_stride,
                dbrec: p.dbrec,
                uar,
                state: QpState::Reset,
                access: Access::NONE,
                dest: Dest::default(),
                rq_psn: 0,
                psn_nak_sent: false,
                mtu: 4096,
                sq_psn: 0,
                head_psn: None,
                retry_cnt: 0,
                rnr_retry: 0,
                sl: 0,
                user_index: p.user_index & 0xff_ffff,
                dc_key: 0,
                dc: None,
                dci_streams: p.dci_streams,
                errored_streams: Vec::new(),
                max_rd_atomic: 0,
                max_dest_rd_atomic: 0,
                sq_ci: 0,
                sq_pi: 0,
                sq_fetched: 0,
                stall: None,
                retries: 0,
                rnr_retries: 0,
                rq_ci: 0,
                rq_known_pi: 0,
                fatal: false,
                atomic_replay: None,
                deferred: false,
                snapped: None,
                deferred_bf: Vec::new(),
                snapshot: Vec::new(),
                pcie: PcieCounters::default(),
                xrcd: 0,
                block_mcast_loopback: false,
                pacer: None,
            }));
            Ok(QpInfo {
                qpn,
                uar,
                bf_offset: crate::state::BF_OFFSET,
                bf_size: n.cfg.bf_size,
            })
        })
    }

    /// Take stream `stream` of DCI `qpn` out of error (`mlx5dv_dci_stream_id_reset`: an
    /// RTS2RTS with `dci_stream_channel_id` in the QPC extension): its WQEs execute again
    /// instead of being flushed. A stream not in error is left as it is. Refused: no such
    /// QP; a QP that is not a DCI (rdma-core's EINVAL); a device whose
    /// `max_log_errored` is 0, or a DCI not in RTS (rdma-core's EOPNOTSUPP); a stream id
    /// beyond the DCI's channels (the model's check: the QPC field names a channel).
    pub fn reset_dci_stream(&self, qpn: u32, stream: u16) -> Result<(), HwError> {
        self.with(|n| {
            let unsupported = n.cfg.dci_streams.max_log_errored == 0;
            let qpi = n.qp_index(qpn).ok_or(HwError::NoSuchObject)?;
            let q = n.qp(qpi);
            if q.transport != Transport::Dci {
                return Err(HwError::InvalidParam(
                    "stream reset of a QP that is not a DCI",
                ));
            }
            if unsupported {
                return Err(HwError::NotSupported("DCI stream reset"));
            }
            if q.state != QpState::Rts {
                return Err(HwError::InvalidTransition);
            }
            if u32::from(stream) >= 1 << q.dci_streams.log_channels {
                return Err(HwError::InvalidParam("stream id beyond the DCI's channels"));
            }
            q.errored_streams.retain(|&s| s != stream);
            Ok(())
        })
    }

    /// Move a QP through its state machine (RESET->INIT->RTR->RTS, any->ERR, any->RESET).
    pub fn modify_qp(&self, qpn: u32, t: &QpTransition) -> Result<(), HwError> {
        self.with_world(|w, i| {
            let n = &mut w.nics[i];
            let ports = n.cfg.ports;
            let roce = n.cfg.link_layer == crate::types::LinkLayer::Ethernet;
            let active_mtu = n.cfg.active_mtu();
            let qpi = n.qp_index(qpn).ok_or(HwError::NoSuchObject)?;
            let q = n.qp(qpi);
            if !transition_of(q.transport, t) {
                // The attribute masks of one transport are invalid for another
                // (`qp_state_table`, `modify_dci_qp_is_ok`, `mlx5_ib_modify_dct`).
                return Err(HwError::InvalidParam("transition of another transport"));
            }
            match *t {
                QpTransition::InitUd {
                    port,
                    qkey,
                    pkey_index,
                } => {
                    expect(q.state, QpState::Reset)?;
                    check_port_pkey(port, ports, pkey_index)?;
                    q.qkey = qkey;
                    q.state = QpState::Init;
                }
                QpTransition::RtrUd => {
                    expect(q.state, QpState::Init)?;
                    q.mtu = active_mtu;
                    q.state = QpState::Rtr;
                }
                QpTransition::RtsUd { sq_psn } => {
                    expect(q.state, QpState::Rtr)?;
                    q.sq_psn = sq_psn & 0xff_ffff;
                    q.state = QpState::Rts;
                }
                QpTransition::InitDci { port, pkey_index } => {
                    expect(q.state, QpState::Reset)?;
                    check_port_pkey(port, ports, pkey_index)?;
                    q.state = QpState::Init;
                }
                QpTransition::RtrDci { path_mtu, global } => {
                    check_route(global, roce)?;
                    expect(q.state, QpState::Init)?;
                    q.mtu = check_mtu(path_mtu)?;
                    q.state = QpState::Rtr;
                }
                QpTransition::RtrDct {
                    path_mtu,
                    dc_key,
                    global,
                    ..
                } => {
                    check_route(global, roce)?;
                    expect(q.state, QpState::Init)?;
                    q.mtu = check_mtu(path_mtu)?;
                    q.dc_key = dc_key;
                    // Every DCI's READ / atomic depth is served: the DCT's responder
                    // resources are the device's (no RTR attribute sets them).
                    q.max_dest_rd_atomic = MAX_RD_ATOMIC;
                    q.state = QpState::Rtr;
                }
                QpTransition::Init {
                    port,
                    access,
                    pkey_index,
                } => {
                    expect(q.state, QpState::Reset)?;
                    check_access_bits(access)?;
                    check_port_pkey(port, ports, pkey_index)?;
                    q.access = access;
                    q.state = QpState::Init;
                }
                QpTransition::InitToInit {
                    port,
                    access,
                    pkey_index,
                } => {
                    expect(q.state, QpState::Init)?;
                    check_access_bits(access)?;
                    check_port_pkey(port, ports, pkey_index)?;
                    q.access = access;
                }
                QpTransition::Rtr {
                    dest_lid,
                    dest_gid,
                    dest_qpn,
                    rq_psn,
                    path_mtu,
                    max_dest_rd_atomic,
                    sl,
                    global,
                    ..
                } => {
                    check_route(global, roce)?;
                    expect(q.state, QpState::Init)?;
                    check_mtu(path_mtu)?;
                    at_most(sl, 15, "sl")?;
                    // Checked like mlx5_ib_modify_qp; the value itself never binds (see
                    // docs/model.md, "READ and atomic depth").
                    at_most(max_dest_rd_atomic, MAX_RD_ATOMIC, "max_dest_rd_atomic")?;
                    let dest = Dest {
                        lid: dest_lid,
                        gid: dest_gid,
                        qpn: dest_qpn & 0xff_ffff,
                    };
                    set_rtr(q, dest, rq_psn, path_mtu);
                    q.max_dest_rd_atomic = max_dest_rd_atomic;
                    q.sl = sl;
                    q.state = QpState::Rtr;
                }
                QpTransition::RtrUc {
                    dest_lid,
                    dest_gid,
                    dest_qpn,
                    rq_psn,
                    path_mtu,
                    sl,
                    global,
                } => {
                    let dest = Dest {
                        lid: dest_lid,
                        gid: dest_gid,
                        qpn: dest_qpn & 0xff_ffff,
                    };
                    check_route(global, roce)?;
                    expect(q.state, QpState::Init)?;
                    check_mtu(path_mtu)?;
                    at_most(sl, 15, "sl")?;
                    set_rtr(q, dest, rq_psn, path_mtu);
                    q.sl = sl;
                }
                QpTransition::RtsUc { sq_psn } => {
                    expect(q.state, QpState::Rtr)?;
                    q.sq_psn = sq_psn & PSN_MASK;
                    q.state = QpState::Rts;
                }
                QpTransition::Rts {
                    sq_psn,
                    retry_cnt,
                    rnr_retry,
                    max_rd_atomic,
                    ..
                } => {
                    expect(q.state, QpState::Rtr)?;
                    at_most(retry_cnt, 7, "retry_cnt")?;
                    at_most(rnr_retry, 7, "rnr_retry")?;
                    at_most(max_rd_atomic, MAX_RD_ATOMIC, "max_rd_atomic")?;
                    q.sq_psn = sq_psn & PSN_MASK;
                    q.retry_cnt = retry_cnt;
                    q.rnr_retry = rnr_retry;
                    q.max_rd_atomic = max_rd_atomic;
                    q.state = QpState::Rts;
                }
                QpTransition::InitRaw { port } => {
                    crate::nic::eth::raw_transition(q.state, QpState::Init)?;
                    check_port_pkey(port, ports, 0)?;
                    q.state = QpState::Init;
                }
                QpTransition::RtrRaw => {
                    crate::nic::eth::raw_transition(q.state, QpState::Rtr)?;
                    q.state = QpState::Rtr;
                }
                QpTransition::RtsRaw => {
                    crate::nic::eth::raw_transition(q.state, QpState::Rts)?;
                    q.state = QpState::Rts;
                }
                QpTransition::SqeToRts => {
                    // Only a UD or UC QP ever enters SQE.
                    expect(q.state, QpState::Sqe)?;
                    q.state = QpState::Rts;
                }
                QpTransition::Err => fail(n, qpi),
                QpTransition::Reset => {
                    q.state = QpState::Reset;
                    q.dc = None;
                    q.errored_streams.clear();
                    q.sq_ci = 0;
                    q.sq_pi = 0;
                    q.sq_fetched = 0;
                    q.rq_ci = 0;
                    q.rq_known_pi = 0;
                    q.stall = None;
                    q.retries = 0;
                    q.rnr_retries = 0;
                    q.fatal = false;
                    q.atomic_replay = None;
                    // The QP context starts over: its PSNs are gone.
                    q.sq_psn = 0;
                    q.rq_psn = 0;
                    q.head_psn = None;
                    q.psn_nak_sent = false;
                    q.deferred = false;
                    q.snapped = None;
                    q.deferred_bf.clear();
                }
            }
            if matches!(t, QpTransition::Err | QpTransition::Reset) {
                // The kernel releases a QP's rate limit when it moves to ERR or RESET
                // (`qp_rl_commit`).
                n.set_pacer(qpi, None);
            }
            Ok(())
        })
    }

    /// Current state of a QP.
    pub fn qp_state(&self, qpn: u32) -> Result<QpState, HwError> {
        self.with(|n| slot(&mut n.qps, qpn, QPN_BASE).map(|q| q.state))
    }

    /// A QP's sequence numbers from its context, in any state (`ibv_query_qp` with
    /// `IBV_QP_SQ_PSN | IBV_QP_RQ_PSN`; the kernel reads the QPC's `next_send_psn` and
    /// `next_rcv_psn`). RESET clears them.
    pub fn qp_psn(&self, qpn: u32) -> Result<QpPsn, HwError> {
        self.with(|n| {
            slot(&mut n.qps, qpn, QPN_BASE).map(|q| QpPsn {
                sq_psn: q.sq_psn,
                rq_psn: q.rq_psn,
            })
        })
    }

    /// The service level of a connected QP's primary path, as the last RTR set it (0 before any).
    pub fn qp_sl(&self, qpn: u32) -> Result<u8, HwError> {
        self.with(|n| slot(&mut n.qps, qpn, QPN_BASE).map(|q| q.sl))
    }

    /// Destroy a QP (any state). `Busy` while a steering rule sends to it, or while it is
    /// attached to a multicast group (uverbs' `uverbs_free_qp` refuses a user's destroy
    /// then with EBUSY).
    pub fn destroy_qp(&self, qpn: u32) -> Result<(), HwError> {
        self.with(|n| {
            let qpi = n.qp_index(qpn).ok_or(HwError::NoSuchObject)?;
            if crate::nic::eth::qp_in_use(n, qpi) || n.mcast.iter().any(|g| g.has(qpi)) {
                return Err(HwError::Busy);
            }
            let q = n.qp(qpi);
            let (pdn, scq, rcq, srq, uar) = (q.pdn, q.send_cq, q.recv_cq, q.srq, q.uar);
            let (xrcd, pcie) = (q.xrcd, q.pcie);
            // Its traffic stays in the NIC's total.
            n.link.other = n.link.other + pcie;
            n.set_pacer(qpi, None);
            n.qps[qpi] = None;
            n.uars[uar as usize].qp = None;
            if xrcd != 0 {
                // An XRC target holds its domain only (no PD, CQ or SRQ of its own).
                *slot(&mut n.xrcds, xrcd, crate::state::XRCDN_BASE)? -= 1;
                return Ok(());
            }
            n.cq(scq).refs -= 1;
            n.cq(rcq).refs -= 1;
            if let Some(s) = srq {
                n.srq(s).refs -= 1;
            }
            *slot(&mut n.pds, pdn, PDN_BASE)? -= 1;
            Ok(())
        })
    }
}

/// Access flags must be known bits (QP access flags need nothing more).
fn check_access_bits(a: Access) -> Result<(), HwError> {
    if a.0 & !ALL_ACCESS != 0 {
        Err(HwError::InvalidParam("access flags"))
    } else {
        Ok(())
    }
}

/// Whether transition `t` is one of `transport`'s: RC and UD have their own masks, a DCI
/// takes its INIT and RTR and RC's RTS, a DCT RC's INIT and its RTR and nothing else (no
/// ERR, no RESET: `mlx5_ib_modify_dct` knows RESET -> INIT -> RTR only).
fn transition_of(transport: Transport, t: &QpTransition) -> bool {
    use QpTransition as T;
    match transport {
        Transport::Rc => matches!(
            t,
            T::Init { .. }
                | T::InitToInit { .. }
                | T::Rtr { .. }
                | T::Rts { .. }
                | T::Err
                | T::Reset
        ),
        Transport::Ud => matches!(
            t,
            T::InitUd { .. } | T::RtrUd | T::RtsUd { .. } | T::SqeToRts | T::Err | T::Reset
        ),
        // INIT as RC's; RTR and RTS without READ depth, RNR timer, timeout or retries.
        Transport::Uc => matches!(
            t,
            T::Init { .. }
                | T::InitToInit { .. }
                | T::RtrUc { .. }
                | T::RtsUc { .. }
                | T::SqeToRts
                | T::Err
                | T::Reset
        ),
        Transport::Dci => matches!(
            t,
            T::InitDci { .. } | T::RtrDci { .. } | T::Rts { .. } | T::Err | T::Reset
        ),
        Transport::Dct => matches!(t, T::Init { .. } | T::RtrDct { .. }),
        Transport::Raw => matches!(
            t,
            T::InitRaw { .. } | T::RtrRaw | T::RtsRaw | T::Err | T::Reset
        ),
        // RC's masks (`qp_state_table`: an XRC target's RTS needs fewer attributes; the
        // model takes RC's and uses what applies).
        Transport::XrcIni | Transport::XrcTgt => matches!(
            t,
            T::Init { .. } | T::Rtr { .. } | T::Rts { .. } | T::Err | T::Reset
        ),
    }
}

/// An RTR's address on a RoCE port (`roce`) must be global: the kernel refuses one
/// without `IB_AH_GRH` with EINVAL before the device sees the command
/// (`drivers/infiniband/core/verbs.c`: `_ib_modify_qp` -> `rdma_fill_sgid_attr` ->
/// `rdma_check_ah_attr`, whose address type is RoCE on an Ethernet port).
fn check_route(global: bool, roce: bool) -> Result<(), HwError> {
    if roce && !global {
        return Err(HwError::InvalidParam(
            "an RTR on a RoCE port needs a global route (GRH)",
        ));
    }
    Ok(())
}

/// A port of the NIC (`ports` of them) and a P_Key index in its table: the kernel refuses
/// an index at or beyond the port's P_Key table (`mlx5_ib_modify_qp`: `pkey_index >=
/// pkey_table_len`, EINVAL) for every QP type; the model's table holds the default P_Key
/// alone (docs/model.md).
fn check_port_pkey(port: u8, ports: u8, pkey_index: u16) -> Result<(), HwError> {
    if port == 0 || port > ports {
        return Err(HwError::InvalidParam("port"));
    }
    if pkey_index >= PKEY_TABLE_LEN {
        return Err(HwError::InvalidParam("pkey_index"));
    }
    Ok(())
}

/// A path MTU the QPC takes: 256..=4096, a power of two.
fn check_mtu(path_mtu: u32) -> Result<u32, HwError> {
    if (256..=4096).contains(&path_mtu) && path_mtu.is_power_of_two() {
        Ok(path_mtu)
    } else {
        Err(HwError::InvalidParam("path_mtu"))
    }
}

fn at_most(v: u8, max: u8, what: &'static str) -> Result<(), HwError> {
    if v > max {
        Err(HwError::InvalidParam(what))
    } else {
        Ok(())
    }
}

/// INIT -> RTR of a connected QP (RC or UC): the peer, the expected PSN, the path MTU.
fn set_rtr(q: &mut crate::state::Qp, dest: Dest, rq_psn: u32, path_mtu: u32) {
    q.dest = dest;
    q.rq_psn = rq_psn & PSN_MASK;
    q.mtu = path_mtu;
    q.state = QpState::Rtr;
}

fn expect(have: QpState, want: QpState) -> Result<(), HwError> {
    if have == want {
        Ok(())
    } else {
        Err(HwError::InvalidTransition)
    }
}
