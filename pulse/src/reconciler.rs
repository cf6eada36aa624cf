//! The task that keeps the kernel's IPVS table what the configuration and
//! the health checks say: one `select!` loop over nanny's state changes,
//! configuration reloads, a drift timer and shutdown. Every event leads to
//! the same pass: compute the desired table ([`crate::desired`]), read the
//! kernel's, plan ([`crate::reconcile`]) and apply; so a hand edit is
//! repaired by the next tick of the timer, within [`DRIFT_CHECK`].
//!
//! The `ipvs` client is blocking (one netlink exchange, well under a
//! millisecond per operation), so each pass runs on tokio's blocking pool,
//! the [`Reconciler`] moving there and back.
//!
//! Scripts (`notify_up`, `notify_down`, `quorum_up`, `quorum_down`) are not
//! run here: the loop sends a [`Notification`] for each, in keepalived's
//! cases, and whoever runs pulse runs them with the user and group they
//! name.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use fulcrum_config::model as config;
use ipvs::{BatchError, Client, Operation, ServiceKey};
use nanny::scheduler::StateChange;
use nanny::spec::VirtualServerName;
use tokio::sync::{mpsc, oneshot};

use crate::desired::{Health, QuorumStates, Table, desired};
use crate::reconcile::{Ownership, plan, read};

/// How often the kernel's table is read back to find hand edits.
pub const DRIFT_CHECK: Duration = Duration::from_secs(1);

#[derive(Debug, thiserror::Error)]
pub enum ReconcileError {
    #[error("cannot read the IPVS table: {0}")]
    Read(#[source] ipvs::Error),
    #[error("cannot apply the IPVS changes: {0}")]
    Apply(#[source] BatchError),
}

/// What started a pass; drift checks log their repairs as warnings, since
/// something other than pulse changed the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reason {
    Start,
    Health,
    Reload,
    DriftCheck,
}

impl fmt::Display for Reason {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(match self {
            Reason::Start => "start",
            Reason::Health => "health change",
            Reason::Reload => "reload",
            Reason::DriftCheck => "drift repair",
        })
    }
}

/// A script keepalived would run now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Notification {
    /// A real server went up or down (`notify_up` / `notify_down`).
    RealServer {
        virtual_server: VirtualServerName,
        real_server: SocketAddr,
        up: bool,
        script: Option<config::Script>,
    },
    /// A virtual server gained or lost quorum (`quorum_up` /
    /// `quorum_down`).
    Quorum {
        virtual_server: VirtualServerName,
        up: bool,
        script: Option<config::Script>,
    },
}

/// What to do with pulse's services when it stops.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopMode {
    /// Leave the table as it is: a restart adopts it without dropping a
    /// connection.
    Keep,
    /// keepalived's stop: delete pulse's services, or flush everything
    /// with `lvs_flush_on_stop` (ipwrapper.c `clear_services`).
    Clear,
}

/// The state a pass needs: the client, the configuration, what nanny said,
/// the quorum states and what pulse owns.
pub struct Reconciler {
    client: Client,
    configuration: Arc<config::Config>,
    /// Where each virtual server is in `configuration`, by the name nanny
    /// and the quorum states use (the first one of a name, as a search
    /// would find). Formatting every virtual server's name to find one made
    /// a health change naming N virtual servers cost N² names: 20 s under
    /// the lab's emulation for 1,000 virtual servers sharing their real
    /// servers (`cargo xtask bench-pulse`).
    positions: HashMap<VirtualServerName, usize>,
    health: Health,
    quorum: QuorumStates,
    ownership: Ownership,
    /// The operations the kernel refused in the last pass, as text: the
    /// next pass retries them without logging each retry as news (a
    /// scheduler the kernel lacks would otherwise log an error a second).
    failing: HashSet<String>,
    /// What a reload removed while it still carried connections: kept in
    /// the table, at weight 0, until the kernel counts no connection on it
    /// (see [`Reconciler::reload`]).
    draining: Draining,
    /// Modules [`load_modules`] asked modprobe for, each once: one that does
    /// not exist would otherwise be asked for at every retry.
    modules_asked_for: HashSet<String>,
}

/// Destinations and services on their way out after a reload.
#[derive(Debug, Default)]
struct Draining {
    destinations: HashSet<(ServiceKey, SocketAddr)>,
    services: HashSet<ServiceKey>,
}

