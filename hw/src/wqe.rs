//! Send WQE decoding (prm-facts §2–§4): control segment, remote-address, atomic and
//! data/inline segments of an RC WQE, validated like hardware.

use crate::cqe::synd;

/// Send opcodes (ctrl bits 7..0).
pub(crate) mod opcode {
    pub(crate) const NOP: u8 = 0x00;
    pub(crate) const SEND_INVAL: u8 = 0x01;
    pub(crate) const RDMA_WRITE: u8 = 0x08;
    pub(crate) const RDMA_WRITE_IMM: u8 = 0x09;
    pub(crate) const SEND: u8 = 0x0a;
    pub(crate) const SEND_IMM: u8 = 0x0b;
    pub(crate) const RDMA_READ: u8 = 0x10;
    pub(crate) const ATOMIC_CS: u8 = 0x11;
    pub(crate) const ATOMIC_FA: u8 = 0x12;
    pub(crate) const ATOMIC_MASKED_CS: u8 = 0x14;
    pub(crate) const ATOMIC_MASKED_FA: u8 = 0x15;
}

/// WQEBB size.
pub(crate) const BB: usize = 64;
/// `MLX5_INLINE_SEG` flag in a segment's byte_count.
const INLINE_SEG: u32 = 0x8000_0000;
/// `fm_ce_se` bit: CE = CQ_UPDATE (CE values 2 and 3).
const CE_CQ_UPDATE: u8 = 0x08;
/// `fm_ce_se` bit: solicited event.
const SOLICITED: u8 = 0x02;
/// What a pointer segment's `byte_count` of 0 means on mlx5: 2^31 bytes (the 31-bit
/// length field's zero encodes its full range, as the ionic provider documents for its
/// SGEs; rdma-core's mlx5 provider skips zero-length SGEs rather than emit one).
pub(crate) const ZERO_LENGTH_MEANS: u32 = 1 << 31;

/// The `N` bytes at `off` (one bounds check, one load).
fn bytes<const N: usize>(b: &[u8], off: usize) -> [u8; N] {
    b[off..off + N].try_into().expect("slice of length N")
}

pub(crate) fn be16(b: &[u8], off: usize) -> u16 {
    u16::from_be_bytes(bytes(b, off))
}

pub(crate) fn be32(b: &[u8], off: usize) -> u32 {
    u32::from_be_bytes(bytes(b, off))
}

pub(crate) fn be64(b: &[u8], off: usize) -> u64 {
    u64::from_be_bytes(bytes(b, off))
}

/// Control segment `mlx5_wqe_ctrl_seg`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Ctrl {
    pub(crate) opmod: u8,
    pub(crate) idx: u16,
    pub(crate) opcode: u8,
    pub(crate) qpn: u32,
    pub(crate) ds: u8,
    pub(crate) fm_ce_se: u8,
    /// Raw (wire-order) immediate / invalidate rkey.
    pub(crate) imm: [u8; 4],
    /// `dci_stream_channel_id` (bytes 9..10, BE16): a DCI's stream; reserved (0) elsewhere.
    pub(crate) stream: u16,
}

impl Ctrl {
    /// Decode the 8 doorbell bytes (enough for routing) or a full 16-byte segment.
    pub(crate) fn parse(b: &[u8]) -> Ctrl {
        let w0 = be32(b, 0);
        let w1 = be32(b, 4);
        let (fm_ce_se, imm, stream) = if b.len() >= 16 {
            (b[11], bytes(b, 12), u16::from_be_bytes([b[9], b[10]]))
        } else {
            (0, [0; 4], 0)
        };
        Ctrl {
            opmod: (w0 >> 24) as u8,
            idx: (w0 >> 8) as u16,
            opcode: w0 as u8,
            qpn: w1 >> 8,
            ds: (w1 & 0x3f) as u8,
            fm_ce_se,
            imm,
            stream,
        }
    }

    /// WQEBBs this WQE occupies (at least one, even if `ds` is 0).
    pub(crate) fn nbb(&self) -> u16 {
        (u16::from(self.ds).div_ceil(4)).max(1)
    }

    pub(crate) fn signaled(&self) -> bool {
        self.fm_ce_se & CE_CQ_UPDATE != 0
    }

    /// CE = 1, `MLX5_COMP_ONLY_FIRST_ERR` (DPDK's mlx5_prm.h): a CQE only if this WQE is
    /// the first to fail, so no flush CQE.
    pub(crate) fn only_first_error(&self) -> bool {
        (self.fm_ce_se >> 2) & 3 == 1
    }

