//! What the agent publishes about itself for `/metrics`: the DIPs it found
//! and their health as its probes decided it, the translations it holds,
//! and how far it is behind the store's policy.
//!
//! Rules:
//! - **One value, published.** The agent's loop owns an [`AgentReport`]
//!   in a `watch` channel and changes it in place (these functions, pure:
//!   the time is given); `/metrics` reads the latest. Nothing else counts.
//! - **A DIP's health is its probes' last verdict**, per network and
//!   backend port (DIP:port), with the reason nanny gave and when its
//!   state was last decided (its first verdict, then each change); each
//!   verdict is counted by its result. A DIP the policy no longer has is
//!   forgotten ([`AgentReport::retain`]), as the agent deletes its health.
//! - **Translations are what the kernel holds**: counted per network from
//!   the rules last applied that the kernel took.
//! - **The lag is what this agent has seen**, as the Mux's: the store's
//!   policy revision from each reading and each watch event that writes
//!   it; behind from the first revision seen and not applied, 0 in sync.

use std::collections::{BTreeMap, BTreeSet};
use std::net::{IpAddr, SocketAddr};
use std::time::SystemTime;

pub use fulcrum_cluster::sync::PolicySync;

/// The agent's state, as last published.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AgentReport {
    /// Its name in the store (its VTEP address).
    pub host: String,
    /// Whether it holds a connection to the store.
    pub connected: bool,
    pub sync: PolicySync,
    /// The networks it serves (the policy agrees with its file).
    pub networks: Vec<String>,
    /// The DIPs found on its segments: (network, address).
    pub found: BTreeSet<(String, IpAddr)>,
    /// By network and DIP:backend port.
    pub health: BTreeMap<(String, SocketAddr), DipHealth>,
    /// The translations the kernel holds, by network.
    pub translations: BTreeMap<String, u64>,
}

/// A DIP's health on a backend port, as its probes decided it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DipHealth {
    pub up: bool,
    /// The check that decided, and what it found.
    pub reason: String,
    /// When its state was last decided: its first verdict, then each change.
    pub since: SystemTime,
    /// Verdicts by result.
    pub verdicts_up: u64,
    pub verdicts_down: u64,
}

impl AgentReport {
    pub fn new(host: &str) -> AgentReport {
        AgentReport {
            host: host.to_owned(),
            ..AgentReport::default()
        }
    }

    /// A verdict of the probes of `dip` in `network`, at `now`.
    pub fn verdict(
        &mut self,
        network: &str,
        dip: SocketAddr,
        up: bool,
        reason: &str,
        now: SystemTime,
    ) {
        let health = self
            .health
            .entry((network.to_owned(), dip))
            .or_insert_with(|| DipHealth {
                up,
                reason: String::new(),
                since: now,
                verdicts_up: 0,
                verdicts_down: 0,
            });
        if health.up != up {
            health.since = now;
        }
        health.up = up;
        reason.clone_into(&mut health.reason);
        if up {
            health.verdicts_up += 1;
        } else {
            health.verdicts_down += 1;
        }
    }

    /// Forgets the health of the DIPs not in `dips` (network, address):
    /// the policy no longer has them.
    pub fn retain(&mut self, dips: &BTreeSet<(String, IpAddr)>) {
        self.health
            .retain(|(network, dip), _| dips.contains(&(network.clone(), dip.ip())));
    }

    /// How many DIPs are found in each served network (0 for one with
    /// none).
    pub fn found_by_network(&self) -> BTreeMap<&str, u64> {
        let mut counts: BTreeMap<&str, u64> = self
            .networks
            .iter()
            .map(|network| (network.as_str(), 0))
            .collect();
        for (network, _) in &self.found {
            *counts.entry(network.as_str()).or_default() += 1;
        }
        counts
    }
}

#[cfg(test)]
mod tests;
