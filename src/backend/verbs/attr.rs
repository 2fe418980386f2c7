//! QP transitions as verbs attributes: which `ibv_qp_attr` fields and which
//! `ibv_qp_attr_mask` bits each step sets (the IB core's `qp_state_table` requirements), for
//! InfiniBand (LID, or LID and a GRH) and RoCE (GRH: GID index, hop limit, traffic class,
//! flow label) addressing.
//!
//! Pure functions over plain values, so CI checks them without a NIC.

use crate::backend::ffi::{ibv_ah_attr, ibv_mtu, ibv_qp_attr, ibv_qp_attr_mask as m, ibv_qp_state};

use crate::error::Error;
use crate::types::{AhAttr, Endpoint, Transition};

/// How a port reaches its peers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Addressing {
    /// InfiniBand: the destination LID, no GRH.
    Lid,
    /// RoCE (Ethernet): a GRH from this GID index.
    Gid {
        /// Source GID index.
        sgid_index: u8,
    },
    /// InfiniBand with a GRH (perftest's `-x` on an InfiniBand port, which sets
    /// `ah_attr.is_global` there too): the destination LID and a GRH from this GID index.
    LidGrh {
        /// Source GID index.
        sgid_index: u8,
    },
}

impl Addressing {
    /// True if the destination LID is part of the address (InfiniBand).
    fn uses_lid(self) -> bool {
        !matches!(self, Addressing::Gid { .. })
    }
}

/// What a transition needs besides the transition itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct PathInfo {
    /// The QP's port.
    pub port: u8,
    /// Its addressing.
    pub addressing: Addressing,
    /// The port's active MTU in bytes: the path MTU is capped at it, as perftest does.
    pub active_mtu: u32,
}

impl PathInfo {
    /// The path MTU for `path_mtu` bytes asked for: capped at the port's active MTU.
    fn mtu(&self, path_mtu: u32) -> Result<ibv_mtu::Type, Error> {
        ibv_mtu_of(path_mtu.min(self.active_mtu.max(256)))
    }
}

/// `enum ibv_mtu` for an MTU in bytes.
pub(crate) fn ibv_mtu_of(bytes: u32) -> Result<ibv_mtu::Type, Error> {
    Ok(match bytes {
        256 => ibv_mtu::IBV_MTU_256,
        512 => ibv_mtu::IBV_MTU_512,
        1024 => ibv_mtu::IBV_MTU_1024,
        2048 => ibv_mtu::IBV_MTU_2048,
        4096 => ibv_mtu::IBV_MTU_4096,
        _ => {
            return Err(Error::InvalidArgument(
                "path MTU must be 256, 512, 1024, 2048 or 4096",
            ))
        }
    })
}

/// MTU in bytes of an `enum ibv_mtu` (0 for a value verbs does not define).
pub(crate) fn mtu_bytes(mtu: ibv_mtu::Type) -> u32 {
    match mtu {
        ibv_mtu::IBV_MTU_256..=ibv_mtu::IBV_MTU_4096 => 128 << mtu,
        _ => 0,
    }
}

