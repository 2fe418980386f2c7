//! UD (prm-facts-next §1): the address vector an address handle holds, the datagram send
//! (ctrl + `mlx5_wqe_datagram_seg` + data) and its delivery through the fabric, with the
//! 40-byte GRH area at the receiver.

use crate::complete::complete;
use crate::cqe::{cqe_op, synd, Cqe, REQ_BYTE_CNT_POISON};
use crate::mcast::Kind;
use crate::pcie::{Ctx, Purpose};
use crate::qp::fail;
use crate::req::{check_gather, Outcome};
use crate::resp::take_recv;
use crate::roce;
use crate::state::{take_fault, Dest, InFlight, NicState, World};
use crate::types::{
    Access, AhAttr, CqePkey, GidType, GlobalRoute, HwError, LinkLayer, QpState, Transport,
};
use crate::wqe::{be16, be32, be64, opcode, Ctrl, Segs, Wqe};
use crate::xfer::Cursor;

/// Size of `mlx5_wqe_av` (the full address vector).
const AV_BYTES: usize = 48;
/// Size of the compact address vector: the first 16 bytes of `mlx5_wqe_av`.
const COMPACT_AV_BYTES: usize = 16;
/// The GRH area at the start of every UD receive buffer.
const GRH_BYTES: u64 = 40;
/// Q_Key bit 31: a controlled Q_Key (IBA 1.6 §3.5.3). A send whose work request carries
/// one goes out with the sending QP's own Q_Key instead (IBA 10.2.5 / 11.4.1.1; the kernel
/// drivers that build the DETH in software apply the same rule: mthca and mlx4
/// `build_mlx_header`, hns `set_ud_wqe`); rdma-core's mlx5 writes the WR's value as given,
/// so on mlx5 the HCA applies it.
const CONTROLLED_QKEY: u32 = 1 << 31;
/// `dqp_dct` bit 31, `MLX5_EXTENDED_UD_AV`: the full 48-byte AV follows.
const EXTENDED_AV: u32 = 1 << 31;
/// `grh_gid_fl` bit 30: the AV carries a GRH (InfiniBand).
const AV_GRH: u32 = 1 << 30;
/// `flags_rqpn` bit 28 (`MLX5_GRH_IN_BUFFER`), as bit 4 of the flags byte.
const CQE_GRH_IN_BUFFER: u8 = 1 << 4;
/// GRH `NxtHdr` of an IBA transport header (IBA 8.3.1).
const NEXT_HDR_IBA: u8 = 0x1b;
/// BTH (12) + DETH (8) + ICRC (4): the transport bytes the GRH's PayLen counts besides
/// the payload and the immediate.
const UD_HEADERS: usize = 24;

/// The 48-byte AV of an address handle to `a` from NIC `n`, as `mlx5_create_ah` fills it
/// (prm-facts-next §1.1): `dqp_dct` and the Q_Key are left 0 (every WQE writes both). On
/// InfiniBand: SL, source path bits, DLID, and the GRH fields with bit 30 if the address
/// has a global route. On RoCE the route is required (`mlx5_create_ah` fails with EINVAL
/// without `is_global`): `stat_rate_sl = (sl & 7) << 1`, `rlid` = the UDP source port
/// from the flow label ([`roce::udp_sport`]) for a RoCE v2 source GID (0 for v1: `mlx5_create_ah` sets it only
/// when `ibv_query_gid_type` says `IBV_GID_TYPE_SYSFS_ROCE_V2`), `rmac` = the destination
/// MAC ([`dmac`]), the GRH fields without bit 30. The SGID index must be in the
/// port's table (`ibv_query_gid_type` fails otherwise).
pub(crate) fn build_av(w: &mut World, n: usize, a: &AhAttr) -> Result<[u8; AV_BYTES], HwError> {
    let nic = &mut w.nics[n];
    if a.port == 0 || a.port > nic.cfg.ports {
        return Err(HwError::InvalidParam("port"));
    }
    if a.sl > 0xf || a.src_path_bits > 0x7f {
        return Err(HwError::InvalidParam("sl/src_path_bits"));
    }
    let roce = nic.cfg.link_layer == LinkLayer::Ethernet;
    let mut av = [0u8; AV_BYTES];
    if let Some(g) = a.grh {
        if usize::from(g.sgid_index) >= nic.gids.len() || g.flow_label > 0xf_ffff {
            return Err(HwError::InvalidParam("sgid_index/flow_label"));
        }
        av[26] = g.traffic_class;
        av[27] = g.hop_limit;
        let present = if roce { 0 } else { AV_GRH };
        let w = present | u32::from(g.sgid_index) << 20 | g.flow_label;
        av[28..32].copy_from_slice(&w.to_be_bytes());
        av[32..48].copy_from_slice(&g.dgid);
    }
    match (roce, a.grh) {
        (false, _) => {
            av[12] = a.sl;
            av[13] = a.src_path_bits;
            av[14..16].copy_from_slice(&a.dlid.to_be_bytes());
        }
        (true, None) => return Err(HwError::InvalidParam("a RoCE address needs a GRH")),
        (true, Some(g)) => {
            let sgid = &nic.gids[usize::from(g.sgid_index)];
            if sgid.gid_type == GidType::RoceV2 {
                // The kernel resolves the route from the two addresses: an IPv4 source
                // and an IPv6 destination (or the reverse) have none.
                if roce::is_ipv4_mapped(&sgid.gid) != roce::is_ipv4_mapped(&g.dgid) {
                    return Err(HwError::InvalidParam(
                        "RoCE v2: the source and destination GIDs are not both IPv4",
                    ));
                }
                let sport = roce::udp_sport(g.flow_label, &mut nic.sport_rng);
                av[14..16].copy_from_slice(&sport.to_be_bytes());
            }
            av[12] = (a.sl & 7) << 1;
            let mac = dmac(w, &g.dgid).ok_or(HwError::InvalidParam(
                "no NIC answers for the destination GID",
            ))?;
            av[20..26].copy_from_slice(&mac);
        }
    }
    Ok(av)
}

