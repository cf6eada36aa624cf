//! A rule's expressions: each an element of `NFTA_RULE_EXPRESSIONS`
//! holding its name (`NFTA_EXPR_NAME`) and its data (`NFTA_EXPR_DATA`),
//! whose attributes depend on the name. The five keepalived's drop rules
//! use are typed; others keep their data as they came.

use netlink_packet_core::{
    DecodeError, DefaultNla, Emitable, ErrorContext, NLA_F_NESTED, Nla, NlaBuffer, NlasIterator,
    Parseable, emit_u32_be, parse_u32_be,
};

use super::attribute::{
    emit_nested, emit_string, nested_length, parse_nested, parse_string, string_length,
};
use super::data::DataAttribute;

const NFTA_LIST_ELEM: u16 = 1;
const NFTA_EXPR_NAME: u16 = 1;
const NFTA_EXPR_DATA: u16 = 2;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Expression {
    /// `payload`: loads bytes of a packet header into a register.
    Payload(Vec<PayloadAttribute>),
    /// `cmp`: compares a register with data.
    Cmp(Vec<CmpAttribute>),
    /// `bitwise`: masks (and xors) a register.
    Bitwise(Vec<BitwiseAttribute>),
    /// `lookup`: whether a register's value is in a set.
    Lookup(Vec<LookupAttribute>),
    /// `immediate`: loads data or a verdict into a register.
    Immediate(Vec<ImmediateAttribute>),
    /// Any other expression (`counter`, `meta`...), its data unparsed.
    Other {
        name: String,
        data: Option<Vec<DefaultNla>>,
    },
}

impl Expression {
    pub fn name(&self) -> &str {
        match self {
            Self::Payload(_) => "payload",
            Self::Cmp(_) => "cmp",
            Self::Bitwise(_) => "bitwise",
            Self::Lookup(_) => "lookup",
            Self::Immediate(_) => "immediate",
            Self::Other { name, .. } => name,
        }
    }

    /// The length of `NFTA_EXPR_DATA`'s value, if there is one.
    fn data_length(&self) -> Option<usize> {
        Some(match self {
            Self::Payload(nest) => nested_length(nest),
            Self::Cmp(nest) => nested_length(nest),
            Self::Bitwise(nest) => nested_length(nest),
            Self::Lookup(nest) => nested_length(nest),
            Self::Immediate(nest) => nested_length(nest),
            Self::Other { data, .. } => nested_length(data.as_ref()?),
        })
    }

    fn emit_data(&self, buffer: &mut [u8]) {
        match self {
            Self::Payload(nest) => emit_nested(nest, buffer),
            Self::Cmp(nest) => emit_nested(nest, buffer),
            Self::Bitwise(nest) => emit_nested(nest, buffer),
            Self::Lookup(nest) => emit_nested(nest, buffer),
            Self::Immediate(nest) => emit_nested(nest, buffer),
            Self::Other { data, .. } => {
                if let Some(data) = data {
                    emit_nested(data, buffer)
                }
            }
        }
    }
}

/// `NFTA_EXPR_NAME` and `NFTA_EXPR_DATA`, as the list element holds them.
struct NameAttribute<'a>(&'a str);

impl Nla for NameAttribute<'_> {
    fn value_len(&self) -> usize {
        string_length(self.0)
    }

    fn kind(&self) -> u16 {
        NFTA_EXPR_NAME
    }

    fn emit_value(&self, buffer: &mut [u8]) {
        emit_string(buffer, self.0)
    }
}

struct DataOf<'a>(&'a Expression, usize);

impl Nla for DataOf<'_> {
    fn value_len(&self) -> usize {
        self.1
    }

    fn kind(&self) -> u16 {
        NFTA_EXPR_DATA | NLA_F_NESTED
    }

    fn emit_value(&self, buffer: &mut [u8]) {
        self.0.emit_data(buffer)
    }
}

impl Nla for Expression {
    fn value_len(&self) -> usize {
        NameAttribute(self.name()).buffer_len()
            + self
                .data_length()
                .map_or(0, |length| DataOf(self, length).buffer_len())
    }

    fn kind(&self) -> u16 {
        NFTA_LIST_ELEM | NLA_F_NESTED
    }

