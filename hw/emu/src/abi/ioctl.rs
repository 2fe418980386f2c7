//! The uverbs ioctl interface (`RDMA_VERBS_IOCTL`): the header and attribute of
//! `<rdma/rdma_user_ioctl_cmds.h>`, the object, method and attribute ids of
//! `<rdma/ib_user_ioctl_cmds.h>` and `<rdma/mlx5_user_ioctl_cmds.h>` the emulated kernel
//! answers or names, and the values of `<rdma/ib_user_ioctl_verbs.h>` and
//! `<rdma/mlx5_user_ioctl_verbs.h>` those carry.
//!
//! **Transport.** `ioctl(cmd_fd, RDMA_VERBS_IOCTL, hdr)`: [`ib_uverbs_ioctl_hdr`] names an
//! object and one of its methods and is followed by `num_attrs` [`ib_uverbs_attr`]s. An
//! attribute's `data` is the value itself when `len` is at most 8 (inline), else the user
//! address of `len` bytes; for an object handle (`len` 0) it is the handle, and for a new
//! object the kernel writes the new handle there. Output attributes point at user memory the
//! kernel writes, and it sets [`UVERBS_ATTR_F_VALID_OUTPUT`] in the `flags` of each one it
//! wrote (kernel `uverbs_ioctl.c`: `ib_uverbs_ioctl`, `uverbs_process_attr`,
//! `uverbs_copy_to`; libibverbs `cmd_ioctl.c` `execute_ioctl`, `cmd_ioctl.h` `fill_attr_*`).
//! Attribute ids with bit 12 ([`UVERBS_ID_NS_SHIFT`]) set are the driver's (mlx5's).
//!
//! Struct and field names are the header's; `hw/emu/tests/abi_layout.rs` compares every
//! struct, field and constant here with it.
#![allow(
    non_camel_case_types,
    reason = "the C struct names, so the layout test and readers match them to the header"
)]
#![allow(
    missing_docs,
    reason = "fields carry the header's names and meaning; each struct's doc names its C \
              counterpart, and fields are documented where the header's name is not enough"
)]

use zerocopy::{FromBytes, Immutable, IntoBytes};

/// `struct ib_uverbs_ioctl_hdr`: what `RDMA_VERBS_IOCTL`'s argument points at; the
/// attributes (`attrs[]`) follow it.
#[repr(C, align(8))]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable)]
pub struct ib_uverbs_ioctl_hdr {
    /// The header and the attributes, in bytes (`ib_uverbs_ioctl`: must be exactly that and
    /// at most a page, else `EINVAL`).
    pub length: u16,
    pub object_id: u16,
    pub method_id: u16,
    pub num_attrs: u16,
    /// Must be zero (`EPROTONOSUPPORT`).
    pub reserved1: u64,
    /// `enum rdma_driver_id` of the device ([`RDMA_DRIVER_MLX5`]; another is `EINVAL`).
    pub driver_id: u32,
    /// Must be zero (`EPROTONOSUPPORT`).
    pub reserved2: u32,
}

/// `struct ib_uverbs_attr`: one attribute of a method call.
#[repr(C, align(8))]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable)]
pub struct ib_uverbs_attr {
    pub attr_id: u16,
    /// Bytes of a pointer attribute (0 for an object handle).
    pub len: u16,
    /// `UVERBS_ATTR_F_*`.
    pub flags: u16,
    /// The union `attr_data`: `enum_data.elem_id` (byte 0) and `enum_data.reserved` (byte 1)
    /// of an enum attribute, else `reserved`, which must be zero.
    pub attr_data: u16,
    /// The value (inline up to 8 bytes), the user address of it, or a handle (the union
    /// `data` / `data_s64`).
    pub data: u64,
}

