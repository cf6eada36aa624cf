//! `virtual_routes` and `virtual_rules` as rtnetlink messages, added with
//! the virtual addresses and removed with them.
//!
//! The common forms are supported: a route's destination, `src`, one
//! `via`, `dev`, `table` (a number, `main`, `local` or `default`),
//! `metric`, `scope` and the kinds `blackhole`, `unreachable`, `prohibit`
//! and `throw`; a rule's `from`, `to`, `table`, `priority` and `fwmark`
//! (`N` or `N/MASK`). What is not refuses the line with a reason, which
//! the daemon logs; the rest of the instance runs.

use std::net::IpAddr;

use fulcrum_config::model::{Route, Rule, Scope};
use netlink_packet_route::AddressFamily;
use netlink_packet_route::route::{RouteMessage, RouteProtocol, RouteScope, RouteType};
use netlink_packet_route::rule::{RuleAction, RuleAttribute, RuleMessage};
use rtnetlink::{Handle, RouteMessageBuilder};

use super::addresses::AddressError;

/// iproute2's reserved table numbers.
fn table_number(table: &str) -> Result<u32, String> {
    match table {
        "main" => Ok(254),
        "local" => Ok(255),
        "default" => Ok(253),
        number => number
            .parse()
            .map_err(|_| format!("table {table}: only numbers, main, local and default")),
    }
}

fn route_scope(scope: Scope) -> RouteScope {
    match scope {
        Scope::Global => RouteScope::Universe,
        Scope::Site => RouteScope::Site,
        Scope::Link => RouteScope::Link,
        Scope::Host => RouteScope::Host,
        Scope::Nowhere => RouteScope::NoWhere,
        Scope::Number(number) => RouteScope::from(number),
    }
}

/// The interface a unicast route goes out of: its `dev`'s index, found by
/// `index_of`, or `default_index` when it names none (a virtual route's
/// instance's interface; none for a static route, which the kernel puts
/// on its gateway's).
pub fn output_interface(
    route: &Route,
    default_index: Option<u32>,
    index_of: impl Fn(&str) -> Option<u32>,
) -> Result<Option<u32>, String> {
    match &route.device {
        Some(device) => index_of(device)
            .map(Some)
            .ok_or_else(|| format!("interface {device} does not exist")),
        None => Ok(default_index),
    }
}

/// The message for one `virtual_routes` or `static_routes` line, going out
/// of interface `output` if unicast ([`output_interface`]).
pub fn route_message(route: &Route, output: Option<u32>) -> Result<RouteMessage, String> {
    not_supported(&route.not_applied)?;
    let kind = match route.kind.as_deref() {
        None | Some("unicast") => RouteType::Unicast,
        Some("blackhole") => RouteType::BlackHole,
        Some("unreachable") => RouteType::Unreachable,
        Some("prohibit") => RouteType::Prohibit,
        Some("throw") => RouteType::Throw,
        Some(other) => return Err(format!("route type {other} is not supported")),
    };
    if route.gateways.len() > 1 {
        return Err("multipath routes are not supported".into());
    }
    let destination = route.destination;
    let mut builder = RouteMessageBuilder::<IpAddr>::new()
        .destination_prefix(destination.address, destination.length)
        .map_err(|error| error.to_string())?
        .kind(kind);
    if let Some(gateway) = route.gateways.first() {
        builder = builder
            .gateway(*gateway)
            .map_err(|error| error.to_string())?;
    }
    if let Some(source) = route.source {
        builder = builder
            .pref_source(source)
            .map_err(|error| error.to_string())?;
    }
    if kind == RouteType::Unicast {
        if let Some(index) = output {
            builder = builder.output_interface(index);
        }
    }
    if let Some(table) = &route.table {
        builder = builder.table_id(table_number(table)?);
    }
    if let Some(metric) = route.metric {
        builder = builder.priority(metric);
    }
    // keepalived 2.2.7 sends RT_SCOPE_UNIVERSE unless `scope` is written,
    // a route without a gateway included (where `ip route` would say
    // `scope link`): the kernel takes both, and `ip route` shows
    // keepalived's (pulse/tests/vrrp/statics.rs compares them).
    let scope = route.scope.map_or(RouteScope::Universe, route_scope);
    // keepalived marks its routes `proto keepalived` (RTPROT_KEEPALIVED,
    // vrrp_iproute.c), as `ip route` then shows them.
    Ok(builder
        .scope(scope)
        .protocol(RouteProtocol::KeepAlived)
        .build())
}

