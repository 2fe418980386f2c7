//! The `mlx5-perf` TCP exchange on its own: two threads over 127.0.0.1 (an OS-chosen port)
//! handshake, and every kind of disagreement is an error naming what differs, on both sides.

use std::net::{TcpListener, TcpStream};
use std::thread;

use mlx5_perf::exchange::{DctRecord, ExchangeError, Peer, QpRecord, XrcRecord};
use serde_json::{json, Value};

/// Runs `server` and `client` on the two ends of a fresh connection.
fn pair<A: Send + 'static, B>(
    server: impl FnOnce(Peer) -> A + Send + 'static,
    client: impl FnOnce(Peer) -> B,
) -> (A, B) {
    let listener = TcpListener::bind(("127.0.0.1", 0)).unwrap();
    let addr = listener.local_addr().unwrap();
    let s = thread::spawn(move || server(Peer::new(listener.accept().unwrap().0)));
    let b = client(Peer::new(TcpStream::connect(addr).unwrap()));
    (s.join().unwrap(), b)
}

fn params(verb: &str, size: u64, iters: u64) -> Value {
    json!({"test": {"verb": verb, "kind": "lat"}, "sizes": [size], "iters": iters, "qps": 1})
}

fn mismatch(e: Result<(), ExchangeError>) -> Vec<(String, String, String)> {
    match e {
        Err(ExchangeError::Mismatch(d)) => {
            d.into_iter().map(|d| (d.field, d.here, d.peer)).collect()
        }
        other => panic!("expected a mismatch, got {other:?}"),
    }
}

fn one(field: &str, here: &str, peer: &str) -> Vec<(String, String, String)> {
    vec![(field.into(), here.into(), peer.into())]
}

#[test]
fn equal_parameters_then_qp_records() {
    let record = QpRecord {
        lid: 1,
        qpn: 0x100,
        psn: 0,
        rkey: 0x101,
        addr: 0x7f00_0000_1000,
        gid: [0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1],
        qkey: None,
        dct: None,
        xrc: None,
    };
    let (theirs, mine) = pair(
        move |mut p| {
            p.handshake(&params("write", 2, 1000)).unwrap();
            p.swap(&vec![record]).unwrap()
        },
        |mut p| {
            p.handshake(&params("write", 2, 1000)).unwrap();
            let other = QpRecord { lid: 2, ..record };
            p.swap(&vec![other]).unwrap()
        },
    );
    assert_eq!(mine, vec![record]);
    assert_eq!(theirs[0].lid, 2);
    assert_eq!(theirs[0].gid, record.gid);
}

#[test]
fn a_different_size_is_named_on_both_sides() {
    let (server, client) = pair(
        |mut p| p.handshake(&params("write", 2, 1000)),
        |mut p| p.handshake(&params("write", 64, 1000)),
    );
    assert_eq!(mismatch(server), one("sizes", "[2]", "[64]"));
    assert_eq!(mismatch(client), one("sizes", "[64]", "[2]"));
}

#[test]
fn a_nested_field_is_named_by_its_path() {
    let (_, client) = pair(
        |mut p| p.handshake(&params("send", 2, 1000)),
        |mut p| p.handshake(&params("write", 2, 1000)),
    );
    let e = client.unwrap_err();
    assert_eq!(
        e.to_string(),
        "parameter mismatch: `test.verb` is \"write\" on this side but \"send\" on the peer"
    );
}

#[test]
fn every_difference_is_listed() {
    let (_, client) = pair(
        |mut p| p.handshake(&params("send", 2, 1000)),
        |mut p| p.handshake(&params("write", 8, 1000)),
    );
    assert_eq!(
        mismatch(client),
        vec![
            ("sizes".into(), "[8]".into(), "[2]".into()),
            ("test.verb".into(), "\"write\"".into(), "\"send\"".into()),
        ]
    );
}

#[test]
fn a_field_only_the_peer_has_is_a_mismatch() {
    let (_, client) = pair(
        |mut p| {
            let mut v = params("write", 2, 1000);
            v["duration"] = json!(5);
            p.handshake(&v)
        },
        |mut p| p.handshake(&params("write", 2, 1000)),
    );
    assert_eq!(mismatch(client), one("duration", "null", "5"));
}

#[test]
fn another_version_is_refused() {
    let (_, client) = pair(
        |mut p| {
            p.send(
                &json!({"version": "mlx5-perf 0.0.1 exchange 0", "params": params("write", 2, 1)}),
            )
            .unwrap();
            p.recv::<Value>().unwrap()
        },
        |mut p| p.handshake(&params("write", 2, 1)),
    );
    match client {
        Err(ExchangeError::Version { peer, .. }) => assert_eq!(peer, "mlx5-perf 0.0.1 exchange 0"),
        other => panic!("expected a version error, got {other:?}"),
    }
}

#[test]
fn a_closed_peer_is_reported() {
    let (_, client) = pair(drop, |mut p| p.handshake(&params("write", 2, 1)));
    assert!(
        matches!(client, Err(ExchangeError::Closed | ExchangeError::Io(_))),
        "{client:?}"
    );
}

/// The transport's own fields ride in the record: the Q_Key of a UD QP, the DCT number and
/// DC key of a DC target, the XRC target and SRQ number of an XRC QP; an RC record carries
/// none of them on the wire.
#[test]
fn ud_dc_and_xrc_records_carry_their_keys() {
    let rc = QpRecord {
        lid: 1,
        qpn: 0x100,
        psn: 0x123456,
        rkey: 0x101,
        addr: 0x7f00_0000_1000,
        gid: [0; 16],
        qkey: None,
        dct: None,
        xrc: None,
    };
    let ud = QpRecord {
        qkey: Some(0x1111_1111),
        ..rc
    };
    let dc = QpRecord {
        dct: Some(DctRecord {
            number: 0x00ab_cdef,
            key: 0xffee_ddcc,
        }),
        ..rc
    };
    let xrc = QpRecord {
        xrc: Some(XrcRecord {
            target: 0x101,
            psn: 0x654321,
            srqn: 0x800,
        }),
        ..rc
    };
    let json = serde_json::to_string(&rc).unwrap();
    assert!(
        !json.contains("qkey") && !json.contains("dct") && !json.contains("xrc"),
        "{json}"
    );
    assert_eq!(
        serde_json::to_string(&ud).unwrap(),
        json.replace('}', ",\"qkey\":286331153}")
    );
    assert_eq!(
        serde_json::to_string(&dc).unwrap(),
        json.replace('}', ",\"dct\":{\"number\":11259375,\"key\":4293844428}}")
    );
    assert_eq!(
        serde_json::to_string(&xrc).unwrap(),
        json.replace(
            '}',
            ",\"xrc\":{\"target\":257,\"psn\":6636321,\"srqn\":2048}}"
        )
    );
    let (theirs, mine) = pair(
        move |mut p| p.swap(&vec![ud, dc, xrc]).unwrap(),
        move |mut p| p.swap(&vec![rc]).unwrap(),
    );
    assert_eq!(theirs, vec![rc]);
    assert_eq!(mine, vec![ud, dc, xrc]);
}
