//! The SIGSEGV and SIGTRAP handlers: emulate the access, keep the thread's write-combining
//! line, run the next simple instructions or step the thread while a line is open, and pass
//! on what is not ours.
//!
//! Everything here runs inside a signal handler of the thread that faulted: no allocation, no
//! lock (the region table is read lock-free, the decoder's tables are built at installation),
//! per-thread state in a const-initialised thread local without destructor.

use core::cell::Cell;
use core::ffi::c_void;
use core::fmt::Write as _;
use std::io;
use std::sync::OnceLock;

use iced_x86::{Decoder, DecoderOptions, Instruction};
use libc::{c_int, siginfo_t, ucontext_t};

use super::context::{decode_at, extend, read_memory, Context, MAX_INSN};
use super::decode::{self, Access, Refusal, Simple, Source};
use super::line::{Target, Wc};
use super::registry::{self, Admin, Region};

/// EFLAGS.TF: trap after each instruction.
const TF: u64 = 1 << 8;
/// EFLAGS.DF: string instructions go downwards.
const DF: u64 = 1 << 10;
/// Instructions a handler runs itself at most, per signal, while a line is open.
const RUN_AHEAD: usize = 64;

/// A thread's trap state.
#[derive(Clone, Copy)]
struct ThreadState {
    /// The open write-combining line, if any.
    wc: Wc,
    /// Whether we set EFLAGS.TF in this thread (so a SIGTRAP with `TRAP_TRACE` is ours).
    stepping: bool,
}

thread_local! {
    // Const-initialised and without destructor: no lazy initialisation, no registration,
    // so reading it in a signal handler is safe.
    static STATE: Cell<ThreadState> = const {
        Cell::new(ThreadState { wc: Wc::EMPTY, stepping: false })
    };
}

/// The handlers that were installed before ours: SIGSEGV, SIGTRAP.
static PREVIOUS: [OnceLock<libc::sigaction>; 2] = [OnceLock::new(), OnceLock::new()];

fn previous_slot(sig: c_int) -> usize {
    usize::from(sig == libc::SIGTRAP)
}

/// Installs the SIGSEGV and SIGTRAP handlers, remembering the ones installed before (to
/// chain to). Called once, under the admin lock.
pub(crate) fn install(_admin: &Admin) -> io::Result<()> {
    // Build the decoder's tables now (a lazy static that allocates on first use).
    let _ = Decoder::new(64, &[0x90], DecoderOptions::NONE).decode();
    for sig in [libc::SIGSEGV, libc::SIGTRAP] {
        // SAFETY: plain C structs, all-zero is a valid value; `sigaction` reads `new` and
        // writes `old`, both valid for the call. The handler has the SA_SIGINFO signature.
        unsafe {
            let mut old: libc::sigaction = core::mem::zeroed();
            if libc::sigaction(sig, core::ptr::null(), &mut old) != 0 {
                return Err(io::Error::last_os_error());
            }
            // Stored before ours is installed, so the handler always finds it.
            let _ = PREVIOUS[previous_slot(sig)].set(old);
            let mut new: libc::sigaction = core::mem::zeroed();
            new.sa_sigaction = on_signal as extern "C" fn(c_int, *mut siginfo_t, *mut c_void)
                as libc::sighandler_t;
            // Not SA_ONSTACK: the sink runs on the thread's own stack, with room to work.
            new.sa_flags = libc::SA_SIGINFO;
            libc::sigemptyset(&mut new.sa_mask);
            libc::sigaddset(&mut new.sa_mask, libc::SIGSEGV);
            libc::sigaddset(&mut new.sa_mask, libc::SIGTRAP);
            if libc::sigaction(sig, &new, core::ptr::null_mut()) != 0 {
                return Err(io::Error::last_os_error());
            }
        }
    }
    Ok(())
}

