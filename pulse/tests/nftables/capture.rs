//! Re-captures `tests/captured/nftables/*.txt` on this machine (root,
//! keepalived 2.2.7, strace and nft installed):
//!
//! ```text
//! cargo test -p pulse --test nftables -- --ignored --nocapture capture
//! NFTABLES_CAPTURE=vmac cargo test -p pulse --test nftables -- --ignored --nocapture capture
//! ```
//!
//! Each [`Scenario`] runs keepalived in a network namespace of its own
//! (a veth pair, the router's addresses on one end) under strace, which
//! hex-dumps every datagram keepalived writes; the datagrams it sent on
//! its NETLINK_NETFILTER socket are its requests. keepalived reads only the
//! first acknowledgement of a batch (libmnl's `mnl_cb_run` stops at the
//! first NLMSG_ERROR, success or not) and leaves the others queued for the
//! next exchange, so what it reads is not the kernel's answer to what it
//! sent: the same requests are sent again, byte for byte and in the same
//! order, from a socket of this test in a fresh namespace, and everything
//! the kernel answers each of them is recorded.

use std::fmt::Write as _;
use std::fs;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
use labkit::Namespace;
use labkit::captured::hex;
use netlink_sys::{Socket, SocketAddr, protocols::NETLINK_NETFILTER};

use super::CAPTURE_DIRECTORY;

