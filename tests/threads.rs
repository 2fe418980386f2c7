//! One QP on two threads, as an application does it: `Qp::split` into an owned send half and
//! an owned receive half, each moved to its own thread with its own CQ; the QP lives until
//! both halves are gone.

use std::thread;
use std::time::{Duration, Instant};

use mlx5_direct::backend::sim::{Fabric, NicConfig, Sim, SimUar};
use mlx5_direct::{
    Access, Completion, ConnectOptions, Context, Cq, Data, MemoryRegion, Qp, QpConfig, QpReceiver,
    QpSender, QpState, SendFlags, SendOp, SendQueue, Status, WcOpcode,
};

const MESSAGES: u64 = 300;

fn assert_send<T: Send>() {}

/// Polls `cq` until `n` completions came (10 s at most).
fn poll_n(cq: &mut Cq<Sim>, n: usize) -> Vec<Completion> {
    let mut out = vec![Completion::default(); n];
    let mut got = 0;
    let deadline = Instant::now() + Duration::from_secs(10);
    while got < n {
        assert!(Instant::now() < deadline, "{got} of {n} completions");
        got += cq.poll(&mut out[got..]);
    }
    out
}

/// Posts message `sent` (`{prefix}{sent:05}`) if one is left and the queue has room.
fn send_next(sq: &mut SendQueue<SimUar>, prefix: char, sent: &mut u64) {
    if *sent < MESSAGES && sq.free_wqebbs() > 0 {
        let text = format!("{prefix}{sent:05}");
        let data = Data::Inline(text.as_bytes());
        sq.post(*sent, SendOp::Send, data, SendFlags::SIGNALED)
            .unwrap();
        *sent += 1;
    }
}

struct Peer {
    cq: Cq<Sim>,
    qp: Qp<Sim>,
    mr: MemoryRegion<Sim>,
}

/// Side A: a QP with separate send and receive CQs.
struct Side {
    ctx: Context<Sim>,
    qp: Qp<Sim>,
    send_cq: Cq<Sim>,
    recv_cq: Cq<Sim>,
    mr: MemoryRegion<Sim>,
}

/// Side A and its peer B on another NIC, connected.
fn setup() -> (Side, Peer) {
    let fabric = Fabric::new();
    let ctx = Context::new(Sim::on_fabric(&fabric, NicConfig::default()));
    let pd = ctx.alloc_pd().unwrap();
    let (send_cq, recv_cq) = (
        ctx.create_cq(512, 64).unwrap(),
        ctx.create_cq(512, 64).unwrap(),
    );
    let mut qp = pd
        .create_qp(&send_cq, &recv_cq, &QpConfig::default())
        .unwrap();
    let mr = pd.alloc_mr(64 * 1024, Access::ALL).unwrap();
    let bctx = Context::new(Sim::on_fabric(&fabric, NicConfig::default()));
    let bpd = bctx.alloc_pd().unwrap();
    let bcq = bctx.create_cq(1024, 64).unwrap();
    let mut bqp = bpd.create_qp(&bcq, &bcq, &QpConfig::default()).unwrap();
    let bmr = bpd.alloc_mr(64 * 1024, Access::ALL).unwrap();
    let (ea, eb) = (qp.endpoint().unwrap(), bqp.endpoint().unwrap());
    qp.connect(&eb, &ConnectOptions::default()).unwrap();
    bqp.connect(&ea, &ConnectOptions::default()).unwrap();
    let peer = Peer {
        cq: bcq,
        qp: bqp,
        mr: bmr,
    };
    let a = Side {
        ctx,
        qp,
        send_cq,
        recv_cq,
        mr,
    };
    (a, peer)
}

#[test]
fn the_halves_and_cqs_are_send() {
    assert_send::<QpSender<Sim>>();
    assert_send::<QpReceiver<Sim>>();
    assert_send::<Cq<Sim>>();
    assert_send::<MemoryRegion<Sim>>();
}

