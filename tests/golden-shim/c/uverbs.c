/*
 * Golden layouts of the kernel's uverbs write() ABI (uverbs ABI version 6) from the installed
 * uapi headers <rdma/ib_user_verbs.h> and <rdma/ib_user_ioctl_verbs.h>, for the emulator's
 * mirrors (hw/emu/src/abi, compared by hw/emu/tests/abi_layout.rs): the command headers, the
 * request and response of every command the emulator answers, their nested structs, and the
 * constants those use. Trailing flexible arrays are TAIL entries (where the driver data
 * begins); members of the anonymous struct of ib_uverbs_odp_caps are listed by path and are
 * not primary. The constants table also holds each struct's _Alignof. The flow spec and rule
 * types, which the uapi header leaves to the kernel's enums, come from libibverbs'
 * <infiniband/verbs.h> (the same values).
 */
#include <infiniband/verbs.h>
#include <rdma/ib_user_ioctl_verbs.h>
#include <rdma/ib_user_verbs.h>

#include "table.h"

static const struct golden_field fields[] = {
	FIELD(ib_uverbs_cmd_hdr, command, 1),
	FIELD(ib_uverbs_cmd_hdr, in_words, 1),
	FIELD(ib_uverbs_cmd_hdr, out_words, 1),

	FIELD(ib_uverbs_ex_cmd_hdr, response, 1),
	FIELD(ib_uverbs_ex_cmd_hdr, provider_in_words, 1),
	FIELD(ib_uverbs_ex_cmd_hdr, provider_out_words, 1),
	FIELD(ib_uverbs_ex_cmd_hdr, cmd_hdr_reserved, 1),

	FIELD(ib_uverbs_async_event_desc, element, 1),
	FIELD(ib_uverbs_async_event_desc, event_type, 1),
	FIELD(ib_uverbs_async_event_desc, reserved, 1),

	FIELD(ib_uverbs_comp_event_desc, cq_handle, 1),

	/* GET_CONTEXT */
	FIELD(ib_uverbs_get_context, response, 1),
	TAIL(ib_uverbs_get_context, driver_data),
	FIELD(ib_uverbs_get_context_resp, async_fd, 1),
	FIELD(ib_uverbs_get_context_resp, num_comp_vectors, 1),
	TAIL(ib_uverbs_get_context_resp, driver_data),

	/* QUERY_DEVICE */
	FIELD(ib_uverbs_query_device, response, 1),
	TAIL(ib_uverbs_query_device, driver_data),
	FIELD(ib_uverbs_query_device_resp, fw_ver, 1),
	FIELD(ib_uverbs_query_device_resp, node_guid, 1),
	FIELD(ib_uverbs_query_device_resp, sys_image_guid, 1),
	FIELD(ib_uverbs_query_device_resp, max_mr_size, 1),
	FIELD(ib_uverbs_query_device_resp, page_size_cap, 1),
	FIELD(ib_uverbs_query_device_resp, vendor_id, 1),
	FIELD(ib_uverbs_query_device_resp, vendor_part_id, 1),
	FIELD(ib_uverbs_query_device_resp, hw_ver, 1),
	FIELD(ib_uverbs_query_device_resp, max_qp, 1),
	FIELD(ib_uverbs_query_device_resp, max_qp_wr, 1),
	FIELD(ib_uverbs_query_device_resp, device_cap_flags, 1),
	FIELD(ib_uverbs_query_device_resp, max_sge, 1),
	FIELD(ib_uverbs_query_device_resp, max_sge_rd, 1),
	FIELD(ib_uverbs_query_device_resp, max_cq, 1),
	FIELD(ib_uverbs_query_device_resp, max_cqe, 1),
	FIELD(ib_uverbs_query_device_resp, max_mr, 1),
	FIELD(ib_uverbs_query_device_resp, max_pd, 1),
	FIELD(ib_uverbs_query_device_resp, max_qp_rd_atom, 1),
	FIELD(ib_uverbs_query_device_resp, max_ee_rd_atom, 1),
	FIELD(ib_uverbs_query_device_resp, max_res_rd_atom, 1),
	FIELD(ib_uverbs_query_device_resp, max_qp_init_rd_atom, 1),
	FIELD(ib_uverbs_query_device_resp, max_ee_init_rd_atom, 1),
	FIELD(ib_uverbs_query_device_resp, atomic_cap, 1),
	FIELD(ib_uverbs_query_device_resp, max_ee, 1),
	FIELD(ib_uverbs_query_device_resp, max_rdd, 1),
	FIELD(ib_uverbs_query_device_resp, max_mw, 1),
	FIELD(ib_uverbs_query_device_resp, max_raw_ipv6_qp, 1),
	FIELD(ib_uverbs_query_device_resp, max_raw_ethy_qp, 1),
	FIELD(ib_uverbs_query_device_resp, max_mcast_grp, 1),
	FIELD(ib_uverbs_query_device_resp, max_mcast_qp_attach, 1),
	FIELD(ib_uverbs_query_device_resp, max_total_mcast_qp_attach, 1),
	FIELD(ib_uverbs_query_device_resp, max_ah, 1),
	FIELD(ib_uverbs_query_device_resp, max_fmr, 1),
	FIELD(ib_uverbs_query_device_resp, max_map_per_fmr, 1),
	FIELD(ib_uverbs_query_device_resp, max_srq, 1),
	FIELD(ib_uverbs_query_device_resp, max_srq_wr, 1),
	FIELD(ib_uverbs_query_device_resp, max_srq_sge, 1),
	FIELD(ib_uverbs_query_device_resp, max_pkeys, 1),
	FIELD(ib_uverbs_query_device_resp, local_ca_ack_delay, 1),
	FIELD(ib_uverbs_query_device_resp, phys_port_cnt, 1),
	FIELD(ib_uverbs_query_device_resp, reserved, 1),

	/* QUERY_DEVICE_EX */
	FIELD(ib_uverbs_ex_query_device, comp_mask, 1),
	FIELD(ib_uverbs_ex_query_device, reserved, 1),
	FIELD(ib_uverbs_odp_caps, general_caps, 1),
	FIELD(ib_uverbs_odp_caps, per_transport_caps, 1),
	FIELD(ib_uverbs_odp_caps, per_transport_caps.rc_odp_caps, 0),
	FIELD(ib_uverbs_odp_caps, per_transport_caps.uc_odp_caps, 0),
	FIELD(ib_uverbs_odp_caps, per_transport_caps.ud_odp_caps, 0),
	FIELD(ib_uverbs_odp_caps, reserved, 1),
	FIELD(ib_uverbs_rss_caps, supported_qpts, 1),
	FIELD(ib_uverbs_rss_caps, max_rwq_indirection_tables, 1),
	FIELD(ib_uverbs_rss_caps, max_rwq_indirection_table_size, 1),
	FIELD(ib_uverbs_rss_caps, reserved, 1),
	FIELD(ib_uverbs_tm_caps, max_rndv_hdr_size, 1),
	FIELD(ib_uverbs_tm_caps, max_num_tags, 1),
	FIELD(ib_uverbs_tm_caps, flags, 1),
	FIELD(ib_uverbs_tm_caps, max_ops, 1),
	FIELD(ib_uverbs_tm_caps, max_sge, 1),
	FIELD(ib_uverbs_tm_caps, reserved, 1),
	FIELD(ib_uverbs_cq_moderation_caps, max_cq_moderation_count, 1),
	FIELD(ib_uverbs_cq_moderation_caps, max_cq_moderation_period, 1),
	FIELD(ib_uverbs_cq_moderation_caps, reserved, 1),
	FIELD(ib_uverbs_ex_query_device_resp, base, 1),
	FIELD(ib_uverbs_ex_query_device_resp, comp_mask, 1),
	FIELD(ib_uverbs_ex_query_device_resp, response_length, 1),
	FIELD(ib_uverbs_ex_query_device_resp, odp_caps, 1),
	FIELD(ib_uverbs_ex_query_device_resp, timestamp_mask, 1),
	FIELD(ib_uverbs_ex_query_device_resp, hca_core_clock, 1),
	FIELD(ib_uverbs_ex_query_device_resp, device_cap_flags_ex, 1),
	FIELD(ib_uverbs_ex_query_device_resp, rss_caps, 1),
	FIELD(ib_uverbs_ex_query_device_resp, max_wq_type_rq, 1),
	FIELD(ib_uverbs_ex_query_device_resp, raw_packet_caps, 1),
	FIELD(ib_uverbs_ex_query_device_resp, tm_caps, 1),
	FIELD(ib_uverbs_ex_query_device_resp, cq_moderation_caps, 1),
	FIELD(ib_uverbs_ex_query_device_resp, max_dm_size, 1),
	FIELD(ib_uverbs_ex_query_device_resp, xrc_odp_caps, 1),
	FIELD(ib_uverbs_ex_query_device_resp, reserved, 1),

	/* QUERY_PORT */
	FIELD(ib_uverbs_query_port, response, 1),
	FIELD(ib_uverbs_query_port, port_num, 1),
	FIELD(ib_uverbs_query_port, reserved, 1),
	TAIL(ib_uverbs_query_port, driver_data),
	FIELD(ib_uverbs_query_port_resp, port_cap_flags, 1),
	FIELD(ib_uverbs_query_port_resp, max_msg_sz, 1),
	FIELD(ib_uverbs_query_port_resp, bad_pkey_cntr, 1),
	FIELD(ib_uverbs_query_port_resp, qkey_viol_cntr, 1),
	FIELD(ib_uverbs_query_port_resp, gid_tbl_len, 1),
	FIELD(ib_uverbs_query_port_resp, pkey_tbl_len, 1),
	FIELD(ib_uverbs_query_port_resp, lid, 1),
	FIELD(ib_uverbs_query_port_resp, sm_lid, 1),
	FIELD(ib_uverbs_query_port_resp, state, 1),
	FIELD(ib_uverbs_query_port_resp, max_mtu, 1),
	FIELD(ib_uverbs_query_port_resp, active_mtu, 1),
	FIELD(ib_uverbs_query_port_resp, lmc, 1),
	FIELD(ib_uverbs_query_port_resp, max_vl_num, 1),
	FIELD(ib_uverbs_query_port_resp, sm_sl, 1),
	FIELD(ib_uverbs_query_port_resp, subnet_timeout, 1),
	FIELD(ib_uverbs_query_port_resp, init_type_reply, 1),
	FIELD(ib_uverbs_query_port_resp, active_width, 1),
	FIELD(ib_uverbs_query_port_resp, active_speed, 1),
	FIELD(ib_uverbs_query_port_resp, phys_state, 1),
	FIELD(ib_uverbs_query_port_resp, link_layer, 1),
	FIELD(ib_uverbs_query_port_resp, flags, 1),
	FIELD(ib_uverbs_query_port_resp, reserved, 1),

	/* ALLOC_PD, DEALLOC_PD */
	FIELD(ib_uverbs_alloc_pd, response, 1),
	TAIL(ib_uverbs_alloc_pd, driver_data),
	FIELD(ib_uverbs_alloc_pd_resp, pd_handle, 1),
	TAIL(ib_uverbs_alloc_pd_resp, driver_data),
	FIELD(ib_uverbs_dealloc_pd, pd_handle, 1),

	/* OPEN_XRCD, CLOSE_XRCD */
	FIELD(ib_uverbs_open_xrcd, response, 1),
	FIELD(ib_uverbs_open_xrcd, fd, 1),
	FIELD(ib_uverbs_open_xrcd, oflags, 1),
	TAIL(ib_uverbs_open_xrcd, driver_data),
	FIELD(ib_uverbs_open_xrcd_resp, xrcd_handle, 1),
	TAIL(ib_uverbs_open_xrcd_resp, driver_data),
	FIELD(ib_uverbs_close_xrcd, xrcd_handle, 1),

	/* REG_MR, DEREG_MR */
	FIELD(ib_uverbs_reg_mr, response, 1),
	FIELD(ib_uverbs_reg_mr, start, 1),
	FIELD(ib_uverbs_reg_mr, length, 1),
	FIELD(ib_uverbs_reg_mr, hca_va, 1),
	FIELD(ib_uverbs_reg_mr, pd_handle, 1),
	FIELD(ib_uverbs_reg_mr, access_flags, 1),
	TAIL(ib_uverbs_reg_mr, driver_data),
	FIELD(ib_uverbs_reg_mr_resp, mr_handle, 1),
	FIELD(ib_uverbs_reg_mr_resp, lkey, 1),
	FIELD(ib_uverbs_reg_mr_resp, rkey, 1),
	TAIL(ib_uverbs_reg_mr_resp, driver_data),
	FIELD(ib_uverbs_dereg_mr, mr_handle, 1),

	/* CREATE_COMP_CHANNEL */
	FIELD(ib_uverbs_create_comp_channel, response, 1),
	FIELD(ib_uverbs_create_comp_channel_resp, fd, 1),

	/* CREATE_CQ (and EX), RESIZE_CQ, DESTROY_CQ */
	FIELD(ib_uverbs_create_cq, response, 1),
	FIELD(ib_uverbs_create_cq, user_handle, 1),
	FIELD(ib_uverbs_create_cq, cqe, 1),
	FIELD(ib_uverbs_create_cq, comp_vector, 1),
	FIELD(ib_uverbs_create_cq, comp_channel, 1),
	FIELD(ib_uverbs_create_cq, reserved, 1),
	TAIL(ib_uverbs_create_cq, driver_data),
	FIELD(ib_uverbs_ex_create_cq, user_handle, 1),
	FIELD(ib_uverbs_ex_create_cq, cqe, 1),
	FIELD(ib_uverbs_ex_create_cq, comp_vector, 1),
	FIELD(ib_uverbs_ex_create_cq, comp_channel, 1),
	FIELD(ib_uverbs_ex_create_cq, comp_mask, 1),
	FIELD(ib_uverbs_ex_create_cq, flags, 1),
	FIELD(ib_uverbs_ex_create_cq, reserved, 1),
	FIELD(ib_uverbs_create_cq_resp, cq_handle, 1),
	FIELD(ib_uverbs_create_cq_resp, cqe, 1),
	TAIL(ib_uverbs_create_cq_resp, driver_data),
	FIELD(ib_uverbs_ex_create_cq_resp, base, 1),
	FIELD(ib_uverbs_ex_create_cq_resp, comp_mask, 1),
	FIELD(ib_uverbs_ex_create_cq_resp, response_length, 1),
	FIELD(ib_uverbs_resize_cq, response, 1),
	FIELD(ib_uverbs_resize_cq, cq_handle, 1),
	FIELD(ib_uverbs_resize_cq, cqe, 1),
	TAIL(ib_uverbs_resize_cq, driver_data),
	FIELD(ib_uverbs_resize_cq_resp, cqe, 1),
	FIELD(ib_uverbs_resize_cq_resp, reserved, 1),
	TAIL(ib_uverbs_resize_cq_resp, driver_data),
	FIELD(ib_uverbs_destroy_cq, response, 1),
	FIELD(ib_uverbs_destroy_cq, cq_handle, 1),
	FIELD(ib_uverbs_destroy_cq, reserved, 1),
	FIELD(ib_uverbs_destroy_cq_resp, comp_events_reported, 1),
	FIELD(ib_uverbs_destroy_cq_resp, async_events_reported, 1),

	/* Address vectors and QP attributes */
	FIELD(ib_uverbs_global_route, dgid, 1),
	FIELD(ib_uverbs_global_route, flow_label, 1),
	FIELD(ib_uverbs_global_route, sgid_index, 1),
	FIELD(ib_uverbs_global_route, hop_limit, 1),
	FIELD(ib_uverbs_global_route, traffic_class, 1),
	FIELD(ib_uverbs_global_route, reserved, 1),
	FIELD(ib_uverbs_ah_attr, grh, 1),
	FIELD(ib_uverbs_ah_attr, dlid, 1),
	FIELD(ib_uverbs_ah_attr, sl, 1),
	FIELD(ib_uverbs_ah_attr, src_path_bits, 1),
	FIELD(ib_uverbs_ah_attr, static_rate, 1),
	FIELD(ib_uverbs_ah_attr, is_global, 1),
	FIELD(ib_uverbs_ah_attr, port_num, 1),
	FIELD(ib_uverbs_ah_attr, reserved, 1),
	FIELD(ib_uverbs_qp_attr, qp_attr_mask, 1),
	FIELD(ib_uverbs_qp_attr, qp_state, 1),
	FIELD(ib_uverbs_qp_attr, cur_qp_state, 1),
	FIELD(ib_uverbs_qp_attr, path_mtu, 1),
	FIELD(ib_uverbs_qp_attr, path_mig_state, 1),
	FIELD(ib_uverbs_qp_attr, qkey, 1),
	FIELD(ib_uverbs_qp_attr, rq_psn, 1),
	FIELD(ib_uverbs_qp_attr, sq_psn, 1),
	FIELD(ib_uverbs_qp_attr, dest_qp_num, 1),
	FIELD(ib_uverbs_qp_attr, qp_access_flags, 1),
	FIELD(ib_uverbs_qp_attr, ah_attr, 1),
	FIELD(ib_uverbs_qp_attr, alt_ah_attr, 1),
	FIELD(ib_uverbs_qp_attr, max_send_wr, 1),
	FIELD(ib_uverbs_qp_attr, max_recv_wr, 1),
	FIELD(ib_uverbs_qp_attr, max_send_sge, 1),
	FIELD(ib_uverbs_qp_attr, max_recv_sge, 1),
	FIELD(ib_uverbs_qp_attr, max_inline_data, 1),
	FIELD(ib_uverbs_qp_attr, pkey_index, 1),
	FIELD(ib_uverbs_qp_attr, alt_pkey_index, 1),
	FIELD(ib_uverbs_qp_attr, en_sqd_async_notify, 1),
	FIELD(ib_uverbs_qp_attr, sq_draining, 1),
	FIELD(ib_uverbs_qp_attr, max_rd_atomic, 1),
	FIELD(ib_uverbs_qp_attr, max_dest_rd_atomic, 1),
	FIELD(ib_uverbs_qp_attr, min_rnr_timer, 1),
	FIELD(ib_uverbs_qp_attr, port_num, 1),
	FIELD(ib_uverbs_qp_attr, timeout, 1),
	FIELD(ib_uverbs_qp_attr, retry_cnt, 1),
	FIELD(ib_uverbs_qp_attr, rnr_retry, 1),
	FIELD(ib_uverbs_qp_attr, alt_port_num, 1),
	FIELD(ib_uverbs_qp_attr, alt_timeout, 1),
	FIELD(ib_uverbs_qp_attr, reserved, 1),
	FIELD(ib_uverbs_qp_dest, dgid, 1),
	FIELD(ib_uverbs_qp_dest, flow_label, 1),
	FIELD(ib_uverbs_qp_dest, dlid, 1),
	FIELD(ib_uverbs_qp_dest, reserved, 1),
	FIELD(ib_uverbs_qp_dest, sgid_index, 1),
	FIELD(ib_uverbs_qp_dest, hop_limit, 1),
	FIELD(ib_uverbs_qp_dest, traffic_class, 1),
	FIELD(ib_uverbs_qp_dest, sl, 1),
	FIELD(ib_uverbs_qp_dest, src_path_bits, 1),
	FIELD(ib_uverbs_qp_dest, static_rate, 1),
	FIELD(ib_uverbs_qp_dest, is_global, 1),
	FIELD(ib_uverbs_qp_dest, port_num, 1),

	/* CREATE_QP (and EX) */
	FIELD(ib_uverbs_create_qp, response, 1),
	FIELD(ib_uverbs_create_qp, user_handle, 1),
	FIELD(ib_uverbs_create_qp, pd_handle, 1),
	FIELD(ib_uverbs_create_qp, send_cq_handle, 1),
	FIELD(ib_uverbs_create_qp, recv_cq_handle, 1),
	FIELD(ib_uverbs_create_qp, srq_handle, 1),
	FIELD(ib_uverbs_create_qp, max_send_wr, 1),
	FIELD(ib_uverbs_create_qp, max_recv_wr, 1),
	FIELD(ib_uverbs_create_qp, max_send_sge, 1),
	FIELD(ib_uverbs_create_qp, max_recv_sge, 1),
	FIELD(ib_uverbs_create_qp, max_inline_data, 1),
	FIELD(ib_uverbs_create_qp, sq_sig_all, 1),
	FIELD(ib_uverbs_create_qp, qp_type, 1),
	FIELD(ib_uverbs_create_qp, is_srq, 1),
	FIELD(ib_uverbs_create_qp, reserved, 1),
	TAIL(ib_uverbs_create_qp, driver_data),
	FIELD(ib_uverbs_ex_create_qp, user_handle, 1),
	FIELD(ib_uverbs_ex_create_qp, pd_handle, 1),
	FIELD(ib_uverbs_ex_create_qp, send_cq_handle, 1),
	FIELD(ib_uverbs_ex_create_qp, recv_cq_handle, 1),
	FIELD(ib_uverbs_ex_create_qp, srq_handle, 1),
	FIELD(ib_uverbs_ex_create_qp, max_send_wr, 1),
	FIELD(ib_uverbs_ex_create_qp, max_recv_wr, 1),
	FIELD(ib_uverbs_ex_create_qp, max_send_sge, 1),
	FIELD(ib_uverbs_ex_create_qp, max_recv_sge, 1),
	FIELD(ib_uverbs_ex_create_qp, max_inline_data, 1),
	FIELD(ib_uverbs_ex_create_qp, sq_sig_all, 1),
	FIELD(ib_uverbs_ex_create_qp, qp_type, 1),
	FIELD(ib_uverbs_ex_create_qp, is_srq, 1),
	FIELD(ib_uverbs_ex_create_qp, reserved, 1),
	FIELD(ib_uverbs_ex_create_qp, comp_mask, 1),
	FIELD(ib_uverbs_ex_create_qp, create_flags, 1),
	FIELD(ib_uverbs_ex_create_qp, rwq_ind_tbl_handle, 1),
	FIELD(ib_uverbs_ex_create_qp, source_qpn, 1),
	FIELD(ib_uverbs_create_qp_resp, qp_handle, 1),
	FIELD(ib_uverbs_create_qp_resp, qpn, 1),
	FIELD(ib_uverbs_create_qp_resp, max_send_wr, 1),
	FIELD(ib_uverbs_create_qp_resp, max_recv_wr, 1),
	FIELD(ib_uverbs_create_qp_resp, max_send_sge, 1),
	FIELD(ib_uverbs_create_qp_resp, max_recv_sge, 1),
	FIELD(ib_uverbs_create_qp_resp, max_inline_data, 1),
	FIELD(ib_uverbs_create_qp_resp, reserved, 1),
	TAIL(ib_uverbs_create_qp_resp, driver_data),
	FIELD(ib_uverbs_ex_create_qp_resp, base, 1),
	FIELD(ib_uverbs_ex_create_qp_resp, comp_mask, 1),
	FIELD(ib_uverbs_ex_create_qp_resp, response_length, 1),

	/* QUERY_QP */
	FIELD(ib_uverbs_query_qp, response, 1),
	FIELD(ib_uverbs_query_qp, qp_handle, 1),
	FIELD(ib_uverbs_query_qp, attr_mask, 1),
	TAIL(ib_uverbs_query_qp, driver_data),
	FIELD(ib_uverbs_query_qp_resp, dest, 1),
	FIELD(ib_uverbs_query_qp_resp, alt_dest, 1),
	FIELD(ib_uverbs_query_qp_resp, max_send_wr, 1),
	FIELD(ib_uverbs_query_qp_resp, max_recv_wr, 1),
	FIELD(ib_uverbs_query_qp_resp, max_send_sge, 1),
	FIELD(ib_uverbs_query_qp_resp, max_recv_sge, 1),
	FIELD(ib_uverbs_query_qp_resp, max_inline_data, 1),
	FIELD(ib_uverbs_query_qp_resp, qkey, 1),
	FIELD(ib_uverbs_query_qp_resp, rq_psn, 1),
	FIELD(ib_uverbs_query_qp_resp, sq_psn, 1),
	FIELD(ib_uverbs_query_qp_resp, dest_qp_num, 1),
	FIELD(ib_uverbs_query_qp_resp, qp_access_flags, 1),
	FIELD(ib_uverbs_query_qp_resp, pkey_index, 1),
	FIELD(ib_uverbs_query_qp_resp, alt_pkey_index, 1),
	FIELD(ib_uverbs_query_qp_resp, qp_state, 1),
	FIELD(ib_uverbs_query_qp_resp, cur_qp_state, 1),
	FIELD(ib_uverbs_query_qp_resp, path_mtu, 1),
	FIELD(ib_uverbs_query_qp_resp, path_mig_state, 1),
	FIELD(ib_uverbs_query_qp_resp, sq_draining, 1),
	FIELD(ib_uverbs_query_qp_resp, max_rd_atomic, 1),
	FIELD(ib_uverbs_query_qp_resp, max_dest_rd_atomic, 1),
	FIELD(ib_uverbs_query_qp_resp, min_rnr_timer, 1),
	FIELD(ib_uverbs_query_qp_resp, port_num, 1),
	FIELD(ib_uverbs_query_qp_resp, timeout, 1),
	FIELD(ib_uverbs_query_qp_resp, retry_cnt, 1),
	FIELD(ib_uverbs_query_qp_resp, rnr_retry, 1),
	FIELD(ib_uverbs_query_qp_resp, alt_port_num, 1),
	FIELD(ib_uverbs_query_qp_resp, alt_timeout, 1),
	FIELD(ib_uverbs_query_qp_resp, sq_sig_all, 1),
	FIELD(ib_uverbs_query_qp_resp, reserved, 1),
	TAIL(ib_uverbs_query_qp_resp, driver_data),

	/* MODIFY_QP (and EX), DESTROY_QP */
	FIELD(ib_uverbs_modify_qp, dest, 1),
	FIELD(ib_uverbs_modify_qp, alt_dest, 1),
	FIELD(ib_uverbs_modify_qp, qp_handle, 1),
	FIELD(ib_uverbs_modify_qp, attr_mask, 1),
	FIELD(ib_uverbs_modify_qp, qkey, 1),
	FIELD(ib_uverbs_modify_qp, rq_psn, 1),
	FIELD(ib_uverbs_modify_qp, sq_psn, 1),
	FIELD(ib_uverbs_modify_qp, dest_qp_num, 1),
	FIELD(ib_uverbs_modify_qp, qp_access_flags, 1),
	FIELD(ib_uverbs_modify_qp, pkey_index, 1),
	FIELD(ib_uverbs_modify_qp, alt_pkey_index, 1),
	FIELD(ib_uverbs_modify_qp, qp_state, 1),
	FIELD(ib_uverbs_modify_qp, cur_qp_state, 1),
	FIELD(ib_uverbs_modify_qp, path_mtu, 1),
	FIELD(ib_uverbs_modify_qp, path_mig_state, 1),
	FIELD(ib_uverbs_modify_qp, en_sqd_async_notify, 1),
	FIELD(ib_uverbs_modify_qp, max_rd_atomic, 1),
	FIELD(ib_uverbs_modify_qp, max_dest_rd_atomic, 1),
	FIELD(ib_uverbs_modify_qp, min_rnr_timer, 1),
	FIELD(ib_uverbs_modify_qp, port_num, 1),
	FIELD(ib_uverbs_modify_qp, timeout, 1),
	FIELD(ib_uverbs_modify_qp, retry_cnt, 1),
	FIELD(ib_uverbs_modify_qp, rnr_retry, 1),
	FIELD(ib_uverbs_modify_qp, alt_port_num, 1),
	FIELD(ib_uverbs_modify_qp, alt_timeout, 1),
	FIELD(ib_uverbs_modify_qp, reserved, 1),
	TAIL(ib_uverbs_modify_qp, driver_data),
	FIELD(ib_uverbs_ex_modify_qp, base, 1),
	FIELD(ib_uverbs_ex_modify_qp, rate_limit, 1),
	FIELD(ib_uverbs_ex_modify_qp, reserved, 1),
	FIELD(ib_uverbs_ex_modify_qp_resp, comp_mask, 1),
	FIELD(ib_uverbs_ex_modify_qp_resp, response_length, 1),
	FIELD(ib_uverbs_destroy_qp, response, 1),
	FIELD(ib_uverbs_destroy_qp, qp_handle, 1),
	FIELD(ib_uverbs_destroy_qp, reserved, 1),
	FIELD(ib_uverbs_destroy_qp_resp, events_reported, 1),

	/* CREATE_SRQ, CREATE_XSRQ, MODIFY_SRQ, QUERY_SRQ, DESTROY_SRQ */
	FIELD(ib_uverbs_create_srq, response, 1),
	FIELD(ib_uverbs_create_srq, user_handle, 1),
	FIELD(ib_uverbs_create_srq, pd_handle, 1),
	FIELD(ib_uverbs_create_srq, max_wr, 1),
	FIELD(ib_uverbs_create_srq, max_sge, 1),
	FIELD(ib_uverbs_create_srq, srq_limit, 1),
	TAIL(ib_uverbs_create_srq, driver_data),
	FIELD(ib_uverbs_create_xsrq, response, 1),
	FIELD(ib_uverbs_create_xsrq, user_handle, 1),
	FIELD(ib_uverbs_create_xsrq, srq_type, 1),
	FIELD(ib_uverbs_create_xsrq, pd_handle, 1),
	FIELD(ib_uverbs_create_xsrq, max_wr, 1),
	FIELD(ib_uverbs_create_xsrq, max_sge, 1),
	FIELD(ib_uverbs_create_xsrq, srq_limit, 1),
	FIELD(ib_uverbs_create_xsrq, max_num_tags, 1),
	FIELD(ib_uverbs_create_xsrq, xrcd_handle, 1),
	FIELD(ib_uverbs_create_xsrq, cq_handle, 1),
	TAIL(ib_uverbs_create_xsrq, driver_data),
	FIELD(ib_uverbs_create_srq_resp, srq_handle, 1),
	FIELD(ib_uverbs_create_srq_resp, max_wr, 1),
	FIELD(ib_uverbs_create_srq_resp, max_sge, 1),
	FIELD(ib_uverbs_create_srq_resp, srqn, 1),
	TAIL(ib_uverbs_create_srq_resp, driver_data),
	FIELD(ib_uverbs_modify_srq, srq_handle, 1),
	FIELD(ib_uverbs_modify_srq, attr_mask, 1),
	FIELD(ib_uverbs_modify_srq, max_wr, 1),
	FIELD(ib_uverbs_modify_srq, srq_limit, 1),
	TAIL(ib_uverbs_modify_srq, driver_data),
	FIELD(ib_uverbs_query_srq, response, 1),
	FIELD(ib_uverbs_query_srq, srq_handle, 1),
	FIELD(ib_uverbs_query_srq, reserved, 1),
	TAIL(ib_uverbs_query_srq, driver_data),
	FIELD(ib_uverbs_query_srq_resp, max_wr, 1),
	FIELD(ib_uverbs_query_srq_resp, max_sge, 1),
	FIELD(ib_uverbs_query_srq_resp, srq_limit, 1),
	FIELD(ib_uverbs_query_srq_resp, reserved, 1),
	FIELD(ib_uverbs_destroy_srq, response, 1),
	FIELD(ib_uverbs_destroy_srq, srq_handle, 1),
	FIELD(ib_uverbs_destroy_srq, reserved, 1),
	FIELD(ib_uverbs_destroy_srq_resp, events_reported, 1),

	/* CREATE_AH, DESTROY_AH */
	FIELD(ib_uverbs_create_ah, response, 1),
	FIELD(ib_uverbs_create_ah, user_handle, 1),
	FIELD(ib_uverbs_create_ah, pd_handle, 1),
	FIELD(ib_uverbs_create_ah, reserved, 1),
	FIELD(ib_uverbs_create_ah, attr, 1),
	TAIL(ib_uverbs_create_ah, driver_data),
	FIELD(ib_uverbs_create_ah_resp, ah_handle, 1),
	TAIL(ib_uverbs_create_ah_resp, driver_data),
	FIELD(ib_uverbs_destroy_ah, ah_handle, 1),

	/* ATTACH_MCAST, DETACH_MCAST */
	FIELD(ib_uverbs_attach_mcast, gid, 1),
	FIELD(ib_uverbs_attach_mcast, qp_handle, 1),
	FIELD(ib_uverbs_attach_mcast, mlid, 1),
	FIELD(ib_uverbs_attach_mcast, reserved, 1),
	TAIL(ib_uverbs_attach_mcast, driver_data),
	FIELD(ib_uverbs_detach_mcast, gid, 1),
	FIELD(ib_uverbs_detach_mcast, qp_handle, 1),
	FIELD(ib_uverbs_detach_mcast, mlid, 1),
	FIELD(ib_uverbs_detach_mcast, reserved, 1),
	TAIL(ib_uverbs_detach_mcast, driver_data),

	/* CREATE_FLOW, DESTROY_FLOW: the rule, its specs, their filters */
	FIELD(ib_uverbs_flow_spec_hdr, type, 1),
	FIELD(ib_uverbs_flow_spec_hdr, size, 1),
	FIELD(ib_uverbs_flow_spec_hdr, reserved, 1),
	TAIL(ib_uverbs_flow_spec_hdr, flow_spec_data),
	FIELD(ib_uverbs_flow_eth_filter, dst_mac, 1),
	FIELD(ib_uverbs_flow_eth_filter, src_mac, 1),
	FIELD(ib_uverbs_flow_eth_filter, ether_type, 1),
	FIELD(ib_uverbs_flow_eth_filter, vlan_tag, 1),
	FIELD(ib_uverbs_flow_spec_eth, hdr, 1),
	FIELD(ib_uverbs_flow_spec_eth, val, 1),
	FIELD(ib_uverbs_flow_spec_eth, mask, 1),
	FIELD(ib_uverbs_flow_ipv4_filter, src_ip, 1),
	FIELD(ib_uverbs_flow_ipv4_filter, dst_ip, 1),
	FIELD(ib_uverbs_flow_ipv4_filter, proto, 1),
	FIELD(ib_uverbs_flow_ipv4_filter, tos, 1),
	FIELD(ib_uverbs_flow_ipv4_filter, ttl, 1),
	FIELD(ib_uverbs_flow_ipv4_filter, flags, 1),
	FIELD(ib_uverbs_flow_spec_ipv4, hdr, 1),
	FIELD(ib_uverbs_flow_spec_ipv4, val, 1),
	FIELD(ib_uverbs_flow_spec_ipv4, mask, 1),
	FIELD(ib_uverbs_flow_tcp_udp_filter, dst_port, 1),
	FIELD(ib_uverbs_flow_tcp_udp_filter, src_port, 1),
	FIELD(ib_uverbs_flow_spec_tcp_udp, hdr, 1),
	FIELD(ib_uverbs_flow_spec_tcp_udp, val, 1),
	FIELD(ib_uverbs_flow_spec_tcp_udp, mask, 1),
	FIELD(ib_uverbs_flow_ipv6_filter, src_ip, 1),
	FIELD(ib_uverbs_flow_ipv6_filter, dst_ip, 1),
	FIELD(ib_uverbs_flow_ipv6_filter, flow_label, 1),
	FIELD(ib_uverbs_flow_ipv6_filter, next_hdr, 1),
	FIELD(ib_uverbs_flow_ipv6_filter, traffic_class, 1),
	FIELD(ib_uverbs_flow_ipv6_filter, hop_limit, 1),
	FIELD(ib_uverbs_flow_ipv6_filter, reserved, 1),
	FIELD(ib_uverbs_flow_spec_ipv6, hdr, 1),
	FIELD(ib_uverbs_flow_spec_ipv6, val, 1),
	FIELD(ib_uverbs_flow_spec_ipv6, mask, 1),
	FIELD(ib_uverbs_flow_spec_action_tag, hdr, 1),
	FIELD(ib_uverbs_flow_spec_action_tag, tag_id, 1),
	FIELD(ib_uverbs_flow_spec_action_tag, reserved1, 1),
	FIELD(ib_uverbs_flow_spec_action_drop, hdr, 1),
	FIELD(ib_uverbs_flow_attr, type, 1),
	FIELD(ib_uverbs_flow_attr, size, 1),
	FIELD(ib_uverbs_flow_attr, priority, 1),
	FIELD(ib_uverbs_flow_attr, num_of_specs, 1),
	FIELD(ib_uverbs_flow_attr, reserved, 1),
	FIELD(ib_uverbs_flow_attr, port, 1),
	FIELD(ib_uverbs_flow_attr, flags, 1),
	TAIL(ib_uverbs_flow_attr, flow_specs),
	FIELD(ib_uverbs_create_flow, comp_mask, 1),
	FIELD(ib_uverbs_create_flow, qp_handle, 1),
	FIELD(ib_uverbs_create_flow, flow_attr, 1),
	FIELD(ib_uverbs_create_flow_resp, comp_mask, 1),
	FIELD(ib_uverbs_create_flow_resp, flow_handle, 1),
	FIELD(ib_uverbs_destroy_flow, comp_mask, 1),
	FIELD(ib_uverbs_destroy_flow, flow_handle, 1),

	/* CREATE_WQ, MODIFY_WQ, DESTROY_WQ, CREATE_RWQ_IND_TBL, DESTROY_RWQ_IND_TBL */
	FIELD(ib_uverbs_ex_create_wq, comp_mask, 1),
	FIELD(ib_uverbs_ex_create_wq, wq_type, 1),
	FIELD(ib_uverbs_ex_create_wq, user_handle, 1),
	FIELD(ib_uverbs_ex_create_wq, pd_handle, 1),
	FIELD(ib_uverbs_ex_create_wq, cq_handle, 1),
	FIELD(ib_uverbs_ex_create_wq, max_wr, 1),
	FIELD(ib_uverbs_ex_create_wq, max_sge, 1),
	FIELD(ib_uverbs_ex_create_wq, create_flags, 1),
	FIELD(ib_uverbs_ex_create_wq, reserved, 1),
	FIELD(ib_uverbs_ex_create_wq_resp, comp_mask, 1),
	FIELD(ib_uverbs_ex_create_wq_resp, response_length, 1),
	FIELD(ib_uverbs_ex_create_wq_resp, wq_handle, 1),
	FIELD(ib_uverbs_ex_create_wq_resp, max_wr, 1),
	FIELD(ib_uverbs_ex_create_wq_resp, max_sge, 1),
	FIELD(ib_uverbs_ex_create_wq_resp, wqn, 1),
	FIELD(ib_uverbs_ex_destroy_wq, comp_mask, 1),
	FIELD(ib_uverbs_ex_destroy_wq, wq_handle, 1),
	FIELD(ib_uverbs_ex_destroy_wq_resp, comp_mask, 1),
	FIELD(ib_uverbs_ex_destroy_wq_resp, response_length, 1),
	FIELD(ib_uverbs_ex_destroy_wq_resp, events_reported, 1),
	FIELD(ib_uverbs_ex_destroy_wq_resp, reserved, 1),
	FIELD(ib_uverbs_ex_modify_wq, attr_mask, 1),
	FIELD(ib_uverbs_ex_modify_wq, wq_handle, 1),
	FIELD(ib_uverbs_ex_modify_wq, wq_state, 1),
	FIELD(ib_uverbs_ex_modify_wq, curr_wq_state, 1),
	FIELD(ib_uverbs_ex_modify_wq, flags, 1),
	FIELD(ib_uverbs_ex_modify_wq, flags_mask, 1),
	FIELD(ib_uverbs_ex_create_rwq_ind_table, comp_mask, 1),
	FIELD(ib_uverbs_ex_create_rwq_ind_table, log_ind_tbl_size, 1),
	TAIL(ib_uverbs_ex_create_rwq_ind_table, wq_handles),
	FIELD(ib_uverbs_ex_create_rwq_ind_table_resp, comp_mask, 1),
	FIELD(ib_uverbs_ex_create_rwq_ind_table_resp, response_length, 1),
	FIELD(ib_uverbs_ex_create_rwq_ind_table_resp, ind_tbl_handle, 1),
	FIELD(ib_uverbs_ex_create_rwq_ind_table_resp, ind_tbl_num, 1),
	FIELD(ib_uverbs_ex_destroy_rwq_ind_table, comp_mask, 1),
	FIELD(ib_uverbs_ex_destroy_rwq_ind_table, ind_tbl_handle, 1),
};

