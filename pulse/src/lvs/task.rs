//! The task that keeps the kernel's IPVS table what the configuration and
//! the health checks say: one `select!` loop over nanny's verdicts, the
//! running configuration (a `watch`: a new value is a reload), the audit's
//! snapshots, the netlink tap's word of others' changes, the drain check
//! and shutdown.
//!
//! Rules:
//!
//! - **What the kernel holds is known** ([`Reconciler::applied`]): read once
//!   at start, then kept from what the kernel acknowledges, from what is
//!   read back after each change, and from the audit's snapshots. A change
//!   is planned against it, never against a fresh read of the table.
//! - **A change costs what it changes.** A health verdict recomputes only
//!   the virtual servers it names ([`Layout::affected`]) and plans only
//!   their services; a reload compares the two configurations (as
//!   keepalived does) and, when they lay their services out alike,
//!   recomputes and plans only the virtual servers whose blocks differ
//!   ([`Layout::changed`]); otherwise it recomputes the desired table in
//!   memory and plans every service against what is known. Neither reads
//!   the kernel. The operations go as one pipelined batch
//!   ([`Client::apply`]); the start's, the largest, is computed and planned
//!   in pieces that another thread hands to the kernel as they come
//!   ([`Reconciler::apply_in_pieces`]), kept as one batch.
//! - **Verified where it was changed.** After a batch, the services it
//!   touched are read back, each alone (at most [`VERIFY_ONE_BY_ONE`];
//!   a larger batch, such as the start's, is verified by an audit at once,
//!   which reads the whole table more cheaply than a dump per service).
//! - **The kernel tells.** An operation refused because the object is not
//!   as pulse knew it (EEXIST on a creation, ESRCH or ENOENT on an edit or
//!   a deletion: someone else changed the table) is not reported as a
//!   failure: its service is read back and planned again at once. And
//!   where the kernel has nlmon, the tap ([`super::tap`]) says which
//!   services another process changed over netlink, once the kernel has
//!   handled the change: those are read back, and repaired where they are
//!   not as applied ([`Reconciler::told`]); a flush asks for an audit.
//! - **The audit** ([`super::audit`]) is the second loop: it reads the
//!   whole table on its own socket and thread, spread out, and the task
//!   compares what it read with what it wants, so a hand edit is repaired
//!   within a period. A service a change touched after the audit's read
//!   began keeps what the task knows of it.
//! - **Draining** ([`super::drain`]): the services that hold something a
//!   reload removed are read back every [`DRAIN_CHECK`], and what no longer
//!   carries connections is deleted.
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
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime};

use fulcrum_config::model as config;
use ipvs::{BatchError, Client, EncodedBatch, Operation, ServiceKey, Traffic};
use nanny::scheduler::StateChange;
use nanny::spec::VirtualServerKey;
use tokio::sync::{Notify, mpsc, oneshot, watch};

use super::audit::{self, Snapshot};
use super::desired::{
    ByAddress, Desired, Health, Layout, QuorumStates, Table, TableService, desired_in_pieces,
    desired_of, desired_whole,
};
use super::drain::Draining;
use super::plan::{
    Ownership, Scope, destination_differs, plan_piece, plan_unwanted, plan_within, service_differs,
};
use super::report::LvsReport;
pub use super::report::Reason;
use super::tap;

/// How often what drains is read back.
pub const DRAIN_CHECK: Duration = Duration::from_secs(1);

/// The most services a change reads back one by one; a larger change is
/// verified by an audit at once.
pub const VERIFY_ONE_BY_ONE: usize = 64;

/// The most operations of a pass logged one by one at info level; a larger
/// pass (the start's, say) logs a summary, and each operation at debug.
pub const LOGGED_ONE_BY_ONE: usize = 64;

#[derive(Debug, thiserror::Error)]
pub enum ReconcileError {
    #[error("cannot read the IPVS table: {0}")]
    Read(#[source] ipvs::Error),
    #[error("cannot apply the IPVS changes: {0}")]
    Apply(#[source] BatchError),
}

/// A script keepalived would run now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Notification {
    /// A real server went up or down (`notify_up` / `notify_down`).
    RealServer {
        virtual_server: VirtualServerKey,
        real_server: SocketAddr,
        up: bool,
        script: Option<config::Script>,
    },
    /// A virtual server gained or lost quorum (`quorum_up` /
    /// `quorum_down`).
    Quorum {
        virtual_server: VirtualServerKey,
        up: bool,
        script: Option<config::Script>,
    },
}

impl Notification {
    /// The script this notification runs, if the configuration has one.
    pub fn script(&self) -> Option<&config::Script> {
        match self {
            Notification::RealServer { script, .. } | Notification::Quorum { script, .. } => {
                script.as_ref()
            }
        }
    }
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

/// What one pass did.
#[derive(Debug, Default)]
pub struct Report {
    /// The operations sent (each is logged).
    pub operations: usize,
    /// The netlink messages it cost: the batch, the read-back, a repair.
    pub traffic: Traffic,
    pub took: Duration,
    pub notifications: Vec<Notification>,
    /// What went wrong, if anything (the operations refused are logged).
    pub error: Option<ReconcileError>,
}

/// The state a pass needs: the client, the configuration, what nanny said,
/// the quorum states, what the kernel holds and what pulse owns.
pub struct Reconciler {
    client: Client,
    configuration: Arc<config::Config>,
    /// Where each virtual server is in `configuration` and which services it
    /// makes, by the key nanny reports it with.
    layout: Layout,
    health: Health,
    quorum: QuorumStates,
    /// The table the configuration and the health call for.
    desired: Table,
    /// What the kernel holds, as far as pulse knows (see the rules).
    applied: Table,
    ownership: Ownership,
    /// The operations the kernel refused in the last pass, as text: the
    /// next pass retries them without logging each retry as news (a
    /// scheduler the kernel lacks would otherwise log an error a second).
    /// (With the service each is about: an audit plans those again.)
    failing: HashMap<String, Option<ServiceKey>>,
    /// What a reload removed while it still carried connections.
    draining: Draining,
    /// Modules [`load_modules`] asked modprobe for, each once: one that does
    /// not exist would otherwise be asked for at every retry.
    modules_asked_for: HashSet<String>,
    /// The number of the last pass over: the changes it applied, and its
    /// read-back. The audit reads it when it begins: a service touched by a
    /// later pass may have changed after it was read.
    passes: Arc<AtomicU64>,
    /// The number of the last pass that touched each service.
    touched: HashMap<ServiceKey, u64>,
    /// The services the audit must read over netlink.
    audit_scope: watch::Sender<Arc<audit::Scope>>,
    /// Asks the audit for a reading at once.
    audit_now: Arc<Notify>,
    /// Where the quorum's SMTP alerts go, if anywhere.
    alerts: Option<Arc<super::alerts::CheckerAlerts>>,
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
        let layout = Layout::of(&configuration);
        Reconciler {
            client,
            layout,
            configuration,
            health: Health::default(),
            quorum: QuorumStates::default(),
            desired: Table::default(),
            applied: Table::default(),
            ownership,
            failing: HashMap::new(),
            draining: Draining::default(),
            modules_asked_for: HashSet::new(),
            passes: Arc::new(AtomicU64::new(0)),
            touched: HashMap::new(),
            audit_scope: watch::Sender::new(Arc::new(audit::Scope::default())),
            audit_now: Arc::new(Notify::new()),
            alerts: None,
        }
    }