    /// FM is FENCE, STRONG_ORDERING or SMALL_AND_FENCE: wait for earlier READs and atomics
    /// (INITIATOR_SMALL only waits for a preceding UMR).
    pub(crate) fn fenced(&self) -> bool {
        self.fm_ce_se >> 5 >= 2
    }

    pub(crate) fn solicited(&self) -> bool {
        self.fm_ce_se & SOLICITED != 0
    }
}

/// One entry of a data-segment list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Seg {
    /// Inline bytes at `off..off+len` of the WQE.
    Inline { off: usize, len: u32 },
    /// Pointer segment `mlx5_wqe_data_seg`; a `byte_count` of 0 is `len` 2^31.
    Ptr { len: u32, lkey: u32, addr: u64 },
}

impl Seg {
    pub(crate) fn len(&self) -> u32 {
        match *self {
            Seg::Inline { len, .. } | Seg::Ptr { len, .. } => len,
        }
    }
}

/// Iterator over the data/inline segments of a WQE, from a byte offset to `ds*16`.
#[derive(Clone)]
pub(crate) struct Segs<'a> {
    wqe: &'a [u8],
    pos: usize,
}

impl<'a> Segs<'a> {
    pub(crate) fn new(wqe: &'a [u8], pos: usize) -> Self {
        Segs { wqe, pos }
    }

    /// The WQE offset of the next segment.
    pub(crate) fn pos(&self) -> usize {
        self.pos
    }
}

impl Iterator for Segs<'_> {
    /// A malformed segment yields the syndrome once and ends the iteration.
    type Item = Result<Seg, u8>;

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        let end = self.wqe.len();
        if self.pos >= end {
            return None;
        }
        let p = self.pos;
        let bc = be32(self.wqe, p);
        if bc & INLINE_SEG != 0 {
            let len = bc & !INLINE_SEG;
            let span = (4 + len as usize).div_ceil(16) * 16;
            if p + 4 + len as usize > end {
                self.pos = end;
                return Some(Err(synd::LOCAL_QP_OP_ERR));
            }
            self.pos = p + span;
            Some(Ok(Seg::Inline { off: p + 4, len }))
        } else {
            self.pos = p + 16;
            Some(Ok(Seg::Ptr {
                len: if bc == 0 { ZERO_LENGTH_MEANS } else { bc },
                lkey: be32(self.wqe, p + 4),
                addr: be64(self.wqe, p + 8),
            }))
        }
    }
}

/// Atomic operands, unified over standard and masked forms.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct AtomicArgs {
    /// 4 or 8 bytes.
    pub(crate) size: u8,
    /// Compare-and-swap (else fetch-and-add).
    pub(crate) cs: bool,
    /// Swap value (CS) or addend (FA).
    pub(crate) swap_add: u64,
    /// Compare value (CS) or field boundary (FA).
    pub(crate) compare: u64,
    /// Swap mask (CS only).
    pub(crate) swap_mask: u64,
    /// Compare mask (CS only).
    pub(crate) compare_mask: u64,
}

impl AtomicArgs {
    /// The new memory value for original value `old`.
    pub(crate) fn apply(&self, old: u64) -> u64 {
        let width = if self.size == 4 {
            u32::MAX.into()
        } else {
            u64::MAX
        };
        let new = if self.cs {
            if (old ^ self.compare) & self.compare_mask == 0 {
                (old & !self.swap_mask) | (self.swap_add & self.swap_mask)
            } else {
                old
            }
        } else {
            field_add(old, self.swap_add, self.compare)
        };
        new & width
    }
}

/// Add with carries stopped above every bit set in `boundary` (masked fetch-and-add:
/// several independent fields in one word). `boundary == 0` is a plain add.
fn field_add(a: u64, b: u64, boundary: u64) -> u64 {
    if boundary == 0 {
        return a.wrapping_add(b);
    }
    let mut out = 0u64;
    let mut carry = 0u64;
    for i in 0..64 {
        let (x, y) = ((a >> i) & 1, (b >> i) & 1);
        out |= (x ^ y ^ carry) << i;
        carry = (x & y) | (carry & (x ^ y));
        if (boundary >> i) & 1 == 1 {
            carry = 0;
        }
    }
    out
}

/// A decoded RC operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Op {
    Nop,
    Send,
    Write,
    Read,
    Atomic(AtomicArgs),
}

