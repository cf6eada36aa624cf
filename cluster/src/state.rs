//! A reading of the store as typed values: every key of the schema parsed
//! once, for whoever reads the cluster (`--status`, the Mux, the agents).
//!
//! Rules:
//! - Every key of the reading is accounted for: a key or a value the
//!   schema cannot read is a problem, in words and named by its key, and
//!   the rest is still read.
//! - Order is the store's (keys sorted): VIPs come in key order, DIPs in
//!   each VIP's policy order.

use std::collections::BTreeMap;
use std::net::IpAddr;

use crate::schema::{
    Applied, Health, Host, Key, LocalDip, MuxService, Network, PolicyRevision, Protocol, Role, Vip,
};
use crate::store::Reading;

/// A VIP's key: its address, protocol and frontend port.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct VipKey {
    pub address: IpAddr,
    pub protocol: Protocol,
    pub port: u16,
}

/// Where a DIP was registered: by which host, in which network.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Registered {
    pub host: String,
    pub network: String,
    pub address: IpAddr,
    pub dip: LocalDip,
}

/// (host, network, DIP, backend port).
pub type HealthKey = (String, String, IpAddr, u16);

#[derive(Debug, Clone, Default, PartialEq)]
pub struct State {
    pub store_revision: i64,
    pub policy_revision: u64,
    pub networks: BTreeMap<String, Network>,
    pub vips: Vec<(VipKey, Vip)>,
    pub hosts: BTreeMap<String, Host>,
    pub dips: Vec<Registered>,
    pub health: BTreeMap<HealthKey, bool>,
    pub applied: BTreeMap<(Role, String), u64>,
    /// What each Mux's kernel holds of each VIP: (Mux ID, VIP).
    pub mux_services: BTreeMap<(String, VipKey), MuxService>,
    pub problems: Vec<String>,
}

impl State {
    /// The state `reading` holds.
    pub fn of(reading: &Reading) -> State {
        let mut state = State {
            store_revision: reading.store_revision,
            ..State::default()
        };
        for (text, value) in &reading.entries {
            if let Err(problem) = state.take(text, value) {
                state.problems.push(format!("{text}: {problem}"));
            }
        }
        state
    }

    fn take(&mut self, text: &str, value: &[u8]) -> Result<(), String> {
        fn read<T: serde::de::DeserializeOwned>(value: &[u8]) -> Result<T, String> {
            serde_json::from_slice(value).map_err(|error| format!("unreadable value ({error})"))
        }
        match Key::parse(text)? {
            Key::PolicyRevision => {
                self.policy_revision = read::<PolicyRevision>(value)?.revision;
            }
            Key::Network(name) => {
                self.networks.insert(name, read(value)?);
            }
            Key::Vip {
                address,
                protocol,
                port,
            } => self.vips.push((
                VipKey {
                    address,
                    protocol,
                    port,
                },
                read(value)?,
            )),
            Key::Host(name) => {
                self.hosts.insert(name, read(value)?);
            }
            Key::LocalDip {
                host,
                network,
                address,
            } => self.dips.push(Registered {
                host,
                network,
                address,
                dip: read(value)?,
            }),
            Key::Health {
                host,
                network,
                address,
                port,
            } => {
                self.health
                    .insert((host, network, address, port), read::<Health>(value)?.up);
            }
            Key::Applied { role, id } => {
                self.applied
                    .insert((role, id), read::<Applied>(value)?.revision);
            }
            Key::MuxService {
                id,
                address,
                protocol,
                port,
            } => {
                let vip = VipKey {
                    address,
                    protocol,
                    port,
                };
                self.mux_services.insert((id, vip), read(value)?);
            }
        }
        Ok(())
    }

    /// Each registered (network, DIP) with the hosts that registered it.
    pub fn holders(&self) -> BTreeMap<(String, IpAddr), Vec<&Registered>> {
        let mut holders: BTreeMap<(String, IpAddr), Vec<&Registered>> = BTreeMap::new();
        for registered in &self.dips {
            holders
                .entry((registered.network.clone(), registered.address))
                .or_default()
                .push(registered);
        }
        holders
    }
}
