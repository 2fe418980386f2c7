//! The public handles: [`Fabric`] (the in-process network) and [`Nic`] (one device and its
//! slow-path interface).

use crate::complete::flush_delayed;
use crate::cqz::close_all;
use crate::pcie::{PcieConfig, PcieCounters, Tlp};
use crate::qp::{fail, flush_rq};
use crate::sq::{retry, run_deferred};
use crate::state::{
    Budget, Dest, NicState, Qp, World, MAX_RD_ATOMIC, PDN_BASE, PSN_MASK, QPN_BASE,
};
use crate::types::{
    Access, AhAttr, Caps, DciStreams, Fault, GidEntry, HwError, NicConfig, PortAttr, QpInfo,
    QpParams, QpPsn, QpState, QpTransition, Stats, Transport,
};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

mod events;
mod mem;
mod queues;

/// The in-process network joining NICs, addressed by LID and GID. One lock guards the
/// whole fabric, so work that crosses NICs never deadlocks.
#[derive(Default)]
pub struct Fabric {
    world: Mutex<World>,
    events: Condvar,
    locks: AtomicU64,
}

impl Fabric {
    /// An empty fabric.
    pub fn new() -> Arc<Fabric> {
        Arc::new(Fabric::default())
    }

    fn lock(&self) -> MutexGuard<'_, World> {
        let w = self.world.lock().unwrap_or_else(|e| e.into_inner());
        // Only the lock's holder writes the count: a plain load and store, no second
        // atomic read-modify-write per lock.
        let n = self.locks.load(Ordering::Relaxed);
        self.locks.store(n + 1, Ordering::Relaxed);
        w
    }

    /// How many times the fabric's lock has been taken (a diagnostic of contention
    /// between the threads driving its NICs).
    pub fn lock_count(&self) -> u64 {
        self.locks.load(Ordering::Relaxed)
    }
}

/// A NIC on a fabric: a cheap, thread-safe handle.
#[derive(Clone)]
pub struct Nic {
    fabric: Arc<Fabric>,
    idx: usize,
    /// The NIC's `deferred` flag (see `NicState::deferred`), read without the lock.
    deferred: Arc<AtomicBool>,
}

const LOG_MAX_QP_WR: u8 = 15;
const LOG_MAX_CQE: u8 = 22;
const ALL_ACCESS: u32 = 0xf;
const MAX_WQE: u32 = 63 * 16;
/// Entries in each port's P_Key table: the default P_Key alone, at index 0 (a knob no
/// test needs yet; docs/model.md).
const PKEY_TABLE_LEN: u16 = 1;
/// The largest `max_msg_sz` a NIC can be given: what one pointer segment addresses.
const MAX_MSG_LIMIT: u32 = 1 << 31;

