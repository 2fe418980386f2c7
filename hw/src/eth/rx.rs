//! A frame arriving at a NIC's port (docs/model.md, "Raw Ethernet"): the port's length
//! check, the sniffer copies, steering, and the frame written into the receive queue a
//! rule names, with its Ethernet CQE: a raw packet QP's own RQ (one WQE per frame), or
//! through an RSS QP a work queue, plain (one WQE per frame) or striding (many frames per
//! WQE, in strides).
//!
//! Drops are counted where mlx5 counts them (`Stats::eth`): a frame longer than the port's
//! largest (`rx_oversize_pkts_phy`), no rule (`rx_steer_missed_packets`), no receive WQE
//! (`rx_out_of_buffer`). A frame larger than the receive WQE's buffer completes the WQE
//! with LOCAL_LENGTH_ERR, a buffer its key does not cover with LOCAL_PROT_ERR, and the
//! queue goes to ERR (the kernel's mlx5e recovers an RQ from exactly these syndromes:
//! `cqe_syndrome_needs_recover` in en_rx.c); the raw QP goes to ERR whole (the model's
//! reading: on hardware its RQ is an object of its own).

use crate::complete::{complete, complete_cq};
use crate::cqe::{cqe_op, synd, Cqe, EthCqe};
use crate::eth::flow::{steer, Dest, Fields};
use crate::eth::frame::{l3_ok, l4_ok, Headers, ETH_HLEN, L3, L4, TCP_ACK, VLAN_HLEN};
use crate::host;
use crate::pcie::Purpose;
use crate::qp::fail;
use crate::resp::{read_recv, refresh, take_recv};
use crate::state::eth::{Mprq, Wq};
use crate::state::NicState;
use crate::types::{Access, NicConfig, QpState, WqState};
use crate::wqe::{be32, be64};
use crate::xfer::Cursor;

/// `hds_ip_ext` bits (`MLX5_CQE_L2_OK`, `_L3_OK`, `_L4_OK`).
const L2_OK: u8 = 1;
const L3_OK: u8 = 2;
const L4_OK: u8 = 4;
/// `MLX5_CQE_L3_HDR_TYPE_IPV6` and `_IPV4`, at bits 3..2 of `l4_l3_hdr_type`.
const L3_IPV6: u8 = 1 << 2;
const L3_IPV4: u8 = 2 << 2;
/// The kernel's `CQE_L4_HDR_TYPE_*` at bits 6..4: TCP without ACK, UDP, TCP ACK without
/// data, TCP ACK with data.
const L4_TCP_NO_ACK: u8 = 1 << 4;
const L4_UDP: u8 = 2 << 4;
const L4_TCP_ACK_NO_DATA: u8 = 3 << 4;
const L4_TCP_ACK_AND_DATA: u8 = 4 << 4;
/// A striding CQE's `byte_cnt`: bit 31 the filler, bits 29..16 the strides consumed, bits
/// 15..0 the length (DPDK `MLX5_MPRQ_FILLER_MASK`, `MLX5_MPRQ_STRIDE_NUM_SHIFT`,
/// `MLX5_MPRQ_LEN_MASK`).
const MPRQ_FILLER: u32 = 1 << 31;
const MPRQ_STRIDES_SHIFT: u32 = 16;
/// The bytes `two_byte_shift_en` leaves before a packet (`MLX5_MPRQ_STRIDE_SHIFT_BYTE`).
const TWO_BYTE_SHIFT: u32 = 2;
/// A striding WQE (`struct mlx5_mprq_wqe`): the data segment follows a 16-byte next
/// segment.
const MPRQ_DSEG: u64 = 16;

/// The largest frame, without FCS, the port of a NIC with `cfg` takes or sends: the
/// netdev MTU plus the Ethernet header and one VLAN tag (the kernel's `MLX5E_SW2HW_MTU`
/// adds `ETH_HLEN + VLAN_HLEN + ETH_FCS_LEN` to the MTU for the port's MTU register).
pub(crate) fn max_frame(cfg: &NicConfig) -> usize {
    cfg.netdev_mtu as usize + ETH_HLEN + VLAN_HLEN
}

/// What a receive CQE says of a frame besides its length.
#[derive(Clone, Copy)]
struct Meta {
    eth: EthCqe,
    vlan: Option<u16>,
    bad_csum: bool,
}

