//! Golden tests: every layout, constant and encoder of `mlx5_direct::prm` against rdma-core's
//! own `<infiniband/mlx5dv.h>` (and `enum ibv_wc_status` of `verbs.h`), byte for byte.
//!
//! The reference values come from the `mlx5-golden` shim (`tests/golden-shim`), which compiles
//! a small C file against the installed header. Without the header (no libibverbs-dev) these
//! tests are ignored; CI sets `MLX5_DIRECT_REQUIRE_GOLDEN=1`, which turns a missing header
//! into a build error instead.
//!
//! Long: one comparison, the whole of `prm` against the one header through the one shim: the
//! layout table (`models`), the opcode, syndrome and status tables and the encoders all read
//! the header's values through the same lookups (`c`, `constants_with_prefix`), and a second
//! test file would need them in `tests/common`, which builds the model's rigs.

use core::mem::{offset_of, size_of};
use std::collections::{BTreeMap, BTreeSet};

use mlx5_direct::prm::*;
use mlx5_golden as golden;
use proptest::prelude::*;

/// The value of a header constant.
fn c(name: &str) -> i64 {
    golden::constant(name)
}

/// The header constants whose names start with `prefix`, by name.
fn constants_with_prefix(prefix: &str) -> BTreeMap<&'static str, i64> {
    golden::constants()
        .into_iter()
        .filter(|v| v.name.starts_with(prefix))
        .map(|v| (v.name, v.value))
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Layouts
// ---------------------------------------------------------------------------------------------

/// The size of the field `F` of some struct, given a projection to it (no value needed).
fn size_of_field<T, F>(_: fn(&T) -> &F) -> usize {
    size_of::<F>()
}

/// The byte range `start..end` one field, or a run of consecutive fields, of ours occupies.
macro_rules! span {
    ($ty:ty, $field:ident) => {
        span!($ty, $field, $field)
    };
    ($ty:ty, $first:ident, $last:ident) => {
        (
            offset_of!($ty, $first),
            offset_of!($ty, $last) + size_of_field(|s: &$ty| &s.$last),
        )
    };
}

/// Where a header field must sit in our layout.
#[derive(Clone, Copy, Debug)]
enum Expect {
    /// Exactly on these bytes of ours.
    Exact((usize, usize)),
    /// Inside these bytes of ours: a union alternative we keep as one opaque field.
    Within((usize, usize)),
}
use Expect::{Exact, Within};

/// One header struct and where each of its fields sits in our layout.
struct Model {
    strct: &'static str,
    size: usize,
    fields: Vec<(&'static str, Expect)>,
}

fn models() -> Vec<Model> {
    vec![
        Model {
            strct: "mlx5_wqe_ctrl_seg",
            size: size_of::<CtrlSeg>(),
            fields: vec![
                ("opmod_idx_opcode", Exact(span!(CtrlSeg, opmod_idx_opcode))),
                ("qpn_ds", Exact(span!(CtrlSeg, qpn_ds))),
                ("signature", Exact(span!(CtrlSeg, signature))),
                (
                    "dci_stream_channel_id",
                    Exact(span!(CtrlSeg, dci_stream_channel_id)),
                ),
                ("fm_ce_se", Exact(span!(CtrlSeg, fm_ce_se))),
                ("imm", Exact(span!(CtrlSeg, imm))),
            ],
        },
        Model {
            strct: "mlx5_wqe_raddr_seg",
            size: size_of::<RaddrSeg>(),
            fields: vec![
                ("raddr", Exact(span!(RaddrSeg, raddr))),
                ("rkey", Exact(span!(RaddrSeg, rkey))),
                ("reserved", Exact(span!(RaddrSeg, reserved))),
            ],
        },
        Model {
            strct: "mlx5_wqe_data_seg",
            size: size_of::<DataSeg>(),
            fields: vec![
                ("byte_count", Exact(span!(DataSeg, byte_count))),
                ("lkey", Exact(span!(DataSeg, lkey))),
                ("addr", Exact(span!(DataSeg, addr))),
            ],
        },
        Model {
            strct: "mlx5_wqe_inl_data_seg",
            size: size_of::<InlineSeg>(),
            fields: vec![("byte_count", Exact(span!(InlineSeg, byte_count)))],
        },
        Model {
            strct: "mlx5_wqe_atomic_seg",
            size: size_of::<AtomicSeg>(),
            fields: vec![
                ("swap_add", Exact(span!(AtomicSeg, swap_add))),
                ("compare", Exact(span!(AtomicSeg, compare))),
            ],
        },
        Model {
            strct: "mlx5_wqe_av",
            size: size_of::<Av>(),
            fields: vec![
                ("key", Exact(span!(Av, key))),
                // The qkey / dc_key union is one `Be64` in ours; where `new` and `set_ud` put
                // a qkey is checked against `mlx5dv_set_dgram_seg` below.
                ("key.qkey.qkey", Within(span!(Av, key))),
                ("key.qkey.reserved", Within(span!(Av, key))),
                ("key.dc_key", Exact(span!(Av, key))),
                ("dqp_dct", Exact(span!(Av, dqp_dct))),
                ("stat_rate_sl", Exact(span!(Av, stat_rate_sl))),
                ("fl_mlid", Exact(span!(Av, fl_mlid))),
                ("rlid", Exact(span!(Av, rlid))),
                ("reserved0", Exact(span!(Av, reserved0))),
                ("rmac", Exact(span!(Av, rmac))),
                ("tclass", Exact(span!(Av, tclass))),
                ("hop_limit", Exact(span!(Av, hop_limit))),
                ("grh_gid_fl", Exact(span!(Av, grh_gid_fl))),
                ("rgid", Exact(span!(Av, rgid))),
            ],
        },
        Model {
            strct: "mlx5_wqe_datagram_seg",
            size: size_of::<Av>(),
            fields: vec![("av", Exact(span!(Av, key, rgid)))],
        },
        Model {
            strct: "mlx5_wqe_srq_next_seg",
            size: size_of::<SrqNextSeg>(),
            fields: vec![
                ("rsvd0", Exact(span!(SrqNextSeg, reserved0))),
                ("next_wqe_index", Exact(span!(SrqNextSeg, next_wqe_index))),
                ("signature", Exact(span!(SrqNextSeg, signature))),
                ("rsvd1", Exact(span!(SrqNextSeg, reserved1))),
            ],
        },
        Model {
            strct: "mlx5_cqe64",
            size: size_of::<Cqe64>(),
            fields: vec![
                // Bytes the v44 header leaves reserved are named (Ethernet) fields in ours.
                (
                    "rsvd0",
                    Exact(span!(Cqe64, tls_outer_l3_tunneled, reserved0)),
                ),
                ("wqe_id", Exact(span!(Cqe64, wqe_id))),
                ("rsvd4", Exact(span!(Cqe64, lro, rss_hash_type))),
                ("ml_path", Exact(span!(Cqe64, ml_path))),
                ("rsvd20", Exact(span!(Cqe64, reserved1, checksum))),
                ("slid", Exact(span!(Cqe64, slid))),
                ("flags_rqpn", Exact(span!(Cqe64, flags_rqpn))),
                ("hds_ip_ext", Exact(span!(Cqe64, hds_ip_ext))),
                ("l4_hdr_type_etc", Exact(span!(Cqe64, l4_l3_hdr_type))),
                ("vlan_info", Exact(span!(Cqe64, vlan_info))),
                // Tag-matching views of the first bytes, which ours does not model.
                // `struct mlx5_tm_cqe` is 18 bytes of fields padded to 20.
                (
                    "tm_cqe",
                    Exact(span!(Cqe64, tls_outer_l3_tunneled, reserved1)),
                ),
                (
                    "tm_cqe.success",
                    Exact(span!(Cqe64, tls_outer_l3_tunneled, wqe_id)),
                ),
                ("tm_cqe.hw_phase_cnt", Within(span!(Cqe64, lro))),
                ("tm_cqe.rsvd0", Within(span!(Cqe64, lro, ml_path))),
                (
                    "tmh",
                    Exact(span!(Cqe64, tls_outer_l3_tunneled, rss_hash_result)),
                ),
                ("tmh.opcode", Exact(span!(Cqe64, tls_outer_l3_tunneled))),
                ("tmh.reserved", Exact(span!(Cqe64, reserved0, wqe_id))),
                ("tmh.app_ctx", Within(span!(Cqe64, lro))),
                ("tmh.tag", Within(span!(Cqe64, lro, rss_hash_result))),
                ("srqn_uidx", Exact(span!(Cqe64, srqn_uidx))),
                ("imm_inval_pkey", Exact(span!(Cqe64, imm_inval_pkey))),
                ("app", Exact(span!(Cqe64, app))),
                ("app_op", Exact(span!(Cqe64, app_op))),
                ("app_info", Exact(span!(Cqe64, app_info))),
                ("byte_cnt", Exact(span!(Cqe64, byte_cnt))),
                ("timestamp", Exact(span!(Cqe64, timestamp))),
                ("sop_drop_qpn", Exact(span!(Cqe64, sop_drop_qpn))),
                ("wqe_counter", Exact(span!(Cqe64, wqe_counter))),
                ("signature", Exact(span!(Cqe64, signature))),
                ("op_own", Exact(span!(Cqe64, op_own))),
            ],
        },
        Model {
            strct: "mlx5_err_cqe",
            size: size_of::<ErrCqe>(),
            fields: vec![
                ("rsvd0", Exact(span!(ErrCqe, reserved0))),
                ("srqn", Exact(span!(ErrCqe, srqn))),
                // v44 reserves bytes 36..54; newer rdma-core names the last two
                // hw_err_synd / hw_synd_type, as ours does.
                ("rsvd1", Exact(span!(ErrCqe, reserved1, hw_synd_type))),
                ("vendor_err_synd", Exact(span!(ErrCqe, vendor_err_synd))),
                ("syndrome", Exact(span!(ErrCqe, syndrome))),
                ("s_wqe_opcode_qpn", Exact(span!(ErrCqe, s_wqe_opcode_qpn))),
                ("wqe_counter", Exact(span!(ErrCqe, wqe_counter))),
                ("signature", Exact(span!(ErrCqe, signature))),
                ("op_own", Exact(span!(ErrCqe, op_own))),
            ],
        },
        // `struct mlx5_mini_cqe8` and the masked-atomic segments are not in the v44 header;
        // their sizes are asserted at compile time in `src/prm`.
    ]
}

#[test]
#[cfg_attr(
    not(rdma_headers),
    ignore = "install libibverbs-dev to compare with rdma-core"
)]
fn struct_sizes_match_the_header() {
    let structs = golden::structs();
    let models = models();
    let names = |it: &mut dyn Iterator<Item = &'static str>| it.collect::<BTreeSet<_>>();
    assert_eq!(
        names(&mut structs.iter().map(|s| s.strct)),
        names(&mut models.iter().map(|m| m.strct)),
        "every header struct has a model and every model a header struct"
    );
    for s in &structs {
        let model = models.iter().find(|m| m.strct == s.strct).unwrap();
        assert_eq!(model.size, s.size, "sizeof(struct {})", s.strct);
    }
}

