/*
 * Golden layouts of the kernel's uverbs ioctl interface from the installed uapi headers
 * <rdma/rdma_user_ioctl_cmds.h> (the header and attribute of RDMA_VERBS_IOCTL),
 * <rdma/ib_user_ioctl_cmds.h> and <rdma/mlx5_user_ioctl_cmds.h> (object, method and attribute
 * ids), <rdma/ib_user_ioctl_verbs.h> and <rdma/mlx5_user_ioctl_verbs.h> (their values), and
 * struct ib_uverbs_sge of <rdma/ib_user_verbs.h>, for the emulator's mirrors
 * (hw/emu/src/abi/ioctl.rs, compared by hw/emu/tests/abi_layout.rs). The union members of
 * ib_uverbs_attr other than attr_data and data are not primary. The constants table also holds
 * each struct's _Alignof.
 */
#include <rdma/ib_user_ioctl_cmds.h>
#include <rdma/ib_user_ioctl_verbs.h>
#include <rdma/ib_user_verbs.h>
#include <rdma/mlx5_user_ioctl_cmds.h>
#include <rdma/mlx5_user_ioctl_verbs.h>
#include <rdma/rdma_user_ioctl_cmds.h>

#include "table.h"

static const struct golden_field fields[] = {
	FIELD(ib_uverbs_ioctl_hdr, length, 1),
	FIELD(ib_uverbs_ioctl_hdr, object_id, 1),
	FIELD(ib_uverbs_ioctl_hdr, method_id, 1),
	FIELD(ib_uverbs_ioctl_hdr, num_attrs, 1),
	FIELD(ib_uverbs_ioctl_hdr, reserved1, 1),
	FIELD(ib_uverbs_ioctl_hdr, driver_id, 1),
	FIELD(ib_uverbs_ioctl_hdr, reserved2, 1),
	TAIL(ib_uverbs_ioctl_hdr, attrs),

	FIELD(ib_uverbs_attr, attr_id, 1),
	FIELD(ib_uverbs_attr, len, 1),
	FIELD(ib_uverbs_attr, flags, 1),
	FIELD(ib_uverbs_attr, attr_data, 1),
	FIELD(ib_uverbs_attr, attr_data.enum_data.elem_id, 0),
	FIELD(ib_uverbs_attr, attr_data.enum_data.reserved, 0),
	FIELD(ib_uverbs_attr, attr_data.reserved, 0),
	FIELD(ib_uverbs_attr, data, 1),
	FIELD(ib_uverbs_attr, data_s64, 0),

	FIELD(ib_uverbs_sge, addr, 1),
	FIELD(ib_uverbs_sge, length, 1),
	FIELD(ib_uverbs_sge, lkey, 1),
};

/* Every struct above, in the same order; each also has an ALIGNOF constant below. */
#define STRUCTS(X)                \
	X(ib_uverbs_ioctl_hdr)    \
	X(ib_uverbs_attr)         \
	X(ib_uverbs_sge)

static const struct golden_struct structs[] = { STRUCTS(STRUCT_ENTRY) };

static const struct golden_value constants[] = {
	STRUCTS(ALIGNOF_ENTRY)

	CONST(RDMA_IOCTL_MAGIC),
	CONST(RDMA_VERBS_IOCTL),
	CONST(UVERBS_ATTR_F_MANDATORY),
	CONST(UVERBS_ATTR_F_VALID_OUTPUT),

	CONST(UVERBS_ID_NS_MASK),
	CONST(UVERBS_ID_NS_SHIFT),
	CONST(UVERBS_UDATA_DRIVER_DATA_NS),
	CONST(UVERBS_UDATA_DRIVER_DATA_FLAG),
	CONST(UVERBS_ATTR_UHW_IN),
	CONST(UVERBS_ATTR_UHW_OUT),

	CONST(UVERBS_OBJECT_DEVICE),
	CONST(UVERBS_OBJECT_PD),
	CONST(UVERBS_OBJECT_MR),
	CONST(UVERBS_OBJECT_DM),

	CONST(UVERBS_METHOD_INVOKE_WRITE),
	CONST(UVERBS_METHOD_GET_CONTEXT),
	CONST(UVERBS_METHOD_QUERY_GID_ENTRY),
	CONST(UVERBS_ATTR_WRITE_CMD),

	CONST(UVERBS_METHOD_DM_ALLOC),
	CONST(UVERBS_METHOD_DM_FREE),
	CONST(UVERBS_ATTR_ALLOC_DM_HANDLE),
	CONST(UVERBS_ATTR_ALLOC_DM_LENGTH),
	CONST(UVERBS_ATTR_ALLOC_DM_ALIGNMENT),
	CONST(UVERBS_ATTR_FREE_DM_HANDLE),

	CONST(UVERBS_METHOD_DM_MR_REG),
	CONST(UVERBS_METHOD_MR_DESTROY),
	CONST(UVERBS_METHOD_ADVISE_MR),
	CONST(UVERBS_ATTR_REG_DM_MR_HANDLE),
	CONST(UVERBS_ATTR_REG_DM_MR_OFFSET),
	CONST(UVERBS_ATTR_REG_DM_MR_LENGTH),
	CONST(UVERBS_ATTR_REG_DM_MR_PD_HANDLE),
	CONST(UVERBS_ATTR_REG_DM_MR_ACCESS_FLAGS),
	CONST(UVERBS_ATTR_REG_DM_MR_DM_HANDLE),
	CONST(UVERBS_ATTR_REG_DM_MR_RESP_LKEY),
	CONST(UVERBS_ATTR_REG_DM_MR_RESP_RKEY),
	CONST(UVERBS_ATTR_ADVISE_MR_PD_HANDLE),
	CONST(UVERBS_ATTR_ADVISE_MR_ADVICE),
	CONST(UVERBS_ATTR_ADVISE_MR_FLAGS),
	CONST(UVERBS_ATTR_ADVISE_MR_SGE_LIST),

	CONST(IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH),
	CONST(IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH_WRITE),
	CONST(IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT),
	CONST(IB_UVERBS_ADVISE_MR_FLAG_FLUSH),
	CONST(RDMA_DRIVER_MLX5),

	CONST(MLX5_IB_ATTR_ALLOC_DM_RESP_START_OFFSET),
	CONST(MLX5_IB_ATTR_ALLOC_DM_RESP_PAGE_INDEX),
	CONST(MLX5_IB_ATTR_ALLOC_DM_REQ_TYPE),
	CONST(MLX5_IB_OBJECT_DEVX),
	CONST(MLX5_IB_METHOD_DEVX_OTHER),

	CONST(MLX5_IB_UAPI_DM_TYPE_MEMIC),
	CONST(MLX5_IB_UAPI_DM_TYPE_STEERING_SW_ICM),
	CONST(MLX5_IB_UAPI_DM_TYPE_HEADER_MODIFY_SW_ICM),
	CONST(MLX5_IB_UAPI_DM_TYPE_HEADER_MODIFY_PATTERN_SW_ICM),
};

TABLE_ACCESSORS(golden_uverbs_ioctl)