/// What the capture waits for before the next step.
#[derive(Debug, Clone, Copy)]
enum Step {
    /// The family's `vips` set shows the address.
    Dropped(&'static str, &'static str),
    /// It no longer does.
    Accepted(&'static str, &'static str),
    /// keepalived has logged this line (for what `nft` cannot show: a
    /// second master of an address already dropped).
    Logged(&'static str),
    /// Writes a non-zero value to the tracked file: its instances go to
    /// FAULT (`weight 0`), remove their addresses and take them out of
    /// the set.
    Fault(&'static str),
    /// SIGTERM to keepalived, then wait for it to exit: the remaining
    /// masters' addresses come out of the sets and the tables go.
    Terminate,
}

#[derive(Debug)]
struct Scenario {
    /// The fixture's file name, without `.txt`.
    name: &'static str,
    description: &'static str,
    /// `nft` commands run before keepalived starts (and before the replay).
    before: &'static [&'static str],
    configuration: &'static str,
    steps: &'static [Step],
}

/// The instances become master one after the other, never in the same
/// timer tick: `state BACKUP` and different advert intervals give master
/// down intervals of about 3 and 6 seconds, so the batches' order does
/// not depend on scheduling.
const SCENARIOS: &[Scenario] = &[
    Scenario {
        name: "drop_and_accept",
        description: "an IPv4 master, then an IPv6 master, without accept mode; the IPv4 one \
                      goes to FAULT (tracked file); keepalived stops",
        before: &[],
        configuration: "\
global_defs {
    router_id capture
}
vrrp_track_file fault_v4 {
    file @DIRECTORY@/fault_v4
}
vrrp_instance v4 {
    state BACKUP
    interface veth0
    virtual_router_id 51
    priority 200
    advert_int 1
    version 3
    no_accept
    track_file {
        fault_v4 weight 0
    }
    virtual_ipaddress {
        192.0.2.100/24
    }
}
vrrp_instance v6 {
    state BACKUP
    interface veth0
    virtual_router_id 52
    priority 200
    advert_int 2
    version 3
    no_accept
    virtual_ipaddress {
        2001:db8::100/64
    }
}
",
        steps: &[
            Step::Dropped("ip", "192.0.2.100"),
            Step::Dropped("ip6", "2001:db8::100"),
            Step::Fault("fault_v4"),
            Step::Accepted("ip", "192.0.2.100"),
            Step::Terminate,
        ],
    },
    Scenario {
        name: "leftover_table",
        description: "an IPv4 master without accept mode, with an `ip keepalived` table left \
                      over (as by a daemon that did not stop cleanly); keepalived stops",
        before: &["add table ip keepalived"],
        configuration: "\
global_defs {
    router_id capture
}
vrrp_instance v4 {
    state BACKUP
    interface veth0
    virtual_router_id 51
    priority 200
    advert_int 1
    version 3
    no_accept
    virtual_ipaddress {
        192.0.2.100/24
    }
}
",
        steps: &[Step::Dropped("ip", "192.0.2.100"), Step::Terminate],
    },
    Scenario {
        name: "shared_address",
        description: "two IPv4 masters of the same address without accept mode: keepalived \
                      adds the element again for the second (the kernel refuses it) and \
                      deletes it twice when it stops",
        before: &[],
        configuration: "\
global_defs {
    router_id capture
}
vrrp_instance first {
    state BACKUP
    interface veth0
    virtual_router_id 51
    priority 200
    advert_int 1
    version 3
    no_accept
    virtual_ipaddress {
        192.0.2.100/24
    }
}
vrrp_instance second {
    state BACKUP
    interface veth0
    virtual_router_id 53
    priority 200
    advert_int 2
    version 3
    no_accept
    virtual_ipaddress {
        192.0.2.100/24
    }
}
",
        steps: &[
            Step::Dropped("ip", "192.0.2.100"),
            Step::Logged("(second) setting firewall drop rule"),
            Step::Terminate,
        ],
    },
    Scenario {
        name: "vmac",
        description: "an IPv4 instance with use_vmac (its macvlan's IGMP rule and the \
                      vmac_map at start), then master without accept mode; keepalived stops",
        before: &[],
        configuration: "\
global_defs {
    router_id capture
}
vrrp_instance v4 {
    state BACKUP
    interface veth0
    virtual_router_id 51
    priority 200
    advert_int 1
    version 3
    no_accept
    use_vmac
    virtual_ipaddress {
        192.0.2.100/24
    }
}
",
        steps: &[Step::Dropped("ip", "192.0.2.100"), Step::Terminate],
    },
    Scenario {
        name: "table_settings",
        description: "an IPv4 and an IPv6 master without accept mode, with keepalived's table \
                      settings: another table name, another chain priority, counters in the \
                      rules; keepalived stops",
        before: &[],
        configuration: "\
global_defs {
    router_id capture
    nftables fulcrum_test
    nftables_priority -5
    nftables_counters
}
vrrp_instance v4 {
    state BACKUP
    interface veth0
    virtual_router_id 51
    priority 200
    advert_int 1
    version 3
    no_accept
    virtual_ipaddress {
        192.0.2.100/24
    }
}
vrrp_instance v6 {
    state BACKUP
    interface veth0
    virtual_router_id 52
    priority 200
    advert_int 2
    version 3
    no_accept
    virtual_ipaddress {
        2001:db8::100/64
    }
}
",
        steps: &[
            Step::Dropped("ip", "192.0.2.100"),
            Step::Dropped("ip6", "2001:db8::100"),
            Step::Terminate,
        ],
    },
    Scenario {
        name: "vmac_ipv6",
        description: "an IPv6 instance with use_vmac (its macvlan's MLD and router \
                      solicitation rules, the vmac_map and vmac_set at start), then master \
                      without accept mode; keepalived stops",
        before: &[],
        configuration: "\
global_defs {
    router_id capture
}
vrrp_instance v6 {
    state BACKUP
    interface veth0
    virtual_router_id 52
    priority 200
    advert_int 1
    version 3
    no_accept
    use_vmac
    virtual_ipaddress {
        2001:db8::100/64
    }
}
",
        steps: &[Step::Dropped("ip6", "2001:db8::100"), Step::Terminate],
    },
];

const STEP_BOUND: Duration = Duration::from_secs(30);

#[test]
#[ignore = "re-captures the fixtures: cargo test -p pulse --test nftables -- --ignored --nocapture capture"]
fn capture() {
    for tool in ["keepalived", "strace", "nft"] {
        let found = Command::new(tool)
            .arg("--version")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|status| status.success());
        assert!(found, "{tool} is needed to capture");
    }
    // SAFETY: geteuid has no preconditions.
    assert_eq!(unsafe { libc::geteuid() }, 0, "capturing needs root");
    // NFTABLES_CAPTURE=NAME captures that scenario only.
    let only = std::env::var("NFTABLES_CAPTURE").ok();
    for scenario in SCENARIOS {
        if only.as_ref().is_some_and(|only| only != scenario.name) {
            continue;
        }
        let text = capture_scenario(scenario)
            .unwrap_or_else(|error| panic!("{}: {error:#}", scenario.name));
        let path = Path::new(CAPTURE_DIRECTORY).join(format!("{}.txt", scenario.name));
        fs::write(&path, text).unwrap_or_else(|error| panic!("{}: {error}", path.display()));
        println!("wrote {}", path.display());
    }
}