/// The attributes and mask of `transition` for a QP on `path`.
pub(crate) fn qp_attr(transition: &Transition, path: &PathInfo) -> Result<(ibv_qp_attr, m), Error> {
    // SAFETY: `ibv_qp_attr` is plain C data (integers and the GID bytes); all zeroes is a
    // valid value of each field and what rdma-core's own examples start from.
    let mut attr: ibv_qp_attr = unsafe { core::mem::zeroed() };
    let mask = match *transition {
        Transition::Init {
            port,
            access,
            pkey_index,
        } => {
            attr.qp_state = ibv_qp_state::IBV_QPS_INIT;
            attr.pkey_index = pkey_index;
            attr.port_num = port;
            attr.qp_access_flags = access.0;
            m::IBV_QP_STATE | m::IBV_QP_PKEY_INDEX | m::IBV_QP_PORT | m::IBV_QP_ACCESS_FLAGS
        }
        Transition::Rtr {
            remote,
            path_mtu,
            max_dest_rd_atomic,
            min_rnr_timer,
            hop_limit,
            traffic_class,
            sl,
            flow_label,
        } => {
            attr.max_dest_rd_atomic = max_dest_rd_atomic;
            attr.min_rnr_timer = min_rnr_timer;
            let grh = Grh {
                hop_limit,
                traffic_class,
                flow_label,
            };
            rtr_path(&mut attr, &remote, path_mtu, sl, grh, path)?
                | m::IBV_QP_MAX_DEST_RD_ATOMIC
                | m::IBV_QP_MIN_RNR_TIMER
        }
        // UC ([KCORE] `qp_state_table`): the path, MTU, peer and RQ PSN at RTR, without the
        // READ / atomic depth and the RNR timer; the SQ PSN alone at RTS (below, as UD).
        // An XRC initiator's RTR has UC's attributes (`IB_QPT_XRC_INI` in the same table).
        Transition::RtrUc {
            remote,
            path_mtu,
            hop_limit,
            traffic_class,
            sl,
            flow_label,
        }
        | Transition::RtrXrcIni {
            remote,
            path_mtu,
            hop_limit,
            traffic_class,
            sl,
            flow_label,
        } => {
            let grh = Grh {
                hop_limit,
                traffic_class,
                flow_label,
            };
            rtr_path(&mut attr, &remote, path_mtu, sl, grh, path)?
        }
        Transition::Rts {
            sq_psn,
            timeout,
            retry_cnt,
            rnr_retry,
            max_rd_atomic,
        } => {
            attr.qp_state = ibv_qp_state::IBV_QPS_RTS;
            attr.sq_psn = sq_psn;
            attr.timeout = timeout;
            attr.retry_cnt = retry_cnt;
            attr.rnr_retry = rnr_retry;
            attr.max_rd_atomic = max_rd_atomic;
            m::IBV_QP_STATE
                | m::IBV_QP_TIMEOUT
                | m::IBV_QP_RETRY_CNT
                | m::IBV_QP_RNR_RETRY
                | m::IBV_QP_SQ_PSN
                | m::IBV_QP_MAX_QP_RD_ATOMIC
        }
        // An XRC target ([KCORE] `qp_state_table`, `IB_QPT_XRC_TGT`): the timeout and the
        // SQ PSN alone.
        Transition::RtsXrcTgt { sq_psn, timeout } => {
            attr.qp_state = ibv_qp_state::IBV_QPS_RTS;
            attr.sq_psn = sq_psn;
            attr.timeout = timeout;
            m::IBV_QP_STATE | m::IBV_QP_TIMEOUT | m::IBV_QP_SQ_PSN
        }
        // UD ([KCORE] `qp_state_table`, as perftest sets them): the Q_Key at INIT,
        // nothing remote at RTR, the SQ PSN alone at RTS.
        Transition::InitUd {
            port,
            qkey,
            pkey_index,
        } => {
            attr.qp_state = ibv_qp_state::IBV_QPS_INIT;
            attr.pkey_index = pkey_index;
            attr.port_num = port;
            attr.qkey = qkey;
            m::IBV_QP_STATE | m::IBV_QP_PKEY_INDEX | m::IBV_QP_PORT | m::IBV_QP_QKEY
        }
        Transition::RtrUd | Transition::RtrRaw => {
            attr.qp_state = ibv_qp_state::IBV_QPS_RTR;
            m::IBV_QP_STATE
        }
        // Raw packet ([KCORE] `qp_state_table`): the port alone at INIT, nothing after.
        Transition::InitRaw { port } => {
            attr.qp_state = ibv_qp_state::IBV_QPS_INIT;
            attr.port_num = port;
            m::IBV_QP_STATE | m::IBV_QP_PORT
        }
        Transition::RtsRaw => {
            attr.qp_state = ibv_qp_state::IBV_QPS_RTS;
            m::IBV_QP_STATE
        }
        Transition::RtsUd { sq_psn } | Transition::RtsUc { sq_psn } => {
            attr.qp_state = ibv_qp_state::IBV_QPS_RTS;
            attr.sq_psn = sq_psn;
            m::IBV_QP_STATE | m::IBV_QP_SQ_PSN
        }
        // DC ([KIB] `modify_dci_qp_is_ok`, `mlx5_ib_modify_dct`; UCX's
        // `uct_dc_mlx5_iface_dci_connect` adds the AV at the DCI's RTR, global on RoCE).
        Transition::InitDci { port, pkey_index } => {
            attr.qp_state = ibv_qp_state::IBV_QPS_INIT;
            attr.pkey_index = pkey_index;
            attr.port_num = port;
            m::IBV_QP_STATE | m::IBV_QP_PKEY_INDEX | m::IBV_QP_PORT
        }
        Transition::RtrDci { path_mtu } => {
            attr.qp_state = ibv_qp_state::IBV_QPS_RTR;
            attr.path_mtu = path.mtu(path_mtu)?;
            local_path(&mut attr, path, Grh::default());
            m::IBV_QP_STATE | m::IBV_QP_PATH_MTU | m::IBV_QP_AV
        }
        Transition::RtrDct {
            path_mtu,
            min_rnr_timer,
            hop_limit,
            traffic_class,
            sl,
            flow_label,
        } => {
            attr.qp_state = ibv_qp_state::IBV_QPS_RTR;
            attr.path_mtu = path.mtu(path_mtu)?;
            attr.min_rnr_timer = min_rnr_timer;
            attr.ah_attr.sl = sl;
            // On RoCE without `is_global`, the SGID index and the hop limit the kernel
            // answers EINVAL (UCX #3245, PR #3919, PR #4744).
            let grh = Grh {
                hop_limit,
                traffic_class,
                flow_label,
            };
            local_path(&mut attr, path, grh);
            m::IBV_QP_STATE | m::IBV_QP_MIN_RNR_TIMER | m::IBV_QP_AV | m::IBV_QP_PATH_MTU
        }
        // The kernel tracks the state it last set (RTS): naming SQE as the current state
        // makes it issue SQERR2RTS_QP ([KCORE] `qp_state_table`: SQE -> RTS, optional
        // CUR_STATE).
        Transition::SqeToRts => {
            attr.qp_state = ibv_qp_state::IBV_QPS_RTS;
            attr.cur_qp_state = ibv_qp_state::IBV_QPS_SQE;
            m::IBV_QP_STATE | m::IBV_QP_CUR_STATE
        }
        Transition::Err => {
            attr.qp_state = ibv_qp_state::IBV_QPS_ERR;
            m::IBV_QP_STATE
        }
        Transition::Reset => {
            attr.qp_state = ibv_qp_state::IBV_QPS_RESET;
            m::IBV_QP_STATE
        }
    };
    Ok((attr, mask))
}