/* Every struct above, in the same order; each also has an ALIGNOF constant below. */
#define STRUCTS(X)                                  \
	X(ib_uverbs_cmd_hdr)                        \
	X(ib_uverbs_ex_cmd_hdr)                     \
	X(ib_uverbs_async_event_desc)               \
	X(ib_uverbs_comp_event_desc)                \
	X(ib_uverbs_get_context)                    \
	X(ib_uverbs_get_context_resp)               \
	X(ib_uverbs_query_device)                   \
	X(ib_uverbs_query_device_resp)              \
	X(ib_uverbs_ex_query_device)                \
	X(ib_uverbs_odp_caps)                       \
	X(ib_uverbs_rss_caps)                       \
	X(ib_uverbs_tm_caps)                        \
	X(ib_uverbs_cq_moderation_caps)             \
	X(ib_uverbs_ex_query_device_resp)           \
	X(ib_uverbs_query_port)                     \
	X(ib_uverbs_query_port_resp)                \
	X(ib_uverbs_alloc_pd)                       \
	X(ib_uverbs_alloc_pd_resp)                  \
	X(ib_uverbs_dealloc_pd)                     \
	X(ib_uverbs_open_xrcd)                      \
	X(ib_uverbs_open_xrcd_resp)                 \
	X(ib_uverbs_close_xrcd)                     \
	X(ib_uverbs_reg_mr)                         \
	X(ib_uverbs_reg_mr_resp)                    \
	X(ib_uverbs_dereg_mr)                       \
	X(ib_uverbs_create_comp_channel)            \
	X(ib_uverbs_create_comp_channel_resp)       \
	X(ib_uverbs_create_cq)                      \
	X(ib_uverbs_ex_create_cq)                   \
	X(ib_uverbs_create_cq_resp)                 \
	X(ib_uverbs_ex_create_cq_resp)              \
	X(ib_uverbs_resize_cq)                      \
	X(ib_uverbs_resize_cq_resp)                 \
	X(ib_uverbs_destroy_cq)                     \
	X(ib_uverbs_destroy_cq_resp)                \
	X(ib_uverbs_global_route)                   \
	X(ib_uverbs_ah_attr)                        \
	X(ib_uverbs_qp_attr)                        \
	X(ib_uverbs_qp_dest)                        \
	X(ib_uverbs_create_qp)                      \
	X(ib_uverbs_ex_create_qp)                   \
	X(ib_uverbs_create_qp_resp)                 \
	X(ib_uverbs_ex_create_qp_resp)              \
	X(ib_uverbs_query_qp)                       \
	X(ib_uverbs_query_qp_resp)                  \
	X(ib_uverbs_modify_qp)                      \
	X(ib_uverbs_ex_modify_qp)                   \
	X(ib_uverbs_ex_modify_qp_resp)              \
	X(ib_uverbs_destroy_qp)                     \
	X(ib_uverbs_destroy_qp_resp)                \
	X(ib_uverbs_create_srq)                     \
	X(ib_uverbs_create_xsrq)                    \
	X(ib_uverbs_create_srq_resp)                \
	X(ib_uverbs_modify_srq)                     \
	X(ib_uverbs_query_srq)                      \
	X(ib_uverbs_query_srq_resp)                 \
	X(ib_uverbs_destroy_srq)                    \
	X(ib_uverbs_destroy_srq_resp)               \
	X(ib_uverbs_create_ah)                      \
	X(ib_uverbs_create_ah_resp)                 \
	X(ib_uverbs_destroy_ah)                      \
	X(ib_uverbs_attach_mcast)                   \
	X(ib_uverbs_detach_mcast)                   \
	X(ib_uverbs_flow_spec_hdr)                  \
	X(ib_uverbs_flow_eth_filter)                \
	X(ib_uverbs_flow_spec_eth)                  \
	X(ib_uverbs_flow_ipv4_filter)               \
	X(ib_uverbs_flow_spec_ipv4)                 \
	X(ib_uverbs_flow_tcp_udp_filter)            \
	X(ib_uverbs_flow_spec_tcp_udp)              \
	X(ib_uverbs_flow_ipv6_filter)               \
	X(ib_uverbs_flow_spec_ipv6)                 \
	X(ib_uverbs_flow_spec_action_tag)           \
	X(ib_uverbs_flow_spec_action_drop)          \
	X(ib_uverbs_flow_attr)                      \
	X(ib_uverbs_create_flow)                    \
	X(ib_uverbs_create_flow_resp)               \
	X(ib_uverbs_destroy_flow)                   \
	X(ib_uverbs_ex_create_wq)                   \
	X(ib_uverbs_ex_create_wq_resp)              \
	X(ib_uverbs_ex_destroy_wq)                  \
	X(ib_uverbs_ex_destroy_wq_resp)             \
	X(ib_uverbs_ex_modify_wq)                   \
	X(ib_uverbs_ex_create_rwq_ind_table)        \
	X(ib_uverbs_ex_create_rwq_ind_table_resp)   \
	X(ib_uverbs_ex_destroy_rwq_ind_table)

