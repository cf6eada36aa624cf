//! `fulcrum-agent`, the SDN mode's host agent (docs/sdn.md).
//!
//! It registers its host in the cluster store, terminates each of its
//! networks' VXLAN and routes it to the network's segment, translating
//! each VIP:port to the DIP:backend_port the Mux chose ([`nat`]; the
//! replies go back translated, from the host to its gateway, never through
//! the Mux), finds the policy's DIPs on those segments, probes them with
//! nanny's checkers (keepalived's semantics; the probes leave from the
//! segment, bound to it) and writes their health.
//!
//! Rules of the loop (one task, one `select!`):
//! - **Live keys under a lease** ([`LEASE_SECONDS`], renewed every third
//!   of it by a task of its own, so that a slow step of the loop never
//!   starves it): its host, the DIPs it found, their health, the policy
//!   revision it applied. A killed agent's keys expire with the lease, and
//!   the Mux drops its DIPs.
//! - **Whole readings**, as the Mux: each change the store reports is
//!   followed by a reading of the whole schema.
//! - **Fail static**: without the store the agent keeps its devices and
//!   its probes running, remembers what it found and measured, and writes
//!   all of it again under a new lease once the store answers.
//! - **Finding DIPs** every [`FIND_EVERY`]: a DIP is found while its
//!   segment's neighbour table has its MAC; the translations follow what
//!   is found.
//! - **Observed**: the loop publishes an [`report::AgentReport`] on a
//!   `watch` channel (its DIPs and their health, its translations, its
//!   sync lag); with `--metrics ADDRESS:PORT` (bound by the caller before
//!   the runtime starts) `/metrics` serves it ([`metrics`]) on the
//!   agent's runtime.
//! - **Clean stop** (SIGTERM, SIGINT): the lease is revoked (every live key
//!   goes at once), the probes stop, the rules, routes and devices it made
//!   go.

pub mod cli;
pub mod desired;
pub mod kernel;
pub mod metrics;
pub mod nat;
pub mod report;

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use fulcrum_cluster::etcd_client::{WatchResponse, WatchStream};
use fulcrum_cluster::schema::{self, Applied, Health, Host, LocalDip, Role};
use fulcrum_cluster::store::{Lease, Store, StoreError, changes_state, watch_ended};
use nanny::scheduler::{Handle, Start, StateChange};
use nanny::spec::{Plan, VirtualServerKey};
use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::{mpsc, watch};

use desired::{Found, Local, Segment};
use report::AgentReport;

/// The lifetime of the agent's live keys without renewal.
pub const LEASE_SECONDS: i64 = 6;
/// How often the segments' neighbour tables are read for DIPs.
pub const FIND_EVERY: Duration = Duration::from_secs(1);
/// How long between attempts to reach a store that does not answer.
pub const RETRY: Duration = Duration::from_secs(1);
const STORE_TIMEOUT: Duration = Duration::from_secs(3);

/// What the agent's file says.
#[derive(Debug, Clone)]
pub struct Settings {
    pub vtep: IpAddr,
    pub segments: Vec<Segment>,
}

/// The agent's connection to the store.
struct Connection {
    store: Store,
    lease: Lease,
    watch: WatchStream,
    /// The revision written as applied under this lease: written again
    /// only when it changes (every Mux and agent reads what the others
    /// write, so a write for nothing costs each of them a reading).
    applied: Option<u64>,
}

impl Connection {
    /// Writes a live key under the agent's lease.
    async fn put(&mut self, key: &str, value: &impl serde::Serialize) -> Result<(), StoreError> {
        self.store.put_live(key, value, &self.lease).await
    }
}

/// nanny's checkers running the policy's probes, and the text they were
/// read from.
#[derive(Default)]
struct Probes {
    handle: Option<Handle>,
    verdicts: Option<mpsc::Receiver<StateChange>>,
    text: String,
}

impl Probes {
    /// Runs the probes of `text` (keepalived.conf), in place of those
    /// running; text that does not read leaves them as they are.
    async fn follow(&mut self, text: &str) {
        if self.text == text {
            return;
        }
        let loaded = fulcrum_config::load_str(
            "the store's probes",
            text,
            &fulcrum_config::lexer::Options::default(),
        );
        if loaded
            .diagnostics
            .count(fulcrum_config::diagnostic::Severity::Error)
            > 0
        {
            tracing::error!(
                "agent: the store's probes do not read; the previous ones go on:\n{}",
                loaded.diagnostics.render(&loaded.sources)
            );
            return;
        }
        let plan = Plan::from_config(&loaded.config);
        match &self.handle {
            Some(handle) => handle.reload(plan).await,
            None => {
                let mut handle = Handle::spawn(plan, Start::Warmup);
                self.verdicts = handle.take_events();
                self.handle = Some(handle);
            }
        }
        text.clone_into(&mut self.text);
    }

