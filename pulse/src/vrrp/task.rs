//! The VRRP task: one [`Machine`] per `vrrp_instance` of the
//! [plan](super::plan), driven by one `select!` loop over the adverts
//! received, the machines' deadlines, the kernel's link and address events
//! ([`super::netlink_events`]), the tracked scripts, files and processes,
//! reloads and shutdown; what the machines decide is carried out by
//! [`super::effects`].
//!
//! Adverts are demultiplexed by interface, family and VRID, as keepalived
//! does; each receive socket has a reader task feeding the loop
//! ([`receivers`]), so the loop itself never waits on one socket. The
//! answers to link and address events are in [`links`], reloads in
//! [`reload`], the tracked scripts' and files' tasks in [`trackers`].

mod interfaces;
mod links;
mod receivers;
mod reload;
mod statics;
mod trackers;

use std::collections::{HashMap, HashSet, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Instant, SystemTime};

use fulcrum_config::model as config;
use tokio::sync::{mpsc, oneshot, watch};

use super::effects::{self, Effects};
use super::firewall::TableSettings;
use super::garp::Pacer;
use super::io::{self, Datagram, ReceiveSocket};
use super::machine::{Action, Event, Received, State};
use super::netlink_events::{NetlinkEvent, NetlinkEvents};
use super::packet::{self, Family, Packet, Repr};
use super::plan::{self, Plan};
use super::report::data::{self as data_dump, InstanceMoment, PlanData};
use super::report::{
    self, Description, InstanceReport, ParameterMatch, ProcessReport, Report, ScriptReport,
    location,
};
use super::setup::{self, Instance, Resources, VrrpError};
use super::sources::SourceAddresses;
use super::statics::Statics;
use super::sync::{Decision, SyncGroup};
use super::track;
use super::vmac::{self, SavedBases};
use crate::notify_fifo::lines::VrrpEvent;
use crate::notify_fifo::{Lines, NotifyFifos};
use crate::smtp::{self, Mailer};
use crate::sync_daemon::Follower;
use receivers::Receivers;
use trackers::Trackers;

/// Received packets waiting for the loop.
const DATAGRAM_QUEUE: usize = 256;

/// What one event led to, carried out after it: events for other
/// instances (their sync group's orders) and the groups' transitions,
/// whose notify scripts run once every member has followed.
#[derive(Default)]
struct Followups {
    events: VecDeque<(usize, Event)>,
    group_transitions: Vec<(usize, State)>,
}

/// The VRRP part of pulse, ready to run.
pub struct Vrrp {
    plan: Arc<Plan>,
    /// One per instance of the plan, in its order.
    instances: Vec<Instance>,
    /// One per sync group of the plan, in its order.
    groups: Vec<SyncGroup>,
    /// Up (with carrier) or not, by interface index, for the instances'
    /// interfaces and tracked ones.
    links: HashMap<u32, bool>,
    /// The addresses adverts can go from, by interface index, for the
    /// instances' interfaces.
    sources: HashMap<u32, SourceAddresses>,
    /// The settings of the interfaces with macvlans before the first
    /// ([`crate::vrrp::vmac`]).
    /// `-V`: at the stop, the masters keep their addresses, routes and
    /// rules and send no priority 0 advert, and the macvlans stay.
    keep_state_at_stop: bool,
    /// Set once the stop began.
    stopping: bool,
    saved_bases: SavedBases,
    /// The tracked `vrrp_script`s: succeeding or not, `None` before their
    /// first result.
    scripts: HashMap<String, Option<bool>>,
    /// The tracked files' values.
    files: HashMap<String, i64>,
    /// The tracked processes' quorums.
    processes: HashMap<String, bool>,
    /// The tracked `bfd_instance`s: whether their session is up.
    bfds: HashMap<String, bool>,
    events: NetlinkEvents,
    /// For requests (dumps, interfaces read again), from `events`.
    handle: rtnetlink::Handle,
    /// Whether the kernel's events still come.
    events_open: bool,
    effects: Effects,
    /// The notify FIFOs, the global one and `vrrp_notify_fifo`, open
    /// from the start to the stop; `fifo` where their lines go.
    fifos: Option<NotifyFifos>,
    fifo: Lines,
    receivers: Receivers,
    trackers: Trackers,
    /// What the plan's instances' configuration says, for the reports:
    /// made with the plan.
    descriptions: Vec<Arc<Description>>,
    /// What keepalived.data says of the plan: made with it.
    plan_data: Arc<PlanData>,
    /// Where the task publishes its [`Report`].
    report: watch::Sender<Arc<Report>>,
    /// `vrrp_startup_delay`: when the delay after the task's start ends,
    /// for every machine started while it lasts (reloads keep it, as
    /// keepalived sets it at its start only).
    startup_delay_until: Option<Instant>,
    /// The interfaces' pace of gratuitous ARPs and neighbour
    /// advertisements, and the messages waiting for it.
    pacer: Pacer,
    /// The `static_*` blocks of the configuration in force, held from the
    /// start to the stop ([`statics`]).
    statics: Statics,
    /// The interfaces whose `promote_secondaries` pulse set, by index, to
    /// put back at the stop.
    promoted: HashSet<u32>,
    /// The SMTP alerts' sender, when the configuration has a server and
    /// addresses.
    mailer: Option<Mailer>,
}

