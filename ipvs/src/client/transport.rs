//! The netlink transport: one generic netlink socket, the IPVS family
//! resolved once, and requests pipelined many to a `sendmsg`.
//!
//! Everything here moves [`IpvsMessage`]s; what they mean is the business of
//! [`crate::Client`].

use std::io;
use std::os::fd::AsRawFd;
use std::time::Duration;

use netlink_packet_core::{
    DecodeError, Emitable, ErrorMessage, NLM_F_ACK, NLM_F_REQUEST, NetlinkBuffer, NetlinkHeader,
    NetlinkMessage, NetlinkPayload, NlasIterator, ParseableParametrized, parse_string, parse_u16,
};
use netlink_packet_generic::ctrl::nlas::GenlCtrlAttrs;
use netlink_packet_generic::ctrl::{GenlCtrl, GenlCtrlCmd};
use netlink_packet_generic::{GenlHeader, GenlMessage};
use netlink_sys::{Socket, SocketAddr, protocols::NETLINK_GENERIC};

use super::batch::{self, EncodedBatch};
use super::error::{Errno, Error};
use super::traffic::Counters;
use crate::message::{IPVS_GENL_NAME, IpvsCommand, IpvsMessage};
use crate::request::{Request, RequestKind};

/// The receive buffer asked for. Refusals queue on the socket while the
/// kernel works through a datagram, one per refused request in the worst
/// case, and the kernel drops (ENOBUFS) whatever does not fit, so the
/// number of requests per datagram is sized to what the kernel grants.
const RECEIVE_BUFFER_BYTES: usize = 8 << 20;
/// What one queued refusal costs against the receive buffer: its skb's
/// truesize, about 768 bytes on x86_64, rounded up.
const REFUSAL_COST: usize = 1024;
/// The most requests sent in one `sendmsg`.
const MOST_REQUESTS_PER_SEND: usize = 2048;
/// The send buffer asked for, and the most bytes sent in one `sendmsg`
/// whatever the buffer: the kernel refuses (EMSGSIZE) a datagram larger
/// than the socket's send buffer less 32 bytes.
const SEND_BUFFER_BYTES: usize = 1 << 20;
const MOST_BYTES_PER_SEND: usize = 192 * 1024;
/// A received datagram is at most one skb: dumps fill up to 32 KiB.
const RECEIVE_CHUNK: usize = 64 * 1024;
/// The netlink header, then the generic netlink header (cmd, version,
/// reserved), then the attributes.
const NETLINK_HEADER: usize = 16;
const GENERIC_HEADERS: usize = NETLINK_HEADER + 4;
/// Below this, netlink's own control messages (NOOP, ERROR, DONE, OVERRUN).
const NLMSG_MIN_TYPE: u16 = 0x10;
/// How long to wait for the kernel's answer before giving up on it. The
/// kernel answers in microseconds (a datagram of 1,400 requests in 16 ms
/// under emulation); silence this long means an answer was lost.
pub(crate) const ANSWER_TIMEOUT: Duration = Duration::from_secs(30);

/// `CTRL_ATTR_FAMILY_ID`, in nlctrl's reply.
const CTRL_ATTR_FAMILY_ID: u16 = 1;
/// `NLMSGERR_ATTR_MSG`: the kernel's explanation in an extended ack.
const NLMSGERR_ATTR_MSG: u16 = 1;
/// `NLM_F_CAPPED` and `NLM_F_ACK_TLVS`, flags of an NLMSG_ERROR message:
/// the request is echoed as its header only, and attributes follow it.
const NLM_F_CAPPED: u16 = 0x100;
const NLM_F_ACK_TLVS: u16 = 0x200;

/// The kernel's refusal of a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Refusal {
    pub errno: Errno,
    /// Its own explanation, when it gave one (an extended ack message).
    pub message: Option<String>,
}

impl Refusal {
    /// The refusal an NLMSG_ERROR carries, or `None` for an acknowledgement.
    fn from_error(header: &NetlinkHeader, error: &ErrorMessage) -> Option<Refusal> {
        error.code.map(|code| Refusal {
            errno: Errno(-code.get()),
            message: extended_ack_message(header.flags, &error.header),
        })
    }
}

/// What a request produced: its replies, or the kernel's refusal.
pub(crate) type Outcome = Result<Vec<IpvsMessage>, Refusal>;

