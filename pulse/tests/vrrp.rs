//! VRRP interop with keepalived 2.2, in network namespaces on this host
//! (VRRP needs no IPVS): each scenario gets a segment of its own, a bridge
//! in a namespace with three hosts on it, pulse in `a`, keepalived in `b`
//! and a client in `c`. The scenarios run in parallel threads.
//!
//! Times are measured and printed, never asserted: membership is checked
//! with generous bounds only (the machine is shared). Needs root and
//! keepalived; without them the test says so and passes.

use std::fmt::Write as _;
use std::fs;
use std::net::{IpAddr, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
use labkit::Namespace;

#[path = "vrrp/dynamic.rs"]
mod dynamic;
#[path = "vrrp/keywords.rs"]
mod keywords;
#[path = "vrrp/notify_fifo.rs"]
mod notify_fifo;
#[path = "vrrp/observability.rs"]
mod observability;
#[path = "vrrp/priorities.rs"]
mod priorities;
#[path = "vrrp/release.rs"]
mod release;
#[path = "vrrp/smtp.rs"]
mod smtp;
#[path = "vrrp/statics.rs"]
mod statics;
#[path = "vrrp/track_bfd.rs"]
mod track_bfd;
#[path = "vrrp/track_process.rs"]
mod track_process;
#[path = "vrrp/vmac.rs"]
mod vmac;

const PULSE: &str = env!("CARGO_BIN_EXE_pulse");

/// The version 3 interval of the interop scenarios. 0.1 s works on an idle
/// machine, but a shared one (builds on two processors) delays processes
/// by a few hundred milliseconds at times, and three intervals is all a
/// backup waits: at 0.3 s both routers of a pair stay in step.
const V3_INTERVAL: f64 = 0.3;

/// How one end of the pair is configured.
#[derive(Debug, Clone)]
struct Instance {
    version: u8,
    /// Seconds, as the configuration writes it.
    interval: f64,
    priority: u8,
    nopreempt: bool,
    password: Option<&'static str>,
    /// `(unicast_src_ip, unicast_peer)`.
    unicast: Option<(IpAddr, IpAddr)>,
    virtual_address: String,
    /// More lines for the instance block.
    extra: String,
}

impl Instance {
    /// A VRRPv3 multicast instance at [`V3_INTERVAL`], preempting, without
    /// authentication nor further lines: what most scenarios start from.
    fn v3(priority: u8, virtual_address: impl Into<String>) -> Self {
        Self {
            version: 3,
            interval: V3_INTERVAL,
            priority,
            nopreempt: false,
            password: None,
            unicast: None,
            virtual_address: virtual_address.into(),
            extra: String::new(),
        }
    }

    fn configuration(&self) -> String {
        let mut text = String::from("vrrp_instance VI_1 {\n    interface eth0\n");
        let _ = writeln!(text, "    virtual_router_id 51");
        let _ = writeln!(text, "    version {}", self.version);
        let _ = writeln!(text, "    priority {}", self.priority);
        let _ = writeln!(text, "    advert_int {}", self.interval);
        if self.nopreempt {
            text.push_str("    state BACKUP\n    nopreempt\n");
        }
        if let Some(password) = self.password {
            let _ = writeln!(
                text,
                "    authentication {{\n        auth_type PASS\n        auth_pass {password}\n    }}"
            );
        }
        if let Some((source, peer)) = self.unicast {
            let _ = writeln!(
                text,
                "    unicast_src_ip {source}\n    unicast_peer {{\n        {peer}\n    }}"
            );
        }
        text.push_str(&self.extra);
        let _ = writeln!(
            text,
            "    virtual_ipaddress {{\n        {}\n    }}\n}}",
            self.virtual_address
        );
        text
    }

    /// RFC 3768 / 5798 as keepalived computes it: three intervals plus the
    /// skew time.
    fn master_down_interval(&self) -> Duration {
        let interval = Duration::from_secs_f64(self.interval);
        let weight = f64::from(256 - u32::from(self.priority)) / 256.0;
        let skew = match self.version {
            2 => Duration::from_secs_f64(weight),
            _ => interval.mul_f64(weight),
        };
        interval * 3 + skew
    }

    fn skew_time(&self) -> Duration {
        self.master_down_interval() - Duration::from_secs_f64(self.interval) * 3
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Pulse,
    Keepalived,
}

impl std::fmt::Display for Kind {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str(match self {
            Kind::Pulse => "pulse",
            Kind::Keepalived => "keepalived",
        })
    }
}

/// `result`, with both daemons' logs when it is an error.
fn with_logs<T>(result: Result<T>, pulse: &Daemon, keepalived: &Daemon) -> Result<T> {
    result.map_err(|error| {
        error.context(format!(
            "pulse log:\n{}\nkeepalived log:\n{}",
            pulse.log(),
            keepalived.log()
        ))
    })
}

/// A running pulse or keepalived.
struct Daemon {
    kind: Kind,
    child: Child,
    /// keepalived's VRRP child writes its pid here (`-r`).
    vrrp_pid_file: PathBuf,
    log: PathBuf,
}

impl Daemon {
    fn start(
        kind: Kind,
        namespace: &Namespace,
        directory: &Path,
        name: &str,
        instance: &Instance,
    ) -> Result<Daemon> {
        Daemon::start_with(kind, namespace, directory, name, &instance.configuration())
    }

    /// With a whole configuration file, VRRP alone (`-P`).
    fn start_with(
        kind: Kind,
        namespace: &Namespace,
        directory: &Path,
        name: &str,
        text: &str,
    ) -> Result<Daemon> {
        Daemon::start_as(kind, namespace, directory, name, text, true, &[])
    }

    /// With a whole configuration file; `-P` only if `vrrp_only`, else
    /// the parts the file calls for, as keepalived chooses its children;
    /// `arguments` added to the command line.
    fn start_as(
        kind: Kind,
        namespace: &Namespace,
        directory: &Path,
        name: &str,
        text: &str,
        vrrp_only: bool,
        arguments: &[&str],
    ) -> Result<Daemon> {
        let configuration = directory.join(format!("{name}.conf"));
        fs::write(&configuration, text)?;
        let pid_file = directory.join(format!("{name}.pid"));
        let vrrp_pid_file = directory.join(format!("{name}-vrrp.pid"));
        let log = directory.join(format!("{name}.log"));
        let _ = fs::remove_file(&vrrp_pid_file);
        let mut command = namespace.command(match kind {
            Kind::Pulse => PULSE,
            Kind::Keepalived => "keepalived",
        });
        command.args(["-n", "-l"]);
        if vrrp_only {
            command.arg("-P");
        }
        command.arg("-f").arg(&configuration);
        command.arg("-p").arg(&pid_file);
        command.args(arguments);
        // keepalived.stats (SIGUSR2) goes to $TMPDIR: the scenario's own.
        command.env("TMPDIR", directory);
        if kind == Kind::Keepalived {
            // Without --dont-respawn the parent would restart a VRRP child
            // killed with -9, which is the crash under test.
            command.arg("-r").arg(&vrrp_pid_file).arg("--dont-respawn");
            // Its checker child too, where the file has virtual servers.
            command
                .arg("-c")
                .arg(directory.join(format!("{name}-checkers.pid")));
        }
        let output = fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log)?;
        let child = command
            .stdin(Stdio::null())
            .stdout(output.try_clone()?)
            .stderr(output)
            .spawn()
            .with_context(|| format!("cannot start {kind}"))?;
        Ok(Daemon {
            kind,
            child,
            vrrp_pid_file,
            log,
        })
    }

    /// The process that speaks VRRP: keepalived's VRRP child.
    fn vrrp_pid(&self) -> Result<i32> {
        match self.kind {
            Kind::Pulse => Ok(self.child.id() as i32),
            Kind::Keepalived => {
                let started = Instant::now();
                loop {
                    if let Ok(text) = fs::read_to_string(&self.vrrp_pid_file)
                        && let Ok(pid) = text.trim().parse()
                    {
                        return Ok(pid);
                    }
                    ensure!(
                        started.elapsed() < Duration::from_secs(10),
                        "keepalived wrote no VRRP pid file"
                    );
                    thread::sleep(Duration::from_millis(20));
                }
            }
        }
    }

    /// kill -9 of the VRRP process: a crash, no priority 0 advert.
    fn crash(&mut self) -> Result<()> {
        let pid = self.vrrp_pid()?;
        signal(pid, libc::SIGKILL);
        if self.kind == Kind::Keepalived {
            // The parent exits once its child is gone (--dont-respawn).
            let _ = self.child.wait();
        } else {
            self.child.wait()?;
        }
        Ok(())
    }

    /// SIGTERM: a graceful stop, without waiting for the exit.
    fn request_stop(&self) {
        signal(self.child.id() as i32, libc::SIGTERM);
    }

    /// Waits for the exit after [`Daemon::request_stop`].
    fn wait_stopped(&mut self) -> Result<()> {
        let status = self.child.wait()?;
        ensure!(status.success(), "{} stopped with {status}", self.kind);
        Ok(())
    }

    /// SIGTERM and the exit.
    fn terminate(&mut self) -> Result<()> {
        self.request_stop();
        self.wait_stopped()
    }

    fn log(&self) -> String {
        fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            if self.kind == Kind::Keepalived
                && let Ok(text) = fs::read_to_string(&self.vrrp_pid_file)
                && let Ok(pid) = text.trim().parse()
            {
                signal(pid, libc::SIGKILL);
            }
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// pulse with `higher` in node a and keepalived with `lower` in node b:
/// both started, then `steps` (which stop them); the daemons' logs are
/// added to an error.
fn pulse_over_keepalived(
    segment: &Segment,
    higher: &Instance,
    lower: &Instance,
    steps: impl FnOnce(&mut Daemon, &mut Daemon) -> Result<()>,
) -> Result<()> {
    let directory = &segment.directory;
    let mut keepalived = Daemon::start(Kind::Keepalived, &segment.b, directory, "lower", lower)?;
    let mut pulse = Daemon::start(Kind::Pulse, &segment.a, directory, "higher", higher)?;
    let result = steps(&mut pulse, &mut keepalived);
    with_logs(result, &pulse, &keepalived)
}

fn signal(pid: i32, signal: i32) {
    unsafe {
        libc::kill(pid, signal);
    }
}

/// A bridge with hosts `a`, `b` and `c` on it (each with `eth0`), IPv4
/// 10.`subnet`.0.1-3/24 and IPv6 fd00:`subnet`::1-3/64 (`subnet` in
/// hexadecimal there).
struct Segment {
    a: Namespace,
    b: Namespace,
    c: Namespace,
    bridge: Namespace,
    subnet: u8,
    directory: PathBuf,
}

impl Segment {
    fn build(prefix: &str, subnet: u8) -> Result<Segment> {
        let bridge = Namespace::create(&format!("{prefix}br"))?;
        bridge.ip("link add br0 type bridge mcast_snooping 0\nlink set br0 up\n")?;
        let mut hosts = Vec::new();
        for (number, host) in ["a", "b", "c"].into_iter().enumerate() {
            let namespace = Namespace::create(&format!("{prefix}{host}"))?;
            // Duplicate address detection would hold the link-local
            // addresses (the IPv6 adverts' source) for a second or two.
            namespace.sysctl("net/ipv6/conf/default/accept_dad", "0")?;
            namespace.sysctl("net/ipv6/conf/all/accept_dad", "0")?;
            bridge.ip(&format!(
                "link add name v{host} type veth peer name eth0 netns {}\n\
                 link set v{host} master br0 up\n",
                namespace.name()
            ))?;
            namespace.ip(&format!(
                "addr add 10.{subnet}.0.{}/24 dev eth0\n\
                 addr add fd00:{subnet:x}::{}/64 dev eth0 nodad\n\
                 link set eth0 up\n",
                number + 1,
                number + 1
            ))?;
            hosts.push(namespace);
        }
        let c = hosts.pop().expect("three hosts");
        let b = hosts.pop().expect("three hosts");
        let a = hosts.pop().expect("three hosts");
        let directory = std::env::temp_dir().join(format!("pulse-vrrp-{prefix}"));
        let _ = fs::remove_dir_all(&directory);
        fs::create_dir_all(&directory)?;
        Ok(Segment {
            a,
            b,
            c,
            bridge,
            subnet,
            directory,
        })
    }

    fn ipv4(&self, host: u8) -> IpAddr {
        IpAddr::from([10, self.subnet, 0, host])
    }

    /// A second segment beside the first: bridge `br1`, `a` and `b` on it
    /// by their `eth1`, 10.`subnet`.1.1-2/24. Either end's link can go
    /// down without the other's losing its carrier.
    fn add_second_link(&self) -> Result<()> {
        self.bridge
            .ip("link add br1 type bridge mcast_snooping 0\nlink set br1 up\n")?;
        for (number, host) in [(1, &self.a), (2, &self.b)] {
            self.bridge.ip(&format!(
                "link add name w{number} type veth peer name eth1 netns {}\n\
                 link set w{number} master br1 up\n",
                host.name()
            ))?;
            host.ip(&format!(
                "addr add 10.{}.1.{number}/24 dev eth1\nlink set eth1 up\n",
                self.subnet
            ))?;
        }
        Ok(())
    }

    fn ipv6(&self, host: u16) -> IpAddr {
        IpAddr::from([0xfd00, u16::from(self.subnet), 0, 0, 0, 0, 0, host])
    }
}

fn hardware_address(namespace: &Namespace) -> Result<String> {
    let output = Command::new("ip")
        .args(["-n", namespace.name(), "-o", "link", "show", "dev", "eth0"])
        .output()?;
    let text = String::from_utf8_lossy(&output.stdout);
    let mut words = text.split_whitespace();
    words
        .find(|word| *word == "link/ether")
        .and_then(|_| words.next())
        .map(str::to_owned)
        .context("eth0 has no Ethernet address")
}

/// The link-layer address `namespace` has for `address`, if any.
fn neighbour(namespace: &Namespace, address: IpAddr) -> Result<Option<String>> {
    let output = Command::new("ip")
        .args([
            "-n",
            namespace.name(),
            "neigh",
            "show",
            &address.to_string(),
        ])
        .output()?;
    let text = String::from_utf8_lossy(&output.stdout);
    let mut words = text.split_whitespace();
    Ok(words
        .find(|word| *word == "lladdr")
        .and_then(|_| words.next())
        .map(str::to_owned))
}

/// Polls `condition` every 10 ms until it holds; the time it took, or an
/// error after `bound`.
fn wait_for(
    what: &str,
    bound: Duration,
    mut condition: impl FnMut() -> Result<bool>,
) -> Result<Duration> {
    let started = Instant::now();
    loop {
        if condition()? {
            return Ok(started.elapsed());
        }
        if started.elapsed() > bound {
            bail!("{what}: not within {bound:?}");
        }
        thread::sleep(Duration::from_millis(10));
    }
}

/// Waits until exactly `master` of the two holds `address`, and goes on
/// doing so for `settle` (two routers that both took over at start, each
/// before hearing the other, sort it out within an advert interval); the
/// time until the settled state began.
fn wait_master(
    what: &str,
    bound: Duration,
    settle: Duration,
    master: &Namespace,
    backup: &Namespace,
    address: IpAddr,
) -> Result<Duration> {
    wait_masters(what, bound, settle, master, backup, &[address])
}

/// [`wait_master`] for every one of `addresses` at once.
fn wait_masters(
    what: &str,
    bound: Duration,
    settle: Duration,
    master: &Namespace,
    backup: &Namespace,
    addresses: &[IpAddr],
) -> Result<Duration> {
    let started = Instant::now();
    let mut since: Option<Instant> = None;
    loop {
        let now = Instant::now();
        let mut settled = true;
        for address in addresses {
            settled &= master.holds(*address)? && !backup.holds(*address)?;
        }
        if settled {
            let since = *since.get_or_insert(now);
            if now - since >= settle {
                return Ok(since - started);
            }
        } else {
            since = None;
        }
        if started.elapsed() > bound + settle {
            bail!("{what}: not within {bound:?}");
        }
        thread::sleep(Duration::from_millis(10));
    }
}

/// The client sends to `address` until its neighbour cache has it, and
/// returns the link-layer address.
fn resolve(client: &Namespace, address: IpAddr) -> Result<String> {
    let mut found = None;
    wait_for(
        "the client resolves the virtual address",
        Duration::from_secs(10),
        || {
            client.run(|| -> Result<()> {
                let socket = match address {
                    IpAddr::V4(_) => UdpSocket::bind("0.0.0.0:0")?,
                    IpAddr::V6(_) => UdpSocket::bind("[::]:0")?,
                };
                socket.send_to(b"ping", (address, 9))?;
                Ok(())
            })??;
            thread::sleep(Duration::from_millis(20));
            found = neighbour(client, address)?;
            Ok(found.is_some())
        },
    )?;
    Ok(found.expect("found"))
}

/// Prints a measured takeover next to what the RFC allows.
fn report(scenario: &str, what: &str, took: Duration, expected: Duration) {
    println!(
        "{scenario}: {what} in {:.0} ms (expected {:.0} ms + detection)",
        took.as_secs_f64() * 1000.0,
        expected.as_secs_f64() * 1000.0
    );
}

/// Generous: the machine is shared with builds.
fn bound(interval: Duration) -> Duration {
    interval * 4 + Duration::from_secs(3)
}

/// The higher priority becomes master and holds the address; kill -9
/// moves it to the other (and the client's neighbour entry with it, by
/// gratuitous ARP or neighbour advertisement); the higher one coming back
/// preempts; its graceful stop moves the address within the skew time.
fn failover(
    segment: &Segment,
    scenario: &str,
    higher_kind: Kind,
    higher: Instance,
    lower: Instance,
) -> Result<()> {
    let lower_kind = match higher_kind {
        Kind::Pulse => Kind::Keepalived,
        Kind::Keepalived => Kind::Pulse,
    };
    // pulse always runs in a, keepalived in b.
    let (higher_host, lower_host) = match higher_kind {
        Kind::Pulse => (&segment.a, &segment.b),
        Kind::Keepalived => (&segment.b, &segment.a),
    };
    let address: IpAddr = higher
        .virtual_address
        .split('/')
        .next()
        .expect("an address")
        .parse()?;
    let directory = &segment.directory;
    let settle = Duration::from_secs_f64(higher.interval.max(lower.interval)) * 3;
    let mut lower_daemon = Daemon::start(lower_kind, lower_host, directory, "lower", &lower)?;
    let mut higher_daemon = Daemon::start(higher_kind, higher_host, directory, "higher", &higher)?;
    let result = (|| -> Result<()> {
        wait_master(
            "the higher priority becomes master",
            bound(lower.master_down_interval()),
            settle,
            higher_host,
            lower_host,
            address,
        )?;
        let higher_mac = hardware_address(higher_host)?;
        let lower_mac = hardware_address(lower_host)?;
        let resolved = resolve(&segment.c, address)?;
        ensure!(
            resolved == higher_mac,
            "the client resolved {address} to {resolved}, not the master's {higher_mac}"
        );

        // Crash of the master.
        let killed = Instant::now();
        higher_daemon.crash()?;
        wait_for(
            "kill -9: the backup takes over",
            bound(lower.master_down_interval()),
            || lower_host.holds(address),
        )?;
        report(
            scenario,
            &format!("kill -9 of {higher_kind}: {lower_kind} took over"),
            killed.elapsed(),
            lower.master_down_interval(),
        );
        let announced = wait_for(
            "the client's neighbour entry follows the new master",
            Duration::from_secs(5),
            || Ok(neighbour(&segment.c, address)?.as_deref() == Some(lower_mac.as_str())),
        )?;
        println!(
            "{scenario}: the client's entry for {address} moved to the new master's {lower_mac} \
             {:.0} ms after the takeover",
            announced.as_secs_f64() * 1000.0
        );
        // The crashed one left its address behind, as a crashed keepalived
        // does; a rebooted machine would have none.
        higher_host.ip(&format!("addr del {} dev eth0\n", higher.virtual_address))?;

        // It comes back and preempts.
        higher_daemon = Daemon::start(higher_kind, higher_host, directory, "higher", &higher)?;
        let took = wait_master(
            "the higher priority preempts on return",
            bound(higher.master_down_interval()),
            settle,
            higher_host,
            lower_host,
            address,
        )?;
        report(
            scenario,
            &format!("{higher_kind} back: preempted"),
            took,
            higher.master_down_interval(),
        );

        // A graceful stop: priority 0, the backup takes over after its
        // skew time.
        // keepalived takes about a second to exit after its priority 0
        // advert: the takeover is timed from the signal, not the exit.
        let stopped = Instant::now();
        higher_daemon.request_stop();
        wait_for(
            "graceful stop: the backup takes over",
            bound(Duration::from_secs_f64(lower.interval)),
            || lower_host.holds(address),
        )?;
        report(
            scenario,
            &format!("SIGTERM of {higher_kind}: {lower_kind} took over"),
            stopped.elapsed(),
            lower.skew_time(),
        );
        higher_daemon.wait_stopped()?;
        ensure!(
            !higher_host.holds(address)?,
            "{higher_kind} stopped but left {address}"
        );
        lower_daemon.terminate()?;
        ensure!(
            !lower_host.holds(address)?,
            "{lower_kind} stopped but left {address}"
        );
        Ok(())
    })();
    result.map_err(|error| {
        error.context(format!(
            "higher ({higher_kind}) log:\n{}\nlower ({lower_kind}) log:\n{}",
            higher_daemon.log(),
            lower_daemon.log()
        ))
    })
}

/// nopreempt on both: whichever is master keeps the address when a higher
/// priority starts; the higher one takes over only when the master goes.
fn no_preemption(segment: &Segment, scenario: &str, first_kind: Kind) -> Result<()> {
    let second_kind = match first_kind {
        Kind::Pulse => Kind::Keepalived,
        Kind::Keepalived => Kind::Pulse,
    };
    let (first_host, second_host) = match first_kind {
        Kind::Pulse => (&segment.a, &segment.b),
        Kind::Keepalived => (&segment.b, &segment.a),
    };
    let address = segment.ipv4(100);
    let instance = |priority| Instance {
        nopreempt: true,
        ..Instance::v3(priority, format!("{address}/24"))
    };
    let first = instance(100);
    let second = instance(200);
    let directory = &segment.directory;
    let mut first_daemon = Daemon::start(first_kind, first_host, directory, "first", &first)?;
    let result = (|| -> Result<()> {
        wait_for(
            "the only router becomes master",
            bound(first.master_down_interval()),
            || first_host.holds(address),
        )?;
        let mut second_daemon =
            Daemon::start(second_kind, second_host, directory, "second", &second)?;
        let result = (|| -> Result<()> {
            // Five master down intervals of the newcomer: it would have
            // preempted within the first.
            let watch = second.master_down_interval() * 5;
            let started = Instant::now();
            while started.elapsed() < watch {
                ensure!(
                    first_host.holds(address)? && !second_host.holds(address)?,
                    "{second_kind} with a higher priority and nopreempt took {address} from \
                     {first_kind}"
                );
                thread::sleep(Duration::from_millis(50));
            }
            let stopped = Instant::now();
            first_daemon.request_stop();
            wait_for(
                "the higher priority takes over when the master stops",
                bound(Duration::from_secs_f64(second.interval)),
                || second_host.holds(address),
            )?;
            report(
                scenario,
                &format!("nopreempt, SIGTERM of {first_kind}: {second_kind} took over"),
                stopped.elapsed(),
                second.skew_time(),
            );
            first_daemon.wait_stopped()?;
            second_daemon.terminate()?;
            Ok(())
        })();
        result
            .map_err(|error| error.context(format!("{second_kind} log:\n{}", second_daemon.log())))
    })();
    result.map_err(|error| error.context(format!("{first_kind} log:\n{}", first_daemon.log())))
}

/// pulse's interface loses its link: pulse enters FAULT and gives the
/// address up, keepalived takes over; the link back, pulse preempts again.
fn link_failure(segment: &Segment, scenario: &str) -> Result<()> {
    let address = segment.ipv4(100);
    let instance = |priority| Instance::v3(priority, format!("{address}/24"));
    let directory = &segment.directory;
    // keepalived's `notify`: INSTANCE, the name, the state, the priority.
    let notified = directory.join("notified");
    let script = directory.join("notify.sh");
    fs::write(
        &script,
        format!("#!/bin/sh\necho \"$@\" >> {}\n", notified.display()),
    )?;
    fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755))?;
    let higher = Instance {
        extra: format!("    notify {}\n", script.display()),
        ..instance(150)
    };
    let lower = instance(100);
    let settle = Duration::from_secs_f64(higher.interval) * 3;
    pulse_over_keepalived(segment, &higher, &lower, |pulse, keepalived| {
        wait_master(
            "pulse becomes master",
            bound(lower.master_down_interval()),
            settle,
            &segment.a,
            &segment.b,
            address,
        )?;
        let down = Instant::now();
        segment.a.ip("link set eth0 down\n")?;
        wait_for("pulse gives the address up", Duration::from_secs(5), || {
            Ok(!segment.a.holds(address)?)
        })?;
        let took = wait_for(
            "keepalived takes over",
            bound(lower.master_down_interval()),
            || segment.b.holds(address),
        )?;
        report(
            scenario,
            "pulse's link down: keepalived took over",
            down.elapsed().max(took),
            lower.master_down_interval(),
        );
        ensure!(
            pulse.log().contains("(VI_1) Entering FAULT STATE"),
            "pulse did not log its FAULT state"
        );
        segment.a.ip("link set eth0 up\n")?;
        let took = wait_master(
            "pulse preempts once its link is back",
            bound(higher.master_down_interval()) + Duration::from_secs(2),
            settle,
            &segment.a,
            &segment.b,
            address,
        )?;
        report(
            scenario,
            "pulse's link back: preempted",
            took,
            higher.master_down_interval(),
        );
        pulse.terminate()?;
        keepalived.terminate()?;
        // The scripts run in the background: the last one may still be
        // on its way.
        let expected = [
            "INSTANCE VI_1 BACKUP 150",
            "INSTANCE VI_1 MASTER 150",
            "INSTANCE VI_1 FAULT 150",
            "INSTANCE VI_1 BACKUP 150",
            "INSTANCE VI_1 MASTER 150",
            "INSTANCE VI_1 STOP 150",
        ];
        wait_for("the notify script ran", Duration::from_secs(5), || {
            Ok(fs::read_to_string(&notified)
                .unwrap_or_default()
                .lines()
                .count()
                >= expected.len())
        })?;
        let lines = fs::read_to_string(&notified)?;
        ensure!(
            lines.lines().collect::<Vec<_>>() == expected,
            "notify was called with:\n{lines}"
        );
        Ok(())
    })
}

