//! `mlx5_emu::trap` against real instructions: the exact MMIO writes that stores to a trapped
//! page make, with the instruction forms libmlx5 v44 (Debian's `libmlx5.so.1.24.44.0`,
//! disassembled) and the crate (`src/mmio.rs`) use. Each test maps its own page with its own
//! recording sink; tests run in parallel threads, as the trap allows.

mod trap_common;

use std::arch::asm;
use std::arch::x86_64::_mm_sfence;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use mlx5_direct::mmio::{mmio_flush_writes, MappedUar, Uar};
use mlx5_emu::trap::{self, Sink};
use trap_common::*;

/// Eight distinct words for a 64-byte line, from a seed.
fn line(seed: u64) -> [u64; 8] {
    core::array::from_fn(|k| seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ (k as u64 + 1) << 56)
}

#[test]
fn doorbell_u64_then_sfence_is_one_8_byte_write() {
    let page = Page::new(1);
    // SAFETY: inside the trapped page, aligned.
    unsafe { page.at::<u64>(0x800).write_volatile(0x0102_0304_0506_0708) };
    assert_eq!(page.rec.count(), 0, "the line stays open until the fence");
    sfence();
    assert_eq!(page.rec.count(), 1, "the fence sends it");
    assert_eq!(
        page.rec.writes(),
        vec![(0x800, 0x0102_0304_0506_0708u64.to_le_bytes().to_vec())]
    );
}

#[test]
fn eight_u64_stores_fill_a_line_and_four_lines_make_a_256_byte_blueflame_copy() {
    let page = Page::new(2);
    let one = line(1);
    for (k, w) in one.iter().enumerate() {
        // SAFETY: inside the trapped page, aligned.
        unsafe { page.at::<u64>(0x840 + 8 * k).write_volatile(*w) };
    }
    assert_eq!(page.rec.count(), 1, "a full line leaves without a fence");
    assert_eq!(page.rec.writes(), vec![(0x840, bytes_of(&one))]);
    page.rec.clear();

    let lines: Vec<[u64; 8]> = (10..14).map(line).collect();
    for (n, l) in lines.iter().enumerate() {
        for (k, w) in l.iter().enumerate() {
            // SAFETY: inside the trapped page, aligned.
            unsafe { page.at::<u64>(0x900 + 64 * n + 8 * k).write_volatile(*w) };
        }
    }
    sfence();
    let expected: Vec<_> = (0..4)
        .map(|n| (0x900 + 64 * n as u64, bytes_of(&lines[n])))
        .collect();
    assert_eq!(page.rec.writes(), expected);
}

#[test]
fn sse_stores_immediates_bytes_partial_lines_and_line_changes() {
    let page = Page::new(3);
    let l = line(3);
    let p = page.at::<u8>(0x100);
    // Four 16-byte stores, aligned and not: one 64-byte write.
    // SAFETY: 16-byte loads from `l`, stores inside the trapped page (16-byte aligned for
    // movaps and movdqa).
    unsafe {
        asm!(
            "movups xmm0, [{s}]", "movups xmm1, [{s}+16]", "movups xmm2, [{s}+32]",
            "movups xmm3, [{s}+48]",
            "movaps [{p}], xmm0", "movdqa [{p}+16], xmm1", "movups [{p}+32], xmm2",
            "movdqu [{p}+48], xmm3",
            s = in(reg) l.as_ptr(), p = in(reg) p,
            out("xmm0") _, out("xmm1") _, out("xmm2") _, out("xmm3") _, options(nostack),
        );
    }
    assert_eq!(page.rec.writes(), vec![(0x100, bytes_of(&l))]);
    page.rec.clear();

    // mov dword [p], imm32; mov byte [p+0x40], imm8; then a fence.
    // SAFETY: stores inside the trapped page.
    unsafe {
        asm!(
            "mov dword ptr [{p}], 0x89abcdef", "sfence",
            "mov byte ptr [{p}+0x40], 0x5a", "sfence",
            p = in(reg) page.at::<u8>(0x200), options(nostack),
        );
    }
    // Two 8-byte stores at 0 and 16 of one line, then the fence: two 8-byte writes.
    // SAFETY: inside the trapped page, aligned.
    unsafe {
        page.at::<u64>(0x300).write_volatile(0x1111);
        page.at::<u64>(0x310).write_volatile(0x2222);
    }
    assert_eq!(page.rec.count(), 2);
    sfence();
    assert_eq!(page.rec.count(), 4);
    assert_eq!(
        page.rec.writes(),
        vec![
            (0x200, vec![0xef, 0xcd, 0xab, 0x89]),
            (0x240, vec![0x5a]),
            (0x300, 0x1111u64.to_le_bytes().to_vec()),
            (0x310, 0x2222u64.to_le_bytes().to_vec()),
        ]
    );
    page.rec.clear();

    // A store to another line flushes the open one first, before any fence.
    // SAFETY: inside the trapped page, aligned.
    unsafe {
        page.at::<u64>(0x400).write_volatile(1);
        page.at::<u32>(0x444).write_volatile(2);
    }
    assert_eq!(page.rec.count(), 1);
    sfence();
    // A store across two lines is split at the boundary.
    // SAFETY: 8 bytes inside the trapped page, across a line boundary.
    unsafe { page.at::<u64>(0x4fc).write_unaligned(0x0807_0605_0403_0201) };
    sfence();
    assert_eq!(
        page.rec.writes(),
        vec![
            (0x400, 1u64.to_le_bytes().to_vec()),
            (0x444, 2u32.to_le_bytes().to_vec()),
            (0x4fc, vec![1, 2, 3, 4]),
            (0x500, vec![5, 6, 7, 8]),
        ]
    );
}

