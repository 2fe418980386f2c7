/*
 * Golden layouts for the FFI of the driver's `verbs` backend: every mlx5dv struct it declares
 * by hand (src/backend/mlx5dv.rs) and the verbs structs rdma-sys writes by hand rather than
 * generating (ibv_ah_attr, ibv_global_route), with every member, plus the constants it uses.
 * Anonymous struct members are listed member by member ("sq.buf"); union alternatives are
 * not primary. With librdmacm's header (librdmacm-dev, which the `verbs` feature needs), the
 * rdma_cma.h structs the backend declares (src/backend/rdmacm.rs) or reads from rdma-sys
 * (rdma_cm_id, whose route holds rdma-sys's hand-written rdma_addr) and its constants too.
 */
#include <infiniband/mlx5dv.h>
#include <infiniband/verbs.h>
#if __has_include(<rdma/rdma_cma.h>)
#include <rdma/rdma_cma.h>
#define HAVE_RDMA_CMA 1
#endif

#include "table.h"

static const struct golden_field fields[] = {
	FIELD(mlx5dv_cqe_comp_caps, max_num, 1),
	FIELD(mlx5dv_cqe_comp_caps, supported_format, 1),

	FIELD(mlx5dv_sw_parsing_caps, sw_parsing_offloads, 1),
	FIELD(mlx5dv_sw_parsing_caps, supported_qpts, 1),

	FIELD(mlx5dv_striding_rq_caps, min_single_stride_log_num_of_bytes, 1),
	FIELD(mlx5dv_striding_rq_caps, max_single_stride_log_num_of_bytes, 1),
	FIELD(mlx5dv_striding_rq_caps, min_single_wqe_log_num_of_strides, 1),
	FIELD(mlx5dv_striding_rq_caps, max_single_wqe_log_num_of_strides, 1),
	FIELD(mlx5dv_striding_rq_caps, supported_qpts, 1),

	FIELD(mlx5dv_sig_caps, block_size, 1),
	FIELD(mlx5dv_sig_caps, block_prot, 1),
	FIELD(mlx5dv_sig_caps, t10dif_bg, 1),
	FIELD(mlx5dv_sig_caps, crc_type, 1),

	FIELD(mlx5dv_dci_streams_caps, max_log_num_concurent, 1),
	FIELD(mlx5dv_dci_streams_caps, max_log_num_errored, 1),
	FIELD(mlx5dv_dci_streams, log_num_concurent, 1),
	FIELD(mlx5dv_dci_streams, log_num_errored, 1),

	FIELD(mlx5dv_crypto_caps, failed_selftests, 1),
	FIELD(mlx5dv_crypto_caps, crypto_engines, 1),
	FIELD(mlx5dv_crypto_caps, wrapped_import_method, 1),
	FIELD(mlx5dv_crypto_caps, log_max_num_deks, 1),
	FIELD(mlx5dv_crypto_caps, flags, 1),

	FIELD(mlx5dv_context, version, 1),
	FIELD(mlx5dv_context, flags, 1),
	FIELD(mlx5dv_context, comp_mask, 1),
	FIELD(mlx5dv_context, cqe_comp_caps, 1),
	FIELD(mlx5dv_context, sw_parsing_caps, 1),
	FIELD(mlx5dv_context, striding_rq_caps, 1),
	FIELD(mlx5dv_context, tunnel_offloads_caps, 1),
	FIELD(mlx5dv_context, max_dynamic_bfregs, 1),
	FIELD(mlx5dv_context, max_clock_info_update_nsec, 1),
	FIELD(mlx5dv_context, flow_action_flags, 1),
	FIELD(mlx5dv_context, dc_odp_caps, 1),
	FIELD(mlx5dv_context, hca_core_clock, 1),
	FIELD(mlx5dv_context, num_lag_ports, 1),
	FIELD(mlx5dv_context, sig_caps, 1),
	FIELD(mlx5dv_context, dci_streams_caps, 1),
	FIELD(mlx5dv_context, max_wr_memcpy_length, 1),
	FIELD(mlx5dv_context, crypto_caps, 1),

	FIELD(mlx5dv_qp, dbrec, 1),
	FIELD(mlx5dv_qp, sq.buf, 1),
	FIELD(mlx5dv_qp, sq.wqe_cnt, 1),
	FIELD(mlx5dv_qp, sq.stride, 1),
	FIELD(mlx5dv_qp, rq.buf, 1),
	FIELD(mlx5dv_qp, rq.wqe_cnt, 1),
	FIELD(mlx5dv_qp, rq.stride, 1),
	FIELD(mlx5dv_qp, bf.reg, 1),
	FIELD(mlx5dv_qp, bf.size, 1),
	FIELD(mlx5dv_qp, comp_mask, 1),
	FIELD(mlx5dv_qp, uar_mmap_offset, 1),
	FIELD(mlx5dv_qp, tirn, 1),
	FIELD(mlx5dv_qp, tisn, 1),
	FIELD(mlx5dv_qp, rqn, 1),
	FIELD(mlx5dv_qp, sqn, 1),
	FIELD(mlx5dv_qp, tir_icm_addr, 1),

	FIELD(mlx5dv_cq, buf, 1),
	FIELD(mlx5dv_cq, dbrec, 1),
	FIELD(mlx5dv_cq, cqe_cnt, 1),
	FIELD(mlx5dv_cq, cqe_size, 1),
	FIELD(mlx5dv_cq, cq_uar, 1),
	FIELD(mlx5dv_cq, cqn, 1),
	FIELD(mlx5dv_cq, comp_mask, 1),

	FIELD(mlx5dv_srq, buf, 1),
	FIELD(mlx5dv_srq, dbrec, 1),
	FIELD(mlx5dv_srq, stride, 1),
	FIELD(mlx5dv_srq, head, 1),
	FIELD(mlx5dv_srq, tail, 1),
	FIELD(mlx5dv_srq, comp_mask, 1),
	FIELD(mlx5dv_srq, srqn, 1),

	FIELD(mlx5dv_obj, qp.in, 1),
	FIELD(mlx5dv_obj, qp.out, 1),
	FIELD(mlx5dv_obj, cq.in, 1),
	FIELD(mlx5dv_obj, cq.out, 1),
	FIELD(mlx5dv_obj, srq.in, 1),
	FIELD(mlx5dv_obj, srq.out, 1),
	FIELD(mlx5dv_obj, rwq.in, 1),
	FIELD(mlx5dv_obj, rwq.out, 1),
	FIELD(mlx5dv_obj, dm.in, 1),
	FIELD(mlx5dv_obj, dm.out, 1),
	FIELD(mlx5dv_obj, ah.in, 1),
	FIELD(mlx5dv_obj, ah.out, 1),
	FIELD(mlx5dv_obj, pd.in, 1),
	FIELD(mlx5dv_obj, pd.out, 1),

	FIELD(mlx5dv_clock_info, nsec, 1),
	FIELD(mlx5dv_clock_info, last_cycles, 1),
	FIELD(mlx5dv_clock_info, frac, 1),
	FIELD(mlx5dv_clock_info, mult, 1),
	FIELD(mlx5dv_clock_info, shift, 1),
	FIELD(mlx5dv_clock_info, mask, 1),

	FIELD(mlx5dv_cq_init_attr, comp_mask, 1),
	FIELD(mlx5dv_cq_init_attr, cqe_comp_res_format, 1),
	FIELD(mlx5dv_cq_init_attr, flags, 1),
	FIELD(mlx5dv_cq_init_attr, cqe_size, 1),

	FIELD(mlx5dv_ctx_allocators, alloc, 1),
	FIELD(mlx5dv_ctx_allocators, free, 1),
	FIELD(mlx5dv_ctx_allocators, data, 1),

	FIELD(mlx5dv_ah, av, 1),
	FIELD(mlx5dv_ah, comp_mask, 1),
	FIELD(mlx5dv_dm, buf, 1),
	FIELD(mlx5dv_dm, length, 1),
	FIELD(mlx5dv_dm, comp_mask, 1),
	FIELD(mlx5dv_dm, remote_va, 1),
	FIELD(mlx5dv_dc_init_attr, dc_type, 1),
	FIELD(mlx5dv_dc_init_attr, dct_access_key, 1),
	FIELD(mlx5dv_dc_init_attr, dci_streams, 0),

	FIELD(mlx5dv_qp_init_attr, comp_mask, 1),
	FIELD(mlx5dv_qp_init_attr, create_flags, 1),
	FIELD(mlx5dv_qp_init_attr, dc_init_attr, 1),
	FIELD(mlx5dv_qp_init_attr, send_ops_flags, 1),

	FIELD(ibv_global_route, dgid, 1),
	FIELD(ibv_global_route, flow_label, 1),
	FIELD(ibv_global_route, sgid_index, 1),
	FIELD(ibv_global_route, hop_limit, 1),
	FIELD(ibv_global_route, traffic_class, 1),

	FIELD(ibv_ah_attr, grh, 1),
	FIELD(ibv_ah_attr, dlid, 1),
	FIELD(ibv_ah_attr, sl, 1),
	FIELD(ibv_ah_attr, src_path_bits, 1),
	FIELD(ibv_ah_attr, static_rate, 1),
	FIELD(ibv_ah_attr, is_global, 1),
	FIELD(ibv_ah_attr, port_num, 1),
#ifdef HAVE_RDMA_CMA

	FIELD(rdma_event_channel, fd, 1),

	FIELD(rdma_conn_param, private_data, 1),
	FIELD(rdma_conn_param, private_data_len, 1),
	FIELD(rdma_conn_param, responder_resources, 1),
	FIELD(rdma_conn_param, initiator_depth, 1),
	FIELD(rdma_conn_param, flow_control, 1),
	FIELD(rdma_conn_param, retry_count, 1),
	FIELD(rdma_conn_param, rnr_retry_count, 1),
	FIELD(rdma_conn_param, srq, 1),
	FIELD(rdma_conn_param, qp_num, 1),

	FIELD(rdma_ud_param, private_data, 1),
	FIELD(rdma_ud_param, private_data_len, 1),
	FIELD(rdma_ud_param, ah_attr, 1),
	FIELD(rdma_ud_param, qp_num, 1),
	FIELD(rdma_ud_param, qkey, 1),

	FIELD(rdma_cm_event, id, 1),
	FIELD(rdma_cm_event, listen_id, 1),
	FIELD(rdma_cm_event, event, 1),
	FIELD(rdma_cm_event, status, 1),
	FIELD(rdma_cm_event, param, 1),
	FIELD(rdma_cm_event, param.conn, 0),
	FIELD(rdma_cm_event, param.ud, 0),

	FIELD(rdma_cm_id, verbs, 1),
	FIELD(rdma_cm_id, channel, 1),
	FIELD(rdma_cm_id, context, 1),
	FIELD(rdma_cm_id, qp, 1),
	FIELD(rdma_cm_id, route, 1),
	FIELD(rdma_cm_id, ps, 1),
	FIELD(rdma_cm_id, port_num, 1),
	FIELD(rdma_cm_id, event, 1),
	FIELD(rdma_cm_id, send_cq_channel, 1),
	FIELD(rdma_cm_id, send_cq, 1),
	FIELD(rdma_cm_id, recv_cq_channel, 1),
	FIELD(rdma_cm_id, recv_cq, 1),
	FIELD(rdma_cm_id, srq, 1),
	FIELD(rdma_cm_id, pd, 1),
	FIELD(rdma_cm_id, qp_type, 1),
#endif
};

