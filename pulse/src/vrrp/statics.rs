//! `static_ipaddress`, `static_routes` and `static_rules`: addresses,
//! routes and rules the VRRP part holds whatever its instances' states, as
//! keepalived 2.2.7's VRRP process does (vrrp_daemon.c), which keeps
//! whether it set each (`set`):
//!
//! - at its start, the rules are removed (a crashed run's would be doubled:
//!   the kernel takes the same rule twice), then everything is added; an
//!   address or route already there counts as set;
//! - at a reload, an entry of the new configuration the old one had (as
//!   keepalived compares them) takes its `set` from it; the old entries set
//!   and no longer configured are removed, then the new entries not set
//!   are added;
//! - a static address deleted by someone else is added back, unless
//!   written `no_track` (`reinstate_static_address`); one with `no_track`
//!   stays set, so that a reload does not add it back either;
//! - at its stop, the entries set are removed.
//!
//! The messages are pulse's virtual addresses', routes' and rules'
//! ([`addresses::message`], [`routes::route_message`],
//! [`routes::rule_message`]); only where they go differs: a static address
//! without `dev` goes on `default_interface` (keepalived's default, eth0),
//! and a static route without `dev` on the interface the kernel finds for
//! its gateway.

use fulcrum_config::model as config;
use netlink_packet_route::AddressFamily;
use netlink_packet_route::address::{AddressAttribute, AddressMessage};
use netlink_packet_route::route::RouteMessage;
use netlink_packet_route::rule::RuleMessage;
use rtnetlink::Handle;

use super::{addresses, report, routes};

/// keepalived's `DFLT_INT`, the interface of a static address without
/// `dev` when `default_interface` is not set.
pub const DEFAULT_INTERFACE: &str = "eth0";

/// One line of a static block.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry<M> {
    pub message: M,
    /// The line as keepalived writes it in its logs.
    pub description: String,
    /// Not `no_track`: a static address deleted is added back.
    pub tracked: bool,
    /// Added by pulse (or there already): removed at the stop, not added
    /// again at a reload.
    pub set: bool,
}

impl<M> Entry<M> {
    fn new(message: M, description: String, tracked: bool) -> Entry<M> {
        Entry {
            message,
            description,
            tracked,
            set: false,
        }
    }
}

/// The static blocks as rtnetlink messages, in their configuration order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Statics {
    pub addresses: Vec<Entry<AddressMessage>>,
    pub routes: Vec<Entry<RouteMessage>>,
    pub rules: Vec<Entry<RuleMessage>>,
}

impl Entry<AddressMessage> {
    /// Whether this is the address a kernel event reports (keepalived's
    /// `addr_is_equal`: the interface and the address).
    pub fn is(&self, event: &AddressMessage) -> bool {
        self.message.header.index == event.header.index
            && local_of(&self.message) == local_of(event)
    }

    /// Adds the address (one already there counts as added, as keepalived
    /// takes EEXIST); `set` says whether it is there.
    pub async fn add(&mut self, handle: &Handle) {
        match addresses::add(handle, self.message.clone()).await {
            Ok(()) => self.set = true,
            Err(error) => {
                self.set = false;
                tracing::error!("cannot add static address {}: {error}", self.description);
            }
        }
    }
}

