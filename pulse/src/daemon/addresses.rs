//! The addresses this host holds, for `ha_suspend`: one rtnetlink dump,
//! then the kernel's address events (`RTNLGRP_IPV4_IFADDR`,
//! `RTNLGRP_IPV6_IFADDR`), so that checks resume as soon as a virtual
//! address arrives (keepalived's checker process follows the same events).

use std::collections::{HashMap, HashSet};
use std::io;
use std::net::IpAddr;

use futures_util::{StreamExt, TryStreamExt};
use netlink_packet_route::address::{AddressAttribute, AddressMessage};
use rtnetlink::packet_core::{NetlinkMessage, NetlinkPayload};
use rtnetlink::packet_route::RouteNetlinkMessage;

/// The addresses of every interface, kept by interface so that one address
/// on two interfaces stays here while either has it. Without I/O.
#[derive(Debug, Default)]
pub struct LocalAddresses {
    /// The interfaces holding each address.
    holders: HashMap<IpAddr, HashSet<u32>>,
}

impl LocalAddresses {
    /// `address` added to (`added`) or removed from interface `index`;
    /// whether the set of addresses changed.
    pub fn apply(&mut self, added: bool, index: u32, address: IpAddr) -> bool {
        if added {
            let holders = self.holders.entry(address).or_default();
            let new = holders.is_empty();
            holders.insert(index);
            new
        } else {
            let Some(holders) = self.holders.get_mut(&address) else {
                return false;
            };
            holders.remove(&index);
            if holders.is_empty() {
                self.holders.remove(&address);
                true
            } else {
                false
            }
        }
    }

    /// The addresses held on some interface.
    pub fn addresses(&self) -> HashSet<IpAddr> {
        self.holders.keys().copied().collect()
    }

    /// An address message: the address it adds or removes, on which
    /// interface. IFA_LOCAL is the interface's own address (IFA_ADDRESS
    /// is the peer's on point-to-point links; IPv6 gives only
    /// IFA_ADDRESS), as getifaddrs reads it.
    fn address_of(message: &AddressMessage) -> Option<(u32, IpAddr)> {
        let find = |local: bool| {
            message
                .attributes
                .iter()
                .find_map(|attribute| match attribute {
                    AddressAttribute::Local(address) if local => Some(*address),
                    AddressAttribute::Address(address) if !local => Some(*address),
                    _ => None,
                })
        };
        Some((message.header.index, find(true).or_else(|| find(false))?))
    }
}

type Events = futures_util::stream::BoxStream<
    'static,
    (
        NetlinkMessage<RouteNetlinkMessage>,
        rtnetlink::sys::SocketAddr,
    ),
>;

/// The host's addresses, followed through rtnetlink.
pub struct AddressMonitor {
    addresses: LocalAddresses,
    events: Events,
    /// The task reading the multicast socket, stopped with the monitor.
    connection: tokio::task::JoinHandle<()>,
}

impl Drop for AddressMonitor {
    fn drop(&mut self) {
        self.connection.abort();
    }
}

impl AddressMonitor {
    /// Subscribes to the address events, then reads every address (so
    /// that no change between the two is missed: an event for an address
    /// the dump had already changes nothing). Must run inside the tokio
    /// runtime.
    pub async fn open() -> io::Result<AddressMonitor> {
        let (monitor, _, events) = rtnetlink::new_multicast_connection(&[
            rtnetlink::MulticastGroup::Ipv4Ifaddr,
            rtnetlink::MulticastGroup::Ipv6Ifaddr,
        ])?;
        let monitor = tokio::spawn(monitor);
        let (connection, handle, _) = rtnetlink::new_connection()?;
        let connection = tokio::spawn(connection);
        let mut addresses = LocalAddresses::default();
        let mut dump = handle.address().get().execute();
        let result = loop {
            match dump.try_next().await {
                Ok(Some(message)) => {
                    if let Some((index, address)) = LocalAddresses::address_of(&message) {
                        addresses.apply(true, index, address);
                    }
                }
                Ok(None) => break Ok(()),
                Err(error) => break Err(io::Error::other(error.to_string())),
            }
        };
        drop(dump);
        drop(handle);
        connection.abort();
        if let Err(error) = result {
            monitor.abort();
            return Err(error);
        }
        Ok(AddressMonitor {
            addresses,
            events: events.boxed(),
            connection: monitor,
        })
    }

