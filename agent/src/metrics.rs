//! fulcrum-agent's `/metrics` (`--metrics ADDRESS:PORT`): what its loop
//! publishes ([`crate::report`]), read at each scrape.
//!
//! Rules:
//! - **Under `fulcrum_agent_`, each sample with a `host` label** (the
//!   agent's VTEP, its name in the store), as the Mux's carry `mux`.
//! - **Its DIPs by network**: how many it found on each segment; each
//!   probed DIP:port's health (1 up, 0 down), the reason and time of its
//!   last change, and its probes' verdicts by result.
//! - **The translations it holds per network**, and its own sync lag
//!   (policy revision applied against the store's), as the Mux's.
//! - Nothing node_exporter has: conntrack's totals are its conntrack
//!   collector's.

use std::time::SystemTime;

use fulcrum_metrics::prometheus_client::collector::Collector;
use fulcrum_metrics::prometheus_client::encoding::DescriptorEncoder;
use fulcrum_metrics::prometheus_client::registry::Registry;
use fulcrum_metrics::{counter, flag, gauge, seconds};
use tokio::sync::watch;

use crate::report::AgentReport;

/// The registry the agent serves.
pub fn registry(report: watch::Receiver<AgentReport>) -> Registry {
    let mut registry = Registry::default();
    registry.register_collector(Box::new(AgentCollector(report)));
    registry
}

#[derive(Debug)]
struct AgentCollector(watch::Receiver<AgentReport>);

impl Collector for AgentCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let report = self.0.borrow().clone();
        families(&mut encoder, &report, SystemTime::now())
    }
}

/// Every family, as at `now`.
fn families(
    encoder: &mut DescriptorEncoder,
    report: &AgentReport,
    now: SystemTime,
) -> Result<(), std::fmt::Error> {
    let host = || ("host", report.host.clone());
    let sync = &report.sync;
    gauge(
        encoder,
        "fulcrum_agent_store_connected",
        "Whether the agent follows the cluster store (1), or probes on without it (0)",
        [([host()], flag(report.connected))],
    )?;
    gauge(
        encoder,
        "fulcrum_agent_policy_revision_applied",
        "The policy revision the agent's translations and probes follow",
        sync.applied.map(|revision| ([host()], revision as f64)),
    )?;
    gauge(
        encoder,
        "fulcrum_agent_policy_revision_store",
        "The store's latest policy revision the agent has seen",
        sync.store.map(|revision| ([host()], revision as f64)),
    )?;
    gauge(
        encoder,
        "fulcrum_agent_sync_lag_revisions",
        "How many policy revisions the store has that the agent has not applied",
        [([host()], sync.revisions_behind() as f64)],
    )?;
    gauge(
        encoder,
        "fulcrum_agent_sync_lag_seconds",
        "How long the store has had a policy revision the agent has not applied (0 in sync)",
        [([host()], sync.seconds_behind(now))],
    )?;
    gauge(
        encoder,
        "fulcrum_agent_dips_found",
        "The policy's DIPs found on a network's segment of this host",
        report
            .found_by_network()
            .into_iter()
            .map(|(network, count)| ([host(), ("network", network.to_owned())], count as f64)),
    )?;
    let dip = |network: &str, dip: &std::net::SocketAddr| {
        [
            host(),
            ("network", network.to_owned()),
            ("dip", dip.to_string()),
        ]
    };
    gauge(
        encoder,
        "fulcrum_agent_dip_up",
        "Whether a DIP's probes hold it up (1) or down (0), on its backend port",
        report
            .health
            .iter()
            .map(|((network, address), health)| (dip(network, address), flag(health.up))),
    )?;
    gauge(
        encoder,
        "fulcrum_agent_dip_last_change_info",
        "Why a DIP's probes last decided its state: the check and what it found",
        report.health.iter().map(|((network, address), health)| {
            let [host, network, address] = dip(network, address);
            (
                [
                    host,
                    network,
                    address,
                    ("state", if health.up { "up" } else { "down" }.to_owned()),
                    ("reason", health.reason.clone()),
                ],
                1.0,
            )
        }),
    )?;
    gauge(
        encoder,
        "fulcrum_agent_dip_last_change_timestamp_seconds",
        "When a DIP's probes last decided its state (its first verdict, then each change)",
        report
            .health
            .iter()
            .map(|((network, address), health)| (dip(network, address), seconds(health.since))),
    )?;
    counter(
        encoder,
        "fulcrum_agent_probe_verdicts",
        "The verdicts of a DIP's probes, by result",
        report
            .health
            .iter()
            .flat_map(|((network, address), health)| {
                let [host, network, address] = dip(network, address);
                [("up", health.verdicts_up), ("down", health.verdicts_down)].map(
                    |(result, count)| {
                        (
                            [
                                host.clone(),
                                network.clone(),
                                address.clone(),
                                ("result", result.to_owned()),
                            ],
                            count,
                        )
                    },
                )
            }),
    )?;
    gauge(
        encoder,
        "fulcrum_agent_nat_translations",
        "The translations (a VIP's address, protocol and port to a found DIP's backend port) \
         the kernel holds for a network",
        report
            .translations
            .iter()
            .map(|(network, count)| ([host(), ("network", network.clone())], *count as f64)),
    )
}

/// The registry's text for `report` as at `now`, in Prometheus' classic
/// format (what promtool reads): for tests.
pub fn text(report: &AgentReport, now: SystemTime) -> String {
    #[derive(Debug)]
    struct Fixed(AgentReport, SystemTime);
    impl Collector for Fixed {
        fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
            families(&mut encoder, &self.0, self.1)
        }
    }
    let mut registry = Registry::default();
    registry.register_collector(Box::new(Fixed(report.clone(), now)));
    fulcrum_metrics::classic(&fulcrum_metrics::encode(&registry))
}

#[cfg(test)]
mod tests;
