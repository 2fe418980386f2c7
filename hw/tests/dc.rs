//! DC on the model with WQEs built by hand from the PRM layouts (prm-facts-next §3.3): a
//! DCI's WQE is ctrl + the 48-byte address vector (BE64 DC key, `dqp_dct` = DCT number |
//! 1 << 31, the DLID) + the RC segments; the DCT executes it and its receive CQE names the
//! DCI; a wrong key is refused as `NicConfig::dc_refusal` says.

mod common;

use common::*;
use mlx5_hw::{
    DcRefusal, DciStreams, Fabric, GidType, HwError, LinkLayer, Nic, NicConfig, QpParams, QpState,
    QpTransition, Transport,
};

const KEY: u64 = 0x1ee7_a330;
const REMOTE_ACCESS_ERR: u8 = 0x13;

/// A DCI on one NIC and a DCT (on an SRQ) on another, both ready.
fn dc_pair(nic_cfg: NicConfig) -> (std::sync::Arc<Fabric>, Side, Side) {
    dc_pair_streams(nic_cfg, DciStreams::default())
}

/// [`dc_pair`] with a DCI of `streams`.
fn dc_pair_streams(
    nic_cfg: NicConfig,
    streams: DciStreams,
) -> (std::sync::Arc<Fabric>, Side, Side) {
    let f = Fabric::new();
    // RoCE addresses are global: its RTRs need the route.
    let global = nic_cfg.link_layer == LinkLayer::Ethernet;
    let (na, nb) = (Nic::new(&f, nic_cfg.clone()), Nic::new(&f, nic_cfg));
    let a = Side::new(
        &na,
        Cfg {
            transport: Transport::Dci,
            dci_streams: streams,
            ..Cfg::default()
        },
    );
    let t = Side::new(
        &nb,
        Cfg {
            transport: Transport::Dct,
            srq: true,
            ..Cfg::default()
        },
    );
    let dci = a.qp.qpn;
    for step in [
        QpTransition::InitDci {
            port: 1,
            pkey_index: 0,
        },
        QpTransition::RtrDci {
            path_mtu: 1024,
            global,
        },
        QpTransition::Rts {
            sq_psn: 7,
            timeout: 14,
            retry_cnt: 1,
            rnr_retry: 1,
            max_rd_atomic: 4,
        },
    ] {
        na.modify_qp(dci, &step).unwrap();
    }
    // RC's RTR is not a DCT's.
    assert!(nb
        .modify_qp(
            t.qp.qpn,
            &QpTransition::RtrDci {
                path_mtu: 1024,
                global: false,
            }
        )
        .is_err());
    for step in [
        QpTransition::Init {
            port: 1,
            access: all_access(),
            pkey_index: 0,
        },
        QpTransition::RtrDct {
            path_mtu: 1024,
            min_rnr_timer: 1,
            dc_key: KEY,
            global,
        },
    ] {
        nb.modify_qp(t.qp.qpn, &step).unwrap();
    }
    // A DCT has no ERR or RESET transition of its own.
    assert!(nb.modify_qp(t.qp.qpn, &QpTransition::Reset).is_err());
    (f, a, t)
}

/// The 48-byte AV of a DCI WQE to DCT `dctn` on the port with LID `lid`.
fn av(key: u64, dctn: u32, lid: u16) -> Vec<u8> {
    let mut b = vec![0u8; 48];
    b[0..8].copy_from_slice(&key.to_be_bytes());
    b[8..12].copy_from_slice(&(dctn | 1 << 31).to_be_bytes());
    b[14..16].copy_from_slice(&lid.to_be_bytes());
    b
}

