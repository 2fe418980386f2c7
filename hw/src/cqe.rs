//! CQE encoding (prm-facts §7.2–§7.4): `mlx5_cqe64` and `mlx5_err_cqe`.

/// Error syndromes (`mlx5_err_cqe.syndrome`).
pub(crate) mod synd {
    pub(crate) const LOCAL_LENGTH_ERR: u8 = 0x01;
    pub(crate) const LOCAL_QP_OP_ERR: u8 = 0x02;
    pub(crate) const LOCAL_PROT_ERR: u8 = 0x04;
    pub(crate) const WR_FLUSH_ERR: u8 = 0x05;
    pub(crate) const LOCAL_ACCESS_ERR: u8 = 0x11;
    pub(crate) const REMOTE_INVAL_REQ_ERR: u8 = 0x12;
    pub(crate) const REMOTE_ACCESS_ERR: u8 = 0x13;
    pub(crate) const REMOTE_OP_ERR: u8 = 0x14;
    pub(crate) const TRANSPORT_RETRY_EXC_ERR: u8 = 0x15;
    pub(crate) const RNR_RETRY_EXC_ERR: u8 = 0x16;
    pub(crate) const REMOTE_ABORTED_ERR: u8 = 0x22;
}

/// `byte_cnt` of every requester CQE but READ's. Nothing public pins what ConnectX writes
/// there (rdma-core's `handle_good_req` reads it only for RDMA READ and hard-codes 8 for
/// CS/FA), so the model writes a value no message length can have (above 2^31): a driver
/// that reads it fails its tests.
pub(crate) const REQ_BYTE_CNT_POISON: u32 = 0x8bad_f00d;

/// The vendor syndrome (`vendor_err_synd`, byte 54) mlx5 hardware reports with `syndrome`,
/// where one has been seen in public logs of ConnectX-4..7 adapters (kernel `mlx5_poll_one`
/// messages, UCX `ib_mlx5_log` lines, `ibv_wc.vendor_err` dumps); 0 where none is known.
/// The hardware value also depends on the exact cause (LOCAL_PROT_ERR shows 0x51 and 0x52),
/// so drivers must not rely on it: it is for people reading error reports.
fn vendor_syndrome(syndrome: u8) -> u8 {
    match syndrome {
        synd::LOCAL_PROT_ERR => 0x52,
        synd::WR_FLUSH_ERR => 0xf9,
        synd::REMOTE_INVAL_REQ_ERR => 0x8a,
        synd::REMOTE_ACCESS_ERR => 0x88,
        synd::REMOTE_OP_ERR => 0x89,
        synd::TRANSPORT_RETRY_EXC_ERR => 0x81,
        // The one use of REMOTE_ABORTED_ERR the model makes: an SRQ receive whose buffer
        // faulted (`MLX5_CQE_VENDOR_SYNDROME_ODP_PFAULT`, rdma-core mlx5dv.h).
        synd::REMOTE_ABORTED_ERR => 0x93,
        _ => 0,
    }
}

/// `op_own` bit 1: the solicited-event flag of a responder CQE.
pub(crate) const CQE_SE: u8 = 0x02;
/// `l4_l3_hdr_type` bit 0: the frame carried a VLAN tag (the kernel's `handle_responder`:
/// `vlan_present = cqe->l4_l3_hdr_type & 0x1`).
const CQE_VLAN_PRESENT: u8 = 0x01;

/// Received data carried in the CQE (scatter to CQE; prm-facts §7.2, §7.5): with 64-byte
/// CQEs up to 32 bytes in bytes 0..32 of the `cqe64` (format 1, `MLX5_INLINE_SCATTER_32`),
/// with 128-byte CQEs up to 64 bytes in the 64 bytes before it (format 2,
/// `MLX5_INLINE_SCATTER_64`); rdma-core's `handle_responder` reads them there.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Scattered {
    /// 64 bytes (format 2) or the first 32 (format 1); the bytes past the payload are 0.
    pub(crate) data: [u8; 64],
    /// Format 2: the data sits in the first half of a 128-byte CQE.
    pub(crate) wide: bool,
}

impl Scattered {
    /// `op_own` format bits 3..2: 1 or 2.
    pub(crate) fn format_bits(&self) -> u8 {
        if self.wide {
            2 << 2
        } else {
            1 << 2
        }
    }
}

/// CQE opcodes (`op_own >> 4`).
pub(crate) mod cqe_op {
    pub(crate) const REQ: u8 = 0;
    pub(crate) const RESP_WR_IMM: u8 = 1;
    pub(crate) const RESP_SEND: u8 = 2;
    pub(crate) const RESP_SEND_IMM: u8 = 3;
    pub(crate) const RESP_SEND_INV: u8 = 4;
    pub(crate) const REQ_ERR: u8 = 13;
    pub(crate) const RESP_ERR: u8 = 14;
}

