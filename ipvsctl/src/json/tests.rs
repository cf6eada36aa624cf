//! Snapshots of every JSON listing, built from model values (the expected
//! documents are hand-written, indented for reading), and a check that
//! `docs/ipvsctl-json.md` documents exactly the fields the listings print.

use std::collections::BTreeSet;
use std::net::Ipv4Addr;

use ipvs::{ConnectionCounters, TunnelChecksum, Version};
use serde_json::Value;

use super::*;
use crate::test_fixtures::{address_key, destination, persistent, service, statistics, tunnel};

const SCHEMA_DOC: &str = include_str!("../../../docs/ipvsctl-json.md");

// ---------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------

/// `pretty` without the white space between tokens: the exact bytes
/// `--json` prints, so key order and number formatting are checked too.
fn compact(pretty: &str) -> String {
    let mut text = String::new();
    let mut in_string = false;
    let mut escaped = false;
    for character in pretty.chars() {
        if in_string {
            text.push(character);
            if escaped {
                escaped = false;
            } else if character == '\\' {
                escaped = true;
            } else if character == '"' {
                in_string = false;
            }
        } else if character == '"' {
            in_string = true;
            text.push(character);
        } else if !character.is_whitespace() {
            text.push(character);
        }
    }
    text
}

#[track_caller]
fn assert_document(actual: &str, expected_pretty: &str) {
    let expected = format!("{}\n", compact(expected_pretty));
    if actual == expected {
        return;
    }
    let first = actual
        .bytes()
        .zip(expected.bytes())
        .position(|(a, e)| a != e)
        .unwrap_or(actual.len().min(expected.len()));
    panic!(
        "document differs at byte {first}\n--- expected ---\n{expected}--- actual ---\n{actual}\
         --- from there ---\nexpected: {}\nactual:   {}",
        &expected[first..],
        &actual[first..]
    );
}

fn info() -> Info {
    Info {
        version: Version {
            major: 1,
            minor: 2,
            patch: 1,
        },
        connection_table_size: 4096,
    }
}

fn mark_key(family: Family, mark: u32) -> ServiceKey {
    ServiceKey::Fwmark { family, mark }
}

/// Like `docs/ipvsadm.md` Appendix A, in a dump order that is not the
/// sorted one: every kind of service, persistence, flag, forwarding method
/// and tunnel.
fn table() -> Vec<(Service, Vec<Destination>)> {
    let mut web = service(
        address_key(Protocol::Tcp, "10.0.0.1", 80),
        "wlc",
        ServiceFlags::empty(),
    );
    web.statistics = Some(statistics([
        99_999_999,
        100_000_000,
        999_999_999,
        1_000_000_000,
        99_999_999_999,
        1,
        2,
        3,
        4,
        5,
    ]));
    let mut masquerade = destination("192.168.1.2:80", Forwarding::Masquerade, 1);
    masquerade.counters = Some(ConnectionCounters {
        active: 5,
        inactive: 10,
        persistent: 0,
    });
    let mut route = destination("192.168.1.1:8080", Forwarding::Route, 0);
    route.upper_threshold = 100;
    route.lower_threshold = 50;
    let mut ipip = destination(
        "192.168.1.10:80",
        tunnel(TunnelKind::Ipip, 0, TunnelChecksum::NoChecksum),
        65535,
    );
    ipip.counters = Some(ConnectionCounters {
        active: 1,
        inactive: 2,
        persistent: 3,
    });

    let mut dns = persistent(
        service(
            address_key(Protocol::Udp, "10.0.0.1", 53),
            "rr",
            ServiceFlags::ONE_PACKET,
        ),
        360,
    );
    dns.netmask = Netmask::Ipv4(Ipv4Addr::new(255, 255, 255, 0));

    let mut sip = persistent(
        service(
            mark_key(Family::Inet, 1),
            "sh",
            ServiceFlags::SH_FALLBACK | ServiceFlags::SH_PORT,
        ),
        600,
    );
    sip.persistence_engine = Some("sip".to_owned());

    let mut secure = persistent(
        service(
            address_key(Protocol::Tcp, "2001:db8::1", 443),
            "mh",
            ServiceFlags::SCHED_2,
        ),
        300,
    );
    secure.netmask = Netmask::Ipv6(64);

    vec![
        (
            service(
                address_key(Protocol::Tcp, "127.0.0.1", 22),
                "wlc",
                ServiceFlags::SCHED_1,
            ),
            vec![destination("127.0.0.1:22", Forwarding::Local, 1)],
        ),
        (
            service(
                mark_key(Family::Inet6, u32::MAX),
                "wrr",
                ServiceFlags::empty(),
            ),
            vec![],
        ),
        (
            secure,
            vec![
                destination(
                    "[2001:db8::9]:443",
                    tunnel(TunnelKind::Gre, 0, TunnelChecksum::NoChecksum),
                    4,
                ),
                destination(
                    "192.168.2.1:443",
                    tunnel(TunnelKind::Gue, 6080, TunnelChecksum::Checksum),
                    3,
                ),
                destination("[2001:db8::10]:443", Forwarding::Route, 2),
            ],
        ),
        (sip, vec![]),
        (
            persistent(
                service(
                    address_key(Protocol::Sctp, "10.0.0.2", 0),
                    "lc",
                    ServiceFlags::empty(),
                ),
                3600,
            ),
            vec![destination("10.0.0.3:0", Forwarding::Masquerade, 1)],
        ),
        (
            dns,
            vec![destination("192.168.1.3:53", Forwarding::Masquerade, 1)],
        ),
        (web, vec![ipip, route, masquerade]),
    ]
}

