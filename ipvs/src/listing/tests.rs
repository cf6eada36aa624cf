//! The listing parsed from the kernel's own text.

use std::net::IpAddr;

use super::*;
use crate::{Family, Netmask, Service};

/// `cat /proc/net/ip_vs` in a fresh namespace of Debian's 6.1 kernel after:
///
/// ```text
/// ipvsadm -A -t 10.0.0.1:80 -s rr
/// ipvsadm -a -t 10.0.0.1:80 -r 192.168.1.1:8080 -m -w 3
/// ipvsadm -a -t 10.0.0.1:80 -r 192.168.1.2:8080 -i -w 0
/// ipvsadm -a -t 10.0.0.1:80 -r 192.168.1.3:80 -g
/// ipvsadm -A -u 10.0.0.2:53 -s wlc -p 300 -M 255.255.255.0 -o
/// ipvsadm -a -u 10.0.0.2:53 -r 192.168.1.4:53 -m -x 100 -y 50
/// ipvsadm -A --sctp-service 10.0.0.3:9999 -s sh -b sh-fallback,sh-port
/// ipvsadm -A -t [2001:db8::1]:443 -s wrr -p
/// ipvsadm -a -t [2001:db8::1]:443 -r [2001:db8:1::10]:443 -m -w 7
/// ipvsadm -a -t [2001:db8::1]:443 -r [2001:db8:1::11]:443 -g
/// ipvsadm -A -f 42 -s lc
/// ipvsadm -a -f 42 -r 192.168.2.1 -g
/// ipvsadm -A -f 42 -6 -s dh -o
/// ipvsadm -a -f 42 -6 -r [2001:db8:2::1]:0 -g
/// ipvsadm -A -f 7 -s rr --pe sip -p 60
/// ipvsadm -A -t 127.0.0.1:22 -s rr
/// ipvsadm -a -t 127.0.0.1:22 -r 127.0.0.1:22 -g
/// ipvsadm -A -t 10.0.0.9:80 -s mh -b mh-port
/// ipvsadm -a -t 10.0.0.9:80 -r [2001:db8:3::1]:80 -i --tun-type gue --tun-port 6080
/// ```
///
/// Destinations come newest first (the kernel adds them at the head of the
/// service's list, and its netlink dump walks the same list). The
/// persistence timeouts are jiffies at HZ=250.
const CAPTURED: &str = concat!(
    "IP Virtual Server version 1.2.1 (size=4096)\n",
    "Prot LocalAddress:Port Scheduler Flags\n",
    "  -> RemoteAddress:Port Forward Weight ActiveConn InActConn\n",
    "SCTP  0A000003:270F sh  \n",
    "TCP  [2001:0db8:0000:0000:0000:0000:0000:0001]:01BB wrr persistent 90000 80000000\n",
    "  -> [2001:0db8:0001:0000:0000:0000:0000:0011]:01BB      Route   1      0          0         \n",
    "  -> [2001:0db8:0001:0000:0000:0000:0000:0010]:01BB      Masq    7      0          0         \n",
    "TCP  7F000001:0016 rr  \n",
    "  -> 7F000001:0016      Route   1      0          0         \n",
    "UDP  0A000002:0035 wlc ops  persistent 75000 FFFFFF00\n",
    "  -> C0A80104:0035      Masq    1      0          0         \n",
    "TCP  0A000001:0050 rr  \n",
    "  -> C0A80103:0050      Route   1      0          0         \n",
    "  -> C0A80102:0050      Tunnel  0      0          0         \n",
    "  -> C0A80101:1F90      Masq    3      0          0         \n",
    "TCP  0A000009:0050 mh  \n",
    "  -> [2001:0db8:0003:0000:0000:0000:0000:0001]:0050      Tunnel  1      0          0         \n",
    "FWM  00000007 rr persistent 15000 FFFFFFFF\n",
    "FWM  0000002A dh ops \n",
    "  -> [2001:0db8:0002:0000:0000:0000:0000:0001]:0000      Route   1      0          0         \n",
    "FWM  0000002A lc \n",
    "  -> C0A80201:0000      Route   1      0          0         \n",
);

fn address(text: &str) -> IpAddr {
    text.parse().unwrap()
}

fn destination(
    text: &str,
    port: u16,
    forwarding: ListedForwarding,
    weight: i32,
) -> ListedDestination {
    ListedDestination {
        address: address(text),
        port,
        forwarding,
        weight,
        active_connections: 0,
        inactive_connections: 0,
    }
}

