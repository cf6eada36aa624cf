//! The Mux's `/metrics` (`pulse -f FILE --cluster URLS --metrics
//! ADDRESS:PORT`): what its loop publishes ([`super::report`]) and its
//! tenants' IPVS counters, read at each scrape from what was published.
//!
//! Rules:
//! - **Under `pulse_mux_`, each sample with a `mux` label** (its VTEP, its
//!   name in the store), so that the Muxes' series stay apart wherever
//!   they are gathered (a federation, a query across instances).
//! - **Sync lag**: the policy revision applied and the store's latest seen,
//!   the lag in revisions, and in seconds (how long the store has had a
//!   revision the Mux has not applied, 0 in sync), computed at the scrape.
//! - **The tenants' IPVS counters, and only those**: connections, packets
//!   and bytes in per VIP's service and DIP. They live in the tenants'
//!   namespaces (`fulcrum-vniN`), which node_exporter's ipvs collector
//!   (reading /proc/net/ip_vs_stats in its own namespace) never sees;
//!   they show how each Mux's share of a DIP's connections compares with
//!   another's (hash imbalance across Muxes). Nothing else IPVS counts is
//!   copied (the replies bypass the Mux: its outgoing counters are 0).
//! - **Counters read on a timer, not at the scrape** ([`COUNTERS_EVERY`]):
//!   the encoder is synchronous and runs on the Mux's single-threaded
//!   runtime, where a netlink dump per tenant would stall the loop for
//!   the scrape's length; the reads run on the runtime's blocking pool,
//!   each in a fresh client (a socket held open would keep a removed
//!   tenant's namespace, and its VXLAN device, alive), and are published
//!   on a watch. The kernel sums its counters every 2 s anyway (its
//!   estimator), so a scrape sees them at most [`COUNTERS_EVERY`] plus
//!   2 s old; `pulse_mux_ipvs_last_read_timestamp_seconds` says when.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use fulcrum_metrics::prometheus_client::collector::Collector;
use fulcrum_metrics::prometheus_client::encoding::DescriptorEncoder;
use fulcrum_metrics::prometheus_client::registry::Registry;
use fulcrum_metrics::{counter, flag, gauge, seconds};
use ipvs::{Destination, Service, ServiceKey, Statistics};
use tokio::sync::watch;

use super::report::MuxReport;

/// How often the tenants' IPVS counters are read.
pub const COUNTERS_EVERY: Duration = Duration::from_secs(5);

/// The tenants' IPVS counters, as last read.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Traffic {
    /// When they were read (none before the first reading).
    pub read_at: Option<SystemTime>,
    pub services: Vec<ServiceTraffic>,
}

/// One VIP's service in a tenant, and its DIPs' counters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServiceTraffic {
    pub network: String,
    /// `ADDRESS:PORT/PROTOCOL`, as `--which-dip` writes a VIP.
    pub service: String,
    pub destinations: Vec<(SocketAddr, Statistics)>,
}

/// What `/metrics` reads.
#[derive(Debug, Clone)]
pub struct Observed {
    pub report: watch::Receiver<MuxReport>,
    pub traffic: watch::Receiver<Traffic>,
}

/// The registry the Mux serves.
pub fn registry(observed: Observed) -> Registry {
    let mut registry = Registry::default();
    registry.register_collector(Box::new(MuxCollector(observed)));
    registry
}

#[derive(Debug)]
struct MuxCollector(Observed);

impl Collector for MuxCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let report = self.0.report.borrow().clone();
        let traffic = self.0.traffic.borrow().clone();
        families(&mut encoder, &report, &traffic, SystemTime::now())
    }
}

