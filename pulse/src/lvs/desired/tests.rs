use super::*;

fn load(text: &str) -> config::Config {
    let loaded = fulcrum_config::load_str("test.conf", text, &Default::default());
    loaded.config
}

/// The key of an address virtual server, as nanny prints it: `ADDRESS:PORT
/// TCP`.
fn name(text: &str) -> VirtualServerKey {
    let (address, protocol) = text.split_once(' ').unwrap();
    assert_eq!(protocol, "TCP");
    VirtualServerKey::Address {
        address: address.parse().unwrap(),
        protocol: Some(config::Protocol::Tcp),
    }
}

fn address(text: &str) -> SocketAddr {
    text.parse().unwrap()
}

fn health(up: bool) -> RealServerHealth {
    RealServerHealth {
        up,
        dynamic_weight: None,
        weight_offset: 0,
    }
}

/// (address, weight) of each destination of the service at `index`.
fn pool(desired: &Desired, index: usize) -> Vec<(SocketAddr, u32)> {
    desired.table.services[index]
        .destinations
        .iter()
        .map(|destination| (destination.socket_address(), destination.weight))
        .collect()
}

const VIRTUAL: &str = "192.0.2.1:80 TCP";

fn virtual_server(body: &str) -> String {
    format!(
        "virtual_server 192.0.2.1 80 {{
    protocol TCP
    lvs_sched rr
    lvs_method NAT
{body}
}}"
    )
}

#[test]
fn inhibit_on_failure_keeps_a_dead_server_with_weight_zero() {
    let configuration = load(&virtual_server(
        "    real_server 10.0.0.1 8080 { weight 3\n TCP_CHECK { } }
    real_server 10.0.0.2 8080 { weight 2\n inhibit_on_failure\n TCP_CHECK { } }
    real_server 10.0.0.3 8080 { weight 5\n TCP_CHECK { } }",
    ));
    let mut health = Health::default();
    health.set(name(VIRTUAL), address("10.0.0.1:8080"), self::health(false));
    health.set(name(VIRTUAL), address("10.0.0.2:8080"), self::health(false));
    health.set(name(VIRTUAL), address("10.0.0.3:8080"), self::health(true));
    let desired = desired(&configuration, &health, &QuorumStates::default());
    assert_eq!(
        pool(&desired, 0),
        [(address("10.0.0.2:8080"), 0), (address("10.0.0.3:8080"), 5)]
    );
    let service = &desired.table.services[0].service;
    assert_eq!(service.scheduler, "rr");
    assert_eq!(
        desired.table.services[0].destinations[0].forwarding,
        Forwarding::Masquerade
    );
}

#[test]
fn before_the_first_report_alpha_servers_are_down_and_others_up() {
    let configuration = load(&virtual_server(
        "    real_server 10.0.0.1 8080 { TCP_CHECK { } }
    real_server 10.0.0.2 8080 { alpha\n TCP_CHECK { } }
    real_server 10.0.0.3 8080 { alpha\n inhibit_on_failure\n TCP_CHECK { } }
    real_server 10.0.0.4 8080 { }",
    ));
    let desired = desired(&configuration, &Health::default(), &QuorumStates::default());
    assert_eq!(
        pool(&desired, 0),
        [
            (address("10.0.0.1:8080"), 1),
            (address("10.0.0.3:8080"), 0),
            (address("10.0.0.4:8080"), 1)
        ]
    );
}