/// The handler of both signals.
extern "C" fn on_signal(sig: c_int, info: *mut siginfo_t, ctx: *mut c_void) {
    // SAFETY: the kernel passes a valid siginfo and ucontext for an SA_SIGINFO handler, for
    // the duration of the call; errno is this thread's.
    unsafe {
        let errno = *libc::__errno_location();
        let ours = if sig == libc::SIGSEGV {
            on_segv(&*info, &mut *ctx.cast::<ucontext_t>())
        } else {
            on_trap(&*info, &mut *ctx.cast::<ucontext_t>())
        };
        if !ours {
            chain(sig, info, ctx);
        }
        *libc::__errno_location() = errno;
    }
}

/// A fault at a registered region: emulate the instruction. `false`: not ours.
fn on_segv(info: &siginfo_t, uc: &mut ucontext_t) -> bool {
    // Only a fault (kernel-made, positive code) has an address; a sent SIGSEGV is not ours.
    if info.si_code <= 0 {
        return false;
    }
    // SAFETY: a SIGSEGV fault's siginfo carries the fault address.
    let addr = unsafe { info.si_addr() } as usize;
    let Some(region) = registry::find(addr) else {
        return false;
    };
    let mut cx = Context { uc };
    let rip = cx.greg(libc::REG_RIP);
    if region.covers(rip as usize, 1) {
        die(
            "instruction fetch from an emulated MMIO page",
            &[],
            rip,
            addr,
        );
    }
    let mut state = STATE.with(Cell::get);
    let (i, bytes) = decode_at(rip);
    let access = match decode::classify(&i) {
        Ok(access) => access,
        Err(refusal) => refuse(refusal, &i, &bytes, addr),
    };
    emulate(&mut cx, &mut state.wc, region, addr, &i, access, &bytes);
    advance(&mut cx, &mut state);
    STATE.with(|s| s.set(state));
    true
}

/// A single-step trap: ours if we set TF in this thread.
fn on_trap(info: &siginfo_t, uc: &mut ucontext_t) -> bool {
    let mut state = STATE.with(Cell::get);
    if !state.stepping || info.si_code != libc::TRAP_TRACE {
        return false;
    }
    advance(&mut Context { uc }, &mut state);
    STATE.with(|s| s.set(state));
    true
}

/// Sends a write that left a line to its region's sink.
fn emit(target: &Target, offset: u64, data: &[u8]) {
    match registry::sink(target.sink) {
        Some(sink) => sink.store(target.token, offset, data),
        None => die("a line's sink is gone", &[], 0, target.start),
    }
}

/// With a line open, looks at each next instruction before it runs: a flush point flushes
/// the line; an access to a trapped page or a [`Simple`] instruction is run here (saving the
/// CPU a fault or a single-step trap); anything else is left to the CPU. Then keeps the
/// thread stepping exactly while a line is open.
fn advance(cx: &mut Context<'_>, state: &mut ThreadState) {
    for _ in 0..RUN_AHEAD {
        if !state.wc.is_open() {
            break;
        }
        let rip = cx.greg(libc::REG_RIP);
        // Code on a trapped page cannot be read; its fetch faults and says so.
        if registry::find(rip as usize).is_some() {
            break;
        }
        let (i, bytes) = decode_at(rip);
        if decode::is_flush_point(&i) {
            state.wc.flush(&mut emit);
            break;
        }
        if !run_here(cx, &mut state.wc, &i, &bytes) {
            break;
        }
    }
    let flags = cx.greg(libc::REG_EFL);
    if state.wc.is_open() {
        cx.set_greg(libc::REG_EFL, flags | TF);
        state.stepping = true;
    } else if state.stepping {
        cx.set_greg(libc::REG_EFL, flags & !TF);
        state.stepping = false;
    }
}

