//! `-V` (`--dont-release-vrrp`) against keepalived: each, alone in `a` and
//! master, is stopped with SIGTERM: the virtual address and the virtual
//! route stay, no advert of priority 0 goes out (the client's capture),
//! and pulse's notify script still says STOP (keepalived's does when its
//! parent lets it run).

use super::*;

/// Whether the client's capture (`tcpdump`'s lines) has an advert of
/// priority 0.
fn priority_zero_heard(heard: &Path) -> bool {
    fs::read_to_string(heard)
        .unwrap_or_default()
        .lines()
        .any(|line| line.contains("prio 0,"))
}

pub(super) fn dont_release(segment: &Segment, scenario: &str) -> Result<()> {
    let address = segment.ipv4(100);
    let mut seen = Vec::new();
    for kind in [Kind::Keepalived, Kind::Pulse] {
        let notified = segment.directory.join(format!("{kind}-release.notified"));
        let script = segment.directory.join(format!("{kind}-release.sh"));
        fs::write(
            &script,
            format!("#!/bin/sh\necho \"$@\" >> {}\n", notified.display()),
        )?;
        fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755))?;
        let instance = Instance {
            extra: format!(
                "    notify {}\n    virtual_routes {{\n        10.99.0.0/16 via {}\n    }}\n",
                script.display(),
                segment.ipv4(3)
            ),
            ..Instance::v3(150, format!("{address}/24"))
        };
        let heard = segment.directory.join(format!("{kind}-release.adverts"));
        let mut capture = segment
            .c
            .command("tcpdump")
            .args(["-i", "eth0", "-n", "-l", "ip proto 112"])
            .stdout(fs::File::create(&heard)?)
            .stderr(Stdio::null())
            .spawn()
            .context("cannot run tcpdump")?;
        let mut daemon = Daemon::start_as(
            kind,
            &segment.a,
            &segment.directory,
            &format!("{kind}-release"),
            &instance.configuration(),
            true,
            &["-V"],
        )?;
        let result = (|| -> Result<(bool, bool, bool, String)> {
            wait_for("master", Duration::from_secs(10), || {
                segment.a.holds(address)
            })?;
            daemon.terminate()?;
            thread::sleep(Duration::from_millis(500));
            let routes = segment
                .a
                .command("ip")
                .args(["route", "show", "10.99.0.0/16"])
                .output()?;
            let route_kept = !String::from_utf8_lossy(&routes.stdout).trim().is_empty();
            let address_kept = segment.a.holds(address)?;
            let zero = priority_zero_heard(&heard);
            // The STOP notify script runs as the daemon goes: its line
            // may come a moment after the exit.
            let mut last = String::new();
            let _ = wait_for("the STOP notify", Duration::from_secs(2), || {
                let text = fs::read_to_string(&notified).unwrap_or_default();
                last = text.lines().last().unwrap_or_default().to_owned();
                Ok(last.contains("STOP"))
            });
            Ok((address_kept, route_kept, zero, last))
        })();
        let _ = capture.kill();
        let _ = capture.wait();
        // What the daemon left goes before the next one starts.
        let _ = segment.a.ip(&format!(
            "addr del {address}/24 dev eth0\nroute del 10.99.0.0/16\n"
        ));
        let result =
            result.map_err(|error| error.context(format!("{kind} log:\n{}", daemon.log())))?;
        println!(
            "{scenario}: {kind} -V: address kept {}, route kept {}, priority 0 sent {}, last notify {:?}",
            result.0, result.1, result.2, result.3
        );
        seen.push(result);
    }
    // keepalived starts its STOP notify as it exits, and its parent's end
    // kills it now and then before it writes (seen in one run of three):
    // its line is printed, not held; pulse's is.
    let kept = |seen: &(bool, bool, bool, String)| (seen.0, seen.1, seen.2);
    ensure!(
        kept(&seen[0]) == kept(&seen[1])
            && kept(&seen[0]) == (true, true, false)
            && seen[1].3.ends_with("STOP 150"),
        "keepalived {:?}, pulse {:?}",
        seen[0],
        seen[1]
    );
    Ok(())
}

/// `reload_time_file` against keepalived: each, master alone, is given a
/// new file (a second virtual address) and a reload time three seconds
/// ahead (`YYYY-MM-DD HH:MM:SSZ`): the second address appears at that
/// second, not before, and the time file is gone (no `reload_repeat`).
pub(super) fn reload_time_file(segment: &Segment, scenario: &str) -> Result<()> {
    use std::time::{SystemTime, UNIX_EPOCH};
    let first = segment.ipv4(100);
    let second = segment.ipv4(101);
    for kind in [Kind::Keepalived, Kind::Pulse] {
        let time_file = segment.directory.join(format!("{kind}-reload-time"));
        let _ = fs::remove_file(&time_file);
        let globals = format!(
            "global_defs {{\n    reload_time_file {}\n}}\n",
            time_file.display()
        );
        let before = Instance::v3(150, format!("{first}/24")).configuration();
        let after = Instance::v3(150, format!("{first}/24\n        {second}/24")).configuration();
        let name = format!("{kind}-timed");
        let mut daemon = Daemon::start_with(
            kind,
            &segment.a,
            &segment.directory,
            &name,
            &format!("{globals}{before}"),
        )?;
        let result = (|| -> Result<f64> {
            wait_for("master", Duration::from_secs(10), || segment.a.holds(first))?;
            fs::write(
                segment.directory.join(format!("{name}.conf")),
                format!("{globals}{after}"),
            )?;
            let now = SystemTime::now().duration_since(UNIX_EPOCH)?.as_secs();
            let at = now + 3;
            let line = utc_date_and_time(at);
            fs::write(&time_file, format!("{line}Z\n"))?;
            wait_for("the reload", Duration::from_secs(10), || {
                segment.a.holds(second)
            })?;
            let seen = SystemTime::now().duration_since(UNIX_EPOCH)?.as_secs_f64();
            ensure!(!time_file.exists(), "{kind} left the time file");
            daemon.terminate()?;
            Ok(seen - at as f64)
        })();
        let _ = segment.a.ip(&format!("addr del {second}/24 dev eth0\n"));
        let late =
            result.map_err(|error| error.context(format!("{kind} log:\n{}", daemon.log())))?;
        println!("{scenario}: {kind}: the new address {late:.2} s after the reload time");
        ensure!(
            (0.0..2.5).contains(&late),
            "{kind} reloaded {late:.2} s after the time"
        );
    }
    Ok(())
}

/// `seconds` since the epoch as `YYYY-MM-DD HH:MM:SS` in UTC (the civil
/// date from days, Howard Hinnant's algorithm).
fn utc_date_and_time(seconds: u64) -> String {
    let days = (seconds / 86_400) as i64;
    let time = seconds % 86_400;
    let shifted = days + 719_468;
    let era = shifted.div_euclid(146_097);
    let day_of_era = shifted - era * 146_097;
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_index = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * month_index + 2) / 5 + 1;
    let month = if month_index < 10 {
        month_index + 3
    } else {
        month_index - 9
    };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02}",
        time / 3600,
        time / 60 % 60,
        time % 60
    )
}