#[test]
#[cfg_attr(
    not(rdma_headers),
    ignore = "install libibverbs-dev to compare with rdma-core"
)]
fn every_header_field_sits_on_our_bytes() {
    let fields = golden::fields();
    for model in models() {
        assert_model_fields(&model, &fields);
    }
}

/// Every field the header gives `model`'s struct sits where the model says, and the model
/// names no other.
fn assert_model_fields(model: &Model, fields: &[golden::Field]) {
    let header: Vec<_> = fields.iter().filter(|f| f.strct == model.strct).collect();
    let header_names: BTreeSet<_> = header.iter().map(|f| f.field).collect();
    let model_names: BTreeSet<_> = model.fields.iter().map(|(name, _)| *name).collect();
    assert_eq!(
        header_names, model_names,
        "fields of struct {}",
        model.strct
    );
    for f in header {
        let (_, expect) = model.fields.iter().find(|(n, _)| *n == f.field).unwrap();
        let theirs = (f.offset, f.offset + f.size);
        match *expect {
            Exact(ours) => assert_eq!(theirs, ours, "{}.{}", f.strct, f.field),
            Within((start, end)) => assert!(
                start <= theirs.0 && theirs.1 <= end,
                "{}.{} at {theirs:?} is not inside {:?}",
                f.strct,
                f.field,
                (start, end)
            ),
        }
    }
}

/// The shim's field table is complete: the primary fields of each struct cover it without
/// gap or overlap (so no header field can be missing from the comparison above).
#[test]
#[cfg_attr(
    not(rdma_headers),
    ignore = "install libibverbs-dev to compare with rdma-core"
)]
fn the_primary_header_fields_tile_each_struct() {
    let fields = golden::fields();
    for s in golden::structs() {
        assert_eq!(golden::tiling_error(&fields, &s, false), None);
    }
}

// ---------------------------------------------------------------------------------------------
// Constants
// ---------------------------------------------------------------------------------------------

