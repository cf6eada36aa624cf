//! Health checkers for real servers, with keepalived's semantics.
//!
//! - [`machine`]: one checker's schedule and up/down state, without I/O.
//! - [`outcome`]: what an attempt found.

pub mod machine;
pub mod outcome;
