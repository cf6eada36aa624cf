//! What a configuration asks of VRRP, without I/O: each `vrrp_instance`
//! resolved into an [`InstancePlan`] (its settings, what it tracks, where
//! its adverts go, what it drops without accept mode), the sync groups'
//! members, and, at a reload, which running instances keep their state
//! ([`reload`]). The task ([`super::task`]) gives these plans interfaces,
//! sockets and machines.
//!
//! The rules, each with where keepalived 2.2.7 has it:
//!
//! - An instance needs a `virtual_router_id`, a priority other than 0 and a
//!   supported version and authentication ([`InstanceSettings::from_model`]),
//!   and an `interface`: without one the configuration cannot run.
//! - A sync group's members are the instances it names, in its order; a
//!   name that is no instance is left out with a warning, and an instance
//!   named by two groups belongs to the first (vrrp_parser.c, vrrp.c).
//! - Tracking (vrrp.c `vrrp_complete_instance`, `sync_group_tracking_init`):
//!   a `track_script` or `track_file` entry takes its weight from the
//!   entry, else from the script's or file's block; one naming no block is
//!   left out with a warning. In a sync group without
//!   `sync_group_tracking_weight` (or `global_tracking`) a member's weights
//!   go ([`ignore_weights`]); the group's own tracking is added to every
//!   member, without weights when a member owns its addresses
//!   (priority 255), and an object both track counts once, the group's way
//!   ([`merge_group_tracking`]).
//! - `track_process` (vrrp_track.c `alloc_track_process`, vrrp.c
//!   `add_vrrp_to_track_process`): the entry's weight, else the block's; a
//!   name tracked twice by one instance or group counts once. Weights stay
//!   in sync group members (keepalived 2.2.7 clears those of interfaces,
//!   scripts and files, not those of processes); a process both the
//!   member and its group track keeps the member's entry, with the
//!   group's weight unless the member's is 0.
//! - Adverts go to `mcast_dst_ip`, else `vrrp_mcast_group4/6`, else the
//!   RFC's group; with unicast peers, to each peer ([`destinations`]).
//! - `unicast_fault_no_peer` without any `unicast_peer` holds the instance
//!   in FAULT for as long as the configuration runs, where keepalived
//!   would otherwise fall back to multicast (vrrp.c
//!   `vrrp_complete_instance`: a configuration fault).
//! - Without accept mode a master drops traffic to and from its
//!   `virtual_ipaddress` and `virtual_ipaddress_excluded` (keepalived's
//!   `vips` set holds both).
//! - `use_vmac` gives an instance a macvlan ([`VmacPlan`]): its name is
//!   unique among the instances' (vmac.rs `names`, keepalived's
//!   `create_vmac_name`); `vmac_xmit_base` goes without `use_vmac` and in
//!   strict mode, each with keepalived's error (vrrp.c).
//! - A reload keeps an instance's state when its block, the global VRRP
//!   settings and the definitions of the scripts and files it tracks are
//!   unchanged, and so is its sync group (the same block, the same members,
//!   all of them kept); an instance in no group is kept only if it is in
//!   none after the reload either. Every other instance stops and the new
//!   ones start ([`reload`]).
//! - Of the instances a reload stops, those keepalived would find no
//!   counterpart for in the new file (the same VRID, family and interface,
//!   unicast or not, and the same source if unicast or multicast group if
//!   not: vrrp.c `vrrp_exist`) are removed, not restarted ([`removed`]):
//!   their last notify is keepalived's for a deleted instance, not STOP
//!   ([`removal_notice`]).

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Arc;

use fulcrum_config::model as config;

use super::io;
use super::packet::Family;
use super::settings::{InstanceSettings, SettingsError};
use super::vmac::{self, VmacPlan};

/// Why a configuration's VRRP part cannot run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlanError {
    #[error(transparent)]
    Settings(#[from] SettingsError),
    #[error("({0}) no interface given")]
    NoInterface(String),
}

