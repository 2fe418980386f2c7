//! `mlx5-perf pcie`: the PCIe transactions and link bytes one message costs, step by step
//! through the posting optimisations, measured by posting with the driver on the model.

use mlx5_direct::backend::sim::{
    Completions, ContextCache, PcieConfig, PcieCounters, TranslationCache,
};
use mlx5_direct::Pages;
use serde_json::{json, Value};

use crate::cli::{CompletionSplit, ExplainOp, PcieArgs, PcieOp, PostMode};
use crate::explain::per_message;
use crate::probe::{self, Case, Wire, PERFTEST_INLINE};
use mlx5_direct::{CqeCompression, Transport};

/// Transaction-layer bandwidth of an x16 link per direction in bytes/s: GT/s x 16 lanes x
/// 128/130 (encoding) / 8 bits. DLLPs and flow control are not subtracted, so rates derived
/// from it are upper bounds.
pub const GENERATIONS: [(&str, f64); 3] = [
    ("gen3", 8e9 * 16.0 * 128.0 / 130.0 / 8.0),
    ("gen4", 16e9 * 16.0 * 128.0 / 130.0 / 8.0),
    ("gen5", 32e9 * 16.0 * 128.0 / 130.0 / 8.0),
];

/// One requester configuration: (mode, inline, signal_every, batch, rounds), and whether
/// the CQ is armed and how many request packets are lost.
#[derive(Clone, Copy, Debug)]
struct Posting {
    mode: PostMode,
    inline: bool,
    signal_every: u32,
    batch: u32,
    rounds: u32,
    arm: bool,
    lose: u32,
    zip: Option<CqeCompression>,
    /// Both CQs created with completion timestamps.
    timestamps: bool,
}

impl Posting {
    /// `batch` WRs per doorbell, `rounds` doorbells, no event, no loss.
    fn new(mode: PostMode, inline: bool, signal_every: u32, batch: u32, rounds: u32) -> Self {
        Posting {
            mode,
            inline,
            signal_every,
            batch,
            rounds,
            arm: false,
            lose: 0,
            zip: None,
            timestamps: false,
        }
    }
}

/// One row of the table.
struct Row {
    side: &'static str,
    step: String,
    messages: u32,
    cost: PcieCounters,
    /// The transport rows: what the requester's NIC put on the wire.
    wire: Option<Wire>,
}

fn case(op: ExplainOp, size: usize, p: Posting, pcie: PcieConfig, qps: u32) -> Case {
    Case {
        op,
        size,
        inline: p.inline,
        sge: 1,
        signal_every: p.signal_every,
        mode: p.mode,
        batch: p.batch,
        rounds: p.rounds,
        qps,
        arm: p.arm,
        // The loss of each QP's first packet.
        lose: p.lose * qps,
        pcie,
        pages: Pages::Base,
        mr_page_size: 0,
        walk: false,
        odp: false,
        huge_rings: false,
        zip: p.zip,
        transport: Transport::Rc,
        grh: false,
        roce: false,
        dc_targets: 1,
        compact_av: false,
        recv_cqe: 64,
        scatter_to_cqe: false,
        dm: false,
        timestamps: p.timestamps,
    }
}

/// The link of the preset with the sizes, the completion split and the optional traffic
/// asked for.
fn link(args: &PcieArgs) -> PcieConfig {
    let base = probe::link(args.tlp_overhead, args.mps, args.mrrs, args.rcb);
    PcieConfig {
        completions: match args.completions {
            None => base.completions,
            Some(CompletionSplit::Rcb) => Completions::Rcb,
            Some(CompletionSplit::Mps) => Completions::Mps,
        },
        bf_evict_every: args.bf_evict_every,
        eq_rearm: args.eq_rearm,
        context_cache: args.ctx_cache.map(ContextCache::new),
        retry_refetch: args.retry_refetch,
        ..base
    }
}

/// Row 1's posting.
fn textbook() -> Posting {
    Posting::new(PostMode::Db, false, 1, 1, 1)
}

