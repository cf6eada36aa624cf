//! BFD_CHECK's I/O: one task runs every configured BFD session (RFC 5881,
//! single hop) and reports each session's state changes.
//!
//! Unlike the other checkers, a BFD session is not a series of attempts: it
//! runs all the time, at its own rate (down to milliseconds), and decides
//! by itself ([`crate::bfd::session`]). The scheduler tells this task which
//! sessions to run (a `watch` of [`BfdSpec`]s; on a reload, sessions whose
//! parameters are unchanged go on undisturbed) and turns its [`Report`]s
//! into its checkers' states.
//!
//! Sockets, as keepalived's bfd_scheduler.c:
//! - one listener on port 3784 of every address, IPv6 with IPv4 mapped
//!   (IPv4 only where the host has no IPv6), with the received TTL or hop
//!   limit (`IP_RECVTTL`, `IPV6_RECVHOPLIMIT`) and destination address
//!   (`IPV6_RECVPKTINFO`, `IP_PKTINFO`) of each datagram;
//! - one sending socket per session, bound to its `source_ip` (or any
//!   address) and a random port of 49152-65535 (RFC 5881 section 4;
//!   keepalived only picks one from that range with a `source_ip`), with
//!   TTL or hop limit 255 (`ttl`).
//!
//! A received packet goes to the session its "your discriminator" names,
//! or, when that is 0 (the peer does not know us yet), to the session with
//! the packet's source as neighbor and its destination as `source_ip`.
//! Packets whose TTL is below `ttl - max_hops` are dropped (GTSM, RFC 5082;
//! with the default max_hops 0, only packets sent with TTL 255 from this
//! link count, so nobody off-link can fake a session).

use std::collections::HashMap;
use std::io;
use std::mem::{MaybeUninit, size_of};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV6};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

use tokio::io::Interest;
use tokio::net::UdpSocket;
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;

use crate::bfd::packet::{CONTROL_PORT, Diagnostic, Packet, Repr, SOURCE_PORTS, State};
use crate::bfd::session::{Actions, Event, Session};
use crate::machine::Timestamp;
use crate::outcome::Failure;
use crate::spec::BfdSpec;

/// A session's state, as the scheduler needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    pub spec: BfdSpec,
    pub state: State,
    /// `None` when Up; else why the checker is down.
    pub failure: Option<Failure>,
}

impl Report {
    fn new(spec: &BfdSpec, state: State, diagnostic: Diagnostic) -> Report {
        let neighbor = spec.neighbor;
        let failure = match (state, diagnostic) {
            (State::Up, _) => None,
            (_, Diagnostic::None) => Some(Failure::Other(format!(
                "session to {neighbor} is {state}, not Up"
            ))),
            (_, diagnostic) => Some(Failure::Other(format!(
                "session to {neighbor} down: {diagnostic}"
            ))),
        };
        Report {
            spec: spec.clone(),
            state,
            failure,
        }
    }
}

/// A client of the process's BFD sessions: they run the sessions last
/// sent on the returned `watch` (until that sender is dropped), and the
/// returned channel gets the reports of those sessions.
///
/// A process has one set of sessions for all its clients (pulse's checkers
/// and its VRRP), as keepalived has one BFD process telling both: there is
/// one listener on port 3784, and a `bfd_instance` both follow is one
/// session, whose state both learn. A client asking for a session already
/// running gets its state at once.
///
/// Reports go through an unbounded channel: the sessions must never wait
/// for a client (which may itself wait for a slow consumer of its
/// events), or they would miss their transmission times and the peers
/// would declare them down. Reports come only with changes of state, a
/// handful per session and detection time at most.
pub fn spawn() -> (watch::Sender<Vec<BfdSpec>>, mpsc::UnboundedReceiver<Report>) {
    static CLIENTS: std::sync::OnceLock<mpsc::UnboundedSender<Client>> = std::sync::OnceLock::new();
    let (configuration, specs) = watch::channel(Vec::new());
    let (reports_sender, reports) = mpsc::unbounded_channel();
    let clients = CLIENTS.get_or_init(start_sessions);
    // The sessions' thread never ends: the send cannot fail.
    let _ = clients.send(Client {
        specs,
        reports: reports_sender,
    });
    (configuration, reports)
}

