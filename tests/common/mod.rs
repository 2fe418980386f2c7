//! Two model NICs on one fabric, each with a PD, a CQ, a QP and a registered region,
//! connected to each other.

#![allow(dead_code)]

use mlx5_direct::backend::sim::{Fabric, NicConfig, Sim};
use mlx5_direct::{
    Access, Completion, ConnectOptions, Context, Cq, MemoryRegion, ProtectionDomain, Qp, QpConfig,
};

pub struct Side {
    pub ctx: Context<Sim>,
    pub pd: ProtectionDomain<Sim>,
    pub cq: Cq<Sim>,
    pub qp: Qp<Sim>,
    pub mr: MemoryRegion<Sim>,
}

pub const MR_LEN: usize = 1 << 16;

pub fn side(fabric: &std::sync::Arc<Fabric>, config: &QpConfig) -> Side {
    let ctx = Context::new(Sim::on_fabric(fabric, NicConfig::default()));
    let pd = ctx.alloc_pd().unwrap();
    let cq = ctx.create_cq(256, 64).unwrap();
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

pub fn connect(a: &mut Side, b: &mut Side) {
    let (ea, eb) = (a.qp.endpoint().unwrap(), b.qp.endpoint().unwrap());
    a.qp.connect(&eb, &ConnectOptions::default()).unwrap();
    b.qp.connect(&ea, &ConnectOptions::default()).unwrap();
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

/// Polls until `n` completions arrived (running the model's deferred work between tries).
pub fn poll_n(side: &mut Side, n: usize) -> Vec<Completion> {
    let mut out = vec![Completion::default(); n];
    let mut got = 0;
    for _ in 0..10_000 {
        got += side.cq.poll(&mut out[got..]);
        if got == n {
            return out;
        }
        side.ctx.backend().nic().progress();
    }
    panic!("only {got} of {n} completions arrived: {:?}", &out[..got]);
}

/// Asserts the CQ has nothing more.
pub fn assert_empty(side: &mut Side) {
    let mut out = [Completion::default(); 4];
    let n = side.cq.poll(&mut out);
    assert_eq!(n, 0, "unexpected completions: {:?}", &out[..n]);
}
