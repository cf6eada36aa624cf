use std::net::{Ipv4Addr, Ipv6Addr};

use netlink_packet_core::{
    DecodeError, DefaultNla, ErrorContext, Nla, NlaBuffer, Parseable, emit_u16, emit_u32,
    parse_ipv6, parse_string, parse_u8, parse_u16, parse_u32,
};

use crate::nla::{emit_string, string_length};

const IPVS_DAEMON_ATTR_STATE: u16 = 1;
const IPVS_DAEMON_ATTR_MCAST_IFN: u16 = 2;
const IPVS_DAEMON_ATTR_SYNC_ID: u16 = 3;
const IPVS_DAEMON_ATTR_SYNC_MAXLEN: u16 = 4;
// 4 bytes in network order (nla_put_in_addr / nla_get_in_addr).
const IPVS_DAEMON_ATTR_MCAST_GROUP: u16 = 5;
const IPVS_DAEMON_ATTR_MCAST_GROUP6: u16 = 6;
// Host order (nla_put_u16 / nla_get_u16 in ip_vs_ctl.c), unlike the service
// and destination ports.
const IPVS_DAEMON_ATTR_MCAST_PORT: u16 = 7;
const IPVS_DAEMON_ATTR_MCAST_TTL: u16 = 8;

/// One attribute nested in `IPVS_CMD_ATTR_DAEMON`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum DaemonAttribute {
    /// `IPVS_DAEMON_ATTR_STATE`: `IP_VS_STATE_MASTER` (1) or `_BACKUP` (2).
    State(u32),
    /// `IPVS_DAEMON_ATTR_MCAST_IFN`
    Interface(String),
    /// `IPVS_DAEMON_ATTR_SYNC_ID`
    SyncId(u32),
    /// `IPVS_DAEMON_ATTR_SYNC_MAXLEN`: largest sync message payload.
    MaxLength(u16),
    /// `IPVS_DAEMON_ATTR_MCAST_GROUP`
    Group(Ipv4Addr),
    /// `IPVS_DAEMON_ATTR_MCAST_GROUP6`
    Group6(Ipv6Addr),
    /// `IPVS_DAEMON_ATTR_MCAST_PORT`
    Port(u16),
    /// `IPVS_DAEMON_ATTR_MCAST_TTL`
    Ttl(u8),
    Other(DefaultNla),
}

impl Nla for DaemonAttribute {
    fn value_len(&self) -> usize {
        match self {
            Self::State(_) | Self::SyncId(_) | Self::Group(_) => 4,
            Self::Interface(name) => string_length(name),
            Self::MaxLength(_) | Self::Port(_) => 2,
            Self::Group6(_) => 16,
            Self::Ttl(_) => 1,
            Self::Other(nla) => nla.value_len(),
        }
    }

    fn kind(&self) -> u16 {
        match self {
            Self::State(_) => IPVS_DAEMON_ATTR_STATE,
            Self::Interface(_) => IPVS_DAEMON_ATTR_MCAST_IFN,
            Self::SyncId(_) => IPVS_DAEMON_ATTR_SYNC_ID,
            Self::MaxLength(_) => IPVS_DAEMON_ATTR_SYNC_MAXLEN,
            Self::Group(_) => IPVS_DAEMON_ATTR_MCAST_GROUP,
            Self::Group6(_) => IPVS_DAEMON_ATTR_MCAST_GROUP6,
            Self::Port(_) => IPVS_DAEMON_ATTR_MCAST_PORT,
            Self::Ttl(_) => IPVS_DAEMON_ATTR_MCAST_TTL,
            Self::Other(nla) => nla.kind(),
        }
    }

    fn emit_value(&self, buffer: &mut [u8]) {
        match self {
            Self::State(v) | Self::SyncId(v) => emit_u32(buffer, *v).unwrap(),
            Self::Interface(name) => emit_string(buffer, name),
            Self::MaxLength(v) | Self::Port(v) => emit_u16(buffer, *v).unwrap(),
            Self::Group(address) => buffer.copy_from_slice(&address.octets()),
            Self::Group6(address) => buffer.copy_from_slice(&address.octets()),
            Self::Ttl(v) => buffer[0] = *v,
            Self::Other(nla) => nla.emit_value(buffer),
        }
    }
}

impl<'a, T: AsRef<[u8]> + ?Sized> Parseable<NlaBuffer<&'a T>> for DaemonAttribute {
    fn parse(buf: &NlaBuffer<&'a T>) -> Result<Self, DecodeError> {
        let payload = buf.value();
        Ok(match buf.kind() {
            IPVS_DAEMON_ATTR_STATE => {
                Self::State(parse_u32(payload).context("invalid IPVS_DAEMON_ATTR_STATE value")?)
            }
            IPVS_DAEMON_ATTR_MCAST_IFN => Self::Interface(
                parse_string(payload).context("invalid IPVS_DAEMON_ATTR_MCAST_IFN value")?,
            ),
            IPVS_DAEMON_ATTR_SYNC_ID => {
                Self::SyncId(parse_u32(payload).context("invalid IPVS_DAEMON_ATTR_SYNC_ID value")?)
            }
            IPVS_DAEMON_ATTR_SYNC_MAXLEN => Self::MaxLength(
                parse_u16(payload).context("invalid IPVS_DAEMON_ATTR_SYNC_MAXLEN value")?,
            ),
            IPVS_DAEMON_ATTR_MCAST_GROUP => {
                let octets = <[u8; 4]>::try_from(payload)
                    .map_err(|_| DecodeError::invalid_ip_address(payload.len()))
                    .context("invalid IPVS_DAEMON_ATTR_MCAST_GROUP value")?;
                Self::Group(Ipv4Addr::from(octets))
            }
            IPVS_DAEMON_ATTR_MCAST_GROUP6 => Self::Group6(Ipv6Addr::from(
                parse_ipv6(payload).context("invalid IPVS_DAEMON_ATTR_MCAST_GROUP6 value")?,
            )),
            IPVS_DAEMON_ATTR_MCAST_PORT => {
                Self::Port(parse_u16(payload).context("invalid IPVS_DAEMON_ATTR_MCAST_PORT value")?)
            }
            IPVS_DAEMON_ATTR_MCAST_TTL => {
                Self::Ttl(parse_u8(payload).context("invalid IPVS_DAEMON_ATTR_MCAST_TTL value")?)
            }
            _ => Self::Other(DefaultNla::parse(buf).context("invalid IPVS_DAEMON_ATTR attribute")?),
        })
    }
}
