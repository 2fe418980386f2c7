//! READ, atomics and SRQ end to end (bodies shared with the hardware tests,
//! `common::bodies`).

mod common;

use common::bodies;
use mlx5_direct::backend::sim::{Fabric, NicConfig};

#[test]
fn read_fetches_remote_bytes() {
    bodies::read_fetches_remote_bytes(&Fabric::new());
}

#[test]
fn atomics_return_the_original_value() {
    bodies::atomics_return_the_original_value(&Fabric::new());
}

#[test]
fn masked_atomics_return_the_original_value() {
    bodies::masked_atomics_return_the_original_value(&Fabric::new());
    // A device in big-endian mode for 8-byte results (atomic_req_8B_endianness_mode 0).
    let mode_0 = NicConfig {
        atomic_8b_host_order: false,
        ..NicConfig::default()
    };
    bodies::masked_atomics_return_the_original_value(&(Fabric::new(), mode_0));
}

#[test]
fn srq_shared_by_two_qps() {
    bodies::srq_shared_by_two_qps(&Fabric::new());
}