#[test]
fn one_thread_sends_while_another_receives_on_the_same_qp() {
    let (a, mut b) = setup();
    let Side {
        qp,
        mut send_cq,
        mut recv_cq,
        mr,
        ..
    } = a;
    let qpn = qp.qpn();
    let (mut tx, mut rx) = qp.split();
    assert_eq!((tx.state(), rx.state()), (QpState::Rts, QpState::Rts));
    // Read-only accessors through `&`.
    assert_eq!(tx.max_inline(), 220);
    assert!(tx.free_wqebbs() > 0);
    assert_eq!(rx.recv_queue().map(|rq| rq.capacity()), Some(256));
    // B takes A's messages into slots of 64 bytes.
    for i in 0..MESSAGES {
        let sge = b.mr.sge((i as usize % 256) * 64, 64);
        b.qp.rq().unwrap().post(i, &[sge]).unwrap();
        if i == 255 {
            break;
        }
    }
    let sender = thread::spawn(move || {
        let mut sent = 0;
        let mut done = [Completion::default(); 32];
        let mut completed = 0;
        while completed < MESSAGES {
            send_next(&mut tx, 'a', &mut sent);
            let n = send_cq.poll(&mut done);
            for c in &done[..n] {
                assert_eq!(
                    (c.wr_id, c.status, c.opcode),
                    (completed, Status::Success, WcOpcode::Send)
                );
                completed += 1;
            }
        }
        tx
    });
    let receiver = thread::spawn(move || {
        let mut texts = Vec::new();
        let mut posted = 0u64;
        let mut done = [Completion::default(); 32];
        while (texts.len() as u64) < MESSAGES {
            let rq = rx.rq().unwrap();
            while posted < MESSAGES && rq.free() > 0 {
                rq.post(posted, &[mr.sge((posted as usize % 256) * 64, 64)])
                    .unwrap();
                posted += 1;
            }
            let n = recv_cq.poll(&mut done);
            for c in &done[..n] {
                assert_eq!(
                    (c.wr_id, c.status, c.qpn),
                    (texts.len() as u64, Status::Success, qpn)
                );
                let mut text = vec![0u8; c.byte_len as usize];
                mr.read((c.wr_id as usize % 256) * 64, &mut text);
                texts.push(String::from_utf8(text).unwrap());
            }
        }
        (rx, texts)
    });
    // Meanwhile B (this thread) sends to A and takes A's messages.
    let mut got = Vec::new();
    let mut posted = 256;
    let mut sent = 0;
    let mut sends_done = 0;
    let mut done = [Completion::default(); 32];
    while got.len() < MESSAGES as usize || sends_done < MESSAGES {
        send_next(b.qp.sq(), 'b', &mut sent);
        let n = b.cq.poll(&mut done);
        for c in &done[..n] {
            assert_eq!(c.status, Status::Success, "{c:?}");
            if c.opcode == WcOpcode::Recv {
                let mut text = vec![0u8; c.byte_len as usize];
                b.mr.read((c.wr_id as usize % 256) * 64, &mut text);
                got.push(String::from_utf8(text).unwrap());
                if posted < MESSAGES {
                    let sge = b.mr.sge((posted as usize % 256) * 64, 64);
                    b.qp.rq().unwrap().post(posted, &[sge]).unwrap();
                    posted += 1;
                }
            } else {
                sends_done += 1;
            }
        }
    }
    let tx = sender.join().unwrap();
    let (rx, texts) = receiver.join().unwrap();
    let want = |p: char| {
        (0..MESSAGES)
            .map(|i| format!("{p}{i:05}"))
            .collect::<Vec<_>>()
    };
    assert_eq!(got, want('a'));
    assert_eq!(texts, want('b'));
    // The halves join back into the QP.
    let qp = tx.join(rx).unwrap();
    assert_eq!(qp.state(), QpState::Rts);
}

#[test]
fn each_half_keeps_the_qp_alive_and_the_last_destroys_it() {
    let (a, mut b) = setup();
    let Side {
        ctx,
        qp,
        mut recv_cq,
        mr,
        ..
    } = a;
    let qpn = qp.qpn();
    let (tx, mut rx) = qp.split();
    drop(tx);
    assert!(
        ctx.backend().nic().qp_state(qpn).is_ok(),
        "the receiver keeps it"
    );
    rx.rq().unwrap().post(9, &[mr.sge(0, 64)]).unwrap();
    b.qp.sq()
        .post(
            1,
            SendOp::Send,
            Data::Inline(b"still here"),
            SendFlags::SIGNALED,
        )
        .unwrap();
    let c = poll_n(&mut recv_cq, 1)[0];
    assert_eq!((c.wr_id, c.status, c.byte_len), (9, Status::Success, 10));
    assert_eq!(poll_n(&mut b.cq, 1)[0].status, Status::Success);
    drop(rx);
    assert!(
        ctx.backend().nic().qp_state(qpn).is_err(),
        "destroyed with the last half"
    );
}

#[test]
fn halves_of_different_qps_do_not_join() {
    let (a, b) = setup();
    let (tx, _rx) = a.qp.split();
    let (_btx, brx) = b.qp.split();
    let (tx, brx) = tx.join(brx).unwrap_err();
    // Handed back whole.
    assert_eq!((tx.state(), brx.state()), (QpState::Rts, QpState::Rts));
}
