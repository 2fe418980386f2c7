//! CQE compression on the poll side: a compressed entry is expanded **in place** into the
//! normal CQEs it stands for, which the poll loop then parses like any other.
//!
//! The loop's common case is untouched: a compressed entry has format 3 in `op_own`, so it
//! never passes the one-compare test for a successful requester CQE and reaches the
//! out-of-line parse, where this module runs once per block (or enhanced slot). Writing the
//! expanded entries back into the ring is what libmlx5's out-of-tree expansion and the
//! kernel do for the basic layout: every consumed slot then holds a valid CQE with the
//! owner bit of its pass, so no stale mini-CQE array or unwritten hole can look like a new
//! CQE after the ring wraps, and a poll that stops in the middle of a block resumes at the
//! next expanded entry with no state.
//!
//! * **Basic** (DPDK `mlx5_rx_poll_len`, prm-facts §7.7): the title's `byte_cnt` is the
//!   number N of completions; mini-CQE arrays of 8 sit at title+1, +8, +16, ...;
//!   completion i is the title with `byte_cnt` (requester also `wqe_counter` and the send
//!   opcode) from mini-CQE i, and for a responder `wqe_counter` = title's + i.
//! * **Enhanced** (UCX `uct_ib_mlx5_iface_cqe_unzip*`, kernel 2c925db0a7d6): the title is
//!   the normal CQE before the first compressed slot (kept while the session goes on);
//!   each slot holds `(op_own >> 4) + 1` ≤ 7 mini-CQEs and takes as many CQ indices, and
//!   carries the validity iteration count `(ci >> log2(cqe_cnt)) & 0xff` in byte 62. On a
//!   CQ of this layout the poll finds new entries by that byte alone, as the kernel, DPDK
//!   and UCX do (`CompletionQueue::poll_enhanced`), and never reads the owner bit, which
//!   no public source says the device writes in a compressed slot.
//!
//! With 128-byte CQEs every title, array and slot is the entry's `cqe64`, its last 64 bytes
//! (the kernel's `mlx5_cqwq_get_wqe`), which is where the driver reads every entry anyway: the
//! expansion is the same.
//!
//! Hostile blocks are reported as [`Status::BadCompression`](crate::Status) completions
//! that consume only the entry they were found in and retire nothing: a title announcing
//! no completions, a count larger than the CQ (or an enhanced slot announcing more than 7),
//! or an enhanced slot with no title before it. (An enhanced slot whose validity count is
//! not its index's is not new: the poll stops before it.)

use crate::prm::{
    basic_array_slot, enhanced_count, validity_count, Be16, Be32, Cqe64, CqeCompLayout, CqeFormat,
    CqeOpcode, MiniCqe, OpOwn, ENHANCED_MINIS_PER_SLOT, MINI_CQES_PER_ARRAY,
};
use crate::ring::CqBuf;

pub use crate::types::CqeCompression;

/// What was wrong with a compressed entry (see the module docs). Nothing was retired; the
/// entry was consumed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum BadCompression {
    /// A basic title whose count is 0.
    NoMinis,
    /// A basic title counting more completions than the CQ has entries, or an enhanced
    /// slot announcing more than 7 mini-CQEs.
    TooMany(u32),
    /// An enhanced compressed slot without a normal CQE before it (nor a session going on).
    NoTitle,
    /// A compressed entry on a CQ created without compression.
    NotEnabled,
}

/// A CQ's expansion state.
#[derive(Debug)]
pub(crate) struct Unzip {
    buf: CqBuf,
    layout: CqeCompLayout,
    log_cnt: u32,
    /// Enhanced: the session's title, the CQ index its next slot must have, and the
    /// responder `wqe_counter` of its next completion.
    title: Option<Cqe64>,
    next: u32,
    counter: u16,
}

impl Unzip {
    pub(crate) fn new(buf: CqBuf, cqe_cnt: u32, layout: CqeCompLayout) -> Unzip {
        Unzip {
            buf,
            layout,
            log_cnt: cqe_cnt.trailing_zeros(),
            title: None,
            next: 0,
            counter: 0,
        }
    }

    /// Expands the compressed entry at consumer index `ci` (its `op_own` given) into
    /// normal CQEs starting at `ci`; on `Err` nothing was written. Returns the title's QPN
    /// for the report either way.
    pub(crate) fn expand(&mut self, ci: u32, op_own: u8) -> (u32, Result<(), BadCompression>) {
        match self.layout {
            CqeCompLayout::Basic => self.basic(ci),
            CqeCompLayout::Enhanced => self.enhanced(ci, op_own),
        }
    }