impl Vrrp {
    /// Resolves the configuration's instances, reads their interfaces and
    /// opens their sockets. Must run inside the tokio runtime.
    /// Its [`Report`] goes to `report`, from the start to the stop (an
    /// empty one then).
    pub async fn prepare(
        configuration: Arc<config::Config>,
        report: watch::Sender<Arc<Report>>,
    ) -> Result<Vrrp, VrrpError> {
        let plan = Arc::new(Plan::from_config(configuration)?);
        log_warnings(&plan);
        // keepalived's VRRP process needs IPVS for the sync daemon only, and
        // cannot run without it then.
        let sync_daemon = match &plan.configuration.global.lvs_sync_daemon {
            Some(settings) => {
                let client = crate::ipvs_start::connect().map_err(VrrpError::Ipvs)?;
                let follower = Follower::start(client).map_err(VrrpError::SyncDaemon)?;
                Some((settings.clone(), follower))
            }
            None => None,
        };
        // Subscribed before the links and addresses are read, so that no
        // change between the reading and the loop is missed.
        let events = NetlinkEvents::open(&[
            rtnetlink::MulticastGroup::Link,
            rtnetlink::MulticastGroup::Ipv4Ifaddr,
            rtnetlink::MulticastGroup::Ipv6Ifaddr,
        ])
        .map_err(VrrpError::Netlink)?;
        let firewall_settings = table_settings(&plan.configuration.global.vrrp);
        let mut resources = Resources {
            dynamic_interfaces: plan.configuration.global.dynamic_interfaces,
            ..Resources::default()
        };
        let mut instances = Vec::new();
        for instance in &plan.instances {
            instances.push(setup::open_instance(events.handle(), instance, &mut resources).await?);
        }
        let mut receivers = Receivers::new();
        for (index, socket) in resources.opened.drain(..) {
            receivers.add(index, socket);
        }
        // Opened once the configuration is known good, as keepalived opens
        // them at the end of vrrp_complete_init.
        let global = &plan.configuration.global;
        let fifos = NotifyFifos::open(
            global,
            global.fifos.vrrp.as_ref(),
            global.fifo_scripts.vrrp.as_ref(),
            "vrrp_",
        );
        let mut vrrp = Vrrp {
            fifo: fifos.lines(),
            fifos: Some(fifos),
            groups: plan
                .groups
                .iter()
                .map(|group| SyncGroup::new(&group.model.name, group.members.len()))
                .collect(),
            plan,
            instances,
            links: resources.links,
            sources: resources.sources,
            saved_bases: resources.saved_bases,
            keep_state_at_stop: false,
            stopping: false,
            scripts: HashMap::new(),
            files: HashMap::new(),
            processes: HashMap::new(),
            bfds: HashMap::new(),
            effects: Effects::new(events.handle().clone(), sync_daemon, firewall_settings),
            handle: events.handle().clone(),
            events,
            events_open: true,
            receivers,
            trackers: Trackers::new(),
            descriptions: Vec::new(),
            plan_data: Arc::default(),
            report,
            startup_delay_until: None,
            pacer: Pacer::default(),
            statics: Statics::default(),
            promoted: HashSet::new(),
            mailer: None,
        };
        vrrp.statics = statics::statics_of(&vrrp.plan.configuration);
        vrrp.pacer = Pacer::new(&vrrp.plan.configuration);
        for warning in vrrp.pacer.warnings() {
            tracing::warn!("{warning}");
        }
        vrrp.mailer = mailer(&vrrp.plan).await;
        vrrp.descriptions = descriptions(&vrrp.plan);
        vrrp.plan_data = Arc::new(PlanData::of(&vrrp.plan));
        vrrp.trackers
            .follow(&vrrp.plan, &mut vrrp.scripts, &mut vrrp.files);
        vrrp.trackers
            .follow_processes(&vrrp.plan, &mut vrrp.processes);
        vrrp.trackers.follow_bfds(&vrrp.plan, &mut vrrp.bfds);
        for position in 0..vrrp.instances.len() {
            vrrp.firewall_vmac(position).await;
        }
        Ok(vrrp)
    }

    /// `-V` (keepalived's `--dont-release-vrrp`): what the masters set
    /// stays when VRRP stops; the notify scripts still say STOP and the
    /// firewall's tables still go, as keepalived's (vrrp_daemon.c:
    /// `restore_vrrp_interfaces` and `shutdown_vrrp_instances` skipped,
    /// `notify_shutdown` and `firewall_fini` not).
    pub fn keep_state_at_stop(&mut self) {
        self.keep_state_at_stop = true;
    }

    /// How many instances run.
    pub fn len(&self) -> usize {
        self.instances.len()
    }

    pub fn is_empty(&self) -> bool {
        self.instances.is_empty()
    }

