//! TCP_CHECK, and the connection every TCP-based check opens.

use std::os::fd::AsRawFd;
use std::time::Duration;

use tokio::net::{TcpSocket, TcpStream};
use tokio::time::Instant;

use crate::outcome::{Failure, Outcome, Success};
use crate::spec::Endpoint;

/// TCP_CHECK: up when a connection is established within the timeout
/// (keepalived closes it at once, sending nothing).
pub async fn check(endpoint: &Endpoint, connect_timeout: Duration) -> Outcome {
    let started = Instant::now();
    match super::by(started + connect_timeout, started, connect(endpoint)).await {
        Ok(stream) => drop(stream),
        // The connection was established, then reset (Linux: a reset in
        // SYN_SENT is "refused"; ECONNRESET, or EPIPE after the server's
        // FIN, only come once the handshake completed), and nanny looked
        // only afterwards: its task waited to be polled on a busy runtime,
        // while the server closed the connection and its kernel reset it
        // (the 10,000-server benchmark: orphaned sockets reset under
        // pressure). The server did accept: up, as keepalived finds when
        // it looks in time.
        Err(Failure::ConnectionReset) => {}
        Err(failure) => return Err(failure),
    }
    Ok(Success::default())
}

/// Opens a connection to `endpoint` with its bind options (`bindto`,
/// `bind_port`, `bind_if`, `fwmark`); no timeout of its own.
pub async fn connect(endpoint: &Endpoint) -> Result<TcpStream, Failure> {
    let socket = if endpoint.address.is_ipv4() {
        TcpSocket::new_v4()
    } else {
        TcpSocket::new_v6()
    }
    .map_err(|error| Failure::Local(format!("socket: {error}")))?;
    if let Some(interface) = &endpoint.bind_interface {
        socket
            .bind_device(Some(interface.as_bytes()))
            .map_err(|error| Failure::Bind(format!("interface {interface}: {error}")))?;
    }
    if let Some(mark) = endpoint.fwmark {
        set_mark(socket.as_raw_fd(), mark)
            .map_err(|error| Failure::Bind(format!("fwmark {mark}: {error}")))?;
    }
    if endpoint.bind_address.is_some() || endpoint.bind_port.is_some() {
        let address = endpoint
            .bind_address
            .unwrap_or(if endpoint.address.is_ipv4() {
                std::net::Ipv4Addr::UNSPECIFIED.into()
            } else {
                std::net::Ipv6Addr::UNSPECIFIED.into()
            });
        let local = std::net::SocketAddr::new(address, endpoint.bind_port.unwrap_or(0));
        // A fixed source port is reused at every attempt, as keepalived's
        // bind_port would be; TIME_WAIT must not stop the next one.
        socket
            .set_reuseaddr(true)
            .map_err(|error| Failure::Bind(error.to_string()))?;
        socket
            .bind(local)
            .map_err(|error| Failure::Bind(format!("{local}: {error}")))?;
    }
    socket
        .connect(endpoint.address)
        .await
        .map_err(|error| Failure::from_io(&error))
}

