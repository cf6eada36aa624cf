//! PING_CHECK: one ICMP or ICMPv6 echo (check_ping.c).
//!
//! Over an ICMP datagram socket (`SOCK_DGRAM`, `IPPROTO_ICMP`), as
//! keepalived: the kernel fills in the identifier and checksum and hands
//! back only the replies to this socket, without IP header. The first
//! message received decides: an echo reply is up, anything else down; no
//! message within `connect_timeout` is a timeout. Datagram ICMP sockets
//! need the process's group in `net.ipv4.ping_group_range` (keepalived
//! widens that sysctl itself). When they are refused, nanny uses a raw
//! socket (CAP_NET_RAW) instead: it fills in identifier and checksum
//! itself, and since a raw socket sees every ICMP message of the host
//! (its own request too, on loopback), it waits for the echo reply that
//! carries its identifier and sequence and ignores the rest.

use std::os::fd::{FromRawFd, OwnedFd};
use std::time::Duration;

use tokio::net::UdpSocket;
use tokio::time::Instant;

use crate::outcome::{Failure, Outcome, Success};
use crate::spec::Endpoint;

/// keepalived's ICMP_BUFSIZE: the payload of the echo request.
const PAYLOAD_LENGTH: usize = 56;
const ECHO_REQUEST: u8 = 8;
const ECHO_REPLY: u8 = 0;
const ECHO_REQUEST_V6: u8 = 128;
const ECHO_REPLY_V6: u8 = 129;

pub async fn check(endpoint: &Endpoint, connect_timeout: Duration) -> Outcome {
    let version_6 = endpoint.address.is_ipv6();
    let (socket, raw) = icmp_socket(version_6)?;
    if let Some(address) = endpoint.bind_address {
        bind(&socket, address).map_err(|error| Failure::Bind(format!("{address}: {error}")))?;
    }
    let socket = UdpSocket::from_std(socket).map_err(|error| Failure::Io(error.to_string()))?;
    if let Some(interface) = &endpoint.bind_interface {
        socket
            .bind_device(Some(interface.as_bytes()))
            .map_err(|error| Failure::Bind(format!("interface {interface}: {error}")))?;
    }
    if let Some(mark) = endpoint.fwmark {
        use std::os::fd::AsRawFd;
        super::set_mark(socket.as_raw_fd(), mark)
            .map_err(|error| Failure::Bind(format!("fwmark {mark}: {error}")))?;
    }
    // The port means nothing to ICMP; the kernel ignores it.
    let target = std::net::SocketAddr::new(endpoint.address.ip(), 0);
    let identifier = fastrand::u16(..);
    let sequence = fastrand::u16(..);
    let request = echo_request(version_6, identifier, sequence);
    socket
        .send_to(&request, target)
        .await
        .map_err(|error| Failure::from_io(&error))?;
    let started = Instant::now();
    super::by(started + connect_timeout, started, async {
        let mut buffer = [0u8; 1500];
        loop {
            let length = socket
                .recv(&mut buffer)
                .await
                .map_err(|error| Failure::from_io(&error))?;
            let message = &buffer[..length];
            if !raw {
                return judge(version_6, message);
            }
            // A raw IPv4 socket hands the IP header over too.
            let message = if version_6 {
                message
            } else {
                let header = usize::from(message.first().copied().unwrap_or(0) & 0x0f) * 4;
                message.get(header..).unwrap_or_default()
            };
            if is_our_reply(version_6, message, identifier, sequence) {
                return Ok(Success::default());
            }
        }
    })
    .await
}

/// Whether `message` is the echo reply to our request (raw sockets).
pub fn is_our_reply(version_6: bool, message: &[u8], identifier: u16, sequence: u16) -> bool {
    let expected = if version_6 { ECHO_REPLY_V6 } else { ECHO_REPLY };
    message.len() >= 8
        && message[0] == expected
        && message[4..6] == identifier.to_be_bytes()
        && message[6..8] == sequence.to_be_bytes()
}

/// An ICMP socket: a datagram one if this process may, else a raw one
/// (`true`).
fn icmp_socket(version_6: bool) -> Result<(std::net::UdpSocket, bool), Failure> {
    let (family, protocol) = if version_6 {
        (libc::AF_INET6, libc::IPPROTO_ICMPV6)
    } else {
        (libc::AF_INET, libc::IPPROTO_ICMP)
    };
    let open = |kind: libc::c_int| {
        // SAFETY: socket has no memory preconditions; the result is checked.
        let descriptor = unsafe {
            libc::socket(
                family,
                kind | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
                protocol,
            )
        };
        if descriptor < 0 {
            Err(std::io::Error::last_os_error())
        } else {
            // SAFETY: the descriptor was just opened and is owned by nobody
            // else.
            Ok(unsafe { OwnedFd::from_raw_fd(descriptor) })
        }
    };
    // An ICMP socket takes the same calls as a UDP one (send_to, recv,
    // bind), so std's UdpSocket carries it.
    match open(libc::SOCK_DGRAM) {
        Ok(owned) => Ok((std::net::UdpSocket::from(owned), false)),
        Err(datagram_error) => match open(libc::SOCK_RAW) {
            Ok(owned) => Ok((std::net::UdpSocket::from(owned), true)),
            Err(raw_error) => Err(Failure::Local(format!(
                "cannot open an ICMP socket: datagram: {datagram_error} \
                 (see net.ipv4.ping_group_range), raw: {raw_error}"
            ))),
        },
    }
}

