//! From the table the kernel has to the table pulse wants: the smallest
//! ordered list of IPVS operations, [`plan`].
//!
//! pulse reconciles against what the kernel reports, never against its
//! previous configuration, so a reload, a crash and a hand edit are the
//! same problem. Rules:
//!
//! - **Edit in place.** A service or destination whose parameters differ
//!   is updated (`UpdateService`, `UpdateDestination`), never deleted and
//!   created again: deleting a destination ends its connections' scheduling
//!   and deleting a service drops its connections. Only a different key
//!   (the kernel cannot change a service's protocol, address, port, mark or
//!   family, nor a destination's address, port or family) is a delete and a
//!   create, because that is a different object.
//! - **Creates first, deletes last.** A new service gets its destinations
//!   right after it; within a service new destinations come before removed
//!   ones (a sorry server enters before the real servers leave), and
//!   services no longer wanted go last.
//! - **Ownership.** pulse touches only services it owns ([`Ownership`]):
//!   those whose key matches a configured virtual server, which it adopts as
//!   they are (keepalived does the same at start: it adds its services and
//!   destinations over whatever is there, and on a restart finds its own),
//!   plus those it created or adopted earlier in this run, so a virtual
//!   server dropped on reload is deleted. Services created by others are
//!   left alone unless `lvs_flush` asks for everything
//!   ([`Ownership::Everything`]). Within an owned service every destination
//!   is pulse's: one added by hand is removed as drift.
//! - **Compare only what the kernel reports faithfully** ([`service_differs`],
//!   [`destination_differs`]): the kernel adds its own `HASHED` flag to
//!   every service and ignores the one sent; the timeout and netmask only
//!   mean something for persistent services; tunnel ports only for GUE and
//!   checksum flags only for GUE and GRE; counters and statistics are never
//!   compared. A destination deleted while connections use it waits in the
//!   kernel's trash, which dumps do not list: it reads as absent, and
//!   creating it again takes it out of the trash with the weight sent.

use std::collections::{HashMap, HashSet};
use std::net::SocketAddr;

use ipvs::{
    Client, Destination, Forwarding, Operation, Service, ServiceFlags, ServiceKey, Timeouts,
    Tunnel, TunnelChecksum, TunnelKind,
};

use crate::desired::{Table, TableService};

/// Which kernel services pulse may change or delete.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ownership {
    /// Those of the desired table, plus these keys (created or adopted
    /// earlier in this run).
    Matching(HashSet<ServiceKey>),
    /// Every service (`lvs_flush` at start): those not desired are deleted.
    Everything,
}

impl Default for Ownership {
    fn default() -> Self {
        Ownership::Matching(HashSet::new())
    }
}

impl Ownership {
    pub fn owns(&self, key: &ServiceKey, desired: &Table) -> bool {
        match self {
            Ownership::Everything => true,
            Ownership::Matching(keys) => keys.contains(key) || desired.service(key).is_some(),
        }
    }

    /// After a plan is applied: what pulse owns from then on (the desired
    /// services; those deleted are gone).
    pub fn after(desired: &Table) -> Ownership {
        Ownership::Matching(desired.keys())
    }
}

