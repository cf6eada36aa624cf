//! The key schema in etcd, version 1: the SDN mode's northbound API
//! (docs/sdn.md is its reference; this module is its one definition).
//!
//! Rules:
//! - Every key starts with [`ROOT`], `/fulcrum/v1/`: a later schema gets a
//!   root of its own, and readers of this one never guess at another's.
//! - Values are JSON objects. Readers ignore fields they do not know (a
//!   later minor addition), and refuse a value that lacks one they need,
//!   naming the key.
//! - **Policy** (`policy/...`) is written by an orchestrator or
//!   `pulse --apply`, always in one transaction that also raises
//!   `policy/revision` and that holds only if `policy/revision` is still
//!   what the writer read: a watcher applies whole revisions, and two
//!   writers cannot interleave.
//! - **Live state** (`live/...`) is written by the daemons, each key under
//!   its writer's lease, so that a dead writer's entries expire. A host
//!   agent's keys are all under its own host's name; a Mux's under its ID
//!   (`live/applied/mux/ID`, `live/muxes/ID/...`).

use std::net::IpAddr;

use serde::{Deserialize, Serialize};

/// The prefix of every key of this schema.
pub const ROOT: &str = "/fulcrum/v1/";

/// Where the policy's revision is.
pub fn policy_revision() -> String {
    format!("{ROOT}policy/revision")
}

/// Every policy key starts with this.
pub fn policy_prefix() -> String {
    format!("{ROOT}policy/")
}

/// Every live key starts with this.
pub fn live_prefix() -> String {
    format!("{ROOT}live/")
}

pub fn network(name: &str) -> String {
    format!("{ROOT}policy/networks/{name}")
}

pub fn vip(address: IpAddr, protocol: Protocol, port: u16) -> String {
    format!("{ROOT}policy/vips/{address}/{}/{port}", protocol.name())
}

pub fn host(host: &str) -> String {
    format!("{ROOT}live/hosts/{host}")
}

pub fn local_dip(host: &str, network: &str, address: IpAddr) -> String {
    format!("{ROOT}live/dips/{host}/{network}/{address}")
}

pub fn health(host: &str, network: &str, address: IpAddr, port: u16) -> String {
    format!("{ROOT}live/health/{host}/{network}/{address}/{port}")
}

pub fn applied(role: Role, id: &str) -> String {
    format!("{ROOT}live/applied/{}/{id}", role.name())
}

/// Where Mux `id` says how its kernel holds a VIP's service.
pub fn mux_service(id: &str, address: IpAddr, protocol: Protocol, port: u16) -> String {
    format!(
        "{ROOT}live/muxes/{id}/services/{address}/{}/{port}",
        protocol.name()
    )
}

/// A value of the schema as the store holds it.
pub fn to_json(value: &impl Serialize) -> String {
    serde_json::to_string(value).expect("the schema's values serialize")
}

/// `policy/revision`: raised by every policy transaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct PolicyRevision {
    pub revision: u64,
}

/// `policy/networks/NAME`: a tenant network.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Network {
    /// 1 to 16,777,215.
    pub vni: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Protocol {
    Tcp,
    Udp,
    Sctp,
}

impl Protocol {
    /// The protocol `text` names (`tcp`, `udp`, `sctp`), or why not.
    pub fn parse(text: &str) -> Result<Protocol, String> {
        match text {
            "tcp" => Ok(Protocol::Tcp),
            "udp" => Ok(Protocol::Udp),
            "sctp" => Ok(Protocol::Sctp),
            other => Err(format!("'{other}' is not tcp, udp or sctp")),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Protocol::Tcp => "tcp",
            Protocol::Udp => "udp",
            Protocol::Sctp => "sctp",
        }
    }
}

/// `policy/vips/ADDRESS/PROTOCOL/PORT`: a VIP's rule.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Vip {
    /// The tenant network its DIPs are in.
    pub network: String,
    /// An IPVS scheduler's name (`mh` keeps flows on the same DIP across
    /// Muxes and across a DIP's departure).
    pub scheduler: String,
    /// Seconds; absent: not persistent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub persistence_timeout: Option<u32>,
    pub dips: Vec<Dip>,
}

/// A DIP of a VIP's pool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Dip {
    pub address: IpAddr,
    /// The backend port the host agent translates the frontend port to.
    pub port: u16,
    pub weight: u32,
    /// Run by the host agent that holds the DIP, with keepalived's
    /// semantics; none: the DIP counts as up while it is found.
    #[serde(default)]
    pub probes: Vec<Probe>,
}