static const struct golden_struct structs[] = { STRUCTS(STRUCT_ENTRY) };

static const struct golden_value constants[] = {
	STRUCTS(ALIGNOF_ENTRY)

	CONST(IB_USER_VERBS_ABI_VERSION),
	CONST(IB_USER_VERBS_CMD_THRESHOLD),
	CONST(IB_USER_VERBS_CMD_COMMAND_MASK),
	CONST(IB_USER_VERBS_CMD_FLAG_EXTENDED),

	CONST(IB_USER_VERBS_CMD_GET_CONTEXT),
	CONST(IB_USER_VERBS_CMD_QUERY_DEVICE),
	CONST(IB_USER_VERBS_CMD_QUERY_PORT),
	CONST(IB_USER_VERBS_CMD_ALLOC_PD),
	CONST(IB_USER_VERBS_CMD_DEALLOC_PD),
	CONST(IB_USER_VERBS_CMD_CREATE_AH),
	CONST(IB_USER_VERBS_CMD_MODIFY_AH),
	CONST(IB_USER_VERBS_CMD_QUERY_AH),
	CONST(IB_USER_VERBS_CMD_DESTROY_AH),
	CONST(IB_USER_VERBS_CMD_REG_MR),
	CONST(IB_USER_VERBS_CMD_REG_SMR),
	CONST(IB_USER_VERBS_CMD_REREG_MR),
	CONST(IB_USER_VERBS_CMD_QUERY_MR),
	CONST(IB_USER_VERBS_CMD_DEREG_MR),
	CONST(IB_USER_VERBS_CMD_ALLOC_MW),
	CONST(IB_USER_VERBS_CMD_BIND_MW),
	CONST(IB_USER_VERBS_CMD_DEALLOC_MW),
	CONST(IB_USER_VERBS_CMD_CREATE_COMP_CHANNEL),
	CONST(IB_USER_VERBS_CMD_CREATE_CQ),
	CONST(IB_USER_VERBS_CMD_RESIZE_CQ),
	CONST(IB_USER_VERBS_CMD_DESTROY_CQ),
	CONST(IB_USER_VERBS_CMD_POLL_CQ),
	CONST(IB_USER_VERBS_CMD_PEEK_CQ),
	CONST(IB_USER_VERBS_CMD_REQ_NOTIFY_CQ),
	CONST(IB_USER_VERBS_CMD_CREATE_QP),
	CONST(IB_USER_VERBS_CMD_QUERY_QP),
	CONST(IB_USER_VERBS_CMD_MODIFY_QP),
	CONST(IB_USER_VERBS_CMD_DESTROY_QP),
	CONST(IB_USER_VERBS_CMD_POST_SEND),
	CONST(IB_USER_VERBS_CMD_POST_RECV),
	CONST(IB_USER_VERBS_CMD_ATTACH_MCAST),
	CONST(IB_USER_VERBS_CMD_DETACH_MCAST),
	CONST(IB_USER_VERBS_CMD_CREATE_SRQ),
	CONST(IB_USER_VERBS_CMD_MODIFY_SRQ),
	CONST(IB_USER_VERBS_CMD_QUERY_SRQ),
	CONST(IB_USER_VERBS_CMD_DESTROY_SRQ),
	CONST(IB_USER_VERBS_CMD_POST_SRQ_RECV),
	CONST(IB_USER_VERBS_CMD_OPEN_XRCD),
	CONST(IB_USER_VERBS_CMD_CLOSE_XRCD),
	CONST(IB_USER_VERBS_CMD_CREATE_XSRQ),
	CONST(IB_USER_VERBS_CMD_OPEN_QP),

	CONST(IB_USER_VERBS_EX_CMD_QUERY_DEVICE),
	CONST(IB_USER_VERBS_EX_CMD_CREATE_CQ),
	CONST(IB_USER_VERBS_EX_CMD_CREATE_QP),
	CONST(IB_USER_VERBS_EX_CMD_MODIFY_QP),
	CONST(IB_USER_VERBS_EX_CMD_CREATE_FLOW),
	CONST(IB_USER_VERBS_EX_CMD_DESTROY_FLOW),
	CONST(IB_USER_VERBS_EX_CMD_CREATE_WQ),
	CONST(IB_USER_VERBS_EX_CMD_MODIFY_WQ),
	CONST(IB_USER_VERBS_EX_CMD_DESTROY_WQ),
	CONST(IB_USER_VERBS_EX_CMD_CREATE_RWQ_IND_TBL),
	CONST(IB_USER_VERBS_EX_CMD_DESTROY_RWQ_IND_TBL),
	CONST(IB_USER_VERBS_EX_CMD_MODIFY_CQ),

	CONST(IB_UVERBS_CQ_FLAGS_TIMESTAMP_COMPLETION),
	CONST(IB_UVERBS_CQ_FLAGS_IGNORE_OVERRUN),
	CONST(IB_UVERBS_CREATE_QP_MASK_IND_TABLE),
	CONST(IB_UVERBS_CREATE_QP_SUP_COMP_MASK),

	CONST(IB_UVERBS_DEVICE_RESIZE_MAX_WR),
	CONST(IB_UVERBS_DEVICE_BAD_PKEY_CNTR),
	CONST(IB_UVERBS_DEVICE_BAD_QKEY_CNTR),
	CONST(IB_UVERBS_DEVICE_RAW_MULTI),
	CONST(IB_UVERBS_DEVICE_AUTO_PATH_MIG),
	CONST(IB_UVERBS_DEVICE_CHANGE_PHY_PORT),
	CONST(IB_UVERBS_DEVICE_UD_AV_PORT_ENFORCE),
	CONST(IB_UVERBS_DEVICE_CURR_QP_STATE_MOD),
	CONST(IB_UVERBS_DEVICE_SHUTDOWN_PORT),
	CONST(IB_UVERBS_DEVICE_PORT_ACTIVE_EVENT),
	CONST(IB_UVERBS_DEVICE_SYS_IMAGE_GUID),
	CONST(IB_UVERBS_DEVICE_RC_RNR_NAK_GEN),
	CONST(IB_UVERBS_DEVICE_SRQ_RESIZE),
	CONST(IB_UVERBS_DEVICE_N_NOTIFY_CQ),
	CONST(IB_UVERBS_DEVICE_MEM_WINDOW),
	CONST(IB_UVERBS_DEVICE_UD_IP_CSUM),
	CONST(IB_UVERBS_DEVICE_XRC),
	CONST(IB_UVERBS_DEVICE_MEM_MGT_EXTENSIONS),
	CONST(IB_UVERBS_DEVICE_MEM_WINDOW_TYPE_2A),
	CONST(IB_UVERBS_DEVICE_MEM_WINDOW_TYPE_2B),
	CONST(IB_UVERBS_DEVICE_RC_IP_CSUM),
	CONST(IB_UVERBS_DEVICE_RAW_IP_CSUM),
	CONST(IB_UVERBS_DEVICE_MANAGED_FLOW_STEERING),
	CONST(IB_UVERBS_DEVICE_RAW_SCATTER_FCS),
	CONST(IB_UVERBS_DEVICE_PCI_WRITE_END_PADDING),

	CONST(IB_UVERBS_RAW_PACKET_CAP_CVLAN_STRIPPING),
	CONST(IB_UVERBS_RAW_PACKET_CAP_SCATTER_FCS),
	CONST(IB_UVERBS_RAW_PACKET_CAP_IP_CSUM),
	CONST(IB_UVERBS_RAW_PACKET_CAP_DELAY_DROP),

	/* <rdma/ib_user_ioctl_verbs.h> */
	CONST(IB_UVERBS_ACCESS_OPTIONAL_FIRST),
	CONST(IB_UVERBS_ACCESS_OPTIONAL_LAST),
	CONST(IB_UVERBS_ACCESS_LOCAL_WRITE),
	CONST(IB_UVERBS_ACCESS_REMOTE_WRITE),
	CONST(IB_UVERBS_ACCESS_REMOTE_READ),
	CONST(IB_UVERBS_ACCESS_REMOTE_ATOMIC),
	CONST(IB_UVERBS_ACCESS_MW_BIND),
	CONST(IB_UVERBS_ACCESS_ZERO_BASED),
	CONST(IB_UVERBS_ACCESS_ON_DEMAND),
	CONST(IB_UVERBS_ACCESS_HUGETLB),
	CONST(IB_UVERBS_ACCESS_RELAXED_ORDERING),
	CONST(IB_UVERBS_ACCESS_OPTIONAL_RANGE),

	CONST(IB_UVERBS_SRQT_BASIC),
	CONST(IB_UVERBS_SRQT_XRC),
	CONST(IB_UVERBS_SRQT_TM),

	CONST(IB_UVERBS_QPT_RC),
	CONST(IB_UVERBS_QPT_UC),
	CONST(IB_UVERBS_QPT_UD),
	CONST(IB_UVERBS_QPT_RAW_PACKET),
	CONST(IB_UVERBS_QPT_XRC_INI),
	CONST(IB_UVERBS_QPT_XRC_TGT),
	CONST(IB_UVERBS_QPT_DRIVER),

	CONST(IB_UVERBS_WQT_RQ),
	CONST(IB_USER_VERBS_MAX_LOG_IND_TBL_SIZE),

	CONST(IBV_FLOW_SPEC_ETH),
	CONST(IBV_FLOW_SPEC_IPV4),
	CONST(IBV_FLOW_SPEC_IPV6),
	CONST(IBV_FLOW_SPEC_TCP),
	CONST(IBV_FLOW_SPEC_UDP),
	CONST(IBV_FLOW_SPEC_INNER),
	CONST(IBV_FLOW_SPEC_ACTION_TAG),
	CONST(IBV_FLOW_SPEC_ACTION_DROP),
	CONST(IBV_FLOW_ATTR_NORMAL),
	CONST(IBV_FLOW_ATTR_ALL_DEFAULT),
	CONST(IBV_FLOW_ATTR_MC_DEFAULT),
	CONST(IBV_FLOW_ATTR_SNIFFER),
	CONST(IBV_FLOW_ATTR_FLAGS_DONT_TRAP),
	CONST(IBV_FLOW_ATTR_FLAGS_EGRESS),

	CONST(IB_UVERBS_QP_CREATE_BLOCK_MULTICAST_LOOPBACK),
	CONST(IB_UVERBS_QP_CREATE_SCATTER_FCS),
	CONST(IB_UVERBS_QP_CREATE_CVLAN_STRIPPING),
	CONST(IB_UVERBS_QP_CREATE_PCI_WRITE_END_PADDING),
	CONST(IB_UVERBS_QP_CREATE_SQ_SIG_ALL),

	CONST(IB_UVERBS_PCF_SM),
	CONST(IB_UVERBS_PCF_NOTICE_SUP),
	CONST(IB_UVERBS_PCF_TRAP_SUP),
	CONST(IB_UVERBS_PCF_OPT_IPD_SUP),
	CONST(IB_UVERBS_PCF_AUTO_MIGR_SUP),
	CONST(IB_UVERBS_PCF_SL_MAP_SUP),
	CONST(IB_UVERBS_PCF_MKEY_NVRAM),
	CONST(IB_UVERBS_PCF_PKEY_NVRAM),
	CONST(IB_UVERBS_PCF_LED_INFO_SUP),
	CONST(IB_UVERBS_PCF_SM_DISABLED),
	CONST(IB_UVERBS_PCF_SYS_IMAGE_GUID_SUP),
	CONST(IB_UVERBS_PCF_PKEY_SW_EXT_PORT_TRAP_SUP),
	CONST(IB_UVERBS_PCF_EXTENDED_SPEEDS_SUP),
	CONST(IB_UVERBS_PCF_CM_SUP),
	CONST(IB_UVERBS_PCF_SNMP_TUNNEL_SUP),
	CONST(IB_UVERBS_PCF_REINIT_SUP),
	CONST(IB_UVERBS_PCF_DEVICE_MGMT_SUP),
	CONST(IB_UVERBS_PCF_VENDOR_CLASS_SUP),
	CONST(IB_UVERBS_PCF_DR_NOTICE_SUP),
	CONST(IB_UVERBS_PCF_CAP_MASK_NOTICE_SUP),
	CONST(IB_UVERBS_PCF_BOOT_MGMT_SUP),
	CONST(IB_UVERBS_PCF_LINK_LATENCY_SUP),
	CONST(IB_UVERBS_PCF_CLIENT_REG_SUP),
	CONST(IB_UVERBS_PCF_LINK_SPEED_WIDTH_TABLE_SUP),
	CONST(IB_UVERBS_PCF_VENDOR_SPECIFIC_MADS_TABLE_SUP),
	CONST(IB_UVERBS_PCF_MCAST_PKEY_TRAP_SUPPRESSION_SUP),
	CONST(IB_UVERBS_PCF_MCAST_FDB_TOP_SUP),
	CONST(IB_UVERBS_PCF_HIERARCHY_INFO_SUP),
	CONST(IB_UVERBS_PCF_IP_BASED_GIDS),

	CONST(IB_UVERBS_QPF_GRH_REQUIRED),
};

TABLE_ACCESSORS(golden_uverbs)
