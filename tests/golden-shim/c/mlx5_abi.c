/*
 * Golden layouts of mlx5_ib's driver data from the installed uapi header <rdma/mlx5-abi.h>,
 * for the emulator's mirrors (hw/emu/src/abi/mlx5.rs, compared by hw/emu/tests/abi_layout.rs):
 * the structs that follow the core uverbs request and response of the commands the emulator
 * answers, the clock-info page, and the flags and mmap commands they use, plus the two mmap
 * commands rdma-core's <infiniband/mlx5dv.h> names (MLX5_MMAP_GET_*_CMD). The union members
 * of mlx5_ib_create_qp other than the first are not primary. The constants table also holds
 * each struct's _Alignof.
 */
#include <infiniband/mlx5dv.h>
#include <rdma/mlx5-abi.h>

#include "table.h"

static const struct golden_field fields[] = {
	FIELD(mlx5_ib_alloc_ucontext_req, total_num_bfregs, 1),
	FIELD(mlx5_ib_alloc_ucontext_req, num_low_latency_bfregs, 1),

	FIELD(mlx5_ib_alloc_ucontext_req_v2, total_num_bfregs, 1),
	FIELD(mlx5_ib_alloc_ucontext_req_v2, num_low_latency_bfregs, 1),
	FIELD(mlx5_ib_alloc_ucontext_req_v2, flags, 1),
	FIELD(mlx5_ib_alloc_ucontext_req_v2, comp_mask, 1),
	FIELD(mlx5_ib_alloc_ucontext_req_v2, max_cqe_version, 1),
	FIELD(mlx5_ib_alloc_ucontext_req_v2, reserved0, 1),
	FIELD(mlx5_ib_alloc_ucontext_req_v2, reserved1, 1),
	FIELD(mlx5_ib_alloc_ucontext_req_v2, reserved2, 1),
	FIELD(mlx5_ib_alloc_ucontext_req_v2, lib_caps, 1),

	FIELD(mlx5_ib_alloc_ucontext_resp, qp_tab_size, 1),
	FIELD(mlx5_ib_alloc_ucontext_resp, bf_reg_size, 1),
	FIELD(mlx5_ib_alloc_ucontext_resp, tot_bfregs, 1),
	FIELD(mlx5_ib_alloc_ucontext_resp, cache_line_size, 1),
	FIELD(mlx5_ib_alloc_ucontext_resp, max_sq_desc_sz, 1),
	FIELD(mlx5_ib_alloc_ucontext_resp, max_rq_desc_sz, 1),
	FIELD(mlx5_ib_alloc_ucontext_resp, max_send_wqebb, 1),
	FIELD(mlx5_ib_alloc_ucontext_resp, max_recv_wr, 1),
	FIELD(mlx5_ib_alloc_ucontext_resp, max_srq_recv_wr, 1),
	FIELD(mlx5_ib_alloc_ucontext_resp, num_ports, 1),
	FIELD(mlx5_ib_alloc_ucontext_resp, flow_action_flags, 1),
	FIELD(mlx5_ib_alloc_ucontext_resp, comp_mask, 1),
	FIELD(mlx5_ib_alloc_ucontext_resp, response_length, 1),
	FIELD(mlx5_ib_alloc_ucontext_resp, cqe_version, 1),
	FIELD(mlx5_ib_alloc_ucontext_resp, cmds_supp_uhw, 1),
	FIELD(mlx5_ib_alloc_ucontext_resp, eth_min_inline, 1),
	FIELD(mlx5_ib_alloc_ucontext_resp, clock_info_versions, 1),
	FIELD(mlx5_ib_alloc_ucontext_resp, hca_core_clock_offset, 1),
	FIELD(mlx5_ib_alloc_ucontext_resp, log_uar_size, 1),
	FIELD(mlx5_ib_alloc_ucontext_resp, num_uars_per_page, 1),
	FIELD(mlx5_ib_alloc_ucontext_resp, num_dyn_bfregs, 1),
	FIELD(mlx5_ib_alloc_ucontext_resp, dump_fill_mkey, 1),

	FIELD(mlx5_ib_alloc_pd_resp, pdn, 1),

	FIELD(mlx5_ib_tso_caps, max_tso, 1),
	FIELD(mlx5_ib_tso_caps, supported_qpts, 1),

	FIELD(mlx5_ib_rss_caps, rx_hash_fields_mask, 1),
	FIELD(mlx5_ib_rss_caps, rx_hash_function, 1),
	FIELD(mlx5_ib_rss_caps, reserved, 1),

	FIELD(mlx5_ib_cqe_comp_caps, max_num, 1),
	FIELD(mlx5_ib_cqe_comp_caps, supported_format, 1),

	FIELD(mlx5_packet_pacing_caps, qp_rate_limit_min, 1),
	FIELD(mlx5_packet_pacing_caps, qp_rate_limit_max, 1),
	FIELD(mlx5_packet_pacing_caps, supported_qpts, 1),
	FIELD(mlx5_packet_pacing_caps, cap_flags, 1),
	FIELD(mlx5_packet_pacing_caps, reserved, 1),

	FIELD(mlx5_ib_sw_parsing_caps, sw_parsing_offloads, 1),
	FIELD(mlx5_ib_sw_parsing_caps, supported_qpts, 1),

	FIELD(mlx5_ib_striding_rq_caps, min_single_stride_log_num_of_bytes, 1),
	FIELD(mlx5_ib_striding_rq_caps, max_single_stride_log_num_of_bytes, 1),
	FIELD(mlx5_ib_striding_rq_caps, min_single_wqe_log_num_of_strides, 1),
	FIELD(mlx5_ib_striding_rq_caps, max_single_wqe_log_num_of_strides, 1),
	FIELD(mlx5_ib_striding_rq_caps, supported_qpts, 1),
	FIELD(mlx5_ib_striding_rq_caps, reserved, 1),

	FIELD(mlx5_ib_dci_streams_caps, max_log_num_concurent, 1),
	FIELD(mlx5_ib_dci_streams_caps, max_log_num_errored, 1),

	FIELD(mlx5_ib_query_device_resp, comp_mask, 1),
	FIELD(mlx5_ib_query_device_resp, response_length, 1),
	FIELD(mlx5_ib_query_device_resp, tso_caps, 1),
	FIELD(mlx5_ib_query_device_resp, rss_caps, 1),
	FIELD(mlx5_ib_query_device_resp, cqe_comp_caps, 1),
	FIELD(mlx5_ib_query_device_resp, packet_pacing_caps, 1),
	FIELD(mlx5_ib_query_device_resp, mlx5_ib_support_multi_pkt_send_wqes, 1),
	FIELD(mlx5_ib_query_device_resp, flags, 1),
	FIELD(mlx5_ib_query_device_resp, sw_parsing_caps, 1),
	FIELD(mlx5_ib_query_device_resp, striding_rq_caps, 1),
	FIELD(mlx5_ib_query_device_resp, tunnel_offloads_caps, 1),
	FIELD(mlx5_ib_query_device_resp, dci_streams_caps, 1),
	FIELD(mlx5_ib_query_device_resp, reserved, 1),

	FIELD(mlx5_ib_create_cq, buf_addr, 1),
	FIELD(mlx5_ib_create_cq, db_addr, 1),
	FIELD(mlx5_ib_create_cq, cqe_size, 1),
	FIELD(mlx5_ib_create_cq, cqe_comp_en, 1),
	FIELD(mlx5_ib_create_cq, cqe_comp_res_format, 1),
	FIELD(mlx5_ib_create_cq, flags, 1),
	FIELD(mlx5_ib_create_cq, uar_page_index, 1),
	FIELD(mlx5_ib_create_cq, reserved0, 1),
	FIELD(mlx5_ib_create_cq, reserved1, 1),

	FIELD(mlx5_ib_create_cq_resp, cqn, 1),
	FIELD(mlx5_ib_create_cq_resp, reserved, 1),

	FIELD(mlx5_ib_resize_cq, buf_addr, 1),
	FIELD(mlx5_ib_resize_cq, cqe_size, 1),
	FIELD(mlx5_ib_resize_cq, reserved0, 1),
	FIELD(mlx5_ib_resize_cq, reserved1, 1),

	FIELD(mlx5_ib_create_srq, buf_addr, 1),
	FIELD(mlx5_ib_create_srq, db_addr, 1),
	FIELD(mlx5_ib_create_srq, flags, 1),
	FIELD(mlx5_ib_create_srq, reserved0, 1),
	FIELD(mlx5_ib_create_srq, uidx, 1),
	FIELD(mlx5_ib_create_srq, reserved1, 1),

	FIELD(mlx5_ib_create_srq_resp, srqn, 1),
	FIELD(mlx5_ib_create_srq_resp, reserved, 1),

	FIELD(mlx5_ib_create_qp_dci_streams, log_num_concurent, 1),
	FIELD(mlx5_ib_create_qp_dci_streams, log_num_errored, 1),

	FIELD(mlx5_ib_create_qp, buf_addr, 1),
	FIELD(mlx5_ib_create_qp, db_addr, 1),
	FIELD(mlx5_ib_create_qp, sq_wqe_count, 1),
	FIELD(mlx5_ib_create_qp, rq_wqe_count, 1),
	FIELD(mlx5_ib_create_qp, rq_wqe_shift, 1),
	FIELD(mlx5_ib_create_qp, flags, 1),
	FIELD(mlx5_ib_create_qp, uidx, 1),
	FIELD(mlx5_ib_create_qp, bfreg_index, 1),
	FIELD(mlx5_ib_create_qp, sq_buf_addr, 1),
	FIELD(mlx5_ib_create_qp, access_key, 0),
	FIELD(mlx5_ib_create_qp, ece_options, 1),
	FIELD(mlx5_ib_create_qp, dci_streams, 1),
	FIELD(mlx5_ib_create_qp, reserved, 1),

	FIELD(mlx5_ib_create_qp_resp, bfreg_index, 1),
	FIELD(mlx5_ib_create_qp_resp, ece_options, 1),
	FIELD(mlx5_ib_create_qp_resp, comp_mask, 1),
	FIELD(mlx5_ib_create_qp_resp, tirn, 1),
	FIELD(mlx5_ib_create_qp_resp, tisn, 1),
	FIELD(mlx5_ib_create_qp_resp, rqn, 1),
	FIELD(mlx5_ib_create_qp_resp, sqn, 1),
	FIELD(mlx5_ib_create_qp_resp, reserved1, 1),
	FIELD(mlx5_ib_create_qp_resp, tir_icm_addr, 1),

	FIELD(mlx5_ib_create_qp_rss, rx_hash_fields_mask, 1),
	FIELD(mlx5_ib_create_qp_rss, rx_hash_function, 1),
	FIELD(mlx5_ib_create_qp_rss, rx_key_len, 1),
	FIELD(mlx5_ib_create_qp_rss, reserved, 1),
	FIELD(mlx5_ib_create_qp_rss, rx_hash_key, 1),
	FIELD(mlx5_ib_create_qp_rss, comp_mask, 1),
	FIELD(mlx5_ib_create_qp_rss, flags, 1),

	FIELD(mlx5_ib_create_wq, buf_addr, 1),
	FIELD(mlx5_ib_create_wq, db_addr, 1),
	FIELD(mlx5_ib_create_wq, rq_wqe_count, 1),
	FIELD(mlx5_ib_create_wq, rq_wqe_shift, 1),
	FIELD(mlx5_ib_create_wq, user_index, 1),
	FIELD(mlx5_ib_create_wq, flags, 1),
	FIELD(mlx5_ib_create_wq, comp_mask, 1),
	FIELD(mlx5_ib_create_wq, single_stride_log_num_of_bytes, 1),
	FIELD(mlx5_ib_create_wq, single_wqe_log_num_of_strides, 1),
	FIELD(mlx5_ib_create_wq, two_byte_shift_en, 1),
	FIELD(mlx5_ib_create_wq_resp, response_length, 1),
	FIELD(mlx5_ib_create_wq_resp, reserved, 1),

	FIELD(mlx5_ib_create_ah_resp, response_length, 1),
	FIELD(mlx5_ib_create_ah_resp, dmac, 1),
	FIELD(mlx5_ib_create_ah_resp, reserved, 1),

	FIELD(mlx5_ib_burst_info, max_burst_sz, 1),
	FIELD(mlx5_ib_burst_info, typical_pkt_sz, 1),
	FIELD(mlx5_ib_burst_info, reserved, 1),

	FIELD(mlx5_ib_modify_qp, comp_mask, 1),
	FIELD(mlx5_ib_modify_qp, burst_info, 1),
	FIELD(mlx5_ib_modify_qp, ece_options, 1),

	FIELD(mlx5_ib_modify_qp_resp, response_length, 1),
	FIELD(mlx5_ib_modify_qp_resp, dctn, 1),
	FIELD(mlx5_ib_modify_qp_resp, ece_options, 1),
	FIELD(mlx5_ib_modify_qp_resp, reserved, 1),

	FIELD(mlx5_ib_clock_info, sign, 1),
	FIELD(mlx5_ib_clock_info, resv, 1),
	FIELD(mlx5_ib_clock_info, nsec, 1),
	FIELD(mlx5_ib_clock_info, cycles, 1),
	FIELD(mlx5_ib_clock_info, frac, 1),
	FIELD(mlx5_ib_clock_info, mult, 1),
	FIELD(mlx5_ib_clock_info, shift, 1),
	FIELD(mlx5_ib_clock_info, mask, 1),
	FIELD(mlx5_ib_clock_info, overflow_period, 1),
};

