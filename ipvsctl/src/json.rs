//! `--json`: each listing as one JSON document, schema version
//! [`SCHEMA_VERSION`], specified in `docs/ipvsctl-json.md`.
//!
//! The schema is its own set of view structs, built from the `ipvs` model
//! here: the library's types carry no serde derives, so the model can change
//! without changing what scripts read, and the schema can grow (additively,
//! within a version) without touching the library.
//!
//! Unlike the text listings, nothing here imitates ipvsadm's quirks: numbers
//! are exact and never scaled or truncated to 32 bits, addresses are always
//! numeric (no name lookups, with or without `-n`), marks are unsigned, and
//! `--stats` and `--rate` add to the document instead of excluding each
//! other. What is kept is ipvsadm's sort order (or the kernel's order with
//! `--nosort`), so both outputs list services in the same order.
//!
//! The functions are pure, like `format`'s: they return the whole document,
//! ending in a newline. The caller prints it only once everything has been
//! fetched, so a failure never leaves half a document on stdout.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use ipvs::{
    Destination, Family, Forwarding, Info, Netmask, Protocol, Service, ServiceFlags, ServiceKey,
    Statistics, SyncDaemon, SyncState, Timeouts, TunnelKind,
};
use serde::Serialize;

use crate::format;

/// The schema's version: it changes only when a change could break a
/// consumer (a field removed, renamed or retyped, a meaning changed). New
/// fields and new values of string enumerations come without a change.
pub const SCHEMA_VERSION: u32 = 1;

/// What a service listing carries beyond the fields always present.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServiceOptions {
    /// `--stats`: a `statistics` object on every service and destination.
    pub statistics: bool,
    /// `--rate`: a `rates` object on every service and destination.
    pub rates: bool,
    /// false with `--nosort`: the kernel's dump order.
    pub sort: bool,
}

impl Default for ServiceOptions {
    fn default() -> Self {
        ServiceOptions {
            statistics: false,
            rates: false,
            sort: true,
        }
    }
}

// ---------------------------------------------------------------------------
// Documents
// ---------------------------------------------------------------------------

/// `-L --json`, of every service or of one.
#[derive(Serialize)]
struct ServicesDocument {
    schema_version: u32,
    ipvs: IpvsView,
    services: Vec<ServiceView>,
}

/// `-L -c --json`.
#[derive(Serialize)]
struct ConnectionsDocument {
    schema_version: u32,
    connections: Vec<ConnectionView>,
}

/// `-L --timeout --json`.
#[derive(Serialize)]
struct TimeoutsDocument {
    schema_version: u32,
    timeouts: TimeoutsView,
}

/// `-L --daemon --json`.
#[derive(Serialize)]
struct DaemonsDocument {
    schema_version: u32,
    daemons: Vec<DaemonView>,
}

// ---------------------------------------------------------------------------
// Views
// ---------------------------------------------------------------------------

#[derive(Serialize)]
struct IpvsView {
    /// `major.minor.patch`
    version: String,
    connection_table_size: u32,
}

#[derive(Serialize)]
struct ServiceView {
    /// Mark services only.
    #[serde(skip_serializing_if = "Option::is_none")]
    fwmark: Option<u32>,
    /// Address services only (this and the next two).
    #[serde(skip_serializing_if = "Option::is_none")]
    protocol: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    address: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    port: Option<u16>,
    family: &'static str,
    scheduler: String,
    scheduler_flags: Vec<&'static str>,
    one_packet: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    persistence: Option<PersistenceView>,
    #[serde(skip_serializing_if = "Option::is_none")]
    persistence_engine: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    statistics: Option<CountersView>,
    #[serde(skip_serializing_if = "Option::is_none")]
    rates: Option<CountersView>,
    destinations: Vec<DestinationView>,
}

#[derive(Serialize)]
struct PersistenceView {
    /// Seconds.
    timeout: u32,
    /// IPv4 services: the mask, dotted.
    #[serde(skip_serializing_if = "Option::is_none")]
    netmask: Option<String>,
    /// IPv6 services: the prefix length.
    #[serde(skip_serializing_if = "Option::is_none")]
    prefix_length: Option<u8>,
}

/// Counters (`statistics`) or per-second rates (`rates`): one shape, so a
/// consumer reads both the same way.
#[derive(Serialize)]
struct CountersView {
    connections: u64,
    incoming_packets: u64,
    outgoing_packets: u64,
    incoming_bytes: u64,
    outgoing_bytes: u64,
}

