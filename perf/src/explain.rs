//! `mlx5-perf explain`: post one operation (or a batch) with the driver on the model and show
//! each WQE per 16-byte DS, the doorbell record, the MMIO stores and every TLP on both links.

use mlx5_direct::backend::sim::{Dir, PcieCounters, Tlp, TlpKind};
use mlx5_direct::prm::{
    basic_array_slot, enhanced_count, Cqe64, CqeCompLayout, CqeFormat, CqeOpcode, MiniCqe, OpOwn,
    DS, MINI_CQES_PER_ARRAY,
};
use mlx5_direct::{ClockInfo, Transport};
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

/// The segment each DS of a WQE of `op` holds (UD and DC: the datagram segment after the
/// control segment, one DS when the AV is `compact`).
fn segment_names(
    op: ExplainOp,
    inline: bool,
    ds: usize,
    transport: Transport,
    compact: bool,
) -> Vec<&'static str> {
    let mut names = vec!["ctrl"];
    match (transport, compact) {
        (Transport::Ud | Transport::Dci, false) => {
            names.extend(["datagram 1/3", "datagram 2/3", "datagram 3/3"])
        }
        (Transport::Ud | Transport::Dci, true) => names.push("compact AV"),
        (Transport::XrcIni, _) => names.push("xrc"),
        _ => {}
    }
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

/// The datagram segment of a UD or DC WQE (`struct mlx5_wqe_av` of mlx5dv.h, 48 bytes after
/// the control segment), field by field: the Q_Key (UD: the upper BE32 of `key`) or the DC
/// access key (BE64), `dqp_dct` (bit 31 the extended-AV flag, bits 23..0 the remote QPN or
/// DCT number), `stat_rate_sl`, `fl_mlid`, `rlid`, `rmac`, `tclass`, `hop_limit`,
/// `grh_gid_fl` (bit 30 GRH, 27..20 SGID index, 19..0 flow label) and `rgid`. A compact AV
/// (`ext` 0) ends after `rlid`: the 16 bytes of UCX's `mlx5_base_av`. On RoCE (`roce`)
/// `mlx5_create_ah` writes the SL in bits 3..1 of `stat_rate_sl` and the UDP source port of
/// RoCE v2 in `rlid` (prm-facts-next §1.1): those two are decoded so.
fn decode_av(av: &[u8], dc: bool, roce: bool) -> Vec<(&'static str, String)> {
    let be32 = |at: usize| u32::from_be_bytes(av[at..at + 4].try_into().expect("4 bytes"));
    let key = match dc {
        true => (
            "dc_key",
            format!(
                "{:#018x}",
                u64::from_be_bytes(av[0..8].try_into().expect("8 bytes"))
            ),
        ),
        false => ("qkey", format!("{:#010x}", be32(0))),
    };
    let dqp = be32(8);
    let mut fields = vec![
        key,
        ("dqp_dct", format!("{dqp:#010x}")),
        ("ext", format!("{}", dqp >> 31)),
        (
            if dc { "dctn" } else { "remote_qpn" },
            format!("{:#08x}", dqp & 0xff_ffff),
        ),
        ("stat_rate", format!("{}", av[12] >> 4)),
        match roce {
            true => ("sl", format!("{}", av[12] >> 1 & 7)),
            false => ("sl", format!("{}", av[12] & 0xf)),
        },
        ("fl", format!("{}", av[13] >> 7)),
        ("mlid", format!("{}", av[13] & 0x7f)),
        (
            if roce { "udp_sport" } else { "rlid" },
            format!("{:#06x}", u16::from_be_bytes([av[14], av[15]])),
        ),
    ];
    if dqp >> 31 == 0 || av.len() < 48 {
        return fields;
    }
    let gfl = be32(28);
    fields.extend([
        ("rmac", hex(&av[20..26])),
        ("tclass", format!("{}", av[26])),
        ("hop_limit", format!("{}", av[27])),
        ("grh", format!("{}", gfl >> 30 & 1)),
        ("sgid_index", format!("{}", gfl >> 20 & 0xff)),
        ("flow_label", format!("{:#x}", gfl & 0xf_ffff)),
        ("rgid", hex(&av[32..48])),
    ]);
    fields
}