/// The fields of one completion; the owner bit is added when it is written.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Cqe {
    /// CQE opcode (`cqe_op`).
    pub(crate) opcode: u8,
    /// Local QP number.
    pub(crate) qpn: u32,
    /// Send opcode (requester CQEs).
    pub(crate) send_opcode: u8,
    pub(crate) wqe_counter: u16,
    pub(crate) byte_cnt: u32,
    /// Raw immediate or invalidated rkey, as on the wire.
    pub(crate) imm: [u8; 4],
    /// Source QP (responder).
    pub(crate) src_qpn: u32,
    /// `flags_rqpn` bits 31..24 (UD responder: GRH placement, SL).
    pub(crate) rqpn_flags: u8,
    /// Source LID (responder).
    pub(crate) slid: u16,
    pub(crate) srqn: u32,
    /// Solicited event (responder).
    pub(crate) se: bool,
    /// Error syndrome (error CQEs only).
    pub(crate) syndrome: u8,
    /// Received data carried in the CQE (successful responder CQEs only).
    pub(crate) scattered: Option<Scattered>,
    /// A RoCE receive's VLAN tag (PCP << 13 | VLAN id): `vlan_info` (bytes 30..32) and the
    /// VLAN-present bit 0 of `l4_l3_hdr_type` (byte 29), as the kernel's
    /// `handle_responder` reads them.
    pub(crate) vlan_info: Option<u16>,
    /// The fields of an Ethernet receive CQE (a raw packet QP's or a work queue's).
    pub(crate) eth: Option<EthCqe>,
}

/// The fields only an Ethernet receive CQE has (prm-facts §7.2; the kernel's `struct
/// mlx5_cqe64`, DPDK's `struct mlx5_cqe`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct EthCqe {
    /// `sop_drop_qpn` bits 23..0: the steering rule's flow tag (rdma-core
    /// `mlx5_cq_read_flow_tag`: `sop_drop_qpn & MLX5_FLOW_TAG_MASK`), in place of the QPN.
    pub(crate) flow_tag: u32,
    /// `hds_ip_ext` (byte 28): `MLX5_CQE_L2_OK` 1, `_L3_OK` 2, `_L4_OK` 4.
    pub(crate) hds_ip_ext: u8,
    /// `l4_l3_hdr_type` (byte 29) bits 6..2: the L4 type (bits 6..4, the kernel's
    /// `CQE_L4_HDR_TYPE_*`) and the L3 type (bits 3..2, `MLX5_CQE_L3_HDR_TYPE_*`); bit 0
    /// comes from `Cqe::vlan_info`.
    pub(crate) hdr_type: u8,
    /// `rss_hash_result` (bytes 12..16) and `rss_hash_type` (byte 16).
    pub(crate) rss: (u32, u8),
    /// A striding queue's `wqe_id` (bytes 2..4): the WQE's 16-bit counter.
    pub(crate) wqe_id: u16,
}

impl EthCqe {
    /// Write these fields over the successful CQE `b` (out of line: the RC path's
    /// `Cqe::encode` keeps its code as it was).
    #[cold]
    #[inline(never)]
    fn write(&self, b: &mut [u8; 64]) {
        b[2..4].copy_from_slice(&self.wqe_id.to_be_bytes());
        b[12..16].copy_from_slice(&self.rss.0.to_be_bytes());
        b[16] = self.rss.1;
        b[28] = self.hds_ip_ext;
        b[29] |= self.hdr_type;
        b[56..60].copy_from_slice(&(self.flow_tag & 0xff_ffff).to_be_bytes());
    }
}

impl Cqe {
    /// A requester error (or flush) CQE for the WQE at BB counter `wqe_counter`.
    pub(crate) fn req_err(qpn: u32, send_opcode: u8, wqe_counter: u16, syndrome: u8) -> Cqe {
        Cqe {
            opcode: cqe_op::REQ_ERR,
            qpn,
            send_opcode,
            wqe_counter,
            syndrome,
            ..Cqe::default()
        }
    }

    /// A responder error (or flush) CQE for receive `wqe_counter`.
    pub(crate) fn resp_err(qpn: u32, wqe_counter: u16, srqn: u32, syndrome: u8) -> Cqe {
        Cqe {
            opcode: cqe_op::RESP_ERR,
            qpn,
            wqe_counter,
            srqn,
            syndrome,
            ..Cqe::default()
        }
    }

    pub(crate) fn is_error(&self) -> bool {
        self.opcode == cqe_op::REQ_ERR || self.opcode == cqe_op::RESP_ERR
    }

