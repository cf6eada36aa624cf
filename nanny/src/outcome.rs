//! What one attempt of a check found.

use std::fmt;
use std::time::Duration;

use serde::Serialize;

/// An attempt that passed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Success {
    /// MISC_CHECK with `misc_dynamic`: the weight the exit code asked for.
    pub weight: Option<i32>,
    /// FILE_CHECK with a weight: how much to add to the real server's
    /// weight (`number * weight`, negated with `reverse`).
    pub weight_offset: Option<i64>,
}

/// Why an attempt failed, in words a person acts on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, thiserror::Error)]
pub enum Failure {
    #[error("connection refused")]
    ConnectionRefused,
    #[error("connection reset")]
    ConnectionReset,
    #[error("timeout after {} s", format_seconds(*after))]
    Timeout { after: Duration },
    #[error("cannot bind: {0}")]
    Bind(String),
    /// This machine could not run the check (no socket: too many open
    /// files, ...): says nothing about the server.
    #[error("could not run the check: {0}")]
    Local(String),
    #[error("{0}")]
    Io(String),
    #[error("connection closed before a response")]
    NoResponse,
    #[error("malformed response: {0}")]
    Malformed(String),
    #[error("response body over {limit} bytes")]
    TooLarge { limit: usize },
    #[error("status {0}")]
    Status(u16),
    #[error("digest mismatch: expected {expected}, got {actual}")]
    DigestMismatch { expected: String, actual: String },
    #[error("TLS: {0}")]
    Tls(String),
    #[error("script exited with {0}")]
    ExitStatus(String),
    #[error("{0}")]
    Other(String),
}

fn format_seconds(duration: Duration) -> String {
    let seconds = duration.as_secs_f64();
    if seconds.fract() == 0.0 {
        format!("{}", duration.as_secs())
    } else {
        format!("{seconds:.3}")
    }
}

impl Failure {
    /// Whether the failure is this machine's, not the server's: keepalived
    /// then logs "Rescheduling" and tries again a `delay_loop` later,
    /// without a verdict.
    pub fn is_local(&self) -> bool {
        matches!(self, Failure::Bind(_) | Failure::Local(_))
    }

    /// Classifies an I/O error the way an operator reads it.
    pub fn from_io(error: &std::io::Error) -> Failure {
        use std::io::ErrorKind;
        match error.kind() {
            ErrorKind::ConnectionRefused => Failure::ConnectionRefused,
            ErrorKind::ConnectionReset | ErrorKind::ConnectionAborted | ErrorKind::BrokenPipe => {
                Failure::ConnectionReset
            }
            ErrorKind::UnexpectedEof => Failure::NoResponse,
            _ => Failure::Io(error.to_string()),
        }
    }
}

impl fmt::Display for Success {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("success")?;
        if let Some(weight) = self.weight {
            write!(formatter, ", weight {weight}")?;
        }
        if let Some(offset) = self.weight_offset {
            write!(formatter, ", weight offset {offset}")?;
        }
        Ok(())
    }
}

/// The outcome of one attempt.
pub type Outcome = Result<Success, Failure>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reasons_read_well() {
        assert_eq!(
            Failure::Timeout {
                after: Duration::from_secs(5)
            }
            .to_string(),
            "timeout after 5 s"
        );
        assert_eq!(
            Failure::Timeout {
                after: Duration::from_millis(1500)
            }
            .to_string(),
            "timeout after 1.500 s"
        );
        assert_eq!(Failure::Status(503).to_string(), "status 503");
    }
}
