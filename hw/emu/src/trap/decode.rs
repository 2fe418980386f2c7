//! What a faulting instruction does to memory, read from its decoded form (iced-x86): the
//! trap's tables. Nothing here touches a signal context; the handlers (`signal.rs`) take the
//! values these name from it.

use iced_x86::{Code, Instruction, Mnemonic, OpKind, Register};

/// A general-purpose register as the signal context holds it: the `gregs` slot of its full
/// 64-bit register, the bit at which it starts (8 for `AH`..`BH`) and its width in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Gpr {
    pub(crate) greg: usize,
    pub(crate) shift: u8,
    pub(crate) width: u8,
}

/// The general-purpose registers: each 64-bit register's 64/32/16/8-bit names and its slot in
/// `ucontext_t.uc_mcontext.gregs` (glibc's `REG_*`).
const GPRS: [([Register; 4], libc::c_int); 16] = {
    use Register::*;
    [
        ([RAX, EAX, AX, AL], libc::REG_RAX),
        ([RCX, ECX, CX, CL], libc::REG_RCX),
        ([RDX, EDX, DX, DL], libc::REG_RDX),
        ([RBX, EBX, BX, BL], libc::REG_RBX),
        ([RSP, ESP, SP, SPL], libc::REG_RSP),
        ([RBP, EBP, BP, BPL], libc::REG_RBP),
        ([RSI, ESI, SI, SIL], libc::REG_RSI),
        ([RDI, EDI, DI, DIL], libc::REG_RDI),
        ([R8, R8D, R8W, R8L], libc::REG_R8),
        ([R9, R9D, R9W, R9L], libc::REG_R9),
        ([R10, R10D, R10W, R10L], libc::REG_R10),
        ([R11, R11D, R11W, R11L], libc::REG_R11),
        ([R12, R12D, R12W, R12L], libc::REG_R12),
        ([R13, R13D, R13W, R13L], libc::REG_R13),
        ([R14, R14D, R14W, R14L], libc::REG_R14),
        ([R15, R15D, R15W, R15L], libc::REG_R15),
    ]
};

/// The legacy high-byte registers: bits 8..15 of these slots.
const HIGH_BYTES: [(Register, libc::c_int); 4] = [
    (Register::AH, libc::REG_RAX),
    (Register::CH, libc::REG_RCX),
    (Register::DH, libc::REG_RDX),
    (Register::BH, libc::REG_RBX),
];

/// Widths in bytes of the names in a [`GPRS`] row, in order.
const WIDTHS: [u8; 4] = [8, 4, 2, 1];

/// The context slot, shift and width of a general-purpose register; `None` for any other
/// register.
pub(crate) fn gpr(reg: Register) -> Option<Gpr> {
    for (names, greg) in GPRS {
        if let Some(k) = names.iter().position(|&r| r == reg) {
            return Some(Gpr {
                greg: greg as usize,
                shift: 0,
                width: WIDTHS[k],
            });
        }
    }
    HIGH_BYTES
        .iter()
        .find(|(r, _)| *r == reg)
        .map(|&(_, greg)| Gpr {
            greg: greg as usize,
            shift: 8,
            width: 1,
        })
}

/// The number of an SSE register `XMM0`..`XMM15` (the ones the FXSAVE area of the signal
/// context holds); `None` for any other register.
pub(crate) fn xmm(reg: Register) -> Option<usize> {
    let n = (reg as usize).wrapping_sub(Register::XMM0 as usize);
    (n < 16).then_some(n)
}

/// Where a store's bytes come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Source {
    /// The low bytes of a general-purpose register (little-endian, as `mov` stores them).
    Gpr(Gpr),
    /// A general-purpose register byte-swapped (`movbe`).
    GprSwapped(Gpr),
    /// An immediate operand, sign-extended to the store's width as the CPU does.
    Imm(u64),
    /// An SSE register: its low bytes, or with `high` its bytes 8..15 (`movhps`).
    Xmm { index: usize, high: bool },
}

