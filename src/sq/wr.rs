//! Work requests: the operations, their data and flags, and what each one writes after the
//! control segment.

use crate::error::PostError;
use crate::prm::{
    self, AtomicSeg, Be32, Be64, FmCeSe, MaskedCs32, MaskedCs64, MaskedFa32, MaskedFa64, Opcode,
};
use crate::ring::WqeBuf;

pub use crate::mem::Sge;

/// The remote side of an RDMA or atomic operation.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Remote {
    /// Remote virtual address.
    pub addr: u64,
    /// Remote key.
    pub rkey: u32,
}

impl Remote {
    /// The same region `n` bytes further on (a peer's buffer plus an offset into it, e.g.
    /// slot `i` of a ring the peer advertised as one `Remote`).
    ///
    /// # Panics
    /// If the address overflows 64 bits.
    pub fn offset(self, n: u64) -> Remote {
        Remote {
            addr: self.addr.checked_add(n).expect("remote address overflows"),
            rkey: self.rkey,
        }
    }
}

/// A send-queue operation (RC).
///
/// # Atomics
///
/// Every atomic writes the target's original value to its single local entry, in the byte
/// order the device uses for that kind ([`SendOp::atomic_result`] decodes it):
///
/// | Operation | Entry | `atomic_8b_host_order` (the kernel's default) | otherwise |
/// |---|---|---|---|
/// | [`CompareSwap`](SendOp::CompareSwap), [`FetchAdd`](SendOp::FetchAdd) | 8 bytes | host order | big-endian |
/// | [`MaskedCompareSwap64`](SendOp::MaskedCompareSwap64), [`MaskedFetchAdd64`](SendOp::MaskedFetchAdd64) | 8 bytes | host order | big-endian |
/// | [`MaskedCompareSwap32`](SendOp::MaskedCompareSwap32), [`MaskedFetchAdd32`](SendOp::MaskedFetchAdd32) | 4 bytes | big-endian | big-endian |
///
/// `atomic_8b_host_order` is [`DeviceCaps::atomic_8b_host_order`](crate::DeviceCaps). The
/// target itself is read and written in host order, and the completion's `byte_len` is the
/// entry size.
///
/// Atomicity: an atomic is atomic against other atomics through the same HCA
/// (`IBV_ATOMIC_HCA`, all the mlx5 kernel driver advertises), not against the CPU. Unless
/// PCIe AtomicOps are enabled (a firmware setting, off by default) the responder reads the
/// target by DMA and writes the new value by DMA, so a CPU store (or CPU atomic) to the
/// target between the two is lost. Do not mix CPU and NIC updates of one word.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum SendOp {
    /// SEND.
    Send,
    /// SEND with immediate data (host order; delivered unchanged to the receiver).
    SendImm(u32),
    /// SEND that invalidates `rkey` at the responder. Only keys that allow remote
    /// invalidation can be invalidated: fast-registration MRs and type-2 memory windows. No
    /// key registered through this crate is one (an `ibv_reg_mr` key never is), so today
    /// every SEND_INV is refused: the responder's receive completes with a remote invalid
    /// request error, this WQE completes with
    /// [`Syndrome::RemoteInvalReqErr`](crate::prm::Syndrome), and both QPs go to error.
    SendInv(u32),
    /// RDMA WRITE.
    Write(Remote),
    /// RDMA WRITE with immediate (consumes a receive at the responder).
    WriteImm(Remote, u32),
    /// RDMA READ into the gather list.
    Read(Remote),
    /// 8-byte compare-and-swap; the original value lands in the single 8-byte local entry.
    CompareSwap {
        /// Target (8-byte aligned).
        remote: Remote,
        /// Value compared with the target.
        compare: u64,
        /// Value stored if equal.
        swap: u64,
    },
    /// 8-byte fetch-and-add; the original value lands in the single 8-byte local entry.
    FetchAdd {
        /// Target (8-byte aligned).
        remote: Remote,
        /// Value added.
        add: u64,
    },
    /// Masked compare-and-swap on a 4-byte target.
    MaskedCompareSwap32 {
        /// Target (4-byte aligned).
        remote: Remote,
        /// Arguments.
        args: MaskedCs32Args,
    },
    /// Masked compare-and-swap on an 8-byte target.
    MaskedCompareSwap64 {
        /// Target (8-byte aligned).
        remote: Remote,
        /// Arguments.
        args: MaskedCs64Args,
    },
    /// Masked fetch-and-add on a 4-byte target.
    MaskedFetchAdd32 {
        /// Target (4-byte aligned).
        remote: Remote,
        /// Value added.
        add: u32,
        /// Bits at which carries stop.
        field_boundary: u32,
    },
    /// Masked fetch-and-add on an 8-byte target.
    MaskedFetchAdd64 {
        /// Target (8-byte aligned).
        remote: Remote,
        /// Value added.
        add: u64,
        /// Bits at which carries stop.
        field_boundary: u64,
    },
    /// NOP (a control segment alone); useful as a fence or to request a CQE.
    Nop,
}

