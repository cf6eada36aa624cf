//! The BFD control packet (RFC 5880 section 4.1), smoltcp style: a checked
//! view over bytes ([`Packet`]) and its meaning ([`Repr`]).
//!
//! ```text
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |Vers |  Diag   |Sta|P|F|C|A|D|M|  Detect Mult  |    Length     |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                       My Discriminator                        |
//! |                      Your Discriminator                       |
//! |                    Desired Min TX Interval                    |
//! |                   Required Min RX Interval                    |
//! |                 Required Min Echo RX Interval                 |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |   Auth Type   |   Auth Len    |    Authentication Data...     |   (A bit only)
//! ```
//!
//! Intervals are in microseconds. Authentication is refused, as keepalived
//! refuses it (bfd_scheduler.c `bfd_handle_packet`: "auth bit is set, but
//! no authentication is in use"): [`Packet`] still reads the section's type
//! and length, so that the refusal can say which kind it was.

use std::fmt;
use std::time::Duration;

/// The length of a control packet without authentication.
pub const HEADER_LENGTH: usize = 24;
/// The UDP port of single-hop control packets (RFC 5881 section 4).
pub const CONTROL_PORT: u16 = 3784;
/// The UDP source ports a sender must use (RFC 5881 section 4).
pub const SOURCE_PORTS: std::ops::RangeInclusive<u16> = 49152..=65535;
/// The only version.
pub const VERSION: u8 = 1;

mod field {
    use std::ops::Range;
    pub const VERSION_DIAGNOSTIC: usize = 0;
    pub const STATE_FLAGS: usize = 1;
    pub const DETECT_MULTIPLIER: usize = 2;
    pub const LENGTH: usize = 3;
    pub const MY_DISCRIMINATOR: Range<usize> = 4..8;
    pub const YOUR_DISCRIMINATOR: Range<usize> = 8..12;
    pub const DESIRED_MIN_TX: Range<usize> = 12..16;
    pub const REQUIRED_MIN_RX: Range<usize> = 16..20;
    pub const REQUIRED_MIN_ECHO_RX: Range<usize> = 20..24;
    pub const AUTH_TYPE: usize = 24;
    pub const AUTH_LENGTH: usize = 25;
}

const FLAG_POLL: u8 = 0x20;
const FLAG_FINAL: u8 = 0x10;
const FLAG_CONTROL_PLANE_INDEPENDENT: u8 = 0x08;
const FLAG_AUTHENTICATION: u8 = 0x04;
const FLAG_DEMAND: u8 = 0x02;
const FLAG_MULTIPOINT: u8 = 0x01;

/// Why bytes are not a control packet this side accepts (RFC 5880 section
/// 6.8.6, "the packet MUST be discarded").
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    #[error("{0} bytes: shorter than a control packet")]
    Truncated(usize),
    #[error("length field {field} does not fit the {received} bytes received")]
    Length { field: u8, received: usize },
    #[error("version {0}, not 1")]
    Version(u8),
    #[error("detect multiplier 0")]
    ZeroMultiplier,
    #[error("multipoint bit set")]
    Multipoint,
    #[error("my discriminator 0")]
    ZeroDiscriminator,
    #[error("your discriminator 0 in state {0}")]
    NoYourDiscriminator(State),
    #[error("both poll and final bits set")]
    PollAndFinal,
    #[error("authentication (type {0}) is not in use")]
    Authentication(u8),
}

/// A session state, as carried in the packet and as kept by a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
pub enum State {
    AdminDown,
    Down,
    Init,
    Up,
}

impl State {
    fn from_bits(bits: u8) -> State {
        match bits & 0x03 {
            0 => State::AdminDown,
            1 => State::Down,
            2 => State::Init,
            _ => State::Up,
        }
    }

    fn bits(self) -> u8 {
        match self {
            State::AdminDown => 0,
            State::Down => 1,
            State::Init => 2,
            State::Up => 3,
        }
    }
}

impl fmt::Display for State {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(match self {
            State::AdminDown => "AdminDown",
            State::Down => "Down",
            State::Init => "Init",
            State::Up => "Up",
        })
    }
}

/// Why a session last left Up (RFC 5880 section 4.1, "Diag").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
pub enum Diagnostic {
    None,
    ControlDetectionTimeExpired,
    EchoFunctionFailed,
    NeighborSignaledSessionDown,
    ForwardingPlaneReset,
    PathDown,
    ConcatenatedPathDown,
    AdministrativelyDown,
    ReverseConcatenatedPathDown,
    /// 9-31: reserved; kept so that a packet reads back as it came.
    Reserved(u8),
}

