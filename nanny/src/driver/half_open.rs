//! The half-open TCP_CHECK ("SYN check", F5's tcp_half_open): a bare SYN
//! from a raw socket, and the server's reply decides.
//!
//! - SYN-ACK: up. The server's kernel took the handshake on, which is what
//!   keepalived's connect() succeeding tells. This machine's kernel then
//!   answers the SYN-ACK with a reset (no socket owns the 4-tuple), which
//!   tears the server's half-open request down: the server's application
//!   never sees a connection.
//! - RST acknowledging the SYN: refused, as connect() says.
//! - Nothing before the timeout: timeout.
//!
//! Per check that is one sendmsg here, and on the server one SYN-ACK and
//! one reset taken in; a full connect costs a socket, a connect (the whole
//! handshake, with the listener's child socket), a close (the FIN
//! exchange) here and there.
//!
//! One [`Prober`] per address family and `bind_if`/`fwmark` serves the whole
//! process: one raw socket, driven by a tokio task that drains its replies
//! and hands each to the attempt waiting for it (matched by the server's
//! address and port, this side's port and the acknowledgment of the
//! attempt's random sequence number). Replies reach the socket only when a
//! classic BPF filter says they are SYN-ACKs or resets to the prober's
//! ports: an IPv4 raw TCP socket otherwise gets a copy of every TCP packet
//! the host receives (over loopback, its own SYNs and resets too).
//!
//! Source ports come from a pool the prober reserves by binding ordinary
//! TCP sockets without listening: the kernel then never hands them to a
//! connection (connect's ephemeral choice skips ports bound so), and no
//! listener or connection takes the SYN-ACKs sent to them, so the kernel
//! answers those with the reset. `bind_port` is the user's choice: that
//! port is reserved the same way, on `bindto`'s address.

pub mod segment;

use std::collections::{HashMap, HashSet};
use std::io;
use std::mem::{MaybeUninit, size_of};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::os::fd::{AsRawFd, RawFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use socket2::{Domain, Protocol, SockAddr, Socket, Type};
use tokio::io::unix::AsyncFd;
use tokio::sync::oneshot;

use crate::outcome::Failure;
use crate::spec::Endpoint;
use segment::{Answer, HEADER_LENGTH, Packet, Repr};

/// The tracing target of the half-open check's one-time messages (which
/// kind of TCP_CHECK runs, and why not the half-open one).
pub const TARGET: &str = "nanny::tcp_check";

/// Source ports each prober reserves. Two attempts to the same server
/// need different ports at once (the server would take a second SYN on
/// the same 4-tuple for its half-open request's); 64 is far more than
/// attempts of one server overlapping.
const POOL_SIZE: usize = 64;
/// Replies taken per recvmmsg.
const BATCH: usize = 32;
/// A reply's room: IPv4 header with options (60) and a TCP header with
/// options (60); more is cut (MSG_TRUNC) and the header is what counts.
const REPLY_ROOM: usize = 128;
/// When the SYN is sent again without an answer (Linux's TCP_TIMEOUT_INIT,
/// doubled at each try as its SYN retransmissions are).
const INITIAL_RETRANSMISSION: std::time::Duration = std::time::Duration::from_secs(1);
/// The raw socket's receive buffer: replies of thousands of checks due at
/// once must not be dropped (each lost reply is a false timeout).
const RECEIVE_BUFFER: usize = 4 << 20;
/// The raw socket's send buffer. Every SYN stays charged to the one
/// socket until it leaves, and a SYN to a neighbour that does not answer
/// ARP waits about 3 s for it: with the default buffer, some 500 such SYNs
/// (a rack without power) filled it, and every other probe's sendmsg
/// failed.
const SEND_BUFFER: usize = 4 << 20;
/// How long a SYN waits before it is tried again when the send buffer is
/// full anyway (a raw socket says ENOBUFS, never EAGAIN, and never wakes
/// a writer up): the caller's timeout bounds the tries.
const SEND_RETRY: std::time::Duration = std::time::Duration::from_millis(20);

/// Which raw socket an endpoint's probes go through.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Key {
    ipv6: bool,
    interface: Option<String>,
    mark: Option<u32>,
}

impl Key {
    fn of(endpoint: &Endpoint) -> Key {
        Key {
            ipv6: endpoint.address.is_ipv6(),
            interface: endpoint.bind_interface.clone(),
            mark: endpoint.fwmark,
        }
    }

    /// Whether `endpoint`'s probes go through this key's socket (without
    /// copying its interface's name, at every attempt).
    fn serves(&self, endpoint: &Endpoint) -> bool {
        self.ipv6 == endpoint.address.is_ipv6()
            && self.interface == endpoint.bind_interface
            && self.mark == endpoint.fwmark
    }
}

