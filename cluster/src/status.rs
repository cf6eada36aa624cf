//! What a reading of the store says of the cluster (`pulse --status`):
//! pure, from a [`Reading`].
//!
//! Rules:
//! - What the schema cannot read is a problem named by its key
//!   ([`State`]), and the rest is still shown.
//! - A DIP's host is the host agent that registered it in its network; its
//!   health is what that agent wrote for the DIP's backend port, and
//!   `unknown` when the agent wrote none (or no agent has the DIP).
//! - A Mux or an agent is behind when the revision it applied is older
//!   than the policy's.
//! - A VIP is announced by the Muxes that say so of its service
//!   (`live/muxes/ID/services/...`, under each Mux's lease: a dead Mux's
//!   word expires with it).

use std::fmt::Write as _;
use std::net::IpAddr;

use serde::Serialize;

use crate::schema;
use crate::state::State;
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
    /// The Muxes announcing it, by ID.
    pub announced_by: Vec<String>,
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
    let state = State::of(reading);
    let mut status = Status {
        schema: "v1",
        store_revision: state.store_revision,
        policy_revision: state.policy_revision,
        networks: state
            .networks
            .iter()
            .map(|(name, network)| NetworkStatus {
                name: name.clone(),
                vni: network.vni,
            })
            .collect(),
        problems: state.problems.clone(),
        ..Status::default()
    };
    let holders = state.holders();
    for ((network, address), registered) in &holders {
        if registered.len() > 1 {
            status.problems.push(format!(
                "DIP {address} of network {network} is found on several hosts: {}",
                registered
                    .iter()
                    .map(|registered| registered.host.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
    }
    for (key, vip) in &state.vips {
        if !state.networks.contains_key(&vip.network) {
            status.problems.push(format!(
                "{}: its network '{}' is not in the policy",
                schema::vip(key.address, key.protocol, key.port),
                vip.network
            ));
        }
        let dips = vip
            .dips
            .iter()
            .map(|dip| {
                let host = holders
                    .get(&(vip.network.clone(), dip.address))
                    .and_then(|registered| registered.first())
                    .map(|registered| registered.host.clone());
                let up = host.as_ref().and_then(|host| {
                    state
                        .health
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
        let announced_by = state
            .mux_services
            .iter()
            .filter(|((_, service_key), service)| service_key == key && service.announced)
            .map(|((id, _), _)| id.clone())
            .collect();
        status.vips.push(VipStatus {
            address: key.address,
            protocol: key.protocol,
            port: key.port,
            network: vip.network.clone(),
            scheduler: vip.scheduler.clone(),
            dips,
            announced_by,
        });
    }
    for (name, host) in &state.hosts {
        let dips = state
            .dips
            .iter()
            .filter(|registered| &registered.host == name)
            .count();
        status.hosts.push(HostStatus {
            applied: state
                .applied
                .get(&(schema::Role::Agent, name.clone()))
                .copied(),
            name: name.clone(),
            vtep: host.vtep,
            dips,
        });
    }
    for ((role, id), revision) in &state.applied {
        if *role == schema::Role::Mux {
            status.muxes.push(MuxStatus {
                id: id.clone(),
                applied: *revision,
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
            "  {}/{}  {}  {}  {}",
            socket(vip.address, vip.port),
            vip.protocol.name(),
            vip.network,
            vip.scheduler,
            if vip.announced_by.is_empty() {
                "announced by no Mux".to_owned()
            } else {
                format!("announced by {}", vip.announced_by.join(", "))
            }
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
