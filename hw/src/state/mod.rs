//! The model's internal state: every NIC on the fabric and the objects it owns, the data
//! every engine reads and writes. The bottom of the model above its formats (docs/model.md,
//! "Code layout"): it names no engine. This file holds the fabric (`World`), the NIC
//! (`NicState`), its UAR pages and the send queue's reusable buffers; each kind of object's
//! state has a file of its own, and `access` is how the NIC touches host memory and what
//! that costs on the link.

use crate::pcie::Link;
use crate::types::{AsyncEvent, Event, NicConfig, QpState, Stats};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

pub(crate) mod access;
mod consts;
mod cq;
mod dm;
pub(crate) mod eth;
mod faults;
mod fence;
mod mcast;
mod mr;
mod pace;
mod paced;
mod qp;
mod srq;
mod xrc;

pub(crate) use consts::{
    BF_OFFSET, CHANNEL_BASE, CQN_BASE, CQ_DOORBELL, CQ_UAR, INVALID_LKEY, MAX_RD_ATOMIC, PDN_BASE,
    PSN_MASK, QPN_BASE, SRQN_BASE,
};
pub(crate) use cq::{Arm, Cq, Delayed, Session};
pub(crate) use dm::{DevMem, DM_PAGE};
pub(crate) use faults::{hit_range, take_fault, Budget, Faults};
pub(crate) use fence::InFlight;
pub(crate) use mcast::McastGroup;
pub(crate) use mr::{Mr, MrSlot, Touch};
pub(crate) use pace::{PaceClock, Pacer};
pub(crate) use qp::{DcConn, Dest, Qp, Stall};
pub(crate) use srq::Srq;
pub(crate) use xrc::{XrcSrq, XRCDN_BASE};

/// Everything behind the fabric lock.
#[derive(Default)]
pub(crate) struct World {
    pub(crate) nics: Vec<NicState>,
    /// Set (under the lock) wherever a NIC's `bursts`, `events` or `async_events` gain an
    /// entry; the pass after each fabric lock (`Nic::with_world`) runs only while it is
    /// set, and clears it when it leaves no event queued (no burst is left open after it).
    /// Shared with every NIC as `NicState::after_lock`.
    pub(crate) after_lock: Arc<AtomicBool>,
    /// The Ethernet switch between the NICs (raw packet QPs).
    pub(crate) switch: eth::Switch,
}

impl World {
    /// The NIC answering to a destination's LID (or, when the LID is 0, the NIC with its
    /// GID in its table).
    #[inline]
    pub(crate) fn route(&self, d: &Dest) -> Option<usize> {
        if d.lid != 0 {
            let i = usize::from(d.lid) - 1;
            return (i < self.nics.len()).then_some(i);
        }
        self.nics
            .iter()
            .position(|n| n.gids.iter().any(|e| e.gid == d.gid))
    }
}

/// One BlueFlame half being assembled from 64-byte chunks.
pub(crate) struct BfHalf {
    pub(crate) buf: Box<[u8]>,
    pub(crate) got: u32,
    pub(crate) need: u32,
}

pub(crate) struct Uar {
    /// Index of the QP owning this page's register.
    pub(crate) qp: Option<usize>,
    pub(crate) halves: [BfHalf; 2],
}

/// Largest WQE buffer: 63 DS rounded up to whole BBs.
pub(crate) const WQE_BUF: usize = 1024;

/// Buffers one run of a send queue works in, kept by the NIC between runs.
pub(crate) struct Scratch {
    pub(crate) wqe: [u8; WQE_BUF],
    pub(crate) in_flight: InFlight,
}

