//! VRRP's sockets: adverts in and out over raw IP sockets (protocol 112),
//! gratuitous ARP over `AF_PACKET` and unsolicited neighbour
//! advertisements over ICMPv6, as keepalived 2.2 sends them.
//!
//! Receiving and sending use different sockets, as in keepalived: one
//! receive socket per interface and family, bound to the interface and
//! joined to the group, gets every advert arriving there (multicast and
//! unicast); each instance sends from its own socket bound to its source
//! address, so the kernel puts that address in the IP header (the version
//! 3 checksum covers it). A socket bound to an address would only receive
//! packets sent to that address, hence the split; the send-only sockets
//! carry a filter that drops everything, so they queue nothing.

use std::io;
use std::mem::size_of;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6};
use std::os::fd::AsRawFd;

use socket2::{Domain, InterfaceIndexOrAddress, Protocol, SockFilter, Socket, Type};
use tokio::io::unix::AsyncFd;

use super::packet::{Family, PROTOCOL};

/// The protocol of raw VRRP sockets.
fn vrrp_protocol() -> Protocol {
    Protocol::from(i32::from(PROTOCOL))
}

/// RFC 3768 5.2.2: the IPv4 group adverts go to.
pub const GROUP_IPV4: Ipv4Addr = Ipv4Addr::new(224, 0, 0, 18);
/// RFC 5798 5.1.2.2.
pub const GROUP_IPV6: Ipv6Addr = Ipv6Addr::new(0xff02, 0, 0, 0, 0, 0, 0, 0x12);
/// All nodes, where unsolicited neighbour advertisements go, and its
/// Ethernet address (RFC 2464 7).
const ALL_NODES: Ipv6Addr = Ipv6Addr::new(0xff02, 0, 0, 0, 0, 0, 0, 1);
const ALL_NODES_ETHERNET: [u8; ETHERNET_ADDRESS_LEN] = [0x33, 0x33, 0, 0, 0, 1];
const ETHERTYPE_IPV6: u16 = 0x86dd;
const IPPROTO_ICMPV6: u8 = 58;
/// IPTOS_PREC_INTERNETCONTROL, which keepalived's adverts carry.
const TOS_INTERNETWORK_CONTROL: u32 = 0xc0;
/// Larger than any advert (255 IPv6 addresses and the IP header).
const BUFFER_LEN: usize = 8192;
/// Adverts leave with this TTL / hop limit and must arrive with it.
const HOP_LIMIT: u32 = 255;
const ETHERNET_ADDRESS_LEN: usize = 6;
const ETHERNET_BROADCAST: [u8; ETHERNET_ADDRESS_LEN] = [0xff; ETHERNET_ADDRESS_LEN];
const ETHERTYPE_ARP: u16 = 0x0806;
const ETHERTYPE_IPV4: u16 = 0x0800;
const ARP_HARDWARE_ETHERNET: u16 = 1;
const ARP_REQUEST: u16 = 1;
const ICMPV6_NEIGHBOUR_ADVERTISEMENT: u8 = 136;
/// The override flag: the receiver replaces the link-layer address it has.
const NEIGHBOUR_ADVERTISEMENT_OVERRIDE: u32 = 0x2000_0000;
/// The sender is a router.
const NEIGHBOUR_ADVERTISEMENT_ROUTER: u32 = 0x8000_0000;
const ND_OPTION_TARGET_LINK_LAYER_ADDRESS: u8 = 2;
/// `BPF_RET | BPF_K` with 0: accept no byte of any packet.
const DROP_ALL: [SockFilter; 1] = [SockFilter::new(0x06, 0, 0, 0)];

/// What the daemon learns of an instance's interface at start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Interface {
    pub name: String,
    pub index: u32,
    /// Up with carrier when read.
    pub up: bool,
    pub hardware_address: [u8; ETHERNET_ADDRESS_LEN],
    /// The primary IPv4 address, the default source of IPv4 adverts.
    pub ipv4: Option<Ipv4Addr>,
    /// The link-local IPv6 address, the source of IPv6 adverts (RFC 5798
    /// 5.1.1.1).
    pub ipv6_link_local: Option<Ipv6Addr>,
}

