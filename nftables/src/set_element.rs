//! Set elements (`NFT_MSG_*SETELEM`): a list of elements of one set
//! (`NFTA_SET_ELEM_LIST_*`), each element its key and options
//! (`NFTA_SET_ELEM_*`).

use netlink_packet_core::{
    DecodeError, DefaultNla, ErrorContext, NLA_F_NESTED, Nla, NlaBuffer, NlasIterator, Parseable,
    emit_u32_be, parse_u32_be,
};

use super::attribute::{
    emit_nested, emit_string, nested_length, parse_nested, parse_string, string_length,
};
use super::data::DataAttribute;
use super::header::ObjectMessage;

pub type SetElementMessage = ObjectMessage<SetElementListAttribute>;

const NFTA_SET_ELEM_LIST_TABLE: u16 = 1;
const NFTA_SET_ELEM_LIST_SET: u16 = 2;
const NFTA_SET_ELEM_LIST_ELEMENTS: u16 = 3;
const NFTA_SET_ELEM_LIST_SET_ID: u16 = 4;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SetElementListAttribute {
    /// `NFTA_SET_ELEM_LIST_TABLE`
    Table(String),
    /// `NFTA_SET_ELEM_LIST_SET`: the set's name.
    Set(String),
    /// `NFTA_SET_ELEM_LIST_ELEMENTS`
    Elements(Vec<SetElement>),
    /// `NFTA_SET_ELEM_LIST_SET_ID`: the set's id in this batch, for a set
    /// the same batch creates.
    SetId(u32),
    Other(DefaultNla),
}

/// One element of the list: a nest of `NFTA_SET_ELEM_*`.
///
/// The kernel reads the elements of the list whatever their attribute
/// type; libnftnl numbers them from 1 in the order of the list (the
/// kernel's dumps give them all NFTA_LIST_ELEM, 1). They are written as
/// libnftnl writes them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SetElement {
    pub attributes: Vec<SetElementAttribute>,
}

impl SetElement {
    /// An element of just a key: the bytes as the packet holds them (an
    /// address in network order).
    pub fn key(bytes: Vec<u8>) -> SetElement {
        SetElement {
            attributes: vec![SetElementAttribute::Key(vec![DataAttribute::Value(bytes)])],
        }
    }
}

/// An element of the list with the attribute type libnftnl gives it.
struct NumberedElement<'a> {
    number: u16,
    element: &'a SetElement,
}

impl Nla for NumberedElement<'_> {
    fn value_len(&self) -> usize {
        nested_length(&self.element.attributes)
    }

    fn kind(&self) -> u16 {
        self.number | NLA_F_NESTED
    }

    fn emit_value(&self, buffer: &mut [u8]) {
        emit_nested(&self.element.attributes, buffer)
    }
}

fn numbered(elements: &[SetElement]) -> Vec<NumberedElement<'_>> {
    elements
        .iter()
        .zip(1..)
        .map(|(element, number)| NumberedElement { number, element })
        .collect()
}

impl Nla for SetElementListAttribute {
    fn value_len(&self) -> usize {
        match self {
            Self::Table(name) | Self::Set(name) => string_length(name),
            Self::Elements(elements) => nested_length(&numbered(elements)),
            Self::SetId(_) => 4,
            Self::Other(attribute) => attribute.value_len(),
        }
    }

    fn kind(&self) -> u16 {
        match self {
            Self::Table(_) => NFTA_SET_ELEM_LIST_TABLE,
            Self::Set(_) => NFTA_SET_ELEM_LIST_SET,
            Self::Elements(_) => NFTA_SET_ELEM_LIST_ELEMENTS | NLA_F_NESTED,
            Self::SetId(_) => NFTA_SET_ELEM_LIST_SET_ID,
            Self::Other(attribute) => attribute.kind(),
        }
    }

    fn emit_value(&self, buffer: &mut [u8]) {
        match self {
            Self::Table(name) | Self::Set(name) => emit_string(buffer, name),
            Self::Elements(elements) => emit_nested(&numbered(elements), buffer),
            Self::SetId(value) => emit_u32_be(buffer, *value).expect("4 bytes"),
            Self::Other(attribute) => attribute.emit_value(buffer),
        }
    }
}

