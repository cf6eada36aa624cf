//! Health checkers for real servers, with keepalived's semantics.
//!
//! - [`machine`]: one checker's schedule and up/down state, without I/O.
//! - [`outcome`]: what an attempt found.
//! - [`spec`]: checks in nanny's terms, deduplicated into a [`spec::Plan`].

pub mod machine;
pub mod outcome;
pub mod spec;