    /// Runs until `shutdown` fires (or its sender goes), then stops every
    /// instance: a master sends a priority 0 advert and removes its
    /// addresses. Each configuration from `reloads` replaces the running
    /// one (see [`Vrrp::reload`]).
    pub async fn run(
        mut self,
        mut shutdown: oneshot::Receiver<()>,
        mut reloads: mpsc::Receiver<Arc<config::Config>>,
    ) {
        if let Some(delay) = self.plan.configuration.global.vrrp.startup_delay {
            // keepalived's line (vrrp_daemon.c), its number as printf's %g.
            tracing::info!(
                "Delaying startup for {} seconds",
                data_dump::general(delay.as_secs_f64())
            );
            self.startup_delay_until = Some(Instant::now() + delay);
        }
        // keepalived's order: the instances' interfaces set up, the static
        // blocks set, then the instances started.
        self.promote_secondaries().await;
        self.set_statics().await;
        self.start_instances().await;
        // SIGUSR1: keepalived's data dump.
        let mut data_signal =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::user_defined1())
                .inspect_err(|error| tracing::warn!("cannot listen for SIGUSR1: {error}"))
                .ok();
        // SIGUSR2: keepalived's statistics file.
        let mut statistics_signal =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::user_defined2())
                .inspect_err(|error| tracing::warn!("cannot listen for SIGUSR2: {error}"))
                .ok();
        // SIGRTMIN+2, keepalived's SIGJSON: keepalived.json.
        let json_number = crate::signals::number("JSON").expect("keepalived has SIGJSON");
        let mut json_signal =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::from_raw(json_number))
                .inspect_err(|error| tracing::warn!("cannot listen for SIGRTMIN+2: {error}"))
                .ok();
        // SIGRTMAX-1, keepalived's STATS_CLEAR: the statistics written,
        // then every counter back to zero.
        let clear_number =
            crate::signals::number("STATS_CLEAR").expect("keepalived has STATS_CLEAR");
        let mut clear_signal =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::from_raw(clear_number))
                .inspect_err(|error| tracing::warn!("cannot listen for SIGRTMAX-1: {error}"))
                .ok();
        loop {
            self.publish();
            let next = self
                .instances
                .iter()
                .filter_map(|instance| instance.machine.poll_at())
                .chain(self.pacer.poll_at())
                .min();
            tokio::select! {
                _ = &mut shutdown => break,
                Some(()) = async { data_signal.as_mut().expect("guarded").recv().await },
                    if data_signal.is_some() => self.write_data().await,
                Some(()) = async { statistics_signal.as_mut().expect("guarded").recv().await },
                    if statistics_signal.is_some() => {
                        tracing::info!(
                            "Printing VRRP stats for process({}) on signal",
                            std::process::id()
                        );
                        self.write_statistics();
                    }
                Some(()) = async { clear_signal.as_mut().expect("guarded").recv().await },
                    if clear_signal.is_some() => self.clear_statistics(),
                Some(()) = async { json_signal.as_mut().expect("guarded").recv().await },
                    if json_signal.is_some() => self.write_json(),
                Some(configuration) = reloads.recv() => self.reload(configuration).await,
                event = self.events.next(), if self.events_open => match event {
                    Some(NetlinkEvent::Changed(message)) => self.route_event(message).await,
                    Some(NetlinkEvent::Lost) => self.catch_up().await,
                    None => {
                        tracing::error!("rtnetlink's events stopped");
                        self.events_open = false;
                    }
                },
                Some(change) = self.trackers.script_changes.recv() => {
                    if self.scripts.insert(change.name, Some(change.ok)) != Some(Some(change.ok)) {
                        self.track_all(Instant::now()).await;
                    }
                }
                Some(change) = self.trackers.process_changes.recv() => {
                    if self.processes.insert(change.name, change.have_quorum)
                        != Some(change.have_quorum)
                    {
                        self.track_all(Instant::now()).await;
                    }
                }
                Some(report) = self.trackers.bfd_reports.recv() => self.bfd_report(report).await,
                Some(change) = self.trackers.file_changes.recv() => {
                    if self.files.insert(change.name, change.value) != Some(change.value) {
                        self.track_all(Instant::now()).await;
                    }
                }
                received = self.receivers.datagrams.recv() => match received {
                    Some((index, datagram)) => self.dispatch(index, datagram).await,
                    None => break,
                },
                _ = sleep_until(next) => self.deadline().await,
            }
        }
        self.receivers.stop();
        self.trackers.stop();
        // keepalived's termination sends SIGTERM to every script first,
        // the FIFOs' among them, before the STOP lines.
        if let Some(fifos) = &self.fifos {
            fifos.terminate_scripts();
        }
        let now = Instant::now();
        self.stopping = true;
        for position in 0..self.instances.len() {
            self.stop_instance(position, now).await;
        }
        self.remove_statics().await;
        if !self.keep_state_at_stop {
            self.reset_promote_secondaries().await;
            for position in 0..self.instances.len() {
                self.remove_vmac(position).await;
            }
        }
        self.effects.stop().await;
        // Closed last, as keepalived's vrrp_terminate_phase2.
        self.fifo = Lines::default();
        if let Some(fifos) = self.fifos.take() {
            fifos.close().await;
        }
        self.report.send_replace(Arc::new(Report::default()));
    }

    /// Publishes the task's [`Report`] if anything in it moved since the
    /// last one. Called at each turn of the loop: after any event, the
    /// readers see what it did.
    fn publish(&self) {
        let report = Report {
            instances: self
                .instances
                .iter()
                .zip(&self.descriptions)
                .map(|(instance, description)| {
                    let machine = &instance.machine;
                    let state = machine.state();
                    InstanceReport {
                        description: description.clone(),
                        state,
                        wanted_state: if machine.wants_master() {
                            State::Master
                        } else {
                            state
                        },
                        effective_priority: machine.effective_priority(),
                        master_priority: machine.master().map_or(0, |(_, priority)| priority),
                        master_advert_interval: machine.master_advert_interval(),
                        last_transition: instance.last_transition,
                        addresses_set: instance.addresses_set,
                        statistics: machine.statistics().clone(),
                    }
                })
                .collect(),
            scripts: self
                .plan
                .scripts
                .iter()
                .map(|script| ScriptReport {
                    name: script.name.clone(),
                    succeeding: self.scripts.get(&script.name).copied().flatten(),
                })
                .collect(),
            processes: self.process_reports(),
        };
        self.report.send_if_modified(|published| {
            if **published == report {
                return false;
            }
            *published = Arc::new(report);
            true
        });
    }

    /// The tracked processes as keepalived.json's version 2 gives them:
    /// their definitions, with the monitor's counts.
    fn process_reports(&self) -> Vec<ProcessReport> {
        let states = self.trackers.process_states();
        self.plan
            .processes
            .iter()
            .map(|process| {
                let state = states.iter().find(|state| state.name == process.name);
                ProcessReport {
                    name: process.name.clone(),
                    parameters: process
                        .process
                        .as_deref()
                        .map(|words| words.iter().skip(1).cloned().collect())
                        .unwrap_or_default(),
                    parameter_match: match process.param_match {
                        None => ParameterMatch::None,
                        Some(config::ParamMatch::Exact) => ParameterMatch::Exact,
                        Some(config::ParamMatch::Partial) => ParameterMatch::Partial,
                        Some(config::ParamMatch::Initial) => ParameterMatch::Initial,
                    },
                    quorum: process.quorum,
                    quorum_max: process.quorum_max,
                    current_processes: state.map_or(0, |state| state.count),
                    have_quorum: state.is_some_and(|state| state.have_quorum),
                    weight: process.weight,
                    weight_reverse: process.weight_reverse,
                    terminate_delay: process.terminate_delay.unwrap_or_default(),
                    fork_delay: process.fork_delay.unwrap_or_default(),
                    fork_delay_timer_running: state.is_some_and(|state| state.fork_timer_running),
                    terminate_delay_timer_running: state
                        .is_some_and(|state| state.terminate_timer_running),
                    full_command: process.full_command,
                }
            })
            .collect()
    }

    /// A machine's deadline came. The adverts already queued come first:
    /// when pulse was not scheduled for a while (a loaded machine), the
    /// deadline and the master's adverts are ready together, and a backup
    /// must not declare a master down whose adverts are waiting, in the
    /// channel or still in a socket. Only so many, so that a flood cannot
    /// hold the deadlines off.
    async fn deadline(&mut self) {
        for _ in 0..DATAGRAM_QUEUE {
            match self.receivers.datagrams.try_recv() {
                Ok((index, datagram)) => self.dispatch(index, datagram).await,
                Err(_) => break,
            }
        }
        let sockets: Vec<(u32, Arc<ReceiveSocket>)> = self
            .receivers
            .sockets
            .iter()
            .map(|(index, socket, _)| (*index, socket.clone()))
            .collect();
        for (index, socket) in sockets {
            for _ in 0..DATAGRAM_QUEUE {
                match socket.try_receive() {
                    Ok(Some(datagram)) => self.dispatch(index, datagram).await,
                    Ok(None) => {}
                    Err(_) => break,
                }
            }
        }
        let now = Instant::now();
        for position in 0..self.instances.len() {
            if self.instances[position]
                .machine
                .poll_at()
                .is_some_and(|at| at <= now)
            {
                self.handle_event(position, now, Event::Timer).await;
            }
        }
        // The announcements the interfaces' pace held back.
        let instances = &self.instances;
        let due = self.pacer.due(now, |position| {
            instances.get(position).is_some_and(|instance| {
                instance.addresses_set && instance.machine.state() == State::Master
            })
        });
        for due in due {
            let instance = &self.instances[due.instance];
            if let Some((announcer, address)) = instance.announced.get(due.index) {
                effects::announce(
                    instance.machine.settings().name.as_str(),
                    announcer,
                    *address,
                );
            }
        }
    }

    /// Sends, or queues for its interface's pace ([`super::garp`]), one
    /// message for each of the instance's announced addresses at
    /// `indices`, in their order.
    fn announce(&mut self, position: usize, indices: &[usize]) {
        let now = Instant::now();
        let instance = &self.instances[position];
        let name = instance.machine.settings().name.as_str();
        for &index in indices {
            let Some((announcer, address)) = instance.announced.get(index) else {
                continue;
            };
            if self
                .pacer
                .send(now, position, index, *address, announcer.interface_name())
            {
                effects::announce(name, announcer, *address);
            }
        }
    }

    /// Writes every instance's counters to `keepalived.stats` in the
    /// temporary directory (an absolute `TMPDIR`, else /tmp) or where
    /// `stats_dump_file` says, as keepalived 2.2 does on SIGUSR2, with its
    /// log line.
    fn write_statistics(&self) {
        let report: String = self
            .report
            .borrow()
            .instances
            .iter()
            .map(|instance| {
                instance
                    .statistics
                    .keepalived_report(&instance.description.name)
            })
            .collect();
        write_dump(&self.dump_path(Dump::Statistics), &report);
    }

    /// keepalived's STATS_CLEAR: the statistics written as for SIGUSR2,
    /// then every instance's counters back to zero, with its log line.
    fn clear_statistics(&mut self) {
        tracing::info!(
            "Printing and clearing VRRP stats for process({}) on signal",
            std::process::id()
        );
        self.write_statistics();
        for instance in &mut self.instances {
            instance.machine.clear_statistics();
        }
    }

    /// Writes keepalived.data in the temporary directory or where
    /// `state_dump_file` says, as keepalived 2.2.7's VRRP process does on
    /// SIGUSR1, with its log line: the report
    /// as published (after this turn's events), what moves beside it, and
    /// the kernel's links as they are now.
    async fn write_data(&mut self) {
        tracing::info!(
            "Printing VRRP data for process({}) on signal",
            std::process::id()
        );
        self.publish();
        let now = (Instant::now(), SystemTime::now());
        let moments: Vec<InstanceMoment> = self
            .instances
            .iter()
            .map(|instance| {
                let machine = &instance.machine;
                let family = machine.settings().family;
                let receive = self
                    .receivers
                    .sockets
                    .iter()
                    .find(|(index, socket, _)| {
                        *index == instance.advert_interface().index && socket.family() == family
                    })
                    .map(|(_, socket, _)| socket.raw_fd());
                InstanceMoment {
                    master_address: machine.master().map(|(address, _)| address),
                    master_down_timer: machine.master_down_interval(),
                    read_timeout: machine.poll_at(),
                    source_address: instance.sender.as_ref().map(|sender| sender.source()),
                    extra_interfaces_at: machine.extra_interfaces_at(),
                    sockets: receive.zip(instance.sender.as_ref().map(|sender| sender.raw_fd())),
                    interface_index: instance.advert_interface().index,
                }
            })
            .collect();
        let ours = self
            .plan
            .instances
            .iter()
            .flat_map(|instance| {
                instance
                    .model
                    .virtual_addresses
                    .iter()
                    .chain(&instance.model.excluded_addresses)
                    .map(|address| address.address.address)
            })
            .collect();
        let links = match super::netlink_events::links_and_addresses(&self.handle).await {
            Ok((links, addresses)) => interfaces::links(&links, &addresses, &ours),
            Err(error) => {
                tracing::warn!("keepalived.data: cannot read the links: {error}");
                Vec::new()
            }
        };
        let report = self.report.borrow().clone();
        let garp_delays = self.pacer.report();
        let text = data_dump::keepalived_data(&data_dump::Dump {
            report: &report,
            plan: &self.plan_data,
            moments: &moments,
            links: &links,
            garp_delays: &garp_delays,
            now,
        });
        write_dump(&self.dump_path(Dump::State), &text);
    }

    /// Writes keepalived.json in the temporary directory or where
    /// `json_dump_file` says, in the configuration's `json_version`, as
    /// keepalived 2.2.7 does on SIGRTMIN+2 (its SIGJSON), with its log
    /// line.
    fn write_json(&self) {
        tracing::info!(
            "Printing VRRP as json for process({}) on signal",
            std::process::id()
        );
        // What moved since the loop's turn began (a tracked process's
        // count) is in the dump.
        self.publish();
        let version = report::JsonVersion::of(&self.plan.configuration.global);
        write_dump(
            &self.dump_path(Dump::Json),
            &report::keepalived_json(&self.report.borrow(), version),
        );
    }

    /// Where a dump goes under the configuration in force (a reload may
    /// move it, as keepalived's reload does).
    fn dump_path(&self, dump: Dump) -> PathBuf {
        let files = &self.plan.configuration.global.dump_files;
        let (configured, usual_name) = match dump {
            Dump::State => (&files.state, "keepalived.data"),
            Dump::Statistics => (&files.statistics, "keepalived.stats"),
            Dump::Json => (&files.json, "keepalived.json"),
        };
        location::dump_path(
            configured.as_deref(),
            usual_name,
            &location::temporary_directory(),
        )
    }

    /// A link already down or a tracking weight applies before the start,
    /// so that an instance starts in FAULT or with its priority; then
    /// track() starts the instances (those kept by a reload go on).
    async fn start_instances(&mut self) {
        let now = Instant::now();
        for position in 0..self.instances.len() {
            self.track_and_start(position, now, false).await;
        }
        self.track_all(now).await;
    }

    async fn stop_instance(&mut self, position: usize, now: Instant) {
        self.handle_event(position, now, Event::Stop).await;
        self.pacer.forget(position);
    }

    /// Puts the instance's macvlan, if it has one, into the firewall's
    /// vmac sets.
    pub(super) async fn firewall_vmac(&mut self, position: usize) {
        if let Some(vmac) = &self.instances[position].vmac {
            let disable_local_igmp = self.plan.configuration.global.vrrp.disable_local_igmp;
            self.effects
                .add_vmac(
                    self.plan.instances[position].name(),
                    vmac,
                    disable_local_igmp,
                )
                .await;
        }
    }

    /// Deletes the instance's macvlan, once it has stopped.
    pub(super) async fn remove_vmac(&mut self, position: usize) {
        if let Some(vmac) = self.instances[position].vmac.take() {
            self.effects.remove_vmac(&vmac).await;
            vmac::remove(&self.handle, &vmac, &mut self.saved_bases).await;
        }
    }

    async fn track_all(&mut self, now: Instant) {
        for position in 0..self.instances.len() {
            self.track(position, now).await;
        }
    }

    /// A tracked BFD session's state: a change (only Up counts as up, as
    /// keepalived's BFD process tells VRRP) is applied to every instance.
    async fn bfd_report(&mut self, report: nanny::driver::bfd::Report) {
        let name = report.spec.name.clone();
        // A report for a session of another definition than the plan's
        // (one a reload replaced) says nothing of the tracked one.
        if !self.plan.bfds.contains(&report.spec) {
            return;
        }
        let up = report.state == nanny::bfd::packet::State::Up;
        let was = self.bfds.insert(name.clone(), up).unwrap_or(false);
        if was == up {
            return;
        }
        for instance in &self.plan.instances {
            if instance
                .tracked
                .bfds
                .iter()
                .any(|tracked| tracked.name == name)
            {
                tracing::info!(
                    "VRRP_Instance({}) Tracked BFD instance {name} is {}",
                    instance.name(),
                    if up { "UP" } else { "DOWN" }
                );
            }
        }
        self.track_all(Instant::now()).await;
    }

    /// Applies the links', scripts', files' and processes' state to an
    /// instance: FAULT when its interface (unless `dont_track_primary`) is
    /// down, or a tracked interface, script or process of weight 0 is down,
    /// failing or without its quorum (with `reverse`: up, succeeding, with
    /// it); the weights of the others added to its priority. Starts the
    /// instance once no script of weight 0 awaits its first result.
    async fn track(&mut self, position: usize, now: Instant) {
        self.track_and_start(position, now, true).await;
    }

    /// [`Vrrp::track`], the start left out unless `start`: at startup
    /// every instance's FAULT state is known before any starts, so that a
    /// sync group with a member in FAULT starts in FAULT.
    async fn track_and_start(&mut self, position: usize, now: Instant, start: bool) {
        let plan = &self.plan.instances[position];
        let instance = &self.instances[position];
        let up = |index: u32| self.links.get(&index).copied().unwrap_or(false);
        // A macvlan is down when its base is, and on its own when someone
        // takes it down: keepalived tracks both.
        let own_up = up(instance.interface.index)
            && instance
                .vmac
                .as_ref()
                .is_none_or(|vmac| up(vmac.interface.index));
        let mut fault = plan.configuration_fault
            || (plan.track_own_interface && !own_up)
            || !instance.has_source;
        let mut priority = i32::from(instance.machine.settings().priority);
        let owner = priority == 255;
        let mut waiting = false;
        let effects = plan
            .tracked
            .links
            .iter()
            .zip(&instance.tracked_links)
            .map(|(tracked, index)| track::effect(up(*index), tracked.weight, tracked.reverse))
            .chain(plan.tracked.scripts.iter().map(|tracked| {
                match self.scripts.get(&tracked.name).copied().flatten() {
                    Some(ok) => track::effect(ok, tracked.weight, tracked.reverse),
                    // Before its first result a script weighs nothing.
                    None => {
                        waiting |= tracked.weight == 0;
                        track::Effect::Adjust(0)
                    }
                }
            }))
            .chain(plan.tracked.files.iter().map(|tracked| {
                let value = self.files.get(&tracked.name).copied().unwrap_or(0);
                track::file_effect(value, tracked.weight, tracked.reverse)
            }))
            .chain(plan.tracked.bfds.iter().map(|tracked| {
                // Not up until its session says so (keepalived's bfd_up).
                let up = self.bfds.get(&tracked.name).copied().unwrap_or(false);
                track::effect(up, tracked.weight, tracked.reverse)
            }))
            .chain(plan.tracked.processes.iter().map(|tracked| {
                let quorum = self.processes.get(&tracked.name).copied().unwrap_or(false);
                // keepalived never moves an address owner's priority
                // (vrrp_set_effective_priority); weight 0 still faults it.
                if owner && tracked.weight != 0 {
                    track::Effect::Adjust(0)
                } else {
                    track::effect(quorum, tracked.weight, tracked.reverse)
                }
            }))
            .collect::<Vec<_>>();
        for effect in effects {
            match effect {
                track::Effect::Fault => fault = true,
                track::Effect::Adjust(weight) => priority += weight,
            }
        }
        let priority = priority.clamp(1, 255) as u8;
        let group = plan.group;
        let was_faulted = instance.faulted;
        let old_priority = instance.tracked_priority;
        self.instances[position].faulted = fault;
        self.instances[position].tracked_priority = priority;
        if priority != old_priority {
            let name = &self.instances[position].machine.settings().name;
            tracing::info!(
                "({name}) Changing effective priority from {old_priority} to {priority}"
            );
            let before = self.instances[position].machine.effective_priority();
            self.handle_event(position, now, Event::PriorityChange(priority))
                .await;
            // keepalived's vrrp_set_effective_priority: with
            // `notify_priority_changes`, a change of the effective
            // priority (never an address owner's) is a FIFO line.
            let machine = &self.instances[position].machine;
            let after = machine.effective_priority();
            if after != before && self.plan.instances[position].notify_priority_changes {
                let event = if machine.state() == State::Master {
                    VrrpEvent::MasterPriority
                } else {
                    VrrpEvent::BackupPriority
                };
                if self.fifo.is_open() {
                    self.fifo.send(crate::notify_fifo::lines::instance(
                        &machine.settings().name,
                        event,
                        after,
                    ));
                }
            }
        }
        if fault != was_faulted {
            let event = if fault {
                Event::InterfaceDown
            } else {
                Event::InterfaceUp
            };
            self.handle_event(position, now, event).await;
            if let Some((group, member)) = group {
                let decision = self.groups[group].fault_changed(member, fault);
                let mut followups = Followups::default();
                self.follow(group, decision, &mut followups);
                self.carry_out(now, followups).await;
            }
        }
        if start && !waiting && !self.instances[position].started {
            self.instances[position].started = true;
            self.instances[position]
                .machine
                .delay_start_until(self.startup_delay_until);
            self.handle_event(position, now, Event::Start).await;
        }
    }

    /// Gives an advert to the instances of its interface, family and VRID.
    async fn dispatch(&mut self, index: u32, datagram: Datagram) {
        let Some(&virtual_router_id) = datagram.payload.get(1) else {
            return;
        };
        let family = Family::of(&datagram.source);
        let now = Instant::now();
        for position in 0..self.instances.len() {
            let instance = &self.instances[position];
            let settings = instance.machine.settings();
            if instance.advert_interface().index != index
                || settings.family != family
                || settings.virtual_router_id != virtual_router_id
            {
                continue;
            }
            let event = match parse(&datagram) {
                Ok(advert) => Event::Advert(Received {
                    source: datagram.source,
                    destination: datagram.destination,
                    hop_limit: datagram.hop_limit,
                    advert,
                }),
                Err(error) => {
                    tracing::debug!(
                        "({}) dropped a packet from {}: {error:?}",
                        settings.name,
                        datagram.source
                    );
                    Event::Malformed(error)
                }
            };
            self.handle_event(position, now, event).await;
        }
    }

    /// Gives `event` to an instance, then the events its sync group
    /// orders for the other members, until none is left; then runs the
    /// groups' notify scripts.
    async fn handle_event(&mut self, position: usize, now: Instant, event: Event) {
        let mut followups = Followups::default();
        followups.events.push_back((position, event));
        self.carry_out(now, followups).await;
    }

    async fn carry_out(&mut self, now: Instant, mut followups: Followups) {
        while let Some((position, event)) = followups.events.pop_front() {
            self.handle_one(position, now, event, &mut followups).await;
        }
        for (group, state) in followups.group_transitions {
            effects::notify(
                &self.fifo,
                &self.plan.groups[group].model.notify,
                "GROUP",
                self.groups[group].name(),
                state,
                0,
            );
            self.alert_group(group, state);
        }
    }

    /// vrrp_notify.c `vrrp_smtp_notifier`: an instance's SMTP alert,
    /// beside its notify scripts, when its `smtp_alert` is on (else the
    /// global `smtp_alert_vrrp`, else `smtp_alert`, else off), not for
    /// FAULT with `no_email_faults`, and once per state.
    fn alert_instance(&mut self, position: usize, state: State) {
        let instance = &mut self.instances[position];
        let Some(mailer) = &self.mailer else { return };
        let global = &self.plan.configuration.global;
        let model = &self.plan.instances[position].model;
        let word = match state {
            // keepalived's "Stopping" alerts never leave: its process
            // exits before the server's greeting. pulse does not try. Nor
            // for an instance a reload changed: keepalived keeps it.
            // Removed by a reload (vrrp.c `clear_diff_vrrp`): the notice
            // its scripts get, DELETED with `notify_deleted`, else FAULT,
            // and nothing for an instance in FAULT already.
            State::Initialize => match instance.removed_in_state {
                None => return,
                Some(removed_in) => {
                    match plan::removal_notice(model.notify.deleted.is_some(), removed_in) {
                        plan::RemovalNotice::Deleted => "DELETED",
                        plan::RemovalNotice::Fault => "FAULT",
                        plan::RemovalNotice::Nothing => return,
                    }
                }
            },
            state => effects::state_word(state),
        };
        if !alerts_on(model.smtp_alert, global)
            || (global.no_email_faults && word == "FAULT")
            || instance.last_alert == Some(word)
        {
            return;
        }
        let Some((what, body)) = smtp::instance_words(word) else {
            return;
        };
        instance.last_alert = Some(word);
        mailer.send(
            smtp::Alert::Instance {
                name: model.name.clone(),
                what,
            },
            body,
        );
    }

    /// `vrrp_sync_smtp_notifier`: a sync group's, by the same rules.
    /// keepalived sends a group's "Stopping" only as it exits, never
    /// delivered (above), and none at a reload.
    fn alert_group(&mut self, group: usize, state: State) {
        let Some(mailer) = &self.mailer else { return };
        let global = &self.plan.configuration.global;
        let model = &self.plan.groups[group].model;
        let sync_group = &mut self.groups[group];
        let word = effects::state_word(state);
        if state == State::Initialize
            || !alerts_on(model.smtp_alert, global)
            || (global.no_email_faults && state == State::Fault)
            || sync_group.last_alert == Some(word)
        {
            return;
        }
        let Some((what, body)) = smtp::group_words(word) else {
            return;
        };
        sync_group.last_alert = Some(word);
        mailer.send(
            smtp::Alert::Group {
                name: model.name.clone(),
                what,
            },
            body,
        );
    }

    /// Logs a group's decision and queues its orders.
    fn follow(&self, group: usize, decision: Decision, followups: &mut Followups) {
        self.follow_notified(group, decision, followups, false);
    }

    /// [`Vrrp::follow`], the transition's notify queued unless `notified`
    /// already.
    fn follow_notified(
        &self,
        group: usize,
        decision: Decision,
        followups: &mut Followups,
        notified: bool,
    ) {
        let Decision { transition, orders } = decision;
        if let Some((from, to)) = transition {
            let name = self.groups[group].name();
            // keepalived's lines; its groups start in BACKUP without one.
            match (from, to) {
                (_, State::Master) => {
                    tracing::info!("VRRP_Group({name}) Syncing instances to MASTER state")
                }
                (State::Master | State::Fault, State::Backup) => {
                    tracing::info!("VRRP_Group({name}) Syncing instances to BACKUP state")
                }
                (_, State::Fault) => {
                    tracing::info!("VRRP_Group({name}) Syncing instances to FAULT state")
                }
                _ => {}
            }
            if !notified {
                followups.group_transitions.push((group, to));
            }
        }
        for (member, event) in orders {
            followups
                .events
                .push_back((self.plan.groups[group].members[member], event));
        }
    }

    async fn handle_one(
        &mut self,
        position: usize,
        now: Instant,
        event: Event,
        followups: &mut Followups,
    ) {
        let instance = &mut self.instances[position];
        if let Event::Advert(received) = &event {
            let settings = instance.machine.settings();
            if instance.machine.state() == State::Backup && received.advert.priority == 0 {
                tracing::info!(
                    "({}) Backup received priority 0 advertisement",
                    settings.name
                );
            } else if instance.machine.state() == State::Master
                && received.advert.priority > instance.machine.effective_priority()
            {
                tracing::info!(
                    "({}) Master received advert from {} with higher priority {}, ours {}",
                    settings.name,
                    received.source,
                    received.advert.priority,
                    instance.machine.effective_priority()
                );
            }
        }
        let drops_before = instance.machine.statistics().total_drops();
        let actions = instance.machine.handle(now, event);
        if instance.machine.statistics().total_drops() != drops_before {
            tracing::debug!(
                "({}) advert dropped ({} so far)",
                instance.machine.settings().name,
                instance.machine.statistics().total_drops()
            );
        }
        // keepalived says which state it enters before it acts on it
        // (the addresses, the gratuitous ARPs); the notify scripts run
        // after, in the actions' order.
        for action in &actions {
            if let Action::EnterState(state) = action {
                let instance = &mut self.instances[position];
                let name = &instance.machine.settings().name;
                let starting = std::mem::replace(&mut instance.starting, false);
                match state {
                    State::Master => tracing::info!("({name}) Entering MASTER STATE"),
                    State::Backup if starting => {
                        tracing::info!("({name}) Entering BACKUP STATE (init)")
                    }
                    State::Backup => tracing::info!("({name}) Entering BACKUP STATE"),
                    State::Fault => tracing::info!("({name}) Entering FAULT STATE"),
                    // Said once the addresses are gone, below.
                    State::Initialize => {}
                }
            }
        }
        for action in actions {
            self.apply(position, action, followups).await;
        }
    }

    /// Carries out one of an instance's actions ([`super::effects`]), or
    /// asks its sync group.
    async fn apply(&mut self, position: usize, action: Action, followups: &mut Followups) {
        let plan = self.plan.clone();
        let instance_plan = &plan.instances[position];
        let name = instance_plan.name();
        let instance = &mut self.instances[position];
        // -V: the stop leaves what the master set, and says nothing.
        let keeping = self.stopping && self.keep_state_at_stop;
        match action {
            Action::SendAdvert { .. } | Action::RemoveAddresses if keeping => {}
            Action::SendAdvert { priority } => {
                if let Some(sender) = &instance.sender {
                    let advert = instance.machine.advert(priority);
                    Effects::send_advert(name, sender, &advert, &instance_plan.destinations);
                }
            }
            Action::AddAddresses => {
                instance.addresses_set = true;
                self.effects
                    .add_virtual_state(name, &instance.virtual_state)
                    .await;
            }
            Action::RemoveAddresses => {
                // No announcement of addresses this router no longer has.
                self.pacer.forget(position);
                instance.addresses_set = false;
                self.effects
                    .remove_virtual_state(name, &instance.virtual_state)
                    .await;
            }
            Action::Announce { repeat } => {
                tracing::info!(
                    "({name}) sending/queueing {repeat} gratuitous ARP(s) or neighbour \
                     advertisement(s) for {}",
                    instance
                        .announced
                        .iter()
                        .map(|(announcer, address)| format!(
                            "{address} on {}",
                            announcer.interface_name()
                        ))
                        .collect::<Vec<_>>()
                        .join(", ")
                );
                // keepalived's vrrp_send_link_update: `repeat` passes over
                // every address.
                let every: Vec<usize> = (0..instance.announced.len()).collect();
                for _ in 0..repeat {
                    self.announce(position, &every);
                }
            }
            Action::AnnounceExtraInterfaces => {
                // keepalived's vrrp_send_vmac_update: the first address on
                // each interface other than the instance's.
                let mut interfaces = HashSet::new();
                let first_elsewhere: Vec<usize> = instance
                    .announced
                    .iter()
                    .enumerate()
                    .filter(|(_, (announcer, _))| {
                        announcer.interface_index() != instance.interface.index
                            && interfaces.insert(announcer.interface_index())
                    })
                    .map(|(index, _)| index)
                    .collect();
                self.announce(position, &first_elsewhere);
            }
            Action::EnterState(state) => {
                instance.last_transition = SystemTime::now();
                if state == State::Initialize {
                    tracing::info!("({name}) Stopped");
                }
                self.effects.follow_sync_daemon(
                    name,
                    state,
                    instance.machine.settings().virtual_router_id,
                );
                let group_decision = instance_plan
                    .group
                    .map(|(group, member)| (group, self.groups[group].entered(member, state)));
                // A sync group's first state is notified before its
                // members' (keepalived's vrrp_init_state notifies the
                // groups, then the instances).
                // Its mail too, sent before the instance's below.
                let mut started_group = None;
                let group_started = match &group_decision {
                    Some((group, decision)) => match decision.transition {
                        Some((State::Initialize, to)) => {
                            let group = *group;
                            effects::notify(
                                &self.fifo,
                                &self.plan.groups[group].model.notify,
                                "GROUP",
                                self.groups[group].name(),
                                to,
                                0,
                            );
                            started_group = Some((group, to));
                            true
                        }
                        _ => false,
                    },
                    None => false,
                };
                match instance
                    .removed_in_state
                    .filter(|_| state == State::Initialize)
                {
                    // Removed by a reload: keepalived's notice of a deleted
                    // instance instead of STOP.
                    Some(removed_in) => effects::notify_removed(
                        &self.fifo,
                        &instance_plan.model.notify,
                        name,
                        plan::removal_notice(
                            instance_plan.model.notify.deleted.is_some(),
                            removed_in,
                        ),
                        instance.machine.effective_priority(),
                    ),
                    None => effects::notify(
                        &self.fifo,
                        &instance_plan.model.notify,
                        "INSTANCE",
                        name,
                        state,
                        instance.machine.effective_priority(),
                    ),
                }
                if let Some((group, decision)) = group_decision {
                    self.follow_notified(group, decision, followups, group_started);
                }
                if let Some((group, to)) = started_group {
                    self.alert_group(group, to);
                }
                self.alert_instance(position, state);
            }
            Action::RequestMaster => {
                let Some((group, member)) = instance_plan.group else {
                    return;
                };
                let members = &plan.groups[group].members;
                let allowed = self.groups[group].may_become_master(member, |other| {
                    self.instances[members[other]].machine.wants_master()
                });
                if allowed {
                    followups.events.push_back((position, Event::SyncMaster));
                } else {
                    tracing::debug!(
                        "({name}) would become master; waiting for the rest of sync group {}",
                        self.groups[group].name()
                    );
                }
            }
            Action::MasterReceivedLowerPriority { source } => {
                tracing::info!(
                    "({name}) Master received an advert with a lower priority from {source}"
                );
                effects::notify_master_received_lower_priority(
                    &self.fifo,
                    &instance_plan.model.notify,
                    name,
                    instance.machine.effective_priority(),
                );
            }
        }
    }
}

