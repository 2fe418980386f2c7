//! Ethernet frames as the NIC parses them: the L2 header with one VLAN tag, IPv4 or IPv6,
//! TCP or UDP; the Internet checksums the NIC computes on send (`cs_flags`) and verifies on
//! receive (the CQE's `hds_ip_ext`); VLAN insertion and the MAC's padding of short frames.
//!
//! Byte layouts are the IEEE and IETF ones: Ethernet II (14 bytes), IEEE 802.1Q (TPID
//! 0x8100 or 0x88A8 and a 16-bit TCI), IPv4 (RFC 791), IPv6 (RFC 8200, no extension
//! header parsed), TCP (RFC 9293), UDP (RFC 768); the checksum is RFC 1071's one's
//! complement sum over the pseudo-header of RFC 9293 §3.1 / RFC 8200 §8.1.

/// The Ethernet header (`ETH_HLEN`).
pub(crate) const ETH_HLEN: usize = 14;
/// One VLAN tag (`VLAN_HLEN`).
pub(crate) const VLAN_HLEN: usize = 4;
/// The shortest frame the MAC sends, without FCS (`ETH_ZLEN`): shorter ones are padded
/// with zeros (IEEE 802.3 clause 4.2.3.3, 64 bytes with the FCS).
pub(crate) const ETH_ZLEN: usize = 60;
/// TPID of a customer VLAN tag (IEEE 802.1Q).
pub(crate) const TPID_CVLAN: u16 = 0x8100;
/// TPID of a service VLAN tag (IEEE 802.1ad).
pub(crate) const TPID_SVLAN: u16 = 0x88a8;
/// EtherType of IPv4.
pub(crate) const ETHERTYPE_IPV4: u16 = 0x0800;
/// EtherType of IPv6.
pub(crate) const ETHERTYPE_IPV6: u16 = 0x86dd;
/// IP protocol numbers.
pub(crate) const PROTO_TCP: u8 = 6;
/// IP protocol number of UDP.
pub(crate) const PROTO_UDP: u8 = 17;
/// The IPv6 header.
const IPV6_HLEN: usize = 40;
/// The UDP header.
pub(crate) const UDP_HLEN: usize = 8;
/// The shortest TCP header.
const TCP_MIN_HLEN: usize = 20;
/// IPv4 flags and fragment offset: More Fragments and the 13-bit offset.
const IPV4_FRAG_MASK: u16 = 0x3fff;
/// The TCP ACK flag (byte 13 of the header).
pub(crate) const TCP_ACK: u8 = 0x10;

fn be16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}

fn put16(b: &mut [u8], at: usize, v: u16) {
    b[at..at + 2].copy_from_slice(&v.to_be_bytes());
}

/// The network header of a frame.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum L3 {
    /// Neither IPv4 nor IPv6, or too short to be either.
    #[default]
    None,
    /// IPv4: header length, addresses, protocol, TOS, the total length, and whether this
    /// is a fragment (MF set or a non-zero offset).
    V4 {
        ihl: usize,
        src: [u8; 4],
        dst: [u8; 4],
        proto: u8,
        tos: u8,
        total: usize,
        fragment: bool,
    },
    /// IPv6: addresses, next header, traffic class, flow label, payload length.
    V6 {
        src: [u8; 16],
        dst: [u8; 16],
        next: u8,
        tclass: u8,
        flow_label: u32,
        payload: usize,
    },
}

/// The transport header of a frame.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum L4 {
    /// Neither TCP nor UDP, a fragment, or too short.
    #[default]
    None,
    /// TCP: header length, ports, flags (byte 13).
    Tcp {
        hlen: usize,
        sport: u16,
        dport: u16,
        flags: u8,
    },
    /// UDP: ports.
    Udp { sport: u16, dport: u16 },
}

/// A frame's headers as the NIC's parser sees them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Headers {
    pub(crate) dmac: [u8; 6],
    pub(crate) smac: [u8; 6],
    /// The TCI of a customer VLAN tag (TPID 0x8100) right after the MACs.
    pub(crate) vlan: Option<u16>,
    /// The EtherType after the tag.
    pub(crate) ether_type: u16,
    /// Where the network header starts.
    pub(crate) l3_off: usize,
    pub(crate) l3: L3,
    /// Where the transport header starts.
    pub(crate) l4_off: usize,
    pub(crate) l4: L4,
    /// The transport segment's length (header and payload) by the IP header's lengths.
    pub(crate) l4_len: usize,
}

