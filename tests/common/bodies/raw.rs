//! Raw Ethernet bodies: a raw packet QP's frame seen by a sniffer rule of another raw
//! packet QP on the same port (a sniffer gets the frames the port sends: one device
//! suffices), byte for byte, with its checksum offload and the Ethernet fields; and the
//! same port's frames taken by a striding work queue behind an RSS QP's sniffer rule; and a
//! raw packet QP's rate limit.

use mlx5_direct::prm::L3Type;
use mlx5_direct::{
    Checksum, Context, Data, Error, EthWr, FlowRule, QpConfig, RateLimit, RxHashConfig,
    StridingConfig, StridingWq, Transport,
};

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

/// Where a striding queue of `per_wqe` strides per WQE puts frames, as a test expects it:
/// the WQE counter, the strides used of that WQE, the fillers the device wrote.
#[derive(Debug)]
pub struct StrideCursor {
    pub per_wqe: u16,
    pub wqe: u16,
    pub used: u16,
    pub fillers: u64,
}

impl StrideCursor {
    pub fn new(per_wqe: u16) -> Self {
        StrideCursor {
            per_wqe,
            wqe: 0,
            used: 0,
            fillers: 0,
        }
    }

    /// The WQE and first stride of the next frame, of `strides` strides: the next WQE
    /// when it does not fit the strides left (a filler ends the one before).
    pub fn place(&mut self, strides: u16) -> (u16, u16) {
        if self.used + strides > self.per_wqe {
            (self.wqe, self.used, self.fillers) = (self.wqe + 1, 0, self.fillers + 1);
        }
        let at = (self.wqe, self.used);
        self.used += strides;
        if self.used == self.per_wqe {
            (self.wqe, self.used) = (self.wqe + 1, 0);
        }
        at
    }
}

/// Polls `wq` (with `ctx`'s progress between empty polls) until one frame came; returns
/// its bytes, WQE counter, first stride and strides.
pub fn one_frame<B: Drive>(ctx: &Context<B>, wq: &mut StridingWq<B>) -> (Vec<u8>, u16, u16, u16) {
    for _ in 0..10_000 {
        let mut got = None;
        let n = wq
            .poll(1, |f| {
                got = Some((f.bytes.to_vec(), f.wqe, f.stride, f.strides))
            })
            .unwrap();
        if n == 1 {
            return got.unwrap();
        }
        B::progress(ctx);
    }
    panic!("no frame arrived");
}

/// `a` sends 24 UDP frames of 60 to 250 bytes; a striding work queue of 4 WQEs of 8
/// strides of 64 bytes, behind an RSS QP with a sniffer rule, hands each out in place,
/// byte for byte, at the WQE and strides this test expects: a frame that does not fit
/// the strides left of a WQE starts the next (the device's filler), and the ring wraps.
pub fn a_striding_queue_takes_frames_in_place<R: Rig>(rig: &R)
where
    R::B: Drive,
{
    let mut a = raw_side(rig);
    let caps = a.ctx.eth_caps().unwrap();
    assert!(caps.striding_rq, "a device with striding RQs");
    // 8 strides per WQE: a device with `ext_stride_num_range` (else 512 at least).
    let config = StridingConfig {
        log_wqes: 2,
        log_stride_bytes: 6,
        log_num_strides: 3,
        two_byte_shift: false,
    };
    let mut wq = a.pd.create_striding_wq(&config).unwrap();
    let rss = a.pd.create_rss_qp(&[&wq], None).unwrap();
    let _sniff = rss.create_flow(&FlowRule::sniffer()).unwrap();
    let header = caps.min_inline.max(14);
    let mut cursor = StrideCursor::new(8);
    for i in 0..24usize {
        let payload: Vec<u8> = (0..18 + (i * 37) % 191).map(|k| (i + k) as u8).collect();
        let dst = [0x02, 0x11, 0x22, 0x33, 0x44, 0x55];
        let frame = udp_frame(dst, caps.mac, None, i as u16, 9, &payload, true);
        let strides = frame.len().div_ceil(64) as u16;
        let (wqe, stride) = cursor.place(strides);
        a.mr.write(0, &frame[header..]);
        let gather = [a.mr.sge(0, (frame.len() - header) as u32)];
        let wr = EthWr::new(1, &frame[..header], Data::Sges(&gather));
        a.qp.sq().post_eth(&wr).unwrap();
        let c = poll_n(&mut a, 1)[0];
        assert!(c.status.is_ok(), "{c:?}");
        let (bytes, got_wqe, got_stride, got_strides) = one_frame(&a.ctx, &mut wq);
        assert_eq!(bytes, frame, "frame {i}");
        let got = (got_wqe, got_stride, got_strides);
        assert_eq!(got, (wqe, stride, strides), "frame {i}");
    }
    assert!(cursor.wqe >= 4, "the 4-WQE ring wrapped: {cursor:?}");
    assert!(cursor.fillers > 0, "some frames did not fit: {cursor:?}");
    let want = (u32::from(cursor.wqe), u32::from(cursor.used));
    assert_eq!(wq.position(), want);
}