#[test]
fn other_sse_and_gpr_store_forms() {
    let page = Page::new(4);
    let x: [u64; 2] = [0x0706_0504_0302_0100, 0x0f0e_0d0c_0b0a_0908];
    // SAFETY: loads from `x`, stores inside the trapped page.
    unsafe {
        asm!(
            "movups xmm4, [{s}]",
            "movq [rdi], xmm4",        // 66 0f d6: the low 8 bytes
            "movhps [rdi+0x40], xmm4", // the high 8 bytes
            "movntdq [rdi+0x80], xmm4",
            "movnti [rdi+0xc0], {w}",
            "movbe [rdi+0x100], {w}",
            "mov [rdi+0x140], ah",
            "mov word ptr [rdi+0x180], 0x1234",
            "mov qword ptr [rdi+0x1c0], -2",
            "sfence",
            s = in(reg) x.as_ptr(), in("rdi") page.at::<u8>(0),
            w = in(reg) 0x1122_3344_5566_7788u64, in("rax") 0xabcdu64, out("xmm4") _,
            options(nostack),
        );
    }
    let lo = x[0].to_le_bytes().to_vec();
    let hi = x[1].to_le_bytes().to_vec();
    assert_eq!(
        page.rec.writes(),
        vec![
            (0x00, lo.clone()),
            (0x40, hi.clone()),
            (0x80, [lo, hi].concat()),
            (0xc0, 0x1122_3344_5566_7788u64.to_le_bytes().to_vec()),
            (0x100, 0x1122_3344_5566_7788u64.to_be_bytes().to_vec()),
            (0x140, vec![0xab]),
            (0x180, vec![0x34, 0x12]),
            (0x1c0, (-2i64).to_le_bytes().to_vec()),
        ]
    );
    if std::arch::is_x86_feature_detected!("avx") {
        page.rec.clear();
        // SAFETY: AVX is present; a VEX-encoded store of an XMM register.
        unsafe {
            asm!("vmovdqu xmm5, [{s}]", "vmovdqu [{p}], xmm5", "sfence",
                s = in(reg) x.as_ptr(), p = in(reg) page.at::<u8>(0x200), out("xmm5") _,
                options(nostack));
        }
        assert_eq!(page.rec.writes(), vec![(0x200, bytes_of(&x))]);
    }
}