/// Runs the next instruction `i` in the handler if it is an access to a trapped page, a load
/// of ordinary memory into a general register, or a [`Simple`] instruction, and moves RIP
/// past it. `false`: the CPU must run it (nothing changed).
fn run_here(cx: &mut Context<'_>, wc: &mut Wc, i: &Instruction, bytes: &[u8; MAX_INSN]) -> bool {
    let address = |cx: &Context<'_>, op| i.virtual_address(op, 0, |r, _, _| cx.register_value(r));
    match decode::classify(i) {
        Ok(access @ (Access::Store { mem, len, .. } | Access::Load { mem, len, .. })) => {
            let Some(at) = address(cx, mem) else {
                return false;
            };
            let (first, last) = (at as usize, (at as usize).wrapping_add(len - 1));
            match (registry::find(first), registry::find(last)) {
                (Some(region), _) => emulate(cx, wc, region, first, i, access, bytes),
                (None, Some(_)) => return false, // straddles into a region: the fault says so
                (None, None) => {
                    let Access::Load { dst, sign, .. } = access else {
                        return false; // a store to ordinary memory: the CPU's
                    };
                    let Some(raw) = load_ordinary(at, len) else {
                        return false;
                    };
                    cx.write_gpr(dst, extend(raw, len, sign));
                    cx.set_greg(libc::REG_RIP, i.next_ip());
                }
            }
            true
        }
        Ok(Access::String { .. }) | Err(_) => {
            let Some(simple) = decode::simple(i) else {
                return false;
            };
            match simple {
                Simple::Copy { dst, src } => {
                    let value = cx.read_gpr(src);
                    cx.write_gpr(dst, value);
                }
                Simple::Set { dst, value } => cx.write_gpr(dst, value),
                Simple::Lea { dst } => {
                    let Some(at) = address(cx, 1) else {
                        return false;
                    };
                    cx.write_gpr(dst, at);
                }
                Simple::XmmLoad { dst, aligned } => {
                    let mut value = [0u8; 16];
                    match address(cx, 1) {
                        Some(at)
                            if !(aligned && at % 16 != 0)
                                && registry::find(at as usize).is_none()
                                && registry::find(at as usize + 15).is_none()
                                && read_memory(at, &mut value)
                                && cx.set_xmm(dst, value) => {}
                        _ => return false,
                    }
                }
                Simple::Nop => {}
            }
            cx.set_greg(libc::REG_RIP, i.next_ip());
            true
        }
    }
}

/// The CPU's load of `len` (1, 2, 4 or 8) bytes of ordinary memory at `at`, if it is
/// aligned and readable; `None` leaves the load to the CPU (which then faults, or not, as
/// it would have).
fn load_ordinary(at: u64, len: usize) -> Option<u64> {
    let mut probe = [0u8; 8];
    if at % len as u64 != 0 || !read_memory(at, &mut probe[..len]) {
        return None;
    }
    // The probe copied bytes; load again with one access of the instruction's width, so the
    // value is single-copy atomic as the instruction's own load would be.
    // SAFETY: aligned, and readable a moment ago (a concurrent munmap by another thread
    // makes this fault and end the process, as the instruction's own load would have).
    let value = unsafe {
        match len {
            1 => u64::from((at as *const u8).read_volatile()),
            2 => u64::from((at as *const u16).read_volatile()),
            4 => u64::from((at as *const u32).read_volatile()),
            _ => (at as *const u64).read_volatile(),
        }
    };
    Some(value)
}

/// Ends the process for an access to a trapped page that cannot be emulated.
fn refuse(refusal: Refusal, i: &Instruction, bytes: &[u8; MAX_INSN], addr: usize) -> ! {
    let what = match refusal {
        Refusal::Avx => {
            "AVX (YMM/ZMM/AVX-512) access to an emulated MMIO page: AVX stores are not captured"
        }
        Refusal::Unsupported => "unsupported instruction on an emulated MMIO page",
    };
    die(what, &bytes[..i.len().min(MAX_INSN)], i.ip(), addr)
}