/// An object an instance tracks: a link, a script or a file, by name, with
/// the weight it adds (0: failing means FAULT) and whether the weight is
/// reversed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tracked {
    pub name: String,
    pub weight: i32,
    pub reverse: bool,
}

/// What an instance tracks.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TrackedObjects {
    pub links: Vec<Tracked>,
    pub scripts: Vec<Tracked>,
    pub files: Vec<Tracked>,
    pub processes: Vec<Tracked>,
    /// `track_bfd`: the `bfd_instance`s whose sessions count.
    pub bfds: Vec<Tracked>,
}

/// One `vrrp_instance`, resolved.
#[derive(Debug, Clone)]
pub struct InstancePlan {
    /// Its block, to tell at a reload whether it changed.
    pub model: config::VrrpInstance,
    /// With `local_address` as configured (`mcast_src_ip`,
    /// `unicast_src_ip`), `None` when the interface's address is taken.
    pub settings: InstanceSettings,
    pub interface: String,
    /// The multicast group, or the unicast peers.
    pub destinations: Vec<IpAddr>,
    /// What a master without accept mode drops traffic to and from; empty
    /// with accept mode.
    pub dropped: Vec<IpAddr>,
    /// Whether its own interface going down means FAULT (not
    /// `dont_track_primary`).
    pub track_own_interface: bool,
    pub tracked: TrackedObjects,
    /// Its sync group (an index into [`Plan::groups`]) and its place among
    /// the group's members.
    pub group: Option<(usize, usize)>,
    /// keepalived's configuration faults (`num_config_faults`): the
    /// instance stays in FAULT whatever its links and tracking say. Set by
    /// `unicast_fault_no_peer` without unicast peers.
    pub configuration_fault: bool,
    /// `notify_priority_changes`: the instance's, else its sync group's,
    /// else the global `vrrp_notify_priority_changes` (vrrp.c
    /// `vrrp_complete_instance`). keepalived 2.2.7 resolves it and shows it
    /// in its data dump, and nothing else reads it: no notify, no FIFO
    /// line.
    pub notify_priority_changes: bool,
    /// `use_vmac`: the macvlan it runs on ([`vmac`]).
    pub vmac: Option<VmacPlan>,
}

impl InstancePlan {
    pub fn name(&self) -> &str {
        &self.settings.name
    }

    /// Whether adverts go from the configured address rather than the
    /// interface's (keepalived's `saddr_from_config`).
    pub fn configured_source(&self) -> bool {
        self.settings.local_address.is_some()
    }
}

/// One `vrrp_sync_group` with at least one member.
#[derive(Debug, Clone)]
pub struct GroupPlan {
    /// Its block, to tell at a reload whether it changed.
    pub model: config::SyncGroup,
    /// The members' positions in [`Plan::instances`].
    pub members: Vec<usize>,
}

/// A `track_file` some instance tracks, with a file to read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrackedFile {
    pub name: String,
    pub path: String,
    pub init_file: Option<Vec<String>>,
}

/// The VRRP part of a configuration.
#[derive(Debug, Clone)]
pub struct Plan {
    pub configuration: Arc<config::Config>,
    pub instances: Vec<InstancePlan>,
    pub groups: Vec<GroupPlan>,
    /// The `vrrp_script`s some instance tracks, in the configuration's
    /// order.
    pub scripts: Vec<config::VrrpScript>,
    /// The `track_file`s some instance tracks, in the configuration's
    /// order.
    pub files: Vec<TrackedFile>,
    /// The `vrrp_track_process`es some instance tracks, in the
    /// configuration's order.
    pub processes: Vec<config::TrackProcess>,
    /// The BFD sessions of the `bfd_instance`s some instance tracks, in
    /// the configuration's order.
    pub bfds: Vec<nanny::spec::BfdSpec>,
    /// keepalived's warnings about the tracking and the groups, for the
    /// log, in the order keepalived gives them.
    pub warnings: Vec<String>,
}

