//! Byte images of the layout structs, without `unsafe`.
//!
//! Every layout is `#[repr(C)]` over fields of alignment 1 (`u8`, byte arrays, [`Be16`],
//! [`Be32`], [`Be64`]), so it has no padding and its bytes are its fields' bytes at their
//! `offset_of!`. [`wire_bytes!`] generates `to_bytes`/`from_bytes` from that; listing every
//! field in the struct literal makes a forgotten field a compile error.

use super::{Be16, Be32, Be64};

/// A field type that is its own wire bytes.
pub(crate) trait Wire: Sized {
    /// Writes the field at the start of `out`.
    fn put(&self, out: &mut [u8]);
    /// Reads the field from the start of `bytes`.
    fn take(bytes: &[u8]) -> Self;
}

impl Wire for u8 {
    fn put(&self, out: &mut [u8]) {
        out[0] = *self;
    }
    fn take(bytes: &[u8]) -> Self {
        bytes[0]
    }
}

impl<const N: usize> Wire for [u8; N] {
    fn put(&self, out: &mut [u8]) {
        out[..N].copy_from_slice(self);
    }
    fn take(bytes: &[u8]) -> Self {
        core::array::from_fn(|i| bytes[i])
    }
}

macro_rules! be_wire {
    ($($ty:ty),*) => {$(
        impl Wire for $ty {
            fn put(&self, out: &mut [u8]) {
                self.to_bytes().put(out);
            }
            fn take(bytes: &[u8]) -> Self {
                Self::from_bytes(Wire::take(bytes))
            }
        }
    )*};
}
be_wire!(Be16, Be32, Be64);

/// `to_bytes`/`from_bytes` for a layout struct of `$size` bytes whose fields are all listed.
macro_rules! wire_bytes {
    ($ty:ident, $size:expr, [$($field:ident),+ $(,)?]) => {
        const _: () = assert!(core::mem::size_of::<$ty>() == $size);

        impl $ty {
            /// The structure's bytes in wire order.
            pub fn to_bytes(&self) -> [u8; $size] {
                let mut out = [0u8; $size];
                $(
                    $crate::prm::wire::Wire::put(
                        &self.$field,
                        &mut out[core::mem::offset_of!($ty, $field)..],
                    );
                )+
                out
            }

            /// The structure read from its wire bytes.
            pub fn from_bytes(bytes: &[u8; $size]) -> Self {
                $ty {
                    $(
                        $field: $crate::prm::wire::Wire::take(
                            &bytes[core::mem::offset_of!($ty, $field)..],
                        ),
                    )+
                }
            }
        }
    };
}
pub(crate) use wire_bytes;
