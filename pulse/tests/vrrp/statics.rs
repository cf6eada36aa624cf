//! `static_ipaddress`, `static_routes`, `static_rules` (with
//! `default_interface`), an instance's `promote_secondaries` and a virtual
//! address's `no_track`, against keepalived: the same configuration run by
//! keepalived, then by pulse, in the same namespace, and what the kernel
//! holds (or how the daemon answers) compared.

use super::*;

/// What `ip` says of `namespace`'s addresses, routes (every table) and
/// rules.
fn kernel_state(namespace: &Namespace) -> Result<String> {
    let mut text = String::new();
    for arguments in [
        &["-o", "addr", "show"][..],
        &["route", "show", "table", "all"][..],
        &["-6", "route", "show", "table", "all"][..],
        &["rule", "show"][..],
        &["-6", "rule", "show"][..],
    ] {
        let _ = writeln!(text, "# ip {}", arguments.join(" "));
        for line in ip_output(namespace, arguments)?.lines() {
            // Lifetimes counting down differ from one reading to the next.
            if !line.contains("expires") {
                let _ = writeln!(text, "{line}");
            }
        }
    }
    Ok(text)
}

/// The lines of `left` not in `right` and those of `right` not in `left`,
/// for an error.
fn difference(left: &str, right: &str) -> String {
    let only = |one: &str, other: &str| -> Vec<String> {
        one.lines()
            .filter(|line| !other.lines().any(|other| other == *line))
            .map(str::to_owned)
            .collect()
    };
    format!(
        "keepalived only:\n{}\npulse only:\n{}",
        only(left, right).join("\n"),
        only(right, left).join("\n")
    )
}

/// The static blocks, no instance: keepalived's VRRP process runs for
/// them alone. `changed` changes one line of each block (a reload's).
fn static_configuration(segment: &Segment, changed: bool) -> String {
    let subnet = segment.subnet;
    let (address, table, priority) = if changed {
        (51, 101, 1002)
    } else {
        (50, 100, 1001)
    };
    format!(
        "global_defs {{\n    default_interface d1\n}}\n\
         static_ipaddress {{\n    10.{subnet}.5.1/24\n    \
         10.{subnet}.0.{address}/24 dev eth0 label eth0:st\n    \
         10.{subnet}.0.60/24 dev eth0 no_track\n    \
         fd00:{subnet:x}::50/64 dev eth0\n}}\n\
         static_routes {{\n    198.51.100.0/24 via 10.{subnet}.0.3\n    \
         203.0.113.0/24 dev d1 table {table}\n    \
         blackhole 192.0.2.0/24 table 100\n    \
         2001:db8:5::/64 via fd00:{subnet:x}::3 dev eth0\n}}\n\
         static_rules {{\n    from 10.{subnet}.0.50/32 table 100 priority 1000\n    \
         to 198.51.100.0/24 table main priority {priority}\n}}\n"
    )
}

/// What one daemon did with the static blocks.
#[derive(Debug, PartialEq, Eq)]
struct StaticRun {
    /// The kernel's state ([`kernel_state`]) while running, after a reload
    /// that changes a line of each block, and after the stop.
    kernel: [String; 3],
    /// Whether a static address and a `no_track` one deleted by hand are
    /// back a second later.
    restored: [bool; 2],
    /// The address in the log line saying so.
    restoring: String,
}