fn capture_scenario(scenario: &Scenario) -> Result<String> {
    let directory = std::env::temp_dir().join(format!(
        "pulse-nftables-capture-{}-{}",
        scenario.name,
        std::process::id()
    ));
    fs::create_dir_all(&directory)?;
    let requests = run_keepalived(scenario, &directory)?;
    let exchanges = replay(scenario, &requests)?;
    let mut text = String::new();
    let kernel = fs::read_to_string("/proc/sys/kernel/osrelease")?;
    let keepalived = Command::new("keepalived").arg("--version").output()?;
    let keepalived = String::from_utf8_lossy(&keepalived.stderr);
    let keepalived = keepalived.lines().next().unwrap_or("keepalived");
    let _ = writeln!(
        text,
        "# Captured by `cargo test -p pulse --test nftables -- --ignored --nocapture capture`\n\
         # (pulse/tests/nftables/capture.rs) with {keepalived} on Linux {}.\n\
         # scenario: {}\n\
         # requests: the netlink messages keepalived sent on its NETLINK_NETFILTER socket\n\
         # (strace -f -xx -e write=all), one line each, in order; replies: what the kernel\n\
         # answers those same bytes, sent again in that order from a fresh namespace\n\
         # (keepalived reads only the first acknowledgement of a batch).\n\
         # `before` commands ran with nft before keepalived started (and before the replay).",
        kernel.trim(),
        scenario.description
    );
    for command in scenario.before {
        let _ = writeln!(text, "# before: nft {command}");
    }
    for line in scenario.configuration.lines() {
        let _ = writeln!(text, "# keepalived.conf: {line}");
    }
    for (request, replies) in exchanges {
        for message in split_messages(&request)? {
            let _ = writeln!(text, "request {}", hex(message));
        }
        for reply in replies {
            for message in split_messages(&reply)? {
                let _ = writeln!(text, "reply {}", hex(message));
            }
        }
    }
    let _ = fs::remove_dir_all(&directory);
    Ok(text)
}

/// A namespace as the scenarios need it: `veth0` (the router's end, with
/// 192.0.2.1/24 and 2001:db8::1/64) and its peer up, DAD off so that the
/// IPv6 addresses are usable at once.
fn namespace(name: &str) -> Result<Namespace> {
    let namespace = Namespace::create(name)?;
    namespace.sysctl("net/ipv6/conf/all/accept_dad", "0")?;
    namespace.sysctl("net/ipv6/conf/default/accept_dad", "0")?;
    namespace.ip("link add veth0 type veth peer name veth1\n\
         link set veth0 up\n\
         link set veth1 up\n\
         addr add 192.0.2.1/24 dev veth0\n\
         addr add 2001:db8::1/64 dev veth0\n")?;
    Ok(namespace)
}

