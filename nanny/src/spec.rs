//! What to check, in nanny's own terms, and the plan of unique checks.
//!
//! The drivers only see these types, never the configuration model, so the
//! model can change shape without touching them. [`CheckSpec`] is also the
//! deduplication key: identical checks of one endpoint configured under
//! several virtual servers (keepalived runs one each) run once here, and
//! their outcome feeds every subscriber ([`Plan`]).

use std::collections::HashMap;
use std::fmt;
use std::net::{IpAddr, SocketAddr};
use std::ops::RangeInclusive;
use std::time::Duration;

use fulcrum_config::model as config;
use serde::Serialize;

use crate::machine::{DownCadence, Timing};

/// Where a check connects, and from where.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Endpoint {
    /// `connect_ip`/`connect_port`, else the real server's.
    pub address: SocketAddr,
    pub bind_address: Option<IpAddr>,
    pub bind_port: Option<u16>,
    pub bind_interface: Option<String>,
    pub fwmark: Option<u32>,
}

/// HTTP version and connection handling of HTTP_GET/SSL_GET.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HttpVersion {
    /// `1.0`: keepalived's default.
    Http10,
    /// `1.0C`: 1.0 with `Connection: close`.
    Http10Close,
    /// `1.1` (always with `Connection: close`: one request per connection).
    Http11,
}

/// One `url { }` block.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct UrlSpec {
    pub path: String,
    /// The MD5 of the body.
    pub digest: Option<[u8; 16]>,
    /// Accepted status codes (keepalived's default: 200-299).
    pub status_codes: Vec<RangeInclusive<u16>>,
    /// The `Host` header; `None`: the connected address and port.
    pub virtualhost: Option<String>,
    pub regex: Option<RegexSpec>,
}

/// A url's `regex` (keepalived: PCRE2; nanny: the `regex` crate, which
/// has the same syntax without look-around and back-references).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RegexSpec {
    pub pattern: String,
    /// keepalived's `regex_options` that have an equivalent here.
    pub options: Vec<String>,
    /// `regex_no_match`: up when the body does *not* match.
    pub no_match: bool,
    /// The match must start at or after this offset of the body.
    pub min_offset: Option<u64>,
    /// The match must start before this offset of the body.
    pub max_offset: Option<u64>,
}

impl RegexSpec {
    /// Compiles the pattern with its options.
    pub fn compile(&self) -> Result<regex::bytes::Regex, String> {
        let mut builder = regex::bytes::RegexBuilder::new(&self.pattern);
        // PCRE2 without its utf option matches bytes, not characters.
        builder.unicode(false);
        for option in &self.options {
            match option.as_str() {
                "caseless" => builder.case_insensitive(true),
                "multiline" => builder.multi_line(true),
                "dotall" => builder.dot_matches_new_line(true),
                "extended" => builder.ignore_whitespace(true),
                "ungreedy" => builder.swap_greed(true),
                "utf" | "ucp" => builder.unicode(true),
                // No effect on what matches.
                "no_auto_capture" | "no_auto_possess" | "no_start_optimize"
                | "no_dotstar_anchor" | "auto_callout" | "never_backslash_c" => &mut builder,
                other => return Err(format!("regex option {other} has no equivalent")),
            };
        }
        builder.build().map_err(|error| error.to_string())
    }
}

impl UrlSpec {
    pub fn accepts(&self, status: u16) -> bool {
        self.status_codes
            .iter()
            .any(|range| range.contains(&status))
    }
}

/// TLS for SSL_GET.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TlsSpec {
    /// The server name sent (`enable_sni`: the virtualhost).
    pub server_name: Option<String>,
    /// keepalived never verifies certificates; off by default.
    pub verify: bool,
    /// The CA certificates (PEM) to verify against.
    pub ca_file: Option<String>,
    /// The `SSL` block's certificate (chain) and key files, PEM.
    pub client_certificate: Option<(String, String)>,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct HttpSpec {
    pub version: HttpVersion,
    pub tls: Option<TlsSpec>,
    pub urls: Vec<UrlSpec>,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct MiscSpec {
    /// `misc_path`, reviewed (`fulcrum-scripts`): whom it runs as, its
    /// program found; an unreviewed one does not run.
    pub script: config::Script,
    pub timeout: Duration,
    pub dynamic: bool,
}

/// UDP_CHECK's parameters.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct UdpSpec {
    /// `None`: a random payload at each attempt.
    pub payload: Option<Vec<u8>>,
    /// `Some` when a reply is required: the expected leading bytes, each
    /// nibble `None` for a wildcard.
    pub require_reply: Option<Vec<(Option<u8>, Option<u8>)>>,
    pub min_reply_length: u16,
    pub max_reply_length: u16,
}

