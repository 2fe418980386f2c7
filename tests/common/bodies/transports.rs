//! The other transports and features: DC, UC, device-memory slots, on-demand paging, a UD
//! answer to the sender of a receive.

use mlx5_direct::{
    Access, AhAttr, Completion, ConnectOptions, Data, DmSlots, GlobalRoute, PostError, QpConfig,
    QpState, SendFlags, SendOp, SendWr, Status, Transport, WcOpcode, UD_GRH_BYTES,
};

use super::super::{assert_empty, connect, poll_n, rig_pair, Rig, Side};
use super::*;

/// A DCI WRITEs to a DCT, READs it back and SENDs to the DCT's SRQ; the target's completion
/// names the DCT and the DCI. `sgid_index`: the GID index a RoCE address handle uses (the
/// address is global only when the target's port has no LID). With `streams`, the DCI has
/// those stream channels and every operation goes on its last stream.
pub fn dc_operations_reach_a_dct<R: Rig>(
    rig: &R,
    sgid_index: u8,
    streams: Option<mlx5_direct::DciStreams>,
) {
    const DC_KEY: u64 = 0xffee_ddcc;
    let dci_config = QpConfig {
        transport: Transport::Dci,
        dci_streams: streams,
        ..QpConfig::default()
    };
    let mut a = rig.side(&dci_config);
    a.qp.activate_dci(&ConnectOptions::default()).unwrap();
    let mut t = rig.side(&QpConfig::default());
    let mut srq = t.pd.create_srq(16, 1).unwrap();
    let mut dct = t.pd.create_dct(&t.cq, &srq, DC_KEY).unwrap();
    dct.activate(t.qp.port(), Access::ALL, &ConnectOptions::default())
        .unwrap();
    let ep = t.qp.endpoint().unwrap();
    let ah =
        a.pd.create_ah(&AhAttr {
            port: a.qp.port(),
            dlid: ep.lid,
            grh: (ep.lid == 0).then_some(GlobalRoute {
                dgid: ep.gid,
                sgid_index,
                hop_limit: 64,
                ..GlobalRoute::default()
            }),
            ..AhAttr::default()
        })
        .unwrap();
    let last = streams.map_or(0, |s| s.count() - 1) as u16;
    let dest = ah.dc_dest(dct.number().unwrap(), DC_KEY).on_stream(last);
    let signaled = |wr_id, op, data| SendWr {
        wr_id,
        op,
        data,
        flags: SendFlags::SIGNALED,
    };
    a.qp.sq()
        .post_dc(
            signaled(1, SendOp::Write(t.mr.remote(8)), Data::Inline(b"dc write")),
            &dest,
        )
        .unwrap();
    let into = [a.mr.sge(64, 8)];
    let read = signaled(2, SendOp::Read(t.mr.remote(8)), Data::Sges(&into));
    a.qp.sq().post_dc(read, &dest).unwrap();
    srq.post(9, &[t.mr.sge(256, 64)]).unwrap();
    a.qp.sq()
        .post_dc(
            signaled(3, SendOp::Send, Data::Inline(b"to the srq")),
            &dest,
        )
        .unwrap();
    let cs = poll_n(&mut a, 3);
    let got: Vec<_> = cs.iter().map(|c| (c.wr_id, c.opcode, c.status)).collect();
    assert_eq!(
        got,
        [
            (1, WcOpcode::RdmaWrite, Status::Success),
            (2, WcOpcode::RdmaRead, Status::Success),
            (3, WcOpcode::Send, Status::Success),
        ]
    );
    let mut back = [0u8; 8];
    a.mr.read(64, &mut back);
    assert_eq!(&back, b"dc write");
    let r = poll_n(&mut t, 1)[0];
    assert_eq!(
        (r.wr_id, r.qpn, r.src_qp(), r.byte_len, r.opcode),
        (9, dct.number().unwrap(), a.qp.qpn(), 10, WcOpcode::Recv)
    );
    let mut landed = [0u8; 10];
    t.mr.read(256, &mut landed);
    assert_eq!(&landed, b"to the srq");
}