/// What a pipelined exchange produced: the outcome of each request whose
/// datagram was answered in full, in order, and the error that stopped the
/// exchange, if one did. The requests after those have unknown outcomes:
/// the kernel may have applied some of them.
pub(crate) struct Exchange {
    pub outcomes: Vec<Outcome>,
    pub error: Option<Error>,
}

/// The socket, with the family id of IPVS in this network namespace.
pub(crate) struct Transport {
    socket: Socket,
    family: u16,
    sequence: u32,
    window: usize,
    most_bytes_per_send: usize,
    buffer: Vec<u8>,
    /// The client's counts, which every socket it opens adds to.
    traffic: std::sync::Arc<Counters>,
}

impl Transport {
    pub(crate) fn connect(traffic: std::sync::Arc<Counters>) -> Result<Transport, Error> {
        let mut socket = Socket::new(NETLINK_GENERIC)?;
        socket.bind_auto()?;
        socket.connect(&SocketAddr::new(0, 0))?;
        // Acknowledgements without a copy of the request, so they stay
        // small, and with the kernel's explanation of a refusal. Kernels
        // before 4.12 know neither option; they work without.
        for option in [Socket::set_cap_ack, Socket::set_ext_ack] {
            match option(&socket, true) {
                Err(error) if error.raw_os_error() == Some(libc::ENOPROTOOPT) => {}
                result => result?,
            }
        }
        let received = grow_buffer(
            &socket,
            libc::SO_RCVBUFFORCE,
            libc::SO_RCVBUF,
            RECEIVE_BUFFER_BYTES,
        )?;
        let sent = grow_buffer(
            &socket,
            libc::SO_SNDBUFFORCE,
            libc::SO_SNDBUF,
            SEND_BUFFER_BYTES,
        )?;
        set_receive_timeout(&socket, ANSWER_TIMEOUT)?;
        let mut transport = Transport {
            socket,
            family: 0,
            sequence: 0,
            window: (received / REFUSAL_COST).clamp(16, MOST_REQUESTS_PER_SEND),
            most_bytes_per_send: MOST_BYTES_PER_SEND.min(sent.saturating_sub(64)),
            buffer: vec![0; RECEIVE_CHUNK],
            traffic,
        };
        transport.family = transport.resolve_family()?;
        Ok(transport)
    }

    /// The generic netlink family id of IPVS: the kernel assigns it when
    /// ip_vs loads, so it is asked for, never assumed.
    pub(crate) fn family(&self) -> u16 {
        self.family
    }

    fn resolve_family(&mut self) -> Result<u16, Error> {
        let mut request = NetlinkMessage::from(GenlMessage::from_payload(GenlCtrl {
            cmd: GenlCtrlCmd::GetFamily,
            nlas: vec![GenlCtrlAttrs::FamilyName(IPVS_GENL_NAME.to_owned())],
        }));
        request.header.flags = NLM_F_REQUEST | NLM_F_ACK;
        let sequence = self.next_sequence();
        request.header.sequence_number = sequence;
        request.finalize();
        let mut bytes = vec![0; request.buffer_len()];
        request.serialize(&mut bytes);
        self.send(&bytes, 1)?;

        let mut family = None;
        loop {
            let received = self.receive()?;
            for (offset, length) in split(&self.buffer[..received])? {
                let bytes = &self.buffer[offset..offset + length];
                let message = NetlinkMessage::<GenlMessage<FamilyReply>>::deserialize(bytes)?;
                if message.header.sequence_number != sequence {
                    continue;
                }
                match message.payload {
                    NetlinkPayload::InnerMessage(reply) => family = reply.payload.id,
                    NetlinkPayload::Error(error) => {
                        return match error.code {
                            None => family.ok_or_else(|| {
                                Error::Protocol("nlctrl's answer for IPVS has no family id".into())
                            }),
                            // nlctrl answers ENOENT for a family the kernel
                            // does not have and could not load.
                            Some(code) if -code.get() == libc::ENOENT => Err(Error::Unavailable),
                            Some(code) => Err(Error::Kernel {
                                operation: "resolve the IPVS generic netlink family".into(),
                                errno: Errno(-code.get()),
                                reason: Errno(-code.get()).description(),
                            }),
                        };
                    }
                    _ => {}
                }
            }
        }
    }

    fn next_sequence(&mut self) -> u32 {
        self.sequence = self.sequence.wrapping_add(1);
        self.sequence
    }

