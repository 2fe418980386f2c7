//! CQE compression end to end: CQs created with compression on the model, expanded by the
//! poll loop into the same completions an uncompressed CQ gives (both layouts, requester
//! and responder, partial polls, wrap-around), and hostile blocks written by hand on the
//! null device, each reported without corrupting the queue accounting.

mod common;

use common::{connect, poll_n, BugCheck, Side, MR_LEN};
use mlx5_direct::backend::sim::{Fabric, NicConfig, Sim, ZipConfig, ZipPolicy};
use mlx5_direct::null::{NullQueues, NULL_QPN};
use mlx5_direct::prm::{CqeCompLayout, CqeOpcode, MiniCqeFormat, Opcode};
use mlx5_direct::{
    Access, BadCompression, Completion, Context, CqConfig, CqeCompression, Data, Error, QpConfig,
    SendFlags, SendOp, SendWr, Status, WcOpcode,
};

/// A CQ config of `entries` CQEs of `cqe_size` bytes compressed as `zip` asks.
fn zipped(entries: u32, cqe_size: usize, zip: CqeCompression) -> CqConfig {
    CqConfig {
        compression: Some(zip),
        ..CqConfig::new(entries, cqe_size)
    }
}

/// The model's compression in these tests: every burst compresses.
fn every_burst() -> ZipConfig {
    ZipConfig {
        policy: ZipPolicy::EveryBurst,
        ..ZipConfig::default()
    }
}

fn zip_side(fabric: &std::sync::Arc<Fabric>, nic: ZipConfig, cq: &CqConfig) -> Side {
    let config = NicConfig {
        cqe_zip: nic,
        ..NicConfig::default()
    };
    let ctx = Context::new(Sim::on_fabric(fabric, config));
    let pd = ctx.alloc_pd().unwrap();
    let cq = ctx.create_cq_with(cq).unwrap();
    let qp = pd.create_qp(&cq, &cq, &QpConfig::default()).unwrap();
    let mr = pd
        .alloc_mr(MR_LEN, Access::LOCAL_WRITE | Access::ALL)
        .unwrap();
    let bugs = BugCheck::on(ctx.backend().nic());
    Side {
        ctx,
        pd,
        cq,
        qp,
        mr,
        bugs,
    }
}

fn zip_pair(zip: CqeCompression, cq_entries: u32) -> (Side, Side) {
    zip_pair_with(every_burst(), &zipped(cq_entries, 64, zip))
}

/// Two connected sides on NICs compressing as `nic` says, each with a CQ as `cq` says.
fn zip_pair_with(nic: ZipConfig, cq: &CqConfig) -> (Side, Side) {
    let fabric = Fabric::new();
    let (mut a, mut b) = (zip_side(&fabric, nic, cq), zip_side(&fabric, nic, cq));
    connect(&mut a, &mut b);
    (a, b)
}

/// Posts `n` signaled 8-byte inline WRITEs with one doorbell, `wr_id`s from `first`.
fn write_burst(a: &mut Side, b: &Side, first: u64, n: usize) {
    let remote = b.mr.remote(0);
    let wrs: Vec<SendWr<'_>> = (0..n as u64)
        .map(|i| SendWr {
            wr_id: first + i,
            op: SendOp::Write(remote.offset(8 * i)),
            data: Data::Inline(&[7; 8]),
            flags: SendFlags::SIGNALED,
        })
        .collect();
    assert_eq!(a.qp.sq().post_many(&wrs), Ok(n));
}

fn writes(first: u64, n: u64) -> Vec<Completion> {
    (first..first + n)
        .map(|wr_id| {
            Completion::default()
                .with_wr_id(wr_id)
                .with_qpn(0)
                .with_opcode(WcOpcode::RdmaWrite)
        })
        .collect()
}

/// The completions with the QPN cleared (it is checked separately).
fn without_qpn(mut c: Vec<Completion>, qpn: u32) -> Vec<Completion> {
    for c in &mut c {
        assert_eq!(c.qpn, qpn);
        c.qpn = 0;
    }
    c
}

