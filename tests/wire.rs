//! What two processes exchange to connect, as an application does it: an `Endpoint` in
//! rc_pingpong's text form or as bytes, over a TCP socket; `Remote::offset` into a peer's
//! buffer; and, with feature `serde`, the plain data types through serde_json.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};

use mlx5_direct::backend::sim::{Fabric, NicConfig, Sim};
use mlx5_direct::{
    Access, Completion, ConnectOptions, Context, Data, Endpoint, ParseEndpointError, QpConfig,
    Remote, SendFlags, SendOp, Status,
};

fn sample() -> Endpoint {
    let mut gid = [0u8; 16];
    gid[0] = 0xfe;
    gid[1] = 0x80;
    gid[15] = 0x2a;
    Endpoint {
        lid: 0x1b,
        gid,
        qpn: 0x00_0108,
        psn: 0xab_cdef,
    }
}

#[test]
fn the_text_form_is_rc_pingpongs_and_reads_back() {
    let e = sample();
    let text = e.to_string();
    assert_eq!(text, "001b:000108:abcdef:fe80000000000000000000000000002a");
    assert_eq!(text.len(), Endpoint::TEXT_LEN);
    assert_eq!(text.parse::<Endpoint>(), Ok(e));
    assert_eq!(text.to_uppercase().parse::<Endpoint>(), Ok(e));
}

#[test]
fn malformed_text_is_a_typed_error() {
    let good = sample().to_string();
    for bad in [
        "",
        "001b:000108:abcdef",
        "01b:000108:abcdef:fe80000000000000000000000000002a",
        "001b:0001080:bcdef:fe80000000000000000000000000002a",
        "001b:000108:abcdeg:fe80000000000000000000000000002a",
        "001b:000108:abcdef:fe80000000000000000000000000002",
        "001b:000108:abcdef:fe80000000000000000000000000002a:",
        "+01b:000108:abcdef:fe80000000000000000000000000002a",
    ] {
        let err: ParseEndpointError = bad.parse::<Endpoint>().unwrap_err();
        assert!(
            err.to_string().starts_with("bad endpoint: "),
            "{bad}: {err}"
        );
    }
    assert!(good.parse::<Endpoint>().is_ok());
}

#[test]
fn the_byte_form_is_big_endian_and_reads_back() {
    let e = sample();
    let b = e.to_bytes();
    assert_eq!(
        b[..10],
        [0x00, 0x1b, 0x00, 0x00, 0x01, 0x08, 0x00, 0xab, 0xcd, 0xef]
    );
    assert_eq!(b[10..], e.gid);
    assert_eq!(Endpoint::from_bytes(&b), Ok(e));
    assert!(Endpoint::from_bytes(&b[..25]).is_err());
    let mut wide = b;
    wide[2] = 1; // QPN 0x01000108: over 24 bits
    assert!(Endpoint::from_bytes(&wide).is_err());
}

#[test]
fn two_processes_exchange_endpoints_over_tcp_and_connect() {
    let fabric = Fabric::new();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    // The "server" process: a QP and a buffer; it sends its endpoint as text and the
    // buffer's address as bytes, reads the client's endpoint, connects.
    let server_fabric = fabric.clone();
    let server = std::thread::spawn(move || {
        let ctx = Context::new(Sim::on_fabric(&server_fabric, NicConfig::default()));
        let pd = ctx.alloc_pd().unwrap();
        let cq = ctx.create_cq(16, 64).unwrap();
        let mut qp = pd.create_qp(&cq, &cq, &QpConfig::default()).unwrap();
        let mr = pd.alloc_mr(4096, Access::ALL).unwrap();
        let (mut stream, _) = listener.accept().unwrap();
        writeln!(stream, "{}", qp.endpoint().unwrap()).unwrap();
        let remote = mr.remote(0);
        stream.write_all(&remote.addr.to_be_bytes()).unwrap();
        stream.write_all(&remote.rkey.to_be_bytes()).unwrap();
        let mut bytes = [0u8; Endpoint::WIRE_LEN];
        stream.read_exact(&mut bytes).unwrap();
        let peer = Endpoint::from_bytes(&bytes).unwrap();
        qp.connect(&peer, &ConnectOptions::default()).unwrap();
        stream.write_all(b"k").unwrap();
        // Wait for "done", then hand the buffer back for checking.
        stream.read_exact(&mut [0u8; 1]).unwrap();
        let mut got = [0u8; 8];
        mr.read(64, &mut got);
        got
    });
    // The "client" process.
    let ctx = Context::new(Sim::on_fabric(&fabric, NicConfig::default()));
    let pd = ctx.alloc_pd().unwrap();
    let mut cq = ctx.create_cq(16, 64).unwrap();
    let mut qp = pd.create_qp(&cq, &cq, &QpConfig::default()).unwrap();
    let stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut line = String::new();
    reader.read_line(&mut line).unwrap();
    let peer: Endpoint = line.trim_end().parse().unwrap();
    let mut raw = [0u8; 12];
    reader.read_exact(&mut raw).unwrap();
    let remote = Remote {
        addr: u64::from_be_bytes(raw[..8].try_into().unwrap()),
        rkey: u32::from_be_bytes(raw[8..].try_into().unwrap()),
    };
    let mut stream = stream;
    stream
        .write_all(&qp.endpoint().unwrap().to_bytes())
        .unwrap();
    qp.connect(&peer, &ConnectOptions::default()).unwrap();
    reader.read_exact(&mut [0u8; 1]).unwrap();
    qp.sq()
        .post(
            1,
            SendOp::Write(remote.offset(64)),
            Data::Inline(b"offset64"),
            SendFlags::SIGNALED,
        )
        .unwrap();
    let mut done = [Completion::default(); 1];
    while cq.poll(&mut done) == 0 {}
    assert_eq!(done[0].status, Status::Success);
    stream.write_all(b"d").unwrap();
    assert_eq!(&server.join().unwrap(), b"offset64");
}

