//! The interrupted thread as a signal handler sees it: its registers in the signal frame
//! (general registers in `uc_mcontext.gregs`, XMM registers in the FXSAVE / XSAVE area at
//! `uc_mcontext.fpregs`), its memory read without faulting, its code decoded.

use iced_x86::{Decoder, DecoderError, DecoderOptions, Instruction, Register};
use libc::{c_int, ucontext_t};

use super::decode::{self, Gpr};

/// The longest x86 instruction.
pub(crate) const MAX_INSN: usize = 15;
/// Code is read up to the next boundary of this size first (the smallest page size: a
/// boundary of any larger page is one of these too).
const CODE_PAGE: usize = 4096;
/// `arch_prctl` codes (`<asm/prctl.h>`): read the FS / GS base.
const ARCH_GET_FS: c_int = 0x1003;
const ARCH_GET_GS: c_int = 0x1004;

/// The interrupted thread's registers.
pub(crate) struct Context<'a> {
    pub(crate) uc: &'a mut ucontext_t,
}

impl Context<'_> {
    /// A `gregs` slot (`libc::REG_*`).
    pub(crate) fn greg(&self, reg: c_int) -> u64 {
        self.uc.uc_mcontext.gregs[reg as usize] as u64
    }

    pub(crate) fn set_greg(&mut self, reg: c_int, value: u64) {
        self.uc.uc_mcontext.gregs[reg as usize] = value as i64;
    }

    /// A general-purpose register's value (zero-extended).
    pub(crate) fn read_gpr(&self, g: Gpr) -> u64 {
        let full = self.uc.uc_mcontext.gregs[g.greg] as u64;
        extend(full >> g.shift, g.width as usize, false)
    }

    /// Writes a general-purpose register as an instruction with it as destination does: a
    /// 32-bit write clears bits 32..63, an 8- or 16-bit write keeps the other bits.
    pub(crate) fn write_gpr(&mut self, g: Gpr, value: u64) {
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

    /// An XMM register's 16 bytes; `None` if the frame has no FP state.
    pub(crate) fn xmm(&self, index: usize) -> Option<[u8; 16]> {
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

    /// Sets an XMM register for when the thread resumes; `false` if the frame has no FP
    /// state.
    pub(crate) fn set_xmm(&mut self, index: usize, bytes: [u8; 16]) -> bool {
        let fp = self.uc.uc_mcontext.fpregs;
        if fp.is_null() {
            return false;
        }
        let words: [u32; 4] = core::array::from_fn(|k| {
            u32::from_le_bytes([
                bytes[4 * k],
                bytes[4 * k + 1],
                bytes[4 * k + 2],
                bytes[4 * k + 3],
            ])
        });
        // sigreturn loads the XMM registers from here: the kernel sets the FP and SSE bits of
        // an XSAVE frame's `xfeatures` whatever their state, for programs that edit this
        // legacy area (`save_xstate_epilog`, arch/x86/kernel/fpu/signal.c).
        // SAFETY: as in `xmm`.
        unsafe { (*fp)._xmm[index].element = words };
        true
    }

    /// A register's value as an address computation needs it (segment registers: their
    /// base).
    pub(crate) fn register_value(&self, reg: Register) -> Option<u64> {
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

/// `raw`'s low `len` bytes, sign- or zero-extended to 64 bits.
pub(crate) fn extend(raw: u64, len: usize, sign: bool) -> u64 {
    let bits = 8 * len as u32;
    if bits >= 64 {
        raw
    } else if sign {
        (((raw << (64 - bits)) as i64) >> (64 - bits)) as u64
    } else {
        raw & ((1u64 << bits) - 1)
    }
}

/// Reads `out.len()` bytes of this process's memory at `addr` without faulting
/// (`process_vm_readv` on ourselves); `false` if any of them cannot be read.
pub(crate) fn read_memory(addr: u64, out: &mut [u8]) -> bool {
    let local = libc::iovec {
        iov_base: out.as_mut_ptr().cast(),
        iov_len: out.len(),
    };
    let remote = libc::iovec {
        iov_base: addr as *mut libc::c_void,
        iov_len: out.len(),
    };
    // SAFETY: the kernel writes at most `out.len()` bytes into `out` and reads the remote
    // range through the page tables, failing (EFAULT) instead of faulting.
    let n = unsafe { libc::process_vm_readv(libc::getpid(), &local, 1, &remote, 1, 0) };
    n == out.len() as isize
}

/// Decodes the instruction at `rip`, reading past the next 4 KiB boundary only if the
/// instruction continues there (so that it is mapped).
pub(crate) fn decode_at(rip: u64) -> (Instruction, [u8; MAX_INSN]) {
    let mut bytes = [0u8; MAX_INSN];
    let first = (CODE_PAGE - rip as usize % CODE_PAGE).min(MAX_INSN);
    let mut read = |n: usize| {
        // SAFETY: the thread is about to run (or just faulted in) this instruction, so its
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

    #[test]
    fn memory_reads_fail_instead_of_faulting() {
        let value = 0x1122_3344_5566_7788u64;
        let mut out = [0u8; 8];
        assert!(read_memory(&value as *const u64 as u64, &mut out));
        assert_eq!(u64::from_le_bytes(out), value);
        assert!(!read_memory(8, &mut out));
    }
}
