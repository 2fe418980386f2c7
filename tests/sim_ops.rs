//! READ, atomics and SRQ end to end (bodies shared with the hardware tests,
//! `common::bodies`), and, on the model only, what atomics guarantee against the CPU.

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

/// The guarantee the crate documents for atomics: atomic against other atomics through the
/// HCA, not against the CPU. Without PCIe AtomicOps (the model's default) a CPU store into
/// the target between the NIC's DMA read and DMA write is lost; with them it is not.
#[test]
fn a_cpu_store_racing_a_nic_atomic_is_lost_without_pcie_atomicops() {
    use mlx5_direct::{Data, SendFlags, SendOp, Status};
    for (atomic_ops, result, target) in [(false, 10, 11), (true, 100, 101)] {
        let nic = NicConfig {
            pcie_atomic_ops: atomic_ops,
            ..NicConfig::default()
        };
        let (mut a, b) = common::rig_pair(&(Fabric::new(), nic));
        b.mr.write(8, &10u64.to_ne_bytes());
        b.ctx
            .backend()
            .nic()
            .inject(mlx5_hw::Fault::HostStoreInAtomic { value: 100 });
        let op = SendOp::FetchAdd {
            remote: b.mr.remote(8),
            add: 1,
        };
        let sge = a.mr.sge(0, 8);
        a.qp.sq()
            .post(1, op, Data::Sges(&[sge]), SendFlags::SIGNALED)
            .unwrap();
        assert_eq!(common::poll_n(&mut a, 1)[0].status, Status::Success);
        assert_eq!(
            (a.mr.read_u64(0), b.mr.read_u64(8)),
            (result, target),
            "AtomicOps {atomic_ops}"
        );
    }
}

/// The three kinds of SEND a receive can complete: plain (neither immediate nor rkey),
/// with immediate, and with invalidate of a key that allows it (the model's stand-in for a
/// fast-registration key): its rkey is reported as `invalidated_rkey`, never as `imm`.
#[test]
fn a_send_with_invalidate_reports_the_rkey_it_invalidated() {
    use mlx5_direct::{Access, Data, SendFlags, SendOp, Status, WcOpcode};
    let (mut a, mut b) = common::pair();
    let target = b.pd.alloc_mr(4096, Access::ALL).unwrap();
    b.ctx
        .backend()
        .nic()
        .allow_remote_invalidate(target.rkey())
        .unwrap();
    for i in 0..3 {
        let sge = b.mr.sge(64 * i, 64);
        b.qp.rq().unwrap().post(10 + i as u64, &[sge]).unwrap();
    }
    let ops = [
        SendOp::Send,
        SendOp::SendImm(0x0102_0304),
        SendOp::SendInv(target.rkey()),
    ];
    for (i, op) in ops.into_iter().enumerate() {
        a.qp.sq()
            .post(i as u64, op, Data::Inline(b"sent"), SendFlags::SIGNALED)
            .unwrap();
    }
    let sent: Vec<Status> = common::poll_n(&mut a, 3).iter().map(|c| c.status).collect();
    assert_eq!(sent, [Status::Success; 3]);
    let got: Vec<_> = common::poll_n(&mut b, 3)
        .iter()
        .map(|c| {
            let kind = (c.imm(), c.invalidated_rkey(), c.pkey_index());
            (c.wr_id, c.opcode, c.status, c.byte_len, kind)
        })
        .collect();
    let recv = (WcOpcode::Recv, Status::Success, 4);
    assert_eq!(
        got,
        [
            (10, recv.0, recv.1, recv.2, (None, None, 0)),
            (11, recv.0, recv.1, recv.2, (Some(0x0102_0304), None, 0)),
            (12, recv.0, recv.1, recv.2, (None, Some(target.rkey()), 0)),
        ]
    );
}

/// A ring of receives outstanding at once, each list filling every scatter entry: each
/// keeps its own entries (a terminator after a full list would land on the next slot's
/// first entry, or wrap onto slot 0's), and `post_many` says how many it posted.
#[test]
fn full_receive_lists_fill_the_ring_without_touching_their_neighbours() {
    use mlx5_direct::{Data, QpConfig, SendFlags, SendOp, Sge, Status};
    let config = QpConfig {
        rq_wqes: 4,
        max_recv_sge: 2,
        ..QpConfig::default()
    };
    let (mut a, mut b) = common::pair_with(&config);
    let rq = b.qp.rq().unwrap();
    assert_eq!((rq.capacity(), rq.max_sge()), (4, 2));
    let lists: Vec<[Sge; 2]> = (0..4)
        .map(|i| [b.mr.sge(256 * i, 8), b.mr.sge(256 * i + 128, 8)])
        .collect();
    let wrs = lists.iter().enumerate().map(|(i, l)| (i as u64, &l[..]));
    assert_eq!(rq.post_many(wrs), Ok(4));
    for i in 0..4u8 {
        a.qp.sq()
            .post(
                i.into(),
                SendOp::Send,
                Data::Inline(&[i + 1; 16]),
                SendFlags::SIGNALED,
            )
            .unwrap();
    }
    let sent: Vec<Status> = common::poll_n(&mut a, 4).iter().map(|c| c.status).collect();
    assert_eq!(sent, [Status::Success; 4]);
    let got: Vec<_> = common::poll_n(&mut b, 4)
        .iter()
        .map(|c| (c.wr_id, c.status, c.byte_len))
        .collect();
    let want: Vec<_> = (0..4).map(|i| (i, Status::Success, 16)).collect();
    assert_eq!(got, want);
    for i in 0..4usize {
        let mut slot = [0u8; 136];
        b.mr.read(256 * i, &mut slot);
        let fill = i as u8 + 1;
        let want = [[fill; 8].as_slice(), &[0; 120], &[fill; 8]].concat();
        assert_eq!(slot[..], want[..], "receive {i}");
    }
}
