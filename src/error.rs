//! Typed errors of the data path and the slow path.

use core::fmt;

/// Why a post was refused. Nothing was written to the queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PostError {
    /// The queue has fewer free slots than the WQE needs (completions must be polled, and
    /// at least one WQE per ring-full signaled, to free them).
    QueueFull {
        /// Slots (send: WQEBBs; receive: WQEs) the post needs.
        needed: u32,
        /// Slots free now.
        free: u32,
    },
    /// Inline data longer than the queue's maximum.
    InlineTooLarge {
        /// Requested length.
        len: usize,
        /// The queue's maximum.
        max: usize,
    },
    /// Inline data with an operation that cannot carry it (READ, atomics).
    InlineNotAllowed,
    /// More gather / scatter entries than the queue allows.
    TooManySges {
        /// Entries given.
        count: usize,
        /// The queue's maximum.
        max: usize,
    },
    /// The WQE would exceed the device's maximum WQE size.
    WqeTooLarge {
        /// Size needed, in 16-byte units.
        ds: usize,
        /// Maximum, in 16-byte units.
        max_ds: usize,
    },
    /// Total length over the 2 GiB message limit.
    MessageTooLarge {
        /// Total length given.
        len: u64,
    },
    /// An atomic's remote address is not aligned to its operand size.
    MisalignedAtomic {
        /// The remote address.
        addr: u64,
    },
    /// An atomic needs exactly one local entry of the operand size for its result.
    AtomicResultBuffer {
        /// The operand size.
        len: u32,
    },
    /// The QP is not ready to send (not in RTS, or in error after a failed WQE: reset and
    /// reconnect it).
    NotReadyToSend,
    /// The QP is not ready to receive (in RESET or in error).
    NotReadyToReceive,
    /// The operation, or the post entry, is not one of the QP's transport: UD takes SEND and
    /// SEND with immediate through `post_ud` only, RC and UC take no `post_ud`, UC takes no
    /// READ and no atomic.
    WrongTransport {
        /// The QP's transport.
        transport: crate::types::Transport,
    },
    /// A UD message longer than the path MTU (a datagram is one packet).
    OverMtu {
        /// Total length given.
        len: u64,
        /// The path MTU.
        mtu: u32,
    },
    /// A UD receive whose first scatter entry cannot hold the 40-byte GRH area.
    GrhAreaTooSmall {
        /// Length of the first scatter entry.
        len: u32,
    },
    /// A [`DciPool`](crate::DciPool) has no DCI for a new destination: every DCI has
    /// operations outstanding to another. Poll and hand the completions to the pool, then
    /// post again.
    NoFreeDci {
        /// DCIs in the pool.
        dcis: usize,
    },
    /// A DC operation on a stream the DCI does not have (its
    /// [`DciStreams::count`](crate::DciStreams::count); a plain DCI has stream 0 alone).
    NoSuchStream {
        /// The stream asked for.
        stream: u16,
        /// The DCI's streams.
        streams: u32,
    },
    /// A [`PreparedWr`](crate::PreparedWr) posted on another send queue than the one that
    /// prepared it (its QPN and checks are that queue's).
    ForeignPreparedWr,
    /// [`SendQueue::post_dm`](crate::SendQueue::post_dm) on a queue without device-memory
    /// slots ([`SendQueue::attach_dm`](crate::SendQueue::attach_dm)).
    NoDmSlots,
    /// Every device-memory slot of the queue holds the payload of a WQE that has not
    /// completed: poll completions (and signal at least one WQE per `slots`) to free them.
    DmSlotsFull {
        /// Slots of the queue.
        slots: u32,
    },
    /// A payload larger than a device-memory slot.
    DmPayloadTooLarge {
        /// Payload length.
        len: usize,
        /// Slot size.
        slot: usize,
    },
    /// An Ethernet frame the device would refuse (see [`EthRefusal`](crate::EthRefusal)).
    Ethernet(crate::eth::EthRefusal),
}

