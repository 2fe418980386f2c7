//! Every RC operation end to end, with data and CQE fields checked.

mod common;
use common::*;
use mlx5_hw::{Fabric, Nic, NicConfig, QpState};

#[test]
fn rdma_write_inline_signaled() {
    let (_f, mut a, mut b) = pair();
    let dst = b.data(0x100);
    let idx = a.write_inline(dst, b.key, b"hello, model!", SIGNALED);
    a.ring();
    assert_eq!(b.read_data(0x100, 13), b"hello, model!");
    let c = a.poll_send().expect("CQE");
    assert_eq!(
        (c.opcode, c.send_opcode(), c.qpn(), c.wqe_counter),
        (REQ, WRITE, a.qp.qpn, idx)
    );
    assert!(a.poll_send().is_none());
    assert!(b.poll_recv().is_none());
}

#[test]
fn rdma_write_gather_two_segments_unsignaled() {
    let (_f, mut a, b) = pair();
    a.write_data(0, &[1; 40]);
    a.write_data(0x200, &[2; 24]);
    let (s1, s2, dst) = (a.data(0), a.data(0x200), b.data(0));
    a.post_op(
        WRITE,
        0,
        0,
        0,
        &[
            raddr_seg(dst, b.key),
            data_seg(40, a.key, s1),
            data_seg(24, a.key, s2),
        ],
    );
    a.ring();
    let mut want = vec![1u8; 40];
    want.extend_from_slice(&[2; 24]);
    assert_eq!(b.read_data(0, 64), want);
    assert!(a.poll_send().is_none(), "unsignaled: no CQE");
}

#[test]
fn send_and_send_imm_into_receive() {
    let (_f, mut a, mut b) = pair();
    b.recv_at(0x1000, 64);
    b.recv_at(0x2000, 64);
    a.write_data(0, b"payload-bytes");
    let src = a.data(0);
    a.post_op(
        SEND,
        0,
        SIGNALED | SOLICITED,
        0,
        &[data_seg(13, a.key, src)],
    );
    a.post_op(SEND_IMM, 0, SIGNALED, 0xdeadbeef, &[inline_seg(b"imm!")]);
    a.ring();
    assert_eq!(b.read_data(0x1000, 13), b"payload-bytes");
    assert_eq!(b.read_data(0x2000, 4), b"imm!");
    let r = b.drain_recv();
    assert_eq!(r.len(), 2);
    assert_eq!(
        (r[0].opcode, r[0].byte_cnt, r[0].wqe_counter, r[0].se),
        (RESP_SEND, 13, 0, true)
    );
    assert_eq!(r[0].qpn(), b.qp.qpn);
    // Source QP and LID are UD fields: 0 on RC.
    assert_eq!((r[0].flags_rqpn, r[0].slid), (0, 0));
    assert_eq!(r[0].srqn, 0);
    assert_eq!(
        (
            r[1].opcode,
            r[1].byte_cnt,
            r[1].wqe_counter,
            r[1].imm,
            r[1].se
        ),
        (RESP_SEND_IMM, 4, 1, 0xdeadbeef, false)
    );
    let s = a.drain_send();
    assert_eq!(
        s.iter()
            .map(|c| (c.send_opcode(), c.wqe_counter))
            .collect::<Vec<_>>(),
        vec![(SEND, 0), (SEND_IMM, 1)]
    );
}

#[test]
fn send_scatters_over_several_receive_segments() {
    let (_f, mut a, mut b) = pair();
    let (r1, r2) = (b.data(0x100), b.data(0x300));
    let k = b.key;
    b.post_recv(&[(r1, 5, k), (r2, 100, k)]);
    a.post_op(SEND, 0, SIGNALED, 0, &[inline_seg(b"0123456789")]);
    a.ring();
    assert_eq!(b.read_data(0x100, 5), b"01234");
    assert_eq!(b.read_data(0x300, 5), b"56789");
    assert_eq!(b.poll_recv().unwrap().byte_cnt, 10);
}

/// A message that fills a later receive segment to its MR's last byte: that segment's
/// part is checked at its own address and length (inside the MR), not past its end.
#[test]
fn a_later_receive_segment_is_checked_where_it_lies() {
    let (_f, mut a, mut b) = pair();
    let (r1, r2) = (b.data(0x100), b.data(DATA_LEN - 16));
    let k = b.key;
    b.post_recv(&[(r1, 5, k), (r2, 16, k)]);
    let payload: Vec<u8> = (0..21).collect();
    a.post_op(SEND, 0, SIGNALED, 0, &[inline_seg(&payload)]);
    a.ring();
    let r = b.poll_recv().unwrap();
    assert_eq!((r.opcode, r.byte_cnt), (RESP_SEND, 21), "{r:?}");
    assert_eq!(b.read_data(0x100, 5), &payload[..5]);
    assert_eq!(b.read_data(DATA_LEN - 16, 16), &payload[5..]);
}