/// The memory access of a supported instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Access {
    /// `len` bytes from `src` to the memory operand `mem`.
    Store { src: Source, len: usize, mem: u32 },
    /// `len` bytes from the memory operand `mem` into `dst`, sign- or zero-extended to the
    /// register's width (then written with the CPU's rule for that width).
    Load {
        dst: Gpr,
        len: usize,
        sign: bool,
        mem: u32,
    },
    /// `movs` (`stos: false`, from `[rsi]`) or `stos` (from `rax`) of `elem`-byte elements,
    /// `rcx` times with `rep`, else once; 64-bit addressing only.
    String { elem: usize, stos: bool, rep: bool },
}

/// Why an instruction that touched a trapped page cannot be emulated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// An instruction on YMM / ZMM registers, AVX-512 registers (XMM16..31, opmasks) or with
    /// an opmask: AVX stores are not captured.
    Avx,
    /// Anything else the tables do not list (read-modify-write, locked, segment registers...).
    Unsupported,
}

/// SSE stores from an XMM register: code, bytes stored, from the high half.
const XMM_STORES: [(Code, usize, bool); 36] = {
    use Code::*;
    [
        (Movaps_xmmm128_xmm, 16, false),
        (Movups_xmmm128_xmm, 16, false),
        (Movapd_xmmm128_xmm, 16, false),
        (Movupd_xmmm128_xmm, 16, false),
        (Movdqa_xmmm128_xmm, 16, false),
        (Movdqu_xmmm128_xmm, 16, false),
        (Movntdq_m128_xmm, 16, false),
        (Movntps_m128_xmm, 16, false),
        (Movntpd_m128_xmm, 16, false),
        (Movq_xmmm64_xmm, 8, false),
        (Movq_rm64_xmm, 8, false),
        (Movsd_xmmm64_xmm, 8, false),
        (Movlps_m64_xmm, 8, false),
        (Movlpd_m64_xmm, 8, false),
        (Movhps_m64_xmm, 8, true),
        (Movhpd_m64_xmm, 8, true),
        (Movd_rm32_xmm, 4, false),
        (Movss_xmmm32_xmm, 4, false),
        // The same stores VEX-encoded on XMM (code built for AVX machines): the XMM value is
        // the low half of the YMM register and lives in the same FXSAVE slot.
        (VEX_Vmovaps_xmmm128_xmm, 16, false),
        (VEX_Vmovups_xmmm128_xmm, 16, false),
        (VEX_Vmovapd_xmmm128_xmm, 16, false),
        (VEX_Vmovupd_xmmm128_xmm, 16, false),
        (VEX_Vmovdqa_xmmm128_xmm, 16, false),
        (VEX_Vmovdqu_xmmm128_xmm, 16, false),
        (VEX_Vmovntdq_m128_xmm, 16, false),
        (VEX_Vmovntps_m128_xmm, 16, false),
        (VEX_Vmovntpd_m128_xmm, 16, false),
        (VEX_Vmovq_xmmm64_xmm, 8, false),
        (VEX_Vmovq_rm64_xmm, 8, false),
        (VEX_Vmovsd_m64_xmm, 8, false),
        (VEX_Vmovlps_m64_xmm, 8, false),
        (VEX_Vmovlpd_m64_xmm, 8, false),
        (VEX_Vmovhps_m64_xmm, 8, true),
        (VEX_Vmovhpd_m64_xmm, 8, true),
        (VEX_Vmovd_rm32_xmm, 4, false),
        (VEX_Vmovss_m32_xmm, 4, false),
    ]
};

/// Stores of an immediate: code, bytes stored.
const IMM_STORES: [(Code, usize); 4] = [
    (Code::Mov_rm8_imm8, 1),
    (Code::Mov_rm16_imm16, 2),
    (Code::Mov_rm32_imm32, 4),
    (Code::Mov_rm64_imm32, 8),
];

