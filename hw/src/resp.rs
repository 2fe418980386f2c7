//! The responder side of RC: incoming SEND / WRITE / READ / atomic requests, receive WQE
//! consumption (RQ ring or SRQ linked list), RNR, and responder errors (prm-facts §5, §9).

use crate::complete::complete;
use crate::cq::raise_async;
use crate::cqe::{cqe_op, synd, Cqe, Scattered};
use crate::host;
use crate::pcie::Purpose;
use crate::qp::fail;
use crate::state::{take_fault, NicState, INVALID_LKEY, PSN_MASK, SRQN_BASE};
use crate::types::{Access, AsyncEvent, Transport};
use crate::wqe::{be16, be32, be64, opcode, Op, Segs, Wqe, ZERO_LENGTH_MEANS};
use crate::xfer::{gather_to, Cursor, Span, Spans};

/// One request message as the responder sees it.
pub(crate) struct Request<'a> {
    /// The requester's WQE bytes (inline payload lives here).
    pub(crate) wqe: &'a [u8],
    pub(crate) d: &'a Wqe,
    /// PSN of the first packet.
    pub(crate) psn: u32,
    /// PSNs the message consumes.
    pub(crate) npkts: u32,
    /// The sender (QPN, LID) a receive completion names: DC only (RC CQEs leave it 0).
    pub(crate) src: Option<(u32, u16)>,
    /// The service level the request travelled on (the requester's path SL; a DCI's from
    /// its AV): receive CQEs carry it in `flags_rqpn` bits 27..24.
    pub(crate) sl: u8,
}

/// The responder's answer.
pub(crate) enum Resp {
    /// Done; for atomics the original memory value.
    Ack(u64),
    /// No receive WQE available.
    Rnr,
    /// Negative acknowledgement; the requester completes with this syndrome.
    Nak(u8),
}

/// A responder-side failure: the requester's syndrome and, if a receive WQE was consumed,
/// the responder's error CQE (syndrome, wqe_counter, srqn).
struct Failure {
    req: u8,
    resp: Option<(u8, u16, u32)>,
}

impl Failure {
    fn nak(req: u8) -> Self {
        Failure { req, resp: None }
    }
}

/// A consumed receive WQE.
pub(crate) struct Recv {
    pub(crate) counter: u16,
    pub(crate) srqn: u32,
    pub(crate) pdn: u32,
    pub(crate) spans: Spans,
}

impl Recv {
    fn fail(&self, req: u8, resp: u8) -> Failure {
        Failure {
            req,
            resp: Some((resp, self.counter, self.srqn)),
        }
    }
}

/// Handle request `r` at QP index `qpi` of `nic` (already checked: RTR/RTS, connected,
/// PSN in sequence, which ends a sequence error).
pub(crate) fn respond(nic: &mut NicState, qpi: usize, r: &Request<'_>) -> Resp {
    nic.qp(qpi).psn_nak_sent = false;
    let res = match r.d.op {
        Op::Send => send(nic, qpi, r),
        Op::Write => write(nic, qpi, r),
        Op::Read => read(nic, qpi, r),
        Op::Atomic(a) => atomic(nic, qpi, r, a),
        Op::Nop => Ok(Resp::Ack(0)),
    };
    match res {
        Ok(resp) => {
            if let Resp::Ack(_) = resp {
                let q = nic.qp(qpi);
                q.rq_psn = q.rq_psn.wrapping_add(r.npkts) & PSN_MASK;
                if q.fatal {
                    // Its receive CQ is in error: the QP cannot report completions.
                    fail(nic, qpi);
                }
            } else {
                nic.stats.rnr_naks += 1;
            }
            resp
        }
        Err(f) => {
            let q = nic.qp(qpi);
            let qpn = q.qpn;
            if q.transport == Transport::Dct {
                // A DCT serves every DCI: a bad request fails the requester (the NAK) and
                // the receive it consumed, not the DCT, which has no ERR transition
                // (`mlx5_ib_modify_dct`). No source says more; see docs/model.md.
                if let Some((syndrome, wqe_counter, srqn)) = f.resp {
                    complete(
                        nic,
                        qpi,
                        true,
                        Cqe::resp_err(qpn, wqe_counter, srqn, syndrome),
                    );
                }
                return Resp::Nak(f.req);
            }
            match f.resp {
                Some((syndrome, wqe_counter, srqn)) => complete(
                    nic,
                    qpi,
                    true,
                    Cqe::resp_err(qpn, wqe_counter, srqn, syndrome),
                ),
                // No receive WQE consumed, no CQE to report the error: an affiliated
                // asynchronous error names the QP instead.
                None if f.req == synd::REMOTE_ACCESS_ERR => {
                    raise_async(nic, AsyncEvent::QpAccessError { qpn })
                }
                None => raise_async(nic, AsyncEvent::QpRequestError { qpn }),
            }
            fail(nic, qpi);
            Resp::Nak(f.req)
        }
    }
}

