//! `mlx5-perf pcie --raw`: the raw Ethernet rows of `docs/model.md` ("Raw Ethernet",
//! "PCIe"; prm-facts-next §5.3) measured through the driver on the model: one 64-byte frame
//! per WQE with ConnectX-4's 18-byte inline header and without, an eMPW of 32 pointer
//! packets and one of 11 inline packets (the model.md row has 12, 62 DS: over the 60 DS
//! this driver keeps, DPDK's limit) (each one signaled WQE rung with the 8-byte
//! doorbell: the sender NIC's counters), 16 frames into a plain receive queue and 64 into
//! a striding one (the receiver NIC's counters). And `explain send --transport raw`.

use mlx5_direct::backend::sim::hw::{EthConfig, MinInline};
use mlx5_direct::backend::sim::{Fabric, LinkLayer, NicConfig, PcieConfig, PcieCounters, Sim};
use mlx5_direct::{
    Access, Context, Cq, Data, DoorbellMode, EmpwPacket, EmpwWr, EthWr, FlowRule, MemoryRegion, Qp,
    QpConfig, SendFlags, StridingConfig, Transport,
};

/// One end: a raw packet QP in RTS, its CQ and a region.
struct Side {
    ctx: Context<Sim>,
    cq: Cq<Sim>,
    qp: Qp<Sim>,
    mr: MemoryRegion<Sim>,
    mac: [u8; 6],
}

fn side(
    fabric: &std::sync::Arc<Fabric>,
    pcie: PcieConfig,
    min_inline: MinInline,
) -> Result<Side, crate::Error> {
    let config = NicConfig {
        link_layer: LinkLayer::Ethernet,
        pcie,
        eth: EthConfig {
            min_inline,
            ..EthConfig::default()
        },
        ..NicConfig::default()
    };
    let ctx = Context::new(Sim::on_fabric(fabric, config));
    let pd = ctx.alloc_pd()?;
    let cq = ctx.create_cq(256, 64)?;
    let qp_config = QpConfig {
        transport: Transport::Raw,
        max_inline: 256,
        ..QpConfig::default()
    };
    let mut qp = pd.create_qp(&cq, &cq, &qp_config)?;
    qp.activate_raw(1)?;
    qp.sq().set_mode(DoorbellMode::Doorbell);
    let mr = pd.alloc_mr(1 << 16, Access::LOCAL_WRITE)?;
    let mac = ctx.eth_caps()?.mac;
    Ok(Side {
        ctx,
        cq,
        qp,
        mr,
        mac,
    })
}

fn counters(s: &Side) -> PcieCounters {
    s.ctx.backend().nic().pcie()
}

/// A 64-byte UDP frame from `a` to `b`.
fn frame64(a: &Side, b: &Side) -> Vec<u8> {
    crate::raw::frame(&raw_args(), a.mac, b.mac).expect("64 bytes hold the headers")
}

/// Waits for one completion on `s`.
fn complete(s: &mut Side) -> Result<(), crate::Error> {
    crate::probe::complete_one(&s.ctx, &mut s.cq).map(|_| ())
}

/// One row: its name, the frames it carries, and the link counters it cost.
pub struct RawRow {
    /// The case.
    pub name: &'static str,
    /// Frames.
    pub frames: u64,
    /// The counters of the side the row is about.
    pub cost: PcieCounters,
}

