//! The send queue of a raw packet QP: a SEND WQE is one frame, a TSO WQE a frame cut into
//! segments, an enhanced multi-packet (eMPW) WQE one frame per entry; the NIC gathers the
//! bytes, applies the Ethernet segment's offloads (VLAN insertion, IPv4 and TCP/UDP
//! checksums) and puts the frames on the wire (`switch`). A raw WQE is checked whole
//! before any frame leaves: its structure (`seg::decode`), then every local key of its
//! data segments or entries (LOCAL_PROT_ERR, as for any send). The requester completes
//! once its frames have left: Ethernet has no acknowledgement.

use crate::cqe::{synd, REQ_BYTE_CNT_POISON};
use crate::eth::frame::{fill_l3, fill_l4, insert_vlan, Headers, ETH_HLEN, VLAN_HLEN};
use crate::eth::seg::{decode, Eseg, Kind, RawWqe, CS_L3, CS_L4};
use crate::eth::switch::transmit;
use crate::eth::tso::segment;
use crate::host;
use crate::req::{check_gather, Outcome};
use crate::state::{InFlight, NicState, World};
use crate::wqe::{opcode, Ctrl, Op, Seg, Segs, Wqe, ZERO_LENGTH_MEANS};
use crate::xfer::gather_to;

/// Execute the send WQE `wqe` of raw packet QP index `qpi` on NIC `n`.
pub(crate) fn send(
    w: &mut World,
    n: usize,
    qpi: usize,
    ctrl: Ctrl,
    wqe: &mut [u8],
    in_flight: &InFlight,
) -> Outcome {
    if (ctrl.opcode, ctrl.opmod) == (opcode::NOP, 0) {
        return Outcome::Done(REQ_BYTE_CNT_POISON);
    }
    let nic = &mut w.nics[n];
    let raw = match decode(&ctrl, wqe, &nic.cfg.eth) {
        Ok(raw) => raw,
        Err(s) => return Outcome::Fail(s),
    };
    let d = match data_list(nic, ctrl, wqe, raw.data) {
        Ok(d) => d,
        Err(s) => return Outcome::Fail(s),
    };
    let pdn = nic.qp(qpi).pdn;
    if let Err(s) = check_gather(nic, qpi, pdn, wqe, &d, in_flight) {
        return Outcome::Fail(s);
    }
    let frames = match frames(nic, &raw, wqe, &d) {
        Ok(frames) => frames,
        Err(s) => return Outcome::Fail(s),
    };
    // The pacer's charge: the frames as they leave (Ethernet has no other payload).
    let bytes = frames.iter().map(|f| f.len() as u64).sum();
    nic.charge(qpi, frames.len() as u32, bytes);
    for f in frames {
        transmit(w, n, f);
    }
    Outcome::Done(REQ_BYTE_CNT_POISON)
}

/// The data segments (or eMPW entries) of `wqe` from byte `data`, as the send gather check
/// takes them: their total length must be within the largest message (LOCAL_LENGTH_ERR; a
/// pointer segment's `byte_count` 0 means 2^31 bytes and is counted in
/// `zero_length_segments`); an inline segment past the WQE is LOCAL_QP_OP_ERR.
fn data_list(nic: &mut NicState, ctrl: Ctrl, wqe: &[u8], data: usize) -> Result<Wqe, u8> {
    let (mut len, mut ptr_segs) = (0u64, 0u32);
    for seg in Segs::new(wqe, data) {
        let seg = seg?;
        if let Seg::Ptr { len: l, .. } = seg {
            ptr_segs += 1;
            nic.stats.zero_length_segments += u64::from(l == ZERO_LENGTH_MEANS);
        }
        len += u64::from(seg.len());
    }
    if len > u64::from(nic.cfg.max_msg_sz) {
        return Err(synd::LOCAL_LENGTH_ERR);
    }
    Ok(Wqe {
        ctrl,
        op: Op::Send,
        raddr: 0,
        rkey: 0,
        data,
        len,
        ptr_segs,
    })
}

