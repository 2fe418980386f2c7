//! Where a ConnectX differs from the obvious reading (issue 11): atomic result byte order,
//! requester `byte_cnt`, SEND with invalidate of plain keys, message and segment sizes, UD-only
//! CQE fields, NIC atomics against CPU stores, CE = 1, 128-byte CQEs, solicited arms and the
//! READ/atomic depth. Each source is cited in docs/model.md.

mod common;
use common::*;
use mlx5_hw::{Access, Event, Fault, NicConfig, QpState, Stats};

const LOCAL_LENGTH_ERR: u8 = 0x01;
const LOCAL_PROT_ERR: u8 = 0x04;
const WR_FLUSH_ERR: u8 = 0x05;
const REMOTE_INVAL_REQ_ERR: u8 = 0x12;
const REMOTE_OP_ERR: u8 = 0x14;
/// What the model writes in `byte_cnt` of every requester CQE but READ's.
const POISON: u32 = 0x8bad_f00d;

fn nic_pair(nic: NicConfig) -> (std::sync::Arc<mlx5_hw::Fabric>, Side, Side) {
    pair_with(Cfg::default(), Conn::default(), nic)
}

/// Masked atomic arguments as 4-byte big-endian words.
fn args32(words: [u32; 4]) -> Vec<u8> {
    words.iter().flat_map(|w| w.to_be_bytes()).collect()
}

/// One atomic of each kind on a target holding 0x0102_0304 (4 bytes) or
/// 0x0102_0304_0506_0708 (8 bytes); the result bytes the requester finds, and the target
/// afterwards (host order).
fn atomic_results(nic: NicConfig) -> Vec<(&'static str, Vec<u8>, u64)> {
    let (_f, mut a, mut b) = nic_pair(nic);
    let v8 = 0x0102_0304_0506_0708u64;
    let v4 = 0x0102_0304u32;
    // (name, opcode, opmod, argument segments, size)
    let kinds: [(&str, u8, u8, Vec<u8>, usize); 6] = [
        ("CS", CS, 0, atomic_seg(9, v8), 8),
        ("FA", FA, 0, atomic_seg(1, 0), 8),
        (
            "masked CS 8",
            MASKED_CS,
            0x09,
            [atomic_seg(9, v8), atomic_seg(u64::MAX, u64::MAX)].concat(),
            8,
        ),
        ("masked FA 8", MASKED_FA, 0x09, atomic_seg(1, 0), 8),
        (
            "masked CS 4",
            MASKED_CS,
            0x08,
            args32([9, v4, u32::MAX, u32::MAX]),
            4,
        ),
        ("masked FA 4", MASKED_FA, 0x08, args32([1, 0, 0, 0]), 4),
    ];
    let mut out = Vec::new();
    for (i, (name, op, opmod, args, size)) in kinds.into_iter().enumerate() {
        let (roff, loff) = (0x100 + 16 * i, 0x400 + 16 * i);
        if size == 8 {
            b.mem.put_u64(DATA + roff, v8);
        } else {
            b.write_data(roff, &v4.to_ne_bytes());
        }
        a.write_data(loff, &[0xee; 8]);
        let (r, l) = (b.data(roff), a.data(loff));
        a.post_op(
            op,
            opmod,
            SIGNALED,
            0,
            &[raddr_seg(r, b.key), args, data_seg(size as u32, a.key, l)],
        );
        a.ring();
        let c = a.poll_send().unwrap();
        assert_eq!((c.opcode, c.send_opcode()), (REQ, op), "{name}");
        let target = if size == 8 {
            b.mem.u64(DATA + roff)
        } else {
            u32::from_ne_bytes(b.read_data(roff, 4).try_into().unwrap()).into()
        };
        out.push((name, a.read_data(loff, 8), target));
    }
    out
}