#[test]
fn a_basic_block_polls_as_the_completions_it_stands_for() {
    let (mut a, b) = zip_pair(CqeCompression::BASIC, 64);
    write_burst(&mut a, &b, 100, 20);
    let qpn = a.qp.qpn();
    assert_eq!(without_qpn(poll_n(&mut a, 20), qpn), writes(100, 20));
    let s = a.ctx.backend().nic().stats();
    assert_eq!((s.zip_blocks, s.zip_minis), (1, 20));
    assert_eq!(a.qp.sq().outstanding_wqebbs(), 0);
    assert_eq!(a.cq.consumer_index(), 20);
}

#[test]
fn an_enhanced_session_polls_as_its_title_and_minis() {
    let (mut a, b) = zip_pair(CqeCompression::ENHANCED, 64);
    write_burst(&mut a, &b, 0, 20);
    let qpn = a.qp.qpn();
    assert_eq!(without_qpn(poll_n(&mut a, 20), qpn), writes(0, 20));
    let s = a.ctx.backend().nic().stats();
    assert_eq!((s.zip_blocks, s.zip_minis), (1, 19));
    assert_eq!(a.qp.sq().outstanding_wqebbs(), 0);
}

#[test]
fn polls_of_one_walk_through_a_block() {
    for zip in [CqeCompression::BASIC, CqeCompression::ENHANCED] {
        let (mut a, b) = zip_pair(zip, 64);
        write_burst(&mut a, &b, 0, 17);
        let mut got = Vec::new();
        let mut out = [Completion::default(); 1];
        for _ in 0..17 {
            assert_eq!(a.cq.poll(&mut out), 1, "{zip:?}");
            got.push(out[0]);
        }
        assert_eq!(a.cq.poll(&mut out), 0);
        assert_eq!(without_qpn(got, a.qp.qpn()), writes(0, 17), "{zip:?}");
    }
}

#[test]
fn blocks_across_many_wraps_keep_ownership_right() {
    // A 16-entry CQ (32 after rdma-core's rounding of 16 + 1), bursts of 13: blocks start
    // anywhere and wrap; every slot must read right in every pass, in 64- and 128-byte
    // CQEs (the latter in each entry's last 64 bytes).
    let nic = ZipConfig {
        compress_128: true,
        ..every_burst()
    };
    for cqe_size in [64, 128] {
        for zip in [CqeCompression::BASIC, CqeCompression::ENHANCED] {
            let (mut a, b) = zip_pair_with(nic, &zipped(16, cqe_size, zip));
            for round in 0..20u64 {
                write_burst(&mut a, &b, round * 13, 13);
                let got = without_qpn(poll_n(&mut a, 13), a.qp.qpn());
                assert_eq!(
                    got,
                    writes(round * 13, 13),
                    "{zip:?} {cqe_size} round {round}"
                );
                common::assert_empty(&mut a);
            }
            let s = a.ctx.backend().nic().stats();
            assert_eq!(
                (s.zip_blocks, s.zip_minis),
                (20, 20 * (13 - zip.layout as u64))
            );
        }
    }
}

/// A NIC that leaves the owner bit out of enhanced compressed slots
/// (`ZipConfig::owner_in_enhanced_slots` false: no public source says it is written there),
/// with sessions inside and across bursts: the driver polls the layout by the validity
/// count (byte 62) alone, so every completion comes through every pass. Polled by the
/// owner bit, the first compressed slot of an odd pass would look empty.
#[test]
fn enhanced_cqs_poll_by_the_validity_count_without_owner_bits() {
    for spans in [false, true] {
        let nic = ZipConfig {
            owner_in_enhanced_slots: false,
            sessions_span_bursts: spans,
            ..every_burst()
        };
        let (mut a, b) = zip_pair_with(nic, &zipped(16, 64, CqeCompression::ENHANCED));
        polled_bursts(&mut a, &b, 24, |round| 2 + round % 9);
        let s = a.ctx.backend().nic().stats();
        assert!(s.zip_minis > s.zip_blocks * 4, "{s:?}");
        assert!(a.cq.consumer_index() > 4 * 32, "several passes");
    }
}

