//! mlx5-direct (work in progress).
#![deny(missing_docs)]
#![deny(unsafe_op_in_unsafe_fn)]

pub mod cq;
pub mod error;
pub mod mmio;
pub mod prm;
mod ring;
pub mod rq;
pub mod sq;
