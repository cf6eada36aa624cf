//! The Debian packages the lab and the tests need, installed with apt-get
//! when missing (before the workspace is built: etcd-client's build needs
//! protoc).

use std::fs;
use std::path::Path;
use std::process::Command;

use anyhow::{Context, Result, bail};

/// Packages the lab and its tests use, by what they are for.
pub const PACKAGES: &[&str] = &[
    // The emulator, and what builds the guest's initramfs.
    "qemu-system-x86",
    "busybox-static",
    "cpio",
    // depmod for the downloaded kernel; modprobe inside the guest.
    "kmod",
    // The reference peers, run in the guest against the same kernel.
    "ipvsadm",
    "keepalived",
    // Topologies and traffic inside the guest.
    "iproute2",
    "curl",
    // `nft list ruleset`: the VRRP interop test compares pulse's drop
    // rules (no_accept) with keepalived's.
    "nftables",
    // A capture on the Mux's underlay link: requests are VXLAN with the
    // tenant's VNI, and no reply passes (the SDN test and demo).
    "tcpdump",
    // BGP: BIRD beside each Mux and on the edge router (the SDN test and
    // demo).
    "bird2",
    // The SDN mode's cluster store, run by the tests on this machine
    // (labkit::etcd) and in the guest.
    "etcd-server",
    // etcd-client's build compiles etcd's protocol definitions, which
    // import protobuf's own (descriptor.proto...): those are in the -dev
    // package, only a recommendation of the compiler's, and recommends are
    // not installed.
    "protobuf-compiler",
    "libprotobuf-dev",
    // A real scraper and promtool: the VRRP interop test checks pulse's
    // /metrics with `promtool check metrics` and has Prometheus scrape it.
    "prometheus",
];

/// The sshd of the hosts `cargo xtask hosts` boots in the guest (which runs
/// this machine's root filesystem). Installed on its own with services held
/// back: it is for the guest, this machine must not start it.
const SSH_SERVER: &str = "openssh-server";

/// Where Debian's maintainer scripts ask whether they may start a service
/// (invoke-rc.d and deb-systemd-invoke): exit status 101 says no.
const POLICY: &str = "/usr/sbin/policy-rc.d";

/// Installs whichever of [`PACKAGES`] and [`SSH_SERVER`] is not installed
/// yet.
pub fn ensure() -> Result<()> {
    let missing = missing_packages(PACKAGES)?;
    let ssh_server_missing = !missing_packages(&[SSH_SERVER])?.is_empty();
    if !missing.is_empty() || ssh_server_missing {
        apt_get(&["update", "-q"])?;
    }
    if !missing.is_empty() {
        eprintln!("lab: installing {}", missing.join(" "));
        let mut install = vec!["install", "-y", "-q", "--no-install-recommends"];
        install.extend(missing.iter().map(String::as_str));
        apt_get(&install)?;
    }
    if ssh_server_missing {
        eprintln!("lab: installing {SSH_SERVER} (for the lab's hosts; not started here)");
        let _held = ServicesHeld::hold()?;
        apt_get(&["install", "-y", "-q", "--no-install-recommends", SSH_SERVER])?;
    }
    let mut wanted = PACKAGES.to_vec();
    wanted.push(SSH_SERVER);
    let still_missing = missing_packages(&wanted)?;
    if !still_missing.is_empty() {
        bail!("apt-get did not install: {}", still_missing.join(" "));
    }
    ensure_host_keys()
}

/// sshd refuses to start without host keys; the package makes them when it
/// is installed, but an image may have had them removed (they must differ
/// between machines made from it).
fn ensure_host_keys() -> Result<()> {
    if Path::new("/etc/ssh/ssh_host_ed25519_key").exists() {
        return Ok(());
    }
    let status = Command::new("ssh-keygen")
        .arg("-A")
        .stdout(std::io::stderr())
        .status()
        .context("cannot run ssh-keygen")?;
    if !status.success() {
        bail!("ssh-keygen -A failed ({status})");
    }
    Ok(())
}

/// While held, Debian's maintainer scripts start no service: a policy-rc.d
/// saying no, unless there is one already (container images have one),
/// removed when dropped.
struct ServicesHeld {
    written: bool,
}

impl ServicesHeld {
    fn hold() -> Result<ServicesHeld> {
        if Path::new(POLICY).exists() {
            return Ok(ServicesHeld { written: false });
        }
        fs::write(
            POLICY,
            "#!/bin/sh\n# Written by cargo xtask while it installs packages.\nexit 101\n",
        )
        .with_context(|| format!("cannot write {POLICY}"))?;
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(POLICY, fs::Permissions::from_mode(0o755))
            .with_context(|| format!("cannot make {POLICY} executable"))?;
        Ok(ServicesHeld { written: true })
    }
}

impl Drop for ServicesHeld {
    fn drop(&mut self) {
        if self.written {
            let _ = fs::remove_file(POLICY);
        }
    }
}

fn missing_packages(packages: &[&str]) -> Result<Vec<String>> {
    let output = Command::new("dpkg-query")
        .args(["--show", "--showformat=${Package} ${db:Status-Status}\\n"])
        .args(packages)
        .output()
        .context("cannot run dpkg-query: the lab needs a Debian-based machine")?;
    // dpkg-query exits 1 when a package is unknown, and says so on stderr;
    // unknown and not-installed both count as missing.
    let listing = String::from_utf8_lossy(&output.stdout);
    let installed: Vec<&str> = listing
        .lines()
        .filter_map(|line| line.strip_suffix(" installed"))
        .collect();
    Ok(packages
        .iter()
        .filter(|package| !installed.contains(package))
        .map(|package| package.to_string())
        .collect())
}

pub fn apt_get(arguments: &[&str]) -> Result<()> {
    let status = Command::new("apt-get")
        .args(arguments)
        .env("DEBIAN_FRONTEND", "noninteractive")
        // The lab's own output is the command's: apt's chatter goes to stderr.
        .stdout(std::io::stderr())
        .status()
        .context("cannot run apt-get")?;
    if !status.success() {
        bail!(
            "apt-get {} failed ({status}); the lab installs its prerequisites as root",
            arguments.join(" ")
        );
    }
    Ok(())
}
