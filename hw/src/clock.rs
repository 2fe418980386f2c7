//! The device's free-running clock, written into every CQE, and the clock-info page the
//! kernel keeps for converting it to nanoseconds without reading the device
//! (prm-facts-next §6.6).
//!
//! * The clock counts at `device_frequency_khz` ([`NicConfig::clock_khz`]; the kernel's
//!   `hca_core_clock`). A ConnectX-5 reports 156 250 kHz (`ibv_devinfo -v`, vendor part 4119,
//!   `hca_core_clock: 156250kHZ`, `completion timestamp_mask: 0x7fffffffffffffff`); later
//!   adapters report other rates (1 000 000 kHz is seen), hence the knob.
//! * The conversion follows the kernel's mlx5 `clock.c` (`mlx5_init_clock`): a cyclecounter
//!   with `shift = MLX5_CYCLES_SHIFT` (23 in the kernels that introduced the clock-info page;
//!   later kernels use other shifts: a reader must take `shift` from the page),
//!   `mult = clocksource_khz2mult(khz, shift)` and `mask = CLOCKSOURCE_MASK(41)`; the page
//!   (`mlx5_ib_clock_info`, read by rdma-core's `mlx5dv_get_clock_info`) holds the
//!   timecounter's `nsec`, `cycles` (`last_cycles`), `frac`, `mult`, `shift`, `mask`.
//!
//! [`NicConfig::clock_khz`]: crate::NicConfig::clock_khz

use std::time::{Instant, SystemTime, UNIX_EPOCH};

/// `MLX5_CYCLES_SHIFT` of the kernels that introduced the clock-info page.
const CYCLES_SHIFT: u32 = 23;
/// `CLOCKSOURCE_MASK(41)`: the cyclecounter's mask in the kernel's mlx5 clock.
const CYCLES_MASK: u64 = (1 << 41) - 1;
/// The timestamp mask the kernel reports (`completion_timestamp_mask`): 63 bits.
pub(crate) const TIMESTAMP_MASK: u64 = (1 << 63) - 1;

/// The clock-info page as `mlx5dv_get_clock_info` copies it (`struct mlx5dv_clock_info`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ClockInfo {
    /// Nanoseconds at `last_cycles`.
    pub nsec: u64,
    /// Device clock value the page was last updated at.
    pub last_cycles: u64,
    /// Fractional nanoseconds (in units of `2^-shift`) at `last_cycles`.
    pub frac: u64,
    /// Cycles-to-nanoseconds multiplier.
    pub mult: u32,
    /// Cycles-to-nanoseconds shift.
    pub shift: u32,
    /// Mask of the cycle counter the conversion works on.
    pub mask: u64,
}

/// The device clock of one NIC.
#[derive(Debug)]
pub(crate) struct Clock {
    khz: u64,
    step: u64,
    /// Host instant the clock read 0 at (host-driven clock).
    epoch: Instant,
    /// Wall-clock nanoseconds at `epoch`.
    epoch_real_ns: u64,
    /// Ticks of a stepped clock.
    ticks: u64,
}

impl Clock {
    /// A clock at `khz` (0: no clock); `step` 0 follows the host's monotonic clock, any other
    /// value makes the clock advance by `step` ticks at each read (deterministic).
    pub(crate) fn new(khz: u32, step: u64) -> Clock {
        // Pair the monotonic epoch with the wall clock: of a few reads of the wall clock
        // between two monotonic ones, keep the tightest, its monotonic time the midpoint (a
        // thread preempted between two lone reads would put every converted time early by
        // the preemption).
        let (epoch, epoch_real_ns) = (0..8)
            .map(|_| {
                let before = Instant::now();
                let real = SystemTime::now()
                    .duration_since(UNIX_EPOCH)
                    .map_or(0, |d| d.as_nanos() as u64);
                let gap = before.elapsed();
                (gap, before + gap / 2, real)
            })
            .min_by_key(|&(gap, ..)| gap)
            .map(|(_, epoch, real)| (epoch, real))
            .expect("eight pairings");
        Clock {
            khz: khz.into(),
            step,
            epoch,
            epoch_real_ns,
            ticks: 0,
        }
    }

