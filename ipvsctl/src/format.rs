//! Everything `ipvsadm` 1.31 prints on stdout, byte for byte
//! (`docs/ipvsadm.md` §5, §7; the odd parts kept on purpose are listed in
//! `docs/ipvsadm-compat.md`).
//!
//! The functions are pure: they append to a `String` and do no I/O, except
//! name resolution, which ipvsadm itself does when `-n` is absent
//! (`gethostbyaddr` and `getservbyport`, §5.5). That goes through the
//! [`Resolver`] trait: the plain functions use [`SystemResolver`] (libc), the
//! `*_with` variants take any resolver (tests use a fake one). With
//! `numeric` set no lookup is made at all.
//!
//! # Interface (for `run.rs`)
//!
//! Whole commands:
//!
//! - [`list`] — `ipvsadm -L [...]` (and `ipvsadm` with no arguments) of every
//!   service: the version line, the title, then each service sorted unless
//!   `ListOptions::sort` is false (`--nosort`). `table` is in the kernel's
//!   dump order, each service with its destinations in dump order.
//! - [`list_one`] — `ipvsadm -L -t|-u|--sctp-service|-f ...` (§5.7): no
//!   version line.
//! - [`save`] — `ipvsadm -S [-n]` (§7); always sorted.
//! - [`timeouts`] — `ipvsadm -L --timeout` (§5.8).
//! - [`daemons`] — `ipvsadm -L --daemon` (§5.9).
//! - [`connections`] — `ipvsadm -L -c` from the contents of
//!   `/proc/net/ip_vs_conn` (§5.10). On `Err` the caller must still write
//!   what was appended to `out` before it (ipvsadm had printed it), then
//!   print [`ConnectionsError::message`] if any and exit 1. If the file
//!   cannot be opened the caller prints [`CANNOT_OPEN_CONNECTIONS`] and exits
//!   1.
//!
//! Pieces, for callers that print as they fetch, like ipvsadm does (a failed
//! destination dump leaves the earlier services on stdout, §5.1 and §7):
//! [`version`], [`title`], [`sort_services`] / [`sort_destinations`] (the
//! glibc merge sort with ipvsadm's comparators, §5.6), [`service_entry`]
//! (one service and its destinations, sorted or not, for `-L`) and
//! [`save_entry`] (the same for `-S`). The precedence of `--stats` over
//! `--rate` and so on (§5.2) is the command line's business: it picks one
//! [`ListKind`].

use std::ffi::{CStr, CString};
use std::fmt::Write as _;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::Mutex;

use ipvs::{
    Destination, Family, Forwarding, Info, Protocol, Service, ServiceFlags, ServiceKey, Statistics,
    SyncDaemon, SyncState, Timeouts, TunnelChecksum, TunnelKind,
};

/// Which `-L` listing (§5.2: one of them wins when several are given).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ListKind {
    #[default]
    Default,
    /// `--stats`
    Stats,
    /// `--rate`
    Rate,
    /// `--thresholds`
    Thresholds,
    /// `--persistent-conn`
    PersistentConnections,
    /// `--tun-info`
    TunnelInfo,
}

/// How to list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ListOptions {
    pub kind: ListKind,
    /// `-n`: no name lookups.
    pub numeric: bool,
    /// `--exact`: counters in full (`--stats` and `--rate` only).
    pub exact: bool,
    /// false with `--nosort`: the kernel's dump order.
    pub sort: bool,
}

impl Default for ListOptions {
    fn default() -> Self {
        ListOptions {
            kind: ListKind::Default,
            numeric: false,
            exact: false,
            sort: true,
        }
    }
}

/// Name lookups, as ipvsadm does them without `-n` (§5.5).
pub trait Resolver {
    /// `gethostbyaddr(addr, 4|16, af)->h_name`, `None` when it fails.
    fn host_name(&self, address: IpAddr) -> Option<String>;
    /// `getservbyport(htons(port), protocol)->s_name`; `protocol` is `tcp`,
    /// `udp` or `sctp`.
    fn service_name(&self, port: u16, protocol: &str) -> Option<String>;
}

/// A resolver that never finds a name: the output is then the same as with
/// `-n`.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoResolver;

impl Resolver for NoResolver {
    fn host_name(&self, _: IpAddr) -> Option<String> {
        None
    }
    fn service_name(&self, _: u16, _: &str) -> Option<String> {
        None
    }
}

/// libc's `gethostbyaddr` and `getservbyport`, exactly the calls ipvsadm
/// makes (so `/etc/hosts`, DNS and `/etc/services` through NSS).
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemResolver;

/// Both functions return pointers into static storage.
static LIBC_NETDB: Mutex<()> = Mutex::new(());

unsafe extern "C" {
    fn gethostbyaddr(
        addr: *const libc::c_void,
        len: libc::socklen_t,
        kind: libc::c_int,
    ) -> *mut libc::hostent;
}

impl Resolver for SystemResolver {
    fn host_name(&self, address: IpAddr) -> Option<String> {
        let (bytes, family) = match address {
            IpAddr::V4(v4) => (v4.octets().to_vec(), libc::AF_INET),
            IpAddr::V6(v6) => (v6.octets().to_vec(), libc::AF_INET6),
        };
        let _guard = LIBC_NETDB.lock().unwrap_or_else(|e| e.into_inner());
        // SAFETY: `bytes` outlives the call and its length is passed; the
        // result is null or points to glibc's static hostent, read while
        // the lock is held.
        unsafe {
            let host = gethostbyaddr(bytes.as_ptr().cast(), bytes.len() as _, family);
            if host.is_null() || (*host).h_name.is_null() {
                return None;
            }
            Some(
                CStr::from_ptr((*host).h_name)
                    .to_string_lossy()
                    .into_owned(),
            )
        }
    }

