//! Completion queues and shared receive queues in the public API.

use crate::nic::{aligned, insert, slot, Nic, LOG_MAX_CQE, LOG_MAX_QP_WR};
use crate::state::{Cq, Srq, XrcSrq, CQN_BASE, CQ_UAR, PDN_BASE, SRQN_BASE, XRCDN_BASE};
use crate::types::{CqInfo, CqParams, HwError, SrqParams, XrcSrqParams, ZipLayout};

impl Nic {
    /// Create a completion queue.
    ///
    /// # Safety
    /// `buf` (`cqe_size << log_cqe_cnt` bytes) and `dbrec` (8 bytes) must be valid,
    /// writable process memory until the CQ is destroyed.
    pub unsafe fn create_cq(&self, p: &CqParams) -> Result<CqInfo, HwError> {
        if p.cqe_size != 64 && p.cqe_size != 128 {
            return Err(HwError::InvalidParam("cqe_size"));
        }
        if p.log_cqe_cnt > LOG_MAX_CQE {
            return Err(HwError::InvalidParam("log_cqe_cnt"));
        }
        aligned(p.buf, 64)?;
        aligned(p.dbrec, 4)?;
        self.with(|n| {
            if let Some(z) = p.compression {
                if p.cqe_size != 64 && !n.cfg.cqe_zip.compress_128 {
                    return Err(HwError::InvalidParam("cqe_compression_128"));
                }
                if z.layout == ZipLayout::Enhanced && !n.cfg.cqe_zip.enhanced {
                    return Err(HwError::InvalidParam("cqe_comp_layout"));
                }
            }
            if let Some(ch) = p.channel {
                n.channel(ch).ok_or(HwError::NoSuchObject)?.refs += 1;
            }
            let cqn = CQN_BASE + n.cqs.len() as u32;
            n.cqs.push(Some(Cq {
                cqn,
                buf: p.buf,
                log_cnt: p.log_cqe_cnt,
                cqe_size: p.cqe_size,
                dbrec: p.dbrec,
                overrun_ignore: p.overrun_ignore,
                channel: p.channel,
                pi: 0,
                armed: None,
                fired_sn: None,
                error: false,
                refs: 0,
                zip: p.compression,
                burst: Vec::new(),
                session: None,
            }));
            Ok(CqInfo { cqn, uar: CQ_UAR })
        })
    }

    /// Destroy a CQ; `Busy` while a QP uses it.
    pub fn destroy_cq(&self, cqn: u32) -> Result<(), HwError> {
        self.with(|n| {
            let cq = slot(&mut n.cqs, cqn, CQN_BASE)?;
            if cq.refs != 0 {
                return Err(HwError::Busy);
            }
            if let Some(ch) = cq.channel.and_then(|ch| n.channel(ch)) {
                ch.refs -= 1;
            }
            n.cqs[(cqn - CQN_BASE) as usize] = None;
            Ok(())
        })
    }

    /// Shrink a CQ's ring (to force an overrun in tests). Larger sizes are refused.
    pub fn shrink_cq(&self, cqn: u32, log_cqe_cnt: u8) -> Result<(), HwError> {
        self.with(|n| {
            let c = slot(&mut n.cqs, cqn, CQN_BASE)?;
            if log_cqe_cnt > c.log_cnt {
                return Err(HwError::InvalidParam("log_cqe_cnt"));
            }
            c.log_cnt = log_cqe_cnt;
            Ok(())
        })
    }

    /// A copy of the `cqe64` of entries `first..first + count` (indices taken mod the size)
    /// of CQ `cqn`, as host memory holds them now: what the NIC wrote and software left
    /// there (the slots a compressed block takes but does not write show what was there
    /// before). For tools and tests; a driver polls its own memory.
    pub fn cq_entries(&self, cqn: u32, first: u32, count: u32) -> Result<Vec<[u8; 64]>, HwError> {
        self.with(|n| {
            let c = slot(&mut n.cqs, cqn, CQN_BASE)?;
            let mask = (1u32 << c.log_cnt) - 1;
            let size = u64::from(c.cqe_size);
            Ok((0..count)
                .map(|i| {
                    let mut e = [0u8; 64];
                    let at = c.buf + u64::from(first.wrapping_add(i) & mask) * size;
                    crate::host::read(at + size - 64, &mut e);
                    e
                })
                .collect())
        })
    }

    /// Create a shared receive queue.
    ///
    /// # Safety
    /// `buf` (`1 << (log_wqe_cnt + log_stride)` bytes) and `dbrec` (4 bytes) must be valid
    /// process memory until the SRQ is destroyed.
    pub unsafe fn create_srq(&self, p: &SrqParams) -> Result<u32, HwError> {
        // SAFETY: the caller's contract is this function's.
        unsafe { self.new_srq(p, None) }
    }

    /// [`Nic::create_srq`], as an XRC SRQ when `xrc` is given: its domain and CQ must
    /// exist, and it holds them (and its PD) until it is destroyed (`ib_create_srq_user`).
    ///
    /// # Safety
    /// As for [`Nic::create_srq`].
    pub(super) unsafe fn new_srq(
        &self,
        p: &SrqParams,
        xrc: Option<&XrcSrqParams>,
    ) -> Result<u32, HwError> {
        if p.log_wqe_cnt > LOG_MAX_QP_WR {
            return Err(HwError::InvalidParam("log_wqe_cnt"));
        }
        if !(5..=10).contains(&p.log_stride) {
            return Err(HwError::InvalidParam("log_stride"));
        }
        aligned(p.buf, 16)?;
        aligned(p.dbrec, 4)?;
        self.with(|n| {
            slot(&mut n.pds, p.pdn, PDN_BASE)?;
            let xrc = match xrc {
                Some(x) => {
                    let cq = n.cq_index(x.cqn).ok_or(HwError::NoSuchObject)?;
                    *slot(&mut n.xrcds, x.xrcd, XRCDN_BASE)? += 1;
                    n.cq(cq).refs += 1;
                    Some(XrcSrq {
                        xrcd: x.xrcd,
                        cq,
                        user_index: x.user_index & 0xff_ffff,
                    })
                }
                None => None,
            };
            *slot(&mut n.pds, p.pdn, PDN_BASE)? += 1;
            let srq = Srq {
                pdn: p.pdn,
                buf: p.buf,
                log_cnt: p.log_wqe_cnt,
                log_stride: p.log_stride,
                dbrec: p.dbrec,
                known_pi: 0,
                consumed: 0,
                head: 0,
                refs: 0,
                xrc,
            };
            Ok(insert(&mut n.srqs, srq, SRQN_BASE))
        })
    }

    /// Destroy an SRQ (basic or XRC); `Busy` while a QP uses it. XRC targets hold no XRC
    /// SRQ: a later request naming a destroyed one names no XRC SRQ.
    pub fn destroy_srq(&self, srqn: u32) -> Result<(), HwError> {
        self.with(|n| {
            let s = slot(&mut n.srqs, srqn, SRQN_BASE)?;
            if s.refs != 0 {
                return Err(HwError::Busy);
            }
            let (pdn, xrc) = (s.pdn, s.xrc);
            n.srqs[(srqn - SRQN_BASE) as usize] = None;
            if let Some(x) = xrc {
                n.cq(x.cq).refs -= 1;
                *slot(&mut n.xrcds, x.xrcd, XRCDN_BASE)? -= 1;
            }
            *slot(&mut n.pds, pdn, PDN_BASE)? -= 1;
            Ok(())
        })
    }
}