/// The bytes of one entry (an inline segment or a checked pointer segment).
fn entry(wqe: &[u8], seg: Seg) -> Vec<u8> {
    match seg {
        Seg::Inline { off, len } => wqe[off..off + len as usize].to_vec(),
        Seg::Ptr { len, addr, .. } => {
            let mut b = vec![0u8; len as usize];
            host::read(addr, &mut b);
            b
        }
    }
}

/// The frames WQE `raw` (its data list `d`, keys checked) puts on the wire.
fn frames(nic: &mut NicState, raw: &RawWqe, wqe: &[u8], d: &Wqe) -> Result<Vec<Vec<u8>>, u8> {
    let (start, end) = raw.eseg.inline;
    let inline = end - start;
    let max = crate::eth::rx::max_frame(&nic.cfg);
    let tag = if raw.eseg.vlan.is_some() {
        VLAN_HLEN
    } else {
        0
    };
    match raw.kind {
        Kind::Send if inline as u64 + d.len + tag as u64 > max as u64 => {
            // Longer than the port sends: the bytes were gathered (the reads are counted)
            // and the port drops the frame (`switch::transmit` says the same of shorter
            // frames that are still too long).
            nic.stats.eth.tx_oversize += 1;
            Ok(Vec::new())
        }
        Kind::Send => Ok(vec![offload(whole(wqe, raw, d), &raw.eseg)]),
        Kind::Tso => {
            if d.len > u64::from(nic.cfg.eth.max_tso) {
                return Err(synd::LOCAL_LENGTH_ERR);
            }
            let mss = usize::from(raw.eseg.mss);
            let segs = segment(&whole(wqe, raw, d), inline, mss, raw.eseg.cs_flags)
                .ok_or(synd::LOCAL_QP_OP_ERR)?;
            nic.stats.eth.tso_segments += segs.len() as u64;
            Ok(segs)
        }
        Kind::Empw => {
            let mut out = Vec::new();
            for seg in Segs::new(wqe, raw.data).flatten() {
                if seg.len() as usize > max {
                    nic.stats.eth.tx_oversize += 1;
                    continue;
                }
                out.push(offload(entry(wqe, seg), &raw.eseg));
            }
            nic.stats.eth.empw_packets += out.len() as u64;
            Ok(out)
        }
    }
}

/// The frame of a SEND or TSO WQE: its inline header, then its data segments in order.
fn whole(wqe: &[u8], raw: &RawWqe, d: &Wqe) -> Vec<u8> {
    let (start, end) = raw.eseg.inline;
    let mut f = vec![0u8; (end - start) + d.len as usize];
    f[..end - start].copy_from_slice(&wqe[start..end]);
    // The model's own buffer as the destination (host addresses are process addresses).
    gather_to(
        f[end - start..].as_mut_ptr() as u64,
        wqe,
        Segs::new(wqe, d.data),
    );
    f
}

/// A frame with the Ethernet segment's offloads applied: the VLAN tag inserted after the
/// MAC addresses, then the IPv4 header checksum (`cs_flags` 0x40) and the TCP or UDP
/// checksum (0x80) computed where the frame has those headers (a frame without them, an
/// IPv4 fragment or a length field that disagrees with the frame gets none).
fn offload(mut f: Vec<u8>, e: &Eseg) -> Vec<u8> {
    if let Some((tpid, tci)) = e.vlan {
        if f.len() < ETH_HLEN - 2 {
            f.resize(ETH_HLEN - 2, 0);
        }
        f = insert_vlan(&f, tpid, tci);
    }
    if e.cs_flags & (CS_L3 | CS_L4) != 0 {
        let h = Headers::parse(&f);
        if e.cs_flags & CS_L3 != 0 {
            fill_l3(&mut f, &h);
        }
        if e.cs_flags & CS_L4 != 0 {
            fill_l4(&mut f, &h);
        }
    }
    f
}
