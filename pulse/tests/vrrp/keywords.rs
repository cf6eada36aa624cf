//! The keywords of issue 24 against keepalived: the same configuration run
//! by each, what a peer or a client sees compared. `unicast_fault_no_peer`
//! (no adverts, no address, a FAULT notify), `vrrp_startup_delay` (the
//! takeover held back), `garp_group` and `garp_extra_if` (gratuitous ARPs
//! counted and timed per interface by tcpdump on the bridge's ports),
//! `vrrp_min_garp` (one gratuitous ARP, no second round) and
//! `notify_deleted` (the notify lines of a reload that removes
//! instances). Times are printed; only generous bounds are asserted.

use std::collections::BTreeMap;

use super::*;

/// tcpdump on one of the bridge's ports, writing what it sees with
/// absolute times (`-tt`).
struct Capture {
    child: Child,
    output: PathBuf,
}

impl Capture {
    /// Starts tcpdump on `interface` of `namespace` with `filter`, and
    /// waits until it listens.
    fn start(
        namespace: &Namespace,
        interface: &str,
        filter: &str,
        output: PathBuf,
    ) -> Result<Self> {
        let errors = output.with_extension("err");
        let child = namespace
            .command("tcpdump")
            .args(["-i", interface, "-n", "-tt", "-l", "-U"])
            .arg(filter)
            .stdin(Stdio::null())
            .stdout(fs::File::create(&output)?)
            .stderr(fs::File::create(&errors)?)
            .spawn()
            .context("cannot start tcpdump")?;
        let capture = Capture { child, output };
        wait_for("tcpdump listens", Duration::from_secs(10), || {
            Ok(fs::read_to_string(&errors)?.contains("listening on"))
        })?;
        Ok(capture)
    }

    /// Stops tcpdump; the lines it wrote, each with its time in seconds.
    fn finish(mut self) -> Result<Vec<(f64, String)>> {
        signal(self.child.id() as i32, libc::SIGINT);
        self.child.wait()?;
        Ok(fs::read_to_string(&self.output)?
            .lines()
            .filter_map(|line| {
                let (time, rest) = line.split_once(' ')?;
                Some((time.parse().ok()?, rest.to_owned()))
            })
            .collect())
    }
}

impl Drop for Capture {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Whether tcpdump is missing, said once for `scenario`, which then
/// passes without its captures.
fn without_tcpdump(scenario: &str) -> bool {
    let missing = !labkit::installed("tcpdump");
    if missing {
        println!("{scenario}: tcpdump is not installed: skipped");
    }
    missing
}

/// The kinds in the order the scenarios run them, each alone in `a`.
const BOTH: [Kind; 2] = [Kind::Keepalived, Kind::Pulse];

/// A notify script appending its arguments to a file in the scenario's
/// directory: the script's path and the file's.
fn notify_script(segment: &Segment, name: &str) -> Result<(PathBuf, PathBuf)> {
    let notified = segment.directory.join(format!("{name}.notified"));
    let script = segment.directory.join(format!("{name}.sh"));
    fs::write(
        &script,
        format!("#!/bin/sh\necho \"$@\" >> {}\n", notified.display()),
    )?;
    fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755))?;
    Ok((script, notified))
}