impl Plan {
    /// Resolves the configuration's instances and sync groups.
    pub fn from_config(configuration: Arc<config::Config>) -> Result<Plan, PlanError> {
        let mut warnings = Vec::new();
        let defaults = &configuration.global.vrrp;
        let memberships = memberships(&configuration, &mut warnings);
        let vmac_names = vmac_names(&configuration)?;
        let mut instances = Vec::new();
        for (model, vmac_name) in configuration.vrrp_instances.iter().zip(vmac_names) {
            let settings = InstanceSettings::from_model(model, defaults)?;
            let name = settings.name.clone();
            let interface = model
                .interface
                .clone()
                .ok_or_else(|| PlanError::NoInterface(name.clone()))?;
            let mut tracked =
                tracked_objects(&configuration, &model.tracking, &name, &mut warnings);
            let membership = memberships.get(&model.name).copied();
            // An address owner's priority never moves: keepalived
            // (vrrp.c `vrrp_complete_instance`) drops its weighted
            // track_bfd, as a sync group's without tracking weights (below).
            let sync_without_weights = membership.is_some_and(|index| {
                let group = &configuration.sync_groups[index];
                !group.sync_group_tracking_weight && !group.global_tracking
            });
            if settings.priority == 255 && !sync_without_weights {
                ignore_weighted_bfds(&name, "address_owner", &mut tracked, &mut warnings);
            }
            if let Some(group_index) = membership {
                let group = &configuration.sync_groups[group_index];
                // keepalived (vrrp.c): a sync group's members must agree on
                // their priorities, so their own weights go unless the
                // group allows them.
                if !group.sync_group_tracking_weight && !group.global_tracking {
                    ignore_weights(&name, &mut tracked, &mut warnings);
                    ignore_weighted_bfds(&name, "SYNC group", &mut tracked, &mut warnings);
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
                let group_tracking =
                    tracked_objects(&configuration, &group.tracking, &group.name, &mut warnings);
                merge_group_tracking(
                    &name,
                    &group.name,
                    owner,
                    &mut tracked,
                    group_tracking,
                    &mut warnings,
                );
            }
            let configuration_fault = model.unicast_fault_no_peer && model.unicast_peers.is_empty();
            if configuration_fault {
                warnings.push(format!(
                    "({name}) Cannot use unicast without any peers - going to fault state"
                ));
            }
            let destinations = destinations(model, &settings, defaults);
            let dropped = if settings.accept {
                Vec::new()
            } else {
                model
                    .virtual_addresses
                    .iter()
                    .chain(&model.excluded_addresses)
                    .map(|address| address.address.address)
                    .collect()
            };
            let vmac = vmac_plan(model, &settings, vmac_name, &mut warnings);
            instances.push(InstancePlan {
                model: model.clone(),
                settings,
                interface,
                destinations,
                dropped,
                track_own_interface: !model.dont_track_primary,
                tracked,
                group: None,
                configuration_fault,
                notify_priority_changes: model
                    .notify
                    .priority_changes
                    .or_else(|| {
                        let group = membership.map(|index| &configuration.sync_groups[index])?;
                        group.notify.priority_changes
                    })
                    .or(defaults.notify_priority_changes)
                    .unwrap_or(false),
                vmac,
            });
        }
        let mut groups: Vec<GroupPlan> = Vec::new();
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
                .filter(|position| instances[**position].settings.priority == 255)
                .count();
            if owners != 0 && owners != members.len() {
                warnings.push(format!(
                    "Sync group {} has some member(s) as address owner and some not as address \
                     owner. This won't work.",
                    model.name
                ));
            }
            if members.len() == 1 {
                warnings.push(format!(
                    "Sync group {} has only 1 virtual router(s) - this probably isn't what you want",
                    model.name
                ));
            }
            let index = groups.len();
            for (member, position) in members.iter().enumerate() {
                instances[*position].group = Some((index, member));
            }
            groups.push(GroupPlan {
                model: model.clone(),
                members,
            });
        }
        let tracks_script = |name: &str| {
            instances.iter().any(|instance| {
                instance
                    .tracked
                    .scripts
                    .iter()
                    .any(|script| script.name == name)
            })
        };
        let scripts = configuration
            .vrrp_scripts
            .iter()
            .filter(|script| tracks_script(&script.name))
            .cloned()
            .collect();
        let tracks_file = |name: &str| {
            instances
                .iter()
                .any(|instance| instance.tracked.files.iter().any(|file| file.name == name))
        };
        let files = configuration
            .track_files
            .iter()
            .filter(|file| tracks_file(&file.name))
            .filter_map(|file| {
                Some(TrackedFile {
                    name: file.name.clone(),
                    path: file.file.clone()?,
                    init_file: file.init_file.clone(),
                })
            })
            .collect();
        let tracks_process = |name: &str| {
            instances.iter().any(|instance| {
                instance
                    .tracked
                    .processes
                    .iter()
                    .any(|process| process.name == name)
            })
        };
        let processes = configuration
            .track_processes
            .iter()
            .filter(|process| tracks_process(&process.name))
            .cloned()
            .collect();
        let tracks_bfd = |name: &str| {
            instances
                .iter()
                .any(|instance| instance.tracked.bfds.iter().any(|bfd| bfd.name == name))
        };
        let bfds = configuration
            .bfd_instances
            .iter()
            .filter(|instance| tracks_bfd(&instance.name))
            .filter_map(nanny::spec::BfdSpec::from_config)
            .collect();
        Ok(Plan {
            configuration,
            instances,
            groups,
            scripts,
            files,
            processes,
            bfds,
            warnings,
        })
    }