#[test]
fn a_hand_built_dci_wqe_writes_fetches_and_adds_and_sends_at_the_dct() {
    let (_f, mut a, mut t) = dc_pair(NicConfig::default());
    let lid = t.nic.lid();
    let dctn = t.qp.qpn;
    t.write_data(0x100, &40u64.to_ne_bytes());
    t.recv_at(0x800, 64);
    let write = vec![
        av(KEY, dctn, lid),
        raddr_seg(t.data(0x10), t.key),
        inline_seg(b"by hand"),
    ];
    a.post_op(WRITE, 0, SIGNALED, 0, &write);
    // The atomic segment sits after ctrl + AV + raddr: byte 80.
    let faa = vec![
        av(KEY, dctn, lid),
        raddr_seg(t.data(0x100), t.key),
        atomic_seg(2, 0),
        data_seg(8, a.key, a.data(0x40)),
    ];
    a.post_op(FA, 0, SIGNALED, 0, &faa);
    let send = vec![av(KEY, dctn, lid), inline_seg(b"hello dct")];
    a.post_op(SEND, 0, SIGNALED, 0, &send);
    a.ring();
    let cs = a.drain_send();
    assert_eq!(cs.len(), 3);
    assert!(cs.iter().all(|c| c.opcode == REQ && c.qpn() == a.qp.qpn));
    assert_eq!(t.read_data(0x10, 7), b"by hand");
    assert_eq!(
        u64::from_ne_bytes(a.read_data(0x40, 8).try_into().unwrap()),
        40
    );
    assert_eq!(
        u64::from_ne_bytes(t.read_data(0x100, 8).try_into().unwrap()),
        42
    );
    let r = t.drain_recv();
    assert_eq!(r.len(), 1);
    assert_eq!(
        (
            r[0].opcode,
            r[0].qpn(),
            r[0].flags_rqpn & 0xff_ffff,
            r[0].slid,
            r[0].byte_cnt
        ),
        (RESP_SEND, dctn, a.qp.qpn, a.nic.lid(), 9)
    );
    assert_eq!(t.read_data(0x800, 9), b"hello dct");
    let s = a.nic.stats();
    assert_eq!((s.dc_connects, s.dc_disconnects), (1, 0));
}

/// On InfiniBand a DCT's receive CQE carries the service level of the DCI's address vector
/// (`flags_rqpn` bits 27..24), with or without a global route in it; the RoCE packet type
/// goes there on Ethernet links only.
#[test]
fn a_dct_receive_on_infiniband_carries_the_avs_service_level() {
    let (_f, mut a, mut t) = dc_pair(NicConfig::default());
    let (lid, dctn) = (t.nic.lid(), t.qp.qpn);
    for global in [false, true] {
        t.recv_at(0x800, 64);
        let mut av = av(KEY, dctn, lid);
        av[12] = 5;
        if global {
            // `grh_gid_fl` bit 30: a global route (SGID index 0), to the target's port GID.
            av[28] = 0x40;
        }
        a.post_op(SEND, 0, SIGNALED, 0, &[av, inline_seg(b"sl")]);
        a.ring();
        assert_eq!(a.drain_send().len(), 1);
        let r = t.drain_recv();
        assert_eq!(
            (r.len(), r[0].flags_rqpn >> 24 & 0xf),
            (1, 5),
            "global {global}"
        );
    }
}

/// On RoCE the same bits carry the packet type of the DCI's source GID (`L3::packet_type`:
/// 0 for RoCE v1's GRH, bit 3 and the IP version for RoCE v2), whatever the AV's SL.
#[test]
fn a_dct_receive_on_roce_carries_the_packet_type() {
    let roce = NicConfig {
        link_layer: LinkLayer::Ethernet,
        ..NicConfig::default()
    };
    let (_f, mut a, mut t) = dc_pair(roce);
    let dctn = t.qp.qpn;
    let entries = a.nic.port(1).unwrap().gid_table_len;
    assert!(entries > 0);
    for index in 0..entries {
        let (ours, theirs) = (
            a.nic.query_gid(1, index).unwrap(),
            t.nic.query_gid(1, index).unwrap(),
        );
        t.recv_at(0x800, 64);
        let mut av = av(KEY, dctn, 0);
        // RoCE: `stat_rate_sl` bits 3..1 the SL (5); `grh_gid_fl` the SGID index; the
        // destination GID of the same type.
        av[12] = 5 << 1;
        av[28..32].copy_from_slice(&(index << 20).to_be_bytes());
        av[32..48].copy_from_slice(&theirs.gid);
        a.post_op(SEND, 0, SIGNALED, 0, &[av, inline_seg(b"pt")]);
        a.ring();
        assert_eq!(a.drain_send().len(), 1, "index {index}");
        let ipv4_mapped = ours.gid[..12] == [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff];
        let packet_type = match ours.gid_type {
            GidType::RoceV2 if ipv4_mapped => 8 | 2,
            GidType::RoceV2 => 8 | 1,
            _ => 0,
        };
        let r = t.drain_recv();
        assert_eq!(r[0].flags_rqpn >> 24 & 0xf, packet_type, "index {index}");
    }
}