/// The destination MAC of an address handle to `dgid`, as the kernel resolves it for
/// `mlx5_create_ah` (`ib_resolve_eth_dmac`): for a multicast GID the group's MAC
/// ([`roce::mcast_mac`]), for a link-local GID its EUI-64 read back
/// (`rdma_get_ll_mac`, `include/rdma/ib_addr.h`), else by neighbour resolution, which on
/// the model's fabric is the MAC of the NIC that has the GID. `None`: no NIC has it (the
/// kernel fails the address handle: nobody answers).
pub(crate) fn dmac(w: &World, dgid: &[u8; 16]) -> Option<[u8; 6]> {
    if crate::mcast::is_mcast_gid(dgid) {
        // `ib_resolve_eth_dmac`: a multicast group's MAC is mapped from its address.
        return Some(roce::mcast_mac(dgid));
    }
    if dgid[..8] == [0xfe, 0x80, 0, 0, 0, 0, 0, 0] {
        return Some([
            dgid[8] ^ 0x02,
            dgid[9],
            dgid[10],
            dgid[13],
            dgid[14],
            dgid[15],
        ]);
    }
    w.nics
        .iter()
        .find(|n| n.gids.iter().any(|e| e.gid == *dgid))
        .map(|n| roce::mac(n.lid))
}

/// An address vector as the NIC reads it from a WQE (UD: Q_Key and remote QPN; DC: DC
/// key and DCT number).
pub(crate) struct Av {
    qkey: u32,
    /// Bytes 0..8 as one BE64: a DCI's DC access key.
    pub(crate) dc_key: u64,
    /// `dqp_dct` bits 23..0: the remote QPN (UD) or DCT number (DC).
    pub(crate) dqpn: u32,
    /// `stat_rate_sl` bits 3..0: the service level the packet travels on.
    pub(crate) sl: u8,
    pub(crate) dlid: u16,
    pub(crate) grh: Option<GlobalRoute>,
    /// Its size in the WQE: 48 bytes, or 16 for a compact AV.
    pub(crate) len: usize,
}

impl Av {
    /// Parse the AV after the control segment of `wqe`: 48 bytes with
    /// `MLX5_EXTENDED_UD_AV`, else the 16-byte compact AV when the NIC accepts one
    /// (`compact`, `NicConfig::compact_av`). On RoCE (`roce`) every address is global: the
    /// GRH fields are always read (bit 30 is reserved there), `rlid` is a UDP source port,
    /// not a LID, and a compact AV, which has no GRH fields, is not accepted. `None`: a
    /// compact AV the NIC does not accept, or a WQE too short for its AV.
    pub(crate) fn parse(wqe: &[u8], compact: bool, roce: bool) -> Option<Av> {
        let b = wqe.get(16..)?;
        let dqp_dct = be32(b.get(..COMPACT_AV_BYTES)?, 8);
        let extended = dqp_dct & EXTENDED_AV != 0;
        if !extended && (!compact || roce) {
            return None;
        }
        let len = if extended { AV_BYTES } else { COMPACT_AV_BYTES };
        let b = b.get(..len)?;
        let gfl = if extended { be32(b, 28) } else { 0 };
        let grh = (roce || gfl & AV_GRH != 0).then(|| GlobalRoute {
            dgid: b[32..48].try_into().expect("16 bytes"),
            flow_label: gfl & 0xf_ffff,
            sgid_index: (gfl >> 20) as u8,
            hop_limit: b[27],
            traffic_class: b[26],
        });
        Some(Av {
            qkey: be32(b, 0),
            dc_key: be64(b, 0),
            dqpn: dqp_dct & 0xff_ffff,
            sl: if roce { (b[12] >> 1) & 7 } else { b[12] & 0xf },
            dlid: if roce { 0 } else { be16(b, 14) },
            grh,
            len,
        })
    }
}