fn static_run(segment: &Segment, kind: Kind) -> Result<StaticRun> {
    let directory = &segment.directory;
    let name = format!("{kind}-statics");
    let mut daemon = Daemon::start_with(
        kind,
        &segment.a,
        directory,
        &name,
        &static_configuration(segment, false),
    )?;
    let result = (|| -> Result<StaticRun> {
        let first = IpAddr::from([10, segment.subnet, 0, 50]);
        let second = IpAddr::from([10, segment.subnet, 0, 51]);
        wait_for(
            "the static address is added",
            Duration::from_secs(10),
            || segment.a.holds(first),
        )?;
        // The routes and rules follow the addresses at once.
        thread::sleep(Duration::from_millis(500));
        let running = kernel_state(&segment.a)?;
        let untracked = IpAddr::from([10, segment.subnet, 0, 60]);
        segment.a.ip(&format!(
            "addr del {first}/24 dev eth0\naddr del {untracked}/24 dev eth0\n"
        ))?;
        thread::sleep(Duration::from_secs(1));
        let restored = [segment.a.holds(first)?, segment.a.holds(untracked)?];
        // keepalived's line, the address as its logs write it.
        let restoring = daemon
            .log()
            .lines()
            .find_map(|line| {
                line.split_once("Restoring deleted static address ")
                    .map(|(_, address)| address.trim().to_owned())
            })
            .context("no 'Restoring deleted static address' line")?;
        fs::write(
            directory.join(format!("{name}.conf")),
            static_configuration(segment, true),
        )?;
        signal(daemon.child.id() as i32, libc::SIGHUP);
        wait_for(
            "the reload replaces the static address",
            Duration::from_secs(10),
            || Ok(segment.a.holds(second)? && !segment.a.holds(first)?),
        )?;
        thread::sleep(Duration::from_millis(500));
        let reloaded = kernel_state(&segment.a)?;
        daemon.terminate()?;
        let stopped = kernel_state(&segment.a)?;
        Ok(StaticRun {
            kernel: [running, reloaded, stopped],
            restored,
            restoring,
        })
    })();
    result.map_err(|error| error.context(format!("{kind} log:\n{}", daemon.log())))
}

/// Static addresses, routes and rules, keepalived then pulse, alone in
/// `a`: the kernel's addresses, routes and rules the same while running,
/// after a reload changing one line of each block, and after the stop
/// (where they are as before the start); a static address deleted by hand
/// added back, a `no_track` one not.
pub fn static_blocks(segment: &Segment, scenario: &str) -> Result<()> {
    segment.a.ip(&format!(
        "link add d1 type veth peer name d1peer\nlink set d1peer up\nlink set d1 up\n\
         addr add 10.{}.6.1/24 dev d1\n",
        segment.subnet
    ))?;
    let before = kernel_state(&segment.a)?;
    let keepalived = static_run(segment, Kind::Keepalived)?;
    ensure!(
        keepalived.kernel[2] == before,
        "keepalived's stop leaves the kernel otherwise than before:\n{}",
        difference(&before, &keepalived.kernel[2])
    );
    ensure!(
        keepalived.kernel[0] != before,
        "keepalived added nothing (static blocks alone)"
    );
    let pulse = static_run(segment, Kind::Pulse)?;
    ensure!(
        (&keepalived.restored, &keepalived.restoring) == (&pulse.restored, &pulse.restoring),
        "(static address, no_track one) back after their deletion, and the log line: \
         keepalived {:?} {:?}, pulse {:?} {:?}",
        keepalived.restored,
        keepalived.restoring,
        pulse.restored,
        pulse.restoring
    );
    for (moment, (theirs, ours)) in ["running", "after the reload", "after the stop"]
        .into_iter()
        .zip(keepalived.kernel.iter().zip(&pulse.kernel))
    {
        ensure!(
            theirs == ours,
            "{moment}: the kernel differs\n{}\nkeepalived's:\n{theirs}",
            difference(theirs, ours)
        );
    }
    println!(
        "{scenario}: addresses (default_interface, dev, label, IPv6), routes (via, dev, table, \
         blackhole, IPv6) and rules the same as keepalived's running, after a reload and after \
         the stop; deleted by hand, the static address and the no_track one back: {:?} \
         (\"Restoring deleted static address {}\"), as keepalived",
        pulse.restored, pulse.restoring
    );
    Ok(())
}

fn promote_secondaries_setting(namespace: &Namespace) -> Result<String> {
    let output = namespace
        .command("cat")
        .arg("/proc/sys/net/ipv4/conf/eth0/promote_secondaries")
        .output()?;
    ensure!(output.status.success(), "cannot read promote_secondaries");
    Ok(String::from_utf8_lossy(&output.stdout).trim().to_owned())
}

