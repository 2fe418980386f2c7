//! Striding receive work queues ([`StridingWq`]) and the RSS QPs that feed them
//! ([`RssQp`]): raw Ethernet's multi-packet receive. A striding queue owns its buffers
//! (one registered region of `1 << log_wqes` WQE buffers), its CQ (dedicated: its CQEs
//! carry the flow tag where a QPN would be, and the queue parses them itself) and its
//! device object; frames are lent to the caller of [`StridingWq::poll`] in place, and a
//! WQE goes back to the device once every stride of it was consumed and its frames were
//! handed back (the closure returned). docs/transports.md, "Raw Ethernet".

use std::sync::Arc;

use crate::backend::{Backend, RssObject, WqObject};
use crate::cq::mprq::{MprqEvent, MprqQueue, StridedFrame, StridingError};
use crate::error::Error;
use crate::eth::{FlowRule, RxHashConfig, StridingConfig};
use crate::types::Access;

use super::cq::{Cq, CqInner};
use super::mr::MemoryRegion;
use super::pd::{PdInner, ProtectionDomain};
use super::raw::Flow;

/// What a work queue's device object needs alive, released with the last of the queue
/// and the RSS QPs naming it (field order: the object first).
#[derive(Debug)]
struct WqInner<B: Backend> {
    handle: Box<dyn WqObject>,
    buffers: MemoryRegion<B>,
    _cq: Arc<CqInner<B>>,
    _pd: Arc<PdInner<B>>,
}

/// A striding (multi-packet) receive work queue in RDY, its WQEs all posted.
#[derive(Debug)]
pub struct StridingWq<B: Backend> {
    queue: MprqQueue,
    cq: Cq<B>,
    config: StridingConfig,
    inner: Arc<WqInner<B>>,
}

impl<B: Backend> ProtectionDomain<B> {
    /// Creates a striding work queue of `config` with its buffers, its CQ, every WQE
    /// posted, in RDY (`mlx5dv_create_wq` with the striding attributes, `ibv_modify_wq`).
    /// It takes frames once an RSS QP names it ([`ProtectionDomain::create_rss_qp`]) and a
    /// rule steers to that. Refused: fewer than 2 WQEs ([`Error::InvalidArgument`]);
    /// striding attributes outside the device's caps, a device without striding RQs (from
    /// the device).
    pub fn create_striding_wq(&self, config: &StridingConfig) -> Result<StridingWq<B>, Error> {
        if config.log_wqes == 0 {
            return Err(Error::InvalidArgument(
                "a striding work queue of fewer than 2 WQEs",
            ));
        }
        let ctx = &self.inner.ctx;
        let wqes = 1usize << config.log_wqes;
        // A CQE per stride at most, and a filler per WQE.
        let per_wqe = (1u32 << config.log_num_strides) + 1;
        let entries = (wqes as u32 * per_wqe).min(ctx.caps().max_cqe);
        let cq = ctx.create_cq(entries, 64)?;
        let buffers = self.alloc_mr(wqes * config.wqe_bytes(), Access::LOCAL_WRITE)?;
        let (handle, desc) =
            ctx.backend
                .create_striding_wq(&self.inner.handle, &cq.inner.handle, config)?;
        // RDY before the WQEs are posted: rdma-core's `mlx5_modify_wq` zeroes the doorbell
        // record on RESET -> RDY, which would hide WQEs posted before it from the device.
        handle.ready()?;
        // SAFETY: the ring and record are the device object's, which `inner` keeps alive as
        // long as the queue; nothing else writes them.
        let queue = unsafe {
            MprqQueue::new(
                &desc,
                config.log_stride_bytes,
                config.log_num_strides,
                config.two_byte_shift,
                buffers.addr(),
                buffers.lkey(),
            )
        };
        Ok(StridingWq {
            queue,
            config: *config,
            inner: Arc::new(WqInner {
                handle,
                buffers,
                _cq: cq.inner.clone(),
                _pd: self.inner.clone(),
            }),
            cq,
        })
    }

    /// Creates an RSS QP over `wqs` (its indirection table: a power of two of them, entry
    /// `hash & (len - 1)` taking a frame) with `hash` (`None`: every frame to the first):
    /// receive only, no states; rules deliver to it ([`RssQp::create_flow`]). It keeps its
    /// work queues' device objects alive.
    pub fn create_rss_qp(
        &self,
        wqs: &[&StridingWq<B>],
        hash: Option<&RxHashConfig>,
    ) -> Result<RssQp<B>, Error> {
        let objects: Vec<&dyn WqObject> = wqs.iter().map(|w| w.inner.handle.as_ref()).collect();
        let handle = self
            .inner
            .ctx
            .backend
            .create_rss_qp(&self.inner.handle, &objects, hash)?;
        Ok(RssQp {
            inner: Arc::new(RssInner {
                handle,
                port: self.inner.ctx.backend.default_port(),
                _wqs: wqs.iter().map(|w| w.inner.clone()).collect(),
            }),
        })
    }
}

impl<B: Backend> StridingWq<B> {
    /// The work queue's number.
    pub fn wqn(&self) -> u32 {
        self.inner.handle.wqn()
    }

    /// Its attributes.
    pub fn config(&self) -> StridingConfig {
        self.config
    }

    /// The counter of the WQE being filled (WQEs finished so far) and its strides used.
    pub fn position(&self) -> (u32, u32) {
        self.queue.position()
    }

    /// Hands up to `max` received frames to `f`, each in place in the queue's buffers
    /// (no copy) for the time of its call; filler CQEs are consumed here. A WQE whose
    /// strides are all consumed is posted again once `f` returned from its last frame.
    /// Returns the frames handed out; stops at an error CQE or a CQE that cannot be this
    /// queue's ([`StridingError`]), which is consumed.
    pub fn poll(
        &mut self,
        max: usize,
        mut f: impl FnMut(&StridedFrame<'_>),
    ) -> Result<usize, StridingError> {
        let mut n = 0;
        while n < max {
            let Some(cqe) = self.cq.queue.next_raw() else {
                break;
            };
            let (event, eth, stride, strides) = self.queue.parse(&cqe)?;
            let MprqEvent::Frame { offset, len } = event else {
                continue;
            };
            // The strides are re-posted only by `release` below, after the borrow ends; the
            // region is this queue's alone (local write, no rkey, no CPU writes).
            // SAFETY: the device wrote the range (kept inside the WQE by `parse`) before its CQE.
            let bytes = unsafe { self.inner.buffers.bytes(offset, len) };
            f(&StridedFrame {
                bytes,
                eth,
                wqe: u16::from_be_bytes([cqe[2], cqe[3]]),
                stride,
                strides,
            });
            self.queue.release();
            n += 1;
        }
        Ok(n)
    }
}

#[derive(Debug)]
struct RssInner<B: Backend> {
    handle: Box<dyn RssObject>,
    port: u8,
    _wqs: Vec<Arc<WqInner<B>>>,
}

/// An RSS QP: spreads what its rules steer to it over its work queues.
#[derive(Debug)]
pub struct RssQp<B: Backend> {
    inner: Arc<RssInner<B>>,
}

impl<B: Backend> RssQp<B> {
    /// Its number.
    pub fn qpn(&self) -> u32 {
        self.inner.handle.qpn()
    }

    /// Creates the steering rule `rule` on the context's port, delivering to this RSS QP.
    pub fn create_flow(&self, rule: &FlowRule) -> Result<Flow, Error> {
        let handle = self.inner.handle.create_flow(self.inner.port, rule)?;
        Ok(Flow::new(handle, self.inner.clone()))
    }
}
