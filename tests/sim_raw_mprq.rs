//! Striding receive on the model: an RSS QP over striding work queues, frames handed out
//! in place at the strides the device wrote them to, filler CQEs consumed, WQEs posted
//! again across the ring's wrap, the two-byte shift, and the RSS hash spreading flows.

mod common;

use common::bodies::{one_frame, StrideCursor};
use common::raw::*;
use mlx5_direct::backend::sim::Fabric;
use mlx5_direct::{FlowRule, StridingConfig};

/// 4 WQEs of 8 strides of 64 bytes.
const SMALL: StridingConfig = StridingConfig {
    log_wqes: 2,
    log_stride_bytes: 6,
    log_num_strides: 3,
    two_byte_shift: false,
};

/// The body `tests/verbs_hw.rs` runs on a NIC (and on the emulator).
#[test]
fn a_striding_queue_takes_frames_in_place() {
    let fabric = Fabric::new();
    let rig = (
        fabric.clone(),
        eth_nic(mlx5_direct::backend::sim::EthConfig::default()),
    );
    common::bodies::a_striding_queue_takes_frames_in_place(&rig);
}

#[test]
fn frames_fill_strides_and_the_ring_wraps() {
    let fabric = Fabric::new();
    let (mut a, b) = raw_pair(&fabric);
    let mut wq = b.pd.create_striding_wq(&SMALL).unwrap();
    let rss = b.pd.create_rss_qp(&[&wq], None).unwrap();
    let _flow = rss.create_flow(&FlowRule::dst_mac(mac(&b))).unwrap();
    // The queue as this test sees it: WQE counter, strides used, fillers.
    let mut cursor = StrideCursor::new(8);
    for i in 0..40usize {
        // 60..=250-byte frames: 1 to 4 strides each.
        let payload: Vec<u8> = (0..18 + (i * 37) % 191).map(|k| (i + k) as u8).collect();
        let f = udp_frame(mac(&b), mac(&a), None, i as u16, 9, &payload, true);
        let strides = f.len().div_ceil(64) as u16;
        let (wqe, used) = cursor.place(strides);
        send_frame(&mut a, &f, 0, |_| {});
        let (bytes, got_wqe, stride, got_strides) = one_frame(&b.ctx, &mut wq);
        assert_eq!(bytes, f, "frame {i}");
        assert_eq!(
            (got_wqe, stride, got_strides),
            (wqe, used, strides),
            "frame {i}"
        );
    }
    let (wqe, used, fillers) = (cursor.wqe, cursor.used, cursor.fillers);
    assert!(wqe >= 8, "the 4-WQE ring wrapped twice: {wqe}");
    assert!(
        fillers > 0,
        "some frames did not fit their WQE's strides left"
    );
    assert_eq!(wq.position(), (u32::from(wqe), u32::from(used)));
    let stats = eth_stats(&b);
    assert_eq!(stats.mprq_fillers, fillers);
    assert_eq!(stats.rx_delivered, 40);
    assert_eq!(stats.rx_out_of_buffer, 0);
}

#[test]
fn the_two_byte_shift_aligns_the_ip_header() {
    let fabric = Fabric::new();
    let (mut a, b) = raw_pair(&fabric);
    let config = StridingConfig {
        two_byte_shift: true,
        ..SMALL
    };
    let mut wq = b.pd.create_striding_wq(&config).unwrap();
    let rss = b.pd.create_rss_qp(&[&wq], None).unwrap();
    let _flow = rss.create_flow(&FlowRule::dst_mac(mac(&b))).unwrap();
    // 126 bytes + the 2-byte shift: 2 strides; 127 would take 3.
    for (len, strides) in [(126usize, 2u16), (127, 3)] {
        let f = udp_frame(mac(&b), mac(&a), None, 1, 2, &vec![5; len - 42], true);
        send_frame(&mut a, &f, 0, |_| {});
        let (bytes, _, _, got) = one_frame(&b.ctx, &mut wq);
        assert_eq!((bytes, got), (f, strides));
    }
}

/// The body `tests/verbs_hw.rs` runs on a NIC (and on the emulator).
#[test]
fn rss_spreads_flows_over_the_work_queues_by_hash() {
    let fabric = Fabric::new();
    let rig = (
        fabric.clone(),
        eth_nic(mlx5_direct::backend::sim::EthConfig::default()),
    );
    common::bodies::rss_spreads_flows_over_striding_queues_by_hash(&rig);
}
