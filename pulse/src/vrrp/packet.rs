//! The VRRP advertisement on the wire, versions 2 (RFC 3768) and 3
//! (RFC 5798), as keepalived 2.2 sends and checks it.
//!
//! ```text
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |Version| Type  | Virtual Rtr ID|   Priority    | Count IP Addrs|
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! v2: |   Auth Type   |   Adver Int   |          Checksum         |
//! v3: |(rsvd)|     Max Adver Int      |          Checksum         |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                 IPv4 or IPv6 address(es) ...                  |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! v2 only: |          Authentication Data (8 bytes)               |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! ```
//!
//! [`Packet`] is a view over the bytes after the IP header; [`Repr`] the
//! parsed, validated advertisement. The checksum of version 2 covers the
//! VRRP packet alone; that of version 3 starts with the IPv4 or IPv6 pseudo
//! header (source, destination, protocol 112, length), so parsing and
//! emitting take the IP source and destination. keepalived computes the
//! IPv4 version 3 checksum with the destination the packet is sent to, the
//! multicast group or the unicast peer; the checksum alone tells a receiver
//! whether the sender used the one it received on. Older keepalived
//! versions used the multicast group for unicast adverts too, and 2.2
//! still accepts that on unicast (then sends that way itself,
//! `unicast_checksum_compat`): a receiver wanting the same parses again
//! with the group as destination after [`Error::BadChecksum`].
//!
//! keepalived sends version 2 only over IPv4 (it makes IPv6 instances
//! version 3), so version 2 over IPv6 is refused here rather than guessed.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// IP protocol number of VRRP.
pub const PROTOCOL: u8 = 112;
/// The fixed part of every advertisement.
pub const HEADER_LEN: usize = 8;
/// Version 2's authentication data, after the addresses.
pub const AUTHENTICATION_LEN: usize = 8;
/// Advertisements are the only packet type VRRP defines.
pub const TYPE_ADVERTISEMENT: u8 = 1;
/// RFC 3768 authentication types (RFC 5798 dropped them).
pub const AUTHENTICATION_NONE: u8 = 0;
pub const AUTHENTICATION_PASSWORD: u8 = 1;
pub const AUTHENTICATION_IPSEC_AH: u8 = 2;
/// Version 3's interval field is 12 bits of centiseconds.
pub const MAX_INTERVAL_CENTISECONDS: u16 = 0x0fff;

mod field {
    pub const VERSION_TYPE: usize = 0;
    pub const VIRTUAL_ROUTER_ID: usize = 1;
    pub const PRIORITY: usize = 2;
    pub const COUNT: usize = 3;
    pub const AUTHENTICATION_TYPE: usize = 4;
    pub const ADVERT_INTERVAL: usize = 5;
    pub const MAX_ADVERT_INTERVAL: std::ops::Range<usize> = 4..6;
    pub const CHECKSUM: std::ops::Range<usize> = 6..8;
}

/// Why bytes are not an advertisement. Each is one reason a receiver
/// counts; [`super::DropReason`] has one variant per error.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, thiserror::Error)]
pub enum Error {
    #[error("shorter than the VRRP header or than its address count says")]
    Truncated,
    #[error("longer than its address count says")]
    TooLong,
    #[error("VRRP version {0}, neither 2 nor 3")]
    WrongVersion(u8),
    #[error("packet type {0}, not an advertisement")]
    WrongType(u8),
    #[error("bad checksum")]
    BadChecksum,
    #[error("the IP source and destination are of different families")]
    MixedFamilies,
    #[error("VRRP version 2 over IPv6")]
    Version2OverIpv6,
}

/// The address family of the IP packet carrying an advertisement.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Family {
    Ipv4,
    Ipv6,
}

impl Family {
    pub fn of(address: &IpAddr) -> Family {
        match address {
            IpAddr::V4(_) => Family::Ipv4,
            IpAddr::V6(_) => Family::Ipv6,
        }
    }

