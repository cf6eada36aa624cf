//! Tables (`NFT_MSG_*TABLE`, `NFTA_TABLE_*`).

use netlink_packet_core::{
    DecodeError, DefaultNla, ErrorContext, Nla, NlaBuffer, Parseable, emit_u32_be, emit_u64_be,
    parse_u32_be, parse_u64_be,
};

use super::attribute::{emit_string, parse_string, string_length};
use super::header::ObjectMessage;

pub type TableMessage = ObjectMessage<TableAttribute>;

const NFTA_TABLE_NAME: u16 = 1;
const NFTA_TABLE_FLAGS: u16 = 2;
const NFTA_TABLE_USE: u16 = 3;
const NFTA_TABLE_HANDLE: u16 = 4;
const NFTA_TABLE_USERDATA: u16 = 6;
const NFTA_TABLE_OWNER: u16 = 7;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TableAttribute {
    /// `NFTA_TABLE_NAME`
    Name(String),
    /// `NFTA_TABLE_FLAGS` (NFT_TABLE_F_*)
    Flags(u32),
    /// `NFTA_TABLE_USE`: how many chains the table holds (kernel only).
    Use(u32),
    /// `NFTA_TABLE_HANDLE` (kernel only).
    Handle(u64),
    /// `NFTA_TABLE_USERDATA`
    UserData(Vec<u8>),
    /// `NFTA_TABLE_OWNER`: the netlink port of the process owning it.
    Owner(u32),
    Other(DefaultNla),
}

impl Nla for TableAttribute {
    fn value_len(&self) -> usize {
        match self {
            Self::Name(name) => string_length(name),
            Self::Flags(_) | Self::Use(_) | Self::Owner(_) => 4,
            Self::Handle(_) => 8,
            Self::UserData(bytes) => bytes.len(),
            Self::Other(attribute) => attribute.value_len(),
        }
    }

    fn kind(&self) -> u16 {
        match self {
            Self::Name(_) => NFTA_TABLE_NAME,
            Self::Flags(_) => NFTA_TABLE_FLAGS,
            Self::Use(_) => NFTA_TABLE_USE,
            Self::Handle(_) => NFTA_TABLE_HANDLE,
            Self::UserData(_) => NFTA_TABLE_USERDATA,
            Self::Owner(_) => NFTA_TABLE_OWNER,
            Self::Other(attribute) => attribute.kind(),
        }
    }

    fn emit_value(&self, buffer: &mut [u8]) {
        match self {
            Self::Name(name) => emit_string(buffer, name),
            Self::Flags(value) | Self::Use(value) | Self::Owner(value) => {
                emit_u32_be(buffer, *value).expect("4 bytes")
            }
            Self::Handle(value) => emit_u64_be(buffer, *value).expect("8 bytes"),
            Self::UserData(bytes) => buffer.copy_from_slice(bytes),
            Self::Other(attribute) => attribute.emit_value(buffer),
        }
    }
}

impl<'a, T: AsRef<[u8]> + ?Sized> Parseable<NlaBuffer<&'a T>> for TableAttribute {
    fn parse(buffer: &NlaBuffer<&'a T>) -> Result<Self, DecodeError> {
        let payload = buffer.value();
        Ok(match buffer.kind() {
            NFTA_TABLE_NAME => {
                Self::Name(parse_string(payload).context("invalid NFTA_TABLE_NAME value")?)
            }
            NFTA_TABLE_FLAGS => {
                Self::Flags(parse_u32_be(payload).context("invalid NFTA_TABLE_FLAGS value")?)
            }
            NFTA_TABLE_USE => {
                Self::Use(parse_u32_be(payload).context("invalid NFTA_TABLE_USE value")?)
            }
            NFTA_TABLE_HANDLE => {
                Self::Handle(parse_u64_be(payload).context("invalid NFTA_TABLE_HANDLE value")?)
            }
            NFTA_TABLE_USERDATA => Self::UserData(payload.to_vec()),
            NFTA_TABLE_OWNER => {
                Self::Owner(parse_u32_be(payload).context("invalid NFTA_TABLE_OWNER value")?)
            }
            _ => Self::Other(DefaultNla::parse(buffer).context("invalid NFTA_TABLE attribute")?),
        })
    }
}
