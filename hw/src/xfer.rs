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

    /// The pointer segments of a WQE's data list (inline segments are rejected earlier).
    pub(crate) fn from_segs(segs: Segs<'_>) -> Self {
        let mut out = Spans::new();
        for seg in segs.flatten() {
            if let Seg::Ptr { len, lkey, addr } = seg {
                out.push(Span {
                    addr,
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
        let mut left = len;
        self.as_slice().iter().map_while(move |s| {
            if left == 0 {
                return None;
            }
            let n = s.len.min(left);
            left -= n;
            Some(Span { len: n, ..*s })
        })
    }
}

/// Write the gather list of a WQE (inline bytes and pointer segments, in order) to the
/// contiguous host range starting at `dst` (an RDMA WRITE target).
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

    /// Scatter `len` bytes read from host address `src` (or from `bytes` if given).
    fn put(&mut self, mut src: u64, bytes: Option<&[u8]>, len: u64) {
        let mut done = 0u64;
        while done < len && self.i < self.spans.len() {
            let s = self.spans[self.i];
            let n = (s.len - self.off).min(len - done);
            let dst = s.addr + self.off;
            match bytes {
                Some(b) => host::write(dst, &b[done as usize..(done + n) as usize]),
                None => host::copy(dst, src, n as usize),
            }
            src += n;
            done += n;
            self.off += n;
            if self.off == s.len {
                self.i += 1;
                self.off = 0;
            }
        }
    }

    /// Scatter a host range.
    pub(crate) fn put_host(&mut self, src: u64, len: u64) {
        self.put(src, None, len);
    }

    /// Scatter the gather list of a WQE (inline bytes and pointer segments, in order).
    pub(crate) fn put_gather(&mut self, wqe: &[u8], segs: Segs<'_>) {
        for seg in segs.flatten() {
            match seg {
                Seg::Inline { off, len } => {
                    let end = off + len as usize;
                    self.put(0, Some(&wqe[off..end]), len.into());
                }
                Seg::Ptr { len, addr, .. } => self.put(addr, None, len.into()),
            }
        }
    }
}
