//! UD by hand: a UD side brought to RTS, the address vector a WQE carries (the 48 bytes of
//! `mlx5_create_ah` with the Q_Key and remote QPN a WQE writes, rdma-core's
//! `set_datagram_seg`), and a datagram send.

use super::{inline_seg, Cfg, Side, SEND};
use mlx5_hw::{AhAttr, GlobalRoute, Nic, QpTransition, Transport};

/// The Q_Key of every test UD QP.
pub const QKEY: u32 = 0x1111_1111;
/// `MLX5_EXTENDED_UD_AV`, bit 31 of `dqp_dct`.
const EXTENDED_AV: u32 = 1 << 31;

/// A UD side on `nic` (receive ring of 64-byte WQEs), in RTS.
pub fn side(nic: &Nic) -> Side {
    let s = Side::new(
        nic,
        Cfg {
            transport: Transport::Ud,
            ..Cfg::default()
        },
    );
    activate(&s);
    s
}

/// Bring UD side `s` from RESET to RTS with [`QKEY`].
pub fn activate(s: &Side) {
    for t in [
        QpTransition::InitUd {
            port: 1,
            qkey: QKEY,
            pkey_index: 0,
        },
        QpTransition::RtrUd,
        QpTransition::RtsUd { sq_psn: 0 },
    ] {
        s.nic.modify_qp(s.qp.qpn, &t).unwrap();
    }
}

/// The address vector of a WQE to `dqpn` (with Q_Key `qkey`) through an address handle
/// of `s`'s NIC to `dlid` with a global route to `dgid` (if any) from GID index 0.
pub fn av(s: &Side, dlid: u16, dgid: Option<[u8; 16]>, dqpn: u32, qkey: u32) -> Vec<u8> {
    av_from(s, 0, dlid, dgid, dqpn, qkey)
}

/// [`av`] from source GID index `sgid_index`.
pub fn av_from(
    s: &Side,
    sgid_index: u8,
    dlid: u16,
    dgid: Option<[u8; 16]>,
    dqpn: u32,
    qkey: u32,
) -> Vec<u8> {
    let attr = AhAttr {
        port: 1,
        dlid,
        sl: 0,
        src_path_bits: 0,
        grh: dgid.map(|dgid| GlobalRoute {
            dgid,
            flow_label: 0,
            sgid_index,
            hop_limit: 64,
            traffic_class: 0,
        }),
    };
    let mut av = s.nic.create_ah(s.pd, &attr).unwrap().to_vec();
    av[0..4].copy_from_slice(&qkey.to_be_bytes());
    av[8..12].copy_from_slice(&(EXTENDED_AV | dqpn).to_be_bytes());
    av
}

/// Post a SEND of inline `payload` through address vector `av` and ring the doorbell.
pub fn send(s: &mut Side, av: &[u8], payload: &[u8], flags: u8) {
    s.post_op(SEND, 0, flags, 0, &[av.to_vec(), inline_seg(payload)]);
    s.ring();
}
