//! BFD_CHECK between network namespaces: nanny against keepalived's BFD
//! process, and nanny against nanny. Each test has two namespaces joined
//! by a veth pair (10.78.0.1, nanny, and 10.78.0.2, the peer); sessions
//! run at 100 ms with a multiplier of 3 (detection time 300 ms).
//!
//! Needs root (network namespaces); keepalived for the first test. Both
//! skip with a message otherwise.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

const NANNY_ADDRESS: &str = "10.78.0.1";
const PEER_ADDRESS: &str = "10.78.0.2";
const NANNY_ADDRESS_V6: &str = "fd78::1";
const PEER_ADDRESS_V6: &str = "fd78::2";
/// Far more than any step needs (a handshake at the idle 1 s rate takes
/// 1-2 s): only a hang fails on it.
const PATIENCE: Duration = Duration::from_secs(20);

/// Two namespaces joined by a veth pair, deleted on drop.
struct Link {
    nanny: String,
    peer: String,
    directory: PathBuf,
}

impl Link {
    /// `None` where namespaces cannot be made (not root, no `ip`).
    fn new(tag: &str) -> Option<Link> {
        let id = std::process::id();
        let link = Link {
            nanny: format!("nanny-bfd-{tag}-{id}"),
            peer: format!("nanny-bfd-{tag}-{id}-peer"),
            directory: std::env::temp_dir().join(format!("nanny-bfd-{tag}-{id}")),
        };
        let added = |name: &str| {
            Command::new("ip")
                .args(["netns", "add", name])
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|status| status.success())
        };
        if !added(&link.nanny) {
            return None;
        }
        if !added(&link.peer) {
            // Dropping `link` deletes the first one.
            return None;
        }
        let veth = format!("nb{tag}{}", id % 100_000);
        let commands = [
            format!(
                "ip -n {} link add {veth}a type veth peer name {veth}b netns {}",
                link.nanny, link.peer
            ),
            format!("ip -n {} link set lo up", link.nanny),
            format!("ip -n {} link set lo up", link.peer),
            format!(
                "ip -n {} addr add {NANNY_ADDRESS}/24 dev {veth}a",
                link.nanny
            ),
            format!("ip -n {} addr add {PEER_ADDRESS}/24 dev {veth}b", link.peer),
            // No duplicate address detection: usable at once.
            format!(
                "ip -n {} addr add {NANNY_ADDRESS_V6}/64 dev {veth}a nodad",
                link.nanny
            ),
            format!(
                "ip -n {} addr add {PEER_ADDRESS_V6}/64 dev {veth}b nodad",
                link.peer
            ),
            format!("ip -n {} link set {veth}a up", link.nanny),
            format!("ip -n {} link set {veth}b up", link.peer),
        ];
        for command in commands {
            let status = Command::new("sh").args(["-c", &command]).status().unwrap();
            assert!(status.success(), "{command}");
        }
        std::fs::create_dir_all(&link.directory).unwrap();
        Some(link)
    }

    fn write(&self, name: &str, text: &str) -> PathBuf {
        let path = self.directory.join(name);
        std::fs::write(&path, text).unwrap();
        path
    }
}

impl Drop for Link {
    fn drop(&mut self) {
        for name in [&self.nanny, &self.peer] {
            let _ = Command::new("ip")
                .args(["netns", "del", name])
                .stderr(Stdio::null())
                .status();
        }
        let _ = std::fs::remove_dir_all(&self.directory);
    }
}

/// A configuration with a BFD session from `local` to `neighbor`, and a
/// real server (the neighbor, port 80) whose only checker is that session.
fn configuration(local: &str, neighbor: &str) -> String {
    configuration_with(local, neighbor, "", &["192.0.2.1"])
}

/// The same, with more lines in the `bfd_instance` and the real server
/// under each of `virtual_servers`.
fn configuration_with(
    local: &str,
    neighbor: &str,
    bfd_lines: &str,
    virtual_servers: &[&str],
) -> String {
    let mut text = format!(
        "bfd_instance peer {{
    neighbor_ip {neighbor}
    source_ip {local}
    min_rx 100
    min_tx 100
    multiplier 3
    {bfd_lines}
}}
"
    );
    for virtual_server in virtual_servers {
        text.push_str(&format!(
            "virtual_server {virtual_server} 80 {{
    protocol TCP
    real_server {neighbor} 80 {{
        BFD_CHECK {{
            name peer
        }}
    }}
}}
"
        ));
    }
    text
}

