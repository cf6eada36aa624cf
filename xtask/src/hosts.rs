//! `cargo xtask hosts`: machines for Ansible and Molecule, in the lab's
//! guest, reached over ssh from here.
//!
//! Each host is a real systemd (this machine's, as PID 1) in namespaces of
//! its own inside one lab guest (Debian's kernel, real IPVS), on a fresh
//! overlay of the guest's root, with its `eth0` on a segment the hosts share
//! (192.168.100.0/24, for VRRP between them). QEMU forwards one port of this
//! machine's loopback per host to the guest, which forwards it to the host's
//! sshd. Ansible itself runs here: in the guest, under software emulation,
//! Python takes seconds to start.
//!
//! `up` starts the guest and returns once every host's systemd has booted
//! and its sshd answers, leaving the guest running; `down` powers it off.
//! The state folder holds what a controller needs: see [`up`].

use std::fmt::Write as _;
use std::fs;
use std::io::ErrorKind;
use std::net::TcpListener;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use crate::lab::{self, ForwardedPort, Lab, UserNetwork};

/// What the guest runs: the segment, then each host.
const GUEST_SCRIPT: &str = include_str!("lab/hosts.sh");

/// The segment's first three octets; the guest's bridge is .1.
const SEGMENT: &str = "192.168.100";
/// The first host's last octet; the others follow.
const FIRST_HOST_OCTET: usize = 11;
/// The guest's port forwarded to the first host's sshd; the others follow.
const FIRST_GUEST_PORT: u16 = 22001;
/// As many hosts as the segment has room for after the first address.
const MOST_HOSTS: usize = 254 - FIRST_HOST_OCTET;

// The files `up` writes into the state folder.
const KEY: &str = "id_ed25519";
const PUBLIC_KEY: &str = "id_ed25519.pub";
const SSH_CONFIG: &str = "ssh_config";
const INVENTORY: &str = "inventory.yml";
const QEMU_PID: &str = "qemu.pid";
/// A link to the guest's run folder: console.log, stdout (the guest's
/// progress), each host's console under hosts.d/.
const GUEST_LINK: &str = "guest";

#[derive(clap::Subcommand)]
pub enum Action {
    /// Boot the hosts in a lab guest that keeps running, wait until each
    /// one's systemd has booted and its sshd answers, and write the ssh key,
    /// ssh_config and an Ansible inventory into the state folder.
    Up(UpArguments),
    /// Power the guest off and remove what `up` wrote into the state folder.
    Down {
        /// The folder `up` was given.
        #[arg(long)]
        state: PathBuf,
        /// Keep the guest's run folder (console and logs) under
        /// target/lab/runs.
        #[arg(long)]
        keep: bool,
    },
}

#[derive(clap::Args)]
pub struct UpArguments {
    /// Where to write the key, ssh_config and inventory.yml (created if
    /// missing).
    #[arg(long)]
    pub state: PathBuf,
    /// A host's name (its hostname and inventory name); repeat for each.
    #[arg(long = "host", required = true)]
    pub hosts: Vec<String>,
    /// Seconds the guest and every host may take to boot, from QEMU's start
    /// to the last host's sshd letting root in.
    #[arg(long, default_value_t = 300)]
    pub boot_timeout: u64,
    /// Seconds after which the guest powers itself off, down or not.
    #[arg(long, default_value_t = 3600)]
    pub timeout: u64,
    /// Guest memory in MiB (every host's systemd, sshd and Python in it).
    #[arg(long, default_value_t = 3072)]
    pub memory: u32,
    /// Guest CPUs.
    #[arg(long, default_value_t = 2)]
    pub cpus: u32,
}

pub fn run(repository: &Path, action: &Action) -> Result<()> {
    match action {
        Action::Up(arguments) => up(repository, arguments),
        Action::Down { state, keep } => down(state, *keep),
    }
}

/// One managed host.
struct Host {
    name: String,
    /// On the shared segment.
    address: String,
    /// This machine's loopback port forwarded to its sshd.
    port: u16,
    /// The guest's port QEMU forwards `port` to.
    guest_port: u16,
}

