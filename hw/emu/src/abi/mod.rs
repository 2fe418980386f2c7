//! The uverbs `write()` command ABI (uverbs ABI version 6) and mlx5_ib's driver data, laid out
//! as the kernel's uapi headers lay them out, so that the server answers libibverbs and
//! libmlx5 byte for byte as `ib_uverbs` + `mlx5_ib` would.
//!
//! - [`uverbs`]: `<rdma/ib_user_verbs.h>` (and the enums of `<rdma/ib_user_ioctl_verbs.h>`
//!   those structs use): the command headers, the command numbers, and the request and
//!   response of every command the emulator answers with their nested structs;
//! - [`mlx5`]: `<rdma/mlx5-abi.h>`: the driver data that follows those requests and
//!   responses, its flags, the clock-info page, and the mmap offset encoding;
//! - [`ioctl`]: the ioctl interface (`RDMA_VERBS_IOCTL`): its header and attribute, and the
//!   object, method and attribute ids of the methods the emulator answers;
//! - [`ucma`]: `<rdma/rdma_user_cm.h>`: the `rdma_ucm` commands of `/dev/infiniband/rdma_cm`,
//!   their socket addresses and path records.
//!
//! Every struct is a `#[repr(C)]` plain struct with the C name and the C field names; every
//! constant has its C name. `hw/emu/tests/abi_layout.rs` compares each struct's size and
//! alignment, each field's offset and size, and each constant's value with the installed
//! headers (through the `mlx5-golden` shim, which compiles C against them). Structs the header
//! aligns to 8 bytes (`__aligned_u64` members, or a trailing `__aligned_u64 driver_data[]`)
//! are `align(8)` here too.
//!
//! A trailing flexible array (`driver_data[]`) is not a field: it is the rest of the buffer,
//! which starts at `size_of` the struct (the test checks that the header's `offsetof` agrees).
//! [`split`] returns it.
//!
//! # Reading requests and writing responses
//!
//! The structs derive `zerocopy`'s traits, so bytes become structs and back without `unsafe`
//! and without regard to the buffer's alignment:
//!
//! - [`read`] / [`split`]: the struct at an offset (and what follows it), or
//!   [`AbiError::Short`] when the buffer ends first;
//! - [`read_extensible`]: the kernel's `uverbs_request` (`copy_struct_from_user`): a shorter
//!   input is zero-extended, a longer one must be zero past the struct;
//! - [`write_prefix`]: what a driver's `ib_copy_to_udata(udata, &resp, min(outlen,
//!   sizeof(resp)))` writes: the prefix that fits, nothing else;
//! - [`write_response`]: the kernel's `uverbs_response` for the core response: the prefix
//!   that fits, and zeros over the rest of the caller's buffer.

use core::fmt;
use core::mem::size_of;

pub use zerocopy::{FromBytes, FromZeros, Immutable, IntoBytes};

pub mod ioctl;
pub mod mlx5;
pub mod ucma;
pub mod uverbs;

/// Why a buffer does not hold the struct asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AbiError {
    /// The buffer (`len` bytes) ends before `offset + size`, where the struct would end.
    Short {
        /// Where the struct starts.
        offset: usize,
        /// `size_of` the struct.
        size: usize,
        /// The buffer's length.
        len: usize,
    },
    /// The input is longer than the struct and the byte at `at` past the struct's end is not
    /// zero: an extension this ABI does not know was asked for.
    NonZeroTail {
        /// The index of the first non-zero byte, in the input.
        at: usize,
    },
}

impl AbiError {
    /// The errno the kernel answers for this:
    /// - `Short`: `EINVAL`, what mlx5_ib answers a driver request shorter than it needs
    ///   (the write dispatcher's own length checks, `ENOSPC` in `verify_hdr`, come first and
    ///   are the server's);
    /// - `NonZeroTail`: `EOPNOTSUPP`, as `uverbs_request` answers it.
    pub fn errno(self) -> i32 {
        match self {
            AbiError::Short { .. } => libc::EINVAL,
            AbiError::NonZeroTail { .. } => libc::EOPNOTSUPP,
        }
    }
}

impl fmt::Display for AbiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            AbiError::Short { offset, size, len } => write!(
                f,
                "a {size}-byte struct at offset {offset} does not fit in {len} bytes"
            ),
            AbiError::NonZeroTail { at } => {
                write!(
                    f,
                    "unknown extension: byte {at} past the struct is not zero"
                )
            }
        }
    }
}

impl std::error::Error for AbiError {}

/// The `T` at `buf[offset..]` (copied out, so `buf` needs no alignment) and the bytes after
/// it: for a command with driver data, the driver data.
pub fn split<T: FromBytes>(buf: &[u8], offset: usize) -> Result<(T, &[u8]), AbiError> {
    let short = AbiError::Short {
        offset,
        size: size_of::<T>(),
        len: buf.len(),
    };
    let from = buf.get(offset..).ok_or(short)?;
    T::read_from_prefix(from).map_err(|_| short)
}

/// The `T` at `buf[offset..]`, copied out.
pub fn read<T: FromBytes>(buf: &[u8], offset: usize) -> Result<T, AbiError> {
    split(buf, offset).map(|(value, _)| value)
}