/// Stores of a general-purpose register (operand 1; its width is the store's).
const GPR_STORES: [Code; 10] = [
    Code::Mov_rm8_r8,
    Code::Mov_rm16_r16,
    Code::Mov_rm32_r32,
    Code::Mov_rm64_r64,
    Code::Mov_moffs8_AL,
    Code::Mov_moffs16_AX,
    Code::Mov_moffs32_EAX,
    Code::Mov_moffs64_RAX,
    Code::Movnti_m32_r32,
    Code::Movnti_m64_r64,
];

/// Byte-swapping stores of a general-purpose register.
const SWAPPED_STORES: [Code; 3] = [
    Code::Movbe_m16_r16,
    Code::Movbe_m32_r32,
    Code::Movbe_m64_r64,
];

/// Loads into a general-purpose register (operand 0): code, bytes loaded (0: the register's
/// width), sign-extended.
const LOADS: [(Code, usize, bool); 21] = {
    use Code::*;
    [
        (Mov_r8_rm8, 0, false),
        (Mov_r16_rm16, 0, false),
        (Mov_r32_rm32, 0, false),
        (Mov_r64_rm64, 0, false),
        (Mov_AL_moffs8, 0, false),
        (Mov_AX_moffs16, 0, false),
        (Mov_EAX_moffs32, 0, false),
        (Mov_RAX_moffs64, 0, false),
        (Movzx_r16_rm8, 1, false),
        (Movzx_r32_rm8, 1, false),
        (Movzx_r64_rm8, 1, false),
        (Movzx_r16_rm16, 2, false),
        (Movzx_r32_rm16, 2, false),
        (Movzx_r64_rm16, 2, false),
        (Movsx_r16_rm8, 1, true),
        (Movsx_r32_rm8, 1, true),
        (Movsx_r64_rm8, 1, true),
        (Movsx_r16_rm16, 2, true),
        (Movsx_r32_rm16, 2, true),
        (Movsx_r64_rm16, 2, true),
        (Movsxd_r64_rm32, 4, true),
    ]
};

/// String instructions: code, element size, `stos`.
const STRINGS: [(Code, usize, bool); 8] = {
    use Code::*;
    [
        (Movsb_m8_m8, 1, false),
        (Movsw_m16_m16, 2, false),
        (Movsd_m32_m32, 4, false),
        (Movsq_m64_m64, 8, false),
        (Stosb_m8_AL, 1, true),
        (Stosw_m16_AX, 2, true),
        (Stosd_m32_EAX, 4, true),
        (Stosq_m64_RAX, 8, true),
    ]
};

/// Whether `reg` exists only with AVX / AVX-512: YMM, ZMM, XMM16..31, opmask registers.
fn is_avx_only(reg: Register) -> bool {
    let n = reg as usize;
    (Register::XMM16 as usize..=Register::ZMM31 as usize).contains(&n)
        || (Register::K0 as usize..=Register::K7 as usize).contains(&n)
}

/// Whether operand `op` is an ordinary memory operand (a register form never faults on a
/// page, so a register operand where memory is expected means a decoding mismatch).
fn is_memory(i: &Instruction, op: u32) -> bool {
    i.op_kind(op) == OpKind::Memory
}

