//! `dynamic_interfaces` against keepalived: an instance on `eth9`, which
//! does not exist when the daemon starts. Without the keyword each daemon
//! refuses to run; with it each waits in FAULT (no address held) and,
//! once `eth9` is created, up and addressed, becomes master with the
//! virtual address on it.

use super::*;

pub(super) fn dynamic_interfaces(segment: &Segment, scenario: &str) -> Result<()> {
    let address = IpAddr::from([10, segment.subnet, 9, 100]);
    let instance = Instance::v3(150, format!("{address}/24")).configuration();
    let instance = instance.replace("interface eth0", "interface eth9");
    for kind in [Kind::Keepalived, Kind::Pulse] {
        // Without dynamic_interfaces: no VRRP.
        let mut refused = Daemon::start_with(
            kind,
            &segment.a,
            &segment.directory,
            &format!("{kind}-static"),
            &instance,
        )?;
        let status = wait_exit(&mut refused, Duration::from_secs(10))
            .map_err(|error| error.context(format!("{kind} log:\n{}", refused.log())))?;
        ensure!(!status.success(), "{kind} ran on a missing interface");
        // With it: FAULT, then master once the interface is there.
        let text = format!("global_defs {{\n    dynamic_interfaces\n}}\n{instance}");
        let mut daemon = Daemon::start_with(
            kind,
            &segment.a,
            &segment.directory,
            &format!("{kind}-dynamic"),
            &text,
        )?;
        let result = (|| -> Result<Duration> {
            thread::sleep(Duration::from_secs(2));
            ensure!(daemon.child.try_wait()?.is_none(), "{kind} stopped");
            ensure!(
                !segment.a.holds(address)?,
                "{kind} holds the address without eth9"
            );
            segment.a.ip(&format!(
                "link add eth9 type veth peer name eth9p\n\
                 link set eth9p up\n\
                 link set eth9 up\n\
                 addr add 10.{}.9.1/24 dev eth9\n",
                segment.subnet
            ))?;
            let took = wait_for("master on eth9", Duration::from_secs(10), || {
                segment.a.holds(address)
            })?;
            let on_eth9 = segment
                .a
                .command("ip")
                .args(["-o", "addr", "show", "dev", "eth9"])
                .output()?;
            ensure!(
                String::from_utf8_lossy(&on_eth9.stdout).contains(&format!("{address}/24")),
                "the address is not on eth9"
            );
            daemon.terminate()?;
            Ok(took)
        })();
        let _ = segment.a.ip("link del eth9\n");
        let took =
            result.map_err(|error| error.context(format!("{kind} log:\n{}", daemon.log())))?;
        println!(
            "{scenario}: {kind}: master on eth9 {:.0} ms after it came",
            took.as_secs_f64() * 1000.0
        );
    }
    Ok(())
}

/// Waits for the daemon to exit by itself.
fn wait_exit(daemon: &mut Daemon, bound: Duration) -> Result<std::process::ExitStatus> {
    let started = Instant::now();
    loop {
        if let Some(status) = daemon.child.try_wait()? {
            return Ok(status);
        }
        ensure!(started.elapsed() < bound, "still running after {bound:?}");
        thread::sleep(Duration::from_millis(20));
    }
}

/// `track_src_ip` against keepalived: an instance sending from a
/// configured `mcast_src_ip`, master alone; that address deleted from the
/// interface: without `track_src_ip` both stay master. With it pulse goes
/// to FAULT (the virtual address goes) and comes back with the address, as
/// keepalived's man page says; keepalived 2.2.7 stays master: its test
/// compares the sockaddr it keeps with the deleted address's bytes
/// (keepalived_netlink.c `is_tracking_saddr`), which never match.
pub(super) fn track_source_address(segment: &Segment, scenario: &str) -> Result<()> {
    let address = segment.ipv4(100);
    let source = IpAddr::from([10, segment.subnet, 0, 11]);
    let mut seen = Vec::new();
    for kind in [Kind::Keepalived, Kind::Pulse] {
        for tracked in [true, false] {
            segment.a.ip(&format!("addr add {source}/24 dev eth0\n"))?;
            let instance = Instance {
                extra: format!(
                    "    mcast_src_ip {source}\n{}",
                    if tracked { "    track_src_ip\n" } else { "" }
                ),
                ..Instance::v3(150, format!("{address}/24"))
            };
            let name = format!("{kind}-source-{tracked}");
            let mut daemon = Daemon::start_with(
                kind,
                &segment.a,
                &segment.directory,
                &name,
                &instance.configuration(),
            )?;
            let result = (|| -> Result<(bool, bool)> {
                wait_for("master", Duration::from_secs(10), || {
                    segment.a.holds(address)
                })?;
                segment.a.ip(&format!("addr del {source}/24 dev eth0\n"))?;
                thread::sleep(Duration::from_secs(2));
                let held_without = segment.a.holds(address)?;
                segment.a.ip(&format!("addr add {source}/24 dev eth0\n"))?;
                let back = wait_for("master again", Duration::from_secs(10), || {
                    segment.a.holds(address)
                })
                .is_ok();
                daemon.terminate()?;
                Ok((held_without, back))
            })();
            let _ = segment.a.ip(&format!("addr del {source}/24 dev eth0\n"));
            let result =
                result.map_err(|error| error.context(format!("{kind} log:\n{}", daemon.log())))?;
            println!(
                "{scenario}: {kind}, track_src_ip {tracked}: master without its source {}, master again {}",
                result.0, result.1
            );
            seen.push(result);
        }
    }
    // [keepalived tracked, keepalived not, pulse tracked, pulse not]
    ensure!(
        seen == [(true, true), (true, true), (false, true), (true, true)],
        "keepalived {:?}, pulse {:?}",
        &seen[..2],
        &seen[2..]
    );
    Ok(())
}

/// `net_namespace`: pulse started in the client's namespace with
/// `net_namespace` naming node a's (`ip netns` keeps them) runs there: it
/// becomes master on a's `eth0` and the virtual address is on a, not where
/// it was started. Debian's keepalived 2.2.7 is built without the keyword
/// (it refuses it as unknown), so pulse runs alone.
pub(super) fn net_namespace(segment: &Segment, scenario: &str) -> Result<()> {
    let address = segment.ipv4(100);
    let text = format!(
        "net_namespace {}\n{}",
        segment.a.name(),
        Instance::v3(150, format!("{address}/24")).configuration()
    );
    let mut pulse =
        Daemon::start_with(Kind::Pulse, &segment.c, &segment.directory, "netns", &text)?;
    let result = (|| -> Result<Duration> {
        let took = wait_for("master in a", Duration::from_secs(10), || {
            segment.a.holds(address)
        })?;
        ensure!(
            !segment.c.holds(address)?,
            "the address is where pulse was started"
        );
        pulse.terminate()?;
        ensure!(!segment.a.holds(address)?, "the stop left the address in a");
        Ok(took)
    })();
    let took = result.map_err(|error| error.context(format!("pulse log:\n{}", pulse.log())))?;
    println!(
        "{scenario}: pulse started in {}, master in {} after {:.0} ms",
        segment.c.name(),
        segment.a.name(),
        took.as_secs_f64() * 1000.0
    );
    Ok(())
}
