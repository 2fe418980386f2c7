//! The device's fixed numbers: the first object numbers, the READ/atomic depth, the UAR
//! register offsets, the PSN width.

/// First numbers handed out; distinct ranges make swapped identifiers fail loudly.
pub(crate) const QPN_BASE: u32 = 0x100;
pub(crate) const CQN_BASE: u32 = 0x40;
pub(crate) const SRQN_BASE: u32 = 0x800;
pub(crate) const PDN_BASE: u32 = 1;
pub(crate) const CHANNEL_BASE: u32 = 1;
/// Outstanding RDMA READ / atomic requests per QP, each direction (`log_max_ra_req_qp` and
/// `log_max_ra_res_qp` of 4).
pub(crate) const MAX_RD_ATOMIC: u8 = 16;
/// `MLX5_INVALID_LKEY`: receive scatter-list terminator, never a valid key.
pub(crate) const INVALID_LKEY: u32 = 0x100;
/// Offset of the send doorbell / BlueFlame register in a UAR page.
pub(crate) const BF_OFFSET: u32 = 0x800;
/// Offset of the CQ arm doorbell in a UAR page.
pub(crate) const CQ_DOORBELL: u32 = 0x20;
/// UAR page shared by all CQs for arming.
pub(crate) const CQ_UAR: u32 = 0;
/// PSNs are 24 bits.
pub(crate) const PSN_MASK: u32 = 0xff_ffff;