/// Arguments of a 4-byte masked compare-and-swap.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MaskedCs32Args {
    /// Value compared.
    pub compare: u32,
    /// Bits compared.
    pub compare_mask: u32,
    /// Value stored.
    pub swap: u32,
    /// Bits stored.
    pub swap_mask: u32,
}

/// Arguments of an 8-byte masked compare-and-swap.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MaskedCs64Args {
    /// Value compared.
    pub compare: u64,
    /// Bits compared.
    pub compare_mask: u64,
    /// Value stored.
    pub swap: u64,
    /// Bits stored.
    pub swap_mask: u64,
}

/// Where a send's local data comes from (or, for READ and atomics, goes to).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Data<'a> {
    /// A gather (or, for READ and atomics, scatter) list of registered memory.
    Sges(&'a [Sge]),
    /// Bytes copied into the WQE itself (SEND and WRITE only).
    Inline(&'a [u8]),
}

impl Data<'static> {
    /// No data.
    pub const NONE: Data<'static> = Data::Sges(&[]);
}

/// One work request of a list posted with [`SendQueue::post_many`](super::SendQueue::post_many).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SendWr<'a> {
    /// Reported by the WQE's completion.
    pub wr_id: u64,
    /// The operation.
    pub op: SendOp,
    /// Its local data.
    pub data: Data<'a>,
    /// Its flags.
    pub flags: SendFlags,
}

/// Per-WR flags: a set of `MLX5_WQE_CTRL_CQ_UPDATE`, `_SOLICITED` and `_FENCE` (fence
/// mode `SMALL_AND_FENCE`, rdma-core's for `IBV_SEND_FENCE`), kept as the bits of the
/// control segment's `fm_ce_se` byte, so that a post copies them with one load.
/// Combine with `|`: `SendFlags::SIGNALED | SendFlags::FENCE`.
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct SendFlags(u8);

impl SendFlags {
    /// Ask for a CQE (`MLX5_WQE_CTRL_CQ_UPDATE`). Without it the WQE completes silently
    /// unless it fails, and is retired by the next signaled CQE.
    pub const SIGNALED: SendFlags = SendFlags(prm::WQE_CTRL_CQ_UPDATE);
    /// No flag: unsignaled, no fence, no solicited event.
    pub const UNSIGNALED: SendFlags = SendFlags(0);
    /// Wait for earlier READs and atomics of this QP (`MLX5_WQE_CTRL_FENCE`).
    pub const FENCE: SendFlags = SendFlags(prm::WQE_CTRL_FENCE);
    /// Solicited event at the responder (`MLX5_WQE_CTRL_SOLICITED`).
    pub const SOLICITED: SendFlags = SendFlags(prm::WQE_CTRL_SOLICITED);

    /// The flags from three switches.
    pub const fn new(signaled: bool, fence: bool, solicited: bool) -> SendFlags {
        SendFlags(
            (signaled as u8 * prm::WQE_CTRL_CQ_UPDATE)
                | (fence as u8 * prm::WQE_CTRL_FENCE)
                | (solicited as u8 * prm::WQE_CTRL_SOLICITED),
        )
    }

    /// Whether a CQE is asked for ([`SendFlags::SIGNALED`]).
    pub const fn signaled(self) -> bool {
        self.0 & prm::WQE_CTRL_CQ_UPDATE != 0
    }

    /// Whether the WQE waits for earlier READs and atomics ([`SendFlags::FENCE`]).
    pub const fn fence(self) -> bool {
        self.0 & prm::WQE_CTRL_FENCE != 0
    }

    /// Whether the responder gets a solicited event ([`SendFlags::SOLICITED`]).
    pub const fn solicited(self) -> bool {
        self.0 & prm::WQE_CTRL_SOLICITED != 0
    }

    /// `fm_ce_se` of these flags: the bits themselves.
    #[inline(always)]
    pub(super) fn fm_ce_se(self) -> FmCeSe {
        FmCeSe::from_bits(self.0)
    }
}

impl core::ops::BitOr for SendFlags {
    type Output = SendFlags;

    fn bitor(self, other: SendFlags) -> SendFlags {
        SendFlags(self.0 | other.0)
    }
}

