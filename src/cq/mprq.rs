//! A striding (multi-packet) receive work queue's data path: its ring of 32-byte WQEs
//! (`mlx5_mprq_wqe`), its doorbell record, and the parse of its CQEs (DPDK's
//! `mlx5_rx_burst_mprq`, the kernel's `mlx5e_handle_rx_cqe_mpwrq`): `byte_cnt` bits 15..0
//! the frame's length, 29..16 the strides it took, 31 a filler (the strides to the WQE's
//! end skipped, no frame: consumed here); `wqe_id` the WQE's 16-bit counter,
//! `wqe_counter` the first stride. The queue is cyclic: a WQE is posted again (its
//! counter in the doorbell record moved on) once all its strides are consumed and the
//! frames in it were handed out. Facts: `shared/docs/prm-facts-next.md` §5.2.

use core::ptr::NonNull;

use crate::mmio::DbRec;
use crate::prm::{Be32, Cqe64, CqeOpcode, ErrCqe, EthCqe, MprqByteCnt, MprqWqe, OpOwn, CQE_SIZE};
use crate::ring::Ring;

use super::WcError;

/// Why [`StridingWq::poll`](crate::StridingWq::poll) stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StridingError {
    /// An error CQE: the work queue is in error (e.g. LOCAL_LENGTH_ERR for a frame larger
    /// than a whole WQE), the syndrome says why.
    Completion(crate::cq::WcError),
    /// A CQE that cannot be this queue's: another WQE than the one being filled, a stride
    /// other than its first unused one, strides past the WQE's end or fewer than the
    /// frame needs, an opcode a striding queue never gets. Consumed, nothing handed out.
    BadCqe(&'static str),
}

impl core::fmt::Display for StridingError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            StridingError::Completion(e) => write!(f, "striding receive failed: {e}"),
            StridingError::BadCqe(why) => write!(f, "malformed striding CQE: {why}"),
        }
    }
}

impl std::error::Error for StridingError {}
/// A striding work queue's ring as the device hands it over (its memory the backend's).
#[derive(Debug)]
pub struct WqDesc {
    /// The ring of WQEs (`wqe_cnt` × 32 bytes).
    pub buf: NonNull<u8>,
    /// WQEs in the ring (a power of two).
    pub wqe_cnt: u32,
    /// The doorbell record: its word 0 is the receive counter.
    pub dbrec: NonNull<Be32>,
}

/// One frame a striding work queue received, lent out for the time of the call that
/// hands it over.
#[derive(Clone, Copy, Debug)]
pub struct StridedFrame<'a> {
    /// The frame, where the device wrote it.
    pub bytes: &'a [u8],
    /// Its Ethernet fields.
    pub eth: EthCqe,
    /// The WQE's counter (`wqe_id`).
    pub wqe: u16,
    /// The first stride it took.
    pub stride: u16,
    /// The strides it took.
    pub strides: u16,
}

/// What one CQE of a striding queue says, checked against the queue's state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum MprqEvent {
    /// A frame of `len` bytes at byte `offset` of the queue's buffers.
    Frame {
        /// Byte offset in the buffers (`two_byte_shift` included).
        offset: usize,
        /// Its length.
        len: usize,
    },
    /// A filler: strides skipped.
    Filler,
}

/// The data-path state of a striding work queue.
#[derive(Debug)]
pub(crate) struct MprqQueue {
    wqe_cnt: u32,
    log_stride: u8,
    strides: u32,
    shift: usize,
    dbrec: DbRec,
    /// WQEs finished so far (the counter of the WQE being filled).
    head: u32,
    /// Strides of the WQE being filled that are used.
    used: u32,
    /// The CQE being handed out: strides it took, to be consumed once its frame is given
    /// back.
    pending: u32,
}

impl MprqQueue {
    /// Writes every WQE of the ring (WQE `i` the buffer at `base + i × wqe_bytes` under
    /// `lkey`) and posts them all.
    ///
    /// # Safety
    /// `desc` must describe a live ring and record, written by nobody else, for the life
    /// of the queue.
    pub(crate) unsafe fn new(
        desc: &WqDesc,
        log_stride: u8,
        log_num_strides: u8,
        two_byte_shift: bool,
        base: u64,
        lkey: u32,
    ) -> MprqQueue {
        // SAFETY: forwarded from this function's contract.
        let ring = unsafe { Ring::new(desc.buf, desc.wqe_cnt as usize * size_of::<MprqWqe>()) };
        let wqe_bytes = 1u64 << (log_stride + log_num_strides);
        for i in 0..desc.wqe_cnt {
            let wqe = MprqWqe::new(wqe_bytes as u32, lkey, base + u64::from(i) * wqe_bytes);
            let at = i as usize * size_of::<MprqWqe>();
            ring.write_ds(at, wqe.to_bytes()[..16].try_into().unwrap());
            ring.write_ds(at + 16, wqe.to_bytes()[16..].try_into().unwrap());
        }
        // SAFETY: the record of the contract.
        let dbrec = unsafe { DbRec::new(desc.dbrec) };
        dbrec.write(Be32::new(desc.wqe_cnt));
        MprqQueue {
            wqe_cnt: desc.wqe_cnt,
            log_stride,
            strides: 1 << log_num_strides,
            shift: if two_byte_shift { 2 } else { 0 },
            dbrec,
            head: 0,
            used: 0,
            pending: 0,
        }
    }

