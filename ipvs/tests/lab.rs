//! The `ipvs` library against the real kernel, in the lab.
//!
//! Run with `cargo xtask test`: it boots the lab and runs the `first_`
//! tests alone, in the guest as it booted, before the others. Elsewhere
//! these tests refuse to run (they change the kernel's state), and a
//! `first_` test run after others, or by a bare `--ignored` (which runs
//! them all at once, in parallel), fails. Each other test works in a
//! network namespace of its own, so they run in parallel without seeing
//! each other's IPVS tables, and checks what the kernel holds with
//! `ipvsadm`, the reference tool, where it can.

use std::collections::BTreeSet;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use ipvs::{
    Client, Destination, Error, Family, Forwarding, Netmask, Operation, Protocol, Service,
    ServiceFlags, ServiceKey, SyncDaemon, SyncState, Timeouts, Tunnel, TunnelChecksum, TunnelKind,
};
use labkit::{Namespace, NatTopology, http};

/// A fresh namespace named after the test, with a client connected in it.
fn namespace(name: &str) -> (Namespace, Client) {
    labkit::require_lab();
    let namespace = Namespace::create(&format!("ipvs-{name}")).expect("namespace");
    let client = namespace
        .run(Client::connect)
        .expect("thread")
        .expect("connect");
    (namespace, client)
}

/// The services, listed until two listings in a row agree.
///
/// Other tests add and remove services in their namespaces meanwhile, and
/// the kernel's service table is shared by all namespaces: a dump spanning
/// several datagrams resumes by position in it and can skip a service when
/// another namespace's service is removed ahead of that position.
fn settled_services(client: &mut Client) -> Vec<Service> {
    let mut previous = client.services().unwrap();
    for _ in 0..10 {
        let current = client.services().unwrap();
        let keys = |services: &[Service]| -> BTreeSet<String> {
            services
                .iter()
                .map(|service| service.key.to_string())
                .collect()
        };
        if keys(&current) == keys(&previous) {
            return current;
        }
        previous = current;
    }
    panic!("the service listing did not settle in ten tries");
}