/// SMTP_CHECK's parameters.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SmtpSpec {
    /// The HELO argument (keepalived's default: the host name).
    pub helo_name: String,
}

/// DNS_CHECK's query.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct DnsSpec {
    /// The query type's number (SOA, 6, by default).
    pub query_type: u16,
    /// The name queried ("." by default).
    pub name: String,
}

/// FILE_CHECK: a number in a file decides (keepalived's `track_file`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct FileSpec {
    pub path: String,
    pub weight: i32,
    pub reverse: bool,
}

/// BFD_CHECK: the state of a BFD session with `neighbor` decides
/// (keepalived's `bfd_instance`, which the check names).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct BfdSpec {
    /// The `bfd_instance`'s name.
    pub name: String,
    pub neighbor: IpAddr,
    /// `source_ip`: where packets go from, and which local address the
    /// neighbor's packets must reach.
    pub source: Option<IpAddr>,
    pub session: crate::bfd::session::Config,
    /// `ttl`/`hoplimit`: sent on every packet (RFC 5881: 255; keepalived's
    /// default: 255 over IPv4, 64 over IPv6).
    pub ttl: u8,
    /// `max_hops`: received packets must have a TTL of at least `ttl -
    /// max_hops` (RFC 5082's GTSM, as keepalived's
    /// `bfd_check_packet_ttl`); 255 disables the check.
    pub max_hops: u8,
}

impl BfdSpec {
    /// keepalived's defaults (bfd.h, bfd_parser.c `bfd_end_handler`): TTL
    /// 255 over IPv4 but hop limit 64 over IPv6 (`BFD_CONTROL_HOPLIMIT`,
    /// not RFC 5881's 255: a keepalived peer sends 64 and expects at least
    /// 64), max_hops 0 (only packets that crossed no router), no more
    /// than the TTL; the session's.
    pub fn from_config(instance: &config::BfdInstance) -> Option<BfdSpec> {
        let defaults = crate::bfd::session::Config::keepalived_default();
        let neighbor = instance.neighbor_ip?;
        let ttl = instance.ttl.unwrap_or(match neighbor {
            IpAddr::V4(_) => 255,
            IpAddr::V6(_) => 64,
        });
        Some(BfdSpec {
            name: instance.name.clone(),
            neighbor,
            source: instance.source_ip,
            session: crate::bfd::session::Config {
                desired_min_tx: instance.min_tx.unwrap_or(defaults.desired_min_tx),
                required_min_rx: instance.min_rx.unwrap_or(defaults.required_min_rx),
                idle_tx: instance.idle_tx.unwrap_or(defaults.idle_tx),
                detect_multiplier: instance.multiplier.unwrap_or(defaults.detect_multiplier),
                passive: instance.passive,
            },
            ttl,
            max_hops: instance.max_hops.unwrap_or(0).min(ttl),
        })
    }
}

/// The kinds of check, with their own parameters.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum CheckKind {
    Tcp,
    Http(HttpSpec),
    Misc(MiscSpec),
    Udp(UdpSpec),
    Smtp(SmtpSpec),
    Dns(DnsSpec),
    File(FileSpec),
    Ping,
    Bfd(BfdSpec),
    /// A checker nanny cannot run as configured: it reports down with why,
    /// rather than pretend.
    Unsupported {
        checker: &'static str,
        why: String,
    },
}

impl CheckKind {
    pub fn name(&self) -> &'static str {
        match self {
            CheckKind::Tcp => "TCP_CHECK",
            CheckKind::Http(http) if http.tls.is_some() => "SSL_GET",
            CheckKind::Http(_) => "HTTP_GET",
            CheckKind::Misc(_) => "MISC_CHECK",
            CheckKind::Udp(_) => "UDP_CHECK",
            CheckKind::Smtp(_) => "SMTP_CHECK",
            CheckKind::Dns(_) => "DNS_CHECK",
            CheckKind::File(_) => "FILE_CHECK",
            CheckKind::Ping => "PING_CHECK",
            CheckKind::Bfd(_) => "BFD_CHECK",
            CheckKind::Unsupported { checker, .. } => checker,
        }
    }
}