impl Statics {
    /// The messages for `configuration`'s static blocks, none set yet, with
    /// interface names resolved by `index_of`; a line that cannot be
    /// expressed is left out, with the reason in the warnings returned.
    pub fn of(
        configuration: &config::Config,
        index_of: impl Fn(&str) -> Option<u32>,
    ) -> (Statics, Vec<String>) {
        let mut statics = Statics::default();
        let mut warnings = Vec::new();
        let default_interface = configuration
            .global
            .default_interface
            .as_deref()
            .unwrap_or(DEFAULT_INTERFACE);
        for address in &configuration.static_addresses {
            let device = address.device.as_deref().unwrap_or(default_interface);
            match index_of(device) {
                Some(index) => statics.addresses.push(Entry::new(
                    addresses::message(address, index),
                    report::format_address(address, default_interface),
                    !address.no_track,
                )),
                // keepalived's line (vrrp_ipaddress.c).
                None => warnings.push(format!(
                    "Not adding address {} to {device} since interface doesn't exist",
                    address.address
                )),
            }
        }
        for route in &configuration.static_routes {
            let message = routes::output_interface(route, None, &index_of)
                .and_then(|output| routes::route_message(route, output));
            match message {
                Ok(message) => {
                    if !route.tuning_not_applied.is_empty() {
                        warnings.push(format!(
                            "static route {}: added without {}",
                            route.destination,
                            routes::quoted(&route.tuning_not_applied)
                        ));
                    }
                    statics.routes.push(Entry::new(
                        message,
                        route.destination.to_string(),
                        !route.no_track,
                    ));
                }
                Err(why) => warnings.push(format!(
                    "static route {}: {why}; not added",
                    route.destination
                )),
            }
        }
        for rule in &configuration.static_rules {
            match routes::rule_message(rule) {
                Ok(message) => {
                    if !rule.tuning_not_applied.is_empty() {
                        warnings.push(format!(
                            "static rule {}: added without {}",
                            rule.options.join(" "),
                            routes::quoted(&rule.tuning_not_applied)
                        ));
                    }
                    statics
                        .rules
                        .push(Entry::new(message, rule.options.join(" "), !rule.no_track));
                }
                Err(why) => warnings.push(format!(
                    "static rule {}: {why}; not added",
                    rule.options.join(" ")
                )),
            }
        }
        (statics, warnings)
    }

    /// A reload from `self` to `next`: each entry of `next` that `self`
    /// has takes its `set`; returned, the entries of `self` set that `next`
    /// has not, to remove (keepalived's `clear_diff_static_*`). Addresses
    /// are compared as keepalived's `compare_ipaddress` does (address,
    /// prefix length, scope, interface, label: a change of flags alone
    /// leaves the address as it is); routes and rules as whole messages.
    pub fn carry_over(&self, next: &mut Statics) -> Statics {
        Statics {
            addresses: carry(&self.addresses, &mut next.addresses, |one, other| {
                address_key(one) == address_key(other)
            }),
            routes: carry(&self.routes, &mut next.routes, PartialEq::eq),
            rules: carry(&self.rules, &mut next.rules, PartialEq::eq),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.addresses.is_empty() && self.routes.is_empty() && self.rules.is_empty()
    }

    /// At the start: the rules removed whether set or not (keepalived's
    /// forced removal of a crashed run's).
    pub async fn remove_leftover_rules(&self, handle: &Handle) {
        for rule in &self.rules {
            if let Err(error) = routes::remove_rule(handle, rule.message.clone()).await {
                tracing::error!(
                    "cannot remove static rule {} left over: {error}",
                    rule.description
                );
            }
        }
    }

    /// Adds the addresses, then the routes (whose source or gateway may be
    /// one of them), then the rules, as keepalived does: those not set
    /// yet. Each failure is logged and the rest go on.
    pub async fn add(&mut self, handle: &Handle) {
        for address in self.addresses.iter_mut().filter(|entry| !entry.set) {
            address.add(handle).await;
        }
        for route in self.routes.iter_mut().filter(|entry| !entry.set) {
            route.set = match routes::add_route(handle, route.message.clone()).await {
                Ok(()) => true,
                Err(error) => {
                    tracing::error!("cannot add static route {}: {error}", route.description);
                    false
                }
            };
        }
        for rule in self.rules.iter_mut().filter(|entry| !entry.set) {
            rule.set = match routes::add_rule(handle, rule.message.clone()).await {
                Ok(()) => true,
                Err(error) => {
                    tracing::error!("cannot add static rule {}: {error}", rule.description);
                    false
                }
            };
        }
    }

    /// Removes the rules, the routes, then the addresses set (keepalived's
    /// order); one already gone counts as removed.
    pub async fn remove(&mut self, handle: &Handle) {
        for rule in self.rules.iter_mut().filter(|entry| entry.set) {
            if let Err(error) = routes::remove_rule(handle, rule.message.clone()).await {
                tracing::error!("cannot remove static rule {}: {error}", rule.description);
            }
            rule.set = false;
        }
        for route in self.routes.iter_mut().filter(|entry| entry.set) {
            if let Err(error) = routes::remove_route(handle, route.message.clone()).await {
                tracing::error!("cannot remove static route {}: {error}", route.description);
            }
            route.set = false;
        }
        for address in self.addresses.iter_mut().filter(|entry| entry.set) {
            if let Err(error) = addresses::remove(handle, address.message.clone()).await {
                tracing::error!(
                    "cannot remove static address {}: {error}",
                    address.description
                );
            }
            address.set = false;
        }
    }
}

/// [`Statics::carry_over`] for one block.
fn carry<M: Clone>(
    old: &[Entry<M>],
    next: &mut [Entry<M>],
    same: impl Fn(&M, &M) -> bool,
) -> Vec<Entry<M>> {
    for entry in next.iter_mut() {
        if let Some(known) = old
            .iter()
            .find(|known| same(&known.message, &entry.message))
        {
            entry.set = known.set;
        }
    }
    old.iter()
        .filter(|known| {
            known.set
                && !next
                    .iter()
                    .any(|entry| same(&known.message, &entry.message))
        })
        .cloned()
        .collect()
}

/// What keepalived's `compare_ipaddress` compares of an address.
type AddressKey<'a> = (
    AddressFamily,
    u8,
    u8,
    u32,
    Option<&'a String>,
    Option<std::net::IpAddr>,
);

