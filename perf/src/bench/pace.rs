//! perftest's software rate limiter (`run_iter_bw` with `SW_RATE_LIMIT`): the sender posts
//! in bursts of `--burst_size` messages, and a burst may start only once its deadline has
//! passed; each deadline is the previous one plus the gap `burst / rate`, so the long-run
//! rate is the limit whenever the sender can keep up, and a late burst does not move the
//! ones after it.

use std::time::{Duration, Instant};

/// The pacing state of one sender.
#[derive(Clone, Copy, Debug)]
pub(super) struct Pacer {
    gap: Duration,
    burst: u64,
    /// When the next burst may start; None before the first.
    deadline: Option<Instant>,
    /// Messages of the current burst posted so far; None between bursts.
    sent: Option<u64>,
}

impl Pacer {
    /// `pps` messages per second (at least 1) in bursts of `burst` (at least 1).
    pub(super) fn new(pps: u64, burst: u32) -> Pacer {
        let burst = u64::from(burst.max(1));
        Pacer {
            gap: Duration::from_secs_f64(burst as f64 / pps.max(1) as f64),
            burst,
            deadline: None,
            sent: None,
        }
    }

    /// True when a post may go at `now`: inside a burst, or a burst's deadline has passed
    /// (which starts that burst; the first starts at the first call).
    pub(super) fn allow(&mut self, now: Instant) -> bool {
        if self.sent.is_some() {
            return true;
        }
        let deadline = *self.deadline.get_or_insert(now);
        if deadline > now {
            return false;
        }
        self.deadline = Some(deadline + self.gap);
        self.sent = Some(0);
        true
    }

    /// `count` messages were posted in the current burst; a full burst ends it.
    pub(super) fn posted(&mut self, count: u64) {
        if let Some(sent) = &mut self.sent {
            *sent += count;
            if *sent >= self.burst {
                self.sent = None;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Posts one message whenever allowed, looking every `step` for `span` from `start`;
    /// returns the times of the posts as offsets from `start`.
    fn run(pacer: &mut Pacer, start: Instant, step: Duration, span: Duration) -> Vec<Duration> {
        let mut posts = Vec::new();
        let mut t = Duration::ZERO;
        while t < span {
            while pacer.allow(start + t) {
                posts.push(t);
                pacer.posted(1);
            }
            t += step;
        }
        posts
    }

    #[test]
    fn a_second_holds_the_rate_in_bursts() {
        // 1000 messages per second in bursts of 10: a burst every 10 ms.
        let start = Instant::now();
        let mut pacer = Pacer::new(1000, 10);
        let posts = run(
            &mut pacer,
            start,
            Duration::from_micros(100),
            Duration::from_secs(1),
        );
        assert_eq!(posts.len(), 1000);
        // Every interval of 10 ms holds exactly one burst, at its start.
        for (k, burst) in posts.chunks(10).enumerate() {
            let at = Duration::from_millis(10 * k as u64);
            assert!(burst.iter().all(|&t| t == at), "burst {k}: {burst:?}");
        }
    }

    #[test]
    fn a_late_sender_catches_up_without_exceeding_the_long_run_rate() {
        // 100 per second in bursts of 5 (deadlines every 50 ms), looked at only every
        // 120 ms: the deadlines do not move, so the bursts that fell due are sent together.
        // By the look at 840 ms the 17 bursts due by 800 ms went; the look at 960 ms sends
        // the three due at 850, 900 and 950 ms: 100 in the second, not more.
        let start = Instant::now();
        let mut pacer = Pacer::new(100, 5);
        let posts = run(
            &mut pacer,
            start,
            Duration::from_millis(120),
            Duration::from_secs(1),
        );
        let by = |ms| {
            posts
                .iter()
                .filter(|&&t| t <= Duration::from_millis(ms))
                .count()
        };
        assert_eq!(by(840), 85);
        assert_eq!(posts.len(), 100);
    }

    #[test]
    fn a_post_list_counts_whole() {
        // Bursts of 4 posted as lists of 3: the second list overshoots and ends the burst.
        let start = Instant::now();
        let mut pacer = Pacer::new(4, 4);
        assert!(pacer.allow(start));
        pacer.posted(3);
        assert!(pacer.allow(start));
        pacer.posted(3);
        assert!(!pacer.allow(start + Duration::from_millis(999)));
        assert!(pacer.allow(start + Duration::from_secs(1)));
    }
}
