//! The LVS part of pulse: the IPVS table the configuration and the health
//! checks call for, kept in the kernel.
//!
//! - [`desired`]: the table a configuration and nanny's verdicts call for
//!   (pure; keepalived's semantics).
//! - [`plan`]: the operations from what the kernel holds to that table
//!   (pure).
//! - [`drain`]: what a reload removed, kept at weight 0 while it carries
//!   connections (pure).
//! - [`task`]: the loop that applies changes as they come, in the
//!   operations they need, and verifies them.
//! - [`audit`]: the second loop, reading the whole table now and then, the
//!   cheapest way, so that hand edits are repaired.
//! - [`tap`]: told at once of what other processes change over netlink.
//! - [`alerts`]: the checkers' SMTP alerts.

pub mod alerts;
pub mod audit;
pub mod desired;
pub mod drain;
pub mod plan;
pub mod report;
pub mod tap;
pub mod task;