#[test]
fn dynamic_weight_replaces_the_configured_one_and_file_offsets_add() {
    let configuration = load(&virtual_server(
        "    real_server 10.0.0.1 8080 { weight 10\n MISC_CHECK { misc_path /bin/true\n misc_dynamic } }
    real_server 10.0.0.2 8080 { weight 10\n TCP_CHECK { } }",
    ));
    let mut health = Health::default();
    health.set(
        name(VIRTUAL),
        address("10.0.0.1:8080"),
        RealServerHealth {
            up: true,
            dynamic_weight: Some(40),
            weight_offset: 5,
        },
    );
    // An offset below zero clamps to 0 (keepalived's real_weight).
    health.set(
        name(VIRTUAL),
        address("10.0.0.2:8080"),
        RealServerHealth {
            up: true,
            dynamic_weight: None,
            weight_offset: -30,
        },
    );
    let desired = desired(&configuration, &health, &QuorumStates::default());
    assert_eq!(
        pool(&desired, 0),
        [
            (address("10.0.0.1:8080"), 45),
            (address("10.0.0.2:8080"), 0)
        ]
    );
}

#[test]
fn quorum_with_hysteresis() {
    // Four servers of weight 1, quorum 3, hysteresis 1: gained at 4, lost
    // below 2.
    let configuration = load(&virtual_server(
        "    quorum 3
    hysteresis 1
    sorry_server 10.0.0.9 8080
    real_server 10.0.0.1 8080 { TCP_CHECK { } }
    real_server 10.0.0.2 8080 { TCP_CHECK { } }
    real_server 10.0.0.3 8080 { TCP_CHECK { } }
    real_server 10.0.0.4 8080 { TCP_CHECK { } }",
    ));
    let servers = [
        "10.0.0.1:8080",
        "10.0.0.2:8080",
        "10.0.0.3:8080",
        "10.0.0.4:8080",
    ];
    let with_alive = |count: usize| {
        let mut health = Health::default();
        for (index, server) in servers.iter().enumerate() {
            health.set(name(VIRTUAL), address(server), self::health(index < count));
        }
        health
    };
    let sorry = vec![(address("10.0.0.9:8080"), 1)];
    let mut states = QuorumStates::default();
    let mut step = |alive: usize, expect_up: bool| {
        let desired = desired(&configuration, &with_alive(alive), &states);
        assert_eq!(desired.quorum[&name(VIRTUAL)], expect_up, "{alive} alive");
        states = desired.quorum.clone();
        desired
    };
    let start = step(4, true);
    assert_eq!(start.quorum_changes.len(), 1);
    assert!(start.quorum_changes[0].initial && start.quorum_changes[0].up);
    assert_eq!(pool(&step(2, true), 0).len(), 2, "2 >= 3 - 1: kept");
    let lost = step(1, false);
    assert_eq!(pool(&lost, 0), sorry, "the sorry server replaces the pool");
    assert_eq!(lost.quorum_changes[0].threshold, 2);
    assert_eq!(pool(&step(3, false), 0), sorry, "3 < 3 + 1: not regained");
    let regained = step(4, true);
    assert_eq!(pool(&regained, 0).len(), 4);
    assert!(!regained.quorum_changes[0].initial);

    // At start, quorum needs quorum + hysteresis; starting down is
    // notified since there is a sorry server to add.
    let start = desired(&configuration, &with_alive(3), &QuorumStates::default());
    assert!(!start.quorum[&name(VIRTUAL)]);
    assert_eq!(start.quorum_changes.len(), 1);
}

#[test]
fn starting_without_quorum_or_sorry_server_notifies_nothing() {
    let configuration = load(&virtual_server(
        "    quorum 2
    real_server 10.0.0.1 8080 { TCP_CHECK { } }
    real_server 10.0.0.2 8080 { alpha\n TCP_CHECK { } }",
    ));
    // The alpha server starts down: 1 < 2.
    let start = desired(&configuration, &Health::default(), &QuorumStates::default());
    assert!(!start.quorum[&name(VIRTUAL)]);
    assert_eq!(start.quorum_changes, []);
    assert_eq!(pool(&start, 0), [(address("10.0.0.1:8080"), 1)]);
}

