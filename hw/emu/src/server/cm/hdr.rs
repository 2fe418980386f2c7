//! The CM header an IP-addressed REQ carries in its private data (cma.c `struct
//! cma_hdr`, `cma_format_hdr`, `cma_save_ip_info`) and the listener match it decides
//! (`cma_match_private_data`).

use super::addr::Addr;
use super::Id;
use crate::abi::ucma::not_in_headers::CMA_HDR_SIZE;

/// `cma_user_data_offset`: an IP-addressed REQ carries the CM header first.
pub(super) fn user_data_offset(src: &Addr) -> usize {
    match src {
        Addr::Ib { .. } => 0,
        _ => CMA_HDR_SIZE,
    }
}

/// `cma_format_hdr`: version 0, the IP version, the source port, both addresses.
pub(super) fn cma_hdr(src: &Addr, dst: &Addr) -> [u8; CMA_HDR_SIZE] {
    let mut h = [0u8; CMA_HDR_SIZE];
    match (src, dst) {
        (Addr::In { ip: s, port }, Addr::In { ip: d, .. }) => {
            h[1] = 4 << 4;
            h[2..4].copy_from_slice(&port.to_be_bytes());
            h[16..20].copy_from_slice(s);
            h[32..36].copy_from_slice(d);
        }
        (Addr::In6 { ip: s, port, .. }, Addr::In6 { ip: d, .. }) => {
            h[1] = 6 << 4;
            h[2..4].copy_from_slice(&port.to_be_bytes());
            h[4..20].copy_from_slice(s);
            h[20..36].copy_from_slice(d);
        }
        _ => {}
    }
    h
}

/// `cma_save_ip_info`: the requester's and the destination's addresses of an IP REQ
/// (`Ok(None)`: AF_IB, no header), `EINVAL` for a header of another version.
pub(super) fn parse_cma_hdr(p: &[u8]) -> Result<Option<(Addr, Addr)>, i32> {
    if p[0] != 0 {
        return Err(libc::EINVAL);
    }
    let port = u16::from_be_bytes([p[2], p[3]]);
    match p[1] >> 4 {
        4 => {
            let ip = |o: usize| [p[o], p[o + 1], p[o + 2], p[o + 3]];
            Ok(Some((
                Addr::In { ip: ip(16), port },
                Addr::In {
                    ip: ip(32),
                    port: 0,
                },
            )))
        }
        6 => {
            let ip = |o: usize| -> [u8; 16] { p[o..o + 16].try_into().expect("16 bytes") };
            let a = |ip, port| Addr::In6 {
                ip,
                port,
                flowinfo: 0,
                scope_id: 0,
            };
            Ok(Some((a(ip(4), port), a(ip(20), 0))))
        }
        _ => Ok(None),
    }
}

/// `cma_match_private_data`: whether listener `l` takes a REQ for `dst`.
pub(super) fn match_private_data(l: &Id, dst: Option<&Addr>) -> bool {
    let any = l.src.is_any();
    if any && !l.afonly {
        return true;
    }
    match (&l.src, dst) {
        (Addr::Ib { .. }, _) => true,
        (Addr::In { .. }, Some(d @ Addr::In { .. })) => any || !l.src.differs(d),
        (Addr::In6 { .. }, Some(d @ Addr::In6 { .. })) => any || !l.src.differs(d),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::ucma::not_in_headers::IB_CM_REQ_PRIVATE_DATA_SIZE;

    #[test]
    fn the_cm_header_carries_both_addresses_and_the_source_port() {
        let src = Addr::In {
            ip: [10, 47, 0, 2],
            port: 40000,
        };
        let dst = Addr::In {
            ip: [10, 47, 0, 1],
            port: 18515,
        };
        let h = cma_hdr(&src, &dst);
        assert_eq!(&h[..4], &[0, 0x40, 0x9c, 0x40]);
        assert_eq!(&h[16..20], &[10, 47, 0, 2]);
        assert_eq!(&h[32..36], &[10, 47, 0, 1]);
        let mut req = [0u8; IB_CM_REQ_PRIVATE_DATA_SIZE];
        req[..CMA_HDR_SIZE].copy_from_slice(&h);
        let (s, d) = parse_cma_hdr(&req).unwrap().unwrap();
        assert_eq!(s, src);
        assert_eq!(d.ipv4(), Some([10, 47, 0, 1]));
        req[0] = 1;
        assert_eq!(parse_cma_hdr(&req), Err(libc::EINVAL), "CMA_VERSION is 0");
    }
}