/// The memory access `i` makes, if the trap can emulate it.
pub(crate) fn classify(i: &Instruction) -> Result<Access, Refusal> {
    let code = i.code();
    let store = |src: Option<Source>, len: usize| match src {
        Some(src) if is_memory(i, 0) => Ok(Access::Store { src, len, mem: 0 }),
        _ => Err(Refusal::Unsupported),
    };
    if GPR_STORES.contains(&code) || SWAPPED_STORES.contains(&code) {
        let Some(g) = gpr(i.op_register(1)) else {
            return Err(Refusal::Unsupported);
        };
        let src = if SWAPPED_STORES.contains(&code) {
            Source::GprSwapped(g)
        } else {
            Source::Gpr(g)
        };
        return store(Some(src), g.width as usize);
    }
    if let Some(&(_, len)) = IMM_STORES.iter().find(|(c, _)| *c == code) {
        return store(Some(Source::Imm(i.immediate(1))), len);
    }
    if let Some(&(_, len, high)) = XMM_STORES.iter().find(|(c, _, _)| *c == code) {
        let src = xmm(i.op_register(1)).map(|index| Source::Xmm { index, high });
        return store(src, len);
    }
    if let Some(&(_, len, sign)) = LOADS.iter().find(|(c, _, _)| *c == code) {
        return match gpr(i.op_register(0)) {
            Some(dst) if is_memory(i, 1) => Ok(Access::Load {
                dst,
                len: if len == 0 { dst.width as usize } else { len },
                sign,
                mem: 1,
            }),
            _ => Err(Refusal::Unsupported),
        };
    }
    if let Some(&(_, elem, stos)) = STRINGS.iter().find(|(c, _, _)| *c == code) {
        let source_ok =
            stos || (i.op_kind(1) == OpKind::MemorySegRSI && i.memory_segment() == Register::DS);
        return if i.op_kind(0) == OpKind::MemoryESRDI && source_ok {
            Ok(Access::String {
                elem,
                stos,
                rep: i.has_rep_prefix() || i.has_repne_prefix(),
            })
        } else {
            Err(Refusal::Unsupported)
        };
    }
    let avx = i.op_mask() != Register::None
        || (0..i.op_count())
            .any(|op| i.op_kind(op) == OpKind::Register && is_avx_only(i.op_register(op)));
    Err(if avx {
        Refusal::Avx
    } else {
        Refusal::Unsupported
    })
}

/// An instruction the handlers may run themselves while a line is open, instead of letting
/// the CPU run it under TF (one trap each): it changes no flags, does not branch, stores
/// nothing and reads at most 16 bytes of ordinary memory. (Loads with `mov`, `movzx`,
/// `movsx` are [`Access::Load`]s.)
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Simple {
    /// `mov r, r` (one width).
    Copy { dst: Gpr, src: Gpr },
    /// `mov r, imm` (the immediate as the CPU extends it).
    Set { dst: Gpr, value: u64 },
    /// `lea r, m`: operand 1's address.
    Lea { dst: Gpr },
    /// `movups/movupd/movdqu/movaps/movapd/movdqa xmm, m128`; `aligned`: faults unless the
    /// address is 16-byte aligned.
    XmmLoad { dst: usize, aligned: bool },
    /// A `nop` of any length, or `pause`.
    Nop,
}

/// 16-byte SSE loads: code, alignment required.
const XMM_LOADS: [(Code, bool); 6] = [
    (Code::Movups_xmm_xmmm128, false),
    (Code::Movupd_xmm_xmmm128, false),
    (Code::Movdqu_xmm_xmmm128, false),
    (Code::Movaps_xmm_xmmm128, true),
    (Code::Movapd_xmm_xmmm128, true),
    (Code::Movdqa_xmm_xmmm128, true),
];

/// Register-to-register and immediate-to-register forms of `mov`.
const MOVS: [Code; 16] = {
    use Code::*;
    [
        Mov_rm8_r8,
        Mov_rm16_r16,
        Mov_rm32_r32,
        Mov_rm64_r64,
        Mov_r8_rm8,
        Mov_r16_rm16,
        Mov_r32_rm32,
        Mov_r64_rm64,
        Mov_r8_imm8,
        Mov_r16_imm16,
        Mov_r32_imm32,
        Mov_r64_imm64,
        Mov_rm8_imm8,
        Mov_rm16_imm16,
        Mov_rm32_imm32,
        Mov_rm64_imm32,
    ]
};

