//! Virtual services (`IPVS_CMD_ATTR_SERVICE`, `IPVS_SVC_ATTR_*`).

mod attribute;
mod flags;

use std::fmt;
use std::net::{IpAddr, Ipv4Addr};

pub use attribute::ServiceAttribute;
pub use flags::ServiceFlags;

use crate::{
    AddressBytes, Family, IpvsAttribute, IpvsCommand, IpvsMessage, ParseError, RequestError,
    Statistics,
};

/// Longest scheduler name the kernel accepts (`IP_VS_SCHEDNAME_MAXLEN - 1`:
/// its `NLA_NUL_STRING` policy counts without the NUL).
pub const SCHEDULER_NAME_MAX: usize = 15;
/// Longest persistence engine name the kernel accepts. Its policy uses
/// `IP_VS_PENAME_MAXLEN` itself, not `- 1` like the scheduler: a kernel
/// inconsistency, kept as is.
pub const PERSISTENCE_ENGINE_NAME_MAX: usize = 16;

/// The transport protocol of an address-based service (`IPPROTO_*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Protocol {
    Tcp,
    Udp,
    Sctp,
    Other(u16),
}

impl Protocol {
    pub fn to_raw(self) -> u16 {
        match self {
            Protocol::Tcp => libc::IPPROTO_TCP as u16,
            Protocol::Udp => libc::IPPROTO_UDP as u16,
            Protocol::Sctp => libc::IPPROTO_SCTP as u16,
            Protocol::Other(value) => value,
        }
    }

    pub fn from_raw(value: u16) -> Self {
        match i32::from(value) {
            libc::IPPROTO_TCP => Protocol::Tcp,
            libc::IPPROTO_UDP => Protocol::Udp,
            libc::IPPROTO_SCTP => Protocol::Sctp,
            _ => Protocol::Other(value),
        }
    }
}

impl fmt::Display for Protocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Protocol::Tcp => f.write_str("TCP"),
            Protocol::Udp => f.write_str("UDP"),
            Protocol::Sctp => f.write_str("SCTP"),
            Protocol::Other(value) => write!(f, "protocol {value}"),
        }
    }
}

/// What identifies a service: the kernel looks services up by
/// (family, protocol, address, port) or by (family, firewall mark).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ServiceKey {
    /// The family is that of `address`.
    Address {
        protocol: Protocol,
        address: IpAddr,
        port: u16,
    },
    /// A firewall-mark service; `family` says which packets it matches.
    Fwmark { family: Family, mark: u32 },
}

impl ServiceKey {
    pub fn family(&self) -> Family {
        match self {
            ServiceKey::Address { address, .. } => Family::of(address),
            ServiceKey::Fwmark { family, .. } => *family,
        }
    }

    /// The identifying attributes, encoded like ipvsadm: the address always
    /// as a 16-byte `nf_inet_addr`.
    pub fn to_attributes(&self) -> Vec<ServiceAttribute> {
        match *self {
            ServiceKey::Address {
                protocol,
                address,
                port,
            } => vec![
                ServiceAttribute::Family(Family::of(&address).to_raw()),
                ServiceAttribute::Protocol(protocol.to_raw()),
                ServiceAttribute::Address(AddressBytes::padded(address)),
                ServiceAttribute::Port(port),
            ],
            ServiceKey::Fwmark { family, mark } => vec![
                ServiceAttribute::Family(family.to_raw()),
                ServiceAttribute::Fwmark(mark),
            ],
        }
    }

    /// Read the key out of a service nest, with the kernel's rule: AF, and
    /// either a (non-zero) FWMARK or all of PROTOCOL, ADDR and PORT.
    pub fn from_attributes(attributes: &[ServiceAttribute]) -> Result<Self, ParseError> {
        let mut family = None;
        let mut protocol = None;
        let mut address = None;
        let mut port = None;
        let mut fwmark = None;
        for attribute in attributes {
            match attribute {
                ServiceAttribute::Family(v) => family = Some(*v),
                ServiceAttribute::Protocol(v) => protocol = Some(*v),
                ServiceAttribute::Address(v) => address = Some(*v),
                ServiceAttribute::Port(v) => port = Some(*v),
                ServiceAttribute::Fwmark(v) => fwmark = Some(*v),
                _ => {}
            }
        }
        let family = Family::from_raw(
            family.ok_or(ParseError::MissingAttribute("IPVS_SVC_ATTR_AF"))?,
            "IPVS_SVC_ATTR_AF",
        )?;
        if let Some(mark) = fwmark.filter(|mark| *mark != 0) {
            return Ok(ServiceKey::Fwmark { family, mark });
        }
        let protocol = protocol.ok_or(ParseError::MissingAttribute("IPVS_SVC_ATTR_PROTOCOL"))?;
        let address = address.ok_or(ParseError::MissingAttribute("IPVS_SVC_ATTR_ADDR"))?;
        let port = port.ok_or(ParseError::MissingAttribute("IPVS_SVC_ATTR_PORT"))?;
        Ok(ServiceKey::Address {
            protocol: Protocol::from_raw(protocol),
            address: address.to_ip(family, "IPVS_SVC_ATTR_ADDR")?,
            port,
        })
    }
}

