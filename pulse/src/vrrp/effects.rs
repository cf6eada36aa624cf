//! Carrying out what the machines decide: adverts sent, virtual addresses,
//! routes and rules added and removed through rtnetlink, the nftables drop
//! rules of a master without accept mode, gratuitous ARP and neighbour
//! advertisements, notify scripts, and the kernel's sync daemon following
//! its instance. Everything here acts; nothing decides (the machines and
//! the sync groups did, in [`super::task`]'s loop).

use std::net::IpAddr;
use std::time::Duration;

use fulcrum_config::model as config;
use netlink_packet_route::address::AddressMessage;
use netlink_packet_route::route::RouteMessage;
use netlink_packet_route::rule::RuleMessage;

use super::addresses;
use super::firewall::{self, Firewall};
use super::io::{Announcer, SendSocket};
use super::machine::State;
use super::packet::{Family, Repr};
use super::routes;
use super::vmac::VirtualMac;
use crate::notify_fifo::{self, Lines, lines::VrrpEvent};
use crate::sync_daemon::Follower;

/// How long the sync daemon may take to follow the instances' last state
/// at stop.
const SYNC_DAEMON_SETTLING: Duration = Duration::from_secs(10);

/// What an instance adds as master and removes after: its addresses, then
/// its routes and rules, and the addresses its drop rule covers.
#[derive(Debug, Clone, Default)]
pub struct VirtualState {
    /// virtual_ipaddress and virtual_ipaddress_excluded, as rtnetlink
    /// messages.
    pub addresses: Vec<AddressMessage>,
    /// virtual_routes and virtual_rules, added after the addresses.
    pub routes: Vec<RouteMessage>,
    pub rules: Vec<RuleMessage>,
    /// What a master without accept mode drops traffic to and from.
    pub dropped: Vec<IpAddr>,
}

/// The effects' own state: an rtnetlink handle, the firewall's drop
/// rules and the sync daemon's follower.
pub struct Effects {
    handle: rtnetlink::Handle,
    /// The drop rules of the masters without accept mode; removed when
    /// VRRP stops.
    firewall: Firewall,
    /// With `lvs_sync_daemon`: its settings and the thread following its
    /// instance.
    sync_daemon: Option<(config::LvsSyncDaemon, Follower)>,
}

impl Effects {
    pub fn new(
        handle: rtnetlink::Handle,
        sync_daemon: Option<(config::LvsSyncDaemon, Follower)>,
        firewall: firewall::TableSettings,
    ) -> Effects {
        Effects {
            handle,
            firewall: Firewall::new(firewall),
            sync_daemon,
        }
    }

    /// The settings of `lvs_sync_daemon` change with a reload (the
    /// follower goes on).
    pub fn set_sync_daemon_settings(&mut self, settings: Option<config::LvsSyncDaemon>) {
        match (settings, self.sync_daemon.take()) {
            (Some(settings), Some((_, follower))) => {
                self.sync_daemon = Some((settings, follower));
            }
            (None, Some((settings, follower))) => {
                // No longer configured: stopped, as at a restart without it.
                follower.follow(&settings, None, 0);
            }
            (Some(settings), None) => tracing::warn!(
                "lvs_sync_daemon {} {}: added by a reload; restart pulse to run it",
                settings.interface,
                settings.instance
            ),
            (None, None) => {}
        }
    }

    /// Sends `advert` to each destination from `sender`.
    pub fn send_advert(name: &str, sender: &SendSocket, advert: &Repr, destinations: &[IpAddr]) {
        let source = sender.source();
        for destination in destinations {
            let bytes = advert.to_bytes(&source, destination);
            if let Err(error) = sender.send(&bytes, *destination) {
                tracing::warn!("({name}) cannot send an advert to {destination}: {error}");
            }
        }
    }

