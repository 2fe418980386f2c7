//! perftest's machine-readable outputs, key for key: the `--out_json` file (`test_info`
//! and `results`, as perftest 6.29's `write_test_info_to_file`, `write_bw_report_to_file`
//! and `write_report_lat_to_file` write them) and the one number of `--output`.

use crate::bench::{Params, RdmaCm, Setup, Stats};
use crate::cli::{AtomicType, Kind, Output, Verb};

/// perftest's name of an atomic operation (`atomicTypesStr`).
pub fn atomic_name(t: AtomicType) -> &'static str {
    match t {
        AtomicType::FetchAndAdd => "FETCH_AND_ADD",
        AtomicType::CmpAndSwap => "CMP_AND_SWAP",
    }
}

/// perftest's `testsStr` name of the operation, with the atomic type for atomics.
pub fn verb_name(params: &Params) -> String {
    match params.test.verb {
        Verb::Write => "RDMA_Write".into(),
        Verb::Send => "Send".into(),
        Verb::Read => "RDMA_Read".into(),
        Verb::Atomic => format!("Atomic {}", atomic_name(params.atomic_type)),
    }
}

/// perftest's title words after the operation (`Latency`, `Post List BW`, `BW`).
pub fn kind_name(params: &Params) -> &'static str {
    match params.test.kind {
        Kind::Lat => "Latency",
        Kind::Bw => match (params.duplex, params.post_list > 1) {
            (true, true) => "Bidirectional Post List BW",
            (true, false) => "Bidirectional BW",
            (false, true) => "Post List BW",
            (false, false) => "BW",
        },
    }
}

/// perftest's `ON` / `OFF`.
pub fn on_off(on: bool) -> &'static str {
    if on {
        "ON"
    } else {
        "OFF"
    }
}

/// perftest's `exchange_state`: `rdma_cm` with `-z` or `-R`, else `Ethernet`.
pub fn exchange_method(cm: RdmaCm) -> &'static str {
    match cm {
        RdmaCm::Off => "Ethernet",
        RdmaCm::Exchange | RdmaCm::Qps => "rdma_cm",
    }
}

/// perftest's `Data ex. method` header line, with `\tTOS    : N` after it when `-R` and
/// `-T` are given.
pub fn data_exchange_line(cm: RdmaCm, tos: Option<u8>) -> String {
    let mut line = format!(" Data ex. method : {}", exchange_method(cm));
    if let (RdmaCm::Qps, Some(tos)) = (cm, tos) {
        line.push_str(&format!(" \tTOS    : {tos}"));
    }
    line
}

/// perftest's `Link type`: InfiniBand ports have a LID, RoCE ports report LID 0.
pub fn link_type(setup: &Setup) -> &'static str {
    if setup.local.first().is_some_and(|r| r.lid == 0) {
        "Ethernet"
    } else {
        "IB"
    }
}

/// The `"test_info": {...},` block of perftest's JSON file, its keys in perftest's order
/// (the build-dependent ones as a build without ROCm or MUSA writes them).
pub fn test_info(params: &Params, setup: &Setup) -> String {
    let title = format!("{} {} Test", verb_name(params), kind_name(params)).replace(' ', "_");
    let mut lines = vec![
        format!("\"test\": \"{title}\""),
        "\"Dual_port\": \"OFF\"".into(),
        format!("\"Device\": \"{}\"", setup.device),
        format!("\"Number_of_qps\": {}", params.qps),
        "\"Transport_type\": \"IB\"".into(),
        "\"Connection_type\": \"RC\"".into(),
        format!("\"Using_SRQ\": \"{}\"", on_off(params.srq)),
        "\"PCIe_relax_order\": \"OFF\"".into(),
        "\"ibv_wr_API\": \"OFF\"".into(),
    ];
    if !setup.server || params.duplex {
        lines.push(format!("\"TX_depth\": {}", params.tx_depth));
    }
    if params.post_list > 1 {
        lines.push(format!("\"Post_List\": {}", params.post_list));
    }
    if params.recv_post_list > 1 {
        lines.push(format!("\"Recv_Post_List\": {}", params.recv_post_list));
    }
    if params.receives() && (setup.server || params.duplex) {
        lines.push(format!("\"RX_depth\": {}", params.rx_depth));
    }
    if params.test.kind == Kind::Bw {
        lines.push(format!("\"CQ_Moderation\": {}", params.cq_mod));
    }
    lines.push(format!("\"Mtu\": {}", setup.mtu));
    lines.push(format!("\"Link_type\": \"{}\"", link_type(setup)));
    if let Some(x) = setup.gid_index {
        lines.push(format!("\"GID_index\": {x}"));
    }
    if matches!(params.test.verb, Verb::Read | Verb::Atomic) {
        lines.push(format!("\"Outstand_reads\": {}", setup.out_reads));
    } else {
        lines.push(format!("\"Max_inline_data\": {}", params.inline_size));
    }
    lines.push(format!(
        "\"rdma_cm_QPs\": \"{}\"",
        on_off(params.rdma_cm == RdmaCm::Qps)
    ));
    lines.push("\"Use_ROCm_memory\": \"OFF\"".into());
    lines.push("\"Use_MUSA_memory\": \"OFF\"".into());
    lines.push(format!(
        "\"Data_ex_method\": \"{}\"",
        exchange_method(params.rdma_cm)
    ));
    if let (RdmaCm::Qps, Some(tos)) = (params.rdma_cm, setup.tos) {
        lines.push(format!("\"TOS\": {tos}"));
    }
    format!("\"test_info\": {{\n{}\n}},\n", lines.join(",\n"))
}

