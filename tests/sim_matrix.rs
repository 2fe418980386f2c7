//! The driver against the model, table-driven: every operation × inline / gather ×
//! BlueFlame / doorbell × signaled / unsignaled with data checked at the target and
//! completions at both ends; batches of 1 to 64; SQ, RQ and CQ wrapping with WQEs of 1 to 6
//! WQEBBs; a full SQ; a CQ shared by several QPs; 128-byte CQEs. Every error cause with
//! its exact syndrome on both sides, the flush of the rest, then reset and reuse:
//! `tests/sim_matrix_errors.rs`.

mod common;

use common::matrix::*;

use common::{assert_empty, side_sized, Side};
use mlx5_direct::backend::sim::Fabric;
use mlx5_direct::prm::Syndrome;
use mlx5_direct::sq::{MaskedCs32Args, MaskedCs64Args};
use mlx5_direct::{
    Completion, ConnectOptions, Data, DoorbellMode, PostError, QpConfig, Remote, SendFlags, SendOp,
    Status, WcOpcode,
};

const PAYLOAD: &[u8] = b"29 bytes of matrix payload..!";

/// The operations of the matrix.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Send,
    SendImm,
    Write,
    WriteImm,
    Read,
    CompareSwap,
    FetchAdd,
    MaskedCs32,
    MaskedCs64,
    MaskedFa32,
    MaskedFa64,
    Nop,
}

/// SEND with invalidate is not here: no key this crate registers may be invalidated
/// remotely, so it always fails (`tests/sim_errors.rs`).
const KINDS: [Kind; 12] = [
    Kind::Send,
    Kind::SendImm,
    Kind::Write,
    Kind::WriteImm,
    Kind::Read,
    Kind::CompareSwap,
    Kind::FetchAdd,
    Kind::MaskedCs32,
    Kind::MaskedCs64,
    Kind::MaskedFa32,
    Kind::MaskedFa64,
    Kind::Nop,
];

/// An atomic case: operand width, the target's value before and after, and the operation.
struct Atomic {
    width: usize,
    before: u64,
    after: u64,
    op: SendOp,
}