    /// Sends the virtual servers' quorum alerts through `alerts`.
    pub fn alerting(mut self, alerts: Arc<super::alerts::CheckerAlerts>) -> Reconciler {
        self.alerts = Some(alerts);
        self
    }

    /// The configuration running.
    pub fn configuration(&self) -> &Arc<config::Config> {
        &self.configuration
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
        virtual_server: &VirtualServerKey,
        address: SocketAddr,
    ) -> Option<&config::RealServer> {
        self.virtual_server(virtual_server)?
            .real_servers
            .iter()
            .find(|real_server| SocketAddr::new(real_server.address, real_server.port) == address)
    }

    /// Whether the running configuration has this real server in this
    /// virtual server.
    pub fn configures(&self, virtual_server: &VirtualServerKey, address: SocketAddr) -> bool {
        self.real_server(virtual_server, address).is_some()
    }

    fn virtual_server(&self, name: &VirtualServerKey) -> Option<&config::VirtualServer> {
        self.layout
            .position(name)
            .map(|position| &self.configuration.virtual_servers[position])
    }

    /// The start: what the kernel holds read whole (the audit's way), then
    /// one pass, computed and planned in pieces that the kernel takes as
    /// they come ([`Reconciler::apply_in_pieces`]).
    pub fn start(&mut self) -> Report {
        let scope = audit::Scope::of_configuration(&self.configuration, &self.layout);
        let (applied, cost) = match audit::read(&mut self.client, &scope, 0) {
            Ok(read) => read,
            Err(error) => {
                // What is wanted is known; what the kernel holds, once an
                // audit reads it (asked for now), which plans the rest.
                let computed = desired_whole(
                    &self.configuration,
                    &self.layout,
                    &self.health,
                    &self.quorum,
                );
                self.audit_scope
                    .send_replace(Arc::new(audit::Scope::of(&computed.table)));
                self.desired = computed.table;
                self.quorum = computed.quorum;
                self.audit_now.notify_one();
                return Report::failed(ReconcileError::Read(error));
            }
        };
        tracing::debug!(
            "start: {} services found in the kernel ({})",
            cost.services,
            cost.traffic
        );
        self.applied = applied;
        let started = Instant::now();
        let traffic = self.client.traffic();
        let (computed, first) = self.apply_in_pieces();
        self.audit_scope
            .send_replace(Arc::new(audit::Scope::of(&computed.table)));
        self.desired = computed.table;
        self.quorum = computed.quorum;
        let notifications = self.quorum_notifications(computed.quorum_changes);
        let mut report = self.finish_pass(first, started, traffic);
        report.notifications = notifications;
        report
    }

    /// The start's pass: the desired table computed and planned a piece at
    /// a time ([`desired_in_pieces`], [`plan_piece`]) on this thread while
    /// another gives the kernel each piece as it comes, so the kernel's
    /// work (the start's largest cost) begins after the first virtual
    /// server rather than after the whole table. Then the bookkeeping of one
    /// batch ([`Reconciler::settle`]), as if the pieces had been one: the
    /// kernel's answers are numbered across them, and an interrupted
    /// exchange leaves the later pieces unsent (read back like the rest of
    /// an interrupted batch). Returns the whole desired table.
    fn apply_in_pieces(&mut self) -> (Desired, PlanOutcome) {
        let computing = Instant::now();
        let Reconciler {
            client,
            configuration,
            layout,
            health,
            quorum,
            applied,
            ownership,
            modules_asked_for,
            ..
        } = self;
        let (computed, batch, computed_in) = std::thread::scope(|scope| {
            let (pieces, received) = std::sync::mpsc::sync_channel(PIECES_AHEAD);
            let sender = scope.spawn(move || send_pieces(client, modules_asked_for, received));
            let mut whole = Desired::default();
            // Each piece encoded here too: the sender's thread is left the
            // kernel's work alone.
            let send = |operations: Vec<Operation>| {
                if !operations.is_empty() {
                    let encoded = EncodedBatch::new(&operations).ok();
                    // The sender ends only once `pieces` is dropped.
                    let _ = pieces.send((operations, encoded));
                }
            };
            for piece in desired_in_pieces(configuration, layout, health, quorum) {
                send(plan_piece(applied, &piece.table, ownership));
                whole.append(piece);
            }
            send(plan_unwanted(applied, &whole.table, ownership));
            let computed_in = computing.elapsed();
            drop(pieces);
            let batch = sender
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
            (whole, batch, computed_in)
        });
        tracing::debug!(
            "start: computed and planned in {} pieces in {:.1} ms, the kernel done {:.1} ms after \
             the start",
            batch.pieces,
            computed_in.as_secs_f64() * 1000.0,
            computing.elapsed().as_secs_f64() * 1000.0
        );
        let operations = batch.operations;
        if operations.is_empty() {
            self.ownership = Ownership::Matching(HashSet::new());
            return (computed, PlanOutcome::default());
        }
        let previously_failing = self.begin_pass(Reason::Start, Scope::Everything, &operations);
        let outcome = self.settle(
            Reason::Start,
            &operations,
            batch.failures,
            batch.interrupted,
            &previously_failing,
            HashSet::new(),
        );
        (computed, outcome)
    }