    fn service_name(&self, port: u16, protocol: &str) -> Option<String> {
        let protocol = CString::new(protocol).ok()?;
        let _guard = LIBC_NETDB.lock().unwrap_or_else(|e| e.into_inner());
        // SAFETY: `protocol` is a valid C string; the result is null or
        // points to glibc's static servent, read while the lock is held.
        unsafe {
            let service = libc::getservbyport(libc::c_int::from(port.to_be()), protocol.as_ptr());
            if service.is_null() || (*service).s_name.is_null() {
                return None;
            }
            Some(
                CStr::from_ptr((*service).s_name)
                    .to_string_lossy()
                    .into_owned(),
            )
        }
    }
}

// ---------------------------------------------------------------------------
// Whole commands
// ---------------------------------------------------------------------------

/// `ipvsadm -L [...]` of every service, names resolved with libc unless
/// `options.numeric`.
pub fn list(
    info: &Info,
    table: &[(Service, Vec<Destination>)],
    options: &ListOptions,
    out: &mut String,
) {
    list_with(info, table, options, &SystemResolver, out);
}

/// [`list`] with a chosen resolver.
pub fn list_with(
    info: &Info,
    table: &[(Service, Vec<Destination>)],
    options: &ListOptions,
    resolver: &dyn Resolver,
    out: &mut String,
) {
    version(info, out);
    let order = if options.sort {
        glibc_msort_order(table, |a, b| compare_services(&a.0, &b.0))
    } else {
        (0..table.len()).collect()
    };
    title(options.kind, out);
    for index in order {
        let (service, destinations) = &table[index];
        service_entry(service, destinations, options, resolver, out);
    }
}

/// `ipvsadm -L` of one service (§5.7): like [`list`] without the version
/// line.
pub fn list_one(
    service: &Service,
    destinations: &[Destination],
    options: &ListOptions,
    out: &mut String,
) {
    list_one_with(service, destinations, options, &SystemResolver, out);
}

/// [`list_one`] with a chosen resolver.
pub fn list_one_with(
    service: &Service,
    destinations: &[Destination],
    options: &ListOptions,
    resolver: &dyn Resolver,
    out: &mut String,
) {
    title(options.kind, out);
    service_entry(service, destinations, options, resolver, out);
}

/// `ipvsadm -S [-n]` (§7).
pub fn save(table: &[(Service, Vec<Destination>)], numeric: bool, out: &mut String) {
    save_with(table, numeric, &SystemResolver, out);
}

/// [`save`] with a chosen resolver.
pub fn save_with(
    table: &[(Service, Vec<Destination>)],
    numeric: bool,
    resolver: &dyn Resolver,
    out: &mut String,
) {
    for index in glibc_msort_order(table, |a, b| compare_services(&a.0, &b.0)) {
        let (service, destinations) = &table[index];
        save_entry(service, destinations, numeric, resolver, out);
    }
}

/// `ipvsadm -L --timeout` (§5.8).
pub fn timeouts(timeouts: &Timeouts, out: &mut String) {
    // `%d`: values above INT_MAX would print negative (the kernel refuses
    // them anyway).
    let _ = writeln!(
        out,
        "Timeout (tcp tcpfin udp): {} {} {}",
        timeouts.tcp as i32, timeouts.tcp_fin as i32, timeouts.udp as i32
    );
}

/// `ipvsadm -L --daemon` (§5.9), in the kernel's order.
pub fn daemons(daemons: &[SyncDaemon], out: &mut String) {
    for daemon in daemons {
        let state = match daemon.state {
            SyncState::Master => "master",
            SyncState::Backup => "backup",
        };
        let _ = write!(
            out,
            "{state} sync daemon (mcast={}, syncid={}",
            daemon.interface, daemon.sync_id as i32
        );
        if let Some(max_length) = daemon.max_length.filter(|v| *v != 0) {
            let _ = write!(out, ", maxlen={max_length}");
        }
        if let Some(group) = daemon.group {
            let _ = write!(out, ", group={}", inet_ntop(group));
        }
        if let Some(port) = daemon.port.filter(|v| *v != 0) {
            let _ = write!(out, ", port={port}");
        }
        if let Some(ttl) = daemon.ttl.filter(|v| *v != 0) {
            let _ = write!(out, ", ttl={ttl}");
        }
        out.push_str(")\n");
    }
}

/// The file `-L -c` reads.
pub const CONNECTIONS_FILE: &str = "/proc/net/ip_vs_conn";
/// What ipvsadm prints (stderr, exit 1) when [`CONNECTIONS_FILE`] cannot be
/// opened.
pub const CANNOT_OPEN_CONNECTIONS: &str = "cannot open file /proc/net/ip_vs_conn";

/// Why `-L -c` stopped; both exit 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConnectionsError {
    /// The file is empty: nothing was printed.
    Empty,
    /// A line with no field at all (`sscanf` returned -1): ipvsadm calls
    /// `exit(1)` with no message, the entries before it already printed.
    BlankLine,
}

impl ConnectionsError {
    /// The stderr line (without `\n`), if ipvsadm prints one.
    pub fn message(&self) -> Option<&'static str> {
        match self {
            ConnectionsError::Empty => Some("unexpected input from /proc/net/ip_vs_conn"),
            ConnectionsError::BlankLine => None,
        }
    }
}

impl std::fmt::Display for ConnectionsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(
            self.message()
                .unwrap_or("blank line in /proc/net/ip_vs_conn"),
        )
    }
}

impl std::error::Error for ConnectionsError {}

/// `ipvsadm -L -c [--persistent-conn]` (§5.10) from the contents of
/// `/proc/net/ip_vs_conn` (`&str`, `&[u8]` or `Vec<u8>`), names resolved
/// with libc unless `numeric`.
pub fn connections(
    proc_text: impl AsRef<[u8]>,
    numeric: bool,
    persistent: bool,
    out: &mut String,
) -> Result<(), ConnectionsError> {
    connections_with(proc_text, numeric, persistent, &SystemResolver, out)
}