fn listed(table: &[(Service, Vec<Destination>)], statistics: bool, rates: bool) -> String {
    services(
        &info(),
        table,
        &ServiceOptions {
            statistics,
            rates,
            sort: true,
        },
    )
}

/// The keys of services, in order, as `protocol address port` or
/// `fwmark family`.
fn service_order(document: &str) -> Vec<String> {
    let document: Value = serde_json::from_str(document).unwrap();
    document["services"]
        .as_array()
        .unwrap()
        .iter()
        .map(|service| match service.get("fwmark") {
            Some(mark) => format!("fwmark {mark} {}", service["family"]),
            None => format!(
                "{} {} {}",
                service["protocol"], service["address"], service["port"]
            ),
        })
        .collect()
}

// ---------------------------------------------------------------------------
// Services
// ---------------------------------------------------------------------------

#[test]
fn every_service_sorted_as_ipvsadm_sorts() {
    assert_document(
        &listed(&table(), false, false),
        r#"{
          "schema_version": 1,
          "ipvs": {"version": "1.2.1", "connection_table_size": 4096},
          "services": [
            {
              "fwmark": 4294967295,
              "family": "inet6",
              "scheduler": "wrr",
              "scheduler_flags": [],
              "one_packet": false,
              "destinations": []
            },
            {
              "protocol": "tcp", "address": "10.0.0.1", "port": 80,
              "family": "inet",
              "scheduler": "wlc",
              "scheduler_flags": [],
              "one_packet": false,
              "destinations": [
                {
                  "address": "192.168.1.1", "port": 8080,
                  "forwarding": "route",
                  "weight": 0,
                  "upper_threshold": 100, "lower_threshold": 50,
                  "active_connections": 0, "inactive_connections": 0,
                  "persistent_connections": 0
                },
                {
                  "address": "192.168.1.2", "port": 80,
                  "forwarding": "masquerade",
                  "weight": 1,
                  "upper_threshold": 0, "lower_threshold": 0,
                  "active_connections": 5, "inactive_connections": 10,
                  "persistent_connections": 0
                },
                {
                  "address": "192.168.1.10", "port": 80,
                  "forwarding": "tunnel",
                  "tunnel": {"type": "ipip"},
                  "weight": 65535,
                  "upper_threshold": 0, "lower_threshold": 0,
                  "active_connections": 1, "inactive_connections": 2,
                  "persistent_connections": 3
                }
              ]
            },
            {
              "protocol": "tcp", "address": "127.0.0.1", "port": 22,
              "family": "inet",
              "scheduler": "wlc",
              "scheduler_flags": ["flag-1"],
              "one_packet": false,
              "destinations": [
                {
                  "address": "127.0.0.1", "port": 22,
                  "forwarding": "local",
                  "weight": 1,
                  "upper_threshold": 0, "lower_threshold": 0,
                  "active_connections": 0, "inactive_connections": 0,
                  "persistent_connections": 0
                }
              ]
            },
            {
              "protocol": "udp", "address": "10.0.0.1", "port": 53,
              "family": "inet",
              "scheduler": "rr",
              "scheduler_flags": [],
              "one_packet": true,
              "persistence": {"timeout": 360, "netmask": "255.255.255.0"},
              "destinations": [
                {
                  "address": "192.168.1.3", "port": 53,
                  "forwarding": "masquerade",
                  "weight": 1,
                  "upper_threshold": 0, "lower_threshold": 0,
                  "active_connections": 0, "inactive_connections": 0,
                  "persistent_connections": 0
                }
              ]
            },
            {
              "protocol": "sctp", "address": "10.0.0.2", "port": 0,
              "family": "inet",
              "scheduler": "lc",
              "scheduler_flags": [],
              "one_packet": false,
              "persistence": {"timeout": 3600, "netmask": "255.255.255.255"},
              "destinations": [
                {
                  "address": "10.0.0.3", "port": 0,
                  "forwarding": "masquerade",
                  "weight": 1,
                  "upper_threshold": 0, "lower_threshold": 0,
                  "active_connections": 0, "inactive_connections": 0,
                  "persistent_connections": 0
                }
              ]
            },
            {
              "protocol": "tcp", "address": "2001:db8::1", "port": 443,
              "family": "inet6",
              "scheduler": "mh",
              "scheduler_flags": ["mh-port"],
              "one_packet": false,
              "persistence": {"timeout": 300, "prefix_length": 64},
              "destinations": [
                {
                  "address": "192.168.2.1", "port": 443,
                  "forwarding": "tunnel",
                  "tunnel": {"type": "gue", "port": 6080, "checksum": "csum"},
                  "weight": 3,
                  "upper_threshold": 0, "lower_threshold": 0,
                  "active_connections": 0, "inactive_connections": 0,
                  "persistent_connections": 0
                },
                {
                  "address": "2001:db8::9", "port": 443,
                  "forwarding": "tunnel",
                  "tunnel": {"type": "gre", "checksum": "nocsum"},
                  "weight": 4,
                  "upper_threshold": 0, "lower_threshold": 0,
                  "active_connections": 0, "inactive_connections": 0,
                  "persistent_connections": 0
                },
                {
                  "address": "2001:db8::10", "port": 443,
                  "forwarding": "route",
                  "weight": 2,
                  "upper_threshold": 0, "lower_threshold": 0,
                  "active_connections": 0, "inactive_connections": 0,
                  "persistent_connections": 0
                }
              ]
            },
            {
              "fwmark": 1,
              "family": "inet",
              "scheduler": "sh",
              "scheduler_flags": ["sh-fallback", "sh-port"],
              "one_packet": false,
              "persistence": {"timeout": 600, "netmask": "255.255.255.255"},
              "persistence_engine": "sip",
              "destinations": []
            }
          ]
        }"#,
    );
}

