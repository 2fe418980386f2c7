//! What the hostile-input tests share (`tests/hostile.rs`, `tests/hostile_cqes.rs`): what
//! "nothing posted" counts, and a remote address.

use super::Side;
use mlx5_direct::Remote;

/// Doorbells the model accepted and WQEBBs the driver produced: "nothing posted" means
/// neither moved.
pub fn posted(s: &mut Side) -> (u64, u32) {
    let doorbells = s.ctx.backend().nic().stats().doorbells;
    (doorbells, s.qp.sq().producer_count())
}

pub const REMOTE: Remote = Remote {
    addr: 0x1000,
    rkey: 0x100,
};
