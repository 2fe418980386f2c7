/*
 * Golden values from rdma-core's own header: struct layouts, constants and the inline
 * helpers of <infiniband/mlx5dv.h> (plus enum ibv_wc_status from <infiniband/verbs.h>),
 * exported as plain functions for tests/golden.rs. Nothing here is linked into the driver.
 */
#include <endian.h>
#include <string.h>

#include <infiniband/mlx5dv.h>
#include <infiniband/verbs.h>

#include "table.h"

static const struct golden_field fields[] = {
	FIELD(mlx5_wqe_ctrl_seg, opmod_idx_opcode, 1),
	FIELD(mlx5_wqe_ctrl_seg, qpn_ds, 1),
	FIELD(mlx5_wqe_ctrl_seg, signature, 1),
	FIELD(mlx5_wqe_ctrl_seg, dci_stream_channel_id, 1),
	FIELD(mlx5_wqe_ctrl_seg, fm_ce_se, 1),
	FIELD(mlx5_wqe_ctrl_seg, imm, 1),

	FIELD(mlx5_wqe_raddr_seg, raddr, 1),
	FIELD(mlx5_wqe_raddr_seg, rkey, 1),
	FIELD(mlx5_wqe_raddr_seg, reserved, 1),

	FIELD(mlx5_wqe_data_seg, byte_count, 1),
	FIELD(mlx5_wqe_data_seg, lkey, 1),
	FIELD(mlx5_wqe_data_seg, addr, 1),

	FIELD(mlx5_wqe_inl_data_seg, byte_count, 1),

	FIELD(mlx5_wqe_atomic_seg, swap_add, 1),
	FIELD(mlx5_wqe_atomic_seg, compare, 1),

	FIELD(mlx5_wqe_av, key, 1),
	FIELD(mlx5_wqe_av, key.qkey.qkey, 0),
	FIELD(mlx5_wqe_av, key.qkey.reserved, 0),
	FIELD(mlx5_wqe_av, key.dc_key, 0),
	FIELD(mlx5_wqe_av, dqp_dct, 1),
	FIELD(mlx5_wqe_av, stat_rate_sl, 1),
	FIELD(mlx5_wqe_av, fl_mlid, 1),
	FIELD(mlx5_wqe_av, rlid, 1),
	FIELD(mlx5_wqe_av, reserved0, 1),
	FIELD(mlx5_wqe_av, rmac, 1),
	FIELD(mlx5_wqe_av, tclass, 1),
	FIELD(mlx5_wqe_av, hop_limit, 1),
	FIELD(mlx5_wqe_av, grh_gid_fl, 1),
	FIELD(mlx5_wqe_av, rgid, 1),

	FIELD(mlx5_wqe_datagram_seg, av, 1),

	FIELD(mlx5_wqe_srq_next_seg, rsvd0, 1),
	FIELD(mlx5_wqe_srq_next_seg, next_wqe_index, 1),
	FIELD(mlx5_wqe_srq_next_seg, signature, 1),
	FIELD(mlx5_wqe_srq_next_seg, rsvd1, 1),

	/* Bytes 0..32 are a union: the plain view (primary), tm_cqe and tmh. */
	FIELD(mlx5_cqe64, rsvd0, 1),
	FIELD(mlx5_cqe64, wqe_id, 1),
	FIELD(mlx5_cqe64, rsvd4, 1),
	FIELD(mlx5_cqe64, ml_path, 1),
	FIELD(mlx5_cqe64, rsvd20, 1),
	FIELD(mlx5_cqe64, slid, 1),
	FIELD(mlx5_cqe64, flags_rqpn, 1),
	FIELD(mlx5_cqe64, hds_ip_ext, 1),
	FIELD(mlx5_cqe64, l4_hdr_type_etc, 1),
	FIELD(mlx5_cqe64, vlan_info, 1),
	FIELD(mlx5_cqe64, tm_cqe, 0),
	FIELD(mlx5_cqe64, tm_cqe.success, 0),
	FIELD(mlx5_cqe64, tm_cqe.hw_phase_cnt, 0),
	FIELD(mlx5_cqe64, tm_cqe.rsvd0, 0),
	FIELD(mlx5_cqe64, tmh, 0),
	FIELD(mlx5_cqe64, tmh.opcode, 0),
	FIELD(mlx5_cqe64, tmh.reserved, 0),
	FIELD(mlx5_cqe64, tmh.app_ctx, 0),
	FIELD(mlx5_cqe64, tmh.tag, 0),
	FIELD(mlx5_cqe64, srqn_uidx, 1),
	FIELD(mlx5_cqe64, imm_inval_pkey, 1),
	FIELD(mlx5_cqe64, app, 1),
	FIELD(mlx5_cqe64, app_op, 1),
	FIELD(mlx5_cqe64, app_info, 1),
	FIELD(mlx5_cqe64, byte_cnt, 1),
	FIELD(mlx5_cqe64, timestamp, 1),
	FIELD(mlx5_cqe64, sop_drop_qpn, 1),
	FIELD(mlx5_cqe64, wqe_counter, 1),
	FIELD(mlx5_cqe64, signature, 1),
	FIELD(mlx5_cqe64, op_own, 1),

	FIELD(mlx5_err_cqe, rsvd0, 1),
	FIELD(mlx5_err_cqe, srqn, 1),
	FIELD(mlx5_err_cqe, rsvd1, 1),
	FIELD(mlx5_err_cqe, vendor_err_synd, 1),
	FIELD(mlx5_err_cqe, syndrome, 1),
	FIELD(mlx5_err_cqe, s_wqe_opcode_qpn, 1),
	FIELD(mlx5_err_cqe, wqe_counter, 1),
	FIELD(mlx5_err_cqe, signature, 1),
	FIELD(mlx5_err_cqe, op_own, 1),
	/*
	 * struct mlx5_mini_cqe8 is not in the v44 header (nor is the masked-atomic segment,
	 * which lives in rdma-core's private wqe.h).
	 */
};

