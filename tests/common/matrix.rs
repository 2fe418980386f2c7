//! What the table-driven tests share (`tests/sim_matrix.rs`, `tests/sim_matrix_errors.rs`):
//! the source and target offsets, a sized pair, exact polls, syndromes and payloads.

use super::{assert_empty, connect, side_sized, Side};
use mlx5_direct::backend::sim::Fabric;
use mlx5_direct::prm::Syndrome;
use mlx5_direct::{Completion, QpConfig, Status};

/// Where the requester keeps its source bytes (and READ / atomic results).
pub const SRC: usize = 0x1000;

/// Where the responder is written or read, and where its receives land.
pub const DST: usize = 0x4000;

pub fn pair_sized(config: &QpConfig, cq_entries: u32, cqe_size: usize) -> (Side, Side) {
    let fabric = Fabric::new();
    let mut a = side_sized(&fabric, config, cq_entries, cqe_size);
    let mut b = side_sized(&fabric, config, cq_entries, cqe_size);
    connect(&mut a, &mut b);
    (a, b)
}

/// Polls `side` with plain `poll` calls (no explicit `progress()`) until `n` completions
/// arrived, then checks nothing more is there.
pub fn poll_exact(side: &mut Side, n: usize) -> Vec<Completion> {
    let mut out = vec![Completion::default(); n];
    let mut got = 0;
    for _ in 0..1000 {
        got += side.cq.poll(&mut out[got..]);
        if got == n {
            assert_empty(side);
            return out;
        }
    }
    panic!("only {got} of {n} completions arrived: {:?}", &out[..got]);
}

pub fn syndrome(c: &Completion) -> Option<Syndrome> {
    match c.status {
        Status::Error(e) => e.syndrome(),
        _ => None,
    }
}

pub fn bytes(side: &Side, offset: usize, len: usize) -> Vec<u8> {
    let mut buf = vec![0; len];
    side.mr.read(offset, &mut buf);
    buf
}