impl Diagnostic {
    fn from_bits(bits: u8) -> Diagnostic {
        match bits & 0x1f {
            0 => Diagnostic::None,
            1 => Diagnostic::ControlDetectionTimeExpired,
            2 => Diagnostic::EchoFunctionFailed,
            3 => Diagnostic::NeighborSignaledSessionDown,
            4 => Diagnostic::ForwardingPlaneReset,
            5 => Diagnostic::PathDown,
            6 => Diagnostic::ConcatenatedPathDown,
            7 => Diagnostic::AdministrativelyDown,
            8 => Diagnostic::ReverseConcatenatedPathDown,
            other => Diagnostic::Reserved(other),
        }
    }

    fn bits(self) -> u8 {
        match self {
            Diagnostic::None => 0,
            Diagnostic::ControlDetectionTimeExpired => 1,
            Diagnostic::EchoFunctionFailed => 2,
            Diagnostic::NeighborSignaledSessionDown => 3,
            Diagnostic::ForwardingPlaneReset => 4,
            Diagnostic::PathDown => 5,
            Diagnostic::ConcatenatedPathDown => 6,
            Diagnostic::AdministrativelyDown => 7,
            Diagnostic::ReverseConcatenatedPathDown => 8,
            Diagnostic::Reserved(bits) => bits & 0x1f,
        }
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Diagnostic::None => formatter.write_str("no diagnostic"),
            Diagnostic::ControlDetectionTimeExpired => {
                formatter.write_str("control detection time expired")
            }
            Diagnostic::EchoFunctionFailed => formatter.write_str("echo function failed"),
            Diagnostic::NeighborSignaledSessionDown => {
                formatter.write_str("neighbor signaled session down")
            }
            Diagnostic::ForwardingPlaneReset => formatter.write_str("forwarding plane reset"),
            Diagnostic::PathDown => formatter.write_str("path down"),
            Diagnostic::ConcatenatedPathDown => formatter.write_str("concatenated path down"),
            Diagnostic::AdministrativelyDown => formatter.write_str("administratively down"),
            Diagnostic::ReverseConcatenatedPathDown => {
                formatter.write_str("reverse concatenated path down")
            }
            Diagnostic::Reserved(bits) => write!(formatter, "diagnostic {bits}"),
        }
    }
}

/// A view of a control packet over a buffer.
#[derive(Debug, Clone)]
pub struct Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Packet<T> {
    /// A view without any check: accessors may panic on short buffers.
    pub fn new_unchecked(buffer: T) -> Packet<T> {
        Packet { buffer }
    }

    /// A view whose accessors cannot panic: the buffer holds at least the
    /// mandatory section and the length field says no more than that was
    /// received (RFC 5880 6.8.6: less than 24, or 26 with the A bit, or
    /// more than the payload, is discarded).
    pub fn new_checked(buffer: T) -> Result<Packet<T>, Error> {
        let packet = Packet::new_unchecked(buffer);
        packet.check_len()?;
        Ok(packet)
    }

    /// See [`Packet::new_checked`].
    pub fn check_len(&self) -> Result<(), Error> {
        let received = self.buffer.as_ref().len();
        if received < HEADER_LENGTH {
            return Err(Error::Truncated(received));
        }
        let field = self.length();
        let minimum = if self.authentication() {
            HEADER_LENGTH + 2
        } else {
            HEADER_LENGTH
        };
        if usize::from(field) < minimum || usize::from(field) > received {
            return Err(Error::Length { field, received });
        }
        Ok(())
    }

    pub fn into_inner(self) -> T {
        self.buffer
    }

    fn byte(&self, index: usize) -> u8 {
        self.buffer.as_ref()[index]
    }

    fn word(&self, range: std::ops::Range<usize>) -> u32 {
        let bytes = &self.buffer.as_ref()[range];
        u32::from_be_bytes([bytes[0], bytes[1], bytes[2], bytes[3]])
    }

    pub fn version(&self) -> u8 {
        self.byte(field::VERSION_DIAGNOSTIC) >> 5
    }

    pub fn diagnostic(&self) -> Diagnostic {
        Diagnostic::from_bits(self.byte(field::VERSION_DIAGNOSTIC))
    }