#[test]
fn quorum_is_lost_at_zero_weight_whatever_the_threshold() {
    let configuration = load(&virtual_server(
        "    quorum 1
    hysteresis 1
    real_server 10.0.0.1 8080 { weight 0\n TCP_CHECK { } }",
    ));
    let mut health = Health::default();
    health.set(name(VIRTUAL), address("10.0.0.1:8080"), self::health(true));
    let previous = QuorumStates::from_iter([(name(VIRTUAL), true)]);
    let desired = desired(&configuration, &health, &previous);
    assert!(!desired.quorum[&name(VIRTUAL)]);
    // Without a sorry server losing quorum changes no destination.
    assert_eq!(pool(&desired, 0), [(address("10.0.0.1:8080"), 0)]);
}

#[test]
fn sorry_server_without_inhibit() {
    let configuration = load(&virtual_server(
        "    sorry_server 10.0.0.9 8080
    real_server 10.0.0.1 8080 { inhibit_on_failure\n TCP_CHECK { } }
    real_server 10.0.0.2 8080 { TCP_CHECK { } }",
    ));
    let mut health = Health::default();
    health.set(name(VIRTUAL), address("10.0.0.1:8080"), self::health(true));
    health.set(name(VIRTUAL), address("10.0.0.2:8080"), self::health(false));
    let up = desired(&configuration, &health, &QuorumStates::default());
    assert_eq!(pool(&up, 0), [(address("10.0.0.1:8080"), 1)]);

    health.set(name(VIRTUAL), address("10.0.0.1:8080"), self::health(false));
    let down = desired(&configuration, &health, &up.quorum);
    // The inhibited server stays at weight 0 beside the sorry server.
    assert_eq!(
        pool(&down, 0),
        [(address("10.0.0.1:8080"), 0), (address("10.0.0.9:8080"), 1)]
    );
}

#[test]
fn sorry_server_with_inhibit_waits_at_weight_zero() {
    let configuration = load(&virtual_server(
        "    sorry_server 10.0.0.9 8080
    sorry_server_inhibit
    real_server 10.0.0.1 8080 { TCP_CHECK { } }",
    ));
    let mut health = Health::default();
    health.set(name(VIRTUAL), address("10.0.0.1:8080"), self::health(true));
    let up = desired(&configuration, &health, &QuorumStates::default());
    assert_eq!(
        pool(&up, 0),
        [(address("10.0.0.1:8080"), 1), (address("10.0.0.9:8080"), 0)]
    );
    health.set(name(VIRTUAL), address("10.0.0.1:8080"), self::health(false));
    let down = desired(&configuration, &health, &up.quorum);
    assert_eq!(pool(&down, 0), [(address("10.0.0.9:8080"), 1)]);
}

#[test]
fn omega_changes_only_what_runs_at_stop() {
    let configuration = load(&virtual_server(
        "    omega\n    real_server 10.0.0.1 8080 { }",
    ));
    let desired = desired(&configuration, &Health::default(), &QuorumStates::default());
    assert_eq!(pool(&desired, 0), [(address("10.0.0.1:8080"), 1)]);
}

#[test]
fn group_ranges_expand_to_one_service_per_address_and_mark() {
    let configuration = load(
        "virtual_server_group web {
    10.0.0.1-3 80
    2001:db8::fe-101 443
    fwmark 7
    fwmark 8 inet6
}
virtual_server group web {
    protocol TCP
    lvs_method DR
    real_server 10.0.1.1 80 { }
}",
    );
    let desired = desired(&configuration, &Health::default(), &QuorumStates::default());
    let keys: Vec<String> = desired
        .table
        .services
        .values()
        .map(|entry| entry.service.key.to_string())
        .collect();
    assert_eq!(
        keys,
        [
            "TCP 10.0.0.1:80",
            "TCP 10.0.0.2:80",
            "TCP 10.0.0.3:80",
            "TCP [2001:db8::fe]:443",
            "TCP [2001:db8::ff]:443",
            "TCP [2001:db8::100]:443",
            "TCP [2001:db8::101]:443",
            "FWM 7 IPv4",
            "FWM 8 IPv6",
        ]
    );
    // DR takes the port of each service: 443 for the IPv6 ones, 0 for marks.
    let ports: Vec<u16> = desired
        .table
        .services
        .values()
        .map(|entry| entry.destinations[0].port)
        .collect();
    assert_eq!(ports, [80, 80, 80, 443, 443, 443, 443, 0, 0]);
}

