//! MISC_CHECK: runs a script; its exit status is the verdict.
//!
//! As keepalived (check_misc.c): the reviewed command line
//! (`fulcrum-scripts`: whom it runs as, its program found) is executed
//! without a shell, in a process group of its own; exit 0 is up; with `misc_dynamic`, exit 2 to 255 is up too,
//! with weight `status - 2` (so 0 to 253), and 1 is down; anything else is
//! down. On timeout keepalived signals the whole group (SIGTERM, then
//! SIGKILL); nanny does the same in the background, so the check reports
//! its timeout at once and the kill never delays another check. An attempt
//! that is cancelled (shutdown) kills the group too.

use std::time::Duration;

use crate::outcome::{Failure, Outcome, Success};
use crate::spec::MiscSpec;

/// How long a timed-out script gets between SIGTERM and SIGKILL.
const TERMINATION_GRACE: Duration = Duration::from_secs(2);

pub async fn check(misc: &MiscSpec) -> Outcome {
    let program = misc.script.argv.first().cloned().unwrap_or_default();
    let mut command = fulcrum_scripts::run::command(&misc.script, &[])
        .map_err(|why| Failure::Other(why.to_string()))?;
    command.kill_on_drop(true);
    let mut child = command
        .spawn()
        .map_err(|error| Failure::Other(format!("cannot run {program}: {error}")))?;
    let Some(process_id) = child.id() else {
        return Err(Failure::Other(format!("{program} vanished at start")));
    };
    let mut group = GroupGuard {
        group: process_id as libc::pid_t,
        armed: true,
    };
    match tokio::time::timeout(misc.timeout, child.wait()).await {
        Ok(Ok(status)) => {
            // The leader is reaped: its id may be reused, never signal it.
            group.armed = false;
            verdict(status, misc.dynamic)
        }
        Ok(Err(error)) => Err(Failure::from_io(&error)),
        Err(_) => {
            group.armed = false;
            signal_group(process_id as libc::pid_t, libc::SIGTERM);
            tokio::spawn(async move {
                // Whether the leader obeyed SIGTERM or not, what is left of
                // its group is killed (keepalived does the same once the
                // script died of its SIGTERM). The group id stays reserved
                // while any member lives, so it names no other process.
                let _ = tokio::time::timeout(TERMINATION_GRACE, child.wait()).await;
                signal_group(process_id as libc::pid_t, libc::SIGKILL);
                let _ = child.wait().await;
            });
            Err(Failure::Timeout {
                after: misc.timeout,
            })
        }
    }
}

/// keepalived's reading of an exit status.
pub fn verdict(status: std::process::ExitStatus, dynamic: bool) -> Outcome {
    use std::os::unix::process::ExitStatusExt;
    match status.code() {
        Some(0) => Ok(Success::default()),
        Some(code @ 2..=255) if dynamic => Ok(Success {
            weight: Some(code - 2),
            ..Success::default()
        }),
        Some(code) => Err(Failure::ExitStatus(code.to_string())),
        None => Err(Failure::ExitStatus(format!(
            "signal {}",
            status.signal().unwrap_or(0)
        ))),
    }
}

/// Kills the script's process group when an attempt is dropped unfinished.
struct GroupGuard {
    group: libc::pid_t,
    armed: bool,
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        if self.armed {
            signal_group(self.group, libc::SIGKILL);
        }
    }
}