/// Emulates `i`, whose access touches `addr` in `region`, and moves RIP past it (or, for an
/// unfinished `rep` string instruction, leaves RIP for the CPU to go on).
fn emulate(
    cx: &mut Context<'_>,
    wc: &mut Wc,
    region: Region,
    addr: usize,
    i: &Instruction,
    access: Access,
    bytes: &[u8; MAX_INSN],
) {
    let code = &bytes[..i.len().min(MAX_INSN)];
    let target = region.target();
    match access {
        Access::Store { src, len, mem } => {
            let at = operand_address(cx, i, mem, len, region, addr, code);
            let value = source_bytes(cx, src, len, i);
            wc.store(target, at, &value[..len], &mut emit);
            cx.set_greg(libc::REG_RIP, i.next_ip());
        }
        Access::Load {
            dst,
            len,
            sign,
            mem,
        } => {
            let at = operand_address(cx, i, mem, len, region, addr, code);
            // A read of uncached memory drains the WC buffers (SDM vol. 3A §11.3.1), and the
            // device must see earlier writes before it answers.
            wc.flush(&mut emit);
            let Some(sink) = registry::sink(region.sink) else {
                die("the region's sink is gone", code, i.ip(), addr);
            };
            let raw = sink.load(region.token, (at - region.start) as u64, len as u8);
            cx.write_gpr(dst, extend(raw, len, sign));
            cx.set_greg(libc::REG_RIP, i.next_ip());
        }
        Access::String { elem, stos, rep } => {
            string(cx, wc, region, (elem, stos, rep), i, addr, code);
        }
    }
}

/// The address of memory operand `mem`, checked against the fault address (the operand must
/// contain it) and the region (the access must lie inside it).
fn operand_address(
    cx: &Context<'_>,
    i: &Instruction,
    mem: u32,
    len: usize,
    region: Region,
    addr: usize,
    code: &[u8],
) -> usize {
    let Some(at) = i.virtual_address(mem, 0, |reg, _, _| cx.register_value(reg)) else {
        die("cannot compute the memory operand", code, i.ip(), addr);
    };
    let at = at as usize;
    if !(at <= addr && addr < at + len) {
        die(
            "fault address outside the decoded memory operand",
            code,
            i.ip(),
            addr,
        );
    }
    if !region.covers(at, len) {
        die(
            "access straddles the edge of an emulated MMIO region",
            code,
            i.ip(),
            addr,
        );
    }
    at
}

/// `movs` / `stos` (`op`: element size, `stos`, `rep`): the elements whose destination lies in
/// the region are stored there, registers advanced as the CPU would. A `rep` that leaves the
/// region is left to the CPU with the registers it would have there.
fn string(
    cx: &mut Context<'_>,
    wc: &mut Wc,
    region: Region,
    (elem, stos, rep): (usize, bool, bool),
    i: &Instruction,
    addr: usize,
    code: &[u8],
) {
    let down = cx.greg(libc::REG_EFL) & DF != 0;
    let step = |x: u64| {
        if down {
            x.wrapping_sub(elem as u64)
        } else {
            x.wrapping_add(elem as u64)
        }
    };
    let (mut rdi, mut rsi) = (cx.greg(libc::REG_RDI), cx.greg(libc::REG_RSI));
    let mut count = if rep { cx.greg(libc::REG_RCX) } else { 1 };
    if !(rdi as usize <= addr && addr < rdi as usize + elem) {
        die(
            "fault address is not the string instruction's current element",
            code,
            i.ip(),
            addr,
        );
    }
    let rax = cx.greg(libc::REG_RAX).to_le_bytes();
    while count > 0 && region.covers(rdi as usize, elem) {
        let mut value = [0u8; 8];
        if stos {
            value[..elem].copy_from_slice(&rax[..elem]);
        } else {
            if registry::find(rsi as usize).is_some()
                || registry::find(rsi as usize + elem - 1).is_some()
            {
                die("movs from an emulated MMIO page", code, i.ip(), addr);
            }
            // SAFETY: the instruction itself reads these `elem` bytes at RSI; an invalid
            // source faults here as it would have there (and ends the process, as a fault
            // inside this handler cannot be handled).
            unsafe {
                core::ptr::copy_nonoverlapping(rsi as *const u8, value.as_mut_ptr(), elem);
            }
            rsi = step(rsi);
        }
        wc.store(region.target(), rdi as usize, &value[..elem], &mut emit);
        rdi = step(rdi);
        count -= 1;
    }
    cx.set_greg(libc::REG_RDI, rdi);
    if !stos {
        cx.set_greg(libc::REG_RSI, rsi);
    }
    if rep {
        cx.set_greg(libc::REG_RCX, count);
    }
    if count == 0 {
        cx.set_greg(libc::REG_RIP, i.next_ip());
    }
}

