//! Throughput of the model alone: 8-byte inline RDMA WRITEs from hand-built WQEs, one
//! 8-byte doorbell each (or, with `MODEL_BENCH_BF=1`, one 64-byte BlueFlame copy each), a
//! CQE every 16 WQEs. Run with `cargo bench -p mlx5-hw`; `MODEL_BENCH_OPS` sets the count.
//! Reports the rate on wall time and on the thread's CPU time (one core's rate on a shared
//! machine).

use mlx5_hw::{Access, CqParams, Fabric, Nic, NicConfig, QpInfo, QpParams, QpTransition};
use std::time::Instant;

#[derive(Clone, Copy)]
#[repr(C, align(4096))]
struct Page([u8; 4096]);

const LOG_SQ: u8 = 8;
const LOG_CQ: u8 = 6;
const SQ: usize = 0;
const CQ: usize = 0x4000;
const DBREC: usize = 0x5000;
const CQ_DB: usize = 0x5040;
const DATA: usize = 0x6000;
const PAGES: usize = 8;

struct Ep {
    nic: Nic,
    mem: Vec<Page>,
    base: u64,
    qp: QpInfo,
    key: u32,
}

impl Ep {
    fn new(nic: &Nic) -> Ep {
        let mut mem = vec![Page([0; 4096]); PAGES];
        let base = mem.as_mut_ptr() as u64;
        let pd = nic.alloc_pd();
        for i in 0..1usize << LOG_CQ {
            let off = CQ + i * 64 + 63;
            mem[off / 4096].0[off % 4096] = 0xf0;
        }
        let cq = CqParams {
            buf: base + CQ as u64,
            log_cqe_cnt: LOG_CQ,
            cqe_size: 64,
            dbrec: base + CQ_DB as u64,
            overrun_ignore: false,
            channel: None,
            compression: None,
        };
        // SAFETY: `mem` lives as long as the endpoint, which outlives the benchmark run.
        let cq = unsafe { nic.create_cq(&cq) }.unwrap();
        let qp = QpParams {
            pdn: pd,
            send_cqn: cq.cqn,
            recv_cqn: cq.cqn,
            srqn: None,
            sq_buf: base + SQ as u64,
            log_sq_wqe_cnt: LOG_SQ,
            rq_buf: base + SQ as u64,
            log_rq_wqe_cnt: 0,
            log_rq_stride: 4,
            dbrec: base + DBREC as u64,
            user_index: 0,
            ..QpParams::default()
        };
        // SAFETY: as above.
        let qp = unsafe { nic.create_qp(&qp) }.unwrap();
        let all = Access::LOCAL_WRITE | Access::REMOTE_WRITE;
        // SAFETY: as above.
        let key = unsafe { nic.reg_mr(pd, base + DATA as u64, 4096, all) }.unwrap();
        Ep {
            nic: nic.clone(),
            mem,
            base,
            qp,
            key,
        }
    }

    fn byte(&mut self, off: usize) -> &mut u8 {
        &mut self.mem[off / 4096].0[off % 4096]
    }

    /// Write `b` at `off` (never across a page: rings and records are page-contained).
    fn write(&mut self, off: usize, b: &[u8]) {
        let o = off % 4096;
        self.mem[off / 4096].0[o..o + b.len()].copy_from_slice(b);
    }

    fn connect(&self, peer: &Ep) {
        let q = self.qp.qpn;
        let n = &self.nic;
        n.modify_qp(
            q,
            &QpTransition::Init {
                port: 1,
                access: Access::LOCAL_WRITE | Access::REMOTE_WRITE,
                pkey_index: 0,
            },
        )
        .unwrap();
        let lid = peer.nic.port(1).unwrap().lid;
        n.modify_qp(
            q,
            &QpTransition::Rtr {
                dest_lid: lid,
                dest_gid: [0; 16],
                dest_qpn: peer.qp.qpn,
                rq_psn: 0,
                path_mtu: 4096,
                max_dest_rd_atomic: 1,
                min_rnr_timer: 0,
                sl: 0,
                global: false,
            },
        )
        .unwrap();
        n.modify_qp(
            q,
            &QpTransition::Rts {
                sq_psn: 0,
                timeout: 14,
                retry_cnt: 7,
                rnr_retry: 7,
                max_rd_atomic: 1,
            },
        )
        .unwrap();
    }
}

