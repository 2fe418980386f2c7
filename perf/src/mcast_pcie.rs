//! One UD SEND to a multicast group that N model NICs each attach one UD QP to, measured
//! through the driver: `explain send --transport ud --mcast N` (the WQE, the wire and
//! each NIC's link) and `pcie --mcast` (rows for 1, 2 and 4 receivers beside a unicast
//! SEND with the same GRH). The sender pays once, whatever N: one WQE, one packet on the
//! wire; each receiving NIC's port takes the packet once and writes the GRH area, the
//! payload and a CQE on its own link (docs/model.md, "UD multicast").

use std::sync::Arc;

use mlx5_direct::backend::sim::{Fabric, NicConfig, PcieConfig, PcieCounters, Sim};
use mlx5_direct::{
    AhAttr, Completion, Context, Cq, Data, GlobalRoute, McastGroup, MemoryRegion, ProtectionDomain,
    Qp, QpConfig, SendFlags, SendOp, SendWr, Transport, UD_GRH_BYTES,
};
use serde_json::{json, Value};

use crate::bench::{DEF_MGID, DEF_QKEY};
use crate::probe::link_counts as counts;
use crate::Error;

/// The most receiving NICs a case takes.
pub const MAX_RECEIVERS: usize = 8;

/// One model NIC with a UD QP in RTS, its CQ and a region.
struct Side {
    ctx: Context<Sim>,
    pd: ProtectionDomain<Sim>,
    cq: Cq<Sim>,
    qp: Qp<Sim>,
    mr: MemoryRegion<Sim>,
}

fn side(fabric: &Arc<Fabric>, pcie: PcieConfig, roce: bool) -> Result<Side, Error> {
    let config = NicConfig {
        pcie,
        link_layer: crate::probe::link_layer(roce),
        ..NicConfig::default()
    };
    let ctx = Context::new(Sim::on_fabric(fabric, config));
    let pd = ctx.alloc_pd()?;
    let cq = ctx.create_cq(64, 64)?;
    let qp_config = QpConfig {
        transport: Transport::Ud,
        max_inline: crate::probe::PERFTEST_INLINE as u32,
        ..QpConfig::default()
    };
    let mut qp = pd.create_qp(&cq, &cq, &qp_config)?;
    qp.activate_ud(1, DEF_QKEY)?;
    let mr = pd.alloc_mr(1 << 16, mlx5_direct::Access::ALL)?;
    Ok(Side {
        ctx,
        pd,
        cq,
        qp,
        mr,
    })
}

fn counters(s: &Side) -> PcieCounters {
    s.ctx.backend().nic().pcie()
}

/// Waits for one successful completion on `s`.
fn complete(s: &mut Side) -> Result<Completion, Error> {
    crate::probe::complete_one(&s.ctx, &mut s.cq)
}

/// What to send.
#[derive(Clone, Copy, Debug)]
pub struct McastCase {
    /// Receiving NICs, each with one UD QP attached to the group; 0: a unicast SEND to one
    /// NIC's QP through an address handle with a GRH (the comparison row).
    pub receivers: usize,
    /// Payload bytes.
    pub size: usize,
    /// Payload inline in the WQE (else gathered from the sender's region).
    pub inline: bool,
    /// RoCE v2 ports (MLID 0) instead of InfiniBand (the model's MLID 0xC001).
    pub roce: bool,
    /// The link.
    pub pcie: PcieConfig,
}

/// What one SEND cost.
#[derive(Clone, Debug)]
pub struct McastObserved {
    /// The WQE's bytes.
    pub wqe: Vec<u8>,
    /// The sender NIC's link.
    pub sender: PcieCounters,
    /// Each receiving NIC's link.
    pub receivers: Vec<PcieCounters>,
    /// Packets the sender's NIC put on the wire.
    pub packets: u64,
    /// Multicast packets each receiving NIC's port took.
    pub taken: Vec<u64>,
    /// Each receive's byte count (the GRH area and the payload).
    pub received: Vec<u32>,
}

