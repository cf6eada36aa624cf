use netlink_packet_core::{
    DecodeError, DefaultNla, ErrorContext, Nla, NlaBuffer, Parseable, emit_u16, emit_u16_be,
    emit_u32, parse_string, parse_u16, parse_u16_be, parse_u32,
};

use super::ServiceFlags;
use crate::nla::{attributes_length, emit_attributes, emit_string, parse_nested, string_length};
use crate::{AddressBytes, Stats64Attribute, StatsAttribute};

const IPVS_SVC_ATTR_AF: u16 = 1;
const IPVS_SVC_ATTR_PROTOCOL: u16 = 2;
const IPVS_SVC_ATTR_ADDR: u16 = 3;
// The port is big-endian on the wire (nla_put_be16 / nla_get_be16), unlike
// every other integer of the family.
const IPVS_SVC_ATTR_PORT: u16 = 4;
const IPVS_SVC_ATTR_FWMARK: u16 = 5;
const IPVS_SVC_ATTR_SCHED_NAME: u16 = 6;
const IPVS_SVC_ATTR_FLAGS: u16 = 7;
const IPVS_SVC_ATTR_TIMEOUT: u16 = 8;
const IPVS_SVC_ATTR_NETMASK: u16 = 9;
const IPVS_SVC_ATTR_STATS: u16 = 10;
const IPVS_SVC_ATTR_PE_NAME: u16 = 11;
const IPVS_SVC_ATTR_STATS64: u16 = 12;

/// Size of `struct ip_vs_flags { __u32 flags; __u32 mask; }`.
const FLAGS_LENGTH: usize = 8;

/// One attribute nested in `IPVS_CMD_ATTR_SERVICE`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ServiceAttribute {
    /// `IPVS_SVC_ATTR_AF`: `AF_INET` or `AF_INET6`.
    Family(u16),
    /// `IPVS_SVC_ATTR_PROTOCOL`: an `IPPROTO_*` value.
    Protocol(u16),
    /// `IPVS_SVC_ATTR_ADDR`, 4 or 16 bytes as received.
    Address(AddressBytes),
    /// `IPVS_SVC_ATTR_PORT`, in host order here (big-endian on the wire).
    Port(u16),
    /// `IPVS_SVC_ATTR_FWMARK`
    Fwmark(u32),
    /// `IPVS_SVC_ATTR_SCHED_NAME` (`"none"` when the service has none).
    Scheduler(String),
    /// `IPVS_SVC_ATTR_FLAGS`: the kernel applies
    /// `(old & !mask) | (flags & mask)`; it answers with `mask = !0`.
    Flags {
        flags: ServiceFlags,
        mask: u32,
    },
    /// `IPVS_SVC_ATTR_TIMEOUT`: persistence timeout, seconds.
    Timeout(u32),
    /// `IPVS_SVC_ATTR_NETMASK`, the raw native-endian u32 of a `__be32`.
    ///
    /// The kernel copies these 4 bytes as they are: for IPv4 they are the
    /// mask in network order (`to_ne_bytes()` gives the octets), for IPv6 the
    /// kernel reads them as a host-order prefix length (1..=128). See
    /// [`Netmask`](crate::Netmask).
    Netmask(u32),
    /// `IPVS_SVC_ATTR_STATS` (replies only)
    Stats(Vec<StatsAttribute>),
    /// `IPVS_SVC_ATTR_PE_NAME`: persistence engine (e.g. `"sip"`).
    PersistenceEngine(String),
    /// `IPVS_SVC_ATTR_STATS64` (replies only)
    Stats64(Vec<Stats64Attribute>),
    Other(DefaultNla),
}

impl ServiceAttribute {
    /// The kinds of the statistics nests, which a reader straight from the
    /// bytes decodes in place rather than as attribute lists.
    pub(crate) const STATS_KIND: u16 = IPVS_SVC_ATTR_STATS;
    pub(crate) const STATS64_KIND: u16 = IPVS_SVC_ATTR_STATS64;
}

impl Nla for ServiceAttribute {
    fn value_len(&self) -> usize {
        match self {
            Self::Family(_) | Self::Protocol(_) | Self::Port(_) => 2,
            Self::Fwmark(_) | Self::Timeout(_) | Self::Netmask(_) => 4,
            Self::Address(address) => address.as_slice().len(),
            Self::Scheduler(name) | Self::PersistenceEngine(name) => string_length(name),
            Self::Flags { .. } => FLAGS_LENGTH,
            Self::Stats(nest) => attributes_length(nest),
            Self::Stats64(nest) => attributes_length(nest),
            Self::Other(nla) => nla.value_len(),
        }
    }

