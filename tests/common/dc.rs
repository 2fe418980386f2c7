//! What the DC tests share (`tests/sim_dc.rs`, `tests/sim_dc_pool.rs`): the DC key, a
//! target with its DCT, DCIs, address handles to a target, work requests, refusing targets
//! and the syndrome of a completion.

use super::{BugCheck, Side, MR_LEN};
use mlx5_direct::backend::sim::hw::LinkLayer;
use mlx5_direct::backend::sim::{DcRefusal, Fabric, NicConfig, Sim};
use mlx5_direct::prm::Syndrome;
use mlx5_direct::{
    Access, AddressHandle, AhAttr, Completion, ConnectOptions, Context, Cq, Data, Dct, GlobalRoute,
    MemoryRegion, ProtectionDomain, QpConfig, SendFlags, SendOp, SendWr, Srq, Status, Transport,
};

/// perftest's DC key (`DC_KEY`, prm-facts-next §3.3).
pub const DC_KEY: u64 = 0xffee_ddcc;

/// A DC target: its own NIC, a CQ, an SRQ, a DCT in RTR and a region with every right.
pub struct Target {
    pub ctx: Context<Sim>,
    pub cq: Cq<Sim>,
    pub srq: Srq<Sim>,
    pub dct: Dct<Sim>,
    pub mr: MemoryRegion<Sim>,
    pub _pd: ProtectionDomain<Sim>,
    pub _bugs: BugCheck,
}

pub fn target_on(ctx: Context<Sim>, key: u64) -> Target {
    let pd = ctx.alloc_pd().unwrap();
    let cq = ctx.create_cq(256, 64).unwrap();
    let srq = pd.create_srq(64, 1).unwrap();
    let mut dct = pd.create_dct(&cq, &srq, key).unwrap();
    assert!(matches!(
        dct.number(),
        Err(mlx5_direct::Error::WrongState { .. })
    ));
    dct.activate(1, Access::ALL, &ConnectOptions::default())
        .unwrap();
    let mr = pd.alloc_mr(MR_LEN, Access::ALL).unwrap();
    Target {
        _bugs: BugCheck::on(ctx.backend().nic()),
        ctx,
        cq,
        srq,
        dct,
        mr,
        _pd: pd,
    }
}

pub fn target(fabric: &std::sync::Arc<Fabric>) -> Target {
    target_on(
        Context::new(Sim::on_fabric(fabric, NicConfig::default())),
        DC_KEY,
    )
}

pub fn dci_config() -> QpConfig {
    QpConfig {
        transport: Transport::Dci,
        ..QpConfig::default()
    }
}

/// A DCI in RTS on its own NIC, with `retry_cnt` transport retries.
pub fn dci_on(ctx: Context<Sim>, retry_cnt: u8) -> Side {
    let mut s = super::side_on(ctx, &dci_config(), 256, 64);
    s.qp.activate_dci(&ConnectOptions {
        retry_cnt,
        rnr_retry: 1,
        ..ConnectOptions::default()
    })
    .unwrap();
    s
}

pub fn dci(fabric: &std::sync::Arc<Fabric>) -> Side {
    dci_on(
        Context::new(Sim::on_fabric(fabric, NicConfig::default())),
        7,
    )
}

/// An address handle from `from` to `to`'s port: by LID on InfiniBand, by a GRH to its
/// GID on RoCE (where the LID is 0 and every address is global).
pub fn ah_to(from: &Side, to: &Target) -> AddressHandle<Sim> {
    let port = to.ctx.port(1).unwrap();
    from.pd
        .create_ah(&AhAttr {
            port: 1,
            dlid: port.lid,
            grh: port.roce.then_some(GlobalRoute {
                dgid: port.gid,
                hop_limit: 64,
                ..GlobalRoute::default()
            }),
            ..AhAttr::default()
        })
        .unwrap()
}

/// The model's NIC with ports on `link`.
pub fn on_link(link: LinkLayer) -> NicConfig {
    NicConfig {
        link_layer: link,
        ..NicConfig::default()
    }
}

pub fn wr(wr_id: u64, op: SendOp, data: Data<'_>) -> SendWr<'_> {
    SendWr {
        wr_id,
        op,
        data,
        flags: SendFlags::SIGNALED,
    }
}

/// A DCI NIC with `dc_refusal`, `retry_cnt` 2.
pub fn refusing(fabric: &std::sync::Arc<Fabric>, refusal: DcRefusal) -> Side {
    refusing_on(fabric, refusal, LinkLayer::InfiniBand)
}

/// [`refusing`] with its port on `link`.
pub fn refusing_on(fabric: &std::sync::Arc<Fabric>, refusal: DcRefusal, link: LinkLayer) -> Side {
    let cfg = NicConfig {
        dc_refusal: refusal,
        ..on_link(link)
    };
    dci_on(Context::new(Sim::on_fabric(fabric, cfg)), 2)
}

pub fn syndrome(c: &Completion) -> Option<Syndrome> {
    match c.status {
        Status::Error(e) => e.syndrome(),
        _ => None,
    }
}