    /// A new master takes its addresses, in keepalived's order: the drop
    /// rule first (so that no packet to an address is taken before it),
    /// the addresses, then the routes and rules (a route's source or
    /// gateway may be one of the addresses).
    pub async fn add_virtual_state(&mut self, name: &str, state: &VirtualState) {
        if !state.dropped.is_empty() {
            tracing::info!("({name}) setting firewall drop rule");
            if let Err(error) = self.firewall.drop_addresses(&state.dropped).await {
                tracing::error!("({name}) cannot set the firewall drop rule: {error}");
            }
        }
        tracing::info!("({name}) setting the virtual addresses");
        for message in &state.addresses {
            if let Err(error) = addresses::add(&self.handle, message.clone()).await {
                tracing::error!("({name}) cannot add a virtual address: {error}");
            }
        }
        for message in &state.routes {
            if let Err(error) = routes::add_route(&self.handle, message.clone()).await {
                tracing::error!("({name}) cannot add a virtual route: {error}");
            }
        }
        for message in &state.rules {
            if let Err(error) = routes::add_rule(&self.handle, message.clone()).await {
                tracing::error!("({name}) cannot add a virtual rule: {error}");
            }
        }
    }

    /// A master leaves: its rules, routes and addresses go, then its drop
    /// rule.
    pub async fn remove_virtual_state(&mut self, name: &str, state: &VirtualState) {
        tracing::info!("({name}) removing the virtual addresses");
        for message in &state.rules {
            if let Err(error) = routes::remove_rule(&self.handle, message.clone()).await {
                tracing::error!("({name}) cannot remove a virtual rule: {error}");
            }
        }
        for message in &state.routes {
            if let Err(error) = routes::remove_route(&self.handle, message.clone()).await {
                tracing::error!("({name}) cannot remove a virtual route: {error}");
            }
        }
        for message in &state.addresses {
            if let Err(error) = addresses::remove(&self.handle, message.clone()).await {
                tracing::error!("({name}) cannot remove a virtual address: {error}");
            }
        }
        if !state.dropped.is_empty() {
            tracing::info!("({name}) removing firewall drop rule");
            if let Err(error) = self.firewall.accept_addresses(&state.dropped).await {
                tracing::error!("({name}) cannot remove the firewall drop rule: {error}");
            }
        }
    }

    /// The instance `name` entered `state`: the sync daemon follows it if
    /// it is the one `lvs_sync_daemon` names (master daemon while MASTER,
    /// backup otherwise, leaving MASTER for FAULT included, none once
    /// stopped).
    pub fn follow_sync_daemon(&self, name: &str, state: State, virtual_router_id: u8) {
        let Some((settings, follower)) = &self.sync_daemon else {
            return;
        };
        if settings.instance != name {
            return;
        }
        let state = match state {
            State::Master => Some(ipvs::SyncState::Master),
            State::Backup | State::Fault => Some(ipvs::SyncState::Backup),
            State::Initialize => None,
        };
        follower.follow(settings, state, virtual_router_id);
    }

    /// A macvlan was made for instance `name`: it goes into the firewall's
    /// vmac sets (keepalived's `firewall_add_vmac`; for IPv4 not with
    /// `disable_local_igmp`).
    pub async fn add_vmac(&mut self, name: &str, vmac: &VirtualMac, disable_local_igmp: bool) {
        if vmac.family == Family::Ipv4 && disable_local_igmp {
            return;
        }
        if let Err(error) = self.firewall.add_vmac(firewall_vmac(vmac)).await {
            tracing::error!(
                "({name}) cannot add {} to the firewall: {error}",
                vmac.interface.name
            );
        }
    }

    /// A macvlan goes: out of the firewall's vmac sets.
    pub async fn remove_vmac(&mut self, vmac: &VirtualMac) {
        if let Err(error) = self.firewall.remove_vmac(firewall_vmac(vmac)).await {
            tracing::error!(
                "cannot remove {} from the firewall: {error}",
                vmac.interface.name
            );
        }
    }

    /// VRRP stops: the firewall tables go, as keepalived's at exit, and the
    /// sync daemon follows the instances' last state.
    pub async fn stop(&mut self) {
        if let Err(error) = self.firewall.remove_tables().await {
            tracing::error!("cannot remove the firewall tables: {error}");
        }
        if let Some((_, follower)) = &self.sync_daemon
            && !follower.settled(SYNC_DAEMON_SETTLING).await
        {
            tracing::warn!("lvs_sync_daemon: not stopped within 10 s");
        }
    }
}

