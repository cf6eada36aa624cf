//! Connection synchronisation daemons (`IPVS_CMD_ATTR_DAEMON`,
//! `IPVS_DAEMON_ATTR_*`).

mod attribute;

use std::fmt;
use std::net::IpAddr;

pub use attribute::DaemonAttribute;

use crate::service::check_name;
use crate::{IpvsAttribute, IpvsCommand, IpvsMessage, ParseError, RequestError};

const IP_VS_STATE_MASTER: u32 = 1;
const IP_VS_STATE_BACKUP: u32 = 2;

/// Longest interface name the kernel accepts (`IP_VS_IFNAME_MAXLEN - 1`).
pub const INTERFACE_NAME_MAX: usize = 15;

/// Which side of the synchronisation a daemon runs. One of each may run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SyncState {
    Master,
    Backup,
}

impl SyncState {
    pub fn to_raw(self) -> u32 {
        match self {
            SyncState::Master => IP_VS_STATE_MASTER,
            SyncState::Backup => IP_VS_STATE_BACKUP,
        }
    }

    pub fn from_raw(value: u32) -> Result<Self, ParseError> {
        match value {
            IP_VS_STATE_MASTER => Ok(SyncState::Master),
            IP_VS_STATE_BACKUP => Ok(SyncState::Backup),
            _ => Err(ParseError::InvalidValue {
                attribute: "IPVS_DAEMON_ATTR_STATE",
                value: value.into(),
            }),
        }
    }
}

impl fmt::Display for SyncState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SyncState::Master => "master",
            SyncState::Backup => "backup",
        })
    }
}

/// A sync daemon.
///
/// In a NEW_DAEMON request the optional fields left `None` (or 0) take the
/// kernel's defaults; the kernel's reply always fills `max_length`, `port`
/// and `ttl` with the values in use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyncDaemon {
    pub state: SyncState,
    /// Multicast interface.
    pub interface: String,
    pub sync_id: u32,
    pub max_length: Option<u16>,
    /// Multicast group (IPv4 or IPv6); the kernel's default group otherwise.
    pub group: Option<IpAddr>,
    pub port: Option<u16>,
    pub ttl: Option<u8>,
}

impl SyncDaemon {
    pub fn new(state: SyncState, interface: impl Into<String>, sync_id: u32) -> Self {
        SyncDaemon {
            state,
            interface: interface.into(),
            sync_id,
            max_length: None,
            group: None,
            port: None,
            ttl: None,
        }
    }

    /// Check what the kernel would reject with `EINVAL`.
    pub fn validate(&self) -> Result<(), RequestError> {
        check_name("interface", &self.interface, INTERFACE_NAME_MAX)?;
        match self.group {
            Some(group) if !group.is_multicast() => return Err(RequestError::NotMulticast(group)),
            _ => {}
        }
        Ok(())
    }

    /// The nest for NEW_DAEMON, in ipvsadm's order.
    pub fn to_attributes(&self) -> Vec<DaemonAttribute> {
        let mut attributes = vec![
            DaemonAttribute::State(self.state.to_raw()),
            DaemonAttribute::Interface(self.interface.clone()),
            DaemonAttribute::SyncId(self.sync_id),
        ];
        if let Some(max_length) = self.max_length {
            attributes.push(DaemonAttribute::MaxLength(max_length));
        }
        if let Some(port) = self.port {
            attributes.push(DaemonAttribute::Port(port));
        }
        if let Some(ttl) = self.ttl {
            attributes.push(DaemonAttribute::Ttl(ttl));
        }
        match self.group {
            Some(IpAddr::V4(group)) => attributes.push(DaemonAttribute::Group(group)),
            Some(IpAddr::V6(group)) => attributes.push(DaemonAttribute::Group6(group)),
            None => {}
        }
        attributes
    }

    pub fn from_attributes(attributes: &[DaemonAttribute]) -> Result<Self, ParseError> {
        let mut state = None;
        let mut interface = None;
        let mut sync_id = None;
        let mut daemon_max_length = None;
        let mut group = None;
        let mut port = None;
        let mut ttl = None;
        for attribute in attributes {
            match attribute {
                DaemonAttribute::State(v) => state = Some(*v),
                DaemonAttribute::Interface(v) => interface = Some(v.clone()),
                DaemonAttribute::SyncId(v) => sync_id = Some(*v),
                DaemonAttribute::MaxLength(v) => daemon_max_length = Some(*v),
                DaemonAttribute::Group(v) => group = Some(IpAddr::V4(*v)),
                DaemonAttribute::Group6(v) => group = Some(IpAddr::V6(*v)),
                DaemonAttribute::Port(v) => port = Some(*v),
                DaemonAttribute::Ttl(v) => ttl = Some(*v),
                _ => {}
            }
        }
        Ok(SyncDaemon {
            state: SyncState::from_raw(
                state.ok_or(ParseError::MissingAttribute("IPVS_DAEMON_ATTR_STATE"))?,
            )?,
            interface: interface
                .ok_or(ParseError::MissingAttribute("IPVS_DAEMON_ATTR_MCAST_IFN"))?,
            sync_id: sync_id.ok_or(ParseError::MissingAttribute("IPVS_DAEMON_ATTR_SYNC_ID"))?,
            max_length: daemon_max_length,
            group,
            port,
            ttl,
        })
    }

    /// Parse one message of a GET_DAEMON dump (command NEW_DAEMON).
    pub fn from_reply(message: &IpvsMessage) -> Result<Self, ParseError> {
        message.expect_command(IpvsCommand::NewDaemon)?;
        let nest = message
            .attributes
            .iter()
            .find_map(|attribute| match attribute {
                IpvsAttribute::Daemon(nest) => Some(nest.as_slice()),
                _ => None,
            })
            .ok_or(ParseError::MissingAttribute("IPVS_CMD_ATTR_DAEMON"))?;
        Self::from_attributes(nest)
    }
}

#[cfg(test)]
mod tests;
