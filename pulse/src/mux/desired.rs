//! What the Mux wants of the kernel, from a reading of the cluster store:
//! pure, no I/O.
//!
//! Rules:
//! - **A tenant per network with VIPs**, each in a network namespace of
//!   its own (docs/sdn.md says why: IPVS's direct routing looks up the
//!   route to a destination by its address alone, so two tenants' DIPs of
//!   the same address need two routing tables). Its VXLAN device (the VNI)
//!   is created in the Mux's namespace, where its UDP socket stays on the
//!   underlay, and moved into the tenant's.
//! - **A DIP is reachable** when a host agent registered it in its network
//!   with its MAC, and that host is registered with its VTEP: then it has a
//!   route on the tenant's VXLAN device, a permanent neighbour entry (its
//!   MAC) and an FDB entry (the MAC behind the host's VTEP). A DIP no host
//!   has registered, or more than one has, is not reachable: where to send
//!   is unknown, and guessing would send a tenant's packets to another's.
//! - **A DIP serves a VIP** when it is reachable and its host agent has not
//!   reported it down on that VIP's backend port; before any report it
//!   serves, unless one of its probes is `alpha` (keepalived's rule). It is
//!   an IPVS destination with direct routing, its backend port and the
//!   policy's weight; the host agent translates the frontend port.
//! - **`mh` falls back, and hashes the connection.** A service whose
//!   scheduler is `mh` (Maglev hashing, the one every Mux computes alike
//!   from the same destinations) gets `mh-fallback`: a flow that hashes to
//!   a destination at weight 0 or overloaded is given the next one in the
//!   table rather than dropped. Without persistence it gets `mh-port`
//!   too: the kernel then hashes the client's address and port, so each
//!   connection is placed on its own (a cloud load balancer's default,
//!   Ananta's five-tuple hash; the VIP's address and port are the
//!   service's). A persistent VIP hashes the client's address alone: every
//!   Mux then sends all of a client's connections to one DIP, which is
//!   the affinity persistence asks for, kept across Muxes without sharing
//!   IPVS's persistence templates.
//! - **An `mh` VIP keeps a DIP reported down, at weight 0**, created at
//!   its policy weight first ([`super::maglev`]): its rows of Maglev's
//!   table stay its own, so every Mux, whatever health it saw when, holds
//!   the same table, and only the down DIP's flows move (on to the next
//!   DIP in the table, by `mh-fallback`). Other schedulers lose it.
//! - **A VIP is announced while this Mux can serve it**: while one of its
//!   services has a DIP serving at a weight above 0. Announced, it has a
//!   route in the Mux's announce table, which the BGP daemon beside the
//!   Mux exports to the routers (docs/sdn.md); withdrawn, the routers send
//!   its flows to the Muxes that still announce it.
//! - The Mux sends no probe: health is only what host agents wrote.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::net::IpAddr;

use fulcrum_cluster::schema;
use fulcrum_cluster::state::State;
use fulcrum_cluster::store::Reading;
use ipvs::{Destination, Forwarding, Service, ServiceFlags, ServiceKey};

use super::maglev::{CreationWeights, MAGLEV};
use crate::lvs::desired::{Table, TableService};

/// Everything the Mux programs, by VNI.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Overlay {
    /// The policy revision this was computed from.
    pub revision: u64,
    pub tenants: BTreeMap<u32, Tenant>,
    /// What the reading held that the Mux cannot use, in words.
    pub problems: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tenant {
    pub network: String,
    /// The tenant's VIPs: local in its namespace, routed to it from the
    /// Mux's.
    pub vips: BTreeSet<IpAddr>,
    /// Its reachable DIPs.
    pub dips: BTreeMap<IpAddr, Neighbour>,
    pub table: Table,
    /// The VIPs this Mux can serve: announced.
    pub announced: BTreeSet<IpAddr>,
    /// Destinations wanted at weight 0 (down) that are created at their
    /// policy weight first.
    pub creation_weights: CreationWeights,
}

/// Where a DIP is on the overlay.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Neighbour {
    pub mac: [u8; 6],
    /// The VTEP of the host that holds it.
    pub vtep: IpAddr,
}

/// The schema's protocols as IPVS names them, one table for both ways.
const PROTOCOLS: [(schema::Protocol, ipvs::Protocol); 3] = [
    (schema::Protocol::Tcp, ipvs::Protocol::Tcp),
    (schema::Protocol::Udp, ipvs::Protocol::Udp),
    (schema::Protocol::Sctp, ipvs::Protocol::Sctp),
];

