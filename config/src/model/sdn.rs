//! The SDN mode's blocks (docs/sdn.md): tenant networks, and who a daemon
//! is on the underlay.

use std::net::IpAddr;

use serde::Serialize;

/// `virtual_network NAME { vni N [interface IF] }`: a tenant network.
/// In a policy (`pulse --apply`) it names the network a virtual server's
/// real servers (DIPs) are in; in a host agent's file it also says which
/// local segment that tenant's DIPs attach to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct VirtualNetwork {
    pub name: String,
    /// The VXLAN network identifier, 1 to 16,777,215.
    pub vni: u32,
    /// `interface`: the host agent's segment for this network.
    pub interface: Option<String>,
}

/// `mux { vtep ADDRESS ... }` or `host_agent { vtep ADDRESS }`: the
/// daemon's own tunnel endpoint on the underlay, and the Mux's
/// announcements.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Endpoint {
    pub vtep: IpAddr,
    /// The Mux's `announce_table`: the kernel routing table where it keeps
    /// a /32 (or /128) route for each VIP it can serve, for the BGP
    /// daemon beside it to announce ([`DEFAULT_ANNOUNCE_TABLE`] unless
    /// written). `None` for a host agent.
    pub announce_table: Option<u32>,
    /// The Mux's `withdraw_delay`: on a graceful stop, how long it waits
    /// between withdrawing its announcements and removing what forwards
    /// (the routers moving the flows to the other Muxes meanwhile).
    /// `None` for a host agent.
    pub withdraw_delay: Option<std::time::Duration>,
}

/// The routing table a Mux announces its VIPs in unless told otherwise
/// (VXLAN's port: easy to remember beside it, unused by the system).
pub const DEFAULT_ANNOUNCE_TABLE: u32 = 4789;

/// How long a Mux waits between withdrawing and removing on a graceful
/// stop unless told otherwise: a BGP withdrawal reaches a router directly
/// peered in well under a second.
pub const DEFAULT_WITHDRAW_DELAY: std::time::Duration = std::time::Duration::from_secs(2);