#[test]
fn the_service_order_is_the_text_listings() {
    let table = table();
    let mut text = String::new();
    crate::format::list_with(
        &info(),
        &table,
        &crate::format::ListOptions {
            numeric: true,
            ..Default::default()
        },
        &crate::format::NoResolver,
        &mut text,
    );
    let text_order: Vec<&str> = text
        .lines()
        .skip(3)
        .filter(|line| !line.starts_with("  ->"))
        .map(|line| line.split(' ').next().unwrap())
        .collect();
    let json_order: Vec<String> = service_order(&listed(&table, false, false))
        .iter()
        .map(|key| {
            let protocol = key.split(' ').next().unwrap();
            match protocol {
                "fwmark" => "FWM".to_owned(),
                other => other.trim_matches('"').to_ascii_uppercase(),
            }
        })
        .collect();
    assert_eq!(json_order, text_order);
}

#[test]
fn nosort_keeps_the_dump_order_of_services_and_destinations() {
    let document = services(
        &info(),
        &table(),
        &ServiceOptions {
            sort: false,
            ..ServiceOptions::default()
        },
    );
    assert_eq!(
        service_order(&document),
        [
            r#""tcp" "127.0.0.1" 22"#,
            r#"fwmark 4294967295 "inet6""#,
            r#""tcp" "2001:db8::1" 443"#,
            r#"fwmark 1 "inet""#,
            r#""sctp" "10.0.0.2" 0"#,
            r#""udp" "10.0.0.1" 53"#,
            r#""tcp" "10.0.0.1" 80"#,
        ]
    );
    let document: Value = serde_json::from_str(&document).unwrap();
    let addresses: Vec<&str> = document["services"][6]["destinations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|destination| destination["address"].as_str().unwrap())
        .collect();
    assert_eq!(addresses, ["192.168.1.10", "192.168.1.1", "192.168.1.2"]);
}

#[test]
fn statistics_and_rates_are_exact_64_bit_and_both_shown() {
    let mut web = service(
        address_key(Protocol::Tcp, "10.0.0.1", 80),
        "wlc",
        ServiceFlags::empty(),
    );
    web.statistics = Some(statistics([
        99_999_999,
        100_000_000,
        u64::MAX,
        1_000_000_000,
        99_999_999_999,
        1,
        2,
        3,
        4,
        5,
    ]));
    // ipvsadm shows this destination's counters cut to 32 bits (7, ...)
    // and scaled (1215M); the JSON has them whole.
    let mut route = destination("192.168.1.1:8080", Forwarding::Route, 0);
    route.statistics = Some(statistics([
        (1 << 32) + 7,
        100_000_000_000,
        100_000_000_000_000,
        123_456_789_012_345,
        5,
        (1 << 32) + 1,
        7,
        8,
        100_000_000,
        1_000_000_000,
    ]));
    assert_document(
        &listed(&[(web, vec![route])], true, true),
        r#"{
          "schema_version": 1,
          "ipvs": {"version": "1.2.1", "connection_table_size": 4096},
          "services": [
            {
              "protocol": "tcp", "address": "10.0.0.1", "port": 80,
              "family": "inet",
              "scheduler": "wlc",
              "scheduler_flags": [],
              "one_packet": false,
              "statistics": {
                "connections": 99999999,
                "incoming_packets": 100000000,
                "outgoing_packets": 18446744073709551615,
                "incoming_bytes": 1000000000,
                "outgoing_bytes": 99999999999
              },
              "rates": {
                "connections": 1,
                "incoming_packets": 2,
                "outgoing_packets": 3,
                "incoming_bytes": 4,
                "outgoing_bytes": 5
              },
              "destinations": [
                {
                  "address": "192.168.1.1", "port": 8080,
                  "forwarding": "route",
                  "weight": 0,
                  "upper_threshold": 0, "lower_threshold": 0,
                  "active_connections": 0, "inactive_connections": 0,
                  "persistent_connections": 0,
                  "statistics": {
                    "connections": 4294967303,
                    "incoming_packets": 100000000000,
                    "outgoing_packets": 100000000000000,
                    "incoming_bytes": 123456789012345,
                    "outgoing_bytes": 5
                  },
                  "rates": {
                    "connections": 4294967297,
                    "incoming_packets": 7,
                    "outgoing_packets": 8,
                    "incoming_bytes": 100000000,
                    "outgoing_bytes": 1000000000
                  }
                }
              ]
            }
          ]
        }"#,
    );
}