/// An RSS QP over two striding work queues with a Toeplitz hash of the IPv4 addresses and
/// UDP ports, behind a sniffer rule: each of 32 UDP flows (source ports 4000..4031) that
/// `a` sends lands whole in the queue its hash names (entry `hash & 1`), the CQE carrying
/// the hash, and both queues take some.
pub fn rss_spreads_flows_over_striding_queues_by_hash<R: Rig>(rig: &R)
where
    R::B: Drive,
{
    let mut a = raw_side(rig);
    let caps = a.ctx.eth_caps().unwrap();
    let config = StridingConfig {
        log_wqes: 2,
        log_stride_bytes: 6,
        log_num_strides: 3,
        two_byte_shift: false,
    };
    let mut wqs = [
        a.pd.create_striding_wq(&config).unwrap(),
        a.pd.create_striding_wq(&config).unwrap(),
    ];
    let hash = RxHashConfig {
        key: [0x6d; 40],
        fields: RxHashConfig::SRC_IPV4
            | RxHashConfig::DST_IPV4
            | RxHashConfig::SRC_PORT_UDP
            | RxHashConfig::DST_PORT_UDP,
    };
    let rss =
        a.pd.create_rss_qp(&[&wqs[0], &wqs[1]], Some(&hash))
            .unwrap();
    let _sniff = rss.create_flow(&FlowRule::sniffer()).unwrap();
    let header = caps.min_inline.max(14);
    let mut per_queue = [0usize; 2];
    for port in 0..32u16 {
        let dst = [0x02, 0x11, 0x22, 0x33, 0x44, 0x55];
        let f = udp_frame(dst, caps.mac, None, 4000 + port, 9, &[1; 30], true);
        a.mr.write(0, &f[header..]);
        let gather = [a.mr.sge(0, (f.len() - header) as u32)];
        a.qp.sq()
            .post_eth(&EthWr::new(1, &f[..header], Data::Sges(&gather)))
            .unwrap();
        let c = poll_n(&mut a, 1)[0];
        assert!(c.status.is_ok(), "{c:?}");
        let mut landed = None;
        for _ in 0..10_000 {
            for (q, wq) in wqs.iter_mut().enumerate() {
                wq.poll(1, |fr| {
                    assert_eq!(fr.bytes, &f[..], "flow {port}");
                    assert_eq!(fr.eth.hdr.l3(), L3Type::Ipv4);
                    assert_ne!(fr.eth.rss_hash, 0);
                    landed = Some((q, fr.eth.rss_hash));
                })
                .unwrap();
            }
            if landed.is_some() {
                break;
            }
            R::B::progress(&a.ctx);
        }
        let (q, h) = landed.expect("a frame in one queue");
        assert_eq!(q, (h & 1) as usize, "flow {port}: hash {h:#x}");
        per_queue[q] += 1;
    }
    assert!(per_queue[0] > 0 && per_queue[1] > 0, "{per_queue:?}");
}

/// A raw packet QP takes a rate limit (`ibv_modify_qp_rate_limit`: raw packet QPs are
/// the one type every mlx5 kernel with packet pacing names in `supported_qpts`); a rate
/// above the device's maximum and a burst without a rate are refused; frames still leave
/// under the limit, and the limit is removed. A device without pacing refuses the first.
pub fn a_raw_qp_takes_a_rate_limit<R: Rig>(rig: &R)
where
    R::B: Drive,
{
    let mut a = raw_side(rig);
    let pacing = a.ctx.caps().pacing;
    let limit = RateLimit {
        kbps: pacing.min_kbps.max(1_000_000),
        ..RateLimit::default()
    };
    if pacing.max_kbps == 0 {
        assert!(matches!(
            a.qp.set_rate_limit(&limit),
            Err(Error::Unsupported(_))
        ));
        return;
    }
    assert!(pacing.raw, "{pacing:?}");
    a.qp.set_rate_limit(&limit).unwrap();
    let too_fast = RateLimit {
        kbps: pacing.max_kbps.saturating_add(1),
        ..RateLimit::default()
    };
    if too_fast.kbps > pacing.max_kbps {
        assert!(matches!(
            a.qp.set_rate_limit(&too_fast),
            Err(Error::InvalidArgument(_))
        ));
    }
    let burst_only = RateLimit {
        max_burst_sz: 4096,
        ..RateLimit::default()
    };
    assert!(matches!(
        a.qp.set_rate_limit(&burst_only),
        Err(Error::InvalidArgument(_))
    ));
    let caps = a.ctx.eth_caps().unwrap();
    let dst = [0x02, 0x11, 0x22, 0x33, 0x44, 0x56];
    let frame = udp_frame(dst, caps.mac, None, 1111, 2222, &[0x3c; 200], true);
    let header = caps.min_inline.max(14);
    a.mr.write(0, &frame[header..]);
    let gather = [a.mr.sge(0, (frame.len() - header) as u32)];
    for i in 0..4 {
        let wr = EthWr::new(i, &frame[..header], Data::Sges(&gather));
        a.qp.sq().post_eth(&wr).unwrap();
    }
    let done = poll_n(&mut a, 4);
    assert!(done.iter().all(|c| c.status.is_ok()), "{done:?}");
    assert_eq!(
        done.iter().map(|c| c.wr_id).collect::<Vec<_>>(),
        [0, 1, 2, 3]
    );
    a.qp.set_rate_limit(&RateLimit::default()).unwrap();
}
