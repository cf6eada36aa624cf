//! pulse with real traffic, in the lab: the pulse binary runs in a
//! director's namespace on a keepalived.conf written here, and a client
//! namespace makes requests to the virtual address; real servers in their
//! own namespaces answer with their names (labkit's topologies).
//!
//! Each test has its own namespaces (its own prefix) and so its own IPVS
//! table: they run in parallel.

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::os::unix::net::UnixDatagram;
use std::path::PathBuf;
use std::process::{Child, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use ipvs::{
    Client, Destination, Forwarding, Protocol, ServiceKey, Tunnel, TunnelChecksum, TunnelKind,
};
use labkit::http::{self, Responder};
use labkit::{DirectReturnTopology, Host, Namespace, NatTopology, Reception};
use pulse::lvs::desired::Table;
use pulse::lvs::plan::read;

/// How long pulse may take to say READY=1, under emulation.
const READY_TIMEOUT: Duration = Duration::from_secs(60);

/// A folder of its own for a test's configuration and notify socket,
/// removed when dropped. Not under the repository: the lab mounts it
/// read-write, and a test must leave nothing there.
pub(crate) struct Scratch {
    path: PathBuf,
}

impl Scratch {
    pub(crate) fn new(name: &str) -> Scratch {
        let path =
            std::env::temp_dir().join(format!("pulse-traffic-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).expect("scratch folder");
        Scratch { path }
    }

    fn file(&self, name: &str) -> PathBuf {
        self.path.join(name)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

/// The pulse binary running in a director's namespace, in the foreground,
/// logging to stderr, with a notify socket of the test's own.
pub(crate) struct Pulse {
    name: String,
    child: Child,
    notify: UnixDatagram,
    log: Arc<Mutex<String>>,
    reader: Option<JoinHandle<()>>,
    configuration: PathBuf,
}

impl Pulse {
    /// Writes `configuration`, starts pulse on it and waits for READY=1;
    /// returns it with the STATUS of that READY.
    pub(crate) fn start(
        name: &str,
        director: &Namespace,
        scratch: &Scratch,
        configuration: &str,
    ) -> (Pulse, String) {
        Pulse::start_with(name, director, scratch, configuration, &[])
    }

    /// [`Pulse::start`] with `arguments` added to pulse's command line.
    pub(crate) fn start_with(
        name: &str,
        director: &Namespace,
        scratch: &Scratch,
        configuration: &str,
        arguments: &[&str],
    ) -> (Pulse, String) {
        let path = scratch.file("keepalived.conf");
        std::fs::write(&path, configuration).expect("configuration written");
        Pulse::run(name, director, scratch, path, arguments)
    }

    /// Starts pulse on the configuration file as it is (a restart).
    fn run(
        name: &str,
        director: &Namespace,
        scratch: &Scratch,
        configuration: PathBuf,
        arguments: &[&str],
    ) -> (Pulse, String) {
        let socket_path = scratch.file("notify");
        let _ = std::fs::remove_file(&socket_path);
        let notify = UnixDatagram::bind(&socket_path).expect("notify socket");
        notify
            .set_read_timeout(Some(Duration::from_millis(200)))
            .unwrap();
        let mut child = director
            .command(env!("CARGO_BIN_EXE_pulse"))
            .arg("-f")
            .arg(&configuration)
            .args(["-n", "-l"])
            // Tests run at once: each pulse needs a pid file of its own.
            .arg("-p")
            .arg(scratch.file("pulse.pid"))
            .args(arguments)
            .env("NOTIFY_SOCKET", &socket_path)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("pulse starts");
        let log = Arc::new(Mutex::new(String::new()));
        let reader = {
            let stderr = child.stderr.take().expect("stderr is piped");
            let log = log.clone();
            thread::spawn(move || {
                for line in BufReader::new(stderr).lines() {
                    let Ok(line) = line else { break };
                    let mut log = log.lock().unwrap();
                    log.push_str(&line);
                    log.push('\n');
                }
            })
        };
        let mut pulse = Pulse {
            name: name.to_owned(),
            child,
            notify,
            log,
            reader: Some(reader),
            configuration,
        };
        let status = pulse.wait_for("READY=1");
        (pulse, status)
    }

    /// Waits for a notification with the line `state`; returns its STATUS.
    pub(crate) fn wait_for(&mut self, state: &str) -> String {
        let start = Instant::now();
        let mut buffer = [0u8; 4096];
        loop {
            match self.notify.recv(&mut buffer) {
                Ok(count) => {
                    let message = String::from_utf8_lossy(&buffer[..count]).into_owned();
                    if message.lines().any(|line| line == state) {
                        return message
                            .lines()
                            .find_map(|line| line.strip_prefix("STATUS="))
                            .unwrap_or_default()
                            .to_owned();
                    }
                }
                Err(error)
                    if matches!(
                        error.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) => {}
                Err(error) => panic!("{}: notify socket: {error}", self.name),
            }
            if let Some(status) = self.child.try_wait().unwrap() {
                // Its whole log: the reader ends at the pipe's end.
                if let Some(reader) = self.reader.take() {
                    let _ = reader.join();
                }
                panic!(
                    "{}: pulse exited ({status}) before {state}; its log:\n{}",
                    self.name,
                    self.log()
                );
            }
            assert!(
                start.elapsed() < READY_TIMEOUT,
                "{}: no {state} from pulse within {READY_TIMEOUT:?}; its log:\n{}",
                self.name,
                self.log()
            );
        }
    }

    /// Rewrites the configuration, sends SIGHUP and waits for the reload to
    /// be applied (RELOADING=1 then READY=1); returns the READY's STATUS.
    fn reload(&mut self, configuration: &str) -> String {
        std::fs::write(&self.configuration, configuration).expect("configuration written");
        self.signal(libc::SIGHUP);
        self.wait_for("RELOADING=1");
        self.wait_for("READY=1")
    }

    fn signal(&self, signal: libc::c_int) {
        // `ip netns exec` execs pulse: the child is pulse itself.
        let pid = self.child.id() as libc::pid_t;
        // SAFETY: signalling our own child, which has not been reaped.
        assert_eq!(unsafe { libc::kill(pid, signal) }, 0, "kill {pid}");
    }

    /// kill -9: no chance to clean up.
    pub(crate) fn kill(mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }

    pub(crate) fn log(&self) -> String {
        self.log.lock().unwrap().clone()
    }
}

impl Drop for Pulse {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if let Some(reader) = self.reader.take() {
            let _ = reader.join();
        }
        if thread::panicking() {
            eprintln!("{}: pulse's log:\n{}", self.name, self.log());
        }
    }
}

/// An IPVS client in `namespace`, to read its table.
pub(crate) fn connect(namespace: &Namespace) -> Client {
    namespace
        .run(Client::connect)
        .expect("thread")
        .expect("IPVS client")
}

fn tcp(address: SocketAddr) -> ServiceKey {
    ServiceKey::Address {
        protocol: Protocol::Tcp,
        address: address.ip(),
        port: address.port(),
    }
}

/// The destinations of `key` as (address, weight), sorted; empty if the
/// service is not there.
fn members(table: &Table, key: &ServiceKey) -> Vec<(SocketAddr, u32)> {
    let mut members: Vec<(SocketAddr, u32)> = table
        .service(key)
        .map(|entry| {
            entry
                .destinations
                .iter()
                .map(|destination| (destination.socket_address(), destination.weight))
                .collect()
        })
        .unwrap_or_default();
    members.sort();
    members
}

/// Polls the table until `done` holds; how long that took. Fails after
/// `limit`.
fn wait_until(
    client: &mut Client,
    what: &str,
    limit: Duration,
    done: impl Fn(&Table) -> bool,
) -> Duration {
    let start = Instant::now();
    loop {
        let table = read(client).expect("the table");
        if done(&table) {
            return start.elapsed();
        }
        assert!(
            start.elapsed() < limit,
            "waited {limit:?} for {what}; the table: {:#?}",
            table.services
        );
        thread::sleep(Duration::from_millis(25));
    }
}

/// The names of the servers that answered `requests` requests to `address`.
fn answering(client: &Namespace, address: SocketAddr, requests: usize) -> BTreeSet<String> {
    (0..requests)
        .map(|_| http::get(client, address).expect("an answer through the virtual address"))
        .collect()
}

fn names(names: &[&str]) -> BTreeSet<String> {
    names.iter().map(|name| (*name).to_owned()).collect()
}

/// Packets received by `interface` of `namespace` (/proc/net/dev, read
/// from a thread in the namespace).
fn received_packets(namespace: &Namespace, interface: &str) -> u64 {
    let text = namespace
        .run(|| std::fs::read_to_string("/proc/thread-self/net/dev"))
        .unwrap()
        .expect("/proc/thread-self/net/dev");
    text.lines()
        .find_map(|line| {
            let (name, counters) = line.split_once(':')?;
            (name.trim() == interface).then(|| {
                counters
                    .split_whitespace()
                    .nth(1)
                    .expect("rx packets")
                    .parse()
                    .expect("a number")
            })
        })
        .unwrap_or_else(|| panic!("no {interface} in {}: {text}", namespace.name()))
}

/// The checks of every real server: TCP_CHECK on its service port, with a
/// short cadence so that the lab's tests are quick.
const CHECK: &str = "TCP_CHECK { connect_timeout 1 }";
const DELAY_LOOP: u64 = 1;
const RETRY: u64 = 1;
const DELAY_BEFORE_RETRY: u64 = 1;
const CONNECT_TIMEOUT: u64 = 1;

/// A virtual server block for `address` with `method` and `servers`
/// (address, extra keywords of the real server).
fn virtual_server(
    address: SocketAddr,
    method: &str,
    body: &str,
    servers: &[(SocketAddr, &str)],
) -> String {
    let mut text = format!(
        "virtual_server {} {} {{\n    protocol TCP\n    lvs_sched rr\n    lvs_method {method}\n    \
         delay_loop {DELAY_LOOP}\n    retry {RETRY}\n    delay_before_retry {DELAY_BEFORE_RETRY}\n{body}",
        address.ip(),
        address.port()
    );
    for (server, extra) in servers {
        text.push_str(&format!(
            "    real_server {} {} {{\n        {extra}\n        {CHECK}\n    }}\n",
            server.ip(),
            server.port()
        ));
    }
    text.push_str("}\n");
    text
}

/// NAT or a direct-return topology: what a forwarding test needs of it.
enum Topology {
    Nat(NatTopology),
    DirectReturn(DirectReturnTopology),
}

impl Topology {
    fn client(&self) -> &Namespace {
        match self {
            Topology::Nat(topology) => &topology.client,
            Topology::DirectReturn(topology) => &topology.client,
        }
    }

    fn director(&self) -> &Namespace {
        match self {
            Topology::Nat(topology) => &topology.director,
            Topology::DirectReturn(topology) => &topology.director,
        }
    }

    fn real_servers(&self) -> &[Host] {
        match self {
            Topology::Nat(topology) => &topology.real_servers,
            Topology::DirectReturn(topology) => &topology.real_servers,
        }
    }
}

/// pulse programs a service with `method` (keepalived's words); the
/// client's requests through the virtual address reach every real server,
/// and the kernel forwards as `expected`. With `reception`, a
/// direct-return topology whose real servers receive that way; without,
/// NAT.
fn forwards(prefix: &str, method: &str, reception: Option<Reception>, expected: Forwarding) {
    let scratch = Scratch::new(prefix);
    let (topology, virtual_address, port) = match reception {
        None => (
            Topology::Nat(NatTopology::build(prefix, 2).expect("topology")),
            NatTopology::virtual_address(80),
            8080,
        ),
        Some(reception) => (
            Topology::DirectReturn(
                DirectReturnTopology::build(prefix, 2, reception).expect("topology"),
            ),
            DirectReturnTopology::virtual_address(80),
            // DR and TUN do not rewrite the port.
            80,
        ),
    };
    let _responders: Vec<Responder> = match &topology {
        Topology::Nat(nat) => nat.start_responders(port),
        Topology::DirectReturn(direct) => direct.start_responders(port),
    }
    .expect("responders");
    let servers: Vec<(SocketAddr, &str)> = topology
        .real_servers()
        .iter()
        .map(|host| (SocketAddr::new(host.address, port), ""))
        .collect();
    let configuration = virtual_server(virtual_address, method, "", &servers);
    let started = Instant::now();
    let (_pulse, status) = Pulse::start(prefix, topology.director(), &scratch, &configuration);
    eprintln!("{prefix}: READY=1 after {:?} ({status})", started.elapsed());

    let mut ipvs = connect(topology.director());
    let table = read(&mut ipvs).expect("the table");
    let entry = table
        .service(&tcp(virtual_address))
        .expect("pulse created the virtual service");
    let mut programmed: Vec<(SocketAddr, Forwarding)> = entry
        .destinations
        .iter()
        .map(|destination| (destination.socket_address(), destination.forwarding))
        .collect();
    programmed.sort_by_key(|(address, _)| *address);
    let wanted: Vec<(SocketAddr, Forwarding)> = servers
        .iter()
        .map(|(address, _)| (*address, expected))
        .collect();
    assert_eq!(programmed, wanted);

    let tunnel_device = match reception {
        Some(Reception::Ipip | Reception::Gue { .. }) => Some("tunl0"),
        Some(Reception::Gre { checksum: false }) => Some("gre0"),
        Some(Reception::Gre { checksum: true }) => Some("vip0"),
        _ => None,
    };
    let decapsulated_before: Vec<u64> = tunnel_device
        .map(|device| {
            topology
                .real_servers()
                .iter()
                .map(|host| received_packets(&host.namespace, device))
                .collect()
        })
        .unwrap_or_default();

    let everyone: BTreeSet<String> = topology
        .real_servers()
        .iter()
        .map(|host| host.name.clone())
        .collect();
    // Round robin: each of 2 × count requests goes to the next server.
    let answered = answering(topology.client(), virtual_address, 2 * everyone.len());
    eprintln!("{prefix}: answered by {answered:?}");
    assert_eq!(answered, everyone);

    // The tunnel device of each real server decapsulated what it answered:
    // the packets came through the tunnel, not by direct routing.
    if let Some(device) = tunnel_device {
        for (host, before) in topology.real_servers().iter().zip(decapsulated_before) {
            let after = received_packets(&host.namespace, device);
            assert!(
                after > before,
                "{}'s {device} received nothing ({before} -> {after})",
                host.name
            );
        }
    }
}

#[test]
#[ignore = "runs in the lab"]
fn nat_answers_from_every_real_server() {
    labkit::require_lab();
    forwards("traffic-nat", "NAT", None, Forwarding::Masquerade);
}

#[test]
#[ignore = "runs in the lab"]
fn direct_routing_answers_straight_from_every_real_server() {
    labkit::require_lab();
    forwards(
        "traffic-dr",
        "DR",
        Some(Reception::DirectRouting),
        Forwarding::Route,
    );
}

#[test]
#[ignore = "runs in the lab"]
fn ipip_tunnel_answers_straight_from_every_real_server() {
    labkit::require_lab();
    forwards(
        "traffic-ipip",
        "TUN type ipip",
        Some(Reception::Ipip),
        Forwarding::Tunnel(Tunnel {
            kind: TunnelKind::Ipip,
            port: 0,
            checksum: TunnelChecksum::NoChecksum,
        }),
    );
}

#[test]
#[ignore = "runs in the lab"]
fn gue_tunnel_answers_straight_from_every_real_server() {
    labkit::require_lab();
    forwards(
        "traffic-gue",
        "TUN type gue port 6080 csum",
        Some(Reception::Gue { port: 6080 }),
        Forwarding::Tunnel(Tunnel {
            kind: TunnelKind::Gue,
            port: 6080,
            checksum: TunnelChecksum::Checksum,
        }),
    );
}

#[test]
#[ignore = "runs in the lab"]
fn gre_tunnel_answers_straight_from_every_real_server() {
    labkit::require_lab();
    forwards(
        "traffic-gre",
        "TUN type gre",
        Some(Reception::Gre { checksum: false }),
        Forwarding::Tunnel(Tunnel {
            kind: TunnelKind::Gre,
            port: 0,
            checksum: TunnelChecksum::NoChecksum,
        }),
    );
}

/// How long a failing real server may stay in the rotation: keepalived's
/// TCP_CHECK notices at the next check (`delay_loop`), retries `retry`
/// times `delay_before_retry` apart, each attempt taking up to
/// `connect_timeout`. Refused connections fail at once, so this is
/// generous.
fn check_budget() -> Duration {
    Duration::from_secs(DELAY_LOOP + RETRY * DELAY_BEFORE_RETRY + CONNECT_TIMEOUT)
}

#[test]
#[ignore = "runs in the lab"]
fn failing_checks_take_real_servers_out_and_back_and_the_sorry_server_answers_when_all_are_down() {
    labkit::require_lab();
    let prefix = "traffic-health";
    let scratch = Scratch::new(prefix);
    // rs1 and rs2 serve; rs3 is the sorry server.
    let topology = NatTopology::build(prefix, 3).expect("topology");
    let address = |index: usize| SocketAddr::new(topology.real_servers[index].address, 8080);
    let mut responders: Vec<Option<Responder>> = topology
        .start_responders(8080)
        .expect("responders")
        .into_iter()
        .map(Some)
        .collect();
    let removing = NatTopology::virtual_address(80);
    let inhibiting = NatTopology::virtual_address(81);
    let sorry = address(2);
    let configuration = virtual_server(
        removing,
        "NAT",
        &format!("    sorry_server {} {}\n", sorry.ip(), sorry.port()),
        &[(address(0), ""), (address(1), "")],
    ) + &virtual_server(
        inhibiting,
        "NAT",
        "",
        &[
            (address(0), "inhibit_on_failure"),
            (address(1), "inhibit_on_failure"),
        ],
    );
    // /metrics in the director's namespace: the health it shows is
    // checked at the end.
    let metrics: SocketAddr = "127.0.0.1:9651".parse().unwrap();
    let (_pulse, _) = Pulse::start_with(
        prefix,
        &topology.director,
        &scratch,
        &configuration,
        &["--metrics", &metrics.to_string()],
    );
    let mut ipvs = connect(&topology.director);
    let client = &topology.client;
    let both = vec![(address(0), 1), (address(1), 1)];
    let table = read(&mut ipvs).unwrap();
    assert_eq!(members(&table, &tcp(removing)), both);
    assert_eq!(members(&table, &tcp(inhibiting)), both);
    assert_eq!(answering(client, removing, 4), names(&["rs1", "rs2"]));

    let budget = check_budget();
    // Three times the budget: a bound that catches "never", not a timing
    // test.
    let limit = 3 * budget;

    // rs1 stops answering: it leaves the first service and keeps weight 0
    // in the second.
    responders[0] = None;
    let took = wait_until(&mut ipvs, "rs1 to fail", limit, |table| {
        members(table, &tcp(removing)) == [(address(1), 1)]
            && members(table, &tcp(inhibiting)) == [(address(0), 0), (address(1), 1)]
    });
    eprintln!("{prefix}: rs1 out of the rotation {took:?} after it stopped (budget {budget:?})");
    assert_eq!(answering(client, removing, 4), names(&["rs2"]));
    assert_eq!(answering(client, inhibiting, 4), names(&["rs2"]));

    // It answers again: back in both, weight restored.
    responders[0] =
        Some(Responder::spawn(&topology.real_servers[0].namespace, address(0), "rs1").unwrap());
    let took = wait_until(&mut ipvs, "rs1 to return", limit, |table| {
        members(table, &tcp(removing)) == both && members(table, &tcp(inhibiting)) == both
    });
    eprintln!("{prefix}: rs1 back in the rotation {took:?} after it restarted");
    assert_eq!(answering(client, removing, 4), names(&["rs1", "rs2"]));

    // Both stop: the sorry server takes the first service's traffic.
    responders[0] = None;
    responders[1] = None;
    let took = wait_until(&mut ipvs, "the sorry server", limit, |table| {
        members(table, &tcp(removing)) == [(sorry, 1)]
            && members(table, &tcp(inhibiting)) == [(address(0), 0), (address(1), 0)]
    });
    eprintln!("{prefix}: the sorry server in {took:?} after both stopped");
    assert_eq!(answering(client, removing, 2), names(&["rs3"]));

    // Both return: the sorry server goes.
    for (index, (slot, host)) in responders
        .iter_mut()
        .zip(&topology.real_servers)
        .enumerate()
        .take(2)
    {
        *slot = Some(Responder::spawn(&host.namespace, address(index), &host.name).unwrap());
    }
    let took = wait_until(&mut ipvs, "both to return", limit, |table| {
        members(table, &tcp(removing)) == both && members(table, &tcp(inhibiting)) == both
    });
    eprintln!("{prefix}: both back, the sorry server gone, {took:?} after they restarted");
    assert_eq!(answering(client, removing, 4), names(&["rs1", "rs2"]));

    // What /metrics says of it: rs1 went down twice and came back twice,
    // rs2 once each, in both virtual servers; all up now, their last
    // change a success; the passes that made it counted.
    let text = scrape(&topology.director, metrics);
    let value = |series: &str| -> f64 {
        text.lines()
            .find_map(|line| line.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
            .unwrap_or_else(|| panic!("no {series} in:\n{text}"))
    };
    for virtual_server in [removing, inhibiting] {
        let virtual_server = format!("{virtual_server} TCP");
        for (index, transitions) in [(0, 2.0), (1, 1.0)] {
            let labels = format!(
                "virtual_server=\"{virtual_server}\",real_server=\"{}\"",
                address(index)
            );
            assert_eq!(value(&format!("pulse_real_server_up{{{labels}}}")), 1.0);
            for to in ["up", "down"] {
                assert_eq!(
                    value(&format!(
                        "pulse_real_server_transitions_total{{{labels},to=\"{to}\"}}"
                    )),
                    transitions,
                    "{labels} to {to}:\n{text}"
                );
            }
            let reason = text
                .lines()
                .find(|line| {
                    line.starts_with(&format!(
                        "pulse_real_server_last_change_info{{{labels},state=\"up\",reason="
                    ))
                })
                .unwrap_or_else(|| panic!("no reason for {labels}:\n{text}"));
            assert!(reason.contains("TCP_CHECK"), "{reason}");
        }
    }
    assert!(
        value("pulse_ipvs_changes_applied_total{reason=\"start\"}") >= 4.0,
        "{text}"
    );
    assert!(
        value("pulse_ipvs_changes_applied_total{reason=\"health\"}") >= 6.0,
        "{text}"
    );
    assert_eq!(
        value("pulse_ipvs_changes_refused_total{reason=\"health\"}"),
        0.0,
        "{text}"
    );
    // The checks' durations, by outcome: rs1's check both succeeded and
    // failed (refused at once: well under the connect timeout).
    for result in ["success", "failure"] {
        let labels = format!(
            "checker=\"TCP_CHECK\",real_server=\"{}\",result=\"{result}\"",
            address(0)
        );
        assert!(
            value(&format!("pulse_check_duration_seconds_count{{{labels}}}")) >= 1.0,
            "{text}"
        );
        assert!(
            value(&format!(
                "pulse_check_duration_seconds_bucket{{le=\"+Inf\",{labels}}}"
            )) >= 1.0,
            "{text}"
        );
    }
    // And what `pulse --status` says of it, asked beside its pid file.
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_pulse"))
        .arg("--status")
        .arg("-p")
        .arg(scratch.file("pulse.pid"))
        .output()
        .expect("pulse --status runs");
    let shown = String::from_utf8_lossy(&output.stdout);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{shown}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    for virtual_server in [removing, inhibiting] {
        assert!(
            shown.contains(&format!("  {virtual_server} TCP  2 of 2 real servers up\n")),
            "{shown}"
        );
    }
    assert!(
        shown.contains(&format!("      {}  up   for ", address(0))) && shown.contains("TCP_CHECK"),
        "{shown}"
    );
    labkit::prometheus::check_metrics(&text).expect("promtool finds nothing to say");
}

/// `GET /metrics` from inside `namespace`, in Prometheus' classic text
/// format (no Accept: what promtool reads).
fn scrape(namespace: &Namespace, address: SocketAddr) -> String {
    let (head, body) =
        http::get_path(namespace, address, "/metrics", None).expect("/metrics answers");
    assert!(head.contains(" 200 "), "{head}");
    body
}

/// Requests to `address` in a loop on a thread until stopped: how many
/// were answered, and the failures.
struct Traffic {
    stop: Arc<AtomicBool>,
    answered: Arc<AtomicU64>,
    thread: Option<JoinHandle<Vec<(Instant, String)>>>,
}

impl Traffic {
    fn start(client: &Namespace, address: SocketAddr) -> Traffic {
        let stop = Arc::new(AtomicBool::new(false));
        let answered = Arc::new(AtomicU64::new(0));
        // The thread enters the client's namespace once; every connection
        // it opens is the client's.
        let client_namespace = client.name().to_owned();
        let thread = {
            let stop = stop.clone();
            let answered = answered.clone();
            let namespace = std::fs::File::open(format!("/run/netns/{client_namespace}")).unwrap();
            thread::spawn(move || {
                // SAFETY: setns on a namespace file we opened, for this thread.
                let entered = unsafe {
                    libc::setns(
                        std::os::fd::AsRawFd::as_raw_fd(&namespace),
                        libc::CLONE_NEWNET,
                    )
                };
                assert_eq!(entered, 0, "setns into {client_namespace}");
                let mut failures = Vec::new();
                while !stop.load(Ordering::Relaxed) {
                    let started = Instant::now();
                    match http::Connection::open_here(address).and_then(http::Connection::get) {
                        Ok(_) => {
                            answered.fetch_add(1, Ordering::Relaxed);
                        }
                        Err(error) => failures.push((started, format!("{error:#}"))),
                    }
                    // A steady stream, not a flood: the emulated machine
                    // runs other tests at the same time.
                    thread::sleep(Duration::from_millis(10));
                }
                failures
            })
        };
        Traffic {
            stop,
            answered,
            thread: Some(thread),
        }
    }

    fn answered(&self) -> u64 {
        self.answered.load(Ordering::Relaxed)
    }

    /// Stops it; the failures, with when each request started.
    fn finish(mut self) -> Vec<(Instant, String)> {
        self.stop.store(true, Ordering::Relaxed);
        self.thread
            .take()
            .unwrap()
            .join()
            .expect("the traffic thread")
    }
}

impl Drop for Traffic {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// The members and weights of the reload test's `round`th configuration:
/// always at least one server kept from the round before, weights changing.
fn reload_round(round: usize, servers: &[SocketAddr]) -> Vec<(SocketAddr, u32)> {
    let chosen: &[usize] = match round % 4 {
        0 => &[0, 1, 2],
        1 => &[0, 1],
        2 => &[1, 2],
        _ => &[0, 2],
    };
    chosen
        .iter()
        .map(|&index| (servers[index], 1 + ((round + index) % 3) as u32))
        .collect()
}

#[test]
#[ignore = "runs in the lab"]
fn reloads_are_hitless() {
    labkit::require_lab();
    const RELOADS: usize = 20;
    // Connections held open across each reload.
    const HELD: usize = 6;
    let prefix = "traffic-reload";
    let scratch = Scratch::new(prefix);
    let topology = NatTopology::build(prefix, 3).expect("topology");
    let _responders = topology.start_responders(8080).expect("responders");
    let servers: Vec<SocketAddr> = topology
        .real_servers
        .iter()
        .map(|host| SocketAddr::new(host.address, 8080))
        .collect();
    let virtual_address = NatTopology::virtual_address(80);
    let configuration = |round: usize| {
        let members = reload_round(round, &servers);
        let extras: Vec<String> = members
            .iter()
            .map(|(_, weight)| format!("weight {weight}"))
            .collect();
        let servers: Vec<(SocketAddr, &str)> = members
            .iter()
            .zip(&extras)
            .map(|((address, _), extra)| (*address, extra.as_str()))
            .collect();
        virtual_server(virtual_address, "NAT", "", &servers)
    };
    let (mut pulse, _) = Pulse::start(prefix, &topology.director, &scratch, &configuration(0));
    let mut ipvs = connect(&topology.director);
    let key = tcp(virtual_address);
    assert_eq!(
        members(&read(&mut ipvs).unwrap(), &key),
        reload_round(0, &servers)
    );

    let removed_by = |round: usize| -> Vec<SocketAddr> {
        let kept: BTreeSet<SocketAddr> = reload_round(round, &servers)
            .iter()
            .map(|(address, _)| *address)
            .collect();
        reload_round(round - 1, &servers)
            .iter()
            .map(|(address, _)| *address)
            .filter(|address| !kept.contains(address))
            .collect()
    };
    let traffic = Traffic::start(&topology.client, virtual_address);
    let started = Instant::now();
    let mut reload_times = Vec::new();
    // When each reload was signalled, for the diagnosis of failures.
    let mut reloads = Vec::new();
    // Connections opened before a reload, their requests sent after it:
    // requests in flight across the reload, whichever server they went to.
    // After the first failure no more are held (each costs a timeout).
    let mut held_failures = Vec::new();
    for round in 1..=RELOADS {
        let held: Vec<http::Connection> = if held_failures.is_empty() {
            (0..HELD)
                .map(|_| {
                    http::Connection::open(&topology.client, virtual_address).expect("connection")
                })
                .collect()
        } else {
            Vec::new()
        };
        let reload_started = Instant::now();
        reloads.push(reload_started);
        let status = pulse.reload(&configuration(round));
        reload_times.push(reload_started.elapsed());
        // READY=1 came after the reloaded configuration's pass: the kernel
        // has it. A removed server may stay a while with weight 0 (drained
        // before it goes), never with another weight.
        let mut wanted = reload_round(round, &servers);
        wanted.sort();
        let (in_rotation, out): (Vec<_>, Vec<_>) = members(&read(&mut ipvs).unwrap(), &key)
            .into_iter()
            .partition(|(_, weight)| *weight > 0);
        assert_eq!(in_rotation, wanted, "after reload {round} ({status})");
        assert!(
            out.iter()
                .all(|(address, _)| !wanted.iter().any(|(kept, _)| kept == address)),
            "after reload {round}: {out:?}"
        );
        thread::scope(|scope| {
            let answers: Vec<_> = held
                .into_iter()
                .map(|connection| scope.spawn(move || connection.get()))
                .collect();
            for answer in answers {
                if let Err(error) = answer.join().unwrap() {
                    held_failures.push(format!(
                        "a connection opened before SIGHUP {round} (which removed {:?}): {error:#}",
                        removed_by(round)
                    ));
                }
            }
        });
        // Let some requests through on each configuration.
        let seen = traffic.answered();
        let wait = Instant::now();
        while traffic.answered() < seen + 3 && wait.elapsed() < Duration::from_secs(5) {
            thread::sleep(Duration::from_millis(10));
        }
    }
    let elapsed = started.elapsed();
    let answered = traffic.answered();
    let failures = traffic.finish();
    reload_times.sort();
    eprintln!(
        "{prefix}: {RELOADS} reloads in {elapsed:?} (SIGHUP to READY=1: median {:?}, max {:?}); \
         {answered} requests answered, {} failed",
        reload_times[RELOADS / 2],
        reload_times[RELOADS - 1],
        failures.len()
    );
    // Each failure with the reload before it and the servers that reload
    // removed: a request in flight to a removed server stalls, as IPVS
    // drops the packets of connections to a deleted destination
    // (expire_nodest_conn=0) unless it comes back.
    let diagnosis: Vec<String> = failures
        .iter()
        .map(|(request_started, error)| {
            // The reloads just before and just after the request started.
            let before = reloads.iter().rposition(|reload| reload <= request_started);
            let after = before.map_or(0, |index| index + 1);
            let mut text = String::new();
            if let Some(index) = before {
                text += &format!(
                    "started {:?} after SIGHUP {} (which removed {:?})",
                    request_started.duration_since(reloads[index]),
                    index + 1,
                    removed_by(index + 1)
                );
            }
            if let Some(next) = reloads.get(after) {
                text += &format!(
                    ", {:?} before SIGHUP {} (which removed {:?})",
                    next.duration_since(*request_started),
                    after + 1,
                    removed_by(after + 1)
                );
            }
            format!("{text}: {error}")
        })
        .collect();
    assert!(
        failures.is_empty() && held_failures.is_empty(),
        "failed requests: {diagnosis:#?}\nfailed requests on connections held across a reload: \
         {held_failures:#?}"
    );
    // Traffic flowed throughout, not only at the ends.
    assert!(
        answered >= 3 * RELOADS as u64,
        "only {answered} requests answered"
    );
}

/// The whole table as comparable values: services and destinations with
/// their connection counters, without the traffic statistics (rates
/// decay with time).
fn dump(client: &mut Client) -> Vec<(ipvs::Service, Vec<Destination>)> {
    let mut services: Vec<(ipvs::Service, Vec<Destination>)> = read(client)
        .expect("the table")
        .services
        .into_values()
        .map(|entry| {
            let mut service = entry.service;
            service.statistics = None;
            let mut destinations: Vec<Destination> = entry
                .destinations
                .into_iter()
                .map(|mut destination| {
                    destination.statistics = None;
                    destination
                })
                .collect();
            destinations.sort_by_key(Destination::socket_address);
            (service, destinations)
        })
        .collect();
    services.sort_by_key(|(service, _)| service.key.to_string());
    services
}

#[test]
#[ignore = "runs in the lab"]
fn a_killed_pulse_restarts_without_touching_the_table_or_connections() {
    labkit::require_lab();
    let prefix = "traffic-restart";
    let scratch = Scratch::new(prefix);
    let topology = NatTopology::build(prefix, 2).expect("topology");
    let _responders = topology.start_responders(8080).expect("responders");
    let servers: Vec<(SocketAddr, &str)> = topology
        .real_servers
        .iter()
        .map(|host| (SocketAddr::new(host.address, 8080), "weight 2"))
        .collect();
    let virtual_address = NatTopology::virtual_address(80);
    let configuration = virtual_server(virtual_address, "NAT", "", &servers)
        + &virtual_server(
            NatTopology::virtual_address(443),
            "NAT",
            "    persistence_timeout 300\n",
            &servers[..1],
        );
    let (pulse, _) = Pulse::start(prefix, &topology.director, &scratch, &configuration);
    let mut ipvs = connect(&topology.director);

    // A connection through the virtual address, its request not sent yet.
    let connection = http::Connection::open(&topology.client, virtual_address).expect("connection");
    // The kernel counts it as an active connection of one destination.
    wait_until(
        &mut ipvs,
        "the connection to be counted",
        Duration::from_secs(5),
        |table| {
            table.service(&tcp(virtual_address)).is_some_and(|entry| {
                entry.destinations.iter().any(|destination| {
                    destination
                        .counters
                        .is_some_and(|counters| counters.active == 1)
                })
            })
        },
    );
    let before = dump(&mut ipvs);
    assert_eq!(before.len(), 2, "{before:#?}");

    let configuration_path = pulse.configuration.clone();
    pulse.kill();
    let (restarted, status) = Pulse::run(
        prefix,
        &topology.director,
        &scratch,
        configuration_path,
        &[],
    );
    eprintln!("{prefix}: restarted: {status}");
    let after = dump(&mut ipvs);
    assert_eq!(
        after, before,
        "the table changed across kill -9 and restart"
    );
    // And it stays so through a drift pass (every second).
    thread::sleep(Duration::from_millis(1500));
    assert_eq!(
        dump(&mut ipvs),
        before,
        "the table changed after the restart"
    );

    let answer = connection
        .get()
        .expect("the connection opened before the kill still works");
    eprintln!("{prefix}: the connection opened before the kill answered by {answer}");
    assert!(answer == "rs1" || answer == "rs2", "{answer}");
    drop(restarted);
}

#[test]
#[ignore = "runs in the lab"]
fn gre_tunnel_with_checksums_answers_straight_from_every_real_server() {
    labkit::require_lab();
    forwards(
        "traffic-grecsum",
        "TUN type gre csum",
        Some(Reception::Gre { checksum: true }),
        Forwarding::Tunnel(Tunnel {
            kind: TunnelKind::Gre,
            port: 0,
            checksum: TunnelChecksum::Checksum,
        }),
    );
}

/// The direct-return topology proves the path of replies only if a reply
/// through the director fails: here a real server is made to answer
/// through the director, and the client gets nothing.
#[test]
#[ignore = "runs in the lab"]
fn direct_return_replies_through_the_director_fail() {
    use ipvs::{Operation, Service};
    labkit::require_lab();
    let topology = DirectReturnTopology::build("traffic-detour", 1, Reception::DirectRouting)
        .expect("topology");
    let _responders = topology.start_responders(80).expect("responders");
    let virtual_address = DirectReturnTopology::virtual_address(80);
    let key = tcp(virtual_address);
    let server = &topology.real_servers[0];
    connect(&topology.director)
        .apply(&[
            Operation::CreateService(Service::new(key, "rr")),
            Operation::CreateDestination(
                key,
                Destination::new(SocketAddr::new(server.address, 80), Forwarding::Route),
            ),
        ])
        .expect("a DR service by hand");
    assert_eq!(
        http::get(&topology.client, virtual_address).expect("the direct path works"),
        "rs1"
    );
    server
        .namespace
        .ip(&format!(
            "route replace default via {}",
            DirectReturnTopology::DIRECTOR_ADDRESS
        ))
        .unwrap();
    let detour = http::get(&topology.client, virtual_address);
    assert!(
        detour.is_err(),
        "a reply through the director arrived: {detour:?}"
    );
}