#[derive(Serialize)]
struct DestinationView {
    address: String,
    port: u16,
    forwarding: String,
    /// Tunnel destinations only.
    #[serde(skip_serializing_if = "Option::is_none")]
    tunnel: Option<TunnelView>,
    weight: u32,
    upper_threshold: u32,
    lower_threshold: u32,
    active_connections: u32,
    inactive_connections: u32,
    persistent_connections: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    statistics: Option<CountersView>,
    #[serde(skip_serializing_if = "Option::is_none")]
    rates: Option<CountersView>,
}

#[derive(Serialize)]
struct TunnelView {
    #[serde(rename = "type")]
    kind: String,
    /// GUE only.
    #[serde(skip_serializing_if = "Option::is_none")]
    port: Option<u16>,
    /// GUE and GRE only.
    #[serde(skip_serializing_if = "Option::is_none")]
    checksum: Option<&'static str>,
}

#[derive(Serialize)]
struct TimeoutsView {
    tcp: u32,
    tcp_fin: u32,
    udp: u32,
}

#[derive(Serialize)]
struct DaemonView {
    state: &'static str,
    multicast_interface: String,
    sync_id: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    sync_max_length: Option<u16>,
    #[serde(skip_serializing_if = "Option::is_none")]
    multicast_group: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    multicast_port: Option<u16>,
    #[serde(skip_serializing_if = "Option::is_none")]
    multicast_ttl: Option<u8>,
}

#[derive(Serialize)]
struct ConnectionView {
    protocol: String,
    client: EndpointView,
    #[serde(rename = "virtual")]
    virtual_: EndpointView,
    destination: EndpointView,
    state: String,
    /// Seconds.
    expires: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    persistence_engine: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    persistence_data: Option<String>,
}

#[derive(Serialize)]
struct EndpointView {
    address: String,
    port: u16,
}

/// Compact, on one line, then a newline: one document per invocation.
fn document(value: &impl Serialize) -> String {
    let mut text =
        serde_json::to_string(value).expect("structs of strings and numbers always serialize");
    text.push('\n');
    text
}

// ---------------------------------------------------------------------------
// Whole listings
// ---------------------------------------------------------------------------

/// `-L --json` of every service (or, given one, of that service): `table`
/// in the kernel's dump order, each service with its destinations, sorted
/// as ipvsadm sorts them unless `options.sort` is false.
pub fn services(
    info: &Info,
    table: &[(Service, Vec<Destination>)],
    options: &ServiceOptions,
) -> String {
    let order = if options.sort {
        format::glibc_msort_order(table, |a, b| format::compare_services(&a.0, &b.0))
    } else {
        (0..table.len()).collect()
    };
    let services = order
        .into_iter()
        .map(|index| {
            let (service, destinations) = &table[index];
            service_view(service, destinations, options)
        })
        .collect();
    document(&ServicesDocument {
        schema_version: SCHEMA_VERSION,
        ipvs: IpvsView {
            version: info.version.to_string(),
            connection_table_size: info.connection_table_size,
        },
        services,
    })
}

/// `-L --timeout --json`.
pub fn timeouts(timeouts: &Timeouts) -> String {
    document(&TimeoutsDocument {
        schema_version: SCHEMA_VERSION,
        timeouts: TimeoutsView {
            tcp: timeouts.tcp,
            tcp_fin: timeouts.tcp_fin,
            udp: timeouts.udp,
        },
    })
}

/// `-L --daemon --json`, in the kernel's order.
pub fn daemons(daemons: &[SyncDaemon]) -> String {
    let daemons = daemons
        .iter()
        .map(|daemon| DaemonView {
            state: match daemon.state {
                SyncState::Master => "master",
                SyncState::Backup => "backup",
            },
            multicast_interface: daemon.interface.clone(),
            sync_id: daemon.sync_id,
            sync_max_length: daemon.max_length,
            multicast_group: daemon.group.map(format::inet_ntop),
            multicast_port: daemon.port,
            multicast_ttl: daemon.ttl,
        })
        .collect();
    document(&DaemonsDocument {
        schema_version: SCHEMA_VERSION,
        daemons,
    })
}

/// Why `-L -c --json` could not read `/proc/net/ip_vs_conn`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConnectionsError {
    /// Not even the kernel's header line (ipvsadm's message for it).
    #[error("unexpected input from /proc/net/ip_vs_conn")]
    Empty,
    /// A line that is not what the kernel writes; `line` counts from 1,
    /// the header included.
    #[error("unexpected input from /proc/net/ip_vs_conn on line {line}")]
    Malformed { line: usize },
}