/// Stores each general register (64-bit, 32-bit, 16-bit, 8-bit names) and checks the bytes:
/// the register table against the CPU.
#[test]
fn every_general_register_as_store_source_and_load_destination() {
    let page = Page::new(5);
    let p = page.at::<u8>(0);
    let v = |k: u64| 0x8070_6050_4030_2010u64 ^ (k * 0x0101_0101_0101_0101);
    macro_rules! store {
        ($slot:expr, $q:tt, $d:tt, $w:tt, $b:tt) => {{
            let value = v($slot);
            // SAFETY: stores inside the trapped page from the named register.
            unsafe {
                asm!(
                    concat!("mov [{p}], ", $q), concat!("mov [{p}+0x200], ", $d),
                    concat!("mov [{p}+0x400], ", $w), concat!("mov [{p}+0x600], ", $b),
                    "sfence", p = in(reg) p.wrapping_add(8 * $slot), in($q) value,
                    options(nostack),
                );
            }
        }};
    }
    store!(0, "rax", "eax", "ax", "al");
    store!(1, "rcx", "ecx", "cx", "cl");
    store!(2, "rdx", "edx", "dx", "dl");
    store!(3, "rsi", "esi", "si", "sil");
    store!(4, "rdi", "edi", "di", "dil");
    store!(5, "r8", "r8d", "r8w", "r8b");
    store!(6, "r9", "r9d", "r9w", "r9b");
    store!(7, "r10", "r10d", "r10w", "r10b");
    store!(8, "r11", "r11d", "r11w", "r11b");
    store!(9, "r12", "r12d", "r12w", "r12b");
    store!(10, "r13", "r13d", "r13w", "r13b");
    store!(11, "r14", "r14d", "r14w", "r14b");
    store!(12, "r15", "r15d", "r15w", "r15b");
    // rbx and rbp cannot be asm operands: swap the value in and out around the stores.
    macro_rules! store_swapped {
        ($slot:expr, $q:tt, $d:tt, $w:tt, $b:tt) => {{
            // SAFETY: the register is swapped back before the block ends; stores inside the
            // trapped page.
            unsafe {
                asm!(
                    concat!("xchg ", $q, ", {v}"),
                    concat!("mov [{p}], ", $q), concat!("mov [{p}+0x200], ", $d),
                    concat!("mov [{p}+0x400], ", $w), concat!("mov [{p}+0x600], ", $b),
                    concat!("xchg ", $q, ", {v}"), "sfence",
                    p = in(reg) p.wrapping_add(8 * $slot), v = inout(reg) v($slot) => _,
                    options(nostack),
                );
            }
        }};
    }
    store_swapped!(13, "rbx", "ebx", "bx", "bl");
    store_swapped!(14, "rbp", "ebp", "bp", "bpl");
    let mut rsp = 0u64;
    // SAFETY: reads RSP, stores it inside the trapped page.
    unsafe {
        asm!("mov {s}, rsp", "mov [{p}], rsp", "sfence", s = out(reg) rsp,
            p = in(reg) p.wrapping_add(8 * 15), options(nostack));
    }
    // ah, ch, dh, bh: bits 8..15.
    // SAFETY: stores inside the trapped page; RBX is swapped back.
    unsafe {
        asm!("mov [{p}], ah", "mov [{p}+1], ch", "mov [{p}+2], dh", "sfence",
            p = in(reg) p.wrapping_add(0x800), in("rax") 0x1100u64, in("rcx") 0x2200u64,
            in("rdx") 0x3300u64, options(nostack));
        asm!("xchg rbx, {v}", "mov [{p}], bh", "xchg rbx, {v}", "sfence",
            p = in(reg) p.wrapping_add(0x803), v = inout(reg) 0x4400u64 => _, options(nostack));
    }
    // Each store goes to another line than the one before: each leaves alone, in order.
    let mut expected = Vec::new();
    for slot in 0..15u64 {
        for (base, width) in [(0u64, 8usize), (0x200, 4), (0x400, 2), (0x600, 1)] {
            expected.push((base + 8 * slot, v(slot).to_le_bytes()[..width].to_vec()));
        }
    }
    expected.push((8 * 15, rsp.to_le_bytes().to_vec()));
    expected.push((0x800, vec![0x11, 0x22, 0x33]));
    expected.push((0x803, vec![0x44]));
    assert_eq!(page.rec.writes(), expected);

    // Loads into each register, with the CPU's width rules.
    macro_rules! load64 {
        ($off:tt, $reg:tt) => {{
            let out: u64;
            // SAFETY: a load from the trapped page into the named register.
            unsafe {
                asm!(concat!("mov ", $reg, ", [{p}+", $off, "]"), p = in(reg) p,
                    out($reg) out, options(nostack));
            }
            assert_eq!(out, load_value($off), $reg);
        }};
    }
    load64!(0x10, "rax");
    load64!(0x18, "rcx");
    load64!(0x20, "rdx");
    load64!(0x28, "rsi");
    load64!(0x30, "rdi");
    load64!(0x38, "r8");
    load64!(0x40, "r9");
    load64!(0x48, "r10");
    load64!(0x50, "r11");
    load64!(0x58, "r12");
    load64!(0x60, "r13");
    load64!(0x68, "r14");
    load64!(0x70, "r15");
    let (a, b, c, d, e, f): (u64, u64, u64, u64, u64, u64);
    // SAFETY: loads from the trapped page; RBX is swapped back.
    unsafe {
        asm!(
            "mov eax, [rsi+0x100]",  // 32-bit: clears bits 32..63
            "mov cl, [rsi+0x108]",   // 8-bit: keeps the rest
            "mov ch, [rsi+0x110]",
            "movzx {c}, word ptr [rsi+0x118]",
            "movsx {d}, byte ptr [rsi+0x120]",
            "movsxd {e}, dword ptr [rsi+0x128]",
            "xchg rbx, {f}", "mov rbx, [rsi+0x130]", "xchg rbx, {f}",
            in("rsi") p, inout("rax") u64::MAX => a, inout("rcx") u64::MAX => b,
            c = out(reg) c, d = out(reg) d, e = out(reg) e, f = inout(reg) 0u64 => f,
            options(nostack),
        );
    }
    let lv = |o: u64, bytes: u32| load_value(o) & (u64::MAX >> (64 - 8 * bytes));
    assert_eq!(a, lv(0x100, 4));
    assert_eq!(b, 0xffff_ffff_ffff_0000 | lv(0x108, 1) | lv(0x110, 1) << 8);
    assert_eq!(c, lv(0x118, 2));
    assert_eq!(d, lv(0x120, 1) as u8 as i8 as i64 as u64);
    assert_eq!(e, lv(0x128, 4) as u32 as i32 as i64 as u64);
    assert_eq!(f, load_value(0x130));
}

