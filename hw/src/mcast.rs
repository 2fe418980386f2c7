//! UD multicast (docs/model.md, "UD multicast"): which datagrams are multicast, and the QPs
//! of the fabric one reaches. `ud` lands the datagram at each of them as it lands a
//! unicast one.
//!
//! * A datagram is multicast when its address vector names QP 0xFFFFFF (IBA's multicast
//!   QPN, `IB_MULTICAST_QPN`; rxe's `rxe_rcv` takes exactly those packets as multicast),
//!   carries a global route whose DGID is a multicast address (`rdma_is_multicast_addr`:
//!   `ff00::/8`, or an IPv4-mapped address in 224.0.0.0/4), and on InfiniBand goes to a
//!   multicast LID (0xC000..=0xFFFE, the range the kernel's `is_valid_mcast_lid` takes).
//!   One naming only some of these is dropped at the sender (`Stats::ud_unroutable`):
//!   rxe drops a multicast QPN without a GRH ("no grh for mcast qpn").
//! * Groups are keyed by MGID, as the device's table is (`ATTACH_TO_MCG` takes the MGID
//!   and the QPN: the kernel's `mlx5_cmd_attach_mcg`); the fabric forwards by group to the
//!   ports `McastConfig::join` says, the sender's own NIC takes it only by loopback.

use crate::state::World;
use crate::types::{McastJoin, QpState, Transport};

/// IBA's multicast QPN: the DestQP of every multicast packet.
pub(crate) const MULTICAST_QPN: u32 = 0xff_ffff;
/// The first multicast LID (`IB_MULTICAST_LID_BASE`).
const FIRST_MLID: u16 = 0xc000;
/// The permissive LID, which is no multicast LID (`IB_LID_PERMISSIVE`).
const PERMISSIVE_LID: u16 = 0xffff;

/// `rdma_is_multicast_addr` (include/rdma/ib_addr.h): an IPv6 multicast address, or an
/// IPv4-mapped one in 224.0.0.0/4 (`ipv4_is_multicast`).
pub(crate) fn is_mcast_gid(gid: &[u8; 16]) -> bool {
    gid[0] == 0xff || (crate::roce::is_ipv4_mapped(gid) && gid[12] & 0xf0 == 0xe0)
}

/// A multicast LID of an InfiniBand port: 0xC000..=0xFFFE (`is_valid_mcast_lid`).
pub(crate) fn is_mcast_lid(lid: u16) -> bool {
    (FIRST_MLID..PERMISSIVE_LID).contains(&lid)
}

/// Where a datagram goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// To the one QP its address names.
    Unicast,
    /// To the group of this MGID.
    Group([u8; 16]),
    /// Partly multicast (the multicast QPN without a multicast route, or a multicast route
    /// to another QPN): dropped.
    Unroutable,
}

/// What a datagram to QP `dqpn` at LID `dlid` (InfiniBand) with DGID `dgid` (its global
/// route, if any) is.
pub(crate) fn kind(dqpn: u32, dlid: u16, dgid: Option<[u8; 16]>, roce: bool) -> Kind {
    let mgid = dgid.filter(is_mcast_gid);
    let mlid = !roce && is_mcast_lid(dlid);
    if dqpn != MULTICAST_QPN && mgid.is_none() && !mlid {
        return Kind::Unicast;
    }
    match mgid {
        Some(g) if dqpn == MULTICAST_QPN && (roce || mlid) => Kind::Group(g),
        _ => Kind::Unroutable,
    }
}

/// The (NIC, QP index) pairs a multicast datagram of group `mgid` sent by QP index `qpi`
/// of NIC `n` reaches, counting it at every port it arrives at: every other NIC whose port
/// the fabric forwards it to (`McastConfig::join`; on RoCE only a NIC with a GID on the
/// frame's VLAN, `vlan` being `Some(tag)` there), and NIC `n` itself by loopback unless
/// `McastConfig::loopback` is off or the sending QP blocks it. At each, the QPs attached to
/// the group that can receive (UD in RTR, RTS or SQE), each once however many times it
/// attached.
pub(crate) fn targets(
    w: &mut World,
    n: usize,
    qpi: usize,
    mgid: &[u8; 16],
    vlan: Option<Option<u16>>,
) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let blocked = w.nics[n].qp(qpi).block_mcast_loopback;
    for (m, nic) in w.nics.iter_mut().enumerate() {
        let group = nic.mcast.iter().find(|g| g.gid == *mgid);
        let members = group
            .map(|g| g.qps().collect::<Vec<_>>())
            .unwrap_or_default();
        let receiving = members.into_iter().filter(|&i| {
            nic.qps[i].as_ref().is_some_and(|q| {
                q.transport == Transport::Ud
                    && matches!(q.state, QpState::Rtr | QpState::Rts | QpState::Sqe)
            })
        });
        let before = out.len();
        out.extend(receiving.map(|i| (m, i)));
        let took = out.len() - before;
        if m == n {
            // Loopback never crosses the port: nothing arrives when nothing takes it.
            if !nic.cfg.mcast.loopback || blocked {
                out.truncate(before);
            } else if took > 0 {
                nic.stats.mcast_loopback += 1;
            }
            continue;
        }
        let joined = match nic.cfg.mcast.join {
            McastJoin::Attached => group.is_some(),
            McastJoin::Every => true,
        };
        if !joined {
            out.truncate(before);
            continue;
        }
        if let Some(tag) = vlan {
            // An Ethernet switch does not forward between VLANs.
            if !nic.gids.iter().any(|e| e.vlan == tag) {
                nic.stats.vlan_mismatches += 1;
                out.truncate(before);
                continue;
            }
        }
        nic.stats.mcast_packets += 1;
        nic.stats.mcast_dropped += u64::from(took == 0);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn multicast_addresses_and_lids() {
        let mut g = [0u8; 16];
        g[0] = 0xff;
        assert!(is_mcast_gid(&g));
        let v4 = |a: u8| crate::roce::ipv4_mapped([a, 1, 2, 3]);
        assert!(is_mcast_gid(&v4(224)) && is_mcast_gid(&v4(239)));
        assert!(!is_mcast_gid(&v4(223)) && !is_mcast_gid(&v4(240)));
        assert!(!is_mcast_gid(&crate::roce::link_local_gid(1)));
        assert!(is_mcast_lid(0xc000) && is_mcast_lid(0xfffe));
        assert!(!is_mcast_lid(0xbfff) && !is_mcast_lid(0xffff));
    }

    #[test]
    fn a_datagram_is_multicast_only_with_the_qpn_the_group_and_the_mlid() {
        let mut g = [0u8; 16];
        g[0] = 0xff;
        let q = MULTICAST_QPN;
        assert_eq!(kind(q, 0xc001, Some(g), false), Kind::Group(g));
        assert_eq!(kind(q, 0, Some(g), true), Kind::Group(g));
        assert_eq!(kind(0x100, 2, None, false), Kind::Unicast);
        assert_eq!(kind(q, 0xc001, None, false), Kind::Unroutable);
        assert_eq!(kind(q, 2, Some(g), false), Kind::Unroutable);
        assert_eq!(kind(0x100, 0xc001, Some(g), false), Kind::Unroutable);
        assert_eq!(kind(q, 0, Some([0; 16]), true), Kind::Unroutable);
    }
}