impl Draining {
    /// What the move from `before` to `after` (desired tables) removes.
    fn record(&mut self, before: &Table, after: &Table) {
        // By key: a search of `after` for each service of `before` would
        // cost a million comparisons on 1,000 services, at every reload.
        let kept: HashSet<(ServiceKey, SocketAddr)> = after
            .services
            .iter()
            .flat_map(|entry| {
                entry
                    .destinations
                    .iter()
                    .map(|destination| (entry.service.key, destination.socket_address()))
            })
            .collect();
        let kept_services = after.keys();
        for entry in &before.services {
            let key = entry.service.key;
            if !kept_services.contains(&key) {
                self.services.insert(key);
                continue;
            }
            for destination in &entry.destinations {
                let address = destination.socket_address();
                if !kept.contains(&(key, address)) {
                    self.destinations.insert((key, address));
                }
            }
        }
    }

    /// Puts back into `wanted` what is draining and still carries
    /// connections, at weight 0; forgets the rest, which the plan then
    /// deletes.
    fn keep(&mut self, kernel: &Table, wanted: &mut Table) {
        let draining = std::mem::take(self);
        for key in draining.services {
            if wanted.service(&key).is_some() {
                // Configured again.
                continue;
            }
            let Some(present) = kernel.service(&key) else {
                continue;
            };
            let busy: Vec<ipvs::Destination> = present
                .destinations
                .iter()
                .filter(|destination| carries_connections(destination))
                .map(|destination| ipvs::Destination {
                    weight: 0,
                    ..destination.clone()
                })
                .collect();
            if busy.is_empty() {
                tracing::info!("{key} drained");
                continue;
            }
            wanted.services.push(crate::desired::TableService {
                service: present.service.clone(),
                destinations: busy,
            });
            self.services.insert(key);
        }
        for (key, address) in draining.destinations {
            let Some(entry) = wanted
                .services
                .iter_mut()
                .find(|entry| entry.service.key == key)
            else {
                continue;
            };
            if entry
                .destinations
                .iter()
                .any(|destination| destination.socket_address() == address)
            {
                continue;
            }
            let Some(present) = kernel.service(&key).and_then(|present| {
                present
                    .destinations
                    .iter()
                    .find(|destination| destination.socket_address() == address)
            }) else {
                continue;
            };
            if !carries_connections(present) {
                tracing::info!("{address} of {key} drained");
                continue;
            }
            entry.destinations.push(ipvs::Destination {
                weight: 0,
                ..present.clone()
            });
            self.destinations.insert((key, address));
        }
    }
}

/// Connections the kernel still forwards to `destination`: persistence
/// templates do not count (they carry no traffic, and expire on their own).
fn carries_connections(destination: &ipvs::Destination) -> bool {
    destination
        .counters
        .is_some_and(|counters| counters.active > 0 || counters.inactive > 0)
}

impl Reconciler {
    /// With `lvs_flush`, the first pass owns every service: those not
    /// configured are deleted, as keepalived's flush at start would, but
    /// the configured ones are kept and edited, so their connections live.
    pub fn new(client: Client, configuration: Arc<config::Config>) -> Reconciler {
        let ownership = if configuration.global.lvs_flush {
            Ownership::Everything
        } else {
            Ownership::default()
        };
        Reconciler {
            client,
            positions: positions(&configuration),
            configuration,
            health: Health::default(),
            quorum: QuorumStates::new(),
            ownership,
            failing: HashSet::new(),
            draining: Draining::default(),
            modules_asked_for: HashSet::new(),
        }
    }

    /// Takes in a state change; returns the real server's notification if
    /// keepalived would run one: on each change of up or down, and for the
    /// first report when it is down or an alpha checker had it start down
    /// (ipwrapper.c `update_svr_checker_state`).
    pub fn record(&mut self, change: &StateChange) -> Vec<Notification> {
        let mut notifications = Vec::new();
        for virtual_server in &change.virtual_servers {
            let address = change.real_server.address;
            let real_server = self.real_server(virtual_server, address);
            let previous = self
                .health
                .get(virtual_server, address)
                .map(|known| known.up);
            let alpha = real_server.is_some_and(|real_server| {
                real_server
                    .checkers
                    .iter()
                    .any(|checker| checker.common.alpha)
            });
            let notify = match previous {
                Some(previous) => previous != change.up,
                None => !change.up || alpha,
            };
            if notify {
                notifications.push(Notification::RealServer {
                    virtual_server: virtual_server.clone(),
                    real_server: address,
                    up: change.up,
                    script: real_server.and_then(|real_server| {
                        if change.up {
                            real_server.notify_up.as_deref().cloned()
                        } else {
                            real_server.notify_down.as_deref().cloned()
                        }
                    }),
                });
            }
        }
        self.health.record(change);
        notifications
    }