/// The message for one `virtual_rules` line.
pub fn rule_message(rule: &Rule) -> Result<RuleMessage, String> {
    not_supported(&rule.not_applied)?;
    let mut message = RuleMessage::default();
    let family = rule
        .from
        .or(rule.to)
        .map_or(AddressFamily::Inet, |prefix| match prefix.address {
            IpAddr::V4(_) => AddressFamily::Inet,
            IpAddr::V6(_) => AddressFamily::Inet6,
        });
    message.header.family = family;
    message.header.action = RuleAction::ToTable;
    if let Some(from) = rule.from {
        message.header.src_len = from.length;
        message.attributes.push(RuleAttribute::Source(from.address));
    }
    if let Some(to) = rule.to {
        message.header.dst_len = to.length;
        message
            .attributes
            .push(RuleAttribute::Destination(to.address));
    }
    let table = match &rule.table {
        Some(table) => table_number(table)?,
        None => return Err("a rule without a table is not supported".into()),
    };
    if table > 255 {
        message.attributes.push(RuleAttribute::Table(table));
    } else {
        message.header.table = table as u8;
    }
    // keepalived marks the rules it tracks (all but `no_track` ones)
    // `proto keepalived` (vrrp_iprule.c).
    if !rule.no_track {
        message
            .attributes
            .push(RuleAttribute::Protocol(RouteProtocol::KeepAlived));
    }
    if let Some(priority) = rule.priority {
        message.attributes.push(RuleAttribute::Priority(priority));
    }
    if let Some(mark) = &rule.fwmark {
        let (value, mask) = match mark.split_once('/') {
            Some((value, mask)) => (value, Some(mask)),
            None => (mark.as_str(), None),
        };
        message
            .attributes
            .push(RuleAttribute::FwMark(parse_number(value)?));
        if let Some(mask) = mask {
            message
                .attributes
                .push(RuleAttribute::FwMask(parse_number(mask)?));
        }
    }
    Ok(message)
}

/// A route or rule with an option that changes which traffic it takes,
/// or what it does with it, is left out whole (`pulse -t` notes the
/// option): added without it, it would be another route or rule.
fn not_supported(options: &[String]) -> Result<(), String> {
    if options.is_empty() {
        return Ok(());
    }
    Err(format!("{} not supported yet", quoted(options)))
}

/// `'a', 'b'`, for a log line.
pub fn quoted(options: &[String]) -> String {
    let quoted: Vec<String> = options.iter().map(|option| format!("'{option}'")).collect();
    quoted.join(", ")
}

fn parse_number(text: &str) -> Result<u32, String> {
    let parsed = match text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        Some(hex) => u32::from_str_radix(hex, 16),
        None => text.parse(),
    };
    parsed.map_err(|_| format!("{text} is not a number"))
}

/// Adds a route; one already there counts as added.
pub async fn add_route(handle: &Handle, message: RouteMessage) -> Result<(), AddressError> {
    ignore(handle.route().add(message).execute().await, &[libc::EEXIST])
}

/// Removes a route; one already gone counts as removed.
pub async fn remove_route(handle: &Handle, message: RouteMessage) -> Result<(), AddressError> {
    ignore(
        handle.route().del(message).execute().await,
        &[libc::ESRCH, libc::ENOENT],
    )
}

pub async fn add_rule(handle: &Handle, message: RuleMessage) -> Result<(), AddressError> {
    let mut request = handle.rule().add();
    *request.message_mut() = message;
    ignore(request.execute().await, &[libc::EEXIST])
}

pub async fn remove_rule(handle: &Handle, message: RuleMessage) -> Result<(), AddressError> {
    ignore(
        handle.rule().del(message).execute().await,
        &[libc::ENOENT, libc::ESRCH],
    )
}

fn ignore(result: Result<(), rtnetlink::Error>, codes: &[i32]) -> Result<(), AddressError> {
    match result {
        Err(rtnetlink::Error::NetlinkError(error))
            if error
                .to_io()
                .raw_os_error()
                .is_some_and(|code| codes.contains(&code)) =>
        {
            Ok(())
        }
        result => Ok(result?),
    }
}

#[cfg(test)]
mod tests {
    use fulcrum_config::lexer::Options;
    use netlink_packet_route::route::{RouteAddress, RouteAttribute};

    use super::*;
    use crate::vrrp::addresses;

    /// An instance on `lo` with these `virtual_routes` and `virtual_rules`
    /// lines.
    fn instance(routes: &str, rules: &str) -> fulcrum_config::model::VrrpInstance {
        let options = Options {
            config_id: None,
            all_config: false,
            random_seed: Some(1),
        };
        let text = format!(
            "vrrp_instance VI_1 {{\n interface lo\n virtual_router_id 1\n \
             virtual_ipaddress {{\n 192.0.2.10\n }}\n \
             virtual_routes {{\n{routes}\n }}\n virtual_rules {{\n{rules}\n }}\n}}\n"
        );
        let loaded = fulcrum_config::load_str("test.conf", &text, &options);
        let [instance] = loaded.config.vrrp_instances.as_slice() else {
            panic!("one instance expected");
        };
        instance.clone()
    }