#[test]
fn atomic_results_land_in_the_byte_order_of_each_kind() {
    let host8 = 0x0102_0304_0506_0708u64.to_ne_bytes().to_vec();
    let be8 = vec![1, 2, 3, 4, 5, 6, 7, 8];
    let be4 = vec![1, 2, 3, 4, 0xee, 0xee, 0xee, 0xee];
    // The targets are operated on in host order in both modes.
    let targets = [
        9,
        0x0102_0304_0506_0709,
        9,
        0x0102_0304_0506_0709,
        9,
        0x0102_0305,
    ];
    // Default: atomic_req_8B_endianness_mode = 1, as the kernel sets it.
    let got = atomic_results(NicConfig::default());
    let want8 = [&host8, &host8, &host8, &host8, &be4, &be4];
    for ((name, bytes, target), (want, t)) in got.iter().zip(want8.iter().zip(targets)) {
        assert_eq!((bytes, *target), (*want, t), "{name}, mode 1");
    }
    // Mode 0: 8-byte results big-endian as well.
    let got = atomic_results(NicConfig {
        atomic_8b_host_order: false,
        ..NicConfig::default()
    });
    let want0 = [&be8, &be8, &be8, &be8, &be4, &be4];
    for ((name, bytes, target), (want, t)) in got.iter().zip(want0.iter().zip(targets)) {
        assert_eq!((bytes, *target), (*want, t), "{name}, mode 0");
    }
}

#[test]
fn requester_byte_cnt_is_meaningful_for_read_only() {
    let (_f, mut a, mut b) = pair();
    b.recv_at(0, 64);
    let (r, l) = (b.data(0x100), a.data(0x100));
    a.post_op(SEND, 0, SIGNALED, 0, &[inline_seg(b"four")]);
    a.write_inline(r, b.key, b"write", SIGNALED);
    a.post_op(NOP, 0, SIGNALED, 0, &[]);
    a.post_op(
        FA,
        0,
        SIGNALED,
        0,
        &[raddr_seg(r, b.key), atomic_seg(1, 0), data_seg(8, a.key, l)],
    );
    a.post_op(
        READ,
        0,
        SIGNALED,
        0,
        &[raddr_seg(r, b.key), data_seg(24, a.key, l)],
    );
    a.ring();
    let got: Vec<_> = a
        .drain_send()
        .iter()
        .map(|c| (c.send_opcode(), c.byte_cnt))
        .collect();
    assert_eq!(
        got,
        vec![
            (SEND, POISON),
            (WRITE, POISON),
            (NOP, POISON),
            (FA, POISON),
            (READ, 24)
        ]
    );
}

#[test]
fn send_inval_of_a_plain_key_is_refused_on_both_sides() {
    let (_f, mut a, mut b) = pair();
    b.recv_at(0, 16);
    b.recv_at(16, 16);
    // `b.key` is a plain registration of b's PD: live, right PD, not invalidatable.
    let w = a.wqe(SEND_INVAL, 0, SIGNALED, b.key, &[inline_seg(b"x")]);
    a.post(&w);
    a.ring();
    let s = a.drain_send();
    assert_eq!(
        s.iter().map(|c| (c.opcode, c.syndrome)).collect::<Vec<_>>(),
        vec![(REQ_ERR, REMOTE_INVAL_REQ_ERR)]
    );
    let r = b.drain_recv();
    assert_eq!(
        r.iter()
            .map(|c| (c.opcode, c.syndrome, c.wqe_counter))
            .collect::<Vec<_>>(),
        vec![
            (RESP_ERR, REMOTE_INVAL_REQ_ERR, 0),
            (RESP_ERR, WR_FLUSH_ERR, 1)
        ]
    );
    assert_eq!((a.state(), b.state()), (QpState::Err, QpState::Err));
    assert_eq!(b.read_data(0, 1), [0], "nothing scattered");
    // The key still works: it was not invalidated.
    let (_f, mut a2, b2) = pair();
    a2.write_inline(b2.data(0), b2.key, b"y", SIGNALED);
    a2.ring();
    assert_eq!(a2.poll_send().unwrap().opcode, REQ);
}

/// A NIC whose largest message is 2 GiB.
fn two_gib() -> NicConfig {
    NicConfig {
        max_msg_sz: 1 << 31,
        ..NicConfig::default()
    }
}

/// Post the signaled WQE `build` makes on a fresh pair whose responder has a receive
/// posted; the syndrome of its CQE and both NICs' statistics.
fn outcome(nic: NicConfig, build: impl Fn(&Side, &Side) -> Vec<u8>) -> (u8, Stats, Stats) {
    let (_f, mut a, mut b) = nic_pair(nic);
    b.recv_at(0, 64);
    let w = build(&a, &b);
    a.post(&w);
    a.ring();
    let syndrome = a.poll_send().unwrap().syndrome;
    (syndrome, a.nic.stats(), b.nic.stats())
}

