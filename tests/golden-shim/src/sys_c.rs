//! The C functions of `c/golden.h` (built with the header: `cfg(rdma_headers)`).

use super::{RawField, RawStruct, RawValue};

extern "C" {
    pub fn golden_fields(count: *mut usize) -> *const RawField;
    pub fn golden_structs(count: *mut usize) -> *const RawStruct;
    pub fn golden_constants(count: *mut usize) -> *const RawValue;
    pub fn golden_ffi_fields(count: *mut usize) -> *const RawField;
    pub fn golden_ffi_structs(count: *mut usize) -> *const RawStruct;
    pub fn golden_ffi_constants(count: *mut usize) -> *const RawValue;
    pub fn golden_uverbs_fields(count: *mut usize) -> *const RawField;
    pub fn golden_uverbs_structs(count: *mut usize) -> *const RawStruct;
    pub fn golden_uverbs_constants(count: *mut usize) -> *const RawValue;
    pub fn golden_mlx5_abi_fields(count: *mut usize) -> *const RawField;
    pub fn golden_mlx5_abi_structs(count: *mut usize) -> *const RawStruct;
    pub fn golden_mlx5_abi_constants(count: *mut usize) -> *const RawValue;
    pub fn golden_uverbs_ioctl_fields(count: *mut usize) -> *const RawField;
    pub fn golden_uverbs_ioctl_structs(count: *mut usize) -> *const RawStruct;
    pub fn golden_uverbs_ioctl_constants(count: *mut usize) -> *const RawValue;
    pub fn golden_eth_fields(count: *mut usize) -> *const RawField;
    pub fn golden_eth_structs(count: *mut usize) -> *const RawStruct;
    pub fn golden_eth_constants(count: *mut usize) -> *const RawValue;
    pub fn golden_set_eth_seg(
        seg32: *mut u8,
        cs_flags: u8,
        mss: u16,
        inline_hdr_sz: u16,
        inline_hdr_start: *const u8,
    );
    pub fn golden_ucma_fields(count: *mut usize) -> *const RawField;
    pub fn golden_ucma_structs(count: *mut usize) -> *const RawStruct;
    pub fn golden_ucma_constants(count: *mut usize) -> *const RawValue;
    pub fn golden_read_cqe64(cqe: *const u8, out: *mut RawValue, cap: usize) -> usize;
    pub fn golden_read_err_cqe(cqe: *const u8, out: *mut RawValue, cap: usize) -> usize;
    pub fn golden_get_cqe_bits(cqe: *const u8) -> u32;
    pub fn golden_ts_to_ns(info: *const u64, mult: u32, shift: u32, ts: u64) -> u64;
    pub fn golden_flow_label_to_udp_sport(flow_label: u32) -> u16;
    pub fn golden_set_ctrl_seg(
        seg16: *mut u8,
        pi: u16,
        opcode: u8,
        opmod: u8,
        qp_num: u32,
        fm_ce_se: u8,
        ds: u8,
        signature: u8,
        imm: u32,
    );
    pub fn golden_set_data_seg(seg16: *mut u8, length: u32, lkey: u32, address: u64);
    pub fn golden_set_dgram_seg(
        seg48: *mut u8,
        key: u64,
        dqp_dct: u32,
        ext: u8,
        stat_rate_sl: u8,
        fl_mlid: u8,
        rlid: u16,
        rmac6: *const u8,
        tclass: u8,
        hop_limit: u8,
        grh_gid_fl: u32,
        rgid16: *const u8,
    );
    #[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
    pub fn golden_x86_set_ctrl_seg(
        seg16: *mut u8,
        pi: u16,
        opcode: u8,
        opmod: u8,
        qp_num: u32,
        fm_ce_se: u8,
        ds: u8,
        signature: u8,
        imm: u32,
    );
    #[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
    pub fn golden_x86_set_data_seg(seg16: *mut u8, length: u32, lkey: u32, address: u64);
}
