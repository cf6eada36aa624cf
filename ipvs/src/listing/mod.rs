//! The kernel's own listing of IPVS, `/proc/net/ip_vs`: every service of
//! the reader's network namespace with its destinations' addresses,
//! forwarding methods, weights and connection counts, in one read.
//!
//! Over generic netlink the same destinations take one dump per service
//! (the kernel has no dump of all destinations), which for a large table
//! costs far more than the listing itself: 1,000 services take 1,000
//! dumps. The file holds exactly what `ipvsadm -L` prints for a
//! destination, and nothing else: no thresholds, tunnel parameters,
//! persistent-connection counts or statistics, and it names forwarding
//! methods 4 to 7 `Masq`, like 0. It identifies services less precisely
//! than netlink too: a firewall-mark line does not say its family, and an
//! IPv6 service line omits the one-packet flag. So it is read only to
//! complete services read over netlink ([`match_services`]), never as a
//! source of services.
//!
//! The format, from `ip_vs_info_seq_show` in `net/netfilter/ipvs/
//! ip_vs_ctl.c` (Linux 6.1), three header lines then per service:
//!
//! ```text
//! TCP  0A000001:0050 rr                        (IPv4: address and port in hex)
//! UDP  0A000002:0035 wlc ops persistent 75000 FFFFFF00
//! TCP  [2001:0db8:0000:0000:0000:0000:0000:0001]:01BB wrr persistent 90000 80000000
//! FWM  0000002A lc
//!   -> C0A80101:1F90      Masq    3      0          0
//! ```
//!
//! The persistence timeout there is in jiffies, not seconds.

#[cfg(test)]
mod tests;

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use crate::{Protocol, Service, ServiceFlags, ServiceKey};

/// Where the kernel prints the listing, for the reading thread's namespace.
pub const LISTING_FILE: &str = "/proc/thread-self/net/ip_vs";

/// A listing that cannot be read or understood.
#[derive(Debug, thiserror::Error)]
pub enum ListingError {
    #[error("cannot read {LISTING_FILE}: {0}")]
    Read(#[source] std::io::Error),
    #[error("{LISTING_FILE} line {line}: {reason}: {text:?}")]
    Line {
        /// Counted from 1, the header included.
        line: usize,
        reason: &'static str,
        text: String,
    },
}

/// How a service line identifies its service.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ListedKey {
    Address {
        protocol: Protocol,
        address: IpAddr,
        port: u16,
    },
    /// The family is not printed.
    Fwmark(u32),
}

/// A service line and the destination lines under it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListedService {
    pub key: ListedKey,
    pub scheduler: String,
    /// `ops`, printed for IPv4 and firewall-mark services only.
    pub one_packet: bool,
    /// `persistent TIMEOUT MASK`, the timeout in jiffies.
    pub persistent: bool,
    pub destinations: Vec<ListedDestination>,
}

/// How the kernel names a destination's forwarding method.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListedForwarding {
    /// `Masq`: method 0, and also 4 to 7, which the kernel names the same.
    Masquerade,
    Local,
    Tunnel,
    Route,
}

impl ListedForwarding {
    /// How the kernel's text names `forwarding` (`ip_vs_fwd_name`).
    pub fn of(forwarding: &crate::Forwarding) -> Self {
        match forwarding {
            crate::Forwarding::Local => ListedForwarding::Local,
            crate::Forwarding::Tunnel(_) => ListedForwarding::Tunnel,
            crate::Forwarding::Route => ListedForwarding::Route,
            // The kernel names every other method Masq.
            crate::Forwarding::Masquerade
            | crate::Forwarding::Bypass
            | crate::Forwarding::Other(_) => ListedForwarding::Masquerade,
        }
    }
}

/// A destination line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ListedDestination {
    pub address: IpAddr,
    pub port: u16,
    pub forwarding: ListedForwarding,
    /// Printed as a signed int, as the kernel keeps it.
    pub weight: i32,
    pub active_connections: i32,
    pub inactive_connections: i32,
}

impl ListedDestination {
    /// The destination as far as the line tells: a tunnel of unknown kind
    /// reads as IPIP, thresholds as 0, no persistent-connection count and
    /// no statistics.
    pub fn to_destination(&self) -> crate::Destination {
        let forwarding = match self.forwarding {
            ListedForwarding::Masquerade => crate::Forwarding::Masquerade,
            ListedForwarding::Local => crate::Forwarding::Local,
            ListedForwarding::Tunnel => crate::Forwarding::Tunnel(crate::Tunnel::default()),
            ListedForwarding::Route => crate::Forwarding::Route,
        };
        crate::Destination {
            address: self.address,
            port: self.port,
            forwarding,
            // The kernel prints these ints with %d; ipvsadm prints the same
            // bits.
            weight: self.weight as u32,
            upper_threshold: 0,
            lower_threshold: 0,
            counters: Some(crate::ConnectionCounters {
                active: self.active_connections as u32,
                inactive: self.inactive_connections as u32,
                persistent: 0,
            }),
            statistics: None,
        }
    }
}