/// Sends one gratuitous ARP (IPv4) or unsolicited neighbour
/// advertisement (IPv6) for `address` on `announcer`'s interface; the
/// pace was decided already ([`super::garp`]).
pub fn announce(name: &str, announcer: &Announcer, address: IpAddr) {
    if let Err(error) = announcer.announce(address) {
        tracing::warn!(
            "({name}) cannot announce {address} on {}: {error}",
            announcer.interface_name()
        );
    }
}

/// Runs an instance's or a sync group's notify scripts for `state`: the
/// state's own (`notify_master`...) as written, and `notify` with
/// keepalived's four arguments: `INSTANCE` or `GROUP`, the name, the state
/// and the priority (0 for a group, as keepalived's send_group_notifies);
/// then writes the line of the notify FIFOs, as keepalived does after the
/// scripts (vrrp_notify.c `send_instance_notifies`).
pub fn notify(
    fifo: &Lines,
    scripts: &config::Notify,
    kind: &str,
    name: &str,
    state: State,
    priority: u8,
) {
    let (own, event) = match state {
        State::Master => (&scripts.master, VrrpEvent::Master),
        State::Backup => (&scripts.backup, VrrpEvent::Backup),
        State::Fault => (&scripts.fault, VrrpEvent::Fault),
        State::Initialize => (&scripts.stop, VrrpEvent::Stop),
    };
    if let Some(script) = own {
        fulcrum_scripts::run::spawn(script, &[]);
    }
    if let Some(script) = &scripts.any {
        fulcrum_scripts::run::spawn(script, &[kind, name, event.word(), &priority.to_string()]);
    }
    if fifo.is_open() {
        fifo.send(if kind == "GROUP" {
            notify_fifo::lines::group(name, event)
        } else {
            notify_fifo::lines::instance(name, event, priority)
        });
    }
}

/// A master heard a lower priority master: `notify_master_rx_lower_pri`,
/// then the FIFO's `MASTER_RX_LOWER_PRI` line (vrrp_notify.c
/// `send_event_notify`).
pub fn notify_master_received_lower_priority(
    fifo: &Lines,
    scripts: &config::Notify,
    name: &str,
    priority: u8,
) {
    if let Some(script) = &scripts.master_rx_lower_priority {
        fulcrum_scripts::run::spawn(script, &[]);
    }
    if fifo.is_open() {
        fifo.send(notify_fifo::lines::instance(
            name,
            VrrpEvent::MasterReceivedLowerPriority,
            priority,
        ));
    }
}

/// keepalived's word for a state in its notify arguments: `STOP` for
/// the stopped one.
pub fn state_word(state: State) -> &'static str {
    match state {
        State::Master => "MASTER",
        State::Backup => "BACKUP",
        State::Fault => "FAULT",
        State::Initialize => "STOP",
    }
}

fn firewall_vmac(vmac: &VirtualMac) -> firewall::Vmac {
    firewall::Vmac {
        index: vmac.interface.index,
        base: vmac.base_index,
        family: match vmac.family {
            Family::Ipv4 => firewall::TableFamily::Ipv4,
            Family::Ipv6 => firewall::TableFamily::Ipv6,
        },
    }
}

/// Runs the notify scripts of an instance a reload removed
/// ([`super::plan::removal_notice`]): `notify_deleted`'s script, if it
/// names one, and `notify` with `DELETED`; or `notify` alone with `FAULT`.
pub fn notify_removed(
    fifo: &Lines,
    scripts: &config::Notify,
    name: &str,
    notice: super::plan::RemovalNotice,
    priority: u8,
) {
    use super::plan::RemovalNotice;
    let event = match notice {
        RemovalNotice::Deleted => {
            if let Some(Some(script)) = &scripts.deleted {
                fulcrum_scripts::run::spawn(script, &[]);
            }
            VrrpEvent::Deleted
        }
        RemovalNotice::Fault => VrrpEvent::Fault,
        RemovalNotice::Nothing => return,
    };
    if let Some(script) = &scripts.any {
        fulcrum_scripts::run::spawn(
            script,
            &["INSTANCE", name, event.word(), &priority.to_string()],
        );
    }
    if fifo.is_open() {
        fifo.send(notify_fifo::lines::instance(name, event, priority));
    }
}
