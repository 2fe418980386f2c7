//! What the trap tests share: a recording sink with a fixed-size log, and trapped pages.
#![allow(dead_code)] // each test binary uses its own part

use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;

use mlx5_emu::trap::{self, Sink};

/// Events a recorder keeps, at most (its log never grows inside a handler).
pub const CAPACITY: usize = 1024;

/// What a trapped page saw.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    /// A write: offset and bytes.
    Store(u64, Vec<u8>),
    /// A read: offset and length.
    Load(u64, u8),
}

/// One logged access, in a fixed-size record.
#[derive(Clone, Copy)]
struct Raw {
    load: bool,
    offset: u64,
    len: usize,
    data: [u8; 64],
}

/// A sink that logs every access of one token, in order, into a preallocated log.
pub struct Recorder {
    token: u64,
    log: Mutex<Vec<Raw>>,
    /// Writes so far (read without the lock: a plain load in the tested code).
    pub stores: AtomicUsize,
    /// Something went wrong inside the handler: a full log or another token.
    pub broken: AtomicBool,
}

/// The value a recorder answers a load of `offset` with (before truncation to the length).
pub fn load_value(offset: u64) -> u64 {
    0xf0e1_d2c3_b4a5_9687 ^ offset.wrapping_mul(0x0101_0101_0101_0101)
}

impl Recorder {
    /// A recorder for `token` that lives for the rest of the process (sinks are `'static`).
    pub fn leak(token: u64) -> &'static Recorder {
        Box::leak(Box::new(Recorder {
            token,
            log: Mutex::new(Vec::with_capacity(CAPACITY)),
            stores: AtomicUsize::new(0),
            broken: AtomicBool::new(false),
        }))
    }

    fn push(&self, token: u64, raw: Raw) {
        let mut log = self.log.lock().unwrap();
        if token != self.token || log.len() == CAPACITY {
            self.broken.store(true, Ordering::Relaxed);
            return;
        }
        log.push(raw);
    }

    /// Everything seen so far, in order.
    pub fn events(&self) -> Vec<Event> {
        assert!(
            !self.broken.load(Ordering::Relaxed),
            "log full or wrong token"
        );
        self.log
            .lock()
            .unwrap()
            .iter()
            .map(|r| {
                if r.load {
                    Event::Load(r.offset, r.len as u8)
                } else {
                    Event::Store(r.offset, r.data[..r.len].to_vec())
                }
            })
            .collect()
    }

    /// The writes seen so far, as (offset, bytes), in order (loads left out).
    pub fn writes(&self) -> Vec<(u64, Vec<u8>)> {
        self.events()
            .into_iter()
            .filter_map(|e| match e {
                Event::Store(o, d) => Some((o, d)),
                Event::Load(..) => None,
            })
            .collect()
    }

    /// The number of writes so far (a relaxed atomic load: one plain `mov`).
    pub fn count(&self) -> usize {
        self.stores.load(Ordering::Relaxed)
    }

    /// Forgets everything seen.
    pub fn clear(&self) {
        self.log.lock().unwrap().clear();
        self.stores.store(0, Ordering::Relaxed);
    }
}

impl Sink for Recorder {
    fn store(&self, token: u64, offset: u64, data: &[u8]) {
        let mut raw = Raw {
            load: false,
            offset,
            len: data.len(),
            data: [0; 64],
        };
        raw.data[..data.len()].copy_from_slice(data);
        self.push(token, raw);
        self.stores.fetch_add(1, Ordering::Relaxed);
    }

    fn load(&self, token: u64, offset: u64, len: u8) -> u64 {
        self.push(
            token,
            Raw {
                load: true,
                offset,
                len: len as usize,
                data: [0; 64],
            },
        );
        load_value(offset)
    }
}

/// One trapped 4 KiB page with its own recorder; unmapped on drop.
pub struct Page {
    pub ptr: NonNull<u8>,
    pub rec: &'static Recorder,
}

// SAFETY: the page is a trapped mapping with no thread affinity; threads touch it only by
// single stores and loads, which the trap serialises per thread.
unsafe impl Sync for Page {}

impl Page {
    /// Maps a page under `token`.
    pub fn new(token: u64) -> Page {
        let rec = Recorder::leak(token);
        let ptr = trap::map(4096, token, rec).expect("map a trapped page");
        Page { ptr, rec }
    }

    /// The address `offset` bytes into the page.
    pub fn at<T>(&self, offset: usize) -> *mut T {
        self.ptr.as_ptr().wrapping_add(offset).cast()
    }
}

impl Drop for Page {
    fn drop(&mut self) {
        // SAFETY: mapped by `Page::new`; the test is done with it.
        unsafe { trap::unmap(self.ptr, 4096) }.expect("unmap");
    }
}

/// `sfence`, as `mmio_flush_writes` issues it.
pub fn sfence() {
    // SAFETY: no operands, no effect but ordering.
    unsafe { std::arch::x86_64::_mm_sfence() }
}

/// The 64 bytes 8 u64 words make in memory.
pub fn bytes_of(words: &[u64]) -> Vec<u8> {
    words.iter().flat_map(|w| w.to_le_bytes()).collect()
}