/// Answer a duplicate of a request this QP has already executed (its response was lost):
/// SEND, WRITE and NOP are acknowledged again without touching memory or receives, a READ
/// reads the memory again, an atomic returns the saved original value without executing
/// twice. IB responders keep `max_dest_rd_atomic` such results; the model keeps the last
/// one, enough while at most one request is outstanding. A duplicate atomic older than
/// that finds no result and is dropped (`None`), as a responder out of resources would.
pub(crate) fn respond_again(nic: &mut NicState, qpi: usize, r: &Request<'_>) -> Option<Resp> {
    match r.d.op {
        Op::Read => {
            nic.dma_read(Some(qpi), r.d.raddr, r.d.len, Purpose::ReadResponse);
            Some(Resp::Ack(0))
        }
        Op::Atomic(_) => match nic.qp(qpi).atomic_replay {
            Some((psn, orig)) if psn == r.psn => Some(Resp::Ack(orig)),
            _ => None,
        },
        _ => Some(Resp::Ack(0)),
    }
}

fn require(nic: &mut NicState, qpi: usize, right: Access) -> Result<(u32, Access), Failure> {
    let q = nic.qp(qpi);
    if q.access.contains(right) {
        Ok((q.pdn, q.access))
    } else {
        // The QP does not accept this operation at all: Invalid Request (rxe: unsupported
        // opcode), not a memory-key violation.
        Err(Failure::nak(synd::REMOTE_INVAL_REQ_ERR))
    }
}

fn check_remote(
    nic: &mut NicState,
    qpi: usize,
    pdn: u32,
    d: &Wqe,
    len: u64,
    right: Access,
) -> Result<(), Failure> {
    if nic.check_mr(qpi, d.rkey, pdn, d.raddr, len, right) {
        Ok(())
    } else {
        Err(Failure::nak(synd::REMOTE_ACCESS_ERR))
    }
}

fn send(nic: &mut NicState, qpi: usize, r: &Request<'_>) -> Result<Resp, Failure> {
    let Some(rv) = take_recv(nic, qpi) else {
        return Ok(Resp::Rnr);
    };
    let len = r.d.len;
    if rv.spans.capacity() < len {
        return Err(rv.fail(synd::REMOTE_INVAL_REQ_ERR, synd::LOCAL_LENGTH_ERR));
    }
    if rv.srqn != 0 && nic.cfg.srq_odp_fault_cqe {
        let mut faulted = false;
        for s in rv.spans.used(len) {
            faulted |= nic.responder_fault(qpi, s.key, s.addr, s.len);
        }
        if faulted {
            // rdma-core f3df671d3: the NIC "couldn't scatter the data to the WQE buffers
            // ... but needed to consume the WQE anyway"; the driver re-posts it. The
            // requester retries as after any responder fault.
            let qpn = nic.qp(qpi).qpn;
            let cqe = Cqe::resp_err(qpn, rv.counter, rv.srqn, synd::REMOTE_ABORTED_ERR);
            complete(nic, qpi, true, cqe);
            return Ok(Resp::Rnr);
        }
    }
    for s in rv.spans.used(len) {
        if !nic.check_mr(qpi, s.key, rv.pdn, s.addr, s.len, Access::LOCAL_WRITE) {
            return Err(rv.fail(synd::REMOTE_OP_ERR, synd::LOCAL_PROT_ERR));
        }
    }
    let ctrl = r.d.ctrl;
    let inval = ctrl.opcode == opcode::SEND_INVAL;
    let qp_pdn = nic.qp(qpi).pdn;
    let inval_key = u32::from_be_bytes(ctrl.imm);
    if inval && !invalidate(nic, inval_key, qp_pdn) {
        // rxe's RESPST_ERR_INVALIDATE_RKEY (class J): the receive completes with
        // IB_WC_REM_INV_REQ_ERR and the QP goes to error; the requester sees the NAK.
        return Err(rv.fail(synd::REMOTE_INVAL_REQ_ERR, synd::REMOTE_INVAL_REQ_ERR));
    }
    let scattered = scatter_to_cqe(nic, qpi, r);
    if scattered.is_none() {
        Cursor::new(rv.spans.as_slice()).put_gather(r.wqe, Segs::new(r.wqe, r.d.data));
        for s in rv.spans.used(len) {
            nic.dma_write(Some(qpi), s.addr, s.len, Purpose::Scatter);
        }
    }
    let (op, imm) = match ctrl.opcode {
        opcode::SEND_IMM => (cqe_op::RESP_SEND_IMM, ctrl.imm),
        opcode::SEND_INVAL => (cqe_op::RESP_SEND_INV, ctrl.imm),
        _ => (cqe_op::RESP_SEND, [0; 4]),
    };
    recv_cqe(nic, qpi, r, &rv, op, imm, scattered);
    Ok(Resp::Ack(0))
}

