//! The trapped regions and their sinks, readable from a signal handler.
//!
//! A fixed table of slots, each a sequence lock over atomic fields: [`find`] (the handlers)
//! never blocks on a lock and never allocates; registration and removal run under one mutex
//! ([`admin`]) in `map` / `unmap`, never in a handler. Sinks are interned in a second fixed
//! table of write-once cells, so a slot holds a sink as a small index.

use std::io;
use std::sync::atomic::{fence, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock, PoisonError};

use super::line::Target;
use super::Sink;

/// Regions registered at once, at most (libmlx5 maps a few UAR pages per context).
pub(crate) const MAX_REGIONS: usize = 256;
/// Distinct sinks over the life of the process, at most.
pub(crate) const MAX_SINKS: usize = 64;

/// A registered region: `len` bytes from `start`, its token and sink.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Region {
    pub(crate) start: usize,
    pub(crate) len: usize,
    pub(crate) token: u64,
    pub(crate) sink: u32,
}

impl Region {
    /// Whether `[addr, addr + len)` lies inside the region.
    pub(crate) fn covers(&self, addr: usize, len: usize) -> bool {
        addr >= self.start
            && addr
                .checked_add(len)
                .is_some_and(|end| end <= self.start + self.len)
    }

    /// Where stores to the region go.
    pub(crate) fn target(&self) -> Target {
        Target {
            start: self.start,
            token: self.token,
            sink: self.sink,
        }
    }
}

/// One slot: a sequence number (odd while being written) and the region's fields; `len` 0
/// is a free slot.
struct Slot {
    seq: AtomicUsize,
    start: AtomicUsize,
    len: AtomicUsize,
    token: AtomicU64,
    sink: AtomicU32,
}

impl Slot {
    const fn free() -> Slot {
        Slot {
            seq: AtomicUsize::new(0),
            start: AtomicUsize::new(0),
            len: AtomicUsize::new(0),
            token: AtomicU64::new(0),
            sink: AtomicU32::new(0),
        }
    }

    /// A consistent copy of the slot (retries while a writer is inside).
    fn read(&self) -> Region {
        loop {
            let before = self.seq.load(Ordering::Acquire);
            if before % 2 == 1 {
                std::hint::spin_loop();
                continue;
            }
            let region = Region {
                start: self.start.load(Ordering::Relaxed),
                len: self.len.load(Ordering::Relaxed),
                token: self.token.load(Ordering::Relaxed),
                sink: self.sink.load(Ordering::Relaxed),
            };
            fence(Ordering::Acquire);
            if self.seq.load(Ordering::Relaxed) == before {
                return region;
            }
        }
    }

    /// Rewrites the slot. Only under the admin lock (one writer at a time).
    fn write(&self, r: Region) {
        let seq = self.seq.load(Ordering::Relaxed);
        self.seq.store(seq + 1, Ordering::Relaxed);
        fence(Ordering::Release);
        self.start.store(r.start, Ordering::Relaxed);
        self.len.store(r.len, Ordering::Relaxed);
        self.token.store(r.token, Ordering::Relaxed);
        self.sink.store(r.sink, Ordering::Relaxed);
        self.seq.store(seq + 2, Ordering::Release);
    }
}

static SLOTS: [Slot; MAX_REGIONS] = [const { Slot::free() }; MAX_REGIONS];
/// Slots that have ever been used: [`find`] looks at no more.
static USED: AtomicUsize = AtomicUsize::new(0);
static SINKS: [OnceLock<&'static dyn Sink>; MAX_SINKS] = [const { OnceLock::new() }; MAX_SINKS];

/// What the admin lock guards: whether the signal handlers are installed.
pub(crate) struct Admin {
    pub(crate) installed: bool,
}

static ADMIN: Mutex<Admin> = Mutex::new(Admin { installed: false });

/// The lock that serialises `map`, `unmap` and the handlers' installation.
pub(crate) fn admin() -> MutexGuard<'static, Admin> {
    ADMIN.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The region containing `addr`. Lock-free and allocation-free: for the handlers.
pub(crate) fn find(addr: usize) -> Option<Region> {
    let used = USED.load(Ordering::Acquire);
    SLOTS[..used]
        .iter()
        .map(Slot::read)
        .find(|r| r.len != 0 && r.covers(addr, 1))
}

/// The sink interned under `id`.
pub(crate) fn sink(id: u32) -> Option<&'static dyn Sink> {
    SINKS.get(id as usize).and_then(|s| s.get().copied())
}

/// The index of `sink` in the sink table, adding it if new. Under the admin lock.
pub(crate) fn intern(_admin: &Admin, sink: &'static dyn Sink) -> io::Result<u32> {
    for (id, cell) in SINKS.iter().enumerate() {
        match cell.get() {
            // Same object and same vtable: the same sink (a duplicated vtable only costs a
            // second entry).
            Some(known) if std::ptr::eq(*known, sink) => return Ok(id as u32),
            Some(_) => continue,
            None => {
                // Only this thread sets cells (admin lock), so the cell is still empty.
                let _ = cell.set(sink);
                return Ok(id as u32);
            }
        }
    }
    Err(io::Error::new(
        io::ErrorKind::OutOfMemory,
        format!("mlx5-emu trap: more than {MAX_SINKS} distinct sinks"),
    ))
}

/// A free slot's index. Under the admin lock.
pub(crate) fn free_slot(_admin: &Admin) -> io::Result<usize> {
    SLOTS
        .iter()
        .position(|s| s.len.load(Ordering::Relaxed) == 0)
        .ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::OutOfMemory,
                format!("mlx5-emu trap: more than {MAX_REGIONS} regions mapped"),
            )
        })
}

/// Registers `region` in slot `index` (from [`free_slot`]). Under the admin lock.
pub(crate) fn insert(_admin: &Admin, index: usize, region: Region) {
    SLOTS[index].write(region);
    USED.fetch_max(index + 1, Ordering::Release);
}

/// Unregisters the region registered exactly as `start`, `len`. Under the admin lock.
pub(crate) fn remove(_admin: &Admin, start: usize, len: usize) -> io::Result<()> {
    let slot = SLOTS
        .iter()
        .find(|s| {
            let r = s.read();
            r.len != 0 && r.start == start && r.len == len
        })
        .ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("mlx5-emu trap: no region of {len} bytes mapped at {start:#x}"),
            )
        })?;
    slot.write(Region {
        start: 0,
        len: 0,
        token: 0,
        sink: 0,
    });
    Ok(())
}
