//! UDP_CHECK: sends a datagram and reads the answer, if any.
//!
//! keepalived's semantics (check_udp.c, layer4.c `udp_socket_state`): an
//! ICMP port unreachable (the socket's ECONNREFUSED) is a failure; no reply
//! within `connect_timeout` is a success unless `require_reply` is set; a
//! reply must be `min_reply_length..=max_reply_length` long and, with
//! `require_reply HEX`, its leading bytes (as many as both have) match the
//! pattern, `x` nibbles matching anything.

use std::os::fd::AsRawFd;
use std::time::Duration;

use tokio::net::UdpSocket;
use tokio::time::Instant;

use crate::outcome::{Failure, Outcome, Success};
use crate::spec::{Endpoint, UdpSpec};

/// Length of the random payload sent when none is configured.
const RANDOM_PAYLOAD_LENGTH: usize = 16;

pub async fn check(endpoint: &Endpoint, udp: &UdpSpec, connect_timeout: Duration) -> Outcome {
    let socket = connected_socket(endpoint).await?;
    let payload = match &udp.payload {
        Some(payload) => payload.clone(),
        None => (0..RANDOM_PAYLOAD_LENGTH)
            .map(|_| fastrand::u8(..))
            .collect(),
    };
    socket
        .send(&payload)
        .await
        .map_err(|error| Failure::from_io(&error))?;
    let mut reply = vec![0u8; usize::from(udp.max_reply_length) + 1];
    let started = Instant::now();
    match tokio::time::timeout_at(started + connect_timeout, socket.recv(&mut reply)).await {
        Err(_) if udp.require_reply.is_some() => Err(Failure::Timeout {
            after: connect_timeout,
        }),
        // keepalived: "Handle Read timeout, we consider it success unless
        // require_reply is set".
        Err(_) => Ok(Success::default()),
        Ok(Err(error)) => Err(Failure::from_io(&error)),
        Ok(Ok(length)) => judge(udp, &reply[..length]),
    }
}

/// A UDP socket bound and connected per the endpoint's options (`bindto`,
/// `bind_port`, `bind_if`, `fwmark`). Connected, so that an ICMP port
/// unreachable comes back as an error.
pub(crate) async fn connected_socket(endpoint: &Endpoint) -> Result<UdpSocket, Failure> {
    let local: std::net::SocketAddr = match (endpoint.bind_address, endpoint.address.is_ipv4()) {
        (Some(address), _) => (address, endpoint.bind_port.unwrap_or(0)).into(),
        (None, true) => (
            std::net::Ipv4Addr::UNSPECIFIED,
            endpoint.bind_port.unwrap_or(0),
        )
            .into(),
        (None, false) => (
            std::net::Ipv6Addr::UNSPECIFIED,
            endpoint.bind_port.unwrap_or(0),
        )
            .into(),
    };
    let socket = UdpSocket::bind(local)
        .await
        .map_err(|error| Failure::Bind(format!("{local}: {error}")))?;
    if let Some(interface) = &endpoint.bind_interface {
        socket
            .bind_device(Some(interface.as_bytes()))
            .map_err(|error| Failure::Bind(format!("interface {interface}: {error}")))?;
    }
    if let Some(mark) = endpoint.fwmark {
        super::set_mark(socket.as_raw_fd(), mark)
            .map_err(|error| Failure::Bind(format!("fwmark {mark}: {error}")))?;
    }
    socket
        .connect(endpoint.address)
        .await
        .map_err(|error| Failure::from_io(&error))?;
    Ok(socket)
}

