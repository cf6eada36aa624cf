//! What can go wrong talking to the kernel.

use std::fmt;

use netlink_packet_core::DecodeError;

use crate::{ParseError, RequestError};

/// An errno the kernel answered a request with (positive, as in errno.h).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Errno(pub i32);

impl Errno {
    /// The C library's text for it (strerror), without Rust's "(os error N)".
    pub fn description(self) -> String {
        let text = std::io::Error::from_raw_os_error(self.0).to_string();
        match text.rfind(" (os error ") {
            Some(end) => text[..end].to_owned(),
            None => text,
        }
    }

    /// The symbolic name for the errnos IPVS answers with.
    pub fn name(self) -> Option<&'static str> {
        Some(match self.0 {
            libc::EPERM => "EPERM",
            libc::ENOENT => "ENOENT",
            libc::ESRCH => "ESRCH",
            libc::ENOMEM => "ENOMEM",
            libc::EBUSY => "EBUSY",
            libc::EEXIST => "EEXIST",
            libc::ENODEV => "ENODEV",
            libc::EINVAL => "EINVAL",
            libc::ERANGE => "ERANGE",
            libc::EMSGSIZE => "EMSGSIZE",
            libc::ENOPROTOOPT => "ENOPROTOOPT",
            libc::EOPNOTSUPP => "EOPNOTSUPP",
            libc::EAFNOSUPPORT => "EAFNOSUPPORT",
            _ => return None,
        })
    }
}

impl fmt::Display for Errno {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(name) => formatter.write_str(name),
            None => write!(formatter, "errno {}", self.0),
        }
    }
}

/// An error from [`crate::Client`].
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The kernel has no IPVS generic netlink family. Asking for it makes
    /// the kernel load ip_vs (the module declares the family as an alias),
    /// so this means the module is missing or could not be loaded.
    #[error(
        "IPVS is not available: the kernel has no \"IPVS\" generic netlink family and could \
         not load the ip_vs module (is it installed? does `modprobe ip_vs` work?)"
    )]
    Unavailable,
    /// The kernel refused a request.
    #[error("{operation}: {reason} ({errno})")]
    Kernel {
        /// What was asked, naming the object: "create service TCP 10.0.0.1:80".
        operation: String,
        errno: Errno,
        /// What the errno means for this operation, in ipvsadm's words where
        /// it has some.
        reason: String,
    },
    /// The request was refused before it was sent: the kernel would have
    /// answered with a bare EINVAL.
    #[error("{operation}: {source}")]
    Invalid {
        operation: String,
        #[source]
        source: RequestError,
    },
    #[error("netlink socket: {0}")]
    Io(#[from] std::io::Error),
    /// The kernel's answer could not be decoded.
    #[error("cannot decode the kernel's answer: {0}")]
    Decode(#[from] DecodeError),
    /// The kernel's answer decoded, but does not describe a valid object.
    #[error("the kernel's answer does not describe a valid object: {0}")]
    Parse(#[from] ParseError),
    /// The exchange went wrong at the netlink level.
    #[error("netlink: {0}")]
    Protocol(String),
    /// The kernel did not answer in time: an answer was lost.
    #[error("no answer from the kernel within {} s", .0.as_secs())]
    Timeout(std::time::Duration),
}

impl Error {
    /// Whether the error leaves the socket in an unknown state (unread or
    /// lost answers, a dump still running), so that the client must open a
    /// new one. A refusal from the kernel does not.
    pub(crate) fn breaks_the_exchange(&self) -> bool {
        matches!(
            self,
            Error::Io(_) | Error::Decode(_) | Error::Protocol(_) | Error::Timeout(_)
        )
    }

    /// The errno, for a refusal from the kernel.
    pub fn errno(&self) -> Option<Errno> {
        match self {
            Error::Kernel { errno, .. } => Some(*errno),
            Error::Io(error) => error.raw_os_error().map(Errno),
            _ => None,
        }
    }
}
