//! keepalived's notify FIFOs (`notify_fifo`, `vrrp_notify_fifo`,
//! `lvs_notify_fifo`), as keepalived 2.2.7 keeps them (notify.c
//! `fifo_open`, `notify_fifo_close`):
//!
//! - Each part opens its FIFOs when it starts: VRRP the global one, then
//!   `vrrp_notify_fifo`; the checkers the global one, then
//!   `lvs_notify_fifo`. Both parts running with `notify_fifo` open it
//!   twice and run its script twice, as keepalived's two processes do.
//! - A missing FIFO is created (`mkfifo`, mode 0644 less keepalived's
//!   umask 0177: 0600) and
//!   given to the FIFO's user and group (`notify_fifo PATH USER GROUP`,
//!   else the default script user) when they are not this process's; an
//!   existing one is used as it is; any other failure to create it, and
//!   the FIFO is not used ("Unable to create ...notify fifo").
//! - The `*_fifo_script`, if any, is started before the FIFO is opened,
//!   with the FIFO's path as its last argument, and never timed out.
//! - The FIFO is opened read-write, non-blocking, without following a
//!   symbolic link: the open never waits for a reader, and a write never
//!   fails for want of one (this process is a reader too; keepalived
//!   ignores SIGPIPE anyway, as Rust does). A reader gone, lines wait in
//!   the pipe until it is full, then are dropped (the write fails with
//!   EAGAIN, unreported as keepalived leaves it). A failed open unlinks a
//!   FIFO just created.
//! - Every line goes to the global FIFO, then to the part's.
//! - At a reload the scripts are sent SIGTERM (SIGKILL a second later,
//!   not waited for), the FIFOs closed (those made here unlinked), then
//!   opened again as the new configuration says, their scripts started
//!   again.
//! - At the stop the scripts are sent SIGTERM first (keepalived's
//!   `script_killall` at the start of its termination), then the last
//!   lines are written (STOP...), then the scripts get a second to end
//!   before SIGKILL, then a FIFO this process created is unlinked, and
//!   closed; but VRRP without `vrrp_notify_fifo` open leaves the global
//!   one (keepalived's vrrp_terminate_phase2 closes the FIFOs only when
//!   its own is open).
//!
//! Writing never holds up VRRP or the checkers: each FIFO has a task of
//! its own owning the descriptor, handed lines on an unbounded channel,
//! and its writes do not block.

pub mod lines;

use std::ffi::CString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use fulcrum_config::model as config;
use fulcrum_scripts::account::{self, Accounts};
use tokio::sync::{mpsc, oneshot};

/// How long the scripts have to end after SIGTERM, at the stop
/// (keepalived's `TIMER_HZ` in `script_killall`).
const SCRIPT_GRACE: Duration = Duration::from_secs(1);

/// The default script user keepalived looks for (notify.c).
const DEFAULT_SCRIPT_USER: &str = "keepalived_script";

/// What a writer task is told.
enum Message {
    Line(Arc<str>),
    /// Answered once every line before it is written.
    Flush(oneshot::Sender<()>),
}

/// Where a part's lines go: its open FIFOs, global first. Cheap to clone;
/// shared, so that the FIFOs a reload opens again are every holder's.
#[derive(Debug, Clone, Default)]
pub struct Lines {
    writers: Arc<RwLock<Vec<mpsc::UnboundedSender<Message>>>>,
}

impl std::fmt::Debug for Message {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Message::Line(line) => write!(formatter, "Line({line:?})"),
            Message::Flush(_) => write!(formatter, "Flush"),
        }
    }
}

impl Lines {
    fn writers(&self) -> std::sync::RwLockReadGuard<'_, Vec<mpsc::UnboundedSender<Message>>> {
        // A holder that panicked left the list whole: each change is one
        // push or one clear.
        self.writers
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn change(&self) -> std::sync::RwLockWriteGuard<'_, Vec<mpsc::UnboundedSender<Message>>> {
        self.writers
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Whether any FIFO is open: keepalived formats no line otherwise.
    pub fn is_open(&self) -> bool {
        !self.writers().is_empty()
    }

    /// Hands `line` to every FIFO's writer; never waits.
    pub fn send(&self, line: String) {
        let line: Arc<str> = line.into();
        for writer in self.writers().iter() {
            // A writer gone (the part stopping) drops the line.
            let _ = writer.send(Message::Line(line.clone()));
        }
    }