/// Each of our send opcodes and its `MLX5_OPCODE_*` name, in `Opcode::ALL` order.
const OPCODE_NAMES: [(Opcode, &str); 27] = [
    (Opcode::Nop, "NOP"),
    (Opcode::SendInval, "SEND_INVAL"),
    (Opcode::RdmaWrite, "RDMA_WRITE"),
    (Opcode::RdmaWriteImm, "RDMA_WRITE_IMM"),
    (Opcode::Send, "SEND"),
    (Opcode::SendImm, "SEND_IMM"),
    (Opcode::Tso, "TSO"),
    (Opcode::RdmaRead, "RDMA_READ"),
    (Opcode::AtomicCs, "ATOMIC_CS"),
    (Opcode::AtomicFa, "ATOMIC_FA"),
    (Opcode::AtomicMaskedCs, "ATOMIC_MASKED_CS"),
    (Opcode::AtomicMaskedFa, "ATOMIC_MASKED_FA"),
    (Opcode::BindMw, "BIND_MW"),
    (Opcode::Fmr, "FMR"),
    (Opcode::LocalInval, "LOCAL_INVAL"),
    (Opcode::ConfigCmd, "CONFIG_CMD"),
    (Opcode::SetPsv, "SET_PSV"),
    (Opcode::GetPsv, "GET_PSV"),
    (Opcode::CheckPsv, "CHECK_PSV"),
    (Opcode::Umr, "UMR"),
    (Opcode::RgetPsv, "RGET_PSV"),
    (Opcode::RcheckPsv, "RCHECK_PSV"),
    (Opcode::TagMatching, "TAG_MATCHING"),
    (Opcode::EnhancedMpsw, "ENHANCED_MPSW"),
    (Opcode::FlowTblAccess, "FLOW_TBL_ACCESS"),
    (Opcode::AccessAso, "ACCESS_ASO"),
    (Opcode::Mmo, "MMO"),
];

/// Our opcodes that rdma-core's header does not define (kernel `device.h` / DPDK names).
const OPCODES_NOT_IN_MLX5DV: [&str; 7] = [
    "BIND_MW",
    "GET_PSV",
    "CHECK_PSV",
    "RGET_PSV",
    "RCHECK_PSV",
    "ENHANCED_MPSW",
    "ACCESS_ASO",
];

#[test]
#[cfg_attr(
    not(rdma_headers),
    ignore = "install libibverbs-dev to compare with rdma-core"
)]
fn send_opcodes_match_the_header() {
    assert_eq!(OPCODE_NAMES.map(|(op, _)| op), Opcode::ALL);
    let header = constants_with_prefix("MLX5_OPCODE_");
    for (name, value) in &header {
        let short = &name["MLX5_OPCODE_".len()..];
        let (op, _) = OPCODE_NAMES
            .iter()
            .find(|(_, n)| *n == short)
            .unwrap_or_else(|| panic!("{name} has no Opcode"));
        assert_eq!(i64::from(*op as u8), *value, "{name}");
        assert_eq!(Opcode::from_u8(*op as u8), Some(*op));
    }
    for (op, short) in OPCODE_NAMES {
        let in_header = header.contains_key(format!("MLX5_OPCODE_{short}").as_str());
        assert_eq!(
            !in_header,
            OPCODES_NOT_IN_MLX5DV.contains(&short),
            "{op:?}: in mlx5dv.h exactly when not listed as kernel-only"
        );
    }
}

/// Each CQE opcode and its `MLX5_CQE_*` name.
const CQE_OPCODE_NAMES: [(CqeOpcode, &str); 11] = [
    (CqeOpcode::Req, "MLX5_CQE_REQ"),
    (CqeOpcode::RespWrImm, "MLX5_CQE_RESP_WR_IMM"),
    (CqeOpcode::RespSend, "MLX5_CQE_RESP_SEND"),
    (CqeOpcode::RespSendImm, "MLX5_CQE_RESP_SEND_IMM"),
    (CqeOpcode::RespSendInv, "MLX5_CQE_RESP_SEND_INV"),
    (CqeOpcode::ResizeCq, "MLX5_CQE_RESIZE_CQ"),
    (CqeOpcode::NoPacket, "MLX5_CQE_NO_PACKET"),
    (CqeOpcode::SigErr, "MLX5_CQE_SIG_ERR"),
    (CqeOpcode::ReqErr, "MLX5_CQE_REQ_ERR"),
    (CqeOpcode::RespErr, "MLX5_CQE_RESP_ERR"),
    (CqeOpcode::Invalid, "MLX5_CQE_INVALID"),
];

/// The Ethernet `MLX5_CQE_*` constants and ours: the checksum-OK bits of `hds_ip_ext` and
/// the L3 header types of `l4_hdr_type_etc` (bits 3..2, rdma-core `cq.c` `get_csum_ok`).
fn cqe_eth_constants() -> [(&'static str, i64); 6] {
    [
        ("MLX5_CQE_L2_OK", CQE_L2_OK.into()),
        ("MLX5_CQE_L3_OK", CQE_L3_OK.into()),
        ("MLX5_CQE_L4_OK", CQE_L4_OK.into()),
        ("MLX5_CQE_L3_HDR_TYPE_NONE", L3Type::None as i64),
        ("MLX5_CQE_L3_HDR_TYPE_IPV6", L3Type::Ipv6 as i64),
        ("MLX5_CQE_L3_HDR_TYPE_IPV4", L3Type::Ipv4 as i64),
    ]
}

/// `MLX5_CQE_*` constants the driver does not model: the ODP page-fault vendor syndrome.
const CQE_CONSTANTS_NOT_MODELLED: [&str; 1] = ["MLX5_CQE_VENDOR_SYNDROME_ODP_PFAULT"];

#[test]
#[cfg_attr(
    not(rdma_headers),
    ignore = "install libibverbs-dev to compare with rdma-core"
)]
fn cqe_opcodes_and_op_own_constants_match_the_header() {
    for (op, name) in CQE_OPCODE_NAMES {
        assert_eq!(i64::from(op as u8), c(name), "{name}");
    }
    for (name, ours) in cqe_eth_constants() {
        assert_eq!(ours, c(name), "{name}");
    }
    let header_opcodes: BTreeSet<i64> = CQE_OPCODE_NAMES.iter().map(|(_, n)| c(n)).collect();
    for value in 0..16u8 {
        assert_eq!(
            CqeOpcode::from_u8(value).is_some(),
            header_opcodes.contains(&i64::from(value)),
            "CQE opcode {value}"
        );
    }
    assert_eq!(
        i64::from(OP_OWN_INVALID),
        c("MLX5_CQE_INVALID") << 4,
        "a fresh CQE: opcode INVALID, owner 0"
    );
    assert_eq!(
        i64::from(OpOwn::new().with_owner(true).into_bits()),
        c("MLX5_CQE_OWNER_MASK")
    );
    // The inline-scatter constants are `op_own` bits: the format field shifted into place.
    assert_eq!(
        i64::from(
            OpOwn::new()
                .with_format(CqeFormat::InlineScatter32)
                .into_bits()
        ),
        c("MLX5_INLINE_SCATTER_32")
    );
    assert_eq!(
        i64::from(
            OpOwn::new()
                .with_format(CqeFormat::InlineScatter64)
                .into_bits()
        ),
        c("MLX5_INLINE_SCATTER_64")
    );

    // The compressed format is the next value of the same two-bit field.
    assert_eq!(
        i64::from(OP_OWN_COMPRESSED),
        c("MLX5_INLINE_SCATTER_64") + c("MLX5_INLINE_SCATTER_32")
    );

    // Every other MLX5_CQE_* constant of the header is accounted for.
    for name in constants_with_prefix("MLX5_CQE_").keys() {
        let known = CQE_OPCODE_NAMES.iter().any(|(_, n)| n == name)
            || name.starts_with("MLX5_CQE_SYNDROME_")
            || *name == "MLX5_CQE_OWNER_MASK"
            || cqe_eth_constants().iter().any(|(n, _)| n == name)
            || CQE_CONSTANTS_NOT_MODELLED.contains(name);
        assert!(
            known,
            "{name} is neither checked nor listed as not modelled"
        );
    }
}

