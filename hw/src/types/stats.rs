//! The model's statistics and the driver bugs it counts.

/// Model statistics (driver-visible diagnostics).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Send doorbells accepted (8-byte, or a completed BlueFlame copy).
    pub doorbells: u64,
    /// 64-byte BlueFlame chunks received.
    pub bf_writes: u64,
    /// WQEs taken from BlueFlame data instead of the ring.
    pub bf_used: u64,
    /// BlueFlame WQEs whose bytes differed from the ring (a driver bug).
    pub bf_mismatch: u64,
    /// BlueFlame copies abandoned, out of order, oversized or not matching a posted WQE.
    pub bf_incomplete: u64,
    /// BlueFlame copies discarded by `Fault::DropBlueFlame`.
    pub bf_dropped: u64,
    /// BlueFlame copies evicted before use (`PcieConfig::bf_evict_every`): the WQE was read
    /// from the ring instead.
    pub bf_evicted: u64,
    /// MMIO writes to no register, of a bad size, or to an unknown UAR.
    pub bad_mmio: u64,
    /// Send doorbells ignored: naming another QP, a QP in RESET, or a doorbell record that
    /// announces no new work (stale) or more than the ring holds.
    pub bad_doorbells: u64,
    /// Send doorbells executed up to the doorbell record although the producer the MMIO
    /// names (`idx + ceil(ds/4)`, or `idx` when `ds` is 0) differs from it, e.g. a doorbell
    /// carrying the first WQE of a batch (a driver bug; what hardware does is unknown).
    pub ambiguous_doorbells: u64,
    /// Send doorbells rung while the QP was in INIT or RTR (a driver bug; the model fails
    /// the head WQE, what hardware does is unknown).
    pub doorbells_before_rts: u64,
    /// WQEs completed or failed by execution (not flushed ones; retransmissions not counted).
    pub wqes: u64,
    /// WQEs of deferred doorbells (`Fault::DeferExecution`) that differed, when first read
    /// from the ring (by the deferred run, or by a retry after it stalled), from the ring
    /// at their doorbell: the driver overwrote a slot before its completion (a driver bug;
    /// hardware may have fetched the WQE before or after the write).
    pub ring_overwritten: u64,
    /// Unfenced WQEs whose gather overlapped the result buffer of an earlier READ or atomic
    /// of the same run (a missing fence: real hardware may gather before the result lands).
    pub fence_hazards: u64,
    /// Completions written (a compressed block counts each completion in it).
    pub cqes: u64,
    /// Receive completions whose payload went into the CQE (scatter to CQE) instead of a
    /// DMA write to the receive's buffers.
    pub scatter_cqes: u64,
    /// Payload bytes those CQEs carried.
    pub scatter_cqe_bytes: u64,
    /// Compressed blocks written (basic: a title and its arrays; enhanced: the slots after
    /// one title).
    pub zip_blocks: u64,
    /// Completions written as mini-CQEs.
    pub zip_minis: u64,
    /// CQEs discarded because their CQ was in error.
    pub cqes_dropped: u64,
    /// Request packets put on the wire (including retransmissions).
    pub packets: u64,
    /// Messages retransmitted after a loss or RNR.
    pub retransmits: u64,
    /// Request packets of messages that did not get through (fault, unreachable or
    /// non-ready peer, PSN ahead of the expected one); a message with one lost packet counts all of them.
    pub packets_lost: u64,
    /// Positive responses to this NIC's requesters lost by `Fault::LoseResponses`.
    pub responses_lost: u64,
    /// RNR NAKs sent by responders of this NIC.
    pub rnr_naks: u64,
    /// PSN sequence error NAKs sent by responders of this NIC: a request ahead of the
    /// expected PSN, once until a request in sequence arrives.
    pub seq_naks: u64,
    /// CQ arm doorbells accepted.
    pub arms: u64,
    /// CQ arm doorbells ignored because their `sn` is that of the arm that produced the
    /// last event (a request already answered).
    pub stale_arms: u64,
    /// CQ arm doorbells whose word differs from the CQ doorbell record's arm word (a driver
    /// bug: `mlx5_arm_cq` writes the record first).
    pub arm_dbrec_mismatch: u64,
    /// Completion events raised.
    pub events: u64,
    /// Context-cache misses (`PcieConfig::context_cache`), each a DMA read of a context.
    pub context_misses: u64,
    /// Translation-cache misses (`PcieConfig::translation_cache`).
    pub translation_misses: u64,
    /// Page faults of on-demand keys the NIC raised (one page-fault event each, however
    /// many pages it brought in).
    pub odp_faults: u64,
    /// Pages of on-demand keys made present, by faults and by prefetch.
    pub odp_pages_mapped: u64,
    /// CPU writes into device memory accepted (`Nic::dm_write`).
    pub dm_writes: u64,
    /// Send data segments gathered from device memory (no DMA read).
    pub dm_gathers: u64,
    /// Bytes those segments named.
    pub dm_gather_bytes: u64,
    /// Data segments with `byte_count` 0, which mlx5 reads as 2^31 bytes (send gather and
    /// receive scatter).
    pub zero_length_segments: u64,
    /// READ or atomic requests sent by a QP whose `max_rd_atomic` exceeds the responder's
    /// `max_dest_rd_atomic` (a connection set-up bug: hardware that pipelines would NAK
    /// the excess; the model never has more than one outstanding).
    pub rd_atomic_depth_mismatch: u64,
    /// UD datagrams dropped at a QP whose Q_Key they did not carry (`qkey_viol_cntr`).
    pub qkey_violations: u64,
    /// UD datagrams dropped because no QP took them: unknown destination or QPN, a QP that
    /// is not UD or not in RTR/RTS.
    pub ud_unroutable: u64,
    /// UD datagrams dropped for want of a posted receive (UD has no RNR).
    pub ud_no_receive: u64,
    /// RoCE datagrams dropped because the destination GID is not on the VLAN they carry
    /// (or carry none where the GID is on one, or the reverse): counted at the NIC that
    /// has the GID.
    pub vlan_mismatches: u64,
    /// DC connections a DCI of this NIC set up (its first WQE to a destination, or the
    /// first after a WQE to another): one connect handshake on the wire each, no PCIe.
    pub dc_connects: u64,
    /// DC connections a DCI of this NIC tore down to reach another destination: one
    /// disconnect on the wire each, no PCIe.
    pub dc_disconnects: u64,
    /// DC requests a DCT of this NIC refused for a DC key that is not its own.
    pub dc_key_violations: u64,
    /// DC requests to a DCT number no ready DCT has (counted at the NIC the address names,
    /// or at the DCI's when it names no NIC).
    pub dc_unknown_dct: u64,
    /// WQEs of a DCI that failed with an error confined to their stream (the DCI stayed
    /// in RTS, the stream entered error: `DciStreams`).
    pub dci_stream_errors: u64,
    /// WQEs of a DCI flushed because their stream was in error.
    pub dci_stream_flushes: u64,
    /// UC messages a lost packet cut short: the responder got some of their packets and
    /// discarded the rest, up to the next first or only packet (the requester never
    /// learns).
    pub uc_incomplete: u64,
    /// UC messages dropped for want of a posted receive (UC has no RNR).
    pub uc_no_receive: u64,
    /// UC messages the responder refused without a NAK: WRITE without REMOTE_WRITE, a bad
    /// rkey or range, a receive too short (dropped, or completed in error on an SRQ).
    pub uc_errors: u64,
    /// The Ethernet port's counters (raw packet QPs).
    pub eth: crate::types::eth::EthStats,
    /// Multicast packets this NIC's port took from the wire: one per datagram whatever
    /// the number of its QPs attached (docs/model.md, "UD multicast").
    pub mcast_packets: u64,
    /// Multicast datagrams this NIC looped back from one of its QPs to its QPs attached
    /// to the group (no wire).
    pub mcast_loopback: u64,
    /// Multicast packets the port took that no QP received: none attached to the group,
    /// or none in RTR/RTS.
    pub mcast_dropped: u64,
    /// XRC requests a target QP of this NIC refused for an SRQ number that names no XRC
    /// SRQ (no SRQ, or a basic one).
    pub xrc_unknown_srq: u64,
    /// XRC requests a target QP of this NIC refused for an XRC SRQ of another XRC domain.
    pub xrc_domain_mismatch: u64,
    /// Times a paced QP's head WQE had to wait for its rate limit (docs/model.md, "Rate
    /// limits").
    pub paced_waits: u64,
}