    fn real_server(
        &self,
        virtual_server: &VirtualServerName,
        address: SocketAddr,
    ) -> Option<&config::RealServer> {
        self.virtual_server(virtual_server)?
            .real_servers
            .iter()
            .find(|real_server| SocketAddr::new(real_server.address, real_server.port) == address)
    }

    /// Moves to a new configuration; the next pass applies it. Quorum
    /// states and health carry over for virtual and real servers still
    /// configured (keepalived's `clear_diff_services` copies them).
    ///
    /// Real servers and virtual servers the new configuration drops are
    /// drained rather than deleted at once: deleting a destination makes
    /// the kernel drop the packets of its established connections (with
    /// the default `expire_nodest_conn` 0 they hang until they time out),
    /// and deleting a service drops all of its connections. So they stay
    /// at weight 0, which takes no new connection, and go once the kernel
    /// counts none on them (each pass reads the counters: within a second
    /// of the last one ending). keepalived deletes them at once. Health
    /// failures still remove at once, as keepalived does: a dead server's
    /// connections are lost anyway.
    pub fn reload(&mut self, configuration: Arc<config::Config>) {
        let before = desired(&self.configuration, &self.health, &self.quorum).table;
        let after = desired(&configuration, &self.health, &self.quorum).table;
        self.draining.record(&before, &after);
        self.positions = positions(&configuration);
        self.configuration = configuration;
    }

    fn virtual_server(&self, name: &VirtualServerName) -> Option<&config::VirtualServer> {
        self.positions
            .get(name)
            .map(|&position| &self.configuration.virtual_servers[position])
    }

    /// One pass: desired table, kernel table, plan, apply. Returns how many
    /// operations were applied (each is logged) and the quorum
    /// notifications.
    pub fn pass(&mut self, reason: Reason) -> Result<(usize, Vec<Notification>), ReconcileError> {
        let mut computed = desired(&self.configuration, &self.health, &self.quorum);
        let kernel = read(&mut self.client).map_err(ReconcileError::Read)?;
        self.draining.keep(&kernel, &mut computed.table);
        let operations = plan(&kernel, &computed.table, &self.ownership);
        let previously_failing = std::mem::take(&mut self.failing);
        for operation in &operations {
            let text = operation.to_string();
            if previously_failing.contains(&text) {
                tracing::debug!("{reason}: retrying {text}");
                continue;
            }
            match reason {
                Reason::DriftCheck => tracing::warn!("repairing a hand edit: {text}"),
                _ => tracing::info!("{reason}: {text}"),
            }
        }
        let applied = if operations.is_empty() {
            Ok(())
        } else {
            load_modules(&operations, &mut self.modules_asked_for);
            self.client
                .apply(&operations)
                .or_else(|error| without_missed_services(&operations, error, reason))
        };
        // What pulse owns from now on: the desired services, and any it
        // meant to delete but could not (so the next pass tries again).
        let mut owned: HashSet<ServiceKey> = computed.table.keys();
        if let Err(error) = &applied {
            for (index, failure) in &error.failures {
                let text = operations[*index].to_string();
                // The failure names the operation.
                if previously_failing.contains(&text) {
                    tracing::debug!("{reason}: refused again: {failure}");
                } else {
                    tracing::error!("{reason}: refused: {failure}");
                }
                self.failing.insert(text);
                if let Operation::DeleteService(key) = &operations[*index] {
                    owned.insert(*key);
                }
            }
            if let Some((index, failure)) = &error.interrupted {
                let index = *index;
                tracing::error!(
                    "{reason}: the exchange with the kernel failed at {} ({failure}); \
                     the next pass reads the table again",
                    operations[index]
                );
                owned.extend(
                    operations[index..]
                        .iter()
                        .filter_map(|operation| match operation {
                            Operation::DeleteService(key) => Some(*key),
                            _ => None,
                        }),
                );
            }
        }
        self.ownership = Ownership::Matching(owned);
        self.quorum = computed.quorum;
        let notifications = computed
            .quorum_changes
            .into_iter()
            .map(|change| {
                let script =
                    self.virtual_server(&change.virtual_server)
                        .and_then(|virtual_server| {
                            if change.up {
                                virtual_server.quorum_up.as_deref().cloned()
                            } else {
                                virtual_server.quorum_down.as_deref().cloned()
                            }
                        });
                if change.up {
                    tracing::info!(
                        "{}: quorum {} ({} >= {})",
                        change.virtual_server,
                        if change.initial {
                            "up at start"
                        } else {
                            "gained"
                        },
                        change.weight_sum,
                        change.threshold
                    );
                } else {
                    tracing::warn!(
                        "{}: quorum {} ({} < {})",
                        change.virtual_server,
                        if change.initial {
                            "down at start"
                        } else {
                            "lost"
                        },
                        change.weight_sum,
                        change.threshold
                    );
                }
                Notification::Quorum {
                    virtual_server: change.virtual_server,
                    up: change.up,
                    script,
                }
            })
            .collect();
        applied.map_err(ReconcileError::Apply)?;
        Ok((operations.len(), notifications))
    }

