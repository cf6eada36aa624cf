//! Global IPVS information (GET_INFO, answered with SET_INFO).

use std::fmt;

use crate::{IpvsAttribute, IpvsCommand, IpvsMessage, ParseError};

/// The IPVS version (`IP_VS_VERSION_CODE`, 1.2.1 for many years).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Version {
    pub major: u8,
    pub minor: u8,
    pub patch: u8,
}

impl Version {
    /// Decode `major << 16 | minor << 8 | patch`.
    pub fn from_code(code: u32) -> Self {
        Version {
            major: (code >> 16) as u8,
            minor: (code >> 8) as u8,
            patch: code as u8,
        }
    }

    pub fn code(&self) -> u32 {
        u32::from(self.major) << 16 | u32::from(self.minor) << 8 | u32::from(self.patch)
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)
    }
}

/// What GET_INFO reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Info {
    pub version: Version,
    /// Buckets of the connection hash table (`ip_vs_conn_tab_bits` module
    /// parameter, 4096 by default).
    pub connection_table_size: u32,
}

impl Info {
    /// Top-level attributes of a SET_INFO message (for fixtures and tests:
    /// the kernel does not accept SET_INFO).
    pub fn to_attributes(&self) -> Vec<IpvsAttribute> {
        vec![
            IpvsAttribute::Version(self.version.code()),
            IpvsAttribute::ConnectionTableSize(self.connection_table_size),
        ]
    }

    pub fn from_attributes(attributes: &[IpvsAttribute]) -> Result<Self, ParseError> {
        let mut version = None;
        let mut size = None;
        for attribute in attributes {
            match attribute {
                IpvsAttribute::Version(v) => version = Some(*v),
                IpvsAttribute::ConnectionTableSize(v) => size = Some(*v),
                _ => {}
            }
        }
        Ok(Info {
            version: Version::from_code(
                version.ok_or(ParseError::MissingAttribute("IPVS_INFO_ATTR_VERSION"))?,
            ),
            connection_table_size: size
                .ok_or(ParseError::MissingAttribute("IPVS_INFO_ATTR_CONN_TAB_SIZE"))?,
        })
    }

    /// Parse the GET_INFO reply (command SET_INFO).
    pub fn from_reply(message: &IpvsMessage) -> Result<Self, ParseError> {
        message.expect_command(IpvsCommand::SetInfo)?;
        Self::from_attributes(&message.attributes)
    }
}
