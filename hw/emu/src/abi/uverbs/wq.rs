//! Receive work queues and their indirection tables (`ibv_create_wq`, `ibv_modify_wq`,
//! `ibv_destroy_wq`, `ibv_create_rwq_ind_table`, `ibv_destroy_rwq_ind_table`): the extended
//! commands `IB_USER_VERBS_EX_CMD_CREATE_WQ` .. `DESTROY_RWQ_IND_TBL`.

use zerocopy::{FromBytes, Immutable, IntoBytes};

/// `IB_UVERBS_WQT_RQ`: the one work queue type, a receive queue.
pub const IB_UVERBS_WQT_RQ: u32 = 0;
/// `IB_USER_VERBS_MAX_LOG_IND_TBL_SIZE`: the largest table the kernel reads (2^13 entries).
pub const IB_USER_VERBS_MAX_LOG_IND_TBL_SIZE: u32 = 0x0d;

/// `struct ib_uverbs_ex_create_wq`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable)]
pub struct ib_uverbs_ex_create_wq {
    pub comp_mask: u32,
    /// `IB_UVERBS_WQT_*`.
    pub wq_type: u32,
    pub user_handle: u64,
    pub pd_handle: u32,
    pub cq_handle: u32,
    pub max_wr: u32,
    pub max_sge: u32,
    /// `IB_UVERBS_WQ_FLAGS_*`.
    pub create_flags: u32,
    pub reserved: u32,
}

/// `struct ib_uverbs_ex_create_wq_resp`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable)]
pub struct ib_uverbs_ex_create_wq_resp {
    pub comp_mask: u32,
    pub response_length: u32,
    pub wq_handle: u32,
    pub max_wr: u32,
    pub max_sge: u32,
    pub wqn: u32,
}

/// `struct ib_uverbs_ex_destroy_wq`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable)]
pub struct ib_uverbs_ex_destroy_wq {
    pub comp_mask: u32,
    pub wq_handle: u32,
}

/// `struct ib_uverbs_ex_destroy_wq_resp`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable)]
pub struct ib_uverbs_ex_destroy_wq_resp {
    pub comp_mask: u32,
    pub response_length: u32,
    pub events_reported: u32,
    pub reserved: u32,
}

/// `struct ib_uverbs_ex_modify_wq` (no response).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable)]
pub struct ib_uverbs_ex_modify_wq {
    /// `IB_WQ_STATE` (1), `IB_WQ_CUR_STATE` (2), `IB_WQ_FLAGS` (4).
    pub attr_mask: u32,
    pub wq_handle: u32,
    /// `IB_WQS_RESET` (0), `RDY` (1), `ERR` (2).
    pub wq_state: u32,
    pub curr_wq_state: u32,
    pub flags: u32,
    pub flags_mask: u32,
}

/// `struct ib_uverbs_ex_create_rwq_ind_table`; the work queues' handles follow
/// (`wq_handles`, `1 << log_ind_tbl_size` of them, padded to 8 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable)]
pub struct ib_uverbs_ex_create_rwq_ind_table {
    pub comp_mask: u32,
    pub log_ind_tbl_size: u32,
}

/// `struct ib_uverbs_ex_create_rwq_ind_table_resp`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable)]
pub struct ib_uverbs_ex_create_rwq_ind_table_resp {
    pub comp_mask: u32,
    pub response_length: u32,
    pub ind_tbl_handle: u32,
    pub ind_tbl_num: u32,
}

/// `struct ib_uverbs_ex_destroy_rwq_ind_table` (no response).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable)]
pub struct ib_uverbs_ex_destroy_rwq_ind_table {
    pub comp_mask: u32,
    pub ind_tbl_handle: u32,
}