impl fmt::Display for ServiceKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ServiceKey::Address {
                protocol,
                address: IpAddr::V6(address),
                port,
            } => write!(f, "{protocol} [{address}]:{port}"),
            ServiceKey::Address {
                protocol,
                address,
                port,
            } => write!(f, "{protocol} {address}:{port}"),
            ServiceKey::Fwmark { family, mark } => write!(f, "FWM {mark} {family}"),
        }
    }
}

/// The persistence granularity: clients whose addresses match under this
/// mask share a destination.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Netmask {
    Ipv4(Ipv4Addr),
    /// Prefix length, 1..=128.
    Ipv6(u8),
}

impl Netmask {
    /// The ipvsadm default: a single client address.
    pub fn full(family: Family) -> Self {
        match family {
            Family::Inet => Netmask::Ipv4(Ipv4Addr::BROADCAST),
            Family::Inet6 => Netmask::Ipv6(128),
        }
    }

    pub fn family(&self) -> Family {
        match self {
            Netmask::Ipv4(_) => Family::Inet,
            Netmask::Ipv6(_) => Family::Inet6,
        }
    }

    /// The raw value of `IPVS_SVC_ATTR_NETMASK` (see
    /// [`ServiceAttribute::Netmask`]).
    pub fn to_raw(self) -> u32 {
        match self {
            Netmask::Ipv4(mask) => u32::from_ne_bytes(mask.octets()),
            Netmask::Ipv6(prefix) => u32::from(prefix),
        }
    }

    pub fn from_raw(raw: u32, family: Family) -> Result<Self, ParseError> {
        match family {
            Family::Inet => Ok(Netmask::Ipv4(Ipv4Addr::from(raw.to_ne_bytes()))),
            Family::Inet6 => u8::try_from(raw)
                .ok()
                .filter(|prefix| *prefix <= 128)
                .map(Netmask::Ipv6)
                .ok_or(ParseError::InvalidValue {
                    attribute: "IPVS_SVC_ATTR_NETMASK",
                    value: raw.into(),
                }),
        }
    }
}

impl fmt::Display for Netmask {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Netmask::Ipv4(mask) => write!(f, "{mask}"),
            Netmask::Ipv6(prefix) => write!(f, "/{prefix}"),
        }
    }
}

/// A virtual service.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Service {
    pub key: ServiceKey,
    /// Scheduler module name without the `ip_vs_` prefix (`rr`, `wlc`,
    /// `mh`...); the kernel reports `"none"` for a service without one.
    pub scheduler: String,
    pub flags: ServiceFlags,
    /// Persistence timeout in seconds (meaningful with
    /// [`ServiceFlags::PERSISTENT`]).
    pub timeout: u32,
    pub netmask: Netmask,
    /// Persistence engine (`sip`), if any.
    pub persistence_engine: Option<String>,
    /// Only in replies; ignored in requests.
    pub statistics: Option<Statistics>,
}

impl Service {
    /// A non-persistent service with ipvsadm's defaults.
    pub fn new(key: ServiceKey, scheduler: impl Into<String>) -> Self {
        Service {
            key,
            scheduler: scheduler.into(),
            flags: ServiceFlags::empty(),
            timeout: 0,
            netmask: Netmask::full(key.family()),
            persistence_engine: None,
            statistics: None,
        }
    }