/// The process's probers, or why a kind cannot have one.
enum Entry {
    Ready(Arc<Prober>),
    /// No prober (no CAP_NET_RAW, IPv6 off, no such interface yet, no
    /// descriptor left, ...): that kind's TCP_CHECKs connect, as said in
    /// the log, for good when raw sockets are refused, otherwise until
    /// `retry_at`.
    Unavailable {
        retry_at: Option<std::time::Instant>,
    },
}

/// How long a prober that could not be made for a passing reason (an
/// interface not there yet, no descriptor left) is not tried again.
const RETRY_UNAVAILABLE: std::time::Duration = std::time::Duration::from_secs(60);

static PROBERS: Mutex<Vec<(Key, Entry)>> = Mutex::new(Vec::new());

/// The prober for `endpoint`'s kind, made on first use; `None` when raw
/// sockets are not to be had, and the check must connect instead.
pub fn prober(endpoint: &Endpoint) -> Option<Arc<Prober>> {
    let mut probers = lock(&PROBERS);
    if let Some(index) = probers.iter().position(|(known, _)| known.serves(endpoint)) {
        match &probers[index].1 {
            Entry::Ready(prober) if !prober.closed.load(Ordering::Acquire) => {
                return Some(prober.clone());
            }
            Entry::Unavailable { retry_at } => {
                if retry_at.is_none_or(|when| std::time::Instant::now() < when) {
                    return None;
                }
                probers.swap_remove(index);
            }
            // Its task's runtime has gone (tests run one per test): a new
            // one on this runtime.
            Entry::Ready(_) => {
                probers.swap_remove(index);
            }
        }
    }
    let key = Key::of(endpoint);
    match Prober::open(&key) {
        Ok(prober) => {
            let prober = Arc::new(prober);
            tokio::spawn(receive(prober.clone()));
            probers.push((key, Entry::Ready(prober.clone())));
            Some(prober)
        }
        Err(error) => {
            // Refused for good: no privilege, no such family.
            let lasting = matches!(
                error.raw_os_error(),
                Some(libc::EPERM | libc::EACCES | libc::EAFNOSUPPORT | libc::EPROTONOSUPPORT)
            );
            tracing::warn!(
                target: TARGET,
                "half-open TCP_CHECK unavailable for {}{}{}: {error}; these checks connect instead{}",
                if key.ipv6 { "IPv6" } else { "IPv4" },
                key.interface
                    .as_deref()
                    .map(|interface| format!(", interface {interface}"))
                    .unwrap_or_default(),
                key.mark
                    .map(|mark| format!(", fwmark {mark}"))
                    .unwrap_or_default(),
                if lasting {
                    String::new()
                } else {
                    format!(" for {} s", RETRY_UNAVAILABLE.as_secs())
                },
            );
            let retry_at = (!lasting).then(|| std::time::Instant::now() + RETRY_UNAVAILABLE);
            probers.push((key, Entry::Unavailable { retry_at }));
            None
        }
    }
}