    /// Moves to a new configuration and applies it. Quorum states and
    /// health carry over for virtual and real servers still configured
    /// (keepalived's `clear_diff_services` copies them); what the new
    /// configuration drops is drained ([`super::drain`]).
    pub fn reload(&mut self, configuration: Arc<config::Config>) -> Report {
        let started = Instant::now();
        // With the same layout, only the virtual servers whose blocks
        // differ are computed, and only their services planned: a reload
        // costs what it changes. Otherwise the whole table is computed, with
        // the new configuration's layout.
        let (computed, recomputed) = match self.layout.changed(&self.configuration, &configuration)
        {
            Some(positions) => {
                let (positions, keys) = self.layout.around(positions);
                let part = desired_of(
                    &configuration,
                    &self.layout,
                    &positions,
                    &self.health,
                    &self.quorum,
                );
                (part, Recomputed::Services(keys))
            }
            None => {
                let layout = Layout::of(&configuration);
                let whole = desired_whole(&configuration, &layout, &self.health, &self.quorum);
                (whole, Recomputed::Whole(layout))
            }
        };
        let computing = started.elapsed();
        match &recomputed {
            Recomputed::Services(keys) => self.draining.record(
                keys.iter().filter_map(|key| self.desired.service(key)),
                &computed.table,
            ),
            Recomputed::Whole(_) => self
                .draining
                .record(self.desired.services.values(), &computed.table),
        }
        tracing::debug!(
            "reload: the desired table computed in {:.1} ms ({}), what it removes found in \
             {:.1} ms",
            computing.as_secs_f64() * 1000.0,
            match &recomputed {
                Recomputed::Services(keys) =>
                    format!("{} services of changed virtual servers", keys.len()),
                Recomputed::Whole(_) => "whole".to_owned(),
            },
            (started.elapsed() - computing).as_secs_f64() * 1000.0
        );
        // What drains is kept while it carries connections: their counts
        // are read now, for the services holding it alone (what is known of
        // the others' counts may be old, and is not needed).
        let draining = self.draining.keys();
        if let Err(error) = self.read_back(&draining) {
            return Report::failed(ReconcileError::Read(error));
        }
        self.configuration = configuration;
        let mut keys = match recomputed {
            Recomputed::Services(keys) => keys,
            Recomputed::Whole(layout) => {
                self.layout = layout;
                self.audit_scope
                    .send_replace(Arc::new(audit::Scope::of(&computed.table)));
                return self.pass_with(Reason::Reload, computed, Scope::Everything);
            }
        };
        // What drains and what failed before are planned too, as a whole
        // pass would.
        keys.extend(draining);
        keys.extend(self.failing.values().flatten());
        let report = self.pass_with(Reason::Reload, computed, Scope::Services(&keys));
        // The audit's scope, for the services this pass replaced alone.
        let scope = self.audit_scope.borrow().updated(&self.desired, &keys);
        self.audit_scope.send_replace(Arc::new(scope));
        report
    }

    /// Applies what the health recorded since the last pass means for the
    /// virtual servers `names`.
    pub fn health_changed<'a>(
        &mut self,
        names: impl IntoIterator<Item = &'a VirtualServerKey>,
    ) -> Report {
        let (positions, keys) = self.layout.affected(names);
        let computed = desired_of(
            &self.configuration,
            &self.layout,
            &positions,
            &self.health,
            &self.quorum,
        );
        self.pass_with(Reason::Health, computed, Scope::Services(&keys))
    }

    /// Takes in an audit's reading and repairs what differs: only the
    /// services whose reading is not what was known are planned, with those
    /// the reading lacks and those whose operations failed last time, so
    /// that a reading costs the change loop a comparison, not a plan of the
    /// whole table.
    pub fn audited(&mut self, snapshot: Snapshot) -> Report {
        let since = snapshot.since;
        let touched = &self.touched;
        let newer = |key: &ServiceKey| touched.get(key).is_some_and(|&pass| pass > since);
        let mut suspects: HashSet<ServiceKey> = self
            .applied
            .services
            .keys()
            .chain(self.desired.services.keys())
            .filter(|key| !snapshot.table.services.contains_key(*key) && !newer(key))
            .copied()
            .collect();
        for key in &suspects {
            self.applied.services.swap_remove(key);
        }
        for (key, entry) in snapshot.table.services {
            if newer(&key) {
                continue;
            }
            match self.applied.services.get_mut(&key) {
                Some(known) if same_in_the_kernel(known, &entry) => {}
                Some(known) => {
                    *known = entry;
                    suspects.insert(key);
                }
                None => {
                    self.applied.insert(entry);
                    suspects.insert(key);
                }
            }
        }
        let timeouts_differ = self.applied.timeouts != snapshot.table.timeouts;
        if !suspects.is_empty() || timeouts_differ {
            // Something other than pulse changed the table (or pulse's
            // knowledge was wrong): said once per reading, with what the
            // reading cost, before the repairs are logged one by one.
            tracing::info!(
                "audit: {} of {} services{} differed from what pulse applied (read {})",
                suspects.len(),
                snapshot.cost.services,
                if timeouts_differ {
                    " and the timeouts"
                } else {
                    ""
                },
                snapshot.cost
            );
        }
        suspects.extend(self.failing.values().flatten());
        self.applied.timeouts = snapshot.table.timeouts;
        // The others are known from this reading now.
        self.touched.retain(|_, pass| *pass > since);
        if timeouts_differ {
            return self.pass(Reason::DriftCheck, Scope::Everything);
        }
        self.pass(Reason::DriftCheck, Scope::Services(&suspects))
    }

    /// Reads back the services another process changed, as the tap told,
    /// and repairs those not as pulse applied them; a change to the whole
    /// table (a flush, the timeouts, a change the tap could not read) asks
    /// for an audit at once.
    pub fn told(&mut self, changed: ipvs::monitor::Changed) -> Report {
        if changed.table {
            self.audit_now.notify_one();
        }
        if changed.services.len() > VERIFY_ONE_BY_ONE {
            // Many at once (a script's burst): cheaper read whole.
            self.audit_now.notify_one();
            return Report::default();
        }
        if changed.services.is_empty() {
            return Report::default();
        }
        let started = Instant::now();
        let traffic = self.client.traffic();
        let differ = match self.read_back(&changed.services) {
            Ok(differ) => differ,
            Err(error) => return Report::failed(ReconcileError::Read(error)),
        };
        if !differ.is_empty() {
            tracing::info!(
                "told: {} of {} services another process changed differed from what pulse \
                 applied (read back in {:.1} ms, {})",
                differ.len(),
                changed.services.len(),
                started.elapsed().as_secs_f64() * 1000.0,
                self.client.traffic().since(traffic)
            );
        }
        let mut report = self.pass(Reason::Edited, Scope::Services(&differ));
        report.traffic = self.client.traffic().since(traffic);
        report
    }

    /// Reads back what drains and deletes what no longer carries
    /// connections.
    pub fn drain(&mut self) -> Report {
        let keys = self.draining.keys();
        let traffic = self.client.traffic();
        if let Err(error) = self.read_back(&keys) {
            return Report::failed(ReconcileError::Read(error));
        }
        let mut report = self.pass(Reason::Drain, Scope::Services(&keys));
        report.traffic = self.client.traffic().since(traffic);
        report
    }

    /// Whether something drains (and [`Reconciler::drain`] is due).
    pub fn is_draining(&self) -> bool {
        !self.draining.is_empty()
    }

    /// A pass with a newly computed desired table (whole for `Everything`,
    /// else the services of `scope`).
    fn pass_with(&mut self, reason: Reason, computed: Desired, scope: Scope<'_>) -> Report {
        match scope {
            Scope::Everything => {
                self.desired = computed.table;
                self.quorum = computed.quorum;
            }
            Scope::Services(keys) => {
                for (key, entry) in computed.table.services {
                    if keys.contains(&key) {
                        self.desired.insert(entry);
                    }
                }
                self.quorum.extend(computed.quorum);
            }
        }
        let notifications = self.quorum_notifications(computed.quorum_changes);
        let mut report = self.pass(reason, scope);
        report.notifications = notifications;
        report
    }

