//! The netlink transport: one generic netlink socket, the IPVS family
//! resolved once, and requests pipelined many to a `sendmsg`.
//!
//! Everything here moves [`IpvsMessage`]s; what they mean is the business of
//! [`crate::Client`].

use std::collections::HashMap;
use std::io;

use netlink_packet_core::{NLM_F_ACK, NLM_F_REQUEST, NetlinkMessage, NetlinkPayload};
use netlink_packet_generic::GenlMessage;
use netlink_packet_generic::ctrl::nlas::GenlCtrlAttrs;
use netlink_packet_generic::ctrl::{GenlCtrl, GenlCtrlCmd};
use netlink_sys::{Socket, SocketAddr, protocols::NETLINK_GENERIC};

use super::error::{Errno, Error};
use crate::message::{IPVS_GENL_NAME, IpvsMessage};
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

    fn encode(&mut self, request: &Request, into: &mut Vec<u8>) -> u32 {
        let sequence = self.next_sequence();
        let message = request.to_netlink(self.family, sequence);
        let start = into.len();
        into.resize(start + message.buffer_len(), 0);
        message.serialize(&mut into[start..]);
        sequence
    }

    /// Sends `requests` (changes and gets, not dumps), pipelined, and returns
    /// each one's outcome in order: `Ok` with any replies it produced, or the
    /// errno the kernel answered. A failed request does not stop the others:
    /// the kernel goes on through the batch, as it would for separate sends.
    pub(crate) fn execute(
        &mut self,
        requests: &[Request],
    ) -> Result<Vec<Result<Vec<IpvsMessage>, Errno>>, Error> {
        debug_assert!(
            requests
                .iter()
                .all(|request| request.kind != RequestKind::Dump)
        );
        let mut outcomes: Vec<Option<Result<Vec<IpvsMessage>, Errno>>> = vec![None; requests.len()];
        let mut replies: Vec<Vec<IpvsMessage>> = vec![Vec::new(); requests.len()];
        let mut next = 0;
        while next < requests.len() {
            let mut datagram = Vec::new();
            let mut pending: HashMap<u32, usize> = HashMap::new();
            while next < requests.len()
                && pending.len() < self.window
                && datagram.len() < MOST_BYTES_PER_SEND
            {
                let sequence = self.encode(&requests[next], &mut datagram);
                pending.insert(sequence, next);
                next += 1;
            }
            self.socket.send(&datagram, 0)?;
            while !pending.is_empty() {
                self.receive_messages(|sequence, payload| {
                    let Some(&index) = pending.get(&sequence) else {
                        return Ok(());
                    };
                    match payload {
                        NetlinkPayload::InnerMessage(message) => {
                            replies[index].push(message.payload)
                        }
                        NetlinkPayload::Error(error) => {
                            pending.remove(&sequence);
                            outcomes[index] = Some(match error.code {
                                None => Ok(std::mem::take(&mut replies[index])),
                                Some(code) => Err(Errno(-code.get())),
                            });
                        }
                        _ => {}
                    }
                    Ok(())
                })?;
            }
        }
        Ok(outcomes
            .into_iter()
            .map(|outcome| outcome.expect("every request answered"))
            .collect())
    }

    /// Runs dump requests, pipelined, and returns each one's messages or
    /// errno, in order.
    ///
    /// The kernel runs one dump at a time per socket: a dump that does not
    /// fit in its first reply datagram is continued as we read, and dump
    /// requests behind it in the same send are refused with EBUSY. Those are
    /// sent again once the dump ahead of them is done.
    pub(crate) fn dump(
        &mut self,
        requests: &[Request],
    ) -> Result<Vec<Result<Vec<IpvsMessage>, Errno>>, Error> {
        debug_assert!(
            requests
                .iter()
                .all(|request| request.kind == RequestKind::Dump)
        );
        let mut outcomes: Vec<Option<Result<Vec<IpvsMessage>, Errno>>> = vec![None; requests.len()];
        let mut entries: Vec<Vec<IpvsMessage>> = vec![Vec::new(); requests.len()];
        let mut waiting: Vec<usize> = (0..requests.len()).collect();
        while !waiting.is_empty() {
            let mut datagram = Vec::new();
            let mut pending: HashMap<u32, usize> = HashMap::new();
            let mut sent = 0;
            for &index in &waiting {
                if pending.len() >= self.window || datagram.len() >= MOST_BYTES_PER_SEND {
                    break;
                }
                let sequence = self.encode(&requests[index], &mut datagram);
                pending.insert(sequence, index);
                sent += 1;
            }
            waiting.drain(..sent);
            self.socket.send(&datagram, 0)?;
            let mut busy = Vec::new();
            while !pending.is_empty() {
                self.receive_messages(|sequence, payload| {
                    let Some(&index) = pending.get(&sequence) else {
                        return Ok(());
                    };
                    match payload {
                        NetlinkPayload::InnerMessage(message) => {
                            entries[index].push(message.payload)
                        }
                        // A dump that fails midway says so in its DONE.
                        NetlinkPayload::Done(done) => {
                            pending.remove(&sequence);
                            outcomes[index] = Some(if done.code < 0 {
                                Err(Errno(-done.code))
                            } else {
                                Ok(std::mem::take(&mut entries[index]))
                            });
                        }
                        NetlinkPayload::Error(error) => {
                            pending.remove(&sequence);
                            match error.code {
                                Some(code) if -code.get() == libc::EBUSY => busy.push(index),
                                Some(code) => outcomes[index] = Some(Err(Errno(-code.get()))),
                                None => {
                                    outcomes[index] = Some(Ok(std::mem::take(&mut entries[index])))
                                }
                            }
                        }
                        _ => {}
                    }
                    Ok(())
                })?;
            }
            busy.sort_unstable();
            waiting.splice(0..0, busy);
        }
        Ok(outcomes
            .into_iter()
            .map(|outcome| outcome.expect("every dump answered"))
            .collect())
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
