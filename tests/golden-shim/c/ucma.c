/*
 * Golden layouts of the kernel's rdma_ucm write() ABI (<rdma/rdma_user_cm.h>, ABI version
 * 4), the socket addresses its commands carry (<linux/in.h>, <linux/in6.h>,
 * <linux/socket.h>) and the path records of <rdma/ib_user_sa.h>, for the emulator's mirrors
 * (hw/emu/src/abi/ucma.rs, compared by hw/emu/tests/abi_layout.rs). The union members of
 * rdma_ucm_event_resp.param are listed by path and are not primary; path_data[] of
 * rdma_ucm_query_path_resp is a TAIL entry. The constants table also holds each struct's
 * _Alignof. librdmacm's own header (<rdma/rdma_cma.h>) redefines the port spaces, so its
 * values are in rdmacm.c.
 */
#include <linux/in.h>
#include <linux/in6.h>
#include <linux/socket.h>
#include <rdma/ib_user_sa.h>
#include <rdma/rdma_user_cm.h>

#include "table.h"

static const struct golden_field fields[] = {
	FIELD(rdma_ucm_cmd_hdr, cmd, 1),
	FIELD(rdma_ucm_cmd_hdr, in, 1),
	FIELD(rdma_ucm_cmd_hdr, out, 1),

	FIELD(sockaddr_in, sin_family, 1),
	FIELD(sockaddr_in, sin_port, 1),
	FIELD(sockaddr_in, sin_addr, 1),
	FIELD(sockaddr_in, __pad, 1),
	FIELD(sockaddr_in6, sin6_family, 1),
	FIELD(sockaddr_in6, sin6_port, 1),
	FIELD(sockaddr_in6, sin6_flowinfo, 1),
	FIELD(sockaddr_in6, sin6_addr, 1),
	FIELD(sockaddr_in6, sin6_scope_id, 1),
	FIELD(__kernel_sockaddr_storage, ss_family, 1),
	FIELD(__kernel_sockaddr_storage, __data, 1),

	FIELD(rdma_ucm_create_id, uid, 1),
	FIELD(rdma_ucm_create_id, response, 1),
	FIELD(rdma_ucm_create_id, ps, 1),
	FIELD(rdma_ucm_create_id, qp_type, 1),
	FIELD(rdma_ucm_create_id, reserved, 1),
	FIELD(rdma_ucm_create_id_resp, id, 1),
	FIELD(rdma_ucm_destroy_id, response, 1),
	FIELD(rdma_ucm_destroy_id, id, 1),
	FIELD(rdma_ucm_destroy_id, reserved, 1),
	FIELD(rdma_ucm_destroy_id_resp, events_reported, 1),

	FIELD(rdma_ucm_bind_ip, response, 1),
	FIELD(rdma_ucm_bind_ip, addr, 1),
	FIELD(rdma_ucm_bind_ip, id, 1),
	FIELD(rdma_ucm_bind, id, 1),
	FIELD(rdma_ucm_bind, addr_size, 1),
	FIELD(rdma_ucm_bind, reserved, 1),
	FIELD(rdma_ucm_bind, addr, 1),
	FIELD(rdma_ucm_resolve_ip, src_addr, 1),
	FIELD(rdma_ucm_resolve_ip, dst_addr, 1),
	FIELD(rdma_ucm_resolve_ip, id, 1),
	FIELD(rdma_ucm_resolve_ip, timeout_ms, 1),
	FIELD(rdma_ucm_resolve_addr, id, 1),
	FIELD(rdma_ucm_resolve_addr, timeout_ms, 1),
	FIELD(rdma_ucm_resolve_addr, src_size, 1),
	FIELD(rdma_ucm_resolve_addr, dst_size, 1),
	FIELD(rdma_ucm_resolve_addr, reserved, 1),
	FIELD(rdma_ucm_resolve_addr, src_addr, 1),
	FIELD(rdma_ucm_resolve_addr, dst_addr, 1),
	FIELD(rdma_ucm_resolve_route, id, 1),
	FIELD(rdma_ucm_resolve_route, timeout_ms, 1),

	FIELD(rdma_ucm_query, response, 1),
	FIELD(rdma_ucm_query, id, 1),
	FIELD(rdma_ucm_query, option, 1),
	FIELD(ib_user_path_rec, dgid, 1),
	FIELD(ib_user_path_rec, sgid, 1),
	FIELD(ib_user_path_rec, dlid, 1),
	FIELD(ib_user_path_rec, slid, 1),
	FIELD(ib_user_path_rec, raw_traffic, 1),
	FIELD(ib_user_path_rec, flow_label, 1),
	FIELD(ib_user_path_rec, reversible, 1),
	FIELD(ib_user_path_rec, mtu, 1),
	FIELD(ib_user_path_rec, pkey, 1),
	FIELD(ib_user_path_rec, hop_limit, 1),
	FIELD(ib_user_path_rec, traffic_class, 1),
	FIELD(ib_user_path_rec, numb_path, 1),
	FIELD(ib_user_path_rec, sl, 1),
	FIELD(ib_user_path_rec, mtu_selector, 1),
	FIELD(ib_user_path_rec, rate_selector, 1),
	FIELD(ib_user_path_rec, rate, 1),
	FIELD(ib_user_path_rec, packet_life_time_selector, 1),
	FIELD(ib_user_path_rec, packet_life_time, 1),
	FIELD(ib_user_path_rec, preference, 1),
	FIELD(rdma_ucm_query_route_resp, node_guid, 1),
	FIELD(rdma_ucm_query_route_resp, ib_route, 1),
	FIELD(rdma_ucm_query_route_resp, src_addr, 1),
	FIELD(rdma_ucm_query_route_resp, dst_addr, 1),
	FIELD(rdma_ucm_query_route_resp, num_paths, 1),
	FIELD(rdma_ucm_query_route_resp, port_num, 1),
	FIELD(rdma_ucm_query_route_resp, reserved, 1),
	FIELD(rdma_ucm_query_route_resp, ibdev_index, 1),
	FIELD(rdma_ucm_query_route_resp, reserved1, 1),
	FIELD(rdma_ucm_query_addr_resp, node_guid, 1),
	FIELD(rdma_ucm_query_addr_resp, port_num, 1),
	FIELD(rdma_ucm_query_addr_resp, reserved, 1),
	FIELD(rdma_ucm_query_addr_resp, pkey, 1),
	FIELD(rdma_ucm_query_addr_resp, src_size, 1),
	FIELD(rdma_ucm_query_addr_resp, dst_size, 1),
	FIELD(rdma_ucm_query_addr_resp, src_addr, 1),
	FIELD(rdma_ucm_query_addr_resp, dst_addr, 1),
	FIELD(rdma_ucm_query_addr_resp, ibdev_index, 1),
	FIELD(rdma_ucm_query_addr_resp, reserved1, 1),
	FIELD(rdma_ucm_query_path_resp, num_paths, 1),
	FIELD(rdma_ucm_query_path_resp, reserved, 1),
	TAIL(rdma_ucm_query_path_resp, path_data),
	FIELD(ib_path_rec_data, flags, 1),
	FIELD(ib_path_rec_data, reserved, 1),
	FIELD(ib_path_rec_data, path_rec, 1),

	FIELD(rdma_ucm_conn_param, qp_num, 1),
	FIELD(rdma_ucm_conn_param, qkey, 1),
	FIELD(rdma_ucm_conn_param, private_data, 1),
	FIELD(rdma_ucm_conn_param, private_data_len, 1),
	FIELD(rdma_ucm_conn_param, srq, 1),
	FIELD(rdma_ucm_conn_param, responder_resources, 1),
	FIELD(rdma_ucm_conn_param, initiator_depth, 1),
	FIELD(rdma_ucm_conn_param, flow_control, 1),
	FIELD(rdma_ucm_conn_param, retry_count, 1),
	FIELD(rdma_ucm_conn_param, rnr_retry_count, 1),
	FIELD(rdma_ucm_conn_param, valid, 1),
	FIELD(rdma_ucm_ud_param, qp_num, 1),
	FIELD(rdma_ucm_ud_param, qkey, 1),
	FIELD(rdma_ucm_ud_param, ah_attr, 1),
	FIELD(rdma_ucm_ud_param, private_data, 1),
	FIELD(rdma_ucm_ud_param, private_data_len, 1),
	FIELD(rdma_ucm_ud_param, reserved, 1),
	FIELD(rdma_ucm_ece, vendor_id, 1),
	FIELD(rdma_ucm_ece, attr_mod, 1),
	FIELD(rdma_ucm_connect, conn_param, 1),
	FIELD(rdma_ucm_connect, id, 1),
	FIELD(rdma_ucm_connect, reserved, 1),
	FIELD(rdma_ucm_connect, ece, 1),
	FIELD(rdma_ucm_listen, id, 1),
	FIELD(rdma_ucm_listen, backlog, 1),
	FIELD(rdma_ucm_accept, uid, 1),
	FIELD(rdma_ucm_accept, conn_param, 1),
	FIELD(rdma_ucm_accept, id, 1),
	FIELD(rdma_ucm_accept, reserved, 1),
	FIELD(rdma_ucm_accept, ece, 1),
	FIELD(rdma_ucm_reject, id, 1),
	FIELD(rdma_ucm_reject, private_data_len, 1),
	FIELD(rdma_ucm_reject, reason, 1),
	FIELD(rdma_ucm_reject, reserved, 1),
	FIELD(rdma_ucm_reject, private_data, 1),
	FIELD(rdma_ucm_disconnect, id, 1),
	FIELD(rdma_ucm_init_qp_attr, response, 1),
	FIELD(rdma_ucm_init_qp_attr, id, 1),
	FIELD(rdma_ucm_init_qp_attr, qp_state, 1),
	FIELD(rdma_ucm_notify, id, 1),
	FIELD(rdma_ucm_notify, event, 1),
	FIELD(rdma_ucm_join_ip_mcast, response, 1),
	FIELD(rdma_ucm_join_ip_mcast, uid, 1),
	FIELD(rdma_ucm_join_ip_mcast, addr, 1),
	FIELD(rdma_ucm_join_ip_mcast, id, 1),
	FIELD(rdma_ucm_join_mcast, response, 1),
	FIELD(rdma_ucm_join_mcast, uid, 1),
	FIELD(rdma_ucm_join_mcast, id, 1),
	FIELD(rdma_ucm_join_mcast, addr_size, 1),
	FIELD(rdma_ucm_join_mcast, join_flags, 1),
	FIELD(rdma_ucm_join_mcast, addr, 1),
	FIELD(rdma_ucm_get_event, response, 1),
	FIELD(rdma_ucm_event_resp, uid, 1),
	FIELD(rdma_ucm_event_resp, id, 1),
	FIELD(rdma_ucm_event_resp, event, 1),
	FIELD(rdma_ucm_event_resp, status, 1),
	FIELD(rdma_ucm_event_resp, param, 1),
	FIELD(rdma_ucm_event_resp, param.conn, 0),
	FIELD(rdma_ucm_event_resp, param.ud, 0),
	FIELD(rdma_ucm_event_resp, reserved, 1),
	FIELD(rdma_ucm_event_resp, ece, 1),
	FIELD(rdma_ucm_set_option, optval, 1),
	FIELD(rdma_ucm_set_option, id, 1),
	FIELD(rdma_ucm_set_option, level, 1),
	FIELD(rdma_ucm_set_option, optname, 1),
	FIELD(rdma_ucm_set_option, optlen, 1),
	FIELD(rdma_ucm_migrate_id, response, 1),
	FIELD(rdma_ucm_migrate_id, id, 1),
	FIELD(rdma_ucm_migrate_id, fd, 1),
	FIELD(rdma_ucm_migrate_resp, events_reported, 1),
};

