//! The TCP header (RFC 9293 section 3.1) of the half-open check's SYN and of
//! its replies, smoltcp style: a checked view over bytes ([`Packet`]) and
//! its meaning ([`Repr`]); no I/O.
//!
//! ```text
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |          Source Port          |       Destination Port        |
//! |                        Sequence Number                        |
//! |                    Acknowledgment Number                      |
//! |  Data |       |C|E|U|A|P|R|S|F|                               |
//! | Offset| Rsrvd |W|C|R|C|S|S|Y|I|            Window             |
//! |           Checksum            |         Urgent Pointer        |
//! |                    Options (data offset - 5 words)            |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! ```

use std::net::IpAddr;

/// The length of a header without options: the SYN nanny sends.
pub const HEADER_LENGTH: usize = 20;
/// The length of an IPv4 header without options.
pub const IPV4_HEADER_LENGTH: usize = 20;

mod field {
    use std::ops::Range;
    pub const SOURCE_PORT: Range<usize> = 0..2;
    pub const DESTINATION_PORT: Range<usize> = 2..4;
    pub const SEQUENCE: Range<usize> = 4..8;
    pub const ACKNOWLEDGMENT: Range<usize> = 8..12;
    pub const DATA_OFFSET: usize = 12;
    pub const FLAGS: usize = 13;
    pub const WINDOW: Range<usize> = 14..16;
    pub const CHECKSUM: Range<usize> = 16..18;
    pub const URGENT: Range<usize> = 18..20;
}

pub const FLAG_FIN: u8 = 0x01;
pub const FLAG_SYN: u8 = 0x02;
pub const FLAG_RST: u8 = 0x04;
pub const FLAG_ACK: u8 = 0x10;

/// The IPPROTO_TCP number, in the pseudo-header.
const PROTOCOL_TCP: u8 = 6;

/// Why bytes are not a TCP segment this side takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    #[error("{0} bytes: shorter than a TCP header")]
    Truncated(usize),
    #[error("data offset {offset} words does not fit the {received} bytes received")]
    DataOffset { offset: u8, received: usize },
    #[error("checksum {0:#06x} is wrong")]
    Checksum(u16),
    #[error("not an IPv4 packet carrying TCP")]
    NotIpv4Tcp,
}

/// A TCP segment in a buffer; [`Packet::new_checked`] makes sure every
/// field's bytes are there.
#[derive(Debug, Clone)]
pub struct Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Packet<T> {
    /// A view over `buffer`, without checks: for building a segment in a
    /// buffer of at least [`HEADER_LENGTH`] bytes.
    pub fn new_unchecked(buffer: T) -> Packet<T> {
        Packet { buffer }
    }

    /// A view over `buffer` when it holds a whole header, options included.
    pub fn new_checked(buffer: T) -> Result<Packet<T>, Error> {
        let packet = Packet::new_unchecked(buffer);
        let received = packet.buffer.as_ref().len();
        if received < HEADER_LENGTH {
            return Err(Error::Truncated(received));
        }
        let offset = packet.data_offset();
        let header = usize::from(offset) * 4;
        if header < HEADER_LENGTH || header > received {
            return Err(Error::DataOffset { offset, received });
        }
        Ok(packet)
    }

    fn u16_at(&self, range: std::ops::Range<usize>) -> u16 {
        let bytes = &self.buffer.as_ref()[range];
        u16::from_be_bytes([bytes[0], bytes[1]])
    }

    fn u32_at(&self, range: std::ops::Range<usize>) -> u32 {
        let bytes = &self.buffer.as_ref()[range];
        u32::from_be_bytes([bytes[0], bytes[1], bytes[2], bytes[3]])
    }

    pub fn source_port(&self) -> u16 {
        self.u16_at(field::SOURCE_PORT)
    }

    pub fn destination_port(&self) -> u16 {
        self.u16_at(field::DESTINATION_PORT)
    }

    pub fn sequence(&self) -> u32 {
        self.u32_at(field::SEQUENCE)
    }

    pub fn acknowledgment(&self) -> u32 {
        self.u32_at(field::ACKNOWLEDGMENT)
    }

