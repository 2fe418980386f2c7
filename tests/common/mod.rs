//! Test rigs: two (or more) sides, each with a PD, a CQ, a QP and a registered region,
//! connected to each other. On the model: NICs on one fabric ([`pair`], [`side`]); on any
//! backend: [`Rig`], with the test bodies both backends run in [`bodies`].

#![allow(dead_code)]

pub mod bodies;

use std::time::{Duration, Instant};

use mlx5_direct::backend::sim::{Fabric, NicConfig, Sim};
use mlx5_direct::backend::Backend;
use mlx5_direct::{
    Access, Completion, ConnectOptions, Context, Cq, MemoryRegion, ProtectionDomain, Qp, QpConfig,
};

pub struct Side<B: Backend = Sim> {
    pub ctx: Context<B>,
    pub pd: ProtectionDomain<B>,
    pub cq: Cq<B>,
    pub qp: Qp<B>,
    pub mr: MemoryRegion<B>,
}

/// What a test needs from a backend besides [`Backend`]: what to do while waiting, and how
/// to wait for a completion event.
pub trait Drive: Backend {
    /// Runs between polls that found nothing (the model's deferred work; a pause on
    /// hardware).
    fn progress(ctx: &Context<Self>);
    /// Waits up to `timeout` for a completion event; the CQN it is for.
    fn wait_cq_event(ctx: &Context<Self>, timeout: Duration) -> Option<u32>;
}

impl Drive for Sim {
    fn progress(ctx: &Context<Sim>) {
        ctx.backend().nic().progress();
    }

    fn wait_cq_event(ctx: &Context<Sim>, timeout: Duration) -> Option<u32> {
        match ctx.backend().nic().wait_event(timeout)? {
            mlx5_hw::Event::Completion { cqn } => Some(cqn),
            other => panic!("expected a completion event, got {other:?}"),
        }
    }
}

/// Where sides come from: a model fabric, or a hardware device.
pub trait Rig {
    /// The backend.
    type B: Drive;
    /// A new side with QPs of `config` and a CQ of `cq_entries` entries of `cqe_size` bytes.
    fn side_sized(&self, config: &QpConfig, cq_entries: u32, cqe_size: usize) -> Side<Self::B>;
    /// A new side with QPs of `config` and a CQ of 256 64-byte entries.
    fn side(&self, config: &QpConfig) -> Side<Self::B> {
        self.side_sized(config, 256, 64)
    }
}

impl Rig for std::sync::Arc<Fabric> {
    type B = Sim;
    fn side_sized(&self, config: &QpConfig, cq_entries: u32, cqe_size: usize) -> Side {
        side_sized(self, config, cq_entries, cqe_size)
    }
}

pub const MR_LEN: usize = 1 << 16;

pub fn side(fabric: &std::sync::Arc<Fabric>, config: &QpConfig) -> Side {
    side_sized(fabric, config, 256, 64)
}

/// [`side`] with a CQ of `cq_entries` entries of `cqe_size` (64 or 128) bytes.
pub fn side_sized(
    fabric: &std::sync::Arc<Fabric>,
    config: &QpConfig,
    cq_entries: u32,
    cqe_size: usize,
) -> Side {
    side_on(
        Context::new(Sim::on_fabric(fabric, NicConfig::default())),
        config,
        cq_entries,
        cqe_size,
    )
}

/// A side on `ctx`: a PD, a CQ of `cq_entries` entries of `cqe_size` bytes, a QP of `config`
/// on it and a region of [`MR_LEN`] bytes with every right.
pub fn side_on<B: Backend>(
    ctx: Context<B>,
    config: &QpConfig,
    cq_entries: u32,
    cqe_size: usize,
) -> Side<B> {
    let pd = ctx.alloc_pd().unwrap();
    let cq = ctx.create_cq(cq_entries, cqe_size).unwrap();
    let qp = pd.create_qp(&cq, &cq, config).unwrap();
    let mr = pd
        .alloc_mr(MR_LEN, Access::LOCAL_WRITE | Access::ALL)
        .unwrap();
    Side {
        ctx,
        pd,
        cq,
        qp,
        mr,
    }
}

pub fn connect<B: Backend>(a: &mut Side<B>, b: &mut Side<B>) {
    connect_with(a, b, &ConnectOptions::default());
}

pub fn connect_with<B: Backend>(a: &mut Side<B>, b: &mut Side<B>, options: &ConnectOptions) {
    let (ea, eb) = (a.qp.endpoint().unwrap(), b.qp.endpoint().unwrap());
    a.qp.connect(&eb, options).unwrap();
    b.qp.connect(&ea, options).unwrap();
}

/// Two connected sides of `rig`.
pub fn rig_pair<R: Rig>(rig: &R) -> (Side<R::B>, Side<R::B>) {
    let config = QpConfig::default();
    let (mut a, mut b) = (rig.side(&config), rig.side(&config));
    connect(&mut a, &mut b);
    (a, b)
}

pub fn pair() -> (Side, Side) {
    pair_with(&QpConfig::default())
}

pub fn pair_with(config: &QpConfig) -> (Side, Side) {
    let fabric = Fabric::new();
    let mut a = side(&fabric, config);
    let mut b = side(&fabric, config);
    connect(&mut a, &mut b);
    (a, b)
}

/// Polls until `n` completions arrived (running [`Drive::progress`] between tries), for at
/// most 10 seconds.
pub fn poll_n<B: Drive>(side: &mut Side<B>, n: usize) -> Vec<Completion> {
    let mut out = vec![Completion::default(); n];
    let mut got = 0;
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        got += side.cq.poll(&mut out[got..]);
        if got == n {
            return out;
        }
        B::progress(&side.ctx);
    }
    panic!("only {got} of {n} completions arrived: {:?}", &out[..got]);
}

/// Asserts the CQ has nothing more.
pub fn assert_empty<B: Backend>(side: &mut Side<B>) {
    let mut out = [Completion::default(); 4];
    let n = side.cq.poll(&mut out);
    assert_eq!(n, 0, "unexpected completions: {:?}", &out[..n]);
}