    /// Parses the CQE `bytes`: a frame to hand out (then [`MprqQueue::release`] once it
    /// was), a filler (consumed here), or why it cannot be this queue's.
    pub(crate) fn parse(
        &mut self,
        bytes: &[u8; CQE_SIZE],
    ) -> Result<(MprqEvent, EthCqe, u16, u16), StridingError> {
        let cqe = Cqe64::from_bytes(bytes);
        let op = OpOwn::from_bits(cqe.op_own).opcode();
        match CqeOpcode::from_u8(op) {
            Some(CqeOpcode::RespSend) => {}
            Some(CqeOpcode::RespErr) => {
                let err = ErrCqe::from_bytes(bytes);
                return Err(StridingError::Completion(WcError {
                    syndrome: err.syndrome,
                    vendor_syndrome: err.vendor_err_synd,
                    wqe_counter: err.wqe_counter.get(),
                }));
            }
            _ => {
                return Err(StridingError::BadCqe(
                    "an opcode a striding queue never gets",
                ))
            }
        }
        let bc = MprqByteCnt::from_bits(cqe.byte_cnt.get());
        let (wqe, stride) = (cqe.wqe_id.get(), cqe.wqe_counter.get());
        let strides = u32::from(bc.strides());
        if wqe != self.head as u16 {
            return Err(StridingError::BadCqe(
                "another WQE than the one being filled",
            ));
        }
        if u32::from(stride) != self.used {
            return Err(StridingError::BadCqe("not the WQE's first unused stride"));
        }
        if strides == 0 || self.used + strides > self.strides {
            return Err(StridingError::BadCqe("strides past the WQE's end"));
        }
        let eth = EthCqe::of(&cqe);
        if bc.filler() {
            self.consume(strides);
            return Ok((MprqEvent::Filler, eth, stride, strides as u16));
        }
        let len = usize::from(bc.length());
        let stride_bytes = 1usize << self.log_stride;
        if (self.shift + len).div_ceil(stride_bytes) > strides as usize {
            return Err(StridingError::BadCqe("a frame longer than its strides"));
        }
        let slot = (self.head & (self.wqe_cnt - 1)) as usize;
        let offset = (slot * self.strides as usize + stride as usize) * stride_bytes + self.shift;
        self.pending = strides;
        Ok((
            MprqEvent::Frame { offset, len },
            eth,
            stride,
            strides as u16,
        ))
    }

    /// The frame [`MprqQueue::parse`] handed out was given back: its strides are consumed.
    pub(crate) fn release(&mut self) {
        let strides = core::mem::take(&mut self.pending);
        self.consume(strides);
    }

    /// Marks `strides` strides of the WQE being filled used; when it is full, posts it
    /// again and moves on to the next.
    fn consume(&mut self, strides: u32) {
        self.used += strides;
        if self.used == self.strides {
            self.used = 0;
            self.head = self.head.wrapping_add(1);
            self.dbrec
                .write(Be32::new(self.head.wrapping_add(self.wqe_cnt) & 0xffff));
        }
    }