impl<'a, T: AsRef<[u8]> + ?Sized> Parseable<NlaBuffer<&'a T>> for SetElementListAttribute {
    fn parse(buffer: &NlaBuffer<&'a T>) -> Result<Self, DecodeError> {
        let payload = buffer.value();
        Ok(match buffer.kind() {
            NFTA_SET_ELEM_LIST_TABLE => Self::Table(
                parse_string(payload).context("invalid NFTA_SET_ELEM_LIST_TABLE value")?,
            ),
            NFTA_SET_ELEM_LIST_SET => {
                Self::Set(parse_string(payload).context("invalid NFTA_SET_ELEM_LIST_SET value")?)
            }
            NFTA_SET_ELEM_LIST_ELEMENTS => Self::Elements(
                NlasIterator::new(payload)
                    .map(|element| {
                        element.and_then(|element| {
                            Ok(SetElement {
                                attributes: parse_nested(element.value())?,
                            })
                        })
                    })
                    .collect::<Result<_, _>>()
                    .context("invalid NFTA_SET_ELEM_LIST_ELEMENTS value")?,
            ),
            NFTA_SET_ELEM_LIST_SET_ID => Self::SetId(
                parse_u32_be(payload).context("invalid NFTA_SET_ELEM_LIST_SET_ID value")?,
            ),
            _ => Self::Other(
                DefaultNla::parse(buffer).context("invalid NFTA_SET_ELEM_LIST attribute")?,
            ),
        })
    }
}

const NFTA_SET_ELEM_KEY: u16 = 1;
const NFTA_SET_ELEM_DATA: u16 = 2;
const NFTA_SET_ELEM_FLAGS: u16 = 3;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SetElementAttribute {
    /// `NFTA_SET_ELEM_KEY`
    Key(Vec<DataAttribute>),
    /// `NFTA_SET_ELEM_DATA`: what a map's key maps to.
    Data(Vec<DataAttribute>),
    /// `NFTA_SET_ELEM_FLAGS` (NFT_SET_ELEM_INTERVAL_END...)
    Flags(u32),
    Other(DefaultNla),
}

impl Nla for SetElementAttribute {
    fn value_len(&self) -> usize {
        match self {
            Self::Key(nest) | Self::Data(nest) => nested_length(nest),
            Self::Flags(_) => 4,
            Self::Other(attribute) => attribute.value_len(),
        }
    }

    fn kind(&self) -> u16 {
        match self {
            Self::Key(_) => NFTA_SET_ELEM_KEY | NLA_F_NESTED,
            Self::Data(_) => NFTA_SET_ELEM_DATA | NLA_F_NESTED,
            Self::Flags(_) => NFTA_SET_ELEM_FLAGS,
            Self::Other(attribute) => attribute.kind(),
        }
    }

    fn emit_value(&self, buffer: &mut [u8]) {
        match self {
            Self::Key(nest) | Self::Data(nest) => emit_nested(nest, buffer),
            Self::Flags(value) => emit_u32_be(buffer, *value).expect("4 bytes"),
            Self::Other(attribute) => attribute.emit_value(buffer),
        }
    }
}

impl<'a, T: AsRef<[u8]> + ?Sized> Parseable<NlaBuffer<&'a T>> for SetElementAttribute {
    fn parse(buffer: &NlaBuffer<&'a T>) -> Result<Self, DecodeError> {
        let payload = buffer.value();
        Ok(match buffer.kind() {
            NFTA_SET_ELEM_KEY => {
                Self::Key(parse_nested(payload).context("invalid NFTA_SET_ELEM_KEY value")?)
            }
            NFTA_SET_ELEM_DATA => {
                Self::Data(parse_nested(payload).context("invalid NFTA_SET_ELEM_DATA value")?)
            }
            NFTA_SET_ELEM_FLAGS => {
                Self::Flags(parse_u32_be(payload).context("invalid NFTA_SET_ELEM_FLAGS value")?)
            }
            _ => Self::Other(DefaultNla::parse(buffer).context("invalid NFTA_SET_ELEM attribute")?),
        })
    }
}
