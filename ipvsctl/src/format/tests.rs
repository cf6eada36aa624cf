//! Golden outputs of `docs/ipvsadm.md` Appendix B (read from the document
//! itself, so the spec stays the single source), built from the Appendix A
//! fixture, plus edge cases.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use ipvs::{
    ConnectionCounters, Destination, Family, Forwarding, Info, Netmask, Protocol, Service,
    ServiceFlags, ServiceKey, SyncDaemon, SyncState, Timeouts, TunnelChecksum, TunnelKind, Version,
};

use super::*;
use crate::test_fixtures::{
    address_key as key, destination as dest, persistent, statistics as stats, tunnel,
};

const SPEC: &str = include_str!("../../../docs/ipvsadm.md");

// ---------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------

/// Like `cat -A`'s `$`: every line end made visible.
fn show(text: &str) -> String {
    let mut shown = String::new();
    for line in text.split_inclusive('\n') {
        match line.strip_suffix('\n') {
            Some(line) => {
                shown.push_str(line);
                shown.push_str("$\n");
            }
            None => {
                shown.push_str(line);
                shown.push_str("<no newline>\n");
            }
        }
    }
    shown
}

#[track_caller]
fn assert_same(actual: &str, expected: &str) {
    if actual == expected {
        return;
    }
    let first = actual
        .split_inclusive('\n')
        .zip(expected.split_inclusive('\n'))
        .position(|(a, e)| a != e)
        .map_or_else(
            || "one output is a prefix of the other".to_string(),
            |line| format!("first difference on line {}", line + 1),
        );
    panic!(
        "output differs ({first})\n--- expected ---\n{}--- actual ---\n{}",
        show(expected),
        show(actual)
    );
}

/// The samples of Appendix B: command line -> expected output.
fn golden() -> HashMap<String, String> {
    let appendix = SPEC
        .split_once("## Appendix B.")
        .expect("Appendix B")
        .1
        .split_once("## Appendix C.")
        .expect("Appendix C")
        .0;
    let block = appendix
        .split_once("```\n")
        .expect("first code block")
        .1
        .split_once("```\n")
        .expect("end of the first code block")
        .0;
    let mut samples = HashMap::new();
    let mut current: Option<(String, String)> = None;
    for line in block.lines() {
        if let Some(command) = line.strip_prefix("$ ") {
            if let Some((command, text)) = current.take() {
                samples.insert(command, text);
            }
            // Drop the "(with the ... below)" remarks.
            let command = command.split("  ").next().unwrap().trim().to_string();
            current = Some((command, String::new()));
        } else if let Some(text) = line.strip_suffix('$') {
            let (_, output) = current.as_mut().expect("output before a command");
            output.push_str(text);
            output.push('\n');
        } else {
            assert!(line.is_empty(), "unexpected line in Appendix B: {line:?}");
        }
    }
    if let Some((command, text)) = current {
        samples.insert(command, text);
    }
    samples
}

#[track_caller]
fn sample(command: &str) -> String {
    golden()
        .remove(command)
        .unwrap_or_else(|| panic!("no golden sample for {command:?}"))
}

/// The `/proc/net/ip_vs_conn` of Appendix B.
fn proc_conn() -> String {
    let appendix = SPEC.split_once("## Appendix B.").unwrap().1;
    let after = appendix
        .split_once("The `/proc/net/ip_vs_conn` that was used.")
        .expect("the proc file")
        .1;
    let block = after
        .split_once("```\n")
        .unwrap()
        .1
        .split_once("```\n")
        .unwrap()
        .0;
    block.to_string()
}

/// Debian's `/etc/hosts` and `/etc/services` as far as the samples need.
struct FakeResolver {
    hosts: HashMap<IpAddr, String>,
    services: HashMap<(u16, String), String>,
}

impl FakeResolver {
    fn debian() -> Self {
        let hosts = [("127.0.0.1", "localhost")]
            .into_iter()
            .map(|(a, n)| (a.parse().unwrap(), n.to_string()))
            .collect();
        let services = [
            (21, "tcp", "ftp"),
            (22, "tcp", "ssh"),
            (53, "tcp", "domain"),
            (53, "udp", "domain"),
            (80, "tcp", "http"),
            (443, "tcp", "https"),
            (443, "udp", "https"),
            (5060, "tcp", "sip"),
            (5060, "udp", "sip"),
            (8080, "tcp", "http-alt"),
        ]
        .into_iter()
        .map(|(p, proto, n)| ((p, proto.to_string()), n.to_string()))
        .collect();
        FakeResolver { hosts, services }
    }

    fn with_host(mut self, address: &str, name: &str) -> Self {
        self.hosts
            .insert(address.parse().unwrap(), name.to_string());
        self
    }
}

impl Resolver for FakeResolver {
    fn host_name(&self, address: IpAddr) -> Option<String> {
        self.hosts.get(&address).cloned()
    }
    fn service_name(&self, port: u16, protocol: &str) -> Option<String> {
        self.services.get(&(port, protocol.to_string())).cloned()
    }
}

/// Panics if asked anything: `-n` must not resolve.
struct PanickyResolver;

impl Resolver for PanickyResolver {
    fn host_name(&self, address: IpAddr) -> Option<String> {
        panic!("host lookup of {address} with -n")
    }
    fn service_name(&self, port: u16, protocol: &str) -> Option<String> {
        panic!("service lookup of {port}/{protocol} with -n")
    }
}

fn tcp(address: &str, port: u16) -> ServiceKey {
    key(Protocol::Tcp, address, port)
}

/// A service as the kernel reports it, its flags as ipvsadm's bits.
fn service(key: ServiceKey, scheduler: &str, flags: u32) -> Service {
    crate::test_fixtures::service(key, scheduler, ServiceFlags::from_bits(flags))
}

const SCHED1: u32 = 0x08;
const SCHED2: u32 = 0x10;
const SCHED3: u32 = 0x20;
const ONE_PACKET: u32 = 0x04;

