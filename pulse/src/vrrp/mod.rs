//! VRRP (RFC 3768 version 2, RFC 5798 version 3) as keepalived 2.2 speaks
//! it: the advertisement's wire format ([`packet`]), an instance's
//! parameters resolved from the configuration ([`settings`]) and its state
//! machine without I/O ([`machine`]), and the coordination of a
//! `vrrp_sync_group`'s members, without I/O too ([`sync`]).
//!
//! The I/O around the machines: sockets (IP protocol 112), gratuitous ARP
//! and neighbour advertisements ([`io`]), interfaces and virtual addresses
//! ([`addresses`]), the addresses adverts go from ([`sources`]), routes and rules ([`routes`]) through rtnetlink,
//! the nftables drop rules of a master without accept mode ([`firewall`]),
//! tracked scripts and files ([`track`]), and the task that feeds the
//! machines [`Event`]s and carries out their [`Action`]s ([`task`]).

pub mod addresses;
pub mod firewall;
pub mod io;
pub mod machine;
pub mod packet;
pub mod resync;
pub mod routes;
pub mod settings;
pub mod sources;
pub mod sync;
pub mod task;
pub mod track;

pub use machine::{Action, DropReason, Event, Machine, Received, State, Statistics};
pub use packet::{Addresses, Kind, Packet, Repr};
pub use settings::{InstanceSettings, SettingsError, Version};
pub use sync::{Decision, SyncGroup};
pub use task::{Vrrp, VrrpError};

#[cfg(test)]
mod tests;
