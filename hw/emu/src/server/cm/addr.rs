//! Socket addresses as `rdma_ucm` carries them (`sockaddr_in`, `sockaddr_in6`,
//! `sockaddr_ib` in a `sockaddr_storage`), the fabric's IP addresses, and the port spaces
//! (the kernel's `cma.c` bind lists: `cma_get_port`, `cma_use_port`, `cma_check_port`,
//! `cma_alloc_any_port`, `cma_port_is_unique`).

use crate::abi::ucma::{
    __kernel_sockaddr_storage, sockaddr_ib, sockaddr_in, sockaddr_in6, AF_IB, RDMA_IB_IP_PS_MASK,
    RDMA_IB_IP_PS_TCP, RDMA_IB_IP_PS_UDP, RDMA_IB_PS_IB, RDMA_PS_IB, RDMA_PS_IPOIB, RDMA_PS_TCP,
    RDMA_PS_UDP,
};
use crate::abi::{FromBytes, FromZeros, IntoBytes};

/// `AF_INET`, `AF_INET6` (the `sa_family_t` values).
pub(super) const AF_INET: u16 = libc::AF_INET as u16;
pub(super) const AF_INET6: u16 = libc::AF_INET6 as u16;

/// The first three bytes of the fabric's IPv4 subnet, `10.47.0.0/24`: NIC `i` (`mlx5_i`) has
/// `10.47.0.(i + 1)`.
pub const SUBNET: [u8; 3] = [10, 47, 0];

/// The most NICs a fabric has: one address each in [`SUBNET`].
pub const MAX_NICS: u32 = 254;

/// The IPv4 address of NIC `index` of a fabric: `10.47.0.(index + 1)`.
pub fn nic_ip(index: usize) -> [u8; 4] {
    [SUBNET[0], SUBNET[1], SUBNET[2], (index + 1) as u8]
}

/// Whether `ip` is a host address of [`SUBNET`] (not its network or broadcast address):
/// one a NIC has or a fabric with more NICs would have.
pub fn in_subnet(ip: [u8; 4]) -> bool {
    ip[..3] == SUBNET && ip[3] != 0 && ip[3] != 255
}

/// An address of an id (`route.addr.src_addr` / `dst_addr`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Addr {
    /// No family yet (a fresh id).
    None,
    /// `AF_INET`.
    In { ip: [u8; 4], port: u16 },
    /// `AF_INET6`.
    In6 {
        ip: [u8; 16],
        port: u16,
        flowinfo: u32,
        scope_id: u32,
    },
    /// `AF_IB`: a GID and a service id (all big-endian values as host integers).
    Ib {
        pkey: u16,
        flowinfo: u32,
        gid: [u8; 16],
        sid: u64,
        sid_mask: u64,
        scope_id: u64,
    },
}

impl Addr {
    /// The address at the start of `bytes` (a `sockaddr_storage`'s bytes): by its family;
    /// `None` for family 0, `Err(())` for a family the CM does not take.
    pub(super) fn parse(bytes: &[u8]) -> Result<Addr, ()> {
        let family = u16::from_ne_bytes([bytes[0], bytes[1]]);
        match family {
            0 => Ok(Addr::None),
            AF_INET => {
                let (a, _) = sockaddr_in::read_from_prefix(bytes).map_err(|_| ())?;
                Ok(Addr::In {
                    ip: a.sin_addr.to_ne_bytes(),
                    port: u16::from_be(a.sin_port),
                })
            }
            AF_INET6 => {
                let (a, _) = sockaddr_in6::read_from_prefix(bytes).map_err(|_| ())?;
                Ok(Addr::In6 {
                    ip: a.sin6_addr,
                    port: u16::from_be(a.sin6_port),
                    flowinfo: u32::from_be(a.sin6_flowinfo),
                    scope_id: a.sin6_scope_id,
                })
            }
            f if u32::from(f) == AF_IB => {
                let (a, _) = sockaddr_ib::read_from_prefix(bytes).map_err(|_| ())?;
                Ok(Addr::Ib {
                    pkey: u16::from_be(a.sib_pkey),
                    flowinfo: u32::from_be(a.sib_flowinfo),
                    gid: a.sib_addr,
                    sid: u64::from_be(a.sib_sid),
                    sid_mask: u64::from_be(a.sib_sid_mask),
                    scope_id: a.sib_scope_id,
                })
            }
            _ => Err(()),
        }
    }

