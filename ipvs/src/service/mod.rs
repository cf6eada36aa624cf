//! Virtual services (`IPVS_CMD_ATTR_SERVICE`, `IPVS_SVC_ATTR_*`).

mod attribute;
mod flags;

use std::fmt;
use std::net::{IpAddr, Ipv4Addr};

pub use attribute::ServiceAttribute;
pub use flags::ServiceFlags;

use crate::fields::{self, NestFields};
use crate::message::IPVS_CMD_ATTR_SERVICE;
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
        let mut fields = KeyFields::default();
        for attribute in attributes {
            fields.add(attribute);
        }
        fields.finish()
    }
}

/// The key's attributes of a service nest, gathered one at a time.
#[derive(Default)]
struct KeyFields {
    family: Option<u16>,
    protocol: Option<u16>,
    address: Option<AddressBytes>,
    port: Option<u16>,
    fwmark: Option<u32>,
}

impl KeyFields {
    fn add(&mut self, attribute: &ServiceAttribute) {
        match attribute {
            ServiceAttribute::Family(v) => self.family = Some(*v),
            ServiceAttribute::Protocol(v) => self.protocol = Some(*v),
            ServiceAttribute::Address(v) => self.address = Some(*v),
            ServiceAttribute::Port(v) => self.port = Some(*v),
            ServiceAttribute::Fwmark(v) => self.fwmark = Some(*v),
            _ => {}
        }
    }

    fn finish(&self) -> Result<ServiceKey, ParseError> {
        let family = Family::from_raw(
            self.family
                .ok_or(ParseError::MissingAttribute("IPVS_SVC_ATTR_AF"))?,
            "IPVS_SVC_ATTR_AF",
        )?;
        if let Some(mark) = self.fwmark.filter(|mark| *mark != 0) {
            return Ok(ServiceKey::Fwmark { family, mark });
        }
        let protocol = self
            .protocol
            .ok_or(ParseError::MissingAttribute("IPVS_SVC_ATTR_PROTOCOL"))?;
        let address = self
            .address
            .ok_or(ParseError::MissingAttribute("IPVS_SVC_ATTR_ADDR"))?;
        let port = self
            .port
            .ok_or(ParseError::MissingAttribute("IPVS_SVC_ATTR_PORT"))?;
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
    /// Boxed: most tables held (a reconciler's, a listing without `--stats`)
    /// have none, and inline they were 80 of a destination's 144 bytes.
    pub statistics: Option<Box<Statistics>>,
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
        let mut fields = ServiceFields::default();
        for attribute in attributes {
            fields.add(attribute);
        }
        fields.finish()
    }

    /// Reads a GET_SERVICE reply or dump entry (command NEW_SERVICE)
    /// straight from the bytes of its attributes: what
    /// [`Service::from_reply`] gives, without building the message's
    /// attribute lists first (see `Destination::decode_reply`).
    pub(crate) fn decode_reply(
        command: IpvsCommand,
        attributes: &[u8],
    ) -> Result<Self, ParseError> {
        fields::decode_reply::<ServiceFields>(command, attributes)
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

/// The attributes of a service nest, gathered one at a time: the one
/// reading of their meaning, whether they come from a parsed attribute list
/// or straight from the bytes.
#[derive(Default)]
struct ServiceFields {
    key: KeyFields,
    scheduler: Option<String>,
    flags: Option<ServiceFlags>,
    timeout: Option<u32>,
    netmask: Option<u32>,
    persistence_engine: Option<String>,
    stats: Option<Statistics>,
    stats64: Option<Statistics>,
}

impl NestFields for ServiceFields {
    type Object = Service;
    type Attribute = ServiceAttribute;
    const COMMAND: IpvsCommand = IpvsCommand::NewService;
    const NEST: (u16, &'static str) = (IPVS_CMD_ATTR_SERVICE, "IPVS_CMD_ATTR_SERVICE");
    const STATS: (u16, &'static str) = (
        ServiceAttribute::STATS_KIND,
        "invalid IPVS_SVC_ATTR_STATS value",
    );
    const STATS64: (u16, &'static str) = (
        ServiceAttribute::STATS64_KIND,
        "invalid IPVS_SVC_ATTR_STATS64 value",
    );

    fn statistics(&mut self, wide: bool) -> &mut Option<Statistics> {
        if wide {
            &mut self.stats64
        } else {
            &mut self.stats
        }
    }

    fn add(&mut self, attribute: &ServiceAttribute) {
        match attribute {
            ServiceAttribute::Scheduler(v) => self.scheduler = Some(v.clone()),
            // Only the bits the mask covers are meaningful (libipvs does the
            // same); the kernel sends mask = !0.
            ServiceAttribute::Flags { flags, mask } => {
                self.flags = Some(*flags & ServiceFlags::from_bits(*mask))
            }
            ServiceAttribute::Timeout(v) => self.timeout = Some(*v),
            ServiceAttribute::Netmask(v) => self.netmask = Some(*v),
            ServiceAttribute::PersistenceEngine(v) => self.persistence_engine = Some(v.clone()),
            ServiceAttribute::Stats(v) => self.stats = Some(Statistics::from_attributes(v)),
            ServiceAttribute::Stats64(v) => self.stats64 = Some(Statistics::from_attributes64(v)),
            other => self.key.add(other),
        }
    }

    fn finish(self) -> Result<Service, ParseError> {
        let key = self.key.finish()?;
        let netmask = self
            .netmask
            .ok_or(ParseError::MissingAttribute("IPVS_SVC_ATTR_NETMASK"))?;
        Ok(Service {
            key,
            scheduler: self
                .scheduler
                .ok_or(ParseError::MissingAttribute("IPVS_SVC_ATTR_SCHED_NAME"))?,
            flags: self
                .flags
                .ok_or(ParseError::MissingAttribute("IPVS_SVC_ATTR_FLAGS"))?,
            timeout: self
                .timeout
                .ok_or(ParseError::MissingAttribute("IPVS_SVC_ATTR_TIMEOUT"))?,
            netmask: Netmask::from_raw(netmask, key.family())?,
            persistence_engine: self.persistence_engine,
            statistics: Statistics::preferred(self.stats, self.stats64).map(Box::new),
        })
    }
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