/// The `len` bytes a store writes, from the signal context.
fn source_bytes(cx: &Context<'_>, src: Source, len: usize, i: &Instruction) -> [u8; 16] {
    let mut out = [0u8; 16];
    match src {
        Source::Gpr(g) => out[..8].copy_from_slice(&cx.read_gpr(g).to_le_bytes()),
        Source::GprSwapped(g) => {
            let v = cx.read_gpr(g).to_le_bytes();
            for k in 0..len {
                out[k] = v[len - 1 - k];
            }
        }
        Source::Imm(v) => out[..8].copy_from_slice(&v.to_le_bytes()),
        Source::Xmm { index, high } => {
            let Some(x) = cx.xmm(index) else {
                die("no FP state in the signal context", &[], i.ip(), 0);
            };
            let from = if high { 8 } else { 0 };
            out[..16 - from].copy_from_slice(&x[from..]);
        }
    }
    out
}

/// Passes a signal that is not ours to the handler installed before ours. If that was the
/// default or "ignore", the default action comes back and takes effect: a fault repeats on
/// return, a trap or a sent signal is raised again (delivered when this handler returns),
/// a sent signal that was ignored stays ignored.
///
/// # Safety
/// The arguments of an SA_SIGINFO handler invocation.
unsafe fn chain(sig: c_int, info: *mut siginfo_t, ctx: *mut c_void) {
    let previous = PREVIOUS[previous_slot(sig)].get();
    let handler = previous.map_or(libc::SIG_DFL, |p| p.sa_sigaction);
    let flags = previous.map_or(0, |p| p.sa_flags);
    // SAFETY: `info` is valid (caller's contract).
    let sent = unsafe { (*info).si_code } <= 0;
    match handler {
        libc::SIG_IGN if sent => {}
        libc::SIG_DFL | libc::SIG_IGN => {
            // SAFETY: restoring the default disposition with a zeroed sigaction;
            // `raise` is async-signal-safe.
            unsafe {
                let mut default: libc::sigaction = core::mem::zeroed();
                default.sa_sigaction = libc::SIG_DFL;
                libc::sigaction(sig, &default, core::ptr::null_mut());
                if sent || sig == libc::SIGTRAP {
                    libc::raise(sig);
                }
            }
        }
        h if flags & libc::SA_SIGINFO != 0 => {
            // SAFETY: the previous handler was installed with SA_SIGINFO, so it has this
            // signature; it gets the arguments we got.
            unsafe {
                let f: extern "C" fn(c_int, *mut siginfo_t, *mut c_void) = core::mem::transmute(h);
                f(sig, info, ctx);
            }
        }
        h => {
            // SAFETY: a plain handler (no SA_SIGINFO) takes the signal number only.
            unsafe {
                let f: extern "C" fn(c_int) = core::mem::transmute(h);
                f(sig);
            }
        }
    }
}

/// A fixed buffer that `write!` fills (no allocation); what does not fit is cut.
struct Message {
    buf: [u8; 512],
    len: usize,
}

impl core::fmt::Write for Message {
    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        let n = s.len().min(self.buf.len() - self.len);
        self.buf[self.len..self.len + n].copy_from_slice(&s.as_bytes()[..n]);
        self.len += n;
        Ok(())
    }
}

/// Prints one line naming what could not be emulated, the instruction's bytes and addresses,
/// to stderr, and aborts: an MMIO access the trap cannot reproduce must not be lost.
fn die(what: &str, code: &[u8], rip: u64, addr: usize) -> ! {
    let mut m = Message {
        buf: [0; 512],
        len: 0,
    };
    let _ = write!(m, "mlx5-emu trap: {what}: instruction [");
    for (k, b) in code.iter().enumerate() {
        let _ = write!(m, "{}{b:02x}", if k == 0 { "" } else { " " });
    }
    let _ = writeln!(m, "] at {rip:#x}, address {addr:#x}; aborting");
    // SAFETY: write(2) of our own buffer, then abort(3); both async-signal-safe.
    unsafe {
        libc::write(2, m.buf.as_ptr().cast(), m.len);
        libc::abort();
    }
}
