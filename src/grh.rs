//! An address back to the sender of a UD receive: what rdma-core's `ibv_init_ah_from_wc`
//! and `ibv_create_ah_from_wc` (libibverbs/verbs.c) make of a receive completion and the
//! 40-byte GRH area at the start of its buffer ([`Context::ah_attr_from_recv`],
//! [`ProtectionDomain::create_ah_from_recv`]).
//!
//! * Without a GRH (InfiniBand, a sender without a global route): the sender's LID and SL.
//! * With one, the area says which header it holds (`get_grh_header_version`): an IPv6
//!   header or IBA GRH (version 6 in bits 31..28) unless bytes 20..40 are an IPv4 header
//!   with IHL 5 and a correct checksum, which wins (RoCE v2 over IPv4 leaves bytes 0..20
//!   undefined). From a GRH or IPv6 header: the destination is the packet's source GID, the
//!   source GID the port's entry holding the packet's destination GID, of the type the next
//!   header names (UDP 17: RoCE v2; 0x1B: InfiniBand or RoCE v1; anything else is refused),
//!   hop limit, traffic class and flow label the packet's. From an IPv4 header: both GIDs
//!   IPv4-mapped (`::ffff:a.b.c.d`), the entry a RoCE v2 one, hop limit the TTL, traffic
//!   class the TOS, flow label 0 (IPv4 has none; rdma-core takes bits from the undefined
//!   first bytes). A multicast destination is refused, as there.
//! * SL: on InfiniBand the CQE's (`Completion::sl`). On RoCE those bits are the packet
//!   type (rdma-core's mlx5 copies them into `wc->sl` anyway); this takes the kernel's
//!   reading (`handle_responder`): the VLAN priority of a tagged frame, else 0.
//! * Source path bits 0: [`Completion`] does not keep the CQE's `ml_path` (rdma-core's
//!   `dlid_path_bits`), which only a port with an LMC sets.
//!
//! [`Context::ah_attr_from_recv`]: crate::Context::ah_attr_from_recv
//! [`ProtectionDomain::create_ah_from_recv`]: crate::ProtectionDomain::create_ah_from_recv

use crate::backend::Backend;
use crate::cq::{Completion, WcOpcode};
use crate::device::{AddressHandle, Context, ProtectionDomain};
use crate::error::Error;
use crate::rq::UD_GRH_BYTES;
use crate::types::{AhAttr, GidType, GlobalRoute};

/// The GRH area of a UD receive: the first [`UD_GRH_BYTES`] of its buffer.
pub type GrhArea = [u8; UD_GRH_BYTES];

/// IPv6 `Next Header` of a RoCE v2 packet (UDP), and of an IBA GRH (BTH).
const NEXT_HDR_UDP: u8 = 17;
const NEXT_HDR_IBA: u8 = 0x1b;

/// Where the IPv4 header of a RoCE v2 packet sits in the area (the kernel's
/// `union rdma_network_hdr`: 20 undefined bytes, then the header).
const IPV4_AT: usize = 20;

/// The entries a packet's destination GID is looked for among (rdma-core's
/// `ibv_find_gid_index` with `IBV_GID_TYPE_SYSFS_IB_ROCE_V1` or `_ROCE_V2`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum GidClass {
    /// InfiniBand or RoCE v1 entries (an IBA GRH).
    IbOrRoceV1,
    /// RoCE v2 entries (UDP over IPv6 or IPv4).
    RoceV2,
}

impl GidClass {
    pub(crate) fn holds(self, gid_type: GidType) -> bool {
        match self {
            GidClass::IbOrRoceV1 => matches!(gid_type, GidType::Ib | GidType::RoceV1),
            GidClass::RoceV2 => gid_type == GidType::RoceV2,
        }
    }
}

/// What a GRH area says about the packet: its source and destination GIDs, the entries the
/// destination is one of, and the route fields an answer takes back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Packet {
    sgid: [u8; 16],
    dgid: [u8; 16],
    class: GidClass,
    hop_limit: u8,
    traffic_class: u8,
    flow_label: u32,
}