/// A validated WQE: the operation, its remote address and where its data segments start.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Wqe {
    pub(crate) ctrl: Ctrl,
    pub(crate) op: Op,
    pub(crate) raddr: u64,
    pub(crate) rkey: u32,
    /// Byte offset of the first data/inline segment.
    pub(crate) data: usize,
    /// Total message length (sum of the data segments).
    pub(crate) len: u64,
    /// Number of pointer (non-inline) data segments.
    pub(crate) ptr_segs: u32,
}

impl Wqe {
    /// This WQE as its responder reads it: the remote address in the responder QP's
    /// address space `space` (`host`'s space bits).
    #[inline(always)]
    pub(crate) fn at_responder(self, space: u64) -> Wqe {
        Wqe {
            raddr: crate::host::in_space_of(space, self.raddr),
            ..self
        }
    }
}

/// Decode and validate the structure of `wqe` (exactly `ds*16` bytes, ctrl first, already
/// parsed into `ctrl`, then `xport` bytes of transport segment: 0 for RC, the address
/// vector for UD) against the largest message `max_msg`; pointer segments with
/// `byte_count` 0 are added to `zero_segs`. Memory keys are checked later, by the caller.
/// Inlined into its one caller: returning the `Wqe` through memory cost a
/// store-forwarding stall per WQE.
#[inline(always)]
pub(crate) fn decode(
    ctrl: Ctrl,
    wqe: &[u8],
    xport: usize,
    max_msg: u64,
    zero_segs: &mut u64,
) -> Result<Wqe, u8> {
    use opcode::*;
    let ds = usize::from(ctrl.ds);
    if ds == 0 || wqe.len() != ds * 16 {
        return Err(synd::LOCAL_QP_OP_ERR);
    }
    let has_raddr = matches!(
        ctrl.opcode,
        RDMA_WRITE
            | RDMA_WRITE_IMM
            | RDMA_READ
            | ATOMIC_CS
            | ATOMIC_FA
            | ATOMIC_MASKED_CS
            | ATOMIC_MASKED_FA
    );
    let (raddr, rkey) = if has_raddr {
        if ds * 16 < 32 + xport {
            return Err(synd::LOCAL_QP_OP_ERR);
        }
        (be64(wqe, 16 + xport), be32(wqe, 24 + xport))
    } else {
        (0, 0)
    };
    let op = match (ctrl.opcode, ctrl.opmod) {
        (NOP, 0) => Op::Nop,
        (SEND | SEND_IMM | SEND_INVAL, 0) => Op::Send,
        (RDMA_WRITE | RDMA_WRITE_IMM, 0) => Op::Write,
        (RDMA_READ, 0) => Op::Read,
        (ATOMIC_CS | ATOMIC_FA, 0) => Op::Atomic(AtomicArgs {
            size: 8,
            cs: ctrl.opcode == ATOMIC_CS,
            swap_add: be64_at(wqe, 32 + xport)?,
            compare: if ctrl.opcode == ATOMIC_CS {
                be64_at(wqe, 40 + xport)?
            } else {
                0
            },
            swap_mask: u64::MAX,
            compare_mask: u64::MAX,
        }),
        (ATOMIC_MASKED_CS | ATOMIC_MASKED_FA, 0x08 | 0x09) => Op::Atomic(masked_args(
            wqe,
            32 + xport,
            ctrl.opcode == ATOMIC_MASKED_CS,
            ctrl.opmod,
        )?),
        _ => return Err(synd::LOCAL_QP_OP_ERR),
    };
    let data = 16
        + xport
        + if has_raddr { 16 } else { 0 }
        + match op {
            Op::Atomic(a) if a.cs && a.size == 8 && ctrl.opcode == ATOMIC_MASKED_CS => 32,
            Op::Atomic(_) => 16,
            _ => 0,
        };
    if data > wqe.len() {
        return Err(synd::LOCAL_QP_OP_ERR);
    }
    let mut len = 0u64;
    let mut count = 0;
    let mut ptr_segs = 0;
    for seg in Segs::new(wqe, data) {
        let seg = seg?;
        ptr_segs += u32::from(matches!(seg, Seg::Ptr { .. }));
        *zero_segs += u64::from(matches!(
            seg,
            Seg::Ptr {
                len: ZERO_LENGTH_MEANS,
                ..
            }
        ));
        if matches!((op, seg), (Op::Read | Op::Atomic(_), Seg::Inline { .. })) {
            return Err(synd::LOCAL_QP_OP_ERR);
        }
        len += u64::from(seg.len());
        count += 1;
    }
    if let Op::Atomic(a) = op {
        if count != 1 || len != u64::from(a.size) {
            return Err(synd::LOCAL_LENGTH_ERR);
        }
    }
    if matches!(op, Op::Nop) {
        len = 0;
    }
    if len > max_msg {
        return Err(synd::LOCAL_LENGTH_ERR);
    }
    Ok(Wqe {
        ctrl,
        op,
        raddr,
        rkey,
        data,
        len,
        ptr_segs,
    })
}