impl Interface {
    /// An interface not there yet (`dynamic_interfaces`): index 0, which
    /// no link has, down, no address.
    pub fn absent(name: &str) -> Interface {
        Interface {
            name: name.to_owned(),
            index: 0,
            up: false,
            hardware_address: [0; ETHERNET_ADDRESS_LEN],
            ipv4: None,
            ipv6_link_local: None,
        }
    }
}

/// An IP packet carrying protocol 112, as read from a receive socket.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Datagram {
    pub source: IpAddr,
    pub destination: IpAddr,
    /// IPv4 TTL or IPv6 hop limit.
    pub hop_limit: u8,
    /// The VRRP packet, after the IP header.
    pub payload: Vec<u8>,
}

/// Receives every VRRP packet of one family arriving on one interface.
#[derive(Debug)]
pub struct ReceiveSocket {
    socket: AsyncFd<Socket>,
    family: Family,
}

impl ReceiveSocket {
    pub fn open(interface: &Interface, family: Family) -> io::Result<ReceiveSocket> {
        let socket = match family {
            Family::Ipv4 => {
                let socket = Socket::new(Domain::IPV4, Type::RAW, Some(vrrp_protocol()))?;
                socket.join_multicast_v4_n(
                    &GROUP_IPV4,
                    &InterfaceIndexOrAddress::Index(interface.index),
                )?;
                socket
            }
            Family::Ipv6 => {
                let socket = Socket::new(Domain::IPV6, Type::RAW, Some(vrrp_protocol()))?;
                socket.join_multicast_v6(&GROUP_IPV6, interface.index)?;
                // A raw IPv6 socket gets no IP header: the hop limit and
                // the destination come as control messages.
                socket.set_recv_hoplimit_v6(true)?;
                set_int_option(&socket, libc::IPPROTO_IPV6, libc::IPV6_RECVPKTINFO, 1)?;
                socket
            }
        };
        // Only this interface's packets: an advert for the same VRID on
        // another segment is another router's business.
        socket.bind_device(Some(interface.name.as_bytes()))?;
        socket.set_nonblocking(true)?;
        Ok(ReceiveSocket {
            // SAFETY: the socket is owned by the AsyncFd and keeps its
            // descriptor until dropped with it.
            socket: unsafe { AsyncFd::register(socket) }.map_err(|error| error.into_parts().1)?,
            family,
        })
    }

    /// Its descriptor, which keepalived's data dump names (`fd_in`).
    pub fn raw_fd(&self) -> i32 {
        self.socket.get_ref().as_raw_fd()
    }

    pub fn family(&self) -> Family {
        self.family
    }

    /// The next packet; `None` for one too short to hold an IP header.
    pub async fn receive(&self) -> io::Result<Option<Datagram>> {
        let mut buffer = vec![0u8; BUFFER_LEN];
        loop {
            let mut guard = self.socket.readable().await?;
            let result = guard.try_io(|socket| match self.family {
                Family::Ipv4 => receive_ipv4(socket.get_ref(), &mut buffer),
                Family::Ipv6 => receive_ipv6(socket.get_ref(), &mut buffer),
            });
            match result {
                Ok(result) => return result,
                Err(_would_block) => continue,
            }
        }
    }

    /// A packet already queued, without waiting: `WouldBlock` when there
    /// is none.
    pub fn try_receive(&self) -> io::Result<Option<Datagram>> {
        let mut buffer = vec![0u8; BUFFER_LEN];
        match self.family {
            Family::Ipv4 => receive_ipv4(self.socket.get_ref(), &mut buffer),
            Family::Ipv6 => receive_ipv6(self.socket.get_ref(), &mut buffer),
        }
    }
}

/// A raw IPv4 socket returns the IP header with the payload; its TTL is
/// what RFC 3768 7.1 wants checked.
fn receive_ipv4(socket: &Socket, buffer: &mut [u8]) -> io::Result<Option<Datagram>> {
    let read = unsafe {
        libc::recv(
            socket.as_raw_fd(),
            buffer.as_mut_ptr().cast(),
            buffer.len(),
            0,
        )
    };
    if read < 0 {
        return Err(io::Error::last_os_error());
    }
    let packet = &buffer[..read as usize];
    if packet.len() < 20 || packet[0] >> 4 != 4 {
        return Ok(None);
    }
    let header_len = usize::from(packet[0] & 0x0f) * 4;
    let total_len = usize::from(u16::from_be_bytes([packet[2], packet[3]]));
    if header_len < 20 || total_len < header_len || packet.len() < header_len {
        return Ok(None);
    }
    // The kernel has checked the total length against what arrived;
    // anything after it is link padding.
    let end = total_len.min(packet.len());
    Ok(Some(Datagram {
        source: IpAddr::V4(Ipv4Addr::new(
            packet[12], packet[13], packet[14], packet[15],
        )),
        destination: IpAddr::V4(Ipv4Addr::new(
            packet[16], packet[17], packet[18], packet[19],
        )),
        hop_limit: packet[8],
        payload: packet[header_len..end].to_vec(),
    }))
}

