//! The SDN mode's lab topology, shared by its tests (pulse/tests/lab/sdn.rs
//! with one Mux, pulse/tests/lab/ecmp.rs with several) and `cargo xtask
//! demo sdn`: a routed underlay (a client and an edge router; each Mux, two
//! hosts and the cluster store each on a subnet of its own behind the
//! router), two tenants on VXLAN with the same DIP address, the daemons
//! started with their files, and what the tests and the demo look at (who
//! answers, a capture, the router's paths).
//!
//! Each Mux is a [`Machine`] of its own (it keeps its tenants in its own
//! /run/netns, as on a machine of its own), on a link of its own to the
//! router. Tests that build this topology take [`exclusive`] first: lab
//! tests of one binary run side by side, and the topology's names and the
//! store's address are the guest's.
//!
//! The hosts' segments (a bridge per network) are the operator's, made
//! here with iproute2: the agents terminate VXLAN, translate VIP:80 to
//! DIP:8080, find the DIPs and probe them. The DIPs are plain servers on
//! their segment (port 8080, their host's segment address as gateway): no
//! VIP of their own, no ARP settings.

use std::collections::BTreeSet;
use std::fs::File;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use crate::etcd::Etcd;
use crate::http::{Connection, Responder};
use crate::{Machine, Namespace};

pub const VIP_A: Ipv4Addr = Ipv4Addr::new(203, 0, 113, 10);
pub const VIP_B: Ipv4Addr = Ipv4Addr::new(203, 0, 113, 20);
/// The first Mux's tunnel endpoint (its address on its link to the router).
pub const MUX_VTEP: &str = "172.30.1.2";
/// The cluster store's address: the guest's own end of a link to the
/// router (etcd runs in the guest's namespace).
pub const STORE_ADDRESS: Ipv4Addr = Ipv4Addr::new(172, 30, 4, 1);
/// The DIPs' port, which the agents translate the VIPs' port 80 to.
pub const BACKEND_PORT: u16 = 8080;
/// The DIPs: namespace, and the name each answers with.
pub const DIPS: [(&str, &str); 5] = [
    ("sdn-a5", "tenant-a 10.1.0.5"),
    ("sdn-a6", "tenant-a 10.1.0.6"),
    ("sdn-a7", "tenant-a 10.1.0.7"),
    ("sdn-b5", "tenant-b 10.1.0.5"),
    ("sdn-b6", "tenant-b 10.1.0.6"),
];

/// The policy: two tenant networks, a VIP each, the same DIP address in
/// both; each DIP probed by its host's agent every second.
pub const POLICY: &str = "virtual_network tenant-a {
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

/// Held while a test or the demo uses the SDN topology: one at a time in
/// the guest.
pub fn exclusive() -> std::sync::MutexGuard<'static, ()> {
    static TOPOLOGY: std::sync::Mutex<()> = std::sync::Mutex::new(());
    // A test that panicked holding it has dropped its topology all the same.
    TOPOLOGY
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A Mux of the topology: a machine on a link of its own to the router.
pub struct Mux {
    /// 1 for the first.
    pub number: u32,
    pub machine: Machine,
}

impl Mux {
    /// Its address on its link, which is its VTEP and its BGP address:
    /// 172.30.1.2 for the first, 172.30.1N.2 for the Nth after.
    pub fn vtep(&self) -> Ipv4Addr {
        Ipv4Addr::new(172, 30, mux_subnet(self.number), 2)
    }

    /// The router's address on the Mux's link.
    pub fn gateway(&self) -> Ipv4Addr {
        Ipv4Addr::new(172, 30, mux_subnet(self.number), 1)
    }

    /// The router's end of the Mux's link: `mux` for the first, `muxN`.
    pub fn router_link(&self) -> String {
        link_name(self.number)
    }

    pub fn namespace(&self) -> &Namespace {
        self.machine.namespace()
    }