impl Headers {
    /// Parse `f` (at least [`ETH_HLEN`] bytes: the MAC pads shorter frames).
    pub(crate) fn parse(f: &[u8]) -> Headers {
        let mut h = Headers::default();
        if f.len() < ETH_HLEN {
            return h;
        }
        h.dmac.copy_from_slice(&f[0..6]);
        h.smac.copy_from_slice(&f[6..12]);
        let mut off = 12;
        if be16(f, off) == TPID_CVLAN && f.len() >= ETH_HLEN + VLAN_HLEN {
            h.vlan = Some(be16(f, off + 2));
            off += VLAN_HLEN;
        }
        h.ether_type = be16(f, off);
        h.l3_off = off + 2;
        let l3 = &f[h.l3_off..];
        let (l4_off, proto, l4_len) = match h.ether_type {
            ETHERTYPE_IPV4 if l3.len() >= 20 && l3[0] >> 4 == 4 => {
                let ihl = usize::from(l3[0] & 0xf) * 4;
                let total = usize::from(be16(l3, 2));
                if ihl < 20 || total < ihl || total > l3.len() {
                    return h;
                }
                let fragment = be16(l3, 6) & IPV4_FRAG_MASK != 0;
                h.l3 = L3::V4 {
                    ihl,
                    src: l3[12..16].try_into().expect("4 bytes"),
                    dst: l3[16..20].try_into().expect("4 bytes"),
                    proto: l3[9],
                    tos: l3[1],
                    total,
                    fragment,
                };
                if fragment {
                    return h;
                }
                (h.l3_off + ihl, l3[9], total - ihl)
            }
            ETHERTYPE_IPV6 if l3.len() >= IPV6_HLEN && l3[0] >> 4 == 6 => {
                let payload = usize::from(be16(l3, 4));
                if IPV6_HLEN + payload > l3.len() {
                    return h;
                }
                let w0 = u32::from_be_bytes(l3[0..4].try_into().expect("4 bytes"));
                h.l3 = L3::V6 {
                    src: l3[8..24].try_into().expect("16 bytes"),
                    dst: l3[24..40].try_into().expect("16 bytes"),
                    next: l3[6],
                    tclass: (w0 >> 20) as u8,
                    flow_label: w0 & 0xf_ffff,
                    payload,
                };
                (h.l3_off + IPV6_HLEN, l3[6], payload)
            }
            _ => return h,
        };
        h.l4_off = l4_off;
        h.l4_len = l4_len;
        let l4 = &f[l4_off..l4_off + l4_len];
        h.l4 = match proto {
            PROTO_TCP if l4.len() >= TCP_MIN_HLEN => {
                let hlen = usize::from(l4[12] >> 4) * 4;
                if hlen < TCP_MIN_HLEN || hlen > l4.len() {
                    return h;
                }
                L4::Tcp {
                    hlen,
                    sport: be16(l4, 0),
                    dport: be16(l4, 2),
                    flags: l4[13],
                }
            }
            PROTO_UDP if l4.len() >= UDP_HLEN => L4::Udp {
                sport: be16(l4, 0),
                dport: be16(l4, 2),
            },
            _ => L4::None,
        };
        h
    }
}

/// The one's complement sum of `data` as 16-bit big-endian words (RFC 1071), added to
/// `sum`, not folded.
fn add(mut sum: u32, data: &[u8]) -> u32 {
    let mut words = data.chunks_exact(2);
    for w in &mut words {
        sum += u32::from(u16::from_be_bytes([w[0], w[1]]));
    }
    if let [last] = words.remainder() {
        sum += u32::from(*last) << 8;
    }
    sum
}

