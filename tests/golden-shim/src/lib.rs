//! Golden values from rdma-core's own `<infiniband/mlx5dv.h>` for `tests/golden.rs`.
//!
//! A small C file (`c/golden.c`) is compiled against the installed header and exports the
//! header's struct layouts (`offsetof`/`sizeof`), its constants (plus `enum ibv_wc_status`
//! from `verbs.h`), field reads done the way rdma-core's `cq.c` does them, and the header's
//! inline segment helpers run into caller buffers. This crate wraps those functions safely.
//! Three more C files (`c/uverbs.c`, `c/mlx5_abi.c`, `c/uverbs_ioctl.c`) export the kernel uapi
//! layouts of the uverbs `write()` ABI, mlx5's driver data and the ioctl interface, which the
//! emulator (`mlx5-emu`) mirrors, for `hw/emu/tests/abi_layout.rs`.
//!
//! The build script looks for the header in the directories of `MLX5_DIRECT_INCLUDE` and in
//! `/usr/include` (`detect.rs`, shared with the root crate's build script). Without it no C
//! is compiled, [`AVAILABLE`] is false and every function panics with "rdma-core headers not
//! installed"; the golden tests are then ignored. `MLX5_DIRECT_REQUIRE_GOLDEN=1` makes a
//! missing header a build error instead.
#![deny(missing_docs)]

use std::ffi::{c_char, c_int, CStr};

/// Whether the C shim was compiled against the header.
pub const AVAILABLE: bool = cfg!(rdma_headers);

/// One field of a header struct.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Field {
    /// The struct's C name, e.g. `"mlx5_cqe64"`.
    pub strct: &'static str,
    /// The member designator, e.g. `"byte_cnt"` or `"tm_cqe.success"`.
    pub field: &'static str,
    /// `offsetof`.
    pub offset: usize,
    /// `sizeof` of the member.
    pub size: usize,
    /// False for the alternative members of a union (the tag-matching views of `mlx5_cqe64`,
    /// the `qkey`/`dc_key` views of `mlx5_wqe_av`). The primary fields tile their struct.
    pub primary: bool,
}

/// The size of a header struct.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StructSize {
    /// The struct's C name.
    pub strct: &'static str,
    /// `sizeof`.
    pub size: usize,
}

/// A named integer: a header constant, or a field value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Value {
    /// The C name.
    pub name: &'static str,
    /// The value (host order).
    pub value: i64,
}

/// What `mlx5dv_get_cqe_owner/se/format/opcode` return for a CQE.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CqeBits {
    /// `mlx5dv_get_cqe_owner`.
    pub owner: u8,
    /// `mlx5dv_get_cqe_se`.
    pub se: u8,
    /// `mlx5dv_get_cqe_format`.
    pub format: u8,
    /// `mlx5dv_get_cqe_opcode`.
    pub opcode: u8,
}

#[repr(C)]
struct RawField {
    strct: *const c_char,
    field: *const c_char,
    offset: usize,
    size: usize,
    primary: c_int,
}

#[repr(C)]
struct RawStruct {
    strct: *const c_char,
    size: usize,
}

#[repr(C)]
#[derive(Clone, Copy)]
struct RawValue {
    name: *const c_char,
    value: i64,
}

/// The C functions of `c/golden.h`.
#[cfg(rdma_headers)]
#[path = "sys_c.rs"]
mod sys;

/// Stand-ins with the signatures of the C functions, for builds without the header.
#[cfg(not(rdma_headers))]
#[allow(
    clippy::too_many_arguments,
    reason = "the signatures of the C functions"
)]
#[path = "sys_stub.rs"]
mod sys;

/// A name from one of the C tables or field reads.
fn c_name(ptr: *const c_char) -> &'static str {
    assert!(!ptr.is_null());
    // SAFETY: every name golden.c hands out is a non-null, NUL-terminated string literal,
    // which lives unmodified for the whole program.
    let name = unsafe { CStr::from_ptr(ptr) };
    name.to_str().expect("the C names are ASCII")
}

fn values(raw: &[RawValue]) -> Vec<Value> {
    raw.iter()
        .map(|v| Value {
            name: c_name(v.name),
            value: v.value,
        })
        .collect()
}