    /// Plans `scope` against what the kernel holds, applies, verifies; once
    /// more for what the kernel refused because it was not as known.
    fn pass(&mut self, reason: Reason, scope: Scope<'_>) -> Report {
        let started = Instant::now();
        let traffic = self.client.traffic();
        let first = self.apply_plan(reason, scope);
        self.finish_pass(first, started, traffic)
    }

    /// After a pass's first plan: once more for what the kernel refused
    /// because it was not as known; the pass's report.
    fn finish_pass(&mut self, first: PlanOutcome, started: Instant, traffic: Traffic) -> Report {
        let mut operations = first.operations;
        let mut error = first.error;
        if error.is_none() && !first.refused.is_empty() {
            let again = self.apply_plan(Reason::Refused, Scope::Services(&first.refused));
            operations += again.operations;
            error = again.error;
        }
        Report {
            operations,
            traffic: self.client.traffic().since(traffic),
            took: started.elapsed(),
            notifications: Vec::new(),
            error,
        }
    }

    /// One plan applied: what the kernel acknowledged is kept in
    /// [`Reconciler::applied`], what it touched read back.
    fn apply_plan(&mut self, reason: Reason, scope: Scope<'_>) -> PlanOutcome {
        let planning = Instant::now();
        let drain = self.draining.table(&self.applied, &self.desired);
        let operations = plan_within(&self.applied, &self.desired, &drain, &self.ownership, scope);
        tracing::debug!(
            "{reason}: planned in {:.1} ms",
            planning.elapsed().as_secs_f64() * 1000.0
        );
        // What pulse owns from now on, beyond the desired services: what
        // drains, what it meant to delete but could not (below), and for a
        // pass over some services, what it owned before.
        let mut owned: HashSet<ServiceKey> = drain.keys();
        if let (Scope::Services(_), Ownership::Matching(before)) = (scope, &self.ownership) {
            owned.extend(before.iter().copied());
        }
        if operations.is_empty() {
            self.ownership = Ownership::Matching(owned);
            return PlanOutcome::default();
        }
        let previously_failing = self.begin_pass(reason, scope, &operations);
        load_modules(&operations, &mut self.modules_asked_for);
        let (failures, interrupted) = apply_valid(&mut self.client, &operations, None);
        self.settle(
            reason,
            &operations,
            failures,
            interrupted,
            &previously_failing,
            owned,
        )
    }

    /// Before a batch is applied: what failed before is taken aside (those
    /// of services `scope` does not plan still fail), the batch is logged,
    /// and the services it touches are numbered with this pass. Returns
    /// what failed before.
    fn begin_pass(
        &mut self,
        reason: Reason,
        scope: Scope<'_>,
        operations: &[Operation],
    ) -> HashMap<String, Option<ServiceKey>> {
        let previously_failing = std::mem::take(&mut self.failing);
        if let Scope::Services(keys) = scope {
            self.failing.extend(
                previously_failing
                    .iter()
                    .filter(|(_, key)| !key.is_some_and(|key| keys.contains(&key)))
                    .map(|(text, key)| (text.clone(), *key)),
            );
        }
        log_operations(reason, operations, &previously_failing);
        // Numbered now, counted as finished once applied and read back (in
        // `read_back`): an audit that begins meanwhile knows its reading of
        // these services may be older than the pass.
        let pass = self.passes.load(Ordering::Acquire) + 1;
        for key in operations.iter().filter_map(service_of) {
            self.touched.insert(key, pass);
        }
        previously_failing
    }

    /// After a batch: what the kernel acknowledged is kept in
    /// [`Reconciler::applied`], what it refused is reported (or, refused
    /// for the table's state, planned again), what it touched is read back
    /// (or verified by an audit at once, for a large batch). `owned`: what
    /// pulse owns beyond the desired services.
    fn settle(
        &mut self,
        reason: Reason,
        operations: &[Operation],
        failures: Vec<(usize, ipvs::Error)>,
        interrupted: Option<(usize, ipvs::Error)>,
        previously_failing: &HashMap<String, Option<ServiceKey>>,
        mut owned: HashSet<ServiceKey>,
    ) -> PlanOutcome {
        let touched: HashSet<ServiceKey> = operations.iter().filter_map(service_of).collect();
        let refused_indexes: HashSet<usize> = failures.iter().map(|(index, _)| *index).collect();
        let answered = interrupted
            .as_ref()
            .map_or(operations.len(), |(index, _)| *index);
        for (index, operation) in operations[..answered].iter().enumerate() {
            if !refused_indexes.contains(&index) {
                acknowledge(&mut self.applied, operation);
            }
        }
        let mut refused = HashSet::new();
        let mut reported = Vec::new();
        for (index, failure) in failures {
            let operation = &operations[index];
            if refused_for_its_state(operation, &failure) {
                tracing::debug!("{reason}: {failure}: the kernel's table is not as known");
                refused.extend(service_of(operation));
                continue;
            }
            let text = operation.to_string();
            // The failure names the operation.
            if previously_failing.contains_key(&text) {
                tracing::debug!("{reason}: refused again: {failure}");
            } else {
                tracing::error!("{reason}: refused: {failure}");
            }
            self.failing.insert(text, service_of(operation));
            if let Operation::DeleteService(key) = operation {
                owned.insert(*key);
            }
            reported.push((index, failure));
        }
        let mut read = refused.clone();
        if let Some((index, failure)) = &interrupted {
            tracing::error!(
                "{reason}: the exchange with the kernel failed at {} ({failure}); what it \
                 touched from there on is read again",
                operations[*index]
            );
            for operation in &operations[*index..] {
                if let Operation::DeleteService(key) = operation {
                    owned.insert(*key);
                }
                read.extend(service_of(operation));
            }
        }
        self.ownership = Ownership::Matching(owned);
        if touched.len() <= VERIFY_ONE_BY_ONE {
            read.extend(touched);
        } else {
            // Cheaper read whole, on the audit's socket.
            self.audit_now.notify_one();
        }
        let error = match self.read_back(&read) {
            Err(error) => Some(ReconcileError::Read(error)),
            Ok(changed) => {
                // Not as the kernel acknowledged: changed by someone else
                // between the batch and the reading.
                refused.extend(changed);
                if reported.is_empty() && interrupted.is_none() {
                    None
                } else {
                    Some(ReconcileError::Apply(BatchError {
                        total: operations.len(),
                        failures: reported,
                        interrupted,
                    }))
                }
            }
        };
        PlanOutcome {
            operations: operations.len(),
            refused: if reason == Reason::Refused {
                HashSet::new()
            } else {
                refused
            },
            error,
        }
    }

    /// Reads `keys` back from the kernel into what is known of it; the
    /// services it found otherwise than known (someone else changed them
    /// meanwhile), to plan again.
    fn read_back(
        &mut self,
        keys: &HashSet<ServiceKey>,
    ) -> Result<HashSet<ServiceKey>, ipvs::Error> {
        // Newer than what an audit under way read of them; finished (with
        // the pass that applied changes, if any) once they are read.
        let pass = self.passes.load(Ordering::Acquire) + 1;
        let mut changed = HashSet::new();
        let outcome = self.read_each(keys, pass, &mut changed);
        self.passes.store(pass, Ordering::Release);
        outcome.map(|()| changed)
    }

