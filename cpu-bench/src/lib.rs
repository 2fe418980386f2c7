//! CPU cost per operation of the data path, measured as an application sees it.
//!
//! The timed loops live here, in a crate of their own that depends on `mlx5-direct` as an
//! application does (another crate, the default release profile, no LTO): what crosses the
//! crate boundary is compiled as it is for a user, calls included. The null device
//! (`mlx5_direct::null`) prepares each case and does the device's share between the timed
//! chunks ([`mlx5_direct::null::CpuBench`]).
//!
//! Each post case runs with a **constant** work request (opcode, data and flags known at
//! the call site, so the compiler folds the per-operation `match`es) and with a
//! **run-time** one (a work request in memory behind a reference from
//! [`std::hint::black_box`], every field loaded on every operation, as when the work
//! request comes from the application's data; posted by reference: `post_wr`, `push_wr`,
//! `post_many` over `&SendWr`), and with a **prepared** one (the same work request
//! checked and encoded once by `SendQueue::prepare`, a `PreparedWr` in memory behind
//! `black_box` posted by reference: `post_prepared`, `push_prepared`,
//! `post_many_prepared`). Measured by `benches/callgrind.sh` (instructions, through the
//! `cpu_ops` binary), by `cargo bench -p mlx5-cpu-bench` (criterion, ns) and by
//! `mlx5-perf cpu`; results in `docs/benchmarks.md`.

#![deny(missing_docs)]

use std::hint::black_box;
use std::time::Duration;

use mlx5_direct::mmio::NullUar;
use mlx5_direct::null::{CpuBench, CpuCase, NullQueues, CPU_BATCH, CPU_PAYLOAD, CPU_REMOTE};
use mlx5_direct::{
    Completion, CompletionQueue, Data, Error, PostError, PreparedWr, Remote, SendFlags, SendOp,
    SendQueue, SendWr,
};

/// How a post case's work request is given.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Wr {
    /// Constants at the call site.
    Const,
    /// Every field read at run time (through `black_box`) on every operation.
    Runtime,
    /// Prepared once ([`SendQueue::prepare`]), read at run time (through `black_box`) on
    /// every operation.
    Prepared,
    /// The typed call of the operation (`write_inline`, `push_write_inline`) with every
    /// operand read at run time (through `black_box`) on every operation; for a poll, the
    /// lean poll (`poll_with`, the `wr_id` and the status read of each completion).
    Typed,
    /// Prepared once, then patched before every post (a new remote address and payload,
    /// read at run time through `black_box`, and the `wr_id`): `set_remote`,
    /// `set_payload`, `post_prepared`.
    Patched,
}

/// One measured case: what the null device prepares and how the work request is given
/// (polls take no work request: [`Wr::Const`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Case {
    /// The operation.
    pub op: CpuCase,
    /// Constant or run-time work request.
    pub wr: Wr,
}

impl Case {
    /// Every case, in report order: each post case constant, run-time and prepared, then
    /// the polls.
    pub const ALL: [Case; 21] = [
        Case::new(CpuCase::WriteInlineBf, Wr::Const),
        Case::new(CpuCase::WriteInlineBf, Wr::Runtime),
        Case::new(CpuCase::WriteInlineBf, Wr::Prepared),
        Case::new(CpuCase::WriteInlineBf, Wr::Typed),
        Case::new(CpuCase::WriteInlineBf, Wr::Patched),
        Case::new(CpuCase::WriteInlineDb, Wr::Const),
        Case::new(CpuCase::WriteInlineDb, Wr::Runtime),
        Case::new(CpuCase::WriteInlineDb, Wr::Prepared),
        Case::new(CpuCase::WriteInlineDb, Wr::Typed),
        Case::new(CpuCase::WriteBatch32, Wr::Const),
        Case::new(CpuCase::WriteBatch32, Wr::Runtime),
        Case::new(CpuCase::WriteBatch32, Wr::Prepared),
        Case::new(CpuCase::WriteBatch32, Wr::Typed),
        Case::new(CpuCase::WriteList32, Wr::Const),
        Case::new(CpuCase::WriteList32, Wr::Runtime),
        Case::new(CpuCase::WriteList32, Wr::Prepared),
        Case::new(CpuCase::PollOne, Wr::Const),
        Case::new(CpuCase::PollOne, Wr::Typed),
        Case::new(CpuCase::PollEmpty, Wr::Const),
        Case::new(CpuCase::PollEmpty, Wr::Typed),
        Case::new(CpuCase::PollZipped, Wr::Const),
    ];