#[test]
fn statistics_alone_or_rates_alone() {
    let table = table();
    let only_statistics: Value = serde_json::from_str(&listed(&table, true, false)).unwrap();
    let only_rates: Value = serde_json::from_str(&listed(&table, false, true)).unwrap();
    for service in only_statistics["services"].as_array().unwrap() {
        assert!(service.get("statistics").is_some() && service.get("rates").is_none());
        for destination in service["destinations"].as_array().unwrap() {
            assert!(destination.get("statistics").is_some() && destination.get("rates").is_none());
        }
    }
    for service in only_rates["services"].as_array().unwrap() {
        assert!(service.get("statistics").is_none() && service.get("rates").is_some());
    }
}

#[test]
fn missing_statistics_and_counters_read_as_zero() {
    let mut bare = Service::new(address_key(Protocol::Tcp, "10.0.0.1", 80), "rr");
    bare.statistics = None;
    let mut destination = Destination::new("10.0.0.2:80".parse().unwrap(), Forwarding::Route);
    destination.counters = None;
    destination.statistics = None;
    let document: Value =
        serde_json::from_str(&listed(&[(bare, vec![destination])], true, false)).unwrap();
    let service = &document["services"][0];
    assert_eq!(service["statistics"]["connections"], 0);
    assert_eq!(service["destinations"][0]["active_connections"], 0);
    assert_eq!(
        service["destinations"][0]["statistics"]["incoming_bytes"],
        0
    );
}