    pub fn state(&self) -> State {
        State::from_bits(self.byte(field::STATE_FLAGS) >> 6)
    }

    fn flag(&self, flag: u8) -> bool {
        self.byte(field::STATE_FLAGS) & flag != 0
    }

    pub fn poll(&self) -> bool {
        self.flag(FLAG_POLL)
    }

    pub fn final_(&self) -> bool {
        self.flag(FLAG_FINAL)
    }

    pub fn control_plane_independent(&self) -> bool {
        self.flag(FLAG_CONTROL_PLANE_INDEPENDENT)
    }

    pub fn authentication(&self) -> bool {
        self.flag(FLAG_AUTHENTICATION)
    }

    pub fn demand(&self) -> bool {
        self.flag(FLAG_DEMAND)
    }

    pub fn multipoint(&self) -> bool {
        self.flag(FLAG_MULTIPOINT)
    }

    pub fn detect_multiplier(&self) -> u8 {
        self.byte(field::DETECT_MULTIPLIER)
    }

    pub fn length(&self) -> u8 {
        self.byte(field::LENGTH)
    }

    pub fn my_discriminator(&self) -> u32 {
        self.word(field::MY_DISCRIMINATOR)
    }

    pub fn your_discriminator(&self) -> u32 {
        self.word(field::YOUR_DISCRIMINATOR)
    }

    /// Microseconds.
    pub fn desired_min_tx(&self) -> u32 {
        self.word(field::DESIRED_MIN_TX)
    }

    /// Microseconds.
    pub fn required_min_rx(&self) -> u32 {
        self.word(field::REQUIRED_MIN_RX)
    }

    /// Microseconds.
    pub fn required_min_echo_rx(&self) -> u32 {
        self.word(field::REQUIRED_MIN_ECHO_RX)
    }

    /// The authentication section's type, with the A bit (on a checked
    /// packet, the length field covers it).
    pub fn authentication_type(&self) -> Option<u8> {
        self.authentication().then(|| self.byte(field::AUTH_TYPE))
    }

    /// The authentication section's own length field, with the A bit.
    pub fn authentication_length(&self) -> Option<u8> {
        self.authentication().then(|| self.byte(field::AUTH_LENGTH))
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    fn set_byte(&mut self, index: usize, value: u8) {
        self.buffer.as_mut()[index] = value;
    }

    fn set_word(&mut self, range: std::ops::Range<usize>, value: u32) {
        self.buffer.as_mut()[range].copy_from_slice(&value.to_be_bytes());
    }

    pub fn set_version_and_diagnostic(&mut self, version: u8, diagnostic: Diagnostic) {
        self.set_byte(
            field::VERSION_DIAGNOSTIC,
            (version << 5) | diagnostic.bits(),
        );
    }

    /// The state and the flags byte, with the A and M bits clear (nanny
    /// has no authentication and no multipoint).
    pub fn set_state_and_flags(
        &mut self,
        state: State,
        poll: bool,
        final_: bool,
        control_plane_independent: bool,
        demand: bool,
    ) {
        let mut byte = state.bits() << 6;
        for (set, flag) in [
            (poll, FLAG_POLL),
            (final_, FLAG_FINAL),
            (control_plane_independent, FLAG_CONTROL_PLANE_INDEPENDENT),
            (demand, FLAG_DEMAND),
        ] {
            if set {
                byte |= flag;
            }
        }
        self.set_byte(field::STATE_FLAGS, byte);
    }

    pub fn set_detect_multiplier(&mut self, value: u8) {
        self.set_byte(field::DETECT_MULTIPLIER, value);
    }

    pub fn set_length(&mut self, value: u8) {
        self.set_byte(field::LENGTH, value);
    }

    pub fn set_my_discriminator(&mut self, value: u32) {
        self.set_word(field::MY_DISCRIMINATOR, value);
    }

    pub fn set_your_discriminator(&mut self, value: u32) {
        self.set_word(field::YOUR_DISCRIMINATOR, value);
    }

    pub fn set_desired_min_tx(&mut self, value: u32) {
        self.set_word(field::DESIRED_MIN_TX, value);
    }

    pub fn set_required_min_rx(&mut self, value: u32) {
        self.set_word(field::REQUIRED_MIN_RX, value);
    }

    pub fn set_required_min_echo_rx(&mut self, value: u32) {
        self.set_word(field::REQUIRED_MIN_ECHO_RX, value);
    }
}

/// What a control packet says, once accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Repr {
    pub diagnostic: Diagnostic,
    pub state: State,
    pub poll: bool,
    pub final_: bool,
    /// C: the sender's BFD does not share fate with its control plane.
    pub control_plane_independent: bool,
    /// D: the sender wishes to run demand mode (nanny does not ask for it;
    /// it is recorded, as keepalived does, and the sender's packets go on
    /// being expected).
    pub demand: bool,
    pub detect_multiplier: u8,
    pub my_discriminator: u32,
    pub your_discriminator: u32,
    pub desired_min_tx: Duration,
    pub required_min_rx: Duration,
    pub required_min_echo_rx: Duration,
}

