//! `pulse --status [--json]` on a director: what the running pulse knows,
//! asked over a Unix socket beside its pid file.
//!
//! Rules:
//! - **Beside the pid file.** The daemon listens on the pid file's path
//!   with the extension `sock` (`/run/pulse.pid` gives `/run/pulse.sock`),
//!   made once the pid file is its (so two pulses never share one) and
//!   removed at a clean stop; `pulse --status -p FILE` asks the pulse of
//!   that pid file. Only its owner may connect (mode 0600).
//! - **One answer per connection.** The daemon writes one JSON document,
//!   [`DirectorStatus`], and closes: nothing is read from the client.
//! - **The same published values as /metrics.** The answer is built from
//!   [`Observed`] at the moment it is asked: VRRP's report, the LVS part's,
//!   the reloads. `--json` prints the document as the daemon wrote it; the
//!   text is made from it on the client's side.
//! - **Exit status**: 0 answered, 3 no pulse answers there (none runs, or
//!   another pid file).

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};
use tokio::io::AsyncWriteExt;
use tokio::sync::watch;

use crate::metrics::Observed;
use crate::vrrp::report;
use crate::{cli, exit};
use fulcrum_metrics::seconds;

/// The status socket of the pulse whose pid file is `pid_file`.
pub fn socket_path(pid_file: &Path) -> PathBuf {
    pid_file.with_extension("sock")
}

/// What `pulse --status` shows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DirectorStatus {
    pub version: String,
    pub pid: u32,
    pub configuration: String,
    /// Seconds since the epoch.
    pub loaded_at: f64,
    pub last_reload_successful: bool,
    pub reloads_succeeded: u64,
    pub reloads_failed: u64,
    pub vrrp_instances: Vec<InstanceStatus>,
    pub virtual_servers: Vec<VirtualServerStatus>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InstanceStatus {
    pub name: String,
    pub interface: String,
    pub virtual_router_id: u8,
    /// keepalived's name: INIT, BACKUP, MASTER, FAULT.
    pub state: String,
    pub priority: u8,
    pub base_priority: u8,
    /// Seconds since the epoch.
    pub since: f64,
    /// As keepalived writes them.
    pub virtual_addresses: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VirtualServerStatus {
    /// As pulse logs it: `10.0.0.1:80 TCP`, `fwmark 5`, `group web TCP`.
    pub virtual_server: String,
    pub real_servers: Vec<RealServerStatus>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RealServerStatus {
    pub real_server: String,
    pub up: bool,
    /// The check that last decided and what it found.
    pub reason: String,
    /// Seconds since the epoch.
    pub since: f64,
}

/// The status from what the daemon's parts last published.
pub fn build(observed: &Observed, configuration: &Path) -> DirectorStatus {
    let vrrp = observed.vrrp.borrow().clone();
    let lvs = observed.lvs.borrow().clone();
    let reloads = observed.reloads.borrow().clone();
    let mut virtual_servers: BTreeMap<String, Vec<RealServerStatus>> = BTreeMap::new();
    for ((virtual_server, address), known) in &lvs.real_servers {
        virtual_servers
            .entry(virtual_server.clone())
            .or_default()
            .push(RealServerStatus {
                real_server: address.to_string(),
                up: known.up,
                reason: known.reason.clone(),
                since: seconds(known.since),
            });
    }
    DirectorStatus {
        version: env!("CARGO_PKG_VERSION").to_owned(),
        pid: std::process::id(),
        configuration: configuration.display().to_string(),
        loaded_at: seconds(reloads.last_success),
        last_reload_successful: reloads.last_successful,
        reloads_succeeded: reloads.succeeded,
        reloads_failed: reloads.failed,
        vrrp_instances: vrrp
            .instances
            .iter()
            .map(|instance| InstanceStatus {
                name: instance.description.name.clone(),
                interface: instance.description.interface.clone(),
                virtual_router_id: instance.description.virtual_router_id,
                state: report::state_name(instance.state).to_owned(),
                priority: instance.effective_priority,
                base_priority: instance.description.base_priority,
                since: seconds(instance.last_transition),
                virtual_addresses: instance
                    .description
                    .virtual_addresses
                    .iter()
                    .map(|address| address.text.clone())
                    .collect(),
            })
            .collect(),
        virtual_servers: virtual_servers
            .into_iter()
            .map(|(virtual_server, real_servers)| VirtualServerStatus {
                virtual_server,
                real_servers,
            })
            .collect(),
    }
}

/// The daemon's status socket: bound once the pid file is the daemon's,
/// removed when dropped.
#[derive(Debug)]
pub struct StatusSocket {
    path: PathBuf,
    listener: Option<std::os::unix::net::UnixListener>,
}

impl StatusSocket {
    /// Binds the socket beside `pid_file`, replacing one a dead pulse left
    /// (the pid file, already ours, says none runs).
    pub fn bind(pid_file: &Path) -> std::io::Result<StatusSocket> {
        use std::os::unix::fs::PermissionsExt;
        let path = socket_path(pid_file);
        let _ = std::fs::remove_file(&path);
        let listener = std::os::unix::net::UnixListener::bind(&path)?;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))?;
        listener.set_nonblocking(true)?;
        Ok(StatusSocket {
            path,
            listener: Some(listener),
        })
    }

    pub fn take_listener(&mut self) -> Option<std::os::unix::net::UnixListener> {
        self.listener.take()
    }
}

