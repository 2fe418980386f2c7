//! The device clock: converting CQE timestamps to nanoseconds without touching the device.
//!
//! Every successful CQE carries the device's free-running clock at bytes 48..56
//! ([`Completion::timestamp`](crate::Completion::timestamp)). The kernel keeps a page of host
//! memory with the clock's current calibration (`mlx5dv_get_clock_info`); converting with
//! it ([`ClockInfo::to_ns`], rdma-core's `mlx5dv_ts_to_ns`) costs no PCIe transaction,
//! where reading the clock itself (`ibv_query_rt_values_ex`) costs three non-posted MMIO
//! reads. Take a [`ClockInfo`] with [`Context::clock_info`](crate::Context::clock_info)
//! and take it again now and then: the kernel refreshes the page at least every
//! `max_clock_info_update_nsec` (seconds), and a conversion is right for timestamps within
//! half the counter's range of `last_cycles`. Facts: `shared/docs/prm-facts-next.md` §6.6.

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
