//! The entries of the UD, DCI, XRC and raw queues: push forms against post forms, readiness,
//! streams, over plain memory.

use super::*;
use crate::types::Transport;

/// The limits of `NullQueues::new(16, 8, 256)`'s send queue, for the `make_*` calls that
/// read a description's limits only (no pointer).
pub(super) fn limits_of_16() -> SqDesc {
    SqDesc {
        buf: core::ptr::NonNull::dangling(),
        wqe_cnt: 16,
        dbrec: core::ptr::NonNull::dangling(),
        bf_offset: crate::null::NULL_BF_OFFSET,
        bf_size: crate::null::NULL_BF_SIZE,
        qpn: crate::null::NULL_QPN,
        max_wqe_size: 1008,
        max_inline: 256,
        max_sge: 4,
    }
}

/// A UD queue (MTU 1024) or a DCI's over `NullQueues`' memory: 16 WQEBBs, 256 inline
/// bytes, BlueFlame (`Auto` on a 256-byte half).
pub(super) fn datagram_queues(dci: bool) -> NullQueues {
    let mut q = NullQueues::new(16, 8, 256).unwrap();
    let desc = limits_of_16();
    if dci {
        q.sq.make_dci(&desc, 4);
    } else {
        q.sq.make_ud(&desc);
        q.sq.set_ud_mtu(1024);
    }
    q.sq.set_ready(true);
    q
}

fn send(wr_id: u64, payload: &[u8]) -> SendWr<'_> {
    SendWr {
        wr_id,
        op: SendOp::Send,
        data: Data::Inline(payload),
        flags: SendFlags::SIGNALED,
    }
}

/// An address vector to LID 7 (no GRH).
pub(super) fn lid_7_av() -> Av {
    Av::new(0, 0, false, 0, 0, 7, [0; 6], 0, 0, 0, [0; 16])
}

/// DC target 1 with DC key 2 behind `av`, on stream 0.
fn dc_dest(av: &Av) -> DcDest<'_> {
    DcDest {
        av,
        dctn: 1,
        dc_key: 2,
        compact: false,
        stream: 0,
    }
}

/// UD destination QP 0x123456 with Q_Key 0x11111111 behind `av`.
fn ud_dest(av: &Av) -> UdDest<'_> {
    UdDest {
        av,
        remote_qpn: 0x12_3456,
        qkey: 0x1111_1111,
        compact: false,
    }
}

/// `push_ud` writes the WQE `post_ud` writes and leaves the doorbell alone; a list of four
/// is rung once by `ring_doorbell` with the 8-byte doorbell (no BlueFlame for a batch, as
/// RC), a list of one is BlueFlame-copied whole (its two WQEBBs). Refusals write nothing.
#[test]
fn push_ud_writes_what_post_ud_writes_and_a_list_rings_once() {
    let av = lid_7_av();
    let dest = ud_dest(&av);
    let payloads = [[1u8; 8], [2; 8], [3; 8], [4; 8]];
    let mut posted = datagram_queues(false);
    for (i, p) in payloads.iter().enumerate() {
        posted.sq.post_ud(send(i as u64, p), &dest).unwrap();
    }
    let mut q = datagram_queues(false);
    let reg = q.sq.register_offset();
    for (i, p) in payloads.iter().enumerate() {
        q.sq.push_ud(&send(i as u64, p), &dest).unwrap();
    }
    // ctrl + 48-byte AV + 8 inline bytes = 5 DS: two WQEBBs each, nothing rung yet.
    assert_eq!((q.sq.producer_count(), q.sq.doorbell_record()), (8, 0));
    assert_eq!(q.sq.uar().read64(reg), [0; 8]);
    assert_eq!(q.sq.wqe_bytes(0, 512), posted.sq.wqe_bytes(0, 512));
    assert_eq!(q.sq.ring_doorbell(), 4);
    assert_eq!(q.sq.doorbell_record(), 8);
    let last = q.sq.wqe_bytes(6, 128);
    assert_eq!(q.sq.uar().read64(reg), last[..8]);
    assert_eq!(q.sq.uar().read64(reg + 8), [0; 8], "no BlueFlame copy");
    assert_eq!(q.sq.register_offset(), reg ^ crate::null::NULL_BF_SIZE);

    // Refused: the RC entry (also once datagram WQEs moved the producer on), another
    // opcode, more than the MTU, a DC post; nothing written or pending.
    assert_eq!(
        q.sq.push_wr(&send(9, &[0; 8])),
        Err(PostError::WrongTransport {
            transport: crate::types::Transport::Ud
        })
    );
    assert_eq!(
        q.sq.push_ud(&write(9, &[0; 8]), &dest),
        Err(PostError::WrongTransport {
            transport: crate::types::Transport::Ud
        })
    );
    let sge = [Sge {
        addr: 0,
        len: 1025,
        lkey: 1,
    }];
    let over = SendWr {
        data: Data::Sges(&sge),
        ..send(9, &[])
    };
    assert_eq!(
        q.sq.push_ud(&over, &dest),
        Err(PostError::OverMtu {
            len: 1025,
            mtu: 1024
        })
    );
    let dc = dc_dest(&av);
    assert_eq!(
        q.sq.push_dc(&send(9, &[0; 8]), &dc),
        Err(PostError::WrongTransport {
            transport: crate::types::Transport::Ud
        })
    );
    assert_eq!((q.sq.producer_count(), q.sq.ring_doorbell()), (8, 0));

    // A list of one: BlueFlame, the whole 128 bytes of the WQE.
    let reg = q.sq.register_offset();
    q.sq.push_ud(&send(5, &[5; 8]), &dest).unwrap();
    assert_eq!(q.sq.ring_doorbell(), 1);
    assert_eq!(q.sq.doorbell_record(), 10);
    for (k, chunk) in q.sq.wqe_bytes(8, 128).chunks(8).enumerate() {
        assert_eq!(q.sq.uar().read64(reg + k * 8), chunk, "word {k}");
    }
}

