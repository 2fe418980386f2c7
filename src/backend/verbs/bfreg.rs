//! BlueFlame registers shared between QPs, and the UAR type of the `verbs` backend.
//!
//! The kernel gives each QP a BlueFlame register (`bfreg`) of the context's UAR pages: a few
//! "low latency" registers belong to one QP each, the rest are shared by several QPs, and
//! libmlx5 takes a spin lock around every doorbell and BlueFlame copy on a shared register
//! (`need_lock`) because a BlueFlame copy is several 64-byte stores that two threads must not
//! interleave at one address. `mlx5dv_qp` does not say which kind a QP got, and this data
//! path takes no locks. So the backend counts the live QPs of its context on each register:
//! while two or more use one, their BlueFlame copies become the 8-byte doorbell (the first 8
//! bytes of the WQE's first chunk, exactly what doorbell mode writes), which is one atomic
//! 64-bit store and needs no lock. `MLX5_SINGLE_THREADED=1` (libmlx5's switch for the same
//! lock) keeps BlueFlame on shared registers: the application then promises that one thread
//! posts on all of them.

use core::ptr::NonNull;
use core::sync::atomic::{AtomicBool, Ordering};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use crate::mmio::{MappedUar, Uar};

/// The BlueFlame registers live QPs of one context use, by address.
#[derive(Debug)]
pub(super) struct BfRegisters {
    regs: Mutex<HashMap<usize, Register>>,
    /// `MLX5_SINGLE_THREADED` is set: a shared register keeps BlueFlame.
    single_threaded: bool,
}

#[derive(Debug)]
struct Register {
    users: u32,
    shared: Arc<AtomicBool>,
}

impl BfRegisters {
    pub(super) fn new(single_threaded: bool) -> Self {
        BfRegisters {
            regs: Mutex::default(),
            single_threaded,
        }
    }

    /// A new QP uses the register at `reg`; returns the flag that says, while it is set, that
    /// another live QP uses it too.
    pub(super) fn attach(&self, reg: usize) -> Arc<AtomicBool> {
        let mut regs = self.regs.lock().unwrap_or_else(PoisonError::into_inner);
        let r = regs.entry(reg).or_insert_with(|| Register {
            users: 0,
            shared: Arc::new(AtomicBool::new(false)),
        });
        r.users += 1;
        r.shared
            .store(r.users > 1 && !self.single_threaded, Ordering::Relaxed);
        r.shared.clone()
    }

    /// A QP that used the register at `reg` is destroyed.
    pub(super) fn detach(&self, reg: usize) {
        let mut regs = self.regs.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(r) = regs.get_mut(&reg) {
            r.users -= 1;
            r.shared.store(r.users > 1, Ordering::Relaxed);
            if r.users == 0 {
                regs.remove(&reg);
            }
        }
    }
}

/// A UAR page of the `verbs` backend: a QP's (with its BlueFlame register) or a CQ's.
#[derive(Debug)]
pub struct VerbsUar {
    page: MappedUar,
    /// The register's offset in the page and its half size (0 for a CQ's page).
    reg: usize,
    half: usize,
    /// Set while another live QP uses the register: BlueFlame copies become doorbells.
    shared: Arc<AtomicBool>,
}

impl VerbsUar {
    /// A CQ's page (arm doorbell only).
    ///
    /// # Safety
    /// As [`MappedUar::new`].
    pub(super) unsafe fn cq(base: NonNull<u8>) -> Self {
        VerbsUar {
            // SAFETY: forwarded from this function's contract.
            page: unsafe { MappedUar::new(base) },
            reg: 0,
            half: 0,
            shared: Arc::new(AtomicBool::new(false)),
        }
    }

    /// A QP's page, its register at `reg` with halves of `half` bytes, and the register's
    /// sharing flag from [`BfRegisters::attach`].
    ///
    /// # Safety
    /// As [`MappedUar::new`].
    pub(super) unsafe fn qp(
        base: NonNull<u8>,
        reg: usize,
        half: usize,
        shared: Arc<AtomicBool>,
    ) -> Self {
        VerbsUar {
            // SAFETY: forwarded from this function's contract.
            page: unsafe { MappedUar::new(base) },
            reg,
            half,
            shared,
        }
    }
}

impl Uar for VerbsUar {
    #[inline(always)]
    fn write64(&self, offset: usize, bytes: [u8; 8]) {
        self.page.write64(offset, bytes);
    }

    #[inline(always)]
    fn write_block(&self, offset: usize, block: &[u64; 8]) {
        if !self.shared.load(Ordering::Relaxed) {
            self.page.write_block(offset, block);
        } else if offset == self.reg || offset == self.reg + self.half {
            // The first chunk of a copy: its first 8 bytes are the doorbell.
            self.page.write64(offset, block[0].to_ne_bytes());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_register_is_shared_while_two_live_qps_use_it() {
        let regs = BfRegisters::new(false);
        let a = regs.attach(0x1800);
        assert!(!a.load(Ordering::Relaxed));
        let other = regs.attach(0x2800);
        let b = regs.attach(0x1800);
        assert!(a.load(Ordering::Relaxed) && b.load(Ordering::Relaxed));
        assert!(!other.load(Ordering::Relaxed));
        regs.detach(0x1800);
        assert!(!a.load(Ordering::Relaxed), "one user left");
        regs.detach(0x1800);
        let c = regs.attach(0x1800);
        assert!(!c.load(Ordering::Relaxed), "a fresh entry");
    }

    #[test]
    fn single_threaded_keeps_blueflame_on_a_shared_register() {
        let regs = BfRegisters::new(true);
        let a = regs.attach(0x1800);
        let b = regs.attach(0x1800);
        assert!(!a.load(Ordering::Relaxed) && !b.load(Ordering::Relaxed));
    }

    /// A 4 KiB page of plain memory standing in for the UAR page.
    #[repr(C, align(4096))]
    struct Page([u8; 4096]);

    #[test]
    fn a_shared_register_turns_blueflame_copies_into_doorbells() {
        let mut page = Box::new(Page([0; 4096]));
        let base = NonNull::from(&mut page.0).cast::<u8>();
        let shared = Arc::new(AtomicBool::new(false));
        // SAFETY: `page` outlives `uar` and is only read after the stores.
        let uar = unsafe { VerbsUar::qp(base, 0x800, 256, shared.clone()) };
        let block: [u64; 8] = core::array::from_fn(|i| 0x1111_1111_1111_1111 * (i as u64 + 1));
        let words = |page: &Page, at: usize| -> Vec<u64> {
            (0..8)
                .map(|i| u64::from_ne_bytes(page.0[at + 8 * i..at + 8 * i + 8].try_into().unwrap()))
                .collect()
        };
        uar.write_block(0x800, &block);
        assert_eq!(words(&page, 0x800), block);
        shared.store(true, Ordering::Relaxed);
        // The second half, chunk 0 then chunk 1: only the doorbell word is stored.
        uar.write_block(0x900, &block);
        uar.write_block(0x940, &block);
        assert_eq!(words(&page, 0x900), [block[0], 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(words(&page, 0x940), [0; 8]);
    }
}
