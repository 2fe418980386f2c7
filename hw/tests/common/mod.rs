//! Test harness: host memory, hand-built WQEs and a CQ poller, written from the PRM facts
//! independently of the driver crate.
#![allow(dead_code)]

use mlx5_hw::{
    Access, CqInfo, CqParams, Fabric, Nic, NicConfig, QpInfo, QpParams, QpTransition, SrqParams,
    Transport, XrcSrqParams,
};
use std::sync::Arc;

pub mod eth;
pub mod rng;
pub mod syndromes;
pub mod ud;

/// 4 KiB-aligned page.
#[derive(Clone, Copy)]
#[repr(C, align(4096))]
struct Page([u8; 4096]);

/// Host memory the model reads and writes by address: this process's (space 0), or, for
/// tests of address spaces, standing in for another process's memory ([`Mem::in_space`]).
pub struct Mem {
    pages: Vec<Page>,
    base: u64,
    /// The space and the address that program would see at offset 0.
    space: Option<(u16, u64)>,
}

impl Mem {
    pub fn new(bytes: usize) -> Self {
        let mut pages = vec![Page([0; 4096]); bytes.div_ceil(4096)];
        let base = pages.as_mut_ptr() as u64;
        Mem {
            pages,
            base,
            space: None,
        }
    }
    /// Memory of address space `space` (1..0xfffe) that its program sees at `va..`: the
    /// model reaches it through the test's `RemoteMemory` (see `spaces`).
    pub fn in_space(bytes: usize, space: u16, va: u64) -> Self {
        let mut mem = Mem::new(bytes);
        mem.space = Some((space, va));
        spaces::add(space, va, mem.base, mem.pages.len() * 4096);
        mem
    }
    /// The address the model is given for offset `off` (rings, records, regions).
    pub fn addr(&self, off: usize) -> u64 {
        match self.space {
            None => self.base + off as u64,
            Some((space, va)) => mlx5_hw::in_space(space, va + off as u64),
        }
    }
    /// The address the program writes into WQEs for offset `off`.
    pub fn va(&self, off: usize) -> u64 {
        match self.space {
            None => self.base + off as u64,
            Some((_, va)) => va + off as u64,
        }
    }
    pub fn write(&mut self, mut off: usize, mut b: &[u8]) {
        while !b.is_empty() {
            let (p, o) = (off / 4096, off % 4096);
            let n = b.len().min(4096 - o);
            self.pages[p].0[o..o + n].copy_from_slice(&b[..n]);
            b = &b[n..];
            off += n;
        }
    }
    pub fn read(&self, mut off: usize, len: usize) -> Vec<u8> {
        let mut out = Vec::with_capacity(len);
        while out.len() < len {
            let (p, o) = (off / 4096, off % 4096);
            let n = (len - out.len()).min(4096 - o);
            out.extend_from_slice(&self.pages[p].0[o..o + n]);
            off += n;
        }
        out
    }
    /// Read a byte the model may be writing from another thread (a CQE's `op_own`).
    pub fn load_acquire(&self, off: usize) -> u8 {
        let p = &self.pages[off / 4096].0[off % 4096] as *const u8;
        // SAFETY: `p` points into `self.pages`; `AtomicU8` has the layout of `u8`, and the
        // model stores this byte with a release store.
        let a = unsafe { &*(p as *const std::sync::atomic::AtomicU8) };
        a.load(std::sync::atomic::Ordering::Acquire)
    }
    pub fn be32(&self, off: usize) -> u32 {
        u32::from_be_bytes(self.read(off, 4).try_into().unwrap())
    }
    pub fn put_be32(&mut self, off: usize, v: u32) {
        self.write(off, &v.to_be_bytes());
    }
    pub fn u64(&self, off: usize) -> u64 {
        u64::from_ne_bytes(self.read(off, 8).try_into().unwrap())
    }
    pub fn put_u64(&mut self, off: usize, v: u64) {
        self.write(off, &v.to_ne_bytes());
    }
}

/// Other address spaces, as a server standing in for the kernel reaches its programs'
/// memory: each space is a `Mem` of this process seen at another address.
pub mod spaces {
    use std::sync::Mutex;

    struct Table(Mutex<Vec<(u16, u64, u64, usize)>>);