#[test]
fn method_decides_the_destination_port() {
    let configuration = load(
        "virtual_server fwmark 5 {
    lvs_method NAT
    real_server 10.0.0.1 8080 { }
    real_server 10.0.0.2 8080 { lvs_method DR }
    real_server 10.0.0.3 8080 { lvs_method TUN type gue port 6080 csum }
}",
    );
    let desired = desired(&configuration, &Health::default(), &QuorumStates::default());
    let entry = &desired.table.services[0];
    assert_eq!(
        entry.service.key,
        ServiceKey::Fwmark {
            family: Family::Inet,
            mark: 5
        }
    );
    let destinations: Vec<(SocketAddr, Forwarding)> = entry
        .destinations
        .iter()
        .map(|destination| (destination.socket_address(), destination.forwarding))
        .collect();
    assert_eq!(
        destinations,
        [
            (address("10.0.0.1:8080"), Forwarding::Masquerade),
            (address("10.0.0.2:0"), Forwarding::Route),
            (
                address("10.0.0.3:0"),
                Forwarding::Tunnel(Tunnel {
                    kind: TunnelKind::Gue,
                    port: 6080,
                    checksum: TunnelChecksum::Checksum
                })
            ),
        ]
    );
}

#[test]
fn persistence_scheduler_flags_and_timeouts() {
    let configuration = load(
        "global_defs {
    lvs_timeouts tcp 900 udp 30
}
virtual_server 192.0.2.1 443 {
    protocol TCP
    lvs_sched sh
    sh-port
    sh-fallback
    persistence_timeout 600
    persistence_granularity 255.255.255.0
    real_server 10.0.0.1 443 { }
}
virtual_server 192.0.2.2 53 {
    protocol UDP
    lvs_sched rr
    ops
    real_server 10.0.0.1 53 { }
}",
    );
    let desired = desired(&configuration, &Health::default(), &QuorumStates::default());
    let persistent = &desired.table.services[0].service;
    assert_eq!(persistent.scheduler, "sh");
    assert_eq!(
        persistent.flags,
        ServiceFlags::PERSISTENT | ServiceFlags::SH_PORT | ServiceFlags::SH_FALLBACK
    );
    assert_eq!(persistent.timeout, 600);
    assert_eq!(
        persistent.netmask,
        Netmask::Ipv4(Ipv4Addr::new(255, 255, 255, 0))
    );
    let one_packet = &desired.table.services[1].service;
    assert_eq!(one_packet.flags, ServiceFlags::ONE_PACKET);
    assert_eq!(one_packet.timeout, 0);
    assert_eq!(one_packet.netmask, Netmask::full(Family::Inet));
    assert_eq!(
        desired.table.timeouts,
        Timeouts {
            tcp: 900,
            tcp_fin: 0,
            udp: 30
        }
    );
}