/// The CQE fields the parser gives frame `f` (headers `h`), for a rule's `tag`.
fn meta(f: &[u8], h: &Headers, tag: u32) -> Meta {
    let l3_good = l3_ok(f, h);
    let l4_good = h.l4 != L4::None && l4_ok(f, h);
    let l3_type = match h.l3 {
        L3::V4 { .. } => L3_IPV4,
        L3::V6 { .. } => L3_IPV6,
        L3::None => 0,
    };
    let l4_type = match h.l4 {
        L4::Tcp { flags, .. } if flags & TCP_ACK == 0 => L4_TCP_NO_ACK,
        L4::Tcp { hlen, .. } if h.l4_len == hlen => L4_TCP_ACK_NO_DATA,
        L4::Tcp { .. } => L4_TCP_ACK_AND_DATA,
        L4::Udp { .. } => L4_UDP,
        L4::None => 0,
    };
    Meta {
        eth: EthCqe {
            flow_tag: tag,
            hds_ip_ext: L2_OK | if l3_good { L3_OK } else { 0 } | if l4_good { L4_OK } else { 0 },
            hdr_type: l3_type | l4_type,
            rss: (0, 0),
            wqe_id: 0,
        },
        vlan: h.vlan,
        bad_csum: (l3_type != 0 && !l3_good) || (h.l4 != L4::None && !l4_good),
    }
}

/// Frame `f` arrives at `nic`: from the wire, or (`looped`) from one of its own send
/// queues through the self-loopback.
pub(crate) fn receive(nic: &mut NicState, f: &[u8], looped: bool) {
    if !looped {
        nic.stats.eth.rx_frames += 1;
        nic.stats.eth.rx_bytes += f.len() as u64;
    }
    if f.len() > max_frame(&nic.cfg) {
        nic.stats.eth.rx_oversize += 1;
        return;
    }
    let h = Headers::parse(f);
    if !looped {
        sniff(nic, f, &h);
    }
    let st = steer(nic.eth.flows(), &Fields::of(&h));
    if st.dropped {
        nic.stats.eth.rx_rule_drops += 1;
    } else if st.to.is_empty() {
        nic.stats.eth.rx_steer_missed += 1;
    }
    for (dest, tag) in st.to {
        deliver(nic, dest, f, &h, tag);
    }
}

/// A copy of frame `f` (headers `h`) for every sniffer rule of `nic`, once per
/// destination: what its port receives and what it sends.
pub(crate) fn sniff(nic: &mut NicState, f: &[u8], h: &Headers) {
    let mut dests: Vec<Dest> = Vec::new();
    for fl in nic.eth.flows().filter(|fl| fl.sniffer) {
        if !dests.contains(&fl.dest) {
            dests.push(fl.dest);
        }
    }
    for d in dests {
        deliver(nic, d, f, h, 0);
    }
}

fn deliver(nic: &mut NicState, dest: Dest, f: &[u8], h: &Headers, tag: u32) {
    let mut m = meta(f, h, tag);
    match dest {
        Dest::Qp(qpi) => to_rq(nic, qpi, f, m),
        Dest::Rss(ri) => {
            let r = nic.eth.rss[ri].as_ref().expect("live RSS QP");
            m.eth.rss = r.hash.map_or((0, 0), |c| crate::eth::rss::hash(&c, h));
            let wi = r.wqs[m.eth.rss.0 as usize & (r.wqs.len() - 1)];
            if nic.eth.wq(wi).striding.is_some() {
                to_striding(nic, wi, f, m);
            } else {
                to_wq(nic, wi, f, m);
            }
        }
    }
}

/// The frame was written: count it.
fn delivered(nic: &mut NicState, m: &Meta) {
    nic.stats.eth.rx_delivered += 1;
    nic.stats.eth.rx_csum_bad += u64::from(m.bad_csum);
}

/// A receive CQE for frame bytes `byte_cnt` (a striding queue's encoding included).
fn cqe(qpn: u32, counter: u16, byte_cnt: u32, m: &Meta, srqn: u32) -> Cqe {
    Cqe {
        opcode: cqe_op::RESP_SEND,
        qpn,
        wqe_counter: counter,
        byte_cnt,
        srqn,
        vlan_info: m.vlan,
        eth: Some(m.eth),
        ..Cqe::default()
    }
}

