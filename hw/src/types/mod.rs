//! Public parameter, result and error types of the model.

mod config;
mod device;
mod eth;
mod events;
mod mcast;
mod pacing;
mod params;
mod stats;
mod xrc;

pub use config::*;
pub use device::*;
pub use eth::*;
pub use events::*;
pub use mcast::*;
pub use pacing::*;
pub use params::*;
pub use stats::*;
pub use xrc::*;