    /// The definition of the `vrrp_script` called `name`.
    pub fn script(&self, name: &str) -> Option<&config::VrrpScript> {
        self.scripts.iter().find(|script| script.name == name)
    }

    /// The definition of the `track_file` called `name`.
    pub fn file(&self, name: &str) -> Option<&TrackedFile> {
        self.files.iter().find(|file| file.name == name)
    }
}

/// What a reload keeps: the instances that go on with their state, as
/// `(position in the running plan, position in the new one)`, and the sync
/// groups that go on with their coordinators, likewise. Every other running
/// instance stops; every other new one starts.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Reload {
    pub kept: Vec<(usize, usize)>,
    pub kept_groups: Vec<(usize, usize)>,
}

impl Reload {
    /// The running instance that becomes the new one at `position`, if it
    /// is kept.
    pub fn kept_as(&self, position: usize) -> Option<usize> {
        self.kept
            .iter()
            .find(|(_, new)| *new == position)
            .map(|(old, _)| *old)
    }

    /// Whether the running instance at `position` is kept.
    pub fn keeps(&self, position: usize) -> bool {
        self.kept.iter().any(|(old, _)| *old == position)
    }
}

/// Which running instances and groups of `old` go on under `new` (the
/// rules at the top).
pub fn reload(old: &Plan, new: &Plan) -> Reload {
    // A change in the definitions of the scripts and files an instance or
    // a group tracks restarts it, as a change of its block does.
    let same_globals = old.configuration.global.vrrp == new.configuration.global.vrrp;
    let tracking_unchanged = |old_tracking: &config::Tracking, new_tracking: &config::Tracking| {
        definitions(old, old_tracking) == definitions(new, new_tracking)
    };
    let unchanged: Vec<Option<usize>> = old
        .instances
        .iter()
        .map(|running| {
            if !same_globals {
                return None;
            }
            new.instances.iter().position(|candidate| {
                candidate.model == running.model
                    && tracking_unchanged(&running.model.tracking, &candidate.model.tracking)
            })
        })
        .collect();
    let members_of = |plan: &Plan, group: &GroupPlan| {
        group
            .members
            .iter()
            .map(|position| plan.instances[*position].model.name.clone())
            .collect::<Vec<_>>()
    };
    let kept_groups: Vec<Option<usize>> = old
        .groups
        .iter()
        .map(|running| {
            if !running
                .members
                .iter()
                .all(|position| unchanged[*position].is_some())
            {
                return None;
            }
            new.groups.iter().position(|candidate| {
                candidate.model == running.model
                    && members_of(new, candidate) == members_of(old, running)
                    && tracking_unchanged(&running.model.tracking, &candidate.model.tracking)
            })
        })
        .collect();
    let kept = unchanged
        .iter()
        .enumerate()
        .filter_map(|(position, new_position)| {
            let new_position = (*new_position)?;
            let group_kept = match old.instances[position].group {
                Some((group, _)) => kept_groups[group].is_some(),
                // Not in a group before: not in one now either.
                None => new.instances[new_position].group.is_none(),
            };
            group_kept.then_some((position, new_position))
        })
        .collect();
    Reload {
        kept,
        kept_groups: kept_groups
            .iter()
            .enumerate()
            .filter_map(|(position, new_position)| Some((position, (*new_position)?)))
            .collect(),
    }
}

