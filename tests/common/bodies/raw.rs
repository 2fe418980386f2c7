//! Raw Ethernet bodies: a raw packet QP's frame seen by a sniffer rule of another raw
//! packet QP on the same port (a sniffer gets the frames the port sends: one device
//! suffices), byte for byte, with its checksum offload and the Ethernet fields.

use mlx5_direct::{Checksum, Data, EthWr, FlowRule, QpConfig, Transport};

use super::super::{poll_n, raw::fix_checksums, raw::udp_frame, Drive, Rig, Side};

/// A raw side of `rig` in RTS on port 1.
pub fn raw_side<R: Rig>(rig: &R) -> Side<R::B> {
    let config = QpConfig {
        transport: Transport::Raw,
        max_inline: 256,
        ..QpConfig::default()
    };
    let mut s = rig.side(&config);
    s.qp.activate_raw(1).unwrap();
    s
}

/// `a` sends a UDP frame with zeroed checksums and the offload asked for; `b`'s sniffer
/// gets it with the checksums right and reported right.
pub fn a_sniffer_sees_a_sent_frame_with_its_checksums<R: Rig>(rig: &R)
where
    R::B: Drive,
{
    let mut a = raw_side(rig);
    let mut b = raw_side(rig);
    let caps = a.ctx.eth_caps().unwrap();
    let _sniff = b.qp.create_flow(&FlowRule::sniffer()).unwrap();
    let sge = b.mr.sge(0, 2048);
    b.qp.rq().unwrap().post(7, &[sge]).unwrap();
    let dst = [0x02, 0x11, 0x22, 0x33, 0x44, 0x55];
    let frame = udp_frame(dst, caps.mac, None, 1111, 2222, &[0xa5; 64], false);
    // The header inline (at least what the device needs), the rest gathered.
    let header = caps.min_inline.max(14);
    a.mr.write(0, &frame[header..]);
    let gather = [a.mr.sge(0, (frame.len() - header) as u32)];
    let mut wr = EthWr::new(1, &frame[..header], Data::Sges(&gather));
    wr.checksum = Checksum::IP;
    a.qp.sq().post_eth(&wr).unwrap();
    let c = poll_n(&mut a, 1)[0];
    assert!(c.status.is_ok(), "{c:?}");
    let c = poll_n(&mut b, 1)[0];
    assert!(c.status.is_ok(), "{c:?}");
    let mut right = frame.clone();
    fix_checksums(&mut right, 14);
    assert_eq!(c.byte_len, right.len() as u32);
    let mut got = vec![0u8; right.len()];
    b.mr.read(0, &mut got);
    assert_eq!(got, right);
    assert!(c.eth().unwrap().ip_csum_ok());
}