#[test]
fn one_service() {
    let table = table();
    let (service, destinations) = table[5].clone();
    assert_document(
        &services(
            &info(),
            &[(service, destinations)],
            &ServiceOptions::default(),
        ),
        r#"{
          "schema_version": 1,
          "ipvs": {"version": "1.2.1", "connection_table_size": 4096},
          "services": [
            {
              "protocol": "udp", "address": "10.0.0.1", "port": 53,
              "family": "inet",
              "scheduler": "rr",
              "scheduler_flags": [],
              "one_packet": true,
              "persistence": {"timeout": 360, "netmask": "255.255.255.0"},
              "destinations": [
                {
                  "address": "192.168.1.3", "port": 53,
                  "forwarding": "masquerade",
                  "weight": 1,
                  "upper_threshold": 0, "lower_threshold": 0,
                  "active_connections": 0, "inactive_connections": 0,
                  "persistent_connections": 0
                }
              ]
            }
          ]
        }"#,
    );
}

#[test]
fn empty_table() {
    assert_document(
        &listed(&[], false, false),
        r#"{
          "schema_version": 1,
          "ipvs": {"version": "1.2.1", "connection_table_size": 4096},
          "services": []
        }"#,
    );
}

#[test]
fn scheduler_flags_are_named_as_b_takes_them() {
    let flags_of = |scheduler: &str, flags: ServiceFlags| {
        scheduler_flags(&service(
            address_key(Protocol::Tcp, "10.0.0.1", 80),
            scheduler,
            flags,
        ))
    };
    let all = ServiceFlags::SCHED_1 | ServiceFlags::SCHED_2 | ServiceFlags::SCHED_3;
    assert_eq!(flags_of("sh", all), ["sh-fallback", "sh-port", "flag-3"]);
    assert_eq!(flags_of("mh", all), ["mh-fallback", "mh-port", "flag-3"]);
    assert_eq!(flags_of("rr", all), ["flag-1", "flag-2", "flag-3"]);
    // ipvsadm prints ` ()` for this one.
    assert_eq!(flags_of("sh", ServiceFlags::SCHED_3), ["flag-3"]);
    assert!(flags_of("sh", ServiceFlags::ONE_PACKET).is_empty());
}

#[test]
fn persistence_engine_shows_whenever_set() {
    // ipvsadm -L shows it only on persistent services.
    let mut service = service(
        address_key(Protocol::Udp, "10.0.0.1", 5060),
        "rr",
        ServiceFlags::empty(),
    );
    service.persistence_engine = Some("sip".to_owned());
    let document: Value =
        serde_json::from_str(&listed(&[(service.clone(), vec![])], false, false)).unwrap();
    assert_eq!(document["services"][0]["persistence_engine"], "sip");
    assert!(document["services"][0].get("persistence").is_none());
    service.persistence_engine = Some(String::new());
    let document: Value =
        serde_json::from_str(&listed(&[(service, vec![])], false, false)).unwrap();
    assert!(document["services"][0].get("persistence_engine").is_none());
}

#[test]
fn values_without_a_name() {
    let mut odd = service(
        address_key(Protocol::Other(41), "10.0.0.1", 80),
        "rr",
        ServiceFlags::empty(),
    );
    odd.statistics = None;
    let destinations = vec![
        destination("10.0.0.2:80", Forwarding::Bypass, 1),
        destination("10.0.0.3:80", Forwarding::Other(5), 1),
        destination(
            "10.0.0.4:80",
            tunnel(TunnelKind::Other(7), 9, TunnelChecksum::Checksum),
            1,
        ),
        destination(
            "10.0.0.5:80",
            tunnel(TunnelKind::Gue, 6080, TunnelChecksum::Other(3)),
            1,
        ),
        destination(
            "10.0.0.6:80",
            tunnel(TunnelKind::Gre, 0, TunnelChecksum::RemoteChecksum),
            1,
        ),
    ];
    let document: Value =
        serde_json::from_str(&listed(&[(odd, destinations)], false, false)).unwrap();
    let service = &document["services"][0];
    assert_eq!(service["protocol"], "ip_41");
    let destinations = &service["destinations"];
    assert_eq!(destinations[0]["forwarding"], "bypass");
    assert_eq!(destinations[1]["forwarding"], "unknown-5");
    assert_eq!(
        destinations[2]["tunnel"],
        serde_json::json!({"type": "unknown-7"})
    );
    // Both checksum bits: the kernel checksums (CSUM is tested first).
    assert_eq!(destinations[3]["tunnel"]["checksum"], "csum");
    assert_eq!(destinations[4]["tunnel"]["checksum"], "remcsum");
    assert_eq!(protocol_name(0), "ip");
    assert_eq!(protocol_name(1), "icmp");
    assert_eq!(protocol_name(58), "icmpv6");
}

