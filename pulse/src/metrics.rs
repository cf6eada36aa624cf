//! pulse's `/metrics` (`--metrics ADDRESS:PORT`): what its parts publish,
//! read at each scrape.
//!
//! Rules:
//! - **The keepalived exporters' names and labels for VRRP**, so that the
//!   dashboards and alerts written for mehdy/keepalived-exporter (and
//!   gen2brain's, which share them) work unchanged: `keepalived_up`,
//!   `keepalived_vrrp_state{iname,intf,vrid,ip_address}` (one sample per
//!   virtual address, keepalived's state number; an instance without
//!   addresses has one with `ip_address=""`, as the exporter does), the
//!   counters of keepalived.stats as `keepalived_*_total{iname,intf,vrid}`,
//!   `keepalived_gratuitous_arp_delay_total` (the exporter's name for a
//!   setting, kept), `keepalived_script_status{name}` (1 GOOD, 0 BAD; a
//!   script without a result yet has no sample, as the exporter reads none
//!   from keepalived.data).
//! - **pulse's own under `pulse_`**: configuration reloads as Prometheus
//!   names its own (`pulse_config_last_reload_successful`,
//!   `pulse_config_last_reload_success_timestamp_seconds`), reloads by
//!   result, each instance's priorities, which no exporter has; each real
//!   server's health (`pulse_real_server_up{virtual_server,real_server}`),
//!   the reason of its last change (an `_info` family whose `reason` label
//!   carries it, one sample per real server), its transitions; the IPVS
//!   passes by what started them, the operations applied and refused, the
//!   drift repaired, the netlink errors.
//! - **Nothing node_exporter has.** IPVS's traffic counters are in
//!   /proc/net/ip_vs_stats, which node_exporter's ipvs collector reads.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use fulcrum_metrics::prometheus_client::collector::Collector;
use fulcrum_metrics::prometheus_client::encoding::DescriptorEncoder;
use fulcrum_metrics::prometheus_client::metrics::histogram::Histogram;
use fulcrum_metrics::prometheus_client::registry::Registry;
use fulcrum_metrics::{MetricType, counter, family, gauge, seconds};
use nanny::scheduler::AttemptObserver;
use nanny::spec::CheckSpec;
use tokio::sync::watch;

use crate::lvs::report::LvsReport;
use crate::vrrp::report::{self, Report};

/// The daemon's own record of its configuration's reloads.
#[derive(Debug, Clone, PartialEq)]
pub struct Reloads {
    pub succeeded: u64,
    pub failed: u64,
    pub last_successful: bool,
    /// The start, then each reload that took.
    pub last_success: SystemTime,
}

impl Reloads {
    pub fn new(started: SystemTime) -> Reloads {
        Reloads {
            succeeded: 0,
            failed: 0,
            last_successful: true,
            last_success: started,
        }
    }

    pub fn record(&mut self, successful: bool, at: SystemTime) {
        self.last_successful = successful;
        if successful {
            self.succeeded += 1;
            self.last_success = at;
        } else {
            self.failed += 1;
        }
    }
}

/// What `/metrics` reads: the latest value of each part's channel.
#[derive(Debug, Clone)]
pub struct Observed {
    pub vrrp: watch::Receiver<Arc<Report>>,
    pub lvs: watch::Receiver<LvsReport>,
    pub reloads: watch::Receiver<Reloads>,
}

/// The registry pulse serves.
pub fn registry(observed: Observed, check_durations: &Arc<CheckDurations>) -> Registry {
    let mut registry = Registry::default();
    registry.register_collector(Box::new(PulseCollector {
        observed,
        check_durations: check_durations.clone(),
    }));
    registry
}

/// The checks' durations: the one accumulator nanny observes into as each
/// attempt ends (a histogram is a sum of what happened, not a state to
/// publish), read by /metrics. prometheus-client's `Family` would write
/// nothing before the first observation; a family pulse serves is always
/// described, so the histograms are kept here and written by the
/// collector.
#[derive(Debug, Default)]
pub struct CheckDurations {
    /// Each histogram is shared inside (an `Arc`): cloned out of the lock
    /// to be observed or written.
    histograms: Mutex<BTreeMap<CheckLabels, Histogram>>,
}

