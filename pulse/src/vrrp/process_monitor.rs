//! The I/O of `vrrp_track_process`, as keepalived 2.2.7's track_process.c:
//! the kernel's process events connector subscribed to, /proc read once
//! (after the subscription, so that nothing between is missed), then one
//! task reading the events into the counting
//! ([`crate::vrrp::track::processes`]) and sending each quorum change to
//! the VRRP loop.
//!
//! Kernel behaviours this answers:
//!
//! - The connector exists in the initial network namespace only: from any
//!   other, the subscription is refused (`ECONNREFUSED`). keepalived opens
//!   its socket before it enters its `net_namespace` for that reason, and
//!   started inside a namespace (`ip netns exec`) it tracks nothing. pulse
//!   opens its socket in the initial namespace then (`/proc/1/ns/net`, on a
//!   thread of its own), which needs the same privilege as the
//!   subscription itself.
//! - A burst of process events overflows the socket's buffer: the kernel
//!   drops the events and the next read fails with `ENOBUFS`. keepalived
//!   then doubles the buffer and, one second after the last overrun, reads
//!   /proc again; so does pulse.
//! - Without the connector in the kernel (`CONFIG_PROC_EVENTS`), the
//!   subscription succeeds but nothing answers it: keepalived warns when no
//!   acknowledgement came within 0.1 s; so does pulse.

use std::fs::File;
use std::io::{self, Read};
use std::os::fd::AsRawFd;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use fulcrum_config::model as config;
use netlink_sys::{Socket, SocketAddr};
use tokio::io::unix::AsyncFd;
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;

use super::process_events::{self, Event, Packet, Repr};
use super::track::processes::{Identity, ProcessState, ProcessTable, QuorumChange};

/// How long after the last overrun /proc is read again (keepalived's
/// `TIMER_HZ`): events keep coming meanwhile, and reading once they calm
/// down reads once.
const RESCAN_DELAY: Duration = Duration::from_secs(1);
/// How long the kernel has to acknowledge the subscription.
const ACKNOWLEDGEMENT_DELAY: Duration = Duration::from_millis(100);

/// A process event socket, subscribed.
#[derive(Debug)]
pub struct ConnectorSocket {
    socket: AsyncFd<Socket>,
}

impl ConnectorSocket {
    /// Opens and subscribes, in the initial network namespace if this one
    /// has no connector. Must run inside the tokio runtime.
    pub fn open() -> io::Result<ConnectorSocket> {
        let socket = match subscribed() {
            Err(error) if error.raw_os_error() == Some(libc::ECONNREFUSED) => {
                subscribed_elsewhere(error)?
            }
            result => result?,
        };
        socket.set_non_blocking(true)?;
        Ok(ConnectorSocket {
            // SAFETY: the socket is owned by the AsyncFd and keeps its
            // descriptor until dropped with it.
            socket: unsafe { AsyncFd::register(socket) }.map_err(|error| error.into_parts().1)?,
        })
    }

    /// The next message from the kernel, as bytes; `ENOBUFS` when events
    /// were lost.
    pub async fn receive(&self, buffer: &mut Vec<u8>) -> io::Result<()> {
        loop {
            let mut guard = self.socket.readable().await?;
            buffer.clear();
            match guard.try_io(|socket| socket.get_ref().recv_from(buffer, 0)) {
                // Only the kernel's (port 0), as keepalived checks.
                Ok(Ok((_, from))) if from.port_number() != 0 => continue,
                Ok(result) => return result.map(|_| ()),
                Err(_would_block) => continue,
            }
        }
    }

    /// Doubles the receive buffer, as keepalived does after an overrun;
    /// the new size.
    fn grow(&self) -> io::Result<usize> {
        let socket = self.socket.get_ref();
        // The kernel reports twice what was set (its bookkeeping): setting
        // what it reports doubles it.
        let size = socket.get_rx_buf_sz()?;
        socket.set_rx_buf_sz(size as libc::c_int)?;
        socket.get_rx_buf_sz()
    }

    /// Tells the kernel this socket no longer listens: it counts listeners
    /// by these messages, not by sockets, and sends events while any is
    /// counted.
    fn unsubscribe(&self) {
        let socket = self.socket.get_ref();
        let _ = socket.send(&process_events::subscription_message(false, 0), 0);
    }
}

/// A socket subscribed from the network namespace of another process:
/// pid 1's, in the initial namespace on any host; where /proc hides it
/// (a hardened /proc, a sandbox), the namespace of each ancestor in turn,
/// the nearest first (`ip netns exec` runs pulse from a shell in the
/// initial one). A namespace the connector refuses too is passed over.
fn subscribed_elsewhere(refused: io::Error) -> io::Result<Socket> {
    let mut candidates = vec![1];
    let mut pid = std::os::unix::process::parent_id() as i32;
    while pid > 1 && candidates.len() < 64 {
        candidates.push(pid);
        pid = parent_of(pid).unwrap_or(0);
    }
    let mut last = refused;
    for pid in candidates {
        let namespace = match File::open(format!("/proc/{pid}/ns/net")) {
            Ok(namespace) => namespace,
            Err(error) => {
                last = error;
                continue;
            }
        };
        if fulcrum_netns::is_current(&namespace) {
            continue;
        }
        match fulcrum_netns::run_in(&namespace, subscribed) {
            Ok(Ok(socket)) => return Ok(socket),
            Ok(Err(error)) | Err(error) => last = error,
        }
    }
    Err(last)
}

