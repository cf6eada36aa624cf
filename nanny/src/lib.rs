//! Health checkers for real servers, with keepalived's semantics.
//!
//! - [`bfd`]: BFD control packets and sessions, without I/O (BFD_CHECK).
//! - [`cli`]: the `nanny` command line.
//! - [`machine`]: one checker's schedule and up/down state, without I/O.
//! - [`driver`]: the I/O of one attempt, per kind of check, on tokio.
//! - [`outcome`]: what an attempt found.
//! - [`scheduler`]: runs a plan's checks, streams state changes.
//! - [`spec`]: checks in nanny's terms, deduplicated into a [`spec::Plan`].

pub mod bfd;
pub mod cli;
pub mod driver;
pub mod machine;
pub mod outcome;
pub mod scheduler;
pub mod spec;

/// Raises this process's open file limit to its hard limit, and returns it:
/// each running check holds a socket, and 10,000 checks of hanging servers
/// need 10,000 descriptors (keepalived raises its limit too). Without it,
/// checks fail on this machine's limit, which says nothing about servers.
pub fn raise_open_file_limit() -> std::io::Result<u64> {
    // SAFETY: getrlimit/setrlimit read and write the structure given.
    unsafe {
        let mut limit: libc::rlimit = std::mem::zeroed();
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        if limit.rlim_cur < limit.rlim_max {
            limit.rlim_cur = limit.rlim_max;
            if libc::setrlimit(libc::RLIMIT_NOFILE, &limit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
        }
        Ok(limit.rlim_cur)
    }
}
