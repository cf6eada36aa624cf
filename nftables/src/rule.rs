//! Rules (`NFT_MSG_*RULE`, `NFTA_RULE_*`): a chain's list of expressions.

use netlink_packet_core::{
    DecodeError, DefaultNla, ErrorContext, NLA_F_NESTED, Nla, NlaBuffer, Parseable, emit_u32_be,
    emit_u64_be, parse_u32_be, parse_u64_be,
};

use super::attribute::{
    emit_nested, emit_string, nested_length, parse_nested, parse_string, string_length,
};
use super::expression::Expression;
use super::header::ObjectMessage;

pub type RuleMessage = ObjectMessage<RuleAttribute>;

const NFTA_RULE_TABLE: u16 = 1;
const NFTA_RULE_CHAIN: u16 = 2;
const NFTA_RULE_HANDLE: u16 = 3;
const NFTA_RULE_EXPRESSIONS: u16 = 4;
const NFTA_RULE_POSITION: u16 = 6;
const NFTA_RULE_USERDATA: u16 = 7;
const NFTA_RULE_ID: u16 = 9;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RuleAttribute {
    /// `NFTA_RULE_TABLE`
    Table(String),
    /// `NFTA_RULE_CHAIN`
    Chain(String),
    /// `NFTA_RULE_HANDLE` (kernel only).
    Handle(u64),
    /// `NFTA_RULE_EXPRESSIONS`, run in order.
    Expressions(Vec<Expression>),
    /// `NFTA_RULE_POSITION`: the handle of the rule to insert after.
    Position(u64),
    /// `NFTA_RULE_USERDATA` (nft keeps comments there).
    UserData(Vec<u8>),
    /// `NFTA_RULE_ID`: names the rule within its batch.
    Id(u32),
    Other(DefaultNla),
}

impl Nla for RuleAttribute {
    fn value_len(&self) -> usize {
        match self {
            Self::Table(name) | Self::Chain(name) => string_length(name),
            Self::Handle(_) | Self::Position(_) => 8,
            Self::Expressions(expressions) => nested_length(expressions),
            Self::UserData(bytes) => bytes.len(),
            Self::Id(_) => 4,
            Self::Other(attribute) => attribute.value_len(),
        }
    }

    fn kind(&self) -> u16 {
        match self {
            Self::Table(_) => NFTA_RULE_TABLE,
            Self::Chain(_) => NFTA_RULE_CHAIN,
            Self::Handle(_) => NFTA_RULE_HANDLE,
            Self::Expressions(_) => NFTA_RULE_EXPRESSIONS | NLA_F_NESTED,
            Self::Position(_) => NFTA_RULE_POSITION,
            Self::UserData(_) => NFTA_RULE_USERDATA,
            Self::Id(_) => NFTA_RULE_ID,
            Self::Other(attribute) => attribute.kind(),
        }
    }

    fn emit_value(&self, buffer: &mut [u8]) {
        match self {
            Self::Table(name) | Self::Chain(name) => emit_string(buffer, name),
            Self::Handle(value) | Self::Position(value) => {
                emit_u64_be(buffer, *value).expect("8 bytes")
            }
            Self::Expressions(expressions) => emit_nested(expressions, buffer),
            Self::UserData(bytes) => buffer.copy_from_slice(bytes),
            Self::Id(value) => emit_u32_be(buffer, *value).expect("4 bytes"),
            Self::Other(attribute) => attribute.emit_value(buffer),
        }
    }
}

impl<'a, T: AsRef<[u8]> + ?Sized> Parseable<NlaBuffer<&'a T>> for RuleAttribute {
    fn parse(buffer: &NlaBuffer<&'a T>) -> Result<Self, DecodeError> {
        let payload = buffer.value();
        Ok(match buffer.kind() {
            NFTA_RULE_TABLE => {
                Self::Table(parse_string(payload).context("invalid NFTA_RULE_TABLE value")?)
            }
            NFTA_RULE_CHAIN => {
                Self::Chain(parse_string(payload).context("invalid NFTA_RULE_CHAIN value")?)
            }
            NFTA_RULE_HANDLE => {
                Self::Handle(parse_u64_be(payload).context("invalid NFTA_RULE_HANDLE value")?)
            }
            NFTA_RULE_EXPRESSIONS => Self::Expressions(
                parse_nested(payload).context("invalid NFTA_RULE_EXPRESSIONS value")?,
            ),
            NFTA_RULE_POSITION => {
                Self::Position(parse_u64_be(payload).context("invalid NFTA_RULE_POSITION value")?)
            }
            NFTA_RULE_USERDATA => Self::UserData(payload.to_vec()),
            NFTA_RULE_ID => Self::Id(parse_u32_be(payload).context("invalid NFTA_RULE_ID value")?),
            _ => Self::Other(DefaultNla::parse(buffer).context("invalid NFTA_RULE attribute")?),
        })
    }
}
