//! The lean poll ([`CompletionQueue::poll_with`]): each completion handed to a closure as a
//! view that reads from the CQE only what the caller asks for, and where polled
//! completions go ([`Sink`]: a caller's slice or such a closure).

use super::parse::HotReq;
use super::{Completion, CompletionQueue, QpTable, Status, WcOpcode};
use crate::mmio::Uar;
use crate::ring::CqeEntry;

/// Where a poll puts each completion it finds.
pub(super) trait Sink {
    /// How many completions it takes at most.
    fn room(&self) -> usize;

    /// Completion `n` of the poll, a requester CQE at `entry` of the common case or not
    /// (`qps` parses it).
    fn req(&mut self, n: usize, qps: &mut QpTable, entry: CqeEntry<'_>);

    /// Completion `n` of the poll, parsed.
    fn put(&mut self, n: usize, completion: Completion);
}

impl Sink for &mut [Completion] {
    #[inline(always)]
    fn room(&self) -> usize {
        self.len()
    }

    #[inline(always)]
    fn req(&mut self, n: usize, qps: &mut QpTable, entry: CqeEntry<'_>) {
        // Written straight into the caller's slot (no temporary to copy).
        qps.parse_req(entry, &mut self[n]);
    }

    #[inline(always)]
    fn put(&mut self, n: usize, completion: Completion) {
        self[n] = completion;
    }
}

/// The closure of a lean poll and how many completions it takes.
struct Each<F> {
    room: usize,
    f: F,
}

impl<F: FnMut(&CompletionView<'_>)> Sink for Each<F> {
    #[inline(always)]
    fn room(&self) -> usize {
        self.room
    }

    #[inline(always)]
    fn req(&mut self, n: usize, qps: &mut QpTable, entry: CqeEntry<'_>) {
        match qps.retire_req(entry) {
            Some(req) => (self.f)(&CompletionView(View::Req(req))),
            None => {
                let completion = qps.req_slow(entry);
                self.put(n, completion);
            }
        }
    }

    #[inline(always)]
    fn put(&mut self, _: usize, completion: Completion) {
        (self.f)(&CompletionView(View::Full(&completion)));
    }
}

/// One completion of a lean poll ([`CompletionQueue::poll_with`]), borrowed for the call
/// of the closure: a successful requester completion of the common case is read from its
/// CQE field by field, as asked for (the `wr_id` and the status cost nothing more); every
/// other completion (errors, receives, every CQE of the slow paths) is the [`Completion`]
/// [`CompletionQueue::poll`] would return. [`CompletionView::completion`] gives that
/// whole [`Completion`] in every case.
#[derive(Clone, Copy)]
pub struct CompletionView<'a>(View<'a>);

#[derive(Clone, Copy)]
enum View<'a> {
    Req(HotReq<'a>),
    Full(&'a Completion),
}

impl CompletionView<'_> {
    /// [`Completion::wr_id`].
    #[inline(always)]
    pub fn wr_id(&self) -> u64 {
        match self.0 {
            View::Req(req) => req.wr_id,
            View::Full(c) => c.wr_id,
        }
    }

    /// [`Completion::status`]: success or the error (never lost: an error CQE is always a
    /// full completion).
    #[inline(always)]
    pub fn status(&self) -> Status {
        match self.0 {
            View::Req(_) => Status::Success,
            View::Full(c) => c.status,
        }
    }

    /// Whether the status is success.
    #[inline(always)]
    pub fn is_ok(&self) -> bool {
        match self.0 {
            View::Req(_) => true,
            View::Full(c) => c.status.is_ok(),
        }
    }

    /// [`Completion::qpn`].
    #[inline(always)]
    pub fn qpn(&self) -> u32 {
        match self.0 {
            View::Req(req) => req.qpn(),
            View::Full(c) => c.qpn,
        }
    }

    /// [`Completion::opcode`].
    #[inline(always)]
    pub fn opcode(&self) -> WcOpcode {
        match self.0 {
            View::Req(req) => req.opcode(),
            View::Full(c) => c.opcode,
        }
    }

    /// [`Completion::byte_len`].
    #[inline(always)]
    pub fn byte_len(&self) -> u32 {
        match self.0 {
            View::Req(req) => req.byte_len(),
            View::Full(c) => c.byte_len,
        }
    }

    /// The whole completion, as [`CompletionQueue::poll`] returns it.
    #[inline(always)]
    pub fn completion(&self) -> Completion {
        match self.0 {
            View::Req(req) => req.completion(),
            View::Full(c) => *c,
        }
    }
}

impl core::fmt::Debug for CompletionView<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        self.completion().fmt(f)
    }
}

impl<U: Uar> CompletionQueue<U> {
    /// Polls up to `max` completions, handing each to `f` as a [`CompletionView`] (in
    /// order, before the consumer index moves past it); returns how many. The lean form
    /// of [`poll`](Self::poll): nothing is stored but what `f` reads. Every CQE reaches
    /// `f` as it reaches [`poll`](Self::poll), error and flush CQEs included, with the
    /// same status. When there is none, the UAR's [`Uar::idle`] hook runs, as for `poll`.
    #[inline(always)]
    pub fn poll_with(&mut self, max: usize, f: impl FnMut(&CompletionView<'_>)) -> usize {
        self.poll_into(Each { room: max, f })
    }
}
