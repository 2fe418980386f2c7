//! One thread's write-combining line: the CPU's WC buffer, as far as the trap models it.
//!
//! Stores merge into the open 64-byte line. The line leaves as one 64-byte write the moment
//! all of its bytes are written; otherwise, when it is flushed (a fence, a store to another
//! line), as its maximal runs of contiguous written bytes in ascending offset. Later stores
//! to a written byte overwrite it, as in a WC buffer. Pure logic: the signal handlers own the
//! state (a thread local) and say where emitted writes go.

/// Bytes in a write-combining line (and in a BlueFlame chunk).
pub(crate) const LINE: usize = 64;

/// Where a line's writes go: the trapped region it lies in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Target {
    /// The region's first byte (its address).
    pub(crate) start: usize,
    /// The token the region was registered with.
    pub(crate) token: u64,
    /// The region's sink (an index into the registry's sink table).
    pub(crate) sink: u32,
}

/// An open line: its address, the bytes written so far and which ones.
#[derive(Clone, Copy, Debug)]
struct Open {
    target: Target,
    addr: usize,
    written: u64,
    bytes: [u8; LINE],
}

/// A thread's write-combining state: no line, or one open line.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Wc {
    open: Option<Open>,
}

/// The bits of a written-bytes mask for `len` bytes from `at` (`at + len <= 64`).
fn mask(at: usize, len: usize) -> u64 {
    debug_assert!(len >= 1 && at + len <= LINE);
    let ones = if len == LINE {
        u64::MAX
    } else {
        (1u64 << len) - 1
    };
    ones << at
}

impl Wc {
    /// No line open.
    pub(crate) const EMPTY: Wc = Wc { open: None };

    /// Whether a line is open (partly written).
    pub(crate) fn is_open(&self) -> bool {
        self.open.is_some()
    }

    /// Merges a store of `data` at address `addr` (inside `target`'s region). A store that
    /// crosses a line boundary is split; a part that falls in another line than the open one
    /// flushes the open one first. `emit(target, offset in the region, bytes)` receives each
    /// write that leaves.
    pub(crate) fn store<E>(&mut self, target: Target, addr: usize, data: &[u8], emit: &mut E)
    where
        E: FnMut(&Target, u64, &[u8]) + ?Sized,
    {
        let (mut addr, mut data) = (addr, data);
        while !data.is_empty() {
            let line = addr & !(LINE - 1);
            let at = addr - line;
            let n = data.len().min(LINE - at);
            if self
                .open
                .is_some_and(|o| o.addr != line || o.target != target)
            {
                self.flush(emit);
            }
            let open = self.open.get_or_insert(Open {
                target,
                addr: line,
                written: 0,
                bytes: [0; LINE],
            });
            open.bytes[at..at + n].copy_from_slice(&data[..n]);
            open.written |= mask(at, n);
            if open.written == u64::MAX {
                emit(&target, (line - target.start) as u64, &open.bytes);
                self.open = None;
            }
            addr += n;
            data = &data[n..];
        }
    }

    /// Emits the open line, if any, as its maximal runs of written bytes in ascending
    /// offset, and closes it.
    pub(crate) fn flush<E>(&mut self, emit: &mut E)
    where
        E: FnMut(&Target, u64, &[u8]) + ?Sized,
    {
        let Some(open) = self.open.take() else {
            return;
        };
        let base = (open.addr - open.target.start) as u64;
        let mut i = 0;
        while i < LINE {
            if open.written & (1 << i) == 0 {
                i += 1;
                continue;
            }
            let run = i;
            while i < LINE && open.written & (1 << i) != 0 {
                i += 1;
            }
            emit(&open.target, base + run as u64, &open.bytes[run..i]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: Target = Target {
        start: 0x10000,
        token: 7,
        sink: 0,
    };

    /// Runs `f` on a fresh line and returns every write emitted, as (token, offset, bytes).
    fn writes(
        f: impl FnOnce(&mut Wc, &mut dyn FnMut(&Target, u64, &[u8])),
    ) -> Vec<(u64, u64, Vec<u8>)> {
        let mut out = Vec::new();
        let mut wc = Wc::EMPTY;
        f(&mut wc, &mut |t: &Target, off: u64, d: &[u8]| {
            out.push((t.token, off, d.to_vec()))
        });
        out
    }

    #[test]
    fn full_line_leaves_at_once_as_one_write() {
        let out = writes(|wc, emit| {
            for k in 0..8u8 {
                wc.store(T, T.start + 0x40 + 8 * k as usize, &[k; 8], emit);
            }
            assert!(!wc.is_open());
        });
        let whole: Vec<u8> = (0..8u8).flat_map(|k| [k; 8]).collect();
        assert_eq!(out, vec![(7, 0x40, whole)]);
    }

    #[test]
    fn partial_line_leaves_as_runs_in_ascending_offset() {
        let out = writes(|wc, emit| {
            wc.store(T, T.start + 16, &[2; 8], emit);
            wc.store(T, T.start, &[1; 8], emit);
            wc.store(T, T.start + 8, &[3; 1], emit);
            wc.store(T, T.start + 63, &[9], emit);
            assert!(wc.is_open());
            wc.flush(emit);
            assert!(!wc.is_open());
            wc.flush(emit);
        });
        let mut first = vec![1; 8];
        first.push(3);
        assert_eq!(
            out,
            vec![(7, 0, first), (7, 16, vec![2; 8]), (7, 63, vec![9])]
        );
    }

    #[test]
    fn later_store_overwrites_and_another_line_flushes_first() {
        let out = writes(|wc, emit| {
            wc.store(T, T.start, &[1; 8], emit);
            wc.store(T, T.start + 4, &[5; 2], emit);
            wc.store(T, T.start + 0x80, &[8; 4], emit);
            wc.flush(emit);
        });
        assert_eq!(
            out,
            vec![(7, 0, vec![1, 1, 1, 1, 5, 5, 1, 1]), (7, 0x80, vec![8; 4])]
        );
    }

    #[test]
    fn store_across_lines_is_split_and_same_line_of_another_region_flushes() {
        let other = Target { token: 8, ..T };
        let out = writes(|wc, emit| {
            wc.store(T, T.start + 60, &[4; 8], emit);
            wc.store(other, T.start + 64, &[6; 1], emit);
            wc.flush(emit);
        });
        assert_eq!(
            out,
            vec![
                (7, 60, vec![4; 4]),
                (7, 64, vec![4; 4]),
                (8, 64, vec![6; 1])
            ]
        );
    }

    #[test]
    fn masks() {
        assert_eq!(mask(0, 64), u64::MAX);
        assert_eq!(mask(0, 8), 0xff);
        assert_eq!(mask(56, 8), 0xff << 56);
        assert_eq!(mask(63, 1), 1 << 63);
    }
}