    /// Sends the messages of `batch` (changes and gets, not dumps), pipelined, and
    /// returns each one's outcome in order. A refused request does not stop
    /// the others: the kernel goes on through the datagram, as it would for
    /// separate sends.
    ///
    /// Only the last change of each datagram asks for an acknowledgement.
    /// The kernel handles a datagram's messages in order and answers a
    /// refusal whether it was asked to acknowledge or not, so once the last
    /// one is answered, every earlier change without a refusal succeeded.
    /// Reading one acknowledgement per change would cost a system call
    /// each, which is most of the time under emulation.
    pub(crate) fn execute(&mut self, batch: &EncodedBatch) -> Exchange {
        debug_assert!((0..batch.len()).all(|index| batch.kind(index) != RequestKind::Dump));
        let lengths: Vec<usize> = (0..batch.len())
            .map(|index| batch.message(index).len() - GENERIC_HEADERS)
            .collect();
        let mut outcomes = Vec::with_capacity(batch.len());
        let mut datagram = Vec::new();
        while outcomes.len() < batch.len() {
            let first = outcomes.len();
            let end = datagram_end(&lengths, first, self.window, self.most_bytes_per_send);
            datagram.clear();
            let first_sequence = self.sequence.wrapping_add(1);
            for index in first..end {
                let flags = flags_in_datagram(batch.kind(index), index + 1 == end);
                let start = datagram.len();
                datagram.extend_from_slice(batch.message(index));
                let sequence = self.next_sequence();
                batch::address(&mut datagram[start..], self.family, flags, sequence);
            }
            match self.exchange_datagram(&datagram, first_sequence, end - first) {
                Ok(chunk) => outcomes.extend(chunk),
                Err(error) => {
                    return Exchange {
                        outcomes,
                        error: Some(error),
                    };
                }
            }
        }
        Exchange {
            outcomes,
            error: None,
        }
    }

    /// Sends one datagram of `count` requests numbered from `first_sequence`
    /// and collects their outcomes, until the last one is answered.
    fn exchange_datagram(
        &mut self,
        datagram: &[u8],
        first_sequence: u32,
        count: usize,
    ) -> Result<Vec<Outcome>, Error> {
        let last_sequence = first_sequence.wrapping_add(count as u32 - 1);
        self.send(datagram, count)?;
        let mut outcomes: Vec<Outcome> = vec![Ok(Vec::new()); count];
        let mut done = false;
        while !done {
            self.receive_messages(|header, payload| {
                let position = header.sequence_number.wrapping_sub(first_sequence) as usize;
                if position >= count {
                    return;
                }
                match payload {
                    NetlinkPayload::InnerMessage(message) => {
                        if let Ok(replies) = &mut outcomes[position] {
                            replies.push(message.payload);
                        }
                    }
                    NetlinkPayload::Error(error) => {
                        if let Some(refusal) = Refusal::from_error(header, &error) {
                            outcomes[position] = Err(refusal);
                        }
                        done |= header.sequence_number == last_sequence;
                    }
                    _ => {}
                }
            })?;
        }
        Ok(outcomes)
    }