impl ListedService {
    /// Whether this line may be `service`: the same key, scheduler and
    /// persistence, and the same one-packet flag where the line shows it.
    fn may_be(&self, service: &Service) -> bool {
        let key_matches = match (self.key, service.key) {
            (
                ListedKey::Address {
                    protocol,
                    address,
                    port,
                },
                ServiceKey::Address {
                    protocol: service_protocol,
                    address: service_address,
                    port: service_port,
                },
            ) => {
                protocol.to_raw() == service_protocol.to_raw()
                    && address == service_address
                    && port == service_port
            }
            (
                ListedKey::Fwmark(mark),
                ServiceKey::Fwmark {
                    mark: service_mark, ..
                },
            ) => mark == service_mark,
            _ => false,
        };
        let shows_one_packet =
            !matches!(self.key, ListedKey::Address { address, .. } if address.is_ipv6());
        key_matches
            && self.scheduler == service.scheduler
            && self.persistent == service.flags.contains(ServiceFlags::PERSISTENT)
            && (!shows_one_packet
                || self.one_packet == service.flags.contains(ServiceFlags::ONE_PACKET))
    }
}

/// For each of `services` (read over netlink), the destinations the listing
/// shows under it, or None where no line, or more than one, may be that
/// service: it was added, changed or deleted between the two reads, or it is
/// a firewall-mark service whose mark another family's service shares with
/// the same scheduler and flags. The caller reads those over netlink.
pub fn match_services(
    services: &[Service],
    listing: Vec<ListedService>,
) -> Vec<Option<Vec<ListedDestination>>> {
    use std::collections::HashMap;
    // Lines by key; a firewall mark can have two (one per family).
    let mut by_key: HashMap<ListedKey, Vec<usize>> = HashMap::with_capacity(listing.len());
    for (index, listed) in listing.iter().enumerate() {
        by_key.entry(listed.key).or_default().push(index);
    }
    // The one line each service may be, if there is exactly one.
    let choices: Vec<Option<usize>> = services
        .iter()
        .map(|service| {
            let lines = by_key.get(&ListedKey::of(&service.key))?;
            let mut fitting = lines
                .iter()
                .copied()
                .filter(|&index| listing[index].may_be(service));
            match (fitting.next(), fitting.next()) {
                (Some(index), None) => Some(index),
                _ => None,
            }
        })
        .collect();
    // A line that two services may be belongs to neither.
    let mut takers = vec![0_usize; listing.len()];
    for &index in choices.iter().flatten() {
        takers[index] += 1;
    }
    let mut listing: Vec<Option<ListedService>> = listing.into_iter().map(Some).collect();
    choices
        .into_iter()
        .map(|choice| {
            let index = choice.filter(|&index| takers[index] == 1)?;
            listing[index].take().map(|listed| listed.destinations)
        })
        .collect()
}

impl ListedKey {
    fn of(key: &ServiceKey) -> Self {
        match *key {
            ServiceKey::Address {
                protocol,
                address,
                port,
            } => ListedKey::Address {
                protocol,
                address,
                port,
            },
            ServiceKey::Fwmark { mark, .. } => ListedKey::Fwmark(mark),
        }
    }
}

/// Reads the listing of the calling thread's network namespace.
///
/// The kernel's position in the listing counts the services of every
/// namespace (they share one table) while it walks on, but only the
/// reader's when it resumes at the next `read`: a listing that takes
/// several reads skips some of the reader's services when other namespaces
/// have services too. Each read returns at most a page of text whatever
/// the buffer, so the first read gets a large buffer (not the small probe
/// `std::fs::read` starts with), which holds a small table whole; the
/// services a larger one loses are left unmatched ([`match_services`]).
pub fn read() -> Result<Vec<ListedService>, ListingError> {
    use std::io::Read;
    let mut file = std::fs::File::open(LISTING_FILE).map_err(ListingError::Read)?;
    let mut text = Vec::new();
    // One zeroed chunk, read into at each turn: growing `text` by a zeroed
    // chunk at each read was a byte loop in a debug build, 90% of the
    // instructions of `ipvsctl -L -n` there (5.6 of 6.3 million; 1.4 s a
    // run in the lab, where the differential test runs it a thousand
    // times).
    let mut chunk = vec![0; READ_SIZE];
    loop {
        match file.read(&mut chunk) {
            Ok(0) => break,
            Ok(read) => text.extend_from_slice(&chunk[..read]),
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(error) => return Err(ListingError::Read(error)),
        }
    }
    parse(&text)
}