    /// The IPVS table of the tenant of `vni` on this Mux, read in its
    /// namespace (`fulcrum-vniN` of the Mux's machine), as lines `SERVICE:
    /// DESTINATION wWEIGHT, ...`, sorted; empty while it has none (or no
    /// namespace yet).
    pub fn tenant_table(&self, vni: u32) -> Vec<String> {
        self.in_tenant(vni, || -> Result<Vec<String>> {
            let mut client = ipvs::Client::connect()?;
            let mut lines = Vec::new();
            for service in client.services()? {
                let mut destinations: Vec<String> = client
                    .destinations(&service.key)?
                    .iter()
                    .map(|destination| {
                        format!("{} w{}", destination.socket_address(), destination.weight)
                    })
                    .collect();
                destinations.sort();
                lines.push(format!("{}: {}", service.key, destinations.join(", ")));
            }
            lines.sort();
            Ok(lines)
        })
        .unwrap_or_default()
    }

    /// Runs `work` in the namespace of the tenant of `vni` on this Mux
    /// (`fulcrum-vniN` of its machine); `None` while there is none, or
    /// when `work` fails.
    pub fn in_tenant<T: Send>(
        &self,
        vni: u32,
        work: impl FnOnce() -> Result<T> + Send,
    ) -> Option<T> {
        self.machine
            .run_in_named(&format!("fulcrum-vni{vni}"), work)
            .and_then(Result::ok)
    }

    /// How many packets the tenant of `vni`'s IPVS on this Mux has
    /// forwarded (its services' totals; the kernel's estimator sums them,
    /// so they lag up to 2 s).
    pub fn forwarded(&self, vni: u32) -> u64 {
        self.in_tenant(vni, || -> Result<u64> {
            let mut client = ipvs::Client::connect()?;
            Ok(client
                .services()?
                .iter()
                .filter_map(|service| service.statistics.as_ref())
                .map(|statistics| statistics.incoming_packets)
                .sum())
        })
        .unwrap_or(0)
    }

    /// The tenant of `vni`'s IPVS connections on this Mux.
    pub fn connections(&self, vni: u32) -> Vec<crate::IpvsConnection> {
        self.in_tenant(vni, crate::ipvs_connections_here)
            .unwrap_or_default()
    }
}

fn mux_subnet(number: u32) -> u8 {
    if number == 1 { 1 } else { 10 + number as u8 }
}

fn link_name(number: u32) -> String {
    if number == 1 {
        "mux".to_owned()
    } else {
        format!("mux{number}")
    }
}

/// [`POLICY`] with `scheduler` for both VIPs: `mh` where several Muxes
/// share the flows (every Mux chooses the same DIP for a flow).
pub fn policy(scheduler: &str) -> String {
    POLICY.replace("lb_algo rr", &format!("lb_algo {scheduler}"))
}

/// The namespaces and machines, and the guest's own end of the store's
/// link, removed when dropped.
pub struct Topology {
    pub client: Namespace,
    pub muxes: Vec<Mux>,
    others: Vec<Namespace>,
}

