//! PCIe transactions per message, as the model counts them for the driver's posts, checked
//! against values worked out by hand (MWr/MRd headers 24 B, CplD 20 B, MPS 256, RCB 128,
//! completions up to MPS: the default link, `PcieConfig::pcie_bench()`).

mod common;

use common::{pair, poll_n, Side};
use mlx5_direct::backend::sim::{PcieCounters, Sim};
use mlx5_direct::{Data, DoorbellMode, SendFlags, SendOp};

fn pcie(side: &Side) -> PcieCounters {
    side.ctx.backend().nic().pcie()
}

/// Posts with `post`, polls `cqes` completions, returns the requester's and responder's
/// link counts for it.
fn measure(
    a: &mut Side,
    b: &mut Side,
    cqes: usize,
    post: impl FnOnce(&mut mlx5_direct::SendQueue<<Sim as mlx5_direct::backend::Backend>::Uar>),
) -> (PcieCounters, PcieCounters) {
    let (a0, b0) = (pcie(a), pcie(b));
    post(a.qp.sq());
    poll_n(a, cqes);
    (pcie(a) - a0, pcie(b) - b0)
}

/// Posts one RDMA WRITE of `data` to `b`'s region in `mode`, signaled or not, and measures it
/// (see [`measure`]).
fn measure_write(
    a: &mut Side,
    b: &mut Side,
    mode: DoorbellMode,
    data: Data<'_>,
    signaled: bool,
) -> (PcieCounters, PcieCounters) {
    let remote = b.mr.remote(0);
    let flags = if signaled {
        SendFlags::SIGNALED
    } else {
        SendFlags::UNSIGNALED
    };
    measure(a, b, usize::from(signaled), |sq| {
        sq.set_mode(mode);
        sq.post(1, SendOp::Write(remote), data, flags).unwrap();
    })
}

fn counts(mmio: u64, rd: u64, cpl: u64, wr: u64, down: u64, up: u64) -> [u64; 6] {
    [mmio, rd, cpl, wr, down, up]
}

fn got(c: &PcieCounters) -> [u64; 6] {
    [
        c.mmio_writes,
        c.dma_reads,
        c.completions,
        c.dma_writes,
        c.bytes_down,
        c.bytes_up,
    ]
}

#[test]
fn doorbell_wqe_fetch_gather_and_cqe() {
    let (mut a, mut b) = pair();
    let sge = a.mr.sge(0, 32);
    let (req, resp) = measure_write(
        &mut a,
        &mut b,
        DoorbellMode::Doorbell,
        Data::Sges(&[sge]),
        true,
    );
    // Down: doorbell 8+24, WQEBB 64+20, payload 32+20. Up: two read requests 24 each,
    // CQE 64+24.
    assert_eq!(got(&req), counts(1, 2, 2, 1, 32 + 84 + 52, 24 + 24 + 88));
    // Responder: the 32 payload bytes written, 32+24 up.
    assert_eq!(got(&resp), counts(0, 0, 0, 1, 0, 56));
}

#[test]
fn inline_removes_the_payload_read() {
    let (mut a, mut b) = pair();
    let (req, _) = measure_write(
        &mut a,
        &mut b,
        DoorbellMode::Doorbell,
        Data::Inline(&[7; 32]),
        true,
    );
    // 1 ctrl + 1 raddr + ceil((4 + 32) / 16) = 5 DS: two WQEBBs fetched, one 128-byte
    // completion.
    assert_eq!(got(&req), counts(1, 1, 1, 1, 32 + 148, 24 + 88));
}

#[test]
fn blueflame_inline_needs_no_dma_read_and_unsignaled_no_cqe() {
    let (mut a, mut b) = pair();
    let bf = DoorbellMode::BlueFlame;
    let (req, _) = measure_write(&mut a, &mut b, bf, Data::Inline(&[7; 8]), true);
    assert_eq!(got(&req), counts(1, 0, 0, 1, 64 + 24, 88));

    let (req, _) = measure_write(&mut a, &mut b, bf, Data::Inline(&[7; 8]), false);
    assert_eq!(got(&req), counts(1, 0, 0, 0, 88, 0));
}

#[test]
fn a_128_byte_blueflame_wqe_is_two_chunks() {
    let (mut a, mut b) = pair();
    // 1 ctrl + 1 raddr + ceil((4 + 80) / 16) = 6 DS: 96 bytes, two 64-byte chunks.
    let (req, _) = measure_write(
        &mut a,
        &mut b,
        DoorbellMode::BlueFlame,
        Data::Inline(&[1; 80]),
        true,
    );
    assert_eq!(got(&req), counts(2, 0, 0, 1, 2 * 88, 88));
}

#[test]
fn a_batch_of_sixteen_rings_once() {
    let (mut a, mut b) = pair();
    let remote = b.mr.remote(0);
    let (req, _) = measure(&mut a, &mut b, 1, |sq| {
        sq.set_mode(DoorbellMode::Doorbell);
        for i in 0..16 {
            let flags = if i == 15 {
                SendFlags::SIGNALED
            } else {
                SendFlags::UNSIGNALED
            };
            sq.push(i, SendOp::Write(remote), Data::Inline(&[1; 8]), flags)
                .unwrap();
        }
        assert_eq!(sq.ring_doorbell(), 16);
    });
    // 16 WQEBBs = 1024 bytes: 2 read requests (MRRS 512), 4 completions of up to MPS
    // (256 bytes).
    assert_eq!(
        got(&req),
        counts(1, 2, 4, 1, 32 + 4 * (256 + 20), 2 * 24 + 88)
    );
}
