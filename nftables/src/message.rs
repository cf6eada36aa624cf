//! The nftables netlink message: the nfgenmsg header and one kernel
//! object's attributes, or the batch delimiters around a transaction.
//! Wrap it in `NetlinkMessage<NftablesMessage>`.

use std::fmt;

use netlink_packet_core::{
    DecodeError, Emitable, ErrorContext, NetlinkDeserializable, NetlinkHeader, NetlinkSerializable,
};

use super::chain::{ChainAttribute, ChainMessage};
pub use super::header::{
    NFGENMSG_LENGTH, NFPROTO_BRIDGE, NFPROTO_INET, NFPROTO_IPV4, NFPROTO_IPV6, NFPROTO_NETDEV,
    NFPROTO_UNSPEC, NfGenHeader, ObjectMessage,
};
use super::rule::{RuleAttribute, RuleMessage};
use super::set::{SetAttribute, SetMessage};
use super::set_element::{SetElementListAttribute, SetElementMessage};
use super::table::{TableAttribute, TableMessage};

/// The nftables subsystem of nfnetlink: the high byte of the message
/// type, and the resource id of the batch delimiters.
const NFNL_SUBSYS_NFTABLES: u16 = 10;
/// Batch delimiters are nfnetlink's own messages (NLMSG_MIN_TYPE and
/// up), not a subsystem's.
const NFNL_MSG_BATCH_BEGIN: u16 = 0x10;
const NFNL_MSG_BATCH_END: u16 = 0x11;

const NFT_MSG_NEWTABLE: u8 = 0;
const NFT_MSG_GETTABLE: u8 = 1;
const NFT_MSG_DELTABLE: u8 = 2;
const NFT_MSG_NEWCHAIN: u8 = 3;
const NFT_MSG_GETCHAIN: u8 = 4;
const NFT_MSG_DELCHAIN: u8 = 5;
const NFT_MSG_NEWRULE: u8 = 6;
const NFT_MSG_GETRULE: u8 = 7;
const NFT_MSG_DELRULE: u8 = 8;
const NFT_MSG_NEWSET: u8 = 9;
const NFT_MSG_GETSET: u8 = 10;
const NFT_MSG_DELSET: u8 = 11;
const NFT_MSG_NEWSETELEM: u8 = 12;
const NFT_MSG_GETSETELEM: u8 = 13;
const NFT_MSG_DELSETELEM: u8 = 14;

/// A message of the nftables subsystem, or a batch delimiter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NftablesMessage {
    /// `NFNL_MSG_BATCH_BEGIN`: the resource id names the subsystem.
    BatchBegin(NfGenHeader),
    /// `NFNL_MSG_BATCH_END`: the batch is committed (or, if a message
    /// failed, none of it is).
    BatchEnd(NfGenHeader),
    NewTable(TableMessage),
    GetTable(TableMessage),
    DeleteTable(TableMessage),
    NewChain(ChainMessage),
    GetChain(ChainMessage),
    DeleteChain(ChainMessage),
    NewRule(RuleMessage),
    GetRule(RuleMessage),
    DeleteRule(RuleMessage),
    NewSet(SetMessage),
    GetSet(SetMessage),
    DeleteSet(SetMessage),
    NewSetElement(SetElementMessage),
    GetSetElement(SetElementMessage),
    DeleteSetElement(SetElementMessage),
}

impl NftablesMessage {
    pub fn batch_begin() -> NftablesMessage {
        NftablesMessage::BatchBegin(NfGenHeader {
            resource_id: NFNL_SUBSYS_NFTABLES,
            ..NfGenHeader::new(NFPROTO_UNSPEC)
        })
    }

    pub fn batch_end() -> NftablesMessage {
        NftablesMessage::BatchEnd(NfGenHeader {
            resource_id: NFNL_SUBSYS_NFTABLES,
            ..NfGenHeader::new(NFPROTO_UNSPEC)
        })
    }

