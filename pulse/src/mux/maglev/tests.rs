//! The Mux's `mh` plan against a model of the kernel's destination list:
//! a creation goes to the head, an edit keeps its place, a deletion takes
//! it out, and each destination keeps its last weight above 0.

use super::*;
use ipvs::{Forwarding, Service, Timeouts};
use std::net::{IpAddr, Ipv4Addr};

/// One destination as the kernel holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Held {
    address: SocketAddr,
    weight: u32,
    last_weight: u32,
}

/// A service's destination list, head first, as `ip_vs_ctl.c` keeps it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct KernelList {
    service: Option<Service>,
    list: Vec<Held>,
}

impl KernelList {
    fn apply(&mut self, operations: &[Operation]) {
        for operation in operations {
            match operation {
                Operation::CreateService(service) => {
                    assert!(self.service.is_none(), "created twice");
                    self.service = Some(service.clone());
                }
                Operation::UpdateService(service) => self.service = Some(service.clone()),
                Operation::CreateDestination(_, destination) => {
                    assert!(
                        !self.holds(destination.socket_address()),
                        "{operation} of a destination the kernel holds (EEXIST)"
                    );
                    self.list.insert(
                        0,
                        Held {
                            address: destination.socket_address(),
                            weight: destination.weight,
                            last_weight: destination.weight,
                        },
                    );
                }
                Operation::UpdateDestination(_, destination) => {
                    let held = self
                        .list
                        .iter_mut()
                        .find(|held| held.address == destination.socket_address())
                        .unwrap_or_else(|| panic!("{operation}: no such destination (ENOENT)"));
                    held.weight = destination.weight;
                    if destination.weight > 0 {
                        held.last_weight = destination.weight;
                    }
                }
                Operation::DeleteDestination(_, address) => {
                    let before = self.list.len();
                    self.list.retain(|held| held.address != *address);
                    assert_eq!(before, self.list.len() + 1, "{operation}: not held");
                }
                other => panic!("unexpected {other}"),
            }
        }
    }

    fn holds(&self, address: SocketAddr) -> bool {
        self.list.iter().any(|held| held.address == address)
    }

    /// What a dump reads.
    fn table(&self) -> Table {
        Table::of(
            self.service.iter().map(|service| TableService {
                service: service.clone(),
                destinations: self
                    .list
                    .iter()
                    .map(|held| {
                        let mut destination = Destination::new(held.address, Forwarding::Route);
                        destination.weight = held.weight;
                        destination
                    })
                    .collect(),
            }),
            Timeouts::default(),
        )
    }
}

fn key() -> ServiceKey {
    ServiceKey::Address {
        protocol: ipvs::Protocol::Tcp,
        address: "203.0.113.10".parse().unwrap(),
        port: 80,
    }
}

fn dip(index: u8) -> SocketAddr {
    SocketAddr::new(IpAddr::V4(Ipv4Addr::new(10, 1, 0, index)), 8080)
}

/// The policy's DIPs of one VIP, in its order: (index, weight, up);
/// the desired table and creation weights as `desired::overlay` makes them.
fn desired(scheduler: &str, dips: &[(u8, u32, bool)]) -> (Table, CreationWeights) {
    let mut weights = CreationWeights::new();
    let destinations = dips
        .iter()
        .filter(|(_, _, up)| *up || scheduler == MAGLEV)
        .map(|&(index, weight, up)| {
            let mut destination = Destination::new(dip(index), Forwarding::Route);
            destination.weight = if up { weight } else { 0 };
            if !up && weight > 0 {
                weights.insert((key(), dip(index)), weight);
            }
            destination
        })
        .collect();
    let table = Table::of(
        [TableService {
            service: Service::new(key(), scheduler),
            destinations,
        }],
        Timeouts::default(),
    );
    (table, weights)
}

/// The kernel after `kernel` is planned into `dips` and the plan applied.
fn step(kernel: &mut KernelList, scheduler: &str, dips: &[(u8, u32, bool)]) -> Vec<Operation> {
    let (table, weights) = desired(scheduler, dips);
    let operations = plan(&kernel.table(), &table, &weights);
    kernel.apply(&operations);
    operations
}

/// A Mux started on `dips` alone.
fn fresh(scheduler: &str, dips: &[(u8, u32, bool)]) -> KernelList {
    let mut kernel = KernelList::default();
    step(&mut kernel, scheduler, dips);
    kernel
}

#[test]
fn a_fresh_mux_creates_in_the_policy_order_and_a_down_dip_keeps_its_weight_as_its_last() {
    let kernel = fresh(MAGLEV, &[(5, 1, true), (6, 2, false), (7, 1, true)]);
    let held: Vec<(SocketAddr, u32, u32)> = kernel
        .list
        .iter()
        .map(|held| (held.address, held.weight, held.last_weight))
        .collect();
    // Head first: the reverse of the creations.
    assert_eq!(held, vec![(dip(7), 1, 1), (dip(6), 0, 2), (dip(5), 1, 1)]);
}

