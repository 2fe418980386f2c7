//! CQE compression ("zipping", prm-facts-next §4): CQEs of one CQ that are ready together
//! are held for the rest of the burst (the doorbell or `progress` call that produced them)
//! and then written as compressed blocks, in the basic or the enhanced layout.
//!
//! * A block ("session") is a run of CQEs of one QP with the same opcode that differ only
//!   where a mini-CQE has room: requester CQEs in `wqe_counter`, send opcode and
//!   `byte_cnt`; responder CQEs in `byte_cnt`, with `wqe_counter`s that follow each other
//!   (a responder mini-CQE has no counter: software adds the index). Error CQEs never
//!   compress (UCX asserts none in a block) and end a run, as does any other difference
//!   ("almost identical" CQEs, DPDK's RFC for the flow-tag formats).
//! * Basic layout (DPDK `mlx5_rx_poll_len`, kernel `MLX5_MINI_CQE_ARRAY_SIZE`): the title at
//!   the producer index with `byte_cnt` = N and format 3, arrays of 8 mini-CQEs at
//!   title+1, +8, +16, ...; the block takes N indices and the other slots are not written.
//! * Enhanced layout (kernel 2c925db0a7d6, UCX `uct_ib_mlx5_iface_cqe_unzip*`): the first
//!   CQE of the run is written whole (the title), then slots of up to 7 mini-CQEs, each
//!   taking as many indices, `op_own` bits 7..4 the count − 1; every CQE of the CQ carries
//!   the validity iteration count in byte 62. The model also writes the owner bit there
//!   (nothing public says whether ConnectX does; the kernel and UCX look only at byte 62).
//! * A run of one CQE, or a policy that does not compress now, writes CQEs whole.
//! * Sessions (enhanced layout): with `ZipConfig::sessions_span_bursts`, the last block
//!   (or lone whole CQE) of a CQ stays open after its burst; a later burst whose first
//!   CQEs could have joined it, with nothing written to the CQ in between, continues it in
//!   new slots without a new title (UCX keeps the title while compressed slots follow each
//!   other). Any whole CQE written to the CQ ends the session.
//! * 128-byte CQEs (`ZipConfig::compress_128`): every title, array and slot is the entry's
//!   `cqe64`, its last 64 bytes (kernel `mlx5_cqwq_get_wqe`: "for 128B CQEs the data is in
//!   the last 64B", which `mlx5e_read_mini_arr_slot` reads the arrays through; DPDK's
//!   `struct mlx5_cqe` pads 64 bytes before them); the first half is not written.

use crate::cq::{claim, lost, put, validity, write_now};
use crate::cqe::{cqe_op, Cqe};
use crate::state::{NicState, Session};
use crate::types::{ZipLayout, ZipPolicy};

/// Mini-CQEs in one basic array (`MLX5_MINI_CQE_ARRAY_SIZE`).
const ARRAY: usize = 8;
/// Mini-CQEs in one enhanced slot at most.
const ENHANCED_SLOT: usize = 7;
/// `op_own` format bits of a compressed slot.
const COMPRESSED: u8 = 3 << 2;

/// Holds `cqe` for the end of the burst if CQ index `cq` compresses now; false if the
/// caller must write it at once (the held CQEs of the CQ, written first, keep the order).
pub(crate) fn hold(nic: &mut NicState, cq: usize, qp: Option<usize>, cqe: &Cqe) -> bool {
    let now = match nic.cfg.cqe_zip.policy {
        ZipPolicy::EveryBurst => true,
        ZipPolicy::UnderBackpressure => nic.faults.backpressure,
    };
    // A CQE carrying scattered data is written whole: a mini-CQE has no room for the data
    // and no public source says how a block would carry it (docs/model.md). Ethernet
    // receive CQEs too: their mini-CQE formats (hash, checksum, stride index) are not
    // modelled.
    if !now || cqe.is_error() || cqe.scattered.is_some() || cqe.eth.is_some() {
        close(nic, cq);
        return false;
    }
    let c = nic.cq(cq);
    if c.burst.is_empty() {
        nic.bursts.push(cq);
        nic.note_after_lock();
    }
    nic.cq(cq).burst.push((qp, *cqe));
    true
}

