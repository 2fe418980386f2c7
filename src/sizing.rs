//! How a [`QpConfig`] becomes queue sizes: rdma-core's own formula (providers/mlx5/verbs.c
//! v44, `mlx5_calc_wq_size` and what it calls), applied by [`QpConfig::check`] before any
//! backend is asked, so that a configuration rdma-core would refuse with a bare `EINVAL` is
//! refused here with the reason, and so that the model's rings are the rings rdma-core would
//! allocate for the same configuration on a device with the same [`DeviceCaps`].
//!
//! - Send WQE (`mlx5_calc_send_wqe`): `overhead + 16 · max_send_sge` or, with inline data,
//!   `overhead + align16(4 + max_inline)`, whichever is larger, at most the device's largest
//!   WQE (`max_sq_desc_sz`), rounded up to 64 bytes. `overhead` is `_sq_overhead` for the
//!   operations the QP is created for ([`sq_overhead`]): control + remote-address + atomic
//!   segments (48 bytes) with atomics, control + remote-address (32) without; a DCI adds its
//!   48-byte datagram segment.
//! - Send ring (`mlx5_calc_sq_size`): `roundup_pow2(max_send_wr · wqe_size)` bytes, at most
//!   `max_send_wqebb` WQEBBs. The verbs backend asks for `max_send_wr` =
//!   `ring / wqe_size` WRs, which makes rdma-core's ring exactly the ring asked for here:
//!   `sq_wqebbs` rounded up to a power of two, and to at least one worst-case WQE.
//! - Receive ring (`mlx5_calc_rcv_wqe`, `mlx5_calc_rq_size`): stride
//!   `roundup_pow2(16 · max(max_recv_sge, 1))`, `roundup_pow2(rq_wqes)` WQEs but at least
//!   64 bytes of ring; none on an SRQ.
//!
//! Empty queues are refused: a send queue of 0 WQEBBs, or a receive queue of 0 WQEs on a QP
//! without an SRQ (rdma-core would create a QP with a zero-length ring there, which the
//! driver does not drive).
//!
//! [`ConnectOptions::validate`] checks the connection settings' fixed-width fields the same
//! way, before any backend is asked: both checks return [`Error`], which names the plain
//! types, so they live here, above both.

use crate::error::Error;
use crate::prm::{DS, SEND_WQE_BB};
use crate::types::{ConnectOptions, DeviceCaps, QpConfig, QpSizes, Transport};

/// `_sq_overhead` (verbs.c) of a QP of `transport` created for the operations this driver
/// posts on it (`IBV_QP_INIT_ATTR_SEND_OPS_FLAGS`, never LOCAL_INV or BIND_MW, which would
/// size every WQE for a 192-byte memory-window WQE): the largest fixed part of its WQEs.
/// - RC (SEND, SEND_WITH_IMM, SEND_WITH_INV, RDMA_WRITE, RDMA_WRITE_WITH_IMM, RDMA_READ,
///   and with `atomics` ATOMIC_CMP_AND_SWP and ATOMIC_FETCH_AND_ADD): control 16 + remote
///   address 16, + atomic 16 with atomics. The masked atomics have no verbs flag; with one
///   data segment they need at most the 80 bytes of an 8-byte masked compare-and-swap, and
///   every send queue accepts WQEs up to the device's largest
///   ([`DeviceCaps::max_wqe_size`]).
/// - UC (the RC operations without READ and atomics, `MLX5_SUPPORTED_SEND_OPS_FLAGS_UC`):
///   control 16 + remote address 16, whatever `atomics` says.
/// - UD (SEND and SEND_WITH_IMM, `MLX5_SUPPORTED_SEND_OPS_FLAGS_UD`): control 16 +
///   datagram segment 48 (`IBV_QPT_UD` adds `sizeof(struct mlx5_wqe_datagram_seg)`).
/// - DCI: RC's + the datagram segment 48 (`IBV_QPT_DRIVER` with `MLX5DV_DCTYPE_DCI` falls
///   through to UD's case). A DCT has no send queue: RC's value, unused.
/// - XRC initiator: control 16 + XRC segment 16 + remote address 16, whatever `atomics`
///   says (`IBV_QPT_XRC_SEND` falls through to `IBV_QPT_XRC_RECV`'s case, which counts no
///   atomic segment; the kernel's own `sq_overhead` adds the XRC segment to RC's). An XRC
///   target has no send queue: RC's value, unused.
/// - Raw packet: control 16 + Ethernet segment 32 (`IBV_QPT_RAW_PACKET` adds
///   `sizeof(struct mlx5_wqe_eth_seg)`: room for rdma-core's 18-byte inline header).
pub fn sq_overhead(transport: Transport, atomics: bool) -> u32 {
    let ds = DS as u32;
    let rc = if atomics { 3 * ds } else { 2 * ds };
    let av = size_of::<crate::prm::Av>() as u32;
    match transport {
        Transport::Rc | Transport::Dct | Transport::XrcTgt => rc,
        Transport::XrcIni => 3 * ds,
        Transport::Uc => 2 * ds,
        Transport::Ud => ds + av,
        Transport::Dci => rc + av,
        Transport::Raw => ds + size_of::<crate::prm::EthSeg>() as u32,
    }
}