/// `checker` (TCP_CHECK, HTTP_GET, ...), `real_server` (the address it
/// checks), `result` (success, failure).
type CheckLabels = [(&'static str, String); 3];

/// From a millisecond (a TCP connect on a LAN) to keepalived's longest
/// usual timeouts.
const CHECK_DURATION_BUCKETS: [f64; 14] = [
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
];

impl AttemptObserver for CheckDurations {
    fn observe(&self, check: &CheckSpec, took: std::time::Duration, succeeded: bool) {
        let labels = [
            ("checker", check.kind.name().to_owned()),
            ("real_server", check.endpoint.address.to_string()),
            (
                "result",
                if succeeded { "success" } else { "failure" }.to_owned(),
            ),
        ];
        let histogram = self
            .histograms
            .lock()
            .expect("no observer panics holding it")
            .entry(labels)
            .or_insert_with(|| Histogram::new(CHECK_DURATION_BUCKETS.iter().copied()))
            .clone();
        histogram.observe(took.as_secs_f64());
    }
}

#[derive(Debug)]
struct PulseCollector {
    observed: Observed,
    check_durations: Arc<CheckDurations>,
}

impl Collector for PulseCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let report = self.observed.vrrp.borrow().clone();
        let reloads = self.observed.reloads.borrow().clone();
        let lvs_report = self.observed.lvs.borrow().clone();
        vrrp(&mut encoder, &report)?;
        lvs(&mut encoder, &lvs_report)?;
        let histograms: Vec<(CheckLabels, Histogram)> = self
            .check_durations
            .histograms
            .lock()
            .expect("no observer panics holding it")
            .iter()
            .map(|(labels, histogram)| (labels.clone(), histogram.clone()))
            .collect();
        family(
            &mut encoder,
            "pulse_check_duration_seconds",
            "How long a check's attempts take, from when the attempt runs to its outcome, by \
             checker, real server and outcome",
            MetricType::Histogram,
            histograms,
        )?;
        daemon(&mut encoder, &reloads)
    }
}