fn local_of(message: &AddressMessage) -> Option<std::net::IpAddr> {
    message
        .attributes
        .iter()
        .find_map(|attribute| match attribute {
            AddressAttribute::Local(address) => Some(*address),
            _ => None,
        })
}

fn address_key(message: &AddressMessage) -> AddressKey<'_> {
    let label = message
        .attributes
        .iter()
        .find_map(|attribute| match attribute {
            AddressAttribute::Label(label) => Some(label),
            _ => None,
        });
    (
        message.header.family,
        message.header.prefix_len,
        u8::from(message.header.scope),
        message.header.index,
        label,
        local_of(message),
    )
}

#[cfg(test)]
mod tests {
    use fulcrum_config::lexer::Options;
    use netlink_packet_route::route::{RouteAttribute, RouteScope};

    use super::*;

    fn configuration(text: &str) -> config::Config {
        let options = Options {
            config_id: None,
            all_config: false,
            random_seed: Some(1),
        };
        let loaded = fulcrum_config::load_str("test.conf", text, &options);
        loaded.config
    }

    /// eth0 is 2, lan is 3, wan is 4; nothing else exists.
    fn index_of(name: &str) -> Option<u32> {
        match name {
            "eth0" => Some(2),
            "lan" => Some(3),
            "wan" => Some(4),
            _ => None,
        }
    }