/// Every family, as at `now`.
fn families(
    encoder: &mut DescriptorEncoder,
    report: &MuxReport,
    traffic: &Traffic,
    now: SystemTime,
) -> Result<(), std::fmt::Error> {
    let mux = || [("mux", report.mux.clone())];
    let sync = &report.sync;
    gauge(
        encoder,
        "pulse_mux_store_connected",
        "Whether the Mux follows the cluster store (1), or forwards as last applied without it (0)",
        [(mux(), flag(report.connected))],
    )?;
    gauge(
        encoder,
        "pulse_mux_policy_revision_applied",
        "The policy revision the Mux's kernel holds",
        sync.applied.map(|revision| (mux(), revision as f64)),
    )?;
    gauge(
        encoder,
        "pulse_mux_policy_revision_store",
        "The store's latest policy revision the Mux has seen",
        sync.store.map(|revision| (mux(), revision as f64)),
    )?;
    gauge(
        encoder,
        "pulse_mux_sync_lag_revisions",
        "How many policy revisions the store has that the Mux has not applied",
        [(mux(), sync.revisions_behind() as f64)],
    )?;
    gauge(
        encoder,
        "pulse_mux_sync_lag_seconds",
        "How long the store has had a policy revision the Mux has not applied (0 in sync)",
        [(mux(), sync.seconds_behind(now))],
    )?;
    gauge(
        encoder,
        "pulse_mux_last_apply_timestamp_seconds",
        "When the Mux last applied the store's state to its kernel",
        report.last_apply.map(|last| (mux(), seconds(last.at))),
    )?;
    gauge(
        encoder,
        "pulse_mux_last_apply_duration_seconds",
        "How long the last application took: computing what is wanted from a reading of the store, and programming the kernel",
        report
            .last_apply
            .map(|last| (mux(), last.took.as_secs_f64())),
    )?;
    counter(
        encoder,
        "pulse_mux_applies",
        "Applications of the store's state to the kernel, by result",
        [
            (
                [mux()[0].clone(), ("result", "success".to_owned())],
                report.applies_succeeded,
            ),
            (
                [mux()[0].clone(), ("result", "failure".to_owned())],
                report.applies_failed,
            ),
        ],
    )?;
    gauge(
        encoder,
        "pulse_mux_tenant_info",
        "A tenant network the Mux serves, with its VNI and network namespace",
        report.tenants.iter().map(|tenant| {
            (
                [
                    mux()[0].clone(),
                    ("network", tenant.network.clone()),
                    ("vni", tenant.vni.to_string()),
                    ("namespace", tenant.namespace.clone()),
                ],
                1.0,
            )
        }),
    )?;
    gauge(
        encoder,
        "pulse_mux_vip_announced",
        "Whether the Mux announces a VIP (1: a route in its announce table, which its BGP daemon \
         exports) or holds it withdrawn (0: no DIP serves it)",
        report.tenants.iter().flat_map(|tenant| {
            tenant.vips.iter().map(|(vip, announced)| {
                (
                    [
                        mux()[0].clone(),
                        ("network", tenant.network.clone()),
                        ("vip", vip.to_string()),
                    ],
                    flag(*announced),
                )
            })
        }),
    )?;
    gauge(
        encoder,
        "pulse_mux_vips_announced",
        "How many VIPs the Mux announces",
        [(mux(), report.announced() as f64)],
    )?;
    ipvs_families(encoder, &report.mux, traffic)
}

/// The tenants' IPVS counters per service and DIP.
fn ipvs_families(
    encoder: &mut DescriptorEncoder,
    mux: &str,
    traffic: &Traffic,
) -> Result<(), std::fmt::Error> {
    gauge(
        encoder,
        "pulse_mux_ipvs_last_read_timestamp_seconds",
        "When the tenants' IPVS counters were last read",
        traffic
            .read_at
            .map(|at| ([("mux", mux.to_owned())], seconds(at))),
    )?;
    let each = |pick: fn(&Statistics) -> u64| {
        traffic.services.iter().flat_map(move |service| {
            service.destinations.iter().map(move |(dip, statistics)| {
                (
                    [
                        ("mux", mux.to_owned()),
                        ("network", service.network.clone()),
                        ("service", service.service.clone()),
                        ("dip", dip.to_string()),
                    ],
                    pick(statistics),
                )
            })
        })
    };
    counter(
        encoder,
        "pulse_mux_ipvs_connections",
        "Connections the Mux's tenant IPVS scheduled to a DIP of a VIP's service",
        each(|statistics| statistics.connections),
    )?;
    counter(
        encoder,
        "pulse_mux_ipvs_incoming_packets",
        "Packets the Mux forwarded to a DIP of a VIP's service",
        each(|statistics| statistics.incoming_packets),
    )?;
    counter(
        encoder,
        "pulse_mux_ipvs_incoming_bytes",
        "Bytes the Mux forwarded to a DIP of a VIP's service",
        each(|statistics| statistics.incoming_bytes),
    )
}