/// [`connections`] with a chosen resolver.
pub fn connections_with(
    proc_text: impl AsRef<[u8]>,
    numeric: bool,
    persistent: bool,
    resolver: &dyn Resolver,
    out: &mut String,
) -> Result<(), ConnectionsError> {
    let mut lines = FgetsLines::new(proc_text.as_ref());
    // The kernel's header line is read and dropped.
    if lines.next().is_none() {
        return Err(ConnectionsError::Empty);
    }
    out.push_str("IPVS connection entries\n");
    if persistent {
        out.push_str(
            "pro expire state       source             virtual            destination        pe name          pe_data\n",
        );
    } else {
        out.push_str("pro expire state       source             virtual            destination\n");
    }
    let names = Names { numeric, resolver };
    for line in lines {
        connection_line(line, persistent, &names, out)?;
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// Pieces of the listings
// ---------------------------------------------------------------------------

/// `IP Virtual Server version 1.2.1 (size=4096)` (§5.1).
pub fn version(info: &Info, out: &mut String) {
    let _ = writeln!(
        out,
        "IP Virtual Server version {}.{}.{} (size={})",
        info.version.major,
        info.version.minor,
        info.version.patch,
        info.connection_table_size as i32
    );
}

/// The title lines of `-L` (`print_title`, §5.2).
pub fn title(kind: ListKind, out: &mut String) {
    out.push_str(match kind {
        ListKind::Stats => {
            "Prot LocalAddress:Port               Conns   InPkts  OutPkts  InBytes OutBytes\n  -> RemoteAddress:Port\n"
        }
        ListKind::Rate => {
            "Prot LocalAddress:Port                 CPS    InPPS   OutPPS    InBPS   OutBPS\n  -> RemoteAddress:Port\n"
        }
        ListKind::Thresholds => {
            "Prot LocalAddress:Port            Uthreshold Lthreshold ActiveConn InActConn \n  -> RemoteAddress:Port\n"
        }
        ListKind::PersistentConnections => {
            "Prot LocalAddress:Port            Weight    PersistConn ActiveConn InActConn \n  -> RemoteAddress:Port\n"
        }
        ListKind::TunnelInfo => {
            "Prot LocalAddress:Port Scheduler Flags\n  -> RemoteAddress:Port           Forward TunnelInfo    Weight ActiveConn InActConn\n"
        }
        ListKind::Default => {
            "Prot LocalAddress:Port Scheduler Flags\n  -> RemoteAddress:Port           Forward Weight ActiveConn InActConn\n"
        }
    });
}

/// One service of `-L` and its destinations (`print_service_entry`, §5.3,
/// §5.4); the destinations are sorted unless `options.sort` is false.
pub fn service_entry(
    service: &Service,
    destinations: &[Destination],
    options: &ListOptions,
    resolver: &dyn Resolver,
    out: &mut String,
) {
    let names = Names {
        numeric: options.numeric,
        resolver,
    };
    let protocol = protocol_number(service);
    let mut svc_name = match service.key {
        ServiceKey::Fwmark { family, mark } => match family {
            Family::Inet => format!("FWM  {}", mark as i32),
            Family::Inet6 => format!("FWM  {} IPv6", mark as i32),
        },
        ServiceKey::Address {
            protocol: proto,
            address,
            port,
        } => {
            let name = match proto {
                Protocol::Tcp => "TCP",
                Protocol::Udp => "UDP",
                Protocol::Sctp => "SCTP",
                Protocol::Other(_) => "?",
            };
            let mut svc_name = String::new();
            pad_right(&mut svc_name, name, 4);
            svc_name.push(' ');
            svc_name.push_str(&names.addrport(address, port, protocol));
            if address.is_ipv4() {
                truncate_bytes(&mut svc_name, 33);
            }
            svc_name
        }
    };
    let exact = options.exact;
    match options.kind {
        ListKind::Stats | ListKind::Rate => {
            pad_right(out, &svc_name, 33);
            let stats = service.statistics.as_deref().copied().unwrap_or_default();
            let values = if options.kind == ListKind::Stats {
                counters(&stats)
            } else {
                rates(&stats)
            };
            for value in values {
                largenum(out, value, exact);
            }
        }
        _ => {
            svc_name.push(' ');
            svc_name.push_str(&service.scheduler);
            out.push_str(&svc_name);
            if has_sched_flags(service.flags) {
                out.push_str(" (");
                out.push_str(&sched_flags(service));
                out.push(')');
            }
            if service.flags.contains(ServiceFlags::PERSISTENT) {
                let _ = write!(out, " persistent {}", service.timeout);
                if let Some(mask) = netmask_text(service) {
                    let _ = write!(out, " mask {mask}");
                }
                if let Some(engine) = persistence_engine(service) {
                    let _ = write!(out, " pe {engine}");
                }
            }
            if service.flags.contains(ServiceFlags::ONE_PACKET) {
                out.push_str(" ops");
            }
        }
    }
    out.push('\n');

    let order = if options.sort {
        glibc_msort_order(destinations, compare_destinations)
    } else {
        (0..destinations.len()).collect()
    };
    for index in order {
        let dest = &destinations[index];
        let mut dname = names.addrport(dest.address, dest.port, protocol);
        if dest.address.is_ipv4() {
            truncate_bytes(&mut dname, 28);
        }
        let counts = dest.counters.unwrap_or_default();
        out.push_str("  -> ");
        pad_right(out, &dname, 28);
        match options.kind {
            ListKind::Stats => {
                for value in dest_counters(dest) {
                    largenum(out, value, exact);
                }
            }
            ListKind::Rate => {
                let [cps, inpps, outpps, inbps, outbps] = dest_rates(dest);
                let _ = write!(out, " {cps:>8} {inpps:>8} {outpps:>8}");
                largenum(out, inbps, exact);
                largenum(out, outbps, exact);
            }
            ListKind::Thresholds => {
                let _ = write!(
                    out,
                    " {:<10} {:<10} {:<10} {:<10}",
                    dest.upper_threshold, dest.lower_threshold, counts.active, counts.inactive
                );
            }
            ListKind::PersistentConnections => {
                let _ = write!(
                    out,
                    " {:<9} {:<11} {:<10} {:<10}",
                    dest.weight, counts.persistent, counts.active, counts.inactive
                );
            }
            ListKind::TunnelInfo => {
                out.push(' ');
                pad_right(out, forwarding_name(dest.forwarding), 7);
                out.push(' ');
                pad_right(out, &tunnel_info(dest.forwarding), 13);
                let _ = write!(
                    out,
                    " {:<6} {:<10} {:<10}",
                    dest.weight as i32, counts.active, counts.inactive
                );
            }
            ListKind::Default => {
                out.push(' ');
                pad_right(out, forwarding_name(dest.forwarding), 7);
                let _ = write!(
                    out,
                    " {:<6} {:<10} {:<10}",
                    dest.weight as i32, counts.active, counts.inactive
                );
            }
        }
        out.push('\n');
    }
}

/// One service of `-S` and its destinations, sorted (§7).
pub fn save_entry(
    service: &Service,
    destinations: &[Destination],
    numeric: bool,
    resolver: &dyn Resolver,
    out: &mut String,
) {
    let names = Names { numeric, resolver };
    let protocol = protocol_number(service);
    let svc_name = match service.key {
        ServiceKey::Fwmark { family, mark } => match family {
            Family::Inet => format!("-f {}", mark as i32),
            Family::Inet6 => format!("-f {} -6", mark as i32),
        },
        ServiceKey::Address {
            protocol: proto,
            address,
            port,
        } => {
            let option = match proto {
                Protocol::Tcp => "-t",
                Protocol::Udp => "-u",
                Protocol::Sctp => "--sctp-service",
                Protocol::Other(_) => "--xxx-service",
            };
            format!("{option} {}", names.addrport(address, port, protocol))
        }
    };
    let _ = write!(out, "-A {svc_name} -s {}", service.scheduler);
    if service.flags.contains(ServiceFlags::PERSISTENT) {
        let _ = write!(out, " -p {}", service.timeout);
        if let Some(mask) = netmask_text(service) {
            let _ = write!(out, " -M {mask}");
        }
    }
    if let Some(engine) = persistence_engine(service) {
        let _ = write!(out, " --pe {engine}");
    }
    if service.flags.contains(ServiceFlags::ONE_PACKET) {
        out.push_str(" -o");
    }
    if has_sched_flags(service.flags) {
        out.push_str(" -b ");
        out.push_str(&sched_flags(service));
    }
    out.push('\n');

    for index in glibc_msort_order(destinations, compare_destinations) {
        let dest = &destinations[index];
        let dname = names.addrport(dest.address, dest.port, protocol);
        let _ = write!(
            out,
            "-a {svc_name} -r {dname} {} -w {}",
            forwarding_switch(dest.forwarding),
            dest.weight as i32
        );
        if let Forwarding::Tunnel(tunnel) = dest.forwarding {
            match tunnel.kind {
                TunnelKind::Gre => {
                    let _ = write!(
                        out,
                        " --tun-type gre {}",
                        tunnel_flag_option(tunnel.checksum)
                    );
                }
                TunnelKind::Gue => {
                    let _ = write!(
                        out,
                        " --tun-type gue --tun-port {} {}",
                        tunnel.port,
                        tunnel_flag_option(tunnel.checksum)
                    );
                }
                TunnelKind::Ipip => out.push_str(" --tun-type ipip"),
                TunnelKind::Other(_) => {}
            }
        }
        out.push('\n');
    }
}

// ---------------------------------------------------------------------------
// Sorting (§5.6)
// ---------------------------------------------------------------------------

/// `ipvs_cmp_services`: int32 differences, overflow included.
pub fn compare_services(a: &Service, b: &Service) -> i32 {
    let (a, b) = (SortKey::of_service(a), SortKey::of_service(b));
    let r = a.fwmark.wrapping_sub(b.fwmark) as i32;
    if r != 0 {
        return r;
    }
    let r = i32::from(a.family) - i32::from(b.family);
    if r != 0 {
        return r;
    }
    let r = i32::from(a.protocol) - i32::from(b.protocol);
    if r != 0 {
        return r;
    }
    let r = compare_words(a.family, &a.words, &b.words);
    if r != 0 {
        return r;
    }
    i32::from(a.port) - i32::from(b.port)
}

/// `ipvs_cmp_dests`: the address by the first dest's family only, then the
/// port.
pub fn compare_destinations(a: &Destination, b: &Destination) -> i32 {
    let family = a.family().to_raw();
    let r = compare_words(family, &address_words(a.address), &address_words(b.address));
    if r != 0 {
        return r;
    }
    i32::from(a.port) - i32::from(b.port)
}

/// Sort services as `ipvsadm -L` does (unless `--nosort`).
pub fn sort_services(services: &mut [Service]) {
    glibc_msort(services, compare_services);
}

/// Sort destinations as ipvsadm does.
pub fn sort_destinations(destinations: &mut [Destination]) {
    glibc_msort(destinations, compare_destinations);
}

/// glibc 2.36's `qsort` (`msort`): a stable top-down merge sort that takes
/// from the left half when `cmp <= 0`. With a non-transitive comparator the
/// result depends on exactly this algorithm.
pub fn glibc_msort<T: Clone>(items: &mut [T], cmp: impl Fn(&T, &T) -> i32) {
    let order = glibc_msort_order(items, cmp);
    let sorted: Vec<T> = order.iter().map(|&i| items[i].clone()).collect();
    items.clone_from_slice(&sorted);
}

/// The permutation [`glibc_msort`] would apply: `order[k]` is the index of
/// the item that ends up at `k`.
pub fn glibc_msort_order<T>(items: &[T], cmp: impl Fn(&T, &T) -> i32) -> Vec<usize> {
    let mut order: Vec<usize> = (0..items.len()).collect();
    let mut tmp = Vec::with_capacity(items.len());
    msort(&mut order, &mut tmp, &|a, b| cmp(&items[a], &items[b]));
    order
}

fn msort(b: &mut [usize], tmp: &mut Vec<usize>, cmp: &dyn Fn(usize, usize) -> i32) {
    let n = b.len();
    if n <= 1 {
        return;
    }
    let n1 = n / 2;
    {
        let (b1, b2) = b.split_at_mut(n1);
        msort(b1, tmp, cmp);
        msort(b2, tmp, cmp);
    }
    tmp.clear();
    let (mut i, mut j) = (0, n1);
    while i < n1 && j < n {
        if cmp(b[i], b[j]) <= 0 {
            tmp.push(b[i]);
            i += 1;
        } else {
            tmp.push(b[j]);
            j += 1;
        }
    }
    // What is left of the right half is already in place.
    tmp.extend_from_slice(&b[i..n1]);
    b[..tmp.len()].copy_from_slice(tmp);
}

struct SortKey {
    fwmark: u32,
    family: u16,
    protocol: u16,
    words: [u32; 4],
    port: u16,
}

impl SortKey {
    fn of_service(service: &Service) -> Self {
        match service.key {
            ServiceKey::Address {
                protocol,
                address,
                port,
            } => SortKey {
                fwmark: 0,
                family: Family::of(&address).to_raw(),
                protocol: protocol.to_raw(),
                words: address_words(address),
                port,
            },
            // libipvs leaves protocol, address and port zero for marks.
            ServiceKey::Fwmark { family, mark } => SortKey {
                fwmark: mark,
                family: family.to_raw(),
                protocol: 0,
                words: [0; 4],
                port: 0,
            },
        }
    }
}

/// The `nf_inet_addr` as four host-order words (IPv4 first, zeros after).
fn address_words(address: IpAddr) -> [u32; 4] {
    match address {
        IpAddr::V4(v4) => [u32::from(v4), 0, 0, 0],
        IpAddr::V6(v6) => {
            let o = v6.octets();
            std::array::from_fn(|i| {
                u32::from_be_bytes([o[4 * i], o[4 * i + 1], o[4 * i + 2], o[4 * i + 3]])
            })
        }
    }
}

fn compare_words(family: u16, a: &[u32; 4], b: &[u32; 4]) -> i32 {
    if family == Family::Inet6.to_raw() {
        for i in 0..4 {
            let r = a[i].wrapping_sub(b[i]) as i32;
            if r != 0 {
                return r;
            }
        }
        0
    } else {
        a[0].wrapping_sub(b[0]) as i32
    }
}

// ---------------------------------------------------------------------------
// Numbers (§5.11)
// ---------------------------------------------------------------------------

/// `print_largenum`: 9 columns, scaled by 1000s at uneven steps, or in full
/// with `--exact` (always at least one leading space).
pub fn largenum(out: &mut String, value: u64, exact: bool) {
    let _ = if exact {
        write!(out, " {value:>8}")
    } else if value < 100_000_000 {
        write!(out, "{value:>9}")
    } else if value < 1_000_000_000 {
        write!(out, "{:>8}K", value / 1_000)
    } else if value < 100_000_000_000 {
        write!(out, "{:>8}M", value / 1_000_000)
    } else if value < 100_000_000_000_000 {
        write!(out, "{:>8}G", value / 1_000_000_000)
    } else {
        write!(out, "{:>8}T", value / 1_000_000_000_000)
    };
}

fn counters(stats: &Statistics) -> [u64; 5] {
    [
        stats.connections,
        stats.incoming_packets,
        stats.outgoing_packets,
        stats.incoming_bytes,
        stats.outgoing_bytes,
    ]
}

fn rates(stats: &Statistics) -> [u64; 5] {
    [
        stats.connection_rate,
        stats.incoming_packet_rate,
        stats.outgoing_packet_rate,
        stats.incoming_byte_rate,
        stats.outgoing_byte_rate,
    ]
}

/// libipvs parses a destination's stats with its 32-bit parser: all but
/// the byte counters keep only their low 32 bits (§5.4).
fn dest_counters(dest: &Destination) -> [u64; 5] {
    let [conns, inpkts, outpkts, inbytes, outbytes] =
        counters(&dest.statistics.as_deref().copied().unwrap_or_default());
    [
        low32(conns),
        low32(inpkts),
        low32(outpkts),
        inbytes,
        outbytes,
    ]
}

fn dest_rates(dest: &Destination) -> [u64; 5] {
    rates(&dest.statistics.as_deref().copied().unwrap_or_default()).map(low32)
}

fn low32(value: u64) -> u64 {
    value & 0xffff_ffff
}

// ---------------------------------------------------------------------------
// Service and destination details
// ---------------------------------------------------------------------------

/// The protocol number ipvsadm has for a service: 0 for a firewall mark, so
/// its ports are never looked up.
fn protocol_number(service: &Service) -> u16 {
    match service.key {
        ServiceKey::Address { protocol, .. } => protocol.to_raw(),
        ServiceKey::Fwmark { .. } => 0,
    }
}

fn has_sched_flags(flags: ServiceFlags) -> bool {
    let any = ServiceFlags::SCHED_1 | ServiceFlags::SCHED_2 | ServiceFlags::SCHED_3;
    !(flags & any).is_empty()
}

/// `print_sched_flags`: the names joined by commas (possibly empty).
fn sched_flags(service: &Service) -> String {
    let flags = service.flags;
    let names: &[(ServiceFlags, &str)] = match service.scheduler.as_str() {
        "sh" => &[
            (ServiceFlags::SCHED_1, "sh-fallback"),
            (ServiceFlags::SCHED_2, "sh-port"),
        ],
        "mh" => &[
            (ServiceFlags::SCHED_1, "mh-fallback"),
            (ServiceFlags::SCHED_2, "mh-port"),
        ],
        _ => &[
            (ServiceFlags::SCHED_1, "flag-1"),
            (ServiceFlags::SCHED_2, "flag-2"),
            (ServiceFlags::SCHED_3, "flag-3"),
        ],
    };
    names
        .iter()
        .filter(|(flag, _)| flags.contains(*flag))
        .map(|(_, name)| *name)
        .collect::<Vec<_>>()
        .join(",")
}

/// The netmask as `-L`/`-S` show it, when it is not the full one: dotted
/// (`inet_ntoa`) for IPv4 services, `%i` of the raw value for IPv6 ones.
fn netmask_text(service: &Service) -> Option<String> {
    let raw = service.netmask.to_raw();
    match service.key.family() {
        Family::Inet => (raw != 0xffff_ffff).then(|| Ipv4Addr::from(raw.to_ne_bytes()).to_string()),
        Family::Inet6 => (raw != 128).then(|| (raw as i32).to_string()),
    }
}

fn persistence_engine(service: &Service) -> Option<&str> {
    service
        .persistence_engine
        .as_deref()
        .filter(|engine| !engine.is_empty())
}

/// `fwd_name`: glibc prints a NULL `%s` as `(null)`.
fn forwarding_name(forwarding: Forwarding) -> &'static str {
    match forwarding.method() {
        0 => "Masq",
        1 => "Local",
        2 => "Tunnel",
        3 => "Route",
        _ => "(null)",
    }
}

/// `fwd_switch`: `Local` is saved as `-g`.
fn forwarding_switch(forwarding: Forwarding) -> &'static str {
    match forwarding.method() {
        0 => "-m",
        1 | 3 => "-g",
        2 => "-i",
        _ => "(null)",
    }
}