fn receive_ipv6(socket: &Socket, buffer: &mut [u8]) -> io::Result<Option<Datagram>> {
    let mut source: libc::sockaddr_in6 = unsafe { std::mem::zeroed() };
    let mut control = [0u64; 16];
    let mut vector = libc::iovec {
        iov_base: buffer.as_mut_ptr().cast(),
        iov_len: buffer.len(),
    };
    let mut message: libc::msghdr = unsafe { std::mem::zeroed() };
    message.msg_name = (&mut source as *mut libc::sockaddr_in6).cast();
    message.msg_namelen = size_of::<libc::sockaddr_in6>() as libc::socklen_t;
    message.msg_iov = &mut vector;
    message.msg_iovlen = 1;
    message.msg_control = control.as_mut_ptr().cast();
    message.msg_controllen = size_of::<[u64; 16]>();
    let read = unsafe { libc::recvmsg(socket.as_raw_fd(), &mut message, 0) };
    if read < 0 {
        return Err(io::Error::last_os_error());
    }
    let mut hop_limit = None;
    let mut destination = None;
    // SAFETY: the kernel filled `control` with `msg_controllen` bytes of
    // well-formed control messages, which the CMSG macros walk.
    unsafe {
        let mut header = libc::CMSG_FIRSTHDR(&message);
        while !header.is_null() {
            let data = libc::CMSG_DATA(header);
            match ((*header).cmsg_level, (*header).cmsg_type) {
                (libc::IPPROTO_IPV6, libc::IPV6_HOPLIMIT) => {
                    let value = std::ptr::read_unaligned(data.cast::<libc::c_int>());
                    hop_limit = u8::try_from(value).ok();
                }
                (libc::IPPROTO_IPV6, libc::IPV6_PKTINFO) => {
                    let info = std::ptr::read_unaligned(data.cast::<libc::in6_pktinfo>());
                    destination = Some(Ipv6Addr::from(info.ipi6_addr.s6_addr));
                }
                _ => {}
            }
            header = libc::CMSG_NXTHDR(&message, header);
        }
    }
    let (Some(hop_limit), Some(destination)) = (hop_limit, destination) else {
        return Ok(None);
    };
    Ok(Some(Datagram {
        source: IpAddr::V6(Ipv6Addr::from(source.sin6_addr.s6_addr)),
        destination: IpAddr::V6(destination),
        hop_limit,
        payload: buffer[..read as usize].to_vec(),
    }))
}

/// One instance's sending socket, bound to its source address.
#[derive(Debug)]
pub struct SendSocket {
    socket: Socket,
    source: IpAddr,
    interface_index: u32,
}

