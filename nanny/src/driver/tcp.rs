//! TCP_CHECK, and the connection every TCP-based check opens.
//!
//! TCP_CHECK runs in one of two modes ([`CheckMode`], for the whole
//! process): keepalived's full connect, or the half-open SYN probe of
//! [`super::half_open`].

use std::io;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use socket2::{Domain, SockAddr, Socket, Type};
use tokio::net::TcpStream;
use tokio::time::Instant;

use super::half_open::{self, ProbeError};
use crate::outcome::{Failure, Outcome, Success};
use crate::spec::Endpoint;

/// How TCP_CHECK asks a server (the half-open way: [`super::half_open`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum CheckMode {
    /// keepalived's: a full connection (handshake, then a FIN), which the
    /// server's application accepts.
    Connect,
    /// A bare SYN from a raw socket: up on the server's SYN-ACK, refused
    /// on its reset; the server's application never sees a connection
    /// (needs CAP_NET_RAW; without it, the connect).
    HalfOpen,
}

/// The process's TCP_CHECK mode: [`CheckMode::Connect`] until set.
static HALF_OPEN: AtomicBool = AtomicBool::new(false);

/// Sets how this process's TCP_CHECKs ask servers; for half-open, says in
/// the log (target [`half_open::TARGET`]) which mode is in effect, and
/// takes the connect when raw sockets are refused (no CAP_NET_RAW).
/// Returns the mode in effect.
pub fn set_check_mode(mode: CheckMode) -> CheckMode {
    let effective = match mode {
        CheckMode::Connect => CheckMode::Connect,
        CheckMode::HalfOpen => match half_open::available() {
            Ok(()) => {
                tracing::info!(
                    target: half_open::TARGET,
                    "TCP_CHECK: half-open (a SYN from a raw socket; servers accept no connection)"
                );
                CheckMode::HalfOpen
            }
            Err(error) => {
                tracing::warn!(
                    target: half_open::TARGET,
                    "TCP_CHECK: no raw socket ({error}; CAP_NET_RAW needed): full connect instead of half-open"
                );
                CheckMode::Connect
            }
        },
    };
    HALF_OPEN.store(effective == CheckMode::HalfOpen, Ordering::Relaxed);
    effective
}

/// The process's TCP_CHECK mode.
pub fn check_mode() -> CheckMode {
    if HALF_OPEN.load(Ordering::Relaxed) {
        CheckMode::HalfOpen
    } else {
        CheckMode::Connect
    }
}

/// TCP_CHECK in the process's [`check_mode`]: up when the server's kernel
/// takes the handshake on within the timeout from `started`.
pub async fn check(endpoint: &Endpoint, started: Instant, connect_timeout: Duration) -> Outcome {
    if check_mode() == CheckMode::HalfOpen {
        return check_half_open(endpoint, started, connect_timeout).await;
    }
    check_connect(endpoint, started, connect_timeout).await
}

/// The half-open TCP_CHECK: up on the server's SYN-ACK; the connect when
/// raw sockets are not to be had for `endpoint`'s family, interface and
/// mark.
pub async fn check_half_open(
    endpoint: &Endpoint,
    started: Instant,
    connect_timeout: Duration,
) -> Outcome {
    let attempt = async {
        // A second prober only when the first one's runtime went away
        // while waiting (each test has its own runtime); one more try.
        for _ in 0..2 {
            // None: no raw socket to be had; connect.
            let prober = half_open::prober(endpoint)?;
            match prober.probe(endpoint).await {
                Ok(()) => return Some(Ok(())),
                Err(ProbeError::Failed(failure)) => return Some(Err(failure)),
                Err(ProbeError::Closed) => continue,
            }
        }
        Some(Err(Failure::Local(
            "the half-open prober stopped twice".to_owned(),
        )))
    };
    match tokio::time::timeout_at(started + connect_timeout, attempt).await {
        Ok(Some(result)) => result.map(|()| Success::default()),
        Ok(None) => check_connect(endpoint, started, connect_timeout).await,
        Err(_) => Err(Failure::Timeout {
            after: connect_timeout,
        }),
    }
}

