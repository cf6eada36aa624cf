//! A rule's expressions: each an element of `NFTA_RULE_EXPRESSIONS`
//! holding its name (`NFTA_EXPR_NAME`) and its data (`NFTA_EXPR_DATA`),
//! whose attributes depend on the name. Those pulse's drop rules and the
//! host agent's NAT use are typed; others keep their data as they came.
//! The constructors at the end build what nft builds for the same words.

use netlink_packet_core::{
    DecodeError, DefaultNla, Emitable, ErrorContext, NLA_F_NESTED, Nla, NlaBuffer, NlasIterator,
    Parseable, emit_u32_be, parse_u32_be,
};

use super::attribute::{
    emit_nested, emit_string, nested_length, parse_nested, parse_string, string_length,
};
use super::data::{DataAttribute, VerdictAttribute};

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
    /// `meta`: loads a packet's metadata (its input interface, its
    /// layer 4 protocol...) into a register, or sets it from one.
    Meta(Vec<MetaAttribute>),
    /// `ct`: loads a connection's tracking state into a register, or sets
    /// it (its zone) from one.
    Ct(Vec<CtAttribute>),
    /// `nat`: translates the addresses and ports registers hold.
    Nat(Vec<NatAttribute>),
    /// `dup`: sends a copy of the packet to the address and the device
    /// two registers hold.
    Dup(Vec<DupAttribute>),
    /// Any other expression (`counter`...), its data unparsed.
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
            Self::Meta(_) => "meta",
            Self::Ct(_) => "ct",
            Self::Nat(_) => "nat",
            Self::Dup(_) => "dup",
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
            Self::Meta(nest) => nested_length(nest),
            Self::Ct(nest) => nested_length(nest),
            Self::Nat(nest) => nested_length(nest),
            Self::Dup(nest) => nested_length(nest),
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
            Self::Meta(nest) => emit_nested(nest, buffer),
            Self::Ct(nest) => emit_nested(nest, buffer),
            Self::Nat(nest) => emit_nested(nest, buffer),
            Self::Dup(nest) => emit_nested(nest, buffer),
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
            "meta" => Self::Meta(
                parse_nested(required(data, &name)?).context("invalid meta expression data")?,
            ),
            "ct" => Self::Ct(
                parse_nested(required(data, &name)?).context("invalid ct expression data")?,
            ),
            "nat" => Self::Nat(
                parse_nested(required(data, &name)?).context("invalid nat expression data")?,
            ),
            "dup" => Self::Dup(
                parse_nested(required(data, &name)?).context("invalid dup expression data")?,
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
const NFTA_BITWISE_OP: u16 = 6;

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
    /// `NFTA_BITWISE_OP` (NFT_BITWISE_*: 0 is mask and xor; Linux 5.6 and
    /// later, which dump it whether or not it was sent).
    Operation(u32),
    Other(DefaultNla),
}

impl Nla for BitwiseAttribute {
    fn value_len(&self) -> usize {
        match self {
            Self::SourceRegister(_)
            | Self::DestinationRegister(_)
            | Self::Length(_)
            | Self::Operation(_) => 4,
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
            Self::Operation(_) => NFTA_BITWISE_OP,
            Self::Other(attribute) => attribute.kind(),
        }
    }