    /// What keepalived does at stop (`clear_services`): flush the whole
    /// table with `lvs_flush_on_stop` (bare or `ALL`), else delete the
    /// services pulse owns (`VS`, or by default after their destinations,
    /// which deleting the service removes anyway). Returns the scripts of
    /// virtual servers with `omega`.
    pub fn clear(&mut self) -> Result<Vec<Notification>, ReconcileError> {
        let flush = !matches!(
            self.configuration.global.lvs_flush_on_stop.as_deref(),
            Some("VS") | None
        );
        let operations = if flush {
            vec![Operation::Flush]
        } else {
            let computed = desired(&self.configuration, &self.health, &self.quorum);
            let kernel = read(&mut self.client).map_err(ReconcileError::Read)?;
            kernel
                .services
                .iter()
                .map(|entry| entry.service.key)
                .filter(|key| self.ownership.owns(key, &computed.table))
                .map(Operation::DeleteService)
                .collect()
        };
        for operation in &operations {
            tracing::info!("stop: {operation}");
        }
        self.client
            .apply(&operations)
            .map_err(ReconcileError::Apply)?;
        Ok(stop_notifications(&self.configuration, &self.health, flush))
    }
}

/// Each virtual server's position by name, the first of a name kept.
fn positions(configuration: &config::Config) -> HashMap<VirtualServerName, usize> {
    let mut positions = HashMap::with_capacity(configuration.virtual_servers.len());
    for (position, virtual_server) in configuration.virtual_servers.iter().enumerate() {
        positions
            .entry(VirtualServerName::from_config(virtual_server))
            .or_insert(position);
    }
    positions
}

/// The scripts keepalived runs at stop: only for virtual servers with
/// `omega` ("Only send non SNMP notifies when stopping if omega set",
/// ipwrapper.c `do_vs_notifies`): each alive real server's `notify_down`
/// (`clear_service_rs`, which a full flush skips), then `quorum_down`,
/// whatever the quorum was (`update_vs_notifies` with `stopping`).
pub fn stop_notifications(
    configuration: &config::Config,
    health: &Health,
    flush: bool,
) -> Vec<Notification> {
    let mut notifications = Vec::new();
    for virtual_server in configuration
        .virtual_servers
        .iter()
        .filter(|virtual_server| virtual_server.omega)
    {
        let name = VirtualServerName::from_config(virtual_server);
        if !flush {
            for real_server in &virtual_server.real_servers {
                if crate::desired::state(&name, real_server, health).0 {
                    notifications.push(Notification::RealServer {
                        virtual_server: name.clone(),
                        real_server: SocketAddr::new(real_server.address, real_server.port),
                        up: false,
                        script: real_server.notify_down.as_deref().cloned(),
                    });
                }
            }
        }
        notifications.push(Notification::Quorum {
            virtual_server: name,
            up: false,
            script: virtual_server.quorum_down.as_deref().cloned(),
        });
    }
    notifications
}

/// How a pass went, for whoever waits on it: the number of operations
/// applied, or the error, as text.
pub type PassOutcome = Result<usize, String>;

/// A new configuration, already loaded and checked.
pub struct Reload {
    pub configuration: Arc<config::Config>,
    /// Told once the new configuration's pass is over (systemd's READY
    /// after RELOADING).
    pub applied: Option<oneshot::Sender<PassOutcome>>,
}

