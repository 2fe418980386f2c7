//! The Ethernet state of a NIC (docs/model.md, "Raw Ethernet"): its receive work queues
//! (plain and striding), its RSS QPs' indirection tables and hashes, its steering rules;
//! and the fabric's learning switch.

use crate::eth::flow::{Dest, Flow};
use crate::types::{RxHash, Striding, WqState};
use std::collections::BTreeMap;

/// First work queue number: another range than QPs, CQs and SRQs.
pub(crate) const WQN_BASE: u32 = 0x1000;
/// First flow number.
pub(crate) const FLOW_BASE: u32 = 1;
/// First RSS QP number: above the QPs' range, within the 24-bit QPN.
pub(crate) const RSS_QPN_BASE: u32 = 0x80_0000;

/// A receive work queue.
pub(crate) struct Wq {
    pub(crate) wqn: u32,
    pub(crate) pdn: u32,
    pub(crate) cq: usize,
    pub(crate) buf: u64,
    pub(crate) log_cnt: u8,
    pub(crate) log_stride: u8,
    pub(crate) dbrec: u64,
    pub(crate) user_index: u32,
    pub(crate) striding: Option<Striding>,
    pub(crate) state: WqState,
    /// WQEs finished (16-bit counter): consumed whole by a plain queue, every stride used
    /// (or flushed) by a striding one.
    pub(crate) ci: u16,
    /// The producer last read from the doorbell record.
    pub(crate) known_pi: u16,
    /// A striding queue's WQE at `ci` once fetched: its buffer's address and key, and the
    /// strides already used.
    pub(crate) cur: Option<Mprq>,
    /// RSS QPs whose indirection table names it.
    pub(crate) refs: u32,
}

impl Wq {
    /// Strides per WQE and bytes per stride (a striding queue).
    pub(crate) fn geometry(&self) -> Option<(u32, u32)> {
        self.striding
            .map(|s| (1 << s.log_num_strides, 1 << s.log_stride_bytes))
    }
}

/// The striding WQE a queue is filling.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Mprq {
    pub(crate) addr: u64,
    pub(crate) lkey: u32,
    pub(crate) used: u32,
}

/// An RSS QP: its protection domain, indirection table (work queue indices) and hash.
pub(crate) struct Rss {
    pub(crate) pdn: u32,
    pub(crate) wqs: Vec<usize>,
    pub(crate) hash: Option<RxHash>,
}

/// A NIC's Ethernet objects.
#[derive(Default)]
pub(crate) struct EthState {
    pub(crate) wqs: Vec<Option<Wq>>,
    pub(crate) rss: Vec<Option<Rss>>,
    pub(crate) flows: Vec<Option<Flow>>,
    /// Rules made so far (the order of the steering groups).
    pub(crate) seq: u64,
}

impl EthState {
    pub(crate) fn wq_index(&self, wqn: u32) -> Option<usize> {
        let i = wqn.checked_sub(WQN_BASE)? as usize;
        self.wqs.get(i)?.as_ref().map(|_| i)
    }

    pub(crate) fn wq(&mut self, i: usize) -> &mut Wq {
        self.wqs[i].as_mut().expect("live WQ index")
    }

    pub(crate) fn rss_index(&self, qpn: u32) -> Option<usize> {
        let i = qpn.checked_sub(RSS_QPN_BASE)? as usize;
        self.rss.get(i)?.as_ref().map(|_| i)
    }

    /// The live rules, in the order they were made.
    pub(crate) fn flows(&self) -> impl Iterator<Item = &Flow> + Clone {
        self.flows.iter().flatten()
    }

    /// Whether rules send frames to `dest`.
    pub(crate) fn has_flows(&self, dest: Dest) -> bool {
        self.flows().any(|f| f.dest == dest)
    }

    /// Whether `progress` has work: a work queue in ERR may have new WQEs to flush.
    pub(crate) fn has_deferred_work(&self) -> bool {
        self.wqs.iter().flatten().any(|w| w.state == WqState::Err)
    }
}

/// The fabric's Ethernet switch: the ports (NIC indices) it has learned each source MAC
/// on, per VLAN (independent VLAN learning, IEEE 802.1Q §8.8). Entries never age.
#[derive(Default)]
pub(crate) struct Switch {
    pub(crate) fdb: BTreeMap<(Option<u16>, [u8; 6]), usize>,
}