/// The running instances of `old` that keepalived's reload would delete:
/// those `new` has no counterpart for, as vrrp.c `vrrp_exist` matches
/// them (its first instance with the same VRID, family and interface
/// decides for multicast: another group means none). keepalived compares
/// unicast sources as used; the configured ones are compared here, the
/// interface's (none configured) being the same on the same interface.
pub fn removed(old: &Plan, new: &Plan) -> Vec<usize> {
    let unicast = |instance: &InstancePlan| !instance.settings.unicast_peers.is_empty();
    let exists = |running: &InstancePlan| {
        for candidate in &new.instances {
            if candidate.settings.virtual_router_id != running.settings.virtual_router_id
                || candidate.settings.family != running.settings.family
                || candidate.interface != running.interface
                || unicast(candidate) != unicast(running)
            {
                continue;
            }
            if unicast(candidate) {
                if candidate.settings.local_address != running.settings.local_address {
                    continue;
                }
                return true;
            }
            return candidate.destinations == running.destinations;
        }
        false
    };
    old.instances
        .iter()
        .enumerate()
        .filter(|(_, running)| !exists(running))
        .map(|(position, _)| position)
        .collect()
}

/// What an instance a reload removed notifies, as keepalived's
/// clear_diff_vrrp and send_instance_notifies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RemovalNotice {
    /// `notify_deleted`: its script (if it names one) and `notify ...
    /// DELETED`.
    Deleted,
    /// Without `notify_deleted`, keepalived's old way: `notify ... FAULT`
    /// only (the state's own script is looked up before the state is
    /// turned into FAULT, as the deleted one, which there is none of).
    Fault,
    /// Without `notify_deleted`, an instance already in FAULT: nothing.
    Nothing,
}

/// The notice of an instance removed by a reload in `state`.
pub fn removal_notice(notify_deleted: bool, state: super::machine::State) -> RemovalNotice {
    if notify_deleted {
        RemovalNotice::Deleted
    } else if state == super::machine::State::Fault {
        RemovalNotice::Nothing
    } else {
        RemovalNotice::Fault
    }
}

/// The definitions of the scripts, files and processes `tracking` names.
type Definitions<'a> = (
    Vec<Option<&'a config::VrrpScript>>,
    Vec<Option<&'a config::TrackFile>>,
    Vec<Option<&'a config::TrackProcess>>,
);

fn definitions<'a>(plan: &'a Plan, tracking: &config::Tracking) -> Definitions<'a> {
    let scripts = tracking
        .scripts
        .iter()
        .map(|tracked| {
            plan.configuration
                .vrrp_scripts
                .iter()
                .find(|script| script.name == tracked.name)
        })
        .collect();
    let files = tracking
        .files
        .iter()
        .map(|tracked| {
            plan.configuration
                .track_files
                .iter()
                .find(|file| file.name == tracked.name)
        })
        .collect();
    let processes = tracking
        .processes
        .iter()
        .map(|tracked| {
            plan.configuration
                .track_processes
                .iter()
                .find(|process| process.name == tracked.name)
        })
        .collect();
    (scripts, files, processes)
}