impl SendSocket {
    /// `unicast_ttl`: keepalived's `unicast_ttl` (default 255).
    pub fn open(
        interface: &Interface,
        source: IpAddr,
        unicast_ttl: Option<u8>,
    ) -> io::Result<SendSocket> {
        let socket = match source {
            IpAddr::V4(address) => {
                let socket = Socket::new(Domain::IPV4, Type::RAW, Some(vrrp_protocol()))?;
                // An address not (yet) on the interface: pulse starts, and
                // its adverts go once the address is there.
                socket.set_freebind_v4(true)?;
                socket.bind(&SocketAddr::V4(SocketAddrV4::new(address, 0)).into())?;
                socket.set_multicast_if_v4(&address)?;
                socket.set_multicast_ttl_v4(HOP_LIMIT)?;
                socket.set_multicast_loop_v4(false)?;
                socket.set_ttl_v4(unicast_ttl.map_or(HOP_LIMIT, u32::from))?;
                // keepalived's IPv4 header: precedence "internetwork
                // control" and no DF flag.
                socket.set_tos_v4(TOS_INTERNETWORK_CONTROL)?;
                set_int_option(
                    &socket,
                    libc::IPPROTO_IP,
                    libc::IP_MTU_DISCOVER,
                    libc::IP_PMTUDISC_DONT,
                )?;
                socket
            }
            IpAddr::V6(address) => {
                let socket = Socket::new(Domain::IPV6, Type::RAW, Some(vrrp_protocol()))?;
                let scope = if is_link_local(&address) {
                    interface.index
                } else {
                    0
                };
                // A link-local address is tentative for a second or two
                // after the link comes up (duplicate address detection),
                // and cannot be bound then without this.
                socket.set_freebind_v6(true)?;
                socket.bind(&SocketAddr::V6(SocketAddrV6::new(address, 0, 0, scope)).into())?;
                socket.set_multicast_if_v6(interface.index)?;
                socket.set_multicast_hops_v6(HOP_LIMIT)?;
                socket.set_multicast_loop_v6(false)?;
                socket.set_unicast_hops_v6(unicast_ttl.map_or(HOP_LIMIT, u32::from))?;
                // keepalived's traffic class, as its IPv4 precedence.
                socket.set_tclass_v6(TOS_INTERNETWORK_CONTROL)?;
                socket
            }
        };
        socket.bind_device(Some(interface.name.as_bytes()))?;
        socket.attach_filter(&DROP_ALL)?;
        socket.set_nonblocking(true)?;
        Ok(SendSocket {
            socket,
            source,
            interface_index: interface.index,
        })
    }

    pub fn source(&self) -> IpAddr {
        self.source
    }

    /// Its descriptor, which keepalived's data dump names (`fd_out`).
    pub fn raw_fd(&self) -> i32 {
        self.socket.as_raw_fd()
    }

    /// Sends a VRRP packet (checksum already filled in for this source
    /// and `destination`). A full send buffer loses the advert, as a lost
    /// packet on the wire would: the next one follows an interval later.
    pub fn send(&self, packet: &[u8], destination: IpAddr) -> io::Result<()> {
        let address = match destination {
            IpAddr::V4(address) => SocketAddr::V4(SocketAddrV4::new(address, 0)),
            IpAddr::V6(address) => {
                let scope = if address.is_multicast() || is_link_local(&address) {
                    self.interface_index
                } else {
                    0
                };
                SocketAddr::V6(SocketAddrV6::new(address, 0, 0, scope))
            }
        };
        self.socket.send_to(packet, &address.into()).map(|_| ())
    }
}

/// The multicast group of `family`.
pub fn group(family: Family) -> IpAddr {
    match family {
        Family::Ipv4 => IpAddr::V4(GROUP_IPV4),
        Family::Ipv6 => IpAddr::V6(GROUP_IPV6),
    }
}

fn is_link_local(address: &Ipv6Addr) -> bool {
    address.segments()[0] & 0xffc0 == 0xfe80
}