    /// The family (`sa_family_t`; 0 for none).
    pub(super) fn family(&self) -> u16 {
        match self {
            Addr::None => 0,
            Addr::In { .. } => AF_INET,
            Addr::In6 { .. } => AF_INET6,
            Addr::Ib { .. } => AF_IB as u16,
        }
    }

    /// `rdma_addr_size`: the bytes of the family's sockaddr (0 for another family).
    pub(super) fn size(&self) -> usize {
        match self {
            Addr::None => 0,
            Addr::In { .. } => size_of::<sockaddr_in>(),
            Addr::In6 { .. } => size_of::<sockaddr_in6>(),
            Addr::Ib { .. } => size_of::<sockaddr_ib>(),
        }
    }

    /// The sockaddr's bytes ([`Addr::size`] of them; a fresh id's family-only zeros are
    /// one `sa_family_t`).
    pub(super) fn bytes(&self) -> Vec<u8> {
        match *self {
            Addr::None => vec![0; 2],
            Addr::In { ip, port } => sockaddr_in {
                sin_family: AF_INET,
                sin_port: port.to_be(),
                sin_addr: u32::from_ne_bytes(ip),
                __pad: [0; 8],
            }
            .as_bytes()
            .to_vec(),
            Addr::In6 {
                ip,
                port,
                flowinfo,
                scope_id,
            } => sockaddr_in6 {
                sin6_family: AF_INET6,
                sin6_port: port.to_be(),
                sin6_flowinfo: flowinfo.to_be(),
                sin6_addr: ip,
                sin6_scope_id: scope_id,
            }
            .as_bytes()
            .to_vec(),
            Addr::Ib {
                pkey,
                flowinfo,
                gid,
                sid,
                sid_mask,
                scope_id,
            } => sockaddr_ib {
                sib_family: AF_IB as u16,
                sib_pkey: pkey.to_be(),
                sib_flowinfo: flowinfo.to_be(),
                sib_addr: gid,
                sib_sid: sid.to_be(),
                sib_sid_mask: sid_mask.to_be(),
                sib_scope_id: scope_id,
            }
            .as_bytes()
            .to_vec(),
        }
    }

    /// The address in a `sockaddr_storage`.
    pub(super) fn storage(&self) -> __kernel_sockaddr_storage {
        let mut ss = __kernel_sockaddr_storage::new_zeroed();
        let b = self.bytes();
        ss.as_mut_bytes()[..b.len()].copy_from_slice(&b);
        ss
    }

    /// `cma_zero_addr`: the wildcard of its family.
    pub(super) fn is_zero(&self) -> bool {
        match self {
            Addr::None => false,
            Addr::In { ip, .. } => ip[0] == 0,
            Addr::In6 { ip, .. } => *ip == [0; 16],
            Addr::Ib { gid, .. } => *gid == [0; 16],
        }
    }

    /// `cma_loopback_addr`: 127/8, `::1`, the AF_IB loopback GID `::1`.
    pub(super) fn is_loopback(&self) -> bool {
        let mut one = [0u8; 16];
        one[15] = 1;
        match self {
            Addr::None => false,
            Addr::In { ip, .. } => ip[0] == 127,
            Addr::In6 { ip, .. } => *ip == one,
            Addr::Ib { gid, .. } => *gid == one,
        }
    }

    /// `cma_any_addr`: the wildcard or a loopback address (bound to no device).
    pub(super) fn is_any(&self) -> bool {
        self.is_zero() || self.is_loopback()
    }