    /// Check what the kernel would reject with a bare `EINVAL`.
    pub fn validate(&self) -> Result<(), RequestError> {
        check_name("scheduler", &self.scheduler, SCHEDULER_NAME_MAX)?;
        if let Some(engine) = &self.persistence_engine {
            check_name("persistence engine", engine, PERSISTENCE_ENGINE_NAME_MAX)?;
        }
        let family = self.key.family();
        if self.netmask.family() != family {
            return Err(RequestError::NetmaskFamily {
                netmask: self.netmask.to_string(),
                family,
            });
        }
        match self.netmask {
            Netmask::Ipv6(prefix) if !(1..=128).contains(&prefix) => {
                return Err(RequestError::PrefixLength(prefix));
            }
            _ => {}
        }
        Ok(())
    }

    /// The full service nest for NEW_SERVICE / SET_SERVICE, in ipvsadm's
    /// order. Flags go with `mask = !0`, so the kernel takes them as they
    /// are; statistics are never sent.
    pub fn to_attributes(&self) -> Vec<ServiceAttribute> {
        let mut attributes = self.key.to_attributes();
        attributes.push(ServiceAttribute::Scheduler(self.scheduler.clone()));
        if let Some(engine) = &self.persistence_engine {
            attributes.push(ServiceAttribute::PersistenceEngine(engine.clone()));
        }
        attributes.push(ServiceAttribute::Flags {
            flags: self.flags,
            mask: !0,
        });
        attributes.push(ServiceAttribute::Timeout(self.timeout));
        attributes.push(ServiceAttribute::Netmask(self.netmask.to_raw()));
        attributes
    }

    /// Build the model from a full service nest (a GET_SERVICE reply).
    pub fn from_attributes(attributes: &[ServiceAttribute]) -> Result<Self, ParseError> {
        let key = ServiceKey::from_attributes(attributes)?;
        let mut scheduler = None;
        let mut flags = None;
        let mut timeout = None;
        let mut netmask = None;
        let mut persistence_engine = None;
        let mut stats = None;
        let mut stats64 = None;
        for attribute in attributes {
            match attribute {
                ServiceAttribute::Scheduler(v) => scheduler = Some(v.clone()),
                // Only the bits the mask covers are meaningful (libipvs
                // does the same); the kernel sends mask = !0.
                ServiceAttribute::Flags { flags: f, mask } => {
                    flags = Some(*f & ServiceFlags::from_bits(*mask))
                }
                ServiceAttribute::Timeout(v) => timeout = Some(*v),
                ServiceAttribute::Netmask(v) => netmask = Some(*v),
                ServiceAttribute::PersistenceEngine(v) => persistence_engine = Some(v.clone()),
                ServiceAttribute::Stats(v) => stats = Some(v.as_slice()),
                ServiceAttribute::Stats64(v) => stats64 = Some(v.as_slice()),
                _ => {}
            }
        }
        let netmask = netmask.ok_or(ParseError::MissingAttribute("IPVS_SVC_ATTR_NETMASK"))?;
        Ok(Service {
            key,
            scheduler: scheduler.ok_or(ParseError::MissingAttribute("IPVS_SVC_ATTR_SCHED_NAME"))?,
            flags: flags.ok_or(ParseError::MissingAttribute("IPVS_SVC_ATTR_FLAGS"))?,
            timeout: timeout.ok_or(ParseError::MissingAttribute("IPVS_SVC_ATTR_TIMEOUT"))?,
            netmask: Netmask::from_raw(netmask, key.family())?,
            persistence_engine,
            statistics: Statistics::from_nests(stats, stats64),
        })
    }

    /// Parse one message of a GET_SERVICE reply or dump (command
    /// NEW_SERVICE).
    pub fn from_reply(message: &IpvsMessage) -> Result<Self, ParseError> {
        message.expect_command(IpvsCommand::NewService)?;
        Self::from_attributes(service_nest(message)?)
    }
}

/// The service nest of a message.
pub(crate) fn service_nest(message: &IpvsMessage) -> Result<&[ServiceAttribute], ParseError> {
    message
        .attributes
        .iter()
        .find_map(|attribute| match attribute {
            IpvsAttribute::Service(nest) => Some(nest.as_slice()),
            _ => None,
        })
        .ok_or(ParseError::MissingAttribute("IPVS_CMD_ATTR_SERVICE"))
}

pub(crate) fn check_name(field: &'static str, name: &str, max: usize) -> Result<(), RequestError> {
    if name.len() > max || name.contains('\0') {
        return Err(RequestError::InvalidName {
            field,
            name: name.to_string(),
            max,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests;