type InstanceLabels = [(&'static str, String); 3];

fn instance_labels(instance: &report::InstanceReport) -> InstanceLabels {
    let description = &instance.description;
    [
        ("iname", description.name.clone()),
        ("intf", description.interface.clone()),
        ("vrid", description.virtual_router_id.to_string()),
    ]
}

/// The families of the keepalived exporters, then pulse's priorities.
fn vrrp(encoder: &mut DescriptorEncoder, report: &Report) -> Result<(), std::fmt::Error> {
    // The exporter's own: 1 when it could read keepalived. pulse answers
    // for itself, so it is up whenever it answers.
    gauge(encoder, "keepalived_up", "Status", [(NO_LABELS, 1.0)])?;
    let mut states = Vec::new();
    for instance in &report.instances {
        let description = &instance.description;
        let state = f64::from(report::state_number(instance.state));
        let mut addresses = description.virtual_addresses.iter().peekable();
        if addresses.peek().is_none() {
            states.push((
                [
                    ("iname", description.name.clone()),
                    ("intf", description.interface.clone()),
                    ("vrid", description.virtual_router_id.to_string()),
                    ("ip_address", String::new()),
                ],
                state,
            ));
        }
        for address in addresses {
            // The exporter splits keepalived's "ADDRESS[/LEN] ... dev NAME"
            // at its spaces: the address is the first word (with its
            // prefix), the interface the third.
            let words: Vec<&str> = address.text.split(' ').collect();
            states.push((
                [
                    ("iname", description.name.clone()),
                    ("intf", words.get(2).copied().unwrap_or_default().to_owned()),
                    ("vrid", description.virtual_router_id.to_string()),
                    ("ip_address", words[0].to_owned()),
                ],
                state,
            ));
        }
    }
    gauge(encoder, "keepalived_vrrp_state", "State of vrrp", states)?;
    // A setting, which the exporter exports as a counter under this name:
    // kept so, for its dashboards.
    counter(
        encoder,
        "keepalived_gratuitous_arp_delay",
        "Gratuitous ARP delay",
        report.instances.iter().map(|instance| {
            (
                instance_labels(instance),
                instance.description.garp_delay.as_secs(),
            )
        }),
    )?;
    for &(field, name, help) in &COUNTERS {
        counter(
            encoder,
            name,
            help,
            report.instances.iter().map(|instance| {
                let value = instance
                    .statistics
                    .keepalived_counters()
                    .iter()
                    .find(|(counted, _)| *counted == field)
                    .map_or(0, |(_, value)| *value);
                (instance_labels(instance), value)
            }),
        )?;
    }
    gauge(
        encoder,
        "keepalived_script_status",
        "Tracker Script Status",
        report.scripts.iter().filter_map(|script| {
            script
                .succeeding
                .map(|ok| ([("name", script.name.clone())], if ok { 1.0 } else { 0.0 }))
        }),
    )?;
    gauge(
        encoder,
        "pulse_vrrp_priority",
        "An instance's effective priority: its configured priority plus its tracking weights",
        report.instances.iter().map(|instance| {
            (
                instance_labels(instance),
                f64::from(instance.effective_priority),
            )
        }),
    )?;
    gauge(
        encoder,
        "pulse_vrrp_base_priority",
        "An instance's configured priority",
        report.instances.iter().map(|instance| {
            (
                instance_labels(instance),
                f64::from(instance.description.base_priority),
            )
        }),
    )?;
    gauge(
        encoder,
        "pulse_vrrp_last_transition_timestamp_seconds",
        "When an instance last changed state",
        report
            .instances
            .iter()
            .map(|instance| (instance_labels(instance), seconds(instance.last_transition))),
    )
}

/// The keepalived exporters' counters, each a field of keepalived's
/// statistics (the exporter's name without OpenMetrics' `_total`, which
/// the encoder adds).
const COUNTERS: [(&str, &str, &str); 14] = [
    (
        "advert_rcvd",
        "keepalived_advertisements_received",
        "Advertisements received",
    ),
    (
        "advert_sent",
        "keepalived_advertisements_sent",
        "Advertisements sent",
    ),
    ("become_master", "keepalived_become_master", "Became master"),
    (
        "release_master",
        "keepalived_release_master",
        "Released master",
    ),
    (
        "packet_len_err",
        "keepalived_packet_length_errors",
        "Packet length errors",
    ),
    (
        "advert_interval_err",
        "keepalived_advertisements_interval_errors",
        "Advertisement interval errors",
    ),
    ("ip_ttl_err", "keepalived_ip_ttl_errors", "TTL errors"),
    (
        "invalid_type_rcvd",
        "keepalived_invalid_type_received",
        "Invalid type errors",
    ),
    (
        "addr_list_err",
        "keepalived_address_list_errors",
        "Address list errors",
    ),
    (
        "invalid_authtype",
        "keepalived_authentication_invalid",
        "Authentication invalid",
    ),
    (
        "authtype_mismatch",
        "keepalived_authentication_mismatch",
        "Authentication mismatch",
    ),
    (
        "auth_failure",
        "keepalived_authentication_failure",
        "Authentication failure",
    ),
    (
        "pri_zero_rcvd",
        "keepalived_priority_zero_received",
        "Priority zero received",
    ),
    (
        "pri_zero_sent",
        "keepalived_priority_zero_sent",
        "Priority zero sent",
    ),
];

/// The real servers' health and the IPVS passes.
fn lvs(encoder: &mut DescriptorEncoder, report: &LvsReport) -> Result<(), std::fmt::Error> {
    let server = |(virtual_server, address): &(String, std::net::SocketAddr)| {
        [
            ("virtual_server", virtual_server.clone()),
            ("real_server", address.to_string()),
        ]
    };
    gauge(
        encoder,
        "pulse_real_server_up",
        "Whether a real server's checks hold it up (1) or down (0)",
        report
            .real_servers
            .iter()
            .map(|(key, known)| (server(key), if known.up { 1.0 } else { 0.0 })),
    )?;
    gauge(
        encoder,
        "pulse_real_server_last_change_info",
        "Why a real server's checks last decided its state: the check and what it found",
        report.real_servers.iter().map(|(key, known)| {
            let [virtual_server, real_server] = server(key);
            (
                [
                    virtual_server,
                    real_server,
                    ("state", if known.up { "up" } else { "down" }.to_owned()),
                    ("reason", known.reason.clone()),
                ],
                1.0,
            )
        }),
    )?;
    gauge(
        encoder,
        "pulse_real_server_last_change_timestamp_seconds",
        "When a real server's checks last decided its state (its first verdict, then each change)",
        report
            .real_servers
            .iter()
            .map(|(key, known)| (server(key), seconds(known.since))),
    )?;
    counter(
        encoder,
        "pulse_real_server_transitions",
        "A real server's changes of state, by the state it went to",
        report.real_servers.iter().flat_map(|(key, known)| {
            let [virtual_server, real_server] = server(key);
            [("up", known.went_up), ("down", known.went_down)].map(|(to, count)| {
                (
                    [
                        virtual_server.clone(),
                        real_server.clone(),
                        ("to", to.to_owned()),
                    ],
                    count,
                )
            })
        }),
    )?;
    let passes = |pick: fn(&crate::lvs::report::PassCounts) -> u64| {
        report
            .passes
            .iter()
            .map(move |(reason, counts)| ([("reason", *reason)], pick(counts)))
    };
    counter(
        encoder,
        "pulse_ipvs_passes",
        "The reconciler's passes over the IPVS table, by what started them",
        passes(|counts| counts.passes),
    )?;
    counter(
        encoder,
        "pulse_ipvs_changes_applied",
        "IPVS operations the kernel applied, by what started their pass",
        passes(|counts| counts.applied),
    )?;
    counter(
        encoder,
        "pulse_ipvs_changes_refused",
        "IPVS operations the kernel refused, by what started their pass",
        passes(|counts| counts.refused),
    )?;
    counter(
        encoder,
        "pulse_ipvs_netlink_errors",
        "Passes whose exchange with the kernel failed (the table unread, a batch's answers lost)",
        passes(|counts| counts.netlink_errors),
    )?;
    counter(
        encoder,
        "pulse_ipvs_drift_repaired",
        "IPVS operations that put back what another process changed, by what found it \
         (the audit, the netlink tap, a refusal)",
        report
            .drift_repaired()
            .into_iter()
            .map(|(found_by, count)| ([("found_by", found_by)], count)),
    )
}

fn daemon(encoder: &mut DescriptorEncoder, reloads: &Reloads) -> Result<(), std::fmt::Error> {
    gauge(
        encoder,
        "pulse_config_last_reload_successful",
        "Whether the last configuration reload succeeded (1) or was refused (0)",
        [(NO_LABELS, if reloads.last_successful { 1.0 } else { 0.0 })],
    )?;
    gauge(
        encoder,
        "pulse_config_last_reload_success_timestamp_seconds",
        "When the configuration running was loaded: the start or the last reload that took",
        [(NO_LABELS, seconds(reloads.last_success))],
    )?;
    counter(
        encoder,
        "pulse_config_reloads",
        "Configuration reloads (SIGHUP), by result",
        [
            ([("result", "success")], reloads.succeeded),
            ([("result", "failure")], reloads.failed),
        ],
    )
}

/// A family's only sample.
const NO_LABELS: [(&str, &str); 0] = [];

#[cfg(test)]
mod tests;