impl core::ops::BitOrAssign for SendFlags {
    fn bitor_assign(&mut self, other: SendFlags) {
        self.0 |= other.0;
    }
}

impl core::fmt::Debug for SendFlags {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("SendFlags")
            .field("signaled", &self.signaled())
            .field("fence", &self.fence())
            .field("solicited", &self.solicited())
            .finish()
    }
}

/// Everything a post needs to know about one WQE before writing it, but the immediate and
/// the remote address (read from the [`SendOp`] where they are written): one constant per
/// operation, so that decoding a run-time [`SendOp`] is one table load
/// ([`SendOp::shape`]).
#[derive(Clone, Copy, Debug)]
pub(super) struct Shape {
    /// Opcode (bits 0..8) and opmod (24..32) where the control segment's first dword
    /// has them, the units of atomic arguments (8..10), a remote address (bit 10), a
    /// required local length (bit 11), the units after the control segment and before the
    /// data (12..16: the remote address and the arguments) and the required length
    /// (16..20), an immediate (bit 20).
    code: u32,
}

const REMOTE: u32 = 1 << 10;
const LOCAL_LEN: u32 = 1 << 11;
const IMM: u32 = 1 << 20;

impl Shape {
    /// `args_ds` units of atomic arguments; `local_len`: for READ and atomics, the
    /// required local-buffer length (0 = any, READ).
    const fn code(
        opcode: Opcode,
        opmod: u8,
        remote: bool,
        imm: bool,
        args_ds: u32,
        local_len: Option<u32>,
    ) -> u32 {
        let local = match local_len {
            Some(len) => LOCAL_LEN | len << 16,
            None => 0,
        };
        let fixed = remote as u32 + args_ds;
        opcode as u32
            | (opmod as u32) << 24
            | args_ds << 8
            | (remote as u32 * REMOTE)
            | (imm as u32 * IMM)
            | fixed << 12
            | local
    }

    #[inline(always)]
    pub(super) fn opcode(&self) -> u8 {
        self.code as u8
    }

    #[inline(always)]
    pub(super) fn opmod(&self) -> u8 {
        (self.code >> 24) as u8
    }

    /// Whether a remote-address segment follows the control (and transport) segment.
    #[inline(always)]
    pub(super) fn has_remote(&self) -> bool {
        self.code & REMOTE != 0
    }

    /// The remote address of `op`, the operation this is the shape of.
    #[inline(always)]
    pub(super) fn remote(&self, op: &SendOp) -> Option<Remote> {
        debug_assert_eq!(self.code, op.shape().code);
        // SAFETY: `op` is the operation of this shape, which says it has a remote address.
        self.has_remote().then(|| unsafe { op.remote() })
    }

    /// The control segment's `imm` word of `op`, the operation this is the shape of: the
    /// immediate, or the key a SEND_INV invalidates (both in network order), else 0.
    #[inline(always)]
    pub(super) fn imm(&self, op: &SendOp) -> Be32 {
        debug_assert_eq!(self.code, op.shape().code);
        Be32::new(if self.has_imm() {
            // SAFETY: `op` is the operation of this shape, which says it has an immediate.
            unsafe { op.imm() }
        } else {
            0
        })
    }

    /// Whether the control segment carries an immediate (or a key to invalidate).
    #[inline(always)]
    pub(super) fn has_imm(&self) -> bool {
        self.code & IMM != 0
    }

    /// The bits of a remote address that must be 0: an atomic's target is aligned to its
    /// operand size; 0 (any address) for the other operations.
    #[inline(always)]
    pub(super) fn align_mask(&self) -> u64 {
        (self.kept_len() as u64).saturating_sub(1)
    }

    /// Refuses a remote address `addr` outside [`Shape::align_mask`] (`mask`).
    #[inline(always)]
    pub(super) fn check_alignment(mask: u64, addr: u64) -> Result<(), PostError> {
        if addr & mask != 0 {
            return Err(PostError::MisalignedAtomic { addr });
        }
        Ok(())
    }

    /// Index of [`Limits::short_fit`](super::write::Limits): the remote-address bit and
    /// the local-length bit.
    #[inline(always)]
    pub(super) fn fit_index(&self) -> usize {
        const _: () = assert!(LOCAL_LEN == REMOTE << 1);
        (self.code >> REMOTE.trailing_zeros() & 3) as usize
    }

    /// Units of the remote-address segment and the atomic arguments.
    #[inline(always)]
    pub(super) fn fixed_ds(&self) -> usize {
        (self.code >> 12 & 0xf) as usize
    }

    /// Units of atomic arguments.
    #[inline(always)]
    pub(super) fn args_ds(&self) -> usize {
        (self.code >> 8 & 3) as usize
    }

