//! The requester: send doorbells, WQE fetch (ring or BlueFlame), execution of RC
//! operations against the responder, transport retry and RNR retry (prm-facts §1, §6, §11).
//! The steps the transports share with it are in `req`; UD, UC and DC execution in `ud`,
//! `uc` and `dc`, the fast path in `fast`.

use crate::cqe::{synd, REQ_BYTE_CNT_POISON};
use crate::dc::{Gate, Refused};
use crate::host;
use crate::pcie::{Ctx, Purpose};
use crate::qp::{
    fail_head, fetch_sq, flush_head, flush_sq, read_bb, read_ring, read_sq, sq_producer,
};
use crate::req::{
    check_gather, connected, done, packets, seq, transmit, BfWqe, Landing, Outcome, Seq,
};
use crate::resp::{respond, respond_again, Request, Resp};
use crate::state::{take_fault, InFlight, NicState, Qp, Scratch, Stall, World, WQE_BUF};
use crate::types::{Access, QpState, Transport};
use crate::ud::Av;
use crate::wqe::{Ctrl, Op, Segs, BB};
use crate::xfer::{Cursor, Spans};

/// `rnr_retry` value meaning "retry forever".
const RNR_FOREVER: u8 = 7;

/// A send doorbell for QP index `qpi`: `ctrl8` is the doorbell (ctrl bytes 0..7) and `bf`
/// the complete BlueFlame copy, if any.
///
/// The producer is doorbell record word 1; the MMIO is a kick that must name the same
/// producer: `idx + ceil(ds/4)` (rdma-core and UCX ring with the last WQE's ctrl), or `idx`
/// itself when `ds` is 0 (NVSHMEM IBGDA and UCX GDAKI ring with the producer and `ds` 0).
/// The opcode and opmod bytes are ignored (GDAKI shifts a 64-bit producer into them).
#[inline]
pub(crate) fn doorbell(w: &mut World, n: usize, qpi: usize, ctrl8: &[u8], bf: Option<&[u8]>) {
    let nic = &mut w.nics[n];
    let c = Ctrl::parse(ctrl8);
    let q = nic.qps[qpi].as_mut().expect("live QP index");
    if c.qpn != q.qpn || q.state == QpState::Reset || q.transport == Transport::Dct {
        nic.stats.bad_doorbells += 1;
        return;
    }
    if matches!(q.state, QpState::Err | QpState::Sqe) {
        nic.stats.doorbells += 1;
        flush_sq(nic, qpi);
        return;
    }
    let named = if c.ds == 0 {
        c.idx
    } else {
        c.idx.wrapping_add(c.nbb())
    };
    let Some(pi) = sq_producer(q).filter(|&pi| pi != q.sq_pi || pi == named) else {
        // More BBs outstanding than the ring holds, or a record that announces nothing new
        // while the MMIO names new work: a forgotten record update, which a ConnectX
        // ignores (ROCm rocm-xio PR 100: a producer written to the wrong record word).
        nic.stats.bad_doorbells += 1;
        return;
    };
    nic.stats.doorbells += 1;
    nic.stats.ambiguous_doorbells += u64::from(named != pi);
    let fetched = q.advance_producer(pi);
    let end = c.idx.wrapping_add(c.nbb());
    let bf_fits = |b: &&[u8]| {
        c.idx.wrapping_sub(fetched) < pi.wrapping_sub(fetched)
            && end.wrapping_sub(fetched) <= pi.wrapping_sub(fetched)
            && b.len() == usize::from(c.ds) * 16
    };
    let bf = match bf {
        Some(b) if bf_fits(&b) => Some(BfWqe {
            idx: c.idx,
            bytes: b,
        }),
        Some(_) => {
            nic.stats.bf_incomplete += 1;
            None
        }
        None => None,
    };
    match bf {
        Some(b) => {
            fetch_sq(nic, qpi, fetched, b.idx);
            fetch_sq(nic, qpi, end, pi);
        }
        None => fetch_sq(nic, qpi, fetched, pi),
    }
    let state = nic.qp(qpi).state;
    if state == QpState::Rts && nic.faults.defer {
        defer(nic, qpi, fetched, pi, bf);
        return;
    }
    if state != QpState::Rts {
        // INIT or RTR: the send queue is not active. The IB rule makes posting to it an
        // immediate error of the verbs layer; what the NIC does with a doorbell is unknown.
        nic.stats.doorbells_before_rts += 1;
        if nic.qp(qpi).sq_ci != pi {
            let ctrl = head_ctrl(nic, qpi);
            nic.stats.wqes += 1;
            fail_head(nic, qpi, ctrl, synd::LOCAL_QP_OP_ERR);
        }
        return;
    }
    if !crate::fast::write_inline(w, n, qpi, bf) {
        run_sq(w, n, qpi, bf.as_slice());
    }
}

