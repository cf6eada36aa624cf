//! Catching up after lost rtnetlink events, without I/O.
//!
//! The kernel drops link and address events when the monitor socket's
//! receive buffer is full (`ENOBUFS`, which rtnetlink hands on as an
//! overrun): a burst of changes, such as a script adding thousands of
//! addresses, can hide a virtual address deleted by hand or a link going
//! down. After an overrun the task reads every link and address again;
//! [`lost_events`] turns the difference from what it knew into the events
//! it missed, which it then handles as if they had come.

use std::collections::{HashMap, HashSet};
use std::net::IpAddr;

use netlink_packet_route::AddressFamily;
use netlink_packet_route::address::{AddressAttribute, AddressMessage, AddressScope};
use netlink_packet_route::link::LinkMessage;
use rtnetlink::packet_route::RouteNetlinkMessage;

use super::netlink_events;
use super::sources::SourceAddresses;

/// What the task knew before the loss.
pub struct Known<'a> {
    /// Up or not, by index, for the links it follows.
    pub links: &'a HashMap<u32, bool>,
    /// The source addresses of the instances' interfaces, by index.
    pub sources: &'a HashMap<u32, SourceAddresses>,
    /// The virtual addresses the masters hold.
    pub virtual_addresses: Vec<&'a AddressMessage>,
}

/// The events to handle, in order: every link as it is now (handling one
/// that did not change changes nothing), the links that went, the
/// addresses that went, then every address as it is now (again, a known one
/// changes nothing).
pub fn lost_events(
    known: &Known<'_>,
    links: Vec<LinkMessage>,
    addresses: Vec<AddressMessage>,
) -> Vec<RouteNetlinkMessage> {
    let present_links: HashSet<u32> = links.iter().map(|link| link.header.index).collect();
    let present_addresses: HashSet<(u32, IpAddr)> = addresses
        .iter()
        .filter_map(|message| {
            netlink_events::address_of(message).map(|(address, _)| (message.header.index, address))
        })
        .collect();
    let mut events: Vec<RouteNetlinkMessage> = links
        .into_iter()
        .map(RouteNetlinkMessage::NewLink)
        .collect();
    let mut gone_links: Vec<u32> = known
        .links
        .keys()
        .copied()
        .filter(|index| !present_links.contains(index))
        .collect();
    gone_links.sort_unstable();
    for index in gone_links {
        let mut gone = LinkMessage::default();
        gone.header.index = index;
        events.push(RouteNetlinkMessage::DelLink(gone));
    }
    let mut gone_sources: Vec<(u32, IpAddr, bool)> = known
        .sources
        .iter()
        .flat_map(|(index, sources)| {
            sources
                .addresses()
                .into_iter()
                .map(move |(address, link_scope)| (*index, address, link_scope))
        })
        .filter(|(index, address, _)| !present_addresses.contains(&(*index, *address)))
        .collect();
    gone_sources.sort_unstable();
    for (index, address, link_scope) in gone_sources {
        events.push(RouteNetlinkMessage::DelAddress(address_message(
            index, address, link_scope,
        )));
    }
    for virtual_address in &known.virtual_addresses {
        let gone = netlink_events::address_of(virtual_address).is_some_and(|(address, _)| {
            !present_addresses.contains(&(virtual_address.header.index, address))
        });
        if gone {
            events.push(RouteNetlinkMessage::DelAddress((*virtual_address).clone()));
        }
    }
    events.extend(addresses.into_iter().map(RouteNetlinkMessage::NewAddress));
    events
}

/// A message naming `address` on interface `index`, as the kernel's would.
fn address_message(index: u32, address: IpAddr, link_scope: bool) -> AddressMessage {
    let mut message = AddressMessage::default();
    message.header.index = index;
    message.header.family = match address {
        IpAddr::V4(_) => AddressFamily::Inet,
        IpAddr::V6(_) => AddressFamily::Inet6,
    };
    message.header.scope = if link_scope {
        AddressScope::Link
    } else {
        AddressScope::Universe
    };
    message.attributes.push(match address {
        IpAddr::V4(_) => AddressAttribute::Local(address),
        IpAddr::V6(_) => AddressAttribute::Address(address),
    });
    message
}

