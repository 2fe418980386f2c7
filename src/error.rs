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
                write!(f, "{count} gather/scatter entries exceed the maximum of {max}")
            }
            PostError::WqeTooLarge { ds, max_ds } => {
                write!(f, "WQE of {ds} units exceeds the device maximum of {max_ds}")
            }
            PostError::MessageTooLarge { len } => {
                write!(f, "message of {len} bytes exceeds the 2 GiB limit")
            }
            PostError::MisalignedAtomic { addr } => {
                write!(f, "atomic target {addr:#x} is not aligned to its operand size")
            }
            PostError::AtomicResultBuffer { len } => {
                write!(f, "an atomic needs exactly one local entry of {len} bytes")
            }
            PostError::NotReadyToSend => f.write_str("QP is not in RTS (or is in error)"),
            PostError::NotReadyToReceive => f.write_str("QP cannot receive in its state"),
        }
    }
}

impl std::error::Error for PostError {}