/// The client sends adverts that would take the master's place were they
/// trusted (a higher priority): with a TTL of 254, a bad checksum, version
/// 2 to a version 3 instance, another address list, and another VRID. pulse
/// keeps the address. Then the same advert done right: pulse steps down,
/// which shows the sender works.
fn hostile_adverts(segment: &Segment, scenario: &str) -> Result<()> {
    use pulse::vrrp::{Addresses, Kind as AdvertKind, Repr};
    use socket2::{Domain, Protocol, Socket, Type};

    let address = segment.ipv4(100);
    let IpAddr::V4(address_v4) = address else {
        unreachable!()
    };
    let instance = Instance {
        interval: 0.1,
        ..Instance::v3(100, format!("{address}/24"))
    };
    let mut pulse = Daemon::start(
        Kind::Pulse,
        &segment.a,
        &segment.directory,
        "pulse",
        &instance,
    )?;
    let result = (|| -> Result<()> {
        wait_for(
            "pulse becomes master",
            bound(instance.master_down_interval()),
            || segment.a.holds(address),
        )?;
        let source = segment.ipv4(3);
        let group: IpAddr = "224.0.0.18".parse()?;
        let advert = |virtual_router_id, kind, addresses| Repr {
            virtual_router_id,
            priority: 200,
            kind,
            addresses,
        };
        let ours = || Addresses::Ipv4(vec![address_v4]);
        let version3 = AdvertKind::Version3 {
            max_advert_interval: 10,
        };
        let valid = advert(51, version3, ours()).to_bytes(&source, &group);
        let mut bad_checksum = valid.clone();
        bad_checksum[6] ^= 0xff;
        let hostile: Vec<(&str, Vec<u8>, u32)> = vec![
            ("TTL 254", valid.clone(), 254),
            ("bad checksum", bad_checksum, 255),
            (
                "version 2",
                advert(
                    51,
                    AdvertKind::Version2 {
                        advert_interval: 1,
                        authentication_type: 0,
                        authentication_data: [0; 8],
                    },
                    ours(),
                )
                .to_bytes(&source, &group),
                255,
            ),
            (
                "another address",
                advert(51, version3, Addresses::Ipv4(vec!["192.0.2.1".parse()?]))
                    .to_bytes(&source, &group),
                255,
            ),
            (
                "another VRID",
                advert(52, version3, ours()).to_bytes(&source, &group),
                255,
            ),
        ];
        let send = |bytes: &[u8], ttl: u32| -> Result<()> {
            segment.c.run(|| -> Result<()> {
                let socket = Socket::new(Domain::IPV4, Type::RAW, Some(Protocol::from(112)))?;
                // No multicast route in the namespace: the interface is
                // named.
                socket.bind_device(Some(b"eth0"))?;
                socket.set_multicast_ttl_v4(ttl)?;
                socket.send_to(bytes, &std::net::SocketAddr::new(group, 0).into())?;
                Ok(())
            })?
        };
        // Ten master down intervals of hostile adverts, five of each per
        // interval.
        let started = Instant::now();
        while started.elapsed() < instance.master_down_interval() * 10 {
            for (_, bytes, ttl) in &hostile {
                send(bytes, *ttl)?;
            }
            ensure!(
                segment.a.holds(address)?,
                "pulse gave up its address to one of: {}",
                hostile
                    .iter()
                    .map(|(what, _, _)| *what)
                    .collect::<Vec<_>>()
                    .join(", ")
            );
            thread::sleep(Duration::from_millis(20));
        }
        // SIGUSR2: keepalived's statistics file counts the drops it has a
        // line for.
        let statistics = segment.directory.join("keepalived.stats");
        signal(pulse.child.id() as i32, libc::SIGUSR2);
        // Whole once its last line, priority 0 adverts sent, is there.
        let mut text = String::new();
        wait_for(
            "pulse writes its statistics",
            Duration::from_secs(5),
            || {
                text = fs::read_to_string(&statistics).unwrap_or_default();
                Ok(text
                    .split_once("  Priority Zero:\n")
                    .is_some_and(|(_, last)| last.contains("    Sent: ") && last.ends_with('\n')))
            },
        )?;
        let count = |line: &str| -> Result<u64> {
            text.lines()
                .find_map(|found| found.strip_prefix(line))
                .with_context(|| format!("no {line:?} in:\n{text}"))?
                .trim()
                .parse()
                .with_context(|| format!("{line:?} in:\n{text}"))
        };
        ensure!(
            text.starts_with("VRRP Instance: VI_1\n  Advertisements:\n    Received: 0\n"),
            "statistics:\n{text}"
        );
        ensure!(count("  Became master: ")? == 1, "statistics:\n{text}");
        ensure!(count("    TTL: ")? >= 1, "statistics:\n{text}");
        ensure!(count("    Address List: ")? >= 1, "statistics:\n{text}");
        ensure!(
            pulse.log().contains("Printing VRRP stats for process("),
            "pulse did not log the statistics"
        );
        let took = wait_for(
            "pulse steps down for a valid higher priority",
            Duration::from_secs(5),
            || {
                send(&valid, 255)?;
                Ok(!segment.a.holds(address)?)
            },
        )?;
        println!(
            "{scenario}: hostile adverts ignored; a valid higher priority made pulse step down \
             in {:.0} ms",
            took.as_secs_f64() * 1000.0
        );
        pulse.terminate()?;
        Ok(())
    })();
    result.map_err(|error| error.context(format!("pulse log:\n{}", pulse.log())))
}