/// One check, fully resolved: what runs.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct CheckSpec {
    pub kind: CheckKind,
    pub endpoint: Endpoint,
    pub connect_timeout: Duration,
    pub timing: Timing,
    /// `log_all_failures`: log every failed attempt, not only changes.
    pub log_all_failures: bool,
    /// `ha_suspend`: the virtual address whose absence from this host
    /// suspends the check (keepalived: only for a virtual server given by
    /// address; it clears the option for fwmarks). Part of the identity
    /// of a check: a virtual server with it and one without do not share.
    pub ha_suspend: Option<IpAddr>,
}

impl fmt::Display for CheckSpec {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            CheckKind::Misc(misc) => write!(formatter, "MISC_CHECK {}", misc.script.command),
            CheckKind::File(file) => write!(formatter, "FILE_CHECK {}", file.path),
            CheckKind::Ping => write!(formatter, "PING_CHECK {}", self.endpoint.address.ip()),
            CheckKind::Bfd(bfd) => write!(formatter, "BFD_CHECK {}", bfd.name),
            kind => write!(formatter, "{} {}", kind.name(), self.endpoint.address),
        }
    }
}

/// A virtual server as nanny names it in its reports: its address and port
/// (or firewall mark, or group) and protocol, as written. A typed key, so
/// that whoever files reports by virtual server hashes and compares it
/// without formatting or allocating; a group's name is shared, so a clone
/// allocates nothing either. It prints as keepalived names the virtual
/// server in its logs: `192.0.2.1:80 TCP`, `fwmark 7`, `group web TCP`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum VirtualServerKey {
    Address {
        address: SocketAddr,
        protocol: Option<config::Protocol>,
    },
    Fwmark(u32),
    Group {
        name: std::sync::Arc<str>,
        protocol: Option<config::Protocol>,
    },
}

impl VirtualServerKey {
    pub fn from_config(virtual_server: &config::VirtualServer) -> VirtualServerKey {
        let protocol = virtual_server.protocol;
        match &virtual_server.address {
            config::VirtualServerAddress::Address { address, port } => VirtualServerKey::Address {
                address: SocketAddr::new(*address, *port),
                protocol,
            },
            config::VirtualServerAddress::Fwmark(mark) => VirtualServerKey::Fwmark(*mark),
            config::VirtualServerAddress::Group(name) => VirtualServerKey::Group {
                name: name.as_str().into(),
                protocol,
            },
        }
    }
}

impl fmt::Display for VirtualServerKey {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        let protocol = |protocol: &Option<config::Protocol>| match protocol {
            Some(config::Protocol::Tcp) => " TCP",
            Some(config::Protocol::Udp) => " UDP",
            Some(config::Protocol::Sctp) => " SCTP",
            None => "",
        };
        match self {
            VirtualServerKey::Address {
                address,
                protocol: written,
            } => write!(formatter, "{address}{}", protocol(written)),
            VirtualServerKey::Fwmark(mark) => write!(formatter, "fwmark {mark}"),
            VirtualServerKey::Group {
                name,
                protocol: written,
            } => write!(formatter, "group {name}{}", protocol(written)),
        }
    }
}