/// Bytes asked for at each read.
const READ_SIZE: usize = 64 * 1024;

/// Parses the listing's text.
pub fn parse(text: &[u8]) -> Result<Vec<ListedService>, ListingError> {
    let mut services: Vec<ListedService> = Vec::new();
    for (index, line) in text.split(|&byte| byte == b'\n').enumerate() {
        let number = index + 1;
        let failure = |reason| ListingError::Line {
            line: number,
            reason,
            text: String::from_utf8_lossy(line).into_owned(),
        };
        // The three header lines: a version, then the two column titles.
        if index < 3 {
            let expected: &[u8] = match index {
                0 => b"IP Virtual Server version ",
                1 => b"Prot LocalAddress:Port",
                _ => b"  -> RemoteAddress:Port",
            };
            if !line.starts_with(expected) {
                return Err(failure("not the header the kernel prints"));
            }
            continue;
        }
        if line.is_empty() {
            continue;
        }
        let line_text = std::str::from_utf8(line).map_err(|_| failure("not text"))?;
        if let Some(rest) = line_text.strip_prefix("  -> ") {
            let destination =
                parse_destination(rest).ok_or_else(|| failure("not a destination"))?;
            services
                .last_mut()
                .ok_or_else(|| failure("a destination before any service"))?
                .destinations
                .push(destination);
        } else {
            services.push(parse_service(line_text).ok_or_else(|| failure("not a service"))?);
        }
    }
    Ok(services)
}

fn parse_service(line: &str) -> Option<ListedService> {
    let mut words = line.split_ascii_whitespace();
    let kind = words.next()?;
    let key = if kind == "FWM" {
        ListedKey::Fwmark(u32::from_str_radix(words.next()?, 16).ok()?)
    } else {
        let (address, port) = parse_address_port(words.next()?)?;
        ListedKey::Address {
            protocol: protocol_named(kind)?,
            address,
            port,
        }
    };
    let scheduler = words.next()?.to_owned();
    let mut one_packet = false;
    let mut persistent = false;
    while let Some(word) = words.next() {
        match word {
            "ops" if !persistent => one_packet = true,
            "persistent" => {
                // The timeout in jiffies, then the netmask in hex.
                words.next()?.parse::<i64>().ok()?;
                u32::from_str_radix(words.next()?, 16).ok()?;
                persistent = true;
            }
            _ => return None,
        }
    }
    Some(ListedService {
        key,
        scheduler,
        one_packet,
        persistent,
        destinations: Vec::new(),
    })
}

fn parse_destination(line: &str) -> Option<ListedDestination> {
    let mut words = line.split_ascii_whitespace();
    let (address, port) = parse_address_port(words.next()?)?;
    let forwarding = match words.next()? {
        "Masq" => ListedForwarding::Masquerade,
        "Local" => ListedForwarding::Local,
        "Tunnel" => ListedForwarding::Tunnel,
        "Route" => ListedForwarding::Route,
        _ => return None,
    };
    let mut number = || words.next()?.parse::<i32>().ok();
    let destination = ListedDestination {
        address,
        port,
        forwarding,
        weight: number()?,
        active_connections: number()?,
        inactive_connections: number()?,
    };
    words.next().is_none().then_some(destination)
}

/// `0A000001:0050` or `[2001:0db8:...:0001]:01BB`, all hexadecimal.
fn parse_address_port(word: &str) -> Option<(IpAddr, u16)> {
    let (address, port) = word.rsplit_once(':')?;
    let port = u16::from_str_radix(port, 16).ok()?;
    let address = match address.strip_prefix('[') {
        Some(inner) => IpAddr::V6(inner.strip_suffix(']')?.parse::<Ipv6Addr>().ok()?),
        None if address.len() == 8 => {
            IpAddr::V4(Ipv4Addr::from(u32::from_str_radix(address, 16).ok()?))
        }
        None => return None,
    };
    Some((address, port))
}

/// `ip_vs_proto_name`'s names.
fn protocol_named(name: &str) -> Option<Protocol> {
    let number = match name {
        "TCP" => return Some(Protocol::Tcp),
        "UDP" => return Some(Protocol::Udp),
        "SCTP" => return Some(Protocol::Sctp),
        "IP" => 0,
        "ICMP" => 1,
        "ICMPv6" => 58,
        other => other.strip_prefix("IP_")?.parse().ok()?,
    };
    Some(Protocol::Other(number))
}
