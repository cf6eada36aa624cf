//! The addresses an interface can send adverts from, kept up to date from
//! rtnetlink's address events as keepalived 2.2's netlink address monitor
//! keeps them (keepalived_netlink.c, `netlink_if_address_filter`), without
//! I/O.
//!
//! keepalived keeps one primary IPv4 address and one link-local IPv6
//! address per interface, the first it learns of, and the others in a list.
//! The primary one is the default source of an instance's adverts. When the
//! primary address goes, the last address of the list takes its place (the
//! instances sending from it move to the new one, without a transition);
//! when no other address is left, the instances sending from it go to
//! FAULT. An address appearing on an interface that had none becomes its
//! primary address, and the instances in FAULT for want of one start from
//! it.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use super::packet::Family;

/// What an address event changed for the interface's instances.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SourceChange {
    /// Nothing an instance sends from.
    Unchanged,
    /// The interface had no address of this family to send from and now
    /// has this one.
    Assigned(IpAddr),
    /// The address sent from went; another of the interface's takes its
    /// place.
    Replaced { old: IpAddr, new: IpAddr },
    /// The address sent from went and the interface has no other.
    Deassigned(IpAddr),
}

/// One interface's addresses of each family, as keepalived's
/// `interface_t` (`sin_addr`, `sin_addr_l`, `sin6_addr`, `sin6_addr_l`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SourceAddresses {
    ipv4: Option<Ipv4Addr>,
    other_ipv4: Vec<Ipv4Addr>,
    ipv6_link_local: Option<Ipv6Addr>,
    other_ipv6_link_local: Vec<Ipv6Addr>,
}

impl SourceAddresses {
    /// The address adverts of `family` go from by default: the primary
    /// IPv4 address, or the link-local IPv6 one (RFC 5798 5.1.1.1).
    pub fn source(&self, family: Family) -> Option<IpAddr> {
        match family {
            Family::Ipv4 => self.ipv4.map(IpAddr::V4),
            Family::Ipv6 => self.ipv6_link_local.map(IpAddr::V6),
        }
    }

    /// Every address known, with whether it is link-scoped (the IPv6 ones
    /// all are).
    pub fn addresses(&self) -> Vec<(IpAddr, bool)> {
        let ipv4 = self
            .ipv4
            .iter()
            .chain(&self.other_ipv4)
            .map(|address| (IpAddr::V4(*address), false));
        let ipv6 = self
            .ipv6_link_local
            .iter()
            .chain(&self.other_ipv6_link_local)
            .map(|address| (IpAddr::V6(*address), true));
        ipv4.chain(ipv6).collect()
    }

    /// `address` appeared on the interface; `link_scope` is the address's
    /// scope (`RT_SCOPE_LINK`). IPv6 addresses of other scopes are not
    /// sources (keepalived's ignore_address_if_ours_or_link_local), nor are
    /// the virtual addresses, which the caller leaves out.
    pub fn added(&mut self, address: IpAddr, link_scope: bool) -> SourceChange {
        match address {
            IpAddr::V4(address) => add(&mut self.ipv4, &mut self.other_ipv4, address),
            IpAddr::V6(address) if link_scope => add(
                &mut self.ipv6_link_local,
                &mut self.other_ipv6_link_local,
                address,
            ),
            IpAddr::V6(_) => SourceChange::Unchanged,
        }
    }

    /// `address` went from the interface.
    pub fn removed(&mut self, address: IpAddr, link_scope: bool) -> SourceChange {
        match address {
            IpAddr::V4(address) => remove(&mut self.ipv4, &mut self.other_ipv4, address),
            IpAddr::V6(address) if link_scope => remove(
                &mut self.ipv6_link_local,
                &mut self.other_ipv6_link_local,
                address,
            ),
            IpAddr::V6(_) => SourceChange::Unchanged,
        }
    }
}