/// The datagram segment of the first WQE, decoded, when the transport has one.
fn datagram(o: &Observed, transport: Transport) -> Option<Vec<(&'static str, String)>> {
    let dc = match transport {
        Transport::Ud => false,
        Transport::Dci => true,
        _ => return None,
    };
    let w = o.wqes.first()?;
    let ext = w.bytes.get(DS + 8)? >> 7;
    let len = if ext == 1 { 48 } else { 16 };
    Some(decode_av(w.bytes.get(DS..DS + len)?, dc, o.roce))
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

/// The send opcode names a requester mini-CQE may carry.
fn send_opcode_name(op: u8) -> &'static str {
    match op {
        0x00 => "NOP",
        0x01 => "SEND_INVAL",
        0x08 => "RDMA_WRITE",
        0x09 => "RDMA_WRITE_IMM",
        0x0a => "SEND",
        0x0b => "SEND_IMM",
        0x10 => "RDMA_READ",
        0x11 => "ATOMIC_CS",
        0x12 => "ATOMIC_FA",
        0x14 => "ATOMIC_MASKED_CS",
        0x16 => "ATOMIC_MASKED_FA",
        _ => "?",
    }
}

/// The mini-CQEs of a 64-byte slot, decoded (`requester`: `wqe_counter`, send opcode and
/// byte count; responder: bytes 0..4 and the byte count).
fn decode_minis(slot: &[u8; 64], count: usize, requester: bool) -> Vec<String> {
    slot.chunks(8)
        .take(count)
        .enumerate()
        .map(|(i, m)| {
            let m = MiniCqe::from_bytes(m.try_into().expect("8 bytes"));
            if requester {
                format!(
                    "mini {i}: wqe_counter {}, opcode {:#04x} {}, byte_cnt {:#x}",
                    m.wqe_counter(),
                    m.s_wqe_opcode(),
                    send_opcode_name(m.s_wqe_opcode()),
                    m.byte_cnt.get()
                )
            } else {
                format!(
                    "mini {i}: hash/checksum {:#010x}, byte_cnt {}",
                    m.rx_hash_result(),
                    m.byte_cnt.get()
                )
            }
        })
        .collect()
}

/// Each CQ entry of the pass with what it is: a whole CQE, a basic title, a mini-CQE array
/// or an enhanced slot (mini-CQEs decoded), or a slot a block takes without writing it.
/// A whole CQE's fields, one line.
fn cqe_line(cqe: &Cqe64) -> String {
    format!(
        "CQE: opcode {}, qpn {:#x}, wqe_counter {}, byte_cnt {:#x}, signature {}, op_own {:#04x}",
        OpOwn::from_bits(cqe.op_own).opcode(),
        cqe.sop_drop_qpn.get() & 0xff_ffff,
        cqe.wqe_counter.get(),
        cqe.byte_cnt.get(),
        cqe.signature,
        cqe.op_own
    )
}

/// A polled CQE of a CQ with timestamps: its timestamp (bytes 48..56), the nanoseconds
/// `clock` converts it to (`mlx5dv_ts_to_ns`), and the line that shows both.
fn stamped_cqe(bytes: &[u8], clock: &ClockInfo) -> (u64, u64, String) {
    let entry: &[u8; 64] = bytes[..64].try_into().expect("a 64-byte CQE");
    let cqe = Cqe64::from_bytes(entry);
    let ts = cqe.timestamp.get();
    let ns = clock.to_ns(ts);
    let text = format!(
        "{}, timestamp {ts:#x} (bytes 48..56) = {ns} ns",
        cqe_line(&cqe)
    );
    (ts, ns, text)
}

