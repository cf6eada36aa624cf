//! The SDN mode in the lab: a real etcd, a routed underlay, the Mux, two
//! hosts each with a fulcrum-agent, tenant networks on VXLAN, the same DIP
//! address in two tenants. The hosts' segments (a bridge per network) are
//! the operator's, made here with iproute2; the agents terminate VXLAN,
//! translate VIP:80 to DIP:8080, find the DIPs and probe them. The DIPs
//! are plain servers on their segment (port 8080, their host's segment
//! address as gateway): no VIP of their own, no ARP settings.

use std::collections::BTreeSet;
use std::fs::File;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use fulcrum_cluster::store::{Store, endpoints};
use labkit::Namespace;
use labkit::etcd::Etcd;
use labkit::http::{Responder, get};

const PULSE: &str = env!("CARGO_BIN_EXE_pulse");

const VIP_A: Ipv4Addr = Ipv4Addr::new(203, 0, 113, 10);
const VIP_B: Ipv4Addr = Ipv4Addr::new(203, 0, 113, 20);
const MUX_VTEP: &str = "172.30.1.2";

const POLICY: &str = "virtual_network tenant-a {
    vni 100
}
virtual_network tenant-b {
    vni 200
}
virtual_server 203.0.113.10 80 {
    protocol TCP
    lb_algo rr
    virtual_network tenant-a
    real_server 10.1.0.5 8080 {
        TCP_CHECK {
            connect_timeout 1
            retry 0
            delay_loop 1
        }
    }
    real_server 10.1.0.6 8080 {
        TCP_CHECK {
            connect_timeout 1
            retry 0
            delay_loop 1
        }
    }
    real_server 10.1.0.7 8080 {
        TCP_CHECK {
            connect_timeout 1
            retry 0
            delay_loop 1
        }
    }
}
virtual_server 203.0.113.20 80 {
    protocol TCP
    lb_algo rr
    virtual_network tenant-b
    real_server 10.1.0.5 8080 {
        TCP_CHECK {
            connect_timeout 1
            retry 0
            delay_loop 1
        }
    }
}
";

/// The namespaces, and the guest's own end of the store's link, removed
/// when dropped.
struct Underlay {
    client: Namespace,
    mux: Namespace,
    others: Vec<Namespace>,
}

impl Underlay {
    fn namespace(&self, name: &str) -> &Namespace {
        self.others
            .iter()
            .find(|namespace| namespace.name() == name)
            .unwrap()
    }
}

impl Drop for Underlay {
    fn drop(&mut self) {
        let _ = labkit::run_ip(None, "link del sdnstore0");
    }
}

