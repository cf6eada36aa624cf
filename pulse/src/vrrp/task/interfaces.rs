//! The kernel's links as keepalived's data dump lists them (vrrp_if.c
//! `dump_if`), from an rtnetlink dump of the links and addresses (what
//! keepalived's own netlink reader sees): every link by index, with the
//! addresses keepalived keeps of each, in the kernel's order: IPv4 ones and
//! link-local IPv6 ones, leaving out the instances' own, as keepalived's
//! reader does (`ignore_address_if_ours_or_link_local`). Without I/O.

use std::collections::HashSet;
use std::net::IpAddr;

use netlink_packet_route::address::{AddressAttribute, AddressMessage};
use netlink_packet_route::link::{LinkAttribute, LinkMessage};

use crate::vrrp::report::data::Link;

/// The links, by index; `ours` are the instances' virtual and excluded
/// addresses.
pub fn links(
    links: &[LinkMessage],
    addresses: &[AddressMessage],
    ours: &HashSet<IpAddr>,
) -> Vec<Link> {
    let mut found: Vec<Link> = links.iter().filter_map(link).collect();
    found.sort_by_key(|link| link.index);
    for message in addresses {
        // IFA_LOCAL is the address itself; IFA_ADDRESS is the peer's on a
        // point-to-point link (and the same address otherwise).
        let local = message
            .attributes
            .iter()
            .find_map(|attribute| match attribute {
                AddressAttribute::Local(address) => Some(*address),
                _ => None,
            });
        let address = local.or_else(|| {
            message
                .attributes
                .iter()
                .find_map(|attribute| match attribute {
                    AddressAttribute::Address(address) => Some(*address),
                    _ => None,
                })
        });
        let Some(address) = address else { continue };
        if ours.contains(&address) {
            continue;
        }
        let Some(link) = found
            .iter_mut()
            .find(|link| link.index == message.header.index)
        else {
            continue;
        };
        match address {
            IpAddr::V4(address) => link.ipv4.push(address),
            // keepalived keeps the link-local ones only (fe80::/10).
            IpAddr::V6(address) if address.segments()[0] & 0xffc0 == 0xfe80 => {
                link.ipv6.push(address)
            }
            IpAddr::V6(_) => {}
        }
    }
    found
}

fn link(message: &LinkMessage) -> Option<Link> {
    let mut name = None;
    let mut mtu = 0;
    let mut hardware_address = Vec::new();
    let mut broadcast_address = Vec::new();
    for attribute in &message.attributes {
        match attribute {
            LinkAttribute::IfName(written) => name = Some(written.clone()),
            LinkAttribute::Mtu(value) => mtu = *value,
            LinkAttribute::Address(bytes) => hardware_address.clone_from(bytes),
            LinkAttribute::Broadcast(bytes) => broadcast_address.clone_from(bytes),
            _ => {}
        }
    }
    // keepalived keeps no address that is all zeros (a loopback's).
    if hardware_address.iter().all(|byte| *byte == 0) {
        hardware_address.clear();
    }
    Some(Link {
        name: name?,
        index: message.header.index,
        ipv4: Vec::new(),
        ipv6: Vec::new(),
        hardware_address,
        broadcast_address,
        flags: message.header.flags.bits(),
        mtu,
        hardware_type: u16::from(message.header.link_layer_type),
    })
}