    fn emit_value(&self, buffer: &mut [u8]) {
        match self {
            Self::SourceRegister(value)
            | Self::DestinationRegister(value)
            | Self::Length(value)
            | Self::Operation(value) => emit_u32_be(buffer, *value).expect("4 bytes"),
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
            NFTA_BITWISE_OP => Self::Operation(number("NFTA_BITWISE_OP")?),
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

/// An expression's attributes that are all 32-bit big-endian numbers
/// (registers, keys, types), each beside its constant.
macro_rules! numbers {
    ($(#[$doc:meta])* $name:ident, $nest:literal {
        $($(#[$variant_doc:meta])* $variant:ident = $constant:ident = $value:literal,)*
    }) => {
        $(const $constant: u16 = $value;)*

        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq)]
        pub enum $name {
            $($(#[$variant_doc])* $variant(u32),)*
            Other(DefaultNla),
        }

        impl Nla for $name {
            fn value_len(&self) -> usize {
                match self {
                    Self::Other(attribute) => attribute.value_len(),
                    _ => 4,
                }
            }

            fn kind(&self) -> u16 {
                match self {
                    $(Self::$variant(_) => $constant,)*
                    Self::Other(attribute) => attribute.kind(),
                }
            }

            fn emit_value(&self, buffer: &mut [u8]) {
                match self {
                    $(Self::$variant(value))|* => emit_u32_be(buffer, *value).expect("4 bytes"),
                    Self::Other(attribute) => attribute.emit_value(buffer),
                }
            }
        }

        impl<'a, T: AsRef<[u8]> + ?Sized> Parseable<NlaBuffer<&'a T>> for $name {
            fn parse(buffer: &NlaBuffer<&'a T>) -> Result<Self, DecodeError> {
                Ok(match buffer.kind() {
                    $($constant => Self::$variant(
                        parse_u32_be(buffer.value())
                            .context(concat!("invalid ", stringify!($constant), " value"))?,
                    ),)*
                    _ => Self::Other(
                        DefaultNla::parse(buffer).context(concat!("invalid ", $nest, " attribute"))?,
                    ),
                })
            }
        }
    };
}

numbers! {
    /// `NFTA_META_*`
    MetaAttribute, "NFTA_META" {
        /// `NFTA_META_DREG`: the register loaded.
        DestinationRegister = NFTA_META_DREG = 1,
        /// `NFTA_META_KEY` (NFT_META_*): what is loaded or set.
        Key = NFTA_META_KEY = 2,
        /// `NFTA_META_SREG`: the register a set takes its value from.
        SourceRegister = NFTA_META_SREG = 3,
    }
}

numbers! {
    /// `NFTA_CT_*` (a direction, a u8, is kept as `Other`).
    CtAttribute, "NFTA_CT" {
        /// `NFTA_CT_DREG`: the register loaded.
        DestinationRegister = NFTA_CT_DREG = 1,
        /// `NFTA_CT_KEY` (NFT_CT_*): what is loaded or set.
        Key = NFTA_CT_KEY = 2,
        /// `NFTA_CT_SREG`: the register a set takes its value from.
        SourceRegister = NFTA_CT_SREG = 4,
    }
}

numbers! {
    /// `NFTA_NAT_*`
    NatAttribute, "NFTA_NAT" {
        /// `NFTA_NAT_TYPE`: NFT_NAT_SNAT or NFT_NAT_DNAT.
        Type = NFTA_NAT_TYPE = 1,
        /// `NFTA_NAT_FAMILY`: NFPROTO_IPV4 or NFPROTO_IPV6.
        Family = NFTA_NAT_FAMILY = 2,
        /// `NFTA_NAT_REG_ADDR_MIN`: the register holding the address.
        AddressMinimum = NFTA_NAT_REG_ADDR_MIN = 3,
        /// `NFTA_NAT_REG_ADDR_MAX`, for a range.
        AddressMaximum = NFTA_NAT_REG_ADDR_MAX = 4,
        /// `NFTA_NAT_REG_PROTO_MIN`: the register holding the port.
        PortMinimum = NFTA_NAT_REG_PROTO_MIN = 5,
        /// `NFTA_NAT_REG_PROTO_MAX`, for a range.
        PortMaximum = NFTA_NAT_REG_PROTO_MAX = 6,
        /// `NFTA_NAT_FLAGS` (NF_NAT_RANGE_*).
        Flags = NFTA_NAT_FLAGS = 7,
    }
}

numbers! {
    /// `NFTA_DUP_*`
    DupAttribute, "NFTA_DUP" {
        /// `NFTA_DUP_SREG_ADDR`: the register holding the address the
        /// copy goes to.
        SourceRegisterAddress = NFTA_DUP_SREG_ADDR = 1,
        /// `NFTA_DUP_SREG_DEV`: the register holding the device's index.
        SourceRegisterDevice = NFTA_DUP_SREG_DEV = 2,
    }
}

/// The registers (`NFT_REG_*`: 16 bytes each; the verdict's is 0).
pub mod register {
    pub const VERDICT: u32 = 0;
    pub const R1: u32 = 1;
    pub const R2: u32 = 2;
}

/// `NFT_PAYLOAD_*_HEADER`: which header a payload's offset counts from.
pub mod header {
    pub const LINK_LAYER: u32 = 0;
    pub const NETWORK: u32 = 1;
    pub const TRANSPORT: u32 = 2;
}

/// `NFT_META_*` keys.
pub mod meta {
    /// The input interface's name (IFNAMSIZ bytes, NUL padded).
    pub const INPUT_INTERFACE_NAME: u32 = 6;
    /// The output interface's name.
    pub const OUTPUT_INTERFACE_NAME: u32 = 7;
    /// The layer 4 protocol (one byte: IPPROTO_*).
    pub const LAYER4_PROTOCOL: u32 = 16;
    /// The packet's type (one byte: PACKET_HOST, PACKET_OTHERHOST...).
    pub const PACKET_TYPE: u32 = 19;
    /// The network protocol of an `inet` table's packet (one byte:
    /// NFPROTO_IPV4 or NFPROTO_IPV6).
    pub const NETWORK_PROTOCOL: u32 = 15;
    /// The output interface's index (four bytes, host order).
    pub const OUTPUT_INTERFACE: u32 = 5;
    /// The output interface's kind (IFNAMSIZ bytes: `macvlan`...).
    pub const OUTPUT_INTERFACE_KIND: u32 = 27;
}

/// `NFT_CT_*` keys.
pub mod conntrack {
    /// The connection's status bits (four bytes, host order: IPS_*).
    pub const STATUS: u32 = 2;
    /// IPS_DST_NAT: the connection's destination is translated.
    pub const STATUS_DESTINATION_NAT: u32 = 1 << 5;
    /// The connection's zone (two bytes, host order).
    pub const ZONE: u32 = 17;
}

/// `NFT_NAT_*`
pub mod nat {
    pub const SOURCE: u32 = 0;
    pub const DESTINATION: u32 = 1;
    /// NF_NAT_RANGE_MAP_IPS: the address is translated.
    pub const MAP_ADDRESSES: u32 = 1;
    /// NF_NAT_RANGE_PROTO_SPECIFIED: the port too.
    pub const PORT_SPECIFIED: u32 = 2;
}

/// `NFT_CMP_*`
pub mod comparison {
    pub const EQUAL: u32 = 0;
    pub const NOT_EQUAL: u32 = 1;
}

/// NFT_BITWISE_BOOL: mask and xor.
const BITWISE_MASK_AND_XOR: u32 = 0;

/// The interface name's length in a register (IFNAMSIZ).
const INTERFACE_NAME_LENGTH: usize = 16;

impl Expression {
    /// Loads `length` bytes at `offset` of `base`'s header into register 1.
    pub fn payload(base: u32, offset: u32, length: u32) -> Expression {
        Expression::Payload(vec![
            PayloadAttribute::DestinationRegister(register::R1),
            PayloadAttribute::Base(base),
            PayloadAttribute::Offset(offset),
            PayloadAttribute::Length(length),
        ])
    }

    /// Register 1 compared with `value` (`comparison::EQUAL`...).
    pub fn compare(operation: u32, value: Vec<u8>) -> Expression {
        Expression::Cmp(vec![
            CmpAttribute::SourceRegister(register::R1),
            CmpAttribute::Operation(operation),
            CmpAttribute::Data(vec![DataAttribute::Value(value)]),
        ])
    }

    /// Register 1 equals `value`.
    pub fn equal(value: Vec<u8>) -> Expression {
        Expression::compare(comparison::EQUAL, value)
    }

    /// Register 1 is in `set`, named rather than by id: a set created
    /// earlier in the same batch is found by name too.
    pub fn lookup(set: &str) -> Expression {
        Expression::Lookup(vec![
            LookupAttribute::SourceRegister(register::R1),
            LookupAttribute::Set(set.to_owned()),
        ])
    }

    /// A verdict (`verdict::*`), with the chain of a jump or goto.
    pub fn verdict(code: i32, chain: Option<&str>) -> Expression {
        let mut verdict = vec![VerdictAttribute::Code(code)];
        verdict.extend(chain.map(|chain| VerdictAttribute::Chain(chain.to_owned())));
        Expression::Immediate(vec![
            ImmediateAttribute::DestinationRegister(register::VERDICT),
            ImmediateAttribute::Data(vec![DataAttribute::Verdict(verdict)]),
        ])
    }

    /// Loads `value` into `register`.
    pub fn immediate(register: u32, value: Vec<u8>) -> Expression {
        Expression::Immediate(vec![
            ImmediateAttribute::DestinationRegister(register),
            ImmediateAttribute::Data(vec![DataAttribute::Value(value)]),
        ])
    }

    /// Loads the metadata `key` (`meta::*`) into register 1.
    pub fn meta(key: u32) -> Expression {
        Expression::Meta(vec![
            MetaAttribute::Key(key),
            MetaAttribute::DestinationRegister(register::R1),
        ])
    }

    /// `meta KEY set VALUE`: two expressions, the value loaded, then set.
    pub fn set_meta(key: u32, value: Vec<u8>) -> [Expression; 2] {
        [
            Expression::immediate(register::R1, value),
            Expression::Meta(vec![
                MetaAttribute::Key(key),
                MetaAttribute::SourceRegister(register::R1),
            ]),
        ]
    }

    /// `iifname NAME` (or `oifname`, with `meta::OUTPUT_INTERFACE_NAME`):
    /// the name as the register holds it, NUL padded.
    pub fn interface_name(key: u32, name: &str) -> [Expression; 2] {
        let mut padded = name.as_bytes().to_vec();
        padded.resize(INTERFACE_NAME_LENGTH, 0);
        [Expression::meta(key), Expression::equal(padded)]
    }

    /// Loads the connection's `key` (`conntrack::*`) into register 1.
    /// (The kernel's order of the attributes, as it dumps them: what it
    /// holds compares equal to what was sent.)
    pub fn ct(key: u32) -> Expression {
        Expression::Ct(vec![
            CtAttribute::DestinationRegister(register::R1),
            CtAttribute::Key(key),
        ])
    }

    /// Register 1 masked with `mask` (its length: the bytes kept), in the
    /// kernel's order of the attributes.
    pub fn and(mask: Vec<u8>) -> Expression {
        let length = mask.len();
        Expression::Bitwise(vec![
            BitwiseAttribute::SourceRegister(register::R1),
            BitwiseAttribute::DestinationRegister(register::R1),
            BitwiseAttribute::Length(length as u32),
            BitwiseAttribute::Operation(BITWISE_MASK_AND_XOR),
            BitwiseAttribute::Mask(vec![DataAttribute::Value(mask)]),
            BitwiseAttribute::Xor(vec![DataAttribute::Value(vec![0; length])]),
        ])
    }

    /// `ct zone set ZONE`.
    pub fn set_zone(zone: u16) -> [Expression; 2] {
        [
            Expression::immediate(register::R1, zone.to_ne_bytes().to_vec()),
            Expression::Ct(vec![
                CtAttribute::SourceRegister(register::R1),
                CtAttribute::Key(conntrack::ZONE),
            ]),
        ]
    }

    /// `dnat ip to ADDRESS:PORT` (`family` NFPROTO_IPV4 or _IPV6, the
    /// address's octets): the address in register 1, the port (network
    /// order, as the kernel reads it) in register 2. Written whole (a
    /// range of one, its flags), as the kernel completes and dumps it.
    pub fn destination_nat(family: u8, address: &[u8], port: u16) -> [Expression; 3] {
        [
            Expression::immediate(register::R1, address.to_vec()),
            Expression::immediate(register::R2, port.to_be_bytes().to_vec()),
            Expression::Nat(vec![
                NatAttribute::Type(nat::DESTINATION),
                NatAttribute::Family(u32::from(family)),
                NatAttribute::AddressMinimum(register::R1),
                NatAttribute::AddressMaximum(register::R1),
                NatAttribute::PortMinimum(register::R2),
                NatAttribute::PortMaximum(register::R2),
                NatAttribute::Flags(nat::MAP_ADDRESSES | nat::PORT_SPECIFIED),
            ]),
        ]
    }
}
