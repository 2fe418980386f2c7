//! Receive-side scaling of an RSS QP: the Toeplitz hash of the fields its `RxHash` selects,
//! which picks the work queue from the indirection table and goes into the receive CQE
//! (`rss_hash_result`, bytes 12..16, and `rss_hash_type`, byte 16).
//!
//! The hash is Microsoft's Toeplitz hash ("RSS hashing functions", Windows driver docs:
//! the input is the source address, the destination address, the source port, the
//! destination port, each present only when selected; each set input bit XORs in the 32
//! key bits starting at its position). The TIR mlx5 builds for an RSS QP is not symmetric
//! on current kernels (`create_rss_raw_qp_tir` in drivers/infiniband/hw/mlx5/qp.c no longer
//! sets `rx_hash_symmetric`, which older ones did). The hash type follows the kernel's
//! `CQE_RSS_HTYPE_IP` (bits 3..2: 1 IPv4, 2 IPv6) and `CQE_RSS_HTYPE_L4` (bits 7..6: 1 TCP,
//! 2 UDP), include/linux/mlx5/device.h.

use crate::eth::frame::{Headers, L3, L4};
use crate::types::{HashFields, RxHash};

/// The IPv4 fields.
const V4: HashFields = HashFields(HashFields::SRC_IPV4.0 | HashFields::DST_IPV4.0);
/// The IPv6 fields.
const V6: HashFields = HashFields(HashFields::SRC_IPV6.0 | HashFields::DST_IPV6.0);
/// The TCP fields.
const TCP: HashFields = HashFields(HashFields::SRC_PORT_TCP.0 | HashFields::DST_PORT_TCP.0);
/// The UDP fields.
const UDP: HashFields = HashFields(HashFields::SRC_PORT_UDP.0 | HashFields::DST_PORT_UDP.0);
/// Every field mlx5 hashes on (no IPsec SPI, no inner headers).
const ALL: HashFields = HashFields(V4.0 | V6.0 | TCP.0 | UDP.0);

/// Why the kernel refuses a hash (`create_rss_raw_qp_tir`), or `None`: fields mlx5 does not
/// take, IPv4 and IPv6 fields together, TCP and UDP ports together.
pub(crate) fn refusal(fields: HashFields) -> Option<&'static str> {
    if fields.0 & !ALL.0 != 0 {
        Some("a hash field mlx5 does not take (IPsec SPI, inner headers)")
    } else if fields.intersects(V4) && fields.intersects(V6) {
        Some("IPv4 and IPv6 hash fields together")
    } else if fields.intersects(TCP) && fields.intersects(UDP) {
        Some("TCP and UDP hash fields together")
    } else {
        None
    }
}

/// The Toeplitz hash of `input` under `key`.
pub(crate) fn toeplitz(key: &[u8; 40], input: &[u8]) -> u32 {
    let bit = |i: usize| key.get(i / 8).is_some_and(|b| b & (0x80 >> (i % 8)) != 0);
    let mut window = u32::from_be_bytes(key[..4].try_into().expect("4 bytes"));
    let mut hash = 0;
    for (n, byte) in input.iter().enumerate() {
        for b in 0..8 {
            if byte & (0x80 >> b) != 0 {
                hash ^= window;
            }
            window = window << 1 | u32::from(bit(32 + n * 8 + b));
        }
    }
    hash
}

/// The hash of a frame (headers `h`) under `cfg`, and its `rss_hash_type`. A frame of
/// another network or transport protocol than the fields select hashes nothing: 0, type 0
/// (what the TIR's field selector does with such a frame is not public).
pub(crate) fn hash(cfg: &RxHash, h: &Headers) -> (u32, u8) {
    let f = cfg.fields;
    let (v4, v6) = (f.intersects(V4), f.intersects(V6));
    let (tcp, udp) = (f.intersects(TCP), f.intersects(UDP));
    let mut input = Vec::with_capacity(36);
    let mut take = |field: HashFields, bytes: &[u8]| {
        if f.contains(field) {
            input.extend_from_slice(bytes);
        }
    };
    let l3 = match h.l3 {
        L3::V4 { src, dst, .. } if v4 => {
            take(HashFields::SRC_IPV4, &src);
            take(HashFields::DST_IPV4, &dst);
            1
        }
        L3::V6 { src, dst, .. } if v6 => {
            take(HashFields::SRC_IPV6, &src);
            take(HashFields::DST_IPV6, &dst);
            2
        }
        _ if v4 || v6 => return (0, 0),
        _ => 0,
    };
    let l4 = match h.l4 {
        L4::Tcp { sport, dport, .. } if tcp => {
            take(HashFields::SRC_PORT_TCP, &sport.to_be_bytes());
            take(HashFields::DST_PORT_TCP, &dport.to_be_bytes());
            1
        }
        L4::Udp { sport, dport } if udp => {
            take(HashFields::SRC_PORT_UDP, &sport.to_be_bytes());
            take(HashFields::DST_PORT_UDP, &dport.to_be_bytes());
            2
        }
        _ if tcp || udp => return (0, 0),
        _ => 0,
    };
    (toeplitz(&cfg.key, &input), l3 << 2 | l4 << 6)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Microsoft's verification key and its first IPv4 example ("Verifying the RSS Hash
    /// Calculation"): destination 161.142.100.80:1766, source 66.9.149.187:2794; hash over
    /// the addresses 0x323e8fc2, with the TCP ports 0x51ccc178.
    #[test]
    fn microsoft_verification_vector() {
        let key: [u8; 40] = [
            0x6d, 0x5a, 0x56, 0xda, 0x25, 0x5b, 0x0e, 0xc2, 0x41, 0x67, 0x25, 0x3d, 0x43, 0xa3,
            0x8f, 0xb0, 0xd0, 0xca, 0x2b, 0xcb, 0xae, 0x7b, 0x30, 0xb4, 0x77, 0xcb, 0x2d, 0xa3,
            0x80, 0x30, 0xf2, 0x0c, 0x6a, 0x42, 0xb7, 0x3b, 0xbe, 0xac, 0x01, 0xfa,
        ];
        let addrs = [66, 9, 149, 187, 161, 142, 100, 80];
        assert_eq!(toeplitz(&key, &addrs), 0x323e_8fc2);
        let mut with_ports = addrs.to_vec();
        with_ports.extend_from_slice(&2794u16.to_be_bytes());
        with_ports.extend_from_slice(&1766u16.to_be_bytes());
        assert_eq!(toeplitz(&key, &with_ports), 0x51cc_c178);
    }
}