fn aligned(addr: u64, align: u64) -> Result<(), HwError> {
    if addr == 0 || addr % align != 0 {
        Err(HwError::BadAddress)
    } else {
        Ok(())
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

fn slot<T>(v: &mut [Option<T>], id: u32, base: u32) -> Result<&mut T, HwError> {
    id.checked_sub(base)
        .and_then(|i| v.get_mut(i as usize))
        .and_then(Option::as_mut)
        .ok_or(HwError::NoSuchObject)
}

fn insert<T>(v: &mut Vec<Option<T>>, t: T, base: u32) -> u32 {
    v.push(Some(t));
    base + (v.len() - 1) as u32
}

impl Nic {
    /// Attach a new NIC to `fabric`; it gets LID `n` (1, 2, ...) and GID `fe80::<lid>`.
    pub fn new(fabric: &Arc<Fabric>, config: NicConfig) -> Nic {
        let bf = if config.bf_size % 64 == 0 && config.bf_size <= 1024 {
            config.bf_size
        } else {
            0
        };
        let mut w = fabric.lock();
        let idx = w.nics.len();
        let after_lock = w.after_lock.clone();
        w.nics.push(NicState::new(
            (idx + 1) as u16,
            NicConfig {
                bf_size: bf,
                ports: config.ports.max(1),
                max_msg_sz: config.max_msg_sz.min(MAX_MSG_LIMIT),
                ..config
            },
            after_lock,
        ));
        Nic {
            fabric: fabric.clone(),
            idx,
            deferred: w.nics[idx].deferred.clone(),
        }
    }

    /// Run `f` on this NIC's state under the fabric lock.
    fn with<R>(&self, f: impl FnOnce(&mut NicState) -> R) -> R {
        let nic = &mut self.fabric.lock().nics[self.idx];
        let r = f(nic);
        close_all(nic);
        r
    }

    /// Run `f` on the whole fabric, then wake event waiters if events are queued.
    fn with_world<R>(&self, f: impl FnOnce(&mut World, usize) -> R) -> R {
        let mut w = self.fabric.lock();
        let r = f(&mut w, self.idx);
        // One pass, when a NIC may need it (`World::after_lock`): close the bursts held for
        // compression, and see whether events wait.
        if !w.after_lock.load(Ordering::Relaxed) {
            return r;
        }
        let mut wake = false;
        for n in &mut w.nics {
            if !n.bursts.is_empty() {
                close_all(n);
            }
            wake |= !n.events.is_empty() || !n.async_events.is_empty();
        }
        w.after_lock.store(wake, Ordering::Relaxed);
        if wake {
            self.fabric.events.notify_all();
        }
        r
    }

    /// This NIC's LID.
    pub fn lid(&self) -> u16 {
        self.with(|n| n.lid)
    }

    /// Device capabilities.
    pub fn caps(&self) -> Caps {
        self.with(|n| Caps {
            max_qp_wr: 1 << LOG_MAX_QP_WR,
            max_sq_desc_sz: MAX_WQE,
            max_send_sge: 30,
            max_recv_sge: 32,
            max_cqe: 1 << LOG_MAX_CQE,
            // A WRITE: ctrl + raddr + the 4-byte inline header.
            max_inline: MAX_WQE - 16 - 16 - 4,
            bf_size: n.cfg.bf_size,
            max_rd_atomic: MAX_RD_ATOMIC,
            max_msg_sz: n.cfg.max_msg_sz,
            atomic_8b_host_order: n.cfg.atomic_8b_host_order,
            compact_av: n.cfg.compact_av,
            max_dm_size: n.cfg.dm_size / crate::state::DM_PAGE * crate::state::DM_PAGE,
        })
    }

    /// Attributes of port `port` (1-based).
    pub fn port(&self, port: u8) -> Result<PortAttr, HwError> {
        self.with(|n| {
            if port == 0 || port > n.cfg.ports {
                return Err(HwError::InvalidParam("port"));
            }
            Ok(PortAttr {
                lid: match n.cfg.link_layer {
                    crate::types::LinkLayer::InfiniBand => n.lid,
                    crate::types::LinkLayer::Ethernet => 0,
                },
                link_layer: n.cfg.link_layer,
                gid: n.gid,
                active_mtu: n.cfg.active_mtu(),
                gid_table_len: n.gids.len() as u32,
            })
        })
    }

    /// Entry `index` of port `port`'s GID table (`ibv_query_gid_ex`): the GID, its type
    /// and, on RoCE, its VLAN. An index beyond the table is `InvalidParam`.
    pub fn query_gid(&self, port: u8, index: u32) -> Result<GidEntry, HwError> {
        self.with(|n| {
            if port == 0 || port > n.cfg.ports {
                return Err(HwError::InvalidParam("port"));
            }
            usize::try_from(index)
                .ok()
                .and_then(|i| n.gids.get(i).copied())
                .ok_or(HwError::InvalidParam("GID index"))
        })
    }

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
            Transport::Dci if p.srqn.is_some() => {
                return Err(HwError::InvalidParam("a DCI has no receive queue"))
            }
            _ => {}
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
        if p.srqn.is_none() && p.transport != Transport::Dci {
            if p.log_rq_wqe_cnt > LOG_MAX_QP_WR {
                return Err(HwError::InvalidParam("log_rq_wqe_cnt"));
            }
            if !(4..=10).contains(&p.log_rq_stride) {
                return Err(HwError::InvalidParam("log_rq_stride"));
            }
            aligned(p.rq_buf, 16)?;
        }
        self.with(|n| {
            slot(&mut n.pds, p.pdn, PDN_BASE)?;
            let send_cq = n.cq_index(p.send_cqn).ok_or(HwError::NoSuchObject)?;
            let recv_cq = n.cq_index(p.recv_cqn).ok_or(HwError::NoSuchObject)?;
            let srq = match p.srqn {
                Some(s) => Some(n.srq_index(s).ok_or(HwError::NoSuchObject)?),
                None => None,
            };
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
                deferred: None,
                deferred_bf: Vec::new(),
                snapshot: Vec::new(),
                pcie: PcieCounters::default(),
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
                    q.deferred = None;
                    q.deferred_bf.clear();
                }
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

    /// Destroy a QP (any state).
    pub fn destroy_qp(&self, qpn: u32) -> Result<(), HwError> {
        self.with(|n| {
            let q = slot(&mut n.qps, qpn, QPN_BASE)?;
            let (pdn, scq, rcq, srq, uar) = (q.pdn, q.send_cq, q.recv_cq, q.srq, q.uar);
            // Its traffic stays in the NIC's total.
            n.link.other = n.link.other + q.pcie;
            n.qps[(qpn - QPN_BASE) as usize] = None;
            n.uars[uar as usize].qp = None;
            n.cq(scq).refs -= 1;
            n.cq(rcq).refs -= 1;
            if let Some(s) = srq {
                n.srq(s).refs -= 1;
            }
            *slot(&mut n.pds, pdn, PDN_BASE)? -= 1;
            Ok(())
        })
    }

    /// One MMIO write TLP from the CPU to UAR page `uar` at `offset`: 8 bytes (send
    /// doorbell or CQ arm) or 64 bytes (a BlueFlame chunk). The work it starts runs before
    /// this returns. Malformed writes are counted in [`Stats`] and ignored.
    pub fn mmio_write(&self, uar: u32, offset: u32, data: &[u8]) {
        self.with_world(|w, i| crate::mmio::write(w, i, uar, offset, data));
    }

    /// Run deferred work: the send queues of doorbells `Fault::DeferExecution` queued,
    /// delayed CQEs, one retry step of every stalled QP (RNR or lost packets), and flushes
    /// of receives posted to QPs in ERR. Returns how much it did.
    ///
    /// When the NIC has none (its `deferred` flag is clear: the last call left no such
    /// work and nothing has made any since), this returns 0 without taking the fabric's
    /// lock, so an idle poller does not contend with the threads that post.
    pub fn progress(&self) -> usize {
        if !self.deferred.load(Ordering::Acquire) {
            return 0;
        }
        self.with_world(|w, i| {
            let mut done = 0;
            for qpi in 0..w.nics[i].qps.len() {
                if w.nics[i].qps[qpi].is_some() && run_deferred(w, i, qpi) {
                    done += 1;
                }
            }
            done += flush_delayed(&mut w.nics[i]);
            for qpi in 0..w.nics[i].qps.len() {
                let Some(q) = &w.nics[i].qps[qpi] else {
                    continue;
                };
                if q.fatal && q.state != QpState::Err {
                    fail(&mut w.nics[i], qpi);
                    done += 1;
                } else if q.state == QpState::Err {
                    done += flush_rq(&mut w.nics[i], qpi);
                } else if retry(w, i, qpi) {
                    done += 1;
                }
            }
            let nic = &w.nics[i];
            // Under the lock, as every `defer`: no work can appear between the check and
            // the store.
            nic.deferred
                .store(nic.has_deferred_work(), Ordering::Release);
            done
        })
    }

    /// The clock-info page (`mlx5dv_get_clock_info`): what converts CQE timestamps to
    /// nanoseconds without reading the device; `None` on a device without a clock
    /// (`NicConfig::clock_khz` 0). Reading it costs no PCIe transaction: on hardware it is a
    /// page of host memory the kernel keeps up to date.
    pub fn clock_info(&self) -> Option<crate::ClockInfo> {
        self.with(|n| n.clock.info())
    }

    /// Model statistics.
    pub fn stats(&self) -> Stats {
        self.with(|n| n.stats)
    }

    /// Cumulative counters of this NIC's PCIe link.
    pub fn pcie(&self) -> PcieCounters {
        self.with(|n| n.qps.iter().flatten().fold(n.link.other, |t, q| t + q.pcie))
    }

    /// Link counters attributed to one QP (`None` if it does not exist).
    pub fn qp_pcie(&self, qpn: u32) -> Option<PcieCounters> {
        self.with(|n| slot(&mut n.qps, qpn, QPN_BASE).ok().map(|q| q.pcie))
    }

    /// Change the link parameters (counters are kept).
    pub fn set_pcie_config(&self, cfg: PcieConfig) {
        self.with(|n| n.link.set_cfg(cfg));
    }

    /// Let the model's fast paths run (the default) or not. A fast path executes a common
    /// WQE (one small inline RDMA WRITE on RC) without the general machinery and is
    /// observably identical to it: memory, CQEs, counters, trace and states are the same
    /// either way. Turning them off is for tests that pin that equivalence.
    pub fn set_fast_paths(&self, on: bool) {
        self.with(|n| n.fast_paths = on);
    }

    /// How many WQEs the fast paths have executed on this NIC: a diagnostic for the tests
    /// that pin them, not a hardware counter (it is not in [`Stats`]).
    pub fn fast_path_wqes(&self) -> u64 {
        self.with(|n| n.fast_wqes)
    }

    /// Start (or stop and discard) recording every TLP.
    pub fn set_tlp_trace(&self, on: bool) {
        self.with(|n| n.link.set_trace(on));
    }

    /// Take the TLPs recorded since the last call.
    pub fn take_tlps(&self) -> Vec<Tlp> {
        self.with(|n| n.link.take_trace())
    }

    /// Inject a fault.
    pub fn inject(&self, f: Fault) {
        self.with(|n| match f {
            Fault::DropBlueFlame(on) => n.faults.drop_bf = on,
            Fault::LosePackets { qpn, count } => {
                n.faults.lose = Some(Budget {
                    qpn,
                    skip: 0,
                    count,
                })
            }
            Fault::LosePacketsAfter { qpn, skip, count } => {
                n.faults.lose = Some(Budget { qpn, skip, count })
            }
            Fault::LoseResponses { qpn, count } => {
                n.faults.lose_responses = Some(Budget {
                    qpn,
                    skip: 0,
                    count,
                })
            }
            Fault::DelayCqes(on) => n.faults.delay_cqes = on,
            Fault::DeferExecution(on) => n.faults.defer = on,
            Fault::Rnr { qpn, count } => {
                n.faults.rnr = Some(Budget {
                    qpn,
                    skip: 0,
                    count,
                })
            }
            Fault::HostStoreInAtomic { value } => n.faults.host_store = Some(value),
            Fault::CorruptPayload { qpn, count } => {
                n.faults.corrupt = Some(Budget {
                    qpn,
                    skip: 0,
                    count,
                })
            }
            Fault::PcieBackpressure(on) => n.faults.backpressure = on,
            Fault::Clear => n.faults = Default::default(),
        });
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
            T::Init { .. } | T::Rtr { .. } | T::Rts { .. } | T::Err | T::Reset
        ),
        Transport::Ud => matches!(
            t,
            T::InitUd { .. } | T::RtrUd | T::RtsUd { .. } | T::SqeToRts | T::Err | T::Reset
        ),
        // INIT as RC's; RTR and RTS without READ depth, RNR timer, timeout or retries.
        Transport::Uc => matches!(
            t,
            T::Init { .. } | T::RtrUc { .. } | T::RtsUc { .. } | T::SqeToRts | T::Err | T::Reset
        ),
        Transport::Dci => matches!(
            t,
            T::InitDci { .. } | T::RtrDci { .. } | T::Rts { .. } | T::Err | T::Reset
        ),
        Transport::Dct => matches!(t, T::Init { .. } | T::RtrDct { .. }),
    }
}

/// A port of the NIC (`ports` of them) and a P_Key index in its table: the kernel refuses
/// an index at or beyond the port's P_Key table (`mlx5_ib_modify_qp`: `pkey_index >=
/// pkey_table_len`, EINVAL) for every QP type; the model's table holds the default P_Key
/// alone (docs/model.md).
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
