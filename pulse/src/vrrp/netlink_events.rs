//! The kernel's link and address events, for VRRP (interfaces going up and
//! down, source and virtual addresses coming and going) and for
//! `ha_suspend` (which addresses this host holds).
//!
//! One rtnetlink multicast subscription ([`NetlinkEvents`]) with a
//! connection beside it for the dumps that start a reading and follow lost
//! events; [`address_of`] reads an address message for both users;
//! [`AddressMonitor`] keeps the host's set of addresses up to date from
//! them, without the rest of VRRP.

use std::collections::{HashMap, HashSet};
use std::io;
use std::net::IpAddr;

use futures_util::{StreamExt, TryStreamExt};
use netlink_packet_route::address::{AddressAttribute, AddressMessage, AddressScope};
use netlink_packet_route::link::LinkMessage;
use rtnetlink::packet_core::{NetlinkMessage, NetlinkPayload};
use rtnetlink::packet_route::RouteNetlinkMessage;
use rtnetlink::{Handle, MulticastGroup};

/// The interface's own address in an address message, and whether its
/// scope is the link's: IFA_LOCAL, else IFA_ADDRESS (IFA_ADDRESS is the
/// peer's on point-to-point links, and IPv6 gives only IFA_ADDRESS), as
/// keepalived and getifaddrs read it.
pub fn address_of(message: &AddressMessage) -> Option<(IpAddr, bool)> {
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
    let address = find(true).or_else(|| find(false))?;
    Some((address, message.header.scope == AddressScope::Link))
}

/// What the subscription delivers.
#[derive(Debug)]
pub enum NetlinkEvent {
    /// A link or an address appeared, changed or went.
    Changed(RouteNetlinkMessage),
    /// The socket's buffer overflowed and the kernel dropped events: what
    /// is known may be stale, and only a new reading is right again.
    Lost,
}

type Events = futures_util::stream::BoxStream<
    'static,
    (
        NetlinkMessage<RouteNetlinkMessage>,
        rtnetlink::sys::SocketAddr,
    ),
>;

/// An rtnetlink subscription and a connection for requests, each read by
/// a task of its own, stopped with it.
pub struct NetlinkEvents {
    handle: Handle,
    events: Events,
    tasks: [tokio::task::JoinHandle<()>; 2],
}

impl Drop for NetlinkEvents {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

impl NetlinkEvents {
    /// Subscribes to `groups`. Subscribe before reading what the events
    /// follow, so that no change between the reading and the first event
    /// is missed. Must run inside the tokio runtime.
    pub fn open(groups: &[MulticastGroup]) -> io::Result<NetlinkEvents> {
        let (connection, handle, _) = rtnetlink::new_connection()?;
        let connection = tokio::spawn(connection);
        let (monitor, _, events) = match rtnetlink::new_multicast_connection(groups) {
            Ok(opened) => opened,
            Err(error) => {
                connection.abort();
                return Err(error);
            }
        };
        let monitor = tokio::spawn(monitor);
        Ok(NetlinkEvents {
            handle,
            events: events.boxed(),
            tasks: [connection, monitor],
        })
    }

    /// For requests: dumps, and VRRP's addresses and routes.
    pub fn handle(&self) -> &Handle {
        &self.handle
    }

    /// The next event; `None` once the kernel's messages stopped.
    /// Cancel-safe.
    pub async fn next(&mut self) -> Option<NetlinkEvent> {
        while let Some((message, _)) = self.events.next().await {
            match message.payload {
                NetlinkPayload::InnerMessage(message) => {
                    return Some(NetlinkEvent::Changed(message));
                }
                NetlinkPayload::Overrun(_) => return Some(NetlinkEvent::Lost),
                _ => {}
            }
        }
        None
    }

    #[cfg(test)]
    fn from_stream(events: Events) -> NetlinkEvents {
        // A handle whose connection never runs: the tests give events only.
        let (_, handle, _) = rtnetlink::new_connection().expect("a netlink socket");
        NetlinkEvents {
            handle,
            events,
            tasks: [tokio::spawn(async {}), tokio::spawn(async {})],
        }
    }
}

/// Every link and every address, as they are now.
pub async fn links_and_addresses(
    handle: &Handle,
) -> Result<(Vec<LinkMessage>, Vec<AddressMessage>), rtnetlink::Error> {
    let links = handle.link().get().execute().try_collect().await?;
    let addresses = addresses(handle).await?;
    Ok((links, addresses))
}

/// Every address, as they are now.
pub async fn addresses(handle: &Handle) -> Result<Vec<AddressMessage>, rtnetlink::Error> {
    handle.address().get().execute().try_collect().await
}

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

    /// [`LocalAddresses::apply`] for an address message.
    pub fn apply_message(&mut self, added: bool, message: &AddressMessage) -> bool {
        match address_of(message) {
            Some((address, _)) => self.apply(added, message.header.index, address),
            None => false,
        }
    }

    /// The addresses held on some interface.
    pub fn addresses(&self) -> HashSet<IpAddr> {
        self.holders.keys().copied().collect()
    }
}

/// The host's addresses, followed through rtnetlink (keepalived's checker
/// process follows the same events for `ha_suspend`).
pub struct AddressMonitor {
    addresses: LocalAddresses,
    events: NetlinkEvents,
}

impl AddressMonitor {
    /// Subscribes to the address events, then reads every address (an
    /// event for an address the reading had already changes nothing). Must
    /// run inside the tokio runtime.
    pub async fn open() -> io::Result<AddressMonitor> {
        let events =
            NetlinkEvents::open(&[MulticastGroup::Ipv4Ifaddr, MulticastGroup::Ipv6Ifaddr])?;
        let mut local = LocalAddresses::default();
        for message in addresses(events.handle())
            .await
            .map_err(|error| io::Error::other(error.to_string()))?
        {
            local.apply_message(true, &message);
        }
        Ok(AddressMonitor {
            addresses: local,
            events,
        })
    }

    /// The addresses here now.
    pub fn addresses(&self) -> HashSet<IpAddr> {
        self.addresses.addresses()
    }

    /// Waits for an event that changes the addresses, and returns them;
    /// `None` if the kernel's messages stopped or some were lost (the
    /// monitor must be opened again). Cancel-safe: an event is applied as
    /// soon as it is read.
    pub async fn changed(&mut self) -> Option<HashSet<IpAddr>> {
        loop {
            let (added, message) = match self.events.next().await? {
                NetlinkEvent::Changed(RouteNetlinkMessage::NewAddress(message)) => (true, message),
                NetlinkEvent::Changed(RouteNetlinkMessage::DelAddress(message)) => (false, message),
                NetlinkEvent::Changed(_) => continue,
                NetlinkEvent::Lost => return None,
            };
            if self.addresses.apply_message(added, &message) {
                return Some(self.addresses.addresses());
            }
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
    async fn the_reading_has_the_loopback_address() {
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
            events: NetlinkEvents::from_stream(futures_util::stream::iter(events).boxed()),
        };
        assert_eq!(
            monitor.changed().await,
            Some(HashSet::from([ip("192.0.2.1")]))
        );
        assert_eq!(monitor.changed().await, None);
    }
}