/// A message of two gather segments scatters on from where the first stopped inside a
/// receive segment, and on into the next receive segment, byte for byte.
#[test]
fn a_second_gather_segment_continues_mid_receive_segment() {
    let (_f, mut a, mut b) = pair();
    let (r1, r2) = (b.data(0x100), b.data(0x300));
    let k = b.key;
    b.post_recv(&[(r1, 10, k), (r2, 10, k)]);
    b.write_data(0x10a, &[0xee; 8]);
    a.write_data(0, b"ABCDE");
    a.write_data(0x40, b"0123456789");
    let (s1, s2) = (a.data(0), a.data(0x40));
    a.post_op(
        SEND,
        0,
        SIGNALED,
        0,
        &[data_seg(5, a.key, s1), data_seg(10, a.key, s2)],
    );
    a.ring();
    assert_eq!(b.poll_recv().unwrap().byte_cnt, 15);
    assert_eq!(b.read_data(0x100, 10), b"ABCDE01234");
    assert_eq!(b.read_data(0x300, 5), b"56789");
    assert_eq!(
        b.read_data(0x10a, 8),
        [0xee; 8],
        "nothing past the first segment"
    );
}

/// Only the receive segments a message fills are key-checked (docs/model.md, "Receives"):
/// a SEND that exactly fills the first segment succeeds past a second whose key names no
/// MR.
#[test]
fn a_receive_segment_the_message_does_not_reach_is_not_checked() {
    let (_f, mut a, mut b) = pair();
    let r1 = b.data(0x100);
    b.post_recv(&[(r1, 10, b.key), (0xdead_0000, 64, 0x7777_7700)]);
    a.post_op(SEND, 0, SIGNALED, 0, &[inline_seg(b"0123456789")]);
    a.ring();
    assert_eq!(b.read_data(0x100, 10), b"0123456789");
    let r = b.poll_recv().unwrap();
    assert_eq!((r.opcode, r.byte_cnt), (RESP_SEND, 10));
    assert_eq!(a.poll_send().unwrap().opcode, REQ);
}

#[test]
fn zero_length_send_consumes_a_receive() {
    let (_f, mut a, mut b) = pair();
    b.recv_at(0, 16);
    a.post_op(SEND, 0, SIGNALED, 0, &[]);
    a.ring();
    let r = b.poll_recv().unwrap();
    assert_eq!((r.opcode, r.byte_cnt), (RESP_SEND, 0));
    assert_eq!(a.poll_send().unwrap().opcode, REQ);
}

#[test]
fn write_imm_consumes_receive_and_reports_immediate() {
    let (_f, mut a, mut b) = pair();
    b.recv_at(0x800, 16);
    let dst = b.data(0x40);
    a.post_op(
        WRITE_IMM,
        0,
        SIGNALED,
        0x01020304,
        &[raddr_seg(dst, b.key), inline_seg(&[7; 20])],
    );
    a.ring();
    assert_eq!(b.read_data(0x40, 20), vec![7; 20]);
    let r = b.poll_recv().unwrap();
    assert_eq!(
        (r.opcode, r.imm, r.byte_cnt, r.wqe_counter),
        (RESP_WR_IMM, 0x01020304, 20, 0)
    );
    assert_eq!(
        b.read_data(0x800, 16),
        vec![0; 16],
        "WRITE_IMM does not scatter into the receive"
    );
}

#[test]
fn rdma_read_into_two_local_segments() {
    let (_f, mut a, mut b) = pair();
    let pattern: Vec<u8> = (0..200u8).collect();
    b.write_data(0x400, &pattern);
    let (src, l1, l2) = (b.data(0x400), a.data(0), a.data(0x1000));
    a.post_op(
        READ,
        0,
        SIGNALED,
        0,
        &[
            raddr_seg(src, b.key),
            data_seg(150, a.key, l1),
            data_seg(50, a.key, l2),
        ],
    );
    a.ring();
    assert_eq!(a.read_data(0, 150), pattern[..150]);
    assert_eq!(a.read_data(0x1000, 50), pattern[150..]);
    let c = a.poll_send().unwrap();
    assert_eq!((c.opcode, c.send_opcode(), c.byte_cnt), (REQ, READ, 200));
}

