//! The driver against the model: RC operations end to end (bodies shared with the hardware
//! tests, `common::bodies`).

mod common;

use common::bodies;
use mlx5_direct::backend::sim::{Fabric, NicConfig, Sim};
use mlx5_direct::{
    Access, ConnectOptions, Context, Data, Error, QpConfig, SendFlags, SendOp, Status,
};

#[test]
fn inline_write_lands_and_completes() {
    let (a, _b) = bodies::inline_write_lands_and_completes(&Fabric::new());
    let stats = a.ctx.backend().nic().stats();
    assert_eq!(stats.bf_mismatch, 0);
    assert_eq!(stats.bf_used, 1);
}

#[test]
fn send_with_immediate_reaches_a_posted_receive() {
    bodies::send_with_immediate_reaches_a_posted_receive(&Fabric::new());
}

#[test]
fn armed_cq_raises_one_event_per_arm() {
    bodies::armed_cq_raises_one_event_per_arm(&Fabric::new());
}

#[test]
fn event_driven_ping_pong() {
    bodies::event_driven_ping_pong(&Fabric::new());
}

#[test]
fn a_batch_completes_in_every_doorbell_mode() {
    bodies::a_batch_completes_in_every_doorbell_mode(&Fabric::new());
}

#[test]
fn operations_complete_on_128_byte_cqes() {
    bodies::operations_complete_on_128_byte_cqes(&Fabric::new());
}

#[test]
fn queues_are_sized_by_rdma_cores_formula() {
    bodies::queues_are_sized_by_rdma_cores_formula(&Fabric::new());
}

#[test]
fn connecting_takes_the_port_depth_and_rights_of_the_device() {
    bodies::connecting_takes_the_port_depth_and_rights_of_the_device(&Fabric::new());
}

/// A model NIC opened on its second port: QPs use port 2 unless told otherwise, as a ConnectX
/// opened with `VerbsOptions { port: 2, .. }` does; a port the NIC lacks is refused at open.
#[test]
fn the_opened_port_is_the_default_for_qps_and_connections() {
    let fabric = Fabric::new();
    let two_ports = NicConfig {
        ports: 2,
        ..NicConfig::default()
    };
    let open = |port| Sim::on_fabric(&fabric, two_ports.clone()).on_port(port);
    assert_eq!(
        open(3).map(|_| ()),
        Err(Error::InvalidArgument("no such port on the device"))
    );
    let side = |port| {
        common::side_on(
            Context::new(open(port).unwrap()),
            &QpConfig::default(),
            256,
            64,
        )
    };
    let (mut a, mut b) = (side(2), side(2));
    assert_eq!((a.qp.port(), b.qp.port()), (2, 2));
    common::connect(&mut a, &mut b);
    assert_eq!(a.qp.port(), 2);
    a.qp.sq()
        .post(
            1,
            SendOp::Write(b.mr.remote(0)),
            Data::Inline(b"port 2"),
            SendFlags::SIGNALED,
        )
        .unwrap();
    assert_eq!(common::poll_n(&mut a, 1)[0].status, Status::Success);
    // A port named by the caller wins: in `init`, or in the options of `connect`.
    let mut c = side(2);
    c.qp.init(1, Access::ALL).unwrap();
    assert_eq!(c.qp.port(), 1);
    let mut d = side(2);
    let options = ConnectOptions {
        port: Some(3),
        ..ConnectOptions::default()
    };
    assert!(matches!(
        d.qp.connect(&a.qp.endpoint().unwrap(), &options),
        Err(Error::Device {
            operation: "modify QP",
            ..
        })
    ));
}

#[test]
fn connect_options_set_the_sl_and_refuse_what_does_not_fit() {
    let fabric = Fabric::new();
    let mut a = common::side(&fabric, &QpConfig::default());
    let mut b = common::side(&fabric, &QpConfig::default());
    let eb = b.qp.endpoint().unwrap();
    // Out of range: refused before the QP changes state.
    for (bad, what) in [
        (
            ConnectOptions {
                sl: 16,
                ..ConnectOptions::default()
            },
            "ConnectOptions::sl above 15 (4 bits)",
        ),
        (
            ConnectOptions {
                flow_label: 1 << 20,
                ..ConnectOptions::default()
            },
            "ConnectOptions::flow_label above 20 bits",
        ),
    ] {
        assert_eq!(a.qp.connect(&eb, &bad), Err(Error::InvalidArgument(what)));
        assert_eq!(a.qp.state(), mlx5_direct::QpState::Reset);
    }
    // The model's P_Key table holds index 0 alone: index 1 is beyond it, refused at INIT.
    let beyond = ConnectOptions {
        pkey_index: 1,
        ..ConnectOptions::default()
    };
    assert!(matches!(
        a.qp.connect(&eb, &beyond),
        Err(Error::Device {
            operation: "modify QP",
            ref reason,
        }) if reason.contains("pkey_index")
    ));
    assert_eq!(a.qp.state(), mlx5_direct::QpState::Reset);
    // In range: the SL lands in the QP context, the flow label (no GRH here) changes
    // nothing, and the connection carries traffic.
    let options = ConnectOptions {
        sl: 15,
        flow_label: 0xf_ffff,
        ..ConnectOptions::default()
    };
    common::connect_with(&mut a, &mut b, &options);
    let nic = a.ctx.backend().nic();
    assert_eq!(nic.qp_sl(a.qp.qpn()).unwrap(), 15);
    assert_eq!(b.ctx.backend().nic().qp_sl(b.qp.qpn()).unwrap(), 15);
    a.qp.sq()
        .post(
            1,
            SendOp::Write(b.mr.remote(0)),
            Data::Inline(b"sl 15"),
            SendFlags::SIGNALED,
        )
        .unwrap();
    assert_eq!(common::poll_n(&mut a, 1)[0].status, Status::Success);
    let mut buf = [0u8; 5];
    b.mr.read(0, &mut buf);
    assert_eq!(&buf, b"sl 15");
}
