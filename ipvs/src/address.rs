//! Address families and addresses as IPVS puts them on the wire.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use netlink_packet_core::DecodeError;

use crate::ParseError;

/// An IPVS address family (the `AF_*` value of a service or destination).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Family {
    /// `AF_INET`
    Inet,
    /// `AF_INET6`
    Inet6,
}

impl Family {
    /// The family an address belongs to.
    pub fn of(address: &IpAddr) -> Self {
        match address {
            IpAddr::V4(_) => Family::Inet,
            IpAddr::V6(_) => Family::Inet6,
        }
    }

    /// The kernel's `AF_*` constant.
    pub fn to_raw(self) -> u16 {
        match self {
            Family::Inet => libc::AF_INET as u16,
            Family::Inet6 => libc::AF_INET6 as u16,
        }
    }

    /// Parse an `AF_*` constant; `attribute` names the source in the error.
    pub fn from_raw(value: u16, attribute: &'static str) -> Result<Self, ParseError> {
        match i32::from(value) {
            libc::AF_INET => Ok(Family::Inet),
            libc::AF_INET6 => Ok(Family::Inet6),
            _ => Err(ParseError::UnknownFamily { attribute, value }),
        }
    }
}

impl fmt::Display for Family {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Family::Inet => "IPv4",
            Family::Inet6 => "IPv6",
        })
    }
}

/// The bytes of an address attribute exactly as they were on the wire.
///
/// The kernel reads service and destination addresses into a
/// `union nf_inet_addr` (16 bytes) and always answers with all 16 bytes, the
/// IPv4 address in the first 4 and zeros after. Its policy accepts anything up
/// to 16 bytes in requests, so other tools send 4. The bytes alone do not say
/// which family a 16-byte value is: that comes from the sibling family
/// attribute, hence [`AddressBytes::to_ip`] takes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AddressBytes {
    /// A bare IPv4 address.
    Four([u8; 4]),
    /// A full `nf_inet_addr`: IPv6, or IPv4 followed by 12 zero bytes.
    Sixteen([u8; 16]),
}

impl AddressBytes {
    /// Encode the way the kernel and ipvsadm do: always 16 bytes.
    pub fn padded(address: IpAddr) -> Self {
        match address {
            IpAddr::V4(v4) => {
                let mut bytes = [0; 16];
                bytes[..4].copy_from_slice(&v4.octets());
                AddressBytes::Sixteen(bytes)
            }
            IpAddr::V6(v6) => AddressBytes::Sixteen(v6.octets()),
        }
    }

    /// Parse the value of an address attribute (4 or 16 bytes).
    pub fn parse(payload: &[u8]) -> Result<Self, DecodeError> {
        if let Ok(four) = <[u8; 4]>::try_from(payload) {
            Ok(AddressBytes::Four(four))
        } else if let Ok(sixteen) = <[u8; 16]>::try_from(payload) {
            Ok(AddressBytes::Sixteen(sixteen))
        } else {
            Err(DecodeError::invalid_ip_address(payload.len()))
        }
    }

    /// The raw bytes.
    pub fn as_slice(&self) -> &[u8] {
        match self {
            AddressBytes::Four(bytes) => bytes,
            AddressBytes::Sixteen(bytes) => bytes,
        }
    }

    /// Interpret the bytes in `family`; `attribute` names the source in the
    /// error.
    ///
    /// For IPv4 the first 4 bytes are taken, whatever follows (the kernel
    /// itself only ever reads `addr.ip` of an IPv4 `nf_inet_addr`).
    pub fn to_ip(&self, family: Family, attribute: &'static str) -> Result<IpAddr, ParseError> {
        match (family, self) {
            (Family::Inet, AddressBytes::Four(bytes)) => Ok(Ipv4Addr::from(*bytes).into()),
            (Family::Inet, AddressBytes::Sixteen(bytes)) => {
                Ok(Ipv4Addr::new(bytes[0], bytes[1], bytes[2], bytes[3]).into())
            }
            (Family::Inet6, AddressBytes::Sixteen(bytes)) => Ok(Ipv6Addr::from(*bytes).into()),
            (Family::Inet6, AddressBytes::Four(_)) => Err(ParseError::AddressLength {
                attribute,
                family,
                length: 4,
            }),
        }
    }
}

impl From<IpAddr> for AddressBytes {
    fn from(address: IpAddr) -> Self {
        AddressBytes::padded(address)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn padded_ipv4_is_sixteen_bytes_with_address_first() {
        let bytes = AddressBytes::padded("10.0.0.1".parse().unwrap());
        assert_eq!(
            bytes.as_slice(),
            &[10, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]
        );
        assert_eq!(
            bytes.to_ip(Family::Inet, "test").unwrap(),
            "10.0.0.1".parse::<IpAddr>().unwrap()
        );
    }

    #[test]
    fn four_bytes_cannot_be_ipv6() {
        let bytes = AddressBytes::parse(&[10, 0, 0, 1]).unwrap();
        let error = bytes
            .to_ip(Family::Inet6, "IPVS_SVC_ATTR_ADDR")
            .unwrap_err();
        assert!(matches!(
            error,
            ParseError::AddressLength {
                attribute: "IPVS_SVC_ATTR_ADDR",
                length: 4,
                ..
            }
        ));
    }

    #[test]
    fn other_lengths_are_rejected() {
        assert!(AddressBytes::parse(&[1, 2, 3, 4, 5, 6, 7, 8]).is_err());
        assert!(AddressBytes::parse(&[]).is_err());
    }

    #[test]
    fn family_constants() {
        assert_eq!(Family::Inet.to_raw(), 2);
        assert_eq!(Family::Inet6.to_raw(), 10);
        assert_eq!(Family::from_raw(10, "x").unwrap(), Family::Inet6);
        assert!(Family::from_raw(7, "x").is_err());
    }
}
