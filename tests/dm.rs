//! Device memory (MEMIC) on the model (issue 17): allocation and its typed refusals, copies
//! as counted MMIO writes, zero-based regions, the per-queue slot path, and what a WRITE
//! from device memory costs on the link against the same WRITE gathered from host memory.

mod common;
use common::bodies::{device_memory_slots_carry_payloads, read};
use common::{poll_n, rig_pair, Side};
use mlx5_direct::backend::sim::{Fabric, NicConfig, PcieCounters, Sim};
use mlx5_direct::{
    Access, Context, Data, DmRefusal, DmSlots, DoorbellMode, Error, SendFlags, SendOp, Status,
};
use std::sync::Arc;

fn with_dm(size: u64) -> (Arc<Fabric>, NicConfig) {
    (
        Fabric::new(),
        NicConfig {
            dm_size: size,
            ..NicConfig::default()
        },
    )
}

fn nic_pcie(s: &Side) -> PcieCounters {
    s.ctx.backend().nic().pcie()
}

#[test]
fn slots_carry_payloads_and_gather_without_dma_reads() {
    let (a, _b) = device_memory_slots_carry_payloads(&with_dm(64 << 10));
    let s = a.ctx.backend().nic().stats();
    // Five messages gathered from device memory: 200 + 217 + 234 + 251 + 100 bytes.
    assert_eq!((s.dm_gathers, s.dm_gather_bytes), (5, 1002));
    // Each copy in lines and words: 200 = 3 lines + 1 word, 217 = 3 + 4, 234 = 3 + 6,
    // 251 = 3 + 8, 100 = 1 + 5 (the last word of each padded).
    assert_eq!(s.dm_writes, (3 + 1) + (3 + 4) + (3 + 6) + (3 + 8) + (1 + 5));
}

#[test]
fn allocation_refusals_are_typed() {
    let none = Context::new(Sim::new());
    assert_eq!(none.caps().max_dm_size, 0);
    assert_eq!(
        none.alloc_dm(64).unwrap_err(),
        Error::DeviceMemory(DmRefusal::NoDeviceMemory)
    );
    let (fabric, config) = with_dm(8192);
    let ctx = Context::new(Sim::on_fabric(&fabric, config));
    assert_eq!(ctx.caps().max_dm_size, 8192);
    assert!(matches!(ctx.alloc_dm(0), Err(Error::InvalidArgument(_))));
    assert_eq!(
        ctx.alloc_dm(8193).unwrap_err(),
        Error::DeviceMemory(DmRefusal::TooLarge {
            len: 8193,
            max: 8192
        })
    );
    // 100 bytes round up to 128 and take a 4 KiB page of the two; 4097 bytes need both.
    let small = ctx.alloc_dm(100).unwrap();
    assert_eq!(small.len(), 128);
    assert_eq!(
        ctx.alloc_dm(4097).unwrap_err(),
        Error::DeviceMemory(DmRefusal::Exhausted { len: 4097 })
    );
    drop(small);
    let big = ctx.alloc_dm(4097).unwrap();
    assert_eq!(big.len(), 4160);

    assert_eq!(
        big.copy_in(4, &[1; 8]).unwrap_err(),
        Error::DeviceMemory(DmRefusal::Misaligned { value: 4, align: 8 })
    );
    // 4153 bytes at 8 round up to 4160 at 8: one word past the end.
    assert_eq!(
        big.copy_in(8, &[1; 4153]).unwrap_err(),
        Error::DeviceMemory(DmRefusal::OutOfRange {
            offset: 8,
            len: 4160,
            size: 4160
        })
    );
    let pd = ctx.alloc_pd().unwrap();
    assert_eq!(
        big.register(&pd, 32, 64, Access::NONE).unwrap_err(),
        Error::DeviceMemory(DmRefusal::Misaligned {
            value: 32,
            align: 64
        })
    );
    assert_eq!(
        big.register(&pd, 4096, 65, Access::NONE).unwrap_err(),
        Error::DeviceMemory(DmRefusal::OutOfRange {
            offset: 4096,
            len: 65,
            size: 4160
        })
    );
    // The model does not let the NIC write device memory.
    assert!(matches!(
        big.register(&pd, 0, 64, Access::LOCAL_WRITE),
        Err(Error::Unsupported(_))
    ));
    let region = big.register(&pd, 64, 1024, Access::NONE).unwrap();
    assert_eq!((region.offset(), region.len()), (64, 1024));
    let sge = region.sge(128, 32);
    assert_eq!((sge.addr, sge.len, sge.lkey), (128, 32, region.lkey()));
    assert!(matches!(
        DmSlots::new(region, 96),
        Err(Error::DeviceMemory(DmRefusal::Misaligned {
            value: 96,
            align: 64
        }))
    ));
}

/// Copies go as 64-byte lines where a whole aligned line is written, else as 8-byte words
/// (the last padded): one MMIO write each, nothing up.
#[test]
fn copies_cross_as_lines_and_words() {
    let (fabric, config) = with_dm(4096);
    let ctx = Context::new(Sim::on_fabric(&fabric, config));
    let dm = ctx.alloc_dm(256).unwrap();
    let nic = ctx.backend().nic();
    let cost = |f: &dyn Fn()| {
        let before = nic.pcie();
        f();
        nic.pcie() - before
    };
    // 100 bytes at 0: a line, then 36 bytes as 5 words.
    let c = cost(&|| dm.copy_in(0, &[7; 100]).unwrap());
    assert_eq!(
        (c.mmio_writes, c.payload_down, c.bytes_down, c.tlps_up),
        (6, 64 + 40, 88 + 5 * 32, 0)
    );
    // 64 bytes at 8 straddle a line: 8 words.
    let c = cost(&|| dm.copy_in(8, &[7; 64]).unwrap());
    assert_eq!((c.mmio_writes, c.payload_down), (8, 64));
    // 256 bytes at 0: four lines.
    let c = cost(&|| dm.copy_in(0, &[7; 256]).unwrap());
    assert_eq!((c.mmio_writes, c.bytes_down), (4, 4 * 88));
}