/// Writes every CQE held in this burst (the end of a doorbell, `progress` or slow-path
/// call).
pub(crate) fn close_all(nic: &mut NicState) {
    while let Some(cq) = nic.bursts.pop() {
        close(nic, cq);
    }
}

fn close(nic: &mut NicState, cq: usize) {
    let Some(c) = nic.cqs.get_mut(cq).and_then(Option::as_mut) else {
        return;
    };
    let (Some(zip), burst) = (c.zip, std::mem::take(&mut c.burst)) else {
        return;
    };
    let max = usize::from(nic.cfg.cqe_zip.max_num.max(2));
    let mut rest = &burst[..];
    while let Some(&(qp, first)) = rest.first() {
        let open = session(nic, cq, qp, &first, max);
        // A new block's first CQE is its title (position 0); an open session's next
        // completion has position `len`.
        let (title, base, start) = open.map_or((first, 0, 1), |s| (s.title, s.len, 0));
        let n = start
            + rest[start..]
                .iter()
                .take(max - base - start)
                .enumerate()
                .take_while(|(i, (q, next))| *q == qp && joins(&title, next, base + start + i))
                .count();
        let run: Vec<Cqe> = rest[..n].iter().map(|(_, c)| *c).collect();
        let written = match (open, n, zip.layout) {
            (Some(_), _, _) => slots(nic, cq, qp, &run),
            (None, 1, _) => write_now(nic, cq, qp, &first),
            (None, _, ZipLayout::Basic) => basic(nic, cq, qp, &run),
            (None, _, ZipLayout::Enhanced) => enhanced(nic, cq, qp, &run),
        };
        let enhanced_session = written && zip.layout == ZipLayout::Enhanced;
        if enhanced_session && base + start == 1 && n > start {
            // The session's first mini-CQE: its block begins.
            nic.stats.zip_blocks += 1;
        }
        let c = nic.cq(cq);
        c.session = enhanced_session.then_some(Session {
            qp,
            title,
            len: base + n,
            next_pi: c.pi,
        });
        if !written {
            if let Some(q) = qp {
                lost(nic, q);
            }
        }
        rest = &rest[n..];
    }
    if !nic.cfg.cqe_zip.sessions_span_bursts {
        nic.cq(cq).session = None;
    }
}

/// The session CQE `first` of QP `qp` continues on CQ index `cq`, if any: the CQ's last
/// session, with nothing written after it, not full, whose next completion `first` can be.
fn session(
    nic: &mut NicState,
    cq: usize,
    qp: Option<usize>,
    first: &Cqe,
    max: usize,
) -> Option<Session> {
    let c = nic.cq(cq);
    c.session
        .filter(|s| s.next_pi == c.pi && s.qp == qp && s.len < max && joins(&s.title, first, s.len))
}

/// Whether `next` can be completion `i` of a block whose first completion is `title`
/// (neither is an error CQE: `hold` writes those at once).
fn joins(title: &Cqe, next: &Cqe, i: usize) -> bool {
    let (mut a, mut b) = (*title, *next);
    (a.byte_cnt, b.byte_cnt) = (0, 0);
    if a.opcode == cqe_op::REQ {
        (a.wqe_counter, b.wqe_counter, a.send_opcode, b.send_opcode) = (0, 0, 0, 0);
    } else if b.wqe_counter == a.wqe_counter.wrapping_add(i as u16) {
        b.wqe_counter = a.wqe_counter;
    }
    a == b
}

