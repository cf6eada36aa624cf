//! Chains (`NFT_MSG_*CHAIN`, `NFTA_CHAIN_*`) and their hooks
//! (`NFTA_HOOK_*`).

use netlink_packet_core::{
    DecodeError, DefaultNla, ErrorContext, NLA_F_NESTED, Nla, NlaBuffer, Parseable, emit_i32_be,
    emit_u32_be, emit_u64_be, parse_i32_be, parse_u32_be, parse_u64_be,
};

use super::attribute::{
    emit_nested, emit_string, nested_length, parse_nested, parse_string, string_length,
};
use super::header::ObjectMessage;

pub type ChainMessage = ObjectMessage<ChainAttribute>;

const NFTA_CHAIN_TABLE: u16 = 1;
const NFTA_CHAIN_HANDLE: u16 = 2;
const NFTA_CHAIN_NAME: u16 = 3;
const NFTA_CHAIN_HOOK: u16 = 4;
const NFTA_CHAIN_POLICY: u16 = 5;
const NFTA_CHAIN_USE: u16 = 6;
const NFTA_CHAIN_TYPE: u16 = 7;
const NFTA_CHAIN_FLAGS: u16 = 10;
const NFTA_CHAIN_ID: u16 = 11;
const NFTA_CHAIN_USERDATA: u16 = 12;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChainAttribute {
    /// `NFTA_CHAIN_TABLE`
    Table(String),
    /// `NFTA_CHAIN_HANDLE` (kernel only).
    Handle(u64),
    /// `NFTA_CHAIN_NAME`
    Name(String),
    /// `NFTA_CHAIN_HOOK`: where a base chain is attached.
    Hook(Vec<HookAttribute>),
    /// `NFTA_CHAIN_POLICY`: NF_ACCEPT or NF_DROP, for base chains.
    Policy(u32),
    /// `NFTA_CHAIN_USE`: how many rules jump to it (kernel only).
    Use(u32),
    /// `NFTA_CHAIN_TYPE`: "filter", "nat" or "route".
    Type(String),
    /// `NFTA_CHAIN_FLAGS` (NFT_CHAIN_*)
    Flags(u32),
    /// `NFTA_CHAIN_ID`
    Id(u32),
    /// `NFTA_CHAIN_USERDATA`
    UserData(Vec<u8>),
    Other(DefaultNla),
}

impl Nla for ChainAttribute {
    fn value_len(&self) -> usize {
        match self {
            Self::Table(name) | Self::Name(name) | Self::Type(name) => string_length(name),
            Self::Handle(_) => 8,
            Self::Hook(nest) => nested_length(nest),
            Self::Policy(_) | Self::Use(_) | Self::Flags(_) | Self::Id(_) => 4,
            Self::UserData(bytes) => bytes.len(),
            Self::Other(attribute) => attribute.value_len(),
        }
    }

    fn kind(&self) -> u16 {
        match self {
            Self::Table(_) => NFTA_CHAIN_TABLE,
            Self::Handle(_) => NFTA_CHAIN_HANDLE,
            Self::Name(_) => NFTA_CHAIN_NAME,
            Self::Hook(_) => NFTA_CHAIN_HOOK | NLA_F_NESTED,
            Self::Policy(_) => NFTA_CHAIN_POLICY,
            Self::Use(_) => NFTA_CHAIN_USE,
            Self::Type(_) => NFTA_CHAIN_TYPE,
            Self::Flags(_) => NFTA_CHAIN_FLAGS,
            Self::Id(_) => NFTA_CHAIN_ID,
            Self::UserData(_) => NFTA_CHAIN_USERDATA,
            Self::Other(attribute) => attribute.kind(),
        }
    }

    fn emit_value(&self, buffer: &mut [u8]) {
        match self {
            Self::Table(name) | Self::Name(name) | Self::Type(name) => emit_string(buffer, name),
            Self::Handle(value) => emit_u64_be(buffer, *value).expect("8 bytes"),
            Self::Hook(nest) => emit_nested(nest, buffer),
            Self::Policy(value) | Self::Use(value) | Self::Flags(value) | Self::Id(value) => {
                emit_u32_be(buffer, *value).expect("4 bytes")
            }
            Self::UserData(bytes) => buffer.copy_from_slice(bytes),
            Self::Other(attribute) => attribute.emit_value(buffer),
        }
    }
}