/* Every struct above, in the same order; each also has an ALIGNOF constant below. */
#define STRUCTS(X)                          \
	X(rdma_ucm_cmd_hdr)                 \
	X(sockaddr_in)                      \
	X(sockaddr_in6)                     \
	X(__kernel_sockaddr_storage)        \
	X(rdma_ucm_create_id)               \
	X(rdma_ucm_create_id_resp)          \
	X(rdma_ucm_destroy_id)              \
	X(rdma_ucm_destroy_id_resp)         \
	X(rdma_ucm_bind_ip)                 \
	X(rdma_ucm_bind)                    \
	X(rdma_ucm_resolve_ip)              \
	X(rdma_ucm_resolve_addr)            \
	X(rdma_ucm_resolve_route)           \
	X(rdma_ucm_query)                   \
	X(ib_user_path_rec)                 \
	X(rdma_ucm_query_route_resp)        \
	X(rdma_ucm_query_addr_resp)         \
	X(rdma_ucm_query_path_resp)         \
	X(ib_path_rec_data)                 \
	X(rdma_ucm_conn_param)              \
	X(rdma_ucm_ud_param)                \
	X(rdma_ucm_ece)                     \
	X(rdma_ucm_connect)                 \
	X(rdma_ucm_listen)                  \
	X(rdma_ucm_accept)                  \
	X(rdma_ucm_reject)                  \
	X(rdma_ucm_disconnect)              \
	X(rdma_ucm_init_qp_attr)            \
	X(rdma_ucm_notify)                  \
	X(rdma_ucm_join_ip_mcast)           \
	X(rdma_ucm_join_mcast)              \
	X(rdma_ucm_get_event)               \
	X(rdma_ucm_event_resp)              \
	X(rdma_ucm_set_option)              \
	X(rdma_ucm_migrate_id)              \
	X(rdma_ucm_migrate_resp)