/// `unicast_fault_no_peer` without a peer: each of keepalived and pulse,
/// alone, stays in FAULT (its notify script says FAULT), sends no advert
/// and takes no address; without the keyword the same instance falls back
/// to multicast and becomes master.
pub fn unicast_fault_no_peer(segment: &Segment, scenario: &str) -> Result<()> {
    if without_tcpdump(scenario) {
        return Ok(());
    }
    let address = segment.ipv4(100);
    let mut notifications = Vec::new();
    for kind in BOTH {
        let (script, notified) = notify_script(segment, &format!("{kind}-no-peer"))?;
        let instance = |fault: bool| Instance {
            extra: format!(
                "    unicast_src_ip {}\n{}    notify {}\n",
                segment.ipv4(1),
                if fault {
                    "    unicast_fault_no_peer\n"
                } else {
                    ""
                },
                script.display()
            ),
            ..Instance::v3(150, format!("{address}/24"))
        };
        let adverts = Capture::start(
            &segment.bridge,
            "va",
            "ip proto 112",
            segment.directory.join(format!("{kind}-no-peer.adverts")),
        )?;
        let mut daemon = Daemon::start(
            kind,
            &segment.a,
            &segment.directory,
            &format!("{kind}-no-peer"),
            &instance(true),
        )?;
        let result = (|| -> Result<()> {
            wait_for(
                "the notify script says FAULT",
                Duration::from_secs(10),
                || {
                    Ok(fs::read_to_string(&notified)
                        .unwrap_or_default()
                        .contains("INSTANCE VI_1 FAULT 150"))
                },
            )?;
            // Well past the master down interval (about 1 s).
            thread::sleep(Duration::from_secs(3));
            ensure!(!segment.a.holds(address)?, "{kind} took the address");
            let log = daemon.log();
            ensure!(
                log.contains("(VI_1) Cannot use unicast without any peers - going to fault state"),
                "{kind} did not say why it is in FAULT"
            );
            Ok(())
        })();
        let result = result.and_then(|()| daemon.terminate());
        let seen = adverts.finish()?;
        let lines = fs::read_to_string(&notified).unwrap_or_default();
        result.map_err(|error| error.context(format!("{kind} log:\n{}", daemon.log())))?;
        ensure!(seen.is_empty(), "{kind} sent adverts in FAULT: {seen:?}");
        println!(
            "{scenario}: {kind} with unicast_fault_no_peer and no peer: FAULT, no advert in 3 s, \
             notify: {}",
            lines.trim().replace('\n', " / ")
        );
        notifications.push(lines);
        // The same without the keyword: keepalived's deprecated fallback
        // to multicast.
        let mut daemon = Daemon::start(
            kind,
            &segment.a,
            &segment.directory,
            &format!("{kind}-multicast"),
            &instance(false),
        )?;
        let took = wait_for("master over multicast", Duration::from_secs(10), || {
            segment.a.holds(address)
        })
        .map_err(|error| error.context(format!("{kind} log:\n{}", daemon.log())))?;
        daemon.terminate()?;
        println!(
            "{scenario}: {kind} without the keyword: master over multicast in {:.0} ms",
            took.as_secs_f64() * 1000.0
        );
    }
    ensure!(
        notifications[0] == notifications[1],
        "keepalived's notify script got {:?}, pulse's {:?}",
        notifications[0],
        notifications[1]
    );
    Ok(())
}

/// `vrrp_startup_delay 3` on the higher priority, started with the lower:
/// the lower becomes master, and the higher takes over only after the
/// delay and its master down interval, both ways round. The lower's adverts
/// during the delay push the higher's timer on (keepalived's
/// vrrp_init_instance_sands, modelled by pulse's machine), so the takeover
/// comes well after 3 s + 1 s: both times are printed.
pub fn startup_delay(segment: &Segment, scenario: &str) -> Result<()> {
    let address = segment.ipv4(100);
    let delay = 3.0;
    let instance = |priority| Instance::v3(priority, format!("{address}/24"));
    for higher_kind in [Kind::Pulse, Kind::Keepalived] {
        let (higher_host, lower_host, lower_kind) = match higher_kind {
            Kind::Pulse => (&segment.a, &segment.b, Kind::Keepalived),
            Kind::Keepalived => (&segment.b, &segment.a, Kind::Pulse),
        };
        let delayed = format!(
            "global_defs {{\n    vrrp_startup_delay {delay}\n}}\n{}",
            instance(150).configuration()
        );
        let started = Instant::now();
        let lower = Daemon::start(
            lower_kind,
            lower_host,
            &segment.directory,
            &format!("{lower_kind}-lower"),
            &instance(100),
        )?;
        let higher = Daemon::start_with(
            higher_kind,
            higher_host,
            &segment.directory,
            &format!("{higher_kind}-delayed"),
            &delayed,
        )?;
        let (pulse, keepalived) = match higher_kind {
            Kind::Pulse => (&higher, &lower),
            Kind::Keepalived => (&lower, &higher),
        };
        let lower_master = with_logs(
            wait_for(
                "the lower priority becomes master",
                Duration::from_secs(10),
                || lower_host.holds(address),
            ),
            pulse,
            keepalived,
        )?;
        let before = started.elapsed();
        let higher_master = before
            + with_logs(
                wait_master(
                    "the delayed higher priority takes over",
                    Duration::from_secs(40),
                    Duration::from_secs(1),
                    higher_host,
                    lower_host,
                    address,
                ),
                pulse,
                keepalived,
            )?;
        let log = higher.log();
        with_logs(
            (|| {
                ensure!(
                    log.contains("Delaying startup for 3 seconds"),
                    "{higher_kind} did not say it delays its start"
                );
                // Held back at least by the delay: the machine's load can
                // only make it later.
                ensure!(
                    higher_master >= Duration::from_secs_f64(delay),
                    "{higher_kind} took over {higher_master:?} after its start, within its \
                     startup delay"
                );
                Ok(())
            })(),
            pulse,
            keepalived,
        )?;
        println!(
            "{scenario}: {higher_kind} (150, vrrp_startup_delay {delay}) with {lower_kind} (100): \
             {lower_kind} master after {:.0} ms, {higher_kind} after {:.0} ms",
            lower_master.as_secs_f64() * 1000.0,
            higher_master.as_secs_f64() * 1000.0,
        );
        let (mut higher, mut lower) = (higher, lower);
        higher.terminate()?;
        lower.terminate()?;
        wait_for("the address is gone", Duration::from_secs(10), || {
            Ok(!segment.a.holds(address)? && !segment.b.holds(address)?)
        })?;
    }
    Ok(())
}