/// UC: WRITE, WRITE with immediate and SEND with immediate complete on both sides (the
/// requester without waiting for an ACK), and READ and atomics are refused at post.
pub fn uc_operations_complete_and_read_is_refused<R: Rig>(rig: &R) {
    let config = QpConfig {
        transport: Transport::Uc,
        ..QpConfig::default()
    };
    let (mut a, mut b) = (rig.side(&config), rig.side(&config));
    connect(&mut a, &mut b);
    assert_eq!((a.qp.state(), b.qp.state()), (QpState::Rts, QpState::Rts));
    let remote = b.mr.remote(512);
    let signaled = SendFlags::SIGNALED;
    a.qp.sq()
        .post(
            1,
            SendOp::Write(remote),
            Data::Inline(b"uc write"),
            signaled,
        )
        .unwrap();
    b.qp.rq().unwrap().post(10, &[b.mr.sge(0, 64)]).unwrap();
    b.qp.rq().unwrap().post(11, &[b.mr.sge(64, 64)]).unwrap();
    let imm_at = b.mr.remote(1024);
    a.qp.sq()
        .post(
            2,
            SendOp::WriteImm(imm_at, 0x1234),
            Data::Inline(b"wi"),
            signaled,
        )
        .unwrap();
    a.qp.sq()
        .post(
            3,
            SendOp::SendImm(0x5678),
            Data::Inline(b"uc send"),
            signaled,
        )
        .unwrap();
    let cs = poll_n(&mut a, 3);
    assert!(cs.iter().all(|c| c.status == Status::Success), "{cs:?}");
    let rs = poll_n(&mut b, 2);
    assert_eq!(
        (rs[0].wr_id, rs[0].opcode, rs[0].imm(), rs[0].byte_len),
        (10, WcOpcode::RecvRdmaWithImm, Some(0x1234), 2)
    );
    assert_eq!(
        (rs[1].wr_id, rs[1].opcode, rs[1].imm(), rs[1].byte_len),
        (11, WcOpcode::Recv, Some(0x5678), 7)
    );
    let mut buf = [0u8; 8];
    b.mr.read(512, &mut buf);
    assert_eq!(&buf, b"uc write");
    let mut buf = [0u8; 7];
    b.mr.read(64, &mut buf);
    assert_eq!(&buf, b"uc send");
    let sge = a.mr.sge(0, 8);
    let refused = Err(PostError::WrongTransport {
        transport: Transport::Uc,
    });
    let read = SendOp::Read(remote);
    let fadd = SendOp::FetchAdd { remote, add: 1 };
    for op in [read, fadd] {
        assert_eq!(a.qp.sq().post(4, op, Data::Sges(&[sge]), signaled), refused);
    }
    assert_empty(&mut a);
}

/// The payload of the `i`th message of the device-memory body: `len` bytes counting from `i`.
fn dm_payload(i: u8, len: usize) -> Vec<u8> {
    (0..len)
        .map(|k| (k as u8).wrapping_mul(3).wrapping_add(i))
        .collect()
}

