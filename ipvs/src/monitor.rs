//! What other processes change in IPVS, read from a copy of the netlink
//! traffic.
//!
//! The IPVS family has no multicast group: the kernel tells no one when its
//! table changes. But a network namespace with an `nlmon` device up copies
//! every netlink datagram sent in it, to the kernel and back, onto that
//! device, where an `AF_PACKET` socket reads them (Linux's
//! `netlink_deliver_tap`; the capture behind `tests/captured` was made so).
//! [`Watch`] reads those copies, with no I/O of its own, and says which
//! services another process changed, once the kernel has handled the
//! change. [`tap_filter`] is the socket filter that keeps only what it
//! needs in the kernel, [`open_tap`] the socket.
//!
//! Its rules:
//!
//! - **Others' changes.** A request (`NLM_F_REQUEST`, which the kernel never
//!   sets on what it sends) of the IPVS family that creates, edits or
//!   deletes a service or a destination names its service; a flush, a
//!   change of the timeouts, or a change whose service nest names no
//!   service concerns the whole table. Reads, counters zeroed and the sync
//!   daemons change nothing the table holds. This process's own requests
//!   carry its process id as their port (as the library's do) and are not
//!   others'.
//! - **Once handled.** The copy of a request is made before the kernel
//!   handles it, so the service read at once could still be as it was. A
//!   request is due once its answer is copied (the acknowledgement or
//!   refusal, matched by port and sequence number: the kernel sends it to
//!   the requester's port, which libnl tools such as ipvsadm also write in
//!   their requests), or once a later request of the same port is answered
//!   (the kernel handles one socket's datagrams in order). A request that
//!   asked for no acknowledgement is due [`SETTLE`] after it was seen; one
//!   that asked is given [`ANSWER_PATIENCE`] (the kernel may take long: a
//!   scheduler's module loaded under IPVS's mutex), then made due anyway.
//!   A refused request changed nothing and is dropped.
//! - **Bounded.** A request that does not parse, or more than [`MOST_PENDING`]
//!   waiting, makes the whole table due: a reading of everything is what
//!   an unreadable or overwhelming change calls for.

use std::collections::HashSet;
use std::io;
use std::mem::size_of;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::{Duration, Instant};

use netlink_packet_core::{
    NLM_F_ACK, NLM_F_REQUEST, NLMSG_ERROR, NlasIterator, ParseableParametrized,
};

use crate::ServiceKey;
use crate::client::set_option;
use crate::message::{IPVS_CMD_ATTR_SERVICE, IpvsAttribute, IpvsCommand};

/// The port this process's requests carry (`nlmsg_pid`): its process id,
/// as a first netlink socket's port is and as libnl's requests carry
/// theirs. The library writes it in every request it sends.
pub fn own_port() -> u32 {
    std::process::id()
}

/// How long after a request is seen it is due without an answer: the
/// kernel handles a datagram within the sender's `sendmsg`, microseconds
/// after the copy.
pub const SETTLE: Duration = Duration::from_millis(20);
/// How long a request that asked for an acknowledgement waits for it
/// before it is due anyway (its answer lost to a full socket, or sent to
/// another port than its requests carry).
pub const ANSWER_PATIENCE: Duration = Duration::from_secs(1);
/// The most requests waiting for their answer.
pub const MOST_PENDING: usize = 4096;

/// The netlink header's length; the generic netlink header's (command,
/// version, reserved).
const NETLINK_HEADER: usize = 16;
const GENERIC_HEADER: usize = 4;

/// What is due to be read again.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Changed {
    /// Services another process changed.
    pub services: HashSet<ServiceKey>,
    /// Something not tied to one service: a flush, the timeouts, a change
    /// that could not be read.
    pub table: bool,
}

impl Changed {
    pub fn is_empty(&self) -> bool {
        self.services.is_empty() && !self.table
    }

    fn add(&mut self, change: Change) {
        match change {
            Change::Service(key) => {
                self.services.insert(key);
            }
            Change::Table => self.table = true,
        }
    }
}

/// What one request changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Change {
    Service(ServiceKey),
    Table,
}

#[derive(Debug)]
struct Pending {
    port: u32,
    sequence: u32,
    change: Change,
    /// When it is due without an answer.
    deadline: Instant,
}

/// Others' requests seen, until they are due.
#[derive(Debug)]
pub struct Watch {
    family: u16,
    own_port: u32,
    pending: Vec<Pending>,
    due: Changed,
}

impl Watch {
    /// A watch on the IPVS family `family` (its id in this namespace), where
    /// requests with port `own_port` are this process's.
    pub fn new(family: u16, own_port: u32) -> Watch {
        Watch {
            family,
            own_port,
            pending: Vec::new(),
            due: Changed::default(),
        }
    }