fn describe_entries(layout: CqeCompLayout, first: u32, entries: &[[u8; 64]]) -> Vec<(u32, String)> {
    let mut out: Vec<(u32, String)> = Vec::new();
    let mut i = 0;
    let mut requester = true;
    while i < entries.len() {
        let e = &entries[i];
        let cqe = Cqe64::from_bytes(e);
        let bits = OpOwn::from_bits(cqe.op_own);
        let index = first.wrapping_add(i as u32);
        let (taken, mut lines) = match (bits.format(), layout) {
            (CqeFormat::Compressed, CqeCompLayout::Basic) => {
                requester = bits.opcode() == CqeOpcode::Req as u8;
                let n = cqe.byte_cnt.get() as usize;
                let mut lines = vec![format!(
                    "title of a basic block of {n} completions: opcode {}, qpn {:#x}, op_own {:#04x}",
                    bits.opcode(),
                    cqe.sop_drop_qpn.get() & 0xff_ffff,
                    cqe.op_own
                )];
                for k in 1..n.max(1) {
                    let array = (0..=k as u32).position(|j| basic_array_slot(j) as usize == k);
                    let text = match array {
                        Some(j) => {
                            let slot = entries.get(i + k).copied().unwrap_or([0; 64]);
                            let count = (n - 8 * j).min(MINI_CQES_PER_ARRAY);
                            let mut t = vec![format!("mini-CQE array {j}:")];
                            t.extend(
                                decode_minis(&slot, count, requester)
                                    .iter()
                                    .map(|m| format!("  {m}")),
                            );
                            t.join("\n")
                        }
                        None => "(taken by the block, not written)".to_string(),
                    };
                    lines.push(text);
                }
                (n.max(1), lines)
            }
            (CqeFormat::Compressed, CqeCompLayout::Enhanced) => {
                let k = enhanced_count(cqe.op_own) as usize;
                let mut t = vec![format!(
                    "compressed slot of {k} mini-CQEs, validity count {}, op_own {:#04x}:",
                    cqe.signature, cqe.op_own
                )];
                t.extend(
                    decode_minis(e, k, requester)
                        .iter()
                        .map(|m| format!("  {m}")),
                );
                let mut lines = vec![t.join("\n")];
                lines.extend((1..k).map(|_| "(taken by the slot above, not written)".to_string()));
                (k, lines)
            }
            _ => {
                requester = bits.opcode() == CqeOpcode::Req as u8;
                (1, vec![cqe_line(&cqe)])
            }
        };
        lines.truncate(entries.len() - i);
        out.extend(
            lines
                .drain(..)
                .enumerate()
                .map(|(k, l)| (index.wrapping_add(k as u32), l)),
        );
        i += taken;
    }
    out
}

fn to_json(o: &Observed, messages: u32, zip: Option<CqeCompLayout>, transport: Transport) -> Value {
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
        "cqes": o.cqes.iter().map(|(i, b)| {
            let mut v = json!({"index": i, "hex": hex(b)});
            if let Some(clock) = &o.clock {
                let (ts, ns, text) = stamped_cqe(b, clock);
                v["timestamp"] = ts.into();
                v["ns"] = ns.into();
                v["text"] = text.into();
            }
            v
        }).collect::<Vec<_>>(),
        "per_message": per_message(&o.requester, messages),
        "per_message_responder": per_message(&o.responder, messages),
        "transport": transport_name(transport),
        "datagram": datagram(o, transport).map(|fields| fields
            .into_iter()
            .map(|(k, v)| (k.to_string(), json!(v)))
            .collect::<serde_json::Map<_, _>>()),
        "wire": {
            "packets": o.wire.packets,
            "dc_connects": o.wire.dc_connects,
            "dc_disconnects": o.wire.dc_disconnects,
        },
        "compressed_cq": zip.map(|layout| {
            let (first, entries) = &o.cq_entries;
            describe_entries(layout, *first, entries)
                .into_iter()
                .zip(entries)
                .map(|((index, text), e)| json!({"index": index, "hex": hex(e), "text": text}))
                .collect::<Vec<_>>()
        }),
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

/// perftest's name of a transport.
fn transport_name(t: Transport) -> &'static str {
    match t {
        Transport::Rc => "RC",
        Transport::Uc => "UC",
        Transport::Ud => "UD",
        Transport::Dci | Transport::Dct => "DC",
        Transport::XrcIni | Transport::XrcTgt => "XRC",
        Transport::Raw => "raw Ethernet",
    }
}