#[test]
fn loads_return_the_sinks_value_and_drain_the_open_line_first() {
    let page = Page::new(6);
    // A read-only clock register, as `mlx5dv_get_clock_info` users read it.
    // SAFETY: a load inside the trapped page.
    let clock = unsafe { page.at::<u64>(0x10).read_volatile() };
    assert_eq!(clock, load_value(0x10));
    // SAFETY: a load inside the trapped page.
    let half = unsafe { page.at::<u32>(0x24).read_volatile() };
    assert_eq!(half, load_value(0x24) as u32);
    // SAFETY: a store and a load inside the trapped page.
    unsafe {
        page.at::<u64>(0x40).write_volatile(7);
        assert_eq!(page.at::<u8>(0x81).read_volatile(), load_value(0x81) as u8);
    }
    assert_eq!(
        page.rec.events(),
        vec![
            Event::Load(0x10, 8),
            Event::Load(0x24, 4),
            Event::Store(0x40, 7u64.to_le_bytes().to_vec()),
            Event::Load(0x81, 1),
        ]
    );
}

/// Each flush point drains the line before it runs: the write has left when the next
/// instruction after it runs. Stepping over anything else leaves the line open.
#[test]
fn each_flush_point_drains_the_line_before_the_next_instruction() {
    let page = Page::new(7);
    let p = page.at::<u64>(0x800);
    let mut scratch = 0u64;
    let s: *mut u64 = &mut scratch;
    // Stores 8 bytes, runs the instructions given, and returns the writes seen right after.
    macro_rules! after {
        ($($insn:literal),+ ; $($operands:tt)*) => {{
            page.rec.clear();
            // SAFETY: a store inside the trapped page, then the instructions under test on
            // registers and `scratch` only.
            unsafe {
                asm!("mov qword ptr [{p}], 0x77", $($insn),+, p = in(reg) p, $($operands)*
                    options(nostack));
            }
            page.rec.count()
        }};
    }
    assert_eq!(after!("sfence";), 1);
    assert_eq!(after!("mfence";), 1);
    assert_eq!(after!("lock add qword ptr [{s}], 0"; s = in(reg) s,), 1);
    assert_eq!(
        after!("xchg [{s}], {t}"; s = in(reg) s, t = inout(reg) 0u64 => _,),
        1
    );
    assert_eq!(
        after!("mov {t}, rbx", "cpuid", "mov rbx, {t}"; t = out(reg) _,
            inout("rax") 0u64 => _, out("rcx") _, out("rdx") _,),
        1
    );
    // getpid(2)
    assert_eq!(
        after!("syscall"; inout("rax") 39u64 => _, out("rcx") _, out("r11") _,),
        1
    );
    for open in [
        after!("nop";),
        after!("lfence";),
        after!("pause";),
        after!("xchg {t}, {u}"; t = out(reg) _, u = out(reg) _,),
        after!("mov qword ptr [{s}], 1"; s = in(reg) s,),
    ] {
        assert_eq!(open, 0);
        sfence();
        assert_eq!(page.rec.count(), 1);
    }
    assert_eq!(
        page.rec.writes(),
        vec![(0x800, 0x77u64.to_le_bytes().to_vec())]
    );
}