/// `Fault::DeferExecution`: queue the doorbell's work for `progress()`, keeping what the NIC
/// got at the doorbell: a copy of the ring's newly posted BBs `[fetched, pi)` (to tell
/// whether the driver overwrites them before they complete) and the BlueFlame WQE.
#[cold]
fn defer(nic: &mut NicState, qpi: usize, fetched: u16, pi: u16, bf: Option<BfWqe<'_>>) {
    let q = nic.qp(qpi);
    let cnt = 1usize << q.log_sq;
    q.snapshot.resize(cnt * BB, 0);
    // Copies not yet used up (an earlier deferred doorbell's WQEs still unread) grow by
    // what was posted since, doorbells not deferred included; else a new range starts.
    let (from, mut bb) = q.snapped.unwrap_or((fetched, fetched));
    while bb != pi {
        let slot = usize::from(bb) & (cnt - 1);
        let mut copy = [0u8; BB];
        read_sq(q, bb, &mut copy);
        q.snapshot[slot * BB..(slot + 1) * BB].copy_from_slice(&copy);
        bb = bb.wrapping_add(1);
    }
    q.deferred = true;
    q.snapped = Some((from, pi));
    if let Some(b) = bf {
        q.deferred_bf.push((b.idx, b.bytes.into()));
    }
    nic.defer();
}

/// Run the work deferred doorbells queued on QP index `qpi` (`Fault::DeferExecution`), if
/// the QP can send; returns true if it ran.
pub(crate) fn run_deferred(w: &mut World, n: usize, qpi: usize) -> bool {
    let q = w.nics[n].qp(qpi);
    if q.state != QpState::Rts || q.stall.is_some() {
        return false;
    }
    if !std::mem::take(&mut q.deferred) {
        return false;
    }
    let kept = std::mem::take(&mut q.deferred_bf);
    let bf: Vec<BfWqe<'_>> = kept
        .iter()
        .map(|(idx, bytes)| BfWqe { idx: *idx, bytes })
        .collect();
    run_sq(w, n, qpi, &bf);
    true
}

/// The control segment of the WQE at the head of the SQ, from the ring.
fn head_ctrl(nic: &mut NicState, qpi: usize) -> Ctrl {
    let q = nic.qp(qpi);
    let mut c = [0u8; 16];
    read_sq(q, q.sq_ci, &mut c);
    Ctrl::parse(&c)
}