/// `i` as a [`Simple`] instruction, if it is one.
pub(crate) fn simple(i: &Instruction) -> Option<Simple> {
    use Code::*;
    let code = i.code();
    let reg = |op| (i.op_kind(op) == OpKind::Register).then(|| gpr(i.op_register(op)))?;
    if MOVS.contains(&code) {
        let dst = reg(0)?;
        return match i.op_kind(1) {
            OpKind::Register => Some(Simple::Copy { dst, src: reg(1)? }),
            OpKind::Memory => None,
            _ => Some(Simple::Set {
                dst,
                value: i.immediate(1),
            }),
        };
    }
    if matches!(code, Lea_r16_m | Lea_r32_m | Lea_r64_m) {
        return Some(Simple::Lea { dst: reg(0)? });
    }
    if let Some(&(_, aligned)) = XMM_LOADS.iter().find(|(c, _)| *c == code) {
        let dst = xmm(i.op_register(0))?;
        return is_memory(i, 1).then_some(Simple::XmmLoad { dst, aligned });
    }
    matches!(
        code,
        Nopw | Nopd | Nopq | Nop_rm16 | Nop_rm32 | Nop_rm64 | Pause
    )
    .then_some(Simple::Nop)
}

/// Whether the CPU drains its write-combining buffers before `i` runs: `sfence`, `mfence`,
/// any `lock`-prefixed instruction and `xchg` with memory (locked by itself), the
/// serialising `cpuid`, `serialize` and `iret`, and every way into the kernel (`syscall`,
/// `sysenter`, `int n`, `int3`, `int1`, `into`). (Intel SDM vol. 3A §11.3.1: a partly
/// written WC buffer is emptied by a serialising event, a fence or a locked instruction.)
pub(crate) fn is_flush_point(i: &Instruction) -> bool {
    let xchg_memory = i.mnemonic() == Mnemonic::Xchg && (is_memory(i, 0) || is_memory(i, 1));
    i.has_lock_prefix()
        || xchg_memory
        || matches!(
            i.mnemonic(),
            Mnemonic::Sfence
                | Mnemonic::Mfence
                | Mnemonic::Cpuid
                | Mnemonic::Serialize
                | Mnemonic::Iret
                | Mnemonic::Iretq
                | Mnemonic::Syscall
                | Mnemonic::Sysenter
                | Mnemonic::Int
                | Mnemonic::Int1
                | Mnemonic::Int3
                | Mnemonic::Into
        )
}

#[cfg(test)]
mod tests {
    use super::*;
    use iced_x86::{Decoder, DecoderOptions};

    fn decode(bytes: &[u8]) -> Instruction {
        let i = Decoder::new(64, bytes, DecoderOptions::NONE).decode();
        assert_eq!(i.len(), bytes.len(), "{bytes:02x?} decodes to {i:?}");
        i
    }

    fn classified(bytes: &[u8]) -> Result<Access, Refusal> {
        classify(&decode(bytes))
    }

    #[test]
    fn every_gpr_name_has_one_slot_shift_and_width() {
        use Register::*;
        let slot = |r| gpr(r).map(|g| (g.greg as libc::c_int, g.shift, g.width));
        // The 64-bit names against glibc's <sys/ucontext.h> REG_* (numbers, not our table).
        let expected_slots = [
            (RAX, 13),
            (RCX, 14),
            (RDX, 12),
            (RBX, 11),
            (RSP, 15),
            (RBP, 10),
            (RSI, 9),
            (RDI, 8),
            (R8, 0),
            (R9, 1),
            (R10, 2),
            (R11, 3),
            (R12, 4),
            (R13, 5),
            (R14, 6),
            (R15, 7),
        ];
        for (r, n) in expected_slots {
            assert_eq!(slot(r), Some((n, 0, 8)), "{r:?}");
        }
        assert_eq!(slot(R13D), Some((5, 0, 4)));
        assert_eq!(slot(SI), Some((9, 0, 2)));
        assert_eq!(slot(DIL), Some((8, 0, 1)));
        assert_eq!(slot(R15L), Some((7, 0, 1)));
        assert_eq!(slot(AH), Some((13, 8, 1)));
        assert_eq!(slot(BH), Some((11, 8, 1)));
        assert!(slot(RIP).is_none());
        assert!(slot(ES).is_none());
        assert!(slot(XMM0).is_none());
        // Every register from AL to R15 in iced's numbering (the 8/16/32/64-bit GPRs) is in
        // the tables exactly once, and nothing else is.
        let mut seen = std::collections::HashSet::new();
        for (names, _) in GPRS {
            for r in names {
                assert!(seen.insert(r as usize));
            }
        }
        for (r, _) in HIGH_BYTES {
            assert!(seen.insert(r as usize));
        }
        let all: std::collections::HashSet<usize> =
            (Register::AL as usize..=Register::R15 as usize).collect();
        assert_eq!(seen, all);
    }

