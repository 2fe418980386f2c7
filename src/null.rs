//! The "null device": a send queue and a CQ over plain memory with [`NullUar`] as the UAR.
//!
//! Nothing executes the WQEs: [`NullQueues::complete`] writes the CQEs a device would.
//! This is what the CPU-cost benchmarks measure (post and poll cost without a device: the
//! cases are [`CpuCase`], prepared by [`CpuBench`] for the timed loops of the `cpu-bench`
//! workspace package, which `mlx5-perf cpu` also runs; results in `docs/benchmarks.md`),
//! and what the data path's byte-level unit tests inspect.

use core::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::cq::{Completion, CompletionQueue, CqAttachments, CqDesc, QpEntry, RecvShared};
use crate::cqz::CqeCompression;
use crate::error::Error;
use crate::mem::Memory;
use crate::mmio::NullUar;
use crate::prm::{
    basic_array_slot, CqeOpcode, Opcode, CQE_SIZE, MINI_CQES_PER_ARRAY, OP_OWN_COMPRESSED,
    SEND_WQE_BB,
};
use crate::rq::RqShared;
use crate::sq::{Data, DoorbellMode, Remote, SendFlags, SendOp, SendQueue, SqDesc, SqShared};

/// QP number of the null device's QP.
pub const NULL_QPN: u32 = 0x1234;
/// BlueFlame half size of the null device's register.
pub const NULL_BF_SIZE: usize = 256;
/// Offset of the null device's doorbell register in its UAR page.
pub const NULL_BF_OFFSET: usize = 0x800;

/// A ready-to-post send queue and a CQ, over plain memory.
#[derive(Debug)]
pub struct NullQueues {
    /// The send queue (ready to post; its UAR is plain memory).
    pub sq: SendQueue<NullUar>,
    /// The CQ serving it.
    pub cq: CompletionQueue<NullUar>,
    cq_mem: Memory,
    cqe_cnt: u32,
    produced: u32,
    _sq_mem: Memory,
    _dbrec: Memory,
}

impl NullQueues {
    /// A send queue of `sq_wqebbs` WQEBBs and a CQ of `cqe_cnt` 64-byte entries (both
    /// powers of two), `max_inline` inline bytes and 4 SGEs.
    pub fn new(sq_wqebbs: u32, cqe_cnt: u32, max_inline: usize) -> Result<Self, Error> {
        if !sq_wqebbs.is_power_of_two() || !cqe_cnt.is_power_of_two() {
            return Err(Error::InvalidArgument("sizes must be powers of two"));
        }
        let sq_mem = Memory::new(sq_wqebbs as usize * SEND_WQE_BB)?;
        let cq_mem = Memory::new(cqe_cnt as usize * CQE_SIZE)?;
        let dbrec = Memory::new(CQE_SIZE)?;
        let sq_desc = SqDesc {
            buf: sq_mem.non_null(),
            wqe_cnt: sq_wqebbs,
            dbrec: dbrec.non_null().cast(),
            bf_offset: NULL_BF_OFFSET,
            bf_size: NULL_BF_SIZE,
            qpn: NULL_QPN,
            max_wqe_size: 1008,
            max_inline,
            max_sge: 4,
        };
        let cq_desc = CqDesc {
            buf: cq_mem.non_null(),
            cqe_cnt,
            cqe_size: CQE_SIZE,
            // SAFETY: 32 bytes into a 64-byte allocation: the CQ's two words.
            dbrec: unsafe { dbrec.non_null().add(32).cast() },
            cqn: 1,
        };
        let errored = Arc::new(AtomicBool::new(false));
        let sq_shared = Arc::new(SqShared::new(sq_wqebbs, NULL_QPN));
        let attachments = Arc::new(CqAttachments::default());
        attachments.attach(QpEntry {
            qpn: NULL_QPN,
            sq: sq_shared.clone(),
            sqe: false,
            streams: false,
            eth_rq: false,
            recv: RecvShared::Rq(Arc::new(RqShared::new(1, None))),
            errored: errored.clone(),
        });
        // SAFETY: the memory lives in the returned value, which drops the queues first
        // (field order).
        let mut sq = unsafe { SendQueue::new(&sq_desc, NullUar::default(), sq_shared) };
        sq.set_ready(true);
        // SAFETY: as above.
        let cq = unsafe {
            CompletionQueue::new(
                &cq_desc,
                NullUar::default(),
                attachments,
                Arc::default(),
                false,
            )
        };
        Ok(NullQueues {
            sq,
            cq,
            cq_mem,
            cqe_cnt,
            produced: 0,
            _sq_mem: sq_mem,
            _dbrec: dbrec,
        })
    }

