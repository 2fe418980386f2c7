//! The model backend: queues in process memory, handed to the `mlx5-hw` device model the
//! way the kernel hands them to firmware; MMIO delivered to the model as events.
//!
//! Everything after creation is the same data-path code as on hardware: the model reads the
//! very ring bytes and doorbell records the driver wrote and writes the CQEs it parses.
//!
//! Files: this one holds [`Sim`] (opening, fabrics, the model's knobs) and the conversions
//! every call uses; `handles` the objects a control object keeps ([`SimPd`], [`SimQp`], ...);
//! `backend` the [`Backend`](crate::backend::Backend) calls themselves.

use std::sync::atomic::AtomicU32;
use std::sync::Arc;

use crate::cq::CqDesc;
use crate::error::Error;
use crate::event::AsyncEvent;
use crate::mem::{MemOptions, Memory};
use crate::prm::CQE_SIZE;
use crate::types::Access;

mod backend;
mod eth;
mod handles;
mod xrc;

pub use handles::{SimChannel, SimCq, SimDm, SimMr, SimPd, SimQp, SimSrq, SimUar, SimXrcd};

/// The model crate itself, for the rest of [`Nic`]'s interface (its parameter, result and
/// trace types: `CqParams`, `QpTransition`, `HwError`, `Tlp`, ...): a user crate reaches
/// everything in a public signature of this module without depending on `mlx5-hw`.
pub use mlx5_hw as hw;
// What a test or a tool names most: the fabric and its NICs, their configuration (with the
// type of every `NicConfig` field), statistics, fault injection, PCIe counters and completion
// events. A plain comment, so that each item's page carries its own documentation.
pub use mlx5_hw::{
    BugClass, ClockShift, Completions, ContextCache, DcRefusal, Dir, DriverBug, Event, Fabric,
    Fault, Nic, NicConfig, PcieConfig, PcieCounters, Stats, Tlp, TlpKind, TranslationCache,
    ZipConfig, ZipPolicy,
};
pub use mlx5_hw::{
    CqePkey, DciStreamConfig, EthConfig, GidAddr, LinkLayer, McastConfig, PacingClock,
    PacketPacing, RoceGid, XrcConfig,
};

/// A model NIC handle that prints as its first port's LID.
#[derive(Clone)]
pub(super) struct NicHandle(hw::Nic);

impl core::fmt::Debug for NicHandle {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let lid = self.0.port(1).map(|p| p.lid).unwrap_or(0);
        write!(f, "Nic(lid {lid})")
    }
}

impl core::ops::Deref for NicHandle {
    type Target = hw::Nic;
    fn deref(&self) -> &hw::Nic {
        &self.0
    }
}

/// The device model as a backend: one NIC of an in-process fabric.
#[derive(Debug)]
pub struct Sim {
    nic: NicHandle,
    /// The port QPs use unless told otherwise ([`Sim::on_port`]).
    port: u8,
    /// Where rings and doorbell records are allocated ([`Sim::with_ring_memory`]).
    rings: MemOptions,
    /// The smallest page size registrations tell the model ([`Sim::with_mr_page_size`]).
    mr_page_size: usize,
    /// The smallest page size rings are created with ([`Sim::with_ring_page_size`]).
    ring_page_size: usize,
    /// The next user index an XRC SRQ gets.
    next_uidx: AtomicU32,
}

impl Sim {
    /// A NIC with the default configuration on a fabric of its own (its QPs can connect to
    /// each other: loopback).
    pub fn new() -> Self {
        Sim::on_fabric(&Fabric::new(), NicConfig::default())
    }

    /// A NIC on `fabric`, reachable from every other NIC on it.
    pub fn on_fabric(fabric: &Arc<Fabric>, config: NicConfig) -> Self {
        Sim {
            nic: NicHandle(hw::Nic::new(fabric, config)),
            port: 1,
            rings: MemOptions::BASE,
            mr_page_size: 0,
            ring_page_size: 0,
            next_uidx: AtomicU32::new(1),
        }
    }

    /// The same NIC told that every region registered from now on is in pages of at least
    /// `page_size` bytes, whatever the host backs it with: a what-if for the model's
    /// translation cost (`mlx5-perf pcie` uses it so that its 2 MiB rows do not depend on
    /// the host granting transparent huge pages). Registrations pin and are refused as
    /// before.
    pub fn with_mr_page_size(self, page_size: usize) -> Self {
        Sim {
            mr_page_size: page_size,
            ..self
        }
    }