#[test]
fn atomic_compare_swap_and_fetch_add() {
    let (_f, mut a, mut b) = pair();
    b.mem.put_u64(DATA + 0x80, 41);
    let r = b.data(0x80);
    // (opcode, swap/add, compare, memory after, original returned)
    let steps = [
        (CS, 100, 40, 41, 41), // wrong compare value: no swap
        (CS, 100, 41, 100, 41),
        (FA, 5, 0, 105, 100),
    ];
    for (op, swap_add, compare, mem, orig) in steps {
        let l = a.data(0x10);
        a.post_op(
            op,
            0,
            SIGNALED,
            0,
            &[
                raddr_seg(r, b.key),
                atomic_seg(swap_add, compare),
                data_seg(8, a.key, l),
            ],
        );
        a.ring();
        assert_eq!(b.mem.u64(DATA + 0x80), mem);
        assert_eq!(a.mem.u64(DATA + 0x10), orig);
        let c = a.poll_send().unwrap();
        assert_eq!((c.opcode, c.send_opcode()), (REQ, op));
    }
}

#[test]
fn masked_atomics() {
    let (_f, mut a, mut b) = pair();
    // 8-byte masked CS: compare only the low byte, swap only the second byte.
    b.mem.put_u64(DATA + 0x100, 0x3412);
    let (r, l) = (b.data(0x100), a.data(0));
    let mut args = atomic_seg(0xab00, 0x0012);
    args.extend_from_slice(&atomic_seg(0xff00, 0x00ff));
    let w = a.wqe(
        MASKED_CS,
        0x09,
        SIGNALED,
        0,
        &[raddr_seg(r, b.key), args, data_seg(8, a.key, l)],
    );
    assert_eq!(w.len(), 80, "masked CS 8B is 5 DS");
    a.post(&w);
    a.ring();
    assert_eq!(b.mem.u64(DATA + 0x100), 0xab12);
    // Host order under the default atomic_req_8B_endianness_mode = 1.
    assert_eq!(a.mem.u64(DATA), 0x3412);
    // 4-byte masked FA with a field boundary at bit 15: two 16-bit counters.
    b.write_data(0x200, &0x0001_ffffu32.to_ne_bytes());
    let r = b.data(0x200);
    let mut args = Vec::new();
    for v in [0x0001_0001u32, 0x0000_8000, 0, 0] {
        args.extend_from_slice(&v.to_be_bytes());
    }
    a.post_op(
        MASKED_FA,
        0x08,
        SIGNALED,
        0,
        &[raddr_seg(r, b.key), args, data_seg(4, a.key, l)],
    );
    a.ring();
    assert_eq!(b.read_data(0x200, 4), 0x0002_0000u32.to_ne_bytes());
    // A 4-byte result lands big-endian.
    assert_eq!(a.read_data(0, 4), [0x00, 0x01, 0xff, 0xff]);
    let c = a.drain_send();
    assert_eq!(
        c.iter()
            .map(|c| (c.opcode, c.send_opcode()))
            .collect::<Vec<_>>(),
        vec![(REQ, MASKED_CS), (REQ, MASKED_FA)]
    );
}

#[test]
fn nop_completes() {
    let (_f, mut a, _b) = pair();
    a.post_op(NOP, 0, SIGNALED, 0, &[inline_seg(&[])]);
    a.ring();
    let c = a.poll_send().unwrap();
    assert_eq!((c.opcode, c.send_opcode()), (REQ, NOP));
}

#[test]
fn send_inval_invalidates_the_responder_key() {
    let (_f, mut a, mut b) = pair();
    let base = b.data(0);
    // SAFETY: `b.mem` outlives the key (same Side).
    let extra = unsafe { b.nic.reg_mr(b.pd, base, 64, all_access()) }.unwrap();
    // What a fast-registration MR or a type-2 window would be.
    b.nic.allow_remote_invalidate(extra).unwrap();
    b.recv_at(0x100, 16);
    a.post_op(SEND_INVAL, 0, SIGNALED, extra, &[inline_seg(b"x")]);
    a.ring();
    let r = b.poll_recv().unwrap();
    assert_eq!((r.opcode, r.imm), (RESP_SEND_INV, extra));
    assert_eq!(a.poll_send().unwrap().opcode, REQ);
    // The invalidated key no longer works remotely.
    a.write_inline(base, extra, b"y", SIGNALED);
    a.ring();
    let c = a.poll_send().unwrap();
    assert_eq!((c.opcode, c.syndrome), (REQ_ERR, 0x13));
}