/// The requester steps of the table, labelled.
fn requester_steps(batch: u32, k: u32) -> Vec<(String, Posting)> {
    vec![
        ("doorbell, DMA gather, signaled CQE".into(), textbook()),
        ("+ inline".into(), Posting::new(PostMode::Db, true, 1, 1, 1)),
        (
            "+ BlueFlame".into(),
            Posting::new(PostMode::Bf, true, 1, 1, 1),
        ),
        (
            "+ unsignaled (no CQE)".into(),
            Posting::new(PostMode::Bf, true, 0, 1, 1),
        ),
        (
            format!("doorbell batching of {batch} (inline, signaled)"),
            Posting::new(PostMode::Db, true, 1, batch, 1),
        ),
        (
            format!("batch of {batch}, rdma-core's rule, CQE per batch"),
            Posting::new(PostMode::Bf, true, batch, batch, 1),
        ),
        (
            format!("batch of {batch}, last WQE BlueFlame, CQE per batch"),
            Posting::new(PostMode::BfLast, true, batch, batch, 1),
        ),
        (
            format!("completion every {k} (inline, BlueFlame)"),
            Posting::new(PostMode::Bf, true, k, 1, k),
        ),
    ]
}

/// Row 1 with traffic the research rows leave out: a completion event, a retransmission.
fn beyond_steps() -> [(&'static str, Posting); 2] {
    [
        (
            "row 1 + completion event (CQ armed)",
            Posting {
                arm: true,
                ..textbook()
            },
        ),
        (
            "row 1, request lost once, retransmitted",
            Posting {
                lose: 1,
                ..textbook()
            },
        ),
    ]
}

/// Row 1 with both CQs created with completion timestamps (`--hw-timestamps`).
fn timestamped() -> Posting {
    Posting {
        timestamps: true,
        ..textbook()
    }
}

/// Bursts of the CQE-compression rows.
pub const ZIP_BURSTS: [u32; 4] = [1, 8, 16, 64];

/// A CQE per WR in bursts of 1, 8, 16 and 64 (inline, rdma-core's doorbell rule), written
/// whole and compressed in each layout.
fn zip_steps() -> Vec<(String, Posting)> {
    let layouts = [
        ("whole CQEs", None),
        ("basic compression", Some(CqeCompression::BASIC)),
        ("enhanced compression", Some(CqeCompression::ENHANCED)),
    ];
    layouts
        .iter()
        .flat_map(|(name, zip)| {
            ZIP_BURSTS.map(|burst| {
                (
                    format!("burst of {burst}, CQE each, {name}"),
                    Posting {
                        zip: *zip,
                        ..Posting::new(PostMode::Bf, true, 1, burst, 1)
                    },
                )
            })
        })
        .collect()
}

/// Payload sizes of the MEMIC rows: above perftest's inline limit, up to UCX's default
/// device-memory slot (`DM_SIZE`, 2 KiB).
pub const MEMIC_SIZES: [usize; 4] = [256, 512, 1024, 2048];

/// The operation of the table.
fn explain_op(args: &PcieArgs) -> ExplainOp {
    match args.op {
        PcieOp::Write => ExplainOp::Write,
        PcieOp::Send => ExplainOp::Send,
    }
}

/// `--memic`: per size, a signaled BlueFlame WQE gathering its payload from host memory
/// by DMA, then the same payload copied into device memory and gathered there; the
/// responder's side is the same in both.
fn memic_rows(args: &PcieArgs, pcie: PcieConfig) -> Result<Vec<Row>, crate::Error> {
    let posting = Posting::new(PostMode::Bf, false, 1, 1, 1);
    let mut rows = Vec::new();
    for size in MEMIC_SIZES {
        for (how, dm) in [("DMA gather", false), ("from device memory (MEMIC)", true)] {
            let c = probe::Case {
                dm,
                ..case(explain_op(args), size, posting, pcie, args.qps)
            };
            let o = probe::observe(&c)?;
            rows.push(Row {
                side: "requester",
                step: format!("{size} B, BlueFlame, {how}"),
                messages: c.messages(),
                cost: o.requester,
                wire: None,
            });
        }
    }
    Ok(rows)
}

fn measure(args: &PcieArgs, pcie: PcieConfig) -> Result<Vec<Row>, crate::Error> {
    if args.memic {
        return memic_rows(args, pcie);
    }
    let op = explain_op(args);
    let mut rows = Vec::new();
    let beyond = beyond_steps().map(|(step, p)| (step.to_string(), p));
    let zip = if args.cqe_compression {
        zip_steps()
    } else {
        Vec::new()
    };
    let stamped = args
        .hw_timestamps
        .then(|| ("row 1, CQs with timestamps".to_string(), timestamped()));
    for (step, p) in requester_steps(args.batch, args.signal_every)
        .into_iter()
        .chain(beyond)
        .chain(zip)
        .chain(stamped)
    {
        if p.inline && args.size > PERFTEST_INLINE {
            continue;
        }
        let c = case(op, args.size, p, pcie, args.qps);
        let o = probe::observe(&c)?;
        rows.push(Row {
            side: "requester",
            step,
            messages: c.messages(),
            cost: o.requester,
            wire: None,
        });
    }
    let stamped = args.hw_timestamps.then_some((
        "inbound SEND, CQs with timestamps",
        ExplainOp::Send,
        args.size,
        timestamped(),
    ));
    for (step, op, size, posting) in [
        (
            "inbound SEND (receive WQE fetched)",
            ExplainOp::Send,
            args.size,
            textbook(),
        ),
        ("inbound WRITE", ExplainOp::Write, args.size, textbook()),
        ("inbound READ", ExplainOp::Read, args.size, textbook()),
        (
            "inbound atomic (fetch-and-add)",
            ExplainOp::Faa,
            8,
            textbook(),
        ),
    ]
    .into_iter()
    .chain(stamped)
    {
        let c = case(op, size, posting, pcie, args.qps);
        let o = probe::observe(&c)?;
        rows.push(Row {
            side: "responder",
            step: step.into(),
            messages: c.messages(),
            cost: o.responder,
            wire: None,
        });
    }
    rows.extend(transport_rows(args, pcie)?);
    rows.extend(scatter_rows(args, pcie)?);
    rows.extend(memory_rows(args, pcie)?);
    Ok(rows)
}

/// Posts `c` and returns its requester and its responder row (with the requester NIC's wire
/// counts when `wire`).
fn both_sides(step: &str, c: &Case, wire: bool) -> Result<[Row; 2], crate::Error> {
    let o = probe::observe(c)?;
    Ok(
        [("requester", o.requester), ("responder", o.responder)].map(|(side, cost)| Row {
            side,
            step: step.to_string(),
            messages: c.messages(),
            cost,
            wire: wire.then_some(o.wire),
        }),
    )
}

/// The inbound SEND of the responder rows on a 128-byte CQE, and with scatter to CQE on
/// 64- and 128-byte CQEs (docs/pcie.md, "Scatter to CQE rows"): a message of up to 32 / 64
/// bytes comes up inside its CQE, without the payload's write. With `--scatter-to-cqe`.
fn scatter_rows(args: &PcieArgs, pcie: PcieConfig) -> Result<Vec<Row>, crate::Error> {
    if !args.scatter_to_cqe {
        return Ok(Vec::new());
    }
    let mut rows = Vec::new();
    for (step, scatter_to_cqe, recv_cqe) in [
        ("inbound SEND, 128-byte CQEs", false, 128),
        ("inbound SEND, scatter to CQE, 64-byte CQEs", true, 64),
        ("inbound SEND, scatter to CQE, 128-byte CQEs", true, 128),
    ] {
        let c = Case {
            recv_cqe,
            scatter_to_cqe,
            ..case(ExplainOp::Send, args.size, textbook(), pcie, args.qps)
        };
        let [_, responder] = both_sides(step, &c, false)?;
        rows.push(responder);
    }
    Ok(rows)
}

/// Messages of each transport row.
const TRANSPORT_MESSAGES: u32 = 8;

/// The transports beside RC (docs/pcie.md, "Transport rows"): row 3's posting (BlueFlame, a
/// CQE per message, inline up to the inline limit) of `TRANSPORT_MESSAGES` messages on one
/// QP: WRITEs or SENDs on UC, SENDs on UD (the 48-byte AV, with a GRH in it, the 16-byte
/// compact AV), on a DC initiator to one DC target, to two in turn, and to one through a
/// compact AV, on an XRC initiator, and a WRITE gathered from two entries on RC and on XRC
/// (64 and 80 bytes). Each with both sides' cost and what the requester's NIC put on the
/// wire.
/// With `--transports`, not with `--qps` > 1.
fn transport_rows(args: &PcieArgs, pcie: PcieConfig) -> Result<Vec<Row>, crate::Error> {
    if !args.transports || args.qps > 1 {
        return Ok(Vec::new());
    }
    let op = match args.op {
        PcieOp::Write => ExplainOp::Write,
        PcieOp::Send => ExplainOp::Send,
    };
    let posting = Posting::new(
        PostMode::Bf,
        args.size <= PERFTEST_INLINE,
        1,
        1,
        TRANSPORT_MESSAGES,
    );
    let name = op_name(args.op);
    let on = |transport, op| Case {
        transport,
        ..case(op, args.size, posting, pcie, 1)
    };
    let ud = on(Transport::Ud, ExplainOp::Send);
    let dc = on(Transport::Dci, op);
    let mut cases = vec![(format!("UC {name}, row 3"), on(Transport::Uc, op))];
    if args.size <= UD_MTU {
        cases.extend([
            ("UD SEND, 48-byte AV, row 3".to_string(), ud),
            (
                "UD SEND, AV with GRH, row 3".into(),
                Case { grh: true, ..ud },
            ),
            (
                "UD SEND, 16-byte compact AV, row 3".into(),
                Case {
                    compact_av: true,
                    ..ud
                },
            ),
        ]);
    }
    cases.extend([
        (format!("DC {name}, one DCT, row 3"), dc),
        (
            format!("DC {name}, two DCTs in turn, row 3"),
            Case {
                dc_targets: 2,
                ..dc
            },
        ),
        (
            format!("DC {name}, compact AV, one DCT, row 3"),
            Case {
                compact_av: true,
                ..dc
            },
        ),
        (format!("XRC {name}, row 3"), on(Transport::XrcIni, op)),
    ]);
    // The XRC segment's 16 bytes where they cost a WQEBB: a WRITE gathered from two
    // entries is 64 bytes on RC, 80 on XRC (two BlueFlame chunks, or two WQEBBs fetched).
    if args.size >= 2 {
        let two = |transport| Case {
            inline: false,
            sge: 2,
            ..on(transport, ExplainOp::Write)
        };
        cases.extend([
            (
                "RC RDMA WRITE, 2 gather entries, row 3".to_string(),
                two(Transport::Rc),
            ),
            (
                "XRC RDMA WRITE, 2 gather entries, row 3".into(),
                two(Transport::XrcIni),
            ),
        ]);
    }
    let mut rows = Vec::new();
    for (step, c) in cases {
        rows.extend(both_sides(&step, &c, true)?);
    }
    Ok(rows)
}

/// The largest UD message of the transport rows: the model's path MTU.
const UD_MTU: usize = 4096;

/// Where the buffers live (docs/memory.md): WRITEs streaming through a buffer of many pages
/// with a translation cache, on 4 KiB and on 2 MiB pages, and the first touch of buffers
/// registered on demand; one QP, cold, without the context cache.
fn memory_rows(args: &PcieArgs, pcie: PcieConfig) -> Result<Vec<Row>, crate::Error> {
    const SIZE: usize = 64 << 10;
    const MESSAGES: u32 = 64;
    // No context cache here: its warming pass would warm the translations too.
    let pcie = PcieConfig {
        context_cache: None,
        ..pcie
    };
    let xlat = PcieConfig {
        translation_cache: Some(TranslationCache::new(args.xlat_cache)),
        ..pcie
    };
    let mut cases = Vec::new();
    // The 2 MiB row: buffers 2 MiB aligned (THP advised), registered with the model as 2 MiB
    // pages whether or not the host granted huge pages, so the row is the same on every
    // host.
    for (pages, mr_page_size, label) in [
        (Pages::Base, 0, "4 KiB pages"),
        (Pages::Transparent, mlx5_direct::HUGE_PAGE, "2 MiB pages"),
    ] {
        let streaming = Posting::new(PostMode::Db, false, 1, 1, MESSAGES);
        cases.push((
            format!("64K WRITEs over 4 MiB, {label}, xlat cache"),
            probe::Case {
                walk: true,
                pages,
                mr_page_size,
                ..case(ExplainOp::Write, SIZE, streaming, xlat, 1)
            },
        ));
    }
    // Rings: small inline WRITEs, one per 8-byte doorbell (the NIC fetches each WQE),
    // signaled, walking the send ring and the CQ; a translation per ring page touched.
    let rings = PcieConfig {
        translation_cache: Some(TranslationCache::new(args.xlat_cache).with_rings()),
        ..pcie
    };
    for (huge_rings, label) in [(false, "4 KiB pages"), (true, "2 MiB pages")] {
        cases.push((
            format!("inline WRITEs, rings on {label}, xlat cache"),
            probe::Case {
                huge_rings,
                ..case(
                    ExplainOp::Write,
                    8,
                    Posting::new(PostMode::Db, true, 1, 1, MESSAGES * 2),
                    rings,
                    1,
                )
            },
        ));
    }
    cases.push((
        "row 1, first touch of on-demand (ODP) buffers".into(),
        probe::Case {
            odp: true,
            ..case(ExplainOp::Write, args.size, textbook(), pcie, 1)
        },
    ));
    let mut rows = Vec::new();
    for (step, c) in cases {
        rows.extend(both_sides(&step, &c, false)?);
    }
    Ok(rows)
}

/// Messages per second the link allows for `down` / `up` bytes per message at `bw` bytes/s.
pub fn max_rate(bw: f64, down: f64, up: f64) -> f64 {
    let limit = |bytes: f64| {
        if bytes > 0.0 {
            bw / bytes
        } else {
            f64::INFINITY
        }
    };
    limit(down).min(limit(up))
}

fn rates(c: &PcieCounters, n: u32) -> Vec<(&'static str, f64)> {
    let (down, up) = (
        c.bytes_down as f64 / f64::from(n),
        c.bytes_up as f64 / f64::from(n),
    );
    GENERATIONS
        .iter()
        .map(|(g, bw)| (*g, max_rate(*bw, down, up) / 1e6))
        .collect()
}

fn op_name(op: PcieOp) -> &'static str {
    match op {
        PcieOp::Write => "RDMA WRITE",
        PcieOp::Send => "SEND",
    }
}