/// A probe, keepalived's checker of the same name.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type")]
pub enum Probe {
    #[serde(rename = "TCP_CHECK")]
    Tcp {
        #[serde(flatten)]
        timing: Timing,
    },
    #[serde(rename = "HTTP_GET")]
    Http {
        #[serde(flatten)]
        timing: Timing,
        #[serde(flatten)]
        http: Http,
    },
    #[serde(rename = "SSL_GET")]
    Ssl {
        #[serde(flatten)]
        timing: Timing,
        #[serde(flatten)]
        http: Http,
    },
    #[serde(rename = "PING_CHECK")]
    Ping {
        #[serde(flatten)]
        timing: Timing,
    },
}

impl Probe {
    /// What every probe has.
    pub fn timing(&self) -> &Timing {
        match self {
            Probe::Tcp { timing }
            | Probe::Http { timing, .. }
            | Probe::Ssl { timing, .. }
            | Probe::Ping { timing } => timing,
        }
    }
}

/// What every probe has: keepalived's values, resolved (durations in
/// seconds).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Timing {
    pub delay_loop: f64,
    pub connect_timeout: f64,
    pub retry: u32,
    pub delay_before_retry: f64,
    pub warmup: f64,
    /// The DIP starts down until its first success.
    #[serde(default)]
    pub alpha: bool,
    /// Default: the DIP's port.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connect_port: Option<u16>,
}

/// HTTP_GET and SSL_GET.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Http {
    /// `1.0`, `1.0C` or `1.1`.
    pub http_protocol: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub virtualhost: Option<String>,
    pub urls: Vec<UrlCheck>,
}

/// An `url { ... }`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UrlCheck {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub digest: Option<String>,
    /// Inclusive ranges; default 200 to 299.
    pub status_codes: Vec<[u16; 2]>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub virtualhost: Option<String>,
}

/// `live/hosts/HOST`: a host agent, under its lease.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Host {
    /// Its VXLAN tunnel endpoint on the underlay.
    pub vtep: IpAddr,
}

/// `live/dips/HOST/NETWORK/ADDRESS`: a DIP a host agent found on its
/// segment of that network.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LocalDip {
    pub vni: u32,
    /// `aa:bb:cc:dd:ee:ff`: what the Mux's neighbour entry for the DIP says.
    pub mac: String,
}

/// `live/health/HOST/NETWORK/ADDRESS/PORT`: the DIP's health on that
/// backend port, as its host agent's probes found it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Health {
    pub up: bool,
}

/// Who applies the policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    Mux,
    Agent,
}

impl Role {
    pub fn name(self) -> &'static str {
        match self {
            Role::Mux => "mux",
            Role::Agent => "agent",
        }
    }
}

/// `live/applied/ROLE/ID`: the policy revision a Mux or an agent applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Applied {
    pub revision: u64,
}

/// `live/muxes/ID/services/ADDRESS/PROTOCOL/PORT`: a VIP's service as Mux
/// ID's kernel holds it once a change is applied, and whether the Mux
/// announces the VIP: what `pulse --status` shows of the announcements,
/// and what `pulse --which-dip` computes each Mux's choice from (every
/// Mux's own table, read back from its kernel, not the policy).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MuxService {
    /// The Mux announces the VIP (routes it in its announce table).
    pub announced: bool,
    /// The IPVS scheduler's name.
    pub scheduler: String,
    /// `mh-port`: the client's port is hashed with its address.
    #[serde(default)]
    pub mh_port: bool,
    /// `mh-fallback`: a flow hashed to a DIP at weight 0 goes on.
    #[serde(default)]
    pub mh_fallback: bool,
    /// In the kernel's list order (the head first), which is the order
    /// `mh` fills its table in.
    pub destinations: Vec<MuxDestination>,
}

/// A destination of a [`MuxService`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct MuxDestination {
    pub address: IpAddr,
    pub port: u16,
    pub weight: u32,
    /// The last weight the kernel keeps for it (set by its creation, even
    /// to 0, and by every edit to a weight above 0), as the Mux knows it:
    /// the kernel does not show it, and `mh` sizes a destination's share of
    /// its table by it. Absent (null) where the Mux cannot know: a
    /// destination a previous Mux left at weight 0.
    #[serde(default)]
    pub last_weight: Option<u32>,
}

/// A key of this schema, read back from its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Key {
    PolicyRevision,
    Network(String),
    Vip {
        address: IpAddr,
        protocol: Protocol,
        port: u16,
    },
    Host(String),
    LocalDip {
        host: String,
        network: String,
        address: IpAddr,
    },
    Health {
        host: String,
        network: String,
        address: IpAddr,
        port: u16,
    },
    Applied {
        role: Role,
        id: String,
    },
    MuxService {
        id: String,
        address: IpAddr,
        protocol: Protocol,
        port: u16,
    },
}

