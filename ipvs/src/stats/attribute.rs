use netlink_packet_core::{
    DecodeError, DefaultNla, ErrorContext, Nla, NlaBuffer, Parseable, emit_u32, emit_u64,
    parse_u32, parse_u64,
};

const IPVS_STATS_ATTR_CONNS: u16 = 1;
const IPVS_STATS_ATTR_INPKTS: u16 = 2;
const IPVS_STATS_ATTR_OUTPKTS: u16 = 3;
const IPVS_STATS_ATTR_INBYTES: u16 = 4;
const IPVS_STATS_ATTR_OUTBYTES: u16 = 5;
const IPVS_STATS_ATTR_CPS: u16 = 6;
const IPVS_STATS_ATTR_INPPS: u16 = 7;
const IPVS_STATS_ATTR_OUTPPS: u16 = 8;
const IPVS_STATS_ATTR_INBPS: u16 = 9;
const IPVS_STATS_ATTR_OUTBPS: u16 = 10;
// `nla_put_u64_64bit` inserts this empty attribute before a u64 when the u64
// would otherwise not be 8-byte aligned, on architectures without efficient
// unaligned access. It carries nothing; it is kept only so re-emitting
// reproduces the bytes.
const IPVS_STATS_ATTR_PAD: u16 = 11;

/// One attribute of the 32-bit statistics nest (`IPVS_SVC_ATTR_STATS`,
/// `IPVS_DEST_ATTR_STATS`): the kernel truncates everything to u32 except the
/// byte counters.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum StatsAttribute {
    Connections(u32),
    IncomingPackets(u32),
    OutgoingPackets(u32),
    IncomingBytes(u64),
    OutgoingBytes(u64),
    ConnectionRate(u32),
    IncomingPacketRate(u32),
    OutgoingPacketRate(u32),
    IncomingByteRate(u32),
    OutgoingByteRate(u32),
    Padding(Vec<u8>),
    Other(DefaultNla),
}

impl Nla for StatsAttribute {
    fn value_len(&self) -> usize {
        match self {
            Self::IncomingBytes(_) | Self::OutgoingBytes(_) => 8,
            Self::Connections(_)
            | Self::IncomingPackets(_)
            | Self::OutgoingPackets(_)
            | Self::ConnectionRate(_)
            | Self::IncomingPacketRate(_)
            | Self::OutgoingPacketRate(_)
            | Self::IncomingByteRate(_)
            | Self::OutgoingByteRate(_) => 4,
            Self::Padding(bytes) => bytes.len(),
            Self::Other(nla) => nla.value_len(),
        }
    }

    fn kind(&self) -> u16 {
        match self {
            Self::Connections(_) => IPVS_STATS_ATTR_CONNS,
            Self::IncomingPackets(_) => IPVS_STATS_ATTR_INPKTS,
            Self::OutgoingPackets(_) => IPVS_STATS_ATTR_OUTPKTS,
            Self::IncomingBytes(_) => IPVS_STATS_ATTR_INBYTES,
            Self::OutgoingBytes(_) => IPVS_STATS_ATTR_OUTBYTES,
            Self::ConnectionRate(_) => IPVS_STATS_ATTR_CPS,
            Self::IncomingPacketRate(_) => IPVS_STATS_ATTR_INPPS,
            Self::OutgoingPacketRate(_) => IPVS_STATS_ATTR_OUTPPS,
            Self::IncomingByteRate(_) => IPVS_STATS_ATTR_INBPS,
            Self::OutgoingByteRate(_) => IPVS_STATS_ATTR_OUTBPS,
            Self::Padding(_) => IPVS_STATS_ATTR_PAD,
            Self::Other(nla) => nla.kind(),
        }
    }

