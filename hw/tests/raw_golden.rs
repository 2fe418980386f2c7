//! The raw Ethernet layouts pinned to their sources. What rdma-core's installed headers
//! define is compared with them through the golden shim (`tests/golden-shim`, `c/eth.c`):
//! `struct mlx5_wqe_eth_seg`, `struct mlx5_mprq_wqe`, the striding attributes, the
//! checksum and CQE constants, `ibv_rx_hash_fields`; and a WQE written by rdma-core's own
//! `mlx5dv_set_eth_seg` goes through the model. What only DPDK's `mlx5_prm.h` or the
//! kernel's `device.h` define (not installed here) is pinned below with its source named,
//! through what the model does with those exact values.

mod common;

use common::eth::*;
use common::{data_seg, inline_seg};
use mlx5_golden as golden;
use mlx5_hw::{EthConfig, Fabric, HashFields, MinInline, Nic, NicConfig, Striding};

fn field(strct: &str, name: &str) -> (usize, usize) {
    let f = golden::eth_fields()
        .into_iter()
        .find(|f| f.strct == strct && f.field == name)
        .unwrap_or_else(|| panic!("{strct}.{name}"));
    (f.offset, f.size)
}

fn size(strct: &str) -> usize {
    golden::eth_structs()
        .into_iter()
        .find(|s| s.strct == strct)
        .unwrap()
        .size
}

/// The offsets the model's decoder (`hw/src/eth/seg.rs`) and the harness's `eseg` use.
#[test]
#[cfg_attr(
    not(rdma_headers),
    ignore = "install libibverbs-dev to compare with mlx5dv.h"
)]
fn the_ethernet_segment_and_the_striding_wqe_are_mlx5dv_hs() {
    assert_eq!(field("mlx5_wqe_eth_seg", "cs_flags"), (4, 1));
    assert_eq!(field("mlx5_wqe_eth_seg", "mss"), (6, 2));
    assert_eq!(field("mlx5_wqe_eth_seg", "inline_hdr_sz"), (12, 2));
    assert_eq!(field("mlx5_wqe_eth_seg", "inline_hdr_start"), (14, 2));
    assert_eq!(field("mlx5_wqe_eth_seg", "inline_hdr"), (16, 16));
    assert_eq!(size("mlx5_wqe_eth_seg"), 32);
    assert_eq!(field("mlx5_mprq_wqe", "nseg"), (0, 16));
    assert_eq!(field("mlx5_mprq_wqe", "dseg"), (16, 16));
    assert_eq!(size("mlx5_mprq_wqe"), 32);
    for f in [
        "single_stride_log_num_of_bytes",
        "single_wqe_log_num_of_strides",
    ] {
        assert_eq!(field("mlx5dv_striding_rq_init_attr", f).1, 4);
    }
    for s in ["mlx5_wqe_eth_seg", "mlx5_mprq_wqe"] {
        let strct = golden::eth_structs()
            .into_iter()
            .find(|x| x.strct == s)
            .unwrap();
        assert_eq!(
            golden::tiling_error(&golden::eth_fields(), &strct, false),
            None
        );
    }
}

#[test]
#[cfg_attr(
    not(rdma_headers),
    ignore = "install libibverbs-dev to compare with the headers"
)]
fn the_constants_are_the_headers() {
    assert_eq!(
        golden::eth_constant("MLX5_ETH_WQE_L3_CSUM"),
        i64::from(CS_L3)
    );
    assert_eq!(
        golden::eth_constant("MLX5_ETH_WQE_L4_CSUM"),
        i64::from(CS_L4)
    );
    assert_eq!(golden::constant("MLX5_OPCODE_TSO"), i64::from(TSO));
    assert_eq!(golden::constant("MLX5_OPCODE_SEND"), i64::from(SEND));
    assert_eq!(
        golden::eth_constant("MLX5DV_CONTEXT_FLAGS_ENHANCED_MPW"),
        1 << 3
    );
    assert_eq!(
        golden::eth_constant("MLX5DV_WQ_INIT_ATTR_MASK_STRIDING_RQ"),
        1
    );
    let hash = [
        (HashFields::SRC_IPV4, "IBV_RX_HASH_SRC_IPV4"),
        (HashFields::DST_IPV4, "IBV_RX_HASH_DST_IPV4"),
        (HashFields::SRC_IPV6, "IBV_RX_HASH_SRC_IPV6"),
        (HashFields::DST_IPV6, "IBV_RX_HASH_DST_IPV6"),
        (HashFields::SRC_PORT_TCP, "IBV_RX_HASH_SRC_PORT_TCP"),
        (HashFields::DST_PORT_TCP, "IBV_RX_HASH_DST_PORT_TCP"),
        (HashFields::SRC_PORT_UDP, "IBV_RX_HASH_SRC_PORT_UDP"),
        (HashFields::DST_PORT_UDP, "IBV_RX_HASH_DST_PORT_UDP"),
    ];
    for (ours, name) in hash {
        assert_eq!(i64::from(ours.0), golden::eth_constant(name), "{name}");
    }
    // The kernel's modes, which rdma-core's `mlx5_init_context` turns into 0 (NONE) or 18
    // (any other) bytes; MLX5_ETH_L2_INLINE_HEADER_SIZE is 18 in rdma-core's private
    // providers/mlx5/wqe.h (not installed; v44.0).
    assert_eq!(golden::eth_constant("MLX5_USER_INLINE_MODE_NONE"), 1);
    assert_eq!(golden::eth_constant("MLX5_USER_INLINE_MODE_L2"), 2);
    assert_eq!((MinInline::None.bytes(), MinInline::L2.bytes()), (0, 18));
}

