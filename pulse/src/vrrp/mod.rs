//! VRRP (RFC 3768 version 2, RFC 5798 version 3) as keepalived 2.2 speaks
//! it. Shaped as the LVS half is: pure parts, thin effects, one loop.
//!
//! Without I/O: the advertisement's wire format ([`packet`]); what a
//! configuration asks for, and what a reload keeps ([`plan`]); an
//! instance's parameters ([`settings`]) and its state machine
//! ([`machine`]); a `vrrp_sync_group`'s coordination ([`sync`]); the
//! addresses adverts go from ([`sources`]); catching up after lost
//! events ([`resync`]); tracking weights ([`track`]); the interfaces' pace
//! of gratuitous ARPs and neighbour advertisements ([`garp`]).
//!
//! With I/O: sockets (IP protocol 112), gratuitous ARP and neighbour
//! advertisements ([`io`]); interfaces and virtual addresses
//! ([`addresses`]), routes and rules ([`routes`]) through rtnetlink, and
//! the `static_*` blocks held from start to stop ([`statics`]); the
//! nftables drop rules of a master without accept mode ([`firewall`]);
//! the kernel's link and address events ([`netlink_events`]); giving a
//! planned instance its interface, sockets and machine ([`setup`]);
//! carrying out the machines' actions ([`effects`]); and the task whose one
//! loop feeds the machines [`Event`]s and dispatches their [`Action`]s
//! ([`task`]).

pub mod addresses;
pub mod effects;
pub mod firewall;
pub mod garp;
pub mod io;
pub mod machine;
pub mod netlink_events;
pub mod packet;
pub mod plan;
pub mod process_events;
pub mod process_monitor;
pub mod report;
pub mod resync;
pub mod routes;
pub mod settings;
pub mod setup;
pub mod sources;
pub mod statics;
pub mod sync;
pub mod task;
pub mod track;
pub mod vmac;

pub use machine::{Action, DropReason, Event, Machine, Received, State, Statistics};
pub use packet::{Addresses, Kind, Packet, Repr};
pub use settings::{InstanceSettings, SettingsError, Version};
pub use setup::VrrpError;
pub use sync::{Decision, SyncGroup};
pub use task::Vrrp;

#[cfg(test)]
mod tests;
