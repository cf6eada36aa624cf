use std::net::{IpAddr, Ipv4Addr, SocketAddr};

use ipvs::{Family, Netmask, Protocol};

use super::*;

/// The kernel, simulated: applies operations as IPVS does, quirks
/// included (HASHED on every service it holds; a refusal for what exists
/// or does not).
fn apply(table: &mut Table, operations: &[Operation]) {
    let position = |table: &Table, key: &ServiceKey| {
        table
            .services
            .values()
            .position(|entry| entry.service.key == *key)
    };
    for operation in operations {
        match operation {
            Operation::CreateService(service) => {
                assert!(
                    position(table, &service.key).is_none(),
                    "EEXIST: {operation}"
                );
                let mut held = service.clone();
                held.flags |= ServiceFlags::HASHED;
                table.insert(TableService {
                    service: held,
                    destinations: Vec::new(),
                });
            }
            Operation::UpdateService(service) => {
                let index = position(table, &service.key).expect("ESRCH");
                let mut held = service.clone();
                held.flags |= ServiceFlags::HASHED;
                table.services[index].service = held;
            }
            Operation::DeleteService(key) => {
                let index = position(table, key).expect("ESRCH");
                table.services.shift_remove_index(index);
            }
            Operation::CreateDestination(key, destination) => {
                let index = position(table, key).expect("ESRCH");
                let list = &mut table.services[index].destinations;
                assert!(
                    !list
                        .iter()
                        .any(|held| held.socket_address() == destination.socket_address()),
                    "EEXIST: {operation}"
                );
                list.push(destination.clone());
            }
            Operation::UpdateDestination(key, destination) => {
                let index = position(table, key).expect("ESRCH");
                let held = table.services[index]
                    .destinations
                    .iter_mut()
                    .find(|held| held.socket_address() == destination.socket_address())
                    .expect("ENOENT");
                *held = destination.clone();
            }
            Operation::DeleteDestination(key, address) => {
                let index = position(table, key).expect("ESRCH");
                let list = &mut table.services[index].destinations;
                let before = list.len();
                list.retain(|held| held.socket_address() != *address);
                assert_eq!(list.len() + 1, before, "ENOENT: {operation}");
            }
            Operation::SetTimeouts(timeouts) => {
                let set = |held: &mut u32, wanted: u32| {
                    if wanted != 0 {
                        *held = wanted
                    }
                };
                set(&mut table.timeouts.tcp, timeouts.tcp);
                set(&mut table.timeouts.tcp_fin, timeouts.tcp_fin);
                set(&mut table.timeouts.udp, timeouts.udp);
            }
            other => panic!("not planned: {other}"),
        }
    }
}

/// Comparable form: no HASHED, counters or statistics, destinations
/// sorted, services by key.
fn normal(table: &Table, keys: &HashSet<ServiceKey>) -> Vec<(String, Service, Vec<Destination>)> {
    let mut services: Vec<_> = table
        .services
        .values()
        .filter(|entry| keys.contains(&entry.service.key))
        .map(|entry| {
            let mut service = entry.service.clone();
            service.flags.remove(ServiceFlags::HASHED);
            service.statistics = None;
            let mut destinations = entry.destinations.clone();
            for destination in &mut destinations {
                destination.counters = None;
                destination.statistics = None;
            }
            destinations.sort_by_key(|destination| destination.socket_address());
            (service.key.to_string(), service, destinations)
        })
        .collect();
    services.sort_by(|a, b| a.0.cmp(&b.0));
    services
}

fn key(index: u8) -> ServiceKey {
    match index % 4 {
        3 => ServiceKey::Fwmark {
            family: Family::Inet,
            mark: u32::from(index),
        },
        _ => ServiceKey::Address {
            protocol: if index % 2 == 0 {
                Protocol::Tcp
            } else {
                Protocol::Udp
            },
            address: IpAddr::V4(Ipv4Addr::new(192, 0, 2, index)),
            port: 80,
        },
    }
}

fn random_service(random: &mut fastrand::Rng, key: ServiceKey) -> TableService {
    let mut service = Service::new(key, random.choice(["rr", "wlc", "sh"]).unwrap());
    if random.bool() {
        service.flags = ServiceFlags::PERSISTENT;
        service.timeout = random.u32(1..4) * 100;
        service.netmask = random
            .choice([
                Netmask::full(Family::Inet),
                Netmask::Ipv4(Ipv4Addr::new(255, 255, 255, 0)),
            ])
            .unwrap();
    }
    if random.bool() {
        service.flags.insert(ServiceFlags::SCHED_1);
    }
    let mut destinations = Vec::new();
    for host in 1..=6u8 {
        if random.bool() {
            let forwarding = random
                .choice([
                    Forwarding::Masquerade,
                    Forwarding::Route,
                    Forwarding::Tunnel(Tunnel {
                        kind: TunnelKind::Gue,
                        port: 6080,
                        checksum: TunnelChecksum::Checksum,
                    }),
                ])
                .unwrap();
            let mut destination = Destination::new(
                SocketAddr::new(IpAddr::V4(Ipv4Addr::new(10, 0, 0, host)), 8080),
                forwarding,
            );
            destination.weight = random.u32(0..4);
            destination.upper_threshold = random.choice([0, 100]).unwrap();
            destinations.push(destination);
        }
    }
    TableService {
        service,
        destinations,
    }
}