/// Whether an instance's or a sync group's alerts are on: its own
/// `smtp_alert`, else the global `smtp_alert_vrrp`, else `smtp_alert`,
/// else off (vrrp.c).
fn alerts_on(own: Option<bool>, global: &config::GlobalDefs) -> bool {
    own.or(global.smtp_alert_vrrp)
        .or(global.smtp_alert)
        .unwrap_or(false)
}

/// The plan's SMTP sender, made off the runtime's threads (it may ask the
/// resolver); none without a server and addresses, or when the server's
/// name does not resolve (keepalived's "Invalid smtp server").
pub(super) async fn mailer(plan: &Plan) -> Option<Mailer> {
    let configuration = plan.configuration.clone();
    match tokio::task::spawn_blocking(move || Mailer::new(&configuration.global)).await {
        Ok(Ok(mailer)) => mailer,
        Ok(Err(error)) => {
            tracing::error!("{error}");
            None
        }
        Err(_) => None,
    }
}

/// keepalived's dumps, each with its file.
#[derive(Debug, Clone, Copy)]
enum Dump {
    /// keepalived.data (SIGUSR1).
    State,
    /// keepalived.stats (SIGUSR2, STATS_CLEAR).
    Statistics,
    /// keepalived.json (SIGRTMIN+2).
    Json,
}