#[test]
fn largest_message_is_1_gib_by_default_and_configurable() {
    let (_f, a, _b) = pair();
    assert_eq!(a.nic.caps().max_msg_sz, 1 << 30);
    // 2^30 + 1 bytes: the length check comes before the keys.
    let over = |a: &Side, b: &Side| {
        let l = a.data(0);
        let segs = [data_seg(1 << 30, a.key, l), data_seg(1, a.key, l)];
        a.wqe(
            WRITE,
            0,
            SIGNALED,
            0,
            &[&[raddr_seg(b.data(0), b.key)][..], &segs].concat(),
        )
    };
    assert_eq!(outcome(NicConfig::default(), over).0, LOCAL_LENGTH_ERR);
    // Within a 2 GiB limit the length passes and the (64 KiB) key fails.
    assert_eq!(outcome(two_gib(), over).0, LOCAL_PROT_ERR);
}

#[test]
fn zero_byte_count_gather_entry_is_2_gib() {
    let zero = |a: &Side, _: &Side| a.wqe(SEND, 0, SIGNALED, 0, &[data_seg(0, a.key, a.data(0))]);
    for (nic, syndrome) in [
        // Over the default 1 GiB limit: a length error.
        (NicConfig::default(), LOCAL_LENGTH_ERR),
        // Within a 2 GiB limit: 2 GiB the 64 KiB key does not cover.
        (two_gib(), LOCAL_PROT_ERR),
    ] {
        let (got, a, _) = outcome(nic, zero);
        assert_eq!((got, a.zero_length_segments, a.packets), (syndrome, 1, 0));
    }
}

#[test]
fn zero_byte_count_scatter_entry_is_2_gib_checked_only_where_written() {
    let (_f, mut a, mut b) = pair();
    let (x, y) = (b.data(0x100), b.data(0x200));
    b.post_recv(&[(x, 0, b.key), (y, 64, b.key)]);
    a.post_op(SEND, 0, SIGNALED, 0, &[inline_seg(b"twelve bytes")]);
    a.ring();
    assert_eq!(a.poll_send().unwrap().opcode, REQ);
    let r = b.poll_recv().unwrap();
    assert_eq!((r.opcode, r.byte_cnt), (RESP_SEND, 12));
    assert_eq!(
        b.read_data(0x100, 12),
        b"twelve bytes",
        "the data lands at x"
    );
    assert_eq!(b.read_data(0x200, 1), [0], "not at y");
    assert_eq!(b.nic.stats().zero_length_segments, 1);
    // The same receive 8 bytes before the key's end: the written bytes leave the key.
    let end = DATA_LEN - 8;
    b.post_recv(&[(b.data(end), 0, b.key)]);
    a.post_op(SEND, 0, SIGNALED, 0, &[inline_seg(b"twelve bytes")]);
    a.ring();
    assert_eq!(a.poll_send().unwrap().syndrome, REMOTE_OP_ERR);
    let r = b.poll_recv().unwrap();
    assert_eq!((r.opcode, r.syndrome), (RESP_ERR, LOCAL_PROT_ERR));
}

#[test]
fn rc_receive_completions_carry_no_source_qp_or_lid() {
    let (_f, mut a, mut b) = pair();
    b.recv_at(0, 16);
    b.recv_at(16, 16);
    a.post_op(SEND_IMM, 0, 0, 7, &[inline_seg(b"a")]);
    a.write_inline(b.data(0x100), b.key, b"b", 0);
    a.post_op(WRITE_IMM, 0, 0, 8, &[raddr_seg(b.data(0x100), b.key)]);
    a.ring();
    for r in b.drain_recv() {
        assert_eq!((r.flags_rqpn, r.slid), (0, 0), "{r:?}");
    }
}

/// A FA of 1 on a word holding 10 while the CPU stores 100 into it.
fn fetch_add_racing_a_cpu_store(nic: NicConfig) -> (u64, u64) {
    let (_f, mut a, mut b) = nic_pair(nic);
    b.mem.put_u64(DATA + 0x40, 10);
    b.nic.inject(Fault::HostStoreInAtomic { value: 100 });
    let (r, l) = (b.data(0x40), a.data(0));
    a.post_op(
        FA,
        0,
        SIGNALED,
        0,
        &[raddr_seg(r, b.key), atomic_seg(1, 0), data_seg(8, a.key, l)],
    );
    a.ring();
    assert_eq!(a.poll_send().unwrap().opcode, REQ);
    (a.mem.u64(DATA), b.mem.u64(DATA + 0x40))
}

