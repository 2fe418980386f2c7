//! Catching the CPU's stores to UAR pages, as the MMIO writes a PCIe device would see.
//!
//! # How
//!
//! [`map`] maps anonymous `PROT_NONE` pages and registers them with a token and a [`Sink`].
//! Every access to them faults. The SIGSEGV handler decodes the faulting instruction
//! (iced-x86), takes the stored value from the signal context (general registers from
//! `uc_mcontext.gregs`, XMM registers from the FXSAVE area at `uc_mcontext.fpregs`, or the
//! immediate), checks that the fault address (`si_addr`) lies in the decoded memory operand,
//! merges the bytes into the thread's write-combining line and resumes after the instruction.
//! A load is answered by [`Sink::load`] and written to the destination register.
//!
//! Write combining, per thread, as x86 does it for what libmlx5 and the crate rely on:
//! - a store goes into the thread's open 64-byte line (the 64-byte aligned line of the region
//!   it falls in); a store that crosses a line boundary is split;
//! - the line leaves as ONE 64-byte [`Sink::store`] the moment all its 64 bytes are written
//!   (a BlueFlame chunk);
//! - otherwise it leaves when the thread reaches a flush point or stores to another line,
//!   as its maximal runs of contiguous written bytes, in ascending offset, one
//!   [`Sink::store`] each (an 8-byte doorbell is one 8-byte write). Flush points: `sfence`,
//!   `mfence`, any `lock`-prefixed instruction, `xchg` with memory, `cpuid`, `serialize`,
//!   `iret`, `syscall`, `sysenter`, `int n` / `int3` / `int1` / `into` (Intel SDM vol. 3A
//!   §11.3.1); and a load from a trapped page (an uncached read drains the buffers too);
//! - while a partial line is open, every instruction is decoded before it runs, so the line
//!   leaves before the fence executes and before any later instruction can make the device
//!   look at host memory. The handler that opened or extended the line goes on with the next
//!   instructions itself as long as they are accesses to trapped pages, register moves
//!   (`mov r, r` / `mov r, imm`), `lea`, `nop` / `pause`, aligned `mov` / `movzx` / `movsx`
//!   loads of ordinary memory, or SSE loads (`movups` / `movdqu` / `movaps` ... `xmm, m128`);
//!   none touches the flags or branches, and ordinary memory is first read with
//!   `process_vm_readv`, so an unreadable address is left to the CPU to fault on. (This runs
//!   libmlx5's BlueFlame copy, loads and stores interleaved, in one signal per chunk.) The
//!   first other instruction runs on the CPU with the trap flag (EFLAGS.TF) set, and the
//!   SIGTRAP after it does the same. TF is cleared as soon as no line is open.
//!
//! Writes leave in program order. Each thread has its own line; threads may store to
//! different pages at once.
//!
//! Supported accesses (anything else on a trapped page prints one line to stderr naming the
//! instruction's bytes and addresses, and aborts the process: an MMIO access that cannot be
//! reproduced must never be lost):
//! - stores: `mov m8/m16/m32/m64, r` (including `ah`..`bh` and `moffs`), `mov m, imm`,
//!   `movnti`, `movbe m, r`; SSE `movaps/movups/movapd/movupd/movdqa/movdqu/movntdq/movntps/
//!   movntpd m128, xmm`, `movq/movsd/movlps/movlpd/movhps/movhpd m64, xmm`, `movd/movss m32,
//!   xmm`, and their VEX encodings on XMM registers; `movs` / `stos` of 1, 2, 4 or 8 bytes,
//!   with or without `rep`, 64-bit addressing, from ordinary memory;
//! - loads: `mov r, m` of 1, 2, 4 or 8 bytes, `movzx`, `movsx`, `movsxd`.
//!
//! # Why
//!
//! The model wants exactly what a ConnectX receives: 8-byte doorbells and whole 64-byte
//! BlueFlame chunks, each once, in order, without polling (`shared/docs/
//! emulator-feasibility.md` §3, mechanism A). libmlx5 v44 writes every doorbell as one
//! 8-byte `mov` followed by `sfence`, and a BlueFlame copy as 8-byte `mov`s, eight per
//! 64-byte chunk, with no fence between chunks and an `sfence` after the last; device
//! memory (`mlx5_access_dm`) with 4-byte relaxed atomic stores and loads. The crate
//! (`src/mmio.rs`) stores doorbells with an 8-byte volatile write and BlueFlame chunks with
//! four 16-byte SSE stores (`movaps` in release builds), then `sfence`.
//!
//! # Limits
//!
//! - x86-64 Linux only. AVX stores of YMM or ZMM registers (and AVX-512 forms: XMM16..31,
//!   opmasks) are not captured: they abort with a message saying so; VEX-encoded stores of
//!   XMM0..15 are captured. Read-modify-write and locked instructions on a trapped page, SSE
//!   loads from it, `movs` from it and 32-bit addressing in string instructions abort too.
//! - Cost: one signal (a few µs) per store to a trapped page that opens a line, and one per
//!   instruction the CPU runs under TF while a line is open (a single-step trap cost 11 µs
//!   in the VM this was measured in, a fault 3 µs); see the ignored benchmark in
//!   `tests/trap.rs`.
//! - The handlers are installed once, by the first [`map`], chaining whatever was installed
//!   before: faults outside registered regions and SIGTRAPs we did not cause go to that
//!   handler (with or without `SA_SIGINFO`); if it was the default or "ignore", the default
//!   action is restored and takes effect (a fault repeats, a trap is raised again), so a real
//!   crash stays a crash. A handler installed after ours must chain to ours in turn.
//! - The handlers run on the faulting thread's own stack (no `SA_ONSTACK`), so a sink can
//!   work; the price is that a stack overflow, which Rust reports from the alternate signal
//!   stack, ends as a plain SIGSEGV. A thread that blocks SIGSEGV or SIGTRAP, or that
//!   single-steps itself, cannot use the trap; a `popf` that clears TF while a partial line
//!   is open stops the stepping until that thread's next store to a trapped page.
//! - Write combining is modelled only where it is deterministic: a real CPU may also empty
//!   a partial buffer at an interrupt; the trap does so only at the flush points above.
//! - A load of ordinary memory that a handler runs ahead is probed with `process_vm_readv`,
//!   then done with one access of its width; if another thread unmaps that memory between
//!   the two, the fault inside the handler ends the process (the program's own load would
//!   have faulted as well, but would have reached its SIGSEGV handler).
//! - At most 256 regions are mapped at once and at most 64 distinct sinks are used over the
//!   life of the process. Thread-local state must be in the initial TLS block: link the
//!   crate into the program or an `LD_PRELOAD` library, not a library loaded later with
//!   `dlopen`.