#[test]
fn a_wrong_key_is_nakked_with_remote_access_err_when_the_knob_says_so() {
    let cfg = NicConfig {
        dc_refusal: DcRefusal::Nak,
        ..NicConfig::default()
    };
    let (_f, mut a, t) = dc_pair(cfg);
    let segs = vec![
        av(KEY ^ 1, t.qp.qpn, t.nic.lid()),
        raddr_seg(t.data(0), t.key),
        inline_seg(b"x"),
    ];
    a.post_op(WRITE, 0, SIGNALED, 0, &segs);
    a.ring();
    let c = a.drain_send();
    assert_eq!((c[0].opcode, c[0].syndrome), (REQ_ERR, REMOTE_ACCESS_ERR));
    assert_eq!(t.nic.stats().dc_key_violations, 1);
    assert_eq!(a.state(), mlx5_hw::QpState::Err);
}

const LOCAL_QP_OP_ERR: u8 = 0x02;
const WR_FLUSH_ERR: u8 = 0x05;
const TRANSPORT_RETRY_EXC_ERR: u8 = 0x15;

/// Post a signaled inline WRITE of `payload` to the DCT at `off` of its data, on DCI
/// stream `stream` (control bytes 9..10), with DC key `key`.
fn write_on(a: &mut Side, t: &Side, stream: u16, key: u64, off: usize, payload: &[u8]) {
    let segs = vec![
        av(key, t.qp.qpn, t.nic.lid()),
        raddr_seg(t.data(off), t.key),
        inline_seg(payload),
    ];
    let mut w = a.wqe(WRITE, 0, SIGNALED, 0, &segs);
    w[9..11].copy_from_slice(&stream.to_be_bytes());
    a.post(&w);
}

/// Four streams, the second errored one fails the DCI.
const FOUR_BY_TWO: DciStreams = DciStreams {
    log_channels: 2,
    log_errored: 1,
};

/// NICs whose DCTs NAK a refused connect.
fn nak() -> NicConfig {
    NicConfig {
        dc_refusal: DcRefusal::Nak,
        ..NicConfig::default()
    }
}

fn statuses(cs: &[Cqe]) -> Vec<(u8, u8)> {
    cs.iter().map(|c| (c.opcode, c.syndrome)).collect()
}

#[test]
fn a_stream_error_flushes_that_stream_only_until_it_is_reset() {
    let (_f, mut a, t) = dc_pair_streams(nak(), FOUR_BY_TWO);
    write_on(&mut a, &t, 0, KEY ^ 1, 0, b"bad");
    write_on(&mut a, &t, 1, KEY, 0x10, b"one");
    write_on(&mut a, &t, 0, KEY, 0x20, b"zero");
    write_on(&mut a, &t, 3, KEY, 0x30, b"three");
    a.ring();
    assert_eq!(
        statuses(&a.drain_send()),
        [
            (REQ_ERR, REMOTE_ACCESS_ERR),
            (REQ, 0),
            (REQ_ERR, WR_FLUSH_ERR),
            (REQ, 0)
        ]
    );
    assert_eq!(a.state(), QpState::Rts);
    assert_eq!(t.read_data(0x10, 3), b"one");
    assert_eq!(t.read_data(0x20, 4), [0; 4]);
    assert_eq!(t.read_data(0x30, 5), b"three");
    let s = a.nic.stats();
    assert_eq!((s.dci_stream_errors, s.dci_stream_flushes), (1, 1));
    // Still flushed until the stream is reset; then it runs again.
    write_on(&mut a, &t, 0, KEY, 0x20, b"zero");
    a.ring();
    assert_eq!(statuses(&a.drain_send()), [(REQ_ERR, WR_FLUSH_ERR)]);
    a.nic.reset_dci_stream(a.qp.qpn, 0).unwrap();
    write_on(&mut a, &t, 0, KEY, 0x20, b"zero");
    a.ring();
    assert_eq!(statuses(&a.drain_send()), [(REQ, 0)]);
    assert_eq!(t.read_data(0x20, 4), b"zero");
}