/// The payload of SEND `r` when QP index `qpi` scatters it into its CQE instead of the
/// receive's buffers: the QP was created with scatter to CQE (`cs_res`) and the message
/// has 1 to 32 bytes (64-byte receive CQ) or 1 to 64 (128-byte CQ), the kernel's
/// `configure_responder_scat_cqe` choice of `MLX5_RES_SCAT_DATA32_CQE` /
/// `MLX5_RES_SCAT_DATA64_CQE`. The receive's keys were checked as for a DMA write (no
/// source says hardware skips that). `None`: the payload is written to the buffers.
pub(crate) fn scatter_to_cqe(nic: &mut NicState, qpi: usize, r: &Request<'_>) -> Option<Scattered> {
    let q = nic.qp(qpi);
    let (on, recv_cq) = (q.scatter_cqe, q.recv_cq);
    if !on || r.d.len == 0 {
        return None;
    }
    let wide = nic.cq(recv_cq).cqe_size == 128;
    if r.d.len > if wide { 64 } else { 32 } {
        return None;
    }
    let mut data = [0u8; 64];
    // The model's own buffer as the destination of the gather (host addresses are process
    // addresses; `data` holds the at most 64 bytes checked above).
    gather_to(data.as_mut_ptr() as u64, r.wqe, Segs::new(r.wqe, r.d.data));
    Some(Scattered { data, wide })
}

/// Invalidate memory key `key` if it is a live MR of PD `pdn` that allows remote
/// invalidation (a plain registration never does).
pub(crate) fn invalidate(nic: &mut NicState, key: u32, pdn: u32) -> bool {
    match nic.mr_mut(key) {
        Some(mr) if mr.pdn == pdn && mr.remote_invalidate && !mr.invalid => {
            mr.invalid = true;
            true
        }
        _ => false,
    }
}

/// A receive completion, carrying the payload when it was scattered to the CQE.
pub(crate) fn recv_cqe(
    nic: &mut NicState,
    qpi: usize,
    r: &Request<'_>,
    rv: &Recv,
    op: u8,
    imm: [u8; 4],
    scattered: Option<Scattered>,
) {
    if scattered.is_some() {
        nic.stats.scatter_cqes += 1;
        nic.stats.scatter_cqe_bytes += r.d.len;
    }
    let qpn = nic.qp(qpi).qpn;
    let (src_qpn, slid) = r.src.unwrap_or_default();
    let cqe = Cqe {
        opcode: op,
        qpn,
        wqe_counter: rv.counter,
        byte_cnt: r.d.len as u32,
        imm,
        src_qpn,
        // rdma-core's and the kernel's `handle_responder` read `wc->sl` from `flags_rqpn`
        // bits 27..24 on every responder CQE of an InfiniBand port.
        rqpn_flags: r.sl,
        slid,
        srqn: rv.srqn,
        se: r.d.ctrl.solicited(),
        scattered,
        ..Cqe::default()
    };
    complete(nic, qpi, true, cqe);
}

