//! Two driver threads, one per NIC, ping-ponging SENDs through the model concurrently.

mod common;
use common::*;

const ROUNDS: u32 = 2000;

fn send(me: &mut Side, i: u32) {
    me.post_op(SEND, 0, SIGNALED, 0, &[inline_seg(&i.to_be_bytes())]);
    me.ring();
}

/// The next receive (or send) CQE.
fn wait(me: &mut Side, recv: bool) -> Cqe {
    loop {
        let c = if recv { me.poll_recv() } else { me.poll_send() };
        if let Some(c) = c {
            return c;
        }
        // Idle: let the model run its timers (an RNR'd SEND is retried here).
        me.nic.progress();
        std::thread::yield_now();
    }
}

fn run(mut me: Side, first: bool) -> Side {
    for i in 0..ROUNDS {
        me.recv_at(0, 16);
        if first {
            send(&mut me, i);
        }
        let r = wait(&mut me, true);
        assert_eq!((r.opcode, r.byte_cnt), (RESP_SEND, 4));
        assert_eq!(me.read_data(0, 4), i.to_be_bytes());
        if !first {
            send(&mut me, i);
        }
        let s = wait(&mut me, false);
        assert_eq!(s.opcode, REQ);
    }
    me
}

#[test]
fn ping_pong_from_two_threads() {
    let (_f, a, b) = pair();
    // A SEND may overtake the peer's next receive post; it then RNR-retries on progress().
    let ta = std::thread::spawn(move || run(a, true));
    let tb = std::thread::spawn(move || run(b, false));
    let (a, b) = (ta.join().unwrap(), tb.join().unwrap());
    assert_eq!(a.nic.stats().wqes, u64::from(ROUNDS));
    assert_eq!(b.nic.stats().wqes, u64::from(ROUNDS));
}

#[test]
fn handles_are_send_and_sync() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<mlx5_hw::Nic>();
    send_sync::<mlx5_hw::Fabric>();
}

/// `progress` takes the fabric's lock only while the NIC has deferred work: a SEND that
/// meets no receive (RNR) keeps it busy, each call a retry step under the lock, until a
/// receive is posted and the retry delivers it; after that, idle calls take no lock.
#[test]
fn progress_takes_the_lock_only_for_deferred_work() {
    let (fabric, mut a, mut b) = pair();
    let idle = |nic: &mlx5_hw::Nic| {
        let before = fabric.lock_count();
        for _ in 0..100 {
            assert_eq!(nic.progress(), 0);
        }
        fabric.lock_count() - before
    };
    assert_eq!((idle(&a.nic), idle(&b.nic)), (0, 0));

    send(&mut a, 7);
    assert_eq!(
        a.poll_send(),
        None,
        "no receive posted: the SEND waits (RNR)"
    );
    let before = fabric.lock_count();
    assert_eq!(a.nic.progress(), 1, "a retry step");
    assert_eq!(fabric.lock_count() - before, 1);
    b.recv_at(0, 16);
    while a.poll_send().is_none() {
        a.nic.progress();
    }
    assert_eq!(b.poll_recv().map(|c| c.opcode), Some(RESP_SEND));
    assert_eq!(b.read_data(0, 4), 7u32.to_be_bytes());
    // One more call finds nothing left and clears the flag; then no lock at all.
    a.nic.progress();
    assert_eq!((idle(&a.nic), idle(&b.nic)), (0, 0));
}