fn signal_group(group: libc::pid_t, signal: libc::c_int) {
    // SAFETY: kill has no memory preconditions; a negative id names the
    // group the script leads (it was started with process_group(0)).
    unsafe {
        libc::kill(-group, signal);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn script(command: &str, dynamic: bool, timeout: Duration) -> MiscSpec {
        let mut script = fulcrum_config::model::Script::new(command, None, None);
        script.runs_as = Some(fulcrum_scripts::account::ours());
        MiscSpec {
            script,
            timeout,
            dynamic,
        }
    }

    const LONG: Duration = Duration::from_secs(20);

    #[tokio::test]
    async fn exit_zero_is_up_and_one_is_down() {
        assert_eq!(
            check(&script("/bin/sh -c 'exit 0'", false, LONG)).await,
            Ok(Success::default())
        );
        let outcome = check(&script("/bin/sh -c 'exit 1'", false, LONG)).await;
        assert_eq!(outcome, Err(Failure::ExitStatus("1".to_owned())));
        assert_eq!(outcome.unwrap_err().to_string(), "script exited with 1");
    }

    #[tokio::test]
    async fn misc_dynamic_maps_exit_codes_to_weights() {
        let outcome = check(&script("/bin/sh -c 'exit 7'", true, LONG)).await;
        assert_eq!(
            outcome,
            Ok(Success {
                weight: Some(5),
                ..Success::default()
            })
        );
        let outcome = check(&script("/bin/sh -c 'exit 2'", true, LONG)).await;
        assert_eq!(
            outcome,
            Ok(Success {
                weight: Some(0),
                ..Success::default()
            })
        );
        let outcome = check(&script("/bin/sh -c 'exit 1'", true, LONG)).await;
        assert_eq!(outcome, Err(Failure::ExitStatus("1".to_owned())));
        // Without misc_dynamic, 7 is a failure.
        let outcome = check(&script("/bin/sh -c 'exit 7'", false, LONG)).await;
        assert_eq!(outcome, Err(Failure::ExitStatus("7".to_owned())));
    }

    #[tokio::test]
    async fn a_missing_program_is_a_failure_with_its_name() {
        let outcome = check(&script("/nonexistent/check", false, LONG)).await;
        assert!(
            matches!(&outcome, Err(Failure::Other(why)) if why.contains("/nonexistent/check")),
            "{outcome:?}"
        );
    }

    fn alive(process_id: i32) -> bool {
        // Zombies count as gone: their group was killed.
        match std::fs::read_to_string(format!("/proc/{process_id}/stat")) {
            Ok(stat) => !stat
                .rsplit(')')
                .next()
                .is_some_and(|rest| rest.trim_start().starts_with('Z')),
            Err(_) => false,
        }
    }

    #[tokio::test]
    async fn a_script_that_never_exits_times_out_and_its_group_is_killed() {
        let directory = std::env::temp_dir().join(format!("nanny-misc-{}", std::process::id()));
        std::fs::create_dir_all(&directory).unwrap();
        let pid_file = directory.join("background.pid");
        // The script starts a background child that ignores SIGTERM: only
        // the group SIGKILL after the grace ends it.
        let command = format!(
            "/bin/sh -c \"(trap '' TERM; exec sleep 300) & echo $! > {}; wait\"",
            pid_file.display()
        );
        let timeout = Duration::from_millis(500);
        let outcome = check(&script(&command, false, timeout)).await;
        assert_eq!(outcome, Err(Failure::Timeout { after: timeout }));
        let background: i32 = std::fs::read_to_string(&pid_file)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        // Bounded wait for the background kill (grace 2 s).
        let mut gone = false;
        for _ in 0..100 {
            if !alive(background) {
                gone = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert!(gone, "the script's background child {background} survived");
        let _ = std::fs::remove_dir_all(&directory);
    }

    #[tokio::test]
    async fn a_cancelled_attempt_kills_the_group() {
        let directory =
            std::env::temp_dir().join(format!("nanny-misc-cancel-{}", std::process::id()));
        std::fs::create_dir_all(&directory).unwrap();
        let pid_file = directory.join("background.pid");
        let command = format!(
            "/bin/sh -c \"sleep 300 & echo $! > {}; wait\"",
            pid_file.display()
        );
        let spec = script(&command, false, LONG);
        let attempt = tokio::spawn(async move { check(&spec).await });
        let mut background = None;
        for _ in 0..100 {
            if let Ok(text) = std::fs::read_to_string(&pid_file)
                && let Ok(process_id) = text.trim().parse::<i32>()
            {
                background = Some(process_id);
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let background = background.expect("the script started");
        attempt.abort();
        let _ = attempt.await;
        let mut gone = false;
        for _ in 0..100 {
            if !alive(background) {
                gone = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert!(gone, "the script's background child {background} survived");
        let _ = std::fs::remove_dir_all(&directory);
    }
}