    /// The 64 bytes of the entry for ownership value `owner`, written at device clock
    /// `timestamp` (bytes 48..56 of a successful CQE; an error CQE has no timestamp field:
    /// `mlx5_err_cqe` keeps its syndromes there).
    pub(crate) fn encode(&self, owner: bool, timestamp: u64) -> [u8; 64] {
        let mut b = [0u8; 64];
        if self.is_error() {
            b[32..36].copy_from_slice(&self.srqn.to_be_bytes());
            b[54] = vendor_syndrome(self.syndrome);
            b[55] = self.syndrome;
            let w = u32::from(self.send_opcode) << 24 | (self.qpn & 0xff_ffff);
            b[56..60].copy_from_slice(&w.to_be_bytes());
        } else {
            // slid and flags_rqpn: defined for UD only (0 on the model's RC QPs).
            b[22..24].copy_from_slice(&self.slid.to_be_bytes());
            let rqpn = u32::from(self.rqpn_flags) << 24 | (self.src_qpn & 0xff_ffff);
            b[24..28].copy_from_slice(&rqpn.to_be_bytes());
            if let Some(v) = self.vlan_info {
                b[29] = CQE_VLAN_PRESENT;
                b[30..32].copy_from_slice(&v.to_be_bytes());
            }
            b[32..36].copy_from_slice(&self.srqn.to_be_bytes());
            b[36..40].copy_from_slice(&self.imm);
            b[44..48].copy_from_slice(&self.byte_cnt.to_be_bytes());
            b[48..56].copy_from_slice(&timestamp.to_be_bytes());
            let w = u32::from(self.send_opcode) << 24 | (self.qpn & 0xff_ffff);
            b[56..60].copy_from_slice(&w.to_be_bytes());
            if let Some(e) = &self.eth {
                e.write(&mut b);
            }
        }
        b[60..62].copy_from_slice(&self.wqe_counter.to_be_bytes());
        b[63] = self.opcode << 4 | if self.se { CQE_SE } else { 0 } | u8::from(owner);
        if let Some(scattered) = &self.scattered {
            // Format 1: the data replaces bytes 0..32 (the UD-only fields among them).
            if !scattered.wide {
                b[..32].copy_from_slice(&scattered.data[..32]);
            }
            b[63] |= scattered.format_bits();
        }
        b
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_cqe_layout() {
        let c = Cqe {
            opcode: cqe_op::REQ_ERR,
            qpn: 0x123456,
            send_opcode: 0x0a,
            wqe_counter: 0xbeef,
            syndrome: synd::WR_FLUSH_ERR,
            ..Cqe::default()
        };
        let b = c.encode(true, 0x1122_3344_5566_7788);
        assert_eq!(&b[48..54], &[0; 6], "no timestamp in an error CQE");
        assert_eq!((b[54], b[55]), (0xf9, 0x05));
        assert_eq!(&b[56..60], &[0x0a, 0x12, 0x34, 0x56]);
        assert_eq!(&b[60..62], &[0xbe, 0xef]);
        assert_eq!(b[63], 0xd1);
    }

    /// A RoCE receive on a VLAN: `l4_l3_hdr_type` (byte 29) bit 0 and `vlan_info` (bytes
    /// 30..32, PCP in 15..13, VLAN id in 11..0), the offsets of `struct mlx5_cqe64`
    /// (`hds_ip_ext` 28, `l4_hdr_type_etc` 29, `vlan_info` 30); nothing there without one.
    #[test]
    fn vlan_of_a_roce_receive() {
        let c = Cqe {
            opcode: cqe_op::RESP_SEND,
            rqpn_flags: 0x12,
            src_qpn: 0x42,
            vlan_info: Some(5 << 13 | 0x123),
            ..Cqe::default()
        };
        let b = c.encode(false, 0);
        assert_eq!(&b[24..32], &[0x12, 0, 0, 0x42, 0, 0x01, 0xa1, 0x23]);
        let b = Cqe {
            vlan_info: None,
            ..c
        }
        .encode(false, 0);
        assert_eq!(&b[28..32], &[0; 4]);
    }

    /// Scatter to CQE: format 1 (`MLX5_INLINE_SCATTER_32`) puts the data in bytes 0..32,
    /// format 2 (`MLX5_INLINE_SCATTER_64`) leaves the `cqe64` and sets only the format; the
    /// format goes in `op_own` bits 3..2 next to the opcode, SE and owner.
    #[test]
    fn scattered_receives_set_their_format() {
        let mut data = [0u8; 64];
        data[..4].copy_from_slice(&[1, 2, 3, 4]);
        let c = Cqe {
            opcode: cqe_op::RESP_SEND,
            se: true,
            byte_cnt: 4,
            ..Cqe::default()
        };
        for (wide, op_own, first) in [(false, 0x27, [1, 2, 3, 4]), (true, 0x2b, [0; 4])] {
            let scattered = Some(Scattered { data, wide });
            let b = Cqe { scattered, ..c }.encode(true, 0);
            assert_eq!((b[63], &b[..4]), (op_own, &first[..]), "wide {wide}");
        }
    }

    /// The vendor syndrome of an SRQ receive whose buffer faulted: 0x93
    /// (`MLX5_CQE_VENDOR_SYNDROME_ODP_PFAULT`) with REMOTE_ABORTED_ERR (0x22).
    #[test]
    fn error_cqes_name_their_qp_and_the_odp_fault_its_vendor_syndrome() {
        let b = Cqe::resp_err(0x42, 3, 0, synd::REMOTE_ABORTED_ERR).encode(false, 0);
        assert_eq!((b[54], b[55], b[63]), (0x93, 0x22, 0xe0));
        assert_eq!(&b[56..62], &[0, 0, 0, 0x42, 0, 3]);
        let b = Cqe::req_err(0x43, 0x0a, 5, synd::WR_FLUSH_ERR).encode(false, 0);
        assert_eq!(&b[56..62], &[0x0a, 0, 0, 0x43, 0, 5]);
    }
}