/// `rounds` bursts of WRITEs from `a` to `b`, burst `r` of `size(r)`, each polled and
/// checked (and the CQ found empty) before the next.
fn polled_bursts(a: &mut Side, b: &Side, rounds: u64, size: impl Fn(u64) -> u64) {
    let mut first = 0;
    for round in 0..rounds {
        let n = size(round);
        write_burst(a, b, first, n as usize);
        let got = without_qpn(poll_n(a, n as usize), a.qp.qpn());
        assert_eq!(got, writes(first, n), "round {round}");
        common::assert_empty(a);
        first += n;
    }
}

/// A NIC whose enhanced sessions outlive their bursts.
fn spanning() -> ZipConfig {
    ZipConfig {
        sessions_span_bursts: true,
        ..every_burst()
    }
}

#[test]
fn a_session_across_bursts_polls_right_through_wraps() {
    // Bursts of 1 to 7 on a 16-entry CQ (32 after rounding), polled after each: one title,
    // then every completion a mini-CQE of the same session until max_num (64) closes it.
    let (mut a, b) = zip_pair_with(spanning(), &zipped(16, 64, CqeCompression::ENHANCED));
    polled_bursts(&mut a, &b, 30, |round| 1 + round % 7);
    // 115 completions: sessions of 64 and 51, each one title and the rest mini-CQEs.
    let s = a.ctx.backend().nic().stats();
    assert_eq!((s.cqes, s.zip_blocks, s.zip_minis), (115, 2, 113));
    assert_eq!(a.qp.sq().outstanding_wqebbs(), 0);
}

#[test]
fn a_responder_session_across_bursts_counts_on_from_its_title() {
    // Receives of one session in three doorbells of 3 SENDs: the driver numbers them from
    // the first burst's title (a responder mini-CQE has no counter).
    let (mut a, mut b) = zip_pair_with(spanning(), &zipped(64, 64, CqeCompression::ENHANCED));
    for i in 0..9u64 {
        let sge = b.mr.sge(256 * i as usize, 256);
        b.qp.rq().unwrap().post(1000 + i, &[sge]).unwrap();
    }
    let payload = [3u8; 64];
    for round in 0..3u64 {
        let wrs: Vec<SendWr<'_>> = (0..3)
            .map(|i| SendWr {
                wr_id: i,
                op: SendOp::Send,
                data: Data::Inline(&payload[..8 + (3 * round + i) as usize]),
                flags: SendFlags::UNSIGNALED,
            })
            .collect();
        assert_eq!(a.qp.sq().post_many(&wrs), Ok(3));
        let got = poll_n(&mut b, 3);
        for (i, c) in got.iter().enumerate() {
            let k = 3 * round + i as u64;
            assert_eq!(
                (c.wr_id, c.opcode, c.status, c.byte_len),
                (1000 + k, WcOpcode::Recv, Status::Success, 8 + k as u32),
                "round {round}"
            );
        }
    }
    let s = b.ctx.backend().nic().stats();
    assert_eq!((s.zip_blocks, s.zip_minis), (1, 8));
}

#[test]
fn responder_blocks_count_their_receives() {
    for zip in [CqeCompression::BASIC, CqeCompression::ENHANCED] {
        let (mut a, mut b) = zip_pair(zip, 64);
        for i in 0..9u64 {
            let sge = b.mr.sge(256 * i as usize, 256);
            b.qp.rq().unwrap().post(1000 + i, &[sge]).unwrap();
        }
        let payload = [3u8; 64];
        let wrs: Vec<SendWr<'_>> = (0..9)
            .map(|i| SendWr {
                wr_id: i,
                op: SendOp::Send,
                data: Data::Inline(&payload[..8 + i as usize]),
                flags: SendFlags::UNSIGNALED,
            })
            .collect();
        assert_eq!(a.qp.sq().post_many(&wrs), Ok(9));
        let got = poll_n(&mut b, 9);
        for (i, c) in got.iter().enumerate() {
            assert_eq!(
                (c.wr_id, c.opcode, c.status, c.byte_len),
                (
                    1000 + i as u64,
                    WcOpcode::Recv,
                    Status::Success,
                    8 + i as u32
                ),
                "{zip:?}"
            );
        }
        assert!(b.ctx.backend().nic().stats().zip_minis >= 8);
    }
}