/// Index into ipvsadm's `{ "-c", "+c", "r+c" }` by the flags value. Values
/// past the array are out-of-bounds reads in ipvsadm; ipvsctl shows what the
/// kernel does with them (CSUM tested first, then REMCSUM).
pub(crate) fn tunnel_flag_index(checksum: TunnelChecksum) -> usize {
    let raw = checksum.to_raw();
    match raw {
        0..=2 => usize::from(raw),
        _ if raw & 1 != 0 => 1,
        _ if raw & 2 != 0 => 2,
        _ => 0,
    }
}

fn tunnel_flag_option(checksum: TunnelChecksum) -> &'static str {
    ["--tun-nocsum", "--tun-csum", "--tun-remcsum"][tunnel_flag_index(checksum)]
}

/// `fwd_tun_info`, cut to 15 characters like its 16-byte buffer.
fn tunnel_info(forwarding: Forwarding) -> String {
    let Forwarding::Tunnel(tunnel) = forwarding else {
        return "n/a".to_string();
    };
    let flag = ["-c", "+c", "r+c"][tunnel_flag_index(tunnel.checksum)];
    let mut text = match tunnel.kind {
        TunnelKind::Ipip => "ipip".to_string(),
        TunnelKind::Gue => format!("gue:{}:{flag}", tunnel.port),
        TunnelKind::Gre => format!("gre:{flag}"),
        TunnelKind::Other(_) => "n/a".to_string(),
    };
    truncate_bytes(&mut text, 15);
    text
}