fn print_human(args: &ExplainArgs, o: &Observed, messages: u32, transport: Transport) {
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
        "# {op} of {} bytes over {}, {data}, {} WR per doorbell ({ring}), {cqe}; posted by the driver on the mlx5-hw model",
        args.size, transport_name(transport), args.batch
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
            .zip(segment_names(
                args.op,
                args.inline,
                ds,
                transport,
                args.compact_av,
            ))
            .enumerate()
        {
            let words: Vec<String> = chunk.chunks(4).map(hex).collect();
            outln!("  DS {k:>2}  {name:<15} {}", words.join(" "));
        }
    }
    if let Some(fields) = datagram(o, transport) {
        let what = match fields.iter().any(|(k, v)| *k == "ext" && v == "0") {
            true => "the compact AV: the first 16 bytes of struct mlx5_wqe_av, ext 0",
            false => "struct mlx5_wqe_av",
        };
        outln!("datagram segment of WQE 0 ({what}):");
        for (name, value) in fields {
            outln!("  {name:<11} {value}");
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
    if let Some(zip) = args.cqe_compression {
        let (first, entries) = &o.cq_entries;
        outln!(
            "requester CQ entries as the NIC wrote them ({:?} CQE compression, before polling):",
            zip
        );
        for (index, text) in describe_entries(zip.compression().layout, *first, entries) {
            outln!("  CQ {index:>3}  {}", text.replace('\n', "\n            "));
        }
    }
    if let Some(clock) = &o.clock {
        outln!(
            "requester CQEs as polled (CQs with timestamps; the model's clock steps one tick per \
             CQE; ns by the clock-info page, mult {} shift {}):",
            clock.mult,
            clock.shift
        );
        for (index, bytes) in &o.cqes {
            outln!("  CQ {index:>3}  {}", stamped_cqe(bytes, clock).2);
        }
    }
    print_tlps("requester", &o.requester_tlps);
    print_tlps("responder", &o.responder_tlps);
    print_totals("requester", &o.requester, messages);
    print_totals("responder", &o.responder, messages);
    outln!(
        "on the wire, requester: {} request packets, {} DC connects, {} DC disconnects",
        o.wire.packets,
        o.wire.dc_connects,
        o.wire.dc_disconnects
    );
}

/// Runs `explain`.
pub fn run(args: &ExplainArgs) -> Result<(), crate::Error> {
    if args.mcast > 0 {
        return crate::mcast_pcie::explain(args);
    }
    if args.transport == crate::cli::TransportArg::Raw {
        return crate::raw_pcie::explain(args);
    }
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
        huge_rings: false,
        zip: args.cqe_compression.map(|z| z.compression()),
        transport: args.transport.transport(),
        grh: args.grh,
        roce: args.force_link == Some(crate::cli::Link::Ethernet),
        dc_targets: 1,
        compact_av: args.compact_av,
        recv_cqe: args.scatter_to_cqe.unwrap_or(64),
        scatter_to_cqe: args.scatter_to_cqe.is_some(),
        dm: false,
        timestamps: args.hw_timestamps,
    };
    let o = probe::observe(&case)?;
    if args.json {
        outln!(
            "{}",
            serde_json::to_string_pretty(&to_json(
                &o,
                case.messages(),
                case.zip.map(|z| z.layout),
                case.transport
            ))?
        );
    } else {
        print_human(args, &o, case.messages(), case.transport);
    }
    Ok(())
}