fn write(wr_id: u64, payload: &[u8]) -> SendWr<'_> {
    SendWr {
        op: WRITE,
        ..send(wr_id, payload)
    }
}

/// `push_dc` writes the WQE `post_dc` writes (WRITE: ctrl, the AV with the DCT number and
/// key, raddr, inline), rung once for the list; a pushed WQE is rung by the next
/// `post_dc` with it (one doorbell for both, no BlueFlame for two).
#[test]
fn push_dc_writes_what_post_dc_writes_and_a_list_rings_once() {
    let av = Av::new(0, 0, false, 0, 0, 9, [0; 6], 0, 0, 0, [0; 16]);
    let dest = DcDest {
        av: &av,
        dctn: 0x00_0abc,
        dc_key: 0x0123_4567_89ab_cdef,
        compact: false,
        stream: 0,
    };
    let mut posted = datagram_queues(true);
    let mut q = datagram_queues(true);
    let reg = q.sq.register_offset();
    for i in 0..4u8 {
        posted
            .sq
            .post_dc(write(u64::from(i), &[i; 8]), &dest)
            .unwrap();
        q.sq.push_dc(&write(u64::from(i), &[i; 8]), &dest).unwrap();
    }
    // ctrl + AV + raddr + 8 inline bytes = 6 DS: two WQEBBs each.
    assert_eq!((q.sq.producer_count(), q.sq.doorbell_record()), (8, 0));
    assert_eq!(q.sq.wqe_bytes(0, 512), posted.sq.wqe_bytes(0, 512));
    assert_eq!(q.sq.ring_doorbell(), 4);
    assert_eq!(q.sq.doorbell_record(), 8);
    assert_eq!(q.sq.uar().read64(reg), q.sq.wqe_bytes(6, 8)[..]);
    assert_eq!(q.sq.uar().read64(reg + 8), [0; 8], "no BlueFlame copy");
    // RC entries stay refused on a DCI, UD posts too.
    assert_eq!(
        q.sq.push_wr(&write(9, &[0; 8])),
        Err(PostError::WrongTransport {
            transport: crate::types::Transport::Dci
        })
    );

    let reg = q.sq.register_offset();
    q.sq.push_dc(&write(4, &[4; 8]), &dest).unwrap();
    q.sq.post_dc(write(5, &[5; 8]), &dest).unwrap();
    assert_eq!((q.sq.doorbell_record(), q.sq.ring_doorbell()), (12, 0));
    assert_eq!(q.sq.uar().read64(reg), q.sq.wqe_bytes(10, 8)[..]);
    assert_eq!(q.sq.uar().read64(reg + 8), [0; 8], "no BlueFlame copy");
}

/// A UD queue whose largest WQE is 128 bytes (8 units): control, the 48-byte datagram
/// segment and four gather entries make exactly 8 and are taken; an inline payload that
/// would make 9 is refused.
#[test]
fn a_wqe_of_exactly_the_largest_size_is_taken() {
    let mut q = NullQueues::new(16, 8, 256).unwrap();
    let desc = SqDesc {
        max_wqe_size: 128,
        ..limits_of_16()
    };
    q.sq.make_ud(&desc);
    q.sq.set_ud_mtu(1024);
    q.sq.set_ready(true);
    let av = lid_7_av();
    let dest = ud_dest(&av);
    let sge = Sge {
        addr: 0x1000,
        len: 8,
        lkey: 1,
    };
    let four = [sge; 4];
    let wr = SendWr {
        data: Data::Sges(&four),
        ..send(1, &[])
    };
    assert_eq!(q.sq.post_ud(wr, &dest), Ok(()));
    assert_eq!(q.sq.producer_count(), 2);
    // 16 + 48 + 4 + 60 inline bytes: 128 bytes, 8 units; 61 bytes make 9.
    assert_eq!(q.sq.post_ud(send(2, &[0; 60]), &dest), Ok(()));
    assert_eq!(
        q.sq.post_ud(send(3, &[0; 61]), &dest),
        Err(PostError::WqeTooLarge { ds: 9, max_ds: 8 })
    );
}

