//! READ, atomics and SRQ end to end (bodies shared with the hardware tests,
//! `common::bodies`).

mod common;

use common::bodies;
use mlx5_direct::backend::sim::Fabric;

#[test]
fn read_fetches_remote_bytes() {
    bodies::read_fetches_remote_bytes(&Fabric::new());
}

#[test]
fn atomics_return_the_original_value() {
    bodies::atomics_return_the_original_value(&Fabric::new());
}

#[test]
fn srq_shared_by_two_qps() {
    bodies::srq_shared_by_two_qps(&Fabric::new());
}