#[test]
fn without_pcie_atomicops_a_cpu_store_racing_a_nic_atomic_is_lost() {
    // A DMA read (10), the CPU's store (100), the DMA write (11): the store is lost.
    assert_eq!(fetch_add_racing_a_cpu_store(NicConfig::default()), (10, 11));
    // With AtomicOps the NIC's update is atomic against the CPU: it sees the store.
    let atomic_ops = NicConfig {
        pcie_atomic_ops: true,
        ..NicConfig::default()
    };
    assert_eq!(fetch_add_racing_a_cpu_store(atomic_ops), (100, 101));
}

#[test]
fn ce_1_wqes_get_no_flush_cqe() {
    let (_f, mut a, b) = pair();
    const CE_ONLY_FIRST_ERROR: u8 = 0x04;
    // Fails (bad lkey) with CE = 1: the first error is reported.
    let bad = a.post_op(
        WRITE,
        0,
        CE_ONLY_FIRST_ERROR,
        0,
        &[raddr_seg(b.data(0), b.key), data_seg(8, 0xdead, a.data(0))],
    );
    let quiet = a.post_op(NOP, 0, CE_ONLY_FIRST_ERROR, 0, &[]);
    let unsignaled = a.post_op(NOP, 0, 0, 0, &[]);
    a.ring();
    let c = a.drain_send();
    assert_eq!(
        c.iter()
            .map(|c| (c.syndrome, c.wqe_counter))
            .collect::<Vec<_>>(),
        vec![(LOCAL_PROT_ERR, bad), (WR_FLUSH_ERR, unsignaled)],
        "no CQE for WQE {quiet}"
    );
}

#[test]
fn a_128_byte_cqe_leaves_its_first_half_alone() {
    let cfg = Cfg {
        cqe_size: 128,
        ..Cfg::default()
    };
    let (_f, mut a, _b) = pair_with(cfg, Conn::default(), NicConfig::default());
    a.mem.write(SCQ, &[0x5a; 64]);
    a.post_op(NOP, 0, SIGNALED, 0, &[]);
    a.ring();
    assert_eq!(a.poll_send().unwrap().opcode, REQ);
    assert_eq!(a.mem.read(SCQ, 64), vec![0x5a; 64]);
}

#[test]
fn a_solicited_arm_waits_for_a_solicited_cqe() {
    let (_f, mut a, mut b) = pair();
    b.recv_at(0, 16);
    b.recv_at(16, 16);
    a.post_op(SEND, 0, 0, 0, &[inline_seg(b"plain")]);
    a.ring();
    // One unpolled, unsolicited CQE: a solicited arm does not fire on it.
    b.arm(true, 0, true);
    assert_eq!(b.nic.poll_event(), None);
    a.post_op(SEND, 0, SOLICITED, 0, &[inline_seg(b"wake")]);
    a.ring();
    let cqn = b.rcq.cqn;
    assert_eq!(b.nic.poll_event(), Some(Event::Completion { cqn }));
    // A solicited arm over an unpolled solicited CQE fires at once.
    b.arm(true, 1, true);
    assert_eq!(b.nic.poll_event(), Some(Event::Completion { cqn }));
}

#[test]
fn a_read_beyond_the_responders_depth_is_counted() {
    let read = |requester: u8, responder: u8| {
        let (_f, mut a, b) = pair();
        connect_depth(&a, &b, requester);
        connect_depth(&b, &a, responder);
        let (r, l) = (b.data(0), a.data(0));
        a.post_op(
            READ,
            0,
            SIGNALED,
            0,
            &[raddr_seg(r, b.key), data_seg(8, a.key, l)],
        );
        a.ring();
        assert_eq!(a.poll_send().unwrap().opcode, REQ);
        a.nic.stats().rd_atomic_depth_mismatch
    };
    assert_eq!(read(16, 1), 1);
    assert_eq!(read(3, 4), 0, "both are 4 on mlx5");
    assert_eq!(read(0, 1), 0, "0 behaves as 1");
}