    pub fn is_batch_delimiter(&self) -> bool {
        matches!(self, Self::BatchBegin(_) | Self::BatchEnd(_))
    }

    /// The kernel's name of the message type (`NFT_MSG_` left out), as
    /// keepalived's and nft's debug output name them.
    pub fn kind_name(&self) -> &'static str {
        match self {
            Self::BatchBegin(_) => "BATCH_BEGIN",
            Self::BatchEnd(_) => "BATCH_END",
            Self::NewTable(_) => "NEWTABLE",
            Self::GetTable(_) => "GETTABLE",
            Self::DeleteTable(_) => "DELTABLE",
            Self::NewChain(_) => "NEWCHAIN",
            Self::GetChain(_) => "GETCHAIN",
            Self::DeleteChain(_) => "DELCHAIN",
            Self::NewRule(_) => "NEWRULE",
            Self::GetRule(_) => "GETRULE",
            Self::DeleteRule(_) => "DELRULE",
            Self::NewSet(_) => "NEWSET",
            Self::GetSet(_) => "GETSET",
            Self::DeleteSet(_) => "DELSET",
            Self::NewSetElement(_) => "NEWSETELEM",
            Self::GetSetElement(_) => "GETSETELEM",
            Self::DeleteSetElement(_) => "DELSETELEM",
        }
    }

    pub fn header(&self) -> &NfGenHeader {
        match self {
            Self::BatchBegin(header) | Self::BatchEnd(header) => header,
            Self::NewTable(message) | Self::GetTable(message) | Self::DeleteTable(message) => {
                &message.header
            }
            Self::NewChain(message) | Self::GetChain(message) | Self::DeleteChain(message) => {
                &message.header
            }
            Self::NewRule(message) | Self::GetRule(message) | Self::DeleteRule(message) => {
                &message.header
            }
            Self::NewSet(message) | Self::GetSet(message) | Self::DeleteSet(message) => {
                &message.header
            }
            Self::NewSetElement(message)
            | Self::GetSetElement(message)
            | Self::DeleteSetElement(message) => &message.header,
        }
    }

    /// The table and the object within it the message names (a chain, a
    /// set; a rule's chain; the set of elements), for messages saying
    /// what failed.
    fn names(&self) -> (Option<&str>, Option<&str>) {
        fn find<A>(attributes: &[A], pick: impl Fn(&A) -> Option<&str>) -> Option<&str> {
            attributes.iter().find_map(pick)
        }
        match self {
            Self::BatchBegin(_) | Self::BatchEnd(_) => (None, None),
            Self::NewTable(message) | Self::GetTable(message) | Self::DeleteTable(message) => (
                find(&message.attributes, |attribute| match attribute {
                    TableAttribute::Name(name) => Some(name),
                    _ => None,
                }),
                None,
            ),
            Self::NewChain(message) | Self::GetChain(message) | Self::DeleteChain(message) => (
                find(&message.attributes, |attribute| match attribute {
                    ChainAttribute::Table(name) => Some(name),
                    _ => None,
                }),
                find(&message.attributes, |attribute| match attribute {
                    ChainAttribute::Name(name) => Some(name),
                    _ => None,
                }),
            ),
            Self::NewRule(message) | Self::GetRule(message) | Self::DeleteRule(message) => (
                find(&message.attributes, |attribute| match attribute {
                    RuleAttribute::Table(name) => Some(name),
                    _ => None,
                }),
                find(&message.attributes, |attribute| match attribute {
                    RuleAttribute::Chain(name) => Some(name),
                    _ => None,
                }),
            ),
            Self::NewSet(message) | Self::GetSet(message) | Self::DeleteSet(message) => (
                find(&message.attributes, |attribute| match attribute {
                    SetAttribute::Table(name) => Some(name),
                    _ => None,
                }),
                find(&message.attributes, |attribute| match attribute {
                    SetAttribute::Name(name) => Some(name),
                    _ => None,
                }),
            ),
            Self::NewSetElement(message)
            | Self::GetSetElement(message)
            | Self::DeleteSetElement(message) => (
                find(&message.attributes, |attribute| match attribute {
                    SetElementListAttribute::Table(name) => Some(name),
                    _ => None,
                }),
                find(&message.attributes, |attribute| match attribute {
                    SetElementListAttribute::Set(name) => Some(name),
                    _ => None,
                }),
            ),
        }
    }

    fn kind(&self) -> u8 {
        match self {
            Self::BatchBegin(_) | Self::BatchEnd(_) => 0,
            Self::NewTable(_) => NFT_MSG_NEWTABLE,
            Self::GetTable(_) => NFT_MSG_GETTABLE,
            Self::DeleteTable(_) => NFT_MSG_DELTABLE,
            Self::NewChain(_) => NFT_MSG_NEWCHAIN,
            Self::GetChain(_) => NFT_MSG_GETCHAIN,
            Self::DeleteChain(_) => NFT_MSG_DELCHAIN,
            Self::NewRule(_) => NFT_MSG_NEWRULE,
            Self::GetRule(_) => NFT_MSG_GETRULE,
            Self::DeleteRule(_) => NFT_MSG_DELRULE,
            Self::NewSet(_) => NFT_MSG_NEWSET,
            Self::GetSet(_) => NFT_MSG_GETSET,
            Self::DeleteSet(_) => NFT_MSG_DELSET,
            Self::NewSetElement(_) => NFT_MSG_NEWSETELEM,
            Self::GetSetElement(_) => NFT_MSG_GETSETELEM,
            Self::DeleteSetElement(_) => NFT_MSG_DELSETELEM,
        }
    }
}

