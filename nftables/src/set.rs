//! Sets (`NFT_MSG_*SET`, `NFTA_SET_*`).

use netlink_packet_core::{
    DecodeError, DefaultNla, ErrorContext, Nla, NlaBuffer, Parseable, emit_u32_be, emit_u64_be,
    parse_u32_be, parse_u64_be,
};

use super::attribute::{emit_string, parse_string, string_length};
use super::header::ObjectMessage;

pub type SetMessage = ObjectMessage<SetAttribute>;

const NFTA_SET_TABLE: u16 = 1;
const NFTA_SET_NAME: u16 = 2;
const NFTA_SET_FLAGS: u16 = 3;
const NFTA_SET_KEY_TYPE: u16 = 4;
const NFTA_SET_KEY_LEN: u16 = 5;
const NFTA_SET_DATA_TYPE: u16 = 6;
const NFTA_SET_DATA_LEN: u16 = 7;
const NFTA_SET_POLICY: u16 = 8;
const NFTA_SET_ID: u16 = 10;
const NFTA_SET_TIMEOUT: u16 = 11;
const NFTA_SET_GC_INTERVAL: u16 = 12;
const NFTA_SET_USERDATA: u16 = 13;
const NFTA_SET_HANDLE: u16 = 16;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SetAttribute {
    /// `NFTA_SET_TABLE`
    Table(String),
    /// `NFTA_SET_NAME`
    Name(String),
    /// `NFTA_SET_FLAGS` (NFT_SET_*: constant, interval, map...)
    Flags(u32),
    /// `NFTA_SET_KEY_TYPE`: nft's data type of the keys, which the
    /// kernel keeps for nft to show them (7 ipv4_addr, 8 ipv6_addr...).
    KeyType(u32),
    /// `NFTA_SET_KEY_LEN`, bytes.
    KeyLength(u32),
    /// `NFTA_SET_DATA_TYPE` (maps)
    DataType(u32),
    /// `NFTA_SET_DATA_LEN` (maps)
    DataLength(u32),
    /// `NFTA_SET_POLICY` (NFT_SET_POL_*)
    Policy(u32),
    /// `NFTA_SET_ID`: names the set within its batch.
    Id(u32),
    /// `NFTA_SET_TIMEOUT`, milliseconds.
    Timeout(u64),
    /// `NFTA_SET_GC_INTERVAL`, milliseconds.
    GcInterval(u32),
    /// `NFTA_SET_USERDATA`: libnftnl's TLVs (one byte of type, one of
    /// length), which the kernel keeps for nft.
    UserData(Vec<u8>),
    /// `NFTA_SET_HANDLE` (kernel only).
    Handle(u64),
    Other(DefaultNla),
}

impl Nla for SetAttribute {
    fn value_len(&self) -> usize {
        match self {
            Self::Table(name) | Self::Name(name) => string_length(name),
            Self::Flags(_)
            | Self::KeyType(_)
            | Self::KeyLength(_)
            | Self::DataType(_)
            | Self::DataLength(_)
            | Self::Policy(_)
            | Self::Id(_)
            | Self::GcInterval(_) => 4,
            Self::Timeout(_) | Self::Handle(_) => 8,
            Self::UserData(bytes) => bytes.len(),
            Self::Other(attribute) => attribute.value_len(),
        }
    }

    fn kind(&self) -> u16 {
        match self {
            Self::Table(_) => NFTA_SET_TABLE,
            Self::Name(_) => NFTA_SET_NAME,
            Self::Flags(_) => NFTA_SET_FLAGS,
            Self::KeyType(_) => NFTA_SET_KEY_TYPE,
            Self::KeyLength(_) => NFTA_SET_KEY_LEN,
            Self::DataType(_) => NFTA_SET_DATA_TYPE,
            Self::DataLength(_) => NFTA_SET_DATA_LEN,
            Self::Policy(_) => NFTA_SET_POLICY,
            Self::Id(_) => NFTA_SET_ID,
            Self::Timeout(_) => NFTA_SET_TIMEOUT,
            Self::GcInterval(_) => NFTA_SET_GC_INTERVAL,
            Self::UserData(_) => NFTA_SET_USERDATA,
            Self::Handle(_) => NFTA_SET_HANDLE,
            Self::Other(attribute) => attribute.kind(),
        }
    }

    fn emit_value(&self, buffer: &mut [u8]) {
        match self {
            Self::Table(name) | Self::Name(name) => emit_string(buffer, name),
            Self::Flags(value)
            | Self::KeyType(value)
            | Self::KeyLength(value)
            | Self::DataType(value)
            | Self::DataLength(value)
            | Self::Policy(value)
            | Self::Id(value)
            | Self::GcInterval(value) => emit_u32_be(buffer, *value).expect("4 bytes"),
            Self::Timeout(value) | Self::Handle(value) => {
                emit_u64_be(buffer, *value).expect("8 bytes")
            }
            Self::UserData(bytes) => buffer.copy_from_slice(bytes),
            Self::Other(attribute) => attribute.emit_value(buffer),
        }
    }
}

impl<'a, T: AsRef<[u8]> + ?Sized> Parseable<NlaBuffer<&'a T>> for SetAttribute {
    fn parse(buffer: &NlaBuffer<&'a T>) -> Result<Self, DecodeError> {
        let payload = buffer.value();
        let number =
            |name: &str| parse_u32_be(payload).with_context(|| format!("invalid {name} value"));
        Ok(match buffer.kind() {
            NFTA_SET_TABLE => {
                Self::Table(parse_string(payload).context("invalid NFTA_SET_TABLE value")?)
            }
            NFTA_SET_NAME => {
                Self::Name(parse_string(payload).context("invalid NFTA_SET_NAME value")?)
            }
            NFTA_SET_FLAGS => Self::Flags(number("NFTA_SET_FLAGS")?),
            NFTA_SET_KEY_TYPE => Self::KeyType(number("NFTA_SET_KEY_TYPE")?),
            NFTA_SET_KEY_LEN => Self::KeyLength(number("NFTA_SET_KEY_LEN")?),
            NFTA_SET_DATA_TYPE => Self::DataType(number("NFTA_SET_DATA_TYPE")?),
            NFTA_SET_DATA_LEN => Self::DataLength(number("NFTA_SET_DATA_LEN")?),
            NFTA_SET_POLICY => Self::Policy(number("NFTA_SET_POLICY")?),
            NFTA_SET_ID => Self::Id(number("NFTA_SET_ID")?),
            NFTA_SET_TIMEOUT => {
                Self::Timeout(parse_u64_be(payload).context("invalid NFTA_SET_TIMEOUT value")?)
            }
            NFTA_SET_GC_INTERVAL => Self::GcInterval(number("NFTA_SET_GC_INTERVAL")?),
            NFTA_SET_USERDATA => Self::UserData(payload.to_vec()),
            NFTA_SET_HANDLE => {
                Self::Handle(parse_u64_be(payload).context("invalid NFTA_SET_HANDLE value")?)
            }
            _ => Self::Other(DefaultNla::parse(buffer).context("invalid NFTA_SET attribute")?),
        })
    }
}
