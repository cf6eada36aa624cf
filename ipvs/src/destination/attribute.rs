use netlink_packet_core::{
    DecodeError, DefaultNla, ErrorContext, Nla, NlaBuffer, Parseable, emit_u16, emit_u16_be,
    emit_u32, parse_u8, parse_u16, parse_u16_be, parse_u32,
};

use crate::nla::{attributes_length, emit_attributes, parse_nested};
use crate::{AddressBytes, Stats64Attribute, StatsAttribute};

const IPVS_DEST_ATTR_ADDR: u16 = 1;
// Big-endian on the wire, like the service port.
const IPVS_DEST_ATTR_PORT: u16 = 2;
const IPVS_DEST_ATTR_FWD_METHOD: u16 = 3;
const IPVS_DEST_ATTR_WEIGHT: u16 = 4;
const IPVS_DEST_ATTR_U_THRESH: u16 = 5;
const IPVS_DEST_ATTR_L_THRESH: u16 = 6;
const IPVS_DEST_ATTR_ACTIVE_CONNS: u16 = 7;
const IPVS_DEST_ATTR_INACT_CONNS: u16 = 8;
const IPVS_DEST_ATTR_PERSIST_CONNS: u16 = 9;
const IPVS_DEST_ATTR_STATS: u16 = 10;
const IPVS_DEST_ATTR_ADDR_FAMILY: u16 = 11;
const IPVS_DEST_ATTR_STATS64: u16 = 12;
const IPVS_DEST_ATTR_TUN_TYPE: u16 = 13;
// Big-endian on the wire (nla_put_be16 / nla_get_be16).
const IPVS_DEST_ATTR_TUN_PORT: u16 = 14;
// Host order, unlike the tunnel port.
const IPVS_DEST_ATTR_TUN_FLAGS: u16 = 15;

/// One attribute nested in `IPVS_CMD_ATTR_DEST`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum DestinationAttribute {
    /// `IPVS_DEST_ATTR_ADDR`, 4 or 16 bytes as received.
    Address(AddressBytes),
    /// `IPVS_DEST_ATTR_PORT`, host order here (big-endian on the wire).
    Port(u16),
    /// `IPVS_DEST_ATTR_FWD_METHOD`: `IP_VS_CONN_F_*` forwarding method. The
    /// kernel masks with `IP_VS_CONN_F_FWD_MASK` (0x7) both ways, so no
    /// other connection flag shows up here.
    Forwarding(u32),
    /// `IPVS_DEST_ATTR_WEIGHT`: the kernel stores an `int` and rejects
    /// negative values (anything above `i32::MAX`) with `ERANGE`.
    Weight(u32),
    /// `IPVS_DEST_ATTR_U_THRESH` (0 = no limit)
    UpperThreshold(u32),
    /// `IPVS_DEST_ATTR_L_THRESH`
    LowerThreshold(u32),
    /// `IPVS_DEST_ATTR_ACTIVE_CONNS` (replies only)
    ActiveConnections(u32),
    /// `IPVS_DEST_ATTR_INACT_CONNS` (replies only)
    InactiveConnections(u32),
    /// `IPVS_DEST_ATTR_PERSIST_CONNS` (replies only)
    PersistentConnections(u32),
    /// `IPVS_DEST_ATTR_STATS` (replies only)
    Stats(Vec<StatsAttribute>),
    /// `IPVS_DEST_ATTR_ADDR_FAMILY`: the destination's own family, which may
    /// differ from the service's for tunnelled destinations. Absent in a
    /// request, the kernel uses the service's family.
    Family(u16),
    /// `IPVS_DEST_ATTR_STATS64` (replies only)
    Stats64(Vec<Stats64Attribute>),
    /// `IPVS_DEST_ATTR_TUN_TYPE`: `IP_VS_CONN_F_TUNNEL_TYPE_*`.
    TunnelType(u8),
    /// `IPVS_DEST_ATTR_TUN_PORT`, host order here (big-endian on the wire).
    TunnelPort(u16),
    /// `IPVS_DEST_ATTR_TUN_FLAGS`: `IP_VS_TUNNEL_ENCAP_FLAG_*`.
    TunnelFlags(u16),
    Other(DefaultNla),
}

impl DestinationAttribute {
    /// The kinds of the statistics nests, which a reader straight from the
    /// bytes decodes in place rather than as attribute lists.
    pub(crate) const STATS_KIND: u16 = IPVS_DEST_ATTR_STATS;
    pub(crate) const STATS64_KIND: u16 = IPVS_DEST_ATTR_STATS64;
}

impl Nla for DestinationAttribute {
    fn value_len(&self) -> usize {
        match self {
            Self::Address(address) => address.as_slice().len(),
            Self::Port(_) | Self::Family(_) | Self::TunnelPort(_) | Self::TunnelFlags(_) => 2,
            Self::TunnelType(_) => 1,
            Self::Forwarding(_)
            | Self::Weight(_)
            | Self::UpperThreshold(_)
            | Self::LowerThreshold(_)
            | Self::ActiveConnections(_)
            | Self::InactiveConnections(_)
            | Self::PersistentConnections(_) => 4,
            Self::Stats(nest) => attributes_length(nest),
            Self::Stats64(nest) => attributes_length(nest),
            Self::Other(nla) => nla.value_len(),
        }
    }

