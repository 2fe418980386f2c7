//! Test bodies every backend runs: `tests/sim_*.rs` on the model, `tests/verbs_hw.rs` on a
//! ConnectX NIC. Each asserts only what the driver sees (completions, bytes, states), so the
//! same body holds on both; model-only checks (statistics, PCIe counts) stay in the sim
//! tests, which get the sides back.
//!
//! By what they test: `ops` (operations complete and land), `errors` (errors, flushes, reset),
//! `events` (completion events), `mcast` (UD multicast), `transports` (DC, UC, device
//! memory, ODP, UD answers), `xrc` (XRC); the helpers they share are here.

use mlx5_direct::backend::Backend;
use mlx5_direct::prm::Syndrome;
use mlx5_direct::{Data, QpPsn, QpState, SendFlags, SendOp, Status};

use super::{poll_n, Drive, Side};

mod errors;
mod events;
mod mcast;
mod ops;
mod raw;
mod transports;
mod xrc;

// Each test crate calls some of the bodies: the re-exports it does not use are not dead.
#[allow(unused_imports)]
pub use errors::*;
#[allow(unused_imports)]
pub use events::*;
#[allow(unused_imports)]
pub use mcast::*;
#[allow(unused_imports)]
pub use ops::*;
#[allow(unused_imports)]
pub use raw::*;
#[allow(unused_imports)]
pub use transports::*;
#[allow(unused_imports)]
pub use xrc::*;

/// The syndrome of an error completion.
pub fn syndrome(status: Status) -> Option<Syndrome> {
    match status {
        Status::Error(e) => e.syndrome(),
        _ => None,
    }
}

/// Polls, on a UD or UC side, the LOCAL_PROT_ERR of a send with a bad key and the flush of
/// the send posted behind it, and asserts the QP is in SQE, not ERR.
pub fn expect_sqe_after_a_bad_key<B: Drive>(side: &mut Side<B>) {
    let cs = poll_n(side, 2);
    assert_eq!(
        cs.iter().map(|c| syndrome(c.status)).collect::<Vec<_>>(),
        [Some(Syndrome::LocalProtErr), Some(Syndrome::WrFlushErr)]
    );
    assert_eq!(side.qp.state(), QpState::Sqe);
}

/// Posts a signaled inline WRITE of `payload` from `from` into `to`'s region at `off`;
/// returns its completion status.
pub fn write<B: Drive>(from: &mut Side<B>, to: &Side<B>, off: usize, payload: &[u8]) -> Status {
    from.qp
        .sq()
        .post(
            off as u64,
            SendOp::Write(to.mr.remote(off)),
            Data::Inline(payload),
            SendFlags::SIGNALED,
        )
        .unwrap();
    poll_n(from, 1)[0].status
}

/// `len` bytes of `s`'s region at `off`.
pub fn read<B: Backend>(s: &Side<B>, off: usize, len: usize) -> Vec<u8> {
    let mut b = vec![0; len];
    s.mr.read(off, &mut b);
    b
}

/// The device's sequence numbers of `s`'s QP.
pub fn psn<B: Backend>(s: &Side<B>) -> QpPsn {
    s.ctx.backend().query_psn(s.qp.handle()).unwrap()
}