    #[test]
    fn routes_and_rules_become_messages() {
        let instance = instance(
            "198.51.100.0/24 via 192.0.2.1 table 100 metric 5
             blackhole 203.0.113.0/24
             10.9.0.0/16 src 192.0.2.10 dev lo",
            "from 192.0.2.0/24 table 100 priority 1000
             to 10.0.0.0/8 table main fwmark 0x10/0xff",
        );
        let via = route_message(&instance.virtual_routes[0], Some(7)).unwrap();
        assert_eq!(via.header.table, 100);
        assert_eq!(via.header.destination_prefix_length, 24);
        assert_eq!(via.header.scope, RouteScope::Universe);
        assert!(
            via.attributes
                .contains(&RouteAttribute::Gateway(RouteAddress::Inet(
                    "192.0.2.1".parse().unwrap()
                )))
        );
        assert!(via.attributes.contains(&RouteAttribute::Priority(5)));
        assert!(via.attributes.contains(&RouteAttribute::Oif(7)));
        assert_eq!(via.header.protocol, RouteProtocol::KeepAlived);

        let blackhole = route_message(&instance.virtual_routes[1], Some(7)).unwrap();
        assert_eq!(blackhole.header.kind, RouteType::BlackHole);
        assert!(
            !blackhole
                .attributes
                .iter()
                .any(|attribute| matches!(attribute, RouteAttribute::Oif(_)))
        );

        let lo = output_interface(&instance.virtual_routes[2], Some(7), addresses::index_of);
        assert_eq!(lo, Ok(Some(1)));
        let on_link = route_message(&instance.virtual_routes[2], lo.unwrap()).unwrap();
        assert_eq!(on_link.header.scope, RouteScope::Universe);
        assert!(on_link.attributes.contains(&RouteAttribute::Oif(1)), "lo");
        assert!(
            on_link
                .attributes
                .contains(&RouteAttribute::PrefSource(RouteAddress::Inet(
                    "192.0.2.10".parse().unwrap()
                )))
        );

        let from = rule_message(&instance.virtual_rules[0]).unwrap();
        assert_eq!(from.header.src_len, 24);
        assert_eq!(from.header.table, 100);
        assert!(from.attributes.contains(&RuleAttribute::Priority(1000)));
        assert!(
            from.attributes
                .contains(&RuleAttribute::Protocol(RouteProtocol::KeepAlived))
        );
        let to = rule_message(&instance.virtual_rules[1]).unwrap();
        assert_eq!(to.header.dst_len, 8);
        assert_eq!(to.header.table, 254);
        assert!(to.attributes.contains(&RuleAttribute::FwMark(0x10)));
        assert!(to.attributes.contains(&RuleAttribute::FwMask(0xff)));
    }

    #[test]
    fn options_not_applied_leave_a_line_out_unless_they_only_tune_it() {
        let instance = instance(
            "198.51.100.0/24 via 192.0.2.1 onlink mtu lock 1400
             198.51.100.0/24 via 192.0.2.1 table 100
             unicast 198.51.100.0/24 via 192.0.2.1
             local 198.51.100.1
             2001:db8:1::/64 from 2001:db8::/64 via 2001:db8::1 mtu 1400",
            "iif eth0 table 100 protocol 4
             not from 192.0.2.0/24 table 100
             from 192.0.2.0/24 table 100
             from 192.0.2.0/24 table 100 protocol 4",
        );
        // Tuning options only: added without them (the daemon warns).
        let tuned = route_message(&instance.virtual_routes[0], Some(7)).unwrap();
        assert!(
            tuned
                .attributes
                .contains(&RouteAttribute::Gateway(RouteAddress::Inet(
                    "192.0.2.1".parse().unwrap()
                )))
        );
        assert_eq!(
            instance.virtual_routes[0].tuning_not_applied,
            ["onlink", "mtu"]
        );
        assert!(route_message(&instance.virtual_routes[1], Some(7)).is_ok());
        let unicast = route_message(&instance.virtual_routes[2], Some(7)).unwrap();
        assert_eq!(unicast.header.kind, RouteType::Unicast);
        assert_eq!(
            route_message(&instance.virtual_routes[3], Some(7)).unwrap_err(),
            "'local' not supported yet"
        );
        assert_eq!(
            route_message(&instance.virtual_routes[4], Some(7)).unwrap_err(),
            "'from' not supported yet"
        );
        assert_eq!(
            rule_message(&instance.virtual_rules[0]).unwrap_err(),
            "'iif' not supported yet"
        );
        assert_eq!(
            rule_message(&instance.virtual_rules[1]).unwrap_err(),
            "'not' not supported yet"
        );
        assert!(rule_message(&instance.virtual_rules[2]).is_ok());
        let labelled = rule_message(&instance.virtual_rules[3]).unwrap();
        assert_eq!(labelled.header.table, 100);
        assert_eq!(instance.virtual_rules[3].tuning_not_applied, ["protocol"]);
    }
}