    /// For READ and atomics: the required local-buffer length (0 = any, READ).
    #[inline(always)]
    pub(super) fn local_len(&self) -> Option<u32> {
        (self.code & LOCAL_LEN != 0).then_some(self.kept_len())
    }

    /// What the completion reports as `byte_len` unless it is a READ's: an atomic's
    /// operand size, else 0 (no test: the bits are 0 without a local length).
    #[inline(always)]
    pub(super) fn kept_len(&self) -> u32 {
        self.code >> 16 & 0xf
    }
}

/// The pattern of every operation with a remote address, binding it to `$r` (the first
/// field of each).
macro_rules! remote_op {
    ($r:ident) => {
        SendOp::Write($r)
            | SendOp::WriteImm($r, _)
            | SendOp::Read($r)
            | SendOp::CompareSwap { remote: $r, .. }
            | SendOp::FetchAdd { remote: $r, .. }
            | SendOp::MaskedCompareSwap32 { remote: $r, .. }
            | SendOp::MaskedCompareSwap64 { remote: $r, .. }
            | SendOp::MaskedFetchAdd32 { remote: $r, .. }
            | SendOp::MaskedFetchAdd64 { remote: $r, .. }
    };
}

impl SendOp {
    /// The operation's [`Shape`]: a constant per variant, so a run-time `match` is a load
    /// from a table indexed by the discriminant (no jump table, no field read).
    #[inline(always)]
    pub(super) fn shape(&self) -> Shape {
        const fn p(opcode: Opcode, remote: bool, imm: bool) -> u32 {
            Shape::code(opcode, 0, remote, imm, 0, None)
        }
        const fn a(opcode: Opcode, opmod: u8, args_ds: u32, len: u32) -> u32 {
            Shape::code(opcode, opmod, true, false, args_ds, Some(len))
        }
        const B4: u8 = prm::OPMOD_MASKED_ATOMIC_4B;
        const B8: u8 = prm::OPMOD_MASKED_ATOMIC_8B;
        let code = match self {
            SendOp::Send => const { p(Opcode::Send, false, false) },
            SendOp::SendImm(_) => const { p(Opcode::SendImm, false, true) },
            SendOp::SendInv(_) => const { p(Opcode::SendInval, false, true) },
            SendOp::Write(_) => const { p(Opcode::RdmaWrite, true, false) },
            SendOp::WriteImm(..) => const { p(Opcode::RdmaWriteImm, true, true) },
            SendOp::Read(_) => const { Shape::code(Opcode::RdmaRead, 0, true, false, 0, Some(0)) },
            SendOp::CompareSwap { .. } => const { a(Opcode::AtomicCs, 0, 1, 8) },
            SendOp::FetchAdd { .. } => const { a(Opcode::AtomicFa, 0, 1, 8) },
            SendOp::MaskedCompareSwap32 { .. } => const { a(Opcode::AtomicMaskedCs, B4, 1, 4) },
            SendOp::MaskedCompareSwap64 { .. } => const { a(Opcode::AtomicMaskedCs, B8, 2, 8) },
            SendOp::MaskedFetchAdd32 { .. } => const { a(Opcode::AtomicMaskedFa, B4, 1, 4) },
            SendOp::MaskedFetchAdd64 { .. } => const { a(Opcode::AtomicMaskedFa, B8, 1, 8) },
            SendOp::Nop => const { p(Opcode::Nop, false, false) },
        };
        Shape { code }
    }

    /// The remote address of a RDMA or atomic operation. Every such variant has it as
    /// its first field, so with the `repr(u32)` layout it is at one offset for all of
    /// them and this `match` is one load.
    ///
    /// # Safety
    /// `self` must be an RDMA or atomic operation (its [`Shape::has_remote`]).
    #[inline(always)]
    unsafe fn remote(&self) -> Remote {
        match *self {
            remote_op!(remote) => remote,
            // SAFETY: excluded by the caller.
            SendOp::Send | SendOp::SendImm(_) | SendOp::SendInv(_) | SendOp::Nop => unsafe {
                core::hint::unreachable_unchecked()
            },
        }
    }

    /// Sets the remote address of a RDMA or atomic operation (at one offset in all of them,
    /// as for [`SendOp::remote`]: one store).
    ///
    /// # Safety
    /// `self` must be an RDMA or atomic operation (its [`Shape::has_remote`]).
    #[inline(always)]
    pub(super) unsafe fn set_remote(&mut self, to: Remote) {
        match self {
            remote_op!(remote) => *remote = to,
            // SAFETY: excluded by the caller.
            SendOp::Send | SendOp::SendImm(_) | SendOp::SendInv(_) | SendOp::Nop => unsafe {
                core::hint::unreachable_unchecked()
            },
        }
    }