    const STATICS: &str = "static_ipaddress {
            192.0.2.1/24 dev lan
            192.0.2.2/24 no_track
            192.0.2.3/24 dev missing
        }
        static_routes {
            198.51.100.0/24 via 192.0.2.254
            203.0.113.0/24 dev wan table 100
            local 10.0.0.1
        }
        static_rules {
            from 192.0.2.0/24 table 100 priority 100
            iif lan table 100
        }";

    #[test]
    fn static_lines_become_the_virtual_ones_messages() {
        let (statics, warnings) = Statics::of(&configuration(STATICS), index_of);
        let indexes: Vec<u32> = statics
            .addresses
            .iter()
            .map(|address| address.message.header.index)
            .collect();
        // Without `dev`: keepalived's default interface, eth0.
        assert_eq!(indexes, [3, 2]);
        assert_eq!(statics.addresses[0].message, {
            let model = &configuration(STATICS).static_addresses[0];
            addresses::message(model, 3)
        });
        assert_eq!(
            statics.addresses[1].description,
            "192.0.2.2/24 dev eth0 scope global no_track"
        );
        assert!(statics.addresses[0].tracked);
        assert!(!statics.addresses[1].tracked, "no_track");
        // The kernel's event for the deletion of 192.0.2.1 from lan.
        let mut deleted = AddressMessage::default();
        deleted.header.index = 3;
        deleted
            .attributes
            .push(AddressAttribute::Local("192.0.2.1".parse().unwrap()));
        assert!(statics.addresses[0].is(&deleted));
        deleted.header.index = 2;
        assert!(!statics.addresses[0].is(&deleted));
        assert_eq!(statics.routes.len(), 2);
        // A static route without `dev` names no interface: the kernel finds
        // its gateway's.
        assert!(
            !statics.routes[0]
                .message
                .attributes
                .iter()
                .any(|attribute| matches!(attribute, RouteAttribute::Oif(_)))
        );
        assert_eq!(statics.routes[0].message.header.scope, RouteScope::Universe);
        assert!(
            statics.routes[1]
                .message
                .attributes
                .contains(&RouteAttribute::Oif(4))
        );
        assert_eq!(statics.rules.len(), 1);
        assert_eq!(
            warnings,
            [
                "Not adding address 192.0.2.3/24 to missing since interface doesn't exist",
                "static route 10.0.0.1/32: 'local' not supported yet; not added",
                "static rule iif lan table 100: 'iif' not supported yet; not added",
            ]
        );
    }

    #[test]
    fn default_interface_places_the_addresses_without_dev() {
        let (statics, _) = Statics::of(
            &configuration(
                "global_defs {\n default_interface wan\n}\n\
                 static_ipaddress {\n 192.0.2.2/24\n 192.0.2.1/24 dev lan\n}\n",
            ),
            index_of,
        );
        let indexes: Vec<u32> = statics
            .addresses
            .iter()
            .map(|address| address.message.header.index)
            .collect();
        assert_eq!(indexes, [4, 3]);
        let (statics, warnings) = Statics::of(
            &configuration(
                "global_defs {\n default_interface missing\n}\n\
                 static_ipaddress {\n 192.0.2.2/24\n}\n",
            ),
            index_of,
        );
        assert!(statics.is_empty());
        assert_eq!(warnings.len(), 1);
    }

    #[test]
    fn a_reload_removes_only_what_the_new_configuration_has_not() {
        let (mut old, _) = Statics::of(&configuration(STATICS), index_of);
        for entry in &mut old.addresses {
            entry.set = true;
        }
        for entry in &mut old.routes {
            entry.set = true;
        }
        // The rule's add failed: it is not removed, and added again.
        let changed = STATICS
            .replace("192.0.2.2/24 no_track\n", "192.0.2.4/24 no_track\n")
            .replace("dev wan table 100", "dev wan table 101")
            .replace("192.0.2.1/24 dev lan", "192.0.2.1/24 dev lan noprefixroute");
        let (mut new, _) = Statics::of(&configuration(&changed), index_of);
        let removed = old.carry_over(&mut new);
        // 192.0.2.1 changed only its flags: keepalived leaves it.
        assert_eq!(removed.addresses, [old.addresses[1].clone()]);
        assert_eq!(removed.routes, [old.routes[1].clone()]);
        assert!(removed.rules.is_empty());
        let set = |statics: &Statics| {
            (
                statics
                    .addresses
                    .iter()
                    .map(|entry| entry.set)
                    .collect::<Vec<_>>(),
                statics
                    .routes
                    .iter()
                    .map(|entry| entry.set)
                    .collect::<Vec<_>>(),
                statics
                    .rules
                    .iter()
                    .map(|entry| entry.set)
                    .collect::<Vec<_>>(),
            )
        };
        // What is new is to be added; the rest stays as it is.
        assert_eq!(
            set(&new),
            (vec![true, false], vec![true, false], vec![false])
        );
        let mut same = Statics::of(&configuration(STATICS), index_of).0;
        assert!(old.carry_over(&mut same).is_empty());
        assert_eq!(same, old);
        let mut none = Statics::default();
        assert_eq!(old.carry_over(&mut none).addresses, old.addresses);
    }
}