/// Posts `case` on fresh model NICs and returns what it cost.
pub fn observe(case: &McastCase) -> Result<McastObserved, Error> {
    if case.receivers > MAX_RECEIVERS {
        return Err(format!("--mcast: at most {MAX_RECEIVERS} receiving NICs").into());
    }
    if case.size == 0 || case.size > 4096 {
        return Err("--mcast: a datagram of 1 to 4096 bytes (one MTU)".into());
    }
    let fabric = Fabric::new();
    let mut a = side(&fabric, case.pcie, case.roce)?;
    let mut bs = (0..case.receivers.max(1))
        .map(|_| side(&fabric, case.pcie, case.roce))
        .collect::<Result<Vec<_>, _>>()?;
    let group = McastGroup {
        mgid: DEF_MGID,
        mlid: if case.roce { 0 } else { 0xc001 },
    };
    let port = bs[0].ctx.port(1)?;
    let (dlid, dgid) = match case.receivers {
        0 => (port.lid, port.gid),
        _ => (group.mlid, group.mgid),
    };
    let ah = a.pd.create_ah(&AhAttr {
        port: 1,
        dlid,
        grh: Some(GlobalRoute {
            dgid,
            hop_limit: 64,
            ..GlobalRoute::default()
        }),
        ..AhAttr::default()
    })?;
    let len = (UD_GRH_BYTES + case.size) as u32;
    for b in bs.iter_mut() {
        if case.receivers > 0 {
            b.qp.attach_mcast(&group)?;
        }
        let sge = b.mr.sge(0, len);
        b.qp.rq().ok_or("no receive queue")?.post(1, &[sge])?;
    }
    let payload = vec![0xa5u8; case.size];
    a.mr.write(0, &payload);
    let sge = [a.mr.sge(0, case.size as u32)];
    let wr = SendWr {
        wr_id: 1,
        op: SendOp::Send,
        data: match case.inline {
            true => Data::Inline(&payload),
            false => Data::Sges(&sge),
        },
        flags: SendFlags::SIGNALED,
    };
    let dest = match case.receivers {
        0 => ah.dest(bs[0].qp.qpn(), DEF_QKEY),
        _ => ah.mcast_dest(DEF_QKEY),
    };
    let stats = |s: &Side| s.ctx.backend().nic().stats();
    let before: Vec<_> = bs.iter().map(|b| (counters(b), stats(b))).collect();
    let (a0, sent0) = (counters(&a), stats(&a).packets);
    let pi = a.qp.sq().producer_count();
    a.qp.sq().post_ud(wr, &dest)?;
    complete(&mut a)?;
    let mut received = Vec::new();
    for b in bs.iter_mut() {
        received.push(complete(b)?.byte_len);
    }
    let head = a.qp.sq().wqe_bytes(pi, 16);
    let ds = usize::from(head[7] & 0x3f);
    Ok(McastObserved {
        wqe: a.qp.sq().wqe_bytes(pi, ds * 16),
        sender: counters(&a) - a0,
        receivers: bs
            .iter()
            .zip(&before)
            .map(|(b, (c, _))| counters(b) - *c)
            .collect(),
        packets: stats(&a).packets - sent0,
        taken: bs
            .iter()
            .zip(&before)
            .map(|(b, (_, s))| stats(b).mcast_packets - s.mcast_packets)
            .collect(),
        received,
    })
}

/// One row of `pcie --mcast`.
pub struct McastRow {
    /// The case.
    pub name: String,
    /// What it cost.
    pub observed: McastObserved,
}

/// The receivers of `pcie --mcast`'s rows after the unicast one.
const ROW_RECEIVERS: [usize; 3] = [1, 2, 4];

/// Measures `pcie --mcast`'s rows on a link of `pcie`: a 64-byte SEND gathered from the
/// sender's region, unicast with a GRH, then to a group of 1, 2 and 4 receiving NICs.
pub fn rows(pcie: PcieConfig) -> Result<Vec<McastRow>, Error> {
    let case = |receivers| McastCase {
        receivers,
        size: 64,
        inline: false,
        roce: false,
        pcie,
    };
    let mut rows = vec![McastRow {
        name: "unicast, GRH, 1 receiver".into(),
        observed: observe(&case(0))?,
    }];
    for n in ROW_RECEIVERS {
        rows.push(McastRow {
            name: format!("multicast, {n} receiver(s)"),
            observed: observe(&case(n))?,
        });
    }
    Ok(rows)
}