/// Reconnect `a` to `b` with `max_rd_atomic` = `max_dest_rd_atomic` = `depth`.
fn connect_depth(a: &Side, b: &Side, depth: u8) {
    let nic = &a.nic;
    let qpn = a.qp.qpn;
    let t = [
        mlx5_hw::QpTransition::Reset,
        mlx5_hw::QpTransition::Init {
            port: 1,
            access: all_access(),
            pkey_index: 0,
        },
        mlx5_hw::QpTransition::Rtr {
            dest_lid: b.nic.lid(),
            dest_gid: [0; 16],
            dest_qpn: b.qp.qpn,
            rq_psn: 0x100,
            path_mtu: 1024,
            max_dest_rd_atomic: depth,
            min_rnr_timer: 1,
            sl: 0,
            global: false,
        },
        mlx5_hw::QpTransition::Rts {
            sq_psn: 0x100,
            timeout: 14,
            retry_cnt: 3,
            rnr_retry: 7,
            max_rd_atomic: depth,
        },
    ];
    for t in &t {
        nic.modify_qp(qpn, t).unwrap();
    }
}

#[test]
fn an_atomic_whose_result_key_fails_has_still_run_at_the_responder() {
    let (_f, mut a, mut b) = pair();
    b.mem.put_u64(DATA + 0x40, 10);
    let l = a.data(0x800);
    // SAFETY: `a.mem` outlives the key.
    let ro = unsafe { a.nic.reg_mr(a.pd, l, 64, Access::NONE) }.unwrap();
    a.post_op(
        FA,
        0,
        SIGNALED,
        0,
        &[
            raddr_seg(b.data(0x40), b.key),
            atomic_seg(1, 0),
            data_seg(8, ro, l),
        ],
    );
    a.ring();
    assert_eq!(a.poll_send().unwrap().syndrome, LOCAL_PROT_ERR);
    assert_eq!(b.mem.u64(DATA + 0x40), 11, "the responder executed it");
    assert_eq!(a.mem.u64(0x800 + DATA), 0, "nothing landed");
}

#[test]
fn cqe_version_1_writes_the_user_index_into_every_cqe() {
    let v1 = NicConfig {
        cqe_version: 1,
        ..NicConfig::default()
    };
    for srq in [false, true] {
        let cfg = Cfg {
            srq,
            ..Cfg::default()
        };
        let (_f, mut a, mut b) = pair_with(cfg, Conn::default(), v1.clone());
        b.recv_at(0, 16);
        b.recv_at(16, 16);
        a.post_op(SEND, 0, SIGNALED, 0, &[inline_seg(b"v1")]);
        a.ring();
        // A bad rkey: REQ_ERR at the requester; the responder's flush (RQ only).
        a.write_inline(b.data(0), b.key ^ 0x100, b"x", SIGNALED);
        a.ring();
        let s = a.drain_send();
        let r = b.drain_recv();
        assert_eq!(
            s.iter().map(|c| (c.opcode, c.srqn)).collect::<Vec<_>>(),
            vec![(REQ, USER_INDEX), (REQ_ERR, USER_INDEX)],
            "srq={srq}"
        );
        let want = if srq {
            vec![(RESP_SEND, USER_INDEX)]
        } else {
            vec![(RESP_SEND, USER_INDEX), (RESP_ERR, USER_INDEX)]
        };
        assert_eq!(
            r.iter().map(|c| (c.opcode, c.srqn)).collect::<Vec<_>>(),
            want,
            "srq={srq}"
        );
    }
}

#[test]
fn a_zero_byte_count_scatter_entry_of_an_srq_receive_is_counted_too() {
    let cfg = Cfg {
        srq: true,
        ..Cfg::default()
    };
    let (_f, mut a, mut b) = pair_with(cfg, Conn::default(), NicConfig::default());
    b.post_recv(&[(b.data(0x100), 0, b.key), (b.data(0x200), 64, b.key)]);
    a.post_op(SEND, 0, SIGNALED, 0, &[inline_seg(b"twelve bytes")]);
    a.ring();
    let r = b.poll_recv().unwrap();
    assert_eq!((r.opcode, r.byte_cnt), (RESP_SEND, 12));
    assert_eq!(b.read_data(0x100, 12), b"twelve bytes");
    assert_eq!(b.nic.stats().zero_length_segments, 1);
}