    /// Writes the requester CQE a device would write for the WQE that starts at WQEBB
    /// counter `wqe_counter`, as opcode `opcode` of this QP (`cqe_opcode` REQ, or an error
    /// opcode with `syndrome`).
    pub fn complete(
        &mut self,
        wqe_counter: u16,
        opcode: Opcode,
        cqe_opcode: CqeOpcode,
        syndrome: u8,
    ) {
        let mut cqe = [0u8; CQE_SIZE];
        let qpn_word = ((opcode as u32) << 24 | NULL_QPN).to_be_bytes();
        cqe[55] = syndrome;
        cqe[56..60].copy_from_slice(&qpn_word);
        cqe[60..62].copy_from_slice(&wqe_counter.to_be_bytes());
        let owner = ((self.produced / self.cqe_cnt) & 1) as u8;
        cqe[63] = (cqe_opcode as u8) << 4 | owner;
        self.write_raw_cqe(&cqe);
    }

    /// Writes 64 arbitrary bytes as the next CQE (byte 63, `op_own`, last), as a device
    /// (or a hostile one) would.
    pub fn write_raw_cqe(&mut self, cqe: &[u8; CQE_SIZE]) {
        let offset = (self.produced % self.cqe_cnt) as usize * CQE_SIZE;
        self.cq_mem.write(offset, &cqe[..CQE_SIZE - 1]);
        self.cq_mem
            .write(offset + CQE_SIZE - 1, &cqe[CQE_SIZE - 1..]);
        self.produced = self.produced.wrapping_add(1);
    }

    /// Writes a basic compressed block of `n` successful NOP completions for the WQEs at
    /// counters `first`, `first + 1`, ... (one WQEBB each), as a device would.
    pub fn complete_zipped(&mut self, first: u16, n: u32) {
        let mut title = [0u8; CQE_SIZE];
        title[44..48].copy_from_slice(&n.to_be_bytes());
        let qpn_word = ((Opcode::Nop as u32) << 24 | NULL_QPN).to_be_bytes();
        title[56..60].copy_from_slice(&qpn_word);
        let owner = ((self.produced / self.cqe_cnt) & 1) as u8;
        title[63] = OP_OWN_COMPRESSED | owner;
        let mut block = vec![(0, title)];
        for (j, counters) in (0..n)
            .collect::<Vec<_>>()
            .chunks(MINI_CQES_PER_ARRAY)
            .enumerate()
        {
            let mut array = [0u8; CQE_SIZE];
            for (k, i) in counters.iter().enumerate() {
                let counter = first.wrapping_add(*i as u16).to_be_bytes();
                array[8 * k..8 * k + 3].copy_from_slice(&[
                    counter[0],
                    counter[1],
                    Opcode::Nop as u8,
                ]);
            }
            block.push((basic_array_slot(j as u32), array));
        }
        self.write_raw_block(&block, n);
    }

    /// Writes a compressed block as a device would: each `(offset, bytes)` at the
    /// producer index + offset (the one at offset 0, the title or slot that hands the block
    /// over, last), then moves the producer index on by `taken` CQ indices.
    pub fn write_raw_block(&mut self, entries: &[(u32, [u8; CQE_SIZE])], taken: u32) {
        let at = |q: &Self, offset: u32| {
            (q.produced.wrapping_add(offset) % q.cqe_cnt) as usize * CQE_SIZE
        };
        for (offset, bytes) in entries.iter().filter(|(o, _)| *o != 0) {
            self.cq_mem.write(at(self, *offset), bytes);
        }
        for (_, bytes) in entries.iter().filter(|(o, _)| *o == 0) {
            self.write_raw_cqe(bytes);
            self.produced = self.produced.wrapping_sub(1);
        }
        self.produced = self.produced.wrapping_add(taken);
    }

    /// Makes the CQ expand compressed CQEs of `compression` (as one created with it).
    pub fn expand_compressed(&mut self, compression: CqeCompression) {
        self.cq.expand_compressed(compression);
    }

    /// CQEs written so far.
    pub fn produced(&self) -> u32 {
        self.produced
    }
}

