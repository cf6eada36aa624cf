//! What the SDN mode's Mux (`pulse/src/mux`) and host agent (`agent/`)
//! share of the kernel, over rtnetlink: errors that say which step failed,
//! links by name, the overlay's VXLAN device and its MTU, neighbour
//! entries, MAC addresses in text, sysctls.

use std::net::IpAddr;

use futures_util::TryStreamExt;
use netlink_packet_route::address::AddressAttribute;
use netlink_packet_route::link::{LinkAttribute, LinkMessage};
use netlink_packet_route::neighbour::{
    NeighbourAddress, NeighbourAttribute, NeighbourMessage, NeighbourState,
};
use rtnetlink::{Handle, LinkUnspec, LinkVxlan};

/// VXLAN's IANA port.
pub const VXLAN_PORT: u16 = 4789;

/// A kernel step that failed, in words.
#[derive(Debug, thiserror::Error)]
#[error("{what}: {cause}")]
pub struct KernelError {
    pub what: String,
    pub cause: String,
}

/// Maps an rtnetlink error to a [`KernelError`] saying `what` failed (an
/// errno in the C library's words).
pub fn failed(what: impl Into<String>) -> impl FnOnce(rtnetlink::Error) -> KernelError {
    let what = what.into();
    move |error| KernelError {
        what,
        cause: match error {
            rtnetlink::Error::NetlinkError(message) => message.to_io().to_string(),
            other => other.to_string(),
        },
    }
}

/// [`failed`] for an I/O error.
pub fn io_failed(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> KernelError {
    let what = what.into();
    move |error| KernelError {
        what,
        cause: error.to_string(),
    }
}

/// `result`, with the errors `codes` counted as success (already there,
/// already gone).
pub fn ignore(result: Result<(), rtnetlink::Error>, codes: &[i32]) -> Result<(), rtnetlink::Error> {
    match result {
        Err(rtnetlink::Error::NetlinkError(message))
            if message
                .to_io()
                .raw_os_error()
                .is_some_and(|code| codes.contains(&code)) =>
        {
            Ok(())
        }
        other => other,
    }
}

/// An rtnetlink connection in the network namespace `namespace` (sockets
/// belong to the namespace they are opened in), driven on `runtime`;
/// `what` names the namespace in an error.
pub fn rtnetlink_in(
    namespace: &std::fs::File,
    runtime: &tokio::runtime::Handle,
    what: &str,
) -> Result<Handle, KernelError> {
    fulcrum_netns::run_in(namespace, || {
        let _entered = runtime.enter();
        let (connection, handle, _) = rtnetlink::new_connection()?;
        runtime.spawn(connection);
        Ok::<_, std::io::Error>(handle)
    })
    .and_then(|result| result)
    .map_err(io_failed(format!("cannot open rtnetlink in {what}")))
}

/// The link called `name` in `handle`'s namespace, if there is one.
pub async fn link(handle: &Handle, name: &str) -> Result<Option<LinkMessage>, KernelError> {
    let mut links = handle.link().get().match_name(name.to_owned()).execute();
    match links.try_next().await {
        Ok(link) => Ok(link),
        // The kernel says ENODEV for a name it does not know.
        Err(rtnetlink::Error::NetlinkError(message))
            if message.to_io().raw_os_error() == Some(libc::ENODEV) =>
        {
            Ok(None)
        }
        Err(error) => Err(failed(format!("cannot look up {name}"))(error)),
    }
}

/// The index of the link called `name`, which must exist (`what`
/// happened to it otherwise: "made, then not found").
pub async fn index_of(handle: &Handle, name: &str) -> Result<u32, KernelError> {
    Ok(link(handle, name)
        .await?
        .ok_or_else(|| KernelError {
            what: format!("{name} is missing"),
            cause: "made, then not found".into(),
        })?
        .header
        .index)
}

/// The overlay's VXLAN device for `vni` from `vtep`: UDP port 4789, no
/// learning (where a MAC is comes from the store's entries, never from
/// flooding), `mtu` (see [`overlay_mtu`]).
pub fn vxlan(name: &str, vni: u32, vtep: IpAddr, mtu: u32) -> LinkMessage {
    let builder = LinkVxlan::new(name, vni)
        .port(VXLAN_PORT)
        .learning(false)
        .mtu(mtu);
    match vtep {
        IpAddr::V4(address) => builder.local(address),
        IpAddr::V6(address) => builder.local6(address),
    }
    .build()
}

/// What VXLAN adds to a frame on the underlay: the outer IP header (20
/// bytes, 40 for IPv6), UDP (8), VXLAN (8) and the inner Ethernet header
/// (14).
pub fn encapsulation_overhead(vtep: IpAddr) -> u32 {
    match vtep {
        IpAddr::V4(_) => 50,
        IpAddr::V6(_) => 70,
    }
}

/// The MTU of the overlay from `vtep`: the MTU of the interface holding
/// that address, less the encapsulation. A device without a lower device
/// (ours: the route to each VTEP chooses the way out) would otherwise be
/// given 1,500 whatever the underlay carries, and frames too large for it
/// would vanish on the way: with the MTU right, the kernel answers a
/// packet too big for the overlay with an ICMP error (path MTU discovery
/// works) or fragments it.
pub async fn overlay_mtu(handle: &Handle, vtep: IpAddr) -> Result<u32, KernelError> {
    let addresses: Vec<_> = handle
        .address()
        .get()
        .execute()
        .try_collect()
        .await
        .map_err(failed("cannot read the addresses"))?;
    let index = addresses
        .iter()
        .find(|message| {
            message.attributes.iter().any(|attribute| {
                matches!(attribute, AddressAttribute::Local(address) | AddressAttribute::Address(address) if *address == vtep)
            })
        })
        .map(|message| message.header.index)
        .ok_or_else(|| KernelError {
            what: format!("the VTEP address {vtep}"),
            cause: "no interface of this host has it".into(),
        })?;
    let mut links = handle.link().get().match_index(index).execute();
    let link = links
        .try_next()
        .await
        .map_err(failed(format!("cannot read the interface of {vtep}")))?;
    let mtu = link
        .iter()
        .flat_map(|link| &link.attributes)
        .find_map(|attribute| match attribute {
            LinkAttribute::Mtu(mtu) => Some(*mtu),
            _ => None,
        })
        .ok_or_else(|| KernelError {
            what: format!("the interface of {vtep}"),
            cause: "the kernel gave no MTU".into(),
        })?;
    Ok(mtu.saturating_sub(encapsulation_overhead(vtep)))
}

/// The MAC address of `link`, if it has one.
pub fn mac_of(link: &LinkMessage) -> Option<[u8; 6]> {
    link.attributes
        .iter()
        .find_map(|attribute| match attribute {
            LinkAttribute::Address(bytes) => <[u8; 6]>::try_from(bytes.as_slice()).ok(),
            _ => None,
        })
}

/// Brings the link `index` up with `mtu` (when given): `what` names it in
/// an error.
pub async fn set_up(
    handle: &Handle,
    index: u32,
    mtu: Option<u32>,
    what: &str,
) -> Result<(), KernelError> {
    let mut builder = LinkUnspec::new_with_index(index).up();
    if let Some(mtu) = mtu {
        builder = builder.mtu(mtu);
    }
    handle
        .link()
        .set(builder.build())
        .execute()
        .await
        .map_err(failed(format!("cannot bring {what} up")))
}

/// Writes `value` to the sysctl file `path` (of the calling thread's
/// namespace) unless it holds it already; returns what it held.
pub fn sysctl(path: &str, value: &str) -> std::io::Result<String> {
    let before = std::fs::read_to_string(path)?.trim().to_owned();
    if before != value {
        std::fs::write(path, value)?;
        tracing::info!("set {path} to {value} (was {before})");
    }
    Ok(before)
}

/// A neighbour entry with an address and a MAC.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NeighbourEntry {
    /// The interface it is on.
    pub index: u32,
    pub state: NeighbourState,
    pub address: IpAddr,
    pub mac: [u8; 6],
}