/// The instructions a handler runs itself while a line is open (register moves, loads of
/// ordinary memory, `lea`, SSE loads, `nop`s) leave the registers exactly as the CPU does:
/// one sequence, run once after a store that opens a line and once after an ordinary store.
#[test]
fn instructions_run_by_the_handler_leave_what_the_cpu_leaves() {
    #[repr(C, align(16))]
    struct Data([u64; 4]);
    let data = Data([
        0x8877_6655_4433_2211,
        0xffee_ddcc_bbaa_9988,
        0x0123_4567_89ab_cdef,
        0xfedc_ba98_f654_3210,
    ]);
    let run = |first: *mut u64| {
        let mut out = [0u64; 16];
        // SAFETY: `first` is 8 writable bytes; loads from `data`, stores into `out`.
        unsafe {
            asm!(
                // All XMM registers zero: the SSE state may be in its init state at the fault.
                ".irp n, 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15",
                "pxor xmm\\n, xmm\\n",
                ".endr",
                "mov qword ptr [r13], 1",
                "mov rax, [r14]",
                "mov ecx, [r14+8]",
                "mov dl, [r14+16]",
                "mov dh, [rdi+17]",
                "movzx esi, word ptr [r14+18]",
                "movsx rdi, byte ptr [r14+31]",
                "movsxd r8, dword ptr [r14+28]",
                "mov r9, rax",
                "mov r10d, ecx",
                "mov r11w, si",
                "mov ah, dl",
                "mov r12, 0x123456789abcdef0",
                "mov r12b, 7",
                "lea r9, [rax + rcx*4 + 0x10]",
                "lea r10d, [r9 + 8]",
                "nop",
                "pause",
                "nop dword ptr [rax + rax]",
                "movups xmm0, [r14 + 8]",
                "movdqa xmm1, [r14 + 16]",
                "mov r11, [r14 + 3]", // unaligned: left to the CPU, under TF
                "lea r12, [r11 + 1]",
                "sfence",
                "mov [r15], rax", "mov [r15+8], rcx", "mov [r15+16], rdx", "mov [r15+24], rsi",
                "mov [r15+32], rdi", "mov [r15+40], r8", "mov [r15+48], r9", "mov [r15+56], r10",
                "mov [r15+64], r11", "mov [r15+72], r12",
                "movups [r15+80], xmm0", "movups [r15+96], xmm1",
                in("r13") first, in("r14") data.0.as_ptr(), in("r15") out.as_mut_ptr(),
                inout("rax") u64::MAX => _, inout("rcx") u64::MAX => _,
                inout("rdx") u64::MAX => _, inout("rsi") u64::MAX => _,
                inout("rdi") data.0.as_ptr() => _, inout("r8") u64::MAX => _,
                inout("r9") u64::MAX => _,
                inout("r10") u64::MAX => _, inout("r11") u64::MAX => _,
                inout("r12") u64::MAX => _, out("xmm0") _, out("xmm1") _, out("xmm2") _,
                out("xmm3") _, out("xmm4") _, out("xmm5") _, out("xmm6") _, out("xmm7") _,
                out("xmm8") _, out("xmm9") _, out("xmm10") _, out("xmm11") _, out("xmm12") _,
                out("xmm13") _, out("xmm14") _, out("xmm15") _, options(nostack),
            );
        }
        out
    };
    let page = Page::new(14);
    let mut ordinary = 0u64;
    let native = run(&mut ordinary);
    let trapped = run(page.at::<u64>(0x40));
    assert_eq!(trapped, native);
    assert_eq!(
        native[6],
        native[0].wrapping_add(native[1].wrapping_mul(4)) + 0x10
    );
    assert_eq!(page.rec.writes(), vec![(0x40, 1u64.to_le_bytes().to_vec())]);
}

#[test]
fn rep_movs_and_stos() {
    let page = Page::new(8);
    let src: Vec<u64> = (0..32).map(|k| line(80)[k % 8] ^ k as u64).collect();
    // SAFETY: string copies into the trapped page from `src` (long enough), counts in RCX.
    unsafe {
        asm!("rep movsb", inout("rdi") page.at::<u8>(0) => _, inout("rsi") src.as_ptr() => _,
            inout("rcx") 64usize => _, options(nostack));
        asm!("rep movsq", "sfence", inout("rdi") page.at::<u8>(0x100) => _,
            inout("rsi") src.as_ptr() => _, inout("rcx") 32usize => _, options(nostack));
        asm!("rep stosq", "sfence", inout("rdi") page.at::<u8>(0x400) => _,
            in("rax") 0x0101_0101_0101_0101u64 * 0xee, inout("rcx") 8usize => _,
            options(nostack));
        asm!("rep movsb", "sfence", inout("rdi") page.at::<u8>(0x608) => _,
            inout("rsi") src.as_ptr() => _, inout("rcx") 8usize => _, options(nostack));
    }
    let mut expected = vec![(0, bytes_of(&src[..8]))];
    expected.extend((0..4).map(|n| (0x100 + 64 * n as u64, bytes_of(&src[8 * n..8 * n + 8]))));
    expected.push((0x400, vec![0xee; 64]));
    expected.push((0x608, src[0].to_le_bytes().to_vec()));
    assert_eq!(page.rec.writes(), expected);
    // The registers end where the CPU would leave them.
    let (rdi, rsi, rcx): (usize, usize, usize);
    // SAFETY: 16 bytes from `src` into the trapped page.
    unsafe {
        asm!("rep movsb", inout("rdi") page.at::<u8>(0x700) => rdi,
            inout("rsi") src.as_ptr() => rsi, inout("rcx") 16usize => rcx, options(nostack));
    }
    sfence();
    assert_eq!(
        (rdi, rsi, rcx),
        (page.at::<u8>(0x710) as usize, src.as_ptr() as usize + 16, 0)
    );
}

