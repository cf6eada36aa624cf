//! `-V` (`--dont-release-vrrp`) against keepalived: each, alone in `a` and
//! master, is stopped with SIGTERM: the virtual address and the virtual
//! route stay, no advert of priority 0 goes out (the client's capture),
//! and the notify script still says STOP.

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
            let notified = fs::read_to_string(&notified).unwrap_or_default();
            let last = notified.lines().last().unwrap_or_default().to_owned();
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
    ensure!(
        seen[0] == seen[1]
            && seen[0].0
            && seen[0].1
            && !seen[0].2
            && seen[0].3.ends_with("STOP 150"),
        "keepalived {:?}, pulse {:?}",
        seen[0],
        seen[1]
    );
    Ok(())
}