/// The CPU-cost cases as the null device prepares them: what the timed loops of the
/// `cpu-bench` workspace package (package `mlx5-cpu-bench`, which uses this crate as an
/// application does) post or poll between the device's untimed steps. That package adds
/// the other dimension, whether the work request is a constant or read at run time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CpuCase {
    /// One 8-byte inline RDMA WRITE, signaled, posted alone with BlueFlame
    /// ([`DoorbellMode::BlueFlame`]: the whole 64-byte WQE copied to the register).
    WriteInlineBf,
    /// The same WRITE rung with the 8-byte doorbell ([`DoorbellMode::Doorbell`]).
    WriteInlineDb,
    /// One WQE of a batch of [`CPU_BATCH`] such WRITEs pushed and rung with one doorbell
    /// ([`DoorbellMode::BlueFlame`], which uses the 8-byte doorbell for batches as
    /// rdma-core does for post lists); the cost reported is per WQE.
    WriteBatch32,
    /// One WQE of a list of [`CPU_BATCH`] such WRITEs posted with one
    /// [`SendQueue::post_many`](crate::sq::SendQueue::post_many) call (one doorbell, as for
    /// [`CpuCase::WriteBatch32`]); the cost reported is per WQE.
    WriteList32,
    /// One successful requester CQE polled (`poll` into a one-entry slice).
    PollOne,
    /// One poll of an empty CQ.
    PollEmpty,
    /// One successful requester CQE polled from a CQ with compression, whose device wrote
    /// basic blocks of [`CPU_ZIP_BLOCK`] completions: the expansion's cost spread over the
    /// completions of a block.
    PollZipped,
}

/// Completions per compressed block in [`CpuCase::PollZipped`] (the largest block of the
/// facts' table).
pub const CPU_ZIP_BLOCK: u32 = 64;

/// WQEs per batch in [`CpuCase::WriteBatch32`] and [`CpuCase::WriteList32`].
pub const CPU_BATCH: u32 = 32;

/// The remote address the CPU-cost WRITEs name (never touched: nothing executes them).
pub const CPU_REMOTE: Remote = Remote {
    addr: 0x1000,
    rkey: 0x100,
};

/// The 8 inline bytes of every CPU-cost WRITE.
pub const CPU_PAYLOAD: [u8; 8] = [0x5a; 8];

impl CpuCase {
    /// Every case, in report order.
    pub const ALL: [CpuCase; 7] = [
        CpuCase::WriteInlineBf,
        CpuCase::WriteInlineDb,
        CpuCase::WriteBatch32,
        CpuCase::WriteList32,
        CpuCase::PollOne,
        CpuCase::PollEmpty,
        CpuCase::PollZipped,
    ];

    /// A short stable name (the harness adds a suffix for run-time work requests).
    pub fn name(self) -> &'static str {
        match self {
            CpuCase::WriteInlineBf => "post_write8_inline_bf",
            CpuCase::WriteInlineDb => "post_write8_inline_db",
            CpuCase::WriteBatch32 => "post_write8_inline_batch32",
            CpuCase::WriteList32 => "post_write8_inline_list32",
            CpuCase::PollOne => "poll_one_cqe",
            CpuCase::PollEmpty => "poll_empty_cq",
            CpuCase::PollZipped => "poll_one_cqe_zipped",
        }
    }

    /// Whether the case posts (the rest poll).
    pub fn posts(self) -> bool {
        !matches!(
            self,
            CpuCase::PollOne | CpuCase::PollEmpty | CpuCase::PollZipped
        )
    }
}

/// Send-ring WQEBBs of a CPU-cost queue: every post case fills it exactly before the
/// untimed retire (one WQEBB per 8-byte inline WRITE), and [`CpuCase::PollOne`] polls the
/// CQEs of this many outstanding WQEs per timed chunk.
const CPU_SQ_WQEBBS: u32 = 256;
/// CQ entries of a CPU-cost queue.
const CPU_CQES: u32 = 1024;

/// A CPU-cost case over a [`NullQueues`], ready to run.
///
/// [`CpuBench::run`] alternates an untimed step that does the device's share and a timed
/// chunk of operations (a function the caller gives: the harness's own loops):
/// - post cases: the timed chunk fills the send ring (256 WQEBBs); the untimed step writes
///   one CQE for the last WQE and polls it, which retires the whole ring, so a post never
///   meets a full queue and never pays for completions;
/// - [`CpuCase::PollOne`]: the untimed step posts signaled NOPs until the send ring is
///   full (256) and writes a requester CQE for each, owner bit of the current pass; the
///   timed chunk polls up to that many, one call each, every one retiring its WQE;
/// - [`CpuCase::PollEmpty`]: nothing to prepare; every call finds an invalid entry;
/// - [`CpuCase::PollZipped`]: as `PollOne`, the CQEs written as basic compressed blocks.
#[derive(Debug)]
pub struct CpuBench {
    queues: NullQueues,
    case: CpuCase,
    out: [Completion; 1],
}

