//! The VRRP task: one [`Machine`] per `vrrp_instance`, driven by one
//! `select!` loop over the adverts received, the machines' deadlines and
//! shutdown, carrying out their actions on the sockets and through
//! rtnetlink.
//!
//! Adverts are demultiplexed by interface, family and VRID, as keepalived
//! does; each receive socket has a reader task feeding the loop, so the
//! loop itself never waits on one socket.

use std::collections::{HashMap, VecDeque};
use std::net::IpAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use fulcrum_config::model as config;
use netlink_packet_route::address::AddressMessage;
use netlink_packet_route::route::RouteMessage;
use netlink_packet_route::rule::RuleMessage;
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

use super::addresses::{self, AddressError};
use super::firewall::Firewall;
use super::io::{self, Announcer, Datagram, Interface, ReceiveSocket, SendSocket};
use super::packet::{self, Family, Packet, Repr};
use super::resync;
use super::routes;
use super::sources::{SourceAddresses, SourceChange};
use super::sync::{Decision, SyncGroup};
use super::track;
use super::{Action, Event, InstanceSettings, Machine, Received, SettingsError, State};

/// How often tracked files are read.
const FILE_PERIOD: Duration = Duration::from_millis(200);

/// Received packets waiting for the loop.
const DATAGRAM_QUEUE: usize = 256;

/// Why VRRP cannot start.
#[derive(Debug, thiserror::Error)]
pub enum VrrpError {
    #[error(transparent)]
    Settings(#[from] SettingsError),
    #[error("({0}) no interface given")]
    NoInterface(String),
    #[error("({instance}) interface {interface}: {error}")]
    Interface {
        instance: String,
        interface: String,
        error: AddressError,
    },
    #[error("({0}) cannot open its sockets: {1}")]
    Socket(String, std::io::Error),
    #[error("cannot open rtnetlink: {0}")]
    Netlink(std::io::Error),
}

/// A `track_interface` entry; the weight and reverse as
/// [`track::effect`] takes them.
struct TrackedLink {
    name: String,
    index: u32,
    weight: i32,
    reverse: bool,
}

/// A `track_script` entry: the instance's weight, else the script's.
struct TrackedScript {
    name: String,
    weight: i32,
    reverse: bool,
}

/// A `track_file` entry: the instance's weight, else the file's.
struct TrackedFile {
    name: String,
    weight: i32,
    reverse: bool,
}

/// One running instance and what it sends with.
struct Instance {
    /// Its block, to tell on reload whether it changed.
    model: config::VrrpInstance,
    machine: Machine,
    interface: Interface,
    /// `None` without a source address: the instance stays in FAULT.
    sender: Option<SendSocket>,
    /// Whether it has an address to send from; cleared before the sender
    /// goes, so that a master leaving for FAULT sends its priority 0
    /// advert first.
    has_source: bool,
    /// Its source address is `mcast_src_ip`/`unicast_src_ip`, not the
    /// interface's: the interface's addresses coming and going do not
    /// change it (keepalived's `saddr_from_config`).
    configured_source: bool,
    /// The multicast group, or the unicast peers.
    destinations: Vec<IpAddr>,
    /// virtual_ipaddress and virtual_ipaddress_excluded, as rtnetlink
    /// messages.
    addresses: Vec<AddressMessage>,
    /// What a master without accept mode drops traffic to and from:
    /// virtual_ipaddress and virtual_ipaddress_excluded (keepalived's
    /// `vips` set holds both); empty with accept mode.
    dropped: Vec<IpAddr>,
    /// virtual_routes and virtual_rules, added after the addresses.
    routes: Vec<RouteMessage>,
    rules: Vec<RuleMessage>,
    /// The addresses announced, each with its interface's announcer.
    announced: Vec<(Arc<Announcer>, IpAddr)>,
    garp_interval: Duration,
    gna_interval: Duration,
    notify: config::Notify,
    /// Whether its own interface going down means FAULT (not
    /// `dont_track_primary`).
    track_own_interface: bool,
    tracked_links: Vec<TrackedLink>,
    tracked_scripts: Vec<TrackedScript>,
    tracked_files: Vec<TrackedFile>,
    /// What the machine was last told: FAULT for the links, and the
    /// priority after the tracking weights.
    faulted: bool,
    tracked_priority: u8,
    /// Whether [`Event::Start`] was given: keepalived holds an instance
    /// in its initial state until each tracked script of weight 0 has a
    /// first result.
    started: bool,
    /// Whether the next backup state is the first one (keepalived says
    /// "(init)").
    starting: bool,
    announcing: Option<JoinHandle<()>>,
    /// Its sync group and its index among the group's members.
    group: Option<(usize, usize)>,
}

/// A `vrrp_sync_group` of running instances.
struct Group {
    /// Its block, to tell on reload whether it changed.
    model: config::SyncGroup,
    coordinator: SyncGroup,
    /// The members' positions in [`Vrrp::instances`].
    members: Vec<usize>,
}

/// What one event led to, carried out after it: events for other
/// instances (their sync group's orders) and the groups' transitions,
/// whose notify scripts run once every member has followed.
#[derive(Default)]
struct Followups {
    events: VecDeque<(usize, Event)>,
    group_transitions: Vec<(usize, State)>,
}

/// The tasks and channels around the loop, replaced on reload.
struct Io {
    datagrams: mpsc::Receiver<(u32, Datagram)>,
    /// For the reader of a socket opened later (an interface created
    /// again).
    datagrams_sender: mpsc::Sender<(u32, Datagram)>,
    sockets: Vec<(u32, Arc<ReceiveSocket>)>,
    /// The reader task of each receive socket, by interface index.
    readers: Vec<(u32, JoinHandle<()>)>,
    netlink_events: NetlinkEvents,
    script_changes: mpsc::Receiver<track::ScriptChange>,
    file_changes: mpsc::Receiver<track::FileChange>,
    tasks: Vec<JoinHandle<()>>,
}

impl Io {
    fn stop(&mut self) {
        for task in self.tasks.drain(..) {
            task.abort();
        }
        for (_, reader) in self.readers.drain(..) {
            reader.abort();
        }
    }

    /// Starts reading `socket`, whose packets arrive on interface `index`.
    fn add_receiver(&mut self, index: u32, socket: ReceiveSocket) {
        let socket = Arc::new(socket);
        self.sockets.push((index, socket.clone()));
        let sender = self.datagrams_sender.clone();
        self.readers.push((
            index,
            tokio::spawn(async move {
                loop {
                    match socket.receive().await {
                        Ok(Some(datagram)) => {
                            if sender.send((index, datagram)).await.is_err() {
                                return;
                            }
                        }
                        Ok(None) => {}
                        Err(error) => {
                            tracing::warn!("VRRP receive: {error}");
                            tokio::time::sleep(Duration::from_millis(100)).await;
                        }
                    }
                }
            }),
        ));
    }