/// `struct ib_uverbs_sge` (`<rdma/ib_user_verbs.h>`): an element of
/// [`UVERBS_ATTR_ADVISE_MR_SGE_LIST`] (the layout of `struct ibv_sge`).
#[repr(C, align(8))]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable)]
pub struct ib_uverbs_sge {
    pub addr: u64,
    pub length: u32,
    pub lkey: u32,
}

// `<rdma/rdma_user_ioctl_cmds.h>`.
/// `RDMA_IOCTL_MAGIC`.
pub const RDMA_IOCTL_MAGIC: u32 = 0x1b;
/// `RDMA_VERBS_IOCTL`: `_IOWR(RDMA_IOCTL_MAGIC, 1, struct ib_uverbs_ioctl_hdr)`; any other
/// request on the uverbs fd is `ENOTTY` (`ib_uverbs_ioctl`: `-ENOIOCTLCMD`).
pub const RDMA_VERBS_IOCTL: u64 = 0xc018_1b01;
/// `UVERBS_ATTR_F_MANDATORY`: a kernel without the attribute must refuse the call
/// (`EPROTONOSUPPORT`) rather than ignore it.
pub const UVERBS_ATTR_F_MANDATORY: u16 = 1 << 0;
/// `UVERBS_ATTR_F_VALID_OUTPUT`: set by the kernel in an output attribute it wrote.
pub const UVERBS_ATTR_F_VALID_OUTPUT: u16 = 1 << 1;

// `<rdma/ib_user_ioctl_cmds.h>`.
/// `UVERBS_ID_NS_MASK`: the namespace bits of an object, method or attribute id.
pub const UVERBS_ID_NS_MASK: u16 = 0xf000;
/// `UVERBS_ID_NS_SHIFT`.
pub const UVERBS_ID_NS_SHIFT: u16 = 12;
/// `UVERBS_UDATA_DRIVER_DATA_NS`: the driver's namespace.
pub const UVERBS_UDATA_DRIVER_DATA_NS: u16 = 1;
/// `UVERBS_UDATA_DRIVER_DATA_FLAG`: the first id of the driver's namespace.
pub const UVERBS_UDATA_DRIVER_DATA_FLAG: u64 = 1 << UVERBS_ID_NS_SHIFT;
/// `UVERBS_ATTR_UHW_IN`: the driver's request (the write interface's driver data).
pub const UVERBS_ATTR_UHW_IN: u16 = 1 << UVERBS_ID_NS_SHIFT;
/// `UVERBS_ATTR_UHW_OUT`: the driver's response.
pub const UVERBS_ATTR_UHW_OUT: u16 = UVERBS_ATTR_UHW_IN + 1;

// `enum uverbs_default_objects`.
/// `UVERBS_OBJECT_DEVICE`.
pub const UVERBS_OBJECT_DEVICE: u16 = 0;
/// `UVERBS_OBJECT_PD`.
pub const UVERBS_OBJECT_PD: u16 = 1;
/// `UVERBS_OBJECT_MR`.
pub const UVERBS_OBJECT_MR: u16 = 7;
/// `UVERBS_OBJECT_DM`.
pub const UVERBS_OBJECT_DM: u16 = 14;

// `enum uverbs_methods_device`.
/// `UVERBS_METHOD_INVOKE_WRITE`: a write command over ioctl (libibverbs probes it once per
/// context, `has_ioctl_write`).
pub const UVERBS_METHOD_INVOKE_WRITE: u16 = 0;
/// `UVERBS_METHOD_GET_CONTEXT`.
pub const UVERBS_METHOD_GET_CONTEXT: u16 = 3;
/// `UVERBS_METHOD_QUERY_GID_ENTRY` (`ibv_query_gid_ex`).
pub const UVERBS_METHOD_QUERY_GID_ENTRY: u16 = 6;
/// `UVERBS_ATTR_WRITE_CMD` (`enum uverbs_attrs_invoke_write_cmd_attr_ids`).
pub const UVERBS_ATTR_WRITE_CMD: u16 = 2;