/// pulse tracks a script of weight -60: while it fails pulse's priority
/// (150) falls below keepalived's (100) and keepalived preempts; when it
/// succeeds again pulse preempts back.
fn script_tracking(segment: &Segment, scenario: &str) -> Result<()> {
    let address = segment.ipv4(100);
    let directory = &segment.directory;
    let flag = directory.join("healthy");
    fs::write(&flag, "")?;
    let instance = |priority, extra| Instance {
        extra,
        ..Instance::v3(priority, format!("{address}/24"))
    };
    let higher = instance(
        150,
        "    track_script {\n        healthy\n    }\n".to_owned(),
    );
    let lower = instance(100, String::new());
    let settle = Duration::from_secs_f64(higher.interval) * 3;
    let configuration = format!(
        "vrrp_script healthy {{\n    script \"/usr/bin/test -e {}\"\n    interval 1\n    \
         weight -60\n}}\n",
        flag.display()
    );
    let mut keepalived = Daemon::start(Kind::Keepalived, &segment.b, directory, "lower", &lower)?;
    let mut pulse = Daemon::start_with(
        Kind::Pulse,
        &segment.a,
        directory,
        "higher",
        &format!("{configuration}{}", higher.configuration()),
    )?;
    let result = (|| -> Result<()> {
        wait_master(
            "pulse becomes master",
            bound(lower.master_down_interval()),
            settle,
            &segment.a,
            &segment.b,
            address,
        )?;
        let failing = Instant::now();
        fs::remove_file(&flag)?;
        // One interval to notice, then keepalived's down timer.
        wait_master(
            "keepalived preempts when pulse's script fails",
            Duration::from_secs(2) + bound(lower.master_down_interval()),
            settle,
            &segment.b,
            &segment.a,
            address,
        )?;
        report(
            scenario,
            "pulse's script failed: keepalived preempted",
            failing.elapsed(),
            Duration::from_secs(1) + lower.master_down_interval(),
        );
        ensure!(
            pulse
                .log()
                .contains("(VI_1) Changing effective priority from 150 to 90"),
            "pulse did not log its priority change"
        );
        let healthy = Instant::now();
        fs::write(&flag, "")?;
        wait_master(
            "pulse preempts when its script succeeds again",
            Duration::from_secs(2) + bound(higher.master_down_interval()),
            settle,
            &segment.a,
            &segment.b,
            address,
        )?;
        report(
            scenario,
            "pulse's script succeeded: pulse preempted",
            healthy.elapsed(),
            Duration::from_secs(1) + higher.master_down_interval(),
        );
        pulse.terminate()?;
        keepalived.terminate()?;
        Ok(())
    })();
    with_logs(result, &pulse, &keepalived)
}