/// Which way a driver bug the model counts shows on hardware.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BugClass {
    /// Hardware would reject or ignore the same input: the work does not happen there
    /// either.
    Rejected,
    /// No public source pins what hardware does; the model picks one outcome (see
    /// `docs/model.md`, "Driver bugs").
    Unknown,
}

/// A driver bug the model detects and counts in [`Stats`]. A correct driver moves none of
/// these counters; tests assert every one of them stays zero.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DriverBug {
    /// [`Stats::bad_mmio`].
    BadMmio,
    /// [`Stats::bad_doorbells`].
    BadDoorbell,
    /// [`Stats::ambiguous_doorbells`].
    AmbiguousDoorbell,
    /// [`Stats::doorbells_before_rts`].
    DoorbellBeforeRts,
    /// [`Stats::bf_mismatch`].
    BfMismatch,
    /// [`Stats::bf_incomplete`].
    BfIncomplete,
    /// [`Stats::ring_overwritten`].
    RingOverwritten,
    /// [`Stats::fence_hazards`].
    FenceHazard,
    /// [`Stats::stale_arms`].
    StaleArm,
    /// [`Stats::arm_dbrec_mismatch`].
    ArmDbrecMismatch,
    /// [`Stats::zero_length_segments`].
    ZeroLengthSegment,
    /// [`Stats::rd_atomic_depth_mismatch`].
    RdAtomicDepthMismatch,
}