    /// Waits until every line sent so far is written.
    async fn flush(&self) {
        let waits: Vec<oneshot::Receiver<()>> = self
            .writers()
            .iter()
            .filter_map(|writer| {
                let (done, written) = oneshot::channel();
                writer.send(Message::Flush(done)).ok().map(|()| written)
            })
            .collect();
        for written in waits {
            let _ = written.await;
        }
    }
}

/// A part's FIFOs (`kind`: `vrrp_` or `lvs_`, as keepalived names them in
/// its lines): the writers, the scripts reading them, what to unlink.
#[derive(Debug, Default)]
pub struct NotifyFifos {
    lines: Lines,
    opened: Vec<Opened>,
    /// VRRP's, without `vrrp_notify_fifo` open: keepalived's VRRP process
    /// then leaves the global FIFO it made at its stop
    /// (vrrp_terminate_phase2 closes the FIFOs only when its own is open).
    keeps_global_at_stop: bool,
}

#[derive(Debug)]
struct Opened {
    path: PathBuf,
    /// `notify_fifo`'s, not the part's.
    global: bool,
    /// Whether this process made the FIFO: it unlinks it at the stop.
    created: bool,
    /// None when the open failed (the script, if started, still runs).
    writer: Option<tokio::task::JoinHandle<()>>,
    script: Option<RunningScript>,
}

impl NotifyFifos {
    /// Opens the global FIFO, then the part's (`part`, `part_script`;
    /// `kind` is `vrrp_` or `lvs_`), as the configuration gives them.
    pub fn open(
        global: &config::GlobalDefs,
        part: Option<&config::NotifyFifo>,
        part_script: Option<&config::Script>,
        kind: &str,
    ) -> NotifyFifos {
        let mut fifos = NotifyFifos::default();
        fifos.open_all(global, part, part_script, kind);
        fifos
    }

    fn open_all(
        &mut self,
        global: &config::GlobalDefs,
        part: Option<&config::NotifyFifo>,
        part_script: Option<&config::Script>,
        kind: &str,
    ) {
        let what = format!("{} notify fifo script", kind.trim_end_matches('_'));
        if let Some(fifo) = &global.fifos.any {
            self.open_one(global, fifo, global.fifo_scripts.any.as_ref(), "", &what);
        }
        let part_open =
            part.is_some_and(|fifo| self.open_one(global, fifo, part_script, kind, &what));
        self.keeps_global_at_stop = kind == "vrrp_" && !part_open;
    }

    /// A reload, as keepalived's: the scripts sent SIGTERM (SIGKILL a
    /// second later), the FIFOs closed (those made here unlinked), then
    /// opened again as the new configuration says, their scripts started
    /// again. Whoever holds the [`Lines`] writes to the new ones.
    pub async fn reopen(
        &mut self,
        global: &config::GlobalDefs,
        part: Option<&config::NotifyFifo>,
        part_script: Option<&config::Script>,
        kind: &str,
    ) {
        self.terminate_scripts();
        self.lines.flush().await;
        let opened = std::mem::take(&mut self.opened);
        for opened in &opened {
            if opened.created {
                let _ = std::fs::remove_file(&opened.path);
            }
        }
        self.lines.change().clear();
        let mut scripts = Vec::new();
        for opened in opened {
            if let Some(writer) = opened.writer {
                let _ = writer.await;
            }
            scripts.extend(opened.script);
        }
        // Not waited for: keepalived's child_killed_reload.
        if !scripts.is_empty() {
            tokio::spawn(async move {
                let deadline = tokio::time::Instant::now() + SCRIPT_GRACE;
                for script in scripts {
                    script.end_by(deadline).await;
                }
            });
        }
        self.open_all(global, part, part_script, kind);
    }

    /// Where the part's lines go.
    pub fn lines(&self) -> Lines {
        self.lines.clone()
    }

