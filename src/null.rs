//! The "null device": a send queue and a CQ over plain memory with [`NullUar`] as the UAR.
//!
//! Nothing executes the WQEs: [`NullQueues::complete`] writes the CQEs a device would.
//! This is what the CPU-cost benchmarks measure (post and poll cost without a device), and
//! what the data path's byte-level unit tests inspect.

use core::sync::atomic::AtomicBool;
use std::sync::Arc;

use crate::cq::{CompletionQueue, CqAttachments, CqDesc, QpEntry, RecvShared};
use crate::error::Error;
use crate::mem::Memory;
use crate::mmio::NullUar;
use crate::prm::{CqeOpcode, Opcode, CQE_SIZE, SEND_WQE_BB};
use crate::rq::RqShared;
use crate::sq::{SendQueue, SqDesc, SqShared};

/// QP number of the null device's QP.
pub const NULL_QPN: u32 = 0x1234;
/// BlueFlame half size of the null device's register.
pub const NULL_BF_SIZE: usize = 256;
/// Offset of the null device's doorbell register in its UAR page.
pub const NULL_BF_OFFSET: usize = 0x800;

/// A ready-to-post send queue and a CQ, over plain memory.
#[derive(Debug)]
pub struct NullQueues {
    /// The send queue (ready to post; its UAR is plain memory).
    pub sq: SendQueue<NullUar>,
    /// The CQ serving it.
    pub cq: CompletionQueue<NullUar>,
    cq_mem: Memory,
    cqe_cnt: u32,
    produced: u32,
    _sq_mem: Memory,
    _dbrec: Memory,
}

impl NullQueues {
    /// A send queue of `sq_wqebbs` WQEBBs and a CQ of `cqe_cnt` 64-byte entries (both
    /// powers of two), `max_inline` inline bytes and 4 SGEs.
    pub fn new(sq_wqebbs: u32, cqe_cnt: u32, max_inline: usize) -> Result<Self, Error> {
        if !sq_wqebbs.is_power_of_two() || !cqe_cnt.is_power_of_two() {
            return Err(Error::InvalidArgument("sizes must be powers of two"));
        }
        let sq_mem = Memory::new(sq_wqebbs as usize * SEND_WQE_BB)?;
        let cq_mem = Memory::new(cqe_cnt as usize * CQE_SIZE)?;
        let dbrec = Memory::new(CQE_SIZE)?;
        let sq_desc = SqDesc {
            buf: sq_mem.non_null(),
            wqe_cnt: sq_wqebbs,
            dbrec: dbrec.non_null().cast(),
            bf_offset: NULL_BF_OFFSET,
            bf_size: NULL_BF_SIZE,
            qpn: NULL_QPN,
            max_wqe_size: 1008,
            max_inline,
            max_sge: 4,
        };
        let cq_desc = CqDesc {
            buf: cq_mem.non_null(),
            cqe_cnt,
            cqe_size: CQE_SIZE,
            // SAFETY: 32 bytes into a 64-byte allocation: the CQ's two words.
            dbrec: unsafe { dbrec.non_null().add(32).cast() },
            cqn: 1,
        };
        let errored = Arc::new(AtomicBool::new(false));
        let sq_shared = Arc::new(SqShared::new(sq_wqebbs));
        let attachments = Arc::new(CqAttachments::default());
        attachments.attach(QpEntry {
            qpn: NULL_QPN,
            sq: sq_shared.clone(),
            recv: RecvShared::Rq(Arc::new(RqShared::new(1))),
            errored: errored.clone(),
        });
        // SAFETY: the memory lives in the returned value, which drops the queues first
        // (field order).
        let mut sq = unsafe { SendQueue::new(&sq_desc, NullUar::default(), sq_shared, errored) };
        sq.set_ready(true);
        // SAFETY: as above.
        let cq = unsafe { CompletionQueue::new(&cq_desc, NullUar::default(), attachments) };
        Ok(NullQueues {
            sq,
            cq,
            cq_mem,
            cqe_cnt,
            produced: 0,
            _sq_mem: sq_mem,
            _dbrec: dbrec,
        })
    }

    /// Writes the requester CQE a device would write for the WQE that starts at WQEBB
    /// counter `wqe_counter`, as opcode `opcode` of this QP (`cqe_opcode` REQ, or an error
    /// opcode with `syndrome`).
    pub fn complete(
        &mut self,
        wqe_counter: u16,
        opcode: Opcode,
        cqe_opcode: CqeOpcode,
        syndrome: u8,
    ) {
        let mut cqe = [0u8; CQE_SIZE];
        let qpn_word = ((opcode as u32) << 24 | NULL_QPN).to_be_bytes();
        cqe[55] = syndrome;
        cqe[56..60].copy_from_slice(&qpn_word);
        cqe[60..62].copy_from_slice(&wqe_counter.to_be_bytes());
        let owner = ((self.produced / self.cqe_cnt) & 1) as u8;
        cqe[63] = (cqe_opcode as u8) << 4 | owner;
        self.write_raw_cqe(&cqe);
    }

    /// Writes 64 arbitrary bytes as the next CQE (byte 63, `op_own`, last), as a device
    /// (or a hostile one) would.
    pub fn write_raw_cqe(&mut self, cqe: &[u8; CQE_SIZE]) {
        let offset = (self.produced % self.cqe_cnt) as usize * CQE_SIZE;
        self.cq_mem.write(offset, &cqe[..CQE_SIZE - 1]);
        self.cq_mem
            .write(offset + CQE_SIZE - 1, &cqe[CQE_SIZE - 1..]);
        self.produced = self.produced.wrapping_add(1);
    }

    /// CQEs written so far.
    pub fn produced(&self) -> u32 {
        self.produced
    }
}
