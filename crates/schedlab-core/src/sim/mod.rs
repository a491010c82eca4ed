//! Simulation primitives with no scheduler types: the event queue and the
//! seeded random generators.

mod lane;
pub mod queue;
pub mod rng;

pub use queue::EventQueue;
pub use rng::Rng;
