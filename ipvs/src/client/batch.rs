//! Requests encoded ahead of sending.
//!
//! Building a request's attributes and writing its bytes is the library's
//! own share of a batch (about 5 ms natively for the 11,000 operations of
//! 1,000 services of ten destinations; ten times that in the lab's
//! emulated guest), done on the thread that then waits for the kernel. An
//! [`EncodedBatch`] is that work done beforehand, on any thread, without a
//! client: each message's bytes with its netlink and generic headers,
//! where the family id, the flags and the sequence number, which only the
//! sending socket knows, are written as the message is copied into its
//! datagram ([`Client::apply_encoded`]). Every batch a client sends goes
//! this way, so there is one way of writing a request.

use netlink_packet_core::{Emitable, NetlinkHeader};
use netlink_packet_generic::GenlHeader;

use super::{BatchError, Error, Operation};
use crate::IpvsCommand;
use crate::message::IPVS_GENL_VERSION;
use crate::request::{Request, RequestKind};

/// Where the netlink header's fields written at sending are.
const TYPE: std::ops::Range<usize> = 4..6;
const FLAGS: std::ops::Range<usize> = 6..8;
const SEQUENCE: std::ops::Range<usize> = 8..12;

/// Requests encoded for a later batch (see the module's documentation).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EncodedBatch {
    /// The messages back to back.
    bytes: Vec<u8>,
    /// Where each message starts in `bytes`, and where the last one ends.
    starts: Vec<usize>,
    kinds: Vec<RequestKind>,
    commands: Vec<IpvsCommand>,
}

impl EncodedBatch {
    /// `operations` encoded, or, if one cannot be (a weight above the
    /// kernel's limit, a scheduler name too long), each such one, as
    /// [`Client::apply`] refuses them: nothing of the batch is to be sent.
    ///
    /// [`Client::apply`]: super::Client::apply
    pub fn new(operations: &[Operation]) -> Result<EncodedBatch, BatchError> {
        let mut batch = EncodedBatch::with_capacity(operations.len());
        let mut failures = Vec::new();
        for (index, operation) in operations.iter().enumerate() {
            match operation.request() {
                Ok(request) => batch.push(&request),
                Err(source) => failures.push((
                    index,
                    Error::Invalid {
                        operation: operation.to_string(),
                        source,
                    },
                )),
            }
        }
        if failures.is_empty() {
            Ok(batch)
        } else {
            Err(BatchError {
                failures,
                interrupted: None,
                total: operations.len(),
            })
        }
    }

    /// Requests built beforehand, encoded.
    pub fn of_requests(requests: &[Request]) -> EncodedBatch {
        let mut batch = EncodedBatch::with_capacity(requests.len());
        for request in requests {
            batch.push(request);
        }
        batch
    }

    fn with_capacity(messages: usize) -> EncodedBatch {
        let mut starts = Vec::with_capacity(messages + 1);
        starts.push(0);
        EncodedBatch {
            // A change of a service or destination is 100 to 200 bytes.
            bytes: Vec::with_capacity(messages * 160),
            starts,
            kinds: Vec::with_capacity(messages),
            commands: Vec::with_capacity(messages),
        }
    }

    /// Appends `request` with its headers; the family id, the flags and
    /// the sequence number are left 0, written at sending. The port is this
    /// process's id: the kernel ignores a request's port, and it tells a
    /// tap on netlink whose request it is ([`crate::monitor::own_port`]).
    fn push(&mut self, request: &Request) {
        let generic = GenlHeader {
            cmd: request.message.command.into(),
            version: IPVS_GENL_VERSION,
        };
        let mut header = NetlinkHeader::default();
        let headers = header.buffer_len() + generic.buffer_len();
        let payload = request.message.buffer_len();
        header.length = (headers + payload) as u32;
        header.port_number = crate::monitor::own_port();
        // The headers are written around the message in place, rather than
        // through `NetlinkMessage<GenlMessage<_>>`, which would need a copy
        // of every request.
        let start = self.bytes.len();
        self.bytes.resize(start + headers + payload, 0);
        let (head, body) = self.bytes[start..].split_at_mut(headers);
        let (netlink, generic_bytes) = head.split_at_mut(header.buffer_len());
        header.emit(netlink);
        generic.emit(generic_bytes);
        request.message.emit(body);
        self.starts.push(self.bytes.len());
        self.kinds.push(request.kind);
        self.commands.push(request.message.command);
    }