/// A send queue's device-memory slots (4 of 256 bytes on 1 KiB of device memory): WRITEs
/// and a SEND of payloads copied into the slots land byte for byte; a fifth post while the
/// four WQEs have not been seen complete is refused (a slot is never reused before its WQE
/// completed, even unsignaled ones: they retire with the signaled one after them), and
/// succeeds once the completion is polled. Needs a device with at least 1 KiB of device
/// memory.
pub fn device_memory_slots_carry_payloads<R: Rig>(rig: &R) -> (Side<R::B>, Side<R::B>) {
    let (mut a, mut b) = rig_pair(rig);
    let dm = a.ctx.alloc_dm(1024).unwrap();
    assert_eq!(dm.len(), 1024);
    let region = dm.register(&a.pd, 0, 1024, Access::NONE).unwrap();
    let slots = DmSlots::new(region, 256).unwrap();
    assert_eq!((slots.count(), slots.slot_size()), (4, 256));
    let write = |at: usize| SendOp::Write(b.mr.remote(at));
    let sq = a.qp.sq();
    assert_eq!(
        sq.post_dm(9, write(0), &[1; 8], SendFlags::SIGNALED),
        Err(PostError::NoDmSlots)
    );
    sq.attach_dm(slots).unwrap();
    // Three unsignaled WRITEs and a signaled one, of lengths not all multiples of 8.
    for i in 0..4u8 {
        let flags = if i == 3 {
            SendFlags::SIGNALED
        } else {
            SendFlags::UNSIGNALED
        };
        let payload = dm_payload(i, 200 + 17 * usize::from(i));
        sq.post_dm(u64::from(i), write(1024 * usize::from(i)), &payload, flags)
            .unwrap();
    }
    assert_eq!(sq.dm_slots().unwrap().in_flight(), 4);
    assert_eq!(
        sq.post_dm(4, write(4096), &[4; 64], SendFlags::SIGNALED),
        Err(PostError::DmSlotsFull { slots: 4 })
    );
    assert_eq!(
        sq.post_dm(4, write(4096), &[4; 257], SendFlags::SIGNALED),
        Err(PostError::DmPayloadTooLarge {
            len: 257,
            slot: 256
        })
    );
    assert_eq!(
        sq.post_dm(
            4,
            SendOp::Read(b.mr.remote(0)),
            &[4; 8],
            SendFlags::SIGNALED
        ),
        Err(PostError::InlineNotAllowed)
    );
    let c = poll_n(&mut a, 1);
    assert_eq!((c[0].wr_id, c[0].status), (3, Status::Success));
    for i in 0..4u8 {
        let want = dm_payload(i, 200 + 17 * usize::from(i));
        assert_eq!(
            read(&b, 1024 * usize::from(i), want.len()),
            want,
            "message {i}"
        );
    }
    // Every slot is free again: a SEND of 100 bytes goes through slot 0.
    b.qp.rq().unwrap().post(7, &[b.mr.sge(8192, 256)]).unwrap();
    let payload = dm_payload(9, 100);
    a.qp.sq()
        .post_dm(5, SendOp::Send, &payload, SendFlags::SIGNALED)
        .unwrap();
    assert_eq!(a.qp.sq().dm_slots().unwrap().in_flight(), 1);
    let c = poll_n(&mut a, 1);
    assert_eq!((c[0].wr_id, c[0].status), (5, Status::Success));
    let r = poll_n(&mut b, 1);
    assert_eq!(
        (r[0].wr_id, r[0].status, r[0].byte_len),
        (7, Status::Success, 100)
    );
    assert_eq!(read(&b, 8192, 100), payload);
    assert_empty(&mut a);
    (a, b)
}

/// On-demand regions (`Access::ON_DEMAND`): a WRITE target registered on demand and
/// prefetched (for writing: it has LOCAL_WRITE) takes a WRITE; a source registered on demand
/// without LOCAL_WRITE, prefetched for reading (the kernel refuses a write prefetch of a
/// region that is not writable), is gathered by a second WRITE; a WRITE into a target never
/// prefetched lands after its fault. Needs a device with RC on-demand paging.
pub fn on_demand_regions_prefetch_and_carry_writes<R: Rig>(rig: &R) {
    const LEN: usize = 16 << 10;
    let (mut a, b) = rig_pair(rig);
    let on_demand = |access: Access| Access(access.0 | Access::ON_DEMAND.0);
    let target = b.pd.alloc_mr(LEN, on_demand(Access::ALL)).unwrap();
    target.prefetch(0, LEN).unwrap();
    let source = a.pd.alloc_mr(LEN, on_demand(Access::NONE)).unwrap();
    source.write(0, &[0x3c; LEN]);
    source.prefetch(0, LEN).unwrap();
    let cold = b.pd.alloc_mr(LEN, on_demand(Access::ALL)).unwrap();
    a.mr.write(0, &[0xa5; 64]);
    let writes = [
        (a.mr.sge(0, 64), target.remote(LEN - 64)),
        (source.sge(0, LEN as u32), target.remote(0)),
        (a.mr.sge(0, 64), cold.remote(4096)),
    ];
    for (i, (sge, to)) in writes.into_iter().enumerate() {
        a.qp.sq()
            .post(
                i as u64,
                SendOp::Write(to),
                Data::Sges(&[sge]),
                SendFlags::SIGNALED,
            )
            .unwrap();
        let c = poll_n(&mut a, 1)[0];
        assert_eq!((c.wr_id, c.status), (i as u64, Status::Success));
    }
    let mut back = [0u8; 64];
    target.read(LEN - 64, &mut back);
    assert_eq!(back, [0x3c; 64], "the second WRITE covered the first");
    cold.read(4096, &mut back);
    assert_eq!(back, [0xa5; 64]);
}

