//! Raw Ethernet in the public API (docs/model.md, "Raw Ethernet"): the port's Ethernet
//! capabilities, receive work queues, RSS QPs and flow-steering rules. A raw packet QP
//! itself is made by [`Nic::create_qp`] with [`Transport::Raw`](crate::Transport::Raw).

use crate::eth::flow::{compile, conflicts, Dest};
use crate::eth::rx::{flush_wq, max_frame};
use crate::nic::{aligned, slot, Nic, LOG_MAX_QP_WR};
use crate::state::eth::{Rss, Wq, FLOW_BASE, RSS_QPN_BASE, WQN_BASE};
use crate::state::{NicState, PDN_BASE};
use crate::types::{
    EthCaps, FlowAttr, FlowKind, HwError, LinkLayer, QpParams, QpState, RssQpParams, StridingCaps,
    Transport, WqParams, WqState,
};

/// `MLX5_MIN_SINGLE_STRIDE_LOG_NUM_BYTES` and `_MAX_` (drivers/infiniband/hw/mlx5/mlx5_ib.h).
const STRIDE_BYTES: (u8, u8) = (6, 13);
/// `MLX5_MIN_SINGLE_WQE_LOG_NUM_STRIDES`, `MLX5_EXT_MIN_SINGLE_WQE_LOG_NUM_STRIDES` (with
/// `ext_stride_num_range`) and `MLX5_MAX_SINGLE_WQE_LOG_NUM_STRIDES`.
const NUM_STRIDES: (u8, u8, u8) = (9, 3, 16);

fn ethernet(n: &NicState) -> Result<(), HwError> {
    match n.cfg.link_layer {
        LinkLayer::Ethernet => Ok(()),
        LinkLayer::InfiniBand => Err(HwError::NotSupported("raw Ethernet on an InfiniBand port")),
    }
}

fn striding_caps(n: &NicState) -> Option<StridingCaps> {
    n.cfg.eth.striding_rq.then_some(StridingCaps {
        min_log_stride_bytes: STRIDE_BYTES.0,
        max_log_stride_bytes: STRIDE_BYTES.1,
        min_log_num_strides: if n.cfg.eth.ext_stride_num_range {
            NUM_STRIDES.1
        } else {
            NUM_STRIDES.0
        },
        max_log_num_strides: NUM_STRIDES.2,
    })
}

/// The checks `create_qp` makes of a raw packet QP beyond an RC QP's: an Ethernet port;
/// no SRQ (the kernel's raw packet RQ is an inline memory RQ, `create_raw_packet_qp_rq`);
/// an RQ is optional (`rq_buf` 0: none, as `max_recv_wr` 0 leaves the kernel's raw QP
/// without one).
pub(crate) fn check_raw_qp(n: &NicState, p: &QpParams) -> Result<(), HwError> {
    ethernet(n)?;
    if p.srqn.is_some() {
        return Err(HwError::InvalidParam("a raw packet QP has no SRQ"));
    }
    Ok(())
}

impl Nic {
    /// The port's Ethernet capabilities and MAC address (`02:00:00:00:LID`).
    pub fn eth_caps(&self) -> EthCaps {
        self.with(|n| EthCaps {
            mac: crate::roce::mac(n.lid),
            min_inline: n.cfg.eth.min_inline.bytes(),
            enhanced_mpw: n.cfg.eth.enhanced_mpw,
            striding: striding_caps(n),
            max_tso: n.cfg.eth.max_tso,
            max_frame: max_frame(&n.cfg),
        })
    }