/// The room rdma-core leaves after the fixed segments in an RC send WQE on a device whose
/// largest WQE is `max_wqe_size` bytes: the WQE is rounded up to 64 bytes and must still fit
/// (`mlx5_calc_sq_size`: `wqe_size > max_sq_desc_sz` is `EINVAL`).
fn room(max_wqe_size: u32, atomics: bool) -> u32 {
    let whole = max_wqe_size / SEND_WQE_BB as u32 * SEND_WQE_BB as u32;
    whole.saturating_sub(sq_overhead(Transport::Rc, atomics))
}

/// The largest inline payload rdma-core sizes a send WQE for on a device whose largest WQE
/// is `max_wqe_size` bytes (`align64(overhead + align16(4 + inline)) <= max_wqe_size`).
pub fn max_inline(max_wqe_size: u32, atomics: bool) -> u32 {
    room(max_wqe_size, atomics).saturating_sub(4)
}

/// The largest gather list rdma-core sizes a send WQE for
/// (`align64(overhead + 16 · sges) <= max_wqe_size`).
pub fn max_gather(max_wqe_size: u32, atomics: bool) -> u32 {
    room(max_wqe_size, atomics) / DS as u32
}

impl QpConfig {
    /// Checks the configuration against the device's limits with rdma-core's formula (see
    /// [`crate::sizing`]) and returns the queue sizes every backend then creates: the
    /// model's rings are these, and rdma-core computes the same from what the verbs backend
    /// asks for. `srq`: the QP takes its receives from an SRQ (`rq_wqes` and
    /// `max_recv_sge` are then ignored). rdma-core would answer `EINVAL` with no word on
    /// which limit; this names it.
    pub fn check(&self, caps: &DeviceCaps, srq: bool) -> Result<QpSizes, Error> {
        let ds = DS as u32;
        if self.max_send_sge > caps.max_send_sge || (!srq && self.max_recv_sge > caps.max_recv_sge)
        {
            return Err(Error::InvalidArgument("more SGEs than the device supports"));
        }
        if self.max_inline > caps.max_inline {
            return Err(Error::InvalidArgument(
                "inline size over the device maximum",
            ));
        }
        if self.scatter_to_cqe && !matches!(self.transport, Transport::Rc | Transport::Uc) {
            // The receive side this crate scatters to CQE: RC and UC (a DCI receives
            // nothing; UD's, with its GRH area, is unverified: prm-facts-next §1.4).
            return Err(Error::InvalidArgument(
                "scatter to CQE is for RC and UC QPs",
            ));
        }
        if self.dci_streams.is_some() && self.transport != Transport::Dci {
            return Err(Error::InvalidArgument(
                "DCI streams on a QP that is not a DCI",
            ));
        }
        if self.dci_streams.is_some_and(|s| s.log_concurrent > 16) {
            // Stream ids are 16 bits in the control segment.
            return Err(Error::InvalidArgument(
                "more DCI streams than 16-bit ids name",
            ));
        }
        if self.user_index.is_some_and(|u| u > 0xff_ffff) {
            return Err(Error::InvalidArgument("user index above 24 bits"));
        }
        if self.sq_wqebbs == 0 {
            return Err(Error::InvalidArgument(
                "a QP needs a send queue of at least one WQEBB",
            ));
        }
        if !srq && self.rq_wqes == 0 {
            return Err(Error::InvalidArgument(
                "a QP without an SRQ needs a receive queue of at least one WQE",
            ));
        }
        // mlx5_calc_send_wqe.
        let overhead = sq_overhead(self.transport, caps.atomics);
        if overhead + self.max_send_sge * ds > caps.max_wqe_size {
            return Err(Error::InvalidArgument(
                "the gather list does not fit the device's largest WQE",
            ));
        }
        let gather = overhead + self.max_send_sge * ds;
        let inline = match self.max_inline {
            0 => 0,
            n => overhead + (4 + n).next_multiple_of(ds),
        };
        let send_wqe_size = gather.max(inline).next_multiple_of(SEND_WQE_BB as u32);
        if gather.max(inline) > caps.max_wqe_size || send_wqe_size > caps.max_wqe_size {
            return Err(Error::InvalidArgument(
                "the send WQE does not fit the device's largest WQE",
            ));
        }
        // mlx5_calc_sq_size, for the `max_send_wr` that gives the ring asked for.
        let too_big = Error::InvalidArgument("queue larger than the device supports");
        if self.sq_wqebbs > caps.max_sq_wqebbs || (!srq && self.rq_wqes > caps.max_sq_wqebbs) {
            return Err(too_big);
        }
        let ring_bytes = (self.sq_wqebbs.next_power_of_two() * SEND_WQE_BB as u32)
            .max(send_wqe_size.next_power_of_two());
        let sq_wqebbs = ring_bytes / SEND_WQE_BB as u32;
        let max_send_wr = ring_bytes / send_wqe_size;
        if sq_wqebbs > caps.max_sq_wqebbs || max_send_wr > 0x7fff_ffff / caps.max_wqe_size {
            return Err(too_big);
        }
        // mlx5_calc_rcv_wqe, mlx5_calc_rq_size.
        let (rq_wqes, rq_stride) = if srq {
            (0, 0)
        } else {
            let stride = (ds * self.max_recv_sge.max(1)).next_power_of_two();
            let bytes = (self.rq_wqes.next_power_of_two() * stride).max(SEND_WQE_BB as u32);
            (bytes / stride, stride)
        };
        Ok(QpSizes {
            send_wqe_size,
            max_send_wr,
            sq_wqebbs,
            rq_wqes,
            rq_stride,
        })
    }
}