fn nft(namespace: &Namespace, command: &str) -> Result<String> {
    let output = namespace
        .command("nft")
        .args(command.split_whitespace())
        .output()
        .context("cannot run nft")?;
    ensure!(
        output.status.success(),
        "nft {command}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

/// Whether the family's `vips` set holds `address` (no set yet: no).
fn dropped(namespace: &Namespace, family: &str, address: &str) -> bool {
    // The family's ruleset, whatever the table's name (`nftables NAME`):
    // the address is in it only as an element of the `vips` set.
    nft(namespace, &format!("list ruleset {family}")).is_ok_and(|listing| listing.contains(address))
}

fn wait_for(what: &str, mut condition: impl FnMut() -> Result<bool>) -> Result<()> {
    let started = Instant::now();
    while !condition()? {
        if started.elapsed() > STEP_BOUND {
            bail!("{what}: not within {STEP_BOUND:?}");
        }
        thread::sleep(Duration::from_millis(50));
    }
    Ok(())
}

/// Runs the scenario under strace; keepalived's NETLINK_NETFILTER
/// datagrams, in order.
fn run_keepalived(scenario: &Scenario, directory: &Path) -> Result<Vec<Vec<u8>>> {
    let namespace = namespace(&format!("fwcap-{}", std::process::id()))?;
    for command in scenario.before {
        nft(&namespace, command)?;
    }
    let configuration = directory.join("keepalived.conf");
    fs::write(
        &configuration,
        scenario
            .configuration
            .replace("@DIRECTORY@", &directory.display().to_string()),
    )?;
    for step in scenario.steps {
        if let Step::Fault(file) = step {
            fs::write(directory.join(file), "0\n")?;
        }
    }
    let trace = directory.join("strace.txt");
    let log = directory.join("keepalived.log");
    let pid_file = directory.join("keepalived.pid");
    let mut child = namespace
        .command("strace")
        .args(["-f", "-xx", "-qq", "-s", "65536"])
        .args(["-e", "trace=socket,close,sendto,sendmsg"])
        .args(["-e", "write=all", "-o"])
        .arg(&trace)
        .args(["keepalived", "-n", "-l", "-D", "-P", "-f"])
        .arg(&configuration)
        .arg("-p")
        .arg(&pid_file)
        .arg("-r")
        .arg(directory.join("vrrp.pid"))
        .stdout(Stdio::null())
        // keepalived -l logs to standard error.
        .stderr(fs::File::create(&log)?)
        .spawn()
        .context("cannot start keepalived under strace")?;
    let result = steps(scenario, &namespace, directory, &log, &pid_file, &mut child);
    if result.is_err() {
        let _ = stop(&pid_file, &mut child);
    }
    result.with_context(|| {
        format!(
            "keepalived's log:\n{}",
            fs::read_to_string(&log).unwrap_or_default()
        )
    })?;
    parse_trace(&fs::read_to_string(&trace)?)
}

fn steps(
    scenario: &Scenario,
    namespace: &Namespace,
    directory: &Path,
    log: &Path,
    pid_file: &Path,
    child: &mut Child,
) -> Result<()> {
    for step in scenario.steps {
        match *step {
            Step::Dropped(family, address) => wait_for(&format!("{address} dropped"), || {
                Ok(dropped(namespace, family, address))
            })?,
            Step::Accepted(family, address) => wait_for(&format!("{address} accepted"), || {
                Ok(!dropped(namespace, family, address))
            })?,
            Step::Logged(line) => wait_for(&format!("keepalived logs {line:?}"), || {
                Ok(fs::read_to_string(log)?.contains(line))
            })?,
            Step::Fault(file) => fs::write(directory.join(file), "1\n")?,
            Step::Terminate => stop(pid_file, child)?,
        }
    }
    Ok(())
}

/// SIGTERM to the keepalived this capture started (its parent process,
/// from its pid file), and waits for strace, which exits with it.
fn stop(pid_file: &Path, child: &mut Child) -> Result<()> {
    let mut pid = None;
    wait_for("keepalived's pid file", || {
        pid = fs::read_to_string(pid_file)
            .ok()
            .and_then(|text| text.trim().parse::<libc::pid_t>().ok());
        Ok(pid.is_some())
    })?;
    let pid = pid.expect("waited for");
    // SAFETY: kill(2) on the process this capture started.
    if unsafe { libc::kill(pid, libc::SIGTERM) } != 0 {
        return Err(std::io::Error::last_os_error()).context("cannot stop keepalived");
    }
    let started = Instant::now();
    while child.try_wait()?.is_none() {
        if started.elapsed() > STEP_BOUND {
            let _ = child.kill();
            bail!("keepalived did not stop within {STEP_BOUND:?}");
        }
        thread::sleep(Duration::from_millis(50));
    }
    Ok(())
}

/// The datagrams written to NETLINK_NETFILTER sockets in an strace log of
/// `-f -xx -e trace=socket,close,sendto,sendmsg -e write=all`: a
/// `socket(AF_NETLINK, SOCK_RAW, NETLINK_NETFILTER) = FD` line marks the
/// descriptor of that process until it is closed, and the hex dump after a
/// `sendto`/`sendmsg` on it is one datagram.
fn parse_trace(trace: &str) -> Result<Vec<Vec<u8>>> {
    let mut netfilter: Vec<(String, String)> = Vec::new();
    // Calls another process interrupted: strace finishes them on a
    // `<... sendto resumed>` line, the dump after it.
    let mut unfinished: Vec<(String, String)> = Vec::new();
    let mut datagrams = Vec::new();
    let mut current: Option<Vec<u8>> = None;
    for line in trace.lines() {
        if let Some(dump) = line.strip_prefix(" | ") {
            if let Some(datagram) = current.as_mut() {
                // " | 00000  14 00 ...  ascii |": an offset, sixteen bytes
                // in 49 columns, their characters.
                let bytes = dump
                    .get(7..56)
                    .with_context(|| format!("short dump line {line:?}"))?;
                for byte in bytes.split_whitespace() {
                    datagram.push(u8::from_str_radix(byte, 16).with_context(|| {
                        format!("dump line {line:?}: {byte:?} is not a hex byte")
                    })?);
                }
            }
            continue;
        }
        if let Some(datagram) = current.take() {
            datagrams.push(datagram);
        }
        let Some((pid, call)) = line.split_once(' ') else {
            continue;
        };
        let pid = pid.to_owned();
        let descriptor_of = |call: &str, name: &str| {
            call.strip_prefix(name)
                .and_then(|rest| rest.split_once(','))
                .map(|(descriptor, _)| descriptor.to_owned())
        };
        if call.starts_with("socket(AF_NETLINK, SOCK_RAW, NETLINK_NETFILTER)") {
            if let Some((_, descriptor)) = call.rsplit_once(" = ") {
                netfilter.push((pid, descriptor.trim().to_owned()));
            }
        } else if let Some(descriptor) = call
            .strip_prefix("close(")
            .and_then(|rest| rest.split_once(')'))
            .map(|(descriptor, _)| descriptor.to_owned())
        {
            netfilter.retain(|entry| *entry != (pid.clone(), descriptor.clone()));
        } else if let Some(descriptor) =
            descriptor_of(call, "sendto(").or_else(|| descriptor_of(call, "sendmsg("))
        {
            let entry = (pid, descriptor);
            if call.ends_with("<unfinished ...>") {
                unfinished.push(entry);
            } else if netfilter.contains(&entry) {
                current = Some(Vec::new());
            }
        } else if call.starts_with("<... sendto resumed>")
            || call.starts_with("<... sendmsg resumed>")
        {
            if let Some(position) = unfinished.iter().position(|(owner, _)| *owner == pid) {
                let entry = unfinished.remove(position);
                if netfilter.contains(&entry) {
                    current = Some(Vec::new());
                }
            }
        }
    }
    if let Some(datagram) = current.take() {
        datagrams.push(datagram);
    }
    ensure!(
        !datagrams.is_empty(),
        "keepalived sent nothing on a NETLINK_NETFILTER socket"
    );
    Ok(datagrams)
}

/// A datagram keepalived sent, and the kernel's answers to it (each a
/// datagram).
type Exchange = (Vec<u8>, Vec<Vec<u8>>);

/// Sends `requests` again from a fresh namespace; each with everything the
/// kernel answered it. nfnetlink handles a datagram within the sender's
/// sendmsg (batches included), so the answers are queued when `send`
/// returns: read until the socket has no more.
fn replay(scenario: &Scenario, requests: &[Vec<u8>]) -> Result<Vec<Exchange>> {
    let namespace = namespace(&format!("fwreplay-{}", std::process::id()))?;
    for command in scenario.before {
        nft(&namespace, command)?;
    }
    namespace.run(|| -> Result<Vec<Exchange>> {
        let mut socket = Socket::new(NETLINK_NETFILTER).context("NETLINK_NETFILTER socket")?;
        socket.bind_auto()?;
        socket.set_non_blocking(true)?;
        let kernel = SocketAddr::new(0, 0);
        let mut exchanges = Vec::new();
        for request in requests {
            let sent = socket.send_to(request, &kernel, 0)?;
            ensure!(
                sent == request.len(),
                "sent {sent} of {} bytes",
                request.len()
            );
            let mut replies = Vec::new();
            loop {
                match socket.recv_from_full() {
                    Ok((reply, _)) => replies.push(reply),
                    Err(error) if error.kind() == std::io::ErrorKind::WouldBlock => break,
                    Err(error) => return Err(error).context("reading the kernel's answers"),
                }
            }
            exchanges.push((request.clone(), replies));
        }
        Ok(exchanges)
    })?
}

/// The netlink messages of a datagram.
fn split_messages(datagram: &[u8]) -> Result<Vec<&[u8]>> {
    let mut messages = Vec::new();
    let mut rest = datagram;
    while !rest.is_empty() {
        ensure!(
            rest.len() >= 16,
            "{} bytes left, shorter than nlmsghdr",
            rest.len()
        );
        let length = u32::from_ne_bytes(rest[0..4].try_into().expect("4 bytes")) as usize;
        ensure!(
            (16..=rest.len()).contains(&length),
            "message length {length} with {} bytes left",
            rest.len()
        );
        messages.push(&rest[..length]);
        rest = &rest[length.next_multiple_of(4).min(rest.len())..];
    }
    Ok(messages)
}