/// What each of the plan's instances' configuration says, in its order.
pub(super) fn descriptions(plan: &Plan) -> Vec<Arc<Description>> {
    plan.instances
        .iter()
        .map(|instance| Arc::new(Description::of(plan, instance)))
        .collect()
}

/// Writes one of keepalived's dumps: to a new file beside `path`, readable
/// by its owner only as keepalived's (umask 0177), then renamed over it, so
/// that a reader (an exporter polling the file) sees the previous dump or
/// this one, never a part. keepalived logs a failure and goes on.
fn write_dump(path: &Path, text: &str) {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let temporary = path.with_extension(format!("{}.new", std::process::id()));
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&temporary)
        .and_then(|mut file| file.write_all(text.as_bytes()))
        .and_then(|()| std::fs::rename(&temporary, path));
    if let Err(error) = written {
        let _ = std::fs::remove_file(&temporary);
        tracing::info!(
            "Can't open {} ({}: {error})",
            path.display(),
            error.raw_os_error().unwrap_or(0)
        );
    }
}

/// The plan's warnings, as keepalived logs them.
fn log_warnings(plan: &Plan) {
    for warning in &plan.warnings {
        tracing::warn!("{warning}");
    }
}

/// Parses an advert; a unicast one whose checksum fails is tried again
/// with the multicast group as destination, which keepalived before 2.2
/// (and 2.2 with `unicast_checksum_compat`) put in the pseudo header.
fn parse(datagram: &Datagram) -> Result<Repr, packet::Error> {
    let packet = Packet::new_unchecked(&datagram.payload[..]);
    match Repr::parse(&packet, &datagram.source, &datagram.destination) {
        Err(packet::Error::BadChecksum) if !datagram.destination.is_multicast() => {
            let group = io::group(Family::of(&datagram.source));
            Repr::parse(&packet, &datagram.source, &group)
        }
        result => result,
    }
}