#[test]
fn loopback_on_one_nic() {
    let f = Fabric::new();
    let nic = Nic::new(&f, NicConfig::default());
    let mut a = Side::new(&nic, Cfg::default());
    let mut b = Side::new(&nic, Cfg::default());
    connect_one(&a, &b, Conn::default());
    connect_one(&b, &a, Conn::default());
    b.recv_at(0, 32);
    a.post_op(SEND, 0, SIGNALED, 0, &[inline_seg(b"loop")]);
    a.ring();
    assert_eq!(b.read_data(0, 4), b"loop");
    assert_eq!(b.poll_recv().unwrap().opcode, RESP_SEND);
    assert_eq!(a.poll_send().unwrap().opcode, REQ);
}

#[test]
fn route_by_gid_across_three_nics() {
    let conn = Conn {
        by_gid: true,
        ..Conn::default()
    };
    let f = Fabric::new();
    let nics: Vec<Nic> = (0..3).map(|_| Nic::new(&f, NicConfig::default())).collect();
    // QPs on the first and the third NIC: the GID, not the position, picks the peer.
    let mut a = Side::new(&nics[0], Cfg::default());
    let mut b = Side::new(&nics[2], Cfg::default());
    assert_eq!(b.nic.port(1).unwrap().gid[14..], [0, 3]);
    connect_one(&a, &b, conn);
    connect_one(&b, &a, conn);
    b.recv_at(0, 16);
    a.post_op(SEND, 0, SIGNALED, 0, &[inline_seg(b"gid")]);
    a.ring();
    assert_eq!(b.read_data(0, 3), b"gid");
    assert_eq!(b.poll_recv().unwrap().opcode, RESP_SEND);
    assert_eq!(a.poll_send().unwrap().opcode, REQ);
    assert_eq!(nics[1].stats().packets, 0);
}

#[test]
fn srq_walks_the_linked_list() {
    let cfg = Cfg {
        srq: true,
        ..Cfg::default()
    };
    let (_f, mut a, mut b) = pair_with(cfg, Conn::default(), NicConfig::default());
    b.recv_at(0x100, 32);
    b.recv_at(0x200, 32);
    for p in [b"one", b"two"] {
        a.post_op(SEND, 0, SIGNALED, 0, &[inline_seg(p)]);
        a.ring();
    }
    assert_eq!(b.read_data(0x100, 3), b"one");
    assert_eq!(b.read_data(0x200, 3), b"two");
    let r = b.drain_recv();
    assert_eq!(
        r.iter()
            .map(|c| (c.wqe_counter, c.srqn))
            .collect::<Vec<_>>(),
        vec![(0, b.srqn.unwrap()), (1, b.srqn.unwrap())]
    );
}

#[test]
fn cqe_128_bytes_carries_cqe64_in_second_half() {
    let cfg = Cfg {
        cqe_size: 128,
        ..Cfg::default()
    };
    let (_f, mut a, b) = pair_with(cfg, Conn::default(), NicConfig::default());
    let dst = b.data(0);
    a.write_inline(dst, b.key, b"z", SIGNALED);
    a.ring();
    let c = a.poll_send().unwrap();
    assert_eq!((c.opcode, c.send_opcode()), (REQ, WRITE));
}

#[test]
fn multi_packet_message_advances_psns() {
    let conn = Conn {
        mtu: 256,
        ..Conn::default()
    };
    let (_f, mut a, mut b) = pair_with(Cfg::default(), conn, NicConfig::default());
    b.recv_at(0, 4096);
    let src = a.data(0);
    a.write_data(0, &[9; 1000]);
    for _ in 0..2 {
        a.post_op(
            WRITE,
            0,
            SIGNALED,
            0,
            &[raddr_seg(b.data(0x2000), b.key), data_seg(1000, a.key, src)],
        );
        a.ring();
    }
    assert_eq!(a.nic.stats().packets, 8);
    assert_eq!(a.drain_send().len(), 2);
    assert_eq!(b.state(), QpState::Rts);
}

