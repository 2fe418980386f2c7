//! The SIGSEGV and SIGTRAP handlers: emulate the access, keep the thread's write-combining
//! line, step the thread while a line is open, and pass on what is not ours.
//!
//! Everything here runs inside a signal handler of the thread that faulted: no allocation, no
//! lock (the region table is read lock-free, the decoder's tables are built at installation),
//! per-thread state in a const-initialised thread local without destructor.

use core::cell::Cell;
use core::ffi::c_void;
use core::fmt::Write as _;
use std::io;
use std::sync::OnceLock;

use iced_x86::{Decoder, DecoderError, DecoderOptions, Instruction, Register};
use libc::{c_int, siginfo_t, ucontext_t};

use super::decode::{self, Access, Gpr, Refusal, Source};
use super::line::{Target, Wc};
use super::registry::{self, Admin, Region};

/// EFLAGS.TF: trap after each instruction.
const TF: u64 = 1 << 8;
/// EFLAGS.DF: string instructions go downwards.
const DF: u64 = 1 << 10;
/// The longest x86 instruction.
const MAX_INSN: usize = 15;
/// `arch_prctl` codes (`<asm/prctl.h>`): read the FS / GS base.
const ARCH_GET_FS: c_int = 0x1003;
const ARCH_GET_GS: c_int = 0x1004;
/// Code is read up to the next boundary of this size first (the smallest page size: a
/// boundary of any larger page is one of these too).
const CODE_PAGE: usize = 4096;

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
    let mut state = STATE.with(Cell::get);
    emulate(&mut cx, &mut state.wc, region, addr);
    step_point(&mut cx, &mut state);
    STATE.with(|s| s.set(state));
    true
}