    fn emit_value(&self, buffer: &mut [u8]) {
        let name = NameAttribute(self.name());
        let split = name.buffer_len();
        name.emit(&mut buffer[..split]);
        if let Some(length) = self.data_length() {
            DataOf(self, length).emit(&mut buffer[split..]);
        }
    }
}

impl<'a, T: AsRef<[u8]> + ?Sized> Parseable<NlaBuffer<&'a T>> for Expression {
    fn parse(buffer: &NlaBuffer<&'a T>) -> Result<Self, DecodeError> {
        let mut name = None;
        let mut data = None;
        for attribute in NlasIterator::new(buffer.value()) {
            let attribute = attribute.context("invalid expression")?;
            match attribute.kind() {
                NFTA_EXPR_NAME if name.is_none() && data.is_none() => {
                    name = Some(
                        parse_string(attribute.value()).context("invalid NFTA_EXPR_NAME value")?,
                    );
                }
                NFTA_EXPR_DATA if name.is_some() && data.is_none() => {
                    // The value borrowed from the message rather than from
                    // the attribute's view of it (the iterator checked the
                    // length).
                    let length = usize::from(attribute.length());
                    data = Some(&attribute.into_inner()[4..length]);
                }
                // Written back, anything else would come out elsewhere or
                // not at all.
                kind => {
                    return Err(DecodeError::from(format!(
                        "expression attribute {kind} out of place (name {name:?})"
                    )));
                }
            }
        }
        let name = name.ok_or_else(|| DecodeError::from("expression without NFTA_EXPR_NAME"))?;
        Ok(match name.as_str() {
            "payload" => Self::Payload(
                parse_nested(required(data, &name)?).context("invalid payload expression data")?,
            ),
            "cmp" => Self::Cmp(
                parse_nested(required(data, &name)?).context("invalid cmp expression data")?,
            ),
            "bitwise" => Self::Bitwise(
                parse_nested(required(data, &name)?).context("invalid bitwise expression data")?,
            ),
            "lookup" => Self::Lookup(
                parse_nested(required(data, &name)?).context("invalid lookup expression data")?,
            ),
            "immediate" => Self::Immediate(
                parse_nested(required(data, &name)?)
                    .context("invalid immediate expression data")?,
            ),
            _ => {
                let data = match data {
                    Some(data) => Some(
                        parse_nested(data)
                            .with_context(|| format!("invalid {name} expression data"))?,
                    ),
                    None => None,
                };
                Self::Other { name, data }
            }
        })
    }
}

/// The data of a typed expression: written back, a missing one would
/// come out as an empty nest.
fn required<'d>(data: Option<&'d [u8]>, name: &str) -> Result<&'d [u8], DecodeError> {
    data.ok_or_else(|| DecodeError::from(format!("{name} expression without its data")))
}

const NFTA_PAYLOAD_DREG: u16 = 1;
const NFTA_PAYLOAD_BASE: u16 = 2;
const NFTA_PAYLOAD_OFFSET: u16 = 3;
const NFTA_PAYLOAD_LEN: u16 = 4;
const NFTA_PAYLOAD_SREG: u16 = 5;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PayloadAttribute {
    /// `NFTA_PAYLOAD_DREG`: the register loaded.
    DestinationRegister(u32),
    /// `NFTA_PAYLOAD_BASE` (NFT_PAYLOAD_*_HEADER): which header.
    Base(u32),
    /// `NFTA_PAYLOAD_OFFSET` in the header, bytes.
    Offset(u32),
    /// `NFTA_PAYLOAD_LEN`, bytes.
    Length(u32),
    /// `NFTA_PAYLOAD_SREG`: for a payload written to the packet.
    SourceRegister(u32),
    Other(DefaultNla),
}

impl Nla for PayloadAttribute {
    fn value_len(&self) -> usize {
        match self {
            Self::Other(attribute) => attribute.value_len(),
            _ => 4,
        }
    }

    fn kind(&self) -> u16 {
        match self {
            Self::DestinationRegister(_) => NFTA_PAYLOAD_DREG,
            Self::Base(_) => NFTA_PAYLOAD_BASE,
            Self::Offset(_) => NFTA_PAYLOAD_OFFSET,
            Self::Length(_) => NFTA_PAYLOAD_LEN,
            Self::SourceRegister(_) => NFTA_PAYLOAD_SREG,
            Self::Other(attribute) => attribute.kind(),
        }
    }