/// The send doorbell of libmlx5's `post_send_db` (0x53f7f): `mov [rdx+rax],rcx; sfence`.
///
/// # Safety
/// `uar + offset` is 8 writable bytes.
unsafe fn libmlx5_doorbell(uar: *mut u8, offset: u64, value: u64) {
    // SAFETY: the caller's contract.
    unsafe {
        asm!("mov [rdx+rax], rcx", "sfence", in("rdx") uar, in("rax") offset, in("rcx") value,
            options(nostack));
    }
}

/// libmlx5's BlueFlame loop (0x5482b), `chunks` 64-byte chunks from `wqe` to `dst`: per
/// chunk, 8-byte loads from the WQE and stores at negative displacements from the advanced
/// pointer, no fence between chunks and none after (the caller's `sfence` follows).
///
/// # Safety
/// `dst` is `64 * chunks` writable bytes; `wqe` holds at least `8 * chunks` words.
unsafe fn libmlx5_bf_copy(dst: *mut u8, wqe: &[u64], chunks: usize) {
    assert!(chunks >= 1 && wqe.len() >= 8 * chunks);
    // SAFETY: the caller's contract; the loop ends when RAX reaches RDI.
    unsafe {
        asm!(
            "2:",
            "mov rdx, [r11]", "mov rcx, rax", "add rax, 0x40", "mov [rax-0x40], rdx",
            "mov rdx, [r11+0x8]", "mov [rax-0x38], rdx",
            "mov rdx, [r11+0x10]", "mov [rax-0x30], rdx",
            "mov rdx, [r11+0x18]", "mov [rax-0x28], rdx",
            "mov rdx, [r11+0x20]", "mov [rax-0x20], rdx",
            "mov rdx, [r11+0x28]", "mov [rax-0x18], rdx",
            "mov rdx, [r11+0x30]", "mov [rax-0x10], rdx",
            "lea rdx, [r11+0x40]", "mov rsi, [r11+0x38]", "mov [rcx+0x38], rsi",
            "mov r11, rdx", "cmp rax, rdi", "jne 2b",
            inout("r11") wqe.as_ptr() => _, inout("rax") dst => _,
            in("rdi") dst.wrapping_add(64 * chunks), out("rcx") _, out("rdx") _, out("rsi") _,
            options(nostack),
        );
    }
}