// ---------------------------------------------------------------------------
// Names (§5.5)
// ---------------------------------------------------------------------------

struct Names<'a> {
    numeric: bool,
    resolver: &'a dyn Resolver,
}

impl Names<'_> {
    /// `addrport_to_anyname`: at most 59 bytes (`snprintf` into 60).
    fn addrport(&self, address: IpAddr, port: u16, protocol: u16) -> String {
        let host = if self.numeric {
            None
        } else {
            self.resolver.host_name(address)
        }
        .unwrap_or_else(|| inet_ntop(address));
        let service = if self.numeric {
            None
        } else {
            let name = match i32::from(protocol) {
                libc::IPPROTO_TCP => Some("tcp"),
                libc::IPPROTO_UDP => Some("udp"),
                libc::IPPROTO_SCTP => Some("sctp"),
                _ => None,
            };
            name.and_then(|name| self.resolver.service_name(port, name))
        }
        .unwrap_or_else(|| port.to_string());
        let mut text = match address {
            IpAddr::V4(_) => format!("{host}:{service}"),
            IpAddr::V6(_) => format!("[{host}]:{service}"),
        };
        truncate_bytes(&mut text, 59);
        text
    }
}

/// glibc's `inet_ntop`: IPv6 as RFC 5952 except that an address with 96
/// leading zero bits (not `::` or `::1`-like) or `::ffff:` keeps its IPv4
/// tail dotted.
pub fn inet_ntop(address: IpAddr) -> String {
    match address {
        IpAddr::V4(v4) => v4.to_string(),
        IpAddr::V6(v6) => inet_ntop6(&v6),
    }
}