/// A 256-byte WRITE gathered from device memory against the same WRITE gathered from host
/// memory (doorbell mode, signaled; model numbers): the payload crosses down as the CPU's
/// four 64-byte writes (4 × 88 = 352 bytes) instead of the NIC's read request up (24) and
/// its completion down (256 + 20); the WQE fetch and the CQE are the same.
#[test]
fn write_from_device_memory_costs_cpu_writes_instead_of_a_dma_read() {
    let (mut a, b) = rig_pair(&with_dm(64 << 10));
    a.qp.sq().set_mode(DoorbellMode::Doorbell);
    let payload: Vec<u8> = (0..256).map(|i| (i * 5 + 1) as u8).collect();
    let dm = a.ctx.alloc_dm(256).unwrap();
    let region = dm.register(&a.pd, 0, 256, Access::NONE).unwrap();

    let before = nic_pcie(&a);
    region.copy_in(0, &payload).unwrap();
    let sge = region.sge(0, 256);
    a.qp.sq()
        .post(
            1,
            SendOp::Write(b.mr.remote(0)),
            Data::Sges(&[sge]),
            SendFlags::SIGNALED,
        )
        .unwrap();
    assert_eq!(poll_n(&mut a, 1)[0].status, Status::Success);
    let on_chip = nic_pcie(&a) - before;
    assert_eq!(read(&b, 0, 256), payload);

    a.mr.write(0, &payload);
    let before = nic_pcie(&a);
    a.qp.sq()
        .post(
            2,
            SendOp::Write(b.mr.remote(512)),
            Data::Sges(&[a.mr.sge(0, 256)]),
            SendFlags::SIGNALED,
        )
        .unwrap();
    assert_eq!(poll_n(&mut a, 1)[0].status, Status::Success);
    let host = nic_pcie(&a) - before;
    assert_eq!(read(&b, 512, 256), payload);

    // Both write the CQE (one MWr up).
    assert_eq!((on_chip.dma_writes, host.dma_writes), (1, 1));
    let counts = |c: PcieCounters| {
        [
            c.mmio_writes,
            c.dma_reads,
            c.completions,
            c.bytes_down,
            c.bytes_up,
        ]
    };
    // 4 lines + doorbell 32 + WQE fetch (24 up, 64 + 20 down) + CQE 88 up.
    assert_eq!(counts(on_chip), [5, 1, 1, 352 + 32 + 84, 24 + 88]);
    // Doorbell + WQE fetch + gather (24 up, 256 + 20 down) + CQE.
    assert_eq!(counts(host), [1, 2, 2, 32 + 84 + 276, 24 + 24 + 88]);
}

#[test]
fn slots_stay_attached_while_in_flight_and_free_on_reset() {
    let (mut a, b) = rig_pair(&with_dm(64 << 10));
    let dm = a.ctx.alloc_dm(512).unwrap();
    let pd = a.pd.clone();
    let slots = |at| DmSlots::new(dm.register(&pd, at, 256, Access::NONE).unwrap(), 128);
    let first = slots(0).unwrap();
    let second = slots(256).unwrap();
    let sq = a.qp.sq();
    sq.attach_dm(first).unwrap();
    sq.post_dm(
        1,
        SendOp::Write(b.mr.remote(0)),
        &[3; 128],
        SendFlags::SIGNALED,
    )
    .unwrap();
    assert_eq!(
        sq.attach_dm(second),
        Err(Error::Busy("device-memory slots"))
    );
    poll_n(&mut a, 1);
    // Completed: the slots may be replaced.
    a.qp.sq().attach_dm(slots(256).unwrap()).unwrap();
    a.qp.sq()
        .post_dm(
            2,
            SendOp::Write(b.mr.remote(0)),
            &[4; 128],
            SendFlags::UNSIGNALED,
        )
        .unwrap();
    assert_eq!(a.qp.sq().dm_slots().unwrap().in_flight(), 1);
    a.qp.reset().unwrap();
    assert_eq!(a.qp.sq().dm_slots().unwrap().in_flight(), 0);
}

/// Payloads pushed before one doorbell sit in slots of their own (slot k at k × the slot
/// size): each WRITE gathers its own bytes, not a later payload's.
#[test]
fn payloads_pushed_before_one_doorbell_use_their_own_slots() {
    let (mut a, b) = rig_pair(&with_dm(64 << 10));
    let dm = a.ctx.alloc_dm(512).unwrap();
    let slots = DmSlots::new(dm.register(&a.pd, 0, 512, Access::NONE).unwrap(), 128).unwrap();
    let sq = a.qp.sq();
    sq.attach_dm(slots).unwrap();
    for (k, byte) in [5u8, 6, 7].into_iter().enumerate() {
        let op = SendOp::Write(b.mr.remote(k * 128));
        sq.push_dm(k as u64, op, &[byte; 100], SendFlags::SIGNALED)
            .unwrap();
    }
    assert_eq!(sq.dm_slots().unwrap().in_flight(), 3);
    assert_eq!(sq.ring_doorbell(), 3);
    poll_n(&mut a, 3);
    for (k, byte) in [5u8, 6, 7].into_iter().enumerate() {
        assert_eq!(read(&b, k * 128, 100), [byte; 100], "slot {k}");
    }
}