    /// `cma_port`: the port (for AF_IB the service id's port bits under its mask).
    pub(super) fn port(&self) -> u16 {
        match *self {
            Addr::None => 0,
            Addr::In { port, .. } | Addr::In6 { port, .. } => port,
            Addr::Ib { sid, sid_mask, .. } => (sid & sid_mask) as u16,
        }
    }

    /// The same address on port `port` (`cma_bind_port`; AF_IB: the service id takes the
    /// port and a full mask).
    pub(super) fn with_port(self, p: u16) -> Addr {
        match self {
            Addr::In { ip, .. } => Addr::In { ip, port: p },
            Addr::In6 {
                ip,
                flowinfo,
                scope_id,
                ..
            } => Addr::In6 {
                ip,
                port: p,
                flowinfo,
                scope_id,
            },
            Addr::Ib {
                pkey,
                flowinfo,
                gid,
                sid,
                sid_mask,
                scope_id,
            } => Addr::Ib {
                pkey,
                flowinfo,
                gid,
                sid: (sid & sid_mask) | u64::from(p),
                sid_mask: u64::MAX,
                scope_id,
            },
            Addr::None => Addr::None,
        }
    }

    /// `cma_addr_cmp`: whether two addresses differ (the port aside).
    pub(super) fn differs(&self, other: &Addr) -> bool {
        match (self, other) {
            (Addr::In { ip: a, .. }, Addr::In { ip: b, .. }) => a != b,
            (
                Addr::In6 {
                    ip: a, scope_id: x, ..
                },
                Addr::In6 {
                    ip: b, scope_id: y, ..
                },
            ) => a != b || (b[0] == 0xfe && b[1] & 0xc0 == 0x80 && x != y),
            (Addr::Ib { gid: a, .. }, Addr::Ib { gid: b, .. }) => a != b,
            _ => true,
        }
    }

    /// The IPv4 address, if it is one.
    pub(super) fn ipv4(&self) -> Option<[u8; 4]> {
        match *self {
            Addr::In { ip, .. } => Some(ip),
            _ => None,
        }
    }

    /// The wildcard address of `family` (`cma_bind_addr` when no source is given), with
    /// the scope of `dst` for a link-local IPv6 destination, and the P_Key of an AF_IB one.
    pub(super) fn any_like(dst: &Addr) -> Addr {
        match *dst {
            Addr::In { .. } => Addr::In {
                ip: [0; 4],
                port: 0,
            },
            Addr::In6 { scope_id, .. } => Addr::In6 {
                ip: [0; 16],
                port: 0,
                flowinfo: 0,
                scope_id,
            },
            Addr::Ib { pkey, .. } => Addr::Ib {
                pkey,
                flowinfo: 0,
                gid: [0; 16],
                sid: 0,
                sid_mask: 0,
                scope_id: 0,
            },
            Addr::None => Addr::None,
        }
    }

    /// The loopback address of the family (`cma_set_loopback`), the port kept.
    pub(super) fn loopback(self) -> Addr {
        let mut one = [0u8; 16];
        one[15] = 1;
        match self {
            Addr::In { port, .. } => Addr::In {
                ip: [127, 0, 0, 1],
                port,
            },
            Addr::In6 {
                port,
                flowinfo,
                scope_id,
                ..
            } => Addr::In6 {
                ip: one,
                port,
                flowinfo,
                scope_id,
            },
            Addr::Ib {
                pkey,
                flowinfo,
                sid,
                sid_mask,
                scope_id,
                ..
            } => Addr::Ib {
                pkey,
                flowinfo,
                gid: one,
                sid,
                sid_mask,
                scope_id,
            },
            Addr::None => Addr::None,
        }
    }

    /// `rdma_ip2gid`: the GID RoCE uses for an IP address (IPv4-mapped for IPv4); an
    /// AF_IB address's GID as it is.
    pub(super) fn gid(&self) -> [u8; 16] {
        match *self {
            Addr::In { ip, .. } => {
                let mut g = [0u8; 16];
                g[10] = 0xff;
                g[11] = 0xff;
                g[12..].copy_from_slice(&ip);
                g
            }
            Addr::In6 { ip, .. } => ip,
            Addr::Ib { gid, .. } => gid,
            Addr::None => [0; 16],
        }
    }
}