fn inet_ntop6(address: &Ipv6Addr) -> String {
    let words = address.segments();
    // The longest run of zero words (the first of equal ones), if >= 2.
    let (mut best_base, mut best_len) = (None, 0);
    let mut i = 0;
    while i < 8 {
        if words[i] == 0 {
            let start = i;
            while i < 8 && words[i] == 0 {
                i += 1;
            }
            if i - start > best_len {
                best_base = Some(start);
                best_len = i - start;
            }
        } else {
            i += 1;
        }
    }
    if best_len < 2 {
        best_base = None;
    }
    let mut text = String::new();
    let mut i = 0;
    while i < 8 {
        let in_run = best_base.is_some_and(|base| i >= base && i < base + best_len);
        if in_run {
            if best_base == Some(i) {
                text.push(':');
            }
            i += 1;
            continue;
        }
        if i != 0 {
            text.push(':');
        }
        if i == 6
            && best_base == Some(0)
            && (best_len == 6 || (best_len == 5 && words[5] == 0xffff))
        {
            let o = address.octets();
            let _ = write!(text, "{}", Ipv4Addr::new(o[12], o[13], o[14], o[15]));
            return text;
        }
        let _ = write!(text, "{:x}", words[i]);
        i += 1;
    }
    if best_base.is_some_and(|base| base + best_len == 8) {
        text.push(':');
    }
    text
}

