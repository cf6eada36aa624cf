//! Real servers behind a service (`IPVS_CMD_ATTR_DEST`, `IPVS_DEST_ATTR_*`).

mod attribute;

use std::fmt;
use std::net::{IpAddr, SocketAddr};

pub use attribute::DestinationAttribute;

use crate::fields::{self, NestFields};
use crate::message::IPVS_CMD_ATTR_DEST;
use crate::{
    AddressBytes, Family, IpvsAttribute, IpvsCommand, IpvsMessage, ParseError, RequestError,
    Statistics,
};

const IP_VS_CONN_F_MASQ: u32 = 0;
const IP_VS_CONN_F_LOCALNODE: u32 = 1;
const IP_VS_CONN_F_TUNNEL: u32 = 2;
const IP_VS_CONN_F_DROUTE: u32 = 3;
const IP_VS_CONN_F_BYPASS: u32 = 4;
const IP_VS_CONN_F_FWD_MASK: u32 = 0x7;

const IP_VS_CONN_F_TUNNEL_TYPE_IPIP: u8 = 0;
const IP_VS_CONN_F_TUNNEL_TYPE_GUE: u8 = 1;
const IP_VS_CONN_F_TUNNEL_TYPE_GRE: u8 = 2;

const IP_VS_TUNNEL_ENCAP_FLAG_NOCSUM: u16 = 0;
const IP_VS_TUNNEL_ENCAP_FLAG_CSUM: u16 = 1 << 0;
const IP_VS_TUNNEL_ENCAP_FLAG_REMCSUM: u16 = 1 << 1;

/// How packets reach a destination.
///
/// The tunnel parameters live in the [`Forwarding::Tunnel`] variant rather
/// than next to it: the kernel reports them for every destination (zeros when
/// not tunnelling) but only uses them for tunnelling, so tying them to the
/// variant keeps model -> attributes -> model an identity.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Forwarding {
    /// NAT (`-m`)
    Masquerade,
    /// The director itself serves (`IP_VS_CONN_F_LOCALNODE`).
    Local,
    /// IP-in-IP, GUE or GRE encapsulation (`-i`)
    Tunnel(Tunnel),
    /// Direct routing (`-g`)
    Route,
    /// Cache bypass
    Bypass,
    /// A value in 5..=7: the kernel does not validate the method, so another
    /// tool may have set one.
    Other(u32),
}

impl Forwarding {
    pub fn method(&self) -> u32 {
        match self {
            Forwarding::Masquerade => IP_VS_CONN_F_MASQ,
            Forwarding::Local => IP_VS_CONN_F_LOCALNODE,
            Forwarding::Tunnel(_) => IP_VS_CONN_F_TUNNEL,
            Forwarding::Route => IP_VS_CONN_F_DROUTE,
            Forwarding::Bypass => IP_VS_CONN_F_BYPASS,
            Forwarding::Other(value) => *value & IP_VS_CONN_F_FWD_MASK,
        }
    }

    /// Build from the method and, for tunnels, the tunnel parameters.
    pub fn from_method(method: u32, tunnel: Tunnel) -> Self {
        match method & IP_VS_CONN_F_FWD_MASK {
            IP_VS_CONN_F_MASQ => Forwarding::Masquerade,
            IP_VS_CONN_F_LOCALNODE => Forwarding::Local,
            IP_VS_CONN_F_TUNNEL => Forwarding::Tunnel(tunnel),
            IP_VS_CONN_F_DROUTE => Forwarding::Route,
            IP_VS_CONN_F_BYPASS => Forwarding::Bypass,
            other => Forwarding::Other(other),
        }
    }
}

impl fmt::Display for Forwarding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Forwarding::Masquerade => f.write_str("Masq"),
            Forwarding::Local => f.write_str("Local"),
            Forwarding::Tunnel(tunnel) => write!(f, "Tunnel({tunnel})"),
            Forwarding::Route => f.write_str("Route"),
            Forwarding::Bypass => f.write_str("Bypass"),
            Forwarding::Other(value) => write!(f, "method {value}"),
        }
    }
}

/// Tunnel parameters of a [`Forwarding::Tunnel`] destination.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Tunnel {
    pub kind: TunnelKind,
    /// Destination UDP port of GUE encapsulation; the kernel requires it
    /// non-zero for GUE and ignores it otherwise.
    pub port: u16,
    pub checksum: TunnelChecksum,
}