#[test]
fn group_services_keep_the_full_netmask_whatever_the_granularity() {
    let configuration = load(
        "virtual_server_group four {
    192.0.2.10-11 443
    fwmark 7
}
virtual_server group four {
    protocol TCP
    lvs_sched rr
    lvs_method DR
    persistence_timeout 300
    persistence_granularity 255.255.255.0
    real_server 10.0.0.1 443 { }
}
virtual_server_group six {
    2001:db8::10 443
}
virtual_server group six {
    protocol TCP
    lvs_sched rr
    lvs_method DR
    persistence_timeout 100
    persistence_granularity 96
    real_server 2001:db8::1 443 { }
}",
    );
    let desired = desired(&configuration, &Health::default(), &QuorumStates::default());
    let services: Vec<&Service> = desired
        .table
        .services
        .values()
        .map(|entry| &entry.service)
        .collect();
    assert_eq!(services.len(), 4);
    for service in services {
        // Still persistent, with the timeout.
        assert!(service.flags.contains(ServiceFlags::PERSISTENT));
        assert!(service.timeout == 300 || service.timeout == 100);
        assert_eq!(service.netmask, Netmask::full(service.key.family()));
    }
}

#[test]
fn real_servers_weighing_nothing_in_all_leave_the_sorry_server_in() {
    // The configuration reduces the quorum to 0 and keepalived's hysteresis
    // wraps to 4294967295: quorum is never reached.
    let configuration = load(&virtual_server(
        "    sorry_server 10.0.9.9 80
    real_server 10.0.0.1 80 { weight 0 }
    real_server 10.0.0.2 80 {
        weight 0
        inhibit_on_failure
    }",
    ));
    let desired = desired(&configuration, &Health::default(), &QuorumStates::default());
    assert_eq!(
        pool(&desired, 0),
        [(address("10.0.0.2:80"), 0), (address("10.0.9.9:80"), 1)]
    );
    assert_eq!(desired.quorum.get(&name(VIRTUAL)), Some(&false));
}

#[test]
fn a_service_configured_twice_keeps_the_first_parameters_and_gains_destinations() {
    let configuration = load(
        "virtual_server_group overlap {
    192.0.2.1-2 80
}
virtual_server 192.0.2.2 80 {
    protocol TCP
    lvs_sched rr
    lvs_method NAT
    real_server 10.0.0.1 80 { weight 4 }
}
virtual_server group overlap {
    protocol TCP
    lvs_sched wlc
    lvs_method NAT
    real_server 10.0.0.1 80 { weight 9 }
    real_server 10.0.0.2 80 { }
}",
    );
    let desired = desired(&configuration, &Health::default(), &QuorumStates::default());
    let services: Vec<(String, &str)> = desired
        .table
        .services
        .values()
        .map(|entry| {
            (
                entry.service.key.to_string(),
                entry.service.scheduler.as_str(),
            )
        })
        .collect();
    assert_eq!(services.len(), 2);
    assert_eq!(services[0].1, "rr");
    assert_eq!(services[1].1, "wlc");
    // The shared service: the first virtual server's destination keeps its
    // weight, the group's other one joins.
    assert_eq!(
        pool(&desired, 0),
        [(address("10.0.0.1:80"), 4), (address("10.0.0.2:80"), 1)]
    );
    assert_eq!(
        pool(&desired, 1),
        [(address("10.0.0.1:80"), 9), (address("10.0.0.2:80"), 1)]
    );
}

#[test]
fn nanny_state_changes_feed_the_health() {
    let mut health = Health::default();
    health.record(&StateChange {
        real_server: nanny::spec::RealServerName {
            address: address("10.0.0.1:8080"),
        },
        virtual_servers: vec![name("192.0.2.1:80 TCP"), name("192.0.2.2:80 TCP")],
        up: false,
        initial: true,
        reason: "test".into(),
        weight: Some(3),
        weight_offset: 0,
    });
    assert_eq!(
        health.get(&name("192.0.2.2:80 TCP"), address("10.0.0.1:8080")),
        Some(&RealServerHealth {
            up: false,
            dynamic_weight: Some(3),
            weight_offset: 0
        })
    );
}