#[cfg(test)]
mod tests {
    use super::*;
    use netlink_packet_route::link::{LinkAttribute, LinkFlags};

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    fn link(index: u32, name: &str, up: bool) -> LinkMessage {
        let mut link = LinkMessage::default();
        link.header.index = index;
        if up {
            link.header.flags = LinkFlags::Up | LinkFlags::Running | LinkFlags::LowerUp;
        }
        link.attributes.push(LinkAttribute::IfName(name.into()));
        link
    }

    /// What each event says, in words, to compare lists.
    fn describe(events: &[RouteNetlinkMessage]) -> Vec<String> {
        events
            .iter()
            .map(|event| match event {
                RouteNetlinkMessage::NewLink(link) => format!("link {}", link.header.index),
                RouteNetlinkMessage::DelLink(link) => format!("link {} gone", link.header.index),
                RouteNetlinkMessage::NewAddress(message) => {
                    let (address, link_scope) = netlink_events::address_of(message).unwrap();
                    format!("{address} on {} (link {link_scope})", message.header.index)
                }
                RouteNetlinkMessage::DelAddress(message) => {
                    let (address, link_scope) = netlink_events::address_of(message).unwrap();
                    format!(
                        "{address} gone from {} (link {link_scope})",
                        message.header.index
                    )
                }
                other => format!("{other:?}"),
            })
            .collect()
    }

    #[test]
    fn what_went_while_events_were_lost_comes_back_as_its_events() {
        let links = HashMap::from([(2, true), (3, true), (4, false)]);
        let mut eth0 = SourceAddresses::default();
        eth0.added(ip("192.0.2.10"), false);
        eth0.added(ip("192.0.2.11"), false);
        eth0.added(ip("fe80::1"), true);
        let sources = HashMap::from([(2, eth0)]);
        let held = address_message(2, ip("192.0.2.100"), false);
        let still_held = address_message(2, ip("192.0.2.101"), false);
        let known = Known {
            links: &links,
            sources: &sources,
            virtual_addresses: vec![&held, &still_held],
        };
        // Now: link 3 is gone, 192.0.2.10 and the link-local address went,
        // so did the virtual address 192.0.2.100; 192.0.2.12 came.
        let events = lost_events(
            &known,
            vec![link(2, "eth0", true), link(4, "eth2", false)],
            vec![
                address_message(2, ip("192.0.2.11"), false),
                address_message(2, ip("192.0.2.12"), false),
                address_message(2, ip("192.0.2.101"), false),
            ],
        );
        assert_eq!(
            describe(&events),
            [
                "link 2",
                "link 4",
                "link 3 gone",
                "192.0.2.10 gone from 2 (link false)",
                "fe80::1 gone from 2 (link true)",
                "192.0.2.100 gone from 2 (link false)",
                "192.0.2.11 on 2 (link false)",
                "192.0.2.12 on 2 (link false)",
                "192.0.2.101 on 2 (link false)",
            ]
        );
    }

    #[test]
    fn nothing_lost_nothing_gone() {
        let links = HashMap::from([(2, true)]);
        let mut eth0 = SourceAddresses::default();
        eth0.added(ip("192.0.2.10"), false);
        let sources = HashMap::from([(2, eth0)]);
        let known = Known {
            links: &links,
            sources: &sources,
            virtual_addresses: Vec::new(),
        };
        let events = lost_events(
            &known,
            vec![link(2, "eth0", true)],
            vec![address_message(2, ip("192.0.2.10"), false)],
        );
        assert_eq!(
            describe(&events),
            ["link 2", "192.0.2.10 on 2 (link false)"]
        );
    }
}
