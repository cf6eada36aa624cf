//! The netlink transport: one generic netlink socket, the IPVS family
//! resolved once, and requests pipelined many to a `sendmsg`.
//!
//! Everything here moves [`IpvsMessage`]s; what they mean is the business of
//! [`crate::Client`].

use std::io;

use netlink_packet_core::{
    Emitable, NLM_F_ACK, NLM_F_REQUEST, NetlinkHeader, NetlinkMessage, NetlinkPayload,
};
use netlink_packet_generic::GenlHeader;
use netlink_packet_generic::GenlMessage;
use netlink_packet_generic::ctrl::nlas::GenlCtrlAttrs;
use netlink_packet_generic::ctrl::{GenlCtrl, GenlCtrlCmd};
use netlink_sys::{Socket, SocketAddr, protocols::NETLINK_GENERIC};

use super::error::{Errno, Error};
use crate::message::{IPVS_GENL_NAME, IPVS_GENL_VERSION, IpvsMessage};
use crate::request::{Request, RequestKind};

/// The receive buffer asked for. Acknowledgements of a whole batch queue on
/// the socket while the kernel works through it; the kernel drops (ENOBUFS)
/// whatever does not fit, so the batch is sized to this.
const RECEIVE_BUFFER_BYTES: usize = 8 << 20;
/// What one queued acknowledgement costs against the receive buffer: its
/// skb's truesize, about 768 bytes on x86_64, rounded up.
const ACKNOWLEDGEMENT_COST: usize = 1024;
/// The most requests sent in one `sendmsg`.
const MOST_REQUESTS_PER_SEND: usize = 2048;
/// The most bytes sent in one `sendmsg`: the kernel refuses a datagram
/// larger than the socket's send buffer (212992 bytes by default).
const MOST_BYTES_PER_SEND: usize = 192 * 1024;
/// A received datagram is at most one skb: dumps fill up to 32 KiB.
const RECEIVE_CHUNK: usize = 64 * 1024;

type Message = NetlinkMessage<GenlMessage<IpvsMessage>>;

/// The socket, with the family id of IPVS in this network namespace.
pub(crate) struct Transport {
    socket: Socket,
    family: u16,
    sequence: u32,
    window: usize,
    buffer: Vec<u8>,
}

