//! What perftest reads from the host around a run: the CPU utilisation of `--cpu_util`
//! (`/proc/stat`, as `get_cpu_stats` reads it) and the counters of `-W` (sysfs port
//! counters on hardware, the model's own counts on the model).

use super::{Device, Error};
use crate::stats::Phase;

/// perftest's `CPU_UTILITY`.
const PROC_STAT: &str = "/proc/stat";

/// The user and idle times of the `cpu` line of `/proc/stat`, as perftest's
/// `get_cpu_stats` takes them: the first and the fourth number (user, then idle after
/// skipping nice and system).
pub(super) fn cpu_times(stat: &str) -> Option<(u64, u64)> {
    let mut words = stat.lines().next()?.split_whitespace();
    if words.next()? != "cpu" {
        return None;
    }
    let user = words.next()?.parse().ok()?;
    let idle = words.nth(2)?.parse().ok()?;
    Some((user, idle))
}

/// perftest's `calc_cpu_util`: the user time's share of user plus idle time between two
/// reads, in percent (0 when neither moved).
pub(super) fn cpu_util(first: (u64, u64), last: (u64, u64)) -> f64 {
    let user = last.0.saturating_sub(first.0) as f64;
    let idle = last.1.saturating_sub(first.1) as f64;
    if user + idle == 0.0 {
        0.0
    } else {
        user / (user + idle) * 100.0
    }
}

/// The first `cpu MHz` of `cpuinfo` (the text of `/proc/cpuinfo`): what perftest's
/// `get_cpu_mhz` reads to turn cycles into microseconds, here to turn microseconds into
/// cycles for `-C`.
pub fn cpu_mhz(cpuinfo: &str) -> Option<f64> {
    cpuinfo
        .lines()
        .find_map(|l| {
            l.strip_prefix("cpu MHz")?
                .split(':')
                .nth(1)?
                .trim()
                .parse()
                .ok()
        })
        .filter(|&mhz: &f64| mhz > 0.0)
}

/// `--cpu_util`: `/proc/stat` read when the sampling window opens and when it closes.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct CpuWindow {
    enabled: bool,
    first: Option<(u64, u64)>,
    last: Option<(u64, u64)>,
}

impl CpuWindow {
    /// A window that reads `/proc/stat` only when `enabled`.
    pub(super) fn new(enabled: bool) -> Self {
        CpuWindow {
            enabled,
            ..CpuWindow::default()
        }
    }

    fn read() -> Option<(u64, u64)> {
        cpu_times(&std::fs::read_to_string(PROC_STAT).ok()?)
    }

    /// The run is in `phase`: the first look inside the window and the first after it read
    /// `/proc/stat`.
    pub(super) fn look(&mut self, phase: Phase) {
        if !self.enabled || self.last.is_some() {
            return;
        }
        if phase == Phase::Sample && self.first.is_none() {
            self.first = Self::read();
        } else if phase >= Phase::Cooldown && self.first.is_some() {
            self.last = Self::read();
        }
    }

    /// The utilisation over the window, and a fresh window for the next size.
    pub(super) fn take(&mut self) -> Option<f64> {
        let util = self.first.zip(self.last).map(|(a, b)| cpu_util(a, b));
        *self = CpuWindow::new(self.enabled);
        util
    }
}

/// The counter names the model answers `-W` with: its [`Stats`] and its link counters.
///
/// [`Stats`]: mlx5_direct::backend::sim::Stats
pub const MODEL_COUNTERS: &[&str] = &[
    "packets",
    "retransmits",
    "packets_lost",
    "responses_lost",
    "rnr_naks",
    "seq_naks",
    "wqes",
    "cqes",
    "doorbells",
    "bf_writes",
    "events",
    "pcie/mmio_writes",
    "pcie/dma_reads",
    "pcie/completions",
    "pcie/dma_writes",
    "pcie/bytes_down",
    "pcie/bytes_up",
];

/// The model's value of counter `name` (one of [`MODEL_COUNTERS`]).
pub(super) fn model_counter(sim: &mlx5_direct::backend::sim::Sim, name: &str) -> Option<u64> {
    let s = sim.nic().stats();
    let p = sim.nic().pcie();
    Some(match name {
        "packets" => s.packets,
        "retransmits" => s.retransmits,
        "packets_lost" => s.packets_lost,
        "responses_lost" => s.responses_lost,
        "rnr_naks" => s.rnr_naks,
        "seq_naks" => s.seq_naks,
        "wqes" => s.wqes,
        "cqes" => s.cqes,
        "doorbells" => s.doorbells,
        "bf_writes" => s.bf_writes,
        "events" => s.events,
        "pcie/mmio_writes" => p.mmio_writes,
        "pcie/dma_reads" => p.dma_reads,
        "pcie/completions" => p.completions,
        "pcie/dma_writes" => p.dma_writes,
        "pcie/bytes_down" => p.bytes_down,
        "pcie/bytes_up" => p.bytes_up,
        _ => return None,
    })
}

/// `-W`: the named counters, read when the QPs are connected and after each size; each
/// read reports the change since the one before, as perftest's `counters_print`.
#[derive(Clone, Debug)]
pub(super) struct Counters {
    names: Vec<String>,
    last: Vec<u64>,
}

impl Counters {
    /// Reads `names` (perftest's comma-separated list) for the first time.
    pub(super) fn open<B: Device>(dev: &B, port: u8, names: &str) -> Result<Self, Error> {
        let names: Vec<String> = names.split(',').map(str::to_string).collect();
        let last = names
            .iter()
            .map(|n| dev.counter(port, n))
            .collect::<Result<_, _>>()?;
        Ok(Counters { names, last })
    }

    /// Each counter's change since the last read.
    pub(super) fn deltas<B: Device>(
        &mut self,
        dev: &B,
        port: u8,
    ) -> Result<Vec<(String, u64)>, Error> {
        let mut out = Vec::new();
        for (name, last) in self.names.iter().zip(&mut self.last) {
            let now = dev.counter(port, name)?;
            out.push((name.clone(), now.wrapping_sub(*last)));
            *last = now;
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_times_are_perftests_user_and_idle() {
        let stat = "cpu  4705 356 584 3699176 23060 0 277 0 0 0\ncpu0 1393 280 290 1837\n";
        assert_eq!(cpu_times(stat), Some((4705, 3699176)));
        assert_eq!(cpu_times("intr 1 2 3"), None);
        // A quarter of the user-plus-idle time was user time (system time is not counted,
        // as perftest does not count it).
        assert_eq!(cpu_util((100, 1000), (130, 1090)), 25.0);
        assert_eq!(cpu_util((5, 5), (5, 5)), 0.0);
    }

    #[test]
    fn cpu_mhz_is_the_first_cpu_mhz_line() {
        let info = "processor\t: 0\ncpu MHz\t\t: 2445.404\nprocessor\t: 1\ncpu MHz\t\t: 2600.000\n";
        assert_eq!(cpu_mhz(info), Some(2445.404));
        assert_eq!(cpu_mhz("processor\t: 0\nBogoMIPS\t: 50.00\n"), None);
    }
}