impl Topology {
    /// Builds it with `muxes` Muxes (1 to 8). host1 holds tenant-a's .5
    /// and .6, host2 tenant-a's .7 and tenant-b's .5 and .6 (the policy
    /// names tenant-b's .6 only once a DIP is added to it). The underlay
    /// carries VXLAN's 50 bytes more than a 1,500-byte packet (1,550-byte
    /// links to the Muxes and the hosts). The router hashes a flow's ports
    /// too when it spreads flows over several paths
    /// (`fib_multipath_hash_policy=1`). Before BGP ([`Bgp::start`]) the
    /// VIPs are routed to the first Mux.
    pub fn build(muxes: u32) -> Result<Topology> {
        assert!((1..=8).contains(&muxes), "1 to 8 Muxes");
        let names = [
            "sdn-client",
            "sdn-router",
            "sdn-host1",
            "sdn-host2",
            "sdn-a5",
            "sdn-a6",
            "sdn-a7",
            "sdn-b5",
            "sdn-b6",
        ];
        let mut namespaces = names
            .iter()
            .map(|name| Namespace::create(name))
            .collect::<Result<Vec<Namespace>>>()?;
        crate::run_ip(
            None,
            "link add eth0 netns sdn-client type veth peer name client netns sdn-router
link add eth0 netns sdn-host1 type veth peer name host1 netns sdn-router
link add eth0 netns sdn-host2 type veth peer name host2 netns sdn-router
link add sdnstore0 type veth peer name store netns sdn-router
link add eth0 netns sdn-a5 address 02:00:00:00:01:05 type veth peer name a5 netns sdn-host1
link add eth0 netns sdn-a6 address 02:00:00:00:01:06 type veth peer name a6 netns sdn-host1
link add eth0 netns sdn-a7 address 02:00:00:00:01:07 type veth peer name a7 netns sdn-host2
link add eth0 netns sdn-b5 address 02:00:00:00:02:05 type veth peer name b5 netns sdn-host2
link add eth0 netns sdn-b6 address 02:00:00:00:02:06 type veth peer name b6 netns sdn-host2
addr add 172.30.4.1/24 dev sdnstore0
link set sdnstore0 up
route add 172.30.0.0/16 via 172.30.4.2",
        )?;
        let router = &namespaces[1];
        router.ip("addr add 172.30.0.1/24 dev client
addr add 172.30.2.1/24 dev host1
addr add 172.30.3.1/24 dev host2
addr add 172.30.4.2/24 dev store
link set client up
link set host1 up mtu 1550
link set host2 up mtu 1550
link set store up")?;
        router.sysctl("net/ipv4/ip_forward", "1")?;
        router.sysctl("net/ipv4/fib_multipath_hash_policy", "1")?;
        namespaces[0].ip(
            "addr add 172.30.0.2/24 dev eth0\nlink set eth0 up\nroute add default via 172.30.0.1",
        )?;
        let mut built = Vec::new();
        for number in 1..=muxes {
            let name = if number == 1 {
                "sdn-mux".to_owned()
            } else {
                format!("sdn-mux{number}")
            };
            let mux = Mux {
                number,
                machine: Machine::create(&name)?,
            };
            let link = mux.router_link();
            crate::run_ip(
                None,
                &format!("link add eth0 netns {name} type veth peer name {link} netns sdn-router"),
            )?;
            router.ip(&format!(
                "addr add {}/24 dev {link}\nlink set {link} up mtu 1550",
                mux.gateway()
            ))?;
            // The underlay carries VXLAN's 50 bytes more than a 1,500-byte
            // packet.
            mux.namespace().ip(&format!(
                "addr add {}/24 dev eth0\nlink set eth0 up mtu 1550\nroute add default via {}",
                mux.vtep(),
                mux.gateway()
            ))?;
            built.push(mux);
        }
        // Until BGP routes them, the VIPs are the first Mux's.
        router.ip(&format!("route add 203.0.113.0/24 via {MUX_VTEP}"))?;
        let host = |namespace: &Namespace,
                    gateway: &str,
                    address: &str,
                    segments: &[(u32, &[&str], &str)]|
         -> Result<()> {
            let mut commands = format!(
                "addr add {address}/24 dev eth0\nlink set eth0 up mtu 1550\nroute add default via {gateway}\n"
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
            namespace.ip(&commands)
        };
        host(
            &namespaces[2],
            "172.30.2.1",
            "172.30.2.2",
            &[(100, &["a5", "a6"], "10.1.0.1/24")],
        )?;
        host(
            &namespaces[3],
            "172.30.3.1",
            "172.30.3.2",
            &[
                (100, &["a7"], "10.1.0.1/24"),
                (200, &["b5", "b6"], "10.1.0.1/32"),
            ],
        )?;
        for (index, dip) in [
            (4, "10.1.0.5"),
            (5, "10.1.0.6"),
            (6, "10.1.0.7"),
            (7, "10.1.0.5"),
            (8, "10.1.0.6"),
        ] {
            namespaces[index].ip(&format!(
                "addr add {dip}/24 dev eth0\nlink set eth0 up\nroute add default via 10.1.0.1"
            ))?;
        }
        let client = namespaces.remove(0);
        Ok(Topology {
            client,
            muxes: built,
            others: namespaces,
        })
    }

    /// The first Mux.
    pub fn mux(&self) -> &Mux {
        &self.muxes[0]
    }

    /// A namespace of the topology other than the client's and the Muxes':
    /// `sdn-router`, `sdn-host1`, `sdn-a5`...
    pub fn namespace(&self, name: &str) -> &Namespace {
        self.others
            .iter()
            .find(|namespace| namespace.name() == name)
            .unwrap_or_else(|| panic!("no namespace {name} in the SDN topology"))
    }

    /// A responder on each DIP's backend port, answering with its name.
    pub fn responders(&self) -> Result<Vec<Option<Responder>>> {
        DIPS.iter()
            .map(|(namespace, name)| self.responder(namespace, name).map(Some))
            .collect()
    }

    /// The responder of the DIP in `namespace`, answering `name`.
    pub fn responder(&self, namespace: &str, name: &str) -> Result<Responder> {
        Responder::spawn(
            self.namespace(namespace),
            SocketAddr::new(IpAddr::V4(Ipv4Addr::UNSPECIFIED), BACKEND_PORT),
            name,
        )
    }

    /// Who answers `count` requests to `vip`:80 from the client. Each
    /// connects within 10 s (SYN resends at 1, 3 and 7 s), not 3: in CI on
    /// 7 December 2026 one connect timed out at 3 s, with other lab tests
    /// running beside in the emulated guest, and nothing found wrong in
    /// the datapath (no change logged by the Mux or the agents, routes in
    /// place); taken as the guest stalling under load.
    pub fn answers(&self, vip: Ipv4Addr, count: usize) -> Result<BTreeSet<String>> {
        (0..count)
            .map(|_| {
                Connection::open_within(
                    &self.client,
                    SocketAddr::new(IpAddr::V4(vip), 80),
                    Duration::from_secs(10),
                )?
                .get()
                .map(|answer| answer.trim().to_owned())
            })
            .collect()
    }
}

impl Drop for Topology {
    fn drop(&mut self) {
        let _ = crate::run_ip(None, "link del sdnstore0");
    }
}

/// What tcpdump saw on `namespace`'s `interface` ("any": all) with
/// `filter` while `during` ran, one line per packet (`-n`, `-e`: link
/// headers too). A real capture: the lines say what went on the wire.
pub fn capture(
    namespace: &Namespace,
    interface: &str,
    filter: &str,
    directory: &Path,
    during: impl FnOnce(),
) -> Result<Vec<String>> {
    std::fs::create_dir_all(directory)?;
    let output = directory.join("capture.txt");
    let errors = directory.join("capture.err");
    let mut tcpdump = namespace
        .command("tcpdump")
        .args(["-i", interface, "-n", "-l", "-U", "-e"])
        .arg(filter)
        .stdout(File::create(&output)?)
        .stderr(File::create(&errors)?)
        .spawn()
        .context("cannot start tcpdump")?;
    let listening = wait_until("tcpdump listening", Duration::from_secs(20), || {
        std::fs::read_to_string(&errors).is_ok_and(|text| text.contains("listening on"))
    });
    if listening.is_ok() {
        during();
        // What was sent is seen before the last answer came back; a
        // moment for tcpdump to write it.
        std::thread::sleep(Duration::from_millis(500));
    }
    // SAFETY: kill on our own child.
    unsafe { libc::kill(tcpdump.id() as libc::pid_t, libc::SIGINT) };
    tcpdump.wait()?;
    listening.with_context(|| std::fs::read_to_string(&errors).unwrap_or_default())?;
    Ok(std::fs::read_to_string(&output)?
        .lines()
        .map(str::to_owned)
        .collect())
}

/// What tcpdump saw on the Mux's underlay link (`eth0`) of VXLAN and of
/// the VIPs' traffic while `during` ran.
pub fn capture_underlay(
    mux: &Namespace,
    directory: &Path,
    during: impl FnOnce(),
) -> Result<Vec<String>> {
    capture(
        mux,
        "eth0",
        "udp port 4789 or net 203.0.113.0/24",
        directory,
        during,
    )
}

/// Whether a capture line is a packet from a VIP's port 80: a reply that
/// crossed the Mux.
pub fn is_reply_from_a_vip(line: &str) -> bool {
    [VIP_A, VIP_B]
        .iter()
        .any(|vip| line.contains(&format!(" {vip}.80 >")))
}

/// The agents' file for host `number` (1 or 2).
pub fn agent_configuration(number: u32) -> &'static str {
    match number {
        1 => {
            "host_agent {\n    vtep 172.30.2.2\n}\nvirtual_network tenant-a {\n    vni 100\n    interface br100\n}\n"
        }
        _ => {
            "host_agent {\n    vtep 172.30.3.2\n}\nvirtual_network tenant-a {\n    vni 100\n    interface br100\n}\nvirtual_network tenant-b {\n    vni 200\n    interface br200\n}\n"
        }
    }
}

/// A daemon (the Mux, an agent), its standard error in a file.
pub struct Daemon {
    child: Child,
    log: PathBuf,
}

impl Daemon {
    /// `pulse` as the Mux on `mux`'s machine, its files in `directory`
    /// (`mux.conf` and `mux.log` for the first, `muxN.conf`...).
    pub fn mux(mux: &Mux, pulse: &Path, directory: &Path, etcd: &Etcd) -> Result<Daemon> {
        Daemon::mux_notifying(mux, pulse, directory, etcd, None)
    }