/// `ibv_ah_attr` for `a` (static rate 0: unlimited).
pub(crate) fn ah_attr(a: &AhAttr) -> ibv_ah_attr {
    // SAFETY: plain C data (integers and GID bytes); all zeroes is valid.
    let mut attr: ibv_ah_attr = unsafe { core::mem::zeroed() };
    attr.port_num = a.port;
    attr.dlid = a.dlid;
    attr.sl = a.sl;
    attr.src_path_bits = a.src_path_bits;
    if let Some(g) = a.grh {
        attr.is_global = 1;
        attr.grh.dgid.raw = g.dgid;
        attr.grh.flow_label = g.flow_label;
        attr.grh.sgid_index = g.sgid_index;
        attr.grh.hop_limit = g.hop_limit;
        attr.grh.traffic_class = g.traffic_class;
    }
    attr
}

/// The GRH fields of an address at RTR, where one is sent.
#[derive(Clone, Copy, Default)]
struct Grh {
    hop_limit: u8,
    traffic_class: u8,
    flow_label: u32,
}

/// The local half of an address at RTR: the port, and where the port sends a GRH (RoCE,
/// InfiniBand with [`Addressing::LidGrh`]) `is_global`, the SGID index and `grh`'s hop
/// limit, traffic class and flow label. True if it set a GRH.
fn local_path(attr: &mut ibv_qp_attr, path: &PathInfo, grh: Grh) -> bool {
    attr.ah_attr.port_num = path.port;
    let (Addressing::Gid { sgid_index } | Addressing::LidGrh { sgid_index }) = path.addressing
    else {
        return false;
    };
    attr.ah_attr.is_global = 1;
    attr.ah_attr.grh.sgid_index = sgid_index;
    attr.ah_attr.grh.hop_limit = grh.hop_limit;
    attr.ah_attr.grh.traffic_class = grh.traffic_class;
    attr.ah_attr.grh.flow_label = grh.flow_label;
    true
}

