//! The device clock: converting CQE timestamps to nanoseconds without touching the device.
//!
//! Every successful CQE carries the device's free-running clock at bytes 48..56
//! ([`Completion::timestamp`](crate::Completion::timestamp)). The kernel keeps a page of host
//! memory with the clock's current calibration (`mlx5dv_get_clock_info`); converting with
//! it ([`ClockInfo::to_ns`], rdma-core's `mlx5dv_ts_to_ns`) costs no PCIe transaction,
//! where reading the clock itself (`ibv_query_rt_values_ex`) costs three non-posted MMIO
//! reads. Take a [`ClockInfo`] with [`Context::clock_info`](crate::Context::clock_info)
//! and take it again at least every [`ClockInfo::update_period_ns`]: the kernel refreshes
//! the page that often (lib/clock.c `mlx5_init_overflow_period`), and a copy converts right
//! only while `delta · mult` fits 64 bits, about twice that period past `last_cycles`
//! (current kernels choose the shift per frequency, `mlx5_ptp_shift_constant`: 17.2 s
//! between refreshes at 156.25 MHz, 4.3 s at 1 GHz). [`ClockInfo::to_ns_checked`] says
//! when a copy is too old for a timestamp. rdma-core reports the kernel's period as
//! `max_clock_info_update_nsec`, but the page carries it in jiffies (the kernel divides the
//! nanoseconds by `NSEC_PER_SEC / HZ` before storing it), so this crate computes it from
//! the page instead. Facts: `shared/docs/prm-facts-next.md` §6.6.

/// `struct mlx5dv_clock_info` (`mlx5dv.h`), field for field: the calibration that maps the
/// device clock to nanoseconds.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct ClockInfo {
    /// Nanoseconds at `last_cycles` (the kernel's timecounter, started from the wall clock).
    pub nsec: u64,
    /// Device clock value of the last update.
    pub last_cycles: u64,
    /// Fractional nanoseconds at `last_cycles`, in units of `2^-shift`.
    pub frac: u64,
    /// Cycles-to-nanoseconds multiplier.
    pub mult: u32,
    /// Cycles-to-nanoseconds shift.
    pub shift: u32,
    /// Mask of the cycle counter.
    pub mask: u64,
}

impl ClockInfo {
    /// Nanoseconds of device timestamp `ts`: rdma-core's `mlx5dv_ts_to_ns`, step for step
    /// (a timestamp more than half the mask behind `last_cycles` is taken as older than
    /// it). Wrapping arithmetic, as in C's `uint64_t`.
    pub fn to_ns(&self, ts: u64) -> u64 {
        let delta = ts.wrapping_sub(self.last_cycles) & self.mask;
        let mult = u64::from(self.mult);
        if delta > self.mask / 2 {
            let back = self.last_cycles.wrapping_sub(ts) & self.mask;
            self.nsec
                .wrapping_sub(back.wrapping_mul(mult).wrapping_sub(self.frac) >> self.shift)
        } else {
            self.nsec
                .wrapping_add(delta.wrapping_mul(mult).wrapping_add(self.frac) >> self.shift)
        }
    }

    /// [`to_ns`](Self::to_ns), or `None` when this copy is too old (or too new) for `ts`:
    /// the conversion's product of the cycle distance and `mult` (plus `frac`) would pass
    /// 64 bits and wrap, as it does in `mlx5dv_ts_to_ns`. Take the page again then.
    pub fn to_ns_checked(&self, ts: u64) -> Option<u64> {
        let delta = ts.wrapping_sub(self.last_cycles) & self.mask;
        let distance = match delta > self.mask / 2 {
            true => self.last_cycles.wrapping_sub(ts) & self.mask,
            false => delta,
        };
        distance
            .checked_mul(u64::from(self.mult))?
            .checked_add(self.frac)?;
        Some(self.to_ns(ts))
    }