/// One user of the sessions.
struct Client {
    specs: watch::Receiver<Vec<BfdSpec>>,
    reports: mpsc::UnboundedSender<Report>,
}

/// Runs the sessions on a thread of their own, with its own runtime: the
/// sessions outlive any one client's runtime (tests run several at once),
/// and their millisecond timers never wait for a busy runtime's workers.
fn start_sessions() -> mpsc::UnboundedSender<Client> {
    let (clients, new_clients) = mpsc::unbounded_channel();
    std::thread::Builder::new()
        .name("bfd".into())
        .spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("a current-thread runtime builds");
            runtime.block_on(share(new_clients));
        })
        .expect("the BFD thread starts");
    clients
}

/// Runs the sessions every client asks for, each once, and passes each
/// report to the clients that ask for its session.
async fn share(mut new_clients: mpsc::UnboundedReceiver<Client>) {
    let (sessions, sessions_receiver) = watch::channel(Vec::new());
    let (reports_sender, mut reports) = mpsc::unbounded_channel();
    tokio::spawn(run(sessions_receiver, reports_sender));
    let mut clients: Vec<Client> = Vec::new();
    // A client's specs changed (or its sender went): one forwarding task
    // per client, as the clients come and go.
    let (changed_sender, mut changed) = mpsc::unbounded_channel::<()>();
    loop {
        tokio::select! {
            Some(client) = new_clients.recv() => {
                let mut specs = client.specs.clone();
                let changed_sender = changed_sender.clone();
                tokio::spawn(async move {
                    while specs.changed().await.is_ok() {
                        if changed_sender.send(()).is_err() {
                            return;
                        }
                    }
                    let _ = changed_sender.send(());
                });
                clients.push(client);
            }
            Some(()) = changed.recv() => {}
            Some(report) = reports.recv() => {
                let before = clients.len();
                clients.retain(|client| {
                    !client.specs.borrow().contains(&report.spec)
                        || client.reports.send(report.clone()).is_ok()
                });
                if clients.len() == before {
                    continue;
                }
            }
        }
        // A client whose specs sender or reports receiver is gone wants
        // nothing more.
        clients.retain(|client| client.specs.has_changed().is_ok() && !client.reports.is_closed());
        let mut union: Vec<BfdSpec> = Vec::new();
        for client in &clients {
            for spec in client.specs.borrow().iter() {
                if !union.contains(spec) {
                    union.push(spec.clone());
                }
            }
        }
        // Sent even when the union is the same: the sessions report their
        // states again, so a new client learns those already running.
        sessions.send_replace(union);
    }
}

/// One running session.
struct Entry {
    spec: BfdSpec,
    session: Session,
    /// `None` when no sending socket could be opened (reported down).
    socket: Option<UdpSocket>,
}

struct Service {
    epoch: Instant,
    entries: Vec<Entry>,
    listener: Option<Listener>,
    /// Why the listener could not be opened, for the reports.
    listener_error: Option<String>,
    reports: mpsc::UnboundedSender<Report>,
}

async fn run(
    mut configuration: watch::Receiver<Vec<BfdSpec>>,
    reports: mpsc::UnboundedSender<Report>,
) {
    let mut service = Service {
        epoch: Instant::now(),
        entries: Vec::new(),
        listener: None,
        listener_error: None,
        reports,
    };
    let mut buffer = [0u8; 512];
    loop {
        let wake = service
            .entries
            .iter()
            .filter_map(|entry| entry.session.poll_at())
            .min()
            .map(|at| service.epoch + at.0);
        tokio::select! {
            changed = configuration.changed() => {
                if changed.is_err() {
                    return;
                }
                let specs = configuration.borrow_and_update().clone();
                if !service.configure(specs) {
                    return;
                }
            }
            received = receive(service.listener.as_ref(), &mut buffer) => {
                match received {
                    Ok(datagram) => {
                        let length = datagram.length;
                        if !service.handle_datagram(&buffer[..length], datagram) {
                            return;
                        }
                    }
                    // Anyone may send to port 3784 (oversized datagrams
                    // end here): not worth more than a debug line.
                    Err(error) => tracing::debug!("BFD: receiving: {error}"),
                }
            }
            _ = sleep_until_option(wake) => {
                if !service.fire_timers() {
                    return;
                }
            }
        }
    }
}