    fn read_each(
        &mut self,
        keys: &HashSet<ServiceKey>,
        pass: u64,
        changed: &mut HashSet<ServiceKey>,
    ) -> Result<(), ipvs::Error> {
        for key in keys {
            self.touched.insert(*key, pass);
            let read = match self.client.service(key) {
                Ok(service) => {
                    let destinations = self.client.destinations(key)?;
                    Some(audit::kept(service, destinations))
                }
                Err(error) if error.errno() == Some(ipvs::Errno(libc::ESRCH)) => None,
                Err(error) => return Err(error),
            };
            let as_known = match (self.applied.service(key), &read) {
                (Some(known), Some(read)) => same_in_the_kernel(known, read),
                (None, None) => true,
                _ => false,
            };
            if !as_known {
                changed.insert(*key);
            }
            match read {
                Some(read) => self.applied.insert(read),
                None => {
                    self.applied.services.swap_remove(key);
                }
            }
        }
        Ok(())
    }

    /// The quorum scripts keepalived would run for `changes`, logged.
    fn quorum_notifications(
        &self,
        changes: Vec<super::desired::QuorumChange>,
    ) -> Vec<Notification> {
        let many = changes.len() > LOGGED_ONE_BY_ONE;
        if many {
            let up = changes.iter().filter(|change| change.up).count();
            tracing::info!(
                "quorum: {up} virtual servers up, {} down (each at debug level)",
                changes.len() - up
            );
        }
        changes
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
                // Formatted only if logged: a start sends one per virtual
                // server, each at debug level.
                if !many || tracing::enabled!(tracing::Level::DEBUG) {
                    let what = match (change.up, change.initial) {
                        (true, true) => "up at start",
                        (true, false) => "gained",
                        (false, true) => "down at start",
                        (false, false) => "lost",
                    };
                    let comparison = if change.up { ">=" } else { "<" };
                    let line = format!(
                        "{}: quorum {what} ({} {comparison} {})",
                        change.virtual_server, change.weight_sum, change.threshold
                    );
                    if many {
                        tracing::debug!("{line}");
                    } else if change.up {
                        tracing::info!("{line}");
                    } else {
                        tracing::warn!("{line}");
                    }
                }
                // ipwrapper.c `do_vs_notifies`: the mail beside the script.
                if let (Some(alerts), Some(virtual_server)) =
                    (&self.alerts, self.virtual_server(&change.virtual_server))
                {
                    alerts.quorum(virtual_server, &change);
                }
                Notification::Quorum {
                    virtual_server: change.virtual_server,
                    up: change.up,
                    script,
                }
            })
            .collect()
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
            // The services only: one dump, whatever the destinations.
            let services = self.client.services().map_err(ReconcileError::Read)?;
            services
                .iter()
                .map(|service| service.key)
                .filter(|key| self.ownership.owns(key, &self.desired))
                .map(Operation::DeleteService)
                .collect()
        };
        log_operations(Reason::Stop, &operations, &HashMap::new());
        self.client
            .apply(&operations)
            .map_err(ReconcileError::Apply)?;
        Ok(stop_notifications(&self.configuration, &self.health, flush))
    }
}

/// What a reload computed again: the services of the virtual servers
/// whose blocks changed (the layout is kept), or the whole table with the
/// new configuration's layout.
enum Recomputed {
    Services(HashSet<ServiceKey>),
    Whole(Layout),
}

/// What [`Reconciler::apply_plan`] did.
#[derive(Debug, Default)]
struct PlanOutcome {
    operations: usize,
    /// Services the kernel holds otherwise than pulse knew (an operation
    /// refused for their state, or a reading that differs from what was
    /// acknowledged), read back since: to plan again.
    refused: HashSet<ServiceKey>,
    error: Option<ReconcileError>,
}

impl Report {
    /// What the kernel made of the pass's operations: how many it applied
    /// and refused, and whether the exchange itself failed (the table
    /// unread, a batch's answers lost). Past an interruption nothing is
    /// known: those operations are counted neither way.
    pub fn kernel_outcome(&self) -> (usize, usize, bool) {
        match &self.error {
            Some(ReconcileError::Apply(error)) => {
                let known = error
                    .interrupted
                    .as_ref()
                    .map_or(self.operations, |(index, _)| *index);
                let refused = error
                    .failures
                    .iter()
                    .filter(|(index, _)| *index < known)
                    .count();
                (
                    known.saturating_sub(refused),
                    refused,
                    error.interrupted.is_some(),
                )
            }
            Some(ReconcileError::Read(_)) => (self.operations, 0, true),
            None => (self.operations, 0, false),
        }
    }

    fn failed(error: ReconcileError) -> Report {
        Report {
            error: Some(error),
            ..Report::default()
        }
    }
}

/// The service an operation is about, if any.
fn service_of(operation: &Operation) -> Option<ServiceKey> {
    match operation {
        Operation::CreateService(service) | Operation::UpdateService(service) => Some(service.key),
        Operation::DeleteService(key)
        | Operation::CreateDestination(key, _)
        | Operation::UpdateDestination(key, _)
        | Operation::DeleteDestination(key, _)
        | Operation::ZeroService(key) => Some(*key),
        _ => None,
    }
}

/// Whether the kernel refused `operation` because its object is not as
/// pulse knew it: it exists already (EEXIST on a creation), or it, or its
/// service, is gone (ESRCH for a service, ENOENT for a destination).
/// Someone else changed the table, or a read missed a service: the kernel's
/// service dump resumes each datagram by position in a table every
/// namespace shares, so services of other namespaces coming and going
/// meanwhile can make it skip one.
fn refused_for_its_state(operation: &Operation, failure: &ipvs::Error) -> bool {
    let Some(ipvs::Errno(errno)) = failure.errno() else {
        return false;
    };
    match operation {
        Operation::CreateService(_) => errno == libc::EEXIST,
        Operation::CreateDestination(..) => errno == libc::EEXIST || errno == libc::ESRCH,
        Operation::UpdateService(_) | Operation::DeleteService(_) => errno == libc::ESRCH,
        Operation::UpdateDestination(..) | Operation::DeleteDestination(..) => {
            errno == libc::ESRCH || errno == libc::ENOENT
        }
        _ => false,
    }
}

/// Whether a reading of a service shows what was known of it, in what a
/// plan compares (not the counters, nor the HASHED flag the kernel adds).
fn same_in_the_kernel(known: &TableService, read: &TableService) -> bool {
    if service_differs(&read.service, &known.service)
        || service_differs(&known.service, &read.service)
        || known.destinations.len() != read.destinations.len()
    {
        return false;
    }
    let known_destinations = ByAddress::of(&known.destinations);
    read.destinations.iter().all(|destination| {
        known_destinations
            .get(destination.socket_address())
            .is_some_and(|known| !destination_differs(known, destination))
    })
}