fn microseconds(value: u32) -> Duration {
    Duration::from_micros(u64::from(value))
}

/// A duration in the packet's microseconds, saturating.
pub fn to_microseconds(duration: Duration) -> u32 {
    u32::try_from(duration.as_micros()).unwrap_or(u32::MAX)
}

impl Repr {
    /// Accepts a packet as RFC 5880 section 6.8.6 does, before any session
    /// is looked up: version 1, a non-zero multiplier, no multipoint bit, a
    /// non-zero "my discriminator", a "your discriminator" unless the state
    /// is Down or AdminDown, not both poll and final (section 4.1 forbids
    /// it; keepalived discards those too), and no authentication, which
    /// nanny, like keepalived, does not use.
    pub fn parse<T: AsRef<[u8]>>(packet: &Packet<T>) -> Result<Repr, Error> {
        packet.check_len()?;
        if packet.version() != VERSION {
            return Err(Error::Version(packet.version()));
        }
        if packet.detect_multiplier() == 0 {
            return Err(Error::ZeroMultiplier);
        }
        if packet.multipoint() {
            return Err(Error::Multipoint);
        }
        if packet.my_discriminator() == 0 {
            return Err(Error::ZeroDiscriminator);
        }
        let state = packet.state();
        if packet.your_discriminator() == 0 && !matches!(state, State::Down | State::AdminDown) {
            return Err(Error::NoYourDiscriminator(state));
        }
        if packet.poll() && packet.final_() {
            return Err(Error::PollAndFinal);
        }
        if let Some(kind) = packet.authentication_type() {
            return Err(Error::Authentication(kind));
        }
        Ok(Repr {
            diagnostic: packet.diagnostic(),
            state,
            poll: packet.poll(),
            final_: packet.final_(),
            control_plane_independent: packet.control_plane_independent(),
            demand: packet.demand(),
            detect_multiplier: packet.detect_multiplier(),
            my_discriminator: packet.my_discriminator(),
            your_discriminator: packet.your_discriminator(),
            desired_min_tx: microseconds(packet.desired_min_tx()),
            required_min_rx: microseconds(packet.required_min_rx()),
            required_min_echo_rx: microseconds(packet.required_min_echo_rx()),
        })
    }

    /// The length of the packet [`Repr::emit`] writes.
    pub fn buffer_len(&self) -> usize {
        HEADER_LENGTH
    }

