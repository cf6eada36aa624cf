//! `cargo xtask demo`: pulse load balancing in a real kernel, from a
//! keepalived.conf, on two directors.
//!
//! In the guest: a client, two directors and two real servers, each in its
//! own network namespace (labkit's `FailoverTopology`). pulse runs in both
//! directors with the configuration the demo prints; VRRP makes director1
//! master, holding the virtual address. The client's requests alternate
//! between the real servers; one server stops, its health check fails and
//! pulse takes it out of the rotation; it comes back, and so does its share
//! of the requests. Then director1 dies (pulse killed, links cut):
//! director2 takes the virtual address over, the client's ARP entry for it
//! changes from director1's hardware address to director2's, and the
//! requests go on.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::os::unix::net::UnixDatagram;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use ipvs::{Client, ServiceKey};
use labkit::{Director, FailoverTopology, Namespace, http};

/// A director's keepalived.conf: the same on both but the priority.
fn configuration(priority: u8) -> String {
    format!(
        "\
global_defs {{
    lvs_sync_daemon {server_side} VI_1
}}
vrrp_instance VI_1 {{
    interface {client_side}
    virtual_router_id 51
    version 3
    advert_int 0.5
    priority {priority}
    virtual_ipaddress {{
        {virtual_address}/24 dev {client_side}
        {gateway}/24 dev {server_side}
    }}
}}
virtual_server {virtual_address} 80 {{
    protocol TCP
    lvs_sched rr
    lvs_method NAT
    delay_loop 1
    real_server 10.0.2.11 80 {{
        TCP_CHECK {{
            connect_timeout 1
        }}
    }}
    real_server 10.0.2.12 80 {{
        TCP_CHECK {{
            connect_timeout 1
        }}
    }}
}}
",
        client_side = FailoverTopology::CLIENT_INTERFACE,
        server_side = FailoverTopology::SERVER_INTERFACE,
        virtual_address = FailoverTopology::VIRTUAL_ADDRESS,
        gateway = FailoverTopology::GATEWAY_ADDRESS,
    )
}

/// Where the demo keeps its files in the guest (its tmpfs).
const DIRECTORY: &str = "/run/fulcrum-demo";