/// Boots the hosts and writes into the state folder:
///
/// - `id_ed25519`, `id_ed25519.pub`: a key pair made for this folder, which
///   every host's root accepts;
/// - `ssh_config`: `ssh -F STATE/ssh_config NAME` logs in as root;
/// - `inventory.yml`: every host with `ansible_host` (127.0.0.1),
///   `ansible_port`, `ansible_user` (root), `ansible_ssh_private_key_file`,
///   `ansible_python_interpreter`, `ansible_ssh_common_args` and
///   `ansible_host_key_checking` (no host key checks: the hosts share this
///   machine's host keys, and each `up` puts them behind new ports), and
///   `lab_address`, `lab_prefix_length`, `lab_interface`: its address on
///   the segment, its prefix and its link (eth0);
/// - `qemu.pid` and `guest`, for `down` and for reading the guest's logs.
pub fn up(repository: &Path, arguments: &UpArguments) -> Result<()> {
    let started = Instant::now();
    check_names(&arguments.hosts)?;
    fs::create_dir_all(&arguments.state)
        .with_context(|| format!("cannot create {}", arguments.state.display()))?;
    let state = fs::canonicalize(&arguments.state)
        .with_context(|| format!("cannot resolve {}", arguments.state.display()))?;
    if let Some(process) = running_guest(&state)? {
        bail!(
            "the hosts of {} are up already (QEMU is process {process}): \
             `cargo xtask hosts down --state {}` first",
            state.display(),
            state.display()
        );
    }
    // What a guest that ended without `down` (or a failed `up`) left.
    down(&state, false)?;
    make_key(&state)?;

    let ports = free_ports(arguments.hosts.len())?;
    let hosts: Vec<Host> = arguments
        .hosts
        .iter()
        .zip(ports)
        .enumerate()
        .map(|(index, (name, port))| Host {
            name: name.clone(),
            address: format!("{SEGMENT}.{}", FIRST_HOST_OCTET + index),
            port,
            guest_port: FIRST_GUEST_PORT + index as u16,
        })
        .collect();
    let options = lab::Options {
        boot_timeout: Duration::from_secs(arguments.boot_timeout),
        timeout: Duration::from_secs(arguments.timeout),
        memory_megabytes: arguments.memory,
        cpus: arguments.cpus,
        keep: true,
        network: Some(UserNetwork {
            forwarded_ports: hosts
                .iter()
                .map(|host| ForwardedPort {
                    host: host.port,
                    guest: host.guest_port,
                })
                .collect(),
        }),
    };
    let lab = Lab::prepare(repository, options)?;
    let public_key = fs::read_to_string(state.join(PUBLIC_KEY))
        .with_context(|| format!("cannot read {}", state.join(PUBLIC_KEY).display()))?;
    let guest = lab.start_detached(|run| {
        write_guest_files(run, &hosts, &public_key)?;
        Ok(vec![
            "/bin/sh".to_owned(),
            run.join("hosts.sh").to_string_lossy().into_owned(),
            "up".to_owned(),
            run.to_string_lossy().into_owned(),
            arguments.timeout.to_string(),
        ])
    })?;
    write(&state.join(QEMU_PID), &format!("{}\n", guest.process))?;
    symlink(&guest.run, state.join(GUEST_LINK))
        .with_context(|| format!("cannot link {}", state.join(GUEST_LINK).display()))?;
    eprintln!(
        "hosts: guest started (QEMU process {}, logs in {})",
        guest.process,
        guest.run.display()
    );

    // From now: preparing the lab may have downloaded a kernel.
    let deadline = Instant::now() + Duration::from_secs(arguments.boot_timeout);
    let ready = wait_for_guest(guest.process, &guest.run, deadline)
        .and_then(|()| {
            write(&state.join(SSH_CONFIG), &ssh_config(&state, &hosts))?;
            // Together: each first login takes seconds (logind makes its
            // session under emulation).
            thread::scope(|scope| {
                let checks: Vec<_> = hosts
                    .iter()
                    .map(|host| {
                        let (state, run) = (&state, &guest.run);
                        scope.spawn(move || check_host(state, host, guest.process, run, deadline))
                    })
                    .collect();
                checks
                    .into_iter()
                    .try_for_each(|check| check.join().expect("a check panicked"))
            })?;
            // Last: Molecule's create step is skipped while it exists.
            write(&state.join(INVENTORY), &inventory(&state, &hosts))
        })
        .with_context(|| format!("the hosts of {} did not come up", state.display()));
    if let Err(error) = ready {
        let _ = stop(guest.process, &guest.run);
        let _ = remove_written(&state, true);
        eprintln!("hosts: the guest's logs are in {}", guest.run.display());
        return Err(error);
    }
    eprintln!(
        "hosts: {} up in {:.1} s; ssh -F {} NAME; inventory {}",
        hosts.len(),
        started.elapsed().as_secs_f64(),
        state.join(SSH_CONFIG).display(),
        state.join(INVENTORY).display()
    );
    Ok(())
}