    /// The header's length in 32-bit words.
    pub fn data_offset(&self) -> u8 {
        self.buffer.as_ref()[field::DATA_OFFSET] >> 4
    }

    pub fn flags(&self) -> u8 {
        self.buffer.as_ref()[field::FLAGS]
    }

    pub fn window(&self) -> u16 {
        self.u16_at(field::WINDOW)
    }

    pub fn checksum(&self) -> u16 {
        self.u16_at(field::CHECKSUM)
    }

    /// Whether the checksum is right for a segment from `source` to
    /// `destination`: the whole segment's one's complement sum with the
    /// pseudo-header's is 0xffff. Also right: a segment that a sender on
    /// this machine left for the hardware to finish (CHECKSUM_PARTIAL over
    /// loopback or a veth pair, which raw sockets see before anyone
    /// finishes it): its field holds the pseudo-header's sum alone, as
    /// tcpdump shows ("incorrect cksum") on `lo`. A corrupted segment
    /// passes either test with odds of 2 in 65,536, and must then also
    /// carry the probe's ports and its random acknowledgment number.
    pub fn verify_checksum(&self, source: IpAddr, destination: IpAddr) -> bool {
        let bytes = self.buffer.as_ref();
        let pseudo = pseudo_header_sum(source, destination, bytes.len());
        if fold(sum(bytes, pseudo)) == 0xffff {
            return true;
        }
        self.checksum() == fold(pseudo)
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    fn set_u16(&mut self, range: std::ops::Range<usize>, value: u16) {
        self.buffer.as_mut()[range].copy_from_slice(&value.to_be_bytes());
    }

    fn set_u32(&mut self, range: std::ops::Range<usize>, value: u32) {
        self.buffer.as_mut()[range].copy_from_slice(&value.to_be_bytes());
    }

    /// Fills in the checksum over the whole buffer, for a segment from
    /// `source` to `destination`.
    pub fn fill_checksum(&mut self, source: IpAddr, destination: IpAddr) {
        self.set_u16(field::CHECKSUM, 0);
        let bytes = self.buffer.as_ref();
        let pseudo = pseudo_header_sum(source, destination, bytes.len());
        let checksum = !fold(sum(bytes, pseudo));
        self.set_u16(field::CHECKSUM, checksum);
    }
}

/// What a segment says, as far as the half-open check cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Repr {
    pub source_port: u16,
    pub destination_port: u16,
    pub sequence: u32,
    pub acknowledgment: u32,
    pub flags: u8,
    pub window: u16,
}

/// What a reply says of the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    /// SYN-ACK: the server's kernel took the handshake on.
    Accepted,
    /// RST: nothing listens (connect's "refused").
    Refused,
}

impl Repr {
    /// The SYN of a probe.
    pub fn syn(source_port: u16, destination_port: u16, sequence: u32) -> Repr {
        Repr {
            source_port,
            destination_port,
            sequence,
            acknowledgment: 0,
            flags: FLAG_SYN,
            // Any window will do: nanny never takes data. Linux's usual
            // first window, so that the SYN looks ordinary.
            window: 64_240,
        }
    }

    /// The segment in `packet`, its checksum checked for `source` to
    /// `destination`.
    pub fn parse<T: AsRef<[u8]>>(
        packet: &Packet<T>,
        source: IpAddr,
        destination: IpAddr,
    ) -> Result<Repr, Error> {
        if !packet.verify_checksum(source, destination) {
            return Err(Error::Checksum(packet.checksum()));
        }
        Ok(Repr::parse_unverified(packet))
    }

    /// The segment in `packet`, when the kernel has checked its checksum
    /// (IPv6 raw sockets with IPV6_CHECKSUM).
    pub fn parse_unverified<T: AsRef<[u8]>>(packet: &Packet<T>) -> Repr {
        Repr {
            source_port: packet.source_port(),
            destination_port: packet.destination_port(),
            sequence: packet.sequence(),
            acknowledgment: packet.acknowledgment(),
            flags: packet.flags(),
            window: packet.window(),
        }
    }

