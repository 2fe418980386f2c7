//! DC, mlx5's Dynamically Connected transport (prm-facts-next §3): a DCI executes RC
//! operations against whichever DCT the address vector of each WQE names (the DCT number in
//! `dqp_dct`, the DC access key in bytes 0..8). It holds one connection at a time: a WQE to
//! another destination than the last tears the connection down and sets up a new one, each a
//! handshake on the wire and nothing on PCIe (§3.6), both counted in `Stats`.
//!
//! A DCI with stream channels (`DciStreams`, prm-facts-next §3.5) names a stream in each
//! WQE; an error reported by the target or the retry timers is confined to that stream
//! while fewer than `1 << log_errored` streams are in error: the WQE completes with its
//! syndrome, the DCI stays in RTS, and the stream's later WQEs are flushed until
//! `Nic::reset_dci_stream` (mlx5dv_dci_stream_id_reset(3)). The model executes a DCI's WQEs
//! in order across streams (hardware may interleave them; only the order within a stream is
//! promised) and keeps one connection per DCI (docs/model.md, "DCI streams").

use crate::complete::complete;
use crate::cqe::{synd, Cqe};
use crate::state::{DcConn, Dest, NicState, World};
use crate::types::{DcRefusal, QpState, Transport};
use crate::ud::Av;
use crate::wqe::Ctrl;

/// Why a DC request reached no DCT.
pub(crate) enum Refused {
    /// Dropped on the way or at the target: the DCI times out and retransmits.
    Dropped,
    /// NAKed by the target ([`DcRefusal::Nak`]): the DCI completes with this syndrome.
    Nak(u8),
}

/// The DCT (NIC index, QP index) that executes the request of DCI `qpi` on NIC `n` whose
/// first PSN is `psn` and whose WQE carries `av`: the DCT of the current connection if `av`
/// names it, else a new connection (after a disconnect if one was up), the DCT's expected
/// PSN for this DCI starting at `psn`. The DCT's responder context is loaded with this
/// connection's PSN; [`save`] stores it back after the response.
pub(crate) fn connect(
    w: &mut World,
    n: usize,
    qpi: usize,
    av: &Av,
    psn: u32,
) -> Result<(usize, usize), Refused> {
    let dest = Dest {
        lid: av.dlid,
        gid: av.grh.map_or([0; 16], |g| g.dgid),
        qpn: av.dqpn,
    };
    let m = w.route(&dest);
    let current = w.nics[n].qp(qpi).dc;
    let conn = match current {
        Some(c) if Some(c.nic) == m && c.dctn == av.dqpn && c.key == av.dc_key => c,
        _ => {
            let nic = &mut w.nics[n];
            if nic.qp(qpi).dc.take().is_some() {
                nic.stats.dc_disconnects += 1;
            }
            let m = admit(w, n, m, av)?;
            w.nics[n].stats.dc_connects += 1;
            let c = DcConn {
                nic: m,
                dctn: av.dqpn,
                key: av.dc_key,
                rq_psn: psn,
            };
            w.nics[n].qp(qpi).dc = Some(c);
            c
        }
    };
    let target = &mut w.nics[conn.nic];
    let Some(dqpi) = ready_dct(target, conn.dctn) else {
        // The DCT went away under a live connection (destroyed): nothing answers.
        target.stats.dc_unknown_dct += 1;
        w.nics[n].qp(qpi).dc = None;
        return Err(Refused::Dropped);
    };
    target.qp(dqpi).rq_psn = conn.rq_psn;
    Ok((conn.nic, dqpi))
}

/// The connect handshake's checks at the target: a ready DCT with that number, and the key
/// it was created with (prm-facts-next §3.6: a key that differs is refused; what the DCI
/// then sees is not public, `NicConfig::dc_refusal`).
fn admit(w: &mut World, n: usize, m: Option<usize>, av: &Av) -> Result<usize, Refused> {
    let Some(m) = m else {
        w.nics[n].stats.dc_unknown_dct += 1;
        return Err(refusal(w, n, synd::REMOTE_INVAL_REQ_ERR));
    };
    let target = &mut w.nics[m];
    let Some(dqpi) = ready_dct(target, av.dqpn) else {
        target.stats.dc_unknown_dct += 1;
        return Err(refusal(w, n, synd::REMOTE_INVAL_REQ_ERR));
    };
    if target.qp(dqpi).dc_key != av.dc_key {
        target.stats.dc_key_violations += 1;
        return Err(refusal(w, n, synd::REMOTE_ACCESS_ERR));
    }
    Ok(m)
}

