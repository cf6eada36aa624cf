//! The I/O of one attempt of a check, on tokio.
//!
//! Every driver bounds all of its I/O by a deadline, so a misbehaving server
//! (accepts then hangs, trickles bytes, sends an endless body) or a script
//! that never exits costs its own attempt a timeout and nothing else: each
//! attempt is its own task, holding no lock and sharing no buffer.

pub mod bfd;
pub mod dns;
pub mod file;
pub mod http;
pub mod misc;
pub mod ping;
pub mod smtp;
pub mod tcp;
pub mod tls;
pub mod udp;

use std::future::Future;
use std::time::Duration;

use tokio::time::Instant;

use crate::outcome::{Failure, Outcome};
use crate::spec::{CheckKind, CheckSpec};

/// Runs one attempt of `spec`, bounded by its attempt timeout.
pub async fn run(spec: &CheckSpec) -> Outcome {
    let budget = spec.timing.attempt_timeout;
    let attempt = async {
        match &spec.kind {
            CheckKind::Tcp => tcp::check(&spec.endpoint, spec.connect_timeout).await,
            CheckKind::Http(http) => http::check(&spec.endpoint, http, spec.connect_timeout).await,
            CheckKind::Misc(misc) => misc::check(misc).await,
            CheckKind::File(file) => file::check(file).await,
            CheckKind::Ping => ping::check(&spec.endpoint, spec.connect_timeout).await,
            CheckKind::Dns(dns) => dns::check(&spec.endpoint, dns, spec.connect_timeout).await,
            CheckKind::Smtp(smtp) => smtp::check(&spec.endpoint, smtp, spec.connect_timeout).await,
            CheckKind::Udp(udp) => udp::check(&spec.endpoint, udp, spec.connect_timeout).await,
            // Sessions run all the time in their own task (`bfd::spawn`),
            // never as attempts.
            CheckKind::Bfd(_) => Err(Failure::Other(
                "BFD_CHECK runs as a session, not as attempts".to_owned(),
            )),
            CheckKind::Unsupported { checker, why } => {
                Err(Failure::Other(format!("{checker} cannot run: {why}")))
            }
        }
    };
    within(budget, attempt).await
}

/// `future`'s outcome, or a timeout after `budget`.
pub async fn within(budget: Duration, future: impl Future<Output = Outcome>) -> Outcome {
    match tokio::time::timeout(budget, future).await {
        Ok(outcome) => outcome,
        Err(_) => Err(Failure::Timeout { after: budget }),
    }
}

/// `future`'s result, or a timeout failure when `deadline` passes first;
/// `started` tells how long the whole step took.
pub(crate) async fn by<T>(
    deadline: Instant,
    started: Instant,
    future: impl Future<Output = Result<T, Failure>>,
) -> Result<T, Failure> {
    match tokio::time::timeout_at(deadline, future).await {
        Ok(result) => result,
        Err(_) => Err(Failure::Timeout {
            after: deadline - started,
        }),
    }
}