/// Execute the UD send WQE `wqe` of QP index `qpi` on NIC `n`: SEND or SEND_IMM of at most
/// the port MTU. The requester completes as soon as the packet has left; whatever happens
/// to it on the way (loss, a wrong Q_Key, no receive) it never learns.
pub(crate) fn send(
    w: &mut World,
    n: usize,
    qpi: usize,
    ctrl: Ctrl,
    wqe: &mut [u8],
    in_flight: &InFlight,
) -> Outcome {
    if !matches!(ctrl.opcode, opcode::SEND | opcode::SEND_IMM) || ctrl.opmod != 0 {
        return Outcome::Fail(synd::LOCAL_QP_OP_ERR);
    }
    let nic = &mut w.nics[n];
    let roce = nic.cfg.link_layer == LinkLayer::Ethernet;
    let Some(mut av) = Av::parse(wqe, nic.cfg.compact_av, roce) else {
        return Outcome::Fail(synd::LOCAL_QP_OP_ERR);
    };
    if av.qkey & CONTROLLED_QKEY != 0 {
        // A controlled Q_Key in the WQE means "the QP's own" (IBA: see CONTROLLED_QKEY).
        av.qkey = nic.qp(qpi).qkey;
    }
    let d = match nic.decode(ctrl, wqe, av.len) {
        Ok(d) => d,
        Err(s) => return Outcome::Fail(s),
    };
    let q = nic.qp(qpi);
    let (pdn, qpn, mtu) = (q.pdn, q.qpn, q.mtu);
    q.sq_psn = q.sq_psn.wrapping_add(1) & 0xff_ffff;
    if let Err(s) = check_gather(nic, qpi, pdn, wqe, &d, in_flight) {
        return Outcome::Fail(s);
    }
    let wqe = &*wqe;
    // The port's active MTU, taken at RTR.
    if d.len > u64::from(mtu) {
        // What mlx5 does with an over-MTU UD send is not public (prm-facts-next §1.5): the
        // model completes it in error, as for any message the QP cannot carry.
        return Outcome::Fail(synd::LOCAL_LENGTH_ERR);
    }
    nic.on_wire(qpi, 1, d.len);
    if take_fault(&mut nic.faults.lose, qpn, 1) {
        nic.stats.packets_lost += 1;
        return Outcome::Done(REQ_BYTE_CNT_POISON);
    }
    let src = match (roce, av.grh) {
        (true, Some(g)) => {
            // The source GID's entry says what goes on the wire. An index beyond the table
            // (an AV not from create_ah): what mlx5 does is not public; the model fails
            // the WQE as it does any AV it cannot use.
            let Some(e) = nic.gids.get(usize::from(g.sgid_index)) else {
                return Outcome::Fail(synd::LOCAL_QP_OP_ERR);
            };
            Source {
                qpn,
                // RoCE has no LIDs: the CQE's `slid` is 0 (the kernel reports 0 there).
                lid: 0,
                gid: e.gid,
                wire: Wire::Roce {
                    l3: roce::L3::of(e),
                    vlan: e.vlan,
                },
            }
        }
        _ => Source {
            qpn,
            lid: nic.lid,
            gid: nic.gid,
            wire: Wire::Ib,
        },
    };
    deliver(w, n, qpi, &av, &src, wqe, &d);
    Outcome::Done(REQ_BYTE_CNT_POISON)
}

/// The sender of a datagram.
struct Source {
    qpn: u32,
    lid: u16,
    /// The source GID (RoCE: the AV's SGID index's entry; IB: GID 0).
    gid: [u8; 16],
    wire: Wire,
}