#[test]
fn the_model_refuses_what_it_does_not_offer() {
    let fabric = Fabric::new();
    let config = NicConfig {
        cqe_zip: ZipConfig {
            enhanced: false,
            ..ZipConfig::default()
        },
        ..NicConfig::default()
    };
    let ctx = Context::new(Sim::on_fabric(&fabric, config));
    let err = |r: Result<_, Error>| r.map(|_| ()).unwrap_err();
    assert!(matches!(
        err(ctx.create_cq_with(&zipped(16, 64, CqeCompression::ENHANCED))),
        Error::Device { .. }
    ));
    assert!(matches!(
        err(ctx.create_cq_with(&zipped(16, 128, CqeCompression::BASIC))),
        Error::Device { .. }
    ));
    assert!(ctx
        .create_cq_with(&zipped(16, 64, CqeCompression::BASIC))
        .is_ok());
}

// ------------------------------------------------------------------------------------------
// Hand-written blocks on the null device
// ------------------------------------------------------------------------------------------

/// Null queues whose CQ expands `layout`, with `n` signaled NOPs posted (counters 0..n).
fn null_zip(layout: CqeCompLayout, n: u16) -> NullQueues {
    let mut q = NullQueues::new(64, 16, 64).unwrap();
    q.expand_compressed(CqeCompression {
        layout,
        format: MiniCqeFormat::Hash,
    });
    for i in 0..n {
        q.sq.push(u64::from(i), SendOp::Nop, Data::NONE, SendFlags::SIGNALED)
            .unwrap();
    }
    q.sq.ring_doorbell();
    q
}

/// A requester title (basic) for `n` completions, owner 0.
fn basic_title(n: u32) -> [u8; 64] {
    let mut t = [0u8; 64];
    t[44..48].copy_from_slice(&n.to_be_bytes());
    t[56..60].copy_from_slice(&((Opcode::Nop as u32) << 24 | NULL_QPN).to_be_bytes());
    t[63] = 0x0c;
    t
}

/// 64 bytes of requester mini-CQEs for NOPs with these counters.
fn minis(counters: impl IntoIterator<Item = u16>) -> [u8; 64] {
    let mut a = [0u8; 64];
    for (i, c) in counters.into_iter().enumerate() {
        a[8 * i..8 * i + 2].copy_from_slice(&c.to_be_bytes());
        a[8 * i + 2] = Opcode::Nop as u8;
    }
    a
}

fn nops(n: u64) -> Vec<(u64, WcOpcode, Status)> {
    (0..n)
        .map(|i| (i, WcOpcode::Nop, Status::Success))
        .collect()
}

fn poll_all(q: &mut NullQueues) -> Vec<Completion> {
    let mut out = [Completion::default(); 32];
    let n = q.cq.poll(&mut out);
    out[..n].to_vec()
}

fn summary(c: &[Completion]) -> Vec<(u64, WcOpcode, Status)> {
    c.iter().map(|c| (c.wr_id, c.opcode, c.status)).collect()
}

#[test]
fn a_hand_written_basic_block_expands_in_place() {
    // 10 completions, and 16 on the 16-entry CQ: the largest legal block.
    for n in [10, 16] {
        let mut q = null_zip(CqeCompLayout::Basic, n);
        q.write_raw_block(
            &[
                (0, basic_title(n.into())),
                (1, minis(0..8)),
                (8, minis(8..n)),
            ],
            n.into(),
        );
        assert_eq!(summary(&poll_all(&mut q)), nops(n.into()));
        assert_eq!(q.cq.consumer_index(), u32::from(n));
        assert_eq!(q.sq.outstanding_wqebbs(), 0);
    }
}

