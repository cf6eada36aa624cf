//! Starting a reviewed script as keepalived starts one (notify.c
//! `system_call_script`): no shell, the command line as reviewed (its
//! program found and resolved), standard streams on /dev/null, a process
//! group of its own (a signal to the daemon's group does not reach it; a
//! timeout can kill all it started), as its user with `[gid]` as its only
//! group. A `</path` file test runs through `/bin/sh -c`, as keepalived's
//! `system()`.

use std::process::Stdio;
use std::sync::OnceLock;

use fulcrum_config::model::{Account, Script};
use tokio::process::Command;

/// Why a script cannot be started.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RunError {
    #[error("{0}: empty command line")]
    Empty(String),
    /// Every script goes through [`crate::review`] before it runs: one
    /// that did not is a bug, and is not run as root by default.
    #[error("{0}: not reviewed (whom it runs as is unknown)")]
    NotReviewed(String),
    #[error("cannot run {command} as {uid}:{gid}: this process is not root")]
    NotRoot { command: String, uid: u32, gid: u32 },
}

/// The nice value scripts start with, when the daemon changed its own
/// (`vrrp_priority`, `checker_priority`): keepalived's children put back
/// the priority they started with before they run a script (notify.c,
/// `reset_process_priorities`), so that a script does not inherit the
/// daemon's.
static SCRIPT_PRIORITY: OnceLock<i32> = OnceLock::new();

/// Scripts start with nice value `priority` (the daemon's before it
/// changed its own). Set once, before any script runs.
pub fn set_script_priority(priority: i32) {
    let _ = SCRIPT_PRIORITY.set(priority);
}

/// The process to start for `script`, with `arguments` after its own (a
/// notify script's `INSTANCE NAME STATE PRIORITY`).
pub fn command(script: &Script, arguments: &[&str]) -> Result<Command, RunError> {
    let Some(account) = script.runs_as else {
        return Err(RunError::NotReviewed(script.command.clone()));
    };
    let Some((program, own_arguments)) = script.argv.split_first() else {
        return Err(RunError::Empty(script.command.clone()));
    };
    let mut command = if program.starts_with('<') {
        let mut shell = Command::new("/bin/sh");
        let mut words = script.argv.clone();
        words.extend(arguments.iter().map(|argument| argument.to_string()));
        shell.arg("-c").arg(crate::security::quoted_command(&words));
        shell
    } else {
        let mut direct = Command::new(program);
        direct.args(own_arguments).args(arguments);
        direct
    };
    command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0);
    if let Some(&priority) = SCRIPT_PRIORITY.get() {
        // SAFETY: setpriority is async-signal-safe and touches no memory
        // of the parent's. A refusal (lowering the nice value needs
        // privilege) leaves the script at the daemon's, as keepalived's
        // child goes on too.
        unsafe {
            command.pre_exec(move || {
                libc::setpriority(libc::PRIO_PROCESS, 0, priority);
                Ok(())
            });
        }
    }
    let ours = crate::account::ours();
    if account != ours {
        if ours.uid != 0 {
            return Err(RunError::NotRoot {
                command: script.command.clone(),
                uid: account.uid,
                gid: account.gid,
            });
        }
        // As root, std drops the supplementary groups before setuid;
        // keepalived leaves `[gid]`, the same access.
        command.uid(account.uid).gid(account.gid);
    }
    Ok(command)
}

/// Starts `script` and logs how it ended, never waiting for it here
/// (keepalived does not wait for notify scripts either).
pub fn spawn(script: &Script, arguments: &[&str]) {
    let mut command = match command(script, arguments) {
        Ok(command) => command,
        Err(why) => {
            tracing::error!("{why}");
            return;
        }
    };
    match command.spawn() {
        Ok(mut child) => {
            let what = script.command.clone();
            tokio::spawn(async move {
                match child.wait().await {
                    Ok(status) if status.success() => tracing::debug!("{what}: {status}"),
                    Ok(status) => tracing::warn!("{what}: {status}"),
                    Err(error) => tracing::warn!("{what}: {error}"),
                }
            });
        }
        // keepalived's line (its child's execve failed).
        Err(error) => tracing::error!(
            "Error exec-ing command '{}', error {}: {}",
            script.argv.first().map(String::as_str).unwrap_or(""),
            error.raw_os_error().unwrap_or(0),
            crate::security::strerror(&error)
        ),
    }
}

