//! The parts of an rdma_cm connection that need no library: the private data two sides
//! exchange in the connect / accept handshake ([`CmPrivateData`], a fixed layout of ours),
//! the connection manager's events ([`CmEvent`], `enum rdma_cm_event_type` of
//! `<rdma/rdma_cma.h>`) and what a failed step means ([`CmError`]).
//!
//! The connection itself (address and route resolution, connect / accept for QPs the driver
//! created) is the `verbs` backend's (`backend::verbs::cm`), built on librdmacm; see
//! docs/hardware.md.

use core::fmt;

/// The events of `enum rdma_cm_event_type` (rdma-core `librdmacm/rdma_cma.h`), with their
/// values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum CmEvent {
    /// `RDMA_CM_EVENT_ADDR_RESOLVED`: `rdma_resolve_addr` found the local device and port.
    AddrResolved = 0,
    /// `RDMA_CM_EVENT_ADDR_ERROR`: address resolution failed.
    AddrError = 1,
    /// `RDMA_CM_EVENT_ROUTE_RESOLVED`: `rdma_resolve_route` found a path.
    RouteResolved = 2,
    /// `RDMA_CM_EVENT_ROUTE_ERROR`: route resolution failed.
    RouteError = 3,
    /// `RDMA_CM_EVENT_CONNECT_REQUEST`: a listener received a connection request.
    ConnectRequest = 4,
    /// `RDMA_CM_EVENT_CONNECT_RESPONSE`: the peer accepted a connection whose QP the
    /// application created itself (`id->qp` NULL); it must move the QP to RTS and call
    /// `rdma_establish`.
    ConnectResponse = 5,
    /// `RDMA_CM_EVENT_CONNECT_ERROR`: an error while establishing the connection.
    ConnectError = 6,
    /// `RDMA_CM_EVENT_UNREACHABLE`: the peer did not answer (status `-ETIMEDOUT`).
    Unreachable = 7,
    /// `RDMA_CM_EVENT_REJECTED`: the peer (or its CM) rejected the request; the status is
    /// the reject reason.
    Rejected = 8,
    /// `RDMA_CM_EVENT_ESTABLISHED`: the connection is up.
    Established = 9,
    /// `RDMA_CM_EVENT_DISCONNECTED`.
    Disconnected = 10,
    /// `RDMA_CM_EVENT_DEVICE_REMOVAL`.
    DeviceRemoval = 11,
    /// `RDMA_CM_EVENT_MULTICAST_JOIN`.
    MulticastJoin = 12,
    /// `RDMA_CM_EVENT_MULTICAST_ERROR`.
    MulticastError = 13,
    /// `RDMA_CM_EVENT_ADDR_CHANGE`.
    AddrChange = 14,
    /// `RDMA_CM_EVENT_TIMEWAIT_EXIT`.
    TimewaitExit = 15,
}

impl CmEvent {
    /// Every event, in value order.
    pub const ALL: [CmEvent; 16] = [
        CmEvent::AddrResolved,
        CmEvent::AddrError,
        CmEvent::RouteResolved,
        CmEvent::RouteError,
        CmEvent::ConnectRequest,
        CmEvent::ConnectResponse,
        CmEvent::ConnectError,
        CmEvent::Unreachable,
        CmEvent::Rejected,
        CmEvent::Established,
        CmEvent::Disconnected,
        CmEvent::DeviceRemoval,
        CmEvent::MulticastJoin,
        CmEvent::MulticastError,
        CmEvent::AddrChange,
        CmEvent::TimewaitExit,
    ];

    /// The event of a raw `enum rdma_cm_event_type` value (`None` for one this header
    /// version does not define).
    pub fn from_raw(value: u32) -> Option<CmEvent> {
        CmEvent::ALL.get(value as usize).copied()
    }

