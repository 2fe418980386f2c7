//! What the raw Ethernet tests share (`tests/sim_raw.rs`): model NICs with an Ethernet
//! port, raw packet sides, and frames built here from the IETF layouts (Ethernet, 802.1Q,
//! IPv4, UDP, the RFC 1071 checksum), apart from the driver and the model.

use super::{poll_n, side_on, Side};
use mlx5_direct::backend::sim::{EthConfig, Fabric, LinkLayer, NicConfig, Sim};
use mlx5_direct::{Context, Data, EthWr, QpConfig, Transport};

/// A NIC with an Ethernet port and `eth`'s knobs.
pub fn eth_nic(eth: EthConfig) -> NicConfig {
    NicConfig {
        link_layer: LinkLayer::Ethernet,
        eth,
        ..NicConfig::default()
    }
}

pub fn raw_config() -> QpConfig {
    QpConfig {
        transport: Transport::Raw,
        max_inline: 256,
        ..QpConfig::default()
    }
}

/// A raw packet side in RTS on a NIC of `config` on `fabric` (its QP's send and receive
/// CQ the side's one CQ).
pub fn raw_side_on(fabric: &std::sync::Arc<Fabric>, config: NicConfig) -> Side {
    let ctx = Context::new(Sim::on_fabric(fabric, config));
    let mut s = side_on(ctx, &raw_config(), 256, 64);
    s.qp.activate_raw(1).unwrap();
    s
}

/// Two raw sides on one fabric, default Ethernet knobs.
pub fn raw_pair(fabric: &std::sync::Arc<Fabric>) -> (Side, Side) {
    let nic = eth_nic(EthConfig::default());
    (raw_side_on(fabric, nic.clone()), raw_side_on(fabric, nic))
}

pub fn mac(s: &Side) -> [u8; 6] {
    s.ctx.eth_caps().unwrap().mac
}

/// The port's Ethernet counters.
pub fn eth_stats(s: &Side) -> mlx5_direct::backend::sim::hw::EthStats {
    s.ctx.backend().nic().stats().eth
}

/// The RFC 1071 sum of `data` (folded, not complemented), from `init`.
pub fn sum16(init: u32, data: &[u8]) -> u32 {
    let mut sum = init;
    for pair in data.chunks(2) {
        let hi = u32::from(pair[0]) << 8;
        sum += hi | pair.get(1).map_or(0, |b| u32::from(*b));
    }
    while sum >> 16 != 0 {
        sum = (sum >> 16) + (sum & 0xffff);
    }
    sum
}

pub const IP_A: [u8; 4] = [10, 0, 0, 1];
pub const IP_B: [u8; 4] = [10, 0, 0, 2];

/// An Ethernet II frame to `dst` from `src` (802.1Q tag `vlan` when given) carrying an
/// IPv4 / UDP datagram from `IP_A`:`sport` to `IP_B`:`dport` with `payload`; with
/// `checksums`, the IPv4 header and UDP checksums right, else both 0.
pub fn udp_frame(
    dst: [u8; 6],
    src: [u8; 6],
    vlan: Option<u16>,
    sport: u16,
    dport: u16,
    payload: &[u8],
    checksums: bool,
) -> Vec<u8> {
    let mut f = Vec::new();
    f.extend_from_slice(&dst);
    f.extend_from_slice(&src);
    if let Some(tci) = vlan {
        f.extend_from_slice(&[0x81, 0x00]);
        f.extend_from_slice(&tci.to_be_bytes());
    }
    f.extend_from_slice(&[0x08, 0x00]);
    let ip_at = f.len();
    let udp_len = 8 + payload.len() as u16;
    let total = 20 + udp_len;
    f.extend_from_slice(&[0x45, 0, 0, 0, 0, 0, 0x40, 0, 64, 17, 0, 0]);
    f[ip_at + 2..ip_at + 4].copy_from_slice(&total.to_be_bytes());
    f.extend_from_slice(&IP_A);
    f.extend_from_slice(&IP_B);
    f.extend_from_slice(&sport.to_be_bytes());
    f.extend_from_slice(&dport.to_be_bytes());
    f.extend_from_slice(&udp_len.to_be_bytes());
    f.extend_from_slice(&[0, 0]);
    f.extend_from_slice(payload);
    if checksums {
        fix_checksums(&mut f, ip_at);
    }
    f
}

/// Writes the right IPv4 header and UDP checksums into the frame `f` whose IPv4 header
/// starts at `ip_at` (the UDP header after 20 bytes).
pub fn fix_checksums(f: &mut [u8], ip_at: usize) {
    f[ip_at + 10..ip_at + 12].fill(0);
    let ip = !(sum16(0, &f[ip_at..ip_at + 20]) as u16);
    f[ip_at + 10..ip_at + 12].copy_from_slice(&ip.to_be_bytes());
    let udp_at = ip_at + 20;
    let udp_len = u16::from_be_bytes([f[udp_at + 4], f[udp_at + 5]]);
    f[udp_at + 6..udp_at + 8].fill(0);
    let mut pseudo = Vec::new();
    pseudo.extend_from_slice(&f[ip_at + 12..ip_at + 20]);
    pseudo.extend_from_slice(&[0, 17]);
    pseudo.extend_from_slice(&udp_len.to_be_bytes());
    let sum = sum16(sum16(0, &pseudo), &f[udp_at..udp_at + udp_len as usize]);
    let udp = match !(sum as u16) {
        0 => 0xffff,
        s => s,
    };
    f[udp_at + 6..udp_at + 8].copy_from_slice(&udp.to_be_bytes());
}

/// Sends `frame` from `a`: its first `header` bytes inline in the Ethernet segment, the
/// rest gathered from `a`'s region at 0; then waits for `a`'s send completion.
pub fn send_frame(a: &mut Side, frame: &[u8], header: usize, tweak: impl FnOnce(&mut EthWr<'_>)) {
    a.mr.write(0, &frame[header..]);
    let sge = [a.mr.sge(0, (frame.len() - header) as u32)];
    let mut wr = EthWr::new(1, &frame[..header], Data::Sges(&sge));
    tweak(&mut wr);
    a.qp.sq().post_eth(&wr).unwrap();
    let c = poll_n(a, 1)[0];
    assert!(c.status.is_ok(), "{c:?}");
}

/// Posts a receive of 2048 bytes at `off` of `b`'s region.
pub fn post_recv(b: &mut Side, wr_id: u64, off: usize) {
    let sge = b.mr.sge(off, 2048);
    b.qp.rq().unwrap().post(wr_id, &[sge]).unwrap();
}

/// `len` bytes of `b`'s region at `off`.
pub fn bytes(b: &Side, off: usize, len: usize) -> Vec<u8> {
    let mut out = vec![0; len];
    b.mr.read(off, &mut out);
    out
}