/// The frame into the RQ of raw packet QP `qpi`: one WQE, whose buffers must hold it.
fn to_rq(nic: &mut NicState, qpi: usize, f: &[u8], m: Meta) {
    let q = nic.qp(qpi);
    // The RQ is ready from INIT on (`modify_raw_packet_qp`: RST2INIT makes it RDY); a QP
    // whose send queue failed (SQE) still receives.
    let ready = matches!(
        q.state,
        QpState::Init | QpState::Rtr | QpState::Rts | QpState::Sqe
    );
    if q.rq_buf == 0 || !ready {
        nic.stats.eth.rx_not_ready += 1;
        return;
    }
    let Some(rv) = take_recv(nic, qpi) else {
        nic.stats.eth.rx_out_of_buffer += 1;
        return;
    };
    let (qpn, len) = (nic.qp(qpi).qpn, f.len() as u64);
    let failed = if rv.spans.capacity() < len {
        Some(synd::LOCAL_LENGTH_ERR)
    } else {
        rv.spans
            .used(len)
            .any(|s| !nic.check_mr(qpi, s.key, rv.pdn, s.addr, s.len, Access::LOCAL_WRITE))
            .then_some(synd::LOCAL_PROT_ERR)
    };
    if let Some(s) = failed {
        complete(nic, qpi, true, Cqe::resp_err(qpn, rv.counter, 0, s));
        fail(nic, qpi);
        return;
    }
    Cursor::new(rv.spans.as_slice()).put_bytes(f);
    for s in rv.spans.used(len) {
        nic.dma_write(Some(qpi), s.addr, s.len, Purpose::Scatter);
    }
    delivered(nic, &m);
    complete(nic, qpi, true, cqe(qpn, rv.counter, len as u32, &m, 0));
}

/// The user index a work queue's CQEs carry in `srqn_uidx` under CQE version 1 (rdma-core
/// finds the work queue by it), else 0.
fn uidx(nic: &NicState, w: &Wq) -> u32 {
    if nic.cfg.cqe_version == 1 {
        w.user_index
    } else {
        0
    }
}

/// The next WQE of work queue `wi` (its counter and address), reading the doorbell record
/// when no posted WQE is known and the WQE itself (a DMA read of its stride); `None` when
/// none is posted.
fn next_wqe(nic: &mut NicState, wi: usize) -> Option<(u16, u64)> {
    let w = nic.eth.wq(wi);
    let (dbrec, known, ci) = (w.dbrec, w.known_pi, w.ci);
    nic.eth.wq(wi).known_pi = refresh(nic, None, dbrec, known, ci)?;
    let w = nic.eth.wq(wi);
    let stride = 1u64 << w.log_stride;
    let addr = w.buf + u64::from(ci & ((1u32 << w.log_cnt) - 1) as u16) * stride;
    nic.dma_read(None, addr, stride, Purpose::RecvWqeFetch);
    Some((ci, addr))
}

/// A receive error of work queue `wi` on its WQE `counter`: the error CQE, the queue to
/// ERR, the rest flushed.
fn wq_error(nic: &mut NicState, wi: usize, counter: u16, syndrome: u8) {
    let w = nic.eth.wq(wi);
    let (wqn, cq) = (w.wqn, w.cq);
    let srqn = uidx(nic, nic.eth.wqs[wi].as_ref().expect("live WQ"));
    complete_cq(nic, cq, Cqe::resp_err(wqn, counter, srqn, syndrome));
    let w = nic.eth.wq(wi);
    w.ci = counter.wrapping_add(1);
    w.cur = None;
    w.state = WqState::Err;
    nic.defer();
    flush_wq(nic, wi);
}

