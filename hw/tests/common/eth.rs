//! Raw Ethernet harness: a raw packet QP with its rings and CQs, receive work queues,
//! hand-built Ethernet segments and frames, and an Ethernet CQE reader, written from the
//! public layouts (rdma-core `mlx5dv.h`, DPDK `mlx5_prm.h`, the IETF headers) independently
//! of the model and the driver.

use super::{ctrl, data_seg, Mem, DATA, DATA_LEN};
use mlx5_hw::{
    Access, CqInfo, CqParams, EthFilter, Fabric, FlowAttr, FlowKind, FlowSpec, L4Filter, LinkLayer,
    Nic, NicConfig, QpInfo, QpParams, QpTransition, RssQpParams, RxHash, Striding, Transport,
    WqParams, WqState,
};
use std::sync::Arc;

/// `MLX5_OPCODE_SEND`, `MLX5_OPCODE_TSO` (mlx5dv.h), `MLX5_OPCODE_ENHANCED_MPSW` (DPDK
/// drivers/common/mlx5/mlx5_prm.h: 0x29u, "missed in mlx5dv.h").
pub const SEND: u8 = 0x0a;
pub const TSO: u8 = 0x0e;
pub const EMPW: u8 = 0x29;
/// `MLX5_ETH_WQE_L3_CSUM`, `MLX5_ETH_WQE_L4_CSUM`.
pub const CS_L3: u8 = 0x40;
pub const CS_L4: u8 = 0x80;
/// CE = 2 (a CQE for this WQE).
pub const SIGNALED: u8 = 0x08;

/// A NIC with an Ethernet port and a stepped clock.
pub fn eth_config() -> NicConfig {
    NicConfig {
        link_layer: LinkLayer::Ethernet,
        clock_step: 1,
        ..NicConfig::default()
    }
}

// One side's memory (`Mem` of `super::MEM_LEN`): rings, CQs, records, then DATA.
const SQ: usize = 0x0000;
const RQ: usize = 0x4000;
const SCQ: usize = 0x6000;
const RCQ: usize = 0x8000;
const DBREC: usize = 0xa000;
const SCQ_DB: usize = 0xa040;
const RCQ_DB: usize = 0xa080;
pub const LOG_SQ: u8 = 6;
pub const LOG_RQ: u8 = 4;
pub const LOG_RQ_STRIDE: u8 = 6;
pub const LOG_CQ: u8 = 7;

/// A 64-byte CQE as written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EthCqe(pub [u8; 64]);

impl EthCqe {
    fn be16(&self, at: usize) -> u16 {
        u16::from_be_bytes([self.0[at], self.0[at + 1]])
    }
    fn be32(&self, at: usize) -> u32 {
        u32::from_be_bytes(self.0[at..at + 4].try_into().unwrap())
    }
    pub fn opcode(&self) -> u8 {
        self.0[63] >> 4
    }
    pub fn wqe_id(&self) -> u16 {
        self.be16(2)
    }
    pub fn rss_hash(&self) -> u32 {
        self.be32(12)
    }
    pub fn rss_type(&self) -> u8 {
        self.0[16]
    }
    pub fn hds_ip_ext(&self) -> u8 {
        self.0[28]
    }
    pub fn l4_l3_hdr_type(&self) -> u8 {
        self.0[29]
    }
    pub fn vlan_info(&self) -> u16 {
        self.be16(30)
    }
    pub fn srqn_uidx(&self) -> u32 {
        self.be32(32)
    }
    pub fn byte_cnt(&self) -> u32 {
        self.be32(44)
    }
    pub fn sop_drop_qpn(&self) -> u32 {
        self.be32(56)
    }
    pub fn wqe_counter(&self) -> u16 {
        self.be16(60)
    }
    /// An error CQE's syndrome (byte 55).
    pub fn syndrome(&self) -> u8 {
        self.0[55]
    }
}

/// Read the CQE at consumer counter `ci` of the ring at `base` (`log_cq`), if the NIC owns
/// it no longer.
fn poll_at(mem: &Mem, base: usize, log_cq: u8, ci: u32) -> Option<EthCqe> {
    let slot = (ci & ((1 << log_cq) - 1)) as usize;
    let op_own = mem.load_acquire(base + slot * 64 + 63);
    if op_own >> 4 == 0xf || u32::from(op_own & 1) != (ci >> log_cq) & 1 {
        return None;
    }
    Some(EthCqe(mem.read(base + slot * 64, 64).try_into().unwrap()))
}