/// A static C table: `get` stores its length and returns its first entry.
fn table<T>(get: impl FnOnce(&mut usize) -> *const T) -> &'static [T] {
    let mut count = 0usize;
    let ptr = get(&mut count);
    assert!(!ptr.is_null());
    // SAFETY: the table functions return a static, never-written C array of `count`
    // initialised entries.
    unsafe { std::slice::from_raw_parts(ptr, count) }
}

fn to_fields(raw: &[RawField]) -> Vec<Field> {
    raw.iter()
        .map(|f| Field {
            strct: c_name(f.strct),
            field: c_name(f.field),
            offset: f.offset,
            size: f.size,
            primary: f.primary != 0,
        })
        .collect()
}

fn to_structs(raw: &[RawStruct]) -> Vec<StructSize> {
    raw.iter()
        .map(|s| StructSize {
            strct: c_name(s.strct),
            size: s.size,
        })
        .collect()
}

/// Every field of every header struct the driver models, in declaration order.
pub fn fields() -> Vec<Field> {
    // SAFETY: the function only stores the entry count through the valid pointer.
    to_fields(table(|n| unsafe { sys::golden_fields(n) }))
}

/// The sizes of the header structs the driver models.
pub fn structs() -> Vec<StructSize> {
    // SAFETY: as in `fields`.
    to_structs(table(|n| unsafe { sys::golden_structs(n) }))
}

/// The header constants of the families the driver models (see `golden.c` for the names
/// the v44 header does not define).
pub fn constants() -> Vec<Value> {
    // SAFETY: as in `fields`.
    values(table(|n| unsafe { sys::golden_constants(n) }))
}

/// Every member of the structs the `verbs` backend's FFI declares (its mlx5dv structs, and
/// the verbs structs `rdma-sys` writes by hand), in declaration order (`c/ffi.c`). Members
/// of anonymous structs are named by path (`"sq.buf"`).
pub fn ffi_fields() -> Vec<Field> {
    // SAFETY: as in `fields`.
    to_fields(table(|n| unsafe { sys::golden_ffi_fields(n) }))
}

/// The sizes of the structs of [`ffi_fields`].
pub fn ffi_structs() -> Vec<StructSize> {
    // SAFETY: as in `fields`.
    to_structs(table(|n| unsafe { sys::golden_ffi_structs(n) }))
}

/// The header constants the `verbs` backend uses.
pub fn ffi_constants() -> Vec<Value> {
    // SAFETY: as in `fields`.
    values(table(|n| unsafe { sys::golden_ffi_constants(n) }))
}

/// Every field of the kernel uverbs structs the emulator mirrors (`<rdma/ib_user_verbs.h>`:
/// command headers, the requests and responses of the commands it answers, their nested
/// structs), in declaration order (`c/uverbs.c`). A flexible trailing array (`driver_data[]`)
/// is a field of size 0 that is not primary: its offset is where the driver data begins.
/// Members of the anonymous struct of `ib_uverbs_odp_caps` are named by path and not primary.
pub fn uverbs_fields() -> Vec<Field> {
    // SAFETY: as in `fields`.
    to_fields(table(|n| unsafe { sys::golden_uverbs_fields(n) }))
}

/// The sizes of the structs of [`uverbs_fields`].
pub fn uverbs_structs() -> Vec<StructSize> {
    // SAFETY: as in `fields`.
    to_structs(table(|n| unsafe { sys::golden_uverbs_structs(n) }))
}

/// The constants of `<rdma/ib_user_verbs.h>` and `<rdma/ib_user_ioctl_verbs.h>` the emulator
/// mirrors, and the alignment of each struct of [`uverbs_structs`] as
/// `"_Alignof(struct NAME)"`.
pub fn uverbs_constants() -> Vec<Value> {
    // SAFETY: as in `fields`.
    values(table(|n| unsafe { sys::golden_uverbs_constants(n) }))
}

/// Every field of the mlx5_ib driver-data structs of `<rdma/mlx5-abi.h>` the emulator
/// mirrors, in declaration order (`c/mlx5_abi.c`). The union alternative
/// `mlx5_ib_create_qp.access_key` is not primary.
pub fn mlx5_abi_fields() -> Vec<Field> {
    // SAFETY: as in `fields`.
    to_fields(table(|n| unsafe { sys::golden_mlx5_abi_fields(n) }))
}

