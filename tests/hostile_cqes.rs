//! Hostile CQEs: random bytes as CQEs into the driver's parser (the null device writes them
//! where a device would): no panic, every entry consumed exactly once, each classified with
//! a typed status, the send queue's accounting never corrupted; invalid and stale entries
//! are never consumed.

mod common;

use common::hostile::*;

use mlx5_direct::null::{NullQueues, NULL_QPN};
use mlx5_direct::prm::{CqeOpcode, Opcode};
use mlx5_direct::{Completion, Data, PostError, SendFlags, SendOp, Status};
use proptest::prelude::*;

/// One fuzzed CQE: 64 random bytes, then the opcode nibble, the QPN and the owner bit set
/// as chosen, so that most entries get past the ownership check and into the parser.
#[derive(Clone, Debug)]
struct RawCqe {
    bytes: Vec<u8>,
    opcode: u8,
    our_qpn: bool,
}

fn raw_cqe() -> impl Strategy<Value = RawCqe> {
    (
        prop::collection::vec(any::<u8>(), 64),
        prop_oneof![0..15u8, Just(0u8), Just(13), Just(14)],
        any::<bool>(),
    )
        .prop_map(|(bytes, opcode, our_qpn)| RawCqe {
            bytes,
            opcode,
            our_qpn,
        })
}