    /// The clock now (what a CQE written now carries); 0 without a clock.
    pub(crate) fn read(&mut self) -> u64 {
        if self.khz == 0 {
            return 0;
        }
        if self.step != 0 {
            self.ticks = self.ticks.wrapping_add(self.step);
            return self.ticks & TIMESTAMP_MASK;
        }
        let ns = self.epoch.elapsed().as_nanos();
        (ns * u128::from(self.khz) / 1_000_000) as u64 & TIMESTAMP_MASK
    }

    /// The clock-info page now, or `None` without a clock. A stepped clock's page is fixed
    /// (0 ns at cycle 0), so conversions of its timestamps are exact hand computations; a
    /// host-driven clock's page pairs the current cycle count with the wall clock, as the
    /// kernel's timecounter starts from `ktime_get_real`.
    pub(crate) fn info(&mut self) -> Option<ClockInfo> {
        if self.khz == 0 {
            return None;
        }
        let (mult, shift) = khz2mult_shift(self.khz);
        let (nsec, last_cycles) = if self.step != 0 {
            (0, 0)
        } else {
            let elapsed = self.epoch.elapsed().as_nanos();
            let cycles = (elapsed * u128::from(self.khz) / 1_000_000) as u64 & TIMESTAMP_MASK;
            (self.epoch_real_ns + elapsed as u64, cycles)
        };
        Some(ClockInfo {
            nsec,
            last_cycles,
            frac: 0,
            mult,
            shift,
            mask: CYCLES_MASK,
        })
    }
}

/// `clocksource_khz2mult(khz, shift)`, `((NSEC_PER_MSEC << shift) + khz / 2) / khz`, with
/// `shift` = [`CYCLES_SHIFT`] where the multiplier fits its 32-bit field, else the largest
/// shift below it where it does (clocks slower than about 1 954 kHz; the kernel's own
/// `clocks_calc_mult_shift` lowers the shift the same way). A reader takes both from the page.
fn khz2mult_shift(khz: u64) -> (u32, u32) {
    (0..=CYCLES_SHIFT)
        .rev()
        .find_map(|shift| {
            let mult = ((1_000_000u64 << shift) + khz / 2) / khz;
            u32::try_from(mult).ok().map(|m| (m, shift))
        })
        .expect("a 32-bit multiplier at shift 0 for any clock of at least 1 kHz")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mult_is_the_kernels_khz2mult() {
        // 156 250 kHz: (10^6 << 23 + 78 125) / 156 250 = 53 687 091 (6.4 ns per tick).
        let info = Clock::new(156_250, 1).info().unwrap();
        assert_eq!(
            (info.mult, info.shift, info.mask),
            (53_687_091, 23, (1 << 41) - 1)
        );
        assert_eq!(Clock::new(0, 1).info(), None);
    }

    #[test]
    fn a_slow_clock_lowers_the_shift_instead_of_overflowing_the_multiplier() {
        // 1 000 kHz: at shift 23 the multiplier would be 1 000 << 23, past 32 bits; at 22
        // it is 1 000 << 22 = 4 194 304 000, which fits: exactly 1 000 ns per tick.
        let info = Clock::new(1_000, 1).info().unwrap();
        assert_eq!((info.mult, info.shift), (4_194_304_000, 22));
        assert_eq!(u64::from(info.mult) >> info.shift, 1_000);
        // The slowest clock the knob can name still converts: 1 kHz, 10^6 ns per tick.
        let info = Clock::new(1, 1).info().unwrap();
        assert_eq!(u64::from(info.mult) >> info.shift, 1_000_000);
    }

    #[test]
    fn a_stepped_clock_advances_by_its_step() {
        let mut c = Clock::new(156_250, 7);
        assert_eq!((c.read(), c.read(), c.read()), (7, 14, 21));
        assert_eq!(Clock::new(0, 7).read(), 0);
    }
}