    /// The C name, as `rdma_event_str` spells it.
    pub fn name(self) -> &'static str {
        match self {
            CmEvent::AddrResolved => "RDMA_CM_EVENT_ADDR_RESOLVED",
            CmEvent::AddrError => "RDMA_CM_EVENT_ADDR_ERROR",
            CmEvent::RouteResolved => "RDMA_CM_EVENT_ROUTE_RESOLVED",
            CmEvent::RouteError => "RDMA_CM_EVENT_ROUTE_ERROR",
            CmEvent::ConnectRequest => "RDMA_CM_EVENT_CONNECT_REQUEST",
            CmEvent::ConnectResponse => "RDMA_CM_EVENT_CONNECT_RESPONSE",
            CmEvent::ConnectError => "RDMA_CM_EVENT_CONNECT_ERROR",
            CmEvent::Unreachable => "RDMA_CM_EVENT_UNREACHABLE",
            CmEvent::Rejected => "RDMA_CM_EVENT_REJECTED",
            CmEvent::Established => "RDMA_CM_EVENT_ESTABLISHED",
            CmEvent::Disconnected => "RDMA_CM_EVENT_DISCONNECTED",
            CmEvent::DeviceRemoval => "RDMA_CM_EVENT_DEVICE_REMOVAL",
            CmEvent::MulticastJoin => "RDMA_CM_EVENT_MULTICAST_JOIN",
            CmEvent::MulticastError => "RDMA_CM_EVENT_MULTICAST_ERROR",
            CmEvent::AddrChange => "RDMA_CM_EVENT_ADDR_CHANGE",
            CmEvent::TimewaitExit => "RDMA_CM_EVENT_TIMEWAIT_EXIT",
        }
    }
}

impl fmt::Display for CmEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Why an rdma_cm step failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CmError {
    /// `RDMA_CM_EVENT_ADDR_ERROR`: no local RDMA device serves a route to the address (or
    /// the resolution timed out); `status` is the negative errno the kernel gave.
    AddressNotResolved {
        /// The event's status.
        status: i32,
    },
    /// `RDMA_CM_EVENT_ROUTE_ERROR`: no path to the peer (on InfiniBand the subnet
    /// administrator did not answer).
    RouteNotResolved {
        /// The event's status.
        status: i32,
    },
    /// `RDMA_CM_EVENT_UNREACHABLE`: the peer's CM did not answer the request.
    Unreachable {
        /// The event's status (`-ETIMEDOUT` when the request timed out).
        status: i32,
    },
    /// `RDMA_CM_EVENT_REJECTED`: the request was rejected; `reason` is the InfiniBand CM's
    /// reject reason (`enum ib_cm_rej_reason`: 8, invalid service ID, means nobody listens
    /// on that port; 28, consumer defined, that the application rejected it).
    Rejected {
        /// The reject reason.
        reason: i32,
    },
    /// `RDMA_CM_EVENT_CONNECT_ERROR`: the connection failed while being established.
    ConnectError {
        /// The event's status.
        status: i32,
    },
    /// Another event than the one awaited (`RDMA_CM_EVENT_DISCONNECTED`,
    /// `RDMA_CM_EVENT_DEVICE_REMOVAL`, ...), or the awaited one with a non-zero status.
    Unexpected {
        /// The event awaited.
        expected: CmEvent,
        /// The event that came.
        got: CmEvent,
        /// Its status.
        status: i32,
    },
    /// No event came in time.
    Timeout {
        /// The event awaited.
        expected: CmEvent,
        /// Milliseconds waited.
        waited_ms: u64,
    },
    /// The address resolved to another device or port than the QP's: rdma_cm reaches the
    /// peer through `cm`, the QP lives on `qp`.
    WrongDevice {
        /// Device and port rdma_cm chose (`mlx5_1:1`).
        cm: String,
        /// The QP's device and port.
        qp: String,
    },
    /// The peer's private data is not a [`CmPrivateData`] record; the text says why.
    PrivateData(&'static str),
}

impl CmError {
    /// The failure `got` (with its `status`) means while waiting for `expected`; `None`
    /// when it is the awaited event and succeeded.
    pub fn of_event(expected: CmEvent, got: CmEvent, status: i32) -> Option<CmError> {
        Some(match got {
            _ if got == expected && status == 0 => return None,
            CmEvent::AddrError => CmError::AddressNotResolved { status },
            CmEvent::RouteError => CmError::RouteNotResolved { status },
            CmEvent::Unreachable => CmError::Unreachable { status },
            CmEvent::Rejected => CmError::Rejected { reason: status },
            CmEvent::ConnectError => CmError::ConnectError { status },
            _ => CmError::Unexpected {
                expected,
                got,
                status,
            },
        })
    }
}

/// `-status` as errno text (the statuses of address, route and connect events are negative
/// errnos).
fn errno_text(status: i32) -> String {
    std::io::Error::from_raw_os_error(status.saturating_neg()).to_string()
}

impl fmt::Display for CmError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CmError::AddressNotResolved { status } => write!(
                f,
                "RDMA_CM_EVENT_ADDR_ERROR: the address did not resolve to a local RDMA device \
                 ({}); give the IP address of an IPoIB or RoCE interface",
                errno_text(*status)
            ),
            CmError::RouteNotResolved { status } => write!(
                f,
                "RDMA_CM_EVENT_ROUTE_ERROR: no route to the peer ({})",
                errno_text(*status)
            ),
            CmError::Unreachable { status } => write!(
                f,
                "RDMA_CM_EVENT_UNREACHABLE: the peer's connection manager did not answer ({})",
                errno_text(*status)
            ),
            CmError::Rejected { reason } => {
                let why = match reason {
                    8 => ": nobody listens on that port (invalid service ID)",
                    28 => ": the peer rejected it",
                    _ => "",
                };
                write!(f, "RDMA_CM_EVENT_REJECTED, reason {reason}{why}")
            }
            CmError::ConnectError { status } => write!(
                f,
                "RDMA_CM_EVENT_CONNECT_ERROR: the connection failed ({})",
                errno_text(*status)
            ),
            CmError::Unexpected {
                expected,
                got,
                status,
            } => write!(f, "waiting for {expected}, got {got} (status {status})"),
            CmError::Timeout {
                expected,
                waited_ms,
            } => write!(f, "no {expected} within {waited_ms} ms"),
            CmError::WrongDevice { cm, qp } => write!(
                f,
                "rdma_cm reaches the peer through {cm}, but the QP is on {qp}: give the \
                 device and port of that address"
            ),
            CmError::PrivateData(why) => write!(f, "the peer's private data: {why}"),
        }
    }
}