/// libmlx5 v44's own instruction sequences (objdump -d of Debian's libmlx5.so.1.24.44.0),
/// with the same registers and addressing forms.
#[test]
fn libmlx5_doorbell_blueflame_and_cq_arm_sequences() {
    let page = Page::new(9);
    let uar = page.at::<u8>(0);
    // SAFETY: 8 bytes inside the trapped page.
    unsafe { libmlx5_doorbell(uar, 0x800, 0x1122_3344_5566_7788) };
    let wqe: Vec<u64> = (0..32).map(|k| 0xa000 + k).collect();
    // SAFETY: 256 bytes inside the trapped page, 32 words of `wqe`.
    unsafe { libmlx5_bf_copy(uar.wrapping_add(0x900), &wqe, 4) };
    assert_eq!(
        page.rec.count(),
        5,
        "each full chunk leaves before the sfence"
    );
    sfence();
    // The single-chunk inline copy (0x568f7): mov [rax],r9 then base+index and base+disp.
    // SAFETY: stores inside the trapped page, loads from `wqe`.
    unsafe {
        asm!(
            "mov [rax], r9",
            "mov rdx, [r8+0x8]", "mov [rdi+rsi+0x8], rdx",
            "mov rdx, [r8+0x10]", "mov [rax+0x10], rdx",
            "mov rdx, [r8+0x18]", "mov [rax+0x18], rdx",
            "mov rdx, [r8+0x20]", "mov [rax+0x20], rdx",
            "mov rdx, [r8+0x28]", "mov [rax+0x28], rdx",
            "mov rdx, [r8+0x30]", "mov [rax+0x30], rdx",
            "mov rdx, [r8+0x38]", "mov [rax+0x38], rdx",
            "sfence",
            in("rax") uar.wrapping_add(0xa40), in("rdi") uar, in("rsi") 0xa40usize,
            in("r8") wqe.as_ptr(), in("r9") wqe[0], out("rdx") _, options(nostack),
        );
    }
    // The CQ arm of `mlx5_arm_cq` (0x1f9b4): the doorbell record (host memory), sfence,
    // bswap, one 8-byte store at UAR + 0x20, sfence.
    let mut dbrec = [0u32; 2];
    // SAFETY: a store to `dbrec` (ours) and one inside the trapped page.
    unsafe {
        asm!("mov [rsi+4], eax", "sfence", "mov rax, r8", "bswap rax", "mov [rdx+0x20], rax",
            "sfence", in("rsi") dbrec.as_mut_ptr(), inout("rax") 0x0100_0000u64 => _,
            in("r8") 0x1000_0000_0000_0042u64, in("rdx") uar, options(nostack));
    }
    assert_eq!(dbrec[1], 0x0100_0000);
    let mut expected = vec![(0x800, 0x1122_3344_5566_7788u64.to_le_bytes().to_vec())];
    expected.extend((0..4).map(|n| (0x900 + 64 * n as u64, bytes_of(&wqe[8 * n..8 * n + 8]))));
    expected.push((0xa40, bytes_of(&wqe[..8])));
    expected.push((0x20, 0x1000_0000_0000_0042u64.to_be_bytes().to_vec()));
    assert_eq!(page.rec.writes(), expected);
}

/// The crate's own UAR and device-memory stores (`mlx5_direct::mmio`), compiled as this test
/// is (debug or release): 8-byte volatile stores and the four-SSE-store BlueFlame block.
#[test]
fn the_crates_mapped_uar_and_dm_stores() {
    use mlx5_direct::mmio::{mmio_wc_start, DmWindow, MappedDm};
    let page = Page::new(10);
    // SAFETY: a 4 KiB trapped page standing for a UAR page / a DM window, mapped for the test.
    let (uar, dm) = unsafe { (MappedUar::new(page.ptr), MappedDm::new(page.ptr, 4096)) };
    mmio_wc_start();
    // SAFETY: an aligned register inside the test's page.
    unsafe { uar.write64(0x800, [1, 2, 3, 4, 5, 6, 7, 8]) };
    mmio_flush_writes();
    let blocks: Vec<[u64; 8]> = (20..24).map(line).collect();
    mmio_wc_start();
    for (n, b) in blocks.iter().enumerate() {
        // SAFETY: an aligned register inside the test's page.
        unsafe { uar.write_block(0x900 + 64 * n, b) };
    }
    mmio_flush_writes();
    // SAFETY: an aligned register inside the test's page.
    unsafe { uar.write64(0x20, [9; 8]) };
    mmio_flush_writes();
    dm.write_line(0xc0, &blocks[0]);
    dm.write64(0x100, [3; 8]);
    mmio_flush_writes();
    let mut expected = vec![(0x800, vec![1, 2, 3, 4, 5, 6, 7, 8])];
    expected.extend((0..4).map(|n| (0x900 + 64 * n as u64, bytes_of(&blocks[n]))));
    expected.push((0x20, vec![9; 8]));
    expected.push((0xc0, bytes_of(&blocks[0])));
    expected.push((0x100, vec![3; 8]));
    assert_eq!(page.rec.writes(), expected);
}

#[test]
fn two_threads_storing_at_once_each_see_exactly_their_own_writes() {
    const ROUNDS: usize = 200;
    let pages = [Page::new(11), Page::new(12)];
    std::thread::scope(|scope| {
        for (t, page) in pages.iter().enumerate() {
            scope.spawn(move || {
                for r in 0..ROUNDS {
                    let l = line((t * 1000 + r) as u64);
                    for (k, w) in l.iter().enumerate() {
                        // SAFETY: inside the trapped page, aligned.
                        unsafe { page.at::<u64>(0x800 + 8 * k).write_volatile(*w) };
                    }
                    // SAFETY: inside the trapped page, aligned.
                    unsafe { page.at::<u64>(0x800).write_volatile(l[0]) };
                    sfence();
                }
            });
        }
    });
    for (t, page) in pages.iter().enumerate() {
        let expected: Vec<_> = (0..ROUNDS)
            .flat_map(|r| {
                let l = line((t * 1000 + r) as u64);
                [(0x800, bytes_of(&l)), (0x800, l[0].to_le_bytes().to_vec())]
            })
            .collect();
        assert_eq!(page.rec.writes(), expected, "thread {t}");
    }
}