#[test]
fn a_health_change_recomputes_its_virtual_servers_alone_to_the_same_services() {
    // 192.0.2.1:80 is both a virtual server and in a group, whose services
    // it shares; 192.0.2.3 is alone.
    let configuration = load(
        "virtual_server_group web {
    192.0.2.1-2 80
}
virtual_server group web {
    protocol TCP
    real_server 10.0.0.1 80 { weight 2\n TCP_CHECK { } }
}
virtual_server 192.0.2.1 80 {
    protocol TCP
    real_server 10.0.0.2 80 { TCP_CHECK { } }
}
virtual_server 192.0.2.3 80 {
    protocol TCP
    quorum 2
    real_server 10.0.0.3 80 { TCP_CHECK { } }
    real_server 10.0.0.4 80 { TCP_CHECK { } }
}",
    );
    let layout = Layout::of(&configuration);
    let start = desired(&configuration, &Health::default(), &QuorumStates::default());
    for name in configuration
        .virtual_servers
        .iter()
        .map(VirtualServerKey::from_config)
    {
        for real_server in ["10.0.0.1:80", "10.0.0.2:80", "10.0.0.3:80"] {
            let mut health = Health::default();
            health.set(name.clone(), address(real_server), self::health(false));
            let whole = desired(&configuration, &health, &start.quorum);
            let (positions, keys) = layout.affected([&name]);
            let part = desired_of(&configuration, &layout, &positions, &health, &start.quorum);
            for key in &keys {
                assert_eq!(
                    part.table.service(key),
                    whole.table.service(key),
                    "{name}, {real_server} down: {key}"
                );
            }
            // The change's quorum is the whole computation's.
            for change in &part.quorum_changes {
                assert!(whole.quorum_changes.contains(change), "{change:?}");
            }
            for (other, entry) in &whole.table.services {
                if !keys.contains(other) {
                    assert_eq!(start.table.service(other), Some(entry), "{name}: {other}");
                }
            }
        }
    }
    // The group and the virtual server share 192.0.2.1:80: a change of
    // either computes both.
    let group = VirtualServerKey::from_config(&configuration.virtual_servers[0]);
    assert_eq!(layout.affected([&group]).0, [0, 1]);
    let alone = VirtualServerKey::from_config(&configuration.virtual_servers[2]);
    assert_eq!(layout.affected([&alone]).0, [2]);
}

