//! The driver against the model: RC operations end to end (bodies shared with the hardware
//! tests, `common::bodies`).

mod common;

use common::bodies;
use mlx5_direct::backend::sim::Fabric;

#[test]
fn inline_write_lands_and_completes() {
    let (a, _b) = bodies::inline_write_lands_and_completes(&Fabric::new());
    let stats = a.ctx.backend().nic().stats();
    assert_eq!(stats.bf_mismatch, 0);
    assert_eq!(stats.bf_used, 1);
}

#[test]
fn send_with_immediate_reaches_a_posted_receive() {
    bodies::send_with_immediate_reaches_a_posted_receive(&Fabric::new());
}

#[test]
fn armed_cq_raises_one_event_per_arm() {
    bodies::armed_cq_raises_one_event_per_arm(&Fabric::new());
}

#[test]
fn event_driven_ping_pong() {
    bodies::event_driven_ping_pong(&Fabric::new());
}

#[test]
fn a_batch_completes_in_every_doorbell_mode() {
    bodies::a_batch_completes_in_every_doorbell_mode(&Fabric::new());
}

#[test]
fn operations_complete_on_128_byte_cqes() {
    bodies::operations_complete_on_128_byte_cqes(&Fabric::new());
}
