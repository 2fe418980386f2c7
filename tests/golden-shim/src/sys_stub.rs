//! Stand-ins with the signatures of the C functions of `c/golden.h`, for builds without
//! the header: each panics.

use super::{RawField, RawStruct, RawValue};

fn unavailable() -> ! {
    panic!(
        "rdma-core headers not installed: install libibverbs-dev (or set \
         MLX5_DIRECT_INCLUDE) and rebuild to run the golden tests"
    )
}

pub unsafe fn golden_fields(_: *mut usize) -> *const RawField {
    unavailable()
}
pub unsafe fn golden_structs(_: *mut usize) -> *const RawStruct {
    unavailable()
}
pub unsafe fn golden_constants(_: *mut usize) -> *const RawValue {
    unavailable()
}
pub unsafe fn golden_ffi_fields(_: *mut usize) -> *const RawField {
    unavailable()
}
pub unsafe fn golden_ffi_structs(_: *mut usize) -> *const RawStruct {
    unavailable()
}
pub unsafe fn golden_ffi_constants(_: *mut usize) -> *const RawValue {
    unavailable()
}
pub unsafe fn golden_uverbs_fields(_: *mut usize) -> *const RawField {
    unavailable()
}
pub unsafe fn golden_uverbs_structs(_: *mut usize) -> *const RawStruct {
    unavailable()
}
pub unsafe fn golden_uverbs_constants(_: *mut usize) -> *const RawValue {
    unavailable()
}
pub unsafe fn golden_mlx5_abi_fields(_: *mut usize) -> *const RawField {
    unavailable()
}
pub unsafe fn golden_mlx5_abi_structs(_: *mut usize) -> *const RawStruct {
    unavailable()
}
pub unsafe fn golden_mlx5_abi_constants(_: *mut usize) -> *const RawValue {
    unavailable()
}
pub unsafe fn golden_uverbs_ioctl_fields(_: *mut usize) -> *const RawField {
    unavailable()
}
pub unsafe fn golden_uverbs_ioctl_structs(_: *mut usize) -> *const RawStruct {
    unavailable()
}
pub unsafe fn golden_uverbs_ioctl_constants(_: *mut usize) -> *const RawValue {
    unavailable()
}
pub unsafe fn golden_eth_fields(_: *mut usize) -> *const RawField {
    unavailable()
}
pub unsafe fn golden_eth_structs(_: *mut usize) -> *const RawStruct {
    unavailable()
}
pub unsafe fn golden_eth_constants(_: *mut usize) -> *const RawValue {
    unavailable()
}
pub unsafe fn golden_set_eth_seg(_: *mut u8, _: u8, _: u16, _: u16, _: *const u8) {
    unavailable()
}
pub unsafe fn golden_ucma_fields(_: *mut usize) -> *const RawField {
    unavailable()
}
pub unsafe fn golden_ucma_structs(_: *mut usize) -> *const RawStruct {
    unavailable()
}
pub unsafe fn golden_ucma_constants(_: *mut usize) -> *const RawValue {
    unavailable()
}
pub unsafe fn golden_read_cqe64(_: *const u8, _: *mut RawValue, _: usize) -> usize {
    unavailable()
}
pub unsafe fn golden_read_err_cqe(_: *const u8, _: *mut RawValue, _: usize) -> usize {
    unavailable()
}
pub unsafe fn golden_get_cqe_bits(_: *const u8) -> u32 {
    unavailable()
}
pub unsafe fn golden_ts_to_ns(_: *const u64, _: u32, _: u32, _: u64) -> u64 {
    unavailable()
}
pub unsafe fn golden_flow_label_to_udp_sport(_: u32) -> u16 {
    unavailable()
}
pub unsafe fn golden_set_ctrl_seg(
    _: *mut u8,
    _: u16,
    _: u8,
    _: u8,
    _: u32,
    _: u8,
    _: u8,
    _: u8,
    _: u32,
) {
    unavailable()
}
pub unsafe fn golden_set_data_seg(_: *mut u8, _: u32, _: u32, _: u64) {
    unavailable()
}
pub unsafe fn golden_set_dgram_seg(
    _: *mut u8,
    _: u64,
    _: u32,
    _: u8,
    _: u8,
    _: u8,
    _: u16,
    _: *const u8,
    _: u8,
    _: u8,
    _: u32,
    _: *const u8,
) {
    unavailable()
}
#[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
pub unsafe fn golden_x86_set_ctrl_seg(
    _: *mut u8,
    _: u16,
    _: u8,
    _: u8,
    _: u32,
    _: u8,
    _: u8,
    _: u8,
    _: u32,
) {
    unavailable()
}
#[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
pub unsafe fn golden_x86_set_data_seg(_: *mut u8, _: u32, _: u32, _: u64) {
    unavailable()
}
