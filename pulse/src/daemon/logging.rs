//! Where pulse's logs go, as keepalived users expect: the system log by
//! default (`-G` turns it off), the console too with `-l`, and, when
//! systemd runs pulse with its output on the journal, standard error with
//! the journal's `<N>` priority prefixes instead of both (journald then
//! records each line at its level, without doubled timestamps).
//!
//! `RUST_LOG` overrides the level; `-D` raises pulse's own crates to debug
//! (keepalived's "detailed log messages").

use std::ffi::CString;
use std::io::{self, Write};
use std::os::fd::AsRawFd;

use tracing::{Level, Metadata};
use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer};

/// The choices the command line makes.
#[derive(Debug, Clone, Copy, Default)]
pub struct Destinations {
    /// `-l`: standard error, with times and levels.
    pub console: bool,
    /// Not `-G`: the system log.
    pub syslog: bool,
    /// `-D`.
    pub detail: bool,
}

/// Installs the global subscriber. Call once, before any thread starts
/// (openlog and the fork that may follow). Returns whether the logs reach
/// standard error (the console or the journal).
pub fn init(destinations: Destinations) -> bool {
    let default = if destinations.detail {
        "info,pulse=debug,nanny=debug,ipvs=debug,fulcrum_config=debug"
    } else {
        "info"
    };
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default));
    let journal = stderr_is_the_journal();
    let journal_layer = journal.then(|| {
        tracing_subscriber::fmt::layer()
            .without_time()
            .with_level(false)
            .with_target(false)
            .with_ansi(false)
            .with_writer(PrefixedStderr)
            .boxed()
    });
    let console_layer = (destinations.console && !journal).then(|| {
        let colour = io::IsTerminal::is_terminal(&io::stderr())
            && std::env::var_os("NO_COLOR").is_none_or(|value| value.is_empty());
        tracing_subscriber::fmt::layer()
            .with_target(false)
            .with_ansi(colour)
            .with_writer(io::stderr)
            .boxed()
    });
    let syslog_layer = (destinations.syslog && !journal).then(|| {
        // SAFETY: the identity is a static C string that outlives every
        // syslog call; openlog keeps the pointer.
        unsafe { libc::openlog(c"pulse".as_ptr(), libc::LOG_PID, libc::LOG_DAEMON) };
        tracing_subscriber::fmt::layer()
            .without_time()
            .with_level(false)
            .with_target(false)
            .with_ansi(false)
            .with_writer(Syslog)
            .boxed()
    });
    tracing_subscriber::registry()
        .with(filter)
        .with(journal_layer)
        .with(console_layer)
        .with(syslog_layer)
        .init();
    journal || destinations.console
}

/// systemd sets `JOURNAL_STREAM=DEVICE:INODE` to the journal stream it
/// connected; it only applies while standard error is still that stream
/// (not when the user redirected it, or a shell started from the unit did).
fn stderr_is_the_journal() -> bool {
    let Ok(stream) = std::env::var("JOURNAL_STREAM") else {
        return false;
    };
    let Some((device, inode)) = stream.split_once(':') else {
        return false;
    };
    // SAFETY: fstat writes the structure given.
    let mut status: libc::stat = unsafe { std::mem::zeroed() };
    if unsafe { libc::fstat(io::stderr().as_raw_fd(), &mut status) } != 0 {
        return false;
    }
    device.parse() == Ok(status.st_dev) && inode.parse() == Ok(status.st_ino)
}

/// The syslog priority of a level.
fn priority(level: &Level) -> libc::c_int {
    match *level {
        Level::ERROR => libc::LOG_ERR,
        Level::WARN => libc::LOG_WARNING,
        Level::INFO => libc::LOG_INFO,
        Level::DEBUG | Level::TRACE => libc::LOG_DEBUG,
    }
}

/// Gathers one event's text and sends it when dropped: the formatter may
/// write an event in several pieces, and each syslog call or prefixed
/// line must hold a whole event.
struct Event {
    priority: libc::c_int,
    text: Vec<u8>,
    sink: fn(libc::c_int, &[u8]),
}

impl Write for Event {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.text.extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Drop for Event {
    fn drop(&mut self) {
        while self.text.last() == Some(&b'\n') {
            self.text.pop();
        }
        if !self.text.is_empty() {
            (self.sink)(self.priority, &self.text);
        }
    }
}

struct Syslog;

impl<'writer> MakeWriter<'writer> for Syslog {
    type Writer = Event;

    fn make_writer(&'writer self) -> Event {
        Event {
            priority: libc::LOG_INFO,
            text: Vec::new(),
            sink: send_to_syslog,
        }
    }

    fn make_writer_for(&'writer self, metadata: &Metadata<'_>) -> Event {
        Event {
            priority: priority(metadata.level()),
            text: Vec::new(),
            sink: send_to_syslog,
        }
    }
}

fn send_to_syslog(priority: libc::c_int, text: &[u8]) {
    // A NUL inside a message would end it early: shown as a space instead.
    let text: Vec<u8> = text
        .iter()
        .map(|&byte| if byte == 0 { b' ' } else { byte })
        .collect();
    let text = CString::new(text).expect("NUL bytes were replaced");
    // SAFETY: both are valid C strings; "%s" takes the message as data,
    // never as a format.
    unsafe { libc::syslog(priority, c"%s".as_ptr(), text.as_ptr()) };
}

struct PrefixedStderr;

impl<'writer> MakeWriter<'writer> for PrefixedStderr {
    type Writer = Event;

    fn make_writer(&'writer self) -> Event {
        Event {
            priority: libc::LOG_INFO,
            text: Vec::new(),
            sink: write_prefixed,
        }
    }

    fn make_writer_for(&'writer self, metadata: &Metadata<'_>) -> Event {
        Event {
            priority: priority(metadata.level()),
            text: Vec::new(),
            sink: write_prefixed,
        }
    }
}

/// sd-daemon(3): each line starting `<N>` is logged at priority N; every
/// line of a multi-line message gets the prefix.
fn write_prefixed(priority: libc::c_int, text: &[u8]) {
    let mut out = Vec::with_capacity(text.len() + 8);
    for line in text.split(|&byte| byte == b'\n') {
        out.extend_from_slice(format!("<{priority}>").as_bytes());
        out.extend_from_slice(line);
        out.push(b'\n');
    }
    let _ = io::stderr().lock().write_all(&out);
}