/// Whether this process may open raw TCP sockets (CAP_NET_RAW), and the
/// error when not; for the one message at startup.
pub fn available() -> io::Result<()> {
    Socket::new(Domain::IPV4, Type::RAW, Some(Protocol::TCP)).map(drop)
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // The state stays consistent at every unlock (no panic in between
    // leaves half an update); a poisoned lock is still usable.
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// One raw socket's probes.
pub struct Prober {
    socket: AsyncFd<Socket>,
    ipv6: bool,
    interface: Option<String>,
    mark: Option<u32>,
    state: Mutex<State>,
    /// Set when the receiving task has ended: its runtime went away.
    closed: AtomicBool,
}

struct State {
    /// The attempts waiting, by server and this side's port (one attempt
    /// per pair at a time).
    waiting: HashMap<(SocketAddr, u16), Waiting>,
    /// The pool's reserved ports, each held by a bound TCP socket.
    pool: Vec<(u16, Socket)>,
    /// The next pool port to try.
    next: usize,
    /// `bind_port` reservations, by local address.
    fixed: HashMap<SocketAddr, Socket>,
    /// The source address the kernel picks for each server (its address
    /// and IPv6 scope, port 9), as connect() would (found once, with a
    /// connected UDP socket).
    sources: HashMap<SocketAddr, IpAddr>,
    /// The `bindto` addresses found to be this machine's.
    bindable: HashSet<IpAddr>,
}

struct Waiting {
    sequence: u32,
    answer: oneshot::Sender<Answer>,
}

/// Why a probe ended without the server's answer.
#[derive(Debug)]
pub enum ProbeError {
    /// The check failed here: its failure.
    Failed(Failure),
    /// The prober's task ended (its runtime went away) while waiting: ask
    /// [`prober`] for a new one and try again.
    Closed,
}

impl Prober {
    fn open(key: &Key) -> io::Result<Prober> {
        let domain = if key.ipv6 { Domain::IPV6 } else { Domain::IPV4 };
        let socket = Socket::new(domain, Type::RAW.nonblocking(), Some(Protocol::TCP))?;
        if let Some(interface) = &key.interface {
            socket.bind_device(Some(interface.as_bytes()))?;
        }
        if let Some(mark) = key.mark {
            super::set_mark(socket.as_raw_fd(), mark)?;
        }
        if key.ipv6 {
            // The kernel computes the checksum of what is sent and checks
            // that of what is received (drops it when wrong).
            super::set_int_option(
                socket.as_raw_fd(),
                libc::IPPROTO_IPV6,
                libc::IPV6_CHECKSUM,
                16,
            )?;
        }
        // Beyond net.core.rmem_max when allowed (CAP_NET_ADMIN).
        if super::set_int_option(
            socket.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_RCVBUFFORCE,
            RECEIVE_BUFFER as libc::c_int,
        )
        .is_err()
        {
            socket.set_recv_buffer_size(RECEIVE_BUFFER)?;
        }
        if super::set_int_option(
            socket.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_SNDBUFFORCE,
            SEND_BUFFER as libc::c_int,
        )
        .is_err()
        {
            socket.set_send_buffer_size(SEND_BUFFER)?;
        }
        let mut pool = Vec::with_capacity(POOL_SIZE);
        let any: IpAddr = if key.ipv6 {
            Ipv6Addr::UNSPECIFIED.into()
        } else {
            Ipv4Addr::UNSPECIFIED.into()
        };
        for _ in 0..POOL_SIZE {
            let reservation = reserve(SocketAddr::new(any, 0), false)?;
            let port = reservation
                .local_addr()?
                .as_socket()
                .map(|address| address.port())
                .ok_or_else(|| io::Error::other("a reserved port has no address"))?;
            pool.push((port, reservation));
        }
        let prober = Prober {
            // SAFETY: the socket is owned by the AsyncFd and keeps its
            // descriptor until dropped with it.
            socket: unsafe { AsyncFd::register(socket) }.map_err(|error| error.into_parts().1)?,
            ipv6: key.ipv6,
            interface: key.interface.clone(),
            mark: key.mark,
            state: Mutex::new(State {
                waiting: HashMap::new(),
                pool,
                next: 0,
                fixed: HashMap::new(),
                sources: HashMap::new(),
                bindable: HashSet::new(),
            }),
            closed: AtomicBool::new(false),
        };
        prober.attach_filter(&lock(&prober.state))?;
        Ok(prober)
    }

    /// Filters the socket's input down to SYN-ACKs and resets to the
    /// prober's ports (again when a `bind_port` adds one).
    fn attach_filter(&self, state: &State) -> io::Result<()> {
        let ports: Vec<u16> = state
            .pool
            .iter()
            .map(|(port, _)| *port)
            .chain(state.fixed.keys().map(SocketAddr::port))
            .collect();
        let program = filter_program(self.ipv6, &ports);
        let fprog = libc::sock_fprog {
            len: program.len() as libc::c_ushort,
            filter: program.as_ptr().cast_mut(),
        };
        // SAFETY: the program outlives the call, which copies it; the
        // option's value is a sock_fprog of the size given.
        let result = unsafe {
            libc::setsockopt(
                self.socket.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_ATTACH_FILTER,
                (&fprog as *const libc::sock_fprog).cast(),
                size_of::<libc::sock_fprog>() as libc::socklen_t,
            )
        };
        if result == 0 {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        }
    }

    /// Sends a SYN to `endpoint` and waits for its answer (no timeout of
    /// its own: the caller's).
    pub async fn probe(&self, endpoint: &Endpoint) -> Result<(), ProbeError> {
        // The replies' senders carry no IPv6 scope (nor flow label): the
        // map's key has none either; the SYN goes to the address as given.
        let target = endpoint.address;
        let server = SocketAddr::new(target.ip(), target.port());
        let sequence = fastrand::u32(..);
        let (sent, mut answer) = oneshot::channel();
        let (source, port) = {
            let mut state = lock(&self.state);
            let source = match endpoint.bind_address {
                Some(address) => bindable(&mut state, address)?,
                None => self.source_for(&mut state, target)?,
            };
            let port = match endpoint.bind_port {
                Some(port) => {
                    // Two attempts on one 4-tuple at once cannot be told
                    // apart by the server (connect's would fail: the
                    // 4-tuple in use).
                    if state.waiting.contains_key(&(server, port)) {
                        return Err(ProbeError::Failed(Failure::Bind(format!(
                            "source port {port} is probing {server} already"
                        ))));
                    }
                    self.fixed_port(&mut state, SocketAddr::new(source, port))?
                }
                None => free_port(&mut state, server)?,
            };
            state.waiting.insert(
                (server, port),
                Waiting {
                    sequence,
                    answer: sent,
                },
            );
            (source, port)
        };
        // From here on, a timeout (this future dropped) or a failure takes
        // the attempt out of the map.
        let _waiting = Deregister {
            prober: self,
            key: (server, port),
            sequence,
        };
        let bound = endpoint.bind_address.is_some();
        let mut source = source;
        let mut syn = [0u8; HEADER_LENGTH];
        let emit = |syn: &mut [u8; HEADER_LENGTH], source: IpAddr| {
            Repr::syn(port, server.port(), sequence).emit(
                &mut Packet::new_unchecked(&mut syn[..]),
                source,
                server.ip(),
            );
        };
        emit(&mut syn, source);
        match self.send(&syn, source, target, bound).await {
            Ok(()) => {}
            // The source address remembered for the server is no longer
            // this machine's (a VIP gone with a VRRP failover, an address
            // renumbered): asked again, the SYN is sent once more from the
            // source connect() would now use.
            Err(SendError::SourceGone(error)) => {
                let fresh = {
                    let mut state = lock(&self.state);
                    self.source_for(&mut state, target)?
                };
                if fresh == source {
                    return Err(ProbeError::Failed(Failure::from_io(&error)));
                }
                source = fresh;
                emit(&mut syn, source);
                self.send(&syn, source, target, bound)
                    .await
                    .map_err(SendError::into_probe_error)?;
            }
            Err(error) => return Err(error.into_probe_error()),
        }
        // The SYN again, as connect's kernel sends it, while no answer
        // comes (a SYN dropped on the way, or by a listener whose queue
        // was full): after 1 s, then twice as long each time, until the
        // caller's timeout. The same sequence number: the same attempt. A
        // SYN again that cannot be sent does not end the attempt: the
        // first may still be answered (connect's kernel does not give up
        // on a failed retransmission either).
        let mut wait = INITIAL_RETRANSMISSION;
        let answer = loop {
            match tokio::time::timeout(wait, &mut answer).await {
                Ok(answer) => break answer,
                Err(_) => {
                    match self.send(&syn, source, target, bound).await {
                        Ok(()) => {}
                        Err(SendError::Closed) => return Err(ProbeError::Closed),
                        Err(error) => {
                            tracing::debug!(target: TARGET, "SYN again to {server}: {error:?}")
                        }
                    }
                    wait = wait.saturating_mul(2);
                }
            }
        };
        match answer {
            Ok(Answer::Accepted) => Ok(()),
            Ok(Answer::Refused) => Err(ProbeError::Failed(Failure::ConnectionRefused)),
            Err(_) => Err(ProbeError::Closed),
        }
    }

    /// The source address connect() would use to reach `server`: asked of
    /// the kernel once (a UDP socket connected there, with the prober's
    /// interface and mark), then remembered.
    fn source_for(&self, state: &mut State, target: SocketAddr) -> Result<IpAddr, ProbeError> {
        let server = route_key(target);
        if let Some(source) = state.sources.get(&server) {
            return Ok(*source);
        }
        let failed = |error: io::Error| ProbeError::Failed(Failure::from_io(&error));
        let socket = Socket::new(Domain::for_address(server), Type::DGRAM, None)
            .map_err(|error| ProbeError::Failed(Failure::Local(format!("socket: {error}"))))?;
        if let Some(interface) = &self.interface {
            socket
                .bind_device(Some(interface.as_bytes()))
                .map_err(|error| {
                    ProbeError::Failed(Failure::Bind(format!("interface {interface}: {error}")))
                })?;
        }
        if let Some(mark) = self.mark {
            super::set_mark(socket.as_raw_fd(), mark).map_err(|error| {
                ProbeError::Failed(Failure::Bind(format!("fwmark {mark}: {error}")))
            })?;
        }
        socket.connect(&server.into()).map_err(failed)?;
        let source = socket
            .local_addr()
            .map_err(failed)?
            .as_socket()
            .map(|address| address.ip())
            .ok_or_else(|| ProbeError::Failed(Failure::Local("no source address".to_owned())))?;
        state.sources.insert(server, source);
        Ok(source)
    }

    /// `local`'s port, reserved (once) by a TCP socket bound there with
    /// SO_REUSEADDR, as a connect from it would bind.
    fn fixed_port(&self, state: &mut State, local: SocketAddr) -> Result<u16, ProbeError> {
        if let std::collections::hash_map::Entry::Vacant(vacant) = state.fixed.entry(local) {
            let reservation = reserve(local, true)
                .map_err(|error| ProbeError::Failed(Failure::Bind(format!("{local}: {error}"))))?;
            vacant.insert(reservation);
            if let Err(error) = self.attach_filter(state) {
                state.fixed.remove(&local);
                return Err(ProbeError::Failed(Failure::Local(format!(
                    "filtering replies to port {}: {error}",
                    local.port()
                ))));
            }
        }
        Ok(local.port())
    }

    /// Sends `syn` from `source` (IP_PKTINFO / IPV6_PKTINFO: the address
    /// its checksum was computed for) to `server`, waiting for room in the
    /// socket's send buffer when it is full.
    async fn send(
        &self,
        syn: &[u8],
        source: IpAddr,
        server: SocketAddr,
        bound: bool,
    ) -> Result<(), SendError> {
        // A raw socket's "port" is the protocol for IPv6 (0: the socket's);
        // the scope stays.
        let mut destination = server;
        destination.set_port(0);
        let destination = SockAddr::from(destination);
        let mut device_bound_again = false;
        loop {
            // An error only when the socket's reactor has shut down (its
            // runtime gone): a new prober then.
            let mut ready = self
                .socket
                .writable()
                .await
                .map_err(|_| SendError::Closed)?;
            let error = match ready
                .try_io(|socket| send_from(socket.as_raw_fd(), syn, source, &destination))
            {
                Ok(Ok(())) => return Ok(()),
                Ok(Err(error)) => error,
                Err(_would_block) => continue,
            };
            match send_failure(&error) {
                SendFailure::BufferFull => tokio::time::sleep(SEND_RETRY).await,
                SendFailure::DeviceGone if !device_bound_again => {
                    // SO_BINDTODEVICE holds the interface's index: once the
                    // interface is deleted and made again (a VLAN, a bond
                    // reconfigured), bound again by name, as a connect's
                    // new socket would be.
                    device_bound_again = true;
                    if let Some(interface) = &self.interface {
                        if let Err(error) = self
                            .socket
                            .get_ref()
                            .bind_device(Some(interface.as_bytes()))
                        {
                            return Err(SendError::Failed(Failure::Bind(format!(
                                "interface {interface}: {error}"
                            ))));
                        }
                    }
                }
                SendFailure::DeviceGone => {
                    return Err(SendError::Failed(Failure::from_io(&error)));
                }
                SendFailure::SourceGone if bound => {
                    // Checked again at the next probe (bound to): a bind
                    // failure then if `bindto` is no longer this machine's.
                    lock(&self.state).bindable.remove(&source);
                    let failure = match error.raw_os_error() {
                        Some(libc::ENETUNREACH | libc::EHOSTUNREACH) => Failure::from_io(&error),
                        _ => Failure::Bind(format!("{source}: {error}")),
                    };
                    return Err(SendError::Failed(failure));
                }
                SendFailure::SourceGone => {
                    lock(&self.state).sources.remove(&route_key(server));
                    return Err(SendError::SourceGone(error));
                }
                SendFailure::Other => return Err(SendError::Failed(Failure::from_io(&error))),
            }
        }
    }

    /// Hands each reply in `packet` (as the raw socket gave it; `peer` its
    /// sender for IPv6, whose raw sockets give no IP header) to the
    /// attempt it answers, if any.
    fn dispatch(&self, packet: &[u8], peer: Option<IpAddr>) {
        let (server, repr) = if self.ipv6 {
            let (Some(server), Ok(segment)) = (peer, Packet::new_checked(packet)) else {
                return;
            };
            (server, Repr::parse_unverified(&segment))
        } else {
            let Ok((server, local, segment)) = segment::split_ipv4(packet) else {
                return;
            };
            let Ok(segment) = Packet::new_checked(segment) else {
                return;
            };
            match Repr::parse(&segment, server, local) {
                Ok(repr) => (server, repr),
                Err(_) => return,
            }
        };
        let key = (
            SocketAddr::new(server, repr.source_port),
            repr.destination_port,
        );
        let mut state = lock(&self.state);
        let Some(waiting) = state.waiting.get(&key) else {
            return;
        };
        let Some(answer) = repr.answer_to(waiting.sequence) else {
            return;
        };
        if let Some(waiting) = state.waiting.remove(&key) {
            // The attempt may have timed out meanwhile: nobody to tell.
            let _ = waiting.answer.send(answer);
        }
    }
}

/// `target` as [`Prober::source_for`] remembers its source address: any
/// port (connecting a UDP socket only routes), the IPv6 scope kept (a
/// link-local address's interface is part of the route).
fn route_key(target: SocketAddr) -> SocketAddr {
    let mut key = target;
    key.set_port(9);
    key
}

/// Why a SYN was not sent.
#[derive(Debug)]
enum SendError {
    /// The prober's runtime has gone.
    Closed,
    /// The source address used is no longer this machine's (not `bindto`:
    /// remembered for the server, and now forgotten).
    SourceGone(io::Error),
    /// The attempt fails.
    Failed(Failure),
}

impl SendError {
    fn into_probe_error(self) -> ProbeError {
        match self {
            SendError::Closed => ProbeError::Closed,
            SendError::SourceGone(error) => ProbeError::Failed(Failure::from_io(&error)),
            SendError::Failed(failure) => ProbeError::Failed(failure),
        }
    }
}

/// What a failed sendmsg of a SYN means.
#[derive(Debug, PartialEq, Eq)]
enum SendFailure {
    /// The socket's send buffer is full (SYNs waiting for ARP): try again
    /// shortly.
    BufferFull,
    /// The bound interface is gone (deleted, perhaps made again).
    DeviceGone,
    /// The source address is not this machine's any more: IPv6 says EINVAL,
    /// IPv4 ENETUNREACH (measured), and a `bindto` address removed
    /// EADDRNOTAVAIL.
    SourceGone,
    Other,
}

fn send_failure(error: &io::Error) -> SendFailure {
    match error.raw_os_error() {
        Some(libc::ENOBUFS | libc::ENOMEM | libc::EAGAIN) => SendFailure::BufferFull,
        Some(libc::ENODEV | libc::ENXIO) => SendFailure::DeviceGone,
        // Unreachable from the source used: that source may be stale (it
        // is asked again; the same answer then is a real unreachable).
        Some(libc::EINVAL | libc::EADDRNOTAVAIL | libc::ENETUNREACH | libc::EHOSTUNREACH) => {
            SendFailure::SourceGone
        }
        _ => SendFailure::Other,
    }
}

/// Takes an attempt out of the map when it ends, answered or not.
struct Deregister<'p> {
    prober: &'p Prober,
    key: (SocketAddr, u16),
    sequence: u32,
}