    fn emit_value(&self, buffer: &mut [u8]) {
        match self {
            Self::IncomingBytes(v) | Self::OutgoingBytes(v) => emit_u64(buffer, *v).unwrap(),
            Self::Connections(v)
            | Self::IncomingPackets(v)
            | Self::OutgoingPackets(v)
            | Self::ConnectionRate(v)
            | Self::IncomingPacketRate(v)
            | Self::OutgoingPacketRate(v)
            | Self::IncomingByteRate(v)
            | Self::OutgoingByteRate(v) => emit_u32(buffer, *v).unwrap(),
            Self::Padding(bytes) => buffer.copy_from_slice(bytes),
            Self::Other(nla) => nla.emit_value(buffer),
        }
    }
}

impl<'a, T: AsRef<[u8]> + ?Sized> Parseable<NlaBuffer<&'a T>> for StatsAttribute {
    fn parse(buf: &NlaBuffer<&'a T>) -> Result<Self, DecodeError> {
        let payload = buf.value();
        Ok(match buf.kind() {
            IPVS_STATS_ATTR_CONNS => Self::Connections(
                parse_u32(payload).context("invalid IPVS_STATS_ATTR_CONNS value")?,
            ),
            IPVS_STATS_ATTR_INPKTS => Self::IncomingPackets(
                parse_u32(payload).context("invalid IPVS_STATS_ATTR_INPKTS value")?,
            ),
            IPVS_STATS_ATTR_OUTPKTS => Self::OutgoingPackets(
                parse_u32(payload).context("invalid IPVS_STATS_ATTR_OUTPKTS value")?,
            ),
            IPVS_STATS_ATTR_INBYTES => Self::IncomingBytes(
                parse_u64(payload).context("invalid IPVS_STATS_ATTR_INBYTES value")?,
            ),
            IPVS_STATS_ATTR_OUTBYTES => Self::OutgoingBytes(
                parse_u64(payload).context("invalid IPVS_STATS_ATTR_OUTBYTES value")?,
            ),
            IPVS_STATS_ATTR_CPS => Self::ConnectionRate(
                parse_u32(payload).context("invalid IPVS_STATS_ATTR_CPS value")?,
            ),
            IPVS_STATS_ATTR_INPPS => Self::IncomingPacketRate(
                parse_u32(payload).context("invalid IPVS_STATS_ATTR_INPPS value")?,
            ),
            IPVS_STATS_ATTR_OUTPPS => Self::OutgoingPacketRate(
                parse_u32(payload).context("invalid IPVS_STATS_ATTR_OUTPPS value")?,
            ),
            IPVS_STATS_ATTR_INBPS => Self::IncomingByteRate(
                parse_u32(payload).context("invalid IPVS_STATS_ATTR_INBPS value")?,
            ),
            IPVS_STATS_ATTR_OUTBPS => Self::OutgoingByteRate(
                parse_u32(payload).context("invalid IPVS_STATS_ATTR_OUTBPS value")?,
            ),
            IPVS_STATS_ATTR_PAD => Self::Padding(payload.to_vec()),
            _ => Self::Other(DefaultNla::parse(buf).context("invalid IPVS_STATS_ATTR attribute")?),
        })
    }
}

/// One attribute of the 64-bit statistics nest (`IPVS_SVC_ATTR_STATS64`,
/// `IPVS_DEST_ATTR_STATS64`).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Stats64Attribute {
    Connections(u64),
    IncomingPackets(u64),
    OutgoingPackets(u64),
    IncomingBytes(u64),
    OutgoingBytes(u64),
    ConnectionRate(u64),
    IncomingPacketRate(u64),
    OutgoingPacketRate(u64),
    IncomingByteRate(u64),
    OutgoingByteRate(u64),
    Padding(Vec<u8>),
    Other(DefaultNla),
}

impl Nla for Stats64Attribute {
    fn value_len(&self) -> usize {
        match self {
            Self::Padding(bytes) => bytes.len(),
            Self::Other(nla) => nla.value_len(),
            _ => 8,
        }
    }