/// IPVS's name for the schema's `protocol`.
pub fn ipvs_protocol(protocol: schema::Protocol) -> ipvs::Protocol {
    PROTOCOLS
        .iter()
        .find(|(schema, _)| *schema == protocol)
        .map(|(_, ipvs)| *ipvs)
        .expect("every schema protocol is IPVS's")
}

/// The schema's name for IPVS's `protocol`, if it has one.
pub fn schema_protocol(protocol: ipvs::Protocol) -> Option<schema::Protocol> {
    PROTOCOLS
        .iter()
        .find(|(_, ipvs)| *ipvs == protocol)
        .map(|(schema, _)| *schema)
}

/// The overlay a reading of the store describes.
pub fn overlay(reading: &Reading) -> Overlay {
    let state = State::of(reading);
    let mut overlay = Overlay {
        revision: state.policy_revision,
        problems: state.problems.clone(),
        ..Overlay::default()
    };
    // Where each registered DIP is, once.
    let mut reachable: HashMap<(String, IpAddr), (String, Neighbour)> = HashMap::new();
    for ((network, address), holders) in state.holders() {
        match holders.as_slice() {
            [registered] => {
                let Some(mac) = fulcrum_overlay::parse_mac(&registered.dip.mac) else {
                    overlay.problems.push(format!(
                        "{}: '{}' is not a MAC address",
                        schema::local_dip(&registered.host, &network, address),
                        registered.dip.mac
                    ));
                    continue;
                };
                match state.hosts.get(&registered.host) {
                    Some(host) => {
                        reachable.insert(
                            (network, address),
                            (
                                registered.host.clone(),
                                Neighbour {
                                    mac,
                                    vtep: host.vtep,
                                },
                            ),
                        );
                    }
                    None => overlay.problems.push(format!(
                        "DIP {address} of network {network}: its host {} is not registered",
                        registered.host
                    )),
                }
            }
            _ => overlay.problems.push(format!(
                "DIP {address} of network {network} is registered by several hosts: {}",
                holders
                    .iter()
                    .map(|registered| registered.host.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
        }
    }
    // VIPs in key order (the reading's): every Mux adds a service's
    // destinations in the policy's order, so that `mh` chooses alike.
    for (key, vip) in &state.vips {
        let (address, protocol, port) = (key.address, key.protocol, key.port);
        let Some(vni) = state.networks.get(&vip.network).map(|network| network.vni) else {
            overlay.problems.push(format!(
                "{}: its network '{}' is not in the policy",
                schema::vip(address, protocol, port),
                vip.network
            ));
            continue;
        };
        let tenant = overlay.tenants.entry(vni).or_insert_with(|| Tenant {
            network: vip.network.clone(),
            vips: BTreeSet::new(),
            dips: BTreeMap::new(),
            table: Table::default(),
            announced: BTreeSet::new(),
            creation_weights: CreationWeights::new(),
        });
        tenant.vips.insert(address);
        let key = ServiceKey::Address {
            protocol: ipvs_protocol(protocol),
            address,
            port,
        };
        let mut service = Service::new(key, vip.scheduler.clone());
        if let Some(timeout) = vip.persistence_timeout {
            service.flags |= ServiceFlags::PERSISTENT;
            service.timeout = timeout;
        }
        if vip.scheduler == MAGLEV {
            service.flags |= ServiceFlags::SH_FALLBACK;
            if vip.persistence_timeout.is_none() {
                service.flags |= ServiceFlags::SH_PORT;
            }
        }
        let mut destinations = Vec::new();
        for dip in &vip.dips {
            let Some((host, neighbour)) = reachable.get(&(vip.network.clone(), dip.address)) else {
                continue;
            };
            tenant.dips.insert(dip.address, *neighbour);
            let reported = state
                .health
                .get(&(host.clone(), vip.network.clone(), dip.address, dip.port))
                .copied();
            let alpha = dip.probes.iter().any(|probe| probe.timing().alpha);
            let up = reported.unwrap_or(!alpha);
            if !up && vip.scheduler != MAGLEV {
                continue;
            }
            let address = std::net::SocketAddr::new(dip.address, dip.port);
            let mut destination = Destination::new(address, Forwarding::Route);
            destination.weight = if up { dip.weight } else { 0 };
            if !up && dip.weight > 0 {
                tenant.creation_weights.insert((key, address), dip.weight);
            }
            destinations.push(destination);
        }
        if destinations
            .iter()
            .any(|destination| destination.weight > 0)
        {
            tenant.announced.insert(address);
        }
        tenant.table.insert(TableService {
            service,
            destinations,
        });
    }
    overlay
}

#[cfg(test)]
mod tests;