/// In the guest: the demo itself, with the pulse binary at `pulse`. Fails
/// unless every step shows what it should.
pub fn run_in_guest(pulse: &Path) -> Result<()> {
    println!(
        "Building the topology: a client, two directors and two real servers (namespaces), \
         joined by two bridges."
    );
    let topology = FailoverTopology::build("demo", 2)?;
    let mut responders = topology.start_responders(80)?;
    for responder in &responders {
        println!(
            "  {} at {}: an HTTP server answering with its name",
            responder.name(),
            responder.address()
        );
    }
    for director in &topology.directors {
        println!(
            "  {} at {} and {}, hardware address {}",
            director.name,
            director.client_address,
            director.server_address,
            director.hardware_address
        );
    }
    let directory = PathBuf::from(DIRECTORY);
    std::fs::create_dir_all(&directory)?;
    println!(
        "\ndirector1's keepalived.conf (director2's says priority 100): VRRP moves the virtual \
         address {} and the real servers' gateway {} together; the sync daemon copies \
         director1's connections to director2.\n",
        FailoverTopology::VIRTUAL_ADDRESS,
        FailoverTopology::GATEWAY_ADDRESS
    );
    for line in configuration(150).lines() {
        println!("    {line}");
    }

    println!(
        "\nStarting pulse in both directors: pulse -f keepalived.conf -n -l (their logs are shown with '|')"
    );
    let [first, second] = &topology.directors[..] else {
        bail!("the topology has two directors");
    };
    let mut first_daemon = Daemon::start(pulse, first, &directory, 150)?;
    let mut second_daemon = Daemon::start(pulse, second, &directory, 100)?;
    first_daemon.wait_for_ready()?;
    second_daemon.wait_for_ready()?;
    first_daemon.wait_for_log("(VI_1) Entering MASTER STATE")?;
    println!(
        "\nBoth told systemd's notify socket READY=1; director1 is VRRP master. Its table, as ipvsadm sees it:"
    );
    show_table(&first.namespace)?;

    let virtual_address = FailoverTopology::virtual_address(80);
    let key = ServiceKey::Address {
        protocol: ipvs::Protocol::Tcp,
        address: virtual_address.ip(),
        port: 80,
    };
    let mut observer = first.namespace.run(Client::connect)??;

    let answers = ask(&topology.client, 6)?;
    if !answers.windows(2).all(|pair| pair[0] != pair[1]) {
        bail!("the answers did not alternate between the real servers: {answers:?}");
    }
    println!("Round robin through director1's IPVS: the answers alternate.");
    show_neighbour(&topology, first)?;

    let stopped = responders.pop().expect("two responders");
    let stopped_name = stopped.name().to_owned();
    let stopped_address = stopped.address();
    println!(
        "\nStopping {stopped_name}'s server. Its TCP_CHECK fails within delay_loop + connect_timeout (2 s):"
    );
    drop(stopped);
    let started = Instant::now();
    wait_until(Duration::from_secs(15), || {
        Ok(!destinations(&mut observer, &key)?.contains(&stopped_address))
    })
    .with_context(|| format!("pulse did not take {stopped_name} out of the rotation"))?;
    println!(
        "pulse took {stopped_name} out of the rotation {:.1} s after it stopped:",
        started.elapsed().as_secs_f64()
    );
    show_table(&first.namespace)?;
    let answers = ask(&topology.client, 4)?;
    if answers.contains(&stopped_name) {
        bail!("{stopped_name} still answered: {answers:?}");
    }

    println!("\nStarting {stopped_name}'s server again:");
    let restarted = labkit::http::Responder::spawn(
        &topology.real_servers[1].namespace,
        stopped_address,
        &stopped_name,
    )?;
    let started = Instant::now();
    wait_until(Duration::from_secs(15), || {
        Ok(destinations(&mut observer, &key)?.contains(&stopped_address))
    })
    .with_context(|| format!("pulse did not bring {stopped_name} back"))?;
    println!(
        "pulse put {stopped_name} back {:.1} s after it started:",
        started.elapsed().as_secs_f64()
    );
    show_table(&first.namespace)?;
    let answers = ask(&topology.client, 6)?;
    if !answers.windows(2).all(|pair| pair[0] != pair[1]) {
        bail!("the answers did not alternate again: {answers:?}");
    }
    responders.push(restarted);

    // director2 has forwarded nothing: whatever connections its table
    // counts came from director1's sync daemon. The kernel sends what it
    // has to sync about once a second, and starting the daemons can take
    // the emulated kernel a while: wait for the copies before the kill.
    let started = Instant::now();
    let mut synced = 0;
    wait_until(Duration::from_secs(30), || {
        synced = second
            .namespace
            .run(Client::connect)??
            .destinations(&key)?
            .iter()
            .filter_map(|destination| destination.counters)
            .map(|counters| counters.active + counters.inactive)
            .sum::<u32>();
        Ok(synced > 0)
    })
    .context("director2's table counts none of director1's connections after 30 s")?;
    println!(
        "\ndirector2, the backup, has forwarded nothing, yet its table counts {synced} of \
         director1's connections, copied by the sync daemon ({:.1} s after the last requests):",
        started.elapsed().as_secs_f64()
    );
    show_table(&second.namespace)?;
    println!(
        "\ndirector1 dies: pulse killed (SIGKILL, no goodbye advert) and its links cut. \
         director2 stops hearing its adverts:"
    );
    first_daemon.kill();
    let killed = Instant::now();
    topology.cut(0)?;
    wait_until(Duration::from_secs(30), || {
        Ok(
            topology.client_neighbour(FailoverTopology::VIRTUAL_ADDRESS)?
                == Some(second.hardware_address.clone()),
        )
    })
    .context("the client's ARP entry for the virtual address did not move to director2")?;
    second_daemon.wait_for_log("(VI_1) Entering MASTER STATE")?;
    println!(
        "director2 took over; its gratuitous ARP reached the client {:.1} s after the kill.",
        killed.elapsed().as_secs_f64()
    );
    show_neighbour(&topology, second)?;
    show_table(&second.namespace)?;
    let answers = ask(&topology.client, 6)?;
    if !answers.windows(2).all(|pair| pair[0] != pair[1]) {
        bail!("the answers did not alternate through director2: {answers:?}");
    }
    for responder in &responders {
        println!(
            "{} served {} requests",
            responder.name(),
            responder.served()
        );
    }

    println!(
        "\nStopping pulse in director2 (SIGTERM): it gives the addresses up and withdraws the \
         services it programmed, as keepalived does."
    );
    second_daemon.stop()?;
    show_table(&second.namespace)?;
    println!(
        "The rotation followed the health checks, and the requests went on through director2 \
         when director1 died."
    );
    Ok(())
}

/// pulse in a director, its log relayed with the director's name by a
/// thread and kept to wait for lines.
struct Daemon {
    name: String,
    child: Child,
    notify: UnixDatagram,
    log: Arc<Mutex<String>>,
    relay: Option<std::thread::JoinHandle<()>>,
}