#[test]
fn a_title_without_minis_is_reported_and_takes_one_entry() {
    let mut q = null_zip(CqeCompLayout::Basic, 2);
    q.write_raw_block(&[(0, basic_title(0))], 1);
    q.complete(0, Opcode::Nop, CqeOpcode::Req, 0);
    let got = poll_all(&mut q);
    assert_eq!(
        got[0].status,
        Status::BadCompression(BadCompression::NoMinis)
    );
    assert_eq!((got[0].qpn, got[0].wr_id), (NULL_QPN, 0));
    assert_eq!(summary(&got[1..]), nops(1), "the next CQE still parses");
    assert_eq!(q.cq.consumer_index(), 2);
    assert_eq!(q.sq.outstanding_wqebbs(), 1, "only WQE 0 retired");
}

#[test]
fn a_count_larger_than_the_cq_is_reported_and_nothing_retired() {
    let mut q = null_zip(CqeCompLayout::Basic, 2);
    q.write_raw_block(&[(0, basic_title(17)), (1, minis(0..2))], 1);
    let got = poll_all(&mut q);
    // The array after the title cannot be told from a CQE (its byte 63 is a mini-CQE's
    // last byte, here 0: a REQ of pass 0): it is parsed and reported as what it names, a
    // QP of number 0 this CQ does not serve. Nothing is retired either way.
    assert_eq!(
        summary(&got),
        [
            (
                0,
                WcOpcode::default(),
                Status::BadCompression(BadCompression::TooMany(17))
            ),
            (0, WcOpcode::Nop, Status::UnknownQp)
        ]
    );
    assert_eq!(q.cq.consumer_index(), 2);
    assert_eq!(q.sq.outstanding_wqebbs(), 2);
}

/// An enhanced slot of requester mini-CQEs for `counters`, at an index of pass `pass`.
fn enhanced_slot(counters: std::ops::Range<u16>, pass: u8) -> [u8; 64] {
    let k = counters.len() as u8;
    let mut s = minis(counters);
    s[62] = pass;
    s[63] = (k - 1) << 4 | 0x0c | (pass & 1);
    s
}

/// A normal requester CQE for NOP `counter`, validity count and owner of pass 0.
fn normal_nop(counter: u16) -> [u8; 64] {
    let mut t = basic_title(0);
    t[60..62].copy_from_slice(&counter.to_be_bytes());
    t[63] = 0;
    t
}

#[test]
fn a_hand_written_enhanced_session_expands_in_place() {
    let mut q = null_zip(CqeCompLayout::Enhanced, 12);
    q.write_raw_block(&[(0, normal_nop(0))], 1);
    q.write_raw_block(&[(0, enhanced_slot(1..8, 0))], 7);
    q.write_raw_block(&[(0, enhanced_slot(8..12, 0))], 4);
    assert_eq!(summary(&poll_all(&mut q)), nops(12));
    assert_eq!(q.cq.consumer_index(), 12);
}