    async fn next_verdict(&mut self) -> Option<StateChange> {
        match &mut self.verdicts {
            Some(receiver) => receiver.recv().await,
            None => std::future::pending().await,
        }
    }
}

/// What woke the loop.
enum Wake {
    Connect,
    Watch(Result<Option<WatchResponse>, fulcrum_cluster::etcd_client::Error>),
    Find,
    Verdict(Option<StateChange>),
    LeaseLost(String),
    Stop,
}

/// What the agent knows, whether or not the store answers.
#[derive(Default)]
struct Known {
    local: Local,
    /// (network, DIP) -> MAC, as found and (when connected) written.
    found: Found,
    /// (network, DIP, backend port) -> up.
    health: BTreeMap<(String, IpAddr, u16), bool>,
}

/// Runs the agent until a signal, serving `/metrics` on `metrics` (bound
/// before the runtime started) if given; the error is what stopped it
/// otherwise.
pub async fn serve(
    settings: Settings,
    endpoints: Vec<String>,
    metrics: Option<std::net::TcpListener>,
) -> anyhow::Result<()> {
    let mut terminate = signal(SignalKind::terminate())?;
    let mut interrupt = signal(SignalKind::interrupt())?;
    let host = settings.vtep.to_string();
    let (report, reports) = watch::channel(AgentReport::new(&host));
    // Served to the end, its stop included.
    let (_stop_serving, serving_stopped) = watch::channel(false);
    if let Some(listener) = metrics {
        tokio::spawn(fulcrum_metrics::serve(
            listener,
            Arc::new(metrics::registry(reports)),
            serving_stopped,
        ));
    }
    let mut kernel = kernel::Kernel::start(settings.vtep).await?;
    tracing::info!(
        "agent {host}: started, cluster store {}",
        endpoints.join(",")
    );
    let mut connection: Option<Connection> = None;
    // Leases of lost connections (and of attempts that failed after their
    // grant), ended once the next connection has written the agent's keys.
    let mut left_behind: Vec<i64> = Vec::new();
    let mut known = Known::default();
    let mut probes = Probes::default();
    let mut retry = tokio::time::interval(RETRY);
    let mut find = tokio::time::interval(FIND_EVERY);
    loop {
        let wake = tokio::select! {
            _ = retry.tick(), if connection.is_none() => Wake::Connect,
            wake = from_store(&mut connection) => wake,
            _ = find.tick() => Wake::Find,
            verdict = probes.next_verdict() => Wake::Verdict(verdict),
            _ = terminate.recv() => Wake::Stop,
            _ = interrupt.recv() => Wake::Stop,
        };
        let stop = matches!(wake, Wake::Stop);
        let outcome: Result<(), StoreError> = async {
            match wake {
                Wake::Connect => {
                    let mut store = Store::connect(&endpoints, STORE_TIMEOUT).await?;
                    let lease = store.lease(LEASE_SECONDS).await?;
                    // Left behind too if what follows fails.
                    left_behind.push(lease.id);
                    let reading = store.read().await?;
                    let watch = store.watch(reading.store_revision + 1).await?;
                    let mut fresh = Connection {
                        store,
                        lease,
                        watch,
                        applied: None,
                    };
                    follow(&mut known, &mut kernel, &mut probes, &reading, &settings).await;
                    report.send_modify(|report| {
                        report.sync.applied(known.local.revision, SystemTime::now())
                    });
                    write_all(&mut fresh, &host, settings.vtep, &known).await?;
                    left_behind.retain(|lease| *lease != fresh.lease.id);
                    fresh.store.revoke_left_behind(&mut left_behind).await;
                    tracing::info!("agent {host}: following the cluster store");
                    connection = Some(fresh);
                }
                Wake::Watch(Ok(Some(response))) if watch_ended(&response).is_some() => {
                    return Err(StoreError::Contents {
                        key: schema::ROOT.into(),
                        problem: watch_ended(&response).unwrap_or_default(),
                    });
                }
                // Nothing the agent acts on: no event, or only daemons'
                // bookkeeping (the Muxes' and agents' applied revisions).
                Wake::Watch(Ok(Some(response))) if !changes_state(&response) => {}
                Wake::Watch(Ok(Some(response))) => {
                    // Behind from the moment the store is heard of,
                    // whether or not its reading succeeds.
                    if let Some(revision) = fulcrum_cluster::sync::policy_revision_in(&response) {
                        report.send_modify(|report| {
                            report.sync.saw_store(revision, SystemTime::now())
                        });
                    }
                    let current = connection.as_mut().expect("a watch has a connection");
                    let reading = current.store.read().await?;
                    let before =
                        follow(&mut known, &mut kernel, &mut probes, &reading, &settings).await;
                    report.send_modify(|report| {
                        report.sync.applied(known.local.revision, SystemTime::now())
                    });
                    // DIPs and health the policy no longer has go.
                    let dips = known.local.dips.clone();
                    for gone in before.dips.difference(&dips) {
                        if known.found.remove(gone).is_some() {
                            let key = schema::local_dip(&host, &gone.0, gone.1);
                            current.store.delete(&key).await?;
                        }
                    }
                    let stale: Vec<_> = known
                        .health
                        .keys()
                        .filter(|(network, address, _)| {
                            !dips.contains(&(network.clone(), *address))
                        })
                        .cloned()
                        .collect();
                    for key in stale {
                        known.health.remove(&key);
                        let key = schema::health(&host, &key.0, key.1, key.2);
                        current.store.delete(&key).await?;
                    }
                    write_applied(current, &host, &known).await?;
                }
                Wake::Watch(Ok(None)) => {
                    return Err(StoreError::Contents {
                        key: schema::ROOT.into(),
                        problem: "the store closed the watch".into(),
                    });
                }
                Wake::Watch(Err(source)) => {
                    return Err(StoreError::Request {
                        what: "watch the cluster's state",
                        source,
                    });
                }
                Wake::Find => {
                    let found = match kernel.find(&known.local.segments, &known.local.dips).await {
                        Ok(found) => found,
                        Err(error) => {
                            tracing::warn!("agent {host}: {error}");
                            return Ok(());
                        }
                    };
                    let added: Vec<_> = found
                        .iter()
                        .filter(|(key, mac)| known.found.get(*key) != Some(*mac))
                        .map(|(key, mac)| (key.clone(), *mac))
                        .collect();
                    let lost: Vec<_> = known
                        .found
                        .keys()
                        .filter(|key| !found.contains_key(*key))
                        .cloned()
                        .collect();
                    for (key, mac) in &added {
                        tracing::info!(
                            "agent {host}: found DIP {} of {} ({})",
                            key.1,
                            key.0,
                            fulcrum_overlay::mac_text(mac)
                        );
                    }
                    for key in &lost {
                        tracing::info!("agent {host}: lost DIP {} of {}", key.1, key.0);
                    }
                    known.found = found;
                    if !added.is_empty() || !lost.is_empty() {
                        serve_local(&known, &mut kernel, &mut probes).await;
                    }
                    if let Some(current) = connection.as_mut() {
                        for ((network, address), mac) in &added {
                            current
                                .put(
                                    &schema::local_dip(&host, network, *address),
                                    &dip_value(&known.local, network, mac),
                                )
                                .await?;
                        }
                        for (network, address) in &lost {
                            let key = schema::local_dip(&host, network, *address);
                            current.store.delete(&key).await?;
                        }
                    }
                }
                Wake::Verdict(None) => probes.verdicts = None,
                Wake::Verdict(Some(change)) => {
                    let address = change.real_server.address;
                    for server in &change.virtual_servers {
                        let VirtualServerKey::Address { address: vip, .. } = server else {
                            continue;
                        };
                        let Some(network) = known.local.vips.get(vip).cloned() else {
                            continue;
                        };
                        tracing::info!(
                            "agent {host}: DIP {address} of {network} is {} ({})",
                            if change.up { "up" } else { "down" },
                            change.reason
                        );
                        let key = (network.clone(), address.ip(), address.port());
                        known.health.insert(key, change.up);
                        report.send_modify(|report| {
                            report.verdict(
                                &network,
                                address,
                                change.up,
                                &change.reason,
                                SystemTime::now(),
                            )
                        });
                        if let Some(current) = connection.as_mut() {
                            current
                                .put(
                                    &schema::health(&host, &network, address.ip(), address.port()),
                                    &Health { up: change.up },
                                )
                                .await?;
                        }
                    }
                }
                Wake::LeaseLost(why) => {
                    return Err(StoreError::Contents {
                        key: schema::host(&host),
                        problem: format!("the agent's {why}"),
                    });
                }
                Wake::Stop => {}
            }
            Ok(())
        }
        .await;
        if let Err(error) = outcome {
            if let Some(lost) = connection.take() {
                left_behind.push(lost.lease.id);
                tracing::warn!("agent {host}: {error}; probing on, trying the store again");
            } else {
                tracing::debug!("agent {host}: {error}");
            }
        }
        // What the report holds of what the agent knows, after whatever
        // woke it.
        report.send_modify(|report| {
            report.connected = connection.is_some();
            report.networks = known
                .local
                .segments
                .iter()
                .map(|segment| segment.network.clone())
                .collect();
            report.found = known.found.keys().cloned().collect();
            report.translations.clone_from(kernel.translations());
            report.retain(&known.local.dips);
        });
        if stop {
            break;
        }
    }
    tracing::info!("agent {host}: stopping");
    if let Some(mut current) = connection {
        left_behind.push(current.lease.id);
        current.store.revoke_left_behind(&mut left_behind).await;
    }
    if let Some(handle) = probes.handle {
        handle.shutdown().await;
    }
    kernel.clear().await?;
    Ok(())
}

