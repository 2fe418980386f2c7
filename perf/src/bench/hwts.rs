//! `--hw-timestamps`: latency by the NIC's clock, from the timestamps in the CQEs
//! (`mlx5_cqe64.timestamp`, prm-facts-next §6.6), beside the CPU's clock.
//!
//! A post has no device time: no CQE records when the NIC saw the doorbell, and reading
//! the device clock (`ibv_query_rt_values_ex`) costs non-posted MMIO reads in the middle of
//! the timed loop. Converting a CQE time to the host's clock (`mlx5dv_ts_to_ns`) and
//! subtracting a CPU time mixes two clocks whose pairing is only as good as the kernel's
//! calibration. So both numbers are differences of two CQE timestamps written by the same
//! NIC, converted with the same calibration ([`ClockInfo`]):
//!
//! - **iteration** (`hw_t_*`): requester CQE of WR `i` minus requester CQE of WR `i − 1`
//!   (both signaled), halved in the ping-pong tests: perftest's own sample (the gap between
//!   consecutive posts) timed by the NIC at the completion end. It holds this side's CPU
//!   time from a completion to the next post, as perftest's samples do.
//! - **post to CQE** (`hw_post_cqe_*`): requester CQE of WR `i` minus the CQE whose poll let
//!   the CPU post WR `i` (its trigger): the receive CQE of the peer's message in the
//!   ping-pongs on receives (`send_lat`, `write_lat --write_with_imm`), the previous
//!   requester CQE in `read_lat` and `atomic_lat`. An upper bound of the NIC's post to CQE:
//!   it also holds the CPU's reaction (noticing the trigger, building and posting the WQE).
//!   `write_lat` spins on memory, not on a CQE: it has no trigger and no such number.

use std::collections::VecDeque;
use std::time::Instant;

use mlx5_direct::ClockInfo;
use serde::{Deserialize, Serialize};

use super::Error;
use crate::stats::{LatRow, Latencies, Phase, Schedule};

/// What lets the CPU post a latency test's next WR.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Trigger {
    /// The receive CQE of the peer's message (SEND and WRITE-with-immediate ping-pongs).
    Receive,
    /// The previous WR's requester CQE (READ and atomic latency).
    Requester,
    /// A byte in memory, no CQE (the WRITE ping-pong).
    Memory,
}

/// The hardware columns of a latency row, in microseconds of the NIC's clock.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct HwRow {
    /// Nanoseconds per tick of the NIC's clock (`mult / 2^shift` of its calibration).
    pub tick_ns: f64,
    /// Requester CQE to requester CQE of consecutive WRs, halved in the ping-pongs.
    pub iteration: LatRow,
    /// Requester CQE minus the CQE that triggered the post (None in `write_lat`).
    pub post_to_cqe: Option<LatRow>,
}

/// One size's CQE timestamps and the samples taken from them.
#[derive(Debug)]
pub(super) struct HwTimes {
    info: ClockInfo,
    trigger: Trigger,
    halves: bool,
    schedule: Option<Schedule>,
    /// The last receive CQE's timestamp.
    last_receive: Option<u64>,
    /// The last requester CQE: WR id and timestamp.
    last_requester: Option<(u64, u64)>,
    /// Posted WRs waiting for their requester CQE, with their trigger's timestamp.
    pending: VecDeque<(u64, u64)>,
    iteration: Latencies,
    post_to_cqe: Latencies,
}

impl HwTimes {
    /// A size's tracker: `info` converts, `halves` for the ping-pongs, `schedule` keeps
    /// only the samples whose CQE is polled inside duration mode's sampling window.
    pub(super) fn new(
        info: ClockInfo,
        trigger: Trigger,
        halves: bool,
        schedule: Option<Schedule>,
    ) -> Self {
        HwTimes {
            info,
            trigger,
            halves,
            schedule,
            last_receive: None,
            last_requester: None,
            pending: VecDeque::new(),
            iteration: Latencies::new(),
            post_to_cqe: Latencies::new(),
        }
    }

    /// Nanoseconds from device time `from` to `to`; an error if the clock went back.
    fn span(&self, from: u64, to: u64) -> Result<f64, Error> {
        let (a, b) = (self.info.to_ns(from), self.info.to_ns(to));
        if b < a {
            return Err(format!(
                "--hw-timestamps: a CQE's timestamp {to:#x} is before an earlier CQE's \
                 {from:#x} (the NIC's clock went back)"
            )
            .into());
        }
        Ok((b - a) as f64)
    }

    /// WR `wr_id` is being posted: it remembers its trigger.
    pub(super) fn posted(&mut self, wr_id: u64) {
        let trigger = match self.trigger {
            Trigger::Receive => self.last_receive,
            Trigger::Requester => self.last_requester.map(|(_, ts)| ts),
            Trigger::Memory => None,
        };
        if let Some(ts) = trigger {
            self.pending.push_back((wr_id, ts));
        }
    }