#[test]
fn enhanced_hostile_slots_are_reported() {
    // A slot with no title before it (the CQ's first entry).
    let mut q = null_zip(CqeCompLayout::Enhanced, 3);
    q.write_raw_block(&[(0, enhanced_slot(0..2, 0))], 2);
    let got = poll_all(&mut q);
    assert_eq!(
        got[0].status,
        Status::BadCompression(BadCompression::NoTitle)
    );
    assert_eq!(q.sq.outstanding_wqebbs(), 3);

    // A count above 7.
    let mut q = null_zip(CqeCompLayout::Enhanced, 3);
    q.write_raw_block(&[(0, normal_nop(0))], 1);
    let mut slot = enhanced_slot(1..3, 0);
    slot[63] = 0x9c;
    q.write_raw_block(&[(0, slot)], 1);
    let got = poll_all(&mut q);
    assert_eq!(summary(&got[..1]), nops(1));
    assert_eq!(
        got[1].status,
        Status::BadCompression(BadCompression::TooMany(10))
    );
    assert_eq!(got[1].qpn, NULL_QPN);
    assert_eq!(q.sq.outstanding_wqebbs(), 2);

    // A validity count going backwards (an index of pass 1 carrying pass 0's count): the
    // poll reads the count as "not written yet" and stops before the slot, as the kernel,
    // DPDK and UCX do; rewritten with its pass's count, the slot expands.
    let mut q = null_zip(CqeCompLayout::Enhanced, 20);
    for i in 0..16 {
        q.complete(i, Opcode::Nop, CqeOpcode::Req, 0);
    }
    assert_eq!(poll_all(&mut q).len(), 16);
    let mut title = normal_nop(16);
    title[62] = 1;
    title[63] = 1;
    q.write_raw_block(&[(0, title)], 1);
    let mut stale = enhanced_slot(17..19, 0);
    stale[63] |= 1;
    q.write_raw_block(&[(0, stale)], 2);
    let got = poll_all(&mut q);
    assert_eq!(summary(&got), [(16, WcOpcode::Nop, Status::Success)]);
    assert_eq!(q.cq.consumer_index(), 17);
    assert_eq!(
        q.sq.outstanding_wqebbs(),
        3,
        "WQEs 17..=19 still outstanding"
    );
    q.write_raw_block(&[(-2i32 as u32, enhanced_slot(17..19, 1))], 0);
    let got = poll_all(&mut q);
    assert_eq!(
        summary(&got),
        [
            (17, WcOpcode::Nop, Status::Success),
            (18, WcOpcode::Nop, Status::Success)
        ]
    );
}

#[test]
fn a_compressed_entry_on_a_plain_cq_is_still_skipped() {
    let mut q = NullQueues::new(64, 16, 64).unwrap();
    q.write_raw_block(&[(0, basic_title(4)), (1, minis(0..4))], 4);
    let got = poll_all(&mut q);
    assert_eq!(got[0].status, Status::Compressed);
}

/// Requester mini-CQEs of `(counter, send opcode, byte_cnt)`.
fn minis_of(entries: &[(u16, Opcode, u32)]) -> [u8; 64] {
    let mut a = [0u8; 64];
    for (i, &(counter, op, len)) in entries.iter().enumerate() {
        a[8 * i..8 * i + 2].copy_from_slice(&counter.to_be_bytes());
        a[8 * i + 2] = op as u8;
        a[8 * i + 4..8 * i + 8].copy_from_slice(&len.to_be_bytes());
    }
    a
}

/// A NOP (counter 0), an unsignaled NOP (1), a two-WQEBB inline WRITE (2..=3), a READ (4)
/// and a NOP (5), posted on null queues expanding `layout`.
fn mixed_sends(layout: CqeCompLayout) -> NullQueues {
    let mut q = null_zip(layout, 0);
    let remote = mlx5_direct::Remote {
        addr: 0x1000,
        rkey: 7,
    };
    let sge = mlx5_direct::Sge {
        addr: 0x2000,
        len: 16,
        lkey: 3,
    };
    let posts = [
        (SendOp::Nop, Data::NONE, SendFlags::SIGNALED),
        (SendOp::Nop, Data::NONE, SendFlags::UNSIGNALED),
        (
            SendOp::Write(remote),
            Data::Inline(&[5; 64]),
            SendFlags::SIGNALED,
        ),
        (
            SendOp::Read(remote),
            Data::Sges(&[sge]),
            SendFlags::SIGNALED,
        ),
        (SendOp::Nop, Data::NONE, SendFlags::SIGNALED),
    ];
    for (wr_id, (op, data, flags)) in posts.into_iter().enumerate() {
        q.sq.push(wr_id as u64, op, data, flags).unwrap();
    }
    q.sq.ring_doorbell();
    assert_eq!(q.sq.producer_count(), 6);
    q
}