impl fmt::Display for Tunnel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind {
            TunnelKind::Ipip => write!(f, "ipip"),
            TunnelKind::Gue => write!(f, "gue port {} {}", self.port, self.checksum),
            TunnelKind::Gre => write!(f, "gre {}", self.checksum),
            TunnelKind::Other(kind) => write!(f, "type {kind}"),
        }
    }
}

/// `IP_VS_CONN_F_TUNNEL_TYPE_*`
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum TunnelKind {
    #[default]
    Ipip,
    Gue,
    Gre,
    Other(u8),
}

impl TunnelKind {
    pub fn to_raw(self) -> u8 {
        match self {
            TunnelKind::Ipip => IP_VS_CONN_F_TUNNEL_TYPE_IPIP,
            TunnelKind::Gue => IP_VS_CONN_F_TUNNEL_TYPE_GUE,
            TunnelKind::Gre => IP_VS_CONN_F_TUNNEL_TYPE_GRE,
            TunnelKind::Other(value) => value,
        }
    }

    pub fn from_raw(value: u8) -> Self {
        match value {
            IP_VS_CONN_F_TUNNEL_TYPE_IPIP => TunnelKind::Ipip,
            IP_VS_CONN_F_TUNNEL_TYPE_GUE => TunnelKind::Gue,
            IP_VS_CONN_F_TUNNEL_TYPE_GRE => TunnelKind::Gre,
            other => TunnelKind::Other(other),
        }
    }
}

/// `IP_VS_TUNNEL_ENCAP_FLAG_*` (GUE and GRE only).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum TunnelChecksum {
    #[default]
    NoChecksum,
    Checksum,
    RemoteChecksum,
    /// A combination the kernel stores without checking (it tests `CSUM`
    /// first, then `REMCSUM`).
    Other(u16),
}

impl TunnelChecksum {
    pub fn to_raw(self) -> u16 {
        match self {
            TunnelChecksum::NoChecksum => IP_VS_TUNNEL_ENCAP_FLAG_NOCSUM,
            TunnelChecksum::Checksum => IP_VS_TUNNEL_ENCAP_FLAG_CSUM,
            TunnelChecksum::RemoteChecksum => IP_VS_TUNNEL_ENCAP_FLAG_REMCSUM,
            TunnelChecksum::Other(value) => value,
        }
    }

    pub fn from_raw(value: u16) -> Self {
        match value {
            IP_VS_TUNNEL_ENCAP_FLAG_NOCSUM => TunnelChecksum::NoChecksum,
            IP_VS_TUNNEL_ENCAP_FLAG_CSUM => TunnelChecksum::Checksum,
            IP_VS_TUNNEL_ENCAP_FLAG_REMCSUM => TunnelChecksum::RemoteChecksum,
            other => TunnelChecksum::Other(other),
        }
    }
}

impl fmt::Display for TunnelChecksum {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TunnelChecksum::NoChecksum => f.write_str("nocsum"),
            TunnelChecksum::Checksum => f.write_str("csum"),
            TunnelChecksum::RemoteChecksum => f.write_str("remcsum"),
            TunnelChecksum::Other(value) => write!(f, "flags {value:#x}"),
        }
    }
}

/// Connection counts the kernel reports for a destination.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct ConnectionCounters {
    pub active: u32,
    pub inactive: u32,
    /// Persistence templates pointing at the destination.
    pub persistent: u32,
}

/// The largest weight the kernel takes: it keeps a destination's weight
/// in an `atomic_t` and refuses a negative one (`ip_vs_add_dest`:
/// `udest->weight < 0` is EINVAL), so the limit is `INT_MAX`, keepalived's
/// `IPVS_WEIGHT_LIMIT`.
pub const WEIGHT_LIMIT: u32 = i32::MAX as u32;

/// A real server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Destination {
    /// May be of another family than the service, for tunnels only.
    pub address: IpAddr,
    /// 0 for firewall-mark services forwarding without NAT.
    pub port: u16,
    pub forwarding: Forwarding,
    /// 0 quiesces the destination: no new connections.
    pub weight: u32,
    /// Stop scheduling above this many connections (0 = no limit).
    pub upper_threshold: u32,
    /// Resume scheduling below this many connections.
    pub lower_threshold: u32,
    /// Only in replies; ignored in requests.
    pub counters: Option<ConnectionCounters>,
    /// Only in replies; ignored in requests.
    /// Boxed: most tables held (a reconciler's, a listing without `--stats`)
    /// have none, and inline they were 80 of a destination's 144 bytes.
    pub statistics: Option<Box<Statistics>>,
}