// ---------------------------------------------------------------------------
// Connections (§5.10)
// ---------------------------------------------------------------------------

/// `fgets(buf, 256, fp)`: pieces of at most 255 bytes, each ending at the
/// first `\n` (kept).
struct FgetsLines<'a> {
    rest: &'a [u8],
}

impl<'a> FgetsLines<'a> {
    fn new(text: &'a [u8]) -> Self {
        FgetsLines { rest: text }
    }
}

impl<'a> Iterator for FgetsLines<'a> {
    type Item = &'a [u8];
    fn next(&mut self) -> Option<&'a [u8]> {
        if self.rest.is_empty() {
            return None;
        }
        let limit = self.rest.len().min(255);
        let end = self.rest[..limit]
            .iter()
            .position(|&b| b == b'\n')
            .map_or(limit, |p| p + 1);
        let (line, rest) = self.rest.split_at(end);
        self.rest = rest;
        Some(line)
    }
}

/// `print_conn` of one line.
fn connection_line(
    line: &[u8],
    persistent: bool,
    names: &Names<'_>,
    out: &mut String,
) -> Result<(), ConnectionsError> {
    let fields = scan_connection(line).ok_or(ConnectionsError::BlankLine)?;
    let text = |bytes: &[u8]| String::from_utf8_lossy(bytes).into_owned();
    let protocol_text = text(fields.protocol);
    let protocol = match protocol_text.as_str() {
        "TCP" => libc::IPPROTO_TCP as u16,
        "UDP" => libc::IPPROTO_UDP as u16,
        "SCTP" => libc::IPPROTO_SCTP as u16,
        _ => 0,
    };
    let client_text = text(fields.client);
    let virtual_text = text(fields.virtual_);
    let (client, virtual_) = if let Some(client) = inet_pton6(&client_text) {
        let virtual_ = inet_pton6(&virtual_text).unwrap_or(Ipv6Addr::UNSPECIFIED);
        (IpAddr::V6(client), IpAddr::V6(virtual_))
    } else if let Some(client) = inet_pton4(&client_text) {
        let virtual_ = inet_pton4(&virtual_text).unwrap_or(Ipv4Addr::UNSPECIFIED);
        (IpAddr::V4(client), IpAddr::V4(virtual_))
    } else {
        (
            IpAddr::V4(Ipv4Addr::from(strtoul16(&client_text) as u32)),
            IpAddr::V4(Ipv4Addr::from(strtoul16(&virtual_text) as u32)),
        )
    };
    let dest_text = text(fields.dest);
    let dest = if let Some(dest) = inet_pton6(&dest_text) {
        IpAddr::V6(dest)
    } else if let Some(dest) = inet_pton4(&dest_text) {
        IpAddr::V4(dest)
    } else {
        IpAddr::V4(Ipv4Addr::from(strtoul16(&dest_text) as u32))
    };
    let cname = names.addrport(client, fields.client_port, protocol);
    let vname = names.addrport(virtual_, fields.virtual_port, protocol);
    let dname = names.addrport(dest, fields.dest_port, protocol);
    // `expires` is an unsigned int read with %d.
    let expires = fields.expires as u32;
    let expire = format!("{:02}:{:02}", (expires / 60) as i32, (expires % 60) as i32);
    let state = text(fields.state);

    pad_right(out, &protocol_text, 3);
    out.push(' ');
    pad_right(out, &expire, 6);
    out.push(' ');
    pad_right(out, &state, 11);
    out.push(' ');
    pad_right(out, &cname, 18);
    out.push(' ');
    pad_right(out, &vname, 18);
    out.push(' ');
    if persistent && fields.count == 11 {
        pad_right(out, &dname, 16);
        out.push(' ');
        pad_right(out, &text(fields.pe_name), 18);
        out.push(' ');
        out.push_str(&text(fields.pe_data));
    } else {
        out.push_str(&dname);
    }
    out.push('\n');
    Ok(())
}

/// What `sscanf(buf, "%s %s %hX %s %hX %s %hX %s %d %s %s", ...)` fills.
/// Fields past `count` are left as ipvsadm's uninitialised variables would
/// be if they were zero.
#[derive(Default)]
struct ConnectionFields<'a> {
    count: usize,
    protocol: &'a [u8],
    client: &'a [u8],
    client_port: u16,
    virtual_: &'a [u8],
    virtual_port: u16,
    dest: &'a [u8],
    dest_port: u16,
    state: &'a [u8],
    expires: i32,
    pe_name: &'a [u8],
    pe_data: &'a [u8],
}

/// `None` where sscanf returns -1 (nothing but white space).
fn scan_connection(line: &[u8]) -> Option<ConnectionFields<'_>> {
    let mut scanner = Scanner { s: line, pos: 0 };
    let mut fields = ConnectionFields {
        protocol: scanner.string()?,
        count: 1,
        ..Default::default()
    };
    // Each step stops the scan at its first failure.
    let _ = (|| -> Option<()> {
        fields.client = scanner.string()?;
        fields.count = 2;
        fields.client_port = scanner.hex_u16()?;
        fields.count = 3;
        fields.virtual_ = scanner.string()?;
        fields.count = 4;
        fields.virtual_port = scanner.hex_u16()?;
        fields.count = 5;
        fields.dest = scanner.string()?;
        fields.count = 6;
        fields.dest_port = scanner.hex_u16()?;
        fields.count = 7;
        fields.state = scanner.string()?;
        fields.count = 8;
        fields.expires = scanner.decimal_i32()?;
        fields.count = 9;
        fields.pe_name = scanner.string()?;
        fields.count = 10;
        fields.pe_data = scanner.string()?;
        fields.count = 11;
        Some(())
    })();
    Some(fields)
}