/// Fresh CQEs: opcode INVALID, owner 0 (as rdma-core initialises them).
fn init_cq(mem: &mut Mem, base: usize, log_cq: u8) {
    for i in 0..1usize << log_cq {
        mem.write(base + i * 64 + 63, &[0xf0]);
    }
}

/// A CQ of `1 << log_cq` 64-byte CQEs at `base` of `mem`, its record at `db`.
fn make_cq(nic: &Nic, mem: &mut Mem, base: usize, db: usize, log_cq: u8) -> CqInfo {
    init_cq(mem, base, log_cq);
    let p = CqParams {
        buf: mem.addr(base),
        log_cqe_cnt: log_cq,
        cqe_size: 64,
        dbrec: mem.addr(db),
        ..CqParams::default()
    };
    // SAFETY: the CQ buffer and record live in `mem`, which the caller keeps as long as the
    // CQ.
    unsafe { nic.create_cq(&p) }.unwrap()
}

/// A raw packet QP with a send queue and (optionally) a receive queue, and its memory.
pub struct Raw {
    pub nic: Nic,
    pub mem: Mem,
    pub pd: u32,
    pub scq: CqInfo,
    pub rcq: CqInfo,
    pub qp: QpInfo,
    pub key: u32,
    pub sq_pi: u16,
    last_wqe: u16,
    pub rq_pi: u16,
    scq_ci: u32,
    rcq_ci: u32,
}

impl Raw {
    /// A raw packet QP in RTS with an RQ.
    pub fn new(nic: &Nic) -> Raw {
        let r = Raw::created(nic, true);
        r.up();
        r
    }

    /// A raw packet QP in RESET, with an RQ or not.
    pub fn created(nic: &Nic, rq: bool) -> Raw {
        let mut mem = Mem::new(super::MEM_LEN);
        let pd = nic.alloc_pd();
        let scq = make_cq(nic, &mut mem, SCQ, SCQ_DB, LOG_CQ);
        let rcq = make_cq(nic, &mut mem, RCQ, RCQ_DB, LOG_CQ);
        let p = QpParams {
            transport: Transport::Raw,
            pdn: pd,
            send_cqn: scq.cqn,
            recv_cqn: rcq.cqn,
            sq_buf: mem.addr(SQ),
            log_sq_wqe_cnt: LOG_SQ,
            rq_buf: if rq { mem.addr(RQ) } else { 0 },
            log_rq_wqe_cnt: LOG_RQ,
            log_rq_stride: LOG_RQ_STRIDE,
            dbrec: mem.addr(DBREC),
            user_index: super::USER_INDEX,
            ..QpParams::default()
        };
        // SAFETY: the rings and record live in `mem`, owned by the returned `Raw`.
        let qp = unsafe { nic.create_qp(&p) }.unwrap();
        let data = mem.addr(DATA);
        // SAFETY: the data region lives in `mem`.
        let key = unsafe { nic.reg_mr(pd, data, DATA_LEN as u64, Access::LOCAL_WRITE) }.unwrap();
        Raw {
            nic: nic.clone(),
            mem,
            pd,
            scq,
            rcq,
            qp,
            key,
            sq_pi: 0,
            last_wqe: 0,
            rq_pi: 0,
            scq_ci: 0,
            rcq_ci: 0,
        }
    }

    /// RESET -> INIT -> RTR -> RTS.
    pub fn up(&self) {
        for t in [
            QpTransition::InitRaw { port: 1 },
            QpTransition::RtrRaw,
            QpTransition::RtsRaw,
        ] {
            self.nic.modify_qp(self.qp.qpn, &t).unwrap();
        }
    }

    pub fn mac(&self) -> [u8; 6] {
        self.nic.eth_caps().mac
    }

    /// Address of data offset `off`.
    pub fn data(&self, off: usize) -> u64 {
        self.mem.addr(DATA + off)
    }
    pub fn write_data(&mut self, off: usize, b: &[u8]) {
        self.mem.write(DATA + off, b);
    }
    pub fn read_data(&self, off: usize, len: usize) -> Vec<u8> {
        self.mem.read(DATA + off, len)
    }

    /// A WQE at the producer: ctrl + `segs` (whose length is a multiple of 16).
    pub fn wqe(&self, opcode: u8, opmod: u8, flags: u8, segs: &[Vec<u8>]) -> Vec<u8> {
        let body: Vec<u8> = segs.concat();
        assert_eq!(body.len() % 16, 0);
        let ds = 1 + body.len() / 16;
        let mut w = ctrl(opcode, opmod, self.sq_pi, self.qp.qpn, ds as u8, flags, 0).to_vec();
        w.extend_from_slice(&body);
        w
    }