    #[test]
    fn xmm_numbers() {
        assert_eq!(xmm(Register::XMM0), Some(0));
        assert_eq!(xmm(Register::XMM15), Some(15));
        assert_eq!(xmm(Register::XMM16), None);
        assert_eq!(xmm(Register::YMM0), None);
        assert_eq!(xmm(Register::RAX), None);
    }

    fn g(r: Register) -> Gpr {
        gpr(r).unwrap()
    }

    #[test]
    fn stores() {
        use Register::*;
        let st = |src, len| Ok(Access::Store { src, len, mem: 0 });
        // mov [rdx+rax],rcx (libmlx5's doorbell); mov [rax-0x40],rdx (its BlueFlame loop)
        assert_eq!(
            classified(&[0x48, 0x89, 0x0c, 0x02]),
            st(Source::Gpr(g(RCX)), 8)
        );
        assert_eq!(
            classified(&[0x48, 0x89, 0x50, 0xc0]),
            st(Source::Gpr(g(RDX)), 8)
        );
        // mov [rdi],eax; mov [rdi],ax; mov [rdi],ah; mov [rdi],r9b
        assert_eq!(classified(&[0x89, 0x07]), st(Source::Gpr(g(EAX)), 4));
        assert_eq!(classified(&[0x66, 0x89, 0x07]), st(Source::Gpr(g(AX)), 2));
        assert_eq!(classified(&[0x88, 0x27]), st(Source::Gpr(g(AH)), 1));
        assert_eq!(classified(&[0x44, 0x88, 0x0f]), st(Source::Gpr(g(R9L)), 1));
        // mov qword [rdi],-2 (imm32 sign-extended); mov byte [rdi],0xab
        assert_eq!(
            classified(&[0x48, 0xc7, 0x07, 0xfe, 0xff, 0xff, 0xff]),
            st(Source::Imm(u64::MAX - 1), 8)
        );
        assert_eq!(classified(&[0xc6, 0x07, 0xab]), st(Source::Imm(0xab), 1));
        // movnti [rdi],rax; movbe [rdi],rax
        assert_eq!(
            classified(&[0x48, 0x0f, 0xc3, 0x07]),
            st(Source::Gpr(g(RAX)), 8)
        );
        assert_eq!(
            classified(&[0x48, 0x0f, 0x38, 0xf1, 0x07]),
            st(Source::GprSwapped(g(RAX)), 8)
        );
        let x = |index, high| Source::Xmm { index, high };
        // movaps [rdi],xmm0; movdqu [rdi],xmm9; movntdq [rdi],xmm1; movq [rdi],xmm2 (66 0f d6)
        assert_eq!(classified(&[0x0f, 0x29, 0x07]), st(x(0, false), 16));
        assert_eq!(
            classified(&[0xf3, 0x44, 0x0f, 0x7f, 0x0f]),
            st(x(9, false), 16)
        );
        assert_eq!(classified(&[0x66, 0x0f, 0xe7, 0x0f]), st(x(1, false), 16));
        assert_eq!(classified(&[0x66, 0x0f, 0xd6, 0x17]), st(x(2, false), 8));
        // movhps [rdi],xmm3; vmovdqu [rdi],xmm4
        assert_eq!(classified(&[0x0f, 0x17, 0x1f]), st(x(3, true), 8));
        assert_eq!(classified(&[0xc5, 0xfa, 0x7f, 0x27]), st(x(4, false), 16));
    }