/// rdma-core's `mlx5_handle_error_cqe` (`providers/mlx5/cq.c`): syndrome → `ibv_wc_status`.
/// Any other syndrome byte becomes `IBV_WC_GENERAL_ERR`.
const SYNDROME_TO_WC_STATUS: [(&str, &str); 13] = [
    ("LOCAL_LENGTH_ERR", "IBV_WC_LOC_LEN_ERR"),
    ("LOCAL_QP_OP_ERR", "IBV_WC_LOC_QP_OP_ERR"),
    ("LOCAL_PROT_ERR", "IBV_WC_LOC_PROT_ERR"),
    ("WR_FLUSH_ERR", "IBV_WC_WR_FLUSH_ERR"),
    ("MW_BIND_ERR", "IBV_WC_MW_BIND_ERR"),
    ("BAD_RESP_ERR", "IBV_WC_BAD_RESP_ERR"),
    ("LOCAL_ACCESS_ERR", "IBV_WC_LOC_ACCESS_ERR"),
    ("REMOTE_INVAL_REQ_ERR", "IBV_WC_REM_INV_REQ_ERR"),
    ("REMOTE_ACCESS_ERR", "IBV_WC_REM_ACCESS_ERR"),
    ("REMOTE_OP_ERR", "IBV_WC_REM_OP_ERR"),
    ("TRANSPORT_RETRY_EXC_ERR", "IBV_WC_RETRY_EXC_ERR"),
    ("RNR_RETRY_EXC_ERR", "IBV_WC_RNR_RETRY_EXC_ERR"),
    ("REMOTE_ABORTED_ERR", "IBV_WC_REM_ABORT_ERR"),
];

#[test]
#[cfg_attr(
    not(rdma_headers),
    ignore = "install libibverbs-dev to compare with rdma-core"
)]
fn syndromes_and_their_wc_status_match_rdma_core() {
    let header = constants_with_prefix("MLX5_CQE_SYNDROME_");
    assert_eq!(header.len(), Syndrome::ALL.len());
    for (name, value) in &header {
        let syndrome = Syndrome::from_u8(u8::try_from(*value).unwrap())
            .unwrap_or_else(|| panic!("{name} = {value:#x} is not a Syndrome"));
        assert_eq!(syndrome.name(), &name["MLX5_CQE_SYNDROME_".len()..]);
    }
    for syndrome in Syndrome::ALL {
        let (_, status) = SYNDROME_TO_WC_STATUS
            .iter()
            .find(|(s, _)| *s == syndrome.name())
            .unwrap();
        assert_eq!(
            i64::from(syndrome.wc_status() as u32),
            c(status),
            "{syndrome:?}"
        );
    }
    // Every syndrome byte, named or not, gives the status rdma-core reports for it.
    for byte in 0..=255u8 {
        let named = header.iter().find(|(_, v)| **v == i64::from(byte));
        let expected = match named {
            Some((name, _)) => {
                let short = &name["MLX5_CQE_SYNDROME_".len()..];
                let (_, status) = SYNDROME_TO_WC_STATUS
                    .iter()
                    .find(|(s, _)| *s == short)
                    .unwrap();
                c(status)
            }
            None => c("IBV_WC_GENERAL_ERR"),
        };
        assert_eq!(
            i64::from(WcStatus::from_syndrome(byte) as u32),
            expected,
            "syndrome {byte:#x}"
        );
    }
}

/// Each of our completion statuses and its `IBV_WC_*` name.
const WC_STATUS_NAMES: [(WcStatus, &str); 22] = [
    (WcStatus::Success, "IBV_WC_SUCCESS"),
    (WcStatus::LocLenErr, "IBV_WC_LOC_LEN_ERR"),
    (WcStatus::LocQpOpErr, "IBV_WC_LOC_QP_OP_ERR"),
    (WcStatus::LocEecOpErr, "IBV_WC_LOC_EEC_OP_ERR"),
    (WcStatus::LocProtErr, "IBV_WC_LOC_PROT_ERR"),
    (WcStatus::WrFlushErr, "IBV_WC_WR_FLUSH_ERR"),
    (WcStatus::MwBindErr, "IBV_WC_MW_BIND_ERR"),
    (WcStatus::BadRespErr, "IBV_WC_BAD_RESP_ERR"),
    (WcStatus::LocAccessErr, "IBV_WC_LOC_ACCESS_ERR"),
    (WcStatus::RemInvReqErr, "IBV_WC_REM_INV_REQ_ERR"),
    (WcStatus::RemAccessErr, "IBV_WC_REM_ACCESS_ERR"),
    (WcStatus::RemOpErr, "IBV_WC_REM_OP_ERR"),
    (WcStatus::RetryExcErr, "IBV_WC_RETRY_EXC_ERR"),
    (WcStatus::RnrRetryExcErr, "IBV_WC_RNR_RETRY_EXC_ERR"),
    (WcStatus::LocRddViolErr, "IBV_WC_LOC_RDD_VIOL_ERR"),
    (WcStatus::RemInvRdReqErr, "IBV_WC_REM_INV_RD_REQ_ERR"),
    (WcStatus::RemAbortErr, "IBV_WC_REM_ABORT_ERR"),
    (WcStatus::InvEecnErr, "IBV_WC_INV_EECN_ERR"),
    (WcStatus::InvEecStateErr, "IBV_WC_INV_EEC_STATE_ERR"),
    (WcStatus::FatalErr, "IBV_WC_FATAL_ERR"),
    (WcStatus::RespTimeoutErr, "IBV_WC_RESP_TIMEOUT_ERR"),
    (WcStatus::GeneralErr, "IBV_WC_GENERAL_ERR"),
];

/// Statuses of `verbs.h` that `WcStatus` does not have: tag-matching only.
const WC_STATUS_NOT_MODELLED: [&str; 2] = ["IBV_WC_TM_ERR", "IBV_WC_TM_RNDV_INCOMPLETE"];

#[test]
#[cfg_attr(
    not(rdma_headers),
    ignore = "install libibverbs-dev to compare with rdma-core"
)]
fn wc_statuses_match_verbs_h() {
    for (status, name) in WC_STATUS_NAMES {
        assert_eq!(i64::from(status as u32), c(name), "{name}");
    }
    for name in constants_with_prefix("IBV_WC_").keys() {
        assert!(
            WC_STATUS_NAMES.iter().any(|(_, n)| n == name) || WC_STATUS_NOT_MODELLED.contains(name),
            "{name} is neither a WcStatus nor listed as not modelled"
        );
    }
}