/// Three SENDs (`full` bytes, one more, none) to a QP that scatters to its `cqe_size`-byte
/// receive CQEs: only the first lands in its CQE (format 1 in bytes 0..32 of a 64-byte CQE,
/// format 2 in the first half of a 128-byte one; kernel `configure_responder_scat_cqe`).
fn scatters_up_to(cqe_size: u32, full: usize, format: u8) {
    let cfg = Cfg {
        cqe_size,
        scatter_to_cqe: true,
        ..Cfg::default()
    };
    let (_f, mut a, mut b) = pair_with(cfg, Conn::default(), NicConfig::default());
    for i in 0..3 {
        b.recv_at(0x100 * i, 0x100);
    }
    a.post_op(SEND, 0, 0, 0, &[inline_seg(&vec![0x11; full])]);
    a.post_op(SEND, 0, 0, 0, &[inline_seg(&vec![0x22; full + 1])]);
    a.post_op(SEND, 0, 0, 0, &[]);
    a.ring();
    let sz = cqe_size as usize;
    let entry = |i: usize| b.mem.read(RCQ + sz * i, sz);
    let cqe64 = |i: usize| entry(i)[sz - 64..].to_vec();
    let formats: Vec<u8> = (0..3).map(|i| cqe64(i)[63] & 0x0c).collect();
    assert_eq!(formats, [format, 0, 0], "{cqe_size}-byte CQEs");
    let byte_cnts: Vec<Vec<u8>> = (0..3).map(|i| cqe64(i)[44..48].to_vec()).collect();
    let want: Vec<Vec<u8>> = [full, full + 1, 0]
        .iter()
        .map(|&n| (n as u32).to_be_bytes().to_vec())
        .collect();
    assert_eq!(byte_cnts, want);
    assert_eq!(
        &entry(0)[..full],
        &vec![0x11; full][..],
        "the data in the CQE"
    );
    assert_eq!(b.read_data(0, 1), [0], "not in the receive buffer");
    assert_eq!(
        b.read_data(0x100, full + 2),
        [vec![0x22; full + 1], vec![0]].concat()
    );
    assert_eq!(b.drain_recv().len(), 3);
    let s = b.nic.stats();
    assert_eq!((s.scatter_cqes, s.scatter_cqe_bytes), (1, full as u64));
}

#[test]
fn sends_of_up_to_32_bytes_scatter_to_a_64_byte_cqe() {
    scatters_up_to(64, 32, 1 << 2);
}

#[test]
fn sends_of_up_to_64_bytes_scatter_to_a_128_byte_cqe() {
    scatters_up_to(128, 64, 2 << 2);
}

/// Receive CQEs as (opcode, syndrome, vendor syndrome), the requester's CQE opcodes and
/// the bytes that landed.
type OdpOutcome = (Vec<(u8, u8, u8)>, Vec<u8>, Vec<u8>);

/// A SEND into a receive whose buffer is an on-demand key not yet present, on a device
/// with or without `srq_odp_fault_cqe`, into an SRQ or the QP's own queue: the receive
/// CQEs (opcode, syndrome, vendor syndrome) and the requester's completions after one
/// retry, and the data.
fn odp_receive(srq: bool, fault_cqe: bool) -> OdpOutcome {
    let cfg = Cfg {
        srq,
        ..Cfg::default()
    };
    let nic = NicConfig {
        odp: true,
        srq_odp_fault_cqe: fault_cqe,
        ..NicConfig::default()
    };
    let (_f, mut a, mut b) = pair_with(cfg, Conn::default(), nic);
    // SAFETY: the range is the responder's data region, which `b` keeps.
    let odp = unsafe {
        b.nic.reg_mr(
            b.pd,
            b.data(0),
            DATA_LEN as u64,
            all_access() | mlx5_hw::Access::ON_DEMAND,
        )
    }
    .unwrap();
    let buf = b.data(0x100);
    b.post_recv(&[(buf, 64, odp)]);
    a.post_op(SEND, 0, SIGNALED, 0, &[inline_seg(b"on demand")]);
    a.ring();
    let mut recv: Vec<(u8, u8, u8)> = b
        .drain_recv()
        .iter()
        .map(|c| (c.opcode, c.syndrome, c.vendor))
        .collect();
    if recv.first().is_some_and(|c| c.0 == RESP_ERR) {
        // The consumed WQE is posted again, as rdma-core's driver does.
        b.post_recv(&[(buf, 64, odp)]);
    }
    a.nic.progress();
    a.nic.progress();
    recv.extend(
        b.drain_recv()
            .iter()
            .map(|c| (c.opcode, c.syndrome, c.vendor)),
    );
    let sent = a.drain_send().iter().map(|c| c.opcode).collect();
    (recv, sent, b.read_data(0x100, 9))
}