fn random_table(random: &mut fastrand::Rng) -> Table {
    let mut services = Vec::new();
    for index in 0..8u8 {
        if random.bool() {
            services.push(random_service(random, key(index)));
        }
    }
    Table::of(
        services,
        Timeouts {
            tcp: random.choice([0, 900]).unwrap(),
            tcp_fin: 0,
            udp: random.choice([0, 300]).unwrap(),
        },
    )
}

/// As the kernel reports: with HASHED, counters and statistics.
fn as_reported(table: &Table) -> Table {
    let mut reported = table.clone();
    for entry in reported.services.values_mut() {
        entry.service.flags.insert(ServiceFlags::HASHED);
        entry.service.statistics = Some(Default::default());
        for destination in &mut entry.destinations {
            destination.counters = Some(Default::default());
        }
    }
    reported
}

#[test]
fn plans_reach_the_desired_table_by_edits_and_are_then_empty() {
    let mut random = fastrand::Rng::with_seed(6);
    for round in 0..500 {
        let kernel = as_reported(&random_table(&mut random));
        let desired = random_table(&mut random);
        // Half the kernel services that are not desired belong to pulse.
        let previously_owned: HashSet<ServiceKey> = kernel
            .services
            .values()
            .map(|entry| entry.service.key)
            .filter(|_| random.bool())
            .collect();
        let ownership = Ownership::Matching(previously_owned.clone());
        let operations = plan(&kernel, &desired, &ownership);

        let mut applied = kernel.clone();
        apply(&mut applied, &operations);
        assert_eq!(
            normal(&applied, &desired.keys()),
            normal(&desired, &desired.keys()),
            "round {round}: {operations:#?}"
        );
        // What pulse does not own survives untouched; what it owns and does
        // not want is gone.
        for entry in kernel.services.values() {
            let key = entry.service.key;
            let survives = applied.service(&key).is_some();
            if desired.service(&key).is_none() {
                assert_eq!(survives, !previously_owned.contains(&key), "round {round}");
                if survives {
                    assert_eq!(applied.service(&key), Some(entry));
                }
            }
        }
        assert_eq!(
            plan(&as_reported(&applied), &desired, &ownership),
            [],
            "round {round}: a second plan"
        );
        // Parameters alone never cause a delete and a create of one key.
        let created: HashSet<String> = operations
            .iter()
            .filter_map(|operation| match operation {
                Operation::CreateService(service) => Some(service.key.to_string()),
                Operation::CreateDestination(key, destination) => {
                    Some(format!("{key} {}", destination.socket_address()))
                }
                _ => None,
            })
            .collect();
        for operation in &operations {
            let deleted = match operation {
                Operation::DeleteService(key) => key.to_string(),
                Operation::DeleteDestination(key, address) => format!("{key} {address}"),
                _ => continue,
            };
            assert!(!created.contains(&deleted), "round {round}: {deleted}");
        }
    }
}

/// A plan made in pieces ([`plan_piece`] over consecutive runs of the
/// desired services, then [`plan_unwanted`]) holds the whole plan's
/// operations and reaches the same table; with nothing to remove inside a
/// service (a start into an empty or a matching kernel) it is the whole
/// plan, in its order.
#[test]
fn a_plan_in_pieces_is_the_whole_plan() {
    let mut random = fastrand::Rng::with_seed(19);
    for round in 0..500 {
        let kernel = as_reported(&random_table(&mut random));
        let desired = random_table(&mut random);
        let ownership = if random.bool() {
            Ownership::Everything
        } else {
            Ownership::Matching(HashSet::new())
        };
        let whole = plan(&kernel, &desired, &ownership);
        // The desired services cut at random places; the timeouts in the
        // first piece.
        let mut pieces: Vec<Table> = Vec::new();
        for (index, entry) in desired.services.values().enumerate() {
            if index == 0 || random.bool() {
                pieces.push(Table::default());
            }
            pieces.last_mut().unwrap().insert(entry.clone());
        }
        match pieces.first_mut() {
            Some(first) => first.timeouts = desired.timeouts,
            None => pieces.push(Table {
                timeouts: desired.timeouts,
                ..Table::default()
            }),
        }
        let mut in_pieces: Vec<Operation> = pieces
            .iter()
            .flat_map(|piece| plan_piece(&kernel, piece, &ownership))
            .collect();
        in_pieces.extend(plan_unwanted(&kernel, &desired, &ownership));

        let removes_inside = whole
            .iter()
            .any(|operation| matches!(operation, Operation::DeleteDestination(..)));
        if !removes_inside {
            assert_eq!(in_pieces, whole, "round {round}");
        }
        let sorted = |operations: &[Operation]| {
            let mut texts: Vec<String> = operations.iter().map(|o| format!("{o:?}")).collect();
            texts.sort();
            texts
        };
        assert_eq!(sorted(&in_pieces), sorted(&whole), "round {round}");
        let (mut by_whole, mut by_pieces) = (kernel.clone(), kernel.clone());
        apply(&mut by_whole, &whole);
        apply(&mut by_pieces, &in_pieces);
        let every: HashSet<ServiceKey> =
            by_whole.keys().union(&by_pieces.keys()).copied().collect();
        assert_eq!(
            normal(&by_pieces, &every),
            normal(&by_whole, &every),
            "round {round}"
        );
        assert_eq!(by_pieces.timeouts, by_whole.timeouts, "round {round}");
    }
}

