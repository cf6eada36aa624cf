//! `use_vmac` against keepalived: both routers of VRID 51 run on a
//! macvlan `vrrp.51` of their `eth0` with the virtual router's MAC
//! address 00:00:5e:00:01:33, and without accept mode. What a peer, a
//! client and an operator see is the same whichever is master: the
//! adverts come from the virtual MAC address, the client's neighbour
//! entry for the virtual address holds it across failovers both ways,
//! and each router's macvlan, the kernel settings on it and its base, and
//! `nft list ruleset` are keepalived's. pulse's stop deletes the macvlan
//! and its table and puts its base's settings back (keepalived 2.2.7
//! leaves them set, a difference docs/pulse.md gives).

use super::*;

const VIRTUAL_MAC: &str = "00:00:5e:00:01:33";

/// An advert's source MAC address and priority, as the client hears
/// them (`tcpdump -e`), the next one from `source`.
fn advert_from(segment: &Segment, source: IpAddr) -> Result<(String, u8)> {
    let output = segment
        .c
        .command("timeout")
        .args(["5", "tcpdump", "-i", "eth0", "-n", "-e", "-l", "-c", "1"])
        .arg(format!("ip proto 112 and src host {source}"))
        .output()
        .context("cannot run tcpdump")?;
    let text = String::from_utf8_lossy(&output.stdout);
    let line = text
        .lines()
        .find(|line| line.contains("VRRP"))
        .with_context(|| format!("no advert from {source} heard: {text}"))?;
    let mac = line
        .split_whitespace()
        .nth(1)
        .context("no source MAC address")?
        .to_owned();
    let priority = line
        .split("prio ")
        .nth(1)
        .and_then(|rest| rest.split(|c: char| !c.is_ascii_digit()).next())
        .and_then(|digits| digits.parse().ok())
        .with_context(|| format!("no priority in {line}"))?;
    Ok((mac, priority))
}

fn read(namespace: &Namespace, path: &str) -> Result<String> {
    let output = namespace.command("cat").arg(path).output()?;
    ensure!(output.status.success(), "cannot read {path}");
    Ok(String::from_utf8_lossy(&output.stdout).trim().to_owned())
}

/// What a router's macvlan and its base look like: the link (kind, mode,
/// address, state, address generation) and the settings keepalived sets.
fn macvlan(namespace: &Namespace) -> Result<Vec<String>> {
    let output = namespace
        .command("ip")
        .args(["-d", "-o", "link", "show", "dev", "vrrp.51"])
        .output()?;
    ensure!(
        output.status.success(),
        "no vrrp.51 in {}",
        namespace.name()
    );
    let text = String::from_utf8_lossy(&output.stdout);
    let mut seen = Vec::new();
    for wanted in [
        "vrrp.51@eth0",
        "UP",
        "link/ether",
        VIRTUAL_MAC,
        "macvlan",
        "mode",
        "private",
        "addrgenmode",
        "none",
    ] {
        seen.push(format!(
            "{wanted}: {}",
            text.split(|c: char| c.is_whitespace() || c == '<' || c == '>' || c == ',')
                .any(|word| word == wanted)
        ));
    }
    for (interface, setting) in [
        ("vrrp.51", "arp_ignore"),
        ("vrrp.51", "accept_local"),
        ("vrrp.51", "rp_filter"),
        ("vrrp.51", "promote_secondaries"),
        ("eth0", "arp_ignore"),
        ("eth0", "arp_filter"),
    ] {
        let value = read(
            namespace,
            &format!("/proc/sys/net/ipv4/conf/{interface}/{setting}"),
        )?;
        seen.push(format!("{interface} {setting} = {value}"));
    }
    let value = read(namespace, "/proc/sys/net/ipv6/conf/vrrp.51/disable_ipv6")?;
    seen.push(format!("vrrp.51 disable_ipv6 = {value}"));
    Ok(seen)
}