/// keepalived's `check_udp_reply`.
pub fn judge(udp: &UdpSpec, reply: &[u8]) -> Outcome {
    let length = reply.len();
    if length < usize::from(udp.min_reply_length) || length > usize::from(udp.max_reply_length) {
        return Err(Failure::Other(format!(
            "reply of {length} bytes, expected {} to {}",
            udp.min_reply_length, udp.max_reply_length
        )));
    }
    if let Some(pattern) = &udp.require_reply {
        for (index, (byte, (high, low))) in reply.iter().zip(pattern).enumerate() {
            let high_matches = high.is_none_or(|nibble| byte >> 4 == nibble);
            let low_matches = low.is_none_or(|nibble| byte & 0x0f == nibble);
            if !(high_matches && low_matches) {
                return Err(Failure::Other(format!(
                    "reply byte {index} is {byte:02x}, not the required one"
                )));
            }
        }
    }
    Ok(Success::default())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::driver::tcp::tests::endpoint;
    use std::net::SocketAddr;

    fn spec(require_reply: Option<Vec<(Option<u8>, Option<u8>)>>) -> UdpSpec {
        UdpSpec {
            payload: Some(b"ping".to_vec()),
            require_reply,
            min_reply_length: 0,
            max_reply_length: 255,
        }
    }

    /// A UDP server answering each datagram with `reply(datagram)`, or
    /// nothing when it returns `None`.
    async fn server(reply: fn(&[u8]) -> Option<Vec<u8>>) -> SocketAddr {
        let socket = UdpSocket::bind("127.0.0.1:0").await.unwrap();
        let address = socket.local_addr().unwrap();
        tokio::spawn(async move {
            let mut buffer = [0u8; 2048];
            while let Ok((length, peer)) = socket.recv_from(&mut buffer).await {
                if let Some(answer) = reply(&buffer[..length]) {
                    let _ = socket.send_to(&answer, peer).await;
                }
            }
        });
        address
    }

    async fn closed_udp_port() -> SocketAddr {
        UdpSocket::bind("127.0.0.1:0")
            .await
            .unwrap()
            .local_addr()
            .unwrap()
    }

    const TIMEOUT: Duration = Duration::from_millis(500);

    #[tokio::test]
    async fn an_echo_is_up_and_the_payload_is_sent() {
        let address = server(|datagram| Some(datagram.to_vec())).await;
        let pattern = b"ping"
            .iter()
            .map(|byte| (Some(byte >> 4), Some(byte & 15)))
            .collect();
        let outcome = check(&endpoint(address), &spec(Some(pattern)), TIMEOUT).await;
        assert_eq!(outcome, Ok(Success::default()));
    }

    #[tokio::test]
    async fn port_unreachable_is_refused() {
        let address = closed_udp_port().await;
        let outcome = check(&endpoint(address), &spec(None), TIMEOUT).await;
        assert_eq!(outcome, Err(Failure::ConnectionRefused));
    }

    #[tokio::test]
    async fn silence_is_up_unless_a_reply_is_required() {
        let address = server(|_| None).await;
        let outcome = check(&endpoint(address), &spec(None), TIMEOUT).await;
        assert_eq!(outcome, Ok(Success::default()));
        let outcome = check(&endpoint(address), &spec(Some(Vec::new())), TIMEOUT).await;
        assert_eq!(outcome, Err(Failure::Timeout { after: TIMEOUT }));
    }

    #[test]
    fn wildcards_lengths_and_mismatches() {
        // require_reply 4x0a: high nibble 4, any low; then 0a.
        let udp = UdpSpec {
            payload: None,
            require_reply: Some(vec![(Some(4), None), (Some(0), Some(10))]),
            min_reply_length: 2,
            max_reply_length: 4,
        };
        assert!(judge(&udp, &[0x4f, 0x0a]).is_ok());
        assert!(judge(&udp, &[0x40, 0x0a, 0xff]).is_ok());
        assert!(judge(&udp, &[0x5f, 0x0a]).is_err());
        assert!(judge(&udp, &[0x4f, 0x0b]).is_err());
        assert!(
            judge(&udp, &[0x4f]).is_err(),
            "shorter than min_reply_length"
        );
        assert!(
            judge(&udp, &[0x4f, 0x0a, 0, 0, 0]).is_err(),
            "longer than max"
        );
    }

    #[tokio::test]
    async fn a_wrong_reply_is_down() {
        let address = server(|_| Some(b"nope".to_vec())).await;
        let pattern = b"ping"
            .iter()
            .map(|byte| (Some(byte >> 4), Some(byte & 15)))
            .collect();
        let outcome = check(&endpoint(address), &spec(Some(pattern)), TIMEOUT).await;
        assert!(matches!(outcome, Err(Failure::Other(_))), "{outcome:?}");
    }
}
