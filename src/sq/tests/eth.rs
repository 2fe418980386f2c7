//! The raw packet entries (`post_eth`, `post_empw`): push forms against post forms, the
//! other queues' refusals, each bound at its limit and one past it, where the data lands.

use super::datagram::{datagram_queues, limits_of_16};
use super::*;
use crate::eth::{Checksum, EthCaps, EthRefusal};
use crate::prm::{empw, DataSeg};
use crate::types::Transport;

/// A device without TSO or eMPW and without a minimum inline header.
pub(super) const RAW_CAPS: EthCaps = EthCaps {
    mac: [2, 0, 0, 0, 0, 1],
    min_inline: 0,
    enhanced_mpw: false,
    striding_rq: false,
    max_tso: 0,
    max_frame: 1514,
};

/// A ready raw queue of `desc`'s limits on a device with `caps`, over `NullQueues`' memory.
pub(super) fn raw_queues(caps: EthCaps, desc: &SqDesc) -> NullQueues {
    let mut q = NullQueues::new(16, 8, 256).unwrap();
    q.sq.make_eth(desc, caps);
    q.sq.set_ready(true);
    q
}

const HEADER: [u8; 14] = [0x11; 14];

fn sge(addr: u64, len: u32) -> Sge {
    Sge { addr, len, lkey: 9 }
}

fn frame<'a>(header: &'a [u8], data: Data<'a>) -> EthWr<'a> {
    EthWr::new(1, header, data)
}

/// `push_eth` and `push_empw` write the WQEs their posts write and leave the doorbell
/// alone; one doorbell rings the list.
#[test]
fn push_eth_and_push_empw_write_what_their_posts_write() {
    let caps = EthCaps {
        enhanced_mpw: true,
        ..RAW_CAPS
    };
    let packets = [
        EmpwPacket::Inline(&[5; 20]),
        EmpwPacket::Pointer(sge(64, 60)),
    ];
    let empw = EmpwWr {
        wr_id: 2,
        flags: SendFlags::SIGNALED,
        checksum: Checksum::NONE,
        packets: &packets,
    };
    let wr = frame(&HEADER, Data::Inline(&[7; 30]));
    let mut posted = raw_queues(caps, &limits_of_16());
    let mut q = raw_queues(caps, &limits_of_16());
    for _ in 0..2 {
        posted.sq.post_eth(&wr).unwrap();
        posted.sq.post_empw(&empw).unwrap();
        q.sq.push_eth(&wr).unwrap();
        q.sq.push_empw(&empw).unwrap();
    }
    let pi = posted.sq.producer_count();
    assert_eq!((q.sq.producer_count(), q.sq.doorbell_record()), (pi, 0));
    let len = pi as usize * SEND_WQE_BB;
    assert_eq!(q.sq.wqe_bytes(0, len), posted.sq.wqe_bytes(0, len));
    assert_eq!(q.sq.ring_doorbell(), 4);
    assert_eq!(q.sq.doorbell_record(), pi);
}

/// An RC, UC or UD queue refuses `post_eth`, naming its own transport.
#[test]
fn the_other_queues_refuse_a_frame_naming_their_transport() {
    let mut uc = NullQueues::new(16, 8, 256).unwrap();
    uc.sq.make_uc();
    uc.sq.set_ready(true);
    let queues = [
        (NullQueues::new(16, 8, 256).unwrap(), Transport::Rc),
        (uc, Transport::Uc),
        (datagram_queues(false), Transport::Ud),
    ];
    for (mut q, transport) in queues {
        assert_eq!(
            q.sq.post_eth(&frame(&HEADER, Data::Inline(&[1; 8]))),
            Err(PostError::WrongTransport { transport })
        );
        assert_eq!(q.sq.producer_count(), 0);
    }
}