fn be64_at(wqe: &[u8], off: usize) -> Result<u64, u8> {
    if off + 8 > wqe.len() {
        return Err(synd::LOCAL_QP_OP_ERR);
    }
    Ok(be64(wqe, off))
}

fn be32_at(wqe: &[u8], off: usize) -> Result<u64, u8> {
    if off + 4 > wqe.len() {
        return Err(synd::LOCAL_QP_OP_ERR);
    }
    Ok(be32(wqe, off).into())
}

/// Masked atomic arguments after ctrl (+ the address vector of a DCI) + raddr, from byte
/// `at` (prm-facts §4.5).
fn masked_args(wqe: &[u8], at: usize, cs: bool, opmod: u8) -> Result<AtomicArgs, u8> {
    let a = if opmod == 0x08 {
        AtomicArgs {
            size: 4,
            cs,
            swap_add: be32_at(wqe, at)?,
            compare: be32_at(wqe, at + 4)?,
            swap_mask: if cs { be32_at(wqe, at + 8)? } else { 0 },
            compare_mask: if cs { be32_at(wqe, at + 12)? } else { 0 },
        }
    } else if cs {
        AtomicArgs {
            size: 8,
            cs,
            swap_add: be64_at(wqe, at)?,
            compare: be64_at(wqe, at + 8)?,
            swap_mask: be64_at(wqe, at + 16)?,
            compare_mask: be64_at(wqe, at + 24)?,
        }
    } else {
        AtomicArgs {
            size: 8,
            cs,
            swap_add: be64_at(wqe, at)?,
            compare: be64_at(wqe, at + 8)?,
            swap_mask: 0,
            compare_mask: 0,
        }
    };
    Ok(a)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn field_add_stops_carries_at_boundaries() {
        // Two 32-bit fields: the low field overflows without touching the high one.
        let b = 1u64 << 31 | 1u64 << 63;
        assert_eq!(
            field_add(0x0000_0001_ffff_ffff, 1, b),
            0x0000_0001_0000_0000
        );
        assert_eq!(field_add(5, 7, 0), 12);
    }

    #[test]
    fn masked_cs_compares_and_swaps_under_masks() {
        let a = AtomicArgs {
            size: 8,
            cs: true,
            swap_add: 0xab00,
            compare: 0x0012,
            swap_mask: 0xff00,
            compare_mask: 0x00ff,
        };
        assert_eq!(a.apply(0x3412), 0xab12);
        assert_eq!(a.apply(0x3413), 0x3413);
    }

    #[test]
    fn ctrl_only_send_is_zero_length() {
        let mut w = [0u8; 16];
        w[3] = opcode::SEND;
        w[7] = 1;
        let d = decode(Ctrl::parse(&w), &w, 0, 1 << 30, &mut 0).unwrap();
        assert_eq!((d.op, d.len), (Op::Send, 0));
    }
    /// A WQE of `ds` units (control segment: `opcode`, `opmod`, the DS count), zeros
    /// after it.
    fn wqe(opcode: u8, opmod: u8, ds: usize) -> Vec<u8> {
        let mut w = vec![0u8; ds * 16];
        (w[0], w[3], w[7]) = (opmod, opcode, ds as u8);
        w
    }

    fn dec(w: &[u8], xport: usize) -> Result<Wqe, u8> {
        decode(Ctrl::parse(w), w, xport, 1 << 30, &mut 0)
    }

    #[test]
    fn field_add_carries_inside_a_field() {
        // Bit 0: 1 + 1 carries; bit 1: 0 + 1 + carry is 0, carrying on to bit 2.
        assert_eq!(field_add(1, 3, 1 << 63), 4);
    }

    #[test]
    fn a_wqe_whose_ds_count_is_not_its_length_is_refused() {
        let mut w = wqe(opcode::SEND, 0, 2);
        w.extend([0; 16]);
        assert_eq!(dec(&w, 0).err(), Some(synd::LOCAL_QP_OP_ERR));
    }

    #[test]
    fn a_write_of_its_remote_address_alone_is_zero_length() {
        for xport in [0, 16] {
            let mut w = wqe(opcode::RDMA_WRITE, 0, 2 + xport / 16);
            w[16 + xport..24 + xport].copy_from_slice(&0x1122_3344_5566_7788u64.to_be_bytes());
            w[24 + xport..28 + xport].copy_from_slice(&0x99u32.to_be_bytes());
            let d = dec(&w, xport).unwrap();
            assert_eq!(
                (d.op, d.raddr, d.rkey, d.len),
                (Op::Write, 0x1122_3344_5566_7788, 0x99, 0)
            );
        }
    }

    /// An inline segment may end exactly at the WQE's end; one byte more is malformed.
    #[test]
    fn an_inline_segment_past_the_wqe_end_is_refused() {
        for (len, ok) in [(12u32, true), (13, false)] {
            let mut w = wqe(opcode::SEND, 0, 2);
            w[16..20].copy_from_slice(&(INLINE_SEG | len).to_be_bytes());
            let d = dec(&w, 0);
            assert_eq!(
                d.map(|d| d.len),
                if ok {
                    Ok(12)
                } else {
                    Err(synd::LOCAL_QP_OP_ERR)
                }
            );
        }
    }

    /// Each atomic's arguments are read at their offsets behind the remote address (and a
    /// transport segment: a DCI's address vector, XRC's), up to its data segment.
    #[test]
    fn atomic_arguments_are_read_at_their_offsets() {
        use opcode::*;
        let words: [u64; 4] = [0x1111_1111_1111_1111, 0x2222, 0x3333 << 40, 0x44];
        let args = |size, cs, m: [u64; 4]| AtomicArgs {
            size,
            cs,
            swap_add: m[0],
            compare: m[1],
            swap_mask: m[2],
            compare_mask: m[3],
        };
        let (w32, max) = (words.map(|w| w & 0xffff_ffff), u64::MAX);
        let cases = [
            (
                ATOMIC_CS,
                0,
                16,
                args(8, true, [words[0], words[1], max, max]),
            ),
            (ATOMIC_FA, 0, 16, args(8, false, [words[0], 0, max, max])),
            (ATOMIC_MASKED_CS, 9, 32, args(8, true, words)),
            (
                ATOMIC_MASKED_FA,
                9,
                16,
                args(8, false, [words[0], words[1], 0, 0]),
            ),
            (ATOMIC_MASKED_CS, 8, 16, args(4, true, w32)),
            (
                ATOMIC_MASKED_FA,
                8,
                16,
                args(4, false, [w32[0], w32[1], 0, 0]),
            ),
        ];
        for (op, opmod, arg_bytes, want) in cases {
            for xport in [0, 16] {
                let at = 32 + xport;
                let ds = (at + arg_bytes) / 16 + 1;
                let mut w = wqe(op, opmod, ds);
                for (i, word) in words.iter().enumerate() {
                    if want.size == 4 {
                        let b = (*word as u32).to_be_bytes();
                        w[at + 4 * i..at + 4 * i + 4].copy_from_slice(&b);
                    } else if 8 * i < arg_bytes {
                        w[at + 8 * i..at + 8 * i + 8].copy_from_slice(&word.to_be_bytes());
                    }
                }
                // The data segment: the operand's size.
                w[at + arg_bytes..at + arg_bytes + 4]
                    .copy_from_slice(&u32::from(want.size).to_be_bytes());
                let d = dec(&w, xport).unwrap();
                assert_eq!(
                    (d.op, d.len),
                    (Op::Atomic(want), u64::from(want.size)),
                    "{op:#x}/{opmod} +{xport}"
                );
                // Without the data segment the arguments end at the WQE's end: read
                // whole, then refused for the missing segment.
                let d = dec(&wqe_cut(&w, ds - 1), xport);
                assert_eq!(
                    d.err(),
                    Some(synd::LOCAL_LENGTH_ERR),
                    "{op:#x}/{opmod} +{xport}"
                );
            }
        }
    }

    /// `w` cut to `ds` units, its DS count set to it.
    fn wqe_cut(w: &[u8], ds: usize) -> Vec<u8> {
        let mut w = w[..ds * 16].to_vec();
        w[7] = ds as u8;
        w
    }
}