    static TABLE: Table = Table(Mutex::new(Vec::new()));

    /// A space number no other test of this process uses.
    pub fn fresh() -> u16 {
        static NEXT: std::sync::atomic::AtomicU16 = std::sync::atomic::AtomicU16::new(1);
        NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    }

    /// Space `space` shows `len` bytes at `base` of this process at `va..`.
    pub fn add(space: u16, va: u64, base: u64, len: usize) {
        let _ = mlx5_hw::set_remote_memory(&TABLE);
        let mut t = TABLE.0.lock().unwrap();
        assert!(t.iter().all(|e| e.0 != space), "space {space} is taken");
        t.push((space, va, base, len));
    }

    impl Table {
        /// This process's pointer for `len` bytes at `addr` of `space`; panics outside every
        /// space (the model reached memory no object of that space covers).
        fn at(&self, space: u16, addr: u64, len: usize) -> *mut u8 {
            let t = self.0.lock().unwrap();
            let &(_, va, base, size) = t
                .iter()
                .find(|e| e.0 == space && addr >= e.1 && addr + len as u64 <= e.1 + e.3 as u64)
                .unwrap_or_else(|| panic!("space {space} has nothing at {addr:#x}+{len}"));
            debug_assert!(addr + len as u64 <= va + size as u64);
            (base + (addr - va)) as *mut u8
        }
    }

    impl mlx5_hw::RemoteMemory for Table {
        fn read(&self, space: u16, addr: u64, dst: &mut [u8]) {
            let src = self.at(space, addr, dst.len());
            // SAFETY: `src` points into a live `Mem` of the test (checked by `at`).
            unsafe { std::ptr::copy_nonoverlapping(src, dst.as_mut_ptr(), dst.len()) }
        }
        fn write(&self, space: u16, addr: u64, src: &[u8]) {
            let dst = self.at(space, addr, src.len());
            // SAFETY: as in `read`.
            unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), dst, src.len()) }
        }
        fn mapped(&self, space: u16, addr: u64, len: u64) -> bool {
            let t = self.0.lock().unwrap();
            t.iter()
                .any(|e| e.0 == space && addr >= e.1 && addr + len <= e.1 + e.3 as u64)
        }
    }
}

// Layout of one side's memory.
pub const SQ: usize = 0x0000;
pub const RQ: usize = 0x4000;
pub const SCQ: usize = 0x6000;
pub const RCQ: usize = 0x8000;
pub const DBREC: usize = 0xa000;
pub const SCQ_DB: usize = 0xa040;
pub const RCQ_DB: usize = 0xa080;
pub const SRQ_DB: usize = 0xa0c0;
pub const SRQ_BUF: usize = 0xb000;
pub const DATA: usize = 0x10000;
pub const DATA_LEN: usize = 0x10000;
pub const MEM_LEN: usize = DATA + DATA_LEN;

/// The user index of every test QP (seen in CQEs under CQE version 1).
pub const USER_INDEX: u32 = 0xc0_ffee;

/// Ring sizes of a test QP.
#[derive(Clone, Copy)]
pub struct Cfg {
    pub log_sq: u8,
    pub log_rq: u8,
    pub log_rq_stride: u8,
    pub log_cq: u8,
    pub cqe_size: u32,
    pub srq: bool,
    pub overrun_ignore: bool,
    pub transport: Transport,
    /// Compressed CQEs on both CQs.
    pub zip: Option<mlx5_hw::CqCompression>,
    /// A DCI's stream channels.
    pub dci_streams: mlx5_hw::DciStreams,
    /// Short SENDs land in the receive CQE (`cs_res`).
    pub scatter_to_cqe: bool,
}

impl Default for Cfg {
    fn default() -> Self {
        Cfg {
            log_sq: 6,
            log_rq: 4,
            log_rq_stride: 6,
            log_cq: 6,
            cqe_size: 64,
            srq: false,
            overrun_ignore: false,
            transport: Transport::Rc,
            zip: None,
            dci_streams: mlx5_hw::DciStreams::default(),
            scatter_to_cqe: false,
        }
    }
}