/// Every remaining header constant (not a send opcode, CQE or status family) against ours.
/// `MLX5_CQ_SET_CI` and `MLX5_CQ_ARM_DB` live in rdma-core's private `mlx5.h`, not in
/// `mlx5dv.h`, so there is nothing to compare `CQ_SET_CI` / `CQ_ARM_DB` with.
#[test]
#[cfg_attr(
    not(rdma_headers),
    ignore = "install libibverbs-dev to compare with rdma-core"
)]
fn every_other_header_constant_matches() {
    let families = [
        "MLX5_OPCODE_",
        "MLX5_CQE_",
        "IBV_WC_",
        "MLX5_INLINE_SCATTER_",
        "MLX5DV_CQE_RES_FORMAT_",
    ];
    let mut checked = 0;
    for v in golden::constants() {
        if families.iter().any(|f| v.name.starts_with(f)) {
            continue;
        }
        let ours: i64 = match v.name {
            "MLX5_INLINE_SEG" => INLINE_SEG.into(),
            "MLX5_INVALID_LKEY" => INVALID_LKEY.into(),
            "MLX5_EXTENDED_UD_AV" => EXTENDED_UD_AV.into(),
            "MLX5_RCV_DBR" => RCV_DBR as i64,
            "MLX5_SND_DBR" => SND_DBR as i64,
            "MLX5_CQ_DOORBELL" => CQ_DOORBELL_OFFSET as i64,
            "MLX5_CQ_DB_REQ_NOT_SOL" => CQ_DB_REQ_NOT_SOL.into(),
            "MLX5_CQ_DB_REQ_NOT" => CQ_DB_REQ_NOT.into(),
            "MLX5_SEND_WQE_BB" => SEND_WQE_BB as i64,
            "MLX5_SEND_WQE_SHIFT" => SEND_WQE_SHIFT.into(),
            "MLX5_WQE_CTRL_CQ_UPDATE" => WQE_CTRL_CQ_UPDATE.into(),
            "MLX5_WQE_CTRL_SOLICITED" => WQE_CTRL_SOLICITED.into(),
            "MLX5_WQE_CTRL_FENCE" => WQE_CTRL_FENCE.into(),
            "MLX5_WQE_CTRL_INITIATOR_SMALL_FENCE" => WQE_CTRL_INITIATOR_SMALL_FENCE.into(),
            other => panic!("header constant {other} is not compared with ours"),
        };
        assert_eq!(ours, v.value, "{}", v.name);
        checked += 1;
    }
    assert_eq!(checked, 14);
    assert_eq!(1 << SEND_WQE_SHIFT, SEND_WQE_BB);
}

#[test]
#[cfg_attr(
    not(rdma_headers),
    ignore = "install libibverbs-dev to compare with rdma-core"
)]
fn mini_cqe_formats_are_the_header_bits() {
    let ours = [
        ("MLX5DV_CQE_RES_FORMAT_HASH", MiniCqeFormat::Hash),
        ("MLX5DV_CQE_RES_FORMAT_CSUM", MiniCqeFormat::Csum),
        (
            "MLX5DV_CQE_RES_FORMAT_CSUM_STRIDX",
            MiniCqeFormat::CsumStridx,
        ),
    ];
    for (name, format) in ours {
        assert_eq!(i64::from(format.dv_bit()), c(name), "{name}");
    }
    assert_eq!(
        constants_with_prefix("MLX5DV_CQE_RES_FORMAT_").len(),
        ours.len()
    );
}

#[test]
#[cfg_attr(
    not(rdma_headers),
    ignore = "install libibverbs-dev to compare with rdma-core"
)]
fn fm_ce_se_fields_encode_the_header_flags() {
    let ce = FmCeSe::new().with_ce(CqUpdate::Always).into_bits();
    let se = FmCeSe::new().with_solicited(true).into_bits();
    let fence = FmCeSe::new().with_fm(FenceMode::SmallAndFence).into_bits();
    let small = FmCeSe::new().with_fm(FenceMode::InitiatorSmall).into_bits();
    assert_eq!(i64::from(ce), c("MLX5_WQE_CTRL_CQ_UPDATE"));
    assert_eq!(i64::from(se), c("MLX5_WQE_CTRL_SOLICITED"));
    assert_eq!(i64::from(fence), c("MLX5_WQE_CTRL_FENCE"));
    assert_eq!(i64::from(small), c("MLX5_WQE_CTRL_INITIATOR_SMALL_FENCE"));
}

// ---------------------------------------------------------------------------------------------
// Encoders and decoders against the header's inline helpers
// ---------------------------------------------------------------------------------------------

/// Our control segment for the arguments of `mlx5dv_set_ctrl_seg`, over a segment whose
/// stream-id bytes (which the helper leaves alone) were `stream`.
#[allow(
    clippy::too_many_arguments,
    reason = "the arguments of mlx5dv_set_ctrl_seg"
)]
fn our_ctrl(
    pi: u16,
    opcode: u8,
    opmod: u8,
    qpn: u32,
    fm_ce_se: u8,
    ds: u8,
    signature: u8,
    imm: [u8; 4],
    stream: [u8; 2],
) -> CtrlSeg {
    let mut seg = CtrlSeg::new(
        opcode,
        opmod,
        pi,
        qpn,
        ds,
        FmCeSe::from_bits(fm_ce_se),
        Be32::from_bytes(imm),
    );
    seg.signature = signature;
    seg.dci_stream_channel_id = stream;
    seg
}

#[test]
#[cfg_attr(
    not(rdma_headers),
    ignore = "install libibverbs-dev to compare with rdma-core"
)]
fn op_own_getters_match_the_header_for_every_byte() {
    for op_own in 0..=255u8 {
        let mut cqe = [0u8; 64];
        cqe[63] = op_own;
        let theirs = golden::cqe_bits(&cqe);
        let ours = OpOwn::from_bits(Cqe64::from_bytes(&cqe).op_own);
        assert_eq!(u8::from(ours.owner()), theirs.owner, "owner of {op_own:#x}");
        assert_eq!(u8::from(ours.se()), theirs.se, "se of {op_own:#x}");
        assert_eq!(ours.format() as u8, theirs.format, "format of {op_own:#x}");
        assert_eq!(ours.opcode(), theirs.opcode, "opcode of {op_own:#x}");
    }
}