/// The header in `area` (see the module docs), or why it cannot be answered.
fn parse(area: &GrhArea) -> Result<Packet, Error> {
    let word = u32::from_be_bytes([area[0], area[1], area[2], area[3]]);
    let ipv4 = &area[IPV4_AT..];
    let is_ipv4 = match word >> 28 {
        // rdma-core's test: IHL 5 and the checksum, whatever the version nibble.
        6 => ipv4[0] & 0xf == 5 && ipv4_checksum_holds(ipv4),
        _ if ipv4[0] >> 4 == 4 => true,
        _ => {
            return Err(Error::InvalidArgument(
                "the GRH area holds neither a GRH, an IPv6 nor an IPv4 header",
            ))
        }
    };
    let packet = if is_ipv4 {
        let mapped = |at: usize| {
            let mut gid = [0u8; 16];
            gid[10..12].fill(0xff);
            gid[12..].copy_from_slice(&ipv4[at..at + 4]);
            gid
        };
        if ipv4[16] >> 4 == 0xe {
            return Err(Error::InvalidArgument(
                "a multicast destination (IPv4 class D)",
            ));
        }
        Packet {
            sgid: mapped(12),
            dgid: mapped(16),
            class: GidClass::RoceV2,
            hop_limit: ipv4[8],
            traffic_class: ipv4[1],
            flow_label: 0,
        }
    } else {
        let gid = |at: usize| -> [u8; 16] { area[at..at + 16].try_into().expect("16 bytes") };
        let class = match area[6] {
            NEXT_HDR_UDP => GidClass::RoceV2,
            NEXT_HDR_IBA => GidClass::IbOrRoceV1,
            _ => {
                return Err(Error::InvalidArgument(
                    "the GRH's next header is neither UDP nor BTH",
                ))
            }
        };
        if area[24] == 0xff {
            return Err(Error::InvalidArgument("a multicast destination GID"));
        }
        Packet {
            sgid: gid(8),
            dgid: gid(24),
            class,
            hop_limit: area[7],
            traffic_class: (word >> 20) as u8,
            flow_label: word & 0xf_ffff,
        }
    };
    Ok(packet)
}

/// The IPv4 header checksum of `header` (its first 20 bytes) is right: the one's
/// complement sum of its ten 16-bit words, the checksum included, is 0xffff (RFC 1071).
fn ipv4_checksum_holds(header: &[u8]) -> bool {
    let sum = header[..20]
        .chunks(2)
        .map(|w| u32::from(u16::from_be_bytes([w[0], w[1]])))
        .sum::<u32>();
    let folded = (sum & 0xffff) + (sum >> 16);
    (folded & 0xffff) + (folded >> 16) == 0xffff
}

/// The address of the sender of receive `wc` through local `port` (a RoCE port when
/// `roce`), from its GRH area `area`; `find` gives the index of the port's GID of a class.
pub(crate) fn ah_attr_from_recv(
    port: u8,
    roce: bool,
    wc: &Completion,
    area: &GrhArea,
    find: impl FnOnce(&[u8; 16], GidClass) -> Result<u8, Error>,
) -> Result<AhAttr, Error> {
    if !wc.status.is_ok() || !matches!(wc.opcode, WcOpcode::Recv | WcOpcode::RecvRdmaWithImm) {
        return Err(Error::InvalidArgument(
            "not a successful receive completion",
        ));
    }
    let sl = match roce {
        false => wc.sl(),
        true => wc.cvlan().map_or(0, |vlan| (vlan >> 13) as u8),
    };
    let mut attr = AhAttr {
        port,
        dlid: wc.slid(),
        sl,
        src_path_bits: 0,
        grh: None,
    };
    if !wc.grh_present() {
        return match roce {
            true => Err(Error::InvalidArgument(
                "a RoCE receive without its GRH area written",
            )),
            false => Ok(attr),
        };
    }
    let packet = parse(area)?;
    attr.grh = Some(GlobalRoute {
        dgid: packet.sgid,
        flow_label: packet.flow_label,
        sgid_index: find(&packet.dgid, packet.class)?,
        hop_limit: packet.hop_limit,
        traffic_class: packet.traffic_class,
    });
    Ok(attr)
}

impl<B: Backend> Context<B> {
    /// The address of the sender of UD receive `wc` through local `port`, from the
    /// receive's GRH area `area` (the first [`UD_GRH_BYTES`] of its buffer): rdma-core's
    /// `ibv_init_ah_from_wc`, on InfiniBand (with or without a GRH) and RoCE v1 and v2
    /// (IPv6 and IPv4); the module docs say how each field is found. The source GID index
    /// is the port's entry holding the packet's destination GID, of the type its header
    /// says ([`Context::query_gid`]). Refused ([`Error::InvalidArgument`]): a completion
    /// that is not a successful receive, a RoCE receive without its area, an area holding no
    /// GRH, IPv6 or IPv4 header, a multicast destination, or a destination GID the port
    /// does not have.
    pub fn ah_attr_from_recv(
        &self,
        port: u8,
        wc: &Completion,
        area: &GrhArea,
    ) -> Result<AhAttr, Error> {
        let info = self.port(port)?;
        ah_attr_from_recv(port, info.roce, wc, area, |gid, class| {
            (0..info.gid_table_len.min(256))
                .find(|&i| {
                    self.query_gid(port, i)
                        .is_ok_and(|e| e.gid == *gid && class.holds(e.gid_type))
                })
                .map(|i| i as u8)
                .ok_or(Error::InvalidArgument(
                    "no GID of the port is the packet's destination",
                ))
        })
    }
}