impl Drop for StatusSocket {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Answers each connection with the status until `shutdown` turns true.
/// Must run inside the runtime.
pub async fn serve(
    listener: std::os::unix::net::UnixListener,
    observed: Observed,
    configuration: PathBuf,
    mut shutdown: watch::Receiver<bool>,
) {
    let listener = match tokio::net::UnixListener::from_std(listener) {
        Ok(listener) => listener,
        Err(error) => {
            tracing::error!("cannot answer --status: {error}");
            return;
        }
    };
    loop {
        tokio::select! {
            () = async { let _ = shutdown.wait_for(|stop| *stop).await; } => break,
            accepted = listener.accept() => match accepted {
                Ok((mut stream, _)) => {
                    let status = build(&observed, &configuration);
                    tokio::spawn(async move {
                        let mut document = serde_json::to_vec(&status)
                            .expect("the status is plain data");
                        document.push(b'\n');
                        // A client gone before the answer is its own
                        // business.
                        let _ = stream.write_all(&document).await;
                        let _ = stream.shutdown().await;
                    });
                }
                Err(error) => {
                    tracing::warn!("--status: cannot accept a connection: {error}");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            },
        }
    }
}

/// `pulse --status [--json] [-p FILE]` without `--cluster`.
pub fn run(
    arguments: &cli::Arguments,
    stdout: &mut dyn Write,
    stderr: &mut dyn Write,
) -> std::io::Result<i32> {
    let pid_file = arguments
        .pid_file
        .clone()
        .unwrap_or_else(|| PathBuf::from(crate::daemon::process::DEFAULT_PID_FILE));
    let path = socket_path(&pid_file);
    let mut document = String::new();
    let asked = std::os::unix::net::UnixStream::connect(&path).and_then(|mut stream| {
        stream.set_read_timeout(Some(Duration::from_secs(5)))?;
        stream.read_to_string(&mut document)
    });
    if let Err(error) = asked {
        writeln!(
            stderr,
            "pulse: no pulse answers at {} ({error}): is it running with the pid file {}? \
             (-p FILE names another; --cluster asks the SDN cluster store)",
            path.display(),
            pid_file.display()
        )?;
        return Ok(exit::FATAL);
    }
    if arguments.json {
        write!(stdout, "{document}")?;
        return Ok(exit::CLEAN);
    }
    match serde_json::from_str::<DirectorStatus>(&document) {
        Ok(status) => {
            write!(stdout, "{}", text(&status, SystemTime::now()))?;
            Ok(exit::CLEAN)
        }
        Err(error) => {
            writeln!(
                stderr,
                "pulse: the answer at {} is not a status this pulse reads ({error}): another \
                 version?",
                path.display()
            )?;
            Ok(exit::FATAL)
        }
    }
}

/// How long ago `since` was, at `now`, in the largest whole unit.
fn age(since: f64, now: SystemTime) -> String {
    let elapsed = (seconds(now) - since).max(0.0) as u64;
    match elapsed {
        0..60 => format!("{elapsed}s"),
        60..3600 => format!("{}m{:02}s", elapsed / 60, elapsed % 60),
        3600..86400 => format!("{}h{:02}m", elapsed / 3600, elapsed % 3600 / 60),
        _ => format!("{}d{:02}h", elapsed / 86400, elapsed % 86400 / 3600),
    }
}

/// The status as text: the daemon, its VRRP instances, its virtual
/// servers with each real server's health and the reason of its last
/// change.
pub fn text(status: &DirectorStatus, now: SystemTime) -> String {
    let mut text = format!(
        "pulse {}, process {}, {} (loaded {} ago; reloads: {} taken, {} refused{})\n",
        status.version,
        status.pid,
        status.configuration,
        age(status.loaded_at, now),
        status.reloads_succeeded,
        status.reloads_failed,
        if status.last_reload_successful {
            ""
        } else {
            ", the last one refused"
        }
    );
    if status.vrrp_instances.is_empty() {
        text.push_str("\nVRRP: no instance\n");
    } else {
        text.push_str("\nVRRP\n");
        for instance in &status.vrrp_instances {
            let priority = if instance.priority == instance.base_priority {
                instance.priority.to_string()
            } else {
                format!(
                    "{} (configured {})",
                    instance.priority, instance.base_priority
                )
            };
            text.push_str(&format!(
                "  {}  {}  vrid {}  {} for {}  priority {}\n",
                instance.name,
                instance.interface,
                instance.virtual_router_id,
                instance.state,
                age(instance.since, now),
                priority
            ));
            for address in &instance.virtual_addresses {
                text.push_str(&format!("      {address}\n"));
            }
        }
    }
    if status.virtual_servers.is_empty() {
        text.push_str("\nvirtual servers: none with a verdict\n");
    } else {
        text.push_str("\nvirtual servers\n");
        for virtual_server in &status.virtual_servers {
            let up = virtual_server
                .real_servers
                .iter()
                .filter(|real_server| real_server.up)
                .count();
            text.push_str(&format!(
                "  {}  {up} of {} real servers up\n",
                virtual_server.virtual_server,
                virtual_server.real_servers.len()
            ));
            for real_server in &virtual_server.real_servers {
                text.push_str(&format!(
                    "      {}  {} for {}  {}\n",
                    real_server.real_server,
                    if real_server.up { "up  " } else { "DOWN" },
                    age(real_server.since, now),
                    real_server.reason
                ));
            }
        }
    }
    text
}

#[cfg(test)]
mod tests;