/// A parsed CQE (the fields tests look at).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cqe {
    pub opcode: u8,
    pub se: bool,
    pub syndrome: u8,
    pub vendor: u8,
    pub sop_drop_qpn: u32,
    pub wqe_counter: u16,
    pub byte_cnt: u32,
    pub imm: u32,
    pub flags_rqpn: u32,
    pub slid: u16,
    pub srqn: u32,
}

impl Cqe {
    pub fn qpn(&self) -> u32 {
        self.sop_drop_qpn & 0xff_ffff
    }
    pub fn send_opcode(&self) -> u8 {
        (self.sop_drop_qpn >> 24) as u8
    }
}

pub const REQ: u8 = 0;
pub const RESP_WR_IMM: u8 = 1;
pub const RESP_SEND: u8 = 2;
pub const RESP_SEND_IMM: u8 = 3;
pub const RESP_SEND_INV: u8 = 4;
pub const REQ_ERR: u8 = 13;
pub const RESP_ERR: u8 = 14;

pub const NOP: u8 = 0x00;
pub const SEND_INVAL: u8 = 0x01;
pub const WRITE: u8 = 0x08;
pub const WRITE_IMM: u8 = 0x09;
pub const SEND: u8 = 0x0a;
pub const SEND_IMM: u8 = 0x0b;
pub const READ: u8 = 0x10;
pub const CS: u8 = 0x11;
pub const FA: u8 = 0x12;
pub const MASKED_CS: u8 = 0x14;
pub const MASKED_FA: u8 = 0x15;

pub const SIGNALED: u8 = 0x08;
pub const SOLICITED: u8 = 0x02;

/// One endpoint: a NIC handle, its objects and the driver-side counters.
pub struct Side {
    pub nic: Nic,
    pub mem: Mem,
    pub cfg: Cfg,
    pub pd: u32,
    pub scq: CqInfo,
    pub rcq: CqInfo,
    pub srqn: Option<u32>,
    /// An XRC target's XRC domain (`Transport::XrcTgt`).
    pub xrcd: Option<u32>,
    pub qp: QpInfo,
    pub key: u32,
    pub sq_pi: u16,
    pub last_wqe: u16,
    pub rq_pi: u16,
    pub srq_pi: u16,
    pub scq_ci: u32,
    pub rcq_ci: u32,
    pub bf_half: u32,
}

pub fn all_access() -> Access {
    Access::LOCAL_WRITE | Access::REMOTE_WRITE | Access::REMOTE_READ | Access::REMOTE_ATOMIC
}

impl Side {
    pub fn new(nic: &Nic, cfg: Cfg) -> Side {
        Side::with_mem(nic, cfg, Mem::new(MEM_LEN))
    }