/// What [`ud_answers_the_sender_of_a_receive`] saw.
pub struct UdAnswer {
    /// The request's address (from the sender).
    pub request: AhAttr,
    /// The answer's address, from the receive.
    pub answer: AhAttr,
    /// The sender's GID at the request's source index (index 0 without a route).
    pub sender_gid: [u8; 16],
    /// The request's receive completion and its GRH area.
    pub received: Completion,
    pub grh: [u8; UD_GRH_BYTES],
}

/// A UD server answers the sender of a datagram through an address handle made from the
/// receive's completion and its GRH area (`ProtectionDomain::create_ah_from_recv`,
/// rdma-core's `ibv_create_ah_from_wc`): the answer reaches the sender's QP. The request
/// goes from SGID index `route` to the receiver's GID of that index with a global route
/// (hop limit 33, traffic class 0x48, flow label 0x5a5a5), or, with `None`, without one on
/// InfiniBand and between the ports' GIDs on RoCE.
pub fn ud_answers_the_sender_of_a_receive<R: Rig>(rig: &R, route: Option<u8>) -> UdAnswer {
    const QKEY: u32 = 0x1100_2233;
    let config = QpConfig {
        transport: Transport::Ud,
        ..QpConfig::default()
    };
    let (mut a, mut b) = (rig.side(&config), rig.side(&config));
    for s in [&mut a, &mut b] {
        s.qp.activate_ud(1, QKEY).unwrap();
    }
    let (pa, pb) = (a.ctx.port(1).unwrap(), b.ctx.port(1).unwrap());
    let sgid_index = route.or(pa.roce.then_some(pa.gid_index));
    let request = AhAttr {
        port: 1,
        dlid: pb.lid,
        sl: 5,
        // To the receiver's GID of the same index as the source's (same type and address
        // family) when one is named, else its port's.
        grh: sgid_index.map(|sgid_index| GlobalRoute {
            dgid: route.map_or(pb.gid, |i| b.ctx.query_gid(1, i.into()).unwrap().gid),
            flow_label: 0x5a5a5,
            sgid_index,
            hop_limit: 33,
            traffic_class: 0x48,
        }),
        ..AhAttr::default()
    };
    let ah = a.pd.create_ah(&request).unwrap();
    let datagram = |wr_id, payload: &'static [u8]| SendWr {
        wr_id,
        op: SendOp::Send,
        data: Data::Inline(payload),
        flags: SendFlags::SIGNALED,
    };
    let into_b = [b.mr.sge(0, UD_GRH_BYTES as u32 + 64)];
    b.qp.rq().unwrap().post(1, &into_b).unwrap();
    a.qp.sq()
        .post_ud(datagram(2, b"ping"), &ah.dest(b.qp.qpn(), QKEY))
        .unwrap();
    assert_eq!(poll_n(&mut a, 1)[0].status, Status::Success);
    let received = poll_n(&mut b, 1)[0];
    let src_qp = received.src_qp();
    assert_eq!(
        (received.wr_id, received.status, src_qp),
        (1, Status::Success, a.qp.qpn())
    );
    let mut grh = [0u8; UD_GRH_BYTES];
    b.mr.read(0, &mut grh);
    let answer = b.pd.create_ah_from_recv(1, &received, &grh).unwrap();
    let into_a = [a.mr.sge(4096, UD_GRH_BYTES as u32 + 64)];
    a.qp.rq().unwrap().post(3, &into_a).unwrap();
    b.qp.sq()
        .post_ud(datagram(4, b"pong"), &answer.dest(src_qp, QKEY))
        .unwrap();
    assert_eq!(poll_n(&mut b, 1)[0].status, Status::Success);
    let r = poll_n(&mut a, 1)[0];
    assert_eq!(
        (r.wr_id, r.status, r.src_qp()),
        (3, Status::Success, b.qp.qpn())
    );
    assert_eq!(read(&a, 4096 + UD_GRH_BYTES, 4), b"pong");
    UdAnswer {
        request,
        answer: *answer.attr(),
        sender_gid: a
            .ctx
            .query_gid(1, sgid_index.unwrap_or(0).into())
            .unwrap()
            .gid,
        received,
        grh,
    }
}