#[test]
fn remote_offset_moves_the_address_and_keeps_the_key() {
    let r = Remote {
        addr: 0x1000,
        rkey: 7,
    };
    assert_eq!(
        r.offset(0x18),
        Remote {
            addr: 0x1018,
            rkey: 7
        }
    );
    assert_eq!(r.offset(0), r);
}

#[test]
#[should_panic(expected = "remote address overflows")]
fn remote_offset_past_the_address_space_panics() {
    Remote {
        addr: u64::MAX,
        rkey: 1,
    }
    .offset(1);
}

#[cfg(feature = "serde")]
#[test]
fn the_plain_data_types_round_trip_through_serde() {
    use mlx5_direct::{
        AsyncEvent, DeviceCaps, GidEntry, GidType, PortInfo, QpSizes, QpState, Sge, Transition,
        WcError, WcOpcode,
    };
    use serde::{de::DeserializeOwned, Serialize};

    fn round_trip<T: Serialize + DeserializeOwned + PartialEq + std::fmt::Debug>(value: T) {
        let json = serde_json::to_string(&value).unwrap();
        assert_eq!(serde_json::from_str::<T>(&json).unwrap(), value, "{json}");
    }
    round_trip(sample());
    round_trip(Access::ALL);
    round_trip(QpConfig::default());
    round_trip(ConnectOptions::default());
    round_trip(QpState::Rts);
    round_trip(Transition::Rtr {
        remote: sample(),
        path_mtu: 1024,
        max_dest_rd_atomic: 4,
        min_rnr_timer: 12,
        hop_limit: 64,
        traffic_class: 0,
        sl: 3,
        flow_label: 0xabcde,
    });
    round_trip(DeviceCaps {
        max_sq_wqebbs: 1 << 15,
        max_wqe_size: 1008,
        max_send_sge: 30,
        max_recv_sge: 30,
        max_cqe: 1 << 22,
        max_inline: 972,
        bf_size: 256,
        max_rd_atomic: 16,
        max_dest_rd_atomic: 16,
        atomics: true,
        atomic_8b_host_order: false,
        compact_av: true,
        max_dm_size: 128 << 10,
        max_mcast_grp: 1 << 21,
        xrc: true,
        pacing: mlx5_direct::PacingCaps {
            min_kbps: 1,
            max_kbps: 100_000_000,
            rc: false,
            uc: true,
            ud: true,
            raw: true,
        },
    });
    round_trip(QpSizes {
        send_wqe_size: 320,
        max_send_wr: 51,
        sq_wqebbs: 256,
        rq_wqes: 256,
        rq_stride: 64,
    });
    round_trip(PortInfo {
        lid: 3,
        gid: sample().gid,
        gid_index: 3,
        active_mtu: 4096,
        max_msg_size: 1 << 30,
        roce: true,
        gid_table_len: 4,
    });
    round_trip(GidEntry {
        gid: sample().gid,
        gid_type: GidType::RoceV2,
    });
    round_trip(Remote {
        addr: 0xdead_beef,
        rkey: 9,
    });
    round_trip(Sge {
        addr: 0x1000,
        len: 64,
        lkey: 5,
    });
    let c = Completion::default()
        .with_wr_id(77)
        .with_qpn(0x108)
        .with_opcode(WcOpcode::RecvRdmaWithImm)
        .with_status(Status::Error(WcError {
            syndrome: 0x05,
            vendor_syndrome: 0x32,
            wqe_counter: 3,
        }))
        .with_byte_len(12)
        .with_src_qp(0x109)
        .with_solicited(true)
        .with_slid(7)
        .with_ud_flags(0x13)
        .with_timestamp(0x1122_3344_5566_7788)
        .with_data_in_cqe(true)
        .with_user_index(0xab_cdef);
    // One CQE field holds the immediate, the invalidated rkey or the P_Key: each in turn.
    round_trip(c.with_imm(Some(0x1234)));
    round_trip(c.with_invalidated_rkey(Some(0x5678)));
    round_trip(c.with_pkey_index(0xffff));
    round_trip(c.with_cvlan(Some(0x6064)));
    let json = serde_json::to_value(c.with_imm(Some(0x1234))).unwrap();
    assert_eq!(
        (&json["imm"], &json["invalidated_rkey"], &json["pkey_index"]),
        (
            &serde_json::json!(0x1234),
            &serde_json::Value::Null,
            &serde_json::json!(0)
        )
    );
    round_trip(mlx5_direct::Transport::Ud);
    round_trip(mlx5_direct::AhAttr {
        port: 1,
        dlid: 2,
        sl: 3,
        src_path_bits: 4,
        grh: Some(mlx5_direct::GlobalRoute {
            dgid: sample().gid,
            flow_label: 0xabcde,
            sgid_index: 0,
            hop_limit: 64,
            traffic_class: 0x10,
        }),
    });
    round_trip(Status::UnknownWqe(4));
    round_trip(WcOpcode::Other(0x1f));
    round_trip(AsyncEvent::QpFatal { qpn: 0x108 });
    round_trip(AsyncEvent::DeviceFatal);
}