// `enum uverbs_methods_dm` and their attributes.
/// `UVERBS_METHOD_DM_ALLOC` (`ibv_alloc_dm`).
pub const UVERBS_METHOD_DM_ALLOC: u16 = 0;
/// `UVERBS_METHOD_DM_FREE` (`ibv_free_dm`).
pub const UVERBS_METHOD_DM_FREE: u16 = 1;
/// `UVERBS_ATTR_ALLOC_DM_HANDLE`: the new allocation's handle (out).
pub const UVERBS_ATTR_ALLOC_DM_HANDLE: u16 = 0;
/// `UVERBS_ATTR_ALLOC_DM_LENGTH`: `u64` bytes.
pub const UVERBS_ATTR_ALLOC_DM_LENGTH: u16 = 1;
/// `UVERBS_ATTR_ALLOC_DM_ALIGNMENT`: `u32` log2 of the alignment.
pub const UVERBS_ATTR_ALLOC_DM_ALIGNMENT: u16 = 2;
/// `UVERBS_ATTR_FREE_DM_HANDLE`.
pub const UVERBS_ATTR_FREE_DM_HANDLE: u16 = 0;

// `enum uverbs_methods_mr` and the attributes of the methods answered.
/// `UVERBS_METHOD_DM_MR_REG` (`ibv_reg_dm_mr`).
pub const UVERBS_METHOD_DM_MR_REG: u16 = 0;
/// `UVERBS_METHOD_MR_DESTROY` (`ibv_dereg_mr`; libibverbs falls back to `DEREG_MR`).
pub const UVERBS_METHOD_MR_DESTROY: u16 = 1;
/// `UVERBS_METHOD_ADVISE_MR` (`ibv_advise_mr`).
pub const UVERBS_METHOD_ADVISE_MR: u16 = 2;
/// `UVERBS_ATTR_REG_DM_MR_HANDLE`: the new MR's handle (out).
pub const UVERBS_ATTR_REG_DM_MR_HANDLE: u16 = 0;
/// `UVERBS_ATTR_REG_DM_MR_OFFSET`: `u64` into the allocation.
pub const UVERBS_ATTR_REG_DM_MR_OFFSET: u16 = 1;
/// `UVERBS_ATTR_REG_DM_MR_LENGTH`: `u64`.
pub const UVERBS_ATTR_REG_DM_MR_LENGTH: u16 = 2;
/// `UVERBS_ATTR_REG_DM_MR_PD_HANDLE`.
pub const UVERBS_ATTR_REG_DM_MR_PD_HANDLE: u16 = 3;
/// `UVERBS_ATTR_REG_DM_MR_ACCESS_FLAGS`: `IB_UVERBS_ACCESS_*` (4 or 8 bytes).
pub const UVERBS_ATTR_REG_DM_MR_ACCESS_FLAGS: u16 = 4;
/// `UVERBS_ATTR_REG_DM_MR_DM_HANDLE`.
pub const UVERBS_ATTR_REG_DM_MR_DM_HANDLE: u16 = 5;
/// `UVERBS_ATTR_REG_DM_MR_RESP_LKEY`: `u32` (out).
pub const UVERBS_ATTR_REG_DM_MR_RESP_LKEY: u16 = 6;
/// `UVERBS_ATTR_REG_DM_MR_RESP_RKEY`: `u32` (out).
pub const UVERBS_ATTR_REG_DM_MR_RESP_RKEY: u16 = 7;
/// `UVERBS_ATTR_ADVISE_MR_PD_HANDLE`.
pub const UVERBS_ATTR_ADVISE_MR_PD_HANDLE: u16 = 0;
/// `UVERBS_ATTR_ADVISE_MR_ADVICE`: `enum ib_uverbs_advise_mr_advice` (8 bytes).
pub const UVERBS_ATTR_ADVISE_MR_ADVICE: u16 = 1;
/// `UVERBS_ATTR_ADVISE_MR_FLAGS`: `IB_UVERBS_ADVISE_MR_FLAG_*` (4 or 8 bytes).
pub const UVERBS_ATTR_ADVISE_MR_FLAGS: u16 = 2;
/// `UVERBS_ATTR_ADVISE_MR_SGE_LIST`: [`ib_uverbs_sge`]s.
pub const UVERBS_ATTR_ADVISE_MR_SGE_LIST: u16 = 3;