    /// [`Daemon::mux`] serving `/metrics` on `metrics` (in the Mux's
    /// namespace).
    pub fn mux_serving_metrics(
        mux: &Mux,
        pulse: &Path,
        directory: &Path,
        etcd: &Etcd,
        metrics: SocketAddr,
    ) -> Result<Daemon> {
        Daemon::mux_with(mux, pulse, directory, etcd, None, Some(metrics))
    }

    /// [`Daemon::mux`] with `NOTIFY_SOCKET` set to `notify_socket`, as
    /// systemd runs pulse.service (`Type=notify`).
    pub fn mux_notifying(
        mux: &Mux,
        pulse: &Path,
        directory: &Path,
        etcd: &Etcd,
        notify_socket: Option<&Path>,
    ) -> Result<Daemon> {
        Daemon::mux_with(mux, pulse, directory, etcd, notify_socket, None)
    }

    fn mux_with(
        mux: &Mux,
        pulse: &Path,
        directory: &Path,
        etcd: &Etcd,
        notify_socket: Option<&Path>,
        metrics: Option<SocketAddr>,
    ) -> Result<Daemon> {
        let name = link_name(mux.number);
        let configuration = directory.join(format!("{name}.conf"));
        std::fs::write(
            &configuration,
            format!("mux {{\n    vtep {}\n}}\n", mux.vtep()),
        )?;
        let mut command = mux.machine.command(pulse);
        command.args(["-G"]);
        if let Some(metrics) = metrics {
            command.arg(format!("--metrics={metrics}"));
        }
        if let Some(socket) = notify_socket {
            command.env("NOTIFY_SOCKET", socket);
        }
        Daemon::start(
            command,
            &configuration,
            directory.join(format!("{name}.log")),
            etcd,
        )
    }