#[test]
fn ipv6_addresses_are_compressed_like_inet_ntop() {
    let service = service(
        address_key(Protocol::Tcp, "2001:db8:0:0:1:0:0:1", 80),
        "rr",
        ServiceFlags::empty(),
    );
    let destinations = vec![destination(
        "[::ffff:10.0.0.1]:80",
        Forwarding::Masquerade,
        1,
    )];
    let document: Value =
        serde_json::from_str(&listed(&[(service, destinations)], false, false)).unwrap();
    assert_eq!(document["services"][0]["address"], "2001:db8::1:0:0:1");
    assert_eq!(
        document["services"][0]["destinations"][0]["address"],
        "::ffff:10.0.0.1"
    );
}

// ---------------------------------------------------------------------------
// Timeouts and daemons
// ---------------------------------------------------------------------------

#[test]
fn timeouts_in_seconds() {
    assert_document(
        &timeouts(&Timeouts {
            tcp: 900,
            tcp_fin: 120,
            udp: 300,
        }),
        r#"{"schema_version": 1, "timeouts": {"tcp": 900, "tcp_fin": 120, "udp": 300}}"#,
    );
    // ipvsadm prints these with %d: -1.
    let document: Value = serde_json::from_str(&timeouts(&Timeouts {
        tcp: u32::MAX,
        tcp_fin: 0,
        udp: 0,
    }))
    .unwrap();
    assert_eq!(document["timeouts"]["tcp"], u64::from(u32::MAX));
}

fn every_daemon() -> Vec<SyncDaemon> {
    let mut master = SyncDaemon::new(SyncState::Master, "eth0", 7);
    master.max_length = Some(1472);
    master.group = Some("224.0.0.81".parse().unwrap());
    master.port = Some(8848);
    master.ttl = Some(1);
    let mut backup = SyncDaemon::new(SyncState::Backup, "eth1", 255);
    backup.group = Some("ff02::1:81".parse().unwrap());
    vec![master, backup]
}

#[test]
fn daemons_in_the_kernels_order() {
    assert_document(
        &daemons(&every_daemon()),
        r#"{
          "schema_version": 1,
          "daemons": [
            {
              "state": "master",
              "multicast_interface": "eth0",
              "sync_id": 7,
              "sync_max_length": 1472,
              "multicast_group": "224.0.0.81",
              "multicast_port": 8848,
              "multicast_ttl": 1
            },
            {
              "state": "backup",
              "multicast_interface": "eth1",
              "sync_id": 255,
              "multicast_group": "ff02::1:81"
            }
          ]
        }"#,
    );
    assert_document(&daemons(&[]), r#"{"schema_version": 1, "daemons": []}"#);
}

// ---------------------------------------------------------------------------
// Connections
// ---------------------------------------------------------------------------

/// What the kernel writes (`ip_vs_conn_seq_show`): IPv4 as `%08X`, IPv6 as
/// `%pI6`, ports as `%04X`, the expiry as `%7u`, and ` pe_name pe_data`
/// when the connection has them.
const PROC_CONN: &str = "\
Pro FromIP   FPrt ToIP     TPrt DestIP   DPrt State       Expires PEName PEData
TCP C0A80164 D431 0A000001 0050 C0A80102 0050 ESTABLISHED     899
UDP 0A000009 13C4 0A000001 13C4 C0A80101 13C4 UDP            3599 sip 1234567890abcdefghijkl
TCP 2001:0db8:0000:0000:0000:0000:0000:0064 1F90 2001:0db8:0000:0000:0000:0000:0000:0001 01BB C0A80201 01BB SYN_RECV         59
IP  0A000063 0000 00000001 0000 C0A80102 0000 NONE            359
";

