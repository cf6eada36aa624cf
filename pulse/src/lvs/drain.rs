//! What a reload removes is drained, not deleted at once: [`Draining`].
//!
//! Deleting a destination makes the kernel drop the packets of its
//! established connections (with the default `expire_nodest_conn` 0 they
//! hang until they time out), and deleting a service drops all of its
//! connections. So what a reload removes stays, at weight 0 (no new
//! connection), until the kernel counts no connection on it; then the plan
//! deletes it. keepalived deletes at once. Health failures still remove at
//! once, as keepalived does: a dead server's connections are lost anyway.
//!
//! Rules:
//! - A destination or service is draining from the reload that removed it
//!   until the kernel shows it without connections, or without it at all;
//!   a reload that configures it again ends its draining.
//! - Connections are the kernel's active and inactive counts; persistence
//!   templates do not count (they carry no traffic, and expire on their
//!   own).
//! - A draining service keeps the parameters the kernel has, and only its
//!   destinations that still carry connections.

use std::collections::HashSet;
use std::net::SocketAddr;

use ipvs::ServiceKey;

use super::desired::{ByAddress, Table, TableService};

/// Destinations and services on their way out after a reload.
#[derive(Debug, Default)]
pub struct Draining {
    destinations: HashSet<(ServiceKey, SocketAddr)>,
    services: HashSet<ServiceKey>,
}

impl Draining {
    /// What the move from `before` (the services of a desired table that
    /// the move recomputes: all of them, or a reload's changed ones) to
    /// `after` removes.
    pub fn record<'a>(
        &mut self,
        before: impl IntoIterator<Item = &'a TableService>,
        after: &Table,
    ) {
        for entry in before {
            let key = &entry.service.key;
            let Some(kept) = after.service(key) else {
                self.services.insert(*key);
                continue;
            };
            let kept = ByAddress::of(&kept.destinations);
            for destination in &entry.destinations {
                let address = destination.socket_address();
                if !kept.contains(address) {
                    self.destinations.insert((*key, address));
                }
            }
        }
    }

    pub fn is_empty(&self) -> bool {
        self.destinations.is_empty() && self.services.is_empty()
    }

    /// The services holding something that drains: whose counters to read.
    pub fn keys(&self) -> HashSet<ServiceKey> {
        self.services
            .iter()
            .copied()
            .chain(self.destinations.iter().map(|(key, _)| *key))
            .collect()
    }

    /// What is to stay, at weight 0, given what the kernel holds (`kernel`)
    /// and what is configured (`desired`): the services and destinations
    /// that still carry connections. Forgets the rest (logged as drained),
    /// which the plan then deletes, and whatever is configured again.
    pub fn table(&mut self, kernel: &Table, desired: &Table) -> Table {
        let mut table = Table::default();
        self.services.retain(|key| {
            if desired.service(key).is_some() {
                // Configured again.
                return false;
            }
            let Some(present) = kernel.service(key) else {
                return false;
            };
            let busy: Vec<ipvs::Destination> = present
                .destinations
                .iter()
                .filter(|destination| carries_connections(destination))
                .map(|destination| ipvs::Destination {
                    weight: 0,
                    ..destination.clone()
                })
                .collect();
            if busy.is_empty() {
                tracing::info!("{key} drained");
                return false;
            }
            table.insert(TableService {
                service: present.service.clone(),
                destinations: busy,
            });
            true
        });
        self.destinations.retain(|(key, address)| {
            let Some(wanted) = desired.service(key) else {
                // Its service was dropped since: that one drains whole.
                return false;
            };
            if wanted
                .destinations
                .iter()
                .any(|destination| destination.socket_address() == *address)
            {
                return false;
            }
            let Some(present) = kernel.service(key).and_then(|present| {
                present
                    .destinations
                    .iter()
                    .find(|destination| destination.socket_address() == *address)
            }) else {
                return false;
            };
            if !carries_connections(present) {
                tracing::info!("{address} of {key} drained");
                return false;
            }
            let entry = table.services.entry(*key).or_insert_with(|| TableService {
                service: wanted.service.clone(),
                destinations: Vec::new(),
            });
            entry.destinations.push(ipvs::Destination {
                weight: 0,
                ..present.clone()
            });
            true
        });
        table
    }
}