fn main() {
    let f = Fabric::new();
    let (na, nb) = (
        Nic::new(&f, NicConfig::default()),
        Nic::new(&f, NicConfig::default()),
    );
    let mut a = Ep::new(&na);
    let b = Ep::new(&nb);
    a.connect(&b);
    b.connect(&a);
    let (raddr, rkey) = (b.base + DATA as u64, b.key);
    let qpn = a.qp.qpn;
    let n: u32 = std::env::var("MODEL_BENCH_OPS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(4_000_000);
    let blueflame = std::env::var("MODEL_BENCH_BF").is_ok_and(|v| v == "1");
    let mask = (1u32 << LOG_SQ) - 1;
    let (mut pi, mut ci) = (0u32, 0u32);
    let start = Instant::now();
    let cpu_start = thread_cpu_ns();
    for i in 0..n {
        // ctrl + raddr + inline header with 8 bytes (one DS) = 3 DS, one WQEBB.
        let flags = if i % 16 == 15 { 0x08 } else { 0 };
        let mut w = [0u8; 48];
        w[0..4].copy_from_slice(&((pi & 0xffff) << 8 | 0x08).to_be_bytes());
        w[4..8].copy_from_slice(&(qpn << 8 | 3).to_be_bytes());
        w[11] = flags;
        w[16..24].copy_from_slice(&raddr.to_be_bytes());
        w[24..28].copy_from_slice(&rkey.to_be_bytes());
        w[32..36].copy_from_slice(&(0x8000_0008u32).to_be_bytes());
        w[36..44].copy_from_slice(&u64::from(i).to_ne_bytes());
        let slot = (pi & mask) as usize;
        a.write(SQ + slot * 64, &w);
        pi += 1;
        a.write(DBREC + 4, &(pi & 0xffff).to_be_bytes());
        let reg = a.qp.bf_offset + (i & 1) * a.qp.bf_size;
        if blueflame {
            let mut chunk = [0u8; 64];
            chunk[..48].copy_from_slice(&w);
            a.nic.mmio_write(a.qp.uar, reg, &chunk);
        } else {
            a.nic.mmio_write(a.qp.uar, reg, &w[..8]);
        }
        if flags != 0 {
            let slot = (ci & ((1 << LOG_CQ) - 1)) as usize;
            let op_own = *a.byte(CQ + slot * 64 + 63);
            assert_eq!(op_own >> 4, 0, "REQ CQE expected");
            assert_eq!(u32::from(op_own & 1), (ci >> LOG_CQ) & 1);
            ci += 1;
            a.write(CQ_DB, &(ci & 0xff_ffff).to_be_bytes());
        }
    }
    let dt = start.elapsed();
    let cpu = (thread_cpu_ns() - cpu_start) as f64 / 1e9;
    let rate = f64::from(n) / dt.as_secs_f64();
    let cpu_rate = f64::from(n) / cpu;
    let mode = if blueflame {
        "64-byte BlueFlame"
    } else {
        "8-byte doorbell"
    };
    println!(
        "model: {n} inline 8-byte RDMA WRITEs ({mode} each, CQE every 16) in {:.3} s: {:.2} M WQE/s, {:.0} ns/WQE; on the thread's CPU time ({cpu:.3} s): {:.2} M WQE/s, {:.0} ns/WQE",
        dt.as_secs_f64(),
        rate / 1e6,
        1e9 / rate,
        cpu_rate / 1e6,
        1e9 / cpu_rate
    );
    let s = a.nic.stats();
    assert_eq!(s.wqes, u64::from(n));
    assert_eq!(
        (s.bf_used, s.bf_mismatch),
        (if blueflame { n.into() } else { 0 }, 0)
    );
    assert_eq!(s.cqes, u64::from(n / 16));
}

/// CPU time this thread has run, in ns: the rate on one core, whatever else the machine
/// runs (wall time on a shared machine counts other processes' time slices).
fn thread_cpu_ns() -> u64 {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `t` is a valid, writable timespec; the clock id is a constant Linux knows.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
    assert_eq!(rc, 0, "clock_gettime(CLOCK_THREAD_CPUTIME_ID)");
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
}