/// Each instance's sync group, by the group's index in the configuration;
/// a name that is no instance is left out with keepalived's warning.
/// The macvlan names of the instances with `use_vmac`, in order
/// ([`vmac::names`]).
fn vmac_names(configuration: &config::Config) -> Result<Vec<Option<String>>, PlanError> {
    let instances = configuration
        .vrrp_instances
        .iter()
        .map(|model| {
            let settings = InstanceSettings::from_model(model, &configuration.global.vrrp)?;
            Ok((
                model.use_vmac.as_ref(),
                model.virtual_router_id.unwrap_or(0),
                settings.family,
            ))
        })
        .collect::<Result<Vec<_>, PlanError>>()?;
    Ok(vmac::names(&instances, VMAC_PREFIX))
}

/// keepalived's default macvlan name prefix (`vmac_prefix`).
const VMAC_PREFIX: &str = "vrrp";

/// An instance's macvlan: its name, its address, and where its adverts
/// go. keepalived (vrrp.c `vrrp_complete_instance`) clears
/// `vmac_xmit_base` without `use_vmac`, and in strict mode, each with an
/// error.
fn vmac_plan(
    model: &config::VrrpInstance,
    settings: &InstanceSettings,
    name: Option<String>,
    warnings: &mut Vec<String>,
) -> Option<VmacPlan> {
    let Some(vmac) = &model.use_vmac else {
        if model.vmac_xmit_base {
            warnings.push(format!(
                "({}) vmac_xmit_base is only valid with a vmac",
                model.name
            ));
        }
        return None;
    };
    let mut transmit_on_base = model.vmac_xmit_base;
    if transmit_on_base && settings.strict {
        warnings.push(format!(
            "({}) xmit_base is incompatible with strict mode - resetting",
            model.name
        ));
        transmit_on_base = false;
    }
    Some(VmacPlan {
        name: name.expect("named for each instance with use_vmac"),
        address: vmac::address(vmac, model.virtual_router_id.unwrap_or(0), settings.family),
        transmit_on_base,
    })
}

fn memberships(
    configuration: &config::Config,
    warnings: &mut Vec<String>,
) -> HashMap<String, usize> {
    let mut memberships = HashMap::new();
    for (index, group) in configuration.sync_groups.iter().enumerate() {
        for name in &group.instances {
            if !configuration
                .vrrp_instances
                .iter()
                .any(|instance| instance.name == *name)
            {
                warnings.push(format!(
                    "Virtual router {name} specified in sync group {} doesn't exist - ignoring",
                    group.name
                ));
                continue;
            }
            // The configuration keeps an instance in its first group only.
            memberships.entry(name.clone()).or_insert(index);
        }
    }
    memberships
}

