//! The Linux IPVS generic netlink protocol as typed messages.
//!
//! This crate does no I/O. It has two layers:
//!
//! - **Attributes**, mirroring the kernel's `include/uapi/linux/ip_vs.h` one
//!   to one: [`IpvsMessage`] (a command and its [`IpvsAttribute`]s) with the
//!   nested [`ServiceAttribute`], [`DestinationAttribute`],
//!   [`DaemonAttribute`], [`StatsAttribute`] and [`Stats64Attribute`].
//!   Parsing then emitting reproduces the kernel's bytes, so captures can be
//!   checked exactly (`tests/captured.rs`). The one thing not kept is
//!   `NLA_F_NESTED`, which the kernel ignores in IPVS requests and never
//!   sets in its replies: requests from libnl tools such as ipvsadm carry it
//!   on their nests and re-emit without it. `IpvsMessage` implements
//!   [`GenlFamily`](netlink_packet_generic::GenlFamily), so
//!   `NetlinkMessage<GenlMessage<IpvsMessage>>` serialises and parses.
//! - **A model** for users: [`Service`] identified by a [`ServiceKey`],
//!   [`Destination`], [`SyncDaemon`], [`Timeouts`], [`Info`], with
//!   conversions to and from attributes, the [`request`] builders (one per
//!   operation) and `from_reply` parsers.
//!
//! Kernel quirks worth knowing, verified against `net/netfilter/ipvs/
//! ip_vs_ctl.c`:
//!
//! - Service and destination ports are big-endian on the wire; the sync
//!   daemon port, tunnel flags and everything else are host order; the tunnel
//!   port is big-endian again.
//! - Addresses are 16-byte `nf_inet_addr` in replies whatever the family.
//! - The netmask is a network-order IPv4 mask for IPv4 services, a host-order
//!   prefix length for IPv6 ones ([`Netmask`]).
//! - The info reply reuses the top-level attribute numbers, so parsing
//!   depends on the command.
//! - Replies reuse the NEW/SET commands (see [`IpvsCommand`]).
//! - Listing the destinations of an unknown service is an empty dump.

mod address;
mod client;
mod config;
mod daemon;
#[cfg(test)]
mod decode_tests;
mod destination;
mod error;
mod fields;
mod info;
pub mod listing;
mod message;
pub mod monitor;
mod nla;
pub mod request;
mod service;
mod stats;
#[cfg(test)]
mod testing;

pub use address::{AddressBytes, Family};
pub use client::{BatchError, Client, EncodedBatch, Errno, Error, Operation, Traffic};
pub use config::Timeouts;
pub use daemon::{DaemonAttribute, INTERFACE_NAME_MAX, SyncDaemon, SyncState};
pub use destination::{
    ConnectionCounters, Destination, DestinationAttribute, Forwarding, Tunnel, TunnelChecksum,
    TunnelKind, WEIGHT_LIMIT,
};
pub use error::{ParseError, RequestError, kernel_error_message};
pub use info::{Info, Version};
pub use message::{IPVS_GENL_NAME, IPVS_GENL_VERSION, IpvsAttribute, IpvsCommand, IpvsMessage};
pub use request::{Request, RequestKind};
pub use service::{
    Netmask, PERSISTENCE_ENGINE_NAME_MAX, Protocol, SCHEDULER_NAME_MAX, Service, ServiceAttribute,
    ServiceFlags, ServiceKey,
};
pub use stats::{Statistics, Stats64Attribute, StatsAttribute};