impl Destination {
    /// A destination with weight 1 and no thresholds.
    pub fn new(address: SocketAddr, forwarding: Forwarding) -> Self {
        Destination {
            address: address.ip(),
            port: address.port(),
            forwarding,
            weight: 1,
            upper_threshold: 0,
            lower_threshold: 0,
            counters: None,
            statistics: None,
        }
    }

    pub fn family(&self) -> Family {
        Family::of(&self.address)
    }

    pub fn socket_address(&self) -> SocketAddr {
        SocketAddr::new(self.address, self.port)
    }

    /// Check what the kernel would reject, for a destination of a service of
    /// `service_family`.
    pub fn validate(&self, service_family: Family) -> Result<(), RequestError> {
        if self.weight > WEIGHT_LIMIT {
            return Err(RequestError::Weight(self.weight));
        }
        if self.lower_threshold > self.upper_threshold {
            return Err(RequestError::Thresholds {
                lower: self.lower_threshold,
                upper: self.upper_threshold,
            });
        }
        if let Forwarding::Tunnel(Tunnel {
            kind: TunnelKind::Gue,
            port: 0,
            ..
        }) = self.forwarding
        {
            return Err(RequestError::TunnelPort);
        }
        if self.family() != service_family && !matches!(self.forwarding, Forwarding::Tunnel(_)) {
            return Err(RequestError::MixedFamily {
                service: service_family,
                destination: self.family(),
            });
        }
        Ok(())
    }

    /// The identifying attributes (for DEL_DEST): family, 16-byte address,
    /// port. The family is always sent, so mixed-family destinations are
    /// found too.
    pub fn key_attributes(address: SocketAddr) -> Vec<DestinationAttribute> {
        vec![
            DestinationAttribute::Family(Family::of(&address.ip()).to_raw()),
            DestinationAttribute::Address(AddressBytes::padded(address.ip())),
            DestinationAttribute::Port(address.port()),
        ]
    }

    /// The full nest for NEW_DEST / SET_DEST. Tunnel attributes are sent only
    /// for tunnels; counters and statistics never.
    pub fn to_attributes(&self) -> Vec<DestinationAttribute> {
        let mut attributes = Self::key_attributes(self.socket_address());
        attributes.push(DestinationAttribute::Forwarding(self.forwarding.method()));
        attributes.push(DestinationAttribute::Weight(self.weight));
        if let Forwarding::Tunnel(tunnel) = self.forwarding {
            attributes.push(DestinationAttribute::TunnelType(tunnel.kind.to_raw()));
            attributes.push(DestinationAttribute::TunnelPort(tunnel.port));
            attributes.push(DestinationAttribute::TunnelFlags(tunnel.checksum.to_raw()));
        }
        attributes.push(DestinationAttribute::UpperThreshold(self.upper_threshold));
        attributes.push(DestinationAttribute::LowerThreshold(self.lower_threshold));
        attributes
    }

    /// Build the model from a full destination nest (a GET_DEST dump entry).
    ///
    /// Without `IPVS_DEST_ATTR_ADDR_FAMILY` (kernels before 3.18) a 4-byte
    /// address is taken as IPv4; a 16-byte one is ambiguous and rejected.
    pub fn from_attributes(attributes: &[DestinationAttribute]) -> Result<Self, ParseError> {
        let mut fields = DestinationFields::default();
        for attribute in attributes {
            fields.add(attribute);
        }
        fields.finish()
    }

    /// Reads a GET_DEST dump entry (command NEW_DEST) straight from the
    /// bytes of its attributes: what [`Destination::from_reply`] gives,
    /// without building the message's attribute lists first. Listing a
    /// large table is mostly this, and under emulation the lists cost more
    /// than the kernel's work (tests check that both ways agree on every
    /// captured reply).
    pub(crate) fn decode_reply(
        command: IpvsCommand,
        attributes: &[u8],
    ) -> Result<Self, ParseError> {
        fields::decode_reply::<DestinationFields>(command, attributes)
    }

    /// Parse one message of a GET_DEST dump (command NEW_DEST).
    pub fn from_reply(message: &IpvsMessage) -> Result<Self, ParseError> {
        message.expect_command(IpvsCommand::NewDestination)?;
        let nest = message
            .attributes
            .iter()
            .find_map(|attribute| match attribute {
                IpvsAttribute::Destination(nest) => Some(nest.as_slice()),
                _ => None,
            })
            .ok_or(ParseError::MissingAttribute("IPVS_CMD_ATTR_DEST"))?;
        Self::from_attributes(nest)
    }
}

