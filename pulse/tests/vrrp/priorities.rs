//! `vrrp_priority` and `vrrp_no_swap` against keepalived: each, alone in
//! `a` with the same configuration, runs its VRRP process at nice -5 with
//! its memory locked (`/proc/PID/stat`'s nineteenth field, `VmLck` in
//! `/proc/PID/status`), and its notify script at the nice value the
//! daemon started with, as keepalived's children put it back before a
//! script.

use super::*;

/// The nice value and the locked memory of process `pid`.
fn nice_and_locked(pid: i32) -> Result<(i64, u64)> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat"))?;
    // After the command's closing parenthesis: state is field 3, nice 19.
    let after = stat.rsplit_once(')').context("no ')' in stat")?.1;
    let nice = after
        .split_whitespace()
        .nth(16)
        .context("no nice field")?
        .parse()?;
    let status = fs::read_to_string(format!("/proc/{pid}/status"))?;
    let locked = status
        .lines()
        .find_map(|line| line.strip_prefix("VmLck:"))
        .and_then(|value| value.split_whitespace().next())
        .context("no VmLck")?
        .parse()?;
    Ok((nice, locked))
}

pub(super) fn process_priorities(segment: &Segment, scenario: &str) -> Result<()> {
    let address = segment.ipv4(100);
    let mut seen = Vec::new();
    for kind in [Kind::Keepalived, Kind::Pulse] {
        let niced = segment.directory.join(format!("{kind}.nice"));
        let script = segment.directory.join(format!("{kind}-nice.sh"));
        fs::write(&script, format!("#!/bin/sh\nnice > {}\n", niced.display()))?;
        fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755))?;
        let instance = Instance {
            extra: format!("    notify_master {}\n", script.display()),
            ..Instance::v3(150, format!("{address}/24"))
        };
        let text = format!(
            "global_defs {{\n    vrrp_priority -5\n    vrrp_no_swap\n}}\n{}",
            instance.configuration()
        );
        let mut daemon = Daemon::start_with(
            kind,
            &segment.a,
            &segment.directory,
            &format!("{kind}-nice"),
            &text,
        )?;
        let result = (|| -> Result<(i64, u64, String)> {
            wait_for("master", Duration::from_secs(10), || {
                segment.a.holds(address)
            })?;
            let (nice, locked) = nice_and_locked(daemon.vrrp_pid()?)?;
            let mut script_nice = String::new();
            wait_for("the notify script", Duration::from_secs(5), || {
                script_nice = fs::read_to_string(&niced).unwrap_or_default();
                Ok(!script_nice.is_empty())
            })?;
            daemon.terminate()?;
            Ok((nice, locked, script_nice.trim().to_owned()))
        })();
        let (nice, locked, script_nice) =
            result.map_err(|error| error.context(format!("{kind} log:\n{}", daemon.log())))?;
        println!(
            "{scenario}: {kind}: nice {nice}, {locked} kB locked, its script at nice {script_nice}"
        );
        seen.push((nice, locked > 0, script_nice));
    }
    // The daemons start at this test's nice value (0, or what `nice` gave
    // the test run).
    let (started_at, _) = nice_and_locked(std::process::id() as i32)?;
    ensure!(
        seen[0] == seen[1] && seen[0] == (-5, true, started_at.to_string()),
        "keepalived {:?}, pulse {:?}",
        seen[0],
        seen[1]
    );
    Ok(())
}

/// `umask` and `-u` against keepalived: with keepalived's default mask
/// (0177), the configuration's `umask 022`, and `-u 077` beside it (the
/// command line's wins), the file a notify script makes has the same mode
/// (scripts take the daemon's mask), and so has the pid file (rw-r--r--
/// whatever the mask).
pub(super) fn file_mask(segment: &Segment, scenario: &str) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let address = segment.ipv4(100);
    let cases: [(&str, &str, &[&str]); 3] = [
        ("default", "", &[]),
        ("configured", "global_defs {\n    umask 022\n}\n", &[]),
        (
            "command line",
            "global_defs {\n    umask 022\n}\n",
            &["-u", "077"],
        ),
    ];
    for (case, globals, arguments) in cases {
        let mut modes = Vec::new();
        for kind in [Kind::Keepalived, Kind::Pulse] {
            let name = format!("{kind}-umask-{}", case.replace(' ', "-"));
            let pid_file = segment.directory.join(format!("{name}.pid"));
            let made = segment.directory.join(format!("{name}.made"));
            let script = segment.directory.join(format!("{name}.sh"));
            fs::write(&script, format!("#!/bin/sh\ntouch {}\n", made.display()))?;
            fs::set_permissions(&script, PermissionsExt::from_mode(0o755))?;
            let instance = Instance {
                extra: format!("    notify_master {}\n", script.display()),
                ..Instance::v3(150, format!("{address}/24"))
            };
            let mut daemon = Daemon::start_as(
                kind,
                &segment.a,
                &segment.directory,
                &name,
                &format!("{globals}{}", instance.configuration()),
                true,
                arguments,
            )?;
            let result = (|| -> Result<(u32, u32)> {
                wait_for("the notify script's file", Duration::from_secs(10), || {
                    Ok(fs::metadata(&made).is_ok())
                })?;
                let mode = |path: &Path| -> Result<u32> {
                    Ok(fs::metadata(path)?.permissions().mode() & 0o777)
                };
                Ok((mode(&made)?, mode(&pid_file)?))
            })();
            let _ = daemon.terminate();
            let result =
                result.map_err(|error| error.context(format!("{kind} log:\n{}", daemon.log())))?;
            modes.push(result);
        }
        println!(
            "{scenario}: {case}: the script's file and the pid file: keepalived {:o} {:o}, pulse {:o} {:o}",
            modes[0].0, modes[0].1, modes[1].0, modes[1].1
        );
        ensure!(
            modes[0] == modes[1],
            "{case}: keepalived {:?}, pulse {:?}",
            modes[0],
            modes[1]
        );
    }
    Ok(())
}
