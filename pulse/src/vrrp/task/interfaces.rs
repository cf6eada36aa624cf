//! The kernel's links as keepalived's data dump lists them (vrrp_if.c
//! `dump_if`): every link of the namespace by index, from
//! /sys/class/net, with the addresses keepalived keeps of each (read with
//! `getifaddrs`, in the kernel's order): IPv4 ones and link-local IPv6
//! ones, leaving out the instances' own, as keepalived's netlink reader
//! does (`ignore_address_if_ours_or_link_local`).

use std::collections::HashSet;
use std::ffi::CStr;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::path::Path;

use crate::vrrp::report::data::Link;

/// The links, by index; `ours` are the instances' virtual and excluded
/// addresses. A link that vanishes while read is left out.
pub fn read(ours: &HashSet<IpAddr>) -> Vec<Link> {
    let Ok(entries) = std::fs::read_dir("/sys/class/net") else {
        return Vec::new();
    };
    let mut links: Vec<Link> = entries
        .filter_map(Result::ok)
        .filter_map(|entry| link(&entry.path(), &entry.file_name().to_string_lossy()))
        .collect();
    links.sort_by_key(|link| link.index);
    for (name, address) in addresses() {
        if ours.contains(&address) {
            continue;
        }
        let Some(link) = links.iter_mut().find(|link| link.name == name) else {
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
    links
}

fn link(path: &Path, name: &str) -> Option<Link> {
    let read = |file: &str| std::fs::read_to_string(path.join(file)).ok();
    let number = |file: &str| read(file)?.trim().parse::<u32>().ok();
    let hexadecimal = |text: String| -> Vec<u8> {
        text.trim()
            .split(':')
            .filter_map(|pair| u8::from_str_radix(pair, 16).ok())
            .collect()
    };
    let mut hardware_address = read("address").map(hexadecimal).unwrap_or_default();
    // keepalived keeps no address that is all zeros (a loopback's).
    if hardware_address.iter().all(|byte| *byte == 0) {
        hardware_address.clear();
    }
    let mut flags = read("flags")
        .and_then(|text| u32::from_str_radix(text.trim().trim_start_matches("0x"), 16).ok())
        .unwrap_or(0);
    // sysfs has the flags as set; rtnetlink, which keepalived reads, adds
    // IFF_RUNNING for a link up whose operational state is up or unknown
    // (a loopback's), as the kernel's dev_get_flags does.
    let operational = read("operstate").unwrap_or_default();
    if flags & libc::IFF_UP as u32 != 0 && matches!(operational.trim(), "up" | "unknown") {
        flags |= libc::IFF_RUNNING as u32;
    }
    Some(Link {
        name: name.to_owned(),
        index: number("ifindex")?,
        ipv4: Vec::new(),
        ipv6: Vec::new(),
        hardware_address,
        broadcast_address: read("broadcast").map(hexadecimal).unwrap_or_default(),
        flags,
        mtu: number("mtu").unwrap_or(0),
        hardware_type: number("type").unwrap_or(0) as u16,
    })
}

/// Every address of every link, `(link name, address)`, in the kernel's
/// order.
fn addresses() -> Vec<(String, IpAddr)> {
    let mut found = Vec::new();
    let mut list: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: getifaddrs fills the pointer given with a list it
    // allocates, freed below with freeifaddrs; each node and the strings
    // and addresses it points to live until then, and are only read.
    unsafe {
        if libc::getifaddrs(&mut list) != 0 {
            return found;
        }
        let mut node = list;
        while !node.is_null() {
            let entry = &*node;
            node = entry.ifa_next;
            if entry.ifa_addr.is_null() || entry.ifa_name.is_null() {
                continue;
            }
            let name = CStr::from_ptr(entry.ifa_name)
                .to_string_lossy()
                .into_owned();
            let address = match i32::from((*entry.ifa_addr).sa_family) {
                libc::AF_INET => {
                    let address = &*(entry.ifa_addr as *const libc::sockaddr_in);
                    IpAddr::V4(Ipv4Addr::from(u32::from_be(address.sin_addr.s_addr)))
                }
                libc::AF_INET6 => {
                    let address = &*(entry.ifa_addr as *const libc::sockaddr_in6);
                    IpAddr::V6(Ipv6Addr::from(address.sin6_addr.s6_addr))
                }
                _ => continue,
            };
            found.push((name, address));
        }
        libc::freeifaddrs(list);
    }
    found
}
