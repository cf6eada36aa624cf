//! VRRP (RFC 3768 version 2, RFC 5798 version 3) as keepalived 2.2 speaks
//! it: the advertisement's wire format ([`packet`]), an instance's
//! parameters resolved from the configuration ([`settings`]) and its state
//! machine without I/O ([`machine`]).
//!
//! Sockets (IP protocol 112), gratuitous ARP and neighbour advertisements,
//! and adding addresses through rtnetlink belong to the daemon, which feeds
//! the machine [`Event`]s and carries out its [`Action`]s.

pub mod machine;
pub mod packet;
pub mod settings;

pub use machine::{Action, DropReason, Event, Machine, Received, State, Statistics};
pub use packet::{Addresses, Kind, Packet, Repr};
pub use settings::{InstanceSettings, SettingsError, Version};

#[cfg(test)]
mod tests;