    // Nests are emitted without NLA_F_NESTED, as the kernel does
    // (nla_nest_start_noflag): replies then re-emit byte for byte, and the
    // kernel's non-strict IPVS policy accepts both forms in requests.
    fn kind(&self) -> u16 {
        match self {
            Self::Family(_) => IPVS_SVC_ATTR_AF,
            Self::Protocol(_) => IPVS_SVC_ATTR_PROTOCOL,
            Self::Address(_) => IPVS_SVC_ATTR_ADDR,
            Self::Port(_) => IPVS_SVC_ATTR_PORT,
            Self::Fwmark(_) => IPVS_SVC_ATTR_FWMARK,
            Self::Scheduler(_) => IPVS_SVC_ATTR_SCHED_NAME,
            Self::Flags { .. } => IPVS_SVC_ATTR_FLAGS,
            Self::Timeout(_) => IPVS_SVC_ATTR_TIMEOUT,
            Self::Netmask(_) => IPVS_SVC_ATTR_NETMASK,
            Self::Stats(_) => IPVS_SVC_ATTR_STATS,
            Self::PersistenceEngine(_) => IPVS_SVC_ATTR_PE_NAME,
            Self::Stats64(_) => IPVS_SVC_ATTR_STATS64,
            Self::Other(nla) => nla.kind(),
        }
    }

    fn emit_value(&self, buffer: &mut [u8]) {
        match self {
            Self::Family(v) | Self::Protocol(v) => emit_u16(buffer, *v).unwrap(),
            Self::Port(v) => emit_u16_be(buffer, *v).unwrap(),
            Self::Fwmark(v) | Self::Timeout(v) | Self::Netmask(v) => emit_u32(buffer, *v).unwrap(),
            Self::Address(address) => buffer.copy_from_slice(address.as_slice()),
            Self::Scheduler(name) | Self::PersistenceEngine(name) => emit_string(buffer, name),
            Self::Flags { flags, mask } => {
                emit_u32(&mut buffer[..4], flags.bits()).unwrap();
                emit_u32(&mut buffer[4..8], *mask).unwrap();
            }
            Self::Stats(nest) => emit_attributes(nest, buffer),
            Self::Stats64(nest) => emit_attributes(nest, buffer),
            Self::Other(nla) => nla.emit_value(buffer),
        }
    }
}

impl<'a, T: AsRef<[u8]> + ?Sized> Parseable<NlaBuffer<&'a T>> for ServiceAttribute {
    fn parse(buf: &NlaBuffer<&'a T>) -> Result<Self, DecodeError> {
        let payload = buf.value();
        Ok(match buf.kind() {
            IPVS_SVC_ATTR_AF => {
                Self::Family(parse_u16(payload).context("invalid IPVS_SVC_ATTR_AF value")?)
            }
            IPVS_SVC_ATTR_PROTOCOL => {
                Self::Protocol(parse_u16(payload).context("invalid IPVS_SVC_ATTR_PROTOCOL value")?)
            }
            IPVS_SVC_ATTR_ADDR => Self::Address(
                AddressBytes::parse(payload).context("invalid IPVS_SVC_ATTR_ADDR value")?,
            ),
            IPVS_SVC_ATTR_PORT => {
                Self::Port(parse_u16_be(payload).context("invalid IPVS_SVC_ATTR_PORT value")?)
            }
            IPVS_SVC_ATTR_FWMARK => {
                Self::Fwmark(parse_u32(payload).context("invalid IPVS_SVC_ATTR_FWMARK value")?)
            }
            IPVS_SVC_ATTR_SCHED_NAME => Self::Scheduler(
                parse_string(payload).context("invalid IPVS_SVC_ATTR_SCHED_NAME value")?,
            ),
            IPVS_SVC_ATTR_FLAGS => {
                if payload.len() != FLAGS_LENGTH {
                    return Err(DecodeError::invalid_number(FLAGS_LENGTH, payload.len()))
                        .context("invalid IPVS_SVC_ATTR_FLAGS value");
                }
                Self::Flags {
                    flags: ServiceFlags::from_bits(parse_u32(&payload[..4])?),
                    mask: parse_u32(&payload[4..])?,
                }
            }
            IPVS_SVC_ATTR_TIMEOUT => {
                Self::Timeout(parse_u32(payload).context("invalid IPVS_SVC_ATTR_TIMEOUT value")?)
            }
            IPVS_SVC_ATTR_NETMASK => {
                Self::Netmask(parse_u32(payload).context("invalid IPVS_SVC_ATTR_NETMASK value")?)
            }
            IPVS_SVC_ATTR_STATS => {
                Self::Stats(parse_nested(payload).context("invalid IPVS_SVC_ATTR_STATS value")?)
            }
            IPVS_SVC_ATTR_PE_NAME => Self::PersistenceEngine(
                parse_string(payload).context("invalid IPVS_SVC_ATTR_PE_NAME value")?,
            ),
            IPVS_SVC_ATTR_STATS64 => {
                Self::Stats64(parse_nested(payload).context("invalid IPVS_SVC_ATTR_STATS64 value")?)
            }
            _ => Self::Other(DefaultNla::parse(buf).context("invalid IPVS_SVC_ATTR attribute")?),
        })
    }
}