static const struct golden_struct structs[] = {
	STRUCT(mlx5_wqe_ctrl_seg),
	STRUCT(mlx5_wqe_raddr_seg),
	STRUCT(mlx5_wqe_data_seg),
	STRUCT(mlx5_wqe_inl_data_seg),
	STRUCT(mlx5_wqe_atomic_seg),
	STRUCT(mlx5_wqe_av),
	STRUCT(mlx5_wqe_datagram_seg),
	STRUCT(mlx5_wqe_srq_next_seg),
	STRUCT(mlx5_cqe64),
	STRUCT(mlx5_err_cqe),
};

/*
 * Every constant of the header in the families the driver models. Not in the v44
 * mlx5dv.h, so not here: MLX5_CQ_SET_CI and MLX5_CQ_ARM_DB (rdma-core's private mlx5.h),
 * MLX5_BF_OFFSET, MLX5_SEND_WQE_DS, a constant for the compressed CQE format, and the
 * kernel-only MLX5_OPCODE_* values (BIND_MW, GET_PSV, CHECK_PSV, RGET_PSV, RCHECK_PSV,
 * ENHANCED_MPSW, ACCESS_ASO).
 */
static const struct golden_value constants[] = {
	CONST(MLX5_OPCODE_NOP),
	CONST(MLX5_OPCODE_SEND_INVAL),
	CONST(MLX5_OPCODE_RDMA_WRITE),
	CONST(MLX5_OPCODE_RDMA_WRITE_IMM),
	CONST(MLX5_OPCODE_SEND),
	CONST(MLX5_OPCODE_SEND_IMM),
	CONST(MLX5_OPCODE_TSO),
	CONST(MLX5_OPCODE_RDMA_READ),
	CONST(MLX5_OPCODE_ATOMIC_CS),
	CONST(MLX5_OPCODE_ATOMIC_FA),
	CONST(MLX5_OPCODE_ATOMIC_MASKED_CS),
	CONST(MLX5_OPCODE_ATOMIC_MASKED_FA),
	CONST(MLX5_OPCODE_FMR),
	CONST(MLX5_OPCODE_LOCAL_INVAL),
	CONST(MLX5_OPCODE_CONFIG_CMD),
	CONST(MLX5_OPCODE_SET_PSV),
	CONST(MLX5_OPCODE_UMR),
	CONST(MLX5_OPCODE_TAG_MATCHING),
	CONST(MLX5_OPCODE_FLOW_TBL_ACCESS),
	CONST(MLX5_OPCODE_MMO),

	CONST(MLX5_INLINE_SCATTER_32),
	CONST(MLX5_INLINE_SCATTER_64),
	CONST(MLX5DV_CQE_RES_FORMAT_HASH),
	CONST(MLX5DV_CQE_RES_FORMAT_CSUM),
	CONST(MLX5DV_CQE_RES_FORMAT_CSUM_STRIDX),

	CONST(MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR),
	CONST(MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR),
	CONST(MLX5_CQE_SYNDROME_LOCAL_PROT_ERR),
	CONST(MLX5_CQE_SYNDROME_WR_FLUSH_ERR),
	CONST(MLX5_CQE_SYNDROME_MW_BIND_ERR),
	CONST(MLX5_CQE_SYNDROME_BAD_RESP_ERR),
	CONST(MLX5_CQE_SYNDROME_LOCAL_ACCESS_ERR),
	CONST(MLX5_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR),
	CONST(MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR),
	CONST(MLX5_CQE_SYNDROME_REMOTE_OP_ERR),
	CONST(MLX5_CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR),
	CONST(MLX5_CQE_SYNDROME_RNR_RETRY_EXC_ERR),
	CONST(MLX5_CQE_SYNDROME_REMOTE_ABORTED_ERR),
	CONST(MLX5_CQE_VENDOR_SYNDROME_ODP_PFAULT),

	CONST(MLX5_CQE_L2_OK),
	CONST(MLX5_CQE_L3_OK),
	CONST(MLX5_CQE_L4_OK),
	CONST(MLX5_CQE_L3_HDR_TYPE_NONE),
	CONST(MLX5_CQE_L3_HDR_TYPE_IPV6),
	CONST(MLX5_CQE_L3_HDR_TYPE_IPV4),

	CONST(MLX5_CQE_OWNER_MASK),
	CONST(MLX5_CQE_REQ),
	CONST(MLX5_CQE_RESP_WR_IMM),
	CONST(MLX5_CQE_RESP_SEND),
	CONST(MLX5_CQE_RESP_SEND_IMM),
	CONST(MLX5_CQE_RESP_SEND_INV),
	CONST(MLX5_CQE_RESIZE_CQ),
	CONST(MLX5_CQE_NO_PACKET),
	CONST(MLX5_CQE_SIG_ERR),
	CONST(MLX5_CQE_REQ_ERR),
	CONST(MLX5_CQE_RESP_ERR),
	CONST(MLX5_CQE_INVALID),

	CONST(MLX5_CQ_DOORBELL),
	CONST(MLX5_CQ_DB_REQ_NOT_SOL),
	CONST(MLX5_CQ_DB_REQ_NOT),

	CONST(MLX5_RCV_DBR),
	CONST(MLX5_SND_DBR),

	CONST(MLX5_INVALID_LKEY),
	CONST(MLX5_EXTENDED_UD_AV),
	CONST(MLX5_WQE_CTRL_CQ_UPDATE),
	CONST(MLX5_WQE_CTRL_SOLICITED),
	CONST(MLX5_WQE_CTRL_FENCE),
	CONST(MLX5_WQE_CTRL_INITIATOR_SMALL_FENCE),
	CONST(MLX5_SEND_WQE_BB),
	CONST(MLX5_SEND_WQE_SHIFT),
	CONST(MLX5_INLINE_SEG),

	CONST(IBV_WC_SUCCESS),
	CONST(IBV_WC_LOC_LEN_ERR),
	CONST(IBV_WC_LOC_QP_OP_ERR),
	CONST(IBV_WC_LOC_EEC_OP_ERR),
	CONST(IBV_WC_LOC_PROT_ERR),
	CONST(IBV_WC_WR_FLUSH_ERR),
	CONST(IBV_WC_MW_BIND_ERR),
	CONST(IBV_WC_BAD_RESP_ERR),
	CONST(IBV_WC_LOC_ACCESS_ERR),
	CONST(IBV_WC_REM_INV_REQ_ERR),
	CONST(IBV_WC_REM_ACCESS_ERR),
	CONST(IBV_WC_REM_OP_ERR),
	CONST(IBV_WC_RETRY_EXC_ERR),
	CONST(IBV_WC_RNR_RETRY_EXC_ERR),
	CONST(IBV_WC_LOC_RDD_VIOL_ERR),
	CONST(IBV_WC_REM_INV_RD_REQ_ERR),
	CONST(IBV_WC_REM_ABORT_ERR),
	CONST(IBV_WC_INV_EECN_ERR),
	CONST(IBV_WC_INV_EEC_STATE_ERR),
	CONST(IBV_WC_FATAL_ERR),
	CONST(IBV_WC_RESP_TIMEOUT_ERR),
	CONST(IBV_WC_GENERAL_ERR),
	CONST(IBV_WC_TM_ERR),
	CONST(IBV_WC_TM_RNDV_INCOMPLETE),
};