    pub fn address_len(self) -> usize {
        match self {
            Family::Ipv4 => 4,
            Family::Ipv6 => 16,
        }
    }
}

/// The family of a source and destination pair.
pub fn family_of(source: &IpAddr, destination: &IpAddr) -> Result<Family, Error> {
    let family = Family::of(source);
    if family == Family::of(destination) {
        Ok(family)
    } else {
        Err(Error::MixedFamilies)
    }
}

/// A read/write view over a VRRP packet (the IP payload).
#[derive(Debug, Clone)]
pub struct Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Packet<T> {
    /// A view without checks; accessors may panic on a short buffer.
    pub fn new_unchecked(buffer: T) -> Packet<T> {
        Packet { buffer }
    }

    /// A view whose fixed header is there; [`Packet::check_len`] checks the
    /// rest once the version and family are known.
    pub fn new_checked(buffer: T) -> Result<Packet<T>, Error> {
        let packet = Packet::new_unchecked(buffer);
        if packet.buffer.as_ref().len() < HEADER_LEN {
            return Err(Error::Truncated);
        }
        Ok(packet)
    }

    /// The length the header says the packet has, for `family`.
    pub fn expected_len(&self, family: Family) -> usize {
        let authentication = if self.version() == 2 {
            AUTHENTICATION_LEN
        } else {
            0
        };
        HEADER_LEN + usize::from(self.address_count()) * family.address_len() + authentication
    }

    /// keepalived drops any advertisement whose length is not exactly the
    /// one its header gives, longer ones too.
    pub fn check_len(&self, family: Family) -> Result<(), Error> {
        let len = self.buffer.as_ref().len();
        if len < HEADER_LEN {
            return Err(Error::Truncated);
        }
        let expected = self.expected_len(family);
        match len.cmp(&expected) {
            std::cmp::Ordering::Less => Err(Error::Truncated),
            std::cmp::Ordering::Greater => Err(Error::TooLong),
            std::cmp::Ordering::Equal => Ok(()),
        }
    }

    pub fn into_inner(self) -> T {
        self.buffer
    }

    fn bytes(&self) -> &[u8] {
        self.buffer.as_ref()
    }

    pub fn version(&self) -> u8 {
        self.bytes()[field::VERSION_TYPE] >> 4
    }

    pub fn packet_type(&self) -> u8 {
        self.bytes()[field::VERSION_TYPE] & 0x0f
    }

    pub fn virtual_router_id(&self) -> u8 {
        self.bytes()[field::VIRTUAL_ROUTER_ID]
    }

    pub fn priority(&self) -> u8 {
        self.bytes()[field::PRIORITY]
    }

    pub fn address_count(&self) -> u8 {
        self.bytes()[field::COUNT]
    }

    /// Version 2.
    pub fn authentication_type(&self) -> u8 {
        self.bytes()[field::AUTHENTICATION_TYPE]
    }

    /// Version 2, in seconds.
    pub fn advert_interval(&self) -> u8 {
        self.bytes()[field::ADVERT_INTERVAL]
    }

    /// Version 3, in centiseconds; the 4 reserved bits are masked off, as
    /// keepalived does.
    pub fn max_advert_interval(&self) -> u16 {
        let bytes = &self.bytes()[field::MAX_ADVERT_INTERVAL];
        u16::from_be_bytes([bytes[0], bytes[1]]) & MAX_INTERVAL_CENTISECONDS
    }

    pub fn checksum(&self) -> u16 {
        let bytes = &self.bytes()[field::CHECKSUM];
        u16::from_be_bytes([bytes[0], bytes[1]])
    }

    /// The `index`th address as IPv4.
    pub fn ipv4_address(&self, index: usize) -> Ipv4Addr {
        let start = HEADER_LEN + index * 4;
        let bytes: [u8; 4] = self.bytes()[start..start + 4].try_into().unwrap();
        Ipv4Addr::from(bytes)
    }