async fn sleep_until_option(wake: Option<Instant>) {
    match wake {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

async fn receive(listener: Option<&Listener>, buffer: &mut [u8]) -> io::Result<Datagram> {
    match listener {
        Some(listener) => listener.receive(buffer).await,
        None => std::future::pending().await,
    }
}

impl Service {
    fn now(&self) -> Timestamp {
        Timestamp(Instant::now() - self.epoch)
    }

    /// Runs `specs`: unchanged sessions go on, new ones start Down,
    /// removed ones stop. Every session's state is reported again, so that
    /// checkers new in a reload learn it. False when nobody listens.
    fn configure(&mut self, specs: Vec<BfdSpec>) -> bool {
        let now = self.now();
        let mut previous: HashMap<BfdSpec, Entry> = self
            .entries
            .drain(..)
            .map(|entry| (entry.spec.clone(), entry))
            .collect();
        let mut entries = Vec::with_capacity(specs.len());
        for spec in specs {
            if entries.iter().any(|entry: &Entry| entry.spec == spec) {
                continue;
            }
            if let Some(entry) = previous.remove(&spec) {
                entries.push(entry);
                continue;
            }
            let discriminator = loop {
                let candidate = fastrand::u32(1..);
                let used = |entry: &Entry| entry.session.local_discriminator() == candidate;
                if !entries.iter().any(used) && !previous.values().any(used) {
                    break candidate;
                }
            };
            let socket = match sending_socket(&spec) {
                Ok(socket) => Some(socket),
                Err(error) => {
                    tracing::warn!(
                        "BFD_CHECK {}: cannot open a socket to {}: {error}",
                        spec.name,
                        spec.neighbor
                    );
                    None
                }
            };
            let session = Session::new(spec.session.clone(), discriminator, now, fastrand::u64(..));
            entries.push(Entry {
                spec,
                session,
                socket,
            });
        }
        self.entries = entries;
        if self.entries.is_empty() {
            self.listener = None;
        } else if self.listener.is_none() {
            match Listener::open() {
                Ok(listener) => {
                    self.listener = Some(listener);
                    self.listener_error = None;
                }
                Err(error) => {
                    tracing::error!("BFD: cannot listen on UDP port {CONTROL_PORT}: {error}");
                    self.listener_error =
                        Some(format!("cannot listen on UDP port {CONTROL_PORT}: {error}"));
                }
            }
        }
        for index in 0..self.entries.len() {
            if !self.report_current(index) {
                return false;
            }
        }
        true
    }

    /// Reports a session's state as it is.
    fn report_current(&self, index: usize) -> bool {
        let entry = &self.entries[index];
        let mut report = Report::new(
            &entry.spec,
            entry.session.state(),
            entry.session.diagnostic(),
        );
        // A session that cannot send or hear stays Down: say why.
        if report.failure.is_some() {
            if entry.socket.is_none() {
                report.failure = Some(Failure::Other(format!(
                    "session to {}: cannot open a socket",
                    entry.spec.neighbor
                )));
            } else if let Some(error) = &self.listener_error {
                report.failure = Some(Failure::Other(format!(
                    "session to {}: {error}",
                    entry.spec.neighbor
                )));
            }
        }
        self.reports.send(report).is_ok()
    }

    fn handle_datagram(&mut self, bytes: &[u8], datagram: Datagram) -> bool {
        let repr = match Packet::new_checked(bytes).and_then(|packet| Repr::parse(&packet)) {
            Ok(repr) => repr,
            Err(error) => {
                tracing::debug!("BFD: discarding a packet from {}: {error}", datagram.source);
                return true;
            }
        };
        let source = canonical(datagram.source.ip());
        let destination = datagram.destination.map(canonical);
        let found = if repr.your_discriminator != 0 {
            self.entries.iter().position(|entry| {
                entry.session.local_discriminator() == repr.your_discriminator
                    && entry.spec.neighbor == source
            })
        } else {
            self.entries.iter().position(|entry| {
                entry.spec.neighbor == source
                    && entry
                        .spec
                        .source
                        .is_none_or(|local| Some(local) == destination)
            })
        };
        let Some(index) = found else {
            tracing::debug!(
                "BFD: discarding a packet from {source}: no session (your discriminator {})",
                repr.your_discriminator
            );
            return true;
        };
        let spec = &self.entries[index].spec;
        if !accepts_ttl(spec, datagram.ttl) {
            tracing::debug!(
                "BFD_CHECK {}: discarding a packet from {source} with TTL {:?} (below {})",
                spec.name,
                datagram.ttl,
                spec.ttl.saturating_sub(spec.max_hops)
            );
            return true;
        }
        let now = self.now();
        let actions = self.entries[index]
            .session
            .handle(now, Event::Received(&repr));
        self.apply(index, actions)
    }

    fn fire_timers(&mut self) -> bool {
        let now = self.now();
        for index in 0..self.entries.len() {
            if self.entries[index]
                .session
                .poll_at()
                .is_some_and(|at| at <= now)
            {
                let actions = self.entries[index].session.handle(now, Event::Timer);
                if !self.apply(index, actions) {
                    return false;
                }
            }
        }
        true
    }

    /// Sends what the session asked for and reports its change.
    fn apply(&mut self, index: usize, actions: Actions) -> bool {
        let entry = &self.entries[index];
        if let Some(repr) = actions.send
            && let Some(socket) = &entry.socket
        {
            let target = SocketAddr::new(entry.spec.neighbor, CONTROL_PORT);
            // A full send buffer loses this packet, as a lossy link would;
            // the session's timers cope, and the loop never waits on it.
            if let Err(error) = socket.try_send_to(&repr.to_bytes(), target) {
                tracing::debug!(
                    "BFD_CHECK {}: sending to {target}: {error}",
                    entry.spec.name
                );
            }
        }
        if let Some(change) = actions.change {
            let level_up = change.to == State::Up;
            if level_up || change.from == State::Up {
                let message = format!(
                    "BFD_CHECK {}: session to {} {} -> {} ({})",
                    entry.spec.name, entry.spec.neighbor, change.from, change.to, change.diagnostic
                );
                if level_up {
                    tracing::info!("{message}");
                } else {
                    tracing::warn!("{message}");
                }
            }
            let report = Report::new(&entry.spec, change.to, change.diagnostic);
            return self.reports.send(report).is_ok();
        }
        true
    }
}

/// GTSM (RFC 5082, RFC 5881 section 5): whether a packet that arrived
/// with `ttl` may be the neighbor's, as keepalived's
/// `bfd_check_packet_ttl`: at least `ttl - max_hops`; `max_hops` 255
/// accepts anything, and so does a packet the kernel gave no TTL for.
fn accepts_ttl(spec: &BfdSpec, ttl: Option<u8>) -> bool {
    spec.max_hops == u8::MAX
        || ttl.is_none_or(|ttl| u16::from(ttl) + u16::from(spec.max_hops) >= u16::from(spec.ttl))
}

/// An IPv4-mapped IPv6 address as the IPv4 address it is.
fn canonical(address: IpAddr) -> IpAddr {
    match address {
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => IpAddr::V6(v6),
        },
        v4 => v4,
    }
}

/// The socket a session sends from: `source_ip` (or any address) and a
/// random free port of 49152-65535, TTL or hop limit `ttl`.
fn sending_socket(spec: &BfdSpec) -> io::Result<UdpSocket> {
    let address = spec.source.unwrap_or(match spec.neighbor {
        IpAddr::V4(_) => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
        IpAddr::V6(_) => IpAddr::V6(Ipv6Addr::UNSPECIFIED),
    });
    let first = fastrand::u16(SOURCE_PORTS);
    let count = usize::from(SOURCE_PORTS.end() - SOURCE_PORTS.start()) + 1;
    let mut last_error = None;
    let mut socket = None;
    for offset in 0..count {
        let port = SOURCE_PORTS.start()
            + ((usize::from(first - SOURCE_PORTS.start()) + offset) % count) as u16;
        match std::net::UdpSocket::bind(SocketAddr::new(address, port)) {
            Ok(bound) => {
                socket = Some(bound);
                break;
            }
            Err(error) if error.kind() == io::ErrorKind::AddrInUse => last_error = Some(error),
            Err(error) => return Err(error),
        }
    }
    let socket = socket.ok_or_else(|| last_error.expect("at least one port was tried"))?;
    match spec.neighbor {
        IpAddr::V4(_) => socket.set_ttl(u32::from(spec.ttl))?,
        IpAddr::V6(_) => super::set_int_option(
            socket.as_raw_fd(),
            libc::IPPROTO_IPV6,
            libc::IPV6_UNICAST_HOPS,
            libc::c_int::from(spec.ttl),
        )?,
    }
    socket.set_nonblocking(true)?;
    UdpSocket::from_std(socket)
}

/// One received datagram's addresses and TTL.
#[derive(Debug, Clone, Copy)]
struct Datagram {
    length: usize,
    source: SocketAddr,
    /// The local address it was sent to, when the kernel said.
    destination: Option<IpAddr>,
    /// Its TTL or hop limit, when the kernel said.
    ttl: Option<u8>,
}

/// The socket on port 3784.
struct Listener {
    socket: UdpSocket,
}

impl Listener {
    fn open() -> io::Result<Listener> {
        let socket = match Listener::open_family(libc::AF_INET6) {
            Ok(socket) => socket,
            // No IPv6 on this host (ipv6.disable=1): IPv4 alone.
            Err(error) if error.raw_os_error() == Some(libc::EAFNOSUPPORT) => {
                Listener::open_family(libc::AF_INET)?
            }
            Err(error) => return Err(error),
        };
        Ok(Listener {
            socket: UdpSocket::from_std(std::net::UdpSocket::from(socket))?,
        })
    }

    fn open_family(family: libc::c_int) -> io::Result<OwnedFd> {
        // SAFETY: socket has no memory preconditions; the result is checked.
        let descriptor = unsafe {
            libc::socket(
                family,
                libc::SOCK_DGRAM | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
                libc::IPPROTO_UDP,
            )
        };
        if descriptor < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: just opened, owned by nobody else.
        let socket = unsafe { OwnedFd::from_raw_fd(descriptor) };
        let raw = socket.as_raw_fd();
        // IPv4 options apply to the IPv4 datagrams a dual-stack socket
        // receives (keepalived relies on it too).
        super::set_int_option(raw, libc::IPPROTO_IP, libc::IP_RECVTTL, 1)?;
        super::set_int_option(raw, libc::IPPROTO_IP, libc::IP_PKTINFO, 1)?;
        let result = if family == libc::AF_INET6 {
            super::set_int_option(raw, libc::IPPROTO_IPV6, libc::IPV6_V6ONLY, 0)?;
            super::set_int_option(raw, libc::IPPROTO_IPV6, libc::IPV6_RECVHOPLIMIT, 1)?;
            super::set_int_option(raw, libc::IPPROTO_IPV6, libc::IPV6_RECVPKTINFO, 1)?;
            // SAFETY: a zeroed sockaddr_in6 is valid; it is passed with its
            // size.
            unsafe {
                let mut address: libc::sockaddr_in6 = std::mem::zeroed();
                address.sin6_family = libc::AF_INET6 as libc::sa_family_t;
                address.sin6_port = CONTROL_PORT.to_be();
                libc::bind(
                    raw,
                    (&address as *const libc::sockaddr_in6).cast(),
                    size_of::<libc::sockaddr_in6>() as libc::socklen_t,
                )
            }
        } else {
            // SAFETY: as above, for sockaddr_in.
            unsafe {
                let mut address: libc::sockaddr_in = std::mem::zeroed();
                address.sin_family = libc::AF_INET as libc::sa_family_t;
                address.sin_port = CONTROL_PORT.to_be();
                libc::bind(
                    raw,
                    (&address as *const libc::sockaddr_in).cast(),
                    size_of::<libc::sockaddr_in>() as libc::socklen_t,
                )
            }
        };
        if result != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(socket)
    }

    async fn receive(&self, buffer: &mut [u8]) -> io::Result<Datagram> {
        self.socket
            .async_io(Interest::READABLE, || {
                receive_message(self.socket.as_raw_fd(), buffer)
            })
            .await
    }
}

/// `recvmsg` with the TTL and destination control messages.
fn receive_message(descriptor: RawFd, buffer: &mut [u8]) -> io::Result<Datagram> {
    let mut source = MaybeUninit::<libc::sockaddr_storage>::zeroed();
    // Room for a TTL or hop limit and a packet info, with alignment.
    let mut control = [0u64; 16];
    let mut vector = libc::iovec {
        iov_base: buffer.as_mut_ptr().cast(),
        iov_len: buffer.len(),
    };
    // SAFETY: a zeroed msghdr is valid; every pointer set below points to
    // live memory of the length given, for the duration of the call.
    let mut message: libc::msghdr = unsafe { std::mem::zeroed() };
    message.msg_name = source.as_mut_ptr().cast();
    message.msg_namelen = size_of::<libc::sockaddr_storage>() as libc::socklen_t;
    message.msg_iov = &mut vector;
    message.msg_iovlen = 1;
    message.msg_control = control.as_mut_ptr().cast();
    message.msg_controllen = std::mem::size_of_val(&control) as _;
    // SAFETY: see above.
    let length = unsafe { libc::recvmsg(descriptor, &mut message, libc::MSG_DONTWAIT) };
    if length < 0 {
        return Err(io::Error::last_os_error());
    }
    let length = length as usize;
    if message.msg_flags & libc::MSG_TRUNC != 0 {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("a datagram over {} bytes", buffer.len()),
        ));
    }
    // SAFETY: recvmsg filled in the address, of the family it says.
    let source = unsafe { socket_address(source.as_ptr()) }
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "no source address"))?;
    let mut ttl = None;
    let mut destination = None;
    // SAFETY: the CMSG macros walk the control buffer recvmsg filled in,
    // within the length it set; each payload is read unaligned at the size
    // its type has.
    unsafe {
        let mut header = libc::CMSG_FIRSTHDR(&message);
        while !header.is_null() {
            let level = (*header).cmsg_level;
            let kind = (*header).cmsg_type;
            let data = libc::CMSG_DATA(header);
            match (level, kind) {
                (libc::IPPROTO_IP, libc::IP_TTL) | (libc::IPPROTO_IPV6, libc::IPV6_HOPLIMIT) => {
                    let value = std::ptr::read_unaligned(data.cast::<libc::c_int>());
                    ttl = u8::try_from(value).ok();
                }
                (libc::IPPROTO_IP, libc::IP_PKTINFO) => {
                    let info = std::ptr::read_unaligned(data.cast::<libc::in_pktinfo>());
                    destination = Some(IpAddr::V4(Ipv4Addr::from(u32::from_be(
                        info.ipi_addr.s_addr,
                    ))));
                }
                (libc::IPPROTO_IPV6, libc::IPV6_PKTINFO) => {
                    let info = std::ptr::read_unaligned(data.cast::<libc::in6_pktinfo>());
                    destination.get_or_insert(IpAddr::V6(Ipv6Addr::from(info.ipi6_addr.s6_addr)));
                }
                _ => {}
            }
            header = libc::CMSG_NXTHDR(&message, header);
        }
    }
    Ok(Datagram {
        length: length.min(buffer.len()),
        source,
        destination,
        ttl,
    })
}