/// The gratuitous ARPs (`who-has X tell X`) the capture saw, by address,
/// each at its time after the first of them all, up to `window`.
type Announcements = BTreeMap<(&'static str, IpAddr), Vec<f64>>;

/// Runs `configuration` with `kind` alone in `a`, captures on the bridge's
/// ports of a's eth0 (`va`) and eth1 (`w1`, if `second_link`) from before
/// its start, and returns the gratuitous ARPs of the `window` after the
/// first one, and the keepalived.data it wrote (SIGUSR1) before it
/// stopped.
fn gratuitous_arps(
    segment: &Segment,
    kind: Kind,
    name: &str,
    configuration: &str,
    address: IpAddr,
    second_link: bool,
    window: Duration,
) -> Result<(Announcements, String)> {
    let mut ports = vec![("eth0", "va")];
    if second_link {
        ports.push(("eth1", "w1"));
    }
    let mut captures = Vec::new();
    for (interface, port) in &ports {
        captures.push((
            *interface,
            Capture::start(
                &segment.bridge,
                port,
                "arp",
                segment.directory.join(format!("{name}-{interface}.arp")),
            )?,
        ));
    }
    let mut daemon = Daemon::start_with(kind, &segment.a, &segment.directory, name, configuration)?;
    let data = segment.directory.join("keepalived.data");
    let _ = fs::remove_file(&data);
    let result = wait_for("master", Duration::from_secs(10), || {
        segment.a.holds(address)
    })
    .map(|_| thread::sleep(window + Duration::from_secs(1)))
    .and_then(|()| {
        signal(daemon.vrrp_pid()?, libc::SIGUSR1);
        wait_for("keepalived.data", Duration::from_secs(5), || {
            Ok(fs::read_to_string(&data).is_ok_and(|text| text.contains("------< Interfaces")))
        })?;
        // keepalived writes it in place: its end may still come.
        thread::sleep(Duration::from_millis(300));
        let text = fs::read_to_string(&data)?;
        daemon.terminate()?;
        Ok(text)
    });
    let data = result.map_err(|error| error.context(format!("{kind} log:\n{}", daemon.log())))?;
    let mut seen: Vec<(&'static str, IpAddr, f64)> = Vec::new();
    for (interface, capture) in captures {
        for (time, line) in capture.finish()? {
            // "ARP, Request who-has 10.1.0.100 (ff:ff:ff:ff:ff:ff) tell
            // 10.1.0.100, length 28"
            let mut words = line.split_whitespace();
            let (Some(_), Some(target)) = (words.find(|word| *word == "who-has"), words.next())
            else {
                continue;
            };
            let (Some(_), Some(sender)) = (words.find(|word| *word == "tell"), words.next()) else {
                continue;
            };
            let sender = sender.trim_end_matches(',');
            if target == sender
                && let Ok(announced) = target.parse()
            {
                seen.push((interface, announced, time));
            }
        }
    }
    let first = seen
        .iter()
        .map(|(_, _, time)| *time)
        .fold(f64::INFINITY, f64::min);
    let mut announcements = Announcements::new();
    for (interface, announced, time) in seen {
        if time - first < window.as_secs_f64() {
            announcements
                .entry((interface, announced))
                .or_default()
                .push(time - first);
        }
    }
    for times in announcements.values_mut() {
        times.sort_by(f64::total_cmp);
    }
    Ok((announcements, data))
}

/// What keepalived.data says of the paces and of `garp_extra_if`: its
/// `Gratuitous ARP delays` section and every line about gratuitous ARPs,
/// the times left out.
fn garp_lines(data: &str) -> Vec<String> {
    let mut lines = Vec::new();
    let mut in_delays = false;
    for line in data.lines() {
        if line.starts_with("------<") {
            in_delays = line.contains("Gratuitous ARP delays") || line.contains("GARP delay group");
        }
        if in_delays || line.contains("Gratuitous") {
            let line = match line.find(" next time ").or(line.find(" such secondary = ")) {
                Some(at) => format!("{} T", &line[..at]),
                None => line.to_owned(),
            };
            lines.push(line);
        }
    }
    lines
}

fn print_announcements(scenario: &str, kind: Kind, announcements: &Announcements) {
    for ((interface, address), times) in announcements {
        println!(
            "{scenario}: {kind}: {address} on {interface}: {} at {}",
            times.len(),
            times
                .iter()
                .map(|time| format!("{time:.2}"))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
}

/// A `garp_group` pacing eth0 at 0.5 s and `garp_extra_if all 2` for an
/// address on eth1, with three messages a round: keepalived sends each
/// eth0 address at most twice a round, 0.5 s apart (its one pending mark
/// per address), eth1's at once, and one more on eth1 with the first
/// advert after every 2 s; pulse the same. The counts on eth0 are
/// compared exactly, eth1's within one (the extra messages fall on advert
/// ticks), and every time is printed.
pub fn garp_group(segment: &Segment, scenario: &str) -> Result<()> {
    if without_tcpdump(scenario) {
        return Ok(());
    }
    segment.add_second_link()?;
    let address = segment.ipv4(100);
    // The global NA interval gives eth1 a pace of its own, for IPv6 only
    // (keepalived's set_default_garp_delay): its ARPs are not paced.
    let configuration = format!(
        "global_defs {{
    vrrp_gna_interval 1
}}
garp_group {{
    garp_interval 0.5
    interface eth0
}}
vrrp_instance VI_1 {{
    interface eth0
    virtual_router_id 51
    version 3
    priority 150
    advert_int 1
    garp_master_repeat 3
    garp_extra_if all 2
    virtual_ipaddress {{
        {address}/24
        {}/24
        10.{}.1.100/24 dev eth1
    }}
}}
",
        segment.ipv4(101),
        segment.subnet
    );
    let window = Duration::from_secs_f64(7.5);
    let mut seen = Vec::new();
    let mut dumped = Vec::new();
    for kind in BOTH {
        let (announcements, data) = gratuitous_arps(
            segment,
            kind,
            &format!("{kind}-garp-group"),
            &configuration,
            address,
            true,
            window,
        )?;
        print_announcements(scenario, kind, &announcements);
        seen.push(announcements);
        dumped.push(garp_lines(&data));
    }
    ensure!(
        dumped[0] == dumped[1],
        "keepalived.data on gratuitous ARPs: keepalived's\n{}\npulse's\n{}",
        dumped[0].join("\n"),
        dumped[1].join("\n")
    );
    println!(
        "{scenario}: keepalived.data's lines on gratuitous ARPs are keepalived's ({} lines)",
        dumped[0].len()
    );
    let (keepalived, pulse) = (&seen[0], &seen[1]);
    let count = |announcements: &Announcements, interface, address| {
        announcements.get(&(interface, address)).map_or(0, Vec::len)
    };
    for address in [address, segment.ipv4(101)] {
        ensure!(
            count(keepalived, "eth0", address) == count(pulse, "eth0", address),
            "{address} on eth0: keepalived sent {}, pulse {}",
            count(keepalived, "eth0", address),
            count(pulse, "eth0", address)
        );
    }
    // The pace: never two eth0 messages within 0.4 s, either daemon.
    for (kind, announcements) in BOTH.iter().zip(&seen) {
        let mut eth0: Vec<f64> = announcements
            .iter()
            .filter(|((interface, _), _)| *interface == "eth0")
            .flat_map(|(_, times)| times.iter().copied())
            .collect();
        eth0.sort_by(f64::total_cmp);
        ensure!(
            eth0.windows(2).all(|pair| pair[1] - pair[0] > 0.4),
            "{kind} sent eth0's messages closer than the garp_group's interval: {eth0:?}"
        );
    }
    let extra: IpAddr = format!("10.{}.1.100", segment.subnet).parse()?;
    let (keepalived_extra, pulse_extra) = (
        count(keepalived, "eth1", extra),
        count(pulse, "eth1", extra),
    );
    ensure!(
        keepalived_extra.abs_diff(pulse_extra) <= 1 && pulse_extra > 6,
        "{extra} on eth1: keepalived sent {keepalived_extra}, pulse {pulse_extra}"
    );
    Ok(())
}

/// `vrrp_min_garp`: one gratuitous ARP on becoming master and no second
/// round 5 s later, keepalived's and pulse's alike (without it, 5 and 5).
pub fn min_garp(segment: &Segment, scenario: &str) -> Result<()> {
    if without_tcpdump(scenario) {
        return Ok(());
    }
    let address = segment.ipv4(100);
    let configuration = format!(
        "global_defs {{\n    vrrp_min_garp\n}}\n{}",
        Instance::v3(150, format!("{address}/24")).configuration()
    );
    for kind in BOTH {
        let (announcements, _) = gratuitous_arps(
            segment,
            kind,
            &format!("{kind}-min-garp"),
            &configuration,
            address,
            false,
            Duration::from_secs(7),
        )?;
        print_announcements(scenario, kind, &announcements);
        let times = announcements
            .get(&("eth0", address))
            .cloned()
            .unwrap_or_default();
        ensure!(
            times.len() == 1,
            "{kind} with vrrp_min_garp sent {} gratuitous ARPs in 7 s: {times:?}",
            times.len()
        );
    }
    Ok(())
}

/// `notify_deleted`: three instances master alone; a reload keeps only
/// the first. keepalived notifies the one with `notify_deleted` as
/// DELETED (and runs its script) and the other as FAULT (its
/// `notify_fault` script does not run), with no STOP; pulse's notify
/// lines are the same.
pub fn notify_deleted(segment: &Segment, scenario: &str) -> Result<()> {
    let addresses = [segment.ipv4(100), segment.ipv4(101), segment.ipv4(102)];
    let mut notifications = Vec::new();
    for kind in BOTH {
        let (script, notified) = notify_script(segment, &format!("{kind}-deleted"))?;
        // notify_deleted's and notify_fault's own scripts, saying which.
        let own_script = |word: &str| -> Result<PathBuf> {
            let path = segment.directory.join(format!("{kind}-{word}-only.sh"));
            fs::write(
                &path,
                format!("#!/bin/sh\necho {word} >> {}\n", notified.display()),
            )?;
            fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o755))?;
            Ok(path)
        };
        let deleted_script = own_script("deleted")?;
        let fault_script = own_script("fault")?;
        let instance = |number: u8, extra: &str| {
            format!(
                "vrrp_instance VI_{number} {{
    interface eth0
    virtual_router_id {}
    version 3
    priority 150
    advert_int {V3_INTERVAL}
    notify {}
{extra}    virtual_ipaddress {{
        {}/24
    }}
}}
",
                50 + number,
                script.display(),
                addresses[usize::from(number) - 1]
            )
        };
        let first = instance(1, "");
        let all = format!(
            "{first}{}{}",
            instance(
                2,
                &format!("    notify_deleted {}\n", deleted_script.display())
            ),
            // keepalived looks the state's own script up while the state
            // is DELETED: notify_fault does not run.
            instance(3, &format!("    notify_fault {}\n", fault_script.display()))
        );
        let name = format!("{kind}-notify-deleted");
        let mut daemon = Daemon::start_with(kind, &segment.a, &segment.directory, &name, &all)?;
        let result = (|| -> Result<String> {
            wait_for("master of the three", Duration::from_secs(10), || {
                Ok(addresses
                    .iter()
                    .all(|address| segment.a.holds(*address).unwrap_or(false)))
            })?;
            // Every notify of becoming master has come.
            wait_for("the notify scripts ran", Duration::from_secs(5), || {
                Ok(fs::read_to_string(&notified)
                    .unwrap_or_default()
                    .matches("MASTER")
                    .count()
                    == 3)
            })?;
            let before = fs::read_to_string(&notified)?;
            fs::write(segment.directory.join(format!("{name}.conf")), &first)?;
            signal(daemon.child.id() as i32, libc::SIGHUP);
            wait_for(
                "the removed instances' addresses go",
                Duration::from_secs(10),
                || Ok(!segment.a.holds(addresses[1])? && !segment.a.holds(addresses[2])?),
            )?;
            // The scripts run without being waited for.
            thread::sleep(Duration::from_secs(2));
            ensure!(segment.a.holds(addresses[0])?, "{kind} lost VI_1's address");
            let after = fs::read_to_string(&notified)?;
            Ok(after[before.len()..].to_owned())
        })();
        let result = result.and_then(|lines| daemon.terminate().map(|()| lines));
        let lines =
            result.map_err(|error| error.context(format!("{kind} log:\n{}", daemon.log())))?;
        let mut lines: Vec<String> = lines
            .lines()
            .map(|line| line.replace(&segment.directory.display().to_string(), ""))
            .collect();
        lines.sort();
        println!(
            "{scenario}: {kind}: the reload removing VI_2 (notify_deleted) and VI_3 notified: {}",
            lines.join(" / ")
        );
        notifications.push(lines);
    }
    ensure!(
        notifications[0] == notifications[1],
        "keepalived's notify lines {:?}, pulse's {:?}",
        notifications[0],
        notifications[1]
    );
    Ok(())
}
