//! From the table the kernel has to the table pulse wants: the smallest
//! ordered list of IPVS operations, [`plan`] (or [`plan_within`], for some
//! services only, with what is draining).
//!
//! pulse plans against what the kernel holds, never against its previous
//! configuration, so a reload, a crash and a hand edit are the same
//! problem: what the kernel holds is what the kernel last acknowledged or
//! showed ([`super::task`] keeps it). Rules:
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

use std::collections::HashSet;

use indexmap::IndexMap;

use ipvs::{
    Client, Destination, Forwarding, Operation, Service, ServiceFlags, ServiceKey, Timeouts,
    Tunnel, TunnelChecksum, TunnelKind,
};

use super::desired::{ByAddress, FastHash, Table, TableService};

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

/// Which services a plan looks at.
#[derive(Debug, Clone, Copy)]
pub enum Scope<'a> {
    /// Every service, and the timeouts.
    Everything,
    /// These services only (what a health change touched).
    Services(&'a HashSet<ServiceKey>),
}

/// The operations that turn `kernel` into `desired`, touching only what
/// `ownership` allows.
pub fn plan(kernel: &Table, desired: &Table, ownership: &Ownership) -> Vec<Operation> {
    plan_within(
        kernel,
        desired,
        &Table::default(),
        ownership,
        Scope::Everything,
    )
}

/// The operations that turn the services of `scope` in `kernel` into
/// `desired`, with `draining` kept too: services and destinations a reload
/// removed that still carry connections, at weight 0 (see
/// [`super::drain`]). What is in neither is deleted, if `ownership` allows.
pub fn plan_within(
    kernel: &Table,
    desired: &Table,
    draining: &Table,
    ownership: &Ownership,
    scope: Scope<'_>,
) -> Vec<Operation> {
    let mut operations = Vec::new();
    let wanted_keys: Vec<&ServiceKey> = match scope {
        Scope::Everything => {
            if let Some(timeouts) = timeouts_change(&kernel.timeouts, &desired.timeouts) {
                operations.push(Operation::SetTimeouts(timeouts));
            }
            desired
                .services
                .keys()
                .chain(
                    draining
                        .services
                        .keys()
                        .filter(|key| !desired.services.contains_key(*key)),
                )
                .collect()
        }
        Scope::Services(keys) => in_order(keys, &desired.services, &draining.services),
    };
    let mut removals = Vec::new();
    for key in wanted_keys {
        let wanted = desired.services.get(key);
        let drained = draining.services.get(key);
        let Some(service) = wanted.or(drained).map(|entry| &entry.service) else {
            continue;
        };
        let mut destinations: Vec<&Destination> = wanted
            .map(|entry| entry.destinations.iter().collect())
            .unwrap_or_default();
        if let Some(drained) = drained {
            for destination in &drained.destinations {
                if !destinations
                    .iter()
                    .any(|known| known.socket_address() == destination.socket_address())
                {
                    destinations.push(destination);
                }
            }
        }
        plan_service(
            kernel.services.get(key),
            service,
            &destinations,
            &mut operations,
            &mut removals,
        );
    }
    operations.extend(removals);
    let unwanted = |key: &&ServiceKey| {
        !desired.services.contains_key(*key)
            && !draining.services.contains_key(*key)
            && ownership.owns(key, desired)
    };
    let deletions: Vec<&ServiceKey> = match scope {
        Scope::Everything => kernel.services.keys().filter(unwanted).collect(),
        Scope::Services(keys) => {
            let mut present: Vec<&ServiceKey> = keys
                .iter()
                .filter(|key| kernel.services.contains_key(*key))
                .filter(unwanted)
                .collect();
            present.sort_by_key(|key| kernel.services.get_index_of(*key));
            present
        }
    };
    operations.extend(deletions.into_iter().copied().map(Operation::DeleteService));
    operations
}