impl<'a, T: AsRef<[u8]> + ?Sized> Parseable<NlaBuffer<&'a T>> for ChainAttribute {
    fn parse(buffer: &NlaBuffer<&'a T>) -> Result<Self, DecodeError> {
        let payload = buffer.value();
        Ok(match buffer.kind() {
            NFTA_CHAIN_TABLE => {
                Self::Table(parse_string(payload).context("invalid NFTA_CHAIN_TABLE value")?)
            }
            NFTA_CHAIN_HANDLE => {
                Self::Handle(parse_u64_be(payload).context("invalid NFTA_CHAIN_HANDLE value")?)
            }
            NFTA_CHAIN_NAME => {
                Self::Name(parse_string(payload).context("invalid NFTA_CHAIN_NAME value")?)
            }
            NFTA_CHAIN_HOOK => {
                Self::Hook(parse_nested(payload).context("invalid NFTA_CHAIN_HOOK value")?)
            }
            NFTA_CHAIN_POLICY => {
                Self::Policy(parse_u32_be(payload).context("invalid NFTA_CHAIN_POLICY value")?)
            }
            NFTA_CHAIN_USE => {
                Self::Use(parse_u32_be(payload).context("invalid NFTA_CHAIN_USE value")?)
            }
            NFTA_CHAIN_TYPE => {
                Self::Type(parse_string(payload).context("invalid NFTA_CHAIN_TYPE value")?)
            }
            NFTA_CHAIN_FLAGS => {
                Self::Flags(parse_u32_be(payload).context("invalid NFTA_CHAIN_FLAGS value")?)
            }
            NFTA_CHAIN_ID => {
                Self::Id(parse_u32_be(payload).context("invalid NFTA_CHAIN_ID value")?)
            }
            NFTA_CHAIN_USERDATA => Self::UserData(payload.to_vec()),
            _ => Self::Other(DefaultNla::parse(buffer).context("invalid NFTA_CHAIN attribute")?),
        })
    }
}

const NFTA_HOOK_HOOKNUM: u16 = 1;
const NFTA_HOOK_PRIORITY: u16 = 2;
const NFTA_HOOK_DEV: u16 = 3;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HookAttribute {
    /// `NFTA_HOOK_HOOKNUM`: NF_INET_LOCAL_IN, NF_INET_LOCAL_OUT...
    Number(u32),
    /// `NFTA_HOOK_PRIORITY`: lower runs first (filter is 0).
    Priority(i32),
    /// `NFTA_HOOK_DEV`: the device of a netdev or ingress chain.
    Device(String),
    Other(DefaultNla),
}

impl Nla for HookAttribute {
    fn value_len(&self) -> usize {
        match self {
            Self::Number(_) | Self::Priority(_) => 4,
            Self::Device(name) => string_length(name),
            Self::Other(attribute) => attribute.value_len(),
        }
    }

    fn kind(&self) -> u16 {
        match self {
            Self::Number(_) => NFTA_HOOK_HOOKNUM,
            Self::Priority(_) => NFTA_HOOK_PRIORITY,
            Self::Device(_) => NFTA_HOOK_DEV,
            Self::Other(attribute) => attribute.kind(),
        }
    }

    fn emit_value(&self, buffer: &mut [u8]) {
        match self {
            Self::Number(value) => emit_u32_be(buffer, *value).expect("4 bytes"),
            Self::Priority(value) => emit_i32_be(buffer, *value).expect("4 bytes"),
            Self::Device(name) => emit_string(buffer, name),
            Self::Other(attribute) => attribute.emit_value(buffer),
        }
    }
}

impl<'a, T: AsRef<[u8]> + ?Sized> Parseable<NlaBuffer<&'a T>> for HookAttribute {
    fn parse(buffer: &NlaBuffer<&'a T>) -> Result<Self, DecodeError> {
        let payload = buffer.value();
        Ok(match buffer.kind() {
            NFTA_HOOK_HOOKNUM => {
                Self::Number(parse_u32_be(payload).context("invalid NFTA_HOOK_HOOKNUM value")?)
            }
            NFTA_HOOK_PRIORITY => {
                Self::Priority(parse_i32_be(payload).context("invalid NFTA_HOOK_PRIORITY value")?)
            }
            NFTA_HOOK_DEV => {
                Self::Device(parse_string(payload).context("invalid NFTA_HOOK_DEV value")?)
            }
            _ => Self::Other(DefaultNla::parse(buffer).context("invalid NFTA_HOOK attribute")?),
        })
    }
}