impl std::error::Error for CmError {}

/// What one side tells the other about one of its QPs in the connect / accept handshake:
/// our own fixed layout, [`CmPrivateData::LEN`] bytes, big-endian, within the 56 bytes an
/// InfiniBand CM REQ carries for the application (`RDMA_PS_TCP`; a REP carries 196).
///
/// | bytes | field |
/// |---|---|
/// | 0..4 | magic `"m5cm"` |
/// | 4 | layout version, 1 |
/// | 5 | flags: bit 0 set when the sender's QP is connected by rdma_cm (`-R`) |
/// | 6..8 | the QP's index among the sender's QPs |
/// | 8..12 | QPN |
/// | 12..16 | the first PSN the QP sends |
/// | 16..20 | rkey of the sender's buffer |
/// | 20..22 | LID |
/// | 22..24 | zero |
/// | 24..32 | address of the sender's buffer |
/// | 32..48 | GID |
///
/// rdma_cm carries the QPN, the path and a PSN of its own; the record repeats the QPN and
/// the address so that a connection whose QPs the driver connects itself (`-z`) needs
/// nothing else, and carries the driver's PSN: the driver, not the CM, numbers its packets.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CmPrivateData {
    /// The sender's QP is connected through rdma_cm.
    pub cm_qp: bool,
    /// The QP's index among the sender's QPs.
    pub index: u16,
    /// QP number.
    pub qpn: u32,
    /// First PSN the QP sends (24 bits).
    pub psn: u32,
    /// Remote key of the sender's buffer.
    pub rkey: u32,
    /// LID of the sender's port.
    pub lid: u16,
    /// Address of the sender's buffer.
    pub addr: u64,
    /// GID of the sender's port.
    pub gid: [u8; 16],
}

