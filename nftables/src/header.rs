//! What every nftables message starts with: `struct nfgenmsg` after the
//! netlink header, and an object's message, that header and the object's
//! attributes. Below the object modules, which build on it, and the
//! message, which gathers them.

use netlink_packet_core::{DecodeError, Emitable, Nla, NlaBuffer, Parseable};

use super::attribute::parse_nested;

/// `NFPROTO_*`, the nfgenmsg family of a table.
pub const NFPROTO_UNSPEC: u8 = 0;
pub const NFPROTO_INET: u8 = 1;
pub const NFPROTO_IPV4: u8 = 2;
pub const NFPROTO_NETDEV: u8 = 5;
pub const NFPROTO_BRIDGE: u8 = 7;
pub const NFPROTO_IPV6: u8 = 10;

/// `struct nfgenmsg`, after the netlink header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct NfGenHeader {
    /// NFPROTO_*: the family of the table the message is about.
    pub family: u8,
    /// NFNETLINK_V0.
    pub version: u8,
    /// Big endian on the wire. The batch delimiters name the subsystem
    /// here; the kernel's answers put the ruleset's generation in it.
    pub resource_id: u16,
}

/// The length of `struct nfgenmsg`.
pub const NFGENMSG_LENGTH: usize = 4;

const NFNETLINK_V0: u8 = 0;

impl NfGenHeader {
    pub fn new(family: u8) -> NfGenHeader {
        NfGenHeader {
            family,
            version: NFNETLINK_V0,
            resource_id: 0,
        }
    }

    pub fn parse(payload: &[u8]) -> Result<NfGenHeader, DecodeError> {
        let [family, version, high, low, ..] = *payload else {
            return Err(DecodeError::from(format!(
                "{} bytes, shorter than nfgenmsg",
                payload.len()
            )));
        };
        Ok(NfGenHeader {
            family,
            version,
            resource_id: u16::from_be_bytes([high, low]),
        })
    }

    pub fn emit(&self, buffer: &mut [u8]) {
        buffer[0] = self.family;
        buffer[1] = self.version;
        buffer[2..4].copy_from_slice(&self.resource_id.to_be_bytes());
    }
}

/// An object's message: the header and its attributes
/// (a table's, a chain's...).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectMessage<A> {
    pub header: NfGenHeader,
    pub attributes: Vec<A>,
}

impl<A> ObjectMessage<A> {
    pub fn new(family: u8, attributes: Vec<A>) -> ObjectMessage<A> {
        ObjectMessage {
            header: NfGenHeader::new(family),
            attributes,
        }
    }
}

impl<A: Nla> Emitable for ObjectMessage<A> {
    fn buffer_len(&self) -> usize {
        NFGENMSG_LENGTH + self.attributes.as_slice().buffer_len()
    }

    fn emit(&self, buffer: &mut [u8]) {
        self.header.emit(&mut buffer[..NFGENMSG_LENGTH]);
        self.attributes
            .as_slice()
            .emit(&mut buffer[NFGENMSG_LENGTH..]);
    }
}

impl<A> ObjectMessage<A>
where
    A: for<'a> Parseable<NlaBuffer<&'a [u8]>>,
{
    pub fn parse(payload: &[u8]) -> Result<ObjectMessage<A>, DecodeError> {
        Ok(ObjectMessage {
            header: NfGenHeader::parse(payload)?,
            attributes: parse_nested(&payload[NFGENMSG_LENGTH..])?,
        })
    }
}