#[test]
fn a_dip_added_at_the_end_is_one_creation_and_in_the_middle_takes_those_after_it_out_and_in() {
    let mut kernel = fresh(MAGLEV, &[(5, 1, true), (6, 1, true), (7, 1, true)]);
    let operations = step(
        &mut kernel,
        MAGLEV,
        &[(5, 1, true), (6, 1, true), (7, 1, true), (9, 1, true)],
    );
    assert_eq!(
        operations,
        vec![Operation::CreateDestination(key(), {
            let mut destination = Destination::new(dip(9), Forwarding::Route);
            destination.weight = 1;
            destination
        })]
    );
    let operations = step(
        &mut kernel,
        MAGLEV,
        &[
            (5, 1, true),
            (6, 1, true),
            (8, 1, true),
            (7, 1, true),
            (9, 1, true),
        ],
    );
    let described: Vec<String> = operations.iter().map(ToString::to_string).collect();
    assert_eq!(
        described.len(),
        5,
        "two out, three in (7 and 9 again, 8 new): {described:?}"
    );
    assert!(matches!(operations[0], Operation::DeleteDestination(..)));
    assert!(matches!(operations[1], Operation::DeleteDestination(..)));
    assert_eq!(
        kernel,
        fresh(
            MAGLEV,
            &[
                (5, 1, true),
                (6, 1, true),
                (8, 1, true),
                (7, 1, true),
                (9, 1, true)
            ]
        )
    );
}

#[test]
fn a_dip_going_down_is_an_edit_to_weight_0_and_coming_back_an_edit_to_its_weight() {
    let mut kernel = fresh(MAGLEV, &[(5, 1, true), (6, 3, true), (7, 1, true)]);
    let operations = step(
        &mut kernel,
        MAGLEV,
        &[(5, 1, true), (6, 3, false), (7, 1, true)],
    );
    assert_eq!(operations.len(), 1);
    assert!(matches!(&operations[0], Operation::UpdateDestination(_, d) if d.weight == 0));
    assert_eq!(
        kernel,
        fresh(MAGLEV, &[(5, 1, true), (6, 3, false), (7, 1, true)])
    );
    step(
        &mut kernel,
        MAGLEV,
        &[(5, 1, true), (6, 3, true), (7, 1, true)],
    );
    assert_eq!(
        kernel,
        fresh(MAGLEV, &[(5, 1, true), (6, 3, true), (7, 1, true)])
    );
}

#[test]
fn other_schedulers_are_planned_as_the_lvs_mode_plans_them() {
    let mut kernel = fresh("wlc", &[(5, 1, true), (6, 1, true)]);
    let operations = step(&mut kernel, "wlc", &[(5, 1, true), (6, 1, false)]);
    assert_eq!(
        operations,
        vec![Operation::DeleteDestination(key(), dip(6))]
    );
    // Not re-created in order: wlc does not care where it is.
    let operations = step(
        &mut kernel,
        "wlc",
        &[(4, 1, true), (5, 1, true), (6, 1, true)],
    );
    assert_eq!(operations.len(), 2);
    assert!(
        operations
            .iter()
            .all(|operation| matches!(operation, Operation::CreateDestination(..)))
    );
}

/// A small deterministic generator (no dependency for one test).
struct Sequence(u64);

impl Sequence {
    fn next(&mut self, below: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % below
    }
}

#[test]
fn whatever_a_mux_saw_before_it_holds_what_a_mux_started_now_holds() {
    // Histories of a VIP over a pool of six DIPs: each step a new policy
    // order, DIPs in or out (registered or not), up or down, weights
    // changed. After every step the Mux that lived through it and one
    // started on that step alone hold the same list, weights and last
    // weights: the same Maglev table.
    let mut sequence = Sequence(7);
    let mut recreations = 0;
    let mut steps = 0;
    for _history in 0..300 {
        let mut kernel = KernelList::default();
        let mut weights = [1u32; 7];
        for _step in 0..8 {
            let mut pool: Vec<u8> = (1..=6).collect();
            // A new order now and then: the policy rewritten.
            if sequence.next(3) == 0 {
                for index in (1..pool.len()).rev() {
                    pool.swap(index, sequence.next(index as u64 + 1) as usize);
                }
            }
            let mut dips: Vec<(u8, u32, bool)> = Vec::new();
            for index in pool {
                if sequence.next(4) == 0 {
                    continue;
                }
                let up = sequence.next(4) != 0;
                // A weight changes while its DIP is up: the kernel does
                // not show a destination's last weight, so one changed
                // while down reaches the table when it is up again
                // (docs/sdn.md).
                if up {
                    weights[index as usize] = 1 + sequence.next(3) as u32;
                }
                dips.push((index, weights[index as usize], up));
            }
            let operations = step(&mut kernel, MAGLEV, &dips);
            recreations += operations
                .iter()
                .filter(|operation| matches!(operation, Operation::DeleteDestination(..)))
                .count();
            steps += 1;
            assert_eq!(kernel, fresh(MAGLEV, &dips), "after {dips:?}");
            // Planned again, nothing is left to do.
            let (table, weights) = desired(MAGLEV, &dips);
            assert_eq!(plan(&kernel.table(), &table, &weights), vec![]);
        }
    }
    assert!(recreations > 0 && steps == 2400);
}
