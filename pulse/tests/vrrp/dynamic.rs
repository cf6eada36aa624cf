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