    /// A receive CQE of timestamp `ts` was polled.
    pub(super) fn received(&mut self, ts: u64) {
        self.last_receive = Some(ts);
    }

    /// The requester CQE of WR `wr_id`, timestamp `ts`, was polled.
    pub(super) fn completed(&mut self, wr_id: u64, ts: u64) -> Result<(), Error> {
        let sampling = self
            .schedule
            .is_none_or(|s| s.phase(Instant::now()) == Phase::Sample);
        if let Some((prev, from)) = self.last_requester {
            if prev + 1 == wr_id && sampling {
                let ns = self.span(from, ts)?;
                self.iteration
                    .record(if self.halves { ns / 2.0 } else { ns });
            }
        }
        // Unsignaled WRs before this one have no CQE of their own.
        while self.pending.front().is_some_and(|&(id, _)| id < wr_id) {
            self.pending.pop_front();
        }
        if let Some(&(id, from)) = self.pending.front() {
            if id == wr_id {
                self.pending.pop_front();
                if sampling {
                    let ns = self.span(from, ts)?;
                    self.post_to_cqe.record(ns);
                }
            }
        }
        self.last_requester = Some((wr_id, ts));
        Ok(())
    }

    /// The size's hardware columns for `bytes`-byte messages.
    pub(super) fn row(&self, bytes: usize) -> HwRow {
        let summary = |l: &Latencies| l.summary(bytes, l.count());
        HwRow {
            tick_ns: f64::from(self.info.mult) / (1u64 << self.info.shift) as f64,
            iteration: summary(&self.iteration),
            post_to_cqe: (self.trigger != Trigger::Memory).then(|| summary(&self.post_to_cqe)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 1 000 000 kHz clock: one tick per nanosecond, exactly (mult 2^23, shift 23).
    const GHZ: ClockInfo = ClockInfo {
        nsec: 0,
        last_cycles: 0,
        frac: 0,
        mult: 1 << 23,
        shift: 23,
        mask: (1 << 41) - 1,
    };

    #[test]
    fn ping_pong_on_receives_halves_the_iteration_and_bounds_post_to_cqe() {
        let mut hw = HwTimes::new(GHZ, Trigger::Receive, true, None);
        // WR 0 has no trigger (nothing received yet); its CQE at 1 000.
        hw.posted(0);
        hw.completed(0, 1_000).unwrap();
        // The peer's answer lands at 3 000; WR 1 posted after it, completes at 3 700.
        hw.received(3_000);
        hw.posted(1);
        hw.completed(1, 3_700).unwrap();
        hw.received(5_000);
        hw.posted(2);
        hw.completed(2, 5_900).unwrap();
        let row = hw.row(8);
        // Iterations: (3 700 − 1 000) / 2 and (5 900 − 3 700) / 2 ns.
        assert_eq!(row.iteration.iterations, 2);
        assert_eq!(row.iteration.t_min, 1.1);
        assert_eq!(row.iteration.t_max, 1.35);
        // Post to CQE: 700 and 900 ns, WR 0 had no trigger.
        let p = row.post_to_cqe.unwrap();
        assert_eq!((p.iterations, p.t_min, p.t_max), (2, 0.7, 0.9));
        assert_eq!(row.tick_ns, 1.0);
    }

    #[test]
    fn read_latency_triggers_on_the_previous_completion() {
        let mut hw = HwTimes::new(GHZ, Trigger::Requester, false, None);
        for (i, ts) in [100, 2_100, 4_600].into_iter().enumerate() {
            hw.posted(i as u64);
            hw.completed(i as u64, ts).unwrap();
        }
        let row = hw.row(8);
        // Not halved; the trigger is the previous CQE, so both measures agree.
        assert_eq!((row.iteration.t_min, row.iteration.t_max), (2.0, 2.5));
        let p = row.post_to_cqe.unwrap();
        assert_eq!((p.iterations, p.t_min, p.t_max), (2, 2.0, 2.5));
    }

    #[test]
    fn memory_triggered_ping_pong_has_no_post_to_cqe_and_skips_unsignaled_gaps() {
        let mut hw = HwTimes::new(GHZ, Trigger::Memory, true, None);
        for i in 0..4 {
            hw.posted(i);
        }
        // WR 1 was unsignaled: 0 → 2 is no iteration, 2 → 3 is.
        hw.completed(0, 1_000).unwrap();
        hw.completed(2, 5_000).unwrap();
        hw.completed(3, 7_000).unwrap();
        let row = hw.row(2);
        assert_eq!((row.iteration.iterations, row.iteration.t_min), (1, 1.0));
        assert!(row.post_to_cqe.is_none());
    }

    #[test]
    fn a_clock_going_back_is_an_error() {
        let mut hw = HwTimes::new(GHZ, Trigger::Requester, false, None);
        hw.posted(0);
        hw.completed(0, 5_000).unwrap();
        hw.posted(1);
        let e = hw.completed(1, 4_000).unwrap_err().to_string();
        assert!(e.contains("went back"), "{e}");
    }
}