#[test]
fn the_errored_stream_that_reaches_two_to_the_log_errored_fails_the_dci() {
    let (_f, mut a, t) = dc_pair_streams(nak(), FOUR_BY_TWO);
    write_on(&mut a, &t, 2, KEY ^ 1, 0, b"a");
    write_on(&mut a, &t, 1, KEY ^ 1, 0, b"b");
    write_on(&mut a, &t, 0, KEY, 0x10, b"c");
    a.ring();
    assert_eq!(
        statuses(&a.drain_send()),
        [
            (REQ_ERR, REMOTE_ACCESS_ERR),
            (REQ_ERR, REMOTE_ACCESS_ERR),
            (REQ_ERR, WR_FLUSH_ERR)
        ]
    );
    assert_eq!(a.state(), QpState::Err);
    assert_eq!(a.nic.stats().dci_stream_errors, 1);
    assert_eq!(
        a.nic.reset_dci_stream(a.qp.qpn, 2),
        Err(HwError::InvalidTransition)
    );
}

#[test]
fn a_plain_dci_fails_at_its_first_error_ignores_stream_ids_and_a_stream_beyond_its_channels_is_a_local_error(
) {
    let cfg = nak();
    // log_errored 0: one errored stream is the limit (torchcomms PR #958's firmware).
    let one = DciStreams {
        log_channels: 1,
        log_errored: 0,
    };
    let (_f, mut a, t) = dc_pair_streams(cfg.clone(), one);
    write_on(&mut a, &t, 1, KEY ^ 1, 0, b"a");
    write_on(&mut a, &t, 0, KEY, 0x10, b"b");
    a.ring();
    assert_eq!(
        statuses(&a.drain_send()),
        [(REQ_ERR, REMOTE_ACCESS_ERR), (REQ_ERR, WR_FLUSH_ERR)]
    );
    assert_eq!(a.state(), QpState::Err);
    // A plain DCI checks the id only when the knob says so; by default it ignores it.
    let strict = NicConfig {
        dci_streams: mlx5_hw::DciStreamConfig {
            plain_dci_ignores_stream: false,
            ..Default::default()
        },
        ..cfg.clone()
    };
    for (c, streams, id) in [(&strict, DciStreams::default(), 1), (&cfg, one, 2)] {
        let (_f, mut a, t) = dc_pair_streams(c.clone(), streams);
        write_on(&mut a, &t, id, KEY, 0, b"a");
        a.ring();
        assert_eq!(
            statuses(&a.drain_send()),
            [(REQ_ERR, LOCAL_QP_OP_ERR)],
            "stream {id} of {streams:?}"
        );
        assert_eq!(a.state(), QpState::Err);
        assert_eq!(t.read_data(0, 1), [0]);
    }
    let (_f, mut a, t) = dc_pair_streams(cfg.clone(), DciStreams::default());
    write_on(&mut a, &t, 1, KEY, 0, b"a");
    write_on(&mut a, &t, 0xffff, KEY, 1, b"b");
    a.ring();
    assert_eq!(statuses(&a.drain_send()), [(REQ, 0), (REQ, 0)]);
    assert_eq!(t.read_data(0, 2), *b"ab");
    assert_eq!(a.state(), QpState::Rts);
    // The knob names the syndrome.
    let knob = NicConfig {
        dci_streams: mlx5_hw::DciStreamConfig {
            bad_stream_syndrome: 0x14,
            ..Default::default()
        },
        ..cfg
    };
    let (_f, mut a, t) = dc_pair_streams(knob, one);
    write_on(&mut a, &t, 7, KEY, 0, b"a");
    a.ring();
    assert_eq!(statuses(&a.drain_send()), [(REQ_ERR, 0x14)]);
}