/// A `vrrp_sync_group` of two instances, each on a link of its own, the
/// same group on both ends, `higher_kind`'s priority higher: it is master
/// of both. Its second link going down (its second instance in FAULT)
/// moves both addresses to the other end, the group's members in FAULT
/// together; the link back, it preempts both. Both ends' group `notify`
/// scripts get the same arguments. With pulse master, two reloads before
/// the stop: the same file keeps both members as they are, a changed
/// group restarts both. With [`SyncBreak::GroupScript`], the higher end's
/// group tracks a script (weight 0) and its failure is the break instead;
/// with [`SyncBreak::GroupProcess`], a process (weight 0) and its death.
fn sync_group(segment: &Segment, scenario: &str, higher_kind: Kind, how: SyncBreak) -> Result<()> {
    segment.add_second_link()?;
    let first = segment.ipv4(100);
    let second = IpAddr::from([10, segment.subnet, 1, 100]);
    let directory = &segment.directory;
    let script = directory.join("notify.sh");
    fs::write(
        &script,
        "#!/bin/sh\nfile=$1\nshift\necho \"$@\" >> \"$file\"\n",
    )?;
    fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755))?;
    let timing = |priority| Instance::v3(priority, "");
    let flag = directory.join("healthy");
    fs::write(&flag, "")?;
    // The process a group tracks (SyncBreak::GroupProcess), running.
    let mut process = None;
    let (script_block, group_tracking) = match how {
        SyncBreak::Link => (String::new(), String::new()),
        SyncBreak::GroupProcess => {
            let (path, name) = track_process::distinctive_sleep(segment)?;
            process = Some((track_process::start_process(&path)?, path));
            (
                format!("vrrp_track_process daemon {{\n    process {name}\n}}\n"),
                "    track_process {\n        daemon\n    }\n".to_owned(),
            )
        }
        SyncBreak::GroupScript => (
            format!(
                "vrrp_script healthy {{\n    script \"/usr/bin/test -e {}\"\n    interval 1\n}}\n",
                flag.display()
            ),
            "    track_script {\n        healthy\n    }\n".to_owned(),
        ),
    };
    let configuration = |priority: u8, notified: &Path, group_extra: &str| {
        let (script_block, group_tracking) = if priority == 150 {
            (script_block.as_str(), group_tracking.as_str())
        } else {
            ("", "")
        };
        format!(
            "{script_block}vrrp_instance VI_1 {{\n    interface eth0\n    virtual_router_id 51\n    \
             version 3\n    priority {priority}\n    advert_int {V3_INTERVAL}\n    \
             virtual_ipaddress {{\n        {first}/24\n    }}\n}}\n\
             vrrp_instance VI_2 {{\n    interface eth1\n    virtual_router_id 52\n    \
             version 3\n    priority {priority}\n    advert_int {V3_INTERVAL}\n    \
             virtual_ipaddress {{\n        {second}/24\n    }}\n}}\n\
             vrrp_sync_group G1 {{\n    group {{\n        VI_1\n        VI_2\n    }}\n    \
             notify \"{} {}\"\n{group_tracking}{group_extra}}}\n",
            script.display(),
            notified.display()
        )
    };
    let (higher_namespace, lower_namespace, lower_kind) = match higher_kind {
        Kind::Pulse => (&segment.a, &segment.b, Kind::Keepalived),
        Kind::Keepalived => (&segment.b, &segment.a, Kind::Pulse),
    };
    let higher_notified = directory.join("higher-notified");
    let lower_notified = directory.join("lower-notified");
    let (higher, lower) = (timing(150), timing(100));
    let settle = Duration::from_secs_f64(V3_INTERVAL) * 3;
    let both_on = |what: &str, bound: Duration, master: &Namespace, backup: &Namespace| {
        wait_masters(what, bound, settle, master, backup, &[first, second])
    };
    // The higher first, master of both before the lower starts: started
    // together, the lower one (keepalived takes a moment to start) may be
    // master for a moment, and its notify script would say so.
    let mut higher_daemon = Daemon::start_with(
        higher_kind,
        higher_namespace,
        directory,
        "higher",
        &configuration(150, &higher_notified, ""),
    )?;
    both_on(
        "the higher priority, alone, becomes master of both",
        bound(higher.master_down_interval()),
        higher_namespace,
        lower_namespace,
    )
    .map_err(|error| error.context(format!("{higher_kind} log:\n{}", higher_daemon.log())))?;
    let mut lower_daemon = Daemon::start_with(
        lower_kind,
        lower_namespace,
        directory,
        "lower",
        &configuration(100, &lower_notified, ""),
    )?;
    let result = (|| -> Result<()> {
        both_on(
            "the higher priority stays master of both when the lower starts",
            bound(lower.master_down_interval()),
            higher_namespace,
            lower_namespace,
        )?;
        let what = match how {
            SyncBreak::Link => {
                higher_namespace.ip("link set eth1 down\n")?;
                "second link"
            }
            SyncBreak::GroupScript => {
                fs::remove_file(&flag)?;
                "group's script"
            }
            SyncBreak::GroupProcess => {
                if let Some((running, _)) = &mut process {
                    track_process::stop_process(running)?;
                }
                "group's process"
            }
        };
        let took = both_on(
            "the lower priority takes both over when the higher's group breaks",
            bound(lower.master_down_interval()),
            lower_namespace,
            higher_namespace,
        )?;
        report(
            scenario,
            &format!("{higher_kind}'s {what} down: {lower_kind} took both over"),
            took,
            lower.master_down_interval(),
        );
        let (pulse, pulse_lines) = match higher_kind {
            Kind::Pulse => (
                &higher_daemon,
                &[
                    "(VI_2) Entering FAULT STATE",
                    "VRRP_Group(G1) Syncing instances to FAULT state",
                    "(VI_1) Entering FAULT STATE",
                    match how {
                        SyncBreak::GroupScript => "VRRP_Script(healthy) failed",
                        SyncBreak::GroupProcess => "Quorum lost for tracked process daemon",
                        SyncBreak::Link => "Netlink reports eth1 down",
                    },
                ][..],
            ),
            Kind::Keepalived => (
                &lower_daemon,
                &["VRRP_Group(G1) Syncing instances to MASTER state"][..],
            ),
        };
        let log = pulse.log();
        for line in pulse_lines {
            ensure!(log.contains(line), "pulse did not log {line:?}");
        }
        match how {
            SyncBreak::Link => higher_namespace.ip("link set eth1 up\n")?,
            SyncBreak::GroupScript => fs::write(&flag, "")?,
            SyncBreak::GroupProcess => {
                if let Some((running, path)) = &mut process {
                    *running = track_process::start_process(path)?;
                }
            }
        }
        let took = both_on(
            "the higher priority preempts both once its group is whole again",
            bound(higher.master_down_interval()) + Duration::from_secs(2),
            higher_namespace,
            lower_namespace,
        )?;
        report(
            scenario,
            &format!("{higher_kind}'s {what} back: {higher_kind} preempted both"),
            took,
            higher.master_down_interval(),
        );
        // Steps of notify lines; the lines of one step may come in any
        // order (see `in_steps`).
        let single = |lines: &[&'static str]| -> Vec<Vec<&'static str>> {
            lines.iter().map(|line| vec![*line]).collect()
        };
        let mut higher_expected = single(&[
            "GROUP G1 BACKUP 0",
            "GROUP G1 MASTER 0",
            "GROUP G1 FAULT 0",
            "GROUP G1 BACKUP 0",
            "GROUP G1 MASTER 0",
        ]);
        let mut lower_expected = single(&[
            "GROUP G1 BACKUP 0",
            "GROUP G1 MASTER 0",
            "GROUP G1 BACKUP 0",
        ]);
        if higher_kind == Kind::Pulse && how == SyncBreak::Link {
            let file = directory.join("higher.conf");
            let reloaded = |count: usize| {
                wait_for("pulse reloads", Duration::from_secs(5), || {
                    Ok(higher_daemon.log().matches("VRRP reloaded").count() >= count)
                })
            };
            let masters = |log: &str| log.matches("Entering MASTER STATE").count();
            let before = masters(&higher_daemon.log());
            signal(higher_daemon.child.id() as i32, libc::SIGHUP);
            reloaded(1)?;
            let log = higher_daemon.log();
            ensure!(
                log.contains("VRRP reloaded: 2 of 2 instance(s) kept"),
                "the same file did not keep both members:\n{log}"
            );
            // The group changed: both members stop (the addresses go to
            // keepalived) and start again, and preempt.
            fs::write(
                &file,
                configuration(150, &higher_notified, "    notify_master /bin/true\n"),
            )?;
            signal(higher_daemon.child.id() as i32, libc::SIGHUP);
            reloaded(2)?;
            let log = higher_daemon.log();
            ensure!(
                log.contains("VRRP reloaded: 0 of 2 instance(s) kept"),
                "the changed group did not restart its members:\n{log}"
            );
            both_on(
                "pulse is master of both again after the group's restart",
                bound(higher.master_down_interval()) + Duration::from_secs(2),
                higher_namespace,
                lower_namespace,
            )?;
            ensure!(
                masters(&higher_daemon.log()) == before + 2,
                "the members did not restart once each:\n{}",
                higher_daemon.log()
            );
            // The old group's STOP and the new group's BACKUP are started
            // in the same millisecond.
            higher_expected.push(vec!["GROUP G1 STOP 0", "GROUP G1 BACKUP 0"]);
            higher_expected.push(vec!["GROUP G1 MASTER 0"]);
            lower_expected.extend(single(&["GROUP G1 MASTER 0", "GROUP G1 BACKUP 0"]));
        }
        higher_expected.push(vec!["GROUP G1 STOP 0"]);
        lower_expected.push(vec!["GROUP G1 STOP 0"]);
        // The backup first: the master's priority 0 would make it master
        // once more on its way out.
        lower_daemon.terminate()?;
        higher_daemon.terminate()?;
        for (file, expected) in [
            (&higher_notified, higher_expected),
            (&lower_notified, lower_expected),
        ] {
            // The scripts run in the background: the last one may still
            // be on its way.
            let count: usize = expected.iter().map(Vec::len).sum();
            let _ = wait_for("the notify script ran", Duration::from_secs(5), || {
                Ok(fs::read_to_string(file).unwrap_or_default().lines().count() >= count)
            });
            let lines = fs::read_to_string(file).unwrap_or_default();
            ensure!(
                in_steps(&lines.lines().collect::<Vec<_>>(), &expected),
                "{} was called with:\n{lines}\nexpected, in steps: {expected:?}",
                file.display()
            );
        }
        Ok(())
    })();
    if let Some((running, _)) = &mut process {
        let _ = track_process::stop_process(running);
    }
    result.map_err(|error| {
        error.context(format!(
            "{higher_kind} (higher) log:\n{}\n{lower_kind} (lower) log:\n{}",
            higher_daemon.log(),
            lower_daemon.log()
        ))
    })
}

/// Whether `lines` are the lines of `steps` in order, the lines of one
/// step in any order: notify scripts started in the same instant race to
/// the file they append to (pulse, as keepalived, never waits for them).
fn in_steps(lines: &[&str], steps: &[Vec<&str>]) -> bool {
    let mut rest = lines;
    for step in steps {
        if rest.len() < step.len() {
            return false;
        }
        let (head, tail) = rest.split_at(step.len());
        let mut seen = head.to_vec();
        let mut wanted = step.clone();
        seen.sort_unstable();
        wanted.sort_unstable();
        if seen != wanted {
            return false;
        }
        rest = tail;
    }
    rest.is_empty()
}

/// What breaks the master's sync group in [`sync_group`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SyncBreak {
    /// The second member's link goes down.
    Link,
    /// A script the group tracks fails.
    GroupScript,
    /// The process the group tracks (weight 0) dies.
    GroupProcess,
}