/// `-L -c --json` from the contents of `/proc/net/ip_vs_conn`, in the
/// file's order. The persistence engine's fields come whenever the kernel
/// writes them, with or without `--persistent-conn`.
///
/// The file is read as the kernel writes it, whole lines split on white
/// space: none of ipvsadm's 255-byte pieces, and a blank line is skipped
/// rather than the end of the listing.
pub fn connections(proc_text: &[u8]) -> Result<String, ConnectionsError> {
    let text = String::from_utf8_lossy(proc_text);
    let mut lines = text.lines().enumerate();
    if lines.next().is_none() {
        return Err(ConnectionsError::Empty);
    }
    let mut connections = Vec::new();
    for (index, line) in lines {
        if line.trim().is_empty() {
            continue;
        }
        let connection =
            connection_view(line).ok_or(ConnectionsError::Malformed { line: index + 1 })?;
        connections.push(connection);
    }
    Ok(document(&ConnectionsDocument {
        schema_version: SCHEMA_VERSION,
        connections,
    }))
}

// ---------------------------------------------------------------------------
// From the model to the views
// ---------------------------------------------------------------------------

fn service_view(
    service: &Service,
    destinations: &[Destination],
    options: &ServiceOptions,
) -> ServiceView {
    let (fwmark, protocol, address, port) = match service.key {
        ServiceKey::Fwmark { mark, .. } => (Some(mark), None, None, None),
        ServiceKey::Address {
            protocol,
            address,
            port,
        } => (
            None,
            Some(protocol_name(protocol.to_raw())),
            Some(format::inet_ntop(address)),
            Some(port),
        ),
    };
    let order = if options.sort {
        format::glibc_msort_order(destinations, format::compare_destinations)
    } else {
        (0..destinations.len()).collect()
    };
    let persistence = service
        .flags
        .contains(ServiceFlags::PERSISTENT)
        .then(|| PersistenceView {
            timeout: service.timeout,
            netmask: match service.netmask {
                Netmask::Ipv4(mask) => Some(mask.to_string()),
                Netmask::Ipv6(_) => None,
            },
            prefix_length: match service.netmask {
                Netmask::Ipv4(_) => None,
                Netmask::Ipv6(prefix) => Some(prefix),
            },
        });
    let statistics = service.statistics.as_deref().copied().unwrap_or_default();
    ServiceView {
        fwmark,
        protocol,
        address,
        port,
        family: family_name(service.key.family()),
        scheduler: service.scheduler.clone(),
        scheduler_flags: scheduler_flags(service),
        one_packet: service.flags.contains(ServiceFlags::ONE_PACKET),
        persistence,
        persistence_engine: service
            .persistence_engine
            .clone()
            .filter(|engine| !engine.is_empty()),
        statistics: options.statistics.then(|| counters(&statistics)),
        rates: options.rates.then(|| rates(&statistics)),
        destinations: order
            .into_iter()
            .map(|index| destination_view(&destinations[index], options))
            .collect(),
    }
}

fn destination_view(destination: &Destination, options: &ServiceOptions) -> DestinationView {
    let connections = destination.counters.unwrap_or_default();
    let statistics = destination
        .statistics
        .as_deref()
        .copied()
        .unwrap_or_default();
    let tunnel = match destination.forwarding {
        Forwarding::Tunnel(tunnel) => Some(match tunnel.kind {
            TunnelKind::Ipip => TunnelView {
                kind: "ipip".to_owned(),
                port: None,
                checksum: None,
            },
            TunnelKind::Gue => TunnelView {
                kind: "gue".to_owned(),
                port: Some(tunnel.port),
                checksum: Some(checksum_name(tunnel.checksum)),
            },
            TunnelKind::Gre => TunnelView {
                kind: "gre".to_owned(),
                port: None,
                checksum: Some(checksum_name(tunnel.checksum)),
            },
            TunnelKind::Other(kind) => TunnelView {
                kind: unknown(kind),
                port: None,
                checksum: None,
            },
        }),
        _ => None,
    };
    DestinationView {
        address: format::inet_ntop(destination.address),
        port: destination.port,
        forwarding: forwarding_name(destination.forwarding),
        tunnel,
        weight: destination.weight,
        upper_threshold: destination.upper_threshold,
        lower_threshold: destination.lower_threshold,
        active_connections: connections.active,
        inactive_connections: connections.inactive,
        persistent_connections: connections.persistent,
        statistics: options.statistics.then(|| counters(&statistics)),
        rates: options.rates.then(|| rates(&statistics)),
    }
}

fn counters(statistics: &Statistics) -> CountersView {
    CountersView {
        connections: statistics.connections,
        incoming_packets: statistics.incoming_packets,
        outgoing_packets: statistics.outgoing_packets,
        incoming_bytes: statistics.incoming_bytes,
        outgoing_bytes: statistics.outgoing_bytes,
    }
}

fn rates(statistics: &Statistics) -> CountersView {
    CountersView {
        connections: statistics.connection_rate,
        incoming_packets: statistics.incoming_packet_rate,
        outgoing_packets: statistics.outgoing_packet_rate,
        incoming_bytes: statistics.incoming_byte_rate,
        outgoing_bytes: statistics.outgoing_byte_rate,
    }
}