/// nanny running in a namespace, its JSON lines read on a thread.
struct Nanny {
    child: Child,
    lines: mpsc::Receiver<(Instant, serde_json::Value)>,
}

impl Nanny {
    fn start(namespace: &str, configuration: &Path) -> Nanny {
        let mut child = Command::new("ip")
            .args(["netns", "exec", namespace])
            .arg(env!("CARGO_BIN_EXE_nanny"))
            .arg("-f")
            .arg(configuration)
            .arg("--json")
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (sender, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { return };
                let value: serde_json::Value = serde_json::from_str(&line).unwrap();
                if sender.send((Instant::now(), value)).is_err() {
                    return;
                }
            }
        });
        Nanny { child, lines }
    }

    /// The next state change, and when it was read.
    fn next(&self) -> (Instant, serde_json::Value) {
        self.lines
            .recv_timeout(PATIENCE)
            .expect("a state change from nanny")
    }

    /// nanny's reload signal.
    fn reload(&self) {
        // SAFETY: kill takes plain integers.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGHUP) };
    }

    fn kill(&mut self) {
        // `ip netns exec` executes nanny in its own place: this is nanny.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Nanny {
    fn drop(&mut self) {
        self.kill();
    }
}

fn assert_change(change: &serde_json::Value, up: bool, reason: &str) {
    assert_eq!(
        change["real_server"],
        format!("{PEER_ADDRESS}:80"),
        "{change}"
    );
    assert_change_of(change, up, reason);
}

fn assert_change_of(change: &serde_json::Value, up: bool, reason: &str) {
    assert_eq!(change["up"], up, "{change}");
    assert_eq!(change["reason"], reason, "{change}");
}

/// keepalived with only a `bfd_instance`: it starts its BFD process alone
/// (no VRRP instance, no virtual server), with pid files of this test.
struct Keepalived {
    child: Child,
    bfd_pid_file: PathBuf,
}