/// Each field value rdma-core reads from a CQE, read from our `Cqe64`.
fn our_cqe64_value(cqe: &Cqe64, name: &str) -> i64 {
    match name {
        "wqe_id" => cqe.wqe_id.get().into(),
        "ml_path" => cqe.ml_path.into(),
        "slid" => cqe.slid.get().into(),
        "flags_rqpn" => cqe.flags_rqpn.get().into(),
        "hds_ip_ext" => cqe.hds_ip_ext.into(),
        "l4_hdr_type_etc" => cqe.l4_l3_hdr_type.into(),
        "vlan_info" => cqe.vlan_info.get().into(),
        "srqn_uidx" => cqe.srqn_uidx.get().into(),
        "imm_inval_pkey" => cqe.imm_inval_pkey.get().into(),
        "app" => cqe.app.into(),
        "app_op" => cqe.app_op.into(),
        "app_info" => cqe.app_info.get().into(),
        "byte_cnt" => cqe.byte_cnt.get().into(),
        // The C side stores the u64 in an int64_t: the same two's-complement bits.
        "timestamp" => cqe.timestamp.get() as i64,
        "sop_drop_qpn" => cqe.sop_drop_qpn.get().into(),
        "wqe_counter" => cqe.wqe_counter.get().into(),
        "signature" => cqe.signature.into(),
        "op_own" => cqe.op_own.into(),
        other => panic!("mlx5_cqe64.{other} is not read from our Cqe64"),
    }
}

/// Each field value rdma-core reads from an error CQE, read from our `ErrCqe`.
fn our_err_cqe_value(cqe: &ErrCqe, name: &str) -> i64 {
    match name {
        "srqn" => cqe.srqn.get().into(),
        "vendor_err_synd" => cqe.vendor_err_synd.into(),
        "syndrome" => cqe.syndrome.into(),
        "s_wqe_opcode_qpn" => cqe.s_wqe_opcode_qpn.get().into(),
        "wqe_counter" => cqe.wqe_counter.get().into(),
        "signature" => cqe.signature.into(),
        "op_own" => cqe.op_own.into(),
        other => panic!("mlx5_err_cqe.{other} is not read from our ErrCqe"),
    }
}

proptest! {
    #[test]
    #[cfg_attr(not(rdma_headers), ignore = "install libibverbs-dev to compare with rdma-core")]
    fn ctrl_seg_matches_mlx5dv_set_ctrl_seg_and_its_x86_variant(
        pi in any::<u16>(),
        opcode in any::<u8>(),
        opmod in any::<u8>(),
        qpn in 0u32..1 << 24,
        fm_ce_se in any::<u8>(),
        ds in 0u8..64,
        signature in any::<u8>(),
        imm in any::<[u8; 4]>(),
        before in any::<[u8; 16]>(),
    ) {
        // `qpn` and `ds` range over their 24- and 6-bit fields; the C helper would silently
        // let wider values spill into neighbouring bits.
        let mut theirs = before;
        golden::set_ctrl_seg(
            &mut theirs, pi, opcode, opmod, qpn, fm_ce_se, ds, signature, u32::from_ne_bytes(imm),
        );
        let ours = our_ctrl(
            pi, opcode, opmod, qpn, fm_ce_se, ds, signature, imm, [before[9], before[10]],
        );
        prop_assert_eq!(ours.to_bytes(), theirs);
        prop_assert_eq!(&ours.doorbell_bytes()[..], &theirs[..8]);

        // The SSE variant (`mlx5dv_x86_set_ctrl_seg`) writes all 16 bytes, the stream id
        // as 0.
        #[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
        {
            let mut theirs = before;
            golden::x86_set_ctrl_seg(
                &mut theirs, pi, opcode, opmod, qpn, fm_ce_se, ds, signature,
                u32::from_ne_bytes(imm),
            );
            let ours = our_ctrl(pi, opcode, opmod, qpn, fm_ce_se, ds, signature, imm, [0, 0]);
            prop_assert_eq!(ours.to_bytes(), theirs);
        }
    }

    #[test]
    #[cfg_attr(not(rdma_headers), ignore = "install libibverbs-dev to compare with rdma-core")]
    fn data_seg_matches_mlx5dv_set_data_seg_and_its_x86_variant(
        length in any::<u32>(),
        lkey in any::<u32>(),
        addr in any::<usize>(),
        before in any::<[u8; 16]>(),
    ) {
        let mut theirs = before;
        golden::set_data_seg(&mut theirs, length, lkey, addr);
        let ours = DataSeg::new(length, lkey, addr as u64);
        prop_assert_eq!(ours.to_bytes(), theirs);
        prop_assert_eq!(DataSeg::from_bytes(&theirs), ours);

        // The SSE variant (`mlx5dv_x86_set_data_seg`).
        #[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
        {
            let mut theirs = before;
            golden::x86_set_data_seg(&mut theirs, length, lkey, addr);
            prop_assert_eq!(ours.to_bytes(), theirs);
        }
    }

    #[test]
    #[cfg_attr(not(rdma_headers), ignore = "install libibverbs-dev to compare with rdma-core")]
    fn av_matches_mlx5dv_set_dgram_seg(
        key in any::<u64>(),
        dqp_dct in any::<u32>(),
        ext in any::<bool>(),
        stat_rate_sl in any::<u8>(),
        fl_mlid in any::<u8>(),
        rlid in any::<u16>(),
        rmac in any::<[u8; 6]>(),
        tclass in any::<u8>(),
        hop_limit in any::<u8>(),
        grh_gid_fl in any::<u32>(),
        rgid in any::<[u8; 16]>(),
        before in any::<[u8; 48]>(),
    ) {
        let mut theirs = before;
        golden::set_dgram_seg(
            &mut theirs, key, dqp_dct, ext.into(), stat_rate_sl, fl_mlid, rlid, &rmac, tclass,
            hop_limit, grh_gid_fl, &rgid,
        );
        let mut ours = Av::new(
            key, dqp_dct, ext, stat_rate_sl, fl_mlid, rlid, rmac, tclass, hop_limit, grh_gid_fl,
            rgid,
        );
        // The helper leaves the reserved bytes 16..20 alone.
        ours.reserved0 = [before[16], before[17], before[18], before[19]];
        prop_assert_eq!(ours.to_bytes(), theirs);
        prop_assert_eq!(Av::from_bytes(&theirs), ours);
    }

    #[test]
    #[cfg_attr(not(rdma_headers), ignore = "install libibverbs-dev to compare with rdma-core")]
    fn av_set_ud_matches_mlx5dv_set_dgram_seg_with_a_qkey(
        remote_qpn in any::<u32>(),
        qkey in any::<u32>(),
        ext in any::<bool>(),
    ) {
        // "Always put 64 bits, in q_key, the reserved part will be 0" (mlx5dv.h).
        let mut theirs = [0u8; 48];
        golden::set_dgram_seg(
            &mut theirs, u64::from(qkey) << 32, remote_qpn, ext.into(), 0, 0, 0, &[0; 6], 0, 0,
            0, &[0; 16],
        );
        let mut ours = Av::default();
        ours.set_ud(remote_qpn, qkey, ext);
        prop_assert_eq!(ours.to_bytes(), theirs);
    }

    #[test]
    #[cfg_attr(not(rdma_headers), ignore = "install libibverbs-dev to compare with rdma-core")]
    fn av_set_dc_matches_mlx5dv_set_dgram_seg_with_a_dc_key(
        dctn in 0..1u32 << 24,
        dc_key in any::<u64>(),
        rest in any::<[u8; 36]>(),
    ) {
        // A DCI's datagram segment: an AH's AV with the DCT number and the extended bit in
        // `dqp_dct` and the 64-bit DC key in bytes 0..8 (`mlx5_send_wr_set_dc_addr`).
        let mut ah = [0u8; 48];
        ah[12..48].copy_from_slice(&rest);
        let mut theirs = ah;
        golden::set_dgram_seg(
            &mut theirs, dc_key, dctn, 1, ah[12], ah[13], u16::from_be_bytes([ah[14], ah[15]]),
            ah[20..26].try_into().unwrap(), ah[26], ah[27],
            u32::from_be_bytes(ah[28..32].try_into().unwrap()),
            ah[32..48].try_into().unwrap(),
        );
        let mut ours = Av::from_bytes(&ah);
        ours.set_dc(dctn, dc_key);
        prop_assert_eq!(ours.to_bytes(), theirs);
    }

    #[test]
    #[cfg_attr(not(rdma_headers), ignore = "install libibverbs-dev to compare with rdma-core")]
    fn compact_av_is_the_head_mlx5dv_set_dgram_seg_writes_without_ext(
        qpn in 0..1u32 << 24,
        qkey in any::<u32>(),
        dc_key in any::<u64>(),
        rest in any::<[u8; 36]>(),
    ) {
        // The compact AV (UCX with `compact_address_vector`): the first 16 bytes of the
        // datagram segment `mlx5dv_set_dgram_seg` writes with `ext` 0 over an AH's AV.
        let mut ah = [0u8; 48];
        ah[12..48].copy_from_slice(&rest);
        let av = Av::from_bytes(&ah);
        for (key, ours) in [
            (u64::from(qkey) << 32, CompactAv::ud(&av, qpn, qkey)),
            (dc_key, CompactAv::dc(&av, qpn, dc_key)),
        ] {
            let mut theirs = ah;
            golden::set_dgram_seg(
                &mut theirs, key, qpn, 0, ah[12], ah[13], u16::from_be_bytes([ah[14], ah[15]]),
                ah[20..26].try_into().unwrap(), ah[26], ah[27],
                u32::from_be_bytes(ah[28..32].try_into().unwrap()),
                ah[32..48].try_into().unwrap(),
            );
            prop_assert_eq!(&ours.to_bytes()[..], &theirs[..16]);
            prop_assert_eq!(theirs[8] & 0x80, 0);
        }
    }

    #[test]
    #[cfg_attr(not(rdma_headers), ignore = "install libibverbs-dev to compare with rdma-core")]
    fn cqe64_fields_match_the_header_reads(bytes in any::<[u8; 64]>()) {
        let ours = Cqe64::from_bytes(&bytes);
        prop_assert_eq!(ours.to_bytes(), bytes);
        let reads = golden::read_cqe64(&bytes);
        prop_assert_eq!(reads.len(), 18);
        for v in reads {
            prop_assert_eq!(our_cqe64_value(&ours, v.name), v.value, "{}", v.name);
        }
        let theirs = golden::cqe_bits(&bytes);
        let op_own = OpOwn::from_bits(ours.op_own);
        prop_assert_eq!(u8::from(op_own.owner()), theirs.owner);
        prop_assert_eq!(u8::from(op_own.se()), theirs.se);
        prop_assert_eq!(op_own.format() as u8, theirs.format);
        prop_assert_eq!(op_own.opcode(), theirs.opcode);
    }

    #[test]
    #[cfg_attr(not(rdma_headers), ignore = "install libibverbs-dev to compare with rdma-core")]
    fn err_cqe_fields_match_the_header_reads(bytes in any::<[u8; 64]>()) {
        let ours = ErrCqe::from_bytes(&bytes);
        prop_assert_eq!(ours.to_bytes(), bytes);
        let reads = golden::read_err_cqe(&bytes);
        prop_assert_eq!(reads.len(), 7);
        for v in reads {
            prop_assert_eq!(our_err_cqe_value(&ours, v.name), v.value, "{}", v.name);
        }
    }
}