fn family_name(family: Family) -> &'static str {
    match family {
        Family::Inet => "inet",
        Family::Inet6 => "inet6",
    }
}

/// The kernel's `ip_vs_proto_name` in lower case, so that services and
/// connections (whose protocol is the kernel's text) name a protocol alike.
fn protocol_name(protocol: u16) -> String {
    match Protocol::from_raw(protocol) {
        Protocol::Tcp => "tcp".to_owned(),
        Protocol::Udp => "udp".to_owned(),
        Protocol::Sctp => "sctp".to_owned(),
        Protocol::Other(number) => match i32::from(number) {
            libc::IPPROTO_IP => "ip".to_owned(),
            libc::IPPROTO_ICMP => "icmp".to_owned(),
            libc::IPPROTO_ICMPV6 => "icmpv6".to_owned(),
            _ => format!("ip_{number}"),
        },
    }
}

/// A value the schema has no name for yet.
fn unknown(value: impl std::fmt::Display) -> String {
    format!("unknown-{value}")
}

fn forwarding_name(forwarding: Forwarding) -> String {
    match forwarding {
        Forwarding::Masquerade => "masquerade".to_owned(),
        Forwarding::Local => "local".to_owned(),
        Forwarding::Tunnel(_) => "tunnel".to_owned(),
        Forwarding::Route => "route".to_owned(),
        Forwarding::Bypass => "bypass".to_owned(),
        Forwarding::Other(method) => unknown(method),
    }
}

/// The checksum mode the kernel applies, named like the `--tun-*` options
/// that set it (values with both bits set act as `csum`).
fn checksum_name(checksum: ipvs::TunnelChecksum) -> &'static str {
    ["nocsum", "csum", "remcsum"][format::tunnel_flag_index(checksum)]
}

/// The names `-b` takes, so a listing can be fed back: `sh-*` and `mh-*`
/// for those schedulers' first two flags, `flag-1..3` otherwise (ipvsadm's
/// names, plus `flag-3` for `sh` and `mh`, which ipvsadm leaves out).
fn scheduler_flags(service: &Service) -> Vec<&'static str> {
    let [first, second] = match service.scheduler.as_str() {
        "sh" => ["sh-fallback", "sh-port"],
        "mh" => ["mh-fallback", "mh-port"],
        _ => ["flag-1", "flag-2"],
    };
    [
        (ServiceFlags::SCHED_1, first),
        (ServiceFlags::SCHED_2, second),
        (ServiceFlags::SCHED_3, "flag-3"),
    ]
    .into_iter()
    .filter(|(flag, _)| service.flags.contains(*flag))
    .map(|(_, name)| name)
    .collect()
}

// ---------------------------------------------------------------------------
// /proc/net/ip_vs_conn
// ---------------------------------------------------------------------------

/// One line as `ip_vs_conn_seq_show` writes it: protocol, client address
/// and port, virtual address and port, destination address and port, state,
/// seconds to expiry, then the persistence engine's name and data if the
/// connection has them.
fn connection_view(line: &str) -> Option<ConnectionView> {
    let fields: Vec<&str> = line.split_ascii_whitespace().collect();
    if fields.len() < 9 {
        return None;
    }
    let persistence_data = fields[10.min(fields.len())..].join(" ");
    Some(ConnectionView {
        protocol: fields[0].to_ascii_lowercase(),
        client: endpoint(fields[1], fields[2])?,
        virtual_: endpoint(fields[3], fields[4])?,
        destination: endpoint(fields[5], fields[6])?,
        state: fields[7].to_owned(),
        expires: fields[8].parse().ok()?,
        persistence_engine: fields.get(9).map(|name| (*name).to_owned()),
        persistence_data: (!persistence_data.is_empty()).then_some(persistence_data),
    })
}

/// An address as the kernel writes it (IPv4 as `%08X`, IPv6 as `%pI6`) and
/// a port as `%04X`.
fn endpoint(address: &str, port: &str) -> Option<EndpointView> {
    let address = if address.contains(':') {
        IpAddr::V6(address.parse::<Ipv6Addr>().ok()?)
    } else {
        IpAddr::V4(Ipv4Addr::from(hex(address, 8)? as u32))
    };
    Some(EndpointView {
        address: format::inet_ntop(address),
        port: hex(port, 4)? as u16,
    })
}

/// Exactly `digits` hexadecimal digits (no sign, no `0x`).
fn hex(text: &str, digits: usize) -> Option<u64> {
    (text.len() == digits && text.bytes().all(|byte| byte.is_ascii_hexdigit()))
        .then(|| u64::from_str_radix(text, 16).ok())
        .flatten()
}

#[cfg(test)]
mod tests;