    /// Copy a WQE into the ring at the producer (wrap-aware).
    pub fn post(&mut self, wqe: &[u8]) -> u16 {
        let idx = self.sq_pi;
        for (k, bb) in wqe.chunks(64).enumerate() {
            let slot = idx.wrapping_add(k as u16) & ((1 << LOG_SQ) - 1);
            self.mem.write(SQ + slot as usize * 64, bb);
        }
        self.last_wqe = idx;
        self.sq_pi = idx.wrapping_add(wqe.len().div_ceil(64) as u16);
        idx
    }

    /// The SQ record, then the 8-byte doorbell with the last WQE's ctrl.
    pub fn ring(&mut self) {
        self.mem.put_be32(DBREC + 4, self.sq_pi as u32);
        let slot = self.last_wqe & ((1 << LOG_SQ) - 1);
        let db = self.mem.read(SQ + slot as usize * 64, 8);
        self.nic.mmio_write(self.qp.uar, self.qp.bf_offset, &db);
    }

    /// Build, post and ring one WQE.
    pub fn send(&mut self, opcode: u8, opmod: u8, flags: u8, segs: &[Vec<u8>]) {
        let w = self.wqe(opcode, opmod, flags, segs);
        self.post(&w);
        self.ring();
    }

    /// Post a receive of `len` bytes at data offset `off`.
    pub fn post_recv(&mut self, off: usize, len: u32) {
        let idx = self.rq_pi as usize & ((1 << LOG_RQ) - 1);
        let base = RQ + (idx << LOG_RQ_STRIDE);
        let addr = self.data(off);
        self.mem.write(base, &data_seg(len, self.key, addr));
        self.mem.write(base + 16, &data_seg(0, 0x100, 0));
        self.rq_pi = self.rq_pi.wrapping_add(1);
        self.mem.put_be32(DBREC, self.rq_pi as u32);
    }

    pub fn poll_send(&mut self) -> Option<EthCqe> {
        let c = poll_at(&self.mem, SCQ, LOG_CQ, self.scq_ci)?;
        self.scq_ci += 1;
        self.mem.put_be32(SCQ_DB, self.scq_ci & 0xff_ffff);
        Some(c)
    }
    pub fn poll_recv(&mut self) -> Option<EthCqe> {
        let c = poll_at(&self.mem, RCQ, LOG_CQ, self.rcq_ci)?;
        self.rcq_ci += 1;
        self.mem.put_be32(RCQ_DB, self.rcq_ci & 0xff_ffff);
        Some(c)
    }
    pub fn drain_send(&mut self) -> Vec<EthCqe> {
        std::iter::from_fn(|| self.poll_send()).collect()
    }
    pub fn drain_recv(&mut self) -> Vec<EthCqe> {
        std::iter::from_fn(|| self.poll_recv()).collect()
    }

    /// Attach `attr` to this QP.
    pub fn flow(&self, attr: &FlowAttr) -> u32 {
        self.nic.create_flow(self.qp.qpn, attr).unwrap()
    }

    /// Post `n` receives of [`RX_SLOT`] bytes, receive `k` at data offset `k * RX_SLOT`
    /// (by the receive counter modulo the ring).
    pub fn recv_frames(&mut self, n: usize) {
        for _ in 0..n {
            let slot = self.rq_pi as usize & ((1 << LOG_RQ) - 1);
            self.post_recv(slot * RX_SLOT, RX_SLOT as u32);
        }
    }

    /// The frame a receive CQE reports, read from its receive's buffer.
    pub fn received(&self, c: &EthCqe) -> Vec<u8> {
        let slot = c.wqe_counter() as usize & ((1 << LOG_RQ) - 1);
        self.read_data(slot * RX_SLOT, c.byte_cnt() as usize)
    }

    /// Send frame `f` in one signaled SEND WQE: no inline header, one pointer segment
    /// (the frame staged at data offset [`TX`]).
    pub fn send_frame(&mut self, f: &[u8]) {
        self.write_data(TX, f);
        let (a, k) = (self.data(TX), self.key);
        self.send(
            SEND,
            0,
            SIGNALED,
            &[eseg(0, 0, &[]), data_seg(f.len() as u32, k, a)],
        );
    }
}

/// Bytes of each receive of [`Raw::recv_frames`].
pub const RX_SLOT: usize = 0x800;
/// Where [`Raw::send_frame`] stages a frame in the data region.
pub const TX: usize = 0x8000;

