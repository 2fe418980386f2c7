//! The queue itself (`src/sq/mod.rs`): what it reports, readiness taken away with room
//! left, and a reset that forgets WQEs pushed but never rung.

use super::*;
use crate::null::NULL_QPN;

#[test]
fn the_queue_reports_its_ring_number_and_limits() {
    let q = NullQueues::new(8, 16, 32).unwrap();
    assert_eq!(
        (q.sq.wqebbs(), q.sq.qpn(), q.sq.max_sge(), q.sq.max_inline()),
        (8, NULL_QPN, 4, 32)
    );
    assert_eq!((q.sq.free_wqebbs(), q.sq.outstanding_wqebbs()), (8, 0));
}

/// The room check of the hot path remembers how far it may post without looking again
/// (`Cursor::limit`); taking readiness away must forget that room, so the next post is
/// refused although the ring has free blocks.
#[test]
fn readiness_taken_away_with_room_left_refuses_the_next_post() {
    let mut q = NullQueues::new(8, 16, 32).unwrap();
    q.sq.post(1, WRITE, Data::Inline(&[1; 8]), SendFlags::SIGNALED)
        .unwrap();
    q.sq.set_ready(false);
    assert_eq!(
        q.sq.post(2, WRITE, Data::Inline(&[1; 8]), SendFlags::SIGNALED),
        Err(PostError::NotReadyToSend)
    );
    assert_eq!(q.sq.producer_count(), 1);
    q.sq.set_ready(true);
    q.sq.post(2, WRITE, Data::Inline(&[1; 8]), SendFlags::SIGNALED)
        .unwrap();
    assert_eq!(q.sq.producer_count(), 2);
}

/// A reset (the QP back to RESET) drops WQEs pushed without a doorbell: the next doorbell
/// rings only what is pushed after it.
#[test]
fn a_reset_forgets_wqes_pushed_but_not_rung() {
    let mut q = NullQueues::new(8, 16, 32).unwrap();
    for i in 0..2 {
        q.sq.push(i, WRITE, Data::Inline(&[1; 8]), SendFlags::SIGNALED)
            .unwrap();
    }
    q.sq.reset();
    q.sq.set_ready(true);
    assert_eq!(
        (
            q.sq.producer_count(),
            q.sq.doorbell_record(),
            q.sq.ring_doorbell()
        ),
        (0, 0, 0)
    );
    q.sq.push(3, WRITE, Data::Inline(&[1; 8]), SendFlags::SIGNALED)
        .unwrap();
    assert_eq!((q.sq.ring_doorbell(), q.sq.doorbell_record()), (1, 1));
}