impl Kind {
    fn data_kinds(self) -> &'static [DataKind] {
        match self {
            Kind::Send | Kind::SendImm | Kind::Write | Kind::WriteImm => {
                &[DataKind::Inline, DataKind::Gather]
            }
            Kind::Nop => &[DataKind::None],
            _ => &[DataKind::Gather],
        }
    }

    fn requester_opcode(self) -> WcOpcode {
        match self {
            Kind::Send | Kind::SendImm => WcOpcode::Send,
            Kind::Write | Kind::WriteImm => WcOpcode::RdmaWrite,
            Kind::Read => WcOpcode::RdmaRead,
            Kind::CompareSwap => WcOpcode::CompareSwap,
            Kind::FetchAdd => WcOpcode::FetchAdd,
            Kind::MaskedCs32 | Kind::MaskedCs64 => WcOpcode::MaskedCompareSwap,
            Kind::MaskedFa32 | Kind::MaskedFa64 => WcOpcode::MaskedFetchAdd,
            Kind::Nop => WcOpcode::Nop,
        }
    }

    /// Consumes a receive at the responder.
    fn needs_receive(self) -> bool {
        matches!(self, Kind::Send | Kind::SendImm | Kind::WriteImm)
    }

    /// Expected values worked out by hand (masked fetch-and-add stops carries above the
    /// boundary bits).
    fn atomic(self, remote: Remote) -> Option<Atomic> {
        let (width, before, after, op) = match self {
            Kind::CompareSwap => (
                8,
                100,
                7,
                SendOp::CompareSwap {
                    remote,
                    compare: 100,
                    swap: 7,
                },
            ),
            Kind::FetchAdd => (8, 100, 105, SendOp::FetchAdd { remote, add: 5 }),
            Kind::MaskedCs32 => (
                4,
                0x1234_5678,
                0xabcd_5678,
                SendOp::MaskedCompareSwap32 {
                    remote,
                    args: MaskedCs32Args {
                        compare: 0xffff_5678,
                        compare_mask: 0x0000_ffff,
                        swap: 0xabcd_0000,
                        swap_mask: 0xffff_0000,
                    },
                },
            ),
            Kind::MaskedCs64 => (
                8,
                0x1111_2222_3333_4444,
                0x9999_2222_3333_4444,
                SendOp::MaskedCompareSwap64 {
                    remote,
                    args: MaskedCs64Args {
                        compare: 0x4444,
                        compare_mask: 0xffff,
                        swap: 0x9999_0000_0000_0000,
                        swap_mask: 0xffff_0000_0000_0000,
                    },
                },
            ),
            Kind::MaskedFa32 => (
                4,
                0x0001_00ff,
                0x0002_0000,
                SendOp::MaskedFetchAdd32 {
                    remote,
                    add: 0x0001_0001,
                    field_boundary: 0x8000_0080,
                },
            ),
            Kind::MaskedFa64 => (
                8,
                0xffff_ffff,
                0,
                SendOp::MaskedFetchAdd64 {
                    remote,
                    add: 1,
                    field_boundary: 0x8000_0000,
                },
            ),
            _ => return None,
        };
        Some(Atomic {
            width,
            before,
            after,
            op,
        })
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum DataKind {
    Inline,
    Gather,
    None,
}

fn read_value(side: &Side, offset: usize, width: usize) -> u64 {
    let mut v = [0u8; 8];
    side.mr.read(offset, &mut v[..width]);
    u64::from_ne_bytes(v)
}

fn write_value(side: &Side, offset: usize, width: usize, value: u64) {
    side.mr.write(offset, &value.to_ne_bytes()[..width]);
}

/// One cell of the matrix on a connected pair.
fn run_case(
    a: &mut Side,
    b: &mut Side,
    kind: Kind,
    data: DataKind,
    mode: DoorbellMode,
    signaled: bool,
) {
    let case = format!("{kind:?} {data:?} {mode:?} signaled={signaled}");
    let len = PAYLOAD.len();
    b.mr.write(DST, &[0; 64]);
    a.mr.write(SRC, &[0; 64]);
    a.mr.write(SRC, PAYLOAD);
    // Two gather entries, 10 + 19 bytes, not adjacent in the source.
    a.mr.write(SRC + 128, &PAYLOAD[10..]);
    let gather = [a.mr.sge(SRC, 10), a.mr.sge(SRC + 128, (len - 10) as u32)];
    let remote = b.mr.remote(DST);
    let atomic = kind.atomic(remote);
    let op = match kind {
        Kind::Send => SendOp::Send,
        Kind::SendImm => SendOp::SendImm(0x0102_0304),
        Kind::Write => SendOp::Write(remote),
        Kind::WriteImm => SendOp::WriteImm(remote, 0xcafe_f00d),
        Kind::Read => {
            b.mr.write(DST, PAYLOAD);
            SendOp::Read(remote)
        }
        Kind::Nop => SendOp::Nop,
        _ => {
            let at = atomic.as_ref().unwrap();
            write_value(b, DST, at.width, at.before);
            at.op
        }
    };
    let result_sge;
    let data = match (data, &atomic) {
        (DataKind::Inline, _) => Data::Inline(PAYLOAD),
        (DataKind::None, _) => Data::NONE,
        (DataKind::Gather, Some(at)) => {
            result_sge = [a.mr.sge(SRC, at.width as u32)];
            Data::Sges(&result_sge)
        }
        (DataKind::Gather, None) => Data::Sges(&gather),
    };
    if kind.needs_receive() {
        let rsge = b.mr.sge(DST, 64);
        b.qp.rq().unwrap().post(500, &[rsge]).unwrap();
    }

    let bf_before = a.ctx.backend().nic().stats().bf_used;
    let sq = a.qp.sq();
    sq.set_mode(mode);
    let flags = if signaled {
        SendFlags::SIGNALED
    } else {
        SendFlags::UNSIGNALED
    };
    sq.post(1, op, data, flags).unwrap();
    if !signaled {
        sq.post(2, SendOp::Nop, Data::NONE, SendFlags::SIGNALED)
            .unwrap();
    }
    let posts = 1 + !signaled as u64;
    let stats = a.ctx.backend().nic().stats();
    let expected_bf = if mode == DoorbellMode::BlueFlame {
        posts
    } else {
        0
    };
    assert_eq!(stats.bf_used - bf_before, expected_bf, "{case}");
    assert_eq!(stats.bf_mismatch, 0, "{case}");

    // Requester: the operation's CQE, or only the trailing NOP's when unsignaled.
    let c = poll_exact(a, 1)[0];
    let (wr_id, opcode) = if signaled {
        (1, kind.requester_opcode())
    } else {
        (2, WcOpcode::Nop)
    };
    assert_eq!(
        (c.wr_id, c.opcode, c.status, c.qpn),
        (wr_id, opcode, Status::Success, a.qp.qpn()),
        "{case}"
    );
    // byte_len: READ's from the CQE, an atomic's operand size, 0 otherwise (the driver's
    // rule; the model poisons byte_cnt of every requester CQE but READ's).
    let byte_len = match (kind, &atomic) {
        (Kind::Read, _) => len as u32,
        (_, Some(at)) => at.width as u32,
        _ => 0,
    };
    assert_eq!(c.byte_len, if signaled { byte_len } else { 0 }, "{case}");

    // Responder: a receive completion for the kinds that consume one, nothing otherwise.
    if kind.needs_receive() {
        let r = poll_exact(b, 1)[0];
        // Not solicited, no invalidated rkey, no scatter to CQE here (tests/scatter_cqe.rs);
        // an RC receive carries no P_Key (the model writes 0); CQE version 0 and the QP's
        // own RQ: no SRQ number. All of these are the default's.
        let expect = Completion::default()
            .with_wr_id(500)
            .with_qpn(b.qp.qpn())
            .with_opcode(if kind == Kind::WriteImm {
                WcOpcode::RecvRdmaWithImm
            } else {
                WcOpcode::Recv
            })
            .with_status(Status::Success)
            .with_byte_len(len as u32)
            .with_imm(match kind {
                Kind::SendImm => Some(0x0102_0304),
                Kind::WriteImm => Some(0xcafe_f00d),
                _ => None,
            })
            // Defined for UD only: not compared.
            .with_src_qp(r.src_qp())
            .with_slid(r.slid())
            .with_ud_flags(r.ud_flags())
            // The device clock: pinned by tests/timestamps.rs.
            .with_timestamp(r.timestamp());
        assert_eq!(r, expect, "{case}");
    } else {
        assert_empty(b);
    }

    // The data at the target.
    match (kind, atomic) {
        (Kind::Nop, _) => assert_eq!(bytes(b, DST, 64), [0; 64], "{case}"),
        (Kind::Read, _) => assert_eq!(bytes(a, SRC, len), PAYLOAD, "{case}"),
        (_, Some(at)) => {
            assert_eq!(read_value(b, DST, at.width), at.after, "{case}: target");
            // The hardware rule: 8-byte results in host order (the kernel's endianness
            // mode), 4-byte masked results big-endian.
            let result = bytes(a, SRC, at.width);
            let want = at.before.to_ne_bytes();
            let want = match at.width {
                8 => &want[..],
                _ => &(at.before as u32).to_be_bytes()[..],
            };
            assert_eq!(result, want, "{case}: result bytes");
            assert_eq!(
                at.op.atomic_result(&result, true),
                Some(at.before),
                "{case}: decoded"
            );
        }
        _ => assert_eq!(bytes(b, DST, len), PAYLOAD, "{case}"),
    }
}

#[test]
fn every_operation_data_kind_posting_mode_and_signaling() {
    let (mut a, mut b) = pair_sized(&QpConfig::default(), 256, 64);
    let mut cells = 0;
    for kind in KINDS {
        for &data in kind.data_kinds() {
            for mode in [DoorbellMode::BlueFlame, DoorbellMode::Doorbell] {
                for signaled in [true, false] {
                    run_case(&mut a, &mut b, kind, data, mode, signaled);
                    cells += 1;
                }
            }
        }
    }
    assert_eq!(cells, (4 * 2 + 8) * 4);
}

#[test]
fn batches_of_1_to_64_ring_once_and_land_in_order() {
    let (mut a, b) = pair_sized(&QpConfig::default(), 256, 64);
    let modes = [
        DoorbellMode::Doorbell,
        DoorbellMode::BlueFlame,
        DoorbellMode::BlueFlameLast,
    ];
    for k in 1..=64u64 {
        let sq = a.qp.sq();
        sq.set_mode(modes[k as usize % 3]);
        for i in 0..k {
            let flags = if i == k - 1 {
                SendFlags::SIGNALED
            } else {
                SendFlags::UNSIGNALED
            };
            let value = (k << 8 | i).to_ne_bytes();
            sq.push(
                k * 100 + i,
                SendOp::Write(b.mr.remote(i as usize * 8)),
                Data::Inline(&value),
                flags,
            )
            .unwrap();
        }
        let doorbells = a.ctx.backend().nic().stats().doorbells;
        assert_eq!(a.qp.sq().ring_doorbell(), k as u32);
        assert_eq!(a.ctx.backend().nic().stats().doorbells - doorbells, 1);
        let c = poll_exact(&mut a, 1)[0];
        assert_eq!((c.wr_id, c.status), (k * 100 + k - 1, Status::Success));
        for i in 0..k {
            assert_eq!(b.mr.read_u64(i as usize * 8), k << 8 | i, "batch {k}");
        }
        assert_eq!(a.qp.sq().outstanding_wqebbs(), 0);
    }
    assert_eq!(a.ctx.backend().nic().stats().bf_mismatch, 0);
}

#[test]
fn sq_rq_and_cq_wrap_many_times_with_wqes_of_1_to_6_wqebbs() {
    let config = QpConfig {
        sq_wqebbs: 16,
        rq_wqes: 8,
        max_inline: 364,
        ..QpConfig::default()
    };
    let (mut a, mut b) = pair_sized(&config, 16, 64);
    // SEND: 16 bytes of control + 4 of inline header + the data, in 64-byte WQEBBs. WQEs
    // over 256 bytes (5 and 6 WQEBBs) exceed the BlueFlame size and are always rung with
    // the 8-byte doorbell.
    let lens: [(usize, u32); 12] = [
        (1, 1),
        (44, 1),
        (45, 2),
        (108, 2),
        (109, 3),
        (172, 3),
        (173, 4),
        (236, 4),
        (237, 5),
        (300, 5),
        (301, 6),
        (364, 6),
    ];
    let modes = [
        DoorbellMode::BlueFlame,
        DoorbellMode::Doorbell,
        DoorbellMode::BlueFlameLast,
    ];
    let payload: Vec<u8> = (0..400).map(|i| (i * 13) as u8).collect();
    let mut wqebbs = 0;
    let mut straddled = 0;
    for i in 0..300u64 {
        let (len, bbs) = lens[i as usize % lens.len()];
        let data = &payload[i as usize % 16..][..len];
        let slot = (i % 8) as usize * 512;
        let rsge = b.mr.sge(DST + slot, 512);
        b.qp.rq().unwrap().post(1000 + i, &[rsge]).unwrap();
        let sq = a.qp.sq();
        sq.set_mode(modes[i as usize % 3]);
        let start = sq.producer_count();
        if (start % 16) + bbs > 16 {
            straddled += 1;
        }
        sq.post(i, SendOp::Send, Data::Inline(data), SendFlags::SIGNALED)
            .unwrap();
        assert_eq!(a.qp.sq().producer_count() - start, bbs, "send {i}");
        wqebbs += bbs;
        let c = poll_exact(&mut a, 1)[0];
        assert_eq!((c.wr_id, c.status), (i, Status::Success));
        let r = poll_exact(&mut b, 1)[0];
        assert_eq!(
            (r.wr_id, r.status, r.byte_len),
            (1000 + i, Status::Success, len as u32)
        );
        assert_eq!(bytes(&b, DST + slot, len), data, "send {i}");
    }
    assert_eq!(
        (wqebbs / 16, straddled),
        (65, 37),
        "SQ laps, WQEs that ran past the ring end"
    );
    assert!(a.cq.consumer_index() >= 300 && b.cq.consumer_index() >= 300);
    assert_eq!(a.ctx.backend().nic().stats().bf_mismatch, 0);
}

#[test]
fn a_full_sq_refuses_with_a_typed_error_and_overwrites_nothing() {
    let config = QpConfig {
        sq_wqebbs: 16,
        ..QpConfig::default()
    };
    let (mut a, b) = pair_sized(&config, 64, 64);
    let sq = a.qp.sq();
    for i in 0..16u64 {
        let flags = if i == 15 {
            SendFlags::SIGNALED
        } else {
            SendFlags::UNSIGNALED
        };
        let op = SendOp::Write(b.mr.remote(i as usize * 8));
        sq.push(i, op, Data::Inline(&(i + 1).to_ne_bytes()), flags)
            .unwrap();
    }
    let write = SendOp::Write(b.mr.remote(0x800));
    assert_eq!(
        sq.push(99, write, Data::Inline(&[9; 8]), SendFlags::SIGNALED),
        Err(PostError::QueueFull { needed: 1, free: 0 })
    );
    assert_eq!(sq.ring_doorbell(), 16);
    // Still full until the CQE is polled.
    assert_eq!(
        a.qp.sq()
            .post(99, write, Data::Inline(&[9; 8]), SendFlags::SIGNALED),
        Err(PostError::QueueFull { needed: 1, free: 0 })
    );
    let c = poll_exact(&mut a, 1)[0];
    assert_eq!((c.wr_id, c.status), (15, Status::Success));
    for i in 0..16u64 {
        assert_eq!(b.mr.read_u64(i as usize * 8), i + 1);
    }
    assert_eq!(bytes(&b, 0x800, 8), [0; 8], "the refused WRITE never ran");
    assert_eq!(a.qp.sq().free_wqebbs(), 16);
    a.qp.sq()
        .post(99, write, Data::Inline(&[9; 8]), SendFlags::SIGNALED)
        .unwrap();
    assert_eq!(poll_exact(&mut a, 1)[0].wr_id, 99);
    assert_eq!(bytes(&b, 0x800, 8), [9; 8]);
}

#[test]
fn one_cq_serves_several_qps_on_both_sides() {
    let fabric = Fabric::new();
    let config = QpConfig::default();
    let mut a = side_sized(&fabric, &config, 64, 64);
    let mut b = side_sized(&fabric, &config, 64, 64);
    let opts = ConnectOptions::default();
    let mut pairs = Vec::new();
    for _ in 0..3 {
        let mut qa = a.pd.create_qp(&a.cq, &a.cq, &config).unwrap();
        let mut qb = b.pd.create_qp(&b.cq, &b.cq, &config).unwrap();
        qa.connect(&qb.endpoint().unwrap(), &opts).unwrap();
        qb.connect(&qa.endpoint().unwrap(), &opts).unwrap();
        pairs.push((qa, qb));
    }
    for (i, (qa, qb)) in pairs.iter_mut().enumerate() {
        let rsge = b.mr.sge(i * 64, 64);
        qb.rq().unwrap().post(200 + i as u64, &[rsge]).unwrap();
        qa.sq()
            .post(
                100 + i as u64,
                SendOp::SendImm(i as u32),
                Data::Inline(&[i as u8 + 1; 5]),
                SendFlags::SIGNALED,
            )
            .unwrap();
    }
    let sent = poll_exact(&mut a, 3);
    let received = poll_exact(&mut b, 3);
    for (i, (qa, qb)) in pairs.iter().enumerate() {
        assert_eq!(
            (sent[i].wr_id, sent[i].qpn, sent[i].status),
            (100 + i as u64, qa.qpn(), Status::Success)
        );
        let r = received[i];
        assert_eq!(
            (r.wr_id, r.qpn, r.imm(), r.byte_len),
            (200 + i as u64, qb.qpn(), Some(i as u32), 5)
        );
        assert_eq!(bytes(&b, i * 64, 5), [i as u8 + 1; 5]);
    }
}

#[test]
fn cqes_of_128_bytes_end_to_end() {
    let (mut a, mut b) = pair_sized(&QpConfig::default(), 32, 128);
    for round in 0..40u64 {
        let rsge = b.mr.sge(DST, 64);
        b.qp.rq().unwrap().post(round, &[rsge]).unwrap();
        a.qp.sq()
            .post(
                round,
                SendOp::WriteImm(b.mr.remote(DST), round as u32),
                Data::Inline(&round.to_ne_bytes()),
                SendFlags::SIGNALED,
            )
            .unwrap();
        let c = poll_exact(&mut a, 1)[0];
        assert_eq!((c.wr_id, c.opcode), (round, WcOpcode::RdmaWrite));
        let r = poll_exact(&mut b, 1)[0];
        assert_eq!(
            (r.wr_id, r.opcode, r.imm(), r.byte_len),
            (round, WcOpcode::RecvRdmaWithImm, Some(round as u32), 8)
        );
        assert_eq!(b.mr.read_u64(DST), round);
    }
    // An error CQE in the 128-byte format too.
    let bad = Remote {
        rkey: b.mr.rkey() ^ 0x100,
        ..b.mr.remote(0)
    };
    a.qp.sq()
        .post(
            7,
            SendOp::Write(bad),
            Data::Inline(&[1]),
            SendFlags::SIGNALED,
        )
        .unwrap();
    let c = poll_exact(&mut a, 1)[0];
    assert_eq!(
        (c.wr_id, syndrome(&c)),
        (7, Some(Syndrome::RemoteAccessErr))
    );
}