    /// The same NIC allocating the rings and doorbell records of the CQs, QPs and SRQs
    /// created from now on as `options` says (hugepages, a NUMA node), as rdma-core
    /// allocates them through `MLX5DV_CTX_ATTR_BUF_ALLOCATORS` on hardware. Each buffer
    /// and each doorbell record takes whole pages of the chosen size; a shortage is the
    /// creation's error ([`Error::NoHugePages`]).
    pub fn with_ring_memory(self, options: MemOptions) -> Self {
        Sim {
            rings: options,
            ..self
        }
    }

    /// The same NIC told that every ring created from now on is in pages of at least
    /// `page_size` bytes, whatever the host backs it with: the what-if of
    /// [`Sim::with_mr_page_size`] for the translations of rings
    /// (`TranslationCache::rings`).
    pub fn with_ring_page_size(self, page_size: usize) -> Self {
        Sim {
            ring_page_size: page_size,
            ..self
        }
    }

    /// Memory for a ring or doorbell record, whose page size the model is told as the
    /// kernel's queue creation tells the device.
    fn ring(&self, len: usize, options: &MemOptions) -> Result<Memory, Error> {
        let memory = Memory::with_options(len, options)?;
        let page_size = memory.page_size().max(self.ring_page_size);
        self.nic
            .set_ring_page_size(addr(&memory), memory.len() as u64, page_size as u64)
            .map_err(device_error("create a queue"))?;
        Ok(memory)
    }

    /// The same NIC opened on `port` (from 1), as `VerbsOptions::port` opens a ConnectX:
    /// QPs use it unless told otherwise. A port the NIC does not have is refused.
    pub fn on_port(self, port: u8) -> Result<Self, Error> {
        if self.nic.port(port).is_err() {
            return Err(Error::InvalidArgument("no such port on the device"));
        }
        Ok(Sim { port, ..self })
    }

    /// The model NIC: PCIe counters, statistics, fault injection, `progress()`.
    pub fn nic(&self) -> &hw::Nic {
        &self.nic
    }

    /// A CQ on the model, compressed or not.
    fn cq(
        &self,
        entries: u32,
        cqe_size: usize,
        channel: &SimChannel,
        compression: Option<hw::CqCompression>,
    ) -> Result<(SimCq, CqDesc, SimUar), Error> {
        let log_cqe_cnt = log2_ceil(entries.saturating_add(1));
        let cqe_cnt = 1u32 << log_cqe_cnt;
        let buf = self.ring(cqe_cnt as usize * cqe_size, &self.rings)?;
        let dbrec = self.ring(2 * CQE_SIZE, &self.rings)?;
        let params = hw::CqParams {
            buf: addr(&buf),
            log_cqe_cnt,
            cqe_size: cqe_size as u32,
            dbrec: addr(&dbrec),
            overrun_ignore: false,
            channel: Some(channel.number),
            compression,
        };
        // SAFETY: both buffers live in the handle, which destroys the CQ before freeing them.
        let info = unsafe { self.nic.create_cq(&params) }.map_err(device_error("create CQ"))?;
        let desc = CqDesc {
            buf: buf.non_null(),
            cqe_cnt,
            cqe_size,
            dbrec: dbrec.non_null().cast(),
            cqn: info.cqn,
        };
        let uar = SimUar {
            nic: self.nic.clone(),
            uar: info.uar,
        };
        let handle = SimCq {
            nic: self.nic.clone(),
            cqn: info.cqn,
            _buf: buf,
            _dbrec: dbrec,
        };
        Ok((handle, desc, uar))
    }
}

impl Default for Sim {
    fn default() -> Self {
        Sim::new()
    }
}

pub(super) fn device_error(operation: &'static str) -> impl FnOnce(hw::HwError) -> Error {
    move |e| match e {
        hw::HwError::Busy => Error::Busy(operation),
        e => Error::Device {
            operation,
            reason: e.to_string(),
        },
    }
}

/// The model's asynchronous event as the kernel would report it.
pub(super) fn async_event(event: hw::AsyncEvent) -> AsyncEvent {
    match event {
        hw::AsyncEvent::CqError { cqn } => AsyncEvent::CqError { cqn },
        hw::AsyncEvent::QpFatal { qpn } => AsyncEvent::QpFatal { qpn },
        hw::AsyncEvent::QpRequestError { qpn } => AsyncEvent::QpRequestError { qpn },
        hw::AsyncEvent::QpAccessError { qpn } => AsyncEvent::QpAccessError { qpn },
        hw::AsyncEvent::LastWqeReached { qpn } => AsyncEvent::LastWqeReached { qpn },
    }
}

pub(super) fn hw_access(access: Access) -> hw::Access {
    hw::Access(access.0)
}

pub(super) fn log2_ceil(n: u32) -> u8 {
    n.max(1).next_power_of_two().trailing_zeros() as u8
}

pub(super) fn addr(memory: &Memory) -> u64 {
    memory.ptr() as u64
}