/// An Ethernet segment (`mlx5_wqe_eth_seg`) with `inline` as its inline header: 16 bytes
/// plus the header past its first 2, padded to 16.
pub fn eseg(cs_flags: u8, mss: u16, inline: &[u8]) -> Vec<u8> {
    let n = inline.len();
    let mut s = vec![0u8; 16 + n.saturating_sub(2).div_ceil(16) * 16];
    s[4] = cs_flags;
    s[6..8].copy_from_slice(&mss.to_be_bytes());
    s[12..14].copy_from_slice(&(n as u16).to_be_bytes());
    s[14..14 + n].copy_from_slice(inline);
    s
}

/// An Ethernet segment with the VLAN insertion command (kernel `MLX5_ETH_WQE_INSERT_VLAN`
/// 1 << 15 in bytes 12..14, `MLX5_ETH_WQE_SVLAN` bit 0; the TCI at 14..16; DPDK writes the
/// same bytes as BE32 `MLX5_ETH_WQE_VLAN_INSERT | vlan_tci`).
pub fn eseg_vlan(cs_flags: u8, tci: u16, svlan: bool) -> Vec<u8> {
    let mut s = vec![0u8; 16];
    s[4] = cs_flags;
    s[12..14].copy_from_slice(&(0x8000u16 | u16::from(svlan)).to_be_bytes());
    s[14..16].copy_from_slice(&tci.to_be_bytes());
    s
}