/// A ready queue of `transport`'s own entry (UD, DCI, XRC initiator or raw packet) over
/// `NullQueues`' memory, as `datagram_queues`.
pub(super) fn entry_queues(transport: Transport) -> NullQueues {
    let mut q = NullQueues::new(16, 8, 256).unwrap();
    let desc = limits_of_16();
    match transport {
        Transport::Ud | Transport::Dci => return datagram_queues(transport == Transport::Dci),
        Transport::XrcIni => q.sq.make_xrc(&desc),
        Transport::Raw => return super::eth::raw_queues(super::eth::RAW_CAPS, &desc),
        _ => unreachable!("{transport:?} posts through the RC entries"),
    }
    q.sq.set_ready(true);
    q
}

/// As on an RC queue: each other entry's room check remembers how far it may post
/// (`UdEntry::limit`, the DCI's, the XRC and raw entries'), so readiness taken away must
/// forget that room; the next post is refused with the ring half empty, and taken once the
/// QP is ready again.
#[test]
fn readiness_taken_away_with_room_left_refuses_the_next_post_of_every_entry() {
    let av = lid_7_av();
    let dest = ud_dest(&av);
    let dc = dc_dest(&av);
    let header = [0u8; 14];
    for transport in [
        Transport::Ud,
        Transport::Dci,
        Transport::XrcIni,
        Transport::Raw,
    ] {
        let mut q = entry_queues(transport);
        let post = |q: &mut NullQueues, wr_id| match transport {
            Transport::Ud => q.sq.post_ud(send(wr_id, &[1; 8]), &dest),
            Transport::Dci => q.sq.post_dc(send(wr_id, &[1; 8]), &dc),
            Transport::XrcIni => q.sq.post_xrc(send(wr_id, &[1; 8]), 5),
            _ => {
                q.sq.post_eth(&EthWr::new(wr_id, &header, Data::Inline(&[1; 8])))
            }
        };
        post(&mut q, 1).unwrap();
        let one = q.sq.producer_count();
        q.sq.set_ready(false);
        assert_eq!(
            post(&mut q, 2),
            Err(PostError::NotReadyToSend),
            "{transport:?}"
        );
        assert_eq!(q.sq.producer_count(), one);
        q.sq.set_ready(true);
        post(&mut q, 2).unwrap();
        assert_eq!(q.sq.producer_count(), 2 * one, "{transport:?}");
    }
}

/// `push_xrc` writes the WQE `post_xrc` writes (the XRC segment naming the SRQ after the
/// control segment) and leaves the doorbell alone; one doorbell rings the list.
#[test]
fn push_xrc_writes_what_post_xrc_writes_and_a_list_rings_once() {
    let mut posted = entry_queues(Transport::XrcIni);
    let mut q = entry_queues(Transport::XrcIni);
    for i in 0..3 {
        posted
            .sq
            .post_xrc(send(i, &[i as u8; 8]), 0x12_3456)
            .unwrap();
        q.sq.push_xrc(&send(i, &[i as u8; 8]), 0x12_3456).unwrap();
    }
    assert_eq!((q.sq.producer_count(), q.sq.doorbell_record()), (3, 0));
    assert_eq!(q.sq.wqe_bytes(0, 192), posted.sq.wqe_bytes(0, 192));
    assert_eq!(q.sq.wqe_bytes(0, 20)[16..], [0x00, 0x12, 0x34, 0x56]);
    assert_eq!(q.sq.ring_doorbell(), 3);
    assert_eq!(q.sq.doorbell_record(), 3);
}

/// `DcDest::on_stream` moves an operation to another stream of the DCI: its WQE carries the
/// stream in `dci_stream_channel_id` (control bytes 9..10), and nothing else changes.
#[test]
fn a_destination_on_another_stream_writes_its_stream_id() {
    let av = lid_7_av();
    let dc = dc_dest(&av);
    let mut q = datagram_queues(true);
    q.sq.post_dc(send(1, &[1; 8]), &dc).unwrap();
    q.sq.post_dc(send(1, &[1; 8]), &dc.on_stream(3)).unwrap();
    let (zero, three) = (q.sq.wqe_bytes(0, 128), q.sq.wqe_bytes(2, 128));
    assert_eq!((&zero[9..11], &three[9..11]), (&[0, 0][..], &[0, 3][..]));
    // The rest of the two WQEs differs in the WQE index (bytes 1..3) alone.
    let differ: Vec<usize> = (0..128).filter(|&i| zero[i] != three[i]).collect();
    assert_eq!(differ, [2, 10]);
}