/// A SEND whose Ethernet segment and data segment rdma-core's own helpers wrote
/// (`mlx5dv_set_eth_seg` with the checksum flags and 18 inline bytes, `mlx5dv_set_data_seg`)
/// goes out as the frame with its checksums; the receive CQE, read as rdma-core reads a
/// `struct mlx5_cqe64`, has L3 and L4 OK and L3 type IPv4 (`get_csum_ok`).
#[test]
#[cfg_attr(
    not(rdma_headers),
    ignore = "install libibverbs-dev to use mlx5dv.h's helpers"
)]
fn a_wqe_from_rdma_cores_helpers() {
    let cx4 = NicConfig {
        eth: EthConfig {
            min_inline: MinInline::L2,
            ..EthConfig::default()
        },
        ..eth_config()
    };
    let f = Fabric::new();
    let (na, nb) = (Nic::new(&f, cx4), Nic::new(&f, eth_config()));
    let mut a = Raw::new(&na);
    let mut b = Raw::new(&nb);
    b.flow(&dmac_rule(b.mac(), 0));
    b.recv_frames(1);
    let good = frame(&Pkt {
        tcp: true,
        ..Pkt::udp(b.mac(), a.mac(), b"from rdma-core's helpers")
    });
    let mut sent = good.clone();
    let at = l4_csum_at(&sent);
    sent[IP_CSUM..IP_CSUM + 2].fill(0);
    sent[at..at + 2].fill(0);
    let cs =
        golden::eth_constant("MLX5_ETH_WQE_L3_CSUM") | golden::eth_constant("MLX5_ETH_WQE_L4_CSUM");
    let mut eseg = [0u8; 32];
    golden::set_eth_seg(&mut eseg, cs as u8, 0, &sent[..18]);
    a.write_data(TX, &sent[18..]);
    let mut dseg = [0u8; 16];
    golden::set_data_seg(
        &mut dseg,
        (sent.len() - 18) as u32,
        a.key,
        a.data(TX) as usize,
    );
    a.send(SEND, 0, SIGNALED, &[eseg.to_vec(), dseg.to_vec()]);
    let got = b.drain_recv();
    assert_eq!(b.received(&got[0]), good);
    let read = golden::read_cqe64(&got[0].0);
    let value = |n: &str| read.iter().find(|v| v.name == n).unwrap().value;
    let (l3_ok, l4_ok) = (
        golden::constant("MLX5_CQE_L3_OK"),
        golden::constant("MLX5_CQE_L4_OK"),
    );
    assert_eq!(value("hds_ip_ext") & (l3_ok | l4_ok), l3_ok | l4_ok);
    let l3_type = (value("l4_hdr_type_etc") >> 2) & 3;
    assert_eq!(l3_type, golden::constant("MLX5_CQE_L3_HDR_TYPE_IPV4"));
    assert_eq!(value("byte_cnt"), good.len() as i64);
}

/// DPDK's `mlx5_prm.h` values, through the model: `MLX5_OPCODE_ENHANCED_MPSW` 0x29u,
/// `MLX5_ETH_WQE_DATA_INLINE` (1u << 31) marking an inline eMPW entry,
/// `MLX5_ETH_WQE_VLAN_INSERT` (1u << 31) in the BE32 at byte 12 of the Ethernet segment
/// (`mlx5_tx_eseg_none`: `es->inline_hdr = rte_cpu_to_be_32(MLX5_ETH_WQE_VLAN_INSERT |
/// vlan_tci)`), `MLX5_DSEG_MAX` 63 the most DS of a WQE.
#[test]
fn dpdks_send_values() {
    let f = Fabric::new();
    let (na, nb) = (Nic::new(&f, eth_config()), Nic::new(&f, eth_config()));
    let mut a = Raw::new(&na);
    let mut b = Raw::new(&nb);
    b.recv_frames(3);
    b.flow(&kind_rule(mlx5_hw::FlowKind::AllDefault));
    let pkt = frame(&Pkt::udp(b.mac(), a.mac(), b"dpdk"));
    let mut entry = ((pkt.len() as u32) | (1u32 << 31)).to_be_bytes().to_vec();
    entry.extend_from_slice(&pkt);
    entry.resize((4 + pkt.len()).div_ceil(16) * 16, 0);
    assert_eq!(entry, inline_seg(&pkt));
    a.send(0x29, 0, SIGNALED, &[eseg(0, 0, &[]), entry]);
    let mut vlan = vec![0u8; 16];
    vlan[12..16].copy_from_slice(&((1u32 << 31) | 0x0007).to_be_bytes());
    a.write_data(TX, &pkt);
    let (addr, key) = (a.data(TX), a.key);
    a.send(
        SEND,
        0,
        SIGNALED,
        &[vlan, data_seg(pkt.len() as u32, key, addr)],
    );
    let got = b.drain_recv();
    assert_eq!(got.len(), 2);
    assert_eq!(b.received(&got[1])[12..16], [0x81, 0x00, 0x00, 0x07]);
    // 63 DS: ctrl, Ethernet segment, 61 pointer entries.
    let segs: Vec<Vec<u8>> = std::iter::once(eseg(0, 0, &[]))
        .chain((0..61).map(|_| data_seg(pkt.len() as u32, key, addr)))
        .collect();
    assert_eq!(a.wqe(0x29, 0, SIGNALED, &segs).len(), 63 * 16);
    assert_eq!(a.drain_send().iter().filter(|c| c.opcode() == 0).count(), 2);
}