// `<rdma/ib_user_ioctl_verbs.h>`.
/// `IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH`.
pub const IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH: u32 = 0;
/// `IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH_WRITE`.
pub const IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH_WRITE: u32 = 1;
/// `IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT`.
pub const IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT: u32 = 2;
/// `IB_UVERBS_ADVISE_MR_FLAG_FLUSH`: return once the pages are in.
pub const IB_UVERBS_ADVISE_MR_FLAG_FLUSH: u32 = 1 << 0;
/// `RDMA_DRIVER_MLX5` (`enum rdma_driver_id`): the `driver_id` libmlx5's contexts send.
pub const RDMA_DRIVER_MLX5: u32 = 1;

// `<rdma/mlx5_user_ioctl_cmds.h>`.
/// `MLX5_IB_ATTR_ALLOC_DM_RESP_START_OFFSET`: `u64` (out) the allocation's offset in its
/// first mapped page.
pub const MLX5_IB_ATTR_ALLOC_DM_RESP_START_OFFSET: u16 = 1 << UVERBS_ID_NS_SHIFT;
/// `MLX5_IB_ATTR_ALLOC_DM_RESP_PAGE_INDEX`: `u16` (out) the page index to `mmap` it at
/// (command `MLX5_IB_MMAP_DEVICE_MEM`, the index in the extended index bits).
pub const MLX5_IB_ATTR_ALLOC_DM_RESP_PAGE_INDEX: u16 = MLX5_IB_ATTR_ALLOC_DM_RESP_START_OFFSET + 1;
/// `MLX5_IB_ATTR_ALLOC_DM_REQ_TYPE`: `enum mlx5_ib_uapi_dm_type` (8 bytes, optional:
/// MEMIC when absent).
pub const MLX5_IB_ATTR_ALLOC_DM_REQ_TYPE: u16 = MLX5_IB_ATTR_ALLOC_DM_RESP_START_OFFSET + 2;
/// `MLX5_IB_OBJECT_DEVX`: DEVX's general commands (`mlx5dv_devx_general_cmd`).
pub const MLX5_IB_OBJECT_DEVX: u16 = 1 << UVERBS_ID_NS_SHIFT;
/// `MLX5_IB_METHOD_DEVX_OTHER`: a general PRM command (`QUERY_HCA_CAP` ...).
pub const MLX5_IB_METHOD_DEVX_OTHER: u16 = 1 << UVERBS_ID_NS_SHIFT;

// `enum mlx5_ib_uapi_dm_type` (`<rdma/mlx5_user_ioctl_verbs.h>`).
/// `MLX5_IB_UAPI_DM_TYPE_MEMIC`: on-chip memory (`ibv_alloc_dm`).
pub const MLX5_IB_UAPI_DM_TYPE_MEMIC: u64 = 0;
/// `MLX5_IB_UAPI_DM_TYPE_STEERING_SW_ICM`.
pub const MLX5_IB_UAPI_DM_TYPE_STEERING_SW_ICM: u64 = 1;
/// `MLX5_IB_UAPI_DM_TYPE_HEADER_MODIFY_SW_ICM`.
pub const MLX5_IB_UAPI_DM_TYPE_HEADER_MODIFY_SW_ICM: u64 = 2;
/// `MLX5_IB_UAPI_DM_TYPE_HEADER_MODIFY_PATTERN_SW_ICM`.
pub const MLX5_IB_UAPI_DM_TYPE_HEADER_MODIFY_PATTERN_SW_ICM: u64 = 3;
