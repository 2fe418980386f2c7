/*
 * Golden values of librdmacm's and libibverbs' own headers that the emulator's rdma_cm
 * answers use (hw/emu/src/abi/ucma.rs): the event numbers and AF_IB port spaces of
 * <rdma/rdma_cma.h>, struct sockaddr_ib and AF_IB of <infiniband/ib.h>, the packed path
 * record of <infiniband/sa.h> that librdmacm's ucma_convert_path reads, and the two
 * async event numbers rdma_notify passes on (<infiniband/verbs.h>). The constants table
 * also holds each struct's _Alignof.
 */
#include <infiniband/ib.h>
#include <infiniband/sa.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "table.h"

static const struct golden_field fields[] = {
	FIELD(sockaddr_ib, sib_family, 1),
	FIELD(sockaddr_ib, sib_pkey, 1),
	FIELD(sockaddr_ib, sib_flowinfo, 1),
	FIELD(sockaddr_ib, sib_addr, 1),
	FIELD(sockaddr_ib, sib_sid, 1),
	FIELD(sockaddr_ib, sib_sid_mask, 1),
	FIELD(sockaddr_ib, sib_scope_id, 1),

	FIELD(ibv_path_record, service_id, 1),
	FIELD(ibv_path_record, dgid, 1),
	FIELD(ibv_path_record, sgid, 1),
	FIELD(ibv_path_record, dlid, 1),
	FIELD(ibv_path_record, slid, 1),
	FIELD(ibv_path_record, flowlabel_hoplimit, 1),
	FIELD(ibv_path_record, tclass, 1),
	FIELD(ibv_path_record, reversible_numpath, 1),
	FIELD(ibv_path_record, pkey, 1),
	FIELD(ibv_path_record, qosclass_sl, 1),
	FIELD(ibv_path_record, mtu, 1),
	FIELD(ibv_path_record, rate, 1),
	FIELD(ibv_path_record, packetlifetime, 1),
	FIELD(ibv_path_record, preference, 1),
	FIELD(ibv_path_record, reserved, 1),
};

#define STRUCTS(X)            \
	X(sockaddr_ib)        \
	X(ibv_path_record)

static const struct golden_struct structs[] = { STRUCTS(STRUCT_ENTRY) };

static const struct golden_value constants[] = {
	STRUCTS(ALIGNOF_ENTRY)

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

	CONST(RDMA_IB_IP_PS_MASK),
	CONST(RDMA_IB_IP_PS_TCP),
	CONST(RDMA_IB_IP_PS_UDP),
	CONST(RDMA_IB_PS_IB),
	CONST(RDMA_IB_IP_PORT_MASK),
	CONST(RDMA_UDP_QKEY),
	CONST(AF_IB),

	CONST(IBV_EVENT_COMM_EST),
	CONST(IBV_EVENT_PATH_MIG),
};

TABLE_ACCESSORS(golden_rdmacm)