impl Key {
    /// The key `text` names, or why it is none of this schema's.
    pub fn parse(text: &str) -> Result<Key, String> {
        let rest = text
            .strip_prefix(ROOT)
            .ok_or_else(|| format!("not under {ROOT}"))?;
        let parts: Vec<&str> = rest.split('/').collect();
        let address = |text: &str| {
            text.parse::<IpAddr>()
                .map_err(|_| format!("'{text}' is not an IP address"))
        };
        let port = |text: &str| {
            text.parse::<u16>()
                .map_err(|_| format!("'{text}' is not a port"))
        };
        let name = |text: &str| {
            if text.is_empty() {
                Err("an empty name".to_owned())
            } else {
                Ok(text.to_owned())
            }
        };
        let protocol = Protocol::parse;
        Ok(match parts.as_slice() {
            ["policy", "revision"] => Key::PolicyRevision,
            ["policy", "networks", network] => Key::Network(name(network)?),
            ["policy", "vips", vip, written, frontend] => Key::Vip {
                address: address(vip)?,
                protocol: protocol(written)?,
                port: port(frontend)?,
            },
            ["live", "hosts", host] => Key::Host(name(host)?),
            ["live", "dips", host, network, dip] => Key::LocalDip {
                host: name(host)?,
                network: name(network)?,
                address: address(dip)?,
            },
            ["live", "health", host, network, dip, backend] => Key::Health {
                host: name(host)?,
                network: name(network)?,
                address: address(dip)?,
                port: port(backend)?,
            },
            ["live", "applied", role, id] => Key::Applied {
                role: match *role {
                    "mux" => Role::Mux,
                    "agent" => Role::Agent,
                    other => return Err(format!("'{other}' is not mux or agent")),
                },
                id: name(id)?,
            },
            ["live", "muxes", id, "services", vip, written, frontend] => Key::MuxService {
                id: name(id)?,
                address: address(vip)?,
                protocol: protocol(written)?,
                port: port(frontend)?,
            },
            _ => return Err("not a key of schema v1".to_owned()),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_key_reads_back_as_written() {
        let address: IpAddr = "2001:db8::5".parse().unwrap();
        let cases = [
            (policy_revision(), Key::PolicyRevision),
            (network("tenant-a"), Key::Network("tenant-a".into())),
            (
                vip(address, Protocol::Tcp, 80),
                Key::Vip {
                    address,
                    protocol: Protocol::Tcp,
                    port: 80,
                },
            ),
            (host("host1"), Key::Host("host1".into())),
            (
                local_dip("host1", "tenant-a", address),
                Key::LocalDip {
                    host: "host1".into(),
                    network: "tenant-a".into(),
                    address,
                },
            ),
            (
                health("host1", "tenant-a", address, 8080),
                Key::Health {
                    host: "host1".into(),
                    network: "tenant-a".into(),
                    address,
                    port: 8080,
                },
            ),
            (
                applied(Role::Mux, "mux1"),
                Key::Applied {
                    role: Role::Mux,
                    id: "mux1".into(),
                },
            ),
            (
                mux_service("172.30.1.2", address, Protocol::Udp, 53),
                Key::MuxService {
                    id: "172.30.1.2".into(),
                    address,
                    protocol: Protocol::Udp,
                    port: 53,
                },
            ),
        ];
        for (text, key) in cases {
            assert_eq!(Key::parse(&text), Ok(key), "{text}");
        }
        assert!(Key::parse("/fulcrum/v2/policy/revision").is_err());
        assert_eq!(
            Key::parse("/fulcrum/v1/policy/vips/10.0.0.1/icmp/80"),
            Err("'icmp' is not tcp, udp or sctp".into())
        );
        assert!(Key::parse("/fulcrum/v1/policy/networks/").is_err());
    }

    #[test]
    fn a_probe_is_tagged_with_keepalived_s_name() {
        let probe = Probe::Http {
            timing: Timing {
                delay_loop: 2.0,
                connect_timeout: 1.5,
                retry: 1,
                delay_before_retry: 1.0,
                warmup: 0.0,
                alpha: false,
                connect_port: None,
            },
            http: Http {
                http_protocol: "1.0".into(),
                virtualhost: None,
                urls: vec![UrlCheck {
                    path: Some("/health".into()),
                    digest: None,
                    status_codes: vec![[200, 299]],
                    virtualhost: None,
                }],
            },
        };
        let text = serde_json::to_string(&probe).unwrap();
        assert!(
            text.starts_with(r#"{"type":"HTTP_GET","delay_loop":2.0"#),
            "{text}"
        );
        assert_eq!(serde_json::from_str::<Probe>(&text).unwrap(), probe);
        // A field of a later minor version is ignored.
        let later = text.replacen('{', r#"{"jitter":0.1,"#, 1);
        assert_eq!(serde_json::from_str::<Probe>(&later).unwrap(), probe);
    }
}