/// The frame into plain work queue `wi`: one WQE, as an RQ takes it.
fn to_wq(nic: &mut NicState, wi: usize, f: &[u8], m: Meta) {
    if nic.eth.wq(wi).state != WqState::Rdy {
        nic.stats.eth.rx_not_ready += 1;
        return;
    }
    let Some((counter, addr)) = next_wqe(nic, wi) else {
        nic.stats.eth.rx_out_of_buffer += 1;
        return;
    };
    let w = nic.eth.wq(wi);
    let (stride, pdn, wqn, cq) = (1usize << w.log_stride, w.pdn, w.wqn, w.cq);
    w.ci = counter.wrapping_add(1);
    let (spans, _) = read_recv(addr, stride, 0);
    nic.stats.zero_length_segments += spans.zero_length;
    let len = f.len() as u64;
    if spans.capacity() < len {
        return wq_error(nic, wi, counter, synd::LOCAL_LENGTH_ERR);
    }
    if spans
        .used(len)
        .any(|s| !nic.check_key(None, s.key, pdn, s.addr, s.len, Access::LOCAL_WRITE))
    {
        return wq_error(nic, wi, counter, synd::LOCAL_PROT_ERR);
    }
    Cursor::new(spans.as_slice()).put_bytes(f);
    for s in spans.used(len) {
        nic.dma_write(None, s.addr, s.len, Purpose::Scatter);
    }
    delivered(nic, &m);
    let srqn = uidx(nic, nic.eth.wqs[wi].as_ref().expect("live WQ"));
    complete_cq(nic, cq, cqe(wqn, counter, len as u32, &m, srqn));
}

/// The frame into striding work queue `wi` (DPDK `mlx5_rx_burst_mprq`, the kernel's
/// `mlx5e_handle_rx_cqe_mpwrq`): it takes `ceil((shift + len) / stride)` strides of the WQE
/// being filled, from the first unused one. A frame that does not fit the strides left
/// closes that WQE with a filler CQE for them (and is placed in the next WQE) when another
/// WQE is posted; without one the frame is dropped (`rx_out_of_buffer`) and the WQE kept
/// for a frame that fits. The WQE is finished, and the queue moves on, when its last
/// stride is used. What a ConnectX does when a frame does not fit and no WQE is posted is
/// not public.
fn to_striding(nic: &mut NicState, wi: usize, f: &[u8], m: Meta) {
    let w = nic.eth.wq(wi);
    if w.state != WqState::Rdy {
        nic.stats.eth.rx_not_ready += 1;
        return;
    }
    let (strides, stride) = w.geometry().expect("a striding queue");
    let shift = if w.striding.is_some_and(|s| s.two_byte_shift) {
        TWO_BYTE_SHIFT
    } else {
        0
    };
    let len = f.len() as u32;
    let need = (shift + len).div_ceil(stride);
    if need > strides {
        // Larger than a whole WQE: the WQE it would go to fails.
        let counter = w.ci;
        if w.cur.is_none() && next_wqe(nic, wi).is_none() {
            nic.stats.eth.rx_out_of_buffer += 1;
            return;
        }
        return wq_error(nic, wi, counter, synd::LOCAL_LENGTH_ERR);
    }
    let Some(cur) = current(nic, wi) else {
        nic.stats.eth.rx_out_of_buffer += 1;
        return;
    };
    let cur = if cur.used + need > strides {
        // Close this WQE with a filler if another is posted.
        let w = nic.eth.wq(wi);
        let (dbrec, known, next) = (w.dbrec, w.known_pi, w.ci.wrapping_add(1));
        let Some(pi) = refresh(nic, None, dbrec, known, next) else {
            nic.stats.eth.rx_out_of_buffer += 1;
            return;
        };
        nic.eth.wq(wi).known_pi = pi;
        filler(nic, wi, cur, strides);
        match current(nic, wi) {
            Some(cur) => cur,
            None => return nic.stats.eth.rx_out_of_buffer += 1,
        }
    } else {
        cur
    };
    let w = nic.eth.wq(wi);
    let (pdn, wqn, cq, counter) = (w.pdn, w.wqn, w.cq, w.ci);
    let at = cur.addr + u64::from(cur.used * stride + shift);
    if !nic.check_key(None, cur.lkey, pdn, at, len.into(), Access::LOCAL_WRITE) {
        return wq_error(nic, wi, counter, synd::LOCAL_PROT_ERR);
    }
    host::write(at, f);
    nic.dma_write(None, at, len.into(), Purpose::Scatter);
    delivered(nic, &m);
    let srqn = uidx(nic, nic.eth.wqs[wi].as_ref().expect("live WQ"));
    let mut c = cqe(
        wqn,
        cur.used as u16,
        need << MPRQ_STRIDES_SHIFT | len,
        &m,
        srqn,
    );
    if let Some(e) = c.eth.as_mut() {
        e.wqe_id = counter;
    }
    complete_cq(nic, cq, c);
    advance(nic, wi, cur, need, strides);
}