    /// The header's length once emitted: no options.
    pub fn header_length(&self) -> usize {
        HEADER_LENGTH
    }

    /// Writes the header into `packet` (exactly [`HEADER_LENGTH`] bytes),
    /// its checksum for `source` to `destination`.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(
        &self,
        packet: &mut Packet<T>,
        source: IpAddr,
        destination: IpAddr,
    ) {
        packet.set_u16(field::SOURCE_PORT, self.source_port);
        packet.set_u16(field::DESTINATION_PORT, self.destination_port);
        packet.set_u32(field::SEQUENCE, self.sequence);
        packet.set_u32(field::ACKNOWLEDGMENT, self.acknowledgment);
        packet.buffer.as_mut()[field::DATA_OFFSET] = ((HEADER_LENGTH / 4) as u8) << 4;
        packet.buffer.as_mut()[field::FLAGS] = self.flags;
        packet.set_u16(field::WINDOW, self.window);
        packet.set_u16(field::URGENT, 0);
        packet.fill_checksum(source, destination);
    }

    /// What this segment answers to a SYN sent with sequence number
    /// `sequence`, if it answers it: a SYN-ACK or a reset acknowledging
    /// exactly the SYN (RFC 9293 3.10.7.1: a reset to a SYN in LISTEN's
    /// absence carries ACK, acknowledgment SYN's sequence + 1).
    pub fn answer_to(&self, sequence: u32) -> Option<Answer> {
        if self.flags & FLAG_ACK == 0 || self.acknowledgment != sequence.wrapping_add(1) {
            return None;
        }
        if self.flags & FLAG_RST != 0 {
            Some(Answer::Refused)
        } else if self.flags & FLAG_SYN != 0 && self.flags & FLAG_FIN == 0 {
            Some(Answer::Accepted)
        } else {
            None
        }
    }
}

/// The source, destination and TCP segment of an IPv4 packet as an IPv4 raw
/// socket receives it (the IP header first), when it is a whole TCP one.
pub fn split_ipv4(packet: &[u8]) -> Result<(IpAddr, IpAddr, &[u8]), Error> {
    if packet.len() < IPV4_HEADER_LENGTH || packet[0] >> 4 != 4 || packet[9] != PROTOCOL_TCP {
        return Err(Error::NotIpv4Tcp);
    }
    let header = usize::from(packet[0] & 0x0f) * 4;
    let total = usize::from(u16::from_be_bytes([packet[2], packet[3]]));
    // A fragment's offset or "more fragments" bit: not a whole segment.
    let fragment = u16::from_be_bytes([packet[6], packet[7]]) & 0x3fff;
    if header < IPV4_HEADER_LENGTH || total < header || total > packet.len() || fragment != 0 {
        return Err(Error::NotIpv4Tcp);
    }
    let source = IpAddr::from([packet[12], packet[13], packet[14], packet[15]]);
    let destination = IpAddr::from([packet[16], packet[17], packet[18], packet[19]]);
    Ok((source, destination, &packet[header..total]))
}

/// The pseudo-header's one's complement sum (RFC 9293 3.1; RFC 8200 8.1).
fn pseudo_header_sum(source: IpAddr, destination: IpAddr, length: usize) -> u32 {
    let mut total = 0u32;
    for address in [source, destination] {
        total = match address {
            IpAddr::V4(address) => sum(&address.octets(), total),
            IpAddr::V6(address) => sum(&address.octets(), total),
        };
    }
    // IPv4: zero, protocol, 16-bit length; IPv6: 32-bit length, zeros,
    // next header. In a one's complement sum both come to the same.
    total + u32::from(PROTOCOL_TCP) + (length as u32 >> 16) + (length as u32 & 0xffff)
}

/// Adds `bytes` as big-endian 16-bit words (the last odd byte padded) to
/// `total`, without folding; fine for segments far below 2^16 words.
fn sum(bytes: &[u8], mut total: u32) -> u32 {
    let mut words = bytes.chunks_exact(2);
    for word in &mut words {
        total += u32::from(u16::from_be_bytes([word[0], word[1]]));
    }
    if let [last] = words.remainder() {
        total += u32::from(*last) << 8;
    }
    total
}