    /// Create a receive work queue in RESET (`ibv_create_wq`, or `mlx5dv_create_wq` with
    /// striding attributes); returns its number. Refused as rdma-core and the kernel refuse:
    /// no Ethernet port or no striding RQ cap (`NotSupported`); strides outside the caps,
    /// a ring stride the WQE does not fit, a ring larger than the device's
    /// (`InvalidParam`); a buffer or record that is null or misaligned (`BadAddress`).
    ///
    /// # Safety
    /// The ring (`1 << (log_wqe_cnt + log_stride)` bytes) and `dbrec` (4 bytes) must be
    /// valid process memory until the work queue is destroyed.
    pub unsafe fn create_wq(&self, p: &WqParams) -> Result<u32, HwError> {
        aligned(p.buf, 16)?;
        aligned(p.dbrec, 4)?;
        if p.log_wqe_cnt > LOG_MAX_QP_WR {
            return Err(HwError::InvalidParam("log_wqe_cnt"));
        }
        self.with(|n| {
            ethernet(n)?;
            let min_stride = match p.striding {
                None => 4,
                Some(s) => {
                    let caps = striding_caps(n).ok_or(HwError::NotSupported("striding RQ"))?;
                    let bytes = caps.min_log_stride_bytes..=caps.max_log_stride_bytes;
                    let count = caps.min_log_num_strides..=caps.max_log_num_strides;
                    if !bytes.contains(&s.log_stride_bytes) || !count.contains(&s.log_num_strides) {
                        return Err(HwError::InvalidParam("striding attributes"));
                    }
                    // `struct mlx5_mprq_wqe`: a next segment and a data segment.
                    5
                }
            };
            if !(min_stride..=10).contains(&p.log_stride) {
                return Err(HwError::InvalidParam("log_stride"));
            }
            slot(&mut n.pds, p.pdn, PDN_BASE)?;
            let cq = n.cq_index(p.cqn).ok_or(HwError::NoSuchObject)?;
            *slot(&mut n.pds, p.pdn, PDN_BASE)? += 1;
            n.cq(cq).refs += 1;
            let i = n.eth.wqs.len();
            let wqn = WQN_BASE + i as u32;
            n.eth.wqs.push(Some(Wq {
                wqn,
                pdn: p.pdn,
                cq,
                buf: p.buf,
                log_cnt: p.log_wqe_cnt,
                log_stride: p.log_stride,
                dbrec: p.dbrec,
                user_index: p.user_index & 0xff_ffff,
                striding: p.striding,
                state: WqState::Reset,
                ci: 0,
                known_pi: 0,
                cur: None,
                refs: 0,
            }));
            Ok(wqn)
        })
    }

    /// Move a work queue to `to` (`ibv_modify_wq`; the PRM's RQ transitions): RESET to
    /// RDY (its counters start at 0, as rdma-core's `mlx5_modify_wq` zeroes the record),
    /// RDY to ERR (its posted WQEs are flushed, and so are those posted later, at each
    /// `progress`), RDY or ERR to RESET; staying put is allowed. ERR to RDY and RESET to
    /// ERR are `InvalidTransition` (mlx5e recovers an RQ through RESET).
    pub fn modify_wq(&self, wqn: u32, to: WqState) -> Result<(), HwError> {
        self.with(|n| {
            let wi = n.eth.wq_index(wqn).ok_or(HwError::NoSuchObject)?;
            let w = n.eth.wq(wi);
            match (w.state, to) {
                (a, b) if a == b => return Ok(()),
                (WqState::Reset, WqState::Rdy) | (_, WqState::Reset) => {
                    (w.ci, w.known_pi, w.cur) = (0, 0, None);
                }
                (WqState::Rdy, WqState::Err) => {
                    w.state = WqState::Err;
                    n.defer();
                    flush_wq(n, wi);
                    return Ok(());
                }
                _ => return Err(HwError::InvalidTransition),
            }
            n.eth.wq(wi).state = to;
            Ok(())
        })
    }

    /// A work queue's state.
    pub fn wq_state(&self, wqn: u32) -> Result<WqState, HwError> {
        self.with(|n| {
            let wi = n.eth.wq_index(wqn).ok_or(HwError::NoSuchObject)?;
            Ok(n.eth.wq(wi).state)
        })
    }

    /// Destroy a work queue; `Busy` while an RSS QP's indirection table names it (the
    /// kernel keeps a use count on it).
    pub fn destroy_wq(&self, wqn: u32) -> Result<(), HwError> {
        self.with(|n| {
            let wi = n.eth.wq_index(wqn).ok_or(HwError::NoSuchObject)?;
            let w = n.eth.wq(wi);
            if w.refs != 0 {
                return Err(HwError::Busy);
            }
            let (pdn, cq) = (w.pdn, w.cq);
            n.eth.wqs[wi] = None;
            n.cq(cq).refs -= 1;
            *slot(&mut n.pds, pdn, PDN_BASE)? -= 1;
            Ok(())
        })
    }

    /// Create an RSS QP: receive-only, spreading what its rules steer to it over the work
    /// queues of `p.wqns` by the Toeplitz hash of `p.hash`; returns its number (from
    /// 0x800000, a range of its own). It has no states: it takes frames from creation on,
    /// into work queues in RDY (the kernel refuses to modify or query it, `ENOSYS`).
    /// Refused as `create_rss_raw_qp_tir` refuses: an indirection table that is empty or
    /// not a power of two, no
    /// hash fields with more than one work queue, IPv4 and IPv6 fields together, TCP and
    /// UDP fields together, fields mlx5 does not hash (`InvalidParam`).
    pub fn create_rss_qp(&self, p: &RssQpParams) -> Result<u32, HwError> {
        let len = p.wqns.len();
        if len == 0 || !len.is_power_of_two() {
            return Err(HwError::InvalidParam("indirection table size"));
        }
        let fields = p.hash.map_or(Default::default(), |h| h.fields);
        if fields.0 == 0 && len > 1 {
            return Err(HwError::InvalidParam(
                "an indirection table of more than one entry needs hash fields",
            ));
        }
        if let Some(why) = crate::eth::rss::refusal(fields) {
            return Err(HwError::InvalidParam(why));
        }
        self.with(|n| {
            ethernet(n)?;
            slot(&mut n.pds, p.pdn, PDN_BASE)?;
            let wqs = p
                .wqns
                .iter()
                .map(|&wqn| n.eth.wq_index(wqn).ok_or(HwError::NoSuchObject))
                .collect::<Result<Vec<_>, _>>()?;
            for &wi in &wqs {
                n.eth.wq(wi).refs += 1;
            }
            *slot(&mut n.pds, p.pdn, PDN_BASE)? += 1;
            let i = n.eth.rss.len();
            n.eth.rss.push(Some(Rss {
                pdn: p.pdn,
                wqs,
                hash: p.hash.filter(|h| h.fields.0 != 0),
            }));
            Ok(RSS_QPN_BASE + i as u32)
        })
    }

