//! Per-QP rate limits (packet pacing): the device's caps, a QP's limit and the pacer's
//! time source (docs/model.md, "Rate limits").

/// The packet pacing caps of a NIC ([`NicConfig::packet_pacing`], reported as
/// [`Caps::packet_pacing`]): what `ibv_query_device_ex` returns in
/// `packet_pacing_caps` and what the kernel checks a rate limit against.
///
/// [`NicConfig::packet_pacing`]: crate::NicConfig::packet_pacing
/// [`Caps::packet_pacing`]: crate::Caps::packet_pacing
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PacketPacing {
    /// `qp_rate_limit_min` in kbps (`packet_pacing_min_rate`). A ConnectX-5 reports 1.
    pub min_kbps: u32,
    /// `qp_rate_limit_max` in kbps (`packet_pacing_max_rate`); 0 is a device without
    /// packet pacing. 100 000 000 is what ConnectX-5 and ConnectX-6 Dx ports of 100 Gb/s
    /// report (the kernel logs "Rate limit: 127 rates are supported, range: 0Mbps to
    /// 97656Mbps", `max_rate >> 10`); a 25 Gb/s ConnectX-5 reports 25 000 000.
    pub max_kbps: u32,
    /// Distinct limits (rate, burst, typical size) the device holds at once
    /// (`packet_pacing_rate_table_size` less the entry reserved for "unlimited",
    /// `mlx5_init_rl_table`): the 127 of those logs. QPs with equal limits share one.
    pub rates: u16,
    /// `MLX5_IB_PP_SUPPORT_BURST` (the QoS caps `packet_pacing_burst_bound` and
    /// `packet_pacing_typical_size`): a limit may carry a burst size and a typical packet
    /// size. Which devices set them is not public; default true.
    pub burst: bool,
    /// UD QPs may be paced (the QoS cap `packet_pacing_req_ud`, which kernels report in
    /// `supported_qpts` since NVIDIA's 2026 packet-pacing series; before it mlx5 paced raw
    /// packet QPs only). Which devices set it is not public; default false.
    pub ud: bool,
    /// UC QPs may be paced (`packet_pacing_req_uc`, as `ud`). Default false.
    pub uc: bool,
    /// RC QPs may be paced: no mlx5 does (`__mlx5_ib_modify_qp` answers EOPNOTSUPP for a
    /// rate limit on any QP its caps do not name); a what-if, default false.
    pub rc: bool,
    /// Bytes the pacer counts per packet besides the payload. Whether ConnectX's pacer
    /// counts the packet's headers is not public: 0 (default) counts payload only, so a
    /// message of no payload (a zero-length SEND, a READ request) is never delayed.
    pub packet_overhead: u32,
}

impl Default for PacketPacing {
    fn default() -> Self {
        PacketPacing {
            min_kbps: 1,
            max_kbps: 100_000_000,
            rates: 127,
            burst: true,
            ud: false,
            uc: false,
            rc: false,
            packet_overhead: 0,
        }
    }
}

/// A QP's rate limit (`struct ibv_qp_rate_limit_attr` of `ibv_modify_qp_rate_limit`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RateLimit {
    /// The most the QP sends, in kbps; 0 removes the limit.
    pub kbps: u32,
    /// The most the QP may send at once after a pause, in bytes (0: none given).
    pub max_burst_sz: u32,
    /// The typical packet size, a hint for the device's pacer (0: none given).
    pub typical_pkt_sz: u16,
}

/// The time the pacer runs on ([`NicConfig::pacing_clock`]).
///
/// [`NicConfig::pacing_clock`]: crate::NicConfig::pacing_clock
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum PacingClock {
    /// The host's monotonic clock (default): a paced sender's rate over real time is its
    /// limit.
    #[default]
    Host,
    /// A clock that starts at 0 and moves only by
    /// [`Nic::advance_pacing_clock`](crate::Nic::advance_pacing_clock): deterministic, for
    /// tests and `explain`.
    Manual,
}