    /// The number of messages.
    pub fn len(&self) -> usize {
        self.kinds.len()
    }

    pub fn is_empty(&self) -> bool {
        self.kinds.is_empty()
    }

    /// The message at `index`, headers included.
    pub(crate) fn message(&self, index: usize) -> &[u8] {
        &self.bytes[self.starts[index]..self.starts[index + 1]]
    }

    pub(crate) fn kind(&self, index: usize) -> RequestKind {
        self.kinds[index]
    }

    pub(crate) fn command(&self, index: usize) -> IpvsCommand {
        self.commands[index]
    }
}

/// Writes what only the sending socket knows into a message copied from a
/// batch: the family id, the flags and the sequence number (native byte
/// order, as netlink's headers are).
pub(crate) fn address(message: &mut [u8], family: u16, flags: u16, sequence: u32) {
    message[TYPE].copy_from_slice(&family.to_ne_bytes());
    message[FLAGS].copy_from_slice(&flags.to_ne_bytes());
    message[SEQUENCE].copy_from_slice(&sequence.to_ne_bytes());
}

#[cfg(test)]
mod tests {
    use std::net::SocketAddr;

    use netlink_packet_core::NLM_F_REQUEST;

    use super::*;
    use crate::{Destination, Forwarding, Service, ServiceKey};

    fn operations() -> Vec<Operation> {
        let key: ServiceKey = ServiceKey::Address {
            protocol: crate::Protocol::Tcp,
            address: "192.0.2.1".parse().unwrap(),
            port: 80,
        };
        let address: SocketAddr = "10.0.0.1:8080".parse().unwrap();
        vec![
            Operation::CreateService(Service::new(key, "wlc")),
            Operation::CreateDestination(key, Destination::new(address, Forwarding::Masquerade)),
            Operation::DeleteDestination(key, address),
            Operation::DeleteService(key),
        ]
    }

    /// Each message, once addressed, is the bytes of the whole netlink
    /// message the request makes (`Request::to_netlink`, which goes
    /// through netlink-packet-core's own message), port aside.
    #[test]
    fn an_addressed_message_is_the_requests_netlink_message() {
        let operations = operations();
        let batch = EncodedBatch::new(&operations).unwrap();
        assert_eq!(batch.len(), operations.len());
        for (index, operation) in operations.iter().enumerate() {
            let request = operation.request().unwrap();
            let mut message = batch.message(index).to_vec();
            address(&mut message, 37, NLM_F_REQUEST, 1000 + index as u32);
            let mut expected = request.to_netlink(37, 1000 + index as u32);
            expected.header.flags = NLM_F_REQUEST;
            expected.header.port_number = crate::monitor::own_port();
            let mut bytes = vec![0; expected.buffer_len()];
            expected.serialize(&mut bytes);
            assert_eq!(message, bytes, "{operation}");
            assert_eq!(batch.command(index), request.message.command);
            assert_eq!(batch.kind(index), request.kind);
        }
        assert_eq!(
            EncodedBatch::of_requests(
                &operations
                    .iter()
                    .map(|operation| operation.request().unwrap())
                    .collect::<Vec<_>>()
            ),
            batch
        );
    }

    /// An operation that cannot be encoded refuses the batch, naming each
    /// such one by its index.
    #[test]
    fn an_operation_that_cannot_be_encoded_refuses_the_batch() {
        let mut operations = operations();
        let Operation::CreateDestination(key, mut destination) = operations[1].clone() else {
            unreachable!()
        };
        destination.weight = u32::MAX;
        operations.insert(3, Operation::UpdateDestination(key, destination));
        let refused = EncodedBatch::new(&operations).unwrap_err();
        assert_eq!(refused.total, 5);
        assert!(refused.interrupted.is_none());
        assert!(
            matches!(refused.failures.as_slice(), [(3, Error::Invalid { .. })]),
            "{refused}"
        );
    }
}