    #[test]
    fn loads_and_strings() {
        use Register::*;
        let ld = |dst, len, sign| {
            Ok(Access::Load {
                dst,
                len,
                sign,
                mem: 1,
            })
        };
        // mov rax,[rdi]; mov eax,[rdi]; mov ah,[rdi]; movzx ecx,word [rdi]; movsxd rdx,[rdi]
        assert_eq!(classified(&[0x48, 0x8b, 0x07]), ld(g(RAX), 8, false));
        assert_eq!(classified(&[0x8b, 0x07]), ld(g(EAX), 4, false));
        assert_eq!(classified(&[0x8a, 0x27]), ld(g(AH), 1, false));
        assert_eq!(classified(&[0x0f, 0xb7, 0x0f]), ld(g(ECX), 2, false));
        assert_eq!(classified(&[0x48, 0x63, 0x17]), ld(g(RDX), 4, true));
        let s = |elem, stos, rep| Ok(Access::String { elem, stos, rep });
        // rep movsb; rep movsq; movsd (string); rep stosq
        assert_eq!(classified(&[0xf3, 0xa4]), s(1, false, true));
        assert_eq!(classified(&[0xf3, 0x48, 0xa5]), s(8, false, true));
        assert_eq!(classified(&[0xa5]), s(4, false, false));
        assert_eq!(classified(&[0xf3, 0x48, 0xab]), s(8, true, true));
    }

    #[test]
    fn refusals() {
        // add [rdi],eax; lock xadd [rdi],eax; xchg [rdi],rax; mov [rdi],es; rep movsb with
        // a 32-bit address (67 prefix); fs: rep movsb; movdqa xmm0,[rdi] (an SSE load)
        for bytes in [
            &[0x01, 0x07][..],
            &[0xf0, 0x0f, 0xc1, 0x07],
            &[0x48, 0x87, 0x07],
            &[0x8c, 0x07],
            &[0x67, 0xf3, 0xa4],
            &[0x64, 0xf3, 0xa4],
            &[0x66, 0x0f, 0x6f, 0x07],
        ] {
            assert_eq!(classified(bytes), Err(Refusal::Unsupported), "{bytes:02x?}");
        }
        // vmovdqu [rdi],ymm0; vmovdqu64 [rdi],zmm0; vmovdqu64 [rdi]{k1},xmm0;
        // vmovdqu64 [rdi],xmm17
        for bytes in [
            &[0xc5, 0xfe, 0x7f, 0x07][..],
            &[0x62, 0xf1, 0xfe, 0x48, 0x7f, 0x07],
            &[0x62, 0xf1, 0xfe, 0x09, 0x7f, 0x07],
            &[0x62, 0xe1, 0xfe, 0x08, 0x7f, 0x0f],
        ] {
            assert_eq!(classified(bytes), Err(Refusal::Avx), "{bytes:02x?}");
        }
    }

