//! Typed posts: each writes exactly what the generic entry writes for the same work
//! request (ring, doorbell record, register), and refuses what it refuses.

use super::*;
use crate::mmio::NullUar;
use crate::prm::UAR_PAGE_SIZE;

use super::datagram::datagram_queues;

/// A post: the generic entry or a typed call, given the work request.
type Post<'p> = &'p dyn Fn(&mut SendQueue<NullUar>, &SendWr<'_>) -> Result<(), PostError>;

/// Everything a post leaves for the device and the poller to see: the whole ring, the
/// doorbell record, the whole register page, the counters.
fn state(q: &NullQueues) -> (Vec<u8>, u32, Vec<u8>, u32, usize) {
    let ring = q.sq.wqe_bytes(0, q.sq.wqebbs() as usize * SEND_WQE_BB);
    let page = (0..UAR_PAGE_SIZE / 8)
        .flat_map(|k| q.sq.uar().read64(k * 8))
        .collect();
    let sq = &q.sq;
    (
        ring,
        sq.doorbell_record(),
        page,
        sq.producer_count(),
        sq.register_offset(),
    )
}

/// Rounds of [`same_as_generic`]: every case list fills the 16-WQEBB ring more than
/// once in two.
const ROUNDS: u64 = 8;

/// Posts every work request of `cases` through `generic` on one queue and through
/// `typed` on another (both made by `make`), round after round (wrapping the ring,
/// retiring by CQEs as the device would), rung after every `batch` (1 for the posting
/// forms): every result and everything the queues show must be equal. Returns how many
/// were refused in a round.
fn same_as_generic(
    make: fn() -> NullQueues,
    cases: &[SendWr<'_>],
    generic: Post<'_>,
    typed: Post<'_>,
    batch: usize,
) -> usize {
    let (mut a, mut b) = (make(), make());
    let (mut posted, mut refused) = (0, 0);
    for round in 0..ROUNDS {
        for (i, wr) in cases.iter().enumerate() {
            let wr = SendWr {
                wr_id: round * 100 + i as u64,
                ..*wr
            };
            let pi = a.sq.producer_count();
            let result = generic(&mut a.sq, &wr);
            assert_eq!(result, typed(&mut b.sq, &wr), "{i}: {wr:?}");
            if result.is_ok() {
                posted += 1;
                if posted % batch == 0 {
                    assert_eq!(a.sq.ring_doorbell(), b.sq.ring_doorbell());
                }
            } else {
                refused += 1;
            }
            assert!(state(&a) == state(&b), "{i}: {wr:?} at {pi}");
            // Retire what was posted (a CQE for its last WQE).
            if result.is_ok() && posted % batch == 0 {
                for q in [&mut a, &mut b] {
                    q.complete(pi as u16, Opcode::Nop, CqeOpcode::Req, 0);
                    let mut out = [crate::cq::Completion::default()];
                    assert_eq!(q.cq.poll(&mut out), 1);
                }
            }
        }
    }
    assert_eq!(posted + refused, ROUNDS as usize * cases.len());
    refused / ROUNDS as usize
}

/// [`same_as_generic`] of the posting forms, then of the pushing forms rung alone and
/// rung every 5; returns how many work requests of `cases` are refused.
fn both_forms(
    make: fn() -> NullQueues,
    cases: &[SendWr<'_>],
    generic: [Post<'_>; 2],
    typed: [Post<'_>; 2],
) -> usize {
    let refused = same_as_generic(make, cases, generic[0], typed[0], 1);
    assert_eq!(
        same_as_generic(make, cases, generic[1], typed[1], 1),
        refused
    );
    assert_eq!(
        same_as_generic(make, cases, generic[1], typed[1], 5),
        refused
    );
    refused
}

fn rc_queues() -> NullQueues {
    NullQueues::new(16, 64, 128).unwrap()
}

/// The inline WRITEs of the tests: every length from none to past the inline limit of
/// the test queues (128), with each combination of flags.
fn inline_writes(payload: &[u8]) -> Vec<SendWr<'_>> {
    let flags = [
        SendFlags::SIGNALED,
        SendFlags::UNSIGNALED,
        SendFlags::SIGNALED | SendFlags::FENCE | SendFlags::SOLICITED,
    ];
    (0..=payload.len())
        .step_by(3)
        .chain([1, 8, 27, 28, 29, 44, 45, 128, 129])
        .map(|len| SendWr {
            wr_id: 0,
            op: SendOp::Write(Remote {
                addr: 0x1_0000 + len as u64,
                rkey: 0x55 + len as u32,
            }),
            data: Data::Inline(&payload[..len]),
            flags: flags[len % 3],
        })
        .collect()
}

/// The typed call of `wr`'s kind (`push`: its `push_` form), given `wr`'s operands.
fn typed_rc(sq: &mut SendQueue<NullUar>, wr: &SendWr<'_>, push: bool) -> Result<(), PostError> {
    let (id, flags) = (wr.wr_id, wr.flags);
    match (wr.op, wr.data, push) {
        (SendOp::Write(r), Data::Inline(d), false) => sq.write_inline(id, r, d, flags),
        (SendOp::Write(r), Data::Inline(d), true) => sq.push_write_inline(id, r, d, flags),
        (SendOp::Write(r), Data::Sges(l), false) => sq.write(id, r, l, flags),
        (SendOp::Write(r), Data::Sges(l), true) => sq.push_write(id, r, l, flags),
        (SendOp::WriteImm(r, i), Data::Inline(d), false) => sq.write_imm_inline(id, r, i, d, flags),
        (SendOp::WriteImm(r, i), Data::Inline(d), true) => {
            sq.push_write_imm_inline(id, r, i, d, flags)
        }
        (SendOp::WriteImm(r, i), Data::Sges(l), false) => sq.write_imm(id, r, i, l, flags),
        (SendOp::WriteImm(r, i), Data::Sges(l), true) => sq.push_write_imm(id, r, i, l, flags),
        (SendOp::Send, Data::Inline(d), false) => sq.send_inline(id, d, flags),
        (SendOp::Send, Data::Inline(d), true) => sq.push_send_inline(id, d, flags),
        (SendOp::Send, Data::Sges(l), false) => sq.send(id, l, flags),
        (SendOp::Send, Data::Sges(l), true) => sq.push_send(id, l, flags),
        (SendOp::SendImm(i), Data::Inline(d), false) => sq.send_imm_inline(id, i, d, flags),
        (SendOp::SendImm(i), Data::Inline(d), true) => sq.push_send_imm_inline(id, i, d, flags),
        (SendOp::SendImm(i), Data::Sges(l), false) => sq.send_imm(id, i, l, flags),
        (SendOp::SendImm(i), Data::Sges(l), true) => sq.push_send_imm(id, i, l, flags),
        (SendOp::Read(r), Data::Sges(l), false) => sq.read(id, r, l, flags),
        (SendOp::Read(r), Data::Sges(l), true) => sq.push_read(id, r, l, flags),
        (
            SendOp::CompareSwap {
                remote,
                compare,
                swap,
            },
            Data::Sges(&[result]),
            false,
        ) => sq.compare_swap(id, remote, compare, swap, result, flags),
        (
            SendOp::CompareSwap {
                remote,
                compare,
                swap,
            },
            Data::Sges(&[result]),
            true,
        ) => sq.push_compare_swap(id, remote, compare, swap, result, flags),
        (SendOp::FetchAdd { remote, add }, Data::Sges(&[result]), false) => {
            sq.fetch_add(id, remote, add, result, flags)
        }
        (SendOp::FetchAdd { remote, add }, Data::Sges(&[result]), true) => {
            sq.push_fetch_add(id, remote, add, result, flags)
        }
        _ => unreachable!("{wr:?}"),
    }
}

const GENERIC: [Post<'static>; 2] = [&|sq, wr| sq.post_wr(wr), &|sq, wr| sq.push_wr(wr)];
const TYPED_RC: [Post<'static>; 2] = [&|sq, wr| typed_rc(sq, wr, false), &|sq, wr| {
    typed_rc(sq, wr, true)
}];

#[test]
fn write_inline_writes_what_post_wr_writes() {
    let payload: Vec<u8> = (0..129u8).map(|b| b.wrapping_mul(37)).collect();
    // Refused: 129 bytes (over the inline limit), twice.
    assert_eq!(
        both_forms(rc_queues, &inline_writes(&payload), GENERIC, TYPED_RC),
        2
    );
}

/// Every typed RC call, with data of each size class (short and long inline, gather
/// lists of none to too many entries) and the refusals of each kind (inline too large,
/// too many entries, a misaligned atomic, a READ or atomic on a UC queue).
#[test]
fn every_typed_call_writes_what_post_wr_writes() {
    let payload: Vec<u8> = (0..200u8).collect();
    let sges: Vec<Sge> = (0..5u64)
        .map(|i| Sge {
            addr: 0x10_0000 + i * 0x100,
            len: 8 + i as u32,
            lkey: 0x20 + i as u32,
        })
        .collect();
    let remote = Remote {
        addr: 0x4_0000,
        rkey: 0x77,
    };
    let result = Sge {
        addr: 0x9000,
        len: 8,
        lkey: 5,
    };
    let flags = SendFlags::SIGNALED | SendFlags::SOLICITED;
    let ops = [
        SendOp::Write(remote),
        SendOp::WriteImm(remote, 0xdead_beef),
        SendOp::Send,
        SendOp::SendImm(0x1234_5678),
    ];
    let mut cases = Vec::new();
    for op in ops {
        for len in [1, 12, 28, 29, 44, 45, 100, 128, 129] {
            cases.push(SendWr {
                wr_id: 0,
                op,
                data: Data::Inline(&payload[..len]),
                flags,
            });
        }
        for n in [0, 1, 3, 4, 5] {
            cases.push(SendWr {
                wr_id: 0,
                op,
                data: Data::Sges(&sges[..n]),
                flags: SendFlags::UNSIGNALED,
            });
        }
    }
    for n in [1, 4, 5] {
        cases.push(SendWr {
            wr_id: 0,
            op: SendOp::Read(remote),
            data: Data::Sges(&sges[..n]),
            flags,
        });
    }
    for addr in [0x4_0000, 0x4_0004] {
        let remote = Remote { addr, rkey: 9 };
        let atomics = [
            SendOp::CompareSwap {
                remote,
                compare: 1,
                swap: 2,
            },
            SendOp::FetchAdd { remote, add: 3 },
        ];
        for op in atomics {
            cases.push(SendWr {
                wr_id: 0,
                op,
                data: Data::Sges(core::slice::from_ref(&result)),
                flags: SendFlags::FENCE,
            });
        }
    }
    // Refused: 129 inline bytes and 5 entries (each of the four), a READ of 5 entries,
    // the two misaligned atomics.
    assert_eq!(
        both_forms(rc_queues, &cases, GENERIC, TYPED_RC),
        4 + 4 + 1 + 2
    );
    // A UC queue: every READ and atomic refused, the rest as RC.
    fn uc_queues() -> NullQueues {
        let mut q = rc_queues();
        q.sq.make_uc();
        q.sq.set_ready(true);
        q
    }
    assert_eq!(
        both_forms(uc_queues, &cases, GENERIC, TYPED_RC),
        4 + 4 + 3 + 4
    );
    let mut q = uc_queues();
    assert_eq!(
        q.sq.read(1, remote, &sges[..1], flags),
        Err(PostError::WrongTransport {
            transport: crate::types::Transport::Uc
        })
    );
}

/// The refusals of the typed call are the generic entry's, in the same order: not
/// ready first, in error, inline too large, queue full; nothing written then.
#[test]
fn write_inline_refuses_what_post_wr_refuses() {
    let remote = Remote { addr: 8, rkey: 1 };
    let mut q = NullQueues::new(4, 8, 16).unwrap();
    let big = [0u8; 17];
    q.sq.set_ready(false);
    for data in [&[1u8; 8][..], &big[..]] {
        assert_eq!(
            q.sq.write_inline(1, remote, data, SendFlags::SIGNALED),
            Err(PostError::NotReadyToSend)
        );
    }
    q.sq.set_ready(true);
    assert_eq!(
        q.sq.write_inline(1, remote, &big, SendFlags::SIGNALED),
        Err(PostError::InlineTooLarge { len: 17, max: 16 })
    );
    for i in 0..4 {
        q.sq.write_inline(i, remote, &[1; 8], SendFlags::SIGNALED)
            .unwrap();
    }
    assert_eq!(
        q.sq.push_write_inline(4, remote, &[1; 8], SendFlags::SIGNALED),
        Err(PostError::QueueFull { needed: 1, free: 0 })
    );
    q.sq.shared.refuse();
    for data in [&[1u8; 8][..], &big[..], &[]] {
        assert_eq!(
            q.sq.write_inline(5, remote, data, SendFlags::SIGNALED),
            Err(PostError::NotReadyToSend)
        );
    }
    assert_eq!((q.sq.producer_count(), q.sq.ring_doorbell()), (4, 0));
}

/// The typed UD and DC sends write what `post_ud` / `post_dc` (and their push forms)
/// write, inline or gathered, with and without immediate, and refuse what they refuse.
#[test]
fn typed_datagram_sends_write_what_the_generic_entries_write() {
    let av = super::datagram::lid_7_av();
    let payload: Vec<u8> = (0..=255u8).collect();
    let sges: Vec<Sge> = (0..5u64)
        .map(|i| Sge {
            addr: 0x8_0000 + i * 64,
            len: 16,
            lkey: 3,
        })
        .collect();
    let mut cases = Vec::new();
    for op in [SendOp::Send, SendOp::SendImm(0xabcd)] {
        for len in [0, 1, 12, 28, 60, 200] {
            cases.push(SendWr {
                wr_id: 0,
                op,
                data: Data::Inline(&payload[..len]),
                flags: SendFlags::SIGNALED,
            });
        }
        for n in [1, 4, 5] {
            cases.push(SendWr {
                wr_id: 0,
                op,
                data: Data::Sges(&sges[..n]),
                flags: SendFlags::UNSIGNALED,
            });
        }
    }
    let ud = UdDest {
        av: &av,
        remote_qpn: 0x12_3456,
        qkey: 0x1111_1111,
        compact: false,
    };
    let typed_ud = |sq: &mut SendQueue<NullUar>, wr: &SendWr<'_>, push: bool| match (wr.op, push) {
        (SendOp::Send, false) => sq.send_ud(wr.wr_id, &ud, wr.data, wr.flags),
        (SendOp::Send, true) => sq.push_send_ud(wr.wr_id, &ud, wr.data, wr.flags),
        (SendOp::SendImm(i), false) => sq.send_imm_ud(wr.wr_id, &ud, i, wr.data, wr.flags),
        (SendOp::SendImm(i), true) => sq.push_send_imm_ud(wr.wr_id, &ud, i, wr.data, wr.flags),
        _ => unreachable!(),
    };
    // Refused: 5 entries, with and without immediate.
    assert_eq!(
        both_forms(
            || datagram_queues(false),
            &cases,
            [&|sq, wr| sq.post_ud(*wr, &ud), &|sq, wr| sq
                .push_ud(wr, &ud)],
            [&|sq, wr| typed_ud(sq, wr, false), &|sq, wr| typed_ud(
                sq, wr, true
            )],
        ),
        2
    );
    let dc = DcDest {
        av: &av,
        dctn: 0x55,
        dc_key: 0x1122_3344_5566_7788,
        compact: true,
        stream: 0,
    };
    let typed_dc = |sq: &mut SendQueue<NullUar>, wr: &SendWr<'_>, push: bool| match (wr.op, push) {
        (SendOp::Send, false) => sq.send_dc(wr.wr_id, &dc, wr.data, wr.flags),
        (SendOp::Send, true) => sq.push_send_dc(wr.wr_id, &dc, wr.data, wr.flags),
        (SendOp::SendImm(i), false) => sq.send_imm_dc(wr.wr_id, &dc, i, wr.data, wr.flags),
        (SendOp::SendImm(i), true) => sq.push_send_imm_dc(wr.wr_id, &dc, i, wr.data, wr.flags),
        _ => unreachable!(),
    };
    assert_eq!(
        both_forms(
            || datagram_queues(true),
            &cases,
            [&|sq, wr| sq.post_dc(*wr, &dc), &|sq, wr| sq
                .push_dc(wr, &dc)],
            [&|sq, wr| typed_dc(sq, wr, false), &|sq, wr| typed_dc(
                sq, wr, true
            )],
        ),
        2
    );
    // The RC typed calls on a UD queue are refused as `post_wr` refuses them.
    let mut q = datagram_queues(false);
    assert_eq!(
        q.sq.write_inline(1, Remote::default(), &[1; 8], SendFlags::SIGNALED),
        Err(PostError::WrongTransport {
            transport: crate::types::Transport::Ud
        })
    );
}
