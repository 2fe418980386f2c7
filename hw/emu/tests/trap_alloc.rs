//! The trap's handlers never allocate: a counting global allocator sees no allocation on the
//! storing thread while it stores, loads and fences on a trapped page, from the first fault
//! of the process on. (Its own binary: the allocator is process-wide.)

mod trap_common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::arch::asm;
use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering};

use trap_common::*;

thread_local! {
    static ARMED: Cell<bool> = const { Cell::new(false) };
}
static ALLOCATIONS: AtomicUsize = AtomicUsize::new(0);

struct Counting;

// SAFETY: forwards to the system allocator; counting has no effect on the memory returned.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if ARMED.with(Cell::get) {
            ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        }
        // SAFETY: the caller's contract, passed on.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract, passed on.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

#[test]
fn no_allocation_in_the_handlers() {
    let page = Page::new(1);
    let wqe: [u64; 8] = core::array::from_fn(|k| k as u64 * 0x0101_0101_0101_0101);
    ARMED.with(|a| a.set(true));
    // SAFETY: stores and loads inside the trapped page.
    let clock = unsafe {
        page.at::<u64>(0x800).write_volatile(1);
        sfence();
        for k in 0..32 {
            page.at::<u64>(0x900 + 8 * k).write_volatile(wqe[k % 8]);
        }
        sfence();
        asm!("rep movsb", "sfence", inout("rdi") page.at::<u8>(0x100) => _,
            inout("rsi") wqe.as_ptr() => _, inout("rcx") 64usize => _, options(nostack));
        page.at::<u64>(0x10).read_volatile()
    };
    ARMED.with(|a| a.set(false));
    assert_eq!(ALLOCATIONS.load(Ordering::Relaxed), 0);
    assert_eq!(clock, load_value(0x10));
    assert_eq!(page.rec.writes().len(), 1 + 4 + 1);
}
