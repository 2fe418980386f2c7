//! Error causes end to end: exact syndromes on each side, flushes, reset and reuse (bodies
//! shared with the hardware tests, `common::bodies`).

mod common;

use common::bodies;
use mlx5_direct::backend::sim::Fabric;

#[test]
fn bad_rkey_fails_then_flushes_then_reset_reuses_the_qp() {
    bodies::bad_rkey_fails_then_flushes_then_reset_reuses_the_qp(&Fabric::new());
}

#[test]
fn send_inv_of_a_registered_key_is_refused() {
    bodies::send_inv_of_a_registered_key_is_refused(&Fabric::new());
}

#[test]
fn receive_too_small_fails_on_both_sides() {
    bodies::receive_too_small_fails_on_both_sides(&Fabric::new());
}

#[test]
fn bad_local_key_is_a_local_protection_error() {
    bodies::bad_local_key_is_a_local_protection_error(&Fabric::new());
}

#[test]
fn no_receive_posted_exhausts_rnr_retries() {
    bodies::no_receive_posted_exhausts_rnr_retries(&Fabric::new());
}

#[test]
fn posting_before_rts_is_refused() {
    bodies::posting_before_rts_is_refused(&Fabric::new());
}

#[test]
fn an_unanswering_peer_exhausts_transport_retries() {
    bodies::an_unanswering_peer_exhausts_transport_retries(&Fabric::new());
}
