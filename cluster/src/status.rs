//! What a reading of the store says of the cluster (`pulse --status`):
//! pure, from a [`Reading`].
//!
//! Rules:
//! - Every key of the reading is accounted for: a key or a value this
//!   schema cannot read is a problem named by its key, and the rest is
//!   still shown.
//! - A DIP's host is the host agent that registered it in its network; its
//!   health is what that agent wrote for the DIP's backend port, and
//!   `unknown` when the agent wrote none (or no agent has the DIP).
//! - A Mux or an agent is behind when the revision it applied is older
//!   than the policy's.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::net::IpAddr;

use serde::Serialize;

use crate::schema::{self, Applied, Health, Host, Key, LocalDip, Network, PolicyRevision, Vip};
use crate::store::Reading;

#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct Status {
    pub schema: &'static str,
    pub store_revision: i64,
    pub policy_revision: u64,
    pub networks: Vec<NetworkStatus>,
    pub vips: Vec<VipStatus>,
    pub hosts: Vec<HostStatus>,
    pub muxes: Vec<MuxStatus>,
    pub problems: Vec<String>,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct NetworkStatus {
    pub name: String,
    pub vni: u32,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct VipStatus {
    pub address: IpAddr,
    pub protocol: schema::Protocol,
    pub port: u16,
    pub network: String,
    pub scheduler: String,
    pub dips: Vec<DipStatus>,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct DipStatus {
    pub address: IpAddr,
    pub port: u16,
    pub weight: u32,
    /// The host agent that found it; `None`: no agent has.
    pub host: Option<String>,
    /// `up`, `down` or `unknown`.
    pub health: &'static str,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct HostStatus {
    pub name: String,
    pub vtep: IpAddr,
    /// DIPs it found, in every network.
    pub dips: usize,
    /// The policy revision it applied, if it said.
    pub applied: Option<u64>,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct MuxStatus {
    pub id: String,
    pub applied: u64,
}

/// The status a reading of the store gives.
pub fn of(reading: &Reading) -> Status {
    let mut status = Status {
        schema: "v1",
        store_revision: reading.store_revision,
        ..Status::default()
    };
    let mut vips = Vec::new();
    let mut hosts = BTreeMap::new();
    // (network, DIP address) -> the hosts that found it.
    let mut found: BTreeMap<(String, IpAddr), Vec<String>> = BTreeMap::new();
    let mut health = BTreeMap::new();
    let mut applied = BTreeMap::new();
    for (key_text, value) in &reading.entries {
        let key = match Key::parse(key_text) {
            Ok(key) => key,
            Err(problem) => {
                status.problems.push(format!("{key_text}: {problem}"));
                continue;
            }
        };
        let problem = |error: serde_json::Error| format!("{key_text}: unreadable value ({error})");
        let outcome: Result<(), String> = (|| {
            match key {
                Key::PolicyRevision => {
                    let revision: PolicyRevision =
                        serde_json::from_slice(value).map_err(problem)?;
                    status.policy_revision = revision.revision;
                }
                Key::Network(name) => {
                    let network: Network = serde_json::from_slice(value).map_err(problem)?;
                    status.networks.push(NetworkStatus {
                        name,
                        vni: network.vni,
                    });
                }
                Key::Vip {
                    address,
                    protocol,
                    port,
                } => {
                    let vip: Vip = serde_json::from_slice(value).map_err(problem)?;
                    vips.push((address, protocol, port, vip));
                }
                Key::Host(name) => {
                    let host: Host = serde_json::from_slice(value).map_err(problem)?;
                    hosts.insert(name, host);
                }
                Key::LocalDip {
                    host,
                    network,
                    address,
                } => {
                    let _: LocalDip = serde_json::from_slice(value).map_err(problem)?;
                    found.entry((network, address)).or_default().push(host);
                }
                Key::Health {
                    host,
                    network,
                    address,
                    port,
                } => {
                    let value: Health = serde_json::from_slice(value).map_err(problem)?;
                    health.insert((host, network, address, port), value.up);
                }
                Key::Applied { role, id } => {
                    let value: Applied = serde_json::from_slice(value).map_err(problem)?;
                    applied.insert((role, id), value.revision);
                }
            }
            Ok(())
        })();
        if let Err(problem) = outcome {
            status.problems.push(problem);
        }
    }
    for ((network, address), holders) in &found {
        if holders.len() > 1 {
            status.problems.push(format!(
                "DIP {address} of network {network} is found on several hosts: {}",
                holders.join(", ")
            ));
        }
    }
    for (address, protocol, port, vip) in vips {
        if !status
            .networks
            .iter()
            .any(|network| network.name == vip.network)
        {
            status.problems.push(format!(
                "{}: its network '{}' is not in the policy",
                schema::vip(address, protocol, port),
                vip.network
            ));
        }
        let dips = vip
            .dips
            .iter()
            .map(|dip| {
                let host = found
                    .get(&(vip.network.clone(), dip.address))
                    .and_then(|holders| holders.first())
                    .cloned();
                let up = host.as_ref().and_then(|host| {
                    health
                        .get(&(host.clone(), vip.network.clone(), dip.address, dip.port))
                        .copied()
                });
                DipStatus {
                    address: dip.address,
                    port: dip.port,
                    weight: dip.weight,
                    host,
                    health: match up {
                        Some(true) => "up",
                        Some(false) => "down",
                        None => "unknown",
                    },
                }
            })
            .collect();
        status.vips.push(VipStatus {
            address,
            protocol,
            port,
            network: vip.network,
            scheduler: vip.scheduler,
            dips,
        });
    }
    for (name, host) in hosts {
        let dips = found
            .values()
            .filter(|holders| holders.contains(&name))
            .count();
        status.hosts.push(HostStatus {
            applied: applied.get(&(schema::Role::Agent, name.clone())).copied(),
            name,
            vtep: host.vtep,
            dips,
        });
    }
    for ((role, id), revision) in applied {
        if role == schema::Role::Mux {
            status.muxes.push(MuxStatus {
                id,
                applied: revision,
            });
        }
    }
    status
}

/// The status as text, for people.
pub fn render(status: &Status) -> String {
    let mut text = String::new();
    let behind = |revision: u64| {
        if revision < status.policy_revision {
            format!(" (behind {})", status.policy_revision)
        } else {
            String::new()
        }
    };
    let _ = writeln!(
        text,
        "cluster store revision {}, policy revision {} (schema {})",
        status.store_revision, status.policy_revision, status.schema
    );
    let _ = writeln!(text, "\nnetworks");
    for network in &status.networks {
        let _ = writeln!(text, "  {}  vni {}", network.name, network.vni);
    }
    let _ = writeln!(text, "\nVIPs");
    for vip in &status.vips {
        let _ = writeln!(
            text,
            "  {}/{}  {}  {}",
            socket(vip.address, vip.port),
            vip.protocol.name(),
            vip.network,
            vip.scheduler
        );
        for dip in &vip.dips {
            let _ = writeln!(
                text,
                "    {}  weight {}  {}  {}",
                socket(dip.address, dip.port),
                dip.weight,
                dip.host.as_deref().unwrap_or("not found on any host"),
                dip.health
            );
        }
    }
    let _ = writeln!(text, "\nhosts");
    for host in &status.hosts {
        let _ = writeln!(
            text,
            "  {}  vtep {}  {} DIP{}  {}",
            host.name,
            host.vtep,
            host.dips,
            if host.dips == 1 { "" } else { "s" },
            match host.applied {
                Some(revision) => format!("applied revision {revision}{}", behind(revision)),
                None => "applied nothing yet".to_owned(),
            }
        );
    }
    let _ = writeln!(text, "\nmuxes");
    for mux in &status.muxes {
        let _ = writeln!(
            text,
            "  {}  applied revision {}{}",
            mux.id,
            mux.applied,
            behind(mux.applied)
        );
    }
    if !status.problems.is_empty() {
        let _ = writeln!(text, "\nproblems");
        for problem in &status.problems {
            let _ = writeln!(text, "  {problem}");
        }
    }
    text
}

/// `ADDRESS:PORT`, with brackets for IPv6.
fn socket(address: IpAddr, port: u16) -> String {
    std::net::SocketAddr::new(address, port).to_string()
}

#[cfg(test)]
mod tests;