impl<B: Backend> ProtectionDomain<B> {
    /// An address handle to the sender of UD receive `wc` ([`Context::ah_attr_from_recv`]
    /// from its GRH area `area`, then [`ProtectionDomain::create_ah`]): rdma-core's
    /// `ibv_create_ah_from_wc`. A UD server answers a request through it to
    /// [`Completion::src_qp`].
    pub fn create_ah_from_recv(
        &self,
        port: u8,
        wc: &Completion,
        area: &GrhArea,
    ) -> Result<AddressHandle<B>, Error> {
        self.create_ah(&self.context().ah_attr_from_recv(port, wc, area)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A RoCE v2 IPv4 area as the kernel lays it out, from `src` to `dst` (TOS 0xb8, TTL 9,
    /// protocol UDP, the checksum right), the first 20 bytes `junk`.
    fn ipv4_area(src: [u8; 4], dst: [u8; 4], junk: u8) -> GrhArea {
        let mut a = [junk; 40];
        a[20..32].copy_from_slice(&[0x45, 0xb8, 0, 72, 0, 0, 0x40, 0, 9, 17, 0, 0]);
        a[32..36].copy_from_slice(&src);
        a[36..40].copy_from_slice(&dst);
        let sum: u32 = a[20..40]
            .chunks(2)
            .map(|w| u32::from(u16::from_be_bytes([w[0], w[1]])))
            .sum();
        let sum = (sum & 0xffff) + (sum >> 16);
        a[30..32].copy_from_slice(&(!(sum as u16)).to_be_bytes());
        a
    }

    /// An IPv6 header or IBA GRH: version 6, traffic class 0x20, flow label 0x12345, next
    /// header `next`, hop limit 7, `sgid` to `dgid`.
    fn ipv6_area(next: u8, sgid: [u8; 16], dgid: [u8; 16]) -> GrhArea {
        let mut a = [0u8; 40];
        a[..4].copy_from_slice(&(6u32 << 28 | 0x20 << 20 | 0x12345).to_be_bytes());
        a[6] = next;
        a[7] = 7;
        a[8..24].copy_from_slice(&sgid);
        a[24..].copy_from_slice(&dgid);
        a
    }

    const A: [u8; 16] = [0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1];
    const B: [u8; 16] = [0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2];

    #[test]
    fn each_header_gives_its_gids_class_and_route_fields() {
        let v6 = parse(&ipv6_area(NEXT_HDR_UDP, A, B)).unwrap();
        assert_eq!(
            v6,
            Packet {
                sgid: A,
                dgid: B,
                class: GidClass::RoceV2,
                hop_limit: 7,
                traffic_class: 0x20,
                flow_label: 0x12345,
            }
        );
        let grh = parse(&ipv6_area(NEXT_HDR_IBA, A, B)).unwrap();
        assert_eq!(grh.class, GidClass::IbOrRoceV1);
        let mapped = |a: [u8; 4]| {
            let mut g = [0u8; 16];
            g[10..12].fill(0xff);
            g[12..].copy_from_slice(&a);
            g
        };
        // The undefined first bytes may look like an IPv6 header: the IPv4 checksum decides.
        for junk in [0x00, 0x60, 0xff] {
            let v4 = parse(&ipv4_area([10, 0, 0, 1], [10, 0, 0, 2], junk)).unwrap();
            assert_eq!(
                v4,
                Packet {
                    sgid: mapped([10, 0, 0, 1]),
                    dgid: mapped([10, 0, 0, 2]),
                    class: GidClass::RoceV2,
                    hop_limit: 9,
                    traffic_class: 0xb8,
                    flow_label: 0,
                },
                "junk {junk:#x}"
            );
        }
        // A version 6 header whose last 20 bytes only look like IPv4 (bad checksum) is IPv6.
        let mut sgid = A;
        sgid[12] = 0x45;
        assert_eq!(parse(&ipv6_area(NEXT_HDR_UDP, sgid, B)).unwrap().sgid, sgid);
    }

    #[test]
    fn what_cannot_be_answered_is_refused() {
        let refused = |area: &GrhArea| matches!(parse(area), Err(Error::InvalidArgument(_)));
        assert!(refused(&[0; 40]), "no header");
        assert!(refused(&ipv6_area(6, A, B)), "TCP");
        let mut multicast = B;
        multicast[0] = 0xff;
        assert!(refused(&ipv6_area(NEXT_HDR_UDP, A, multicast)));
        assert!(refused(&ipv4_area([10, 0, 0, 1], [224, 0, 0, 1], 0)));
    }
}
