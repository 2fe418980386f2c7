//! Completion events: an armed CQ raises one event per arm; an event-driven ping-pong.

use std::time::Duration;

use mlx5_direct::backend::Backend;
use mlx5_direct::{
    Access, CompChannel, Completion, ConnectOptions, Context, Cq, Data, MemoryRegion, Qp, QpConfig,
    SendFlags, SendOp, Status,
};

use super::super::{poll_n, rig_pair, Rig};

/// Event mode: an armed CQ raises one event for the next CQE; once the event is taken and
/// the CQ re-armed (nothing else to acknowledge), the next CQE raises another.
pub fn armed_cq_raises_one_event_per_arm<R: Rig>(rig: &R) {
    let (mut a, b) = rig_pair(rig);
    let remote = b.mr.remote(0);
    for wr_id in 1..=2 {
        a.cq.arm(false);
        a.qp.sq()
            .post(
                wr_id,
                SendOp::Write(remote),
                Data::Inline(b"event"),
                SendFlags::SIGNALED,
            )
            .unwrap();
        assert_eq!(
            a.cq.wait_event(Duration::from_secs(5)),
            Ok(true),
            "arm {wr_id}"
        );
        let c = poll_n(&mut a, 1)[0];
        assert_eq!((c.wr_id, c.status), (wr_id, Status::Success));
    }
    a.qp.sq()
        .post(
            3,
            SendOp::Write(remote),
            Data::Inline(b"quiet"),
            SendFlags::SIGNALED,
        )
        .unwrap();
    poll_n(&mut a, 1);
    assert_eq!(
        a.cq.wait_event(Duration::from_millis(50)),
        Ok(false),
        "an unarmed CQ raises no event"
    );
    assert_eq!(a.cq.channel().try_next(), Ok(None));
}

/// One end of [`event_driven_ping_pong`]: a completion channel shared by a send CQ and a
/// receive CQ, a QP on them and a buffer; nothing but the public API.
struct EventEnd<B: Backend> {
    channel: CompChannel<B>,
    send_cq: Cq<B>,
    recv_cq: Cq<B>,
    qp: Qp<B>,
    mr: MemoryRegion<B>,
}

impl<B: Backend> EventEnd<B> {
    fn new(ctx: &Context<B>) -> Self {
        let pd = ctx.alloc_pd().unwrap();
        let channel = ctx.create_comp_channel().unwrap();
        let mut send_cq = ctx.create_cq_on(&channel, 64, 64).unwrap();
        let mut recv_cq = ctx.create_cq_on(&channel, 64, 64).unwrap();
        let qp = pd
            .create_qp(&send_cq, &recv_cq, &QpConfig::default())
            .unwrap();
        let mr = pd.alloc_mr(4096, Access::ALL).unwrap();
        send_cq.arm(false);
        recv_cq.arm(false);
        EventEnd {
            channel,
            send_cq,
            recv_cq,
            qp,
            mr,
        }
    }

    fn post_receive(&mut self) {
        let sge = self.mr.sge(0, 64);
        self.qp.rq().unwrap().post(0, &[sge]).unwrap();
    }

    fn send(&mut self, wr_id: u64, text: &[u8]) {
        self.qp
            .sq()
            .post(wr_id, SendOp::Send, Data::Inline(text), SendFlags::SIGNALED)
            .unwrap();
    }

    /// Sleeps on the channel until the receive CQ holds a message, handling every event
    /// the way an event loop does: re-arm the CQ it names, then poll that CQ dry. Returns
    /// the message and how many send completions came meanwhile.
    fn wait_for_message(&mut self) -> (Vec<u8>, usize) {
        let mut sends = 0;
        let mut done = [Completion::default(); 8];
        loop {
            let cqn = self
                .channel
                .wait(Duration::from_secs(10))
                .unwrap()
                .expect("a completion event within 10 s");
            let cq = if cqn == self.send_cq.cqn() {
                &mut self.send_cq
            } else {
                assert_eq!(cqn, self.recv_cq.cqn(), "an event of a CQ on the channel");
                &mut self.recv_cq
            };
            cq.arm(false);
            let n = cq.poll(&mut done);
            assert!(
                done[..n].iter().all(|c| c.status.is_ok()),
                "{:?}",
                &done[..n]
            );
            if cqn == self.send_cq.cqn() {
                sends += n;
                continue;
            }
            assert_eq!(n, 1, "one message at a time: {:?}", &done[..n]);
            let mut text = vec![0u8; done[0].byte_len as usize];
            self.mr.read(0, &mut text);
            return (text, sends);
        }
    }
}

/// rc_pingpong with `-e` (events instead of busy polling), written once for every backend:
/// each end sleeps on a completion channel its send and receive CQs share, wakes for each
/// event, re-arms and polls the CQ the event names. 100 round trips, each message checked.
pub fn event_driven_ping_pong<R: Rig>(rig: &R) {
    let (a, b) = (
        rig.side(&QpConfig::default()),
        rig.side(&QpConfig::default()),
    );
    let (mut ping, mut pong) = (EventEnd::new(&a.ctx), EventEnd::new(&b.ctx));
    let (ep_ping, ep_pong) = (ping.qp.endpoint().unwrap(), pong.qp.endpoint().unwrap());
    ping.qp
        .connect(&ep_pong, &ConnectOptions::default())
        .unwrap();
    pong.qp
        .connect(&ep_ping, &ConnectOptions::default())
        .unwrap();
    let (mut ping_sends, mut pong_sends) = (0, 0);
    for round in 0..100u64 {
        pong.post_receive();
        ping.post_receive();
        let text = format!("ping {round}");
        ping.send(round, text.as_bytes());
        let (got, n) = pong.wait_for_message();
        assert_eq!(got, text.as_bytes());
        pong_sends += n;
        let reply = format!("pong {round}");
        pong.send(round, reply.as_bytes());
        let (got, n) = ping.wait_for_message();
        assert_eq!(got, reply.as_bytes());
        ping_sends += n;
    }
    // Every send completion comes through an event too (the last ones may still wait).
    for (end, mut counted) in [(&mut ping, ping_sends), (&mut pong, pong_sends)] {
        let mut done = [Completion::default(); 8];
        while counted < 100 {
            assert_eq!(end.send_cq.wait_event(Duration::from_secs(10)), Ok(true));
            end.send_cq.arm(false);
            counted += end.send_cq.poll(&mut done);
        }
        assert_eq!(counted, 100);
    }
}