pub(crate) struct NicState {
    pub(crate) lid: u16,
    /// GID 0 of the port.
    pub(crate) gid: [u8; 16],
    /// The port's GID table (index 0 is `gid`).
    pub(crate) gids: Vec<crate::types::GidEntry>,
    /// The state of the UDP source ports for flow label 0 (`NicConfig::udp_sport_seed`).
    pub(crate) sport_rng: Option<u64>,
    pub(crate) cfg: NicConfig,
    pub(crate) link: Link,
    pub(crate) stats: Stats,
    /// Reference counts of allocated PDs.
    pub(crate) pds: Vec<Option<u32>>,
    pub(crate) mrs: Vec<MrSlot>,
    pub(crate) cqs: Vec<Option<Cq>>,
    pub(crate) srqs: Vec<Option<Srq>>,
    pub(crate) qps: Vec<Option<Qp>>,
    pub(crate) uars: Vec<Uar>,
    /// Completion events of CQs on no channel: the NIC's own event queue.
    pub(crate) events: VecDeque<Event>,
    /// Completion channels (`Nic::create_channel`), by number from [`CHANNEL_BASE`].
    pub(crate) channels: Vec<Option<crate::channel::Channel>>,
    /// Affiliated asynchronous events (the async event queue).
    pub(crate) async_events: VecDeque<AsyncEvent>,
    pub(crate) faults: Faults,
    pub(crate) delayed: VecDeque<Delayed>,
    /// Indices of the CQs holding CQEs of the current burst for compression.
    pub(crate) bursts: Vec<usize>,
    /// The fabric's `World::after_lock`, shared by its NICs (`NicState::note_after_lock`).
    pub(crate) after_lock: Arc<AtomicBool>,
    /// Set (under the fabric's lock) wherever work for [`crate::Nic::progress`] may appear:
    /// a deferred doorbell, a delayed CQE, a stalled, fatal or failed QP. `progress`
    /// clears it when it leaves none, and returns at once without the lock while it is
    /// clear. Anything new that leaves work for `progress` must set it (`NicState::defer`).
    pub(crate) deferred: Arc<AtomicBool>,
    /// The fast paths (`fast`) may run; off, every WQE goes the general way: while
    /// `Nic::set_fast_paths` wants them and no RC QP is paced (the fast path has no pacer).
    pub(crate) fast_paths: bool,
    /// `Nic::set_fast_paths`.
    pub(crate) fast_paths_wanted: bool,
    /// WQEs the fast paths executed (`Nic::fast_path_wqes`).
    pub(crate) fast_wqes: u64,
    /// Buffers reused by every doorbell (taken while a send queue runs).
    pub(crate) scratch: Option<Box<Scratch>>,
    /// The device clock (`NicConfig::clock_khz`).
    pub(crate) clock: crate::clock::Clock,
    /// On-chip device memory (`NicConfig::dm_size`).
    pub(crate) dm: DevMem,
    /// Page shifts of queue memory by start address: `start -> (end, page shift)`
    /// (`Nic::set_ring_page_size`); rings elsewhere are in 4 KiB pages.
    pub(crate) ring_pages: std::collections::BTreeMap<u64, (u64, u8)>,
    /// Work queues, RSS QPs and steering rules (raw Ethernet).
    pub(crate) eth: eth::EthState,
    /// The multicast groups the NIC's QPs are attached to.
    pub(crate) mcast: Vec<McastGroup>,
    /// Reference counts of allocated XRC domains, by number from [`XRCDN_BASE`].
    pub(crate) xrcds: Vec<Option<u32>>,
    /// The packet pacer's clock (`NicConfig::pacing_clock`).
    pub(crate) pacing: PaceClock,
}

impl NicState {
    /// Notes that the pass after the fabric lock has work: a burst to close or an event to
    /// wake waiters for (see `World::after_lock`; the lock is held, so relaxed suffices).
    pub(crate) fn note_after_lock(&self) {
        self.after_lock.store(true, Ordering::Relaxed);
    }

    /// Notes that [`crate::Nic::progress`] may have work (see `deferred`).
    pub(crate) fn defer(&self) {
        self.deferred.store(true, Ordering::Release);
    }

    /// Whether `progress` could still find work here with no other change to the fabric:
    /// delayed CQEs, or a QP with deferred doorbells, or a stalled, fatal or failed QP
    /// (receives posted to a QP in ERR through host memory are flushed by `progress`, so
    /// such a QP always counts), or a paced QP whose head waits for its rate limit.
    pub(crate) fn has_deferred_work(&self) -> bool {
        !self.delayed.is_empty()
            || self.eth.has_deferred_work()
            || self.qps.iter().flatten().any(|q| {
                q.deferred
                    || q.stall.is_some()
                    || q.fatal
                    || q.state == QpState::Err
                    || q.pacer.is_some_and(|p| p.wait.is_some())
            })
    }