#[test]
#[cfg_attr(
    not(rdma_headers),
    ignore = "install libibverbs-dev to compare with rdma-core"
)]
fn clock_conversion_matches_mlx5dv_ts_to_ns() {
    use mlx5_direct::ClockInfo;
    let masks = [(1u64 << 41) - 1, u64::MAX >> 1, u64::MAX];
    let mut runner = proptest::test_runner::TestRunner::default();
    let case = (
        any::<u64>(),
        any::<u64>(),
        0u64..1 << 31,
        any::<u32>(),
        0u32..40,
        0usize..3,
        any::<u64>(),
        -100_000i64..100_000,
    );
    runner
        .run(&case, |(nsec, last, frac, mult, shift, m, far, near)| {
            let info = ClockInfo {
                nsec,
                last_cycles: last,
                frac,
                mult,
                shift,
                mask: masks[m],
            };
            // Timestamps near the page's cycle count (the case that matters) and anywhere.
            for ts in [last.wrapping_add_signed(near), far] {
                let theirs = golden::ts_to_ns([nsec, last, frac, masks[m]], mult, shift, ts);
                prop_assert_eq!(info.to_ns(ts), theirs, "ts {:#x}", ts);
            }
            Ok(())
        })
        .unwrap();
}

// ---------------------------------------------------------------------------------------------
// Raw Ethernet (`c/eth.c`)
// ---------------------------------------------------------------------------------------------

/// The Ethernet segment and the striding WQE, against `mlx5dv.h`.
fn eth_models() -> Vec<Model> {
    vec![
        Model {
            strct: "mlx5_wqe_eth_seg",
            size: size_of::<EthSeg>(),
            fields: vec![
                // v44 reserves the software-parser and metadata bytes ours names.
                ("rsvd0", Exact(span!(EthSeg, swp_offsets))),
                ("cs_flags", Exact(span!(EthSeg, cs_flags))),
                ("rsvd1", Exact(span!(EthSeg, swp_flags))),
                ("mss", Exact(span!(EthSeg, mss))),
                ("rsvd2", Exact(span!(EthSeg, metadata))),
                ("inline_hdr_sz", Exact(span!(EthSeg, inline_hdr_sz))),
                ("inline_hdr_start", Exact(span!(EthSeg, inline_hdr_start))),
                ("inline_hdr", Exact(span!(EthSeg, inline_hdr))),
            ],
        },
        Model {
            strct: "mlx5_mprq_wqe",
            size: size_of::<MprqWqe>(),
            fields: vec![
                ("nseg", Exact(span!(MprqWqe, nseg))),
                ("dseg", Exact(span!(MprqWqe, dseg))),
            ],
        },
    ]
}