/// `sum` folded to 16 bits.
fn fold(mut sum: u32) -> u16 {
    while sum >> 16 != 0 {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    sum as u16
}

/// The pseudo-header sum of the transport segment of `h` (which has an L4 header).
fn pseudo(h: &Headers, proto: u8) -> u32 {
    let len = h.l4_len as u32;
    match h.l3 {
        L3::V4 { src, dst, .. } => add(add(0, &src), &dst) + u32::from(proto) + len,
        L3::V6 { src, dst, .. } => {
            add(add(0, &src), &dst) + (len >> 16) + (len & 0xffff) + u32::from(proto)
        }
        L3::None => 0,
    }
}

/// Whether the IPv4 header of `f` (parsed as `h`) has a correct checksum; IPv6 has none,
/// so its header is correct when it parsed.
pub(crate) fn l3_ok(f: &[u8], h: &Headers) -> bool {
    match h.l3 {
        L3::V4 { ihl, .. } => fold(add(0, &f[h.l3_off..h.l3_off + ihl])) == 0xffff,
        L3::V6 { .. } => true,
        L3::None => false,
    }
}

/// Whether the TCP or UDP checksum of `f` (parsed as `h`) is correct. A zero UDP checksum
/// over IPv4 means none was computed (RFC 768) and counts as correct; over IPv6 it is
/// invalid (RFC 8200 §8.1).
pub(crate) fn l4_ok(f: &[u8], h: &Headers) -> bool {
    let seg = &f[h.l4_off..h.l4_off + h.l4_len];
    let proto = match h.l4 {
        L4::Tcp { .. } => PROTO_TCP,
        L4::Udp { .. } if be16(seg, 6) == 0 => return matches!(h.l3, L3::V4 { .. }),
        L4::Udp { .. } => PROTO_UDP,
        L4::None => return false,
    };
    fold(add(pseudo(h, proto), seg)) == 0xffff
}

/// Write the IPv4 header checksum of `f` (parsed as `h`); nothing for IPv6 or no IP.
pub(crate) fn fill_l3(f: &mut [u8], h: &Headers) {
    if let L3::V4 { ihl, .. } = h.l3 {
        let at = h.l3_off;
        put16(f, at + 10, 0);
        let sum = !fold(add(0, &f[at..at + ihl]));
        put16(f, at + 10, sum);
    }
}

/// Write the TCP or UDP checksum of `f` (parsed as `h`); nothing without one. A UDP
/// checksum that comes out 0 is sent as 0xFFFF (RFC 768).
pub(crate) fn fill_l4(f: &mut [u8], h: &Headers) {
    let (proto, at) = match h.l4 {
        L4::Tcp { .. } => (PROTO_TCP, 16),
        L4::Udp { .. } => (PROTO_UDP, 6),
        L4::None => return,
    };
    let seg = h.l4_off..h.l4_off + h.l4_len;
    put16(f, h.l4_off + at, 0);
    let mut sum = !fold(add(pseudo(h, proto), &f[seg]));
    if proto == PROTO_UDP && sum == 0 {
        sum = 0xffff;
    }
    put16(f, h.l4_off + at, sum);
}

/// `f` with a VLAN tag (`tpid`, `tci`) inserted after the MAC addresses (IEEE 802.1Q
/// §9: the tag follows the source address). `f` has at least the 12 MAC bytes (the
/// caller checks).
pub(crate) fn insert_vlan(f: &[u8], tpid: u16, tci: u16) -> Vec<u8> {
    let mut out = Vec::with_capacity(f.len() + VLAN_HLEN);
    out.extend_from_slice(&f[..12]);
    out.extend_from_slice(&tpid.to_be_bytes());
    out.extend_from_slice(&tci.to_be_bytes());
    out.extend_from_slice(&f[12..]);
    out
}

/// Pad `f` with zeros to the shortest frame the MAC sends ([`ETH_ZLEN`]).
pub(crate) fn pad(f: &mut Vec<u8>) {
    if f.len() < ETH_ZLEN {
        f.resize(ETH_ZLEN, 0);
    }
}

/// Whether `mac` is a group (multicast or broadcast) address: bit 0 of its first byte.
pub(crate) fn is_group(mac: &[u8; 6]) -> bool {
    mac[0] & 1 != 0
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The example of RFC 1071 §3: the words 0001 f203 f4f5 f6f7 sum to 0x220d (folded
    /// 0xddf2 before the complement).
    #[test]
    fn rfc1071_sum() {
        let data = [0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7];
        assert_eq!(fold(add(0, &data)), 0xddf2);
    }

    /// The IPv4 header of the Wikipedia "IPv4 header checksum" example (45 00 00 73 00 00
    /// 40 00 40 11 .. c0 a8 00 01 c0 a8 00 c7) gets the checksum 0xb861.
    #[test]
    fn ipv4_header_checksum() {
        let mut f = vec![0u8; ETH_HLEN];
        f[12..14].copy_from_slice(&ETHERTYPE_IPV4.to_be_bytes());
        f.extend_from_slice(&[
            0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0x00, 0x00, 0xc0, 0xa8,
            0x00, 0x01, 0xc0, 0xa8, 0x00, 0xc7,
        ]);
        f.resize(ETH_HLEN + 0x73, 0);
        let h = Headers::parse(&f);
        assert!(!l3_ok(&f, &h));
        fill_l3(&mut f, &h);
        assert_eq!(&f[ETH_HLEN + 10..ETH_HLEN + 12], &[0xb8, 0x61]);
        assert!(l3_ok(&f, &h));
    }
}