    /// Runs one dump request and returns each entry as `decode` reads it
    /// from its command and attribute bytes, or the kernel's refusal.
    ///
    /// Entries are read in place from the receive buffer, never as
    /// `NetlinkMessage`s: a listing of a large table is mostly this loop.
    /// An entry `decode` rejects does not stop the dump (the socket would be
    /// left mid-dump); the first such error is returned once it is done.
    ///
    /// Dumps are not pipelined: the kernel runs one dump at a time per
    /// socket and refuses others with EBUSY until it is done, and a
    /// non-empty IPVS dump is never done in the pass that answers the
    /// request: the callback returns the length it wrote, so the kernel
    /// writes NLMSG_DONE only in a second pass, which our read of the first
    /// datagram triggers. Every dump sent behind another would be refused.
    pub(crate) fn dump<T>(
        &mut self,
        request: &Request,
        mut decode: impl FnMut(IpvsCommand, &[u8]) -> Result<T, Error>,
    ) -> Result<Result<Vec<T>, Refusal>, Error> {
        debug_assert_eq!(request.kind, RequestKind::Dump);
        let mut datagram = EncodedBatch::of_requests(std::slice::from_ref(request))
            .message(0)
            .to_vec();
        let sequence = self.next_sequence();
        batch::address(&mut datagram, self.family, request.kind.flags(), sequence);
        self.send(&datagram, 1)?;
        let mut entries = Vec::new();
        let mut first_error = None;
        let mut outcome: Option<Result<(), Refusal>> = None;
        while outcome.is_none() {
            let received = self.receive()?;
            for (offset, length) in split(&self.buffer[..received])? {
                let bytes = &self.buffer[offset..offset + length];
                let header = NetlinkBuffer::new(bytes);
                if header.sequence_number() != sequence {
                    continue;
                }
                let message_type = header.message_type();
                if message_type == self.family {
                    let Some(attributes) = bytes.get(GENERIC_HEADERS..) else {
                        first_error.get_or_insert(Error::Protocol(format!(
                            "a {length}-byte IPVS message, shorter than its headers"
                        )));
                        continue;
                    };
                    match decode(IpvsCommand::from(bytes[NETLINK_HEADER]), attributes) {
                        Ok(entry) => entries.push(entry),
                        Err(error) => {
                            first_error.get_or_insert(error);
                        }
                    }
                    continue;
                }
                if message_type >= NLMSG_MIN_TYPE {
                    return Err(Error::Protocol(format!(
                        "a reply of netlink type {message_type} on the IPVS socket (family {})",
                        self.family
                    )));
                }
                // Control messages: rare, read whole.
                let message = NetlinkMessage::<GenlMessage<IpvsMessage>>::deserialize(bytes)?;
                match message.payload {
                    // A dump that fails midway says so in its DONE.
                    NetlinkPayload::Done(done) if done.code < 0 => {
                        outcome = Some(Err(Refusal {
                            errno: Errno(-done.code),
                            message: None,
                        }))
                    }
                    NetlinkPayload::Done(_) => outcome = Some(Ok(())),
                    NetlinkPayload::Error(error) => {
                        outcome = Some(match Refusal::from_error(&message.header, &error) {
                            Some(refusal) => Err(refusal),
                            None => Ok(()),
                        })
                    }
                    _ => {}
                }
            }
        }
        if let Some(error) = first_error {
            return Err(error);
        }
        Ok(outcome
            .expect("the loop ends with an outcome")
            .map(|()| entries))
    }

    /// Receives one datagram and hands each message in it to `handle`.
    fn receive_messages(
        &mut self,
        mut handle: impl FnMut(&NetlinkHeader, NetlinkPayload<GenlMessage<IpvsMessage>>),
    ) -> Result<(), Error> {
        let received = self.receive()?;
        for (offset, length) in split(&self.buffer[..received])? {
            let bytes = &self.buffer[offset..offset + length];
            let message = NetlinkMessage::<GenlMessage<IpvsMessage>>::deserialize(bytes)?;
            if matches!(message.payload, NetlinkPayload::InnerMessage(_))
                && message.header.message_type != self.family
            {
                return Err(Error::Protocol(format!(
                    "a reply of netlink type {} on the IPVS socket (family {})",
                    message.header.message_type, self.family
                )));
            }
            handle(&message.header, message.payload);
        }
        Ok(())
    }

    /// Sends a datagram of `messages` requests.
    fn send(&mut self, datagram: &[u8], messages: usize) -> Result<(), Error> {
        self.socket.send(datagram, 0)?;
        self.traffic.sent(messages);
        Ok(())
    }

    fn receive(&mut self) -> Result<usize, Error> {
        loop {
            match self.socket.recv(&mut &mut self.buffer[..], 0) {
                Ok(count) => {
                    self.traffic.received(count_messages(&self.buffer[..count]));
                    return Ok(count);
                }
                Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
                // SO_RCVTIMEO expired.
                Err(error) if error.kind() == io::ErrorKind::WouldBlock => {
                    return Err(Error::Timeout(ANSWER_TIMEOUT));
                }
                Err(error) if error.raw_os_error() == Some(libc::ENOBUFS) => {
                    return Err(Error::Protocol(
                        "the kernel dropped answers: the socket's receive buffer overflowed".into(),
                    ));
                }
                Err(error) => return Err(error.into()),
            }
        }
    }
}

