//! Packet pacing: a QP's rate limit as a token bucket in continuous time, and the pacer's
//! clock (docs/model.md, "Rate limits").
//!
//! The bucket is kept as its theoretical refill time (GCRA): `tat` is when the bucket
//! would be full again, so it holds `burst - rate * (tat - t)` bytes at time `t`. A WQE may
//! leave once the bucket is not in deficit (`t >= tat - burst / rate`), and its bytes move
//! `tat` on; a message larger than the bucket still leaves (the bucket goes into deficit),
//! so any message size is carried at the limit. Departure times are those of a pacer
//! running in real time: the model executes a WQE at its first run at or after its
//! departure time (a doorbell or `Nic::progress`), and the next WQE's departure follows
//! from the scheduled one, not from when the model ran, so a late run costs no rate.

use crate::types::{PacingClock, RateLimit};
use std::time::Instant;

/// Picoseconds a bit takes at 1 kbps.
const PS_PER_BIT_AT_1KBPS: u128 = 1_000_000_000;

/// The time of `bytes` at `kbps`, in picoseconds (saturating).
pub(crate) fn duration_ps(bytes: u64, kbps: u32) -> u64 {
    let ps = u128::from(bytes) * 8 * PS_PER_BIT_AT_1KBPS / u128::from(kbps.max(1));
    u64::try_from(ps).unwrap_or(u64::MAX)
}

/// A QP's pacer.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Pacer {
    pub(crate) limit: RateLimit,
    /// The burst as time at the rate (ps): how far `tat` may be ahead of a departure.
    tolerance: u64,
    /// When the bucket is full again (ps).
    pub(crate) tat: u64,
    /// The head WQE waits: the time (ps) it became ready to leave.
    pub(crate) wait: Option<u64>,
    /// The departure time (ps) of the WQE executing now, which its bytes are charged from.
    pub(crate) depart: u64,
}

impl Pacer {
    /// A pacer for `limit` (rate not 0), its bucket full.
    pub(crate) fn new(limit: RateLimit) -> Pacer {
        Pacer {
            limit,
            tolerance: duration_ps(limit.max_burst_sz.into(), limit.kbps),
            tat: 0,
            wait: None,
            depart: 0,
        }
    }

    /// The same bucket under a new limit: what was charged stays charged.
    pub(crate) fn relimit(self, limit: RateLimit) -> Pacer {
        Pacer {
            limit,
            tolerance: duration_ps(limit.max_burst_sz.into(), limit.kbps),
            ..self
        }
    }

    /// When a WQE ready at `ready` may leave.
    pub(crate) fn departure(&self, ready: u64) -> u64 {
        ready.max(self.tat.saturating_sub(self.tolerance))
    }
}

/// The pacer's clock of a NIC (`NicConfig::pacing_clock`).
pub(crate) struct PaceClock {
    epoch: Instant,
    /// `PacingClock::Manual`: the time (ps); `None`: the host's monotonic clock.
    pub(crate) manual: Option<u64>,
}

impl PaceClock {
    pub(crate) fn new(kind: PacingClock) -> PaceClock {
        PaceClock {
            epoch: Instant::now(),
            manual: (kind == PacingClock::Manual).then_some(0),
        }
    }

    /// The time now (ps).
    pub(crate) fn now(&self) -> u64 {
        match self.manual {
            Some(ps) => ps,
            None => u64::try_from(self.epoch.elapsed().as_nanos() * 1000).unwrap_or(u64::MAX),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_byte_at_8_kbps_takes_a_millisecond() {
        assert_eq!(duration_ps(1, 8), 1_000_000_000);
        // 64 bytes at 100 Gb/s: 5.12 ns, kept to the picosecond.
        assert_eq!(duration_ps(64, 100_000_000), 5_120);
    }

    #[test]
    fn the_burst_and_one_message_leave_at_once() {
        let mut p = Pacer::new(RateLimit {
            kbps: 8,
            max_burst_sz: 3,
            typical_pkt_sz: 0,
        });
        // The 3 bytes the bucket holds and the message that empties it leave at time 0,
        // then one a millisecond.
        let mut departs = Vec::new();
        for _ in 0..6 {
            let d = p.departure(0);
            departs.push(d);
            p.tat = p.tat.max(d) + duration_ps(1, 8);
        }
        let ms = 1_000_000_000;
        assert_eq!(departs, [0, 0, 0, 0, ms, 2 * ms]);
    }
}
