//! A backend wrapper whose UAR records every MMIO store before passing it on: how `explain`
//! shows the doorbell and BlueFlame writes the driver really made (offset and bytes), without
//! re-encoding anything.

use std::sync::{Arc, Mutex, PoisonError};

use mlx5_direct::backend::{AhHandle, Backend, QpParts};
use mlx5_direct::cq::CqDesc;
use mlx5_direct::mmio::Uar;
use mlx5_direct::prm::Av;
use mlx5_direct::rq::RqDesc;
use mlx5_direct::MemOptions;
use mlx5_direct::{
    Access, AhAttr, AsyncEvent, ClockInfo, CqConfig, DeviceCaps, Error, GidEntry, PortInfo,
    QpConfig, QpPsn, QpSizes, Transition,
};

/// One MMIO store: offset in the UAR page and the bytes in memory order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MmioWrite {
    /// Offset inside the UAR page.
    pub offset: usize,
    /// The bytes stored (8 for a doorbell, 64 for a BlueFlame chunk).
    pub bytes: Vec<u8>,
}

/// The shared log of a traced backend's UARs.
pub type MmioLog = Arc<Mutex<Vec<MmioWrite>>>;

fn record(log: &MmioLog, offset: usize, bytes: Vec<u8>) {
    log.lock()
        .unwrap_or_else(PoisonError::into_inner)
        .push(MmioWrite { offset, bytes });
}

/// A UAR that logs each store, then makes it on the wrapped UAR.
#[derive(Debug)]
pub struct TracedUar<U> {
    inner: U,
    log: MmioLog,
}

impl<U: Uar> Uar for TracedUar<U> {
    unsafe fn write64(&self, offset: usize, bytes: [u8; 8]) {
        record(&self.log, offset, bytes.to_vec());
        // SAFETY: forwarded from this function's contract.
        unsafe { self.inner.write64(offset, bytes) };
    }

    unsafe fn write_block(&self, offset: usize, block: &[u64; 8]) {
        record(
            &self.log,
            offset,
            block.iter().flat_map(|w| w.to_ne_bytes()).collect(),
        );
        // SAFETY: forwarded from this function's contract.
        unsafe { self.inner.write_block(offset, block) };
    }
}

/// `B` with every UAR store logged.
#[derive(Debug)]
pub struct Traced<B> {
    inner: B,
    log: MmioLog,
}

impl<B: Backend> Traced<B> {
    /// Wraps `inner`.
    pub fn new(inner: B) -> Self {
        Traced {
            inner,
            log: MmioLog::default(),
        }
    }

    /// The wrapped backend.
    pub fn inner(&self) -> &B {
        &self.inner
    }

    /// Takes the stores logged so far.
    pub fn take_mmio(&self) -> Vec<MmioWrite> {
        std::mem::take(&mut *self.log.lock().unwrap_or_else(PoisonError::into_inner))
    }

    fn wrap(&self, inner: B::Uar) -> TracedUar<B::Uar> {
        TracedUar {
            inner,
            log: self.log.clone(),
        }
    }
}

impl<B: Backend> Backend for Traced<B> {
    type Uar = TracedUar<B::Uar>;
    type Pd = B::Pd;
    type Mr = B::Mr;
    type Cq = B::Cq;
    type Srq = B::Srq;
    type Qp = B::Qp;
    type Channel = B::Channel;
    type Dm = B::Dm;
    type Xrcd = B::Xrcd;

    fn name(&self) -> &str {
        self.inner.name()
    }

    fn caps(&self) -> DeviceCaps {
        self.inner.caps()
    }

    fn default_port(&self) -> u8 {
        self.inner.default_port()
    }

    fn port(&self, port: u8) -> Result<PortInfo, Error> {
        self.inner.port(port)
    }

    fn gid(&self, port: u8, index: u32) -> Result<GidEntry, Error> {
        self.inner.gid(port, index)
    }

    fn alloc_pd(&self) -> Result<B::Pd, Error> {
        self.inner.alloc_pd()
    }

    fn alloc_parent_domain(&self, pd: &B::Pd, ring_memory: &MemOptions) -> Result<B::Pd, Error> {
        self.inner.alloc_parent_domain(pd, ring_memory)
    }

