//! DNS_CHECK: one query over UDP; any answer with RCODE 0 is up.
//!
//! As keepalived (check_dns.c): a random ID, recursion desired, one
//! question of the configured type and name, class IN. Datagrams that are
//! too short, carry another ID or are not responses are ignored and the
//! wait goes on; an answer with a non-zero RCODE is a failure; no answer
//! within `connect_timeout` is a timeout. The answer's records are not
//! read.

use std::time::Duration;

use tokio::time::Instant;

use crate::outcome::{Failure, Outcome, Success};
use crate::spec::{DnsSpec, Endpoint};

/// A DNS header's length.
const HEADER_LENGTH: usize = 12;

pub async fn check(endpoint: &Endpoint, dns: &DnsSpec, connect_timeout: Duration) -> Outcome {
    let socket = super::udp::connected_socket(endpoint).await?;
    let identifier = fastrand::u16(..);
    let query = query(identifier, dns)?;
    socket
        .send(&query)
        .await
        .map_err(|error| Failure::from_io(&error))?;
    let started = Instant::now();
    super::by(started + connect_timeout, started, async {
        let mut buffer = [0u8; 1024];
        loop {
            let length = socket
                .recv(&mut buffer)
                .await
                .map_err(|error| Failure::from_io(&error))?;
            if let Some(verdict) = judge(identifier, &buffer[..length]) {
                return verdict;
            }
        }
    })
    .await
}

/// The query keepalived sends.
pub fn query(identifier: u16, dns: &DnsSpec) -> Result<Vec<u8>, Failure> {
    let mut query = Vec::with_capacity(HEADER_LENGTH + dns.name.len() + 6);
    query.extend_from_slice(&identifier.to_be_bytes());
    // Flags: recursion desired.
    query.extend_from_slice(&0x0100u16.to_be_bytes());
    // One question, no records.
    query.extend_from_slice(&[0, 1, 0, 0, 0, 0, 0, 0]);
    for label in dns.name.split('.').filter(|label| !label.is_empty()) {
        let length = u8::try_from(label.len())
            .ok()
            .filter(|length| *length <= 63)
            .ok_or_else(|| Failure::Other(format!("DNS label {label:?} over 63 bytes")))?;
        query.push(length);
        query.extend_from_slice(label.as_bytes());
    }
    query.push(0);
    query.extend_from_slice(&dns.query_type.to_be_bytes());
    // Class IN.
    query.extend_from_slice(&1u16.to_be_bytes());
    Ok(query)
}

/// `None` for a datagram to ignore; the verdict otherwise.
pub fn judge(identifier: u16, datagram: &[u8]) -> Option<Outcome> {
    if datagram.len() < HEADER_LENGTH {
        return None;
    }
    if u16::from_be_bytes([datagram[0], datagram[1]]) != identifier {
        return None;
    }
    let flags = u16::from_be_bytes([datagram[2], datagram[3]]);
    if flags & 0x8000 == 0 {
        return None;
    }
    match flags & 0x000f {
        0 => Some(Ok(Success::default())),
        code => Some(Err(Failure::Other(format!("DNS answer with rcode {code}")))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::driver::tcp::tests::endpoint;
    use std::net::SocketAddr;
    use tokio::net::UdpSocket;

    fn soa_root() -> DnsSpec {
        DnsSpec {
            query_type: 6,
            name: ".".to_owned(),
        }
    }

    #[test]
    fn queries_are_encoded_like_keepalived() {
        let root = query(0x1234, &soa_root()).unwrap();
        assert_eq!(
            root,
            [0x12, 0x34, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 6, 0, 1]
        );
        let named = query(
            1,
            &DnsSpec {
                query_type: 1,
                name: "www.example.test.".to_owned(),
            },
        )
        .unwrap();
        assert_eq!(
            &named[12..],
            b"\x03www\x07example\x04test\x00\x00\x01\x00\x01"
        );
        let long = DnsSpec {
            query_type: 1,
            name: "a".repeat(64),
        };
        assert!(query(1, &long).is_err());
    }

    #[test]
    fn answers_are_judged_on_id_qr_and_rcode() {
        let mut answer = query(7, &soa_root()).unwrap();
        assert_eq!(judge(7, &answer), None, "a query is ignored");
        answer[2] |= 0x80;
        assert_eq!(judge(7, &answer), Some(Ok(Success::default())));
        assert_eq!(judge(8, &answer), None, "another ID is ignored");
        assert_eq!(judge(7, &answer[..11]), None, "too short is ignored");
        answer[3] |= 3;
        assert_eq!(
            judge(7, &answer),
            Some(Err(Failure::Other("DNS answer with rcode 3".to_owned())))
        );
    }

    /// A DNS server that first sends a stray datagram, then answers with
    /// `rcode`, or stays silent for `None`.
    async fn server(rcode: Option<u8>) -> SocketAddr {
        let socket = UdpSocket::bind("127.0.0.1:0").await.unwrap();
        let address = socket.local_addr().unwrap();
        tokio::spawn(async move {
            let mut buffer = [0u8; 512];
            while let Ok((length, peer)) = socket.recv_from(&mut buffer).await {
                let Some(rcode) = rcode else { continue };
                let _ = socket.send_to(b"junk", peer).await;
                let mut answer = buffer[..length].to_vec();
                answer[2] |= 0x80;
                answer[3] |= rcode;
                let _ = socket.send_to(&answer, peer).await;
            }
        });
        address
    }

    const TIMEOUT: Duration = Duration::from_millis(500);

    #[tokio::test]
    async fn a_server_answering_is_up_and_an_error_rcode_is_down() {
        let good = server(Some(0)).await;
        assert_eq!(
            check(&endpoint(good), &soa_root(), TIMEOUT).await,
            Ok(Success::default())
        );
        let refusing = server(Some(5)).await;
        assert_eq!(
            check(&endpoint(refusing), &soa_root(), TIMEOUT).await,
            Err(Failure::Other("DNS answer with rcode 5".to_owned()))
        );
    }

    #[tokio::test]
    async fn silence_times_out_and_a_closed_port_is_refused() {
        let silent = server(None).await;
        assert_eq!(
            check(&endpoint(silent), &soa_root(), TIMEOUT).await,
            Err(Failure::Timeout { after: TIMEOUT })
        );
        let closed = UdpSocket::bind("127.0.0.1:0")
            .await
            .unwrap()
            .local_addr()
            .unwrap();
        assert_eq!(
            check(&endpoint(closed), &soa_root(), TIMEOUT).await,
            Err(Failure::ConnectionRefused)
        );
    }
}
