//! UD multicast: a datagram to a group reaches every attached QP with the GRH area, a
//! detached or never attached QP gets nothing, and the attach refusals.

use mlx5_direct::{
    AhAttr, Data, Error, GlobalRoute, McastGroup, McastRefusal, QpConfig, SendFlags, SendOp,
    SendWr, Status, Transport, UD_GRH_BYTES,
};

use super::super::{assert_empty, poll_n, Drive, Rig, Side};
use super::*;

const QKEY: u32 = 0x1100_2233;
/// The receive buffers: two per side, each the GRH area and 64 bytes.
const RECV_LEN: u32 = UD_GRH_BYTES as u32 + 64;

fn ud_config() -> QpConfig {
    QpConfig {
        transport: Transport::Ud,
        ..QpConfig::default()
    }
}

/// The sides of [`ud_multicast_reaches_attached_qps`]: the sender, the two attached
/// receivers (`b1` detached after the first datagram) and the one never attached.
pub struct Multicast<B: Drive> {
    pub a: Side<B>,
    pub b1: Side<B>,
    pub b2: Side<B>,
    pub c: Side<B>,
}

/// `wr_id` receives the datagram `payload` from `a`: success, its GRH area and payload in
/// the buffer of receive `wr_id` (1 at offset 0, 2 at 256). Returns the 40-byte area.
fn received<B: Drive>(s: &mut Side<B>, a: &Side<B>, wr_id: u64, payload: &[u8]) -> Vec<u8> {
    let r = poll_n(s, 1)[0];
    assert_eq!(
        (r.wr_id, r.status, r.byte_len, r.src_qp()),
        (
            wr_id,
            Status::Success,
            (UD_GRH_BYTES + payload.len()) as u32,
            a.qp.qpn()
        )
    );
    assert!(r.grh_present(), "a multicast datagram always has a GRH");
    let at = (wr_id as usize - 1) * 256;
    assert_eq!(read(s, at + UD_GRH_BYTES, payload.len()), payload);
    read(s, at, UD_GRH_BYTES)
}

/// One sender and three UD QPs of `rig`, two attached to `group`: a datagram the sender
/// addresses to the group (DLID the MLID, DGID the MGID from SGID index `sgid_index`, hop
/// limit 7, QPN 0xFFFFFF) reaches both attached QPs with its GRH area, the third gets
/// nothing; once `b1` is detached a second datagram reaches `b2` alone. On an IPv6 or IB
/// group the area's last 16 bytes are the MGID.
pub fn ud_multicast_reaches_attached_qps<R: Rig>(
    rig: &R,
    group: McastGroup,
    sgid_index: u8,
) -> Multicast<R::B> {
    let [mut a, mut b1, mut b2, mut c] = [(); 4].map(|()| rig.side(&ud_config()));
    for s in [&mut a, &mut b1, &mut b2, &mut c] {
        s.qp.activate_ud(1, QKEY).unwrap();
    }
    for s in [&b1, &b2] {
        s.qp.attach_mcast(&group).unwrap();
        assert_eq!(s.qp.mcast_groups(), [group]);
    }
    for s in [&mut b1, &mut b2, &mut c] {
        for (wr_id, off) in [(1, 0), (2, 256)] {
            let sge = s.mr.sge(off, RECV_LEN);
            s.qp.rq().unwrap().post(wr_id, &[sge]).unwrap();
        }
    }
    let ah =
        a.pd.create_ah(&AhAttr {
            port: 1,
            dlid: group.mlid,
            grh: Some(GlobalRoute {
                dgid: group.mgid,
                sgid_index,
                hop_limit: 7,
                ..GlobalRoute::default()
            }),
            ..AhAttr::default()
        })
        .unwrap();
    let send = |a: &mut Side<R::B>, payload: &'static [u8]| {
        let wr = SendWr {
            wr_id: 9,
            op: SendOp::Send,
            data: Data::Inline(payload),
            flags: SendFlags::SIGNALED,
        };
        a.qp.sq().post_ud(wr, &ah.mcast_dest(QKEY)).unwrap();
        assert_eq!(poll_n(a, 1)[0].status, Status::Success);
    };
    let ipv4 = group.mgid[..12] == [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff];

    send(&mut a, b"market data");
    for s in [&mut b1, &mut b2] {
        let area = received(s, &a, 1, b"market data");
        if !ipv4 {
            assert_eq!(area[24..], group.mgid, "the DGID is the MGID");
        }
    }
    assert_empty(&mut c);

    b1.qp.detach_mcast(&group).unwrap();
    assert_eq!(b1.qp.mcast_groups(), []);
    send(&mut a, b"tick 2");
    received(&mut b2, &a, 2, b"tick 2");
    assert_empty(&mut b1);
    assert_empty(&mut c);
    Multicast { a, b1, b2, c }
}

/// What attach and detach refuse before the device is asked: a QP that is not UD, an MGID
/// that is not multicast, on InfiniBand an MLID that is not a multicast LID, a second
/// attach to the same group, a detach from a group the QP is not attached to. `group` is a
/// valid group for the rig's port.
pub fn mcast_attach_refuses_bad_input<R: Rig>(rig: &R, group: McastGroup) {
    let refused = |r: Result<(), Error>| match r {
        Err(Error::Multicast(why)) => why,
        other => panic!("{other:?}"),
    };
    let rc = rig.side(&QpConfig::default());
    assert_eq!(
        refused(rc.qp.attach_mcast(&group)),
        McastRefusal::NotUd {
            transport: Transport::Rc
        }
    );
    let ud = rig.side(&ud_config());
    let unicast = McastGroup {
        mgid: ud.ctx.port(1).unwrap().gid,
        ..group
    };
    assert_eq!(
        refused(ud.qp.attach_mcast(&unicast)),
        McastRefusal::NotMulticastGid
    );
    if !ud.ctx.port(1).unwrap().roce {
        let unicast_lid = McastGroup {
            mlid: ud.ctx.port(1).unwrap().lid,
            ..group
        };
        assert_eq!(
            refused(ud.qp.attach_mcast(&unicast_lid)),
            McastRefusal::NotMulticastLid {
                mlid: unicast_lid.mlid
            }
        );
    }
    assert_eq!(
        refused(ud.qp.detach_mcast(&group)),
        McastRefusal::NotAttached
    );
    ud.qp.attach_mcast(&group).unwrap();
    assert_eq!(
        refused(ud.qp.attach_mcast(&group)),
        McastRefusal::AlreadyAttached
    );
    assert_eq!(ud.qp.mcast_groups(), [group]);
    ud.qp.detach_mcast(&group).unwrap();
    assert_eq!(
        refused(ud.qp.detach_mcast(&group)),
        McastRefusal::NotAttached
    );
}
