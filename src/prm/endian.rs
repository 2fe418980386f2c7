//! Explicit big-endian field types.
//!
//! Every multi-byte field the device reads or writes (WQE segments, CQEs, doorbell records,
//! the 64-bit doorbell itself) is big-endian (PRM; `__be16/__be32/__be64` in `mlx5dv.h`).
//! These wrappers hold the bytes in wire order, so a layout struct made of them is exactly the
//! device's bytes. They are byte arrays: alignment 1, usable at any offset (the control
//! segment's stream id sits at the odd offset 9).

macro_rules! be_type {
    ($(#[$doc:meta])* $name:ident, $int:ty, $n:literal) => {
        $(#[$doc])*
        #[repr(transparent)]
        #[derive(Clone, Copy, Default, PartialEq, Eq, Hash)]
        pub struct $name([u8; $n]);

        impl $name {
            /// The field holding `value` in big-endian byte order.
            #[inline(always)]
            pub const fn new(value: $int) -> Self {
                Self(value.to_be_bytes())
            }

            /// The field's value in host order.
            #[inline(always)]
            pub const fn get(self) -> $int {
                <$int>::from_be_bytes(self.0)
            }

            /// The field from its wire bytes.
            #[inline(always)]
            pub const fn from_bytes(bytes: [u8; $n]) -> Self {
                Self(bytes)
            }

            /// The wire bytes.
            #[inline(always)]
            pub const fn to_bytes(self) -> [u8; $n] {
                self.0
            }
        }

        impl core::fmt::Debug for $name {
            fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                write!(f, "{:#x}", self.get())
            }
        }

        impl From<$int> for $name {
            #[inline(always)]
            fn from(value: $int) -> Self {
                Self::new(value)
            }
        }

        impl From<$name> for $int {
            #[inline(always)]
            fn from(value: $name) -> $int {
                value.get()
            }
        }
    };
}

be_type!(
    /// A big-endian 16-bit field (`__be16`).
    Be16, u16, 2
);
be_type!(
    /// A big-endian 32-bit field (`__be32`).
    Be32, u32, 4
);
be_type!(
    /// A big-endian 64-bit field (`__be64`).
    Be64, u64, 8
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wire_order_is_big_endian() {
        assert_eq!(Be16::new(0x1234).to_bytes(), [0x12, 0x34]);
        assert_eq!(Be32::new(0x1234_5678).to_bytes(), [0x12, 0x34, 0x56, 0x78]);
        assert_eq!(
            Be64::new(0x0102_0304_0506_0708).to_bytes(),
            [1, 2, 3, 4, 5, 6, 7, 8]
        );
        assert_eq!(
            Be32::from_bytes([0xde, 0xad, 0xbe, 0xef]).get(),
            0xdead_beef
        );
        assert_eq!(core::mem::align_of::<Be64>(), 1);
    }
}
