//! Host address spaces: two "processes" whose memory the model reaches through a
//! `RemoteMemory` (as the emulator's server reaches its programs), at the same addresses.
//! Every operation must touch the memory of the right space, and a WQE address that carries
//! space bits must reach nothing.

mod common;
use common::*;
use mlx5_hw::{Fabric, Nic, NicConfig};

/// Both programs see their memory at the same address: only the spaces tell them apart.
const VA: u64 = 0x7f00_0000_0000;

/// Two sides on two NICs, each in a space of its own, connected both ways.
fn spaced_pair(cfg: Cfg) -> (std::sync::Arc<Fabric>, Side, Side) {
    let fabric = Fabric::new();
    let a = Side::with_mem(
        &Nic::new(&fabric, NicConfig::default()),
        cfg,
        Mem::in_space(MEM_LEN, spaces::fresh(), VA),
    );
    let b = Side::with_mem(
        &Nic::new(&fabric, NicConfig::default()),
        cfg,
        Mem::in_space(MEM_LEN, spaces::fresh(), VA),
    );
    connect_one(&a, &b, Conn::default());
    connect_one(&b, &a, Conn::default());
    (fabric, a, b)
}

#[test]
fn a_gathered_write_lands_in_the_responders_space() {
    let (_f, mut a, b) = spaced_pair(Cfg::default());
    a.write_data(0, b"from space one");
    // The same address names A's source and B's target, each in its own space.
    assert_eq!(a.data(0), b.data(0));
    let (src, dst) = (a.data(0), b.data(0));
    a.post_op(
        WRITE,
        0,
        SIGNALED,
        0,
        &[raddr_seg(dst, b.key), data_seg(14, a.key, src)],
    );
    a.ring();
    assert_eq!(b.read_data(0, 14), b"from space one");
    assert_eq!(
        a.read_data(0, 14),
        b"from space one",
        "the source is untouched"
    );
    let c = a.poll_send().expect("the CQE is in A's own CQ");
    assert_eq!((c.opcode, c.send_opcode()), (REQ, WRITE));
}

#[test]
fn a_small_inline_write_takes_the_fast_path_into_the_responders_space() {
    let (_f, mut a, b) = spaced_pair(Cfg::default());
    let before = a.nic.fast_path_wqes();
    a.write_inline(b.data(0x40), b.key, b"fast!", SIGNALED);
    a.ring();
    assert_eq!(a.nic.fast_path_wqes(), before + 1);
    assert_eq!(b.read_data(0x40, 5), b"fast!");
    assert_eq!(
        a.read_data(0x40, 5),
        [0; 5],
        "nothing lands in the requester's space"
    );
    assert!(a.poll_send().is_some_and(|c| c.opcode == REQ));
}

#[test]
fn a_send_scatters_into_the_receive_of_the_responders_space() {
    let (_f, mut a, mut b) = spaced_pair(Cfg::default());
    b.recv_at(0x1000, 64);
    a.write_data(0x1000, b"sent across");
    let src = a.data(0x1000);
    a.post_op(SEND, 0, SIGNALED, 0, &[data_seg(11, a.key, src)]);
    a.ring();
    assert_eq!(b.read_data(0x1000, 11), b"sent across");
    let r = b.drain_recv();
    assert_eq!((r.len(), r[0].opcode, r[0].byte_cnt), (1, RESP_SEND, 11));
}

#[test]
fn an_srq_receive_is_read_in_its_rings_space() {
    let (_f, mut a, mut b) = spaced_pair(Cfg {
        srq: true,
        ..Cfg::default()
    });
    b.recv_at(0x3000, 32);
    a.post_op(SEND, 0, SIGNALED, 0, &[inline_seg(b"to the srq")]);
    a.ring();
    assert_eq!(b.read_data(0x3000, 10), b"to the srq");
    assert_eq!(b.drain_recv().len(), 1);
}

#[test]
fn a_read_and_an_atomic_take_their_sources_from_the_responder() {
    let (_f, mut a, mut b) = spaced_pair(Cfg::default());
    b.write_data(0x100, b"read me");
    b.mem.put_u64(DATA + 0x200, 40);
    let (dst, res) = (a.data(0x100), a.data(0x300));
    a.post_op(
        READ,
        0,
        SIGNALED,
        0,
        &[raddr_seg(b.data(0x100), b.key), data_seg(7, a.key, dst)],
    );
    a.post_op(
        FA,
        0,
        SIGNALED,
        0,
        &[
            raddr_seg(b.data(0x200), b.key),
            atomic_seg(2, 0),
            data_seg(8, a.key, res),
        ],
    );
    a.ring();
    assert_eq!(a.read_data(0x100, 7), b"read me");
    assert_eq!(b.mem.u64(DATA + 0x200), 42);
    // The original value, in host order (`NicConfig::atomic_8b_host_order`'s default).
    assert_eq!(a.read_data(0x300, 8), 40u64.to_ne_bytes());
    assert_eq!(a.drain_send().len(), 2);
}

#[test]
fn a_wqe_address_with_space_bits_reaches_no_memory() {
    let (_f, mut a, b) = spaced_pair(Cfg::default());
    // A names B's space in its own gather address: no key covers it, in any space.
    let forged = b.mem.addr(DATA);
    a.post_op(
        WRITE,
        0,
        SIGNALED,
        0,
        &[raddr_seg(b.data(0x80), b.key), data_seg(8, a.key, forged)],
    );
    a.ring();
    let c = a.poll_send().expect("an error CQE");
    assert_eq!((c.opcode, c.syndrome), (REQ_ERR, 0x04), "LOCAL_PROT_ERR");
    assert_eq!(b.read_data(0x80, 8), [0; 8], "nothing was written");
}