/// The operations that turn `kernel` into `desired`, touching only what
/// `ownership` allows.
pub fn plan(kernel: &Table, desired: &Table, ownership: &Ownership) -> Vec<Operation> {
    let mut operations = Vec::new();
    if let Some(timeouts) = timeouts_change(&kernel.timeouts, &desired.timeouts) {
        operations.push(Operation::SetTimeouts(timeouts));
    }
    let kernel_services: HashMap<ServiceKey, &TableService> = kernel
        .services
        .iter()
        .map(|entry| (entry.service.key, entry))
        .collect();
    let mut removals = Vec::new();
    for wanted in &desired.services {
        let key = wanted.service.key;
        let Some(present) = kernel_services.get(&key) else {
            operations.push(Operation::CreateService(wanted.service.clone()));
            operations.extend(
                wanted
                    .destinations
                    .iter()
                    .map(|destination| Operation::CreateDestination(key, destination.clone())),
            );
            continue;
        };
        if service_differs(&present.service, &wanted.service) {
            operations.push(Operation::UpdateService(wanted.service.clone()));
        }
        let present_destinations: HashMap<SocketAddr, &Destination> = present
            .destinations
            .iter()
            .map(|destination| (destination.socket_address(), destination))
            .collect();
        for destination in &wanted.destinations {
            match present_destinations.get(&destination.socket_address()) {
                None => operations.push(Operation::CreateDestination(key, destination.clone())),
                Some(current) if destination_differs(current, destination) => {
                    operations.push(Operation::UpdateDestination(key, destination.clone()))
                }
                Some(_) => {}
            }
        }
        let wanted_addresses: HashSet<SocketAddr> = wanted
            .destinations
            .iter()
            .map(Destination::socket_address)
            .collect();
        removals.extend(
            present
                .destinations
                .iter()
                .map(Destination::socket_address)
                .filter(|address| !wanted_addresses.contains(address))
                .map(|address| Operation::DeleteDestination(key, address)),
        );
    }
    operations.extend(removals);
    operations.extend(
        kernel
            .services
            .iter()
            .map(|entry| entry.service.key)
            .filter(|key| desired.service(key).is_none() && ownership.owns(key, desired))
            .map(Operation::DeleteService),
    );
    operations
}

/// Whether the kernel's service must be edited to be `desired`.
pub fn service_differs(kernel: &Service, desired: &Service) -> bool {
    // The kernel sets HASHED on every service it holds and ignores it in
    // requests (it strips it on add, forces it on edit).
    let flags = |service: &Service| service.flags & !ServiceFlags::HASHED;
    if kernel.scheduler != desired.scheduler
        || flags(kernel) != flags(desired)
        || kernel.persistence_engine != desired.persistence_engine
    {
        return true;
    }
    // The timeout and netmask matter only to persistent services (and are
    // then compared as the kernel reports them: an IPv4 mask, an IPv6
    // prefix length).
    desired.flags.contains(ServiceFlags::PERSISTENT)
        && (kernel.timeout != desired.timeout || kernel.netmask != desired.netmask)
}

/// Whether the kernel's destination must be edited to be `desired`.
pub fn destination_differs(kernel: &Destination, desired: &Destination) -> bool {
    normal_forwarding(kernel.forwarding) != normal_forwarding(desired.forwarding)
        || kernel.weight != desired.weight
        || kernel.upper_threshold != desired.upper_threshold
        || kernel.lower_threshold != desired.lower_threshold
}

/// Tunnel parameters the kernel ignores zeroed: the port outside GUE, the
/// checksum flags outside GUE and GRE.
fn normal_forwarding(forwarding: Forwarding) -> Forwarding {
    match forwarding {
        Forwarding::Tunnel(tunnel) => Forwarding::Tunnel(Tunnel {
            kind: tunnel.kind,
            port: match tunnel.kind {
                TunnelKind::Gue => tunnel.port,
                _ => 0,
            },
            checksum: match tunnel.kind {
                TunnelKind::Gue | TunnelKind::Gre => tunnel.checksum,
                _ => TunnelChecksum::NoChecksum,
            },
        }),
        other => other,
    }
}

/// The timeouts to set, if any differ: only those (0 leaves the kernel's
/// value as it is, which is also how "not configured" reads).
fn timeouts_change(kernel: &Timeouts, desired: &Timeouts) -> Option<Timeouts> {
    let pick = |current: u32, wanted: u32| {
        if wanted != 0 && wanted != current {
            wanted
        } else {
            0
        }
    };
    let change = Timeouts {
        tcp: pick(kernel.tcp, desired.tcp),
        tcp_fin: pick(kernel.tcp_fin, desired.tcp_fin),
        udp: pick(kernel.udp, desired.udp),
    };
    (change != Timeouts::default()).then_some(change)
}

/// What the kernel holds: every service with its destinations, and the
/// timeouts.
pub fn read(client: &mut Client) -> Result<Table, ipvs::Error> {
    let services = client.services()?;
    let keys: Vec<ServiceKey> = services.iter().map(|service| service.key).collect();
    let destinations = client.destinations_of(&keys)?;
    Ok(Table {
        services: services
            .into_iter()
            .zip(destinations)
            .map(|(service, destinations)| TableService {
                service,
                destinations,
            })
            .collect(),
        timeouts: client.timeouts()?,
    })
}

#[cfg(test)]
mod tests;