/// Runs `startup_script` or `shutdown_script` (`kind`: "startup" or
/// "shutdown") and waits for it, at most `timeout`, as keepalived's parent
/// does before it starts its children and after they stopped (main.c
/// `run_startup_script`, `startup_shutdown_script_completed`,
/// `handle_child_timeout`): a script still running then is sent SIGTERM,
/// its process group SIGKILL two seconds later. `detail` (`-D`) logs the
/// start and a success too, as keepalived does.
pub async fn run_and_wait(script: &Script, kind: &str, timeout: std::time::Duration, detail: bool) {
    let program = script.argv.first().map(String::as_str).unwrap_or("");
    if detail {
        tracing::info!("Running {kind} script {program}");
    }
    let spawned = command(script, &[])
        .map_err(|why| why.to_string())
        .and_then(|mut command| command.spawn().map_err(|error| error.to_string()));
    let mut child = match spawned {
        Ok(child) => child,
        Err(why) => {
            tracing::info!("Call of {kind} script {program} failed: {why}");
            return;
        }
    };
    let group = child.id().map(|id| id as libc::pid_t);
    // keepalived's words, "startup script script failed" included.
    let kind = format!("{kind} script");
    let status = match tokio::time::timeout(timeout, child.wait()).await {
        Ok(status) => status,
        Err(_) => {
            tracing::info!("{kind} timed out");
            let mut status = None;
            for signal in [libc::SIGTERM, libc::SIGKILL, libc::SIGKILL] {
                if let Some(group) = group {
                    // SAFETY: kill on the script's own process group (it
                    // leads one: process_group(0)), not yet reaped.
                    unsafe { libc::kill(-group, signal) };
                }
                if let Ok(waited) =
                    tokio::time::timeout(std::time::Duration::from_secs(2), child.wait()).await
                {
                    status = Some(waited);
                    break;
                }
                if signal == libc::SIGKILL {
                    tracing::info!(
                        "{kind} (PID {}) failed to terminate after kill",
                        group.unwrap_or(0)
                    );
                }
            }
            match status {
                Some(status) => status,
                None => return,
            }
        }
    };
    match status {
        Ok(status) => match status.code() {
            Some(0) if detail => tracing::info!("{kind} script succeeded"),
            Some(0) | None => {}
            Some(code) => tracing::info!("{kind} script failed, status {code}"),
        },
        Err(error) => tracing::info!("{kind}: {error}"),
    }
}

/// A script run as `account` with `argv`, as a review would leave it: for
/// tests and for callers that build scripts themselves.
pub fn reviewed(argv: &[&str], account: Account) -> Script {
    let command = argv.join(" ");
    let mut script = Script::new(&command, None, None);
    script.argv = argv.iter().map(|word| word.to_string()).collect();
    script.runs_as = Some(account);
    script
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[tokio::test]
    async fn a_script_runs_without_a_shell_as_its_user() {
        let directory = std::env::temp_dir().join(format!("scripts-run-{}", std::process::id()));
        std::fs::create_dir_all(&directory).unwrap();
        let marker = directory.join("semi;colon");
        let script = reviewed(
            &["/usr/bin/touch", marker.to_str().unwrap()],
            crate::account::ours(),
        );
        let status = command(&script, &[]).unwrap().status().await.unwrap();
        assert!(status.success());
        // touch received the word whole: no shell read the `;`.
        assert!(marker.exists());
        std::fs::remove_dir_all(&directory).unwrap();
    }

    #[tokio::test]
    async fn an_unreviewed_script_never_runs() {
        let script = Script::new("/bin/true", None, None);
        assert_eq!(
            command(&script, &[]).unwrap_err(),
            RunError::NotReviewed("/bin/true".into())
        );
    }

    #[tokio::test]
    async fn a_file_test_runs_through_the_shell() {
        let script = reviewed(&["</etc/hostname"], crate::account::ours());
        let status = tokio::time::timeout(
            Duration::from_secs(10),
            command(&script, &[]).unwrap().status(),
        )
        .await
        .unwrap()
        .unwrap();
        assert!(status.success());
        let missing = reviewed(&["</nonexistent/file"], crate::account::ours());
        assert!(
            !command(&missing, &[])
                .unwrap()
                .status()
                .await
                .unwrap()
                .success()
        );
    }
}