/// `rdma_get_service_id`: an AF_IB address's service id, else the port space and port.
pub(super) fn service_id(ps: u16, addr: &Addr) -> u64 {
    match *addr {
        Addr::Ib { sid, .. } => sid,
        _ => (u64::from(ps) << 16) + u64::from(addr.port()),
    }
}

/// `ucma_get_qp_type`: the QP type of an id of port space `ps` (`IB_QPT_RC` 2, `UD` 4;
/// `RDMA_PS_IB` takes the one asked), or `EINVAL` for an unknown port space.
pub(super) fn qp_type_of(ps: u16, asked: u8) -> Result<u8, i32> {
    match u32::from(ps) {
        RDMA_PS_TCP => Ok(QPT_RC),
        RDMA_PS_UDP | RDMA_PS_IPOIB => Ok(QPT_UD),
        RDMA_PS_IB => Ok(asked),
        _ => Err(libc::EINVAL),
    }
}

/// `enum ib_qp_type` values the CM distinguishes.
pub(super) const QPT_RC: u8 = 2;
pub(super) const QPT_UD: u8 = 4;

/// The port space an id binds in (`cma_select_inet_ps`, and `cma_select_ib_ps` for AF_IB,
/// which also fixes the service id's port-space bits), or `None`
/// (`EPROTONOSUPPORT`).
pub(super) fn select_ps(ps: u16, addr: &mut Addr) -> Option<u16> {
    let Addr::Ib { sid, sid_mask, .. } = addr else {
        return match u32::from(ps) {
            RDMA_PS_TCP | RDMA_PS_UDP | RDMA_PS_IPOIB | RDMA_PS_IB => Some(ps),
            _ => None,
        };
    };
    let mask = *sid_mask & RDMA_IB_IP_PS_MASK;
    let s = *sid & mask;
    let ib = u32::from(ps) == RDMA_PS_IB;
    let (sid_ps, chosen) = if ib && s == RDMA_IB_PS_IB & mask {
        (RDMA_IB_PS_IB, RDMA_PS_IB)
    } else if (ib || u32::from(ps) == RDMA_PS_TCP) && s == RDMA_IB_IP_PS_TCP & mask {
        (RDMA_IB_IP_PS_TCP, RDMA_PS_TCP)
    } else if (ib || u32::from(ps) == RDMA_PS_UDP) && s == RDMA_IB_IP_PS_UDP & mask {
        (RDMA_IB_IP_PS_UDP, RDMA_PS_UDP)
    } else {
        return None;
    };
    let port = *sid & *sid_mask & 0xffff;
    *sid = sid_ps | port;
    *sid_mask |= RDMA_IB_IP_PS_MASK;
    Some(chosen as u16)
}

/// The ephemeral port range (`inet_get_local_port_range`): the host's
/// `net.ipv4.ip_local_port_range`, else the kernel's default 32768..=60999.
pub(super) fn local_port_range() -> (u16, u16) {
    std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|s| {
            let mut it = s.split_whitespace().map(|w| w.parse::<u16>().ok());
            Some((it.next()??, it.next()??))
        })
        .filter(|(lo, hi)| lo <= hi)
        .unwrap_or((32768, 60999))
}

