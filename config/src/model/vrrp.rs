//! VRRP: scripts, tracked files and processes, sync groups, garp groups,
//! instances, and the address/route/rule sub-syntax shared with the
//! `static_*` blocks.

use std::net::IpAddr;
use std::time::Duration;

use serde::Serialize;

use super::{Prefix, RawSetting, Script};

/// `vrrp_script NAME { ... }`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct VrrpScript {
    pub name: String,
    pub script: Option<Script>,
    /// Default 1 s.
    #[serde(serialize_with = "super::seconds::serialize")]
    pub interval: Duration,
    /// Default: the interval.
    #[serde(serialize_with = "super::seconds::serialize_option")]
    pub timeout: Option<Duration>,
    /// Default 0 (failure means FAULT).
    pub weight: i32,
    pub weight_reverse: bool,
    /// Default 1.
    pub rise: u32,
    /// Default 1.
    pub fall: u32,
    pub init_fail: bool,
}

/// `track_file NAME { file PATH; weight N [reverse]; init_file [VALUE]
/// [overwrite] }`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TrackFile {
    pub name: String,
    pub file: Option<String>,
    /// Default 1.
    pub weight: i32,
    pub weight_reverse: bool,
    pub init_file: Option<Vec<String>>,
}

/// `vrrp_track_process NAME { ... }`, as keepalived 2.2.7's parser leaves
/// it (vrrp_parser.c): `delay` already set into both delays, parameters
/// after the process implying `full_command` and an exact match.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TrackProcess {
    pub name: String,
    /// `process PATH [PARAMETER...]`: the name (or with `full_command` the
    /// command's first word), then the parameters to match.
    pub process: Option<Vec<String>>,
    /// Default 1; 0 with `quorum_max 0` (the process must not run).
    pub quorum: u32,
    /// `None`: no maximum.
    pub quorum_max: Option<u32>,
    /// Default 0.
    pub weight: i32,
    pub weight_reverse: bool,
    /// `terminate_delay`, or `delay`.
    #[serde(serialize_with = "super::seconds::serialize_option")]
    pub terminate_delay: Option<Duration>,
    /// `fork_delay`, or `delay`.
    #[serde(serialize_with = "super::seconds::serialize_option")]
    pub fork_delay: Option<Duration>,
    /// Match the command line (/proc/PID/cmdline) rather than the process
    /// name (/proc/PID/comm).
    pub full_command: bool,
    /// How the parameters are matched; `None`: they are not.
    pub param_match: Option<ParamMatch>,
}

/// `param_match`: how a command line's parameters are compared with those
/// of `process` (keepalived's check_params).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ParamMatch {
    /// The same parameters, no more (`param_match` alone, or parameters
    /// given without it).
    Exact,
    /// The first parameters are those given; more may follow.
    Partial,
    /// As `Partial`, the last given one being only the start of the
    /// process's.
    Initial,
}

/// A name in a `track_*` block, with its optional weight.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Tracked {
    pub name: String,
    /// `None`: the tracked object's own weight (0 for interfaces).
    pub weight: Option<i32>,
    pub reverse: bool,
}

/// The notify scripts of instances and sync groups.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Notify {
    pub master: Option<Script>,
    pub backup: Option<Script>,
    pub fault: Option<Script>,
    pub stop: Option<Script>,
    /// `notify_deleted [SCRIPT]`: `Some(None)` when bare.
    pub deleted: Option<Option<Script>>,
    pub any: Option<Script>,
    pub master_rx_lower_priority: Option<Script>,
    pub priority_changes: Option<bool>,
}

/// Tracking shared by instances and sync groups.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Tracking {
    pub interfaces: Vec<Tracked>,
    pub scripts: Vec<Tracked>,
    pub files: Vec<Tracked>,
    pub processes: Vec<Tracked>,
    pub bfds: Vec<Tracked>,
}

/// `vrrp_sync_group NAME { ... }`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SyncGroup {
    pub name: String,
    pub instances: Vec<String>,
    pub tracking: Tracking,
    pub notify: Notify,
    pub smtp_alert: Option<bool>,
    pub global_tracking: bool,
    pub sync_group_tracking_weight: bool,
}

