//! What the trap does with signals that are not its own, and with accesses it cannot
//! emulate: each case runs in a child process (this test binary again, with `TRAP_CHILD`
//! naming the case), since it ends that process.

mod trap_common;

use std::arch::asm;
use std::os::unix::process::ExitStatusExt;
use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};

use libc::{c_int, c_void, siginfo_t};
use trap_common::*;

const CHILD: &str = "TRAP_CHILD";

/// Runs case `case` in a child process.
fn run(case: &str) -> Output {
    Command::new(std::env::current_exe().unwrap())
        .args([
            "child",
            "--exact",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD, case)
        .output()
        .unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The address of the unregistered page the cases fault on.
static STRAY: AtomicUsize = AtomicUsize::new(0);
/// Writes the trapped page had seen before the breakpoint.
static BEFORE: AtomicUsize = AtomicUsize::new(0);
/// The trapped page's recorder, for the handler to look at.
static RECORDER: AtomicUsize = AtomicUsize::new(0);

/// Writes the trapped page has seen.
fn seen() -> usize {
    let rec = RECORDER.load(Ordering::Relaxed) as *const Recorder;
    // SAFETY: set by `live_trap` to a leaked (`'static`) recorder before any breakpoint.
    unsafe { (*rec).count() }
}

extern "C" fn siginfo_handler(sig: c_int, info: *mut siginfo_t, _: *mut c_void) {
    // SAFETY: the kernel's siginfo for this signal.
    let addr = unsafe { (*info).si_addr() } as usize;
    let code = match sig {
        libc::SIGSEGV if addr == STRAY.load(Ordering::Relaxed) => 42,
        // 44, plus 10 per write seen before the breakpoint, plus 1 per write seen now.
        libc::SIGTRAP => (44 + 10 * BEFORE.load(Ordering::Relaxed) + seen()) as c_int,
        _ => 41,
    };
    // SAFETY: _exit is async-signal-safe.
    unsafe { libc::_exit(code) }
}

extern "C" fn plain_handler(sig: c_int) {
    // SAFETY: _exit is async-signal-safe.
    unsafe { libc::_exit(if sig == libc::SIGSEGV { 43 } else { 41 }) }
}

/// Installs `handler` (a `sa_sigaction` value) for `sig`, with `flags`.
fn install(sig: c_int, handler: libc::sighandler_t, flags: c_int) {
    // SAFETY: a zeroed sigaction is valid; the handlers above have the signatures `flags`
    // announce.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = handler;
        sa.sa_flags = flags;
        assert_eq!(libc::sigaction(sig, &sa, std::ptr::null_mut()), 0);
    }
}

/// A store to a page mapped without access and not registered with the trap.
fn stray_store() {
    // SAFETY: a fresh anonymous mapping; the store faults, which is the point.
    unsafe {
        let p = libc::mmap(
            std::ptr::null_mut(),
            4096,
            libc::PROT_NONE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        );
        assert_ne!(p, libc::MAP_FAILED);
        STRAY.store(p as usize, Ordering::Relaxed);
        p.cast::<u64>().write_volatile(1);
    }
}

/// A trapped page that has seen one doorbell (so the trap's handlers are installed, after
/// whatever the case installed, and working).
fn live_trap() -> Page {
    let page = Page::new(1);
    // SAFETY: inside the trapped page.
    unsafe { page.at::<u64>(0x800).write_volatile(5) };
    sfence();
    assert_eq!(
        page.rec.writes(),
        vec![(0x800, 5u64.to_le_bytes().to_vec())]
    );
    page.rec.clear();
    RECORDER.store(page.rec as *const Recorder as usize, Ordering::Relaxed);
    page
}

fn int3() {
    // SAFETY: a breakpoint; the case's SIGTRAP disposition decides what follows.
    unsafe { asm!("int3", options(nostack)) }
}

#[test]
#[ignore = "the child process of the other tests in this file"]
fn child() {
    let Ok(case) = std::env::var(CHILD) else {
        return;
    };
    // SAFETY: no core files from the crashes these cases are about.
    unsafe {
        let none = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        libc::setrlimit(libc::RLIMIT_CORE, &none);
    }
    let siginfo = siginfo_handler as extern "C" fn(c_int, *mut siginfo_t, *mut c_void);
    let plain = plain_handler as extern "C" fn(c_int);
    match case.as_str() {
        "segv-siginfo" => install(libc::SIGSEGV, siginfo as usize, libc::SA_SIGINFO),
        "segv-plain" => install(libc::SIGSEGV, plain as usize, 0),
        "segv-default" | "segv-sent" => install(libc::SIGSEGV, libc::SIG_DFL, 0),
        "segv-ignored" => install(libc::SIGSEGV, libc::SIG_IGN, 0),
        "trap-siginfo" | "trap-stepping" => {
            install(libc::SIGTRAP, siginfo as usize, libc::SA_SIGINFO)
        }
        _ => {}
    }
    let page = live_trap();
    match case.as_str() {
        "segv-siginfo" | "segv-plain" | "segv-default" | "segv-ignored" => stray_store(),
        // SAFETY: a signal sent to this thread.
        "segv-sent" => unsafe {
            libc::raise(libc::SIGSEGV);
        },
        "trap-siginfo" | "trap-default" => int3(),
        "trap-stepping" => {
            // A line is open (the thread is stepping) when the breakpoint comes: the line
            // leaves first, and the breakpoint still reaches the program's handler.
            // SAFETY: inside the trapped page.
            unsafe { page.at::<u64>(0x40).write_volatile(6) };
            BEFORE.store(page.rec.count(), Ordering::Relaxed);
            int3();
        }
        // SAFETY: an add to memory on the trapped page: not emulated.
        "unsupported" => unsafe {
            asm!("add [rdi], eax", in("rdi") page.at::<u8>(8), in("eax") 1, options(nostack));
        },
        // SAFETY: AVX is checked by the parent; a 32-byte store to the trapped page.
        "avx" => unsafe {
            asm!("vmovdqu [rdi], ymm0", in("rdi") page.at::<u8>(0), options(nostack));
        },
        _ => {}
    }
    eprintln!("case {case}: still alive");
    std::process::exit(99);
}

#[test]
fn a_stray_fault_reaches_the_previous_siginfo_handler() {
    assert_eq!(run("segv-siginfo").status.code(), Some(42));
}

#[test]
fn a_stray_fault_reaches_the_previous_plain_handler() {
    assert_eq!(run("segv-plain").status.code(), Some(43));
}

#[test]
fn with_the_default_or_ignored_before_a_stray_fault_kills_with_sigsegv() {
    for case in ["segv-default", "segv-ignored", "segv-sent"] {
        let out = run(case);
        assert_eq!(
            out.status.signal(),
            Some(libc::SIGSEGV),
            "{case}: {}",
            stderr(&out)
        );
    }
}

#[test]
fn a_breakpoint_reaches_the_previous_sigtrap_handler_or_kills_by_default() {
    assert_eq!(run("trap-siginfo").status.code(), Some(44));
    let out = run("trap-default");
    assert_eq!(out.status.signal(), Some(libc::SIGTRAP), "{}", stderr(&out));
}

#[test]
fn a_breakpoint_while_stepping_flushes_the_line_then_reaches_the_program() {
    // 44 + 10 x 0 writes just before the breakpoint (the line was open) + 1 write when the
    // program's handler ran.
    assert_eq!(run("trap-stepping").status.code(), Some(45));
}

#[test]
fn an_unsupported_instruction_aborts_with_one_line_naming_it() {
    let out = run("unsupported");
    assert_eq!(out.status.signal(), Some(libc::SIGABRT));
    let err = stderr(&out);
    let line = err
        .lines()
        .find(|l| l.starts_with("mlx5-emu trap:"))
        .unwrap_or_else(|| panic!("no trap line in {err}"));
    assert!(line.contains("unsupported instruction"), "{line}");
    assert!(line.contains("[01 07]"), "{line}");
    assert!(line.contains("address 0x"), "{line}");
}

#[test]
fn an_avx_store_aborts_saying_avx_is_not_captured() {
    if !std::arch::is_x86_feature_detected!("avx") {
        eprintln!("no AVX on this CPU: nothing to test");
        return;
    }
    let out = run("avx");
    assert_eq!(out.status.signal(), Some(libc::SIGABRT));
    let err = stderr(&out);
    assert!(err.contains("AVX stores are not captured"), "{err}");
    assert!(err.contains("[c5 fe 7f 07]"), "{err}");
}