    /// Destroy an RSS QP; `Busy` while a rule steers to it.
    pub fn destroy_rss_qp(&self, qpn: u32) -> Result<(), HwError> {
        self.with(|n| {
            let ri = n.eth.rss_index(qpn).ok_or(HwError::NoSuchObject)?;
            if n.eth.has_flows(Dest::Rss(ri)) {
                return Err(HwError::Busy);
            }
            let r = n.eth.rss[ri].take().expect("live RSS QP");
            for wi in r.wqs {
                n.eth.wq(wi).refs -= 1;
            }
            *slot(&mut n.pds, r.pdn, PDN_BASE)? -= 1;
            Ok(())
        })
    }

    /// Attach a steering rule to QP `qpn` (`ibv_create_flow`): a raw packet QP with a
    /// receive queue, or an RSS QP. Returns the rule's number. Refused as the kernel
    /// refuses (docs/model.md, "Raw Ethernet"): another QP type or one without an RQ, a
    /// bad port, mismatched or conflicting specs (`InvalidParam`); a priority above 15
    /// (`OutOfResources`, the kernel's ENOMEM); an unsupported field, or a sniffer on a
    /// device without the cap (`NotSupported`).
    pub fn create_flow(&self, qpn: u32, attr: &FlowAttr) -> Result<u32, HwError> {
        self.with(|n| {
            let dest = match n.eth.rss_index(qpn) {
                Some(ri) => Dest::Rss(ri),
                None => {
                    let qpi = n.qp_index(qpn).ok_or(HwError::NoSuchObject)?;
                    let q = n.qp(qpi);
                    if q.transport != Transport::Raw || q.rq_buf == 0 {
                        return Err(HwError::InvalidParam(
                            "rules steer to raw packet QPs with a receive queue",
                        ));
                    }
                    Dest::Qp(qpi)
                }
            };
            if attr.kind == FlowKind::Sniffer && !n.cfg.eth.sniffer {
                return Err(HwError::NotSupported("sniffer rules"));
            }
            let flow = compile(attr, dest, n.eth.seq, n.cfg.ports)?;
            if conflicts(&flow, n.eth.flows()) {
                return Err(HwError::InvalidParam(
                    "an entry with the same match and another action or tag exists",
                ));
            }
            n.eth.seq += 1;
            n.eth.flows.push(Some(flow));
            Ok(FLOW_BASE + (n.eth.flows.len() - 1) as u32)
        })
    }

    /// Remove a steering rule (`ibv_destroy_flow`).
    pub fn destroy_flow(&self, flow: u32) -> Result<(), HwError> {
        self.with(|n| {
            slot(&mut n.eth.flows, flow, FLOW_BASE)?;
            n.eth.flows[(flow - FLOW_BASE) as usize] = None;
            Ok(())
        })
    }
}

/// Whether QP index `qpi` may be destroyed as far as Ethernet goes: not while a rule
/// steers to it (the kernel holds a use count on the QP for each flow; `ib_destroy_qp`
/// answers EBUSY).
pub(crate) fn qp_in_use(n: &NicState, qpi: usize) -> bool {
    n.eth.has_flows(Dest::Qp(qpi))
}

/// A raw packet QP's transitions (the kernel's `qp_state_table` row for
/// `IB_QPT_RAW_PACKET`: RESET to INIT takes the port alone; INIT to RTR and RTR to RTS
/// take nothing; `modify_raw_packet_qp` has no SQE to RTS).
pub(crate) fn raw_transition(q: QpState, to: QpState) -> Result<(), HwError> {
    match (q, to) {
        (QpState::Reset, QpState::Init)
        | (QpState::Init, QpState::Rtr)
        | (QpState::Rtr, QpState::Rts) => Ok(()),
        _ => Err(HwError::InvalidTransition),
    }
}
