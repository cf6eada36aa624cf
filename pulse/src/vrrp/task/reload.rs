//! A reload of the VRRP task: the new configuration planned, what it
//! keeps decided ([`plan::reload`]), what it adds opened, then the running
//! instances replaced.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Instant;

use fulcrum_config::model as config;

use super::{PlanData, Vrrp, descriptions, log_warnings};
use crate::vrrp::machine::State;
use crate::vrrp::packet::Family;
use crate::vrrp::plan::{self, Plan};
use crate::vrrp::setup::{self, Instance, Resources};
use crate::vrrp::sync::SyncGroup;
use crate::vrrp::vmac;

impl Vrrp {
    /// A new configuration, as keepalived reloads ([`plan::reload`] says
    /// what is kept): a kept instance goes on with its state, sockets and
    /// timers (a master stays master, without a transition); the others
    /// stop (a master sends priority 0 and removes its addresses) and the
    /// new ones start. What the new instances need is opened first, and
    /// only what is not open yet: a configuration that cannot run leaves
    /// the running instances untouched, and one that changes nothing opens
    /// nothing.
    pub(super) async fn reload(&mut self, configuration: Arc<config::Config>) {
        let next = match Plan::from_config(configuration) {
            Ok(next) => Arc::new(next),
            Err(error) => {
                tracing::error!("VRRP cannot reload: {error}; the running instances stay");
                return;
            }
        };
        log_warnings(&next);
        let decision = plan::reload(&self.plan, &next);
        let mut resources = Resources {
            receiving: self.receivers.receiving(),
            links: self.links.clone(),
            saved_bases: self.saved_bases.clone(),
            dynamic_interfaces: next.configuration.global.dynamic_interfaces,
            ..Resources::default()
        };
        for (old, _) in &decision.kept {
            let instance = &self.instances[*old];
            resources.interfaces.insert(
                self.plan.instances[*old].interface.clone(),
                instance.interface.clone(),
            );
            if let Some(sources) = self.sources.get(&instance.interface.index) {
                resources
                    .sources
                    .insert(instance.interface.index, sources.clone());
            }
            for (announcer, _) in &instance.announced {
                resources
                    .announcers
                    .entry(announcer.interface_index())
                    .or_insert_with(|| announcer.clone());
            }
        }
        let mut started = HashMap::new();
        for (position, instance) in next.instances.iter().enumerate() {
            if decision.kept_as(position).is_some() {
                continue;
            }
            match setup::open_instance(&self.handle, instance, &mut resources).await {
                Ok(opened) => {
                    started.insert(position, opened);
                }
                Err(error) => {
                    tracing::error!("VRRP cannot reload: {error}; the running instances stay");
                    // What was made for the new instances goes.
                    for opened in started.values_mut() {
                        if let Some(vmac) = opened.vmac.take() {
                            vmac::remove(&self.handle, &vmac, &mut resources.saved_bases).await;
                        }
                    }
                    self.saved_bases = resources.saved_bases;
                    return;
                }
            }
        }
        self.saved_bases = resources.saved_bases;
        // keepalived closes its notify FIFOs at a reload and opens them
        // again with the new configuration (vrrp_complete_init), before
        // the removed instances' notices (clear_diff_vrrp).
        if let Some(fifos) = &mut self.fifos {
            let global = &next.configuration.global;
            fifos
                .reopen(
                    global,
                    global.fifos.vrrp.as_ref(),
                    global.fifo_scripts.vrrp.as_ref(),
                    "vrrp_",
                )
                .await;
        }
        let now = Instant::now();
        // A macvlan a new instance took up (the same name, base and
        // address) stays for it.
        let taken: HashSet<u32> = started
            .values()
            .filter_map(|opened| opened.vmac.as_ref())
            .map(|vmac| vmac.interface.index)
            .collect();
        let removed = plan::removed(&self.plan, &next);
        for position in 0..self.instances.len() {
            if !decision.keeps(position) {
                let name = self.plan.instances[position].name();
                if removed.contains(&position) {
                    tracing::info!("({name}) removed by the reload: stopping");
                    let instance = &mut self.instances[position];
                    instance.removed_in_state = Some(instance.machine.state());
                } else {
                    tracing::info!("({name}) changed by the reload: stopping");
                }
                self.stop_instance(position, now).await;
                if self.instances[position]
                    .vmac
                    .as_ref()
                    .is_some_and(|vmac| taken.contains(&vmac.interface.index))
                {
                    self.instances[position].vmac = None;
                }
                self.remove_vmac(position).await;
            }
        }
        let mut running: Vec<Option<Instance>> = std::mem::take(&mut self.instances)
            .into_iter()
            .map(Some)
            .collect();
        self.instances = (0..next.instances.len())
            .map(|position| match decision.kept_as(position) {
                Some(old) => running[old].take().expect("each kept once"),
                None => started.remove(&position).expect("opened above"),
            })
            .collect();
        let mut groups: Vec<Option<SyncGroup>> = std::mem::take(&mut self.groups)
            .into_iter()
            .map(Some)
            .collect();
        self.groups = next
            .groups
            .iter()
            .enumerate()
            .map(|(position, group)| {
                decision
                    .kept_groups
                    .iter()
                    .find(|(_, new)| *new == position)
                    .and_then(|(old, _)| groups[*old].take())
                    .unwrap_or_else(|| SyncGroup::new(&group.model.name, group.members.len()))
            })
            .collect();
        // What the new instances found, and what the kept ones follow.
        for (index, sources) in resources.sources {
            self.sources.entry(index).or_insert(sources);
        }
        self.links = resources.links;
        for (index, socket) in resources.opened.drain(..) {
            self.receivers.add(index, socket);
        }
        // Only what an instance still uses is followed.
        let used: HashSet<(u32, Family)> = self
            .instances
            .iter()
            .map(|instance| {
                (
                    instance.advert_interface().index,
                    instance.machine.settings().family,
                )
            })
            .collect();
        self.receivers
            .retain(|index, family| used.contains(&(index, family)));
        let followed: HashSet<u32> = self
            .instances
            .iter()
            .flat_map(|instance| {
                std::iter::once(instance.interface.index)
                    .chain(instance.vmac.as_ref().map(|vmac| vmac.interface.index))
                    .chain(instance.tracked_links.iter().copied())
            })
            .collect();
        self.links.retain(|index, _| followed.contains(index));
        let configured: HashSet<u32> = self
            .instances
            .iter()
            .map(|instance| instance.interface.index)
            .collect();
        self.sources.retain(|index, _| configured.contains(index));
        self.trackers
            .follow(&next, &mut self.scripts, &mut self.files);
        self.trackers.follow_processes(&next, &mut self.processes);
        self.trackers.follow_bfds(&next, &mut self.bfds);
        self.effects
            .set_sync_daemon_settings(next.configuration.global.lvs_sync_daemon.clone());
        self.pacer.reload(&next.configuration, &decision.kept);
        for warning in self.pacer.warnings() {
            tracing::warn!("{warning}");
        }
        self.plan = next;
        self.mailer = super::mailer(&self.plan).await;
        for position in 0..self.instances.len() {
            if decision.kept_as(position).is_none() {
                self.firewall_vmac(position).await;
            }
        }
        self.descriptions = descriptions(&self.plan);
        self.plan_data = Arc::new(PlanData::of(&self.plan));
        if self
            .plan
            .configuration
            .global
            .fifo_write_vrrp_states_on_reload
        {
            self.write_kept_states(&decision);
        }
        tracing::info!(
            "VRRP reloaded: {} of {} instance(s) kept with their state",
            self.instances
                .iter()
                .filter(|instance| instance.started)
                .count(),
            self.instances.len()
        );
        self.promote_secondaries().await;
        let configuration = self.plan.configuration.clone();
        self.reload_statics(&configuration).await;
        self.start_instances().await;
    }

