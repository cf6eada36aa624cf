//! A real etcd (Debian's `etcd-server`), one member or three, on this
//! machine's loopback: the cluster store of the SDN mode's tests. Each
//! member is its own process, with its data in a directory of its own, so
//! that a test can stop members (quorum lost) and start them again.

use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

/// Where Debian installs it (`cargo xtask test` installs the package).
const ETCD: &str = "/usr/bin/etcd";

/// A running cluster; its members are killed and their data removed when
/// it is dropped.
pub struct Etcd {
    directory: PathBuf,
    members: Vec<Member>,
    initial_cluster: String,
}

struct Member {
    name: String,
    client: SocketAddr,
    peer: SocketAddr,
    process: Option<Child>,
}

impl Etcd {
    /// Starts a cluster of `size` members on loopback and waits until it
    /// has a leader.
    pub fn start(size: usize) -> Result<Etcd> {
        Etcd::start_on(Ipv4Addr::LOCALHOST, size)
    }

    /// [`Etcd::start`] on `address` (one of this namespace's), for
    /// daemons in other namespaces that route to it.
    pub fn start_on(address: Ipv4Addr, size: usize) -> Result<Etcd> {
        if !std::path::Path::new(ETCD).exists() {
            bail!("{ETCD} is missing: install Debian's etcd-server (cargo xtask test does)");
        }
        let directory = std::env::temp_dir().join(format!(
            "fulcrum-etcd-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&directory)?;
        let members: Vec<Member> = (0..size)
            .map(|index| -> Result<Member> {
                Ok(Member {
                    name: format!("member{index}"),
                    client: free_port(address)?,
                    peer: free_port(address)?,
                    process: None,
                })
            })
            .collect::<Result<_>>()?;
        let initial_cluster = members
            .iter()
            .map(|member| format!("{}=http://{}", member.name, member.peer))
            .collect::<Vec<_>>()
            .join(",");
        let mut etcd = Etcd {
            directory,
            members,
            initial_cluster,
        };
        for index in 0..size {
            etcd.start_member(index)?;
        }
        // 90 s: in the emulated lab a member has stalled for over 30 s
        // between two lines of its start (CI, 3 December 2026, its log
        // ending at "advertise client URLs"), on a run two to three times
        // slower than usual at every step.
        etcd.wait_healthy(Duration::from_secs(90))?;
        Ok(etcd)
    }

    /// The members' client URLs, as `--cluster` takes them.
    pub fn urls(&self) -> String {
        self.members
            .iter()
            .map(|member| format!("http://{}", member.client))
            .collect::<Vec<_>>()
            .join(",")
    }

    /// Stops member `index` at once (SIGKILL): a member lost.
    pub fn stop_member(&mut self, index: usize) {
        if let Some(mut process) = self.members[index].process.take() {
            let _ = process.kill();
            let _ = process.wait();
        }
    }

    /// Starts member `index` again, with the data it had.
    pub fn start_member(&mut self, index: usize) -> Result<()> {
        let data = self.directory.join(&self.members[index].name);
        let state = if data.exists() { "existing" } else { "new" };
        let member = &mut self.members[index];
        let log = std::fs::File::create(self.directory.join(format!("{}.log", member.name)))?;
        let process = Command::new(ETCD)
            .args(["--name", &member.name])
            .arg("--data-dir")
            .arg(&data)
            .args(["--listen-client-urls", &format!("http://{}", member.client)])
            .args([
                "--advertise-client-urls",
                &format!("http://{}", member.client),
            ])
            .args(["--listen-peer-urls", &format!("http://{}", member.peer)])
            .args([
                "--initial-advertise-peer-urls",
                &format!("http://{}", member.peer),
            ])
            .args(["--initial-cluster", &self.initial_cluster])
            .args(["--initial-cluster-state", state])
            .args(["--initial-cluster-token", "fulcrum-test"])
            // Elections in half a second, not the default's second: a
            // test that stops members waits for fewer of them.
            .args(["--heartbeat-interval", "50", "--election-timeout", "500"])
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn()
            .with_context(|| format!("cannot start {ETCD}"))?;
        member.process = Some(process);
        Ok(())
    }

    /// Waits until every running member says it is healthy (it has a
    /// leader and its store answers).
    pub fn wait_healthy(&self, limit: Duration) -> Result<()> {
        let deadline = Instant::now() + limit;
        for member in self
            .members
            .iter()
            .filter(|member| member.process.is_some())
        {
            while !healthy(member.client) {
                if Instant::now() > deadline {
                    bail!(
                        "etcd member {} not healthy after {limit:?}; its log: {}",
                        member.name,
                        std::fs::read_to_string(
                            self.directory.join(format!("{}.log", member.name))
                        )
                        .unwrap_or_default()
                    );
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        Ok(())
    }
}

impl Drop for Etcd {
    fn drop(&mut self) {
        for index in 0..self.members.len() {
            self.stop_member(index);
        }
        let _ = std::fs::remove_dir_all(&self.directory);
    }
}

static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// A port free now on `address` (the member binds it soon after).
fn free_port(address: Ipv4Addr) -> Result<SocketAddr> {
    Ok(TcpListener::bind((address, 0))?.local_addr()?)
}

/// etcd's `/health` on its client URL: `{"health":"true"}` once it has a
/// leader and answers.
fn healthy(client: SocketAddr) -> bool {
    let Ok(mut stream) = TcpStream::connect_timeout(&client, Duration::from_millis(200)) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
    if stream
        .write_all(b"GET /health HTTP/1.0\r\nHost: localhost\r\n\r\n")
        .is_err()
    {
        return false;
    }
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    answer.contains("\"health\":\"true\"")
}