/// Powers the guest off if it runs and removes what `up` wrote.
pub fn down(state: &Path, keep: bool) -> Result<()> {
    if let Some(process) = running_guest(state)? {
        let run = guest_run(state).context("the guest's run folder is unknown")?;
        stop(process, &run)?;
        eprintln!("hosts: guest stopped (QEMU process {process})");
    }
    if !keep && let Some(run) = guest_run(state) {
        match fs::remove_dir_all(&run) {
            Err(error) if error.kind() != ErrorKind::NotFound => {
                return Err(error).with_context(|| format!("cannot remove {}", run.display()));
            }
            _ => {}
        }
    }
    remove_written(state, false)
}

/// Names that are valid as hostnames and inventory names and unique.
fn check_names(names: &[String]) -> Result<()> {
    if names.len() > MOST_HOSTS {
        bail!("at most {MOST_HOSTS} hosts fit on the segment");
    }
    for (index, name) in names.iter().enumerate() {
        let valid = !name.is_empty()
            && name.len() <= 63
            && name
                .bytes()
                .all(|byte| byte.is_ascii_lowercase() || byte.is_ascii_digit() || byte == b'-')
            && !name.starts_with('-')
            && !name.ends_with('-');
        if !valid {
            bail!(
                "{name:?} is not a host name: lowercase letters, digits and inner hyphens, \
                 at most 63"
            );
        }
        if names[..index].contains(name) {
            bail!("{name} is named twice");
        }
    }
    Ok(())
}

/// The guest's QEMU, if `qemu.pid` names one that still runs. The file alone
/// is not trusted: a process id is reused, and an exited QEMU may stay a
/// zombie here for a long time (this sandbox's PID 1 reaps orphans late),
/// so the process must be QEMU with this state's run folder on its command
/// line (a zombie's is empty).
fn running_guest(state: &Path) -> Result<Option<u32>> {
    let text = match fs::read_to_string(state.join(QEMU_PID)) {
        Ok(text) => text,
        Err(error) if error.kind() == ErrorKind::NotFound => return Ok(None),
        Err(error) => {
            return Err(error)
                .with_context(|| format!("cannot read {}", state.join(QEMU_PID).display()));
        }
    };
    let process: u32 = text
        .trim()
        .parse()
        .with_context(|| format!("{} holds {text:?}", state.join(QEMU_PID).display()))?;
    let Some(run) = guest_run(state) else {
        return Ok(None);
    };
    Ok(is_guest(process, &run).then_some(process))
}

fn guest_run(state: &Path) -> Option<PathBuf> {
    fs::read_link(state.join(GUEST_LINK)).ok()
}

/// Whether `process` is a live QEMU running the guest of `run`.
fn is_guest(process: u32, run: &Path) -> bool {
    let Ok(command_line) = fs::read(format!("/proc/{process}/cmdline")) else {
        return false;
    };
    let command_line = String::from_utf8_lossy(&command_line);
    command_line.starts_with("qemu-system-x86_64\0")
        && command_line.contains(&*run.join("initramfs.cpio").to_string_lossy())
}

/// Ends the guest's QEMU: the guest is throwaway, nothing in it to save.
fn stop(process: u32, run: &Path) -> Result<()> {
    let pid = libc::pid_t::try_from(process).context("a process id out of range")?;
    for (signal, patience) in [(libc::SIGTERM, 10), (libc::SIGKILL, 10)] {
        if !is_guest(process, run) {
            return Ok(());
        }
        // SAFETY: kill has no memory effects; the process was checked to be
        // the guest's QEMU just before.
        unsafe { libc::kill(pid, signal) };
        let deadline = Instant::now() + Duration::from_secs(patience);
        while is_guest(process, run) && Instant::now() < deadline {
            thread::sleep(Duration::from_millis(50));
        }
    }
    if is_guest(process, run) {
        bail!("QEMU (process {process}) does not end");
    }
    Ok(())
}