#[test]
fn a_parameter_change_is_an_edit() {
    let mut kernel = Table::default();
    let service_key = key(0);
    let mut service = Service::new(service_key, "rr");
    let mut destination =
        Destination::new("10.0.0.1:8080".parse().unwrap(), Forwarding::Masquerade);
    kernel.insert(TableService {
        service: service.clone(),
        destinations: vec![destination.clone()],
    });
    let kernel = as_reported(&kernel);
    service.scheduler = "wlc".into();
    destination.weight = 7;
    let desired = Table::of(
        vec![TableService {
            service: service.clone(),
            destinations: vec![destination.clone()],
        }],
        Timeouts::default(),
    );
    assert_eq!(
        plan(&kernel, &desired, &Ownership::default()),
        [
            Operation::UpdateService(service),
            Operation::UpdateDestination(service_key, destination)
        ]
    );
}

#[test]
fn unowned_services_stay_unless_flushing() {
    let mut random = fastrand::Rng::with_seed(1);
    let kernel = as_reported(&Table::of(
        vec![random_service(&mut random, key(1))],
        Timeouts::default(),
    ));
    let desired = Table::default();
    assert_eq!(plan(&kernel, &desired, &Ownership::default()), []);
    assert_eq!(
        plan(&kernel, &desired, &Ownership::Everything),
        [Operation::DeleteService(key(1))]
    );
}

#[test]
fn new_destinations_come_before_removed_ones() {
    let service_key = key(0);
    let old = Destination::new("10.0.0.1:8080".parse().unwrap(), Forwarding::Masquerade);
    let sorry = Destination::new("10.0.0.9:8080".parse().unwrap(), Forwarding::Masquerade);
    let table = |destination: &Destination| {
        Table::of(
            vec![TableService {
                service: Service::new(service_key, "rr"),
                destinations: vec![destination.clone()],
            }],
            Timeouts::default(),
        )
    };
    assert_eq!(
        plan(
            &as_reported(&table(&old)),
            &table(&sorry),
            &Ownership::default()
        ),
        [
            Operation::CreateDestination(service_key, sorry),
            Operation::DeleteDestination(service_key, old.socket_address())
        ]
    );
}

#[test]
fn what_the_kernel_reports_differently_is_not_a_difference() {
    let mut kernel = Service::new(key(0), "rr");
    kernel.flags = ServiceFlags::HASHED;
    // A non-persistent service's timeout and netmask mean nothing.
    kernel.timeout = 300;
    kernel.netmask = Netmask::Ipv4(Ipv4Addr::new(255, 255, 0, 0));
    let mut desired = Service::new(key(0), "rr");
    desired.flags = ServiceFlags::HASHED;
    assert!(!service_differs(&kernel, &desired));
    desired.flags = ServiceFlags::PERSISTENT;
    assert!(service_differs(&kernel, &desired));

    let address: SocketAddr = "10.0.0.1:0".parse().unwrap();
    let ipip = |port, checksum| {
        Destination::new(
            address,
            Forwarding::Tunnel(Tunnel {
                kind: TunnelKind::Ipip,
                port,
                checksum,
            }),
        )
    };
    assert!(!destination_differs(
        &ipip(6080, TunnelChecksum::Checksum),
        &ipip(0, TunnelChecksum::NoChecksum)
    ));
}

#[test]
fn only_changed_timeouts_are_set() {
    let kernel = Timeouts {
        tcp: 900,
        tcp_fin: 120,
        udp: 300,
    };
    let desired = Timeouts {
        tcp: 900,
        tcp_fin: 0,
        udp: 60,
    };
    assert_eq!(
        timeouts_change(&kernel, &desired),
        Some(Timeouts {
            tcp: 0,
            tcp_fin: 0,
            udp: 60
        })
    );
    assert_eq!(timeouts_change(&kernel, &kernel), None);
}
