//! The device's free-running clock, written into every CQE, and the clock-info page the
//! kernel keeps for converting it to nanoseconds without reading the device
//! (prm-facts-next §6.6).
//!
//! * The clock counts at `device_frequency_khz` ([`NicConfig::clock_khz`]; the kernel's
//!   `hca_core_clock`). A ConnectX-5 reports 156 250 kHz (`ibv_devinfo -v`, vendor part 4119,
//!   `hca_core_clock: 156250kHZ`, `completion timestamp_mask: 0x7fffffffffffffff`); later
//!   adapters report other rates (1 000 000 kHz is seen), hence the knob.
//! * The conversion follows the kernel's mlx5 `lib/clock.c` (`mlx5_timecounter_init`): a
//!   cyclecounter with `mult = clocksource_khz2mult(khz, shift)` and
//!   `mask = CLOCKSOURCE_MASK(41)`, `shift` by [`ClockShift`]: current kernels take it per
//!   frequency (`mlx5_ptp_shift_constant`, upstream 84a58e60038f "net/mlx5: Dynamic
//!   cyclecounter shift calculation for PTP free running clock", Linux 6.6 and stable 6.5),
//!   older ones a constant `MLX5_CYCLES_SHIFT` (23 where the clock-info page appeared, 31 from
//!   6a4010927562). The page (`mlx5_ib_clock_info`, read by rdma-core's
//!   `mlx5dv_get_clock_info`) holds the timecounter's `nsec`, `cycles` (`last_cycles`),
//!   `frac`, `mult`, `shift`, `mask`.
//! * The kernel refreshes the page from its overflow watchdog (`mlx5_init_overflow_period`):
//!   every `min((2^63 - 1) / mult, mask / 3)` cycles, so that `delta · mult` of a copy at
//!   most twice that old still fits 64 bits. The model's page is the one of the last such
//!   update: `last_cycles` the clock rounded down to a multiple of that period, `nsec` the
//!   exact time there, `frac` 0 (the kernel's timecounter also carries `mult`'s rounding).
//!
//! [`NicConfig::clock_khz`]: crate::NicConfig::clock_khz

use std::time::{Instant, SystemTime, UNIX_EPOCH};

/// How the kernel chose the clock-info page's `shift` ([`NicConfig::clock_shift`]).
///
/// [`NicConfig::clock_shift`]: crate::NicConfig::clock_shift
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ClockShift {
    /// Current kernels (lib/clock.c `mlx5_ptp_shift_constant`): the smaller of
    /// `ilog2(khz) + 16` and `ilog2(4294 · khz)`, which keeps the multiplier within 32 bits
    /// (29 at 156 250 kHz, 31 at 1 000 000 kHz).
    #[default]
    PerFrequency,
    /// A constant `MLX5_CYCLES_SHIFT` as older kernels had (23 where the clock-info page
    /// appeared, 31 from 6a4010927562), lowered where the multiplier would not fit its 32 bits
    /// (the kernel truncated it there).
    Fixed(u32),
}
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
    shift: ClockShift,
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
    pub(crate) fn new(khz: u32, shift: ClockShift, step: u64) -> Clock {
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
            shift,
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

    /// The clock-info page now, or `None` without a clock: the one of the kernel's last
    /// refresh, at the last multiple of [`update_period`] cycles. A stepped clock's page
    /// starts at 0 ns at cycle 0, so conversions of its timestamps are exact hand
    /// computations; a host-driven clock's pairs the cycle count with the wall clock, as the
    /// kernel's timecounter starts from `ktime_get_real`.
    pub(crate) fn info(&mut self) -> Option<ClockInfo> {
        if self.khz == 0 {
            return None;
        }
        let (mult, shift) = mult_shift(self.khz, self.shift);
        let (base_ns, cycles) = if self.step != 0 {
            (0, self.ticks & TIMESTAMP_MASK)
        } else {
            let elapsed = self.epoch.elapsed().as_nanos();
            let cycles = (elapsed * u128::from(self.khz) / 1_000_000) as u64 & TIMESTAMP_MASK;
            (self.epoch_real_ns, cycles)
        };
        let period = update_period(mult);
        let last_cycles = cycles - cycles % period;
        Some(ClockInfo {
            nsec: base_ns + (u128::from(last_cycles) * 1_000_000 / u128::from(self.khz)) as u64,
            last_cycles,
            frac: 0,
            mult,
            shift,
            mask: CYCLES_MASK,
        })
    }
}