/// Removes what `up` writes; the link to the guest's run folder too unless
/// told to keep it (a failed `up` keeps it, for its logs).
fn remove_written(state: &Path, keep_guest_link: bool) -> Result<()> {
    let mut names = vec![KEY, PUBLIC_KEY, SSH_CONFIG, INVENTORY, QEMU_PID];
    if !keep_guest_link {
        names.push(GUEST_LINK);
    }
    for name in names {
        let path = state.join(name);
        match fs::remove_file(&path) {
            Err(error) if error.kind() != ErrorKind::NotFound => {
                return Err(error).with_context(|| format!("cannot remove {}", path.display()));
            }
            _ => {}
        }
    }
    Ok(())
}

/// A fresh key pair for this state folder.
fn make_key(state: &Path) -> Result<()> {
    let status = Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-C", "fulcrum-hosts", "-f"])
        .arg(state.join(KEY))
        .stdin(Stdio::null())
        .status()
        .context("cannot run ssh-keygen (package openssh-client)")?;
    if !status.success() {
        bail!("ssh-keygen failed ({status})");
    }
    Ok(())
}

/// `count` ports of 127.0.0.1 that are free now: the kernel picks them,
/// all held at once so they differ, released for QEMU to take.
fn free_ports(count: usize) -> Result<Vec<u16>> {
    let listeners = (0..count)
        .map(|_| TcpListener::bind("127.0.0.1:0").context("cannot find a free port"))
        .collect::<Result<Vec<_>>>()?;
    listeners
        .iter()
        .map(|listener| Ok(listener.local_addr()?.port()))
        .collect()
}

/// What the guest script reads from its run folder.
fn write_guest_files(run: &Path, hosts: &[Host], public_key: &str) -> Result<()> {
    write(&run.join("hosts.sh"), GUEST_SCRIPT)?;
    let mut table = String::new();
    let mut names = String::new();
    for host in hosts {
        writeln!(table, "{} {} {}", host.name, host.address, host.guest_port)?;
        writeln!(names, "{} {}", host.address, host.name)?;
    }
    write(&run.join("hosts"), &table)?;
    write(&run.join("etc-hosts"), &names)?;
    write(&run.join("authorized_keys"), public_key)
}

/// Waits for the guest script to say every host has booted, showing its
/// progress; on failure, everything the guest said.
fn wait_for_guest(process: u32, run: &Path, deadline: Instant) -> Result<()> {
    let progress = run.join("stdout");
    let mut shown = 0;
    loop {
        let text = fs::read_to_string(&progress).unwrap_or_default();
        // Whole lines only: the guest may be halfway through one.
        if let Some(end) = text.rfind('\n')
            && end + 1 > shown
        {
            for line in text[shown..end + 1].lines() {
                eprintln!("hosts: guest: {line}");
            }
            shown = end + 1;
        }
        if run.join("ready").exists() {
            return Ok(());
        }
        let failure = if run.join("failed").exists() {
            Some("the guest could not boot the hosts".to_owned())
        } else if !is_guest(process, run) {
            Some("the guest stopped".to_owned())
        } else if Instant::now() > deadline {
            Some("the hosts did not boot in time".to_owned())
        } else {
            None
        };
        if let Some(failure) = failure {
            bail!("{failure}\n{}", guest_report(run));
        }
        thread::sleep(Duration::from_millis(200));
    }
}

/// Everything the guest wrote that tells why it failed.
fn guest_report(run: &Path) -> String {
    let mut report = String::new();
    for name in ["stdout", "stderr", "qemu.log"] {
        let text = fs::read_to_string(run.join(name)).unwrap_or_default();
        if !text.trim().is_empty() {
            let _ = writeln!(report, "{name} of the guest:\n{}", text.trim_end());
        }
    }
    if let Ok(entries) = fs::read_dir(run.join("hosts.d")) {
        for entry in entries.flatten() {
            let text = fs::read_to_string(entry.path()).unwrap_or_default();
            let lines: Vec<&str> = text.lines().collect();
            let tail = &lines[lines.len().saturating_sub(15)..];
            let _ = writeln!(
                report,
                "last lines of {}:\n{}",
                entry.path().display(),
                tail.join("\n")
            );
        }
    }
    report.push_str(&lab::console_tail(&run.join("console.log")));
    report
}