impl Drop for Deregister<'_> {
    fn drop(&mut self) {
        let mut state = lock(&self.prober.state);
        // Only this attempt's entry: once it is gone, another attempt may
        // have the same server and port.
        if state
            .waiting
            .get(&self.key)
            .is_some_and(|waiting| waiting.sequence == self.sequence)
        {
            state.waiting.remove(&self.key);
        }
    }
}

/// `address`, when it is this machine's (bind would take it): checked once
/// with a UDP socket bound there, as connect's bind fails on `bindto`.
fn bindable(state: &mut State, address: IpAddr) -> Result<IpAddr, ProbeError> {
    if !state.bindable.contains(&address) {
        let local = SocketAddr::new(address, 0);
        Socket::new(Domain::for_address(local), Type::DGRAM, None)
            .and_then(|socket| socket.bind(&local.into()))
            .map_err(|error| ProbeError::Failed(Failure::Bind(format!("{local}: {error}"))))?;
        state.bindable.insert(address);
    }
    Ok(address)
}

/// A pool port no attempt to `server` uses now.
fn free_port(state: &mut State, server: SocketAddr) -> Result<u16, ProbeError> {
    for _ in 0..state.pool.len() {
        let port = state.pool[state.next].0;
        state.next = (state.next + 1) % state.pool.len();
        if !state.waiting.contains_key(&(server, port)) {
            return Ok(port);
        }
    }
    Err(ProbeError::Failed(Failure::Local(format!(
        "all {} source ports are probing {server} already",
        state.pool.len()
    ))))
}