    /// Takes in one datagram copied from the tap.
    pub fn seen(&mut self, datagram: &[u8], now: Instant) {
        let mut rest = datagram;
        while rest.len() >= NETLINK_HEADER {
            let length = u32::from_ne_bytes(rest[0..4].try_into().expect("4 bytes")) as usize;
            if length < NETLINK_HEADER || length > rest.len() {
                // Its messages cannot be told apart from here on.
                if is_request(rest) && message_type(rest) == self.family {
                    self.due.table = true;
                }
                return;
            }
            self.message(&rest[..length], now);
            rest = rest.get(length.next_multiple_of(4)..).unwrap_or_default();
        }
    }

    fn message(&mut self, message: &[u8], now: Instant) {
        let sequence = u32::from_ne_bytes(message[8..12].try_into().expect("4 bytes"));
        let port = u32::from_ne_bytes(message[12..16].try_into().expect("4 bytes"));
        if is_request(message) {
            if message_type(message) != self.family || port == self.own_port {
                return;
            }
            let Some(change) = change_of(&message[NETLINK_HEADER..]) else {
                return;
            };
            if self.pending.len() >= MOST_PENDING {
                self.pending.clear();
                self.due.table = true;
                return;
            }
            let acknowledged = flags(message) & NLM_F_ACK != 0;
            self.pending.push(Pending {
                port,
                sequence,
                change,
                deadline: now
                    + if acknowledged {
                        ANSWER_PATIENCE
                    } else {
                        SETTLE
                    },
            });
        } else if message_type(message) == NLMSG_ERROR && message.len() >= NETLINK_HEADER + 4 {
            let Some(position) = self
                .pending
                .iter()
                .position(|pending| pending.port == port && pending.sequence == sequence)
            else {
                return;
            };
            let pending = self.pending.swap_remove(position);
            let error = i32::from_ne_bytes(
                message[NETLINK_HEADER..NETLINK_HEADER + 4]
                    .try_into()
                    .expect("4 bytes"),
            );
            if error == 0 {
                self.due.add(pending.change);
            }
            // The same socket's earlier requests were handled before it.
            let due = &mut self.due;
            self.pending.retain(|earlier| {
                let before =
                    earlier.port == port && sequence.wrapping_sub(earlier.sequence) < u32::MAX / 2;
                if before {
                    due.add(earlier.change);
                }
                !before
            });
        }
    }

    /// What is due at `now`: answered requests, and those past their
    /// deadline.
    pub fn poll(&mut self, now: Instant) -> Changed {
        let due = &mut self.due;
        self.pending.retain(|pending| {
            let settled = now >= pending.deadline;
            if settled {
                due.add(pending.change);
            }
            !settled
        });
        std::mem::take(&mut self.due)
    }

    /// When the next request falls due without an answer, if one waits.
    pub fn next_deadline(&self) -> Option<Instant> {
        self.pending.iter().map(|pending| pending.deadline).min()
    }
}

fn is_request(message: &[u8]) -> bool {
    flags(message) & NLM_F_REQUEST != 0
}

fn flags(message: &[u8]) -> u16 {
    match message.get(6..8) {
        Some(bytes) => u16::from_ne_bytes([bytes[0], bytes[1]]),
        None => 0,
    }
}

fn message_type(message: &[u8]) -> u16 {
    u16::from_ne_bytes([message[4], message[5]])
}

/// What a request of the IPVS family (its generic netlink header and
/// attributes) changes, if anything.
fn change_of(generic: &[u8]) -> Option<Change> {
    let Some(&command) = generic.first() else {
        return Some(Change::Table);
    };
    match IpvsCommand::from(command) {
        IpvsCommand::NewService
        | IpvsCommand::SetService
        | IpvsCommand::DeleteService
        | IpvsCommand::NewDestination
        | IpvsCommand::SetDestination
        | IpvsCommand::DeleteDestination => Some(
            service_named(generic.get(GENERIC_HEADER..).unwrap_or_default())
                .map_or(Change::Table, Change::Service),
        ),
        IpvsCommand::Flush | IpvsCommand::SetConfig => Some(Change::Table),
        // A command this library does not know may change anything.
        IpvsCommand::Other(_) | IpvsCommand::Unspecified => Some(Change::Table),
        IpvsCommand::GetService
        | IpvsCommand::GetDestination
        | IpvsCommand::GetDaemon
        | IpvsCommand::GetConfig
        | IpvsCommand::GetInfo
        | IpvsCommand::SetInfo
        | IpvsCommand::NewDaemon
        | IpvsCommand::DeleteDaemon
        | IpvsCommand::Zero => None,
    }
}

/// The service a request's service nest names.
fn service_named(attributes: &[u8]) -> Option<ServiceKey> {
    for attribute in NlasIterator::new(attributes) {
        let attribute = attribute.ok()?;
        if attribute.kind() != IPVS_CMD_ATTR_SERVICE {
            continue;
        }
        let IpvsAttribute::Service(nest) =
            IpvsAttribute::parse_with_param(&attribute, IpvsCommand::NewService).ok()?
        else {
            return None;
        };
        return ServiceKey::from_attributes(&nest).ok();
    }
    None
}

