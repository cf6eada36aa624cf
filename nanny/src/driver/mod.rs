//! The I/O of one attempt of a check, on tokio.
//!
//! Every driver bounds all of its I/O by a deadline, so a misbehaving server
//! (accepts then hangs, trickles bytes, sends an endless body) or a script
//! that never exits costs its own attempt a timeout and nothing else: each
//! attempt is its own task, holding no lock and sharing no buffer.

pub mod bfd;
pub mod dns;
pub mod file;
pub mod half_open;
pub mod http;
pub mod misc;
pub mod ping;
pub mod smtp;
pub mod tcp;
pub mod tls;
pub mod udp;

use std::future::Future;
use std::pin::Pin;

use tokio::time::Instant;

use crate::outcome::{Failure, Outcome};
use crate::spec::{CheckKind, CheckSpec};

/// Runs one attempt of `spec`, bounded by its attempt timeout counted from
/// `started`: when the attempt's task first ran (its caller has read the
/// clock then, and reading it again costs: in the lab's guest, whose clock
/// source is the emulated HPET, every reading is a system call).
pub async fn run(spec: &CheckSpec, started: Instant) -> Outcome {
    let budget = spec.timing.attempt_timeout;
    // Each kind's future is boxed: an attempt then holds only its own
    // kind's state (a TCP_CHECK's is under 500 bytes), not that of the
    // largest kind (nearly 8 KiB, for HTTPS), and under overload thousands
    // of attempts wait to run at once.
    let attempt: Pin<Box<dyn Future<Output = Outcome> + Send + '_>> = match &spec.kind {
        CheckKind::Tcp => Box::pin(tcp::check(&spec.endpoint, started, spec.connect_timeout)),
        CheckKind::Http(http) => Box::pin(http::check(&spec.endpoint, http, spec.connect_timeout)),
        CheckKind::Misc(misc) => Box::pin(misc::check(misc)),
        CheckKind::File(file) => Box::pin(file::check(file)),
        CheckKind::Ping => Box::pin(ping::check(&spec.endpoint, spec.connect_timeout)),
        CheckKind::Dns(dns) => Box::pin(dns::check(&spec.endpoint, dns, spec.connect_timeout)),
        CheckKind::Smtp(smtp) => Box::pin(smtp::check(&spec.endpoint, smtp, spec.connect_timeout)),
        CheckKind::Udp(udp) => Box::pin(udp::check(&spec.endpoint, udp, spec.connect_timeout)),
        // Sessions run all the time in their own task (`bfd::spawn`),
        // never as attempts.
        CheckKind::Bfd(_) => Box::pin(std::future::ready(Err(Failure::Other(
            "BFD_CHECK runs as a session, not as attempts".to_owned(),
        )))),
        CheckKind::Unsupported { checker, why } => Box::pin(std::future::ready(Err(
            Failure::Other(format!("{checker} cannot run: {why}")),
        ))),
    };
    match tokio::time::timeout_at(started + budget, attempt).await {
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

/// Sets an integer socket option (`setsockopt` with a C `int`): the options
/// socket2 and tokio have no call for (SO_MARK, IPV6_CHECKSUM,
/// SO_RCVBUFFORCE, IP_RECVTTL, ...).
pub(crate) fn set_int_option(
    descriptor: std::os::fd::RawFd,
    level: libc::c_int,
    name: libc::c_int,
    value: libc::c_int,
) -> std::io::Result<()> {
    // SAFETY: the caller's descriptor is open, and the option's value is a
    // c_int of the size given.
    let result = unsafe {
        libc::setsockopt(
            descriptor,
            level,
            name,
            (&value as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if result == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Sets SO_MARK (`fwmark`) on a socket.
pub(crate) fn set_mark(descriptor: std::os::fd::RawFd, mark: u32) -> std::io::Result<()> {
    // The mark's bits as the kernel's u32 (an int in setsockopt's call).
    set_int_option(
        descriptor,
        libc::SOL_SOCKET,
        libc::SO_MARK,
        mark as libc::c_int,
    )
}