    fn emit_value(&self, buffer: &mut [u8]) {
        match self {
            Self::DestinationRegister(value)
            | Self::Base(value)
            | Self::Offset(value)
            | Self::Length(value)
            | Self::SourceRegister(value) => emit_u32_be(buffer, *value).expect("4 bytes"),
            Self::Other(attribute) => attribute.emit_value(buffer),
        }
    }
}

impl<'a, T: AsRef<[u8]> + ?Sized> Parseable<NlaBuffer<&'a T>> for PayloadAttribute {
    fn parse(buffer: &NlaBuffer<&'a T>) -> Result<Self, DecodeError> {
        let number = |name: &str| {
            parse_u32_be(buffer.value()).with_context(|| format!("invalid {name} value"))
        };
        Ok(match buffer.kind() {
            NFTA_PAYLOAD_DREG => Self::DestinationRegister(number("NFTA_PAYLOAD_DREG")?),
            NFTA_PAYLOAD_BASE => Self::Base(number("NFTA_PAYLOAD_BASE")?),
            NFTA_PAYLOAD_OFFSET => Self::Offset(number("NFTA_PAYLOAD_OFFSET")?),
            NFTA_PAYLOAD_LEN => Self::Length(number("NFTA_PAYLOAD_LEN")?),
            NFTA_PAYLOAD_SREG => Self::SourceRegister(number("NFTA_PAYLOAD_SREG")?),
            _ => Self::Other(DefaultNla::parse(buffer).context("invalid NFTA_PAYLOAD attribute")?),
        })
    }
}

const NFTA_CMP_SREG: u16 = 1;
const NFTA_CMP_OP: u16 = 2;
const NFTA_CMP_DATA: u16 = 3;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CmpAttribute {
    /// `NFTA_CMP_SREG`
    SourceRegister(u32),
    /// `NFTA_CMP_OP` (NFT_CMP_EQ...)
    Operation(u32),
    /// `NFTA_CMP_DATA`
    Data(Vec<DataAttribute>),
    Other(DefaultNla),
}

impl Nla for CmpAttribute {
    fn value_len(&self) -> usize {
        match self {
            Self::SourceRegister(_) | Self::Operation(_) => 4,
            Self::Data(nest) => nested_length(nest),
            Self::Other(attribute) => attribute.value_len(),
        }
    }

    fn kind(&self) -> u16 {
        match self {
            Self::SourceRegister(_) => NFTA_CMP_SREG,
            Self::Operation(_) => NFTA_CMP_OP,
            Self::Data(_) => NFTA_CMP_DATA | NLA_F_NESTED,
            Self::Other(attribute) => attribute.kind(),
        }
    }

    fn emit_value(&self, buffer: &mut [u8]) {
        match self {
            Self::SourceRegister(value) | Self::Operation(value) => {
                emit_u32_be(buffer, *value).expect("4 bytes")
            }
            Self::Data(nest) => emit_nested(nest, buffer),
            Self::Other(attribute) => attribute.emit_value(buffer),
        }
    }
}

impl<'a, T: AsRef<[u8]> + ?Sized> Parseable<NlaBuffer<&'a T>> for CmpAttribute {
    fn parse(buffer: &NlaBuffer<&'a T>) -> Result<Self, DecodeError> {
        let payload = buffer.value();
        Ok(match buffer.kind() {
            NFTA_CMP_SREG => {
                Self::SourceRegister(parse_u32_be(payload).context("invalid NFTA_CMP_SREG value")?)
            }
            NFTA_CMP_OP => {
                Self::Operation(parse_u32_be(payload).context("invalid NFTA_CMP_OP value")?)
            }
            NFTA_CMP_DATA => {
                Self::Data(parse_nested(payload).context("invalid NFTA_CMP_DATA value")?)
            }
            _ => Self::Other(DefaultNla::parse(buffer).context("invalid NFTA_CMP attribute")?),
        })
    }
}

