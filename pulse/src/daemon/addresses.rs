//! The addresses this host holds, for `ha_suspend`: read with
//! getifaddrs(3) once a second while a virtual server asks for it.
//!
//! A poll rather than rtnetlink's address events: a second's delay
//! before checks resume is of no consequence next to delay_loop, and it
//! needs no socket of its own.

use std::collections::HashSet;
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Every address configured on an interface of this network namespace.
pub fn local_addresses() -> io::Result<HashSet<IpAddr>> {
    let mut list: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: getifaddrs fills `list` with a list it allocated, freed
    // below with freeifaddrs.
    if unsafe { libc::getifaddrs(&mut list) } != 0 {
        return Err(io::Error::last_os_error());
    }
    let mut addresses = HashSet::new();
    let mut entry = list;
    while !entry.is_null() {
        // SAFETY: `entry` is a node of the list getifaddrs returned; its
        // address, when not null, is a sockaddr of the family it names.
        unsafe {
            let address = (*entry).ifa_addr;
            if !address.is_null() {
                match i32::from((*address).sa_family) {
                    libc::AF_INET => {
                        let ipv4 = &*(address as *const libc::sockaddr_in);
                        addresses.insert(IpAddr::V4(Ipv4Addr::from(u32::from_be(
                            ipv4.sin_addr.s_addr,
                        ))));
                    }
                    libc::AF_INET6 => {
                        let ipv6 = &*(address as *const libc::sockaddr_in6);
                        addresses.insert(IpAddr::V6(Ipv6Addr::from(ipv6.sin6_addr.s6_addr)));
                    }
                    _ => {}
                }
            }
            entry = (*entry).ifa_next;
        }
    }
    // SAFETY: the list getifaddrs allocated, freed once.
    unsafe { libc::freeifaddrs(list) };
    Ok(addresses)
}

#[cfg(test)]
mod tests {
    #[test]
    fn loopback_is_local() {
        let addresses = super::local_addresses().unwrap();
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
}
