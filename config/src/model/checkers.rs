//! Health checkers (what nanny runs), the SSL context and BFD instances.

use std::net::IpAddr;
use std::ops::RangeInclusive;
use std::time::Duration;

use serde::Serialize;

use super::Script;

/// One checker of a real server, with every inherited value resolved.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Checker {
    pub common: CheckerCommon,
    pub kind: CheckerKind,
}

/// Options every checker has (MISC_CHECK: from `alpha` on; FILE_CHECK and
/// BFD_CHECK: none, their values here are unused defaults).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CheckerCommon {
    /// Where the check connects to and from (`common.connection.connect_ip`
    /// reads as a field).
    #[serde(flatten)]
    pub connection: Connection,
    /// Resolved: checker, real server, virtual server, else 5 s.
    #[serde(serialize_with = "super::seconds::serialize")]
    pub connect_timeout: Duration,
    /// Resolved: checker, real server, virtual server, else the checker's
    /// default (1; DNS_CHECK 3; MISC_CHECK 0).
    pub retry: u32,
    /// Resolved: checker, real server, virtual server, else the checker's
    /// default (HTTP_GET/SSL_GET 3 s, DNS_CHECK the delay_loop, else 1 s).
    #[serde(serialize_with = "super::seconds::serialize")]
    pub delay_before_retry: Duration,
    /// Resolved: checker, real server, virtual server, else 60 s.
    #[serde(serialize_with = "super::seconds::serialize")]
    pub delay_loop: Duration,
    /// Resolved: checker, real server, virtual server, else the delay_loop
    /// (0 disables the random initial delay).
    #[serde(serialize_with = "super::seconds::serialize")]
    pub warmup: Duration,
    /// Resolved: checker, real server, virtual server, else false.
    pub alpha: bool,
    pub log_all_failures: Option<bool>,
}

/// A checker's `connect_ip`, `connect_port`, `bindto`, `bind_if`,
/// `bind_port` and `fwmark` (most checkers write none): a checker is then
/// 96 bytes, not 160, and 100,000 of them 6 MB less to fault in.
pub type Connection = super::Written<ConnectionSettings>;

/// See [`Connection`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ConnectionSettings {
    /// Default: the real server's address.
    pub connect_ip: Option<IpAddr>,
    /// Default: the real server's port.
    pub connect_port: Option<u16>,
    pub bind_to: Option<IpAddr>,
    pub bind_interface: Option<String>,
    pub bind_port: Option<u16>,
    pub fwmark: Option<u32>,
}

impl super::Unwritten for ConnectionSettings {
    fn unwritten() -> &'static Self {
        static UNWRITTEN: ConnectionSettings = ConnectionSettings {
            connect_ip: None,
            connect_port: None,
            bind_to: None,
            bind_interface: None,
            bind_port: None,
            fwmark: None,
        };
        &UNWRITTEN
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum CheckerKind {
    Tcp,
    // Each kind's fields on the heap: a checker is then 160 bytes, not 208
    // (the largest kind's 64 bytes in every one, TCP_CHECK's too), and a
    // configuration of 100,000 real servers' checkers is 16 MB, not 21.
    Http(Box<HttpCheck>),
    Ssl(Box<HttpCheck>),
    Misc(Box<MiscCheck>),
    Smtp(Box<SmtpCheck>),
    Dns(Box<DnsCheck>),
    Udp(Box<UdpCheck>),
    Ping,
    File(Box<FileCheck>),
    Bfd(Box<BfdCheck>),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum HttpProtocol {
    /// `1.0`, the default.
    #[serde(rename = "1.0")]
    Http10,
    /// `1.0C`: 1.0 with `Connection: close`.
    #[serde(rename = "1.0C")]
    Http10Close,
    #[serde(rename = "1.1")]
    Http11,
}

/// HTTP_GET and SSL_GET.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HttpCheck {
    /// Default 1.0.
    pub protocol: HttpProtocol,
    pub fast_recovery: bool,
    /// Default: the real server's, then the virtual server's virtualhost.
    pub virtualhost: Option<String>,
    /// SSL_GET `enable_sni`.
    pub enable_sni: bool,
    pub urls: Vec<Url>,
}

/// An `url { ... }` block.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Url {
    pub path: Option<String>,
    /// An MD5 digest (32 hex digits), as genhash prints it.
    pub digest: Option<String>,
    /// Default 200-299.
    pub status_codes: Vec<RangeInclusive<u16>>,
    pub virtualhost: Option<String>,
    pub regex: Option<String>,
    pub regex_no_match: bool,
    pub regex_options: Vec<String>,
    pub regex_stack: Option<(u64, u64)>,
    pub regex_min_offset: Option<u64>,
    pub regex_max_offset: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MiscCheck {
    /// Boxed: see [`super::VirtualServer::quorum_up`].
    pub path: Option<Box<Script>>,
    /// Default: the delay_loop.
    #[serde(serialize_with = "super::seconds::serialize_option")]
    pub timeout: Option<Duration>,
    pub dynamic: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SmtpCheck {
    /// Default: the host name.
    pub helo_name: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum DnsType {
    A,
    Ns,
    Cname,
    Soa,
    Mx,
    Txt,
    Aaaa,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DnsCheck {
    /// Default SOA.
    pub query_type: DnsType,
    /// Default ".".
    pub name: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct UdpCheck {
    /// Default: a random payload.
    pub payload: Option<Vec<u8>>,
    /// `require_reply [HEX]`: `Some` when required; each byte's two nibbles,
    /// `None` for an `x` wildcard.
    pub require_reply: Option<Vec<(Option<u8>, Option<u8>)>>,
    /// Default 0.
    pub min_reply_length: u16,
    /// Default 255.
    pub max_reply_length: u16,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FileCheck {
    pub track_file: Option<String>,
    pub weight: Option<i32>,
    pub reverse: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BfdCheck {
    pub name: Option<String>,
}

/// The `SSL { ... }` block.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct SslContext {
    pub password: Option<String>,
    pub ca: Option<String>,
    pub certificate: Option<String>,
    pub key: Option<String>,
}

/// `bfd_instance NAME { ... }`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BfdInstance {
    pub name: String,
    pub neighbor_ip: Option<IpAddr>,
    pub source_ip: Option<IpAddr>,
    /// Default 10 ms.
    #[serde(serialize_with = "super::seconds::serialize_option")]
    pub min_rx: Option<Duration>,
    /// Default 10 ms.
    #[serde(serialize_with = "super::seconds::serialize_option")]
    pub min_tx: Option<Duration>,
    #[serde(serialize_with = "super::seconds::serialize_option")]
    pub idle_tx: Option<Duration>,
    /// Default 5.
    pub multiplier: Option<u8>,
    pub passive: bool,
    pub ttl: Option<u8>,
    pub max_hops: Option<u8>,
    pub weight: Option<i32>,
    pub reverse: bool,
    /// `vrrp` and `checker` lines, as written.
    pub used_by: Vec<super::RawSetting>,
}