/// Whether process `pid` may bind a port below 1024 (`CAP_NET_BIND_SERVICE` in its
/// effective set, `/proc/PID/status`).
pub(super) fn may_bind_privileged(pid: i32) -> bool {
    const CAP_NET_BIND_SERVICE: u32 = 10;
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            let line = s.lines().find(|l| l.starts_with("CapEff:"))?;
            u64::from_str_radix(line["CapEff:".len()..].trim(), 16).ok()
        })
        .is_some_and(|caps| caps & (1 << CAP_NET_BIND_SERVICE) != 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sockaddrs_round_trip_through_their_bytes() {
        let a = Addr::In {
            ip: [10, 47, 0, 1],
            port: 18515,
        };
        let b = a.bytes();
        assert_eq!(b.len(), 16);
        assert_eq!(&b[..2], &AF_INET.to_ne_bytes());
        assert_eq!(&b[2..4], &18515u16.to_be_bytes());
        assert_eq!(&b[4..8], &[10, 47, 0, 1]);
        assert_eq!(Addr::parse(a.storage().as_bytes()), Ok(a));
        let ib = Addr::Ib {
            pkey: 0xffff,
            flowinfo: 0,
            gid: [7; 16],
            sid: RDMA_IB_IP_PS_TCP | 5,
            sid_mask: u64::MAX,
            scope_id: 0,
        };
        assert_eq!(ib.size(), 48);
        assert_eq!(ib.port(), 5);
        assert_eq!(Addr::parse(ib.storage().as_bytes()), Ok(ib));
        assert_eq!(
            Addr::parse(&[1, 0, 0, 0]),
            Err(()),
            "AF_UNIX is no RDMA address"
        );
    }

    #[test]
    fn wildcards_loopbacks_and_gids_are_the_kernels() {
        let any = Addr::In {
            ip: [0; 4],
            port: 0,
        };
        assert!(any.is_zero() && any.is_any() && !any.is_loopback());
        let lo = any.loopback();
        assert_eq!(lo.ipv4(), Some([127, 0, 0, 1]));
        assert!(lo.is_any(), "a loopback address binds to no device");
        let ip = Addr::In {
            ip: [10, 47, 0, 2],
            port: 1,
        };
        assert!(!ip.is_any());
        let g = ip.gid();
        assert_eq!(&g[..12], &[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff]);
        assert_eq!(&g[12..], &[10, 47, 0, 2]);
        assert_eq!(service_id(RDMA_PS_TCP as u16, &ip), 0x0106_0001);
        assert!(ip.differs(&lo) && !ip.differs(&ip.with_port(9)));
    }

    #[test]
    fn af_ib_binds_select_their_port_space_from_the_service_id() {
        // librdmacm's probe for AF_IB support (cma.c `ucma_set_af_ib_support`).
        let mut a = Addr::Ib {
            pkey: 0,
            flowinfo: 0,
            gid: [0; 16],
            sid: RDMA_IB_IP_PS_TCP,
            sid_mask: RDMA_IB_IP_PS_MASK,
            scope_id: 0,
        };
        assert_eq!(
            select_ps(RDMA_PS_IB as u16, &mut a),
            Some(RDMA_PS_TCP as u16)
        );
        let mut udp_on_tcp = Addr::Ib {
            pkey: 0,
            flowinfo: 0,
            gid: [0; 16],
            sid: RDMA_IB_IP_PS_UDP,
            sid_mask: RDMA_IB_IP_PS_MASK,
            scope_id: 0,
        };
        assert_eq!(select_ps(RDMA_PS_TCP as u16, &mut udp_on_tcp), None);
        assert_eq!(
            select_ps(
                0x42,
                &mut Addr::In {
                    ip: [0; 4],
                    port: 0
                }
            ),
            None
        );
    }

    #[test]
    fn the_fabric_numbers_its_nics_from_one() {
        assert_eq!(nic_ip(0), [10, 47, 0, 1]);
        assert_eq!(nic_ip(1), [10, 47, 0, 2]);
        assert_eq!(qp_type_of(RDMA_PS_TCP as u16, 0), Ok(QPT_RC));
        assert_eq!(qp_type_of(RDMA_PS_UDP as u16, 0), Ok(QPT_UD));
        assert_eq!(
            qp_type_of(RDMA_PS_IB as u16, 3),
            Ok(3),
            "IB_QPT_UC as asked"
        );
        assert_eq!(qp_type_of(7, 0), Err(libc::EINVAL));
    }
}