impl fmt::Display for PostError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PostError::QueueFull { needed, free } => {
                write!(f, "queue full: {needed} slots needed, {free} free")
            }
            PostError::InlineTooLarge { len, max } => {
                write!(f, "inline data of {len} bytes exceeds the maximum of {max}")
            }
            PostError::InlineNotAllowed => f.write_str("this operation cannot carry inline data"),
            PostError::TooManySges { count, max } => {
                write!(
                    f,
                    "{count} gather/scatter entries exceed the maximum of {max}"
                )
            }
            PostError::WqeTooLarge { ds, max_ds } => {
                write!(
                    f,
                    "WQE of {ds} units exceeds the device maximum of {max_ds}"
                )
            }
            PostError::MessageTooLarge { len } => {
                write!(f, "message of {len} bytes exceeds the 2 GiB limit")
            }
            PostError::MisalignedAtomic { addr } => {
                write!(
                    f,
                    "atomic target {addr:#x} is not aligned to its operand size"
                )
            }
            PostError::AtomicResultBuffer { len } => {
                write!(f, "an atomic needs exactly one local entry of {len} bytes")
            }
            PostError::NotReadyToSend => f.write_str("QP is not in RTS (or is in error)"),
            PostError::NotReadyToReceive => f.write_str("QP cannot receive in its state"),
            PostError::WrongTransport { transport } => {
                write!(f, "not an operation of a {transport:?} QP's post entry")
            }
            PostError::OverMtu { len, mtu } => {
                write!(f, "datagram of {len} bytes exceeds the path MTU of {mtu}")
            }
            PostError::GrhAreaTooSmall { len } => write!(
                f,
                "first scatter entry of {len} bytes cannot hold the 40-byte GRH area"
            ),
            PostError::NoFreeDci { dcis } => write!(
                f,
                "all {dcis} DCIs of the pool have operations outstanding to other destinations"
            ),
            PostError::NoSuchStream { stream, streams } => {
                write!(f, "DCI stream {stream} of a DCI with {streams} streams")
            }
            PostError::ForeignPreparedWr => {
                f.write_str("a prepared work request posted on another queue than its own")
            }
            PostError::NoDmSlots => f.write_str("the queue has no device-memory slots"),
            PostError::DmSlotsFull { slots } => write!(
                f,
                "all {slots} device-memory slots hold payloads of WQEs not yet completed"
            ),
            PostError::DmPayloadTooLarge { len, slot } => write!(
                f,
                "payload of {len} bytes exceeds the device-memory slot of {slot}"
            ),
            PostError::Ethernet(why) => write!(f, "Ethernet frame refused: {why}"),
        }
    }
}

impl std::error::Error for PostError {}

/// Why a slow-path operation (opening a device, creating or changing an object) failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Error {
    /// No RDMA device was found (or none with the requested name).
    NoDevice(String),
    /// The device exists but is not driven by mlx5 (`mlx5dv_is_supported` said no).
    NotMlx5(String),
    /// An argument is out of range for the device; the text says which.
    InvalidArgument(&'static str),
    /// The QP is in a state where this is not allowed.
    WrongState {
        /// What was attempted.
        operation: &'static str,
        /// The QP's state.
        state: crate::types::QpState,
    },
    /// The object is still in use by another (e.g. a CQ serving a QP).
    Busy(&'static str),
    /// The device lacks a feature the call asks for; the text names it.
    Unsupported(&'static str),
    /// Memory for queues or a region could not be allocated or mapped.
    OutOfMemory,
    /// Too few free pages in the hugetlbfs pool for [`Pages::Huge`](crate::Pages::Huge):
    /// the administrator reserves them (`sysctl vm.nr_hugepages=N`).
    NoHugePages {
        /// 2 MiB pages the allocation needs.
        needed: u64,
        /// Pages free in the pool now.
        free: u64,
        /// Pages reserved in the pool (`vm.nr_hugepages`).
        total: u64,
    },
    /// [`Pages::Transparent`](crate::Pages::Transparent) was asked for and transparent huge
    /// pages are `never` in `/sys/kernel/mm/transparent_hugepage/enabled`.
    TransparentHugePagesOff,
    /// Memory or a thread could not be bound to a NUMA node (no such node, `mbind` or
    /// `sched_setaffinity` refused, a node without CPUs for [`run_on_node`](crate::run_on_node)).
    NumaNode {
        /// The node asked for.
        node: u32,
        /// Why.
        reason: String,
    },
    /// A registration with [`Access::ON_DEMAND`](crate::Access::ON_DEMAND), or a prefetch,
    /// that the device or the region does not support: the text says which.
    OnDemandPaging(String),
    /// Registering would pin more memory than the locked-memory limit allows
    /// (`RLIMIT_MEMLOCK`, without `CAP_IPC_LOCK`): raise it with `ulimit -l`.
    MemlockTooLow {
        /// Bytes the process would have pinned with this registration.
        needed: u64,
        /// The limit in bytes.
        limit: u64,
    },
    /// An environment variable makes the library drive the device in a way this driver
    /// cannot follow; unset it.
    Environment {
        /// The variable.
        variable: &'static str,
        /// What it would change.
        reason: &'static str,
    },
    /// Device memory (MEMIC) was refused; the [`DmRefusal`] says why.
    DeviceMemory(DmRefusal),
    /// A multicast attach or detach was refused; the [`McastRefusal`] says why.
    Multicast(McastRefusal),
    /// The device or library refused: the operation and the reason (errno text or the
    /// model's error).
    Device {
        /// What was attempted.
        operation: &'static str,
        /// Why it failed.
        reason: String,
    },
    /// An rdma_cm step failed (address or route resolution, the connect / accept
    /// handshake): the event and what it means.
    RdmaCm(crate::cm::CmError),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::NoDevice(what) => write!(f, "no RDMA device: {what}"),
            Error::NotMlx5(name) => write!(f, "device {name} is not an mlx5 device"),
            Error::InvalidArgument(what) => write!(f, "invalid argument: {what}"),
            Error::WrongState { operation, state } => {
                write!(f, "cannot {operation} a QP in state {state:?}")
            }
            Error::Busy(what) => write!(f, "{what} is still in use"),
            Error::Unsupported(what) => write!(f, "the device does not support {what}"),
            Error::OutOfMemory => f.write_str("out of memory for queues or regions"),
            Error::NoHugePages {
                needed,
                free,
                total,
            } => write!(
                f,
                "{needed} huge pages of 2 MiB needed, {free} free of {total} reserved: \
                 reserve them with `sysctl vm.nr_hugepages={}` (as root)",
                total + needed.saturating_sub(*free)
            ),
            Error::TransparentHugePagesOff => f.write_str(
                "transparent huge pages are off: set \
                 /sys/kernel/mm/transparent_hugepage/enabled to madvise or always",
            ),
            Error::OnDemandPaging(why) => write!(f, "on-demand paging: {why}"),
            Error::NumaNode { node, reason } => {
                write!(f, "cannot bind to NUMA node {node}: {reason}")
            }
            Error::MemlockTooLow { needed, limit } => write!(
                f,
                "registration needs {needed} bytes of locked memory, the limit is {limit}: \
                 raise it with `ulimit -l {}` (KiB) or `ulimit -l unlimited`",
                needed.div_ceil(1024)
            ),
            Error::Environment { variable, reason } => {
                write!(f, "{variable} is set: {reason}; unset it")
            }
            Error::DeviceMemory(why) => write!(f, "device memory: {why}"),
            Error::Multicast(why) => write!(f, "multicast: {why}"),
            Error::Device { operation, reason } => write!(f, "{operation} failed: {reason}"),
            Error::RdmaCm(e) => write!(f, "rdma_cm: {e}"),
        }
    }
}