fn ruleset(namespace: &Namespace) -> Result<String> {
    let output = namespace
        .command("nft")
        .args(["list", "ruleset"])
        .output()?;
    ensure!(output.status.success(), "nft list ruleset failed");
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

/// The virtual address is on the master's macvlan, not on its `eth0`.
fn on_macvlan(namespace: &Namespace, address: IpAddr) -> Result<bool> {
    let output = namespace
        .command("ip")
        .args(["-o", "addr", "show", "dev", "vrrp.51"])
        .output()?;
    Ok(String::from_utf8_lossy(&output.stdout).contains(&format!("{address}/")))
}

/// The macvlan's state as the client and the peers see it while
/// `master` (host number `source` on the segment) is master at
/// `priority`: the address on its macvlan, its adverts from the virtual
/// MAC address, the client's neighbour entry for the address on it.
fn master_seen(
    segment: &Segment,
    master: &Namespace,
    source: u8,
    priority: u8,
    address: IpAddr,
) -> Result<()> {
    ensure!(
        on_macvlan(master, address)?,
        "the address is not on the master's vrrp.51"
    );
    let (mac, heard) = advert_from(segment, segment.ipv4(source))?;
    ensure!(
        (mac.as_str(), heard) == (VIRTUAL_MAC, priority),
        "the master's adverts come from {mac} with priority {heard}"
    );
    let entry = resolve(&segment.c, address)?;
    ensure!(
        entry == VIRTUAL_MAC,
        "the client's entry for {address} is {entry}"
    );
    Ok(())
}

pub(super) fn use_vmac(segment: &Segment, scenario: &str) -> Result<()> {
    let address = segment.ipv4(100);
    let instance = |priority| Instance {
        extra: "    use_vmac\n    no_accept\n".to_owned(),
        ..Instance::v3(priority, format!("{address}/24"))
    };
    let interval = Duration::from_secs_f64(V3_INTERVAL);
    let directory = &segment.directory;
    let settle = interval * 3;

    // pulse over keepalived; pulse crashes, comes back, stops.
    let mut keepalived =
        Daemon::start(Kind::Keepalived, &segment.b, directory, "b", &instance(100))?;
    let mut pulse = Daemon::start(Kind::Pulse, &segment.a, directory, "a", &instance(200))?;
    let result = (|| -> Result<String> {
        let took = wait_master(
            "pulse master",
            bound(interval),
            settle,
            &segment.a,
            &segment.b,
            address,
        )?;
        report(scenario, "pulse master", took, interval * 3);
        master_seen(segment, &segment.a, 1, 200, address)?;
        // Each router's macvlan is keepalived's, master and backup alike.
        let pulse_link = macvlan(&segment.a)?;
        let keepalived_link = macvlan(&segment.b)?;
        ensure!(
            pulse_link == keepalived_link,
            "the macvlans differ:\npulse {pulse_link:#?}\nkeepalived {keepalived_link:#?}"
        );
        let pulse_rules = ruleset(&segment.a)?;
        ensure!(
            pulse_rules.contains("map vmac_map") && pulse_rules.contains("\"vrrp.51\" : \"eth0\""),
            "pulse's ruleset has no vmac_map for vrrp.51:\n{pulse_rules}"
        );
        // A crash leaves the address on pulse's macvlan: keepalived takes
        // over beside it.
        pulse.crash()?;
        let took = wait_for("keepalived master", bound(interval), || {
            segment.b.holds(address)
        })?;
        report(
            scenario,
            "keepalived master after pulse's crash",
            took,
            interval * 3,
        );
        master_seen(segment, &segment.b, 2, 100, address)?;
        let keepalived_rules = ruleset(&segment.b)?;
        ensure!(
            keepalived_rules == pulse_rules,
            "the rulesets differ:\npulse:\n{pulse_rules}\nkeepalived:\n{keepalived_rules}"
        );
        // Back after a crash: its macvlan and its table are there still.
        pulse = Daemon::start(Kind::Pulse, &segment.a, directory, "a", &instance(200))?;
        wait_master(
            "pulse back",
            bound(interval),
            settle,
            &segment.a,
            &segment.b,
            address,
        )?;
        master_seen(segment, &segment.a, 1, 200, address)?;
        let again = ruleset(&segment.a)?;
        ensure!(
            again == pulse_rules,
            "after the crash pulse's ruleset is\n{again}"
        );
        pulse.terminate()?;
        wait_master(
            "keepalived after pulse's stop",
            bound(interval),
            settle,
            &segment.b,
            &segment.a,
            address,
        )?;
        let link = segment
            .a
            .command("ip")
            .args(["link", "show", "dev", "vrrp.51"])
            .output()?;
        ensure!(!link.status.success(), "pulse's stop left vrrp.51");
        let left = ruleset(&segment.a)?;
        ensure!(left.trim().is_empty(), "pulse's stop left\n{left}");
        keepalived.terminate()?;
        Ok(keepalived_rules)
    })();
    let keepalived_rules = with_logs(result, &pulse, &keepalived)?;

    // keepalived over pulse, pulse started on a base as it was before any
    // macvlan; keepalived crashes; pulse's stop puts the base back.
    for setting in ["arp_ignore", "arp_filter"] {
        segment
            .a
            .sysctl(&format!("net/ipv4/conf/eth0/{setting}"), "0")?;
    }
    let mut keepalived = Daemon::start(
        Kind::Keepalived,
        &segment.b,
        directory,
        "b2",
        &instance(200),
    )?;
    let mut pulse = Daemon::start(Kind::Pulse, &segment.a, directory, "a2", &instance(100))?;
    let result = (|| -> Result<()> {
        wait_master(
            "keepalived master",
            bound(interval),
            settle,
            &segment.b,
            &segment.a,
            address,
        )?;
        master_seen(segment, &segment.b, 2, 200, address)?;
        ensure!(
            macvlan(&segment.a)? == macvlan(&segment.b)?,
            "pulse's macvlan as backup is not keepalived's"
        );
        keepalived.crash()?;
        let took = wait_for("pulse master", bound(interval), || segment.a.holds(address))?;
        report(
            scenario,
            "pulse master after keepalived's crash",
            took,
            interval * 3,
        );
        master_seen(segment, &segment.a, 1, 100, address)?;
        let pulse_rules = ruleset(&segment.a)?;
        ensure!(
            pulse_rules == keepalived_rules,
            "the rulesets differ:\npulse:\n{pulse_rules}\nkeepalived:\n{keepalived_rules}"
        );
        pulse.terminate()?;
        for setting in ["arp_ignore", "arp_filter"] {
            let value = read(
                &segment.a,
                &format!("/proc/sys/net/ipv4/conf/eth0/{setting}"),
            )?;
            ensure!(
                value == "0",
                "pulse's stop left eth0's {setting} at {value}"
            );
        }
        Ok(())
    })();
    with_logs(result, &pulse, &keepalived)
}
