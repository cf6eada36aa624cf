//! The Debian packages the lab and the tests need, installed with apt-get
//! when missing (before the workspace is built: etcd-client's build needs
//! protoc).

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
];

/// Installs whichever of [`PACKAGES`] is not installed yet.
pub fn ensure() -> Result<()> {
    let missing = missing_packages(PACKAGES)?;
    if missing.is_empty() {
        return Ok(());
    }
    eprintln!("lab: installing {}", missing.join(" "));
    apt_get(&["update", "-q"])?;
    let mut install = vec!["install", "-y", "-q", "--no-install-recommends"];
    install.extend(missing.iter().map(String::as_str));
    apt_get(&install)?;
    let still_missing = missing_packages(PACKAGES)?;
    if !still_missing.is_empty() {
        bail!("apt-get did not install: {}", still_missing.join(" "));
    }
    Ok(())
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