static const struct golden_struct structs[] = {
	STRUCT(mlx5dv_cqe_comp_caps),
	STRUCT(mlx5dv_sw_parsing_caps),
	STRUCT(mlx5dv_striding_rq_caps),
	STRUCT(mlx5dv_sig_caps),
	STRUCT(mlx5dv_dci_streams_caps),
	STRUCT(mlx5dv_dci_streams),
	STRUCT(mlx5dv_crypto_caps),
	STRUCT(mlx5dv_context),
	STRUCT(mlx5dv_qp),
	STRUCT(mlx5dv_cq),
	STRUCT(mlx5dv_srq),
	STRUCT(mlx5dv_obj),
	STRUCT(mlx5dv_clock_info),
	STRUCT(mlx5dv_ctx_allocators),
	STRUCT(mlx5dv_cq_init_attr),
	STRUCT(mlx5dv_ah),
	STRUCT(mlx5dv_dm),
	STRUCT(mlx5dv_dc_init_attr),
	STRUCT(mlx5dv_qp_init_attr),
	STRUCT(ibv_global_route),
	STRUCT(ibv_ah_attr),
#ifdef HAVE_RDMA_CMA
	STRUCT(rdma_event_channel),
	STRUCT(rdma_conn_param),
	STRUCT(rdma_ud_param),
	STRUCT(rdma_cm_event),
	STRUCT(rdma_cm_id),
#endif
};