    /// The `index`th address as IPv6.
    pub fn ipv6_address(&self, index: usize) -> Ipv6Addr {
        let start = HEADER_LEN + index * 16;
        let bytes: [u8; 16] = self.bytes()[start..start + 16].try_into().unwrap();
        Ipv6Addr::from(bytes)
    }

    /// Version 2 (IPv4): the 8 bytes after the addresses.
    pub fn authentication_data(&self) -> [u8; AUTHENTICATION_LEN] {
        let start = HEADER_LEN + usize::from(self.address_count()) * 4;
        self.bytes()[start..start + AUTHENTICATION_LEN]
            .try_into()
            .unwrap()
    }

    /// Whether the checksum holds: over the VRRP packet for version 2,
    /// with the pseudo header for version 3.
    pub fn verify_checksum(&self, source: &IpAddr, destination: &IpAddr) -> bool {
        let data = self.bytes();
        let sum = if self.version() == 2 {
            checksum::sum(data)
        } else {
            checksum::sum(data) + checksum::pseudo_header(source, destination, data.len())
        };
        checksum::fold(sum) == 0xffff
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    fn bytes_mut(&mut self) -> &mut [u8] {
        self.buffer.as_mut()
    }

    pub fn set_version_and_type(&mut self, version: u8, packet_type: u8) {
        self.bytes_mut()[field::VERSION_TYPE] = (version << 4) | (packet_type & 0x0f);
    }

    pub fn set_virtual_router_id(&mut self, value: u8) {
        self.bytes_mut()[field::VIRTUAL_ROUTER_ID] = value;
    }

    pub fn set_priority(&mut self, value: u8) {
        self.bytes_mut()[field::PRIORITY] = value;
    }

    pub fn set_address_count(&mut self, value: u8) {
        self.bytes_mut()[field::COUNT] = value;
    }

    pub fn set_authentication_type(&mut self, value: u8) {
        self.bytes_mut()[field::AUTHENTICATION_TYPE] = value;
    }

    pub fn set_advert_interval(&mut self, seconds: u8) {
        self.bytes_mut()[field::ADVERT_INTERVAL] = seconds;
    }

    /// Keeps the reserved bits zero, as keepalived does.
    pub fn set_max_advert_interval(&mut self, centiseconds: u16) {
        let value = centiseconds & MAX_INTERVAL_CENTISECONDS;
        self.bytes_mut()[field::MAX_ADVERT_INTERVAL].copy_from_slice(&value.to_be_bytes());
    }

    pub fn set_checksum(&mut self, value: u16) {
        self.bytes_mut()[field::CHECKSUM].copy_from_slice(&value.to_be_bytes());
    }

    pub fn set_ipv4_address(&mut self, index: usize, address: Ipv4Addr) {
        let start = HEADER_LEN + index * 4;
        self.bytes_mut()[start..start + 4].copy_from_slice(&address.octets());
    }

    pub fn set_ipv6_address(&mut self, index: usize, address: Ipv6Addr) {
        let start = HEADER_LEN + index * 16;
        self.bytes_mut()[start..start + 16].copy_from_slice(&address.octets());
    }

    pub fn set_authentication_data(&mut self, data: &[u8; AUTHENTICATION_LEN]) {
        let start = HEADER_LEN + usize::from(self.address_count()) * 4;
        self.bytes_mut()[start..start + AUTHENTICATION_LEN].copy_from_slice(data);
    }

    /// Computes and stores the checksum (see [`Packet::verify_checksum`]).
    pub fn fill_checksum(&mut self, source: &IpAddr, destination: &IpAddr) {
        self.set_checksum(0);
        let data = self.bytes();
        let mut sum = checksum::sum(data);
        if self.version() != 2 {
            sum += checksum::pseudo_header(source, destination, data.len());
        }
        let value = !checksum::fold(sum);
        self.set_checksum(value);
    }
}

/// The addresses of an advertisement; the family is that of the IP packet.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Addresses {
    Ipv4(Vec<Ipv4Addr>),
    Ipv6(Vec<Ipv6Addr>),
}