/// A classic BPF program for an `AF_PACKET` socket on an nlmon device that
/// keeps what [`Watch`] reads: generic netlink datagrams that are requests
/// of the IPVS family from another port than `own_port`, and the kernel's
/// acknowledgements and refusals. Everything else (rtnetlink, this
/// process's own batches, dumps' replies) is dropped in the kernel, before
/// it is queued. It looks at a datagram's first message: one `sendmsg` is
/// one sender's.
///
/// BPF loads read in network order and netlink headers are in host order,
/// so the constants are compared as BPF sees their host-order bytes.
pub fn tap_filter(family: u16, own_port: u32) -> Vec<libc::sock_filter> {
    const NETLINK_GENERIC: u32 = 16;
    let as_loaded16 = |value: u16| u32::from(u16::from_be_bytes(value.to_ne_bytes()));
    let as_loaded32 = |value: u32| u32::from_be_bytes(value.to_ne_bytes());
    let statement = |code: u32, k: u32| libc::sock_filter {
        code: code as u16,
        jt: 0,
        jf: 0,
        k,
    };
    let jump = |code: u32, k: u32, jt: u8, jf: u8| libc::sock_filter {
        code: code as u16,
        jt,
        jf,
        k,
    };
    let load_half = libc::BPF_LD | libc::BPF_H | libc::BPF_ABS;
    let load_word = libc::BPF_LD | libc::BPF_W | libc::BPF_ABS;
    let equal = libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K;
    let set = libc::BPF_JMP | libc::BPF_JSET | libc::BPF_K;
    let keep = statement(libc::BPF_RET | libc::BPF_K, 0x0004_0000);
    let drop = statement(libc::BPF_RET | libc::BPF_K, 0);
    vec![
        // 0: the netlink protocol, which nlmon gives as the packet's.
        statement(load_word, (libc::SKF_AD_OFF + libc::SKF_AD_PROTOCOL) as u32),
        jump(equal, NETLINK_GENERIC, 0, 9),
        // 2: a request?
        statement(load_half, 6),
        jump(set, as_loaded16(NLM_F_REQUEST), 0, 4),
        // 4: of IPVS, from another port.
        statement(load_half, 4),
        jump(equal, as_loaded16(family), 0, 5),
        statement(load_word, 12),
        jump(equal, as_loaded32(own_port), 3, 2),
        // 8: an answer: an acknowledgement or a refusal.
        statement(load_half, 4),
        jump(equal, as_loaded16(NLMSG_ERROR), 0, 1),
        // 10, 11
        keep,
        drop,
    ]
}

/// Every protocol: nlmon only transmits its copies, and a packet socket
/// bound to one protocol sees received packets only.
const ETH_P_ALL: u16 = 0x0003;

/// An `AF_PACKET` socket on the nlmon device `index`, with room for
/// `receive_buffer` bytes (beyond the system's limit where allowed), that
/// never queues a datagram `filter` (a [`tap_filter`], or none for
/// everything) would drop: it is made with protocol 0, which receives
/// nothing, filtered, then bound to the device for every protocol.
pub fn open_tap(
    index: u32,
    filter: Option<&[libc::sock_filter]>,
    receive_buffer: usize,
) -> io::Result<OwnedFd> {
    // SAFETY: plain socket creation.
    let socket = unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_RAW | libc::SOCK_CLOEXEC, 0) };
    if socket < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a descriptor just opened, owned by nothing else; closed on
    // every path out of here, or by whoever it is returned to.
    let socket = unsafe { OwnedFd::from_raw_fd(socket) };
    if let Some(filter) = filter {
        let program = libc::sock_fprog {
            len: filter.len() as u16,
            filter: filter.as_ptr().cast_mut(),
        };
        set_option(&socket, libc::SO_ATTACH_FILTER, &program)?;
    }
    let size = libc::c_int::try_from(receive_buffer).unwrap_or(libc::c_int::MAX);
    if set_option(&socket, libc::SO_RCVBUFFORCE, &size).is_err() {
        set_option(&socket, libc::SO_RCVBUF, &size)?;
    }
    // SAFETY: sockaddr_ll is plain data.
    let mut address: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
    address.sll_family = libc::AF_PACKET as u16;
    address.sll_protocol = ETH_P_ALL.to_be();
    address.sll_ifindex = index as i32;
    // SAFETY: binding our socket to a sockaddr_ll of its size.
    let result = unsafe {
        libc::bind(
            socket.as_raw_fd(),
            (&address as *const libc::sockaddr_ll).cast(),
            size_of::<libc::sockaddr_ll>() as libc::socklen_t,
        )
    };
    if result != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(socket)
}

#[cfg(test)]
mod tests;
