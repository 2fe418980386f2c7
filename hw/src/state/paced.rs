//! A paced QP on the NIC: the gate before each WQE of its send queue, the charge of what
//! leaves, and the RC fast path kept off while an RC QP is paced (docs/model.md, "Rate
//! limits"; the bucket itself is `pace`).

use super::pace::{duration_ps, Pacer};
use crate::state::NicState;
use crate::types::QpState;

impl NicState {
    /// Whether the head WQE of paced QP index `qpi` may leave now. `ready` is when it
    /// became ready within this run of the send queue (`None`: the run's first WQE, ready
    /// now, or when it began to wait). If not, the QP waits for `Nic::progress`.
    pub(crate) fn pace_admit(&mut self, qpi: usize, ready: &mut Option<u64>) -> bool {
        let now = self.pacing.now();
        let q = self.qp(qpi);
        let Some(p) = q.pacer.as_mut() else {
            return true;
        };
        let at = ready.or(p.wait).unwrap_or(now);
        let depart = p.departure(at);
        if depart > now {
            if p.wait.is_none() {
                p.wait = Some(at);
                self.stats.paced_waits += 1;
            }
            self.defer();
            return false;
        }
        p.wait = None;
        p.depart = depart;
        *ready = Some(depart);
        true
    }

    /// Whether paced QP index `qpi` waits and may leave now. A wait its QP no longer has
    /// (out of RTS, its send queue flushed) is dropped.
    pub(crate) fn pace_due(&mut self, qpi: usize) -> bool {
        let now = self.pacing.now();
        let Some(q) = self.qps[qpi].as_mut() else {
            return false;
        };
        let (live, stalled) = (q.state == QpState::Rts && q.sq_ci != q.sq_pi, q.stall);
        let Some(p) = q.pacer.as_mut() else {
            return false;
        };
        let Some(at) = p.wait else {
            return false;
        };
        if !live {
            p.wait = None;
            return false;
        }
        stalled.is_none() && p.departure(at) <= now
    }

    /// Give QP index `qpi` pacer `p` (`None`: no limit). The RC fast path has no pacer, so
    /// it runs only while no RC QP of the NIC is paced.
    pub(crate) fn set_pacer(&mut self, qpi: usize, p: Option<Pacer>) {
        self.qp(qpi).pacer = p;
        self.refresh_fast_paths();
    }

    /// `fast_paths`: wanted, and no RC QP paced.
    pub(crate) fn refresh_fast_paths(&mut self) {
        let paced_rc = self
            .qps
            .iter()
            .flatten()
            .any(|q| q.pacer.is_some() && q.transport == crate::types::Transport::Rc);
        self.fast_paths = self.fast_paths_wanted && !paced_rc;
    }

    /// `pkts` request packets of `bytes` payload leave QP index `qpi`: count them, and
    /// charge them to its pacer.
    #[inline]
    pub(crate) fn on_wire(&mut self, qpi: usize, pkts: u32, bytes: u64) {
        self.stats.packets += u64::from(pkts);
        self.charge(qpi, pkts, bytes);
    }

    /// Charge `pkts` packets of `bytes` payload of QP index `qpi` to its pacer (a raw
    /// packet QP's frames, which are not request packets).
    #[inline]
    pub(crate) fn charge(&mut self, qpi: usize, pkts: u32, bytes: u64) {
        let overhead = u64::from(self.cfg.packet_pacing.packet_overhead);
        if let Some(p) = self.qp(qpi).pacer.as_mut() {
            let cost = bytes + u64::from(pkts) * overhead;
            p.tat = p.tat.max(p.depart) + duration_ps(cost, p.limit.kbps);
        }
    }
}