impl Addresses {
    pub fn family(&self) -> Family {
        match self {
            Addresses::Ipv4(_) => Family::Ipv4,
            Addresses::Ipv6(_) => Family::Ipv6,
        }
    }

    pub fn len(&self) -> usize {
        match self {
            Addresses::Ipv4(addresses) => addresses.len(),
            Addresses::Ipv6(addresses) => addresses.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn contains(&self, address: &IpAddr) -> bool {
        match (self, address) {
            (Addresses::Ipv4(addresses), IpAddr::V4(address)) => addresses.contains(address),
            (Addresses::Ipv6(addresses), IpAddr::V6(address)) => addresses.contains(address),
            _ => false,
        }
    }
}

/// What differs between the two versions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// RFC 3768.
    Version2 {
        /// Seconds.
        advert_interval: u8,
        /// [`AUTHENTICATION_NONE`], [`AUTHENTICATION_PASSWORD`],
        /// [`AUTHENTICATION_IPSEC_AH`] or any other value a sender put
        /// there (the receiver decides what to accept).
        authentication_type: u8,
        /// The password, NUL-padded, for type 1; what was sent otherwise.
        authentication_data: [u8; AUTHENTICATION_LEN],
    },
    /// RFC 5798.
    Version3 {
        /// Centiseconds, 12 bits.
        max_advert_interval: u16,
    },
}

impl Kind {
    pub fn version(&self) -> u8 {
        match self {
            Kind::Version2 { .. } => 2,
            Kind::Version3 { .. } => 3,
        }
    }
}

/// A validated advertisement.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Repr {
    pub virtual_router_id: u8,
    pub priority: u8,
    pub kind: Kind,
    pub addresses: Addresses,
}

impl Repr {
    /// Parses and validates the VRRP packet `packet` that came from
    /// `source` to `destination` (version, type, length against the
    /// address count and family, checksum), in the order keepalived checks.
    pub fn parse<T: AsRef<[u8]>>(
        packet: &Packet<T>,
        source: &IpAddr,
        destination: &IpAddr,
    ) -> Result<Repr, Error> {
        let family = family_of(source, destination)?;
        if packet.bytes().len() < HEADER_LEN {
            return Err(Error::Truncated);
        }
        let version = packet.version();
        if version != 2 && version != 3 {
            return Err(Error::WrongVersion(version));
        }
        if version == 2 && family == Family::Ipv6 {
            return Err(Error::Version2OverIpv6);
        }
        packet.check_len(family)?;
        if packet.packet_type() != TYPE_ADVERTISEMENT {
            return Err(Error::WrongType(packet.packet_type()));
        }
        if !packet.verify_checksum(source, destination) {
            return Err(Error::BadChecksum);
        }
        let count = usize::from(packet.address_count());
        let addresses = match family {
            Family::Ipv4 => Addresses::Ipv4((0..count).map(|i| packet.ipv4_address(i)).collect()),
            Family::Ipv6 => Addresses::Ipv6((0..count).map(|i| packet.ipv6_address(i)).collect()),
        };
        let kind = if version == 2 {
            Kind::Version2 {
                advert_interval: packet.advert_interval(),
                authentication_type: packet.authentication_type(),
                authentication_data: packet.authentication_data(),
            }
        } else {
            Kind::Version3 {
                max_advert_interval: packet.max_advert_interval(),
            }
        };
        Ok(Repr {
            virtual_router_id: packet.virtual_router_id(),
            priority: packet.priority(),
            kind,
            addresses,
        })
    }