impl Keepalived {
    fn start(link: &Link, configuration: &Path, run: usize) -> Keepalived {
        let file = |name: &str| link.directory.join(format!("{name}-{run}.pid"));
        let bfd_pid_file = file("bfd");
        let child = Command::new("ip")
            .args(["netns", "exec", &link.peer, "keepalived"])
            .args(["--dont-fork", "--log-console", "--log-detail", "-f"])
            .arg(configuration)
            .arg("-p")
            .arg(file("keepalived"))
            .arg("-b")
            .arg(&bfd_pid_file)
            .arg("-r")
            .arg(file("vrrp"))
            .arg("-c")
            .arg(file("checkers"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        Keepalived {
            child,
            bfd_pid_file,
        }
    }

    /// SIGKILL to the BFD process and to its parent: no AdminDown, no
    /// goodbye, the packets just stop.
    fn kill(&mut self) {
        let started = Instant::now();
        let bfd = loop {
            if let Some(pid) = std::fs::read_to_string(&self.bfd_pid_file)
                .ok()
                .and_then(|text| text.trim().parse::<i32>().ok())
            {
                break Some(pid);
            }
            if started.elapsed() > PATIENCE {
                break None;
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let _ = self.child.kill();
        if let Some(pid) = bfd {
            // SAFETY: kill takes plain integers.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
        let _ = self.child.wait();
    }
}

impl Drop for Keepalived {
    fn drop(&mut self) {
        self.kill();
    }
}

#[test]
fn against_keepalived_up_down_within_detection_time_and_up_again() {
    if !labkit::installed("keepalived") {
        eprintln!("skipped: keepalived is not installed");
        return;
    }
    let Some(link) = Link::new("k") else {
        eprintln!("skipped: cannot make network namespaces here (root and ip needed)");
        return;
    };
    let nanny_configuration = link.write("nanny.conf", &configuration(NANNY_ADDRESS, PEER_ADDRESS));
    let peer_configuration = link.write(
        "keepalived.conf",
        &configuration(PEER_ADDRESS, NANNY_ADDRESS)
            .split("virtual_server")
            .next()
            .unwrap()
            .replace("bfd_instance peer", "bfd_instance nanny"),
    );
    let nanny = Nanny::start(&link.nanny, &nanny_configuration);
    // As keepalived's checker: down until the session is Up.
    let (_, initial) = nanny.next();
    assert_change(
        &initial,
        false,
        &format!("BFD_CHECK peer: session to {PEER_ADDRESS} is Down, not Up"),
    );
    assert_eq!(initial["initial"], true);

    let mut keepalived = Keepalived::start(&link, &peer_configuration, 1);
    let started = Instant::now();
    let (up_at, up) = nanny.next();
    assert_change(
        &up,
        true,
        &format!("BFD_CHECK peer: session to {PEER_ADDRESS} up"),
    );
    println!(
        "keepalived started -> nanny reports up: {:.3} s",
        (up_at - started).as_secs_f64()
    );
    // Past the poll sequences, at the 100 ms rate.
    std::thread::sleep(Duration::from_millis(1500));

    let killed = Instant::now();
    keepalived.kill();
    let (down_at, down) = nanny.next();
    assert_change(
        &down,
        false,
        &format!("BFD_CHECK peer: session to {PEER_ADDRESS} down: control detection time expired"),
    );
    let detection = down_at - killed;
    println!(
        "keepalived killed -> nanny reports down: {:.3} s (detection time 0.300 s)",
        detection.as_secs_f64()
    );
    assert!(detection < Duration::from_secs(5), "{detection:?}");

    let _keepalived = Keepalived::start(&link, &peer_configuration, 2);
    let restarted = Instant::now();
    let (up_at, up) = nanny.next();
    assert_change(
        &up,
        true,
        &format!("BFD_CHECK peer: session to {PEER_ADDRESS} up"),
    );
    println!(
        "keepalived restarted -> nanny reports up: {:.3} s",
        (up_at - restarted).as_secs_f64()
    );
}

#[test]
fn against_nanny_up_down_within_detection_time_and_up_again() {
    let Some(link) = Link::new("n") else {
        eprintln!("skipped: cannot make network namespaces here (root and ip needed)");
        return;
    };
    let nanny_configuration = link.write("nanny.conf", &configuration(NANNY_ADDRESS, PEER_ADDRESS));
    let peer_configuration = link.write("peer.conf", &configuration(PEER_ADDRESS, NANNY_ADDRESS));
    let nanny = Nanny::start(&link.nanny, &nanny_configuration);
    let (_, initial) = nanny.next();
    assert_eq!(initial["up"], false, "{initial}");

    let mut peer = Nanny::start(&link.peer, &peer_configuration);
    let started = Instant::now();
    let (up_at, up) = nanny.next();
    assert_change(
        &up,
        true,
        &format!("BFD_CHECK peer: session to {PEER_ADDRESS} up"),
    );
    // The peer sees this side come up too.
    let (_, peer_initial) = peer.next();
    assert_eq!(peer_initial["up"], false, "{peer_initial}");
    let (_, peer_up) = peer.next();
    assert_eq!(peer_up["up"], true, "{peer_up}");
    assert_eq!(peer_up["real_server"], format!("{NANNY_ADDRESS}:80"));
    println!(
        "peer started -> nanny reports up: {:.3} s",
        (up_at - started).as_secs_f64()
    );
    std::thread::sleep(Duration::from_millis(1500));

    let killed = Instant::now();
    peer.kill();
    let (down_at, down) = nanny.next();
    assert_change(
        &down,
        false,
        &format!("BFD_CHECK peer: session to {PEER_ADDRESS} down: control detection time expired"),
    );
    let detection = down_at - killed;
    println!(
        "peer killed -> nanny reports down: {:.3} s (detection time 0.300 s)",
        detection.as_secs_f64()
    );
    assert!(detection < Duration::from_secs(5), "{detection:?}");

    let _peer = Nanny::start(&link.peer, &peer_configuration);
    let restarted = Instant::now();
    let (up_at, up) = nanny.next();
    assert_change(
        &up,
        true,
        &format!("BFD_CHECK peer: session to {PEER_ADDRESS} up"),
    );
    println!(
        "peer restarted -> nanny reports up: {:.3} s",
        (up_at - restarted).as_secs_f64()
    );
}

#[test]
fn gtsm_drops_a_peer_sending_ttl_254_and_reloads_keep_sessions() {
    let Some(link) = Link::new("g") else {
        eprintln!("skipped: cannot make network namespaces here (root and ip needed)");
        return;
    };
    let nanny_configuration = link.write("nanny.conf", &configuration(NANNY_ADDRESS, PEER_ADDRESS));
    // The peer's packets leave with TTL 254, as if they had crossed a
    // router: nanny (max_hops 0) must not take them.
    let peer_configuration = link.write(
        "peer.conf",
        &configuration_with(PEER_ADDRESS, NANNY_ADDRESS, "ttl 254", &["192.0.2.1"]),
    );
    let nanny = Nanny::start(&link.nanny, &nanny_configuration);
    let (_, initial) = nanny.next();
    assert_eq!(initial["up"], false, "{initial}");
    let peer = Nanny::start(&link.peer, &peer_configuration);
    // Long enough for several handshakes at the idle 1 s rate; only a
    // wrong "up" can fail here.
    let silence = Duration::from_secs(3);
    if let Ok((_, change)) = nanny.lines.recv_timeout(silence) {
        panic!("nanny took packets with TTL 254: {change}");
    }
    // The peer hears nanny (TTL 255) and goes Init, never Up.
    let (_, peer_initial) = peer.next();
    assert_eq!(peer_initial["up"], false, "{peer_initial}");
    if let Ok((_, change)) = peer.lines.recv_timeout(Duration::from_millis(100)) {
        panic!("the peer came up without nanny: {change}");
    }

    // One hop allowed: a new session, which comes up. The real server was
    // reported down and stays so until then (no "configuration reloaded"
    // up in between).
    std::fs::write(
        &nanny_configuration,
        configuration_with(NANNY_ADDRESS, PEER_ADDRESS, "max_hops 1", &["192.0.2.1"]),
    )
    .unwrap();
    let reloaded = Instant::now();
    nanny.reload();
    let (up_at, up) = nanny.next();
    assert_change(
        &up,
        true,
        &format!("BFD_CHECK peer: session to {PEER_ADDRESS} up"),
    );
    assert_eq!(up["initial"], false, "{up}");
    println!(
        "reloaded with max_hops 1 -> nanny reports up: {:.3} s",
        (up_at - reloaded).as_secs_f64()
    );

    // The same session under a second virtual server: reported up at
    // once, from the running session, which nothing disturbs.
    std::fs::write(
        &nanny_configuration,
        configuration_with(
            NANNY_ADDRESS,
            PEER_ADDRESS,
            "max_hops 1",
            &["192.0.2.1", "192.0.2.2"],
        ),
    )
    .unwrap();
    nanny.reload();
    let (_, added) = nanny.next();
    assert_change(
        &added,
        true,
        &format!("BFD_CHECK peer: session to {PEER_ADDRESS} up"),
    );
    assert_eq!(added["initial"], true, "{added}");
    assert_eq!(
        added["virtual_servers"],
        serde_json::json!(["192.0.2.2:80 TCP"])
    );
    if let Ok((_, change)) = nanny.lines.recv_timeout(Duration::from_secs(1)) {
        panic!("the reload disturbed the session: {change}");
    }
}

#[test]
fn against_keepalived_over_ipv6() {
    if !labkit::installed("keepalived") {
        eprintln!("skipped: keepalived is not installed");
        return;
    }
    let Some(link) = Link::new("6") else {
        eprintln!("skipped: cannot make network namespaces here (root and ip needed)");
        return;
    };
    let nanny_configuration = link.write(
        "nanny.conf",
        // keepalived (and the configuration model) keep real servers of
        // the virtual server's family only.
        &configuration_with(NANNY_ADDRESS_V6, PEER_ADDRESS_V6, "", &["2001:db8::1"]),
    );
    let peer_configuration = link.write(
        "keepalived.conf",
        configuration(PEER_ADDRESS_V6, NANNY_ADDRESS_V6)
            .split("virtual_server")
            .next()
            .unwrap(),
    );
    let nanny = Nanny::start(&link.nanny, &nanny_configuration);
    let (_, initial) = nanny.next();
    assert_eq!(initial["up"], false, "{initial}");
    let mut keepalived = Keepalived::start(&link, &peer_configuration, 1);
    let (_, up) = nanny.next();
    assert_eq!(up["real_server"], format!("[{PEER_ADDRESS_V6}]:80"), "{up}");
    assert_change_of(
        &up,
        true,
        &format!("BFD_CHECK peer: session to {PEER_ADDRESS_V6} up"),
    );
    std::thread::sleep(Duration::from_millis(1000));
    let killed = Instant::now();
    keepalived.kill();
    let (down_at, down) = nanny.next();
    assert_change_of(
        &down,
        false,
        &format!(
            "BFD_CHECK peer: session to {PEER_ADDRESS_V6} down: control detection time expired"
        ),
    );
    println!(
        "IPv6: keepalived killed -> nanny reports down: {:.3} s (detection time 0.300 s)",
        (down_at - killed).as_secs_f64()
    );
}