/// The `track_interface`, `track_script` and `track_file` entries of
/// `tracking`, each with its weight; a script or file entry naming no
/// block is left out with a warning, as keepalived does.
fn tracked_objects(
    configuration: &config::Config,
    tracking: &config::Tracking,
    name: &str,
    warnings: &mut Vec<String>,
) -> TrackedObjects {
    let links = tracking
        .interfaces
        .iter()
        .map(|tracked| Tracked {
            name: tracked.name.clone(),
            weight: tracked.weight.unwrap_or(0),
            reverse: tracked.reverse,
        })
        .collect();
    let scripts = resolved(&tracking.scripts, warnings, |tracked| {
        configuration
            .vrrp_scripts
            .iter()
            .find(|script| script.name == tracked.name)
            .map(|script| (script.weight, script.weight_reverse))
            .ok_or_else(|| {
                format!(
                    "({name}) track_script {}: no vrrp_script of that name; ignored",
                    tracked.name
                )
            })
    });
    let files = resolved(&tracking.files, warnings, |tracked| {
        configuration
            .track_files
            .iter()
            .find(|file| file.name == tracked.name && file.file.is_some())
            .map(|file| (file.weight, file.weight_reverse))
            .ok_or_else(|| {
                format!(
                    "({name}) track_file {}: no track_file with a file of that name; ignored",
                    tracked.name
                )
            })
    });
    let mut processes: Vec<Tracked> = Vec::new();
    for tracked in &tracking.processes {
        let Some(process) = configuration
            .track_processes
            .iter()
            .find(|process| process.name == tracked.name)
        else {
            warnings.push(format!(
                "({name}) track process {} not found, ignoring...",
                tracked.name
            ));
            continue;
        };
        if processes.iter().any(|other| other.name == tracked.name) {
            warnings.push(format!(
                "({name}) duplicate track_process {} - ignoring",
                tracked.name
            ));
            continue;
        }
        processes.push(Tracked {
            name: tracked.name.clone(),
            weight: tracked.weight.unwrap_or(process.weight),
            reverse: tracked.reverse || process.weight_reverse,
        });
    }
    let mut bfds: Vec<Tracked> = Vec::new();
    for tracked in &tracking.bfds {
        // keepalived's alloc_track_bfd: a name that is no bfd_instance
        // (one without neighbor_ip is dropped by the parser) is ignored,
        // and so is a second entry for one.
        let Some(instance) = configuration
            .bfd_instances
            .iter()
            .find(|instance| instance.name == tracked.name)
        else {
            warnings.push(format!(
                "({name}) track bfd {} not found, ignoring...",
                tracked.name
            ));
            continue;
        };
        if bfds.iter().any(|other| other.name == tracked.name) {
            warnings.push(format!(
                "({name}) duplicate track_bfd {} - ignoring",
                tracked.name
            ));
            continue;
        }
        bfds.push(Tracked {
            name: tracked.name.clone(),
            weight: tracked.weight.or(instance.weight).unwrap_or(0),
            reverse: tracked.reverse || instance.reverse,
        });
    }
    TrackedObjects {
        links,
        scripts,
        files,
        processes,
        bfds,
    }
}

/// keepalived's rule (vrrp.c `vrrp_complete_instance`) for the members of a
/// sync group without `sync_group_tracking_weight` and for an address
/// owner: a weighted tracked BFD is ignored, with keepalived's log line.
pub fn ignore_weighted_bfds(
    name: &str,
    reason: &str,
    tracked: &mut TrackedObjects,
    warnings: &mut Vec<String>,
) {
    tracked.bfds.retain(|bfd| {
        if bfd.weight != 0 {
            warnings.push(format!(
                "({name}) ignoring tracked bfd {} with weight {} due to {reason}",
                bfd.name, bfd.weight
            ));
        }
        bfd.weight == 0
    });
}

/// Tracked scripts or files with the weight and reverse their entry
/// gives, else their block's (`definition`: the block's, or the warning
/// for an entry naming none, which is left out).
fn resolved(
    entries: &[config::Tracked],
    warnings: &mut Vec<String>,
    definition: impl Fn(&config::Tracked) -> Result<(i32, bool), String>,
) -> Vec<Tracked> {
    let mut resolved = Vec::new();
    for tracked in entries {
        match definition(tracked) {
            Ok((weight, reverse)) => resolved.push(Tracked {
                name: tracked.name.clone(),
                weight: tracked.weight.unwrap_or(weight),
                reverse: tracked.reverse || reverse,
            }),
            Err(warning) => warnings.push(warning),
        }
    }
    resolved
}