    /// The counter of the WQE being filled and its strides used.
    pub(crate) fn position(&self) -> (u32, u32) {
        (self.head, self.used)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mem::Memory;
    use proptest::prelude::*;

    fn read(mem: &Memory, at: usize, len: usize) -> Vec<u8> {
        let mut out = vec![0; len];
        mem.read(at, &mut out);
        out
    }

    fn record(mem: &Memory) -> u32 {
        u32::from_be_bytes(read(mem, 256, 4).try_into().unwrap())
    }

    /// 4 WQEs of 8 strides of 64 bytes at 0x10000, key 7, over rings in `mem`.
    fn queue(mem: &Memory) -> MprqQueue {
        let desc = WqDesc {
            buf: mem.non_null(),
            wqe_cnt: 4,
            // SAFETY: 128 bytes into a 4096-byte allocation, 4-byte aligned.
            dbrec: unsafe { mem.non_null().add(256) }.cast(),
        };
        // SAFETY: the ring and record are `mem`'s, which outlives the queue in each test.
        unsafe { MprqQueue::new(&desc, 6, 3, false, 0x10000, 7) }
    }

    /// A CQE of opcode `op` (RESP_SEND 2, RESP_ERR 14) for WQE `wqe`, stride `stride`,
    /// `byte_cnt`, in the bytes DPDK reads.
    fn cqe(op: u8, wqe: u16, stride: u16, byte_cnt: u32) -> [u8; 64] {
        let mut c = [0u8; 64];
        c[2..4].copy_from_slice(&wqe.to_be_bytes());
        c[44..48].copy_from_slice(&byte_cnt.to_be_bytes());
        c[60..62].copy_from_slice(&stride.to_be_bytes());
        c[63] = op << 4;
        c
    }

    fn bc(len: u32, strides: u32, filler: bool) -> u32 {
        len | strides << 16 | u32::from(filler) << 31
    }

    #[test]
    fn frames_fillers_and_reposts_move_through_the_ring() {
        let mem = Memory::new(4096).unwrap();
        let mut q = queue(&mem);
        // Every WQE posted at creation: the record's counter is 4; WQE 1 names its buffer.
        assert_eq!(record(&mem), 4);
        let wqe1 = read(&mem, 32, 32);
        assert_eq!(wqe1[16..20], 512u32.to_be_bytes());
        assert_eq!(wqe1[20..24], 7u32.to_be_bytes());
        assert_eq!(wqe1[24..32], (0x10000u64 + 512).to_be_bytes());
        let (ev, ..) = q.parse(&cqe(2, 0, 0, bc(100, 2, false))).unwrap();
        assert_eq!(
            ev,
            MprqEvent::Frame {
                offset: 0,
                len: 100
            }
        );
        q.release();
        let (ev, ..) = q.parse(&cqe(2, 0, 2, bc(0, 6, true))).unwrap();
        assert_eq!(ev, MprqEvent::Filler);
        // WQE 0 full: posted again, counter 5; the next frame goes to WQE 1.
        assert_eq!(q.position(), (1, 0));
        assert_eq!(record(&mem), 5);
        let (ev, ..) = q.parse(&cqe(2, 1, 0, bc(64, 1, false))).unwrap();
        assert_eq!(
            ev,
            MprqEvent::Frame {
                offset: 512,
                len: 64
            }
        );
        // Not consumed before it is given back.
        assert_eq!(q.position(), (1, 0));
        q.release();
        assert_eq!(q.position(), (1, 1));
    }

    #[test]
    fn malformed_cqes_are_refused() {
        let mem = Memory::new(4096).unwrap();
        let mut q = queue(&mem);
        let bad = |q: &mut MprqQueue, c| match q.parse(&c) {
            Err(StridingError::BadCqe(why)) => why,
            other => panic!("{other:?}"),
        };
        bad(&mut q, cqe(2, 1, 0, bc(60, 1, false)));
        bad(&mut q, cqe(2, 0, 1, bc(60, 1, false)));
        bad(&mut q, cqe(2, 0, 0, bc(60, 9, false)));
        bad(&mut q, cqe(2, 0, 0, bc(60, 0, false)));
        bad(&mut q, cqe(2, 0, 0, bc(200, 2, false)));
        bad(&mut q, cqe(0, 0, 0, bc(60, 1, false)));
        let mut err = cqe(14, 0, 0, 0);
        err[55] = 0x01;
        assert!(matches!(
            q.parse(&err),
            Err(StridingError::Completion(WcError { syndrome: 1, .. }))
        ));
        // Nothing moved.
        assert_eq!(q.position(), (0, 0));
        assert_eq!(record(&mem), 4);
    }

    proptest! {
        /// Any 64 bytes: refused, a filler inside the WQE, or a frame whose bytes lie
        /// inside the strides it claims of the WQE being filled.
        #[test]
        fn random_cqes_never_point_outside_the_wqe(
            mut bytes in any::<[u8; 64]>(),
            op in prop_oneof![Just(2u8), Just(14u8), 0..16u8],
            wqe_ok in any::<bool>(),
        ) {
            let mem = Memory::new(4096).unwrap();
            let mut q = queue(&mem);
            bytes[63] = op << 4;
            if wqe_ok {
                bytes[2..4].fill(0);
            }
            if let Ok((MprqEvent::Frame { offset, len }, _, stride, strides)) = q.parse(&bytes) {
                prop_assert!(usize::from(stride) + usize::from(strides) <= 8);
                prop_assert!(offset >= usize::from(stride) * 64);
                prop_assert!(offset + len <= (usize::from(stride) + usize::from(strides)) * 64);
            }
        }
    }
}