/// `input` read as the kernel's `uverbs_request` reads a request (`copy_struct_from_user`):
/// bytes the input lacks are zero; bytes it has past the struct must be zero, or the request
/// asks for something this ABI does not know ([`AbiError::NonZeroTail`]).
pub fn read_extensible<T: FromBytes + IntoBytes>(input: &[u8]) -> Result<T, AbiError> {
    let mut value = T::new_zeroed();
    let bytes = value.as_mut_bytes();
    let n = bytes.len().min(input.len());
    bytes[..n].copy_from_slice(&input[..n]);
    match input[n..].iter().position(|&b| b != 0) {
        Some(i) => Err(AbiError::NonZeroTail { at: n + i }),
        None => Ok(value),
    }
}

/// Writes the first `min(out.len(), size_of::<T>())` bytes of `resp` to `out` and leaves the
/// rest of `out` as it was: a driver's `ib_copy_to_udata(udata, &resp, min(udata->outlen,
/// sizeof(resp)))`. Returns how many bytes it wrote.
pub fn write_prefix<T: IntoBytes + Immutable>(out: &mut [u8], resp: &T) -> usize {
    let bytes = resp.as_bytes();
    let n = bytes.len().min(out.len());
    out[..n].copy_from_slice(&bytes[..n]);
    n
}

/// Writes `resp` to `out` as the kernel's `uverbs_response` writes a core response: the first
/// `min(out.len(), size_of::<T>())` bytes, and zeros over the rest of `out` (the part of a
/// newer caller's larger buffer this ABI does not fill). Returns how many bytes of `resp` it
/// wrote.
pub fn write_response<T: IntoBytes + Immutable>(out: &mut [u8], resp: &T) -> usize {
    let n = write_prefix(out, resp);
    out[n..].fill(0);
    n
}

#[cfg(test)]
mod tests {
    use super::uverbs::{ib_uverbs_alloc_pd_resp, ib_uverbs_cmd_hdr, ib_uverbs_reg_mr_resp};
    use super::*;

    fn hdr_bytes() -> [u8; 11] {
        // command 9 (REG_MR), in_words 12, out_words 3, then 3 bytes of what follows.
        [9, 0, 0, 0, 12, 0, 3, 0, 0xaa, 0xbb, 0xcc]
    }

    #[test]
    fn read_copies_the_struct_at_any_offset() {
        let mut buf = vec![0xee];
        buf.extend_from_slice(&hdr_bytes());
        let hdr: ib_uverbs_cmd_hdr = read(&buf, 1).unwrap();
        assert_eq!(
            hdr,
            ib_uverbs_cmd_hdr {
                command: 9,
                in_words: 12,
                out_words: 3
            }
        );
        let (_, rest) = split::<ib_uverbs_cmd_hdr>(&buf, 1).unwrap();
        assert_eq!(rest, &[0xaa, 0xbb, 0xcc]);
    }

    #[test]
    fn a_short_buffer_is_a_typed_error() {
        let buf = hdr_bytes();
        assert_eq!(
            read::<ib_uverbs_cmd_hdr>(&buf, 4),
            Err(AbiError::Short {
                offset: 4,
                size: 8,
                len: 11
            })
        );
        assert_eq!(
            read::<ib_uverbs_cmd_hdr>(&buf, 12),
            Err(AbiError::Short {
                offset: 12,
                size: 8,
                len: 11
            })
        );
        assert_eq!(
            read::<ib_uverbs_cmd_hdr>(&buf, usize::MAX)
                .unwrap_err()
                .errno(),
            libc::EINVAL
        );
        // Exactly enough is enough, with nothing left over.
        let (_, rest) = split::<ib_uverbs_cmd_hdr>(&buf[..8], 0).unwrap();
        assert!(rest.is_empty());
    }

    #[test]
    fn read_extensible_zero_extends_and_refuses_unknown_extensions() {
        let short = read_extensible::<ib_uverbs_cmd_hdr>(&[1, 0, 0, 0, 5]).unwrap();
        assert_eq!(
            short,
            ib_uverbs_cmd_hdr {
                command: 1,
                in_words: 5,
                out_words: 0
            }
        );
        let mut long = hdr_bytes().to_vec();
        long[8..].fill(0);
        assert_eq!(
            read_extensible::<ib_uverbs_cmd_hdr>(&long).unwrap().command,
            9
        );
        long[10] = 1;
        let err = read_extensible::<ib_uverbs_cmd_hdr>(&long).unwrap_err();
        assert_eq!(err, AbiError::NonZeroTail { at: 10 });
        assert_eq!(err.errno(), libc::EOPNOTSUPP);
    }

    #[test]
    fn write_prefix_truncates_and_leaves_the_rest() {
        let resp = ib_uverbs_reg_mr_resp {
            mr_handle: 0x0403_0201,
            lkey: 0x0807_0605,
            rkey: 0x0c0b_0a09,
        };
        let mut out = [0xffu8; 16];
        assert_eq!(write_prefix(&mut out, &resp), 12);
        assert_eq!(
            out,
            [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 0xff, 0xff, 0xff, 0xff]
        );
        let mut small = [0xffu8; 6];
        assert_eq!(write_prefix(&mut small, &resp), 6);
        assert_eq!(small, [1, 2, 3, 4, 5, 6]);
    }

    #[test]
    fn write_response_zero_fills_a_larger_buffer() {
        let resp = ib_uverbs_alloc_pd_resp { pd_handle: 7 };
        let mut out = [0xffu8; 8];
        assert_eq!(write_response(&mut out, &resp), 4);
        assert_eq!(out, [7, 0, 0, 0, 0, 0, 0, 0]);
        let mut small = [0xffu8; 2];
        assert_eq!(write_response(&mut small, &resp), 2);
        assert_eq!(small, [7, 0]);
    }
}
