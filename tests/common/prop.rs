//! What the two random-operation properties share (`tests/prop_ops.rs` on RC,
//! `tests/prop_datagram.rs` on UC and UD): the memory areas, the work requests and their
//! strategy, payloads, the NICs, gather lists, the reference's operations and the RC
//! reference executor.

use std::collections::VecDeque;

use mlx5_direct::backend::sim::{Fabric, Fault, NicConfig, Sim};
use mlx5_direct::{
    Completion, Context, Data, DoorbellMode, MemoryRegion, SendOp, Sge, Status, WcOpcode,
};
use proptest::prelude::*;

/// Sources, READ and atomic results of the QP's own sends.
pub const L: usize = 0;

pub const L_LEN: usize = 8192;

/// Where the peer's WRITEs, READs and atomics go.
pub const T: usize = 8192;

pub const T_LEN: usize = 8192;

pub const MAX_SGE: usize = 4;

#[derive(Clone, Debug)]
pub struct Wr {
    pub kind: u8,
    pub len: u16,
    pub pieces: u8,
    pub inline: bool,
    pub local: u16,
    pub remote: u16,
    pub signaled: bool,
    pub solicited: bool,
    pub fence: bool,
    pub x: u64,
    pub y: u64,
}

pub fn wr() -> impl Strategy<Value = Wr> {
    (
        (0..13u8, 0..=1024u16, 1..=MAX_SGE as u8, any::<bool>()),
        (any::<u16>(), any::<u16>()),
        (prop::bool::weighted(0.3), any::<bool>(), any::<bool>()),
        (any::<u64>(), any::<u64>()),
    )
        .prop_map(
            |(
                (kind, len, pieces, inline),
                (local, remote),
                (signaled, solicited, fence),
                (x, y),
            )| {
                Wr {
                    kind,
                    len,
                    pieces,
                    inline,
                    local,
                    remote,
                    signaled,
                    solicited,
                    fence,
                    x,
                    y,
                }
            },
        )
}

/// A deterministic byte stream (splitmix64) for payloads and initial memory.
pub fn bytes(seed: u64, len: usize) -> Vec<u8> {
    let mut s = seed;
    (0..len.div_ceil(8))
        .flat_map(|_| {
            s = s.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = s;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            (z ^ (z >> 31)).to_le_bytes()
        })
        .take(len)
        .collect()
}

/// Splits `len` into `pieces` lengths (some may be 0) from the bits of `x`.
pub fn split(len: usize, pieces: usize, x: u64) -> Vec<usize> {
    let mut left = len;
    let mut out = Vec::with_capacity(pieces);
    for i in 0..pieces - 1 {
        let l = ((x >> (i * 12)) as usize & 0xfff) % (left + 1);
        out.push(l);
        left -= l;
    }
    out.push(left);
    out
}

/// The two NICs of a case on one fabric: BlueFlame size `bf_size`, execution deferred to
/// progress steps if `defer`.
pub fn nics(bf_size: u32, defer: bool) -> Vec<Context<Sim>> {
    let fabric = Fabric::new();
    let ctxs: Vec<_> = (0..2)
        .map(|_| {
            Context::new(Sim::on_fabric(
                &fabric,
                NicConfig {
                    bf_size,
                    ..NicConfig::default()
                },
            ))
        })
        .collect();
    for ctx in &ctxs {
        ctx.backend().nic().inject(Fault::DeferExecution(defer));
    }
    ctxs
}

pub fn doorbell_mode(mode: u8) -> DoorbellMode {
    [
        DoorbellMode::Doorbell,
        DoorbellMode::BlueFlame,
        DoorbellMode::BlueFlameLast,
        DoorbellMode::Auto,
    ][mode as usize]
}

/// The gather list of `wr` for `len` bytes in `L`: its pieces with random gaps, from an
/// offset that leaves room for `max_len` bytes.
pub fn gather(wr: &Wr, len: usize, max_len: usize) -> Vec<(usize, usize)> {
    let lens = split(len, wr.pieces as usize, wr.x);
    let mut at = L + wr.local as usize % (L_LEN - max_len - 64 * MAX_SGE);
    let mut list = Vec::new();
    for (i, l) in lens.into_iter().enumerate() {
        list.push((at, l));
        at += l + ((wr.y >> (8 * i)) & 63) as usize;
    }
    list
}

/// Entries of `lens` bytes back to back from `area`.
pub fn back_to_back(area: usize, lens: Vec<usize>) -> Vec<(usize, usize)> {
    let mut at = area;
    lens.into_iter()
        .map(|l| {
            at += l;
            (at - l, l)
        })
        .collect()
}

