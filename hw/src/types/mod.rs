//! Public parameter, result and error types of the model.

mod config;
mod device;
mod eth;
mod events;
mod params;
mod stats;

pub use config::*;
pub use device::*;
pub use eth::*;
pub use events::*;
pub use params::*;
pub use stats::*;