/// A little of glibc's `sscanf`: white space in the format skips any white
/// space (`isspace`) in the input.
struct Scanner<'a> {
    s: &'a [u8],
    pos: usize,
}

fn is_c_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\x0b' | b'\x0c' | b'\r')
}

impl<'a> Scanner<'a> {
    fn skip_space(&mut self) {
        while self.pos < self.s.len() && is_c_space(self.s[self.pos]) {
            self.pos += 1;
        }
    }

    fn peek(&self) -> Option<u8> {
        self.s.get(self.pos).copied()
    }

    /// `%s`
    fn string(&mut self) -> Option<&'a [u8]> {
        self.skip_space();
        let start = self.pos;
        while self.pos < self.s.len() && !is_c_space(self.s[self.pos]) {
            self.pos += 1;
        }
        (self.pos > start).then(|| &self.s[start..self.pos])
    }

    /// An optional sign; true if negative.
    fn sign(&mut self) -> bool {
        match self.peek() {
            Some(b'-') => {
                self.pos += 1;
                true
            }
            Some(b'+') => {
                self.pos += 1;
                false
            }
            _ => false,
        }
    }

    /// `%hX`: strtoul-like base 16 with an optional `0x`, stored in 16 bits.
    fn hex_u16(&mut self) -> Option<u16> {
        self.skip_space();
        let negative = self.sign();
        let mut start = self.pos;
        // glibc takes `0x` whatever follows, the `0` counting as a digit.
        if self.peek() == Some(b'0') && matches!(self.s.get(self.pos + 1), Some(b'x' | b'X')) {
            self.pos += 2;
            start = self.pos - 1;
        }
        let mut value: u64 = 0;
        let mut overflow = false;
        while let Some(digit) = self.peek().and_then(|b| (b as char).to_digit(16)) {
            match value
                .checked_mul(16)
                .and_then(|v| v.checked_add(u64::from(digit)))
            {
                Some(v) => value = v,
                None => overflow = true,
            }
            self.pos += 1;
        }
        if self.pos == start {
            return None;
        }
        if overflow {
            value = u64::MAX;
        } else if negative {
            value = value.wrapping_neg();
        }
        Some(value as u16)
    }

    /// `%d`: strtol, then stored in an int.
    fn decimal_i32(&mut self) -> Option<i32> {
        self.skip_space();
        let negative = self.sign();
        let start = self.pos;
        let mut value: i128 = 0;
        while let Some(digit) = self.peek().filter(u8::is_ascii_digit) {
            value = (value * 10 + i128::from(digit - b'0')).min(i128::from(u64::MAX));
            self.pos += 1;
        }
        if self.pos == start {
            return None;
        }
        let value = if negative { -value } else { value };
        let value = value.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64;
        Some(value as i32)
    }
}

/// glibc `inet_pton(AF_INET, ...)`: exactly four decimal parts, no leading
/// zeros, each at most 255.
fn inet_pton4(text: &str) -> Option<Ipv4Addr> {
    let parts: Vec<&str> = text.split('.').collect();
    if parts.len() != 4 {
        return None;
    }
    let mut octets = [0u8; 4];
    for (octet, part) in octets.iter_mut().zip(parts) {
        if part.is_empty()
            || part.len() > 3
            || !part.bytes().all(|b| b.is_ascii_digit())
            || (part.len() > 1 && part.starts_with('0'))
        {
            return None;
        }
        *octet = part.parse().ok()?;
    }
    Some(Ipv4Addr::from(octets))
}

/// `inet_pton(AF_INET6, ...)`.
fn inet_pton6(text: &str) -> Option<Ipv6Addr> {
    text.parse().ok()
}

/// `strtoul(text, NULL, 16)` on a 64-bit system (saturating at
/// `ULONG_MAX`).
fn strtoul16(text: &str) -> u64 {
    let mut scanner = Scanner {
        s: text.as_bytes(),
        pos: 0,
    };
    scanner.skip_space();
    let negative = scanner.sign();
    if scanner.peek() == Some(b'0') && matches!(scanner.s.get(scanner.pos + 1), Some(b'x' | b'X')) {
        scanner.pos += 2;
    }
    let mut value: u64 = 0;
    let mut any = false;
    while let Some(digit) = scanner.peek().and_then(|b| (b as char).to_digit(16)) {
        any = true;
        match value
            .checked_mul(16)
            .and_then(|v| v.checked_add(u64::from(digit)))
        {
            Some(v) => value = v,
            None => return u64::MAX,
        }
        scanner.pos += 1;
    }
    if !any {
        return 0;
    }
    if negative {
        value.wrapping_neg()
    } else {
        value
    }
}

// ---------------------------------------------------------------------------
// printf helpers
// ---------------------------------------------------------------------------

/// `%-Ns`: pad with spaces to `width` bytes (C counts bytes, not
/// characters); longer text is kept whole.
fn pad_right(out: &mut String, text: &str, width: usize) {
    out.push_str(text);
    for _ in text.len()..width {
        out.push(' ');
    }
}

/// `buf[n] = '\0'`: keep at most `n` bytes (backing off to a character
/// boundary, which only matters for non-ASCII host names).
fn truncate_bytes(text: &mut String, n: usize) {
    if text.len() > n {
        let mut end = n;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
    }
}

#[cfg(test)]
mod tests;