// The record fits the smallest private data it travels in (a REQ).
const _: () = assert!(CmPrivateData::LEN <= CmPrivateData::MAX_REQ);

impl CmPrivateData {
    /// Encoded length.
    pub const LEN: usize = 48;
    /// The application's share of an InfiniBand CM REQ under `RDMA_PS_TCP`
    /// (`IB_CM_REQ_PRIVATE_DATA_SIZE` 92 less the 36-byte rdma_cm header).
    pub const MAX_REQ: usize = 56;
    const MAGIC: [u8; 4] = *b"m5cm";
    const VERSION: u8 = 1;

    /// The record's bytes.
    pub fn encode(&self) -> [u8; Self::LEN] {
        let mut b = [0u8; Self::LEN];
        b[0..4].copy_from_slice(&Self::MAGIC);
        b[4] = Self::VERSION;
        b[5] = u8::from(self.cm_qp);
        b[6..8].copy_from_slice(&self.index.to_be_bytes());
        b[8..12].copy_from_slice(&self.qpn.to_be_bytes());
        b[12..16].copy_from_slice(&self.psn.to_be_bytes());
        b[16..20].copy_from_slice(&self.rkey.to_be_bytes());
        b[20..22].copy_from_slice(&self.lid.to_be_bytes());
        b[24..32].copy_from_slice(&self.addr.to_be_bytes());
        b[32..48].copy_from_slice(&self.gid);
        b
    }

