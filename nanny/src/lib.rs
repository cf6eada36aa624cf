//! Health checkers for real servers, with keepalived's semantics.
//!
//! - [`machine`]: one checker's schedule and up/down state, without I/O.
//! - [`driver`]: the I/O of one attempt, per kind of check, on tokio.
//! - [`outcome`]: what an attempt found.
//! - [`scheduler`]: runs a plan's checks, streams state changes.
//! - [`spec`]: checks in nanny's terms, deduplicated into a [`spec::Plan`].

pub mod driver;
pub mod machine;
pub mod outcome;
pub mod scheduler;
pub mod spec;