#[test]
fn every_line_of_a_captured_listing_is_read() {
    let listing = parse(CAPTURED.as_bytes()).unwrap();
    let keys: Vec<ListedKey> = listing.iter().map(|service| service.key).collect();
    let tcp = |text: &str, port| ListedKey::Address {
        protocol: Protocol::Tcp,
        address: address(text),
        port,
    };
    assert_eq!(
        keys,
        [
            ListedKey::Address {
                protocol: Protocol::Sctp,
                address: address("10.0.0.3"),
                port: 9999
            },
            tcp("2001:db8::1", 443),
            tcp("127.0.0.1", 22),
            ListedKey::Address {
                protocol: Protocol::Udp,
                address: address("10.0.0.2"),
                port: 53
            },
            tcp("10.0.0.1", 80),
            tcp("10.0.0.9", 80),
            ListedKey::Fwmark(7),
            ListedKey::Fwmark(42),
            ListedKey::Fwmark(42),
        ]
    );
    let udp = &listing[3];
    assert_eq!(
        (udp.scheduler.as_str(), udp.one_packet, udp.persistent),
        ("wlc", true, true)
    );
    let ipv6 = &listing[1];
    assert_eq!(
        (ipv6.scheduler.as_str(), ipv6.one_packet, ipv6.persistent),
        ("wrr", false, true)
    );
    assert_eq!(
        ipv6.destinations,
        [
            destination("2001:db8:1::11", 443, ListedForwarding::Route, 1),
            destination("2001:db8:1::10", 443, ListedForwarding::Masquerade, 7),
        ]
    );
    assert_eq!(
        listing[4].destinations,
        [
            destination("192.168.1.3", 80, ListedForwarding::Route, 1),
            destination("192.168.1.2", 80, ListedForwarding::Tunnel, 0),
            destination("192.168.1.1", 8080, ListedForwarding::Masquerade, 3),
        ]
    );
    // A tunnel to the other family.
    assert_eq!(
        listing[5].destinations,
        [destination(
            "2001:db8:3::1",
            80,
            ListedForwarding::Tunnel,
            1
        )]
    );
    assert!(listing[0].destinations.is_empty() && listing[6].destinations.is_empty());
    assert_eq!(
        (listing[7].scheduler.as_str(), listing[7].one_packet),
        ("dh", true)
    );
    assert_eq!(
        (listing[8].scheduler.as_str(), listing[8].one_packet),
        ("lc", false)
    );
}

#[test]
fn connection_counts_are_read_from_their_columns() {
    let text = "IP Virtual Server version 1.2.1 (size=4096)\n\
                Prot LocalAddress:Port Scheduler Flags\n  \
                -> RemoteAddress:Port Forward Weight ActiveConn InActConn\n\
                TCP  0A000001:0050 rr  \n  \
                -> C0A80101:1F90      Local   65535  12         2147483647\n";
    let listing = parse(text.as_bytes()).unwrap();
    assert_eq!(
        listing[0].destinations,
        [ListedDestination {
            address: address("192.168.1.1"),
            port: 8080,
            forwarding: ListedForwarding::Local,
            weight: 65535,
            active_connections: 12,
            inactive_connections: 2147483647,
        }]
    );
}

#[test]
fn a_line_that_is_not_the_kernels_is_refused_with_its_number() {
    let header = "IP Virtual Server version 1.2.1 (size=4096)\n\
                  Prot LocalAddress:Port Scheduler Flags\n  \
                  -> RemoteAddress:Port Forward Weight ActiveConn InActConn\n";
    for (body, line, reason) in [
        (
            "  -> C0A80101:1F90      Masq    3      0          0\n",
            4,
            "a destination before any service",
        ),
        (
            "TCP  0A000001:0050 rr\n  -> C0A80101:1F90      Bypass  3      0          0\n",
            5,
            "not a destination",
        ),
        (
            "TCP  0A000001:0050 rr\n  -> C0A80101:1F90      Masq    3      0\n",
            5,
            "not a destination",
        ),
        (
            "TCP  0A000001:0050 rr\n  -> C0A80101:1F90      Masq    3      0   0  9\n",
            5,
            "not a destination",
        ),
        ("TCP  0A0000010:0050 rr\n", 4, "not a service"),
        ("TCP  0A000001:10050 rr\n", 4, "not a service"),
        ("TCP  [2001:db8::zz]:0050 rr\n", 4, "not a service"),
        ("XYZ  0A000001:0050 rr\n", 4, "not a service"),
        ("TCP  0A000001:0050\n", 4, "not a service"),
        (
            "TCP  0A000001:0050 rr persistent 90000\n",
            4,
            "not a service",
        ),
        ("TCP  0A000001:0050 rr weird\n", 4, "not a service"),
        ("FWM  0000002G rr\n", 4, "not a service"),
    ] {
        let text = format!("{header}{body}");
        match parse(text.as_bytes()) {
            Err(ListingError::Line {
                line: found_line,
                reason: found_reason,
                ..
            }) => assert_eq!((found_line, found_reason), (line, reason), "{body:?}"),
            other => panic!("{body:?}: {other:?}"),
        }
    }
    let error = parse(b"Prot LocalAddress:Port\n").unwrap_err();
    assert_eq!(
        error.to_string(),
        "/proc/thread-self/net/ip_vs line 1: not the header the kernel prints: \"Prot LocalAddress:Port\""
    );
}

#[test]
fn other_protocols_are_read_by_the_kernels_names() {
    for (name, protocol) in [
        ("IP", Protocol::Other(0)),
        ("ICMP", Protocol::Other(1)),
        ("ICMPv6", Protocol::Other(58)),
        ("IP_99", Protocol::Other(99)),
    ] {
        assert_eq!(protocol_named(name), Some(protocol));
    }
    assert_eq!(protocol_named("IP_x"), None);
}