/// The sizes of the structs of [`mlx5_abi_fields`].
pub fn mlx5_abi_structs() -> Vec<StructSize> {
    // SAFETY: as in `fields`.
    to_structs(table(|n| unsafe { sys::golden_mlx5_abi_structs(n) }))
}

/// The constants of `<rdma/mlx5-abi.h>` the emulator mirrors (flags, mmap commands), the two
/// `MLX5_MMAP_GET_*_CMD` of rdma-core's `mlx5dv.h`, and the alignment of each struct of
/// [`mlx5_abi_structs`] as `"_Alignof(struct NAME)"`.
pub fn mlx5_abi_constants() -> Vec<Value> {
    // SAFETY: as in `fields`.
    values(table(|n| unsafe { sys::golden_mlx5_abi_constants(n) }))
}

/// Every field of the ioctl interface's structs the emulator mirrors
/// (`<rdma/rdma_user_ioctl_cmds.h>`: `ib_uverbs_ioctl_hdr`, whose `attrs[]` is a size-0
/// non-primary field, `ib_uverbs_attr`, whose union alternatives are named by path and not
/// primary; `ib_uverbs_sge` of `<rdma/ib_user_verbs.h>`), in declaration order
/// (`c/uverbs_ioctl.c`).
pub fn uverbs_ioctl_fields() -> Vec<Field> {
    // SAFETY: as in `fields`.
    to_fields(table(|n| unsafe { sys::golden_uverbs_ioctl_fields(n) }))
}

/// The sizes of the structs of [`uverbs_ioctl_fields`].
pub fn uverbs_ioctl_structs() -> Vec<StructSize> {
    // SAFETY: as in `fields`.
    to_structs(table(|n| unsafe { sys::golden_uverbs_ioctl_structs(n) }))
}

/// The ioctl constants the emulator mirrors (`RDMA_VERBS_IOCTL`, attribute flags, the object,
/// method and attribute ids of `<rdma/ib_user_ioctl_cmds.h>` and
/// `<rdma/mlx5_user_ioctl_cmds.h>` it uses, the values of `<rdma/ib_user_ioctl_verbs.h>` and
/// `<rdma/mlx5_user_ioctl_verbs.h>` they carry), and the alignment of each struct of
/// [`uverbs_ioctl_structs`] as `"_Alignof(struct NAME)"`.
pub fn uverbs_ioctl_constants() -> Vec<Value> {
    // SAFETY: as in `fields`.
    values(table(|n| unsafe { sys::golden_uverbs_ioctl_constants(n) }))
}

/// The raw Ethernet fields of `<infiniband/mlx5dv.h>` the device model checks (`c/eth.c`):
/// `mlx5_wqe_eth_seg`, `mlx5_mprq_wqe`, the striding RQ attributes and caps.
pub fn eth_fields() -> Vec<Field> {
    // SAFETY: as in `fields`.
    to_fields(table(|n| unsafe { sys::golden_eth_fields(n) }))
}

/// The sizes of the structs of [`eth_fields`].
pub fn eth_structs() -> Vec<StructSize> {
    // SAFETY: as in `fields`.
    to_structs(table(|n| unsafe { sys::golden_eth_structs(n) }))
}

/// The raw Ethernet constants: the Ethernet segment's checksum flags, the multi-packet
/// context flags, the striding WQ attribute mask, `ibv_rx_hash_fields`, the flow attribute
/// and spec types, the work queue states, `IBV_SEND_IP_CSUM`, `IBV_WC_IP_CSUM_OK`, and the
/// kernel's `MLX5_USER_INLINE_MODE_*`.
pub fn eth_constants() -> Vec<Value> {
    // SAFETY: as in `fields`.
    values(table(|n| unsafe { sys::golden_eth_constants(n) }))
}

/// The value of the raw Ethernet constant `name`; panics if the shim does not export it.
pub fn eth_constant(name: &str) -> i64 {
    eth_constants()
        .into_iter()
        .find(|c| c.name == name)
        .unwrap_or_else(|| panic!("{name} is not in the raw Ethernet golden constants"))
        .value
}

