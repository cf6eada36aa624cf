//! `cargo xtask demo`: pulse load balancing in a real kernel, from a
//! keepalived.conf.
//!
//! In the guest: a client, a director and two real servers, each in its own
//! network namespace. pulse runs in the director with the configuration the
//! demo prints; the client's requests alternate between the real servers;
//! one server stops, its health check fails and pulse takes it out of the
//! rotation; it comes back, and so does its share of the requests.

use std::io::{BufRead, BufReader};
use std::os::unix::net::UnixDatagram;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use ipvs::{Client, ServiceKey};
use labkit::{NatTopology, http};

const CONFIGURATION: &str = "\
virtual_server 10.0.1.1 80 {
    protocol TCP
    lvs_sched rr
    lvs_method NAT
    delay_loop 1
    real_server 10.0.2.11 80 {
        TCP_CHECK {
            connect_timeout 1
        }
    }
    real_server 10.0.2.12 80 {
        TCP_CHECK {
            connect_timeout 1
        }
    }
}
";

/// Where the demo keeps its files in the guest (its tmpfs).
const DIRECTORY: &str = "/run/fulcrum-demo";

/// In the guest: the demo itself, with the pulse binary at `pulse`. Fails
/// unless every step shows what it should.
pub fn run_in_guest(pulse: &Path) -> Result<()> {
    println!("Building the topology: a client, a director and two real servers (namespaces).");
    let topology = NatTopology::build("demo", 2)?;
    let mut responders = topology.start_responders(80)?;
    for responder in &responders {
        println!(
            "  {} at {}: an HTTP server answering with its name",
            responder.name(),
            responder.address()
        );
    }
    let directory = PathBuf::from(DIRECTORY);
    std::fs::create_dir_all(&directory)?;
    let configuration = directory.join("keepalived.conf");
    std::fs::write(&configuration, CONFIGURATION)?;
    println!("\nThe director's {}:\n", configuration.display());
    for line in CONFIGURATION.lines() {
        println!("    {line}");
    }

    let notify_path = directory.join("notify.socket");
    let _ = std::fs::remove_file(&notify_path);
    let notify = UnixDatagram::bind(&notify_path)?;
    println!(
        "\nStarting pulse in the director: pulse -f {} -n -l (its log is shown with '|')",
        configuration.display()
    );
    let mut daemon = Daemon::start(
        topology
            .director
            .command(pulse)
            .arg("-f")
            .arg(&configuration)
            .args(["-n", "-l", "-p"])
            .arg(directory.join("pulse.pid"))
            .env("NOTIFY_SOCKET", &notify_path)
            .env("NO_COLOR", "1"),
    )?;
    wait_for_ready(&notify)?;
    println!(
        "\npulse told systemd's notify socket READY=1. The kernel's table, as ipvsadm sees it:"
    );
    show_table(&topology)?;

    let virtual_address = NatTopology::virtual_address(80);
    let key = ServiceKey::Address {
        protocol: ipvs::Protocol::Tcp,
        address: virtual_address.ip(),
        port: 80,
    };
    let mut observer = topology.director.run(Client::connect)??;

    let answers = ask(&topology, 6)?;
    if !answers.windows(2).all(|pair| pair[0] != pair[1]) {
        bail!("the answers did not alternate between the real servers: {answers:?}");
    }
    println!("Round robin through the kernel's IPVS: the answers alternate.");

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
    show_table(&topology)?;
    let answers = ask(&topology, 4)?;
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
    show_table(&topology)?;
    let answers = ask(&topology, 6)?;
    if !answers.windows(2).all(|pair| pair[0] != pair[1]) {
        bail!("the answers did not alternate again: {answers:?}");
    }
    responders.push(restarted);
    for responder in &responders {
        println!(
            "{} served {} requests",
            responder.name(),
            responder.served()
        );
    }

    println!(
        "\nStopping pulse (SIGTERM): it withdraws the services it programmed, as keepalived does."
    );
    daemon.stop()?;
    show_table(&topology)?;
    println!(
        "The rotation followed the health checks; the answers alternated whenever both servers were up."
    );
    Ok(())
}

/// pulse, its log relayed with a prefix by a thread.
struct Daemon {
    child: Child,
    relay: Option<std::thread::JoinHandle<()>>,
}

impl Daemon {
    fn start(command: &mut std::process::Command) -> Result<Daemon> {
        let mut child = command
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .context("cannot start pulse")?;
        let stderr = child.stderr.take().expect("piped");
        let relay = std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                println!("    | {line}");
            }
        });
        Ok(Daemon {
            child,
            relay: Some(relay),
        })
    }

    fn stop(&mut self) -> Result<()> {
        // SAFETY: kill on our own child's id.
        unsafe { libc::kill(self.child.id() as libc::pid_t, libc::SIGTERM) };
        let status = self.child.wait()?;
        if let Some(relay) = self.relay.take() {
            let _ = relay.join();
        }
        if !status.success() {
            bail!("pulse exited with {status}");
        }
        Ok(())
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        if self.relay.is_some() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

fn wait_for_ready(notify: &UnixDatagram) -> Result<()> {
    notify.set_read_timeout(Some(Duration::from_secs(60)))?;
    let mut buffer = [0u8; 4096];
    loop {
        let count = notify
            .recv(&mut buffer)
            .context("pulse did not say READY=1 within 60 s")?;
        let message = String::from_utf8_lossy(&buffer[..count]);
        if message.lines().any(|line| line == "READY=1") {
            return Ok(());
        }
    }
}

fn show_table(topology: &NatTopology) -> Result<()> {
    let table = topology
        .director
        .command("ipvsadm")
        .args(["-L", "-n"])
        .output()
        .context("cannot run ipvsadm")?;
    for line in String::from_utf8_lossy(&table.stdout).lines() {
        println!("  {line}");
    }
    Ok(())
}

fn ask(topology: &NatTopology, count: usize) -> Result<Vec<String>> {
    let virtual_address = NatTopology::virtual_address(80);
    println!(
        "The client ({}) asks http://{virtual_address}/ {count} times:",
        NatTopology::CLIENT_ADDRESS
    );
    let mut answers = Vec::new();
    for request in 1..=count {
        let answer = http::get(&topology.client, virtual_address)?;
        println!("  request {request}: answered by {answer}");
        answers.push(answer);
    }
    Ok(answers)
}

fn destinations(client: &mut Client, key: &ServiceKey) -> Result<Vec<std::net::SocketAddr>> {
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