/// Serialized as it prints.
impl Serialize for VirtualServerKey {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// HTTP_GET/SSL_GET, or why its regexes cannot run here.
fn checked_regexes(http: HttpSpec) -> CheckKind {
    for url in &http.urls {
        if let Some(regex) = &url.regex
            && let Err(why) = regex.compile()
        {
            return CheckKind::Unsupported {
                checker: if http.tls.is_some() {
                    "SSL_GET"
                } else {
                    "HTTP_GET"
                },
                why: format!("regex {:?}: {why}", regex.pattern),
            };
        }
    }
    CheckKind::Http(http)
}

/// This machine's name, keepalived's default HELO name.
fn host_name() -> String {
    let mut buffer = [0u8; 256];
    // SAFETY: the buffer is writable for its whole length, which is passed.
    let result = unsafe { libc::gethostname(buffer.as_mut_ptr().cast(), buffer.len()) };
    if result != 0 {
        return "localhost".to_owned();
    }
    let end = buffer
        .iter()
        .position(|byte| *byte == 0)
        .unwrap_or(buffer.len());
    String::from_utf8_lossy(&buffer[..end]).into_owned()
}

/// How often FILE_CHECK reads its file.
pub const FILE_POLL: Duration = Duration::from_secs(1);

/// How long after its drivers' own timeouts an attempt is abandoned.
pub const ATTEMPT_MARGIN: Duration = Duration::from_secs(1);

/// keepalived's default HTTP status codes: 200-299.
fn default_status_codes() -> Vec<RangeInclusive<u16>> {
    vec![200..=299]
}

fn parse_digest(text: &str) -> Option<[u8; 16]> {
    if text.len() != 32 || !text.is_ascii() {
        return None;
    }
    let mut digest = [0u8; 16];
    for (index, byte) in digest.iter_mut().enumerate() {
        *byte = u8::from_str_radix(&text[index * 2..index * 2 + 2], 16).ok()?;
    }
    Some(digest)
}

impl CheckSpec {
    /// The check a configured checker runs. Virtual hosts resolve as
    /// keepalived does: the url's, the checker's, the real server's, the
    /// virtual server's.
    pub fn from_config(
        virtual_server: &config::VirtualServer,
        real_server: &config::RealServer,
        checker: &config::Checker,
        configuration: &config::Config,
    ) -> CheckSpec {
        let common = &checker.common;
        let ha_suspend = match virtual_server.address {
            config::VirtualServerAddress::Address { address, .. } if virtual_server.ha_suspend => {
                Some(address)
            }
            _ => None,
        };
        let endpoint = Endpoint {
            address: SocketAddr::new(
                common.connection.connect_ip.unwrap_or(real_server.address),
                common.connection.connect_port.unwrap_or(real_server.port),
            ),
            bind_address: common.connection.bind_to,
            bind_port: common.connection.bind_port,
            bind_interface: common.connection.bind_interface.clone(),
            fwmark: common.connection.fwmark,
        };
        let inherited_virtualhost = real_server
            .defaults
            .virtualhost
            .clone()
            .or_else(|| virtual_server.defaults.virtualhost.clone());
        let http = |check: &config::HttpCheck, tls: bool| {
            let virtualhost = check
                .virtualhost
                .clone()
                .or_else(|| inherited_virtualhost.clone());
            let urls = check
                .urls
                .iter()
                .map(|url| UrlSpec {
                    path: url.path.clone().unwrap_or_else(|| "/".to_owned()),
                    digest: url.digest.as_deref().and_then(parse_digest),
                    status_codes: if url.status_codes.is_empty() {
                        default_status_codes()
                    } else {
                        url.status_codes.clone()
                    },
                    virtualhost: url.virtualhost.clone().or_else(|| virtualhost.clone()),
                    regex: url.regex.as_ref().map(|pattern| RegexSpec {
                        pattern: pattern.clone(),
                        options: url.regex_options.clone(),
                        no_match: url.regex_no_match,
                        min_offset: url.regex_min_offset,
                        max_offset: url.regex_max_offset,
                    }),
                })
                .collect();
            HttpSpec {
                version: match check.protocol {
                    config::HttpProtocol::Http10 => HttpVersion::Http10,
                    config::HttpProtocol::Http10Close => HttpVersion::Http10Close,
                    config::HttpProtocol::Http11 => HttpVersion::Http11,
                },
                tls: tls.then(|| TlsSpec {
                    server_name: if check.enable_sni {
                        virtualhost.clone()
                    } else {
                        None
                    },
                    verify: false,
                    ca_file: None,
                    client_certificate: configuration
                        .ssl
                        .as_ref()
                        .and_then(|ssl| Some((ssl.certificate.clone()?, ssl.key.clone()?))),
                }),
                urls,
            }
        };
        let kind = match &checker.kind {
            config::CheckerKind::Tcp => CheckKind::Tcp,
            config::CheckerKind::Http(check) => checked_regexes(http(check, false)),
            config::CheckerKind::Ssl(check) => checked_regexes(http(check, true)),
            config::CheckerKind::Misc(misc) => match &misc.path {
                Some(script) => CheckKind::Misc(MiscSpec {
                    script: (**script).clone(),
                    // keepalived: misc_timeout defaults to the delay_loop.
                    timeout: misc.timeout.unwrap_or(common.delay_loop),
                    dynamic: misc.dynamic,
                }),
                None => CheckKind::Unsupported {
                    checker: "MISC_CHECK",
                    why: "no misc_path".to_owned(),
                },
            },
            config::CheckerKind::Smtp(smtp) => CheckKind::Smtp(SmtpSpec {
                helo_name: smtp.helo_name.clone().unwrap_or_else(host_name),
            }),
            config::CheckerKind::Dns(dns) => CheckKind::Dns(DnsSpec {
                query_type: match dns.query_type {
                    config::DnsType::A => 1,
                    config::DnsType::Ns => 2,
                    config::DnsType::Cname => 5,
                    config::DnsType::Soa => 6,
                    config::DnsType::Mx => 15,
                    config::DnsType::Txt => 16,
                    config::DnsType::Aaaa => 28,
                },
                name: dns.name.clone(),
            }),
            config::CheckerKind::Udp(udp) => CheckKind::Udp(UdpSpec {
                payload: udp.payload.clone(),
                require_reply: udp.require_reply.clone(),
                min_reply_length: udp.min_reply_length,
                max_reply_length: udp.max_reply_length,
            }),
            config::CheckerKind::Ping => CheckKind::Ping,
            config::CheckerKind::File(file) => {
                let tracked = file.track_file.as_ref().and_then(|name| {
                    configuration
                        .track_files
                        .iter()
                        .find(|tracked| &tracked.name == name)
                });
                match tracked.and_then(|tracked| Some((tracked, tracked.file.clone()?))) {
                    // The checker's weight, else the track_file's (with its
                    // reverse), as check_file.c `file_end_handler`.
                    Some((tracked, path)) => CheckKind::File(FileSpec {
                        path,
                        weight: file.weight.unwrap_or(tracked.weight),
                        reverse: if file.weight.is_some() {
                            file.reverse
                        } else {
                            tracked.weight_reverse
                        },
                    }),
                    None => CheckKind::Unsupported {
                        checker: "FILE_CHECK",
                        why: "no track_file with a file".to_owned(),
                    },
                }
            }
            config::CheckerKind::Bfd(check) => {
                let instance = check.name.as_ref().and_then(|name| {
                    configuration
                        .bfd_instances
                        .iter()
                        .find(|instance| &instance.name == name)
                });
                // keepalived ignores an instance whose neighbor (and source,
                // where both have one) an earlier instance has already
                // (bfd_parser.c `bfd_end_handler`, "duplicate neighbor
                // address"): without discriminators yet, their packets
                // could not be told apart.
                let earlier = instance.and_then(|instance| {
                    configuration
                        .bfd_instances
                        .iter()
                        .take_while(|other| other.name != instance.name)
                        .find(|other| {
                            other.neighbor_ip == instance.neighbor_ip
                                && (other.source_ip.is_none()
                                    || instance.source_ip.is_none()
                                    || other.source_ip == instance.source_ip)
                        })
                });
                match instance.and_then(BfdSpec::from_config) {
                    Some(bfd) if earlier.is_none() => CheckKind::Bfd(bfd),
                    Some(bfd) => CheckKind::Unsupported {
                        checker: "BFD_CHECK",
                        why: format!(
                            "bfd_instance {} has the neighbor {} of bfd_instance {} \
                             (keepalived ignores it)",
                            bfd.name,
                            bfd.neighbor,
                            earlier.map_or("", |other| other.name.as_str())
                        ),
                    },
                    None => CheckKind::Unsupported {
                        checker: "BFD_CHECK",
                        why: match &check.name {
                            Some(name) => format!("no bfd_instance {name} with a neighbor_ip"),
                            None => "no name".to_owned(),
                        },
                    },
                }
            }
        };
        let attempt_timeout = match &kind {
            // Each URL is fetched over its own connection, each under the
            // connect_timeout.
            CheckKind::Http(http) => common
                .connect_timeout
                .saturating_mul(http.urls.len().max(1) as u32),
            CheckKind::Misc(misc) => misc.timeout,
            _ => common.connect_timeout,
        }
        // The drivers time out by themselves, with the precise reason (and
        // UDP_CHECK's silence is a success when its wait ends); the
        // attempt's own limit is only a backstop behind them.
        .saturating_add(ATTEMPT_MARGIN);
        let retries_initially = matches!(kind, CheckKind::Smtp(_));
        let delay_from_start = matches!(kind, CheckKind::Misc(_));
        // keepalived watches the file with inotify and has no timers for
        // FILE_CHECK; nanny reads it every second, and a change counts at
        // once (no retries, no warmup, never alpha: keepalived clears it).
        // A BFD session decides by itself, from its own timers (the driver
        // reports its changes): no attempts, no retries, no warmup; `alpha`
        // is BFD_CHECK's only option (check_bfd.c).
        if let CheckKind::Bfd(bfd) = &kind {
            return CheckSpec {
                endpoint: Endpoint {
                    address: SocketAddr::new(bfd.neighbor, crate::bfd::packet::CONTROL_PORT),
                    bind_address: bfd.source,
                    bind_port: None,
                    bind_interface: None,
                    fwmark: None,
                },
                kind,
                log_all_failures: false,
                // The session runs whatever the addresses: it has no
                // attempts to suspend.
                ha_suspend: None,
                connect_timeout: common.connect_timeout,
                timing: Timing {
                    retry: 0,
                    warmup: Duration::ZERO,
                    alpha: common.alpha,
                    ..Timing::keepalived_default()
                },
            };
        }
        if let CheckKind::File(_) = kind {
            return CheckSpec {
                kind,
                endpoint,
                log_all_failures: false,
                ha_suspend,
                connect_timeout: common.connect_timeout,
                timing: Timing {
                    delay_loop: FILE_POLL,
                    retry: 0,
                    delay_before_retry: FILE_POLL,
                    warmup: Duration::ZERO,
                    alpha: false,
                    attempt_timeout: FILE_POLL.saturating_add(ATTEMPT_MARGIN),
                    down_cadence: DownCadence::Retries,
                    retries_initially: false,
                    delay_from_start: false,
                },
            };
        }
        let down_cadence = match &kind {
            CheckKind::Http(_) => DownCadence::Longest,
            // check_udp.c `udp_epilog`, check_dns.c `dns_final`,
            // check_ping.c `icmp_epilog`, check_misc.c
            // `misc_check_child_thread`: no retries while down.
            CheckKind::Udp(_) | CheckKind::Dns(_) | CheckKind::Ping | CheckKind::Misc(_) => {
                DownCadence::DelayLoop
            }
            _ => DownCadence::Retries,
        };
        CheckSpec {
            kind,
            endpoint,
            log_all_failures: common.log_all_failures.unwrap_or(false),
            ha_suspend,
            connect_timeout: common.connect_timeout,
            timing: Timing {
                delay_loop: common.delay_loop,
                retry: common.retry,
                delay_before_retry: common.delay_before_retry,
                warmup: common.warmup,
                alpha: common.alpha,
                attempt_timeout,
                down_cadence,
                retries_initially,
                delay_from_start,
            },
        }
    }
}

/// A real server of one virtual server: one IPVS destination.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(transparent)]
pub struct RealServerName {
    pub address: SocketAddr,
}

impl fmt::Display for RealServerName {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.address.fmt(formatter)
    }
}