    /// Its process id.
    pub fn id(&self) -> u32 {
        self.child.id()
    }

    /// `agent` (fulcrum-agent) on host `number` (1 or 2).
    pub fn agent(
        topology: &Topology,
        agent: &Path,
        number: u32,
        directory: &Path,
        etcd: &Etcd,
    ) -> Result<Daemon> {
        Daemon::agent_with(topology, agent, number, directory, etcd, None)
    }

    /// [`Daemon::agent`] serving `/metrics` on `metrics` (in its host's
    /// namespace, `sdn-hostN`).
    pub fn agent_serving_metrics(
        topology: &Topology,
        agent: &Path,
        number: u32,
        directory: &Path,
        etcd: &Etcd,
        metrics: SocketAddr,
    ) -> Result<Daemon> {
        Daemon::agent_with(topology, agent, number, directory, etcd, Some(metrics))
    }

    fn agent_with(
        topology: &Topology,
        agent: &Path,
        number: u32,
        directory: &Path,
        etcd: &Etcd,
        metrics: Option<SocketAddr>,
    ) -> Result<Daemon> {
        let configuration = directory.join(format!("agent{number}.conf"));
        std::fs::write(&configuration, agent_configuration(number))?;
        let mut command = topology
            .namespace(&format!("sdn-host{number}"))
            .direct_command(agent);
        if let Some(metrics) = metrics {
            command.arg(format!("--metrics={metrics}"));
        }
        Daemon::start(
            command,
            &configuration,
            directory.join(format!("agent{number}.log")),
            etcd,
        )
    }

    fn start(
        mut command: Command,
        configuration: &Path,
        log: PathBuf,
        etcd: &Etcd,
    ) -> Result<Daemon> {
        let child = command
            .arg("-f")
            .arg(configuration)
            .arg(format!("--cluster={}", etcd.urls()))
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(File::create(&log)?)
            .spawn()
            .context("cannot start a daemon")?;
        Ok(Daemon { child, log })
    }

