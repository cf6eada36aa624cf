//! Errors raised when turning attributes into the typed model, or the model
//! into requests.

use netlink_packet_core::DecodeError;

use crate::{Family, IpvsCommand};

/// An attribute list could be decoded, but does not describe a valid object.
#[derive(Debug, thiserror::Error)]
pub enum ParseError {
    /// The bytes themselves are malformed (truncated attribute, wrong length
    /// for an integer, invalid UTF-8...).
    #[error(transparent)]
    Decode(#[from] DecodeError),
    /// An attribute the kernel always sends (or requires) is absent.
    #[error("missing attribute {0}")]
    MissingAttribute(&'static str),
    /// The reply carries a command other than the one the parser expects
    /// (e.g. a NEW_DEST message handed to the service parser).
    #[error("unexpected command {found:?}, expected {expected:?}")]
    UnexpectedCommand {
        expected: IpvsCommand,
        found: IpvsCommand,
    },
    /// The address family is neither AF_INET nor AF_INET6.
    #[error("unknown address family {value} in {attribute}")]
    UnknownFamily { attribute: &'static str, value: u16 },
    /// An address whose length does not fit its family (an IPv6 service with
    /// a 4-byte address).
    #[error("{attribute} is {length} bytes long, which cannot hold an {family} address")]
    AddressLength {
        attribute: &'static str,
        family: Family,
        length: usize,
    },
    /// A value outside the range the kernel defines.
    #[error("invalid value {value} for {attribute}")]
    InvalidValue { attribute: &'static str, value: u64 },
}

/// A model object that the kernel would reject, caught before sending.
///
/// The kernel answers most of these with a bare `EINVAL` or `ERANGE`; checking
/// here gives the caller a message that says what is wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RequestError {
    /// A name longer than the kernel's policy allows (scheduler and interface
    /// names: 15 bytes, persistence engine: 16 bytes), or containing a NUL.
    #[error("{field} {name:?} is invalid: at most {max} bytes, no NUL")]
    InvalidName {
        field: &'static str,
        name: String,
        max: usize,
    },
    /// The netmask variant does not match the service's address family.
    #[error("netmask {netmask} does not fit an {family} service")]
    NetmaskFamily { netmask: String, family: Family },
    /// IPv6 persistence prefix length outside 1..=128.
    #[error("IPv6 prefix length {0} is outside 1..=128")]
    PrefixLength(u8),
    /// The kernel stores the weight as a signed int and rejects negatives.
    #[error("weight {0} is larger than {max}", max = i32::MAX)]
    Weight(u32),
    /// The kernel rejects a lower threshold above the upper one.
    #[error("lower threshold {lower} is above upper threshold {upper}")]
    Thresholds { lower: u32, upper: u32 },
    /// A GUE tunnel needs a destination UDP port.
    #[error("a GUE tunnel needs a non-zero port")]
    TunnelPort,
    /// The kernel only accepts a destination of another family than its
    /// service when it is reached through a tunnel.
    #[error("a {destination} destination in an {service} service must use tunnel forwarding")]
    MixedFamily {
        service: Family,
        destination: Family,
    },
    /// The sync daemon group must be a multicast address.
    #[error("sync daemon group {0} is not a multicast address")]
    NotMulticast(std::net::IpAddr),
}

/// What an errno returned by the kernel means for `command`, in ipvsadm's
/// words (libipvs `ipvs_strerror`), or `None` to fall back to `strerror`.
///
/// `errno` is positive (the netlink error code negated).
pub fn kernel_error_message(command: IpvsCommand, errno: i32) -> Option<&'static str> {
    use IpvsCommand::*;
    Some(match (command, errno) {
        (NewService, libc::EEXIST) => "Service already exists",
        (NewService | SetService, libc::ENOENT) => "Scheduler or persistence engine not found",
        // libipvs maps ESRCH to this for listing destinations too, though
        // the kernel answers an empty list for a missing service.
        (SetService | DeleteService | Zero | GetService | GetDestination, libc::ESRCH) => {
            "No such service"
        }
        (NewDestination | SetDestination | DeleteDestination, libc::ESRCH) => "Service not defined",
        (NewDestination, libc::EEXIST) => "Destination already exists",
        (SetDestination | DeleteDestination, libc::ENOENT) => "No such destination",
        (NewDaemon, libc::EEXIST) => "Daemon has already run",
        (DeleteDaemon, libc::ESRCH) => "No daemon is running",
        (_, libc::EPERM) => "Permission denied (you must be root)",
        (_, libc::EINVAL) => {
            "Invalid operation.  Possibly wrong module version, address not unicast, ..."
        }
        (_, libc::ENOPROTOOPT) => "Protocol not available",
        (_, libc::ENOMEM) => "Memory allocation problem",
        (_, libc::EOPNOTSUPP) => "Operation not supported with IPv6",
        (_, libc::EAFNOSUPPORT) => "Operation not supported with specified address family",
        (_, libc::EMSGSIZE) => "Module is wrong version",
        _ => return None,
    })
}