/// What a datagram carries on the link besides BTH and DETH.
#[derive(Clone, Copy)]
enum Wire {
    /// InfiniBand: an IBA GRH if the AV has a global route.
    Ib,
    /// RoCE: the L3 header of the source GID's type and its VLAN tag, if any.
    Roce { l3: roce::L3, vlan: Option<u16> },
}

/// Deliver one datagram of QP index `qpi` on NIC `n` to the QP its AV names, or to every
/// QP its multicast group reaches (`mcast`), or drop it silently and count why (at the
/// destination NIC, or at `n` when the address leads nowhere).
fn deliver(w: &mut World, n: usize, qpi: usize, av: &Av, src: &Source, wqe: &[u8], d: &Wqe) {
    let (roce, vlan) = match src.wire {
        Wire::Roce { vlan, .. } => (true, Some(vlan)),
        Wire::Ib => (false, None),
    };
    match crate::mcast::kind(av.dqpn, av.dlid, av.grh.map(|g| g.dgid), roce) {
        Kind::Unicast => {}
        Kind::Group(mgid) => {
            for (m, rqpi) in crate::mcast::targets(w, n, qpi, &mgid, vlan) {
                land(&mut w.nics[m], rqpi, av, src, wqe, d);
            }
            return;
        }
        Kind::Unroutable => {
            w.nics[n].stats.ud_unroutable += 1;
            return;
        }
    }
    let dest = Dest {
        lid: av.dlid,
        gid: av.grh.map_or([0; 16], |g| g.dgid),
        qpn: av.dqpn,
    };
    let Some(m) = w.route(&dest) else {
        w.nics[n].stats.ud_unroutable += 1;
        return;
    };
    if let Wire::Roce { vlan, .. } = src.wire {
        // The destination GID must be on the VLAN the frame carries (or both on none).
        if !w.nics[m]
            .gids
            .iter()
            .any(|e| e.gid == dest.gid && e.vlan == vlan)
        {
            w.nics[m].stats.vlan_mismatches += 1;
            return;
        }
    }
    let target = w.nics[m].qp_index(av.dqpn).filter(|&i| {
        w.nics[m].qps[i].as_ref().is_some_and(|r| {
            // A QP in SQE still receives.
            r.transport == Transport::Ud
                && matches!(r.state, QpState::Rtr | QpState::Rts | QpState::Sqe)
        })
    });
    let Some(rqpi) = target else {
        w.nics[m].stats.ud_unroutable += 1;
        return;
    };
    land(&mut w.nics[m], rqpi, av, src, wqe, d);
}