    // Nests without NLA_F_NESTED, like the kernel (see ServiceAttribute).
    fn kind(&self) -> u16 {
        match self {
            Self::Address(_) => IPVS_DEST_ATTR_ADDR,
            Self::Port(_) => IPVS_DEST_ATTR_PORT,
            Self::Forwarding(_) => IPVS_DEST_ATTR_FWD_METHOD,
            Self::Weight(_) => IPVS_DEST_ATTR_WEIGHT,
            Self::UpperThreshold(_) => IPVS_DEST_ATTR_U_THRESH,
            Self::LowerThreshold(_) => IPVS_DEST_ATTR_L_THRESH,
            Self::ActiveConnections(_) => IPVS_DEST_ATTR_ACTIVE_CONNS,
            Self::InactiveConnections(_) => IPVS_DEST_ATTR_INACT_CONNS,
            Self::PersistentConnections(_) => IPVS_DEST_ATTR_PERSIST_CONNS,
            Self::Stats(_) => IPVS_DEST_ATTR_STATS,
            Self::Family(_) => IPVS_DEST_ATTR_ADDR_FAMILY,
            Self::Stats64(_) => IPVS_DEST_ATTR_STATS64,
            Self::TunnelType(_) => IPVS_DEST_ATTR_TUN_TYPE,
            Self::TunnelPort(_) => IPVS_DEST_ATTR_TUN_PORT,
            Self::TunnelFlags(_) => IPVS_DEST_ATTR_TUN_FLAGS,
            Self::Other(nla) => nla.kind(),
        }
    }

    fn emit_value(&self, buffer: &mut [u8]) {
        match self {
            Self::Address(address) => buffer.copy_from_slice(address.as_slice()),
            Self::Port(v) | Self::TunnelPort(v) => emit_u16_be(buffer, *v).unwrap(),
            Self::Family(v) | Self::TunnelFlags(v) => emit_u16(buffer, *v).unwrap(),
            Self::TunnelType(v) => buffer[0] = *v,
            Self::Forwarding(v)
            | Self::Weight(v)
            | Self::UpperThreshold(v)
            | Self::LowerThreshold(v)
            | Self::ActiveConnections(v)
            | Self::InactiveConnections(v)
            | Self::PersistentConnections(v) => emit_u32(buffer, *v).unwrap(),
            Self::Stats(nest) => emit_attributes(nest, buffer),
            Self::Stats64(nest) => emit_attributes(nest, buffer),
            Self::Other(nla) => nla.emit_value(buffer),
        }
    }
}

impl<'a, T: AsRef<[u8]> + ?Sized> Parseable<NlaBuffer<&'a T>> for DestinationAttribute {
    fn parse(buf: &NlaBuffer<&'a T>) -> Result<Self, DecodeError> {
        let payload = buf.value();
        Ok(match buf.kind() {
            IPVS_DEST_ATTR_ADDR => Self::Address(
                AddressBytes::parse(payload).context("invalid IPVS_DEST_ATTR_ADDR value")?,
            ),
            IPVS_DEST_ATTR_PORT => {
                Self::Port(parse_u16_be(payload).context("invalid IPVS_DEST_ATTR_PORT value")?)
            }
            IPVS_DEST_ATTR_FWD_METHOD => Self::Forwarding(
                parse_u32(payload).context("invalid IPVS_DEST_ATTR_FWD_METHOD value")?,
            ),
            IPVS_DEST_ATTR_WEIGHT => {
                Self::Weight(parse_u32(payload).context("invalid IPVS_DEST_ATTR_WEIGHT value")?)
            }
            IPVS_DEST_ATTR_U_THRESH => Self::UpperThreshold(
                parse_u32(payload).context("invalid IPVS_DEST_ATTR_U_THRESH value")?,
            ),
            IPVS_DEST_ATTR_L_THRESH => Self::LowerThreshold(
                parse_u32(payload).context("invalid IPVS_DEST_ATTR_L_THRESH value")?,
            ),
            IPVS_DEST_ATTR_ACTIVE_CONNS => Self::ActiveConnections(
                parse_u32(payload).context("invalid IPVS_DEST_ATTR_ACTIVE_CONNS value")?,
            ),
            IPVS_DEST_ATTR_INACT_CONNS => Self::InactiveConnections(
                parse_u32(payload).context("invalid IPVS_DEST_ATTR_INACT_CONNS value")?,
            ),
            IPVS_DEST_ATTR_PERSIST_CONNS => Self::PersistentConnections(
                parse_u32(payload).context("invalid IPVS_DEST_ATTR_PERSIST_CONNS value")?,
            ),
            IPVS_DEST_ATTR_STATS => {
                Self::Stats(parse_nested(payload).context("invalid IPVS_DEST_ATTR_STATS value")?)
            }
            IPVS_DEST_ATTR_ADDR_FAMILY => Self::Family(
                parse_u16(payload).context("invalid IPVS_DEST_ATTR_ADDR_FAMILY value")?,
            ),
            IPVS_DEST_ATTR_STATS64 => Self::Stats64(
                parse_nested(payload).context("invalid IPVS_DEST_ATTR_STATS64 value")?,
            ),
            IPVS_DEST_ATTR_TUN_TYPE => Self::TunnelType(
                parse_u8(payload).context("invalid IPVS_DEST_ATTR_TUN_TYPE value")?,
            ),
            IPVS_DEST_ATTR_TUN_PORT => Self::TunnelPort(
                parse_u16_be(payload).context("invalid IPVS_DEST_ATTR_TUN_PORT value")?,
            ),
            IPVS_DEST_ATTR_TUN_FLAGS => Self::TunnelFlags(
                parse_u16(payload).context("invalid IPVS_DEST_ATTR_TUN_FLAGS value")?,
            ),
            _ => Self::Other(DefaultNla::parse(buf).context("invalid IPVS_DEST_ATTR attribute")?),
        })
    }
}