    /// A side whose rings, records and data live in `mem` (of `MEM_LEN` bytes).
    pub fn with_mem(nic: &Nic, cfg: Cfg, mut mem: Mem) -> Side {
        let pd = nic.alloc_pd();
        // Fresh CQEs: opcode INVALID, owner 0 (as rdma-core initialises them).
        for (base, n) in [(SCQ, 1usize << cfg.log_cq), (RCQ, 1usize << cfg.log_cq)] {
            for i in 0..n {
                let sz = cfg.cqe_size as usize;
                mem.write(base + i * sz + sz - 1, &[0xf0]);
            }
        }
        let cq = |mem: &mut Mem, buf, db| CqParams {
            buf: mem.addr(buf),
            log_cqe_cnt: cfg.log_cq,
            cqe_size: cfg.cqe_size,
            dbrec: mem.addr(db),
            overrun_ignore: cfg.overrun_ignore,
            channel: None,
            compression: cfg.zip,
        };
        let (sp, rp) = (cq(&mut mem, SCQ, SCQ_DB), cq(&mut mem, RCQ, RCQ_DB));
        // SAFETY: the CQ buffers and records live in `mem`, owned by the returned Side.
        let scq = unsafe { nic.create_cq(&sp) }.unwrap();
        // SAFETY: as above.
        let rcq = unsafe { nic.create_cq(&rp) }.unwrap();
        // An XRC target: its own XRC domain, the SRQ an XRC SRQ of it on the receive CQ.
        let xrcd = (cfg.transport == Transport::XrcTgt).then(|| nic.alloc_xrcd().unwrap());
        let srqn = cfg.srq.then(|| {
            let p = SrqParams {
                pdn: pd,
                buf: mem.addr(SRQ_BUF),
                log_wqe_cnt: cfg.log_rq,
                log_stride: cfg.log_rq_stride,
                dbrec: mem.addr(SRQ_DB),
            };
            // Link entry i to i+1 (rdma-core's initial list).
            let n = 1usize << cfg.log_rq;
            for i in 0..n {
                let off = SRQ_BUF + (i << cfg.log_rq_stride) + 2;
                mem.write(off, &(((i + 1) % n) as u16).to_be_bytes());
            }
            let xrc = xrcd.map(|xrcd| XrcSrqParams {
                xrcd,
                cqn: rcq.cqn,
                user_index: USER_INDEX,
            });
            match xrc {
                // SAFETY: the SRQ buffer and record live in `mem`.
                Some(x) => unsafe { nic.create_xrc_srq(&p, &x) }.unwrap(),
                // SAFETY: as above.
                None => unsafe { nic.create_srq(&p) }.unwrap(),
            }
        });
        let qp = QpParams {
            transport: cfg.transport,
            pdn: pd,
            send_cqn: scq.cqn,
            recv_cqn: rcq.cqn,
            srqn,
            sq_buf: mem.addr(SQ),
            log_sq_wqe_cnt: cfg.log_sq,
            rq_buf: mem.addr(RQ),
            log_rq_wqe_cnt: cfg.log_rq,
            log_rq_stride: cfg.log_rq_stride,
            dbrec: mem.addr(DBREC),
            user_index: USER_INDEX,
            scatter_to_cqe: cfg.scatter_to_cqe,
            dci_streams: cfg.dci_streams,
        };
        let qp = match xrcd {
            // No rings or doorbell register.
            Some(x) => QpInfo {
                qpn: nic.create_xrc_tgt_qp(x).unwrap(),
                uar: 0,
                bf_offset: 0x800,
                bf_size: 0,
            },
            // SAFETY: the rings and record live in `mem`.
            None => unsafe { nic.create_qp(&qp) }.unwrap(),
        };
        let data = mem.addr(DATA);
        // SAFETY: the data region lives in `mem`.
        let key = unsafe { nic.reg_mr(pd, data, DATA_LEN as u64, all_access()) }.unwrap();
        Side {
            nic: nic.clone(),
            mem,
            cfg,
            pd,
            scq,
            rcq,
            srqn,
            xrcd,
            qp,
            key,
            sq_pi: 0,
            last_wqe: 0,
            rq_pi: 0,
            srq_pi: 0,
            scq_ci: 0,
            rcq_ci: 0,
            bf_half: 0,
        }
    }

    /// Address of offset `off` of the data region.
    pub fn data(&self, off: usize) -> u64 {
        self.mem.va(DATA + off)
    }

    pub fn write_data(&mut self, off: usize, b: &[u8]) {
        self.mem.write(DATA + off, b);
    }

    pub fn read_data(&self, off: usize, len: usize) -> Vec<u8> {
        self.mem.read(DATA + off, len)
    }

    /// Build a WQE at the current producer: ctrl + `segs`.
    pub fn wqe(&self, opcode: u8, opmod: u8, flags: u8, imm: u32, segs: &[Vec<u8>]) -> Vec<u8> {
        let body: Vec<u8> = segs.concat();
        assert_eq!(body.len() % 16, 0);
        let ds = 1 + body.len() / 16;
        let mut w = ctrl(opcode, opmod, self.sq_pi, self.qp.qpn, ds as u8, flags, imm).to_vec();
        w.extend_from_slice(&body);
        w
    }

    /// Copy a WQE into the ring at the producer, wrap-aware; advances the producer.
    pub fn post(&mut self, wqe: &[u8]) -> u16 {
        let idx = self.sq_pi;
        let cnt = 1u16 << self.cfg.log_sq;
        for (k, bb) in wqe.chunks(64).enumerate() {
            let slot = idx.wrapping_add(k as u16) & (cnt - 1);
            self.mem.write(SQ + slot as usize * 64, bb);
        }
        self.last_wqe = idx;
        self.sq_pi = idx.wrapping_add(wqe.len().div_ceil(64) as u16);
        idx
    }