/// A reload's partial computation ([`Layout::changed`], then
/// [`desired_of`] over what it returns) merged into the previous table is
/// the whole computation of the new configuration, for each edit that
/// keeps the layout; an edit that does not keep it asks for the whole.
#[test]
fn a_reload_recomputes_the_changed_virtual_servers_alone_to_the_whole_table() {
    let base = "virtual_server_group web {
    192.0.2.1-2 80
}
virtual_server group web {
    protocol TCP
    real_server 10.0.0.1 80 { weight 2 }
}
virtual_server 192.0.2.1 80 {
    protocol TCP
    real_server 10.0.0.2 80 { weight 1 }
}
virtual_server 192.0.2.3 80 {
    protocol TCP
    quorum 2
    real_server 10.0.0.3 80 { weight 1 }
    real_server 10.0.0.4 80 { weight 1 }
}
virtual_server 192.0.2.4 80 {
    protocol TCP
    real_server 10.0.0.5 80 { weight 1 }
}
";
    let kept = [
        // A weight.
        (
            "real_server 10.0.0.3 80 { weight 1 }",
            "real_server 10.0.0.3 80 { weight 5 }",
        ),
        // A real server gone (the quorum of 2 still holds with 10.0.0.3).
        ("    real_server 10.0.0.4 80 { weight 1 }\n", ""),
        // A real server of a virtual server sharing a service with a group.
        (
            "real_server 10.0.0.2 80 { weight 1 }",
            "real_server 10.0.0.9 80 { weight 1 }",
        ),
        // The group's own pool.
        (
            "real_server 10.0.0.1 80 { weight 2 }",
            "real_server 10.0.0.1 80 { weight 4 }",
        ),
        // Quorum lost by a server gone down to weight 0 (2 > 1 + 0).
        (
            "real_server 10.0.0.4 80 { weight 1 }",
            "real_server 10.0.0.4 80 { weight 0 }",
        ),
        // The scheduler.
        (
            "    protocol TCP\n    real_server 10.0.0.5",
            "    protocol TCP\n    lvs_sched rr\n    real_server 10.0.0.5",
        ),
    ];
    let before = load(base);
    let previous_layout = Layout::of(&before);
    let start = desired(&before, &Health::default(), &QuorumStates::default());
    for (from, to) in kept {
        assert!(base.contains(from), "{from}");
        let after = load(&base.replacen(from, to, 1));
        let layout = Layout::of(&after);
        let changed = previous_layout
            .changed(&before, &after)
            .unwrap_or_else(|| panic!("{from:?} -> {to:?} keeps the layout"));
        assert_eq!(layout, previous_layout, "{from:?} -> {to:?}");
        assert!(!changed.is_empty(), "{from:?} -> {to:?} changes something");
        let (positions, keys) = layout.around(changed.iter().copied());
        let part = desired_of(
            &after,
            &layout,
            &positions,
            &Health::default(),
            &start.quorum,
        );
        let mut merged = start.table.clone();
        for (key, entry) in part.table.services {
            if keys.contains(&key) {
                merged.insert(entry);
            }
        }
        let whole = desired(&after, &Health::default(), &start.quorum);
        assert_eq!(merged, whole.table, "{from:?} -> {to:?}");
        for change in &whole.quorum_changes {
            assert!(
                part.quorum_changes.contains(change),
                "{from:?} -> {to:?}: {change:?}"
            );
        }
    }
    // Unchanged: nothing to compute.
    assert_eq!(previous_layout.changed(&before, &load(base)), Some(vec![]));
    let moved = [
        // A virtual server added, one removed, a group's range, the timeouts.
        format!(
            "{base}virtual_server 192.0.2.5 80 {{\n    protocol TCP\n    real_server 10.0.0.6 80 {{ }}\n}}\n"
        ),
        base.replacen(
            "virtual_server 192.0.2.4 80",
            "virtual_server 192.0.2.6 80",
            1,
        ),
        base.replacen("192.0.2.1-2 80", "192.0.2.1-3 80", 1),
        format!("global_defs {{\n    lvs_timeouts tcp 100\n}}\n{base}"),
    ];
    for text in moved {
        let after = load(&text);
        assert_eq!(previous_layout.changed(&before, &after), None, "{text}");
    }
}

/// The ordered parts of a computation, for comparing two.
fn ordered(desired: &Desired) -> (Vec<(&ServiceKey, &TableService)>, &Timeouts) {
    (
        desired.table.services.iter().collect(),
        &desired.table.timeouts,
    )
}

/// [`desired_in_pieces`] chained is [`desired_whole`]: the same services
/// in the same order, quorum states and changes; no service is in two
/// pieces, and the runs cover every virtual server once.
fn assert_pieces_are_whole(configuration: &config::Config, what: &str) {
    let layout = Layout::of(configuration);
    let runs = layout.runs(LARGEST_PIECE);
    let covered: Vec<usize> = runs.iter().cloned().flatten().collect();
    assert_eq!(
        covered,
        (0..configuration.virtual_servers.len()).collect::<Vec<_>>(),
        "{what}: {runs:?}"
    );
    let whole = desired_whole(
        configuration,
        &layout,
        &Health::default(),
        &QuorumStates::default(),
    );
    let mut chained = Desired::default();
    for (index, piece) in desired_in_pieces(
        configuration,
        &layout,
        &Health::default(),
        &QuorumStates::default(),
    )
    .enumerate()
    {
        if index > 0 {
            assert_eq!(piece.table.timeouts, Timeouts::default(), "{what}");
        }
        for key in piece.table.services.keys() {
            assert!(
                !chained.table.services.contains_key(key),
                "{what}: {key} in two pieces"
            );
        }
        chained.append(piece);
    }
    assert_eq!(ordered(&chained), ordered(&whole), "{what}");
    // The start reads the kernel before it computes: the audit's scope
    // from the configuration covers the one from the computed table.
    let before = crate::lvs::audit::Scope::of_configuration(configuration, &layout);
    let after = crate::lvs::audit::Scope::of(&whole.table);
    assert!(
        after.precise.is_subset(&before.precise),
        "{what}: {:?} not in {:?}",
        after.precise,
        before.precise
    );
    assert_eq!(chained.quorum, whole.quorum, "{what}");
    assert_eq!(chained.quorum_changes, whole.quorum_changes, "{what}");
}