/* Every struct above, in the same order; each also has an ALIGNOF constant below. */
#define STRUCTS(X)                                  \
	X(mlx5_ib_alloc_ucontext_req)               \
	X(mlx5_ib_alloc_ucontext_req_v2)            \
	X(mlx5_ib_alloc_ucontext_resp)              \
	X(mlx5_ib_alloc_pd_resp)                    \
	X(mlx5_ib_tso_caps)                         \
	X(mlx5_ib_rss_caps)                         \
	X(mlx5_ib_cqe_comp_caps)                    \
	X(mlx5_packet_pacing_caps)                  \
	X(mlx5_ib_sw_parsing_caps)                  \
	X(mlx5_ib_striding_rq_caps)                 \
	X(mlx5_ib_dci_streams_caps)                 \
	X(mlx5_ib_query_device_resp)                \
	X(mlx5_ib_create_cq)                        \
	X(mlx5_ib_create_cq_resp)                   \
	X(mlx5_ib_resize_cq)                        \
	X(mlx5_ib_create_srq)                       \
	X(mlx5_ib_create_srq_resp)                  \
	X(mlx5_ib_create_qp_dci_streams)            \
	X(mlx5_ib_create_qp)                        \
	X(mlx5_ib_create_qp_resp)                   \
	X(mlx5_ib_create_qp_rss)                    \
	X(mlx5_ib_create_wq)                        \
	X(mlx5_ib_create_wq_resp)                   \
	X(mlx5_ib_create_ah_resp)                   \
	X(mlx5_ib_burst_info)                       \
	X(mlx5_ib_modify_qp)                        \
	X(mlx5_ib_modify_qp_resp)                   \
	X(mlx5_ib_clock_info)