#[test]
fn streams_are_a_dci_s_within_the_caps_and_stream_reset_is_checked() {
    let f = Fabric::new();
    let streams = DciStreams {
        log_channels: 1,
        log_errored: 1,
    };
    let nic = Nic::new(&f, NicConfig::default());
    let side = Side::new(&nic, Cfg::default());
    let rc = QpParams {
        transport: Transport::Rc,
        pdn: side.pd,
        send_cqn: side.scq.cqn,
        recv_cqn: side.rcq.cqn,
        dci_streams: streams,
        ..QpParams::default()
    };
    // SAFETY: refused before any buffer is used.
    let r = unsafe { nic.create_qp(&rc) };
    assert_eq!(
        r.err(),
        Some(HwError::InvalidParam(
            "DCI streams on a QP that is not a DCI"
        ))
    );
    let above = QpParams {
        transport: Transport::Dci,
        dci_streams: DciStreams {
            log_channels: 5,
            log_errored: 0,
        },
        ..rc
    };
    // SAFETY: refused before any buffer is used.
    let r = unsafe { nic.create_qp(&above) };
    assert_eq!(
        r.err(),
        Some(HwError::InvalidParam("DCI streams above the device's caps"))
    );
    assert_eq!(
        nic.reset_dci_stream(side.qp.qpn, 0),
        Err(HwError::InvalidParam(
            "stream reset of a QP that is not a DCI"
        ))
    );
    let (_f, a, _t) = dc_pair_streams(NicConfig::default(), streams);
    assert_eq!(
        a.nic.reset_dci_stream(a.qp.qpn, 2),
        Err(HwError::InvalidParam("stream id beyond the DCI's channels"))
    );
    assert_eq!(a.nic.reset_dci_stream(a.qp.qpn, 1), Ok(()));
    let no_reset = NicConfig {
        dci_streams: mlx5_hw::DciStreamConfig {
            max_log_errored: 0,
            ..Default::default()
        },
        ..NicConfig::default()
    };
    let (_f, a, _t) = dc_pair_streams(
        no_reset,
        DciStreams {
            log_channels: 1,
            log_errored: 0,
        },
    );
    assert_eq!(
        a.nic.reset_dci_stream(a.qp.qpn, 0),
        Err(HwError::NotSupported("DCI stream reset"))
    );
}

#[test]
fn a_retry_exhausted_on_one_stream_lets_the_next_stream_run() {
    // DcRefusal::Drop: the wrong key is never answered; after retry_cnt (1) retransmissions
    // the WQE fails with TRANSPORT_RETRY_EXC_ERR, confined to stream 1.
    let streams = DciStreams {
        log_channels: 1,
        log_errored: 1,
    };
    let (_f, mut a, t) = dc_pair_streams(NicConfig::default(), streams);
    write_on(&mut a, &t, 1, KEY ^ 1, 0, b"lost");
    write_on(&mut a, &t, 0, KEY, 0x10, b"kept");
    a.ring();
    assert!(a.drain_send().is_empty());
    while a.nic.progress() != 0 {}
    assert_eq!(
        statuses(&a.drain_send()),
        [(REQ_ERR, TRANSPORT_RETRY_EXC_ERR), (REQ, 0)]
    );
    assert_eq!(a.state(), QpState::Rts);
    assert_eq!(t.read_data(0x10, 4), b"kept");
}
