//! UD multicast groups ([`McastGroup`]): the MGID and MLID a UD QP attaches to
//! ([`Qp::attach_mcast`](crate::Qp::attach_mcast)) and a sender addresses, and the checks
//! the kernel makes of them (`ib_attach_mcast`, `rdma_is_multicast_addr`).

use std::net::{Ipv4Addr, Ipv6Addr};

/// The destination QPN of a datagram to a multicast group (IBA's `0xFFFFFF`): what
/// [`AddressHandle::mcast_dest`](crate::AddressHandle::mcast_dest) puts in the WQE.
pub const MCAST_QPN: u32 = 0xff_ffff;

/// A multicast group: its GID (MGID) and, on InfiniBand, its LID (MLID; RoCE ignores it).
/// On InfiniBand the subnet manager hands both out when a port joins (an SA MCMemberRecord
/// join, which this driver does not make: rdma_cm's `rdma_join_multicast` or the fabric's
/// configuration does); on RoCE the group is an IP multicast address.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct McastGroup {
    /// The group's GID: `ff00::/8`, or an IPv4-mapped address in 224.0.0.0/4.
    pub mgid: [u8; 16],
    /// The group's LID on InfiniBand (0xC000..=0xFFFE); 0 on RoCE.
    pub mlid: u16,
}

impl McastGroup {
    /// The RoCE group of IPv4 multicast address `addr`: its IPv4-mapped GID
    /// (`::ffff:a.b.c.d`, as rdma_cm's `cma_iboe_set_mgid` makes it), MLID 0. An address
    /// handle to it gets the MAC `01:00:5e` and the address's low 23 bits.
    pub fn ipv4(addr: Ipv4Addr) -> McastGroup {
        McastGroup {
            mgid: addr.to_ipv6_mapped().octets(),
            mlid: 0,
        }
    }

    /// The RoCE group of IPv6 multicast address `addr`: the address itself, MLID 0. An
    /// address handle to it gets the MAC `33:33` and the address's low 32 bits.
    pub fn ipv6(addr: Ipv6Addr) -> McastGroup {
        McastGroup {
            mgid: addr.octets(),
            mlid: 0,
        }
    }

    /// True if the MGID is a multicast address (`rdma_is_multicast_addr`): `ff00::/8`,
    /// or an IPv4-mapped address in 224.0.0.0/4.
    pub fn has_multicast_gid(&self) -> bool {
        let addr = Ipv6Addr::from(self.mgid);
        match addr.to_ipv4_mapped() {
            Some(v4) => v4.is_multicast(),
            None => addr.is_multicast(),
        }
    }

    /// True if the MLID is a multicast LID (`is_valid_mcast_lid`: 0xC000..=0xFFFE; 0xFFFF
    /// is the permissive LID).
    pub fn has_multicast_lid(&self) -> bool {
        (0xc000..=0xfffe).contains(&self.mlid)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ipv4_groups_are_ipv4_mapped_and_only_class_d_is_multicast() {
        let g = McastGroup::ipv4(Ipv4Addr::new(239, 1, 2, 3));
        assert_eq!(
            g.mgid,
            [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 239, 1, 2, 3]
        );
        assert!(g.has_multicast_gid());
        assert!(!McastGroup::ipv4(Ipv4Addr::new(10, 0, 0, 1)).has_multicast_gid());
        assert!(McastGroup::ipv6("ff0e::1".parse().unwrap()).has_multicast_gid());
        assert!(!McastGroup::ipv6("fe80::1".parse().unwrap()).has_multicast_gid());
        let lid = |mlid| McastGroup { mlid, ..g }.has_multicast_lid();
        assert_eq!(
            [0xbfff, 0xc000, 0xfffe, 0xffff].map(lid),
            [false, true, true, false]
        );
    }
}