fn set_int_option(
    socket: &Socket,
    level: libc::c_int,
    name: libc::c_int,
    value: libc::c_int,
) -> io::Result<()> {
    let result = unsafe {
        libc::setsockopt(
            socket.as_raw_fd(),
            level,
            name,
            (&value as *const libc::c_int).cast(),
            size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if result < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Sends gratuitous ARPs and unsolicited neighbour advertisements on one
/// interface.
#[derive(Debug)]
pub struct Announcer {
    interface: Interface,
    /// `AF_PACKET` with protocol 0: it sends whole frames, as keepalived
    /// does both messages, and receives nothing.
    link: Socket,
}

impl Announcer {
    pub fn open(interface: &Interface) -> io::Result<Announcer> {
        let link = Socket::new(Domain::PACKET, Type::RAW, None)?;
        link.set_nonblocking(true)?;
        Ok(Announcer {
            interface: interface.clone(),
            link,
        })
    }

    pub fn interface_index(&self) -> u32 {
        self.interface.index
    }

    pub fn interface_name(&self) -> &str {
        &self.interface.name
    }

    /// One gratuitous ARP (IPv4) or unsolicited neighbour advertisement
    /// (IPv6) for `address`.
    pub fn announce(&self, address: IpAddr) -> io::Result<()> {
        match address {
            IpAddr::V4(address) => self.gratuitous_arp(address),
            IpAddr::V6(address) => self.neighbour_advertisement(address),
        }
    }

    /// keepalived's: an ARP request from and for the address, broadcast,
    /// which every host updates an entry it has with (RFC 5227 3).
    fn gratuitous_arp(&self, address: Ipv4Addr) -> io::Result<()> {
        let frame = arp_frame(&self.interface.hardware_address, address);
        self.send_frame(&frame, ETHERTYPE_ARP, &ETHERNET_BROADCAST)
    }

    /// keepalived's (vrrp_ndisc.c): from the address itself to all nodes,
    /// with the router flag when the interface forwards IPv6.
    fn neighbour_advertisement(&self, address: Ipv6Addr) -> io::Result<()> {
        let forwarding = std::fs::read_to_string(format!(
            "/proc/sys/net/ipv6/conf/{}/forwarding",
            self.interface.name
        ))
        .is_ok_and(|value| value.trim() == "1");
        let frame =
            neighbour_advertisement_frame(&self.interface.hardware_address, address, forwarding);
        self.send_frame(&frame, ETHERTYPE_IPV6, &ALL_NODES_ETHERNET)
    }

    fn send_frame(
        &self,
        frame: &[u8],
        ethertype: u16,
        destination: &[u8; ETHERNET_ADDRESS_LEN],
    ) -> io::Result<()> {
        let mut link: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
        link.sll_family = libc::AF_PACKET as u16;
        link.sll_protocol = ethertype.to_be();
        link.sll_ifindex = self.interface.index as i32;
        link.sll_halen = ETHERNET_ADDRESS_LEN as u8;
        link.sll_addr[..ETHERNET_ADDRESS_LEN].copy_from_slice(destination);
        let sent = unsafe {
            libc::sendto(
                self.link.as_raw_fd(),
                frame.as_ptr().cast(),
                frame.len(),
                0,
                (&link as *const libc::sockaddr_ll).cast(),
                size_of::<libc::sockaddr_ll>() as libc::socklen_t,
            )
        };
        if sent < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }
}

/// Ethernet header and ARP request: sender = target = `address`, target
/// hardware address broadcast, as keepalived's send_arp.
pub fn arp_frame(hardware_address: &[u8; ETHERNET_ADDRESS_LEN], address: Ipv4Addr) -> Vec<u8> {
    let mut frame = Vec::with_capacity(42);
    frame.extend_from_slice(&ETHERNET_BROADCAST);
    frame.extend_from_slice(hardware_address);
    frame.extend_from_slice(&ETHERTYPE_ARP.to_be_bytes());
    frame.extend_from_slice(&ARP_HARDWARE_ETHERNET.to_be_bytes());
    frame.extend_from_slice(&ETHERTYPE_IPV4.to_be_bytes());
    frame.push(ETHERNET_ADDRESS_LEN as u8);
    frame.push(4);
    frame.extend_from_slice(&ARP_REQUEST.to_be_bytes());
    frame.extend_from_slice(hardware_address);
    frame.extend_from_slice(&address.octets());
    frame.extend_from_slice(&ETHERNET_BROADCAST);
    frame.extend_from_slice(&address.octets());
    frame
}

/// An unsolicited neighbour advertisement (RFC 4861 4.4) in its Ethernet
/// frame, as keepalived builds it: from `address` to ff02::1 (MAC
/// 33:33:00:00:00:01), hop limit 255, the override flag (and the router
/// flag if `router`), the target link-layer address option.
pub fn neighbour_advertisement_frame(
    hardware_address: &[u8; ETHERNET_ADDRESS_LEN],
    address: Ipv6Addr,
    router: bool,
) -> Vec<u8> {
    let mut message = Vec::with_capacity(32);
    message.push(ICMPV6_NEIGHBOUR_ADVERTISEMENT);
    message.push(0);
    message.extend_from_slice(&[0, 0]);
    let flags = NEIGHBOUR_ADVERTISEMENT_OVERRIDE
        | if router {
            NEIGHBOUR_ADVERTISEMENT_ROUTER
        } else {
            0
        };
    message.extend_from_slice(&flags.to_be_bytes());
    message.extend_from_slice(&address.octets());
    message.push(ND_OPTION_TARGET_LINK_LAYER_ADDRESS);
    // In units of 8 bytes: type, length and the address.
    message.push(1);
    message.extend_from_slice(hardware_address);
    let checksum = icmpv6_checksum(&address, &ALL_NODES, &message);
    message[2..4].copy_from_slice(&checksum.to_be_bytes());

    let mut frame = Vec::with_capacity(14 + 40 + message.len());
    frame.extend_from_slice(&ALL_NODES_ETHERNET);
    frame.extend_from_slice(hardware_address);
    frame.extend_from_slice(&ETHERTYPE_IPV6.to_be_bytes());
    // Version 6, no traffic class, no flow label.
    frame.extend_from_slice(&[0x60, 0, 0, 0]);
    frame.extend_from_slice(&(message.len() as u16).to_be_bytes());
    frame.push(IPPROTO_ICMPV6);
    frame.push(HOP_LIMIT as u8);
    frame.extend_from_slice(&address.octets());
    frame.extend_from_slice(&ALL_NODES.octets());
    frame.extend_from_slice(&message);
    frame
}

/// RFC 4443 2.3: over the IPv6 pseudo header and the message.
fn icmpv6_checksum(source: &Ipv6Addr, destination: &Ipv6Addr, message: &[u8]) -> u16 {
    let mut total: u32 = 0;
    let mut add = |bytes: &[u8]| {
        for pair in bytes.chunks(2) {
            let high = u32::from(pair[0]) << 8;
            let low = pair.get(1).copied().map_or(0, u32::from);
            total += high | low;
        }
    };
    add(&source.octets());
    add(&destination.octets());
    add(&(message.len() as u32).to_be_bytes());
    add(&[0, 0, 0, IPPROTO_ICMPV6]);
    add(message);
    while total > 0xffff {
        total = (total & 0xffff) + (total >> 16);
    }
    !(total as u16)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arp_frame_is_keepalived_gratuitous_request() {
        let mac = [0x02, 0, 0, 0, 0, 0x0a];
        let frame = arp_frame(&mac, Ipv4Addr::new(10, 0, 0, 100));
        assert_eq!(frame.len(), 42);
        assert_eq!(&frame[0..6], &[0xff; 6]);
        assert_eq!(&frame[6..12], &mac);
        assert_eq!(&frame[12..14], &[0x08, 0x06]);
        assert_eq!(&frame[20..22], &[0, 1], "a request");
        assert_eq!(&frame[22..28], &mac);
        assert_eq!(&frame[28..32], &[10, 0, 0, 100]);
        assert_eq!(&frame[38..42], &[10, 0, 0, 100]);
    }

    #[test]
    fn neighbour_advertisement_is_keepalived_frame() {
        let mac = [0x02, 0, 0, 0, 0, 0x0b];
        let address: Ipv6Addr = "fd00::64".parse().unwrap();
        let frame = neighbour_advertisement_frame(&mac, address, false);
        assert_eq!(frame.len(), 14 + 40 + 32);
        assert_eq!(&frame[0..6], &[0x33, 0x33, 0, 0, 0, 1]);
        assert_eq!(&frame[6..12], &mac);
        assert_eq!(&frame[12..14], &[0x86, 0xdd]);
        let ip = &frame[14..54];
        assert_eq!(ip[0] >> 4, 6);
        assert_eq!(u16::from_be_bytes([ip[4], ip[5]]), 32);
        assert_eq!(ip[6], 58, "ICMPv6");
        assert_eq!(ip[7], 255, "hop limit");
        assert_eq!(&ip[8..24], &address.octets(), "from the address itself");
        assert_eq!(&ip[24..40], &ALL_NODES.octets());
        let message = &frame[54..];
        assert_eq!(message[0], 136);
        assert_eq!(message[4], 0x20, "override, not solicited, not a router");
        assert_eq!(&message[8..24], &address.octets());
        assert_eq!(&message[24..26], &[2, 1]);
        assert_eq!(&message[26..32], &mac);
        // A correct checksum sums, with itself, to all ones.
        assert_eq!(icmpv6_checksum(&address, &ALL_NODES, message), 0);
        let router = neighbour_advertisement_frame(&mac, address, true);
        assert_eq!(router[54 + 4], 0xa0, "router and override");
    }
}