static const struct golden_value constants[] = {
	CONST(MLX5DV_CONTEXT_MASK_CQE_COMPRESION),
	CONST(MLX5DV_CONTEXT_FLAGS_CQE_V1),
	CONST(MLX5DV_CONTEXT_FLAGS_CQE_128B_COMP),
	CONST(MLX5DV_CONTEXT_FLAGS_CQE_128B_PAD),
	CONST(MLX5DV_CQ_INIT_ATTR_MASK_CQE_SIZE),
	CONST(MLX5DV_CQ_INIT_ATTR_MASK_COMPRESSED_CQE),
	CONST(MLX5DV_QP_INIT_ATTR_MASK_QP_CREATE_FLAGS),
	CONST(MLX5DV_QP_CREATE_DISABLE_SCATTER_TO_CQE),
	CONST(MLX5DV_QP_INIT_ATTR_MASK_DC),
	CONST(MLX5DV_QP_INIT_ATTR_MASK_DCI_STREAMS),
	CONST(MLX5DV_DCTYPE_DCT),
	CONST(MLX5DV_DCTYPE_DCI),
	CONST(MLX5DV_CTX_ATTR_BUF_ALLOCATORS),
	CONST(MLX5DV_OBJ_AH),
	CONST(MLX5DV_OBJ_DM),
	CONST(MLX5DV_OBJ_QP),
	CONST(MLX5DV_OBJ_CQ),
	CONST(MLX5DV_OBJ_SRQ),
	CONST(MLX5DV_SRQ_MASK_SRQN),
	CONST(IBV_LINK_LAYER_INFINIBAND),
	CONST(IBV_LINK_LAYER_ETHERNET),
#ifdef HAVE_RDMA_CMA
	CONST(RDMA_OPTION_ID),
	CONST(RDMA_OPTION_ID_TOS),
	CONST(RDMA_OPTION_ID_ACK_TIMEOUT),
	CONST(RDMA_CM_EVENT_ADDR_RESOLVED),
	CONST(RDMA_CM_EVENT_ADDR_ERROR),
	CONST(RDMA_CM_EVENT_ROUTE_RESOLVED),
	CONST(RDMA_CM_EVENT_ROUTE_ERROR),
	CONST(RDMA_CM_EVENT_CONNECT_REQUEST),
	CONST(RDMA_CM_EVENT_CONNECT_RESPONSE),
	CONST(RDMA_CM_EVENT_CONNECT_ERROR),
	CONST(RDMA_CM_EVENT_UNREACHABLE),
	CONST(RDMA_CM_EVENT_REJECTED),
	CONST(RDMA_CM_EVENT_ESTABLISHED),
	CONST(RDMA_CM_EVENT_DISCONNECTED),
	CONST(RDMA_CM_EVENT_DEVICE_REMOVAL),
	CONST(RDMA_CM_EVENT_MULTICAST_JOIN),
	CONST(RDMA_CM_EVENT_MULTICAST_ERROR),
	CONST(RDMA_CM_EVENT_ADDR_CHANGE),
	CONST(RDMA_CM_EVENT_TIMEWAIT_EXIT),
#endif
};

TABLE_ACCESSORS(golden_ffi)
