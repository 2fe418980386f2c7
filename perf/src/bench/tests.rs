//! The handshake's parameter comparison.

use super::*;
use crate::cli::{AtomicType, Test};

#[test]
fn every_compared_parameter_names_its_flag() {
    let params = Params {
        connection: super::Connection::Rc,
        test: Test {
            verb: Verb::Write,
            kind: Kind::Bw,
        },
        atomic_type: AtomicType::FetchAndAdd,
        sizes: vec![2],
        iters: 1,
        duration_ms: None,
        margin_ms: 0,
        inline_size: 0,
        tx_depth: 1,
        rx_depth: 1,
        post_list: 1,
        cq_mod: 1,
        qps: 1,
        out_reads: 0,
        duplex: false,
        warm_up: false,
        imm: false,
        periods: None,
        rate_limit: None,
        validate: false,
        reversed: false,
        srq: false,
        recv_post_list: 1,
        rdma_cm: RdmaCm::Off,
        use_dm: false,
        dci_streams: None,
        pacing_kbps: None,
        mcast: None,
    };
    let serde_json::Value::Object(fields) = serde_json::to_value(&params).unwrap() else {
        panic!("params are an object");
    };
    for (k, v) in fields {
        let names: Vec<String> = match v {
            serde_json::Value::Object(inner) => inner.keys().map(|i| format!("{k}.{i}")).collect(),
            _ => vec![k],
        };
        for name in names {
            assert_ne!(flag(&name), flag("?"), "{name}");
        }
    }
}
