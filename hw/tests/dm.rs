//! Device memory (MEMIC): allocation as the kernel's `mlx5_cmd_alloc_memic` does it, CPU
//! writes counted as MMIO write TLPs, a zero-based key gathered from without a DMA read, and
//! the refusals (docs/model.md, "Device memory").

mod common;
use common::*;
use mlx5_hw::{Access, Fabric, HwError, Nic, NicConfig, PcieCounters};

const LOCAL_PROT_ERR: u8 = 0x04;
const REQ_ERR: u8 = 0x0d;

fn with_dm(size: u64) -> NicConfig {
    NicConfig {
        dm_size: size,
        ..NicConfig::default()
    }
}

/// MMIO-only traffic: `n` writes of `len` payload bytes each (24 bytes of overhead each).
fn mmio(n: u64, len: u64) -> PcieCounters {
    PcieCounters {
        mmio_writes: n,
        tlps_down: n,
        bytes_down: n * (len + 24),
        payload_down: n * len,
        ..PcieCounters::default()
    }
}

/// Copies `bytes` (a multiple of 64) into allocation `dm` at 0 as merged 64-byte lines.
fn copy_lines(nic: &Nic, dm: u32, bytes: &[u8]) {
    for (i, line) in bytes.chunks(64).enumerate() {
        nic.dm_write(dm, i as u64 * 64, line);
    }
}

#[test]
fn write_gathers_from_device_memory_without_a_dma_read() {
    let (_f, mut a, b) = pair_with(Cfg::default(), Conn::default(), with_dm(64 << 10));
    assert_eq!(a.nic.caps().max_dm_size, 64 << 10);
    let payload: Vec<u8> = (0..256u32).map(|i| (i * 7 + 3) as u8).collect();
    let (dm, size) = a.nic.alloc_dm(256, 0).unwrap();
    assert_eq!(size, 256);
    let before = a.nic.pcie();
    copy_lines(&a.nic, dm, &payload);
    // Four 64-byte lines: 4 MWr of 64 + 24 down, nothing up.
    assert_eq!(a.nic.pcie() - before, mmio(4, 64));
    let key = a.nic.reg_dm_mr(a.pd, dm, 0, 256, Access::NONE).unwrap();

    let (a0, b0) = (a.nic.pcie(), b.nic.pcie());
    a.post_op(
        WRITE,
        0,
        SIGNALED,
        0,
        &[raddr_seg(b.data(0), b.key), data_seg(256, key, 0)],
    );
    a.ring();
    let c = a.drain_send();
    assert_eq!((c.len(), c[0].opcode), (1, 0));
    assert_eq!(b.read_data(0, 256), payload);
    // Doorbell 8 + 24 and the WQE fetch (MRd 24 up, CplD 64 + 20 down), the CQE 64 + 24:
    // no gather read at all.
    let da = a.nic.pcie() - a0;
    assert_eq!(
        (da.mmio_writes, da.dma_reads, da.completions, da.dma_writes),
        (1, 1, 1, 1)
    );
    assert_eq!(
        (da.bytes_down, da.bytes_up, da.payload_down, da.payload_up),
        (32 + 84, 24 + 88, 8 + 64, 64)
    );
    // The responder writes the 256 bytes: one MWr of 256 + 24.
    let db = b.nic.pcie() - b0;
    assert_eq!((db.dma_writes, db.bytes_up), (1, 280));
    let s = a.nic.stats();
    assert_eq!((s.dm_writes, s.dm_gathers, s.dm_gather_bytes), (4, 1, 256));

    // The same WRITE from host memory reads the payload: one MRd more, its CplD of 256.
    a.write_data(0, &payload);
    let a0 = a.nic.pcie();
    a.post_op(
        WRITE,
        0,
        SIGNALED,
        0,
        &[
            raddr_seg(b.data(512), b.key),
            data_seg(256, a.key, a.data(0)),
        ],
    );
    a.ring();
    assert_eq!(a.drain_send().len(), 1);
    let dh = a.nic.pcie() - a0;
    assert_eq!((dh.dma_reads, dh.completions), (2, 2));
    assert_eq!(
        (dh.bytes_down - da.bytes_down, dh.bytes_up - da.bytes_up),
        (256 + 20, 24)
    );
}

