//! The model's own properties; that it is the kernel's is checked against
//! the kernel in the lab (pulse/tests/lab/maglev.rs and ecmp.rs).

use std::net::{IpAddr, Ipv4Addr, SocketAddr};

use super::*;

fn dip(index: u8) -> SocketAddr {
    SocketAddr::new(IpAddr::V4(Ipv4Addr::new(10, 9, 0, index)), 8080)
}

fn entries(count: u8, weight: u32) -> Vec<Entry> {
    (1..=count)
        .map(|index| Entry {
            address: dip(index),
            weight,
            last_weight: weight,
        })
        .collect()
}

const BOTH: Options = Options {
    port: true,
    fallback: true,
};

fn clients() -> impl Iterator<Item = SocketAddr> {
    (0..20_000u32).map(|index| {
        SocketAddr::new(
            IpAddr::V4(Ipv4Addr::new(172, 30, 0, 2 + (index % 200) as u8)),
            30_000 + (index / 200) as u16,
        )
    })
}

#[test]
fn equal_weights_share_the_table_evenly_and_every_slot_is_filled() {
    let lookup = Lookup::new(entries(10, 1));
    let shares = lookup.shares();
    assert_eq!(shares.iter().sum::<usize>(), TABLE_SIZE as usize);
    for share in &shares {
        // 409.3 each if even; round-robin filling leaves at most one over.
        assert!((409..=410).contains(share), "{shares:?}");
    }
}

#[test]
fn weights_give_proportional_shares() {
    let mut weighted = entries(3, 1);
    weighted[0].weight = 3;
    weighted[0].last_weight = 3;
    let shares = Lookup::new(weighted).shares();
    // 3:1:1 of 4,093.
    assert!((2455..=2457).contains(&shares[0]), "{shares:?}");
    assert!((818..=819).contains(&shares[1]), "{shares:?}");
}

#[test]
fn a_removed_destination_moves_its_own_rows_and_few_others() {
    let before = Lookup::new(entries(10, 1));
    let mut rest = entries(10, 1);
    rest.remove(3);
    let after = Lookup::new(rest);
    let (mut others, mut moved) = (0, 0);
    for (was, is) in before.rows().zip(after.rows()) {
        if was != Some(dip(4)) {
            others += 1;
            moved += usize::from(was != is);
        }
    }
    assert_eq!(others, 4093 - before.shares()[3]);
    // Maglev's bound: a few percent of the others' rows.
    assert!(
        moved > 0 && moved * 100 < others * 5,
        "{moved} of {others} moved"
    );
}

#[test]
fn clients_whose_address_and_port_add_up_alike_share_a_row() {
    // ip_vs_mh_hashkey hashes offset + port + address (a sum), so
    // 172.30.0.2:30001 and 172.30.0.3:30000 are one input.
    let lookup = Lookup::new(entries(10, 1));
    let first = SocketAddr::new(IpAddr::V4(Ipv4Addr::new(172, 30, 0, 2)), 30_001);
    let second = SocketAddr::new(IpAddr::V4(Ipv4Addr::new(172, 30, 0, 3)), 30_000);
    assert_eq!(lookup.choose(first, BOTH), lookup.choose(second, BOTH));
}

#[test]
fn a_removed_destination_moves_its_own_clients_and_few_others() {
    let before = Lookup::new(entries(10, 1));
    let mut rest = entries(10, 1);
    rest.remove(3);
    let after = Lookup::new(rest);
    let (mut others, mut moved) = (0, 0);
    for client in clients() {
        let was = before.choose(client, BOTH).unwrap();
        let is = after.choose(client, BOTH).unwrap();
        assert_ne!(is, dip(4));
        if was != dip(4) {
            others += 1;
            moved += usize::from(was != is);
        }
    }
    // Maglev's bound: a few percent of the others at this table size.
    assert!(moved * 100 < others * 5, "{moved} of {others} moved");
}

#[test]
fn a_drained_destination_keeps_its_slots_and_its_clients_fall_back() {
    let all = Lookup::new(entries(5, 1));
    let mut drained = entries(5, 1);
    drained[2].weight = 0;
    let drained = Lookup::new(drained);
    assert_eq!(all.shares(), drained.shares());
    for client in clients().take(2_000) {
        let was = all.choose(client, BOTH).unwrap();
        let is = drained.choose(client, BOTH);
        if was == dip(3) {
            assert!(is.is_some_and(|is| is != dip(3)));
            let strict = Options {
                port: true,
                fallback: false,
            };
            assert_eq!(drained.choose(client, strict), None);
        } else {
            assert_eq!(is, Some(was), "only the drained one's clients move");
        }
    }
}

#[test]
fn created_at_zero_takes_no_slot_and_the_list_order_changes_the_table() {
    let mut zero = entries(4, 1);
    zero[1].last_weight = 0;
    zero[1].weight = 0;
    assert_eq!(Lookup::new(zero).shares()[1], 0);
    let forward = Lookup::new(entries(20, 1));
    let mut reversed = entries(20, 1);
    reversed.reverse();
    let reversed = Lookup::new(reversed);
    let differing = clients()
        .take(600)
        .filter(|client| forward.choose(*client, BOTH) != reversed.choose(*client, BOTH))
        .count();
    assert!(differing > 0, "the list's order is part of the table");
}

#[test]
fn without_mh_port_a_client_address_has_one_destination() {
    let lookup = Lookup::new(entries(10, 1));
    let address = IpAddr::V4(Ipv4Addr::new(172, 30, 0, 2));
    let options = Options {
        port: false,
        fallback: true,
    };
    let chosen: std::collections::BTreeSet<_> = (1..500)
        .map(|port| lookup.choose(SocketAddr::new(address, port), options))
        .collect();
    assert_eq!(chosen.len(), 1);
}

#[test]
fn no_destination_or_every_weight_zero_chooses_none() {
    let client = SocketAddr::new(IpAddr::V4(Ipv4Addr::new(172, 30, 0, 2)), 1);
    assert_eq!(Lookup::new(Vec::new()).choose(client, BOTH), None);
    let mut none = entries(3, 1);
    for entry in &mut none {
        entry.weight = 0;
    }
    assert_eq!(Lookup::new(none).choose(client, BOTH), None);
}