    fn basic(&mut self, ci: u32) -> (u32, Result<(), BadCompression>) {
        let title = self.buf.entry(ci).read();
        let qpn = title.sop_drop_qpn.get() & 0xff_ffff;
        let n = title.byte_cnt.get();
        if n == 0 {
            return (qpn, Err(BadCompression::NoMinis));
        }
        if n > 1 << self.log_cnt {
            return (qpn, Err(BadCompression::TooMany(n)));
        }
        let requester = is_requester(&title);
        let mut done = 0;
        let mut array = 0;
        while done < n {
            let minis = self
                .buf
                .entry(ci.wrapping_add(basic_array_slot(array)))
                .read_minis();
            let take = (n - done).min(MINI_CQES_PER_ARRAY as u32) as usize;
            for mini in &minis[..take] {
                let counter = title.wqe_counter.get().wrapping_add(done as u16);
                self.put(ci.wrapping_add(done), &title, mini, requester, counter);
                done += 1;
            }
            array += 1;
        }
        (qpn, Ok(()))
    }

    /// The enhanced slot at `ci`, whose validity count the poll found to be its index's.
    fn enhanced(&mut self, ci: u32, op_own: u8) -> (u32, Result<(), BadCompression>) {
        if self.next != ci || self.title.is_none() {
            self.title = self.fresh_title(ci);
        }
        let Some(title) = self.title else {
            return (0, Err(BadCompression::NoTitle));
        };
        let qpn = title.sop_drop_qpn.get() & 0xff_ffff;
        let k = enhanced_count(op_own);
        if k > ENHANCED_MINIS_PER_SLOT {
            return (qpn, Err(BadCompression::TooMany(k)));
        }
        let minis = self.buf.entry(ci).read_minis();
        let requester = is_requester(&title);
        for (i, mini) in minis[..k as usize].iter().enumerate() {
            self.put(
                ci.wrapping_add(i as u32),
                &title,
                mini,
                requester,
                self.counter,
            );
            self.counter = self.counter.wrapping_add(1);
        }
        self.next = ci.wrapping_add(k);
        (qpn, Ok(()))
    }

    /// The normal CQE before index `ci`, if it can title a session: a success of the pass
    /// its index says (validity count), not compressed.
    fn fresh_title(&mut self, ci: u32) -> Option<Cqe64> {
        let at = ci.wrapping_sub(1);
        let title = self.buf.entry(at).read();
        let bits = OpOwn::from_bits(title.op_own);
        let success = CqeOpcode::from_u8(bits.opcode())
            .is_some_and(|op| op as u8 <= CqeOpcode::RespSendInv as u8);
        let ok = ci != 0
            && success
            && bits.format() == CqeFormat::Normal
            && title.signature == validity_count(at, self.log_cnt);
        self.counter = title.wqe_counter.get().wrapping_add(1);
        ok.then_some(title)
    }

    /// Writes completion `mini` of the block titled `title` as a normal CQE at index `at`.
    fn put(&self, at: u32, title: &Cqe64, mini: &MiniCqe, requester: bool, counter: u16) {
        let mut cqe = *title;
        cqe.byte_cnt = mini.byte_cnt;
        if requester {
            cqe.wqe_counter = Be16::new(mini.wqe_counter());
            let qpn = title.sop_drop_qpn.get() & 0xff_ffff;
            cqe.sop_drop_qpn = Be32::new(u32::from(mini.s_wqe_opcode()) << 24 | qpn);
        } else {
            cqe.wqe_counter = Be16::new(counter);
            // Bytes 0..4 of a responder mini-CQE are the RX hash, or with the checksum
            // formats the checksum and stride index (kernel `mlx5_mini_cqe8`); RDMA
            // completions read none of them, so they go where the hash goes whatever the
            // format.
            cqe.rss_hash_result = Be32::new(mini.rx_hash_result());
        }
        cqe.signature = validity_count(at, self.log_cnt);
        // Opcode and SE of the title, normal format, the owner bit of `at`'s pass.
        cqe.op_own = title.op_own & 0xf2 | ((at >> self.log_cnt) & 1) as u8;
        self.buf.entry(at).write(&cqe);
    }
}

fn is_requester(title: &Cqe64) -> bool {
    OpOwn::from_bits(title.op_own).opcode() == CqeOpcode::Req as u8
}