    /// The packet's length in bytes.
    pub fn buffer_len(&self) -> usize {
        let authentication = match self.kind {
            Kind::Version2 { .. } => AUTHENTICATION_LEN,
            Kind::Version3 { .. } => 0,
        };
        HEADER_LEN + self.address_count() * self.addresses.family().address_len() + authentication
    }

    /// The count field holds one byte: more addresses are not sent.
    fn address_count(&self) -> usize {
        self.addresses.len().min(255)
    }

    /// Writes the advertisement into `packet` (exactly
    /// [`Repr::buffer_len`] bytes) with its checksum for `source` and
    /// `destination`. More than 255 addresses cannot be sent: the count is
    /// one byte, so only the first 255 are written (keepalived refuses such
    /// a configuration).
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(
        &self,
        packet: &mut Packet<T>,
        source: &IpAddr,
        destination: &IpAddr,
    ) {
        let count = self.address_count();
        packet.set_version_and_type(self.kind.version(), TYPE_ADVERTISEMENT);
        packet.set_virtual_router_id(self.virtual_router_id);
        packet.set_priority(self.priority);
        packet.set_address_count(count as u8);
        match self.kind {
            Kind::Version2 {
                advert_interval,
                authentication_type,
                ..
            } => {
                packet.set_authentication_type(authentication_type);
                packet.set_advert_interval(advert_interval);
            }
            Kind::Version3 {
                max_advert_interval,
            } => packet.set_max_advert_interval(max_advert_interval),
        }
        match &self.addresses {
            Addresses::Ipv4(addresses) => {
                for (index, address) in addresses.iter().take(count).enumerate() {
                    packet.set_ipv4_address(index, *address);
                }
            }
            Addresses::Ipv6(addresses) => {
                for (index, address) in addresses.iter().take(count).enumerate() {
                    packet.set_ipv6_address(index, *address);
                }
            }
        }
        if let Kind::Version2 {
            authentication_data,
            ..
        } = &self.kind
        {
            packet.set_authentication_data(authentication_data);
        }
        packet.fill_checksum(source, destination);
    }

    /// The advertisement as bytes.
    pub fn to_bytes(&self, source: &IpAddr, destination: &IpAddr) -> Vec<u8> {
        let mut packet = Packet::new_unchecked(vec![0; self.buffer_len()]);
        self.emit(&mut packet, source, destination);
        packet.into_inner()
    }
}

/// The Internet checksum (RFC 1071).
mod checksum {
    use std::net::IpAddr;

    /// The ones'-complement sum of `data` as 16-bit big-endian words (an odd
    /// last byte padded with zero), not yet folded.
    pub fn sum(data: &[u8]) -> u32 {
        let mut chunks = data.chunks_exact(2);
        let mut total: u32 = 0;
        for chunk in &mut chunks {
            total += u32::from(u16::from_be_bytes([chunk[0], chunk[1]]));
            // Folding as we go keeps the sum from overflowing on any
            // length.
            total = (total & 0xffff) + (total >> 16);
        }
        if let [last] = chunks.remainder() {
            total += u32::from(*last) << 8;
        }
        total
    }

    pub fn fold(mut total: u32) -> u16 {
        while total > 0xffff {
            total = (total & 0xffff) + (total >> 16);
        }
        total as u16
    }

    /// The sum of the IPv4 (RFC 5798 5.2.8, as RFC 768) or IPv6 (RFC 8200
    /// 8.1) pseudo header for protocol 112 and `len` bytes.
    pub fn pseudo_header(source: &IpAddr, destination: &IpAddr, len: usize) -> u32 {
        let mut total = u32::from(super::PROTOCOL);
        for address in [source, destination] {
            total += match address {
                IpAddr::V4(address) => sum(&address.octets()),
                IpAddr::V6(address) => sum(&address.octets()),
            };
        }
        // IPv4 has a 16-bit length, IPv6 a 32-bit one: the same sum for the
        // lengths a VRRP packet can have.
        let len = len as u32;
        total + (len >> 16) + (len & 0xffff)
    }
}