impl std::error::Error for Error {}

impl From<crate::cm::CmError> for Error {
    fn from(e: crate::cm::CmError) -> Self {
        Error::RdmaCm(e)
    }
}

/// Why device memory ([`crate::dm`]) was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DmRefusal {
    /// The device has none (`max_dm_size` 0).
    NoDeviceMemory,
    /// More than the device has.
    TooLarge {
        /// Bytes asked for.
        len: u64,
        /// `max_dm_size`.
        max: u64,
    },
    /// The device's device memory is taken (by this or other processes).
    Exhausted {
        /// Bytes asked for.
        len: u64,
    },
    /// An offset or size that is not a multiple of what device memory needs.
    Misaligned {
        /// The value given.
        value: u64,
        /// The multiple it must be of.
        align: u64,
    },
    /// A range outside the allocation or region.
    OutOfRange {
        /// Offset given.
        offset: u64,
        /// Length given.
        len: u64,
        /// Size of the allocation or region.
        size: u64,
    },
}

impl fmt::Display for DmRefusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DmRefusal::NoDeviceMemory => f.write_str("the device has none (max_dm_size 0)"),
            DmRefusal::TooLarge { len, max } => {
                write!(
                    f,
                    "{len} bytes asked for, the device has {max} (max_dm_size)"
                )
            }
            DmRefusal::Exhausted { len } => {
                write!(f, "no {len} bytes free (other allocations hold it)")
            }
            DmRefusal::Misaligned { value, align } => {
                write!(f, "{value} is not a multiple of {align}")
            }
            DmRefusal::OutOfRange { offset, len, size } => write!(
                f,
                "{len} bytes at {offset} are outside the {size} bytes there are"
            ),
        }
    }
}

/// Why [`Qp::attach_mcast`](crate::Qp::attach_mcast) or
/// [`Qp::detach_mcast`](crate::Qp::detach_mcast) was refused. The first three are the
/// kernel's EINVAL of `ib_attach_mcast`, checked by the driver before the device is asked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum McastRefusal {
    /// Only UD QPs join multicast groups.
    NotUd {
        /// The QP's transport.
        transport: crate::types::Transport,
    },
    /// The MGID is not a multicast address (`ff00::/8`, or IPv4-mapped in 224.0.0.0/4).
    NotMulticastGid,
    /// On an InfiniBand port, the MLID is not a multicast LID (0xC000..=0xFFFE).
    NotMulticastLid {
        /// The MLID given.
        mlid: u16,
    },
    /// The QP is attached to the group already: a second attach would be a no-op on the
    /// device (uverbs keeps one entry), and the first detach would end both.
    AlreadyAttached,
    /// The QP is not attached to the group (uverbs: EINVAL).
    NotAttached,
    /// The device's multicast table is full: as many groups as `max_mcast_grp`, or as
    /// many QPs in the group as `max_mcast_qp_attach`.
    TableFull,
}

impl fmt::Display for McastRefusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            McastRefusal::NotUd { transport } => {
                write!(f, "only UD QPs join multicast groups, not {transport:?}")
            }
            McastRefusal::NotMulticastGid => f.write_str("the MGID is not a multicast address"),
            McastRefusal::NotMulticastLid { mlid } => {
                write!(f, "MLID {mlid:#x} is not a multicast LID (0xc000..=0xfffe)")
            }
            McastRefusal::AlreadyAttached => f.write_str("the QP is attached to the group already"),
            McastRefusal::NotAttached => f.write_str("the QP is not attached to the group"),
            McastRefusal::TableFull => f.write_str(
                "the device's multicast table is full (max_mcast_grp or max_mcast_qp_attach)",
            ),
        }
    }
}