TABLE_ACCESSORS(golden)

#define PUT(label, expr)                                     \
	do {                                                 \
		if (n < cap) {                               \
			out[n].name = (label);               \
			out[n].value = (int64_t)(expr);      \
		}                                            \
		n++;                                         \
	} while (0)

/* Each named field of the plain view, converted as rdma-core's cq.c converts it. */
size_t golden_read_cqe64(const uint8_t *bytes, struct golden_value *out, size_t cap)
{
	struct mlx5_cqe64 cqe;
	size_t n = 0;

	memcpy(&cqe, bytes, sizeof(cqe));
	PUT("wqe_id", be16toh(cqe.wqe_id));
	PUT("ml_path", cqe.ml_path);
	PUT("slid", be16toh(cqe.slid));
	PUT("flags_rqpn", be32toh(cqe.flags_rqpn));
	PUT("hds_ip_ext", cqe.hds_ip_ext);
	PUT("l4_hdr_type_etc", cqe.l4_hdr_type_etc);
	PUT("vlan_info", be16toh(cqe.vlan_info));
	PUT("srqn_uidx", be32toh(cqe.srqn_uidx));
	PUT("imm_inval_pkey", be32toh(cqe.imm_inval_pkey));
	PUT("app", cqe.app);
	PUT("app_op", cqe.app_op);
	PUT("app_info", be16toh(cqe.app_info));
	PUT("byte_cnt", be32toh(cqe.byte_cnt));
	PUT("timestamp", be64toh(cqe.timestamp));
	PUT("sop_drop_qpn", be32toh(cqe.sop_drop_qpn));
	PUT("wqe_counter", be16toh(cqe.wqe_counter));
	PUT("signature", cqe.signature);
	PUT("op_own", cqe.op_own);
	return n;
}

