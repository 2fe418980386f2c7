//! UC (prm-facts-next §2): the requester completes a message once its packets have left
//! (no ACK, no retry); the responder executes what arrives in order and drops a message
//! one of whose packets was lost, up to the next first or only packet. Responder errors
//! are silent: no NAK, no QP error (the IB classes D/D1 as the kernel's rxe implements
//! them in `rxe_resp.c`: `check_psn`, `check_op_valid`, `do_class_d1e_error` and the
//! `RESPST_ERR_RNR` / `RESPST_ERR_RKEY_VIOLATION` / `RESPST_ERR_LENGTH` cases).

use crate::cqe::{cqe_op, synd, Cqe, REQ_BYTE_CNT_POISON};
use crate::pcie::{Ctx, Purpose};
use crate::qp::fail;
use crate::req::{check_gather, connected, packets, Outcome};
use crate::resp::{invalidate, put_back, recv_cqe, scatter_to_cqe, take_recv, Request};
use crate::state::{hit_range, InFlight, NicState, World, PSN_MASK};
use crate::types::{Access, Transport};
use crate::wqe::{opcode, Ctrl, Op, Segs};
use crate::xfer::{Cursor, Span};

/// Execute the UC send WQE `wqe` of QP index `qpi` on NIC `n`: SEND (with immediate or
/// invalidate) or WRITE (with immediate). READ and atomics are not UC operations
/// (`MLX5_SUPPORTED_SEND_OPS_FLAGS_UC`): LOCAL_QP_OP_ERR, as for a malformed WQE.
pub(crate) fn send(
    w: &mut World,
    n: usize,
    qpi: usize,
    ctrl: Ctrl,
    wqe: &mut [u8],
    in_flight: &InFlight,
) -> Outcome {
    let nic = &mut w.nics[n];
    let d = match nic.decode(ctrl, wqe, 0) {
        Ok(d) => d,
        Err(s) => return Outcome::Fail(s),
    };
    match d.op {
        Op::Nop => return Outcome::Done(REQ_BYTE_CNT_POISON),
        Op::Read | Op::Atomic(_) => return Outcome::Fail(synd::LOCAL_QP_OP_ERR),
        Op::Send | Op::Write => {}
    }
    let q = nic.qp(qpi);
    let (pdn, qpn, mtu, dest, sl) = (q.pdn, q.qpn, q.mtu, q.dest, q.sl);
    if let Err(s) = check_gather(nic, qpi, pdn, wqe, &d, in_flight) {
        return Outcome::Fail(s);
    }
    let wqe = &*wqe;
    let npkts = packets(d.len, mtu);
    nic.on_wire(qpi, npkts, d.len);
    let q = nic.qp(qpi);
    let psn = q.sq_psn;
    q.sq_psn = psn.wrapping_add(npkts) & PSN_MASK;
    // The packets before the first lost one arrive in order; those after the lost run
    // arrive too, but the responder discards them (no first packet of theirs).
    let (in_order, lost) = hit_range(&mut nic.faults.lose, qpn, npkts).unwrap_or((npkts, 0));
    nic.stats.packets_lost += u64::from(lost);
    let Some(to) = connected(w, n, qpn, Transport::Uc, &dest, psn) else {
        w.nics[n].stats.packets_lost += u64::from(npkts - lost);
        return Outcome::Done(REQ_BYTE_CNT_POISON);
    };
    let r = &mut w.nics[to.nic];
    r.context(Some(to.qpi), Ctx::Qp(dest.qpn));
    let d = d.at_responder(r.qp(to.qpi).space);
    let req = Request {
        wqe,
        d: &d,
        psn,
        npkts,
        src: None,
        sl,
    };
    if in_order == 0 {
        // The first packet was lost: whatever follows it is discarded.
        r.stats.uc_incomplete += u64::from(lost < npkts);
    } else {
        respond(r, to.qpi, &req, in_order);
    }
    Outcome::Done(REQ_BYTE_CNT_POISON)
}