/// `garp_group { ... }`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct GarpGroup {
    #[serde(serialize_with = "super::seconds::serialize_option")]
    pub garp_interval: Option<Duration>,
    #[serde(serialize_with = "super::seconds::serialize_option")]
    pub gna_interval: Option<Duration>,
    pub interface: Option<String>,
    pub interfaces: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum VrrpState {
    Master,
    Backup,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum Authentication {
    /// `auth_type PASS`: only the first 8 characters count.
    Password(String),
    /// `auth_type AH`.
    Ah(String),
}

/// A unicast peer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct UnicastPeer {
    pub address: IpAddr,
    pub min_ttl: Option<u8>,
    pub max_ttl: Option<u8>,
}

/// `vrrp_instance NAME { ... }`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct VrrpInstance {
    pub name: String,
    /// `state`; `None` = BACKUP (keepalived's default), and priority 255
    /// makes it MASTER.
    pub state: Option<VrrpState>,
    pub interface: Option<String>,
    /// Required (1..=255).
    pub virtual_router_id: Option<u8>,
    /// Default 100; 255 = address owner.
    pub priority: u8,
    /// Default 1 s (VRRPv3: centiseconds resolution).
    #[serde(serialize_with = "super::seconds::serialize")]
    pub advert_interval: Duration,
    /// Default: global `vrrp_version`, else 2.
    pub version: Option<u8>,
    pub authentication: Option<Authentication>,
    pub virtual_addresses: Vec<VirtualAddress>,
    pub excluded_addresses: Vec<VirtualAddress>,
    pub virtual_routes: Vec<Route>,
    pub virtual_rules: Vec<Rule>,
    pub unicast_source: Option<IpAddr>,
    pub unicast_peers: Vec<UnicastPeer>,
    pub unicast_ttl: Option<u8>,
    pub unicast_fault_no_peer: bool,
    pub check_unicast_source: bool,
    pub multicast_source: Option<IpAddr>,
    pub multicast_destination: Option<IpAddr>,
    pub tracking: Tracking,
    pub dont_track_primary: bool,
    pub track_source_ip: bool,
    pub notify: Notify,
    pub smtp_alert: Option<bool>,
    /// `nopreempt` (default: preempt).
    pub nopreempt: bool,
    /// Default 0.
    #[serde(serialize_with = "super::seconds::serialize")]
    pub preempt_delay: Duration,
    /// `accept`/`no_accept`: `None` = accept unless strict mode.
    pub accept: Option<bool>,
    pub strict_mode: Option<bool>,
    pub skip_check_adv_addr: Option<bool>,
    /// `use_vmac [NAME] [MAC]`: the instance runs on a macvlan of its
    /// interface with the virtual router's MAC address.
    pub use_vmac: Option<Vmac>,
    pub vmac_xmit_base: bool,
    pub use_ipvlan: Option<Vec<String>>,
    pub native_ipv6: bool,
    pub promote_secondaries: bool,
    pub garp: GarpSettings,
    pub lower_prio_no_advert: Option<bool>,
    pub higher_prio_send_advert: Option<bool>,
    pub down_timer_adverts: Option<u32>,
    pub debug: Option<u8>,
    /// Keywords stored as written and not yet acted on (`linkbeat_use_polling`,
    /// `kernel_rx_buf_size`, `vrf`, ...).
    pub other: Vec<RawSetting>,
}

/// The instance-level garp settings (defaults: the global ones).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct GarpSettings {
    #[serde(serialize_with = "super::seconds::serialize_option")]
    pub master_delay: Option<Duration>,
    pub master_repeat: Option<u32>,
    #[serde(serialize_with = "super::seconds::serialize_option")]
    pub lower_prio_delay: Option<Duration>,
    pub lower_prio_repeat: Option<u32>,
    #[serde(serialize_with = "super::seconds::serialize_option")]
    pub master_refresh: Option<Duration>,
    pub master_refresh_repeat: Option<u32>,
    /// `garp_extra_if [all] DELAY`.
    pub extra_if: Option<GarpExtraInterfaces>,
}

/// `garp_extra_if [all] DELAY`: periodic gratuitous ARPs on the interfaces of
/// the virtual addresses (all of them, or only those not on the instance's
/// interface).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct GarpExtraInterfaces {
    pub all: bool,
    #[serde(serialize_with = "super::seconds::serialize")]
    pub delay: Duration,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Scope {
    Global,
    Site,
    Link,
    Host,
    Nowhere,
    /// A number 0..=255.
    Number(u8),
}

/// `use_vmac [NAME] [MAC]`, what keepalived 2.2.7 keeps of it
/// (vrrp_parser.c `vrrp_vmac_handler`: a name or an address it refuses is
/// ignored with an error, the keyword still applies).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Vmac {
    /// The macvlan's name; `None`: keepalived's `vrrp.VRID`.
    pub name: Option<String>,
    /// Its MAC address; `None`: RFC 5798's (00:00:5e:00:01:VRID, or
    /// 00:00:5e:00:02:VRID for IPv6).
    pub address: Option<VmacAddress>,
}