/// A real server under one virtual server, with its checkers.
#[derive(Debug, Clone)]
pub struct Slot {
    pub virtual_server: VirtualServerKey,
    pub real_server: RealServerName,
    /// Indexes into [`Plan::checks`], one per configured checker.
    pub checks: Vec<usize>,
}

/// One unique check and who listens to it.
#[derive(Debug, Clone)]
pub struct PlannedCheck {
    pub spec: CheckSpec,
    /// (slot, checker position within the slot) pairs.
    pub subscribers: Vec<(usize, usize)>,
}

/// Every real server of a configuration and the unique checks they need.
#[derive(Debug, Clone, Default)]
pub struct Plan {
    pub slots: Vec<Slot>,
    pub checks: Vec<PlannedCheck>,
}

impl Plan {
    pub fn from_config(configuration: &config::Config) -> Plan {
        let mut plan = Plan::default();
        let mut index_of: HashMap<CheckSpec, usize> = HashMap::new();
        for virtual_server in &configuration.virtual_servers {
            let virtual_name = VirtualServerKey::from_config(virtual_server);
            for real_server in &virtual_server.real_servers {
                let slot_index = plan.slots.len();
                let mut checks = Vec::new();
                for (position, checker) in real_server.checkers.iter().enumerate() {
                    let spec =
                        CheckSpec::from_config(virtual_server, real_server, checker, configuration);
                    let check_index = *index_of.entry(spec.clone()).or_insert_with(|| {
                        plan.checks.push(PlannedCheck {
                            spec,
                            subscribers: Vec::new(),
                        });
                        plan.checks.len() - 1
                    });
                    plan.checks[check_index]
                        .subscribers
                        .push((slot_index, position));
                    checks.push(check_index);
                }
                plan.slots.push(Slot {
                    virtual_server: virtual_name.clone(),
                    real_server: RealServerName {
                        address: SocketAddr::new(real_server.address, real_server.port),
                    },
                    checks,
                });
            }
        }
        plan
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(text: &str) -> config::Config {
        let loaded = fulcrum_config::load_str("test.conf", text, &Default::default());
        loaded.config
    }

    const TWO_SERVICES: &str = "
virtual_server 192.0.2.1 80 {
    protocol TCP
    delay_loop 3
    real_server 127.0.0.1 8080 {
        TCP_CHECK {
            connect_timeout 2
            retry 2
        }
        HTTP_GET {
            url {
                path /health
                digest 9b3a0c85a887a256d6939da88aabd8cd
                status_code 200-204
            }
            virtualhost example.test
        }
    }
}
virtual_server 192.0.2.2 80 {
    protocol TCP
    delay_loop 3
    real_server 127.0.0.1 8080 {
        TCP_CHECK {
            connect_timeout 2
            retry 2
        }
    }
}
";

    #[test]
    fn identical_checks_run_once_and_feed_every_virtual_server() {
        let plan = Plan::from_config(&load(TWO_SERVICES));
        assert_eq!(plan.slots.len(), 2);
        assert_eq!(plan.checks.len(), 2, "{plan:#?}");
        let tcp = &plan.checks[0];
        assert_eq!(tcp.spec.kind, CheckKind::Tcp);
        assert_eq!(tcp.subscribers, [(0, 0), (1, 0)]);
        assert_eq!(tcp.spec.endpoint.address, "127.0.0.1:8080".parse().unwrap());
        assert_eq!(tcp.spec.connect_timeout, Duration::from_secs(2));
        assert_eq!(tcp.spec.timing.retry, 2);
        assert_eq!(tcp.spec.timing.delay_loop, Duration::from_secs(3));
        assert_eq!(plan.slots[1].virtual_server.to_string(), "192.0.2.2:80 TCP");
    }

    #[test]
    fn http_urls_resolve_defaults_and_digest() {
        let plan = Plan::from_config(&load(TWO_SERVICES));
        let CheckKind::Http(http) = &plan.checks[1].spec.kind else {
            panic!("expected HTTP_GET: {plan:#?}");
        };
        assert_eq!(http.version, HttpVersion::Http10);
        assert_eq!(http.tls, None);
        let url = &http.urls[0];
        assert_eq!(url.path, "/health");
        assert_eq!(url.virtualhost.as_deref(), Some("example.test"));
        assert!(url.accepts(204) && !url.accepts(205));
        assert_eq!(url.digest.unwrap()[0], 0x9b);
        assert_eq!(
            plan.checks[1].spec.timing.down_cadence,
            DownCadence::Longest
        );
    }

    #[test]
    fn different_parameters_are_different_checks() {
        let text = TWO_SERVICES.replacen("retry 2", "retry 3", 1);
        let plan = Plan::from_config(&load(&text));
        assert_eq!(plan.checks.len(), 3);
    }

    #[test]
    fn file_check_takes_the_track_file_path_and_weight() {
        let text = "
track_file maintenance {
    file /run/maintenance
    weight 0 reverse
}
virtual_server 192.0.2.1 80 {
    protocol TCP
    real_server 127.0.0.1 80 {
        FILE_CHECK {
            track_file maintenance
        }
        FILE_CHECK {
            track_file maintenance
            weight 5
        }
    }
}
";
        let plan = Plan::from_config(&load(text));
        let kinds: Vec<&CheckKind> = plan.checks.iter().map(|check| &check.spec.kind).collect();
        assert_eq!(
            kinds,
            [
                &CheckKind::File(FileSpec {
                    path: "/run/maintenance".to_owned(),
                    weight: 0,
                    reverse: true,
                }),
                &CheckKind::File(FileSpec {
                    path: "/run/maintenance".to_owned(),
                    weight: 5,
                    reverse: false,
                }),
            ]
        );
        assert_eq!(plan.checks[0].spec.timing.delay_loop, FILE_POLL);
    }

    #[test]
    fn a_regex_nanny_cannot_run_is_said_so() {
        let text = "
virtual_server 192.0.2.1 80 {
    protocol TCP
    real_server 127.0.0.1 80 {
        HTTP_GET {
            url {
                path /
                regex \"(?<=a)b\"
            }
        }
        HTTP_GET {
            url {
                path /
                regex \"ok\"
                regex_options caseless
            }
        }
    }
}
";
        let plan = Plan::from_config(&load(text));
        assert!(
            matches!(&plan.checks[0].spec.kind,
                CheckKind::Unsupported { checker: "HTTP_GET", why } if why.starts_with("regex")),
            "{:?}",
            plan.checks[0].spec.kind
        );
        let CheckKind::Http(http) = &plan.checks[1].spec.kind else {
            panic!("{:?}", plan.checks[1].spec.kind);
        };
        let regex = http.urls[0].regex.as_ref().unwrap();
        assert_eq!(regex.pattern, "ok");
        assert_eq!(regex.options, ["caseless"]);
    }

    #[test]
    fn bfd_check_follows_its_bfd_instance() {
        let text = "
bfd_instance peer {
    neighbor_ip 10.0.0.2
    source_ip 10.0.0.1
    min_rx 100
    min_tx 50
    multiplier 3
    max_hops 1
}
bfd_instance defaults {
    neighbor_ip fe80::2
}
bfd_instance again {
    neighbor_ip 10.0.0.2
}
virtual_server 192.0.2.1 80 {
    protocol TCP
    real_server 10.0.0.2 80 {
        BFD_CHECK {
            name peer
            alpha
        }
        BFD_CHECK {
            name defaults
        }
        BFD_CHECK {
            name nowhere
        }
        BFD_CHECK {
            name again
        }
    }
}
";
        let plan = Plan::from_config(&load(text));
        let CheckKind::Bfd(peer) = &plan.checks[0].spec.kind else {
            panic!("{:?}", plan.checks[0].spec.kind);
        };
        assert_eq!(peer.name, "peer");
        assert_eq!(peer.neighbor, "10.0.0.2".parse::<IpAddr>().unwrap());
        assert_eq!(peer.source, Some("10.0.0.1".parse().unwrap()));
        assert_eq!(peer.session.required_min_rx, Duration::from_millis(100));
        assert_eq!(peer.session.desired_min_tx, Duration::from_millis(50));
        assert_eq!(peer.session.detect_multiplier, 3);
        assert_eq!((peer.ttl, peer.max_hops), (255, 1));
        assert!(plan.checks[0].spec.timing.alpha);
        assert_eq!(plan.checks[0].spec.to_string(), "BFD_CHECK peer");
        let CheckKind::Bfd(defaults) = &plan.checks[1].spec.kind else {
            panic!("{:?}", plan.checks[1].spec.kind);
        };
        assert_eq!(
            defaults.session,
            crate::bfd::session::Config::keepalived_default()
        );
        // IPv6: keepalived's hop limit 64.
        assert_eq!((defaults.ttl, defaults.max_hops), (64, 0));
        assert!(!plan.checks[1].spec.timing.alpha);
        assert!(
            matches!(&plan.checks[2].spec.kind,
                CheckKind::Unsupported { checker: "BFD_CHECK", why } if why.contains("nowhere")),
            "{:?}",
            plan.checks[2].spec.kind
        );
        assert!(
            matches!(&plan.checks[3].spec.kind,
                CheckKind::Unsupported { checker: "BFD_CHECK", why }
                    if why == "bfd_instance again has the neighbor 10.0.0.2 of bfd_instance peer \
                               (keepalived ignores it)"),
            "{:?}",
            plan.checks[3].spec.kind
        );
    }

    #[test]
    fn digest_parsing() {
        assert_eq!(parse_digest("00"), None);
        assert_eq!(parse_digest(&"zz".repeat(16)), None);
        assert_eq!(parse_digest(&"ff".repeat(16)), Some([0xff; 16]));
    }
}
