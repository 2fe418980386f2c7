//! Decoding of CPU writes to UAR pages: 8-byte send doorbells, 64-byte BlueFlame chunks
//! and CQ arm doorbells (prm-facts §6.2–§6.4, §7.8).

use crate::cq::arm;
use crate::pcie::Purpose;
use crate::sq::doorbell;
use crate::state::{World, BF_OFFSET, CQ_DOORBELL};
use crate::wqe::BB;

/// Size of a doorbell write.
const DB_SIZE: usize = 8;

/// One MMIO write TLP to UAR page `uar` of NIC `n`. Malformed writes are counted in
/// `Stats::bad_mmio` and otherwise ignored.
#[inline]
pub(crate) fn write(w: &mut World, n: usize, uar: u32, off: u32, data: &[u8]) {
    let nic = &mut w.nics[n];
    let len = data.len();
    let purpose = match (off, len) {
        (CQ_DOORBELL, DB_SIZE) => Purpose::CqArm,
        (_, BB) => Purpose::BlueFlame,
        _ => Purpose::Doorbell,
    };
    let qp = nic.uars.get(uar as usize).and_then(|u| u.qp);
    nic.mmio(qp, len as u32, purpose);
    if uar as usize >= nic.uars.len() {
        nic.stats.bad_mmio += 1;
        return;
    }
    if purpose == Purpose::CqArm {
        arm(nic, uar, data);
        return;
    }
    let bf = nic.cfg.bf_size;
    let reg_len = (2 * bf).max(DB_SIZE as u32);
    let rel = off.wrapping_sub(BF_OFFSET);
    let Some(qpi) = qp.filter(|_| rel < reg_len) else {
        nic.stats.bad_mmio += 1;
        return;
    };
    // `bf_size` is a power of two on every device (no division per doorbell then).
    let half_start = match bf {
        0 => rel == 0,
        _ if bf.is_power_of_two() => rel & (bf - 1) == 0,
        _ => rel % bf == 0,
    };
    match len {
        DB_SIZE if half_start => doorbell(w, n, qpi, data, None),
        BB if bf != 0 && rel % BB as u32 == 0 => {
            let (half, chunk) = ((rel / bf) as usize, ((rel % bf) / BB as u32) as usize);
            blueflame(w, n, uar as usize, qpi, half, chunk, data);
        }
        _ => nic.stats.bad_mmio += 1,
    }
}

/// Assemble a BlueFlame copy; a complete one rings the doorbell with the WQE bytes.
fn blueflame(
    w: &mut World,
    n: usize,
    uar: usize,
    qpi: usize,
    half: usize,
    chunk: usize,
    data: &[u8],
) {
    let nic = &mut w.nics[n];
    nic.stats.bf_writes += 1;
    let bf = nic.cfg.bf_size as usize;
    let h = &mut nic.uars[uar].halves[half];
    let mut incomplete = 0;
    if chunk == 0 {
        incomplete += u64::from(h.got != 0);
        h.got = 0;
        let bytes = usize::from(data[7] & 0x3f) * 16;
        if bytes == 0 || bytes > bf {
            nic.stats.bf_incomplete += incomplete + 1;
            return;
        }
        h.need = bytes.div_ceil(BB) as u32;
    } else if h.got as usize != chunk {
        h.got = 0;
        nic.stats.bf_incomplete += 1;
        return;
    }
    h.buf[chunk * BB..(chunk + 1) * BB].copy_from_slice(data);
    h.got += 1;
    nic.stats.bf_incomplete += incomplete;
    if h.got < h.need {
        return;
    }
    h.got = 0;
    let len = usize::from(h.buf[7] & 0x3f) * 16;
    // Lend the half's buffer to the doorbell (no copy); a chunk cannot arrive meanwhile.
    let wqe = std::mem::take(&mut h.buf);
    let keep = if nic.faults.drop_bf {
        nic.stats.bf_dropped += 1;
        false
    } else if nic.link.bf_evicted() {
        // Gone from the NIC before use: the doorbell fetches the WQE from the ring.
        nic.stats.bf_evicted += 1;
        false
    } else {
        true
    };
    doorbell(w, n, qpi, &wqe[..DB_SIZE], keep.then_some(&wqe[..len]));
    w.nics[n].uars[uar].halves[half].buf = wqe;
}