/// The channels the loop listens and talks on.
pub struct Channels {
    /// nanny's state changes (`nanny::scheduler::Handle::events`).
    pub states: mpsc::Receiver<StateChange>,
    pub reloads: mpsc::Receiver<Reload>,
    /// Told once the start pass is over (systemd's READY).
    pub started: Option<oneshot::Sender<PassOutcome>>,
    /// Fires once to stop, saying what to do with the table.
    pub stop: oneshot::Receiver<StopMode>,
    /// Scripts to run.
    pub notifications: mpsc::Sender<Notification>,
}

/// Runs `reconciler` until told to stop (or until both the state changes
/// and the reloads end); returns it.
pub async fn run(mut reconciler: Reconciler, mut channels: Channels) -> Reconciler {
    let mut timer = tokio::time::interval(DRIFT_CHECK);
    timer.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    // The first tick is immediate: the start pass.
    timer.tick().await;
    let mut reason = Some(Reason::Start);
    let mut waiting = channels.started.take();
    let mut states_open = true;
    let mut reloads_open = true;
    let stop = loop {
        if let Some(why) = reason.take() {
            let (returned, outcome) =
                in_blocking_pool(reconciler, move |reconciler| reconciler.pass(why)).await;
            reconciler = returned;
            let told = match outcome {
                Ok((applied, notifications)) => {
                    notify(&channels.notifications, notifications);
                    Ok(applied)
                }
                Err(error) => {
                    match &error {
                        // Each refused operation is logged by the pass.
                        ReconcileError::Apply(_) => tracing::debug!("{why}: {error}"),
                        ReconcileError::Read(_) => tracing::error!("{why}: {error}"),
                    }
                    Err(error.to_string())
                }
            };
            if let Some(waiting) = waiting.take() {
                let _ = waiting.send(told);
            }
            // Every pass reads the whole table: the next drift check is due
            // a full period after this one, not at the next tick (on 1,000
            // services a read is 1,001 dumps; a reload or a burst of health
            // changes should not be followed by one at once).
            timer.reset();
        }
        if !states_open && !reloads_open {
            // The daemon sends its stop mode, then drops both channels:
            // `select!` may see the channels close before it polls the stop
            // (it picks among ready branches at random), and the mode must
            // not be lost then (SIGTERM left the table in place in one lab
            // run). Without a mode, the daemon is gone: keep the table.
            break channels.stop.try_recv().unwrap_or(StopMode::Keep);
        }
        tokio::select! {
            change = channels.states.recv(), if states_open => match change {
                Some(change) => {
                    notify(&channels.notifications, reconciler.record(&change));
                    // One pass for every change already queued: nanny's
                    // first reports come in a burst, one per real server.
                    while let Ok(change) = channels.states.try_recv() {
                        notify(&channels.notifications, reconciler.record(&change));
                    }
                    reason = Some(Reason::Health);
                }
                None => states_open = false,
            },
            reload = channels.reloads.recv(), if reloads_open => match reload {
                Some(reload) => {
                    reconciler.reload(reload.configuration);
                    waiting = reload.applied;
                    reason = Some(Reason::Reload);
                }
                None => reloads_open = false,
            },
            _ = timer.tick() => reason = Some(Reason::DriftCheck),
            mode = &mut channels.stop => break mode.unwrap_or(StopMode::Keep),
        }
    };
    if stop == StopMode::Clear {
        let (returned, outcome) = in_blocking_pool(reconciler, Reconciler::clear).await;
        reconciler = returned;
        match outcome {
            Ok(notifications) => notify(&channels.notifications, notifications),
            Err(error) => tracing::error!("stop: {error}"),
        }
    }
    reconciler
}

/// Hands notifications on without waiting: a slow script runner must not
/// hold up the table, so a full channel drops (and logs) a notification.
fn notify(sender: &mpsc::Sender<Notification>, notifications: Vec<Notification>) {
    for notification in notifications {
        match sender.try_send(notification) {
            Ok(()) | Err(mpsc::error::TrySendError::Closed(_)) => {}
            Err(mpsc::error::TrySendError::Full(notification)) => {
                tracing::warn!(
                    "notification dropped, the script runner is behind: {notification:?}"
                )
            }
        }
    }
}