const NFTA_BITWISE_SREG: u16 = 1;
const NFTA_BITWISE_DREG: u16 = 2;
const NFTA_BITWISE_LEN: u16 = 3;
const NFTA_BITWISE_MASK: u16 = 4;
const NFTA_BITWISE_XOR: u16 = 5;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BitwiseAttribute {
    /// `NFTA_BITWISE_SREG`
    SourceRegister(u32),
    /// `NFTA_BITWISE_DREG`
    DestinationRegister(u32),
    /// `NFTA_BITWISE_LEN`, bytes.
    Length(u32),
    /// `NFTA_BITWISE_MASK`: register = (register & mask) ^ xor.
    Mask(Vec<DataAttribute>),
    /// `NFTA_BITWISE_XOR`
    Xor(Vec<DataAttribute>),
    Other(DefaultNla),
}

impl Nla for BitwiseAttribute {
    fn value_len(&self) -> usize {
        match self {
            Self::SourceRegister(_) | Self::DestinationRegister(_) | Self::Length(_) => 4,
            Self::Mask(nest) | Self::Xor(nest) => nested_length(nest),
            Self::Other(attribute) => attribute.value_len(),
        }
    }

    fn kind(&self) -> u16 {
        match self {
            Self::SourceRegister(_) => NFTA_BITWISE_SREG,
            Self::DestinationRegister(_) => NFTA_BITWISE_DREG,
            Self::Length(_) => NFTA_BITWISE_LEN,
            Self::Mask(_) => NFTA_BITWISE_MASK | NLA_F_NESTED,
            Self::Xor(_) => NFTA_BITWISE_XOR | NLA_F_NESTED,
            Self::Other(attribute) => attribute.kind(),
        }
    }

    fn emit_value(&self, buffer: &mut [u8]) {
        match self {
            Self::SourceRegister(value)
            | Self::DestinationRegister(value)
            | Self::Length(value) => emit_u32_be(buffer, *value).expect("4 bytes"),
            Self::Mask(nest) | Self::Xor(nest) => emit_nested(nest, buffer),
            Self::Other(attribute) => attribute.emit_value(buffer),
        }
    }
}

impl<'a, T: AsRef<[u8]> + ?Sized> Parseable<NlaBuffer<&'a T>> for BitwiseAttribute {
    fn parse(buffer: &NlaBuffer<&'a T>) -> Result<Self, DecodeError> {
        let payload = buffer.value();
        let number =
            |name: &str| parse_u32_be(payload).with_context(|| format!("invalid {name} value"));
        Ok(match buffer.kind() {
            NFTA_BITWISE_SREG => Self::SourceRegister(number("NFTA_BITWISE_SREG")?),
            NFTA_BITWISE_DREG => Self::DestinationRegister(number("NFTA_BITWISE_DREG")?),
            NFTA_BITWISE_LEN => Self::Length(number("NFTA_BITWISE_LEN")?),
            NFTA_BITWISE_MASK => {
                Self::Mask(parse_nested(payload).context("invalid NFTA_BITWISE_MASK value")?)
            }
            NFTA_BITWISE_XOR => {
                Self::Xor(parse_nested(payload).context("invalid NFTA_BITWISE_XOR value")?)
            }
            _ => Self::Other(DefaultNla::parse(buffer).context("invalid NFTA_BITWISE attribute")?),
        })
    }
}

const NFTA_LOOKUP_SET: u16 = 1;
const NFTA_LOOKUP_SREG: u16 = 2;
const NFTA_LOOKUP_DREG: u16 = 3;
const NFTA_LOOKUP_SET_ID: u16 = 4;
const NFTA_LOOKUP_FLAGS: u16 = 5;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LookupAttribute {
    /// `NFTA_LOOKUP_SET`: the set's name.
    Set(String),
    /// `NFTA_LOOKUP_SREG`: the register holding the key.
    SourceRegister(u32),
    /// `NFTA_LOOKUP_DREG`: where a map's value goes.
    DestinationRegister(u32),
    /// `NFTA_LOOKUP_SET_ID`: the set's id in this batch.
    SetId(u32),
    /// `NFTA_LOOKUP_FLAGS` (NFT_LOOKUP_F_INV)
    Flags(u32),
    Other(DefaultNla),
}

impl Nla for LookupAttribute {
    fn value_len(&self) -> usize {
        match self {
            Self::Set(name) => string_length(name),
            Self::Other(attribute) => attribute.value_len(),
            _ => 4,
        }
    }

