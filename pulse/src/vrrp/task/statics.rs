//! What the VRRP task holds besides its instances' virtual addresses: the
//! `static_*` blocks ([`Statics`]) and the instances' `promote_secondaries`
//! on their interfaces, each at the moment keepalived 2.2.7 sets and puts
//! it back.

use std::collections::HashSet;

use fulcrum_config::model as config;
use netlink_packet_route::address::AddressMessage;

use super::Vrrp;
use crate::vrrp::statics::Statics;
use crate::vrrp::{addresses, vmac};

/// The configuration's static blocks as messages; the lines that cannot be
/// expressed are logged.
pub(super) fn statics_of(configuration: &config::Config) -> Statics {
    let (statics, warnings) = Statics::of(configuration, addresses::index_of);
    for warning in warnings {
        tracing::warn!("{warning}");
    }
    statics
}

impl Vrrp {
    /// At the start: the rules a previous run may have left removed, then
    /// every static entry added, as keepalived's `start_vrrp` does.
    pub(super) async fn set_statics(&mut self) {
        self.statics.remove_leftover_rules(&self.handle).await;
        self.statics.add(&self.handle).await;
    }

    /// At a reload: what the new configuration no longer has removed, then
    /// what it adds added (what both have stays as it is).
    pub(super) async fn reload_statics(&mut self, configuration: &config::Config) {
        let mut next = statics_of(configuration);
        self.statics
            .carry_over(&mut next)
            .remove(&self.handle)
            .await;
        next.add(&self.handle).await;
        self.statics = next;
    }

    /// A static address deleted by someone else is added back, unless
    /// written `no_track` (keepalived's `reinstate_static_address`, with its
    /// line). The deletions pulse makes itself come when the address is no
    /// longer among the statics (a reload's) or after the loop (the
    /// stop's): never taken for someone else's.
    pub(super) async fn restore_static_address(&mut self, deleted: &AddressMessage) {
        let handle = self.handle.clone();
        let Some(address) = self
            .statics
            .addresses
            .iter_mut()
            .find(|address| address.is(deleted))
        else {
            return;
        };
        if !address.tracked {
            return;
        }
        address.add(&handle).await;
        // keepalived writes the address after its adding, with ` set`
        // when it is there again.
        tracing::info!(
            "Restoring deleted static address {}{}",
            address.description,
            if address.set { " set" } else { "" }
        );
    }

    /// At the stop: the rules, routes and addresses set removed.
    pub(super) async fn remove_statics(&mut self) {
        self.statics.remove(&self.handle).await;
    }

    /// `promote_secondaries` set on the interface of every instance asking
    /// for it where it is 0 (keepalived's `vrrp_complete_instance`, at the
    /// start and for the instances a reload brings); an instance with a
    /// macvlan has it on its macvlan already (keepalived ignores the
    /// keyword then). The interfaces pulse set are remembered, to put back.
    pub(super) async fn promote_secondaries(&mut self) {
        let mut wanted = HashSet::new();
        for (position, instance) in self.instances.iter().enumerate() {
            if self.plan.instances[position].model.promote_secondaries && instance.vmac.is_none() {
                wanted.insert(instance.interface.index);
            }
        }
        for index in wanted {
            if self.promoted.contains(&index) {
                continue;
            }
            let name = self.interface_name(index);
            let link = match addresses::link_by_index(&self.handle, index).await {
                Ok(link) => link,
                Err(error) => {
                    tracing::error!("cannot read {name} for promote_secondaries: {error}");
                    continue;
                }
            };
            // Already set: keepalived leaves it, and does not put it back.
            if vmac::promote_secondaries_of(&link) != Some(false) {
                continue;
            }
            match vmac::set_promote_secondaries(&self.handle, index, true).await {
                Ok(()) => {
                    self.promoted.insert(index);
                }
                Err(error) => {
                    tracing::error!("cannot set promote_secondaries on {name}: {error}")
                }
            }
        }
    }

    /// At the stop: `promote_secondaries` back to 0 where pulse set it and
    /// an instance still runs on the interface (keepalived's
    /// `restore_vrrp_interfaces` resets it through the instances of the
    /// configuration in force, whichever set it).
    pub(super) async fn reset_promote_secondaries(&mut self) {
        let in_use: HashSet<u32> = self
            .instances
            .iter()
            .map(|instance| instance.interface.index)
            .collect();
        for index in std::mem::take(&mut self.promoted) {
            if !in_use.contains(&index) {
                continue;
            }
            if let Err(error) = vmac::set_promote_secondaries(&self.handle, index, false).await {
                let name = self.interface_name(index);
                tracing::error!("cannot put promote_secondaries back on {name}: {error}");
            }
        }
    }
}
