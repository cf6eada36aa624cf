//! The calling thread's namespace's IPv4 routes of the main table, read
//! over rtnetlink (a dump, no process): what a test polls to time a
//! router's convergence, with every next hop of a multipath route (the
//! /proc/net/route listing shows only the first).

use std::net::Ipv4Addr;

use anyhow::{Context, Result, bail};
use netlink_packet_core::{
    NLM_F_DUMP, NLM_F_REQUEST, NetlinkHeader, NetlinkMessage, NetlinkPayload,
};
use netlink_packet_route::RouteNetlinkMessage;
use netlink_packet_route::route::{RouteAddress, RouteAttribute, RouteHeader, RouteMessage};
use netlink_sys::{Socket, SocketAddr, protocols::NETLINK_ROUTE};

/// A route of the main table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Route {
    pub destination: Ipv4Addr,
    pub prefix_length: u8,
    /// Its gateways, sorted: one, several (a multipath route), or none (a
    /// route on a link).
    pub next_hops: Vec<Ipv4Addr>,
}

/// The IPv4 routes of the main table in the calling thread's namespace.
pub fn dump_ipv4() -> Result<Vec<Route>> {
    let mut socket = Socket::new(NETLINK_ROUTE).context("NETLINK_ROUTE socket")?;
    socket.bind_auto()?;
    let mut header = RouteMessage::default();
    header.header.address_family = netlink_packet_route::AddressFamily::Inet;
    let mut request = NetlinkMessage::new(
        NetlinkHeader::default(),
        NetlinkPayload::from(RouteNetlinkMessage::GetRoute(header)),
    );
    request.header.flags = NLM_F_REQUEST | NLM_F_DUMP;
    request.header.sequence_number = 1;
    request.finalize();
    let mut bytes = vec![0; request.buffer_len()];
    request.serialize(&mut bytes);
    socket.send_to(&bytes, &SocketAddr::new(0, 0), 0)?;
    let mut routes = Vec::new();
    loop {
        let (datagram, _) = socket.recv_from_full()?;
        let mut offset = 0;
        while offset < datagram.len() {
            let message = NetlinkMessage::<RouteNetlinkMessage>::deserialize(&datagram[offset..])
                .context("a route dump's message")?;
            let length = message.header.length as usize;
            if length == 0 {
                bail!("a netlink message of length 0 in a route dump");
            }
            offset += length.next_multiple_of(4);
            match message.payload {
                NetlinkPayload::Done(_) => return Ok(routes),
                NetlinkPayload::Error(error) => bail!("the route dump failed: {error:?}"),
                NetlinkPayload::InnerMessage(RouteNetlinkMessage::NewRoute(route))
                    if route.header.table == RouteHeader::RT_TABLE_MAIN =>
                {
                    routes.push(read(&route));
                }
                _ => {}
            }
        }
    }
}

fn read(route: &RouteMessage) -> Route {
    let mut destination = None;
    let mut next_hops = Vec::new();
    for attribute in &route.attributes {
        match attribute {
            RouteAttribute::Destination(RouteAddress::Inet(address)) => {
                destination = Some(*address);
            }
            RouteAttribute::Gateway(RouteAddress::Inet(address)) => next_hops.push(*address),
            RouteAttribute::MultiPath(hops) => {
                for hop in hops {
                    for attribute in &hop.attributes {
                        if let RouteAttribute::Gateway(RouteAddress::Inet(address)) = attribute {
                            next_hops.push(*address);
                        }
                    }
                }
            }
            _ => {}
        }
    }
    next_hops.sort();
    Route {
        // The default route has no destination attribute.
        destination: destination.unwrap_or(Ipv4Addr::UNSPECIFIED),
        prefix_length: route.header.destination_prefix_length,
        next_hops,
    }
}
