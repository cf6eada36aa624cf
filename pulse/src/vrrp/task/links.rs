//! The VRRP task's answers to the kernel's link and address events
//! ([`crate::vrrp::netlink_events`]): links going up and down or created
//! again, virtual addresses deleted under a master, source addresses
//! coming and going, and catching up after lost events.

use std::collections::HashMap;
use std::net::IpAddr;
use std::time::Instant;

use netlink_packet_route::address::AddressMessage;
use netlink_packet_route::link::LinkMessage;
use rtnetlink::packet_route::RouteNetlinkMessage;

use super::Vrrp;
use crate::vrrp::io::{self, ReceiveSocket};
use crate::vrrp::machine::{Event, State};
use crate::vrrp::packet::Family;
use crate::vrrp::setup::{self, Instance};
use crate::vrrp::sources::SourceChange;
use crate::vrrp::{addresses, netlink_events, resync, vmac};

impl Vrrp {
    pub(super) async fn route_event(&mut self, message: RouteNetlinkMessage) {
        match message {
            RouteNetlinkMessage::NewLink(link) => self.link_changed(&link, true).await,
            RouteNetlinkMessage::DelLink(link) => self.link_changed(&link, false).await,
            RouteNetlinkMessage::NewAddress(address) => self.address_changed(&address, true).await,
            RouteNetlinkMessage::DelAddress(address) => self.address_changed(&address, false).await,
            _ => {}
        }
    }