/* The header declares srqn, s_wqe_opcode_qpn and wqe_counter without __be; cq.c converts
 * them with be32toh / be16toh all the same. */
size_t golden_read_err_cqe(const uint8_t *bytes, struct golden_value *out, size_t cap)
{
	struct mlx5_err_cqe cqe;
	size_t n = 0;

	memcpy(&cqe, bytes, sizeof(cqe));
	PUT("srqn", be32toh(cqe.srqn));
	PUT("vendor_err_synd", cqe.vendor_err_synd);
	PUT("syndrome", cqe.syndrome);
	PUT("s_wqe_opcode_qpn", be32toh(cqe.s_wqe_opcode_qpn));
	PUT("wqe_counter", be16toh(cqe.wqe_counter));
	PUT("signature", cqe.signature);
	PUT("op_own", cqe.op_own);
	return n;
}

uint32_t golden_get_cqe_bits(const uint8_t *bytes)
{
	struct mlx5_cqe64 cqe;

	memcpy(&cqe, bytes, sizeof(cqe));
	return (uint32_t)mlx5dv_get_cqe_owner(&cqe) |
	       (uint32_t)mlx5dv_get_cqe_se(&cqe) << 8 |
	       (uint32_t)mlx5dv_get_cqe_format(&cqe) << 16 |
	       (uint32_t)mlx5dv_get_cqe_opcode(&cqe) << 24;
}

void golden_set_ctrl_seg(uint8_t *seg16, uint16_t pi, uint8_t opcode, uint8_t opmod,
			 uint32_t qp_num, uint8_t fm_ce_se, uint8_t ds, uint8_t signature,
			 uint32_t imm)
{
	struct mlx5_wqe_ctrl_seg seg;

	memcpy(&seg, seg16, sizeof(seg));
	mlx5dv_set_ctrl_seg(&seg, pi, opcode, opmod, qp_num, fm_ce_se, ds, signature, imm);
	memcpy(seg16, &seg, sizeof(seg));
}

void golden_set_data_seg(uint8_t *seg16, uint32_t length, uint32_t lkey, uint64_t address)
{
	struct mlx5_wqe_data_seg seg;

	memcpy(&seg, seg16, sizeof(seg));
	mlx5dv_set_data_seg(&seg, length, lkey, (uintptr_t)address);
	memcpy(seg16, &seg, sizeof(seg));
}

void golden_set_dgram_seg(uint8_t *seg48, uint64_t key, uint32_t dqp_dct, uint8_t ext,
			  uint8_t stat_rate_sl, uint8_t fl_mlid, uint16_t rlid,
			  const uint8_t *rmac6, uint8_t tclass, uint8_t hop_limit,
			  uint32_t grh_gid_fl, const uint8_t *rgid16)
{
	struct mlx5_wqe_datagram_seg seg;
	uint8_t rmac[6], rgid[16];

	/* The helper takes non-const pointers but only reads them. */
	memcpy(rmac, rmac6, sizeof(rmac));
	memcpy(rgid, rgid16, sizeof(rgid));
	memcpy(&seg, seg48, sizeof(seg));
	mlx5dv_set_dgram_seg(&seg, key, dqp_dct, ext, stat_rate_sl, fl_mlid, rlid, rmac, tclass,
			     hop_limit, grh_gid_fl, rgid);
	memcpy(seg48, &seg, sizeof(seg));
}

uint16_t golden_flow_label_to_udp_sport(uint32_t flow_label)
{
	return ibv_flow_label_to_udp_sport(flow_label);
}

uint64_t golden_ts_to_ns(const uint64_t info[4], uint32_t mult, uint32_t shift, uint64_t ts)
{
	struct mlx5dv_clock_info ci = {
		.nsec = info[0],
		.last_cycles = info[1],
		.frac = info[2],
		.mult = mult,
		.shift = shift,
		.mask = info[3],
	};

	return mlx5dv_ts_to_ns(&ci, ts);
}