/// A `use_vmac` MAC address: six octets, or five with the VRID as the
/// sixth.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum VmacAddress {
    Whole([u8; 6]),
    WithVrid([u8; 5]),
}

impl VmacAddress {
    /// The address for virtual router `vrid`.
    pub fn with_vrid(self, vrid: u8) -> [u8; 6] {
        match self {
            VmacAddress::Whole(octets) => octets,
            VmacAddress::WithVrid([a, b, c, d, e]) => [a, b, c, d, e, vrid],
        }
    }
}

/// One line of `virtual_ipaddress`, `virtual_ipaddress_excluded` or
/// `static_ipaddress`: `<IPADDR>[/<MASK>] [brd <IPADDR>] [dev <STRING>]
/// [scope <SCOPE>] [label <LABEL>] [peer <IPADDR>] [home] [-nodad]
/// [mngtmpaddr] [noprefixroute] [autojoin] [no_track] [preferred_lft N]
/// [use_vmac] [track_group NAME]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct VirtualAddress {
    /// The prefix length defaults to 32 / 128.
    pub address: Prefix,
    /// `brd`: `None` = none (keepalived does not compute one).
    pub broadcast: Option<IpAddr>,
    pub device: Option<String>,
    /// Default global.
    pub scope: Scope,
    pub label: Option<String>,
    pub peer: Option<Prefix>,
    pub home: bool,
    /// `-nodad`: keepalived gives every IPv6 virtual address `nodad` (no
    /// duplicate address detection) unless this is written.
    pub no_dad: bool,
    pub manage_temporary_address: bool,
    pub no_prefix_route: bool,
    pub autojoin: bool,
    pub no_track: bool,
    pub use_vmac: bool,
    /// `preferred_lft`: `Some(None)` = forever. Applied to IPv6 addresses
    /// only, as keepalived 2.2.7 does; an IPv6 /128 without it is given 0
    /// (deprecated: not chosen as a source).
    pub preferred_lifetime: Option<Option<u32>>,
    pub track_group: Option<String>,
}

/// One line of `virtual_routes` / `static_routes`: the destination and the
/// `ip route` options, each typed where Fulcrum may act on it; the rest kept
/// as written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Route {
    /// `blackhole`, `unreachable`, `prohibit`, `throw`, ... or `None` for
    /// a unicast route.
    pub kind: Option<String>,
    pub destination: Prefix,
    pub source: Option<IpAddr>,
    /// `via`/`gw`; several with `or` (multipath).
    pub gateways: Vec<IpAddr>,
    pub device: Option<String>,
    pub table: Option<String>,
    pub metric: Option<u32>,
    pub scope: Option<Scope>,
    pub no_track: bool,
    /// Every option after the destination, as written (`onlink`, `mtu`,
    /// `nexthop` blocks...).
    pub options: Vec<String>,
    /// The options of `options` not typed above that change which traffic
    /// the route takes or where it sends it (`from`, `tos`, `encap`, a
    /// nexthop's `dev`, a `local` or `nat` route), by name: Fulcrum does
    /// not apply them yet, and pulse leaves such a route out rather than
    /// add another one. `pulse -t` notes each.
    pub not_applied: Vec<String>,
    /// The other options not typed above, which only tune the route (its
    /// metrics such as `mtu`, `onlink`, `protocol`, `realms`): pulse adds
    /// the route without them, with a warning. `pulse -t` notes each.
    pub tuning_not_applied: Vec<String>,
}

/// One line of `virtual_rules` / `static_rules`: `ip rule` selectors and an
/// action; typed where simple, all words kept.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Rule {
    pub from: Option<Prefix>,
    pub to: Option<Prefix>,
    pub table: Option<String>,
    pub priority: Option<u32>,
    pub fwmark: Option<String>,
    pub no_track: bool,
    pub options: Vec<String>,
    /// As [`Route::not_applied`]: the selectors and actions other than
    /// those typed above (`iif`, `not`, `goto`, `blackhole`...). A rule
    /// added without them would take other traffic, or do something else
    /// with it, so pulse leaves it out.
    pub not_applied: Vec<String>,
    /// As [`Route::tuning_not_applied`]: `protocol`, a label.
    pub tuning_not_applied: Vec<String>,
}