/// One piece of a start's plan: the operations for the services of
/// `piece` (a run of virtual servers' services, each whole: see
/// [`super::desired::desired_in_pieces`]), and the timeouts where the piece
/// has them. Applied in order, the pieces and then [`plan_unwanted`] for
/// their union do what [`plan`] of the whole does (the same operations;
/// only a piece's destination removals come at the end of its piece, not
/// of the whole plan, which keeps the rules within each service), so the
/// kernel can take the first pieces while the rest are computed.
pub fn plan_piece(kernel: &Table, piece: &Table, ownership: &Ownership) -> Vec<Operation> {
    let mut operations = Vec::new();
    if let Some(timeouts) = timeouts_change(&kernel.timeouts, &piece.timeouts) {
        operations.push(Operation::SetTimeouts(timeouts));
    }
    operations.extend(plan_within(
        kernel,
        piece,
        &Table::default(),
        ownership,
        Scope::Services(&piece.keys()),
    ));
    operations
}

/// The last piece of a plan made in pieces ([`plan_piece`]): the kernel's
/// services that `desired` (the pieces' union) does not want, deleted where
/// `ownership` allows, in the kernel's order.
pub fn plan_unwanted(kernel: &Table, desired: &Table, ownership: &Ownership) -> Vec<Operation> {
    let unwanted: HashSet<ServiceKey> = kernel
        .services
        .keys()
        .filter(|key| !desired.services.contains_key(*key))
        .copied()
        .collect();
    plan_within(
        kernel,
        desired,
        &Table::default(),
        ownership,
        Scope::Services(&unwanted),
    )
}

/// `keys` that are wanted, in the order of `desired`, then of `draining`.
fn in_order<'a>(
    keys: &'a HashSet<ServiceKey>,
    desired: &IndexMap<ServiceKey, TableService, FastHash>,
    draining: &IndexMap<ServiceKey, TableService, FastHash>,
) -> Vec<&'a ServiceKey> {
    let mut ordered: Vec<(usize, usize, &ServiceKey)> = keys
        .iter()
        .filter_map(|key| match desired.get_index_of(key) {
            Some(index) => Some((0, index, key)),
            None => draining.get_index_of(key).map(|index| (1, index, key)),
        })
        .collect();
    ordered.sort_unstable_by_key(|&(part, index, _)| (part, index));
    ordered.into_iter().map(|(_, _, key)| key).collect()
}

/// One wanted service: created with its destinations if the kernel lacks
/// it, else edited where it differs; destinations it no longer wants go
/// into `removals`, which come after every creation.
fn plan_service(
    present: Option<&TableService>,
    service: &Service,
    destinations: &[&Destination],
    operations: &mut Vec<Operation>,
    removals: &mut Vec<Operation>,
) {
    let key = service.key;
    let Some(present) = present else {
        operations.push(Operation::CreateService(service.clone()));
        operations.extend(
            destinations
                .iter()
                .map(|destination| Operation::CreateDestination(key, (*destination).clone())),
        );
        return;
    };
    if service_differs(&present.service, service) {
        operations.push(Operation::UpdateService(service.clone()));
    }
    let present_destinations = ByAddress::of(&present.destinations);
    for destination in destinations {
        match present_destinations.get(destination.socket_address()) {
            None => operations.push(Operation::CreateDestination(key, (*destination).clone())),
            Some(current) if destination_differs(current, destination) => {
                operations.push(Operation::UpdateDestination(key, (*destination).clone()))
            }
            Some(_) => {}
        }
    }
    let wanted_addresses = ByAddress::of(destinations.iter().copied());
    removals.extend(
        present
            .destinations
            .iter()
            .map(Destination::socket_address)
            .filter(|address| !wanted_addresses.contains(*address))
            .map(|address| Operation::DeleteDestination(key, address)),
    );
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
    Ok(Table::of(
        services
            .into_iter()
            .zip(destinations)
            .map(|(service, destinations)| TableService {
                service,
                destinations,
            }),
        client.timeouts()?,
    ))
}

#[cfg(test)]
mod tests;