/// A process's parent, from /proc/PID/stat (`PID (COMM) STATE PPID ...`).
fn parent_of(pid: i32) -> Option<i32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = &stat[stat.rfind(')')? + 1..];
    after.split_whitespace().nth(1)?.parse().ok()
}

/// A connector socket bound to the process events group, in the calling
/// thread's network namespace, its subscription sent.
fn subscribed() -> io::Result<Socket> {
    let mut socket = Socket::new(process_events::PROTOCOL)?;
    socket.bind(&SocketAddr::new(0, process_events::PROCESS_INDEX))?;
    let mut address = SocketAddr::new(0, 0);
    socket.get_address(&mut address)?;
    socket.send(
        &process_events::subscription_message(true, address.port_number()),
        0,
    )?;
    Ok(socket)
}

/// The running process tracking: the task and what it tracks.
pub struct ProcessMonitor {
    pub definitions: Vec<config::TrackProcess>,
    /// The counts as they stand, published after each event.
    pub states: watch::Receiver<Vec<ProcessState>>,
    socket: Option<Arc<ConnectorSocket>>,
    task: Option<JoinHandle<()>>,
}

impl ProcessMonitor {
    /// Subscribes, reads /proc, and starts the task sending quorum changes
    /// to `changes`; the quorums at start. Without the connector (logged),
    /// no process counts, as for keepalived.
    pub fn start(
        definitions: &[config::TrackProcess],
        changes: mpsc::Sender<QuorumChange>,
    ) -> (ProcessMonitor, std::collections::HashMap<String, bool>) {
        let mut table = ProcessTable::new(definitions);
        let (states, receiver) = watch::channel(table.states());
        let mut monitor = ProcessMonitor {
            definitions: definitions.to_vec(),
            states: receiver,
            socket: None,
            task: None,
        };
        match ConnectorSocket::open() {
            Ok(socket) => {
                table.scan(read_processes(&table));
                states.send_replace(table.states());
                let socket = Arc::new(socket);
                monitor.socket = Some(socket.clone());
                monitor.task = Some(tokio::spawn(run(socket, table.clone(), changes, states)));
            }
            Err(error) => {
                tracing::error!(
                    "Failed to open process monitoring socket - errno {} - {error}; \
                     track_process will not work",
                    error.raw_os_error().unwrap_or(0)
                );
                table.scan([]);
            }
        }
        (monitor, table.quorums())
    }

    pub fn stop(&mut self) {
        if let Some(task) = self.task.take() {
            task.abort();
        }
        if let Some(socket) = self.socket.take() {
            socket.unsubscribe();
        }
    }
}

