//! mlx5-direct (work in progress).
#![deny(missing_docs)]
#![deny(unsafe_op_in_unsafe_fn)]

pub mod prm;
