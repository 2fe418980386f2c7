//! Device formats: the bytes the driver and the NIC exchange through host memory and MMIO.
//!
//! Every layout here names its PRM / `mlx5dv.h` counterpart, is big-endian on the wire
//! ([`Be16`], [`Be32`], [`Be64`]), has its size checked at compile time, and is compared
//! byte for byte with rdma-core's own header helpers by the golden tests
//! (`tests/golden.rs`). This module contains no `unsafe`.

mod cqe;
mod ctrl;
mod dbrec;
mod endian;
mod eth;
mod seg;
mod wire;
mod zip;

pub use cqe::*;
pub use ctrl::*;
pub use dbrec::*;
pub use endian::{Be16, Be32, Be64};
pub use eth::*;
pub use seg::*;
pub use zip::*;

/// `MLX5_SEND_WQE_BB`: size of a send WQE basic block (WQEBB).
pub const SEND_WQE_BB: usize = 64;
/// `MLX5_SEND_WQE_SHIFT`.
pub const SEND_WQE_SHIFT: u32 = 6;
/// `MLX5_SEND_WQE_DS`: the 16-byte unit WQE sizes are counted in.
pub const DS: usize = 16;
/// Largest DS count the 6-bit `qpn_ds` field can carry (1008 bytes).
pub const MAX_DS: usize = 63;
/// Size of the control segment.
pub const CTRL_SEG_SIZE: usize = 16;
/// Size of a CQE as the device sees it (`struct mlx5_cqe64`).
pub const CQE_SIZE: usize = 64;
/// Size of a UAR page (`MLX5_ADAPTER_PAGE_SIZE`).
pub const UAR_PAGE_SIZE: usize = 4096;

/// WQEBBs a WQE of `ds` 16-byte units occupies.
#[inline(always)]
pub const fn wqebbs(ds: usize) -> usize {
    (ds * DS).div_ceil(SEND_WQE_BB)
}