/// RDMA WRITE(_IMM). The checks run in the responder order of rxe (operation allowed by the
/// QP, then resources, then the rkey): WRITE_IMM takes its receive WQE first, so an rkey
/// violation completes that receive with LOCAL_ACCESS_ERR (prm-facts §9).
fn write(nic: &mut NicState, qpi: usize, r: &Request<'_>) -> Result<Resp, Failure> {
    let (pdn, _) = require(nic, qpi, Access::REMOTE_WRITE)?;
    let d = r.d;
    if nic.responder_fault(qpi, d.rkey, d.raddr, d.len) {
        return Ok(Resp::Rnr);
    }
    let rv = if d.ctrl.opcode == opcode::RDMA_WRITE_IMM {
        match take_recv(nic, qpi) {
            Some(rv) => Some(rv),
            None => return Ok(Resp::Rnr),
        }
    } else {
        None
    };
    if let Err(f) = check_remote(nic, qpi, pdn, d, d.len, Access::REMOTE_WRITE) {
        return Err(match &rv {
            Some(rv) => rv.fail(f.req, synd::LOCAL_ACCESS_ERR),
            None => f,
        });
    }
    gather_to(d.raddr, r.wqe, Segs::new(r.wqe, d.data));
    nic.dma_write(Some(qpi), d.raddr, d.len, Purpose::Scatter);
    if let Some(rv) = rv {
        recv_cqe(nic, qpi, r, &rv, cqe_op::RESP_WR_IMM, d.ctrl.imm, None);
    }
    Ok(Resp::Ack(0))
}

fn read(nic: &mut NicState, qpi: usize, r: &Request<'_>) -> Result<Resp, Failure> {
    let (pdn, _) = require(nic, qpi, Access::REMOTE_READ)?;
    if nic.responder_fault(qpi, r.d.rkey, r.d.raddr, r.d.len) {
        return Ok(Resp::Rnr);
    }
    check_remote(nic, qpi, pdn, r.d, r.d.len, Access::REMOTE_READ)?;
    nic.dma_read(Some(qpi), r.d.raddr, r.d.len, Purpose::ReadResponse);
    Ok(Resp::Ack(0))
}

fn atomic(
    nic: &mut NicState,
    qpi: usize,
    r: &Request<'_>,
    a: crate::wqe::AtomicArgs,
) -> Result<Resp, Failure> {
    let d = r.d;
    let (pdn, _) = require(nic, qpi, Access::REMOTE_ATOMIC)?;
    let size = u64::from(a.size);
    if d.raddr % size != 0 {
        return Err(Failure::nak(synd::REMOTE_INVAL_REQ_ERR));
    }
    if nic.responder_fault(qpi, d.rkey, d.raddr, size) {
        return Ok(Resp::Rnr);
    }
    check_remote(nic, qpi, pdn, d, size, Access::REMOTE_ATOMIC)?;
    let store = nic.faults.host_store.take();
    let orig = if nic.cfg.pcie_atomic_ops {
        // One AtomicOp on the host: a CPU store either precedes it or follows it.
        if let Some(v) = store {
            host::store(d.raddr, a.size, v);
        }
        host::atomic_update(d.raddr, a.size, |old| a.apply(old))
    } else {
        // A DMA read, then a DMA write: a CPU store between them is overwritten.
        let old = host::load(d.raddr, a.size);
        if let Some(v) = store {
            host::store(d.raddr, a.size, v);
        }
        host::store(d.raddr, a.size, a.apply(old));
        old
    };
    nic.dma_read(Some(qpi), d.raddr, size, Purpose::AtomicOperand);
    nic.dma_write(Some(qpi), d.raddr, size, Purpose::AtomicOperand);
    nic.qp(qpi).atomic_replay = Some((r.psn, orig));
    Ok(Resp::Ack(orig))
}