/// Adds a sync group's tracking to a member's `own`, as keepalived's
/// sync_group_tracking_init: without weights when a member of the group
/// owns its addresses (`owner`); an object the member tracks too counts
/// once, the group's way, each with keepalived's log line.
pub fn merge_group_tracking(
    name: &str,
    group_name: &str,
    owner: bool,
    own: &mut TrackedObjects,
    mut group: TrackedObjects,
    warnings: &mut Vec<String>,
) {
    if owner {
        for (objects, what, clearing) in [
            (&mut group.links, "interface", "clearing weight"),
            (&mut group.scripts, "script", "clearing weight"),
            (&mut group.files, "file", "setting weight 0"),
            (&mut group.processes, "process", "setting weight 0"),
            (&mut group.bfds, "bfd", "setting weight 0"),
        ] {
            for object in objects.iter_mut().filter(|object| object.weight != 0) {
                warnings.push(format!(
                    "({group_name}) Cannot have weighted track {what} '{}' with member having \
                     priority 255 - {clearing}",
                    object.name
                ));
                object.weight = 0;
            }
        }
    }
    for (own_objects, group_objects, what, remove) in [
        (
            &mut own.links,
            &group.links,
            "track_interface",
            "Remove vrrp instance or sync group config",
        ),
        (
            &mut own.scripts,
            &group.scripts,
            "track_script",
            "Remove vrrp instance config",
        ),
        (
            &mut own.files,
            &group.files,
            "track_file",
            "Remove vrrp instance config",
        ),
    ] {
        // The group's entry counts, once.
        own_objects.retain(|object| {
            let twice = group_objects.iter().any(|other| other.name == object.name);
            if twice {
                warnings.push(format!(
                    "({name}) {what} {} is configured on VRRP instance and sync group. {remove}",
                    object.name
                ));
            }
            !twice
        });
    }
    own.links.append(&mut group.links);
    own.scripts.append(&mut group.scripts);
    own.files.append(&mut group.files);
    // keepalived's add_vrrp_to_track_process: the member's entry stays,
    // weighted with the group's weight unless its own is 0, its reverse
    // its own.
    for process in group.processes {
        match own
            .processes
            .iter_mut()
            .find(|other| other.name == process.name)
        {
            Some(other) => {
                warnings.push(format!(
                    "({name}) track_process {} is configured on VRRP instance and sync group. \
                     Remove vrrp instance config",
                    process.name
                ));
                if other.weight != 0 {
                    other.weight = process.weight;
                }
            }
            None => own.processes.push(process),
        }
    }
    // keepalived's add_vrrp_to_track_bfd: the member's entry stays; unless
    // its weight is 0, the group's weight and reverse replace its own.
    for bfd in group.bfds {
        match own.bfds.iter_mut().find(|other| other.name == bfd.name) {
            Some(other) => {
                warnings.push(format!(
                    "({name}) track_bfd {} is configured on VRRP instance and sync group. \
                     Remove vrrp instance config",
                    bfd.name
                ));
                if other.weight != 0 {
                    other.weight = bfd.weight;
                    other.reverse = bfd.reverse;
                }
            }
            None => own.bfds.push(bfd),
        }
    }
}

/// keepalived 2.2's rule for the members of a sync group without
/// `sync_group_tracking_weight` (or `global_tracking`): a weighted tracked
/// interface counts as unweighted (down means FAULT), a weighted script is
/// ignored, a file with the default weight (1) counts as weight 0 and one
/// with another weight is ignored, each with keepalived's log line.
pub fn ignore_weights(name: &str, tracked: &mut TrackedObjects, warnings: &mut Vec<String>) {
    for link in tracked.links.iter_mut().filter(|link| link.weight != 0) {
        warnings.push(format!(
            "({name}) ignoring weight of tracked interface {} due to SYNC group",
            link.name
        ));
        link.weight = 0;
    }
    tracked.scripts.retain(|script| {
        if script.weight != 0 {
            warnings.push(format!(
                "({name}) ignoring tracked script {} with weights due to SYNC group",
                script.name
            ));
        }
        script.weight == 0
    });
    tracked.files.retain_mut(|file| match file.weight {
        0 => true,
        1 => {
            warnings.push(format!(
                "({name}) ignoring weight from tracked file {} due to SYNC group - specify weight 0",
                file.name
            ));
            file.weight = 0;
            true
        }
        weight => {
            warnings.push(format!(
                "({name}) ignoring tracked file {} with weight {weight} due to SYNC group",
                file.name
            ));
            false
        }
    });
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

#[cfg(test)]
mod tests;
