//! The typed keepalived configuration, with keepalived's defaults applied.
//!
//! Every field documents the default keepalived uses when the keyword is
//! absent; `Option` is used where keepalived distinguishes "unset".
//! Durations are `std::time::Duration` (keepalived's timers have microsecond
//! resolution).

mod checkers;
mod global;
mod lvs;
mod sdn;
mod seconds;
mod vrrp;
mod written;

pub use checkers::*;
pub use global::*;
pub use lvs::*;
pub use sdn::*;
pub use vrrp::*;
pub use written::{Unwritten, Written};

use std::net::IpAddr;

use serde::Serialize;

/// A whole keepalived.conf.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Config {
    pub global: GlobalDefs,
    pub vrrp_scripts: Vec<VrrpScript>,
    pub track_files: Vec<TrackFile>,
    pub track_processes: Vec<TrackProcess>,
    pub sync_groups: Vec<SyncGroup>,
    pub garp_groups: Vec<GarpGroup>,
    pub vrrp_instances: Vec<VrrpInstance>,
    /// `static_ipaddress`: addresses keepalived adds at start-up, whatever
    /// the VRRP state.
    pub static_addresses: Vec<VirtualAddress>,
    pub static_routes: Vec<Route>,
    pub static_rules: Vec<Rule>,
    pub virtual_server_groups: Vec<VirtualServerGroup>,
    pub virtual_servers: Vec<VirtualServer>,
    /// The `SSL` block, for SSL_GET checkers (keepalived generates a context
    /// when it is absent).
    pub ssl: Option<SslContext>,
    pub bfd_instances: Vec<BfdInstance>,
    /// `virtual_network` blocks (the SDN mode).
    pub virtual_networks: Vec<VirtualNetwork>,
    /// `mux { ... }`: this pulse is the SDN mode's Mux.
    pub mux: Option<Endpoint>,
    /// `host_agent { ... }`: what fulcrum-agent reads.
    pub host_agent: Option<Endpoint>,
    /// `net_namespace NAME`: the daemon runs in the network namespace
    /// `ip netns` keeps as NAME.
    pub net_namespace: Option<String>,
    /// Top-level keywords stored as written and not yet acted on
    /// (`net_namespace`, `linkbeat_interfaces`, ...).
    pub other: Vec<RawSetting>,
}

/// Where an object was written, for the reports made about it after the
/// parse (`pulse --apply`'s checks of a policy). Not part of the object's
/// value: two objects written at different places but otherwise the same
/// are equal (a reload compares virtual servers this way), and it is not
/// serialized.
#[derive(Debug, Clone, Copy, Default)]
pub struct Place(pub Option<crate::syntax::Span>);

impl PartialEq for Place {
    fn eq(&self, _other: &Self) -> bool {
        true
    }
}

impl Eq for Place {}

/// An address with a prefix length (`10.0.0.1/24`; the length defaults to
/// the whole address: 32 or 128).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Prefix {
    pub address: IpAddr,
    pub length: u8,
}

impl std::fmt::Display for Prefix {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(formatter, "{}/{}", self.address, self.length)
    }
}

/// A script keepalived runs (`notify_*`, `quorum_up`, `misc_path`, ...):
/// the command line (the first word after the keyword, quoted when it has
/// arguments) and the user and group to run it as (default: the global
/// `script_user`).
#[derive(Debug, Clone, Serialize)]
pub struct Script {
    pub command: String,
    /// The command line split into the program and its arguments, as
    /// keepalived does before `execve` (quotes and escapes, no shell).
    pub argv: Vec<String>,
    pub user: Option<String>,
    pub group: Option<String>,
    /// Where it is written, for the reports about it.
    #[serde(skip)]
    pub span: Option<crate::syntax::Span>,
    /// Whom it runs as, once reviewed as keepalived reviews its scripts
    /// (the `fulcrum-scripts` crate: the user resolved, the program found,
    /// its permissions checked); `None` before.
    #[serde(skip)]
    pub runs_as: Option<Account>,
}

/// Two scripts are the same when they run the same way, wherever they are
/// written: a reload that moves a block does not change it.
impl PartialEq for Script {
    fn eq(&self, other: &Self) -> bool {
        self.command == other.command
            && self.argv == other.argv
            && self.user == other.user
            && self.group == other.group
            && self.runs_as == other.runs_as
    }
}

impl Eq for Script {}

impl std::hash::Hash for Script {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.command.hash(state);
        self.argv.hash(state);
        self.user.hash(state);
        self.group.hash(state);
        self.runs_as.hash(state);
    }
}

/// The user and group ids a script runs as.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub struct Account {
    pub uid: u32,
    pub gid: u32,
}

impl Script {
    pub fn new(command: &str, user: Option<String>, group: Option<String>) -> Script {
        let argv = match crate::lexer::split_quoted_escaped(command) {
            Ok(words) => words
                .into_iter()
                .map(|word| String::from_utf8_lossy(&word).into_owned())
                .collect(),
            Err(_) => command.split_whitespace().map(str::to_string).collect(),
        };
        Script {
            command: command.to_string(),
            argv,
            user,
            group,
            span: None,
            runs_as: None,
        }
    }

    /// The script, written at `span`.
    pub fn at(mut self, span: crate::syntax::Span) -> Script {
        self.span = Some(span);
        self
    }
}

/// A keyword kept as written because Fulcrum does not act on it yet (it is
/// reported as a note, never dropped silently).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RawSetting {
    pub keyword: String,
    pub arguments: Vec<String>,
    /// The lines of its block, if it has one.
    pub block: Vec<RawSetting>,
    /// `file:line` where it was written.
    pub line: u32,
}
