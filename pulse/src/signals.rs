//! keepalived's signals by what they ask for: `pulse --signum=NAME` prints
//! the number keepalived 2.2.7 prints (exporters and scripts ask it what to
//! send: `kill -$(keepalived --signum=DATA) PID`), and the daemons listen
//! for every one of them, so that none ends the process by its default
//! action (the Mux, which writes no dump, ignores them).

use tokio::signal::unix::{SignalKind, signal};

/// The number of the signal keepalived 2.2.7 sends for `function` (its
/// `get_signum`; Debian's build has no `TDATA`): `None` for a name it does
/// not know (case matters). JSON is SIGRTMIN+2 and STATS_CLEAR SIGRTMAX-1,
/// which the C library decides at run time, as keepalived's does.
pub fn number(function: &str) -> Option<i32> {
    Some(match function {
        "STOP" => libc::SIGTERM,
        "RELOAD" => libc::SIGHUP,
        "DATA" => libc::SIGUSR1,
        "STATS" => libc::SIGUSR2,
        "STATS_CLEAR" => libc::SIGRTMAX() - 1,
        "JSON" => libc::SIGRTMIN() + 2,
        _ => return None,
    })
}

/// Listens for `signals` (number, name) on tasks of their own, logging
/// each one that comes with `what`: a process that listens for a signal
/// no longer takes its default action, which for these is to end. Must
/// run inside the daemon's runtime.
pub fn listen_without_acting(signals: &[(i32, &'static str)], what: &'static str) {
    for &(number, name) in signals {
        match signal(SignalKind::from_raw(number)) {
            Ok(mut stream) => {
                tokio::spawn(async move {
                    while stream.recv().await.is_some() {
                        tracing::info!("{name}: {what}; ignored");
                    }
                });
            }
            Err(error) => tracing::warn!("cannot listen for {name}: {error}"),
        }
    }
}