/// Prints the rows: the sender's link, the wire, one receiver's link and all receivers'.
pub fn print(rows: &[McastRow]) {
    outln!("UD SEND of 64 bytes (gathered, signaled) on the model, InfiniBand, GRH; one receiving NIC's link and the sum over all (model numbers)");
    outln!(
        "{:<28} {:>3} {:>7} {:>4} {:>4} {:>4} {:>4} {:>6} {:>5} {:>4} {:>4} {:>4} {:>6} {:>9}",
        "case",
        "N",
        "packets",
        "MWr",
        "MRd",
        "CplD",
        "MWr^",
        "B down",
        "B up",
        "rMRd",
        "rCpl",
        "rMWr",
        "r B up",
        "all B up"
    );
    for r in rows {
        let o = &r.observed;
        let (mwr, mrd, cpld, up, down_b, up_b) = counts(&o.sender);
        let (_, rmrd, rcpl, rup, _, rup_b) = counts(&o.receivers[0]);
        let all: u64 = o.receivers.iter().map(|c| c.bytes_up).sum();
        outln!(
            "{:<28} {:>3} {:>7} {:>4} {:>4} {:>4} {:>4} {:>6} {:>5} {:>4} {:>4} {:>4} {:>6} {:>9}",
            r.name,
            o.receivers.len(),
            o.packets,
            mwr,
            mrd,
            cpld,
            up,
            down_b,
            up_b,
            rmrd,
            rcpl,
            rup,
            rup_b,
            all
        );
    }
}

/// `pcie --mcast --json`: the rows as objects.
pub fn json_rows(rows: &[McastRow]) -> Value {
    Value::Array(
        rows.iter()
            .map(|r| observed_json(&r.name, &r.observed))
            .collect(),
    )
}

fn link_json(c: &PcieCounters) -> Value {
    let (mwr, mrd, cpld, up, down_b, up_b) = counts(c);
    json!({
        "mmio_writes": mwr, "dma_reads": mrd, "completions": cpld, "dma_writes": up,
        "bytes_down": down_b, "bytes_up": up_b,
    })
}

fn observed_json(name: &str, o: &McastObserved) -> Value {
    json!({
        "case": name,
        "receivers": o.receivers.len(),
        "wire_packets": o.packets,
        "sender": link_json(&o.sender),
        "receiver_links": o.receivers.iter().map(link_json).collect::<Vec<_>>(),
        "taken": o.taken,
        "received_bytes": o.received,
        "wqe": o.wqe.iter().map(|b| format!("{b:02x}")).collect::<String>(),
    })
}