#[test]
fn an_srq_receive_that_faults_is_consumed_with_an_error_cqe_where_the_device_says_so() {
    let landed = b"on demand".to_vec();
    // REMOTE_ABORTED_ERR 0x22, vendor MLX5_CQE_VENDOR_SYNDROME_ODP_PFAULT 0x93.
    assert_eq!(
        odp_receive(true, true),
        (
            vec![(RESP_ERR, 0x22, 0x93), (RESP_SEND, 0, 0)],
            vec![REQ],
            landed.clone()
        )
    );
}

#[test]
fn elsewhere_a_receive_that_faults_waits_for_its_pages_unseen() {
    // Without the device's report, or on the QP's own receive queue, no CQE tells of the
    // fault: the message lands in the same receive, which completes once.
    let landed = (vec![(RESP_SEND, 0, 0)], vec![REQ], b"on demand".to_vec());
    for (srq, fault_cqe) in [(false, false), (false, true), (true, false)] {
        assert_eq!(
            odp_receive(srq, fault_cqe),
            landed,
            "srq {srq}, report {fault_cqe}"
        );
    }
}

#[test]
fn a_receive_cqe_carries_the_senders_service_level() {
    // rdma-core's handle_responder reads wc->sl from flags_rqpn bits 27..24 on an
    // InfiniBand port, RC included; the source QP (bits 23..0) is UD's only.
    let conn = Conn {
        sl: 5,
        ..Conn::default()
    };
    let (_f, mut a, mut b) = pair_with(Cfg::default(), conn, NicConfig::default());
    b.recv_at(0, 64);
    a.post_op(SEND, 0, SIGNALED, 0, &[inline_seg(b"sl")]);
    a.ring();
    let r = b.drain_recv();
    assert_eq!((r[0].opcode, r[0].flags_rqpn), (RESP_SEND, 5 << 24));
}

#[test]
fn a_receive_cqe_names_the_srq_it_came_from() {
    // Two SRQs on the responder's NIC: the second one's receive says its own number.
    let f = Fabric::new();
    let (na, nb) = (
        Nic::new(&f, NicConfig::default()),
        Nic::new(&f, NicConfig::default()),
    );
    let srq = Cfg {
        srq: true,
        ..Cfg::default()
    };
    let mut a = Side::new(&na, Cfg::default());
    let first = Side::new(&nb, srq);
    let mut b = Side::new(&nb, srq);
    assert_ne!(first.srqn, b.srqn);
    connect_one(&a, &b, Conn::default());
    connect_one(&b, &a, Conn::default());
    b.recv_at(0, 64);
    a.post_op(SEND, 0, SIGNALED, 0, &[inline_seg(b"srq")]);
    a.ring();
    let r = b.drain_recv();
    assert_eq!((r[0].opcode, Some(r[0].srqn)), (RESP_SEND, b.srqn));
    assert_eq!(b.read_data(0, 3), b"srq");
}

#[test]
fn a_uc_send_too_long_for_its_receive_is_dropped_and_the_receive_kept() {
    // UC class D: the message is dropped at the responder and the receive it took serves
    // the next one (rxe's do_class_d1e_error), from the QP's own queue or an SRQ.
    for srq in [false, true] {
        let f = Fabric::new();
        let (na, nb) = (
            Nic::new(&f, NicConfig::default()),
            Nic::new(&f, NicConfig::default()),
        );
        let uc = Cfg {
            transport: mlx5_hw::Transport::Uc,
            srq,
            ..Cfg::default()
        };
        let (mut a, mut b) = (Side::new(&na, uc), Side::new(&nb, uc));
        connect_uc(&a, &b);
        b.recv_at(0, 8);
        a.post_op(SEND, 0, SIGNALED, 0, &[inline_seg(&[1; 16])]);
        a.post_op(SEND, 0, SIGNALED, 0, &[inline_seg(b"four")]);
        a.ring();
        assert_eq!(a.drain_send().len(), 2, "UC completes at the requester");
        let r = b.drain_recv();
        let got: Vec<_> = r
            .iter()
            .map(|c| (c.opcode, c.byte_cnt, c.wqe_counter))
            .collect();
        assert_eq!(got, [(RESP_SEND, 4, 0)], "srq {srq}");
        assert_eq!(b.read_data(0, 5), b"four\0");
        assert_eq!(b.nic.stats().uc_errors, 1);
    }
}