    const fn new(op: CpuCase, wr: Wr) -> Case {
        Case { op, wr }
    }

    /// A stable name: the null device's name of the operation, `_rt` added for a run-time
    /// work request, `_prep` for a prepared one, `_typed` for the typed call (`_lean` for the lean poll), `_patched` for a patched
    /// prepared one.
    pub fn name(self) -> String {
        match self.wr {
            Wr::Const => self.op.name().to_string(),
            Wr::Runtime => format!("{}_rt", self.op.name()),
            Wr::Prepared => format!("{}_prep", self.op.name()),
            Wr::Typed if !self.op.posts() => format!("{}_lean", self.op.name()),
            Wr::Typed => format!("{}_typed", self.op.name()),
            Wr::Patched => format!("{}_patched", self.op.name()),
        }
    }

    /// The case called `name` (see [`Case::name`]).
    pub fn from_name(name: &str) -> Option<Case> {
        Case::ALL.into_iter().find(|c| c.name() == name)
    }
}

/// A case ready to run: the null device's queues, the work requests prepared for them and
/// the case's timed loop.
#[derive(Debug)]
pub struct Bench {
    bench: CpuBench,
    case: Case,
    prepared: [PreparedWr<'static>; CPU_BATCH as usize],
}

impl Bench {
    /// The queues for `case`.
    ///
    /// # Panics
    /// If the null device's queue refuses to prepare the benchmark's WRITE (both are
    /// fixed: that is a bug).
    pub fn new(case: Case) -> Result<Bench, Error> {
        let bench = CpuBench::new(case.op)?;
        let prepared = bench
            .queues()
            .sq
            .prepare(&WRITE)
            .expect("the null queue takes the benchmark's WRITE");
        Ok(Bench {
            bench,
            case,
            prepared: [prepared; CPU_BATCH as usize],
        })
    }

    /// Runs `ops` operations; returns the time spent in the timed chunks only (see
    /// [`CpuBench::run`]).
    pub fn run(&mut self, ops: u64) -> Duration {
        let (case, prepared) = (self.case, &self.prepared);
        self.bench.run(ops, |queues, out, n| {
            timed_chunk(case, queues, prepared, out, n)
        })
    }