/// The completions of [`mixed_sends`] after its NOP 0: WQEs of several WQEBBs, one not
/// signaled, three opcodes in one block. Read as a responder block (counters title + i,
/// the title's opcode), the same minis would give other WQEs and opcodes.
fn mixed_completions() -> Vec<(u64, WcOpcode, Status, u32)> {
    vec![
        (2, WcOpcode::RdmaWrite, Status::Success, 0),
        (3, WcOpcode::RdmaRead, Status::Success, 16),
        (4, WcOpcode::Nop, Status::Success, 0),
    ]
}

fn with_len(c: &[Completion]) -> Vec<(u64, WcOpcode, Status, u32)> {
    c.iter()
        .map(|c| (c.wr_id, c.opcode, c.status, c.byte_len))
        .collect()
}

#[test]
fn requester_blocks_take_counters_and_opcodes_from_their_minis() {
    let minis = [
        (2, Opcode::RdmaWrite, 0),
        (4, Opcode::RdmaRead, 16),
        (5, Opcode::Nop, 0),
    ];
    // Basic: a title of NOP 0 for four completions, NOP 0 the first.
    let mut q = mixed_sends(CqeCompLayout::Basic);
    let mut all = vec![(0, Opcode::Nop, 0)];
    all.extend(minis);
    q.write_raw_block(&[(0, basic_title(4)), (1, minis_of(&all))], 4);
    let mut want = vec![(0, WcOpcode::Nop, Status::Success, 0)];
    want.extend(mixed_completions());
    assert_eq!(with_len(&poll_all(&mut q)), want);
    assert_eq!(q.sq.outstanding_wqebbs(), 0);
    // Enhanced: NOP 0's normal CQE, then a slot of three.
    let mut q = mixed_sends(CqeCompLayout::Enhanced);
    q.write_raw_block(&[(0, normal_nop(0))], 1);
    let mut slot = minis_of(&minis);
    slot[63] = 2 << 4 | 0x0c;
    q.write_raw_block(&[(0, slot)], 3);
    assert_eq!(with_len(&poll_all(&mut q)), want);
    assert_eq!(q.sq.outstanding_wqebbs(), 0);
}

/// A normal NOP CQE (as [`normal_nop`]) with user index `uidx` (bytes 33..36).
fn normal_nop_of(counter: u16, uidx: u32) -> [u8; 64] {
    let mut t = normal_nop(counter);
    t[32..36].copy_from_slice(&uidx.to_be_bytes());
    t
}

#[test]
fn a_new_enhanced_session_takes_its_own_title() {
    // Session 1: title NOP 0 (user index 0x111), a slot of 1..3; session 2: title NOP 3
    // (user index 0x222), a slot of 4..6. The second slot's completions are its title's.
    let mut q = null_zip(CqeCompLayout::Enhanced, 6);
    q.write_raw_block(&[(0, normal_nop_of(0, 0x111))], 1);
    q.write_raw_block(&[(0, enhanced_slot(1..3, 0))], 2);
    q.write_raw_block(&[(0, normal_nop_of(3, 0x222))], 1);
    q.write_raw_block(&[(0, enhanced_slot(4..6, 0))], 2);
    let got = poll_all(&mut q);
    assert_eq!(summary(&got), nops(6));
    let uidx: Vec<u32> = got.iter().map(Completion::user_index).collect();
    assert_eq!(uidx, [0x111, 0x111, 0x111, 0x222, 0x222, 0x222]);
}

#[test]
fn a_responder_session_numbers_its_receives_from_its_own_title() {
    // The null QP has no receives: every receive completion is reported with the counter
    // the expansion gave it. Session 1 titled by receive 10, session 2 by receive 40.
    let mut q = null_zip(CqeCompLayout::Enhanced, 0);
    let recv = |counter: u16| {
        let mut t = normal_nop(counter);
        t[63] = (CqeOpcode::RespSend as u8) << 4;
        t
    };
    q.write_raw_block(&[(0, recv(10))], 1);
    q.write_raw_block(&[(0, enhanced_slot(0..2, 0))], 2);
    q.write_raw_block(&[(0, recv(40))], 1);
    q.write_raw_block(&[(0, enhanced_slot(0..3, 0))], 3);
    let got = poll_all(&mut q);
    let status: Vec<Status> = got.iter().map(|c| c.status).collect();
    let unknown = |c| Status::UnknownWqe(c);
    assert_eq!(status, [10, 11, 12, 40, 41, 42, 43].map(unknown), "{got:?}");
    assert!(got
        .iter()
        .all(|c| c.qpn == NULL_QPN && c.opcode == WcOpcode::Recv));
}