/// Appendix A, rows 0..=7, each service's destinations in the row's order.
fn fixture_rows() -> Vec<(Service, Vec<Destination>)> {
    let mut web = service(tcp("10.0.0.1", 80), "wlc", 0);
    web.statistics = Some(stats([
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
    let mut masq = dest("192.168.1.2:80", Forwarding::Masquerade, 1);
    masq.counters = Some(ConnectionCounters {
        active: 5,
        inactive: 10,
        persistent: 0,
    });
    masq.statistics = Some(stats([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]));
    let mut route = dest("192.168.1.1:8080", Forwarding::Route, 0);
    route.upper_threshold = 100;
    route.lower_threshold = 50;
    route.statistics = Some(stats([
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
    let mut ipip = dest(
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
        service(key(Protocol::Udp, "10.0.0.1", 53), "rr", ONE_PACKET),
        360,
    );
    dns.netmask = Netmask::Ipv4(Ipv4Addr::new(255, 255, 255, 0));

    let mut mark1 = persistent(
        service(
            ServiceKey::Fwmark {
                family: Family::Inet,
                mark: 1,
            },
            "sh",
            SCHED1 | SCHED2,
        ),
        600,
    );
    mark1.persistence_engine = Some("sip".to_string());

    let mut v6 = persistent(service(tcp("2001:db8::1", 443), "mh", SCHED2), 300);
    v6.netmask = Netmask::Ipv6(64);

    let mark_max = service(
        ServiceKey::Fwmark {
            family: Family::Inet6,
            mark: 4_294_967_295,
        },
        "wrr",
        0,
    );

    vec![
        (web, vec![masq, route, ipip]),
        (dns, vec![dest("192.168.1.3:53", Forwarding::Masquerade, 1)]),
        (mark1, vec![]),
        (
            v6,
            vec![
                dest("[2001:db8::10]:443", Forwarding::Route, 2),
                dest(
                    "192.168.2.1:443",
                    tunnel(TunnelKind::Gue, 6080, TunnelChecksum::Checksum),
                    3,
                ),
                dest(
                    "[2001:db8::9]:443",
                    tunnel(TunnelKind::Gre, 0, TunnelChecksum::NoChecksum),
                    4,
                ),
            ],
        ),
        (mark_max, vec![]),
        (
            persistent(service(key(Protocol::Sctp, "10.0.0.2", 0), "lc", 0), 3600),
            vec![dest("10.0.0.3:0", Forwarding::Masquerade, 1)],
        ),
        (
            service(tcp("127.0.0.1", 22), "wlc", SCHED1),
            vec![dest("127.0.0.1:22", Forwarding::Local, 1)],
        ),
        (service(tcp("10.0.0.1", 21), "wlc", 0), vec![]),
    ]
}

/// The fixture in the kernel's dump order: last row first, and each
/// service's destinations last first.
fn fixture() -> Vec<(Service, Vec<Destination>)> {
    fixture_rows()
        .into_iter()
        .rev()
        .map(|(service, mut dests)| {
            dests.reverse();
            (service, dests)
        })
        .collect()
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

fn options(kind: ListKind, numeric: bool) -> ListOptions {
    ListOptions {
        kind,
        numeric,
        exact: false,
        sort: true,
    }
}

fn listed(table: &[(Service, Vec<Destination>)], options: &ListOptions) -> String {
    let mut out = String::new();
    if options.numeric {
        list_with(&info(), table, options, &PanickyResolver, &mut out);
    } else {
        list_with(&info(), table, options, &FakeResolver::debian(), &mut out);
    }
    out
}

fn saved(table: &[(Service, Vec<Destination>)], numeric: bool) -> String {
    let mut out = String::new();
    if numeric {
        save_with(table, true, &PanickyResolver, &mut out);
    } else {
        save_with(table, false, &FakeResolver::debian(), &mut out);
    }
    out
}

// ---------------------------------------------------------------------------
// Appendix B
// ---------------------------------------------------------------------------

#[test]
fn appendix_b_has_every_sample() {
    let samples = golden();
    for command in [
        "ipvsadm -L",
        "ipvsadm -Ln",
        "ipvsadm -Ln --stats",
        "ipvsadm -Ln --stats --exact",
        "ipvsadm -Ln --rate",
        "ipvsadm -Ln --thresholds",
        "ipvsadm -Ln --persistent-conn",
        "ipvsadm -Ln --tun-info",
        "ipvsadm -Ln --nosort",
        "ipvsadm -S",
        "ipvsadm -Sn",
        "ipvsadm -Lcn --persistent-conn",
        "ipvsadm -Lc",
    ] {
        assert!(samples.contains_key(command), "missing {command:?}");
    }
    assert_eq!(samples.len(), 13, "{:?}", samples.keys());
}

#[test]
fn golden_list_resolved() {
    let out = listed(&fixture(), &options(ListKind::Default, false));
    assert_same(&out, &sample("ipvsadm -L"));
}

#[test]
fn golden_list_numeric() {
    let out = listed(&fixture(), &options(ListKind::Default, true));
    assert_same(&out, &sample("ipvsadm -Ln"));
}

#[test]
fn golden_stats() {
    let out = listed(&fixture(), &options(ListKind::Stats, true));
    assert_same(&out, &sample("ipvsadm -Ln --stats"));
}

#[test]
fn golden_stats_exact() {
    let mut options = options(ListKind::Stats, true);
    options.exact = true;
    let out = listed(&fixture(), &options);
    assert_same(&out, &sample("ipvsadm -Ln --stats --exact"));
}

#[test]
fn golden_rate() {
    let out = listed(&fixture(), &options(ListKind::Rate, true));
    assert_same(&out, &sample("ipvsadm -Ln --rate"));
}

#[test]
fn golden_thresholds() {
    let out = listed(&fixture(), &options(ListKind::Thresholds, true));
    assert_same(&out, &sample("ipvsadm -Ln --thresholds"));
}

#[test]
fn golden_persistent_conn() {
    let out = listed(&fixture(), &options(ListKind::PersistentConnections, true));
    assert_same(&out, &sample("ipvsadm -Ln --persistent-conn"));
}

#[test]
fn golden_tun_info() {
    let out = listed(&fixture(), &options(ListKind::TunnelInfo, true));
    assert_same(&out, &sample("ipvsadm -Ln --tun-info"));
}

#[test]
fn golden_nosort() {
    let mut options = options(ListKind::Default, true);
    options.sort = false;
    let out = listed(&fixture(), &options);
    assert_same(&out, &sample("ipvsadm -Ln --nosort"));
}

#[test]
fn golden_save_resolved() {
    assert_same(&saved(&fixture(), false), &sample("ipvsadm -S"));
}

#[test]
fn golden_save_numeric() {
    assert_same(&saved(&fixture(), true), &sample("ipvsadm -Sn"));
}

#[test]
fn golden_connections_numeric_persistent() {
    let mut out = String::new();
    connections_with(proc_conn(), true, true, &PanickyResolver, &mut out).unwrap();
    assert_same(&out, &sample("ipvsadm -Lcn --persistent-conn"));
}

#[test]
fn golden_connections_resolved() {
    let mut out = String::new();
    connections_with(proc_conn(), false, false, &FakeResolver::debian(), &mut out).unwrap();
    assert_same(&out, &sample("ipvsadm -Lc"));
}

#[test]
fn golden_timeouts() {
    let mut out = String::new();
    timeouts(
        &Timeouts {
            tcp: 900,
            tcp_fin: 120,
            udp: 300,
        },
        &mut out,
    );
    assert_same(&out, "Timeout (tcp tcpfin udp): 900 120 300\n");
}

#[test]
fn golden_daemons() {
    let master = SyncDaemon {
        state: SyncState::Master,
        interface: "eth0".to_string(),
        sync_id: 7,
        max_length: Some(1472),
        group: Some("224.0.0.81".parse().unwrap()),
        port: Some(8848),
        ttl: Some(1),
    };
    let backup = SyncDaemon::new(SyncState::Backup, "eth1", 0);
    let mut out = String::new();
    daemons(&[master, backup], &mut out);
    assert_same(
        &out,
        "master sync daemon (mcast=eth0, syncid=7, maxlen=1472, group=224.0.0.81, port=8848, ttl=1)\n\
         backup sync daemon (mcast=eth1, syncid=0)\n",
    );
}

// ---------------------------------------------------------------------------
// Other commands' edges
// ---------------------------------------------------------------------------

#[test]
fn daemon_zero_values_are_left_out_and_syncid_is_signed() {
    let daemon = SyncDaemon {
        state: SyncState::Backup,
        interface: "bond0".to_string(),
        sync_id: u32::MAX,
        max_length: Some(0),
        group: Some("ff02::1:2".parse().unwrap()),
        port: Some(0),
        ttl: Some(0),
    };
    let mut out = String::new();
    daemons(&[daemon], &mut out);
    assert_same(
        &out,
        "backup sync daemon (mcast=bond0, syncid=-1, group=ff02::1:2)\n",
    );
    let mut out = String::new();
    daemons(&[], &mut out);
    assert_same(&out, "");
}

#[test]
fn timeouts_are_signed() {
    let mut out = String::new();
    timeouts(
        &Timeouts {
            tcp: 0,
            tcp_fin: u32::MAX,
            udp: 2_147_483_648,
        },
        &mut out,
    );
    assert_same(&out, "Timeout (tcp tcpfin udp): 0 -1 -2147483648\n");
}

#[test]
fn empty_table() {
    let out = listed(&[], &options(ListKind::Default, true));
    assert_same(
        &out,
        "IP Virtual Server version 1.2.1 (size=4096)\n\
         Prot LocalAddress:Port Scheduler Flags\n  \
         -> RemoteAddress:Port           Forward Weight ActiveConn InActConn\n",
    );
    assert_same(&saved(&[], true), "");
}

#[test]
fn list_one_has_no_version_line_and_sorts_its_destinations() {
    let rows = fixture();
    let (service, dests) = rows
        .iter()
        .find(|(s, _)| s.key == tcp("10.0.0.1", 80))
        .unwrap();
    let mut out = String::new();
    list_one_with(
        service,
        dests,
        &options(ListKind::Default, true),
        &PanickyResolver,
        &mut out,
    );
    assert_same(
        &out,
        "Prot LocalAddress:Port Scheduler Flags\n  \
         -> RemoteAddress:Port           Forward Weight ActiveConn InActConn\n\
         TCP  10.0.0.1:80 wlc\n  \
         -> 192.168.1.1:8080             Route   0      0          0         \n  \
         -> 192.168.1.2:80               Masq    1      5          10        \n  \
         -> 192.168.1.10:80              Tunnel  65535  1          2         \n",
    );
}

#[test]
fn titles_and_version() {
    let mut out = String::new();
    version(
        &Info {
            version: Version {
                major: 1,
                minor: 1,
                patch: 0,
            },
            connection_table_size: u32::MAX,
        },
        &mut out,
    );
    assert_same(&out, "IP Virtual Server version 1.1.0 (size=-1)\n");
    // print_title's printf widths, recomputed.
    let cases = [
        (
            ListKind::Stats,
            format!(
                "{:<33} {:>8} {:>8} {:>8} {:>8} {:>8}\n",
                "Prot LocalAddress:Port", "Conns", "InPkts", "OutPkts", "InBytes", "OutBytes"
            ),
        ),
        (
            ListKind::Rate,
            format!(
                "{:<33} {:>8} {:>8} {:>8} {:>8} {:>8}\n",
                "Prot LocalAddress:Port", "CPS", "InPPS", "OutPPS", "InBPS", "OutBPS"
            ),
        ),
        (
            ListKind::Thresholds,
            format!(
                "{:<33} {:<10} {:<10} {:<10} {:<10}\n",
                "Prot LocalAddress:Port", "Uthreshold", "Lthreshold", "ActiveConn", "InActConn"
            ),
        ),
        (
            ListKind::PersistentConnections,
            format!(
                "{:<33} {:<9} {:<11} {:<10} {:<10}\n",
                "Prot LocalAddress:Port", "Weight", "PersistConn", "ActiveConn", "InActConn"
            ),
        ),
    ];
    for (kind, first) in cases {
        let mut out = String::new();
        title(kind, &mut out);
        assert_same(&out, &format!("{first}  -> RemoteAddress:Port\n"));
    }
}

// ---------------------------------------------------------------------------
// Scaling
// ---------------------------------------------------------------------------

fn big(value: u64, exact: bool) -> String {
    let mut out = String::new();
    largenum(&mut out, value, exact);
    out
}

#[test]
fn largenum_every_boundary() {
    let cases: &[(u64, &str)] = &[
        (0, "        0"),
        (99_999_999, " 99999999"),
        (100_000_000, "  100000K"),
        (100_000_999, "  100000K"),
        (999_999_999, "  999999K"),
        (1_000_000_000, "    1000M"),
        (1_999_999_999, "    1999M"),
        (99_999_999_999, "   99999M"),
        (100_000_000_000, "     100G"),
        (99_999_999_999_999, "   99999G"),
        (100_000_000_000_000, "     100T"),
        (123_456_789_012_345, "     123T"),
        (u64::MAX, "18446744T"),
    ];
    for &(value, expected) in cases {
        assert_eq!(big(value, false), expected, "{value}");
    }
}

#[test]
fn largenum_is_always_nine_columns() {
    // §5.11's examples drop a space from the scaled ones ("%8lluK" is 9
    // columns); Appendix B and the code agree on 9.
    for value in [
        0,
        1,
        99_999_999,
        100_000_000,
        10u64.pow(9),
        10u64.pow(11),
        10u64.pow(14),
    ] {
        assert_eq!(big(value, false).len(), 9, "{value}");
    }
}

#[test]
fn largenum_exact_has_a_leading_space() {
    let cases: &[(u64, &str)] = &[
        (0, "        0"),
        (12_345_678, " 12345678"),
        (123_456_789, " 123456789"),
        (1_000_000_000, " 1000000000"),
        (u64::MAX, " 18446744073709551615"),
    ];
    for &(value, expected) in cases {
        assert_eq!(big(value, true), expected, "{value}");
    }
}

#[test]
fn rate_destination_packet_rates_ignore_exact() {
    let svc = service(tcp("10.0.0.1", 80), "rr", 0);
    let mut d = dest("10.0.0.2:80", Forwarding::Masquerade, 1);
    d.statistics = Some(stats([
        0,
        0,
        0,
        0,
        0,
        999_999_999,
        123_456_789,
        (1 << 32) + 100_000_000,
        123_456_789,
        (1 << 33) + 5,
    ]));
    let mut options = options(ListKind::Rate, true);
    let mut out = String::new();
    service_entry(&svc, &[d.clone()], &options, &NoResolver, &mut out);
    assert_same(
        &out,
        "TCP  10.0.0.1:80                         0        0        0        0        0\n  \
         -> 10.0.0.2:80                  999999999 123456789 100000000  123456K        5\n",
    );
    options.exact = true;
    let mut out = String::new();
    service_entry(&svc, &[d], &options, &NoResolver, &mut out);
    assert!(
        out.ends_with("999999999 123456789 100000000 123456789        5\n"),
        "{}",
        show(&out)
    );
}

#[test]
fn destination_counters_wrap_at_2_32_but_bytes_do_not() {
    let svc = service(tcp("10.0.0.1", 80), "rr", 0);
    let mut d = dest("10.0.0.2:80", Forwarding::Masquerade, 1);
    let wrap = 1u64 << 32;
    d.statistics = Some(stats([
        wrap + 1,
        wrap + 2,
        wrap + 3,
        wrap + 4,
        wrap + 5,
        0,
        0,
        0,
        0,
        0,
    ]));
    let mut svc_stats = svc.clone();
    svc_stats.statistics = d.statistics.clone();
    let mut options = options(ListKind::Stats, true);
    options.exact = true;
    let mut out = String::new();
    service_entry(&svc_stats, &[d], &options, &NoResolver, &mut out);
    assert_same(
        &out,
        "TCP  10.0.0.1:80                  4294967297 4294967298 4294967299 4294967300 4294967301\n  \
         -> 10.0.0.2:80                         1        2        3 4294967300 4294967301\n",
    );
}

#[test]
fn missing_statistics_and_counters_read_as_zero() {
    let mut svc = service(tcp("10.0.0.1", 80), "rr", 0);
    svc.statistics = None;
    let mut d = dest("10.0.0.2:80", Forwarding::Masquerade, 1);
    d.statistics = None;
    d.counters = None;
    let mut out = String::new();
    service_entry(
        &svc,
        &[d],
        &options(ListKind::Stats, true),
        &NoResolver,
        &mut out,
    );
    assert_same(
        &out,
        "TCP  10.0.0.1:80                         0        0        0        0        0\n  \
         -> 10.0.0.2:80                         0        0        0        0        0\n",
    );
}

// ---------------------------------------------------------------------------
// Sorting
// ---------------------------------------------------------------------------

fn v4(address: &str, port: u16) -> Service {
    service(tcp(address, port), "rr", 0)
}

fn mark(family: Family, mark: u32) -> Service {
    service(ServiceKey::Fwmark { family, mark }, "rr", 0)
}

fn keys(services: &[Service]) -> Vec<String> {
    services.iter().map(|s| s.key.to_string()).collect()
}

#[test]
fn sort_plain_order() {
    let mut services = vec![
        mark(Family::Inet, 2),
        service(key(Protocol::Udp, "10.0.0.1", 53), "rr", 0),
        service(tcp("::1", 80), "rr", 0),
        v4("10.0.0.1", 80),
        mark(Family::Inet6, 1),
        v4("10.0.0.1", 22),
        mark(Family::Inet, 1),
        service(key(Protocol::Sctp, "10.0.0.1", 1), "rr", 0),
        v4("9.0.0.1", 80),
    ];
    sort_services(&mut services);
    assert_eq!(
        keys(&services),
        [
            "TCP 9.0.0.1:80",
            "TCP 10.0.0.1:22",
            "TCP 10.0.0.1:80",
            "UDP 10.0.0.1:53",
            "SCTP 10.0.0.1:1",
            "TCP [::1]:80",
            "FWM 1 IPv4",
            "FWM 1 IPv6",
            "FWM 2 IPv4",
        ]
    );
}

#[test]
fn sort_large_fwmarks_come_first() {
    let mut services = vec![
        v4("10.0.0.1", 80),
        mark(Family::Inet, 1),
        mark(Family::Inet, u32::MAX),
        mark(Family::Inet, 0x8000_0001),
    ];
    sort_services(&mut services);
    // 0 - m > 0 as an int32 for m > 2^31: those marks sort before the
    // address services (which have mark 0).
    assert_eq!(
        keys(&services),
        [
            "FWM 2147483649 IPv4",
            "FWM 4294967295 IPv4",
            "TCP 10.0.0.1:80",
            "FWM 1 IPv4",
        ]
    );
    // Exactly 2^31: 0 - 2^31 is INT_MIN, negative, so it sorts after (and
    // 2^31 - 0 is INT_MIN too: each is "less" than the other).
    let zero = v4("10.0.0.1", 80);
    let half = mark(Family::Inet, 0x8000_0000);
    assert!(compare_services(&zero, &half) < 0);
    assert!(compare_services(&half, &zero) < 0);
}

#[test]
fn sort_address_differences_overflow() {
    // 1.0.0.0 - 200.0.0.0 > 0 as an int32, so 200.0.0.0 sorts first; the
    // comparator is not transitive with 100.0.0.0 in between.
    let a = v4("1.0.0.0", 80);
    let b = v4("100.0.0.0", 80);
    let c = v4("200.0.0.0", 80);
    assert!(compare_services(&a, &b) < 0);
    assert!(compare_services(&b, &c) < 0);
    assert!(compare_services(&a, &c) > 0);
    let sorted = |input: Vec<&Service>| {
        let mut services: Vec<Service> = input.into_iter().cloned().collect();
        sort_services(&mut services);
        keys(&services)
    };
    // Worked by hand through glibc's msort.
    assert_eq!(
        sorted(vec![&a, &b, &c]),
        ["TCP 1.0.0.0:80", "TCP 100.0.0.0:80", "TCP 200.0.0.0:80"]
    );
    assert_eq!(
        sorted(vec![&c, &a, &b]),
        ["TCP 200.0.0.0:80", "TCP 1.0.0.0:80", "TCP 100.0.0.0:80"]
    );
    assert_eq!(
        sorted(vec![&c, &b, &a]),
        ["TCP 200.0.0.0:80", "TCP 1.0.0.0:80", "TCP 100.0.0.0:80"]
    );
    assert_eq!(sorted(vec![&a, &c]), ["TCP 200.0.0.0:80", "TCP 1.0.0.0:80"]);
    // Four: [a, c] sorts to [c, a], [b, b'] stays; the merge takes b and
    // b' (c - b > 0), then c, a.
    let b2 = v4("100.0.0.0", 81);
    assert_eq!(
        sorted(vec![&a, &c, &b, &b2]),
        [
            "TCP 100.0.0.0:80",
            "TCP 100.0.0.0:81",
            "TCP 200.0.0.0:80",
            "TCP 1.0.0.0:80"
        ]
    );
}

#[test]
fn sort_ipv6_words_overflow_and_ports() {
    let mut services = vec![
        service(tcp("2001:db8::1", 80), "rr", 0),
        service(tcp("fe80::1", 80), "rr", 0),
        service(tcp("::1", 443), "rr", 0),
        service(tcp("::1", 80), "rr", 0),
        service(tcp("2001:db8::1", 22), "rr", 0),
    ];
    sort_services(&mut services);
    // fe80:: - ::1 in the first word is 0xfe800000 (negative): fe80 first.
    assert_eq!(
        keys(&services),
        [
            "TCP [fe80::1]:80",
            "TCP [::1]:80",
            "TCP [::1]:443",
            "TCP [2001:db8::1]:22",
            "TCP [2001:db8::1]:80",
        ]
    );
}

#[test]
fn sort_destinations_by_the_first_family_only() {
    let mut dests = vec![
        dest("[2001:db8::9]:443", Forwarding::Route, 1),
        dest("192.168.2.1:443", Forwarding::Route, 1),
        dest("[2001:db8::10]:443", Forwarding::Route, 1),
        dest("10.0.0.1:80", Forwarding::Masquerade, 1),
        dest("10.0.0.1:8", Forwarding::Route, 1),
    ];
    sort_destinations(&mut dests);
    let order: Vec<String> = dests
        .iter()
        .map(|d| d.socket_address().to_string())
        .collect();
    assert_eq!(
        order,
        [
            "192.168.2.1:443",
            "10.0.0.1:8",
            "10.0.0.1:80",
            "[2001:db8::9]:443",
            "[2001:db8::10]:443",
        ]
    );
    // 10.0.0.1 - 192.168.2.1 overflows to a positive int32.
    assert!(compare_destinations(&dests[1], &dests[0]) > 0);
    // An IPv4 destination against an IPv6 one compares the first word; the
    // IPv6 one with the IPv4 one also its zero tail.
    let v4_dest = dest("32.1.13.184:1", Forwarding::Route, 1);
    let v6_dest = dest("[2001:db8::]:1", Forwarding::Route, 1);
    assert_eq!(compare_destinations(&v4_dest, &v6_dest), 0);
    assert_eq!(compare_destinations(&v6_dest, &v4_dest), 0);
    let v6_tail = dest("[2001:db8::1]:1", Forwarding::Route, 1);
    assert_eq!(compare_destinations(&v4_dest, &v6_tail), 0);
    assert!(compare_destinations(&v6_tail, &v4_dest) > 0);
}

#[test]
fn msort_is_a_stable_sort_for_a_consistent_comparator() {
    let mut state = 0x1234_5678u32;
    let mut next = move || {
        state = state.wrapping_mul(1_103_515_245).wrapping_add(12345);
        state >> 16
    };
    for length in 0..70 {
        let items: Vec<(u32, usize)> = (0..length).map(|i| (next() % 7, i)).collect();
        let mut ours = items.clone();
        glibc_msort(&mut ours, |a, b| a.0 as i32 - b.0 as i32);
        let mut std = items.clone();
        std.sort_by_key(|item| item.0);
        assert_eq!(ours, std, "length {length}");
    }
}

#[test]
fn nosort_keeps_destination_order() {
    let svc = service(tcp("10.0.0.1", 80), "rr", 0);
    let dests = vec![
        dest("10.0.0.3:80", Forwarding::Masquerade, 1),
        dest("10.0.0.2:80", Forwarding::Masquerade, 1),
    ];
    let mut options = options(ListKind::Default, true);
    options.sort = false;
    let mut out = String::new();
    service_entry(&svc, &dests, &options, &NoResolver, &mut out);
    assert!(out.find("10.0.0.3").unwrap() < out.find("10.0.0.2").unwrap());
    // -S always sorts.
    let mut out = String::new();
    save_entry(&svc, &dests, true, &NoResolver, &mut out);
    assert!(out.find("10.0.0.2").unwrap() < out.find("10.0.0.3").unwrap());
}

// ---------------------------------------------------------------------------
// Forwarding methods and tunnels
// ---------------------------------------------------------------------------

fn every_forwarding() -> Vec<Destination> {
    vec![
        dest("10.0.0.2:80", Forwarding::Masquerade, 1),
        dest("10.0.0.3:80", Forwarding::Local, 2),
        dest(
            "10.0.0.4:80",
            tunnel(TunnelKind::Ipip, 0, TunnelChecksum::NoChecksum),
            3,
        ),
        dest("10.0.0.5:80", Forwarding::Route, 4),
        dest("10.0.0.6:80", Forwarding::Bypass, 5),
        dest("10.0.0.7:80", Forwarding::Other(7), 6),
    ]
}

#[test]
fn every_forwarding_method_listed() {
    let svc = service(tcp("10.0.0.1", 80), "rr", 0);
    let mut out = String::new();
    service_entry(
        &svc,
        &every_forwarding(),
        &options(ListKind::Default, true),
        &NoResolver,
        &mut out,
    );
    assert_same(
        &out,
        "TCP  10.0.0.1:80 rr\n  \
         -> 10.0.0.2:80                  Masq    1      0          0         \n  \
         -> 10.0.0.3:80                  Local   2      0          0         \n  \
         -> 10.0.0.4:80                  Tunnel  3      0          0         \n  \
         -> 10.0.0.5:80                  Route   4      0          0         \n  \
         -> 10.0.0.6:80                  (null)  5      0          0         \n  \
         -> 10.0.0.7:80                  (null)  6      0          0         \n",
    );
}

#[test]
fn every_forwarding_method_saved() {
    let svc = service(tcp("10.0.0.1", 80), "rr", 0);
    let mut out = String::new();
    save_entry(&svc, &every_forwarding(), true, &NoResolver, &mut out);
    assert_same(
        &out,
        "-A -t 10.0.0.1:80 -s rr\n\
         -a -t 10.0.0.1:80 -r 10.0.0.2:80 -m -w 1\n\
         -a -t 10.0.0.1:80 -r 10.0.0.3:80 -g -w 2\n\
         -a -t 10.0.0.1:80 -r 10.0.0.4:80 -i -w 3 --tun-type ipip\n\
         -a -t 10.0.0.1:80 -r 10.0.0.5:80 -g -w 4\n\
         -a -t 10.0.0.1:80 -r 10.0.0.6:80 (null) -w 5\n\
         -a -t 10.0.0.1:80 -r 10.0.0.7:80 (null) -w 6\n",
    );
}

fn every_tunnel() -> Vec<Destination> {
    let kinds = [
        (TunnelKind::Gue, 6080, TunnelChecksum::NoChecksum),
        (TunnelKind::Gue, 65535, TunnelChecksum::Checksum),
        (TunnelKind::Gue, 1, TunnelChecksum::RemoteChecksum),
        (TunnelKind::Gre, 0, TunnelChecksum::NoChecksum),
        (TunnelKind::Gre, 0, TunnelChecksum::Checksum),
        (TunnelKind::Gre, 0, TunnelChecksum::RemoteChecksum),
        (TunnelKind::Gre, 0, TunnelChecksum::Other(3)),
        (TunnelKind::Gre, 0, TunnelChecksum::Other(4)),
        (TunnelKind::Other(9), 0, TunnelChecksum::Checksum),
    ];
    kinds
        .into_iter()
        .enumerate()
        .map(|(i, (kind, port, checksum))| {
            dest(
                &format!("10.0.1.{}:80", i + 1),
                tunnel(kind, port, checksum),
                1,
            )
        })
        .collect()
}

#[test]
fn every_tunnel_type_listed() {
    let svc = service(tcp("10.0.0.1", 80), "rr", 0);
    let mut out = String::new();
    service_entry(
        &svc,
        &every_tunnel(),
        &options(ListKind::TunnelInfo, true),
        &NoResolver,
        &mut out,
    );
    assert_same(
        &out,
        "TCP  10.0.0.1:80 rr\n  \
         -> 10.0.1.1:80                  Tunnel  gue:6080:-c   1      0          0         \n  \
         -> 10.0.1.2:80                  Tunnel  gue:65535:+c  1      0          0         \n  \
         -> 10.0.1.3:80                  Tunnel  gue:1:r+c     1      0          0         \n  \
         -> 10.0.1.4:80                  Tunnel  gre:-c        1      0          0         \n  \
         -> 10.0.1.5:80                  Tunnel  gre:+c        1      0          0         \n  \
         -> 10.0.1.6:80                  Tunnel  gre:r+c       1      0          0         \n  \
         -> 10.0.1.7:80                  Tunnel  gre:+c        1      0          0         \n  \
         -> 10.0.1.8:80                  Tunnel  gre:-c        1      0          0         \n  \
         -> 10.0.1.9:80                  Tunnel  n/a           1      0          0         \n",
    );
}

#[test]
fn every_tunnel_type_saved() {
    let svc = service(tcp("10.0.0.1", 80), "rr", 0);
    let mut out = String::new();
    save_entry(&svc, &every_tunnel(), true, &NoResolver, &mut out);
    assert_same(
        &out,
        "-A -t 10.0.0.1:80 -s rr\n\
         -a -t 10.0.0.1:80 -r 10.0.1.1:80 -i -w 1 --tun-type gue --tun-port 6080 --tun-nocsum\n\
         -a -t 10.0.0.1:80 -r 10.0.1.2:80 -i -w 1 --tun-type gue --tun-port 65535 --tun-csum\n\
         -a -t 10.0.0.1:80 -r 10.0.1.3:80 -i -w 1 --tun-type gue --tun-port 1 --tun-remcsum\n\
         -a -t 10.0.0.1:80 -r 10.0.1.4:80 -i -w 1 --tun-type gre --tun-nocsum\n\
         -a -t 10.0.0.1:80 -r 10.0.1.5:80 -i -w 1 --tun-type gre --tun-csum\n\
         -a -t 10.0.0.1:80 -r 10.0.1.6:80 -i -w 1 --tun-type gre --tun-remcsum\n\
         -a -t 10.0.0.1:80 -r 10.0.1.7:80 -i -w 1 --tun-type gre --tun-csum\n\
         -a -t 10.0.0.1:80 -r 10.0.1.8:80 -i -w 1 --tun-type gre --tun-nocsum\n\
         -a -t 10.0.0.1:80 -r 10.0.1.9:80 -i -w 1\n",
    );
}

#[test]
fn save_drops_thresholds_and_writes_weights_signed() {
    let svc = service(tcp("10.0.0.1", 80), "rr", 0);
    let mut d = dest("10.0.0.2:80", Forwarding::Route, u32::MAX);
    d.upper_threshold = 10;
    d.lower_threshold = 5;
    let mut out = String::new();
    save_entry(&svc, &[d.clone()], true, &NoResolver, &mut out);
    assert_same(
        &out,
        "-A -t 10.0.0.1:80 -s rr\n-a -t 10.0.0.1:80 -r 10.0.0.2:80 -g -w -1\n",
    );
    // -L prints the weight %d, --persistent-conn %u.
    let mut out = String::new();
    service_entry(
        &svc,
        &[d.clone()],
        &options(ListKind::Default, true),
        &NoResolver,
        &mut out,
    );
    assert!(out.contains(" Route   -1     0 "), "{}", show(&out));
    let mut out = String::new();
    service_entry(
        &svc,
        &[d],
        &options(ListKind::PersistentConnections, true),
        &NoResolver,
        &mut out,
    );
    assert!(out.contains(" 4294967295 0 "), "{}", show(&out));
}

// ---------------------------------------------------------------------------
// Service lines
// ---------------------------------------------------------------------------

fn line_and_rule(svc: &Service) -> (String, String) {
    let mut line = String::new();
    service_entry(
        svc,
        &[],
        &options(ListKind::Default, true),
        &NoResolver,
        &mut line,
    );
    let mut rule = String::new();
    save_entry(svc, &[], true, &NoResolver, &mut rule);
    (line, rule)
}

#[test]
fn sched_flags_by_scheduler() {
    let cases = [
        ("sh", SCHED1 | SCHED2 | SCHED3, "sh-fallback,sh-port"),
        ("mh", SCHED1, "mh-fallback"),
        ("mh", SCHED2 | SCHED3, "mh-port"),
        ("wrr", SCHED1 | SCHED3, "flag-1,flag-3"),
        ("rr", SCHED2, "flag-2"),
        ("sh", SCHED3, ""),
    ];
    for (scheduler, flags, names) in cases {
        let (line, rule) = line_and_rule(&service(tcp("10.0.0.1", 80), scheduler, flags));
        assert_same(&line, &format!("TCP  10.0.0.1:80 {scheduler} ({names})\n"));
        assert_same(
            &rule,
            &format!("-A -t 10.0.0.1:80 -s {scheduler} -b {names}\n"),
        );
    }
}

#[test]
fn persistence_engine_shown_only_when_persistent_but_always_saved() {
    let mut svc = service(key(Protocol::Udp, "10.0.0.1", 5060), "rr", ONE_PACKET);
    svc.persistence_engine = Some("sip".to_string());
    let (line, rule) = line_and_rule(&svc);
    assert_same(&line, "UDP  10.0.0.1:5060 rr ops\n");
    assert_same(&rule, "-A -u 10.0.0.1:5060 -s rr --pe sip -o\n");
    // An empty name counts as none.
    svc.persistence_engine = Some(String::new());
    let (line, rule) = line_and_rule(&persistent(svc, 10));
    assert_same(&line, "UDP  10.0.0.1:5060 rr persistent 10 ops\n");
    assert_same(&rule, "-A -u 10.0.0.1:5060 -s rr -p 10 -o\n");
}

#[test]
fn netmasks() {
    let mut svc = persistent(service(tcp("10.0.0.1", 80), "rr", 0), 0);
    let (line, rule) = line_and_rule(&svc);
    assert_same(&line, "TCP  10.0.0.1:80 rr persistent 0\n");
    assert_same(&rule, "-A -t 10.0.0.1:80 -s rr -p 0\n");
    svc.netmask = Netmask::Ipv4(Ipv4Addr::new(0, 0, 0, 24));
    let (line, rule) = line_and_rule(&svc);
    assert_same(&line, "TCP  10.0.0.1:80 rr persistent 0 mask 0.0.0.24\n");
    assert_same(&rule, "-A -t 10.0.0.1:80 -s rr -p 0 -M 0.0.0.24\n");
    // Not persistent: no mask at all.
    svc.flags.remove(ServiceFlags::PERSISTENT);
    let (line, rule) = line_and_rule(&svc);
    assert_same(&line, "TCP  10.0.0.1:80 rr\n");
    assert_same(&rule, "-A -t 10.0.0.1:80 -s rr\n");

    let mut v6 = persistent(
        service(
            ServiceKey::Fwmark {
                family: Family::Inet6,
                mark: 5,
            },
            "rr",
            0,
        ),
        30,
    );
    let (line, rule) = line_and_rule(&v6);
    assert_same(&line, "FWM  5 IPv6 rr persistent 30\n");
    assert_same(&rule, "-A -f 5 -6 -s rr -p 30\n");
    v6.netmask = Netmask::Ipv6(48);
    let (line, rule) = line_and_rule(&v6);
    assert_same(&line, "FWM  5 IPv6 rr persistent 30 mask 48\n");
    assert_same(&rule, "-A -f 5 -6 -s rr -p 30 -M 48\n");
}

#[test]
fn fwmarks_are_signed_and_their_ports_never_resolved() {
    let svc = service(
        ServiceKey::Fwmark {
            family: Family::Inet,
            mark: 0x8000_0000,
        },
        "rr",
        0,
    );
    let dests = vec![dest("127.0.0.1:80", Forwarding::Masquerade, 1)];
    let resolver = FakeResolver::debian();
    let mut out = String::new();
    service_entry(
        &svc,
        &dests,
        &options(ListKind::Default, false),
        &resolver,
        &mut out,
    );
    assert_same(
        &out,
        "FWM  -2147483648 rr\n  \
         -> localhost:80                 Masq    1      0          0         \n",
    );
    let mut out = String::new();
    save_entry(&svc, &dests, false, &resolver, &mut out);
    assert_same(
        &out,
        "-A -f -2147483648 -s rr\n-a -f -2147483648 -r localhost:80 -m -w 1\n",
    );
    let mut out = String::new();
    service_entry(
        &svc,
        &[],
        &options(ListKind::Stats, true),
        &NoResolver,
        &mut out,
    );
    assert_same(
        &out,
        "FWM  -2147483648                         0        0        0        0        0\n",
    );
}

#[test]
fn other_protocols() {
    let svc = service(key(Protocol::Other(33), "10.0.0.1", 80), "rr", 0);
    let dests = vec![dest("10.0.0.2:80", Forwarding::Masquerade, 1)];
    let resolver = FakeResolver::debian();
    let mut out = String::new();
    service_entry(
        &svc,
        &dests,
        &options(ListKind::Default, false),
        &resolver,
        &mut out,
    );
    assert_same(
        &out,
        "?    10.0.0.1:80 rr\n  \
         -> 10.0.0.2:80                  Masq    1      0          0         \n",
    );
    let mut out = String::new();
    save_entry(&svc, &dests, false, &resolver, &mut out);
    assert_same(
        &out,
        "-A --xxx-service 10.0.0.1:80 -s rr\n\
         -a --xxx-service 10.0.0.1:80 -r 10.0.0.2:80 -m -w 1\n",
    );
}

// ---------------------------------------------------------------------------
// Names and truncation
// ---------------------------------------------------------------------------

#[test]
fn ipv4_names_are_cut_in_listings_only() {
    let long = "a-rather-long-host-name.example.org";
    let resolver = FakeResolver::debian()
        .with_host("10.0.0.1", long)
        .with_host("10.0.0.2", long);
    let svc = service(tcp("10.0.0.1", 80), "rr", 0);
    let dests = vec![dest("10.0.0.2:8080", Forwarding::Masquerade, 1)];
    let mut out = String::new();
    service_entry(
        &svc,
        &dests,
        &options(ListKind::Default, false),
        &resolver,
        &mut out,
    );
    // "TCP  " + 28 characters = 33; the dest name is cut at 28.
    assert_same(
        &out,
        "TCP  a-rather-long-host-name.exam rr\n  \
         -> a-rather-long-host-name.exam Masq    1      0          0         \n",
    );
    let mut out = String::new();
    service_entry(
        &svc,
        &dests,
        &options(ListKind::Stats, false),
        &resolver,
        &mut out,
    );
    assert_same(
        &out,
        "TCP  a-rather-long-host-name.exam        0        0        0        0        0\n  \
         -> a-rather-long-host-name.exam        0        0        0        0        0\n",
    );
    let mut out = String::new();
    save_entry(&svc, &dests, false, &resolver, &mut out);
    assert_same(
        &out,
        &format!("-A -t {long}:http -s rr\n-a -t {long}:http -r {long}:http-alt -m -w 1\n"),
    );
}

#[test]
fn ipv6_names_are_not_cut_and_shift_the_columns() {
    let svc = service(tcp("2001:db8:1234:5678:9abc:def0:1234:5678", 443), "rr", 0);
    let dests = vec![dest(
        "[2001:db8:1234:5678:9abc:def0:1234:5679]:443",
        Forwarding::Route,
        1,
    )];
    let mut out = String::new();
    service_entry(
        &svc,
        &dests,
        &options(ListKind::Default, true),
        &NoResolver,
        &mut out,
    );
    assert_same(
        &out,
        "TCP  [2001:db8:1234:5678:9abc:def0:1234:5678]:443 rr\n  \
         -> [2001:db8:1234:5678:9abc:def0:1234:5679]:443 Route   1      0          0         \n",
    );
    let mut out = String::new();
    service_entry(
        &svc,
        &[],
        &options(ListKind::Rate, true),
        &NoResolver,
        &mut out,
    );
    assert_same(
        &out,
        "TCP  [2001:db8:1234:5678:9abc:def0:1234:5678]:443        0        0        0        0        0\n",
    );
}

#[test]
fn resolved_ipv6_names_keep_their_brackets() {
    let resolver = FakeResolver::debian().with_host("::1", "ip6-localhost");
    let svc = service(tcp("::1", 443), "rr", 0);
    let (mut line, mut rule) = (String::new(), String::new());
    service_entry(
        &svc,
        &[],
        &options(ListKind::Default, false),
        &resolver,
        &mut line,
    );
    save_entry(&svc, &[], false, &resolver, &mut rule);
    assert_same(&line, "TCP  [ip6-localhost]:https rr\n");
    assert_same(&rule, "-A -t [ip6-localhost]:https -s rr\n");
}

#[test]
fn names_are_cut_at_59_bytes() {
    let host = "h".repeat(70);
    let resolver = FakeResolver::debian().with_host("10.0.0.1", &host);
    let svc = service(tcp("10.0.0.1", 80), "rr", 0);
    let mut rule = String::new();
    save_entry(&svc, &[], false, &resolver, &mut rule);
    assert_same(&rule, &format!("-A -t {} -s rr\n", "h".repeat(59)));
}

#[test]
fn inet_ntop_matches_glibc() {
    let cases = [
        ("::", "::"),
        ("::1", "::1"),
        ("1::", "1::"),
        ("::ffff:1.2.3.4", "::ffff:1.2.3.4"),
        ("::1.2.3.4", "::1.2.3.4"),
        ("::0.0.1.2", "::102"),
        ("::ffff:0:1.2.3.4", "::ffff:0:102:304"),
        ("2001:db8:0:1:1:1:1:1", "2001:db8:0:1:1:1:1:1"),
        ("1:0:0:1:0:0:0:1", "1:0:0:1::1"),
        ("1:0:0:2:0:0:3:4", "1::2:0:0:3:4"),
        ("fe80::1:0:0", "fe80::1:0:0"),
        ("2001:db8::10", "2001:db8::10"),
    ];
    for (input, expected) in cases {
        let address: Ipv6Addr = input.parse().unwrap();
        assert_eq!(inet_ntop(IpAddr::V6(address)), expected, "{input}");
    }
    assert_eq!(inet_ntop("10.0.0.1".parse().unwrap()), "10.0.0.1");
}

#[test]
fn system_resolver_finds_nothing_odd() {
    // Whatever this machine's NSS says, the lookup must not crash, and the
    // loopback address has some name or none.
    let resolver = SystemResolver;
    let _ = resolver.host_name("127.0.0.1".parse().unwrap());
    let _ = resolver.service_name(22, "tcp");
    assert_eq!(resolver.service_name(22, "no\0such"), None);
}

// ---------------------------------------------------------------------------
// Connections
// ---------------------------------------------------------------------------

const HEADER: &str =
    "Pro FromIP   FPrt ToIP     TPrt DestIP   DPrt State       Expires PEName PEData\n";

fn conns(text: &str, persistent: bool) -> (String, Result<(), ConnectionsError>) {
    let mut out = String::new();
    let result = connections_with(text, true, persistent, &NoResolver, &mut out);
    (out, result)
}

#[test]
fn connections_empty_file() {
    let (out, result) = conns("", false);
    assert_eq!(result, Err(ConnectionsError::Empty));
    assert_eq!(
        result.unwrap_err().message(),
        Some("unexpected input from /proc/net/ip_vs_conn")
    );
    assert_same(&out, "");
}

#[test]
fn connections_header_only() {
    let (out, result) = conns(HEADER, false);
    result.unwrap();
    assert_same(
        &out,
        "IPVS connection entries\n\
         pro expire state       source             virtual            destination\n",
    );
}

#[test]
fn connections_blank_line_stops_after_the_lines_before() {
    let text = format!(
        "{HEADER}TCP 0A000001 0050 0A000002 0050 0A000003 0050 CLOSE 5\n  \t\n\
         TCP 0A000001 0050 0A000002 0050 0A000003 0050 CLOSE 6\n"
    );
    let (out, result) = conns(&text, false);
    assert_eq!(result, Err(ConnectionsError::BlankLine));
    assert_eq!(ConnectionsError::BlankLine.message(), None);
    assert_same(
        &out,
        "IPVS connection entries\n\
         pro expire state       source             virtual            destination\n\
         TCP 00:05  CLOSE       10.0.0.1:80        10.0.0.2:80        10.0.0.3:80\n",
    );
}

#[test]
fn connections_long_lines_are_split_at_255_bytes() {
    // A 300-byte line: the first 255 bytes are one entry, the rest another.
    let first = "TCP 0A000001 0050 0A000002 0050 0A000003 0050 CLOSE 5 pe ";
    let pad = "x".repeat(255 - first.len());
    let text =
        format!("{HEADER}{first}{pad}UDP 0A000001 0035 0A000002 0035 0A000003 0035 UDP 61\n");
    let (out, result) = conns(&text, true);
    result.unwrap();
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 4, "{}", show(&out));
    assert_eq!(
        lines[2],
        format!(
            "TCP 00:05  CLOSE       10.0.0.1:80        10.0.0.2:80        10.0.0.3:80      pe                 {pad}"
        )
    );
    assert_eq!(
        lines[3],
        "UDP 01:01  UDP         10.0.0.1:53        10.0.0.2:53        10.0.0.3:53"
    );
    // A line of exactly 255 bytes and its newline: the newline alone is a
    // blank line, which stops the listing.
    let line = format!("TCP 0A000001 0050 0A000002 0050 0A000003 0050 CLOSE 5 pe {pad}\n");
    let (_, result) = conns(&format!("{HEADER}{line}"), false);
    assert_eq!(result, Err(ConnectionsError::BlankLine));
}

#[test]
fn connections_odd_fields() {
    let text = format!(
        "{HEADER}\
         SCTP 0A000001 0x50 0A000002 -1 0A000002 10050 ESTABLISHED -1\n\
         ICMP 1.2.3.4 0050 5.6.7.8 0050 ::1 0050 X 59 onlyname\n\
         TCP 0A000001 zz\n"
    );
    let (out, result) = conns(&text, true);
    result.unwrap();
    assert_same(
        &out,
        "IPVS connection entries\n\
         pro expire state       source             virtual            destination        pe name          pe_data\n\
         SCTP 71582788:15 ESTABLISHED 10.0.0.1:80        10.0.0.2:65535     10.0.0.2:80\n\
         ICMP 00:59  X           1.2.3.4:80         5.6.7.8:80         [::1]:80\n\
         TCP 00:00              10.0.0.1:0         0.0.0.0:0          0.0.0.0:0\n",
    );
}

#[test]
fn connections_without_persistent_conn_ignore_pe_fields() {
    let text = format!("{HEADER}UDP 0A000009 13C4 0A000001 13C4 C0A80101 13C4 UDP 3599 sip abc\n");
    let (out, result) = conns(&text, false);
    result.unwrap();
    assert!(
        out.ends_with(
            "UDP 59:59  UDP         10.0.0.9:5060      10.0.0.1:5060      192.168.1.1:5060\n"
        ),
        "{}",
        show(&out)
    );
}

#[test]
fn strtoul_and_inet_pton4_edges() {
    assert_eq!(strtoul16("C0A80101"), 0xC0A8_0101);
    assert_eq!(strtoul16("0xff"), 0xff);
    assert_eq!(strtoul16("123456789A"), 0x12_3456_789A);
    assert_eq!(strtoul16("20010db8000000000000000000000064"), u64::MAX);
    assert_eq!(strtoul16("-1"), u64::MAX);
    assert_eq!(strtoul16("zz"), 0);
    assert_eq!(inet_pton4("1.2.3.4"), Some(Ipv4Addr::new(1, 2, 3, 4)));
    assert_eq!(inet_pton4("01.2.3.4"), None);
    assert_eq!(inet_pton4("1.2.3"), None);
    assert_eq!(inet_pton4("1.2.3.256"), None);
    assert_eq!(inet_pton4("0.0.0.0"), Some(Ipv4Addr::UNSPECIFIED));
}
