//! Striding (multi-packet) receive work queues: frames placed in consecutive strides, the
//! MPRQ CQE (DPDK `mlx5_rx_burst_mprq`'s reading: `byte_cnt` bits 15..0 the length, 29..16
//! the strides consumed, 31 the filler; `wqe_counter` the first stride; `wqe_id` the
//! WQE), filler CQEs, WQEs finished only when every stride is used, the ring wrapping, the
//! two-byte shift, and what goes wrong: no WQE, a frame larger than a WQE, a bad key.

mod common;

use common::eth::*;
use mlx5_hw::{Striding, WqState};

/// 8 strides of 64 bytes per WQE (DPDK's default is 64 of 2048; the small geometry needs
/// `ext_stride_num_range`, on by default).
const STRIDE: usize = 64;
const STRIDES: usize = 8;
const WQE_BYTES: usize = STRIDE * STRIDES;

struct Mprq {
    rig: Rig,
}

impl Mprq {
    fn new(shift: bool) -> Mprq {
        let s = Striding {
            log_stride_bytes: 6,
            log_num_strides: 3,
            two_byte_shift: shift,
        };
        Mprq {
            rig: Rig::new(eth_config(), 2, Some(s)),
        }
    }

    /// Post the WQE of ring slot `pi mod 4`: its buffer at data offset `slot * 512`.
    fn post(&mut self) {
        let slot = self.rig.wq.pi as usize % 4;
        let addr = self.rig.b.data(slot * WQE_BYTES);
        self.rig.wq.post(addr, WQE_BYTES as u32, self.rig.b.key);
    }

    /// Send a UDP frame of exactly `len` bytes (at least 60); returns it.
    fn send(&mut self, len: usize) -> Vec<u8> {
        let payload = vec![len as u8; len - 42];
        let f = frame(&Pkt::udp(self.rig.b.mac(), self.rig.a.mac(), &payload));
        self.rig.a.send_frame(&f);
        f
    }

    /// The bytes of WQE slot `slot` from stride `stride` on.
    fn at(&self, slot: usize, stride: usize, len: usize) -> Vec<u8> {
        self.rig
            .b
            .read_data(slot * WQE_BYTES + stride * STRIDE, len)
    }
}

fn mprq(c: &EthCqe) -> (bool, u32, u32, u16, u16) {
    let b = c.byte_cnt();
    (
        b >> 31 == 1,
        (b >> 16) & 0x3fff,
        b & 0xffff,
        c.wqe_counter(),
        c.wqe_id(),
    )
}

#[test]
fn frames_fill_strides_and_a_filler_closes_the_wqe() {
    let mut m = Mprq::new(false);
    m.post();
    m.post();
    let f0 = m.send(60);
    let f1 = m.send(100);
    let f2 = m.send(200);
    // One stride left in WQE 0: the next 100-byte frame takes a filler and WQE 1.
    let f3 = m.send(100);
    let got = m.rig.wq.drain();
    let fields: Vec<_> = got.iter().map(mprq).collect();
    assert_eq!(
        fields,
        [
            (false, 1, 60, 0, 0),
            (false, 2, 100, 1, 0),
            (false, 4, 200, 3, 0),
            (true, 1, 0, 7, 0),
            (false, 2, 100, 0, 1),
        ]
    );
    assert!(got.iter().all(|c| c.opcode() == 2));
    assert_eq!(m.at(0, 0, 60), f0);
    assert_eq!(m.at(0, 1, 100), f1);
    assert_eq!(m.at(0, 3, 200), f2);
    assert_eq!(m.at(1, 0, 100), f3);
    assert_eq!(got[0].hds_ip_ext(), 7);
    let s = m.rig.b.nic.stats().eth;
    assert_eq!((s.mprq_fillers, s.rx_delivered), (1, 4));
}

