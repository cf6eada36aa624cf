//! What the LVS part publishes about itself: each real server's health as
//! the checks last decided it, and what the reconciler's passes did.
//!
//! Rules:
//! - **One value, published.** The reconciler's loop owns an [`LvsReport`]
//!   in a `watch` channel and changes it in place as verdicts come and
//!   passes end; `/metrics` reads the latest. Nothing else counts.
//! - **A real server is known by its virtual server and address**, as
//!   nanny reports it, the virtual server written as pulse logs it
//!   (`10.0.0.1:80 TCP`, `fwmark 5`, `group web`).
//! - **A transition is what keepalived calls one**: the cases where it
//!   runs `notify_up`/`notify_down`, as the reconciler decides them (a
//!   real server starts up, or down with `alpha`; a first verdict that
//!   says otherwise is a change, one that agrees is not).
//! - **What a reload removed is forgotten** ([`LvsReport::retain`]): a real
//!   server no longer configured has no health to show.
//! - **Passes are counted by what started them**, with the operations the
//!   kernel applied and refused; the operations of the passes that repair
//!   what another process changed (the audit, the netlink tap, a refusal
//!   that showed the table was not as known) are the drift repaired.

use std::collections::BTreeMap;
use std::fmt;
use std::net::SocketAddr;
use std::time::SystemTime;

use nanny::scheduler::StateChange;
use nanny::spec::VirtualServerKey;

/// The LVS part's state, as last published.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LvsReport {
    /// By virtual server (as written in logs) and real server.
    pub real_servers: BTreeMap<(String, SocketAddr), RealServerReport>,
    /// By what started the passes ([`Reason::label`]).
    pub passes: BTreeMap<&'static str, PassCounts>,
}

/// A real server's health, as the checks last decided it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RealServerReport {
    /// The virtual server's key, as nanny reports it.
    pub virtual_server: VirtualServerKey,
    pub up: bool,
    /// The check that decided and what it found.
    pub reason: String,
    /// When it was last decided: its first verdict, then each change.
    pub since: SystemTime,
    pub went_up: u64,
    pub went_down: u64,
}

/// What the passes of one kind did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PassCounts {
    pub passes: u64,
    /// Operations the kernel applied.
    pub applied: u64,
    /// Operations the kernel refused (each logged by its pass).
    pub refused: u64,
    /// Passes whose exchange with the kernel failed: the table could not
    /// be read, or a batch's answers were lost.
    pub netlink_errors: u64,
}

impl LvsReport {
    /// Takes in one of nanny's verdicts, at `now`; `changed` says which of
    /// its real servers the reconciler found changed (its
    /// `notify_up`/`notify_down` cases): keepalived's transitions, where a
    /// real server starts up (down with `alpha`), so that a first verdict
    /// of down is a change for a server without `alpha`.
    pub fn record(
        &mut self,
        change: &StateChange,
        changed: impl Fn(&VirtualServerKey, SocketAddr) -> bool,
        now: SystemTime,
    ) {
        for virtual_server in &change.virtual_servers {
            let address = change.real_server.address;
            let transition = changed(virtual_server, address);
            let known = self
                .real_servers
                .entry((virtual_server.to_string(), address))
                .or_insert_with(|| RealServerReport {
                    virtual_server: virtual_server.clone(),
                    up: change.up,
                    reason: String::new(),
                    since: now,
                    went_up: 0,
                    went_down: 0,
                });
            known.up = change.up;
            // A weight alone, or the same state reported again, may say
            // more of why; the state's time is its change's.
            known.reason.clone_from(&change.reason);
            if transition {
                known.since = now;
                if change.up {
                    known.went_up += 1;
                } else {
                    known.went_down += 1;
                }
            }
        }
    }

    /// Counts a pass and what the kernel made of its operations.
    pub fn count(&mut self, reason: Reason, applied: usize, refused: usize, netlink_error: bool) {
        let counts = self.passes.entry(reason.label()).or_default();
        counts.passes += 1;
        counts.applied += applied as u64;
        counts.refused += refused as u64;
        counts.netlink_errors += u64::from(netlink_error);
    }

    /// Forgets the real servers `configured` says no longer are.
    pub fn retain(&mut self, mut configured: impl FnMut(&VirtualServerKey, SocketAddr) -> bool) {
        self.real_servers
            .retain(|(_, address), known| configured(&known.virtual_server, *address));
    }

    /// The operations of the passes that repaired what another process
    /// changed: found by the audit, told by the netlink tap, or shown by a
    /// refusal.
    pub fn drift_repaired(&self) -> BTreeMap<&'static str, u64> {
        [Reason::DriftCheck, Reason::Edited, Reason::Refused]
            .into_iter()
            .map(|reason| {
                let applied = self
                    .passes
                    .get(reason.label())
                    .map_or(0, |counts| counts.applied);
                (reason.label(), applied)
            })
            .collect()
    }
}

/// What started a pass; audits log their repairs as warnings, since
/// something other than pulse changed the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reason {
    Start,
    Health,
    Reload,
    DriftCheck,
    Drain,
    /// The kernel refused a change because its object was not as known.
    Refused,
    /// Another process changed services ([`super::tap`] told).
    Edited,
    Stop,
}

impl fmt::Display for Reason {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(match self {
            Reason::Start => "start",
            Reason::Health => "health change",
            Reason::Reload => "reload",
            Reason::DriftCheck => "drift repair",
            Reason::Drain => "drain",
            Reason::Refused => "repair",
            Reason::Edited => "edit repair",
            Reason::Stop => "stop",
        })
    }
}

impl Reason {
    /// Its name as a metric's label.
    pub fn label(self) -> &'static str {
        match self {
            Reason::Start => "start",
            Reason::Health => "health",
            Reason::Reload => "reload",
            Reason::DriftCheck => "audit",
            Reason::Drain => "drain",
            Reason::Refused => "refusal",
            Reason::Edited => "netlink_tap",
            Reason::Stop => "stop",
        }
    }
}

#[cfg(test)]
mod tests;