/// The `"results": {...}` block of perftest's JSON file for one row (perftest rewrites
/// the file for every row, so a sweep leaves the last size). An unmeasured peak is 0.00,
/// as perftest prints it.
pub fn results(stats: &Stats, output: Option<Output>, cpu_util: Option<f64>) -> String {
    let body =
        match (stats, output) {
            (Stats::Bw(b), Some(Output::Bandwidth)) => format!("\"bw_avg\": {:.6}", b.bw_average),
            (Stats::Bw(b), Some(Output::MessageRate)) => {
                format!("\"msgRate_avg\": {:.6}", b.msg_rate_mpps)
            }
            (Stats::Lat(l), Some(Output::Latency)) => format!("\"avg_lat\": {:.6}", l.t_avg),
            (Stats::Bw(b), _) => format!(
                "\"MsgSize\": {},\n\"n_iterations\": {},\n\"BW_peak\": {:.2},\n\"BW_average\": \
             {:.2},\n\"MsgRate\": {:.6}",
                b.bytes,
                b.iterations,
                b.bw_peak.unwrap_or(0.0),
                b.bw_average,
                b.msg_rate_mpps
            ),
            (Stats::Lat(l), _) => {
                format!(
            "\"MsgSize\": {},\n\"n_iterations\": {},\n\"t_min\": {:.2},\n\"t_max\": {:.2},\n\
             \"t_typical\": {:.2},\n\"t_avg\": {:.2},\n\"t_stdev\": {:.2},\n\
             \"percentile_99\": {:.2},\n\"percentile_99.9\": {:.2}",
            l.bytes, l.iterations, l.t_min, l.t_max, l.t_typical, l.t_avg, l.t_stdev, l.p99, l.p99_9
        )
            }
        };
    // perftest's REPORT_EXT_CPU_UTIL_JSON after the row's keys.
    let cpu = cpu_util.map_or_else(String::new, |u| format!(",\n\"CPU_util\": {u:.2}"));
    format!("\"results\": {{\n{body}{cpu}\n}}\n")
}

/// The one number `--output` prints for a row (C's `%lf`).
pub fn number(stats: &Stats, output: Output) -> String {
    match (stats, output) {
        (Stats::Bw(b), Output::MessageRate) => format!("{:.6}", b.msg_rate_mpps),
        (Stats::Bw(b), _) => format!("{:.6}", b.bw_average),
        (Stats::Lat(l), _) => format!("{:.6}", l.t_avg),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_exchange_line_is_perftests() {
        assert_eq!(
            data_exchange_line(RdmaCm::Off, None),
            " Data ex. method : Ethernet"
        );
        assert_eq!(
            data_exchange_line(RdmaCm::Exchange, None),
            " Data ex. method : rdma_cm"
        );
        assert_eq!(
            data_exchange_line(RdmaCm::Qps, None),
            " Data ex. method : rdma_cm"
        );
        assert_eq!(
            data_exchange_line(RdmaCm::Qps, Some(96)),
            " Data ex. method : rdma_cm \tTOS    : 96"
        );
    }
}