impl DriverBug {
    /// Every driver bug the model counts.
    pub const ALL: [DriverBug; 12] = [
        DriverBug::BadMmio,
        DriverBug::BadDoorbell,
        DriverBug::AmbiguousDoorbell,
        DriverBug::DoorbellBeforeRts,
        DriverBug::BfMismatch,
        DriverBug::BfIncomplete,
        DriverBug::RingOverwritten,
        DriverBug::FenceHazard,
        DriverBug::StaleArm,
        DriverBug::ArmDbrecMismatch,
        DriverBug::ZeroLengthSegment,
        DriverBug::RdAtomicDepthMismatch,
    ];

    /// Whether hardware is known to reject it, or behaves in an unknown way.
    pub fn class(self) -> BugClass {
        match self {
            // A responder that pipelines NAKs the excess READs/atomics (rxe:
            // RESPST_ERR_TOO_MANY_RDMA_ATM_REQ).
            DriverBug::BadMmio | DriverBug::BadDoorbell | DriverBug::RdAtomicDepthMismatch => {
                BugClass::Rejected
            }
            _ => BugClass::Unknown,
        }
    }
}

impl Stats {
    /// The counter of `bug`.
    pub fn bug(&self, bug: DriverBug) -> u64 {
        match bug {
            DriverBug::BadMmio => self.bad_mmio,
            DriverBug::BadDoorbell => self.bad_doorbells,
            DriverBug::AmbiguousDoorbell => self.ambiguous_doorbells,
            DriverBug::DoorbellBeforeRts => self.doorbells_before_rts,
            DriverBug::BfMismatch => self.bf_mismatch,
            DriverBug::BfIncomplete => self.bf_incomplete,
            DriverBug::RingOverwritten => self.ring_overwritten,
            DriverBug::FenceHazard => self.fence_hazards,
            DriverBug::StaleArm => self.stale_arms,
            DriverBug::ArmDbrecMismatch => self.arm_dbrec_mismatch,
            DriverBug::ZeroLengthSegment => self.zero_length_segments,
            DriverBug::RdAtomicDepthMismatch => self.rd_atomic_depth_mismatch,
        }
    }

    /// The sum of the counters of every driver bug of `class`.
    pub fn bugs(&self, class: BugClass) -> u64 {
        DriverBug::ALL
            .into_iter()
            .filter(|b| b.class() == class)
            .map(|b| self.bug(b))
            .sum()
    }
}