/// Runs `work` on the reconciler in tokio's blocking pool (netlink calls
/// block) and hands it back.
async fn in_blocking_pool<T: Send + 'static>(
    mut reconciler: Reconciler,
    work: impl FnOnce(&mut Reconciler) -> Result<T, ReconcileError> + Send + 'static,
) -> (Reconciler, Result<T, ReconcileError>) {
    let handle = tokio::task::spawn_blocking(move || {
        let outcome = work(&mut reconciler);
        (reconciler, outcome)
    });
    match handle.await {
        Ok(result) => result,
        // The reconciler went down with the panic: nothing to hand back.
        Err(error) => std::panic::resume_unwind(error.into_panic()),
    }
}

/// A batch's refusals, less those of services the table's read missed.
///
/// The kernel's service dump resumes each datagram by position in a table
/// every namespace shares, so services of other namespaces coming and going
/// meanwhile can make it skip one of ours: planned again, its creation and
/// its destinations' are refused as existing. Not refusals to report; the
/// next pass, within [`DRIFT_CHECK`], reads the table again.
fn without_missed_services(
    operations: &[Operation],
    mut error: BatchError,
    reason: Reason,
) -> Result<(), BatchError> {
    let exists = |failure: &ipvs::Error| failure.errno() == Some(ipvs::Errno(libc::EEXIST));
    let missed: HashSet<ServiceKey> = error
        .failures
        .iter()
        .filter_map(|(index, failure)| match &operations[*index] {
            Operation::CreateService(service) if exists(failure) => Some(service.key),
            _ => None,
        })
        .collect();
    error.failures.retain(|(index, failure)| {
        let of_a_missed_service = match &operations[*index] {
            Operation::CreateService(service) => missed.contains(&service.key),
            Operation::CreateDestination(key, _) => missed.contains(key),
            _ => false,
        };
        if of_a_missed_service && exists(failure) {
            tracing::debug!(
                "{reason}: {} exists: the table's read missed its service",
                operations[*index]
            );
            return false;
        }
        true
    });
    if error.failures.is_empty() && error.interrupted.is_none() {
        Ok(())
    } else {
        Err(error)
    }
}

/// Loads the scheduler and persistence-engine modules a batch needs and the
/// kernel lacks, before the batch.
///
/// Otherwise the kernel loads them itself, with IPVS's lock held
/// (`request_module` in `ip_vs_scheduler_get`), and that can deadlock: the
/// module's init waits for the network-namespace lock, which the kernel
/// holds while it dismantles a deleted namespace, and which waits for
/// IPVS's lock (`ip_vs_dst_event`), until the request is killed (seen in
/// the lab: 125 s and more, from `ipvsadm -A -s lblcr`). Loaded here,
/// outside IPVS's lock, a module only waits for the dismantling to end. A
/// module that does not load is left to the kernel, whose refusal of the
/// operation is then reported as usual.
fn load_modules(operations: &[Operation], asked_for: &mut HashSet<String>) {
    for module in modules_to_load(operations, |module| {
        asked_for.contains(module) || std::path::Path::new("/sys/module").join(module).exists()
    }) {
        asked_for.insert(module.clone());
        match std::process::Command::new("modprobe")
            .args(["-q", &module])
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
        {
            Ok(status) if status.success() => tracing::debug!("loaded {module}"),
            Ok(status) => tracing::debug!("modprobe {module}: {status}"),
            Err(error) => tracing::debug!("modprobe {module}: {error}"),
        }
    }
}

