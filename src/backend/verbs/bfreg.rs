//! BlueFlame registers shared between QPs, and the UAR type of the `verbs` backend.
//!
//! libmlx5 gives each QP a BlueFlame register (`bfreg`) of the context's UAR pages. With
//! current kernels (dynamic UARs, rdma-core's default of 16 registers on 4 KiB pages) the
//! first QPs get registers of their own (verbs.c `mlx5_get_qp_uar`); once they run out,
//! QPs share registers and libmlx5 takes a spin lock around every doorbell and BlueFlame copy
//! on a shared one (`need_lock`), because a BlueFlame copy is several 64-byte stores that two
//! threads must not interleave at one address. `mlx5dv_qp` does not say which kind a QP
//! got, and this data path takes no locks. So the backend counts the live QPs of its context
//! on each register: while two or more use one, their BlueFlame copies become the 8-byte
//! doorbell (the first 8 bytes of the WQE's first chunk, exactly what doorbell mode writes),
//! which is one atomic 64-bit store and needs no lock.
//!
//! `MLX5_SINGLE_THREADED=1` (libmlx5's switch for the same lock, parsed as mlx5.c
//! `single_threaded_app`: exactly "1") keeps BlueFlame on shared registers: the application
//! then promises that one thread posts on all of them. libmlx5 keeps the half in use in the
//! register (`struct mlx5_bf.offset`, toggled by every post on it, qp.c `post_send_db`); so
//! does this backend while the register is shared: each copy goes to the register's half
//! and flips it, whichever QP posts ([`RegState`]). A register used by one QP follows that
//! QP's own toggle, at no extra cost.

use core::cell::Cell;
use core::ptr::NonNull;
use core::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use crate::mmio::{MappedUar, Uar};
use crate::prm::{SEND_WQE_BB, UAR_PAGE_SIZE};

/// What the QPs on one register share: whether more than one live QP uses it, and the
/// register's BlueFlame half while it is shared.
#[derive(Debug, Default)]
pub(super) struct RegState {
    /// Set while two or more live QPs of the context use the register.
    shared: AtomicBool,
    /// Offset (0 or the half size) of the half the next BlueFlame copy on the shared
    /// register goes to (`MLX5_SINGLE_THREADED=1` only).
    half: AtomicUsize,
}

impl RegState {
    /// Whether another live QP uses the register too.
    pub(super) fn is_shared(&self) -> bool {
        self.shared.load(Ordering::Relaxed)
    }
}

/// The BlueFlame registers live QPs of one context use, by address.
#[derive(Debug)]
pub(super) struct BfRegisters {
    regs: Mutex<HashMap<usize, Register>>,
    /// `MLX5_SINGLE_THREADED=1`: a shared register keeps BlueFlame.
    single_threaded: bool,
}

#[derive(Debug)]
struct Register {
    users: u32,
    state: Arc<RegState>,
}

/// libmlx5's `single_threaded_app` (mlx5.c): the variable counts only when it is exactly
/// "1".
pub(super) fn single_threaded(var: Option<&std::ffi::OsStr>) -> bool {
    var.is_some_and(|v| v == "1")
}

impl BfRegisters {
    pub(super) fn new(single_threaded: bool) -> Self {
        BfRegisters {
            regs: Mutex::default(),
            single_threaded,
        }
    }

    /// Whether shared registers keep BlueFlame (`MLX5_SINGLE_THREADED=1`).
    pub(super) fn single_threaded(&self) -> bool {
        self.single_threaded
    }

    /// A new QP uses the register at `reg`; returns the register's shared state.
    pub(super) fn attach(&self, reg: usize) -> Arc<RegState> {
        let mut regs = self.regs.lock().unwrap_or_else(PoisonError::into_inner);
        let r = regs.entry(reg).or_insert_with(|| Register {
            users: 0,
            state: Arc::default(),
        });
        r.users += 1;
        r.publish();
        r.state.clone()
    }

    /// A QP that used the register at `reg` is destroyed.
    pub(super) fn detach(&self, reg: usize) {
        let mut regs = self.regs.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(r) = regs.get_mut(&reg) {
            r.users -= 1;
            r.publish();
            if r.users == 0 {
                regs.remove(&reg);
            }
        }
    }
}

impl Register {
    /// Publishes whether the register is shared: the one rule of both
    /// [`BfRegisters::attach`] and [`BfRegisters::detach`].
    fn publish(&self) {
        self.state.shared.store(self.users > 1, Ordering::Relaxed);
    }
}

