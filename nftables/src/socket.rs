//! The netfilter netlink socket: a batch (or a single question) out,
//! the kernel's answers in, without blocking a runtime thread and within
//! a bounded time. What the answers mean is worked out without I/O by
//! [`Acknowledgements`].

use std::fmt;
use std::io;
use std::time::Duration;

use netlink_packet_core::{
    NLM_F_ACK, NLM_F_DUMP, NLM_F_REQUEST, NLMSG_DONE, NLMSG_ERROR, NetlinkBuffer, NetlinkHeader,
    NetlinkMessage, NetlinkPayload, Parseable,
};
use netlink_sys::{AsyncSocket, AsyncSocketExt, SocketAddr, TokioSocket, protocols};

use super::Error;
use super::batch::{Batch, netlink_message};
use super::message::NftablesMessage;

/// How long the kernel has to answer. nfnetlink handles a datagram within
/// the sender's sendmsg, batches included, so its answers are queued by
/// the time `send` returns: waiting at all means something is wrong.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(2);

const NETLINK_HEADER_LENGTH: usize = 16;

/// A NETLINK_NETFILTER socket and the next sequence number.
pub struct Connection {
    socket: TokioSocket,
    sequence: u32,
}

impl fmt::Debug for Connection {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter
            .debug_struct("Connection")
            .field("sequence", &self.sequence)
            .finish_non_exhaustive()
    }
}

impl Connection {
    /// Within a tokio runtime (the socket registers with its reactor).
    pub fn open() -> io::Result<Connection> {
        let mut socket = TokioSocket::new(protocols::NETLINK_NETFILTER)?;
        socket.socket_mut().bind_auto()?;
        Ok(Connection {
            socket,
            sequence: 1,
        })
    }

    /// The next `count` sequence numbers, the first returned.
    pub fn take_sequences(&mut self, count: usize) -> u32 {
        let first = self.sequence;
        self.sequence = self.sequence.wrapping_add(count as u32);
        first
    }

    /// Sends `batch` and waits until the kernel took it (or refused it
    /// all). An empty batch sends nothing.
    pub async fn apply(&mut self, batch: Batch) -> Result<(), Error> {
        if batch.is_empty() {
            return Ok(());
        }
        let count = batch.messages().count() + 2;
        let messages = batch.into_netlink(self.take_sequences(count));
        self.exchange(&messages).await?;
        Ok(())
    }

    /// A dump (`NLM_F_DUMP`) of what `request` asks for (GETRULE of a
    /// family, a table...): each message of the kernel's answer as the
    /// kernel's bytes, for the caller to parse (a capture keeps them as
    /// they came).
    pub async fn dump(&mut self, request: NftablesMessage) -> Result<Vec<Vec<u8>>, Error> {
        let sequence = self.take_sequences(1);
        let message = netlink_message(request, NLM_F_REQUEST | NLM_F_DUMP, sequence);
        let mut datagram = vec![0; message.buffer_len()];
        message.serialize(&mut datagram);
        let socket = &self.socket;
        let dump = async {
            socket
                .send_to(&datagram, &SocketAddr::new(0, 0))
                .await
                .map_err(Error::Send)?;
            let mut answers = Vec::new();
            loop {
                let (answer, _) = socket.recv_from_full().await.map_err(Error::Receive)?;
                let mut rest = answer.as_slice();
                while rest.len() >= NETLINK_HEADER_LENGTH {
                    let header =
                        NetlinkHeader::parse(&NetlinkBuffer::new(rest)).map_err(Error::Parse)?;
                    let length = (header.length as usize).min(rest.len());
                    let (one, next) = rest.split_at(length.next_multiple_of(4).min(rest.len()));
                    rest = next;
                    if header.sequence_number != sequence {
                        continue;
                    }
                    match header.message_type {
                        NLMSG_DONE => return Ok(answers),
                        NLMSG_ERROR => {
                            let message = NetlinkMessage::<NftablesMessage>::deserialize(one)
                                .map_err(Error::Parse)?;
                            if let NetlinkPayload::Error(error) = message.payload {
                                return Err(Error::Refused(vec![Refusal {
                                    message: "a dump".into(),
                                    error: error.to_io(),
                                }]));
                            }
                        }
                        _ => answers.push(one[..length].to_vec()),
                    }
                }
            }
        };
        tokio::time::timeout(ANSWER_TIMEOUT, dump)
            .await
            .map_err(|_| Error::Timeout {
                timeout: ANSWER_TIMEOUT,
                waiting_for: "a dump".into(),
            })?
    }