/// How a failure names the message: `NEWSETELEM ip keepalived vips`.
impl fmt::Display for NftablesMessage {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(self.kind_name())?;
        if self.is_batch_delimiter() {
            return Ok(());
        }
        match self.header().family {
            NFPROTO_IPV4 => formatter.write_str(" ip")?,
            NFPROTO_IPV6 => formatter.write_str(" ip6")?,
            NFPROTO_INET => formatter.write_str(" inet")?,
            NFPROTO_NETDEV => formatter.write_str(" netdev")?,
            NFPROTO_BRIDGE => formatter.write_str(" bridge")?,
            NFPROTO_UNSPEC => {}
            family => write!(formatter, " family {family}")?,
        }
        let (table, object) = self.names();
        for name in [table, object].into_iter().flatten() {
            write!(formatter, " {name}")?;
        }
        Ok(())
    }
}

impl NetlinkSerializable for NftablesMessage {
    fn message_type(&self) -> u16 {
        match self {
            Self::BatchBegin(_) => NFNL_MSG_BATCH_BEGIN,
            Self::BatchEnd(_) => NFNL_MSG_BATCH_END,
            _ => (NFNL_SUBSYS_NFTABLES << 8) | u16::from(self.kind()),
        }
    }

    fn buffer_len(&self) -> usize {
        match self {
            Self::BatchBegin(_) | Self::BatchEnd(_) => NFGENMSG_LENGTH,
            Self::NewTable(message) | Self::GetTable(message) | Self::DeleteTable(message) => {
                message.buffer_len()
            }
            Self::NewChain(message) | Self::GetChain(message) | Self::DeleteChain(message) => {
                message.buffer_len()
            }
            Self::NewRule(message) | Self::GetRule(message) | Self::DeleteRule(message) => {
                message.buffer_len()
            }
            Self::NewSet(message) | Self::GetSet(message) | Self::DeleteSet(message) => {
                message.buffer_len()
            }
            Self::NewSetElement(message)
            | Self::GetSetElement(message)
            | Self::DeleteSetElement(message) => message.buffer_len(),
        }
    }

