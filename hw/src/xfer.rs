//! Payload movement between gather sources (WQE inline bytes or host memory) and scatter
//! destinations (host memory spans), with no intermediate buffer.

use crate::host;
use crate::wqe::{Seg, Segs};

/// A contiguous host range with the key that covers it.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Span {
    pub(crate) addr: u64,
    pub(crate) len: u64,
    pub(crate) key: u32,
}

/// Most scatter entries in one receive WQE (1024-byte stride / 16).
pub(crate) const MAX_SPANS: usize = 64;

/// A fixed-capacity scatter list.
#[derive(Clone, Copy)]
pub(crate) struct Spans {
    n: usize,
    s: [Span; MAX_SPANS],
    /// Entries parsed from a `byte_count` of 0 (2^31 bytes).
    pub(crate) zero_length: u64,
}

impl Spans {
    pub(crate) fn new() -> Self {
        Spans {
            n: 0,
            s: [Span::default(); MAX_SPANS],
            zero_length: 0,
        }
    }

    pub(crate) fn push(&mut self, s: Span) {
        if self.n < MAX_SPANS {
            self.s[self.n] = s;
            self.n += 1;
        }
    }

    pub(crate) fn as_slice(&self) -> &[Span] {
        &self.s[..self.n]
    }

    /// The pointer segments of a WQE's data list (inline segments are rejected earlier),
    /// their addresses in the address space `space` of the queue that reads them.
    pub(crate) fn from_segs(segs: Segs<'_>, space: u64) -> Self {
        let mut out = Spans::new();
        for seg in segs.flatten() {
            if let Seg::Ptr { len, lkey, addr } = seg {
                out.push(Span {
                    addr: crate::host::in_space_of(space, addr),
                    len: len.into(),
                    key: lkey,
                });
            }
        }
        out
    }

    /// Capacity in bytes.
    pub(crate) fn capacity(&self) -> u64 {
        self.as_slice().iter().map(|s| s.len).sum()
    }

    /// The parts of the spans a message of `len` bytes fills, in order.
    pub(crate) fn used(&self, len: u64) -> impl Iterator<Item = Span> + '_ {
        self.used_from(0, len)
    }

    /// The parts of the spans that bytes `skip..len` of a message fill, in order.
    pub(crate) fn used_from(&self, skip: u64, len: u64) -> impl Iterator<Item = Span> + '_ {
        let mut start = 0u64;
        self.as_slice().iter().filter_map(move |s| {
            let (lo, hi) = (start.max(skip), (start + s.len).min(len));
            start += s.len;
            (lo < hi).then(|| Span {
                addr: s.addr + (lo - (start - s.len)),
                len: hi - lo,
                key: s.key,
            })
        })
    }
}

/// Write the gather list of a WQE (inline bytes and pointer segments, in order) to the
/// contiguous host range starting at `dst` (an RDMA WRITE target).
#[inline]
pub(crate) fn gather_to(dst: u64, wqe: &[u8], segs: Segs<'_>) {
    let mut at = dst;
    for seg in segs.flatten() {
        match seg {
            Seg::Inline { off, len } => host::write(at, &wqe[off..off + len as usize]),
            Seg::Ptr { len, addr, .. } => host::copy(at, addr, len as usize),
        }
        at += u64::from(seg.len());
    }
}

/// Where the next bytes go.
pub(crate) struct Cursor<'a> {
    spans: &'a [Span],
    i: usize,
    off: u64,
}

impl<'a> Cursor<'a> {
    pub(crate) fn new(spans: &'a [Span]) -> Self {
        Cursor {
            spans,
            i: 0,
            off: 0,
        }
    }

    /// Scatter `len` bytes from `src`.
    fn put(&mut self, src: Src<'_>, len: u64) {
        let mut done = 0u64;
        while done < len && self.i < self.spans.len() {
            let s = self.spans[self.i];
            let n = (s.len - self.off).min(len - done);
            let dst = s.addr + self.off;
            match src {
                Src::Bytes(b) => host::write(dst, &b[done as usize..(done + n) as usize]),
                Src::Host(a) => host::copy(dst, a + done, n as usize),
                Src::Skip => {}
            }
            done += n;
            self.off += n;
            if self.off == s.len {
                self.i += 1;
                self.off = 0;
            }
        }
    }

    /// Scatter `bytes`.
    pub(crate) fn put_bytes(&mut self, bytes: &[u8]) {
        self.put(Src::Bytes(bytes), bytes.len() as u64);
    }

    /// Leave the next `len` bytes of the spans as they are.
    pub(crate) fn skip(&mut self, len: u64) {
        self.put(Src::Skip, len);
    }

    /// Scatter a host range.
    pub(crate) fn put_host(&mut self, src: u64, len: u64) {
        self.put(Src::Host(src), len);
    }

    /// Scatter the gather list of a WQE (inline bytes and pointer segments, in order).
    pub(crate) fn put_gather(&mut self, wqe: &[u8], segs: Segs<'_>) {
        for seg in segs.flatten() {
            match seg {
                Seg::Inline { off, len } => {
                    let end = off + len as usize;
                    self.put(Src::Bytes(&wqe[off..end]), len.into());
                }
                Seg::Ptr { len, addr, .. } => self.put(Src::Host(addr), len.into()),
            }
        }
    }
}

/// Where scattered bytes come from.
#[derive(Clone, Copy)]
enum Src<'b> {
    /// Host memory from this address.
    Host(u64),
    /// These bytes.
    Bytes(&'b [u8]),
    /// Nowhere: the destination is left as it is.
    Skip,
}