    /// Makes, starts the script of, and opens one FIFO; whether it is
    /// open.
    fn open_one(
        &mut self,
        global: &config::GlobalDefs,
        fifo: &config::NotifyFifo,
        script: Option<&config::Script>,
        kind: &str,
        what: &str,
    ) -> bool {
        let path = PathBuf::from(&fifo.path);
        let Some(owner) = owner(global, fifo, kind) else {
            return false;
        };
        let created = match make_fifo(&path) {
            Ok(()) => {
                let ours = account::ours();
                if owner != ours && !change_owner(&path, owner, ours) {
                    tracing::info!("Failed to set uid:gid for fifo {}", fifo.path);
                }
                true
            }
            Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => false,
            Err(_) => {
                tracing::info!("Unable to create {kind}notify fifo {}", fifo.path);
                return false;
            }
        };
        let script = script.and_then(|script| RunningScript::start(script, &fifo.path, what));
        let writer = match open_for_writing(&path) {
            Ok(descriptor) => {
                let (sender, receiver) = mpsc::unbounded_channel();
                self.lines.change().push(sender);
                Some(tokio::spawn(write_lines(descriptor, receiver)))
            }
            Err(error) => {
                tracing::info!(
                    "Unable to open {kind}notify fifo {} - errno {}",
                    fifo.path,
                    error.raw_os_error().unwrap_or(0)
                );
                if created {
                    let _ = std::fs::remove_file(&path);
                }
                None
            }
        };
        let open = writer.is_some();
        self.opened.push(Opened {
            path,
            global: kind.is_empty(),
            created: created && open,
            writer,
            script,
        });
        open
    }

    /// The start of the stop: SIGTERM to the scripts' process groups,
    /// before the last lines are written, as keepalived does.
    pub fn terminate_scripts(&self) {
        for opened in &self.opened {
            if let Some(script) = &opened.script {
                script.signal(libc::SIGTERM);
            }
        }
    }

    /// The end of the stop: the lines sent written, the scripts given a
    /// second to end (then SIGKILL), the FIFOs this process made unlinked
    /// (before they are closed, so that a script reopening its FIFO in a
    /// loop cannot), and closed.
    pub async fn close(mut self) {
        self.lines.flush().await;
        let deadline = tokio::time::Instant::now() + SCRIPT_GRACE;
        for opened in &mut self.opened {
            if let Some(script) = opened.script.take() {
                script.end_by(deadline).await;
            }
        }
        for opened in &self.opened {
            if opened.created && !(opened.global && self.keeps_global_at_stop) {
                let _ = std::fs::remove_file(&opened.path);
            }
        }
        // The writers end, closing their descriptors, once their senders
        // go.
        self.lines.change().clear();
        for opened in self.opened {
            if let Some(writer) = opened.writer {
                let _ = writer.await;
            }
        }
    }
}

/// Whom a FIFO made here is given to: `notify_fifo PATH USER [GROUP]`'s,
/// else the default script user (`script_user`, else `keepalived_script`,
/// else this process's). `None`, logged as keepalived does, when the
/// user or group cannot be found: the FIFO is ignored.
fn owner(
    global: &config::GlobalDefs,
    fifo: &config::NotifyFifo,
    kind: &str,
) -> Option<config::Account> {
    let system = account::System;
    match &fifo.owner {
        Some((user, group)) => match system.lookup(user, group.as_deref()) {
            Ok(account) => Some(account),
            Err(error) => {
                tracing::info!("{error}");
                tracing::info!(
                    "Invalid user/group for {kind} fifo {} - ignoring",
                    fifo.path
                );
                None
            }
        },
        None => {
            let default = match &global.script_user {
                Some((user, group)) => system.lookup(user, group.as_deref()),
                None => system.lookup(DEFAULT_SCRIPT_USER, None),
            };
            match default {
                Ok(account) => Some(account),
                // The review said why already, for the scripts.
                Err(_) if global.script_user.is_none() => Some(account::ours()),
                Err(_) => {
                    tracing::info!(
                        "Failed to set default user for {kind} fifo {} - ignoring",
                        fifo.path
                    );
                    None
                }
            }
        }
    }
}

fn c_path(path: &Path) -> std::io::Result<CString> {
    CString::new(path.as_os_str().as_bytes())
        .map_err(|_| std::io::Error::from(std::io::ErrorKind::InvalidInput))
}

/// keepalived's mkfifo(PATH, 0644) under its umask, 0177 (main.c): 0600,
/// whatever pulse's own umask.
const FIFO_MODE: libc::mode_t = 0o644 & !0o177;