/// TCP_CHECK by connecting: up when a connection is established within
/// the timeout from `started` (keepalived closes it at once, sending
/// nothing).
pub async fn check_connect(
    endpoint: &Endpoint,
    started: Instant,
    connect_timeout: Duration,
) -> Outcome {
    match super::by(started + connect_timeout, started, establish(endpoint)).await {
        Ok(connection) => drop(connection),
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

/// An established connection, as [`establish`] leaves it.
#[derive(Debug)]
pub enum Established {
    /// The handshake was over when nanny first looked (on loopback and
    /// nearby servers, nearly always): the socket never entered tokio's
    /// reactor, so closing it is one system call, as in keepalived.
    Unregistered(Socket),
    /// The handshake took longer: nanny waited for it in the reactor.
    Registered(TcpStream),
}

impl Established {
    /// The connection as a tokio stream, for checks that talk over it.
    pub fn into_stream(self) -> Result<TcpStream, Failure> {
        match self {
            Established::Registered(stream) => Ok(stream),
            Established::Unregistered(socket) => TcpStream::from_std(socket.into())
                .map_err(|error| Failure::Local(format!("registering the socket: {error}"))),
        }
    }
}

/// Opens a connection to `endpoint` with its bind options (`bindto`,
/// `bind_port`, `bind_if`, `fwmark`), as a tokio stream; no timeout of its
/// own.
pub async fn connect(endpoint: &Endpoint) -> Result<TcpStream, Failure> {
    establish(endpoint).await?.into_stream()
}

/// Establishes a connection to `endpoint` as [`connect`] does, waiting in
/// tokio's reactor only when the handshake is not over at once.
///
/// keepalived (check_tcp.c) and tokio both connect without blocking, wait
/// in their poller until the socket is writable, then read SO_ERROR;
/// tokio adds the socket to epoll and removes it again before the close
/// (socket, connect, epoll_ctl, getsockopt, epoll_ctl, close). Over
/// loopback the whole handshake happens inside the first connect (the
/// listener's side runs in this process's soft interrupt; the SYN-ACK is
/// taken in as connect releases the socket), so a second connect at once
/// tells the outcome as SO_ERROR would after the wait: done (0, or
/// EISCONN), refused or reset (the error), or still under way (EALREADY:
/// then wait as tokio does). The same verdicts, and a TCP_CHECK then
/// costs socket, connect, connect, close, and no work in the poller.
pub async fn establish(endpoint: &Endpoint) -> Result<Established, Failure> {
    let socket = open(endpoint)?;
    let address = SockAddr::from(endpoint.address);
    if begin(&socket, &address)? {
        return Ok(Established::Unregistered(socket));
    }
    look(socket, &address).await
}

/// Whether an error of connect says the handshake is under way.
fn pending(error: &io::Error) -> bool {
    matches!(
        error.raw_os_error(),
        Some(libc::EINPROGRESS | libc::EALREADY)
    )
}

/// Starts the handshake: whether it is over already (it never is on Linux,
/// which answers EINPROGRESS to a non-blocking connect).
fn begin(socket: &Socket, address: &SockAddr) -> Result<bool, Failure> {
    match socket.connect(address) {
        Ok(()) => Ok(true),
        Err(error) if pending(&error) => Ok(false),
        Err(error) => Err(Failure::from_io(&error)),
    }
}

/// The handshake's outcome: asked at once with a second connect, waited
/// for in the reactor only while it is still under way.
async fn look(socket: Socket, address: &SockAddr) -> Result<Established, Failure> {
    match socket.connect(address) {
        Ok(()) => Ok(Established::Unregistered(socket)),
        Err(error) if error.raw_os_error() == Some(libc::EISCONN) => {
            Ok(Established::Unregistered(socket))
        }
        Err(error) if pending(&error) => wait_for(socket).await.map(Established::Registered),
        Err(error) => Err(Failure::from_io(&error)),
    }
}

/// Waits in tokio's reactor for the handshake under way on `socket`: done
/// when the socket is writable and SO_ERROR says nothing (tokio's connect).
async fn wait_for(socket: Socket) -> Result<TcpStream, Failure> {
    let stream = TcpStream::from_std(socket.into())
        .map_err(|error| Failure::Local(format!("registering the socket: {error}")))?;
    stream
        .writable()
        .await
        .map_err(|error| Failure::from_io(&error))?;
    match stream.take_error() {
        Ok(None) => Ok(stream),
        Ok(Some(error)) | Err(error) => Err(Failure::from_io(&error)),
    }
}

/// A non-blocking socket for `endpoint`, its bind options applied; not
/// connected yet.
fn open(endpoint: &Endpoint) -> Result<Socket, Failure> {
    // SOCK_NONBLOCK and SOCK_CLOEXEC (socket2 adds it) in the one call.
    let socket = Socket::new(
        Domain::for_address(endpoint.address),
        Type::STREAM.nonblocking(),
        None,
    )
    .map_err(|error| Failure::Local(format!("socket: {error}")))?;
    if let Some(interface) = &endpoint.bind_interface {
        socket
            .bind_device(Some(interface.as_bytes()))
            .map_err(|error| Failure::Bind(format!("interface {interface}: {error}")))?;
    }
    if let Some(mark) = endpoint.fwmark {
        super::set_mark(socket.as_raw_fd(), mark)
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
            .set_reuse_address(true)
            .map_err(|error| Failure::Bind(error.to_string()))?;
        socket
            .bind(&local.into())
            .map_err(|error| Failure::Bind(format!("{local}: {error}")))?;
    }
    Ok(socket)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::net::SocketAddr;
    use tokio::net::{TcpListener, TcpSocket};

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
        let outcome = check(&endpoint(address), Instant::now(), Duration::from_secs(5)).await;
        assert_eq!(outcome, Ok(Success::default()));
    }

    #[tokio::test]
    async fn up_when_accepted_then_reset_before_nanny_looks() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let socket = open(&endpoint(address)).unwrap();
        let target = SockAddr::from(address);
        // The connect is under way...
        assert!(!begin(&socket, &target).unwrap());
        // ...meanwhile (nanny busy), the server accepts and resets.
        let (stream, _) = listener.accept().await.unwrap();
        stream.set_zero_linger().unwrap();
        drop(stream);
        // On loopback the reset has arrived once close returns: the
        // second connect's answer (as SO_ERROR's) is now ECONNRESET...
        let outcome = look(socket, &target).await;
        assert!(
            matches!(outcome, Err(Failure::ConnectionReset)),
            "{outcome:?}"
        );
        // ...which TCP_CHECK takes for up: the server did accept.
        let outcome = check(&endpoint(address), Instant::now(), Duration::from_secs(5)).await;
        assert_eq!(outcome, Ok(Success::default()));
    }

    #[tokio::test]
    async fn a_slow_handshake_is_waited_for() {
        let (listener, held, address) = saturated_listener().await;
        let attempt = tokio::spawn(async move {
            establish(&endpoint(address))
                .await
                .map(|established| matches!(established, Established::Registered(_)))
        });
        // The SYN was dropped: the handshake is still under way, in the
        // reactor. Room in the accept queue lets the retransmitted SYN
        // (a second later) through.
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert!(!attempt.is_finished());
        let (first, _) = listener.accept().await.unwrap();
        drop((first, held));
        let outcome = tokio::time::timeout(Duration::from_secs(10), attempt)
            .await
            .expect("established after the SYN's retransmission")
            .unwrap();
        // Established, after a wait in the reactor.
        assert_eq!(outcome, Ok(true));
    }

    #[tokio::test]
    async fn a_slow_refusal_is_waited_for() {
        let (listener, _held, address) = saturated_listener().await;
        let attempt = tokio::spawn(async move { establish(&endpoint(address)).await.map(|_| ()) });
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert!(!attempt.is_finished());
        // The retransmitted SYN finds no listener: refused.
        drop(listener);
        let outcome = tokio::time::timeout(Duration::from_secs(10), attempt)
            .await
            .expect("refused after the SYN's retransmission")
            .unwrap();
        assert_eq!(outcome, Err(Failure::ConnectionRefused));
    }

    #[tokio::test]
    async fn refused_when_nothing_listens() {
        let address = closed_port().await;
        let outcome = check(&endpoint(address), Instant::now(), Duration::from_secs(5)).await;
        assert_eq!(outcome, Err(Failure::ConnectionRefused));
    }

    #[tokio::test]
    async fn bindto_and_bind_port_are_the_source() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let mut target = endpoint(listener.local_addr().unwrap());
        target.bind_address = Some("127.0.0.2".parse().unwrap());
        let source_port = closed_port().await.port();
        target.bind_port = Some(source_port);
        let (outcome, accepted) = tokio::join!(
            check(&target, Instant::now(), Duration::from_secs(5)),
            listener.accept()
        );
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
        let outcome = check(&target, Instant::now(), Duration::from_secs(5)).await;
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
        let outcome = check(&target, Instant::now(), Duration::from_secs(5)).await;
        if privileged() {
            assert_eq!(outcome, Ok(Success::default()));
        } else {
            assert!(matches!(outcome, Err(Failure::Bind(_))), "{outcome:?}");
        }
        target.fwmark = None;
        target.bind_interface = Some("nanny-none0".to_owned());
        let outcome = check(&target, Instant::now(), Duration::from_secs(5)).await;
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
        let outcome = check(
            &endpoint(address),
            Instant::now(),
            Duration::from_millis(300),
        )
        .await;
        assert_eq!(
            outcome,
            Err(Failure::Timeout {
                after: Duration::from_millis(300)
            })
        );
    }
}