/// eth0's `promote_secondaries` with an instance asking for it: while the
/// daemon runs and after its stop, from 0 and from 1.
fn promote_run(segment: &Segment, kind: Kind) -> Result<Vec<(String, String, String)>> {
    let instance = Instance {
        extra: "    promote_secondaries\n".into(),
        ..Instance::v3(100, format!("{}/24", segment.ipv4(100)))
    };
    let mut seen = Vec::new();
    for initial in ["0", "1"] {
        segment
            .a
            .sysctl("net/ipv4/conf/eth0/promote_secondaries", initial)?;
        let mut daemon = Daemon::start(
            kind,
            &segment.a,
            &segment.directory,
            &format!("{kind}-promote-{initial}"),
            &instance,
        )?;
        let result = (|| -> Result<(String, String, String)> {
            wait_for(
                "the instance becomes master",
                bound(instance.master_down_interval()),
                || segment.a.holds(segment.ipv4(100)),
            )?;
            let running = promote_secondaries_setting(&segment.a)?;
            daemon.terminate()?;
            let stopped = promote_secondaries_setting(&segment.a)?;
            Ok((initial.to_owned(), running, stopped))
        })();
        seen.push(result.map_err(|error| error.context(format!("{kind} log:\n{}", daemon.log())))?);
    }
    Ok(seen)
}

/// `promote_secondaries`: set on the instance's interface while it runs,
/// put back at the stop only where it was 0, as keepalived does.
pub fn promote_secondaries(segment: &Segment, scenario: &str) -> Result<()> {
    let keepalived = promote_run(segment, Kind::Keepalived)?;
    let pulse = promote_run(segment, Kind::Pulse)?;
    ensure!(
        keepalived == pulse,
        "(before, running, after the stop): keepalived {keepalived:?}, pulse {pulse:?}"
    );
    println!("{scenario}: (before, running, after the stop) {pulse:?}, as keepalived");
    Ok(())
}

/// What one daemon does when its virtual addresses are deleted under it
/// as master: first the `no_track` one, then the other. Whether it
/// stepped down each time (a second, third MASTER transition), and
/// whether the `no_track` address is back after the first deletion.
fn no_track_run(segment: &Segment, kind: Kind) -> Result<Vec<(bool, bool)>> {
    let tracked = segment.ipv4(100);
    let untracked = segment.ipv4(101);
    let instance = Instance::v3(
        100,
        format!("{tracked}/24\n        {untracked}/24 no_track"),
    );
    let mut daemon = Daemon::start(
        kind,
        &segment.a,
        &segment.directory,
        &format!("{kind}-no-track"),
        &instance,
    )?;
    let masters = |daemon: &Daemon| daemon.log().matches("(VI_1) Entering MASTER STATE").count();
    let result = (|| -> Result<Vec<(bool, bool)>> {
        wait_for(
            "the instance becomes master",
            bound(instance.master_down_interval()),
            || Ok(segment.a.holds(tracked)? && segment.a.holds(untracked)?),
        )?;
        let mut seen = Vec::new();
        for address in [untracked, tracked] {
            let before = masters(&daemon);
            segment.a.ip(&format!("addr del {address}/24 dev eth0\n"))?;
            // A step down is followed by a takeover after the skew time
            // (the daemon is alone): both well within this.
            thread::sleep(bound(instance.master_down_interval()) + Duration::from_secs(1));
            seen.push((masters(&daemon) > before, segment.a.holds(untracked)?));
        }
        daemon.terminate()?;
        Ok(seen)
    })();
    result.map_err(|error| error.context(format!("{kind} log:\n{}", daemon.log())))
}

/// `no_track`: a deleted `no_track` virtual address leaves the master
/// master (and the address gone); a deleted tracked one makes it step
/// down and take over again, with both addresses.
pub fn no_track(segment: &Segment, scenario: &str) -> Result<()> {
    let keepalived = no_track_run(segment, Kind::Keepalived)?;
    let pulse = no_track_run(segment, Kind::Pulse)?;
    ensure!(
        keepalived == pulse,
        "(stepped down, no_track address present) after deleting the no_track address, then \
         the tracked one: keepalived {keepalived:?}, pulse {pulse:?}"
    );
    ensure!(
        pulse == [(false, false), (true, true)],
        "unexpected for both: {pulse:?}"
    );
    println!("{scenario}: {pulse:?} (stepped down, no_track address present), as keepalived");
    Ok(())
}