/// mkfifo(PATH), then its mode set as keepalived's umask leaves it.
fn make_fifo(path: &Path) -> std::io::Result<()> {
    let name = c_path(path)?;
    // SAFETY: a valid NUL-terminated path.
    if unsafe { libc::mkfifo(name.as_ptr(), FIFO_MODE) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // A stricter umask of pulse's own does not apply: keepalived sets its
    // own. A failure leaves the FIFO usable by its owner, as made.
    // SAFETY: a valid NUL-terminated path.
    unsafe { libc::chmod(name.as_ptr(), FIFO_MODE) };
    Ok(())
}

/// chown to `owner`, each id only where it differs from ours.
fn change_owner(path: &Path, owner: config::Account, ours: config::Account) -> bool {
    let Ok(name) = c_path(path) else {
        return false;
    };
    let uid = if owner.uid != ours.uid {
        owner.uid
    } else {
        libc::uid_t::MAX
    };
    let gid = if owner.gid != ours.gid {
        owner.gid
    } else {
        libc::gid_t::MAX
    };
    // SAFETY: a valid NUL-terminated path; -1 leaves an id unchanged.
    unsafe { libc::chown(name.as_ptr(), uid, gid) == 0 }
}

/// open(PATH, O_RDWR | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW).
fn open_for_writing(path: &Path) -> std::io::Result<OwnedFd> {
    let name = c_path(path)?;
    // SAFETY: a valid NUL-terminated path; the descriptor is owned below.
    let descriptor = unsafe {
        libc::open(
            name.as_ptr(),
            libc::O_RDWR | libc::O_CLOEXEC | libc::O_NONBLOCK | libc::O_NOFOLLOW,
        )
    };
    if descriptor == -1 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: just opened, owned by nothing else.
    Ok(unsafe { OwnedFd::from_raw_fd(descriptor) })
}

/// A FIFO's script running: its process group, and the task reaping it.
#[derive(Debug)]
struct RunningScript {
    group: libc::pid_t,
    /// Set once pulse signals it: its end is then no news (keepalived
    /// replaces the script's exit handler when it kills its children).
    signalled: Arc<AtomicBool>,
    waiter: tokio::task::JoinHandle<()>,
}

impl RunningScript {
    /// Starts a FIFO's script with the FIFO's path as its last argument
    /// (keepalived's `add_script_param`), in a process group of its own;
    /// an end of its own is logged in keepalived's words (`what`
    /// terminated).
    fn start(script: &config::Script, path: &str, what: &str) -> Option<RunningScript> {
        let mut command = match fulcrum_scripts::run::command(script, &[path]) {
            Ok(command) => command,
            Err(why) => {
                tracing::error!("{why}");
                return None;
            }
        };
        let mut child = match command.spawn() {
            Ok(child) => child,
            Err(error) => {
                tracing::error!(
                    "Error exec-ing command '{}', error {}: {}",
                    script.argv.first().map(String::as_str).unwrap_or(""),
                    error.raw_os_error().unwrap_or(0),
                    fulcrum_scripts::security::strerror(&error)
                );
                return None;
            }
        };
        let group = child.id()? as libc::pid_t;
        let signalled = Arc::new(AtomicBool::new(false));
        let waiter = {
            let signalled = signalled.clone();
            let what = what.to_owned();
            tokio::spawn(async move {
                let _ = child.wait().await;
                if !signalled.load(Ordering::Relaxed) {
                    tracing::info!("{what} terminated");
                }
            })
        };
        Some(RunningScript {
            group,
            signalled,
            waiter,
        })
    }

    /// `signal` to the script's process group, if it is not reaped yet
    /// (its group id cannot have gone to another).
    fn signal(&self, signal: libc::c_int) {
        if self.waiter.is_finished() {
            return;
        }
        self.signalled.store(true, Ordering::Relaxed);
        // SAFETY: kill on the group the script leads (process_group(0)),
        // not yet reaped.
        unsafe { libc::kill(-self.group, signal) };
    }

    /// Waits for the script's end until `deadline`, then SIGKILL.
    async fn end_by(mut self, deadline: tokio::time::Instant) {
        if tokio::time::timeout_at(deadline, &mut self.waiter)
            .await
            .is_err()
        {
            self.signal(libc::SIGKILL);
            let _ = self.waiter.await;
        }
    }
}

/// One FIFO's writer: each line in one non-blocking write, a failure
/// ignored (a full pipe drops the line, as keepalived's write does).
async fn write_lines(descriptor: OwnedFd, mut messages: mpsc::UnboundedReceiver<Message>) {
    while let Some(message) = messages.recv().await {
        match message {
            Message::Line(line) => {
                // SAFETY: an open descriptor this task owns, and a
                // buffer of the length given.
                let _ = unsafe {
                    libc::write(descriptor.as_raw_fd(), line.as_ptr().cast(), line.len())
                };
            }
            Message::Flush(done) => {
                let _ = done.send(());
            }
        }
    }
}

#[cfg(test)]
mod tests;