/// # Safety
/// `storage` points to a socket address of the family it names.
unsafe fn socket_address(storage: *const libc::sockaddr_storage) -> Option<SocketAddr> {
    // SAFETY: the caller's promise; each structure is read as its family.
    unsafe {
        match libc::c_int::from((*storage).ss_family) {
            libc::AF_INET => {
                let address = &*storage.cast::<libc::sockaddr_in>();
                Some(SocketAddr::new(
                    IpAddr::V4(Ipv4Addr::from(u32::from_be(address.sin_addr.s_addr))),
                    u16::from_be(address.sin_port),
                ))
            }
            libc::AF_INET6 => {
                let address = &*storage.cast::<libc::sockaddr_in6>();
                Some(SocketAddr::V6(SocketAddrV6::new(
                    Ipv6Addr::from(address.sin6_addr.s6_addr),
                    u16::from_be(address.sin6_port),
                    address.sin6_flowinfo,
                    address.sin6_scope_id,
                )))
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bfd::session::Config;

    fn spec(ttl: u8, max_hops: u8) -> BfdSpec {
        BfdSpec {
            name: "peer".to_owned(),
            neighbor: "10.0.0.2".parse().unwrap(),
            source: None,
            session: Config::keepalived_default(),
            ttl,
            max_hops,
        }
    }

    /// The process's sessions are shared: two clients asking for the same
    /// `bfd_instance` both get its reports (its initial Down at once),
    /// and a client asking for another does not get them.
    #[tokio::test]
    async fn clients_asking_for_one_session_share_it() {
        // A documentation address nobody answers on: the session stays
        // Down, whether or not port 3784 could be listened on here.
        let shared = BfdSpec {
            name: "shared_by_two_clients".to_owned(),
            neighbor: "192.0.2.77".parse().unwrap(),
            ..spec(255, 0)
        };
        let other = BfdSpec {
            name: "asked_by_one_client".to_owned(),
            neighbor: "192.0.2.78".parse().unwrap(),
            ..spec(255, 0)
        };
        let (checkers, mut checker_reports) = spawn();
        let (vrrp, mut vrrp_reports) = spawn();
        let (third, mut third_reports) = spawn();
        checkers.send_replace(vec![shared.clone()]);
        vrrp.send_replace(vec![shared.clone()]);
        third.send_replace(vec![other.clone()]);
        let patience = std::time::Duration::from_secs(10);
        for reports in [&mut checker_reports, &mut vrrp_reports] {
            let report = tokio::time::timeout(patience, reports.recv())
                .await
                .expect("a report within 10 s")
                .expect("the sessions run");
            assert_eq!(report.spec, shared);
            assert_eq!(report.state, State::Down);
        }
        let report = tokio::time::timeout(patience, third_reports.recv())
            .await
            .expect("a report within 10 s")
            .expect("the sessions run");
        assert_eq!(report.spec, other);
        // Whatever came since is of the sessions each asked for.
        while let Ok(report) = checker_reports.try_recv() {
            assert_eq!(report.spec, shared);
        }
        while let Ok(report) = third_reports.try_recv() {
            assert_eq!(report.spec, other);
        }
    }

    #[test]
    fn gtsm_takes_only_packets_that_crossed_at_most_max_hops() {
        let single_hop = spec(255, 0);
        assert!(accepts_ttl(&single_hop, Some(255)));
        assert!(!accepts_ttl(&single_hop, Some(254)));
        assert!(!accepts_ttl(&single_hop, Some(1)));
        assert!(accepts_ttl(&single_hop, None));
        let two_hops = spec(255, 2);
        assert!(accepts_ttl(&two_hops, Some(253)));
        assert!(!accepts_ttl(&two_hops, Some(252)));
        let unchecked = spec(255, 255);
        assert!(accepts_ttl(&unchecked, Some(0)));
        // A lower TTL configured lowers the bar too (keepalived's
        // arithmetic: received + max_hops >= ttl).
        assert!(accepts_ttl(&spec(64, 0), Some(64)));
        assert!(!accepts_ttl(&spec(64, 0), Some(63)));
    }

    #[test]
    fn reports_say_why() {
        let peer = spec(255, 0);
        assert_eq!(
            Report::new(&peer, State::Up, Diagnostic::None).failure,
            None
        );
        assert_eq!(
            Report::new(&peer, State::Down, Diagnostic::None)
                .failure
                .unwrap()
                .to_string(),
            "session to 10.0.0.2 is Down, not Up"
        );
        assert_eq!(
            Report::new(&peer, State::Down, Diagnostic::NeighborSignaledSessionDown)
                .failure
                .unwrap()
                .to_string(),
            "session to 10.0.0.2 down: neighbor signaled session down"
        );
        assert_eq!(canonical("::ffff:10.0.0.2".parse().unwrap()), peer.neighbor);
    }
}