    #[test]
    fn simple_instructions() {
        use Register::*;
        let simple_of = |bytes: &[u8]| simple(&decode(bytes));
        // mov rcx,rax (89 and 8b forms); mov ah,bl; mov r9d,r8d
        let copy = |dst, src| {
            Some(Simple::Copy {
                dst: g(dst),
                src: g(src),
            })
        };
        assert_eq!(simple_of(&[0x48, 0x89, 0xc1]), copy(RCX, RAX));
        assert_eq!(simple_of(&[0x48, 0x8b, 0xc8]), copy(RCX, RAX));
        assert_eq!(simple_of(&[0x88, 0xdc]), copy(AH, BL));
        assert_eq!(simple_of(&[0x45, 0x89, 0xc1]), copy(R9D, R8D));
        // mov eax,1; mov rax,imm64; mov rax,-1 (c7 /0, sign-extended); mov cl,5
        let set = |dst, value| Some(Simple::Set { dst: g(dst), value });
        assert_eq!(simple_of(&[0xb8, 1, 0, 0, 0]), set(EAX, 1));
        assert_eq!(
            simple_of(&[0x48, 0xb8, 8, 7, 6, 5, 4, 3, 2, 1]),
            set(RAX, 0x0102_0304_0506_0708)
        );
        assert_eq!(
            simple_of(&[0x48, 0xc7, 0xc0, 0xff, 0xff, 0xff, 0xff]),
            set(RAX, u64::MAX)
        );
        assert_eq!(simple_of(&[0xb1, 5]), set(CL, 5));
        // lea rdx,[r11+0x40]; lea eax,[rdi+rsi*4]
        assert_eq!(
            simple_of(&[0x49, 0x8d, 0x53, 0x40]),
            Some(Simple::Lea { dst: g(RDX) })
        );
        assert_eq!(
            simple_of(&[0x8d, 0x04, 0xb7]),
            Some(Simple::Lea { dst: g(EAX) })
        );
        // movups xmm0,[rax]; movdqa xmm9,[rdi]
        assert_eq!(
            simple_of(&[0x0f, 0x10, 0x00]),
            Some(Simple::XmmLoad {
                dst: 0,
                aligned: false
            })
        );
        assert_eq!(
            simple_of(&[0x66, 0x44, 0x0f, 0x6f, 0x0f]),
            Some(Simple::XmmLoad {
                dst: 9,
                aligned: true
            })
        );
        // nop; nop dword [rax+rax]; pause
        for bytes in [&[0x90][..], &[0x0f, 0x1f, 0x44, 0x00, 0x00], &[0xf3, 0x90]] {
            assert_eq!(simple_of(bytes), Some(Simple::Nop), "{bytes:02x?}");
        }
        // Not simple: mov rax,[rdi] (a load: an Access); mov [rdi],rax; add rax,1 (flags);
        // movaps xmm0,xmm1; mov es,ax; jmp; call
        for bytes in [
            &[0x48, 0x8b, 0x07][..],
            &[0x48, 0x89, 0x07],
            &[0x48, 0x83, 0xc0, 0x01],
            &[0x0f, 0x28, 0xc1],
            &[0x8e, 0xc0],
            &[0xeb, 0x00],
            &[0xe8, 0, 0, 0, 0],
        ] {
            assert!(simple_of(bytes).is_none(), "{bytes:02x?}");
        }
    }

    #[test]
    fn flush_points() {
        for bytes in [
            &[0x0f, 0xae, 0xf8][..],               // sfence
            &[0x0f, 0xae, 0xf0],                   // mfence
            &[0xf0, 0x48, 0x83, 0x04, 0x24, 0x00], // lock add qword [rsp],0
            &[0x48, 0x87, 0x07],                   // xchg [rdi],rax
            &[0x0f, 0xa2],                         // cpuid
            &[0x0f, 0x01, 0xe8],                   // serialize
            &[0x0f, 0x05],                         // syscall
            &[0xcd, 0x80],                         // int 0x80
            &[0xcc],                               // int3
            &[0x48, 0xcf],                         // iretq
        ] {
            assert!(is_flush_point(&decode(bytes)), "{bytes:02x?}");
        }
        for bytes in [
            &[0x0f, 0xae, 0xe8][..], // lfence
            &[0x48, 0x87, 0xc3],     // xchg rbx,rax (registers only)
            &[0x48, 0x89, 0x07],     // mov [rdi],rax
            &[0xf3, 0x90],           // pause
            &[0x0f, 0xc1, 0x07],     // xadd [rdi],eax without lock
        ] {
            assert!(!is_flush_point(&decode(bytes)), "{bytes:02x?}");
        }
    }
}