fn add<A: Copy + PartialEq + Into<IpAddr>>(
    primary: &mut Option<A>,
    others: &mut Vec<A>,
    address: A,
) -> SourceChange {
    match primary {
        None => {
            *primary = Some(address);
            SourceChange::Assigned(address.into())
        }
        // The kernel reports an address again when it changes (a
        // secondary promoted to primary, a lifetime renewed): known
        // already, nothing changes.
        Some(current) if *current == address => SourceChange::Unchanged,
        Some(_) => {
            if !others.contains(&address) {
                others.push(address);
            }
            SourceChange::Unchanged
        }
    }
}

fn remove<A: Copy + PartialEq + Into<IpAddr>>(
    primary: &mut Option<A>,
    others: &mut Vec<A>,
    address: A,
) -> SourceChange {
    if *primary != Some(address) {
        others.retain(|other| *other != address);
        return SourceChange::Unchanged;
    }
    // keepalived takes the last of the list.
    match others.pop() {
        Some(new) => {
            *primary = Some(new);
            SourceChange::Replaced {
                old: address.into(),
                new: new.into(),
            }
        }
        None => {
            *primary = None;
            SourceChange::Deassigned(address.into())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    #[test]
    fn the_first_address_becomes_the_source() {
        let mut sources = SourceAddresses::default();
        assert_eq!(sources.source(Family::Ipv4), None);
        assert_eq!(
            sources.added(ip("10.0.0.1"), false),
            SourceChange::Assigned(ip("10.0.0.1"))
        );
        assert_eq!(
            sources.added(ip("10.0.0.2"), false),
            SourceChange::Unchanged
        );
        assert_eq!(
            sources.added(ip("10.0.0.1"), false),
            SourceChange::Unchanged
        );
        assert_eq!(sources.source(Family::Ipv4), Some(ip("10.0.0.1")));
        assert_eq!(sources.source(Family::Ipv6), None);
    }

    #[test]
    fn only_link_local_ipv6_addresses_are_sources() {
        let mut sources = SourceAddresses::default();
        assert_eq!(
            sources.added(ip("2001:db8::1"), false),
            SourceChange::Unchanged
        );
        assert_eq!(sources.source(Family::Ipv6), None);
        assert_eq!(
            sources.added(ip("fe80::1"), true),
            SourceChange::Assigned(ip("fe80::1"))
        );
        assert_eq!(
            sources.removed(ip("2001:db8::1"), false),
            SourceChange::Unchanged
        );
        assert_eq!(
            sources.removed(ip("fe80::1"), true),
            SourceChange::Deassigned(ip("fe80::1"))
        );
        assert_eq!(sources.source(Family::Ipv6), None);
    }

    #[test]
    fn the_last_other_address_replaces_a_removed_source() {
        let mut sources = SourceAddresses::default();
        for address in ["10.0.0.1", "10.0.0.2", "10.0.0.3"] {
            sources.added(ip(address), false);
        }
        assert_eq!(
            sources.removed(ip("10.0.0.2"), false),
            SourceChange::Unchanged
        );
        assert_eq!(
            sources.removed(ip("10.0.0.1"), false),
            SourceChange::Replaced {
                old: ip("10.0.0.1"),
                new: ip("10.0.0.3")
            }
        );
        assert_eq!(sources.source(Family::Ipv4), Some(ip("10.0.0.3")));
        assert_eq!(
            sources.removed(ip("10.0.0.3"), false),
            SourceChange::Deassigned(ip("10.0.0.3"))
        );
        assert_eq!(sources.source(Family::Ipv4), None);
        // An address seen again after all went is assigned again.
        assert_eq!(
            sources.added(ip("10.0.0.4"), false),
            SourceChange::Assigned(ip("10.0.0.4"))
        );
    }

    #[test]
    fn removing_an_unknown_address_changes_nothing() {
        let mut sources = SourceAddresses::default();
        assert_eq!(
            sources.removed(ip("10.0.0.1"), false),
            SourceChange::Unchanged
        );
        sources.added(ip("10.0.0.1"), false);
        assert_eq!(
            sources.removed(ip("10.0.0.9"), false),
            SourceChange::Unchanged
        );
        assert_eq!(sources.source(Family::Ipv4), Some(ip("10.0.0.1")));
    }
}
