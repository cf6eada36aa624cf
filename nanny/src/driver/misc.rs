//! MISC_CHECK: runs a script; its exit status is the verdict.
//!
//! As keepalived (check_misc.c): the command line is split into words
//! (quotes group words) and executed without a shell, in a process group of
//! its own; exit 0 is up; with `misc_dynamic`, exit 2 to 255 is up too,
//! with weight `status - 2` (so 0 to 253), and 1 is down; anything else is
//! down. On timeout keepalived signals the whole group (SIGTERM, then
//! SIGKILL); nanny does the same in the background, so the check reports
//! its timeout at once and the kill never delays another check. An attempt
//! that is cancelled (shutdown) kills the group too.

use std::process::Stdio;
use std::time::Duration;

use tokio::process::Command;

use crate::outcome::{Failure, Outcome, Success};
use crate::spec::MiscSpec;

/// How long a timed-out script gets between SIGTERM and SIGKILL.
const TERMINATION_GRACE: Duration = Duration::from_secs(2);

pub async fn check(misc: &MiscSpec) -> Outcome {
    let words = split_command(&misc.command)
        .map_err(|why| Failure::Other(format!("misc_path {:?}: {why}", misc.command)))?;
    let Some((program, arguments)) = words.split_first() else {
        return Err(Failure::Other("empty misc_path".to_owned()));
    };
    let mut command = script_command(
        program,
        arguments,
        misc.user.as_deref(),
        misc.group.as_deref(),
    )?;
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

/// A script's process as keepalived starts one (notify.c, check_misc.c):
/// no shell, no standard streams, a process group of its own (a signal
/// aimed at the daemon's group does not reach it; a timeout can kill all it
/// started), as `user` (with its group, or `group`) when given.
pub fn script_command(
    program: &str,
    arguments: &[String],
    user: Option<&str>,
    group: Option<&str>,
) -> Result<Command, Failure> {
    let mut command = Command::new(program);
    command
        .args(arguments)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0);
    if let Some(user) = user {
        let (uid, gid) = lookup_user(user, group)?;
        // SAFETY: geteuid has no preconditions.
        let effective = unsafe { libc::geteuid() };
        if effective == 0 {
            command.uid(uid).gid(gid);
        } else if effective != uid {
            return Err(Failure::Other(format!(
                "cannot run {program} as {user}: this process is not root"
            )));
        }
    }
    Ok(command)
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

/// The user and group ids a script runs as: the user's primary group
/// unless `group` names another.
pub fn lookup_user(user: &str, group: Option<&str>) -> Result<(u32, u32), Failure> {
    let unknown = |what: &str, name: &str| Failure::Other(format!("unknown {what} {name:?}"));
    let user_name = std::ffi::CString::new(user).map_err(|_| unknown("user", user))?;
    // SAFETY: getpwnam returns a pointer to static storage or null; it is
    // read at once, before any other call that could overwrite it. The
    // scripts are started from one task at a time per attempt, and nanny
    // makes no other getpw* calls.
    let (uid, default_gid) = unsafe {
        let entry = libc::getpwnam(user_name.as_ptr());
        if entry.is_null() {
            return Err(unknown("user", user));
        }
        ((*entry).pw_uid, (*entry).pw_gid)
    };
    let gid = match group {
        None => default_gid,
        Some(group) => {
            let group_name = std::ffi::CString::new(group).map_err(|_| unknown("group", group))?;
            // SAFETY: as above, for getgrnam.
            unsafe {
                let entry = libc::getgrnam(group_name.as_ptr());
                if entry.is_null() {
                    return Err(unknown("group", group));
                }
                (*entry).gr_gid
            }
        }
    };
    Ok((uid, gid))
}

/// Splits a command line into words: blanks separate, single and double
/// quotes group (keepalived's script parameter splitting).
pub fn split_command(line: &str) -> Result<Vec<String>, &'static str> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut quote: Option<char> = None;
    for character in line.chars() {
        match quote {
            Some(open) if character == open => quote = None,
            Some(_) => word.push(character),
            None if character == '"' || character == '\'' => {
                quote = Some(character);
                in_word = true;
            }
            None if character.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            None => {
                word.push(character);
                in_word = true;
            }
        }
    }
    if quote.is_some() {
        return Err("unclosed quote");
    }
    if in_word {
        words.push(word);
    }
    Ok(words)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn script(command: &str, dynamic: bool, timeout: Duration) -> MiscSpec {
        MiscSpec {
            command: command.to_owned(),
            user: None,
            group: None,
            timeout,
            dynamic,
        }
    }

    const LONG: Duration = Duration::from_secs(20);

    #[test]
    fn command_lines_split_like_keepalived() {
        assert_eq!(
            split_command("/bin/sh -c 'exit 3'  \"a b\"c").unwrap(),
            ["/bin/sh", "-c", "exit 3", "a bc"]
        );
        assert_eq!(split_command("''").unwrap(), [""]);
        assert!(split_command("'open").is_err());
    }

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