/// The modules (`ip_vs_NAME` for a scheduler, `ip_vs_pe_NAME` for a
/// persistence engine, as the kernel asks for them) of the services a batch
/// creates or updates that are not `loaded`, each once. A name that is not a
/// module name (the kernel would refuse the service) is skipped.
fn modules_to_load(operations: &[Operation], loaded: impl Fn(&str) -> bool) -> Vec<String> {
    let mut modules: Vec<String> = Vec::new();
    for operation in operations {
        let (Operation::CreateService(service) | Operation::UpdateService(service)) = operation
        else {
            continue;
        };
        let scheduler = Some(format!("ip_vs_{}", service.scheduler));
        let engine = service
            .persistence_engine
            .as_ref()
            .map(|engine| format!("ip_vs_pe_{engine}"));
        for module in [scheduler, engine].into_iter().flatten() {
            let is_a_module_name = module
                .bytes()
                .all(|byte| byte.is_ascii_alphanumeric() || byte == b'_');
            if is_a_module_name && !modules.contains(&module) && !loaded(&module) {
                modules.push(module);
            }
        }
    }
    modules
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::desired::TableService;
    use ipvs::{ConnectionCounters, Destination, Forwarding, Protocol, Service};

    fn web() -> ServiceKey {
        ServiceKey::Address {
            protocol: Protocol::Tcp,
            address: "192.0.2.1".parse().unwrap(),
            port: 80,
        }
    }

    fn destination(address: &str, weight: u32, active: u32, inactive: u32) -> Destination {
        Destination {
            weight,
            counters: Some(ConnectionCounters {
                active,
                inactive,
                persistent: 7,
            }),
            ..Destination::new(address.parse().unwrap(), Forwarding::Masquerade)
        }
    }

    fn table(services: Vec<(ServiceKey, Vec<Destination>)>) -> Table {
        Table {
            services: services
                .into_iter()
                .map(|(key, destinations)| TableService {
                    service: Service::new(key, "rr"),
                    destinations,
                })
                .collect(),
            timeouts: Default::default(),
        }
    }

    fn weights(table: &Table) -> Vec<(ServiceKey, String, u32)> {
        table
            .services
            .iter()
            .flat_map(|entry| {
                entry.destinations.iter().map(|destination| {
                    (
                        entry.service.key,
                        destination.socket_address().to_string(),
                        destination.weight,
                    )
                })
            })
            .collect()
    }

    #[test]
    fn what_a_reload_removes_drains_at_weight_0_until_it_has_no_connection() {
        let dns = ServiceKey::Address {
            protocol: Protocol::Udp,
            address: "192.0.2.2".parse().unwrap(),
            port: 53,
        };
        let before = table(vec![
            (
                web(),
                vec![
                    destination("10.0.0.1:80", 1, 0, 0),
                    destination("10.0.0.2:80", 1, 0, 0),
                    destination("10.0.0.3:80", 1, 0, 0),
                ],
            ),
            (dns, vec![destination("10.0.0.9:53", 1, 0, 0)]),
        ]);
        let after = table(vec![(web(), vec![destination("10.0.0.1:80", 1, 0, 0)])]);
        let mut draining = Draining::default();
        draining.record(&before, &after);

        // .2 has an active connection, .3 none; the removed service has
        // an inactive one.
        let kernel = table(vec![
            (
                web(),
                vec![
                    destination("10.0.0.1:80", 1, 0, 0),
                    destination("10.0.0.2:80", 1, 1, 0),
                    destination("10.0.0.3:80", 1, 0, 0),
                ],
            ),
            (dns, vec![destination("10.0.0.9:53", 1, 0, 1)]),
        ]);
        let mut wanted = after.clone();
        draining.keep(&kernel, &mut wanted);
        assert_eq!(
            weights(&wanted),
            [
                (web(), "10.0.0.1:80".into(), 1),
                (web(), "10.0.0.2:80".into(), 0),
                (dns, "10.0.0.9:53".into(), 0),
            ]
        );
        // The plan sets the weights to 0 and deletes .3 alone, last.
        let operations = plan(&kernel, &wanted, &Ownership::after(&after));
        let texts: Vec<String> = operations.iter().map(ToString::to_string).collect();
        assert_eq!(texts.len(), 3, "{texts:?}");
        assert!(
            matches!(&operations[..], [
                Operation::UpdateDestination(_, second),
                Operation::UpdateDestination(_, service),
                Operation::DeleteDestination(_, third),
            ] if second.weight == 0 && service.weight == 0 && third.to_string() == "10.0.0.3:80"),
            "{texts:?}"
        );

        // Their connections end (persistence templates do not count): the
        // next pass deletes them.
        let kernel = table(vec![
            (
                web(),
                vec![
                    destination("10.0.0.1:80", 1, 0, 0),
                    destination("10.0.0.2:80", 0, 0, 0),
                ],
            ),
            (dns, vec![destination("10.0.0.9:53", 0, 0, 0)]),
        ]);
        let mut wanted = after.clone();
        draining.keep(&kernel, &mut wanted);
        assert_eq!(weights(&wanted), [(web(), "10.0.0.1:80".into(), 1)]);
        assert!(draining.destinations.is_empty() && draining.services.is_empty());
    }

    fn load(text: &str) -> config::Config {
        fulcrum_config::load_str("test.conf", text, &Default::default()).config
    }

    #[test]
    fn creations_refused_because_the_read_missed_the_service_are_not_failures() {
        let refusal = |errno: i32| ipvs::Error::Kernel {
            operation: "test".into(),
            errno: ipvs::Errno(errno),
            reason: "test".into(),
        };
        let other = ServiceKey::Fwmark {
            family: ipvs::Family::Inet,
            mark: 7,
        };
        let real_server = || destination("10.0.2.11:80", 1, 0, 0);
        let operations = [
            Operation::CreateService(ipvs::Service::new(web(), "rr")),
            Operation::CreateDestination(web(), real_server()),
            Operation::CreateDestination(other, real_server()),
            Operation::CreateService(ipvs::Service::new(other, "nonesuch")),
        ];
        let batch = |failures: Vec<(usize, ipvs::Error)>| BatchError {
            total: operations.len(),
            failures,
            interrupted: None,
        };
        assert!(
            without_missed_services(
                &operations,
                batch(vec![(0, refusal(libc::EEXIST)), (1, refusal(libc::EEXIST))]),
                Reason::Health
            )
            .is_ok()
        );
        // A destination of a service that was created is a real refusal,
        // and so is any other errno.
        let left = without_missed_services(
            &operations,
            batch(vec![
                (0, refusal(libc::EEXIST)),
                (2, refusal(libc::EEXIST)),
                (3, refusal(libc::ENOENT)),
            ]),
            Reason::Health,
        )
        .unwrap_err();
        let indexes: Vec<usize> = left.failures.iter().map(|(index, _)| *index).collect();
        assert_eq!(indexes, [2, 3]);
    }

    #[test]
    fn modules_missing_from_the_kernel_are_loaded_before_their_services() {
        let service = |scheduler: &str, engine: Option<&str>| {
            let mut service = ipvs::Service::new(web(), scheduler);
            service.persistence_engine = engine.map(str::to_owned);
            service
        };
        let operations = [
            Operation::CreateService(service("lblcr", None)),
            Operation::CreateService(service("rr", Some("sip"))),
            Operation::UpdateService(service("lblcr", None)),
            Operation::UpdateService(service("wlc", None)),
            // Not a module name: left to the kernel to refuse.
            Operation::CreateService(service("../x", None)),
            Operation::DeleteService(web()),
        ];
        let loaded = |module: &str| matches!(module, "ip_vs_rr" | "ip_vs_wlc");
        assert_eq!(
            modules_to_load(&operations, loaded),
            ["ip_vs_lblcr", "ip_vs_pe_sip"]
        );
        assert!(modules_to_load(&operations[3..], loaded).is_empty());
    }

    #[test]
    fn virtual_servers_are_found_by_name_the_first_of_a_name_kept() {
        let configuration = load(
            "virtual_server 192.0.2.1 80 {
    protocol TCP
    real_server 10.0.0.1 80 { }
}
virtual_server 192.0.2.2 80 {
    protocol TCP
    real_server 10.0.0.2 80 { }
}
virtual_server 192.0.2.1 80 {
    protocol TCP
    real_server 10.0.0.3 80 { }
}",
        );
        let positions = positions(&configuration);
        assert_eq!(positions.len(), 2);
        for (position, virtual_server) in configuration.virtual_servers.iter().enumerate().take(2) {
            assert_eq!(
                positions[&VirtualServerName::from_config(virtual_server)],
                position
            );
        }
    }

    #[test]
    fn omega_runs_the_down_scripts_at_stop() {
        let configuration = load(
            "virtual_server 192.0.2.1 80 {
    protocol TCP
    omega
    quorum_down /bin/quorum-down
    real_server 10.0.0.1 80 { notify_down /bin/down-1 }
    real_server 10.0.0.2 80 { notify_down /bin/down-2\n TCP_CHECK { alpha } }
}
virtual_server 192.0.2.2 80 {
    protocol TCP
    quorum_down /bin/not-run
    real_server 10.0.0.1 80 { notify_down /bin/not-run }
}",
        );
        let scripts = |flush| -> Vec<String> {
            stop_notifications(&configuration, &Health::default(), flush)
                .into_iter()
                .map(|notification| match notification {
                    Notification::RealServer { script, .. }
                    | Notification::Quorum { script, .. } => script.unwrap().command,
                })
                .collect()
        };
        // The alpha server is not alive yet: no notify_down for it.
        assert_eq!(scripts(false), ["/bin/down-1", "/bin/quorum-down"]);
        assert_eq!(scripts(true), ["/bin/quorum-down"]);
    }
}
