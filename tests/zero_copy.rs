//! Reading received messages in place (`MemoryRegion::bytes`), as the crate docs show: a
//! ring of receive buffers in a region without remote rights, each message borrowed after
//! its completion and its buffer posted again only after the borrow ends.

use mlx5_direct::backend::sim::{Fabric, NicConfig, Sim};
use mlx5_direct::{
    Access, Completion, ConnectOptions, Context, Data, QpConfig, SendFlags, SendOp, Status,
    WcOpcode,
};

const SLOTS: usize = 8;
const SLOT: usize = 256;

#[test]
fn each_message_is_read_where_it_landed_then_its_buffer_is_posted_again() {
    let fabric = Fabric::new();
    let (a, b) = (
        Context::new(Sim::on_fabric(&fabric, NicConfig::default())),
        Context::new(Sim::on_fabric(&fabric, NicConfig::default())),
    );
    let (pd_a, pd_b) = (a.alloc_pd().unwrap(), b.alloc_pd().unwrap());
    let (mut cq_a, mut cq_b) = (a.create_cq(64, 64).unwrap(), b.create_cq(64, 64).unwrap());
    let mut qp_a = pd_a.create_qp(&cq_a, &cq_a, &QpConfig::default()).unwrap();
    let mut qp_b = pd_b.create_qp(&cq_b, &cq_b, &QpConfig::default()).unwrap();
    qp_a.connect(&qp_b.endpoint().unwrap(), &ConnectOptions::default())
        .unwrap();
    qp_b.connect(&qp_a.endpoint().unwrap(), &ConnectOptions::default())
        .unwrap();
    // No remote rights: no peer can write the buffers while they are lent out.
    let buffers = pd_b.alloc_mr(SLOTS * SLOT, Access::LOCAL_WRITE).unwrap();
    let source = pd_a.alloc_mr(SLOT, Access::LOCAL_WRITE).unwrap();
    for slot in 0..SLOTS {
        let sge = buffers.sge(slot * SLOT, SLOT as u32);
        qp_b.rq().unwrap().post(slot as u64, &[sge]).unwrap();
    }
    let mut done = [Completion::default(); 4];
    for i in 0..3 * SLOTS {
        // Messages of different lengths, from a gather entry (not inline).
        let message: Vec<u8> = (0..16 + 7 * i).map(|k| (i * 31 + k) as u8).collect();
        source.write(0, &message);
        let sge = source.sge(0, message.len() as u32);
        qp_a.sq()
            .post(
                i as u64,
                SendOp::Send,
                Data::Sges(&[sge]),
                SendFlags::SIGNALED,
            )
            .unwrap();
        assert_eq!(cq_a.poll(&mut done), 1);
        assert_eq!(done[0].status, Status::Success);
        assert_eq!(cq_b.poll(&mut done), 1);
        let c = done[0];
        let slot = i % SLOTS;
        assert_eq!(
            (c.wr_id, c.opcode, c.status, c.byte_len as usize),
            (slot as u64, WcOpcode::Recv, Status::Success, message.len())
        );
        // SAFETY: receive `slot` completed (polled above) and is posted again only after
        // `msg`'s last use; the region grants no remote access and nothing here writes it.
        let msg = unsafe { buffers.bytes(slot * SLOT, c.byte_len as usize) };
        assert_eq!(msg, &message[..]);
        let mut copy = vec![0u8; msg.len()];
        buffers.read(slot * SLOT, &mut copy);
        assert_eq!(copy, msg, "the borrow and the copy agree");
        let sge = buffers.sge(slot * SLOT, SLOT as u32);
        qp_b.rq().unwrap().post(slot as u64, &[sge]).unwrap();
    }
}

#[test]
#[should_panic(expected = "outside memory")]
fn a_range_outside_the_region_panics() {
    let ctx = Context::new(Sim::new());
    let mr = ctx
        .alloc_pd()
        .unwrap()
        .alloc_mr(64, Access::LOCAL_WRITE)
        .unwrap();
    // SAFETY: nothing writes the region; the call panics before lending anything.
    let _ = unsafe { mr.bytes(60, 8) };
}