    /// Sends `messages` in one datagram and waits for every acknowledgement
    /// they ask for; the kernel's other answers (a GETTABLE's table).
    pub async fn exchange(
        &mut self,
        messages: &[NetlinkMessage<NftablesMessage>],
    ) -> Result<Vec<NftablesMessage>, Error> {
        let mut datagram = Vec::new();
        for message in messages {
            let start = datagram.len();
            datagram.resize(start + message.buffer_len(), 0);
            message.serialize(&mut datagram[start..]);
        }
        let mut acknowledgements = Acknowledgements::new(messages);
        let kernel = SocketAddr::new(0, 0);
        let socket = &self.socket;
        let exchange = async {
            let sent = socket
                .send_to(&datagram, &kernel)
                .await
                .map_err(Error::Send)?;
            if sent != datagram.len() {
                return Err(Error::Send(io::Error::other(format!(
                    "sent {sent} of {} bytes",
                    datagram.len()
                ))));
            }
            while !acknowledgements.is_complete() {
                let (answer, _) = socket.recv_from_full().await.map_err(Error::Receive)?;
                for message in split(&answer)? {
                    acknowledgements.receive(message);
                }
            }
            Ok(())
        };
        match tokio::time::timeout(ANSWER_TIMEOUT, exchange).await {
            Ok(exchanged) => exchanged?,
            Err(_) => {
                return Err(Error::Timeout {
                    timeout: ANSWER_TIMEOUT,
                    waiting_for: acknowledgements.pending_description(),
                });
            }
        }
        acknowledgements.finish()
    }
}

/// The netlink messages of a datagram from the kernel.
fn split(mut datagram: &[u8]) -> Result<Vec<NetlinkMessage<NftablesMessage>>, Error> {
    let mut messages = Vec::new();
    while !datagram.is_empty() {
        let message =
            NetlinkMessage::<NftablesMessage>::deserialize(datagram).map_err(Error::Parse)?;
        let length = (message.header.length as usize).next_multiple_of(4);
        messages.push(message);
        datagram = &datagram[length.min(datagram.len())..];
    }
    Ok(messages)
}

/// A message the kernel refused, and why.
#[derive(Debug)]
pub struct Refusal {
    /// The message, as [`NftablesMessage`]'s Display names it
    /// (`NEWSETELEM ip keepalived vips`).
    pub message: String,
    pub error: io::Error,
}

impl fmt::Display for Refusal {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "{}: {}", self.message, self.error)
    }
}

/// What the kernel owes for messages sent, and what it has said. Without
/// I/O: fed the kernel's messages as they come.
///
/// Kernel behaviour it relies on (nfnetlink_rcv_batch): every message of
/// a batch is processed even after one fails, so that each error is
/// reported, and the answers (an acknowledgement for each message with
/// NLM_F_ACK, an error for each that failed) are delivered together once
/// the batch is committed or aborted; an aborted batch still acknowledges
/// the messages that were fine. Only when the batch itself is refused
/// (no memory for the answers, an unknown subsystem) the kernel answers
/// the batch begin, once, and nothing else.
#[derive(Debug)]
pub struct Acknowledgements {
    /// Sequence numbers still to be acknowledged, with their message.
    pending: Vec<(u32, String)>,
    /// The batch begin's sequence number and message, if there is one.
    begin: Option<(u32, String)>,
    refusals: Vec<Refusal>,
    answers: Vec<NftablesMessage>,
}

impl Acknowledgements {
    pub fn new(messages: &[NetlinkMessage<NftablesMessage>]) -> Acknowledgements {
        let mut pending = Vec::new();
        let mut begin = None;
        for message in messages {
            let NetlinkPayload::InnerMessage(inner) = &message.payload else {
                continue;
            };
            let entry = (message.header.sequence_number, inner.to_string());
            if matches!(inner, NftablesMessage::BatchBegin(_)) {
                begin = Some(entry);
            } else if message.header.flags & NLM_F_ACK != 0 {
                pending.push(entry);
            }
        }
        Acknowledgements {
            pending,
            begin,
            refusals: Vec::new(),
            answers: Vec::new(),
        }
    }

    pub fn is_complete(&self) -> bool {
        self.pending.is_empty()
    }