/// Connections the kernel still forwards to `destination`: persistence
/// templates do not count (they carry no traffic, and expire on their own).
fn carries_connections(destination: &ipvs::Destination) -> bool {
    destination
        .counters
        .is_some_and(|counters| counters.active > 0 || counters.inactive > 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lvs::plan::{Ownership, Scope, plan_within};
    use ipvs::{ConnectionCounters, Destination, Forwarding, Operation, Protocol, Service};

    fn web() -> ServiceKey {
        ServiceKey::Address {
            protocol: Protocol::Tcp,
            address: "192.0.2.1".parse().unwrap(),
            port: 80,
        }
    }

    fn destination(address: &str, weight: u32, active: u32, inactive: u32) -> Destination {
        Destination {
            weight,
            counters: Some(ConnectionCounters {
                active,
                inactive,
                persistent: 7,
            }),
            ..Destination::new(address.parse().unwrap(), Forwarding::Masquerade)
        }
    }

    fn table(services: Vec<(ServiceKey, Vec<Destination>)>) -> Table {
        Table::of(
            services
                .into_iter()
                .map(|(key, destinations)| TableService {
                    service: Service::new(key, "rr"),
                    destinations,
                }),
            Default::default(),
        )
    }

    fn weights(table: &Table) -> Vec<(ServiceKey, String, u32)> {
        table
            .services
            .values()
            .flat_map(|entry| {
                entry.destinations.iter().map(|destination| {
                    (
                        entry.service.key,
                        destination.socket_address().to_string(),
                        destination.weight,
                    )
                })
            })
            .collect()
    }

    #[test]
    fn what_a_reload_removes_drains_at_weight_0_until_it_has_no_connection() {
        let dns = ServiceKey::Address {
            protocol: Protocol::Udp,
            address: "192.0.2.2".parse().unwrap(),
            port: 53,
        };
        let before = table(vec![
            (
                web(),
                vec![
                    destination("10.0.0.1:80", 1, 0, 0),
                    destination("10.0.0.2:80", 1, 0, 0),
                    destination("10.0.0.3:80", 1, 0, 0),
                ],
            ),
            (dns, vec![destination("10.0.0.9:53", 1, 0, 0)]),
        ]);
        let after = table(vec![(web(), vec![destination("10.0.0.1:80", 1, 0, 0)])]);
        let mut draining = Draining::default();
        draining.record(before.services.values(), &after);
        assert_eq!(draining.keys(), HashSet::from([web(), dns]));

        // .2 has an active connection, .3 none; the removed service has
        // an inactive one.
        let kernel = table(vec![
            (
                web(),
                vec![
                    destination("10.0.0.1:80", 1, 0, 0),
                    destination("10.0.0.2:80", 1, 1, 0),
                    destination("10.0.0.3:80", 1, 0, 0),
                ],
            ),
            (dns, vec![destination("10.0.0.9:53", 1, 0, 1)]),
        ]);
        let kept = draining.table(&kernel, &after);
        assert_eq!(
            weights(&kept),
            [
                (dns, "10.0.0.9:53".into(), 0),
                (web(), "10.0.0.2:80".into(), 0),
            ]
        );
        // The plan sets the weights to 0 and deletes .3 alone, last.
        let operations = plan_within(
            &kernel,
            &after,
            &kept,
            &Ownership::after(&after),
            Scope::Everything,
        );
        let texts: Vec<String> = operations.iter().map(ToString::to_string).collect();
        assert_eq!(texts.len(), 3, "{texts:?}");
        assert!(
            matches!(&operations[..], [
                Operation::UpdateDestination(_, second),
                Operation::UpdateDestination(_, service),
                Operation::DeleteDestination(_, third),
            ] if second.weight == 0 && service.weight == 0 && third.to_string() == "10.0.0.3:80"),
            "{texts:?}"
        );
        // Planned for the one service alone, the same operations of it.
        let operations = plan_within(
            &kernel,
            &after,
            &kept,
            &Ownership::after(&after),
            Scope::Services(&HashSet::from([web()])),
        );
        assert_eq!(operations.len(), 2, "{operations:?}");

        // Their connections end (persistence templates do not count): they
        // are forgotten, and the next plan deletes them.
        let kernel = table(vec![
            (
                web(),
                vec![
                    destination("10.0.0.1:80", 1, 0, 0),
                    destination("10.0.0.2:80", 0, 0, 0),
                ],
            ),
            (dns, vec![destination("10.0.0.9:53", 0, 0, 0)]),
        ]);
        let kept = draining.table(&kernel, &after);
        assert!(kept.services.is_empty());
        assert!(draining.is_empty());
        let operations = plan_within(
            &kernel,
            &after,
            &kept,
            &Ownership::after(&before),
            Scope::Everything,
        );
        let texts: Vec<String> = operations.iter().map(ToString::to_string).collect();
        assert_eq!(
            texts,
            [
                "delete destination 10.0.0.2:80 of service TCP 192.0.2.1:80",
                "delete service UDP 192.0.2.2:53"
            ]
        );
    }

    #[test]
    fn configured_again_it_stops_draining() {
        let before = table(vec![(web(), vec![destination("10.0.0.2:80", 1, 0, 0)])]);
        let after = table(vec![(web(), vec![])]);
        let mut draining = Draining::default();
        draining.record(before.services.values(), &after);
        let kernel = table(vec![(web(), vec![destination("10.0.0.2:80", 1, 4, 0)])]);
        assert_eq!(draining.table(&kernel, &after).services.len(), 1);
        assert!(draining.table(&kernel, &before).services.is_empty());
        assert!(draining.is_empty());
    }
}