fn header(args: &PcieArgs, pcie: &PcieConfig) -> Vec<String> {
    let sizes = if args.memic {
        MEMIC_SIZES.map(|s| s.to_string()).join(", ")
    } else {
        args.size.to_string()
    };
    let mut lines = vec![
        format!(
            "# PCIe cost per message, measured on the mlx5-hw model: {} of {sizes} bytes",
            op_name(args.op)
        ),
        format!("# {}", probe::describe_link(pcie)),
        format!("# optional NIC traffic: {}", probe::describe_options(pcie)),
        "# max rate: x16 link, 8/16/32 GT/s x 16 lanes x 128/130 per direction (15.75/31.51/63.02 GB/s), DLLPs and flow control not subtracted: upper bounds".into(),
    ];
    if args.qps > 1 {
        lines.push(format!(
            "# each row posted round robin over {} QP pairs (one doorbell's WRs per QP in turn)",
            args.qps
        ));
    }
    if args.memic {
        lines.push(
            "# device memory: the payload copied in 64-byte lines (a partial last line in 8-byte writes) before the WQE".into(),
        );
    } else if args.size > PERFTEST_INLINE {
        lines.push(format!(
            "# inline rows left out: {} bytes is over the {PERFTEST_INLINE}-byte inline limit",
            args.size
        ));
    }
    if args.transports && args.qps > 1 {
        lines.push("# transport rows (UC, UD, DC, XRC) left out: they post on one QP".into());
    }
    lines
}