/// Binds the ICMP socket to a source address (std's `bind` only makes new
/// UDP sockets).
fn bind(socket: &std::net::UdpSocket, address: std::net::IpAddr) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    // SAFETY: zeroed sockaddr structures are valid; each is passed with its
    // own size, and the descriptor is open.
    let result = unsafe {
        match address {
            std::net::IpAddr::V4(address) => {
                let mut socket_address: libc::sockaddr_in = std::mem::zeroed();
                socket_address.sin_family = libc::AF_INET as libc::sa_family_t;
                socket_address.sin_addr.s_addr = u32::from_ne_bytes(address.octets());
                libc::bind(
                    socket.as_raw_fd(),
                    (&socket_address as *const libc::sockaddr_in).cast(),
                    std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
                )
            }
            std::net::IpAddr::V6(address) => {
                let mut socket_address: libc::sockaddr_in6 = std::mem::zeroed();
                socket_address.sin6_family = libc::AF_INET6 as libc::sa_family_t;
                socket_address.sin6_addr.s6_addr = address.octets();
                libc::bind(
                    socket.as_raw_fd(),
                    (&socket_address as *const libc::sockaddr_in6).cast(),
                    std::mem::size_of::<libc::sockaddr_in6>() as libc::socklen_t,
                )
            }
        }
    };
    if result == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// An echo request: type, code 0, checksum (ICMPv4; the kernel fills in
/// ICMPv6's, and datagram sockets replace identifier and checksum),
/// `identifier`, `sequence`, and keepalived's payload length.
pub fn echo_request(version_6: bool, identifier: u16, sequence: u16) -> Vec<u8> {
    let mut request = vec![0u8; 8 + PAYLOAD_LENGTH];
    request[0] = if version_6 {
        ECHO_REQUEST_V6
    } else {
        ECHO_REQUEST
    };
    request[4..6].copy_from_slice(&identifier.to_be_bytes());
    request[6..8].copy_from_slice(&sequence.to_be_bytes());
    for (index, byte) in request[8..].iter_mut().enumerate() {
        *byte = index as u8;
    }
    if !version_6 {
        let checksum = internet_checksum(&request);
        request[2..4].copy_from_slice(&checksum.to_be_bytes());
    }
    request
}

/// RFC 1071's one's complement sum.
fn internet_checksum(bytes: &[u8]) -> u16 {
    let mut sum: u32 = bytes
        .chunks(2)
        .map(|pair| u32::from(u16::from_be_bytes([pair[0], *pair.get(1).unwrap_or(&0)])))
        .sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// keepalived's `recv_it`/`recv6_it`.
pub fn judge(version_6: bool, message: &[u8]) -> Outcome {
    if message.len() < 8 {
        return Err(Failure::Malformed(format!(
            "short ICMP message, {} bytes",
            message.len()
        )));
    }
    let expected = if version_6 { ECHO_REPLY_V6 } else { ECHO_REPLY };
    if message[0] == expected {
        Ok(Success::default())
    } else {
        Err(Failure::Other(format!(
            "ICMP message of type {} instead of an echo reply",
            message[0]
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::driver::tcp::tests::endpoint;

    #[test]
    fn requests_and_replies() {
        let request = echo_request(false, 0x0304, 0x0102);
        assert_eq!(&request[..2], [8, 0]);
        assert_eq!(&request[4..8], [3, 4, 1, 2]);
        assert_eq!(request.len(), 64);
        // A correct checksum sums to zero.
        assert_eq!(internet_checksum(&request), 0);
        assert_eq!(echo_request(true, 0, 0)[0], 128);
        let mut reply = request.clone();
        reply[0] = 0;
        assert!(is_our_reply(false, &reply, 0x0304, 0x0102));
        assert!(!is_our_reply(false, &reply, 0x0304, 0x0103));
        assert!(
            !is_our_reply(false, &request, 0x0304, 0x0102),
            "our own request"
        );
        assert_eq!(judge(false, &[0; 8]), Ok(Success::default()));
        assert_eq!(
            judge(true, &[129, 0, 0, 0, 0, 0, 0, 0]),
            Ok(Success::default())
        );
        assert!(judge(false, &[3, 3, 0, 0, 0, 0, 0, 0]).is_err());
        assert!(judge(false, &[0; 4]).is_err());
    }

    #[tokio::test]
    async fn bindto_a_foreign_address_fails_to_bind() {
        let mut target = endpoint("127.0.0.1:0".parse().unwrap());
        target.bind_address = Some("192.0.2.1".parse().unwrap());
        let outcome = check(&target, Duration::from_secs(2)).await;
        assert!(
            matches!(&outcome, Err(Failure::Bind(_) | Failure::Local(_))),
            "{outcome:?}"
        );
    }

    #[tokio::test]
    async fn loopback_answers() {
        let target = endpoint("127.0.0.1:0".parse().unwrap());
        match check(&target, Duration::from_secs(2)).await {
            Ok(success) => assert_eq!(success, Success::default()),
            // Not every machine lets this process open ICMP sockets; the
            // failure must say why.
            Err(Failure::Local(why)) if why.contains("cannot open an ICMP socket") => {}
            other => panic!("{other:?}"),
        }
    }
}