impl Daemon {
    /// Writes the director's configuration with `priority` and starts
    /// pulse on it, with a notify socket of its own.
    fn start(pulse: &Path, director: &Director, directory: &Path, priority: u8) -> Result<Daemon> {
        let path = directory.join(format!("{}.conf", director.name));
        std::fs::write(&path, configuration(priority))?;
        let notify_path = directory.join(format!("{}.notify", director.name));
        let _ = std::fs::remove_file(&notify_path);
        let notify = UnixDatagram::bind(&notify_path)?;
        let mut child = director
            .namespace
            .command(pulse)
            .arg("-f")
            .arg(&path)
            .args(["-n", "-l", "-p"])
            .arg(directory.join(format!("{}.pid", director.name)))
            .env("NOTIFY_SOCKET", &notify_path)
            .env("NO_COLOR", "1")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .context("cannot start pulse")?;
        let stderr = child.stderr.take().expect("piped");
        let log = Arc::new(Mutex::new(String::new()));
        let relay = {
            let log = log.clone();
            let name = director.name.clone();
            std::thread::spawn(move || {
                for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                    println!("    {name} | {line}");
                    let mut log = log.lock().expect("log");
                    log.push_str(&line);
                    log.push('\n');
                }
            })
        };
        Ok(Daemon {
            name: director.name.clone(),
            child,
            notify,
            log,
            relay: Some(relay),
        })
    }

    fn wait_for_ready(&self) -> Result<()> {
        self.notify
            .set_read_timeout(Some(Duration::from_secs(60)))?;
        let mut buffer = [0u8; 4096];
        loop {
            let count = self.notify.recv(&mut buffer).with_context(|| {
                format!("pulse in {} did not say READY=1 within 60 s", self.name)
            })?;
            let message = String::from_utf8_lossy(&buffer[..count]);
            if message.lines().any(|line| line == "READY=1") {
                return Ok(());
            }
        }
    }

    fn wait_for_log(&self, text: &str) -> Result<()> {
        wait_until(Duration::from_secs(30), || {
            Ok(self.log.lock().expect("log").contains(text))
        })
        .with_context(|| format!("pulse in {} did not log {text:?}", self.name))
    }

    /// SIGKILL: pulse cleans nothing up.
    fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if let Some(relay) = self.relay.take() {
            let _ = relay.join();
        }
    }

    fn stop(&mut self) -> Result<()> {
        // SAFETY: kill on our own child's id.
        unsafe { libc::kill(self.child.id() as libc::pid_t, libc::SIGTERM) };
        let status = self.child.wait()?;
        if let Some(relay) = self.relay.take() {
            let _ = relay.join();
        }
        if !status.success() {
            bail!("pulse in {} exited with {status}", self.name);
        }
        Ok(())
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        if self.relay.is_some() {
            self.kill();
        }
    }
}

fn show_table(director: &Namespace) -> Result<()> {
    let table = director
        .command("ipvsadm")
        .args(["-L", "-n"])
        .output()
        .context("cannot run ipvsadm")?;
    for line in String::from_utf8_lossy(&table.stdout).lines() {
        println!("  {line}");
    }
    Ok(())
}

/// The client's ARP entry for the virtual address, which must name
/// `director`.
fn show_neighbour(topology: &FailoverTopology, director: &Director) -> Result<()> {
    let entry = topology.client_neighbour(FailoverTopology::VIRTUAL_ADDRESS)?;
    let Some(hardware_address) = entry else {
        bail!("the client has no ARP entry for the virtual address");
    };
    let owner = topology
        .directors
        .iter()
        .find(|candidate| candidate.hardware_address == hardware_address)
        .map_or("no director", |candidate| candidate.name.as_str());
    println!(
        "The client's ARP entry for {}: {hardware_address} ({owner})",
        FailoverTopology::VIRTUAL_ADDRESS
    );
    if hardware_address != director.hardware_address {
        bail!("the virtual address should be {}'s", director.name);
    }
    Ok(())
}

fn ask(client: &Namespace, count: usize) -> Result<Vec<String>> {
    let virtual_address = FailoverTopology::virtual_address(80);
    println!(
        "The client ({}) asks http://{virtual_address}/ {count} times:",
        FailoverTopology::CLIENT_ADDRESS
    );
    let mut answers = Vec::new();
    for request in 1..=count {
        let answer = http::get(client, virtual_address)?;
        println!("  request {request}: answered by {answer}");
        answers.push(answer);
    }
    Ok(answers)
}

fn destinations(client: &mut Client, key: &ServiceKey) -> Result<Vec<SocketAddr>> {
    Ok(client
        .destinations(key)?
        .iter()
        .map(|destination| destination.socket_address())
        .collect())
}

fn wait_until(limit: Duration, mut done: impl FnMut() -> Result<bool>) -> Result<()> {
    let started = Instant::now();
    while started.elapsed() < limit {
        if done()? {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    bail!("not within {limit:?}")
}
