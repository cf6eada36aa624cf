//! What the SDN mode's Mux (`pulse/src/mux`) and host agent (`agent/`)
//! share of the kernel, over rtnetlink: errors that say which step failed,
//! links by name, the overlay's VXLAN device, neighbour entries, MAC
//! addresses in text.

use std::net::IpAddr;

use futures_util::TryStreamExt;
use netlink_packet_route::link::LinkMessage;
use netlink_packet_route::neighbour::{
    NeighbourAddress, NeighbourAttribute, NeighbourMessage, NeighbourState,
};
use rtnetlink::{Handle, LinkVxlan};

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

/// The overlay's VXLAN device for `vni` from `vtep`: UDP port 4789, no
/// learning (where a MAC is comes from the store's entries, never from
/// flooding).
pub fn vxlan(name: &str, vni: u32, vtep: IpAddr) -> LinkMessage {
    let builder = LinkVxlan::new(name, vni).port(VXLAN_PORT).learning(false);
    match vtep {
        IpAddr::V4(address) => builder.local(address),
        IpAddr::V6(address) => builder.local6(address),
    }
    .build()
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