/// Inline data, gather entries, the whole message, TSO's header and payload and the WQE
/// size, each at its limit (taken) and one past it (refused with its error).
#[test]
fn each_frame_bound_is_taken_at_its_limit_and_refused_past_it() {
    let caps = EthCaps {
        max_tso: 4096,
        ..RAW_CAPS
    };
    let mut q = raw_queues(caps, &limits_of_16());
    let mut check = |wr: EthWr<'_>, expect: Result<(), PostError>| {
        q.sq.reset();
        q.sq.set_ready(true);
        assert_eq!(q.sq.post_eth(&wr), expect, "{wr:?}");
    };
    check(frame(&HEADER, Data::Inline(&[1; 256])), Ok(()));
    check(
        frame(&HEADER, Data::Inline(&[1; 257])),
        Err(PostError::InlineTooLarge { len: 257, max: 256 }),
    );
    let five = [sge(0, 1); 5];
    check(frame(&HEADER, Data::Sges(&five[..4])), Ok(()));
    check(
        frame(&HEADER, Data::Sges(&five)),
        Err(PostError::TooManySges { count: 5, max: 4 }),
    );
    let half = 1 << 29;
    let whole = [sge(0, half), sge(0, half)];
    check(frame(&HEADER, Data::Sges(&whole)), Ok(()));
    let over = [sge(0, half), sge(0, half), sge(0, 1)];
    check(
        frame(&HEADER, Data::Sges(&over)),
        Err(PostError::MessageTooLarge { len: (1 << 30) + 1 }),
    );
    let (fits, over) = ([sge(0, 4096)], [sge(0, 4097)]);
    let tso = |header, list| EthWr {
        mss: 1000,
        ..frame(header, Data::Sges(list))
    };
    check(tso(&HEADER, &fits), Ok(()));
    check(
        tso(&HEADER, &over),
        Err(PostError::Ethernet(EthRefusal::TsoTooLarge {
            len: 4097,
            max: 4096,
        })),
    );
    check(
        tso(&HEADER[..13], &fits),
        Err(PostError::Ethernet(EthRefusal::TsoHeaderTooShort {
            len: 13,
        })),
    );

    // A largest WQE of 8 DS: control, the Ethernet segment with 14 header bytes (2 DS) and
    // 76 inline bytes (5 DS) make 8; 77 make 9.
    let desc = SqDesc {
        max_wqe_size: 128,
        ..limits_of_16()
    };
    let mut q = raw_queues(RAW_CAPS, &desc);
    assert_eq!(
        q.sq.post_eth(&frame(&HEADER, Data::Inline(&[1; 76]))),
        Ok(())
    );
    assert_eq!(
        q.sq.post_eth(&frame(&HEADER, Data::Inline(&[1; 77]))),
        Err(PostError::WqeTooLarge { ds: 9, max_ds: 8 })
    );
}

/// Inline data follows the Ethernet segment as an inline segment (its byte count with
/// bit 31, then the bytes); gather entries follow it one per unit, zero-length ones
/// dropped.
#[test]
fn inline_data_and_gather_entries_land_after_the_ethernet_segment() {
    let mut q = raw_queues(RAW_CAPS, &limits_of_16());
    q.sq.post_eth(&frame(&HEADER, Data::Inline(&[0xab; 5])))
        .unwrap();
    // Control (16), the Ethernet segment with the header's last 12 bytes (32): data at 48.
    let wqe = q.sq.wqe_bytes(0, 64);
    assert_eq!(wqe[48..57], [0x80, 0, 0, 5, 0xab, 0xab, 0xab, 0xab, 0xab]);
    assert_eq!(wqe[7], 4, "4 DS");

    let list = [sge(0x1000, 8), sge(0x2000, 0), sge(0x3000, 16)];
    q.sq.post_eth(&frame(&HEADER, Data::Sges(&list))).unwrap();
    let wqe = q.sq.wqe_bytes(1, 128);
    assert_eq!(wqe[7], 5, "5 DS");
    assert_eq!(wqe[48..64], DataSeg::new(8, 9, 0x1000).to_bytes());
    assert_eq!(wqe[64..80], DataSeg::new(16, 9, 0x3000).to_bytes());
}

/// eMPW's bounds: 32 packets (33 refused), exactly 60 DS (61 refused), and a pointer
/// packet of no bytes refused as an empty frame.
#[test]
fn each_empw_bound_is_taken_at_its_limit_and_refused_past_it() {
    let caps = EthCaps {
        enhanced_mpw: true,
        ..RAW_CAPS
    };
    let mut q = raw_queues(caps, &limits_of_16());
    let mut check = |packets: &[EmpwPacket<'_>], expect: Result<(), PostError>| {
        q.sq.reset();
        q.sq.set_ready(true);
        let wr = EmpwWr {
            wr_id: 1,
            flags: SendFlags::SIGNALED,
            checksum: Checksum::NONE,
            packets,
        };
        assert_eq!(q.sq.post_empw(&wr), expect, "{} packets", packets.len());
    };
    let pointers = [EmpwPacket::Pointer(sge(0, 64)); 33];
    check(&pointers[..32], Ok(()));
    check(
        &pointers,
        Err(PostError::Ethernet(EthRefusal::EmpwPackets { count: 33 })),
    );
    // Two header DS, three inline packets of 268 bytes (17 DS each), then pointers.
    let big = [0u8; empw::DEF_INLINE_LEN];
    let mut packets = vec![EmpwPacket::Inline(&big); 3];
    packets.extend([EmpwPacket::Pointer(sge(0, 64)); 7]);
    check(&packets, Ok(()));
    packets.push(EmpwPacket::Pointer(sge(0, 64)));
    check(
        &packets,
        Err(PostError::Ethernet(EthRefusal::EmpwTooLarge { ds: 61 })),
    );
    check(
        &[EmpwPacket::Pointer(sge(0, 0))],
        Err(PostError::Ethernet(EthRefusal::EmptyFrame)),
    );
}