#[test]
fn map_refuses_partial_pages_and_unmap_unknown_regions() {
    let rec = Recorder::leak(13);
    assert_eq!(
        trap::map(0, 13, rec).unwrap_err().kind(),
        std::io::ErrorKind::InvalidInput
    );
    assert_eq!(
        trap::map(100, 13, rec).unwrap_err().kind(),
        std::io::ErrorKind::InvalidInput
    );
    let p = trap::map(8192, 13, rec).unwrap();
    // SAFETY: a region we mapped; the wrong length is refused before anything is unmapped.
    unsafe {
        assert!(trap::unmap(p, 4096).is_err());
        p.as_ptr().add(4096 + 8).cast::<u64>().write_volatile(5);
        _mm_sfence();
        trap::unmap(p, 8192).unwrap();
        assert!(trap::unmap(p, 8192).is_err());
    }
    assert_eq!(rec.writes(), vec![(4096 + 8, 5u64.to_le_bytes().to_vec())]);
}

/// A sink that only counts, for timing the trap itself.
struct Counter(AtomicU64);

impl Sink for Counter {
    fn store(&self, _: u64, _: u64, data: &[u8]) {
        self.0.fetch_add(data.len() as u64, Ordering::Relaxed);
    }
    fn load(&self, _: u64, _: u64, _: u8) -> u64 {
        0
    }
}

#[test]
#[ignore = "benchmark: prints the trap's cost per doorbell and per BlueFlame chunk"]
fn bench_trap_costs() {
    static COUNTER: Counter = Counter(AtomicU64::new(0));
    let region = trap::map(4096, 99, &COUNTER).unwrap();
    let p = region.as_ptr();
    let rounds = 2000u32;
    let time = |what: &str, f: &dyn Fn()| {
        f();
        let start = Instant::now();
        for _ in 0..rounds {
            f();
        }
        let us = start.elapsed().as_secs_f64() * 1e6 / f64::from(rounds);
        println!("{what}: {us:.2} µs");
    };
    let wqe: Vec<u64> = (0..32).map(|k| line(5)[k % 8]).collect();
    // SAFETY (every closure): stores inside the trapped page.
    time("8-byte doorbell, libmlx5 (mov m64 + sfence)", &|| unsafe {
        libmlx5_doorbell(p, 0x800, 1)
    });
    time(
        "64-byte BlueFlame chunk, libmlx5 (8 x mov m64 + sfence)",
        // SAFETY: stores inside the trapped page.
        &|| unsafe {
            libmlx5_bf_copy(p.add(0x900), &wqe, 1);
            _mm_sfence();
        },
    );
    time(
        "256-byte BlueFlame copy, libmlx5 (32 x mov m64 + sfence)",
        // SAFETY: stores inside the trapped page.
        &|| unsafe {
            libmlx5_bf_copy(p.add(0x900), &wqe, 4);
            _mm_sfence();
        },
    );
    // SAFETY: the trapped page stands for a UAR page.
    let uar = unsafe { MappedUar::new(region) };
    let blocks: Vec<[u64; 8]> = (0..4).map(line).collect();
    time(
        "8-byte doorbell, crate (MappedUar::write64 + sfence)",
        &|| {
            // SAFETY: an aligned register inside the test's page.
            unsafe { uar.write64(0x800, [1; 8]) };
            mmio_flush_writes();
        },
    );
    time(
        "64-byte BlueFlame chunk, crate (write_block + sfence)",
        &|| {
            // SAFETY: an aligned register inside the test's page.
            unsafe { uar.write_block(0x900, &blocks[0]) };
            mmio_flush_writes();
        },
    );
    time(
        "256-byte BlueFlame copy, crate (4 x write_block + sfence)",
        &|| {
            for (n, b) in blocks.iter().enumerate() {
                // SAFETY: an aligned register inside the test's page.
                unsafe { uar.write_block(0x900 + 64 * n, b) };
            }
            mmio_flush_writes();
        },
    );
    // SAFETY: mapped above; the timing loops are done.
    unsafe { trap::unmap(region, 4096).unwrap() };
}