/// Consume the next receive WQE of QP index `qpi` (its RQ or its SRQ), or `None` (RNR).
/// The doorbell record is read (and accounted) only when no unconsumed WQE is known; the
/// WQE itself is read (and accounted) each time one is consumed.
pub(crate) fn take_recv(nic: &mut NicState, qpi: usize) -> Option<Recv> {
    let q = nic.qp(qpi);
    let qpn = q.qpn;
    if take_fault(&mut nic.faults.rnr, qpn, 1) {
        return None;
    }
    let q = nic.qp(qpi);
    match q.srq {
        None => {
            let (dbrec, known, consumed) = (q.dbrec, q.rq_known_pi, q.rq_ci);
            nic.qp(qpi).rq_known_pi = refresh(nic, Some(qpi), dbrec, known, consumed)?;
            let q = nic.qp(qpi);
            let stride = 1u64 << q.log_rq_stride;
            let slot = u64::from(q.rq_ci & ((1u32 << q.log_rq) - 1) as u16);
            let addr = q.rq_buf + slot * stride;
            let counter = q.rq_ci;
            q.rq_ci = q.rq_ci.wrapping_add(1);
            let pdn = q.pdn;
            nic.dma_read(Some(qpi), addr, stride, Purpose::RecvWqeFetch);
            let (spans, _) = read_recv(addr, stride as usize, 0);
            nic.stats.zero_length_segments += spans.zero_length;
            Some(Recv {
                counter,
                srqn: 0,
                pdn,
                spans,
            })
        }
        Some(si) => {
            let srqn = SRQN_BASE + si as u32;
            let s = nic.srq(si);
            let (dbrec, known, consumed) = (s.dbrec, s.known_pi, s.consumed);
            nic.srq(si).known_pi = refresh(nic, Some(qpi), dbrec, known, consumed)?;
            let s = nic.srq(si);
            let stride = 1u64 << s.log_stride;
            let index = s.head;
            let addr = s.buf + u64::from(index) * stride;
            let (spans, next) = read_recv(addr, stride as usize, 16);
            s.head = next & ((1u32 << s.log_cnt) - 1) as u16;
            s.consumed = s.consumed.wrapping_add(1);
            let pdn = s.pdn;
            nic.dma_read(Some(qpi), addr, stride, Purpose::RecvWqeFetch);
            nic.stats.zero_length_segments += spans.zero_length;
            Some(Recv {
                counter: index,
                srqn,
                pdn,
                spans,
            })
        }
    }
}

/// Give back receive `rv`, just taken from QP index `qpi`: the next message takes it
/// again (a UC message dropped after its first packet, class D1 in rxe's
/// `do_class_d1e_error`). Its fetch stays accounted: the NIC did read it.
pub(crate) fn put_back(nic: &mut NicState, qpi: usize, rv: &Recv) {
    match nic.qp(qpi).srq {
        None => nic.qp(qpi).rq_ci = rv.counter,
        Some(si) => {
            let s = nic.srq(si);
            s.head = rv.counter;
            s.consumed = s.consumed.wrapping_sub(1);
        }
    }
}

/// The receive producer: `known` if it is ahead of `consumed`, else a fresh read of the
/// doorbell record, accounted to QP index `qpi` (or the NIC alone); `None` if no receive
/// is posted.
pub(crate) fn refresh(
    nic: &mut NicState,
    qpi: Option<usize>,
    dbrec: u64,
    known: u16,
    consumed: u16,
) -> Option<u16> {
    if known != consumed {
        return Some(known);
    }
    nic.dma_read(qpi, dbrec, 4, Purpose::DbrecRead);
    let pi = host::read_be32(dbrec) as u16;
    (pi != consumed).then_some(pi)
}

/// Parse a receive WQE at `addr`: data segments from byte `skip`, ended early by the
/// `MLX5_INVALID_LKEY` terminator; a `byte_count` of 0 is 2^31 bytes (only the bytes a
/// message fills are key-checked). Returns the spans and the SRQ `next_wqe_index`.
pub(crate) fn read_recv(addr: u64, stride: usize, skip: usize) -> (Spans, u16) {
    let mut b = [0u8; 1024];
    let w = &mut b[..stride];
    host::read(addr, w);
    let mut spans = Spans::new();
    for seg in w[skip..].chunks_exact(16) {
        let lkey = be32(seg, 4);
        if lkey == INVALID_LKEY {
            break;
        }
        let len = match be32(seg, 0) {
            0 => {
                spans.zero_length += 1;
                ZERO_LENGTH_MEANS
            }
            n => n,
        };
        spans.push(Span {
            // In the address space of the ring the WQE is in.
            addr: host::in_space_of(addr, be64(seg, 8)),
            len: len.into(),
            key: lkey,
        });
    }
    (spans, be16(w, 2))
}