/// `ip -n NAMESPACE ARGS...`'s output.
fn ip_output(namespace: &Namespace, arguments: &[&str]) -> Result<String> {
    let output = Command::new("ip")
        .args(["-n", namespace.name()])
        .args(arguments)
        .output()?;
    ensure!(output.status.success(), "ip {arguments:?} failed");
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

/// pulse alone: its virtual_routes and virtual_rules, and an address on
/// another interface (`dev`, announced there), are there while it is
/// master and gone once it stopped.
fn routes_and_rules(segment: &Segment, scenario: &str) -> Result<()> {
    let address = segment.ipv4(100);
    let gateway = segment.ipv4(3);
    let other = IpAddr::from([10, segment.subnet, 1, 100]);
    segment.a.ip(&format!(
        "link add d1 type veth peer name d1peer\nlink set d1peer up\nlink set d1 up\n\
         addr add 10.{}.1.1/24 dev d1\n",
        segment.subnet
    ))?;
    let instance = Instance {
        interval: 0.1,
        extra: format!(
            "    virtual_routes {{\n        198.51.100.0/24 via {gateway}\n        \
             blackhole 203.0.113.0/24 table 100\n    }}\n    virtual_rules {{\n        \
             from {address}/32 table 100 priority 1000\n    }}\n"
        ),
        ..Instance::v3(100, format!("{address}/24\n        {other}/24 dev d1"))
    };
    let mut pulse = Daemon::start(
        Kind::Pulse,
        &segment.a,
        &segment.directory,
        "pulse",
        &instance,
    )?;
    let result = (|| -> Result<()> {
        wait_for(
            "pulse becomes master",
            bound(instance.master_down_interval()),
            || segment.a.holds(address),
        )?;
        let present = || -> Result<[bool; 4]> {
            Ok([
                ip_output(&segment.a, &["-o", "addr", "show", "dev", "d1"])?
                    .contains(&format!(" {other}/24")),
                ip_output(&segment.a, &["route", "show", "198.51.100.0/24"])?
                    .contains(&format!("via {gateway}")),
                ip_output(&segment.a, &["route", "show", "table", "100"])?
                    .contains("blackhole 203.0.113.0/24"),
                ip_output(&segment.a, &["rule", "show"])?
                    .contains(&format!("1000:\tfrom {address} lookup 100")),
            ])
        };
        wait_for(
            "the address on d1, the routes and rule are added",
            Duration::from_secs(5),
            || Ok(present()? == [true; 4]),
        )?;
        let announced = format!("{other} on d1");
        wait_for(
            "the address on d1 is announced there",
            Duration::from_secs(5),
            || Ok(pulse.log().contains(&announced)),
        )?;
        pulse.terminate()?;
        let left = present()?;
        ensure!(
            left == [false; 4],
            "left behind (address on d1, route, blackhole, rule): {left:?}"
        );
        println!(
            "{scenario}: an address on another interface, a route, a blackhole route in table \
             100 and a rule come and go"
        );
        Ok(())
    })();
    result.map_err(|error| error.context(format!("pulse log:\n{}", pulse.log())))
}

/// keepalived alone as master, then pulse alone, with the same addresses:
/// each address's flags and lifetimes, as `ip` shows them, must be the
/// same (keepalived 2.2.7 gives IPv6 addresses `nodad` unless `-nodad` is
/// written, applies `preferred_lft` to IPv6 only, and deprecates a /128
/// written without it).
fn address_options(segment: &Segment, scenario: &str) -> Result<()> {
    let first = segment.ipv4(100);
    let options = [
        (segment.ipv4(101), "/24 noprefixroute"),
        (segment.ipv4(102), "/24 preferred_lft 0"),
        (segment.ipv4(103), "/24 -nodad"),
        (segment.ipv6(0x10), "/64 preferred_lft 30"),
        (segment.ipv6(0x11), "/128"),
        (segment.ipv6(0x12), "/64 preferred_lft forever"),
        (segment.ipv6(0x13), "/64 preferred_lft 0"),
        (segment.ipv6(0x14), "/128 preferred_lft forever"),
        (segment.ipv6(0x15), "/64 -nodad"),
        (segment.ipv6(0x16), "/64 home mngtmpaddr"),
        (
            segment.ipv6(0x17),
            "/64 noprefixroute -nodad preferred_lft 0",
        ),
    ];
    let excluded: String = options
        .iter()
        .map(|(address, written)| format!("        {address}{written}\n"))
        .collect();
    let configuration = format!(
        "vrrp_instance VI_1 {{\n    interface eth0\n    virtual_router_id 53\n    version 3\n    \
         advert_int 0.1\n    virtual_ipaddress {{\n        {first}/24\n    }}\n    \
         virtual_ipaddress_excluded {{\n{excluded}    }}\n}}\n"
    );
    // `ip -o addr` lines of the addresses above, in address order, with
    // the preferred lifetimes left counting down reduced to "N".
    let shown = || -> Result<Vec<String>> {
        let text = ip_output(&segment.a, &["-o", "addr", "show", "dev", "eth0"])?;
        let mut lines: Vec<String> = text
            .lines()
            .filter(|line| {
                options
                    .iter()
                    .any(|(address, _)| line.contains(&format!(" {address}/")))
            })
            .map(|line| {
                line.split_whitespace()
                    .skip(2)
                    .map(|word| match word.strip_suffix("sec") {
                        Some(seconds) if seconds.parse::<u32>().is_ok() => "Nsec",
                        _ => word,
                    })
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .collect();
        lines.sort();
        Ok(lines)
    };
    let mut seen = Vec::new();
    for kind in [Kind::Keepalived, Kind::Pulse] {
        let mut daemon = Daemon::start_with(
            kind,
            &segment.a,
            &segment.directory,
            &kind.to_string(),
            &configuration,
        )?;
        let result = (|| -> Result<Vec<String>> {
            wait_for("every address added", Duration::from_secs(5), || {
                for (address, _) in &options {
                    if !segment.a.holds(*address)? {
                        return Ok(false);
                    }
                }
                Ok(true)
            })?;
            // The addresses with duplicate address detection are
            // `tentative` for a second or two: compare them once done.
            let started = Instant::now();
            let lines = loop {
                let lines = shown()?;
                if !lines.iter().any(|line| line.contains("tentative")) {
                    break lines;
                }
                ensure!(
                    started.elapsed() < Duration::from_secs(10),
                    "still tentative after 10 s: {lines:?}"
                );
                thread::sleep(Duration::from_millis(250));
            };
            daemon.terminate()?;
            Ok(lines)
        })();
        seen.push(result.map_err(|error| error.context(format!("{kind} log:\n{}", daemon.log())))?);
    }
    ensure!(
        seen[0] == seen[1],
        "the addresses differ:\nkeepalived:\n{}\npulse:\n{}",
        seen[0].join("\n"),
        seen[1].join("\n")
    );
    println!(
        "{scenario}: {} addresses with the same flags and lifetimes",
        options.len()
    );
    Ok(())
}

/// pulse alone with two instances: one on eth0, one on a link without an
/// IPv4 address to send from. The first becomes master, the second stays
/// in FAULT (as keepalived's would) without its address.
fn two_instances(segment: &Segment, scenario: &str) -> Result<()> {
    segment
        .a
        .ip("link add d2 type veth peer name d2peer\nlink set d2peer up\nlink set d2 up\n")?;
    let first = segment.ipv4(100);
    let second = IpAddr::from([10, segment.subnet, 2, 100]);
    let configuration = format!(
        "vrrp_instance VI_1 {{\n    interface eth0\n    virtual_router_id 51\n    version 3\n    \
         advert_int 0.1\n    virtual_ipaddress {{\n        {first}/24\n    }}\n}}\n\
         vrrp_instance VI_2 {{\n    interface d2\n    virtual_router_id 52\n    version 3\n    \
         advert_int 0.1\n    virtual_ipaddress {{\n        {second}/24\n    }}\n}}\n"
    );
    let mut pulse = Daemon::start_with(
        Kind::Pulse,
        &segment.a,
        &segment.directory,
        "pulse",
        &configuration,
    )?;
    let result = (|| -> Result<()> {
        wait_for("VI_1 becomes master", Duration::from_secs(5), || {
            segment.a.holds(first)
        })?;
        let log = pulse.log();
        ensure!(
            log.contains("(VI_2) Entering FAULT STATE"),
            "VI_2 not in FAULT"
        );
        ensure!(
            !ip_output(&segment.a, &["-o", "addr", "show", "dev", "d2"])?
                .contains(&format!(" {second}/")),
            "VI_2 added its address"
        );
        pulse.terminate()?;
        println!("{scenario}: VI_1 master, VI_2 in FAULT");
        Ok(())
    })();
    result.map_err(|error| error.context(format!("pulse log:\n{}", pulse.log())))
}

/// SIGHUP: an instance whose block did not change stays master without a
/// transition; one whose address changed stops (its old address goes) and
/// starts again with the new one; a configuration with errors is refused.
fn reload(segment: &Segment, scenario: &str) -> Result<()> {
    let [first, second, third] = [100, 101, 102].map(|host| segment.ipv4(host));
    let configuration = |second_address: IpAddr| {
        format!(
            "vrrp_instance VI_1 {{\n    interface eth0\n    virtual_router_id 51\n    \
             version 3\n    advert_int 0.1\n    virtual_ipaddress {{\n        {first}/24\n    \
             }}\n}}\nvrrp_instance VI_2 {{\n    interface eth0\n    virtual_router_id 52\n    \
             version 3\n    advert_int 0.1\n    virtual_ipaddress {{\n        \
             {second_address}/24\n    }}\n}}\n"
        )
    };
    let mut pulse = Daemon::start_with(
        Kind::Pulse,
        &segment.a,
        &segment.directory,
        "pulse",
        &configuration(second),
    )?;
    let file = segment.directory.join("pulse.conf");
    let result = (|| -> Result<()> {
        wait_for(
            "both instances become master",
            Duration::from_secs(5),
            || Ok(segment.a.holds(first)? && segment.a.holds(second)?),
        )?;
        let masters = |log: &str| log.matches("(VI_1) Entering MASTER STATE").count();
        ensure!(masters(&pulse.log()) == 1);

        // The same file again: every instance is kept, and nothing is
        // opened again (no socket, rtnetlink's included, that pulse did
        // not hold before).
        let before = sockets(pulse.child.id())?;
        signal(pulse.child.id() as i32, libc::SIGHUP);
        wait_for("the reload keeps both", Duration::from_secs(5), || {
            Ok(pulse
                .log()
                .contains("VRRP reloaded: 2 of 2 instance(s) kept with their state"))
        })?;
        let after = sockets(pulse.child.id())?;
        let opened: Vec<&String> = after.difference(&before).collect();
        ensure!(
            opened.is_empty(),
            "a reload that changes nothing opened {} socket(s): {opened:?} (before: {before:?})",
            opened.len()
        );
        println!(
            "{scenario}: the same file again: {} socket(s) before and after, none opened",
            before.len()
        );

        fs::write(&file, "vrrp_instance VI_1 {\n    virtual_router_id\n")?;
        signal(pulse.child.id() as i32, libc::SIGHUP);
        wait_for("the bad reload is refused", Duration::from_secs(5), || {
            Ok(pulse.log().contains("keeping the running configuration"))
        })?;
        ensure!(segment.a.holds(first)? && segment.a.holds(second)?);

        fs::write(&file, configuration(third))?;
        signal(pulse.child.id() as i32, libc::SIGHUP);
        wait_for(
            "VI_2 gives up its old address and takes the new one",
            Duration::from_secs(5),
            || Ok(!segment.a.holds(second)? && segment.a.holds(third)?),
        )?;
        ensure!(segment.a.holds(first)?, "VI_1 lost its address");
        let log = pulse.log();
        ensure!(
            masters(&log) == 1,
            "VI_1 went through another transition:\n{log}"
        );
        pulse.terminate()?;
        println!("{scenario}: VI_1 kept, VI_2 restarted with its new address");
        Ok(())
    })();
    result.map_err(|error| error.context(format!("pulse log:\n{}", pulse.log())))
}

/// The sockets process `pid` holds, by inode (`socket:[N]`): a socket
/// closed and opened again has a new one.
fn sockets(pid: u32) -> Result<std::collections::BTreeSet<String>> {
    let mut sockets = std::collections::BTreeSet::new();
    for entry in fs::read_dir(format!("/proc/{pid}/fd"))? {
        // A descriptor closed while listed is gone: skipped.
        if let Ok(target) = fs::read_link(entry?.path()) {
            let target = target.to_string_lossy().into_owned();
            if target.starts_with("socket:") {
                sockets.insert(target);
            }
        }
    }
    Ok(sockets)
}

/// pulse tracks a file (weight 1): -60 in it brings pulse's priority (150)
/// below keepalived's (100) and keepalived preempts; 0 brings it back.
fn file_tracking(segment: &Segment, scenario: &str) -> Result<()> {
    let address = segment.ipv4(100);
    let directory = &segment.directory;
    let file = directory.join("weight");
    let instance = |priority, extra| Instance {
        extra,
        ..Instance::v3(priority, format!("{address}/24"))
    };
    let higher = instance(150, "    track_file {\n        weight\n    }\n".to_owned());
    let lower = instance(100, String::new());
    let settle = Duration::from_secs_f64(higher.interval) * 3;
    let configuration = format!(
        "track_file weight {{\n    file {}\n    weight 1\n    init_file 0 overwrite\n}}\n",
        file.display()
    );
    let mut keepalived = Daemon::start(Kind::Keepalived, &segment.b, directory, "lower", &lower)?;
    let mut pulse = Daemon::start_with(
        Kind::Pulse,
        &segment.a,
        directory,
        "higher",
        &format!("{configuration}{}", higher.configuration()),
    )?;
    let result = (|| -> Result<()> {
        wait_master(
            "pulse becomes master",
            bound(lower.master_down_interval()),
            settle,
            &segment.a,
            &segment.b,
            address,
        )?;
        ensure!(
            fs::read_to_string(&file)? == "0\n",
            "init_file did not write 0"
        );
        let lowered = Instant::now();
        fs::write(&file, "-60\n")?;
        wait_master(
            "keepalived preempts when the file lowers pulse's priority",
            bound(lower.master_down_interval()),
            settle,
            &segment.b,
            &segment.a,
            address,
        )?;
        report(
            scenario,
            "-60 in pulse's tracked file: keepalived preempted",
            lowered.elapsed(),
            lower.master_down_interval(),
        );
        fs::write(&file, "0\n")?;
        wait_master(
            "pulse preempts when the file says 0 again",
            bound(higher.master_down_interval()),
            settle,
            &segment.a,
            &segment.b,
            address,
        )?;
        pulse.terminate()?;
        keepalived.terminate()?;
        Ok(())
    })();
    with_logs(result, &pulse, &keepalived)
}

/// keepalived's netlink address monitor, against keepalived: pulse
/// (the higher priority) starts on a link without an IPv4 address and
/// stays in FAULT, keepalived is master; the address added, pulse comes
/// out of FAULT and preempts. Its virtual address deleted by hand, pulse
/// steps down and takes over again after its skew time, the address
/// back. Its own address deleted, pulse enters FAULT and keepalived takes
/// over.
fn address_monitoring(segment: &Segment, scenario: &str) -> Result<()> {
    let address = segment.ipv4(100);
    let own = segment.ipv4(1);
    let instance = |priority| Instance::v3(priority, format!("{address}/24"));
    let higher = instance(150);
    let lower = instance(100);
    let settle = Duration::from_secs_f64(higher.interval) * 3;
    segment.a.ip(&format!("addr del {own}/24 dev eth0\n"))?;
    pulse_over_keepalived(segment, &higher, &lower, |pulse, keepalived| {
        wait_master(
            "keepalived becomes master while pulse has no address",
            bound(lower.master_down_interval()),
            settle,
            &segment.b,
            &segment.a,
            address,
        )?;
        ensure!(
            pulse.log().contains("(VI_1) Entering FAULT STATE"),
            "pulse is not in FAULT without an address"
        );
        let added = Instant::now();
        segment.a.ip(&format!("addr add {own}/24 dev eth0\n"))?;
        wait_master(
            "pulse preempts once it has an address",
            bound(higher.master_down_interval()),
            settle,
            &segment.a,
            &segment.b,
            address,
        )?;
        report(
            scenario,
            "an address added: pulse out of FAULT and master",
            added.elapsed() - settle,
            higher.master_down_interval(),
        );
        let log = pulse.log();
        ensure!(
            log.contains(&format!("Assigned address {own} for interface eth0")),
            "pulse did not log the address"
        );
        ensure!(
            log.contains("(VI_1) Entering BACKUP STATE"),
            "pulse did not leave FAULT for BACKUP"
        );
        let deleted = Instant::now();
        segment.a.ip(&format!("addr del {address}/24 dev eth0\n"))?;
        wait_for(
            "pulse steps down for its deleted address",
            Duration::from_secs(5),
            || {
                Ok(pulse.log().contains(&format!(
                    "Netlink reflector reports IP {address} removed from eth0"
                )))
            },
        )?;
        wait_master(
            "pulse takes over again after its address was deleted",
            bound(higher.master_down_interval()),
            settle,
            &segment.a,
            &segment.b,
            address,
        )?;
        report(
            scenario,
            "the virtual address deleted by hand: pulse master with it again",
            deleted.elapsed() - settle,
            higher.skew_time(),
        );
        segment.a.ip(&format!("addr del {own}/24 dev eth0\n"))?;
        let took = wait_master(
            "keepalived takes over once pulse's address is gone",
            bound(lower.master_down_interval()),
            settle,
            &segment.b,
            &segment.a,
            address,
        )?;
        report(
            scenario,
            "pulse's address deleted: keepalived took over",
            took,
            // The subnet's route goes with the address (and the virtual
            // address, its secondary, with it), so pulse's priority 0
            // advert cannot leave: keepalived waits out its down timer.
            lower.master_down_interval(),
        );
        let log = pulse.log();
        ensure!(
            log.contains(&format!("Deassigned address {own} from interface eth0")),
            "pulse did not log the address going"
        );
        ensure!(
            log.matches("(VI_1) Entering FAULT STATE").count() == 2,
            "pulse did not enter FAULT again:\n{log}"
        );
        pulse.terminate()?;
        keepalived.terminate()?;
        Ok(())
    })
}

/// Events lost to a full rtnetlink buffer: pulse, master, is stopped
/// (SIGSTOP) while a thousand addresses are added on another interface,
/// which fills its monitor socket's buffer, and its virtual address is
/// deleted by hand after them. The kernel drops that deletion's event;
/// once resumed, pulse must read the addresses again, find the virtual
/// address gone and step down and take over again with it, as for a
/// deletion it saw. Without the catch-up nobody holds the address.
fn lost_events(segment: &Segment, scenario: &str) -> Result<()> {
    let address = segment.ipv4(100);
    let instance = |priority| Instance::v3(priority, format!("{address}/24"));
    let higher = instance(150);
    let lower = instance(100);
    let settle = Duration::from_secs_f64(higher.interval) * 3;
    pulse_over_keepalived(segment, &higher, &lower, |pulse, keepalived| {
        wait_master(
            "pulse becomes master",
            bound(higher.master_down_interval()) + Duration::from_secs(3),
            settle,
            &segment.a,
            &segment.b,
            address,
        )?;
        let mut burst =
            String::from("link add burst0 type veth peer name burst1\nlink set burst0 up\n");
        for host in 0..1000 {
            burst.push_str(&format!(
                "addr add 10.254.{}.{}/32 dev burst0\n",
                host / 250,
                host % 250 + 1
            ));
        }
        burst.push_str(&format!("addr del {address}/24 dev eth0\n"));
        let pid = pulse.vrrp_pid()?;
        signal(pid, libc::SIGSTOP);
        let burst_result = segment.a.ip(&burst);
        signal(pid, libc::SIGCONT);
        burst_result?;
        let resumed = Instant::now();
        wait_for(
            "pulse reads again after the overrun and finds its address gone",
            Duration::from_secs(5),
            || {
                let log = pulse.log();
                Ok(log.contains("receive buffer overrun")
                    && log.contains(&format!(
                        "Netlink reflector reports IP {address} removed from eth0"
                    )))
            },
        )?;
        wait_master(
            "pulse master with its address again",
            bound(higher.master_down_interval()),
            settle,
            &segment.a,
            &segment.b,
            address,
        )?;
        report(
            scenario,
            "resumed after lost events: pulse master with its address again",
            resumed.elapsed() - settle,
            higher.skew_time(),
        );
        pulse.terminate()?;
        keepalived.terminate()?;
        Ok(())
    })
}

/// pulse's interface deleted and created again (another index, the same
/// name): keepalived takes over meanwhile, then pulse takes the new
/// interface up (sockets, virtual address) and preempts. Then the same
/// for an interface pulse tracks (`track_interface`): FAULT while it is
/// gone, master again once it is back.
fn interface_recreated(segment: &Segment, scenario: &str) -> Result<()> {
    segment.add_second_link()?;
    let address = segment.ipv4(100);
    let own = segment.ipv4(1);
    let instance = |priority| Instance::v3(priority, format!("{address}/24"));
    let higher = Instance {
        extra: "    track_interface {\n        eth1\n    }\n".into(),
        ..instance(150)
    };
    let lower = instance(100);
    let settle = Duration::from_secs_f64(higher.interval) * 3;
    pulse_over_keepalived(segment, &higher, &lower, |pulse, keepalived| {
        wait_master(
            "pulse becomes master",
            bound(lower.master_down_interval()),
            settle,
            &segment.a,
            &segment.b,
            address,
        )?;
        // Deleting one end of the veth pair deletes the other, the
        // bridge's port.
        segment.a.ip("link del eth0\n")?;
        wait_master(
            "keepalived takes over once pulse's interface is gone",
            bound(lower.master_down_interval()),
            settle,
            &segment.b,
            &segment.a,
            address,
        )?;
        ensure!(
            pulse.log().contains("Interface eth0 deleted"),
            "pulse did not log the interface going"
        );
        let created = Instant::now();
        segment.bridge.ip(&format!(
            "link add name va type veth peer name eth0 netns {}\n\
             link set va master br0 up\n",
            segment.a.name()
        ))?;
        segment
            .a
            .ip(&format!("addr add {own}/24 dev eth0\nlink set eth0 up\n"))?;
        wait_master(
            "pulse preempts on its new interface",
            bound(higher.master_down_interval()),
            settle,
            &segment.a,
            &segment.b,
            address,
        )?;
        report(
            scenario,
            "the interface created again: pulse master on it",
            created.elapsed() - settle,
            higher.master_down_interval(),
        );
        ensure!(
            pulse.log().contains("Interface eth0 added again"),
            "pulse did not log the new interface"
        );
        segment.a.ip("link del eth1\n")?;
        wait_master(
            "keepalived takes over once pulse's tracked interface is gone",
            bound(lower.master_down_interval()),
            settle,
            &segment.b,
            &segment.a,
            address,
        )?;
        ensure!(
            pulse.log().contains("Interface eth1 deleted"),
            "pulse did not log the tracked interface going"
        );
        let created = Instant::now();
        segment.bridge.ip(&format!(
            "link add name w1 type veth peer name eth1 netns {}\n\
             link set w1 master br1 up\n",
            segment.a.name()
        ))?;
        segment.a.ip("link set eth1 up\n")?;
        wait_master(
            "pulse preempts once its tracked interface is back",
            bound(higher.master_down_interval()),
            settle,
            &segment.a,
            &segment.b,
            address,
        )?;
        report(
            scenario,
            "the tracked interface created again: pulse master",
            created.elapsed() - settle,
            higher.master_down_interval(),
        );
        pulse.terminate()?;
        keepalived.terminate()?;
        Ok(())
    })
}

type Scenario = fn(&Segment, &str) -> Result<()>;

/// Whether a TCP connection to `address` port 8080 from `namespace` is
/// answered within a second (a dropped SYN times out).
fn tcp_answered(namespace: &Namespace, address: IpAddr) -> Result<bool> {
    let target = std::net::SocketAddr::new(address, 8080);
    namespace.run(|| {
        match std::net::TcpStream::connect_timeout(&target, Duration::from_secs(1)) {
            Ok(_) => Ok(true),
            Err(error) if error.kind() == std::io::ErrorKind::TimedOut => Ok(false),
            Err(error) => Err(error).with_context(|| format!("connecting to {target}")),
        }
    })?
}

/// Whether an ICMP echo request to `address` from `namespace` is answered
/// within a second (an unprivileged ping socket: the namespace's
/// `ping_group_range` must hold group 0).
fn ping_answered(namespace: &Namespace, address: IpAddr) -> Result<bool> {
    use socket2::{Domain, Protocol, Socket, Type};
    namespace.run(|| -> Result<bool> {
        let socket = Socket::new(Domain::IPV4, Type::DGRAM, Some(Protocol::ICMPV4))?;
        socket.set_read_timeout(Some(Duration::from_secs(1)))?;
        // Type 8 (echo request); the kernel sets the identifier and the
        // checksum.
        let request = [8, 0, 0, 0, 0, 0, 0, 1, b'p', b'u', b'l', b's', b'e'];
        socket.send_to(&request, &std::net::SocketAddr::new(address, 0).into())?;
        let mut buffer = [std::mem::MaybeUninit::new(0u8); 64];
        match socket.recv(&mut buffer) {
            Ok(_) => Ok(true),
            Err(error)
                if matches!(
                    error.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                Ok(false)
            }
            Err(error) => Err(error.into()),
        }
    })?
}

/// `nft list ruleset` in `namespace`; `None` without nft (the ruleset
/// comparison is then skipped, the traffic checks are not).
fn ruleset(namespace: &Namespace) -> Result<Option<String>> {
    match namespace.command("nft").args(["list", "ruleset"]).output() {
        Ok(output) if output.status.success() => {
            Ok(Some(String::from_utf8_lossy(&output.stdout).into_owned()))
        }
        Ok(output) if output.status.code() == Some(255) => Ok(None),
        Ok(output) => bail!(
            "nft list ruleset: {}",
            String::from_utf8_lossy(&output.stderr)
        ),
        Err(_) => Ok(None),
    }
}

/// Accept mode. keepalived with `no_accept`, then pulse with `no_accept`,
/// then pulse in strict mode, each master alone in `a`: a client's TCP
/// (and, over IPv4, ICMP) to the virtual address are dropped while the
/// router's own address answers, and pulse's nftables ruleset is
/// keepalived's (when nft is installed); the tables go when the daemon
/// stops. Then pulse with `accept`: answered. IPv4, then IPv6 (the ip6
/// table, with its neighbour discovery and link-local rules).
fn accept_mode(segment: &Segment, scenario: &str) -> Result<()> {
    let directory = &segment.directory;
    segment.c.sysctl("net/ipv4/ping_group_range", "0 0")?;
    // Dual stack: IPv4 clients too.
    let _responder = labkit::http::Responder::spawn(&segment.a, "[::]:8080".parse()?, "a")?;
    for (address, own, prefix) in [
        (segment.ipv4(100), segment.ipv4(1), 24),
        (segment.ipv6(0x100), segment.ipv6(1), 64),
    ] {
        let instance = |extra: &str| Instance {
            interval: 0.1,
            extra: extra.to_owned(),
            ..Instance::v3(100, format!("{address}/{prefix}"))
        };
        let mut rulesets = Vec::new();
        for (kind, name, extra, accept) in [
            (
                Kind::Keepalived,
                "keepalived-no-accept",
                "    no_accept\n",
                false,
            ),
            (Kind::Pulse, "pulse-no-accept", "    no_accept\n", false),
            (Kind::Pulse, "pulse-strict", "    strict_mode on\n", false),
            (Kind::Pulse, "pulse-accept", "    accept\n", true),
        ] {
            let instance = instance(extra);
            let mut daemon = Daemon::start(kind, &segment.a, directory, name, &instance)?;
            let result = (|| -> Result<()> {
                wait_for(
                    &format!("{name} becomes master"),
                    bound(instance.master_down_interval()),
                    || segment.a.holds(address),
                )?;
                let ipv4 = address.is_ipv4();
                ensure!(
                    tcp_answered(&segment.c, own)? && (!ipv4 || ping_answered(&segment.c, own)?),
                    "{name}: the router's own address {own} does not answer"
                );
                let tcp = tcp_answered(&segment.c, address)?;
                let ping = if ipv4 {
                    ping_answered(&segment.c, address)?
                } else {
                    tcp
                };
                ensure!(
                    tcp == accept && ping == accept,
                    "{name}: TCP to {address} answered: {tcp}, ICMP: {ping}"
                );
                if !accept && let Some(ruleset) = ruleset(&segment.a)? {
                    rulesets.push((name, ruleset));
                }
                daemon.terminate()?;
                if let Some(ruleset) = ruleset(&segment.a)? {
                    ensure!(
                        ruleset.trim().is_empty(),
                        "{name} left a ruleset behind:\n{ruleset}"
                    );
                }
                Ok(())
            })();
            if let Err(error) = result {
                bail!("{error:#}\n{name}'s log:\n{}", daemon.log());
            }
        }
        let table = if address.is_ipv4() {
            "table ip keepalived"
        } else {
            "table ip6 keepalived"
        };
        match rulesets.as_slice() {
            [] => println!("{scenario}: nft is not installed, rulesets not compared"),
            [(_, keepalived), others @ ..] => {
                ensure!(
                    keepalived.contains(table) && keepalived.contains("@vips drop"),
                    "keepalived's ruleset is not what this test expects:\n{keepalived}"
                );
                for (name, ruleset) in others {
                    ensure!(
                        ruleset == keepalived,
                        "{name}'s ruleset differs from keepalived's:\n{ruleset}\nkeepalived's:\n{keepalived}"
                    );
                }
            }
        }
    }
    Ok(())
}

/// Most keepalived configurations run VRRP alone, often on a kernel
/// without IPVS (this machine's is one), and are started without `-P`:
/// keepalived then starts its VRRP child only. pulse must do the same and
/// take the address, with keepalived as its peer; and where a
/// `virtual_server` is configured on a kernel without IPVS, both refuse to
/// run, saying so with keepalived's line.
fn vrrp_alone_without_flag(segment: &Segment, scenario: &str) -> Result<()> {
    let address = segment.ipv4(100);
    let instance = |priority| Instance::v3(priority, format!("{address}/24"));
    let mut pulse = Daemon::start_as(
        Kind::Pulse,
        &segment.a,
        &segment.directory,
        "pulse",
        &instance(150).configuration(),
        false,
        &[],
    )?;
    let mut keepalived = Daemon::start_as(
        Kind::Keepalived,
        &segment.b,
        &segment.directory,
        "keepalived",
        &instance(100).configuration(),
        false,
        &[],
    )?;
    with_logs(
        wait_master(
            "pulse becomes master",
            Duration::from_secs(10),
            Duration::from_secs(1),
            &segment.a,
            &segment.b,
            address,
        ),
        &pulse,
        &keepalived,
    )?;
    let log = pulse.log();
    ensure!(
        !log.contains("IPVS"),
        "pulse spoke of IPVS for a configuration without virtual servers:\n{log}"
    );
    pulse.terminate()?;
    keepalived.terminate()?;
    println!("{scenario}: pulse master without -P, keepalived backup, no IPVS touched");
    if Path::new("/proc/net/ip_vs").exists() {
        println!("{scenario}: this kernel has IPVS: the refusal without it is not tested here");
        return Ok(());
    }
    // A virtual server too, on this kernel without IPVS: keepalived's
    // checker process fails and keepalived ends, VRRP included; pulse
    // does not start.
    let with_service = format!(
        "{}virtual_server {address} 80 {{\n    protocol TCP\n    real_server {} 80 {{\n    }}\n}}\n",
        instance(150).configuration(),
        segment.ipv4(3)
    );
    let line = "IPVS: Can't initialize ipvs: No such file or directory";
    for kind in [Kind::Pulse, Kind::Keepalived] {
        let mut daemon = Daemon::start_as(
            kind,
            &segment.a,
            &segment.directory,
            &format!("{kind}-ipvs"),
            &with_service,
            false,
            &[],
        )?;
        let started = Instant::now();
        let status = loop {
            if let Some(status) = daemon.child.try_wait()? {
                break status;
            }
            ensure!(
                started.elapsed() < Duration::from_secs(10),
                "{kind} kept running without IPVS:\n{}",
                daemon.log()
            );
            thread::sleep(Duration::from_millis(50));
        };
        let log = daemon.log();
        ensure!(!status.success(), "{kind} exited {status}:\n{log}");
        ensure!(log.contains(line), "{kind} did not say '{line}':\n{log}");
        ensure!(
            !segment.a.holds(address)?,
            "{kind} left the virtual address behind"
        );
        println!("{scenario}: with a virtual server and no IPVS, {kind} exited ({status})");
    }
    Ok(())
}

fn scenarios() -> Vec<(&'static str, Scenario)> {
    fn multicast(segment: &Segment, version: u8, interval: f64, priority: u8) -> Instance {
        Instance {
            version,
            interval,
            ..Instance::v3(priority, format!("{}/24", segment.ipv4(100)))
        }
    }
    fn unicast(
        segment: &Segment,
        version: u8,
        interval: f64,
        priority: u8,
        pulse: bool,
    ) -> Instance {
        let (source, peer) = if pulse { (1, 2) } else { (2, 1) };
        Instance {
            unicast: Some((segment.ipv4(source), segment.ipv4(peer))),
            ..multicast(segment, version, interval, priority)
        }
    }
    vec![
        ("v3 multicast, pulse master", |segment, name| {
            failover(
                segment,
                name,
                Kind::Pulse,
                multicast(segment, 3, V3_INTERVAL, 150),
                multicast(segment, 3, V3_INTERVAL, 100),
            )
        }),
        ("v3 multicast, keepalived master", |segment, name| {
            failover(
                segment,
                name,
                Kind::Keepalived,
                multicast(segment, 3, V3_INTERVAL, 150),
                multicast(segment, 3, V3_INTERVAL, 100),
            )
        }),
        ("v2 multicast with PASS, pulse master", |segment, name| {
            let password = |instance: Instance| Instance {
                password: Some("secret12"),
                ..instance
            };
            failover(
                segment,
                name,
                Kind::Pulse,
                password(multicast(segment, 2, 1.0, 150)),
                password(multicast(segment, 2, 1.0, 100)),
            )
        }),
        ("v2 multicast, keepalived master", |segment, name| {
            failover(
                segment,
                name,
                Kind::Keepalived,
                multicast(segment, 2, 1.0, 150),
                multicast(segment, 2, 1.0, 100),
            )
        }),
        ("v3 unicast, pulse master", |segment, name| {
            failover(
                segment,
                name,
                Kind::Pulse,
                unicast(segment, 3, V3_INTERVAL, 150, true),
                unicast(segment, 3, V3_INTERVAL, 100, false),
            )
        }),
        ("v2 unicast, keepalived master", |segment, name| {
            failover(
                segment,
                name,
                Kind::Keepalived,
                unicast(segment, 2, 1.0, 150, false),
                unicast(segment, 2, 1.0, 100, true),
            )
        }),
        ("v3 unicast, keepalived master", |segment, name| {
            failover(
                segment,
                name,
                Kind::Keepalived,
                unicast(segment, 3, V3_INTERVAL, 150, false),
                unicast(segment, 3, V3_INTERVAL, 100, true),
            )
        }),
        ("v2 unicast, pulse master", |segment, name| {
            failover(
                segment,
                name,
                Kind::Pulse,
                unicast(segment, 2, 1.0, 150, true),
                unicast(segment, 2, 1.0, 100, false),
            )
        }),
        ("v3 IPv6 multicast, pulse master", |segment, name| {
            let ipv6 = |priority| Instance {
                virtual_address: format!("{}/64", segment.ipv6(0x100)),
                ..multicast(segment, 3, V3_INTERVAL, priority)
            };
            failover(segment, name, Kind::Pulse, ipv6(150), ipv6(100))
        }),
        ("v3 IPv6 multicast, keepalived master", |segment, name| {
            let ipv6 = |priority| Instance {
                virtual_address: format!("{}/64", segment.ipv6(0x100)),
                ..multicast(segment, 3, V3_INTERVAL, priority)
            };
            failover(segment, name, Kind::Keepalived, ipv6(150), ipv6(100))
        }),
        ("nopreempt, pulse first", |segment, name| {
            no_preemption(segment, name, Kind::Pulse)
        }),
        ("nopreempt, keepalived first", |segment, name| {
            no_preemption(segment, name, Kind::Keepalived)
        }),
        ("link down, pulse master", link_failure),
        ("hostile adverts", hostile_adverts),
        ("track_script, pulse master", script_tracking),
        ("virtual routes and rules", routes_and_rules),
        ("two instances, one without a source address", two_instances),
        ("reload", reload),
        ("track_file, pulse master", file_tracking),
        ("sync group, pulse master", |segment, name| {
            sync_group(segment, name, Kind::Pulse, SyncBreak::Link)
        }),
        ("sync group, keepalived master", |segment, name| {
            sync_group(segment, name, Kind::Keepalived, SyncBreak::Link)
        }),
        ("sync group track_script, pulse master", |segment, name| {
            sync_group(segment, name, Kind::Pulse, SyncBreak::GroupScript)
        }),
        ("sync group track_process, pulse master", |segment, name| {
            sync_group(segment, name, Kind::Pulse, SyncBreak::GroupProcess)
        }),
        ("address monitoring", address_monitoring),
        ("address events lost to a full buffer", lost_events),
        ("interface deleted and created again", interface_recreated),
        ("accept mode", accept_mode),
        ("VRRP alone without -P", vrrp_alone_without_flag),
        (
            "address options as keepalived applies them",
            address_options,
        ),
        (
            "keepalived's dumps, the exporters' metrics and a Prometheus scrape",
            observability::dumps_and_metrics,
        ),
        (
            "later keepalived's dumps: json_version 2 and the dump files, pulse alone",
            observability::later_dump_settings,
        ),
        ("use_vmac both ways", vmac::use_vmac),
        (
            "vrrp_priority and vrrp_no_swap",
            priorities::process_priorities,
        ),
        ("-V, --dont-release-vrrp", release::dont_release),
        ("dynamic_interfaces", dynamic::dynamic_interfaces),
        ("track_src_ip", dynamic::track_source_address),
        ("net_namespace", dynamic::net_namespace),
        ("reload_time_file", release::reload_time_file),
        ("umask and -u", priorities::file_mask),
        ("unicast_fault_no_peer", keywords::unicast_fault_no_peer),
        ("vrrp_startup_delay", keywords::startup_delay),
        ("garp_group and garp_extra_if", keywords::garp_group),
        ("vrrp_min_garp", keywords::min_garp),
        ("notify_deleted", keywords::notify_deleted),
        ("notify_fifo", notify_fifo::notify_fifo),
        ("track_process, pulse master", track_process::track_process),
        ("track_bfd", track_bfd::track_bfd),
        (
            "static_ipaddress, static_routes and static_rules",
            statics::static_blocks,
        ),
        ("promote_secondaries", statics::promote_secondaries),
        ("no_track", statics::no_track),
        ("SMTP alerts, keepalived's then pulse's", smtp::alerts),
    ]
}

/// Why the test cannot run here, if it cannot.
fn missing_prerequisite() -> Option<&'static str> {
    if unsafe { libc::geteuid() } != 0 {
        return Some("not root (network namespaces and raw sockets need it)");
    }
    if !labkit::installed("keepalived") {
        return Some("keepalived is not installed");
    }
    None
}

#[test]
fn interoperates_with_keepalived() {
    if let Some(why) = missing_prerequisite() {
        eprintln!("skipping the VRRP interop test: {why}");
        return;
    }
    let started = Instant::now();
    let process = std::process::id();
    // VRRP_SCENARIOS=WORDS runs the scenarios whose name contains one of
    // the comma-separated words (each keeps its index, so its subnet).
    // VRRP_KEEP_LOGS=1 keeps the logs of the scenarios that passed too
    // (/tmp/pulse-vrrp-*).
    let only = std::env::var("VRRP_SCENARIOS").ok();
    let handles: Vec<_> = scenarios()
        .into_iter()
        .enumerate()
        .filter(|(_, (name, _))| {
            only.as_deref()
                .is_none_or(|words| words.split(',').any(|word| name.contains(word)))
        })
        .map(|(index, (name, scenario))| {
            let prefix = format!("vr{process}-{index}");
            let subnet = 10 + index as u8;
            let handle = thread::spawn(move || -> Result<()> {
                let segment = Segment::build(&prefix, subnet)?;
                scenario(&segment, name)?;
                if std::env::var_os("VRRP_KEEP_LOGS").is_none() {
                    let _ = fs::remove_dir_all(&segment.directory);
                }
                Ok(())
            });
            (name, handle)
        })
        .collect();
    let mut failures = Vec::new();
    for (name, handle) in handles {
        match handle.join() {
            Ok(Ok(())) => println!("{name}: ok"),
            Ok(Err(error)) => failures.push(format!("{name}: {error:?}")),
            Err(_) => failures.push(format!("{name}: panicked")),
        }
    }
    println!(
        "the VRRP interop scenarios took {:.1} s",
        started.elapsed().as_secs_f64()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// A UDP echo server on port 7 of `namespace`, until `stop`.
fn echo(namespace: &Namespace, stop: &std::sync::atomic::AtomicBool) -> Result<()> {
    namespace.enter()?;
    let socket = UdpSocket::bind("0.0.0.0:7")?;
    socket.set_read_timeout(Some(Duration::from_millis(50)))?;
    let mut buffer = [0u8; 64];
    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
        if let Ok((len, peer)) = socket.recv_from(&mut buffer) {
            let _ = socket.send_to(&buffer[..len], peer);
        }
    }
    Ok(())
}

/// The client's view of a failover: it probes the address every 10 ms
/// while `fail` runs, and returns the longest time without an answer.
fn outage(
    client: &Namespace,
    address: IpAddr,
    fail: impl FnOnce() -> Result<()>,
) -> Result<Duration> {
    let stop = std::sync::atomic::AtomicBool::new(false);
    thread::scope(|scope| {
        let prober = scope.spawn(|| -> Result<Duration> {
            client.enter()?;
            // Not connected: the server answers from its interface's own
            // address, not from the virtual one.
            let socket = UdpSocket::bind("0.0.0.0:0")?;
            socket.set_read_timeout(Some(Duration::from_millis(10)))?;
            let mut answers = 0u64;
            let mut last_answer = Instant::now();
            let mut longest = Duration::ZERO;
            let mut buffer = [0u8; 8];
            let mut sequence = 0u64;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                sequence += 1;
                let _ = socket.send_to(&sequence.to_be_bytes(), (address, 7));
                let sent = Instant::now();
                // Answers to earlier probes count too.
                while let Ok(len) = socket.recv(&mut buffer) {
                    if len == 8 {
                        let now = Instant::now();
                        longest = longest.max(now - last_answer);
                        last_answer = now;
                        answers += 1;
                    }
                    if sent.elapsed() >= Duration::from_millis(10) {
                        break;
                    }
                }
                thread::sleep(Duration::from_millis(10).saturating_sub(sent.elapsed()));
            }
            ensure!(answers > 0, "no answer at all");
            // An outage still running at the end counts.
            Ok(longest.max(last_answer.elapsed()))
        });
        let failed = fail();
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let longest = prober.join().expect("the prober does not panic")?;
        failed.map(|()| longest)
    })
}

/// The benchmark of the issue: the outage a client sees when the master's
/// link fails, for a pulse pair and a keepalived pair with the same
/// settings. Prints; asserts nothing about the times.
#[test]
#[ignore = "benchmark: cargo test -p pulse --test vrrp -- --ignored --nocapture failover_outage"]
fn failover_outage() {
    if let Some(why) = missing_prerequisite() {
        eprintln!("skipping the failover benchmark: {why}");
        return;
    }
    let process = std::process::id();
    let settings = [(2u8, 1.0f64), (3, 0.1)];
    let kinds = [Kind::Pulse, Kind::Keepalived];
    let handles: Vec<_> = settings
        .iter()
        .flat_map(|setting| kinds.iter().map(move |kind| (*setting, *kind)))
        .enumerate()
        .map(|(index, ((version, interval), kind))| {
            let prefix = format!("vb{process}-{index}");
            let subnet = 40 + index as u8;
            let handle = thread::spawn(move || -> Result<Duration> {
                let segment = Segment::build(&prefix, subnet)?;
                let address = segment.ipv4(100);
                let instance = |priority| Instance {
                    version,
                    interval,
                    ..Instance::v3(priority, format!("{address}/24"))
                };
                let (master, backup) = (instance(150), instance(100));
                let directory = &segment.directory;
                let _backup_daemon = Daemon::start(kind, &segment.b, directory, "backup", &backup)?;
                let _master_daemon = Daemon::start(kind, &segment.a, directory, "master", &master)?;
                wait_master(
                    "the master takes the address",
                    bound(backup.master_down_interval()),
                    Duration::from_secs_f64(interval) * 2,
                    &segment.a,
                    &segment.b,
                    address,
                )?;
                let stop = std::sync::atomic::AtomicBool::new(false);
                let result = thread::scope(|scope| {
                    let servers =
                        [&segment.a, &segment.b].map(|host| scope.spawn(|| echo(host, &stop)));
                    let result = outage(&segment.c, address, || {
                        resolve(&segment.c, address)?;
                        thread::sleep(Duration::from_millis(500));
                        // The master's machine is cut off.
                        segment.a.ip("link set eth0 down\n")?;
                        wait_for(
                            "the backup takes over",
                            bound(backup.master_down_interval()),
                            || segment.b.holds(address),
                        )?;
                        // Until the client has had answers for a while.
                        thread::sleep(Duration::from_secs(1));
                        Ok(())
                    });
                    stop.store(true, std::sync::atomic::Ordering::Relaxed);
                    for server in servers {
                        server.join().expect("the server does not panic")?;
                    }
                    result
                });
                let _ = fs::remove_dir_all(directory);
                result
            });
            ((version, interval, kind), handle)
        })
        .collect();
    let mut results = Vec::new();
    for ((version, interval, kind), handle) in handles {
        let outage = handle
            .join()
            .expect("the scenario does not panic")
            .unwrap_or_else(|error| panic!("v{version} {interval} s, {kind}: {error:?}"));
        results.push(((version, interval), kind, outage));
    }
    for (version, interval) in settings {
        let of = |wanted: Kind| {
            results
                .iter()
                .find(|(setting, kind, _)| *setting == (version, interval) && *kind == wanted)
                .map(|(_, _, outage)| *outage)
                .expect("measured")
        };
        let (pulse, keepalived) = (of(Kind::Pulse), of(Kind::Keepalived));
        println!(
            "VRRP v{version}, advert_int {interval} s, master's link down: client outage \
             pulse pair {:.0} ms, keepalived pair {:.0} ms, ratio pulse/keepalived {:.2}",
            pulse.as_secs_f64() * 1000.0,
            keepalived.as_secs_f64() * 1000.0,
            pulse.as_secs_f64() / keepalived.as_secs_f64()
        );
    }
}