#[test]
#[cfg_attr(
    not(rdma_headers),
    ignore = "install libibverbs-dev to compare with rdma-core"
)]
fn eth_layouts_match_the_header() {
    let fields = golden::eth_fields();
    let structs = golden::eth_structs();
    for model in eth_models() {
        let theirs = structs.iter().find(|s| s.strct == model.strct).unwrap();
        assert_eq!(model.size, theirs.size, "sizeof(struct {})", model.strct);
        assert_eq!(golden::tiling_error(&fields, theirs, false), None);
        assert_model_fields(&model, &fields);
    }
    assert_eq!(
        i64::from(ETH_WQE_L3_CSUM),
        golden::eth_constant("MLX5_ETH_WQE_L3_CSUM")
    );
    assert_eq!(
        i64::from(ETH_WQE_L4_CSUM),
        golden::eth_constant("MLX5_ETH_WQE_L4_CSUM")
    );
    // An eMPW inline entry's mark is the inline segment's (DPDK's MLX5_ETH_WQE_DATA_INLINE).
    assert_eq!(i64::from(empw::DATA_INLINE), c("MLX5_INLINE_SEG"));
    // The kernel's inline modes: rdma-core turns every one but NONE into 18 bytes.
    assert_eq!(
        golden::eth_constant("MLX5_USER_INLINE_MODE_L2"),
        golden::eth_constant("MLX5_USER_INLINE_MODE_NONE") + 1
    );
}

/// Values only DPDK's `mlx5_prm.h` / `mlx5_tx.h` and the kernel's headers define (not
/// installed here), pinned by value with their source.
#[test]
fn eth_constants_outside_mlx5dv_h() {
    // MLX5_OPCODE_ENHANCED_MPSW (DPDK mlx5_prm.h, kernel include/linux/mlx5/qp.h).
    assert_eq!(Opcode::EnhancedMpsw as u8, 0x29);
    // MLX5_EMPW_MAX_PACKETS = MLX5_TX_COMP_THRESH (DPDK mlx5_defs.h / mlx5_tx.h).
    assert_eq!(empw::MAX_PACKETS, 32);
    // MLX5_WQE_SIZE_MAX (960) / MLX5_WQE_DSEG_SIZE (16) (DPDK mlx5_prm.h).
    assert_eq!(empw::MAX_DS, 960 / 16);
    // MLX5_EMPW_DEF_INLINE_LEN = 4 * MLX5_WQE_SIZE + MLX5_DSEG_MIN_INLINE_SIZE.
    assert_eq!(empw::DEF_INLINE_LEN, 4 * 64 + 12);
    // MLX5_ETH_WQE_VLAN_INSERT (DPDK mlx5_prm.h, 1u << 31 over bytes 12..16) is the kernel's
    // MLX5_ETH_WQE_INSERT_VLAN (1 << 15 over bytes 12..14); MLX5_ETH_WQE_SVLAN is bit 0.
    let seg = EthSeg::vlan_insert(0, 0x0abc, false).to_bytes();
    assert_eq!(seg[12..16], ((1u32 << 31) | 0x0abc).to_be_bytes());
    assert_eq!(ETH_WQE_SVLAN, 1);
    // DPDK mlx5_prm.h: MLX5_MPRQ_LEN_MASK 0xffff, MLX5_MPRQ_STRIDE_NUM_MASK 0x3fff0000
    // (shift 16), MLX5_MPRQ_FILLER_MASK 0x80000000.
    let all = MprqByteCnt::from_bits(u32::MAX);
    assert_eq!(
        MprqByteCnt::new().with_length(all.length()).into_bits(),
        0x0000_ffff
    );
    assert_eq!(
        MprqByteCnt::new().with_strides(all.strides()).into_bits(),
        0x3fff_0000
    );
    assert_eq!(
        MprqByteCnt::new().with_filler(true).into_bits(),
        0x8000_0000
    );
    // The kernel's en/txrx.h: CQE_L4_HDR_TYPE_* at bits 6..4 of l4_l3_hdr_type, cqe_has_vlan
    // bit 0; CQE_RSS_HTYPE_IP bits 3..2 (IPV4 1, IPV6 2), CQE_RSS_HTYPE_L4 bits 7..6 (TCP 1,
    // UDP 2).
    assert_eq!(HdrType::new().with_l4(L4Type::Udp).into_bits(), 2 << 4);
    assert_eq!(
        HdrType::new().with_l4(L4Type::TcpAckAndData).into_bits(),
        4 << 4
    );
    assert_eq!(HdrType::new().with_vlan(true).into_bits(), 1);
    assert_eq!(RssHashType::new().with_ip(2).with_l4(2).into_bits(), 0x88);
    // rdma-core wqe.h: MLX5_ETH_L2_INLINE_HEADER_SIZE 18, MLX5_ETH_L2_MIN_HEADER_SIZE 14.
    assert_eq!(
        (ETH_L2_INLINE_HEADER_SIZE, ETH_L2_MIN_HEADER_SIZE),
        (18, 14)
    );
}

proptest! {
    /// Our Ethernet segment is what `mlx5dv_set_eth_seg` writes, for any flags, MSS and
    /// inline header up to 18 bytes, over any previous bytes (the helper leaves bytes 0..4,
    /// 5 and 8..12 alone: ours writes them 0, so the comparison starts from zeros there).
    #[test]
    #[cfg_attr(not(rdma_headers), ignore = "install libibverbs-dev to compare with rdma-core")]
    fn eth_seg_matches_mlx5dv_set_eth_seg(
        cs_flags in any::<u8>(),
        mss in any::<u16>(),
        header in proptest::collection::vec(any::<u8>(), 0..=18),
    ) {
        let mut theirs = [0u8; 32];
        golden::set_eth_seg(&mut theirs, cs_flags, mss, &header);
        let ours = EthSeg::new(cs_flags, mss, &header).to_bytes();
        prop_assert_eq!(&ours[..12], &theirs[..12]);
        prop_assert_eq!(&ours[12..ETH_INLINE_HDR_OFFSET + header.len()],
            &theirs[12..ETH_INLINE_HDR_OFFSET + header.len()]);
    }

    /// The Ethernet CQE fields read back as rdma-core's `get_csum_ok` and
    /// `mlx5_cq_read_flow_tag` read them.
    #[test]
    fn eth_cqe_fields_read_as_rdma_core(bytes in any::<[u8; 64]>()) {
        let cqe = Cqe64::from_bytes(&bytes);
        let eth = EthCqe::of(&cqe);
        // MLX5_CQE_L3_OK | MLX5_CQE_L4_OK, and MLX5_CQE_L3_HDR_TYPE_IPV4 at bits 3..2 (the
        // values are compared with the header in `cqe_opcodes_and_op_own_constants_...`).
        let l3_l4 = bytes[28] & (2 | 4);
        let ipv4 = (bytes[29] >> 2) & 3 == 2;
        prop_assert_eq!(eth.ip_csum_ok(), l3_l4 == 6 && ipv4);
        prop_assert_eq!(eth.flow_tag, u32::from_be_bytes(bytes[56..60].try_into().unwrap()) & 0xff_ffff);
        prop_assert_eq!(eth.vlan.is_some(), bytes[29] & 1 == 1);
        prop_assert_eq!(eth.rss_hash, u32::from_be_bytes(bytes[12..16].try_into().unwrap()));
    }
}