/// Execute WQEs from the consumer counter up to the known producer, until the queue is
/// empty, stalls (RNR, loss) or fails. `bf` holds the BlueFlame WQEs delivered for this run.
pub(crate) fn run_sq(w: &mut World, n: usize, qpi: usize, bf: &[BfWqe<'_>]) {
    // Reused buffers: zeroing them per doorbell would dominate small WQEs.
    let mut s = w.nics[n].scratch.take().unwrap_or_else(|| {
        Box::new(Scratch {
            wqe: [0; WQE_BUF],
            in_flight: InFlight::new(),
        })
    });
    s.in_flight.clear();
    let Scratch { wqe, in_flight } = &mut *s;
    run_sq_with(w, n, qpi, bf, wqe, in_flight);
    w.nics[n].scratch = Some(s);
}

fn run_sq_with(
    w: &mut World,
    n: usize,
    qpi: usize,
    bf: &[BfWqe<'_>],
    buf: &mut [u8],
    in_flight: &mut InFlight,
) {
    // When the head WQE became ready to leave, for a paced QP (`NicState::pace_admit`).
    let mut ready = None;
    loop {
        let nic = &mut w.nics[n];
        let q = nic.qp(qpi);
        if q.state != QpState::Rts || q.stall.is_some() || q.sq_ci == q.sq_pi {
            return;
        }
        if q.pacer.is_some() && !nic.pace_admit(qpi, &mut ready) {
            return;
        }
        let q = nic.qp(qpi);
        let cons = q.sq_ci;
        let left = q.sq_pi.wrapping_sub(cons);
        let qpn = q.qpn;
        nic.context(Some(qpi), Ctx::Qp(qpn));
        let len = load_wqe(nic, qpi, cons, bf, buf);
        let ctrl = Ctrl::parse(buf);
        let valid = ctrl.qpn == qpn && ctrl.idx == cons && ctrl.nbb() <= left;
        let outcome = if valid {
            exec(w, n, qpi, ctrl, &mut buf[..len], in_flight)
        } else {
            Outcome::Fail(synd::LOCAL_QP_OP_ERR)
        };
        let nic = &mut w.nics[n];
        nic.stats.wqes += u64::from(matches!(outcome, Outcome::Done(_) | Outcome::Fail(_)));
        let q = nic.qp(qpi);
        if q.state != QpState::Rts {
            // The responder was this very QP and failed it: already flushed.
            return;
        }
        match outcome {
            Outcome::Done(byte_cnt) => {
                if !done(nic, qpi, ctrl, byte_cnt) {
                    return;
                }
            }
            Outcome::Rnr => {
                q.stall = Some(Stall::Rnr);
                nic.defer();
                return;
            }
            Outcome::Lost => {
                q.stall = Some(Stall::Lost);
                nic.defer();
                return;
            }
            Outcome::Fail(s) => {
                if !crate::dc::stream_error(nic, qpi, ctrl, s) {
                    fail_head(nic, qpi, ctrl, s);
                    return;
                }
            }
            Outcome::Flushed => {
                let pi = q.sq_pi;
                nic.stats.dci_stream_flushes += 1;
                flush_head(nic, qpi, ctrl, pi);
            }
        }
    }
}

/// Run the send queue of QP index `qpi` if its head waited for its rate limit and may
/// leave now (one `progress()` step); returns true if it ran.
pub(crate) fn resume_paced(w: &mut World, n: usize, qpi: usize) -> bool {
    if !w.nics[n].pace_due(qpi) {
        return false;
    }
    run_sq(w, n, qpi, &[]);
    true
}

/// Copy the WQE at BB counter `cons` into `buf` (from BlueFlame data when it holds this
/// WQE, else from the ring); returns its `ds*16` length (16 if `ds` is 0). A WQE read from
/// the ring among the BBs copied at their deferred doorbells (`Qp::snapped`) is
/// compared with its copy: one that differs was overwritten by the driver before it
/// completed.
fn load_wqe(nic: &mut NicState, qpi: usize, cons: u16, bf: &[BfWqe<'_>], buf: &mut [u8]) -> usize {
    let q = nic.qp(qpi);
    if let Some(b) = bf.iter().find(|b| b.idx == cons) {
        let len = b.bytes.len();
        take_snapped(q, cons, len);
        buf[..len].copy_from_slice(b.bytes);
        let mut ring = [0u8; BB];
        let differs = b.bytes.chunks(BB).enumerate().any(|(k, chunk)| {
            read_sq(q, cons.wrapping_add(k as u16), &mut ring[..chunk.len()]);
            ring[..chunk.len()] != *chunk
        });
        nic.stats.bf_used += 1;
        nic.stats.bf_mismatch += u64::from(differs);
        return len;
    }
    let first: &mut [u8; BB] = (&mut buf[..BB]).try_into().expect("WQE_BUF holds a BB");
    read_bb(q, cons, first);
    let len = usize::from(buf[7] & 0x3f) * 16;
    if len > BB {
        read_sq(q, cons.wrapping_add(1), &mut buf[BB..len.div_ceil(BB) * BB]);
    }
    let len = len.max(16);
    if take_snapped(q, cons, len) {
        let mask = usize::from(q.sq_mask());
        let overwritten = buf[..len].chunks(BB).enumerate().any(|(k, chunk)| {
            let slot = (usize::from(cons) + k) & mask;
            q.snapshot[slot * BB..slot * BB + chunk.len()] != *chunk
        });
        nic.stats.ring_overwritten += u64::from(overwritten);
    }
    len
}

/// Whether the WQE of `len` bytes at BB counter `cons` is among the BBs copied at their
/// deferred doorbells (`Qp::snapped`); the copies are used up (the range cleared)
/// once a WQE reaching their last BB is read.
fn take_snapped(q: &mut Qp, cons: u16, len: usize) -> bool {
    let Some((from, to)) = q.snapped else {
        return false;
    };
    let span = to.wrapping_sub(from);
    if cons.wrapping_sub(from) >= span {
        return false;
    }
    let end = cons.wrapping_add(len.div_ceil(BB) as u16);
    if end.wrapping_sub(from) >= span {
        q.snapped = None;
    }
    true
}

/// Execute one structurally checked WQE of QP index `qpi` on NIC `n`.
fn exec(
    w: &mut World,
    n: usize,
    qpi: usize,
    ctrl: Ctrl,
    wqe: &mut [u8],
    in_flight: &mut InFlight,
) -> Outcome {
    if ctrl.fenced() {
        in_flight.clear();
    }
    // The QP's fields this WQE needs, in one lookup (decoding changes none of them).
    let q = w.nics[n].qp(qpi);
    let (transport, pdn, qpn, mtu) = (q.transport, q.pdn, q.qpn, q.mtu);
    let (dest, depth, qp_sl) = (q.dest, q.max_rd_atomic, q.sl);
    let av = match transport {
        Transport::Ud => return crate::ud::send(w, n, qpi, ctrl, wqe, in_flight),
        Transport::Uc => return crate::uc::send(w, n, qpi, ctrl, wqe, in_flight),
        Transport::Raw => return crate::eth::tx::send(w, n, qpi, ctrl, wqe, in_flight),
        // A DCI's WQE: ctrl + the address vector + the RC segments (prm-facts-next §3.3).
        Transport::Dci => match crate::dc::gate(&mut w.nics[n], qpi, &ctrl) {
            Gate::Run => match Av::parse(
                wqe,
                w.nics[n].cfg.compact_av,
                w.nics[n].cfg.link_layer == crate::types::LinkLayer::Ethernet,
            ) {
                Some(av) => Some(av),
                None => return Outcome::Fail(synd::LOCAL_QP_OP_ERR),
            },
            Gate::BadStream(s) => return Outcome::Fail(s),
            Gate::Flush => return Outcome::Flushed,
        },
        // RC, and an XRC initiator's WQE: ctrl + the XRC segment + the RC segments
        // (rdma-core `_mlx5_post_send`), no address vector.
        _ => None,
    };
    let xrc = transport == Transport::XrcIni;
    let xport = av
        .as_ref()
        .map_or(if xrc { crate::xrc::SEG_BYTES } else { 0 }, |av| av.len);
    let nic = &mut w.nics[n];
    let d = match nic.decode(ctrl, wqe, xport) {
        Ok(d) => d,
        Err(s) => return Outcome::Fail(s),
    };
    // The SRQ the target is to deliver into (decoding has checked the segment is there).
    let xrc_srqn = xrc.then(|| crate::xrc::srqn(wqe));
    if matches!(d.op, Op::Nop) {
        return Outcome::Done(REQ_BYTE_CNT_POISON);
    }
    // What the receive CQE carries in `flags_rqpn` bits 27..24: the SL, but for a DCI's
    // request on RoCE the packet type of its source GID (`L3::packet_type`).
    let sl = match &av {
        Some(av) if nic.cfg.link_layer == crate::types::LinkLayer::Ethernet => av
            .grh
            .and_then(|g| nic.gids.get(usize::from(g.sgid_index)))
            .map_or(av.sl, |e| crate::roce::L3::of(e).packet_type()),
        Some(av) => av.sl,
        None => qp_sl,
    };
    let remote_result = matches!(d.op, Op::Read | Op::Atomic(_));
    // READ and atomic result buffers are checked when the response arrives (below).
    if !remote_result {
        if let Err(s) = check_gather(nic, qpi, pdn, wqe, &d, in_flight) {
            return Outcome::Fail(s);
        }
    }
    let wqe = &*wqe;
    let npkts = packets(d.len, mtu);
    let req_pkts = if remote_result { 1 } else { npkts };
    nic.on_wire(qpi, req_pkts, if remote_result { 0 } else { d.len });
    let psn = transmit(nic.qp(qpi), npkts);
    let lost = take_fault(&mut nic.faults.lose, qpn, req_pkts);
    let to = match &av {
        _ if lost => None,
        Some(av) => match crate::dc::connect(w, n, qpi, av, psn) {
            Ok((m, dqpi)) => Some(Landing {
                nic: m,
                qpi: dqpi,
                seq: seq(w.nics[m].qp(dqpi).rq_psn, psn),
            }),
            Err(Refused::Nak(s)) => return Outcome::Fail(s),
            Err(Refused::Dropped) => None,
        },
        None if xrc => connected(w, n, qpn, Transport::XrcTgt, &dest, psn),
        None => connected(w, n, qpn, Transport::Rc, &dest, psn),
    };
    let Some(to) = to else {
        w.nics[n].stats.packets_lost += u64::from(req_pkts);
        return Outcome::Lost;
    };
    if to.seq == Seq::Ahead {
        // PSN sequence error (IB spec 9.7.5.1; rxe `check_psn`): the responder NAKs the first
        // request ahead of its expected PSN and drops the rest until one in sequence
        // arrives. The NAK names a PSN behind the requester's head message, so the
        // requester ignores it as a stale response and retransmits on its timeout.
        let r = &mut w.nics[to.nic];
        let rq = r.qp(to.qpi);
        if !std::mem::replace(&mut rq.psn_nak_sent, true) {
            r.stats.seq_naks += 1;
        }
        w.nics[n].stats.packets_lost += u64::from(req_pkts);
        return Outcome::Lost;
    }
    if let Some(srqn) = xrc_srqn {
        // The target takes the SRQ the XRC segment names, if it may.
        match crate::xrc::bind(&mut w.nics[to.nic], to.qpi, srqn) {
            Ok(()) => {}
            Err(Some(nak)) => return Outcome::Fail(nak),
            Err(None) => {
                w.nics[n].stats.packets_lost += u64::from(req_pkts);
                return Outcome::Lost;
            }
        }
    }
    // The remote address is in the responder's address space (as is a READ's source below).
    let d = d.at_responder(w.nics[to.nic].qp(to.qpi).space);
    let req = Request {
        wqe,
        d: &d,
        psn,
        npkts,
        // A DCT's receive completions name the DCI and its port (prm-facts-next §3.6).
        src: av.as_ref().map(|_| (qpn, w.nics[n].lid)),
        sl,
    };
    if remote_result
        && rd_atomic_depth(depth) > rd_atomic_depth(w.nics[to.nic].qp(to.qpi).max_dest_rd_atomic)
    {
        w.nics[n].stats.rd_atomic_depth_mismatch += 1;
    }
    let responder = &mut w.nics[to.nic];
    let rqpn = responder.qp(to.qpi).qpn;
    responder.context(Some(to.qpi), Ctx::Qp(rqpn));
    let resp = if to.seq == Seq::Duplicate {
        respond_again(responder, to.qpi, &req)
    } else {
        Some(respond(responder, to.qpi, &req))
    };
    if av.is_some() {
        crate::dc::save(w, n, qpi, to.nic, to.qpi);
    }
    let orig = match resp {
        Some(Resp::Ack(orig)) => orig,
        Some(Resp::Rnr) => {
            // The RNR NAK names the PSN the responder still expects: this message's.
            let q = w.nics[n].qp(qpi);
            q.sq_psn = psn;
            q.head_psn = None;
            return Outcome::Rnr;
        }
        Some(Resp::Nak(s)) => return Outcome::Fail(s),
        None => {
            w.nics[n].stats.packets_lost += u64::from(req_pkts);
            return Outcome::Lost;
        }
    };
    let nic = &mut w.nics[n];
    if take_fault(&mut nic.faults.lose_responses, qpn, 1) {
        // Executed at the responder, but the requester never hears: it times out and
        // retransmits, and the responder answers the duplicate without executing again.
        nic.stats.responses_lost += 1;
        return Outcome::Lost;
    }
    nic.qp(qpi).head_psn = None;
    if !remote_result {
        return Outcome::Done(REQ_BYTE_CNT_POISON);
    }
    // The response has been executed at the responder (an atomic has changed its target);
    // its local destination is checked as it lands.
    let spans = Spans::from_segs(Segs::new(wqe, d.data), nic.qp(qpi).space);
    if spans
        .used(d.len)
        .any(|s| !nic.check_mr(qpi, s.key, pdn, s.addr, s.len, Access::LOCAL_WRITE))
    {
        return Outcome::Fail(synd::LOCAL_PROT_ERR);
    }
    match d.op {
        Op::Atomic(a) => {
            let dst = spans.as_slice()[0].addr;
            let size = usize::from(a.size);
            host::write(
                dst,
                &atomic_result(orig, a.size, nic.cfg.atomic_8b_host_order)[..size],
            );
            nic.dma_write(Some(qpi), dst, size as u64, Purpose::AtomicResult);
            in_flight.push(dst, size as u64);
            Outcome::Done(REQ_BYTE_CNT_POISON)
        }
        _ => {
            Cursor::new(spans.as_slice()).put_host(d.raddr, d.len);
            for s in spans.used(d.len) {
                nic.dma_write(Some(qpi), s.addr, s.len, Purpose::Scatter);
                in_flight.push(s.addr, s.len);
            }
            Outcome::Done(d.len as u32)
        }
    }
}

/// The bytes an atomic's original value `orig` (`size` 4 or 8) lands as in the requester's
/// buffer: host order for 8-byte atomics when `atomic_req_8B_endianness_mode` is 1
/// (`host_order_8b`), big-endian otherwise. 4-byte (masked) results are always big-endian:
/// UCX keeps the 4-byte size in `ext_atomic_arg_sizes_be` whatever the mode
/// (dv/ib_mlx5dv_md.c) and byte-swaps those results (`uct_rc_ep_atomic_handler_32_be1`).
fn atomic_result(orig: u64, size: u8, host_order_8b: bool) -> [u8; 8] {
    if size == 8 && host_order_8b {
        orig.to_ne_bytes()
    } else {
        (orig << (64 - 8 * u32::from(size))).to_be_bytes()
    }
}

/// The READ/atomic depth mlx5 applies for a configured value: a power of two
/// (`fls(n - 1)`), so 0 behaves as 1.
fn rd_atomic_depth(n: u8) -> u8 {
    n.max(1).next_power_of_two()
}

/// One timer step for a stalled QP: retransmit, or give up with RNR_RETRY_EXC /
/// TRANSPORT_RETRY_EXC. Returns true if it did something.
pub(crate) fn retry(w: &mut World, n: usize, qpi: usize) -> bool {
    let nic = &mut w.nics[n];
    let q = nic.qp(qpi);
    let Some(stall) = q.stall.filter(|_| q.state == QpState::Rts) else {
        return false;
    };
    let exhausted = match stall {
        Stall::Rnr => q.rnr_retry != RNR_FOREVER && q.rnr_retries >= q.rnr_retry,
        Stall::Lost => q.retries >= q.retry_cnt,
    };
    q.stall = None;
    if exhausted {
        let s = match stall {
            Stall::Rnr => synd::RNR_RETRY_EXC_ERR,
            Stall::Lost => synd::TRANSPORT_RETRY_EXC_ERR,
        };
        let ctrl = head_ctrl(nic, qpi);
        if crate::dc::stream_error(nic, qpi, ctrl, s) {
            run_sq(w, n, qpi, &[]);
        } else {
            fail_head(nic, qpi, ctrl, s);
        }
        return true;
    }
    match stall {
        Stall::Rnr => q.rnr_retries = q.rnr_retries.saturating_add(1),
        Stall::Lost => q.retries += 1,
    }
    nic.stats.retransmits += 1;
    if nic.link.cfg().retry_refetch {
        // The NIC reads again every WQE it is about to send again.
        let q = nic.qp(qpi);
        let (ci, pi) = (q.sq_ci, q.sq_pi);
        read_ring(nic, qpi, ci, pi, Purpose::WqeRefetch);
    }
    run_sq(w, n, qpi, &[]);
    true
}