#[test]
fn only_a_successful_normal_cqe_of_its_pass_titles_a_session() {
    // A title candidate at index 0, a slot of two at index 1: the slot expands (two NOPs
    // after the title's) or is reported without a title.
    let check = |title: [u8; 64], titles: bool| {
        let mut q = null_zip(CqeCompLayout::Enhanced, 3);
        q.write_raw_block(&[(0, title)], 1);
        q.write_raw_block(&[(0, enhanced_slot(1..3, 0))], 2);
        let got = poll_all(&mut q);
        let slot: Vec<Status> = got[1..].iter().map(|c| c.status).collect();
        if titles {
            assert_eq!(slot, [Status::Success; 2], "{title:02x?}");
        } else {
            assert_eq!(
                slot,
                [Status::BadCompression(BadCompression::NoTitle)],
                "{title:02x?}"
            );
            assert_eq!(q.cq.consumer_index(), 2, "the slot alone consumed");
        }
    };
    let with_op = |op: CqeOpcode| {
        let mut t = normal_nop(0);
        t[63] = (op as u8) << 4;
        t
    };
    check(normal_nop(0), true);
    // Every success opcode titles (the responder ones too: the slot's minis are then
    // receives, which the null QP does not have), an error does not.
    for op in [
        CqeOpcode::RespWrImm,
        CqeOpcode::RespSend,
        CqeOpcode::RespSendImm,
        CqeOpcode::RespSendInv,
    ] {
        let mut q = null_zip(CqeCompLayout::Enhanced, 0);
        q.write_raw_block(&[(0, with_op(op))], 1);
        q.write_raw_block(&[(0, enhanced_slot(1..3, 0))], 2);
        let got = poll_all(&mut q);
        let slot: Vec<Status> = got[1..].iter().map(|c| c.status).collect();
        assert_eq!(
            slot,
            [Status::UnknownWqe(1), Status::UnknownWqe(2)],
            "{op:?}"
        );
    }
    for op in [CqeOpcode::ReqErr, CqeOpcode::RespErr] {
        let mut t = with_op(op);
        t[55] = 0x05;
        check(t, false);
    }
}

#[test]
fn a_compressed_slot_never_titles_the_next() {
    // A one-mini slot at the CQ's first entry has no title; the next slot's candidate is
    // that slot (REQ opcode, validity count 0), which is compressed.
    let mut q = null_zip(CqeCompLayout::Enhanced, 3);
    q.write_raw_block(&[(0, enhanced_slot(0..1, 0))], 1);
    q.write_raw_block(&[(0, enhanced_slot(1..3, 0))], 2);
    let got = poll_all(&mut q);
    let no_title = Status::BadCompression(BadCompression::NoTitle);
    assert_eq!(summary(&got), [(0, WcOpcode::default(), no_title); 2]);
    assert_eq!(q.sq.outstanding_wqebbs(), 3);
}

#[test]
fn the_entry_before_the_first_has_no_title() {
    // The CQ's last entry made to look like a successful CQE of the pass before index 0
    // (validity count 0xff): index 0 has no pass before it, so no title.
    let mut q = null_zip(CqeCompLayout::Enhanced, 2);
    let mut last = normal_nop(0);
    last[62] = 0xff;
    q.write_raw_block(&[(15, last), (0, enhanced_slot(0..2, 0))], 2);
    let got = poll_all(&mut q);
    assert_eq!(
        got[0].status,
        Status::BadCompression(BadCompression::NoTitle)
    );
    assert_eq!(q.sq.outstanding_wqebbs(), 2);
}
