//! TCP segmentation offload (`MLX5_OPCODE_TSO`): the frame a TSO WQE describes (its inline
//! header, then its payload) cut into frames of at most `mss` payload bytes, each with the
//! header rewritten as the segment needs it. What a ConnectX writes per segment is not
//! public; the model does what Linux requires of every device that advertises
//! `NETIF_F_TSO` / `NETIF_F_GSO_UDP_L4` (mlx5e does), which is what its own software
//! segmentation does (`inet_gso_segment`, `ipv6_gso_segment`, `tcp_gso_segment`,
//! `__udp_gso_segment`): the IPv4 total length and identification (the template's plus the
//! segment's index), the IPv6 payload length, the TCP sequence number (plus `mss` per
//! segment), CWR only in the first segment, FIN and PSH only in the last, the UDP length;
//! then the checksums the Ethernet segment's `cs_flags` asks for.

use crate::eth::frame::{
    fill_l3, fill_l4, Headers, ETHERTYPE_IPV4, ETHERTYPE_IPV6, ETH_HLEN, PROTO_TCP, PROTO_UDP,
    TPID_CVLAN, UDP_HLEN, VLAN_HLEN,
};
use crate::eth::seg::{CS_L3, CS_L4};

/// TCP flags rewritten per segment.
const TCP_FIN: u8 = 0x01;
const TCP_PSH: u8 = 0x08;
const TCP_CWR: u8 = 0x80;

/// Where the headers of a TSO template are, read from the header bytes alone (the IP
/// lengths of a template do not describe the payload).
struct Layout {
    l3_off: usize,
    v4: bool,
    l4_off: usize,
    tcp: bool,
    /// The end of the transport header: where the payload starts.
    end: usize,
}

fn layout(f: &[u8]) -> Option<Layout> {
    let be16 = |at: usize| u16::from_be_bytes([f[at], f[at + 1]]);
    let mut off = 12;
    if f.len() >= ETH_HLEN + VLAN_HLEN && be16(off) == TPID_CVLAN {
        off += VLAN_HLEN;
    }
    let l3_off = off + 2;
    let (v4, l4_off, proto) = match be16(off) {
        ETHERTYPE_IPV4 if f.len() >= l3_off + 20 && f[l3_off] >> 4 == 4 => {
            let ihl = usize::from(f[l3_off] & 0xf) * 4;
            (true, l3_off + ihl.max(20), f[l3_off + 9])
        }
        ETHERTYPE_IPV6 if f.len() >= l3_off + 40 && f[l3_off] >> 4 == 6 => {
            (false, l3_off + 40, f[l3_off + 6])
        }
        _ => return None,
    };
    let (tcp, end) = match proto {
        PROTO_TCP if f.len() >= l4_off + 20 => {
            let hlen = usize::from(f[l4_off + 12] >> 4) * 4;
            (true, l4_off + hlen.max(20))
        }
        PROTO_UDP => (false, l4_off + UDP_HLEN),
        _ => return None,
    };
    Some(Layout {
        l3_off,
        v4,
        l4_off,
        tcp,
        end,
    })
}

/// Cut `frame` into segments of at most `mss` payload bytes. `inline` is how many of its
/// first bytes the WQE carried inline: the headers (Ethernet with at most one VLAN tag,
/// IPv4 or IPv6 without extension headers, TCP or UDP) must lie within them, else `None`
/// (the model fails the WQE: the hardware parses its headers from the inline part, and
/// what it does otherwise is not public). A frame with no payload is one segment.
pub(crate) fn segment(
    frame: &[u8],
    inline: usize,
    mss: usize,
    cs_flags: u8,
) -> Option<Vec<Vec<u8>>> {
    let l = layout(frame).filter(|l| l.end <= inline && l.end <= frame.len())?;
    let (hdr, payload) = frame.split_at(l.end);
    let count = payload.len().div_ceil(mss).max(1);
    let be16 = |at: usize| u16::from_be_bytes([hdr[at], hdr[at + 1]]);
    let id = be16(l.l3_off + 4);
    let seq = u32::from_be_bytes(hdr[l.l4_off + 4..l.l4_off + 8].try_into().expect("4"));
    let mut out = Vec::with_capacity(count);
    for i in 0..count {
        let chunk = payload
            .get(i * mss..((i + 1) * mss).min(payload.len()))
            .unwrap_or(&[]);
        let mut f = Vec::with_capacity(hdr.len() + chunk.len());
        f.extend_from_slice(hdr);
        f.extend_from_slice(chunk);
        let ip_len = (l.end - l.l3_off + chunk.len()) as u16;
        if l.v4 {
            f[l.l3_off + 2..l.l3_off + 4].copy_from_slice(&ip_len.to_be_bytes());
            let id = id.wrapping_add(i as u16);
            f[l.l3_off + 4..l.l3_off + 6].copy_from_slice(&id.to_be_bytes());
        } else {
            let len = ip_len - 40;
            f[l.l3_off + 4..l.l3_off + 6].copy_from_slice(&len.to_be_bytes());
        }
        if l.tcp {
            let s = seq.wrapping_add((i * mss) as u32);
            f[l.l4_off + 4..l.l4_off + 8].copy_from_slice(&s.to_be_bytes());
            let flags = &mut f[l.l4_off + 13];
            if i > 0 {
                *flags &= !TCP_CWR;
            }
            if i + 1 < count {
                *flags &= !(TCP_FIN | TCP_PSH);
            }
        } else {
            let len = (UDP_HLEN + chunk.len()) as u16;
            f[l.l4_off + 4..l.l4_off + 6].copy_from_slice(&len.to_be_bytes());
        }
        let h = Headers::parse(&f);
        if cs_flags & CS_L3 != 0 {
            fill_l3(&mut f, &h);
        }
        if cs_flags & CS_L4 != 0 {
            fill_l4(&mut f, &h);
        }
        out.push(f);
    }
    Some(out)
}