static const struct golden_struct structs[] = { STRUCTS(STRUCT_ENTRY) };

static const struct golden_value constants[] = {
	STRUCTS(ALIGNOF_ENTRY)

	CONST(RDMA_USER_CM_ABI_VERSION),
	CONST(RDMA_MAX_PRIVATE_DATA),

	CONST(RDMA_USER_CM_CMD_CREATE_ID),
	CONST(RDMA_USER_CM_CMD_DESTROY_ID),
	CONST(RDMA_USER_CM_CMD_BIND_IP),
	CONST(RDMA_USER_CM_CMD_RESOLVE_IP),
	CONST(RDMA_USER_CM_CMD_RESOLVE_ROUTE),
	CONST(RDMA_USER_CM_CMD_QUERY_ROUTE),
	CONST(RDMA_USER_CM_CMD_CONNECT),
	CONST(RDMA_USER_CM_CMD_LISTEN),
	CONST(RDMA_USER_CM_CMD_ACCEPT),
	CONST(RDMA_USER_CM_CMD_REJECT),
	CONST(RDMA_USER_CM_CMD_DISCONNECT),
	CONST(RDMA_USER_CM_CMD_INIT_QP_ATTR),
	CONST(RDMA_USER_CM_CMD_GET_EVENT),
	CONST(RDMA_USER_CM_CMD_GET_OPTION),
	CONST(RDMA_USER_CM_CMD_SET_OPTION),
	CONST(RDMA_USER_CM_CMD_NOTIFY),
	CONST(RDMA_USER_CM_CMD_JOIN_IP_MCAST),
	CONST(RDMA_USER_CM_CMD_LEAVE_MCAST),
	CONST(RDMA_USER_CM_CMD_MIGRATE_ID),
	CONST(RDMA_USER_CM_CMD_QUERY),
	CONST(RDMA_USER_CM_CMD_BIND),
	CONST(RDMA_USER_CM_CMD_RESOLVE_ADDR),
	CONST(RDMA_USER_CM_CMD_JOIN_MCAST),

	CONST(RDMA_PS_IPOIB),
	CONST(RDMA_PS_IB),
	CONST(RDMA_PS_TCP),
	CONST(RDMA_PS_UDP),

	CONST(RDMA_USER_CM_QUERY_ADDR),
	CONST(RDMA_USER_CM_QUERY_PATH),
	CONST(RDMA_USER_CM_QUERY_GID),

	CONST(RDMA_MC_JOIN_FLAG_FULLMEMBER),
	CONST(RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER),
	CONST(RDMA_MC_JOIN_FLAG_RESERVED),

	CONST(RDMA_OPTION_ID),
	CONST(RDMA_OPTION_IB),
	CONST(RDMA_OPTION_ID_TOS),
	CONST(RDMA_OPTION_ID_REUSEADDR),
	CONST(RDMA_OPTION_ID_AFONLY),
	CONST(RDMA_OPTION_ID_ACK_TIMEOUT),
	CONST(RDMA_OPTION_IB_PATH),

	CONST(IB_PATH_GMP),
	CONST(IB_PATH_PRIMARY),
	CONST(IB_PATH_ALTERNATE),
	CONST(IB_PATH_OUTBOUND),
	CONST(IB_PATH_INBOUND),
	CONST(IB_PATH_INBOUND_REVERSE),
	CONST(IB_PATH_BIDIRECTIONAL),
};

TABLE_ACCESSORS(golden_ucma)