/// The datagram arrives at UD QP index `rqpi` of `nic` (in RTR, RTS or SQE): the Q_Key
/// check, a receive taken, the GRH area and the payload scattered, the receive CQE.
fn land(nic: &mut NicState, rqpi: usize, av: &Av, src: &Source, wqe: &[u8], d: &Wqe) {
    let qpn = nic.qp(rqpi).qpn;
    nic.context(Some(rqpi), Ctx::Qp(qpn));
    if nic.qp(rqpi).qkey != av.qkey {
        nic.stats.qkey_violations += 1;
        return;
    }
    let Some(rv) = take_recv(nic, rqpi) else {
        nic.stats.ud_no_receive += 1;
        return;
    };
    let total = GRH_BYTES + d.len;
    let failed = if rv.spans.capacity() < total {
        Some(synd::LOCAL_LENGTH_ERR)
    } else {
        rv.spans
            .used(total)
            .any(|s| !nic.check_mr(rqpi, s.key, rv.pdn, s.addr, s.len, Access::LOCAL_WRITE))
            .then_some(synd::LOCAL_PROT_ERR)
    };
    if let Some(syndrome) = failed {
        // A receive too small or not writable: the receive completes in error and the QP
        // moves to ERR, as an RC responder's does (not pinned for UD on mlx5).
        complete(
            nic,
            rqpi,
            true,
            Cqe::resp_err(qpn, rv.counter, rv.srqn, syndrome),
        );
        fail(nic, rqpi);
        return;
    }
    let mut cur = Cursor::new(rv.spans.as_slice());
    let written_from = match av.grh {
        Some(g) => {
            let imm = usize::from(d.ctrl.opcode == opcode::SEND_IMM) * 4;
            let paylen = UD_HEADERS + imm + (d.len as usize).next_multiple_of(4);
            match src.wire {
                // RoCE v2 over IPv4: the 20-byte IPv4 header in the LAST 20 bytes of the
                // area (the kernel's `union rdma_network_hdr`, `roce4grh` after 20
                // reserved bytes); the first 20 are not defined (the model leaves them).
                Wire::Roce {
                    l3: roce::L3::Ipv4, ..
                } => {
                    let len = paylen + roce::UDP_HEADER;
                    let (tos, ttl) = (g.traffic_class, g.hop_limit);
                    cur.skip((GRH_BYTES as usize - roce::IPV4_HEADER) as u64);
                    cur.put_bytes(&roce::ipv4_header(tos, ttl, len, &src.gid, &g.dgid));
                }
                // RoCE v2 over IPv6: the IPv6 header, whose PayLen also counts UDP's.
                Wire::Roce {
                    l3: roce::L3::Ipv6, ..
                } => {
                    let len = paylen + roce::UDP_HEADER;
                    cur.put_bytes(&l3_header(&g, len, roce::NEXT_HDR_UDP, &src.gid));
                }
                // InfiniBand and RoCE v1: the IBA GRH.
                Wire::Ib | Wire::Roce { .. } => {
                    cur.put_bytes(&l3_header(&g, paylen, NEXT_HDR_IBA, &src.gid));
                }
            }
            0
        }
        None => {
            // No GRH on the wire: the 40 bytes are left as they were (undefined).
            cur.skip(GRH_BYTES);
            GRH_BYTES
        }
    };
    cur.put_gather(wqe, Segs::new(wqe, d.data));
    for s in rv.spans.used_from(written_from, total) {
        nic.dma_write(Some(rqpi), s.addr, s.len, Purpose::Scatter);
    }
    // Without an immediate the field carries the P_Key (index or value: `CqePkey`).
    let (op, imm) = match d.ctrl.opcode {
        opcode::SEND_IMM => (cqe_op::RESP_SEND_IMM, d.ctrl.imm),
        _ => (cqe_op::RESP_SEND, cqe_pkey(nic.cfg.cqe_pkey)),
    };
    // Bits 27..24 are the SL on InfiniBand, the RoCE packet type on RoCE; a VLAN tag is
    // reported with its PCP, the frame's priority from the AV's SL (`handle_responder`:
    // `vlan_info` bits 11..0 the VLAN id, 15..13 read as the SL).
    let (flags, vlan_info) = match src.wire {
        Wire::Roce { l3, vlan } => (
            CQE_GRH_IN_BUFFER | l3.packet_type(),
            vlan.map(|id| u16::from(av.sl & 7) << 13 | id),
        ),
        Wire::Ib if av.grh.is_some() => (CQE_GRH_IN_BUFFER | av.sl, None),
        Wire::Ib => (av.sl, None),
    };
    let cqe = Cqe {
        opcode: op,
        qpn,
        wqe_counter: rv.counter,
        byte_cnt: total as u32,
        imm,
        src_qpn: src.qpn,
        rqpn_flags: flags,
        slid: src.lid,
        srqn: rv.srqn,
        se: d.ctrl.solicited(),
        vlan_info,
        ..Cqe::default()
    };
    complete(nic, rqpi, true, cqe);
}

/// The model's P_Key table: one entry, the default P_Key (full membership, IBA 10.9.1.2).
const DEFAULT_PKEY: u16 = 0xffff;

/// `imm_inval_pkey` of a UD receive without immediate: bits 15..0 the P_Key index (0,
/// the table's only entry) or its value, as `how` says; bits 31..16 zero.
fn cqe_pkey(how: CqePkey) -> [u8; 4] {
    let field = match how {
        CqePkey::Index => 0,
        CqePkey::Value => DEFAULT_PKEY,
    };
    u32::from(field).to_be_bytes()
}

/// The 40-byte IBA GRH (IBA 8.3.1), or on RoCE v2 the IPv6 header (RFC 8200) of the same
/// layout: version 6, TClass, FlowLabel, PayLen, NxtHdr (`next`), HopLmt, SGID, DGID.
fn l3_header(
    g: &GlobalRoute,
    paylen: usize,
    next: u8,
    sgid: &[u8; 16],
) -> [u8; GRH_BYTES as usize] {
    let mut b = [0u8; GRH_BYTES as usize];
    let w0 = 6u32 << 28 | u32::from(g.traffic_class) << 20 | g.flow_label;
    b[0..4].copy_from_slice(&w0.to_be_bytes());
    b[4..6].copy_from_slice(&(paylen as u16).to_be_bytes());
    b[6] = next;
    b[7] = g.hop_limit;
    b[8..24].copy_from_slice(sgid);
    b[24..40].copy_from_slice(&g.dgid);
    b
}