    /// The kernel dropped events (the monitor socket's buffer was full):
    /// every link and address is read again, and what changed meanwhile is
    /// handled as the lost events would have been ([`resync`]).
    pub(super) async fn catch_up(&mut self) {
        tracing::warn!(
            "Netlink: receive buffer overrun, events were lost: reading links and addresses again"
        );
        let (links, addresses) = match netlink_events::links_and_addresses(&self.handle).await {
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
            .flat_map(|instance| &instance.virtual_state.addresses)
            .collect();
        let known = resync::Known {
            links: &self.links,
            sources: &self.sources,
            virtual_addresses,
        };
        for event in resync::lost_events(&known, links, addresses) {
            self.route_event(event).await;
        }
    }

    /// A link appeared, changed or went: the instances tracking it are
    /// told if that changes their FAULT state or priority. A link of an
    /// instance's or a tracked interface's name with another index is
    /// that interface created again: the instances take it up again, as
    /// keepalived does.
    async fn link_changed(&mut self, link: &LinkMessage, exists: bool) {
        use netlink_packet_route::link::LinkAttribute;
        let index = link.header.index;
        let mut up = exists && addresses::is_up(link);
        // A macvlan pulse made reports its own making (down, then up)
        // after pulse has read it up: those events are stale, and would
        // put its instance in FAULT for a moment. What the kernel says
        // now is taken instead (keepalived reads the reflected messages
        // before its instances start, kernel_netlink_poll).
        let ours = self.instances.iter().any(|instance| {
            instance
                .vmac
                .as_ref()
                .is_some_and(|vmac| vmac.interface.index == index)
        });
        if ours && self.links.get(&index).is_some_and(|known| *known != up) {
            let handle = self.handle.clone();
            up = link_up_now(&handle, index).await.unwrap_or(up);
        }
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
            recreated = self.interface_recreated(&name, index, up).await;
        }
        if !exists && let Some(name) = self.known_interface_name(index) {
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
        self.track_all(Instant::now()).await;
    }

    /// Link `index` is called `name`: when an instance's interface or a
    /// tracked one of that name had another index, it was deleted and
    /// created again. The instances on it read it again (its addresses),
    /// open their sockets on it and rebuild their virtual addresses and
    /// routes for the new index; tracked links follow the new index.
    /// Whether anything was taken up again.
    async fn interface_recreated(&mut self, name: &str, index: u32, up: bool) -> bool {
        let plan = self.plan.clone();
        let mut recreated = false;
        for (position, instance) in self.instances.iter_mut().enumerate() {
            for (tracked, tracked_index) in plan.instances[position]
                .tracked
                .links
                .iter()
                .zip(&mut instance.tracked_links)
            {
                if tracked.name == name && *tracked_index != index {
                    self.links.remove(tracked_index);
                    *tracked_index = index;
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
        self.receivers
            .retain(|socket_index, _| socket_index != old_index);
        self.links.remove(&old_index);
        self.sources.remove(&old_index);
        self.links.insert(index, interface.up);
        if old_index == 0 {
            // dynamic_interfaces: there at last.
            tracing::info!("Interface {name} added (index {index})");
        } else {
            tracing::info!("Interface {name} added again (index {old_index} is now {index})");
        }
        for position in positions {
            let instance_plan = &plan.instances[position];
            let instance_name = instance_plan.name();
            let family = instance_plan.settings.family;
            self.instances[position].interface = interface.clone();
            // Its macvlan went with the interface: made again on the new
            // one.
            if let Some(vmac_plan) = &instance_plan.vmac {
                if let Some(old) = &self.instances[position].vmac {
                    let old = old.interface.index;
                    self.links.remove(&old);
                    self.receivers.retain(|socket_index, _| socket_index != old);
                    self.remove_vmac(position).await;
                }
                match vmac::create(
                    &self.handle,
                    vmac_plan,
                    &interface,
                    family,
                    instance_plan.settings.local_address,
                    &mut self.saved_bases,
                )
                .await
                {
                    Ok(made) => {
                        self.links.insert(made.interface.index, made.interface.up);
                        self.instances[position].vmac = Some(made);
                        self.firewall_vmac(position).await;
                    }
                    Err(error) => tracing::error!("({instance_name}) {error}"),
                }
            }
            let advert_interface = self.instances[position].advert_interface().clone();
            if !self
                .receivers
                .receiving()
                .contains(&(advert_interface.index, family))
            {
                match ReceiveSocket::open(&advert_interface, family) {
                    Ok(socket) => self.receivers.add(advert_interface.index, socket),
                    Err(error) => tracing::error!(
                        "({instance_name}) cannot open its receive socket on {}: {error}",
                        advert_interface.name
                    ),
                }
            }
            let source = if instance_plan.configured_source() {
                self.instances[position].machine.settings().local_address
            } else {
                sources.source(family)
            };
            self.instances[position].sender = None;
            self.instances[position].has_source = false;
            self.open_sender(position, source);
            let mut announcers = HashMap::new();
            match setup::virtual_addresses(
                &self.handle,
                &instance_plan.model,
                &interface,
                self.instances[position].vmac.as_ref(),
                instance_name,
                &mut announcers,
            )
            .await
            {
                Ok((messages, announced)) => {
                    self.instances[position].virtual_state.addresses = messages;
                    self.instances[position].announced = announced;
                }
                Err(error) => tracing::error!(
                    "({instance_name}) cannot set up its virtual addresses on {name}: {error}"
                ),
            }
            let virtual_state = &mut self.instances[position].virtual_state;
            (virtual_state.routes, virtual_state.rules) =
                setup::routes_and_rules(&instance_plan.model, &interface, instance_name);
        }
        self.sources.insert(index, sources);
        true
    }

    /// Opens the instance's send socket from `source` (none: it has no
    /// address to send from, and stays in FAULT); the machine compares
    /// that address with a master's.
    fn open_sender(&mut self, position: usize, source: Option<IpAddr>) {
        let plan = &self.plan.instances[position];
        let instance = &mut self.instances[position];
        let name = plan.name();
        let sender = source.and_then(|source| {
            io::SendSocket::open(instance.advert_interface(), source, plan.model.unicast_ttl)
                .inspect_err(|error| {
                    tracing::error!("({name}) cannot open its send socket from {source}: {error}")
                })
                .ok()
        });
        instance.has_source = sender.is_some();
        instance.sender = sender;
        if !plan.configured_source() {
            instance.machine.set_local_address(source);
        }
    }

    /// An address appeared on or went from an interface, as keepalived's
    /// netlink_if_address_filter: a static address deleted is added back
    /// (unless `no_track`); one of an instance's virtual addresses
    /// deleted while it is master makes it step down (it takes over again
    /// after its skew time); otherwise the interface's source addresses
    /// change ([`SourceAddresses`]), and the instances sending from it
    /// follow: out of FAULT when an address appears on an interface that
    /// had none, into FAULT when the last one goes, on to another one when
    /// theirs goes and another is left.
    async fn address_changed(&mut self, message: &AddressMessage, added: bool) {
        if !added {
            self.restore_static_address(message).await;
        }
        let Some((address, link_scope)) = netlink_events::address_of(message) else {
            return;
        };
        let index = message.header.index;
        let now = Instant::now();
        // Each instance with the address among its virtual ones, and
        // whether it tracks it (no `no_track`).
        let ours: Vec<(usize, bool)> = (0..self.instances.len())
            .filter_map(|position| {
                let model = &self.plan.instances[position].model;
                // The messages follow the addresses' order (setup's
                // virtual_addresses).
                let mut tracked = model
                    .virtual_addresses
                    .iter()
                    .chain(&model.excluded_addresses)
                    .map(|configured| !configured.no_track);
                self.instances[position]
                    .virtual_state
                    .addresses
                    .iter()
                    .zip(&mut tracked)
                    .find(|(virtual_address, _)| {
                        virtual_address.header.index == index
                            && netlink_events::address_of(virtual_address)
                                .is_some_and(|(virtual_address, _)| virtual_address == address)
                    })
                    .map(|(_, tracked)| (position, tracked))
            })
            .collect();
        if !ours.is_empty() {
            // Pulse's own removals come when the instance has left MASTER
            // already. A `no_track` address's deletion leaves the master
            // as it is (keepalived's address_is_ours).
            if !added {
                for (position, tracked) in ours {
                    let instance = &self.instances[position];
                    if tracked && instance.machine.state() == State::Master {
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
        self.track_configured_sources(index, address, added, now)
            .await;
        let Some(sources) = self.sources.get_mut(&index) else {
            return;
        };
        let change = if added {
            sources.added(address, link_scope)
        } else {
            sources.removed(address, link_scope)
        };
        let family = Family::of(&address);
        let plan = self.plan.clone();
        let on_interface = |position: usize, instance: &Instance| {
            instance.interface.index == index
                && !plan.instances[position].configured_source()
                && instance.machine.settings().family == family
        };
        let any_on_interface = self
            .instances
            .iter()
            .enumerate()
            .any(|(position, instance)| on_interface(position, instance));
        match change {
            SourceChange::Unchanged => {}
            SourceChange::Assigned(address) => {
                // Logged for the instances' family only: an IPv4
                // instance's interface gets its IPv6 link-local address
                // whenever it comes up.
                if any_on_interface {
                    let name = self.interface_name(index);
                    tracing::info!("Assigned address {address} for interface {name}");
                }
                for position in 0..self.instances.len() {
                    let instance = &self.instances[position];
                    if on_interface(position, instance) && instance.sender.is_none() {
                        self.open_sender(position, Some(address));
                        self.track(position, now).await;
                    }
                }
            }
            SourceChange::Replaced { old, new } => {
                for position in 0..self.instances.len() {
                    let instance = &self.instances[position];
                    if on_interface(position, instance)
                        && instance.sender.as_ref().map(io::SendSocket::source) == Some(old)
                    {
                        tracing::info!(
                            "({}) sending from {new}: {old} went",
                            plan.instances[position].name()
                        );
                        self.open_sender(position, Some(new));
                        self.track(position, now).await;
                    }
                }
            }
            SourceChange::Deassigned(address) => {
                if any_on_interface {
                    let name = self.interface_name(index);
                    tracing::info!("Deassigned address {address} from interface {name}");
                }
                for position in 0..self.instances.len() {
                    let instance = &self.instances[position];
                    if on_interface(position, instance)
                        && instance.sender.as_ref().map(io::SendSocket::source) == Some(address)
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

    /// `track_src_ip`: an instance sending from a configured address
    /// (`mcast_src_ip`, `unicast_src_ip`) on its interface is in FAULT
    /// while that address is gone, and back once it returns (keepalived's
    /// netlink_if_address_filter, `VRRP_FLAG_TRACK_SADDR`); without it the
    /// configured address is used whatever the interface has.
    async fn track_configured_sources(
        &mut self,
        index: u32,
        address: IpAddr,
        added: bool,
        now: Instant,
    ) {
        for position in 0..self.instances.len() {
            let plan = &self.plan.instances[position];
            let instance = &self.instances[position];
            if !plan.model.track_source_ip
                || instance.interface.index != index
                || plan.settings.local_address != Some(address)
            {
                continue;
            }
            let name = plan.name().to_owned();
            if added && instance.sender.is_none() {
                tracing::info!("({name}) source address {address} is back");
                self.open_sender(position, Some(address));
                self.track(position, now).await;
            } else if !added && instance.sender.is_some() {
                tracing::info!("({name}) source address {address} deleted: FAULT until it is back");
                // FAULT first, while the sender is there for a master's
                // priority 0 advert.
                self.instances[position].has_source = false;
                self.track(position, now).await;
                self.instances[position].sender = None;
            }
        }
    }

    /// The name of interface `index` if an instance uses or tracks it.
    fn known_interface_name(&self, index: u32) -> Option<String> {
        self.instances
            .iter()
            .enumerate()
            .find_map(|(position, instance)| {
                if instance.interface.index == index {
                    return Some(instance.interface.name.clone());
                }
                if let Some(vmac) = &instance.vmac
                    && vmac.interface.index == index
                {
                    return Some(vmac.interface.name.clone());
                }
                instance
                    .tracked_links
                    .iter()
                    .position(|tracked| *tracked == index)
                    .map(|place| {
                        self.plan.instances[position].tracked.links[place]
                            .name
                            .clone()
                    })
            })
    }

    /// The name of interface `index`, an instance's or a tracked one.
    pub(super) fn interface_name(&self, index: u32) -> String {
        self.known_interface_name(index)
            .unwrap_or_else(|| format!("interface {index}"))
    }
}

/// Whether link `index` is up now, as the kernel answers; `None` when it
/// cannot be asked.
async fn link_up_now(handle: &rtnetlink::Handle, index: u32) -> Option<bool> {
    match addresses::link_by_index(handle, index).await {
        Ok(link) => Some(addresses::is_up(&link)),
        Err(addresses::AddressError::NoSuchInterface(_)) => Some(false),
        Err(_) => None,
    }
}
