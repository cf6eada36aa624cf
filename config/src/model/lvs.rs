//! Virtual server groups, virtual servers and real servers (what pulse turns
//! into IPVS services and destinations).

use std::net::IpAddr;
use std::time::Duration;

use serde::Serialize;

use super::{Checker, Script};

/// `virtual_server_group NAME { ... }`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct VirtualServerGroup {
    pub name: String,
    pub entries: Vec<GroupEntry>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum GroupEntry {
    /// `<IPADDR>[-<END>|/<LEN>] [<PORT>]`: the inclusive range `first..=last`
    /// (a single address has `first == last`); port `None` when omitted
    /// (keepalived then requires persistence, and sets it).
    Addresses {
        first: IpAddr,
        last: IpAddr,
        port: Option<u16>,
    },
    /// `fwmark <INTEGER> [inet|inet6]`.
    Fwmark { mark: u32, family: Option<Family> },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Family {
    Inet,
    Inet6,
}

/// What a virtual server listens on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum VirtualServerAddress {
    /// `virtual_server <IPADDR> [<PORT>]` (port 0 when omitted, which
    /// keepalived only allows for persistent services).
    Address { address: IpAddr, port: u16 },
    /// `virtual_server fwmark <INTEGER>`.
    Fwmark(u32),
    /// `virtual_server group <NAME>`.
    Group(String),
}

/// An IPVS scheduler (`lvs_sched`/`lb_algo`). Default: `wlc`, with
/// keepalived's warning "no scheduler set".
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Scheduler {
    Rr,
    Wrr,
    Lc,
    Wlc,
    Lblc,
    Lblcr,
    Dh,
    Sh,
    Sed,
    Nq,
    Fo,
    Ovf,
    Mh,
    Twos,
}

impl Scheduler {
    /// Every scheduler keepalived accepts.
    pub const NAMES: &[&str] = &[
        "rr", "wrr", "lc", "wlc", "lblc", "lblcr", "dh", "sh", "sed", "nq", "fo", "ovf", "mh",
        "twos",
    ];

    pub fn from_name(name: &str) -> Option<Scheduler> {
        Some(match name {
            "rr" => Scheduler::Rr,
            "wrr" => Scheduler::Wrr,
            "lc" => Scheduler::Lc,
            "wlc" => Scheduler::Wlc,
            "lblc" => Scheduler::Lblc,
            "lblcr" => Scheduler::Lblcr,
            "dh" => Scheduler::Dh,
            "sh" => Scheduler::Sh,
            "sed" => Scheduler::Sed,
            "nq" => Scheduler::Nq,
            "fo" => Scheduler::Fo,
            "ovf" => Scheduler::Ovf,
            "mh" => Scheduler::Mh,
            "twos" => Scheduler::Twos,
            _ => return None,
        })
    }

    pub fn name(&self) -> &'static str {
        match self {
            Scheduler::Rr => "rr",
            Scheduler::Wrr => "wrr",
            Scheduler::Lc => "lc",
            Scheduler::Wlc => "wlc",
            Scheduler::Lblc => "lblc",
            Scheduler::Lblcr => "lblcr",
            Scheduler::Dh => "dh",
            Scheduler::Sh => "sh",
            Scheduler::Sed => "sed",
            Scheduler::Nq => "nq",
            Scheduler::Fo => "fo",
            Scheduler::Ovf => "ovf",
            Scheduler::Mh => "mh",
            Scheduler::Twos => "twos",
        }
    }
}

/// The IPVS service flags keepalived sets from `hashed`, `ops`, `flag-N`,
/// `sh-*` and `mh-*` (`sh-port` and `mh-fallback` are flag-1... see the
/// grammar: they are only accepted after the matching `lvs_sched`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct ServiceFlags {
    pub hashed: bool,
    /// One-packet scheduling (`ops`), UDP only.
    pub one_packet: bool,
    pub flag_1: bool,
    pub flag_2: bool,
    pub flag_3: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Protocol {
    Tcp,
    Udp,
    Sctp,
}

/// The forwarding method (`lvs_method`/`lb_kind`). Default NAT.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum ForwardingMethod {
    #[serde(rename = "NAT")]
    Nat,
    #[serde(rename = "DR")]
    DirectRouting,
    #[serde(rename = "TUN")]
    Tunnel(Tunnel),
}

/// `TUN [type ipip|gue port N|gre] [nocsum|csum|remcsum]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Tunnel {
    pub kind: TunnelKind,
    pub checksum: TunnelChecksum,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TunnelKind {
    Ipip,
    Gue { port: u16 },
    Gre,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum TunnelChecksum {
    /// Default.
    #[serde(rename = "nocsum")]
    NoChecksum,
    #[serde(rename = "csum")]
    Checksum,
    #[serde(rename = "remcsum")]
    RemoteChecksum,
}

/// `persistence_granularity`: a solid IPv4 netmask or an IPv6 prefix length.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Granularity {
    Netmask(std::net::Ipv4Addr),
    PrefixLength(u8),
}

/// Timers and counts that cascade virtual server -> real server -> checker
/// (the man page: "the virtual server setting is the default for real
/// servers, and the real server setting is the default for checkers").
/// `None` means not written at this level.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct CheckDefaults {
    #[serde(serialize_with = "super::seconds::serialize_option")]
    pub connect_timeout: Option<Duration>,
    pub retry: Option<u32>,
    #[serde(serialize_with = "super::seconds::serialize_option")]
    pub delay_before_retry: Option<Duration>,
    #[serde(serialize_with = "super::seconds::serialize_option")]
    pub warmup: Option<Duration>,
    #[serde(serialize_with = "super::seconds::serialize_option")]
    pub delay_loop: Option<Duration>,
    pub inhibit_on_failure: Option<bool>,
    pub alpha: Option<bool>,
    pub smtp_alert: Option<bool>,
    pub virtualhost: Option<String>,
}