    pub(crate) fn new(lid: u16, cfg: NicConfig, after_lock: Arc<AtomicBool>) -> Self {
        let gids = match cfg.link_layer {
            crate::types::LinkLayer::InfiniBand => {
                let mut gid = [0u8; 16];
                gid[0] = 0xfe;
                gid[1] = 0x80;
                gid[14..].copy_from_slice(&lid.to_be_bytes());
                vec![crate::types::GidEntry {
                    gid,
                    gid_type: crate::types::GidType::Ib,
                    vlan: None,
                }]
            }
            crate::types::LinkLayer::Ethernet => crate::roce::gid_table(lid, &cfg.roce_gids),
        };
        let gid = gids[0].gid;
        let link = Link::new(cfg.pcie);
        let clock = crate::clock::Clock::new(cfg.clock_khz, cfg.clock_shift, cfg.clock_step);
        let dm = DevMem::new(cfg.dm_size);
        let pacing = PaceClock::new(cfg.pacing_clock);
        let mut nic = NicState {
            lid,
            gid,
            gids,
            sport_rng: cfg.udp_sport_seed.map(|s| s.max(1)),
            cfg,
            link,
            stats: Stats::default(),
            pds: Vec::new(),
            // Slot 0 is never used: key 0 stays invalid.
            mrs: vec![MrSlot {
                variant: 0,
                mr: None,
            }],
            cqs: Vec::new(),
            srqs: Vec::new(),
            qps: Vec::new(),
            uars: Vec::new(),
            events: VecDeque::new(),
            channels: Vec::new(),
            async_events: VecDeque::new(),
            faults: Faults::default(),
            delayed: VecDeque::new(),
            bursts: Vec::new(),
            after_lock,
            deferred: Arc::new(AtomicBool::new(false)),
            fast_paths: true,
            fast_paths_wanted: true,
            fast_wqes: 0,
            scratch: None,
            clock,
            dm,
            ring_pages: Default::default(),
            eth: Default::default(),
            mcast: Vec::new(),
            xrcds: Vec::new(),
            pacing,
        };
        nic.new_uar(None);
        nic
    }

    pub(crate) fn new_uar(&mut self, qp: Option<usize>) -> u32 {
        let half = || BfHalf {
            buf: vec![0u8; self.cfg.bf_size as usize].into_boxed_slice(),
            got: 0,
            need: 0,
        };
        let uar = Uar {
            qp,
            halves: [half(), half()],
        };
        self.uars.push(uar);
        (self.uars.len() - 1) as u32
    }

    pub(crate) fn qp_index(&self, qpn: u32) -> Option<usize> {
        let i = qpn.checked_sub(QPN_BASE)? as usize;
        self.qps.get(i)?.as_ref().map(|_| i)
    }

    pub(crate) fn cq_index(&self, cqn: u32) -> Option<usize> {
        let i = cqn.checked_sub(CQN_BASE)? as usize;
        self.cqs.get(i)?.as_ref().map(|_| i)
    }

    pub(crate) fn srq_index(&self, srqn: u32) -> Option<usize> {
        let i = srqn.checked_sub(SRQN_BASE)? as usize;
        self.srqs.get(i)?.as_ref().map(|_| i)
    }

    #[inline(always)]
    pub(crate) fn qp(&mut self, i: usize) -> &mut Qp {
        self.qps[i].as_mut().expect("live QP index")
    }

    pub(crate) fn channel(&mut self, ch: u32) -> Option<&mut crate::channel::Channel> {
        let i = ch.checked_sub(CHANNEL_BASE)? as usize;
        self.channels.get_mut(i)?.as_mut()
    }

    pub(crate) fn cq(&mut self, i: usize) -> &mut Cq {
        self.cqs[i].as_mut().expect("live CQ index")
    }

    pub(crate) fn srq(&mut self, i: usize) -> &mut Srq {
        self.srqs[i].as_mut().expect("live SRQ index")
    }

    /// [`crate::wqe::decode`] of a send WQE on this NIC (its largest message; zero-length
    /// data segments counted).
    #[inline(always)]
    pub(crate) fn decode(
        &mut self,
        ctrl: crate::wqe::Ctrl,
        wqe: &[u8],
        xport: usize,
    ) -> Result<crate::wqe::Wqe, u8> {
        let max_msg = self.cfg.max_msg_sz.into();
        crate::wqe::decode(
            ctrl,
            wqe,
            xport,
            max_msg,
            &mut self.stats.zero_length_segments,
        )
    }

    /// The live MR named by `key`, if any.
    #[inline]
    pub(crate) fn mr(&self, key: u32) -> Option<&Mr> {
        let slot = self.mrs.get((key >> 8) as usize)?;
        if slot.variant != key as u8 {
            return None;
        }
        slot.mr.as_ref()
    }

    /// The live MR named by `key`, if any.
    pub(crate) fn mr_mut(&mut self, key: u32) -> Option<&mut Mr> {
        let slot = self.mrs.get_mut((key >> 8) as usize)?;
        if slot.variant != key as u8 {
            return None;
        }
        slot.mr.as_mut()
    }
}