/// Folds a 32-bit sum's carries into 16 bits.
fn fold(mut total: u32) -> u16 {
    while total > 0xffff {
        total = (total & 0xffff) + (total >> 16);
    }
    total as u16
}

#[cfg(test)]
mod tests {
    use super::*;

    const SOURCE: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(10, 0, 0, 1));
    const DESTINATION: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(10, 0, 0, 2));

    fn emitted(repr: &Repr, source: IpAddr, destination: IpAddr) -> [u8; HEADER_LENGTH] {
        let mut buffer = [0u8; HEADER_LENGTH];
        repr.emit(
            &mut Packet::new_unchecked(&mut buffer[..]),
            source,
            destination,
        );
        buffer
    }

    #[test]
    fn a_syn_round_trips() {
        let repr = Repr::syn(40_000, 80, 0x1234_5678);
        let bytes = emitted(&repr, SOURCE, DESTINATION);
        let packet = Packet::new_checked(&bytes[..]).unwrap();
        assert_eq!(Repr::parse(&packet, SOURCE, DESTINATION), Ok(repr));
        assert_eq!(packet.data_offset(), 5);
        assert_eq!(packet.flags(), FLAG_SYN);
    }

    #[test]
    fn the_checksum_is_the_internets() {
        // A SYN with options as Linux sends them (MSS, SACK permitted,
        // timestamps, window scale), 127.0.0.1:45822 -> 127.0.0.1:8080,
        // its checksum field cleared.
        let mut bytes: Vec<u8> = vec![
            0xb2, 0xfe, 0x1f, 0x90, 0x3c, 0x8f, 0x55, 0x0d, 0x00, 0x00, 0x00, 0x00, 0xa0, 0x02,
            0xff, 0xd7, 0x00, 0x00, 0x00, 0x00, 0x02, 0x04, 0xff, 0xd7, 0x04, 0x02, 0x08, 0x0a,
            0x9d, 0x8c, 0xb0, 0x76, 0x00, 0x00, 0x00, 0x00, 0x01, 0x03, 0x03, 0x07,
        ];
        let loopback = IpAddr::from([127, 0, 0, 1]);
        let mut packet = Packet::new_unchecked(&mut bytes[..]);
        packet.fill_checksum(loopback, loopback);
        let filled = packet.checksum();
        // Recomputed independently, word by word: RFC 1071's definition.
        let mut words: u32 = 0x7f00 + 0x0001 + 0x7f00 + 0x0001 + 6 + 40;
        for pair in bytes.chunks(2) {
            words += u32::from(u16::from_be_bytes([pair[0], pair[1]]));
        }
        // The sum over a segment with a right checksum folds to 0xffff.
        assert_eq!(fold(words), 0xffff, "checksum {filled:#06x}");
        let packet = Packet::new_checked(&bytes[..]).unwrap();
        assert!(packet.verify_checksum(loopback, loopback));
        // The same segment for other addresses is wrong.
        assert!(!packet.verify_checksum(SOURCE, loopback));
    }

    #[test]
    fn an_odd_length_and_ipv6_are_summed() {
        let source: IpAddr = "2001:db8::1".parse().unwrap();
        let destination: IpAddr = "2001:db8::2".parse().unwrap();
        let mut bytes = [0u8; 25];
        Repr::syn(1, 2, 3).emit(
            &mut Packet::new_unchecked(&mut bytes[..20]),
            source,
            destination,
        );
        bytes[20..].copy_from_slice(b"odd!!");
        let mut packet = Packet::new_unchecked(&mut bytes[..]);
        packet.fill_checksum(source, destination);
        let packet = Packet::new_checked(&bytes[..]).unwrap();
        assert!(packet.verify_checksum(source, destination));
        let mut corrupted = bytes;
        corrupted[24] ^= 0x01;
        assert!(
            !Packet::new_checked(&corrupted[..])
                .unwrap()
                .verify_checksum(source, destination)
        );
    }

    #[test]
    fn a_checksum_left_to_the_hardware_is_taken() {
        // As Linux leaves it on loopback: the pseudo-header's sum alone.
        let mut bytes = emitted(&Repr::syn(5, 6, 7), SOURCE, DESTINATION);
        let partial = fold(pseudo_header_sum(SOURCE, DESTINATION, HEADER_LENGTH));
        bytes[16..18].copy_from_slice(&partial.to_be_bytes());
        let packet = Packet::new_checked(&bytes[..]).unwrap();
        assert!(packet.verify_checksum(SOURCE, DESTINATION));
        // Anything else but the right sum is not.
        bytes[16..18].copy_from_slice(&partial.wrapping_add(1).to_be_bytes());
        let packet = Packet::new_checked(&bytes[..]).unwrap();
        assert!(matches!(
            Repr::parse(&packet, SOURCE, DESTINATION),
            Err(Error::Checksum(_))
        ));
    }

    #[test]
    fn short_and_inconsistent_segments_are_refused() {
        assert_eq!(
            Packet::new_checked(&[0u8; 19][..]).err(),
            Some(Error::Truncated(19))
        );
        let mut bytes = emitted(&Repr::syn(1, 2, 3), SOURCE, DESTINATION);
        bytes[12] = 6 << 4;
        assert_eq!(
            Packet::new_checked(&bytes[..]).err(),
            Some(Error::DataOffset {
                offset: 6,
                received: 20
            })
        );
        bytes[12] = 4 << 4;
        assert!(Packet::new_checked(&bytes[..]).is_err());
    }

    fn reply(flags: u8, acknowledgment: u32) -> Repr {
        Repr {
            source_port: 80,
            destination_port: 40_000,
            sequence: 99,
            acknowledgment,
            flags,
            window: 0,
        }
    }

    #[test]
    fn answers_are_matched_by_their_acknowledgment() {
        let sequence = u32::MAX;
        // The acknowledgment wraps.
        assert_eq!(
            reply(FLAG_SYN | FLAG_ACK, 0).answer_to(sequence),
            Some(Answer::Accepted)
        );
        assert_eq!(
            reply(FLAG_RST | FLAG_ACK, 0).answer_to(sequence),
            Some(Answer::Refused)
        );
        // Another probe's, or no acknowledgment at all: not an answer.
        assert_eq!(reply(FLAG_SYN | FLAG_ACK, 1).answer_to(sequence), None);
        assert_eq!(reply(FLAG_RST, 0).answer_to(sequence), None);
        // A bare SYN (our own, seen on loopback) or an ACK: not one either.
        assert_eq!(reply(FLAG_SYN, 0).answer_to(sequence), None);
        assert_eq!(reply(FLAG_ACK, 0).answer_to(sequence), None);
        assert_eq!(
            reply(FLAG_SYN | FLAG_ACK | FLAG_FIN, 0).answer_to(sequence),
            None
        );
    }

    #[test]
    fn ipv4_packets_are_split() {
        let segment = emitted(&Repr::syn(1, 2, 3), SOURCE, DESTINATION);
        let mut packet = vec![
            0x45, 0, 0, 40, 0, 0, 0x40, 0, 64, 6, 0, 0, 10, 0, 0, 2, 10, 0, 0, 1,
        ];
        packet.extend_from_slice(&segment);
        let (source, destination, tcp) = split_ipv4(&packet).unwrap();
        assert_eq!((source, destination), (DESTINATION, SOURCE));
        assert_eq!(tcp, &segment[..]);
        // Trailing bytes past the total length are not the segment's.
        packet.extend_from_slice(&[0; 4]);
        assert_eq!(split_ipv4(&packet).unwrap().2, &segment[..]);
        // UDP, a fragment, a short packet: not taken.
        let mut udp = packet.clone();
        udp[9] = 17;
        assert_eq!(split_ipv4(&udp), Err(Error::NotIpv4Tcp));
        let mut fragment = packet.clone();
        fragment[6] = 0x20;
        assert_eq!(split_ipv4(&fragment), Err(Error::NotIpv4Tcp));
        assert_eq!(split_ipv4(&packet[..30]), Err(Error::NotIpv4Tcp));
    }
}