#[test]
fn connections_as_the_kernel_lists_them() {
    assert_document(
        &connections(PROC_CONN.as_bytes()).unwrap(),
        r#"{
          "schema_version": 1,
          "connections": [
            {
              "protocol": "tcp",
              "client": {"address": "192.168.1.100", "port": 54321},
              "virtual": {"address": "10.0.0.1", "port": 80},
              "destination": {"address": "192.168.1.2", "port": 80},
              "state": "ESTABLISHED",
              "expires": 899
            },
            {
              "protocol": "udp",
              "client": {"address": "10.0.0.9", "port": 5060},
              "virtual": {"address": "10.0.0.1", "port": 5060},
              "destination": {"address": "192.168.1.1", "port": 5060},
              "state": "UDP",
              "expires": 3599,
              "persistence_engine": "sip",
              "persistence_data": "1234567890abcdefghijkl"
            },
            {
              "protocol": "tcp",
              "client": {"address": "2001:db8::64", "port": 8080},
              "virtual": {"address": "2001:db8::1", "port": 443},
              "destination": {"address": "192.168.2.1", "port": 443},
              "state": "SYN_RECV",
              "expires": 59
            },
            {
              "protocol": "ip",
              "client": {"address": "10.0.0.99", "port": 0},
              "virtual": {"address": "0.0.0.1", "port": 0},
              "destination": {"address": "192.168.1.2", "port": 0},
              "state": "NONE",
              "expires": 359
            }
          ]
        }"#,
    );
}

#[test]
fn connections_without_entries() {
    let header = PROC_CONN.lines().next().unwrap();
    assert_document(
        &connections(format!("{header}\n").as_bytes()).unwrap(),
        r#"{"schema_version": 1, "connections": []}"#,
    );
    assert_eq!(connections(b""), Err(ConnectionsError::Empty));
    assert_eq!(
        ConnectionsError::Empty.to_string(),
        "unexpected input from /proc/net/ip_vs_conn"
    );
}

#[test]
fn connections_skip_blank_lines_and_take_long_ones_whole() {
    // ipvsadm stops at a blank line and cuts lines at 255 bytes.
    let long_data = "x".repeat(400);
    let text = format!(
        "header\n\nUDP 0A000009 13C4 0A000001 13C4 C0A80101 13C4 UDP 3599 sip {long_data}\n\n"
    );
    let document: Value = serde_json::from_str(&connections(text.as_bytes()).unwrap()).unwrap();
    let connections = document["connections"].as_array().unwrap();
    assert_eq!(connections.len(), 1);
    assert_eq!(connections[0]["persistence_data"], long_data.as_str());
}

#[test]
fn malformed_connection_lines_are_errors() {
    for line in [
        "TCP C0A80164 D431 0A000001 0050 C0A80102 0050 ESTABLISHED",
        "TCP C0A8016 D431 0A000001 0050 C0A80102 0050 ESTABLISHED 1",
        "TCP C0A80164 D4311 0A000001 0050 C0A80102 0050 ESTABLISHED 1",
        "TCP +0A80164 D431 0A000001 0050 C0A80102 0050 ESTABLISHED 1",
        "TCP 2001:db8::zz D431 0A000001 0050 C0A80102 0050 ESTABLISHED 1",
        "TCP C0A80164 D431 0A000001 0050 C0A80102 0050 ESTABLISHED -1",
    ] {
        assert_eq!(
            connections(format!("header\n{line}\n").as_bytes()),
            Err(ConnectionsError::Malformed { line: 2 }),
            "{line}"
        );
    }
    assert_eq!(
        ConnectionsError::Malformed { line: 2 }.to_string(),
        "unexpected input from /proc/net/ip_vs_conn on line 2"
    );
}

// ---------------------------------------------------------------------------
// The schema document
// ---------------------------------------------------------------------------

/// One of each document, between them every field of the schema.
fn every_document() -> Vec<String> {
    vec![
        listed(&table(), true, true),
        timeouts(&Timeouts::default()),
        daemons(&every_daemon()),
        connections(PROC_CONN.as_bytes()).unwrap(),
    ]
}

fn collect_keys(value: &Value, keys: &mut BTreeSet<String>) {
    match value {
        Value::Object(map) => {
            for (key, value) in map {
                keys.insert(key.clone());
                collect_keys(value, keys);
            }
        }
        Value::Array(items) => items.iter().for_each(|item| collect_keys(item, keys)),
        _ => {}
    }
}

