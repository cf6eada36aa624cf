//! `NFTA_DATA_*`: the values of set keys, comparisons, masks and
//! immediates, and verdicts (`NFTA_VERDICT_*`).

use netlink_packet_core::{
    DecodeError, DefaultNla, ErrorContext, NLA_F_NESTED, Nla, NlaBuffer, Parseable, emit_i32_be,
    parse_i32_be,
};

use super::attribute::{
    emit_nested, emit_string, nested_length, parse_nested, parse_string, string_length,
};

const NFTA_DATA_VALUE: u16 = 1;
const NFTA_DATA_VERDICT: u16 = 2;

/// The data nest's content.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DataAttribute {
    /// `NFTA_DATA_VALUE`: bytes as the packet or the set holds them.
    Value(Vec<u8>),
    /// `NFTA_DATA_VERDICT`
    Verdict(Vec<VerdictAttribute>),
    Other(DefaultNla),
}

impl Nla for DataAttribute {
    fn value_len(&self) -> usize {
        match self {
            Self::Value(bytes) => bytes.len(),
            Self::Verdict(nest) => nested_length(nest),
            Self::Other(attribute) => attribute.value_len(),
        }
    }

    fn kind(&self) -> u16 {
        match self {
            Self::Value(_) => NFTA_DATA_VALUE,
            Self::Verdict(_) => NFTA_DATA_VERDICT | NLA_F_NESTED,
            Self::Other(attribute) => attribute.kind(),
        }
    }

    fn emit_value(&self, buffer: &mut [u8]) {
        match self {
            Self::Value(bytes) => buffer.copy_from_slice(bytes),
            Self::Verdict(nest) => emit_nested(nest, buffer),
            Self::Other(attribute) => attribute.emit_value(buffer),
        }
    }
}

impl<'a, T: AsRef<[u8]> + ?Sized> Parseable<NlaBuffer<&'a T>> for DataAttribute {
    fn parse(buffer: &NlaBuffer<&'a T>) -> Result<Self, DecodeError> {
        let payload = buffer.value();
        Ok(match buffer.kind() {
            NFTA_DATA_VALUE => Self::Value(payload.to_vec()),
            NFTA_DATA_VERDICT => {
                Self::Verdict(parse_nested(payload).context("invalid NFTA_DATA_VERDICT value")?)
            }
            _ => Self::Other(DefaultNla::parse(buffer).context("invalid NFTA_DATA attribute")?),
        })
    }
}

const NFTA_VERDICT_CODE: u16 = 1;
const NFTA_VERDICT_CHAIN: u16 = 2;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VerdictAttribute {
    /// `NFTA_VERDICT_CODE`: NF_DROP, NF_ACCEPT, or nftables' own negative
    /// codes (NFT_GOTO is -4).
    Code(i32),
    /// `NFTA_VERDICT_CHAIN`: the chain of a jump or goto.
    Chain(String),
    Other(DefaultNla),
}

impl Nla for VerdictAttribute {
    fn value_len(&self) -> usize {
        match self {
            Self::Code(_) => 4,
            Self::Chain(name) => string_length(name),
            Self::Other(attribute) => attribute.value_len(),
        }
    }

    fn kind(&self) -> u16 {
        match self {
            Self::Code(_) => NFTA_VERDICT_CODE,
            Self::Chain(_) => NFTA_VERDICT_CHAIN,
            Self::Other(attribute) => attribute.kind(),
        }
    }

    fn emit_value(&self, buffer: &mut [u8]) {
        match self {
            Self::Code(code) => emit_i32_be(buffer, *code).expect("4 bytes"),
            Self::Chain(name) => emit_string(buffer, name),
            Self::Other(attribute) => attribute.emit_value(buffer),
        }
    }
}

impl<'a, T: AsRef<[u8]> + ?Sized> Parseable<NlaBuffer<&'a T>> for VerdictAttribute {
    fn parse(buffer: &NlaBuffer<&'a T>) -> Result<Self, DecodeError> {
        let payload = buffer.value();
        Ok(match buffer.kind() {
            NFTA_VERDICT_CODE => {
                Self::Code(parse_i32_be(payload).context("invalid NFTA_VERDICT_CODE value")?)
            }
            NFTA_VERDICT_CHAIN => {
                Self::Chain(parse_string(payload).context("invalid NFTA_VERDICT_CHAIN value")?)
            }
            _ => Self::Other(DefaultNla::parse(buffer).context("invalid NFTA_VERDICT attribute")?),
        })
    }
}