    /// Nanoseconds between the kernel's refreshes of the page (lib/clock.c
    /// `mlx5_init_overflow_period`): `min((2^63 - 1) / mult, mask / 3)` cycles, converted
    /// with the page's `mult` and `shift`. A copy converts right for about twice that past
    /// `last_cycles`. 0 for a page without a multiplier.
    pub fn update_period_ns(&self) -> u64 {
        let mult = u64::from(self.mult);
        if mult == 0 {
            return 0;
        }
        let cycles = ((u64::MAX >> 1) / mult).min(self.mask / 3);
        ((u128::from(cycles) * u128::from(mult)) >> self.shift) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A ConnectX-5's calibration (156 250 kHz, shift 23: 6.4 ns per tick).
    const CX5: ClockInfo = ClockInfo {
        nsec: 1_000_000_000,
        last_cycles: 1_000,
        frac: 0,
        mult: 53_687_091,
        shift: 23,
        mask: (1 << 41) - 1,
    };

    #[test]
    fn conversion_forward_and_back_by_hand() {
        // 1 000 ticks after last_cycles: 1000 · 53 687 091 >> 23 = 6 399 (6.4 µs, rounded
        // down by mult's rounding).
        assert_eq!(CX5.to_ns(2_000), 1_000_000_000 + 6_399);
        // 500 ticks before: 500 · 53 687 091 >> 23 = 3 199.
        assert_eq!(CX5.to_ns(500), 1_000_000_000 - 3_199);
        assert_eq!(CX5.to_ns(1_000), 1_000_000_000);
        // Bits above the mask do not count.
        assert_eq!(CX5.to_ns(2_000 | 1 << 41), 1_000_000_000 + 6_399);
    }

    /// Current kernels' page at 156.25 MHz (`mlx5_ptp_shift_constant`: shift 29): the
    /// kernel refreshes it every 2 684 354 559 cycles (17.18 s); a copy converts right up to
    /// (2^64 - 1) / mult = 5 368 709 119 cycles (34.4 s) past `last_cycles`, and past that
    /// `mlx5dv_ts_to_ns` wraps: `to_ns_checked` refuses, a newer copy converts.
    #[test]
    fn a_copy_older_than_twice_the_refresh_period_is_refused() {
        let page = ClockInfo {
            mult: 3_435_973_837,
            shift: 29,
            ..CX5
        };
        assert_eq!(page.update_period_ns(), 17_179_869_178);
        let last_good = page.last_cycles + u64::MAX / u64::from(page.mult);
        let stale = last_good + 1;
        assert_eq!(page.to_ns_checked(last_good), Some(page.to_ns(last_good)));
        assert_eq!(page.to_ns_checked(stale), None);
        // The exact time of `stale` (6.4 ns a tick) against what the old copy makes of it.
        let exact = page.nsec + (stale - page.last_cycles) * 32 / 5;
        assert_ne!(page.to_ns(stale), exact, "the product wrapped");
        let newer = ClockInfo {
            nsec: page.nsec + (2_684_354_559 * 32) / 5,
            last_cycles: page.last_cycles + 2_684_354_559,
            ..page
        };
        let converted = newer.to_ns_checked(stale).unwrap();
        assert!(converted.abs_diff(exact) <= 1, "{converted} vs {exact}");
        // Backwards the same way: a timestamp that long before the page.
        let reach = u64::MAX / u64::from(page.mult);
        let later = ClockInfo {
            last_cycles: 1 << 40,
            ..page
        };
        assert!(later.to_ns_checked(later.last_cycles - reach).is_some());
        assert_eq!(later.to_ns_checked(later.last_cycles - reach - 1), None);
        // The old shift's page (23) keeps its copies right for 37 minutes at this rate.
        assert_eq!(CX5.to_ns_checked(stale), Some(CX5.to_ns(stale)));
        assert_eq!(CX5.update_period_ns(), 1_099_511_627_775);
    }

    #[test]
    fn frac_is_added_forward_and_taken_back_behind() {
        let info = ClockInfo {
            frac: 1 << 22,
            ..CX5
        };
        // (1000 · mult + 2^22) >> 23 = 53 691 285 304 >> 23 = 6 400.
        assert_eq!(info.to_ns(2_000), 1_000_000_000 + 6_400);
        // (500 · mult − 2^22) >> 23 = 3 199.
        assert_eq!(info.to_ns(500), 1_000_000_000 - 3_199);
    }
}