proptest! {
    #![proptest_config(common::proptest_config(256))]

    /// Every entry with the right owner bit and a valid opcode nibble is consumed exactly
    /// once and classified; none panics, none stalls the CQ. A CQE retires send WQEs only
    /// when its `wqe_counter` names the start of an outstanding one (this test keeps its
    /// own list of them), so the queue's free count stays exact whatever the entry claims.
    #[test]
    fn random_cqes_are_classified_and_never_stall(
        warmup in prop::collection::vec(0..=200usize, 0..64),
        posts in prop::collection::vec(0..=200usize, 0..8),
        cqes in prop::collection::vec(raw_cqe(), 1..40),
    ) {
        let mut q = NullQueues::new(16, 8, 220).unwrap();
        let mut out = [Completion::default(); 4];
        // WQEs of 1 to 4 WQEBBs first, completed properly, so that the slots hold the
        // bookkeeping of retired WQEs of different ages.
        for (k, len) in warmup.iter().enumerate() {
            let start = q.sq.producer_count();
            q.sq.post(k as u64, SendOp::Write(REMOTE), Data::Inline(&[7; 200][..*len]),
                SendFlags::SIGNALED).unwrap();
            q.complete(start as u16, Opcode::RdmaWrite, CqeOpcode::Req, 0);
            prop_assert_eq!(q.cq.poll(&mut out), 1);
            prop_assert_eq!(out[0].wr_id, k as u64);
        }
        // Outstanding WQEs: (first WQEBB counter, WQEBBs, wr_id).
        let mut outstanding = std::collections::VecDeque::new();
        for (k, len) in posts.iter().enumerate() {
            let start = q.sq.producer_count();
            let r = q.sq.post(1000 + k as u64, SendOp::Write(REMOTE),
                Data::Inline(&[7; 200][..*len]), SendFlags::UNSIGNALED);
            if r.is_err() {
                break;
            }
            outstanding.push_back((start, q.sq.producer_count() - start, 1000 + k as u64));
        }
        let mut errored = false;
        for raw in &cqes {
            let mut cqe: [u8; 64] = raw.bytes.clone().try_into().unwrap();
            if raw.our_qpn {
                cqe[57..60].copy_from_slice(&NULL_QPN.to_be_bytes()[1..]);
            }
            let owner = ((q.produced() / 8) & 1) as u8;
            cqe[63] = raw.opcode << 4 | (cqe[63] & 0x0e) | owner;
            q.write_raw_cqe(&cqe);
            let ci = q.cq.consumer_index();
            prop_assert_eq!(q.cq.poll(&mut out), 1);
            prop_assert_eq!(q.cq.consumer_index(), ci.wrapping_add(1));
            let c = out[0];
            let format = (cqe[63] >> 2) & 3;
            let qpn = u32::from_be_bytes([0, cqe[57], cqe[58], cqe[59]]);
            let counter = u16::from_be_bytes([cqe[60], cqe[61]]);
            let opcode = CqeOpcode::from_u8(raw.opcode);
            let known = matches!(opcode, Some(CqeOpcode::Req | CqeOpcode::RespWrImm
                | CqeOpcode::RespSend | CqeOpcode::RespSendImm | CqeOpcode::RespSendInv
                | CqeOpcode::ReqErr | CqeOpcode::RespErr));
            let requester = matches!(opcode, Some(CqeOpcode::Req | CqeOpcode::ReqErr));
            let error = matches!(opcode, Some(CqeOpcode::ReqErr | CqeOpcode::RespErr));
            if format == 3 {
                prop_assert_eq!(c.status, Status::Compressed);
                continue;
            }
            if !known {
                prop_assert_eq!(c.status, Status::UnknownOpcode(cqe[63]));
                continue;
            }
            if qpn != NULL_QPN {
                prop_assert_eq!((c.status, c.qpn), (Status::UnknownQp, qpn));
                continue;
            }
            errored |= error;
            // The null device's QP has no receives posted: every receive CQE is unknown.
            let hit = if requester {
                outstanding.iter().position(|&(start, _, _)| (start ^ u32::from(counter)) & 15 == 0)
            } else {
                None
            };
            let Some(i) = hit else {
                prop_assert_eq!(c.status, Status::UnknownWqe(counter), "{:?}", c);
                continue;
            };
            let (_, _, wr_id) = outstanding[i];
            outstanding.drain(..=i);
            prop_assert_eq!(c.wr_id, wr_id);
            if error {
                let Status::Error(e) = c.status else {
                    return Err(TestCaseError::fail(format!("{c:?}")));
                };
                prop_assert_eq!(e.syndrome, cqe[55]);
                prop_assert_eq!(e.vendor_syndrome, cqe[54]);
                prop_assert_eq!(e.wqe_counter, counter);
            } else {
                prop_assert_eq!(c.status, Status::Success);
            }
            let in_use: u32 = outstanding.iter().map(|o| o.1).sum();
            prop_assert_eq!(q.sq.free_wqebbs(), 16 - in_use);
        }
        // Nothing more: the next entry is still the device's.
        prop_assert_eq!(q.cq.poll(&mut out), 0);
        let in_use: u32 = outstanding.iter().map(|o| o.1).sum();
        prop_assert_eq!(q.sq.free_wqebbs(), 16 - in_use);
        let r = q.sq.post(99, SendOp::Nop, Data::NONE, SendFlags::SIGNALED);
        if errored {
            prop_assert_eq!(r, Err(PostError::NotReadyToSend));
        } else {
            prop_assert!(r.is_ok() || in_use == 16, "{:?}", r);
        }
    }
}

#[test]
fn invalid_and_stale_entries_are_never_consumed() {
    let mut q = NullQueues::new(16, 8, 64).unwrap();
    let mut out = [Completion::default(); 4];
    // Opcode INVALID with the right owner bit: the device has not written it.
    let mut cqe = [0u8; 64];
    cqe[63] = 0xf0;
    q.write_raw_cqe(&cqe);
    assert_eq!(q.cq.poll(&mut out), 0);
    assert_eq!(q.cq.consumer_index(), 0);
    // A valid opcode with the owner bit of the next pass: stale, not taken.
    let mut q = NullQueues::new(16, 8, 64).unwrap();
    cqe[63] = 0x01;
    q.write_raw_cqe(&cqe);
    assert_eq!(q.cq.poll(&mut out), 0);
    assert_eq!(q.cq.consumer_index(), 0);
}