/// The attributes of a destination nest, gathered one at a time: the one
/// reading of their meaning, whether they come from a parsed attribute list
/// or straight from the bytes.
#[derive(Default)]
struct DestinationFields {
    address: Option<AddressBytes>,
    port: Option<u16>,
    family: Option<u16>,
    method: Option<u32>,
    weight: Option<u32>,
    upper_threshold: Option<u32>,
    lower_threshold: Option<u32>,
    tunnel: Tunnel,
    counters: Option<ConnectionCounters>,
    stats: Option<Statistics>,
    stats64: Option<Statistics>,
}

impl NestFields for DestinationFields {
    type Object = Destination;
    type Attribute = DestinationAttribute;
    const COMMAND: IpvsCommand = IpvsCommand::NewDestination;
    const NEST: (u16, &'static str) = (IPVS_CMD_ATTR_DEST, "IPVS_CMD_ATTR_DEST");
    const STATS: (u16, &'static str) = (
        DestinationAttribute::STATS_KIND,
        "invalid IPVS_DEST_ATTR_STATS value",
    );
    const STATS64: (u16, &'static str) = (
        DestinationAttribute::STATS64_KIND,
        "invalid IPVS_DEST_ATTR_STATS64 value",
    );

    fn statistics(&mut self, wide: bool) -> &mut Option<Statistics> {
        if wide {
            &mut self.stats64
        } else {
            &mut self.stats
        }
    }

    fn add(&mut self, attribute: &DestinationAttribute) {
        match attribute {
            DestinationAttribute::Address(v) => self.address = Some(*v),
            DestinationAttribute::Port(v) => self.port = Some(*v),
            DestinationAttribute::Family(v) => self.family = Some(*v),
            DestinationAttribute::Forwarding(v) => self.method = Some(*v),
            DestinationAttribute::Weight(v) => self.weight = Some(*v),
            DestinationAttribute::UpperThreshold(v) => self.upper_threshold = Some(*v),
            DestinationAttribute::LowerThreshold(v) => self.lower_threshold = Some(*v),
            DestinationAttribute::TunnelType(v) => self.tunnel.kind = TunnelKind::from_raw(*v),
            DestinationAttribute::TunnelPort(v) => self.tunnel.port = *v,
            DestinationAttribute::TunnelFlags(v) => {
                self.tunnel.checksum = TunnelChecksum::from_raw(*v)
            }
            DestinationAttribute::ActiveConnections(v) => {
                self.counters.get_or_insert_default().active = *v
            }
            DestinationAttribute::InactiveConnections(v) => {
                self.counters.get_or_insert_default().inactive = *v
            }
            DestinationAttribute::PersistentConnections(v) => {
                self.counters.get_or_insert_default().persistent = *v
            }
            DestinationAttribute::Stats(v) => self.stats = Some(Statistics::from_attributes(v)),
            DestinationAttribute::Stats64(v) => {
                self.stats64 = Some(Statistics::from_attributes64(v))
            }
            _ => {}
        }
    }

    fn finish(self) -> Result<Destination, ParseError> {
        let address = self
            .address
            .ok_or(ParseError::MissingAttribute("IPVS_DEST_ATTR_ADDR"))?;
        let family = match (self.family, address) {
            (Some(raw), _) => Family::from_raw(raw, "IPVS_DEST_ATTR_ADDR_FAMILY")?,
            (None, AddressBytes::Four(_)) => Family::Inet,
            (None, AddressBytes::Sixteen(_)) => {
                return Err(ParseError::MissingAttribute("IPVS_DEST_ATTR_ADDR_FAMILY"));
            }
        };
        let method = self
            .method
            .ok_or(ParseError::MissingAttribute("IPVS_DEST_ATTR_FWD_METHOD"))?;
        Ok(Destination {
            address: address.to_ip(family, "IPVS_DEST_ATTR_ADDR")?,
            port: self
                .port
                .ok_or(ParseError::MissingAttribute("IPVS_DEST_ATTR_PORT"))?,
            forwarding: Forwarding::from_method(method, self.tunnel),
            weight: self
                .weight
                .ok_or(ParseError::MissingAttribute("IPVS_DEST_ATTR_WEIGHT"))?,
            upper_threshold: self
                .upper_threshold
                .ok_or(ParseError::MissingAttribute("IPVS_DEST_ATTR_U_THRESH"))?,
            lower_threshold: self
                .lower_threshold
                .ok_or(ParseError::MissingAttribute("IPVS_DEST_ATTR_L_THRESH"))?,
            counters: self.counters,
            statistics: Statistics::preferred(self.stats, self.stats64).map(Box::new),
        })
    }
}

#[cfg(test)]
mod tests;