    unsafe fn reg_mr(
        &self,
        pd: &B::Pd,
        addr: *mut u8,
        len: usize,
        page_size: usize,
        access: Access,
    ) -> Result<(B::Mr, u32, u32), Error> {
        // SAFETY: forwarded from this function's contract.
        unsafe { self.inner.reg_mr(pd, addr, len, page_size, access) }
    }

    fn alloc_dm(&self, len: usize, log_align: u8) -> Result<(B::Dm, usize), Error> {
        self.inner.alloc_dm(len, log_align)
    }

    fn reg_dm_mr(
        &self,
        pd: &B::Pd,
        dm: &B::Dm,
        offset: usize,
        len: usize,
        access: Access,
    ) -> Result<(B::Mr, u32, u32), Error> {
        self.inner.reg_dm_mr(pd, dm, offset, len, access)
    }

    fn advise_mr(&self, pd: &B::Pd, mr: &B::Mr, addr: u64, len: usize) -> Result<(), Error> {
        self.inner.advise_mr(pd, mr, addr, len)
    }

    fn create_channel(&self) -> Result<B::Channel, Error> {
        self.inner.create_channel()
    }

    fn get_cq_event(&self, channel: &B::Channel) -> Result<Option<u32>, Error> {
        self.inner.get_cq_event(channel)
    }

    fn create_cq(
        &self,
        config: &CqConfig,
        channel: &B::Channel,
    ) -> Result<(B::Cq, CqDesc, Self::Uar), Error> {
        let (cq, desc, uar) = self.inner.create_cq(config, channel)?;
        Ok((cq, desc, self.wrap(uar)))
    }

    fn clock_info(&self) -> Result<ClockInfo, Error> {
        self.inner.clock_info()
    }

    fn create_srq(
        &self,
        pd: &B::Pd,
        entries: u32,
        max_sge: u32,
    ) -> Result<(B::Srq, RqDesc, u32), Error> {
        self.inner.create_srq(pd, entries, max_sge)
    }

    fn open_xrcd(&self) -> Result<B::Xrcd, Error> {
        self.inner.open_xrcd()
    }

    fn create_xrc_srq(
        &self,
        pd: &B::Pd,
        xrcd: &B::Xrcd,
        cq: &B::Cq,
        entries: u32,
        max_sge: u32,
    ) -> Result<(B::Srq, RqDesc, u32, u32), Error> {
        self.inner.create_xrc_srq(pd, xrcd, cq, entries, max_sge)
    }

    fn create_xrc_target(&self, xrcd: &B::Xrcd) -> Result<(B::Qp, u32), Error> {
        self.inner.create_xrc_target(xrcd)
    }

    fn create_ah(&self, pd: &B::Pd, attr: &AhAttr) -> Result<(AhHandle, Av), Error> {
        self.inner.create_ah(pd, attr)
    }

    fn create_qp(
        &self,
        pd: &B::Pd,
        send_cq: &B::Cq,
        recv_cq: &B::Cq,
        srq: Option<&B::Srq>,
        config: &QpConfig,
        sizes: &QpSizes,
    ) -> Result<QpParts<Self>, Error> {
        let p = self
            .inner
            .create_qp(pd, send_cq, recv_cq, srq, config, sizes)?;
        Ok(QpParts {
            handle: p.handle,
            qpn: p.qpn,
            sq: p.sq,
            rq: p.rq,
            uar: self.wrap(p.uar),
        })
    }

    fn modify_qp(&self, qp: &B::Qp, transition: &Transition) -> Result<(), Error> {
        self.inner.modify_qp(qp, transition)
    }

    fn query_psn(&self, qp: &B::Qp) -> Result<QpPsn, Error> {
        self.inner.query_psn(qp)
    }

    fn poll_async_event(&self) -> Result<Option<AsyncEvent>, Error> {
        self.inner.poll_async_event()
    }

    fn wait_async_event(&self, timeout: std::time::Duration) -> Result<Option<AsyncEvent>, Error> {
        self.inner.wait_async_event(timeout)
    }
}