/// Sets SO_MARK (`fwmark`) on a socket.
pub(crate) fn set_mark(descriptor: std::os::fd::RawFd, mark: u32) -> std::io::Result<()> {
    // SO_MARK has no wrapper in tokio or std.
    let value = mark as libc::c_int;
    // SAFETY: the descriptor is open for the socket's lifetime, and the
    // option value is a c_int of the size given.
    let result = unsafe {
        libc::setsockopt(
            descriptor,
            libc::SOL_SOCKET,
            libc::SO_MARK,
            (&value as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if result == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::net::SocketAddr;
    use tokio::net::TcpListener;

    pub(crate) fn endpoint(address: SocketAddr) -> Endpoint {
        Endpoint {
            address,
            bind_address: None,
            bind_port: None,
            bind_interface: None,
            fwmark: None,
        }
    }

    /// A port with nothing listening: bound, then closed.
    pub(crate) async fn closed_port() -> SocketAddr {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        listener.local_addr().unwrap()
    }

    #[tokio::test]
    async fn up_when_something_listens() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let outcome = check(&endpoint(address), Duration::from_secs(5)).await;
        assert_eq!(outcome, Ok(Success::default()));
    }

    #[tokio::test]
    async fn up_when_accepted_then_reset_before_nanny_looks() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let target = endpoint(address);
        let mut attempt = Box::pin(check(&target, Duration::from_secs(5)));
        // Polled once: the connect is under way.
        tokio::select! {
            biased;
            outcome = &mut attempt => panic!("done at once: {outcome:?}"),
            _ = std::future::ready(()) => {}
        }
        // Meanwhile (nanny busy), the server accepts and resets.
        let (stream, _) = listener.accept().await.unwrap();
        stream.set_zero_linger().unwrap();
        drop(stream);
        // On loopback the reset has arrived once close returns: the
        // connect's result (SO_ERROR) is now ECONNRESET.
        assert_eq!(attempt.await, Ok(Success::default()));
    }

    #[tokio::test]
    async fn refused_when_nothing_listens() {
        let address = closed_port().await;
        let outcome = check(&endpoint(address), Duration::from_secs(5)).await;
        assert_eq!(outcome, Err(Failure::ConnectionRefused));
    }

    #[tokio::test]
    async fn bindto_and_bind_port_are_the_source() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let mut target = endpoint(listener.local_addr().unwrap());
        target.bind_address = Some("127.0.0.2".parse().unwrap());
        let source_port = closed_port().await.port();
        target.bind_port = Some(source_port);
        let (outcome, accepted) =
            tokio::join!(check(&target, Duration::from_secs(5)), listener.accept());
        assert_eq!(outcome, Ok(Success::default()));
        let (_, peer) = accepted.unwrap();
        assert_eq!(peer, SocketAddr::from(([127, 0, 0, 2], source_port)));
    }

    #[tokio::test]
    async fn a_bind_failure_says_so() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let mut target = endpoint(listener.local_addr().unwrap());
        // An address this machine does not have.
        target.bind_address = Some("192.0.2.1".parse().unwrap());
        let outcome = check(&target, Duration::from_secs(5)).await;
        assert!(matches!(outcome, Err(Failure::Bind(_))), "{outcome:?}");
    }

    /// Whether this process may set SO_BINDTODEVICE and SO_MARK
    /// (CAP_NET_RAW and CAP_NET_ADMIN; root in CI).
    fn privileged() -> bool {
        // SAFETY: geteuid has no preconditions.
        unsafe { libc::geteuid() == 0 }
    }

    #[tokio::test]
    async fn bind_if_and_fwmark_apply_to_the_socket() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let mut target = endpoint(listener.local_addr().unwrap());
        target.bind_interface = Some("lo".to_owned());
        target.fwmark = Some(7);
        let outcome = check(&target, Duration::from_secs(5)).await;
        if privileged() {
            assert_eq!(outcome, Ok(Success::default()));
        } else {
            assert!(matches!(outcome, Err(Failure::Bind(_))), "{outcome:?}");
        }
        target.fwmark = None;
        target.bind_interface = Some("nanny-none0".to_owned());
        let outcome = check(&target, Duration::from_secs(5)).await;
        assert!(
            matches!(&outcome, Err(Failure::Bind(why)) if why.starts_with("interface nanny-none0")),
            "{outcome:?}"
        );
    }

    /// A listener whose accept queue is full: further SYNs are dropped,
    /// so a connect hangs (on loopback, no traffic leaves the machine).
    pub(crate) async fn saturated_listener() -> (TcpListener, Vec<TcpStream>, SocketAddr) {
        let socket = TcpSocket::new_v4().unwrap();
        socket.bind("127.0.0.1:0".parse().unwrap()).unwrap();
        let address = socket.local_addr().unwrap();
        let listener = socket.listen(0).unwrap();
        let mut held = Vec::new();
        // The queue holds backlog + 1 connections; a few more in case.
        for _ in 0..4 {
            match tokio::time::timeout(Duration::from_millis(200), TcpStream::connect(address))
                .await
            {
                Ok(Ok(stream)) => held.push(stream),
                _ => break,
            }
        }
        (listener, held, address)
    }

    #[tokio::test]
    async fn a_connect_that_never_completes_times_out() {
        let (_listener, _held, address) = saturated_listener().await;
        let outcome = check(&endpoint(address), Duration::from_millis(300)).await;
        assert_eq!(
            outcome,
            Err(Failure::Timeout {
                after: Duration::from_millis(300)
            })
        );
    }
}