/// The striding WQE being filled, fetched first if it has not been.
fn current(nic: &mut NicState, wi: usize) -> Option<Mprq> {
    if let Some(cur) = nic.eth.wq(wi).cur {
        return Some(cur);
    }
    let (_, addr) = next_wqe(nic, wi)?;
    let mut seg = [0u8; 16];
    host::read(addr + MPRQ_DSEG, &mut seg);
    let cur = Mprq {
        // In the address space of the ring the WQE is in.
        addr: host::in_space_of(addr, be64(&seg, 8)),
        lkey: be32(&seg, 4),
        used: 0,
    };
    nic.eth.wq(wi).cur = Some(cur);
    Some(cur)
}

/// `need` more strides of the WQE being filled are used: it is finished at the last one.
fn advance(nic: &mut NicState, wi: usize, cur: Mprq, need: u32, strides: u32) {
    let w = nic.eth.wq(wi);
    let used = cur.used + need;
    if used == strides {
        w.ci = w.ci.wrapping_add(1);
        w.cur = None;
    } else {
        w.cur = Some(Mprq { used, ..cur });
    }
}

/// A filler CQE for the strides of the WQE being filled that are left, which finishes it:
/// `byte_cnt` the filler bit and the strides, length 0; `wqe_counter` the first stride
/// left; `wqe_id` the WQE. The length of a filler and its other fields are not public: the
/// model writes 0.
fn filler(nic: &mut NicState, wi: usize, cur: Mprq, strides: u32) {
    let w = nic.eth.wq(wi);
    let (wqn, cq, counter) = (w.wqn, w.cq, w.ci);
    let left = strides - cur.used;
    let srqn = uidx(nic, nic.eth.wqs[wi].as_ref().expect("live WQ"));
    let c = Cqe {
        opcode: cqe_op::RESP_SEND,
        qpn: wqn,
        wqe_counter: cur.used as u16,
        byte_cnt: MPRQ_FILLER | left << MPRQ_STRIDES_SHIFT,
        srqn,
        eth: Some(EthCqe {
            wqe_id: counter,
            ..EthCqe::default()
        }),
        ..Cqe::default()
    };
    nic.stats.eth.mprq_fillers += 1;
    complete_cq(nic, cq, c);
    advance(nic, wi, cur, left, strides);
}

/// Complete every posted WQE of work queue `wi` (in ERR) with WR_FLUSH_ERR, the one being
/// filled included; the doorbell record read is accounted when it reveals new WQEs.
/// Returns how many.
pub(crate) fn flush_wq(nic: &mut NicState, wi: usize) -> usize {
    let w = nic.eth.wq(wi);
    let pi = host::read_be32(w.dbrec) as u16;
    if pi != w.known_pi {
        w.known_pi = pi;
        let dbrec = w.dbrec;
        nic.dma_read(None, dbrec, 4, Purpose::DbrecRead);
    }
    let w = nic.eth.wq(wi);
    let count = pi.wrapping_sub(w.ci).min(1u16 << w.log_cnt);
    let (wqn, cq, ci) = (w.wqn, w.cq, w.ci);
    w.ci = pi;
    w.cur = None;
    let srqn = uidx(nic, nic.eth.wqs[wi].as_ref().expect("live WQ"));
    for k in 0..count {
        let c = Cqe::resp_err(wqn, ci.wrapping_add(k), srqn, synd::WR_FLUSH_ERR);
        complete_cq(nic, cq, c);
    }
    usize::from(count)
}

/// Flush what was posted to work queues in ERR since (`progress`); returns how many.
pub(crate) fn flush_wqs(nic: &mut NicState) -> usize {
    let mut done = 0;
    for i in 0..nic.eth.wqs.len() {
        if nic.eth.wqs[i]
            .as_ref()
            .is_some_and(|w| w.state == WqState::Err)
        {
            done += flush_wq(nic, i);
        }
    }
    done
}
