//! Packet sequence numbers through the public API: every connection starts from its own
//! PSN, carried in the endpoint, and a QP reset and reconnected on one side only (the crate
//! docs' recovery: poll the flush CQEs, `Qp::reset`, connect again) either keeps working or
//! fails loudly, never completing a WRITE that did not land.

mod common;

use common::bodies::{self, psn, read, syndrome, write};
use common::{connect, connect_with, side, Side};
use mlx5_direct::backend::sim::{Fabric, Fault};
use mlx5_direct::prm::Syndrome;
use mlx5_direct::{ConnectOptions, Error, QpConfig, QpPsn, QpState, Status};

/// Two sides on one fabric, not connected.
fn unconnected() -> (Side, Side) {
    let fabric = Fabric::new();
    (
        side(&fabric, &QpConfig::default()),
        side(&fabric, &QpConfig::default()),
    )
}

/// Two connected sides with few retries, so a failure comes after a few empty polls.
fn few_retries() -> (Side, Side) {
    let (mut a, mut b) = unconnected();
    connect_with(&mut a, &mut b, &options());
    (a, b)
}

fn options() -> ConnectOptions {
    ConnectOptions {
        retry_cnt: 2,
        ..ConnectOptions::default()
    }
}

#[test]
fn a_connection_starts_from_the_psns_its_endpoints_carry() {
    let (mut a, mut b) = unconnected();
    let (ea, eb) = (a.qp.endpoint().unwrap(), b.qp.endpoint().unwrap());
    assert!(ea.psn <= 0xff_ffff && eb.psn <= 0xff_ffff);
    assert_ne!(ea.psn, eb.psn, "random per QP (equal once in 2^24)");
    a.qp.connect(&eb, &ConnectOptions::default()).unwrap();
    b.qp.connect(&ea, &ConnectOptions::default()).unwrap();
    let want = |sq_psn, rq_psn| QpPsn { sq_psn, rq_psn };
    assert_eq!(psn(&a), want(ea.psn, eb.psn));
    assert_eq!(write(&mut a, &b, 0, b"one"), Status::Success);
    assert_eq!(psn(&a), want((ea.psn + 1) & 0xff_ffff, eb.psn));
    assert_eq!(psn(&b), want(eb.psn, (ea.psn + 1) & 0xff_ffff));
}

#[test]
fn the_caller_may_choose_the_first_psn_before_connecting() {
    let (mut a, mut b) = unconnected();
    a.qp.set_psn(0xff_fffe).unwrap();
    assert!(matches!(
        a.qp.set_psn(1 << 24),
        Err(Error::InvalidArgument(_))
    ));
    assert_eq!(a.qp.endpoint().unwrap().psn, 0xff_fffe);
    connect(&mut a, &mut b);
    // Two packets wrap the 24-bit sequence.
    assert_eq!(write(&mut a, &b, 0, b"x"), Status::Success);
    assert_eq!(write(&mut a, &b, 8, b"y"), Status::Success);
    assert_eq!(
        (read(&b, 0, 1), read(&b, 8, 1)),
        (b"x".to_vec(), b"y".to_vec())
    );
    assert_eq!(psn(&a).sq_psn, 0);
    assert!(matches!(
        a.qp.set_psn(5),
        Err(Error::WrongState {
            state: QpState::Rts,
            ..
        })
    ));
}

#[test]
fn one_side_reset_and_reconnected_keeps_working() {
    bodies::one_side_reset_and_reconnected_keeps_working(&Fabric::new());
}

/// Under `fault`, `a`'s WRITE of "once" at 0 fails after its retries; then `a` alone is
/// reset and connected again to the endpoint it had from `b`.
fn fail_then_reconnect_alone(a: &mut Side, b: &Side, fault: Fault) {
    let eb = b.qp.endpoint().unwrap();
    a.ctx.backend().nic().inject(fault);
    assert_eq!(
        syndrome(write(a, b, 0, b"once")),
        Some(Syndrome::TransportRetryExcErr)
    );
    a.ctx.backend().nic().inject(Fault::Clear);
    a.qp.reset().unwrap();
    a.qp.connect(&eb, &options()).unwrap();
}

#[test]
fn a_reset_after_lost_responses_continues_past_what_the_peer_executed() {
    let (mut a, b) = few_retries();
    // b executes the WRITE, but every response to a is lost.
    let qpn = Some(a.qp.qpn());
    fail_then_reconnect_alone(&mut a, &b, Fault::LoseResponses { qpn, count: 10 });
    assert_eq!(read(&b, 0, 4), b"once");
    assert_eq!(write(&mut a, &b, 8, b"next"), Status::Success);
    assert_eq!(
        read(&b, 8, 4),
        b"next",
        "not taken for a duplicate of the lost one"
    );
}

#[test]
fn a_reset_after_lost_requests_fails_loudly_until_both_sides_reconnect() {
    let (mut a, mut b) = few_retries();
    // The WRITE never reaches b; a's sequence moved past it.
    let qpn = Some(a.qp.qpn());
    fail_then_reconnect_alone(&mut a, &b, Fault::LosePackets { qpn, count: 10 });
    // a is ahead of what b expects: b NAKs, a retries and fails; nothing lands, no success.
    assert_eq!(
        syndrome(write(&mut a, &b, 8, b"ahead")),
        Some(Syndrome::TransportRetryExcErr)
    );
    assert_eq!(read(&b, 0, 13), vec![0; 13]);
    assert_eq!(b.ctx.backend().nic().stats().seq_naks, 1);
    // Both sides reset and exchange fresh endpoints: a new connection.
    a.qp.reset().unwrap();
    b.qp.reset().unwrap();
    let (ea, eb) = (a.qp.endpoint().unwrap(), b.qp.endpoint().unwrap());
    a.qp.connect(&eb, &options()).unwrap();
    b.qp.connect(&ea, &options()).unwrap();
    assert_eq!(write(&mut a, &b, 16, b"fresh"), Status::Success);
    assert_eq!(read(&b, 16, 5), b"fresh");
}