fn service(key: ServiceKey, scheduler: &str, flags: ServiceFlags) -> Service {
    let mut service = Service::new(key, scheduler);
    service.flags = flags;
    if flags.contains(ServiceFlags::PERSISTENT) {
        service.timeout = 360;
        service.netmask = Netmask::full(key.family());
    }
    service
}

#[test]
fn services_read_over_netlink_get_the_destinations_listed_under_them() {
    let tcp = |text: &str, port| ServiceKey::Address {
        protocol: Protocol::Tcp,
        address: address(text),
        port,
    };
    let fwmark = |family, mark| ServiceKey::Fwmark { family, mark };
    let persistent = ServiceFlags::PERSISTENT;
    let services = [
        service(tcp("10.0.0.1", 80), "rr", ServiceFlags::empty()),
        service(tcp("2001:db8::1", 443), "wrr", persistent),
        // Changed between the two reads: another scheduler.
        service(tcp("127.0.0.1", 22), "wlc", ServiceFlags::empty()),
        // Added after the listing was read.
        service(tcp("10.0.0.77", 80), "rr", ServiceFlags::empty()),
        // Two marks of 42 told apart by their schedulers.
        service(fwmark(Family::Inet6, 42), "dh", ServiceFlags::ONE_PACKET),
        service(fwmark(Family::Inet, 42), "lc", ServiceFlags::empty()),
        service(fwmark(Family::Inet, 7), "rr", persistent),
        // Persistent over netlink, not in the listing.
        service(
            ServiceKey::Address {
                protocol: Protocol::Sctp,
                address: address("10.0.0.3"),
                port: 9999,
            },
            "sh",
            persistent,
        ),
    ];
    let matched = match_services(&services, parse(CAPTURED.as_bytes()).unwrap());
    let counts: Vec<Option<usize>> = matched
        .iter()
        .map(|destinations| destinations.as_ref().map(Vec::len))
        .collect();
    assert_eq!(
        counts,
        [
            Some(3),
            Some(2),
            None,
            None,
            Some(1),
            Some(1),
            Some(0),
            None
        ]
    );
    assert_eq!(
        matched[4].as_ref().unwrap()[0].address,
        address("2001:db8:2::1")
    );
    assert_eq!(
        matched[5].as_ref().unwrap()[0].address,
        address("192.168.2.1")
    );
}

#[test]
fn a_line_two_services_may_be_belongs_to_neither() {
    let text = "IP Virtual Server version 1.2.1 (size=4096)\n\
                Prot LocalAddress:Port Scheduler Flags\n  \
                -> RemoteAddress:Port Forward Weight ActiveConn InActConn\n\
                FWM  0000002A lc \n  \
                -> C0A80201:0000      Route   1      0          0         \n";
    let services = [
        service(
            ServiceKey::Fwmark {
                family: Family::Inet,
                mark: 42,
            },
            "lc",
            ServiceFlags::empty(),
        ),
        service(
            ServiceKey::Fwmark {
                family: Family::Inet6,
                mark: 42,
            },
            "lc",
            ServiceFlags::empty(),
        ),
    ];
    assert_eq!(
        match_services(&services, parse(text.as_bytes()).unwrap()),
        [None, None]
    );
}

#[test]
fn ipv6_one_packet_is_not_shown_so_not_compared() {
    let text = "IP Virtual Server version 1.2.1 (size=4096)\n\
                Prot LocalAddress:Port Scheduler Flags\n  \
                -> RemoteAddress:Port Forward Weight ActiveConn InActConn\n\
                UDP  [2001:0db8:0000:0000:0000:0000:0000:0001]:0035 rr \n\
                UDP  0A000001:0035 rr  \n";
    let udp = |text: &str| ServiceKey::Address {
        protocol: Protocol::Udp,
        address: address(text),
        port: 53,
    };
    let services = [
        service(udp("2001:db8::1"), "rr", ServiceFlags::ONE_PACKET),
        service(udp("10.0.0.1"), "rr", ServiceFlags::ONE_PACKET),
    ];
    assert_eq!(
        match_services(&services, parse(text.as_bytes()).unwrap()),
        [Some(vec![]), None]
    );
}

/// The kernel's `ip_vs_fwd_name` names only three methods; every other one,
/// 4 to 7 included, is `Masq` (what the lab test compares against netlink).
#[test]
fn every_forwarding_method_has_the_kernels_name() {
    use crate::{Forwarding, Tunnel};
    for (forwarding, listed) in [
        (Forwarding::Masquerade, ListedForwarding::Masquerade),
        (Forwarding::Local, ListedForwarding::Local),
        (
            Forwarding::Tunnel(Tunnel::default()),
            ListedForwarding::Tunnel,
        ),
        (Forwarding::Route, ListedForwarding::Route),
        (Forwarding::Bypass, ListedForwarding::Masquerade),
        (Forwarding::Other(6), ListedForwarding::Masquerade),
    ] {
        assert_eq!(ListedForwarding::of(&forwarding), listed, "{forwarding:?}");
    }
}