/// `mlx5dv_set_eth_seg` on `seg` with `inline` (at most 18 bytes) as the inline header.
pub fn set_eth_seg(seg: &mut [u8; 32], cs_flags: u8, mss: u16, inline: &[u8]) {
    assert!(inline.len() <= 18);
    // SAFETY: `seg` is 32 writable bytes, the size of `struct mlx5_wqe_eth_seg`; `inline`
    // holds the `inline.len()` bytes the C side copies.
    unsafe {
        sys::golden_set_eth_seg(
            seg.as_mut_ptr(),
            cs_flags,
            mss,
            inline.len() as u16,
            inline.as_ptr(),
        )
    }
}

/// The table functions of `c/rdmacm.c`, compiled only when librdmacm's `rdma/rdma_cma.h` is
/// installed (`cfg(rdmacm_headers)`); stubs that panic otherwise.
mod rdmacm_sys {
    use super::{RawField, RawStruct, RawValue};

    #[cfg(rdmacm_headers)]
    extern "C" {
        pub fn golden_rdmacm_fields(count: *mut usize) -> *const RawField;
        pub fn golden_rdmacm_structs(count: *mut usize) -> *const RawStruct;
        pub fn golden_rdmacm_constants(count: *mut usize) -> *const RawValue;
    }

    #[cfg(not(rdmacm_headers))]
    fn unavailable() -> ! {
        panic!("librdmacm's header (rdma/rdma_cma.h) is not installed: install librdmacm-dev")
    }
    #[cfg(not(rdmacm_headers))]
    pub unsafe fn golden_rdmacm_fields(_: *mut usize) -> *const RawField {
        unavailable()
    }
    #[cfg(not(rdmacm_headers))]
    pub unsafe fn golden_rdmacm_structs(_: *mut usize) -> *const RawStruct {
        unavailable()
    }
    #[cfg(not(rdmacm_headers))]
    pub unsafe fn golden_rdmacm_constants(_: *mut usize) -> *const RawValue {
        unavailable()
    }
}

/// Whether librdmacm's header was found, so that [`ucma_fields`] and friends hold the
/// values of `c/rdmacm.c` too.
pub const RDMACM_AVAILABLE: bool = cfg!(rdmacm_headers);

/// Every field of the structs of the kernel's rdma_ucm `write()` ABI the emulator mirrors
/// (`c/ucma.c`: `<rdma/rdma_user_cm.h>`, `<rdma/ib_user_sa.h>`, the `<linux/in.h>` and
/// `<linux/in6.h>` socket addresses), then those of `c/rdmacm.c` (`struct sockaddr_ib`,
/// `struct ibv_path_record`). The union members of `rdma_ucm_event_resp.param` are named by
/// path and not primary; `rdma_ucm_query_path_resp.path_data[]` is a size-0 tail.
pub fn ucma_fields() -> Vec<Field> {
    // SAFETY: as in `fields`.
    let mut all = to_fields(table(|n| unsafe { sys::golden_ucma_fields(n) }));
    // SAFETY: as in `fields`.
    all.extend(to_fields(table(|n| unsafe {
        rdmacm_sys::golden_rdmacm_fields(n)
    })));
    all
}

/// The sizes of the structs of [`ucma_fields`].
pub fn ucma_structs() -> Vec<StructSize> {
    // SAFETY: as in `fields`.
    let mut all = to_structs(table(|n| unsafe { sys::golden_ucma_structs(n) }));
    // SAFETY: as in `fields`.
    all.extend(to_structs(table(|n| unsafe {
        rdmacm_sys::golden_rdmacm_structs(n)
    })));
    all
}

/// The constants of `<rdma/rdma_user_cm.h>` and `<rdma/ib_user_sa.h>` the emulator mirrors,
/// then the values of `c/rdmacm.c` (event numbers, `AF_IB`, the AF_IB port spaces, two async
/// event numbers), and the alignment of each struct of [`ucma_structs`] as
/// `"_Alignof(struct NAME)"`.
pub fn ucma_constants() -> Vec<Value> {
    // SAFETY: as in `fields`.
    let mut all = values(table(|n| unsafe { sys::golden_ucma_constants(n) }));
    // SAFETY: as in `fields`.
    all.extend(values(table(|n| unsafe {
        rdmacm_sys::golden_rdmacm_constants(n)
    })));
    all
}

