//! Test rigs: two (or more) sides, each with a PD, a CQ, a QP and a registered region,
//! connected to each other. On the model: NICs on one fabric ([`pair`], [`side`]); on any
//! backend: [`Rig`], with the test bodies both backends run in [`bodies`].

#![allow(dead_code)]

pub mod bodies;
pub mod dc;
pub mod hostile;
pub mod matrix;
pub mod prop;
pub mod raw;
pub mod ud;

use std::time::{Duration, Instant};

use mlx5_direct::backend::sim::{Fabric, Nic, NicConfig, Sim};
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
    /// On the model: asserts, when the side is dropped, that its NIC counted no driver bug.
    pub bugs: BugCheck,
}

/// What a test needs from a backend besides [`Backend`]: what to do while waiting, and how
/// to check for driver bugs.
pub trait Drive: Backend {
    /// Runs between polls that found nothing (the model's deferred work; a pause on
    /// hardware).
    fn progress(ctx: &Context<Self>);
    /// The driver-bug check of a side on `ctx` (none where nothing counts them).
    fn bug_check(ctx: &Context<Self>) -> BugCheck;
}

impl Drive for Sim {
    fn progress(ctx: &Context<Sim>) {
        ctx.backend().nic().progress();
    }

    fn bug_check(ctx: &Context<Sim>) -> BugCheck {
        BugCheck::on(ctx.backend().nic())
    }
}

/// `cases` proptest cases, or as many as `PROPTEST_CASES` asks for (see docs/testing.md).
pub fn proptest_config(cases: u32) -> proptest::test_runner::Config {
    if std::env::var_os("PROPTEST_CASES").is_some() {
        proptest::test_runner::Config::default()
    } else {
        proptest::test_runner::Config::with_cases(cases)
    }
}

/// A model counter that only a driver bug moves, in two classes: hardware would reject the
/// same input, or what hardware does is unknown (the model's `DriverBug`, docs/model.md).
pub use mlx5_direct::backend::sim::DriverBug;

/// Asserts, when dropped, that a model NIC counted none of the [`DriverBug`]s except those
/// a test provokes on purpose and allows with [`BugCheck::allow`]. Does nothing on
/// hardware, or while the test is already failing.
#[derive(Default)]
pub struct BugCheck {
    nic: Option<Nic>,
    allowed: Vec<DriverBug>,
}

impl BugCheck {
    /// Checks `nic`.
    pub fn on(nic: &Nic) -> BugCheck {
        BugCheck {
            nic: Some(nic.clone()),
            allowed: Vec::new(),
        }
    }

    /// No check (hardware).
    pub fn off() -> BugCheck {
        BugCheck::default()
    }

    /// The test provokes `bug` on purpose: do not fail for it.
    pub fn allow(&mut self, bug: DriverBug) {
        self.allowed.push(bug);
    }

    /// The counts of the bugs not allowed, all zero when the driver behaved.
    pub fn counts(&self) -> Vec<(DriverBug, u64)> {
        let Some(nic) = &self.nic else {
            return Vec::new();
        };
        let stats = nic.stats();
        DriverBug::ALL
            .into_iter()
            .filter(|b| !self.allowed.contains(b))
            .map(|b| (b, stats.bug(b)))
            .collect()
    }
}

impl Drop for BugCheck {
    fn drop(&mut self) {
        if std::thread::panicking() {
            return;
        }
        let bugs: Vec<_> = self.counts().into_iter().filter(|&(_, n)| n > 0).collect();
        assert!(
            bugs.is_empty(),
            "the model counted driver bugs {bugs:?} (a test that provokes one on purpose \
             says so with BugCheck::allow)"
        );
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

/// Model NICs built with a configuration other than the default.
impl Rig for (std::sync::Arc<Fabric>, NicConfig) {
    type B = Sim;
    fn side_sized(&self, config: &QpConfig, cq_entries: u32, cqe_size: usize) -> Side {
        let ctx = Context::new(Sim::on_fabric(&self.0, self.1.clone()));
        side_on(ctx, config, cq_entries, cqe_size)
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
pub fn side_on<B: Drive>(
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
    let bugs = B::bug_check(&ctx);
    Side {
        ctx,
        pd,
        cq,
        qp,
        mr,
        bugs,
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