    /// Build a WQE (`wqe`) and copy it into the ring (`post`); returns its index.
    pub fn post_op(&mut self, opcode: u8, opmod: u8, flags: u8, imm: u32, segs: &[Vec<u8>]) -> u16 {
        let w = self.wqe(opcode, opmod, flags, imm, segs);
        self.post(&w)
    }

    /// Post an RDMA WRITE of inline `payload` to `raddr` under `rkey`; returns its index.
    pub fn write_inline(&mut self, raddr: u64, rkey: u32, payload: &[u8], flags: u8) -> u16 {
        self.post_op(
            WRITE,
            0,
            flags,
            0,
            &[raddr_seg(raddr, rkey), inline_seg(payload)],
        )
    }

    /// Update the SQ doorbell record and ring the 8-byte doorbell with the last WQE's ctrl.
    pub fn ring(&mut self) {
        self.mem.put_be32(DBREC + 4, self.sq_pi as u32);
        let slot = self.last_wqe & ((1u16 << self.cfg.log_sq) - 1);
        let db = self.mem.read(SQ + slot as usize * 64, 8);
        self.nic
            .mmio_write(self.qp.uar, self.qp.bf_offset + self.bf_half, &db);
        self.bf_half ^= self.qp.bf_size;
    }

    /// Update the record and BlueFlame-copy the last WQE (64-byte chunks from the ring).
    pub fn ring_bf(&mut self) {
        self.mem.put_be32(DBREC + 4, self.sq_pi as u32);
        let nbb = self.sq_pi.wrapping_sub(self.last_wqe);
        let cnt = 1u16 << self.cfg.log_sq;
        for k in 0..nbb {
            let slot = self.last_wqe.wrapping_add(k) & (cnt - 1);
            let chunk = self.mem.read(SQ + slot as usize * 64, 64);
            let off = self.qp.bf_offset + self.bf_half + k as u32 * 64;
            self.nic.mmio_write(self.qp.uar, off, &chunk);
        }
        self.bf_half ^= self.qp.bf_size;
    }

    /// Post a receive with the given (addr, len, lkey) entries; terminator if room.
    pub fn post_recv(&mut self, sges: &[(u64, u32, u32)]) {
        let stride = 1usize << self.cfg.log_rq_stride;
        let (base, head_len) = if self.cfg.srq {
            // Entries are consumed in list order 0, 1, 2, ... as initialised.
            let idx = self.srq_pi as usize & ((1 << self.cfg.log_rq) - 1);
            (SRQ_BUF + idx * stride, 16)
        } else {
            let idx = self.rq_pi as usize & ((1 << self.cfg.log_rq) - 1);
            (RQ + idx * stride, 0)
        };
        let mut off = base + head_len;
        for &(addr, len, lkey) in sges {
            self.mem.write(off, &data_seg(len, lkey, addr));
            off += 16;
        }
        if off < base + stride {
            self.mem.write(off, &data_seg(0, 0x100, 0));
        }
        if self.cfg.srq {
            self.srq_pi = self.srq_pi.wrapping_add(1);
            self.mem.put_be32(SRQ_DB, self.srq_pi as u32);
        } else {
            self.rq_pi = self.rq_pi.wrapping_add(1);
            self.mem.put_be32(DBREC, self.rq_pi as u32);
        }
    }

    /// Receive into data offset `off`, `len` bytes.
    pub fn recv_at(&mut self, off: usize, len: u32) {
        let a = self.data(off);
        let k = self.key;
        self.post_recv(&[(a, len, k)]);
    }