/// WQE counters go past the ring: the driver re-posts a slot once its WQE is finished, and
/// the frames after the wrap land in that slot's buffer with the new counter in `wqe_id`.
#[test]
fn striding_receives_wrap_the_ring() {
    let mut m = Mprq::new(false);
    for _ in 0..4 {
        m.post();
    }
    // Each 512-byte WQE takes exactly two 256-byte frames (four strides each).
    let mut frames = Vec::new();
    for _ in 0..8 {
        frames.push(m.send(256));
    }
    let got = m.rig.wq.drain();
    assert_eq!(got.len(), 8);
    for (i, c) in got.iter().enumerate() {
        assert_eq!(mprq(c), (false, 4, 256, (i % 2 * 4) as u16, (i / 2) as u16));
    }
    // Every stride used: no filler; the queue is out of WQEs.
    m.send(60);
    assert_eq!(m.rig.b.nic.stats().eth.rx_out_of_buffer, 1);
    // Re-post two slots (counters 4 and 5); the next frames land in slot 0 again.
    m.post();
    m.post();
    let again = [m.send(300), m.send(300)];
    let got = m.rig.wq.drain();
    assert_eq!(mprq(&got[0]), (false, 5, 300, 0, 4));
    assert_eq!(mprq(&got[1]), (true, 3, 0, 5, 4));
    assert_eq!(mprq(&got[2]), (false, 5, 300, 0, 5));
    assert_eq!(m.at(0, 0, 300), again[0]);
    assert_eq!(m.at(1, 0, 300), again[1]);
}

/// A frame that does not fit the strides left, with no other WQE posted, is dropped and the
/// WQE kept: a smaller frame still fits it.
#[test]
fn a_wqe_is_kept_until_every_stride_is_used() {
    let mut m = Mprq::new(false);
    m.post();
    m.send(300);
    m.send(300);
    m.send(100);
    let got = m.rig.wq.drain();
    assert_eq!(
        got.iter().map(mprq).collect::<Vec<_>>(),
        [(false, 5, 300, 0, 0), (false, 2, 100, 5, 0)]
    );
    assert_eq!(m.rig.b.nic.stats().eth.rx_out_of_buffer, 1);
    // One stride left; the queue's WQE is finished by the next frame that fits it.
    m.send(64);
    let got = m.rig.wq.drain();
    assert_eq!(
        got.iter().map(mprq).collect::<Vec<_>>(),
        [(false, 1, 64, 7, 0)]
    );
    m.send(60);
    assert_eq!(m.rig.b.nic.stats().eth.rx_out_of_buffer, 2);
}

/// `two_byte_shift_en`: each frame starts 2 bytes into its first stride, and the strides
/// count the 2 bytes.
#[test]
fn the_two_byte_shift() {
    let mut m = Mprq::new(true);
    m.post();
    let f0 = m.send(62);
    let f1 = m.send(63);
    let got = m.rig.wq.drain();
    assert_eq!(
        got.iter().map(mprq).collect::<Vec<_>>(),
        [(false, 1, 62, 0, 0), (false, 2, 63, 1, 0)]
    );
    assert_eq!(m.at(0, 0, 64)[2..], f0[..]);
    assert_eq!(m.at(0, 1, 65)[2..], f1[..]);
}

/// A frame larger than a whole WQE completes that WQE with LOCAL_LENGTH_ERR and the queue
/// goes to ERR, its other WQEs flushed; a WQE whose key does not cover its buffer fails
/// with LOCAL_PROT_ERR.
#[test]
fn what_fails_a_striding_queue() {
    let mut m = Mprq::new(false);
    m.post();
    m.post();
    m.send(600);
    let got = m.rig.wq.drain();
    assert_eq!(
        got.iter()
            .map(|c| (c.opcode(), c.syndrome(), c.wqe_counter()))
            .collect::<Vec<_>>(),
        [(14, 0x01, 0), (14, 0x05, 1)]
    );
    assert_eq!(m.rig.b.nic.wq_state(m.rig.wq.wqn), Ok(WqState::Err));
    let mut m = Mprq::new(false);
    let addr = m.rig.b.data(0);
    m.rig.wq.post(addr, WQE_BYTES as u32, m.rig.b.key ^ 0x100);
    m.send(60);
    let got = m.rig.wq.drain();
    assert_eq!((got[0].opcode(), got[0].syndrome()), (14, 0x04));
    assert_eq!(m.rig.b.nic.wq_state(m.rig.wq.wqn), Ok(WqState::Err));
}