/// Measures the rows on a link of `pcie`.
pub fn rows(pcie: PcieConfig) -> Result<Vec<RawRow>, crate::Error> {
    let mut rows = Vec::new();
    for (name, min_inline) in [
        ("1 frame/WQE, 18-B inline header (CX-4)", MinInline::L2),
        ("1 frame/WQE, no inline header (CX-5)", MinInline::None),
    ] {
        let fabric = Fabric::new();
        let mut a = side(&fabric, pcie, min_inline)?;
        let b = side(&fabric, pcie, MinInline::None)?;
        let f = frame64(&a, &b);
        let inline = if min_inline == MinInline::L2 { 18 } else { 0 };
        a.mr.write(0, &f[inline..]);
        let sge = [a.mr.sge(0, (64 - inline) as u32)];
        let before = counters(&a);
        a.qp.sq()
            .post_eth(&EthWr::new(1, &f[..inline], Data::Sges(&sge)))?;
        complete(&mut a)?;
        rows.push(RawRow {
            name,
            frames: 1,
            cost: counters(&a) - before,
        });
    }
    for (name, inline, n) in [
        ("eMPW, 32 pointer packets", false, 32usize),
        ("eMPW, 11 inline packets (60-DS policy)", true, 11),
    ] {
        let fabric = Fabric::new();
        let mut a = side(&fabric, pcie, MinInline::None)?;
        let b = side(&fabric, pcie, MinInline::None)?;
        let f = frame64(&a, &b);
        a.mr.write(0, &f);
        let packets = vec![
            if inline {
                EmpwPacket::Inline(&f)
            } else {
                EmpwPacket::Pointer(a.mr.sge(0, 64))
            };
            n
        ];
        let wr = EmpwWr {
            wr_id: 1,
            flags: SendFlags::SIGNALED,
            checksum: mlx5_direct::Checksum::NONE,
            packets: &packets,
        };
        let before = counters(&a);
        a.qp.sq().post_empw(&wr)?;
        complete(&mut a)?;
        rows.push(RawRow {
            name,
            frames: n as u64,
            cost: counters(&a) - before,
        });
    }
    rows.push(plain_rq(pcie)?);
    rows.push(striding_rq(pcie)?);
    Ok(rows)
}

/// 16 frames into a plain receive queue of 64-byte WQEs, 16 posted.
fn plain_rq(pcie: PcieConfig) -> Result<RawRow, crate::Error> {
    let fabric = Fabric::new();
    let mut a = side(&fabric, pcie, MinInline::None)?;
    let mut b = side(&fabric, pcie, MinInline::None)?;
    let _rule = b.qp.create_flow(&FlowRule::dst_mac(b.mac))?;
    let f = frame64(&a, &b);
    for i in 0..16u64 {
        let sge = b.mr.sge(i as usize * 128, 128);
        b.qp.rq().ok_or("no receive queue")?.post(i, &[sge])?;
    }
    let before = counters(&b);
    for i in 0..16 {
        a.qp.sq().post_eth(&EthWr::new(i, &[], Data::Inline(&f)))?;
        complete(&mut a)?;
        complete(&mut b)?;
    }
    Ok(RawRow {
        name: "plain RQ, 16 frames (16 WQEs posted)",
        frames: 16,
        cost: counters(&b) - before,
    })
}

/// 64 frames into a striding queue of 64 strides of 64 bytes per WQE.
fn striding_rq(pcie: PcieConfig) -> Result<RawRow, crate::Error> {
    let fabric = Fabric::new();
    let mut a = side(&fabric, pcie, MinInline::None)?;
    let b = side(&fabric, pcie, MinInline::None)?;
    let pd = b.ctx.alloc_pd()?;
    let mut wq = pd.create_striding_wq(&StridingConfig {
        log_wqes: 1,
        log_stride_bytes: 6,
        log_num_strides: 6,
        two_byte_shift: false,
    })?;
    let rss = pd.create_rss_qp(&[&wq], None)?;
    let _rule = rss.create_flow(&FlowRule::dst_mac(b.mac))?;
    let f = frame64(&a, &b);
    let before = counters(&b);
    let mut got = 0;
    for i in 0..64 {
        a.qp.sq().post_eth(&EthWr::new(i, &[], Data::Inline(&f)))?;
        complete(&mut a)?;
        while got <= i as usize {
            got += wq.poll(64, |_| {})?;
            b.ctx.backend().nic().progress();
        }
    }
    Ok(RawRow {
        name: "striding RQ, 64 frames (64 x 64 B strides/WQE)",
        frames: 64,
        cost: counters(&b) - before,
    })
}