/// The scatter/gather entries of `list` (offset, length) in `mr`.
pub fn entries(mr: &MemoryRegion<Sim>, list: &[(usize, usize)]) -> Vec<Sge> {
    list.iter().map(|&(o, l)| mr.sge(o, l as u32)).collect()
}

/// The driver's data for `source`; gather entries in `mr`, kept in `sges`.
pub fn data_of<'a>(source: &'a Source, mr: &MemoryRegion<Sim>, sges: &'a mut Vec<Sge>) -> Data<'a> {
    match source {
        Source::Inline(b) => Data::Inline(b),
        Source::Gather(list) => {
            *sges = entries(mr, list);
            Data::Sges(sges)
        }
    }
}

/// `c` without the source QP, SLID and their flags: defined for UD only, not compared on
/// connected QPs.
pub fn without_sender(c: Completion) -> Completion {
    c.with_src_qp(0).with_slid(0).with_ud_flags(0)
}

/// The local data of a send as the reference sees it.
#[derive(Clone, Debug)]
pub enum Source {
    Inline(Vec<u8>),
    /// (offset in the MR, length) entries, zero-length ones included.
    Gather(Vec<(usize, usize)>),
}

/// What the reference executes for one posted WR.
#[derive(Clone, Debug)]
pub struct RefOp {
    pub wr_id: u64,
    pub op: SendOp,
    pub source: Source,
    /// Offset of the remote target in the peer's MR.
    pub remote: usize,
    pub signaled: bool,
    pub solicited: bool,
}

#[derive(Default)]
pub struct RefQp {
    pub mem: Vec<u8>,
    pub ops: VecDeque<RefOp>,
    pub recvs: VecDeque<(u64, Vec<(usize, usize)>)>,
    pub sends: Vec<Completion>,
    pub recv_done: Vec<Completion>,
}

pub fn needs_receive(op: &SendOp) -> bool {
    matches!(op, SendOp::Send | SendOp::SendImm(_) | SendOp::WriteImm(..))
}

/// Carry-cut addition of masked fetch-and-add: no carry out of a bit set in `boundary`.
pub fn masked_add(mem: u64, add: u64, boundary: u64, bits: u32) -> u64 {
    let (mut out, mut carry) = (0u64, 0u64);
    for i in 0..bits {
        let (a, b) = ((mem >> i) & 1, (add >> i) & 1);
        out |= (a ^ b ^ carry) << i;
        carry = (a & b) | (carry & (a ^ b));
        if (boundary >> i) & 1 == 1 {
            carry = 0;
        }
    }
    out
}

/// The reference: plain memory and queues, one step per WR in posting order.
pub struct Reference {
    pub qps: Vec<RefQp>,
    pub qpns: Vec<u32>,
}

impl Reference {
    pub fn read(&self, q: usize, off: usize, len: usize) -> Vec<u8> {
        self.qps[q].mem[off..off + len].to_vec()
    }

    pub fn gather(&self, q: usize, source: &Source) -> Vec<u8> {
        match source {
            Source::Inline(b) => b.clone(),
            Source::Gather(list) => list.iter().flat_map(|&(o, l)| self.read(q, o, l)).collect(),
        }
    }

    pub fn scatter(&mut self, q: usize, list: &[(usize, usize)], data: &[u8]) {
        let mut at = 0;
        for &(o, l) in list {
            let n = l.min(data.len() - at);
            self.qps[q].mem[o..o + n].copy_from_slice(&data[at..at + n]);
            at += n;
        }
        assert_eq!(at, data.len(), "reference: receive too small");
    }

    pub fn atomic(&mut self, p: usize, off: usize, op: &SendOp) -> (u64, u32) {
        let word = |m: &[u8], n: usize| {
            let mut b = [0u8; 8];
            b[..n].copy_from_slice(&m[off..off + n]);
            u64::from_ne_bytes(b)
        };
        let mem = &mut self.qps[p].mem;
        let (old, new, n) = match *op {
            SendOp::CompareSwap { compare, swap, .. } => {
                let old = word(mem, 8);
                (old, if old == compare { swap } else { old }, 8)
            }
            SendOp::FetchAdd { add, .. } => {
                let old = word(mem, 8);
                (old, old.wrapping_add(add), 8)
            }
            SendOp::MaskedCompareSwap32 { args, .. } => {
                let old = word(mem, 4) as u32;
                let new = if (old ^ args.compare) & args.compare_mask == 0 {
                    (old & !args.swap_mask) | (args.swap & args.swap_mask)
                } else {
                    old
                };
                (old as u64, new as u64, 4)
            }
            SendOp::MaskedCompareSwap64 { args, .. } => {
                let old = word(mem, 8);
                let new = if (old ^ args.compare) & args.compare_mask == 0 {
                    (old & !args.swap_mask) | (args.swap & args.swap_mask)
                } else {
                    old
                };
                (old, new, 8)
            }
            SendOp::MaskedFetchAdd32 {
                add,
                field_boundary,
                ..
            } => {
                let old = word(mem, 4);
                (
                    old,
                    masked_add(old, add as u64, field_boundary as u64, 32),
                    4,
                )
            }
            SendOp::MaskedFetchAdd64 {
                add,
                field_boundary,
                ..
            } => {
                let old = word(mem, 8);
                (old, masked_add(old, add, field_boundary, 64), 8)
            }
            _ => unreachable!("not an atomic: {op:?}"),
        };
        mem[off..off + n].copy_from_slice(&new.to_ne_bytes()[..n]);
        (old, n as u32)
    }