    /// Sets the immediate of SEND or WRITE with immediate (or the key of a SEND_INV); false
    /// (nothing changed) for the others.
    pub(super) fn set_imm(&mut self, to: u32) -> bool {
        match self {
            SendOp::SendImm(imm) | SendOp::SendInv(imm) | SendOp::WriteImm(_, imm) => *imm = to,
            _ => return false,
        }
        true
    }

    /// The immediate, or the key a SEND_INV invalidates.
    ///
    /// # Safety
    /// `self` must be SEND with immediate, SEND_INV or WRITE with immediate (the
    /// operations whose shape has an immediate).
    #[inline(always)]
    unsafe fn imm(&self) -> u32 {
        match *self {
            SendOp::SendImm(imm) | SendOp::SendInv(imm) | SendOp::WriteImm(_, imm) => imm,
            // SAFETY: excluded by the caller.
            _ => unsafe { core::hint::unreachable_unchecked() },
        }
    }

    /// For an atomic, the size of the original value it writes to its local entry (4 or 8,
    /// also its completion's `byte_len`); `None` for any other operation.
    pub fn atomic_size(&self) -> Option<u32> {
        let shape = self.shape();
        shape.local_len().filter(|_| shape.args_ds() != 0)
    }

    /// For an atomic, the original value from the bytes of its local entry (`entry`, at
    /// least [`SendOp::atomic_size`] long), in the byte order the device writes for this kind
    /// (see [Atomics](SendOp#atomics)): `host_order_8b` is
    /// [`DeviceCaps::atomic_8b_host_order`](crate::DeviceCaps). `None` for any other
    /// operation or a shorter entry.
    pub fn atomic_result(&self, entry: &[u8], host_order_8b: bool) -> Option<u64> {
        match (self.atomic_size()?, entry) {
            (8, &[a, b, c, d, e, f, g, h, ..]) => {
                let bytes = [a, b, c, d, e, f, g, h];
                Some(if host_order_8b {
                    u64::from_ne_bytes(bytes)
                } else {
                    u64::from_be_bytes(bytes)
                })
            }
            (4, &[a, b, c, d, ..]) => Some(u32::from_be_bytes([a, b, c, d]).into()),
            _ => None,
        }
    }

    /// Writes the atomic argument segment(s) at byte `offset` of the WQE.
    ///
    /// # Safety
    /// The WQE must have room for `self.shape().args_ds()` units at `offset`.
    #[inline(always)]
    pub(super) unsafe fn write_args(&self, wqe: &mut WqeBuf<'_>, offset: usize) {
        // SAFETY: each arm writes exactly `args_ds` units of its shape (caller's contract).
        unsafe {
            match *self {
                SendOp::CompareSwap { compare, swap, .. } => wqe.seg(
                    offset,
                    AtomicSeg {
                        swap_add: Be64::new(swap),
                        compare: Be64::new(compare),
                    },
                ),
                SendOp::FetchAdd { add, .. } => wqe.seg(
                    offset,
                    AtomicSeg {
                        swap_add: Be64::new(add),
                        compare: Be64::new(0),
                    },
                ),
                SendOp::MaskedCompareSwap32 { args, .. } => wqe.seg(
                    offset,
                    MaskedCs32 {
                        swap: Be32::new(args.swap),
                        compare: Be32::new(args.compare),
                        swap_mask: Be32::new(args.swap_mask),
                        compare_mask: Be32::new(args.compare_mask),
                    },
                ),
                SendOp::MaskedCompareSwap64 { args, .. } => wqe.seg(
                    offset,
                    MaskedCs64 {
                        swap: Be64::new(args.swap),
                        compare: Be64::new(args.compare),
                        swap_mask: Be64::new(args.swap_mask),
                        compare_mask: Be64::new(args.compare_mask),
                    },
                ),
                SendOp::MaskedFetchAdd32 {
                    add,
                    field_boundary,
                    ..
                } => wqe.seg(
                    offset,
                    MaskedFa32 {
                        add: Be32::new(add),
                        field_boundary: Be32::new(field_boundary),
                        reserved: Be64::new(0),
                    },
                ),
                SendOp::MaskedFetchAdd64 {
                    add,
                    field_boundary,
                    ..
                } => wqe.seg(
                    offset,
                    MaskedFa64 {
                        add: Be64::new(add),
                        field_boundary: Be64::new(field_boundary),
                    },
                ),
                _ => {}
            }
        }
    }
}
