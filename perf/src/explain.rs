//! `mlx5-perf explain`: post one operation (or a batch) with the driver on the model and show
//! each WQE per 16-byte DS, the doorbell record, the MMIO stores and every TLP on both links.

use mlx5_direct::backend::sim::{Dir, PcieCounters, Tlp, TlpKind};
use mlx5_direct::prm::DS;
use serde_json::{json, Value};

use crate::cli::{ExplainArgs, ExplainOp, PostMode};
use crate::probe::{self, Case, Observed};

/// A count per message: an integer when it divides evenly, else a float.
pub fn per(total: u64, messages: u32) -> Value {
    if total % u64::from(messages) == 0 {
        json!(total / u64::from(messages))
    } else {
        json!(total as f64 / f64::from(messages))
    }
}

/// The per-message totals of one side, in the JSON shape.
pub fn per_message(c: &PcieCounters, messages: u32) -> Value {
    json!({
        "mmio_writes": per(c.mmio_writes, messages),
        "dma_reads": per(c.dma_reads, messages),
        "dma_writes": per(c.dma_writes, messages),
        "completions": per(c.completions, messages),
        "bytes_down": per(c.bytes_down, messages),
        "bytes_up": per(c.bytes_up, messages),
    })
}

/// `down` / `up`.
pub fn dir_name(d: Dir) -> &'static str {
    match d {
        Dir::Down => "down",
        Dir::Up => "up",
    }
}

/// `MWr` / `MRd` / `CplD`.
pub fn kind_name(k: TlpKind) -> &'static str {
    match k {
        TlpKind::MWr => "MWr",
        TlpKind::MRd => "MRd",
        TlpKind::CplD => "CplD",
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The segment each DS of a WQE of `op` holds.
fn segment_names(op: ExplainOp, inline: bool, ds: usize) -> Vec<&'static str> {
    let mut names = vec!["ctrl"];
    if !matches!(op, ExplainOp::Send | ExplainOp::SendImm) {
        names.push("raddr");
    }
    if matches!(op, ExplainOp::Cas | ExplainOp::Faa) {
        names.push("atomic");
    }
    let fixed = names.len();
    names.extend((fixed..ds).map(|i| match (inline, i == fixed) {
        (true, true) => "inline",
        (true, false) => "inline (cont.)",
        (false, _) => "data",
    }));
    names
}

fn tlp_json(side: &str, t: &Tlp) -> Value {
    json!({
        "side": side,
        "dir": dir_name(t.dir),
        "kind": kind_name(t.kind),
        "payload": t.payload,
        "bytes": t.bytes,
        "purpose": format!("{:?}", t.purpose),
    })
}

fn to_json(o: &Observed, messages: u32) -> Value {
    let tlps: Vec<Value> = o
        .requester_tlps
        .iter()
        .map(|t| tlp_json("requester", t))
        .chain(o.responder_tlps.iter().map(|t| tlp_json("responder", t)))
        .collect();
    json!({
        "wqes": o.wqes.iter().enumerate().map(|(i, w)| json!({
            "index": i, "pi": w.pi, "ds": w.bytes.len() / DS, "hex": hex(&w.bytes),
        })).collect::<Vec<_>>(),
        "dbrec": o.dbrec,
        "mmio": o.mmio.iter().map(|m| json!({"offset": m.offset, "hex": hex(&m.bytes)}))
            .collect::<Vec<_>>(),
        "tlps": tlps,
        "messages": messages,
        "cqes": o.cqes.iter().map(|(i, b)| json!({"index": i, "hex": hex(b)}))
            .collect::<Vec<_>>(),
        "per_message": per_message(&o.requester, messages),
        "per_message_responder": per_message(&o.responder, messages),
    })
}

fn print_tlps(side: &str, tlps: &[Tlp]) {
    outln!("TLPs at the {side} ({}):", tlps.len());
    for t in tlps {
        outln!(
            "  {:<4} {:<4} payload {:>5}  bytes {:>5}  {:?}",
            dir_name(t.dir),
            kind_name(t.kind),
            t.payload,
            t.bytes,
            t.purpose
        );
    }
}