/// A UAR page of the `verbs` backend: a QP's (with its BlueFlame register) or a CQ's.
#[derive(Debug)]
pub struct VerbsUar {
    page: MappedUar,
    /// The register's offset in the page and its half size (0 for a CQ's page).
    reg: usize,
    half: usize,
    /// The register's state among the QPs using it.
    state: Arc<RegState>,
    /// `MLX5_SINGLE_THREADED=1`: copies on a shared register stay BlueFlame copies.
    single_threaded: bool,
    /// The half of the register's the copy in progress goes to (shared register, single
    /// threaded).
    copy_half: Cell<usize>,
}

impl VerbsUar {
    /// A CQ's page (arm doorbell only).
    ///
    /// # Safety
    /// As [`MappedUar::new`].
    pub(super) unsafe fn cq(base: NonNull<u8>) -> Self {
        // SAFETY: forwarded from this function's contract.
        unsafe { VerbsUar::qp(base, 0, 0, Arc::default(), false) }
    }

    /// A QP's page, its register at `reg` with halves of `half` bytes, the register's state
    /// from [`BfRegisters::attach`] and whether shared registers keep BlueFlame.
    ///
    /// # Safety
    /// As [`MappedUar::new`].
    pub(super) unsafe fn qp(
        base: NonNull<u8>,
        reg: usize,
        half: usize,
        state: Arc<RegState>,
        single_threaded: bool,
    ) -> Self {
        // The shared-register path copies into either half: both must be in the page.
        assert!(
            half == 0
                || (reg % SEND_WQE_BB == 0
                    && half % SEND_WQE_BB == 0
                    && reg + 2 * half <= UAR_PAGE_SIZE),
            "BlueFlame register at {reg:#x} with halves of {half} bytes leaves the UAR page"
        );
        VerbsUar {
            // SAFETY: forwarded from this function's contract.
            page: unsafe { MappedUar::new(base) },
            reg,
            half,
            state,
            single_threaded,
            copy_half: Cell::new(0),
        }
    }

    /// A chunk of a BlueFlame copy on a register other live QPs use too.
    ///
    /// # Safety
    /// As [`Uar::write_block`], `offset` in this QP's register (`reg`, two halves of `half`
    /// bytes).
    #[cold]
    unsafe fn write_shared_block(&self, offset: usize, block: &[u64; 8]) {
        // The chunk's place in its half (a copy never spans halves: at most `half` bytes).
        let within = (offset - self.reg) % self.half;
        if !self.single_threaded {
            if within == 0 {
                // The first chunk: its first 8 bytes are the doorbell.
                // SAFETY: the caller's block, forwarded (`Uar::write_block`'s contract).
                unsafe { self.page.write64(offset, block[0].to_ne_bytes()) };
            }
            return;
        }
        if within == 0 {
            // One toggle per register, as libmlx5's `mlx5_bf.offset`: this copy takes the
            // register's half and leaves the other one to the next copy of any QP on it.
            let half = self.state.half.fetch_xor(self.half, Ordering::Relaxed);
            self.copy_half.set(half);
        }
        // SAFETY: the caller's place in its half, moved to the half the toggle says: both
        // halves are in the page (asserted by `VerbsUar::qp`), `within` below `half`.
        unsafe {
            self.page
                .write_block(self.reg + self.copy_half.get() + within, block)
        };
    }
}

impl Uar for VerbsUar {
    #[inline(always)]
    unsafe fn write64(&self, offset: usize, bytes: [u8; 8]) {
        // SAFETY: forwarded from this function's contract.
        unsafe { self.page.write64(offset, bytes) };
    }