/// `explain send --transport ud --mcast N`: one SEND of `--size` bytes to a group N model
/// NICs attached a UD QP each to, its WQE by 16-byte unit (the datagram segment's
/// destination QPN is 0xFFFFFF) and what it cost on the wire and on each NIC's link.
pub fn explain(args: &crate::cli::ExplainArgs) -> Result<(), Error> {
    if args.op != crate::cli::ExplainOp::Send || args.transport != crate::cli::TransportArg::Ud {
        return Err("--mcast: a UD SEND to a group (explain send --transport ud --mcast N)".into());
    }
    let case = McastCase {
        receivers: args.mcast,
        size: args.size,
        inline: args.inline,
        roce: args.force_link == Some(crate::cli::Link::Ethernet),
        pcie: crate::probe::link(args.tlp_overhead, 256, 512, 128),
    };
    let o = observe(&case)?;
    if args.json {
        outln!("{}", observed_json("explain", &o));
        return Ok(());
    }
    let n = o.receivers.len();
    outln!(
        "UD SEND of {} bytes to a multicast group (MGID {}, MLID {:#06x}) that {n} NIC(s) attached one UD QP each to; model numbers",
        case.size,
        DEF_MGID.map(|b| b.to_string()).join(":"),
        if case.roce { 0 } else { 0xc001 }
    );
    outln!("WQE: {} DS ({} bytes)", o.wqe.len() / 16, o.wqe.len());
    for (i, unit) in o.wqe.chunks(16).enumerate() {
        let name = match i {
            0 => "ctrl",
            1..=3 => "datagram seg (AV)",
            _ if case.inline => "inline data",
            _ => "data seg",
        };
        outln!(
            "  {:>3}  {:<20} {}",
            i * 16,
            name,
            unit.iter().map(|b| format!("{b:02x}")).collect::<String>()
        );
    }
    let av = &o.wqe[16..64];
    outln!(
        "  datagram seg: dqp_dct {:#010x} (bit 31 the extended AV, QPN 0xFFFFFF the group), Q_Key {:#010x}, rlid {:#06x}",
        u32::from_be_bytes([av[8], av[9], av[10], av[11]]),
        u32::from_be_bytes([av[0], av[1], av[2], av[3]]),
        u16::from_be_bytes([av[14], av[15]])
    );
    outln!(
        "  wire: {} packet(s) sent; each receiving port took {:?}",
        o.packets,
        o.taken
    );
    let line = |name: &str, c: &PcieCounters| {
        outln!(
            "  {name:<11} MWr {} MRd {} CplD {} MWr up {}: {} bytes down, {} up",
            c.mmio_writes,
            c.dma_reads,
            c.completions,
            c.dma_writes,
            c.bytes_down,
            c.bytes_up
        );
    };
    line("sender", &o.sender);
    for (i, c) in o.receivers.iter().enumerate() {
        line(&format!("receiver {}", i + 1), c);
    }
    outln!(
        "  each receive: {:?} bytes (the {UD_GRH_BYTES}-byte GRH area and the payload)",
        o.received
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::TlpOverhead;

    /// The rows on the `pcie` command's default link: the sender's link and the wire cost
    /// the same for a unicast SEND with a GRH and for a group of 1, 2 or 4 NICs (one WQE of
    /// 80 bytes in two BlueFlame chunks, the payload read, the CQE; one packet), and each
    /// receiving NIC's link costs what the unicast receiver's does (the receive WQE read,
    /// the GRH area and payload written, the CQE), so all receivers' bytes up grow by N.
    /// (MWr down, MRd, CplD, MWr up, bytes down, bytes up.)
    #[test]
    fn one_send_costs_the_sender_once_and_each_receiver_its_own() {
        let rows = rows(crate::probe::link(TlpOverhead::PcieBench, 256, 512, 128)).unwrap();
        let receivers: Vec<usize> = rows.iter().map(|r| r.observed.receivers.len()).collect();
        assert_eq!(receivers, [1, 1, 2, 4]);
        for (i, r) in rows.iter().enumerate() {
            let o = &r.observed;
            assert_eq!(counts(&o.sender), (2, 1, 1, 1, 260, 112), "{}", r.name);
            assert_eq!(o.packets, 1, "{}", r.name);
            for c in &o.receivers {
                assert_eq!(counts(c), (0, 2, 2, 2, 108, 264), "{}", r.name);
            }
            assert!(o.received.iter().all(|&b| b == 104), "{}", r.name);
            // The port takes a multicast packet once; a unicast one is no group's.
            let taken = if i == 0 { 0 } else { 1 };
            assert_eq!(o.taken, vec![taken; o.receivers.len()], "{}", r.name);
            // The datagram segment's dqp_dct: the extended AV bit and the group's QPN.
            let dqp = u32::from_be_bytes(o.wqe[24..28].try_into().unwrap());
            match i {
                0 => assert_ne!(dqp, 0x80ff_ffff),
                _ => assert_eq!(dqp, 0x80ff_ffff, "{}", r.name),
            }
        }
        let all: Vec<u64> = rows
            .iter()
            .map(|r| r.observed.receivers.iter().map(|c| c.bytes_up).sum())
            .collect();
        assert_eq!(all, [264, 264, 528, 1056]);
    }

    /// `explain send --transport ud --mcast N` runs on InfiniBand and RoCE, inline or
    /// gathered; it refuses another operation or transport and more than 8 receivers.
    #[test]
    fn explain_runs_and_refuses() {
        use clap::Parser;
        let args = |extra: &[&str]| {
            let mut argv = vec!["mlx5-perf", "explain", "send", "--transport", "ud"];
            argv.extend_from_slice(extra);
            match crate::cli::Cli::parse_from(argv).command {
                crate::cli::Command::Explain(a) => a,
                _ => unreachable!(),
            }
        };
        for extra in [
            &["--mcast", "3", "--size", "64"][..],
            &["--mcast", "2", "--inline", "--force-link", "Ethernet"],
        ] {
            explain(&args(extra)).unwrap();
        }
        let too_many = explain(&args(&["--mcast", "9"])).unwrap_err();
        assert!(too_many.to_string().contains("at most 8"), "{too_many}");
        let mut write = args(&["--mcast", "2"]);
        write.op = crate::cli::ExplainOp::Write;
        assert!(explain(&write).is_err());
    }
}