    /// Writes the packet into the first [`Repr::buffer_len`] bytes of
    /// `packet` (a session never sets C or D: nanny has no control plane
    /// independence and does not run demand mode).
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, packet: &mut Packet<T>) {
        packet.set_version_and_diagnostic(VERSION, self.diagnostic);
        packet.set_state_and_flags(
            self.state,
            self.poll,
            self.final_,
            self.control_plane_independent,
            self.demand,
        );
        packet.set_detect_multiplier(self.detect_multiplier);
        packet.set_length(HEADER_LENGTH as u8);
        packet.set_my_discriminator(self.my_discriminator);
        packet.set_your_discriminator(self.your_discriminator);
        packet.set_desired_min_tx(to_microseconds(self.desired_min_tx));
        packet.set_required_min_rx(to_microseconds(self.required_min_rx));
        packet.set_required_min_echo_rx(to_microseconds(self.required_min_echo_rx));
    }

    /// The packet as bytes.
    pub fn to_bytes(&self) -> [u8; HEADER_LENGTH] {
        let mut bytes = [0u8; HEADER_LENGTH];
        self.emit(&mut Packet::new_unchecked(&mut bytes[..]));
        bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Captured from keepalived 2.2.7's BFD process, the UDP payloads of its
    // control packets to a peer at 10.77.0.1:
    //
    //   bfd_instance nanny { neighbor_ip 10.77.0.1  source_ip 10.77.0.2
    //                        min_rx 100  min_tx 100  multiplier 3 }
    //   ip netns exec B keepalived -n -l -D -f ka.conf -p k.pid -b b.pid
    //   ip netns exec A tcpdump -i veth -n -xx -v udp
    //
    // (ttl 255, source port 50271, destination port 3784.)

    /// Down, no "your discriminator" yet, slow 1 s TX.
    const KEEPALIVED_DOWN: [u8; 24] = [
        0x20, 0x40, 0x03, 0x18, 0x40, 0x2c, 0x25, 0x31, 0x00, 0x00, 0x00, 0x00, 0x00, 0x0f, 0x42,
        0x40, 0x00, 0x01, 0x86, 0xa0, 0x00, 0x00, 0x00, 0x00,
    ];

    #[test]
    fn keepalived_down_packet_reads_and_writes_back() {
        let packet = Packet::new_checked(&KEEPALIVED_DOWN[..]).unwrap();
        let repr = Repr::parse(&packet).unwrap();
        assert_eq!(
            repr,
            Repr {
                diagnostic: Diagnostic::None,
                state: State::Down,
                poll: false,
                final_: false,
                control_plane_independent: false,
                demand: false,
                detect_multiplier: 3,
                my_discriminator: 0x402c_2531,
                your_discriminator: 0,
                desired_min_tx: Duration::from_secs(1),
                required_min_rx: Duration::from_millis(100),
                required_min_echo_rx: Duration::ZERO,
            }
        );
        assert_eq!(repr.to_bytes(), KEEPALIVED_DOWN);
    }

    /// Bytes from a text of hexadecimal words, as tcpdump prints them.
    fn hex(text: &str) -> Vec<u8> {
        let digits: String = text.split_whitespace().collect();
        (0..digits.len())
            .step_by(2)
            .map(|index| u8::from_str_radix(&digits[index..index + 2], 16).unwrap())
            .collect()
    }

    /// More of keepalived's packets, from the same configuration, with
    /// nanny as the peer (nanny/tests/bfd.rs's set-up; `nanny -f` with a
    /// `bfd_instance` back to keepalived): the three-way handshake, its
    /// poll sequence to 100 ms, and the Down after nanny stopped.
    #[test]
    fn keepalived_session_packets_read_and_write_back() {
        let cases = [
            // Init: it heard nanny's Down.
            (
                "2080 0318 1c7a f530 0f54 2c24 000f 4240 0001 86a0 0000 0000",
                State::Init,
                Diagnostic::None,
                (false, false),
                Duration::from_secs(1),
            ),
            // Up, with P: its desired min TX went down to 100 ms.
            (
                "20e0 0318 858e 95c7 8022 33ed 0001 86a0 0001 86a0 0000 0000",
                State::Up,
                Diagnostic::None,
                (true, false),
                Duration::from_millis(100),
            ),
            // Up, with F: the answer to nanny's own poll.
            (
                "20d0 0318 858e 95c7 8022 33ed 0001 86a0 0001 86a0 0000 0000",
                State::Up,
                Diagnostic::None,
                (false, true),
                Duration::from_millis(100),
            ),
            (
                "20c0 0318 858e 95c7 8022 33ed 0001 86a0 0001 86a0 0000 0000",
                State::Up,
                Diagnostic::None,
                (false, false),
                Duration::from_millis(100),
            ),
            // Down after nanny went silent (keepalived took a new
            // discriminator and forgot nanny's).
            (
                "2140 0318 ef80 f7ad 0000 0000 000f 4240 0001 86a0 0000 0000",
                State::Down,
                Diagnostic::ControlDetectionTimeExpired,
                (false, false),
                Duration::from_secs(1),
            ),
        ];
        for (text, state, diagnostic, (poll, final_), desired_min_tx) in cases {
            let bytes = hex(text);
            let repr = parse(&bytes).unwrap();
            assert_eq!(
                (repr.state, repr.diagnostic, repr.poll, repr.final_),
                (state, diagnostic, poll, final_),
                "{text}"
            );
            assert_eq!(repr.desired_min_tx, desired_min_tx);
            assert_eq!(repr.required_min_rx, Duration::from_millis(100));
            assert_eq!(repr.detect_multiplier, 3);
            assert_eq!(repr.to_bytes()[..], bytes[..], "{text}");
        }
    }

    fn with(change: impl FnOnce(&mut [u8])) -> Vec<u8> {
        let mut bytes = KEEPALIVED_DOWN.to_vec();
        change(&mut bytes);
        bytes
    }

    fn parse(bytes: &[u8]) -> Result<Repr, Error> {
        Repr::parse(&Packet::new_checked(bytes)?)
    }

    #[test]
    fn rfc_5880_reception_checks() {
        assert_eq!(parse(&KEEPALIVED_DOWN[..20]), Err(Error::Truncated(20)));
        assert_eq!(
            parse(&with(|bytes| bytes[3] = 25)),
            Err(Error::Length {
                field: 25,
                received: 24
            })
        );
        assert_eq!(
            parse(&with(|bytes| bytes[3] = 20)),
            Err(Error::Length {
                field: 20,
                received: 24
            })
        );
        assert_eq!(
            parse(&with(|bytes| bytes[0] = 0x40)),
            Err(Error::Version(2))
        );
        assert_eq!(
            parse(&with(|bytes| bytes[2] = 0)),
            Err(Error::ZeroMultiplier)
        );
        assert_eq!(
            parse(&with(|bytes| bytes[1] |= FLAG_MULTIPOINT)),
            Err(Error::Multipoint)
        );
        assert_eq!(
            parse(&with(|bytes| bytes[4..8].fill(0))),
            Err(Error::ZeroDiscriminator)
        );
        // Init and Up need "your discriminator"; AdminDown does not.
        assert_eq!(
            parse(&with(|bytes| bytes[1] = 0x80)),
            Err(Error::NoYourDiscriminator(State::Init))
        );
        assert_eq!(
            parse(&with(|bytes| bytes[1] = 0xc0)),
            Err(Error::NoYourDiscriminator(State::Up))
        );
        assert_eq!(
            parse(&with(|bytes| bytes[1] = 0x00)).unwrap().state,
            State::AdminDown
        );
        assert_eq!(
            parse(&with(|bytes| bytes[1] |= FLAG_POLL | FLAG_FINAL)),
            Err(Error::PollAndFinal)
        );
        // A trailing byte beyond the length field is not the packet's.
        let mut longer = KEEPALIVED_DOWN.to_vec();
        longer.push(0xff);
        assert!(parse(&longer).is_ok());
    }

    #[test]
    fn authentication_is_refused_with_its_type() {
        // A (simple password, type 1, 3 bytes "abc" after key id 1).
        let mut bytes = with(|bytes| {
            bytes[1] |= FLAG_AUTHENTICATION;
            bytes[3] = 24 + 7;
        });
        bytes.extend_from_slice(&[1, 7, 1, b'a', b'b', b'c', 0]);
        let packet = Packet::new_checked(&bytes[..]).unwrap();
        assert_eq!(packet.authentication_type(), Some(1));
        assert_eq!(packet.authentication_length(), Some(7));
        assert_eq!(Repr::parse(&packet), Err(Error::Authentication(1)));
        // The A bit without room for the section's header.
        assert_eq!(
            parse(&with(|bytes| bytes[1] |= FLAG_AUTHENTICATION)),
            Err(Error::Length {
                field: 24,
                received: 24
            })
        );
    }

    #[test]
    fn every_field_round_trips() {
        let repr = Repr {
            diagnostic: Diagnostic::ControlDetectionTimeExpired,
            state: State::Up,
            poll: true,
            final_: false,
            control_plane_independent: true,
            demand: true,
            detect_multiplier: 255,
            my_discriminator: 0xdead_beef,
            your_discriminator: 1,
            desired_min_tx: Duration::from_micros(12_345),
            required_min_rx: Duration::from_micros(u64::from(u32::MAX)),
            required_min_echo_rx: Duration::from_micros(7),
        };
        let bytes = repr.to_bytes();
        assert_eq!(bytes[0], 0x21);
        assert_eq!(
            bytes[1],
            0xc0 | FLAG_POLL | FLAG_CONTROL_PLANE_INDEPENDENT | FLAG_DEMAND
        );
        assert_eq!(parse(&bytes), Ok(repr));
        let finished = Repr {
            poll: false,
            final_: true,
            diagnostic: Diagnostic::Reserved(31),
            ..repr
        };
        assert_eq!(parse(&finished.to_bytes()), Ok(finished));
    }
}
