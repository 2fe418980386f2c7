//! DC on the model with WQEs built by hand from the PRM layouts (prm-facts-next §3.3): a
//! DCI's WQE is ctrl + the 48-byte address vector (BE64 DC key, `dqp_dct` = DCT number |
//! 1 << 31, the DLID) + the RC segments; the DCT executes it and its receive CQE names the
//! DCI; a wrong key is refused as `NicConfig::dc_refusal` says.

mod common;

use common::*;
use mlx5_hw::{DcRefusal, Fabric, Nic, NicConfig, QpTransition, Transport};

const KEY: u64 = 0x1ee7_a330;
const REMOTE_ACCESS_ERR: u8 = 0x13;

/// A DCI on one NIC and a DCT (on an SRQ) on another, both ready.
fn dc_pair(nic_cfg: NicConfig) -> (std::sync::Arc<Fabric>, Side, Side) {
    let f = Fabric::new();
    let (na, nb) = (Nic::new(&f, nic_cfg.clone()), Nic::new(&f, nic_cfg));
    let a = Side::new(
        &na,
        Cfg {
            transport: Transport::Dci,
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
        QpTransition::RtrDci { path_mtu: 1024 },
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
        .modify_qp(t.qp.qpn, &QpTransition::RtrDci { path_mtu: 1024 })
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