/// Every neighbour entry of `handle`'s namespace that has an address and
/// a MAC (`where_` names the namespace in an error).
pub async fn neighbours(handle: &Handle, where_: &str) -> Result<Vec<NeighbourEntry>, KernelError> {
    let messages: Vec<NeighbourMessage> =
        handle
            .neighbours()
            .get()
            .execute()
            .try_collect()
            .await
            .map_err(failed(format!("cannot read the neighbours {where_}")))?;
    Ok(messages
        .iter()
        .filter_map(|message| {
            let (address, mac) = neighbour_entry(message)?;
            Some(NeighbourEntry {
                index: message.header.ifindex,
                state: message.header.state,
                address,
                mac,
            })
        })
        .collect())
}

/// The address and MAC of a neighbour entry, if it has both.
fn neighbour_entry(message: &NeighbourMessage) -> Option<(IpAddr, [u8; 6])> {
    let mut address = None;
    let mut mac = None;
    for attribute in &message.attributes {
        match attribute {
            NeighbourAttribute::Destination(NeighbourAddress::Inet(ip)) => {
                address = Some(IpAddr::V4(*ip))
            }
            NeighbourAttribute::Destination(NeighbourAddress::Inet6(ip)) => {
                address = Some(IpAddr::V6(*ip))
            }
            NeighbourAttribute::LinkLayerAddress(bytes) => {
                mac = <[u8; 6]>::try_from(bytes.as_slice()).ok()
            }
            _ => {}
        }
    }
    Some((address?, mac?))
}

/// `aa:bb:cc:dd:ee:ff`.
pub fn parse_mac(text: &str) -> Option<[u8; 6]> {
    let mut bytes = [0; 6];
    let mut parts = text.split(':');
    for byte in &mut bytes {
        let part = parts.next()?;
        if part.len() != 2 {
            return None;
        }
        *byte = u8::from_str_radix(part, 16).ok()?;
    }
    parts.next().is_none().then_some(bytes)
}

/// A MAC as [`parse_mac`] reads it.
pub fn mac_text(mac: &[u8; 6]) -> String {
    mac.iter()
        .map(|byte| format!("{byte:02x}"))
        .collect::<Vec<_>>()
        .join(":")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mac_reads_back_as_written() {
        let mac = [2, 0, 0, 0, 0x1a, 0xff];
        assert_eq!(mac_text(&mac), "02:00:00:00:1a:ff");
        assert_eq!(parse_mac("02:00:00:00:1a:ff"), Some(mac));
        for bad in [
            "zz",
            "02:00:00:00:1a",
            "02:00:00:00:1a:ff:00",
            "2:00:00:00:1a:ff",
        ] {
            assert_eq!(parse_mac(bad), None, "{bad}");
        }
    }
}