/// ipvsadm's view of the namespace: the reference tool against the same
/// kernel state.
fn ipvsadm(namespace: &Namespace, arguments: &str) -> String {
    let output = namespace
        .command("ipvsadm")
        .args(arguments.split_whitespace())
        .output()
        .expect("ipvsadm runs");
    assert!(
        output.status.success(),
        "ipvsadm {arguments}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).expect("ipvsadm prints UTF-8")
}

fn tcp(address: &str) -> ServiceKey {
    let address: SocketAddr = address.parse().unwrap();
    ServiceKey::Address {
        protocol: Protocol::Tcp,
        address: address.ip(),
        port: address.port(),
    }
}

fn errno_of(error: &Error) -> i32 {
    error
        .errno()
        .map(|errno| errno.0)
        .unwrap_or_else(|| panic!("no errno in {error}"))
}

/// Runs alone before the other tests (`cargo xtask test` runs `first_*`
/// first, one at a time), while ip_vs is not loaded yet.
#[test]
#[ignore = "runs in the lab"]
fn first_a_missing_ipvs_is_one_clear_error_and_connecting_loads_it() {
    labkit::require_lab();
    let loaded = || {
        std::fs::read_to_string("/proc/modules")
            .unwrap()
            .lines()
            .any(|line| line.starts_with("ip_vs "))
    };
    assert!(
        !loaded(),
        "ip_vs is loaded already: this test must run first, alone"
    );
    // The kernel asks modprobe for a missing generic netlink family: make
    // that fail, as it does where the module is not installed.
    let result = {
        let _modprobe = Sysctl::set("/proc/sys/kernel/modprobe", "/bin/false");
        Client::connect()
    };
    let error = result.err().expect("no IPVS without the module");
    assert!(matches!(error, Error::Unavailable), "{error}");
    assert!(
        error
            .to_string()
            .contains("could not load the ip_vs module"),
        "{error}"
    );

    // With modprobe working, asking for the family loads the module.
    Client::connect().unwrap();
    assert!(loaded());
}

/// A sysctl set for a while: the value it had is restored on drop, even
/// when the test panics.
struct Sysctl {
    path: &'static str,
    saved: String,
}

impl Sysctl {
    fn set(path: &'static str, value: &str) -> Sysctl {
        let saved = std::fs::read_to_string(path).unwrap();
        std::fs::write(path, value).unwrap();
        Sysctl { path, saved }
    }
}

impl Drop for Sysctl {
    fn drop(&mut self) {
        if let Err(error) = std::fs::write(self.path, self.saved.trim_end()) {
            // Not a panic: this may run while one unwinds already.
            eprintln!("cannot restore {}: {error}", self.path);
        }
    }
}

#[test]
#[ignore = "runs in the lab"]
fn info_and_timeouts() {
    labkit::require_lab();
    let (_namespace, mut client) = namespace("info");
    let info = client.info().unwrap();
    assert_eq!(info.version.to_string(), "1.2.1");
    assert_eq!(info.connection_table_size, 4096);

    client
        .set_timeouts(&Timeouts {
            tcp: 900,
            tcp_fin: 120,
            udp: 300,
        })
        .unwrap();
    assert_eq!(
        client.timeouts().unwrap(),
        Timeouts {
            tcp: 900,
            tcp_fin: 120,
            udp: 300
        }
    );
    // Zero leaves a timeout as it is.
    client
        .set_timeouts(&Timeouts {
            tcp: 0,
            tcp_fin: 60,
            udp: 0,
        })
        .unwrap();
    assert_eq!(
        client.timeouts().unwrap(),
        Timeouts {
            tcp: 900,
            tcp_fin: 60,
            udp: 300
        }
    );
}

#[test]
#[ignore = "runs in the lab"]
fn service_lifecycle() {
    labkit::require_lab();
    let (namespace, mut client) = namespace("service");
    let key = tcp("10.0.0.1:80");
    client.create_service(&Service::new(key, "rr")).unwrap();
    let read = client.service(&key).unwrap();
    assert_eq!(read.key, key);
    assert_eq!(read.scheduler, "rr");
    assert_eq!(read.timeout, 0);
    assert_eq!(read.netmask, Netmask::Ipv4(Ipv4Addr::BROADCAST));
    // The kernel reports its own HASHED flag on every listed service.
    assert!(read.flags.contains(ServiceFlags::HASHED));
    assert!(!read.flags.contains(ServiceFlags::PERSISTENT));

    let mut changed = Service::new(key, "wlc");
    changed.flags = ServiceFlags::PERSISTENT;
    changed.timeout = 300;
    changed.netmask = Netmask::Ipv4(Ipv4Addr::new(255, 255, 255, 0));
    client.update_service(&changed).unwrap();
    let read = client.service(&key).unwrap();
    assert_eq!((read.scheduler.as_str(), read.timeout), ("wlc", 300));
    assert!(read.flags.contains(ServiceFlags::PERSISTENT));
    assert_eq!(read.netmask, Netmask::Ipv4(Ipv4Addr::new(255, 255, 255, 0)));
    assert_eq!(
        ipvsadm(&namespace, "-S -n"),
        "-A -t 10.0.0.1:80 -s wlc -p 300 -M 255.255.255.0\n"
    );

    client.delete_service(&key).unwrap();
    assert!(client.services().unwrap().is_empty());
    let error = client.service(&key).unwrap_err();
    assert_eq!(errno_of(&error), libc::ESRCH, "{error}");
}

#[test]
#[ignore = "runs in the lab"]
fn services_of_every_kind() {
    labkit::require_lab();
    let (namespace, mut client) = namespace("kinds");
    let udp6 = ServiceKey::Address {
        protocol: Protocol::Udp,
        address: "2001:db8::1".parse().unwrap(),
        port: 53,
    };
    let mut sh = Service::new(udp6, "sh");
    sh.flags = ServiceFlags::from_name("sh-fallback").unwrap()
        | ServiceFlags::from_name("sh-port").unwrap();
    sh.netmask = Netmask::Ipv6(128);

    let fwmark = ServiceKey::Fwmark {
        family: Family::Inet,
        mark: 42,
    };
    let mut mh = Service::new(fwmark, "mh");
    mh.flags = ServiceFlags::from_name("mh-port").unwrap();

    let fwmark6 = ServiceKey::Fwmark {
        family: Family::Inet6,
        mark: 43,
    };
    let mut wrr = Service::new(fwmark6, "wrr");
    wrr.flags = ServiceFlags::PERSISTENT;
    wrr.timeout = 60;
    wrr.netmask = Netmask::Ipv6(64);

    let sctp = ServiceKey::Address {
        protocol: Protocol::Sctp,
        address: "10.0.0.2".parse().unwrap(),
        port: 9000,
    };
    let mut lc = Service::new(sctp, "lc");
    lc.flags = ServiceFlags::ONE_PACKET;

    let sip_key = ServiceKey::Address {
        protocol: Protocol::Udp,
        address: "10.0.0.3".parse().unwrap(),
        port: 5060,
    };
    let mut sip = Service::new(sip_key, "rr");
    sip.flags = ServiceFlags::PERSISTENT;
    sip.timeout = 120;
    sip.persistence_engine = Some("sip".into());

    let flagged_key = tcp("10.0.0.4:8080");
    let mut flagged = Service::new(flagged_key, "dh");
    flagged.flags = ServiceFlags::SCHED_1 | ServiceFlags::SCHED_2 | ServiceFlags::SCHED_3;

    let created = [sh, mh, wrr, lc, sip, flagged];
    for service in &created {
        client
            .create_service(service)
            .unwrap_or_else(|error| panic!("{error}"));
    }
    let listed = client.services().unwrap();
    assert_eq!(listed.len(), created.len());
    for service in &created {
        let found = listed
            .iter()
            .find(|listed| listed.key == service.key)
            .unwrap();
        assert_eq!(found.scheduler, service.scheduler, "{}", service.key);
        assert_eq!(found.timeout, service.timeout, "{}", service.key);
        assert_eq!(found.netmask, service.netmask, "{}", service.key);
        assert_eq!(
            found.persistence_engine, service.persistence_engine,
            "{}",
            service.key
        );
        let mut flags = found.flags;
        flags.remove(ServiceFlags::HASHED);
        assert_eq!(flags, service.flags, "{}", service.key);
        assert!(found.statistics.is_some(), "{}", service.key);
    }
    let saved: BTreeSet<String> = ipvsadm(&namespace, "-S -n")
        .lines()
        .map(str::to_owned)
        .collect();
    let expected: BTreeSet<String> = [
        "-A -u [2001:db8::1]:53 -s sh -b sh-fallback,sh-port",
        "-A -f 42 -s mh -b mh-port",
        "-A -f 43 -6 -s wrr -p 60 -M 64",
        "-A --sctp-service 10.0.0.2:9000 -s lc -o",
        "-A -u 10.0.0.3:5060 -s rr -p 120 --pe sip",
        "-A -t 10.0.0.4:8080 -s dh -b flag-1,flag-2,flag-3",
    ]
    .into_iter()
    .map(str::to_owned)
    .collect();
    assert_eq!(saved, expected);
}

#[test]
#[ignore = "runs in the lab"]
fn destinations_of_every_method() {
    labkit::require_lab();
    let (namespace, mut client) = namespace("destinations");
    let key = tcp("10.0.0.1:80");
    client.create_service(&Service::new(key, "wrr")).unwrap();
    let socket = |text: &str| text.parse::<SocketAddr>().unwrap();

    let mut masquerade = Destination::new(socket("10.0.2.11:8080"), Forwarding::Masquerade);
    masquerade.weight = 3;
    masquerade.upper_threshold = 100;
    masquerade.lower_threshold = 10;
    let route = Destination::new(socket("10.0.2.12:80"), Forwarding::Route);
    let local = Destination::new(socket("10.0.2.17:80"), Forwarding::Local);
    // ipvsadm cannot set the bypass method; the kernel stores it all the same.
    let bypass = Destination::new(socket("10.0.2.18:80"), Forwarding::Bypass);
    let ipip = Destination::new(
        socket("10.0.2.13:80"),
        Forwarding::Tunnel(Tunnel::default()),
    );
    let gue = Destination::new(
        socket("10.0.2.14:80"),
        Forwarding::Tunnel(Tunnel {
            kind: TunnelKind::Gue,
            port: 6080,
            checksum: TunnelChecksum::Checksum,
        }),
    );
    let gue_remote = Destination::new(
        socket("10.0.2.16:80"),
        Forwarding::Tunnel(Tunnel {
            kind: TunnelKind::Gue,
            port: 6081,
            checksum: TunnelChecksum::RemoteChecksum,
        }),
    );
    let gre = Destination::new(
        socket("10.0.2.15:80"),
        Forwarding::Tunnel(Tunnel {
            kind: TunnelKind::Gre,
            port: 0,
            checksum: TunnelChecksum::NoChecksum,
        }),
    );
    // Mixed-family pools: an IPv6 real server behind an IPv4 virtual
    // service, which the kernel allows through tunnels only.
    let mixed = Destination::new(
        socket("[2001:db8::11]:80"),
        Forwarding::Tunnel(Tunnel::default()),
    );
    let created = [
        masquerade, route, local, bypass, ipip, gue, gue_remote, gre, mixed,
    ];
    let operations: Vec<Operation> = created
        .iter()
        .map(|destination| Operation::CreateDestination(key, destination.clone()))
        .collect();
    client.apply(&operations).unwrap();

    let listed = client.destinations(&key).unwrap();
    assert_eq!(listed.len(), created.len());
    for destination in &created {
        let found = listed
            .iter()
            .find(|listed| listed.socket_address() == destination.socket_address())
            .unwrap_or_else(|| panic!("{} is not listed", destination.socket_address()));
        assert_eq!(
            found.forwarding,
            destination.forwarding,
            "{}",
            destination.socket_address()
        );
        assert_eq!(found.weight, destination.weight);
        assert_eq!(found.upper_threshold, destination.upper_threshold);
        assert_eq!(found.lower_threshold, destination.lower_threshold);
        let counters = found.counters.expect("replies carry counters");
        assert_eq!(
            (counters.active, counters.inactive, counters.persistent),
            (0, 0, 0)
        );
    }
    let tunnels = ipvsadm(&namespace, "-L -n --tun-info");
    assert!(
        tunnels.contains("10.0.2.14:80") && tunnels.contains("gue"),
        "{tunnels}"
    );

    // Edit in place, then delete.
    let mut heavier = Destination::new(socket("10.0.2.12:80"), Forwarding::Route);
    heavier.weight = 7;
    heavier.upper_threshold = 50;
    heavier.lower_threshold = 5;
    client.update_destination(&key, &heavier).unwrap();
    let listed = client.destinations(&key).unwrap();
    let found = listed
        .iter()
        .find(|listed| listed.socket_address() == socket("10.0.2.12:80"));
    assert_eq!(
        found.map(|found| (found.weight, found.upper_threshold)),
        Some((7, 50))
    );
    assert!(ipvsadm(&namespace, "-S -n").contains("-a -t 10.0.0.1:80 -r 10.0.2.12:80 -g -w 7"));

    client
        .delete_destination(&key, socket("10.0.2.11:8080"))
        .unwrap();
    assert_eq!(client.destinations(&key).unwrap().len(), created.len() - 1);
}

/// The kernel's text listing, read where the client is, gives every
/// service read over netlink the destinations netlink gives it, in the same
/// order, as far as the text shows them; returns how many services it
/// matched.
fn assert_listing_agrees_with_netlink(client: &mut Client) -> usize {
    let services = settled_services(client);
    let listing = client.listing().expect("the text listing reads");
    let matched = ipvs::listing::match_services(&services, listing);
    let mut count = 0;
    for (service, listed) in services.iter().zip(matched) {
        let Some(listed) = listed else { continue };
        count += 1;
        let dumped = client.destinations(&service.key).unwrap();
        let shown = |destination: &Destination| {
            let counters = destination.counters.unwrap();
            (
                destination.socket_address(),
                ipvs::listing::ListedForwarding::of(&destination.forwarding),
                destination.weight as i32,
                counters.active as i32,
                counters.inactive as i32,
            )
        };
        let from_text: Vec<_> = listed
            .iter()
            .map(|destination| {
                (
                    SocketAddr::new(destination.address, destination.port),
                    destination.forwarding,
                    destination.weight,
                    destination.active_connections,
                    destination.inactive_connections,
                )
            })
            .collect();
        let from_netlink: Vec<_> = dumped.iter().map(shown).collect();
        assert_eq!(from_text, from_netlink, "{}", service.key);
    }
    count
}

#[test]
#[ignore = "runs in the lab"]
fn the_kernels_text_listing_agrees_with_netlink() {
    labkit::require_lab();
    let (namespace, mut client) = namespace("listing");
    let socket = |text: &str| text.parse::<SocketAddr>().unwrap();
    let mut operations = Vec::new();
    let mut service = |key: ServiceKey, scheduler: &str, flags: ServiceFlags| {
        let mut service = Service::new(key, scheduler);
        service.flags = flags;
        if flags.contains(ServiceFlags::PERSISTENT) {
            service.timeout = 300;
        }
        operations.push(Operation::CreateService(service));
        key
    };
    let web = service(tcp("10.0.0.1:80"), "wrr", ServiceFlags::empty());
    let dns = service(
        ServiceKey::Address {
            protocol: Protocol::Udp,
            address: "10.0.0.2".parse().unwrap(),
            port: 53,
        },
        "wlc",
        ServiceFlags::PERSISTENT | ServiceFlags::ONE_PACKET,
    );
    service(
        ServiceKey::Address {
            protocol: Protocol::Sctp,
            address: "10.0.0.3".parse().unwrap(),
            port: 9999,
        },
        "sh",
        ServiceFlags::empty(),
    );
    let six = service(tcp("[2001:db8::1]:443"), "rr", ServiceFlags::ONE_PACKET);
    // One mark in both families, told apart by their schedulers.
    let mark_four = service(
        ServiceKey::Fwmark {
            family: Family::Inet,
            mark: 42,
        },
        "lc",
        ServiceFlags::empty(),
    );
    let mark_six = service(
        ServiceKey::Fwmark {
            family: Family::Inet6,
            mark: 42,
        },
        "dh",
        ServiceFlags::ONE_PACKET,
    );
    let mut destination = |key: ServiceKey, address: &str, forwarding: Forwarding, weight| {
        let mut destination = Destination::new(socket(address), forwarding);
        destination.weight = weight;
        destination.upper_threshold = 100;
        operations.push(Operation::CreateDestination(key, destination));
    };
    destination(web, "10.0.2.11:8080", Forwarding::Masquerade, 3);
    destination(web, "10.0.2.12:80", Forwarding::Route, 0);
    destination(web, "10.0.2.13:80", Forwarding::Local, 65535);
    destination(web, "10.0.2.14:80", Forwarding::Bypass, 1);
    destination(web, "10.0.2.15:80", Forwarding::Other(6), 1);
    destination(
        web,
        "10.0.2.16:80",
        Forwarding::Tunnel(Tunnel::default()),
        1,
    );
    destination(
        web,
        "[2001:db8::16]:80",
        Forwarding::Tunnel(Tunnel {
            kind: TunnelKind::Gue,
            port: 6080,
            checksum: TunnelChecksum::Checksum,
        }),
        2,
    );
    destination(dns, "10.0.2.21:53", Forwarding::Masquerade, 1);
    destination(six, "[2001:db8:1::10]:443", Forwarding::Masquerade, 7);
    destination(six, "[2001:db8:1::11]:443", Forwarding::Route, 1);
    destination(mark_four, "10.0.2.31:0", Forwarding::Route, 1);
    destination(mark_six, "[2001:db8:2::1]:0", Forwarding::Route, 1);
    client.apply(&operations).unwrap();

    // Read from this thread, outside the namespace, and from inside it.
    assert_eq!(assert_listing_agrees_with_netlink(&mut client), 6);
    namespace
        .run(|| {
            let services = client.services().unwrap();
            let listing = ipvs::listing::read().expect("the namespace's own listing");
            let matched = ipvs::listing::match_services(&services, listing);
            assert!(matched.iter().all(Option::is_some), "{matched:?}");
        })
        .unwrap();

    // The same scheduler and flags on both marks: the text cannot tell
    // them apart, so neither is matched.
    let mut same = Service::new(mark_six, "lc");
    same.flags = ServiceFlags::empty();
    client.update_service(&same).unwrap();
    assert_eq!(assert_listing_agrees_with_netlink(&mut client), 4);
}

#[test]
#[ignore = "runs in the lab"]
fn kernel_refusals_name_the_object_and_the_reason() {
    labkit::require_lab();
    let (_namespace, mut client) = namespace("errors");
    let key = tcp("10.0.0.1:80");
    client.create_service(&Service::new(key, "rr")).unwrap();

    let error = client.create_service(&Service::new(key, "rr")).unwrap_err();
    assert_eq!(errno_of(&error), libc::EEXIST);
    assert_eq!(
        error.to_string(),
        "create service TCP 10.0.0.1:80: Service already exists (EEXIST)"
    );

    let error = client
        .create_service(&Service::new(tcp("10.0.0.9:80"), "nosuch"))
        .unwrap_err();
    assert_eq!(errno_of(&error), libc::ENOENT);
    assert!(
        error
            .to_string()
            .contains("Scheduler or persistence engine not found"),
        "{error}"
    );

    let missing = tcp("10.0.0.99:80");
    let error = client.delete_service(&missing).unwrap_err();
    assert_eq!(errno_of(&error), libc::ESRCH);
    assert!(error.to_string().contains("No such service"), "{error}");

    let destination = Destination::new("10.0.2.12:80".parse().unwrap(), Forwarding::Route);
    let error = client
        .create_destination(&missing, &destination)
        .unwrap_err();
    assert_eq!(errno_of(&error), libc::ESRCH);
    assert!(error.to_string().contains("Service not defined"), "{error}");

    client.create_destination(&key, &destination).unwrap();
    let error = client.create_destination(&key, &destination).unwrap_err();
    assert_eq!(errno_of(&error), libc::EEXIST);
    assert!(
        error.to_string().contains("Destination already exists"),
        "{error}"
    );

    let error = client
        .delete_destination(&key, "10.0.2.99:80".parse().unwrap())
        .unwrap_err();
    assert_eq!(errno_of(&error), libc::ENOENT);
    assert!(error.to_string().contains("No such destination"), "{error}");

    // Listing the destinations of a missing service is an empty dump.
    assert!(client.destinations(&missing).unwrap().is_empty());

    // In a namespace whose lo was never up the kernel refuses destinations
    // with a bare EINVAL.
    let down = Namespace::create_with_lo_down("ipvs-errors-lo-down").unwrap();
    let mut client = down.run(Client::connect).unwrap().unwrap();
    client.create_service(&Service::new(key, "rr")).unwrap();
    let error = client.create_destination(&key, &destination).unwrap_err();
    assert_eq!(errno_of(&error), libc::EINVAL, "{error}");
}

#[test]
#[ignore = "runs in the lab"]
fn sync_daemons() {
    labkit::require_lab();
    let (_namespace, mut client) = namespace("daemons");
    let mut master = SyncDaemon::new(SyncState::Master, "lo", 5);
    master.max_length = Some(1400);
    master.group = Some(IpAddr::V4(Ipv4Addr::new(224, 0, 0, 81)));
    master.port = Some(8848);
    master.ttl = Some(2);
    client.start_daemon(&master).unwrap();
    let mut backup = SyncDaemon::new(SyncState::Backup, "lo", 6);
    backup.group = Some(IpAddr::V6("ff02::1:81".parse::<Ipv6Addr>().unwrap()));
    client.start_daemon(&backup).unwrap();

    let daemons = client.daemons().unwrap();
    assert_eq!(daemons.len(), 2);
    let found = daemons
        .iter()
        .find(|daemon| daemon.state == SyncState::Master)
        .unwrap();
    assert_eq!(found, &master);
    let found = daemons
        .iter()
        .find(|daemon| daemon.state == SyncState::Backup)
        .unwrap();
    assert_eq!((found.sync_id, found.group), (6, backup.group));
    // The kernel fills in its defaults.
    assert!(found.max_length.is_some() && found.port == Some(8848) && found.ttl == Some(1));

    let error = client.start_daemon(&master).unwrap_err();
    assert_eq!(errno_of(&error), libc::EEXIST);
    assert!(
        error.to_string().contains("Daemon has already run"),
        "{error}"
    );

    client.stop_daemon(SyncState::Master).unwrap();
    client.stop_daemon(SyncState::Backup).unwrap();
    assert!(client.daemons().unwrap().is_empty());
    let error = client.stop_daemon(SyncState::Master).unwrap_err();
    assert_eq!(errno_of(&error), libc::ESRCH);
    assert!(
        error.to_string().contains("No daemon is running"),
        "{error}"
    );
}

/// Real traffic through a NAT service: balancing, statistics, zeroing.
#[test]
#[ignore = "runs in the lab"]
fn statistics_after_real_traffic_then_zero_and_flush() {
    labkit::require_lab();
    let topology = NatTopology::build("stats", 2).unwrap();
    let mut client = topology.director.run(Client::connect).unwrap().unwrap();
    let virtual_address = NatTopology::virtual_address(80);
    let key = ServiceKey::Address {
        protocol: Protocol::Tcp,
        address: virtual_address.ip(),
        port: 80,
    };
    let responders = topology.start_responders(80).unwrap();
    let mut operations = vec![Operation::CreateService(Service::new(key, "rr"))];
    for responder in &responders {
        operations.push(Operation::CreateDestination(
            key,
            Destination::new(responder.address(), Forwarding::Masquerade),
        ));
    }
    client.apply(&operations).unwrap();

    let answers: Vec<String> = (0..10)
        .map(|_| http::get(&topology.client, virtual_address).unwrap())
        .collect();
    assert_eq!(
        answers.iter().filter(|answer| *answer == "rs1").count(),
        5,
        "{answers:?}"
    );
    assert_eq!(
        answers.iter().filter(|answer| *answer == "rs2").count(),
        5,
        "{answers:?}"
    );

    let statistics = wait_for_connections(&mut client, &key, 10);
    assert!(statistics.incoming_packets >= 30, "{statistics:?}");
    assert!(statistics.outgoing_packets >= 20, "{statistics:?}");
    assert!(
        statistics.incoming_bytes > 0 && statistics.outgoing_bytes > 0,
        "{statistics:?}"
    );
    // Connection counts are the same in the kernel's text listing.
    assert_eq!(assert_listing_agrees_with_netlink(&mut client), 1);
    let destinations = client.destinations(&key).unwrap();
    for destination in &destinations {
        let statistics = *destination.statistics.clone().unwrap();
        assert_eq!(
            statistics.connections,
            5,
            "{}",
            destination.socket_address()
        );
        let counters = destination.counters.unwrap();
        // Finished connections linger as inactive (TIME_WAIT) entries.
        assert_eq!(counters.active + counters.inactive, 5, "{counters:?}");
        assert_eq!(counters.persistent, 0, "{counters:?}");
    }

    // With persistence, a connection leaves a template on its destination,
    // counted as a persistent connection (live, unlike the statistics).
    let mut persistent = Service::new(key, "rr");
    persistent.flags = ServiceFlags::PERSISTENT;
    persistent.timeout = 60;
    client.update_service(&persistent).unwrap();
    let answer = http::get(&topology.client, virtual_address).unwrap();
    let chosen = &topology.real_servers[if answer == "rs1" { 0 } else { 1 }];
    for destination in client.destinations(&key).unwrap() {
        let expected = u32::from(destination.address == chosen.address);
        assert_eq!(
            destination.counters.unwrap().persistent,
            expected,
            "{answer}"
        );
    }

    // Zeroing copies the counters the kernel reports, which the estimator
    // refreshes only every two seconds: wait until they hold every
    // connection so far (the ten and the persistent one), or the last one
    // would be counted after the zero.
    wait_for_connections(&mut client, &key, 11);
    client.zero_service(&key).unwrap();
    assert_eq!(
        client
            .service(&key)
            .unwrap()
            .statistics
            .unwrap()
            .connections,
        0
    );
    http::get(&topology.client, virtual_address).unwrap();
    wait_for_connections(&mut client, &key, 1);
    client.zero_all().unwrap();
    assert_eq!(
        client
            .service(&key)
            .unwrap()
            .statistics
            .unwrap()
            .connections,
        0
    );
    client.flush().unwrap();
    assert!(client.services().unwrap().is_empty());
}

/// Waits until the kernel reports `expected` connections for a service.
///
/// Counters lag traffic: Linux 6.1 sums its per-CPU counters into what it
/// reports only in the rate estimator, every two seconds.
fn wait_for_connections(client: &mut Client, key: &ServiceKey, expected: u64) -> ipvs::Statistics {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let statistics = client.service(key).unwrap().statistics.unwrap();
        if statistics.connections == expected || std::time::Instant::now() > deadline {
            assert_eq!(statistics.connections, expected, "{statistics:?}");
            return *statistics;
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
}

/// A batch goes on past refusals and reports each one by index.
#[test]
#[ignore = "runs in the lab"]
fn a_batch_reports_each_refusal_and_applies_the_rest() {
    labkit::require_lab();
    let (_namespace, mut client) = namespace("batch");
    let mut operations = Vec::new();
    for index in 0..500u32 {
        let key = tcp(&format!("10.1.{}.{}:80", index / 250, index % 250 + 1));
        operations.push(Operation::CreateService(Service::new(key, "rr")));
    }
    // A duplicate at 100 and an unknown scheduler at 300.
    operations[100] = Operation::CreateService(Service::new(tcp("10.1.0.1:80"), "rr"));
    operations[300] = Operation::CreateService(Service::new(tcp("10.9.9.9:80"), "nosuch"));
    let error = client.apply(&operations).unwrap_err();
    let failed: Vec<(usize, i32)> = error
        .failures
        .iter()
        .map(|(index, error)| (*index, errno_of(error)))
        .collect();
    assert_eq!(failed, vec![(100, libc::EEXIST), (300, libc::ENOENT)]);
    assert_eq!(settled_services(&mut client).len(), 498);

    // A batch with an invalid operation is refused whole before sending.
    let mut overweight = Destination::new("10.0.2.1:80".parse().unwrap(), Forwarding::Route);
    overweight.weight = u32::MAX;
    let error = client
        .apply(&[
            Operation::DeleteService(tcp("10.1.0.2:80")),
            Operation::CreateDestination(tcp("10.1.0.1:80"), overweight),
        ])
        .unwrap_err();
    assert_eq!(error.failures.len(), 1);
    assert!(
        matches!(error.failures[0], (1, Error::Invalid { .. })),
        "{error}"
    );
    assert_eq!(settled_services(&mut client).len(), 498);
}

/// Listing the destinations of many services, one of them with more than
/// a reply datagram holds (the kernel continues such a dump as we read).
#[test]
#[ignore = "runs in the lab"]
fn dumps_larger_than_a_datagram_and_of_many_services() {
    labkit::require_lab();
    let (_namespace, mut client) = namespace("dumps");
    let keys: Vec<ServiceKey> = (1..=20)
        .map(|index| tcp(&format!("10.2.0.{index}:80")))
        .collect();
    let mut operations = Vec::new();
    for (index, key) in keys.iter().enumerate() {
        operations.push(Operation::CreateService(Service::new(*key, "wlc")));
        // The third service has 400 destinations: about 80 KB of dump.
        let count = if index == 2 { 400 } else { index + 1 };
        for destination in 0..count {
            let address = SocketAddr::new(
                IpAddr::V4(Ipv4Addr::new(
                    10,
                    3,
                    (destination / 250) as u8,
                    (destination % 250) as u8 + 1,
                )),
                8080,
            );
            operations.push(Operation::CreateDestination(
                *key,
                Destination::new(address, Forwarding::Route),
            ));
        }
    }
    client.apply(&operations).unwrap();
    let lists = client.destinations_of(&keys).unwrap();
    let counts: Vec<usize> = lists.iter().map(Vec::len).collect();
    let expected: Vec<usize> = (0..20)
        .map(|index| if index == 2 { 400 } else { index + 1 })
        .collect();
    assert_eq!(counts, expected);
}

/// A batch spread over many datagrams, with refusals at their edges: the
/// second half repeats the first, so every datagram there ends with a
/// refused request (the one that asks for an acknowledgement) and one
/// datagram starts at the switch.
#[test]
#[ignore = "runs in the lab"]
fn a_batch_of_many_datagrams_reports_refusals_across_their_edges() {
    labkit::require_lab();
    let (_namespace, mut client) = namespace("many-datagrams");
    let keys: Vec<ServiceKey> = (0..3000u32)
        .map(|index| tcp(&format!("10.4.{}.{}:80", index / 250, index % 250 + 1)))
        .collect();
    let operations: Vec<Operation> = keys
        .iter()
        .chain(&keys)
        .map(|key| Operation::CreateService(Service::new(*key, "rr")))
        .collect();
    let error = client.apply(&operations).unwrap_err();
    assert!(error.interrupted.is_none(), "{error}");
    let refused: Vec<usize> = error.failures.iter().map(|(index, _)| *index).collect();
    assert_eq!(refused, (3000..6000).collect::<Vec<_>>());
    assert!(
        error
            .failures
            .iter()
            .all(|(_, error)| errno_of(error) == libc::EEXIST)
    );
    assert_eq!(settled_services(&mut client).len(), 3000);
}

/// The sync protocol cannot carry a destination of another family than its
/// service, so the kernel keeps the two apart.
#[test]
#[ignore = "runs in the lab"]
fn mixed_family_destinations_and_sync_daemons_exclude_each_other() {
    labkit::require_lab();
    let (_namespace, mut client) = namespace("mixed-sync");
    let key = tcp("10.0.0.1:80");
    client.create_service(&Service::new(key, "rr")).unwrap();
    let mixed = Destination::new(
        "[2001:db8::11]:80".parse().unwrap(),
        Forwarding::Tunnel(Tunnel::default()),
    );
    client.create_destination(&key, &mixed).unwrap();
    let error = client
        .start_daemon(&SyncDaemon::new(SyncState::Master, "lo", 1))
        .unwrap_err();
    assert_eq!(errno_of(&error), libc::EINVAL, "{error}");

    client
        .delete_destination(&key, mixed.socket_address())
        .unwrap();
    client
        .start_daemon(&SyncDaemon::new(SyncState::Master, "lo", 1))
        .unwrap();
    let error = client.create_destination(&key, &mixed).unwrap_err();
    assert_eq!(errno_of(&error), libc::EINVAL, "{error}");
}

/// A client reconnects in its own namespace, whichever thread uses it.
#[test]
#[ignore = "runs in the lab"]
fn a_client_reconnects_in_its_own_namespace() {
    labkit::require_lab();
    let (_namespace, mut client) = namespace("reconnect");
    let key = tcp("10.0.0.7:80");
    client.create_service(&Service::new(key, "rr")).unwrap();
    // This thread is in the lab's initial namespace, which has no service.
    client.reconnect().unwrap();
    let listed: Vec<ServiceKey> = client
        .services()
        .unwrap()
        .iter()
        .map(|service| service.key)
        .collect();
    assert_eq!(listed, vec![key]);
}