/// What the kernel holds after it acknowledged `operation`.
fn acknowledge(table: &mut Table, operation: &Operation) {
    fn destinations<'a>(
        table: &'a mut Table,
        key: &ServiceKey,
    ) -> Option<&'a mut Vec<ipvs::Destination>> {
        table
            .services
            .get_mut(key)
            .map(|entry| &mut entry.destinations)
    }
    match operation {
        Operation::CreateService(service) => table.insert(TableService {
            service: service.clone(),
            destinations: Vec::new(),
        }),
        Operation::UpdateService(service) => {
            if let Some(entry) = table.services.get_mut(&service.key) {
                entry.service = service.clone();
            }
        }
        Operation::DeleteService(key) => {
            table.services.swap_remove(key);
        }
        Operation::CreateDestination(key, destination) => {
            if let Some(destinations) = destinations(table, key) {
                destinations.push(destination.clone());
            }
        }
        Operation::UpdateDestination(key, destination) => {
            if let Some(known) = destinations(table, key).and_then(|destinations| {
                destinations
                    .iter_mut()
                    .find(|known| known.socket_address() == destination.socket_address())
            }) {
                *known = ipvs::Destination {
                    counters: known.counters,
                    ..destination.clone()
                };
            }
        }
        Operation::DeleteDestination(key, address) => {
            if let Some(destinations) = destinations(table, key) {
                destinations.retain(|known| known.socket_address() != *address);
            }
        }
        Operation::SetTimeouts(timeouts) => {
            let set = |known: &mut u32, sent: u32| {
                if sent != 0 {
                    *known = sent;
                }
            };
            set(&mut table.timeouts.tcp, timeouts.tcp);
            set(&mut table.timeouts.tcp_fin, timeouts.tcp_fin);
            set(&mut table.timeouts.udp, timeouts.udp);
        }
        Operation::Flush => table.services.clear(),
        _ => {}
    }
}

/// Logs a pass's operations: one by one at info level (warnings for an
/// audit's repairs, which undo someone else's change), or, for a large
/// pass, a count of each kind at info and each at debug level. An operation
/// that failed last time is being retried: debug level.
fn log_operations(
    reason: Reason,
    operations: &[Operation],
    previously_failing: &HashMap<String, Option<ServiceKey>>,
) {
    let many = operations.len() > LOGGED_ONE_BY_ONE;
    if many {
        let mut kinds: Vec<(&'static str, usize)> = Vec::new();
        for operation in operations {
            let kind = kind_of(operation);
            match kinds.iter_mut().find(|(known, _)| *known == kind) {
                Some((_, count)) => *count += 1,
                None => kinds.push((kind, 1)),
            }
        }
        let counts: Vec<String> = kinds
            .iter()
            .map(|(kind, count)| format!("{count} {kind}"))
            .collect();
        let summary = format!(
            "{reason}: {} IPVS changes: {} (each at debug level)",
            operations.len(),
            counts.join(", ")
        );
        match reason {
            Reason::DriftCheck => tracing::warn!("repairing hand edits: {summary}"),
            _ => tracing::info!("{summary}"),
        }
        // Each one is at debug level then: not even formatted when that is
        // off (formatting 11,000 operations cost the start a tenth of a
        // second in the lab).
        if !tracing::enabled!(tracing::Level::DEBUG) {
            return;
        }
    }
    for operation in operations {
        let text = operation.to_string();
        if previously_failing.contains_key(&text) {
            tracing::debug!("{reason}: retrying {text}");
        } else if many {
            tracing::debug!("{reason}: {text}");
        } else if reason == Reason::DriftCheck {
            tracing::warn!("repairing a hand edit: {text}");
        } else {
            tracing::info!("{reason}: {text}");
        }
    }
}

/// How [`log_operations`] counts an operation.
fn kind_of(operation: &Operation) -> &'static str {
    match operation {
        Operation::CreateService(_) => "services created",
        Operation::UpdateService(_) => "services edited",
        Operation::DeleteService(_) => "services deleted",
        Operation::CreateDestination(..) => "destinations created",
        Operation::UpdateDestination(..) => "destinations edited",
        Operation::DeleteDestination(..) => "destinations deleted",
        _ => "other changes",
    }
}

/// The running configuration, as the daemon shares it: each reload is a
/// new value with the next generation.
#[derive(Debug, Clone)]
pub struct Running {
    pub generation: u64,
    pub configuration: Arc<config::Config>,
}

/// How the pass of a generation went, for whoever waits on it: the number
/// of operations applied, or the error, as text.
pub type PassOutcome = Result<usize, String>;

/// The last generation of the configuration whose pass is over, and how it
/// went (`None`: no pass yet).
#[derive(Debug, Clone, Default)]
pub struct Applied {
    pub generation: u64,
    pub outcome: Option<PassOutcome>,
}

/// The channels the loop listens and talks on.
pub struct Channels {
    /// nanny's verdicts (`nanny::scheduler::Handle::take_events`), read
    /// once the start pass is applied (nanny begins then).
    pub states: mpsc::Receiver<StateChange>,
    /// The running configuration: its value when the loop starts is the
    /// reconciler's, each new one a reload.
    pub configurations: watch::Receiver<Running>,
    /// Told each generation's pass (systemd's READY after start and after
    /// each reload).
    pub applied: watch::Sender<Applied>,
    /// Fires once to stop, saying what to do with the table.
    pub stop: oneshot::Receiver<StopMode>,
    /// Scripts to run.
    pub notifications: mpsc::Sender<Notification>,
    /// The notify FIFOs' lines (the global FIFO's and
    /// `lvs_notify_fifo`'s), one per notification, script or not.
    pub fifo: crate::notify_fifo::Lines,
    /// Where the loop publishes the real servers' health and what its
    /// passes did.
    pub report: watch::Sender<LvsReport>,
}