/// Takes `reading`'s policy as this host's: its segments' devices and
/// translations, and its probes. Returns the policy it replaces.
async fn follow(
    known: &mut Known,
    kernel: &mut kernel::Kernel,
    probes: &mut Probes,
    reading: &fulcrum_cluster::store::Reading,
    settings: &Settings,
) -> Local {
    let before = std::mem::replace(
        &mut known.local,
        desired::local(reading, &settings.segments),
    );
    for problem in &known.local.problems {
        tracing::warn!("agent: {problem}");
    }
    serve_local(known, kernel, probes).await;
    before
}

/// The kernel's devices and translations, and the probes, for what is
/// known: the policy as it concerns this host, and the DIPs found.
async fn serve_local(known: &Known, kernel: &mut kernel::Kernel, probes: &mut Probes) {
    if let Err(error) = kernel.apply(&known.local, &known.found).await {
        tracing::error!("agent: {error}");
    }
    probes
        .follow(&desired::probes(&known.local, &known.found))
        .await;
}

/// Every live key the agent holds (its host among them), written under a
/// new lease in one transaction.
async fn write_all(
    connection: &mut Connection,
    host: &str,
    vtep: IpAddr,
    known: &Known,
) -> Result<(), StoreError> {
    let mut entries = vec![(schema::host(host), schema::to_json(&Host { vtep }))];
    for ((network, address), mac) in &known.found {
        entries.push((
            schema::local_dip(host, network, *address),
            schema::to_json(&dip_value(&known.local, network, mac)),
        ));
    }
    for ((network, address, port), up) in &known.health {
        entries.push((
            schema::health(host, network, *address, *port),
            schema::to_json(&Health { up: *up }),
        ));
    }
    entries.push((
        schema::applied(Role::Agent, host),
        schema::to_json(&Applied {
            revision: known.local.revision,
        }),
    ));
    connection
        .store
        .write_live(&entries, &[], &connection.lease)
        .await?;
    connection.applied = Some(known.local.revision);
    Ok(())
}

/// Writes the revision applied, if it is not what this lease holds.
async fn write_applied(
    connection: &mut Connection,
    host: &str,
    known: &Known,
) -> Result<(), StoreError> {
    let revision = known.local.revision;
    if connection.applied == Some(revision) {
        return Ok(());
    }
    connection
        .put(&schema::applied(Role::Agent, host), &Applied { revision })
        .await?;
    connection.applied = Some(revision);
    Ok(())
}

/// A found DIP's value in the store.
fn dip_value(local: &Local, network: &str, mac: &[u8; 6]) -> LocalDip {
    LocalDip {
        vni: local
            .segments
            .iter()
            .find(|segment| segment.network == network)
            .map_or(0, |segment| segment.vni),
        mac: fulcrum_overlay::mac_text(mac),
    }
}

/// What the store says next: a watch message, or the lease lost.
async fn from_store(connection: &mut Option<Connection>) -> Wake {
    match connection {
        Some(connection) => tokio::select! {
            message = connection.watch.message() => Wake::Watch(message),
            why = connection.lease.lost() => Wake::LeaseLost(why),
        },
        None => std::future::pending().await,
    }
}
