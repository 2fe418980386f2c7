//! The public handles: [`Fabric`] (the in-process network) and [`Nic`] (one device and its
//! slow-path interface).
//!
//! This file holds the fabric, the NIC handle and its lock, the NIC-wide calls (ports,
//! capabilities, the MMIO entry, `progress`, faults and diagnostics); the calls on each kind
//! of object are in `mem` (PDs, memory keys, device memory), `queues` (CQs and SRQs), `qp`
//! (QPs and address handles), `events` (channels and event queues), `mcast` (multicast
//! attachments), `xrc` (XRC domains, SRQs and target QPs) and `pacing` (rate limits).

use crate::complete::flush_delayed;
use crate::cqz::close_all;
use crate::pcie::{PcieConfig, PcieCounters, Tlp};
use crate::qp::{fail, flush_rq};
use crate::sq::{resume_paced, retry, run_deferred};
use crate::state::{Budget, NicState, World, MAX_RD_ATOMIC, QPN_BASE};
use crate::types::{Caps, Fault, GidEntry, HwError, NicConfig, PortAttr, QpState, Stats};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

mod eth;
mod events;
mod mcast;
mod mem;
mod pacing;
mod qp;
mod queues;
mod xrc;

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
/// The largest `max_msg_sz` a NIC can be given: what one pointer segment addresses.
const MAX_MSG_LIMIT: u32 = 1 << 31;

fn aligned(addr: u64, align: u64) -> Result<(), HwError> {
    if addr == 0 || addr % align != 0 {
        Err(HwError::BadAddress)
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

/// Free the reference-counted object `id` of `v` (numbered from `base`); `Busy` while it
/// is referenced.
fn free(v: &mut [Option<u32>], id: u32, base: u32) -> Result<(), HwError> {
    if *slot(v, id, base)? != 0 {
        return Err(HwError::Busy);
    }
    v[(id - base) as usize] = None;
    Ok(())
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
            max_mcast_grp: n.cfg.mcast.max_groups,
            max_mcast_qp_attach: n.cfg.mcast.max_qps_per_group,
            max_total_mcast_qp_attach: n
                .cfg
                .mcast
                .max_groups
                .saturating_mul(n.cfg.mcast.max_qps_per_group),
            xrc: n.cfg.xrc.supported,
            packet_pacing: n.cfg.packet_pacing,
        })
    }

    /// The CQE version of this NIC's completions ([`NicConfig::cqe_version`]: 1 puts the
    /// user index in `srqn_uidx`, else the SRQ number of an SRQ receive), as the kernel
    /// tells a user context (`mlx5_ib_alloc_ucontext_resp.cqe_version`).
    pub fn cqe_version(&self) -> u8 {
        self.with(|n| n.cfg.cqe_version)
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

    /// One MMIO write TLP from the CPU to UAR page `uar` at `offset`: 8 bytes (send
    /// doorbell or CQ arm) or 64 bytes (a BlueFlame chunk). The work it starts runs before
    /// this returns. Malformed writes are counted in [`Stats`] and ignored.
    pub fn mmio_write(&self, uar: u32, offset: u32, data: &[u8]) {
        self.with_world(|w, i| crate::mmio::write(w, i, uar, offset, data));
    }

    /// Run deferred work: the send queues of doorbells `Fault::DeferExecution` queued,
    /// delayed CQEs, one retry step of every stalled QP (RNR or lost packets), the send
    /// queues of paced QPs whose wait is over, and flushes of receives posted to QPs in
    /// ERR. Returns how much it did.
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
            done += crate::eth::rx::flush_wqs(&mut w.nics[i]);
            for qpi in 0..w.nics[i].qps.len() {
                let Some(q) = &w.nics[i].qps[qpi] else {
                    continue;
                };
                if q.fatal && q.state != QpState::Err {
                    fail(&mut w.nics[i], qpi);
                    done += 1;
                } else if q.state == QpState::Err {
                    done += flush_rq(&mut w.nics[i], qpi);
                } else if retry(w, i, qpi) || resume_paced(w, i, qpi) {
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
    pub fn clock_info(&self) -> Option<crate::clock::ClockInfo> {
        self.with(|n| n.clock.info())
    }

    /// The free-running device clock now, as the CPU reads it from the internal timer of
    /// the device's initialization segment (`internal_timer_h` / `_l`, what libmlx5's
    /// `mlx5_read_clock` reads through the core-clock page); `None` without a clock. The
    /// CPU's read of the register is not counted as a TLP.
    pub fn read_clock(&self) -> Option<u64> {
        self.with(|n| (n.cfg.clock_khz != 0).then(|| n.clock.read()))
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
        self.with(|n| {
            n.fast_paths_wanted = on;
            n.refresh_fast_paths();
        });
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