/// Logs in to `host` the way Ansible will, until its sshd answers, and
/// asks its systemd whether it has booted.
fn check_host(
    state: &Path,
    host: &Host,
    process: u32,
    run: &Path,
    deadline: Instant,
) -> Result<()> {
    loop {
        let output = Command::new("ssh")
            .arg("-F")
            .arg(state.join(SSH_CONFIG))
            .args(["-o", "ConnectTimeout=20", "-o", "BatchMode=yes"])
            .arg(&host.name)
            .args(["systemctl", "is-system-running", "--wait"])
            .stdin(Stdio::null())
            .output()
            .context("cannot run ssh (package openssh-client)")?;
        let answer = String::from_utf8_lossy(&output.stdout).trim().to_owned();
        match answer.as_str() {
            "running" => return Ok(()),
            "degraded" => {
                // The guest has listed the failed units already.
                eprintln!("hosts: {} is degraded", host.name);
                return Ok(());
            }
            _ => {}
        }
        if !is_guest(process, run) {
            bail!("the guest stopped\n{}", guest_report(run));
        }
        if Instant::now() > deadline {
            bail!(
                "{} does not answer over ssh (port {}): {}{}",
                host.name,
                host.port,
                answer,
                String::from_utf8_lossy(&output.stderr).trim()
            );
        }
        thread::sleep(Duration::from_millis(500));
    }
}

fn ssh_config(state: &Path, hosts: &[Host]) -> String {
    let mut config = String::from(
        "# Written by `cargo xtask hosts up`: ssh -F THIS_FILE NAME logs in to a host.\n",
    );
    for host in hosts {
        writeln!(
            config,
            "Host {}\n    HostName 127.0.0.1\n    Port {}\n",
            host.name, host.port
        )
        .unwrap();
    }
    writeln!(
        config,
        "Host *\n    User root\n    IdentityFile \"{}\"\n    IdentitiesOnly yes\n    \
         StrictHostKeyChecking no\n    UserKnownHostsFile /dev/null\n    LogLevel ERROR",
        state.join(KEY).display()
    )
    .unwrap();
    config
}

fn inventory(state: &Path, hosts: &[Host]) -> String {
    let quote = |text: &str| serde_json::to_string(text).expect("strings serialize");
    let key = quote(&state.join(KEY).to_string_lossy());
    let mut inventory = String::from(
        "# Written by `cargo xtask hosts up`: hosts in the lab's guest, each\n\
         # with its own systemd, on one segment (lab_address/lab_prefix_length\n\
         # on lab_interface), reached through QEMU's forwarded ports.\n\
         all:\n  hosts:\n",
    );
    for host in hosts {
        writeln!(
            inventory,
            "    {}:\n      \
             ansible_host: 127.0.0.1\n      \
             ansible_port: {}\n      \
             ansible_user: root\n      \
             ansible_ssh_private_key_file: {key}\n      \
             ansible_python_interpreter: /usr/bin/python3\n      \
             ansible_ssh_common_args: \"-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o IdentitiesOnly=yes\"\n      \
             ansible_host_key_checking: false\n      \
             lab_address: {}\n      \
             lab_prefix_length: 24\n      \
             lab_interface: eth0",
            quote(&host.name),
            host.port,
            host.address
        )
        .unwrap();
    }
    inventory
}

fn write(path: &Path, contents: &str) -> Result<()> {
    fs::write(path, contents).with_context(|| format!("cannot write {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_inventory_names_each_host_with_its_port_and_address() {
        let hosts =
            [("director1", 40001, 11), ("client", 40002, 12)].map(|(name, port, octet)| Host {
                name: name.to_owned(),
                address: format!("{SEGMENT}.{octet}"),
                port,
                guest_port: 0,
            });
        let inventory = inventory(Path::new("/tmp/state"), &hosts);
        assert!(
            inventory.contains(
                "    \"client\":\n      ansible_host: 127.0.0.1\n      ansible_port: 40002\n"
            ),
            "{inventory}"
        );
        assert!(
            inventory.contains("lab_address: 192.168.100.11\n"),
            "{inventory}"
        );
        assert!(
            inventory.contains("ansible_ssh_private_key_file: \"/tmp/state/id_ed25519\"\n"),
            "{inventory}"
        );
        let config = ssh_config(Path::new("/tmp/state"), &hosts);
        assert!(config.contains("Host director1\n    HostName 127.0.0.1\n    Port 40001\n"));
    }

    #[test]
    fn host_names_must_be_hostnames_and_unique() {
        let names = |list: &[&str]| list.iter().map(|name| name.to_string()).collect::<Vec<_>>();
        assert!(check_names(&names(&["director1", "client", "a-b"])).is_ok());
        for bad in [&["Director"][..], &["-a"], &["a_b"], &[""], &["a", "a"]] {
            assert!(check_names(&names(bad)).is_err(), "{bad:?}");
        }
    }
}