impl Transport {
    pub(crate) fn connect() -> Result<Transport, Error> {
        let mut socket = Socket::new(NETLINK_GENERIC)?;
        socket.bind_auto()?;
        socket.connect(&SocketAddr::new(0, 0))?;
        // Acknowledgements without a copy of the request: they stay small.
        socket.set_cap_ack(true)?;
        socket.set_ext_ack(true)?;
        let received = grow_receive_buffer(&socket)?;
        let window = (received / ACKNOWLEDGEMENT_COST).clamp(16, MOST_REQUESTS_PER_SEND);
        let mut transport = Transport {
            socket,
            family: 0,
            sequence: 0,
            window,
            buffer: vec![0; RECEIVE_CHUNK],
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
        self.socket.send(&bytes, 0)?;

        let mut family = None;
        loop {
            let received = self.receive()?;
            for (offset, length) in split(&self.buffer[..received])? {
                let bytes = &self.buffer[offset..offset + length];
                let message = NetlinkMessage::<GenlMessage<GenlCtrl>>::deserialize(bytes)?;
                if message.header.sequence_number != sequence {
                    continue;
                }
                match message.payload {
                    NetlinkPayload::InnerMessage(reply) => {
                        family = reply
                            .payload
                            .nlas
                            .iter()
                            .find_map(|attribute| match attribute {
                                GenlCtrlAttrs::FamilyId(id) => Some(*id),
                                _ => None,
                            });
                    }
                    NetlinkPayload::Error(error) => {
                        return match error.code {
                            None => family.ok_or_else(|| {
                                Error::Protocol("the family reply for IPVS has no id".into())
                            }),
                            // nlctrl answers ENOENT for an unknown family.
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

    /// Appends `request` to `into` as a netlink message with the next
    /// sequence number, and returns that number.
    ///
    /// The headers are written around the message in place, rather than
    /// through `NetlinkMessage<GenlMessage<_>>`, which would need a copy of
    /// every request: a batch of ten thousand spends most of its time here.
    fn encode(&mut self, request: &Request, flags: u16, into: &mut Vec<u8>) -> u32 {
        let sequence = self.next_sequence();
        let generic = GenlHeader {
            cmd: request.message.command.into(),
            version: IPVS_GENL_VERSION,
        };
        let mut header = NetlinkHeader::default();
        let headers = header.buffer_len() + generic.buffer_len();
        header.length = (headers + request.message.buffer_len()) as u32;
        header.message_type = self.family;
        header.flags = flags;
        header.sequence_number = sequence;
        let start = into.len();
        into.resize(start + header.length as usize, 0);
        let (head, body) = into[start..].split_at_mut(headers);
        let (netlink, generic_bytes) = head.split_at_mut(header.buffer_len());
        header.emit(netlink);
        generic.emit(generic_bytes);
        request.message.emit(body);
        sequence
    }

    /// Sends `requests` (changes and gets, not dumps), pipelined, and returns
    /// each one's outcome in order: `Ok` with any replies it produced, or the
    /// errno the kernel answered. A failed request does not stop the others:
    /// the kernel goes on through the batch, as it would for separate sends.
    ///
    /// Only the last change of each datagram asks for an acknowledgement.
    /// The kernel handles a datagram's messages in order and answers a
    /// failure whether it was asked to acknowledge or not, so once the last
    /// one is answered, every earlier change that has no error succeeded.
    /// Reading one acknowledgement per change would cost a system call
    /// each, which is most of the time under emulation.
    pub(crate) fn execute(
        &mut self,
        requests: &[Request],
    ) -> Result<Vec<Result<Vec<IpvsMessage>, Errno>>, Error> {
        debug_assert!(
            requests
                .iter()
                .all(|request| request.kind != RequestKind::Dump)
        );
        let mut outcomes: Vec<Result<Vec<IpvsMessage>, Errno>> = Vec::with_capacity(requests.len());
        let mut datagram = Vec::new();
        while outcomes.len() < requests.len() {
            let first = outcomes.len();
            // The datagram's requests: as many as the window and the send
            // limit allow, and at least one.
            let mut end = first;
            let mut bytes = 0;
            while end < requests.len() && end - first < self.window {
                let length = encoded_length(&requests[end]);
                if end > first && bytes + length > MOST_BYTES_PER_SEND {
                    break;
                }
                bytes += length;
                end += 1;
            }
            datagram.clear();
            let first_sequence = self.sequence.wrapping_add(1);
            for (index, request) in requests.iter().enumerate().take(end).skip(first) {
                let flags = if index + 1 == end || request.kind != RequestKind::Change {
                    NLM_F_REQUEST | NLM_F_ACK
                } else {
                    NLM_F_REQUEST
                };
                self.encode(request, flags, &mut datagram);
            }
            let count = end - first;
            let last_sequence = self.sequence;
            self.socket.send(&datagram, 0)?;

            let mut chunk: Vec<Result<Vec<IpvsMessage>, Errno>> = vec![Ok(Vec::new()); count];
            let mut done = false;
            while !done {
                self.receive_messages(|sequence, payload| {
                    let position = sequence.wrapping_sub(first_sequence) as usize;
                    if position >= count {
                        return Ok(());
                    }
                    match payload {
                        NetlinkPayload::InnerMessage(message) => {
                            if let Ok(replies) = &mut chunk[position] {
                                replies.push(message.payload);
                            }
                        }
                        NetlinkPayload::Error(error) => {
                            if let Some(code) = error.code {
                                chunk[position] = Err(Errno(-code.get()));
                            }
                            done |= sequence == last_sequence;
                        }
                        _ => {}
                    }
                    Ok(())
                })?;
            }
            outcomes.extend(chunk);
        }
        Ok(outcomes)
    }

    /// Runs one dump request and returns its messages, or the errno.
    ///
    /// Dumps are not pipelined: the kernel runs one dump at a time per
    /// socket and refuses others with EBUSY until it is done, and a
    /// non-empty IPVS dump is never done in the pass that answers the
    /// request: the callback returns the length it wrote, so the kernel
    /// writes NLMSG_DONE only in a second pass, which our read of the first
    /// datagram triggers. Every dump sent behind another would be refused.
    pub(crate) fn dump(
        &mut self,
        request: &Request,
    ) -> Result<Result<Vec<IpvsMessage>, Errno>, Error> {
        debug_assert_eq!(request.kind, RequestKind::Dump);
        let mut datagram = Vec::new();
        let sequence = self.encode(request, request.kind.flags(), &mut datagram);
        self.socket.send(&datagram, 0)?;
        let mut entries = Vec::new();
        let mut outcome = None;
        while outcome.is_none() {
            self.receive_messages(|received, payload| {
                if received != sequence {
                    return Ok(());
                }
                match payload {
                    NetlinkPayload::InnerMessage(message) => entries.push(message.payload),
                    // A dump that fails midway says so in its DONE.
                    NetlinkPayload::Done(done) if done.code < 0 => {
                        outcome = Some(Err(Errno(-done.code)))
                    }
                    NetlinkPayload::Done(_) => outcome = Some(Ok(())),
                    NetlinkPayload::Error(error) => {
                        outcome = Some(match error.code {
                            Some(code) => Err(Errno(-code.get())),
                            None => Ok(()),
                        })
                    }
                    _ => {}
                }
                Ok(())
            })?;
        }
        Ok(outcome
            .expect("the loop ends with an outcome")
            .map(|()| entries))
    }

    /// Receives one datagram and hands each message in it to `handle` with
    /// its sequence number.
    fn receive_messages(
        &mut self,
        mut handle: impl FnMut(u32, NetlinkPayload<GenlMessage<IpvsMessage>>) -> Result<(), Error>,
    ) -> Result<(), Error> {
        let received = self.receive()?;
        for (offset, length) in split(&self.buffer[..received])? {
            let bytes = &self.buffer[offset..offset + length];
            let message = Message::deserialize(bytes)?;
            if matches!(message.payload, NetlinkPayload::InnerMessage(_))
                && message.header.message_type != self.family
            {
                return Err(Error::Protocol(format!(
                    "a reply of netlink type {} on the IPVS socket (family {})",
                    message.header.message_type, self.family
                )));
            }
            handle(message.header.sequence_number, message.payload)?;
        }
        Ok(())
    }

    fn receive(&mut self) -> Result<usize, Error> {
        loop {
            match self.socket.recv(&mut &mut self.buffer[..], 0) {
                Ok(count) => return Ok(count),
                Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
                Err(error) if error.raw_os_error() == Some(libc::ENOBUFS) => {
                    return Err(Error::Protocol(
                        "the kernel dropped replies: the socket's receive buffer overflowed".into(),
                    ));
                }
                Err(error) => return Err(error.into()),
            }
        }
    }
}

/// The bytes [`Transport::encode`] writes for `request`.
fn encoded_length(request: &Request) -> usize {
    NetlinkHeader::default().buffer_len()
        + GenlHeader { cmd: 0, version: 0 }.buffer_len()
        + request.message.buffer_len()
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

/// Asks for a large receive buffer, beyond the system limit when allowed
/// (SO_RCVBUFFORCE needs CAP_NET_ADMIN, which IPVS changes need anyway);
/// returns what the kernel granted.
fn grow_receive_buffer(socket: &Socket) -> Result<usize, Error> {
    use std::os::fd::AsRawFd;
    let size = RECEIVE_BUFFER_BYTES as libc::c_int;
    // SAFETY: setsockopt with a pointer to an int and its size.
    let forced = unsafe {
        libc::setsockopt(
            socket.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_RCVBUFFORCE,
            (&size as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if forced != 0 {
        socket.set_rx_buf_sz(RECEIVE_BUFFER_BYTES)?;
    }
    Ok(socket.get_rx_buf_sz()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_walks_aligned_messages_and_rejects_overruns() {
        let mut datagram = vec![0u8; 20 + 16];
        datagram[0..4].copy_from_slice(&18u32.to_ne_bytes());
        datagram[20..24].copy_from_slice(&16u32.to_ne_bytes());
        assert_eq!(split(&datagram).unwrap(), vec![(0, 18), (20, 16)]);
        datagram[20..24].copy_from_slice(&17u32.to_ne_bytes());
        assert!(split(&datagram).is_err());
    }
}