    /// Reads a record from the peer's private data. The transport may deliver more bytes
    /// than were sent (an InfiniBand REQ always carries 56): bytes past the record are
    /// ignored.
    pub fn decode(bytes: &[u8]) -> Result<CmPrivateData, CmError> {
        let Some(b) = bytes.get(..Self::LEN) else {
            return Err(CmError::PrivateData("shorter than the 48-byte record"));
        };
        if b[0..4] != Self::MAGIC {
            return Err(CmError::PrivateData(
                "no mlx5-direct record (is the peer another program?)",
            ));
        }
        if b[4] != Self::VERSION {
            return Err(CmError::PrivateData("another version of the record"));
        }
        if b[5] > 1 || b[22..24] != [0, 0] {
            return Err(CmError::PrivateData("reserved bits set"));
        }
        let be32 = |at: usize| u32::from_be_bytes(b[at..at + 4].try_into().unwrap());
        let psn = be32(12);
        if psn > 0x00ff_ffff {
            return Err(CmError::PrivateData("a PSN wider than 24 bits"));
        }
        Ok(CmPrivateData {
            cm_qp: b[5] == 1,
            index: u16::from_be_bytes([b[6], b[7]]),
            qpn: be32(8),
            psn,
            rkey: be32(16),
            lid: u16::from_be_bytes([b[20], b[21]]),
            addr: u64::from_be_bytes(b[24..32].try_into().unwrap()),
            gid: b[32..48].try_into().unwrap(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> CmPrivateData {
        CmPrivateData {
            cm_qp: true,
            index: 0x0102,
            qpn: 0x00_0a_0b_0c,
            psn: 0x00_12_34_56,
            rkey: 0xdead_beef,
            lid: 0x0007,
            addr: 0x0000_7f00_1122_3340,
            gid: [
                0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x02, 0x11, 0x22, 0xff, 0xfe, 0x33, 0x44, 0x55,
            ],
        }
    }

    #[test]
    fn private_data_bytes_are_the_documented_layout() {
        let bytes = sample().encode();
        assert_eq!(
            bytes,
            [
                b'm', b'5', b'c', b'm', 1, 1, 0x01, 0x02, // magic, version, flags, index
                0x00, 0x0a, 0x0b, 0x0c, 0x00, 0x12, 0x34, 0x56, // QPN, PSN
                0xde, 0xad, 0xbe, 0xef, 0x00, 0x07, 0, 0, // rkey, LID, zero
                0, 0, 0x7f, 0, 0x11, 0x22, 0x33, 0x40, // address
                0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x02, 0x11, 0x22, 0xff, 0xfe, 0x33, 0x44, 0x55,
            ]
        );
    }

    #[test]
    fn private_data_round_trips_with_the_transports_padding() {
        let mut req = [0u8; CmPrivateData::MAX_REQ];
        req[..CmPrivateData::LEN].copy_from_slice(&sample().encode());
        assert_eq!(CmPrivateData::decode(&req), Ok(sample()));
        let plain = CmPrivateData::default();
        assert_eq!(CmPrivateData::decode(&plain.encode()), Ok(plain));
    }

    #[test]
    fn foreign_or_damaged_private_data_is_refused() {
        let good = sample().encode();
        let with = |at: usize, value: u8| {
            let mut b = good;
            b[at] = value;
            CmPrivateData::decode(&b)
        };
        let why = |r: Result<CmPrivateData, CmError>| match r {
            Err(CmError::PrivateData(why)) => why,
            other => panic!("{other:?}"),
        };
        assert_eq!(
            why(CmPrivateData::decode(&good[..47])),
            "shorter than the 48-byte record"
        );
        assert_eq!(
            why(CmPrivateData::decode(&[])),
            "shorter than the 48-byte record"
        );
        assert!(why(with(0, b'M')).starts_with("no mlx5-direct record"));
        assert_eq!(why(with(4, 2)), "another version of the record");
        assert_eq!(why(with(5, 2)), "reserved bits set");
        assert_eq!(why(with(23, 1)), "reserved bits set");
        assert_eq!(why(with(12, 1)), "a PSN wider than 24 bits");
    }

    #[test]
    fn events_map_to_the_failures_they_mean() {
        use CmEvent as E;
        assert_eq!(CmError::of_event(E::AddrResolved, E::AddrResolved, 0), None);
        assert_eq!(
            CmError::of_event(E::AddrResolved, E::AddrError, -110),
            Some(CmError::AddressNotResolved { status: -110 })
        );
        assert_eq!(
            CmError::of_event(E::RouteResolved, E::RouteError, -113),
            Some(CmError::RouteNotResolved { status: -113 })
        );
        assert_eq!(
            CmError::of_event(E::ConnectResponse, E::Unreachable, -110),
            Some(CmError::Unreachable { status: -110 })
        );
        assert_eq!(
            CmError::of_event(E::ConnectResponse, E::Rejected, 8),
            Some(CmError::Rejected { reason: 8 })
        );
        assert_eq!(
            CmError::of_event(E::Established, E::ConnectError, -22),
            Some(CmError::ConnectError { status: -22 })
        );
        assert_eq!(
            CmError::of_event(E::ConnectResponse, E::DeviceRemoval, 0),
            Some(CmError::Unexpected {
                expected: E::ConnectResponse,
                got: E::DeviceRemoval,
                status: 0
            })
        );
        assert_eq!(
            CmError::of_event(E::Established, E::Established, -5),
            Some(CmError::Unexpected {
                expected: E::Established,
                got: E::Established,
                status: -5
            })
        );
        assert_eq!(
            CmError::Rejected { reason: 8 }.to_string(),
            "RDMA_CM_EVENT_REJECTED, reason 8: nobody listens on that port (invalid service ID)"
        );
        assert!(CmError::AddressNotResolved { status: -19 }
            .to_string()
            .starts_with("RDMA_CM_EVENT_ADDR_ERROR: the address did not resolve"));
    }

    #[test]
    fn event_values_are_in_header_order() {
        for (value, event) in CmEvent::ALL.iter().enumerate() {
            assert_eq!(*event as u32, value as u32);
            assert_eq!(CmEvent::from_raw(value as u32), Some(*event));
        }
        assert_eq!(CmEvent::from_raw(16), None);
        assert_eq!(
            CmEvent::ConnectResponse.name(),
            "RDMA_CM_EVENT_CONNECT_RESPONSE"
        );
    }
}