/// RFC 1071: the one's complement of the one's complement sum of `data` as BE16 words.
pub fn csum(data: &[u8]) -> u16 {
    let mut sum: u32 = data
        .chunks(2)
        .map(|w| u32::from(w[0]) << 8 | u32::from(*w.get(1).unwrap_or(&0)))
        .sum();
    while sum >> 16 != 0 {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// The L4 header (`proto` 6 or 17) and payload of an IPv4 or IPv6 packet between `src` and
/// `dst` (4 or 16 bytes), with its checksum filled in at `at`.
fn l4(proto: u8, src: &[u8], dst: &[u8], mut seg: Vec<u8>, at: usize) -> Vec<u8> {
    let mut pseudo = [src, dst].concat();
    if src.len() == 4 {
        pseudo.extend_from_slice(&[0, proto]);
        pseudo.extend_from_slice(&(seg.len() as u16).to_be_bytes());
    } else {
        pseudo.extend_from_slice(&(seg.len() as u32).to_be_bytes());
        pseudo.extend_from_slice(&[0, 0, 0, proto]);
    }
    let mut c = csum(&[pseudo, seg.clone()].concat());
    if proto == 17 && c == 0 {
        c = 0xffff;
    }
    seg[at..at + 2].copy_from_slice(&c.to_be_bytes());
    seg
}

/// Addresses, ports and the rest of a test packet.
#[derive(Clone, Copy, Debug)]
pub struct Pkt<'a> {
    pub dmac: [u8; 6],
    pub smac: [u8; 6],
    pub vlan: Option<u16>,
    pub v6: bool,
    pub tcp: bool,
    pub sport: u16,
    pub dport: u16,
    pub seq: u32,
    pub tcp_flags: u8,
    /// IPv4 source and destination (IPv6 packets use [`SRC6`] and [`DST6`]).
    pub src4: [u8; 4],
    pub dst4: [u8; 4],
    pub payload: &'a [u8],
}

impl<'a> Pkt<'a> {
    /// A UDP/IPv4 packet from `smac` to `dmac` with `payload`.
    pub fn udp(dmac: [u8; 6], smac: [u8; 6], payload: &'a [u8]) -> Pkt<'a> {
        Pkt {
            dmac,
            smac,
            vlan: None,
            v6: false,
            tcp: false,
            sport: 4000,
            dport: 5000,
            seq: 0,
            tcp_flags: 0x18,
            src4: SRC4,
            dst4: DST4,
            payload,
        }
    }
}

pub const SRC4: [u8; 4] = [10, 0, 0, 1];
pub const DST4: [u8; 4] = [10, 0, 0, 2];
pub const SRC6: [u8; 16] = [0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1];
pub const DST6: [u8; 16] = [0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2];

/// The frame of `p` with correct checksums (IPv4 identification 0x1234, DF, TTL 64;
/// IPv6 hop limit 64, no flow label).
pub fn frame(p: &Pkt<'_>) -> Vec<u8> {
    let (proto, mut seg) = if p.tcp {
        let mut h = vec![0u8; 20];
        h[0..2].copy_from_slice(&p.sport.to_be_bytes());
        h[2..4].copy_from_slice(&p.dport.to_be_bytes());
        h[4..8].copy_from_slice(&p.seq.to_be_bytes());
        h[12] = 5 << 4;
        h[13] = p.tcp_flags;
        h[14..16].copy_from_slice(&0xffffu16.to_be_bytes());
        (6u8, h)
    } else {
        let mut h = vec![0u8; 8];
        h[0..2].copy_from_slice(&p.sport.to_be_bytes());
        h[2..4].copy_from_slice(&p.dport.to_be_bytes());
        h[4..6].copy_from_slice(&((8 + p.payload.len()) as u16).to_be_bytes());
        (17u8, h)
    };
    seg.extend_from_slice(p.payload);
    let at = if p.tcp { 16 } else { 6 };
    let mut f = [p.dmac, p.smac].concat();
    if let Some(tci) = p.vlan {
        f.extend_from_slice(&[0x81, 0x00]);
        f.extend_from_slice(&tci.to_be_bytes());
    }
    if p.v6 {
        f.extend_from_slice(&[0x86, 0xdd, 0x60, 0, 0, 0]);
        f.extend_from_slice(&(seg.len() as u16).to_be_bytes());
        f.extend_from_slice(&[proto, 64]);
        f.extend_from_slice(&SRC6);
        f.extend_from_slice(&DST6);
        f.extend_from_slice(&l4(proto, &SRC6, &DST6, seg, at));
    } else {
        let mut ip = vec![0x45, 0];
        ip.extend_from_slice(&((20 + seg.len()) as u16).to_be_bytes());
        ip.extend_from_slice(&[0x12, 0x34, 0x40, 0, 64, proto, 0, 0]);
        ip.extend_from_slice(&p.src4);
        ip.extend_from_slice(&p.dst4);
        let c = csum(&ip);
        ip[10..12].copy_from_slice(&c.to_be_bytes());
        f.extend_from_slice(&[0x08, 0x00]);
        f.extend_from_slice(&ip);
        f.extend_from_slice(&l4(proto, &p.src4, &p.dst4, seg, at));
    }
    f
}

/// Where the IPv4 header checksum and the L4 checksum of an untagged IPv4 `frame` are.
pub const IP_CSUM: usize = 14 + 10;
pub fn l4_csum_at(frame: &[u8]) -> usize {
    let l4 = 14 + 20;
    l4 + if frame[14 + 9] == 6 { 16 } else { 6 }
}

/// A rule on destination MAC `mac`, priority `prio`.
pub fn dmac_rule(mac: [u8; 6], prio: u16) -> FlowAttr {
    FlowAttr {
        kind: FlowKind::Normal,
        priority: prio,
        port: 1,
        dont_trap: false,
        specs: vec![FlowSpec::Eth {
            val: EthFilter {
                dst_mac: mac,
                ..EthFilter::default()
            },
            mask: EthFilter {
                dst_mac: [0xff; 6],
                ..EthFilter::default()
            },
        }],
    }
}

/// A TCP or UDP spec on destination port `dport`.
pub fn l4_spec(tcp: bool, dport: u16) -> FlowSpec {
    let val = L4Filter {
        dst_port: dport,
        src_port: 0,
    };
    let mask = L4Filter {
        dst_port: 0xffff,
        src_port: 0,
    };
    if tcp {
        FlowSpec::Tcp { val, mask }
    } else {
        FlowSpec::Udp { val, mask }
    }
}

/// A rule on UDP destination port `dport`.
pub fn udp_rule(dport: u16) -> FlowAttr {
    FlowAttr {
        kind: FlowKind::Normal,
        port: 1,
        specs: vec![l4_spec(false, dport)],
        ..FlowAttr::default()
    }
}

/// A rule of `kind` with no specs.
pub fn kind_rule(kind: FlowKind) -> FlowAttr {
    FlowAttr {
        kind,
        port: 1,
        ..FlowAttr::default()
    }
}

// A work queue's own memory: its ring, record, CQ and CQ record.
const WQ_RING: usize = 0x0000;
const WQ_DB: usize = 0x1000;
const WQ_CQ_DB: usize = 0x1040;
const WQ_CQ: usize = 0x2000;
const WQ_MEM: usize = 0x4000;

/// A receive work queue (plain or striding) with its own ring and CQ, in RDY.
pub struct Wq {
    pub nic: Nic,
    pub mem: Mem,
    pub wqn: u32,
    pub cq: CqInfo,
    pub log_cnt: u8,
    pub log_stride: u8,
    pub striding: Option<Striding>,
    pub pi: u16,
    ci: u32,
}

impl Wq {
    /// A work queue of `1 << log_cnt` WQEs in PD `pd`, with user index `uidx`.
    pub fn new(nic: &Nic, pd: u32, log_cnt: u8, striding: Option<Striding>, uidx: u32) -> Wq {
        let mut mem = Mem::new(WQ_MEM);
        let cq = make_cq(nic, &mut mem, WQ_CQ, WQ_CQ_DB, LOG_CQ);
        let log_stride = if striding.is_some() { 5 } else { 6 };
        let p = WqParams {
            pdn: pd,
            cqn: cq.cqn,
            buf: mem.addr(WQ_RING),
            log_wqe_cnt: log_cnt,
            log_stride,
            dbrec: mem.addr(WQ_DB),
            user_index: uidx,
            striding,
        };
        // SAFETY: the ring and record live in `mem`, owned by the returned `Wq`.
        let wqn = unsafe { nic.create_wq(&p) }.unwrap();
        nic.modify_wq(wqn, WqState::Rdy).unwrap();
        Wq {
            nic: nic.clone(),
            mem,
            wqn,
            cq,
            log_cnt,
            log_stride,
            striding,
            pi: 0,
            ci: 0,
        }
    }

    /// Write WQE `pi` without publishing it: a plain WQE is one data segment and the
    /// terminator; a striding one (`mlx5_mprq_wqe`) a zero next segment and one data
    /// segment covering the buffer.
    pub fn write(&mut self, addr: u64, len: u32, lkey: u32) {
        let slot = self.pi as usize & ((1 << self.log_cnt) - 1);
        let base = WQ_RING + (slot << self.log_stride);
        if self.striding.is_some() {
            self.mem.write(base, &[0u8; 16]);
            self.mem.write(base + 16, &data_seg(len, lkey, addr));
        } else {
            self.mem.write(base, &data_seg(len, lkey, addr));
            self.mem.write(base + 16, &data_seg(0, 0x100, 0));
        }
        self.pi = self.pi.wrapping_add(1);
    }

    /// Write a WQE and publish it (the doorbell record).
    pub fn post(&mut self, addr: u64, len: u32, lkey: u32) {
        self.write(addr, len, lkey);
        self.publish();
    }

    pub fn publish(&mut self) {
        self.mem.put_be32(WQ_DB, u32::from(self.pi));
    }

    pub fn poll(&mut self) -> Option<EthCqe> {
        let c = poll_at(&self.mem, WQ_CQ, LOG_CQ, self.ci)?;
        self.ci += 1;
        self.mem.put_be32(WQ_CQ_DB, self.ci & 0xff_ffff);
        Some(c)
    }
    pub fn drain(&mut self) -> Vec<EthCqe> {
        std::iter::from_fn(|| self.poll()).collect()
    }
}

/// An RSS QP of PD `pd` over `wqns`, hashed by `hash`, taking the frames of `rule`.
pub fn rss_qp(nic: &Nic, pd: u32, wqns: Vec<u32>, hash: Option<RxHash>, rule: &FlowAttr) -> u32 {
    let qpn = nic
        .create_rss_qp(&RssQpParams {
            pdn: pd,
            wqns,
            hash,
        })
        .unwrap();
    nic.create_flow(qpn, rule).unwrap();
    qpn
}

/// A sender and a receiver on one fabric; the receiver takes every frame to its MAC into
/// work queue `wq` (`1 << log_cnt` WQEs, plain or striding) through an RSS QP of one entry.
pub struct Rig {
    pub a: Raw,
    pub b: Raw,
    pub wq: Wq,
    pub rss: u32,
    pub fabric: Arc<Fabric>,
}

impl Rig {
    pub fn new(a_cfg: NicConfig, log_cnt: u8, striding: Option<Striding>) -> Rig {
        let fabric = Fabric::new();
        let (na, nb) = (Nic::new(&fabric, a_cfg), Nic::new(&fabric, eth_config()));
        let a = Raw::new(&na);
        let b = Raw::new(&nb);
        let wq = Wq::new(&nb, b.pd, log_cnt, striding, 0);
        let rss = rss_qp(&nb, b.pd, vec![wq.wqn], None, &dmac_rule(b.mac(), 0));
        Rig {
            a,
            b,
            wq,
            rss,
            fabric,
        }
    }
}
