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
//! - The Mux sends no probe: health is only what host agents wrote.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::net::IpAddr;

use fulcrum_cluster::schema::{self, Health, Host, Key, LocalDip, Network, Vip};
use fulcrum_cluster::store::Reading;
use ipvs::{Destination, Forwarding, Service, ServiceFlags, ServiceKey};

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
}

/// Where a DIP is on the overlay.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Neighbour {
    pub mac: [u8; 6],
    /// The VTEP of the host that holds it.
    pub vtep: IpAddr,
}

/// A host that registered a DIP, and the MAC it found.
type Registration = (String, [u8; 6]);

/// The overlay a reading of the store describes.
pub fn overlay(reading: &Reading) -> Overlay {
    let mut overlay = Overlay::default();
    let mut networks: HashMap<String, u32> = HashMap::new();
    let mut vips: Vec<(IpAddr, schema::Protocol, u16, Vip)> = Vec::new();
    let mut hosts: HashMap<String, IpAddr> = HashMap::new();
    // (network, DIP) -> the (host, MAC) of every host that registered it.
    let mut found: HashMap<(String, IpAddr), Vec<Registration>> = HashMap::new();
    let mut health: HashMap<(String, String, IpAddr, u16), bool> = HashMap::new();
    for (text, value) in &reading.entries {
        let Ok(key) = Key::parse(text) else {
            overlay
                .problems
                .push(format!("{text}: not a key of the schema"));
            continue;
        };
        let unreadable = |error: serde_json::Error| format!("{text}: unreadable value ({error})");
        let outcome: Result<(), String> = (|| {
            match key {
                Key::PolicyRevision => {
                    let revision: schema::PolicyRevision =
                        serde_json::from_slice(value).map_err(unreadable)?;
                    overlay.revision = revision.revision;
                }
                Key::Network(name) => {
                    let network: Network = serde_json::from_slice(value).map_err(unreadable)?;
                    networks.insert(name, network.vni);
                }
                Key::Vip {
                    address,
                    protocol,
                    port,
                } => vips.push((
                    address,
                    protocol,
                    port,
                    serde_json::from_slice(value).map_err(unreadable)?,
                )),
                Key::Host(name) => {
                    let host: Host = serde_json::from_slice(value).map_err(unreadable)?;
                    hosts.insert(name, host.vtep);
                }
                Key::LocalDip {
                    host,
                    network,
                    address,
                } => {
                    let dip: LocalDip = serde_json::from_slice(value).map_err(unreadable)?;
                    let mac = mac(&dip.mac)
                        .ok_or_else(|| format!("{text}: '{}' is not a MAC address", dip.mac))?;
                    found
                        .entry((network, address))
                        .or_default()
                        .push((host, mac));
                }
                Key::Health {
                    host,
                    network,
                    address,
                    port,
                } => {
                    let value: Health = serde_json::from_slice(value).map_err(unreadable)?;
                    health.insert((host, network, address, port), value.up);
                }
                Key::Applied { .. } => {}
            }
            Ok(())
        })();
        if let Err(problem) = outcome {
            overlay.problems.push(problem);
        }
    }
    // Where each registered DIP is, once.
    let mut reachable: HashMap<(String, IpAddr), (String, Neighbour)> = HashMap::new();
    for ((network, address), holders) in found {
        match holders.as_slice() {
            [(host, mac)] => match hosts.get(host) {
                Some(vtep) => {
                    reachable.insert(
                        (network, address),
                        (
                            host.clone(),
                            Neighbour {
                                mac: *mac,
                                vtep: *vtep,
                            },
                        ),
                    );
                }
                None => overlay.problems.push(format!(
                    "DIP {address} of network {network}: its host {host} is not registered"
                )),
            },
            _ => overlay.problems.push(format!(
                "DIP {address} of network {network} is registered by several hosts: {}",
                holders
                    .iter()
                    .map(|(host, _)| host.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
        }
    }
    // VIPs in key order (the reading's): every Mux adds a service's
    // destinations in the policy's order, so that `mh` chooses alike.
    for (address, protocol, port, vip) in vips {
        let Some(&vni) = networks.get(&vip.network) else {
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
        });
        tenant.vips.insert(address);
        let key = ServiceKey::Address {
            protocol: match protocol {
                schema::Protocol::Tcp => ipvs::Protocol::Tcp,
                schema::Protocol::Udp => ipvs::Protocol::Udp,
                schema::Protocol::Sctp => ipvs::Protocol::Sctp,
            },
            address,
            port,
        };
        let mut service = Service::new(key, vip.scheduler.clone());
        if let Some(timeout) = vip.persistence_timeout {
            service.flags |= ServiceFlags::PERSISTENT;
            service.timeout = timeout;
        }
        let mut destinations = Vec::new();
        for dip in &vip.dips {
            let Some((host, neighbour)) = reachable.get(&(vip.network.clone(), dip.address)) else {
                continue;
            };
            tenant.dips.insert(dip.address, *neighbour);
            let reported = health
                .get(&(host.clone(), vip.network.clone(), dip.address, dip.port))
                .copied();
            let alpha = dip.probes.iter().any(|probe| match probe {
                schema::Probe::Tcp { timing }
                | schema::Probe::Http { timing, .. }
                | schema::Probe::Ssl { timing, .. }
                | schema::Probe::Ping { timing } => timing.alpha,
            });
            if !reported.unwrap_or(!alpha) {
                continue;
            }
            let mut destination = Destination::new(
                std::net::SocketAddr::new(dip.address, dip.port),
                Forwarding::Route,
            );
            destination.weight = dip.weight;
            destinations.push(destination);
        }
        tenant.table.insert(TableService {
            service,
            destinations,
        });
    }
    overlay
}

/// `aa:bb:cc:dd:ee:ff`.
pub fn mac(text: &str) -> Option<[u8; 6]> {
    let mut bytes = [0; 6];
    let mut parts = text.split(':');
    for byte in &mut bytes {
        let part = parts.next()?;
        if part.len() != 2 {
            return None;
        }
        *byte = u8::from_str_radix(part, 16).ok()?;
    }
    parts.next().is_none().then_some(bytes)
}

#[cfg(test)]
mod tests;
