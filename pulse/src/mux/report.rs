//! What the Mux publishes about itself for `/metrics`: how far its kernel
//! is behind the store's policy, its last application, its tenants and the
//! VIPs it announces.
//!
//! Rules:
//! - **One value, published.** The Mux's loop owns a [`MuxReport`] in a
//!   `watch` channel and changes it in place (these functions, pure: the
//!   time is given); `/metrics` reads the latest. Nothing else counts.
//! - **The lag is what this Mux has seen.** The store's policy revision is
//!   taken from each reading and from each watch event that writes
//!   `policy/revision` (so that a revision the Mux has heard of but not
//!   read, its read failing, counts as behind). A Mux cut off from the
//!   store sees no new revision: [`MuxReport::connected`] says so.
//! - **Behind since the first revision not applied**: the lag in seconds
//!   counts from when the Mux first saw a revision above the one it
//!   applied, and is 0 once it has applied the store's latest, whatever
//!   came between.
//! - **The tenants and VIPs as the kernel holds them** after the last
//!   application that succeeded (a failed one changes nothing but its
//!   count).

use std::collections::BTreeSet;
use std::net::IpAddr;
use std::time::{Duration, SystemTime};

pub use fulcrum_cluster::sync::PolicySync;

/// The Mux's state, as last published.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MuxReport {
    /// The Mux's VTEP address, its name in the store.
    pub mux: String,
    /// Whether it holds a connection to the store that has read it whole.
    pub connected: bool,
    pub sync: PolicySync,
    /// The last application that succeeded.
    pub last_apply: Option<LastApply>,
    pub applies_succeeded: u64,
    pub applies_failed: u64,
    /// By VNI.
    pub tenants: Vec<TenantReport>,
}

/// The last application that succeeded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LastApply {
    /// When it ended.
    pub at: SystemTime,
    /// From a reading in hand to the kernel holding it (computing what
    /// is wanted, and programming it).
    pub took: Duration,
}

/// A tenant as the Mux's kernel holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TenantReport {
    pub vni: u32,
    pub network: String,
    /// Its namespace, `fulcrum-vniN`.
    pub namespace: String,
    /// Its VIPs (local in its namespace), each with whether it is
    /// announced.
    pub vips: Vec<(IpAddr, bool)>,
}

impl TenantReport {
    /// A tenant of `vips`, of which `announced` are announced.
    pub fn new(
        vni: u32,
        network: &str,
        namespace: &str,
        vips: &BTreeSet<IpAddr>,
        announced: &BTreeSet<IpAddr>,
    ) -> TenantReport {
        TenantReport {
            vni,
            network: network.to_owned(),
            namespace: namespace.to_owned(),
            vips: vips
                .iter()
                .map(|vip| (*vip, announced.contains(vip)))
                .collect(),
        }
    }
}

impl MuxReport {
    pub fn new(mux: &str) -> MuxReport {
        MuxReport {
            mux: mux.to_owned(),
            ..MuxReport::default()
        }
    }

    /// Policy `revision` applied at `now`, having taken `took`; the kernel
    /// now holds `tenants`.
    pub fn applied(
        &mut self,
        revision: u64,
        tenants: Vec<TenantReport>,
        took: Duration,
        now: SystemTime,
    ) {
        self.sync.applied(revision, now);
        self.last_apply = Some(LastApply { at: now, took });
        self.applies_succeeded += 1;
        self.tenants = tenants;
    }

    /// An application the kernel refused (the next change or reading tries
    /// again).
    pub fn apply_failed(&mut self) {
        self.applies_failed += 1;
    }

    /// How many VIPs are announced.
    pub fn announced(&self) -> usize {
        self.tenants
            .iter()
            .flat_map(|tenant| &tenant.vips)
            .filter(|(_, announced)| *announced)
            .count()
    }
}

#[cfg(test)]
mod tests;