    fn serialize(&self, buffer: &mut [u8]) {
        match self {
            Self::BatchBegin(header) | Self::BatchEnd(header) => header.emit(buffer),
            Self::NewTable(message) | Self::GetTable(message) | Self::DeleteTable(message) => {
                message.emit(buffer)
            }
            Self::NewChain(message) | Self::GetChain(message) | Self::DeleteChain(message) => {
                message.emit(buffer)
            }
            Self::NewRule(message) | Self::GetRule(message) | Self::DeleteRule(message) => {
                message.emit(buffer)
            }
            Self::NewSet(message) | Self::GetSet(message) | Self::DeleteSet(message) => {
                message.emit(buffer)
            }
            Self::NewSetElement(message)
            | Self::GetSetElement(message)
            | Self::DeleteSetElement(message) => message.emit(buffer),
        }
    }
}

/// A message that is not one of these.
#[derive(Debug, thiserror::Error)]
pub enum ParseError {
    #[error("message type {message_type:#06x} is neither nftables' nor a batch delimiter")]
    NotNftables { message_type: u16 },
    #[error("unknown nftables message type {kind}")]
    UnknownKind { kind: u8 },
    #[error("{message} message: {source}")]
    Malformed {
        message: &'static str,
        #[source]
        source: DecodeError,
    },
}

impl NetlinkDeserializable for NftablesMessage {
    type Error = ParseError;

    fn deserialize(header: &NetlinkHeader, payload: &[u8]) -> Result<Self, ParseError> {
        let malformed = |message: &'static str| {
            move |source: DecodeError| ParseError::Malformed { message, source }
        };
        let batch = |name: &'static str| -> Result<NfGenHeader, ParseError> {
            if payload.len() != NFGENMSG_LENGTH {
                return Err(malformed(name)(DecodeError::from(format!(
                    "{} bytes, not just nfgenmsg",
                    payload.len()
                ))));
            }
            NfGenHeader::parse(payload).map_err(malformed(name))
        };
        match header.message_type {
            NFNL_MSG_BATCH_BEGIN => return Ok(Self::BatchBegin(batch("BATCH_BEGIN")?)),
            NFNL_MSG_BATCH_END => return Ok(Self::BatchEnd(batch("BATCH_END")?)),
            message_type if message_type >> 8 != NFNL_SUBSYS_NFTABLES => {
                return Err(ParseError::NotNftables { message_type });
            }
            _ => {}
        }
        let kind = (header.message_type & 0xff) as u8;
        macro_rules! object {
            ($variant:ident, $name:literal) => {
                Self::$variant(
                    ObjectMessage::parse(payload)
                        .context(concat!("invalid ", $name, " attributes"))
                        .map_err(malformed($name))?,
                )
            };
        }
        Ok(match kind {
            NFT_MSG_NEWTABLE => object!(NewTable, "NEWTABLE"),
            NFT_MSG_GETTABLE => object!(GetTable, "GETTABLE"),
            NFT_MSG_DELTABLE => object!(DeleteTable, "DELTABLE"),
            NFT_MSG_NEWCHAIN => object!(NewChain, "NEWCHAIN"),
            NFT_MSG_GETCHAIN => object!(GetChain, "GETCHAIN"),
            NFT_MSG_DELCHAIN => object!(DeleteChain, "DELCHAIN"),
            NFT_MSG_NEWRULE => object!(NewRule, "NEWRULE"),
            NFT_MSG_GETRULE => object!(GetRule, "GETRULE"),
            NFT_MSG_DELRULE => object!(DeleteRule, "DELRULE"),
            NFT_MSG_NEWSET => object!(NewSet, "NEWSET"),
            NFT_MSG_GETSET => object!(GetSet, "GETSET"),
            NFT_MSG_DELSET => object!(DeleteSet, "DELSET"),
            NFT_MSG_NEWSETELEM => object!(NewSetElement, "NEWSETELEM"),
            NFT_MSG_GETSETELEM => object!(GetSetElement, "GETSETELEM"),
            NFT_MSG_DELSETELEM => object!(DeleteSetElement, "DELSETELEM"),
            kind => return Err(ParseError::UnknownKind { kind }),
        })
    }
}
