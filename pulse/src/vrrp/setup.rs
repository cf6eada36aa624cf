//! Giving a planned instance ([`InstancePlan`]) what it runs with: its
//! interface as the kernel has it, its send socket, the receive socket of
//! its interface and family, the rtnetlink messages of its virtual
//! addresses, routes and rules, the announcers of their interfaces, and its
//! machine. What is already open (at a reload, what the kept instances
//! use) is taken, not opened again ([`Resources`]).

use std::collections::{HashMap, HashSet};
use std::net::IpAddr;
use std::sync::Arc;

use fulcrum_config::model as config;
use netlink_packet_route::address::AddressMessage;
use netlink_packet_route::route::RouteMessage;
use netlink_packet_route::rule::RuleMessage;

use super::addresses::{self, AddressError};
use super::effects::VirtualState;
use super::io::{Announcer, Interface, ReceiveSocket, SendSocket};
use super::machine::Machine;
use super::packet::Family;
use super::plan::{InstancePlan, PlanError};
use super::routes;
use super::sources::SourceAddresses;
use super::vmac::{self, SavedBases, VirtualMac, VmacError};

/// Why VRRP cannot start (or a reload cannot run).
#[derive(Debug, thiserror::Error)]
pub enum VrrpError {
    #[error(transparent)]
    Plan(#[from] PlanError),
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
    /// keepalived's VRRP process needs IPVS for `lvs_sync_daemon`, and
    /// ends where it has none (vrrp_daemon.c, `vrrp_ipvs_needed`).
    #[error("{0}")]
    Ipvs(String),
    #[error("lvs_sync_daemon: cannot start its thread: {0}")]
    SyncDaemon(std::io::Error),
    #[error("({0}) {1}")]
    Vmac(String, VmacError),
}

/// One running instance: its machine and what it sends and holds with.
pub struct Instance {
    pub machine: Machine,
    /// The configured interface, whose addresses adverts go from.
    pub interface: Interface,
    /// `use_vmac`: the macvlan it runs on.
    pub vmac: Option<VirtualMac>,
    /// `None` without a source address: the instance stays in FAULT.
    pub sender: Option<SendSocket>,
    /// Whether it has an address to send from; cleared before the sender
    /// goes, so that a master leaving for FAULT sends its priority 0
    /// advert first.
    pub has_source: bool,
    /// The index of each tracked link (the plan's `tracked.links`, in
    /// order).
    pub tracked_links: Vec<u32>,
    pub virtual_state: VirtualState,
    /// The addresses announced, each with its interface's announcer.
    pub announced: Vec<(Arc<Announcer>, IpAddr)>,
    /// What the machine was last told: FAULT for the links, and the
    /// priority after the tracking weights.
    pub faulted: bool,
    pub tracked_priority: u8,
    /// Whether [`super::Event::Start`] was given: keepalived holds an
    /// instance in its initial state until each tracked script of weight 0
    /// has a first result.
    pub started: bool,
    /// Whether the next backup state is the first one (keepalived says
    /// "(init)").
    pub starting: bool,
    /// When it last changed state (keepalived's `last_transition`, which
    /// its dumps carry): its start, then each transition.
    pub last_transition: std::time::SystemTime,
    /// Whether its virtual addresses are on their interfaces (keepalived's
    /// `vipset`).
    pub addresses_set: bool,
    /// Set when a reload removes the instance ([`super::plan::removed`]):
    /// its state then, which decides its last notify (and SMTP alert)
    /// instead of STOP.
    pub removed_in_state: Option<super::machine::State>,
    /// The state its last SMTP alert told, in keepalived's words
    /// (keepalived's `last_email_state`): none twice for the same state.
    pub last_alert: Option<&'static str>,
}

/// What instances share, read or opened once: interfaces by name, their
/// source addresses and state by index, announcers by index, and the
/// receive sockets (one per interface and family).
#[derive(Default)]
pub struct Resources {
    pub interfaces: HashMap<String, Interface>,
    pub sources: HashMap<u32, SourceAddresses>,
    /// Up (with carrier) or not, by index, for the instances' interfaces
    /// and the tracked links.
    pub links: HashMap<u32, bool>,
    pub announcers: HashMap<u32, Arc<Announcer>>,
    /// The receive sockets open already, by interface index and family.
    pub receiving: HashSet<(u32, Family)>,
    /// The receive sockets opened here, for the task to read.
    pub opened: Vec<(u32, ReceiveSocket)>,
    /// The settings of the interfaces with macvlans, before the first.
    pub saved_bases: SavedBases,
    /// `dynamic_interfaces`: an interface missing at start is waited for.
    pub dynamic_interfaces: bool,
}

impl Instance {
    /// Where its adverts go and come: its macvlan, unless it sends on the
    /// base (`vmac_xmit_base`).
    pub fn advert_interface(&self) -> &Interface {
        match &self.vmac {
            Some(vmac) if !vmac.transmit_on_base => &vmac.interface,
            _ => &self.interface,
        }
    }
}

/// Gives `plan` its interface, sockets, messages and machine, taking from
/// and adding to `resources`.
pub async fn open_instance(
    handle: &rtnetlink::Handle,
    plan: &InstancePlan,
    resources: &mut Resources,
) -> Result<Instance, VrrpError> {
    let name = plan.name().to_owned();
    let interface = match resources.interfaces.get(&plan.interface) {
        Some(interface) => interface.clone(),
        None => match addresses::interface_with_sources(handle, &plan.interface).await {
            Ok((interface, sources)) => {
                resources
                    .interfaces
                    .insert(plan.interface.clone(), interface.clone());
                resources.sources.insert(interface.index, sources);
                resources.links.insert(interface.index, interface.up);
                interface
            }
            // `dynamic_interfaces`: the instance waits in FAULT for its
            // interface, which the link events bring (task/links.rs
            // `interface_recreated`: index 0 is none).
            Err(AddressError::NoSuchInterface(_)) if resources.dynamic_interfaces => {
                tracing::warn!(
                    "Configuration specifies interface {} which doesn't currently exist - will \
                     use if created",
                    plan.interface
                );
                let interface = Interface::absent(&plan.interface);
                resources
                    .interfaces
                    .insert(plan.interface.clone(), interface.clone());
                resources.links.insert(interface.index, false);
                interface
            }
            Err(error) => {
                return Err(VrrpError::Interface {
                    instance: name.clone(),
                    interface: plan.interface.clone(),
                    error,
                });
            }
        },
    };
    let mut tracked_links = Vec::new();
    for tracked in &plan.tracked.links {
        match addresses::link(handle, &tracked.name).await {
            Ok(link) => {
                resources
                    .links
                    .insert(link.header.index, addresses::is_up(&link));
                tracked_links.push(link.header.index);
            }
            // Down until it appears.
            Err(AddressError::NoSuchInterface(_)) if resources.dynamic_interfaces => {
                tracing::warn!(
                    "Configuration specifies interface {} which doesn't currently exist - will \
                     use if created",
                    tracked.name
                );
                resources.links.insert(0, false);
                tracked_links.push(0);
            }
            Err(error) => {
                return Err(VrrpError::Interface {
                    instance: name.clone(),
                    interface: tracked.name.clone(),
                    error,
                });
            }
        }
    }
    let family = plan.settings.family;
    let source = plan.settings.local_address.or_else(|| {
        resources
            .sources
            .get(&interface.index)
            .and_then(|sources| sources.source(family))
    });
    let vmac = match &plan.vmac {
        // Made once its interface is there.
        Some(_) if interface.index == 0 => None,
        Some(vmac_plan) => {
            let made = vmac::create(
                handle,
                vmac_plan,
                &interface,
                family,
                plan.settings.local_address,
                &mut resources.saved_bases,
            )
            .await
            .map_err(|error| VrrpError::Vmac(name.clone(), error))?;
            resources
                .links
                .insert(made.interface.index, made.interface.up);
            Some(made)
        }
        None => None,
    };
    let advert_interface = match &vmac {
        Some(vmac) if !vmac.transmit_on_base => vmac.interface.clone(),
        _ => interface.clone(),
    };
    let sender = match source {
        Some(source) => Some(
            SendSocket::open(&advert_interface, source, plan.model.unicast_ttl)
                .map_err(|error| VrrpError::Socket(name.clone(), error))?,
        ),
        None => {
            // keepalived too: the instance is in FAULT until an address
            // appears (address_changed), the others run.
            tracing::error!(
                "({name}) {} has no {} address to send adverts from: the instance stays in \
                 FAULT until it has one",
                plan.interface,
                match family {
                    Family::Ipv4 => "IPv4",
                    Family::Ipv6 => "link-local IPv6",
                }
            );
            None
        }
    };
    if advert_interface.index != 0 && resources.receiving.insert((advert_interface.index, family)) {
        let socket = ReceiveSocket::open(&advert_interface, family)
            .map_err(|error| VrrpError::Socket(name.clone(), error))?;
        resources.opened.push((advert_interface.index, socket));
    }
    // Without its interface yet, the addresses are made when it comes.
    let (messages, announced) = if interface.index == 0 {
        (Vec::new(), Vec::new())
    } else {
        virtual_addresses(
            handle,
            &plan.model,
            &interface,
            vmac.as_ref(),
            &name,
            &mut resources.announcers,
        )
        .await?
    };
    let (routes, rules) = routes_and_rules(&plan.model, &interface, &name);
    let mut settings = plan.settings.clone();
    // The machine compares its address with a master's of equal priority.
    settings.local_address = source;
    let priority = settings.priority;
    let mut machine = Machine::new(settings);
    if plan.group.is_some() {
        machine.join_sync_group();
    }
    Ok(Instance {
        machine,
        interface,
        vmac,
        has_source: sender.is_some(),
        sender,
        tracked_links,
        virtual_state: VirtualState {
            addresses: messages,
            routes,
            rules,
            dropped: plan.dropped.clone(),
        },
        announced,
        faulted: false,
        tracked_priority: priority,
        started: false,
        starting: true,
        last_transition: std::time::SystemTime::now(),
        addresses_set: false,
        removed_in_state: None,
        last_alert: None,
    })
}

/// `virtual_ipaddress` and `virtual_ipaddress_excluded` as rtnetlink
/// messages, and the addresses announced, each on its own interface (the
/// instance's, or its `dev`), as keepalived does; with `use_vmac` those of
/// the instance's family on the instance's interface go on its macvlan
/// (vrrp.c `vrrp_complete_instance`).
pub async fn virtual_addresses(
    handle: &rtnetlink::Handle,
    model: &config::VrrpInstance,
    interface: &Interface,
    vmac: Option<&VirtualMac>,
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
        let own = match &address.device {
            None => true,
            Some(device) => *device == interface.name,
        };
        let vmac = vmac.filter(|vmac| Family::of(&address.address.address) == vmac.family);
        let device = match &address.device {
            Some(device) if !own => {
                addresses::interface(handle, device)
                    .await
                    .map_err(|error| VrrpError::Interface {
                        instance: name.to_owned(),
                        interface: device.clone(),
                        error,
                    })?
            }
            _ => match vmac {
                Some(vmac) => vmac.interface.clone(),
                None => interface.clone(),
            },
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
pub fn routes_and_rules(
    model: &config::VrrpInstance,
    interface: &Interface,
    name: &str,
) -> (Vec<RouteMessage>, Vec<RuleMessage>) {
    let mut route_messages = Vec::new();
    for route in &model.virtual_routes {
        match routes::output_interface(route, Some(interface.index), addresses::index_of)
            .and_then(|output| routes::route_message(route, output))
        {
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