/// Cycles between the kernel's refreshes of the page (`mlx5_init_overflow_period`): the
/// most cycles whose product with `mult` stays below 2^63, at most a third of the mask.
pub(crate) fn update_period(mult: u32) -> u64 {
    ((u64::MAX >> 1) / u64::from(mult)).min(CYCLES_MASK / 3)
}

/// The page's `(mult, shift)` at `khz`: `clocksource_khz2mult(khz, shift)`,
/// `((NSEC_PER_MSEC << shift) + khz / 2) / khz`, with the shift `rule` gives.
fn mult_shift(khz: u64, rule: ClockShift) -> (u32, u32) {
    let top = match rule {
        // ilog2(U32_MAX / NSEC_PER_MSEC · khz) bounds the multiplier to 32 bits.
        ClockShift::PerFrequency => (khz.ilog2() + 16).min((4294 * khz).ilog2()),
        ClockShift::Fixed(shift) => shift.min(63 - 20),
    };
    (0..=top)
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

    const OLD: ClockShift = ClockShift::Fixed(23);

    #[test]
    fn mult_is_the_kernels_khz2mult() {
        // 156 250 kHz at the old shift 23: (10^6 << 23 + 78 125) / 156 250 = 53 687 091
        // (6.4 ns per tick).
        let info = Clock::new(156_250, OLD, 1).info().unwrap();
        assert_eq!(
            (info.mult, info.shift, info.mask),
            (53_687_091, 23, (1 << 41) - 1)
        );
        assert_eq!(Clock::new(0, OLD, 1).info(), None);
    }

    /// `mlx5_ptp_shift_constant`: min(ilog2(khz) + 16, ilog2(4294 · khz)). 156 250 kHz:
    /// min(33, 29) = 29, mult (10^6 << 29) / 156 250 = 3 435 973 837 (exactly 6.4 ns a tick
    /// to within 2^-29); 1 000 000 kHz: min(35, 31) = 31, mult 2^31.
    #[test]
    fn current_kernels_take_the_shift_per_frequency() {
        let at = |khz| {
            let info = Clock::new(khz, ClockShift::default(), 1).info().unwrap();
            (info.mult, info.shift)
        };
        assert_eq!(at(156_250), (3_435_973_837, 29));
        assert_eq!(at(1_000_000), (1 << 31, 31));
        assert_eq!(at(1), (4_096_000_000, 12));
        // The kernel's refresh period: (2^63 - 1) / mult cycles, 2 684 354 559 at 156 250
        // kHz (17.2 s) and 2^32 - 1 at 1 GHz (4.3 s); 171 798 692 480 with the old shift's
        // small mult (18.3 min); at most the 41-bit mask / 3.
        assert_eq!(update_period(3_435_973_837), 2_684_354_559);
        assert_eq!(update_period(1 << 31), (1 << 32) - 1);
        assert_eq!(update_period(53_687_091), 171_798_692_480);
        assert_eq!(update_period(1), ((1 << 41) - 1) / 3);
    }

    #[test]
    fn a_slow_clock_lowers_the_shift_instead_of_overflowing_the_multiplier() {
        // 1 000 kHz: at shift 23 the multiplier would be 1 000 << 23, past 32 bits; at 22
        // it is 1 000 << 22 = 4 194 304 000, which fits: exactly 1 000 ns per tick.
        let info = Clock::new(1_000, OLD, 1).info().unwrap();
        assert_eq!((info.mult, info.shift), (4_194_304_000, 22));
        assert_eq!(u64::from(info.mult) >> info.shift, 1_000);
        // The slowest clock the knob can name still converts: 1 kHz, 10^6 ns per tick.
        let info = Clock::new(1, OLD, 1).info().unwrap();
        assert_eq!(u64::from(info.mult) >> info.shift, 1_000_000);
    }

    #[test]
    fn a_stepped_clock_advances_by_its_step() {
        let mut c = Clock::new(156_250, OLD, 7);
        assert_eq!((c.read(), c.read(), c.read()), (7, 14, 21));
        assert_eq!(Clock::new(0, OLD, 7).read(), 0);
    }

    /// The page is the last refresh's: a stepped clock past one period shows the period's
    /// start, at its exact time (6.4 ns a tick, rounded down).
    #[test]
    fn the_page_is_the_last_refresh() {
        let period = 2_684_354_559;
        let mut c = Clock::new(156_250, ClockShift::default(), period + 5);
        assert_eq!(c.info().unwrap().last_cycles, 0);
        c.read();
        let info = c.info().unwrap();
        assert_eq!((info.last_cycles, info.nsec), (period, period * 32 / 5));
    }
}