    #[inline(always)]
    unsafe fn write_block(&self, offset: usize, block: &[u64; 8]) {
        if !self.state.is_shared() {
            // SAFETY: forwarded from this function's contract.
            unsafe { self.page.write_block(offset, block) };
        } else {
            // SAFETY: as above.
            unsafe { self.write_shared_block(offset, block) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_register_is_shared_while_two_live_qps_use_it() {
        for single_threaded in [false, true] {
            let regs = BfRegisters::new(single_threaded);
            let a = regs.attach(0x1800);
            assert!(!a.is_shared());
            let other = regs.attach(0x2800);
            let b = regs.attach(0x1800);
            assert!(a.is_shared() && b.is_shared());
            assert!(!other.is_shared());
            regs.detach(0x1800);
            assert!(!a.is_shared(), "one user left");
            let b = regs.attach(0x1800);
            assert!(
                a.is_shared() && b.is_shared(),
                "detach undid exactly one attach"
            );
            regs.detach(0x1800);
            regs.detach(0x1800);
            let c = regs.attach(0x1800);
            assert!(!c.is_shared(), "a fresh entry");
            regs.detach(0x0);
            assert!(
                !c.is_shared(),
                "detaching an unknown register changes nothing"
            );
        }
    }

    #[test]
    fn single_threaded_counts_only_when_exactly_one() {
        let parse = |v: Option<&str>| single_threaded(v.map(std::ffi::OsStr::new));
        assert!(parse(Some("1")));
        for v in [
            None,
            Some("0"),
            Some(""),
            Some("yes"),
            Some("01"),
            Some("1 "),
        ] {
            assert!(!parse(v), "{v:?}");
        }
    }

    /// A 4 KiB page of plain memory standing in for the UAR page.
    #[repr(C, align(4096))]
    struct Page([u8; 4096]);

    fn words(page: &Page, at: usize) -> [u64; 8] {
        core::array::from_fn(|i| {
            u64::from_ne_bytes(page.0[at + 8 * i..at + 8 * i + 8].try_into().unwrap())
        })
    }

    fn block(tag: u64) -> [u64; 8] {
        core::array::from_fn(|i| tag << 8 | i as u64)
    }

    /// Two QPs' UARs on one register at 0x800 with 256-byte halves.
    fn two_qps(page: &mut Page, single_threaded: bool) -> (VerbsUar, VerbsUar) {
        let base = NonNull::from(&mut page.0).cast::<u8>();
        let regs = BfRegisters::new(single_threaded);
        // SAFETY: `page` outlives both values and is only read after their stores.
        unsafe {
            (
                VerbsUar::qp(base, 0x800, 256, regs.attach(0x800), single_threaded),
                VerbsUar::qp(base, 0x800, 256, regs.attach(0x800), single_threaded),
            )
        }
    }

    #[test]
    fn a_register_of_one_qp_takes_the_copy_where_the_qp_says() {
        let mut page = Box::new(Page([0; 4096]));
        let base = NonNull::from(&mut page.0).cast::<u8>();
        let regs = BfRegisters::new(false);
        // SAFETY: `page` outlives `uar` and is only read after the stores.
        let uar = unsafe { VerbsUar::qp(base, 0x800, 256, regs.attach(0x800), false) };
        // SAFETY: an aligned register inside the test's page.
        unsafe { uar.write_block(0x900, &block(1)) };
        assert_eq!(words(&page, 0x900), block(1));
        assert_eq!(words(&page, 0x800), [0; 8]);
    }

    #[test]
    fn a_shared_register_turns_blueflame_copies_into_doorbells() {
        let mut page = Box::new(Page([0; 4096]));
        let (a, _b) = two_qps(&mut page, false);
        // The second half, chunk 0 then chunk 1: only the doorbell word is stored.
        // SAFETY: an aligned register inside the test's page.
        unsafe { a.write_block(0x900, &block(1)) };
        // SAFETY: an aligned register inside the test's page.
        unsafe { a.write_block(0x940, &block(1)) };
        assert_eq!(words(&page, 0x900), [block(1)[0], 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(words(&page, 0x940), [0; 8]);
    }

    #[test]
    fn single_threaded_copies_alternate_the_halves_of_the_register_not_of_each_qp() {
        let mut page = Box::new(Page([0; 4096]));
        let (a, b) = two_qps(&mut page, true);
        // Each QP's own toggle says half 0 for its first copy; the register says 0 then 1.
        // SAFETY: an aligned register inside the test's page.
        unsafe { a.write_block(0x800, &block(1)) };
        // SAFETY: an aligned register inside the test's page.
        unsafe { a.write_block(0x840, &block(2)) };
        // SAFETY: an aligned register inside the test's page.
        unsafe { b.write_block(0x800, &block(3)) };
        // SAFETY: an aligned register inside the test's page.
        unsafe { b.write_block(0x840, &block(4)) };
        assert_eq!(
            [0x800, 0x840, 0x900, 0x940].map(|at| words(&page, at)),
            [block(1), block(2), block(3), block(4)]
        );
        // A's own toggle now says half 1; the register's next half is 0.
        // SAFETY: an aligned register inside the test's page.
        unsafe { a.write_block(0x900, &block(5)) };
        assert_eq!(words(&page, 0x800), block(5));
        assert_eq!(words(&page, 0x900), block(3), "B's copy untouched");
    }
}