/// Runs grow from one virtual server to the largest, and are lengthened
/// where a service's makers would be parted: here a group overlapping
/// virtual servers far apart, and one address written twice.
#[test]
fn a_start_computed_in_pieces_is_the_whole_computation() {
    let mut text = String::from(
        "virtual_server_group web {\n    192.0.2.3 80\n    192.0.2.200 80\n}\n\
         virtual_server group web {\n    protocol TCP\n    real_server 10.0.0.1 80 { }\n}\n",
    );
    for index in 0..300u32 {
        // 192.0.3.12 twice, at positions 263 and 264 (its block written
        // again), where a run would otherwise end.
        let last = if index == 263 { 12 } else { index % 250 };
        let third = 2 + index / 250;
        text.push_str(&format!(
            "virtual_server 192.0.{third}.{last} 80 {{\n    protocol TCP\n    quorum 2\n    \
             real_server 10.0.0.1 80 {{ }}\n    real_server 10.0.0.2 80 {{ weight 2 }}\n}}\n"
        ));
    }
    text.push_str(
        "virtual_server 198.51.100.1 80 {\n    protocol TCP\n    lb_kind TUN\n    \
         real_server 10.0.0.3 80 { }\n}\n\
         virtual_server 198.51.100.2 80 {\n    protocol TCP\n    \
         real_server 10.0.0.4 80 { uthreshold 5 }\n}\n\
         global_defs {\n    lvs_timeouts tcp 900\n}\n",
    );
    let configuration = load(&text);
    let layout = Layout::of(&configuration);
    let runs = layout.runs(LARGEST_PIECE);
    // The group (position 0) shares a service with 192.0.2.3 (position 4)
    // and 192.0.2.200 (position 201): the first run, of one, reaches 201.
    assert_eq!(runs[0], 0..202);
    assert_eq!(runs[1], 202..204);
    assert!(
        runs.iter()
            .any(|run| run.contains(&263) && run.contains(&264)),
        "{runs:?}"
    );
    assert!(runs.iter().any(|run| run.end == 265), "{runs:?}");
    assert!(
        runs.iter()
            .all(|run| run.len() <= LARGEST_PIECE || run.start == 0),
        "{runs:?}"
    );
    assert_pieces_are_whole(&configuration, "generated");
}

/// The same over the corpus of real configurations, when it is there.
#[test]
fn the_corpus_computed_in_pieces_is_computed_whole() {
    let corpus = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../shared/corpus/keepalived/configs");
    let Ok(entries) = std::fs::read_dir(&corpus) else {
        eprintln!("skipped: no corpus at {}", corpus.display());
        return;
    };
    let mut names: Vec<_> = entries.flatten().map(|entry| entry.path()).collect();
    names.sort();
    let mut with_virtual_servers = 0;
    for name in names {
        let Ok(text) = std::fs::read_to_string(&name) else {
            continue;
        };
        let configuration = load(&text);
        if configuration.virtual_servers.is_empty() {
            continue;
        }
        with_virtual_servers += 1;
        assert_pieces_are_whole(&configuration, &name.display().to_string());
    }
    eprintln!("{with_virtual_servers} configurations with virtual servers computed in pieces");
}