    /// Stops reading the sockets of interface `index` (gone).
    fn remove_receivers(&mut self, index: u32) {
        self.sockets
            .retain(|(socket_index, _)| *socket_index != index);
        self.readers.retain(|(reader_index, reader)| {
            if *reader_index == index {
                reader.abort();
            }
            *reader_index != index
        });
    }
}

/// The VRRP part of pulse, ready to run.
pub struct Vrrp {
    handle: rtnetlink::Handle,
    instances: Vec<Instance>,
    groups: Vec<Group>,
    receivers: Vec<(u32, ReceiveSocket)>,
    configuration: Arc<config::Config>,
    /// Up (with carrier) or not, by interface index, for the instances'
    /// interfaces and tracked ones.
    links: HashMap<u32, bool>,
    /// The addresses adverts can go from, by interface index, for the
    /// instances' interfaces.
    sources: HashMap<u32, SourceAddresses>,
    netlink_events: Option<NetlinkEvents>,
    /// The tracked `vrrp_script`s: succeeding or not, `None` before their
    /// first result.
    scripts: HashMap<String, Option<bool>>,
    /// The tracked files' values.
    files: HashMap<String, i64>,
    /// The drop rules of the masters without accept mode; handed on at a
    /// reload, removed when VRRP stops.
    firewall: Firewall,
}

/// rtnetlink's stream of link and address messages (`RTNLGRP_LINK`,
/// `RTNLGRP_IPV4_IFADDR`, `RTNLGRP_IPV6_IFADDR`).
type NetlinkEvents = futures_util::stream::BoxStream<
    'static,
    (
        rtnetlink::packet_core::NetlinkMessage<rtnetlink::packet_route::RouteNetlinkMessage>,
        rtnetlink::sys::SocketAddr,
    ),
>;

impl Vrrp {
    /// Resolves the configuration's instances, reads their interfaces and
    /// opens their sockets. Must run inside the tokio runtime.
    pub async fn prepare(configuration: Arc<config::Config>) -> Result<Vrrp, VrrpError> {
        let (connection, handle, _) = rtnetlink::new_connection().map_err(VrrpError::Netlink)?;
        tokio::spawn(connection);
        // Subscribed before the links and addresses are read, so that no
        // change between the read and the loop is missed.
        let (monitor, _, netlink_events) = rtnetlink::new_multicast_connection(&[
            rtnetlink::MulticastGroup::Link,
            rtnetlink::MulticastGroup::Ipv4Ifaddr,
            rtnetlink::MulticastGroup::Ipv6Ifaddr,
        ])
        .map_err(VrrpError::Netlink)?;
        tokio::spawn(monitor);
        let mut links = HashMap::new();
        let mut sources = HashMap::new();
        let mut scripts = HashMap::new();
        let mut files = HashMap::new();
        let defaults = &configuration.global.vrrp;
        let mut instances = Vec::new();
        let mut interfaces: HashMap<String, Interface> = HashMap::new();
        let mut receivers: Vec<(u32, ReceiveSocket)> = Vec::new();
        let mut announcers = HashMap::new();
        let memberships = memberships(&configuration);
        for model in &configuration.vrrp_instances {
            let mut settings = InstanceSettings::from_model(model, defaults)?;
            let name = settings.name.clone();
            let interface_name = model
                .interface
                .clone()
                .ok_or_else(|| VrrpError::NoInterface(name.clone()))?;
            let interface = match interfaces.get(&interface_name) {
                Some(interface) => interface.clone(),
                None => {
                    let (interface, interface_sources) =
                        addresses::interface_with_sources(&handle, &interface_name)
                            .await
                            .map_err(|error| VrrpError::Interface {
                                instance: name.clone(),
                                interface: interface_name.clone(),
                                error,
                            })?;
                    interfaces.insert(interface_name.clone(), interface.clone());
                    sources.insert(interface.index, interface_sources);
                    interface
                }
            };
            links.insert(interface.index, interface.up);
            let mut tracked_links =
                tracked_links(&handle, &model.tracking, &name, &mut links).await?;
            let mut tracked_scripts =
                tracked_scripts(&configuration, &model.tracking, &name, &mut scripts);
            let mut tracked_files =
                tracked_files(&configuration, &model.tracking, &name, &mut files);
            let membership = memberships.get(&model.name).copied();
            if let Some(group_index) = membership {
                let group = &configuration.sync_groups[group_index];
                // keepalived (vrrp.c): a sync group's members must agree on
                // their priorities, so their own weights go unless the
                // group allows them.
                if !group.sync_group_tracking_weight && !group.global_tracking {
                    ignore_weights(
                        &name,
                        &mut tracked_links,
                        &mut tracked_scripts,
                        &mut tracked_files,
                    );
                }
                // The group's tracking applies to each member, without
                // weights when a member owns its addresses (keepalived's
                // sync_group_tracking_init).
                let owner = group.instances.iter().any(|member| {
                    configuration
                        .vrrp_instances
                        .iter()
                        .any(|instance| instance.name == *member && instance.priority == 255)
                });
                let group_tracking = TrackedObjects {
                    links: self::tracked_links(&handle, &group.tracking, &group.name, &mut links)
                        .await?,
                    scripts: self::tracked_scripts(
                        &configuration,
                        &group.tracking,
                        &group.name,
                        &mut scripts,
                    ),
                    files: self::tracked_files(
                        &configuration,
                        &group.tracking,
                        &group.name,
                        &mut files,
                    ),
                };
                let mut own = TrackedObjects {
                    links: tracked_links,
                    scripts: tracked_scripts,
                    files: tracked_files,
                };
                merge_group_tracking(&name, &group.name, owner, &mut own, group_tracking);
                (tracked_links, tracked_scripts, tracked_files) =
                    (own.links, own.scripts, own.files);
            }
            let configured_source = settings.local_address.is_some();
            let source = settings.local_address.or(match settings.family {
                Family::Ipv4 => interface.ipv4.map(IpAddr::V4),
                Family::Ipv6 => interface.ipv6_link_local.map(IpAddr::V6),
            });
            // The machine compares its address with a master's of equal
            // priority.
            settings.local_address = source;
            let destinations = destinations(model, &settings, defaults);
            let sender = match source {
                Some(source) => Some(
                    SendSocket::open(&interface, source, model.unicast_ttl)
                        .map_err(|error| VrrpError::Socket(name.clone(), error))?,
                ),
                None => {
                    // keepalived too: the instance is in FAULT until an
                    // address appears (address_changed), the others run.
                    tracing::error!(
                        "({name}) {interface_name} has no {} address to send adverts from: \
                         the instance stays in FAULT until it has one",
                        match settings.family {
                            Family::Ipv4 => "IPv4",
                            Family::Ipv6 => "link-local IPv6",
                        }
                    );
                    None
                }
            };
            if !receivers.iter().any(|(index, socket)| {
                *index == interface.index && socket.family() == settings.family
            }) {
                let socket = ReceiveSocket::open(&interface, settings.family)
                    .map_err(|error| VrrpError::Socket(name.clone(), error))?;
                receivers.push((interface.index, socket));
            }
            let (messages, announced) =
                virtual_addresses(&handle, model, &interface, &name, &mut announcers).await?;
            let (route_messages, rule_messages) = routes_and_rules(model, &interface, &name);
            let priority = settings.priority;
            let mut machine = Machine::new(settings);
            if membership.is_some() {
                machine.join_sync_group();
            }
            let dropped = if machine.settings().accept {
                Vec::new()
            } else {
                model
                    .virtual_addresses
                    .iter()
                    .chain(&model.excluded_addresses)
                    .map(|address| address.address.address)
                    .collect()
            };
            instances.push(Instance {
                model: model.clone(),
                dropped,
                routes: route_messages,
                rules: rule_messages,
                track_own_interface: !model.dont_track_primary,
                tracked_links,
                tracked_scripts,
                tracked_files,
                faulted: false,
                tracked_priority: priority,
                machine,
                interface: interface.clone(),
                has_source: sender.is_some(),
                configured_source,
                sender,
                destinations,
                addresses: messages,
                announced,
                garp_interval: defaults.garp_interval.unwrap_or_default(),
                gna_interval: defaults.gna_interval.unwrap_or_default(),
                notify: model.notify.clone(),
                starting: true,
                started: false,
                announcing: None,
                group: None,
            });
        }
        let mut groups: Vec<Group> = Vec::new();
        for (group_index, model) in configuration.sync_groups.iter().enumerate() {
            let members: Vec<usize> = instances
                .iter()
                .enumerate()
                .filter(|(_, instance)| memberships.get(&instance.model.name) == Some(&group_index))
                .map(|(position, _)| position)
                .collect();
            if members.is_empty() {
                continue;
            }
            let owners = members
                .iter()
                .filter(|position| instances[**position].machine.settings().priority == 255)
                .count();
            if owners != 0 && owners != members.len() {
                tracing::warn!(
                    "Sync group {} has some member(s) as address owner and some not as address \
                     owner. This won't work.",
                    model.name
                );
            }
            if members.len() == 1 {
                tracing::warn!(
                    "Sync group {} has only 1 virtual router(s) - this probably isn't what you want",
                    model.name
                );
            }
            let index = groups.len();
            for (member, position) in members.iter().enumerate() {
                instances[*position].group = Some((index, member));
            }
            groups.push(Group {
                model: model.clone(),
                coordinator: SyncGroup::new(&model.name, members.len()),
                members,
            });
        }
        Ok(Vrrp {
            handle,
            instances,
            groups,
            receivers,
            configuration,
            links,
            sources,
            netlink_events: Some(Box::pin(netlink_events)),
            scripts,
            files,
            firewall: Firewall::default(),
        })
    }

    /// How many instances run.
    pub fn len(&self) -> usize {
        self.instances.len()
    }

    pub fn is_empty(&self) -> bool {
        self.instances.is_empty()
    }