/// Checks that the primary fields of `strct` cover it in order, leaving only alignment
/// padding: each gap is shorter than 8 bytes and ends at a multiple of the next field's
/// natural alignment (its size up to 8, for a power-of-two size), and so is the tail. With
/// `padding` false no gap at all is allowed. Returns what is wrong, if anything.
pub fn tiling_error(fields: &[Field], strct: &StructSize, padding: bool) -> Option<String> {
    let mut primary: Vec<_> = fields
        .iter()
        .filter(|f| f.strct == strct.strct && f.primary)
        .collect();
    primary.sort_by_key(|f| f.offset);
    let mut next = 0;
    for f in primary {
        let align = if f.size.is_power_of_two() {
            f.size.min(8)
        } else {
            1
        };
        let gap = f.offset.checked_sub(next);
        let ok = match gap {
            Some(0) => true,
            Some(gap) => padding && gap < 8 && f.offset % align == 0,
            None => false,
        };
        if !ok {
            return Some(format!("gap or overlap before {}.{}", strct.strct, f.field));
        }
        next = f.offset + f.size;
    }
    match strct.size.checked_sub(next) {
        Some(0) => None,
        Some(gap) if padding && gap < 8 => None,
        _ => Some(format!(
            "the fields of struct {} end at {next}",
            strct.strct
        )),
    }
}

/// The value of the header constant `name`; panics if the shim does not export it.
pub fn constant(name: &str) -> i64 {
    constants()
        .into_iter()
        .find(|c| c.name == name)
        .unwrap_or_else(|| panic!("{name} is not in the golden constants"))
        .value
}

const NO_VALUE: RawValue = RawValue {
    name: std::ptr::null(),
    value: 0,
};

/// Each named field of a 64-byte CQE read as `struct mlx5_cqe64` (plain view), in host
/// order as rdma-core's `cq.c` converts it.
pub fn read_cqe64(cqe: &[u8; 64]) -> Vec<Value> {
    let mut out = [NO_VALUE; 32];
    // SAFETY: `cqe` is 64 readable bytes; `out` has room for `out.len()` entries, and the C
    // function writes at most that many.
    let n = unsafe { sys::golden_read_cqe64(cqe.as_ptr(), out.as_mut_ptr(), out.len()) };
    assert!(n <= out.len());
    values(&out[..n])
}

/// Each named field of a 64-byte CQE read as `struct mlx5_err_cqe`, in host order as
/// rdma-core's `cq.c` converts it.
pub fn read_err_cqe(cqe: &[u8; 64]) -> Vec<Value> {
    let mut out = [NO_VALUE; 32];
    // SAFETY: `cqe` is 64 readable bytes; `out` has room for `out.len()` entries, and the C
    // function writes at most that many.
    let n = unsafe { sys::golden_read_err_cqe(cqe.as_ptr(), out.as_mut_ptr(), out.len()) };
    assert!(n <= out.len());
    values(&out[..n])
}

/// `mlx5dv_ts_to_ns` (the header's inline function) on a `struct mlx5dv_clock_info` of
/// `[nsec, last_cycles, frac, mask]`, `mult` and `shift`, for device timestamp `ts`.
pub fn ts_to_ns(info: [u64; 4], mult: u32, shift: u32, ts: u64) -> u64 {
    // SAFETY: `info` is four readable u64s, as the C function reads them.
    unsafe { sys::golden_ts_to_ns(info.as_ptr(), mult, shift, ts) }
}

/// `ibv_flow_label_to_udp_sport` (verbs.h's inline function): the RoCE v2 UDP source port
/// `mlx5_create_ah` puts in the AV's `rlid` for a flow label.
pub fn flow_label_to_udp_sport(flow_label: u32) -> u16 {
    // SAFETY: the C function takes and returns plain integers.
    unsafe { sys::golden_flow_label_to_udp_sport(flow_label) }
}

/// `mlx5dv_get_cqe_owner/se/format/opcode` on a 64-byte CQE.
pub fn cqe_bits(cqe: &[u8; 64]) -> CqeBits {
    // SAFETY: `cqe` is 64 readable bytes, the size of `struct mlx5_cqe64`.
    let bits = unsafe { sys::golden_get_cqe_bits(cqe.as_ptr()) };
    let [owner, se, format, opcode] = bits.to_le_bytes();
    CqeBits {
        owner,
        se,
        format,
        opcode,
    }
}