    /// What it has logged so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Where the process is, for a wait it failed: its state, and each
    /// thread's kernel wait channel and stack (a daemon that logged
    /// nothing is stuck somewhere, or was never scheduled).
    pub fn whereabouts(&self) -> String {
        let process = format!("/proc/{}", self.child.id());
        let state = std::fs::read_to_string(format!("{process}/status"))
            .map(|status| {
                status
                    .lines()
                    .filter(|line| line.starts_with("State:") || line.starts_with("Threads:"))
                    .collect::<Vec<_>>()
                    .join(", ")
            })
            .unwrap_or_else(|error| format!("no {process}: {error}"));
        let mut text = format!("pid {}: {state}\n", self.child.id());
        let mut threads: Vec<_> = std::fs::read_dir(format!("{process}/task"))
            .into_iter()
            .flatten()
            .flatten()
            .map(|entry| entry.path())
            .collect();
        threads.sort();
        for thread in threads {
            let read = |name: &str| std::fs::read_to_string(thread.join(name)).unwrap_or_default();
            text.push_str(&format!(
                "thread {} ({}): wchan {}\n{}",
                thread.display(),
                read("comm").trim(),
                read("wchan"),
                read("stack")
            ));
        }
        text
    }

    /// SIGKILL: a crash, with nothing cleaned up.
    pub fn kill(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// SIGTERM, and its exit; an error if it has not exited within
    /// [`STOP_LIMIT`] (then it is killed, and its log said).
    pub fn stop(mut self) -> Result<ExitStatus> {
        // SAFETY: kill on our own child.
        unsafe { libc::kill(self.child.id() as libc::pid_t, libc::SIGTERM) };
        let started = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait()? {
                return Ok(status);
            }
            if started.elapsed() > STOP_LIMIT {
                let _ = self.child.kill();
                let _ = self.child.wait();
                bail!(
                    "not stopped {STOP_LIMIT:?} after SIGTERM (killed); its log:\n{}",
                    self.log()
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// How long a daemon has to stop cleanly.
pub const STOP_LIMIT: Duration = Duration::from_secs(60);

/// Waits until `done`, at most `limit`; how long it took.
pub fn wait_until(what: &str, limit: Duration, mut done: impl FnMut() -> bool) -> Result<Duration> {
    let started = Instant::now();
    while !done() {
        if started.elapsed() > limit {
            bail!("{what}: not within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    Ok(started.elapsed())
}

/// The Muxes' AS (one for all: equal paths the router merges), and the
/// edge router's.
pub const MUX_AS: u32 = 65001;
pub const ROUTER_AS: u32 = 65000;

/// Both ends of every BGP session: hold time 3 s (BIRD's least: a Mux cut
/// off is dropped when it expires), keepalives every second.
const SESSION_TIMERS: &str = "    hold time 3; keepalive time 1; connect retry time 1;
    # After a session's error BIRD waits 60 s or more before the next
    # attempt unless told: a Mux let through again is back in seconds.
    error wait time 1, 5;
";

/// BIRD (Debian's bird2) beside each Mux and on the edge router, peered by
/// eBGP over each Mux's link: a Mux's BIRD learns the routes pulse keeps
/// in the announce table (its kernel protocol's `learn`) and exports them;
/// the router's imports them and writes them to its kernel, merging equal
/// paths (ECMP over the Muxes). Hold time 3 s (BIRD's least), keepalives
/// every second. The router peers with every Mux of the topology from the
/// start (a Mux whose BIRD is not started yet is a session still
/// connecting). Stopped when dropped.
pub struct Bgp {
    directory: PathBuf,
    router: Child,
    /// Each running Mux's BIRD, by the Mux's number.
    muxes: Vec<(u32, Child)>,
}

impl Bgp {
    /// Starts the router's BIRD and the BIRD beside each of the first
    /// `running` Muxes; once the router routes each of `vips` by BGP, its
    /// static route to the VIPs is removed: from then on the VIPs are
    /// reached by what BGP says alone.
    pub fn start(
        topology: &Topology,
        directory: &Path,
        vips: &[Ipv4Addr],
        running: usize,
    ) -> Result<Bgp> {
        let gateway = topology.mux().gateway();
        let mut router = format!(
            "router id {gateway};
protocol device {{ }}
protocol kernel {{
    # The Muxes' equal paths, one multipath route (ECMP).
    merge paths on;
    ipv4 {{ import none; export all; }};
}}
"
        );
        for mux in &topology.muxes {
            router.push_str(&format!(
                "protocol bgp {name} {{
    local {gateway} as {ROUTER_AS};
    neighbor {vtep} as {MUX_AS};
{SESSION_TIMERS}    ipv4 {{ import all; export none; }};
}}
",
                name = link_name(mux.number),
                gateway = mux.gateway(),
                vtep = mux.vtep(),
            ));
        }
        let router = bird(
            topology.namespace("sdn-router").direct_command("bird"),
            directory,
            "router",
            &router,
        )?;
        let mut bgp = Bgp {
            directory: directory.to_owned(),
            router,
            muxes: Vec::new(),
        };
        for mux in topology.muxes.iter().take(running) {
            bgp.start_mux(mux)?;
        }
        wait_until(
            "the router learning the VIPs by BGP",
            Duration::from_secs(60),
            || {
                vips.iter().all(|vip| {
                    !router_paths(topology, *vip)
                        .expect("the router's routes")
                        .is_empty()
                })
            },
        )?;
        topology
            .namespace("sdn-router")
            .ip(&format!("route del 203.0.113.0/24 via {MUX_VTEP}"))?;
        Ok(bgp)
    }

    /// Starts the BIRD beside `mux`.
    pub fn start_mux(&mut self, mux: &Mux) -> Result<()> {
        let vtep = mux.vtep();
        let text = format!(
            "router id {vtep};
protocol device {{ }}
# pulse's announce table (mux {{ announce_table }}, 4789 unless written).
protocol kernel announce {{
    kernel table 4789;
    learn;
    ipv4 {{ import all; export none; }};
}}
protocol bgp edge {{
    local {vtep} as {MUX_AS};
    neighbor {gateway} as {ROUTER_AS};
{SESSION_TIMERS}    ipv4 {{ import none; export all; next hop self; }};
}}
",
            gateway = mux.gateway()
        );
        let child = bird(
            mux.machine.command("bird"),
            &self.directory,
            &link_name(mux.number),
            &text,
        )?;
        self.muxes.push((mux.number, child));
        Ok(())
    }

    /// Kills the BIRD beside Mux `number` (SIGKILL: its BGP session's TCP
    /// connection is closed by the kernel as the process ends).
    pub fn kill_mux(&mut self, number: u32) {
        if let Some(position) = self.muxes.iter().position(|(mux, _)| *mux == number) {
            let (_, mut child) = self.muxes.remove(position);
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Starts `bird` in the foreground with `text` as its file, its control
/// socket and log in `directory` under `name`.
fn bird(mut command: Command, directory: &Path, name: &str, text: &str) -> Result<Child> {
    let configuration = directory.join(format!("bird-{name}.conf"));
    std::fs::write(&configuration, text)?;
    command
        .arg("-f")
        .arg("-c")
        .arg(&configuration)
        .arg("-s")
        .arg(directory.join(format!("bird-{name}.ctl")))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(File::create(directory.join(format!("bird-{name}.log")))?)
        .spawn()
        .context("cannot start bird (Debian's bird2)")
}

impl Drop for Bgp {
    fn drop(&mut self) {
        for (_, child) in &mut self.muxes {
            let _ = child.kill();
            let _ = child.wait();
        }
        let _ = self.router.kill();
        let _ = self.router.wait();
    }
}

/// The next hops of the edge router's route to `vip` (/32, main table):
/// the Muxes it sends the VIP's flows to (one address per path of a
/// multipath route), sorted; empty when it has no such route. Read over
/// rtnetlink on a thread (no process: the lab's processes cost a tenth of
/// a second each, and this is polled to time a withdrawal).
pub fn router_paths(topology: &Topology, vip: Ipv4Addr) -> Result<Vec<Ipv4Addr>> {
    let routes = topology
        .namespace("sdn-router")
        .run(crate::routes::dump_ipv4)?
        .context("the router's routes")?;
    Ok(routes
        .into_iter()
        .find(|route| route.destination == vip && route.prefix_length == 32)
        .map(|route| route.next_hops)
        .unwrap_or_default())
}