    /// One message from the kernel. Answers to sequence numbers not
    /// waited for are left alone: a batch that timed out may be answered
    /// late, into the next exchange.
    pub fn receive(&mut self, message: NetlinkMessage<NftablesMessage>) {
        let sequence = message.header.sequence_number;
        match message.payload {
            NetlinkPayload::Error(error) => {
                if let Some(position) = self
                    .pending
                    .iter()
                    .position(|(pending, _)| *pending == sequence)
                {
                    let (_, described) = self.pending.remove(position);
                    if error.code.is_some() {
                        self.refusals.push(Refusal {
                            message: described,
                            error: error.to_io(),
                        });
                    }
                } else if let Some((_, described)) = self
                    .begin
                    .take_if(|(begin, _)| *begin == sequence && error.code.is_some())
                {
                    // The batch as a whole: nothing else will come.
                    self.pending.clear();
                    self.refusals.push(Refusal {
                        message: described,
                        error: error.to_io(),
                    });
                }
            }
            NetlinkPayload::InnerMessage(answer)
                if self.pending.iter().any(|(pending, _)| *pending == sequence) =>
            {
                self.answers.push(answer);
            }
            _ => {}
        }
    }

    /// The messages still waited for, for a timeout's error.
    pub fn pending_description(&self) -> String {
        match self.pending.as_slice() {
            [] => "nothing".to_owned(),
            [(_, only)] => only.clone(),
            [(_, first), rest @ ..] => format!("{first} and {} more", rest.len()),
        }
    }

    /// The kernel's answers other than acknowledgements, or what it
    /// refused.
    pub fn finish(self) -> Result<Vec<NftablesMessage>, Error> {
        if self.refusals.is_empty() {
            Ok(self.answers)
        } else {
            Err(Error::Refused(self.refusals))
        }
    }
}

#[cfg(test)]
mod tests {
    use std::num::NonZeroI32;

    use netlink_packet_core::{ErrorMessage, NetlinkHeader};

    use super::*;
    use crate::batch::BaseChain;
    use crate::message::NFPROTO_IPV4;

    /// A batch of seven messages, numbered from 100.
    fn batch() -> Vec<NetlinkMessage<NftablesMessage>> {
        let mut batch = Batch::new();
        batch.add_table(NFPROTO_IPV4, "keepalived");
        for name in ["in", "out", "a", "b", "c"] {
            batch.add_base_chain(
                NFPROTO_IPV4,
                "keepalived",
                name,
                BaseChain {
                    kind: "filter",
                    hook: crate::hook::LOCAL_IN,
                    priority: -1,
                    device: None,
                },
            );
        }
        batch.delete_table(NFPROTO_IPV4, "vips");
        batch.into_netlink(100)
    }

    fn answer(sequence: u32, code: i32) -> NetlinkMessage<NftablesMessage> {
        let mut header = NetlinkHeader::default();
        header.sequence_number = sequence;
        let mut error = ErrorMessage::default();
        error.code = NonZeroI32::new(code);
        let mut message = NetlinkMessage::new(header, NetlinkPayload::Error(error));
        message.finalize();
        message
    }

    #[test]
    fn every_message_but_the_delimiters_is_waited_for_and_refusals_are_named() {
        let messages = batch();
        let mut acknowledgements = Acknowledgements::new(&messages);
        // NEWTABLE... DELTABLE: 101 to 107.
        assert_eq!(
            acknowledgements.pending_description(),
            "NEWTABLE ip keepalived and 6 more"
        );
        // An earlier batch's late answer is not this one's.
        acknowledgements.receive(answer(99, -libc::EEXIST));
        for sequence in 101..107 {
            acknowledgements.receive(answer(sequence, 0));
        }
        assert!(!acknowledgements.is_complete());
        assert_eq!(acknowledgements.pending_description(), "DELTABLE ip vips");
        acknowledgements.receive(answer(107, -libc::EEXIST));
        assert!(acknowledgements.is_complete());
        let error = acknowledgements.finish().expect_err("refused");
        assert_eq!(
            error.to_string(),
            "DELTABLE ip vips: File exists (os error 17)"
        );
    }

    #[test]
    fn an_error_for_the_batch_begin_ends_the_wait() {
        let messages = batch();
        let mut acknowledgements = Acknowledgements::new(&messages);
        acknowledgements.receive(answer(100, -libc::ENOMEM));
        assert!(acknowledgements.is_complete());
        let error = acknowledgements.finish().expect_err("refused");
        assert_eq!(
            error.to_string(),
            "BATCH_BEGIN: Cannot allocate memory (os error 12)"
        );
    }
}