/// The client and an edge router; the Mux, two hosts and the store each on
/// a subnet of its own behind the router. host1 holds tenant-a's .5 and .6,
/// host2 tenant-a's .7 and tenant-b's .5.
fn underlay() -> Underlay {
    let names = [
        "sdn-client",
        "sdn-router",
        "sdn-mux",
        "sdn-host1",
        "sdn-host2",
        "sdn-a5",
        "sdn-a6",
        "sdn-a7",
        "sdn-b5",
    ];
    let mut namespaces: Vec<Namespace> = names
        .iter()
        .map(|name| Namespace::create(name).unwrap())
        .collect();
    labkit::run_ip(
        None,
        "link add eth0 netns sdn-client type veth peer name client netns sdn-router
link add eth0 netns sdn-mux type veth peer name mux netns sdn-router
link add eth0 netns sdn-host1 type veth peer name host1 netns sdn-router
link add eth0 netns sdn-host2 type veth peer name host2 netns sdn-router
link add sdnstore0 type veth peer name store netns sdn-router
link add eth0 netns sdn-a5 address 02:00:00:00:01:05 type veth peer name a5 netns sdn-host1
link add eth0 netns sdn-a6 address 02:00:00:00:01:06 type veth peer name a6 netns sdn-host1
link add eth0 netns sdn-a7 address 02:00:00:00:01:07 type veth peer name a7 netns sdn-host2
link add eth0 netns sdn-b5 address 02:00:00:00:02:05 type veth peer name b5 netns sdn-host2
addr add 172.30.4.1/24 dev sdnstore0
link set sdnstore0 up
route add 172.30.0.0/16 via 172.30.4.2",
    )
    .unwrap();
    let router = &namespaces[1];
    router
        .ip("addr add 172.30.0.1/24 dev client
addr add 172.30.1.1/24 dev mux
addr add 172.30.2.1/24 dev host1
addr add 172.30.3.1/24 dev host2
addr add 172.30.4.2/24 dev store
link set client up
link set mux up mtu 1550
link set host1 up mtu 1550
link set host2 up mtu 1550
link set store up
route add 203.0.113.0/24 via 172.30.1.2")
        .unwrap();
    router.sysctl("net/ipv4/ip_forward", "1").unwrap();
    namespaces[0]
        .ip("addr add 172.30.0.2/24 dev eth0\nlink set eth0 up\nroute add default via 172.30.0.1")
        .unwrap();
    // The underlay carries VXLAN's 50 bytes more than a 1,500-byte packet.
    namespaces[2]
        .ip("addr add 172.30.1.2/24 dev eth0\nlink set eth0 up mtu 1550\nroute add default via 172.30.1.1")
        .unwrap();
    let host = |namespace: &Namespace, address: &str, segments: &[(u32, &[&str], &str)]| {
        let mut commands = format!(
            "addr add {address}/24 dev eth0\nlink set eth0 up mtu 1550\nroute add default via {}\n",
            address.rsplit_once('.').unwrap().0.to_owned() + ".1"
        );
        for (vni, ports, gateway) in segments {
            commands.push_str(&format!(
                "link add br{vni} type bridge
addr add {gateway} dev br{vni}
link set br{vni} up
"
            ));
            for port in *ports {
                commands.push_str(&format!(
                    "link set {port} master br{vni}\nlink set {port} up\n"
                ));
            }
        }
        // No forwarding set here: the agent forwards between its
        // networks' devices and segments.
        namespace.ip(&commands).unwrap();
    };
    host(
        &namespaces[3],
        "172.30.2.2",
        &[(100, &["a5", "a6"], "10.1.0.1/24")],
    );
    host(
        &namespaces[4],
        "172.30.3.2",
        &[(100, &["a7"], "10.1.0.1/24"), (200, &["b5"], "10.1.0.1/32")],
    );
    for (index, dip) in [
        (5, "10.1.0.5"),
        (6, "10.1.0.6"),
        (7, "10.1.0.7"),
        (8, "10.1.0.5"),
    ] {
        namespaces[index]
            .ip(&format!(
                "addr add {dip}/24 dev eth0\nlink set eth0 up\nroute add default via 10.1.0.1"
            ))
            .unwrap();
    }
    let mux = namespaces.remove(2);
    let client = namespaces.remove(0);
    Underlay {
        client,
        mux,
        others: namespaces,
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// Writes `entries` (key, JSON) to the store, as host agents would;
/// returns when the first write was sent (after connecting).
fn put(etcd: &Etcd, entries: &[(&str, &str)]) -> Instant {
    runtime().block_on(async {
        let mut store = Store::connect(&endpoints(&etcd.urls()), Duration::from_secs(5))
            .await
            .unwrap();
        let sent = Instant::now();
        for (key, value) in entries {
            store.client().put(*key, *value, None).await.unwrap();
        }
        sent
    })
}

/// The IPVS table of the tenant of `vni`, read in its namespace, as text
/// lines `SERVICE: DESTINATION wWEIGHT, ...`; empty if it has none.
fn tenant_table(vni: u32) -> Vec<String> {
    let Ok(namespace) = File::open(format!("/run/netns/fulcrum-vni{vni}")) else {
        return Vec::new();
    };
    std::thread::spawn(move || {
        // SAFETY: setns on a namespace file held open, on this thread only.
        // It fails on the file the Mux has made but not mounted on yet.
        if unsafe { libc::setns(namespace.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
            return Vec::new();
        }
        let mut client = ipvs::Client::connect().unwrap();
        let mut lines = Vec::new();
        for service in client.services().unwrap() {
            let mut destinations: Vec<String> = client
                .destinations(&service.key)
                .unwrap()
                .iter()
                .map(|destination| {
                    format!("{} w{}", destination.socket_address(), destination.weight)
                })
                .collect();
            destinations.sort();
            lines.push(format!("{}: {}", service.key, destinations.join(", ")));
        }
        lines.sort();
        lines
    })
    .join()
    .unwrap()
}

fn wait_until(what: &str, limit: Duration, mut done: impl FnMut() -> bool) -> Duration {
    let started = Instant::now();
    while !done() {
        assert!(started.elapsed() < limit, "{what}: not within {limit:?}");
        std::thread::sleep(Duration::from_millis(1));
    }
    started.elapsed()
}

/// Who answers `count` requests to `vip` from the client.
fn answers(underlay: &Underlay, vip: Ipv4Addr, count: usize) -> BTreeSet<String> {
    (0..count)
        .map(
            |_| match get(&underlay.client, SocketAddr::new(IpAddr::V4(vip), 80)) {
                Ok(answer) => answer.trim().to_owned(),
                Err(error) => {
                    let directory = std::env::temp_dir().join("fulcrum-sdn-mux");
                    let mut lines = Vec::new();
                    let host = capture_on(
                        underlay.namespace("sdn-host1"),
                        "any",
                        "not host 172.30.4.1 and not port 8080 and not arp and not ip6",
                        &directory.join("host1"),
                        || {
                            lines = capture_on(
                                &underlay.mux,
                                "any",
                                "not host 172.30.4.1",
                                &directory,
                                || {
                                    let _ =
                                        get(&underlay.client, SocketAddr::new(IpAddr::V4(vip), 80));
                                },
                            )
                        },
                    );
                    lines.push("--- host1:".into());
                    lines.extend(host);
                    panic!(
                        "{error:#}\n{}\n--- the Mux during one more:\n{}",
                        diagnosis(underlay),
                        lines.join("\n")
                    )
                }
            },
        )
        .collect()
}

/// The hosts' and the Mux's datapath, and the daemons' logs: what a
/// failed request needs looked at.
fn diagnosis(underlay: &Underlay) -> String {
    let mut text = String::new();
    let directory = std::env::temp_dir().join("fulcrum-sdn-mux");
    for log in ["mux.log", "agent1.log", "agent2.log"] {
        let log_text = std::fs::read_to_string(directory.join(log)).unwrap_or_default();
        text.push_str(&format!("--- {log}\n{log_text}"));
    }
    for command in [
        "ip -s -d link",
        "ip neigh",
        "bridge fdb show",
        "ip route",
        "ipvsadm -Ln --stats",
        "nstat -az",
    ] {
        let output = Command::new("ip")
            .args(["netns", "exec", "fulcrum-vni100"])
            .args(command.split(' '))
            .output()
            .unwrap();
        text.push_str(&format!(
            "--- fulcrum-vni100: {command}\n{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    for namespace in ["sdn-mux", "sdn-host1", "sdn-host2"] {
        for command in [
            "nft list ruleset",
            "ip rule",
            "ip route show table all",
            "ip -s -d link",
            "ip neigh",
            "nstat -az",
            "cat /proc/net/nf_conntrack",
            "sysctl -a -r forwarding|rp_filter",
        ] {
            let words: Vec<&str> = command.split(' ').collect();
            let space = if namespace == "sdn-mux" {
                &underlay.mux
            } else {
                underlay.namespace(namespace)
            };
            let output = space.command(words[0]).args(&words[1..]).output().unwrap();
            text.push_str(&format!(
                "--- {namespace}: {command}\n{}{}",
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            ));
        }
    }
    text
}

/// The packets an nftables counter of the Mux's namespace saw, by rule.
fn counters(mux: &Namespace) -> Vec<u64> {
    let output = mux
        .command("nft")
        .args(["list", "table", "inet", "sdntest"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    text.split("counter packets ")
        .skip(1)
        .map(|rest| rest.split_whitespace().next().unwrap().parse().unwrap())
        .collect()
}

/// Loads the nftables `ruleset` (`nft -f -`) in `namespace`.
fn nft(namespace: &Namespace, ruleset: &str) {
    let mut nft = namespace
        .command("nft")
        .args(["-f", "-"])
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(nft.stdin.as_mut().unwrap(), ruleset.as_bytes()).unwrap();
    drop(nft.stdin.take());
    assert!(nft.wait().unwrap().success(), "nft -f -: {ruleset}");
}

/// What tcpdump saw on `namespace`'s `eth0` while `during` ran, one line
/// per packet (`-n`, `-v` for VXLAN's header). A real capture: the lines
/// say what went on the wire.
fn capture(namespace: &Namespace, directory: &Path, during: impl FnOnce()) -> Vec<String> {
    capture_on(
        namespace,
        "eth0",
        "udp port 4789 or net 203.0.113.0/24",
        directory,
        during,
    )
}

/// What tcpdump saw on `interface` ("any": all) with `filter`.
fn capture_on(
    namespace: &Namespace,
    interface: &str,
    filter: &str,
    directory: &Path,
    during: impl FnOnce(),
) -> Vec<String> {
    std::fs::create_dir_all(directory).unwrap();
    let output = directory.join("capture.txt");
    let errors = directory.join("capture.err");
    let mut tcpdump = namespace
        .command("tcpdump")
        .args(["-i", interface, "-n", "-l", "-U", "-e"])
        .arg(filter)
        .stdout(File::create(&output).unwrap())
        .stderr(File::create(&errors).unwrap())
        .spawn()
        .unwrap();
    wait_until("tcpdump listening", Duration::from_secs(20), || {
        std::fs::read_to_string(&errors).is_ok_and(|text| text.contains("listening on"))
    });
    during();
    // What was sent is seen before the last answer came back; a moment
    // for tcpdump to write it.
    std::thread::sleep(Duration::from_millis(500));
    // SAFETY: kill on our own child.
    unsafe { libc::kill(tcpdump.id() as libc::pid_t, libc::SIGINT) };
    tcpdump.wait().unwrap();
    std::fs::read_to_string(&output)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// A daemon of the test (the Mux, an agent), its standard error in a file.
struct Daemon {
    child: Child,
    log: PathBuf,
}

/// fulcrum-agent, built beside pulse (by its own crate's tests: cargo sets
/// `CARGO_BIN_EXE_*` for a crate's own binaries only).
fn agent_binary() -> PathBuf {
    let path = Path::new(PULSE).with_file_name("fulcrum-agent");
    assert!(
        path.exists(),
        "{} is not built: cargo test --workspace builds it",
        path.display()
    );
    path
}

impl Daemon {
    fn mux(underlay: &Underlay, directory: &Path, etcd: &Etcd) -> Daemon {
        let configuration = directory.join("mux.conf");
        std::fs::write(&configuration, format!("mux {{\n    vtep {MUX_VTEP}\n}}\n")).unwrap();
        let mut command = underlay.mux.direct_command(PULSE);
        command.args(["-G"]);
        Daemon::start(command, &configuration, directory.join("mux.log"), etcd)
    }

    /// fulcrum-agent on host `number` (1 or 2).
    fn agent(underlay: &Underlay, number: u32, directory: &Path, etcd: &Etcd) -> Daemon {
        let configuration = directory.join(format!("agent{number}.conf"));
        let text = match number {
            1 => {
                "host_agent {\n    vtep 172.30.2.2\n}\nvirtual_network tenant-a {\n    vni 100\n    interface br100\n}\n"
            }
            _ => {
                "host_agent {\n    vtep 172.30.3.2\n}\nvirtual_network tenant-a {\n    vni 100\n    interface br100\n}\nvirtual_network tenant-b {\n    vni 200\n    interface br200\n}\n"
            }
        };
        std::fs::write(&configuration, text).unwrap();
        let command = underlay
            .namespace(&format!("sdn-host{number}"))
            .direct_command(agent_binary());
        Daemon::start(
            command,
            &configuration,
            directory.join(format!("agent{number}.log")),
            etcd,
        )
    }

    fn start(mut command: Command, configuration: &Path, log: PathBuf, etcd: &Etcd) -> Daemon {
        let child = command
            .arg("-f")
            .arg(configuration)
            .arg(format!("--cluster={}", etcd.urls()))
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(File::create(&log).unwrap())
            .spawn()
            .unwrap();
        Daemon { child, log }
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// SIGKILL: a crash, with nothing cleaned up.
    fn kill(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    fn stop(mut self) -> std::process::ExitStatus {
        // SAFETY: kill on our own child.
        unsafe { libc::kill(self.child.id() as libc::pid_t, libc::SIGTERM) };
        self.child.wait().unwrap()
    }
}

#[test]
#[ignore = "runs in the lab"]
fn the_mux_forwards_each_tenant_into_its_overlay_and_replies_bypass_it() {
    labkit::require_lab();
    let underlay = underlay();
    let directory = std::env::temp_dir().join("fulcrum-sdn-mux");
    std::fs::create_dir_all(&directory).unwrap();
    let mut etcd = Etcd::start_on(Ipv4Addr::new(172, 30, 4, 1), 3).unwrap();
    // The backend port: the VIP's requests, translated by the agents, and
    // the agents' probes alike.
    let mut responders: Vec<Option<Responder>> = [
        ("sdn-a5", "tenant-a 10.1.0.5"),
        ("sdn-a6", "tenant-a 10.1.0.6"),
        ("sdn-a7", "tenant-a 10.1.0.7"),
        ("sdn-b5", "tenant-b 10.1.0.5"),
    ]
    .iter()
    .map(|(namespace, name)| {
        Some(
            Responder::spawn(
                underlay.namespace(namespace),
                SocketAddr::new(IpAddr::V4(Ipv4Addr::UNSPECIFIED), 8080),
                name,
            )
            .unwrap(),
        )
    })
    .collect();
    nft(
        &underlay.mux,
        "table inet sdntest {
    chain seen {
        type filter hook prerouting priority 0;
        ip saddr 203.0.113.0/24 counter
        ip daddr 203.0.113.0/24 counter
    }
}
",
    );

    let mut mux = Daemon::mux(&underlay, &directory, &etcd);
    let policy = directory.join("policy.conf");
    std::fs::write(&policy, POLICY).unwrap();
    let applied = Command::new(PULSE)
        .arg(format!("--cluster={}", etcd.urls()))
        .arg("--apply")
        .arg(&policy)
        .output()
        .unwrap();
    assert_eq!(
        applied.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&applied.stderr)
    );
    // The agents register their hosts and the DIPs they find.
    let mut agents = vec![
        Daemon::agent(&underlay, 1, &directory, &etcd),
        Daemon::agent(&underlay, 2, &directory, &etcd),
    ];
    let full_a = vec![
        "TCP 203.0.113.10:80: 10.1.0.5:8080 w1, 10.1.0.6:8080 w1, 10.1.0.7:8080 w1".to_owned(),
    ];
    let started = Instant::now();
    while tenant_table(100) != full_a {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "tenant-a's table {:?}\nmux: {}\nagent 1: {}\nagent 2: {}",
            tenant_table(100),
            mux.log(),
            agents[0].log(),
            agents[1].log()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    wait_until("tenant-b's table", Duration::from_secs(30), || {
        tenant_table(200) == ["TCP 203.0.113.20:80: 10.1.0.5:8080 w1"]
    });
    assert_eq!(
        tenant_table(200),
        ["TCP 203.0.113.20:80: 10.1.0.5:8080 w1"],
        "{}",
        mux.log()
    );

    // Each VIP answers from its own tenant's DIPs only, over the overlay
    // (the client's socket is connected to VIP:80: only replies from there
    // reach it, translated back by the DIP's agent).
    assert_eq!(
        answers(&underlay, VIP_A, 12),
        BTreeSet::from([
            "tenant-a 10.1.0.5".to_owned(),
            "tenant-a 10.1.0.6".to_owned(),
            "tenant-a 10.1.0.7".to_owned(),
        ]),
        "{}",
        mux.log()
    );
    assert_eq!(
        answers(&underlay, VIP_B, 4),
        BTreeSet::from(["tenant-b 10.1.0.5".to_owned()])
    );
    // The DIPs saw the client's own address (and their agent's probes,
    // from the segment's address, once each DIP was found: a probe
    // follows the DIP's host, and the Mux serves a DIP before its first
    // report).
    for responder in responders.iter().flatten() {
        wait_until(
            &format!("{}'s first probe", responder.name()),
            Duration::from_secs(15),
            || responder.clients().len() == 2,
        );
        assert_eq!(
            responder.clients(),
            BTreeSet::from([
                IpAddr::V4(Ipv4Addr::new(10, 1, 0, 1)),
                IpAddr::V4(Ipv4Addr::new(172, 30, 0, 2)),
            ]),
            "{}",
            responder.name()
        );
    }
    // Requests crossed the Mux; no reply did.
    let seen = counters(&underlay.mux);
    assert_eq!(seen.len(), 2, "{seen:?}");
    assert_eq!(seen[0], 0, "replies from a VIP crossed the Mux");
    assert!(seen[1] >= 16 * 3, "requests to the VIPs: {seen:?}");
    // On the Mux's underlay link: each request in, then out as VXLAN to
    // its DIP's host, port 4789, with its tenant's VNI; no reply.
    let lines = capture(&underlay.mux, &directory, || {
        answers(&underlay, VIP_A, 3);
        answers(&underlay, VIP_B, 1);
    });
    for line in lines.iter().filter(|line| line.contains("VXLAN")).take(2) {
        println!("capture on the Mux's underlay link: {line}");
    }
    for (vni, host) in [
        (100, "172.30.2.2.4789"),
        (100, "172.30.3.2.4789"),
        (200, "172.30.3.2.4789"),
    ] {
        assert!(
            lines
                .iter()
                .any(|line| line.contains(&format!("{MUX_VTEP}."))
                    && line.contains(&format!("> {host}: VXLAN"))
                    && line.contains(&format!("vni {vni}"))),
            "VXLAN of VNI {vni} to {host} in {lines:#?}"
        );
    }
    assert!(
        lines
            .iter()
            .any(|line| line.contains("172.30.0.2.") && line.contains("> 203.0.113.10.80:")),
        "requests in: {lines:#?}"
    );
    assert!(
        !lines
            .iter()
            .any(|line| line.contains(" 203.0.113.10.80 >") || line.contains(" 203.0.113.20.80 >")),
        "a reply crossed the Mux: {lines:#?}"
    );
    // A megabyte up through the overlay: full-size packets from the
    // client, VXLAN's 50 bytes more on the underlay (which carries them).
    let upload = vec![b'x'; 1 << 20];
    let received =
        labkit::http::Connection::open(&underlay.client, SocketAddr::new(IpAddr::V4(VIP_B), 80))
            .unwrap()
            .post(&upload)
            .unwrap();
    assert_eq!(received, "tenant-b 10.1.0.5 received 1048576");

    // A DIP reported down leaves the table (written here as its agent
    // writes it, to time the Mux alone: from the store's write to the
    // kernel showing it).
    let written = put(
        &etcd,
        &[(
            "/fulcrum/v1/live/health/172.30.2.2/tenant-a/10.1.0.6/8080",
            r#"{"up":false}"#,
        )],
    );
    let put_took = written.elapsed();
    let reached = wait_until("10.1.0.6 leaving", Duration::from_secs(10), || {
        tenant_table(100) == ["TCP 203.0.113.10:80: 10.1.0.5:8080 w1, 10.1.0.7:8080 w1"]
    });
    println!(
        "a DIP's health from the store's write to the kernel without it: {:.1} ms \
         (the write's acknowledgement {:.1} ms, then {:.1} ms to the kernel's table, read \
         every millisecond)",
        (put_took + reached).as_secs_f64() * 1000.0,
        put_took.as_secs_f64() * 1000.0,
        reached.as_secs_f64() * 1000.0
    );
    assert!(!answers(&underlay, VIP_A, 8).contains("tenant-a 10.1.0.6"));
    put(
        &etcd,
        &[(
            "/fulcrum/v1/live/health/172.30.2.2/tenant-a/10.1.0.6/8080",
            r#"{"up":true}"#,
        )],
    );
    wait_until("10.1.0.6 back", Duration::from_secs(10), || {
        tenant_table(100) == full_a
    });

    // A DIP whose service stops: its agent's probe (delay_loop 1,
    // connect_timeout 1, retry 0) finds it down, the Mux drops it; it
    // comes back when the service does. No probe leaves the Mux: the
    // DIPs saw none from it above.
    let stopped = Instant::now();
    responders[1] = None;
    let left = wait_until(
        "10.1.0.6's service stopping",
        Duration::from_secs(15),
        || tenant_table(100) == ["TCP 203.0.113.10:80: 10.1.0.5:8080 w1, 10.1.0.7:8080 w1"],
    );
    println!(
        "a DIP's service stopped to the Mux's table without it: {:.2} s (probe every 1 s, \
         timeout 1 s)",
        left.as_secs_f64()
    );
    let _ = stopped;
    assert!(!answers(&underlay, VIP_A, 6).contains("tenant-a 10.1.0.6"));
    responders[1] = Some(
        Responder::spawn(
            underlay.namespace("sdn-a6"),
            SocketAddr::new(IpAddr::V4(Ipv4Addr::UNSPECIFIED), 8080),
            "tenant-a 10.1.0.6",
        )
        .unwrap(),
    );
    wait_until("10.1.0.6's service back", Duration::from_secs(15), || {
        tenant_table(100) == full_a
    });

    // An agent killed: its DIPs expire with its lease and leave the Mux's
    // tables; the other host's DIPs go on answering. Started again, it
    // registers them again.
    agents.remove(1).kill();
    let expired = wait_until("host2's DIPs expiring", Duration::from_secs(20), || {
        tenant_table(100) == ["TCP 203.0.113.10:80: 10.1.0.5:8080 w1, 10.1.0.6:8080 w1"]
            && tenant_table(200) == ["TCP 203.0.113.20:80: "]
    });
    println!(
        "an agent killed to its DIPs out of the Mux's tables: {:.1} s (lease {} s)",
        expired.as_secs_f64(),
        6
    );
    assert_eq!(
        answers(&underlay, VIP_A, 6),
        BTreeSet::from([
            "tenant-a 10.1.0.5".to_owned(),
            "tenant-a 10.1.0.6".to_owned()
        ])
    );
    agents.push(Daemon::agent(&underlay, 2, &directory, &etcd));
    wait_until("host2's DIPs back", Duration::from_secs(30), || {
        tenant_table(100) == full_a
            && tenant_table(200) == ["TCP 203.0.113.20:80: 10.1.0.5:8080 w1"]
    });

    // The status shows the Mux's and the agents' applied revisions.
    let status = Command::new(PULSE)
        .arg(format!("--cluster={}", etcd.urls()))
        .arg("--status")
        .output()
        .unwrap();
    let status = String::from_utf8_lossy(&status.stdout).into_owned();
    for line in [
        format!("  {MUX_VTEP}  applied revision 1"),
        "  172.30.2.2  vtep 172.30.2.2  2 DIPs  applied revision 1".to_owned(),
        "  172.30.3.2  vtep 172.30.3.2  2 DIPs  applied revision 1".to_owned(),
        "    10.1.0.6:8080  weight 1  172.30.2.2  up".to_owned(),
    ] {
        assert!(
            status.lines().any(|shown| shown == line),
            "{line:?} in\n{status}"
        );
    }

    // A policy change (a weight) through `pulse --apply`: its transaction,
    // then the kernel's table showing it.
    let urls = etcd.urls();
    let apply = |text: &str| {
        std::fs::write(&policy, text).unwrap();
        let output = Command::new(PULSE)
            .arg(format!("--cluster={urls}"))
            .arg("--apply")
            .arg(&policy)
            .output()
            .unwrap();
        assert_eq!(
            output.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8_lossy(&output.stdout).into_owned()
    };
    let weighted = POLICY.replacen(
        "    real_server 10.1.0.5 8080 {\n",
        "    real_server 10.1.0.5 8080 {\n        weight 3\n",
        1,
    );
    let said = apply(&weighted);
    let reached = wait_until("the weight", Duration::from_secs(10), || {
        tenant_table(100)
            == ["TCP 203.0.113.10:80: 10.1.0.5:8080 w3, 10.1.0.6:8080 w1, 10.1.0.7:8080 w1"]
    });
    println!(
        "a policy change: {} then {:.1} ms from the transaction's return to the kernel's table \
         (read every millisecond)",
        said.trim(),
        reached.as_secs_f64() * 1000.0
    );

    // Fail static: the Mux cut off from the store keeps forwarding; a
    // policy written meanwhile is applied once it is back.
    nft(
        &underlay.mux,
        "table inet sdncut {\n    chain out {\n        type filter hook output priority 0;\n        \
         ip daddr 172.30.4.1 drop\n    }\n}\n",
    );
    apply(&weighted.replacen("        weight 3\n", "        weight 4\n", 1));
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(
        tenant_table(100),
        ["TCP 203.0.113.10:80: 10.1.0.5:8080 w3, 10.1.0.6:8080 w1, 10.1.0.7:8080 w1"],
        "applied without the store"
    );
    assert_eq!(
        answers(&underlay, VIP_A, 6).len(),
        3,
        "forwarding while cut off"
    );
    assert!(
        underlay
            .mux
            .command("nft")
            .args(["delete", "table", "inet", "sdncut"])
            .status()
            .unwrap()
            .success()
    );
    let caught_up = wait_until("catching up", Duration::from_secs(30), || {
        tenant_table(100)
            == ["TCP 203.0.113.10:80: 10.1.0.5:8080 w4, 10.1.0.6:8080 w1, 10.1.0.7:8080 w1"]
    });
    println!(
        "the Mux caught up {:.1} s after the store was reachable again",
        caught_up.as_secs_f64()
    );
    assert!(
        mux.log().contains("forwarding as last applied"),
        "{}",
        mux.log()
    );

    // The store without quorum (two of its three members stopped): no
    // write, no lease renewed; forwarding goes on beyond a lease's life
    // (the agents' DIPs do not expire: etcd keeps leases while it has no
    // leader); back, the Mux follows it again.
    etcd.stop_member(1);
    etcd.stop_member(2);
    let lost = Instant::now();
    while lost.elapsed() < Duration::from_secs(8) {
        assert_eq!(
            answers(&underlay, VIP_A, 3).len(),
            3,
            "forwarding without quorum, {:?} in",
            lost.elapsed()
        );
        std::thread::sleep(Duration::from_millis(500));
    }
    assert_eq!(
        tenant_table(100),
        ["TCP 203.0.113.10:80: 10.1.0.5:8080 w4, 10.1.0.6:8080 w1, 10.1.0.7:8080 w1"],
        "without quorum"
    );
    etcd.start_member(1).unwrap();
    etcd.start_member(2).unwrap();
    etcd.wait_healthy(Duration::from_secs(60)).unwrap();
    apply(&weighted.replacen("        weight 3\n", "        weight 5\n", 1));
    wait_until("following the store again", Duration::from_secs(30), || {
        tenant_table(100)
            == ["TCP 203.0.113.10:80: 10.1.0.5:8080 w5, 10.1.0.6:8080 w1, 10.1.0.7:8080 w1"]
    });
    assert_eq!(
        tenant_table(200),
        ["TCP 203.0.113.20:80: 10.1.0.5:8080 w1"],
        "after quorum"
    );

    // A Mux killed leaves the kernel as it was; the next adopts it without
    // a flush, and a connection opened before the crash is answered after.
    let before = (tenant_table(100), tenant_table(200));
    let open =
        labkit::http::Connection::open(&underlay.client, SocketAddr::new(IpAddr::V4(VIP_B), 80))
            .unwrap();
    mux.kill();
    assert_eq!(
        (tenant_table(100), tenant_table(200)),
        before,
        "after the crash"
    );
    mux = Daemon::mux(&underlay, &directory, &etcd);
    wait_until(
        "the restarted Mux applying",
        Duration::from_secs(30),
        || mux.log().contains("policy revision 4 applied"),
    );
    assert_eq!((tenant_table(100), tenant_table(200)), before, "adopted");
    assert_eq!(open.get().unwrap().trim(), "tenant-b 10.1.0.5");
    assert!(
        mux.log().contains("adopting the namespace fulcrum-vni100"),
        "{}",
        mux.log()
    );

    // Clean stops remove what the agents and the Mux made.
    for agent in agents {
        let log = agent.log();
        assert!(agent.stop().success(), "{log}");
    }
    for host in ["sdn-host1", "sdn-host2"] {
        let links = underlay
            .namespace(host)
            .command("ip")
            .args(["-o", "link"])
            .output()
            .unwrap();
        let links = String::from_utf8_lossy(&links.stdout).into_owned();
        assert!(!links.contains("fvx"), "{host}: {links}");
    }
    let log = mux.log();
    let stopped = mux.stop();
    assert!(stopped.success(), "{stopped}: {log}");
    assert!(!Path::new("/run/netns/fulcrum-vni100").exists());
    assert!(!Path::new("/run/netns/fulcrum-vni200").exists());
    let links = underlay
        .mux
        .command("ip")
        .args(["-o", "link"])
        .output()
        .unwrap();
    let links = String::from_utf8_lossy(&links.stdout).into_owned();
    assert!(
        !links.contains("fvm100") && !links.contains("fvx"),
        "{links}"
    );
    let _ = std::fs::remove_dir_all(&directory);
}
