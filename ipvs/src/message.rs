//! The generic netlink payload of the IPVS family: a command and its
//! top-level attributes.

use netlink_packet_core::{
    DecodeError, DefaultNla, Emitable, ErrorContext, Nla, NlaBuffer, NlasIterator, Parseable,
    ParseableParametrized, emit_u32, parse_u32,
};
use netlink_packet_generic::{GenlFamily, GenlHeader};

use crate::nla::{attributes_length, emit_attributes, parse_nested};
use crate::{DaemonAttribute, DestinationAttribute, ParseError, ServiceAttribute};

/// `IPVS_GENL_NAME`
pub const IPVS_GENL_NAME: &str = "IPVS";
/// `IPVS_GENL_VERSION`
pub const IPVS_GENL_VERSION: u8 = 1;

const IPVS_CMD_UNSPEC: u8 = 0;
const IPVS_CMD_NEW_SERVICE: u8 = 1;
const IPVS_CMD_SET_SERVICE: u8 = 2;
const IPVS_CMD_DEL_SERVICE: u8 = 3;
const IPVS_CMD_GET_SERVICE: u8 = 4;
const IPVS_CMD_NEW_DEST: u8 = 5;
const IPVS_CMD_SET_DEST: u8 = 6;
const IPVS_CMD_DEL_DEST: u8 = 7;
const IPVS_CMD_GET_DEST: u8 = 8;
const IPVS_CMD_NEW_DAEMON: u8 = 9;
const IPVS_CMD_DEL_DAEMON: u8 = 10;
const IPVS_CMD_GET_DAEMON: u8 = 11;
const IPVS_CMD_SET_CONFIG: u8 = 12;
const IPVS_CMD_GET_CONFIG: u8 = 13;
const IPVS_CMD_SET_INFO: u8 = 14;
const IPVS_CMD_GET_INFO: u8 = 15;
const IPVS_CMD_ZERO: u8 = 16;
const IPVS_CMD_FLUSH: u8 = 17;

/// `IPVS_CMD_*`.
///
/// Replies reuse the "new"/"set" commands: GET_SERVICE is answered with
/// NEW_SERVICE, GET_DEST with NEW_DEST, GET_DAEMON with NEW_DAEMON,
/// GET_CONFIG with SET_CONFIG and GET_INFO with SET_INFO (which exists only
/// for that).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IpvsCommand {
    Unspecified,
    NewService,
    SetService,
    DeleteService,
    GetService,
    NewDestination,
    SetDestination,
    DeleteDestination,
    GetDestination,
    NewDaemon,
    DeleteDaemon,
    GetDaemon,
    SetConfig,
    GetConfig,
    SetInfo,
    GetInfo,
    Zero,
    Flush,
    Other(u8),
}

impl From<IpvsCommand> for u8 {
    fn from(command: IpvsCommand) -> u8 {
        match command {
            IpvsCommand::Unspecified => IPVS_CMD_UNSPEC,
            IpvsCommand::NewService => IPVS_CMD_NEW_SERVICE,
            IpvsCommand::SetService => IPVS_CMD_SET_SERVICE,
            IpvsCommand::DeleteService => IPVS_CMD_DEL_SERVICE,
            IpvsCommand::GetService => IPVS_CMD_GET_SERVICE,
            IpvsCommand::NewDestination => IPVS_CMD_NEW_DEST,
            IpvsCommand::SetDestination => IPVS_CMD_SET_DEST,
            IpvsCommand::DeleteDestination => IPVS_CMD_DEL_DEST,
            IpvsCommand::GetDestination => IPVS_CMD_GET_DEST,
            IpvsCommand::NewDaemon => IPVS_CMD_NEW_DAEMON,
            IpvsCommand::DeleteDaemon => IPVS_CMD_DEL_DAEMON,
            IpvsCommand::GetDaemon => IPVS_CMD_GET_DAEMON,
            IpvsCommand::SetConfig => IPVS_CMD_SET_CONFIG,
            IpvsCommand::GetConfig => IPVS_CMD_GET_CONFIG,
            IpvsCommand::SetInfo => IPVS_CMD_SET_INFO,
            IpvsCommand::GetInfo => IPVS_CMD_GET_INFO,
            IpvsCommand::Zero => IPVS_CMD_ZERO,
            IpvsCommand::Flush => IPVS_CMD_FLUSH,
            IpvsCommand::Other(value) => value,
        }
    }
}