    /// The addresses here now.
    pub fn addresses(&self) -> HashSet<IpAddr> {
        self.addresses.addresses()
    }

    /// Waits for an event that changes the addresses, and returns them;
    /// `None` if the kernel's messages stopped or some were lost (the
    /// monitor must be opened again). Cancel-safe: an event is applied as soon as it is
    /// read.
    pub async fn changed(&mut self) -> Option<HashSet<IpAddr>> {
        while let Some((message, _)) = self.events.next().await {
            let (added, address) = match message.payload {
                NetlinkPayload::InnerMessage(RouteNetlinkMessage::NewAddress(address)) => {
                    (true, address)
                }
                NetlinkPayload::InnerMessage(RouteNetlinkMessage::DelAddress(address)) => {
                    (false, address)
                }
                // The socket's buffer overflowed and the kernel dropped
                // events: what is known is stale, and only a new read of
                // every address is right again.
                NetlinkPayload::Overrun(_) => return None,
                _ => continue,
            };
            if let Some((index, address)) = LocalAddresses::address_of(&address)
                && self.addresses.apply(added, index, address)
            {
                return Some(self.addresses.addresses());
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    #[test]
    fn an_address_is_here_while_an_interface_holds_it() {
        let mut addresses = LocalAddresses::default();
        assert!(addresses.apply(true, 2, ip("192.0.2.1")));
        // Again (the kernel reports changes of lifetime or flags): no
        // change.
        assert!(!addresses.apply(true, 2, ip("192.0.2.1")));
        assert!(!addresses.apply(true, 3, ip("192.0.2.1")));
        assert!(addresses.apply(true, 3, ip("2001:db8::1")));
        assert_eq!(
            addresses.addresses(),
            HashSet::from([ip("192.0.2.1"), ip("2001:db8::1")])
        );
        assert!(!addresses.apply(false, 2, ip("192.0.2.1")));
        assert!(addresses.addresses().contains(&ip("192.0.2.1")));
        assert!(addresses.apply(false, 3, ip("192.0.2.1")));
        assert_eq!(addresses.addresses(), HashSet::from([ip("2001:db8::1")]));
        assert!(!addresses.apply(false, 3, ip("192.0.2.9")));
    }

    #[tokio::test]
    async fn the_dump_has_the_loopback_address() {
        let monitor = match AddressMonitor::open().await {
            Ok(monitor) => monitor,
            Err(error) => {
                eprintln!("skipped: no rtnetlink here ({error})");
                return;
            }
        };
        let addresses = monitor.addresses();
        // Every namespace pulse runs in has lo up (IPVS needs it).
        if addresses.is_empty() {
            eprintln!("skipped: no address here (lo down)");
            return;
        }
        assert!(
            addresses.contains(&"127.0.0.1".parse().unwrap()),
            "{addresses:?}"
        );
    }

    #[tokio::test]
    async fn lost_events_make_the_monitor_read_again() {
        use netlink_packet_route::address::AddressHeader;
        use rtnetlink::packet_core::NetlinkHeader;
        let message = |payload| {
            (
                NetlinkMessage::new(NetlinkHeader::default(), payload),
                rtnetlink::sys::SocketAddr::new(0, 0),
            )
        };
        let added = |address: &str| {
            let mut added = AddressMessage::default();
            added.header = AddressHeader {
                family: netlink_packet_route::AddressFamily::Inet,
                prefix_len: 24,
                index: 2,
                ..AddressHeader::default()
            };
            added.attributes.push(AddressAttribute::Local(ip(address)));
            message(NetlinkPayload::InnerMessage(
                RouteNetlinkMessage::NewAddress(added),
            ))
        };
        // After the overrun, an event that would change the addresses: the
        // monitor must not take it as if nothing had been lost.
        let events = vec![
            added("192.0.2.1"),
            message(NetlinkPayload::Overrun(Vec::new())),
            added("192.0.2.2"),
        ];
        let mut monitor = AddressMonitor {
            addresses: LocalAddresses::default(),
            events: futures_util::stream::iter(events).boxed(),
            connection: tokio::spawn(async {}),
        };
        assert_eq!(
            monitor.changed().await,
            Some(HashSet::from([ip("192.0.2.1")]))
        );
        assert_eq!(monitor.changed().await, None);
    }
}