/// Where the datagram whose first request is `first` ends (exclusive): as
/// many requests as `window` allows whose messages fit in `limit` bytes,
/// and at least one, whatever its size.
fn datagram_end(payload_lengths: &[usize], first: usize, window: usize, limit: usize) -> usize {
    let headers =
        NetlinkHeader::default().buffer_len() + GenlHeader { cmd: 0, version: 0 }.buffer_len();
    let mut end = first;
    let mut bytes = 0;
    while end < payload_lengths.len() && end - first < window {
        let length = headers + payload_lengths[end];
        if end > first && bytes + length > limit {
            break;
        }
        bytes += length;
        end += 1;
    }
    end
}

/// The netlink flags of a request inside a pipelined datagram: a change
/// asks for an acknowledgement only if it is the datagram's last; a get
/// always does, so its replies are known to be complete.
fn flags_in_datagram(kind: RequestKind, last: bool) -> u16 {
    if last || kind != RequestKind::Change {
        NLM_F_REQUEST | NLM_F_ACK
    } else {
        NLM_F_REQUEST
    }
}

/// The kernel's explanation in an extended acknowledgement: after the
/// echoed request (its header only when capped) come attributes, among
/// them `NLMSGERR_ATTR_MSG`.
fn extended_ack_message(flags: u16, echoed_and_attributes: &[u8]) -> Option<String> {
    if flags & NLM_F_ACK_TLVS == 0 {
        return None;
    }
    let echoed = if flags & NLM_F_CAPPED != 0 {
        NetlinkHeader::default().buffer_len()
    } else {
        let length = echoed_and_attributes.get(..4)?;
        (u32::from_ne_bytes(length.try_into().ok()?) as usize + 3) & !3
    };
    NlasIterator::new(echoed_and_attributes.get(echoed..)?)
        .filter_map(Result::ok)
        .find(|attribute| attribute.kind() == NLMSGERR_ATTR_MSG)
        .and_then(|attribute| parse_string(attribute.value()).ok())
        .filter(|message| !message.is_empty())
}

/// nlctrl's answer to CTRL_CMD_GETFAMILY, reduced to the family id. Read
/// leniently: netlink-packet-generic's own parser refuses attributes it
/// does not know, which a newer kernel may send.
#[derive(Debug)]
struct FamilyReply {
    id: Option<u16>,
}

impl ParseableParametrized<[u8], GenlHeader> for FamilyReply {
    fn parse_with_param(buffer: &[u8], _header: GenlHeader) -> Result<Self, DecodeError> {
        let mut id = None;
        for attribute in NlasIterator::new(buffer) {
            let attribute = attribute?;
            if attribute.kind() == CTRL_ATTR_FAMILY_ID {
                id = Some(parse_u16(attribute.value())?);
            }
        }
        Ok(FamilyReply { id })
    }
}

/// How many netlink messages a datagram holds (a malformed tail, which
/// [`split`] reports, is not counted).
fn count_messages(datagram: &[u8]) -> usize {
    let mut count = 0;
    let mut offset = 0;
    while offset + 16 <= datagram.len() {
        let length =
            u32::from_ne_bytes(datagram[offset..offset + 4].try_into().expect("4 bytes")) as usize;
        if length < 16 || offset + length > datagram.len() {
            break;
        }
        count += 1;
        offset += (length + 3) & !3;
    }
    count
}

/// The (offset, length) of each netlink message in a datagram.
fn split(datagram: &[u8]) -> Result<Vec<(usize, usize)>, Error> {
    let mut messages = Vec::new();
    let mut offset = 0;
    while offset + 16 <= datagram.len() {
        let length =
            u32::from_ne_bytes(datagram[offset..offset + 4].try_into().expect("4 bytes")) as usize;
        if length < 16 || offset + length > datagram.len() {
            return Err(Error::Protocol(format!(
                "a netlink message of length {length} at offset {offset} of a {}-byte datagram",
                datagram.len()
            )));
        }
        messages.push((offset, length));
        offset += (length + 3) & !3;
    }
    Ok(messages)
}

/// Asks for a socket buffer of `size`, beyond the system limit when
/// allowed (the FORCE options need CAP_NET_ADMIN, which IPVS changes need
/// anyway), and returns what the kernel granted.
fn grow_buffer(
    socket: &Socket,
    forced: libc::c_int,
    plain: libc::c_int,
    size: usize,
) -> Result<usize, Error> {
    let requested = size as libc::c_int;
    if set_option(socket, forced, &requested).is_err() {
        set_option(socket, plain, &requested)?;
    }
    let mut granted: libc::c_int = 0;
    let mut length = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: getsockopt into an int of the given size.
    let result = unsafe {
        libc::getsockopt(
            socket.as_raw_fd(),
            libc::SOL_SOCKET,
            plain,
            (&mut granted as *mut libc::c_int).cast(),
            &mut length,
        )
    };
    if result != 0 {
        return Err(io::Error::last_os_error().into());
    }
    Ok(granted.max(0) as usize)
}