/// No value written (what [`WrittenDefaults`] reads as when empty).
static NOTHING_WRITTEN: CheckDefaults = CheckDefaults {
    connect_timeout: None,
    retry: None,
    delay_before_retry: None,
    warmup: None,
    delay_loop: None,
    inhibit_on_failure: None,
    alpha: None,
    smtp_alert: None,
    virtualhost: None,
};

/// The [`CheckDefaults`] written on a real server (most write none).
pub type WrittenDefaults = super::Written<CheckDefaults>;

impl super::Unwritten for CheckDefaults {
    fn unwritten() -> &'static Self {
        &NOTHING_WRITTEN
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct VirtualServer {
    pub address: VirtualServerAddress,
    /// `ip_family`: only needed for fwmark services whose servers are all
    /// tunnelled. `None`: taken from the addresses.
    pub ip_family: Option<Family>,
    /// Default `wlc` (keepalived warns "no scheduler set").
    pub scheduler: Scheduler,
    pub flags: ServiceFlags,
    /// Default NAT (keepalived warns "no forwarding method set" when a real
    /// server needs it).
    pub forwarding: ForwardingMethod,
    /// `persistence_engine` (only `sip` exists).
    pub persistence_engine: Option<String>,
    /// `persistence_timeout [SECONDS]`; bare = 360 s; also set to 360 s by
    /// `persistence_granularity` or a zero port, as keepalived does.
    #[serde(serialize_with = "super::seconds::serialize_option")]
    pub persistence_timeout: Option<Duration>,
    pub persistence_granularity: Option<Granularity>,
    /// Default UDP for address services (keepalived: "the kernel defaults to
    /// UDP, so set it explicitly", with a warning); `None` for fwmarks, where
    /// IPVS ignores the protocol.
    pub protocol: Option<Protocol>,
    /// The `protocol` written for a fwmark service, which IPVS ignores
    /// ([`VirtualServer::protocol`] is `None`) but keepalived keeps: its
    /// notify FIFO lines name it (`RS [10.0.0.1]:tcp:80 FWM 7 UP`).
    pub fwmark_protocol: Option<Protocol>,
    pub ha_suspend: bool,
    pub snmp_name: Option<String>,
    /// Default false.
    pub alpha: bool,
    /// Default false.
    pub omega: bool,
    /// Default 1 (reduced to the real servers' total weight, with a warning).
    pub quorum: u32,
    /// Default 0 (must be below the quorum).
    pub hysteresis: u32,
    /// Boxed, as every script of the model: most servers have none, and a
    /// script held inline would take 96 bytes of each of them.
    pub quorum_up: Option<Box<Script>>,
    pub quorum_down: Option<Box<Script>>,
    /// Default for real servers' weight (default 1).
    pub weight: u32,
    pub sorry_server: Option<SorryServer>,
    /// What real servers and checkers inherit. `delay_loop` defaults to 60 s
    /// here.
    pub defaults: CheckDefaults,
    pub real_servers: Vec<RealServer>,
    /// `virtual_network NAME` (the SDN mode): the VIP of a tenant network,
    /// whose real servers are that network's DIPs, each real server's port
    /// the backend port the host agent translates to.
    pub virtual_network: Option<String>,
    /// Its `virtual_server` line.
    #[serde(skip)]
    pub place: super::Place,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SorryServer {
    pub address: IpAddr,
    /// The port actually used: with DR/TUN it is the virtual server's (a
    /// different one is reset, with a warning); 0 for fwmark services.
    pub port: u16,
    /// `sorry_server_lvs_method`; default: the virtual server's method.
    pub forwarding: ForwardingMethod,
    /// `sorry_server_inhibit`.
    pub inhibit: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RealServer {
    pub address: IpAddr,
    /// The port actually used: omitted = the virtual server's port; with DR
    /// or TUN a different port is reset to the virtual server's (keepalived's
    /// "ports don't match - resetting" warning); 0 for fwmark services.
    pub port: u16,
    /// The port as written, if it was.
    pub written_port: Option<u16>,
    /// Resolved: the weight as written, else the virtual server's `weight`
    /// (1).
    pub weight: u32,
    /// The weight as written, if it was.
    pub written_weight: Option<u32>,
    /// Default: the virtual server's method.
    pub forwarding: ForwardingMethod,
    /// `uthreshold`: maximum connections; 0 = no limit.
    pub upper_threshold: u32,
    /// `lthreshold`: 0 = none.
    pub lower_threshold: u32,
    /// Boxed: see [`VirtualServer::quorum_up`] (a large configuration has
    /// 100,000 real servers).
    pub notify_up: Option<Box<Script>>,
    pub notify_down: Option<Box<Script>>,
    pub snmp_name: Option<String>,
    /// Resolved: the real server's value, else the virtual server's, else
    /// keepalived's default (inhibit_on_failure false, alpha false).
    /// `smtp_alert`: the real server's, else the global
    /// `smtp_alert_checker`, else the global `smtp_alert`, else true (never
    /// the virtual server's, as keepalived 2.2.7).
    pub inhibit_on_failure: bool,
    pub alpha: bool,
    pub smtp_alert: bool,
    /// As written on the real server (checkers resolve from these and the
    /// virtual server's).
    pub defaults: WrittenDefaults,
    pub checkers: Vec<Checker>,
}
