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

/// `mux { vtep ADDRESS }` or `host_agent { vtep ADDRESS }`: the daemon's
/// own tunnel endpoint on the underlay.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Endpoint {
    pub vtep: IpAddr,
}