    fn poll(&mut self, recv: bool) -> Option<Cqe> {
        let (base, db, ci) = if recv {
            (RCQ, RCQ_DB, self.rcq_ci)
        } else {
            (SCQ, SCQ_DB, self.scq_ci)
        };
        let n = 1u32 << self.cfg.log_cq;
        let sz = self.cfg.cqe_size as usize;
        let slot = (ci & (n - 1)) as usize;
        let op_own = self.mem.load_acquire(base + slot * sz + sz - 1);
        let c = self.mem.read(base + slot * sz + sz - 64, 64);
        if op_own >> 4 == 0xf || (op_own & 1) as u32 != (ci >> self.cfg.log_cq) & 1 {
            return None;
        }
        let be = |o: usize| u32::from_be_bytes(c[o..o + 4].try_into().unwrap());
        // Bytes 54..56 are syndromes in an error CQE and the timestamp's low bytes in any
        // other.
        let error = matches!(op_own >> 4, REQ_ERR | RESP_ERR);
        let cqe = Cqe {
            opcode: op_own >> 4,
            se: op_own & 2 != 0,
            syndrome: if error { c[55] } else { 0 },
            vendor: if error { c[54] } else { 0 },
            sop_drop_qpn: be(56),
            wqe_counter: u16::from_be_bytes([c[60], c[61]]),
            byte_cnt: be(44),
            imm: be(36),
            flags_rqpn: be(24),
            slid: u16::from_be_bytes([c[22], c[23]]),
            srqn: be(32),
        };
        let ci = ci + 1;
        if recv {
            self.rcq_ci = ci;
        } else {
            self.scq_ci = ci;
        }
        self.mem.put_be32(db, ci & 0xff_ffff);
        Some(cqe)
    }

    pub fn poll_send(&mut self) -> Option<Cqe> {
        self.poll(false)
    }

    pub fn poll_recv(&mut self) -> Option<Cqe> {
        self.poll(true)
    }

    /// Every send CQE available now.
    pub fn drain_send(&mut self) -> Vec<Cqe> {
        std::iter::from_fn(|| self.poll_send()).collect()
    }

    pub fn drain_recv(&mut self) -> Vec<Cqe> {
        std::iter::from_fn(|| self.poll_recv()).collect()
    }

    /// Arm the send (or receive) CQ as `mlx5_arm_cq` does: record word 1 first, then the
    /// 8-byte doorbell `BE32(sn<<28 | cmd | ci)`, `BE32(cqn)`.
    pub fn arm(&mut self, recv: bool, sn: u32, solicited: bool) {
        let (cq, db, ci) = if recv {
            (self.rcq, RCQ_DB, self.rcq_ci)
        } else {
            (self.scq, SCQ_DB, self.scq_ci)
        };
        let cmd = if solicited { 1 << 24 } else { 0 };
        let word = (sn & 3) << 28 | cmd | (ci & 0xff_ffff);
        self.mem.put_be32(db + 4, word);
        let mut b = word.to_be_bytes().to_vec();
        b.extend_from_slice(&cq.cqn.to_be_bytes());
        self.nic.mmio_write(cq.uar, 0x20, &b);
    }

    pub fn state(&self) -> mlx5_hw::QpState {
        self.nic.qp_state(self.qp.qpn).unwrap()
    }
}

pub fn ctrl(opcode: u8, opmod: u8, idx: u16, qpn: u32, ds: u8, flags: u8, imm: u32) -> [u8; 16] {
    let mut c = [0u8; 16];
    let w0 = (opmod as u32) << 24 | (idx as u32) << 8 | opcode as u32;
    c[0..4].copy_from_slice(&w0.to_be_bytes());
    c[4..8].copy_from_slice(&(qpn << 8 | ds as u32).to_be_bytes());
    c[11] = flags;
    c[12..16].copy_from_slice(&imm.to_be_bytes());
    c
}

pub fn raddr_seg(addr: u64, rkey: u32) -> Vec<u8> {
    let mut s = vec![0u8; 16];
    s[0..8].copy_from_slice(&addr.to_be_bytes());
    s[8..12].copy_from_slice(&rkey.to_be_bytes());
    s
}

pub fn data_seg(len: u32, lkey: u32, addr: u64) -> Vec<u8> {
    let mut s = vec![0u8; 16];
    s[0..4].copy_from_slice(&len.to_be_bytes());
    s[4..8].copy_from_slice(&lkey.to_be_bytes());
    s[8..16].copy_from_slice(&addr.to_be_bytes());
    s
}

pub fn inline_seg(payload: &[u8]) -> Vec<u8> {
    let mut s = (payload.len() as u32 | 0x8000_0000).to_be_bytes().to_vec();
    s.extend_from_slice(payload);
    s.resize((4 + payload.len()).div_ceil(16) * 16, 0);
    s
}