/// The first cells of the document's field tables: rows that start with a
/// backquoted lower-case name (option rows start with `-`).
fn documented_fields() -> BTreeSet<String> {
    SCHEMA_DOC
        .lines()
        .filter_map(|line| line.strip_prefix("| `"))
        .filter_map(|rest| rest.split_once('`'))
        .map(|(name, _)| name)
        .filter(|name| {
            name.bytes()
                .all(|byte| byte.is_ascii_lowercase() || byte == b'_')
        })
        .map(str::to_owned)
        .collect()
}

#[test]
fn the_schema_document_lists_exactly_the_fields_printed() {
    let mut printed = BTreeSet::new();
    for document in every_document() {
        collect_keys(&serde_json::from_str(&document).unwrap(), &mut printed);
    }
    let documented = documented_fields();
    let undocumented: Vec<_> = printed.difference(&documented).collect();
    let never_printed: Vec<_> = documented.difference(&printed).collect();
    assert!(
        undocumented.is_empty() && never_printed.is_empty(),
        "printed but not in docs/ipvsctl-json.md: {undocumented:?}; \
         documented but never printed by a test: {never_printed:?}"
    );
}

/// The documents of `docs/ipvsctl-json.md`'s examples, one per listing.
fn example_documents() -> Vec<String> {
    let mut web = service(
        address_key(Protocol::Tcp, "10.0.0.1", 80),
        "wlc",
        ServiceFlags::empty(),
    );
    let mut first = destination("192.168.1.2:80", Forwarding::Masquerade, 1);
    first.counters = Some(ConnectionCounters {
        active: 5,
        inactive: 10,
        persistent: 0,
    });
    let mut second = destination("192.168.1.3:80", Forwarding::Masquerade, 2);
    second.upper_threshold = 100;
    second.lower_threshold = 50;
    let mut sip = persistent(
        service(
            mark_key(Family::Inet, 1),
            "sh",
            ServiceFlags::SH_FALLBACK | ServiceFlags::SH_PORT,
        ),
        600,
    );
    sip.netmask = Netmask::Ipv4(Ipv4Addr::new(255, 255, 255, 0));
    sip.persistence_engine = Some("sip".to_owned());
    let mut secure = persistent(
        service(
            address_key(Protocol::Tcp, "2001:db8::1", 443),
            "mh",
            ServiceFlags::empty(),
        ),
        300,
    );
    secure.netmask = Netmask::Ipv6(64);
    let table = vec![
        (
            secure,
            vec![destination("[2001:db8::10]:443", Forwarding::Route, 1)],
        ),
        (
            sip,
            vec![destination(
                "192.168.2.1:0",
                tunnel(TunnelKind::Gue, 6080, TunnelChecksum::Checksum),
                1,
            )],
        ),
        (web.clone(), vec![second.clone(), first.clone()]),
    ];
    web.statistics = Some(statistics([
        1_234_567,
        9_876_543,
        8_765_432,
        1_234_567_890_123,
        9_876_543_210,
        12,
        345,
        300,
        41_000,
        380_000,
    ]));
    first.statistics = Some(statistics([
        617_283,
        4_938_271,
        4_382_716,
        617_283_945_061,
        4_938_271_605,
        6,
        172,
        150,
        20_500,
        190_000,
    ]));
    vec![
        listed(&table, false, false),
        listed(&[(web, vec![first])], true, true),
        connections(PROC_CONN.as_bytes()).unwrap(),
        timeouts(&Timeouts {
            tcp: 900,
            tcp_fin: 120,
            udp: 300,
        }),
        daemons(&every_daemon()[..1]),
    ]
}

#[test]
fn the_schema_documents_examples_are_what_ipvsctl_prints() {
    let mut examples = Vec::new();
    let mut rest = SCHEMA_DOC;
    while let Some((_, after)) = rest.split_once("```json\n") {
        let (block, after) = after.split_once("```").expect("a closed json block");
        examples.push(format!("{}\n", compact(block)));
        rest = after;
    }
    let expected = example_documents();
    for example in &examples {
        assert!(
            expected.contains(example),
            "an example of docs/ipvsctl-json.md is not one of example_documents():\n{example}"
        );
    }
    for document in &expected {
        assert!(
            examples.contains(document),
            "docs/ipvsctl-json.md lacks this example:\n{document}"
        );
    }
}

#[test]
#[ignore = "prints the examples, to paste into docs/ipvsctl-json.md"]
fn print_the_examples() {
    for document in example_documents() {
        print!("{document}");
    }
}