/// Prints the rows.
pub fn print(rows: &[RawRow]) {
    outln!("Raw Ethernet on the model (64-byte frames; sender rows: one signaled WQE, 8-byte doorbell; receiver rows: the receiving NIC)");
    outln!(
        "{:<48} {:>6} {:>5} {:>5} {:>5} {:>5} {:>9} {:>9} {:>10} {:>10}",
        "case",
        "frames",
        "MWr",
        "MRd",
        "CplD",
        "MWr^",
        "B down",
        "B up",
        "down/frame",
        "up/frame"
    );
    for r in rows {
        let (mwr, mrd, cpld, up, down_b, up_b) = r.counts();
        outln!(
            "{:<48} {:>6} {:>5} {:>5} {:>5} {:>5} {:>9} {:>9} {:>10.1} {:>10.1}",
            r.name,
            r.frames,
            mwr,
            mrd,
            cpld,
            up,
            down_b,
            up_b,
            down_b as f64 / r.frames as f64,
            up_b as f64 / r.frames as f64
        );
    }
}

impl RawRow {
    /// (MWr down, MRd, CplD, MWr up, bytes down, bytes up).
    pub fn counts(&self) -> (u64, u64, u64, u64, u64, u64) {
        crate::probe::link_counts(&self.cost)
    }
}

/// `explain send --transport raw [--empw N] [--inline]`: one frame (or an eMPW WQE of
/// `--empw` frames) of `--size` bytes from one model NIC to another, its WQE decoded
/// (control segment, Ethernet segment, data or eMPW entries) and what it cost on each
/// NIC's link.
pub fn explain(args: &crate::cli::ExplainArgs) -> Result<(), crate::Error> {
    if args.op != crate::cli::ExplainOp::Send {
        return Err("raw Ethernet sends frames: explain send --transport raw".into());
    }
    let pcie = crate::probe::link(args.tlp_overhead, 256, 512, 128);
    let fabric = Fabric::new();
    let mut a = side(&fabric, pcie, MinInline::None)?;
    let mut b = side(&fabric, pcie, MinInline::None)?;
    let _rule = b.qp.create_flow(&FlowRule::dst_mac(b.mac))?;
    let raw = crate::raw::RawArgs {
        size: args.size.max(60),
        ..raw_args()
    };
    let f = crate::raw::frame(&raw, a.mac, b.mac)?;
    let n = args.empw.max(1);
    for i in 0..n {
        let sge = b.mr.sge(i * 2048, 2048);
        b.qp.rq()
            .ok_or("no receive queue")?
            .post(i as u64, &[sge])?;
    }
    a.mr.write(0, &f);
    let pi = a.qp.sq().producer_count();
    let (a0, b0) = (counters(&a), counters(&b));
    let sge = [a.mr.sge(0, f.len() as u32)];
    if args.empw == 0 {
        let data = if args.inline {
            Data::Inline(&f)
        } else {
            Data::Sges(&sge)
        };
        a.qp.sq().post_eth(&EthWr::new(1, &[], data))?;
    } else {
        let packet = if args.inline {
            EmpwPacket::Inline(&f)
        } else {
            EmpwPacket::Pointer(sge[0])
        };
        let packets = vec![packet; n];
        a.qp.sq().post_empw(&EmpwWr {
            wr_id: 1,
            flags: SendFlags::SIGNALED,
            checksum: mlx5_direct::Checksum::NONE,
            packets: &packets,
        })?;
    }
    complete(&mut a)?;
    for _ in 0..n {
        complete(&mut b)?;
    }
    let head = a.qp.sq().wqe_bytes(pi, 16);
    let ds = usize::from(head[7] & 0x3f);
    let wqe = a.qp.sq().wqe_bytes(pi, ds * 16);
    outln!(
        "Raw Ethernet: {n} frame(s) of {} bytes, {} WQE of {ds} DS ({} bytes)",
        f.len(),
        if args.empw == 0 { "SEND" } else { "eMPW" },
        ds * 16
    );
    for (i, unit) in wqe.chunks(16).enumerate() {
        let name = match i {
            0 => "ctrl".to_string(),
            1 => "eth seg".to_string(),
            _ if args.empw == 0 && args.inline => format!("inline data {}", i - 1),
            _ if args.inline => format!("eMPW inline entries {}", i - 1),
            _ => format!("data seg {}", i - 1),
        };
        outln!(
            "  {:>3}  {:<24} {}",
            i * 16,
            name,
            unit.iter().map(|b| format!("{b:02x}")).collect::<String>()
        );
    }
    let e = &wqe[16..32];
    outln!(
        "  eth seg: cs_flags {:#04x}, mss {}, inline_hdr_sz {}",
        e[4],
        u16::from_be_bytes([e[6], e[7]]),
        u16::from_be_bytes([e[12], e[13]])
    );
    for (name, c) in [
        ("sender", counters(&a) - a0),
        ("receiver", counters(&b) - b0),
    ] {
        outln!(
            "  {name:<8} MWr {} MRd {} CplD {} MWr up {}: {} bytes down, {} up ({:.1} / {:.1} per frame; model numbers)",
            c.mmio_writes, c.dma_reads, c.completions, c.dma_writes, c.bytes_down, c.bytes_up,
            c.bytes_down as f64 / n as f64, c.bytes_up as f64 / n as f64
        );
    }
    Ok(())
}