/// The counters of a tenant's table (each service with its destinations,
/// as the kernel lists them): the VIPs' services, fwmark ones aside (the
/// Mux makes none).
pub fn service_traffic(
    network: &str,
    table: &[(Service, Vec<Destination>)],
) -> Vec<ServiceTraffic> {
    table
        .iter()
        .filter_map(|(service, destinations)| {
            let ServiceKey::Address {
                protocol,
                address,
                port,
            } = service.key
            else {
                return None;
            };
            let protocol = super::desired::schema_protocol(protocol)?;
            Some(ServiceTraffic {
                network: network.to_owned(),
                service: format!("{}/{}", SocketAddr::new(address, port), protocol.name()),
                destinations: destinations
                    .iter()
                    .map(|destination| {
                        (
                            destination.socket_address(),
                            destination
                                .statistics
                                .as_deref()
                                .copied()
                                .unwrap_or_default(),
                        )
                    })
                    .collect(),
            })
        })
        .collect()
}

/// Reads the tenants' counters every [`COUNTERS_EVERY`] and publishes
/// them, for the tenants `report` names, until the runtime ends.
pub async fn read_counters(report: watch::Receiver<MuxReport>, traffic: watch::Sender<Traffic>) {
    let mut every = tokio::time::interval(COUNTERS_EVERY);
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        every.tick().await;
        let tenants: Vec<(String, String)> = report
            .borrow()
            .tenants
            .iter()
            .map(|tenant| (tenant.namespace.clone(), tenant.network.clone()))
            .collect();
        let read = tokio::task::spawn_blocking(move || {
            let mut services = Vec::new();
            for (namespace, network) in &tenants {
                match read_tenant(namespace) {
                    Ok(table) => services.extend(service_traffic(network, &table)),
                    // Removed between the report and the read, most likely.
                    Err(error) => {
                        tracing::debug!("mux: cannot read IPVS counters in {namespace}: {error}")
                    }
                }
            }
            services
        })
        .await;
        match read {
            Ok(services) => {
                traffic.send_replace(Traffic {
                    read_at: Some(SystemTime::now()),
                    services,
                });
            }
            Err(error) => tracing::warn!("mux: reading the IPVS counters failed: {error}"),
        }
    }
}

/// A tenant's services and destinations with their counters, read in its
/// namespace by a client of its own.
fn read_tenant(namespace: &str) -> Result<Vec<(Service, Vec<Destination>)>, String> {
    let file = fulcrum_netns::open(namespace).ok_or("no such namespace")?;
    let mut client = super::namespace::run_in(&file, ipvs::Client::connect)
        .map_err(|error| error.to_string())?
        .map_err(|error| error.to_string())?;
    let services = client.services().map_err(|error| error.to_string())?;
    let keys: Vec<ServiceKey> = services.iter().map(|service| service.key).collect();
    let destinations = client
        .destinations_of(&keys)
        .map_err(|error| error.to_string())?;
    Ok(services.into_iter().zip(destinations).collect())
}

/// The registry's text for `report` and `traffic` as at `now`, in
/// Prometheus' classic format (what promtool reads): for tests, and the
/// integration test that runs promtool on it.
pub fn text(report: &MuxReport, traffic: &Traffic, now: SystemTime) -> String {
    #[derive(Debug)]
    struct Fixed(MuxReport, Traffic, SystemTime);
    impl Collector for Fixed {
        fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
            families(&mut encoder, &self.0, &self.1, self.2)
        }
    }
    let mut registry = Registry::default();
    registry.register_collector(Box::new(Fixed(report.clone(), traffic.clone(), now)));
    fulcrum_metrics::classic(&fulcrum_metrics::encode(&registry))
}

/// Serves `/metrics` on `listener` from what the Mux publishes, with its
/// counters' reader; both end with the runtime.
pub fn spawn(
    listener: std::net::TcpListener,
    report: watch::Receiver<MuxReport>,
    stop: watch::Receiver<bool>,
) {
    let (traffic_sender, traffic) = watch::channel(Traffic::default());
    tokio::spawn(read_counters(report.clone(), traffic_sender));
    let registry = registry(Observed { report, traffic });
    tokio::spawn(fulcrum_metrics::serve(listener, Arc::new(registry), stop));
}

#[cfg(test)]
mod tests;