impl ConnectOptions {
    /// Checks the fields with a fixed width: the SL (4 bits) and the flow label (20 bits).
    pub fn validate(&self) -> Result<(), crate::Error> {
        if self.sl > 15 {
            return Err(crate::Error::InvalidArgument(
                "ConnectOptions::sl above 15 (4 bits)",
            ));
        }
        if self.flow_label >= 1 << 20 {
            return Err(crate::Error::InvalidArgument(
                "ConnectOptions::flow_label above 20 bits",
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::DciStreams;

    /// A ConnectX as the verbs backend reports one with `max_sge` 30, `max_qp_wr` 32768.
    fn connectx(atomics: bool) -> DeviceCaps {
        DeviceCaps {
            max_sq_wqebbs: 1 << 15,
            max_wqe_size: 512,
            max_send_sge: max_gather(512, atomics),
            max_recv_sge: 16,
            max_cqe: (1 << 22) - 1,
            max_inline: max_inline(512, atomics),
            bf_size: 256,
            max_rd_atomic: 16,
            max_dest_rd_atomic: 16,
            atomics,
            atomic_8b_host_order: atomics,
            compact_av: false,
            max_dm_size: 0,
            max_mcast_grp: 0,
            xrc: false,
            pacing: crate::types::PacingCaps::default(),
        }
    }

    #[test]
    fn a_dci_counts_the_address_vector_in_its_overhead() {
        // prm-facts-next §3.1: a DCI's overhead is the RC one + 48. With atomics 48 + 48 =
        // 96: 96 + align16(4 + 44) = 144, a 192-byte WQE; 1 SGE alone would need 112.
        let c = QpConfig {
            transport: Transport::Dci,
            max_inline: 44,
            max_send_sge: 1,
            ..QpConfig::default()
        };
        let s = c.check(&connectx(true), true).unwrap();
        assert_eq!((s.send_wqe_size, s.rq_wqes, s.rq_stride), (192, 0, 0));
        let rc = QpConfig {
            transport: Transport::Rc,
            ..c
        };
        assert_eq!(rc.check(&connectx(true), true).unwrap().send_wqe_size, 128);
    }

    #[test]
    fn the_default_config_gets_rdma_cores_ring() {
        let c = QpConfig::default();
        // 48 + align16(4 + 220) = 272 > 48 + 4 * 16: a 320-byte WQE; 51 of them make
        // rdma-core round 16320 bytes up to the 16 KiB ring of 256 WQEBBs asked for.
        let s = c.check(&connectx(true), false).unwrap();
        assert_eq!(
            s,
            QpSizes {
                send_wqe_size: 320,
                max_send_wr: 51,
                sq_wqebbs: 256,
                rq_wqes: 256,
                rq_stride: 64,
            }
        );
        assert_eq!((51 * 320u32).next_power_of_two() / 64, s.sq_wqebbs);
        // Without atomics the overhead is 32: 32 + 224 = 256, 64 WRs.
        let s = c.check(&connectx(false), false).unwrap();
        assert_eq!((s.send_wqe_size, s.max_send_wr), (256, 64));
    }

    #[test]
    fn uc_and_ud_sq_overheads_are_rdma_cores() {
        // UC: ctrl + raddr whatever the device's atomics; UD: ctrl + the 48-byte AV.
        assert_eq!(sq_overhead(Transport::Uc, true), 32);
        assert_eq!(sq_overhead(Transport::Ud, true), 64);
        assert_eq!(sq_overhead(Transport::Ud, false), 64);
        // DCI: RC's + the AV.
        assert_eq!(sq_overhead(Transport::Dci, true), 96);
        assert_eq!(sq_overhead(Transport::Dci, false), 80);
        assert_eq!(sq_overhead(Transport::XrcIni, true), 48);
        assert_eq!(sq_overhead(Transport::XrcIni, false), 48);
        let uc = QpConfig {
            transport: Transport::Uc,
            ..QpConfig::default()
        };
        // 32 + align16(4 + 220) = 256: 64 WRs, where an RC QP on the same device gets 51.
        let s = uc.check(&connectx(true), false).unwrap();
        assert_eq!((s.send_wqe_size, s.max_send_wr), (256, 64));
        // UD with no inline and one SGE: 64 + 16 = 80 -> a 128-byte WQE, so rdma-core
        // reports 128 - 64 - 4 = 60 bytes of inline (prm-facts-next 1.2).
        let ud = QpConfig {
            transport: Transport::Ud,
            max_inline: 0,
            max_send_sge: 1,
            ..QpConfig::default()
        };
        let s = ud.check(&connectx(true), false).unwrap();
        assert_eq!(s.send_wqe_size, 128);
        let ud188 = QpConfig {
            max_inline: 188,
            ..ud
        };
        // 64 + align16(192) = 256: UCX's and perftest's UD inline limit fills 4 WQEBBs.
        assert_eq!(
            ud188.check(&connectx(true), false).unwrap().send_wqe_size,
            256
        );
        let ud189 = QpConfig {
            max_inline: 189,
            ..ud
        };
        assert_eq!(
            ud189.check(&connectx(true), false).unwrap().send_wqe_size,
            320
        );
    }

    #[test]
    fn rings_are_powers_of_two_of_at_least_one_wqe_and_64_bytes() {
        let caps = connectx(true);
        let tiny = QpConfig {
            sq_wqebbs: 1,
            rq_wqes: 1,
            max_recv_sge: 1,
            ..QpConfig::default()
        };
        let s = tiny.check(&caps, false).unwrap();
        // One 320-byte WQE needs a 512-byte ring; one 16-byte receive WQE a 64-byte one.
        assert_eq!((s.sq_wqebbs, s.max_send_wr), (8, 1));
        assert_eq!((s.rq_wqes, s.rq_stride), (4, 16));
        let odd = QpConfig {
            sq_wqebbs: 300,
            rq_wqes: 300,
            max_recv_sge: 3,
            ..QpConfig::default()
        };
        let s = odd.check(&caps, false).unwrap();
        assert_eq!((s.sq_wqebbs, s.rq_wqes, s.rq_stride), (512, 512, 64));
        assert_eq!((s.max_send_wr * 320).next_power_of_two(), 512 * 64);
        let s = odd.check(&caps, true).unwrap();
        assert_eq!((s.rq_wqes, s.rq_stride), (0, 0), "no RQ on an SRQ");
    }

    #[test]
    fn what_rdma_core_refuses_is_refused_with_the_reason() {
        let caps = connectx(true);
        let ok = QpConfig::default();
        let refused_on = |caps: &DeviceCaps, c: QpConfig| match c.check(caps, false) {
            Err(Error::InvalidArgument(why)) => why,
            other => panic!("{c:?}: {other:?}"),
        };
        let refused = |c: QpConfig, _srq: bool| refused_on(&caps, c);
        let at_max = QpConfig {
            max_inline: caps.max_inline,
            max_send_sge: caps.max_send_sge,
            ..ok
        };
        assert_eq!(at_max.check(&caps, false).unwrap().send_wqe_size, 512);
        for (c, why) in [
            (
                QpConfig {
                    max_inline: caps.max_inline + 1,
                    ..ok
                },
                "inline size over the device maximum",
            ),
            (
                QpConfig {
                    max_send_sge: caps.max_send_sge + 1,
                    ..ok
                },
                "more SGEs than the device supports",
            ),
            (
                QpConfig { sq_wqebbs: 0, ..ok },
                "a QP needs a send queue of at least one WQEBB",
            ),
            (
                QpConfig { rq_wqes: 0, ..ok },
                "a QP without an SRQ needs a receive queue of at least one WQE",
            ),
            (
                QpConfig {
                    sq_wqebbs: caps.max_sq_wqebbs + 1,
                    ..ok
                },
                "queue larger than the device supports",
            ),
        ] {
            assert_eq!(refused(c, false), why, "{c:?}");
        }
        assert_eq!(
            QpConfig { rq_wqes: 0, ..ok }
                .check(&caps, true)
                .map(|s| s.rq_wqes),
            Ok(0),
            "an SRQ QP has no receive queue to size"
        );
        // The device's own limits, not the formula's: a device whose largest WQE is 256
        // bytes fits 13 gather entries after the 48-byte overhead, and inline data up to
        // 204 bytes.
        let small = DeviceCaps {
            max_wqe_size: 256,
            max_send_sge: 30,
            max_inline: 972,
            ..caps
        };
        let c = QpConfig {
            max_send_sge: 14,
            max_inline: 0,
            ..ok
        };
        assert_eq!(
            refused_on(&small, c),
            "the gather list does not fit the device's largest WQE"
        );
        let c = QpConfig {
            max_send_sge: 1,
            max_inline: 205,
            ..ok
        };
        assert_eq!(
            refused_on(&small, c),
            "the send WQE does not fit the device's largest WQE"
        );
        assert_eq!((max_gather(256, true), max_inline(256, true)), (13, 204));
    }

    /// The sizes [`QpConfig::check`] returns, in the order of [`QpSizes`]' fields.
    fn sizes(
        send_wqe: u32,
        send_wrs: u32,
        sq_wqebbs: u32,
        rq_wqes: u32,
        rq_stride: u32,
    ) -> QpSizes {
        QpSizes {
            send_wqe_size: send_wqe,
            max_send_wr: send_wrs,
            sq_wqebbs,
            rq_wqes,
            rq_stride,
        }
    }

    fn invalid(why: &'static str) -> Result<QpSizes, Error> {
        Err(Error::InvalidArgument(why))
    }

    /// The default config on `connectx(true)`: a 320-byte WQE, 51 of them in 256 WQEBBs,
    /// 256 receive WQEs of 4 SGEs (64 bytes).
    const DEFAULT: (u32, u32, u32) = (320, 51, 256);

    #[test]
    fn a_raw_qp_counts_the_ethernet_segment_in_its_overhead() {
        // IBV_QPT_RAW_PACKET: control 16 + Ethernet segment 32, atomics or not.
        assert_eq!(sq_overhead(Transport::Raw, true), 48);
        assert_eq!(sq_overhead(Transport::Raw, false), 48);
        let caps = connectx(false);
        // Without atomics the device's limits are RC's: (512 - 32) / 16 = 30 SGEs and
        // 512 - 32 - 4 = 476 bytes of inline; a raw QP's 48 bytes leave room for 29 and 460.
        assert_eq!((caps.max_send_sge, caps.max_inline), (30, 476));
        let raw = QpConfig {
            transport: Transport::Raw,
            max_send_sge: 29,
            max_inline: 0,
            ..QpConfig::default()
        };
        let inline = QpConfig {
            max_send_sge: 1,
            max_inline: 460,
            ..raw
        };
        for (c, sized) in [
            // 48 + 29 · 16 = 512: 16 KiB of ring hold 32.
            (raw, Ok(sizes(512, 32, 256, 256, 64))),
            (
                QpConfig {
                    max_send_sge: 30,
                    ..raw
                },
                invalid("the gather list does not fit the device's largest WQE"),
            ),
            // 48 + align16(4 + 460) = 512; 4 + 461 rounds up to 480: 528.
            (inline, Ok(sizes(512, 32, 256, 256, 64))),
            (
                QpConfig {
                    max_inline: 461,
                    ..inline
                },
                invalid("the send WQE does not fit the device's largest WQE"),
            ),
            // One SGE, no inline: 48 + 16 = 64, one WQEBB; one 16-byte receive WQE needs
            // 64 bytes of ring, 4 of them.
            (
                QpConfig {
                    sq_wqebbs: 1,
                    rq_wqes: 1,
                    max_send_sge: 1,
                    max_recv_sge: 1,
                    ..raw
                },
                Ok(sizes(64, 1, 1, 4, 16)),
            ),
        ] {
            assert_eq!(c.check(&caps, false), sized, "{c:?}");
        }
    }

    #[test]
    fn sges_are_checked_against_the_device_at_the_limit_and_past_it() {
        let caps = connectx(true);
        // (512 - 48) / 16 = 29 send SGEs, 16 receive SGEs.
        assert_eq!((caps.max_send_sge, caps.max_recv_sge), (29, 16));
        let gather = |sges| QpConfig {
            max_send_sge: sges,
            max_inline: 0,
            ..QpConfig::default()
        };
        // Without inline the gather list alone sizes the WQE: 48 + 16 · sges, rounded up
        // to 64.
        for (sges, wqe, wrs) in [(1, 64, 256), (4, 128, 128), (13, 256, 64), (29, 512, 32)] {
            assert_eq!(
                gather(sges).check(&caps, false),
                Ok(sizes(wqe, wrs, 256, 256, 64)),
                "{sges} SGEs"
            );
        }
        for srq in [false, true] {
            assert_eq!(
                gather(30).check(&caps, srq),
                invalid("more SGEs than the device supports")
            );
        }
        let recv = |sges| QpConfig {
            max_recv_sge: sges,
            ..QpConfig::default()
        };
        // 16 SGEs: a 256-byte receive WQE.
        assert_eq!(
            recv(16).check(&caps, false),
            Ok(sizes(320, 51, 256, 256, 256))
        );
        assert_eq!(
            recv(17).check(&caps, false),
            invalid("more SGEs than the device supports")
        );
        // An SRQ QP has no receive queue: its receive SGEs are not the QP's.
        assert_eq!(recv(17).check(&caps, true), Ok(sizes(320, 51, 256, 0, 0)));
    }

    #[test]
    fn a_wqe_the_device_takes_only_unrounded_is_refused() {
        // A device whose largest WQE, 480 bytes, is not whole WQEBBs: rdma-core rounds the
        // WQE up to 64 bytes and then refuses anything over 480, so 448 is the largest.
        let caps = DeviceCaps {
            max_wqe_size: 480,
            max_send_sge: 30,
            max_inline: 972,
            ..connectx(true)
        };
        // 448 - 48 = 400 bytes: 396 of inline data, 25 SGEs.
        assert_eq!((max_inline(480, true), max_gather(480, true)), (396, 25));
        let inline = |n| QpConfig {
            max_send_sge: 1,
            max_inline: n,
            ..QpConfig::default()
        };
        // 48 + align16(400) = 448; 16 KiB hold 36.
        assert_eq!(
            inline(396).check(&caps, false),
            Ok(sizes(448, 36, 256, 256, 64))
        );
        let gather = QpConfig {
            max_send_sge: 25,
            max_inline: 0,
            ..QpConfig::default()
        };
        assert_eq!(gather.check(&caps, false), Ok(sizes(448, 36, 256, 256, 64)));
        // 48 + align16(401) = 464 and 48 + 26 · 16 = 464: under 480, but 512 once rounded.
        let too_big = invalid("the send WQE does not fit the device's largest WQE");
        assert_eq!(inline(397).check(&caps, false), too_big);
        let gather = QpConfig {
            max_send_sge: 26,
            ..gather
        };
        assert_eq!(gather.check(&caps, false), too_big);
    }

    #[test]
    fn per_transport_options_are_refused_elsewhere() {
        let caps = connectx(true);
        let (wqe, wrs, wqebbs) = DEFAULT;
        let scatter = |transport| QpConfig {
            transport,
            scatter_to_cqe: true,
            ..QpConfig::default()
        };
        // RC and UC: 48 and 32 bytes of overhead, 320- and 256-byte WQEs.
        assert_eq!(
            scatter(Transport::Rc).check(&caps, false),
            Ok(sizes(wqe, wrs, wqebbs, 256, 64))
        );
        assert_eq!(
            scatter(Transport::Uc).check(&caps, false),
            Ok(sizes(256, 64, 256, 256, 64))
        );
        for t in [
            Transport::Ud,
            Transport::Dci,
            Transport::Raw,
            Transport::XrcIni,
        ] {
            assert_eq!(
                scatter(t).check(&caps, false),
                invalid("scatter to CQE is for RC and UC QPs"),
                "{t:?}"
            );
        }
        let streams = |log_concurrent| DciStreams {
            log_concurrent,
            log_errored: 0,
        };
        let dci = |log_concurrent| QpConfig {
            transport: Transport::Dci,
            dci_streams: Some(streams(log_concurrent)),
            ..QpConfig::default()
        };
        // A DCI: 96 + align16(224) = 320, as RC's default; no receive queue.
        let dci_sizes = Ok(sizes(wqe, wrs, wqebbs, 0, 0));
        assert_eq!(dci(0).check(&caps, true), dci_sizes);
        assert_eq!(dci(16).check(&caps, true), dci_sizes);
        assert_eq!(
            dci(17).check(&caps, true),
            invalid("more DCI streams than 16-bit ids name")
        );
        let rc = QpConfig {
            transport: Transport::Rc,
            ..dci(0)
        };
        assert_eq!(
            rc.check(&caps, true),
            invalid("DCI streams on a QP that is not a DCI")
        );
        let indexed = |u| QpConfig {
            user_index: Some(u),
            ..QpConfig::default()
        };
        for u in [0, 0xff_ffff] {
            assert_eq!(
                indexed(u).check(&caps, false),
                Ok(sizes(wqe, wrs, wqebbs, 256, 64))
            );
        }
        assert_eq!(
            indexed(0x100_0000).check(&caps, false),
            invalid("user index above 24 bits")
        );
    }

    #[test]
    fn queues_are_bounded_by_the_devices_wr_limit() {
        let caps = connectx(true);
        let (wqe, wrs, wqebbs) = DEFAULT;
        let too_big = invalid("queue larger than the device supports");
        let sq = |n| QpConfig {
            sq_wqebbs: n,
            ..QpConfig::default()
        };
        // 32768 WQEBBs, 2 MiB: 2097152 / 320 = 6553 WRs.
        assert_eq!(
            sq(1 << 15).check(&caps, false),
            Ok(sizes(wqe, 6553, 1 << 15, 256, 64))
        );
        for n in [(1 << 15) + 1, u32::MAX] {
            for srq in [false, true] {
                assert_eq!(sq(n).check(&caps, srq), too_big, "{n}");
            }
        }
        let rq = |n| QpConfig {
            rq_wqes: n,
            ..QpConfig::default()
        };
        assert_eq!(
            rq(1 << 15).check(&caps, false),
            Ok(sizes(wqe, wrs, wqebbs, 1 << 15, 64))
        );
        for n in [(1 << 15) + 1, u32::MAX] {
            assert_eq!(rq(n).check(&caps, false), too_big, "{n}");
            assert_eq!(
                rq(n).check(&caps, true),
                Ok(sizes(wqe, wrs, wqebbs, 0, 0)),
                "no receive queue on an SRQ"
            );
        }
        // The ring holds at least one WQE: a 320-byte one makes a 512-byte ring, 8 WQEBBs,
        // more than a device of 4 has; a 128-byte one fits twice in 4.
        let four = DeviceCaps {
            max_sq_wqebbs: 4,
            ..caps
        };
        let one = QpConfig {
            sq_wqebbs: 1,
            rq_wqes: 1,
            ..QpConfig::default()
        };
        assert_eq!(one.check(&four, false), too_big);
        let small = QpConfig {
            sq_wqebbs: 4,
            max_inline: 0,
            ..one
        };
        assert_eq!(small.check(&four, false), Ok(sizes(128, 2, 4, 1, 64)));
    }

    #[test]
    fn send_wrs_stay_under_rdma_cores_overflow_bound() {
        // mlx5_calc_sq_size refuses max_send_wr > 0x7fffffff / max_sq_desc_sz: with
        // 384-byte WQEs at most, 2147483647 / 384 = 5592405 WRs.
        let caps = DeviceCaps {
            max_wqe_size: 384,
            max_sq_wqebbs: 1 << 24,
            max_send_sge: 20,
            max_inline: 972,
            ..connectx(true)
        };
        let c = QpConfig {
            sq_wqebbs: 1 << 24,
            max_send_sge: 1,
            max_inline: 140,
            ..QpConfig::default()
        };
        // 48 + align16(144) = 192: a 1 GiB ring holds 1073741824 / 192 = 5592405, the bound.
        assert_eq!(
            c.check(&caps, false),
            Ok(sizes(192, 5_592_405, 1 << 24, 256, 64))
        );
        // 48 + align16(80) = 128: 8388608 WRs.
        let c = QpConfig {
            max_inline: 76,
            ..c
        };
        assert_eq!(
            c.check(&caps, false),
            invalid("queue larger than the device supports")
        );
    }
}