/// What DCI NIC `n` sees of a refusal: nothing (a lost request, counted as such) or a NAK.
fn refusal(w: &mut World, n: usize, nak: u8) -> Refused {
    match w.nics[n].cfg.dc_refusal {
        DcRefusal::Drop => Refused::Dropped,
        DcRefusal::Nak => Refused::Nak(nak),
    }
}

/// The index of DCT `dctn` of `nic` if it is past RTR (the firmware object exists).
fn ready_dct(nic: &crate::state::NicState, dctn: u32) -> Option<usize> {
    nic.qp_index(dctn).filter(|&i| {
        nic.qps[i]
            .as_ref()
            .is_some_and(|q| q.transport == Transport::Dct && q.state == QpState::Rtr)
    })
}

/// Store the DCT's expected PSN back into the connection of DCI `qpi` on NIC `n`, after
/// DCT `dqpi` of NIC `m` answered (or not) one of its requests.
pub(crate) fn save(w: &mut World, n: usize, qpi: usize, m: usize, dqpi: usize) {
    let rq_psn = w.nics[m].qp(dqpi).rq_psn;
    if let Some(c) = &mut w.nics[n].qp(qpi).dc {
        c.rq_psn = rq_psn;
    }
}

/// What the stream of a DCI's WQE `ctrl` lets it do before it executes.
pub(crate) enum Gate {
    /// Execute it.
    Run,
    /// An id beyond the DCI's channels: fail the DCI with this syndrome.
    BadStream(u8),
    /// Its stream is in error: flush it.
    Flush,
}

/// The gate of WQE `ctrl` of DCI `qpi` on NIC `nic`.
pub(crate) fn gate(nic: &mut NicState, qpi: usize, ctrl: &Ctrl) -> Gate {
    let caps = nic.cfg.dci_streams;
    let q = nic.qp(qpi);
    let plain = q.dci_streams.log_channels == 0;
    if plain && caps.plain_dci_ignores_stream {
        Gate::Run
    } else if u32::from(ctrl.stream) >= 1 << q.dci_streams.log_channels {
        Gate::BadStream(caps.bad_stream_syndrome)
    } else if q.errored_streams.contains(&ctrl.stream) {
        Gate::Flush
    } else {
        Gate::Run
    }
}

/// Complete WQE `ctrl` at the head of QP `qpi` with `syndrome` as a stream error if it is
/// one: a DCI's WQE on one of its channels, a syndrome from the target or the retry timers
/// (or any, with `DciStreamConfig::local_errors_are_stream_errors`), and fewer than
/// `1 << log_errored` streams in error with this one. The stream enters error, the DCI's
/// connection ends (the next WQE connects again, with fresh PSNs), and the DCI stays in RTS;
/// returns false (nothing done) when the error is the whole QP's.
pub(crate) fn stream_error(nic: &mut NicState, qpi: usize, ctrl: Ctrl, syndrome: u8) -> bool {
    let local_too = nic.cfg.dci_streams.local_errors_are_stream_errors;
    let q = nic.qp(qpi);
    let remote = matches!(
        syndrome,
        synd::REMOTE_INVAL_REQ_ERR
            | synd::REMOTE_ACCESS_ERR
            | synd::REMOTE_OP_ERR
            | synd::TRANSPORT_RETRY_EXC_ERR
            | synd::RNR_RETRY_EXC_ERR
    );
    if q.transport != Transport::Dci
        || u32::from(ctrl.stream) >= 1 << q.dci_streams.log_channels
        || !(remote || local_too)
        || q.errored_streams.len() + 1 >= 1usize << q.dci_streams.log_errored
    {
        return false;
    }
    q.errored_streams.push(ctrl.stream);
    let cqe = Cqe::req_err(q.qpn, ctrl.opcode, q.sq_ci, syndrome);
    let left = q.sq_pi.wrapping_sub(q.sq_ci);
    q.sq_ci = q.sq_ci.wrapping_add(ctrl.nbb().min(left));
    q.head_psn = None;
    q.stall = None;
    q.retries = 0;
    q.rnr_retries = 0;
    q.dc = None;
    nic.stats.dci_stream_errors += 1;
    complete(nic, qpi, false, cqe);
    true
}