/// DPDK's MPRQ CQE masks (`MLX5_MPRQ_LEN_MASK` 0xffff, `MLX5_MPRQ_STRIDE_NUM_MASK`
/// 0x3fff0000 with `_SHIFT` 16, `MLX5_MPRQ_FILLER_MASK` 0x80000000,
/// `MLX5_MPRQ_STRIDE_SHIFT_BYTE` 2) and the kernel's reading of the same word
/// (`struct mlx5_mpwrq_cqe_bc`: `filler_consumed_strides`, 0x8000 the filler, 0x7fff the
/// strides; `mpwrq_get_cqe_stride_index` = `wqe_counter`), on the model's CQEs.
#[test]
fn dpdks_and_the_kernels_mprq_cqe() {
    let s = Striding {
        log_stride_bytes: 6,
        log_num_strides: 3,
        two_byte_shift: true,
    };
    let Rig {
        mut a, b, mut wq, ..
    } = Rig::new(eth_config(), 1, Some(s));
    wq.post(b.data(0), 512, b.key);
    wq.post(b.data(512), 512, b.key);
    a.send_frame(&frame(&Pkt::udp(b.mac(), a.mac(), &[1; 400])));
    a.send_frame(&frame(&Pkt::udp(b.mac(), a.mac(), &[2; 200])));
    let got = wq.drain();
    let dpdk = |c: &EthCqe| {
        let bc = c.byte_cnt();
        (bc & 0x8000_0000 != 0, (bc & 0x3fff_0000) >> 16, bc & 0xffff)
    };
    let kernel = |c: &EthCqe| {
        let hi = (c.byte_cnt() >> 16) as u16;
        (hi & 0x8000 != 0, u32::from(hi & 0x7fff))
    };
    // 442 bytes after the 2-byte shift: 7 strides; then a filler for the last stride.
    assert_eq!(dpdk(&got[0]), (false, 7, 442));
    assert_eq!(dpdk(&got[1]), (true, 1, 0));
    assert_eq!(kernel(&got[1]), (true, 1));
    assert_eq!((got[1].wqe_counter(), got[2].wqe_id()), (7, 1));
    assert_eq!(dpdk(&got[2]), (false, 4, 242));
    assert_eq!(
        b.read_data(512 + 2, 4)[..],
        frame(&Pkt::udp(b.mac(), a.mac(), &[2; 200]))[..4]
    );
}

/// The kernel's `CQE_L4_HDR_TYPE_*` (include/linux/mlx5/device.h: TCP without ACK 1, UDP
/// 2, TCP ACK without data 3, TCP ACK with data 4, at bits 6..4 of `l4_l3_hdr_type`) and
/// DPDK's `MLX5_CQE_L4_TYPE_MASK` 0x70 with `_SHIFT` 4.
#[test]
fn the_kernels_l4_header_types() {
    let f = Fabric::new();
    let (na, nb) = (Nic::new(&f, eth_config()), Nic::new(&f, eth_config()));
    let mut a = Raw::new(&na);
    let mut b = Raw::new(&nb);
    b.recv_frames(4);
    b.flow(&dmac_rule(b.mac(), 0));
    let base = Pkt::udp(b.mac(), a.mac(), b"types");
    for (flags, payload, want) in [
        (0x02u8, &b"x"[..], 1u8),
        (0x10, &b""[..], 3),
        (0x18, &b"x"[..], 4),
    ] {
        a.send_frame(&frame(&Pkt {
            tcp: true,
            tcp_flags: flags,
            payload,
            ..base
        }));
        let c = b.drain_recv();
        assert_eq!(
            (c[0].l4_l3_hdr_type() & 0x70) >> 4,
            want,
            "flags {flags:#x}"
        );
    }
    a.send_frame(&frame(&base));
    assert_eq!((b.drain_recv()[0].l4_l3_hdr_type() & 0x70) >> 4, 2);
}