static const struct golden_struct structs[] = { STRUCTS(STRUCT_ENTRY) };

static const struct golden_value constants[] = {
	STRUCTS(ALIGNOF_ENTRY)

	CONST(MLX5_IB_UVERBS_ABI_VERSION),

	CONST(MLX5_QP_FLAG_SIGNATURE),
	CONST(MLX5_QP_FLAG_SCATTER_CQE),
	CONST(MLX5_QP_FLAG_TUNNEL_OFFLOADS),
	CONST(MLX5_QP_FLAG_BFREG_INDEX),
	CONST(MLX5_QP_FLAG_TYPE_DCT),
	CONST(MLX5_QP_FLAG_TYPE_DCI),
	CONST(MLX5_QP_FLAG_TIR_ALLOW_SELF_LB_UC),
	CONST(MLX5_QP_FLAG_TIR_ALLOW_SELF_LB_MC),
	CONST(MLX5_QP_FLAG_ALLOW_SCATTER_CQE),
	CONST(MLX5_QP_FLAG_PACKET_BASED_CREDIT_MODE),
	CONST(MLX5_QP_FLAG_UAR_PAGE_INDEX),
	CONST(MLX5_QP_FLAG_DCI_STREAM),
	CONST(MLX5_SRQ_FLAG_SIGNATURE),

	CONST(MLX5_LIB_CAP_4K_UAR),
	CONST(MLX5_LIB_CAP_DYN_UAR),
	CONST(MLX5_IB_ALLOC_UCTX_DEVX),

	CONST(MLX5_IB_ALLOC_UCONTEXT_RESP_MASK_CORE_CLOCK_OFFSET),
	CONST(MLX5_IB_ALLOC_UCONTEXT_RESP_MASK_DUMP_FILL_MKEY),
	CONST(MLX5_IB_ALLOC_UCONTEXT_RESP_MASK_ECE),
	CONST(MLX5_IB_ALLOC_UCONTEXT_RESP_MASK_SQD2RTS),
	CONST(MLX5_IB_ALLOC_UCONTEXT_RESP_MASK_REAL_TIME_TS),
	CONST(MLX5_IB_ALLOC_UCONTEXT_RESP_MASK_MKEY_UPDATE_TAG),
	CONST(MLX5_USER_CMDS_SUPP_UHW_QUERY_DEVICE),
	CONST(MLX5_USER_CMDS_SUPP_UHW_CREATE_AH),
	CONST(MLX5_USER_INLINE_MODE_NA),
	CONST(MLX5_USER_INLINE_MODE_NONE),
	CONST(MLX5_USER_INLINE_MODE_L2),
	CONST(MLX5_USER_INLINE_MODE_IP),
	CONST(MLX5_USER_INLINE_MODE_TCP_UDP),
	CONST(MLX5_USER_ALLOC_UCONTEXT_FLOW_ACTION_FLAGS_ESP_AES_GCM),
	CONST(MLX5_USER_ALLOC_UCONTEXT_FLOW_ACTION_FLAGS_ESP_AES_GCM_REQ_METADATA),
	CONST(MLX5_USER_ALLOC_UCONTEXT_FLOW_ACTION_FLAGS_ESP_AES_GCM_SPI_STEERING),
	CONST(MLX5_USER_ALLOC_UCONTEXT_FLOW_ACTION_FLAGS_ESP_AES_GCM_FULL_OFFLOAD),
	CONST(MLX5_USER_ALLOC_UCONTEXT_FLOW_ACTION_FLAGS_ESP_AES_GCM_TX_IV_IS_ESN),

	CONST(MLX5_IB_CQE_RES_FORMAT_HASH),
	CONST(MLX5_IB_CQE_RES_FORMAT_CSUM),
	CONST(MLX5_IB_CQE_RES_FORMAT_CSUM_STRIDX),
	CONST(MLX5_IB_PP_SUPPORT_BURST),
	CONST(MLX5_IB_ALLOW_MPW),
	CONST(MLX5_IB_SUPPORT_EMPW),
	CONST(MLX5_IB_SW_PARSING),
	CONST(MLX5_IB_SW_PARSING_CSUM),
	CONST(MLX5_IB_SW_PARSING_LSO),
	CONST(MLX5_IB_QUERY_DEV_RESP_FLAGS_CQE_128B_COMP),
	CONST(MLX5_IB_QUERY_DEV_RESP_FLAGS_CQE_128B_PAD),
	CONST(MLX5_IB_QUERY_DEV_RESP_PACKET_BASED_CREDIT_MODE),
	CONST(MLX5_IB_QUERY_DEV_RESP_FLAGS_SCAT2CQE_DCT),
	CONST(MLX5_IB_TUNNELED_OFFLOADS_VXLAN),
	CONST(MLX5_IB_TUNNELED_OFFLOADS_GRE),
	CONST(MLX5_IB_TUNNELED_OFFLOADS_GENEVE),
	CONST(MLX5_IB_TUNNELED_OFFLOADS_MPLS_GRE),
	CONST(MLX5_IB_TUNNELED_OFFLOADS_MPLS_UDP),
	CONST(MLX5_RX_HASH_FUNC_TOEPLITZ),
	CONST(MLX5_RX_HASH_SRC_IPV4),
	CONST(MLX5_RX_HASH_DST_IPV4),
	CONST(MLX5_RX_HASH_SRC_IPV6),
	CONST(MLX5_RX_HASH_DST_IPV6),
	CONST(MLX5_RX_HASH_SRC_PORT_TCP),
	CONST(MLX5_RX_HASH_DST_PORT_TCP),
	CONST(MLX5_RX_HASH_SRC_PORT_UDP),
	CONST(MLX5_RX_HASH_DST_PORT_UDP),
	CONST(MLX5_RX_HASH_IPSEC_SPI),
	CONST(MLX5_RX_HASH_INNER),

	CONST(MLX5_IB_CREATE_CQ_FLAGS_CQE_128B_PAD),
	CONST(MLX5_IB_CREATE_CQ_FLAGS_UAR_PAGE_INDEX),
	CONST(MLX5_IB_CREATE_CQ_FLAGS_REAL_TIME_TS),

	CONST(MLX5_IB_CREATE_QP_RESP_MASK_TIRN),
	CONST(MLX5_IB_CREATE_QP_RESP_MASK_TISN),
	CONST(MLX5_IB_CREATE_QP_RESP_MASK_RQN),
	CONST(MLX5_IB_CREATE_QP_RESP_MASK_SQN),
	CONST(MLX5_IB_CREATE_QP_RESP_MASK_TIR_ICM_ADDR),
	CONST(MLX5_IB_CREATE_WQ_STRIDING_RQ),
	CONST(MLX5_WQ_FLAG_SIGNATURE),

	CONST(MLX5_IB_MMAP_REGULAR_PAGE),
	CONST(MLX5_IB_MMAP_GET_CONTIGUOUS_PAGES),
	CONST(MLX5_IB_MMAP_WC_PAGE),
	CONST(MLX5_IB_MMAP_NC_PAGE),
	CONST(MLX5_IB_MMAP_CORE_CLOCK),
	CONST(MLX5_IB_MMAP_ALLOC_WC),
	CONST(MLX5_IB_MMAP_CLOCK_INFO),
	CONST(MLX5_IB_MMAP_DEVICE_MEM),
	CONST(MLX5_MMAP_GET_REGULAR_PAGES_CMD),
	CONST(MLX5_MMAP_GET_NC_PAGES_CMD),

	CONST(MLX5_IB_CLOCK_INFO_KERNEL_UPDATING),
	CONST(MLX5_IB_CLOCK_INFO_V1),
};

TABLE_ACCESSORS(golden_mlx5_abi)