impl From<u8> for IpvsCommand {
    fn from(value: u8) -> Self {
        match value {
            IPVS_CMD_UNSPEC => IpvsCommand::Unspecified,
            IPVS_CMD_NEW_SERVICE => IpvsCommand::NewService,
            IPVS_CMD_SET_SERVICE => IpvsCommand::SetService,
            IPVS_CMD_DEL_SERVICE => IpvsCommand::DeleteService,
            IPVS_CMD_GET_SERVICE => IpvsCommand::GetService,
            IPVS_CMD_NEW_DEST => IpvsCommand::NewDestination,
            IPVS_CMD_SET_DEST => IpvsCommand::SetDestination,
            IPVS_CMD_DEL_DEST => IpvsCommand::DeleteDestination,
            IPVS_CMD_GET_DEST => IpvsCommand::GetDestination,
            IPVS_CMD_NEW_DAEMON => IpvsCommand::NewDaemon,
            IPVS_CMD_DEL_DAEMON => IpvsCommand::DeleteDaemon,
            IPVS_CMD_GET_DAEMON => IpvsCommand::GetDaemon,
            IPVS_CMD_SET_CONFIG => IpvsCommand::SetConfig,
            IPVS_CMD_GET_CONFIG => IpvsCommand::GetConfig,
            IPVS_CMD_SET_INFO => IpvsCommand::SetInfo,
            IPVS_CMD_GET_INFO => IpvsCommand::GetInfo,
            IPVS_CMD_ZERO => IpvsCommand::Zero,
            IPVS_CMD_FLUSH => IpvsCommand::Flush,
            other => IpvsCommand::Other(other),
        }
    }
}

pub(crate) const IPVS_CMD_ATTR_SERVICE: u16 = 1;
pub(crate) const IPVS_CMD_ATTR_DEST: u16 = 2;
const IPVS_CMD_ATTR_DAEMON: u16 = 3;
const IPVS_CMD_ATTR_TIMEOUT_TCP: u16 = 4;
const IPVS_CMD_ATTR_TIMEOUT_TCP_FIN: u16 = 5;
const IPVS_CMD_ATTR_TIMEOUT_UDP: u16 = 6;
// Only at the top level of a SET_INFO message (the GET_INFO reply), where
// they reuse the numbers of IPVS_CMD_ATTR_SERVICE and IPVS_CMD_ATTR_DEST.
const IPVS_INFO_ATTR_VERSION: u16 = 1;
const IPVS_INFO_ATTR_CONN_TAB_SIZE: u16 = 2;

/// A top-level attribute (`IPVS_CMD_ATTR_*`, or `IPVS_INFO_ATTR_*` in a
/// SET_INFO message: which one depends on the command, so parsing takes it).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum IpvsAttribute {
    /// `IPVS_CMD_ATTR_SERVICE`
    Service(Vec<ServiceAttribute>),
    /// `IPVS_CMD_ATTR_DEST`
    Destination(Vec<DestinationAttribute>),
    /// `IPVS_CMD_ATTR_DAEMON`
    Daemon(Vec<DaemonAttribute>),
    /// `IPVS_CMD_ATTR_TIMEOUT_TCP`, seconds
    TimeoutTcp(u32),
    /// `IPVS_CMD_ATTR_TIMEOUT_TCP_FIN`, seconds
    TimeoutTcpFin(u32),
    /// `IPVS_CMD_ATTR_TIMEOUT_UDP`, seconds
    TimeoutUdp(u32),
    /// `IPVS_INFO_ATTR_VERSION` (SET_INFO only): `major << 16 | minor << 8 |
    /// patch`.
    Version(u32),
    /// `IPVS_INFO_ATTR_CONN_TAB_SIZE` (SET_INFO only)
    ConnectionTableSize(u32),
    Other(DefaultNla),
}