async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(deadline.into()).await,
        None => std::future::pending().await,
    }
}

/// keepalived's nftables table settings from `global_defs` (the table's
/// name, its chains' priority, counters); taken at VRRP's start, as
/// keepalived's VRRP process takes them (a reload keeps the tables).
fn table_settings(defaults: &config::VrrpDefaults) -> TableSettings {
    let mut settings = TableSettings::default();
    if let Some(table) = &defaults.nftables {
        settings.table.clone_from(table);
    }
    if let Some(priority) = defaults.nftables_priority {
        settings.priority = priority;
    }
    settings.counters = defaults.nftables_counters;
    settings
}

#[cfg(test)]
mod tests {
    use std::net::{IpAddr, Ipv4Addr};

    use super::*;
    use crate::vrrp::{Addresses, Kind};

    fn advert() -> Repr {
        Repr {
            virtual_router_id: 51,
            priority: 100,
            kind: Kind::Version3 {
                max_advert_interval: 100,
            },
            addresses: Addresses::Ipv4(vec![Ipv4Addr::new(192, 0, 2, 100)]),
        }
    }

    fn datagram(payload: Vec<u8>, destination: IpAddr) -> Datagram {
        Datagram {
            source: IpAddr::from([192, 0, 2, 1]),
            destination,
            hop_limit: 255,
            payload,
        }
    }

    #[test]
    fn a_unicast_advert_checksummed_with_the_group_is_accepted() {
        let source = IpAddr::from([192, 0, 2, 1]);
        let peer = IpAddr::from([192, 0, 2, 2]);
        let group = io::group(Family::Ipv4);
        // keepalived before 2.2, or with unicast_checksum_compat.
        let old_style = advert().to_bytes(&source, &group);
        assert_eq!(parse(&datagram(old_style, peer)), Ok(advert()));
        let new_style = advert().to_bytes(&source, &peer);
        assert_eq!(parse(&datagram(new_style, peer)), Ok(advert()));
    }

    #[test]
    fn a_multicast_advert_is_checked_with_the_group_only() {
        let source = IpAddr::from([192, 0, 2, 1]);
        let peer = IpAddr::from([192, 0, 2, 2]);
        let group = io::group(Family::Ipv4);
        let for_the_peer = advert().to_bytes(&source, &peer);
        assert_eq!(
            parse(&datagram(for_the_peer, group)),
            Err(packet::Error::BadChecksum)
        );
    }
}