/// A TCP socket bound to `local` and not listening: its port is this
/// process's, for the kernel's choices and for the replies it takes.
fn reserve(local: SocketAddr, reuse: bool) -> io::Result<Socket> {
    let socket = Socket::new(Domain::for_address(local), Type::STREAM, None)?;
    if local.is_ipv6() {
        socket.set_only_v6(true)?;
    }
    if reuse {
        socket.set_reuse_address(true)?;
    }
    socket.bind(&local.into())?;
    Ok(socket)
}

/// sendmsg of `payload` to `destination`, from `source` (its packet-info
/// control message; a raw socket's source is otherwise the route's).
fn send_from(
    descriptor: RawFd,
    payload: &[u8],
    source: IpAddr,
    destination: &SockAddr,
) -> io::Result<()> {
    // Room for either control message, aligned for cmsghdr.
    let mut control = [0u64; 8];
    let mut iov = libc::iovec {
        iov_base: payload.as_ptr().cast_mut().cast(),
        iov_len: payload.len(),
    };
    // SAFETY: every pointer in the message points into locals that live
    // through the call; the control message is built inside `control`,
    // whose size covers CMSG_SPACE of either info structure.
    unsafe {
        let mut message: libc::msghdr = std::mem::zeroed();
        message.msg_name = destination.as_ptr().cast_mut().cast();
        message.msg_namelen = destination.len();
        message.msg_iov = &mut iov;
        message.msg_iovlen = 1;
        message.msg_control = control.as_mut_ptr().cast();
        let (level, kind, length) = match source {
            IpAddr::V4(_) => (
                libc::IPPROTO_IP,
                libc::IP_PKTINFO,
                size_of::<libc::in_pktinfo>(),
            ),
            IpAddr::V6(_) => (
                libc::IPPROTO_IPV6,
                libc::IPV6_PKTINFO,
                size_of::<libc::in6_pktinfo>(),
            ),
        };
        message.msg_controllen = libc::CMSG_SPACE(length as u32) as _;
        let header = libc::CMSG_FIRSTHDR(&message);
        (*header).cmsg_level = level;
        (*header).cmsg_type = kind;
        (*header).cmsg_len = libc::CMSG_LEN(length as u32) as _;
        let data = libc::CMSG_DATA(header);
        match source {
            IpAddr::V4(address) => {
                let info = libc::in_pktinfo {
                    ipi_ifindex: 0,
                    ipi_spec_dst: libc::in_addr {
                        s_addr: u32::from_ne_bytes(address.octets()),
                    },
                    ipi_addr: libc::in_addr { s_addr: 0 },
                };
                std::ptr::write_unaligned(data.cast(), info);
            }
            IpAddr::V6(address) => {
                let info = libc::in6_pktinfo {
                    ipi6_addr: libc::in6_addr {
                        s6_addr: address.octets(),
                    },
                    ipi6_ifindex: 0,
                };
                std::ptr::write_unaligned(data.cast(), info);
            }
        }
        if libc::sendmsg(descriptor, &message, libc::MSG_DONTWAIT) < 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Replies drained from the socket per wake-up, with their senders.
struct Batch {
    buffers: Vec<[u8; REPLY_ROOM]>,
    names: Vec<MaybeUninit<libc::sockaddr_in6>>,
    lengths: Vec<usize>,
}

impl Batch {
    fn new() -> Batch {
        Batch {
            buffers: vec![[0; REPLY_ROOM]; BATCH],
            names: vec![MaybeUninit::zeroed(); BATCH],
            lengths: vec![0; BATCH],
        }
    }

    /// recvmmsg: how many replies it took (the would-block error when none
    /// waits).
    fn receive(&mut self, descriptor: RawFd) -> io::Result<usize> {
        // On the stack: nothing allocated per wake-up.
        let mut iovs: [libc::iovec; BATCH] = std::array::from_fn(|index| libc::iovec {
            iov_base: self.buffers[index].as_mut_ptr().cast(),
            iov_len: REPLY_ROOM,
        });
        // SAFETY: zeroed mmsghdrs are valid; each is pointed below at its
        // own iovec and name buffer, which live through the call.
        let mut headers: [libc::mmsghdr; BATCH] = unsafe { std::mem::zeroed() };
        for ((header, iov), name) in headers.iter_mut().zip(&mut iovs).zip(&mut self.names) {
            header.msg_hdr.msg_iov = iov;
            header.msg_hdr.msg_iovlen = 1;
            header.msg_hdr.msg_name = name.as_mut_ptr().cast();
            header.msg_hdr.msg_namelen = size_of::<libc::sockaddr_in6>() as libc::socklen_t;
        }
        // SAFETY: the headers are set up above for BATCH messages.
        let count = unsafe {
            libc::recvmmsg(
                descriptor,
                headers.as_mut_ptr(),
                BATCH as libc::c_uint,
                libc::MSG_DONTWAIT,
                std::ptr::null_mut(),
            )
        };
        if count < 0 {
            return Err(io::Error::last_os_error());
        }
        let count = count as usize;
        for (length, header) in self.lengths.iter_mut().zip(&headers).take(count) {
            *length = (header.msg_len as usize).min(REPLY_ROOM);
        }
        Ok(count)
    }

    /// The IPv6 sender of reply `index`.
    fn peer(&self, index: usize) -> Option<IpAddr> {
        // SAFETY: zero-initialised, then written by recvmmsg.
        let name = unsafe { self.names[index].assume_init_ref() };
        (name.sin6_family == libc::AF_INET6 as libc::sa_family_t)
            .then(|| IpAddr::V6(Ipv6Addr::from(name.sin6_addr.s6_addr)))
    }
}

/// Drains `prober`'s socket for as long as its runtime runs.
async fn receive(prober: Arc<Prober>) {
    // When this task ends (its runtime shuts down), the waiting attempts
    // learn it (their channels close) and the next one opens a new
    // prober.
    struct Closing(Arc<Prober>);
    impl Drop for Closing {
        fn drop(&mut self) {
            self.0.closed.store(true, Ordering::Release);
            lock(&self.0.state).waiting.clear();
        }
    }
    let closing = Closing(prober);
    let prober = &closing.0;
    let mut batch = Batch::new();
    let mut said = false;
    loop {
        let mut ready = match prober.socket.readable().await {
            Ok(ready) => ready,
            Err(error) => {
                tracing::warn!(target: TARGET, "half-open TCP_CHECK replies: {error}");
                return;
            }
        };
        match ready.try_io(|socket| batch.receive(socket.as_raw_fd())) {
            Ok(Ok(count)) => {
                for index in 0..count {
                    let peer = if prober.ipv6 { batch.peer(index) } else { None };
                    prober.dispatch(&batch.buffers[index][..batch.lengths[index]], peer);
                }
            }
            Ok(Err(error)) => {
                // ENOMEM and the like: replies lost now, later ones still
                // come. Said once, not per packet.
                if !said {
                    tracing::warn!(target: TARGET, "half-open TCP_CHECK replies: {error}");
                    said = true;
                }
            }
            Err(_would_block) => {}
        }
    }
}

// Classic BPF (linux/filter.h), as tcpdump -d prints it.
const LD_H_ABS: u16 = 0x28;
const LD_H_IND: u16 = 0x48;
const LD_B_IND: u16 = 0x50;
const LDX_B_MSH: u16 = 0xb1;
const LDX_IMM: u16 = 0x01;
const ALU_AND_K: u16 = 0x54;
const JMP_JEQ_K: u16 = 0x15;
const JMP_JSET_K: u16 = 0x45;
const RET_K: u16 = 0x06;

fn instruction(code: u16, jt: u8, jf: u8, k: u32) -> libc::sock_filter {
    libc::sock_filter { code, jt, jf, k }
}

/// The socket filter: SYN-ACKs and resets whose destination port is one
/// of `ports`. IPv4 raw sockets see the IP header first (the filter skips
/// it, and fragments), IPv6 raw sockets the TCP header. With more ports
/// than short jumps reach, the ports are left to the dispatch.
pub fn filter_program(ipv6: bool, ports: &[u16]) -> Vec<libc::sock_filter> {
    let mut program = Vec::new();
    if ipv6 {
        program.push(instruction(LDX_IMM, 0, 0, 0));
    } else {
        // Fragment offset or "more fragments": drop (patched below).
        program.push(instruction(LD_H_ABS, 0, 0, 6));
        program.push(instruction(JMP_JSET_K, 0, 0, 0x3fff));
        // X = the IP header's length.
        program.push(instruction(LDX_B_MSH, 0, 0, 0));
    }
    let fragment_jump = if ipv6 { None } else { Some(1) };
    // A = the TCP flags.
    program.push(instruction(LD_B_IND, 0, 0, 13));
    // RST: on to the ports (two ahead).
    program.push(instruction(JMP_JSET_K, 2, 0, u32::from(segment::FLAG_RST)));
    program.push(instruction(
        ALU_AND_K,
        0,
        0,
        u32::from(segment::FLAG_SYN | segment::FLAG_ACK),
    ));
    let flags_jump = program.len();
    program.push(instruction(
        JMP_JEQ_K,
        0,
        0,
        u32::from(segment::FLAG_SYN | segment::FLAG_ACK),
    ));
    let checked_ports = ports.len() < 200;
    let mut port_jumps = Vec::new();
    if checked_ports {
        // A = the destination port.
        program.push(instruction(LD_H_IND, 0, 0, 2));
        for port in ports {
            port_jumps.push(program.len());
            program.push(instruction(JMP_JEQ_K, 0, 0, u32::from(*port)));
        }
        // None of them: drop.
        program.push(instruction(RET_K, 0, 0, 0));
    }
    let accept = program.len();
    program.push(instruction(RET_K, 0, 0, REPLY_ROOM as u32));
    let drop = program.len();
    program.push(instruction(RET_K, 0, 0, 0));
    let offset = |from: usize, to: usize| (to - from - 1) as u8;
    if let Some(index) = fragment_jump {
        program[index].jt = offset(index, drop);
    }
    program[flags_jump].jf = offset(flags_jump, drop);
    for index in port_jumps {
        program[index].jt = offset(index, accept);
    }
    program
}

#[cfg(test)]
mod tests;