#[test]
fn send_mixes_host_and_device_memory_segments() {
    let (_f, mut a, mut b) = pair_with(Cfg::default(), Conn::default(), with_dm(8192));
    let (dm, _) = a.nic.alloc_dm(128, 6).unwrap();
    let on_chip = [0x5au8; 128];
    copy_lines(&a.nic, dm, &on_chip);
    // A second key on the upper half: its address 0 is byte 64 of the allocation.
    let upper = a.nic.reg_dm_mr(a.pd, dm, 64, 64, Access::NONE).unwrap();
    a.nic.dm_write(dm, 64, &[0xc3; 8]);
    a.write_data(0, &[0x11; 16]);
    b.recv_at(0, 256);
    a.post_op(
        SEND,
        0,
        SIGNALED,
        0,
        &[data_seg(16, a.key, a.data(0)), data_seg(24, upper, 0)],
    );
    a.ring();
    assert_eq!(a.drain_send().len(), 1);
    let r = b.drain_recv();
    assert_eq!((r.len(), r[0].byte_cnt), (1, 40));
    let mut want = vec![0x11; 16];
    want.extend([0xc3; 8]);
    want.extend([0x5a; 16]);
    assert_eq!(b.read_data(0, 40), want);
    let s = a.nic.stats();
    assert_eq!((s.dm_gathers, s.dm_gather_bytes), (1, 24));
}

#[test]
fn gather_beyond_the_device_memory_key_is_a_local_protection_error() {
    let (_f, mut a, b) = pair_with(Cfg::default(), Conn::default(), with_dm(8192));
    let (dm, _) = a.nic.alloc_dm(256, 0).unwrap();
    let key = a.nic.reg_dm_mr(a.pd, dm, 0, 256, Access::NONE).unwrap();
    let a0 = a.nic.pcie();
    a.post_op(
        WRITE,
        0,
        SIGNALED,
        0,
        &[raddr_seg(b.data(0), b.key), data_seg(64, key, 224)],
    );
    a.ring();
    let c = a.drain_send();
    assert_eq!((c[0].opcode, c[0].syndrome), (REQ_ERR, LOCAL_PROT_ERR));
    assert_eq!(a.state(), mlx5_hw::QpState::Err);
    assert_eq!(b.read_data(0, 64), vec![0; 64]);
    assert_eq!(a.nic.stats().dm_gathers, 0);
    // Nothing read for the gather.
    assert_eq!((a.nic.pcie() - a0).dma_reads, 1);
}

#[test]
fn allocation_rounds_takes_whole_pages_and_refuses() {
    let f = Fabric::new();
    let none = Nic::new(&f, NicConfig::default());
    assert_eq!(none.caps().max_dm_size, 0);
    assert_eq!(
        none.alloc_dm(64, 0),
        Err(HwError::NotSupported("device memory"))
    );
    let nic = Nic::new(&f, with_dm(8192));
    assert!(matches!(nic.alloc_dm(0, 0), Err(HwError::InvalidParam(_))));
    assert!(matches!(
        nic.alloc_dm(8193, 0),
        Err(HwError::InvalidParam(_))
    ));
    assert!(matches!(
        nic.alloc_dm(64, 13),
        Err(HwError::InvalidParam(_))
    ));
    // 100 bytes round to 128 and take one 4 KiB page; so does the next one.
    let (d0, s0) = nic.alloc_dm(100, 12).unwrap();
    let (d1, s1) = nic.alloc_dm(4096, 0).unwrap();
    assert_eq!((s0, s1), (128, 4096));
    assert_eq!(nic.alloc_dm(64, 0), Err(HwError::OutOfResources));
    let pd = nic.alloc_pd();
    assert!(matches!(
        nic.reg_dm_mr(pd, d0, 0, 64, Access::LOCAL_WRITE),
        Err(HwError::NotSupported(_))
    ));
    assert_eq!(
        nic.reg_dm_mr(pd, d0, 64, 65, Access::NONE),
        Err(HwError::BadAddress)
    );
    let key = nic.reg_dm_mr(pd, d0, 0, 128, Access::NONE).unwrap();
    assert_eq!(nic.free_dm(d0), Err(HwError::Busy));
    assert_eq!(nic.dealloc_pd(pd), Err(HwError::Busy));
    nic.dereg_mr(key).unwrap();
    nic.free_dm(d0).unwrap();
    assert_eq!(nic.free_dm(d0), Err(HwError::NoSuchObject));
    // The freed page serves the next allocation.
    let (d2, _) = nic.alloc_dm(64, 0).unwrap();
    nic.free_dm(d1).unwrap();
    nic.free_dm(d2).unwrap();
    nic.dealloc_pd(pd).unwrap();
}

#[test]
fn malformed_cpu_writes_are_counted_and_dropped() {
    let f = Fabric::new();
    let nic = Nic::new(&f, with_dm(4096));
    let (dm, _) = nic.alloc_dm(64, 0).unwrap();
    let before = nic.pcie();
    nic.dm_write(dm, 0, &[1; 16]);
    nic.dm_write(dm, 4, &[1; 8]);
    nic.dm_write(dm, 64, &[1; 8]);
    nic.dm_write(dm + 1, 0, &[1; 8]);
    nic.dm_write(dm, 60, &[1; 4]);
    let s = nic.stats();
    assert_eq!((s.bad_mmio, s.dm_writes), (4, 1));
    // Each still crossed the link as one MMIO write.
    let d = nic.pcie() - before;
    assert_eq!((d.mmio_writes, d.payload_down), (5, 16 + 8 + 8 + 8 + 4));
}