    /// `fifo_write_vrrp_states_on_reload`: the FIFO line of each sync
    /// group the reload kept, then of each instance it kept, as
    /// keepalived's vrrp_init_state writes them for what has no
    /// transition to notify: every group (the master ones included), the
    /// instances out of MASTER (a master kept goes on as master through
    /// the other branch, which writes nothing).
    fn write_kept_states(&self, decision: &plan::Reload) {
        use crate::notify_fifo::lines;
        if !self.fifo.is_open() {
            return;
        }
        let event = |state: State| match state {
            State::Master => lines::VrrpEvent::Master,
            State::Backup => lines::VrrpEvent::Backup,
            State::Fault => lines::VrrpEvent::Fault,
            State::Initialize => lines::VrrpEvent::Stop,
        };
        for (_, position) in &decision.kept_groups {
            let group = &self.groups[*position];
            if group.state() != State::Initialize {
                self.fifo
                    .send(lines::group(group.name(), event(group.state())));
            }
        }
        for (position, instance) in self.instances.iter().enumerate() {
            let state = instance.machine.state();
            if decision.kept_as(position).is_some() && matches!(state, State::Backup | State::Fault)
            {
                self.fifo.send(lines::instance(
                    &instance.machine.settings().name,
                    event(state),
                    instance.machine.effective_priority(),
                ));
            }
        }
    }
}