/// The responder QP `qpi` of `nic` got the first `in_order` packets of request `r` (a first
/// or only packet among them, so it takes the message whatever its PSN: UC resynchronises
/// on it). With all of them it executes the message; with fewer it keeps what the packets
/// that arrived wrote and drops the message.
fn respond(nic: &mut NicState, qpi: usize, r: &Request<'_>, in_order: u32) {
    let q = nic.qp(qpi);
    q.rq_psn = r.psn.wrapping_add(in_order) & PSN_MASK;
    let (pdn, mtu) = (q.pdn, u64::from(q.mtu));
    let whole = in_order == r.npkts;
    let landed = if whole {
        r.d.len
    } else {
        u64::from(in_order) * mtu
    };
    nic.stats.uc_incomplete += u64::from(!whole);
    let d = r.d;
    let segs = Segs::new(r.wqe, d.data);
    if matches!(d.op, Op::Write) {
        // The RETH of the first packet names the whole range (rxe `check_op_valid`,
        // `check_rkey`): a QP without REMOTE_WRITE or a bad key drops the message.
        let access = nic.qp(qpi).access;
        if !access.contains(Access::REMOTE_WRITE)
            || !nic.check_mr(qpi, d.rkey, pdn, d.raddr, d.len, Access::REMOTE_WRITE)
        {
            nic.stats.uc_errors += 1;
            return;
        }
        let target = [Span {
            addr: d.raddr,
            len: landed,
            key: d.rkey,
        }];
        Cursor::new(&target).put_gather(r.wqe, segs);
        nic.dma_write(Some(qpi), d.raddr, landed, Purpose::Scatter);
        if !whole || d.ctrl.opcode != opcode::RDMA_WRITE_IMM {
            return;
        }
        // The last packet carries the immediate and consumes a receive.
        match take_recv(nic, qpi) {
            Some(rv) => recv_cqe(nic, qpi, r, &rv, cqe_op::RESP_WR_IMM, d.ctrl.imm, None),
            None => nic.stats.uc_no_receive += 1,
        }
        return;
    }
    // SEND: the first packet takes the receive.
    let Some(rv) = take_recv(nic, qpi) else {
        nic.stats.uc_no_receive += 1;
        return;
    };
    if rv.spans.capacity() < d.len {
        // Class D: dropped, the receive stays for the next message.
        put_back(nic, qpi, &rv);
        nic.stats.uc_errors += 1;
        return;
    }
    let qpn = nic.qp(qpi).qpn;
    if rv
        .spans
        .used(landed)
        .any(|s| !nic.check_mr(qpi, s.key, rv.pdn, s.addr, s.len, Access::LOCAL_WRITE))
    {
        // The receive's own key is bad: a local error of the responder (class A).
        let cqe = Cqe::resp_err(qpn, rv.counter, rv.srqn, synd::LOCAL_PROT_ERR);
        crate::complete::complete(nic, qpi, true, cqe);
        fail(nic, qpi);
        return;
    }
    let scattered = whole.then(|| scatter_to_cqe(nic, qpi, r)).flatten();
    if scattered.is_none() {
        if whole {
            Cursor::new(rv.spans.as_slice()).put_gather(r.wqe, segs);
        } else {
            // Only the bytes of the packets that arrived.
            let part: Vec<Span> = rv.spans.used(landed).collect();
            Cursor::new(&part).put_gather(r.wqe, segs);
        }
        for s in rv.spans.used(landed) {
            nic.dma_write(Some(qpi), s.addr, s.len, Purpose::Scatter);
        }
    }
    if !whole {
        // Class D1: the partial message is dropped and its receive reused.
        put_back(nic, qpi, &rv);
        return;
    }
    let ctrl = d.ctrl;
    let (op, imm) = match ctrl.opcode {
        opcode::SEND_IMM => (cqe_op::RESP_SEND_IMM, ctrl.imm),
        opcode::SEND_INVAL => (cqe_op::RESP_SEND_INV, ctrl.imm),
        _ => (cqe_op::RESP_SEND, [0; 4]),
    };
    if ctrl.opcode == opcode::SEND_INVAL && !invalidate(nic, u32::from_be_bytes(ctrl.imm), pdn) {
        // rxe's RESPST_ERR_INVALIDATE_RKEY (class J, for every transport): the receive
        // completes in error and the QP goes to ERR.
        let cqe = Cqe::resp_err(qpn, rv.counter, rv.srqn, synd::REMOTE_INVAL_REQ_ERR);
        crate::complete::complete(nic, qpi, true, cqe);
        fail(nic, qpi);
        return;
    }
    recv_cqe(nic, qpi, r, &rv, op, imm, scattered);
    if nic.qp(qpi).fatal {
        // Its receive CQ is in error: the QP cannot report completions.
        fail(nic, qpi);
    }
}