/// The raw tests' flags for a 64-byte UDP frame from 10.0.0.1:1 to 10.0.0.2:2.
pub(crate) fn raw_args() -> crate::raw::RawArgs {
    crate::raw::RawArgs {
        size: 64,
        iters: 1,
        source_mac: None,
        dest_mac: None,
        source_ip: [10, 0, 0, 1].into(),
        dest_ip: [10, 0, 0, 2].into(),
        source_port: 1,
        dest_port: 2,
        tcp: false,
        server: false,
        burst_size: 1,
        empw: 0,
        mprq: 0,
        rate_limit: None,
        rate_units: crate::cli::RateUnits::Gbits,
        rate_limit_type: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::TlpOverhead;

    /// `explain send --transport raw` decodes a SEND, a pointer and an inline eMPW, and
    /// refuses another operation.
    #[test]
    fn explain_runs_for_each_form() {
        use clap::Parser;
        let args = |extra: &[&str]| {
            let mut argv = vec![
                "mlx5-perf",
                "explain",
                "send",
                "--transport",
                "raw",
                "--size",
                "64",
            ];
            argv.extend_from_slice(extra);
            match crate::cli::Cli::parse_from(argv).command {
                crate::cli::Command::Explain(a) => a,
                _ => unreachable!(),
            }
        };
        for extra in [
            &[][..],
            &["--empw", "4"],
            &["--empw", "2", "--inline"],
            &["--inline"],
        ] {
            explain(&args(extra)).unwrap();
        }
        let mut write = args(&[]);
        write.op = crate::cli::ExplainOp::Write;
        assert!(explain(&write).is_err());
    }

    /// The rows are docs/model.md's ("Raw Ethernet", "PCIe"; `hw/tests/raw_pcie.rs`) on
    /// the `pcie` command's default link, through the driver: (MWr down, MRd, CplD, MWr up,
    /// bytes down, bytes up).
    #[test]
    fn the_rows_are_the_models_table() {
        let rows = rows(crate::probe::link(TlpOverhead::PcieBench, 256, 512, 128)).unwrap();
        let got: Vec<_> = rows.iter().map(RawRow::counts).collect();
        assert_eq!(got[0], (1, 2, 2, 1, 182, 136));
        assert_eq!(got[1], (1, 2, 2, 1, 200, 136));
        assert_eq!(got[2], (1, 34, 35, 1, 3356, 904));
        // 11 inline packets of 64 bytes: 57 DS, fetched as 15 BBs (960 bytes: two reads,
        // four completions), no gather.
        assert_eq!(got[3], (1, 2, 4, 1, 1072, 136));
        assert_eq!(got[4], (0, 17, 17, 32, 1368, 3224));
        assert_eq!(got[5], (0, 2, 2, 128, 76, 11312));
    }
}