    /// Starts the reader tasks of the receive sockets and the tracked
    /// scripts' tasks.
    fn start_io(&mut self) -> Io {
        let (datagrams_sender, datagrams) = mpsc::channel::<(u32, Datagram)>(DATAGRAM_QUEUE);
        let mut tasks = Vec::new();
        let netlink_events = self
            .netlink_events
            .take()
            .unwrap_or_else(|| Box::pin(futures_util::stream::pending()));
        let (script_sender, script_changes) = mpsc::channel(64);
        for script in &self.configuration.vrrp_scripts {
            if self.scripts.contains_key(&script.name) {
                tasks.push(tokio::spawn(track::run_script(
                    script.clone(),
                    self.configuration.global.clone(),
                    script_sender.clone(),
                )));
            }
        }
        let (file_sender, file_changes) = mpsc::channel(64);
        for file in &self.configuration.track_files {
            if let (Some(value), Some(path)) = (self.files.get(&file.name), &file.file) {
                tasks.push(tokio::spawn(track::watch_file(
                    file.name.clone(),
                    path.into(),
                    *value,
                    FILE_PERIOD,
                    file_sender.clone(),
                )));
            }
        }
        let mut io = Io {
            datagrams,
            datagrams_sender,
            sockets: Vec::new(),
            readers: Vec::new(),
            netlink_events,
            script_changes,
            file_changes,
            tasks,
        };
        for (index, socket) in std::mem::take(&mut self.receivers) {
            io.add_receiver(index, socket);
        }
        io
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
        let mut io = self.start_io();
        self.start_instances().await;
        // SIGUSR2: keepalived's statistics file.
        let mut statistics_signal =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::user_defined2())
                .inspect_err(|error| tracing::warn!("cannot listen for SIGUSR2: {error}"))
                .ok();
        loop {
            let next = self
                .instances
                .iter()
                .filter_map(|instance| instance.machine.poll_at())
                .min();
            tokio::select! {
                _ = &mut shutdown => break,
                Some(()) = async { statistics_signal.as_mut().expect("guarded").recv().await },
                    if statistics_signal.is_some() => self.write_statistics(),
                Some(configuration) = reloads.recv() => {
                    if let Some(next) = self.reload(configuration).await {
                        io.stop();
                        self = next;
                        io = self.start_io();
                        self.start_instances().await;
                    }
                }
                event = futures_util::StreamExt::next(&mut io.netlink_events) => match event {
                    Some((message, _)) => self.netlink_event(message, &mut io).await,
                    None => io.netlink_events = Box::pin(futures_util::stream::pending()),
                },
                Some(change) = io.script_changes.recv() => {
                    if self.scripts.insert(change.name, Some(change.ok)) != Some(Some(change.ok)) {
                        let now = Instant::now();
                        for position in 0..self.instances.len() {
                            self.track(position, now).await;
                        }
                    }
                }
                Some(change) = io.file_changes.recv() => {
                    if self.files.insert(change.name, change.value) != Some(change.value) {
                        let now = Instant::now();
                        for position in 0..self.instances.len() {
                            self.track(position, now).await;
                        }
                    }
                }
                received = io.datagrams.recv() => match received {
                    Some((index, datagram)) => self.dispatch(index, datagram).await,
                    None => break,
                },
                _ = sleep_until(next) => {
                    // The adverts already queued come first: when pulse
                    // was not scheduled for a while (a loaded machine),
                    // the deadline and the master's adverts are ready
                    // together, and a backup must not declare a master
                    // down whose adverts are waiting, in the channel or
                    // still in a socket. Only so many, so that a flood
                    // cannot hold the deadlines off.
                    for _ in 0..DATAGRAM_QUEUE {
                        match io.datagrams.try_recv() {
                            Ok((index, datagram)) => self.dispatch(index, datagram).await,
                            Err(_) => break,
                        }
                    }
                    for (index, socket) in &io.sockets {
                        for _ in 0..DATAGRAM_QUEUE {
                            match socket.try_receive() {
                                Ok(Some(datagram)) => self.dispatch(*index, datagram).await,
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
                }
            }
        }
        io.stop();
        let now = Instant::now();
        for position in 0..self.instances.len() {
            self.stop_instance(position, now).await;
        }
        // As keepalived at exit: the tables go too.
        if let Err(error) = self.firewall.remove_tables() {
            tracing::error!("cannot remove the firewall tables: {error}");
        }
    }

    /// Writes every instance's counters to `keepalived.stats` in the
    /// temporary directory (`TMPDIR`, else /tmp), as keepalived 2.2 does on
    /// SIGUSR2, with its log line.
    fn write_statistics(&self) {
        tracing::info!(
            "Printing VRRP stats for process({}) on signal",
            std::process::id()
        );
        let report: String = self
            .instances
            .iter()
            .map(|instance| {
                instance
                    .machine
                    .statistics()
                    .keepalived_report(&instance.machine.settings().name)
            })
            .collect();
        let path = std::env::temp_dir().join("keepalived.stats");
        if let Err(error) = std::fs::write(&path, report) {
            tracing::info!(
                "Can't open {} ({}: {error})",
                path.display(),
                error.raw_os_error().unwrap_or(0)
            );
        }
    }

    /// A link already down or a tracking weight applies before the start,
    /// so that an instance starts in FAULT or with its priority; then
    /// track() starts the instances (those kept by a reload go on).
    async fn start_instances(&mut self) {
        let now = Instant::now();
        for position in 0..self.instances.len() {
            self.track_and_start(position, now, false).await;
        }
        for position in 0..self.instances.len() {
            self.track(position, now).await;
        }
    }

    async fn stop_instance(&mut self, position: usize, now: Instant) {
        self.handle_event(position, now, Event::Stop).await;
        if let Some(announcing) = self.instances[position].announcing.take() {
            announcing.abort();
        }
    }

    /// A new configuration, as keepalived reloads: an instance whose
    /// block, global VRRP settings, tracked scripts and files did not change
    /// keeps its state (a master stays master, without a transition);
    /// the others stop (a master sends priority 0 and removes its
    /// addresses) and the new ones start. A sync group's members are kept
    /// only together: when its block, its tracked scripts or files, or
    /// any member changed, every member stops and starts again. `None`
    /// (and the running instances untouched) if the new configuration
    /// cannot run.
    async fn reload(&mut self, configuration: Arc<config::Config>) -> Option<Vrrp> {
        let mut next = match Vrrp::prepare(configuration).await {
            Ok(next) => next,
            Err(error) => {
                tracing::error!("VRRP cannot reload: {error}; the running instances stay");
                return None;
            }
        };
        let same_globals = self.configuration.global.vrrp == next.configuration.global.vrrp;
        let scripts_of = |configuration: &config::Config, tracking: &config::Tracking| {
            tracking
                .scripts
                .iter()
                .map(|tracked| {
                    configuration
                        .vrrp_scripts
                        .iter()
                        .find(|script| script.name == tracked.name)
                        .cloned()
                })
                .collect::<Vec<_>>()
        };
        let files_of = |configuration: &config::Config, tracking: &config::Tracking| {
            tracking
                .files
                .iter()
                .map(|tracked| {
                    configuration
                        .track_files
                        .iter()
                        .find(|file| file.name == tracked.name)
                        .cloned()
                })
                .collect::<Vec<_>>()
        };
        let tracking_unchanged = |old: &config::Tracking, new: &config::Tracking| {
            scripts_of(&next.configuration, new) == scripts_of(&self.configuration, old)
                && files_of(&next.configuration, new) == files_of(&self.configuration, old)
        };
        let instance_unchanged: Vec<bool> = self
            .instances
            .iter()
            .map(|old| {
                same_globals
                    && next.instances.iter().any(|new| {
                        new.model == old.model
                            && tracking_unchanged(&old.model.tracking, &new.model.tracking)
                    })
            })
            .collect();
        // A group is kept when the new configuration has the same block
        // with the same members, all of them unchanged.
        let members_of = |vrrp: &Vrrp, group: &Group| {
            group
                .members
                .iter()
                .map(|position| vrrp.instances[*position].model.name.clone())
                .collect::<Vec<_>>()
        };
        let kept_groups: Vec<Option<usize>> = self
            .groups
            .iter()
            .map(|old| {
                if !old
                    .members
                    .iter()
                    .all(|position| instance_unchanged[*position])
                {
                    return None;
                }
                next.groups.iter().position(|new| {
                    new.model == old.model
                        && members_of(&next, new) == members_of(self, old)
                        && tracking_unchanged(&old.model.tracking, &new.model.tracking)
                })
            })
            .collect();
        let now = Instant::now();
        let mut kept = Vec::new();
        for (position, unchanged) in instance_unchanged.into_iter().enumerate() {
            let old = &self.instances[position];
            let group_kept = match old.group {
                Some((group, _)) => kept_groups[group].is_some(),
                // Not in a group before: not in one now either.
                None => next
                    .instances
                    .iter()
                    .any(|new| new.model == old.model && new.group.is_none()),
            };
            if unchanged && group_kept {
                kept.push(position);
            } else {
                tracing::info!(
                    "({}) changed or removed by the reload: stopping",
                    old.model.name
                );
                self.stop_instance(position, now).await;
            }
        }
        for (old, new) in kept_groups.iter().enumerate() {
            if let Some(new) = new {
                std::mem::swap(
                    &mut next.groups[*new].coordinator,
                    &mut self.groups[old].coordinator,
                );
            }
        }
        for position in kept {
            let old = &mut self.instances[position];
            let Some(new) = next.instances.iter_mut().find(|new| new.model == old.model) else {
                continue;
            };
            // The machine goes on with its state and timers; sockets,
            // links and scripts are the new configuration's.
            // The source address is the one just read.
            let source = new.machine.settings().local_address;
            std::mem::swap(&mut new.machine, &mut old.machine);
            new.machine.set_local_address(source);
            new.started = old.started;
            new.starting = old.starting;
            new.faulted = old.faulted;
            new.tracked_priority = old.tracked_priority;
            new.announcing = old.announcing.take();
            for tracked in &new.tracked_scripts {
                if let Some(state) = self.scripts.get(&tracked.name) {
                    next.scripts.insert(tracked.name.clone(), *state);
                }
            }
        }
        tracing::info!(
            "VRRP reloaded: {} of {} instance(s) kept with their state",
            next.instances
                .iter()
                .filter(|instance| instance.started)
                .count(),
            next.instances.len()
        );
        next.firewall = std::mem::take(&mut self.firewall);
        Some(next)
    }

    /// A message from the rtnetlink monitor: a link or an address.
    async fn netlink_event(
        &mut self,
        message: rtnetlink::packet_core::NetlinkMessage<
            rtnetlink::packet_route::RouteNetlinkMessage,
        >,
        io: &mut Io,
    ) {
        use rtnetlink::packet_core::NetlinkPayload;
        match message.payload {
            NetlinkPayload::InnerMessage(message) => self.route_event(message, io).await,
            NetlinkPayload::Overrun(_) => self.catch_up(io).await,
            _ => {}
        }
    }

    async fn route_event(
        &mut self,
        message: rtnetlink::packet_route::RouteNetlinkMessage,
        io: &mut Io,
    ) {
        use rtnetlink::packet_route::RouteNetlinkMessage;
        match message {
            RouteNetlinkMessage::NewLink(link) => self.link_changed(&link, true, io).await,
            RouteNetlinkMessage::DelLink(link) => self.link_changed(&link, false, io).await,
            RouteNetlinkMessage::NewAddress(address) => self.address_changed(&address, true).await,
            RouteNetlinkMessage::DelAddress(address) => self.address_changed(&address, false).await,
            _ => {}
        }
    }

    /// The kernel dropped events (the monitor socket's buffer was full):
    /// every link and address is read again, and what changed meanwhile is
    /// handled as the lost events would have been ([`resync`]).
    async fn catch_up(&mut self, io: &mut Io) {
        use futures_util::TryStreamExt;
        tracing::warn!(
            "Netlink: receive buffer overrun, events were lost: reading links and addresses again"
        );
        let read = async {
            let links: Vec<_> = self.handle.link().get().execute().try_collect().await?;
            let addresses: Vec<_> = self.handle.address().get().execute().try_collect().await?;
            Ok::<_, rtnetlink::Error>((links, addresses))
        };
        let (links, addresses) = match read.await {
            Ok(read) => read,
            Err(error) => {
                tracing::error!("cannot read links and addresses again: {error}");
                return;
            }
        };
        let virtual_addresses = self
            .instances
            .iter()
            .filter(|instance| instance.machine.state() == State::Master)
            .flat_map(|instance| &instance.addresses)
            .collect();
        let known = resync::Known {
            links: &self.links,
            sources: &self.sources,
            virtual_addresses,
        };
        for event in resync::lost_events(&known, links, addresses) {
            self.route_event(event, io).await;
        }
    }

    /// A link appeared, changed or went: the instances tracking it are
    /// told if that changes their FAULT state or priority. A link of an
    /// instance's or a tracked interface's name with another index is
    /// that interface created again: the instances take it up again, as
    /// keepalived does.
    async fn link_changed(
        &mut self,
        link: &netlink_packet_route::link::LinkMessage,
        exists: bool,
        io: &mut Io,
    ) {
        use netlink_packet_route::link::LinkAttribute;
        let index = link.header.index;
        let up = exists && addresses::is_up(link);
        let mut recreated = false;
        if exists
            && let Some(name) = link
                .attributes
                .iter()
                .find_map(|attribute| match attribute {
                    LinkAttribute::IfName(name) => Some(name.clone()),
                    _ => None,
                })
        {
            recreated = self.interface_recreated(&name, index, up, io).await;
        }
        if !exists
            && let Some(name) = self.instances.iter().find_map(|instance| {
                if instance.interface.index == index {
                    return Some(&instance.interface.name);
                }
                instance
                    .tracked_links
                    .iter()
                    .find(|tracked| tracked.index == index)
                    .map(|tracked| &tracked.name)
            })
        {
            // keepalived's line, for an interface an instance uses or
            // tracks.
            tracing::info!("Interface {name} deleted");
        }
        let changed = match self.links.get_mut(&index) {
            Some(known) if *known != up => {
                *known = up;
                true
            }
            // Not tracked, or no change (the kernel reports other flags
            // and statistics too).
            _ => false,
        };
        if !changed && !recreated {
            return;
        }
        if changed {
            let name = self.interface_name(index);
            tracing::info!("Netlink reports {name} {}", if up { "up" } else { "down" });
        }
        let now = Instant::now();
        for position in 0..self.instances.len() {
            self.track(position, now).await;
        }
    }

    /// Link `index` is called `name`: when an instance's interface or a
    /// tracked one of that name had another index, it was deleted and
    /// created again. The instances on it read it again (its addresses),
    /// open their sockets on it and rebuild their virtual addresses and
    /// routes for the new index; tracked links follow the new index.
    /// Whether anything was taken up again.
    async fn interface_recreated(&mut self, name: &str, index: u32, up: bool, io: &mut Io) -> bool {
        let mut recreated = false;
        for instance in &mut self.instances {
            for tracked in &mut instance.tracked_links {
                if tracked.name == name && tracked.index != index {
                    self.links.remove(&tracked.index);
                    tracked.index = index;
                    self.links.insert(index, up);
                    recreated = true;
                }
            }
        }
        let positions: Vec<usize> = (0..self.instances.len())
            .filter(|position| {
                let interface = &self.instances[*position].interface;
                interface.name == name && interface.index != index
            })
            .collect();
        if positions.is_empty() {
            return recreated;
        }
        let (interface, sources) = match addresses::interface_with_sources(&self.handle, name).await
        {
            Ok(read) => read,
            Err(error) => {
                tracing::error!("Interface {name} is back but cannot be read: {error}");
                return recreated;
            }
        };
        if interface.index != index {
            // Deleted again since; its own messages follow.
            return recreated;
        }
        let old_index = self.instances[positions[0]].interface.index;
        io.remove_receivers(old_index);
        self.links.remove(&old_index);
        self.sources.remove(&old_index);
        self.links.insert(index, interface.up);
        tracing::info!("Interface {name} added again (index {old_index} is now {index})");
        for position in positions {
            let instance = &mut self.instances[position];
            let instance_name = instance.machine.settings().name.clone();
            let family = instance.machine.settings().family;
            instance.interface = interface.clone();
            if !io
                .sockets
                .iter()
                .any(|(socket_index, socket)| *socket_index == index && socket.family() == family)
            {
                match ReceiveSocket::open(&interface, family) {
                    Ok(socket) => io.add_receiver(index, socket),
                    Err(error) => tracing::error!(
                        "({instance_name}) cannot open its receive socket on {name}: {error}"
                    ),
                }
            }
            let source = if instance.configured_source {
                instance.machine.settings().local_address
            } else {
                sources.source(family)
            };
            self.instances[position].sender = None;
            self.instances[position].has_source = false;
            self.open_sender(position, source);
            let instance = &mut self.instances[position];
            let mut announcers = HashMap::new();
            match virtual_addresses(
                &self.handle,
                &instance.model,
                &interface,
                &instance_name,
                &mut announcers,
            )
            .await
            {
                Ok((messages, announced)) => {
                    instance.addresses = messages;
                    instance.announced = announced;
                }
                Err(error) => tracing::error!(
                    "({instance_name}) cannot set up its virtual addresses on {name}: {error}"
                ),
            }
            (instance.routes, instance.rules) =
                routes_and_rules(&instance.model, &interface, &instance_name);
        }
        self.sources.insert(index, sources);
        true
    }

    /// Opens the instance's send socket from `source` (none: it has no
    /// address to send from, and stays in FAULT); the machine compares
    /// that address with a master's.
    fn open_sender(&mut self, position: usize, source: Option<IpAddr>) {
        let instance = &mut self.instances[position];
        let name = &instance.machine.settings().name;
        let sender = source.and_then(|source| {
            SendSocket::open(&instance.interface, source, instance.model.unicast_ttl)
                .inspect_err(|error| {
                    tracing::error!("({name}) cannot open its send socket from {source}: {error}")
                })
                .ok()
        });
        instance.has_source = sender.is_some();
        instance.sender = sender;
        if !instance.configured_source {
            instance.machine.set_local_address(source);
        }
    }

    /// An address appeared on or went from an interface, as keepalived's
    /// netlink_if_address_filter: one of an instance's virtual addresses
    /// deleted while it is master makes it step down (it takes over again
    /// after its skew time); otherwise the interface's source addresses
    /// change ([`SourceAddresses`]), and the instances sending from it
    /// follow: out of FAULT when an address appears on an interface that
    /// had none, into FAULT when the last one goes, on to another one when
    /// theirs goes and another is left.
    async fn address_changed(&mut self, message: &AddressMessage, added: bool) {
        let Some((address, link_scope)) = addresses::address_of(message) else {
            return;
        };
        let index = message.header.index;
        let now = Instant::now();
        let ours: Vec<usize> = (0..self.instances.len())
            .filter(|position| {
                self.instances[*position]
                    .addresses
                    .iter()
                    .any(|virtual_address| {
                        virtual_address.header.index == index
                            && addresses::address_of(virtual_address)
                                .is_some_and(|(virtual_address, _)| virtual_address == address)
                    })
            })
            .collect();
        if !ours.is_empty() {
            // Pulse's own removals come when the instance has left MASTER
            // already.
            if !added {
                for position in ours {
                    let instance = &self.instances[position];
                    if instance.machine.state() == State::Master {
                        tracing::info!(
                            "Netlink reflector reports IP {address} removed from {}",
                            instance.interface.name
                        );
                        self.handle_event(position, now, Event::VirtualAddressRemoved)
                            .await;
                    }
                }
            }
            // A virtual address is never a source (keepalived's
            // ignore_address_if_ours_or_link_local).
            return;
        }
        let Some(sources) = self.sources.get_mut(&index) else {
            return;
        };
        let change = if added {
            sources.added(address, link_scope)
        } else {
            sources.removed(address, link_scope)
        };
        let family = Family::of(&address);
        let on_interface = |instance: &Instance| {
            instance.interface.index == index
                && !instance.configured_source
                && instance.machine.settings().family == family
        };
        match change {
            SourceChange::Unchanged => {}
            SourceChange::Assigned(address) => {
                // Logged for the instances' family only: an IPv4
                // instance's interface gets its IPv6 link-local address
                // whenever it comes up.
                if self.instances.iter().any(on_interface) {
                    let name = self.interface_name(index);
                    tracing::info!("Assigned address {address} for interface {name}");
                }
                for position in 0..self.instances.len() {
                    let instance = &self.instances[position];
                    if on_interface(instance) && instance.sender.is_none() {
                        self.open_sender(position, Some(address));
                        self.track(position, now).await;
                    }
                }
            }
            SourceChange::Replaced { old, new } => {
                for position in 0..self.instances.len() {
                    let instance = &self.instances[position];
                    if on_interface(instance)
                        && instance.sender.as_ref().map(SendSocket::source) == Some(old)
                    {
                        tracing::info!(
                            "({}) sending from {new}: {old} went",
                            instance.machine.settings().name
                        );
                        self.open_sender(position, Some(new));
                        self.track(position, now).await;
                    }
                }
            }
            SourceChange::Deassigned(address) => {
                if self.instances.iter().any(on_interface) {
                    let name = self.interface_name(index);
                    tracing::info!("Deassigned address {address} from interface {name}");
                }
                for position in 0..self.instances.len() {
                    let instance = &self.instances[position];
                    if on_interface(instance)
                        && instance.sender.as_ref().map(SendSocket::source) == Some(address)
                    {
                        // FAULT first, while the sender is there for a
                        // master's priority 0 advert (keepalived's
                        // down_instance before the address is forgotten).
                        self.instances[position].has_source = false;
                        self.track(position, now).await;
                        self.open_sender(position, None);
                    }
                }
            }
        }
    }

    /// The name of interface `index`, an instance's or a tracked one.
    fn interface_name(&self, index: u32) -> String {
        self.instances
            .iter()
            .find_map(|instance| {
                if instance.interface.index == index {
                    return Some(instance.interface.name.clone());
                }
                instance
                    .tracked_links
                    .iter()
                    .find(|tracked| tracked.index == index)
                    .map(|tracked| tracked.name.clone())
            })
            .unwrap_or_else(|| format!("interface {index}"))
    }

    /// Applies the links' and scripts' state to an instance: FAULT when
    /// its interface (unless `dont_track_primary`) is down, or a tracked
    /// interface or script of weight 0 is down or failing; the weights of
    /// the others added to its priority. Starts the instance once no
    /// script of weight 0 awaits its first result.
    async fn track(&mut self, position: usize, now: Instant) {
        self.track_and_start(position, now, true).await;
    }

    /// [`Vrrp::track`], the start left out unless `start`: at startup
    /// every instance's FAULT state is known before any starts, so that a
    /// sync group with a member in FAULT starts in FAULT.
    async fn track_and_start(&mut self, position: usize, now: Instant, start: bool) {
        let instance = &self.instances[position];
        let up = |index: u32| self.links.get(&index).copied().unwrap_or(false);
        let mut fault =
            (instance.track_own_interface && !up(instance.interface.index)) || !instance.has_source;
        let mut priority = i32::from(instance.machine.settings().priority);
        let mut waiting = false;
        let effects = instance
            .tracked_links
            .iter()
            .map(|tracked| track::effect(up(tracked.index), tracked.weight, tracked.reverse))
            .chain(instance.tracked_scripts.iter().map(|tracked| {
                match self.scripts.get(&tracked.name).copied().flatten() {
                    Some(ok) => track::effect(ok, tracked.weight, tracked.reverse),
                    // Before its first result a script weighs nothing.
                    None => {
                        waiting |= tracked.weight == 0;
                        track::Effect::Adjust(0)
                    }
                }
            }))
            .chain(instance.tracked_files.iter().map(|tracked| {
                let value = self.files.get(&tracked.name).copied().unwrap_or(0);
                track::file_effect(value, tracked.weight, tracked.reverse)
            }))
            .collect::<Vec<_>>();
        for effect in effects {
            match effect {
                track::Effect::Fault => fault = true,
                track::Effect::Adjust(weight) => priority += weight,
            }
        }
        let priority = priority.clamp(1, 255) as u8;
        let was_faulted = instance.faulted;
        let old_priority = instance.tracked_priority;
        self.instances[position].faulted = fault;
        self.instances[position].tracked_priority = priority;
        if priority != old_priority {
            let name = &self.instances[position].machine.settings().name;
            tracing::info!(
                "({name}) Changing effective priority from {old_priority} to {priority}"
            );
            self.handle_event(position, now, Event::PriorityChange(priority))
                .await;
        }
        if fault != was_faulted {
            let event = if fault {
                Event::InterfaceDown
            } else {
                Event::InterfaceUp
            };
            self.handle_event(position, now, event).await;
            if let Some((group, member)) = self.instances[position].group {
                let decision = self.groups[group].coordinator.fault_changed(member, fault);
                let mut followups = Followups::default();
                self.follow(group, decision, &mut followups);
                self.carry_out(now, followups).await;
            }
        }
        if start && !waiting && !self.instances[position].started {
            self.instances[position].started = true;
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
            if instance.interface.index != index
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
            let group = &self.groups[group];
            notify(
                &self.configuration,
                &group.model.notify,
                "GROUP",
                group.coordinator.name(),
                state,
                0,
            );
        }
    }

    /// Logs a group's decision and queues its orders.
    fn follow(&self, group: usize, decision: Decision, followups: &mut Followups) {
        let Decision { transition, orders } = decision;
        if let Some((from, to)) = transition {
            let name = self.groups[group].coordinator.name();
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
            followups.group_transitions.push((group, to));
        }
        for (member, event) in orders {
            followups
                .events
                .push_back((self.groups[group].members[member], event));
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

    async fn apply(&mut self, position: usize, action: Action, followups: &mut Followups) {
        let instance = &mut self.instances[position];
        let name = instance.machine.settings().name.clone();
        match action {
            Action::SendAdvert { priority } => {
                let Some(sender) = &instance.sender else {
                    return;
                };
                let advert = instance.machine.advert(priority);
                let source = sender.source();
                for destination in &instance.destinations {
                    let bytes = advert.to_bytes(&source, destination);
                    if let Err(error) = sender.send(&bytes, *destination) {
                        tracing::warn!("({name}) cannot send an advert to {destination}: {error}");
                    }
                }
            }
            Action::AddAddresses => {
                // keepalived's order: the drop rule first, so that no
                // packet to an address is taken before it.
                if !instance.dropped.is_empty() {
                    tracing::info!("({name}) setting firewall drop rule");
                    if let Err(error) = self.firewall.drop_addresses(&instance.dropped) {
                        tracing::error!("({name}) cannot set the firewall drop rule: {error}");
                    }
                }
                tracing::info!("({name}) setting the virtual addresses");
                for message in &instance.addresses {
                    if let Err(error) = addresses::add(&self.handle, message.clone()).await {
                        tracing::error!("({name}) cannot add a virtual address: {error}");
                    }
                }
                // After the addresses: a route's source or gateway may be
                // one of them.
                for message in &instance.routes {
                    if let Err(error) = routes::add_route(&self.handle, message.clone()).await {
                        tracing::error!("({name}) cannot add a virtual route: {error}");
                    }
                }
                for message in &instance.rules {
                    if let Err(error) = routes::add_rule(&self.handle, message.clone()).await {
                        tracing::error!("({name}) cannot add a virtual rule: {error}");
                    }
                }
            }
            Action::RemoveAddresses => {
                // No announcement of addresses this router no longer has.
                if let Some(announcing) = instance.announcing.take() {
                    announcing.abort();
                }
                tracing::info!("({name}) removing the virtual addresses");
                for message in &instance.rules {
                    if let Err(error) = routes::remove_rule(&self.handle, message.clone()).await {
                        tracing::error!("({name}) cannot remove a virtual rule: {error}");
                    }
                }
                for message in &instance.routes {
                    if let Err(error) = routes::remove_route(&self.handle, message.clone()).await {
                        tracing::error!("({name}) cannot remove a virtual route: {error}");
                    }
                }
                for message in &instance.addresses {
                    if let Err(error) = addresses::remove(&self.handle, message.clone()).await {
                        tracing::error!("({name}) cannot remove a virtual address: {error}");
                    }
                }
                if !instance.dropped.is_empty() {
                    tracing::info!("({name}) removing firewall drop rule");
                    if let Err(error) = self.firewall.accept_addresses(&instance.dropped) {
                        tracing::error!("({name}) cannot remove the firewall drop rule: {error}");
                    }
                }
            }
            Action::Announce { repeat } => {
                if let Some(previous) = instance.announcing.take() {
                    previous.abort();
                }
                instance.announcing = Some(tokio::spawn(announce(
                    instance.announced.clone(),
                    repeat,
                    instance.garp_interval,
                    instance.gna_interval,
                    name.clone(),
                )));
            }
            Action::EnterState(state) => {
                if state == State::Initialize {
                    tracing::info!("({name}) Stopped");
                }
                if let Some(sync) = &self.configuration.global.lvs_sync_daemon
                    && sync.instance == name
                {
                    follow_sync_daemon(
                        sync.clone(),
                        state,
                        instance.machine.settings().virtual_router_id,
                    );
                }
                notify(
                    &self.configuration,
                    &instance.notify,
                    "INSTANCE",
                    &name,
                    state,
                    instance.machine.effective_priority(),
                );
                if let Some((group, member)) = instance.group {
                    let decision = self.groups[group].coordinator.entered(member, state);
                    self.follow(group, decision, followups);
                }
            }
            Action::RequestMaster => {
                let Some((group, member)) = instance.group else {
                    return;
                };
                let group = &self.groups[group];
                let allowed = group.coordinator.may_become_master(member, |other| {
                    self.instances[group.members[other]].machine.wants_master()
                });
                if allowed {
                    followups.events.push_back((position, Event::SyncMaster));
                } else {
                    tracing::debug!(
                        "({name}) would become master; waiting for the rest of sync group {}",
                        group.coordinator.name()
                    );
                }
            }
            Action::MasterReceivedLowerPriority { source } => {
                tracing::info!(
                    "({name}) Master received an advert with a lower priority from {source}"
                );
                if let Some(script) = &instance.notify.master_rx_lower_priority {
                    spawn_script(&self.configuration, script, &[]);
                }
            }
        }
    }
}

/// Each instance's sync group, by the group's index in the
/// configuration; a name that is no instance is logged and left out, as
/// keepalived does.
fn memberships(configuration: &config::Config) -> HashMap<String, usize> {
    let mut memberships = HashMap::new();
    for (index, group) in configuration.sync_groups.iter().enumerate() {
        for name in &group.instances {
            if !configuration
                .vrrp_instances
                .iter()
                .any(|instance| instance.name == *name)
            {
                tracing::warn!(
                    "Virtual router {name} specified in sync group {} doesn't exist - ignoring",
                    group.name
                );
                continue;
            }
            // The configuration keeps an instance in its first group only.
            memberships.entry(name.clone()).or_insert(index);
        }
    }
    memberships
}

/// What an instance tracks.
struct TrackedObjects {
    links: Vec<TrackedLink>,
    scripts: Vec<TrackedScript>,
    files: Vec<TrackedFile>,
}

/// Adds a sync group's tracking to a member's `own`, as keepalived's
/// sync_group_tracking_init: without weights when a member of the group
/// owns its addresses (`owner`); an object the member tracks too counts
/// once, the group's way, each with keepalived's log line.
fn merge_group_tracking(
    name: &str,
    group_name: &str,
    owner: bool,
    own: &mut TrackedObjects,
    mut group: TrackedObjects,
) {
    if owner {
        for link in group.links.iter_mut().filter(|link| link.weight != 0) {
            tracing::warn!(
                "({group_name}) Cannot have weighted track interface '{}' with member having priority 255 - clearing weight",
                link.name
            );
            link.weight = 0;
        }
        for script in group.scripts.iter_mut().filter(|script| script.weight != 0) {
            tracing::warn!(
                "({group_name}) Cannot have weighted track script '{}' with member having priority 255 - clearing weight",
                script.name
            );
            script.weight = 0;
        }
        for file in group.files.iter_mut().filter(|file| file.weight != 0) {
            tracing::warn!(
                "({group_name}) Cannot have weighted track file '{}' with member having priority 255 - setting weight 0",
                file.name
            );
            file.weight = 0;
        }
    }
    keep_once(
        &mut own.links,
        &group.links,
        |link, other| link.index == other.index,
        |link| {
            tracing::warn!(
                "({name}) track_interface {} is configured on VRRP instance and sync group. Remove vrrp instance or sync group config",
                link.name
            )
        },
    );
    keep_once(
        &mut own.scripts,
        &group.scripts,
        |script, other| script.name == other.name,
        |script| {
            tracing::warn!(
                "({name}) track_script {} is configured on VRRP instance and sync group. Remove vrrp instance config",
                script.name
            )
        },
    );
    keep_once(
        &mut own.files,
        &group.files,
        |file, other| file.name == other.name,
        |file| {
            tracing::warn!(
                "({name}) track_file {} is configured on VRRP instance and sync group. Remove vrrp instance config",
                file.name
            )
        },
    );
    own.links.append(&mut group.links);
    own.scripts.append(&mut group.scripts);
    own.files.append(&mut group.files);
}

/// Drops from `own` what `group` tracks too (`same`), with `warning` for
/// each: the group's entry counts, once.
fn keep_once<T>(
    own: &mut Vec<T>,
    group: &[T],
    same: impl Fn(&T, &T) -> bool,
    warning: impl Fn(&T),
) {
    own.retain(|item| {
        let twice = group.iter().any(|other| same(item, other));
        if twice {
            warning(item);
        }
        !twice
    });
}

/// keepalived 2.2's rule for the members of a sync group without
/// `sync_group_tracking_weight` (or `global_tracking`): a weighted tracked
/// interface counts as unweighted (down means FAULT), a weighted script is
/// ignored, a file with the default weight (1) counts as weight 0 and one
/// with another weight is ignored, each with keepalived's log line.
fn ignore_weights(
    name: &str,
    links: &mut [TrackedLink],
    scripts: &mut Vec<TrackedScript>,
    files: &mut Vec<TrackedFile>,
) {
    for link in links.iter_mut().filter(|link| link.weight != 0) {
        tracing::warn!(
            "({name}) ignoring weight of tracked interface {} due to SYNC group",
            link.name
        );
        link.weight = 0;
    }
    scripts.retain(|script| {
        if script.weight != 0 {
            tracing::warn!(
                "({name}) ignoring tracked script {} with weights due to SYNC group",
                script.name
            );
        }
        script.weight == 0
    });
    files.retain_mut(|file| match file.weight {
        0 => true,
        1 => {
            tracing::warn!(
                "({name}) ignoring weight from tracked file {} due to SYNC group - specify weight 0",
                file.name
            );
            file.weight = 0;
            true
        }
        weight => {
            tracing::warn!(
                "({name}) ignoring tracked file {} with weight {weight} due to SYNC group",
                file.name
            );
            false
        }
    });
}

/// The `track_interface` entries of `tracking`, their links' state recorded
/// in `links`.
async fn tracked_links(
    handle: &rtnetlink::Handle,
    tracking: &config::Tracking,
    name: &str,
    links: &mut HashMap<u32, bool>,
) -> Result<Vec<TrackedLink>, VrrpError> {
    let mut tracked_links = Vec::new();
    for tracked in &tracking.interfaces {
        let link = addresses::link(handle, &tracked.name)
            .await
            .map_err(|error| VrrpError::Interface {
                instance: name.to_owned(),
                interface: tracked.name.clone(),
                error,
            })?;
        links.insert(link.header.index, addresses::is_up(&link));
        tracked_links.push(TrackedLink {
            name: tracked.name.clone(),
            index: link.header.index,
            weight: tracked.weight.unwrap_or(0),
            reverse: tracked.reverse,
        });
    }
    Ok(tracked_links)
}

/// The `track_script` entries of `tracking`, each script's initial state
/// recorded in `scripts`.
fn tracked_scripts(
    configuration: &config::Config,
    tracking: &config::Tracking,
    name: &str,
    scripts: &mut HashMap<String, Option<bool>>,
) -> Vec<TrackedScript> {
    let mut tracked_scripts = Vec::new();
    for tracked in &tracking.scripts {
        let Some(script) = configuration
            .vrrp_scripts
            .iter()
            .find(|script| script.name == tracked.name)
        else {
            // keepalived ignores it too, with a warning.
            tracing::warn!(
                "({name}) track_script {}: no vrrp_script of that name; ignored",
                tracked.name
            );
            continue;
        };
        scripts.insert(script.name.clone(), script.init_fail.then_some(false));
        tracked_scripts.push(TrackedScript {
            name: script.name.clone(),
            weight: tracked.weight.unwrap_or(script.weight),
            reverse: tracked.reverse || script.weight_reverse,
        });
    }
    tracked_scripts
}

/// The `track_file` entries of `tracking`, each file initialised
/// (`init_file`) and its value recorded in `files`.
fn tracked_files(
    configuration: &config::Config,
    tracking: &config::Tracking,
    name: &str,
    files: &mut HashMap<String, i64>,
) -> Vec<TrackedFile> {
    let mut tracked_files = Vec::new();
    for tracked in &tracking.files {
        let Some((file, path)) = configuration
            .track_files
            .iter()
            .find(|file| file.name == tracked.name)
            .and_then(|file| Some((file, std::path::Path::new(file.file.as_ref()?))))
        else {
            tracing::warn!(
                "({name}) track_file {}: no track_file with a file of that name; ignored",
                tracked.name
            );
            continue;
        };
        if let Some(init) = &file.init_file
            && let Err(error) = track::initialise_file(path, init)
        {
            tracing::warn!(
                "track_file {}: cannot write {}: {error}",
                file.name,
                path.display()
            );
        }
        files.insert(file.name.clone(), track::read_file_value(path));
        tracked_files.push(TrackedFile {
            name: file.name.clone(),
            weight: tracked.weight.unwrap_or(file.weight),
            reverse: tracked.reverse || file.weight_reverse,
        });
    }
    tracked_files
}

/// Where the adverts go: the multicast group (`mcast_dst_ip`, else
/// `vrrp_mcast_group4/6`, else RFC's), or every unicast peer.
fn destinations(
    model: &config::VrrpInstance,
    settings: &InstanceSettings,
    defaults: &config::VrrpDefaults,
) -> Vec<IpAddr> {
    if settings.unicast_peers.is_empty() {
        let group = model
            .multicast_destination
            .or(match settings.family {
                Family::Ipv4 => defaults.mcast_group4,
                Family::Ipv6 => defaults.mcast_group6,
            })
            .unwrap_or_else(|| io::group(settings.family));
        vec![group]
    } else {
        settings
            .unicast_peers
            .iter()
            .map(|peer| peer.address)
            .collect()
    }
}

/// `virtual_ipaddress` and `virtual_ipaddress_excluded` as rtnetlink
/// messages, and the addresses announced, each on its own interface (the
/// instance's, or its `dev`), as keepalived does.
async fn virtual_addresses(
    handle: &rtnetlink::Handle,
    model: &config::VrrpInstance,
    interface: &Interface,
    name: &str,
    announcers: &mut HashMap<u32, Arc<Announcer>>,
) -> Result<(Vec<AddressMessage>, Vec<(Arc<Announcer>, IpAddr)>), VrrpError> {
    let mut messages = Vec::new();
    let mut announced = Vec::new();
    for address in model
        .virtual_addresses
        .iter()
        .chain(&model.excluded_addresses)
    {
        let device = match &address.device {
            None => interface.clone(),
            Some(device) if *device == interface.name => interface.clone(),
            Some(device) => addresses::interface(handle, device)
                .await
                .map_err(|error| VrrpError::Interface {
                    instance: name.to_owned(),
                    interface: device.clone(),
                    error,
                })?,
        };
        messages.push(addresses::message(address, device.index));
        let announcer = match announcers.get(&device.index) {
            Some(announcer) => announcer.clone(),
            None => {
                let announcer = Arc::new(
                    Announcer::open(&device)
                        .map_err(|error| VrrpError::Socket(name.to_owned(), error))?,
                );
                announcers.insert(device.index, announcer.clone());
                announcer
            }
        };
        announced.push((announcer, address.address.address));
    }
    Ok((messages, announced))
}

/// `virtual_routes` and `virtual_rules` as rtnetlink messages; a line
/// pulse cannot express is logged and left out.
fn routes_and_rules(
    model: &config::VrrpInstance,
    interface: &Interface,
    name: &str,
) -> (Vec<RouteMessage>, Vec<RuleMessage>) {
    let mut route_messages = Vec::new();
    for route in &model.virtual_routes {
        match routes::route_message(route, interface.index) {
            Ok(message) => {
                if !route.tuning_not_applied.is_empty() {
                    tracing::warn!(
                        "({name}) virtual route {}: added without {}",
                        route.destination,
                        routes::quoted(&route.tuning_not_applied)
                    );
                }
                route_messages.push(message);
            }
            Err(why) => tracing::warn!(
                "({name}) virtual route {}: {why}; not added",
                route.destination
            ),
        }
    }
    let mut rule_messages = Vec::new();
    for rule in &model.virtual_rules {
        match routes::rule_message(rule) {
            Ok(message) => {
                if !rule.tuning_not_applied.is_empty() {
                    tracing::warn!(
                        "({name}) virtual rule {}: added without {}",
                        rule.options.join(" "),
                        routes::quoted(&rule.tuning_not_applied)
                    );
                }
                rule_messages.push(message);
            }
            Err(why) => tracing::warn!(
                "({name}) virtual rule {}: {why}; not added",
                rule.options.join(" ")
            ),
        }
    }
    (route_messages, rule_messages)
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

/// `repeat` rounds of one message per address, `garp_interval` (IPv4) or
/// `gna_interval` (IPv6) apart, as keepalived spaces them.
async fn announce(
    addresses: Vec<(Arc<Announcer>, IpAddr)>,
    repeat: u32,
    garp_interval: Duration,
    gna_interval: Duration,
    name: String,
) {
    tracing::info!(
        "({name}) announcing {} {repeat} time(s) (gratuitous ARP, unsolicited neighbour \
         advertisement)",
        addresses
            .iter()
            .map(|(announcer, address)| format!("{address} on {}", announcer.interface_name()))
            .collect::<Vec<_>>()
            .join(", ")
    );
    for _ in 0..repeat {
        for (announcer, address) in &addresses {
            if let Err(error) = announcer.announce(*address) {
                tracing::warn!(
                    "({name}) cannot announce {address} on {}: {error}",
                    announcer.interface_name()
                );
            }
            let interval = match address {
                IpAddr::V4(_) => garp_interval,
                IpAddr::V6(_) => gna_interval,
            };
            if !interval.is_zero() {
                tokio::time::sleep(interval).await;
            }
        }
    }
}

/// `lvs_sync_daemon` follows its instance, as keepalived's VRRP process
/// has it: master daemon while MASTER, backup daemon otherwise (leaving
/// MASTER for FAULT included), none once stopped.
///
/// The IPVS calls run on a thread of their own, in order, and the VRRP
/// loop never waits for them: stopping a sync daemon waits for the
/// kernel's thread to end, which has been seen to take over 30 s in the
/// emulated lab, and adverts must go out meanwhile.
fn follow_sync_daemon(sync: config::LvsSyncDaemon, state: State, virtual_router_id: u8) {
    sync_daemon_worker(SyncRequest::Follow(sync, state, virtual_router_id));
}

/// Waits, at most `limit`, until the sync daemon has followed every state
/// given so far (at stop: keepalived's daemons stop with it).
pub fn sync_daemon_settled(limit: Duration) -> bool {
    let (sender, receiver) = std::sync::mpsc::channel();
    sync_daemon_worker(SyncRequest::Barrier(sender));
    receiver.recv_timeout(limit).is_ok()
}

enum SyncRequest {
    Follow(config::LvsSyncDaemon, State, u8),
    Barrier(std::sync::mpsc::Sender<()>),
}

fn sync_daemon_worker(request: SyncRequest) {
    static WORKER: std::sync::OnceLock<std::sync::Mutex<std::sync::mpsc::Sender<SyncRequest>>> =
        std::sync::OnceLock::new();
    let worker = WORKER.get_or_init(|| {
        let (sender, receiver) = std::sync::mpsc::channel::<SyncRequest>();
        let spawned = std::thread::Builder::new()
            .name("sync-daemon".into())
            .spawn(move || {
                for request in receiver {
                    let (sync, state, virtual_router_id) = match request {
                        SyncRequest::Follow(sync, state, virtual_router_id) => {
                            (sync, state, virtual_router_id)
                        }
                        SyncRequest::Barrier(done) => {
                            let _ = done.send(());
                            continue;
                        }
                    };
                    let sync_state = match state {
                        State::Master => Some(ipvs::SyncState::Master),
                        State::Backup | State::Fault => Some(ipvs::SyncState::Backup),
                        State::Initialize => None,
                    };
                    let outcome = ipvs::Client::connect().and_then(|mut client| match sync_state {
                        Some(sync_state) => crate::sync_daemon::follow(
                            &mut client,
                            &crate::sync_daemon::daemon(&sync, sync_state, virtual_router_id),
                        ),
                        None => crate::sync_daemon::stop(&mut client),
                    });
                    if let Err(error) = outcome {
                        tracing::error!("lvs_sync_daemon: {error}");
                    }
                }
            });
        if let Err(error) = spawned {
            tracing::error!("lvs_sync_daemon: cannot start its thread: {error}");
        }
        std::sync::Mutex::new(sender)
    });
    let _ = worker.lock().expect("never poisoned").send(request);
}

/// Runs an instance's or a sync group's notify scripts for `state`: the
/// state's own (`notify_master`...) as written, and `notify` with
/// keepalived's four arguments: `INSTANCE` or `GROUP`, the name, the state
/// and the priority (0 for a group, as keepalived's send_group_notifies).
fn notify(
    configuration: &config::Config,
    scripts: &config::Notify,
    kind: &str,
    name: &str,
    state: State,
    priority: u8,
) {
    let (own, word) = match state {
        State::Master => (&scripts.master, "MASTER"),
        State::Backup => (&scripts.backup, "BACKUP"),
        State::Fault => (&scripts.fault, "FAULT"),
        State::Initialize => (&scripts.stop, "STOP"),
    };
    if let Some(script) = own {
        spawn_script(configuration, script, &[]);
    }
    if let Some(script) = &scripts.any {
        spawn_script(
            configuration,
            script,
            &[kind, name, word, &priority.to_string()],
        );
    }
}

/// Starts a script and logs how it ended, never waiting for it here.
fn spawn_script(configuration: &config::Config, script: &config::Script, arguments: &[&str]) {
    match crate::scripts::command(script, &configuration.global) {
        Ok(mut command) => {
            command.args(arguments);
            match command.spawn() {
                Ok(mut child) => {
                    let what = script.command.clone();
                    tokio::spawn(async move {
                        match child.wait().await {
                            Ok(status) if status.success() => tracing::debug!("{what}: {status}"),
                            Ok(status) => tracing::warn!("{what}: {status}"),
                            Err(error) => tracing::warn!("{what}: {error}"),
                        }
                    });
                }
                Err(error) => tracing::error!("cannot run {}: {error}", script.command),
            }
        }
        Err(why) => tracing::error!("cannot run {}: {why}", script.command),
    }
}

#[cfg(test)]
mod tests {
    use std::net::Ipv4Addr;

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

    fn link(name: &str, index: u32, weight: i32) -> TrackedLink {
        TrackedLink {
            name: name.into(),
            index,
            weight,
            reverse: false,
        }
    }

    fn script(name: &str, weight: i32) -> TrackedScript {
        TrackedScript {
            name: name.into(),
            weight,
            reverse: false,
        }
    }

    fn file(name: &str, weight: i32) -> TrackedFile {
        TrackedFile {
            name: name.into(),
            weight,
            reverse: false,
        }
    }

    /// Names and weights.
    type Weights = Vec<(String, i32)>;

    fn weights(objects: &TrackedObjects) -> (Weights, Weights, Weights) {
        (
            objects
                .links
                .iter()
                .map(|link| (link.name.clone(), link.weight))
                .collect(),
            objects
                .scripts
                .iter()
                .map(|script| (script.name.clone(), script.weight))
                .collect(),
            objects
                .files
                .iter()
                .map(|file| (file.name.clone(), file.weight))
                .collect(),
        )
    }

    fn named(pairs: &[(&str, i32)]) -> Weights {
        pairs
            .iter()
            .map(|(name, weight)| ((*name).to_owned(), *weight))
            .collect()
    }

    #[test]
    fn a_sync_group_member_s_weights_go_as_keepalived_s() {
        let mut objects = TrackedObjects {
            links: vec![link("eth1", 3, 10), link("eth2", 4, 0)],
            scripts: vec![script("weighted", -20), script("fault", 0)],
            files: vec![file("default", 1), file("weighted", 5), file("zero", 0)],
        };
        ignore_weights(
            "VI_1",
            &mut objects.links,
            &mut objects.scripts,
            &mut objects.files,
        );
        assert_eq!(
            weights(&objects),
            (
                named(&[("eth1", 0), ("eth2", 0)]),
                named(&[("fault", 0)]),
                named(&[("default", 0), ("zero", 0)]),
            )
        );
    }

    #[test]
    fn a_sync_group_s_tracking_applies_to_its_members_once() {
        let group = || TrackedObjects {
            links: vec![link("eth1", 3, 10)],
            scripts: vec![script("check", -20)],
            files: vec![file("value", 2)],
        };
        let mut own = TrackedObjects {
            links: vec![link("eth1", 3, 0), link("eth2", 4, 0)],
            scripts: vec![script("check", 0)],
            files: Vec::new(),
        };
        merge_group_tracking("VI_1", "G1", false, &mut own, group());
        assert_eq!(
            weights(&own),
            (
                named(&[("eth2", 0), ("eth1", 10)]),
                named(&[("check", -20)]),
                named(&[("value", 2)]),
            )
        );
        // A member owning its addresses: the group's weights go.
        let mut own = TrackedObjects {
            links: Vec::new(),
            scripts: Vec::new(),
            files: Vec::new(),
        };
        merge_group_tracking("VI_1", "G1", true, &mut own, group());
        assert_eq!(
            weights(&own),
            (
                named(&[("eth1", 0)]),
                named(&[("check", 0)]),
                named(&[("value", 0)]),
            )
        );
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