fn set_receive_timeout(socket: &Socket, timeout: Duration) -> Result<(), Error> {
    let value = libc::timeval {
        tv_sec: timeout.as_secs() as libc::time_t,
        tv_usec: timeout.subsec_micros() as libc::suseconds_t,
    };
    Ok(set_option(socket, libc::SO_RCVTIMEO, &value)?)
}

/// A `SOL_SOCKET` option set to `value`.
pub(crate) fn set_option<T>(
    socket: &impl AsRawFd,
    option: libc::c_int,
    value: &T,
) -> io::Result<()> {
    // SAFETY: setsockopt reads size_of::<T>() bytes from a valid reference.
    let result = unsafe {
        libc::setsockopt(
            socket.as_raw_fd(),
            libc::SOL_SOCKET,
            option,
            (value as *const T).cast(),
            std::mem::size_of::<T>() as libc::socklen_t,
        )
    };
    if result != 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEADERS: usize = 20;

    #[test]
    fn split_walks_aligned_messages_and_rejects_overruns() {
        let mut datagram = vec![0u8; 20 + 16];
        datagram[0..4].copy_from_slice(&18u32.to_ne_bytes());
        datagram[20..24].copy_from_slice(&16u32.to_ne_bytes());
        assert_eq!(split(&datagram).unwrap(), vec![(0, 18), (20, 16)]);
        datagram[20..24].copy_from_slice(&17u32.to_ne_bytes());
        assert!(split(&datagram).is_err());
    }

    #[test]
    fn a_datagram_stops_at_the_window() {
        let lengths = vec![100; 10];
        assert_eq!(datagram_end(&lengths, 0, 4, 1 << 20), 4);
        assert_eq!(datagram_end(&lengths, 4, 4, 1 << 20), 8);
        assert_eq!(datagram_end(&lengths, 8, 4, 1 << 20), 10);
    }

    #[test]
    fn a_datagram_stops_before_the_byte_limit_and_holds_at_least_one_request() {
        let lengths = vec![100; 10];
        let per_message = 100 + HEADERS;
        // Exactly three fit; a fourth would pass the limit by one byte.
        assert_eq!(datagram_end(&lengths, 0, 100, 3 * per_message), 3);
        assert_eq!(datagram_end(&lengths, 0, 100, 4 * per_message - 1), 3);
        assert_eq!(datagram_end(&lengths, 0, 100, 4 * per_message), 4);
        // A request larger than the limit still goes, alone.
        assert_eq!(datagram_end(&[5000, 100], 0, 100, 1000), 1);
    }

    #[test]
    fn only_the_last_change_and_every_get_ask_for_an_acknowledgement() {
        assert_eq!(flags_in_datagram(RequestKind::Change, false), NLM_F_REQUEST);
        assert_eq!(
            flags_in_datagram(RequestKind::Change, true),
            NLM_F_REQUEST | NLM_F_ACK
        );
        assert_eq!(
            flags_in_datagram(RequestKind::Get, false),
            NLM_F_REQUEST | NLM_F_ACK
        );
    }

    #[test]
    fn the_kernel_explanation_is_read_from_an_extended_ack() {
        // An echoed (capped) request header, then NLMSGERR_ATTR_MSG.
        let mut payload = vec![0u8; 16];
        let text = b"Attribute failed policy validation\0";
        let length = 4 + text.len();
        payload.extend_from_slice(&(length as u16).to_ne_bytes());
        payload.extend_from_slice(&NLMSGERR_ATTR_MSG.to_ne_bytes());
        payload.extend_from_slice(text);
        payload.resize((payload.len() + 3) & !3, 0);
        assert_eq!(
            extended_ack_message(NLM_F_CAPPED | NLM_F_ACK_TLVS, &payload).as_deref(),
            Some("Attribute failed policy validation")
        );
        assert_eq!(extended_ack_message(NLM_F_CAPPED, &payload), None);
        assert_eq!(
            extended_ack_message(NLM_F_CAPPED | NLM_F_ACK_TLVS, &payload[..10]),
            None
        );
    }
}