mod context;
mod decode;
mod line;
mod registry;
mod signal;

use core::ptr::NonNull;
use std::io;

/// Receives what the trapped pages see.
///
/// Called from the signal handler of the thread that stored, synchronously (the store's
/// instruction completes only after the call returns), on that thread's stack. So
/// implementations must not allocate or take locks the interrupted code could hold (the
/// interrupted code is never inside the sink), must not touch trapped pages themselves,
/// and see SIGSEGV and SIGTRAP blocked while they run.
pub trait Sink: Sync {
    /// One MMIO write: `data` (1..=64 bytes, as combined) at byte `offset` of the trapped
    /// region registered with `token`.
    fn store(&self, token: u64, offset: u64, data: &[u8]);
    /// One MMIO read of `len` bytes (1, 2, 4 or 8) at `offset` (e.g. a free-running clock
    /// register); returns the value, little-endian in the low bytes (higher bytes ignored).
    fn load(&self, token: u64, offset: u64, len: u8) -> u64;
}

/// The system page size.
fn page_size() -> usize {
    // SAFETY: sysconf has no memory effects.
    let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    usize::try_from(size).unwrap_or(4096)
}

/// Maps `len` bytes (whole pages) with no access, registered under `token`: every store to
/// them becomes [`Sink::store`] calls on `sink`, every load a [`Sink::load`]. The first call
/// installs the SIGSEGV and SIGTRAP handlers (chaining whatever was installed before).
///
/// Errors: `InvalidInput` if `len` is 0 or not a multiple of the page size; `OutOfMemory`
/// if the region or sink table is full; the OS error of `mmap` or `sigaction`.
pub fn map(len: usize, token: u64, sink: &'static dyn Sink) -> io::Result<NonNull<u8>> {
    if len == 0 || len % page_size() != 0 {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "mlx5-emu trap: {len} bytes is not a whole number of {}-byte pages",
                page_size()
            ),
        ));
    }
    let mut admin = registry::admin();
    if !admin.installed {
        signal::install(&admin)?;
        admin.installed = true;
    }
    let sink = registry::intern(&admin, sink)?;
    let slot = registry::free_slot(&admin)?;
    // SAFETY: a new private anonymous mapping at an address of the kernel's choosing; it
    // overlaps nothing of ours.
    let addr = unsafe {
        libc::mmap(
            core::ptr::null_mut(),
            len,
            libc::PROT_NONE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
            -1,
            0,
        )
    };
    if addr == libc::MAP_FAILED {
        return Err(io::Error::last_os_error());
    }
    let start = NonNull::new(addr.cast::<u8>()).ok_or_else(|| io::Error::other("mmap gave 0"))?;
    registry::insert(
        &admin,
        slot,
        registry::Region {
            start: start.as_ptr() as usize,
            len,
            token,
            sink,
        },
    );
    Ok(start)
}

/// Unregisters and unmaps a region from [`map`].
///
/// A line a thread still has open in the region leaves, to the region's token and sink, at
/// that thread's next flush point (the `munmap` system call, for the calling thread).
///
/// Errors: `InvalidInput` if no region of `len` bytes was mapped at `addr`; the OS error of
/// `munmap`.
///
/// # Safety
/// `addr` and `len` are those of one [`map`] call; no thread accesses the region during or
/// after this call (an access then is an ordinary fault: a crash).
pub unsafe fn unmap(addr: NonNull<u8>, len: usize) -> io::Result<()> {
    let admin = registry::admin();
    registry::remove(&admin, addr.as_ptr() as usize, len)?;
    // SAFETY: the caller's contract: the range is our mapping and no longer used.
    if unsafe { libc::munmap(addr.as_ptr().cast(), len) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}