/// A single-step trap: ours if we set TF in this thread.
fn on_trap(info: &siginfo_t, uc: &mut ucontext_t) -> bool {
    let mut state = STATE.with(Cell::get);
    if !state.stepping || info.si_code != libc::TRAP_TRACE {
        return false;
    }
    step_point(&mut Context { uc }, &mut state);
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

/// Before the instruction at RIP runs, with a line open: flush it if that instruction is a
/// flush point. Then keep the thread stepping exactly while a line is open.
fn step_point(cx: &mut Context<'_>, state: &mut ThreadState) {
    if state.wc.is_open() {
        let rip = cx.greg(libc::REG_RIP);
        // Code on a trapped page cannot be read; its fetch faults and says so.
        if registry::find(rip as usize).is_none() {
            let (next, _) = decode_at(rip);
            if decode::is_flush_point(&next) {
                state.wc.flush(&mut emit);
            }
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

/// Emulates the instruction at RIP, which faulted at `addr` in `region`, and moves RIP past
/// it (or, for an unfinished `rep` string instruction, leaves RIP for the CPU to go on).
fn emulate(cx: &mut Context<'_>, wc: &mut Wc, region: Region, addr: usize) {
    let rip = cx.greg(libc::REG_RIP);
    if region.covers(rip as usize, 1) {
        die(
            "instruction fetch from an emulated MMIO page",
            &[],
            rip,
            addr,
        );
    }
    let (i, bytes) = decode_at(rip);
    let code = &bytes[..i.len().min(MAX_INSN)];
    let access = match decode::classify(&i) {
        Ok(access) => access,
        Err(Refusal::Avx) => die(
            "AVX (YMM/ZMM/EVEX) access to an emulated MMIO page: AVX stores are not captured",
            code,
            rip,
            addr,
        ),
        Err(Refusal::Unsupported) => die(
            "unsupported instruction on an emulated MMIO page",
            code,
            rip,
            addr,
        ),
    };
    let target = region.target();
    match access {
        Access::Store { src, len, mem } => {
            let at = operand_address(cx, &i, mem, len, region, addr, code);
            let value = cx.source_bytes(src, len, &i);
            wc.store(target, at, &value[..len], &mut emit);
            cx.set_greg(libc::REG_RIP, i.next_ip());
        }
        Access::Load {
            dst,
            len,
            sign,
            mem,
        } => {
            let at = operand_address(cx, &i, mem, len, region, addr, code);
            // A read of uncached memory drains the WC buffers (SDM vol. 3A §11.3.1), and the
            // device must see earlier writes before it answers.
            wc.flush(&mut emit);
            let Some(sink) = registry::sink(region.sink) else {
                die("the region's sink is gone", code, rip, addr);
            };
            let raw = sink.load(region.token, (at - region.start) as u64, len as u8);
            cx.write_gpr(dst, extend(raw, len, sign));
            cx.set_greg(libc::REG_RIP, i.next_ip());
        }
        Access::String { elem, stos, rep } => {
            string(cx, wc, region, (elem, stos, rep), &i, addr, code);
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

/// `raw`'s low `len` bytes, sign- or zero-extended to 64 bits.
fn extend(raw: u64, len: usize, sign: bool) -> u64 {
    let bits = 8 * len as u32;
    if bits >= 64 {
        raw
    } else if sign {
        (((raw << (64 - bits)) as i64) >> (64 - bits)) as u64
    } else {
        raw & ((1u64 << bits) - 1)
    }
}

/// Decodes the instruction at `rip`, reading past the next 4 KiB boundary only if the
/// instruction continues there (so that it is mapped).
fn decode_at(rip: u64) -> (Instruction, [u8; MAX_INSN]) {
    let mut bytes = [0u8; MAX_INSN];
    let first = (CODE_PAGE - rip as usize % CODE_PAGE).min(MAX_INSN);
    let mut read = |n: usize| {
        // SAFETY: the thread executes (or just executed up to) this instruction, so its
        // bytes up to `n` are mapped and readable (x86 code pages are readable); `first`
        // stops at the page boundary unless the instruction is longer.
        unsafe { core::ptr::copy_nonoverlapping(rip as *const u8, bytes.as_mut_ptr(), n) };
        let mut decoder = Decoder::with_ip(64, &bytes[..n], rip, DecoderOptions::NONE);
        let i = decoder.decode();
        (i, decoder.last_error())
    };
    let (mut i, error) = read(first);
    if error == DecoderError::NoMoreBytes && first < MAX_INSN {
        i = read(MAX_INSN).0;
    }
    (i, bytes)
}

/// The interrupted thread's registers.
struct Context<'a> {
    uc: &'a mut ucontext_t,
}

impl Context<'_> {
    fn greg(&self, reg: c_int) -> u64 {
        self.uc.uc_mcontext.gregs[reg as usize] as u64
    }

    fn set_greg(&mut self, reg: c_int, value: u64) {
        self.uc.uc_mcontext.gregs[reg as usize] = value as i64;
    }

    /// A general-purpose register's value (zero-extended).
    fn read_gpr(&self, g: Gpr) -> u64 {
        let full = self.uc.uc_mcontext.gregs[g.greg] as u64;
        extend(full >> g.shift, g.width as usize, false)
    }

    /// Writes a general-purpose register as an instruction with it as destination does: a
    /// 32-bit write clears bits 32..63, an 8- or 16-bit write keeps the other bits.
    fn write_gpr(&mut self, g: Gpr, value: u64) {
        let slot = &mut self.uc.uc_mcontext.gregs[g.greg];
        let old = *slot as u64;
        let new = match g.width {
            8 => value,
            4 => value & 0xffff_ffff,
            w => {
                let mask = ((1u64 << (8 * w as u32)) - 1) << g.shift;
                (old & !mask) | ((value << g.shift) & mask)
            }
        };
        *slot = new as i64;
    }

    /// An XMM register's 16 bytes from the FP state of the signal frame.
    fn xmm(&self, index: usize) -> Option<[u8; 16]> {
        let fp = self.uc.uc_mcontext.fpregs;
        if fp.is_null() {
            return None;
        }
        // SAFETY: a non-null `fpregs` points at the FXSAVE-format area of this signal frame,
        // valid while the handler runs.
        let words = unsafe { (*fp)._xmm[index].element };
        let mut out = [0u8; 16];
        for (k, w) in words.iter().enumerate() {
            out[4 * k..4 * k + 4].copy_from_slice(&w.to_le_bytes());
        }
        Some(out)
    }

    /// The `len` bytes a store writes, from the signal context.
    fn source_bytes(&self, src: Source, len: usize, i: &Instruction) -> [u8; 16] {
        let mut out = [0u8; 16];
        match src {
            Source::Gpr(g) => out[..8].copy_from_slice(&self.read_gpr(g).to_le_bytes()),
            Source::GprSwapped(g) => {
                let v = self.read_gpr(g).to_le_bytes();
                for k in 0..len {
                    out[k] = v[len - 1 - k];
                }
            }
            Source::Imm(v) => out[..8].copy_from_slice(&v.to_le_bytes()),
            Source::Xmm { index, high } => {
                let Some(x) = self.xmm(index) else {
                    die("no FP state in the signal context", &[], i.ip(), 0);
                };
                let from = if high { 8 } else { 0 };
                out[..16 - from].copy_from_slice(&x[from..]);
            }
        }
        out
    }

    /// A register's value as an address computation needs it (segment registers: their
    /// base).
    fn register_value(&self, reg: Register) -> Option<u64> {
        match reg {
            Register::ES | Register::CS | Register::SS | Register::DS => Some(0),
            Register::FS => segment_base(ARCH_GET_FS),
            Register::GS => segment_base(ARCH_GET_GS),
            _ => decode::gpr(reg).map(|g| self.read_gpr(g)),
        }
    }
}

/// The FS or GS base of this thread (`arch_prctl`, async-signal-safe).
fn segment_base(which: c_int) -> Option<u64> {
    let mut base = 0u64;
    // SAFETY: ARCH_GET_FS / ARCH_GET_GS write one u64 at the pointer given.
    let rc = unsafe { libc::syscall(libc::SYS_arch_prctl, which, &mut base as *mut u64) };
    (rc == 0).then_some(base)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extension() {
        assert_eq!(extend(0x80, 1, true), u64::MAX - 0x7f);
        assert_eq!(extend(0x1_80, 1, false), 0x80);
        assert_eq!(extend(0x8000_0000, 4, true), 0xffff_ffff_8000_0000);
        assert_eq!(extend(0x7fff, 2, true), 0x7fff);
        assert_eq!(extend(u64::MAX, 8, false), u64::MAX);
    }
}