    /// The null device's queues (to check what a run did).
    pub fn queues(&self) -> &NullQueues {
        self.bench.queues()
    }
}

/// `n` operations of `case` (`prepared`: the prepared work requests of the queues);
/// returns how many were done before the first that did not behave as expected. The only
/// function the instruction counter looks at (`valgrind --toggle-collect='*timed_chunk*'`).
/// Each kind of loop is a function of its own, compiled on its own as in an application.
#[inline(never)]
pub fn timed_chunk(
    case: Case,
    q: &mut NullQueues,
    prepared: &[PreparedWr<'static>; CPU_BATCH as usize],
    out: &mut [Completion; 1],
    n: u64,
) -> u64 {
    let sq = &mut q.sq;
    match (case.op, case.wr) {
        (CpuCase::WriteInlineBf | CpuCase::WriteInlineDb, Wr::Const) => post_chunk(sq, n),
        (CpuCase::WriteInlineBf | CpuCase::WriteInlineDb, Wr::Runtime) => post_chunk_rt(sq, n),
        (CpuCase::WriteInlineBf | CpuCase::WriteInlineDb, Wr::Prepared) => {
            post_chunk_prep(sq, &prepared[0], n)
        }
        (CpuCase::WriteInlineBf | CpuCase::WriteInlineDb, Wr::Typed) => post_chunk_typed(sq, n),
        (_, Wr::Patched) => post_chunk_patched(sq, prepared[0], n),
        (CpuCase::WriteBatch32, Wr::Typed) => batch_chunk_typed(sq, n),
        (CpuCase::WriteBatch32, Wr::Const) => batch_chunk(sq, n),
        (CpuCase::WriteBatch32, Wr::Runtime) => batch_chunk_rt(sq, n),
        (CpuCase::WriteBatch32, Wr::Prepared) => batch_chunk_prep(sq, &prepared[0], n),
        (CpuCase::WriteList32, Wr::Const | Wr::Typed) => list_chunk(sq, n),
        (CpuCase::WriteList32, Wr::Runtime) => list_chunk_rt(sq, n),
        (CpuCase::WriteList32, Wr::Prepared) => list_chunk_prep(sq, prepared, n),
        (CpuCase::PollOne, Wr::Typed) => poll_lean_chunk::<1>(&mut q.cq, n),
        (CpuCase::PollEmpty, Wr::Typed) => poll_lean_chunk::<0>(&mut q.cq, n),
        (CpuCase::PollOne | CpuCase::PollZipped, _) => poll_chunk::<1>(&mut q.cq, out, n),
        (CpuCase::PollEmpty, _) => poll_chunk::<0>(&mut q.cq, out, n),
    }
}

// The timed loops. Each stops at the first unexpected result, so the loop itself costs only
// its counter (the two-`N` difference of the harness keeps it in the count).

/// The WRITE every post case posts (`wr_id` aside), as constants at the call site.
const WRITE: SendWr<'static> = SendWr {
    wr_id: 0,
    op: SendOp::Write(CPU_REMOTE),
    data: Data::Inline(&CPU_PAYLOAD),
    flags: SendFlags::SIGNALED,
};

/// The same WRITE in memory, for the run-time cases.
static WRITE_IN_MEMORY: SendWr<'static> = WRITE;

/// A list of [`CPU_BATCH`] such WRITEs in memory, for the run-time list case.
static WRITE_LIST: [SendWr<'static>; CPU_BATCH as usize] = [WRITE; CPU_BATCH as usize];

/// The run-time WRITE: a reference the compiler knows nothing about, so every field is
/// loaded and every `match` on it runs, on every operation.
#[inline(always)]
fn runtime_write() -> &'static SendWr<'static> {
    black_box(&WRITE_IN_MEMORY)
}

/// `n` × `post` of the constant WRITE.
#[inline(never)]
fn post_chunk(sq: &mut SendQueue<NullUar>, n: u64) -> u64 {
    for i in 0..n {
        if sq.post(i, WRITE.op, WRITE.data, WRITE.flags).is_err() {
            return i;
        }
    }
    n
}

/// `n` × `post_wr` of the run-time WRITE (by reference, as a work request in memory is
/// best posted).
#[inline(never)]
fn post_chunk_rt(sq: &mut SendQueue<NullUar>, n: u64) -> u64 {
    for i in 0..n {
        if sq.post_wr(runtime_write()).is_err() {
            return i;
        }
    }
    n
}

/// The operands of the typed WRITE in memory.
static OPERANDS: (Remote, &[u8], SendFlags) = (CPU_REMOTE, &CPU_PAYLOAD, SendFlags::SIGNALED);

/// The operands of the typed WRITE, read at run time: the remote buffer, the payload and
/// the flags loaded through a reference from `black_box` (the `wr_id` is the loop
/// counter), as [`runtime_write`] gives the run-time work request.
#[inline(always)]
fn runtime_operands() -> (Remote, &'static [u8], SendFlags) {
    *black_box(&OPERANDS)
}

/// `n` × `write_inline` with run-time operands.
#[inline(never)]
fn post_chunk_typed(sq: &mut SendQueue<NullUar>, n: u64) -> u64 {
    for i in 0..n {
        let (remote, data, flags) = runtime_operands();
        if sq.write_inline(i, remote, data, flags).is_err() {
            return i;
        }
    }
    n
}

/// `n` × `post_prepared` of the prepared WRITE `wr` (a copy of it, patched in place)
/// with its remote address, payload and `wr_id` set before each post (the operands read
/// through `black_box`, as the typed call's).
#[inline(never)]
fn post_chunk_patched(sq: &mut SendQueue<NullUar>, mut wr: PreparedWr<'static>, n: u64) -> u64 {
    for i in 0..n {
        let (remote, data, _) = runtime_operands();
        wr.set_wr_id(i);
        if wr.set_remote(remote).is_err() {
            return i;
        }
        wr.set_payload(data);
        if sq.post_prepared(&wr).is_err() {
            return i;
        }
    }
    n
}

/// `n` × `post_prepared` of the prepared WRITE `wr`, read through `black_box` on every
/// post.
#[inline(never)]
fn post_chunk_prep(sq: &mut SendQueue<NullUar>, wr: &PreparedWr<'static>, n: u64) -> u64 {
    for i in 0..n {
        if sq.post_prepared(black_box(wr)).is_err() {
            return i;
        }
    }
    n
}

/// `n` operations in runs of [`CPU_BATCH`]: `run(start, end)` does operations
/// `start..end` and returns, if one failed, how many were done in all.
#[inline(always)]
fn in_batches(n: u64, mut run: impl FnMut(u64, u64) -> Result<(), u64>) -> u64 {
    let mut i = 0;
    while i < n {
        let end = n.min(i + CPU_BATCH as u64);
        if let Err(done) = run(i, end) {
            return done;
        }
        i = end;
    }
    n
}

/// `n` × `push(sq)` (one WQE each), with a `ring_doorbell` after every [`CPU_BATCH`].
#[inline(always)]
fn batches(
    sq: &mut SendQueue<NullUar>,
    n: u64,
    push: impl Fn(&mut SendQueue<NullUar>) -> Result<(), PostError>,
) -> u64 {
    in_batches(n, |start, end| {
        for done in start..end {
            push(sq).map_err(|_| done)?;
        }
        sq.ring_doorbell();
        Ok(())
    })
}

/// [`batches`] of `push_wr` of the constant WRITE.
#[inline(never)]
fn batch_chunk(sq: &mut SendQueue<NullUar>, n: u64) -> u64 {
    batches(sq, n, |sq| sq.push_wr(&WRITE))
}

/// [`batches`] of `push_wr` of the run-time WRITE.
#[inline(never)]
fn batch_chunk_rt(sq: &mut SendQueue<NullUar>, n: u64) -> u64 {
    batches(sq, n, |sq| sq.push_wr(runtime_write()))
}

/// [`batches`] of `push_write_inline` with run-time operands.
#[inline(never)]
fn batch_chunk_typed(sq: &mut SendQueue<NullUar>, n: u64) -> u64 {
    batches(sq, n, |sq| {
        let (remote, data, flags) = runtime_operands();
        sq.push_write_inline(0, remote, data, flags)
    })
}

/// [`batches`] of `push_prepared` of the prepared WRITE `wr`, through `black_box` on every
/// push.
#[inline(never)]
fn batch_chunk_prep(sq: &mut SendQueue<NullUar>, wr: &PreparedWr<'static>, n: u64) -> u64 {
    batches(sq, n, |sq| sq.push_prepared(black_box(wr)))
}

/// `n` WRs in lists of [`CPU_BATCH`], `post(sq, start, end)` posting WRs `start..end` as
/// one list (returning how many it posted before a refusal).
#[inline(always)]
fn lists(
    sq: &mut SendQueue<NullUar>,
    n: u64,
    post: impl Fn(&mut SendQueue<NullUar>, u64, u64) -> Result<usize, (usize, PostError)>,
) -> u64 {
    in_batches(n, |start, end| match post(sq, start, end) {
        Ok(_) => Ok(()),
        Err((posted, _)) => Err(start + posted as u64),
    })
}

/// [`lists`] of `post_many` of the constant WRITE, built by value.
#[inline(never)]
fn list_chunk(sq: &mut SendQueue<NullUar>, n: u64) -> u64 {
    lists(sq, n, |sq, start, end| {
        sq.post_many((start..end).map(|wr_id| SendWr { wr_id, ..WRITE }))
    })
}

/// [`lists`] of `post_many` of the run-time list in memory, by reference.
#[inline(never)]
fn list_chunk_rt(sq: &mut SendQueue<NullUar>, n: u64) -> u64 {
    lists(sq, n, |sq, start, end| {
        sq.post_many(black_box(&WRITE_LIST)[..(end - start) as usize].iter())
    })
}

/// [`lists`] of `post_many_prepared` of the prepared list `wrs` (behind `black_box`).
#[inline(never)]
fn list_chunk_prep(
    sq: &mut SendQueue<NullUar>,
    wrs: &[PreparedWr<'static>; CPU_BATCH as usize],
    n: u64,
) -> u64 {
    lists(sq, n, |sq, start, end| {
        sq.post_many_prepared(black_box(wrs)[..(end - start) as usize].iter())
    })
}

/// `n` polls into `out`, each expected to return `EXPECT` completions.
#[inline(never)]
fn poll_chunk<const EXPECT: usize>(
    cq: &mut CompletionQueue<NullUar>,
    out: &mut [Completion; 1],
    n: u64,
) -> u64 {
    for i in 0..n {
        if cq.poll(out) != EXPECT {
            return i;
        }
    }
    n
}

/// `n` lean polls (`poll_with`, one completion at most), each expected to find `EXPECT`
/// successful completions; the `wr_id`s are summed (and the sum kept through `black_box`),
/// so that each is read.
#[inline(never)]
fn poll_lean_chunk<const EXPECT: usize>(cq: &mut CompletionQueue<NullUar>, n: u64) -> u64 {
    let (mut sum, mut ok) = (0u64, true);
    for i in 0..n {
        let found = cq.poll_with(1, |c| {
            sum = sum.wrapping_add(c.wr_id());
            ok &= c.is_ok();
        });
        if found != EXPECT || !ok {
            return i;
        }
    }
    black_box(sum);
    n
}