pub fn atomic_seg(swap_add: u64, compare: u64) -> Vec<u8> {
    let mut s = swap_add.to_be_bytes().to_vec();
    s.extend_from_slice(&compare.to_be_bytes());
    s
}

/// Connection parameters.
#[derive(Clone, Copy)]
pub struct Conn {
    pub mtu: u32,
    pub retry_cnt: u8,
    pub rnr_retry: u8,
    pub access: Access,
    /// Address the peer by GID (LID 0) instead of by LID.
    pub by_gid: bool,
    /// First PSN sent (RTS).
    pub sq_psn: u32,
    /// First PSN expected (RTR).
    pub rq_psn: u32,
    /// Service level of the path (RTR).
    pub sl: u8,
}

impl Default for Conn {
    fn default() -> Self {
        Conn {
            mtu: 1024,
            retry_cnt: 3,
            rnr_retry: 7,
            access: all_access(),
            by_gid: false,
            sq_psn: 0x100,
            rq_psn: 0x100,
            sl: 0,
        }
    }
}

/// Bring UC QPs `a` and `b` to RTS, each connected to the other (PSN 0, MTU 1024).
pub fn connect_uc(a: &Side, b: &Side) {
    for (x, y) in [(a, b), (b, a)] {
        let nic = &x.nic;
        let port = y.nic.port(1).unwrap();
        nic.modify_qp(
            x.qp.qpn,
            &QpTransition::Init {
                port: 1,
                access: all_access(),
                pkey_index: 0,
            },
        )
        .unwrap();
        nic.modify_qp(
            x.qp.qpn,
            &QpTransition::RtrUc {
                dest_lid: port.lid,
                dest_gid: [0; 16],
                dest_qpn: y.qp.qpn,
                rq_psn: 0,
                path_mtu: 1024,
                sl: 0,
                global: false,
            },
        )
        .unwrap();
        nic.modify_qp(x.qp.qpn, &QpTransition::RtsUc { sq_psn: 0 })
            .unwrap();
    }
}

/// Bring `a` to RTS connected to `b` (one direction of the connection).
pub fn connect_one(a: &Side, b: &Side, c: Conn) {
    connect_qp(&a.nic, a.qp.qpn, &b.nic, b.qp.qpn, c);
}

/// Bring QP `qpn` of `nic` to RTS connected to QP `peer` of `peer_nic`.
pub fn connect_qp(nic: &Nic, qpn: u32, peer_nic: &Nic, peer: u32, c: Conn) {
    let port = peer_nic.port(1).unwrap();
    let (lid, gid) = if c.by_gid {
        (0, port.gid)
    } else {
        (port.lid, [0; 16])
    };
    nic.modify_qp(
        qpn,
        &QpTransition::Init {
            port: 1,
            access: c.access,
            pkey_index: 0,
        },
    )
    .unwrap();
    nic.modify_qp(
        qpn,
        &QpTransition::Rtr {
            dest_lid: lid,
            dest_gid: gid,
            dest_qpn: peer,
            rq_psn: c.rq_psn,
            path_mtu: c.mtu,
            max_dest_rd_atomic: 4,
            min_rnr_timer: 1,
            sl: c.sl,
            global: c.by_gid,
        },
    )
    .unwrap();
    nic.modify_qp(
        qpn,
        &QpTransition::Rts {
            sq_psn: c.sq_psn,
            timeout: 14,
            retry_cnt: c.retry_cnt,
            rnr_retry: c.rnr_retry,
            max_rd_atomic: 4,
        },
    )
    .unwrap();
}

/// Two NICs on one fabric with one connected QP each.
pub fn pair_with(cfg: Cfg, conn: Conn, nic_cfg: NicConfig) -> (Arc<Fabric>, Side, Side) {
    let f = Fabric::new();
    let na = Nic::new(&f, nic_cfg.clone());
    let nb = Nic::new(&f, nic_cfg);
    let a = Side::new(&na, cfg);
    let b = Side::new(&nb, cfg);
    connect_one(&a, &b, conn);
    connect_one(&b, &a, conn);
    (f, a, b)
}

pub fn pair() -> (Arc<Fabric>, Side, Side) {
    pair_with(Cfg::default(), Conn::default(), NicConfig::default())
}
