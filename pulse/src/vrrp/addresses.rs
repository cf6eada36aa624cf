//! The interfaces VRRP runs on and the virtual addresses it adds and
//! removes, through rtnetlink.

use std::io;
use std::net::IpAddr;

use fulcrum_config::model::{Scope, VirtualAddress};
use futures_util::TryStreamExt;
use netlink_packet_route::AddressFamily;
use netlink_packet_route::address::{
    AddressAttribute, AddressFlags, AddressHeaderFlags, AddressMessage, AddressScope, CacheInfo,
};
use netlink_packet_route::link::{LinkAttribute, LinkFlags, LinkMessage};
use rtnetlink::Handle;

use super::io::Interface;
use super::packet::Family;
use super::sources::SourceAddresses;

#[derive(Debug, thiserror::Error)]
pub enum AddressError {
    #[error("interface {0} does not exist")]
    NoSuchInterface(String),
    #[error("interface {0} has no Ethernet address")]
    NoHardwareAddress(String),
    #[error("rtnetlink: {0}")]
    Netlink(#[from] rtnetlink::Error),
    #[error("{0}")]
    Io(#[from] io::Error),
}

/// keepalived's test: a link is up when it is administratively up and
/// has carrier (`IFF_UP` and `IFF_RUNNING`).
pub fn is_up(link: &LinkMessage) -> bool {
    link.header
        .flags
        .contains(LinkFlags::Up | LinkFlags::Running)
}

/// The link called `name`.
pub async fn link(handle: &Handle, name: &str) -> Result<LinkMessage, AddressError> {
    let mut links = handle.link().get().match_name(name.to_owned()).execute();
    match links.try_next().await {
        Ok(Some(link)) => Ok(link),
        // The kernel says ENODEV for a name it does not know.
        Ok(None) | Err(rtnetlink::Error::NetlinkError(_)) => {
            Err(AddressError::NoSuchInterface(name.to_owned()))
        }
        Err(error) => Err(error.into()),
    }
}

/// The link of index `index`.
pub async fn link_by_index(handle: &Handle, index: u32) -> Result<LinkMessage, AddressError> {
    let mut links = handle.link().get().match_index(index).execute();
    match links.try_next().await {
        Ok(Some(link)) => Ok(link),
        // The kernel says ENODEV for an index it does not know.
        Ok(None) | Err(rtnetlink::Error::NetlinkError(_)) => {
            Err(AddressError::NoSuchInterface(index.to_string()))
        }
        Err(error) => Err(error.into()),
    }
}

/// A link's Ethernet address, if it has one.
pub fn hardware_address(link: &LinkMessage) -> Option<[u8; 6]> {
    link.attributes
        .iter()
        .find_map(|attribute| match attribute {
            LinkAttribute::Address(bytes) => <[u8; 6]>::try_from(bytes.as_slice()).ok(),
            _ => None,
        })
}

/// Reads what VRRP needs of interface `name`.
pub async fn interface(handle: &Handle, name: &str) -> Result<Interface, AddressError> {
    Ok(interface_with_sources(handle, name).await?.0)
}

/// [`interface`], with every address of the interface adverts can go
/// from, for the address events that follow.
pub async fn interface_with_sources(
    handle: &Handle,
    name: &str,
) -> Result<(Interface, SourceAddresses), AddressError> {
    let link = link(handle, name).await?;
    let hardware_address =
        hardware_address(&link).ok_or_else(|| AddressError::NoHardwareAddress(name.to_owned()))?;
    let index = link.header.index;
    let mut sources = SourceAddresses::default();
    let mut secondaries = Vec::new();
    let mut addresses = handle
        .address()
        .get()
        .set_link_index_filter(index)
        .execute();
    while let Some(message) = addresses.try_next().await? {
        let Some((address, link_scope)) = super::netlink_events::address_of(&message) else {
            continue;
        };
        // The kernel's primary IPv4 address comes first, whatever the
        // order of the dump.
        if message.header.flags.contains(AddressHeaderFlags::Secondary) {
            secondaries.push((address, link_scope));
        } else {
            sources.added(address, link_scope);
        }
    }
    for (address, link_scope) in secondaries {
        sources.added(address, link_scope);
    }
    let interface = Interface {
        name: name.to_owned(),
        index,
        up: is_up(&link),
        hardware_address,
        ipv4: match sources.source(Family::Ipv4) {
            Some(IpAddr::V4(address)) => Some(address),
            _ => None,
        },
        ipv6_link_local: match sources.source(Family::Ipv6) {
            Some(IpAddr::V6(address)) => Some(address),
            _ => None,
        },
    };
    Ok((interface, sources))
}

/// The interface index of `name`.
pub fn index_of(name: &str) -> Option<u32> {
    let name = std::ffi::CString::new(name).ok()?;
    let index = unsafe { libc::if_nametoindex(name.as_ptr()) };
    (index != 0).then_some(index)
}

/// The rtnetlink message for `address` on interface `index`, with the
/// `virtual_ipaddress` options the kernel takes as attributes and flags.
pub fn message(address: &VirtualAddress, index: u32) -> AddressMessage {
    let mut message = AddressMessage::default();
    let local = address.address.address;
    message.header.family = match local {
        IpAddr::V4(_) => AddressFamily::Inet,
        IpAddr::V6(_) => AddressFamily::Inet6,
    };
    message.header.prefix_len = address.address.length;
    message.header.index = index;
    message.header.scope = match address.scope {
        Scope::Global => AddressScope::Universe,
        Scope::Site => AddressScope::Site,
        Scope::Link => AddressScope::Link,
        Scope::Host => AddressScope::Host,
        Scope::Nowhere => AddressScope::Nowhere,
        Scope::Number(number) => AddressScope::from(number),
    };
    message.attributes.push(AddressAttribute::Local(local));
    let peer = address.peer.map_or(local, |peer| peer.address);
    message.attributes.push(AddressAttribute::Address(peer));
    if let Some(peer) = address.peer {
        message.header.prefix_len = peer.length;
    }
    if let Some(IpAddr::V4(broadcast)) = address.broadcast {
        message
            .attributes
            .push(AddressAttribute::Broadcast(broadcast));
    }
    if let Some(label) = &address.label {
        message
            .attributes
            .push(AddressAttribute::Label(label.clone()));
    }
    let ipv6 = local.is_ipv6();
    let mut flags = AddressFlags::empty();
    // keepalived 2.2.7 gives every IPv6 virtual address `nodad`, so that it
    // is usable at once and a VRRP split brain cannot leave it `dadfailed`
    // for good; its `-nodad` asks for duplicate address detection back.
    // (Seen with `ip addr` on both tools' addresses: pulse/tests/vrrp.rs,
    // "address options as keepalived applies them".)
    if ipv6 && !address.no_dad {
        flags |= AddressFlags::Nodad;
    }
    if address.home {
        flags |= AddressFlags::Homeaddress;
    }
    if address.manage_temporary_address {
        flags |= AddressFlags::Managetempaddr;
    }
    if address.no_prefix_route {
        flags |= AddressFlags::Noprefixroute;
    }
    if address.autojoin {
        flags |= AddressFlags::Mcautojoin;
    }
    if !flags.is_empty() {
        message.header.flags = AddressHeaderFlags::from_bits_truncate(flags.bits() as u8);
        message.attributes.push(AddressAttribute::Flags(flags));
    }
    // keepalived 2.2.7 applies `preferred_lft` to IPv6 addresses only (an
    // IPv4 one stays preferred for ever; the configuration warns), and
    // deprecates a /128 written without it, so that the address is not
    // chosen as a source (RFC 3484). Valid for ever, as `ip` does.
    let preferred = match address.preferred_lifetime {
        Some(lifetime) => lifetime,
        None if message.header.prefix_len == 128 => Some(0),
        None => None,
    };
    if let (true, Some(preferred)) = (ipv6, preferred) {
        let mut lifetimes = CacheInfo::default();
        lifetimes.ifa_preferred = preferred;
        lifetimes.ifa_valid = FOREVER;
        message
            .attributes
            .push(AddressAttribute::CacheInfo(lifetimes));
    }
    message
}

/// The kernel's "forever" lifetime (`INFINITY_LIFE_TIME`).
const FOREVER: u32 = u32::MAX;

/// Adds an address; one already there counts as added (a pulse restarted
/// after a crash finds its own).
pub async fn add(handle: &Handle, message: AddressMessage) -> Result<(), AddressError> {
    let mut request = handle
        .address()
        .add(message.header.index, first_local(&message), 0);
    *request.message_mut() = message;
    match request.execute().await {
        Err(rtnetlink::Error::NetlinkError(error))
            if error.to_io().raw_os_error() == Some(libc::EEXIST) =>
        {
            Ok(())
        }
        result => Ok(result?),
    }
}

/// Removes an address; one already gone counts as removed.
pub async fn remove(handle: &Handle, message: AddressMessage) -> Result<(), AddressError> {
    match handle.address().del(message).execute().await {
        Err(rtnetlink::Error::NetlinkError(error))
            if matches!(
                error.to_io().raw_os_error(),
                Some(libc::EADDRNOTAVAIL | libc::ENOENT | libc::ENODEV)
            ) =>
        {
            Ok(())
        }
        result => Ok(result?),
    }
}

fn first_local(message: &AddressMessage) -> IpAddr {
    message
        .attributes
        .iter()
        .find_map(|attribute| match attribute {
            AddressAttribute::Local(address) => Some(*address),
            _ => None,
        })
        .expect("message() always sets IFA_LOCAL")
}

#[cfg(test)]
mod tests {
    use fulcrum_config::lexer::Options;

    use super::*;

    fn addresses_of(text: &str) -> Vec<VirtualAddress> {
        let options = Options {
            config_id: None,
            all_config: false,
            random_seed: Some(1),
        };
        let loaded = fulcrum_config::load_str("test.conf", text, &options);
        let [instance] = loaded.config.vrrp_instances.as_slice() else {
            panic!("one instance expected");
        };
        instance
            .virtual_addresses
            .iter()
            .chain(&instance.excluded_addresses)
            .cloned()
            .collect()
    }

    #[test]
    fn the_sub_syntax_becomes_attributes_and_flags() {
        let addresses = addresses_of(
            "vrrp_instance VI_1 {
                interface eth0
                virtual_router_id 1
                virtual_ipaddress {
                    192.0.2.10/24 brd 192.0.2.255 scope link label eth0:vip
                    192.0.2.11
                }
                virtual_ipaddress_excluded {
                    2001:db8::10/64 -nodad noprefixroute
                    2001:db8::11/128
                    2001:db8::12/128 preferred_lft forever
                    2001:db8::13/64 preferred_lft 30
                }
            }",
        );
        let first = message(&addresses[0], 7);
        assert_eq!(first.header.index, 7);
        assert_eq!(first.header.prefix_len, 24);
        assert_eq!(first.header.family, AddressFamily::Inet);
        assert_eq!(first.header.scope, AddressScope::Link);
        let ten: IpAddr = "192.0.2.10".parse().unwrap();
        assert!(first.attributes.contains(&AddressAttribute::Local(ten)));
        assert!(first.attributes.contains(&AddressAttribute::Address(ten)));
        assert!(
            first
                .attributes
                .contains(&AddressAttribute::Broadcast("192.0.2.255".parse().unwrap()))
        );
        assert!(
            first
                .attributes
                .contains(&AddressAttribute::Label("eth0:vip".into()))
        );

        let second = message(&addresses[2], 7);
        assert_eq!(second.header.family, AddressFamily::Inet6);
        assert_eq!(second.header.prefix_len, 64);
        assert_eq!(second.header.scope, AddressScope::Universe);
        // keepalived's `-nodad` asks for duplicate address detection.
        assert!(
            second
                .attributes
                .contains(&AddressAttribute::Flags(AddressFlags::Noprefixroute))
        );
        let lifetimes = |message: &AddressMessage| {
            message
                .attributes
                .iter()
                .find_map(|attribute| match attribute {
                    AddressAttribute::CacheInfo(lifetimes) => {
                        Some((lifetimes.ifa_preferred, lifetimes.ifa_valid))
                    }
                    _ => None,
                })
        };
        assert_eq!(lifetimes(&second), None);
        // Every other IPv6 address gets `nodad`; a /128 is deprecated unless
        // its preferred lifetime is written.
        let host = message(&addresses[3], 7);
        assert!(
            host.attributes
                .contains(&AddressAttribute::Flags(AddressFlags::Nodad))
        );
        assert_eq!(lifetimes(&host), Some((0, FOREVER)));
        assert_eq!(lifetimes(&message(&addresses[4], 7)), None);
        assert_eq!(lifetimes(&message(&addresses[5], 7)), Some((30, FOREVER)));

        // keepalived computes no broadcast address and defaults to /32; an
        // IPv4 address gets neither `nodad` nor lifetimes.
        let third = message(&addresses[1], 7);
        assert_eq!(third.header.prefix_len, 32);
        assert!(!third.attributes.iter().any(|attribute| matches!(
            attribute,
            AddressAttribute::Flags(_) | AddressAttribute::CacheInfo(_)
        )));
        assert!(
            !third
                .attributes
                .iter()
                .any(|attribute| matches!(attribute, AddressAttribute::Broadcast(_)))
        );
    }
}
