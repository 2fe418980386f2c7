//! What the UD tests share (`tests/sim_ud.rs`, `tests/sim_ud_roce.rs`, `tests/sim_mcast.rs`):
//! the Q_Key, the QP configuration, a connected pair, address handles, send and receive
//! helpers, the IPv6 header, the IPv4 checksum and the LOCAL_QP_OP_ERR check.

use super::{assert_empty, poll_n, side, Side};
use mlx5_direct::backend::sim::{Fabric, Sim};
use mlx5_direct::prm::Syndrome;
use mlx5_direct::{
    AddressHandle, AhAttr, Data, QpConfig, QpState, SendFlags, SendOp, SendWr, Status, Transport,
    UD_GRH_BYTES,
};

pub const QKEY: u32 = 0x1100_2233;

pub fn ud_config() -> QpConfig {
    QpConfig {
        transport: Transport::Ud,
        max_inline: 188,
        ..QpConfig::default()
    }
}

/// Two UD sides on one fabric, in RTS with Q_Key [`QKEY`].
pub fn ud_pair(fabric: &std::sync::Arc<Fabric>) -> (Side, Side) {
    let (mut a, mut b) = (side(fabric, &ud_config()), side(fabric, &ud_config()));
    a.qp.activate_ud(1, QKEY).unwrap();
    b.qp.activate_ud(1, QKEY).unwrap();
    (a, b)
}

/// An address handle from `from` to `to`'s port, by LID.
pub fn ah_to(from: &Side, to: &Side) -> AddressHandle<Sim> {
    let remote = to.qp.endpoint().unwrap();
    from.pd.create_ah(&AhAttr::to_lid(1, &remote)).unwrap()
}

pub fn send(data: Data<'_>, op: SendOp) -> SendWr<'_> {
    SendWr {
        wr_id: 7,
        op,
        data,
        flags: SendFlags::SIGNALED,
    }
}

/// A receive of 40 + 256 bytes at `off` of b's region.
pub fn post_recv(b: &mut Side, wr_id: u64, off: usize) {
    let sge = b.mr.sge(off, UD_GRH_BYTES as u32 + 256);
    b.qp.rq().unwrap().post(wr_id, &[sge]).unwrap();
}

/// The 40-byte IPv6 header (RFC 8200; IBA 8.3.1's GRH has the same layout), built here
/// apart from the model: version 6, traffic class, flow label, payload length, next
/// header, hop limit, source and destination address.
pub fn ipv6_header(
    tclass: u8,
    flow: u32,
    paylen: u16,
    next: u8,
    hop: u8,
    src: &[u8; 16],
    dst: &[u8; 16],
) -> [u8; 40] {
    let mut h = [0u8; 40];
    h[0..4].copy_from_slice(&(6u32 << 28 | u32::from(tclass) << 20 | flow).to_be_bytes());
    h[4..6].copy_from_slice(&paylen.to_be_bytes());
    (h[6], h[7]) = (next, hop);
    h[8..24].copy_from_slice(src);
    h[24..40].copy_from_slice(dst);
    h
}

/// A send from `a` to `b` through `dest` fails with LOCAL_QP_OP_ERR: `a`'s QP goes to SQE
/// and `b`, with a receive posted, gets nothing.
pub fn expect_local_qp_op_err(a: &mut Side, b: &mut Side, dest: &mlx5_direct::UdDest<'_>) {
    post_recv(b, 1, 0);
    a.qp.sq()
        .post_ud(send(Data::Inline(&[1; 8]), SendOp::Send), dest)
        .unwrap();
    let c = poll_n(a, 1)[0];
    let Status::Error(e) = c.status else {
        panic!("{c:?}")
    };
    assert_eq!(e.syndrome(), Some(Syndrome::LocalQpOpErr));
    assert_eq!(a.qp.state(), QpState::Sqe);
    assert_empty(b);
}

/// RFC 1071 checksum of an IPv4 header, computed here apart from the model: the
/// complement of the ones' complement sum of its 16-bit words, the checksum field 0.
fn rfc1071(header: &[u8; 20]) -> u16 {
    let mut h = *header;
    h[10] = 0;
    h[11] = 0;
    let mut sum: u64 = 0;
    for i in (0..20).step_by(2) {
        sum += u64::from(h[i]) << 8 | u64::from(h[i + 1]);
    }
    while sum > 0xffff {
        sum = (sum >> 16) + (sum & 0xffff);
    }
    !(sum as u16)
}

/// The 20-byte IPv4 header (RFC 791) of a RoCE v2 datagram, built here apart from the
/// model: version 4, IHL 5, TOS `tos`, total length `len`, identification 0, DF, TTL
/// `ttl`, protocol 17 (UDP), the [`rfc1071`] checksum, `src` -> `dst`.
pub fn ipv4_header(tos: u8, len: u16, ttl: u8, src: [u8; 4], dst: [u8; 4]) -> [u8; 20] {
    let mut h = [0u8; 20];
    h[..10].copy_from_slice(&[0x45, tos, 0, 0, 0, 0, 0x40, 0, ttl, 17]);
    h[2..4].copy_from_slice(&len.to_be_bytes());
    h[12..16].copy_from_slice(&src);
    h[16..20].copy_from_slice(&dst);
    let sum = rfc1071(&h);
    h[10..12].copy_from_slice(&sum.to_be_bytes());
    h
}