/// Runs `pcie`.
pub fn run(args: &PcieArgs) -> Result<(), crate::Error> {
    let pcie = link(args);
    if args.raw {
        crate::raw_pcie::print(&crate::raw_pcie::rows(pcie)?);
        return Ok(());
    }
    if args.mcast {
        let rows = crate::mcast_pcie::rows(pcie)?;
        match args.json {
            true => outln!("{}", crate::mcast_pcie::json_rows(&rows)),
            false => crate::mcast_pcie::print(&rows),
        }
        return Ok(());
    }
    let rows = measure(args, pcie)?;
    if args.json {
        let out: Vec<Value> = rows
            .iter()
            .map(|r| {
                let rates: serde_json::Map<_, _> = rates(&r.cost, r.messages)
                    .into_iter()
                    .map(|(g, x)| (g.to_string(), json!(x)))
                    .collect();
                json!({
                    "side": r.side,
                    "step": r.step,
                    "messages": r.messages,
                    "per_message": per_message(&r.cost, r.messages),
                    "max_mmsg_per_s": rates,
                    "wire": r.wire.map(|w| json!({
                        "packets": w.packets,
                        "dc_connects": w.dc_connects,
                        "dc_disconnects": w.dc_disconnects,
                    })),
                })
            })
            .collect();
        let doc = json!({
            "op": args.op,
            "size": args.size,
            "link": {
                "mps": pcie.mps, "mrrs": pcie.mrrs, "rcb": pcie.rcb,
                "mwr_overhead": pcie.mwr_overhead, "mrd_overhead": pcie.mrd_overhead,
                "cpld_overhead": pcie.cpld_overhead,
                "completions": format!("{:?}", pcie.completions).to_lowercase(),
                "optional": probe::describe_options(&pcie),
            },
            "qps": args.qps,
            "link_bytes_per_s": GENERATIONS.iter().map(|(g, bw)| (g.to_string(), json!(bw)))
                .collect::<serde_json::Map<_, _>>(),
            "rows": out,
        });
        outln!("{}", serde_json::to_string_pretty(&doc)?);
    } else {
        for line in header(args, &pcie) {
            outln!("{line}");
        }
        outln!(
            "{:<10} {:<50} {:>7} {:>7} {:>7} {:>7} {:>8} {:>8} {:>7} {:>7} {:>7}",
            "side",
            "step",
            "MMIO",
            "MRd",
            "CplD",
            "MWr",
            "down[B]",
            "up[B]",
            "Gen3",
            "Gen4",
            "Gen5"
        );
        outln!(
            "{:<10} {:<50} {:>7} {:>7} {:>7} {:>7} {:>8} {:>8} {:>23}",
            "",
            "",
            "",
            "",
            "",
            "",
            "",
            "",
            "max [Mmsg/s]"
        );
        for r in &rows {
            let n = f64::from(r.messages);
            let f = |x: u64| x as f64 / n;
            let g = rates(&r.cost, r.messages);
            outln!(
                "{:<10} {:<50} {:>7.3} {:>7.3} {:>7.3} {:>7.3} {:>8.1} {:>8.1} {:>7.2} {:>7.2} {:>7.2}",
                r.side,
                r.step,
                f(r.cost.mmio_writes),
                f(r.cost.dma_reads),
                f(r.cost.completions),
                f(r.cost.dma_writes),
                f(r.cost.bytes_down),
                f(r.cost.bytes_up),
                g[0].1,
                g[1].1,
                g[2].1
            );
        }
        let wire: Vec<&Row> = rows
            .iter()
            .filter(|r| r.wire.is_some() && r.side == "requester")
            .collect();
        if !wire.is_empty() {
            outln!("# on the wire, per message (the requester NIC's counts):");
        }
        for r in wire {
            let w = r.wire.unwrap_or_default();
            let n = f64::from(r.messages);
            outln!(
                "#   {:<50} {:.3} request packets, {:.3} DC connects, {:.3} DC disconnects",
                r.step,
                w.packets as f64 / n,
                w.dc_connects as f64 / n,
                w.dc_disconnects as f64 / n
            );
        }
    }
    if let Some(path) = &args.plot {
        plot_sizes(args, pcie, path)?;
    }
    Ok(())
}

/// Link bytes (both directions) per message against message size, one line per mode.
fn plot_sizes(
    args: &PcieArgs,
    pcie: PcieConfig,
    path: &std::path::Path,
) -> Result<(), crate::Error> {
    let op = match args.op {
        PcieOp::Write => ExplainOp::Write,
        PcieOp::Send => ExplainOp::Send,
    };
    let mut series = Vec::new();
    for (step, p) in requester_steps(args.batch, args.signal_every) {
        let mut points = Vec::new();
        for size in (8..=1024).step_by(8) {
            if p.inline && size > PERFTEST_INLINE {
                break;
            }
            let c = case(op, size, p, pcie, args.qps);
            let o = probe::observe(&c)?;
            let bytes = (o.requester.bytes_down + o.requester.bytes_up) as f64;
            points.push((size as f64, bytes / f64::from(c.messages())));
        }
        series.push((step, points));
    }
    crate::plot::lines(
        path,
        &format!(
            "{}: requester link bytes per message, down + up (mlx5-hw model; inline up to {PERFTEST_INLINE} B)",
            op_name(args.op)
        ),
        "message size [bytes]",
        "link bytes per message (down + up)",
        &series,
    )
}