impl Nla for IpvsAttribute {
    fn value_len(&self) -> usize {
        match self {
            Self::Service(nest) => attributes_length(nest),
            Self::Destination(nest) => attributes_length(nest),
            Self::Daemon(nest) => attributes_length(nest),
            Self::TimeoutTcp(_)
            | Self::TimeoutTcpFin(_)
            | Self::TimeoutUdp(_)
            | Self::Version(_)
            | Self::ConnectionTableSize(_) => 4,
            Self::Other(nla) => nla.value_len(),
        }
    }

    // Nests without NLA_F_NESTED, like the kernel's nla_nest_start_noflag.
    fn kind(&self) -> u16 {
        match self {
            Self::Service(_) => IPVS_CMD_ATTR_SERVICE,
            Self::Destination(_) => IPVS_CMD_ATTR_DEST,
            Self::Daemon(_) => IPVS_CMD_ATTR_DAEMON,
            Self::TimeoutTcp(_) => IPVS_CMD_ATTR_TIMEOUT_TCP,
            Self::TimeoutTcpFin(_) => IPVS_CMD_ATTR_TIMEOUT_TCP_FIN,
            Self::TimeoutUdp(_) => IPVS_CMD_ATTR_TIMEOUT_UDP,
            Self::Version(_) => IPVS_INFO_ATTR_VERSION,
            Self::ConnectionTableSize(_) => IPVS_INFO_ATTR_CONN_TAB_SIZE,
            Self::Other(nla) => nla.kind(),
        }
    }

    fn emit_value(&self, buffer: &mut [u8]) {
        match self {
            Self::Service(nest) => emit_attributes(nest, buffer),
            Self::Destination(nest) => emit_attributes(nest, buffer),
            Self::Daemon(nest) => emit_attributes(nest, buffer),
            Self::TimeoutTcp(v)
            | Self::TimeoutTcpFin(v)
            | Self::TimeoutUdp(v)
            | Self::Version(v)
            | Self::ConnectionTableSize(v) => emit_u32(buffer, *v).unwrap(),
            Self::Other(nla) => nla.emit_value(buffer),
        }
    }
}

impl<'a, T: AsRef<[u8]> + ?Sized> ParseableParametrized<NlaBuffer<&'a T>, IpvsCommand>
    for IpvsAttribute
{
    fn parse_with_param(buf: &NlaBuffer<&'a T>, command: IpvsCommand) -> Result<Self, DecodeError> {
        let payload = buf.value();
        if command == IpvsCommand::SetInfo {
            return Ok(match buf.kind() {
                IPVS_INFO_ATTR_VERSION => Self::Version(
                    parse_u32(payload).context("invalid IPVS_INFO_ATTR_VERSION value")?,
                ),
                IPVS_INFO_ATTR_CONN_TAB_SIZE => Self::ConnectionTableSize(
                    parse_u32(payload).context("invalid IPVS_INFO_ATTR_CONN_TAB_SIZE value")?,
                ),
                _ => {
                    Self::Other(DefaultNla::parse(buf).context("invalid IPVS_INFO_ATTR attribute")?)
                }
            });
        }
        Ok(match buf.kind() {
            IPVS_CMD_ATTR_SERVICE => {
                Self::Service(parse_nested(payload).context("invalid IPVS_CMD_ATTR_SERVICE value")?)
            }
            IPVS_CMD_ATTR_DEST => Self::Destination(
                parse_nested(payload).context("invalid IPVS_CMD_ATTR_DEST value")?,
            ),
            IPVS_CMD_ATTR_DAEMON => {
                Self::Daemon(parse_nested(payload).context("invalid IPVS_CMD_ATTR_DAEMON value")?)
            }
            IPVS_CMD_ATTR_TIMEOUT_TCP => Self::TimeoutTcp(
                parse_u32(payload).context("invalid IPVS_CMD_ATTR_TIMEOUT_TCP value")?,
            ),
            IPVS_CMD_ATTR_TIMEOUT_TCP_FIN => Self::TimeoutTcpFin(
                parse_u32(payload).context("invalid IPVS_CMD_ATTR_TIMEOUT_TCP_FIN value")?,
            ),
            IPVS_CMD_ATTR_TIMEOUT_UDP => Self::TimeoutUdp(
                parse_u32(payload).context("invalid IPVS_CMD_ATTR_TIMEOUT_UDP value")?,
            ),
            _ => Self::Other(DefaultNla::parse(buf).context("invalid IPVS_CMD_ATTR attribute")?),
        })
    }
}