/// INIT -> RTR of a connected QP (RC or UC): the state, the path MTU (capped at the port's
/// active MTU), the peer's QPN and PSN, and its address: the SL, the LID on InfiniBand and
/// a GRH to its GID where the port sends one. Returns the mask bits set.
fn rtr_path(
    attr: &mut ibv_qp_attr,
    remote: &Endpoint,
    path_mtu: u32,
    sl: u8,
    grh: Grh,
    path: &PathInfo,
) -> Result<m, Error> {
    attr.qp_state = ibv_qp_state::IBV_QPS_RTR;
    attr.path_mtu = path.mtu(path_mtu)?;
    attr.dest_qp_num = remote.qpn;
    attr.rq_psn = remote.psn;
    attr.ah_attr.sl = sl;
    if local_path(attr, path, grh) {
        attr.ah_attr.grh.dgid.raw = remote.gid;
    }
    if path.addressing.uses_lid() {
        attr.ah_attr.dlid = remote.lid;
    }
    Ok(m::IBV_QP_STATE | m::IBV_QP_AV | m::IBV_QP_PATH_MTU | m::IBV_QP_DEST_QPN | m::IBV_QP_RQ_PSN)
}

/// The attributes [`Backend::query_psn`](crate::backend::Backend::query_psn) asks
/// `ibv_query_qp` for: the next send PSN and the expected receive PSN (the kernel's mlx5
/// driver answers them from the QPC's `next_send_psn` and `next_rcv_psn`).
pub(crate) const PSN_QUERY: m = m(m::IBV_QP_SQ_PSN.0 | m::IBV_QP_RQ_PSN.0);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::Access;

    const IB: PathInfo = PathInfo {
        port: 2,
        addressing: Addressing::Lid,
        active_mtu: 4096,
    };
    const ROCE: PathInfo = PathInfo {
        port: 1,
        addressing: Addressing::Gid { sgid_index: 3 },
        active_mtu: 1024,
    };

    fn remote() -> Endpoint {
        Endpoint {
            lid: 0x12,
            gid: [0xfe, 0x80, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8],
            qpn: 0x1234,
            psn: 77,
        }
    }

    fn rtr() -> Transition {
        Transition::Rtr {
            remote: remote(),
            path_mtu: 4096,
            max_dest_rd_atomic: 16,
            min_rnr_timer: 12,
            hop_limit: 64,
            traffic_class: 0x60,
            sl: 5,
            flow_label: 0xabcde,
        }
    }

    #[test]
    fn ud_transitions_carry_the_qkey_nothing_remote_and_the_sq_psn() {
        let (attr, mask) = qp_attr(
            &Transition::InitUd {
                port: 2,
                qkey: 0x1100_2233,
                pkey_index: 3,
            },
            &IB,
        )
        .unwrap();
        // STATE 1 | PKEY_INDEX 16 | PORT 32 | QKEY 64: no access flags.
        assert_eq!(mask.0, 1 | 16 | 32 | 64);
        assert_eq!(attr.qp_state, ibv_qp_state::IBV_QPS_INIT);
        assert_eq!(
            (attr.port_num, attr.qkey, attr.pkey_index),
            (2, 0x1100_2233, 3)
        );
        let (attr, mask) = qp_attr(&Transition::RtrUd, &IB).unwrap();
        assert_eq!((mask.0, attr.qp_state), (1, ibv_qp_state::IBV_QPS_RTR));
        let (attr, mask) = qp_attr(&Transition::RtsUd { sq_psn: 0x77 }, &IB).unwrap();
        // STATE | SQ_PSN 65536: no timeout, retry counts or READ depth.
        assert_eq!(mask.0, 1 | 65536);
        assert_eq!(
            (attr.qp_state, attr.sq_psn),
            (ibv_qp_state::IBV_QPS_RTS, 0x77)
        );
    }

    #[test]
    fn xrc_transitions_set_what_the_kernel_allows_each_side() {
        let rtr = Transition::RtrXrcIni {
            remote: remote(),
            path_mtu: 4096,
            hop_limit: 64,
            traffic_class: 0,
            sl: 0,
            flow_label: 0,
        };
        let (attr, mask) = qp_attr(&rtr, &IB).unwrap();
        // STATE 1, AV 128, PATH_MTU 256, RQ_PSN 4096, DEST_QPN 1048576 (UC's).
        assert_eq!(mask.0, 1 | 128 | 256 | 4096 | 1048576);
        assert_eq!((attr.dest_qp_num, attr.rq_psn), (0x1234, 77));
        let rts = Transition::RtsXrcTgt {
            sq_psn: 0x42,
            timeout: 14,
        };
        let (attr, mask) = qp_attr(&rts, &IB).unwrap();
        // STATE 1, TIMEOUT 512, SQ_PSN 65536.
        assert_eq!(mask.0, 1 | 512 | 65536);
        assert_eq!((attr.sq_psn, attr.timeout), (0x42, 14));
    }

    #[test]
    fn uc_transitions_set_the_path_but_no_depth_timers_or_retries() {
        let rtr = Transition::RtrUc {
            remote: remote(),
            path_mtu: 4096,
            hop_limit: 64,
            traffic_class: 0x60,
            sl: 9,
            flow_label: 0x54321,
        };
        let (attr, mask) = qp_attr(&rtr, &IB).unwrap();
        // STATE 1, AV 128, PATH_MTU 256, RQ_PSN 4096, DEST_QPN 1048576: no
        // MAX_DEST_RD_ATOMIC (131072), no MIN_RNR_TIMER (32768).
        assert_eq!(mask.0, 1 | 128 | 256 | 4096 | 1048576);
        assert_eq!(attr.qp_state, ibv_qp_state::IBV_QPS_RTR);
        assert_eq!((attr.dest_qp_num, attr.rq_psn), (0x1234, 77));
        assert_eq!((attr.ah_attr.dlid, attr.ah_attr.port_num), (0x12, 2));
        assert_eq!((attr.max_dest_rd_atomic, attr.min_rnr_timer), (0, 0));
        assert_eq!((attr.ah_attr.sl, attr.ah_attr.is_global), (9, 0));
        assert_eq!(attr.ah_attr.grh.flow_label, 0, "no GRH, no flow label");
        let (attr, _) = qp_attr(&rtr, &ROCE).unwrap();
        assert_eq!(
            (attr.ah_attr.is_global, attr.path_mtu),
            (1, ibv_mtu::IBV_MTU_1024)
        );
        let grh = attr.ah_attr.grh;
        assert_eq!(
            (grh.hop_limit, grh.traffic_class, grh.flow_label),
            (64, 0x60, 0x54321)
        );
        assert_eq!(attr.ah_attr.sl, 9);
        let (attr, mask) = qp_attr(&Transition::RtsUc { sq_psn: 0x42 }, &IB).unwrap();
        // STATE | SQ_PSN: no TIMEOUT, RETRY_CNT, RNR_RETRY or MAX_QP_RD_ATOMIC.
        assert_eq!(mask.0, 1 | 65536);
        assert_eq!(
            (attr.qp_state, attr.sq_psn),
            (ibv_qp_state::IBV_QPS_RTS, 0x42)
        );
        assert_eq!((attr.timeout, attr.retry_cnt, attr.rnr_retry), (0, 0, 0));
    }

    #[test]
    fn init_sets_state_pkey_port_and_access() {
        let t = Transition::Init {
            port: 2,
            access: Access::REMOTE_WRITE | Access::REMOTE_READ,
            pkey_index: 3,
        };
        let (attr, mask) = qp_attr(&t, &IB).unwrap();
        assert_eq!(
            mask.0,
            1 | 16 | 32 | 8,
            "STATE | PKEY_INDEX | PORT | ACCESS_FLAGS"
        );
        assert_eq!(attr.qp_state, ibv_qp_state::IBV_QPS_INIT);
        assert_eq!(
            (attr.port_num, attr.pkey_index, attr.qp_access_flags),
            (2, 3, 6)
        );
    }

    #[test]
    fn rtr_on_infiniband_addresses_the_lid() {
        let (attr, mask) = qp_attr(&rtr(), &IB).unwrap();
        // STATE 1, AV 128, PATH_MTU 256, RQ_PSN 4096, MAX_DEST_RD_ATOMIC 131072,
        // DEST_QPN 1048576, MIN_RNR_TIMER 32768.
        assert_eq!(mask.0, 1 | 128 | 256 | 4096 | 32768 | 131072 | 1048576);
        assert_eq!(attr.qp_state, ibv_qp_state::IBV_QPS_RTR);
        assert_eq!(attr.path_mtu, ibv_mtu::IBV_MTU_4096);
        assert_eq!((attr.dest_qp_num, attr.rq_psn), (0x1234, 77));
        assert_eq!((attr.max_dest_rd_atomic, attr.min_rnr_timer), (16, 12));
        assert_eq!((attr.ah_attr.dlid, attr.ah_attr.port_num), (0x12, 2));
        assert_eq!((attr.ah_attr.sl, attr.ah_attr.is_global), (5, 0));
        assert_eq!(attr.ah_attr.grh.flow_label, 0, "no GRH, no flow label");
    }

    #[test]
    fn rtr_on_roce_carries_a_grh_and_caps_the_mtu() {
        let (attr, _) = qp_attr(&rtr(), &ROCE).unwrap();
        assert_eq!(
            attr.path_mtu,
            ibv_mtu::IBV_MTU_1024,
            "capped at the active MTU"
        );
        assert_eq!((attr.ah_attr.is_global, attr.ah_attr.dlid), (1, 0));
        let grh = attr.ah_attr.grh;
        // SAFETY: reading the bytes of a union of plain integers.
        assert_eq!(unsafe { grh.dgid.raw }, remote().gid);
        assert_eq!(
            (grh.sgid_index, grh.hop_limit, grh.traffic_class),
            (3, 64, 0x60)
        );
        assert_eq!((grh.flow_label, attr.ah_attr.sl), (0xabcde, 5));
        assert_eq!(attr.ah_attr.port_num, 1);
    }

    #[test]
    fn rtr_on_infiniband_with_a_grh_addresses_the_lid_and_sends_a_grh() {
        // perftest's `-x` on an InfiniBand port: `is_global` with the SGID index, and the
        // DLID as well (ibv_ah_attr carries both).
        let ib_grh = PathInfo {
            addressing: Addressing::LidGrh { sgid_index: 1 },
            ..IB
        };
        let (attr, _) = qp_attr(&rtr(), &ib_grh).unwrap();
        assert_eq!((attr.ah_attr.is_global, attr.ah_attr.dlid), (1, 0x12));
        let grh = attr.ah_attr.grh;
        // SAFETY: reading the bytes of a union of plain integers.
        assert_eq!(unsafe { grh.dgid.raw }, remote().gid);
        assert_eq!(
            (
                grh.sgid_index,
                grh.hop_limit,
                grh.traffic_class,
                grh.flow_label
            ),
            (1, 64, 0x60, 0xabcde)
        );
        assert_eq!((attr.ah_attr.sl, attr.path_mtu), (5, ibv_mtu::IBV_MTU_4096));
    }

    #[test]
    fn rts_sets_timers_retries_psn_and_depth() {
        let t = Transition::Rts {
            sq_psn: 5,
            timeout: 14,
            retry_cnt: 7,
            rnr_retry: 6,
            max_rd_atomic: 16,
        };
        let (attr, mask) = qp_attr(&t, &IB).unwrap();
        // STATE 1, TIMEOUT 512, RETRY_CNT 1024, RNR_RETRY 2048, MAX_QP_RD_ATOMIC 8192,
        // SQ_PSN 65536.
        assert_eq!(mask.0, 1 | 512 | 1024 | 2048 | 8192 | 65536);
        assert_eq!(attr.qp_state, ibv_qp_state::IBV_QPS_RTS);
        assert_eq!(
            (
                attr.sq_psn,
                attr.timeout,
                attr.retry_cnt,
                attr.rnr_retry,
                attr.max_rd_atomic
            ),
            (5, 14, 7, 6, 16)
        );
    }

    #[test]
    fn dci_transitions_carry_no_access_and_nothing_remote() {
        let init = Transition::InitDci {
            port: 2,
            pkey_index: 1,
        };
        let (attr, mask) = qp_attr(&init, &IB).unwrap();
        // STATE 1 | PKEY_INDEX 16 | PORT 32: no access flags.
        assert_eq!(mask.0, 1 | 16 | 32);
        assert_eq!(
            (attr.qp_state, attr.port_num, attr.pkey_index),
            (ibv_qp_state::IBV_QPS_INIT, 2, 1)
        );
        let (attr, mask) = qp_attr(&Transition::RtrDci { path_mtu: 4096 }, &ROCE).unwrap();
        // STATE 1 | AV 128 | PATH_MTU 256: no DEST_QPN, RQ_PSN or READ depth.
        assert_eq!(mask.0, 1 | 128 | 256);
        assert_eq!(
            attr.path_mtu,
            ibv_mtu::IBV_MTU_1024,
            "capped at the active MTU"
        );
        assert_eq!((attr.ah_attr.is_global, attr.ah_attr.port_num), (1, 1));
        assert_eq!(attr.ah_attr.grh.sgid_index, 3);
    }

    #[test]
    fn dct_rtr_on_roce_is_global_with_the_sgid_index_and_hop_limit() {
        let t = Transition::RtrDct {
            path_mtu: 2048,
            min_rnr_timer: 12,
            hop_limit: 64,
            traffic_class: 0x60,
            sl: 4,
            flow_label: 0x12345,
        };
        let (attr, mask) = qp_attr(&t, &ROCE).unwrap();
        // Exactly STATE 1 | AV 128 | PATH_MTU 256 | MIN_RNR_TIMER 32768 (mlx5_ib_modify_dct).
        assert_eq!(mask.0, 1 | 128 | 256 | 32768);
        assert_eq!(attr.qp_state, ibv_qp_state::IBV_QPS_RTR);
        assert_eq!(
            (attr.path_mtu, attr.min_rnr_timer),
            (ibv_mtu::IBV_MTU_1024, 12)
        );
        assert_eq!((attr.ah_attr.is_global, attr.ah_attr.port_num), (1, 1));
        let grh = attr.ah_attr.grh;
        assert_eq!(
            (grh.sgid_index, grh.hop_limit, grh.traffic_class),
            (3, 64, 0x60)
        );
        assert_eq!((grh.flow_label, attr.ah_attr.sl), (0x12345, 4));
        let (attr, _) = qp_attr(&t, &IB).unwrap();
        assert_eq!((attr.ah_attr.is_global, attr.ah_attr.port_num), (0, 2));
        assert_eq!((attr.ah_attr.grh.flow_label, attr.ah_attr.sl), (0, 4));
        assert_eq!(attr.path_mtu, ibv_mtu::IBV_MTU_2048);
    }

    #[test]
    fn address_handle_attributes_carry_the_grh_only_when_global() {
        let lid = AhAttr {
            port: 2,
            dlid: 0x33,
            sl: 5,
            src_path_bits: 3,
            grh: None,
        };
        let a = ah_attr(&lid);
        assert_eq!(
            (
                a.port_num,
                a.dlid,
                a.sl,
                a.src_path_bits,
                a.is_global,
                a.static_rate
            ),
            (2, 0x33, 5, 3, 0, 0)
        );
        let g = crate::types::GlobalRoute {
            dgid: remote().gid,
            flow_label: 0x12345,
            sgid_index: 3,
            hop_limit: 64,
            traffic_class: 0x60,
        };
        let a = ah_attr(&AhAttr {
            grh: Some(g),
            ..lid
        });
        assert_eq!(a.is_global, 1);
        // SAFETY: reading the bytes of a union of plain integers.
        assert_eq!(unsafe { a.grh.dgid.raw }, remote().gid);
        assert_eq!(
            (
                a.grh.flow_label,
                a.grh.sgid_index,
                a.grh.hop_limit,
                a.grh.traffic_class
            ),
            (0x12345, 3, 64, 0x60)
        );
    }

    #[test]
    fn sqe_to_rts_names_the_current_state() {
        let (attr, mask) = qp_attr(&Transition::SqeToRts, &IB).unwrap();
        // STATE 1 | CUR_STATE 2.
        assert_eq!(mask.0, 1 | 2);
        assert_eq!(
            (attr.qp_state, attr.cur_qp_state),
            (ibv_qp_state::IBV_QPS_RTS, ibv_qp_state::IBV_QPS_SQE)
        );
    }

    #[test]
    fn err_and_reset_set_only_the_state() {
        for (t, state) in [
            (Transition::Err, ibv_qp_state::IBV_QPS_ERR),
            (Transition::Reset, ibv_qp_state::IBV_QPS_RESET),
        ] {
            let (attr, mask) = qp_attr(&t, &ROCE).unwrap();
            assert_eq!((mask.0, attr.qp_state), (1, state));
        }
    }

    #[test]
    fn the_psn_query_asks_for_both_sequence_numbers_only() {
        // IBV_QP_RQ_PSN 4096, IBV_QP_SQ_PSN 65536 (verbs.h).
        assert_eq!(PSN_QUERY.0, 4096 | 65536);
    }

    #[test]
    fn mtus_map_both_ways_and_odd_ones_are_refused() {
        for bytes in [256, 512, 1024, 2048, 4096] {
            assert_eq!(mtu_bytes(ibv_mtu_of(bytes).unwrap()), bytes);
        }
        assert!(matches!(ibv_mtu_of(1500), Err(Error::InvalidArgument(_))));
        assert_eq!(mtu_bytes(0), 0);
        assert_eq!(mtu_bytes(6), 0);
    }
}