/// `mlx5dv_set_ctrl_seg` on `seg`; the bytes it does not write keep their values.
#[allow(
    clippy::too_many_arguments,
    reason = "the arguments of mlx5dv_set_ctrl_seg"
)]
pub fn set_ctrl_seg(
    seg: &mut [u8; 16],
    pi: u16,
    opcode: u8,
    opmod: u8,
    qp_num: u32,
    fm_ce_se: u8,
    ds: u8,
    signature: u8,
    imm: u32,
) {
    // SAFETY: `seg` is 16 writable bytes, the size of `struct mlx5_wqe_ctrl_seg`; the C side
    // copies it to an aligned local and back.
    unsafe {
        sys::golden_set_ctrl_seg(
            seg.as_mut_ptr(),
            pi,
            opcode,
            opmod,
            qp_num,
            fm_ce_se,
            ds,
            signature,
            imm,
        )
    }
}

/// `mlx5dv_set_data_seg` on `seg`.
pub fn set_data_seg(seg: &mut [u8; 16], length: u32, lkey: u32, address: usize) {
    // SAFETY: `seg` is 16 writable bytes, the size of `struct mlx5_wqe_data_seg`.
    unsafe { sys::golden_set_data_seg(seg.as_mut_ptr(), length, lkey, address as u64) }
}

/// `mlx5dv_set_dgram_seg` on `seg`.
#[allow(
    clippy::too_many_arguments,
    reason = "the arguments of mlx5dv_set_dgram_seg"
)]
pub fn set_dgram_seg(
    seg: &mut [u8; 48],
    key: u64,
    dqp_dct: u32,
    ext: u8,
    stat_rate_sl: u8,
    fl_mlid: u8,
    rlid: u16,
    rmac: &[u8; 6],
    tclass: u8,
    hop_limit: u8,
    grh_gid_fl: u32,
    rgid: &[u8; 16],
) {
    // SAFETY: `seg` is 48 writable bytes, the size of `struct mlx5_wqe_datagram_seg`; `rmac`
    // and `rgid` are the 6 and 16 readable bytes the helper copies.
    unsafe {
        sys::golden_set_dgram_seg(
            seg.as_mut_ptr(),
            key,
            dqp_dct,
            ext,
            stat_rate_sl,
            fl_mlid,
            rlid,
            rmac.as_ptr(),
            tclass,
            hop_limit,
            grh_gid_fl,
            rgid.as_ptr(),
        )
    }
}

/// `mlx5dv_x86_set_ctrl_seg` (the SSE variant) on `seg`. Panics if the CPU lacks SSSE3.
#[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
#[allow(
    clippy::too_many_arguments,
    reason = "the arguments of mlx5dv_x86_set_ctrl_seg"
)]
pub fn x86_set_ctrl_seg(
    seg: &mut [u8; 16],
    pi: u16,
    opcode: u8,
    opmod: u8,
    qp_num: u32,
    fm_ce_se: u8,
    ds: u8,
    signature: u8,
    imm: u32,
) {
    assert!(std::arch::is_x86_feature_detected!("ssse3"));
    // SAFETY: `seg` is 16 writable bytes; the C side copies it to a 16-byte-aligned local and
    // back. The CPU has the SSSE3 instructions the helper was compiled with (checked above).
    unsafe {
        sys::golden_x86_set_ctrl_seg(
            seg.as_mut_ptr(),
            pi,
            opcode,
            opmod,
            qp_num,
            fm_ce_se,
            ds,
            signature,
            imm,
        )
    }
}

/// `mlx5dv_x86_set_data_seg` (the SSE variant) on `seg`. Panics if the CPU lacks SSSE3.
#[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
pub fn x86_set_data_seg(seg: &mut [u8; 16], length: u32, lkey: u32, address: usize) {
    assert!(std::arch::is_x86_feature_detected!("ssse3"));
    // SAFETY: `seg` is 16 writable bytes; the C side copies it to a 16-byte-aligned local and
    // back. The CPU has the SSSE3 instructions the helper was compiled with (checked above).
    unsafe { sys::golden_x86_set_data_seg(seg.as_mut_ptr(), length, lkey, address as u64) }
}