    fn kind(&self) -> u16 {
        match self {
            Self::Set(_) => NFTA_LOOKUP_SET,
            Self::SourceRegister(_) => NFTA_LOOKUP_SREG,
            Self::DestinationRegister(_) => NFTA_LOOKUP_DREG,
            Self::SetId(_) => NFTA_LOOKUP_SET_ID,
            Self::Flags(_) => NFTA_LOOKUP_FLAGS,
            Self::Other(attribute) => attribute.kind(),
        }
    }

    fn emit_value(&self, buffer: &mut [u8]) {
        match self {
            Self::Set(name) => emit_string(buffer, name),
            Self::SourceRegister(value)
            | Self::DestinationRegister(value)
            | Self::SetId(value)
            | Self::Flags(value) => emit_u32_be(buffer, *value).expect("4 bytes"),
            Self::Other(attribute) => attribute.emit_value(buffer),
        }
    }
}

impl<'a, T: AsRef<[u8]> + ?Sized> Parseable<NlaBuffer<&'a T>> for LookupAttribute {
    fn parse(buffer: &NlaBuffer<&'a T>) -> Result<Self, DecodeError> {
        let payload = buffer.value();
        let number =
            |name: &str| parse_u32_be(payload).with_context(|| format!("invalid {name} value"));
        Ok(match buffer.kind() {
            NFTA_LOOKUP_SET => {
                Self::Set(parse_string(payload).context("invalid NFTA_LOOKUP_SET value")?)
            }
            NFTA_LOOKUP_SREG => Self::SourceRegister(number("NFTA_LOOKUP_SREG")?),
            NFTA_LOOKUP_DREG => Self::DestinationRegister(number("NFTA_LOOKUP_DREG")?),
            NFTA_LOOKUP_SET_ID => Self::SetId(number("NFTA_LOOKUP_SET_ID")?),
            NFTA_LOOKUP_FLAGS => Self::Flags(number("NFTA_LOOKUP_FLAGS")?),
            _ => Self::Other(DefaultNla::parse(buffer).context("invalid NFTA_LOOKUP attribute")?),
        })
    }
}

const NFTA_IMMEDIATE_DREG: u16 = 1;
const NFTA_IMMEDIATE_DATA: u16 = 2;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ImmediateAttribute {
    /// `NFTA_IMMEDIATE_DREG` (NFT_REG_VERDICT for a verdict).
    DestinationRegister(u32),
    /// `NFTA_IMMEDIATE_DATA`
    Data(Vec<DataAttribute>),
    Other(DefaultNla),
}

impl Nla for ImmediateAttribute {
    fn value_len(&self) -> usize {
        match self {
            Self::DestinationRegister(_) => 4,
            Self::Data(nest) => nested_length(nest),
            Self::Other(attribute) => attribute.value_len(),
        }
    }

    fn kind(&self) -> u16 {
        match self {
            Self::DestinationRegister(_) => NFTA_IMMEDIATE_DREG,
            Self::Data(_) => NFTA_IMMEDIATE_DATA | NLA_F_NESTED,
            Self::Other(attribute) => attribute.kind(),
        }
    }

    fn emit_value(&self, buffer: &mut [u8]) {
        match self {
            Self::DestinationRegister(value) => emit_u32_be(buffer, *value).expect("4 bytes"),
            Self::Data(nest) => emit_nested(nest, buffer),
            Self::Other(attribute) => attribute.emit_value(buffer),
        }
    }
}

impl<'a, T: AsRef<[u8]> + ?Sized> Parseable<NlaBuffer<&'a T>> for ImmediateAttribute {
    fn parse(buffer: &NlaBuffer<&'a T>) -> Result<Self, DecodeError> {
        let payload = buffer.value();
        Ok(match buffer.kind() {
            NFTA_IMMEDIATE_DREG => Self::DestinationRegister(
                parse_u32_be(payload).context("invalid NFTA_IMMEDIATE_DREG value")?,
            ),
            NFTA_IMMEDIATE_DATA => {
                Self::Data(parse_nested(payload).context("invalid NFTA_IMMEDIATE_DATA value")?)
            }
            _ => {
                Self::Other(DefaultNla::parse(buffer).context("invalid NFTA_IMMEDIATE attribute")?)
            }
        })
    }
}