impl CpuBench {
    /// The queues for `case`.
    pub fn new(case: CpuCase) -> Result<Self, Error> {
        let mut queues = NullQueues::new(CPU_SQ_WQEBBS, CPU_CQES, 64)?;
        if case == CpuCase::PollZipped {
            queues.expand_compressed(CqeCompression::BASIC);
        }
        queues.sq.set_mode(match case {
            CpuCase::WriteInlineDb => DoorbellMode::Doorbell,
            _ => DoorbellMode::BlueFlame,
        });
        Ok(CpuBench {
            queues,
            case,
            out: [Completion::default()],
        })
    }

    /// The case this value runs.
    pub fn case(&self) -> CpuCase {
        self.case
    }

    /// The queues (to check what a run did).
    pub fn queues(&self) -> &NullQueues {
        &self.queues
    }

    /// Operations per timed chunk.
    fn chunk(&self) -> u64 {
        match self.case {
            CpuCase::PollEmpty => u64::MAX,
            _ => CPU_SQ_WQEBBS as u64,
        }
    }

    /// Runs `ops` operations (WQEs posted or polls) in timed chunks of `timed(queues, out,
    /// n)`, which does `n` operations of the case (polls into `out`) and returns how many
    /// behaved as expected; returns the time spent in the timed chunks only.
    ///
    /// # Panics
    /// If an operation does not behave as the case expects (a refused post, a poll that
    /// returns the wrong count): the numbers would mean nothing.
    pub fn run(
        &mut self,
        ops: u64,
        mut timed: impl FnMut(&mut NullQueues, &mut [Completion; 1], u64) -> u64,
    ) -> Duration {
        let mut spent = Duration::ZERO;
        let mut left = ops;
        while left != 0 {
            let n = left.min(self.chunk());
            self.prepare();
            let start = Instant::now();
            let done = timed(&mut self.queues, &mut self.out, n);
            spent += start.elapsed();
            assert_eq!(
                done,
                n,
                "{}: {done} of {n} operations done",
                self.case.name()
            );
            left = left.saturating_sub(n);
        }
        spent
    }

    /// The device's share, outside the timed region: retire every posted WQE, or write a
    /// CQ's worth of CQEs.
    fn prepare(&mut self) {
        let q = &mut self.queues;
        match self.case {
            CpuCase::PollOne => {
                assert!(self.out[0].status.is_ok(), "{:?}", self.out[0]);
                while q.sq.free_wqebbs() != 0 {
                    let counter = q.sq.producer_count() as u16;
                    q.sq.push(0, SendOp::Nop, Data::NONE, SendFlags::SIGNALED)
                        .expect("room in the ring");
                    q.complete(counter, Opcode::Nop, CqeOpcode::Req, 0);
                }
                q.sq.ring_doorbell();
            }
            CpuCase::PollZipped => {
                assert!(self.out[0].status.is_ok(), "{:?}", self.out[0]);
                // A run whose length is not a whole number of chunks leaves part of the
                // ring outstanding: the last block takes only what is free.
                while q.sq.free_wqebbs() != 0 {
                    let first = q.sq.producer_count() as u16;
                    let n = CPU_ZIP_BLOCK.min(q.sq.free_wqebbs());
                    for _ in 0..n {
                        q.sq.push(0, SendOp::Nop, Data::NONE, SendFlags::SIGNALED)
                            .expect("room in the ring");
                    }
                    q.complete_zipped(first, n);
                }
                q.sq.ring_doorbell();
            }
            CpuCase::PollEmpty => {}
            _ => {
                if q.sq.outstanding_wqebbs() != 0 {
                    let last = q.sq.producer_count().wrapping_sub(1) as u16;
                    q.complete(last, Opcode::RdmaWrite, CqeOpcode::Req, 0);
                    assert_eq!(q.cq.poll(&mut self.out), 1);
                    assert_eq!(q.sq.outstanding_wqebbs(), 0);
                }
            }
        }
    }
}