/// Runs `reconciler` and its audit until told to stop (or until both the
/// verdicts and the configurations end); returns it.
pub async fn run(mut reconciler: Reconciler, mut channels: Channels) -> Reconciler {
    let mut generation = channels.configurations.borrow_and_update().generation;
    let (returned, report) = in_blocking_pool(reconciler, Reconciler::start).await;
    reconciler = returned;
    // The tap, made once the start pass is applied (so as not to share the
    // processors with the start's batch) and there by the time the start
    // is told done.
    let opening = reconciler.client.family_id().map(|family| {
        let namespace = reconciler.client.namespace();
        tokio::spawn(async move {
            let namespace = namespace.map_err(fulcrum_overlay::io_failed(
                "cannot reach the IPVS namespace",
            ))?;
            tap::Tap::open(namespace, family).await
        })
    });
    // Told of other processes' changes, where the kernel has nlmon.
    let (edits_sender, mut edits) = mpsc::channel(16);
    let tap = match opening {
        Some(opening) => match opening.await {
            Ok(Ok(tap)) => Some(tokio::spawn(tap.run(edits_sender))),
            Ok(Err(error)) => {
                tracing::info!(
                    "not told of other processes' IPVS changes ({error}): the audit finds them"
                );
                None
            }
            Err(error) => {
                tracing::error!("the netlink tap's start failed: {error}");
                None
            }
        },
        None => None,
    };
    told(&channels, generation, "start", report);

    // The audit, on a socket of its own.
    let (snapshots_sender, mut snapshots) = mpsc::channel(1);
    let audit = match reconciler.client.another() {
        Ok(client) => Some(tokio::spawn(audit::run(
            client,
            reconciler.audit_scope.subscribe(),
            reconciler.passes.clone(),
            reconciler.audit_now.clone(),
            snapshots_sender,
        ))),
        Err(error) => {
            tracing::error!("no audit of the IPVS table: cannot open its socket: {error}");
            None
        }
    };
    let mut drain_timer = tokio::time::interval(DRAIN_CHECK);
    drain_timer.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut states_open = true;
    let mut configurations_open = true;
    let stop = loop {
        if !states_open && !configurations_open {
            // The daemon sends its stop mode, then drops both channels:
            // `select!` may see the channels close before it polls the stop
            // (it picks among ready branches at random), and the mode must
            // not be lost then (SIGTERM left the table in place in one lab
            // run). Without a mode, the daemon is gone: keep the table.
            break channels.stop.try_recv().unwrap_or(StopMode::Keep);
        }
        let draining = reconciler.is_draining();
        tokio::select! {
            change = channels.states.recv(), if states_open => match change {
                Some(change) => {
                    let verdict = Instant::now();
                    let mut names: HashSet<VirtualServerKey> = HashSet::new();
                    let now = SystemTime::now();
                    let record = |reconciler: &mut Reconciler, change: &StateChange| {
                        let notifications = reconciler.record(change);
                        let changed = |virtual_server: &VirtualServerKey, address: SocketAddr| {
                            notifications.iter().any(|notification| {
                                matches!(
                                    notification,
                                    Notification::RealServer { virtual_server: notified, real_server, .. }
                                        if notified == virtual_server && *real_server == address
                                )
                            })
                        };
                        channels
                            .report
                            .send_modify(|report| report.record(change, changed, now));
                        notify(
                            &channels.notifications,
                            &channels.fifo,
                            &channels.configurations,
                            notifications,
                        );
                    };
                    record(&mut reconciler, &change);
                    names.extend(change.virtual_servers);
                    // One pass for every verdict already queued: nanny's
                    // first reports come in a burst, one per real server.
                    while let Ok(change) = channels.states.try_recv() {
                        record(&mut reconciler, &change);
                        names.extend(change.virtual_servers);
                    }
                    let (returned, report) = in_blocking_pool(reconciler, move |reconciler| {
                        reconciler.health_changed(&names)
                    })
                    .await;
                    reconciler = returned;
                    if report.operations > 0 {
                        // From the verdict's arrival to the kernel's
                        // acknowledgement and the read-back.
                        tracing::info!(
                            "health change: applied in {:.1} ms after the verdict ({} \
                             operations, {})",
                            verdict.elapsed().as_secs_f64() * 1000.0,
                            report.operations,
                            report.traffic
                        );
                    }
                    let _ = finish(&channels, Reason::Health, report);
                }
                None => states_open = false,
            },
            changed = channels.configurations.changed(), if configurations_open => match changed {
                Ok(()) => {
                    let running = channels.configurations.borrow_and_update().clone();
                    generation = running.generation;
                    let (returned, report) = in_blocking_pool(reconciler, move |reconciler| {
                        reconciler.reload(running.configuration)
                    })
                    .await;
                    reconciler = returned;
                    // What the reload removed has no health to show.
                    channels.report.send_modify(|published| {
                        published.retain(|virtual_server, address| {
                            reconciler.configures(virtual_server, address)
                        })
                    });
                    told(&channels, generation, "reload", report);
                }
                Err(_) => configurations_open = false,
            },
            Some(changed) = edits.recv() => {
                let (returned, report) =
                    in_blocking_pool(reconciler, move |reconciler| reconciler.told(changed))
                        .await;
                reconciler = returned;
                let _ = finish(&channels, Reason::Edited, report);
            }
            Some(snapshot) = snapshots.recv() => {
                let (returned, report) =
                    in_blocking_pool(reconciler, move |reconciler| reconciler.audited(snapshot))
                        .await;
                reconciler = returned;
                let _ = finish(&channels, Reason::DriftCheck, report);
            }
            _ = drain_timer.tick(), if draining => {
                let (returned, report) = in_blocking_pool(reconciler, Reconciler::drain).await;
                reconciler = returned;
                let _ = finish(&channels, Reason::Drain, report);
            }
            mode = &mut channels.stop => break mode.unwrap_or(StopMode::Keep),
        }
    };
    drop(snapshots);
    drop(edits);
    if let Some(audit) = audit {
        let _ = audit.await;
    }
    if let Some(tap) = tap {
        let _ = tap.await;
    }
    if stop == StopMode::Clear {
        let (returned, outcome) = in_blocking_pool(reconciler, Reconciler::clear).await;
        reconciler = returned;
        match outcome {
            Ok(notifications) => notify(
                &channels.notifications,
                &channels.fifo,
                &channels.configurations,
                notifications,
            ),
            Err(error) => tracing::error!("stop: {error}"),
        }
    }
    reconciler
}

/// Sends a pass's scripts on and logs its error; the outcome for whoever
/// waits on it.
fn finish(channels: &Channels, reason: Reason, report: Report) -> PassOutcome {
    let (applied, refused, netlink_error) = report.kernel_outcome();
    channels
        .report
        .send_modify(|published| published.count(reason, applied, refused, netlink_error));
    notify(
        &channels.notifications,
        &channels.fifo,
        &channels.configurations,
        report.notifications,
    );
    match report.error {
        None => Ok(report.operations),
        Some(error) => {
            match &error {
                // Each refused operation is logged by the pass.
                ReconcileError::Apply(_) => tracing::debug!("{reason}: {error}"),
                ReconcileError::Read(_) => tracing::error!("{reason}: {error}"),
            }
            Err(error.to_string())
        }
    }
}

/// The pass of a configuration's generation (`what`: start or reload):
/// logged with its cost, and told.
fn told(channels: &Channels, generation: u64, what: &str, report: Report) {
    if report.operations > 0 {
        tracing::info!(
            "{what}: {} IPVS changes applied and verified in {:.1} ms ({})",
            report.operations,
            report.took.as_secs_f64() * 1000.0,
            report.traffic
        );
    } else if report.error.is_none() {
        tracing::info!(
            "{what}: the IPVS table was already as configured ({})",
            report.traffic
        );
    }
    let reason = if what == "start" {
        Reason::Start
    } else {
        Reason::Reload
    };
    let outcome = finish(channels, reason, report);
    channels.applied.send_replace(Applied {
        generation,
        outcome: Some(outcome),
    });
}