    fn kind(&self) -> u16 {
        match self {
            Self::Connections(_) => IPVS_STATS_ATTR_CONNS,
            Self::IncomingPackets(_) => IPVS_STATS_ATTR_INPKTS,
            Self::OutgoingPackets(_) => IPVS_STATS_ATTR_OUTPKTS,
            Self::IncomingBytes(_) => IPVS_STATS_ATTR_INBYTES,
            Self::OutgoingBytes(_) => IPVS_STATS_ATTR_OUTBYTES,
            Self::ConnectionRate(_) => IPVS_STATS_ATTR_CPS,
            Self::IncomingPacketRate(_) => IPVS_STATS_ATTR_INPPS,
            Self::OutgoingPacketRate(_) => IPVS_STATS_ATTR_OUTPPS,
            Self::IncomingByteRate(_) => IPVS_STATS_ATTR_INBPS,
            Self::OutgoingByteRate(_) => IPVS_STATS_ATTR_OUTBPS,
            Self::Padding(_) => IPVS_STATS_ATTR_PAD,
            Self::Other(nla) => nla.kind(),
        }
    }

    fn emit_value(&self, buffer: &mut [u8]) {
        match self {
            Self::Connections(v)
            | Self::IncomingPackets(v)
            | Self::OutgoingPackets(v)
            | Self::IncomingBytes(v)
            | Self::OutgoingBytes(v)
            | Self::ConnectionRate(v)
            | Self::IncomingPacketRate(v)
            | Self::OutgoingPacketRate(v)
            | Self::IncomingByteRate(v)
            | Self::OutgoingByteRate(v) => emit_u64(buffer, *v).unwrap(),
            Self::Padding(bytes) => buffer.copy_from_slice(bytes),
            Self::Other(nla) => nla.emit_value(buffer),
        }
    }
}

impl<'a, T: AsRef<[u8]> + ?Sized> Parseable<NlaBuffer<&'a T>> for Stats64Attribute {
    fn parse(buf: &NlaBuffer<&'a T>) -> Result<Self, DecodeError> {
        let payload = buf.value();
        Ok(match buf.kind() {
            IPVS_STATS_ATTR_CONNS => Self::Connections(
                parse_u64(payload).context("invalid IPVS_STATS_ATTR_CONNS (64-bit) value")?,
            ),
            IPVS_STATS_ATTR_INPKTS => Self::IncomingPackets(
                parse_u64(payload).context("invalid IPVS_STATS_ATTR_INPKTS (64-bit) value")?,
            ),
            IPVS_STATS_ATTR_OUTPKTS => Self::OutgoingPackets(
                parse_u64(payload).context("invalid IPVS_STATS_ATTR_OUTPKTS (64-bit) value")?,
            ),
            IPVS_STATS_ATTR_INBYTES => Self::IncomingBytes(
                parse_u64(payload).context("invalid IPVS_STATS_ATTR_INBYTES (64-bit) value")?,
            ),
            IPVS_STATS_ATTR_OUTBYTES => Self::OutgoingBytes(
                parse_u64(payload).context("invalid IPVS_STATS_ATTR_OUTBYTES (64-bit) value")?,
            ),
            IPVS_STATS_ATTR_CPS => Self::ConnectionRate(
                parse_u64(payload).context("invalid IPVS_STATS_ATTR_CPS (64-bit) value")?,
            ),
            IPVS_STATS_ATTR_INPPS => Self::IncomingPacketRate(
                parse_u64(payload).context("invalid IPVS_STATS_ATTR_INPPS (64-bit) value")?,
            ),
            IPVS_STATS_ATTR_OUTPPS => Self::OutgoingPacketRate(
                parse_u64(payload).context("invalid IPVS_STATS_ATTR_OUTPPS (64-bit) value")?,
            ),
            IPVS_STATS_ATTR_INBPS => Self::IncomingByteRate(
                parse_u64(payload).context("invalid IPVS_STATS_ATTR_INBPS (64-bit) value")?,
            ),
            IPVS_STATS_ATTR_OUTBPS => Self::OutgoingByteRate(
                parse_u64(payload).context("invalid IPVS_STATS_ATTR_OUTBPS (64-bit) value")?,
            ),
            IPVS_STATS_ATTR_PAD => Self::Padding(payload.to_vec()),
            _ => Self::Other(
                DefaultNla::parse(buf).context("invalid IPVS_STATS_ATTR (64-bit) attribute")?,
            ),
        })
    }
}