/// An IPVS generic netlink message: wrap it in
/// `NetlinkMessage<GenlMessage<IpvsMessage>>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IpvsMessage {
    pub command: IpvsCommand,
    pub attributes: Vec<IpvsAttribute>,
}

impl IpvsMessage {
    pub fn new(command: IpvsCommand, attributes: Vec<IpvsAttribute>) -> Self {
        IpvsMessage {
            command,
            attributes,
        }
    }

    /// Fail unless the message carries `expected`.
    pub fn expect_command(&self, expected: IpvsCommand) -> Result<(), ParseError> {
        expect_command(self.command, expected)
    }
}

/// Fail unless `found` is `expected`.
pub(crate) fn expect_command(found: IpvsCommand, expected: IpvsCommand) -> Result<(), ParseError> {
    if found == expected {
        Ok(())
    } else {
        Err(ParseError::UnexpectedCommand { expected, found })
    }
}

/// The value of the first top-level attribute of kind `kind` in a message's
/// attribute bytes, the others skipped unread: how the readers straight
/// from the bytes find the nest of the object a reply carries.
pub(crate) fn find_attribute(attributes: &[u8], kind: u16) -> Result<Option<&[u8]>, DecodeError> {
    for attribute in NlasIterator::new(attributes) {
        let attribute = attribute?;
        if attribute.kind() == kind {
            // `value()` borrows the buffer view; the bytes live as long as
            // `attributes` (the length was checked by the iterator).
            let length = usize::from(attribute.length());
            return Ok(Some(&attribute.into_inner()[4..length]));
        }
    }
    Ok(None)
}

impl GenlFamily for IpvsMessage {
    fn family_name() -> &'static str {
        IPVS_GENL_NAME
    }

    fn command(&self) -> u8 {
        self.command.into()
    }

    fn version(&self) -> u8 {
        IPVS_GENL_VERSION
    }
}

impl Emitable for IpvsMessage {
    fn buffer_len(&self) -> usize {
        attributes_length(&self.attributes)
    }

    fn emit(&self, buffer: &mut [u8]) {
        emit_attributes(&self.attributes, buffer)
    }
}

impl ParseableParametrized<[u8], GenlHeader> for IpvsMessage {
    fn parse_with_param(buf: &[u8], header: GenlHeader) -> Result<Self, DecodeError> {
        let command = IpvsCommand::from(header.cmd);
        let attributes = NlasIterator::new(buf)
            .map(|nla| nla.and_then(|nla| IpvsAttribute::parse_with_param(&nla, command)))
            .collect::<Result<Vec<_>, _>>()
            .with_context(|| format!("failed to parse IPVS {command:?} message attributes"))?;
        Ok(IpvsMessage {
            command,
            attributes,
        })
    }
}

#[cfg(test)]
mod tests;