    /// Executes every op whose receive (if it needs one) has been posted.
    pub fn run(&mut self) {
        for q in 0..self.qps.len() {
            let p = q ^ 1;
            while let Some(op) = self.qps[q].ops.front().cloned() {
                if needs_receive(&op.op) && self.qps[p].recvs.is_empty() {
                    break;
                }
                self.qps[q].ops.pop_front();
                self.execute(q, p, op);
            }
        }
    }

    pub fn execute(&mut self, q: usize, p: usize, op: RefOp) {
        let mut byte_len = 0;
        let recv = |this: &mut Self, opcode, len, imm, data: Option<&[u8]>| {
            let (wr_id, list) = this.qps[p].recvs.pop_front().expect("receive");
            if let Some(data) = data {
                this.scatter(p, &list, data);
            }
            // The source QP, SLID and UD flags are defined for UD only (the rig does not
            // compare them); an RC receive carries no P_Key (the model writes 0); the SRQ
            // number the rig checks on its own: all 0 here.
            this.qps[p].recv_done.push(
                Completion::default()
                    .with_wr_id(wr_id)
                    .with_qpn(this.qpns[p])
                    .with_opcode(opcode)
                    .with_status(Status::Success)
                    .with_byte_len(len as u32)
                    .with_imm(imm)
                    .with_solicited(op.solicited),
            );
        };
        let opcode = match op.op {
            SendOp::Send | SendOp::SendImm(_) => {
                let data = self.gather(q, &op.source);
                let imm = match op.op {
                    SendOp::SendImm(i) => Some(i),
                    _ => None,
                };
                recv(self, WcOpcode::Recv, data.len(), imm, Some(&data));
                WcOpcode::Send
            }
            SendOp::Write(_) | SendOp::WriteImm(..) => {
                let data = self.gather(q, &op.source);
                self.qps[p].mem[T + op.remote..T + op.remote + data.len()].copy_from_slice(&data);
                if let SendOp::WriteImm(_, imm) = op.op {
                    recv(self, WcOpcode::RecvRdmaWithImm, data.len(), Some(imm), None);
                }
                WcOpcode::RdmaWrite
            }
            SendOp::Read(_) => {
                let Source::Gather(list) = &op.source else {
                    unreachable!()
                };
                let len = list.iter().map(|e| e.1).sum::<usize>();
                let data = self.read(p, T + op.remote, len);
                self.scatter(q, list, &data);
                byte_len = len as u32;
                WcOpcode::RdmaRead
            }
            SendOp::Nop => WcOpcode::Nop,
            ref atomic => {
                let (old, n) = self.atomic(p, T + op.remote, atomic);
                let Source::Gather(list) = &op.source else {
                    unreachable!()
                };
                // The hardware rule, not the model's: 8-byte results in host order (the
                // kernel's atomic_req_8B_endianness_mode 1), 4-byte masked results
                // big-endian (UCX's ext_atomic_arg_sizes_be; docs/model.md).
                let off = list[0].0;
                let result = match n {
                    8 => old.to_ne_bytes().to_vec(),
                    _ => (old as u32).to_be_bytes().to_vec(),
                };
                self.qps[q].mem[off..off + n as usize].copy_from_slice(&result);
                byte_len = n;
                match atomic {
                    SendOp::CompareSwap { .. } => WcOpcode::CompareSwap,
                    SendOp::FetchAdd { .. } => WcOpcode::FetchAdd,
                    SendOp::MaskedCompareSwap32 { .. } | SendOp::MaskedCompareSwap64 { .. } => {
                        WcOpcode::MaskedCompareSwap
                    }
                    _ => WcOpcode::MaskedFetchAdd,
                }
            }
        };
        if op.signaled {
            self.qps[q].sends.push(
                Completion::default()
                    .with_wr_id(op.wr_id)
                    .with_qpn(self.qpns[q])
                    .with_opcode(opcode)
                    .with_byte_len(byte_len),
            );
        }
    }
}