/// Hands notifications on without waiting: a slow script runner must not
/// hold up the table, so a full channel drops (and logs) a notification.
/// Only those with a script go: the change itself is logged where it is
/// made, and a start without quorum scripts would send one per virtual
/// server (10,000 filled the channel in the lab). Each also makes its
/// line in the notify FIFOs, as keepalived writes one after the script
/// (ipwrapper.c `do_rs_notifies`, `do_vs_notifies`).
fn notify(
    sender: &mpsc::Sender<Notification>,
    fifo: &crate::notify_fifo::Lines,
    configurations: &watch::Receiver<Running>,
    notifications: Vec<Notification>,
) {
    if fifo.is_open() {
        let running = configurations.borrow();
        for notification in &notifications {
            fifo.send(fifo_line(&running.configuration, notification));
        }
    }
    for notification in notifications
        .into_iter()
        .filter(|notification| notification.script().is_some())
    {
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

/// A notification's line in the notify FIFOs, with the virtual server's
/// protocol as keepalived holds it.
fn fifo_line(configuration: &config::Config, notification: &Notification) -> String {
    use crate::notify_fifo::lines;
    match notification {
        Notification::RealServer {
            virtual_server,
            real_server,
            up,
            ..
        } => lines::real_server(
            *real_server,
            virtual_server,
            lines::service_type(configuration, virtual_server),
            *up,
        ),
        Notification::Quorum {
            virtual_server, up, ..
        } => lines::virtual_server(
            virtual_server,
            lines::service_type(configuration, virtual_server),
            *up,
        ),
    }
}

/// Runs `work` on the reconciler in tokio's blocking pool (netlink calls
/// block) and hands it back.
async fn in_blocking_pool<T: Send + 'static>(
    mut reconciler: Reconciler,
    work: impl FnOnce(&mut Reconciler) -> T + Send + 'static,
) -> (Reconciler, T) {
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
        let name = VirtualServerKey::from_config(virtual_server);
        if !flush {
            let reported = health.of(&name);
            for real_server in &virtual_server.real_servers {
                if super::desired::state(real_server, reported).0 {
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

/// Applies `operations` (from their `encoded` batch, if made
/// beforehand): the kernel's refusals and where the exchange failed, by
/// index. The library sends nothing of a batch with an operation it cannot
/// encode (a weight above the kernel's limit): those are refused here, and
/// the others sent, so that every operation not refused is one the kernel
/// took, as [`Reconciler::settle`] counts them.
#[allow(clippy::type_complexity)]
fn apply_valid(
    client: &mut Client,
    operations: &[Operation],
    encoded: Option<&EncodedBatch>,
) -> (Vec<(usize, ipvs::Error)>, Option<(usize, ipvs::Error)>) {
    let applied = match encoded {
        Some(batch) => client.apply_encoded(operations, batch),
        None => client.apply(operations),
    };
    let error = match applied {
        Ok(()) => return (Vec::new(), None),
        Err(error) => error,
    };
    let (invalid, refused): (Vec<_>, Vec<_>) = error
        .failures
        .into_iter()
        .partition(|(_, failure)| matches!(failure, ipvs::Error::Invalid { .. }));
    if invalid.is_empty() {
        return (refused, error.interrupted);
    }
    let refused_whole: HashSet<usize> = invalid.iter().map(|(index, _)| *index).collect();
    let (indexes, valid): (Vec<usize>, Vec<Operation>) = operations
        .iter()
        .enumerate()
        .filter(|(index, _)| !refused_whole.contains(index))
        .map(|(index, operation)| (index, operation.clone()))
        .unzip();
    let (mut failures, interrupted) = match client.apply(&valid) {
        Ok(()) => (Vec::new(), None),
        Err(error) => (
            error
                .failures
                .into_iter()
                .map(|(index, failure)| (indexes[index], failure))
                .collect(),
            error
                .interrupted
                .map(|(index, failure)| (indexes[index], failure)),
        ),
    };
    failures.extend(invalid);
    failures.sort_by_key(|(index, _)| *index);
    (failures, interrupted)
}

/// How many planned pieces of the start may wait for the kernel: enough
/// that the kernel never waits for the planner, few enough that the
/// planner does not run far ahead.
const PIECES_AHEAD: usize = 4;

/// What [`send_pieces`] did: every operation received, in order, and the
/// kernel's answers numbered across them as for one batch.
struct PiecesSent {
    pieces: usize,
    operations: Vec<Operation>,
    failures: Vec<(usize, ipvs::Error)>,
    interrupted: Option<(usize, ipvs::Error)>,
}

/// Gives the kernel each piece of a plan as it comes, until the pieces
/// end. After an interrupted exchange the rest is kept unsent: its outcome
/// is as unknown as that of the rest of an interrupted batch.
fn send_pieces(
    client: &mut Client,
    modules_asked_for: &mut HashSet<String>,
    pieces: std::sync::mpsc::Receiver<(Vec<Operation>, Option<EncodedBatch>)>,
) -> PiecesSent {
    let mut sent = PiecesSent {
        pieces: 0,
        operations: Vec::new(),
        failures: Vec::new(),
        interrupted: None,
    };
    for (piece, encoded) in pieces {
        let offset = sent.operations.len();
        sent.pieces += 1;
        if sent.interrupted.is_none() {
            load_modules(&piece, modules_asked_for);
            let (failures, interrupted) = apply_valid(client, &piece, encoded.as_ref());
            sent.failures.extend(
                failures
                    .into_iter()
                    .map(|(index, failure)| (offset + index, failure)),
            );
            sent.interrupted = interrupted.map(|(index, failure)| (offset + index, failure));
        }
        sent.operations.extend(piece);
    }
    sent
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
    // The names first, each once (a start creates a thousand services with
    // one or two schedulers), then one look each: formatting and looking
    // up a name per service cost the start of 1,000 services a tenth of a
    // second in the lab.
    let mut names: Vec<(&str, &str)> = Vec::new();
    for operation in operations {
        let (Operation::CreateService(service) | Operation::UpdateService(service)) = operation
        else {
            continue;
        };
        let scheduler = Some(("ip_vs_", service.scheduler.as_str()));
        let engine = service
            .persistence_engine
            .as_deref()
            .map(|engine| ("ip_vs_pe_", engine));
        for name in [scheduler, engine].into_iter().flatten() {
            if !names.contains(&name) {
                names.push(name);
            }
        }
    }
    names
        .into_iter()
        .map(|(prefix, name)| format!("{prefix}{name}"))
        .filter(|module| {
            module
                .bytes()
                .all(|byte| byte.is_ascii_alphanumeric() || byte == b'_')
                && !loaded(module)
        })
        .collect()
}

#[cfg(test)]
mod tests;