fn print_totals(side: &str, c: &PcieCounters, n: u32) {
    let f = |x: u64| x as f64 / f64::from(n);
    outln!(
        "per message, {side}: {} MMIO writes, {} DMA reads, {} CplD, {} DMA writes, {} bytes down, {} bytes up",
        f(c.mmio_writes),
        f(c.dma_reads),
        f(c.completions),
        f(c.dma_writes),
        f(c.bytes_down),
        f(c.bytes_up)
    );
}

fn print_human(args: &ExplainArgs, o: &Observed, messages: u32) {
    let (op, data) = match args.op {
        ExplainOp::Write => ("RDMA WRITE", "gathered from"),
        ExplainOp::WriteImm => ("RDMA WRITE with immediate", "gathered from"),
        ExplainOp::Send => ("SEND", "gathered from"),
        ExplainOp::SendImm => ("SEND with immediate", "gathered from"),
        ExplainOp::Read => ("RDMA READ", "scattered to"),
        ExplainOp::Cas => ("compare-and-swap", "result in"),
        ExplainOp::Faa => ("fetch-and-add", "result in"),
    };
    let data = if args.inline {
        "inline".to_string()
    } else {
        format!(
            "{data} {} local entr{}",
            args.sge,
            if args.sge == 1 { "y" } else { "ies" }
        )
    };
    let ring = match args.mode {
        PostMode::Bf => "BlueFlame-copied if alone",
        PostMode::BfLast => "the last BlueFlame-copied",
        PostMode::Db => "8-byte doorbell",
    };
    let cqe = match args.signal_every {
        0 => "no CQE".to_string(),
        k => format!("a CQE every {k} WR"),
    };
    outln!(
        "# {op} of {} bytes, {data}, {} WR per doorbell ({ring}), {cqe}; posted by the driver on the mlx5-hw model",
        args.size, args.batch
    );
    for (i, w) in o.wqes.iter().enumerate() {
        let ds = w.bytes.len() / DS;
        outln!(
            "WQE {i} at WQEBB {} ({ds} DS, {} bytes):",
            w.pi,
            w.bytes.len()
        );
        for (k, (chunk, name)) in w
            .bytes
            .chunks(DS)
            .zip(segment_names(args.op, args.inline, ds))
            .enumerate()
        {
            let words: Vec<String> = chunk.chunks(4).map(hex).collect();
            outln!("  DS {k:>2}  {name:<15} {}", words.join(" "));
        }
    }
    outln!("doorbell record (dbrec[1]): {}", o.dbrec);
    outln!("MMIO writes ({}):", o.mmio.len());
    for m in &o.mmio {
        outln!(
            "  UAR+{:#05x}  {:>2} bytes  {}",
            m.offset,
            m.bytes.len(),
            hex(&m.bytes)
        );
    }
    print_tlps("requester", &o.requester_tlps);
    print_tlps("responder", &o.responder_tlps);
    print_totals("requester", &o.requester, messages);
    print_totals("responder", &o.responder, messages);
}

/// Runs `explain`.
pub fn run(args: &ExplainArgs) -> Result<(), crate::Error> {
    let case = Case {
        op: args.op,
        size: args.size,
        inline: args.inline,
        sge: args.sge,
        signal_every: args.signal_every,
        mode: args.mode,
        batch: args.batch,
        rounds: 1,
        qps: 1,
        arm: false,
        lose: 0,
        pcie: probe::link(args.tlp_overhead, 256, 512, 128),
        pages: mlx5_direct::Pages::Base,
        mr_page_size: 0,
        walk: false,
        odp: false,
    };
    let o = probe::observe(&case)?;
    if args.json {
        outln!(
            "{}",
            serde_json::to_string_pretty(&to_json(&o, case.messages()))?
        );
    } else {
        print_human(args, &o, case.messages());
    }
    Ok(())
}