/// The 8 bytes of the mini-CQE for `cqe`. `validity` is byte 2 of a requester mini-CQE
/// under `ZipConfig::req_opcode_byte3`.
fn mini(nic: &NicState, cqe: &Cqe, validity: u8) -> [u8; 8] {
    let mut m = [0u8; 8];
    if cqe.opcode == cqe_op::REQ {
        m[..2].copy_from_slice(&cqe.wqe_counter.to_be_bytes());
        if nic.cfg.cqe_zip.req_opcode_byte3 {
            (m[2], m[3]) = (validity, cqe.send_opcode);
        } else {
            m[2] = cqe.send_opcode;
        }
    }
    // Responder: RX hash or checksum (and stride index), none of which IB has: 0.
    m[4..].copy_from_slice(&cqe.byte_cnt.to_be_bytes());
    m
}

/// A basic block: the arrays, then the title (whose `op_own` hands the block over).
fn basic(nic: &mut NicState, cq: usize, qp: Option<usize>, run: &[Cqe]) -> bool {
    let n = run.len() as u32;
    let Some((at, fire)) = claim(nic, cq, qp, n, &run[0]) else {
        return false;
    };
    for (j, minis) in run.chunks(ARRAY).enumerate() {
        let slot = at.wrapping_add(if j == 0 { 1 } else { (j * ARRAY) as u32 });
        let mut array = [0u8; 64];
        for (k, cqe) in minis.iter().enumerate() {
            array[k * 8..k * 8 + 8].copy_from_slice(&mini(nic, cqe, 0));
        }
        put(nic, cq, qp, slot, &array, false);
    }
    // Mini-CQEs carry no timestamp: the block's completions share the title's.
    let timestamp = nic.clock.read();
    let mut title = run[0].encode(owner(nic, cq, at), timestamp);
    title[44..48].copy_from_slice(&n.to_be_bytes());
    title[63] |= COMPRESSED;
    put(nic, cq, qp, at, &title, true);
    nic.stats.zip_blocks += 1;
    done(nic, cq, n, fire);
    true
}

/// An enhanced block: the title written whole, then slots of up to 7 mini-CQEs.
fn enhanced(nic: &mut NicState, cq: usize, qp: Option<usize>, run: &[Cqe]) -> bool {
    write_now(nic, cq, qp, &run[0]) && slots(nic, cq, qp, &run[1..])
}

/// The completions `run` of an enhanced session in slots of up to 7 mini-CQEs.
fn slots(nic: &mut NicState, cq: usize, qp: Option<usize>, run: &[Cqe]) -> bool {
    for minis in run.chunks(ENHANCED_SLOT) {
        let k = minis.len() as u32;
        let Some((at, fire)) = claim(nic, cq, qp, k, &minis[0]) else {
            return false;
        };
        let validity = validity(nic, cq, at);
        let mut slot = [0u8; 64];
        for (i, cqe) in minis.iter().enumerate() {
            slot[i * 8..i * 8 + 8].copy_from_slice(&mini(nic, cqe, validity));
        }
        slot[62] = validity;
        let owner = nic.cfg.cqe_zip.owner_in_enhanced_slots && owner(nic, cq, at);
        slot[63] = ((k - 1) as u8) << 4 | COMPRESSED | u8::from(owner);
        put(nic, cq, qp, at, &slot, true);
        done(nic, cq, k, fire);
    }
    true
}

/// Counts `minis` completions written as mini-CQEs and raises the event their claim fired.
fn done(nic: &mut NicState, cq: usize, minis: u32, fire: bool) {
    nic.stats.cqes += u64::from(minis);
    nic.stats.zip_minis += u64::from(minis);
    if fire {
        let cqn = nic.cq(cq).cqn;
        crate::cq::raise(nic, cqn);
    }
}

/// The owner bit of CQ index `at`.
fn owner(nic: &mut NicState, cq: usize, at: u32) -> bool {
    let c = nic.cq(cq);
    (at >> c.log_cnt) & 1 == 1
}
