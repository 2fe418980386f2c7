/*
 * Golden values of raw Ethernet from rdma-core's installed headers, for the device model's
 * tests (hw/tests/raw_golden.rs): the layouts of struct mlx5_wqe_eth_seg, struct
 * mlx5_mprq_wqe and the striding attributes of <infiniband/mlx5dv.h>; the Ethernet
 * segment's checksum flags and the context flags of multi-packet send; the receive hash
 * fields, flow attribute and spec types and work queue states of <infiniband/verbs.h>; the
 * kernel's inline modes of <rdma/mlx5-abi.h>; and mlx5dv_set_eth_seg run into a buffer.
 */
#include <string.h>

#include <infiniband/mlx5dv.h>
#include <infiniband/verbs.h>
#include <rdma/mlx5-abi.h>

#include "table.h"

static const struct golden_field fields[] = {
	FIELD(mlx5_wqe_eth_seg, rsvd0, 1),
	FIELD(mlx5_wqe_eth_seg, cs_flags, 1),
	FIELD(mlx5_wqe_eth_seg, rsvd1, 1),
	FIELD(mlx5_wqe_eth_seg, mss, 1),
	FIELD(mlx5_wqe_eth_seg, rsvd2, 1),
	FIELD(mlx5_wqe_eth_seg, inline_hdr_sz, 1),
	FIELD(mlx5_wqe_eth_seg, inline_hdr_start, 1),
	FIELD(mlx5_wqe_eth_seg, inline_hdr, 1),

	FIELD(mlx5_mprq_wqe, nseg, 1),
	FIELD(mlx5_mprq_wqe, dseg, 1),

	FIELD(mlx5dv_striding_rq_init_attr, single_stride_log_num_of_bytes, 1),
	FIELD(mlx5dv_striding_rq_init_attr, single_wqe_log_num_of_strides, 1),
	FIELD(mlx5dv_striding_rq_init_attr, two_byte_shift_en, 1),

	FIELD(mlx5dv_striding_rq_caps, min_single_stride_log_num_of_bytes, 1),
	FIELD(mlx5dv_striding_rq_caps, max_single_stride_log_num_of_bytes, 1),
	FIELD(mlx5dv_striding_rq_caps, min_single_wqe_log_num_of_strides, 1),
	FIELD(mlx5dv_striding_rq_caps, max_single_wqe_log_num_of_strides, 1),
	FIELD(mlx5dv_striding_rq_caps, supported_qpts, 1),
};

static const struct golden_struct structs[] = {
	STRUCT(mlx5_wqe_eth_seg),
	STRUCT(mlx5_mprq_wqe),
	STRUCT(mlx5dv_striding_rq_init_attr),
	STRUCT(mlx5dv_striding_rq_caps),
};

static const struct golden_value constants[] = {
	CONST(MLX5_ETH_WQE_L3_CSUM),
	CONST(MLX5_ETH_WQE_L4_CSUM),
	CONST(MLX5DV_CONTEXT_FLAGS_MPW_ALLOWED),
	CONST(MLX5DV_CONTEXT_FLAGS_ENHANCED_MPW),
	CONST(MLX5DV_WQ_INIT_ATTR_MASK_STRIDING_RQ),

	CONST(IBV_RX_HASH_FUNC_TOEPLITZ),
	CONST(IBV_RX_HASH_SRC_IPV4),
	CONST(IBV_RX_HASH_DST_IPV4),
	CONST(IBV_RX_HASH_SRC_IPV6),
	CONST(IBV_RX_HASH_DST_IPV6),
	CONST(IBV_RX_HASH_SRC_PORT_TCP),
	CONST(IBV_RX_HASH_DST_PORT_TCP),
	CONST(IBV_RX_HASH_SRC_PORT_UDP),
	CONST(IBV_RX_HASH_DST_PORT_UDP),

	CONST(IBV_FLOW_ATTR_NORMAL),
	CONST(IBV_FLOW_ATTR_ALL_DEFAULT),
	CONST(IBV_FLOW_ATTR_MC_DEFAULT),
	CONST(IBV_FLOW_ATTR_SNIFFER),
	CONST(IBV_FLOW_ATTR_FLAGS_DONT_TRAP),
	CONST(IBV_FLOW_SPEC_ETH),
	CONST(IBV_FLOW_SPEC_IPV4),
	CONST(IBV_FLOW_SPEC_IPV6),
	CONST(IBV_FLOW_SPEC_IPV4_EXT),
	CONST(IBV_FLOW_SPEC_TCP),
	CONST(IBV_FLOW_SPEC_UDP),
	CONST(IBV_FLOW_SPEC_ACTION_TAG),
	CONST(IBV_FLOW_SPEC_ACTION_DROP),

	CONST(IBV_WQS_RESET),
	CONST(IBV_WQS_RDY),
	CONST(IBV_WQS_ERR),
	CONST(IBV_SEND_IP_CSUM),
	CONST(IBV_WC_IP_CSUM_OK),

	CONST(MLX5_USER_INLINE_MODE_NA),
	CONST(MLX5_USER_INLINE_MODE_NONE),
	CONST(MLX5_USER_INLINE_MODE_L2),
	CONST(MLX5_USER_INLINE_MODE_IP),
	CONST(MLX5_USER_INLINE_MODE_TCP_UDP),
};

TABLE_ACCESSORS(golden_eth)

void golden_set_eth_seg(uint8_t *seg32, uint8_t cs_flags, uint16_t mss, uint16_t inline_hdr_sz,
			const uint8_t *inline_hdr_start)
{
	struct mlx5_wqe_eth_seg seg;
	uint8_t hdr[18];

	/* The helper copies inline_hdr_sz bytes from inline_hdr_start into the 18 bytes at
	 * inline_hdr_start of the segment. */
	if (inline_hdr_sz > sizeof(hdr))
		inline_hdr_sz = sizeof(hdr);
	memcpy(hdr, inline_hdr_start, inline_hdr_sz);
	memcpy(&seg, seg32, sizeof(seg));
	mlx5dv_set_eth_seg(&seg, cs_flags, mss, inline_hdr_sz, hdr);
	memcpy(seg32, &seg, sizeof(seg));
}