impl Drop for ProcessMonitor {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The task: events in, quorum changes out, until `changes` closes.
async fn run(
    socket: Arc<ConnectorSocket>,
    mut table: ProcessTable,
    changes: mpsc::Sender<QuorumChange>,
    states: watch::Sender<Vec<ProcessState>>,
) {
    let mut buffer = Vec::with_capacity(4096);
    let mut acknowledgement_due = Some(Instant::now() + ACKNOWLEDGEMENT_DELAY);
    let mut rescan_at: Option<Instant> = None;
    // The last sequence number seen on each processor.
    let mut sequences = std::collections::HashMap::<u32, u32>::new();
    loop {
        let deadline = [table.poll_at(), rescan_at, acknowledgement_due]
            .into_iter()
            .flatten()
            .min();
        let mut found = Vec::new();
        tokio::select! {
            received = socket.receive(&mut buffer) => match received {
                Ok(()) => {
                    let Ok(packet) = Packet::new_checked(&buffer[..]) else {
                        tracing::info!("proc_event !NLMSG_OK");
                        continue;
                    };
                    let Ok(repr) = Repr::parse(&packet) else {
                        continue;
                    };
                    // An acknowledgement says so, and only it.
                    if matches!(repr.event, Event::Acknowledged { .. })
                        != (repr.acknowledgement != 0)
                    {
                        continue;
                    }
                    if let Some(last) = sequences.insert(repr.cpu, repr.sequence)
                        && rescan_at.is_none()
                        && repr.sequence != last.wrapping_add(1)
                    {
                        tracing::info!(
                            "Missed {} messages on CPU {}",
                            repr.sequence.wrapping_sub(last).wrapping_sub(1),
                            repr.cpu
                        );
                    }
                    found = handle(&mut table, &repr.event, Instant::now());
                    if matches!(repr.event, Event::Acknowledged { .. }) {
                        acknowledgement_due = None;
                        tracing::debug!("proc_events has confirmed it is configured");
                    }
                }
                Err(error) if error.raw_os_error() == Some(libc::ENOBUFS) => {
                    let size = socket.grow();
                    tracing::warn!(
                        "process monitor: receive buffer overrun, events lost; /proc read \
                         again in {RESCAN_DELAY:?}, the buffer now {} bytes",
                        size.map_or_else(|error| error.to_string(), |size| size.to_string())
                    );
                    rescan_at = Some(Instant::now() + RESCAN_DELAY);
                }
                Err(error) => {
                    // keepalived logs it and reads on; a pause keeps an
                    // error that repeats from taking the processor.
                    tracing::error!(
                        "process monitor netlink recv error {} - {error}",
                        error.raw_os_error().unwrap_or(0)
                    );
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            },
            _ = sleep_until(deadline) => {
                let now = Instant::now();
                if acknowledgement_due.is_some_and(|due| due <= now) {
                    acknowledgement_due = None;
                    tracing::warn!(
                        "WARNING - the kernel does not support proc events - track_process \
                         will not work"
                    );
                }
                if rescan_at.is_some_and(|at| at <= now) {
                    rescan_at = None;
                    sequences.clear();
                    let processes = read_processes(&table);
                    found = table.rescan(processes, now);
                }
                found.extend(table.poll(now));
            }
        }
        states.send_if_modified(|published| {
            let now = table.states();
            let changed = *published != now;
            *published = now;
            changed
        });
        for change in found {
            tracing::info!(
                "Quorum {} for tracked process {}",
                if change.have_quorum { "gained" } else { "lost" },
                change.name
            );
            if changes.send(change).await.is_err() {
                return;
            }
        }
    }
}

/// One event given to the table: processes only (a thread's pid is not its
/// tgid), as keepalived follows them.
fn handle(table: &mut ProcessTable, event: &Event, now: Instant) -> Vec<QuorumChange> {
    match *event {
        Event::Fork {
            parent_tgid,
            child_pid,
            child_tgid,
            ..
        } if child_pid == child_tgid => table.fork(parent_tgid, child_tgid, now),
        Event::Exec { pid, tgid } if pid == tgid => {
            let identity = identity(table, tgid);
            table.exec(tgid, identity.as_ref(), now)
        }
        Event::Comm { pid, tgid, comm } if pid == tgid => {
            table.comm(tgid, Event::comm_name(&comm), now)
        }
        Event::Exit { pid, tgid, .. } if pid == tgid => table.exit(tgid, now),
        _ => Vec::new(),
    }
}

/// What /proc says of a process that just exec'd (/proc/PID/comm, and its
/// command line if some tracked process reads them); `None` when it is
/// gone already.
fn identity(table: &ProcessTable, pid: i32) -> Option<Identity> {
    let (names, command_lines) = table.reads();
    let directory = Path::new("/proc").join(pid.to_string());
    let command_line = if command_lines {
        Some(read_start(
            &directory.join("cmdline"),
            table.command_line_needed() + 1,
        )?)
    } else {
        None
    };
    let comm = if names {
        let mut comm = read_start(&directory.join("comm"), 17)?;
        if comm.last() == Some(&b'\n') {
            comm.pop();
        }
        Some(comm)
    } else {
        None
    };
    Some(Identity { comm, command_line })
}

/// Every running process of /proc, with what the table compares: the name
/// from /proc/PID/stat (whose state tells zombies, which are not counted),
/// and the command line. keepalived reads command lines only when a
/// tracked process needs them: reading one reads the process's memory,
/// swapped in if it was out.
pub fn read_processes(table: &ProcessTable) -> Vec<(i32, Identity)> {
    let (names, command_lines) = table.reads();
    let needed = table.command_line_needed();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut processes = Vec::new();
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|name| name.parse::<i32>().ok())
        else {
            continue;
        };
        let directory = entry.path();
        let command_line = if command_lines {
            match read_start(&directory.join("cmdline"), needed) {
                Some(line) => Some(line),
                None => continue,
            }
        } else {
            None
        };
        let comm = if names {
            let Some(stat) = read_start(&directory.join("stat"), 128) else {
                continue;
            };
            // `PID (COMM) STATE ...`: the name may hold parentheses, the
            // last `)` ends it.
            let (Some(open), Some(close)) = (
                stat.iter().position(|byte| *byte == b'('),
                stat.iter().rposition(|byte| *byte == b')'),
            ) else {
                continue;
            };
            if close <= open || stat.get(close + 2) == Some(&b'Z') {
                continue;
            }
            Some(stat[open + 1..close].to_vec())
        } else {
            None
        };
        processes.push((pid, Identity { comm, command_line }));
    }
    processes
}

/// The first `limit` bytes of a /proc file; `None` if it cannot be read.
fn read_start(path: &Path, limit: usize) -> Option<Vec<u8>> {
    let file = File::open(path).ok()?;
    let mut bytes = Vec::with_capacity(limit.min(4096));
    file.take(limit as u64).read_to_end(&mut bytes).ok()?;
    Some(bytes)
}

async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(deadline.into()).await,
        None => std::future::pending().await,
    }
}

impl AsRawFd for ConnectorSocket {
    fn as_raw_fd(&self) -> std::os::fd::RawFd {
        self.socket.get_ref().as_raw_fd()
    }
}

#[cfg(test)]
mod tests;
