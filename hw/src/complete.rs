//! Reporting a completion: the entry every engine calls with a CQE. It holds the CQE back
//! under `Fault::DelayCqes`, hands it to compression (`cqz`) when the CQ compresses now, or
//! writes it whole (`cq`); a CQE the CQ cannot take makes its QP fatal.

use crate::cq::{lost, write_now};
use crate::cqe::Cqe;
use crate::state::{Delayed, NicState};

/// Report a completion of QP index `qpi` on its send or receive CQ. A CQE lost to a CQ in
/// error marks the QP fatal (the caller then moves it to ERR).
pub(crate) fn complete(nic: &mut NicState, qpi: usize, recv: bool, mut cqe: Cqe) {
    let v1 = nic.cfg.cqe_version == 1;
    let q = nic.qp(qpi);
    let cq = if recv { q.recv_cq } else { q.send_cq };
    if v1 {
        cqe.srqn = q.user_index;
    }
    if !post(nic, cq, Some(qpi), cqe) {
        lost(nic, qpi);
    }
}

/// Report a completion of no QP on CQ index `cq`: a receive work queue's (`eth`), whose
/// CQE already carries its user index. A CQ in error drops it (`Stats::cqes_dropped`).
pub(crate) fn complete_cq(nic: &mut NicState, cq: usize, cqe: Cqe) {
    post(nic, cq, None, cqe);
}

/// Hold `cqe` back under `Fault::DelayCqes`, or write it (compressing it if the CQ does
/// now). Returns false if the CQ is (or just went) into error.
fn post(nic: &mut NicState, cq: usize, qp: Option<usize>, cqe: Cqe) -> bool {
    if nic.faults.delay_cqes || !nic.delayed.is_empty() {
        nic.delayed.push_back(Delayed { cq, qp, cqe });
        nic.defer();
        return true;
    }
    write(nic, cq, qp, &cqe)
}

/// Write every CQE held back by `Fault::DelayCqes`; returns how many.
pub(crate) fn flush_delayed(nic: &mut NicState) -> usize {
    let mut done = 0;
    while let Some(d) = nic.delayed.pop_front() {
        done += 1;
        let cq_alive = nic.cqs.get(d.cq).is_some_and(Option::is_some);
        let qp_alive = d.qp.is_none_or(|i| nic.qps[i].is_some());
        if cq_alive && qp_alive && !write(nic, d.cq, d.qp, &d.cqe) {
            if let Some(i) = d.qp {
                lost(nic, i);
            }
        }
    }
    done
}

/// Write one CQE, or hold it for compression (`cqz`). Returns false if the CQ is (or just
/// went) into error.
fn write(nic: &mut NicState, cq: usize, qp: Option<usize>, cqe: &Cqe) -> bool {
    if nic.cq(cq).zip.is_some() && crate::cqz::hold(nic, cq, qp, cqe) {
        return true;
    }
    write_now(nic, cq, qp, cqe)
}
